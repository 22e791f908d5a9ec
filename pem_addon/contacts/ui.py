"""The contact part of the object panel (spheres and rims, restitution and friction, the wall's shape) and its
list."""

from __future__ import annotations

import bpy

from ..lists import draw_list
from .pairs import pair_lines


class PEM_UL_contacts(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.label(text=f"#{index}", icon="MESH_CIRCLE" if item.kind == "RIM" else "SPHERE")
        row.prop(item, "radius", text="r")


def draw_object(layout, obj) -> None:
    """The contact part of the object panel: contact spheres and restitution, or the wall's shape."""
    p = obj.pem
    box = layout.box()
    box.label(text="Contacts", icon="MOD_PHYSICS")
    if p.role == "WALL":
        box.prop(p, "wall_shape")
        if p.wall_shape != "PLANE":
            box.prop(p, "wall_inside")
        else:
            box.label(text="Spheres stay on the side of the object's local +Z")
        if bpy.context.scene.pem.contact_model == "SURFACE":
            box.prop(p, "friction_law")
            col = box.column(align=True)
            col.prop(p, "rolling_resistance")
            col.prop(p, "spin_resistance")
    elif p.role in ("PENDULUM", "FIXED") or (p.role == "FREE" and (p.translate or p.contacts)):
        if p.role == "FREE" and not p.translate:  # spheres left from before: say why the bake will refuse them
            box.label(text="Contact spheres need Translate on (or remove them)", icon="ERROR")
        box.label(text="Contact spheres and rims (object coordinates)")
        c = draw_list(box, p, "PEM_UL_contacts", "contacts", "active_contact",
                      (("pem.contact_add", "ADD"), ("pem.contact_remove", "REMOVE")), rows=2)
        if c is not None:
            box.prop(c, "kind", expand=True)
            box.prop(c, "center")
            if c.kind == "RIM":
                box.prop(c, "axis")
                if bpy.context.scene.pem.contact_model != "SURFACE":
                    box.label(text="Rims need Contacts: Rolling and Sliding (Scene)", icon="ERROR")
            box.prop(c, "radius")
            box.operator("pem.contact_fit", icon="MESH_CIRCLE" if c.kind == "RIM" else "SPHERE")
        box.operator("pem.contact_add_corners", icon="MESH_CUBE")
    elif p.role == "FREE":
        box.label(text="A free body takes part in contacts when Translate is on")
        return
    else:
        box.label(text="Only pendulums, fixed bodies, translating free bodies and walls take part in contacts")
        return
    gliding = p.role == "WALL" and bpy.context.scene.pem.contact_model == "SURFACE" and p.friction_law == "VISCOUS"
    for use, name, label in (("use_restitution", "restitution", "e"),
                             ("use_contact_friction", "contact_friction", "μ")):
        if gliding and name == "contact_friction":     # the gliding law has its own coefficient (s/m)
            box.prop(p, "gliding_friction")
            continue
        row = box.row()
        row.prop(p, use)
        sub = row.row()
        sub.enabled = getattr(p, use)
        sub.prop(p, name, text=label)
    lines = pair_lines(bpy.context.scene, obj)
    if lines:
        col = box.column(align=True)
        col.label(text="Effective per pair:")
        for text, ok in lines:
            col.label(text=text, icon="BLANK1" if ok else "ERROR")
