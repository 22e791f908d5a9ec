"""A rim lying flat (pem_physics.engine.contact.surface_flat and .ring): a coin sliding and spinning on its face, at
rest on a slope, falling flat from its edge or through the air.

Every check is independent of the code: the ring's friction integrals against scipy's adaptive quadrature and as
the derivatives of the dissipation ∫|u| dφ (finite differences); slide, spin and slope against their closed forms;
slide and spin together against scipy's Runge–Kutta on friction integrated by quadrature; the fall on a smooth
table against energy conservation and the landing's momentum balance.
"""

import numpy as np
import pytest
from scipy.integrate import quad, solve_ivp

from pem_physics.engine.contact.ring import ring_friction, ring_integrals
from pem_physics.engine.contact.surface import FLAT, FLAT_REST, ROLLING, ContactRim, Surface, Table, TableBody
from pem_physics.engine.contact.surface_flat import FLAT_TILT
from pem_physics.engine.contact.surface_run import compiled_available, run, run_numpy, start_state
from pem_physics.model.elliptic import elliptic_ke

G = 9.81
# a table tilted out of the lab axes, gravity along its normal: nothing in the code may lean on z
NORMAL = np.array([0.3, -0.2, 0.9]) / np.linalg.norm([0.3, -0.2, 0.9])


def basis(n):
    t1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


def _integrands(V, w):
    D = lambda al: np.sqrt(V * V + w * w - 2 * V * w * np.cos(al))  # noqa: E731
    return [lambda al: (V - w * np.cos(al)) / D(al), lambda al: (w - V * np.cos(al)) / D(al),
            lambda al: np.cos(al) * (V - w * np.cos(al)) / D(al), lambda al: w * np.sin(al) ** 2 / D(al),
            lambda al: np.cos(al) * (w - V * np.cos(al)) / D(al)]


@pytest.mark.parametrize("V, w", [(1.0, 0.0), (0.0, 1.0), (0.0, -2.0), (0.05, 1.0), (0.1, 1.0), (0.1001, 1.0),
                                  (0.3, 1.0), (0.9, -1.0), (0.999, 1.0), (1.0, 1.0), (1.0, 1.001), (3.0, 1.0),
                                  (10.0, 1.0), (20.0, -1.0)])
def test_ring_integrals_match_adaptive_quadrature(V, w):
    """Both ways the code takes (the trapezoidal rule below a speed ratio of 1/10, the elliptic closed forms above,
    the ring's point at rest at V = |w|) against scipy's adaptive quadrature (split where |u| is least)."""
    ref = [quad(f, -np.pi, np.pi, points=[0.0], epsabs=1e-14, epsrel=1e-13, limit=400)[0]
           for f in _integrands(V, w)]
    assert np.allclose(ring_integrals(V, w), ref, rtol=0, atol=1e-11)


@pytest.mark.parametrize("q", [0.2, 0.5, 0.93, 1.7, 6.0])
def test_ring_friction_is_the_gradient_of_the_dissipation(q):
    """With even pressure the force and couple are −μN/2π times the gradient of ∫|u| dα = 4(V + w)E(k) in V and w
    (the power's potential, Contensou): central differences of that closed form."""
    def D(V, w):
        S = V + w
        return 4 * S * elliptic_ke(abs(V - w) / S)[1]
    V, w, d = q, 1.0, 1e-6
    G1, G2 = ring_integrals(V, w)[:2]
    assert abs(G1 - (D(V + d, w) - D(V - d, w)) / (2 * d)) <= 1e-8
    assert abs(G2 - (D(V, w + d) - D(V, w - d)) / (2 * d)) <= 1e-8


def test_ring_friction_with_uneven_pressure_matches_quadrature():
    """F = −μ ∫ p û dφ and T = −μa ∫ p (r̂ × û)·n dφ with p = N/2π + (c·r̂)/π, integrated point by point."""
    rng = np.random.default_rng(7)
    n = NORMAL
    t1, t2 = basis(n)
    a, N, mu = 0.02, 2.0, 0.4
    for _ in range(6):
        v = rng.normal() * t1 + rng.normal() * t2 + 0.3 * n          # the normal part is ignored
        w, c = rng.normal(), 0.4 * (rng.normal() * t1 + rng.normal() * t2)
        F, T = ring_friction(v, w, n, t1, N, c, mu, a)

        def parts(phi, v=v, w=w, c=c):
            rh = np.cos(phi) * t1 + np.sin(phi) * t2
            u = v - (v @ n) * n + w * np.cross(n, rh)
            p = N / (2 * np.pi) + (c @ rh) / np.pi
            return rh, u / np.linalg.norm(u), p

        cuts = list(np.linspace(0, 2 * np.pi, 9)[1:-1])
        Fr = [quad(lambda f, i=i: -mu * parts(f)[2] * parts(f)[1][i], 0, 2 * np.pi, points=cuts, epsabs=1e-14,
                   limit=400)[0] for i in range(3)]
        Tr = quad(lambda f: -mu * a * parts(f)[2] * np.cross(parts(f)[0], parts(f)[1]) @ n, 0, 2 * np.pi,
                  points=cuts, epsabs=1e-14, limit=400)[0]
        assert np.allclose(F, Fr, rtol=0, atol=1e-12) and abs(T - Tr) <= 1e-13


def coin(mu=0.3, e=0.0, n=NORMAL, h=0.001, a=0.0125, m=0.0075, slope=None):
    """A coin 2h thick (its ring h below its centre of mass) and a table through the origin with normal n; gravity
    along −n, or tilted from it by ``slope`` rad about the table's first tangent."""
    I1, I3 = m * a * a / 4 + m * h * h / 3, m * a * a / 2
    body = TableBody(m, np.diag([I1, I1, I3]), [ContactRim((0, 0, -h), (0, 0, 1), a)], name="coin")
    t1, t2 = basis(n)
    g = -G * n if slope is None else -G * (np.cos(slope) * n + np.sin(slope) * t2)
    return Surface(body, Table(normal=n, mu=mu, restitution=e), g), np.array([t1, t2, n]), h, a, m, I3


def test_a_coin_sliding_flat_stops_as_the_closed_form():
    """Sliding without spin on its face: friction −μN all along the slip, so it stops at v₀/μg after v₀²/2μg, at
    rest (to round-off: the midpoint rule is exact for a constant deceleration)."""
    sf, R, h, a, m, _ = coin()
    v0 = 0.5
    st = start_state(sf, h * NORMAL, v0 * R[0], (0, 0, 0), R)
    assert st.mode == FLAT
    r = run_numpy(sf, st, 0.3, 1e-3)
    assert [e.kind for e in r.events] == ["stick"]
    t_stop = v0 / (0.3 * G)
    assert abs(r.events[0].t - t_stop) <= 1e-12 * t_stop
    assert np.allclose(r.final.x, h * NORMAL + v0 ** 2 / (2 * 0.3 * G) * R[0], rtol=0, atol=1e-13)
    assert r.final.mode == FLAT_REST and np.all(r.final.v == 0) and np.all(r.final.L == 0)


def test_a_coin_spinning_flat_stops_as_the_closed_form():
    """Spinning on its face in place: the couple −μNa, so it stops at I₃ω₀/μMga having turned ω₀t/2."""
    sf, R, h, a, m, I3 = coin()
    w0 = 40.0
    st = start_state(sf, h * NORMAL, (0, 0, 0), w0 * NORMAL, R)
    r = run_numpy(sf, st, 0.3, 1e-3)
    t_stop = I3 * w0 / (0.3 * m * G * a)
    assert [e.kind for e in r.events] == ["stick"] and abs(r.events[0].t - t_stop) <= 1e-12 * t_stop
    turned = np.arctan2(r.final.Q[0] @ R[1], r.final.Q[0] @ R[0])   # principal axis 0 was t1
    assert abs(np.mod(turned - w0 * t_stop / 2 + np.pi, 2 * np.pi) - np.pi) <= 1e-11
    assert np.allclose(r.final.x, h * NORMAL, rtol=0, atol=1e-15)


def _reference_slide(v0, w0, mu, h, a, m, I3, t_end):
    """Slide and spin of the coin (its centre of mass (x, y), velocity and spin at t_end) by scipy's DOP853 on the
    ring's friction integrated by adaptive quadrature (the integrands of the first test, in the frame of the slip),
    the pressure's first moment from the torque balance about the centre of mass (c = −(h/a)F, by fixed-point
    iteration: its factor μh/a is 0.024)."""
    N = m * G

    def friction(v, w):
        V = np.linalg.norm(v)
        ex = v / V
        ey = np.array([-ex[1], ex[0]])
        Gs = [quad(f, -np.pi, np.pi, points=[0.0], epsabs=1e-13, limit=200)[0] for f in _integrands(V, w)]
        c = np.zeros(2)
        for _ in range(15):
            cx, cy = c @ ex, c @ ey
            F = -mu * ((N / (2 * np.pi) * Gs[0] + cy * Gs[2] / np.pi) * ex + cx * Gs[3] / np.pi * ey)
            c = -(h / a) * F
        T = -mu * a * (N / (2 * np.pi) * Gs[1] + (c @ ey) * Gs[4] / np.pi)
        return F, T

    def rhs(t, y):
        F, T = friction(y[2:4], a * y[4])
        return [*y[2:4], *(F / m), T / I3]

    return solve_ivp(rhs, (0, t_end), [0, 0, v0, 0, w0], method="DOP853", rtol=1e-12, atol=1e-14).y[:, -1]


@pytest.mark.slow
def test_a_coin_sliding_and_spinning_flat_matches_an_independent_integrator():
    """Slide and spin together (Contensou's coupling, and the sideways pull of the uneven pressure that keeps the
    coin flat): position, velocity and spin at 0.1 s against the reference above, converging at the midpoint
    rule's second order; the energy falls every step; slide and spin stop together, at rest."""
    mu = 0.3
    sf, R, h, a, m, I3 = coin(mu=mu, n=np.array([0.0, 0.0, 1.0]))
    v0, w0 = 0.5, 30.0
    st = start_state(sf, (0, 0, h), (v0, 0, 0), (0, 0, w0), R)
    ref = _reference_slide(v0, w0, mu, h, a, m, I3, 0.1)
    errors = []
    for dt in (2e-3, 1e-3):
        f = run_numpy(sf, st, 0.1, dt).final
        got = np.r_[f.x[:2], f.v[:2], (sf.W(f.Q) @ f.L)[2]]
        errors.append(np.abs(got - ref) / np.array([1e-3, 1e-3, v0, v0, w0]))
    assert np.max(errors[1]) <= 1e-4 and 3.5 < np.max(errors[0]) / np.max(errors[1]) < 4.6
    r = run_numpy(sf, st, 0.5, 1e-3)
    assert [e.kind for e in r.events] == ["stick"] and r.final.mode == FLAT_REST
    assert np.all(np.diff(r.energy) <= 0)


@pytest.mark.parametrize("slope, slides", [(np.radians(10), False), (np.radians(25), True)])
def test_a_coin_on_a_slope_rests_or_slides_as_the_closed_form(slope, slides):
    """Lying flat on a table tilted by β (gravity off its normal): friction holds it while tan β ≤ μ; else it slides
    from rest down the slope at g(sin β − μ cos β), its position the closed form to round-off."""
    mu = 0.3
    sf, R, h, a, m, _ = coin(mu=mu, slope=slope)
    st = start_state(sf, h * NORMAL, (0, 0, 0), (0, 0, 0), R)
    assert st.mode == (FLAT if slides else FLAT_REST)
    r = run_numpy(sf, st, 0.2, 1e-3)
    down = -R[1]
    acc = G * (np.sin(slope) - mu * np.cos(slope)) if slides else 0.0
    assert not r.events
    assert np.allclose(r.x, h * NORMAL + 0.5 * acc * r.t[:, None] ** 2 * down, rtol=0, atol=1e-14)


def test_a_coin_falls_flat_on_a_smooth_table_as_energy_and_momentum_say():
    """A coin let go on its edge, its face β₀ from a frictionless table: its centre of mass falls straight down and
    β̇² = 2Mga(sin β₀ − sin β)/(Ma² cos²β + I₁), so it lands at T = ∫ dβ/β̇ (adaptive quadrature) with the whole
    edge at once (located where its tilt is FLAT_TILT); the landing's impulse stops it, Ma·β̇, and it rests flat
    where it fell, all its energy spent."""
    a, m = 0.0125, 0.0075
    I1 = m * a * a / 4
    body = TableBody(m, np.diag([I1, I1, 2 * I1]), [ContactRim((0, 0, 0), (0, 0, 1), a)], name="coin")
    n = NORMAL
    t1, t2 = basis(n)
    sf = Surface(body, Table(normal=n, mu=0.0), -G * n)
    b0 = np.radians(60.0)
    k = np.cos(b0) * n - np.sin(b0) * t1          # its axis, b0 from the normal
    R = np.array([np.cross(t2, k), t2, k])
    st = start_state(sf, a * np.sin(b0) * n, (0, 0, 0), (0, 0, 0), R)
    rate = lambda b: np.sqrt(2 * m * G * a * (np.sin(b0) - np.sin(b)) / (m * a * a * np.cos(b) ** 2 + I1))  # noqa
    # 1/β̇ ~ (β₀ − β)^(−1/2) at the start: β = β₀ − s² takes the singularity away; the landing is located at the tilt
    # FLAT_TILT (sin β), where the rim is laid flat
    b_end = np.arcsin(FLAT_TILT)
    T = quad(lambda s: 2 * s / rate(b0 - s * s), 0, np.sqrt(b0 - b_end), epsabs=1e-15, epsrel=1e-13)[0]
    r = run_numpy(sf, st, 0.1, 1e-4)
    # the compiled run (where it can run) hands the landing to the numpy reference: the same run to round-off
    both = run(sf, st, 0.1, 1e-4)
    assert both.engine == ("numba+numpy" if compiled_available() else "numpy")
    assert [e.kind for e in both.events] == [e.kind for e in r.events]
    assert np.allclose([e.t for e in both.events], [e.t for e in r.events], rtol=0, atol=1e-12)
    assert np.allclose(both.x, r.x, rtol=0, atol=1e-12) and np.allclose(both.v, r.v, rtol=0, atol=1e-10)
    landing = [e for e in r.events if e.kind.startswith("impact")]
    assert len(landing) == 1 and landing[0].kind == f"impact, {FLAT_REST}"
    assert abs(landing[0].t - T) <= 1e-7 * T                      # the fall at second order in dt
    # the centre of mass falls at a·cos β·β̇ where the rim is laid flat
    assert np.allclose(landing[0].impulse, m * a * np.cos(b_end) * rate(b_end) * n, rtol=1e-6, atol=0)
    assert np.allclose(r.final.x, 0.0, rtol=0, atol=1e-9) and r.final.mode == FLAT_REST
    # all its energy spent in the landing (the fall keeps it to its second-order error, (dt/T)² ~ 3e-6)
    assert abs(r.energy[-1]) <= 1e-15 and abs(r.impact_work[-1] + m * G * a * np.sin(b0)) <= 1e-6 * m * G * a


def test_a_coin_falling_from_its_edge_with_friction_lands_and_comes_to_rest():
    """With friction the coin rolls, slips, lands flat, slides and stops (the compiled run hands it to the numpy
    reference at the landing); its energy never rises beyond the integration's error, the books balance, and no
    point of it goes below the table."""
    sf, R, h, a, m, _ = coin(mu=0.5, h=0.0)
    n = NORMAL
    b0 = np.radians(60.0)
    t1, t2 = basis(n)
    k = np.cos(b0) * n - np.sin(b0) * t1
    st = start_state(sf, a * np.sin(b0) * n, (0, 0, 0), (0, 0, 0), np.array([np.cross(t2, k), t2, k]))
    assert st.mode == ROLLING
    r = run(sf, st, 0.3, 5e-4)
    kinds = [e.kind for e in r.events]
    assert f"impact, {FLAT}" in kinds and kinds[-1] == "stick" and r.final.mode == FLAT_REST
    # the energy rises by no more than the rolling's second-order error ((dt/T)² ≈ 5e-5 of it, T the fall's time),
    # and falls at the slip, the landing and the stop
    assert np.max(r.energy - r.energy[0]) <= 5e-5 * r.energy[0] and r.energy[-1] <= 1e-15
    books = r.energy - r.energy[0] - r.friction_work - r.impact_work - r.normal_work
    assert np.max(np.abs(books)) <= 1e-6 * m * G * a
    low = [sf.gap(0, x, Q) for x, Q in zip(r.x, r.Q)]
    assert min(low) >= -1e-12 * a
    assert abs(r.final.x @ n) <= 1e-15
    # compiled where it can run: its steps up to the landing's, the numpy reference's from there
    assert r.engine == ("numba+numpy" if compiled_available() else "numpy")


def test_a_coin_dropped_flat_bounces_whole_then_rests():
    """Dropped flat from 5 cm onto a table of restitution 0.5: the whole edge strikes at once and it leaves at
    e·√(2gH), flat; the bounces shrink until one would not leave for a step, then it rests flat."""
    sf, R, h, a, m, _ = coin(mu=0.3, e=0.5)
    H = 0.05
    st = start_state(sf, (h + H) * NORMAL, (0, 0, 0), (0, 0, 0), R)
    r = run_numpy(sf, st, 1.0, 1e-4)
    first = r.events[0]
    assert first.kind == "impact"
    assert abs(first.t - np.sqrt(2 * H / G)) <= 1e-12
    assert np.allclose(first.impulse, 1.5 * m * np.sqrt(2 * G * H) * NORMAL, rtol=1e-12, atol=0)
    assert r.final.mode == FLAT_REST and abs((r.final.x - h * NORMAL) @ NORMAL) <= 1e-15
