"""The all-pairs dipole sweep for many interacting bodies (numba, optional): any scene, any integrator.

:func:`pem_physics.engine.torques.evaluate` calls :func:`pair_sweep` when numba is installed and the
system is large enough to pay for it (:func:`pem_physics.engine.torques.pair_sweep_supported`; this module,
and numba with it, is imported only then); the numpy sweep of
:func:`pem_physics.engine.torques.dipole_pair_terms` stays the reference and the fallback
(``tests/engine/test_pairs.py`` checks both agree). One (member, target dipole) per parallel
iteration, each sum in a fixed order on one thread: results repeat bit for bit.
"""

from __future__ import annotations

import numpy as np

from ..jit import numba as _numba

numba = _numba()  # None without numba (Blender's Python, a plain numpy install): numpy runs instead

def available() -> bool:
    return numba is not None


#: Let LLVM reorder the pair sums (so it can vectorise them) and fuse multiply-adds; nothing
#: else: "nsz" lets it regroup r² + (1 − m) and "afn"/"arcp" approximate 1/x and √x, each
#: costing up to 1e-11 relative (seen on AVX-512, caught by tests/engine/test_fast.py).
_FM = {"reassoc", "contract"}

if numba is not None:
    @numba.njit(fastmath=_FM, error_model="numpy", inline="always")
    def _pair(dx, dy, dz, cx, cy, cz, ax, ay, az, m, k):
        """One source (moment c at separation d) acting on a dipole a: B, F and U terms (theory §3)."""
        r2 = dx * dx + dy * dy + dz * dz
        # Same-body pairs may coincide (r = 0): divide by 1 instead, then zero their weight (m = 0).
        # (A select, not numpy's r² + (1 − m): reassociated, that would round r² against 1.)
        inv_r2 = m / (r2 if m > 0.0 else 1.0)
        kr3 = k * np.sqrt(inv_r2) * inv_r2
        pad = ax * dx + ay * dy + az * dz
        pbd = cx * dx + cy * dy + cz * dz
        pab = ax * cx + ay * cy + az * cz
        q = pbd * inv_r2
        s5 = 3.0 * kr3 * inv_r2
        f1, f2, f3 = s5 * pad, s5 * pbd, s5 * (pab - 5.0 * pad * q)
        return (kr3 * (3.0 * q * dx - cx), kr3 * (3.0 * q * dy - cy), kr3 * (3.0 * q * dz - cz),
                f1 * cx + f2 * ax + f3 * dx, f1 * cy + f2 * ay + f3 * dy, f1 * cz + f2 * az + f3 * dz,
                kr3 * (pab - 3.0 * pad * q))

    @numba.njit(fastmath=_FM, error_model="numpy", inline="always")
    def _sum7(a, b):
        return a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5], a[6] + b[6]

    @numba.njit(fastmath=_FM, error_model="numpy", inline="always")
    def _min_image(d, L, periodic):
        return d - L * np.rint(d / L) if periodic else d

    @numba.njit(parallel=True, fastmath=_FM, error_model="numpy", cache=True)
    def _pair_sweep(rx, ry, rz, px, py, pz, owner, sx, sy, sz, qx, qy, qz, k, box, periodic, B, F, Uen):
        """Field, force and energy on every moving dipole from all others and the sources.

        Structure of arrays: rx… (E,D) lab positions (m) and px… moments (A·m²) of the moving
        dipoles, owner (D,) their bodies; sx…, qx… (S,) static sources. Outputs B, F (E,D,3),
        Uen (E,D) with moving pairs weighted ½ (each met twice) and sources 1 — the same sums
        as :func:`pem_physics.engine.torques.dipole_pair_terms`. One (member, target) per iteration:
        each sum runs in a fixed order on one thread, so results repeat bit for bit.
        """
        E, D = rx.shape
        S = sx.shape[0]
        bx, by, bz = box[0], box[1], box[2]
        for idx in numba.prange(E * D):
            e = idx // D
            a = idx - e * D
            xa, ya, za = rx[e, a], ry[e, a], rz[e, a]
            ax, ay, az = px[e, a], py[e, a], pz[e, a]
            oa = owner[a]
            acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # B (3), F (3), energy
            for b in range(D):
                acc = _sum7(acc, _pair(_min_image(xa - rx[e, b], bx, periodic), _min_image(ya - ry[e, b], by, periodic),
                                       _min_image(za - rz[e, b], bz, periodic), px[e, b], py[e, b], pz[e, b],
                                       ax, ay, az, 1.0 if owner[b] != oa else 0.0, k))
            # each moving pair is met twice (a←b and b←a): half its energy here, the sources' in full
            acc = (acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], 0.5 * acc[6])
            for j in range(S):
                acc = _sum7(acc, _pair(_min_image(xa - sx[j], bx, periodic), _min_image(ya - sy[j], by, periodic),
                                       _min_image(za - sz[j], bz, periodic), qx[j], qy[j], qz[j], ax, ay, az, 1.0, k))
            B[e, a, 0], B[e, a, 1], B[e, a, 2] = acc[0], acc[1], acc[2]
            F[e, a, 0], F[e, a, 1], F[e, a, 2] = acc[3], acc[4], acc[5]
            Uen[e, a] = acc[6]


def pair_sweep(r, p, owner, rs, ms, k, box, energies: bool):
    """All-pairs terms for :func:`pem_physics.engine.torques.evaluate` with the compiled kernel.

    r, p (E,D,3) moving dipoles; owner (D,); rs, ms (S,3) fixed/driven sources; k = μ₀/4π;
    box (3,) or None. Returns B (E,D,3) T, F (E,D,3) N and U (E,D) J or None.
    """
    E, D = r.shape[:2]
    cols = [np.ascontiguousarray(a[..., i]) for a in (r, p) for i in range(3)]
    rs = np.asarray(rs, float).reshape(-1, 3)
    ms = np.asarray(ms, float).reshape(-1, 3)
    src = [np.ascontiguousarray(a[:, i]) for a in (rs, ms) for i in range(3)]
    B = np.empty((E, D, 3))
    F = np.empty((E, D, 3))
    U = np.empty((E, D))
    periodic = box is not None
    _pair_sweep(*cols, np.ascontiguousarray(owner, dtype=np.int64), *src, float(k),
                np.asarray(box if periodic else (1.0, 1.0, 1.0), float), periodic, B, F, U)
    return B, F, (U if energies else None)
