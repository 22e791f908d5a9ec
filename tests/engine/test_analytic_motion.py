"""Analytic motions (model/analytic.py): an oscillating pivot or magnet, a uniform rotation — exact in every engine.

Oracles: central finite differences of each motion's own position (its velocity, acceleration and jerk, the signs
included) and Rodrigues' rotation (a second formula for the circle); an independent integrator (scipy's DOP853 on
Kapitza's equation θ̈ = (g + z̈ₚ)/l·sin θ, the pivot's acceleration in closed form) which the engine must approach
at its order, where a table stalls at its spline's error; the numpy engine for the compiled one (tests/roundoff.py).
"""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest

from pem_physics import Body, Dipole, Oscillation, Scene, Settings, UniformRotation, examples, simulate
from pem_physics.engine.system import compile_system, source_placement, source_rates
from pem_physics.errors import ValidationError
from pem_physics.model.inertia import MassProperties
from pem_physics.model.rotations import axis_angle_matrix

SHAKE = Oscillation(amplitudes=[(0.01, 0.0, 0.02), (0.0, -0.005, 0.003)], angular_frequencies=[7.0, 23.0],
                    phases=[0.3, -1.1], center=(0.1, 0.2, 0.3))


def turn(center=(0.05, -0.02, 0.0)):
    """A rotation about a tilted axis through ``center`` of a body starting at (0.1, 0.02, 0.04)."""
    return UniformRotation(axis=(0.3, -0.4, 1.0), angular_velocity=5.0, center=center).checked(
        "motion", (0.1, 0.02, 0.04))


def test_an_oscillations_rates_are_its_positions_derivatives():
    m = SHAKE.checked("motion")
    h = 1e-5
    for t in (0.0, 0.137, 2.5):
        for order, f in enumerate((m.velocity, m.acceleration, m.jerk)):
            lower = (m.position, m.velocity, m.acceleration)[order]
            fd = (lower(t + h) - lower(t - h)) / (2 * h)
            # central differences: error h²/6 of the next derivative (≤ 23⁴·0.02·h²/6 ≈ 1e-7 for the jerk)
            np.testing.assert_allclose(f(t), fd, rtol=0, atol=1e-6 * max(1.0, np.abs(fd).max()))
    np.testing.assert_allclose(m.position(0.0), [0.1 + 0.01 * np.cos(0.3), 0.2 - 0.005 * np.cos(-1.1),
                                                 0.3 + 0.02 * np.cos(0.3) + 0.003 * np.cos(-1.1)], rtol=0, atol=1e-16)
    times = np.array([0.1, 0.7, 1.9])   # at N times: (N, 3), the rows one at a time's
    np.testing.assert_array_equal(m.acceleration(times), np.array([m.acceleration(t) for t in times]))


def test_a_uniform_rotation_is_rodrigues_rotation_about_its_axis():
    m = turn()
    n = np.array([0.3, -0.4, 1.0]) / np.linalg.norm([0.3, -0.4, 1.0])
    c, p0 = np.array([0.05, -0.02, 0.0]), np.array([0.1, 0.02, 0.04])
    body = Body(name="m", role="driven", position=p0, motion=m, dipoles=(Dipole((0, 0, 0), (0, 0, 1)),)).checked("b")
    U0 = axis_angle_matrix(np.array([1.0, 0, 0]), 0.3).T
    body.orientation = U0
    for t in (0.0, 0.4, 3.3):
        R = axis_angle_matrix(n, 5.0 * t)
        want = c + R @ (p0 - c)
        np.testing.assert_allclose(m.position(t), want, rtol=0, atol=1e-15)     # the harmonic sum (a pivot's)
        origin, U = source_placement(body, t)                                   # the orbit's terms (a magnet's)
        np.testing.assert_allclose(origin, want, rtol=0, atol=1e-15)
        np.testing.assert_allclose(U, U0 @ R.T, rtol=0, atol=1e-15)
        v, w = source_rates(body, t)
        h = 1e-6
        np.testing.assert_allclose(v, (m.position(t + h) - m.position(t - h)) / (2 * h), rtol=0, atol=1e-9)
        # ω from the orientations: Ṙ Rᵀ = [ω]× (R = Uᵀ, body → lab)
        Rp, Rm = source_placement(body, t + h)[1].T, source_placement(body, t - h)[1].T
        W = (Rp - Rm) / (2 * h) @ U
        np.testing.assert_allclose([W[2, 1], W[0, 2], W[1, 0]], w, rtol=0, atol=1e-8)
        np.testing.assert_allclose(w, 5.0 * n, rtol=0, atol=1e-15)


def test_a_bad_analytic_motion_is_refused_naming_the_item():
    cases = [(Oscillation([(0, 0, 1)], [1.0, 2.0]), "motion.amplitudes", "one per angular frequency"),
             (Oscillation([(0, 0, 1)], [1.0], phases=[0.0, 1.0]), "motion.phases", "one per angular frequency"),
             (Oscillation([(0, 0, np.nan)], [1.0]), "motion.amplitudes[0]", "finite"),
             (Oscillation([], []), "motion.angular_frequencies", "one or more"),
             (UniformRotation(axis=(0, 0, 0), angular_velocity=1.0), "motion.axis", "is zero")]
    for motion, where, words in cases:
        with pytest.raises(ValidationError) as err:
            motion.checked("motion", (0.0, 0.0, 0.0))
        assert err.value.path == where and words in err.value.message, err.value


def kapitza_tilt(traj) -> np.ndarray:
    d = traj.center_of_mass[:, 0] - traj.position[:, 0]
    return np.arctan2(-d[:, 1], d[:, 2])


@pytest.mark.skipif(importlib.util.find_spec("scipy") is None, reason="the oracle is scipy's DOP853")
def test_kapitza_on_an_exact_oscillation_converges_to_an_independent_integrator():
    """θ̈ = (g − aω²cos ωt)/l·sin θ (the upright point pendulum in its shaken pivot's frame) by DOP853 at rtol 1e-13:
    the engine on the exact oscillation approaches it at fourth order, and its drivers' work balances the energy;
    the same pivot as a table of 40 samples a period stays off by its spline's error whatever the step."""
    from scipy.integrate import solve_ivp

    a, f, l, g, T = 0.01, 60.0, 0.2, 9.81, 0.5
    w = 2 * np.pi * f

    def rhs(t, y):
        return [y[1], (g - a * w * w * np.cos(w * t)) / l * np.sin(y[0])]

    errors = {}
    for table in (None, 40):
        for dt in (2e-4, 1e-4):
            traj = simulate(examples.kapitza(t_end=T, dt=dt, samples_per_period=table), record_interval=0.01)
            ref = solve_ivp(rhs, (0, T), [np.radians(6.0), 0.0], method="DOP853", rtol=1e-13, atol=1e-15,
                            t_eval=traj.t)
            errors[table, dt] = np.abs(kapitza_tilt(traj) - ref.y[0]).max()
            if table is None:
                assert traj.energy_balance() < 1e-9     # measured 8e-11, 5e-12
    # measured 1.8e-10 → 1.1e-11 (×16: fourth order); the table 1.8e-4 at both steps
    assert errors[None, 2e-4] / errors[None, 1e-4] > 12 and errors[None, 1e-4] < 1e-10, errors
    assert errors[40, 1e-4] > 1e-5 and errors[40, 1e-4] > 0.5 * errors[40, 2e-4], errors


def analytic_scene():
    """A pendulum on a pivot running round a tilted circle, magnets oscillating and turning about an off-centre
    axis, one pendulum on a fixed pivot: every analytic driver at once, on the numpy and the compiled engines."""
    rod = MassProperties(0.1, np.array([0.0, 0.0, -0.2]), np.diag([2e-5, 2e-5, 3e-6]))   # a body's: I1 + I2 ≥ I3
    tilt = axis_angle_matrix(np.array([1.0, 0.2, 0]) / np.hypot(1.0, 0.2), 0.4).T
    a = Body(name="a", position=(0, 0, 0.3), orientation=tilt,
             mass_properties=rod, dipoles=(Dipole((0, 0, -0.2), (0.1, 0.05, -0.3)),),
             pivot_motion=UniformRotation(axis=(0.2, 0.0, 1.0), angular_velocity=6.0, center=(0.01, 0.0, 0.3)))
    b = Body(name="b", position=(0.1, 0, 0.3), mass_properties=rod, dipoles=(Dipole((0, 0.01, -0.2), (0, 0, 0.2)),))
    shake = Oscillation(SHAKE.amplitudes, SHAKE.angular_frequencies, SHAKE.phases)   # about the body's position
    m1 = Body(name="m1", role="driven", position=(0.05, 0.0, -0.1), motion=shake,
              dipoles=(Dipole((0.01, 0, 0), (0.2, 0, 0.3)),))
    m2 = Body(name="m2", role="driven", position=(0.0, 0.03, -0.12),
              motion=UniformRotation((0, 0.3, 1.0), -4.0, (0.0, 0.0, -0.12)),
              dipoles=(Dipole((0, 0, 0.01), (0, 0.1, 0.2)),))
    return Scene(name="analytic", bodies=[a, b, m1, m2], gravity=(0, 0, -9.81),
                 settings=Settings(dt=1e-3, t_end=1.0, record_interval=0.02))


def test_the_drivers_power_of_analytic_motions_is_dV_dt():
    from pem_physics.engine.torques import evaluate

    scene = analytic_scene().checked()
    system = compile_system(scene)

    def V(U, t):
        r = evaluate(system, system.kin_body, U, t, energies=True)
        return float(r.gravity_energy.sum() + r.field_energy.sum() + r.dipole_energy.sum())

    rng = np.random.default_rng(5)
    for t in (0.05, 0.61):
        U = np.array([[axis_angle_matrix(v / np.linalg.norm(v), 0.5) for v in rng.normal(size=(2, 3))]])
        P = evaluate(system, system.kin_body, U, t, power=True).power[0]
        h = 1e-6
        assert P == pytest.approx((V(U, t + h) - V(U, t - h)) / (2 * h), rel=1e-6, abs=1e-12)


def test_a_scene_file_carries_analytic_motions(tmp_path):
    from pem_physics import load_scene
    from pem_physics.io.scene_writer import save_scene

    scene = analytic_scene().checked()
    save_scene(scene, tmp_path / "a.toml")
    text = (tmp_path / "a.toml").read_text(encoding="utf-8")
    assert 'kind = "oscillation"' in text and 'kind = "uniform_rotation"' in text
    back = load_scene(tmp_path / "a.toml").checked()
    for b0, b1 in zip(scene.bodies, back.bodies):
        for m0, m1 in ((b0.motion, b1.motion), (b0.pivot_motion, b1.pivot_motion)):
            assert type(m0) is type(m1)
            if isinstance(m0, Oscillation):      # the same numbers
                for k0, k1 in zip(m0.harmonic_terms(), m1.harmonic_terms()):
                    np.testing.assert_array_equal(k0, k1)
            elif isinstance(m0, UniformRotation):  # the same numbers; the circle's radii from the axis again
                np.testing.assert_array_equal(m0.axis, m1.axis)
                np.testing.assert_array_equal(m0.center, m1.center)
                assert m0.angular_velocity == m1.angular_velocity
                np.testing.assert_allclose(m0.harmonic_terms()[0], m1.harmonic_terms()[0], rtol=0, atol=1e-17)
    short = Settings(dt=1e-3, t_end=0.05, record_interval=0.01)
    one = simulate(dataclasses.replace(scene, settings=short))
    two = simulate(dataclasses.replace(back, settings=short))
    # the file's orientations are re-orthonormalised on reading (a few ulps): the runs agree to round-off
    np.testing.assert_allclose(one.orientation, two.orientation, rtol=0, atol=1e-13)
    np.testing.assert_allclose(one.driver_work, two.driver_work, rtol=0, atol=1e-13 * np.abs(one.driver_work).max())


@pytest.mark.parametrize("text, where, words", [
    ('{ kind = "oscillation", amplitudes = [[0, 0, 1]] }', "pivot_motion.angular_frequencies", "missing"),
    ('{ kind = "oscillation", amplitudes = [[0, 0]], angular_frequencies = [1] }', "pivot_motion.amplitudes[0]",
     "3 numbers"),
    ('{ kind = "uniform_rotation", axis = [0, 0, 0], angular_velocity = 1 }', "pivot_motion.axis", "non-zero"),
    ('{ kind = "constant_velocity", velocity = [1, 0, 0] }', "pivot_motion.kind", "a pivot is a point"),
])
def test_a_bad_analytic_motion_in_a_scene_file_names_the_item(text, where, words):
    from pem_physics.io.scenefile import loads

    with pytest.raises(ValidationError) as err:
        loads('format = "pem-scene"\nversion = 1\n[[bodies]]\nname = "bob"\npivot = [0, 0, 0]\n'
              'mass_properties = { mass = 1, center_of_mass = [0, 0, -0.1], inertia = [[1, 0, 0], [0, 1, 0], '
              f'[0, 0, 1]] }}\npivot_motion = {text}\n').checked()
    assert err.value.path == f"bodies[0].{where}" and words in err.value.message, err.value


def test_records_of_an_oscillating_pivot_are_those_taken_one_at_a_time():
    """The records of a run whose only driver is an oscillating pivot are evaluated at all their times in one call
    (the motion at N times); taken one record at a time they agree to round-off."""
    from pem_physics.engine.simulate import _record_state

    s = analytic_scene()
    a = dataclasses.replace(s.bodies[0], pivot_motion=SHAKE)
    fixed = Body(name="m", role="fixed", position=(0.02, 0.0, -0.1), dipoles=(Dipole((0, 0, 0), (0, 0.1, 0.2)),))
    scene = Scene(bodies=[a, s.bodies[1], fixed], gravity=s.gravity,
                  settings=Settings(dt=1e-3, t_end=0.5, record_interval=0.01)).checked()
    traj = simulate(scene)
    system = compile_system(scene)
    assert system.moving_pivots and system.static_sources
    for r in range(0, len(traj.t), 7):
        one = _record_state(system, traj.orientation[r][None], traj.angular_momentum[r][None],
                            traj.omega[r][None], float(traj.t[r]))
        for key in ("torque", "gravity_energy", "center_of_mass", "position"):
            want = one[key][0]
            np.testing.assert_allclose(np.asarray(getattr(traj, key))[r], want, rtol=0,
                                       atol=1e-13 * max(1.0, float(np.max(np.abs(want)))), err_msg=key)
        np.testing.assert_allclose(traj.position[r, 0], SHAKE.checked("m").position(traj.t[r]), rtol=0, atol=1e-15)
