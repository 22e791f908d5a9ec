"""The scene adapter: a Blender scene's PEM bodies, walls and settings → a checked core Scene, and its time
settings (the simulation's frame range, dt, substeps, records per frame).

Built from the body adapters (:mod:`.units`: exact values and poses; :mod:`.meshes`: mass properties;
:mod:`.bodies`: pivots) and the contact adapter (:mod:`.contacts`: contact spheres and walls); none imports this
module.
"""

from __future__ import annotations

import math

import numpy as np

from ...pem_physics.errors import ValidationError
from ...pem_physics.model import (
    PLACEMENT_TOLERANCE_MAX,
    Body,
    ConstantVelocity,
    Dipole,
    EllipticOrbit,
    RotatingField,
    Scene,
    Settings,
)
from ..bodies import (
    applied_constraints,
    constrained_to,
    motion_source,
    moves_by_itself,
    parented_to,
    pem_objects,
    pivot_world,
)
from ..contacts import pairs, shapes, walls
from ..frames import simulation_range, steps_per_frame
from ..meshes import BODY_TYPES, float32_tolerance, mass_properties, object_frame_scale
from ..messages import AddonError, object_message
from ..units import exact, initial_world, rotation_part, typed, unit_scale
from . import motions
from .props import ROLE_TO_CORE, method_name

#: Most integration steps a bake may take: ~40 min on the compiled engine (~4·10⁵ steps/s), weeks on numpy; a
#: mistyped dt (10⁻¹² s) or substeps count (2³¹) asks for far more and is refused with the number.
MAX_BAKE_STEPS = 1e9


def _check_step_count(scene, dt: float, T: float) -> None:
    """AddonError naming the scene, the count and the setting to change when a run of T s at dt s takes more
    than :data:`MAX_BAKE_STEPS` steps."""
    steps = T / dt
    if steps > MAX_BAKE_STEPS:
        fix = ("raise the time step dt" if scene.pem.step_mode == "DT" else "use fewer substeps per frame")
        raise AddonError(f"Scene '{scene.name}': {steps:.3g} integration steps (dt = {dt:.3g} s over {T:.3g} s), "
                         f"more than the {MAX_BAKE_STEPS:.0e} a bake may take: {fix} (Scene ▸ Magnetic Pendulum) or "
                         "shorten the frame range")


def time_settings(context, frame_end: int | None = None):
    """(fps, dt, substeps per frame, t_end, frame_start) of the scene's simulation (:func:`simulation_range`, up
    to ``frame_end`` when given: *Bake to Current Frame*); AddonError on bad values (a run of more than
    :data:`MAX_BAKE_STEPS` steps too).

    Substeps mode: dt = one frame / substeps. dt mode: when the scene's dt divides the frame time to
    round-off (:func:`steps_per_frame`), substeps is the whole number of steps per frame and dt = one
    frame / substeps, so keys land on frames; else substeps is 0, the run keeps the scene's dt exactly,
    and keys fall at the step times, a little under a frame apart (:func:`record_plan`); t_end covers the
    frame range in whole steps.
    """
    scene = context.scene
    sp = scene.pem
    fps = scene.render.fps / scene.render.fps_base
    if not fps > 0:
        raise AddonError(f"Scene '{scene.name}': frame rate must be positive")
    start, end = simulation_range(scene)
    if frame_end is not None:
        if frame_end <= start:
            raise AddonError(f"Scene '{scene.name}': the current frame {frame_end} is not after the simulation's "
                             f"start frame {start}: go to a later frame to bake up to it")
        end = min(end, frame_end)
    if end <= start:
        what = "scene's frame range" if sp.use_scene_range else "simulation's frame range (Cache ▸ Start, End)"
        raise AddonError(f"Scene '{scene.name}': the {what} {start}–{end} is empty: make the end frame later than "
                         "the start frame")
    T = (end - start) / fps
    if sp.step_mode == "DT":
        dt = exact(sp, "dt")
        if not dt > 0:
            raise AddonError(f"Scene '{scene.name}': time step dt must be positive, got {dt:g} s")
        _check_step_count(scene, dt, T)
        substeps = steps_per_frame(fps, dt)
        if substeps == 0:
            return fps, dt, 0, math.ceil(T / dt - 1e-9) * dt, start
    else:
        substeps = sp.substeps
        if substeps < 1:
            raise AddonError(f"Scene '{scene.name}': substeps per frame must be ≥ 1")
    dt = 1.0 / (fps * substeps)
    _check_step_count(scene, dt, T)
    return fps, dt, substeps, T, start


def record_plan(fps: float, dt: float, substeps: int, cap: int = 8) -> tuple[int, int]:
    """(steps between records, records per frame for key_stride): up to ``cap`` records a frame (a power of two
    dividing the substeps) when dt divides the frame time; else a record every whole number of steps
    that fits in a frame (at least every step), each record a key."""
    if substeps >= 1:
        per_frame = sample_rate(substeps, cap)
        return substeps // per_frame, per_frame
    return max(1, int(math.floor(1.0 / (fps * dt) + 1e-9))), 1


def scene_gravity(scene) -> np.ndarray:
    """The scene's own gravity (m/s², (3,)) as its Gravity checkbox says: zero when it is off."""
    return typed(scene.gravity) if scene.use_gravity else np.zeros(3)


def _refuse_rigid_body(obj, role: str) -> None:
    """AddonError naming an object that also has Blender's Rigid Body physics where it would fight the simulation:
    on a body the bake keys (the rigid body world overrides the keys: the bake would play nothing), or an active
    rigid body on a fixed one (it falls while the simulation holds it still)."""
    rb = obj.rigid_body
    if rb is None:
        return
    if role in ("pendulum", "free", "driven"):
        raise AddonError(f"Object '{obj.name}' also has Blender Rigid Body physics, which overrides the bake: "
                         "remove it (Physics ▸ Rigid Body)")
    if rb.type == "ACTIVE":
        raise AddonError(f"Object '{obj.name}' also has active Blender Rigid Body physics, which moves it while "
                         "the simulation holds it fixed: remove it (Physics ▸ Rigid Body) or make it Passive")


def _keyed(objects) -> set:
    """The objects of ``objects`` (PEM bodies) the bake keys: pendulums, free bodies, driven magnets on a prescribed
    motion (one on Motion: Animation keeps its own)."""
    return {o for o in objects if o.pem.role in ("PENDULUM", "FREE")
            or (o.pem.role == "DRIVEN" and o.pem.motion != "ANIMATION")}


def _refuse_constraints(objects) -> None:
    """AddonError naming an object whose constraints would undo the bake: Blender applies an object's constraints
    after its keys, so a keyed body with one shows the constraint, not the simulation; and an object the simulation
    reads from Blender (a pivot object, a fixed magnet, a wall, a driven magnet on its own animation) that a
    constraint ties to a keyed body is read before the bake but moves with the body after it. Muted or invalid
    constraints (Blender skips them) and constraints to anything else pass: those objects are read evaluated, the
    constraint's effect included (a pivot that moves is sampled over the run)."""
    keyed = _keyed(objects)
    for obj in sorted(keyed, key=lambda o: o.name):
        cons = applied_constraints(obj)
        if cons:
            names = ", ".join(f"'{c.name}'" for c in cons)
            it = "it" if len(cons) == 1 else "them"
            raise AddonError(f"Object '{obj.name}' has the constraint{'s' * (len(cons) > 1)} {names}, which Blender "
                             "applies after the bake's keys, so it would not move as simulated: mute or remove "
                             f"{it} (Object Constraint properties)")
    for obj, role in _read_objects(objects, keyed):
        found = constrained_to(obj, keyed)
        if found is not None:
            holder, con, body = found
            whose = (f"its constraint '{con.name}'" if holder == obj
                     else f"the constraint '{con.name}' of its parent '{holder.name}'")
            raise AddonError(f"Object '{obj.name}'{role}: {whose} ties it to '{body.name}', "
                             "which the bake moves; the simulation reads it before the bake, so it would move "
                             "differently after it: mute or remove the constraint (Object Constraint properties)")


def _read_objects(objects, keyed) -> list:
    """[(object, how the message names its part)] the simulation reads from Blender rather than keys: the PEM objects
    not in ``keyed`` and every pendulum's pivot object."""
    read = [(o, "") for o in objects if o not in keyed]
    return read + [(o.pem.pivot_object, f" (the pivot of '{o.name}')") for o in objects
                   if o.pem.role == "PENDULUM" and o.pem.pivot_mode == "OBJECT" and o.pem.pivot_object is not None]


def _refuse_parents(objects) -> None:
    """AddonError naming an object parented (plainly, no constraint) below a body the bake keys: a keyed body is keyed
    in its parent's frame as the start frame has it, and an object the simulation reads (a pivot, a fixed magnet, a
    wall, a driven magnet on its own animation) is read before the bake — both would move with the body after it."""
    keyed = _keyed(objects)
    for obj in sorted(keyed, key=lambda o: o.name):
        found = parented_to(obj, keyed)
        if found is not None:
            raise AddonError(f"Object '{obj.name}' is parented to '{found[0].name}', which the bake moves: the bake "
                             "keys it in its parent's frame, so the parent's motion would be added to the simulated "
                             "one; clear the parent (Alt P ▸ Clear and Keep Transformation)")
    for obj, role in _read_objects(objects, keyed):
        found = parented_to(obj, keyed)
        if found is not None:
            parent, body = found
            how = ("is moved by the bake" if parent == body
                   else f"is a child of '{body.name}', which the bake moves")
            raise AddonError(f"Object '{obj.name}'{role}: its parent '{parent.name}' {how}; the simulation reads it "
                             f"before the bake, so it would move with '{body.name}' after it: clear the parent "
                             "(Alt P ▸ Clear and Keep Transformation)")


def _refuse_held_still(context, objects, frame_start: int, t_last: float, fps: float) -> None:
    """AddonError naming a fixed magnet or a wall (of ``objects``) that moves by itself — keys, drivers, a constraint,
    a parent that moves — within t_last s of the start frame: the core holds both still where the start frame puts
    them, so the simulation would not see the motion the viewport shows. One whose constraints or parents hold it
    still passes (:func:`motions.first_moves` samples the pose, as an animated pivot is sampled)."""
    still = [o for o in objects if o.pem.role in ("FIXED", "WALL") and moves_by_itself(o)]
    if not still:
        return
    moved = motions.first_moves(context.scene, still, frame_start, t_last, fps, int(context.scene.pem.motion_samples))
    for obj in still:
        if obj in moved:
            what, held = ("a fixed magnet", "a fixed magnet") if obj.pem.role == "FIXED" else ("a wall", "walls")
            source, fix = motion_source(obj)
            if obj.pem.role == "FIXED":
                fix = f"make it a driven magnet (Motion: Animation) to follow the motion, or {fix}"
            raise AddonError(f"Object '{obj.name}' is {what}, but {source} moves it over the simulation's frames (at "
                             f"frame {moved[obj]:.6g} it has left its start-frame pose), and the simulation holds "
                             f"{held} still there: {fix}")


def build_scene(context, notes: list | None = None, frame_end: int | None = None, check: bool = True,
                records_cap: int = 8):
    """(core Scene, objects aligned with scene.bodies, initial world matrices) from the Blender scene; ``notes``
    gets the warnings of :func:`mass_properties`; ``frame_end``: the run ends there (:func:`time_settings`).
    ``check``: validated here (``Scene.checked``); False for a caller whose core call checks it anyway.
    ``records_cap``: at most that many records a frame (:func:`record_plan`)."""
    scene = context.scene
    sp = scene.pem
    unit = unit_scale(scene)
    objects = pem_objects(scene)
    for obj in objects:      # the Physics tab offers only these; Python can enable any object
        if obj.type not in BODY_TYPES:
            kind = obj.type.lower().replace("_", " ")
            raise AddonError(f"Object '{obj.name}' is {'an' if kind[0] in 'aeiou' else 'a'} {kind}: only meshes "
                             "(and curves, text, metaballs, empties) can be Magnetic Pendulum bodies or walls; turn "
                             "its Magnetic Pendulum off (obj.pem.enabled = False) or use a mesh")
    wall_objects = [o for o in objects if o.pem.role == "WALL"]
    objects = [o for o in objects if o.pem.role != "WALL"]
    if not objects:
        raise AddonError(f"Scene '{scene.name}' has no PEM bodies: enable Magnetic Pendulum on an object "
                         "(Physics properties)")
    if not any(o.pem.role in ("PENDULUM", "FREE") for o in objects):
        raise AddonError(f"Scene '{scene.name}' has no moving body (pendulum or free); nothing to simulate")
    _refuse_constraints(objects + wall_objects)
    _refuse_parents(objects + wall_objects)
    fps, dt, substeps, t_end, frame_start = time_settings(context, frame_end)
    # animated pivots and driven magnets: sampled over the run, its last step included (t_end whole steps of dt)
    steps = round(t_end / dt)
    _refuse_held_still(context, objects + wall_objects, frame_start, steps * dt, fps)
    tables = motions.tables(context, objects, frame_start, steps * dt, fps, unit)
    bodies, worlds = [], []
    for obj in objects:
        p = obj.pem
        M = initial_world(obj)
        R = rotation_part(M, obj.name)
        role = ROLE_TO_CORE[p.role]
        origin = M[:3, 3]
        table = tables.get(obj)
        ref = pivot_world(obj) if role == "pendulum" else origin   # the pivot checked, animated or not
        if role == "pendulum" and table is not None:
            ref = table[2][0] / unit   # the pivot where its animation puts it at the start
        if role in ("pendulum", "free") and obj.parent is not None and moves_by_itself(obj.parent):
            raise AddonError(f"Object '{obj.name}' is parented to '{obj.parent.name}', which moves: the bake keys "
                             "it in its parent's frame, so the parent's motion would be added to the simulated one; "
                             "clear the parent (Alt P ▸ Clear and Keep Transformation) — an animated pivot object "
                             "is followed without it")
        _refuse_rigid_body(obj, role)
        S = object_frame_scale(obj, M, unit)
        offset = unit * R.T @ (origin - ref)  # object origin in body coordinates, m
        dipoles = tuple(Dipole(S @ exact(d, "position") + offset, exact(d, "moment")) for d in p.dipoles)
        kw = {"contacts": shapes.body_contacts(obj, M, S, offset, unit), "restitution": pairs.restitution_of(obj),
              "contact_friction": pairs.contact_friction_of(obj)}
        if role in ("pendulum", "free"):
            mp, _ = mass_properties(obj, context, M, notes)
            kw["mass_properties"] = mp.translated(offset)
            kw["angular_velocity"] = exact(p, "angular_velocity")
            if role == "free" and p.translate:
                if p.use_hinge:
                    raise AddonError(f"Object '{obj.name}': Hinge and Translate are both on, but a translating body "
                                     "cannot be hinged (a hinge is a fixed axis): turn one of them off")
                kw["translate"] = True
                kw["velocity"] = unit * exact(p, "velocity")
            if p.use_hinge:
                axis = exact(p, "hinge_axis")
                if not np.linalg.norm(axis) > 0:
                    raise AddonError(f"Object '{obj.name}': the hinge axis is zero")
                kw["hinge"] = axis / np.linalg.norm(axis)
        elif not p.dipoles and not (role == "fixed" and p.contacts):  # a fixed body may be there to be struck
            raise AddonError(f"Object '{obj.name}' is a {role} magnet without dipoles: add a dipole")
        if table is not None and table[0] == "pivot":
            kw["pivot_motion"] = motions.motion_of(table, obj, p.pivot_object, frame_start, fps, sp.motion_samples)
        if role == "driven":
            if table is not None:
                kw["motion"] = motions.motion_of(table, obj, obj, frame_start, fps, sp.motion_samples)
            elif p.motion == "CONSTANT_VELOCITY":
                kw["motion"] = ConstantVelocity(unit * exact(p, "velocity"))
            else:
                kw["motion"] = EllipticOrbit(center=unit * exact(p, "orbit_center"), r1=unit * exact(p, "orbit_r1"),
                                             r2=unit * exact(p, "orbit_r2"), angular_velocity=exact(p, "orbit_omega"),
                                             phase=exact(p, "orbit_phase"))
        bodies.append(Body(name=obj.name, role=role, position=unit * ref, orientation=R.T, dipoles=dipoles, **kw))
        worlds.append(M)
    gravity = scene_gravity(scene) if sp.use_scene_gravity else exact(sp, "gravity")
    field = exact(sp, "field") if sp.field_mode == "UNIFORM" else np.zeros(3)
    rotating = (RotatingField(exact(sp, "field_b1"), exact(sp, "field_b2"), exact(sp, "field_omega"))
                if sp.field_mode == "ROTATING" else None)
    every, _ = record_plan(fps, dt, substeps, records_cap)
    settings = Settings(method=method_name(sp.method), dt=dt, t_end=t_end, record_interval=dt * every)
    # start positions are as precise as Blender stores them (single precision): a body meant to touch a table
    # starts on it (the size: the farthest any body or wall reaches from the origin) — at most half what the core
    # takes (a share of the smallest contact shape): a floor of a kilometre must not refuse a marble
    reach = max((np.abs(initial_world(o)[:3, 3]).max() + max(o.dimensions) for o in objects + wall_objects),
                default=0.0)
    tolerance = min([float32_tolerance(unit * reach)]
                    + [0.5 * PLACEMENT_TOLERANCE_MAX * c.radius for b in bodies for c in b.contacts])
    core = Scene(bodies=bodies, gravity=gravity, field=field, rotating_field=rotating, mu0=exact(sp, "mu0"),
                 placement_tolerance=tolerance if sp.contact_model == "SURFACE" else 0.0,  # impacts: unused (said)
                 friction=exact(sp, "friction"), periodic_box=unit * exact(sp, "box") if sp.use_periodic else None,
                 settings=settings, name=scene.name, restitution=exact(sp, "restitution"),
                 contact_friction=exact(sp, "contact_friction"), contact_model=sp.contact_model.lower(),
                 walls=tuple(walls.wall_of(o, unit, sp.contact_model == "SURFACE") for o in wall_objects))
    if not check:
        return core, objects, worlds
    try:
        core = core.checked()
    except ValidationError as err:
        raise AddonError(object_message(str(err), objects, wall_objects)) from err
    return core, objects, worlds


def sample_rate(substeps: int, cap: int = 8) -> int:
    """Records per frame: the largest power of two ≤ cap dividing the substeps (sub-frame keys need them)."""
    k = 1
    while k * 2 <= cap and substeps % (k * 2) == 0:
        k *= 2
    return k
