"""Live playback (issue 47, item 1): an unbaked scene simulated as the timeline moves, through the frame-change
handler. Oracles: a bake of the same scene (what a user compares it with), the closed-form parabola of a thrown
body, and the start pose the user set (which live playback must never change)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import M, pem  # noqa: E402, F401
from .test_live_ghost import hanging_bob, thrown_cube  # noqa: E402


@pytest.fixture
def live(pem, ext):  # noqa: F811
    module = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.live")
    module.clear()
    yield module
    module.clear()


def switch_on(live):
    """Simulate on Playback on, and the preparation a timer makes after that edit (timers do not run headless)."""
    bpy.context.scene.pem.live_playback = True
    assert live.prepare(bpy.context), live.error()


def played(obj, frames):
    """World matrices of ``obj`` at ``frames``, each reached by a frame change."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        out.append(M(obj))
    return np.array(out)


def test_frames_played_live_are_the_bake_of_the_same_scene(live):
    bob, pivot = hanging_bob()
    scene = bpy.context.scene
    own = (tuple(bob.location), tuple(bob.rotation_euler))
    switch_on(live)
    frames = range(scene.frame_start, scene.frame_end + 1)
    got = played(bob, frames)
    assert (tuple(bob.location), tuple(bob.rotation_euler)) == own     # the start pose untouched
    assert live.cached_frames(scene) == (1, 101)
    assert np.ptp(got[:, :3, 3], axis=0).max() > 0.01                  # it swings
    scene.pem.live_playback = False                                    # off: back in the start pose at once
    assert tuple(bob.delta_location) == (0.0, 0.0, 0.0) and not bob.get("pem_live_deltas")
    bpy.context.view_layer.update()
    np.testing.assert_array_equal(M(bob), got[0])
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, scene.pem.status
    baked = played(bob, frames)
    # both sides are rotations rebuilt in single precision from stored floats (the bake's quaternion keys; the
    # live side's start rotation times its delta, Eulers through float sin and cos): a few float32 ulps apart
    np.testing.assert_allclose(got, baked, rtol=0, atol=8 * np.finfo(np.float32).eps)


def test_a_thrown_body_played_live_follows_the_parabola(live):
    cube = thrown_cube()
    scene = bpy.context.scene
    scene.frame_end = 40
    x0 = np.array(cube.location, dtype=float)
    v0 = np.array(cube.pem.velocity, dtype=float)
    g = -np.array(scene.gravity, dtype=float)[2]
    switch_on(live)
    frames = np.arange(1, 40)
    X = played(cube, frames)[:, :3, 3]
    t = (frames - 1) / 25
    np.testing.assert_allclose(X, x0 + v0 * t[:, None] - 0.5 * g * np.outer(t * t, [0, 0, 1]), rtol=0, atol=2e-6)


def test_the_whole_range_is_simulated_on_a_thread_as_soon_as_the_scene_is_read(live):
    bob, _ = hanging_bob()
    scene = bpy.context.scene
    switch_on(live)                                                    # reading the scene starts the thread
    live.wait()
    assert live.cached_frames(scene) == (1, 101)                       # before any frame change
    seconds = live._state["seconds"]
    got = played(bob, range(1, 102))
    assert live._state["seconds"] == seconds                           # every frame read, none simulated again
    scene.frame_set(50)
    switch_on(live)                                                    # read at frame 50: not waited for there,
    live.wait()                                                        # shown when the thread's run is taken
    bpy.context.view_layer.update()
    np.testing.assert_array_equal(M(bob), got[49])
    live.BACKGROUND = False
    try:
        switch_on(live)
        np.testing.assert_array_equal(played(bob, range(1, 102)), got)  # the runs in the frame change: the same
    finally:
        live.BACKGROUND = True


def test_an_edit_while_the_thread_runs_discards_its_frames(live):
    cube = thrown_cube()
    scene = bpy.context.scene
    scene.frame_end = 20
    switch_on(live)
    old = live._job["gen"]
    cube.location.x += 0.5                                             # an edit before the thread ends
    bpy.context.view_layer.update()
    assert live._job["gen"] > old and live.cached_frames(scene) is None
    live.wait()                                                        # its frames are not taken
    assert live.cached_frames(scene) is None and live._state["poses"] == {}


def test_jumping_back_reads_the_cache_and_jumping_ahead_simulates_up_to_the_frame(live, monkeypatch):
    monkeypatch.setattr(live, "BACKGROUND", False)                     # the runs in the frame change
    bob, _ = hanging_bob()
    scene = bpy.context.scene
    scene.frame_end = 250
    switch_on(live)
    first = played(bob, range(1, 11))
    assert 10 <= live.cached_frames(scene)[1] < 250                     # a second at first, not the whole range
    far = played(bob, [200])
    assert live.cached_frames(scene)[1] >= 200
    seconds = live._state["seconds"]
    again = played(bob, range(1, 11))                                  # read back, not simulated again
    assert live._state["seconds"] == seconds
    np.testing.assert_array_equal(again, first)                        # the same frames whichever run made them
    scene.frame_set(400)                                               # past the end: the last frame holds
    assert live.cached_frames(scene) == (1, 250)
    np.testing.assert_array_equal(M(bob), played(bob, [250])[0])
    assert not np.allclose(far[0], first[0])


def test_an_edit_frees_the_live_cache_and_the_next_frames_start_from_the_new_pose(live):
    cube = thrown_cube()
    scene = bpy.context.scene
    scene.frame_end = 20
    switch_on(live)
    played(cube, range(1, 20))
    assert live.cached_frames(scene) is not None
    cube.location.x += 0.5                                             # the user moves it
    bpy.context.view_layer.update()                                    # the depsgraph reports the edit
    assert live.cached_frames(scene) is None                           # freed; the body in its start pose
    assert tuple(cube.delta_location) == (0.0, 0.0, 0.0)
    assert bpy.app.timers.is_registered(live._prepare_timer)
    bpy.app.timers.unregister(live._prepare_timer)                     # timers do not run headless
    live._prepare_timer()
    X = played(cube, [1, 11])[:, :3, 3]
    x0, v0 = np.array(cube.location, dtype=float), np.array(cube.pem.velocity, dtype=float)
    np.testing.assert_allclose(X[0], x0, atol=1e-7)
    np.testing.assert_allclose(X[1, :2], (x0 + v0 * 0.4)[:2], atol=1e-6)


def test_frame_changes_are_no_edits_and_the_cache_stays_up_to_date(live, ext):
    cube = thrown_cube()
    bpy.context.scene.frame_end = 30
    cache = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.cache")
    before = cache.inputs(bpy.context)
    switch_on(live)
    played(cube, range(1, 30))
    assert cube.get("pem_live_deltas") and tuple(cube.delta_location) != (0.0, 0.0, 0.0)
    assert cache.inputs(bpy.context) == before                         # live deltas are not the body's own
    bpy.context.view_layer.update()
    assert live.cached_frames(bpy.context.scene) is not None


@pytest.mark.parametrize("what", ["delta", "axis angle"])
def test_a_body_whose_deltas_cannot_hold_a_live_pose_is_refused_by_name(live, what):
    bob, _ = hanging_bob()
    if what == "delta":
        bob.delta_location = (0.0, 0.0, 0.01)
        match = "Object 'Bob' has delta transforms of its own"
    else:
        bob.rotation_mode = "AXIS_ANGLE"
        match = "Object 'Bob' uses the Axis Angle rotation mode"
    bpy.context.scene.pem.live_playback = True
    assert not live.prepare(bpy.context)
    assert match in live.error()
    before = M(bob)
    bpy.context.scene.frame_set(30)
    np.testing.assert_array_equal(M(bob), before)                      # nothing moved
    assert not bob.get("pem_live_deltas")


def test_a_baked_scene_plays_its_keys_and_live_poses_go(live):
    bob, _ = hanging_bob()
    scene = bpy.context.scene
    switch_on(live)
    played(bob, range(1, 30))
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, scene.pem.status
    scene.frame_set(20)
    assert not bob.get("pem_live_deltas") and tuple(bob.delta_location) == (0.0, 0.0, 0.0)
    assert live.cached_frames(scene) is None


def test_a_file_is_saved_with_every_body_in_its_start_pose(live, tmp_path):
    bob, _ = hanging_bob()
    switch_on(live)
    start = played(bob, [1])[0]
    moved = played(bob, [40])[0]
    path = tmp_path / "live.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    np.testing.assert_array_equal(M(bob), moved)                       # still playing after the save
    bpy.ops.wm.open_mainfile(filepath=str(path))
    bob = bpy.data.objects["Bob"]
    assert tuple(bob.delta_location) == (0.0, 0.0, 0.0) and not bob.get("pem_live_deltas")
    np.testing.assert_allclose(M(bob), start, rtol=0, atol=1e-7)


def test_the_timeline_shows_the_frames_simulated_live_paler_than_a_bake(live, ext):
    timeline = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.timeline")
    rect, color = timeline.bar(timeline.LIVE, 1, 48, lambda f: 10.0 * f)
    assert (rect[0], rect[2]) == (10.0, 480.0)
    assert color == timeline.LIVE_COLOR and color[3] < timeline.BAKED_COLOR[3]


def test_the_cache_panel_offers_live_playback_unbaked_and_says_what_it_simulated(live, ext):
    from .test_cache import _Layout

    ui = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.ui")

    def draw():
        layout = _Layout()
        ui.draw_cache(layout, bpy.context)
        return layout

    bob, _ = hanging_bob()
    scene = bpy.context.scene
    layout = draw()
    assert "live_playback" in [p[0] for p in layout.props] and not any("live" in t for t in layout.labels)
    switch_on(live)
    assert "Simulated from the next frame change" in draw().labels
    played(bob, [5])
    assert f"Simulated live: frames 1–{live.cached_frames(scene)[1]} (kept until an edit)" in draw().labels
    scene.pem.live_playback = False                    # off: the live pose cleared
    bob.delta_location = (0.0, 0.0, 0.01)             # the user's own delta: refused, said in the panel
    scene.pem.live_playback = True
    assert not live.prepare(bpy.context)
    assert any(t.startswith("Object 'Bob' has delta transforms of its own") for t in draw().labels)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, scene.pem.status
    assert "live_playback" not in [p[0] for p in draw().props]    # baked: its keys play
