"""pem_physics — rigid bodies rotating about a pivot: gravity, fields, magnetic dipoles.

Pure numpy; never imports bpy. SI units throughout.
"""
