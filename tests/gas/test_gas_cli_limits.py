"""The ``gas`` command's limits: a run too long to finish, options that a saved state would silently override, and
packing fractions that imply a box no run can hold; each refused by name with exit code 2 before the run starts.

The run itself is replaced (``run_gas``): a refusal must come before it; a command that passes every check ends
in the replacement's Ctrl-C (exit code 130), so nothing here runs an engine."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pem_physics import cli
from pem_physics.analysis import gas_command


@pytest.fixture(autouse=True)
def no_run(monkeypatch):
    """The run starting: Ctrl-C (exit code 130, nothing written) — a refused command returns 2 before it."""
    def started(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(gas_command, "run_gas", started)


def gas(out, *args):
    return cli.main(["gas", *args, "-o", str(out), "-q"])


def refused(capsys, out, *args) -> str:
    """The command's one line on stderr, after checking it was refused (exit code 2, no traceback, no output)."""
    capsys.readouterr()
    assert gas(out, *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists() or not any(out.iterdir())
    return err


def write_state(path, *, n=8, periodic=None, box=4.0):
    """A saved state of one's own: n spheres of radius 0.1 in a box of side ``box`` (``periodic`` stored if given)."""
    rng = np.random.default_rng(1)
    arrays = {"positions": rng.uniform(0.2, box - 0.2, (n, 3)), "velocities": rng.normal(size=(n, 3)),
              "radii": np.full(n, 0.1), "masses": np.ones(n), "box": np.full(3, box), "time": np.array(0.0)}
    if periodic is not None:
        arrays["periodic"] = periodic
    np.savez(path, **arrays)
    return path


# --- 1. the run's length ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--t-end", "1e300", "--dt", "1"], "gas.t_end: t_end / dt = 1e+300 steps of the timestep method; at most 1e+12"),
    (["--t-end", "1e12"], "steps of the timestep method (dt's default"),   # 1/50 of σ / rms speed: ~8.7e13 steps
])
def test_a_timestep_run_of_more_than_1e12_steps_is_refused(tmp_path, capsys, args, message):
    err = refused(capsys, tmp_path / "o", "--n", "20", "--method", "timestep", *args)
    assert message in err and "lower t_end" in err


def test_an_event_run_that_could_not_finish_is_refused_from_a_scene_file_and_the_command_line(tmp_path, capsys):
    scene = tmp_path / "long.toml"
    scene.write_text("[gas]\nn = 20\nt_end = 1e300\n")
    err = refused(capsys, tmp_path / "o", str(scene))
    assert "gas.t_end: 1e+300 would take about" in err and "events" in err and "at most 1e+12" in err
    assert "lower t_end" in err
    err = refused(capsys, tmp_path / "o", "--n", "1000", "--t-end", "1e10")
    assert "gas.t_end: 1e+10 would take about" in err
    # a run of ordinary length passes every check (and starts)
    assert gas(tmp_path / "o", "--n", "1000", "--t-end", "1000") == 130
    assert gas(tmp_path / "o", "--n", "20", "--method", "timestep", "--t-end", "1e6", "--dt", "1") == 130


def test_the_event_run_a_timestep_run_compares_with_is_bounded_too(tmp_path, capsys):
    """The timestep method's missed-collision count runs the event-driven engine over the same span."""
    err = refused(capsys, tmp_path / "o", "--n", "1000", "--method", "timestep", "--t-end", "1e10", "--dt", "0.1")
    assert "gas.t_end: 1e+10 would take about" in err and "the event-driven run" in err


@pytest.mark.parametrize("engine", ["compiled", "numpy"])
@pytest.mark.parametrize("args", [
    # a strong gravity's fall: ~6·10¹¹ events (under the 10¹² cap), 3.6 days at the compiled engine's 2·10⁶ a second
    ["--n", "1000", "--box", "walls", "--gravity", "1e6", "--t-end", "3e4"],
    # no gravity, a long run: ~5.8·10¹¹ events, 3.3 days
    ["--n", "1000", "--t-end", "1e8"],
])
def test_an_event_run_of_more_than_a_day_is_refused_unless_forced(tmp_path, capsys, monkeypatch, engine, args):
    """gas had an event cap (10¹²: weeks) but no wall-time bound: a run of days started without a word. The cases
    are over a day at either engine's pace (the paces are constants, so on any machine): compiled, where numba is
    installed; else the numpy reference, which searches every pair each event (far slower)."""
    from pem_physics.analysis import gas_config
    from pem_physics.gas import edmd

    assert gas_config.COMPILED_EVENTS_PER_SECOND <= 2e6    # the cases' margin: 3.3 days at this pace
    monkeypatch.setattr(edmd, "available", lambda: engine == "compiled")
    err = refused(capsys, tmp_path / "o", *args)
    assert err.startswith(f"error: gas.t_end: {float(args[-1]):g} would take ~")
    assert re.search(r" ~[\d.,]+ (days|years) \(about [\d.e+]+ events, an estimate at the " + engine, err), err
    assert err.endswith("lower t_end (or n, or gravity); --force to run anyway\n")
    assert gas(tmp_path / "o", *args, "--force") == 130   # forced: it starts


def test_an_ordinary_event_run_is_not_refused_on_either_engine(tmp_path, capsys, monkeypatch):
    from pem_physics.gas import edmd

    for engine in (True, False):
        monkeypatch.setattr(edmd, "available", lambda engine=engine: engine)
        assert gas(tmp_path / "o", "--n", "1000", "--t-end", "1000") == 130       # 0.4 days on numpy, at least
        assert gas(tmp_path / "o", "--n", "100", "--box", "walls", "--gravity", "10", "--t-end", "100") == 130


# --- 2. --state and the options it overrides --------------------------------------------------------------

def test_options_a_saved_state_overrides_are_refused_by_name(tmp_path, capsys):
    state = write_state(tmp_path / "s.npz", periodic=np.array(False))
    err = refused(capsys, tmp_path / "o", "--state", str(state), "--n", "5")
    assert "gas.state: " in err and "drop --n" in err
    err = refused(capsys, tmp_path / "o", "--state", str(state), "--box", "periodic", "--packing-fraction", "0.3",
                  "--dimension", "2", "--temperature", "2", "--start", "lattice", "--seed", "4", "--t-end", "1")
    assert "drop --dimension, --packing-fraction, --temperature, --box, --seed, --start" in err
    # a state named by a scene file: the same
    scene = tmp_path / "next.toml"
    scene.write_text('[gas]\nstate = "s.npz"\nt_end = 1.0\n')
    err = refused(capsys, tmp_path / "o", str(scene), "--n", "5")
    assert "drop --n" in err
    # options that restate the state's own values are not overridden, and other options are the run's
    assert gas(tmp_path / "o", "--state", str(state), "--box", "walls", "--n", "8", "--dimension", "3",
               "--t-end", "1", "--restitution", "0.9", "--blocks", "4") == 130
    assert gas(tmp_path / "o", str(scene)) == 130


def test_gravity_on_a_periodic_state_says_the_state_cannot_take_it(tmp_path, capsys):
    state = write_state(tmp_path / "s.npz")
    err = refused(capsys, tmp_path / "o", "--state", str(state), "--gravity", "1", "--t-end", "1")
    assert "gas.gravity: " in err and "the saved state's box is periodic" in err and "cannot take gravity" in err
    assert "set box" not in err
    assert gas(tmp_path / "o", "--state", str(write_state(tmp_path / "w.npz", periodic=np.array(False))),
               "--gravity", "1", "--t-end", "1") == 130


def test_absurd_gravity_is_refused_by_name_not_blamed_on_the_run_or_the_start(tmp_path, capsys):
    """g = 1e90 was refused as a t_end too long (or a start that found no room): the cause is the gravity, whose fall
    across the box gives a particle 3.5e90 k_B T, far past what doubles resolve beside the thermal speeds."""
    err = refused(capsys, tmp_path / "o", "--box", "walls", "--n", "20", "--gravity", "1e90")
    assert err.startswith("error: gas.gravity: |g| = 1e+90 gives a particle falling across the box")
    assert "at most 1e+30 k_B T" in err and "lower gravity" in err and "t_end" not in err
    scene = tmp_path / "heavy.toml"   # a scene file's gravity, a vector
    scene.write_text('[gas]\nn = 20\nbox = "walls"\ngravity = [0.0, 0.0, -1e90]\n')
    assert "gas.gravity: |g| = 1e+90" in refused(capsys, tmp_path / "o", str(scene))
    state = write_state(tmp_path / "w.npz", periodic=np.array(False))   # a saved state's box and temperature
    err = refused(capsys, tmp_path / "o", "--state", str(state), "--gravity", "1e90", "--t-end", "1")
    assert "gas.gravity: |g| = 1e+90" in err and "the saved state's temperature" in err
    # strong gravity that doubles resolve is the run's (its length is checked apart)
    assert gas(tmp_path / "o", "--box", "walls", "--n", "20", "--gravity", "1e3", "--t-end", "1") == 130
    assert gas(tmp_path / "o", "--state", str(state), "--gravity", "1e3", "--t-end", "1") == 130


@pytest.mark.parametrize("value", [np.array("False"), np.array([True, False]), np.array(0.5)])
def test_a_saved_states_periodic_field_must_be_a_boolean(tmp_path, capsys, value):
    state = write_state(tmp_path / "s.npz", periodic=value)
    err = refused(capsys, tmp_path / "o", "--state", str(state), "--t-end", "1")
    assert "gas.state: " in err and "periodic: expected true or false" in err
    assert gas(tmp_path / "o", "--state", str(write_state(tmp_path / "i.npz", periodic=np.array(0))),
               "--t-end", "1") == 130


# --- 3. packing fractions ------------------------------------------------------------------------------------

def test_a_subnormal_packing_fraction_in_a_scene_file_is_named(tmp_path, capsys):
    scene = tmp_path / "thin.toml"
    scene.write_text("[gas]\nn = 20\npacking_fraction = 5e-324\n")
    err = refused(capsys, tmp_path / "o", str(scene))
    assert "gas.packing_fraction: " in err and "gas.start" not in err and "not finite" not in err


@pytest.mark.parametrize("args, message", [
    (["--packing-fraction", "1e-310"], "smallest normal double"),
    (["--packing-fraction", "1e-300"], "diameters a side; at most 1e+09"),
    (["--packing-fraction", "1e-30", "--dimension", "2"], "diameters a side; at most 1e+09"),
    (["--packing-fraction", "1e-30", "--box", "sphere"], "diameters a side; at most 1e+09"),
    (["--n", "1000", "--packing-fraction", "1e-15"], "cell lists"),   # a box that fits, cells that do not
])
def test_packing_fractions_that_imply_an_impossible_box_are_refused_by_name(tmp_path, capsys, args, message):
    err = refused(capsys, tmp_path / "o", "--n", "20", *args)
    assert "gas.packing_fraction: " in err and message in err and "raise the packing fraction" in err


def test_a_dilute_gas_that_fits_still_runs(tmp_path, capsys):
    # no cell lists in the timestep method: the box bound alone applies, unless it compares with an event-driven run
    assert gas(tmp_path / "o", "--n", "20", "--packing-fraction", "1e-15", "--method", "timestep", "--t-end", "1",
               "--dt", "0.1", "--restitution", "0") == 130
    err = refused(capsys, tmp_path / "o", "--n", "20", "--packing-fraction", "1e-15", "--method", "timestep",
                  "--t-end", "1", "--dt", "0.1")
    assert "gas.packing_fraction: " in err and "cell lists" in err
    assert gas(tmp_path / "o", "--n", "20", "--packing-fraction", "1e-6", "--t-end", "1") == 130


def test_a_cylinder_aspect_that_implies_an_impossible_box_is_refused_by_name(tmp_path, capsys):
    err = refused(capsys, tmp_path / "o", "--n", "20", "--box", "cylinder", "--cylinder-aspect", "1e30")
    assert "gas.cylinder_aspect: " in err and "diameters" in err
