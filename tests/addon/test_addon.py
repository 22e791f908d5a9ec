"""The add-on under Blender: bake accuracy, mass properties, bad states, cancel, clear, import/export.

Oracles: core runs of scenes built *by hand* here from the known geometry (not through the
add-on's adapters), closed-form box tensors, the core's mesh integrals on triangles read here
independently, and the core's own run of the PEM UDF fixtures (tests/data/pem).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from conftest import ROOT  # noqa: E402
from roundoff import assert_follows, pick, twins  # noqa: E402

PEM_DATA = ROOT / "tests" / "data" / "pem"  # PEM UDF inputs carried by the repository
TOL = 1e-6


@pytest.fixture(scope="module")
def pem(ext):
    """The add-on registered for this module; yields its modules."""
    addon = importlib.import_module(f"{ext.__name__}.pem_addon")
    addon.register()
    mods = {name: importlib.import_module(f"{ext.__name__}.{name}") for name in (
        "pem_physics", "pem_physics.model.inertia", "pem_physics.model", "pem_physics.engine.simulate",
        "pem_physics.io.bake", "pem_physics.io.scenefile", "pem_physics.io.scene_writer", "pem_physics.io.udf_scene",
        "pem_addon.pendulum.bake", "pem_addon.pendulum.overlay", "pem_addon.messages", "pem_addon.units",
        "pem_addon.meshes", "pem_addon.bodies", "pem_addon.pendulum.importing", "pem_addon.pendulum.operators",
        "pem_addon.jobs")}
    yield mods
    addon.unregister()


def M(obj):
    return np.array([list(r) for r in obj.matrix_world], dtype=float)


def cube(name="Cube", size=0.1, location=(0, 0, -0.3), rotation=(0, 0, 0), scale=(1, 1, 1)):
    bpy.ops.mesh.primitive_cube_add(size=size, location=location, rotation=rotation)
    obj = bpy.context.object
    obj.name = name
    obj.scale = scale  # object scale (the operator's own scale option scales the mesh data instead)
    bpy.context.view_layer.update()
    return obj


def empty(name="Pivot", location=(0, 0, 0)):
    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = location
    return obj


def pendulum_setup(scale=(1, 1, 1), parent=False, omega=(0.0, 2.0, 0.0)):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 25
    scene.render.fps = 24
    scene.pem.substeps = 16
    piv = empty(location=(0.0, 0.0, 0.1))
    c = cube(location=(0.12, 0.03, -0.25), rotation=(0.3, 0.2, 0.1), scale=scale)
    if parent:
        par = empty("Parent", location=(0.05, -0.02, 0.01))
        par.rotation_euler = (0.2, -0.1, 0.4)
        par.scale = (1.5, 1.5, 1.5)
        bpy.context.view_layer.update()
        world = c.matrix_world.copy()
        c.parent = par
        c.matrix_world = world  # keep the pose; matrix_parent_inverse stays identity
        bpy.context.view_layer.update()
    p = c.pem
    p.enabled = True
    p.pivot_object = piv
    p.density = 1000.0
    p.angular_velocity = omega
    bpy.context.view_layer.update()
    return c, piv


def hand_built_core_run(mods, obj, pivot_bu, omega, dt, t_end, every, unit=1.0):
    """A core scene of the same box written from its world geometry (lab-aligned body frame, metres)."""
    inertia, model = mods["pem_physics.model.inertia"], mods["pem_physics.model"]
    sim = mods["pem_physics.engine.simulate"]
    W = M(obj)
    A = W[:3, :3]
    half = 0.05 * np.linalg.norm(A, axis=0) * unit
    axes = A / np.linalg.norm(A, axis=0)
    box = inertia.Cuboid(half_sides=half, axes=(axes[:, 0], axes[:, 1]), density=1000.0,
                         center=(W[:3, 3] - pivot_bu) * unit)
    body = model.Body(name="box", position=pivot_bu * unit, shapes=[box], angular_velocity=omega)
    scene = model.Scene(bodies=[body], gravity=tuple(bpy.context.scene.gravity),
                        settings=model.Settings(dt=dt, t_end=t_end, record_interval=dt * every))
    return sim.simulate(scene)


@pytest.mark.parametrize("case", ["origin_off_pivot", "scaled", "parented", "scene_units_cm"])
def test_bake_matches_core_world_matrices(pem, case):
    scale = (1.2, 0.7, 1.9) if case == "scaled" else (1, 1, 1)
    unit = 0.01 if case == "scene_units_cm" else 1.0
    bpy.context.scene.unit_settings.scale_length = unit  # 1 Blender unit = 1 cm: a 1 mm cube, 3 mm below
    obj, piv = pendulum_setup(scale=scale, parent=case == "parented")
    # The 3 mm pendulum swings at ~60 rad/s: resolve it finely, since the two runs' body frames differ
    # and a cube's degenerate principal axes make their (tiny, 4th-order) step errors differ too.
    substeps = 256 if unit != 1.0 else 16
    bpy.context.scene.pem.substeps = substeps
    M0 = M(obj)
    pivot = np.array(piv.matrix_world.translation)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    dt = 1 / (24 * substeps)
    traj = hand_built_core_run(pem, obj, pivot, (0.0, 2.0, 0.0), dt, 24 / 24, substeps, unit)
    expect = pem["pem_physics.io.bake"].world_matrices(traj.orientation[:, 0], traj.pivot[0], M0, unit)
    scene = bpy.context.scene
    moved = 0.0
    for k, f in enumerate(range(scene.frame_start, scene.frame_end + 1)):
        scene.frame_set(f)
        np.testing.assert_allclose(M(obj), expect[k], atol=TOL, err_msg=f"frame {f}")
        moved = max(moved, np.abs(M(obj) - M0).max())
    assert moved > 0.05  # it really swung (in Blender units)


@pytest.mark.parametrize("fps, base", [(30, 1.001), (24, 1.001)], ids=["29.97", "23.976"])
def test_a_fractional_frame_rate_bakes_on_its_own_clock(pem, fps, base):
    """29.97 and 23.976 fps are fps / fps_base: frame f shows t = (f − 1)·base/fps. Against the hand-built core run
    with that clock (a clock of fps alone is 0.1 % off: ~3e-3 of a swing by frame 25)."""
    obj, piv = pendulum_setup()
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = fps, base
    M0 = M(obj)
    pivot = np.array(piv.matrix_world.translation)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    substeps, frames = scene.pem.substeps, scene.frame_end - scene.frame_start
    dt = base / (fps * substeps)
    traj = hand_built_core_run(pem, obj, pivot, (0.0, 2.0, 0.0), dt, frames * base / fps, substeps)
    expect = pem["pem_physics.io.bake"].world_matrices(traj.orientation[:, 0], traj.pivot[0], M0, 1.0)
    for k, f in enumerate(range(scene.frame_start, scene.frame_end + 1)):
        scene.frame_set(f)
        np.testing.assert_allclose(M(obj), expect[k], atol=TOL, err_msg=f"frame {f}")


def test_bake_runs_on_the_compiled_engine_when_numba_is_there_and_equals_the_numpy_bake(pem, ext):
    """The bake's trajectory from the compiled engine equals the numpy engine's (within the round-off bound of
    tests/roundoff.py); without numba the bake runs on numpy and both the status line and the panel say so."""
    compiled = importlib.import_module(f"{ext.__name__}.pem_physics.engine.backends.compiled")
    jit = importlib.import_module(f"{ext.__name__}.pem_physics.jit")
    add_bake = pem["pem_addon.pendulum.bake"]
    obj, piv = pendulum_setup(omega=(0.3, 2.0, -0.4))
    plan = add_bake.prepare(bpy.context)
    fast = add_bake.run(plan)
    if not jit.installed():
        # one pendulum without numba: the plain-Python path (engine/backends/scalar.py)
        assert fast.info["engine"] == "python"
        assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
        assert "plain-Python (no numba) engine" in bpy.context.scene.pem.status
        return
    assert fast.info["engine"] == "numba"
    try:
        compiled.ENABLED = False
        slow = add_bake.run(plan)
        tw = twins(lambda: add_bake.run(plan), f"{ext.__name__}.pem_physics")  # measure the bound
    finally:
        compiled.ENABLED = True
    assert slow.info["engine"] == "numpy"
    for k in ("orientation", "omega", "angular_momentum", "torque", "kinetic_energy", "gravity_energy"):
        assert_follows(k, getattr(fast, k), getattr(slow, k), pick(tw, k), slow.steps)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert "compiled engine" in bpy.context.scene.pem.status and "steps/s" in bpy.context.scene.pem.status


def test_sub_frame_keys_for_fast_bodies(pem):
    obj, piv = pendulum_setup(omega=(0.0, 40.0, 0.0))  # ~95° per frame at 24 fps
    bpy.ops.pem.simulate_bake()
    fc = next(iter(_fcurves(obj)))
    frames = np.array([k.co[0] for k in fc.keyframe_points])
    assert len(frames) > 2 * 25 and np.all(np.diff(frames) > 0)
    assert np.any(frames != np.round(frames))


def _fcurves(obj):
    action = obj.animation_data.action
    if hasattr(action, "fcurves") and bpy.app.version < (5, 0, 0):
        return list(action.fcurves)
    slot = obj.animation_data.action_slot
    return list(action.layers[0].strips[0].channelbag(slot).fcurves)


def test_mass_properties_default_cube(pem):
    for s in (1.0, 1.5):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        obj = cube(size=2.0, location=(0, 0, 0), scale=(s, s, s))
        bpy.context.view_layer.objects.active = obj
        obj.pem.density = 1000.0
        assert bpy.ops.pem.compute_mass_properties() == {"FINISHED"}
        Mass = 8000 * s**3
        assert obj.pem.computed_mass == pytest.approx(Mass, rel=1e-6)
        a = 2 * s
        np.testing.assert_allclose(np.array(obj.pem.computed_inertia).reshape(3, 3),
                                   np.eye(3) * Mass * (a * a + a * a) / 12, rtol=1e-6, atol=1e-3)


def test_mass_properties_equal_core_on_same_triangles(pem):
    bpy.ops.mesh.primitive_monkey_add(location=(0.3, 0, 0))  # Suzanne is not closed...
    bpy.ops.mesh.primitive_torus_add(location=(0, 0, 0), major_radius=1.0, minor_radius=0.25)
    obj = bpy.context.object
    obj.scale = (0.5, 0.5, 0.5)
    obj.pem.density = 7.0
    bpy.context.view_layer.update()
    assert bpy.ops.pem.compute_mass_properties() == {"FINISHED"}
    me = obj.data
    V = np.array([v.co[:] for v in me.vertices]) * 0.5
    F = [(p.vertices[0], p.vertices[k], p.vertices[k + 1]) for p in me.polygons for k in range(1, len(p.vertices) - 1)]
    mp = pem["pem_physics.model.inertia"].mesh_mass_properties(V, np.array(F), density=7.0)
    assert obj.pem.computed_mass == pytest.approx(mp.mass, rel=1e-6)
    np.testing.assert_allclose(np.array(obj.pem.computed_inertia).reshape(3, 3), mp.inertia, rtol=1e-5,
                               atol=1e-6 * np.abs(mp.inertia).max())


def fingerprint():
    out = []
    for o in sorted(bpy.data.objects, key=lambda o: o.name):
        ad = o.animation_data
        out.append((o.name, tuple(round(x, 12) for r in o.matrix_world for x in r), o.rotation_mode,
                    ad is not None and ad.action is not None, o.pem.baked, o.pem.computed_stamp))
    return out, len(bpy.data.actions)


def _expect_error(match):
    before = fingerprint()
    with pytest.raises(RuntimeError, match=match):
        bpy.ops.pem.simulate_bake()
    assert fingerprint() == before


def test_a_refusal_after_a_bake_changes_nothing(pem):
    """A bake refused after another (a density set to zero) leaves every world matrix as it was — not a float32
    rounding off the baked animation's pose (it was, by ~5e-8, until the next depsgraph update)."""
    obj, _ = pendulum_setup()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    obj.pem.density = 0.0
    _expect_error(r"Object 'Cube'.*(zero|positive) mass")
    assert bpy.ops.pem.simulate_bake.poll() and obj.pem.baked


def test_bad_states_are_clear_and_change_nothing(pem):
    obj, piv = pendulum_setup()
    obj.pem.pivot_object = None
    _expect_error(r"Object 'Cube' has no pivot")
    obj.pem.pivot_object = piv
    obj.pem.density = 0.0
    _expect_error(r"Object 'Cube'.*(zero|positive) mass")
    obj.pem.density = 1000.0
    bpy.data.objects.remove(piv)  # the pivot is deleted
    _expect_error(r"Object 'Cube' has no pivot")
    obj.pem.pivot_mode = "POINT"
    scene = bpy.context.scene
    scene.pem.step_mode = "DT"
    for bad in (0.0, -1.0):        # the field's minimum holds, as Blender's own fields do
        scene.pem.dt = bad
        assert scene.pem.dt == pytest.approx(1e-12, rel=1e-6)
    scene.pem.dt = float("nan")    # a script may still store NaN: refused at the bake
    _expect_error(r"Scene 'Scene': time step dt must be positive")
    scene.pem.step_mode = "SUBSTEPS"
    obj.pem.enabled = False
    _expect_error(r"Scene 'Scene' has no PEM bodies")


def test_open_mesh_is_named(pem):
    obj, piv = pendulum_setup()
    import bmesh

    bm = bmesh.new()
    bm.from_mesh(obj.data)
    bm.faces.ensure_lookup_table()
    bmesh.ops.delete(bm, geom=[bm.faces[0]], context="FACES_ONLY")
    bm.to_mesh(obj.data)
    bm.free()
    _expect_error(r"Object 'Cube'.*not closed")
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match=r"Object 'Cube'.*not closed"):
        bpy.ops.pem.compute_mass_properties()


def test_cancel_mid_bake_leaves_no_keys(pem):
    obj, piv = pendulum_setup()
    before = fingerprint()
    calls = {"n": 0}

    def stop():  # polled after each chunk: every 64 steps (numpy) or each ~0.1 s call (compiled, ≥ 2 calls)
        calls["n"] += 1
        return calls["n"] > 1

    with pytest.raises(pem["pem_addon.pendulum.bake"].AddonError, match="did not finish"):
        pem["pem_addon.pendulum.bake"].bake(bpy.context, stop=stop)
    assert fingerprint() == before and obj.animation_data is None


def test_clear_bake_restores_exactly(pem):
    obj, piv = pendulum_setup()
    obj.rotation_mode = "YXZ"
    obj.rotation_euler = (0.3, 0.2, 0.1)
    state = (tuple(obj.location), tuple(obj.rotation_euler), tuple(obj.scale), obj.rotation_mode)
    bpy.ops.pem.simulate_bake()
    bpy.ops.pem.simulate_bake()  # a re-bake must still restore the very first state
    bpy.context.scene.frame_set(12)
    assert obj.rotation_mode == "QUATERNION"
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert (tuple(obj.location), tuple(obj.rotation_euler), tuple(obj.scale), obj.rotation_mode) == state
    assert not obj.pem.baked


@pytest.mark.parametrize("name", ["pendulum", "dipole"])
def test_udf_import_bake_matches_core_run(pem, name):
    path = PEM_DATA / f"{name}.udf"
    # a frame rate the file's dt divides, so that keys fall on frames and are compared there
    assert bpy.ops.pem.import_udf(filepath=str(path), adapt_scene=True) == {"FINISHED"}
    scene = bpy.context.scene
    fps = scene.render.fps
    scene.frame_end = scene.frame_start + fps  # one second of the sample's run
    bodies = [o for o in scene.objects if o.pem.enabled and o.pem.role == "PENDULUM"]
    M0 = {o.name: M(o) for o in bodies}
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    core = pem["pem_physics.io.udf_scene"].load_scene(path)
    traj = pem["pem_physics.engine.simulate"].simulate(core, t_end=1.0, record_interval=1.0 / fps)
    assert core.settings.method == "pem-rk4" and scene.pem.last_method == "pem-rk4"
    wm = pem["pem_physics.io.bake"].world_matrices
    unit = 1.0  # imported in metres
    for k, body_name in enumerate(traj.names):
        obj = scene.objects[body_name]
        expect = wm(traj.orientation[:, k], traj.pivot[k], M0[body_name], unit)
        for i, f in enumerate(range(scene.frame_start, scene.frame_end + 1)):
            scene.frame_set(f)
            np.testing.assert_allclose(M(obj), expect[i], atol=1e-5 * max(1.0, np.abs(expect[i]).max()),
                                       err_msg=f"{body_name} frame {f}")


def test_export_import_round_trip(pem, tmp_path):
    obj, piv = pendulum_setup()
    d = obj.pem.dipoles.add()
    d.position, d.moment = (0.0, 0.0, -0.05), (0.0, 0.1, 0.0)
    bpy.context.scene.pem.field_mode = "UNIFORM"
    bpy.context.scene.pem.field = (0.0, 0.0, 0.01)
    out = tmp_path / "scene.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    sf, sim = pem["pem_physics.io.scenefile"], pem["pem_physics.engine.simulate"]
    core = sf.load_scene(out)
    a = sim.simulate(core, t_end=0.2)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.pem.import_scene(filepath=str(out)) == {"FINISHED"}
    bpy.ops.pem.export_scene(filepath=str(tmp_path / "again.toml"))
    b = sim.simulate(sf.load_scene(tmp_path / "again.toml"), t_end=0.2)
    np.testing.assert_allclose(b.quaternion, a.quaternion, atol=1e-6)


def test_plot_and_overlay(pem):
    obj, piv = pendulum_setup()
    d = obj.pem.dipoles.add()
    d.position, d.moment = (0.0, 0.0, -0.5), (0.0, 0.0, 2.0)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert bpy.ops.pem.plot_diagnostics() == {"FINISHED"}
    img = bpy.data.images["PEM Diagnostics"]
    px = np.empty(len(img.pixels), dtype=np.float32)
    img.pixels.foreach_get(px)
    assert (px.reshape(-1, 4)[:, :3] < 0.5).any()  # something was drawn
    bpy.context.scene.frame_set(1)
    geo = pem["pem_addon.pendulum.overlay"].geometry(bpy.context)
    start = (np.array(obj.matrix_world) @ np.array([0, 0, -0.5, 1.0]))[:3]
    arrow = geo["dipoles"][0]
    np.testing.assert_allclose(arrow[0], start, atol=1e-6)
    assert np.linalg.norm(arrow[1] - arrow[0]) == pytest.approx(2.0 * bpy.context.scene.pem.arrow_scale, rel=1e-5)
    assert len(geo["pivots"]) == 3
