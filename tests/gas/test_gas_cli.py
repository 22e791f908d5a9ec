"""The ``gas`` command (pem_physics/analysis/gas_command.py), its scene file, outputs, plots, Ctrl-C and
the messages for invalid input."""

from __future__ import annotations

import csv
import json
import tomllib

import numpy as np
import pytest

from pem_physics import cli
from pem_physics.analysis import gas_command
from pem_physics.gas import edmd, measure

from conftest import ROOT

needs_numba = pytest.mark.skipif(not edmd.available(), reason="numba is not installed")


def gas(tmp_path, *args):
    return cli.main(["gas", *args, "-o", str(tmp_path), "-q"])


@needs_numba
def test_gas_command_writes_consistent_outputs(tmp_path):
    assert gas(tmp_path, "--n", "300", "--packing-fraction", "0.2", "--t-end", "4", "--record-interval", "0.5",
               "--seed", "3") == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    with np.load(tmp_path / "gas.npz") as g:
        assert g["positions"].shape == (9, 300, 3) and g["velocities"].shape == (9, 300, 3)
        assert np.allclose(g["times"], np.arange(9) * 0.5)
        assert g["radii"].shape == (300,) and g["masses"].shape == (300,) and g["box"].shape == (3,)
        assert int(g["collisions"][-1]) == summary["collisions"]
        assert np.all((g["positions"] >= 0) & (g["positions"] < g["box"]))
        final_T = float(np.sum(g["final_velocities"] ** 2)) / (3 * 300)
    rows = list(csv.DictReader((tmp_path / "gas.csv").open()))
    assert len(rows) == 9 and rows[0]["pressure"] == "" and float(rows[-1]["t"]) == 4.0
    assert summary["n"] == 300 and summary["packing_fraction"] == pytest.approx(0.2)
    assert summary["temperature"] == pytest.approx(final_T, rel=1e-12) == pytest.approx(1.0, rel=1e-12)
    assert summary["eos_reduced_pressure"] == pytest.approx(float(measure.reduced_pressure_eos(0.2, 3)))
    assert abs(summary["reduced_pressure"] / summary["eos_reduced_pressure"] - 1) < 0.05
    for key in ("collisions_per_s", "reduced_pressure_err", "deviation_in_errors", "mean_free_path", "ks_pvalue"):
        assert summary[key] is not None
    # the last row's running pressure covers the whole run; the summary's drops the first block
    assert float(rows[-1]["reduced_pressure"]) == pytest.approx(summary["reduced_pressure"], rel=0.03)


@needs_numba
def test_timestep_method_reports_missed_collisions(tmp_path):
    """At dt = 0.2 the fixed step misses collisions (its own count, ``passes``); matched against an event-driven run
    from the same start, the matched and missed collisions add up to that run's count (run here apart), the matched
    and spurious ones to the timestep run's."""
    assert gas(tmp_path, "--n", "100", "--dimension", "2", "--packing-fraction", "0.3", "--t-end", "2",
               "--method", "timestep", "--dt", "0.2") == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    ev = edmd.run(gas_command.initial_state(gas_command.check_config(
        {"n": 100, "dimension": 2, "packing_fraction": 0.3})), 2.0).n_collisions
    assert summary["method"] == "timestep" and summary["passes"] > 0
    assert summary["matched_collisions"] + summary["missed_collisions"] == ev
    assert summary["matched_collisions"] + summary["spurious_collisions"] == summary["collisions"]
    assert 0 < summary["first_mismatch_time"] < 2
    assert any(f"missed {summary['passes']} collision(s)" in n and "lower dt" in n for n in summary["notes"])
    assert any(f"{summary['missed_collisions']} of its {ev} collision(s) missing here" in n
               and f"{summary['spurious_collisions']} of this run's" in n and "agree up to t = " in n
               for n in summary["notes"]), summary["notes"]


@needs_numba
def test_gravity_walls_restitution_and_continuing_from_a_saved_state(tmp_path):
    first = tmp_path / "a"
    assert gas(first, "--n", "80", "--dimension", "2", "--box", "walls", "--gravity", "1", "--packing-fraction",
               "0.2", "--t-end", "2", "--restitution", "0.9") == 0
    s1 = json.loads((first / "summary.json").read_text())
    assert s1["gravity"] == [0.0, -1.0] and s1["tc"] > 0 and s1["notes"]
    second = tmp_path / "b"
    assert gas(second, "--state", str(first / "gas.npz"), "--t-end", "1", "--box", "walls", "--gravity", "1") == 0
    s2 = json.loads((second / "summary.json").read_text())
    assert s2["t_start"] == pytest.approx(s1["t_end"]) and s2["t_end"] == pytest.approx(s1["t_end"] + 1)
    with np.load(first / "gas.npz") as a, np.load(second / "gas.npz") as b:
        assert np.array_equal(a["final_positions"], b["positions"][0])


@needs_numba
def test_scene_file_and_example_agree_and_plot_draws_the_gas_figures(tmp_path):
    doc = tomllib.loads((ROOT / "examples" / "scenes" / "hard_sphere_gas.toml").read_text())
    assert doc["gas"] == gas_command.EXAMPLE
    scene = tmp_path / "small.toml"
    scene.write_text('[gas]\nn = 200\ndimension = 2\npacking_fraction = 0.4\nt_end = 3.0\nrecord_interval = 0.5\n')
    out = tmp_path / "run"
    assert gas(out, str(scene)) == 0
    assert cli.main(["plot", str(out)]) == 0
    for name in ("gas_pressure", "gas_speeds", "gas_snapshot"):
        assert (out / f"{name}.png").stat().st_size > 1000
    parsed = cli.build_parser().parse_args(["gas", "example:hard-sphere-gas", "-o", "x"])
    assert parsed.scene == "example:hard-sphere-gas"
    assert gas_command.check_config(gas_command.load_gas_scene("example:hard-sphere-gas"))["n"] == 4000


def _interrupting(calls: list, at: int):
    """A progress callback (``self, t``) that records each call in ``calls`` and raises Ctrl-C at the ``at``-th."""
    def interrupt(self, t):
        calls.append(t)
        if len(calls) == at:
            raise KeyboardInterrupt
    return interrupt


@needs_numba
def test_ctrl_c_keeps_a_valid_partial_result(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(gas_command._Bar, "__call__", _interrupting(calls, 4))
    assert gas(tmp_path, "--n", "400", "--t-end", "1000", "--record-interval", "0.01") == 130
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["complete"] is False and 0 < summary["t_end"] < 1000
    with np.load(tmp_path / "gas.npz") as g:
        assert g["positions"].shape[0] == len(g["times"]) >= 1 and float(g["final_time"]) == summary["t_end"]


@needs_numba
def test_ctrl_c_during_the_timestep_comparison_ends_the_command(tmp_path, capsys, monkeypatch):
    """--method timestep compares its count with an event-driven run; Ctrl-C during that run was absorbed (the
    engine keeps a partial run, the count was dropped, exit 0). It stops at once and ends as an interrupted run
    does: exit 130, one line, the timestep run's results written without the count."""
    calls = []
    monkeypatch.setattr(gas_command._StallGuard, "__call__", _interrupting(calls, 1))
    assert gas(tmp_path, "--n", "100", "--dimension", "2", "--packing-fraction", "0.3", "--t-end", "2",
               "--method", "timestep", "--dt", "0.2") == 130
    assert len(calls) == 1                                   # stopped at its first poll, not carried on
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("interrupted at t = ") and f"written to {tmp_path}" in err[0], err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["complete"] is True and summary["missed_collisions"] is None
    assert any("was interrupted at t = " in n for n in summary["notes"]), summary["notes"]


@needs_numba
def test_ctrl_c_during_a_timestep_run_does_not_go_on_to_the_comparison(tmp_path, capsys, monkeypatch):
    """Ctrl-C during the timestep run itself: its partial result is written (exit 130) and no event-driven run is
    started to compare it with."""
    started = []
    monkeypatch.setattr(edmd, "run", lambda *a, **kw: started.append(1))
    calls = []
    monkeypatch.setattr(gas_command._Bar, "__call__", _interrupting(calls, 2))
    assert gas(tmp_path, "--n", "100", "--dimension", "2", "--packing-fraction", "0.3", "--t-end", "200",
               "--method", "timestep", "--dt", "0.2", "--record-interval", "0.2") == 130
    assert not started
    assert "interrupted at t = " in capsys.readouterr().err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["complete"] is False and summary["missed_collisions"] is None


@pytest.mark.parametrize("args,message", [
    (["--packing-fraction", "0.9"], "gas.packing_fraction: expected 0 < η < 0.74, got 0.9"),
    (["--dimension", "2", "--packing-fraction", "0.95"], "gas.packing_fraction: expected 0 < η < 0.91, got 0.95"),
    (["--n", "0"], "gas.n: expected an integer >= 1, got 0"),
    (["--temperature", "-1"], "gas.temperature: expected 0 < T ≤ 1e+100"),
    (["--restitution", "1.5"], "gas.restitution: expected 0 ≤ e ≤ 1, got 1.5"),
    (["--gravity", "1"], "gas.gravity: needs hard walls in its direction"),
    (["--gravity", "1,2,3,4", "--box", "walls"], "gas.gravity: expected 3 components"),
    (["--gravity", "x", "--box", "walls"], "gas.gravity: expected a number or comma-separated numbers"),
    (["--t-end", "0"], "gas.t_end: expected a duration > 0, got 0"),
    (["--record-interval", "5", "--t-end", "1"], "gas.record_interval: expected 0 < interval ≤ t_end"),
    (["--dt", "-0.1", "--method", "timestep"], "gas.dt: expected a step > 0, got -0.1"),
    (["--state", "/nonexistent/gas.npz"], "gas.state: no such file"),
    (["--method", "timestep", "--gravity", "1", "--box", "walls"], "gas.gravity: the timestep method has no gravity"),
    (["--n", "1"], "gas.n: 1 sphere at packing fraction 0.25 fills a periodic box too small for the minimum image"),
    (["--blocks", "100000000000"], "gas.blocks: 100,000,000,000 time blocks would need"),
    (["--method", "timestep", "--dt", "10", "--t-end", "1"], "gas.dt: 10 is longer than the run (t_end = 1)"),
])
def test_invalid_input_is_refused_by_name(tmp_path, capsys, args, message):
    assert gas(tmp_path, *args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "summary.json").exists()


def test_invalid_scene_files_are_refused_by_name(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[gas]\nn = 10\ncolour = 'red'\n")
    assert gas(tmp_path / "o", str(bad)) == 2
    assert "gas.colour: unknown key; the keys are" in capsys.readouterr().err   # nothing close: no guess
    bad.write_text("[gas]\nn = 10\npakcing_fraction = 0.1\n")
    assert gas(tmp_path / "o", str(bad)) == 2
    assert "gas.pakcing_fraction: unknown key; did you mean 'packing_fraction'?" in capsys.readouterr().err
    bad.write_text("[gas]\nn = 'many'\n")
    assert gas(tmp_path / "o", str(bad)) == 2
    assert "gas.n: expected an integer, got 'many'" in capsys.readouterr().err
    bad.write_text("[box]\nn = 3\n")
    assert gas(tmp_path / "o", str(bad)) == 2
    assert "a gas scene has one table [gas]" in capsys.readouterr().err
    assert gas(tmp_path / "o", "example:nope") == 2
    assert "unknown gas example 'nope'" in capsys.readouterr().err


def test_perfectly_inelastic_spheres_are_refused_by_the_event_method_not_left_to_stall(tmp_path, capsys):
    """e = 0 made 45 million collisions by t = 0.013 (touching spheres stick; the TC model cannot part them): the
    event method refuses it by name and says what to use; the timestep method, which has no such stall, takes it."""
    from pem_physics.analysis import gas_command
    from pem_physics.cli import main
    from pem_physics.errors import ValidationError
    from pem_physics.gas import edmd
    from pem_physics.gas.state import STICKY

    assert main(["gas", "-o", str(tmp_path / "e0"), "--n", "50", "--box", "walls", "--restitution", "0",
                 "--t-end", "1", "-q"]) == 2
    err = capsys.readouterr().err
    assert "gas.restitution: perfectly inelastic hard spheres stick on contact" in err and "e.g. 0.001" in err
    with pytest.raises(ValueError, match="perfectly inelastic"):
        edmd.run(gas_command.initial_state(gas_command.check_config(dict(gas_command.EXAMPLE, n=50))), 1.0,
                 restitution=0.0)
    c = gas_command.check_config(dict(gas_command.EXAMPLE, n=50, box="walls", restitution=0.0, method="timestep",
                                      dt=0.01, t_end=0.5))
    assert c["restitution"] == 0.0 and STICKY.startswith("restitution = 0")
    with pytest.raises(ValidationError):
        gas_command.check_config(dict(gas_command.EXAMPLE, n=50, box="walls", restitution=0.0))
    # a small e > 0 runs through (clusters cool, no stall)
    assert main(["gas", "-o", str(tmp_path / "e001"), "--n", "200", "--box", "walls", "--restitution", "0.001",
                 "--t-end", "2", "-q"]) == 0


def test_ctrl_c_before_the_run_starts_is_a_message(tmp_path, capsys, monkeypatch):
    """Ctrl-C while the engine compiles (before the engines' own handling): exit 130, a message, nothing written."""
    def compiling(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(gas_command, "run_gas", compiling)
    assert gas(tmp_path, "--n", "20", "--t-end", "1") == 130
    assert "interrupted before the run started" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_timestep_method_takes_sticky_spheres_without_an_event_comparison(tmp_path):
    """e = 0 is the timestep method's to take; its missed-collision count compares with an event-driven run, which
    cannot take e = 0: the run succeeds and says none (it raised, advising the method already in use)."""
    assert gas(tmp_path, "--n", "50", "--restitution", "0", "--box", "walls", "--method", "timestep",
               "--t-end", "0.2") == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["method"] == "timestep" and summary["missed_collisions"] is None


@needs_numba
def test_a_timestep_run_that_counted_more_collisions_is_not_said_to_have_missed_some():
    """The timestep method's count minus the event-driven run's is as often positive as negative (the two runs part
    ways after a few collisions: n = 2000 at the default dt counted 130 more); that difference was reported as the
    collisions missed. The summary says the missed and the spurious collisions apart, and the run's own misses."""
    from pem_physics.gas.timestep import CollisionComparison

    c = gas_command.check_config({"n": 20, "box": "walls", "method": "timestep", "t_end": 0.1})
    run, extra = gas_command.run_gas(c)
    comp = CollisionComparison(missed=3, spurious=10, matched=5, event_collisions=8, timestep_collisions=15,
                               first_mismatch=0.04, t_start=0.0, t_end=0.1, window=0.01)
    run.info["passes"] = 2
    summary = gas_command.summarize(run, c, {**extra, "comparison": comp})
    notes = summary["notes"]
    assert not any("missed -" in n for n in notes), notes
    assert (summary["missed_collisions"], summary["spurious_collisions"], summary["matched_collisions"],
            summary["first_mismatch_time"], summary["passes"]) == (3, 10, 5, 0.04, 2)
    assert any("3 of its 8 collision(s) missing here, 10 of this run's 15 spurious" in n for n in notes), notes
    assert any("missed 2 collision(s)" in n for n in notes), notes


def test_a_state_edited_after_its_run_is_refused(tmp_path, capsys):
    """--state takes a gas run's gas.npz only as that run wrote it (its manifest's size and SHA-256); a state file
    of one's own, outside an output set, is taken as it is."""
    first = tmp_path / "first"
    assert gas(first, "--n", "20", "--box", "walls", "--t-end", "0.05") == 0
    with open(first / "gas.npz", "ab") as fh:
        fh.write(b"\0")                                   # edited after its run
    assert gas(tmp_path / "next", "--state", str(first / "gas.npz"), "--t-end", "0.05") == 2
    assert "gas.state: " in (err := capsys.readouterr().err) and "changed since its run wrote it" in err


@pytest.mark.parametrize("field,value,message", [
    ("time", np.array("abc"), "time: expected a number, got 'abc'"),
    ("velocities", None, "velocities up to 1e+200: at most 1e+50"),
    ("positions", None, "positions: expected finite numbers"),
    ("radii", np.array([0.1, 0.1]), "radii: shape (2,), expected (8,)"),
    ("box", np.array([4.0, 4.0]), "box: shape (2,), expected (3,)"),
    # sizes whose products leave the doubles: masses of 1e-307 made every collision's reduced mass 0 (millions of
    # collisions of spheres passing into each other, a stall), 1e300 positions of inf (a traceback), radii of
    # 1e-300 a packing fraction of 0 blamed on gas.packing_fraction, a box of 1e-200 a volume of 0 (a traceback)
    ("masses", np.full(8, 1e-307), "masses: 1e-307 is outside 1e-100 … 1e+100"),
    ("masses", np.full(8, 1e300), "masses: 1e+300 is outside 1e-100 … 1e+100"),
    ("radii", np.full(8, 1e-300), "radii: 1e-300 is outside 1e-100 … 1e+100"),
    ("radii", np.full(8, 1e-20), "radii: the smallest, 1e-20, makes the box (4 a side) 2e+20 of its diameters"),
    ("box", np.full(3, 1e-200), "box: 1e-200 is outside 1e-100 … 1e+100"),
    ("radii", np.array(["0.1"] * 8), "radii: expected real numbers, got text"),
    ("masses", np.full(8, 1e95), "masses and velocities: their temperature Σ m v² / (N d) = "),
])
def test_a_saved_state_with_a_bad_field_is_refused_by_name(tmp_path, capsys, field, value, message):
    """A state file of one's own with a field that is not a number, speeds whose squares overflow (the run would
    hang, then fail writing inf), sizes out of the doubles' reach, or arrays of the wrong shape: one line naming
    the file and the field."""
    rng = np.random.default_rng(1)
    n = 8
    arrays = {"positions": rng.uniform(0.2, 3.8, (n, 3)), "velocities": rng.normal(size=(n, 3)),
              "radii": np.full(n, 0.1), "masses": np.ones(n), "box": np.full(3, 4.0), "time": np.array(0.0)}
    if field == "velocities":
        arrays["velocities"][0, 0] = 1e200
    elif field == "positions":
        arrays["positions"][1, 2] = np.nan
    else:
        arrays[field] = value
    if field == "masses" and value[0] == 1e95:     # a mass in range, but a temperature of ~1e115
        arrays["velocities"] *= 1e10
    np.savez(tmp_path / "state.npz", **arrays)
    assert gas(tmp_path / "out", "--state", str(tmp_path / "state.npz"), "--t-end", "0.05") == 2
    err = capsys.readouterr().err
    assert "gas.state: " in err and "state.npz" in err and "Traceback" not in err
    if message:
        assert message in err
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize("name", ["/etc/passwd", "../elsewhere/gas.npz"])
def test_a_scene_files_state_outside_its_folder_is_refused_unopened(tmp_path, capsys, name):
    """A gas scene file's ``state`` names a file beside it, as a motion table does: an absolute path or a way out is
    refused by name before anything is opened (a shared scene cannot probe the machine's files)."""
    (tmp_path / "scenes").mkdir()
    scene = tmp_path / "scenes" / "gas.toml"
    scene.write_text(f'[gas]\nstate = "{name}"\n')
    assert cli.main(["gas", str(scene), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "gas.state: " in err and ("absolute path" in err if name.startswith("/") else "outside" in err)
    assert "root:" not in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["5", '""', "false"])
def test_a_state_that_is_no_file_name_is_refused_as_such(tmp_path, capsys, value):
    """A scene's ``state = 5`` said "no such file: 5" (looked up in the current folder, not beside the scene), and
    ``state = ""`` or ``--state ""`` "… is a folder without a gas.npz" (the scene's folder, or the current one)."""
    scene = tmp_path / "gas.toml"
    scene.write_text(f"[gas]\nstate = {value}\n")
    assert cli.main(["gas", str(scene), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: gas.state: expected the name of a saved state"), err
    assert gas(tmp_path / "out", "--state", "") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: gas.state: expected the name of a saved state"), err
    assert not (tmp_path / "out").exists()
