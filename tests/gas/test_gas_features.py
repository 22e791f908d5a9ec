"""The gas engine's features beyond the elastic free gas: the fixed-step method (pem_physics/gas/timestep.py),
the TC guard against inelastic collapse, gravity, records at fixed times.

Independent checks only: closed forms (head-on pair, a bouncing ball), the numpy reference engine,
energy balances, and the event-driven count as the yardstick of the fixed-step method's misses."""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pem_physics.gas import edmd
from pem_physics.gas.reference import reach_time, run_reference
from pem_physics.gas.state import EventLog, GasState, first_overlap, make_gas, record_times
from pem_physics.gas.timestep import match_collisions, missed_collisions, run_timestep

from budget import property_settings

needs_numba = pytest.mark.skipif(not edmd.available(), reason="numba is not installed")


def same_sequence(a, b) -> bool:
    return len(a) == len(b) and np.array_equal(a.i, b.i) and np.array_equal(a.j, b.j)


# ---------------------------------------------------------------------------- fixed-step method

def test_timestep_head_on_pair_is_backtracked_to_the_contact_instant():
    """Two unit spheres with centres 2 apart closing at relative speed 2: contact at t = 0.5, then the
    velocities swap. A step of 0.3 finds them overlapping at t = 0.6; backtracked, the positions at
    t = 0.9 are exact."""
    s = GasState([[2.0, 5.0, 5.0], [4.0, 5.0, 5.0]], [[1.0, 0, 0], [-1.0, 0, 0]], 0.5, 1.0, [10, 10, 10],
                 periodic=False)
    run = run_timestep(s, 0.9, 0.3)
    assert run.n_collisions == 1
    # exact: each moves 0.5 to contact (x = 2.5 and 3.5) then back 0.4
    assert np.allclose(run.state.positions[:, 0], [2.5 - 0.4, 3.5 + 0.4], atol=1e-12)
    assert np.allclose(run.state.velocities[:, 0], [-1.0, 1.0], atol=1e-15)
    assert run.virial == pytest.approx(2.0 * 1.0, rel=1e-12)  # J·r = m Δv · r = (−2)(−1)


def head_on(speed):
    """Two unit-diameter spheres 2 apart on the x axis of a 10³ hard-wall box, closing at ±speed: contact at
    t = 0.5 / speed (the centres 1 apart), the next wall hit at 2.5 / speed."""
    return GasState([[2.0, 5.0, 5.0], [4.0, 5.0, 5.0]], [[speed, 0, 0], [-speed, 0, 0]], 0.5, 1.0, [10, 10, 10],
                    periodic=False)


@pytest.mark.parametrize("dt,passes", [(0.2, 1), (0.125, 1), (0.01, 0)])
def test_a_head_on_collision_a_step_jumps_over_is_missed_and_nothing_spurious(dt, passes):
    """Closing at ±10 the spheres touch at t = 0.05 and part again (the event-driven run: 1 collision up to the wall
    hit at 0.25). A step of 0.2 jumps from centres 2 apart to centres 2 apart the other way round (they passed
    through each other); 0.125 finds them overlapping at 0.125 already separating, and apart at 0.25 (one miss,
    counted once); 0.01 finds the overlap approaching and backtracks it to the contact at 0.05."""
    s = head_on(10.0)
    run = run_timestep(s, 0.25 if dt == 0.125 else 0.2, dt, log=True)
    comp = missed_collisions(s, run)
    assert run.info["passes"] == passes
    assert (comp.missed, comp.spurious, comp.matched) == ((1, 0, 0) if passes else (0, 0, 1))
    assert comp.event_collisions == 1 and comp.timestep_collisions == 1 - passes
    if passes:
        assert comp.first_mismatch == pytest.approx(0.05, rel=1e-12)
    else:
        assert comp.first_mismatch is None and run.log.time[0] == pytest.approx(0.05, rel=1e-12)


def test_collisions_are_matched_by_pair_and_time_within_the_window():
    """Constructed logs: (0, 1) at 1.0 and 2.0 in a, at 1.05 and 3.0 in b; (1, 2) at 1.5 in a only; (0, 2) at 0.5
    in b only; wall events (j < 0) are not collisions. Window 0.1: one (0, 1) pair of each run matches."""
    a = EventLog(np.array([1.0, 1.2, 1.5, 2.0]), np.array([0, 1, 1, 0]), np.array([1, -1, 2, 1]))
    b = EventLog(np.array([0.5, 1.05, 3.0]), np.array([0, 0, 0]), np.array([2, 1, 1]))
    used_a, used_b = match_collisions(a, b, 0.1, 3)
    assert used_a.tolist() == [True, False, False] and used_b.tolist() == [False, True, False]
    # a window of 1: 2.0 and 3.0 match too, each collision used once
    used_a, used_b = match_collisions(a, b, 1.0, 3)
    assert used_a.tolist() == [True, False, True] and used_b.tolist() == [False, True, True]


def test_timestep_misses_collisions_at_a_large_step_and_none_at_a_small_one():
    """150 spheres, η = 0.2, t = 2: at dt = 0.0003 the fixed-step run has the event-driven run's collisions one for
    one (pair and contact time); at larger steps it sees itself miss more. The comparison's counts add up to the two
    runs' own counts (matched + missed = event-driven, matched + spurious = fixed-step)."""
    s = make_gas(150, 0.2, 3, seed=4)
    ev = edmd.run(s, 2.0).n_collisions
    runs = {dt: run_timestep(s, 2.0, dt, log=True) for dt in (0.3, 0.03, 0.0003)}
    comps = {dt: missed_collisions(s, r) for dt, r in runs.items()}
    fine = comps[0.0003]
    assert ev > 300 and (fine.matched, fine.missed, fine.spurious, fine.first_mismatch) == (ev, 0, 0, None)
    assert runs[0.0003].info["passes"] == 0 < runs[0.03].info["passes"] < runs[0.3].info["passes"]
    assert runs[0.3].info["passes"] > 0.1 * ev
    for dt, c in comps.items():
        assert c.matched + c.missed == ev and c.matched + c.spurious == runs[dt].n_collisions
        assert c.missed >= 0 and c.spurious >= 0 and c.window == pytest.approx(runs[dt].info["dt"])
    # both keep the energy: every applied impulse is the exact elastic one
    for r in runs.values():
        assert r.state.kinetic_energy() == pytest.approx(s.kinetic_energy(), rel=1e-12)


def test_a_log_that_overflows_is_grown_and_its_chunk_redone(monkeypatch):
    """A log started with room for 4 collisions grows as the run goes; the chunk that overflowed it is run again,
    so the run is the one with room from the start, collision for collision and bit for bit."""
    from pem_physics.gas import timestep

    s = make_gas(60, 0.3, 2, seed=5)
    roomy = run_timestep(s, 1.0, 0.01, log=True)
    monkeypatch.setattr(timestep, "LOG_START", 4)
    grown = run_timestep(s, 1.0, 0.01, log=True, chunk_seconds=1.0)
    assert len(roomy.log) == roomy.n_collisions > 50
    assert same_sequence(grown.log, roomy.log) and np.array_equal(grown.log.time, roomy.log.time)
    assert np.array_equal(grown.state.positions, roomy.state.positions) and grown.virial == roomy.virial


def test_the_comparison_needs_the_runs_log():
    s = head_on(10.0)
    with pytest.raises(ValueError, match="log=True"):
        missed_collisions(s, run_timestep(s, 0.2, 0.01))


def test_timestep_records_and_refusals():
    s = make_gas(20, 0.1, 2, seed=1, periodic=False)
    run = run_timestep(s, 1.0, 0.01, record_interval=0.25)
    assert np.allclose(run.records.times, [0, 0.25, 0.5, 0.75, 1.0])
    assert np.array_equal(run.records.positions[-1], run.state.positions)
    with pytest.raises(ValueError, match="dt = -1"):
        run_timestep(s, 1.0, -1.0)


def test_timestep_ctrl_c_keeps_whole_steps():
    s = make_gas(100, 0.2, 3, seed=2)
    calls = []

    def progress(t):
        calls.append(t)
        if len(calls) == 3:
            raise KeyboardInterrupt

    run = run_timestep(s, 100.0, 0.01, progress=progress, chunk_seconds=1e-4, blocks=4)
    assert not run.complete and 0 < run.t_end < 100.0
    assert run.t_end == pytest.approx(run.info["steps"] * 0.01, rel=1e-12)
    assert run.state.kinetic_energy() == pytest.approx(s.kinetic_energy(), rel=1e-12)


# ---------------------------------------------------------------------------- TC model

@needs_numba
def test_dense_inelastic_gas_collapses_without_the_tc_guard_and_runs_with_it():
    """Disks at area fraction 0.7, e = 0.2: without the guard a million collisions do not reach t = 1
    (inelastic collapse: ever shorter intervals); with the default TC time the run reaches t = 5 with
    a few ten thousand collisions, and the gas cools (temperature falls block after block)."""
    s = make_gas(400, 0.7, 2, seed=3)
    bare = edmd.CompiledEngine(s, 0.2, tc=0.0)
    assert not bare.advance(5.0, 1_000_000) and bare.time < 1.0
    run = edmd.run(s, 5.0, restitution=0.2, blocks=5)
    assert run.complete and run.t_end == 5.0 and run.tc > 0
    assert 1000 < run.n_collisions < 200_000 and run.info["tc_elastic"] > 0
    assert np.all(np.diff(run.block_kinetic) < 0)
    assert first_overlap(run.state.positions, run.state.radii, run.state.box, tol=1e-9) is None


@needs_numba
def test_tc_model_compiled_matches_the_reference():
    s = make_gas(80, 0.35, 2, seed=8)
    ref = run_reference(s, 1.5, restitution=0.5, tc=0.02)
    cmp = edmd.run(s, 1.5, restitution=0.5, tc=0.02, log=True, engine="numba")
    assert ref.info["tc_elastic"] > 5 and cmp.info["tc_elastic"] == ref.info["tc_elastic"]
    assert same_sequence(ref.log, cmp.log)
    assert np.allclose(cmp.state.velocities, ref.state.velocities, atol=1e-9)


class TookTooLong(Exception):
    """Raised by :func:`deadline`'s alarm (not a KeyboardInterrupt, which the engines' drivers catch)."""


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail a block still running after ``seconds`` (SIGALRM, between two chunks of the engines) instead of
    hanging."""
    import signal

    if not hasattr(signal, "SIGALRM"):
        pytest.skip("no SIGALRM")

    def alarm(signum, frame):
        raise TookTooLong

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def collapsing_gas():
    """Disks at area fraction 0.7: with e = 0.2 and no TC model they collapse before t = 1 (see above)."""
    return make_gas(400, 0.7, 2, seed=3)


@pytest.mark.parametrize("call", [
    lambda s, progress: edmd.run(s, 5.0, restitution=0.2, tc=0.0, progress=progress),
    lambda s, progress: edmd.run(s, 5.0, restitution=0.2, tc=0.0, progress=progress, engine="numpy"),
    lambda s, progress: run_reference(s, 5.0, restitution=0.2, tc=0.0, progress=progress, gravity=None),
], ids=["edmd.run", "edmd.run-numpy", "run_reference"])
def test_tc_0_with_inelastic_spheres_is_refused_before_any_event(call):
    """tc = 0 turns the TC model off, and these disks then collapse (the run never ends): refused by name with
    its fix before the first chunk of events (the progress callback, called after each chunk, stops a run that
    started after 5 s, so the test fails instead of hanging)."""
    start, calls = time.perf_counter(), []

    def progress(t):
        calls.append(t)
        if time.perf_counter() - start > 5:
            raise KeyboardInterrupt

    with pytest.raises(ValueError, match=r"^tc: 0 turns the TC model off") as err:
        call(collapsing_gas(), progress)
    assert "restitution 0.2 < 1" in str(err.value) and "give tc > 0 or None" in str(err.value)
    assert not calls
    # elastic spheres take tc = 0 (their TC model is off anyway)
    assert edmd.run(make_gas(10, 0.1, 2, seed=1), 0.1, restitution=1.0, tc=0.0).complete


def test_the_timestep_comparison_of_inelastic_spheres_ends():
    """missed_collisions compared an e = 0.2 fixed-step run with an event-driven run with the TC model off: the
    collapsing disks hung it. Its event-driven run has the default TC model (the fixed step itself cannot collapse:
    its steps do not shrink)."""
    s = collapsing_gas()
    missed_collisions(head_on(10.0), run_timestep(head_on(10.0), 0.2, 0.01, restitution=0.2, log=True))  # compile
    run = run_timestep(s, 1.0, 0.01, restitution=0.2, log=True)
    with deadline(60):
        comp = missed_collisions(s, run)
    assert comp.complete and comp.t_end == 1.0 and comp.matched + comp.spurious == run.n_collisions > 0


def test_tc_default_and_refusal():
    s = make_gas(10, 0.1, 3, seed=1)
    assert edmd.default_tc(s, 1.0, None, None) == 0.0
    u = math.sqrt(np.sum(s.velocities ** 2) / s.n)
    assert edmd.default_tc(s, 0.9, None, None) == pytest.approx(1e-4 * 1.0 / u)
    with pytest.raises(ValueError, match="tc = -1"):
        edmd.run(s, 1.0, restitution=0.9, tc=-1.0)


# ---------------------------------------------------------------------------- gravity

@property_settings(60)
@given(st.floats(0, 10), st.floats(-10, 10), st.floats(-10, 10).filter(lambda a: abs(a) > 1e-3))
def test_reach_time_is_the_first_root_of_the_quadratic(h, u, a):
    t = float(reach_time(h, u, a))
    ts = np.linspace(0, min(t, 100.0) if math.isfinite(t) else 100.0, 2001)[:-1]
    covered = u * ts + 0.5 * a * ts * ts
    assert np.all(covered <= h + 1e-9 * (1 + h))  # not reached earlier
    if math.isfinite(t):
        assert u * t + 0.5 * a * t * t == pytest.approx(h, abs=1e-9 * (1 + h + abs(u) ** 2 + abs(a)))
    else:  # never: the apex of the parabola stays short of h
        assert a < 0 and (u <= 0 or u * u / (-2 * a) < h + 1e-12)


@needs_numba
def test_single_ball_bouncing_under_gravity_matches_the_closed_form():
    """A ball dropped from rest at height h above the floor contact, drifting sideways at 0.3 between
    mirror walls: height h − g τ²/2 with τ the time from the nearest apex (period 2√(2h/g)), x a
    triangle wave; 40 bounces."""
    g, h, R = 2.0, 2.5, 0.5
    s = GasState([[1.0, 1.0, R + h]], [[0.3, 0.0, 0.0]], R, 1.0, [4.0, 4.0, 4.0], periodic=False)
    t_end = 40 * 2 * math.sqrt(2 * h / g)
    run = edmd.run(s, t_end, gravity=[0, 0, -g], record_interval=0.1)
    t = run.records.times
    period = 2 * math.sqrt(2 * h / g)
    tau = t - period * np.round(t / period)
    z = R + h - 0.5 * g * tau ** 2
    span = 4.0 - 2 * R
    q = np.mod(0.5 + 0.3 * t, 2 * span)
    x = R + np.where(q <= span, q, 2 * span - q)
    assert np.max(np.abs(run.records.positions[:, 0, 2] - z)) < 1e-9
    assert np.max(np.abs(run.records.positions[:, 0, 0] - x)) < 1e-9
    assert run.n_wall_events == 40 + int(0.3 * t_end // span) + (1 if (0.3 * t_end + 0.5) % span < 0 else 0)


@needs_numba
@pytest.mark.parametrize("d", [2, 3])
def test_gravity_compiled_matches_reference_and_conserves_energy(d):
    s = make_gas(60, 0.15, d, seed=2, periodic=False)
    g = [0.0] * (d - 1) + [-1.0]
    ref = run_reference(s, 4.0, gravity=g, record_interval=0.5)
    cmp = edmd.run(s, 4.0, gravity=g, log=True, record_interval=0.5, engine="numba")
    assert ref.n_collisions > 100 and ref.n_wall_events > 50
    # round-off differences between the engines grow (chaos) but stay far below the gaps between events
    assert same_sequence(ref.log, cmp.log) and np.max(np.abs(ref.log.time - cmp.log.time)) < 1e-6
    E = cmp.records.kinetic + cmp.records.potential
    assert np.max(np.abs(E - E[0])) < 1e-12 * abs(E[0]) * 10
    x = cmp.records.positions
    r = s.radii[None, :, None]
    assert np.all(x >= r * (1 - 1e-9)) and np.all(x <= s.box - r * (1 - 1e-9))


@needs_numba
def test_inelastic_gas_under_gravity_settles_without_stalling():
    """The pile on the floor keeps colliding about every t_c (the default under gravity, 1e-3 √(σ/g))."""
    s = make_gas(100, 0.2, 2, seed=5, periodic=False)
    run = edmd.run(s, 10.0, restitution=0.5, gravity=[0.0, -1.0], blocks=3)
    assert run.tc == pytest.approx(1e-3)
    assert run.complete and run.t_end == 10.0 and run.n_collisions < 200_000
    mean_height = float(np.mean(run.state.positions[:, 1]))
    assert mean_height < float(np.mean(s.positions[:, 1]))  # the gas has lost energy and sunk
    assert np.all(run.state.positions[:, 1] >= s.radii * (1 - 1e-9))


def test_gravity_needs_hard_walls():
    s = make_gas(10, 0.1, 3, seed=1)
    with pytest.raises(ValueError, match="gravity needs hard walls"):
        edmd.run(s, 1.0, gravity=[0, 0, -1])
    with pytest.raises(ValueError, match="must be 3 finite numbers"):
        edmd.run(make_gas(10, 0.1, 3, periodic=False), 1.0, gravity=[0, -1])


# ---------------------------------------------------------------------------- records

def test_record_times():
    assert np.array_equal(record_times(0.0, 1.0, 0.25), [0, 0.25, 0.5, 0.75, 1.0])
    assert np.allclose(record_times(1.0, 2.1, 0.5), [1.0, 1.5, 2.0, 2.1])
    with pytest.raises(ValueError, match="record_interval = 0"):
        record_times(0.0, 1.0, 0.0)


@needs_numba
@property_settings(6)
@given(st.floats(0.05, 2.0), st.booleans())
def test_records_do_not_change_the_run(interval, gravity):
    """Bit-identical events and final state whatever the record interval; each record equals the final
    state of a run stopped at that time."""
    s = make_gas(120, 0.2, 3, seed=11, periodic=not gravity)
    g = [0.0, 0.0, -1.0] if gravity else None
    plain = edmd.run(s, 3.0, log=True, gravity=g)
    rec = edmd.run(s, 3.0, log=True, gravity=g, record_interval=interval)
    assert np.array_equal(plain.log.time, rec.log.time) and same_sequence(plain.log, rec.log)
    assert np.array_equal(plain.state.positions, rec.state.positions)
    assert np.array_equal(plain.state.velocities, rec.state.velocities)
    assert plain.virial == rec.virial
    k = len(rec.records) // 2
    part = edmd.run(s, float(rec.records.times[k]), gravity=g)
    assert np.array_equal(part.state.positions, rec.records.positions[k])
    assert np.array_equal(part.state.velocities, rec.records.velocities[k])
    assert rec.records.collisions[k] == part.n_collisions
