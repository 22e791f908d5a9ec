"""Free bodies that translate (6 DOF; theory §7): forces, splitting, contacts, diagnostics, input errors.

Oracles, each worked out here independently of the engine: the parabola of a projectile; the dipole
force as the central finite difference of the pair energy written out below; the time two magnetic
marbles released from rest take to meet, by quadrature of the energy integral (scipy); momentum and
angular-momentum conservation of isolated pairs; the energy error order of splitting4 by halving dt;
rebound velocities of a ball off a wall and of two spheres (head-on and oblique) from momentum
conservation and the definition of e; DOP853 against splitting4 on a scene with everything at once.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad

from pem_physics.engine.simulate import simulate
from pem_physics.engine.system import compile_system
from pem_physics.engine.torques import dipole_pair_terms, evaluate
from pem_physics.errors import ValidationError
from pem_physics.io.scene_writer import dumps
from pem_physics.io.scenefile import loads
from pem_physics.model.inertia import Cylinder, Sphere
from pem_physics.model.rotations import axis_angle_matrix
from pem_physics.model.scene import MU0, Body, ContactSphere, Dipole, Scene, Settings, StaticWall

K = MU0 / (4 * np.pi)


def pair_energy(ra, pa, rb, pb, k=K):
    """U = k/r³ [p_a·p_b − 3 (p_a·r̂)(p_b·r̂)], r = r_a − r_b (theory §3), written out here."""
    d = np.asarray(ra, float) - np.asarray(rb, float)
    r = np.linalg.norm(d)
    n = d / r
    return k / r**3 * (pa @ pb - 3 * (pa @ n) * (pb @ n))


def ball(name, position=(0.0, 0.0, 0.0), velocity=(0.0, 0.0, 0.0), radius=0.01, mass=0.1, moment=None,
         contact=True, **kw):
    return Body(name=name, role="free", translate=True, position=position, velocity=velocity,
                shapes=(Sphere(radius=radius, mass=mass),),
                dipoles=() if moment is None else (Dipole((0.0, 0.0, 0.0), moment),),
                contacts=(ContactSphere((0.0, 0.0, 0.0), radius),) if contact else (), **kw)


# ---------------------------------------------------------------------------- free flight

@pytest.mark.parametrize("method", ["splitting4", "splitting2", "dop853"])
def test_projectile_follows_the_parabola(method):
    g, x0, v0 = 9.81, np.array([0.1, -0.2, 1.0]), np.array([1.0, 0.5, 2.0])
    # the sphere's origin sits 2 cm off its centre of mass: position is the body origin, velocity the CoM's
    body = Body(name="ball", role="free", translate=True, position=x0, velocity=v0, angular_velocity=(0, 0, 3.0),
                shapes=(Sphere(radius=0.01, mass=0.1, center=(0.02, 0.0, 0.0)),))
    traj = simulate(Scene(bodies=[body], gravity=(0, 0, -g), settings=Settings(dt=0.01, t_end=0.5)), method=method)
    t = traj.t[:, None]
    com0 = x0 + np.array([0.02, 0.0, 0.0])
    want = com0 + v0 * t + 0.5 * np.array([0.0, 0.0, -g]) * t**2
    tol = 1e-12 if method != "dop853" else 1e-9
    np.testing.assert_allclose(traj.position[:, 0], want, rtol=0, atol=tol)
    np.testing.assert_allclose(traj.center_of_mass[:, 0], want, rtol=0, atol=tol)
    np.testing.assert_allclose(traj.velocity[:, 0], v0 + np.array([0.0, 0.0, -g]) * t, rtol=0, atol=tol)
    np.testing.assert_allclose(traj.linear_momentum[:, 0], 0.1 * traj.velocity[:, 0], rtol=1e-15, atol=0)
    # spin about z untouched (a sphere, no torque about its centre of mass); energy: ½Mv² + ½Iω² + Mgz
    np.testing.assert_allclose(traj.omega[:, 0], np.broadcast_to([0, 0, 3.0], traj.omega[:, 0].shape), atol=1e-12)
    E = 0.5 * 0.1 * (v0 @ v0) + 0.5 * 0.4 * 0.1 * 0.01**2 * 9.0 + 0.1 * g * com0[2]
    np.testing.assert_allclose(traj.total_energy, E, rtol=1e-12)
    assert "engine_reason" not in traj.info  # the compiled engine translates too (test_compiled_translation.py)
    assert traj.translating.tolist() == [True]


def test_free_bodies_without_translate_keep_their_centre():
    body = Body(name="top", role="free", position=(0.0, 0.0, 1.0), angular_velocity=(0, 1.0, 5.0),
                shapes=(Cylinder(radius=0.02, half_length=0.005, axis=(0, 0, 1), mass=0.1),))
    traj = simulate(Scene(bodies=[body], gravity=(0, 0, -9.81), settings=Settings(dt=1e-3, t_end=0.1)))
    np.testing.assert_array_equal(traj.position[:, 0], np.broadcast_to([0.0, 0.0, 1.0], (len(traj.t), 3)))
    np.testing.assert_array_equal(traj.linear_momentum, 0.0)
    assert traj.translating.tolist() == [False]
    assert "engine_reason" not in traj.info


# ---------------------------------------------------------------------------- forces

vec = st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3).map(np.array)


@settings(max_examples=40, deadline=None)
@given(pa=vec.filter(lambda v: np.linalg.norm(v) > 0.05), pb=vec.filter(lambda v: np.linalg.norm(v) > 0.05),
       direction=vec.filter(lambda v: np.linalg.norm(v) > 0.1), r=st.floats(0.01, 0.2))
def test_dipole_force_is_minus_the_energy_gradient(pa, pb, direction, r):
    rb = np.array([0.01, -0.02, 0.03])
    ra = rb + r * direction / np.linalg.norm(direction)
    _, F, U = dipole_pair_terms(ra[None, None], pa[None, None], rb[None, None], pb[None, None], K,
                                energy_weights=np.ones(1))
    assert U[0, 0] == pytest.approx(pair_energy(ra, pa, rb, pb), rel=1e-12, abs=1e-18)
    h = 1e-6 * r
    grad = np.array([(pair_energy(ra + h * e, pa, rb, pb) - pair_energy(ra - h * e, pa, rb, pb)) / (2 * h)
                     for e in np.eye(3)])
    scale = K * np.linalg.norm(pa) * np.linalg.norm(pb) / r**4
    np.testing.assert_allclose(F[0, 0], -grad, rtol=0, atol=1e-7 * scale + 1e-300)


def test_reference_head_to_tail_force():
    """theory §3: |p| = 0.4 A·m², r = 3 cm head to tail: U = −1.1852e-3 J, attraction 0.1185 N."""
    p = np.array([0.4, 0.0, 0.0])
    _, F, U = dipole_pair_terms(np.array([[[0.03, 0, 0]]]), p[None, None], np.zeros((1, 1, 3)), p[None, None], K,
                                energy_weights=np.ones(1))
    assert U[0, 0] == pytest.approx(-1.1852e-3, rel=1e-4)
    assert F[0, 0, 0] == pytest.approx(-0.11852, rel=1e-4) and F[0, 0, 1:].tolist() == [0.0, 0.0]


def two_body_system(seed):
    rng = np.random.default_rng(seed)

    def body(name, x):
        axis = rng.normal(size=3)
        R = axis_angle_matrix(axis / np.linalg.norm(axis), rng.uniform(0, 3))
        return Body(name=name, role="free", translate=True, position=x, orientation=R.T,
                    velocity=rng.normal(size=3) * 0.1, angular_velocity=rng.normal(size=3),
                    shapes=(Cylinder(radius=0.004, half_length=0.006, axis=(0, 0, 1), mass=0.003),
                            Sphere(radius=0.003, mass=0.002, center=(0.004, 0, 0.002))),
                    dipoles=tuple(Dipole(rng.normal(size=3) * 0.003, rng.normal(size=3) * 0.05) for _ in range(2)))

    fixed = Body(name="f", role="fixed", position=(0.0, 0.03, -0.01), dipoles=(Dipole((0, 0, 0), (0, 0.02, 0.05)),))
    return Scene(bodies=[body("a", (0.0, 0.0, 0.0)), body("b", (0.03, 0.01, 0.005)), fixed],
                 gravity=(0.3, -0.2, -9.81), field=(1e-3, 0, 2e-3))


def system_energy(system, U, X):
    """Gravity, field and dipole–dipole energy (J) of one state, U (B,3,3), X (B,3), from the body constants."""
    kin = system.kin_body
    r = X[system.owner] + np.einsum("dij,di->dj", U[system.owner], kin.dpos)
    p = np.einsum("dij,di->dj", U[system.owner], kin.dmom)
    rs, ms = system.sources(0.0)
    E = -float(np.sum(system.mass * ((X + np.einsum("bij,bi->bj", U, kin.com)) @ system.gravity)))
    E -= float(np.sum(p @ system.field))
    for i in range(len(r)):
        for j in range(len(r)):
            if i < j and system.owner[i] != system.owner[j]:
                E += pair_energy(r[i], p[i], r[j], p[j])
        for j in range(len(rs)):
            E += pair_energy(r[i], p[i], rs[j], ms[j])
    return E


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_forces_and_torques_are_energy_derivatives(seed):
    """F = −∂E/∂x and T·δψ = −δE (a turn of the body about its centre of mass) by central differences."""
    system = compile_system(two_body_system(seed).checked())
    U, X = system.U0.copy(), system.pivot.copy()
    res = evaluate(system, system.kin_body, U[None], 0.0, X=X[None])
    h = 1e-7
    for b in range(2):
        for k, e in enumerate(np.eye(3)):
            Xp, Xm = X.copy(), X.copy()
            Xp[b] += h * e
            Xm[b] -= h * e
            dE = (system_energy(system, U, Xp) - system_energy(system, U, Xm)) / (2 * h)
            assert res.force[0, b, k] == pytest.approx(-dE, rel=1e-6, abs=1e-9 * np.abs(res.force).max())
            Up, Um = U.copy(), U.copy()
            Up[b] = U[b] @ axis_angle_matrix(e, h).T
            Um[b] = U[b] @ axis_angle_matrix(e, -h).T
            dE = (system_energy(system, Up, X) - system_energy(system, Um, X)) / (2 * h)
            assert res.torque[0, b, k] == pytest.approx(-dE, rel=1e-6, abs=1e-9 * np.abs(res.torque).max())


def test_ensemble_members_translate_like_single_runs():
    from pem_physics.engine.simulate import Ensemble

    scene = two_body_system(4)
    spins = np.stack([compile_system(scene.checked()).omega0, np.zeros((2, 3))])
    traj = simulate(scene, dt=1e-3, t_end=0.05, ensemble=Ensemble(angular_velocity=spins))
    single = simulate(scene, dt=1e-3, t_end=0.05)
    np.testing.assert_allclose(traj.member(0).position, single.position, rtol=0, atol=1e-15)
    assert traj.position.shape == (2, 51, 2, 3) and traj.member(1).translating.tolist() == [True, True]
    assert np.abs(traj.position[1] - traj.position[0]).max() > 1e-9  # the spin matters (off-centre dipoles)


def test_step_check_knows_the_translational_frequency():
    """A magnet above an antiparallel fixed one: axial stiffness ∂²U/∂z² = 24kp₁p₂/z⁵ (the largest of
    the force's derivatives), so ω = √(24kp₁p₂/(z⁵M)); a huge moment of inertia keeps turning slow."""
    from pem_physics.engine import checks
    from pem_physics.model.inertia import MassProperties

    M, p1, p2, z = 0.002, 0.02, 0.05, 0.02
    top = Body(name="top", role="free", translate=True, position=(0, 0, z),
               mass_properties=MassProperties(M, np.zeros(3), np.eye(3)), dipoles=(Dipole((0, 0, 0), (0, 0, p1)),))
    base = Body(name="base", role="fixed", dipoles=(Dipole((0, 0, 0), (0, 0, -p2)),))
    system = compile_system(Scene(bodies=[top, base], gravity=(0, 0, 0)).checked())
    assert checks.fastest_frequency(system) == pytest.approx(np.sqrt(24 * K * p1 * p2 / (z**5 * M)), rel=1e-6)


# ---------------------------------------------------------------------------- magnetic marbles

def marbles(d0=0.04, m=0.004, R=0.005, p=0.05, e=1.0):
    return Scene(bodies=[ball("a", (0.0, 0, 0), radius=R, mass=m, moment=(p, 0, 0)),
                         ball("b", (d0, 0, 0), radius=R, mass=m, moment=(p, 0, 0))],
                 gravity=(0, 0, 0), restitution=e, settings=Settings(dt=2.5e-4, t_end=0.4))


def meeting_time(d0=0.04, m=0.004, R=0.005, p=0.05):
    """Head to tail U(r) = −2kp²/r³; relative motion with reduced mass m/2 from rest at d0 to contact at 2R:
    t = ∫ dr / √(2(U(d0) − U(r))/μ), with r = d0 − (d0 − 2R)s² to lift the 1/√ singularity at the start."""
    mu, L = m / 2, d0 - 2 * R

    def U(r):
        return -2 * K * p * p / r**3

    def f(s):
        return 2 * L * s / np.sqrt(2 * (U(d0) - U(d0 - L * s * s)) / mu)

    return quad(f, 0, 1, epsabs=0, epsrel=1e-13)[0]


def test_marbles_meet_at_the_time_of_the_energy_integral():
    T = meeting_time()
    traj = simulate(marbles(), dt=5e-4, t_end=1.0, record_interval=0.05)
    assert traj.events.t[0] == pytest.approx(T, rel=5e-11)  # measured 1.0e-11
    assert (traj.events.body1[0], traj.events.body2[0]) == ("a", "b")
    np.testing.assert_array_equal(traj.total_linear_momentum, 0.0)  # mirror-symmetric: exactly
    # e = 1: they fly apart to rest at d0 at 2T and meet again at 3T
    assert len(traj.events) == 2 and traj.events.t[1] == pytest.approx(3 * T, rel=2e-8)  # measured 3.4e-9
    assert traj.energy_balance() < 1e-8
    # splitting4: the error of the meeting time is O(dt⁴)
    coarse = simulate(marbles(), dt=1e-3, t_end=0.35, record_interval=0.05).events.t[0]
    assert 12 < abs(coarse - T) / abs(traj.events.t[0] - T) < 22  # 2⁴ = 16; measured 18.7


# ---------------------------------------------------------------------------- conservation, order

def test_isolated_pair_conserves_momentum_and_angular_momentum():
    scene = two_body_system(8)
    scene.bodies = scene.bodies[:2]
    scene.gravity, scene.field = (0, 0, 0), (0, 0, 0)
    traj = simulate(scene, dt=5e-4, t_end=0.3)
    P, J = traj.total_linear_momentum, traj.total_angular_momentum
    p_scale = np.abs(traj.linear_momentum).max()
    j_scale = np.abs(traj.angular_momentum).max() + np.abs(np.cross(traj.position, traj.linear_momentum)).max()
    assert np.abs(P - P[0]).max() < 1e-13 * p_scale
    assert np.abs(J - J[0]).max() < 1e-13 * j_scale
    assert np.abs(traj.linear_momentum[-1] - traj.linear_momentum[0]).max() > 1e-3 * p_scale  # they do interact


def test_energy_error_of_splitting4_is_fourth_order_and_dop853_agrees():
    scene = two_body_system(4)  # (other seeds bring two dipoles within a millimetre: no contacts here to stop them)
    errs = []
    for dt in (2e-3, 1e-3, 5e-4):
        traj = simulate(scene, dt=dt, t_end=0.2, record_interval=0.01)
        E = traj.total_energy
        errs.append(np.abs(E - E[0]).max() / np.abs(traj.kinetic_energy.sum(-1)).max())
        assert traj.info["warnings"] == []
    ratios = np.array(errs[:-1]) / errs[1:]
    assert np.all((ratios > 14) & (ratios < 18)), ratios  # 2⁴ = 16; measured 16.08, 16.02
    ref = simulate(scene, method="dop853", dt=1e-3, t_end=0.2, record_interval=0.01)
    np.testing.assert_allclose(traj.position, ref.position, rtol=0, atol=1e-9)
    np.testing.assert_allclose(traj.orientation, ref.orientation, rtol=0, atol=1e-7)  # measured 1.2e-8


def test_energy_error_stays_bounded():
    """A magnet floating above an antiparallel fixed one (on the axis, so it stays there): U = Mgz + 2kp²/z³,
    an oscillation; splitting2's energy error must not grow over ~100 periods."""
    top = ball("float", (0.0, 0.0, 0.02), radius=0.003, mass=0.002, moment=(0, 0, 0.02), contact=False)
    base = Body(name="base", role="fixed", dipoles=(Dipole((0, 0, 0), (0, 0, -0.05)),))
    scene = Scene(bodies=[top, base], gravity=(0, 0, -9.81), settings=Settings(dt=2e-3, t_end=12.0,
                                                                              record_interval=0.02))
    traj = simulate(scene, method="splitting2")
    z = traj.position[:, 0, 2]
    assert z.max() - z.min() > 1e-3 and np.all(z > 0.005)
    E = traj.total_energy
    err = np.abs(E - E[0]) / np.abs(E[0])
    half = len(err) // 2
    assert err.max() < 1e-3
    assert err[half:].max() < 1.5 * err[:half].max()


# ---------------------------------------------------------------------------- contacts

@pytest.mark.parametrize("e", [1.0, 0.7, 0.0])
def test_ball_rebounds_off_a_wall_with_e(e):
    v0, R, x0, wall_x = 2.0, 0.01, 0.0, 0.1
    b = ball("ball", (x0, 0, 0), (v0, 0.5, 0), radius=R, angular_velocity=(0, 0, 7.0))
    wall = StaticWall(kind="plane", name="wall", point=(wall_x, 0, 0), normal=(-1, 0, 0))
    traj = simulate(Scene(bodies=[b], gravity=(0, 0, 0), restitution=e, walls=(wall,),
                          settings=Settings(dt=1e-3, t_end=0.1)))
    t_hit = (wall_x - R - x0) / v0
    assert len(traj.events) == 1 and traj.events.t[0] == pytest.approx(t_hit, rel=1e-12)
    np.testing.assert_allclose(traj.velocity[-1, 0], [-e * v0, 0.5, 0.0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(traj.omega[-1, 0], [0, 0, 7.0], atol=1e-12)  # frictionless: spin untouched
    x_end = wall_x - R - e * v0 * (0.1 - t_hit)
    assert traj.position[-1, 0, 0] == pytest.approx(x_end, abs=1e-12)
    assert traj.events.energy_loss == pytest.approx(0.5 * 0.1 * v0**2 * (1 - e * e), rel=1e-10)
    np.testing.assert_allclose(traj.events.impulse[0], [-(1 + e) * 0.1 * v0, 0, 0], rtol=1e-12)


def test_ball_on_a_lever_arm_uses_the_full_effective_mass():
    """A dumbbell (two point masses m at ±a on x, total 2m, I_zz = 2ma²) whose end hits a wall moving along y:
    K_yy = 1/(2m) + a²/(2ma²) = 1/m, so j = (1 + e) m v; the centre of mass keeps (1 − (1 + e)/2) v."""
    m, a, v, e, R = 0.05, 0.02, 1.0, 0.5, 0.005
    from pem_physics.model.inertia import MassProperties

    I = np.diag([0.0, 2 * m * a * a, 2 * m * a * a]) + np.diag([1e-9, 0, 0])
    body = Body(name="bar", role="free", translate=True, velocity=(0, v, 0),
                mass_properties=MassProperties(2 * m, np.zeros(3), I),
                contacts=(ContactSphere((a, 0, 0), R), ContactSphere((-a, 0, 0), R)))
    wall = StaticWall(kind="plane", name="wall", point=(0.0, 0.05, 0), normal=(0, -1, 0))
    # turn the bar a hair so that only the +a end touches first
    body = replace(body, orientation=axis_angle_matrix(np.array([0, 0, 1.0]), 0.01).T)
    # the touching end bounces back, the bar turns, and its other end hits ~0.4 ms later: stop before that
    traj = simulate(Scene(bodies=[body], gravity=(0, 0, 0), restitution=e, walls=(wall,),
                          settings=Settings(dt=1e-4, t_end=0.045)))
    c, s = np.cos(0.01), np.sin(0.01)
    r = np.array([a * c, a * s, 0.0])  # lever arm of the touching end (ω = 0 before the impact: exact)
    Kyy = 1 / (2 * m) + r[0] ** 2 / I[2, 2]
    j = (1 + e) * v / Kyy
    assert len(traj.events) == 1
    assert traj.events.impulse[0][1] == pytest.approx(-j, rel=1e-10)
    assert traj.velocity[-1, 0, 1] == pytest.approx(v - j / (2 * m), rel=1e-10)
    assert traj.omega[-1, 0, 2] == pytest.approx(-r[0] * j / I[2, 2], rel=1e-10)  # (r × J)_z = −r_x j


def two_spheres(m1, m2, R1, R2, v1, b, e):
    s1 = ball("one", (-0.05, b, 0), (v1, 0, 0), radius=R1, mass=m1)
    s2 = ball("two", (0.0, 0.0, 0.0), radius=R2, mass=m2)
    return Scene(bodies=[s1, s2], gravity=(0, 0, 0), restitution=e, settings=Settings(dt=1e-3, t_end=0.05))


@pytest.mark.parametrize("b", [0.0, 0.012])
@pytest.mark.parametrize("e", [1.0, 0.6])
def test_sphere_hits_sphere(b, e):
    m1, m2, R1, R2, v1 = 0.1, 0.3, 0.01, 0.015, 2.0
    traj = simulate(two_spheres(m1, m2, R1, R2, v1, b, e))
    # contact: centres R1 + R2 apart; normal from two to one
    x_hit = -np.sqrt((R1 + R2) ** 2 - b * b)
    n = np.array([x_hit, b, 0.0]) / (R1 + R2)
    assert traj.events.t[0] == pytest.approx((x_hit + 0.05) / v1, rel=1e-12)
    u1 = np.array([v1, 0, 0])
    un = u1 @ n  # approach speed along n (sphere two at rest)
    # along n: momentum conserved, relative normal speed reversed × e; across n: unchanged
    w1n = (m1 * un - m2 * e * un) / (m1 + m2)
    w2n = (m1 * un + m1 * e * un) / (m1 + m2)
    want1 = u1 + (w1n - un) * n
    want2 = w2n * n
    np.testing.assert_allclose(traj.velocity[-1, 0], want1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(traj.velocity[-1, 1], want2, rtol=0, atol=1e-12)
    np.testing.assert_allclose(traj.total_linear_momentum[-1], [m1 * v1, 0, 0], rtol=0, atol=1e-14)
    np.testing.assert_allclose(traj.omega[-1], 0.0, atol=1e-12)  # central impact on spheres: no spin
    loss = 0.5 * m1 * v1**2 - 0.5 * m1 * want1 @ want1 - 0.5 * m2 * want2 @ want2
    assert traj.events.energy_loss == pytest.approx(loss, rel=1e-9, abs=1e-15)


def test_pendulum_bob_strikes_a_free_ball():
    """A point-mass pendulum (m₁ on length l) at the bottom of its swing with speed u hits a resting free ball
    m₂ centrally: K = 1/m₁ (pivot) + 1/m₂ along the line, so the ball leaves with (1 + e) m₁ u/(m₁ + m₂)."""
    from pem_physics.model.inertia import MassProperties

    m1, m2, l, R, e, u = 0.2, 0.1, 0.5, 0.01, 0.8, 1.0
    bob = Body(name="bob", position=(0, 0, l), angular_velocity=(0, -u / l, 0),  # bob at the origin moving +x
               mass_properties=MassProperties(m1, np.array([0, 0, -l]), np.zeros((3, 3))),
               contacts=(ContactSphere((0, 0, -l), R),))
    gap = 1e-6
    target = ball("target", (2 * R + gap, 0, 0), radius=R, mass=m2)
    traj = simulate(Scene(bodies=[bob, target], gravity=(0, 0, 0), restitution=e,
                          settings=Settings(dt=1e-4, t_end=2e-3)))
    assert len(traj.events) == 1
    # the bob swings on a circle: by the impact it has turned by ≈ gap/l, far below the tolerance
    assert traj.velocity[-1, 1, 0] == pytest.approx((1 + e) * m1 * u / (m1 + m2), rel=1e-4)


# ---------------------------------------------------------------------------- resting contacts

def test_ball_placed_on_the_floor_rests_there():
    b = ball("ball", (0.3, 0.0, 0.01), (0.2, 0.0, 0.0), radius=0.01)  # touching the floor, sliding along x
    floor = StaticWall(kind="plane", name="floor", normal=(0, 0, 1))
    traj = simulate(Scene(bodies=[b], gravity=(0, 0, -9.81), restitution=0.5, walls=(floor,),
                          settings=Settings(dt=1e-3, t_end=0.5)))
    assert traj.events.kind == ["rest"] and traj.events.t == [0.0]
    np.testing.assert_array_equal(traj.position[:, 0, 2], 0.01)  # held on the floor exactly
    np.testing.assert_allclose(traj.position[:, 0, 0], 0.3 + 0.2 * traj.t, rtol=0, atol=1e-13)  # frictionless slide
    assert traj.energy_balance() < 1e-12  # measured 7e-14


def test_a_magnet_lifts_a_resting_ball_off_the_floor():
    """A magnet on a ball resting on the floor; another, coaxial and head to tail, comes down from above at
    constant speed: the ball leaves the floor when the attraction 6kp₁p₂/r⁴ exceeds Mg (to within a step)."""
    from pem_physics.model.scene import ConstantVelocity

    M, g, R, p1, p2, v, dt = 0.01, 9.81, 0.005, 0.02, 0.05, 0.05, 1e-3
    b = ball("ball", (0, 0, R), radius=R, mass=M, moment=(0, 0, p1))
    top = Body(name="top", role="driven", position=(0, 0, 0.1), motion=ConstantVelocity((0, 0, -v)),
               dipoles=(Dipole((0, 0, 0), (0, 0, p2)),))
    floor = StaticWall(kind="plane", name="floor", normal=(0, 0, 1))
    traj = simulate(Scene(bodies=[b, top], gravity=(0, 0, -g), restitution=0.5, walls=(floor,),
                          settings=Settings(dt=dt, t_end=1.75)))  # lift-off at 1.72 s
    assert traj.events.kind == ["rest", "lift-off"]
    r_lift = (6 * K * p1 * p2 / (M * g)) ** 0.25
    t_lift = (0.1 - R - r_lift) / v
    assert 0 <= traj.events.t[1] - t_lift <= 2 * dt
    before = traj.t < t_lift
    np.testing.assert_array_equal(traj.position[before, 0, 2], R)
    assert traj.position[-1, 0, 2] > R and traj.velocity[-1, 0, 2] > 0  # pulled up


def test_ball_slides_inside_a_loop_and_leaves_at_the_seed_angle():
    """theory §7 (seed): inside a circle of radius R (here the path of the ball's centre), g = 1, started at
    the bottom with v0² = 3.5·gR, the ball leaves the wall where cos θ = (2gR − v0²)/(3gR) = −1/2 (θ = 120°
    from the bottom, half a radius above the centre). The held contact is a projection: first order in dt."""
    Rw, r, g = 2.0, 0.01, 1.0
    R = Rw - r
    wall = StaticWall(kind="cylinder", name="loop", point=(0, 0, 0), direction=(0, 1, 0), radius=Rw)
    err = []
    for dt in (5e-3, 2.5e-3):
        b = ball("ball", (0, 0, -R), (np.sqrt(3.5 * g * R), 0, 0), radius=r, mass=1.0)
        traj = simulate(Scene(bodies=[b], gravity=(0, 0, -g), restitution=0.5, walls=(wall,),
                              settings=Settings(method="splitting2", dt=dt, t_end=2.2)))
        assert traj.events.kind == ["rest", "lift-off"]
        i = np.searchsorted(traj.t, traj.events.t[1])
        on = np.linalg.norm(traj.position[:i, 0][:, [0, 2]], axis=-1)
        np.testing.assert_allclose(on, R, rtol=1e-12)  # on the wall until it leaves
        x = traj.position[i, 0]
        err.append(abs(-x[2] / R - (-0.5)))
        assert traj.energy_balance() < 1e-12  # what the projections took is booked with the impacts
    assert err[0] < 0.02 and 1.6 < err[0] / err[1] < 2.5  # measured 0.009, 0.0044


# ---------------------------------------------------------------------------- files and input errors

def test_scene_file_round_trip_and_outputs(tmp_path):
    from pem_physics.analysis.plot import read_trajectory
    from pem_physics.io.output import csv_columns, write_outputs

    scene = marbles()
    text = dumps(scene)
    assert "translate = true" in text
    back = loads(text)
    assert back.bodies[1].translating and back.bodies[1].velocity.tolist() == [0.0, 0.0, 0.0]
    traj = simulate(back, t_end=0.05)
    summary = write_outputs(traj, tmp_path)
    assert summary["translating"] == ["a", "b"]
    again = read_trajectory(tmp_path)
    np.testing.assert_array_equal(again.position, traj.position)
    np.testing.assert_array_equal(again.linear_momentum, traj.linear_momentum)
    cols, table = csv_columns(traj)
    assert "b.x_x" in cols and "a.p_z" in cols
    np.testing.assert_array_equal(table[:, cols.index("b.x_x")], traj.position[:, 1, 0])


def test_velocity_in_file_units():
    text = """
format = "pem-scene"
version = 1
[units]
length = 0.01
[[bodies]]
role = "free"
translate = true
velocity = [100, 0, 0]
mass_properties = {mass = 0.1, center_of_mass = [0, 0, 0], inertia = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}
"""
    assert loads(text).bodies[0].velocity.tolist() == [1.0, 0.0, 0.0]


BASE = """
format = "pem-scene"
version = 1
[[bodies]]
mass_properties = {mass = 0.1, center_of_mass = [0, 0, 0], inertia = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}
"""


@pytest.mark.parametrize("extra, path, message", [
    ('role = "free"\ntranslate = true\nvelocity = [1, 2]', r"bodies\[0\]\.velocity", "expected 3 numbers, got 2"),
    ('role = "free"\ntranslate = "yes"', r"bodies\[0\]\.translate", "expected true or false"),
    ('pivot = [0, 0, 0]\ntranslate = true', r"bodies\[0\]\.translate", "only free bodies translate"),
    ('role = "free"\nvelocity = [1, 0, 0]', r"bodies\[0\]\.velocity", "only a translating body has a velocity"),
    ('role = "free"\ntranslate = true\nhinge = [0, 0, 1]', r"bodies\[0\]\.hinge", "cannot be hinged"),
])
def test_bad_input_names_the_item(extra, path, message):
    text = BASE.replace("[[bodies]]\n", "[[bodies]]\n" + extra + "\n")
    with pytest.raises(ValidationError, match=rf"^{path}: .*{message}"):
        loads(text).checked()


def test_model_errors_name_the_item():
    body = ball("x")
    with pytest.raises(ValidationError, match=r"^bodies\[0\]\.velocity: expected 3 numbers"):
        Scene(bodies=[replace(body, velocity=(1.0, 2.0))]).checked()
    with pytest.raises(ValidationError, match=r"^bodies\[0\]\.translate: only free bodies translate"):
        Scene(bodies=[replace(body, role="pendulum")]).checked()
    with pytest.raises(ValidationError, match=r"^bodies\[0\]\.velocity: only a translating body"):
        Scene(bodies=[replace(body, translate=False, contacts=(), velocity=(1.0, 0, 0))]).checked()
    with pytest.raises(ValidationError, match=r"^bodies\[0\]\.contacts: only pendulum, fixed and translating"):
        Scene(bodies=[replace(body, translate=False, velocity=(0, 0, 0))]).checked()


@pytest.mark.parametrize("method", ["pem-rk4", "pem-euler"])
def test_pem_schemes_refuse_translation(method):
    scene = Scene(bodies=[ball("marble", contact=False)])
    with pytest.raises(ValidationError, match=rf"^settings\.method: '{method}' cannot run translating bodies "
                                              r"\('marble' has translate = true\)"):
        simulate(scene, method=method)


def test_udf_writer_refuses_translation(tmp_path):
    from pem_physics.io.udf_write import write_udf

    scene = Scene(bodies=[ball("marble", contact=False)], settings=Settings(method="pem-rk4"))
    with pytest.raises(ValidationError, match=r"^bodies\[0\]\.translate: PEM has no translation"):
        write_udf(scene, tmp_path / "x.udf")


def test_bake_follows_a_moving_centre():
    from pem_physics.io.bake import world_matrices

    U = np.stack([np.eye(3), axis_angle_matrix(np.array([0, 0, 1.0]), 0.5).T])
    C = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    M0 = np.eye(4)
    M0[:3, 3] = [0.1, 0.0, 0.0]  # the object's origin 10 cm from the centre of mass
    W = world_matrices(U, C, M0)
    A = axis_angle_matrix(np.array([0, 0, 1.0]), 0.5)
    np.testing.assert_allclose(W[1, :3, 3], C[1] + A @ [0.1, 0, 0], atol=1e-15)
    np.testing.assert_allclose(world_matrices(U, C[0], M0), world_matrices(U, np.zeros((2, 3)), M0), atol=0)
