"""The compiled all-pairs dipole sweep (engine/pairs.py) against the numpy sweep and Newton's third law."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pem_physics import examples
from pem_physics.engine import pairs, torques
from pem_physics.engine.simulate import simulate
from pem_physics.engine.system import compile_system

from budget import property_settings

pytestmark = pytest.mark.skipif(not pairs.available(), reason="numba is not installed")


# --- all-pairs dipole sweep --------------------------------------------------------------------

def _random_dipoles(seed, E, n_bodies, per_body, S):
    rng = np.random.default_rng(seed)
    owner = np.repeat(np.arange(n_bodies), per_body)
    D = len(owner)
    r = rng.uniform(-0.1, 0.1, (E, D, 3))
    if per_body > 1:  # a body's own dipoles may coincide: the sweep must leave those pairs out
        r[:, 1] = r[:, 0]
    p = rng.normal(size=(E, D, 3))
    rs = rng.uniform(-0.1, 0.1, (S, 3))
    ms = rng.normal(size=(S, 3))
    return owner, r, p, rs, ms


@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.integers(2, 40), st.integers(1, 2), st.integers(0, 4),
       st.booleans())
@property_settings(25)
def test_pair_sweep_matches_numpy_terms(seed, E, n_bodies, per_body, S, periodic):
    from pem_physics.engine.system import PairPlan
    from pem_physics.engine.torques import dipole_pair_terms

    owner, r, p, rs, ms = _random_dipoles(seed, E, n_bodies, per_body, S)
    D_ = len(owner) + S
    box = np.array([0.15, 0.2, 0.25]) if periodic else None
    plan = PairPlan(owner, S, n_bodies)
    rb = np.concatenate([r, np.broadcast_to(rs, (E, S, 3))], axis=1)
    pb = np.concatenate([p, np.broadcast_to(ms, (E, S, 3))], axis=1)
    B0, F0, U0 = dipole_pair_terms(r, p, rb, pb, 1e-7, box, plan.mask, plan.weights)
    B, F, U = pairs.pair_sweep(r, p, owner, rs, ms, 1e-7, box, True)
    # fastmath may reassociate sums: agreement to the rounding of the largest single pair term
    # (bounded by |p_a||p_b|/r³ for B·p and U, ×24/r for F), not bit for bit
    d = r[:, :, None] - rb[:, None]
    if box is not None:
        d -= box * np.rint(d / box)
    dist = np.where(plan.mask > 0, np.linalg.norm(d, axis=-1), np.inf)
    bound = (1e-7 * np.linalg.norm(p, axis=-1)[..., None] * np.linalg.norm(pb, axis=-1)[:, None] / dist**3).max()
    for got, ref, scale in ((B * np.linalg.norm(p, axis=-1)[..., None], B0 * np.linalg.norm(p, axis=-1)[..., None],
                             bound), (F, F0, 24 * bound / dist.min()), (U, U0, bound)):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * D_ * scale)
    again = pairs.pair_sweep(r, p, owner, rs, ms, 1e-7, box, True)
    for x, y in zip((B, F, U), again):
        np.testing.assert_array_equal(x, y)


def test_pair_sweep_newton_third_law():
    """Independent of the numpy path: forces between bodies cancel in pairs, Σ F = 0 without sources."""
    owner, r, p, _, _ = _random_dipoles(3, 2, 50, 1, 0)
    _, F, _ = pairs.pair_sweep(r, p, owner, np.zeros((0, 3)), np.zeros((0, 3)), 1e-7, None, False)
    scale = np.abs(F).max()
    np.testing.assert_allclose(F.sum(axis=1), 0.0, atol=1e-12 * scale * 50)


def test_compass_array_same_with_and_without_kernel():
    scene = examples.compass_array(n=8, t_end=0.1)  # 64 needles: 4096 pairs
    system = compile_system(scene.checked())
    assert torques.pair_sweep_supported(1, system.n_dipoles, 0) == (system.n_dipoles ** 2 >= torques.PAIR_SWEEP_MIN)
    old = torques.PAIR_SWEEP_MIN
    try:
        torques.PAIR_SWEEP_MIN = 1  # force the kernel even at this size
        got = simulate(scene, method="splitting4")
        torques.PAIR_SWEEP = False
        ref = simulate(scene, method="splitting4")
    finally:
        torques.PAIR_SWEEP, torques.PAIR_SWEEP_MIN = True, old
    np.testing.assert_allclose(got.orientation, ref.orientation, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got.total_energy, ref.total_energy, rtol=1e-10)
