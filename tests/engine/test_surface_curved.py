"""A body on a curved table (engine/contact/surface.py with a sphere, cylinder or box wall): closed forms.

- A ball rolling in a bowl (inside a sphere, or across a pipe: inside a cylinder) is a pendulum of length R − r
  under (5/7)g: θ(t) = 2 arcsin(k sn(K(k) − ω₀t, k)), k = sin(θ₀/2), ω₀² = 5g/(7(R − r)) (energy
  (7/10)Mv² + Mg(R − r)(1 − cos θ) with v = (R − r)θ̇). The error converges at second order.
- A ball rolling off a dome (outside a sphere, or over a log: outside a cylinder; over a block's edge: the rounded
  distance of a box, a cylinder of radius 0) from θ₀ at speed v₀: while it rolls, F = (2/7)Mg sin θ along the
  surface and N = Mg cos θ − Mv²/(R + r), v² = v₀² + (10/7)g(R + r)(cos θ₀ − cos θ), so it slips where
  2 sin θ = μ(17 cos θ − 10 cos θ₀ − 7v₀²/(g(R + r))); from there it slides (M(R + r)θ̈ = Mg sin θ − μN,
  (2/5)Mr²ω̇ = μNr) until N = 0: the lift-off angle from scipy's ODE solver on those equations.
- A ball rolling down a slope: s = (5/14)g sin α t², exactly on every step (and friction does no work).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq
from scipy.special import ellipj, ellipk

from pem_physics.engine.contact import surface as sf
from pem_physics.engine.contact import surface_run as sr
from pem_physics.engine.contact.surface import ContactRim, ContactSphere, Surface, Table, TableBody
from pem_physics.engine.contact.surface_run import start_state
from pem_physics.engine.contact.walls import Box, Cylinder, Plane, Sphere
from pem_physics.errors import ValidationError

G = 9.81
M, A = 0.1, 0.02          # the ball: kg, m


def ball():
    return TableBody(M, 0.4 * M * A * A * np.eye(3), [ContactSphere((0, 0, 0), A)], "ball")


BOWLS = {
    "sphere": lambda R: Sphere((0, 0, R), R, inside=True, name="bowl"),
    "cylinder": lambda R: Cylinder((0, 0, R), (0, 1, 0), R, inside=True, name="pipe"),
}


@pytest.mark.parametrize("kind", sorted(BOWLS))
def test_ball_in_a_bowl_swings_as_the_closed_form_pendulum(kind):
    R, th0 = 0.5, 0.4
    s = Surface(ball(), Table(wall=BOWLS[kind](R), mu=1.0), (0, 0, -G))
    Lr = R - A
    st = start_state(s, (Lr * np.sin(th0), 0, R - Lr * np.cos(th0)), (0, 0, 0), (0, 0, 0))
    assert st.mode == sf.ROLLING
    w0 = np.sqrt(5 * G / (7 * Lr))
    k = np.sin(th0 / 2)
    K = ellipk(k * k)
    T = 4 * K / w0
    errors, energy = [], []
    for dt in (1e-3, 5e-4):
        r = sr.run(s, st, T, dt, every=4)
        assert set(r.mode) == {sf.ROLLING} and not r.events
        exact = 2 * np.arcsin(k * ellipj(K - w0 * r.t, k * k)[0])
        theta = np.arctan2(r.x[:, 0], R - r.x[:, 2])
        errors.append(np.max(np.abs(theta - exact)))
        assert np.max(np.abs(r.x[:, 1])) <= 1e-12 * R        # the swing stays in its plane
        assert np.max(np.abs(r.friction_work)) == 0.0           # rolling: friction does no work
        energy.append(np.max(np.abs(r.energy_balance())) / (M * G * Lr * (1 - np.cos(th0))))
    # the angle and the energy balance (the integration error: rolling friction does no work) at second order
    assert errors[1] <= 1e-6 and 3.2 < errors[0] / errors[1] < 5.0
    assert energy[1] <= 2e-6 and 3.2 < energy[0] / energy[1] < 5.0


# (wall, R, steps): over a block's edge the ball turns at up to ~20 rad/s about it, a tenth of the step is needed
# for the errors to halve with it
DOMES = {
    "sphere": (lambda R: Sphere((0, 0, 0), R, inside=False, name="dome"), 0.5, (1e-3, 5e-4)),
    "cylinder": (lambda R: Cylinder((0, 0, 0), (0, 1, 0), R, inside=False, name="log"), 0.5, (1e-3, 5e-4)),
    "box edge": (lambda R: Box((-0.3, 0, -0.5), (0.3, 0.3, 0.5), inside=False, name="block"), 0.0, (5e-4, 2.5e-4)),
}


@pytest.mark.parametrize("kind", sorted(DOMES))
def test_ball_rolls_off_a_dome_slipping_and_leaving_where_the_closed_form_says(kind):
    make, R, steps = DOMES[kind]
    mu = 0.5
    s = Surface(ball(), Table(wall=make(R), mu=mu), (0, 0, -G))
    Lr = R + A
    if R > 0:        # from rest near the top
        th0, v0 = 0.05, 0.0
        x0, vel = (Lr * np.sin(th0), 0, Lr * np.cos(th0)), (0, 0, 0)
    else:            # rolling along the block's top at v₀ towards its edge at x = 0
        th0, v0 = 0.0, 0.1
        x0, vel = (-0.05, 0, A), (v0, 0, 0)
    st = start_state(s, x0, vel, np.cross((0, 0, 1.0), vel) / A)
    assert st.mode == sf.ROLLING
    c0 = 10 * np.cos(th0) + 7 * v0 ** 2 / (G * Lr)
    th_slip = brentq(lambda t: 2 * np.sin(t) - mu * (17 * np.cos(t) - c0), th0, 1.2)

    # sliding from the slip: θ, θ̇ and the spin ω (about y); N = Mg cos θ − M(R + r)θ̇², friction −μN
    def rhs(t, y):
        th, thd, om = y
        N = M * G * np.cos(th) - M * Lr * thd ** 2
        return [thd, (G * np.sin(th) - mu * N / M) / Lr, mu * N * A / (0.4 * M * A * A)]

    def leaves(t, y):
        return M * G * np.cos(y[0]) - M * Lr * y[1] ** 2
    leaves.terminal = True
    v_slip = np.sqrt(v0 ** 2 + (10 / 7) * G * Lr * (np.cos(th0) - np.cos(th_slip)))
    sol = solve_ivp(rhs, (0, 5), [th_slip, v_slip / Lr, v_slip / A], events=leaves, rtol=1e-12, atol=1e-14)
    th_leave = sol.y_events[0][0][0]

    def angle(x):          # from the top (the block's edge is the origin)
        return np.arctan2(x[0], x[2])
    errors = []
    exchanged = 0.5 * M * v0 ** 2 + M * G * Lr * (np.cos(th0) - np.cos(th_leave))
    for dt in steps:
        r = sr.run(s, st, 1.5, dt)
        kinds = [e.kind for e in r.events]
        assert kinds[:2] == ["slip", "lift-off"], kinds
        slip, leave = r.events[:2]
        on = r.t <= leave.t
        errors.append((abs(angle(slip.x) - th_slip), abs(angle(leave.x) - th_leave),
                       np.max(np.abs(r.energy_balance()[on])) / exchanged))
    (s1, l1, e1), (s2, l2, e2) = errors
    assert s2 <= 1e-6 and l2 <= 1e-6 and e2 <= 1e-5
    assert s1 / s2 > 3.0 and l1 / l2 > 3.0 and e1 / e2 > 3.0


def test_ball_rolls_down_a_slope_exactly():
    """The rolling steps' tangential impulses are the constraint's: they book no friction work, so the energy
    balance is round-off and no step is split (they were, when their work counted as friction's)."""
    al = 0.3
    n = np.array([np.sin(al), 0, np.cos(al)])
    s = Surface(ball(), Table(wall=Plane((0, 0, 0), n), mu=1.0), (0, 0, -G))
    st = start_state(s, A * n, (0, 0, 0), (0, 0, 0))
    down = np.array([np.cos(al), 0, -np.sin(al)])
    for engine in ("numpy", "compiled") if sr.compiled_available() else ("numpy",):
        r = sr.run(s, st, 0.5, 1e-3, engine=engine)
        exact = (5 / 14) * G * np.sin(al) * r.t ** 2
        assert np.max(np.abs((r.x - r.x[0]) @ down - exact)) <= 1e-12
        assert np.max(np.abs(r.friction_work)) == 0.0
        assert np.max(np.abs(r.energy_balance())) <= 1e-12 * M * G * 0.5
    calls = []
    step = Surface.step
    s.step = lambda st_, h: calls.append(h) or step(s, st_, h)
    sr.run(s, st, 0.1, 1e-3, engine="numpy")
    assert len(calls) == 100


def coin():
    """A uniform disc (I₁ = ma²/4, I₃ = ma²/2) standing upright in the x–z plane (its axis along y)."""
    m, a = 0.05, 0.02
    body = TableBody(m, np.diag([m * a * a / 4, m * a * a / 4, m * a * a / 2]), [ContactRim((0, 0, 0), (0, 0, 1), a)],
                     "coin")
    return body, np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]]), a


@pytest.mark.parametrize("kind", sorted(BOWLS))
def test_coin_rolling_in_a_bowl_swings_as_the_closed_form_pendulum(kind):
    """A rim on a curved table: the upright coin rolling inside a bowl or a pipe, in the plane through the axis, is
    a pendulum of length R − a under (2/3)g (energy (3/4)Mv², v = (R − a)θ̇)."""
    body, U, a = coin()
    R, th0 = 0.3, 0.4
    s = Surface(body, Table(wall=BOWLS[kind](R), mu=1.0), (0, 0, -G))
    Lr = R - a
    st = start_state(s, (Lr * np.sin(th0), 0, R - Lr * np.cos(th0)), (0, 0, 0), (0, 0, 0), U)
    assert st.mode == sf.ROLLING
    w0 = np.sqrt(2 * G / (3 * Lr))
    k = np.sin(th0 / 2)
    K = ellipk(k * k)
    errors = []
    for dt in (1e-3, 5e-4):
        r = sr.run(s, st, 4 * K / w0, dt, every=4)
        assert set(r.mode) == {sf.ROLLING} and not r.events and np.max(np.abs(r.x[:, 1])) <= 1e-12
        exact = 2 * np.arcsin(k * ellipj(K - w0 * r.t, k * k)[0])
        errors.append(np.max(np.abs(np.arctan2(r.x[:, 0], R - r.x[:, 2]) - exact)))
    assert errors[1] <= 1e-6 and 3.2 < errors[0] / errors[1] < 5.0


def test_coin_rolling_off_a_dome_slips_where_the_closed_form_says():
    """The upright coin rolling from rest off a dome: F = (1/3)Mg sin θ, N = Mg(7 cos θ − 4 cos θ₀)/3, so it slips
    where sin θ = μ(7 cos θ − 4 cos θ₀)."""
    body, U, a = coin()
    R, th0, mu = 0.5, 0.05, 0.5
    s = Surface(body, Table(wall=Sphere((0, 0, 0), R, inside=False), mu=mu), (0, 0, -G))
    Lr = R + a
    st = start_state(s, (Lr * np.sin(th0), 0, Lr * np.cos(th0)), (0, 0, 0), (0, 0, 0), U)
    th_slip = brentq(lambda t: np.sin(t) - mu * (7 * np.cos(t) - 4 * np.cos(th0)), th0, 1.2)
    errors = []
    for dt in (1e-3, 5e-4):
        r = sr.run(s, st, 1.0, dt)
        assert r.events[0].kind == "slip"
        errors.append(abs(np.arctan2(r.events[0].x[0], r.events[0].x[2]) - th_slip))
    assert errors[1] <= 1e-6 and 3.2 < errors[0] / errors[1] < 5.0


def test_a_table_is_a_static_wall():
    with pytest.raises(ValidationError, match=r"table\.kind"):
        Table(wall=object())


def test_a_ball_that_only_touches_a_wall_falls_freely_beside_it_without_events():
    """A ball falling along a leaning wall it touches (gravity along the wall, no normal velocity): no force acts
    between them, so it falls freely, x = x₀ + v₀t + gt²/2, while its gap stays within round-off of zero — both
    signs, step after step. A touch without an impact is no event (it was a contact change without end: the round-off
    gap fired an impact that changed nothing, twenty times in a step). Whether round-off puts it on the wall for a
    while (sliding with a normal force of round-off) depends on the BLAS kernel; the motion may not."""
    n = np.array([1.0, 0.0, 1.0]) / np.sqrt(2)
    g = -G * np.array([1.0, 0.0, -1.0]) / np.sqrt(2)
    s = Surface(ball(), Table(wall=Plane((0, 0, 0), n), mu=0.5), g)
    x0, v0 = A * n + np.array([0.3, 0.1, -0.3]), np.array([0.0, 0.2, 0.0])
    st = start_state(s, x0, v0, (0, 0, 0))
    st.mode, st.shape = sf.APART, -1      # the normal force is round-off here: start_state may have put it on
    for engine in ("numpy", "compiled") if sr.compiled_available() else ("numpy",):
        r = sr.run(s, st, 1.0, 1e-3, engine=engine)
        # whether round-off puts it on the wall now and then (sliding with N ≈ 0) differs by BLAS kernel; what
        # such a contact does may not: no impulse beyond round-off, no chatter (the run ends)
        scale_p = M * np.max(np.linalg.norm(r.v, axis=1))
        assert all(np.linalg.norm(e.impulse) <= 1e-12 * scale_p for e in r.events), r.events[:3]
        gaps = r.x @ n - A
        scale = np.max(np.abs(r.x))
        assert np.max(np.abs(gaps)) <= 16 * np.finfo(float).eps * scale
        assert np.min(gaps) < 0       # the case itself: round-off puts the ball inside now and then
        exact = x0 + np.outer(r.t, v0) + 0.5 * np.outer(r.t ** 2, g)
        assert np.max(np.abs(r.x - exact)) <= 64 * np.finfo(float).eps * scale
