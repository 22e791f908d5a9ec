"""The dipole pair written once (engine/dipole_pair.py), which the compiled kernels, the lanes and the plain-Python
path all call. Oracles: the field in its textbook vector form, B = k(3(c·r̂)r̂ − c)/r³; the force as the gradient of
a·B by central differences (F = ∇(a·B) for a fixed moment a); and the numpy reference's terms
(torques.dipole_pair_terms)."""

from __future__ import annotations

import numpy as np
import pytest

from pem_physics.engine.dipole_pair import field_and_force

K = 1e-7


def field(d, c):
    r = np.linalg.norm(d)
    n = d / r
    return K * (3.0 * (c @ n) * n - c) / r ** 3


@pytest.mark.parametrize("seed", range(5))
def test_field_and_force_are_the_textbook_field_and_its_energys_gradient(seed):
    rng = np.random.default_rng(seed)
    d, a, c = rng.normal(size=3) * 0.05, rng.normal(size=3), rng.normal(size=3)
    out = np.array(field_and_force(*d, *c, *a, K))
    B, F = out[:3], out[3:]
    np.testing.assert_allclose(B, field(d, c), rtol=1e-13, atol=1e-16 * np.abs(field(d, c)).max())
    h = 1e-6 * np.linalg.norm(d)
    grad = np.array([(a @ field(d + h * e, c) - a @ field(d - h * e, c)) / (2 * h) for e in np.eye(3)])
    # central differences: relative error ~(h/r)² plus round-off ~1e-16·r/h
    np.testing.assert_allclose(F, grad, rtol=1e-7, atol=1e-7 * np.abs(grad).max())


def test_the_numpy_reference_computes_the_same_terms():
    """torques.dipole_pair_terms (arrays) and field_and_force (one pair): the same terms in the same order."""
    from pem_physics.engine.torques import dipole_pair_terms

    rng = np.random.default_rng(7)
    for _ in range(20):
        d, a, c = rng.normal(size=3) * 0.05, rng.normal(size=3), rng.normal(size=3)
        B, F, _ = dipole_pair_terms(d[None, None], a[None, None], np.zeros((1, 1, 3)), c[None, None], K)
        out = np.array(field_and_force(*d, *c, *a, K))
        np.testing.assert_allclose(B[0, 0], out[:3], rtol=1e-15, atol=1e-15 * np.abs(out[:3]).max())
        np.testing.assert_allclose(F[0, 0], out[3:], rtol=1e-15, atol=1e-15 * np.abs(out[3:]).max())
