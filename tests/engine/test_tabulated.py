"""Tabulated motions in the engine: moving pivots (the pivot frame's inertial force) and driven magnets on tables.

Oracles: central finite differences of the potential energy (the torque is −∂V/∂θ, the drivers' power ∂V/∂t at
fixed orientations); a pivot accelerating uniformly is gravity g − A (a second scene with a fixed pivot); a pivot
moving uniformly changes nothing but where the body is (Galilei); the energy balance with the drivers' work
converges with dt at the order the kinked force allows.
"""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest

from pem_physics import Body, Dipole, Scene, Settings, TabulatedMotion, simulate
from pem_physics.engine.system import compile_system
from pem_physics.engine.torques import evaluate
from pem_physics.model.inertia import MassProperties
from pem_physics.model.rotations import axis_angle_matrix, orientation_to_quat
from pem_physics.model.scene import EllipticOrbit, RotatingField


def rot(axis, angle):
    axis = np.asarray(axis, dtype=float)
    return axis_angle_matrix(axis / np.linalg.norm(axis), angle)


ROD = MassProperties(0.1, np.array([0.0, 0.0, -0.2]), np.diag([1e-5, 2e-5, 3e-6]))


def table(fn, T=1.0, K=101):
    t = np.linspace(0.0, T, K)
    return TabulatedMotion(t, np.array([fn(tk) for tk in t]))


def busy_scene(T=1.0):
    """Two pendulums (one on a moving pivot, one on a fixed one) with magnets, a magnet on a keyed table with
    orientations, one on an analytic orbit, and a rotating field: every way V depends on t."""
    spin = np.array([rot([0.3, 0.4, 0.866], 3.0 * tk).T for tk in np.linspace(0, T, 81)])
    t = np.linspace(0, T, 81)
    keyed = TabulatedMotion(t, np.stack([0.05 + 0.02 * np.sin(4 * t), 0.03 * t, -0.1 + 0 * t], 1),
                            orientation_to_quat(spin))
    a = Body(name="a", position=(0, 0, 0.3), orientation=rot([1.0, 0.2, 0], 0.4).T,
             mass_properties=ROD, dipoles=(Dipole((0, 0, -0.2), (0.1, 0.05, -0.3)),),
             pivot_motion=table(lambda s: [0.01 * np.sin(7 * s), 0.005 * s ** 2, 0.02 * np.cos(5 * s)], T))
    b = Body(name="b", position=(0.1, 0, 0.3), mass_properties=ROD, dipoles=(Dipole((0, 0.01, -0.2), (0, 0, 0.2)),))
    m1 = Body(name="m1", role="driven", motion=keyed, dipoles=(Dipole((0.01, 0, 0), (0.2, 0, 0.3)),))
    m2 = Body(name="m2", role="driven", dipoles=(Dipole((0, 0, 0), (0, 0.1, 0.2)),),
              motion=EllipticOrbit(center=(0, 0, -0.12), r1=(0.04, 0, 0), r2=(0, 0.03, 0), angular_velocity=5.0))
    return Scene(bodies=[a, b, m1, m2], gravity=(0, 0, -9.81),
                 rotating_field=RotatingField(b1=(1e-3, 0, 0), b2=(0, 1e-3, 0), angular_velocity=3.0),
                 settings=Settings(dt=1e-3, t_end=T)).checked()


def potential(system, U, t):
    res = evaluate(system, system.kin_body, U, t, energies=True)
    return float(res.gravity_energy.sum() + res.field_energy.sum() + res.dipole_energy.sum())


def test_the_drivers_power_is_dV_dt_at_fixed_orientations():
    system = compile_system(busy_scene())
    rng = np.random.default_rng(3)
    for t in (0.1234, 0.4567, 0.7891):   # between samples: at a sample ∂V/∂t steps (the acceleration kinks)
        U = np.array([[rot(rng.normal(size=3), rng.uniform(0, 1)) for _ in range(2)]])
        P = evaluate(system, system.kin_body, U, t, power=True).power[0]
        h = 1e-6   # inside one sample interval of every table: V is smooth there
        fd = (potential(system, U, t + h) - potential(system, U, t - h)) / (2 * h)
        assert P == pytest.approx(fd, rel=1e-6, abs=1e-9 * abs(potential(system, U, t)))


def test_the_torque_of_a_moving_pivot_is_minus_dV_dtheta():
    """The inertial force −M·a_pivot is in the torque with the sign of the potential M·R_G·a_pivot."""
    system = compile_system(busy_scene())
    t = 0.37
    U = np.array([[rot([0.2, 1.0, 0.3], 0.7), np.eye(3)]])
    T = evaluate(system, system.kin_body, U, t).torque[0, 0]
    h = 1e-6
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1.0
        # turning body a by a small angle about lab axis e: U → U·Rᵀ(e, h) (rows: body axes in lab)
        Up, Um = U.copy(), U.copy()
        Up[0, 0] = U[0, 0] @ axis_angle_matrix(e, h).T
        Um[0, 0] = U[0, 0] @ axis_angle_matrix(e, -h).T
        dV = (potential(system, Up, t) - potential(system, Um, t)) / (2 * h)
        assert T[k] == pytest.approx(-dV, rel=1e-6, abs=1e-9)


def swing_scene(pivot_motion=None, gravity=(0.0, 0.0, -9.81), T=1.0):
    bob = Body(name="bob", position=(0, 0, 0.3), orientation=rot([1.0, 0.5, 0], 0.5).T,
               mass_properties=ROD, angular_velocity=(0.3, -0.2, 1.0), pivot_motion=pivot_motion)
    return Scene(bodies=[bob], gravity=gravity, settings=Settings(dt=1e-3, t_end=T, record_interval=0.01))


def test_a_uniformly_accelerating_pivot_is_gravity_minus_its_acceleration():
    A = np.array([0.5, -1.0, 3.0])
    moving = simulate(swing_scene(table(lambda s: np.array([0, 0, 0.3]) + 0.5 * A * s * s, K=21)))
    still = simulate(swing_scene(gravity=np.array([0.0, 0.0, -9.81]) - A))
    # the spline reproduces ½At² exactly but for rounding, which the chaotic-free 1 s swing keeps small
    np.testing.assert_allclose(moving.orientation, still.orientation, rtol=0, atol=1e-11)
    np.testing.assert_allclose(moving.position[:, 0], np.array([0, 0, 0.3]) + 0.5 * moving.t[:, None] ** 2 * A,
                               rtol=0, atol=1e-14)
    np.testing.assert_allclose(moving.center_of_mass - moving.position, still.center_of_mass - still.position,
                               rtol=0, atol=1e-11)


def test_a_uniformly_moving_pivot_changes_nothing_but_the_place():
    v = np.array([0.2, 0.1, -0.05])
    moving = simulate(swing_scene(table(lambda s: np.array([0, 0, 0.3]) + v * s, K=11)))
    still = simulate(swing_scene())
    # the spline's acceleration of a straight line is zero only to rounding (~1e-16 of g): 1e-10 after 1000 steps
    np.testing.assert_allclose(moving.orientation, still.orientation, rtol=0, atol=1e-10)
    np.testing.assert_allclose(moving.position[:, 0] - still.position[:, 0], moving.t[:, None] * v, atol=1e-14)
    assert moving.energy_balance() < 1e-9


def test_the_energy_balance_converges_with_dt():
    """Sampled pivot motion (2 kHz): the force kinks at the samples, so the method is second order there and so is
    the balance (the drivers' work summed by the kicks, the jerk's steps corrected); dt not a divisor of the
    sampling."""
    motion = table(lambda s: [0.01 * np.sin(2 * np.pi * 10 * s), 0.0, 0.01 * np.cos(2 * np.pi * 7 * s)], T=0.41, K=821)
    out = []
    for dt in (2.6e-4, 1.3e-4, 6.5e-5):
        scene = swing_scene(motion, T=0.4)
        scene = Scene(bodies=scene.bodies, gravity=scene.gravity,
                      settings=Settings(dt=dt, t_end=0.4, record_interval=20 * dt))
        tr = simulate(scene)
        assert tr.driver_work is not None and not tr.info["warnings"]
        out.append(tr.energy_balance())
    # measured 1.7e-6, 3.6e-7, 9.7e-8 (the energy the pivot exchanges is 5× the scale: 2e-7 of it); second order
    # overall, each knot's O(dt²) share of either sign making single halvings irregular
    assert out[0] < 1e-5 and out[0] / out[2] > 8, out


def test_the_splitting_methods_and_dop853_sum_the_drivers_work_and_pems_schemes_say_they_do_not():
    scene = swing_scene(table(lambda s: [0.01 * np.sin(5 * s), 0, 0], K=41))
    from pem_physics.engine import checks

    tr = simulate(scene, method="pem-rk4")
    assert tr.driver_work is None and tr.info["warnings"] == [checks.BALANCE_NOT_SUMMED]
    tr = simulate(scene, method="splitting2")
    assert tr.driver_work is not None and tr.info["warnings"] == []


@pytest.mark.skipif(importlib.util.find_spec("scipy") is None, reason="dop853 needs scipy")
@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_dop853_integrates_the_drivers_work_with_the_state():
    """DOP853 carries W' = ∂V/∂t as one more state: its balance E − W is then its tolerance's (rtol 1e-10), and its
    W is the splitting's W (a second method) — every kind of driver at once (moving pivot, keyed magnet with
    orientations, orbit, rotating field)."""
    scene = busy_scene(T=1.0)   # sampled every 12.5 ms: the pivot's jerk steps at each sample, DOP853 halts there
    scene = dataclasses.replace(scene, settings=Settings(dt=1e-3, t_end=0.1, record_interval=0.01))
    ref = simulate(scene, method="dop853")
    split = simulate(scene, method="splitting4", dt=2.5e-4)
    assert ref.info["warnings"] == [] and ref.driver_work is not None
    # measured 8e-11 (dop853), 6e-16 (splitting4)
    assert ref.energy_balance() < 1e-8
    scale = np.abs(ref.driver_work).max()
    np.testing.assert_allclose(ref.driver_work, split.driver_work, rtol=0, atol=1e-6 * scale)  # measured 4e-8
    # the work matters: without it the balance is off by far more than the tolerance
    assert dataclasses.replace(ref, driver_work=0 * ref.driver_work).energy_balance() > 1e-3


def test_the_drivers_work_is_written_and_read_back(tmp_path):
    from pem_physics.analysis.plot import read_trajectory
    from pem_physics.io.output import write_outputs

    tr = simulate(swing_scene(table(lambda s: [0.01 * np.sin(5 * s), 0, 0], K=41)))
    summary = write_outputs(tr, tmp_path)
    back = read_trajectory(tmp_path)
    np.testing.assert_array_equal(back.driver_work, tr.driver_work)
    assert back.energy_balance() == tr.energy_balance() == summary["energy_balance_error_relative"]
    assert summary["driver_work_final_J"] == float(tr.driver_work[-1])


def pivot_only_scene(T=0.5):
    """The busy scene's two pendulums and a fixed magnet, only pivot "a" moving: the records' times enter only
    through the pivots."""
    s = busy_scene(T)
    fixed = Body(name="m", role="fixed", position=(0.02, 0.0, -0.1), dipoles=(Dipole((0, 0, 0), (0, 0.1, 0.2)),))
    return Scene(bodies=[s.bodies[0], s.bodies[1], fixed], gravity=s.gravity,
                 settings=Settings(dt=1e-3, t_end=T)).checked()


def test_records_of_a_moving_pivot_are_those_taken_one_at_a_time():
    """The records of a run whose pivot moves are evaluated in one call (each record's time a row's); taken one
    record at a time (the second method: ``evaluate`` at each record's time alone) every recorded array agrees to
    round-off."""
    from pem_physics.engine.simulate import _record_state

    scene = pivot_only_scene()
    traj = simulate(scene)
    system = compile_system(scene)
    assert system.moving_pivots and system.static_sources
    U, L, w = traj.orientation, traj.angular_momentum, traj.omega
    for r in range(0, len(traj.t), 37):
        one = _record_state(system, U[r][None], L[r][None], w[r][None], float(traj.t[r]))
        for key in ("torque", "gravity_energy", "dipole_energy", "field_energy", "center_of_mass", "dipole_position",
                    "position"):
            got = np.asarray(getattr(traj, key))[r]
            want = one[key][0]
            scale = max(1.0, float(np.max(np.abs(want))))
            np.testing.assert_allclose(got[: want.shape[0]] if got.ndim else got, want, rtol=0,
                                       atol=1e-13 * scale, err_msg=f"{key} at record {r}")
