"""Impact steps taken inside the compiled kernels (kernels._resolve_impacts and the impact search of
kernels._member_splitting) against the numpy contact driver alone (engine/contact/driver.run, compiled.ENABLED = False).

Oracles:
- the numpy-only run: the kernel's impact step is a port of contacts._advance_step (Brent on the same trial
  steps, the same contacts, impulses and sweeps), so the events and records agree within the round-off bound
  of tests/roundoff.py (test_compiled_contacts.assert_same_run);
- that the kernel takes them: contacts._advance_step (the numpy impact step) is called for no step of an
  elastic cradle or marble box, while the kernels' impact search turned off (compiled.IMPACTS = False) calls it
  for every impact step;
- what the kernel does not take (friction, a resting contact, time-dependent torques) still goes to the numpy
  driver, and still matches it;
- a full event buffer (compiled.EVENT_CAPACITY) is flushed and the run goes on unchanged.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_compiled_contacts import assert_same_run, both, numpy_runs
from test_contact_sim import CRADLE

from pem_physics import examples, simulate
from pem_physics.engine import compiled
from pem_physics.engine.contact import driver as contacts
from pem_physics.model.scene import StaticWall

from roundoff import assert_follows, pick

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_contacts import marble_box  # noqa: E402

pytestmark = pytest.mark.skipif(not compiled.available(), reason="numba is not installed")


def count_numpy_steps(monkeypatch) -> list:
    """A list that gets one entry per call of the numpy impact step (contacts._advance_step)."""
    calls = []
    original = contacts._advance_step

    def counted(*args, **kw):
        calls.append(args[2])
        return original(*args, **kw)

    monkeypatch.setattr(contacts, "_advance_step", counted)
    return calls


def impact_steps(traj, dt) -> int:
    return len({int(np.ceil(t / dt - 1e-9)) for t in traj.events.t})


#: Records compared for marbles (their spin is rounding noise about zero: ω and L are left out).
MARBLE_ARRAYS = ("orientation", "kinetic_energy", "center_of_mass")


def small_box(n=20, t_end=0.3):
    scene = marble_box(n=n, speed=0.4, seed=3)
    return replace(scene, settings=replace(scene.settings, t_end=t_end))


def test_marble_box_matches_the_numpy_driver(monkeypatch):
    # a gas is chaotic: the engines' rounding differences grow at each impact, with the kernel's impact steps as
    # with the numpy driver's (the twins' spread, and the round-off bound, grow with them); the next test compares
    # the two compiled paths over longer
    scene = small_box(t_end=0.15)
    fast, ref, tw = both(scene, record_interval=1e-2)
    assert impact_steps(ref, 1e-3) >= 20
    assert set(ref.events.body2) >= {"box"} and any(b.startswith("marble") for b in ref.events.body2)
    assert_same_run(fast, ref, tw, arrays=MARBLE_ARRAYS)
    for name in ("position", "orientation"):
        assert_follows(f"events.{name}", getattr(fast.events, name), getattr(ref.events, name),
                       pick([t.events for t in tw], name), ref.steps)
    # elastic: the impacts take no energy
    assert abs(fast.events.energy_loss) < 1e-12 * np.max(np.abs(ref.total_energy))


def test_kernel_impact_steps_match_the_numpy_impact_steps_on_the_compiled_engine():
    """The kernel's impact steps against the numpy driver's, both between compiled steps (compiled.IMPACTS off:
    every impact step handed to contacts._advance_step, its trial steps on the kernel): they stay together longer
    than either stays with the numpy-only run."""
    scene = small_box(t_end=0.4)
    fast = simulate(scene, record_interval=1e-2)
    compiled.IMPACTS = False
    try:
        ref = simulate(scene, record_interval=1e-2)
    finally:
        compiled.IMPACTS = True
    assert impact_steps(ref, 1e-3) >= 50
    base, tw = numpy_runs(scene, record_interval=1e-2)  # the bound's measure: the numpy run and its twins
    assert_same_run(fast, ref, tw, arrays=MARBLE_ARRAYS, base=base)


def test_the_kernel_takes_the_impact_steps(monkeypatch):
    """No numpy impact step for the cradle or the marble box; every impact step is numpy's with IMPACTS off."""
    calls = count_numpy_steps(monkeypatch)
    for scene in (examples.newtons_cradle(t_end=2.0, dt=1e-3, **CRADLE), small_box()):
        calls.clear()
        traj = simulate(scene, record_interval=1e-2)
        assert traj.info["engine"] == "numba" and len(traj.events) > 0
        assert calls == []
        monkeypatch.setattr(compiled, "IMPACTS", False)
        try:
            off = simulate(scene, record_interval=1e-2)
        finally:
            monkeypatch.setattr(compiled, "IMPACTS", True)
        assert len(calls) >= impact_steps(off, scene.settings.dt)
        base, tw = numpy_runs(scene, record_interval=1e-2)  # the round-off bound's measure
        assert_follows("events.t", traj.events.t, off.events.t, [t.events.t for t in tw], off.steps,
                       base=base.events.t)


def test_a_full_event_buffer_is_flushed(monkeypatch):
    scene = examples.newtons_cradle(t_end=2.0, dt=1e-3, **CRADLE)
    ref = simulate(scene, record_interval=2e-3)
    calls = count_numpy_steps(monkeypatch)
    monkeypatch.setattr(compiled, "EVENT_CAPACITY", 5)  # the cradle's impact steps have 4 events each
    small = simulate(scene, record_interval=2e-3)
    assert calls == []
    assert small.events.t == ref.events.t and small.events.body1 == ref.events.body1
    np.testing.assert_array_equal(np.array(small.events.impulse), np.array(ref.events.impulse))
    np.testing.assert_array_equal(small.impact_loss, ref.impact_loss)
    np.testing.assert_array_equal(small.orientation, ref.orientation)
    monkeypatch.setattr(compiled, "EVENT_CAPACITY", 3)  # fewer than one step's events: the numpy driver's steps
    tiny = simulate(scene, record_interval=2e-3)
    assert len(calls) >= 1
    base, tw = numpy_runs(scene, record_interval=2e-3)  # the round-off bound's measure
    assert_same_run(tiny, ref, tw, base=base)


def test_friction_goes_to_the_numpy_driver_and_matches(monkeypatch):
    scene = examples.colliding_pendulums(t_end=2.0)
    scene.contact_friction = 0.3
    fast, ref, tw = both(scene, record_interval=5e-3)
    calls = count_numpy_steps(monkeypatch)
    simulate(scene, record_interval=5e-3)
    assert len(calls) >= len(set(ref.events.t)) > 0
    assert_same_run(fast, ref, tw)


def test_a_resting_contact_goes_to_the_numpy_driver_and_matches(monkeypatch):
    """A marble dropped on a floor with e = 0.5 bounces ever lower until it settles (a "rest" event): the settling
    impact is handed to the numpy driver, the bounces before it are the kernel's."""
    scene = small_box(n=1, t_end=0.6)
    floor = StaticWall(kind="plane", name="floor", point=(0.0, 0.0, -0.01), normal=(0.0, 0.0, 1.0))
    scene = replace(scene, gravity=(0.0, 0.0, -9.81), walls=(floor,), restitution=0.5,
                    bodies=[replace(scene.bodies[0], velocity=(0.0, 0.0, 0.0), position=(0.0, 0.0, 0.02))])
    fast, ref, tw = both(scene, record_interval=1e-2)
    assert "rest" in ref.events.kind and ref.events.kind.count("impact") >= 3
    # the bounces before it are the kernel's; from the settling step on every step is the numpy driver's (_hold)
    calls = count_numpy_steps(monkeypatch)
    assert simulate(scene, record_interval=1e-2).events.t == fast.events.t
    t_rest = ref.events.t[ref.events.kind.index("rest")]
    assert calls and min(calls) >= t_rest - 1e-12
    assert_same_run(fast, ref, tw, arrays=("kinetic_energy", "center_of_mass"))
