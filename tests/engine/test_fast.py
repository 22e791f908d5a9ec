"""The optional numba kernel against the numpy reference path (same scheme, same numbers)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pem_physics import examples
from pem_physics.analysis.basin import release_orientations
from pem_physics.engine import fast
from pem_physics.engine.simulate import Ensemble, simulate
from pem_physics.engine.system import compile_system

from budget import property_settings

pytestmark = pytest.mark.skipif(not fast.available(), reason="numba is not installed")


def members(scene, n=8):
    g = np.linspace(-0.07, 0.07, n)
    X, Y = np.meshgrid(g, g)
    return release_orientations(scene, X.ravel(), Y.ravel())


def both(scene, U, **kw):
    try:
        fast.ENABLED = False
        ref = simulate(scene, method="pem-rk4", ensemble=Ensemble(orientation=U), **kw)
    finally:
        fast.ENABLED = True
    return ref, simulate(scene, method="pem-rk4", ensemble=Ensemble(orientation=U), **kw)


@pytest.mark.parametrize("variant", ["friction", "field", "no-magnets"])
def test_kernel_matches_numpy_pem_rk4(variant):
    scene = examples.three_magnet(friction=5e-3, dt=1e-3, t_end=0.4)
    if variant == "field":
        scene = replace(scene, friction=0.0, field=(2e-4, -1e-4, 3e-4))
    if variant == "no-magnets":
        scene = replace(scene, bodies=scene.bodies[:1])
    U = members(scene)
    assert len(U) >= fast.MIN_MEMBERS and fast.pem_rk4_supported(compile_system(scene.checked()))
    ref, got = both(scene, U, record_interval=0.1)
    for name in ("orientation", "angular_momentum", "omega"):
        a, b = getattr(ref, name), getattr(got, name)
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * np.abs(a).max(), err_msg=name)


def test_unsupported_systems_use_the_numpy_path():
    scene = examples.three_magnet(friction=5e-3, dt=1e-3, t_end=0.01)
    hinged = replace(scene, bodies=[replace(scene.bodies[0], hinge=(1.0, 0.0, 0.0))] + list(scene.bodies[1:]))
    periodic = replace(scene, periodic_box=(1.0, 1.0, 1.0))
    for sc in (hinged, periodic):
        assert not fast.pem_rk4_supported(compile_system(sc.checked()))
        ref, got = both(sc, members(sc))
        np.testing.assert_array_equal(got.orientation, ref.orientation)


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
    B, F, U = fast.pair_sweep(r, p, owner, rs, ms, 1e-7, box, True)
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
    again = fast.pair_sweep(r, p, owner, rs, ms, 1e-7, box, True)
    for x, y in zip((B, F, U), again):
        np.testing.assert_array_equal(x, y)


def test_pair_sweep_newton_third_law():
    """Independent of the numpy path: forces between bodies cancel in pairs, Σ F = 0 without sources."""
    owner, r, p, _, _ = _random_dipoles(3, 2, 50, 1, 0)
    _, F, _ = fast.pair_sweep(r, p, owner, np.zeros((0, 3)), np.zeros((0, 3)), 1e-7, None, False)
    scale = np.abs(F).max()
    np.testing.assert_allclose(F.sum(axis=1), 0.0, atol=1e-12 * scale * 50)


def test_compass_array_same_with_and_without_kernel():
    scene = examples.compass_array(n=8, t_end=0.1)  # 64 needles: 4096 pairs
    system = compile_system(scene.checked())
    assert fast.pair_sweep_supported(1, system.n_dipoles, 0) == (system.n_dipoles ** 2 >= fast.MIN_PAIRS)
    old = fast.MIN_PAIRS
    try:
        fast.MIN_PAIRS = 1  # force the kernel even at this size
        got = simulate(scene, method="splitting4")
        fast.ENABLED = False
        ref = simulate(scene, method="splitting4")
    finally:
        fast.ENABLED, fast.MIN_PAIRS = True, old
    np.testing.assert_allclose(got.orientation, ref.orientation, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got.total_energy, ref.total_energy, rtol=1e-10)


def test_kernel_result_independent_of_threads_and_lanes():
    """A member's numbers do not depend on the thread count or on its place (SIMD lane, block) in the ensemble."""
    scene = examples.three_magnet(friction=5e-3, dt=1e-3, t_end=0.1)
    U = members(scene)                      # 64 members: one block, so rolling moves each to another lane
    U = np.concatenate([U, U[:11]])         # and 75: a padded second block
    runs = []
    for threads in (1, 2, 3):
        fast.THREADS = threads
        try:
            runs.append(simulate(scene, method="pem-rk4", ensemble=Ensemble(orientation=U)))
        finally:
            fast.THREADS = 2
    for other in runs[1:]:
        np.testing.assert_array_equal(other.orientation, runs[0].orientation)
        np.testing.assert_array_equal(other.angular_momentum, runs[0].angular_momentum)
    shift = 5
    rolled = simulate(scene, method="pem-rk4", ensemble=Ensemble(orientation=np.roll(U, shift, axis=0)))
    np.testing.assert_array_equal(np.roll(rolled.orientation, -shift, axis=0), runs[0].orientation)
    assert np.array_equal(runs[0].orientation[64:], runs[0].orientation[:11])  # copies agree bit for bit
