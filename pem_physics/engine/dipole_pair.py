"""The dipole pair (theory §4), written once for every path that takes one pair at a time: the compiled kernels
(:mod:`.torque_kernels`, :mod:`.lanes_kernels`: numba inlines it) and the plain-Python path (:mod:`.scalar`). The
numpy reference, :func:`.torques.dipole_pair_terms`, evaluates the same terms over arrays in the same order, and
:mod:`.pairs`' sweep its masked, energy-summing variant.

Plain Python on purpose: no numba here, so the path without numba runs it as it is.
"""

from __future__ import annotations

import math


def field_and_force(dx, dy, dz, cx, cy, cz, ax, ay, az, k):
    """Field (T) at dipole a (moment a, A·m²) from dipole c (moment c) at separation d = r_a − r_c (m), and the force
    (N) on a: B = k(3(c·d)d/r⁵ − c/r³), F = 3k/r⁵[(a·d)c + (c·d)a + (a·c − 5(a·d)(c·d)/r²)d], k = μ₀/4π.
    Returns (Bx, By, Bz, Fx, Fy, Fz)."""
    inv_r2 = 1.0 / (dx * dx + dy * dy + dz * dz)
    kr3 = k * math.sqrt(inv_r2) * inv_r2
    pad = ax * dx + ay * dy + az * dz
    pbd = cx * dx + cy * dy + cz * dz
    pab = ax * cx + ay * cy + az * cz
    q = pbd * inv_r2
    s5 = 3.0 * kr3 * inv_r2
    f1, f2, f3 = s5 * pad, s5 * pbd, s5 * (pab - 5.0 * pad * q)
    return (kr3 * (3.0 * q * dx - cx), kr3 * (3.0 * q * dy - cy), kr3 * (3.0 * q * dz - cz),
            f1 * cx + f2 * ax + f3 * dx, f1 * cy + f2 * ay + f3 * dy, f1 * cz + f2 * az + f3 * dz)
