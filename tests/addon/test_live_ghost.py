"""The ghost path (issue 47, item 2): where each moving body goes in the next seconds, from a direct call and
through the depsgraph handler an edit fires; its geometry checked against closed forms, never against itself."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import pem  # noqa: E402, F401


@pytest.fixture
def ghost(pem, ext):  # noqa: F811
    module = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.ghost")
    module.clear()
    yield module
    module.clear()


@pytest.fixture
def overlay(pem, ext):  # noqa: F811
    return importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.overlay")


def thrown_cube(v0=(1.5, 0.0, 2.0), at=(0.1, 0.2, 0.3)):
    """A free cube with Translate on, thrown at v0 (m/s) from ``at``; 25 fps, dt 1 ms, frames 1–101, a ghost of
    0.4 s."""
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 25, 1, 101
    scene.pem.step_mode, scene.pem.dt, scene.pem.ghost_seconds = "DT", 1e-3, 0.4
    bpy.ops.mesh.primitive_cube_add(size=0.1, location=at)
    cube = bpy.context.object
    cube.name = "Thrown"
    p = cube.pem
    p.enabled, p.role, p.translate, p.density = True, "FREE", True, 1000.0
    p.velocity = v0
    p.angular_velocity = (0.0, 3.0, 1.0)
    return cube


def hanging_bob():
    """A cube swinging on an empty 0.3 m above it, pushed sideways; a ghost of 0.4 s."""
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 25, 1, 101
    scene.pem.ghost_seconds = 0.4
    pivot = bpy.data.objects.new("Pivot", None)
    scene.collection.objects.link(pivot)
    pivot.location = (0.0, 0.0, 0.3)
    bpy.ops.mesh.primitive_cube_add(size=0.1, location=(0.05, 0.0, 0.0))
    bob = bpy.context.object
    bob.name = "Bob"
    p = bob.pem
    p.enabled, p.pivot_object, p.density = True, pivot, 1000.0
    p.angular_velocity = (0.0, 2.0, 1.0)
    return bob, pivot


def test_a_thrown_bodys_ghost_path_is_the_parabola_for_its_seconds(ghost):
    cube = thrown_cube()
    bpy.context.scene.pem.ghost_seconds = 1.5
    x0 = np.array(cube.location, dtype=float)          # the float32 values Blender stores
    v0 = np.array(cube.pem.velocity, dtype=float)
    g = -np.array(bpy.context.scene.gravity, dtype=float)[2]
    path = ghost.compute(bpy.context)["Thrown"]
    t = (path[:, 0] - x0[0]) / v0[0]                     # time from the horizontal flight
    assert t[0] == pytest.approx(0.0, abs=1e-7) and t[-1] == pytest.approx(38 / 25, abs=1e-6)  # whole frames
    assert np.all(np.diff(t) > 0)
    np.testing.assert_allclose(path[:, 1], x0[1], atol=1e-9)
    np.testing.assert_allclose(path[:, 2], x0[2] + v0[2] * t - 0.5 * g * t**2, atol=1e-6)
    assert len(path) == 38 * ghost.POINTS_PER_FRAME + 1   # points a frame: fewer than a bake's keys (8 here)
    assert ghost.error() == ""


def test_a_pendulums_ghost_path_keeps_its_distance_to_the_pivot(ghost):
    bob, pivot = hanging_bob()
    path = ghost.compute(bpy.context)["Bob"]
    r = np.linalg.norm(path - np.array(pivot.location, dtype=float), axis=1)
    r0 = np.linalg.norm(np.array(bob.location, dtype=float) - np.array(pivot.location, dtype=float))
    np.testing.assert_allclose(r, r0, rtol=1e-12)
    assert np.ptp(path, axis=0).max() > 0.01           # it swings


def test_a_pendulum_whose_origin_is_its_pivot_draws_its_centre_of_masss_path(ghost, ext):
    """An imported pendulum's object has its origin at the pivot: the path is its centre of mass's (which the
    panel shows), at the centre of mass's distance from the pivot, not a point at the pivot."""
    examples = importlib.import_module(f"{ext.__name__}.pem_physics.examples")
    importing = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.importing")
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 25, 1, 51
    core = examples.three_magnet(friction=2e-3, t_end=2.0, dt=1e-3)
    objs = importing.build_objects(core, bpy.context)
    scene.pem.step_mode, scene.pem.dt, scene.pem.ghost_seconds = "DT", 1e-3, 1.0
    bob = next(o for o in objs if o.pem.role == "PENDULUM")
    pivot = np.array(bob.matrix_world.translation, dtype=float)
    path = ghost.compute(bpy.context)[bob.name]
    mp = core.checked().bodies[0].resolved_mass_properties()
    arm = float(np.linalg.norm(mp.center_of_mass))     # m; the scene's unit is the metre
    np.testing.assert_allclose(np.linalg.norm(path - pivot, axis=1), arm, rtol=1e-6)   # Blender's float32 pivot
    assert np.ptp(path, axis=0).max() > 0.2 * arm       # it swings


def test_the_ghost_path_changes_nothing_in_the_scene(ghost):
    bob, pivot = hanging_bob()
    bpy.context.scene.frame_set(17)
    before = [tuple(map(tuple, o.matrix_world)) for o in (bob, pivot)]
    ghost.compute(bpy.context)
    assert bpy.context.scene.frame_current == 17
    assert [tuple(map(tuple, o.matrix_world)) for o in (bob, pivot)] == before
    assert bob.animation_data is None and not bob.pem.baked


def test_an_edit_hides_the_old_path_until_the_new_one_is_computed(ghost, overlay):
    cube = thrown_cube()
    scene = bpy.context.scene
    scene.pem.show_ghost_path = True
    ghost.compute(bpy.context)
    assert len(overlay.geometry(bpy.context)["ghost"]) > 0
    cube.location.x += 0.5                              # the user moves it
    bpy.context.view_layer.update()                     # the depsgraph reports the edit
    assert ghost.paths() == {} and len(overlay.geometry(bpy.context)["ghost"]) == 0
    assert bpy.app.timers.is_registered(ghost._recompute)
    bpy.app.timers.unregister(ghost._recompute)         # timers do not run headless: run it by hand
    ghost._recompute()
    path = ghost.paths()["Thrown"]
    np.testing.assert_allclose(path[0], np.array(cube.location), atol=1e-7)
    segs = overlay.geometry(bpy.context)["ghost"]
    np.testing.assert_array_equal(segs[:, 0], path[:-1])
    scene.pem.show_ghost_path = False
    assert len(overlay.geometry(bpy.context)["ghost"]) == 0


def test_edits_while_stale_coalesce_into_one_path_of_the_last(ghost, monkeypatch):
    """Two edits before the timer runs: one computation, of the scene after the second, and the fingerprint the
    second edit's update took is the path's (not taken again: reused, and the same as a fresh one)."""
    cube = thrown_cube()
    bpy.context.scene.pem.show_ghost_path = True
    ghost.compute(bpy.context)
    for dx in (0.5, 0.25):                              # dragged on: a second update while the path is stale
        cube.location.x += dx
        bpy.context.view_layer.update()
    bpy.app.timers.unregister(ghost._recompute)
    cache = importlib.import_module(ghost.__name__.rpartition(".")[0] + ".cache")
    taken = []
    monkeypatch.setattr(cache, "inputs", lambda context, real=cache.inputs: taken.append(1) or real(context))
    ghost._recompute()
    assert taken == []                                  # the update's fingerprint served
    np.testing.assert_allclose(ghost.paths()["Thrown"][0], np.array(cube.location), atol=1e-7)
    assert ghost._state["inputs"] == ghost._inputs(bpy.context)
    bpy.context.view_layer.update()                     # no edit since: the path stays
    assert "Thrown" in ghost.paths() and not bpy.app.timers.is_registered(ghost._recompute)


def test_edits_elsewhere_leave_the_path_alone(ghost):
    thrown_cube()
    bpy.context.scene.pem.show_ghost_path = True
    ghost.compute(bpy.context)
    bpy.ops.object.light_add(location=(3.0, 0.0, 2.0))  # not part of the simulation
    bpy.context.object.location.x += 1.0
    bpy.context.view_layer.update()
    assert "Thrown" in ghost.paths()


def test_a_scene_the_bake_refuses_gives_no_path_and_says_why(ghost):
    cube = thrown_cube()
    cube.pem.density = 0.0
    assert ghost.compute(bpy.context) == {}
    assert "Thrown" in ghost.error() and "ensity" in ghost.error()


def test_a_run_that_fails_leaves_no_old_path(ghost, monkeypatch):
    thrown_cube()
    bpy.context.scene.pem.show_ghost_path = True
    assert ghost.compute(bpy.context)
    bake = importlib.import_module(ghost.__name__.rpartition(".")[0] + ".bake")

    def broken(plan, progress=None, stop=None):
        raise RuntimeError("the engine broke")

    monkeypatch.setattr(bake, "run", broken)
    assert ghost.compute(bpy.context) == {} and ghost.paths() == {}
    assert "the engine broke" in ghost.error()


def test_the_path_shows_in_its_own_scene_only(ghost):
    thrown_cube()
    bpy.context.scene.pem.show_ghost_path = True
    ghost.compute(bpy.context)
    assert len(ghost.segments(bpy.context.scene)) > 0
    other = bpy.data.scenes.new("Other")
    other.pem.show_ghost_path = True
    assert len(ghost.segments(other)) == 0


def curves_of(ghost):
    coll = bpy.data.collections.get(ghost.CURVES)
    return {} if coll is None else {o["pem_ghost_of"]: o for o in coll.objects if "pem_ghost_of" in o}


def test_the_ghost_path_made_into_a_curve_is_the_parabola(ghost):
    """The curve a render shows: its points on x0 + v0 t − g t²/2 (the stored single-precision values), in world
    space, bevelled, in the scene."""
    cube = thrown_cube()
    x0 = np.array(cube.location, dtype=float)
    v0 = np.array(cube.pem.velocity, dtype=float)
    g = -np.array(bpy.context.scene.gravity, dtype=float)[2]
    assert bpy.ops.pem.ghost_path_to_curve() == {"FINISHED"}
    curve = curves_of(ghost)["Thrown"]
    assert curve.type == "CURVE" and curve.name in bpy.context.scene.objects
    pts = np.array([p.co for p in curve.data.splines[0].points], dtype=float)[:, :3]
    assert np.allclose(np.array(curve.matrix_world), np.eye(4))   # the points are world positions
    world = pts
    t = (world[:, 0] - x0[0]) / v0[0]
    assert len(world) >= 0.4 * 25 and t[0] == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(world[:, 2], x0[2] + v0[2] * t - 0.5 * g * t**2, atol=1e-5)   # float32 points
    assert curve.data.bevel_depth > 0 and curve.active_material.name == ghost.CURVES
    assert not curve.pem.enabled   # a picture, not a body


def test_a_new_curve_replaces_the_last_and_follows_the_edit(ghost):
    cube = thrown_cube()
    bpy.ops.pem.ghost_path_to_curve()
    cube.pem.velocity = (0.0, 1.0, 2.0)   # the path is now of other inputs: computed again
    bpy.ops.pem.ghost_path_to_curve()
    curves = curves_of(ghost)
    assert list(curves) == ["Thrown"] and len(bpy.data.collections[ghost.CURVES].objects) == 1
    assert not [c for c in bpy.data.curves if c.name.startswith("Thrown Ghost Path.")]   # no stray copies
    pts = np.array([p.co for p in curves["Thrown"].data.splines[0].points], dtype=float)[:, :3]
    assert np.ptp(pts[:, 0]) < 1e-6 and np.ptp(pts[:, 1]) > 0.3   # along y now


def test_no_path_makes_no_curve_and_says_why(ghost):
    cube = thrown_cube()
    cube.pem.density = 0.0
    with pytest.raises(RuntimeError, match="ensity"):
        bpy.ops.pem.ghost_path_to_curve()
    assert ghost.CURVES not in bpy.data.collections
