"""Walls (engine/contact/walls.py): every gradient, Hessian and time derivative against central finite differences,
gaps against closed-form distances, zero gradients and bad input named."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pem_physics.engine.contact import walls as W
from pem_physics.errors import SimulationError, ValidationError

from budget import property_settings

H = 1e-5  # FD step (m, s): central differences err by ~H² · third derivative + eps/H ≈ 1e-10


def _rot(seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    return q * np.sign(np.linalg.det(q))


def _walls(seed):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-1, 1, 3)
    d = rng.normal(size=3)
    out = [W.Plane(c, d, "plane"),
           W.Sphere(c, 1.5, True, "sphere-in"), W.Sphere(c, 1.5, False, "sphere-out"),
           W.Cylinder(c, d, 1.2, True, "cyl-in"), W.Cylinder(c, d, 1.2, False, "cyl-out"),
           W.Box(c, [0.7, 1.1, 0.9], _rot(seed), True, "box-in"), W.Box(c, [0.7, 1.1, 0.9], None, False, "box-out"),
           W.Box(c, [0.7, 1.1, 0.9], _rot(seed + 1), False, "obox-out")]
    A = np.diag([1.0, 2.0, 3.0])
    out.append(W.UserWall(lambda x, t: x @ A @ x * (1 + 0.3 * np.sin(t)) - 2.0,
                          lambda x, t: 2 * A @ x * (1 + 0.3 * np.sin(t)),
                          lambda x, t: 2 * A * (1 + 0.3 * np.sin(t)),
                          lambda x, t: x @ A @ x * 0.3 * np.cos(t),
                          lambda x, t: 2 * A @ x * 0.3 * np.cos(t),
                          lambda x, t: -x @ A @ x * 0.3 * np.sin(t), name="ellipsoid-breathing"))
    amp, om = rng.uniform(0.1, 0.5, 3), 2.3
    out.append(W.Moving(W.Sphere(c, 1.5, False, "shaken"), lambda t: amp * np.sin(om * t),
                        lambda t: amp * om * np.cos(om * t), lambda t: -amp * om**2 * np.sin(om * t)))
    out.append(W.Moving(out[-2], lambda t: amp * t, lambda t: amp, lambda t: 0 * amp))  # both time dependences
    return out


def _smooth_here(w, x, t):
    """False where f has a kink within the FD stencil (box medial planes / region boundaries, centres)."""
    if isinstance(w, W.Box):
        y, q = w._local(x)
        qs = np.sort(q)
        if w.inside:
            return qs[2] - qs[1] > 10 * H
        return np.all(np.abs(q) > 10 * H) and np.all(np.abs(y) > 10 * H)
    if isinstance(w, W.Sphere | W.Cylinder | W.Moving):
        return abs(w.value(x, t)) < 5 and np.linalg.norm(w.gradient(x, t)) > 0.5
    return True


@given(st.integers(0, 2**31), st.floats(-1.0, 1.0))
@property_settings(60)
def test_derivatives_match_finite_differences(seed, t):
    x = np.random.default_rng(seed + 7).uniform(-2.5, 2.5, 3)
    for w in _walls(seed):
        if not _smooth_here(w, x, t):
            continue
        e = np.eye(3) * H
        g_fd = np.array([(w.value(x + e[k], t) - w.value(x - e[k], t)) / (2 * H) for k in range(3)])
        H_fd = np.array([(w.gradient(x + e[k], t) - w.gradient(x - e[k], t)) / (2 * H) for k in range(3)])
        ft_fd = (w.value(x, t + H) - w.value(x, t - H)) / (2 * H)
        gt_fd = (w.gradient(x, t + H) - w.gradient(x, t - H)) / (2 * H)
        ftt_fd = (w.dt(x, t + H) - w.dt(x, t - H)) / (2 * H)
        scale = 1 + np.abs(w.hessian(x, t)).max()
        np.testing.assert_allclose(w.gradient(x, t), g_fd, atol=1e-8 * scale, err_msg=w.name)
        np.testing.assert_allclose(w.hessian(x, t), H_fd, atol=1e-7 * scale, err_msg=w.name)
        np.testing.assert_allclose(w.hessian(x, t), w.hessian(x, t).T, atol=1e-14, err_msg=w.name)
        np.testing.assert_allclose(w.dt(x, t), ft_fd, atol=1e-8 * scale, err_msg=w.name)
        np.testing.assert_allclose(w.dt_gradient(x, t), gt_fd, atol=1e-7 * scale, err_msg=w.name)
        np.testing.assert_allclose(w.dt2(x, t), ftt_fd, atol=1e-7 * scale, err_msg=w.name)


@given(st.integers(0, 2**31), st.floats(0.0, 0.3))
@property_settings(60)
def test_gaps_are_distances(seed, r):
    rng = np.random.default_rng(seed)
    c, x = rng.uniform(-1, 1, 3), rng.uniform(-3, 3, 3)
    n = rng.normal(size=3)
    n /= np.linalg.norm(n)
    assert np.isclose(W.Plane(c, n).gap(x, r), n @ (x - c) - r, atol=1e-14)
    d = np.linalg.norm(x - c)
    assert np.isclose(W.Sphere(c, 1.5, True).gap(x, r), 1.5 - d - r, atol=1e-14)
    assert np.isclose(W.Sphere(c, 1.5, False).gap(x, r), d - 1.5 - r, atol=1e-14)
    rho = np.linalg.norm((x - c) - ((x - c) @ n) * n)
    assert np.isclose(W.Cylinder(c, n, 1.2, True).gap(x, r), 1.2 - rho - r, atol=1e-14)
    # outside an obstacle box the gap is the Euclidean distance to the nearest box point
    R = _rot(seed)
    h = np.array([0.7, 1.1, 0.9])
    y = R @ (x - c)
    nearest = np.clip(y, -h, h)
    if np.any(np.abs(y) > h):
        assert np.isclose(W.Box(c, h, R, False).gap(x, r), np.linalg.norm(y - nearest) - r, atol=1e-13)
    else:  # inside a container box: the distance to the nearest face
        assert np.isclose(W.Box(c, h, R, True).gap(x, r), np.min(h - np.abs(y)) - r, atol=1e-13)
    # offset walls: zero exactly where the sphere touches
    for w in (W.Plane(c, n), W.Sphere(c, 1.5, True), W.Box(c, h, R, False)):
        assert np.isclose(w.offset(r).value(x), -w.gap(x, r), atol=1e-14)


@given(st.integers(0, 2**31))
@property_settings(30)
def test_vectorised_gaps_equal_the_point_by_point_gaps(seed):
    """Wall.gaps (all spheres of a wall at once: the contact driver's) = Wall.gap sphere by sphere, every kind."""
    rng = np.random.default_rng(seed)
    X, r = rng.uniform(-2.5, 2.5, (17, 3)), rng.uniform(0.0, 0.3, 17)
    for w in _walls(seed):
        want = np.array([w.gap(x, ri) for x, ri in zip(X, r)])
        np.testing.assert_allclose(w.gaps(X, r), want, rtol=0, atol=1e-14 * (1 + np.abs(want).max()), err_msg=w.name)


def test_user_wall_gap_is_first_order_distance_and_static_defaults():
    w = W.UserWall(lambda x, t: x @ x - 4.0, lambda x, t: 2 * x, lambda x, t: 2 * np.eye(3), name="circle")
    x = np.array([0.0, 1.9, 0.0])
    assert np.isclose(w.gap(x, 0.0), -(1.9**2 - 4) / 3.8)
    assert w.dt(x) == 0 and w.dt2(x) == 0 and not np.any(w.dt_gradient(x))
    with pytest.raises(ValidationError, match="circle.*signed distance"):
        w.offset(0.1)


def test_zero_gradient_is_named():
    with pytest.raises(SimulationError, match="wall 'bowl': zero gradient"):
        W.Sphere([0, 0, 0], 1.0, name="bowl").normal(np.zeros(3))
    w = W.UserWall(lambda x, t: x[0] ** 2 - 1, lambda x, t: np.array([2 * x[0], 0, 0]), lambda x, t: np.zeros((3, 3)),
                   name="flat-spot")
    with pytest.raises(SimulationError, match="flat-spot"):
        w.gap(np.zeros(3), 0.1)
    with pytest.raises(SimulationError, match="flat-spot"):
        w.constraint_lambda(np.zeros(3), np.ones(3), np.ones(3), 1.0)


def test_bad_wall_input_is_named():
    with pytest.raises(ValidationError, match=r"walls\.floor\.normal"):
        W.Plane([0, 0, 0], [0, 0, 0], "floor")
    with pytest.raises(ValidationError, match=r"walls\.pipe\.radius"):
        W.Cylinder([0, 0, 0], [0, 0, 1], -1.0, name="pipe")
    with pytest.raises(ValidationError, match=r"walls\.crate\.axes"):
        W.Box([0, 0, 0], [1, 1, 1], np.diag([1.0, 1.0, -1.0]), name="crate")


def test_constraint_lambda_on_a_floor_is_the_weight():
    floor = W.Plane([0, 0, 0], [0, 0, 1], "floor")
    assert np.isclose(floor.constraint_lambda(np.zeros(3), [1.0, 2.0, 0.0], [0, 0, -2.0 * 9.81], 2.0), -2.0 * 9.81)
