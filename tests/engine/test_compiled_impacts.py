"""Impact steps taken inside the compiled kernels (impact_kernels._resolve_impacts and the impact search of
kernels._member_splitting) against the numpy contact driver alone (engine/contact/driver.run, compiled.ENABLED = False).

Oracles:
- the numpy-only run: the kernel's impact step is a port of contacts._advance_step (Brent on the same trial
  steps, the same contacts, impulses and sweeps), so the events and records agree within the round-off bound
  of tests/roundoff.py (test_compiled_contacts.assert_same_run);
- that the kernel takes them: contacts._advance_step (the numpy impact step) is called for no step of an
  elastic cradle or marble box, while the kernels' impact search turned off (compiled.IMPACTS = False) calls it
  for every impact step;
- contacts that settle and rest (held after every step, lifting off) are the kernel's where the forces do not
  depend on the positions: the same events, records and energy loss as the numpy driver's, the loop's lift-off
  angle against its closed form; what the kernel does not take (friction, a resting magnet) still goes to the
  numpy driver, and still matches it;
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
from pem_physics.engine.backends import compiled
from pem_physics.engine.contact import driver as contacts
from pem_physics.model.scene import Body, ContactSphere, StaticWall

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


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
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


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
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


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_impacts_with_friction_are_the_kernels_and_match(monkeypatch):
    scene = examples.colliding_pendulums(t_end=2.0)
    scene.contact_friction = 0.3
    fast, ref, tw = both(scene, record_interval=5e-3)
    assert len(ref.events) > 0
    calls = count_numpy_steps(monkeypatch)
    simulate(scene, record_interval=5e-3)
    assert calls == []
    assert_same_run(fast, ref, tw)


def test_the_kernels_friction_impulse_solves_as_numpys_lstsq():
    """impact_kernels._pinv_solve (Jacobi's eigenvectors) against numpy.linalg.lstsq(rcond=1e-12) on symmetric positive
    semi-definite K of rank 1–3: each of two stable solves errs by a modest multiple of ε·(cond·|x| + |d|/σ_min)
    (σ_min the smallest singular value kept: the first term a full-rank solve's, the second the rounding of the
    range's directions, known to ε; measured ≤ 500 of it over 20,000 such K); and impact_kernels._friction_impulse
    against impulses.compute_impulse for sticking and sliding contacts between a free sphere and a wall."""
    from pem_physics.engine import impact_kernels
    from pem_physics.engine.contact.impulses import ContactBody, compute_impulse

    rng = np.random.default_rng(5)
    A, V = np.empty((3, 3)), np.empty((3, 3))
    for trial in range(3000):
        r = trial % 3 + 1
        B = rng.normal(size=(3, r)) * np.exp(2 * rng.normal(size=r))
        K = B @ B.T
        d = rng.normal(size=3)
        A[:] = K
        x = np.array(impact_kernels._pinv_solve(A, V, *d))
        ref = np.linalg.lstsq(K, d, rcond=1e-12)[0]
        s = np.linalg.svd(K, compute_uv=False)
        s = s[s > 1e-12 * s[0]]
        scale = (s[0] / s[-1]) * np.linalg.norm(ref) + np.linalg.norm(d) / s[-1]
        assert np.linalg.norm(x - ref) <= 1e4 * np.finfo(float).eps * scale
    # a free sphere (mass m, radius a, I = 2/5 m a²) hitting a wall with normal n at the point −a n from its centre
    m, a = 0.3, 0.02
    I = 0.4 * m * a * a
    M = compiled.Model(**{f: None for f in compiled.Model._fields})._replace(mass=np.array([m]))
    X, moving = np.zeros((1, 3)), np.array([True])
    bW = np.eye(3)[None] / I
    kw = np.empty((2, 3, 3))
    for mu in (0.05, 0.3, 2.0):  # sliding, and sticking at the larger μ
        for _ in range(20):
            n = rng.normal(size=3)
            n /= np.linalg.norm(n)
            v, w = rng.normal(size=3) - 3 * n, rng.normal(size=3) * 30
            c = -a * n
            vr = v + np.cross(w, c)
            vn = float(n @ vr)
            if vn >= 0:
                continue
            e = float(rng.uniform(0, 1))
            J = np.array(impact_kernels._friction_impulse(M, bW, X, moving, 0, -1, *c, *n, *vr, vn, e, mu, kw)[:3])
            ref = compute_impulse(ContactBody.free(m, np.zeros(3), v, np.eye(3) * I, w), ContactBody.fixed(), c, n,
                                  e, mu)
            np.testing.assert_allclose(J, ref, rtol=0, atol=1e-13 * np.linalg.norm(ref))


def test_a_sliding_ball_rolls_at_five_sevenths_in_the_kernel(monkeypatch):
    """A solid ball set down sliding at v₀ without spin on a floor with friction μ (held there: it rests at once):
    friction slows it by μg and spins it up by 5μg/(2a) until it rolls, at v = 5v₀/7 (t* = 2v₀/(7μg)), then
    rolls on at that speed. The hold's e = 0 sweeps carry the friction (one step's normal impulse Mg·dt bounds
    each friction impulse): the kernel holds it, the numpy driver's run to the round-off bound, the closed form to
    first order in dt (one step of μg·dt)."""
    base = small_box(n=1, t_end=0.3)
    b0 = base.bodies[0]
    a, v0, mu, g, dt = b0.contacts[0].radius, 0.5, 0.2, 9.81, 1e-3
    floor = StaticWall(kind="plane", name="floor", point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0))
    scene = replace(base, bodies=[replace(b0, position=(0.0, 0.0, a), velocity=(v0, 0.0, 0.0))], walls=(floor,),
                    gravity=(0.0, 0.0, -g), restitution=0.5, contact_friction=mu)
    scene = replace(scene, settings=replace(scene.settings, dt=dt))
    fast, ref, tw = both(scene, record_interval=1e-2)
    assert fast.events.kind == ref.events.kind == ["rest"]
    calls = count_numpy_steps(monkeypatch)
    simulate(scene, record_interval=1e-2)
    assert calls == []
    assert_same_run(fast, ref, tw, arrays=("kinetic_energy", "center_of_mass", "position", "omega"))
    t_star = 2 * v0 / (7 * mu * g)
    for k, t in enumerate(fast.t):
        v = fast.velocity[k, 0, 0]
        expect = v0 - mu * g * t if t < t_star else 5 * v0 / 7
        assert abs(v - expect) <= 2 * mu * g * dt, (t, v, expect)
    np.testing.assert_allclose(fast.omega[-1, 0, 1] * a, fast.velocity[-1, 0, 0], rtol=1e-9)  # rolling
    np.testing.assert_array_equal(fast.position[:, 0, 2], a)  # on the floor


def dropped_marble(t_end=0.6):
    """A marble dropped on a floor with e = 0.5: it bounces ever lower until it settles (a "rest" event)."""
    scene = small_box(n=1, t_end=t_end)
    floor = StaticWall(kind="plane", name="floor", point=(0.0, 0.0, -0.01), normal=(0.0, 0.0, 1.0))
    return replace(scene, gravity=(0.0, 0.0, -9.81), walls=(floor,), restitution=0.5,
                   bodies=[replace(scene.bodies[0], velocity=(0.0, 0.0, 0.0), position=(0.0, 0.0, 0.02))])


def test_a_resting_contact_is_settled_and_held_in_the_kernel_and_matches(monkeypatch):
    """The bounces, the settling impact and every step at rest after it are the kernel's (impact_kernels._hold): no
    numpy contact step at all, and the numpy driver's events and records to the round-off bound."""
    scene = dropped_marble()
    fast, ref, tw = both(scene, record_interval=1e-2)
    assert "rest" in ref.events.kind and ref.events.kind.count("impact") >= 3
    assert ref.t[-1] - ref.events.t[ref.events.kind.index("rest")] > 0.2  # long at rest
    calls = count_numpy_steps(monkeypatch)
    again = simulate(scene, record_interval=1e-2)
    assert calls == []
    assert again.events.t == fast.events.t and again.events.kind == ref.events.kind
    assert_same_run(fast, ref, tw, arrays=("kinetic_energy", "center_of_mass"))
    # the record's energy loss: the numpy driver's (impacts, and what holding the marble takes), and every joule
    # booked (kinetic + potential − the initial energy = −loss, to rounding)
    np.testing.assert_allclose(fast.impact_loss, ref.impact_loss, rtol=0, atol=1e-12 * ref.total_energy[0])
    assert fast.energy_balance() < 1e-12


def test_a_ball_leaves_the_inside_of_a_loop_at_the_closed_form_angle_in_the_kernel(monkeypatch):
    """theory §7 (seed): inside a circle of radius R (the path of the ball's centre), g = 1, started at the bottom
    with v0² = 3.5·gR, the ball is held on the wall (it settles at once) and leaves it where
    cos θ = (2gR − v0²)/(3gR) = −1/2. The kernel holds it and logs the lift-off: no numpy step; the numpy driver's
    events and records to the round-off bound, the angle to the projection's first order in dt."""
    Rw, r, g, dt = 2.0, 0.01, 1.0, 2.5e-3
    R = Rw - r
    wall = StaticWall(kind="cylinder", name="loop", point=(0, 0, 0), direction=(0, 1, 0), radius=Rw)
    ball = marble_box(n=1).bodies[0]
    ball = replace(ball, position=(0.0, 0.0, -R), velocity=(np.sqrt(3.5 * g * R), 0.0, 0.0),
                   contacts=(replace(ball.contacts[0], radius=r),))
    scene = replace(marble_box(n=1), bodies=[ball], gravity=(0.0, 0.0, -g), restitution=0.5, walls=(wall,))
    scene = replace(scene, settings=replace(scene.settings, method="splitting2", dt=dt, t_end=2.2))
    fast, ref, tw = both(scene, record_interval=1e-2)
    assert fast.events.kind == ref.events.kind == ["rest", "lift-off"]
    calls = count_numpy_steps(monkeypatch)
    assert simulate(scene, record_interval=1e-2).events.kind == ["rest", "lift-off"] and calls == []
    assert_same_run(fast, ref, tw, arrays=("kinetic_energy", "center_of_mass", "position", "linear_momentum"))
    x = fast.position[np.searchsorted(fast.t, fast.events.t[1]), 0]
    assert abs(-x[2] / R - (-0.5)) < 0.01  # measured 0.0044 (first order in dt: 0.009 at twice the step)
    assert fast.energy_balance() < 1e-12


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_marbles_dropped_on_a_floor_rest_at_once_in_the_kernel_and_match(monkeypatch):
    """Nine marbles apart from each other dropped from different heights onto a floor with e = 0.3: they settle one
    after another and rest together (nine pairs held after each step), all in the kernel."""
    base = small_box(n=1, t_end=0.5)
    b0 = base.bodies[0]
    r = b0.contacts[0].radius
    bodies = [replace(b0, name=f"marble{k}", velocity=(0.0, 0.0, 0.0),
                      position=(4 * r * (k % 3), 4 * r * (k // 3), r + 0.002 * (k + 1))) for k in range(9)]
    floor = StaticWall(kind="plane", name="floor", point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0))
    scene = replace(base, bodies=bodies, walls=(floor,), gravity=(0.0, 0.0, -9.81), restitution=0.3)
    fast, ref, tw = both(scene, record_interval=1e-2)
    assert ref.events.kind.count("rest") == 9 and fast.events.kind == ref.events.kind
    assert_same_run(fast, ref, tw, arrays=MARBLE_ARRAYS + ("position",))
    calls = count_numpy_steps(monkeypatch)
    simulate(scene, record_interval=1e-2)
    assert calls == []
    np.testing.assert_allclose(fast.position[-1, :, 2], r, rtol=0, atol=1e-15)  # held on the floor exactly


def marble_on_a_dome(Rd=0.05, g=9.81, th0=0.3, drop=0.002):
    """(scene, R, start): a marble dropped ``drop`` m onto a fixed sphere of radius Rd, θ₀ off its top, e = 0; R the
    radius of the circle its centre slides on, start its centre (m)."""
    base = small_box(n=1)
    b0 = base.bodies[0]
    R = Rd + b0.contacts[0].radius
    start = np.array([R * np.sin(th0), 0.0, R * np.cos(th0) + drop])
    ball = replace(b0, name="marble", position=tuple(start), velocity=(0.0, 0.0, 0.0))
    dome = Body(name="dome", role="fixed", position=(0.0, 0.0, 0.0), contacts=(ContactSphere((0, 0, 0), Rd),))
    scene = replace(base, bodies=[ball, dome], walls=(), gravity=(0.0, 0.0, -g), restitution=0.0)
    return replace(scene, settings=replace(scene.settings, t_end=0.25, dt=2e-4)), R, start


def test_a_marble_slides_off_a_dome_at_the_closed_form_angle_in_the_kernel():
    """A marble dropped with e = 0 onto a fixed sphere (a sphere pair: the hold pushes one side only) off its top:
    it settles at the impact, keeping its tangential velocity v_t, and slides without friction on the circle of
    radius R (its centre's) until the normal force vanishes: cos θ = (v_t² + 2gR cos θ₀)/(3gR), θ₀ the impact's
    angle. The numpy driver's events and records to the round-off bound; every joule booked."""
    g = 9.81
    scene, R, start = marble_on_a_dome(g=g)
    fast, ref, tw = both(scene, record_interval=1e-3)
    assert fast.events.kind == ref.events.kind == ["rest", "lift-off"]
    assert_same_run(fast, ref, tw, arrays=("kinetic_energy", "center_of_mass", "position"))
    t = fast.events.t[0]  # the impact: free fall until then
    x = start + np.array([0.0, 0.0, -0.5 * g * t * t])
    n = x / np.linalg.norm(x)
    v = np.array([0.0, 0.0, -g * t])
    vt = v - (v @ n) * n
    cos_lift = (vt @ vt + 2 * g * R * n[2]) / (3 * g * R)
    x = np.asarray(fast.events.position[1])[0]  # the marble's centre at the lift-off
    # the lift-off is seen once the gap passes the touch tolerance: a lag of its own besides the hold's first order
    # in dt (measured −0.0027 at this step, −0.0009 and −0.0013 at a half and a quarter of it)
    assert abs(x[2] / np.linalg.norm(x) - cos_lift) < 0.005
    assert fast.energy_balance() < 1e-12


@pytest.mark.parametrize("scene", ["dropped marble", "marble on a dome"])
def test_settling_and_lift_offs_that_do_not_fit_the_event_buffer_are_flushed_first(monkeypatch, scene):
    """With room for one event a call, the call that would log a second one (a settling impact after the bounces, a
    lift-off after the rest) stops with EVENTS_FULL at that step's start, its events flushed, and the next call
    takes the step: the run bit for bit as with the full buffer."""
    scene = dropped_marble(t_end=0.3) if scene == "dropped marble" else marble_on_a_dome(th0=0.7, drop=0.05)[0]
    ref = simulate(scene, record_interval=1e-2)
    assert "rest" in ref.events.kind and len(ref.events) >= 2
    codes = []
    advance_to = compiled.Runner.advance_to

    def recording(self, marks):
        out = advance_to(self, marks)
        codes.append(int(out[-1][0, 0]))
        return out

    monkeypatch.setattr(compiled.Runner, "advance_to", recording)
    monkeypatch.setattr(compiled, "EVENT_CAPACITY", 1)
    small = simulate(scene, record_interval=1e-2)
    assert codes.count(compiled.EVENTS_FULL) >= len(ref.events) - 1
    assert small.events.t == ref.events.t and small.events.kind == ref.events.kind
    np.testing.assert_array_equal(small.impact_loss, ref.impact_loss)
    np.testing.assert_array_equal(small.position, ref.position)


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_resting_magnets_are_held_in_the_kernel_and_match(monkeypatch):
    """The magnetic marbles snap together and rest on each other (a sphere pair held closed against the dipoles'
    attraction): the hold pushes them apart by the overlap, the dipole forces are evaluated again where the push
    left them (a step of length 0 on the kernels' one call site), the energy the hold takes is the kinetic lost plus
    the trapezoid ½(F_before + F_after)·Δx. No numpy contact step; the numpy driver's events, records and energy
    loss to the round-off bound."""
    scene = examples.build("magnetic-marbles")
    fast, ref, tw = both(scene)
    assert "rest" in ref.events.kind and fast.events.kind == ref.events.kind
    assert ref.t[-1] - ref.events.t[ref.events.kind.index("rest")] > 0.3 * ref.t[-1]  # long at rest
    calls = count_numpy_steps(monkeypatch)
    simulate(scene)
    assert calls == []
    assert_same_run(fast, ref, tw, arrays=("kinetic_energy", "center_of_mass", "position", "orientation"))
    scale = np.max(np.abs(ref.total_energy))
    np.testing.assert_allclose(fast.impact_loss, ref.impact_loss, rtol=0, atol=1e-9 * scale)
    # the balance is the snap's integration error (2.3e-9 of the energy), the numpy run's to its twins' spread:
    # nothing of the hold's is left unbooked
    spread = max(abs(t.energy_balance() - ref.energy_balance()) for t in tw)
    assert abs(fast.energy_balance() - ref.energy_balance()) <= 10 * spread


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_a_magnet_coming_down_lifts_a_resting_ball_in_the_kernel(monkeypatch):
    """A magnet on a ball resting on the floor; another, coaxial and head to tail, is driven down at constant speed
    (the drivers do work): the kernels hold the ball — the forces and the drivers' power evaluated again after each
    push — until the attraction 6kp₁p₂/r⁴ exceeds Mg and it lifts off (to within a step). No numpy contact step;
    the numpy driver's events, records, energy loss and drivers' work to the round-off bound."""
    from pem_physics.model.scene import ConstantVelocity, Dipole, Scene, Settings

    M, g, R, p1, p2, v, dt, k = 0.004, 9.81, 0.005, 0.02, 0.05, 0.05, 1e-3, 1e-7
    b0 = small_box(n=1).bodies[0]
    ball = replace(b0, position=(0.0, 0.0, R), velocity=(0.0, 0.0, 0.0), dipoles=(Dipole((0, 0, 0), (0, 0, p1)),))
    top = Body(name="top", role="driven", position=(0, 0, 0.1), motion=ConstantVelocity((0, 0, -v)),
               dipoles=(Dipole((0, 0, 0), (0, 0, p2)),))
    floor = StaticWall(kind="plane", name="floor", normal=(0, 0, 1))
    r_lift = (6 * k * p1 * p2 / (M * g)) ** 0.25
    t_lift = (0.1 - R - r_lift) / v
    scene = Scene(bodies=[ball, top], gravity=(0, 0, -g), restitution=0.5, walls=(floor,),
                  settings=Settings(dt=dt, t_end=t_lift + 0.02, record_interval=5 * dt))
    fast, ref, tw = both(scene)
    assert fast.events.kind == ref.events.kind == ["rest", "lift-off"] and fast.driver_work is not None
    assert 0 <= fast.events.t[1] - t_lift <= 2 * dt
    calls = count_numpy_steps(monkeypatch)
    simulate(scene)
    assert calls == []
    assert_same_run(fast, ref, tw, arrays=("kinetic_energy", "center_of_mass", "position"))
    assert_follows("driver_work", fast.driver_work, ref.driver_work, [t.driver_work for t in tw], ref.steps)
