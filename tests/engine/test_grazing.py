"""Grazing contacts: surfaces that overlap only in the middle of a step, both step ends apart (engine/contact/driver.py,
``_dips``, and the compiled kernels' copy of its check, ``broad_kernels._grazing``, which hands such a step to that
driver). Every test runs twice through simulate(): on the numpy contact driver (compiled.ENABLED = False) and on
the compiled engine (the kernels step between impacts).

Oracles, derived here independently of the engine:
- a sphere flying on the straight line x(t) = x₀ + v t at impact parameter b past a sphere (fixed, or free and at
  rest) touches it when |x(t)| = s = r_a + r_b: t = (−x₀ − √(s² − b²))/v, normal n = (−√(s² − b²), b, 0)/s; across
  n nothing changes, along n momentum is conserved and the relative normal speed is reversed times e
  (a fixed target: infinite mass, u' = u − (1 + e)(u·n)n);
- a ball thrown up at u under gravity g reaches z(t) = u t − g t²/2 = H − r (a ceiling at H) at
  t = (u − √(u² − 2g(H − r)))/g, going up at √(u² − 2g(H − r)), and leaves with e times that downwards;
- a ball on the straight line p(t) = e + b (x̂ + ŷ)/√2 + v t (x̂ − ŷ)/√2 passes the edge e of a box (outside) at
  distance √(b² + v² t²) while it faces the edge (|v t| < b): it touches at t = −√(r² − b²)/v if that is in
  the edge's region (b > r/√2), normal from the edge to the centre.
In every case the step is chosen so the overlap lies strictly inside one step: the straight-line (or parabola)
gaps at every grid time are positive, so a driver that only looks at the step ends sees nothing — shown by the
same run with the dip search switched off.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from pem_physics import simulate
from pem_physics.engine import integrators
from pem_physics.engine.backends import compiled
from pem_physics.engine.contact import driver as contacts
from pem_physics.model.inertia import Sphere
from pem_physics.model.scene import Body, ContactSphere, Scene, Settings, StaticWall


@pytest.fixture(autouse=True, params=["numpy", "numba"])
def engine(request, monkeypatch):
    """The engine every test of this module runs on: the numpy contact driver alone, or the compiled kernels
    between impacts (which must find the grazing step themselves: they hand back only steps they flag)."""
    if request.param == "numba" and not compiled.available():
        pytest.skip("numba is not installed")
    monkeypatch.setattr(compiled, "ENABLED", request.param == "numba")
    return request.param


def no_dips(monkeypatch):
    """The old drivers: gaps only at the step ends (numpy driver and kernels)."""
    monkeypatch.setattr(contacts, "_dips", lambda *a, **k: None)
    monkeypatch.setattr(compiled, "GRAZING", False)


def ball(name, position, velocity, radius, mass=0.1):
    return Body(name=name, role="free", translate=True, position=position, velocity=velocity,
                shapes=(Sphere(radius=radius, mass=mass),), contacts=(ContactSphere((0.0, 0.0, 0.0), radius),))


def post(radius):
    return Body(name="post", role="fixed", position=(0.0, 0.0, 0.0), contacts=(ContactSphere((0.0, 0.0, 0.0), radius),))


def fly_by(ra, rb, b, v, dt, t_star, steps, e=1.0, target_mass=None):
    """A ball of radius ra at y = b moving along +x at v, its closest approach to the origin at t_star; the target
    (radius rb, at the origin) fixed, or free at rest with ``target_mass``."""
    target = post(rb) if target_mass is None else ball("post", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), rb, target_mass)
    return Scene(bodies=[ball("ball", (-v * t_star, b, 0.0), (v, 0.0, 0.0), ra), target], gravity=(0, 0, 0),
                 restitution=e, settings=Settings(dt=dt, t_end=steps * dt))


def straight_line_gaps(ra, rb, b, v, t_star, t):
    return np.hypot(v * (t - t_star), b) - ra - rb


def flyby_oracle(ra, rb, b, v, t_star, e=1.0, m1=0.1, m2=None):
    """(impact time, n, outgoing velocities of the ball and the target)."""
    s = ra + rb
    w = np.sqrt(s * s - b * b)
    t_hit = t_star - w / v
    n = np.array([-w, b, 0.0]) / s
    u = np.array([v, 0.0, 0.0])
    un = u @ n
    if m2 is None:
        return t_hit, n, u - (1 + e) * un * n, np.zeros(3)
    w1n = (m1 - e * m2) * un / (m1 + m2)
    w2n = (1 + e) * m1 * un / (m1 + m2)
    return t_hit, n, u + (w1n - un) * n, w2n * n


# ---------------------------------------------------------------------------- (a) a sphere flying past a sphere

@pytest.mark.parametrize("e", [1.0, 0.7])
def test_sphere_grazing_a_fixed_sphere_mid_step(e, monkeypatch, engine):
    ra, rb, v, dt = 0.01, 0.02, 2.0, 0.05
    s = ra + rb
    b = 0.97 * s  # overlap while |x| < √(s² − b²) = 7.3 mm, i.e. for 7.3 ms of the 50 ms step
    t_star = 2.4 * dt  # closest approach 40 % into the third step
    grid = np.arange(7) * dt
    g_grid = straight_line_gaps(ra, rb, b, v, t_star, grid)
    assert np.all(g_grid > 0.02 * s), g_grid  # every step end well apart: the overlap is inside one step
    scene = fly_by(ra, rb, b, v, dt, t_star, 6, e)
    traj = simulate(scene)
    assert traj.info["engine"] == engine
    t_hit, n, want, _ = flyby_oracle(ra, rb, b, v, t_star, e)
    ev = traj.events
    assert len(ev) == 1 and list(ev.kind) == ["impact"] and (ev.body1[0], ev.body2[0]) == ("ball", "post")
    assert 2 * dt < ev.t[0] < 3 * dt
    assert abs(ev.t[0] - t_hit) <= 1e-9 * t_hit, ev.t[0] - t_hit
    np.testing.assert_allclose(ev.normal[0], n, atol=1e-9)
    np.testing.assert_allclose(traj.velocity[-1, 0], want, rtol=0, atol=1e-9 * v)
    # after the impact it flies straight from the contact point: it never comes back to the post
    x_hit = np.array([-v * (t_star - t_hit), b, 0.0])
    after = traj.t > t_hit
    np.testing.assert_allclose(traj.position[after, 0], x_hit + (traj.t[after, None] - t_hit) * want,
                               rtol=0, atol=1e-9 * s)
    assert np.all(np.linalg.norm(traj.position[:, 0], axis=1) >= s * (1 - 1e-12))
    assert ev.energy_loss == pytest.approx(0.5 * 0.1 * (v * v - want @ want), rel=1e-9, abs=1e-15)

    if engine == "numba":  # the driver sees only the steps the kernels hand back: their own check finds this one
        monkeypatch.setattr(compiled, "GRAZING", False)
        assert len(simulate(scene).events) == 0
    # the same run with gaps only at the step ends: no event, the ball flies straight through the post
    no_dips(monkeypatch)
    old = simulate(scene)
    assert len(old.events) == 0
    np.testing.assert_allclose(old.velocity[-1, 0], [v, 0.0, 0.0], rtol=0, atol=1e-15)


def test_sphere_grazing_a_free_sphere_far_inside_a_step(engine):
    """The step is 10× the time the overlap lasts and 5× the time the ball takes to cross the contact distance:
    the dip of the gap is far too narrow for a cubic in g, but the squared centre distance is exactly quadratic."""
    ra, rb, v, m2 = 0.01, 0.015, 3.0, 0.25
    s = ra + rb
    b = 0.6 * s
    w = np.sqrt(s * s - b * b)
    dt = 10 * 2 * w / v
    t_star = 1.55 * dt
    assert np.all(straight_line_gaps(ra, rb, b, v, t_star, np.arange(4) * dt) > s)
    traj = simulate(fly_by(ra, rb, b, v, dt, t_star, 3, 0.8, target_mass=m2))
    assert traj.info["engine"] == engine
    t_hit, n, want1, want2 = flyby_oracle(ra, rb, b, v, t_star, 0.8, 0.1, m2)
    assert len(traj.events) == 1
    assert abs(traj.events.t[0] - t_hit) <= 1e-9 * t_hit
    np.testing.assert_allclose(traj.velocity[-1, 0], want1, rtol=0, atol=1e-9 * v)
    np.testing.assert_allclose(traj.velocity[-1, 1], want2, rtol=0, atol=1e-9 * v)
    np.testing.assert_allclose(traj.total_linear_momentum[-1], [0.1 * v, 0, 0], rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------- (b) walls

@pytest.mark.parametrize("e", [1.0, 0.5])
def test_apex_pokes_through_a_ceiling_mid_step(e, monkeypatch, engine):
    """Thrown up at u, the ball's apex u²/2g is 1 mm above the height H − r at which it touches the ceiling;
    that lasts ±√(2·1mm/g) = ±14 ms about the apex at u/g = 0.3 s, in the middle of the step [0.28, 0.32] s."""
    g, r, dt = 9.81, 0.01, 0.04
    u = 0.3 * g
    H = u * u / (2 * g) - 1e-3 + r
    grid = np.arange(16) * dt
    z_grid = u * grid - 0.5 * g * grid**2
    assert np.all(H - r - z_grid > 1e-4), (H - r - z_grid).min()  # apart at every step end
    scene = Scene(bodies=[ball("ball", (0.0, 0.0, 0.0), (0.4, 0.0, u), r)], gravity=(0, 0, -g), restitution=e,
                  walls=(StaticWall(kind="plane", name="ceiling", point=(0.0, 0.0, H), normal=(0.0, 0.0, -1.0)),),
                  settings=Settings(dt=dt, t_end=15 * dt))
    traj = simulate(scene)
    assert traj.info["engine"] == engine
    t_hit = (u - np.sqrt(u * u - 2 * g * (H - r))) / g
    w_up = u - g * t_hit
    ev = traj.events
    assert len(ev) == 1 and (ev.body1[0], ev.body2[0]) == ("ball", "ceiling") and 7 * dt < ev.t[0] < 8 * dt
    assert abs(ev.t[0] - t_hit) <= 1e-9 * t_hit, ev.t[0] - t_hit
    np.testing.assert_allclose(ev.impulse[0], [0.0, 0.0, -(1 + e) * 0.1 * w_up], rtol=1e-9, atol=1e-15)
    T = traj.t[-1]
    np.testing.assert_allclose(traj.velocity[-1, 0], [0.4, 0.0, -e * w_up - g * (T - t_hit)], rtol=0, atol=1e-9)
    z_end = H - r - e * w_up * (T - t_hit) - 0.5 * g * (T - t_hit) ** 2
    assert traj.position[-1, 0, 2] == pytest.approx(z_end, abs=1e-9)

    no_dips(monkeypatch)
    old = simulate(scene)
    assert len(old.events) == 0  # the old driver let the ball through the ceiling and back


def test_sphere_grazing_a_box_edge(engine):
    """A ball passes the box edge (x, y) = (h, h) along (1, −1)/√2 at closest distance 0.8 r: it touches the edge
    (not a face) at t = t* − √(r² − b²)/v, mid-step, and is reflected about the edge normal (e = 1).

    The step (16 ms) is about as long as the ball faces the edge (|v τ| < b: 16 ms): the squared distance to the
    box is quadratic in time only in that region (piecewise outside it), so with steps several times longer the
    cubic no longer reproduces the dip (a documented limit)."""
    h, r, v, dt = 0.1, 0.01, 1.0, 0.016
    bb = 0.8 * r
    t_star = 2.45 * dt
    edge = np.array([h, h, 0.0])
    across, along = np.array([1.0, 1.0, 0.0]) / np.sqrt(2), np.array([1.0, -1.0, 0.0]) / np.sqrt(2)
    start = edge + bb * across - v * t_star * along
    # distance to the box: to the edge while facing it, else to the face in front (it grows from both sides)

    def distance(t):
        off = bb * across + v * (t - t_star) * along
        return np.hypot(max(off[0], 0.0), max(off[1], 0.0))

    assert all(distance(t) > 1.05 * r for t in np.arange(5) * dt)  # apart at every step end
    box = StaticWall(kind="box", name="box", center=(0.0, 0.0, 0.0), half_sizes=(h, h, h), inside=False)
    traj = simulate(Scene(bodies=[ball("ball", tuple(start), tuple(v * along), r)], gravity=(0, 0, 0),
                          restitution=1.0, walls=(box,), settings=Settings(dt=dt, t_end=4 * dt)))
    assert traj.info["engine"] == engine
    t_hit = t_star - np.sqrt(r * r - bb * bb) / v
    assert v * (t_star - t_hit) < bb  # still facing the edge at the contact
    n = bb * across + v * (t_hit - t_star) * along
    n /= np.linalg.norm(n)
    ev = traj.events
    assert len(ev) == 1 and ev.body2[0] == "box" and 2 * dt < ev.t[0] < 3 * dt
    assert abs(ev.t[0] - t_hit) <= 1e-9 * t_hit, ev.t[0] - t_hit
    u = v * along
    np.testing.assert_allclose(traj.velocity[-1, 0], u - 2 * (u @ n) * n, rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------- (c) property test

@settings(max_examples=40, deadline=None)
@given(ra=st.floats(0.002, 0.03), ratio=st.floats(0.3, 3.0), b_frac=st.floats(0.0, 0.995),
       v=st.floats(0.2, 20.0), k=st.floats(1.1, 40.0), phase=st.floats(0.0, 1.0), n_before=st.integers(0, 3),
       e=st.sampled_from([1.0, 0.6, 0.0]), target=st.sampled_from([None, 0.05, 0.4]))
def test_grazing_impacts_are_found_at_their_time(ra, ratio, b_frac, v, k, phase, n_before, e, target):
    """Random fly-bys whose overlap (of duration 2√(s² − b²)/v) lies strictly inside one step k times as long:
    exactly one impact, at the straight-line time, and the spheres end apart and moving as the oracle says."""
    rb = ratio * ra
    s = ra + rb
    b = b_frac * s
    w = np.sqrt(s * s - b * b)
    dt = k * 2 * w / v
    # the overlap [t* − w/v, t* + w/v] inside step n_before + 1, clear of both ends by 2 % of the step
    lo, hi = 1 / (2 * k) + 0.02, 1 - 1 / (2 * k) - 0.02
    t_star = (n_before + 1 + lo + phase * (hi - lo)) * dt
    steps = n_before + 4
    grid = np.arange(steps + 1) * dt
    assert np.all(straight_line_gaps(ra, rb, b, v, t_star, grid) > 0)
    traj = simulate(fly_by(ra, rb, b, v, dt, t_star, steps, e, target))
    t_hit, _, want1, want2 = flyby_oracle(ra, rb, b, v, t_star, e, 0.1, target)
    note(f"dt={dt:.3g} s, t_hit={t_hit:.6g} s, events={traj.events.t}")
    assert len(traj.events) == 1
    assert abs(traj.events.t[0] - t_hit) <= 1e-9 * t_hit
    np.testing.assert_allclose(traj.velocity[-1, 0], want1, rtol=0, atol=1e-9 * v)
    if target is not None:
        np.testing.assert_allclose(traj.velocity[-1, 1], want2, rtol=0, atol=1e-9 * v)
    # never through each other: apart at every record (within the driver's tolerance) and separating at the end
    x2 = np.zeros((len(traj.t), 3)) if target is None else traj.position[:, 1]
    v2 = np.zeros(3) if target is None else traj.velocity[-1, 1]
    d = np.linalg.norm(traj.position[:, 0] - x2, axis=1)
    assert np.all(d - s >= -1e-9 * s), (d - s).min()
    assert (traj.position[-1, 0] - x2[-1]) @ (traj.velocity[-1, 0] - v2) >= -1e-12


# ---------------------------------------------------------------------------- (d) no contact, no trigger

@pytest.mark.parametrize("b_frac", [1.001, 1.0 + 1e-7, 3.0])
def test_a_miss_is_no_event_and_costs_no_trial_step(b_frac, monkeypatch, engine):
    """b > r_a + r_b: no event, the ball flies on unchanged, and the dip search never takes a trial step (the
    squared distance is exactly quadratic on a straight line, so its cubic's minimum b² is not below s²): the
    numpy driver steps once per grid step, and the kernels hand no step back to it (no trial step on them)."""
    ra, rb, v, dt = 0.01, 0.02, 2.0, 0.05
    s = ra + rb
    calls = []
    cls, name = (integrators.Splitting, "advance") if engine == "numpy" else (compiled.Runner, "step")
    real = getattr(cls, name)

    def counting(self, *args):
        calls.append(args)
        return real(self, *args)

    monkeypatch.setattr(cls, name, counting)
    traj = simulate(fly_by(ra, rb, b_frac * s, v, dt, 2.4 * dt, 6))
    assert len(traj.events) == 0 and traj.info["engine"] == engine
    np.testing.assert_allclose(traj.velocity[-1, 0], [v, 0, 0], rtol=0, atol=1e-15)
    # numpy: one integrator step per grid step; compiled: no step of the driver's, so no trial step either
    assert len(calls) == (6 if engine == "numpy" else 0)


# ---------------------------------------------------------------------------- a pendulum bob on its circle

def test_pendulum_bob_skims_a_fixed_ball_mid_step(monkeypatch, engine):
    """No gravity: a bob hinged about y turns at constant ω, its centre on the circle p + l(−sin θ, 0, −cos θ),
    θ = ω t. A fixed ball at distance d from the pivot, at angle φ, is touched when the centres are s apart:
    l² + d² − 2 l d cos(φ − θ) = s², θ = φ − Δ, Δ = arccos((l² + d² − s²)/(2 l d)). One degree of freedom
    and a fixed obstacle: the impact reverses ω times e (no other velocity to share it with)."""
    l, r, rb, w, e, dt = 0.3, 0.01, 0.01, 5.0, 0.8, 0.01
    s = r + rb
    d = l + 0.019  # 1 mm radial overlap at closest approach
    phi = 0.2275  # closest approach at t = φ/ω = 45.5 ms, 55 % into the fifth step (overlap ±4 ms)
    pivot = np.array([0.0, 0.0, 0.5])
    bob = Body(name="bob", position=tuple(pivot), hinge=(0.0, 1.0, 0.0), angular_velocity=(0.0, w, 0.0),
               shapes=(Sphere(radius=r, mass=0.1, center=(0.0, 0.0, -l)),),
               contacts=(ContactSphere((0.0, 0.0, -l), r),))
    c = pivot + d * np.array([-np.sin(phi), 0.0, -np.cos(phi)])
    target = Body(name="post", role="fixed", position=tuple(c), contacts=(ContactSphere((0.0, 0.0, 0.0), rb),))

    def gap(theta):
        return np.sqrt(l * l + d * d - 2 * l * d * np.cos(phi - theta)) - s

    assert all(gap(w * t) > 1e-4 for t in np.arange(9) * dt)  # apart at every step end
    scene = Scene(bodies=[bob, target], gravity=(0, 0, 0), restitution=e, settings=Settings(dt=dt, t_end=8 * dt))
    traj = simulate(scene)
    assert traj.info["engine"] == engine
    t_hit = (phi - np.arccos((l * l + d * d - s * s) / (2 * l * d))) / w
    ev = traj.events
    assert len(ev) == 1 and (ev.body1[0], ev.body2[0]) == ("bob", "post") and 4 * dt < ev.t[0] < 5 * dt
    assert abs(ev.t[0] - t_hit) <= 1e-9 * t_hit, ev.t[0] - t_hit
    np.testing.assert_allclose(traj.omega[-1, 0], [0.0, -e * w, 0.0], rtol=0, atol=1e-9 * w)

    no_dips(monkeypatch)
    assert len(simulate(scene).events) == 0
