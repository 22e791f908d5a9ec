"""Imported files keep their own numbers: export returns them exactly, and a bake runs what the CLI runs.

Oracles: the scene file itself (loaded by the core, not through Blender) and the core's run of it.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import pem  # noqa: E402, F401
from conftest import ROOT  # noqa: E402
from roundoff import assert_follows, pick, twins  # noqa: E402

SCENES = ROOT / "examples" / "scenes"


def same_numbers(a, b):
    """Two core scenes hold the same numbers (bodies, fields, settings): to the last bit, or to round-off
    where a value passes through the object's frame (1e-15 relative; single precision would be 1e-7)."""
    assert [x.name for x in a.bodies] == [x.name for x in b.bodies]
    for x, y in zip(a.bodies, b.bodies):
        # the pose passes through the object's world matrix (re-orthonormalised: round-off, not float32's 1e-7)
        for attr in ("position", "orientation"):
            np.testing.assert_allclose(np.asarray(getattr(y, attr), float), np.asarray(getattr(x, attr), float),
                                       rtol=0, atol=1e-15, err_msg=f"{x.name}.{attr}")
        np.testing.assert_array_equal(np.asarray(y.angular_velocity, float), np.asarray(x.angular_velocity, float))
        if x.role in ("pendulum", "free"):
            mx, my = x.resolved_mass_properties(), y.resolved_mass_properties()
            assert my.mass == mx.mass, x.name
            np.testing.assert_allclose(my.center_of_mass, mx.center_of_mass, rtol=0,
                                       atol=1e-15 * np.abs(mx.center_of_mass).max())
            np.testing.assert_allclose(my.inertia, mx.inertia, rtol=1e-15, atol=0)
        for dx, dy in zip(x.dipoles, y.dipoles):
            np.testing.assert_allclose(dy.position, dx.position, rtol=0, atol=1e-15 * np.abs(dx.position).max())
            np.testing.assert_array_equal(dy.moment, dx.moment)
    for attr in ("gravity", "field", "mu0", "friction"):
        np.testing.assert_array_equal(np.asarray(getattr(b, attr), float), np.asarray(getattr(a, attr), float), attr)
    assert b.settings.dt == a.settings.dt


@pytest.mark.parametrize("name", ["three_magnet", "heavy_top", "compass"])
def test_import_then_export_gives_the_files_numbers(pem, tmp_path, name):  # noqa: F811
    sf = pem["pem_physics.io.scenefile"]
    path = SCENES / f"{name}.toml"
    assert bpy.ops.pem.import_scene(filepath=str(path)) == {"FINISHED"}
    out = tmp_path / "out.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    text = out.read_text()
    assert "9.8100004196167" not in text and "0.05000000074505806" not in text
    same_numbers(sf.load_scene(path).checked(), sf.load_scene(out).checked())


def test_a_value_typed_in_the_panel_is_used_as_typed(pem, tmp_path):  # noqa: F811
    sf = pem["pem_physics.io.scenefile"]
    assert bpy.ops.pem.import_scene(filepath=str(SCENES / "three_magnet.toml")) == {"FINISHED"}
    bpy.context.scene.pem.friction = 3e-4
    out = tmp_path / "out.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    assert sf.load_scene(out).friction == 3e-4  # the decimal typed, not its single-precision neighbour


@pytest.mark.parametrize("name, tol", [("heavy_top", 1e-12), ("compass", 1e-12),
                                       # chaotic: round-off of the body frame (1e-16) grows to ~1e-12 in a second
                                       ("three_magnet", 1e-10)])
def test_bake_runs_the_files_own_numbers(pem, name, tol):  # noqa: F811
    """The bake's core run of an imported file equals the core's run of the file over its first eighth of a
    second, 125 to 1,250 steps (single-precision values would put it ~1e-7 off from the first step)."""
    sf, sim = pem["pem_physics.io.scenefile"], pem["pem_physics.engine.simulate"]
    add_bake = pem["pem_addon.pendulum.bake"]
    path = SCENES / f"{name}.toml"
    assert bpy.ops.pem.import_scene(filepath=str(path)) == {"FINISHED"}
    scene = bpy.context.scene
    fps = scene.render.fps / scene.render.fps_base
    scene.frame_end = scene.frame_start + round(fps / 8)  # an eighth of a second
    plan = add_bake.prepare(bpy.context)
    got = add_bake.run(plan)
    core = sf.load_scene(path)
    assert plan.core.settings.dt == core.settings.dt
    t_end = (scene.frame_end - scene.frame_start) / fps
    assert plan.core.settings.t_end == pytest.approx(t_end, abs=core.settings.dt)
    ref = sim.simulate(core, t_end=plan.core.settings.t_end, record_interval=plan.core.settings.record_interval)
    assert np.array_equal(got.t, ref.t)
    for attr in ("orientation", "angular_momentum", "omega"):
        a, b = getattr(ref, attr), getattr(got, attr)
        np.testing.assert_allclose(b, a, rtol=0, atol=tol * np.abs(a).max(), err_msg=attr)


def test_import_keeps_the_scenes_frame_rate_and_range_unless_asked(pem, tmp_path):  # noqa: F811
    sf = pem["pem_physics.io.scenefile"]
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end = 30, 1.0, 1, 300
    assert bpy.ops.pem.import_scene(filepath=str(SCENES / "three_magnet.toml")) == {"FINISHED"}
    assert (scene.render.fps, scene.frame_start, scene.frame_end) == (30, 1, 300)
    # dt = 1 ms does not divide a 30 fps frame: the run keeps it
    plan = pem["pem_addon.pendulum.bake"].prepare(bpy.context)
    assert plan.core.settings.dt == 1e-3 and plan.core.settings.t_end >= 299 / 30
    out = tmp_path / "out.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    assert sf.load_scene(out).settings.dt == 1e-3
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.frame_end = 30, 300
    assert bpy.ops.pem.import_scene(filepath=str(SCENES / "three_magnet.toml"), adapt_scene=True) == {"FINISHED"}
    assert scene.render.fps in (25, 50) or (1 / (scene.render.fps * 1e-3)) % 1 == 0
    assert scene.frame_end != 300


def test_a_dt_that_does_not_divide_the_frame_runs_as_such(pem, tmp_path):  # noqa: F811
    """t_handle.toml (dt = 1/32 s) in a 24 fps scene: baked at dt = 1/32 (the core run of the file, 1e-12 over
    1 s), keys at the step times, exported with dt = 1/32."""
    sf, sim = pem["pem_physics.io.scenefile"], pem["pem_physics.engine.simulate"]
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 24, 1, 25
    path = SCENES / "t_handle.toml"
    assert bpy.ops.pem.import_scene(filepath=str(path)) == {"FINISHED"}
    add_bake = pem["pem_addon.pendulum.bake"]
    plan = add_bake.prepare(bpy.context)
    assert plan.core.settings.dt == 1 / 32
    got = add_bake.run(plan)
    ref = sim.simulate(sf.load_scene(path), t_end=plan.core.settings.t_end, record_interval=1 / 32)
    np.testing.assert_allclose(got.orientation, ref.orientation, rtol=0, atol=1e-12)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    obj = next(o for o in scene.objects if o.pem.enabled and o.pem.role == "FREE")
    kf = importlib.import_module(f"{pem['pem_addon.messages'].__package__}.keyframes")
    frames = [k.co[0] for k in next(fc for fcs in kf._slot_fcurve_collections(obj) for fc in fcs
                                    if fc.data_path == "rotation_quaternion").keyframe_points]
    np.testing.assert_allclose(np.diff(frames), 24 / 32, rtol=1e-6)  # a key per step: 0.75 frame apart
    out = tmp_path / "out.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    assert sf.load_scene(out).settings.dt == 1 / 32


# ------------------------------------------------------------- plausibility: bakes that mean nothing

def _magnet_below(obj, offset, name="Magnet"):
    """A fixed magnet `offset` (BU) below the bob's dipole at the start."""
    d = obj.pem.dipoles.add()
    d.position, d.moment = (0.0, 0.0, 0.0), (0.0, 0.0, 0.3)
    bpy.ops.mesh.primitive_cube_add(size=0.01, location=tuple(np.array(obj.matrix_world.translation) + offset))
    mag = bpy.context.object
    mag.name = name
    mag.pem.enabled = True
    mag.pem.role = "FIXED"
    m = mag.pem.dipoles.add()
    m.position, m.moment = (0.0, 0.0, 0.0), (0.0, 0.0, 0.3)
    bpy.context.view_layer.update()
    return mag


def test_dipoles_at_one_point_refuse_to_bake_and_name_the_objects(pem):  # noqa: F811
    from .test_addon import fingerprint, pendulum_setup

    obj, _ = pendulum_setup()
    _magnet_below(obj, np.zeros(3))
    before = fingerprint()
    with pytest.raises(RuntimeError, match=r"Object 'Cube' dipole #0 and Object 'Magnet' dipole #0: two bodies' "
                                           r"dipoles at one point"):
        bpy.ops.pem.simulate_bake()
    assert fingerprint() == before


def test_a_magnet_a_millimetre_away_bakes_with_warnings(pem):  # noqa: F811
    from .test_addon import pendulum_setup

    obj, _ = pendulum_setup()
    _magnet_below(obj, np.array([0.0, 0.0, -1e-3]))
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    sp = bpy.context.scene.pem
    assert "large for the fastest motion" in sp.last_warnings
    assert sp.last_energy_error >= 0 and sp.last_friction_loss == 0.0


def test_a_bake_is_the_command_line_run_of_its_exported_scene(pem, ext, tmp_path):  # noqa: F811
    """A scene typed in Blender (typed gravity, μ₀, friction, dt; a magnet on a pendulum near a fixed one), baked,
    then exported: ``python -m pem_physics run`` of the file (another process, the published outputs) gives the
    bake's own trajectory within the round-off bound of tests/roundoff.py (the bake may run on the extension's
    kernels built ahead of time or on Python floats, the command line on numba's JIT: ~1e-12 apart, more on some
    CPUs) — the panel and the command line are one simulation."""
    import subprocess
    import sys

    from .test_addon import pendulum_setup

    obj, piv = pendulum_setup()
    scene = bpy.context.scene
    sp = scene.pem
    sp.use_scene_gravity = False
    sp.gravity = (0.0, 0.0, -9.81)
    sp.friction = 1e-4
    sp.step_mode, sp.dt = "DT", 0.001          # 40 steps a frame at 25 fps
    scene.render.fps = 25
    obj.pem.dipoles.add().moment = (0.0, 0.0, 0.2)
    _magnet_below(obj, (0.0, 0.0, -0.08))
    add_bake = pem["pem_addon.pendulum.bake"]
    plan = add_bake.prepare(bpy.context)
    got = add_bake.run(plan)
    out = tmp_path / "typed.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    run = subprocess.run([sys.executable, "-m", "pem_physics", "run", str(out), "-o", str(tmp_path / "cli"), "-q"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    ref = np.load(tmp_path / "cli" / "trajectory.npz")
    assert len(ref["t"]) == len(got.t)
    np.testing.assert_array_equal(ref["t"], got.t)
    # the bound: the numpy reference of the same plan and its twins (every sin, cos and exp an ulp off)
    engines = [importlib.import_module(f"{ext.__name__}.pem_physics.engine.backends.{m}")
               for m in ("compiled", "scalar")]
    try:
        for m in engines:
            m.ENABLED = False
        base = add_bake.run(plan)
        tw = twins(lambda: add_bake.run(plan), f"{ext.__name__}.pem_physics")
    finally:
        for m in engines:
            m.ENABLED = True
    assert base.info["engine"] == "numpy"
    for k in ("orientation", "omega"):
        assert_follows(k, getattr(got, k), ref[k], pick(tw, k), got.steps, base=getattr(base, k))


def test_the_affine_inverse_is_the_inverse_to_round_off(pem):  # noqa: F811
    """units.affine_inverse (the add-on's poses; not LAPACK, whose threaded solve can take milliseconds for a 4×4):
    M·M⁻¹ = I to round-off of the matrix's condition, for rotated, sheared, scaled and translated matrices, one
    and stacked; a zero scale is numpy's LinAlgError, as np.linalg.inv's."""
    units = importlib.import_module(f"{pem['pem_addon.messages'].__package__}.units")
    rng = np.random.default_rng(7)
    M = np.zeros((50, 4, 4))
    M[:, :3, :3] = rng.normal(size=(50, 3, 3)) * 10.0 ** rng.uniform(-3, 3, size=(50, 1, 1))
    M[:, :3, 3] = rng.normal(scale=100.0, size=(50, 3))
    M[:, 3, 3] = 1.0
    inv = units.affine_inverse(M)
    for m, v in zip(M, inv):
        scale = np.linalg.cond(m) * (1.0 + np.abs(m[:3, 3]).max())    # the translation's column: |t| times
        np.testing.assert_allclose(m @ v, np.eye(4), rtol=0, atol=16 * np.finfo(float).eps * scale)
        np.testing.assert_array_equal(units.affine_inverse(m), v)
        np.testing.assert_array_equal(v[3], [0.0, 0.0, 0.0, 1.0])
    flat = M[0].copy()
    flat[:3, 2] = 0.0                                           # scale 0 along z
    with pytest.raises(np.linalg.LinAlgError):
        units.affine_inverse(flat)
