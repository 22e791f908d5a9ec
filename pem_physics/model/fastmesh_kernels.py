"""The numba kernels of :mod:`.fastmesh`, in a module of their own: importing numba costs ~0.3 s, and a
process that meshes only small bodies (every Blender bake of a few thousand triangles) should not pay it.
:mod:`.fastmesh` imports this module on first use; the algorithms are described there."""

from __future__ import annotations

import numpy as np

from ..jit import numba as _numba

numba = _numba()
if numba is None:  # fastmesh.available() is checked before this module is imported
    raise ImportError("pem_physics.model.fastmesh_kernels needs numba")

@numba.njit(cache=True, inline="always")
def _neumaier(s, c, j, x):
    """s[j] += x with the lost low-order part accumulated in c[j] (Neumaier's variant of Kahan)."""
    t = s[j] + x
    if abs(s[j]) >= abs(x):
        c[j] += (s[j] - t) + x
    else:
        c[j] += (x - t) + s[j]
    s[j] = t

@numba.njit(cache=True, fastmath={"reassoc"}, inline="never")
def _run_sums(B, m, out):
    """out (10,) = Σ over the first m columns of B (9, ≥m) of (D, D s, D (Σ_k v_k v_kᵀ + s sᵀ)).

    B rows: x0, y0, z0, x1, y1, z1, x2, y2, z2 of m triangles. ``reassoc`` lets LLVM
    vectorize these short sums (a fixed reordering in the compiled code, so still
    deterministic); it is confined to this function so that the Neumaier compensation in
    the callers is not "simplified" away.
    """
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = 0.0
    for k in range(m):
        x0, y0, z0 = B[0, k], B[1, k], B[2, k]
        x1, y1, z1 = B[3, k], B[4, k], B[5, k]
        x2, y2, z2 = B[6, k], B[7, k], B[8, k]
        # Same formulas as inertia._raw_integrals: D = v0 · (v1 × v2) = 6 × tetrahedron volume.
        c0 = y1 * z2 - z1 * y2
        c1 = z1 * x2 - x1 * z2
        c2 = x1 * y2 - y1 * x2
        D = x0 * c0 + y0 * c1 + z0 * c2
        sx = x0 + x1 + x2
        sy = y0 + y1 + y2
        sz = z0 + z1 + z2
        a0 += D
        a1 += D * sx
        a2 += D * sy
        a3 += D * sz
        a4 += D * (x0 * x0 + x1 * x1 + x2 * x2 + sx * sx)
        a5 += D * (y0 * y0 + y1 * y1 + y2 * y2 + sy * sy)
        a6 += D * (z0 * z0 + z1 * z1 + z2 * z2 + sz * sz)
        a7 += D * (x0 * y0 + x1 * y1 + x2 * y2 + sx * sy)
        a8 += D * (y0 * z0 + y1 * z1 + y2 * z2 + sy * sz)
        a9 += D * (z0 * x0 + z1 * x1 + z2 * x2 + sz * sx)
    out[0], out[1], out[2], out[3], out[4] = a0, a1, a2, a3, a4
    out[5], out[6], out[7], out[8], out[9] = a5, a6, a7, a8, a9

@numba.njit(cache=True, parallel=True)
def _block_sums(V, F, origin, block, run, S, C):
    """Per block b of ``block`` triangles: S[b] + C[b] = its sum of ``_run_sums`` terms.

    V (N,3) float64, F (T,3) int64 (indices already validated), origin (3,) subtracted from
    every vertex; S, C (n_blocks, 10): Neumaier sum and compensation over runs of ``run``.
    """
    T = F.shape[0]
    ox, oy, oz = origin[0], origin[1], origin[2]
    for b in numba.prange(S.shape[0]):
        s = S[b]
        c = C[b]
        s[:] = 0.0
        c[:] = 0.0
        # Gather a run of vertices into contiguous rows first: the arithmetic then vectorizes.
        B = np.empty((9, run))
        part = np.empty(10)
        stop = min(T, (b + 1) * block)
        r0 = b * block
        while r0 < stop:
            m = min(stop - r0, run)
            for k in range(m):
                i0, i1, i2 = F[r0 + k, 0], F[r0 + k, 1], F[r0 + k, 2]
                B[0, k], B[1, k], B[2, k] = V[i0, 0] - ox, V[i0, 1] - oy, V[i0, 2] - oz
                B[3, k], B[4, k], B[5, k] = V[i1, 0] - ox, V[i1, 1] - oy, V[i1, 2] - oz
                B[6, k], B[7, k], B[8, k] = V[i2, 0] - ox, V[i2, 1] - oy, V[i2, 2] - oz
            _run_sums(B, m, part)
            for j in range(10):
                _neumaier(s, c, j, part[j])
            r0 += m

@numba.njit(cache=True)
def _combine(S, C):
    """Σ_b (S[b] + C[b]) per column (10,), compensated, in block order (deterministic)."""
    tot = np.zeros(10)
    comp = np.zeros(10)
    for b in range(S.shape[0]):
        for j in range(10):
            _neumaier(tot, comp, j, S[b, j])
            _neumaier(tot, comp, j, C[b, j])
    return tot + comp

@numba.njit(cache=True)
def _vertex_stats(V):
    """Mean vertex (3,) and largest bounding-box side (same units as V) of V (N,3), N ≥ 1."""
    n = V.shape[0]
    lo = V[0].copy()
    hi = V[0].copy()
    tot = np.zeros(3)
    comp = np.zeros(3)
    for i in range(n):
        for j in range(3):
            x = V[i, j]
            _neumaier(tot, comp, j, x)
            if x < lo[j]:
                lo[j] = x
            elif x > hi[j]:
                hi[j] = x
    return (tot + comp) / n, max(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2])

@numba.njit(cache=True, parallel=True)
def _corner_buckets(F, n, P):
    """Every corner of F (T,3) filed under its vertex (a parallel counting sort over P chunks of F).

    The corner of vertex v in face (…, u, v, w, …) has out-neighbour w (edge v→w) and
    in-neighbour u (edge u→v). Returns start (n+1,) int64 and outs, ins (3T,) int32: v's
    corners are outs/ins[start[v]:start[v+1]]. All three are empty if some index is outside
    0..n-1 or a triangle repeats a vertex (nothing is written out of bounds).
    """
    T = F.shape[0]
    count = np.zeros((P, n), np.int64)
    bad = 0
    for p in numba.prange(P):
        for t in range(p * T // P, (p + 1) * T // P):
            a, b, c = F[t, 0], F[t, 1], F[t, 2]
            if a < 0 or b < 0 or c < 0 or a >= n or b >= n or c >= n or a == b or b == c or a == c:
                bad += 1
            else:
                count[p, a] += 1
                count[p, b] += 1
                count[p, c] += 1
    start = np.empty(n + 1, np.int64)
    if bad:
        return start[:0], np.empty(0, np.int32), np.empty(0, np.int32)
    # count[p, v] becomes the slot where chunk p files its next corner of v.
    total = 0
    for v in range(n):
        start[v] = total
        for p in range(P):
            k = count[p, v]
            count[p, v] = total
            total += k
    start[n] = total
    # int32 neighbours: half the memory traffic of int64 (the caller checks n < 2**31).
    outs = np.empty(3 * T, np.int32)
    ins = np.empty(3 * T, np.int32)
    for p in numba.prange(P):
        for t in range(p * T // P, (p + 1) * T // P):
            a, b, c = F[t, 0], F[t, 1], F[t, 2]
            k = count[p, a]
            outs[k], ins[k] = b, c
            count[p, a] = k + 1
            k = count[p, b]
            outs[k], ins[k] = c, a
            count[p, b] = k + 1
            k = count[p, c]
            outs[k], ins[k] = a, b
            count[p, c] = k + 1
    return start, outs, ins

@numba.njit(cache=True, parallel=True)
def _count_bad_vertices(start, outs, ins):
    """The number of vertices whose out-neighbours repeat or differ (as a multiset) from their in-neighbours."""
    n = start.shape[0] - 1
    bad = 0
    for v in numba.prange(n):
        lo, hi = start[v], start[v + 1]
        if hi - lo <= 32:
            # Each out-neighbour once among the outs and once among the ins ⇔ outs distinct and
            # outs = ins as multisets (both lists have hi - lo entries). Quadratic but branch-free.
            for i in range(lo, hi):
                o = outs[i]
                n_out = 0
                n_in = 0
                for j in range(lo, hi):
                    n_out += outs[j] == o
                    n_in += ins[j] == o
                if n_out != 1 or n_in != 1:
                    bad += 1
                    break
        else:  # a high-valence vertex (a fan's hub): sort, O(d log d)
            so = np.sort(outs[lo:hi])
            si = np.sort(ins[lo:hi])
            ok = so[0] == si[0]
            for i in range(1, hi - lo):
                ok = ok and so[i] != so[i - 1] and so[i] == si[i]
            if not ok:
                bad += 1
    return bad
