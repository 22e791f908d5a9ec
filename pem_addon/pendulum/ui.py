"""Panels: Object ▸ Physics ▸ "Magnetic Pendulum", Scene ▸ "Magnetic Pendulum", and a 3D-view sidebar tab."""

from __future__ import annotations

import bpy

from ...pem_physics import jit
from ...pem_physics.engine import missing_package
from .. import bodies, frames, handlers, meshes, messages
from ..contacts import pairs
from ..contacts import ui as contacts_ui
from ..lists import draw_list
from . import bake, cache, ghost, live, motions
from .props import method_name


class PEM_UL_dipoles(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.label(text=f"#{index}", icon="FORCE_MAGNETIC")
        row.prop(item, "moment", text="")


def _draw_baked(layout, p) -> None:
    """That the object plays a bake, where its own animation is and how to change its start pose."""
    box = layout.box()
    col = box.column(align=True)
    col.label(text="Baked: the object plays its bake action", icon="ACTION")
    own = p.user_action.name if p.user_action is not None else "none"
    col.label(text=f"Your own animation (action: {own}) is kept; Delete Bake brings it back")
    col.label(text="Start pose: as before the bake, at the simulation's start frame")
    col.label(text="To start elsewhere: move or turn the object (the bake is then outdated), then Bake again")


def _split(layout) -> None:
    """Blender's property layout: labels in a column on the left, values on the right, no animate dots."""
    layout.use_property_split = True
    layout.use_property_decorate = False


def _baked_settings(layout, context):
    """A column for simulation settings: greyed out while the scene is baked, as Cloth's are (still editable: a
    change marks the bake outdated)."""
    col = layout.column()
    col.active = not cache.is_baked(context.scene)
    return col


def draw_object(layout, context, obj):
    p = obj.pem
    if not p.enabled:   # the panel's header carries the checkbox, as Blender's own physics panels do
        layout.label(text="Tick the header, or Physics ▸ Magnetic Pendulum, to make this a body or wall", icon="INFO")
        return
    _split(layout)
    if cache.is_keyed(context.scene, obj):
        _draw_baked(layout, p)
    layout = _baked_settings(layout, context)
    layout.prop(p, "role")
    col = layout.column()
    if p.role == "WALL":
        contacts_ui.draw_object(layout, obj)
        return
    if p.role == "PENDULUM":
        row = col.row()
        row.prop(p, "pivot_mode", expand=True)
        if p.pivot_mode == "OBJECT":
            col.prop(p, "pivot_object")
            if p.pivot_object is None:
                col.label(text="No pivot object set", icon="ERROR")
            elif bodies.animated_pivot(obj) is not None:
                col.label(text=f"Pivot '{p.pivot_object.name}' is animated: the pivot follows it, sampled "
                               f"{context.scene.pem.motion_samples}× a frame", icon="ANIM")
        else:
            col.prop(p, "pivot_point")
    if p.role in ("PENDULUM", "FREE"):
        box = layout.box()
        box.label(text="Mass Properties", icon="PHYSICS")
        box.prop(p, "inertia_source")
        if p.inertia_source != "MANUAL" and any(c.type == "MESH" for c in obj.children_recursive):
            box.prop(p, "include_children")
            parts, left = meshes.compound_parts(obj), meshes.excluded_parts(obj)
            if parts:
                box.label(text=f"Compound body: {messages.plural(len(parts), 'child mesh', 'child meshes')} included")
            if left:
                box.label(text=f"{messages.plural(len(left), 'child mesh', 'child meshes')} not included in the mass",
                          icon="INFO")
        if p.inertia_source == "PRIMITIVE":
            box.prop(p, "primitive")
        if p.inertia_source == "MANUAL":
            box.prop(p, "mass")
            box.prop(p, "manual_com")
            box.prop(p, "manual_inertia")
        else:
            row = box.row()
            row.prop(p, "mass_mode", expand=True)
            box.prop(p, "density" if p.mass_mode == "DENSITY" else "mass")
        box.operator("pem.compute_mass_properties", icon="FILE_REFRESH")
        if p.computed_stamp:
            if meshes.current_stamp(obj, context) != p.computed_stamp:
                box.label(text="Out of date: the mesh, scale or settings changed", icon="ERROR")
            grid = box.column(align=True)
            sc = context.scene
            grid.label(text=f"Mass: {in_units(sc, 'MASS', p.computed_mass)}   "
                            f"Volume: {in_units(sc, 'VOLUME', p.computed_volume)}")
            c = p.computed_com
            grid.label(text="Centre of mass (object frame): " + ", ".join(in_units(sc, "LENGTH", x) for x in c))
            m = p.computed_moments
            grid.label(text=f"Principal moments (kg·m²): {m[0]:.5g}, {m[1]:.5g}, {m[2]:.5g}")
            a = p.computed_axes
            for k in range(3):
                grid.label(text=f"  axis {k + 1}: {a[3 * k]:+.3f}, {a[3 * k + 1]:+.3f}, {a[3 * k + 2]:+.3f}")
            for note in p.computed_notes.splitlines():
                grid.label(text=note, icon="ERROR")
        col = layout.column()
        col.prop(p, "angular_velocity")
        translating = p.role == "FREE" and p.translate
        row = col.row()
        row.enabled = not translating or p.use_hinge  # left editable when both are on, so it can be turned off
        row.prop(p, "use_hinge")
        sub = row.row()
        sub.enabled = p.use_hinge
        sub.prop(p, "hinge_axis", text="")
        if p.role == "FREE":
            col.prop(p, "translate")
            sub = col.column()
            sub.enabled = p.translate
            sub.prop(p, "velocity", text="Initial Velocity (centre of mass)")
            if translating and p.use_hinge:
                col.label(text="A translating body cannot be hinged: turn Hinge or Translate off", icon="ERROR")
    if p.role == "DRIVEN":
        col.prop(p, "motion")
        if p.motion == "CONSTANT_VELOCITY":
            col.prop(p, "velocity")
        elif p.motion == "ANIMATION":
            n = context.scene.pem.motion_samples
            col.label(text=f"Follows its own animation, sampled {n}× a frame", icon="ANIM")
        else:
            for name in ("orbit_center", "orbit_r1", "orbit_r2", "orbit_omega", "orbit_phase"):
                col.prop(p, name)
    contacts_ui.draw_object(layout, obj)
    layout.label(text="Dipoles (object coordinates, A·m²)")
    d = draw_list(layout, p, "PEM_UL_dipoles", "dipoles", "active_dipole",
                  (("pem.dipole_add", "ADD"), ("pem.dipole_remove", "REMOVE"), ("pem.dipole_duplicate", "DUPLICATE")))
    if d is not None:
        layout.prop(d, "position")
        layout.prop(d, "moment")


def draw_scene(layout, context):
    sp = context.scene.pem
    _split(layout)
    outer = layout
    layout = _baked_settings(layout, context)
    col = layout.column()
    col.prop(sp, "use_scene_gravity")
    if sp.use_scene_gravity:  # the scene's checkbox too: off is zero gravity
        col.prop(context.scene, "use_gravity")
        sub = col.column()
        sub.enabled = context.scene.use_gravity
        sub.prop(context.scene, "gravity")
    else:
        col.prop(sp, "gravity")
    col.prop(sp, "field_mode")
    if sp.field_mode == "UNIFORM":
        col.prop(sp, "field")
    elif sp.field_mode == "ROTATING":
        col.prop(sp, "field_b1")
        col.prop(sp, "field_b2")
        col.prop(sp, "field_omega")
    col.prop(sp, "mu0")
    col.prop(sp, "friction")
    col.prop(sp, "method")
    _method_line(col, sp)
    row = col.row()
    row.prop(sp, "step_mode", expand=True)
    col.prop(sp, "substeps" if sp.step_mode == "SUBSTEPS" else "dt")
    fps = context.scene.render.fps / context.scene.render.fps_base
    if sp.step_mode == "DT" and sp.dt > 0 and fps > 0 and frames.steps_per_frame(fps, sp.dt) == 0:
        n = max(1, round(1.0 / (fps * sp.dt)))
        col.label(text=f"Keys fall between frames: {sp.dt:g} s does not divide a frame; {1.0 / (fps * n):.6g} s "
                       f"({n} a frame) would", icon="INFO")
    _estimate_line(col, context)
    followed = motions.describe(bodies.pem_objects(context.scene), sp.motion_samples)
    if followed:
        col.prop(sp, "motion_samples")
        for line in followed:
            col.label(text=line, icon="ANIM")
    col.prop(sp, "use_periodic")
    if sp.use_periodic:
        col.prop(sp, "box")
    col.prop(sp, "contact_model")
    col.prop(sp, "restitution")
    col.prop(sp, "contact_friction")
    if sp.contact_model == "SURFACE":     # a body that will never grip its table: say so before the bake
        for obj in bodies.pem_objects(context.scene):
            if obj.pem.role != "WALL" and pairs.takes_contacts(obj):
                for text, ok in pairs.pair_lines(context.scene, obj):
                    if not ok:
                        col.label(text=f"'{obj.name}' {text[0].lower()}{text[1:]}", icon="ERROR")
    layout = outer
    layout.operator("pem.plot_diagnostics", icon="GRAPH")
    _engine_line(layout, context)
    if sp.status:
        box = layout.box()
        box.label(text=last_bake_line(context), icon="INFO")
        box.label(text=f"Integration error (energy balance): {sp.last_energy_error:.3g}   "
                       f"‖UUᵀ−I‖: {sp.last_orthonormality:.2g}")
        box.label(text=f"Friction and contacts took {sp.last_friction_loss:.3g} of the energy")
        for line in sp.last_warnings.splitlines():
            box.label(text=line, icon="ERROR")
    row = layout.row(align=True)
    row.use_property_split = False
    row.label(text="Overlay:")
    row.prop(sp, "show_dipoles", toggle=True)
    row.prop(sp, "show_pivots", toggle=True)
    row.prop(sp, "show_field_lines", toggle=True)
    row.prop(sp, "show_contacts", toggle=True)
    layout.prop(sp, "arrow_scale")
    row = layout.row(align=True)
    row.operator("pem.basin_map", icon="IMAGE_DATA")
    row.prop(sp, "basin_grid")
    row.prop(sp, "basin_extent")
    row.prop(sp, "basin_seconds")
    row = layout.row(heading="Ghost Path")
    row.prop(sp, "show_ghost_path", text="")
    sub = row.row()
    sub.active = sp.show_ghost_path
    sub.prop(sp, "ghost_seconds", text="Seconds")
    sub.operator("pem.ghost_path_to_curve", text="", icon="OUTLINER_OB_CURVE")
    if sp.show_ghost_path and ghost.error():
        layout.label(text=ghost.error(), icon="ERROR")


def last_bake_line(context) -> str:
    """The last bake's report line (``Scene.pem.status``) as what it now is: as it was while the scene plays that
    bake, else prefixed with the cache's state, so that it never says Baked of a bake that is outdated or
    deleted."""
    text = context.scene.pem.status
    state = cache.state(context)
    if state == cache.BAKED:
        return text
    return f"Last bake ({'outdated: see Cache' if state == cache.OUTDATED else 'deleted'}): {text}"


#: The state line's icon, as Blender's caches show theirs.
STATE_ICONS = {cache.NOT_BAKED: "INFO", cache.BAKED: "CHECKMARK", cache.OUTDATED: "ERROR"}


def draw_cache(layout, context):
    """The simulation's cache, as Blender's point-cache panels: its frame range, its state (not baked, baked,
    outdated: what changed), Bake / Delete Bake, Bake to Current Frame, Bake All / Delete All Bakes."""
    scene = context.scene
    sp = scene.pem
    _split(layout)
    state, changed = cache.status(context)
    col = layout.column(align=True)
    col.prop(sp, "use_scene_range")
    sub = col.column(align=True)
    sub.enabled = state == cache.NOT_BAKED  # as a point cache's range: fixed while baked
    owner = scene if sp.use_scene_range else sp
    sub.prop(owner, "frame_start", text="Start")
    sub.prop(owner, "frame_end", text="End")
    box = layout.box()
    if state == cache.NOT_BAKED:
        box.label(text="Not baked", icon=STATE_ICONS[state])
        box.prop(sp, "live_playback")
        if sp.live_playback:
            live_line(box, scene)
    else:
        frames = cache.baked_frames(scene)
        if state == cache.BAKED:
            box.label(text=f"Baked: {frames}", icon=STATE_ICONS[state])
        else:
            box.label(text=f"Outdated bake ({frames}): changed since", icon=STATE_ICONS[state])
            for what in changed:
                box.label(text=f"    {what[0].upper()}{what[1:]}")
            box.label(text="Bake again, or Delete Bake to edit with the settings live")
    row = layout.row(align=True)
    row.operator("pem.simulate_bake", text="Bake", icon="PHYSICS")
    row.operator("pem.clear_bake", text="Delete Bake", icon="TRASH")
    layout.operator("pem.simulate_bake", text="Bake to Current Frame").to_current_frame = True
    row = layout.row(align=True)
    row.operator("pem.bake_all", text="Bake All")
    row.operator("pem.delete_all_bakes", text="Delete All Bakes")


def live_line(layout, scene) -> None:
    """What live playback has simulated, or why it cannot."""
    if live.error(scene):
        layout.label(text=live.error(scene), icon="ERROR")
        return
    span = live.cached_frames(scene)
    if span is None or span[1] <= span[0]:
        layout.label(text="Simulated from the next frame change", icon="INFO")
    else:
        first, last = span
        layout.label(text=f"Simulated live: frames {first}–{last} (kept until an edit)", icon="PLAY")


def _method_line(layout, sp) -> None:
    """That the chosen integrator cannot run here (dop853 needs scipy, which Blender does not ship)."""
    method = method_name(sp.method)
    missing = missing_package(method)
    if missing is not None:
        layout.label(text=f"Integrator {method} needs {missing}, which this Blender lacks: pick another",
                     icon="ERROR")


_SI = {"MASS": "kg", "VOLUME": "m³", "LENGTH": "m"}


def in_units(scene, category: str, value: float) -> str:
    """An SI value (kg, m³, m) as Blender shows one of ``category`` in the scene's unit system (Properties ▸
    Scene ▸ Units: metric or imperial, adaptive); with the system None, the number and its SI unit."""
    system = scene.unit_settings.system
    if system == "NONE":
        return f"{value:.6g} {_SI[category]}"
    return bpy.utils.units.to_string(system, category, float(value), precision=5)


def _estimate_line(layout, context) -> None:
    """How long a bake would run: its steps and seconds (at the last bake's speed, or estimated before one)."""
    try:
        steps, seconds, measured = bake.estimate(context)
    except messages.AddonError as err:
        layout.label(text=str(err), icon="ERROR")
        return
    how = "at the last bake's speed" if measured else "estimated"
    long = bake.needs_confirmation(seconds)
    layout.label(text=f"{steps:,} steps, about {seconds:.3g} s {how}" + (" (asks before baking)" if long else ""),
                 icon="ERROR" if long else "NONE")


def _engine_line(layout, context) -> None:
    """Which engine this scene's bake runs on: compiled (numba, bundled with the extension) or numpy — the
    fallback without numba."""

    engine, reason = bake.expected_engine(context)
    if engine == "numba" and bake.ahead_of_time():
        layout.label(text="Engine: compiled, built ahead of time (no compile)", icon="CHECKMARK")
    elif engine == "numba":
        layout.label(text="Engine: compiled (numba; the first bake compiles it, once)", icon="CHECKMARK")
    elif jit.installed():
        layout.label(text=f"Engine: numpy — {reason}; bakes are slower", icon="INFO")
    else:
        layout.label(text=f"Engine: Python/numpy — {jit.unavailable_reason()}; bakes are slower", icon="ERROR")


class _ObjectPanel:
    """Draws the active object's PEM settings (in the Physics tab and the sidebar), with the on/off checkbox in
    the header; offered for the object types that can be bodies or walls (:data:`.meshes.BODY_TYPES`)."""

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type in meshes.BODY_TYPES

    def draw_header(self, context):
        self.layout.prop(context.object.pem, "enabled", text="")

    def draw(self, context):
        draw_object(self.layout, context, context.object)


def draw_physics_add(self, context):
    """Our entry in Properties ▸ Physics's grid of physics types (appended to Blender's ``PHYSICS_PT_add``):
    *Magnetic Pendulum*, with ✕ to turn it off once on, as Blender's Rigid Body and Cloth entries."""
    obj = context.object
    if obj is None or obj.type not in meshes.BODY_TYPES:
        return
    row = self.layout.row(align=True)
    row.operator("pem.body_toggle", text="Magnetic Pendulum", icon="X" if obj.pem.enabled else "FORCE_MAGNETIC")


class _ScenePanel:
    """Draws the scene's PEM settings and the bake buttons (in the Scene tab and the sidebar)."""

    def draw(self, context):
        draw_scene(self.layout, context)


class PEM_PT_object(_ObjectPanel, bpy.types.Panel):
    bl_label = "Magnetic Pendulum"
    bl_idname = "PEM_PT_object"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        # as Blender's Rigid Body and Cloth panels: shown once the grid's entry turned it on
        return super().poll(context) and context.object.pem.enabled


class PEM_PT_scene(_ScenePanel, bpy.types.Panel):
    bl_label = "Magnetic Pendulum"
    bl_idname = "PEM_PT_scene"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "scene"


class _CachePanel:
    """Draws the simulation's cache (under the scene's and the object's panels, and in the sidebar), as Blender's
    Cloth and Rigid Body World have a Cache subpanel."""

    def draw(self, context):
        draw_cache(self.layout, context)


class PEM_PT_scene_cache(_CachePanel, bpy.types.Panel):
    bl_label = "Cache"
    bl_idname = "PEM_PT_scene_cache"
    bl_parent_id = "PEM_PT_scene"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "scene"


class PEM_PT_object_cache(_CachePanel, bpy.types.Panel):
    bl_label = "Cache"
    bl_idname = "PEM_PT_object_cache"
    bl_parent_id = "PEM_PT_object"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.pem.enabled


class PEM_PT_sidebar_object(_ObjectPanel, bpy.types.Panel):
    bl_label = "Body"
    bl_idname = "PEM_PT_sidebar_object"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "PEM"


class PEM_PT_sidebar_scene(_ScenePanel, bpy.types.Panel):
    bl_label = "Simulation"
    bl_idname = "PEM_PT_sidebar_scene"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "PEM"


class PEM_PT_sidebar_cache(_CachePanel, bpy.types.Panel):
    bl_label = "Cache"
    bl_idname = "PEM_PT_sidebar_cache"
    bl_parent_id = "PEM_PT_sidebar_scene"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "PEM"


classes = (PEM_UL_dipoles, PEM_PT_object, PEM_PT_scene, PEM_PT_scene_cache, PEM_PT_object_cache,
           PEM_PT_sidebar_object, PEM_PT_sidebar_scene, PEM_PT_sidebar_cache)
_register, _unregister = bpy.utils.register_classes_factory(classes)

#: The panels' out-of-date check keeps mesh digests until the depsgraph says a geometry changed.
_HANDLERS = ((bpy.app.handlers.depsgraph_update_post, meshes.on_depsgraph_update),
             (bpy.app.handlers.load_post, meshes.forget_mesh_digests))


def register():
    _register()
    bpy.types.PHYSICS_PT_add.append(draw_physics_add)
    handlers.add(_HANDLERS)


def unregister():
    handlers.remove(_HANDLERS)
    meshes.forget_mesh_digests()
    bpy.types.PHYSICS_PT_add.remove(draw_physics_add)
    _unregister()
