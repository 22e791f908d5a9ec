"""A core scene (a scene file, PEM's UDF) built as Blender objects: bodies with their meshes or primitives,
walls, pivots and keyed motions, and the scene's settings (gravity, fields, frame rate and range)."""

from __future__ import annotations

import math

import bpy
import numpy as np

from ...pem_physics.model import (
    ConstantVelocity,
    ContactRim,
    Oscillation,
    Scene,
    Settings,
    TabulatedMotion,
    UniformRotation,
    inertia,
)
from ...pem_physics.model.scene import pair_source, pair_value
from .. import keyframes
from ..bodies import pem_objects
from ..frames import simulation_range, steps_per_frame
from ..meshes import float32_tolerance
from ..units import exact, initial_world, set_exact, set_exact_world, unit_scale
from .props import ROLE_TO_CORE


def _shape_mesh(shape):
    """Vertices (N,3) and faces of a display mesh for a core shape (body coordinates, m)."""
    if isinstance(shape, inertia.Mesh):
        return shape.vertices, shape.faces
    if isinstance(shape, inertia.Sphere):
        return _uv_sphere(np.full(3, shape.radius), np.eye(3), shape.center)
    if isinstance(shape, inertia.Ellipsoid) and not isinstance(shape, inertia.Cuboid):
        return _uv_sphere(shape.semi_axes, shape.axes, shape.center)
    if isinstance(shape, inertia.Cuboid):
        c = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
        V = (c * shape.half_sides) @ shape.axes + shape.center
        F = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
        return V, F
    if isinstance(shape, inertia.Cylinder):
        return _cylinder(shape.radius, shape.half_length, shape.axis, shape.center)
    if isinstance(shape, inertia.Rod):
        r = max(shape.half_length * 0.02, 1e-4)
        return _cylinder(r, shape.half_length, shape.direction, shape.center)
    r = 0.01  # point mass: a small ball
    return _uv_sphere(np.full(3, r), np.eye(3), shape.center)


def _uv_sphere(semi, axes, center, n=16):
    th = np.linspace(0, np.pi, n // 2 + 1)[1:-1]
    ph = np.linspace(0, 2 * np.pi, n, endpoint=False)
    pts = [(0, 0, -1)] + [(np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), -np.cos(t)) for t in th for p in ph] + [
        (0, 0, 1)]
    V = (np.array(pts) * semi) @ np.asarray(axes) + center
    F = []
    rings = len(th)
    for j in range(n):
        F.append((0, 1 + (j + 1) % n, 1 + j))
    for i in range(rings - 1):
        for j in range(n):
            a, b = 1 + i * n + j, 1 + i * n + (j + 1) % n
            F.append((a, b, b + n, a + n))
    top = len(pts) - 1
    for j in range(n):
        F.append((top, 1 + (rings - 1) * n + j, 1 + (rings - 1) * n + (j + 1) % n))
    return V, F


def _cylinder(radius, half, axis, center, n=24):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.array([1.0, 0, 0]) if abs(axis[0]) < 0.9 else np.array([0, 1.0, 0])
    e1 = np.cross(axis, helper)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    ang = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ring = np.cos(ang)[:, None] * e1 + np.sin(ang)[:, None] * e2
    V = np.vstack([ring * radius - half * axis, ring * radius + half * axis]) + center
    F = [tuple(range(n - 1, -1, -1)), tuple(range(n, 2 * n))]
    F += [(j, (j + 1) % n, n + (j + 1) % n, n + j) for j in range(n)]
    return V, F


def _new_mesh_object(name, V, F, collection, color=None):
    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(map(float, v)) for v in V], [], [tuple(int(i) for i in f) for f in F])
    me.update()
    obj = bpy.data.objects.new(name, me)
    collection.objects.link(obj)
    if color is not None:
        mat = bpy.data.materials.new(f"{name}_PEM")
        mat.diffuse_color = tuple(float(c) for c in color[:4]) if len(color) >= 4 else (*color[:3], 1.0)
        me.materials.append(mat)
    return obj


#: The scene's PEM settings an import sets (Scene.pem property names), and the scene's own ones it may set.
IMPORTED_SETTINGS = ("use_scene_gravity", "gravity", "field_mode", "field", "field_b1", "field_b2", "field_omega",
                     "mu0", "friction", "restitution", "contact_friction", "contact_model", "use_periodic", "box",
                     "method", "step_mode", "dt", "motion_samples")
IMPORTED_SCENE_SETTINGS = (("render", "fps", "Frame Rate"), ("render", "fps_base", "Frame Rate Base"),
                           (None, "frame_end", "End Frame"))


def settings_snapshot(scene) -> dict:
    """{UI name: value} of the settings an import may change (:data:`IMPORTED_SETTINGS`, frame rate and range)."""
    sp = scene.pem
    out = {sp.bl_rna.properties[name].name: _plain(getattr(sp, name)) for name in IMPORTED_SETTINGS}
    for owner, name, ui in IMPORTED_SCENE_SETTINGS:
        out[ui] = getattr(getattr(scene, owner) if owner else scene, name)
    return out


def _plain(value):
    return tuple(value) if np.ndim(value) else value


def changed_settings(before: dict, after: dict) -> list:
    """UI names of the settings whose values differ between two :func:`settings_snapshot`."""
    return [name for name, value in after.items() if before.get(name) != value]


def build_objects(core: Scene, context, collection=None, adapt_scene: bool = False,
                  replace_settings: bool = True, notes: list | None = None) -> list:
    """Create Blender objects for a core scene (import): meshes, pivots, dipoles and, with ``replace_settings``,
    the scene's PEM settings (:data:`IMPORTED_SETTINGS`). Returns the objects.

    Mass properties are carried over exactly as the core resolves them (Inertia: Manual), so
    a bake of the imported scene reproduces the core's run of the file. What the Blender scene has no place for is
    not dropped silently: ``notes`` (a list) gets a warning for each such item, naming it, its value, what a bake
    does instead and what to do (:func:`import_losses`). The rotating field's phase is carried over folded into
    B1 and B2 (the same B(t)); a rotating field with ω = 0 is a uniform one, added to the file's uniform field.
    """
    core = core.checked()
    scene = context.scene
    unit = unit_scale(scene)
    collection = collection or scene.collection
    made = []
    keyed = []   # (object, tabulated motion): keyed once the frame rate and range are settled
    for body in core.bodies:
        U = np.asarray(body.orientation)
        R = U.T
        P = np.asarray(body.position) / unit
        parts = [_shape_mesh(s) for s in body.shapes] if body.shapes else []
        if not parts and body.contacts:   # a body given by its mass properties: show what it stands on
            parts = [_cylinder(c.radius, 0.05 * c.radius, c.axis, np.asarray(c.center, float))
                     if isinstance(c, ContactRim) else _uv_sphere(np.full(3, c.radius), np.eye(3), c.center, n=32)
                     for c in body.contacts]
        if not parts and body.role in ("pendulum", "free") and body.mass_properties is not None:
            com = np.asarray(body.mass_properties.center_of_mass)
            parts = [_uv_sphere(np.full(3, 0.02 * max(1.0, np.linalg.norm(com) * 5)), np.eye(3), com)]
        if not parts:
            parts = [_cylinder(0.01, 0.005, (0, 0, 1), np.zeros(3))]
        V_all, F_all, off = [], [], 0
        for V, F in parts:
            V_all.append(np.asarray(V, float) / unit)
            F_all += [tuple(i + off for i in f) for f in F]
            off += len(V)
        obj = _new_mesh_object(body.name, np.vstack(V_all), F_all, collection, body.color)
        Mw = np.eye(4)
        Mw[:3, :3] = R
        Mw[:3, 3] = P
        set_exact_world(obj, Mw)
        p = obj.pem
        p.enabled = True
        p.role = {v: k for k, v in ROLE_TO_CORE.items()}[body.role]
        for d in body.dipoles:
            item = p.dipoles.add()
            set_exact(item, "position", tuple(np.asarray(d.position) / unit))
            set_exact(item, "moment", tuple(np.asarray(d.moment, float)))
        for c in body.contacts:  # object coordinates are the body's, in BU (the object is unscaled)
            item = p.contacts.add()
            set_exact(item, "center", tuple(np.asarray(c.center) / unit))
            set_exact(item, "radius", c.radius / unit)
            if isinstance(c, ContactRim):
                item.kind = "RIM"
                set_exact(item, "axis", tuple(np.asarray(c.axis, float)))
        _own_contact_values(p, body.restitution, body.contact_friction)
        if body.role in ("pendulum", "free"):
            mp = body.resolved_mass_properties()
            p.inertia_source = "MANUAL"
            p.mass_mode = "MASS"
            set_exact(p, "mass", mp.mass / unit**3)
            set_exact(p, "manual_com", tuple(np.asarray(mp.center_of_mass) / unit))
            I = mp.inertia
            set_exact(p, "manual_inertia", (I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]))
            set_exact(p, "angular_velocity", tuple(np.asarray(body.angular_velocity, float)))
            if body.hinge is not None:
                p.use_hinge = True
                set_exact(p, "hinge_axis", tuple(np.asarray(body.hinge, float)))
        if body.translating:
            p.translate = True
            set_exact(p, "velocity", tuple(np.asarray(body.velocity, float) / unit))
        if body.role == "pendulum":
            piv = bpy.data.objects.new(f"{body.name}_pivot", None)
            piv.empty_display_type = "SPHERE"
            piv.empty_display_size = 0.02 / unit
            collection.objects.link(piv)
            set_exact_world(piv, np.block([[np.eye(3), P[:, None]], [np.zeros((1, 3)), np.ones((1, 1))]]))
            p.pivot_mode = "OBJECT"
            p.pivot_object = piv
            if body.pivot_motion is not None:
                keyed.append((piv, _keys_of(body.pivot_motion, core.settings.t_end)))
        if body.role == "driven":
            m = body.motion
            if isinstance(m, (TabulatedMotion, Oscillation, UniformRotation)):
                p.motion = "ANIMATION"
                keyed.append((obj, _keys_of(m, core.settings.t_end, U)))
            elif isinstance(m, ConstantVelocity):
                p.motion = "CONSTANT_VELOCITY"
                set_exact(p, "velocity", tuple(np.asarray(m.velocity, float) / unit))
            else:
                p.motion = "ORBIT"
                set_exact(p, "orbit_center", tuple(np.asarray(m.center) / unit))
                set_exact(p, "orbit_r1", tuple(np.asarray(m.r1) / unit))
                set_exact(p, "orbit_r2", tuple(np.asarray(m.r2) / unit))
                set_exact(p, "orbit_omega", m.angular_velocity)
                set_exact(p, "orbit_phase", m.phase)
        made.append(obj)
    made += [_wall_object(w, unit, collection, core.contact_model == "surface") for w in core.walls]
    if replace_settings:
        _apply_settings(core, scene)
    if adapt_scene:  # only when asked: the frame rate and range are the user's
        _adapt_frames(core, scene)
    if keyed:
        _key_motions(scene, keyed, unit, replace_settings)
    if notes is not None:
        names = {item.name: obj.name for item, obj in zip([*core.bodies, *core.walls], made)}
        notes += import_losses(core, context, names, replace_settings)
    return made


RUN_THE_FILE = "run the file with python -m pem_physics run"


def _vec(x) -> str:
    return "(" + ", ".join(f"{float(c):.6g}" for c in x) + ")"


def _fields(core: Scene):
    """(mode, uniform B (3,) T, rotating (b1, b2, ω) or None, the uniform B dropped (3,) or None) of the scene's
    External Field for a core scene's fields: the rotating field's phase φ folded into B1 and B2 (b1 cos(ωt + φ) +
    b2 sin(ωt + φ) = (b1 cos φ + b2 sin φ) cos ωt + (b2 cos φ − b1 sin φ) sin ωt), a rotating field with ω = 0 (or
    B1 = B2 = 0) added to the uniform one. The uniform field is dropped only beside a field that does rotate: the
    add-on holds either."""
    uniform = np.asarray(core.field, float)
    rf = core.rotating_field
    if rf is None:
        return ("UNIFORM" if np.any(uniform) else "NONE"), uniform, None, None
    b1, b2, w, phi = np.asarray(rf.b1, float), np.asarray(rf.b2, float), float(rf.angular_velocity), float(rf.phase)
    c, s = (1.0, 0.0) if phi == 0.0 else (math.cos(phi), math.sin(phi))
    b1, b2 = (b1, b2) if phi == 0.0 else (b1 * c + b2 * s, b2 * c - b1 * s)
    if w == 0.0 or not (np.any(b1) or np.any(b2)):      # it stands still: a uniform field
        uniform = uniform + b1
        return ("UNIFORM" if np.any(uniform) else "NONE"), uniform, None, None
    return "ROTATING", uniform, (b1, b2, w), (uniform if np.any(uniform) else None)


def import_losses(core: Scene, context, names: dict, replace_settings: bool = True) -> list:
    """Warnings (sentences) for what an import of the checked core scene ``core`` cannot carry over into the
    Blender scene, so that a bake of it would differ from ``python -m pem_physics run`` of the file: a uniform field
    beside a rotating one, ``pair_restitution`` entries, dop853's rtol and atol, a placement tolerance larger than
    the bake's. ``names``: each body's and wall's object name (an import may rename). Scene settings only with
    ``replace_settings`` (else the scene keeps its own, by the user's choice)."""
    scene = context.scene
    head = f"Scene '{scene.name}': "
    out = []
    if replace_settings:
        dropped = _fields(core)[3]
        if dropped is not None:
            out.append(head + f"the file's uniform field {_vec(dropped)} T is dropped: the External Field is uniform "
                              "or rotating, not both, and the file has a rotating field too; a bake runs without the "
                              f"uniform field ({RUN_THE_FILE} to include it)")
        st, default = core.settings, Settings()
        if st.method == "dop853":
            lost = [f"{key} = {getattr(st, key):g}" for key in ("rtol", "atol")
                    if getattr(st, key) != getattr(default, key)]
            if lost:
                many = len(lost) > 1
                out.append(head + f"the file's dop853 tolerance{'s' if many else ''} {' and '.join(lost)} "
                                  f"{'are' if many else 'is'} dropped: the add-on has no setting for "
                                  f"{'them' if many else 'it'}, and a bake "
                                  f"uses rtol = {default.rtol:g}, atol = {default.atol:g} ({RUN_THE_FILE} to use the "
                                  "file's)")
    out += _pair_losses(core, scene, names, head)
    out += _placement_losses(core, context, head)
    return out


def _pair_losses(core: Scene, scene, names: dict, head: str) -> list:
    """A warning for each ``pair_restitution`` entry whose e a bake would not give the pair: the add-on has no
    per-pair restitution, only each object's own (:func:`~pem_physics.model.scene.pair_value`). An entry the pair
    rule gives anyway, or for two items that never touch (two walls, a body without contacts), loses nothing."""
    own = {b.name: b.restitution for b in core.bodies} | {w.name: w.restitution for w in core.walls}
    touches = {b.name: "body" if b.contacts else None for b in core.bodies} | {w.name: "wall" for w in core.walls}
    scene_e = exact(scene.pem, "restitution")
    out = []
    for pair in core.pair_restitution:
        a, b = pair.names
        if None in (touches[a], touches[b]) or touches[a] == touches[b] == "wall":
            continue      # a body without contact spheres touches nothing; walls never touch each other
        e_bake = pair_value(own[a], own[b], scene_e)
        if e_bake == pair.restitution:
            continue
        oa, ob = f"Object '{names.get(a, a)}'", f"Object '{names.get(b, b)}'"
        whose = {"both": "the smaller of their Own Restitution", "a": f"{oa}'s Own Restitution",
                 "b": f"{ob}'s Own Restitution", "scene": "the scene's Restitution"}[pair_source(own[a], own[b])]
        out.append(head + f"the file's restitution e = {pair.restitution:g} between {oa} and {ob} (pair_restitution) "
                          "is dropped: the add-on has no restitution per pair, only each object's Own Restitution, "
                          f"and a bake gives this pair e = {e_bake:g} ({whose}) (give the objects Own Restitution "
                          f"{pair.restitution:g} where their other pairs allow it, or {RUN_THE_FILE} to include it)")
    return out


def _placement_losses(core: Scene, context, head: str) -> list:
    """A warning when the file's placement tolerance (how far a body may start off a table and still start on it,
    ``contact_model = "surface"``) is larger than a bake's, which is the single precision of the Blender scene's
    positions (as :func:`.scenes.build_scene` reckons it: the farthest any PEM object reaches from the origin)."""
    scene = context.scene
    if scene.pem.contact_model != "SURFACE" or not core.placement_tolerance > 0:
        return []
    context.view_layer.update()        # the new objects' dimensions
    objects = pem_objects(scene)
    reach = max((np.abs(initial_world(o)[:3, 3]).max() + max(o.dimensions) for o in objects), default=0.0)
    ours = float32_tolerance(unit_scale(scene) * reach)
    if not core.placement_tolerance > ours:
        return []
    x = core.placement_tolerance
    return [head + f"the file's placement tolerance {x:.3g} m is dropped: a bake takes the precision of this "
                   f"scene's positions, {ours:.3g} m, so a body {ours:.3g} to {x:.3g} m off a table starts on it in "
                   f"a run of the file but not in a bake (move it onto the table, or {RUN_THE_FILE})"]


def _keys_of(motion, t_end: float, U0=None) -> TabulatedMotion:
    """The table an import keys for a motion: a table itself, an exact motion (Oscillation, UniformRotation) sampled
    to past ``t_end`` s (:meth:`~pem_physics.model.analytic.Oscillation.table`: Blender's animation holds keys, so
    the bake follows the exact motion to the spline's ~2e-7 of its amplitude); U0 a driven body's orientation."""
    if isinstance(motion, TabulatedMotion):
        return motion
    return motion.table(t_end, U0 if isinstance(motion, UniformRotation) else None)


#: Most samples a frame an import sets Motion Samples to (where a table's times need more, it sets the densest).
MAX_IMPORT_SAMPLES = 64


def _key_motions(scene, keyed, unit: float, replace_settings: bool) -> None:
    """Key each (object, tabulated motion) of an import: Bezier keys that are the table's own spline (t = 0 at the
    simulation's start frame; :func:`.keyframes.write_spline_keys`), location (BU) and, for a driven magnet with
    orientations, rotation_quaternion — the table's quaternion is Blender's (body → world).

    With ``replace_settings``, Motion Samples is set so that the bake's sub-frame samples include every table
    time (:func:`import_samples`): a spline through those samples *is* the file's spline (a C² piecewise cubic is
    its own interpolant on a finer grid holding its knots), so the bake follows the file's motion to the keys'
    single precision, not to a resampling error."""
    fps = scene.render.fps / scene.render.fps_base
    start = simulation_range(scene)[0]
    for obj, motion in keyed:
        t, y, _, has_rot = motion.spline_table()
        slopes = motion.spline_slopes() / fps          # per frame
        channels = [("location", y[:, :3] / unit, slopes[:, :3] / unit)]
        if has_rot:
            obj.rotation_mode = "QUATERNION"
            channels.append(("rotation_quaternion", y[:, 3:], slopes[:, 3:]))
        keyframes.write_spline_keys(obj, start + t * fps, channels, action_name=f"{obj.name}_Motion")
    if replace_settings:
        scene.pem.motion_samples = import_samples([m.times for _, m in keyed], fps)


def import_samples(tables, fps: float) -> int:
    """Samples a frame for imported tables (times (K,) s each): the fewest whose sub-frames hold every table time
    (to 1e-9 of a sub-frame), up to :data:`MAX_IMPORT_SAMPLES`; failing that, enough for the densest table's
    rate."""
    frames = np.concatenate([np.asarray(t, float) for t in tables]) * fps
    for n in range(1, MAX_IMPORT_SAMPLES + 1):
        if np.all(np.abs(frames * n - np.round(frames * n)) < 1e-9 * np.maximum(1.0, np.abs(frames * n))):
            return n
    return min(MAX_IMPORT_SAMPLES, max(math.ceil(1.0 / np.min(np.diff(t)) / fps - 1e-9) for t in tables))


#: Size (m) of the display mesh of an imported plane wall, and the length of an imported cylinder wall's (both are
#: infinite in the simulation).
WALL_DISPLAY_SIZE = 1.0


def _wall_object(w, unit: float, collection, surface: bool):
    """A Wall object for a core StaticWall (import): a mesh that :func:`.contacts.walls.wall_geometry` fits back to
    the same wall (plane: a square whose local +Z is the normal; sphere, cylinder along local Z, box)."""
    R = np.eye(3)
    if w.kind == "plane":
        n = np.asarray(w.normal, float)
        e1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
        e1 /= np.linalg.norm(e1)
        R = np.column_stack([e1, np.cross(n, e1), n])
        h = 0.5 * WALL_DISPLAY_SIZE
        V, F, at = np.array([[-h, -h, 0.0], [h, -h, 0.0], [h, h, 0.0], [-h, h, 0.0]]), [(0, 1, 2, 3)], w.point
    elif w.kind == "sphere":
        (V, F), at = _uv_sphere(np.full(3, w.radius), np.eye(3), np.zeros(3), n=32), w.center
    elif w.kind == "cylinder":
        d = np.asarray(w.direction, float)
        e1 = np.cross(d, [1.0, 0.0, 0.0] if abs(d[0]) < 0.9 else [0.0, 1.0, 0.0])
        e1 /= np.linalg.norm(e1)
        R = np.column_stack([e1, np.cross(d, e1), d])
        (V, F), at = _cylinder(w.radius, 0.5 * WALL_DISPLAY_SIZE, (0, 0, 1), np.zeros(3), n=32), w.point
    else:
        R = np.eye(3) if w.axes is None else np.asarray(w.axes, float).T
        c = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * w.half_sizes
        V, at = c, w.center
        F = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    obj = _new_mesh_object(w.name, np.asarray(V, float) / unit, F, collection)
    Mw = np.eye(4)
    Mw[:3, :3] = R
    Mw[:3, 3] = np.asarray(at, float) / unit
    set_exact_world(obj, Mw)
    p = obj.pem
    p.enabled, p.role, p.wall_shape = True, "WALL", w.kind.upper()
    p.wall_inside = bool(w.inside)
    _own_contact_values(p, w.restitution, w.contact_friction)
    if surface:
        p.friction_law = (w.friction_law or "coulomb").upper()
        if w.gliding_friction is not None:
            set_exact(p, "gliding_friction", w.gliding_friction)
        for key in ("rolling_resistance", "spin_resistance"):
            set_exact(p, key, (getattr(w, key) or 0.0) / unit)
    return obj


def _apply_settings(core: Scene, scene) -> None:
    """The scene's PEM settings (:data:`IMPORTED_SETTINGS`) from a core scene."""
    unit = unit_scale(scene)
    sp = scene.pem
    sp.use_scene_gravity = False
    set_exact(sp, "gravity", tuple(np.asarray(core.gravity, float)))
    mode, uniform, rotating, _ = _fields(core)   # a uniform field beside a rotating one: import_losses says so
    sp.field_mode = mode
    if rotating is not None:
        b1, b2, w = rotating
        set_exact(sp, "field_b1", tuple(b1))
        set_exact(sp, "field_b2", tuple(b2))
        set_exact(sp, "field_omega", w)
    elif mode == "UNIFORM":
        set_exact(sp, "field", tuple(uniform))
    set_exact(sp, "mu0", core.mu0)
    set_exact(sp, "restitution", core.restitution)
    set_exact(sp, "contact_friction", core.contact_friction)
    sp.contact_model = core.contact_model.upper()
    set_exact(sp, "friction", core.friction)
    sp.use_periodic = core.periodic_box is not None
    if core.periodic_box is not None:
        set_exact(sp, "box", tuple(np.asarray(core.periodic_box) / unit))
    st = core.settings
    sp.method = st.method.upper().replace("-", "_")
    sp.step_mode = "DT"
    set_exact(sp, "dt", st.dt)


def _adapt_frames(core: Scene, scene) -> None:
    """A frame rate the file's dt divides (the scene's own if it does) and a frame range of the file's duration."""
    st = core.settings
    for fps in (scene.render.fps, 24, 25, 30, 50, 60, 20, 100):
        if steps_per_frame(fps, st.dt):
            scene.render.fps, scene.render.fps_base = fps, 1.0
            break
    fps = scene.render.fps / scene.render.fps_base
    scene.frame_end = scene.frame_start + max(1, int(math.ceil(st.t_end * fps - 1e-9)))


def _own_contact_values(p, restitution, contact_friction) -> None:
    """A body's or wall's own restitution and friction μ (None: unset, the pair rule's other side applies)."""
    if restitution is not None:
        p.use_restitution = True
        set_exact(p, "restitution", restitution)
    if contact_friction is not None:
        p.use_contact_friction = True
        set_exact(p, "contact_friction", contact_friction)
