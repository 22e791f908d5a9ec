"""Contact impulses (engine/contact/impulses.py) against balances derived here: momentum + restitution for free spheres,
angular-impulse balances about each pivot for pendulums, Newton's cradle by pairwise sweeps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pem_physics.engine.contact.impulses import Contact, ContactBody, contact_impulse, resolve_contacts
from pem_physics.errors import ValidationError

from budget import property_settings


def _unit(v):
    return np.asarray(v, float) / np.linalg.norm(v)


@given(st.floats(0.1, 10), st.floats(0.1, 10), st.floats(0, 1), st.integers(0, 2**31))
@property_settings(100)
def test_two_free_spheres_head_on_and_oblique(m1, m2, e, seed):
    rng = np.random.default_rng(seed)
    n = _unit(rng.normal(size=3))  # from 2 to 1
    v1, v2 = rng.normal(size=3), rng.normal(size=3)
    if n @ (v1 - v2) >= 0:
        v1, v2 = v2, v1
    b1, b2 = ContactBody.free(m1, n, v1), ContactBody.free(m2, -n, v2)
    out = contact_impulse(b1, b2, np.zeros(3), n, e)
    # normal components from momentum and Newton's restitution law, tangential ones untouched
    u1, u2 = n @ v1, n @ v2
    A = np.array([[m1, m2], [1.0, -1.0]])
    w1, w2 = np.linalg.solve(A, [m1 * u1 + m2 * u2, -e * (u1 - u2)])
    np.testing.assert_allclose(b1.v, v1 + (w1 - u1) * n, atol=1e-12 * (1 + np.abs(v1).max()))
    np.testing.assert_allclose(b2.v, v2 + (w2 - u2) * n, atol=1e-12 * (1 + np.abs(v2).max()))
    np.testing.assert_allclose(out.dp1 + out.dp2, 0, atol=1e-15 * m1 * np.abs(v1).max())
    if e == 1:
        E0 = 0.5 * m1 * v1 @ v1 + 0.5 * m2 * v2 @ v2
        assert abs(0.5 * m1 * b1.v @ b1.v + 0.5 * m2 * b2.v @ b2.v - E0) < 1e-13 * E0


@given(st.floats(-0.99, 0.99), st.floats(0.1, 5))
@property_settings(50)
def test_equal_masses_elastic_oblique_leave_at_right_angles(b, speed):
    # ball 1 moves along x at impact parameter b (σ = 1) onto ball 2 at rest
    n = np.array([-np.sqrt(1 - b * b), b, 0.0])
    b1, b2 = ContactBody.free(1.3, n, [speed, 0, 0]), ContactBody.free(1.3, [0, 0, 0], [0, 0, 0])
    contact_impulse(b1, b2, 0.5 * n, n, 1.0)
    if np.linalg.norm(b1.v) > 1e-9 * speed:
        assert abs(b1.v @ b2.v) < 1e-13 * speed**2


@given(st.floats(0.2, 3), st.floats(0.2, 3), st.floats(0.3, 2), st.floats(0.3, 2), st.floats(-3, 3), st.floats(-3, 3),
       st.floats(0, 1), st.floats(-0.8, 0.8))
@property_settings(100)
def test_pendulum_strikes_pendulum(I1, I2, l1, l2, w1, w2, e, tilt):
    # two pendulums hinged on z at P1, P2; contact at c with normal n (from 2 to 1), all in the xy plane
    c = np.array([0.1, -0.2, 0.0])
    n = np.array([np.cos(tilt), np.sin(tilt), 0.0])
    P1 = c + l1 * np.array([np.sin(tilt), -np.cos(tilt) + 0.3, 0.0])
    P2 = c - l2 * np.array([0.4, 1.0, 0.0])
    z = np.array([0.0, 0.0, 1.0])
    inertia1 = np.diag([5.0, 7.0, I1])
    inertia2 = np.diag([4.0, 6.0, I2])
    p1 = ContactBody.hinged(P1, inertia1, z, w1 * z)
    p2 = ContactBody.hinged(P2, inertia2, z, w2 * z)
    a1 = np.cross(c - P1, n)[2]  # lever of the normal about each pivot
    a2 = np.cross(c - P2, n)[2]
    vn = w1 * a1 - w2 * a2       # n·(v1(c) − v2(c)) for rotations about z
    out = contact_impulse(p1, p2, c, n, e)
    if vn >= 0:
        assert not np.any(out.J)
        return
    # unknowns ω1', ω2', j: I1 Δω1 = a1 j, I2 Δω2 = −a2 j, (ω1' a1 − ω2' a2) = −e vn
    M = np.array([[I1, 0, -a1], [0, I2, a2], [a1, -a2, 0]])
    W1, W2, j = np.linalg.solve(M, [I1 * w1, I2 * w2, -e * vn])
    scale = 1 + abs(w1) + abs(w2)
    np.testing.assert_allclose(p1.omega, [0, 0, W1], atol=1e-12 * scale)
    np.testing.assert_allclose(p2.omega, [0, 0, W2], atol=1e-12 * scale)
    np.testing.assert_allclose(out.J, j * n, atol=1e-12 * scale * (I1 + I2))
    if e == 1:
        E0, E1 = I1 * w1**2 + I2 * w2**2, I1 * W1**2 + I2 * W2**2
        assert abs(E1 - E0) < 1e-12 * E0


def test_free_ball_hits_point_mass_pendulum_bob():
    # bob m at distance l below the pivot; I about the pivot is singular along the rod (pseudo-inverse)
    m, l, v = 0.7, 1.5, 2.0
    rod = np.array([0, -l, 0.0])
    I = m * (rod @ rod * np.eye(3) - np.outer(rod, rod))
    bob = ContactBody.pendulum([0, 0, 0], I, np.zeros(3))
    ball = ContactBody.free(m, rod - [0.1, 0, 0], [v, 0, 0])
    contact_impulse(ball, bob, rod, [-1.0, 0, 0], 1.0)   # across the rod: like a free equal mass
    np.testing.assert_allclose(ball.v, 0, atol=1e-15)
    np.testing.assert_allclose(np.cross(bob.omega, rod), [v, 0, 0], atol=1e-14)
    ball = ContactBody.free(m, rod - [0, 0.1, 0], [0, -v, 0])
    bob = ContactBody.pendulum([0, 0, 0], I, np.zeros(3))
    contact_impulse(ball, bob, rod, [0, 1.0, 0], 1.0)    # along the rod: the pivot takes it, a wall
    np.testing.assert_allclose(ball.v, [0, v, 0], atol=1e-15)
    np.testing.assert_allclose(bob.omega, 0, atol=1e-15)


def _cradle(moving, v=1.7, m=0.3):
    balls = [ContactBody.free(m, [2.0 * k, 0, 0], [v if k < moving else 0.0, 0, 0]) for k in range(5)]
    contacts = [Contact(k, k + 1, np.array([2.0 * k + 1, 0, 0]), np.array([-1.0, 0, 0]), 1.0) for k in range(4)]
    return balls, contacts, v, m


@pytest.mark.parametrize("moving", [1, 2, 3])
@pytest.mark.parametrize("order", ["along", "reversed"])
def test_newtons_cradle_k_in_k_out(moving, order):
    balls, contacts, v, m = _cradle(moving)
    if order == "reversed":
        contacts = [Contact(c.j, c.i, c.point, -c.normal, 1.0) for c in contacts[::-1]]
    resolve_contacts(balls, contacts)
    vx = np.array([b.v[0] for b in balls])
    expect = np.r_[np.zeros(5 - moving), np.full(moving, v)]
    np.testing.assert_allclose(vx, expect, atol=1e-12)
    assert abs(m * vx.sum() - m * moving * v) < 1e-15 * moving * m * v * 5
    assert abs(0.5 * m * (vx**2).sum() - 0.5 * m * moving * v**2) < 1e-15 * moving * m * v**2 * 5


def test_friction_sticks_inside_the_cone_and_slides_on_it():
    # a ball hitting a wall obliquely: sticking impulse J = m(Δv), projected when |J_t| > μ J_n
    m, v = 2.0, np.array([3.0, 0.0, -1.0])
    for mu, stick in ((10.0, True), (0.1, False)):
        ball = ContactBody.free(m, [0, 0, 0.1], v)
        out = contact_impulse(ball, ContactBody.fixed("floor"), [0, 0, 0], [0, 0, 1.0], 0.5, mu)
        Jn, Jt = out.J[2], np.linalg.norm(out.J[:2])
        assert np.isclose(ball.v[2], 0.5)  # normal restitution either way
        if stick:
            np.testing.assert_allclose(ball.v[:2], 0, atol=1e-15)
        else:
            assert np.isclose(Jt, mu * Jn) and np.isclose(ball.v[0], 3.0 - mu * Jn / m)


def test_bad_restitution_is_named():
    with pytest.raises(ValidationError, match=r"restitution.*\[0, 1\].*1\.5"):
        contact_impulse(ContactBody.free(1, [0, 0, 1], [0, 0, -1]), ContactBody.fixed(), [0, 0, 0], [0, 0, 1], 1.5)
