"""Complete elliptic integrals by the arithmetic–geometric mean (a pendulum's period, a flat ring's friction)."""

from __future__ import annotations

import numpy as np


def elliptic_ke(kc: float) -> tuple[float, float]:
    """(K, E): the complete elliptic integrals of the first and second kind of modulus k, given by its complement
    kc = √(1 − k²) ∈ (0, 1] (the arithmetic–geometric mean; K grows as ln(4/kc) as kc → 0)."""
    a, b = 1.0, float(kc)
    c2 = 1.0 - b * b            # c₀² = k²
    total, weight = 0.5 * c2, 0.5
    for _ in range(40):
        c = 0.5 * (a - b)
        a, b = 0.5 * (a + b), float(np.sqrt(a * b))
        weight *= 2.0
        total += weight * c * c
        if abs(c) <= 1e-17 * a:
            break
    K = np.pi / (2.0 * a)
    return K, K * (1.0 - total)
