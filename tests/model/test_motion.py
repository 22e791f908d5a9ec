"""Tabulated motions (model/motion.py): the spline, its derivatives, orientations, and bad tables.

Oracles: scipy's CubicSpline with the same end slopes; the cubic through four points (numpy.polyfit); closed-form
motions (sin, cos, a uniform turn) and their derivatives; central finite differences of the orientation; the
orders of convergence of a clamped cubic spline (h⁴, h³, h² for position, velocity, acceleration).
"""

from __future__ import annotations

import numpy as np
import pytest

from pem_physics import Body, Dipole, Scene, Settings, TabulatedMotion, ValidationError
from pem_physics.model.inertia import MassProperties
from pem_physics.model.motion import MIN_SAMPLES, _end_slopes
from pem_physics.model.rotations import axis_angle_matrix, orientation_to_quat


def curve(t):
    return np.stack([np.sin(3 * t), np.cos(2 * t), t ** 2], -1)


def curve_d(t, k):
    return [np.stack([3 * np.cos(3 * t), -2 * np.sin(2 * t), 2 * t], -1),
            np.stack([-9 * np.sin(3 * t), -4 * np.cos(2 * t), 2 + 0 * t], -1)][k - 1]


def test_the_spline_is_scipys_clamped_spline_with_the_four_point_end_slopes():
    scipy_interp = pytest.importorskip("scipy.interpolate")
    rng = np.random.default_rng(1)
    t = np.concatenate([[0.0], np.sort(rng.uniform(0.0, 2.0, 28)), [2.0]])
    x = curve(t)
    m = TabulatedMotion(t, x).checked("m")
    s0, s1 = _end_slopes(t, x)
    for end, s in ((slice(0, 4), s0), (slice(-4, None), s1)):   # the cubic through the four end samples
        c = np.array([np.polyfit(t[end], x[end, k], 3) for k in range(3)])
        at = t[0] if end.start == 0 else t[-1]
        np.testing.assert_allclose(s, [np.polyval(np.polyder(ck), at) for ck in c], rtol=1e-9, atol=1e-9)
    ref = scipy_interp.CubicSpline(t, x, bc_type=((1, s0), (1, s1)))
    for tt in np.concatenate([t, rng.uniform(0, 2, 50)]):
        np.testing.assert_allclose(m.position(tt), ref(tt), rtol=0, atol=1e-13)
        np.testing.assert_allclose(m.velocity(tt), ref(tt, 1), rtol=0, atol=1e-12)
        np.testing.assert_allclose(m.acceleration(tt), ref(tt, 2), rtol=0, atol=1e-10)
        np.testing.assert_allclose(m.jerk(tt), ref(tt, 3), rtol=1e-9, atol=1e-8)


def test_samples_are_met_and_cubics_are_reproduced():
    t = np.array([0.0, 0.3, 0.35, 1.0, 1.7, 2.0])
    x = np.stack([t ** 3 - 2 * t, 0.5 * t ** 2, 4.0 + 0 * t], 1)
    m = TabulatedMotion(t, x).checked("m")
    for k, tk in enumerate(t):
        np.testing.assert_allclose(m.position(tk), x[k], atol=1e-14)
    for tt in np.linspace(0, 2, 41):
        np.testing.assert_allclose(m.position(tt), [tt ** 3 - 2 * tt, 0.5 * tt ** 2, 4.0], atol=1e-13)
        np.testing.assert_allclose(m.velocity(tt), [3 * tt ** 2 - 2, tt, 0.0], atol=1e-12)
        np.testing.assert_allclose(m.acceleration(tt), [6 * tt, 1.0, 0.0], atol=1e-11)


def test_orders_of_convergence_position_velocity_acceleration():
    errs = []
    tt = np.linspace(0.0, 2.0, 997)
    for K in (40, 80, 160):
        t = np.linspace(0.0, 2.0, K)
        m = TabulatedMotion(t, curve(t)).checked("m")
        errs.append([max(np.abs(m.position(a) - curve(a)).max() for a in tt),
                     max(np.abs(m.velocity(a) - curve_d(a, 1)).max() for a in tt),
                     max(np.abs(m.acceleration(a) - curve_d(a, 2)).max() for a in tt)])
    errs = np.array(errs)
    ratios = errs[:-1] / errs[1:]
    # h⁴, h³, h² (ratios 16, 8, 4 in the limit; a margin for the pre-asymptotic range)
    assert np.all(ratios[:, 0] > 12) and np.all(ratios[:, 1] > 6.5) and np.all(ratios[:, 2] > 3.5), ratios


def uniform_turn(K, omega=2.0, T=1.5, flip=False):
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    t = np.linspace(0.0, T, K)
    U0 = axis_angle_matrix(np.array([0.0, 1.0, 0.0]), 0.4).T
    Us = np.array([U0 @ axis_angle_matrix(axis, omega * tk).T for tk in t])
    q = orientation_to_quat(Us)
    if flip:
        q[1::2] *= -1  # q and −q are one rotation
    return t, Us, q, axis * omega


def test_orientations_pass_through_the_samples_and_give_the_angular_velocity():
    t, Us, q, w = uniform_turn(60)
    m = TabulatedMotion(t, np.zeros((len(t), 3)), q).checked("m")
    for k in (0, 17, 59):
        np.testing.assert_allclose(m.orientation(t[k]), Us[k], atol=1e-14)
    for tt in (0.0, 0.33, 0.9, 1.5):
        np.testing.assert_allclose(m.angular_velocity(tt), w, rtol=0, atol=2e-4 * np.linalg.norm(w))
        # ω against a central difference of U (rows: body axes; U̇ᵀ = [ω]× Uᵀ)
        d = 1e-6
        lo, hi = max(tt - d, 0.0), min(tt + d, 1.5)
        dU = (m.orientation(hi) - m.orientation(lo)) / (hi - lo)
        W = dU.T @ m.orientation(tt)
        np.testing.assert_allclose([W[2, 1], W[0, 2], W[1, 0]], m.angular_velocity(tt), atol=1e-6)
    # sign flips of the samples change nothing
    t, Us, qf, w = uniform_turn(60, flip=True)
    mf = TabulatedMotion(t, np.zeros((len(t), 3)), qf).checked("m")
    for tt in (0.1, 0.77):
        np.testing.assert_allclose(mf.orientation(tt), m.orientation(tt), atol=1e-15)


def test_angular_velocity_converges_with_the_samples():
    errs = []
    for K in (30, 60, 120):
        t, Us, q, w = uniform_turn(K)
        m = TabulatedMotion(t, np.zeros((K, 3)), q).checked("m")
        errs.append(max(np.abs(m.angular_velocity(a) - w).max() for a in np.linspace(0, 1.5, 301)))
    assert errs[0] / errs[1] > 6 and errs[1] / errs[2] > 6, errs   # h³ (8 in the limit)


T4 = [0.0, 0.1, 0.2, 0.3]
X4 = [[0, 0, 0], [1e-3, 0, 0], [2e-3, 0, 0], [3e-3, 0, 0]]


@pytest.mark.parametrize("times, positions, orientations, where, words", [
    (T4[:3], X4[:3], None, "m.times", f"at least {MIN_SAMPLES}"),
    ([0.0, 0.2, 0.1, 0.3], X4, None, "m.times[2]", "increase strictly"),
    ([0.0, 0.1, 0.1, 0.3], X4, None, "m.times[2]", "increase strictly"),
    ([0.0, 0.1, float("nan"), 0.3], X4, None, "m.times[2]", "finite"),
    (T4, [[0, 0, 0], [1e-3, 0, 0], [2e-3, float("inf"), 0], [3e-3, 0, 0]], None, "m.positions[2]", "finite"),
    (T4, X4[:3], None, "m.positions", "shape"),
    (T4 + [0.4, 0.5], X4 + [[0.5, 0, 0], [0.5, 0, 0]], None, "m.positions[4]", "jumps"),
    (T4, X4, [[1, 0, 0, 0]] * 3, "m.orientations", "shape"),
    (T4, X4, [[1, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]], "m.orientations[1]", "zero quaternion"),
    (T4, X4, [[1, 0, 0, 0], [1, 0, 0, float("nan")], [1, 0, 0, 0], [1, 0, 0, 0]], "m.orientations[1]", "finite"),
    (T4, X4, [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 1]], "m.orientations[1]", "jumps"),
    (T4, X4, [[1, 0, 0, 0], [0.5, 0, 0, 0.866], [-0.5, 0, 0, 0.866], [-1, 0, 0, 0]], "m.orientations[1]", "90°"),
])
def test_bad_tables_are_refused_naming_the_sample(times, positions, orientations, where, words):
    with pytest.raises(ValidationError) as err:
        TabulatedMotion(times, positions, orientations).checked("m")
    assert err.value.path == where and words in err.value.message, (err.value.path, err.value.message)


def test_a_one_sample_glitch_is_refused_and_a_kink_is_not():
    """A shaken pivot (1 cm at 5 Hz, 200 samples a second) with one sample 0.5 m out and back: each step into and
    out of it is as long as the other, so a step-by-step jump check passes it; the spike check names the sample.
    The same table with a kink (at rest, then moving) and a motion's turn are fine."""
    t = np.linspace(0.0, 1.0, 201)
    x = np.zeros((201, 3))
    x[:, 2] = 0.01 * np.sin(2 * np.pi * 5 * t)
    TabulatedMotion(t, x).checked("m")
    glitch = x.copy()
    glitch[100, 0] += 0.5
    with pytest.raises(ValidationError) as err:
        TabulatedMotion(t, glitch).checked("m")
    assert err.value.path == "m.positions[100]" and "a glitch" in err.value.message, err.value
    kink = np.zeros((201, 3))
    kink[100:, 0] = 0.3 * (t[100:] - t[100])
    TabulatedMotion(t, kink).checked("m")
    turn = np.stack([np.where(t < 0.5, t, 1.0 - t), np.zeros(201), np.zeros(201)], axis=1)   # out, then back
    TabulatedMotion(t, turn).checked("m")


def test_a_start_from_rest_and_uneven_sampling_are_no_jump():
    t = np.array([0.0, 0.1, 0.2, 0.21, 0.5, 0.6, 0.7])
    x = np.zeros((7, 3))
    x[3:, 0] = 0.2 * (t[3:] - 0.2)   # at rest, then moving at constant speed; samples unevenly spaced
    TabulatedMotion(t, x).checked("m")


def test_a_table_that_starts_or_ends_at_rest_starts_or_ends_with_no_speed():
    """Samples at rest, then moving (and back to rest): the four-point cubic through the start would give the
    start the speed of the motion after it (the audit's −4.17 m/s from samples at rest); two equal samples say the
    table is at rest there, so the spline is the clamped one with a zero end slope in that column (scipy's, checked
    independently) — positions and orientations alike: no speed, no spin at either end."""
    scipy_interp = pytest.importorskip("scipy.interpolate")
    t = np.linspace(0.0, 0.7, 8)
    x = np.zeros((8, 3))
    x[:, 0] = [0.0, 0.0, 0.0, 0.1, 0.2, 0.3, 0.3, 0.3]    # at rest, a kink, moving, at rest
    x[:, 1] = np.sin(3 * t)                              # moving at both ends: its four-point slopes stay
    angle = np.array([0.0, 0.0, 0.2, 0.5, 0.9, 1.2, 1.3, 1.3])
    q = np.array([orientation_to_quat(axis_angle_matrix(np.array([0.0, 0.0, 1.0]), a)) for a in angle])
    m = TabulatedMotion(t, x, q).checked("m")
    np.testing.assert_array_equal(m.velocity(0.0)[0], 0.0)
    assert abs(m.velocity(0.7)[0]) < 1e-15
    np.testing.assert_allclose(m.angular_velocity(0.0), 0.0, atol=1e-15)
    np.testing.assert_allclose(m.angular_velocity(0.7), 0.0, atol=1e-15)
    s0, s1 = _end_slopes(t, x)
    assert s0[1] != 0.0 and s1[1] != 0.0
    ref = scipy_interp.CubicSpline(t, x, bc_type=((1, [0.0, s0[1], 0.0]), (1, [0.0, s1[1], 0.0])))
    for tt in np.linspace(0.0, 0.7, 71):
        np.testing.assert_allclose(m.position(tt), ref(tt), rtol=0, atol=1e-13)
        np.testing.assert_allclose(m.velocity(tt), ref(tt, 1), rtol=0, atol=1e-12)


def pendulum(**kw):
    return Body(name="bob", mass_properties=MassProperties(0.1, np.array([0, 0, -0.2]), np.zeros((3, 3))),
                hinge=(1, 0, 0), **kw)


def test_a_scene_refuses_a_table_that_does_not_cover_the_run_and_misplaced_motions():
    t = np.linspace(0.0, 1.0, 11)
    x = np.zeros((11, 3))
    table = TabulatedMotion(t, x)
    ok = Scene(bodies=[pendulum(pivot_motion=table)], settings=Settings(dt=1e-3, t_end=1.0))
    assert ok.checked().bodies[0].pivot_motion.end == 1.0
    cases = [
        (Scene(bodies=[pendulum(pivot_motion=table)], settings=Settings(dt=1e-3, t_end=1.5)),
         "bodies[0].pivot_motion.times", "before the run's last step"),
        (Scene(bodies=[pendulum(pivot_motion=TabulatedMotion(t + 0.1, x))], settings=Settings(dt=1e-3, t_end=1.0)),
         "bodies[0].pivot_motion.times[0]", "after the run's start"),
        (Scene(bodies=[pendulum(), Body(name="m", role="fixed", dipoles=(Dipole((0, 0, 0), (0, 0, 1)),),
                                        pivot_motion=table)]),
         "bodies[1].pivot_motion", "only a pendulum"),
        (Scene(bodies=[pendulum(pivot_motion=TabulatedMotion(t, x, [[1, 0, 0, 0]] * 11))]),
         "bodies[0].pivot_motion.orientations", "positions only"),
        (Scene(bodies=[pendulum(motion=table)]), "bodies[0].motion", "only driven bodies"),
    ]
    for scene, where, words in cases:
        with pytest.raises(ValidationError) as err:
            scene.checked()
        assert err.value.path == where and words in err.value.message, (err.value.path, err.value.message)


def test_a_driven_body_on_a_table_starts_where_the_table_starts():
    t = np.linspace(0.0, 1.0, 11)
    x = np.stack([0.1 + t, 0 * t, 0 * t], 1)
    R = axis_angle_matrix(np.array([0.0, 0.0, 1.0]), 0.3).T
    q = np.repeat(orientation_to_quat(R)[None], 11, axis=0)
    magnet = Body(name="m", role="driven", dipoles=(Dipole((0, 0, 0), (0, 0, 1)),),
                  motion=TabulatedMotion(t, x, q))
    body = Scene(bodies=[pendulum(), magnet], settings=Settings(dt=1e-3, t_end=1.0)).checked().bodies[1]
    np.testing.assert_allclose(body.position, [0.1, 0, 0], atol=1e-15)
    np.testing.assert_allclose(body.orientation, R, atol=1e-15)


def test_the_slopes_at_the_samples_and_the_samples_fix_each_piece():
    """spline_slopes (what an import turns into Bezier handles): central differences of the interpolant at every
    sample (one-sided at the ends), and the Hermite cubic of each piece's end values and slopes is the spline
    between them (the pieces' midpoints)."""
    t, Us, q, w = uniform_turn(30)
    m = TabulatedMotion(t, curve(t), q).checked("m")
    times, y, _, has_rot = m.spline_table()
    s = m.spline_slopes()
    assert has_rot and s.shape == (len(t), 7)
    d = 1e-7   # one-sided at the ends: off by d·|y''|/2 ≲ 5e-7 there

    def value(tt):
        return np.concatenate([m.position(tt), m._rot(tt)])

    for k, tk in enumerate(times):
        lo, hi = max(tk - d, times[0]), min(tk + d, times[-1])
        np.testing.assert_allclose(s[k], (value(hi) - value(lo)) / (hi - lo), rtol=0, atol=1e-6)
    h = np.diff(times)[:, None]
    mid = 0.5 * (y[:-1] + y[1:]) + h * (s[:-1] - s[1:]) / 8.0     # Hermite cubic at its midpoint
    np.testing.assert_allclose(mid, [value(tk) for tk in 0.5 * (times[:-1] + times[1:])], rtol=0, atol=1e-14)
