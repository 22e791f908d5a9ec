"""Runs that would mean nothing or exhaust the machine are refused before anything is allocated (issue "outputs
that never lie", items 5 and 6): a run of no step, records beyond the memory, a gas of 10⁹ particles, a basin map of
10¹⁰ points, a zero extent, a temperature whose energy sums overflow.

The memory estimates are checked against the arrays a real run allocates (a second measurement), and the limit
is exercised with the available memory fixed, so the tests do not depend on this machine's size.
"""

from __future__ import annotations

import numpy as np
import pytest

from pem_physics import examples
from pem_physics.analysis import gas_command
from pem_physics.analysis.basin import basin_map
from pem_physics.cli import main as cli_main
from pem_physics.engine import budget
from pem_physics.engine.simulate import Ensemble, simulate
from pem_physics.errors import ValidationError

GIB = 2**30


@pytest.mark.parametrize("scene, members", [(examples.pendulum, 1), (examples.three_magnet, 1),
                                            (examples.pendulum, 5)])
def test_the_record_estimate_matches_what_a_run_allocates(scene, members):
    """Bytes per record from budget.trajectory_record_bytes against the trajectory's arrays, measured as the growth
    of their total size between a run of 11 and one of 51 records: within a factor 2 (the estimate is there to catch
    runs 100× too big, not to count bytes)."""
    ens = None if members == 1 else Ensemble(angular_velocity=np.zeros((members, 1, 3)))

    def total(t_end):
        traj = simulate(scene(t_end=t_end), ensemble=ens, record_interval=0.01)
        return sum(a.nbytes for a in vars(traj).values() if isinstance(a, np.ndarray)), traj

    (small, _), (big, traj) = total(0.1), total(0.5)
    real = (big - small) / 40
    est = budget.trajectory_record_bytes(len(traj.names), traj.dipole_position.shape[-2], members)
    assert real / 2 <= est <= 2 * real, (real, est)


def test_a_run_of_no_step_is_refused(capsys):
    assert cli_main(["run", "example:pendulum", "-o", "unused", "--dt", "0.001", "--t-end", "0.0004", "-q"]) == 2
    assert "t_end = 0.0004 s is less than half a step (dt = 0.001 s): the run would take no step" in \
        capsys.readouterr().err
    with pytest.raises(ValidationError, match="the run would take no step"):
        simulate(examples.pendulum(), dt=2.0**70, t_end=1.0, record_interval=2.0**70)


def test_records_beyond_the_memory_are_refused_before_the_run(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(budget, "available_bytes", lambda: 1 * GIB)
    # 1e6 s recorded every 0.01 s (the example's interval): 1e8 records of ~500 bytes, ~48 GiB
    assert cli_main(["run", "example:pendulum", "-o", str(tmp_path / "o"), "--t-end", "1e6", "-q"]) == 2
    err = capsys.readouterr().err
    assert "error: --t-end 1e+06: 100,000,001 records of 1 body would need" in err   # one every 0.01 s
    assert "a record interval of 10 s gives ~100,000 records" in err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())
    # with --dt typed too, the records' memory is still what is wrong: named by the option that set their number
    assert cli_main(["run", "example:pendulum", "-o", str(tmp_path / "o"), "--t-end", "1e6", "--dt", "0.002",
                     "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --t-end 1e+06: 100,000,001 records of 1 body would need"), err
    assert "does not divide" not in err
    assert cli_main(["run", "example:pendulum", "-o", str(tmp_path / "o"), "--t-end", "1e5", "--dt", "0.002",
                     "--record-interval", "0.002", "-q"]) == 2
    assert capsys.readouterr().err.startswith("error: --record-interval 0.002: 50,000,001 records of 1 body")
    # the same run recording every 10 s fits
    sc = examples.pendulum(t_end=20.0)
    assert len(simulate(sc, record_interval=10.0).t) == 3


def test_a_gas_too_big_for_the_memory_is_refused_before_placement(monkeypatch):
    monkeypatch.setattr(budget, "available_bytes", lambda: 1 * GIB)
    c = dict(gas_command.EXAMPLE, n=10_000_000)
    with pytest.raises(ValidationError, match=r"gas\.n: 10,000,000 particles with \d+ records .* would need"):
        gas_command.check_config(c)
    gas_command.check_config(dict(gas_command.EXAMPLE, n=100_000))   # ~0.3 GiB: fits


@pytest.mark.parametrize("kw, message", [
    ({"grid": 100_000}, "--grid: a 100,000 × 100,000 basin map would need"),
    ({"grid": 0}, "--grid: expected an integer ≥ 2"),
    ({"grid": -5}, "--grid: expected an integer ≥ 2"),
    ({"chunk": 0}, "--chunk: expected an integer ≥ 1"),
    ({"extent": 0.0}, "--extent: expected a half-width > 0 m"),
])
def test_basin_maps_that_mean_nothing_or_do_not_fit_are_refused(monkeypatch, kw, message):
    monkeypatch.setattr(budget, "available_bytes", lambda: 4 * GIB)
    with pytest.raises(ValidationError, match=message):
        basin_map(examples.three_magnet(), **{"grid": 8, "extent": 0.05, **kw})


@pytest.mark.parametrize("key, value, message", [
    ("temperature", 1e308, "gas.temperature: expected 0 < T ≤ 1e+100"),
    ("seed", -1, "gas.seed: expected an integer from 0 to 2**63 - 1"),
])
def test_gas_values_that_would_give_nonsense_are_refused_by_name(key, value, message):
    with pytest.raises(ValidationError, match=message.replace("*", r"\*").replace("+", r"\+")):
        gas_command.check_config(dict(gas_command.EXAMPLE, **{key: value}))


@pytest.mark.parametrize("bad, message", [
    ("x" * 50_000_000, "a name of 50,000,000 characters; at most 200 are allowed"),
    ("bob\nt,q_w", "a control character ('\\\\n')"),
    ("", "expected a non-empty string"),
])
def test_a_body_name_that_would_break_the_outputs_is_refused(bad, message):
    from dataclasses import replace

    sc = examples.pendulum()
    sc = replace(sc, bodies=[replace(sc.bodies[0], name=bad), *sc.bodies[1:]])
    with pytest.raises(ValidationError, match=r"bodies\[0\]\.name: " + message.replace("(", r"\(").replace(")", r"\)")):
        sc.checked()
