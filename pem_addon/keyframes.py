"""Write baked transforms as keyframes, and undo a bake: pure ``bpy`` + numpy, no physics.

Public API
----------
- :func:`write_transform_keys` — bulk-insert ``location`` and ``rotation_quaternion`` keys.
- :func:`make_quaternions_continuous` — flip signs so that ``q[k]·q[k−1] ≥ 0`` (numpy only).
- :func:`snapshot_animation` / :func:`restore_animation` / :func:`discard_snapshot`, and the
  context manager :func:`preserve_animation` built on them — leave an object exactly as it was
  when a bake fails or is cancelled.
- :func:`clear_keys` — remove baked channels.
- :func:`write_spline_keys` — Bezier keys that reproduce a given piecewise cubic exactly (an imported
  tabulated motion).
- :func:`use_own_action` / :func:`restore_user_action` — the bake plays an action of its own; the
  user's action is kept untouched and comes back with Delete Bake; :func:`playing` assigns an action
  for a moment (to read the start pose), :func:`edited_by_hand` tells a baked object moved by hand,
  :func:`animates_transform` an object its own animation moves.

Blender versions
----------------
Two storage layouts exist and are told apart by feature, never by version number:

- *legacy* actions (Blender 4.2/4.3): F-Curves live in ``action.fcurves``;
- *layered* ("slotted") actions (Blender 4.4+; the only kind in 5.0, where ``Action.fcurves``
  is gone): F-Curves live in a channelbag, ``action.layers[0].strips[0].channelbag(slot)``, for
  the slot the object is assigned (``obj.animation_data.action_slot``).

Interpolation
-------------
Keys are written with LINEAR interpolation on every channel. The caller samples the motion
itself, densely (every frame or sub-frame), so the keys *are* the motion: linear segments
between samples neither overshoot nor wiggle (automatic Bezier handles, fitted per channel, do
both), and for the four quaternion channels linear interpolation followed by Blender's
normalisation is nlerp, which stays on the short great-circle arc between consecutive,
sign-continuous samples (its midpoint is exactly the slerp midpoint). The error between keys is
then set by the caller's sampling step alone.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field

import bpy
import numpy as np

#: The channels a bake writes: (data path, number of components).
TRANSFORM_CHANNELS = (("location", 3), ("rotation_quaternion", 4))

#: F-Curve group the channels are put in (the same name Blender's transform keying uses).
GROUP_NAME = "Object Transforms"

#: Custom property set on actions this module creates; :func:`clear_keys` deletes such an
#: action once it has no F-Curves left, and leaves any other action in place.
CREATED_MARK = "pem_created_action"

_MIN_QUATERNION_NORM = 1e-9


# ---------------------------------------------------------------------------------------------
# Feature detection: the only places that know about Blender versions.


def _action_is_layered(action) -> bool:
    """True for a layered/slotted action (Blender 4.4+), False for a legacy one (4.2/4.3)."""
    if not hasattr(action, "layers"):
        return False  # no layered actions in this Blender at all
    # An empty action counts as both legacy and layered; only a non-empty legacy action is not layered.
    return action.is_action_layered


def _anim_data_has_slots(anim_data) -> bool:
    """True where AnimData assigns action slots (Blender 4.4+)."""
    return hasattr(anim_data, "action_slot")


def _new_grouped_fcurve(owner, data_path: str, index: int):
    """A new F-Curve in ``owner`` (legacy Action or channelbag), put in the :data:`GROUP_NAME` group.

    The group is assigned after creation because ``fcurves.new`` takes a group keyword under a
    different name in each layout (``action_group`` legacy, ``group_name`` 5.0) and none at all in
    4.4/4.5 channelbags, whereas ``owner.groups`` and ``FCurve.group`` exist in all of them.
    """
    group = next((g for g in owner.groups if g.name == GROUP_NAME), None) or owner.groups.new(GROUP_NAME)
    fc = owner.fcurves.new(data_path, index=index)
    fc.group = group
    return fc


def _ensure_channelbag(action, slot):
    """The channelbag for ``slot`` in the action's first layer/keyframe strip, creating any of them.

    Same steps as ``bpy_extras.anim_utils.action_ensure_channelbag_for_slot`` (public only from
    Blender 5.0); Blender's animation system evaluates one layer with one keyframe strip.
    """
    layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type='KEYFRAME')
    return strip.channelbag(slot, ensure=True)


# ---------------------------------------------------------------------------------------------
# Input checks and quaternion signs (numpy only).


def make_quaternions_continuous(quaternions) -> np.ndarray:
    """Quaternions (N, 4), normalised, with signs flipped so that ``q[k]·q[k−1] ≥ 0``.

    ``q`` and ``−q`` are the same rotation, but Blender interpolates quaternion keys
    component-wise, so consecutive keys of opposite sign turn the long way round. The first
    quaternion keeps its sign. Raises ``ValueError`` for a wrong shape, a non-finite value or a
    quaternion of (near) zero length.
    """
    q = np.array(quaternions, dtype=np.float64)
    if q.ndim != 2 or q.shape[1] != 4:
        raise ValueError(f"quaternions must have shape (N, 4) (w, x, y, z), got {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ValueError("quaternions contain NaN or infinite values")
    norms = np.linalg.norm(q, axis=1)
    bad = np.flatnonzero(norms < _MIN_QUATERNION_NORM)
    if bad.size:
        raise ValueError(f"quaternion {bad[0]} has (near) zero length {norms[bad[0]]:.3g}")
    q /= norms[:, None]
    dots = np.einsum("ij,ij->i", q[1:], q[:-1])
    signs = np.cumprod(np.where(dots < 0.0, -1.0, 1.0))
    q[1:] *= signs[:, None]
    return q


def _checked_inputs(frames, locations, quaternions):
    """Validated float64 copies of the bake arrays; raises ``ValueError`` with the reason."""
    f = np.asarray(frames, dtype=np.float64)
    if f.ndim != 1 or f.size == 0:
        raise ValueError(f"frames must be a non-empty 1-D array, got shape {f.shape}")
    if not np.all(np.isfinite(f)):
        raise ValueError("frames contain NaN or infinite values")
    if f.size > 1 and not np.all(np.diff(f) > 0.0):
        k = int(np.flatnonzero(np.diff(f) <= 0.0)[0])
        raise ValueError(f"frames must be strictly increasing: frames[{k}]={f[k]} >= frames[{k + 1}]={f[k + 1]}")
    loc = np.asarray(locations, dtype=np.float64)
    if loc.shape != (f.size, 3):
        raise ValueError(f"locations must have shape ({f.size}, 3) to match frames, got {loc.shape}")
    if not np.all(np.isfinite(loc)):
        raise ValueError("locations contain NaN or infinite values")
    q = make_quaternions_continuous(quaternions)
    if q.shape[0] != f.size:
        raise ValueError(f"quaternions must have shape ({f.size}, 4) to match frames, got {q.shape}")
    return f, loc, q


# ---------------------------------------------------------------------------------------------
# F-Curve access for the object's action (and slot).


def _slot_fcurve_collections(obj):
    """The F-Curve collections that animate ``obj`` in its assigned action.

    Legacy: ``[action.fcurves]``. Layered: the ``fcurves`` of every channelbag of the assigned
    slot (empty when no slot is assigned). Empty when the object has no action.
    """
    anim_data = obj.animation_data
    action = anim_data.action if anim_data is not None else None
    if action is None:
        return []
    if not _action_is_layered(action):
        return [action.fcurves]
    slot = anim_data.action_slot
    if slot is None:
        return []
    bags = []
    for layer in action.layers:
        for strip in layer.strips:
            if strip.type == 'KEYFRAME':
                bag = strip.channelbag(slot)
                if bag is not None:
                    bags.append(bag.fcurves)
    return bags


def _remove_channels(obj, data_paths) -> int:
    """Remove the object's F-Curves on ``data_paths`` (all indices); return how many went."""
    removed = 0
    paths = set(data_paths)
    for fcurves in _slot_fcurve_collections(obj):
        for fc in [fc for fc in fcurves if fc.data_path in paths]:
            fcurves.remove(fc)
            removed += 1
    return removed


def _tweak_mode(obj) -> RuntimeError:
    return RuntimeError(f"Object '{obj.name}' is in NLA tweak mode; exit tweak mode before baking")


def _editable_action_for(obj, action_name: str | None):
    """The object's action, creating (and assigning) a new one if it has none.

    Raises ``RuntimeError`` if the action cannot be edited (linked from a library) or the
    object's animation is in NLA tweak mode.
    """
    anim_data = obj.animation_data or obj.animation_data_create()
    if anim_data.use_tweak_mode:
        raise _tweak_mode(obj)
    action = anim_data.action
    if action is None:
        action = bpy.data.actions.new(action_name or f"{obj.name}_PEM")
        action[CREATED_MARK] = True
        anim_data.action = action
    elif not action.is_editable:
        raise RuntimeError(f"Action '{action.name}' of Object '{obj.name}' is linked from a library and cannot be "
                           "keyed")
    return anim_data, action


def _fcurve_owner_for_writing(obj, anim_data, action):
    """What to create the bake's F-Curves in: the legacy Action, or the channelbag of obj's slot."""
    if not _action_is_layered(action):
        return action
    slot = anim_data.action_slot
    if slot is None:
        slot = action.slots.new(id_type='OBJECT', name=obj.name)
        anim_data.action_slot = slot
    return _ensure_channelbag(action, slot)


# ---------------------------------------------------------------------------------------------
# Public API: writing and clearing keys.


def write_transform_keys(obj, frames, locations, quaternions, *, action_name: str | None = None):
    """Key ``obj.location`` and ``obj.rotation_quaternion`` at ``frames``; return the Action.

    Parameters
    ----------
    obj : bpy.types.Object
    frames : (N,) float — scene frames, strictly increasing; sub-frames allowed.
    locations : (N, 3) float — ``obj.location`` at each frame (parent space, like the property).
    quaternions : (N, 4) float — ``obj.rotation_quaternion`` (w, x, y, z) at each frame; any
        sign and any non-zero length: they are normalised and made sign-continuous here.
    action_name : name for the action created when the object has none (default
        ``"<object name>_PEM"``). An existing action is keyed in place instead.

    Effects: sets ``obj.rotation_mode = 'QUATERNION'``; replaces every existing F-Curve of the
    object's action (its slot, for layered actions) on ``location`` and ``rotation_quaternion``
    by new ones holding exactly these keys, LINEAR-interpolated (see the module docstring);
    leaves every other channel alone. An action that has no slot for the object gets one.
    Keys are stored in single precision, as all Blender keys are.

    All inputs are checked before anything is changed (``ValueError``); a linked action or NLA
    tweak mode raises ``RuntimeError``. Use :func:`preserve_animation` around a whole bake to
    undo it on failure.
    """
    f, loc, q = _checked_inputs(frames, locations, quaternions)
    anim_data, action = _editable_action_for(obj, action_name)
    obj.rotation_mode = 'QUATERNION'
    _remove_channels(obj, [path for path, _ in TRANSFORM_CHANNELS])
    owner = _fcurve_owner_for_writing(obj, anim_data, action)

    n = f.size
    linear = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value
    interpolation = np.full(n, linear, dtype=np.int32)
    co = np.empty(2 * n, dtype=np.float32)
    co[0::2] = f
    for data_path, values in (("location", loc), ("rotation_quaternion", q)):
        for index in range(values.shape[1]):
            fc = _new_grouped_fcurve(owner, data_path, index)
            co[1::2] = values[:, index]
            points = fc.keyframe_points
            points.add(n)
            points.foreach_set("co", co)
            points.foreach_set("interpolation", interpolation)
            fc.update()
    return action


def write_spline_keys(obj, frames, channels, *, action_name: str) -> None:
    """Key ``obj`` with Bezier keys that *are* a given C¹ piecewise cubic (a scene file's tabulated motion).

    frames (N,) strictly increasing scene frames; channels [(data path, values (N, m), slopes (N, m) per
    frame)]. A cubic on [f₀, f₁] with ends y₀, y₁ and slopes s₀, s₁ is exactly the Bezier segment whose
    handles sit a third of the way in: (f₀ + h/3, y₀ + s₀h/3) and (f₁ − h/3, y₁ − s₁h/3), h = f₁ − f₀ —
    the frame is then linear in the curve's parameter, so Blender evaluates the cubic itself (in single
    precision, as every key). Handles are FREE so that Blender keeps them. The object gets a new action
    ``action_name`` (its own from then on: not marked as the bake's); existing channels on these paths go.
    """
    f = np.asarray(frames, dtype=float)
    if f.ndim != 1 or f.size < 2 or not np.all(np.diff(f) > 0):
        raise ValueError("frames must be a strictly increasing 1-D array of at least two frames")
    anim_data, action = _editable_action_for(obj, action_name)
    if CREATED_MARK in action:
        del action[CREATED_MARK]
    _remove_channels(obj, [path for path, _, _ in channels])
    owner = _fcurve_owner_for_writing(obj, anim_data, action)
    n = f.size
    h = np.diff(f)
    left_h, right_h = np.concatenate([h[:1], h]) / 3.0, np.concatenate([h, h[-1:]]) / 3.0
    enum = bpy.types.Keyframe.bl_rna.properties
    bezier = enum["interpolation"].enum_items["BEZIER"].value
    free = enum["handle_left_type"].enum_items["FREE"].value
    for data_path, values, slopes in channels:
        values, slopes = np.asarray(values, dtype=float), np.asarray(slopes, dtype=float)
        for index in range(values.shape[1]):
            y, s = values[:, index], slopes[:, index]
            fc = _new_grouped_fcurve(owner, data_path, index)
            points = fc.keyframe_points
            points.add(n)
            points.foreach_set("co", np.column_stack([f, y]).astype(np.float32).ravel())
            points.foreach_set("handle_left", np.column_stack([f - left_h, y - s * left_h])
                               .astype(np.float32).ravel())
            points.foreach_set("handle_right", np.column_stack([f + right_h, y + s * right_h])
                               .astype(np.float32).ravel())
            points.foreach_set("interpolation", np.full(n, bezier, dtype=np.int32))
            points.foreach_set("handle_left_type", np.full(n, free, dtype=np.int32))
            points.foreach_set("handle_right_type", np.full(n, free, dtype=np.int32))
            fc.update()


def clear_keys(obj, data_paths=tuple(path for path, _ in TRANSFORM_CHANNELS)) -> int:
    """Remove the object's F-Curves on ``data_paths`` ("Delete Bake"); return how many were removed.

    Only the object's assigned action (its slot, for layered actions) is touched. If that leaves
    an action this module created (:data:`CREATED_MARK`) with no F-Curves at all, the action is
    unassigned and, once unused, deleted. The object keeps its current transform values.
    """
    removed = _remove_channels(obj, data_paths)
    anim_data = obj.animation_data
    action = anim_data.action if anim_data is not None else None
    if action is not None and action.get(CREATED_MARK) and not _action_has_fcurves(action):
        anim_data.action = None
        if action.users == 0:
            bpy.data.actions.remove(action)
    return removed


def action_fcurve_collections(action) -> list:
    """Every F-Curve collection of an action: ``[action.fcurves]`` (legacy), or the ``fcurves`` of each
    channelbag of every layer and slot (layered)."""
    if not _action_is_layered(action):
        return [action.fcurves]
    return [bag.fcurves for layer in action.layers for strip in layer.strips
            if strip.type == 'KEYFRAME' for bag in strip.channelbags]


def _action_has_fcurves(action) -> bool:
    """True if any F-Curve is left in the action (any slot, any layer)."""
    return any(len(fcurves) for fcurves in action_fcurve_collections(action))


# ---------------------------------------------------------------------------------------------
# Public API: the bake's own action, kept apart from the user's animation.


@dataclass
class UserAnimation:
    """The animation an object had before its first bake (restored by :func:`restore_user_action`)."""

    action: object | None = field(repr=False)
    slot: str               # slot identifier ("" for legacy actions or none assigned)
    had_animation_data: bool


def _assign(anim_data, action, slot_identifier: str) -> None:
    anim_data.action = action
    if action is not None and slot_identifier and _anim_data_has_slots(anim_data):
        slot = next((s for s in action.slots if s.identifier == slot_identifier), None)
        if slot is not None and anim_data.action_slot != slot:
            anim_data.action_slot = slot


def _slot_identifier(anim_data) -> str:
    if anim_data is None or not _anim_data_has_slots(anim_data) or anim_data.action_slot is None:
        return ""
    return anim_data.action_slot.identifier


def use_own_action(obj, name: str | None = None) -> UserAnimation:
    """Give ``obj`` an action of its own for the bake; return what it had.

    The bake action is a copy of the object's action (so its other channels — scale, custom
    properties, … — keep playing; the bake then replaces the transform channels in the copy only)
    or a new action. The user's action itself is left untouched and unassigned: the caller keeps a
    counted reference to it (``obj.pem.user_action``) and :func:`restore_user_action` assigns it
    back. Works the same for legacy (4.2) and layered (4.4+) actions: a copy keeps its slots.
    """
    anim_data = obj.animation_data
    had = anim_data is not None
    user = anim_data.action if anim_data is not None else None
    slot = _slot_identifier(anim_data)
    if anim_data is None:
        anim_data = obj.animation_data_create()
    if anim_data.use_tweak_mode:
        raise _tweak_mode(obj)
    own = user.copy() if user is not None else bpy.data.actions.new(name or f"{obj.name}_PEM")
    if user is not None:
        own.name = name or f"{obj.name}_PEM"
    own[CREATED_MARK] = True
    _assign(anim_data, own, slot)
    return UserAnimation(user, slot, had)


def restore_user_action(obj, user: UserAnimation) -> None:
    """Undo :func:`use_own_action`: the user's action (and slot) assigned again, the bake action deleted
    once unused, no animation data if the object had none."""
    anim_data = obj.animation_data
    own = anim_data.action if anim_data is not None else None
    if anim_data is None and (user.action is not None or user.had_animation_data):
        anim_data = obj.animation_data_create()
    if anim_data is not None:
        _assign(anim_data, user.action, user.slot)
    if own is not None and own != user.action and own.get(CREATED_MARK) and own.users == 0:
        bpy.data.actions.remove(own)
    if not user.had_animation_data and obj.animation_data is not None and obj.animation_data.action is None:
        obj.animation_data_clear()


def owns_action(obj) -> bool:
    """Whether ``obj`` plays an action this module made (a bake action, :data:`CREATED_MARK`)."""
    anim_data = obj.animation_data
    return anim_data is not None and anim_data.action is not None and bool(anim_data.action.get(CREATED_MARK))


@contextlib.contextmanager
def playing(obj, action, slot_identifier: str):
    """Temporarily assign ``action`` (and slot) to ``obj`` — e.g. its own animation, to read its start pose —
    and put the previous assignment back exactly on leaving."""
    anim_data = obj.animation_data
    if anim_data is None:
        yield
        return
    before = (anim_data.action, _slot_identifier(anim_data))
    try:
        _assign(anim_data, action, slot_identifier)
        yield
    finally:
        _assign(anim_data, *before)


#: The data paths that move an object (its transform values).
_MOVING_PATHS = frozenset(("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale",
                           "delta_location", "delta_rotation_quaternion", "delta_rotation_euler", "delta_scale"))


def _varies(fc) -> bool:
    """Whether an F-Curve takes more than one value (keys of different values, or modifiers such as noise)."""
    if len(fc.modifiers):
        return True
    values = [k.co[1] for k in fc.keyframe_points]
    return len(values) > 1 and max(values) > min(values)


def animates_transform(obj) -> bool:
    """Whether ``obj``'s own animation moves it: varying F-Curves of its action (its slot) or drivers on its
    transform values, or unmuted NLA strips."""
    anim_data = obj.animation_data
    if anim_data is None:
        return False
    if any(fc.data_path in _MOVING_PATHS and _varies(fc) for fcs in _slot_fcurve_collections(obj) for fc in fcs):
        return True
    if any(d.data_path in _MOVING_PATHS for d in anim_data.drivers):
        return True
    return any(len(track.strips) for track in anim_data.nla_tracks if not track.mute)


def edited_by_hand(obj, frame: float) -> bool:
    """Whether ``obj``'s baked transform differs from its baked keys at ``frame``: it was moved or turned
    by hand after the bake (nothing keyed). Keys are single precision; so is the comparison."""
    if obj.rotation_mode != 'QUATERNION':
        return True
    for fcurves in _slot_fcurve_collections(obj):
        for fc in fcurves:
            if fc.data_path in ("location", "rotation_quaternion"):
                value = getattr(obj, fc.data_path)[fc.array_index]
                if abs(fc.evaluate(frame) - value) > 1e-6 * max(1.0, abs(value)):
                    return True
    return False


# ---------------------------------------------------------------------------------------------
# Public API: snapshot and restore.

_TRANSFORM_PROPS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")


@dataclass
class AnimationSnapshot:
    """What :func:`restore_animation` needs to put an object's animation state back exactly.

    ``backup`` is a full copy of the object's action taken at snapshot time (an unused action
    in ``bpy.data.actions`` until :func:`restore_animation` or :func:`discard_snapshot` is called).
    """

    object_pointer: int
    had_animation_data: bool
    # Actions are left out of repr(): repr() of a deleted Blender struct can crash the interpreter.
    action: object | None = field(repr=False)
    action_name: str | None
    backup: object | None = field(repr=False)
    slot_handle: int | None
    last_slot_identifier: str | None
    rotation_mode: str
    transforms: dict = field(default_factory=dict)
    action_uids: frozenset = frozenset()
    active: bool = True


def snapshot_animation(obj) -> AnimationSnapshot:
    """Record ``obj``'s animation state: action (copied), slot, rotation mode, transform values.

    Pair with exactly one of :func:`restore_animation` (undo) or :func:`discard_snapshot` (keep
    the changes); :func:`preserve_animation` does that for a ``with`` block.
    """
    anim_data = obj.animation_data
    action = anim_data.action if anim_data is not None else None
    backup = None
    if action is not None and action.is_editable:
        backup = action.copy()  # same content, slots and handles; 0 users until restored
    slot_handle = last_slot = None
    if anim_data is not None and _anim_data_has_slots(anim_data):
        slot = anim_data.action_slot
        slot_handle = slot.handle if slot is not None else None
        last_slot = anim_data.last_slot_identifier
    return AnimationSnapshot(
        object_pointer=obj.as_pointer(),
        had_animation_data=anim_data is not None,
        action=action,
        action_name=action.name if action is not None else None,
        backup=backup,
        slot_handle=slot_handle,
        last_slot_identifier=last_slot,
        rotation_mode=obj.rotation_mode,
        transforms={name: tuple(getattr(obj, name)) for name in _TRANSFORM_PROPS},
        action_uids=frozenset(a.session_uid for a in bpy.data.actions),
    )


def _check_snapshot(obj, snapshot: AnimationSnapshot) -> None:
    if not snapshot.active:
        raise RuntimeError("this animation snapshot was already restored or discarded")
    if snapshot.object_pointer != obj.as_pointer():
        raise ValueError(f"this animation snapshot was taken of another object, not {obj.name!r}")


def _remove_if_created_since(action, snapshot: AnimationSnapshot) -> None:
    """Delete ``action`` if it did not exist at snapshot time and nothing uses it any more."""
    if action.session_uid not in snapshot.action_uids and action.users == 0:
        bpy.data.actions.remove(action)


def restore_animation(obj, snapshot: AnimationSnapshot) -> None:
    """Put ``obj`` back exactly as it was at :func:`snapshot_animation` time.

    Restores: animation data present or not, the action and its whole content, the assigned
    slot and last-used slot identifier (layered actions), ``rotation_mode`` and the location,
    rotation (all three representations) and scale values. An action created since the snapshot
    and assigned to the object is deleted.

    A modified action is restored by swapping in the snapshot's copy: every user of the action
    (this object, other objects, NLA strips) is remapped to the copy, which then takes the
    original name, and the modified action is deleted. Python references to the old Action are
    therefore invalid afterwards; look the action up again (``obj.animation_data.action``).
    """
    _check_snapshot(obj, snapshot)
    anim_data = obj.animation_data
    current = anim_data.action if anim_data is not None else None

    if snapshot.action is None:
        if current is not None:
            anim_data.action = None
            _remove_if_created_since(current, snapshot)
        if not snapshot.had_animation_data and obj.animation_data is not None:
            obj.animation_data_clear()
    else:
        if anim_data is None:
            anim_data = obj.animation_data_create()
        if snapshot.backup is None:  # a linked action: nothing in it can have changed
            if current != snapshot.action:
                anim_data.action = snapshot.action
        else:
            original = snapshot.action
            if current is not None and current != original:
                anim_data.action = None
                _remove_if_created_since(current, snapshot)
            original.user_remap(snapshot.backup)  # users (and the fake user) move to the copy
            if anim_data.action != snapshot.backup:
                anim_data.action = snapshot.backup
            bpy.data.actions.remove(original)
            snapshot.backup.name = snapshot.action_name
            snapshot.action = snapshot.backup
            snapshot.backup = None
    anim_data = obj.animation_data
    if anim_data is not None and _anim_data_has_slots(anim_data):
        if snapshot.action is not None:
            slot = next((s for s in snapshot.action.slots if s.handle == snapshot.slot_handle), None)
            if slot != anim_data.action_slot:
                anim_data.action_slot = slot
        if snapshot.last_slot_identifier is not None:
            anim_data.last_slot_identifier = snapshot.last_slot_identifier

    obj.rotation_mode = snapshot.rotation_mode  # first: setting the mode converts the rotation values
    for name, value in snapshot.transforms.items():
        setattr(obj, name, value)
    snapshot.active = False


def discard_snapshot(snapshot: AnimationSnapshot) -> None:
    """Keep the changes made since the snapshot: delete its backup copy of the action."""
    if not snapshot.active:
        raise RuntimeError("this animation snapshot was already restored or discarded")
    if snapshot.backup is not None:
        bpy.data.actions.remove(snapshot.backup)
        snapshot.backup = None
    snapshot.active = False


@contextlib.contextmanager
def preserve_animation(obj):
    """``with preserve_animation(obj): bake…`` — restore ``obj`` if the block raises, else keep.

    Any exception, ``KeyboardInterrupt`` included, restores the snapshot and propagates.
    Yields the :class:`AnimationSnapshot`.
    """
    snapshot = snapshot_animation(obj)
    try:
        yield snapshot
    except BaseException:
        restore_animation(obj, snapshot)
        raise
    discard_snapshot(snapshot)


__all__ = ["AnimationSnapshot", "CREATED_MARK", "GROUP_NAME", "TRANSFORM_CHANNELS", "UserAnimation",
           "animates_transform", "clear_keys", "discard_snapshot", "edited_by_hand", "make_quaternions_continuous",
           "owns_action", "playing", "preserve_animation", "restore_animation", "restore_user_action",
           "snapshot_animation", "use_own_action", "write_transform_keys"]


# ---------------------------------------------------------------------------------------------
# Transform values of a bake's start pose (kept as JSON on the object).

#: An object's custom property: its delta transforms hold a live pose (:mod:`.pendulum.live`), not its own values;
#: what the bake's cache reads of the object takes them as :data:`IDENTITY_DELTAS` (:func:`own_transform_state`).
LIVE_DELTAS = "pem_live_deltas"
#: Delta transforms that move nothing (a live pose writes these three).
IDENTITY_DELTAS = {"delta_location": (0.0, 0.0, 0.0), "delta_rotation_quaternion": (1.0, 0.0, 0.0, 0.0),
                   "delta_rotation_euler": (0.0, 0.0, 0.0)}

TRANSFORM_PROPS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale",
                   "delta_location", "delta_rotation_quaternion", "delta_rotation_euler", "delta_scale")

#: The transform values a bake keys (location, rotation; it also sets the rotation mode): the only ones a
#: re-bake's start pose and Delete Bake take from before the bake. Scale and the delta transforms are never
#: keyed, so the user's current values stand: a body scaled after its bake is re-baked, and kept, at its new
#: scale (its mass properties are computed anew from it by :func:`scenes.build_scene`).
BAKED_PROPS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle")


def transform_state(obj) -> str:
    """The object's transform values and rotation mode, exactly (JSON of Python floats)."""
    state = {name: list(getattr(obj, name)) for name in TRANSFORM_PROPS}
    state["rotation_mode"] = obj.rotation_mode
    return json.dumps(state)


def own_transform_state(obj) -> str:
    """:func:`transform_state` with a live pose's deltas (:data:`LIVE_DELTAS`) read as the identity: the
    object's own values."""
    if not obj.get(LIVE_DELTAS):
        return transform_state(obj)
    state = json.loads(transform_state(obj))
    state.update({name: list(zero) for name, zero in IDENTITY_DELTAS.items()})
    return json.dumps(state)


def clear_live_deltas(objects) -> None:
    """Every object of ``objects`` whose deltas hold a live pose back in its start pose (deltas cleared, the mark
    removed)."""
    for obj in objects:
        if obj.get(LIVE_DELTAS):
            for name, zero in IDENTITY_DELTAS.items():
                setattr(obj, name, zero)
            del obj[LIVE_DELTAS]


def own_value(obj, name: str) -> list:
    """A transform value of the object's own (a live pose's delta read as the identity)."""
    if obj.get(LIVE_DELTAS) and name in IDENTITY_DELTAS:
        return list(IDENTITY_DELTAS[name])
    return list(getattr(obj, name))


def restore_transform_state(obj, text: str, names=TRANSFORM_PROPS) -> None:
    """Put back the rotation mode and the values ``names`` of a :func:`transform_state` (the others stay)."""
    state = json.loads(text)
    obj.rotation_mode = state.pop("rotation_mode")  # first: switching modes converts the rotation values
    for name, value in state.items():
        if name in names:
            setattr(obj, name, value)
