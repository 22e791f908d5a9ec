"""Blender's animation drives the physics (issue 29): an animated pivot object and a driven magnet with
Motion: Animation are sampled from the depsgraph and followed by the bake.

Oracles: the pivot object's own animation evaluated by Blender at the record times (the simulated pivot passes
through every sample); the command-line run of the exported scene (another process: the bake is that run, to
1e-12); the magnet's keys (the bake leaves its animation as it was); the scene's current frame (restored).
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import M, empty, pem, pendulum_setup  # noqa: E402, F401
from conftest import ROOT  # noqa: E402


def keyed_scene():
    """The test pendulum (a cube hung from an Empty) whose Empty is keyed to move along x and bob up and down, and
    a driven magnet below it keyed to turn about z (Motion: Animation)."""
    obj, piv = pendulum_setup()
    scene = bpy.context.scene
    for frame, x, z in ((1, 0.0, 0.1), (9, 0.03, 0.12), (17, 0.05, 0.09), (25, 0.08, 0.1)):
        piv.location = (x, 0.0, z)
        piv.keyframe_insert("location", frame=frame)
    d = obj.pem.dipoles.add()
    d.position, d.moment = (0.0, 0.0, 0.0), (0.0, 0.1, 0.2)
    rotor = empty("Rotor", location=(0.1, 0.0, -0.45))
    p = rotor.pem
    p.enabled, p.role, p.motion = True, "DRIVEN", "ANIMATION"
    m = p.dipoles.add()
    m.position, m.moment = (0.02, 0.0, 0.0), (0.3, 0.0, 0.0)
    for frame, angle in ((1, 0.0), (25, 3.0)):
        rotor.rotation_euler.z = angle
        rotor.keyframe_insert("rotation_euler", frame=frame)
    scene.frame_set(7)   # not the start frame: the sampling must leave the scene at its frame
    return obj, piv, rotor


def evaluated_location(obj, t, fps, start=1):
    scene = bpy.context.scene
    f = start + t * fps
    whole = int(np.floor(f))
    scene.frame_set(whole, subframe=float(f - whole))
    return np.array(obj.matrix_world.translation)


def test_the_bake_follows_an_animated_pivot_and_magnet_and_is_the_cli_run(pem, tmp_path):  # noqa: F811
    obj, piv, rotor = keyed_scene()
    scene = bpy.context.scene
    add_bake = pem["pem_addon.pendulum.bake"]
    plan = add_bake.prepare(bpy.context)
    assert scene.frame_current == 7
    body = plan.core.bodies[[b.name for b in plan.core.bodies].index(obj.name)]
    rotor_body = plan.core.bodies[[b.name for b in plan.core.bodies].index("Rotor")]
    assert body.pivot_motion is not None and rotor_body.motion.orientations is not None
    got = add_bake.run(plan)
    # the drivers' work counted: no warning, the balance below the post-flight limit (2.8e-6 here)
    assert got.info["warnings"] == [] and got.driver_work is not None and got.energy_balance() < 1e-4
    fps = scene.render.fps
    # 4 samples a frame, 8 records a frame: every other record is a sample, where the spline meets Blender's pose
    for i in range(0, len(got.t), 2):
        np.testing.assert_allclose(got.position[i, 0], evaluated_location(piv, got.t[i], fps), rtol=0, atol=1e-12)
    # between samples the spline stays within the keys' smooth curve
    for i in range(1, len(got.t), 16):
        np.testing.assert_allclose(got.position[i, 0], evaluated_location(piv, got.t[i], fps), rtol=0, atol=2e-4)
    scene.frame_set(7)
    out = tmp_path / "animated.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    run = subprocess.run([sys.executable, "-m", "pem_physics", "run", str(out), "-o", str(tmp_path / "cli"), "-q"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    ref = np.load(tmp_path / "cli" / "trajectory.npz")
    np.testing.assert_array_equal(ref["t"], got.t)
    np.testing.assert_allclose(ref["orientation"], got.orientation, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ref["position"], got.position, rtol=0, atol=1e-12)


def test_the_baked_pendulum_hangs_from_the_moving_pivot_and_the_magnet_keeps_its_keys(pem):  # noqa: F811
    obj, piv, rotor = keyed_scene()
    scene = bpy.context.scene
    keyframes = importlib.import_module(f"{pem['pem_addon.messages'].__package__}.keyframes")

    def rotor_keys():   # layered actions (5.0+) and the old API alike
        return [(fc.data_path, tuple(k.co)) for fcurves in keyframes.action_fcurve_collections(
            rotor.animation_data.action) for fc in fcurves for k in fc.keyframe_points]

    keys_before = rotor_keys()
    assert len(keys_before) == 6
    scene.frame_set(1)
    M0, p0 = M(obj), np.array(piv.matrix_world.translation)
    local = np.linalg.solve(M0, np.r_[p0, 1.0])     # the pivot in the cube's own coordinates: fixed to the body
    scene.frame_set(7)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert scene.frame_current == 7
    assert obj.pem.baked and not rotor.pem.baked
    assert rotor_keys() == keys_before
    for frame in (1, 5, 12, 20, 25):
        scene.frame_set(frame)
        # the keyed pose carries the pivot point where the animated Empty is (keys in single precision)
        np.testing.assert_allclose((M(obj) @ local)[:3], np.array(piv.matrix_world.translation), rtol=0, atol=1e-5)
    assert rotor.rotation_euler.z == pytest.approx(3.0, abs=1e-6)   # at frame 25: its own last key, as keyed


def test_a_driver_expression_a_constraint_and_a_moving_parent_are_followed_like_keys(pem):  # noqa: F811
    """Any animation, not only keys: the pivot Empty's z comes from a driver expression and its x from a Copy
    Location constraint on a keyed Empty; the driven magnet (Motion: Animation) rides on a keyed, turning parent.
    The core's motions pass through Blender's evaluated poses at every sample (1e-12), and the bake follows them."""
    obj, piv = pendulum_setup()
    scene = bpy.context.scene
    fc = piv.driver_add("location", 2)
    fc.driver.type = "SCRIPTED"
    fc.driver.expression = "0.1 + 0.004 * sin(frame)"   # Blender's simple expressions: no Python scripts needed
    leader = empty("Leader")
    for frame, x in ((1, 0.0), (25, 0.06)):
        leader.location.x = x
        leader.keyframe_insert("location", frame=frame)
    con = piv.constraints.new("COPY_LOCATION")
    con.target, con.use_y, con.use_z = leader, False, False
    turntable = empty("Turntable", location=(0.0, 0.0, -0.45))
    for frame, angle in ((1, 0.0), (25, 2.0)):
        turntable.rotation_euler.z = angle
        turntable.keyframe_insert("rotation_euler", frame=frame)
    rotor = empty("Rotor", location=(0.05, 0.0, 0.0))
    rotor.parent = turntable
    p = rotor.pem
    p.enabled, p.role, p.motion = True, "DRIVEN", "ANIMATION"
    m = p.dipoles.add()
    m.position, m.moment = (0.0, 0.0, 0.0), (0.3, 0.0, 0.0)
    scene.frame_set(1)
    add_bake = pem["pem_addon.pendulum.bake"]
    plan = add_bake.prepare(bpy.context)
    names = [b.name for b in plan.core.bodies]
    pivot_motion = plan.core.bodies[names.index(obj.name)].pivot_motion
    keyed = plan.core.bodies[names.index("Rotor")].motion
    fps = scene.render.fps
    moved = 0.0
    for tk in pivot_motion.times[::3]:
        np.testing.assert_allclose(pivot_motion.position(tk), evaluated_location(piv, tk, fps), rtol=0, atol=1e-12)
        Mr = _world(rotor, 1 + tk * fps)
        np.testing.assert_allclose(keyed.position(tk), Mr[:3, 3], rtol=0, atol=1e-12)
        np.testing.assert_allclose(keyed.orientation(tk).T, Mr[:3, :3], rtol=0, atol=1e-6)   # single-precision axes
        moved = max(moved, abs(pivot_motion.position(tk)[2] - 0.1), np.linalg.norm(Mr[:2, 3] - [0.05, 0.0]))
    assert moved > 3e-3   # the driver, the constraint and the parent did move them
    got = add_bake.run(plan)
    assert got.info["warnings"] == [] and got.driver_work is not None
    for i in range(0, len(got.t), 16):
        np.testing.assert_allclose(got.position[i, 0], evaluated_location(piv, got.t[i], fps), rtol=0, atol=1e-12)


def test_a_pivot_that_jumps_is_refused_in_blenders_words_and_nothing_is_baked(pem):  # noqa: F811
    """A key with Constant interpolation teleports the pivot between two sub-frames: a spline would swing through
    a motion that is not in the animation. The message names the object, the frame and the fix."""
    obj, piv = pendulum_setup()
    scene = bpy.context.scene
    for frame, x in ((1, 0.0), (12, 0.0), (13, 0.05), (25, 0.05)):
        piv.location.x = x
        piv.keyframe_insert("location", frame=frame)
    keyframes = importlib.import_module(f"{pem['pem_addon.messages'].__package__}.keyframes")
    for fcurves in keyframes.action_fcurve_collections(piv.animation_data.action):
        for fc in fcurves:
            for k in fc.keyframe_points:
                k.interpolation = "CONSTANT"
    scene.frame_set(4)
    with pytest.raises(RuntimeError, match=r"^Error: Object 'Pivot' \(the animated pivot of 'Cube'\): its animation, "
                                           r"sampled 4× a frame, the position jumps by 0.05 m between frame 12.75 "
                                           r"and 13, .* use Bezier or Linear interpolation there"):
        bpy.ops.pem.simulate_bake()
    assert not obj.pem.baked and scene.frame_current == 4


def test_a_magnet_spun_faster_than_its_samples_is_refused_with_the_fix(pem):  # noqa: F811
    obj, piv, rotor = keyed_scene()
    for frame, angle in ((1, 0.0), (25, np.radians(96 * 120.0))):   # 120° a sub-frame sample on average
        rotor.rotation_euler.z = angle
        rotor.keyframe_insert("rotation_euler", frame=frame)
    with pytest.raises(RuntimeError, match=r"^Error: Object 'Rotor' \(Motion: Animation\): its animation, sampled 4× "
                                           r"a frame, at frame [\d.]+ turns by [\d.]+° since the sample before: "
                                           r".* raise Motion Samples"):
        bpy.ops.pem.simulate_bake()
    assert not obj.pem.baked


def test_a_pendulum_parented_to_a_moving_object_is_refused_by_name(pem):  # noqa: F811
    obj, piv = pendulum_setup()
    mover = empty("Mover")
    for frame, z in ((1, 0.0), (25, 0.1)):
        mover.location.z = z
        mover.keyframe_insert("location", frame=frame)
    world = obj.matrix_world.copy()
    obj.parent = mover
    obj.matrix_world = world
    bpy.context.view_layer.update()
    with pytest.raises(RuntimeError, match="Object 'Cube' is parented to 'Mover', which moves"):
        bpy.ops.pem.simulate_bake()
    assert not obj.pem.baked


def test_a_magnet_whose_scale_is_animated_is_refused_by_name_and_nothing_is_baked(pem):  # noqa: F811
    """Its dipoles sit where the start frame's scale puts them: a scale that grows would move them in the viewport
    only. The message names the object, the frame and the fix; the scene is left as it was."""
    obj, piv, rotor = keyed_scene()
    for frame, s in ((1, 1.0), (25, 1.5)):
        rotor.scale = (s, s, s)
        rotor.keyframe_insert("scale", frame=frame)
    scene = bpy.context.scene
    scene.frame_set(7)
    with pytest.raises(RuntimeError, match=r"Object 'Rotor' changes its scale while it moves .* Animate its location "
                                           r"and rotation only"):
        bpy.ops.pem.simulate_bake()
    assert not obj.pem.baked and scene.frame_current == 7


def _tables_scene(core):
    """A pendulum on a tabulated pivot (a Lissajous wobble, 40 samples a second) over a magnet keyed on a table of
    positions and orientations (a circle while turning about a tilted axis): both kinds of table an import keys."""
    model = importlib.import_module(f"{core.__name__}.model")
    rotations = importlib.import_module(f"{core.__name__}.model.rotations")
    inertia = importlib.import_module(f"{core.__name__}.model.inertia")
    t = np.linspace(0.0, 0.5, 21)
    pivot = model.TabulatedMotion(t, np.stack([0.01 * np.sin(9 * t), 0.004 * np.cos(5 * t), 0.2 + 0.006 * t], 1))
    axis = np.array([0.3, 0.4, 0.866]) / np.linalg.norm([0.3, 0.4, 0.866])
    U = np.array([rotations.axis_angle_matrix(axis, 4.0 * tk).T for tk in t])
    keyed = model.TabulatedMotion(t, np.stack([0.03 * np.cos(6 * t), 0.03 * np.sin(6 * t), -0.08 + 0 * t], 1),
                                  rotations.orientation_to_quat(U))
    mp = inertia.MassProperties(0.1, np.array([0.0, 0.0, -0.12]), np.diag([4e-4, 4e-4, 2e-5]))
    bob = model.Body(name="bob", position=(0, 0, 0.2), mass_properties=mp, angular_velocity=(0.5, -0.3, 0.0),
                     dipoles=(model.Dipole((0, 0, -0.12), (0.0, 0.05, -0.1)),), pivot_motion=pivot)
    rotor = model.Body(name="rotor", role="driven", motion=keyed, position=keyed.positions[0],
                       orientation=U[0], dipoles=(model.Dipole((0.01, 0, 0), (0.2, 0.0, 0.1)),))
    return model.Scene(bodies=[bob, rotor], gravity=(0, 0, -9.81),
                       settings=model.Settings(dt=1.0 / 480, t_end=0.45, record_interval=1.0 / 48)).checked()


def _world(obj, frame):
    scene = bpy.context.scene
    whole = int(np.floor(frame))
    scene.frame_set(whole, subframe=float(frame - whole))
    return np.array(obj.matrix_world)


def test_an_imported_table_becomes_keys_that_are_its_spline_and_the_bake_follows_it(pem, tmp_path):  # noqa: F811
    """A scene file's tabulated motions come in as Bezier keys — the pivot Empty's location, the magnet's location
    and rotation (Motion: Animation) — that Blender evaluates as the file's own spline: at the samples and between
    them (the core's interpolant is the oracle; single-precision keys). The bake of the imported scene follows the
    keys resampled (Motion Samples raised to the table's rate or more) and so the command-line run of the file to
    the resampling's error."""
    core = pem["pem_physics"]
    file_scene = _tables_scene(core)
    path = tmp_path / "tables.toml"
    path.write_text(pem["pem_physics.io.scene_writer"].dumps(file_scene), encoding="utf-8")
    scene = bpy.context.scene
    scene.pem.motion_samples = 1
    assert bpy.ops.pem.import_scene(filepath=str(path), adapt_scene=True) == {"FINISHED"}
    bob, rotor, piv = bpy.data.objects["bob"], bpy.data.objects["rotor"], bpy.data.objects["bob_pivot"]
    assert rotor.pem.motion == "ANIMATION" and bob.pem.pivot_object == piv
    fps = scene.render.fps / scene.render.fps_base
    assert fps == 24 and scene.pem.motion_samples == 5   # samples every 1/40 s: on every fifth of a frame
    pivot_motion, keyed = file_scene.bodies[0].pivot_motion, file_scene.bodies[1].motion
    ts = np.concatenate([pivot_motion.times, 0.5 * (pivot_motion.times[1:] + pivot_motion.times[:-1]),
                         np.linspace(0.0, 0.5, 37)])
    # keys and Blender's curve evaluation are single precision: a few float32 ulps of the largest coordinate (0.21 m;
    # measured 1.6e-8 m)
    key_tol = 8 * np.finfo(np.float32).eps * 0.21
    for tk in ts:
        frame = scene.frame_start + tk * fps
        np.testing.assert_allclose(_world(piv, frame)[:3, 3], pivot_motion.position(tk), rtol=0, atol=key_tol)
        Mr = _world(rotor, frame)
        np.testing.assert_allclose(Mr[:3, 3], keyed.position(tk), rtol=0, atol=key_tol)
        np.testing.assert_allclose(Mr[:3, :3], keyed.orientation(tk).T, rtol=0, atol=2e-6)
    # a different interpolation would be far off between the samples: the linear one by ~1e-4 m here
    mid = 0.5 * (pivot_motion.times[3] + pivot_motion.times[4])
    chord = 0.5 * (pivot_motion.position(pivot_motion.times[3]) + pivot_motion.position(pivot_motion.times[4]))
    assert np.abs(chord - pivot_motion.position(mid)).max() > 1e-5
    scene.frame_set(scene.frame_start)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"} and bob.pem.baked
    ref = core.simulate(file_scene)
    plan = pem["pem_addon.pendulum.bake"].prepare(bpy.context)
    baked = pem["pem_addon.pendulum.bake"].run(plan)
    i, j = np.nonzero(np.abs(baked.t[:, None] - ref.t[None, :]) < 1e-12)   # the records both runs have
    assert len(i) > 10
    # measured 1.2e-7 (orientations), 1e-8 m: the keys' single precision (6e-8 of each value), carried by the swing
    assert np.abs(baked.orientation[i] - ref.orientation[j]).max() < 1e-6
    assert np.abs(baked.position[i] - ref.position[j]).max() < 1e-7
    # sub-frame samples that miss the table's times give another spline: 1.4e-5 off at two samples a frame
    scene.pem.motion_samples = 2
    coarse = pem["pem_addon.pendulum.bake"].run(pem["pem_addon.pendulum.bake"].prepare(bpy.context))
    assert np.abs(coarse.orientation[i] - ref.orientation[j]).max() > 1e-6


def test_an_imported_table_with_replace_settings_off_keeps_motion_samples(pem, tmp_path):  # noqa: F811
    examples = importlib.import_module(f"{pem['pem_physics'].__name__}.examples")
    path = tmp_path / "kapitza.toml"
    path.write_text(pem["pem_physics.io.scene_writer"].dumps(examples.build("kapitza", t_end=0.1)), encoding="utf-8")
    scene = bpy.context.scene
    scene.pem.motion_samples = 3
    assert bpy.ops.pem.import_scene(filepath=str(path), replace_settings=False) == {"FINISHED"}
    assert scene.pem.motion_samples == 3 and bpy.data.objects["bob_pivot"].animation_data.action is not None


def test_an_imported_analytic_motion_becomes_keys_of_the_exact_motion(pem, tmp_path):  # noqa: F811
    """A scene file's oscillating pivot and spinning magnet (exact motions; Blender's animation holds keys) come in
    as keys sampled at 64 a period: Blender's evaluation of them is the exact motion to the spline's error
    (≈ 2.4e-7 of the amplitude, model/analytic.KEYS_PER_PERIOD) and the keys' single precision; the bake runs."""
    core = pem["pem_physics"]
    bob = core.Body(name="bob", position=(0.0, 0.0, 0.3), mass_properties=core.model.inertia.MassProperties(
        0.1, np.array([0.0, 0.0, -0.2]), np.diag([1e-5, 1e-5, 1e-6])),
        dipoles=(core.Dipole((0.0, 0.0, -0.2), (0.0, 0.0, -0.1)),),
        pivot_motion=core.Oscillation(amplitudes=[(0.0, 0.0, 0.004)], angular_frequencies=[40.0]))
    rotor = core.Body(name="rotor", role="driven", position=(0.0, 0.0, 0.02),
                      motion=core.UniformRotation(axis=(0.0, 0.0, 1.0), angular_velocity=6.0),
                      dipoles=(core.Dipole((0.0, 0.0, 0.0), (0.2, 0.0, 0.0)),))
    file_scene = core.Scene(bodies=[bob, rotor], gravity=(0, 0, -9.81),
                            settings=core.Settings(dt=1e-3, t_end=0.25, record_interval=0.01)).checked()
    path = tmp_path / "exact.toml"
    path.write_text(pem["pem_physics.io.scene_writer"].dumps(file_scene), encoding="utf-8")
    scene = bpy.context.scene
    assert bpy.ops.pem.import_scene(filepath=str(path), adapt_scene=True) == {"FINISHED"}
    obj, piv = bpy.data.objects["rotor"], bpy.data.objects["bob_pivot"]
    assert obj.pem.motion == "ANIMATION" and piv.animation_data.action is not None
    fps = scene.render.fps / scene.render.fps_base
    pivot_motion = file_scene.bodies[0].pivot_motion
    for tk in np.linspace(0.0, 0.25, 41):
        frame = scene.frame_start + tk * fps
        # spline 2.4e-7·4 mm and a few float32 ulps of 0.3 m
        np.testing.assert_allclose(_world(piv, frame)[:3, 3], pivot_motion.position(tk), rtol=0, atol=2e-7)
        R = axis_angle_matrix_z(6.0 * tk)
        np.testing.assert_allclose(_world(obj, frame)[:3, :3], R, rtol=0, atol=2e-6)   # rotation: ~1e-6 spline
    scene.frame_set(scene.frame_start)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"} and bpy.data.objects["bob"].pem.baked


def axis_angle_matrix_z(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
