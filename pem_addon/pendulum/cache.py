"""The simulation cache of a scene, with the semantics of Blender's point caches (Cloth, Rigid Body World).

A scene's PEM bodies form one simulation. Its bake (the keys written by :mod:`.bake`) is in one of three
states, shown in the panels and the timeline:

- ``NOT_BAKED``: no object plays a PEM bake;
- ``BAKED``: the keys are what a bake of the scene now would write;
- ``OUTDATED``: an input changed after the bake — a setting of the scene or of a body, a body's start pose
  (moved by hand), scale or mesh, a pivot, a parent, a wall, a dipole — and :func:`changes` names which.

The inputs are fingerprinted item by item (:func:`inputs`: the scene's settings, then each PEM object) when a
bake is prepared; the fingerprint is stored with the bake and compared with the current one on every redraw.
Everything read here is independent of the current frame, so scrubbing the timeline never changes the state:
a baked body's start pose is its pose before the bake (or where it was moved by hand since), and an object that
moves by its own animation is fingerprinted by what the bake samples of it — its F-Curves evaluated at the bake's
sub-frames (keys, interpolation and modifiers alike), its drivers (what each reads), its constraints and parents
with every setting, and the transform channels no key sets — not by where it is now.

The simulation's frame range is the scene's, or its own (``Scene.pem.use_scene_range`` off), as a point
cache has its own start and end; a bake may stop at the current frame (*Bake to Current Frame*).
"""

from __future__ import annotations

import hashlib
import json

import bpy

from .. import bodies, handlers, keyframes, meshes, units
from ..frames import simulation_range

NOT_BAKED, BAKED, OUTDATED = "NOT_BAKED", "BAKED", "OUTDATED"

#: Scene properties that are not inputs of the simulation: overlay switches and the last bake's own record.
_SCENE_SKIP = frozenset({
    "rna_type", "name", "show_contacts", "show_dipoles", "show_pivots", "show_field_lines", "arrow_scale",
    "show_ghost_path", "ghost_seconds", "live_playback", "basin_grid", "basin_extent", "basin_seconds",
    "status", "last_method", "last_engine", "last_steps", "last_wall_time", "last_energy_drift",
    "last_energy_error", "last_friction_loss", "last_warnings", "last_orthonormality", "last_energy",
    "bake_inputs", "bake_frame_start", "bake_frame_end", "bake_objects",
})

#: Object properties that are not inputs: the bake's bookkeeping and the values computed for the panel.
_OBJECT_SKIP = frozenset({
    "rna_type", "name", "baked", "bake_key", "pre_bake_matrix", "pre_bake_state", "user_action", "user_slot",
    "user_had_animation", "active_dipole", "active_contact", "computed_mass", "computed_volume", "computed_com",
    "computed_moments", "computed_axes", "computed_inertia", "computed_stamp", "computed_notes",
})

#: The names :func:`changes` gives the scene's own item.
SCENE_ITEM = "simulation settings"


#: Settings of constraints and F-Curve modifiers that only change how the UI shows them.
_UI_ONLY = frozenset({"rna_type", "name", "show_expanded", "active", "is_override_data_editable"})


def _rna_values(group, skip=frozenset({"rna_type", "name"})) -> list:
    """The values of a property group's RNA properties (collections item by item, ID pointers by name), in a
    stable order: what :func:`inputs` hashes."""
    out = []
    for prop in group.bl_rna.properties:
        name = prop.identifier
        if name in skip:
            continue
        value = getattr(group, name)
        if prop.type == "COLLECTION":
            value = [_rna_values(item) for item in value]
        elif prop.type == "POINTER":
            value = None if value is None else (value.name if isinstance(value, bpy.types.ID)
                                                else _rna_values(value))
        elif hasattr(value, "__len__") and not isinstance(value, str):
            value = list(value)
        out.append((name, value))
    # the exact (double) values kept beside single-precision ones after an import are inputs too
    if isinstance(group, bpy.types.PropertyGroup):
        out.extend(sorted((k, _plain(group[k])) for k in group.keys() if k.startswith(units._EXACT)))
    return out


def _plain(value):
    if isinstance(value, set):
        return sorted(value)
    if hasattr(value, "to_list"):
        return value.to_list()
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


def sample_frames(scene) -> list:
    """The (sub-)frames a bake samples animated pivots and magnets at (:func:`.motions.sample`): the simulation's
    range, ``motion_samples`` a frame — where an animation's value is an input."""
    start, end = simulation_range(scene)
    per = max(1, int(scene.pem.motion_samples))
    return [start + k / per for k in range(max(0, end - start) * per + 1)]


def _keys(fcurve_collections, frames) -> list:
    """What an animation is: every F-Curve's channel and its value at each of ``frames`` — evaluated as Blender
    does, so keys, handles, interpolation, extrapolation and modifiers (a Noise's strength, a Cycles' mode) all
    count — and its modifiers' settings (a change that moves no sample is still a change)."""
    return [(fc.data_path, fc.array_index, fc.mute, [fc.evaluate(f) for f in frames],
             [_rna_values(m, _UI_ONLY) for m in fc.modifiers])
            for fcurves in fcurve_collections for fc in fcurves]


def _driver(d) -> tuple:
    """A driver as what it reads: its channel, type and expression, each variable's targets (the ID and the path,
    transform channel and space it reads), and its own F-Curve's keys and modifiers."""
    dr = d.driver
    variables = [(v.name, v.type, [(None if t.id is None else t.id.name, t.data_path, t.transform_type,
                                    t.transform_space, t.rotation_mode, t.bone_target) for t in v.targets])
                 for v in dr.variables]
    return (d.data_path, d.array_index, d.mute, dr.type, dr.expression, dr.use_self, variables,
            [(tuple(k.co), tuple(k.handle_left), tuple(k.handle_right), k.interpolation) for k in d.keyframe_points],
            [_rna_values(m, _UI_ONLY) for m in d.modifiers])


def _fcurves_digest(obj, frames) -> list:
    """What an object's own animation is: the F-Curves of the action slot it plays, evaluated at ``frames``, and
    its drivers, so an animated object's fingerprint does not change with the current frame."""
    out = _keys(keyframes._slot_fcurve_collections(obj), frames)
    anim = obj.animation_data
    if anim is not None:
        out.extend(_driver(d) for d in anim.drivers)
    return out


#: Transform channels whose values, where no F-Curve or driver sets them, place an animated object too.
_TRANSFORM = ("location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale",
              "delta_location", "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale")


def _still_channels(obj) -> list:
    """The transform components of an animated object that its animation does not set (their values are the same
    at every frame): part of where it is."""
    anim = obj.animation_data
    driven = {(fc.data_path, fc.array_index) for fcs in keyframes._slot_fcurve_collections(obj) for fc in fcs}
    if anim is not None:
        driven |= {(d.data_path, d.array_index) for d in anim.drivers}
    return [(path, i, float(x)) for path in _TRANSFORM for i, x in enumerate(keyframes.own_value(obj, path))
            if (path, i) not in driven]


def _constraints(obj) -> list:
    """An object's constraints with every setting (targets by name, influence, spaces, …)."""
    return [_rna_values(c, _UI_ONLY) for c in obj.constraints]


def _placement(obj, frames) -> list:
    """Where a non-body object (pivot, parent) is, independent of the current frame: its animation (evaluated at
    the bake's ``frames``), parents and constraints when it moves by itself, else its world matrix."""
    if bodies.moves_by_itself(obj):
        chain, o = [], obj
        while o is not None:
            chain.append((o.name, _fcurves_digest(o, frames), [list(r) for r in o.matrix_parent_inverse],
                          _still_channels(o), o.rotation_mode, _constraints(o)))
            o = o.parent
        return ["animated", chain]
    return ["still", [list(r) for r in obj.matrix_world]]


def _start_pose(obj, scene, frames, keyed: bool) -> list:
    """An object's start pose, the same before and after its bake and at any current frame: its transform values
    (before the bake, or where it was moved by hand since) unless its own animation moves it, and its own
    animation's keys (the action it plays, or kept aside while it plays its bake). ``keyed``: the scene's bake
    keyed it (:func:`baked_objects`)."""
    p = obj.pem
    anim = obj.animation_data
    action = p.user_action if keyed else (anim.action if anim is not None else None)
    own = _fcurves_digest_of(action, frames) if action is not None else []
    # a bake keys location and rotation only: the scale and the delta transforms are the object's own, now
    unkeyed = [keyframes.own_value(obj, name) for name in _UNKEYED]
    if keyed and keyframes.edited_by_hand(obj, scene.frame_current + scene.frame_subframe):
        return ["pose", keyframes.own_transform_state(obj), own, unkeyed]  # a re-bake starts here
    animated = _moves(action) if keyed else keyframes.animates_transform(obj)
    if animated:  # its transform values follow the current frame: its keys say where it starts
        return ["pose", None, own]
    return ["pose", p.pre_bake_state if keyed else keyframes.own_transform_state(obj), own, unkeyed]


#: The transform values a bake never keys (:data:`.keyframes.BAKED_PROPS` are keyed).
_UNKEYED = ("scale", "delta_location", "delta_rotation_quaternion", "delta_rotation_euler", "delta_scale")


def _moves(action) -> bool:
    """Whether an action has F-Curves that move an object (varying transform channels)."""
    return action is not None and any(
        fc.data_path in keyframes._MOVING_PATHS and keyframes._varies(fc)
        for fcurves in keyframes.action_fcurve_collections(action) for fc in fcurves)


def _fcurves_digest_of(action, frames) -> list:
    """The F-Curves of an action (all its layers and slots), evaluated at ``frames``: an object's own animation,
    kept aside during a bake."""
    return _keys(keyframes.action_fcurve_collections(action), frames)


def _object_item(obj, context, frames, keyed: bool) -> list:
    p = obj.pem
    item = [obj.type, _rna_values(p, _OBJECT_SKIP), _start_pose(obj, context.scene, frames, keyed)]
    if obj.parent is not None:
        item.append(["parent", obj.parent.name, obj.parent_type, [list(r) for r in obj.matrix_parent_inverse],
                     _placement(obj.parent, frames)])
    item.append(["constraints", _constraints(obj)])
    if p.role == "WALL" or (p.inertia_source == "PRIMITIVE"):
        item.append(["dimensions", list(obj.dimensions)])
    if p.role != "WALL" and p.inertia_source != "MANUAL" and obj.type == "MESH":
        try:
            item.append(["mesh", meshes.mesh_digest(obj, context).hex()])
        except Exception as err:  # noqa: BLE001  (a mesh the bake will refuse: the refusal is its state)
            item.append(["mesh", f"unreadable: {err}"])
        for part in meshes.compound_parts(obj):
            item.append(["part", part.name, [list(r) for r in part.matrix_local]])
    if p.role == "PENDULUM" and p.pivot_mode == "OBJECT" and p.pivot_object is not None:
        item.append(["pivot", p.pivot_object.name, _placement(p.pivot_object, frames)])
    return item


def _digest(value) -> str:
    return hashlib.sha1(json.dumps(value, default=_plain, sort_keys=True).encode()).hexdigest()


def inputs(context) -> dict:
    """{item name: digest} of everything a bake of ``context.scene`` reads (see the module's docstring):
    :data:`SCENE_ITEM` for the scene's settings, ``Object 'name'`` for each PEM object."""
    scene = context.scene
    scene_values = [_rna_values(scene.pem, _SCENE_SKIP), scene.render.fps, scene.render.fps_base,
                    list(scene.gravity), scene.use_gravity, scene.unit_settings.scale_length,
                    list(simulation_range(scene))]
    out = {SCENE_ITEM: _digest(scene_values)}
    frames = sample_frames(scene)
    keyed = set(baked_objects(scene))
    for obj in bodies.pem_objects(scene):
        out[f"Object '{obj.name}'"] = _digest(_object_item(obj, context, frames, obj in keyed))
    return out


def store(scene, fingerprint: dict, frame_start: int, frame_end: int, objects=()) -> None:
    """Record a bake's inputs, the frames it covers and the ``objects`` it keyed (each has its
    ``pem.bake_key``; called by :func:`.bake.apply`)."""
    sp = scene.pem
    sp.bake_inputs = json.dumps(fingerprint, sort_keys=True)
    sp.bake_frame_start, sp.bake_frame_end = frame_start, frame_end
    sp.bake_objects = json.dumps({o.pem.bake_key: [o.name, o.session_uid] for o in objects}, sort_keys=True)


def forget(scene) -> None:
    """The scene's bake was deleted: no inputs kept."""
    sp = scene.pem
    sp.bake_inputs = ""
    sp.bake_objects = ""
    sp.bake_frame_start = sp.bake_frame_end = 0


def _record(scene) -> dict:
    """{bake key: [object name, session uid]} of the objects the scene's bake keyed ({} when none)."""
    try:
        record = json.loads(scene.pem.bake_objects or "{}")
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def recorded_keys(scene) -> list:
    """The bake keys the scene's record lists, of objects deleted since the bake too."""
    return list(_record(scene))


def _resolve(record: dict, carriers: dict, by_name: bool) -> dict:
    """{bake key: object} of the record's objects among ``carriers`` ({bake key: [objects carrying it]}): the one
    with the recorded session uid (renames and undo keep it), else the one with the recorded name (a file loaded
    since: uids are per session). ``by_name`` tries the name first (right after a file is loaded)."""
    out = {}
    for key, entry in record.items():
        objs = carriers.get(key, [])
        if not objs or not isinstance(entry, list) or len(entry) != 2:
            continue
        name, uid = entry
        by_uid = [o for o in objs if o.session_uid == uid]
        named = [o for o in objs if o.name == name]
        found = (named or by_uid) if by_name else (by_uid or named)
        if found:
            out[key] = found[0]
    return out


def _carriers(objects) -> dict:
    carriers = {}
    for obj in objects:
        if obj.pem.baked and obj.pem.bake_key:
            carriers.setdefault(obj.pem.bake_key, []).append(obj)
    return carriers


def baked_objects(scene) -> list:
    """The objects of ``scene`` its bake keyed, in name order: each listed in the scene's record (:func:`store`)
    and carrying the same bake key. A copy of a baked object carries the key too (object properties are copied)
    but is not the recorded object, so it is never taken for baked: Delete Bake leaves it where it is. An object
    baked by an older version (no key) counts as baked, as it did then."""
    objects = list(scene.objects)
    found = list(_resolve(_record(scene), _carriers(objects), by_name=False).values())
    found += [o for o in objects if o.pem.baked and not o.pem.bake_key]
    return sorted(found, key=lambda o: o.name)


def is_keyed(scene, obj) -> bool:
    """Whether ``scene``'s bake keyed ``obj`` (:func:`baked_objects`)."""
    return obj.pem.baked and obj in baked_objects(scene)


def baked_elsewhere(scene, objects):
    """(object, scene) of the first of ``objects`` whose bake another scene holds (the object is linked into both),
    else None: a second bake would overwrite the pose the first one keeps."""
    for other in bpy.data.scenes:
        if other == scene:
            continue
        # keyed objects only: one baked by an older version (no key) counts as baked in every scene it is in
        keyed = set(_resolve(_record(other), _carriers(other.objects), by_name=False).values())
        for obj in objects:
            if obj in keyed:
                return obj, other
    return None


def refresh_records(by_name: bool) -> None:
    """Bring every scene's record of its baked objects up to date: their session uids from their names after a
    file is loaded (``by_name``: uids are per session), their names from their uids before one is saved (an object
    renamed since its bake)."""
    for scene in bpy.data.scenes:
        record = _record(scene)
        if not record:
            continue
        found = _resolve(record, _carriers(scene.objects), by_name)
        new = {key: ([found[key].name, found[key].session_uid] if key in found else entry)
               for key, entry in record.items()}
        if new != record:
            scene.pem.bake_objects = json.dumps(new, sort_keys=True)


def is_baked(scene) -> bool:
    """Whether an object of the scene plays the scene's PEM bake (:func:`baked_objects`)."""
    return bool(baked_objects(scene))


def changes(context) -> list:
    """What changed since the bake, one phrase each (``simulation settings``, ``Object 'Bob'``, ``Object 'X'
    (new)``, ``Object 'Y' (removed)``); [] when nothing did or the scene is not baked."""
    scene = context.scene
    if not is_baked(scene):
        return []
    try:
        kept = json.loads(scene.pem.bake_inputs or "{}")
    except ValueError:
        kept = {}
    if not kept:  # baked by a version without the cache's record: its inputs are unknown
        return ["unknown (baked by an older version of the add-on)"]
    now = inputs(context)
    out = [name for name in now if name in kept and kept[name] != now[name]]
    out += [f"{name} (new)" for name in now if name not in kept]
    out += [f"{name} (removed)" for name in kept if name not in now]
    return out


def status(context) -> tuple[str, list]:
    """(:data:`NOT_BAKED`, :data:`BAKED` or :data:`OUTDATED`; :func:`changes`), the fingerprints compared once."""
    if not is_baked(context.scene):
        return NOT_BAKED, []
    changed = changes(context)
    return (OUTDATED if changed else BAKED), changed


def state(context) -> str:
    """:data:`NOT_BAKED`, :data:`BAKED` or :data:`OUTDATED` (see the module's docstring)."""
    return status(context)[0]


def baked_frames(scene) -> str:
    """``frames 1–250``: the frames the scene's bake covers."""
    sp = scene.pem
    return f"frames {sp.bake_frame_start}–{sp.bake_frame_end}" if sp.bake_frame_end else "frames unknown"


def state_text(context) -> str:
    """The state in one line: ``Not baked``, ``Baked: frames 1–250``, ``Outdated (frames 1–250): changed since
    the bake: …``."""
    st, changed = status(context)
    if st == NOT_BAKED:
        return "Not baked"
    if st == BAKED:
        return f"Baked: {baked_frames(context.scene)}"
    return f"Outdated ({baked_frames(context.scene)}): changed since the bake: {', '.join(changed)}"


@bpy.app.handlers.persistent
def _after_load(*_args) -> None:
    refresh_records(by_name=True)


@bpy.app.handlers.persistent
def _before_save(*_args) -> None:
    refresh_records(by_name=False)


_HANDLERS = ((bpy.app.handlers.load_post, _after_load), (bpy.app.handlers.save_pre, _before_save))


def register():
    handlers.add(_HANDLERS)


def unregister():
    handlers.remove(_HANDLERS)
