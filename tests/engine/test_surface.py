"""A rigid body on a table (pem_physics.engine.contact.surface): closed forms, invariants and finite differences.

Every check is independent of the code: the billiard ball's sliding-to-rolling closed form, Jellett's integral, the
turning points of a top's nutation on a smooth table from its conserved quantities, the constraint force against a
finite difference of the momentum, and the tippe top's inversion criterion from the literature.
"""

import numpy as np
import pytest
from scipy.optimize import brentq

from pem_physics.engine.contact.surface import (
    APART,
    FLAT_REST,
    ROLLING,
    SLIDING,
    ContactRim,
    ContactSphere,
    State,
    Surface,
    Table,
    TableBody,
)
from pem_physics.engine.contact.surface_run import run, start_state
from pem_physics.engine.contact.walls import Sphere as SphereWall
from pem_physics.errors import SimulationError, ValidationError

G = 9.81


def ball(M=0.17, a=0.028575):
    return TableBody(M, 0.4 * M * a * a * np.eye(3), [ContactSphere((0, 0, 0), a)], "ball")


def basis(n):
    """Two unit tangents of the unit normal n."""
    t1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


# a table tilted out of the lab axes, gravity along its normal: nothing in the code may lean on z
NORMAL = np.array([0.3, -0.2, 0.9]) / np.linalg.norm([0.3, -0.2, 0.9])


@pytest.mark.parametrize("backspin", [0.0, 0.5, 2.5, 4.0])
def test_billiard_ball_slides_then_rolls_as_the_closed_form(backspin):
    """v₀ along t, spin w·v₀/a against the roll: the slip v − aω falls at (7/2)μg, so the ball rolls from
    t* = 2(1 + w)v₀/(7μg) at v* = (5 − 2w)v₀/7 — forward (w < 5/2), stopped (w = 5/2) or coming back (w > 5/2)."""
    M, a, mu, v0 = 0.17, 0.028575, 0.2, 2.0
    n = NORMAL
    t1, t2 = basis(n)
    sf = Surface(ball(M, a), Table(point=0.1 * t2, normal=n, mu=mu), -G * n)
    # rolling forward along t1 means ω = (v/a) (n × t1); backspin is the opposite sense
    omega = -backspin * v0 / a * np.cross(n, t1)
    st = start_state(sf, 0.1 * t2 + a * n + 0.3 * t1, v0 * t1, omega)
    assert st.mode == SLIDING
    t_star = 2 * (1 + backspin) * v0 / (7 * mu * G)
    r = run(sf, st, round(1.5 * t_star, 3) + 0.01, 1e-3)
    sticks = [e for e in r.events if e[1] == "stick"]
    assert len(sticks) == 1 and r.events == sticks
    assert abs(sticks[0][0] - t_star) <= 1e-9 * t_star
    v_star = (5 - 2 * backspin) * v0 / 7
    assert abs(r.final.v @ t1 - v_star) <= 1e-9 * v0
    assert abs(r.final.v @ t2) <= 1e-12 * v0 and abs(r.final.v @ n) <= 1e-12 * v0
    assert r.final.mode == ROLLING
    w = sf.W(r.final.Q) @ r.final.L
    assert np.allclose(w, v_star / a * np.cross(n, t1), rtol=0, atol=1e-9 * v0 / a)
    # the centre slides at −μg then rolls at constant velocity: its path is the closed form too
    t_end = r.t[-1]
    s = v0 * t_star - 0.5 * mu * G * t_star ** 2 + v_star * (t_end - t_star)
    assert abs((r.final.x - st.x) @ t1 - s) <= 1e-9 * v0 * t_end
    # energy: what friction took is what the ball lost, to round-off (the ball's motion is exact on any step)
    E0 = r.energy[0]
    assert np.max(np.abs(r.energy_balance())) <= 1e-12 * E0
    lost = 0.5 * M * v0 ** 2 * (1 + 0.4 * backspin ** 2) - 0.5 * M * v_star ** 2 * 1.4
    assert abs(-r.friction_work[-1] - lost) <= 1e-12 * E0


def tippe(gamma=0.95, alpha=0.3, R=0.02, m=0.015):
    """The eccentric-sphere tippe top: radius R, centre of mass αR below the centre, I₁ = γI₃ (about the centre
    of mass), I₃ = (2/5)mR²."""
    I3 = 0.4 * m * R * R
    body = TableBody(m, np.diag([gamma * I3, gamma * I3, I3]), [ContactSphere((0, 0, alpha * R), R)], "tippe top")
    return body, I3


def tilted(theta):
    """Body axes (rows) with the body z axis tilted by θ about lab x."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[1.0, 0, 0], [0, c, s], [0, -s, c]])


def spun_tippe(sf, R, alpha, spin, theta0=0.1):
    U = tilted(theta0)
    C = np.array([0.0, 0.0, R])
    return start_state(sf, C - alpha * R * U[2], (0, 0, 0), spin * U[2], U)


@pytest.mark.parametrize("friction, mu", [("coulomb", 0.3), ("viscous", 0.3)])
def test_jellett_integral_is_kept_to_round_off(friction, mu):
    """λ = L·(x − P) is constant for an axisymmetric body on a sphere centred on its axis, through sliding and
    (Coulomb) rolling; L·(x − C), the same without the sphere's radius, is not — which the test also checks, so it
    would catch a contact point taken at the sphere's centre."""
    R, alpha = 0.02, 0.3
    body, I3 = tippe(R=R, alpha=alpha)
    sf = Surface(body, Table(mu=mu, friction=friction), (0, 0, -G))
    st = spun_tippe(sf, R, alpha, 120.0, theta0=0.4)
    r = run(sf, st, 0.6, 5e-4, every=20)
    modes = set(r.mode)
    assert SLIDING in modes and (friction == "viscous" or ROLLING in modes)
    P = r.x + np.einsum("k,tkj->tj", body.b[0], r.Q) - R * np.array([0, 0, 1.0])
    lam = np.einsum("ti,ti->t", r.L, r.x - P)
    assert np.ptp(lam) <= 1e-12 * abs(lam[0])
    C = P + R * np.array([0, 0, 1.0])
    other = np.einsum("ti,ti->t", r.L, r.x - C)
    assert np.ptp(other) > 1e-3 * abs(other[0])


def test_energy_balance_converges_at_second_order():
    """E − E₀ − W_friction is the splitting error: a quarter of it when the step halves."""
    R, alpha = 0.02, 0.3
    body, I3 = tippe(R=R, alpha=alpha)
    sf = Surface(body, Table(mu=0.3, friction="viscous"), (0, 0, -G))
    st = spun_tippe(sf, R, alpha, 120.0, theta0=0.4)
    err = [np.max(np.abs(run(sf, st, 0.2, dt).energy_balance())) for dt in (1e-3, 5e-4, 2.5e-4)]
    ratios = [err[0] / err[1], err[1] / err[2]]
    assert all(3.2 < q < 5.0 for q in ratios), (err, ratios)


def test_gliding_friction_converges_at_second_order_down_a_slope():
    """A uniform ball sliding down a slope under gliding friction F = −μ_g N u: its slip s = v − aω obeys
    ṡ = g_t − k s, k = (7/2)μ_g g_n, so s = s∞ + (s₀ − s∞)e^{−kt} (s∞ = g_t/k) and
    v = v₀ + g_t t − μ_g g_n (s∞ t + (s₀ − s∞)(1 − e^{−kt})/k). The error against that closed form falls by 4 per
    halving of dt (first order, as an explicit kick at both ends of the step gives, it falls by 2)."""
    M, a, mu, beta = 0.17, 0.028575, 0.3, 0.3
    n = NORMAL
    t1, _ = basis(n)
    gn, gt = G * np.cos(beta), G * np.sin(beta)
    sf = Surface(ball(M, a), Table(normal=n, mu=mu, friction="viscous"), -gn * n + gt * t1)
    v0, T = 1.0, 0.5
    st = start_state(sf, a * n, v0 * t1, np.zeros(3))
    k = 3.5 * mu * gn
    s_inf = gt / k
    v_exact = v0 + gt * T - mu * gn * (s_inf * T + (v0 - s_inf) * (1 - np.exp(-k * T)) / k)
    err = [abs(run(sf, st, T, dt, every=round(T / dt)).v[-1] @ t1 - v_exact) for dt in (4e-3, 2e-3, 1e-3)]
    ratios = [err[0] / err[1], err[1] / err[2]]
    assert all(3.5 < q < 4.5 for q in ratios), (err, ratios)


def test_top_on_a_smooth_table_nutates_and_precesses_as_the_closed_form():
    """No friction: the table's force is vertical, so the centre of mass moves only vertically, and L_z, L·ŝ and
    E are conserved. Started at θ₀ with spin s about its axis and nothing else, the axis nods between θ₀ and the
    other root θ₁ of E = (L_z − L₃cosθ)²/(2I₁sin²θ) + L₃²/(2I₃) + mg(r + l cosθ) (the centre of mass l above the
    tip sphere's centre, whose radius is r)."""
    m, I1, I3, l, r = 0.1, 4e-5, 2e-5, 0.03, 0.004
    body = TableBody(m, np.diag([I1, I1, I3]), [ContactSphere((0, 0, -l), r)], "top")
    sf = Surface(body, Table(mu=0.0), (0, 0, -G))
    th0, s = 0.3, 150.0
    U = tilted(th0)
    st = start_state(sf, np.array([0.0, 0.0, r]) + l * U[2], (0, 0, 0), s * U[2], U)
    L3 = I3 * s
    Lz = L3 * np.cos(th0)
    E0 = sf.energy(st)                    # gravity's zero at the table

    def E(th):
        spin = (Lz - L3 * np.cos(th)) ** 2 / (2 * I1 * np.sin(th) ** 2) + L3 ** 2 / (2 * I3)
        return spin + m * G * (r + l * np.cos(th))

    assert abs(E(th0) - E0) <= 1e-12 * E0
    th1 = brentq(lambda t: E(t) - E0, th0 + 1e-6, np.pi - 1e-6, xtol=1e-15)
    # the nutation period is ~2π I₁/L₃; run a few of them
    rr = run(sf, st, 0.3, 2e-5, every=1)
    k = int(np.argmin(np.abs(body.moments - I3)))   # the symmetry axis among the principal axes
    axis = rr.Q[:, k] * np.sign(rr.Q[0, k] @ U[2])
    th = np.arccos(np.clip(axis[:, 2], -1, 1))
    assert set(rr.mode) == {SLIDING}
    assert abs(th.min() - th0) <= 1e-6 and abs(th.max() - th1) <= 1e-6, (th.min() - th0, th.max() - th1)
    assert np.max(np.abs(rr.x[:, :2] - st.x[:2])) <= 1e-15
    assert np.ptp(rr.L[:, 2]) <= 1e-13 * L3
    assert np.ptp(np.einsum("ti,ti->t", rr.L, axis)) <= 1e-13 * L3
    assert np.max(np.abs(rr.energy - rr.energy[0])) <= 1e-6 * E0
    # precession: the axis turns about the vertical at φ̇ = (L_z − L₃cosθ)/(I₁sin²θ) (from L_z = I₁φ̇sin²θ + L₃cosθ);
    # φ̇ by central differences of the recorded azimuth (their error, ~dt² times φ's third derivative, is far below)
    phi = np.unwrap(np.arctan2(axis[:, 1], axis[:, 0]))
    rate = (phi[2:] - phi[:-2]) / (rr.t[2:] - rr.t[:-2])
    expect = (Lz - L3 * np.cos(th[1:-1])) / (I1 * np.sin(th[1:-1]) ** 2)
    assert np.max(np.abs(rate - expect)) <= 1e-5 * np.max(np.abs(expect))
    assert np.min(expect) >= 0 and np.max(expect) > 1.0                  # it does precess (one way, nodding)


@pytest.mark.parametrize("mode, mu", [(SLIDING, 0.3), (ROLLING, 2.0)])
def test_the_constraint_force_is_the_momentum_change(mode, mu):
    """The table's force F from the acceleration-level constraint (used for the events and the rolling kicks)
    against a central difference of the motion over short steps: M dv/dt = Mg + F, dL/dt = (P − x) × F."""
    R, alpha = 0.02, 0.3
    body, I3 = tippe(R=R, alpha=alpha)
    sf = Surface(body, Table(mu=mu), (0, 0, -G))
    st = run(sf, spun_tippe(sf, R, alpha, 60.0, theta0=0.5), 0.05, 1e-4).final
    h = 1e-5
    r = run(sf, st, st.t + 2 * h, h / 8)
    mid = State(r.t[8], r.x[8], r.v[8], r.L[8], r.Q[8], str(r.mode[8]), 0)
    assert set(r.mode) == {mode}
    F = sf.force(mid)
    dv = (r.v[16] - r.v[0]) / (2 * h)
    dL = (r.L[16] - r.L[0]) / (2 * h)
    P = mid.x + body.b[0] @ mid.Q - R * np.array([0, 0, 1.0])
    scale = body.mass * G
    assert np.allclose(body.mass * dv, body.mass * np.array([0, 0, -G]) + F, atol=1e-6 * scale, rtol=0)
    assert np.allclose(dL, np.cross(P - mid.x, F), atol=1e-6 * scale * R, rtol=0)


def rolling_coin(theta, R, m=0.0075, a=0.0125):
    """A thin uniform coin (radius a) rolling steadily, leaning by θ towards the centre of the circle of radius R
    its centre runs on. Newton–Euler about the centre C for the steady motion (ω = Ωẑ + s k, C on the circle at
    ΩR): rolling gives s = −Ω(R + a sinθ)/a, and the torque of the contact force (mg up, mΩ²R inwards) turning L
    at Ω gives Ω² = mag tanθ / (I₁ sinθ + R(I₃/a + ma)) — for R ≫ a the textbook tanθ = (3/2)v²/(gR)."""
    I1, I3 = m * a * a / 4, m * a * a / 2
    omega = np.sqrt(m * a * G * np.tan(theta) / (I1 * np.sin(theta) + R * (I3 / a + m * a)))
    spin = -omega * (R + a * np.sin(theta)) / a
    x, y, z = np.eye(3)
    up = np.cos(theta) * z - np.sin(theta) * x          # from the contact point to the centre
    k = np.sin(theta) * z + np.cos(theta) * x           # the coin's axis
    body = TableBody(m, np.diag([I1, I1, I3]), [ContactRim((0, 0, 0), (0, 0, 1), a)], "coin")
    sf = Surface(body, Table(mu=1.0), (0, 0, -G))
    st = start_state(sf, R * x + a * np.cos(theta) * z, omega * R * y, omega * z + spin * k,
                     np.array([up, np.cross(k, up), k]))
    return sf, st, omega


def test_coin_rolls_on_the_closed_form_circle():
    """Its centre stays on the circle at the closed form's rate, the error shrinking at second order with the step
    (a 1 % error in Ω puts it a thousand times further off), rolling all the way, its energy kept."""
    theta, R = 0.3, 0.1
    sf, st, omega = rolling_coin(theta, R)
    assert st.mode == ROLLING
    period = 2 * np.pi / omega
    errors = []
    for dt in (1e-3, 5e-4):
        r = run(sf, st, 2 * period, dt, every=10)
        assert set(r.mode) == {ROLLING} and not r.events
        radius = np.hypot(r.x[:, 0], r.x[:, 1])
        phase = np.unwrap(np.arctan2(r.x[:, 1], r.x[:, 0]))
        errors.append((np.max(np.abs(radius - R)), np.max(np.abs(phase - omega * r.t))))
        assert np.max(np.abs(r.energy - r.energy[0])) <= 1e-5 * r.energy[0]
    (r1, p1), (r2, p2) = errors
    assert r2 <= 1e-4 * R and p2 <= 1e-3
    assert 3.2 < r1 / r2 < 5.0 and 3.2 < p1 / p2 < 5.0


def test_coin_lying_flat_rests_on_a_plane_and_is_reported_on_a_curved_table():
    """Flat on a plane it rests (test_surface_flat.py follows it); flat at the bottom of a bowl (a ring touching a
    sphere all round) is not modelled and says so."""
    body = TableBody(1.0, np.diag([1.0, 1.0, 2.0]), [ContactRim((0, 0, 0), (0, 0, 1), 0.1)], "coin")
    assert start_state(Surface(body, Table()), (0, 0, 0.0), (0, 0, 0), (0, 0, 0)).mode == FLAT_REST
    bowl = Table(wall=SphereWall((0.0, 0.0, 1.0), 1.0, inside=True, name="bowl"))
    with pytest.raises(SimulationError, match=r"'coin': contact rim #0 lies flat on 'bowl'"):
        start_state(Surface(body, bowl), (0, 0, 1.0 - np.sqrt(1.0 - 0.01)), (0, 0, 0), (0, 0, 0))
    with pytest.raises(ValidationError, match=r"coin\.contacts\[0\]\.axis"):
        TableBody(1.0, np.eye(3), [ContactRim((0, 0, 0), (0, 0, 0), 0.1)], "coin")


def test_dropped_ball_bounces_then_rests():
    """e = 0.5 from 0.2 m: rebounds at e^k·√(2gh) until one would not leave the table for a step, then rests."""
    a = 0.01
    sf = Surface(ball(0.05, a), Table(mu=0.2, restitution=0.5), (0, 0, -G))
    st = start_state(sf, (0, 0, a + 0.2), (0, 0, 0), (0, 0, 0))
    assert st.mode == APART
    r = run(sf, st, 2.0, 1e-3)
    impacts = [e.t for e in r.events if e.kind.startswith("impact")]
    t1 = np.sqrt(2 * 0.2 / G)
    expect = [t1 + sum(2 * 0.5 ** j * t1 for j in range(1, i + 1)) for i in range(4)]
    assert np.allclose(impacts[:4], expect, rtol=0, atol=1e-12)
    assert r.final.mode == ROLLING and abs(r.final.x[2] - a) <= 1e-12 and np.linalg.norm(r.final.v) <= 1e-12
    # the impacts' losses are booked: what is left of the energy is round-off (free flight is exact here)
    assert np.max(np.abs(r.energy_balance())) <= 1e-12 * r.energy[0]
    assert abs(r.impact_work[-1] + (r.energy[0] - r.energy[-1])) <= 1e-12 * r.energy[0]


def test_bad_input_is_named():
    with pytest.raises(ValidationError, match=r"table\.mu"):
        Table(mu=-0.1)
    with pytest.raises(ValidationError, match=r"radius"):
        TableBody(1.0, np.eye(3), [ContactSphere((0, 0, 0), 0.0)], "coin")
    with pytest.raises(ValidationError, match=r"ball\.contacts\[0\].*inside 'table'.*raise"):
        start_state(Surface(ball(), Table()), (0, 0, 0.02), (0, 0, 0), (0, 0, 0))
    with pytest.raises(ValidationError, match=r"friction"):
        Table(friction="sticky")
    with pytest.raises(ValidationError, match=r"rod\.contacts"):
        TableBody(1.0, np.eye(3), [], "rod")


def leaning_rod():
    """A rod (1 kg, 1 m) leaning at 45° on its end (a small sphere): (body, x, orientation)."""
    m, half = 1.0, 0.5
    I = m * half ** 2 / 3
    body = TableBody(m, np.diag([I, I, 1e-6 * I]), [ContactSphere((0, 0, -half), 1e-4)], "rod")
    th = np.pi / 4
    U = np.array([[0, 1.0, 0], [-np.sin(th), 0, np.cos(th)], [np.cos(th), 0, np.sin(th)]])
    U = np.array([U[0], np.cross(U[2], U[0]), U[2]])
    return body, np.array([0, 0, 1e-4]) + half * U[2], U


def test_painleve_configuration_is_reported_with_its_time():
    """A rod leaning at 45° on its end, sliding so that friction lifts it, with μ > (1 + 3cos²θ)/(3 sinθ cosθ)
    = 5/3: no normal force keeps the contact."""
    body, x, U = leaning_rod()
    errors = []
    for direction in (+1, -1):
        sf = Surface(body, Table(mu=3.0), (0, 0, -G))
        try:
            run(sf, start_state(sf, x, (direction * 1.0, 0, 0), (0, 0, 0), U), 0.01, 1e-4)
        except SimulationError as err:
            errors.append(err)
    assert len(errors) == 1 and "Painlevé" in str(errors[0]) and errors[0].time is not None


@pytest.mark.parametrize("law, words, not_words", [
    ("viscous", "the gliding friction gliding_friction = 3 s/m", "μ ="),
    ("coulomb", "friction μ = 3 ", "gliding"),
])
def test_painleve_names_the_coefficient_of_the_law_in_use(law, words, not_words):
    """The leaning rod on a gliding table (F = −μ_g N u_t, μ_g = 3 s/m): Painlevé's paradox names the gliding
    coefficient by its scene key and units, never as Coulomb's dimensionless μ (and Coulomb's is not called
    gliding); each says which setting to lower."""
    body, x, U = leaning_rod()
    errors = []
    for direction in (+1, -1):
        sf = Surface(body, Table(mu=3.0, friction=law), (0, 0, -G))
        try:
            run(sf, start_state(sf, x, (direction * 1.0, 0, 0), (0, 0, 0), U), 0.01, 1e-4)
        except SimulationError as err:
            errors.append(str(err))
    assert len(errors) == 1 and "Painlevé" in errors[0]
    key = "gliding_friction" if law == "viscous" else "contact_friction"
    assert words in errors[0] and not_words not in errors[0] and errors[0].endswith(f"lower the {key}"), errors[0]


@pytest.mark.slow
@pytest.mark.parametrize("factor, inverts", [(1.5, True), (0.6, False)])
def test_tippe_top_inverts_above_the_literature_threshold(factor, inverts):
    """Rauch-Wojciechowski & Rutstam (SIGMA 10, 017, 2014): with gliding friction and 1 − α² < γ = I₁/I₃ < 1, the
    top inverts when Jellett's λ exceeds √(mgR³I₃α)(1 + α)²/√(1 + α − γ); below it the inverted state is unstable
    and the top stops rising short of it. Jellett's λ is kept to round-off throughout."""
    m, R, alpha, gamma = 0.015, 0.02, 0.3, 0.95
    body, I3 = tippe(gamma, alpha, R, m)
    lam_thres = np.sqrt(m * G * R ** 3 * I3 * alpha) * (1 + alpha) ** 2 / np.sqrt(1 + alpha - gamma)
    spin = factor * lam_thres / (I3 * R * (1 - alpha))       # λ = I₃ω₃R(1 − α) spinning upright
    sf = Surface(body, Table(mu=0.3, friction="viscous"), (0, 0, -G))
    st = spun_tippe(sf, R, alpha, spin)
    r = run(sf, st, 10.0, 1e-3, every=50)
    k = int(np.argmax(body.moments))                      # I₃ > I₁: the symmetry axis
    axis = r.Q[:, k] * np.sign(r.Q[0, k] @ st.Q[k])
    tilt = np.degrees(np.arccos(np.clip(axis[:, 2], -1, 1)))
    lam = [sf.jellett(State(t, x, v, L, Q, SLIDING, 0)) for t, x, v, L, Q in zip(r.t, r.x, r.v, r.L, r.Q)]
    assert np.ptp(lam) <= 1e-12 * abs(lam[0])
    if inverts:
        assert tilt[-1] > 175.0
    else:
        assert tilt.max() < 120.0 and tilt[-1] > 30.0   # it rises, and hangs short of inverting
