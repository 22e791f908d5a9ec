"""The contact operators: *Add Contact Sphere*, *Add Corner Spheres*, remove and *Fit Contact*."""

from __future__ import annotations

import bpy

from ...pem_physics.errors import PemError
from ..lists import OnSelectedItem, RemoveSelectedItem, add_item
from .shapes import corner_spheres, fit_rim, fit_sphere


class PEM_OT_contact_add(bpy.types.Operator):
    """Add a contact sphere to the active object, fitted to its mesh's bounding sphere"""

    bl_idname = "pem.contact_add"
    bl_label = "Add Contact Sphere"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def execute(self, context):
        obj = context.object
        item = add_item(obj.pem, "contacts", "active_contact")
        try:
            c, r = fit_sphere(obj, context)
        except PemError:
            return {"FINISHED"}  # nothing to fit to (an Empty without size): the defaults stay, to be typed in
        item.center, item.radius = tuple(c), r
        return {"FINISHED"}


class PEM_OT_contact_add_corners(bpy.types.Operator):
    """Add a contact sphere in each of the eight corners of the active object's bounding box, flush with its faces
    (a block or a die with rounded corners: it rests on faces, rocks on edges and tumbles)"""

    bl_idname = "pem.contact_add_corners"
    bl_label = "Add Corner Spheres"
    bl_options = {"REGISTER", "UNDO"}

    fraction: bpy.props.FloatProperty(
        name="Corner Radius", description="Radius of the corner spheres, a fraction of the smallest half side",
        default=0.1, min=1e-3, max=1.0, soft_min=0.01, soft_max=0.5, subtype="FACTOR")

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == "MESH"

    def execute(self, context):
        obj = context.object
        try:
            centres, r = corner_spheres(obj, context, self.fraction)
        except PemError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for c in centres:
            item = add_item(obj.pem, "contacts", "active_contact")
            item.kind, item.center, item.radius = "SPHERE", tuple(c), r
        self.report({"INFO"}, f"Object '{obj.name}': 8 corner spheres of radius {r:.6g}")
        return {"FINISHED"}


class PEM_OT_contact_remove(RemoveSelectedItem, bpy.types.Operator):
    """Remove the selected contact sphere"""

    bl_idname = "pem.contact_remove"
    bl_label = "Remove Contact Sphere"
    collection, active = "contacts", "active_contact"


class PEM_OT_contact_fit(OnSelectedItem, bpy.types.Operator):
    """Fit the selected contact to the object's evaluated mesh: a sphere to its bounding sphere, a rim around its
    axis to the farthest vertex"""

    bl_idname = "pem.contact_fit"
    bl_label = "Fit Contact"
    collection, active = "contacts", "active_contact"

    def execute(self, context):
        obj = context.object
        item = obj.pem.contacts[obj.pem.active_contact]
        try:
            c, r = fit_rim(obj, context, tuple(item.axis)) if item.kind == "RIM" else fit_sphere(obj, context)
        except PemError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        item.center, item.radius = tuple(c), r
        what = "rim" if item.kind == "RIM" else "sphere"
        self.report({"INFO"}, f"Object '{obj.name}': contact {what} #{obj.pem.active_contact} radius {r:.6g}")
        return {"FINISHED"}
