"""The numpy event-driven reference (pem_physics/gas/reference.py): collision times, impulses, conservation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pem_physics.gas.reference import ReferenceEngine, pair_time, run_reference
from pem_physics.gas.state import GasState, make_gas

from budget import property_settings


def bisect_contact(r, v, sigma, t_max=1e3):
    """First time |r + v t| = sigma by scanning for the sign change of |r + v t| − sigma, then bisection."""
    g = lambda t: float(np.linalg.norm(r + v * t)) - sigma  # noqa: E731
    # the distance is smallest at t* = −r·v/v²: a contact, if any, is in [0, t*]
    t_star = -float(np.dot(r, v)) / float(np.dot(v, v))
    if t_star <= 0 or g(t_star) > 0:
        return math.inf
    lo, hi = 0.0, t_star
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if g(mid) > 0 else (lo, mid)
    return 0.5 * (lo + hi)


@property_settings(300)
@given(st.integers(2, 3), st.integers(0, 2**32 - 1))
def test_pair_collision_time_against_bisection(d, seed):
    rng = np.random.default_rng(seed)
    sigma = rng.uniform(0.2, 2.0)
    r = rng.normal(size=d) * rng.uniform(0.5, 5.0)
    if np.linalg.norm(r) <= sigma:
        r *= 1.5 * sigma / np.linalg.norm(r)
    v = rng.normal(size=d) * rng.uniform(0.1, 3.0)
    t = pair_time(r, v, sigma)
    t_b = bisect_contact(r, v, sigma)
    if math.isinf(t_b):
        # no crossing found: either they miss or they recede
        assert math.isinf(t) or np.linalg.norm(r + v * t) == pytest.approx(sigma, rel=1e-9)
    else:
        assert t == pytest.approx(t_b, rel=1e-10, abs=1e-12)
        assert np.linalg.norm(r + v * t) == pytest.approx(sigma, rel=1e-12)


def test_pair_time_of_a_grazing_and_a_receding_pair():
    assert pair_time(np.array([2.0, 0.0]), np.array([-1.0, 0.0]), 1.0) == pytest.approx(1.0, rel=1e-15)
    assert math.isinf(pair_time(np.array([2.0, 0.0]), np.array([1.0, 0.0]), 1.0))      # receding
    assert math.isinf(pair_time(np.array([2.0, 1.01]), np.array([-1.0, 0.0]), 1.0))    # misses
    assert pair_time(np.array([2.0, 0.6]), np.array([-1.0, 0.0]), 1.0) == pytest.approx(2.0 - 0.8, rel=1e-14)


def two(positions, velocities, masses=(1.0, 1.0), box=(10.0, 10.0, 10.0), periodic=True):
    return GasState(np.array(positions, float), np.array(velocities, float), 0.5, np.array(masses, float),
                    np.array(box, float), periodic)


def test_equal_spheres_head_on_swap_velocities():
    s = two([[3.0, 5.0, 5.0], [6.0, 5.0, 5.0]], [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    run = run_reference(s, 1.5)
    assert run.n_collisions == 1 and run.log.time[0] == pytest.approx(1.0, rel=1e-15)
    assert np.allclose(run.state.velocities, [[-1.0, 0, 0], [1.0, 0, 0]], atol=1e-15)
    # virial of the collision: J·r = 2 μ |v·n| σ = 2 · 0.5 · 2 · 1
    assert run.virial == pytest.approx(2.0, rel=1e-14)


@pytest.mark.parametrize("e", [1.0, 0.6, 0.0])
def test_unequal_masses_impulse_conserves_momentum_and_restitutes_the_normal_speed(e):
    rng = np.random.default_rng(3)
    s = two([[3.0, 5.0, 5.0], [4.4, 5.3, 4.9]], [[1.0, 0.2, 0.1], [-0.5, -0.1, 0.3]], masses=(1.0, 3.5))
    eng = ReferenceEngine(s, restitution=e, log=True)
    t, i, j = eng.next_event()
    r = eng.positions_at(t)
    n = (r[0] - r[1]) / np.linalg.norm(r[0] - r[1])
    vn_before = float(np.dot(eng.v[0] - eng.v[1], n))
    p_before, e_before = s.momentum(), s.kinetic_energy()
    eng.apply(t, i, j)
    vn_after = float(np.dot(eng.v[0] - eng.v[1], n))
    assert vn_before < 0 and vn_after == pytest.approx(-e * vn_before, rel=1e-12, abs=1e-14)
    assert np.allclose((s.masses[:, None] * eng.v).sum(0), p_before, atol=1e-14)
    # tangential relative velocity unchanged; energy lost = ½ μ (1 − e²) v_n²
    mu = 3.5 / 4.5
    assert eng.kinetic_energy() == pytest.approx(e_before - 0.5 * mu * (1 - e * e) * vn_before ** 2, rel=1e-13)
    del rng


def test_hard_walls_reflect_and_take_momentum():
    s = two([[2.0, 5.0, 5.0], [7.0, 5.0, 5.0]], [[-1.0, 0.0, 0.0], [0.0, 0.0, 2.0]], periodic=False)
    run = run_reference(s, 3.0)
    # particle 0 reaches x = 0.5 at t = 1.5 (wall 0), particle 1 reaches z = 9.5 at t = 2.25 (wall 5)
    assert list(run.log.j) == [-1, -6] and np.allclose(run.log.time, [1.5, 2.25], rtol=1e-15)
    assert np.allclose(run.wall_impulse, [2.0, 0, 0, 0, 0, 4.0], rtol=1e-15)
    assert np.allclose(run.state.velocities, [[1.0, 0, 0], [0, 0, -2.0]])


def test_periodic_collision_through_the_boundary():
    s = two([[0.6, 5.0, 5.0], [9.4, 5.0, 5.0]], [[-1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    run = run_reference(s, 1.0)
    assert run.n_collisions == 1 and run.log.time[0] == pytest.approx(0.2, rel=1e-13)
    assert np.allclose(run.state.velocities, [[0, 0, 0], [-1.0, 0, 0]], atol=1e-15)


@pytest.mark.parametrize("d,periodic", [(3, True), (2, True), (3, False), (2, False)])
def test_reference_conserves_energy_and_momentum(d, periodic):
    s = make_gas(40, 0.2 if periodic else 0.08, d, seed=11, periodic=periodic)
    run = run_reference(s, 3.0 if periodic else 10.0, log=False)
    assert run.n_collisions > 40
    assert abs(run.state.kinetic_energy() - s.kinetic_energy()) <= 1e-12 * s.kinetic_energy()
    if periodic:
        assert np.allclose(run.state.momentum(), s.momentum(), atol=1e-12)
    else:
        assert run.n_wall_events > 10
