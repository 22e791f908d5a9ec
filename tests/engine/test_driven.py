"""Driven magnets (constant velocity, elliptic orbit) against their closed-form motion.

Oracles, all independent of ``engine.system.source_placement`` and ``PemSourceDriver``:
- the motion written out here from its definition (model.scene docstrings, PEM's ``Body.cpp``):
  constant velocity x(t) = x₀ + v t; elliptic orbit x(t) = c + r₁ cos φ + r₂ sin φ, φ = φ₀ + ωt, the
  body turned about n = r₁×r₂/|r₁×r₂| by ωt (rotation from scipy, not from pem_physics);
- a FIXED magnet put where the driven one must be: the torques must be equal;
- the dipole field B = k/r³ [3 (m·r̂) r̂ − m] (theory §3) and scipy's DOP853 on the 1-DOF equation
  of a hinged needle: the whole trajectory must agree;
- PEM's own bookkeeping for ``pem-*`` (PemSimulator.cpp: bodies move once per step, after it, with
  the clock at the end of the step: RK4 advances it by dt inside a step, Euler does not).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from pem_physics.engine.integrators import make_integrator
from pem_physics.engine.simulate import simulate
from pem_physics.engine.system import compile_system
from pem_physics.engine.torques import evaluate
from pem_physics.model import MU0, Body, ConstantVelocity, Dipole, EllipticOrbit, Scene, Settings
from pem_physics.model.inertia import MassProperties

K = MU0 / (4 * np.pi)

#: The driven magnet's body frame (rows u1, u2, u3 in the lab) and its two dipoles (body coordinates).
SOURCE_U0 = Rotation.from_rotvec([0.3, -0.5, 0.8]).as_matrix().T
SOURCE_DIPOLES = (((0.004, 0.0, -0.002), (0.0, 0.5, 0.1)), ((-0.003, 0.002, 0.0), (0.2, 0.0, -0.3)))

CV = ConstantVelocity(velocity=(0.2, 0.03, -0.01))
CV_START = np.array([-0.2, 0.05, 0.01])
ORBIT = EllipticOrbit(center=(0.01, -0.02, 0.015), r1=(0.06, 0.0, 0.0), r2=(0.0, 0.04, 0.01),
                      angular_velocity=3.0, phase=0.7)


def closed_form_placement(motion, start, U0, t):
    """Origin (3,) and frame (rows = body axes, lab) of a driven body at time t, from the motion's definition."""
    if isinstance(motion, ConstantVelocity):
        return np.asarray(start) + np.asarray(motion.velocity) * t, np.asarray(U0)
    r1, r2 = np.asarray(motion.r1, float), np.asarray(motion.r2, float)
    phi = motion.phase + motion.angular_velocity * t
    origin = np.asarray(motion.center) + r1 * np.cos(phi) + r2 * np.sin(phi)
    n = np.cross(r1, r2)
    turn = Rotation.from_rotvec(n / np.linalg.norm(n) * motion.angular_velocity * t).as_matrix()
    return origin, np.asarray(U0) @ turn.T  # each body axis u_i → turn · u_i


def source_body(motion, role="driven", position=CV_START, orientation=SOURCE_U0):
    return Body(name="magnet", role=role, position=position, orientation=orientation,
                dipoles=[Dipole(p, m) for p, m in SOURCE_DIPOLES], motion=motion if role == "driven" else None)


def needle_body(hinge=None, dipoles=((0.0, 0.0, 0.0), (0.2, 0.0, 0.0))):
    return Body(name="needle", hinge=hinge, orientation=Rotation.from_rotvec([0.2, 0.1, -0.4]).as_matrix().T,
                mass_properties=MassProperties(1e-3, np.zeros(3), np.diag([1e-7, 2e-6, 2e-6])),
                dipoles=[Dipole(*dipoles)])


@pytest.mark.parametrize("motion", [CV, ORBIT], ids=["constant_velocity", "elliptic_orbit"])
def test_driven_magnet_torque_equals_fixed_magnet_at_its_closed_form_place(motion):
    """At every t the driven magnet acts on a needle exactly like a fixed magnet placed (position and
    orientation) where the closed-form motion puts it at t — for the dipole–dipole torque, the lever
    arm term s × F and the energy."""
    needle = needle_body(dipoles=((0.01, -0.005, 0.002), (0.2, 0.05, -0.1)))
    driven = compile_system(Scene(bodies=[needle, source_body(motion)], gravity=(0, 0, 0)).checked())
    U = driven.U0[None]
    for t in (0.0, 0.37, 1.0, 1.6):
        origin, frame = closed_form_placement(motion, CV_START, SOURCE_U0, t)
        fixed = compile_system(Scene(bodies=[needle, source_body(None, "fixed", origin, frame)],
                                     gravity=(0, 0, 0)).checked())
        got = evaluate(driven, driven.kin_body, U, t, energies=True)
        want = evaluate(fixed, fixed.kin_body, U, 0.0, energies=True)
        assert np.abs(want.torque).max() > 1e-7  # the magnet is near enough to matter
        np.testing.assert_allclose(got.torque, want.torque, rtol=1e-11, atol=1e-14 * np.abs(want.torque).max())
        np.testing.assert_allclose(got.dipole_energy, want.dipole_energy, rtol=1e-11)


def dipole_field(r, r_src, m):
    """B (T) at r of a point dipole m at r_src (theory §3)."""
    d = np.asarray(r) - np.asarray(r_src)
    dist = np.linalg.norm(d)
    e = d / dist
    return K / dist**3 * (3 * (m @ e) * e - m)


def hinged_needle_reference(motion, t_eval, p=0.2, J=2e-6):
    """θ(t) of a needle hinged about z at the origin, dipole p at the pivot along body x, in the field of
    the driven magnet at its closed-form place: J θ'' = (p × B)_z (scipy DOP853, tight tolerances)."""
    def field(t):
        origin, frame = closed_form_placement(motion, CV_START, SOURCE_U0, t)
        return sum(dipole_field(np.zeros(3), origin + np.asarray(pos) @ frame, np.asarray(m) @ frame)
                   for pos, m in SOURCE_DIPOLES)

    def rhs(t, y):
        th, w = y
        B = field(t)
        return [w, p * (np.cos(th) * B[1] - np.sin(th) * B[0]) / J]

    sol = solve_ivp(rhs, (0, t_eval[-1]), [0.0, 0.0], method="DOP853", rtol=1e-12, atol=1e-14, t_eval=t_eval)
    return sol.y[0]


# Measured (splitting4, dt = 1e-3, 2 s): max |θ − θ_ref| = 7.6e-12 rad (constant velocity; the needle
# swings through 4.9 rad) and 2.9e-11 rad (orbit; it spins through 27.5 rad), as DOP853 does (the reference's
# own error); splitting2 is at 2.0e-6 and 5.9e-5 rad. Tolerances ~7× the measured error.
@pytest.mark.parametrize("motion, tol", [(CV, 5e-11), (ORBIT, 2e-10)], ids=["constant_velocity", "elliptic_orbit"])
def test_needle_turned_by_driven_magnet_follows_closed_form_equation_of_motion(motion, tol):
    """A hinged compass needle at rest, swung by a passing / orbiting magnet: the default method's θ(t)
    against the 1-DOF equation of motion with the magnet's field written out here."""
    needle = Body(name="needle", hinge=(0, 0, 1), dipoles=[Dipole((0, 0, 0), (0.2, 0, 0))],
                  mass_properties=MassProperties(1e-3, np.zeros(3), np.diag([1e-7, 2e-6, 2e-6])))
    scene = Scene(bodies=[needle, source_body(motion)], gravity=(0, 0, 0),
                  settings=Settings(dt=1e-3, t_end=2.0, record_interval=1e-2))
    tr = simulate(scene)
    u1 = tr.orientation[:, 0, 0]
    theta = np.unwrap(np.arctan2(u1[:, 1], u1[:, 0]))
    ref = hinged_needle_reference(motion, tr.t)
    assert np.ptp(ref) > 0.3  # the magnet really turns the needle
    np.testing.assert_allclose(theta, ref, rtol=0, atol=tol)


@pytest.mark.parametrize("method", ["pem-rk4", "pem-euler"])
def test_pem_schemes_place_driven_magnets_like_pem(method):
    """PEM's bookkeeping (PemSimulator.cpp, Body.cpp), written out: the bodies move once before the
    first step and once after each step. Constant velocity: placed with the clock at the end of
    the previous step, i.e. during step i (1-based) at t = i·dt for RK4 (its clock runs one step
    ahead and advances by dt inside a step; 0 during step 1) and (i − 1)·dt for Euler. Orbit: the
    phase advances by ω·dt per move, φ₀ + i·ω·dt during step i; the frame turns by an explicit
    Euler step plus PEM's re-orthonormalisation (≈ the exact turn by i·ω·dt, O(i (ω dt)²))."""
    dt, steps = 1e-3, 40
    bodies = [needle_body(), source_body(CV),
              Body(name="orbiting", role="driven", orientation=SOURCE_U0, motion=ORBIT,
                   dipoles=[Dipole((0.0, 0.0, 0.0), (0.0, 0.0, 0.4))])]
    scene = Scene(bodies=bodies, gravity=(0, 0, 0), settings=Settings(method=method, dt=dt, t_end=steps * dt))
    system = compile_system(scene.checked())
    integ = make_integrator(method, system, dt, system.U0[None], system.omega0[None])
    seen = []
    current = integ.driver.current

    def spy():
        r, m = current()
        seen.append((integ.steps_done + 1, r.copy(), m.copy()))
        return r, m

    integ.driver.current = spy
    integ.advance(steps)
    assert [s[0] for s in seen] == list(range(1, steps + 1))  # one placement per step
    for i, r, m in seen:
        t_cv = (i * dt if i > 1 else 0.0) if method == "pem-rk4" else (i - 1) * dt
        origin, frame = closed_form_placement(CV, CV_START, SOURCE_U0, t_cv)
        for k, (pos, mom) in enumerate(SOURCE_DIPOLES):
            np.testing.assert_allclose(r[k], origin + np.asarray(pos) @ frame, rtol=0, atol=1e-15)
            np.testing.assert_allclose(m[k], np.asarray(mom) @ frame, rtol=0, atol=1e-15)
        origin, frame = closed_form_placement(ORBIT, None, SOURCE_U0, i * dt)
        np.testing.assert_allclose(r[2], origin, rtol=0, atol=1e-15)
        turn_error = i * (ORBIT.angular_velocity * dt) ** 2
        np.testing.assert_allclose(m[2], np.array([0.0, 0.0, 0.4]) @ frame, rtol=0, atol=0.4 * turn_error)
