"""Free flight in merged steps on the compiled contact engine (broad_kernels._horizon, bounds.FlightBounds).

Where gravity is the only force, the kernels bound how far every contact sphere can move and how fast
(FlightBounds: |L| grows by the torque, the torque by how far the centre of mass turns) and run the steps that
no contact check could stop merged and unchecked, as a scene without contacts runs. Oracles:
- the checks themselves, step by step: along trajectories of the numpy integrator taken one step at a time
  (colliding pendulums on splitting4 and on splitting2, a marble thrown under gravity at a wall and a floor, an
  off-centre box swinging and spinning at a wall), for every state and the span _horizon certifies from it, no
  step of that span ends with a gap below its limit or passes the numpy driver's grazing filter
  (contacts._dips: min gap + tol < 4/27·h·(speed bounds at both ends)·ρ) — where the bodies pass through each
  other (no impacts in these runs) the spans must shrink to nothing in time;
- a closed form: a marble flying at v straight at a plane on splitting2 is at g₀ − v·k·h after k steps, exactly
  as the bound assumes, so the span is every step before the first one the filter would flag;
- the one-step-a-call run (compiled.MERGE off): the same events, and records within the round-off bound of
  tests/roundoff.py; and the merged run took most of its steps merged (ContactArrays.merged).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_compiled_contacts import assert_same_run, numpy_runs
from test_contact_sim import CRADLE

from pem_physics import examples, simulate
from pem_physics.engine.backends import compiled
from pem_physics.engine.contact import bounds
from pem_physics.engine.contact import driver as contacts
from pem_physics.engine.integrators import make_integrator
from pem_physics.engine.system import compile_system
from pem_physics.model.inertia import Cuboid, Sphere
from pem_physics.model.scene import Body, ContactSphere, Scene, Settings, StaticWall

pytestmark = pytest.mark.skipif(not compiled.available(), reason="numba is not installed")


def kernels():
    from pem_physics.engine import broad_kernels as k

    return k


def setup(scene):
    """(ContactModel, integrator, ContactArrays, split (3,)) of ``scene`` at its start, as the compiled runner
    makes them."""
    scene = scene.checked()
    system = compile_system(scene)
    model = contacts.ContactModel(scene, system)
    integ = make_integrator(scene.settings.method, system, scene.settings.dt, system.U0[None], system.omega0[None])
    integ.contacts = model
    model.dt = integ.dt
    B = len(system.names)
    C = compiled.contact_arrays(model, system.axes, integ.orientation()[0], np.broadcast_to(integ.J, (1, B))[0])
    d, k = np.abs(np.asarray(integ.drifts, float)), np.abs(np.asarray(integ.kicks, float))
    split = np.array([d.sum(), k.sum(), sum(d[i] * k[:i + 1].sum() for i in range(len(d)))])
    return model, integ, C, split


def horizon(C, split, g, state, dt):
    """broad_kernels._horizon from ``state`` (gaps g), up to kernel_flags.SPAN steps of length dt."""
    from pem_physics.engine.kernel_flags import SPAN

    k = kernels()
    return int(k._horizon(C.owner, C.spheres, C.pair, C.inv_mass, C.lever, C.sigma, C.tol, C.limit, C.force, C.lam2,
                          C.axial, C.graze, g, state.L[0].copy(), state.P[0].copy(), state.T[0].copy(), dt, split,
                          SPAN, np.empty((len(state.L[0]), 6))))


def flagged(model, C, prev, cur, g0, g1):
    """Whether the step from ``prev`` to ``cur`` (gaps g0, g1) would stop a one-step-a-call run: a gap below its
    limit, or a pair the grazing filter keeps (contacts._dips' cheap bound, which the kernels' _graze_near
    applies too)."""
    if (g1 < C.limit).any():
        return True
    h = cur.t - prev.t
    sb = model.speed_bounds(contacts._pose(prev)[0], prev.J[0])
    bound = contacts._pair_speeds(model, sb, prev, cur) * (2.0 * (4.0 / 27.0) * h)
    tol = model.gap_tol
    m = np.minimum(g0, g1)
    s_eff = np.where(sb.sigma > 0, sb.sigma, 1e300)
    rho = (s_eff + np.maximum(g0, g1)) / (s_eff + 0.5 * (np.maximum(m, -tol) - tol))
    near = (m + tol < bound * rho) & (g0 >= 0) & (g1 >= -tol)
    return bool(near.any())


def check_spans(scene, steps):
    """Walk ``steps`` steps of the numpy integrator one at a time (no impacts: bodies pass through each other);
    for every state the span _horizon certifies must hold no flagged step. Returns (the spans, the steps
    flagged)."""
    model, integ, C, split = setup(scene)
    assert C.merge
    dt = integ.dt
    states = [contacts._state(integ, 0.0)]
    for _ in range(steps):
        states.append(contacts._step(states[-1], dt))
    gaps = [model.gaps(*contacts._pose(s)) for s in states]
    bad = [flagged(model, C, states[j], states[j + 1], gaps[j], gaps[j + 1]) for j in range(steps)]
    spans = []
    for j in range(steps):
        n = horizon(C, split, gaps[j], states[j], dt)
        spans.append(n)
        if n > 1:
            end = min(j + n, steps)
            assert not any(bad[j:end]), f"state {j}: its span of {n} steps holds a flagged step"
    return np.array(spans), np.array(bad)


@pytest.mark.parametrize("method", ["splitting4", "splitting2"])
def test_colliding_pendulums_spans_hold_no_checked_step(method):
    scene = examples.colliding_pendulums()
    scene = replace(scene, settings=replace(scene.settings, method=method))
    spans, bad = check_spans(scene, 1200)
    # the bobs pass through each other (no impacts here): steps flagged, and spans shrinking to one step before them
    assert bad.sum() >= 20
    first = int(np.argmax(bad))
    assert spans[first - 1] == 1 and spans[:first].max() >= 16


def ball(name, position, velocity, radius=0.01, mass=0.03):
    return Body(name=name, role="free", translate=True, position=position, velocity=velocity,
                shapes=(Sphere(radius=radius, mass=mass),), contacts=(ContactSphere((0.0, 0.0, 0.0), radius),))


@pytest.mark.parametrize("method", ["splitting4", "splitting2"])
@pytest.mark.parametrize("velocity", [(1.2, 0.05, 0.3), (0.0, 0.0, 0.0)], ids=["thrown", "dropped"])
def test_a_marble_under_gravity_spans_hold_no_checked_step(method, velocity):
    # thrown at a wall it passes through, or dropped from rest (a span then rests on gravity's term alone) through
    # a floor
    wall = StaticWall(kind="plane", name="wall", point=(0.3, 0.0, 0.0), normal=(-1.0, 0.0, 0.0))
    floor = StaticWall(kind="plane", name="floor", point=(0.0, 0.0, -0.2), normal=(0.0, 0.0, 1.0))
    scene = Scene(name="throw", bodies=[ball("m", (0.0, 0.0, 0.0), velocity)], gravity=(0.0, 0.0, -9.81),
                  walls=(wall, floor), settings=Settings(method=method, dt=2e-3, t_end=1.0))
    spans, bad = check_spans(scene, 300)
    assert bad.sum() >= 4 and spans.max() >= 16


@pytest.mark.parametrize("method", ["splitting4", "splitting2"])
def test_a_falling_inverted_pendulum_spans_hold_no_checked_step(method):
    # balanced 0.01 rad off the top and at rest: its gravity torque grows e^(λt)-fast as it falls (FlightBounds.lam2,
    # λ² = g/l here) onto a wall beside it
    length = 0.3
    body = Body(name="bob", role="pendulum", position=(0.0, 0.0, 0.0),
                orientation=((np.cos(0.01), 0.0, -np.sin(0.01)), (0.0, 1.0, 0.0), (np.sin(0.01), 0.0, np.cos(0.01))),
                shapes=(Sphere(radius=0.01, mass=0.1, center=(0.0, 0.0, length)),),
                contacts=(ContactSphere((0.0, 0.0, length), 0.01),))
    wall = StaticWall(kind="plane", name="wall", point=(0.2, 0.0, 0.0), normal=(-1.0, 0.0, 0.0))
    scene = Scene(name="inverted", bodies=[body], gravity=(0.0, 0.0, -9.81), walls=(wall,),
                  settings=Settings(method=method, dt=1e-3, t_end=2.0))
    spans, bad = check_spans(scene, 1200)
    assert bad.sum() >= 4 and spans.max() >= 64


@pytest.mark.parametrize("method", ["splitting4", "splitting2"])
def test_a_hinged_pendulum_spans_hold_no_checked_step(method):
    # a bob on a rod hinged about y, swinging through a wall (axial: its drifts are turns about the hinge)
    body = Body(name="bob", role="pendulum", position=(0.0, 0.0, 0.5), hinge=(0.0, 1.0, 0.0),
                orientation=((np.cos(0.8), 0.0, np.sin(0.8)), (0.0, 1.0, 0.0), (-np.sin(0.8), 0.0, np.cos(0.8))),
                shapes=(Sphere(radius=0.02, mass=0.2, center=(0.01, 0.0, -0.4)),),
                contacts=(ContactSphere((0.01, 0.0, -0.4), 0.02),))
    wall = StaticWall(kind="plane", name="wall", point=(0.1, 0.0, 0.0), normal=(-1.0, 0.0, 0.0))
    scene = Scene(name="hinged", bodies=[body], gravity=(0.0, 0.0, -9.81), walls=(wall,),
                  settings=Settings(method=method, dt=1e-3, t_end=2.0))
    model, _, C, _ = setup(scene)
    assert C.axial.all()
    spans, bad = check_spans(scene, 1500)
    assert bad.sum() >= 10 and spans.max() >= 16


@pytest.mark.parametrize("method", ["splitting4", "splitting2"])
def test_an_off_axis_sphere_on_a_spinning_symmetric_pendulum_spans_hold_no_checked_step(method):
    # a symmetric pendulum (a rod and bob on its axis) spinning fast about its axis as it swings, with a contact
    # sphere off the axis: the spin about the axis moves it (not axial; its bound keeps Σ|dᵢ|), beside an axial one
    # on the axis
    body = Body(name="top", role="pendulum", position=(0.0, 0.0, 0.5), angular_velocity=(0.5, 2.0, 40.0),
                shapes=(Sphere(radius=0.03, mass=0.3, center=(0.0, 0.0, -0.35)),),
                contacts=(ContactSphere((0.03, 0.0, -0.35), 0.01), ContactSphere((0.0, 0.0, -0.38), 0.01)))
    wall = StaticWall(kind="plane", name="wall", point=(0.06, 0.0, 0.0), normal=(-1.0, 0.0, 0.0))
    scene = Scene(name="spinner", bodies=[body], gravity=(0.0, 0.0, -9.81), walls=(wall,),
                  settings=Settings(method=method, dt=1e-3, t_end=2.0))
    model, _, C, _ = setup(scene)
    assert list(C.axial) == [False, True]
    spans, bad = check_spans(scene, 1500)
    assert bad.sum() >= 10 and spans.max() >= 8


def test_which_spheres_are_axial():
    """FlightBounds.axial: hinged bodies, bobs on a symmetric pendulum's axis, any point of a ball (a spherical
    top); not a sphere off a symmetric body's axis, nor one on an asymmetric body (the box)."""
    assert setup(examples.colliding_pendulums())[2].axial.all()
    assert setup(examples.newtons_cradle())[2].axial.all()
    box = Body(name="box", role="pendulum", position=(0.0, 0.0, 0.5),
               shapes=(Cuboid((0.02, 0.05, 0.1), mass=0.5, center=(0.0, 0.0, -0.3)),),
               contacts=(ContactSphere((0.0, 0.0, -0.4), 0.02),))
    marble = ball("m", (0.5, 0.0, 0.0), (0.0, 0.0, 0.0))
    off = replace(marble, name="off", position=(1.0, 0.0, 0.0), contacts=(ContactSphere((0.004, 0.0, 0.0), 0.005),))
    scene = Scene(name="mix", bodies=[box, marble, off], gravity=(0.0, 0.0, -9.81),
                  walls=(StaticWall(kind="plane", name="floor", point=(0.0, 0.0, -1.0), normal=(0.0, 0.0, 1.0)),))
    assert list(setup(scene)[2].axial) == [False, True, True]


def test_the_lever_helpers_take_numpys_bits_and_the_closed_form():
    """The set-up's [c]× M and ‖·‖₂ (bounds._cross_columns, _norm2: numpy's operations without its per-call axis
    handling) give np.cross's and np.linalg.norm's bits; a bob at l on the axis of a body with moments j, j, j_a
    has the lever l/j (|ω × r| = l·|L_⊥|/j), whatever the tiny j_a."""
    rng = np.random.default_rng(7)
    for _ in range(500):
        c, M = rng.normal(size=3) * 10.0 ** rng.integers(-3, 2), rng.normal(size=(3, 3)) * 10.0 ** rng.integers(-3, 4)
        ref = np.cross(c, M.T).T
        assert np.array_equal(bounds._cross_columns(c, M), ref)
        assert bounds._norm2(ref) == float(np.linalg.norm(ref, 2))
    l, j, ja = 0.3, 4.5e-3, 8e-6
    lever = bounds._norm2(bounds._cross_columns(np.array([0.0, 0.0, -l]), np.diag([1 / j, 1 / j, 1 / ja])))
    assert lever == pytest.approx(l / j, rel=1e-15)  # the SVD's few ulps


@pytest.mark.parametrize("method", ["splitting4", "splitting2"])
def test_a_swinging_spinning_box_spans_hold_no_checked_step(method):
    # an off-centre box on a pivot, spinning about a tilted axis as it swings (the gravity torque turns with it:
    # FlightBounds.lam2), its corner sphere sweeping through a wall and a sphere obstacle
    body = Body(name="box", role="pendulum", position=(0.0, 0.0, 0.5), angular_velocity=(1.5, 4.0, 9.0),
                shapes=(Cuboid((0.02, 0.05, 0.1), mass=0.5, center=(0.02, 0.01, -0.3)),),
                contacts=(ContactSphere((0.04, 0.06, -0.4), 0.02),))
    wall = StaticWall(kind="plane", name="wall", point=(0.12, 0.0, 0.0), normal=(-1.0, 0.0, 0.0))
    post = StaticWall(kind="sphere", name="post", center=(-0.1, 0.1, 0.15), radius=0.03, inside=False)
    scene = Scene(name="box", bodies=[body], gravity=(0.0, 0.0, -9.81), walls=(wall, post),
                  settings=Settings(method=method, dt=1e-3, t_end=2.0))
    spans, bad = check_spans(scene, 1500)
    assert bad.sum() >= 10 and spans.max() >= 16


@pytest.mark.parametrize("gap_steps, expected", [(10.3, 9), (8.7, 8), (8.5, 7), (2.4, 1), (600.0, 599)])
def test_a_straight_flight_spans_what_the_checks_allow(gap_steps, expected):
    # a marble at v along −x toward a plane, no gravity, splitting2: after k steps its gap is g₀ − v·k·h exactly,
    # and the filter flags step k first where g₀ − v·k·h + tol < 4/27·h·2v·2 (speed bound v at both ends, ρ = 1)
    v, h, r = 0.5, 1e-3, 0.01
    g0 = gap_steps * v * h
    wall = StaticWall(kind="plane", name="wall", point=(-(g0 + r), 0.0, 0.0), normal=(1.0, 0.0, 0.0))
    scene = Scene(name="line", bodies=[ball("m", (0.0, 0.0, 0.0), (-v, 0.0, 0.0), radius=r)],
                  gravity=(0.0, 0.0, 0.0), walls=(wall,), settings=Settings(method="splitting2", dt=h, t_end=1.0))
    model, integ, C, split = setup(scene)
    state = contacts._state(integ, 0.0)
    g = model.gaps(*contacts._pose(state))
    first = min(k for k in range(1, 2000) if g0 - v * k * h + model.gap_tol[0] < 16.0 / 27.0 * v * h)
    assert expected == max(1, first - 1)  # every step before the first flagged one, to the step
    assert horizon(C, split, g, state, h) == expected


def captured(monkeypatch) -> list:
    """The ContactArrays of every compiled contact run from here on."""
    made = []
    original = compiled.contact_arrays

    def keep(*args, **kw):
        made.append(original(*args, **kw))
        return made[-1]

    monkeypatch.setattr(compiled, "contact_arrays", keep)
    return made


@pytest.mark.parametrize("scene", [
    examples.colliding_pendulums(t_end=3.0),
    examples.newtons_cradle(t_end=2.0, dt=1e-3, **CRADLE),
], ids=["colliding-pendulums", "cradle"])
@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_merged_runs_match_the_one_step_a_call_run(monkeypatch, scene):
    arrays = captured(monkeypatch)
    merged = simulate(scene, record_interval=1e-2)
    assert merged.info["engine"] == "numba" and len(merged.events) > 0
    assert arrays[-1].merge and arrays[-1].merged[0] > 0.5 * merged.steps
    monkeypatch.setattr(compiled, "MERGE", False)
    single = simulate(scene, record_interval=1e-2)
    assert arrays[-1].merged[0] == 0
    base, tw = numpy_runs(scene, record_interval=1e-2)  # the round-off bound's measure
    assert_same_run(merged, single, tw, base=base)


def test_scenes_with_dipoles_are_not_merged(monkeypatch):
    # dipole forces grow without bound as magnets close in: no flight bound, every step checked
    scene = examples.colliding_pendulums(t_end=0.5)
    from pem_physics.model.scene import Dipole

    bodies = [replace(b, dipoles=(Dipole(position=(0.0, 0.0, -0.5), moment=(0.0, 0.0, 0.01)),))
              for b in scene.bodies]
    arrays = captured(monkeypatch)
    traj = simulate(replace(scene, bodies=bodies), record_interval=1e-2)
    assert traj.info["engine"] == "numba"
    assert not arrays[-1].merge and arrays[-1].merged[0] == 0


def test_a_ball_at_rest_skips_its_still_steps_and_matches(monkeypatch):
    """A dropped marble bounces, settles and rests: once a held step leaves its state as it was (bit for bit: the
    premise, checked on the one-step-a-call run), the kernels skip to the next mark — the same records as every
    step taken, and the same run as the numpy driver's within the round-off bound."""
    from test_compiled_impacts import dropped_marble

    scene = dropped_marble(t_end=1.0)
    monkeypatch.setattr(compiled, "MERGE", False)
    single = simulate(scene, record_interval=2e-3)
    rest = single.events.t[single.events.kind.index("rest")]
    after = single.t > rest + 2e-3
    for name in ("center_of_mass", "orientation", "linear_momentum", "impact_loss"):
        a = getattr(single, name)[after]
        assert (a == a[0]).all(), name  # a standstill, bit for bit
    monkeypatch.setattr(compiled, "MERGE", True)
    arrays = captured(monkeypatch)
    still = simulate(scene, record_interval=2e-3)
    assert still.events.kind == single.events.kind and "rest" in still.events.kind
    assert arrays[-1].merged[0] >= 0.9 * (still.t[-1] - rest) / scene.settings.dt - still.t[after].size
    base, tw = numpy_runs(scene, record_interval=2e-3)
    assert_same_run(still, single, tw, arrays=("orientation", "center_of_mass", "linear_momentum"), base=base)
    for name in ("center_of_mass", "orientation", "linear_momentum", "impact_loss"):
        a = getattr(still, name)[still.t > rest + 2e-3]
        assert (a == a[0]).all(), name


def test_a_standstill_of_period_two_gives_each_mark_its_state(monkeypatch):
    """The bouncing ball at rest on its floor at dt = 1/2400: its held steps leave the momentum at 0 and −1 ulp of
    0.1 kg·m/s by turns (the premise, on the one-step-a-call run); with marks 3 steps apart each mark has the other
    of the two, and the kernels that skip the still steps must give them so."""
    ball = examples.bouncing_ball()
    ball = replace(ball, settings=replace(ball.settings, dt=1 / 2400))
    runs = {}
    for merge in (False, True):
        monkeypatch.setattr(compiled, "MERGE", merge)
        arrays = captured(monkeypatch)
        traj = simulate(ball, t_end=4.5, record_interval=3 / 2400)
        rest = traj.events.t[traj.events.kind.index("rest")]
        after = traj.t > rest + 0.01
        p = traj.linear_momentum[after, 0, 2]
        assert len(np.unique(p)) == 2 and (p[1:] != p[:-1]).all()  # two states, the other one at every mark
        assert (traj.center_of_mass[after] == traj.center_of_mass[after][0]).all()
        runs[merge] = (traj, arrays[-1].merged[0])
    (single, none), (skipping, skipped) = runs[False], runs[True]
    assert none == 0 and skipped > 0.9 * (4.5 - 4.1) * 2400
    assert skipping.events.kind == single.events.kind


@pytest.mark.parametrize("scene", [
    examples.colliding_pendulums(t_end=3.0),
    examples.newtons_cradle(t_end=1.0, dt=1e-3, **CRADLE),
], ids=["colliding-pendulums", "cradle"])
def test_the_calls_wall_time_sizing_changes_no_number(monkeypatch, scene):
    """The contact driver sizes its kernel calls by wall time (CALL_SECONDS), and a merged span's chunks merge their
    kicks (rounding): the spans carry over from call to call (ContactArrays.span) and the calls and chunks end on
    one grid, so a run whose calls are each one grid piece long and one whose calls run as long as they may give the
    same numbers, bit for bit (records 13 steps apart: off the grid of 64)."""
    from pem_physics.engine import simulate as sim

    runs = []
    for seconds in (1e-9, 1e9):
        monkeypatch.setattr(sim, "CALL_SECONDS", seconds)
        runs.append(simulate(scene, record_interval=13 * scene.settings.dt))
    short, long_ = runs
    assert short.events.t == long_.events.t and short.events.kind == long_.events.kind
    for name in ("orientation", "angular_momentum", "position", "linear_momentum", "impact_loss"):
        assert np.array_equal(getattr(short, name), getattr(long_, name)), name
