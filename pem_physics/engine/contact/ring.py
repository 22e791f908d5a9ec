"""Coulomb friction of a rim lying flat on a table (theory §7): a ring of radius a whose points all touch and slip.

The ring's centre C slips with v (in the table's plane) and the ring turns at ω about the normal n, so its point at
r̂(φ) slips with u(φ) = v + w t̂(φ), w = aω, t̂ = n × r̂. The table presses with p(φ) per unit angle, the least-norm
spread of a total N that leans on the ring with the first moment c = ∫ p r̂ dφ (a vector in the plane):
p(φ) = N/2π + (c·r̂)/π (p ≥ 0 while |c| ≤ N/2). Each point is rubbed by −μ p û, so the table's friction is a force F
at C and a couple T n:

    F = −μ ∫ p û dφ,    T = −μ a ∫ p (r̂ × û)·n dφ.

In the frame ex = v̂, ey = n × ex, with φ = α + π/2 and Δ(α) = |u| = √(V² + w² − 2Vw cos α), the five integrals

    G1 = ∫ (V − w cos α)/Δ,  G2 = ∫ (w − V cos α)/Δ,  G3 = ∫ cos α (V − w cos α)/Δ,
    G4 = ∫ w sin²α/Δ,        G5 = ∫ cos α (w − V cos α)/Δ          (α from −π to π)

give F = −μ[(N/2π) G1 ex + (c_y G3 ex + c_x G4 ey)/π] and T = −μa[(N/2π) G2 + c_y G5/π] (the uniform pressure's
part is Contensou's coupling of slide and spin; Farkas et al., PRL 90, 248302 (2003)). They depend on q = V/|w|
alone. Where one speed is under a tenth of the other the integrands are analytic in a strip of half-width ln(1/q)
about the real axis and the periodic trapezoidal rule of TRAPEZOID_NODES points is exact to round-off; elsewhere
the complete elliptic integrals K(k), E(k) of k² = 4V|w|/(V + |w|)² (by the arithmetic–geometric mean of 1 and
k' = |V − |w||/(V + |w||, so K stays accurate as the ring's point at rest appears, k → 1) give closed forms.
"""

from __future__ import annotations

import numpy as np

from ...model.elliptic import elliptic_ke

#: Points of the periodic trapezoidal rule (error ~ q^TRAPEZOID_NODES, below 1e-32 for q ≤ QUADRATURE_BELOW).
TRAPEZOID_NODES = 32
#: Speed ratios q = min/max of V and |w| up to which the trapezoidal rule is used; above it the closed forms, whose
#: cancellation grows as 1/k⁴ ≈ (1 + q)⁴/16q² (≤ 12 here).
QUADRATURE_BELOW = 0.1
_NODES = -np.pi + 2 * np.pi * np.arange(TRAPEZOID_NODES) / TRAPEZOID_NODES
_AT_REST_POINT = np.array([4.0, 4.0, -4.0 / 3.0, 8.0 / 3.0, -4.0 / 3.0])   # V = w: a point of the ring at rest


def ring_integrals(V: float, w: float) -> np.ndarray:
    """(G1, …, G5) (5,) of the module's docstring for a ring centre slipping at V ≥ 0 and a rim speed w = aω (any
    sign; m/s). Zero when both are zero (no slip: no direction)."""
    V, sign = float(V), (1.0 if w >= 0 else -1.0)
    w = abs(float(w))
    big = max(V, w)
    if big == 0.0:
        return np.zeros(5)
    if min(V, w) <= QUADRATURE_BELOW * big:
        c = np.cos(_NODES)
        D = np.sqrt(V * V + w * w - 2.0 * V * w * c)
        h = 2.0 * np.pi / TRAPEZOID_NODES
        G = h * np.array([np.sum((V - w * c) / D), np.sum((w - V * c) / D), np.sum(c * (V - w * c) / D),
                          np.sum(w * (1.0 - c * c) / D), np.sum(c * (w - V * c) / D)])
    elif V == w:
        G = _AT_REST_POINT.copy()
    else:
        S = V + w
        k2 = 4.0 * V * w / (S * S)
        K, E = elliptic_ke(abs(V - w) / S)
        I0 = 4.0 * K / S
        I1 = 4.0 / S * (2.0 * (K - E) / k2 - K)
        I2 = 4.0 / S * (4.0 * ((2.0 + k2) * K - 2.0 * (1.0 + k2) * E) / (3.0 * k2 * k2) - 4.0 * (K - E) / k2 + K)
        G = np.array([V * I0 - w * I1, w * I0 - V * I1, V * I1 - w * I2, w * (I0 - I2), w * I1 - V * I2])
    # w → −w turns the ring's velocity field half round: G2, G3 and G4 change sign
    return G * np.array([1.0, sign, sign, sign, 1.0])


def ring_friction(vC, w: float, n, e_rest, N: float, c, mu: float, a: float):
    """(F (3,) N, T N·m): the friction force at the ring's centre and the couple about n of a ring of radius a (m)
    lying on a table of unit normal n, its centre slipping at vC (3,) m/s (its normal part is ignored), turning
    with rim speed w = aω_n (m/s), pressed by N (N) with first moment c (3,) N (in the plane), friction μ.
    ``e_rest`` (3,): a unit vector in the plane taken as the slide's direction when vC has none."""
    vt = vC - float(vC @ n) * n
    V = float(np.linalg.norm(vt))
    ex = vt / V if V > 0 else e_rest
    ey = np.cross(n, ex)
    G = ring_integrals(V, w)
    cx, cy = float(c @ ex), float(c @ ey)
    F = -mu * ((0.5 * N / np.pi * G[0] + cy * G[2] / np.pi) * ex + (cx * G[3] / np.pi) * ey)
    T = -mu * a * (0.5 * N / np.pi * G[1] + cy * G[4] / np.pi)
    return F, T


def ring_friction_map(vC, w: float, n, e_rest, N: float, mu: float, a: float):
    """:func:`ring_friction` as linear in the first moment c: (F0 (3,), T0, A (3,3), b (3,)) with F = F0 + A c and
    T = T0 + b·c (the slip fixed)."""
    vt = vC - float(vC @ n) * n
    V = float(np.linalg.norm(vt))
    ex = vt / V if V > 0 else e_rest
    ey = np.cross(n, ex)
    G = ring_integrals(V, w)
    F0 = -mu * 0.5 * N / np.pi * G[0] * ex
    T0 = -mu * a * 0.5 * N / np.pi * G[1]
    A = -mu / np.pi * (G[2] * np.outer(ex, ey) + G[3] * np.outer(ey, ex))
    b = -mu * a * G[4] / np.pi * ey
    return F0, T0, A, b
