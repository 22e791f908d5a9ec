"""The ``gas`` command's checks of options that a run would otherwise take in silence or hang on: the TC model's
time (off with inelastic spheres, or longer than the time between collisions), options of the other method, a
saved state named by its folder, a cylinder too flat or too thin for its particles; and the guard that stops an
event-driven run whose simulated time no longer advances.

Refusals run the command with the run replaced (``run_gas``, as tests/gas/test_gas_cli_limits.py): a refusal comes
before it (exit code 2); a command that passes every check ends in the replacement's Ctrl-C (exit code 130)."""

from __future__ import annotations

import json
import time

import pytest
from test_gas_cli_limits import gas, refused

from pem_physics.analysis import gas_command


@pytest.fixture
def no_run(monkeypatch):
    """The run starting: Ctrl-C (exit code 130, nothing written) — a refused command returns 2 before it."""
    def started(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(gas_command, "run_gas", started)


INELASTIC = ("--n", "300", "-d", "2", "--packing-fraction", "0.3", "--restitution", "0.1")


# --- the TC model's time -----------------------------------------------------------------------------------------

def test_tc_0_with_inelastic_spheres_is_refused_as_e_0_is_not_left_to_stall(tmp_path, capsys, no_run):
    """--tc 0 --restitution 0.1 hung: the collapse stopped the simulated time at t = 0.469 while the collisions grew
    by hundreds of millions (the e = 0 refusal's stall, with the TC model turned off)."""
    err = refused(capsys, tmp_path / "o", *INELASTIC, "--tc", "0", "--t-end", "50")
    assert err.startswith("error: gas.tc: 0 turns the TC model off") and "restitution 0.1 < 1" in err
    assert "stalls" in err and "use a small tc > 0" in err and 'method = "timestep"' in err
    scene = tmp_path / "off.toml"
    scene.write_text('[gas]\nn = 50\nrestitution = 0.5\ntc = 0.0\n')
    assert "gas.tc: 0 turns the TC model off" in refused(capsys, tmp_path / "o", str(scene))
    # elastic spheres need no TC model (0 is its value for them), and a small tc > 0 guards inelastic ones
    assert gas(tmp_path / "o", "--n", "50", "--tc", "0") == 130
    assert gas(tmp_path / "o", *INELASTIC, "--tc", "1e-4") == 130


# --- the guard against a run whose time stops -------------------------------------------------------------------

def collapsing(monkeypatch):
    """A checked config that collapses (the TC model off, as tc = 0 did before check_config and edmd.run refused it:
    the run's choice of t_c is replaced to let it through), the guard's window shortened to 0.5 s; and a backstop
    progress callback that stops the run after 30 s of wall time."""
    from pem_physics.gas import edmd
    from pem_physics.gas import state as edmd_state

    if not edmd.available():
        pytest.skip("numba is not installed")
    monkeypatch.setattr(gas_command, "STALL_SECONDS", 0.5, raising=False)   # (none before the guard)
    picked = edmd.default_tc
    for module in (edmd, edmd_state):   # the run's and the command's check_tc's
        monkeypatch.setattr(module, "default_tc", lambda state, e, g, tc: 0.0 if tc == 0 else picked(state, e, g, tc))
    c = gas_command.check_config({"n": 300, "dimension": 2, "packing_fraction": 0.3, "restitution": 0.1,
                                  "t_end": 50.0})
    c["tc"] = 0.0
    start = time.perf_counter()

    def backstop(t):
        if time.perf_counter() - start > 30:
            raise KeyboardInterrupt

    return c, backstop


def test_an_event_run_whose_time_stops_is_stopped_with_a_valid_partial_result(monkeypatch):
    """Without the TC model 300 inelastic disks collapse at t = 0.469: the run made millions of collisions a second
    there and never ended. The command's progress callback stops it once its time stands still."""
    c, backstop = collapsing(monkeypatch)
    state = gas_command.initial_state(c)
    t0 = time.perf_counter()
    run, extra = gas_command.run_gas(c, state, progress=backstop)
    assert extra["stalled"] == pytest.approx(0.4694, abs=1e-3) and time.perf_counter() - t0 < 25
    assert not run.complete and run.t_end == extra["stalled"] and run.n_collisions > 10_000
    message = gas_command.stall_message(run, extra["stalled"])
    assert "stalled at t = 0.469" in message and "inelastic collapse: raise tc" in message
    # an ordinary run is not stopped
    c["tc"] = None
    run, extra = gas_command.run_gas(c, state)
    assert run.complete and extra["stalled"] is None


def test_the_command_says_the_run_stalled_and_writes_its_partial_result(tmp_path, capsys, monkeypatch):
    c, backstop = collapsing(monkeypatch)
    monkeypatch.setattr(gas_command, "check_config", lambda cfg, given=None: dict(c))
    monkeypatch.setattr(gas_command, "_Bar", lambda t0, t1, enabled: backstop)
    backstop.close = lambda: None
    assert gas(tmp_path, "--t-end", "50") == 1
    err = capsys.readouterr().err
    assert err.startswith("simulation failed: the event-driven run stalled at t = 0.469")
    assert "partial results written to" in err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["complete"] is False and any("stalled at t = 0.469" in note for note in summary["notes"])


class TookTooLong(Exception):
    """Raised by the alarm of :func:`deadline` (not a KeyboardInterrupt: the engines' drivers would catch that)."""


@pytest.fixture
def deadline():
    """Fail a test still running after 60 s (SIGALRM, between two chunks of the engines) instead of hanging."""
    import signal

    if not hasattr(signal, "SIGALRM"):
        pytest.skip("no SIGALRM")

    def alarm(signum, frame):
        raise TookTooLong

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_the_timestep_methods_comparison_with_inelastic_spheres_ends(tmp_path, deadline):
    """--method timestep --restitution 0.1 hung after its own run (1 s): the event-driven run it counts missed
    collisions against had the TC model off (gas.timestep.missed_collisions) and collapsed at t = 0.469. The
    comparison's counts add up to the run's own."""
    from pem_physics.gas import edmd

    if not edmd.available():
        pytest.skip("numba is not installed")
    assert gas(tmp_path, *INELASTIC, "--method", "timestep", "--t-end", "2", "--dt", "0.02") == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["method"] == "timestep" and summary["complete"] is True
    assert isinstance(summary["missed_collisions"], int) and summary["missed_collisions"] >= 0
    assert summary["matched_collisions"] + summary["spurious_collisions"] == summary["collisions"] > 0


def test_a_tc_as_long_as_the_mean_free_time_is_refused_and_a_tenth_of_it_warned_of(tmp_path, capsys, no_run):
    """--tc 1e9 --restitution 0.1 ended at T = 0.73 (0.095 with the default tc) in the same ~1560 collisions: every
    collision after a particle's first was elastic, the restitution switched off without a word."""
    err = refused(capsys, tmp_path / "o", *INELASTIC, "--t-end", "5", "--tc", "1e9")
    assert err.startswith("error: gas.tc: 1e+09 is 2.4e+09 × the mean free time 0.417 (Enskog's, at the start)")
    assert "restitution 0.1 is in effect switched off" in err and "use a tc well below 0.417" in err
    assert "the default is 7.07e-05" in err
    # a tc of a tenth of it is the user's to choose, with a warning; the default (1e-4 σ / rms speed) is far below
    assert gas(tmp_path / "o", *INELASTIC, "--t-end", "5", "--tc", "0.05") == 130
    err = capsys.readouterr().err
    assert err.startswith("warning: gas.tc: 0.05 is 0.12 × the mean free time 0.417") and "some 21% or more" in err
    assert gas(tmp_path / "o", *INELASTIC, "--t-end", "5") == 130
    assert "warning" not in capsys.readouterr().err
    # elastic spheres have no TC model to spoil
    assert gas(tmp_path / "o", "--n", "300", "-d", "2", "--packing-fraction", "0.3", "--tc", "1e9") == 130
    assert "warning" not in capsys.readouterr().err


def test_the_tc_warning_goes_into_the_summary(tmp_path, capsys):
    from pem_physics.gas import edmd

    if not edmd.available():
        pytest.skip("numba is not installed")
    assert gas(tmp_path, *INELASTIC, "--t-end", "0.5", "--tc", "0.05") == 0
    notes = json.loads((tmp_path / "summary.json").read_text())["notes"]
    assert any(note.startswith("gas.tc: 0.05 is 0.12 × the mean free time") for note in notes)


# --- options of the other method ----------------------------------------------------------------------------------

def test_dt_with_the_event_driven_method_is_refused_not_ignored(tmp_path, capsys, no_run):
    """--dt 0.01 (a scene's dt) was taken and ignored by the event-driven method, which has no step."""
    err = refused(capsys, tmp_path / "o", "--n", "50", "--dt", "0.01")
    assert err.startswith('error: gas.dt: applies to method = "timestep" only: the event-driven method has no step')
    assert 'drop dt, or set method = "timestep"' in err
    scene = tmp_path / "stepped.toml"
    scene.write_text('[gas]\nn = 50\nmethod = "event"\ndt = 0.01\n')
    assert 'gas.dt: applies to method = "timestep" only' in refused(capsys, tmp_path / "o", str(scene))
    assert gas(tmp_path / "o", "--n", "50", "--dt", "0.01", "--method", "timestep") == 130


def test_tc_with_the_timestep_method_is_refused_not_ignored(tmp_path, capsys, no_run):
    """--tc with --method timestep was taken and ignored: the fixed-step method has no TC model."""
    err = refused(capsys, tmp_path / "o", *INELASTIC, "--method", "timestep", "--tc", "1e-4")
    assert err.startswith('error: gas.tc: applies to method = "event" only: the timestep method has no TC model')
    assert 'drop tc, or set method = "event"' in err
    assert gas(tmp_path / "o", *INELASTIC, "--method", "timestep") == 130


# --- a saved state named by its folder ----------------------------------------------------------------------------

def test_a_gas_runs_output_folder_stands_for_its_gas_npz(tmp_path, capsys):
    """--state out/first (the folder a run wrote) said "no such file: out/first"."""
    first = tmp_path / "first"
    assert gas(first, "--n", "20", "--box", "walls", "--t-end", "0.05") == 0
    c = gas_command.check_config({"state": str(first), "t_end": 1.0})
    assert c["state"] == str(first / "gas.npz") and c["n"] == 20 and c["box"] == "walls"
    second = tmp_path / "second"
    assert gas(second, "--state", str(first), "--t-end", "0.05") == 0
    assert json.loads((second / "summary.json").read_text())["t_start"] == pytest.approx(0.05)
    scene = tmp_path / "next.toml"   # a scene file's state: the folder beside it
    scene.write_text('[gas]\nstate = "first"\nt_end = 0.05\n')
    assert gas(tmp_path / "third", str(scene)) == 0
    # a folder without one is named as a folder, with the .npz files it holds
    (tmp_path / "other").mkdir()
    err = refused(capsys, tmp_path / "o", "--state", str(tmp_path / "other"))
    assert f"gas.state: {tmp_path / 'other'} is a folder without a gas.npz (a gas run's output)" in err
    assert "name the saved state's .npz file" in err and "no such file" not in err
    (tmp_path / "other" / "mine.npz").write_bytes(b"")
    assert "it holds mine.npz: name" in refused(capsys, tmp_path / "o", "--state", str(tmp_path / "other"))


# --- a cylinder too flat or too thin ------------------------------------------------------------------------------

@pytest.mark.parametrize("aspect, shape", [("1e-6", "0.00139 diameters long and 1.39e+03 across, too flat"),
                                           ("1e6", "1.39e+05 diameters long and 0.139 across, too thin"),
                                           ("6.32", "47.4 diameters long and 7.5 across, too thin")])
def test_a_cylinder_aspect_that_leaves_no_room_is_refused_by_name_with_the_range_that_fits(tmp_path, capsys, no_run,
                                                                                          aspect, shape):
    """--cylinder-aspect 1e-6 (or 1e6) blamed the particles: "the centres reach only 0 of its volume … packing
    fraction inf … use more particles". The cylinder of 1000 spheres at η = 0.25 is then thinner than a sphere."""
    err = refused(capsys, tmp_path / "o", "--box", "cylinder", "--cylinder-aspect", aspect)
    assert err.startswith(f"error: gas.cylinder_aspect: {float(aspect):g} makes the cylinder of 1,000 spheres at "
                          f"η = 0.25 ")
    assert shape in err and "choose an aspect from 0.224 to 6.31" in err and "more particles" not in err


def test_the_ends_of_the_aspect_range_run_and_too_few_spheres_are_the_packing_fractions_fault(tmp_path, capsys,
                                                                                             no_run):
    for aspect in (0.224, 6.31):
        assert gas_command.check_config({"box": "cylinder", "cylinder_aspect": aspect})["cylinder_aspect"] == aspect
    for aspect in ("0.0288", "758"):   # the range's ends for 20 spheres at η = 0.01: make_gas starts them too
        assert gas(tmp_path / "o", "--box", "cylinder", "--cylinder-aspect", aspect, "--n", "20",
                   "--packing-fraction", "0.01") == 130
    assert "from 0.0288 to 758" in refused(capsys, tmp_path / "o", "--box", "cylinder", "--cylinder-aspect", "1e-9",
                                           "--n", "20", "--packing-fraction", "0.01")
    # 100 spheres at η = 0.25 fit no cylinder: the message blames n and η, with the numbers of the best aspect (1)
    err = refused(capsys, tmp_path / "o", "--box", "cylinder", "--cylinder-aspect", "1e-6", "--n", "100")
    assert err.startswith("error: gas.packing_fraction: 0.25 cannot be reached in a cylinder of 100 spheres at any "
                          "aspect: at the best, 1, their centres reach only 126.2")
    assert "use more particles or a lower η" in err and "inf" not in err


@pytest.mark.parametrize("scene,says", [
    ("example:three-magnet", "'three-magnet' is a scene of bodies, not a hard-sphere gas: run it with `python -m "
                             "pem_physics run example:three-magnet -o OUTDIR`"),
    ("three_magnet.toml", "a scene of bodies (format = \"pem-scene\"), not a gas scene (one [gas] table): run it "
                          "with `python -m pem_physics run "),
    ("compass.udf", "a PEM UDF scene of bodies, not a gas scene (a .toml file with one [gas] table): run it with "
                    "`python -m pem_physics run "),
    ("scene.py", "a Python scene of bodies, not a gas scene"),
])
def test_a_scene_of_bodies_given_to_gas_names_the_command_it_is_for(tmp_path, capsys, scene, says):
    """A scene of bodies given to ``gas`` said "unknown gas example 'three-magnet'", "a gas scene has one table [gas],
    found format, version, …" or "not valid TOML: Invalid statement" (a .udf or .py file): it is named for what it is,
    with the command that runs it; and ``run example:hard-sphere-gas`` (the gas command's example) the other way."""
    from pem_physics import cli
    from pem_physics.analysis import gas_config
    from pem_physics.io import loading

    from conftest import ROOT

    (tmp_path / "scene.py").write_text("from pem_physics import examples\nscene = examples.pendulum()\n")
    path = scene if scene.startswith("example:") else str(
        tmp_path / scene if scene.endswith(".py") else ROOT / "examples" / "scenes" / scene)
    assert cli.main(["gas", path, "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err
    assert cli.main(["run", "example:hard-sphere-gas", "-o", str(tmp_path / "out"), "-q"]) == 2
    assert "a hard-sphere gas, not a scene of bodies: run it with `python -m pem_physics gas example:hard-sphere-gas" \
        in capsys.readouterr().err
    assert loading.GAS_EXAMPLES == tuple(gas_config.EXAMPLES)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option, value", [("--cylinder-axis", "0"), ("--cylinder-aspect", "2")])
@pytest.mark.parametrize("box", ["periodic", "walls", "sphere"])
def test_a_cylinder_option_for_another_box_is_refused_not_ignored(tmp_path, capsys, no_run, option, value, box):
    """--cylinder-axis 0 with --box periodic was taken and ignored: only a cylinder has an axis and an aspect."""
    key = option[2:].replace("-", "_")
    err = refused(capsys, tmp_path / "o", "--n", "50", "--box", box, option, value)
    assert err.startswith(f'error: gas.{key}: applies to box = "cylinder" only (the box is {box!r}): drop {key}'), err
    scene = tmp_path / "walls.toml"
    scene.write_text(f'[gas]\nn = 50\nbox = "{box}"\n{key} = {value}\n')
    assert f"gas.{key}: applies to box" in refused(capsys, tmp_path / "o", str(scene))
    assert gas(tmp_path / "o", "--n", "1000", "--box", "cylinder", option, value) == 130   # 50 fit no cylinder
