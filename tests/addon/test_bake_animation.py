"""A bake keeps the user's own animation and starts from the start-frame pose (issue: the bake a user can trust).

Oracles: the keys the test itself set up (frames, values, interpolation, handles), read back
channel by channel; a hand-built core run from the pose the test put the object in.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import TOL, M, hand_built_core_run, pem, pendulum_setup  # noqa: E402, F401


@pytest.fixture
def kf(ext, pem):  # noqa: F811
    return importlib.import_module(f"{ext.__name__}.pem_addon.keyframes")


def keys_of(kf, obj) -> dict:
    """{(data path, index): [(frame, value, interpolation, left handle, right handle), …]} of obj's action/slot."""
    out = {}
    for fcurves in kf._slot_fcurve_collections(obj):
        for fc in fcurves:
            out[(fc.data_path, fc.array_index)] = [
                (k.co[0], k.co[1], k.interpolation, tuple(k.handle_left), tuple(k.handle_right))
                for k in fc.keyframe_points]
    return out


def user_animation(obj):
    """The user keys location at frames 1 and 40 (the bob swings in from elsewhere) and scale at 1 and 10."""
    scene = bpy.context.scene
    start = obj.location.copy()
    for frame, dx in ((1, 0.0), (40, 0.08)):
        scene.frame_set(frame)
        obj.location = (start[0] + dx, start[1], start[2])
        obj.keyframe_insert("location", frame=frame)
    for frame, s in ((1, 1.0), (10, 1.3)):
        obj.scale = (s, s, s)
        obj.keyframe_insert("scale", frame=frame)
    scene.frame_set(1)
    return obj.animation_data.action


def slot_id(obj) -> str:
    ad = obj.animation_data
    return ad.action_slot.identifier if hasattr(ad, "action_slot") and ad.action_slot is not None else ""


def test_bake_and_clear_keep_the_users_keys_exactly(pem, kf):  # noqa: F811
    obj, _ = pendulum_setup()
    action = user_animation(obj)
    name, slot = action.name, slot_id(obj)
    keys = keys_of(kf, obj)
    assert ("location", 0) in keys and ("scale", 0) in keys
    bpy.context.scene.frame_set(20)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    # the bake plays an action of its own; the user's is kept, untouched and alive
    baked = obj.animation_data.action
    assert baked.name != name and bpy.data.actions[name].users >= 1 and obj.pem.user_action.name == name
    saved = obj.animation_data.action
    try:
        obj.animation_data.action = bpy.data.actions[name]
        if slot:
            obj.animation_data.action_slot = next(s for s in bpy.data.actions[name].slots if s.identifier == slot)
        assert keys_of(kf, obj) == keys
    finally:
        obj.animation_data.action = saved
    # the user's other channels keep playing during the bake: scale keyed 1 → 1.3 over frames 1–10
    bpy.context.scene.frame_set(10)
    assert obj.scale[0] == pytest.approx(1.3)
    baked_name = baked.name
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert obj.animation_data.action.name == name and slot_id(obj) == slot
    assert keys_of(kf, obj) == keys
    assert baked_name not in bpy.data.actions and not obj.pem.baked and obj.pem.user_action is None


def test_bake_and_clear_without_own_animation_leave_no_trace(pem, kf):  # noqa: F811
    obj, _ = pendulum_setup()
    n_actions = len(bpy.data.actions)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert obj.animation_data.action is not None and obj.pem.user_action is None
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert obj.animation_data is None and len(bpy.data.actions) == n_actions


def test_start_pose_is_the_start_frame_whatever_the_current_frame(pem, kf):  # noqa: F811
    obj, _ = pendulum_setup()
    user_animation(obj)
    runs = []
    for frame in (1, 20, 7):
        bpy.context.scene.frame_set(frame)
        assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
        runs.append({k: v for k, v in keys_of(kf, obj).items() if k[0] in ("location", "rotation_quaternion")})
        assert bpy.context.scene.frame_current == frame  # the bake leaves the current frame where it was
        assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert runs[0] == runs[1] == runs[2]
    # and that pose is the user's own at the start frame (location key at frame 1), not at the current one
    first = [runs[0][("location", i)][0] for i in range(3)]
    assert [k[0] for k in first] == [1.0] * 3
    bpy.context.scene.frame_set(1)
    np.testing.assert_allclose([k[1] for k in first], list(obj.location), atol=1e-6)


def test_rebake_after_moving_the_object_starts_from_the_new_pose(pem, kf):  # noqa: F811
    obj, piv = pendulum_setup()
    scene = bpy.context.scene
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    scene.frame_set(9)
    new_location = (0.05, 0.08, -0.22)
    obj.location = new_location                    # moved by hand, nothing keyed
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    # the oracle: a core run built by hand from the object in the new pose at the start frame
    scene.frame_set(scene.frame_start)
    np.testing.assert_allclose(list(obj.location), new_location, atol=1e-6)
    M0 = M(obj)
    pivot = np.array(piv.matrix_world.translation)
    substeps = scene.pem.substeps
    traj = hand_built_core_run(pem, obj, pivot, (0.0, 2.0, 0.0), 1 / (24 * substeps), 24 / 24, substeps)
    expect = pem["pem_physics.io.bake"].world_matrices(traj.orientation[:, 0], traj.pivot[0], M0, 1.0)
    for k, f in enumerate(range(scene.frame_start, scene.frame_end + 1)):
        scene.frame_set(f)
        np.testing.assert_allclose(M(obj), expect[k], atol=TOL, err_msg=f"frame {f}")
    # Delete Bake puts the object where the user last put it (the start pose of the last bake)
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    np.testing.assert_allclose(list(obj.location), new_location, atol=1e-7)
