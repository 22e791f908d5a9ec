"""The Hard-Sphere Gas panels (Scene properties and the 3D view's sidebar)."""

from __future__ import annotations

import bpy

from ...pem_physics.io import gas_cache
from ..messages import AddonError
from .build import box_frame, cache_folder
from .objects import GAS_KEY
from .operators import PEM_OT_gas_build, PEM_OT_gas_delete


def draw_gas(layout, context) -> None:
    """The panel: settings, the sphere radius they give, the button, and the active gas object's build."""
    g = context.scene.pem_gas
    layout.use_property_split = True        # Blender's layout: labels left, values right
    layout.use_property_decorate = False
    col = layout.column()
    col.prop(g, "box")
    col.prop(g, "n")
    col.prop(g, "packing_fraction")
    col.prop(g, "temperature")
    col.prop(g, "seed")
    col.prop(g, "periodic")
    row = col.row(align=True)
    row.prop(context.scene, "frame_start")
    row.prop(context.scene, "frame_end")
    if g.box is not None:
        try:
            lengths, _ = box_frame(g.box, f"Gas box '{g.box.name}'")
            if g.n >= 1 and g.packing_fraction > 0:
                r = gas_cache.sphere_radius(g.n, g.packing_fraction, lengths)
                col.label(text=f"Box {lengths[0]:.3g} × {lengths[1]:.3g} × {lengths[2]:.3g}: sphere radius {r:.3g}")
        except AddonError as err:
            col.label(text=str(err), icon="ERROR")
    folder, relative = cache_folder()
    col.label(text="Cache: next to the .blend" if relative else f"Cache: {folder} (file not saved)")
    layout.operator(PEM_OT_gas_build.bl_idname, icon="PHYSICS")
    obj = context.object
    if obj is not None and GAS_KEY in obj:
        info = obj[GAS_KEY]
        box = layout.box()
        box.label(text=f"{obj.name}: {info['n']} spheres, radius {info['radius']:.4g}", icon="INFO")
        box.label(text=f"η {info['packing_fraction']:.3g}, T {info['temperature']:.3g}, seed {info['seed']}, "
                       + ("periodic" if info["periodic"] else "hard walls"))
        box.label(text=f"Frames {info['frame_start']}–{info['frame_end']}, {info['collisions']} collisions, "
                       f"{info['engine']} engine")
        box.label(text=f"Cache: {info['cache']}")
        box.operator(PEM_OT_gas_delete.bl_idname, icon="TRASH")


class _GasPanel:
    def draw(self, context):
        draw_gas(self.layout, context)


class PEM_PT_gas(_GasPanel, bpy.types.Panel):
    bl_label = "Hard-Sphere Gas"
    bl_idname = "PEM_PT_gas"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "scene"
    bl_options = {"DEFAULT_CLOSED"}


class PEM_PT_sidebar_gas(_GasPanel, bpy.types.Panel):
    bl_label = "Hard-Sphere Gas"
    bl_idname = "PEM_PT_sidebar_gas"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "PEM"
    bl_options = {"DEFAULT_CLOSED"}
