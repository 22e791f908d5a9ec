"""pem_addon.keyframes under Blender: keys reproduce the input, interpolate the short way, undo exactly.

The oracle is independent of Blender's own rotation code: expected world matrices are built
here with numpy from the input quaternions, and compared with ``matrix_world`` after
``scene.frame_set``.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

TOL = 1e-6  # keys, evaluation and matrix_world are single precision; magnitudes here are ≲ 2


# ---------------------------------------------------------------------------------------------
# numpy oracle


def quat_matrix(q):
    """3×3 rotation matrix of the quaternion (w, x, y, z) (normalised here)."""
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def trs(loc, q, scale=(1.0, 1.0, 1.0)):
    """4×4 matrix translate @ rotate @ scale, Blender's local matrix convention."""
    m = np.eye(4)
    m[:3, :3] = quat_matrix(q) @ np.diag(scale)
    m[:3, 3] = loc
    return m


def smooth_motion(rng, frames, flip_fraction=0.3):
    """Random smooth locations (N, 3) and unit quaternions (N, 4), with random sign flips.

    The rotation vector is a sum of slow sinusoids; the quaternion is its exponential, so
    consecutive samples differ by a small rotation. A random subset of the quaternions is then
    negated (same rotations), which a naive writer would interpolate the long way.
    """
    t = (np.asarray(frames) - frames[0]) / 24.0
    amp, freq, phase = rng.normal(size=(3, 3)), rng.uniform(0.2, 0.8, size=(3, 3)), rng.uniform(0, 6.3, size=(3, 3))
    rotvec = sum(amp[i] * np.sin(2 * np.pi * freq[i] * t[:, None] + phase[i]) for i in range(3))
    angle = np.linalg.norm(rotvec, axis=1)
    axis = rotvec / np.maximum(angle, 1e-300)[:, None]
    q = np.column_stack([np.cos(angle / 2), axis * np.sin(angle / 2)[:, None]])
    flips = rng.random(len(q)) < flip_fraction
    q[flips] *= -1.0
    loc = 0.7 * np.column_stack([np.sin(1.3 * t + 0.2), np.cos(0.7 * t), 0.5 * np.sin(2.1 * t)])
    return loc, q


def set_frame(scene, frame):
    """Evaluate the scene at a (possibly fractional) frame."""
    whole = int(np.floor(frame))
    scene.frame_set(whole, subframe=float(frame - whole))


def world(obj):
    """The evaluated world matrix as a float64 array."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    return np.array(obj.evaluated_get(depsgraph).matrix_world, dtype=np.float64)


def new_object(name, scene, parent=None):
    """An empty linked into the scene."""
    obj = bpy.data.objects.new(name, None)
    scene.collection.objects.link(obj)
    obj.parent = parent
    return obj


# ---------------------------------------------------------------------------------------------
# Independent views of the stored animation (not via pem_addon.keyframes)


def action_is_layered(action):
    """Layered (slotted) action, as opposed to a legacy one."""
    return hasattr(action, "layers") and action.is_action_layered


def object_fcurves(obj):
    """The F-Curves that animate ``obj`` (its action; its slot's channelbags if layered)."""
    ad = obj.animation_data
    if ad is None or ad.action is None:
        return []
    action = ad.action
    if not action_is_layered(action):
        return list(action.fcurves)
    if ad.action_slot is None:
        return []
    return [fc for layer in action.layers for strip in layer.strips
            for bag in [strip.channelbag(ad.action_slot)] if bag is not None for fc in bag.fcurves]


def fcurve_state(fc):
    """Everything about an F-Curve that a restore must give back."""
    n = len(fc.keyframe_points)
    arrays = {}
    for prop, width, dtype in (("co", 2, np.float32), ("handle_left", 2, np.float32), ("handle_right", 2, np.float32),
                               ("interpolation", 1, np.int32), ("handle_left_type", 1, np.int32),
                               ("handle_right_type", 1, np.int32), ("type", 1, np.int32), ("easing", 1, np.int32)):
        a = np.empty(n * width, dtype=dtype)
        fc.keyframe_points.foreach_get(prop, a)
        arrays[prop] = a.tolist()
    return (fc.data_path, fc.array_index, fc.group.name if fc.group else None, fc.extrapolation, fc.mute,
            len(fc.modifiers), tuple(sorted(arrays.items())))


def action_state(action):
    """Content of a whole action: slots and every F-Curve of every slot, or the legacy list."""
    if action is None:
        return None
    state = {"name": action.name, "users": action.users, "fake_user": action.use_fake_user}
    if action_is_layered(action):
        state["slots"] = [(s.handle, s.identifier) for s in action.slots]
        state["channels"] = sorted(
            (bag.slot.identifier, fcurve_state(fc)) for layer in action.layers for strip in layer.strips
            for bag in strip.channelbags for fc in bag.fcurves)
    else:
        state["channels"] = sorted(fcurve_state(fc) for fc in action.fcurves)
    return state


def object_state(obj):
    """Everything about an object's animation state that a restore must give back."""
    ad = obj.animation_data
    state = {
        "rotation_mode": obj.rotation_mode,
        "transforms": {p: tuple(getattr(obj, p)) for p in
                       ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")},
        "has_animation_data": ad is not None,
        "action": action_state(ad.action) if ad is not None else None,
    }
    if ad is not None and hasattr(ad, "action_slot"):
        state["slot"] = ad.action_slot.identifier if ad.action_slot else None
        state["last_slot_identifier"] = ad.last_slot_identifier
    return state


def data_state():
    """Names of all actions in the file (catches leaked backups and created actions)."""
    return sorted(a.name for a in bpy.data.actions)


def user_animated_object(scene, name="User"):
    """An object with a user action: Bezier keys on location and scale, a keyed custom property."""
    obj = new_object(name, scene)
    obj["power"] = 0.0
    obj.rotation_mode = 'XYZ'
    for frame, x in ((1, 0.0), (10, 1.0), (20, -0.5)):
        obj.location = (x, 0.5 * x, 0.1)
        obj.scale = (1.0 + 0.1 * x, 1.0, 1.0)
        obj["power"] = 3.0 * x
        obj.keyframe_insert("location", frame=frame)
        obj.keyframe_insert("scale", index=0, frame=frame)
        obj.keyframe_insert('["power"]', frame=frame)
    obj.rotation_euler = (0.1, 0.2, 0.3)  # not keyed: a plain value the restore must keep
    set_frame(scene, 7)
    return obj


class SimulatedFailure(Exception):
    """Raised inside a bake to check the rollback."""


# ---------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture
def rng():
    return np.random.default_rng(20250607)


@pytest.fixture
def motion(rng):
    """Frames 1..61 at half-frame spacing, with matching random smooth motion."""
    frames = 1.0 + 0.5 * np.arange(121)
    loc, q = smooth_motion(rng, frames)
    return frames, loc, q


# ---------------------------------------------------------------------------------------------
# Tests: what gets written


def test_oracle_quaternion_matrix_is_a_rotation(rng):
    """The numpy oracle itself: orthonormal, det 1, and q ↦ −q gives the same matrix."""
    for q in rng.normal(size=(20, 4)):
        r = quat_matrix(q)
        np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(r) == pytest.approx(1.0)
        np.testing.assert_allclose(quat_matrix(-q), r, atol=1e-15)
    # 90° about z maps x to y.
    np.testing.assert_allclose(quat_matrix([np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)]) @ [1, 0, 0], [0, 1, 0],
                               atol=1e-15)


def test_make_quaternions_continuous(keyframes, rng):
    q = rng.normal(size=(200, 4))
    out = keyframes.make_quaternions_continuous(q)
    unit = q / np.linalg.norm(q, axis=1)[:, None]
    assert np.all(np.einsum("ij,ij->i", out[1:], out[:-1]) >= 0.0)
    np.testing.assert_allclose(np.abs(np.einsum("ij,ij->i", out, unit)), 1.0, atol=1e-12)  # ±the same
    np.testing.assert_allclose(out[0], unit[0], atol=1e-15)


@pytest.mark.parametrize("bad, message", [
    (dict(frames=[1.0, 1.0, 2.0]), "strictly increasing"),
    (dict(frames=[1.0, np.nan, 3.0]), "NaN"),
    (dict(locations=np.zeros((3, 2))), "locations must have shape"),
    (dict(quaternions=np.zeros((3, 4))), "zero length"),
    (dict(quaternions=np.ones((2, 4))), "quaternions must have shape"),
])
def test_bad_input_raises_and_changes_nothing(keyframes, scene, bad, message):
    obj = new_object("Body", scene)
    args = dict(frames=[1.0, 2.0, 3.0], locations=np.zeros((3, 3)), quaternions=np.tile([1.0, 0, 0, 0], (3, 1)))
    args.update(bad)
    before = object_state(obj)
    with pytest.raises(ValueError, match=message):
        keyframes.write_transform_keys(obj, args["frames"], args["locations"], args["quaternions"])
    assert object_state(obj) == before
    assert data_state() == []


def test_keys_reproduce_input_at_every_keyed_frame(keyframes, scene, motion):
    frames, loc, q = motion
    obj = new_object("Body", scene)
    action = keyframes.write_transform_keys(obj, frames, loc, q, action_name="Bake")
    assert action.name == "Bake" and obj.animation_data.action == action
    assert obj.rotation_mode == 'QUATERNION'
    for k, f in enumerate(frames):
        set_frame(scene, f)
        np.testing.assert_allclose(world(obj), trs(loc[k], q[k]), atol=TOL, err_msg=f"frame {f}")


def test_channels_are_linear_and_hold_the_input(keyframes, scene, motion):
    frames, loc, q = motion
    obj = new_object("Body", scene)
    keyframes.write_transform_keys(obj, frames, loc, q)
    curves = {(fc.data_path, fc.array_index): fc for fc in object_fcurves(obj)}
    assert sorted(curves) == [("location", i) for i in range(3)] + [("rotation_quaternion", i) for i in range(4)]
    for (path, index), fc in curves.items():
        n = len(fc.keyframe_points)
        assert n == len(frames)
        co = np.empty(2 * n, dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        np.testing.assert_array_equal(co[0::2], frames.astype(np.float32))
        assert {kp.interpolation for kp in fc.keyframe_points} == {'LINEAR'}
        assert fc.group is not None and fc.group.name == keyframes.GROUP_NAME
        if path == "location":
            np.testing.assert_allclose(co[1::2], loc[:, index], atol=TOL)
    # Stored quaternions are ±input, sign-continuous.
    stored = np.array([[curves[("rotation_quaternion", i)].keyframe_points[k].co[1] for i in range(4)]
                       for k in range(len(frames))])
    np.testing.assert_allclose(np.abs(np.einsum("ij,ij->i", stored, q)), 1.0, atol=TOL)
    assert np.all(np.einsum("ij,ij->i", stored[1:], stored[:-1]) > 0.0)


def test_half_frames_interpolate_the_short_way(keyframes, scene, rng):
    frames = np.arange(1.0, 41.0)
    loc, q = smooth_motion(rng, frames, flip_fraction=0.5)
    raw_dots = np.einsum("ij,ij->i", q[1:], q[:-1])
    assert np.sum(raw_dots < 0) >= 5, "the input must contain sign flips for this test to mean anything"
    obj = new_object("Body", scene)
    keyframes.write_transform_keys(obj, frames, loc, q)
    for k in range(len(frames) - 1):
        set_frame(scene, frames[k] + 0.5)
        # Short-way midpoint: normalise(q_k + s q_{k+1}) with s making the dot positive.
        # (nlerp at t = 1/2 is exactly the slerp midpoint.) The long way is normalise(q_k − s q_{k+1}).
        s = 1.0 if raw_dots[k] >= 0 else -1.0
        mid = q[k] + s * q[k + 1]
        expected = trs(0.5 * (loc[k] + loc[k + 1]), mid)
        np.testing.assert_allclose(world(obj), expected, atol=TOL, err_msg=f"frame {frames[k] + 0.5}")
        long_way = quat_matrix(q[k] - s * q[k + 1])
        assert np.max(np.abs(world(obj)[:3, :3] - long_way)) > 0.5


def test_layout_matches_the_running_blender(keyframes, scene, motion):
    """Legacy actions where Blender has no layered ones (4.2/4.3); layered + slot where it does."""
    frames, loc, q = motion
    obj = new_object("Body", scene)
    action = keyframes.write_transform_keys(obj, frames, loc, q)
    if hasattr(bpy.types, "ActionSlot"):  # 4.4+: layered/slotted actions
        assert action.is_action_layered
        slot = obj.animation_data.action_slot
        assert slot is not None and slot.target_id_type == 'OBJECT'
        assert len(action.layers) == 1 and len(action.layers[0].strips) == 1
        bag = action.layers[0].strips[0].channelbag(slot)
        assert len(bag.fcurves) == 7
    else:
        assert not hasattr(action, "layers")
        assert len(action.fcurves) == 7
        assert action.id_root == 'OBJECT'
    if "fcurves" not in bpy.types.Action.bl_rna.properties:  # 5.0: the legacy view is gone altogether
        assert not hasattr(action, "fcurves")
    else:
        assert hasattr(action, "fcurves")


def test_rewriting_replaces_the_previous_bake(keyframes, scene, rng):
    obj = new_object("Body", scene)
    f1 = np.arange(1.0, 31.0)
    keyframes.write_transform_keys(obj, f1, *smooth_motion(rng, f1))
    f2 = np.arange(5.0, 16.0, 0.25)
    loc, q = smooth_motion(rng, f2)
    action = keyframes.write_transform_keys(obj, f2, loc, q)
    assert action == obj.animation_data.action and data_state() == [action.name]
    curves = object_fcurves(obj)
    assert len(curves) == 7 and all(len(fc.keyframe_points) == len(f2) for fc in curves)
    set_frame(scene, f2[9])
    np.testing.assert_allclose(world(obj), trs(loc[9], q[9]), atol=TOL)


def test_parented_and_scaled_object(keyframes, scene, motion):
    frames, loc, q = motion
    parent = new_object("Parent", scene)
    parent.location = (0.3, -0.2, 1.1)
    parent.rotation_mode = 'QUATERNION'
    parent_q = np.array([0.9, 0.1, -0.3, 0.2])
    parent.rotation_quaternion = parent_q / np.linalg.norm(parent_q)
    parent.scale = (1.2, 0.8, 1.5)
    child = new_object("Child", scene, parent=parent)
    child_scale = (0.5, 2.0, 1.25)
    child.scale = child_scale
    np.testing.assert_array_equal(np.array(child.matrix_parent_inverse), np.eye(4))
    keyframes.write_transform_keys(child, frames, loc, q)
    parent_world = trs(parent.location, parent_q, parent.scale)
    for k in range(0, len(frames), 7):
        set_frame(scene, frames[k])
        np.testing.assert_allclose(world(parent), parent_world, atol=TOL)
        np.testing.assert_allclose(world(child), parent_world @ trs(loc[k], q[k], child_scale), atol=TOL,
                                   err_msg=f"frame {frames[k]}")


def test_keys_into_a_user_action_keep_its_other_channels(keyframes, scene, motion):
    frames, loc, q = motion
    obj = user_animated_object(scene)
    user_action = obj.animation_data.action
    others_before = sorted(fcurve_state(fc) for fc in object_fcurves(obj) if fc.data_path != "location")
    action = keyframes.write_transform_keys(obj, frames, loc, q, action_name="unused")
    assert action == user_action and data_state() == [user_action.name]
    others_after = sorted(fcurve_state(fc) for fc in object_fcurves(obj)
                          if fc.data_path not in ("location", "rotation_quaternion"))
    assert others_after == others_before
    set_frame(scene, frames[20])
    np.testing.assert_allclose(world(obj)[:3, :3], quat_matrix(q[20]) @ np.diag(obj.scale), atol=TOL)
    np.testing.assert_allclose(world(obj)[:3, 3], loc[20], atol=TOL)


# ---------------------------------------------------------------------------------------------
# Tests: undo on failure, and clearing


@pytest.mark.parametrize("animation_data", [False, True], ids=["no-animation-data", "empty-animation-data"])
def test_failed_bake_on_unanimated_object_leaves_no_trace(keyframes, scene, motion, animation_data):
    frames, loc, q = motion
    obj = new_object("Body", scene)
    if animation_data:
        obj.animation_data_create()
    obj.rotation_mode = 'ZXY'
    obj.rotation_euler = (0.4, -0.1, 0.2)
    obj.location = (1.0, 2.0, 3.0)
    before = object_state(obj)
    with pytest.raises(SimulatedFailure), keyframes.preserve_animation(obj):
        keyframes.write_transform_keys(obj, frames, loc, q)
        set_frame(scene, frames[5])
        raise SimulatedFailure
    assert (obj.animation_data is not None) == animation_data
    assert object_state(obj) == before
    assert data_state() == []


@pytest.mark.parametrize("interrupt", [SimulatedFailure, KeyboardInterrupt])
@pytest.mark.parametrize("target", ["owner", "sharer"])
def test_failed_bake_restores_a_user_action_exactly(keyframes, scene, motion, interrupt, target):
    """Bake the action's owner, or a second object sharing the action (which, with slotted
    actions, has no slot of its own yet, so the bake adds one); a failure undoes all of it."""
    frames, loc, q = motion
    owner = user_animated_object(scene)
    sharer = new_object("Sharer", scene)
    sharer.animation_data_create().action = owner.animation_data.action
    owner.animation_data.action.use_fake_user = True
    baked = owner if target == "owner" else sharer
    before = {o.name: object_state(o) for o in (owner, sharer)}
    names_before = data_state()
    with pytest.raises(interrupt), keyframes.preserve_animation(baked):
        keyframes.write_transform_keys(baked, frames, loc, q)
        assert object_state(baked) != before[baked.name]
        if hasattr(baked.animation_data, "action_slot"):  # slotted actions: the bake switches slots too
            action = baked.animation_data.action
            baked.animation_data.action_slot = action.slots.new(id_type='OBJECT', name="Elsewhere")
        raise interrupt
    assert {o.name: object_state(o) for o in (owner, sharer)} == before
    assert data_state() == names_before
    assert sharer.animation_data.action == owner.animation_data.action


def test_restore_by_hand_and_discard(keyframes, scene, motion):
    """The explicit snapshot API, as a modal operator would use it across calls."""
    frames, loc, q = motion
    obj = user_animated_object(scene)
    before, names_before = object_state(obj), data_state()
    snap = keyframes.snapshot_animation(obj)
    assert len(data_state()) == len(names_before) + 1  # the backup copy
    keyframes.write_transform_keys(obj, frames, loc, q)
    keyframes.restore_animation(obj, snap)
    assert object_state(obj) == before and data_state() == names_before
    with pytest.raises(RuntimeError, match="already restored"):
        keyframes.restore_animation(obj, snap)

    other = new_object("Other", scene)
    with pytest.raises(ValueError, match="another object"):
        keyframes.restore_animation(other, keyframes.snapshot_animation(obj))
    names_now = data_state()

    snap = keyframes.snapshot_animation(obj)
    keyframes.write_transform_keys(obj, frames, loc, q)
    keyframes.discard_snapshot(snap)
    assert len(data_state()) == len(names_now)
    assert len(object_fcurves(obj)) == 7 + 2  # location, rotation_quaternion, scale[0], ["power"]


def test_successful_bake_keeps_keys_and_drops_backup(keyframes, scene, motion):
    frames, loc, q = motion
    obj = new_object("Body", scene)
    with keyframes.preserve_animation(obj):
        action = keyframes.write_transform_keys(obj, frames, loc, q)
    assert data_state() == [action.name]
    set_frame(scene, frames[3])
    np.testing.assert_allclose(world(obj), trs(loc[3], q[3]), atol=TOL)


def test_clear_keys_removes_a_created_action(keyframes, scene, motion):
    frames, loc, q = motion
    obj = new_object("Body", scene)
    keyframes.write_transform_keys(obj, frames, loc, q)
    assert keyframes.clear_keys(obj) == 7
    assert obj.animation_data.action is None
    assert data_state() == []


def test_clear_keys_keeps_a_user_action_and_its_other_channels(keyframes, scene, motion):
    frames, loc, q = motion
    obj = user_animated_object(scene)
    action = obj.animation_data.action
    others = sorted(fcurve_state(fc) for fc in object_fcurves(obj) if fc.data_path != "location")
    keyframes.write_transform_keys(obj, frames, loc, q)
    assert keyframes.clear_keys(obj) == 7
    assert obj.animation_data.action == action
    assert sorted(fcurve_state(fc) for fc in object_fcurves(obj)) == others
    assert keyframes.clear_keys(obj) == 0


# ---------------------------------------------------------------------------------------------
# Bench-style (prints timings, asserts only correctness)


def test_bench_dense_bake(keyframes, scene, rng, record_property):
    frames = 1.0 + np.arange(20000) / 8.0  # 2500 frames at 8 sub-steps
    loc, q = smooth_motion(rng, frames)
    obj = new_object("Body", scene)
    t0 = time.perf_counter()
    keyframes.write_transform_keys(obj, frames, loc, q)
    t_write = time.perf_counter() - t0
    t0 = time.perf_counter()
    for k in range(0, len(frames), 997):
        set_frame(scene, frames[k])
        np.testing.assert_allclose(world(obj), trs(loc[k], q[k]), atol=TOL)
    t_eval = time.perf_counter() - t0
    record_property("write_seconds_7x20000_keys", t_write)
    print(f"\n[bench] write 7 x {len(frames)} keys: {t_write * 1e3:.1f} ms; "
          f"{len(range(0, len(frames), 997))} frame evaluations: {t_eval * 1e3:.1f} ms "
          f"(Blender {bpy.app.version_string})")
