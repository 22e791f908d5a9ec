"""Basin maps: release geometry, classification against the physics' mirror symmetry, files, interruption."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from pem_physics import examples
from pem_physics.analysis.basin import basin_map, release_orientations, write
from pem_physics.engine.simulate import simulate


def scene():
    return examples.three_magnet(friction=0.01, t_end=6.0, dt=2e-3)


def test_release_orientations_put_the_bob_where_asked(rng):
    sc = scene()
    body = sc.bodies[0]
    point = np.asarray(body.dipoles[0].position)
    xs, ys = rng.uniform(-0.1, 0.1, 20), rng.uniform(-0.1, 0.1, 20)
    U = release_orientations(sc, xs, ys)[:, 0]
    np.testing.assert_allclose(U @ np.swapaxes(U, -1, -2), np.broadcast_to(np.eye(3), U.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(U), 1.0, atol=1e-12)
    bob = np.asarray(body.position) + np.einsum("eji,j->ei", U, point)
    np.testing.assert_allclose(bob[:, 0], xs, atol=1e-12)
    np.testing.assert_allclose(bob[:, 1], ys, atol=1e-12)
    assert np.all(bob[:, 2] < body.position[2])  # hanging below the pivot


def test_map_is_mirror_symmetric_and_releases_over_a_magnet_stay_there():
    sc = scene()
    res = basin_map(sc, grid=5, extent=0.05)
    assert res.complete and res.label.shape == (5, 5)
    # The magnets sit at 90°, 210°, 330°: x → −x swaps magnets 1 and 2 and keeps 0.
    swap = np.array([-1, 0, 2, 1])  # index by label + 1
    np.testing.assert_array_equal(res.label[:, ::-1], swap[res.label + 1])
    # A bob released right over magnet 0 (0, 0.05) stays there: grid point (x=0, y=0.05).
    assert res.label[4, 2] == 0
    # Classification agrees with an independent single-scene run of one member.
    U = release_orientations(sc, np.array([res.x[1]]), np.array([res.y[3]]))
    single = replace(sc, bodies=[replace(sc.bodies[0], orientation=U[0, 0])] + list(sc.bodies[1:]))
    traj = simulate(single)  # a plain single-scene run, not an ensemble
    end = np.asarray(sc.bodies[0].position) + traj.orientation[-1, 0].T @ np.asarray(sc.bodies[0].dipoles[0].position)
    np.testing.assert_allclose(res.final_xy[3, 1], end[:2], atol=1e-9)


def test_interrupted_map_is_marked_and_written(tmp_path):
    res = basin_map(scene(), grid=3, extent=0.05, t_end=1.0, stop=lambda: True)
    assert not res.complete and np.all(res.label == -1)
    summary = write(res, tmp_path)
    assert summary["complete"] is False
    assert json.loads((tmp_path / "basin.json").read_text())["members"] == 9
    data = np.load(tmp_path / "basin.npz")
    assert data["label"].shape == (3, 3)
    assert (tmp_path / "basin.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_needs_one_pendulum_and_fixed_magnets():
    from pem_physics.errors import ValidationError

    with pytest.raises(ValidationError, match="exactly one pendulum"):
        basin_map(examples.t_handle(), grid=2)


def test_a_grid_beyond_the_bobs_reach_is_refused_not_clipped():
    """Release points the bob cannot reach (its arm hangs below the pivot) would be clipped to one radius and
    mapped as equal cells: refused, naming the arm and the largest extent."""
    from pem_physics import examples
    from pem_physics.errors import ValidationError

    sc = examples.three_magnet(friction=0.01)
    with pytest.raises(ValidationError, match=r"--extent: the grid's corners lie 14\.14 m .* arm is 0\.\d+ m long"):
        basin_map(sc, grid=4, extent=10.0)


@pytest.mark.parametrize("extent", [1e-300, 1e-14])
def test_a_grid_finer_than_doubles_resolve_is_refused(extent):
    """--extent 1e-300 mapped one release point grid² times (the spacing underflowed) and exited 0: refused, naming
    --extent and the least half-width; 1e-9 m (still resolved at the 0.285 m arm) is accepted."""
    from pem_physics import examples
    from pem_physics.errors import ValidationError

    sc = examples.three_magnet(friction=0.01)
    with pytest.raises(ValidationError, match=r"--extent: .* below 1e-12 of the bob's arm .* raise --extent to at "
                                              r"least 4\.\d+e-13 m"):
        basin_map(sc, grid=4, extent=extent)
    with pytest.raises(ValidationError, match="--t-end"):   # past the extent's checks
        basin_map(sc, grid=4, extent=1e-9, t_end=0.0)


def test_a_map_of_no_time_is_refused():
    """t_end = 0 mapped every release point as itself and called some "at rest": refused, naming --t-end."""
    from pem_physics.errors import ValidationError

    sc = examples.three_magnet(friction=0.01)
    for scene, t_end in ((sc, 0.0), (replace(sc, settings=replace(sc.settings, t_end=0.0)), None)):
        with pytest.raises(ValidationError, match=r"--t-end: the bob must swing .* give --t-end > 0 s"):
            basin_map(scene, grid=3, t_end=t_end)


def test_a_map_of_points_still_moving_says_so(tmp_path, capsys):
    """A finished map whose release points mostly never came to rest (t_end too short for the friction) is not
    quietly a picture of -1 cells: the summary and stderr say so and what to change; an interrupted map, or one
    that mostly settled, says nothing of it."""
    from pem_physics.cli import main

    res = basin_map(scene(), grid=3, extent=0.05, t_end=0.01)
    assert res.complete and np.all(res.label == -1)   # 10 ms: nothing settles
    assert "none of the release points came to rest" in write(res, tmp_path / "short")["warnings"][0]
    assert write(basin_map(scene(), grid=3, extent=0.05, t_end=1.0, stop=lambda: True), tmp_path / "cut")[
        "warnings"] == []
    assert main(["basin", "example:three-magnet", "--grid", "3", "--t-end", "0.01", "--dt", "2e-3", "-q",
                 "-o", str(tmp_path / "cli")]) == 0
    assert "warning: none of the release points came to rest over a magnet by t_end = 0.01 s" in \
        capsys.readouterr().err


@pytest.mark.parametrize("command", ["basin", "sweep"])
def test_a_t_end_between_steps_is_recorded_as_the_time_reached_and_said(tmp_path, capsys, command):
    """t_end = 3.4 steps: the runs take 3 (t_end is rounded to whole steps, as for `run`), so the map and the sweep
    end at 3 dt; they recorded 3.4 dt in basin.json / sweep.json without a word."""
    from pem_physics.cli import main

    dt = examples.three_magnet().settings.dt
    t_end = 3.4 * dt
    extra = ["--grid", "2"] if command == "basin" else ["--param", "friction=0,1e-4"]
    out = tmp_path / "out"
    assert main([command, "example:three-magnet", *extra, "--t-end", repr(t_end), "-o", str(out), "-q"]) == 0
    err = capsys.readouterr().err
    assert f"note: t_end = {t_end!r} s is not a whole number of steps of dt = {dt!r} s" in err, err
    assert f"end at {3 * dt!r} s (3 steps; t_end is rounded to whole steps)" in err, err
    summary = json.loads((out / f"{command}.json").read_text(encoding="utf-8"))
    assert summary["t_end"] == 3 * dt


def test_a_dt_that_does_not_divide_the_scenes_record_interval_maps(tmp_path):
    """The map records only each release's start and end, so the scene's record interval (10 ms for the example)
    is no constraint on --dt: 3 ms was refused ("does not divide the scene's record interval", with no option to
    change it for an example scene), as `sweep` takes it."""
    from pem_physics.cli import main

    assert examples.three_magnet().settings.record_interval == pytest.approx(0.01)
    out = tmp_path / "out"
    assert main(["basin", "example:three-magnet", "--grid", "2", "--t-end", "0.03", "--dt", "0.003", "-q",
                 "-o", str(out)]) == 0
    summary = json.loads((out / "basin.json").read_text(encoding="utf-8"))
    assert summary["complete"] and summary["t_end"] == pytest.approx(0.03)   # 10 steps of 3 ms
