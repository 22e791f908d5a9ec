"""Independent bodies stepped in threads (engine/backends/groups.py) against the same scene stepped as one.

Oracle: the single-threaded run of the whole scene. Bodies that do not act on each other have, step by step, the
numbers a run of the whole scene gives them, so a split run must match it bit for bit — every recorded array, for
every method, with fixed magnets, a magnet on one body, free and translating bodies in the mix. The callbacks
(a progress bar, Esc or Ctrl-C) stay on the calling thread; a stopped split run keeps the records all groups
reached, which are the whole run's first records; scenes whose bodies do act on each other are not split.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from pem_physics import examples, simulate
from pem_physics.engine.backends import compiled, groups
from pem_physics.errors import ValidationError
from pem_physics.io.output import summary
from pem_physics.model.inertia import MassProperties
from pem_physics.model.scene import Body, Settings

pytestmark = pytest.mark.skipif(not compiled.available(), reason="numba is not installed")

ARRAYS = ("t", "quaternion", "orientation", "omega", "omega_body", "angular_momentum", "angular_momentum_body",
          "torque", "kinetic_energy", "gravity_energy", "field_energy", "dipole_energy", "orthonormality",
          "center_of_mass", "dipole_position", "dipole_moment", "position", "linear_momentum", "velocity")


@pytest.fixture
def split(monkeypatch):
    """Runs split into up to 3 groups whatever their length (and this machine's cores)."""
    monkeypatch.setattr(groups, "MIN_BODY_STEPS", 0)
    monkeypatch.setenv("PEM_THREADS", "3")


def one_thread(scene, monkeypatch, **kw):
    with monkeypatch.context() as m:
        m.setenv("PEM_THREADS", "1")
        return simulate(scene, **kw)


def assert_same_bits(a, b):
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, name
            continue
        x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
        assert x.shape == y.shape and np.array_equal(x.view(np.uint8), y.view(np.uint8)), name
    assert a.steps == b.steps and a.complete == b.complete and a.names == b.names


def mixed_scene(method: str):
    """Four pendulums of the wave (one hinged), the magnetic pendulum over its three fixed magnets (dipoles on one
    moving body), a T-handle spinning free (an asymmetric top: it alone makes splitting4 Suzuki's scheme with two
    free-turn corrections for the whole scene) and a translating free body thrown under gravity: seven moving
    bodies."""
    wave = examples.pendulum_wave(n=4, dt=1e-3, t_end=1.0)
    magnet = examples.three_magnet(t_end=1.0)
    handle = replace(examples.t_handle().bodies[0], position=(0.5, 0.0, 0.0))
    thrown = Body(name="thrown", role="free", translate=True, position=(0.0, 1.0, 0.0), velocity=(1.0, 0.5, 3.0),
                  angular_velocity=(2.0, 0.3, -1.0),
                  mass_properties=MassProperties(0.2, np.zeros(3), np.diag([1e-3, 2e-3, 2.5e-3])))
    hinged = replace(wave.bodies[2], hinge=(1.0, 0.0, 0.0))
    bodies = [wave.bodies[0], magnet.bodies[0], wave.bodies[1], *magnet.bodies[1:], handle, hinged, thrown,
              wave.bodies[3]]
    return replace(wave, name="mixed", bodies=bodies, settings=Settings(dt=1e-3, t_end=1.0, record_interval=0.01,
                                                                          method=method))


@pytest.mark.parametrize("method", compiled.METHODS)
def test_the_pendulum_wave_in_threads_is_the_run_as_one_bit_for_bit(method, split, monkeypatch):
    scene = examples.pendulum_wave(dt=1e-3, t_end=2.0)
    threaded = simulate(scene, method=method)
    assert threaded.info["threads"] == 3
    whole = one_thread(scene, monkeypatch, method=method)
    assert "threads" not in whole.info
    assert summary(threaded)["threads"] == 3 and summary(whole)["threads"] == 1  # summary.json says so
    assert_same_bits(threaded, whole)


@pytest.mark.parametrize("method", ["splitting4", "pem-rk4"])
def test_fixed_magnets_one_magnetic_body_and_free_bodies_in_threads_bit_for_bit(method, split, monkeypatch):
    scene = mixed_scene(method)
    if method == "pem-rk4":  # PEM's schemes do not translate
        scene = replace(scene, bodies=[b for b in scene.bodies if not b.translating])
    threaded = simulate(scene)
    assert threaded.info["threads"] == 3
    assert_same_bits(threaded, one_thread(scene, monkeypatch))


def test_bodies_that_act_on_each_other_or_ensembles_are_not_split(split):
    """Dipoles on two moving bodies (the compass array's needles), contacts (the cradle), an ensemble, drivers whose
    work is summed over the scene (a rotating field on splitting4), a run too short to repay the threads."""
    driven = replace(examples.pendulum_wave(dt=1e-3), rotating_field=examples.compass_rotating().rotating_field)
    for scene in (examples.compass_array(n=3, t_end=0.05), examples.newtons_cradle(), driven):
        assert "threads" not in simulate(scene, t_end=0.05).info, scene.name
    from pem_physics import Ensemble

    wave = examples.pendulum_wave(dt=1e-3, t_end=0.05)
    assert "threads" not in simulate(wave, ensemble=Ensemble(angular_velocity=np.zeros((2, 15, 3)))).info
    groups.MIN_BODY_STEPS = 15 * 51
    assert "threads" not in simulate(wave).info  # 15 bodies × 50 steps
    assert simulate(wave, t_end=0.051).info["threads"] == 3


def test_callbacks_stay_on_the_calling_thread_and_a_stop_keeps_what_all_groups_reached(split, monkeypatch):
    """progress and stop are called from the caller's thread only; stopped after a few polls the run is partial,
    its records a prefix of the whole run's (each at a record mark every group reached), bit for bit."""
    monkeypatch.setattr("pem_physics.engine.simulate.CALL_SECONDS", 0.002)  # calls and polls short: many of them
    scene = examples.pendulum_wave(dt=1e-3, t_end=30.0)
    caller = threading.get_ident()
    seen, fractions = set(), []
    polls = [0]

    def progress(f):
        seen.add(threading.get_ident())
        fractions.append(f)

    def stop():
        seen.add(threading.get_ident())
        polls[0] += 1
        return polls[0] > 5

    part = simulate(scene, method="pem-rk4", progress=progress, stop=stop)
    assert seen == {caller} and fractions == sorted(fractions) and 0 < fractions[-1] < 1
    records = round(scene.settings.t_end / scene.settings.record_interval) + 1  # the whole run's: 6001
    assert not part.complete and part.info["threads"] == 3 and 1 < len(part.t) < records
    whole = one_thread(replace(scene, settings=replace(scene.settings, t_end=part.t[-1])), monkeypatch,
                       method="pem-rk4")
    assert whole.steps == part.steps
    for name in ARRAYS:
        x, y = getattr(part, name), getattr(whole, name)
        assert (x is None and y is None) or np.array_equal(x, y), name


def test_a_failing_group_stops_the_others_and_its_error_is_raised():
    started = threading.Barrier(3)
    stopped = []

    def fails(progress, stop):
        started.wait()
        raise RuntimeError("group 1 failed")

    def waits(progress, stop):
        started.wait()
        while not stop():
            threading.Event().wait(0.001)
        stopped.append(True)
        return "stopped"

    with pytest.raises(RuntimeError, match="group 1 failed"):
        groups.run([waits, fails, waits], None, None, 0.01)
    assert stopped == [True, True]


def test_pem_threads_must_be_a_whole_number(monkeypatch):
    for bad in ("0", "two", "-1", "1.5"):
        monkeypatch.setenv("PEM_THREADS", bad)
        with pytest.raises(ValidationError, match="PEM_THREADS"):
            groups.threads()
    monkeypatch.setenv("PEM_THREADS", "4")
    assert groups.threads() == 4


def longest_pause_while_stepping(steps: int = 500_000) -> tuple[float, float]:
    """(s the kernel took, s of the longest pause of this thread meanwhile): one call of the single-scene kernel
    through ``steps`` pem-rk4 steps of the pendulum wave in a thread, this thread meanwhile in a Python loop. A kernel
    that holds the GIL stops this thread for its whole call."""
    from pem_physics.engine.integrators import make_integrator
    from pem_physics.engine.system import compile_system

    system = compile_system(examples.pendulum_wave(dt=1e-3).checked())
    integ = make_integrator("pem-rk4", system, 1e-3, system.U0[None], system.omega0[None])
    runner = compiled.Runner(integ, 1e-3, 64)
    runner.advance_to([1])  # loaded or compiled before the clock starts
    took = []

    def step():
        t0 = time.perf_counter()
        runner.advance_to([steps])
        took.append(time.perf_counter() - t0)

    worker = threading.Thread(target=step)
    last, pause = time.perf_counter(), 0.0
    worker.start()
    while worker.is_alive():
        now = time.perf_counter()
        pause, last = max(pause, now - last), now
    worker.join()
    assert integ.steps_done == steps
    return took[0], pause


def test_the_single_scene_kernels_release_the_gil(monkeypatch):
    """What lets the groups' threads step at once (the builds made ahead of time: test_aot.py)."""
    from pem_physics.engine.backends import kernels

    monkeypatch.setenv("PEM_AOT", "0")
    assert kernels._member_splitting.targetoptions["nogil"] and kernels._member_pem.targetoptions["nogil"]
    took, pause = longest_pause_while_stepping()
    assert pause < 0.5 * took, (took, pause)
