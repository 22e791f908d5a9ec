"""Helpers shared by the tests: independent ways of measuring what the code under test computes."""

from __future__ import annotations

import numpy as np


def crossings(t, x, xdot, direction=+1):
    """Times where x crosses 0 going in ``direction``, by cubic Hermite interpolation with x' = xdot."""
    t, x, xdot = map(np.asarray, (t, x, xdot))
    s = np.sign(x)
    idx = np.flatnonzero((s[:-1] != s[1:]) & (np.sign(x[1:] - x[:-1]) == direction))
    out = []
    for i in idx:
        h = t[i + 1] - t[i]
        p0, p1, m0, m1 = x[i], x[i + 1], xdot[i] * h, xdot[i + 1] * h
        # Hermite cubic on u ∈ [0, 1]; solve p(u) = 0 by Newton from the linear guess.
        u = p0 / (p0 - p1)
        for _ in range(30):
            h00, h10, h01, h11 = 2 * u**3 - 3 * u**2 + 1, u**3 - 2 * u**2 + u, -2 * u**3 + 3 * u**2, u**3 - u**2
            p = h00 * p0 + h10 * m0 + h01 * p1 + h11 * m1
            dp = ((6 * u**2 - 6 * u) * p0 + (3 * u**2 - 4 * u + 1) * m0
                  + (-6 * u**2 + 6 * u) * p1 + (3 * u**2 - 2 * u) * m1)
            u -= p / dp
        out.append(t[i] + u * h)
    return np.array(out)
