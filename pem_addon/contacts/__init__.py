"""Contacts in Blender: contact spheres on pendulums, fixed and translating free bodies, wall objects, restitution.

Contact spheres are stored per object (``Object.pem.contacts``: centre in object coordinates, radius in
object units, both scaled with the object, whose scale must then be uniform). A wall is an object of role
*Wall*: its shape (plane, sphere, cylinder along local Z, box) is fitted to the object's bounding box and
world transform. :func:`.shapes.body_contacts` and :func:`.walls.wall_of` turn them into the core's
:class:`~pem_physics.model.scene.ContactSphere` (body coordinates, m) and
:class:`~pem_physics.model.scene.StaticWall` (lab, m); errors name the object and the item.

The feature's modules: :mod:`.pairs` (each pair's effective friction and restitution), :mod:`.shapes` (contact
spheres and rims, fitted to meshes), :mod:`.walls`, :mod:`.overlay` (the viewport's line segments, world BU),
:mod:`.operators` (add, *Add Corner Spheres*, remove, fit) and :mod:`.ui` (the panel's part and its list).
"""


from __future__ import annotations

import bpy

from .operators import PEM_OT_contact_add, PEM_OT_contact_add_corners, PEM_OT_contact_fit, PEM_OT_contact_remove
from .ui import PEM_UL_contacts

classes = (PEM_UL_contacts, PEM_OT_contact_add, PEM_OT_contact_add_corners, PEM_OT_contact_remove,
           PEM_OT_contact_fit)
register, unregister = bpy.utils.register_classes_factory(classes)
