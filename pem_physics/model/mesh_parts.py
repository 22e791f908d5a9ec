"""Closed parts of one triangle mesh: which of them overlap (their common volume would count twice).

A mesh joined from several closed parts (two boxes in one object, a body and its child meshes) has
mass properties that are the sum of the parts' (:func:`pem_physics.model.inertia.mesh_mass_properties`
integrates the signed volume of every face): where two solid parts intersect, their common volume
counts twice. :func:`overlapping_parts` finds such pairs, so a caller can say so:

- parts are the connected components of the faces (:func:`mesh_parts`, faces sharing a vertex);
- a part whose signed volume has the opposite sign to the whole is a cavity (an inner surface facing
  inwards) and is meant to subtract: it is never reported;
- two solid parts overlap when their surfaces cross — an edge of one passes through a triangle of the
  other, strictly inside both — or the surface of one reaches inside the other: a point just inside
  one of its faces (centroids and three points around each) is inside the other (ray parity). That
  also finds a part wholly inside another and a part duplicated in place; parts that only touch, face
  on face or edge on face, do not count.

Pure numpy; the pairwise tests run only where the parts' bounding boxes overlap, in blocks of
bounded memory.
"""

from __future__ import annotations

import numpy as np

#: Margin by which a crossing must lie inside an edge and a triangle (in their own units: segment parameter,
#: barycentric coordinates), and below which an edge counts as parallel to a triangle: surfaces that only touch
#: (a shared face plane, an edge ending on a face) are not an overlap.
EPS = 1e-9
#: Bounding boxes are compared with this margin, relative to the mesh's size.
TOUCH_RTOL = 1e-9
#: Probe points per part tried before the edges (nearest the overlap's centre).
FIRST_PROBES = 256
#: Cells a side, at most, of the grid that pairs boxes (edges, rays) with triangles' boxes.
GRID_CELLS = 128


def mesh_parts(F, n_vertices: int) -> list:
    """Face indices (each an int array, ascending) of the connected parts of the mesh: faces sharing a vertex are
    in one part. Parts are ordered by their first face."""
    F = np.asarray(F, dtype=np.int64).reshape(-1, 3)
    label = np.arange(n_vertices)
    while True:
        # hook: every vertex's root takes the smallest root among the faces it is in, then jump to the roots
        low = label[F].min(axis=1)
        new = label.copy()
        np.minimum.at(new, label[F].ravel(), np.repeat(low, 3))
        while True:
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, label):
            break
        label = new
    face_label = label[F[:, 0]]
    _, first, inverse = np.unique(face_label, return_index=True, return_inverse=True)
    order = np.argsort(first)
    return [np.flatnonzero(inverse == k) for k in order]


def signed_volume(V, F) -> float:
    """Signed volume (m³) enclosed by the triangles F (T,3) of vertices V (N,3): positive for outward faces."""
    a, b, c = (np.asarray(V, float)[np.asarray(F)[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


#: Ray directions of :func:`inside` (unit vectors in no simple ratio to the axes, so that a ray rarely meets an
#: edge or a vertex of a mesh built on a grid): a point is inside when rays along both cross the surface an odd
#: number of times.
RAYS = (np.array([0.8017837, 0.5345225, 0.2672612]), np.array([-0.3015113, 0.9045340, -0.3015113]))


def _frame(d) -> np.ndarray:
    """A rotation (3,3) whose first row is the unit vector d."""
    helper = np.eye(3)[int(np.argmin(np.abs(d)))]
    e1 = np.cross(d, helper)
    e1 /= np.linalg.norm(e1)
    return np.array([d, e1, np.cross(d, e1)])


def _mt(p0, d, A, e1, e2):
    """Möller–Trumbore for rows of segments/rays p0 + t·d and triangles (A, A + e1, A + e2): (ok, u, v, t), ok
    False where d is parallel to the triangle's plane (to round-off: such a line only touches it)."""
    h = np.cross(d, e2)
    det = np.einsum("ij,ij->i", h, e1)
    ok = np.abs(det) > EPS * np.linalg.norm(d, axis=1) * np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1)
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    sv = p0 - A
    q = np.cross(sv, e1)
    return ok, np.einsum("ij,ij->i", sv, h) * inv, np.einsum("ij,ij->i", d, q) * inv, np.einsum("ij,ij->i", q, e2) * inv


def _odd_crossings(P, V, F, d) -> np.ndarray:
    """(K,) whether the ray from each point P (K,3) along d crosses the triangles F an odd number of times (in a
    frame with d as its first axis, only the triangles around each ray's line are tested)."""
    R = _frame(d)
    Pr, T = P @ R.T, (V @ R.T)[F]                                   # (K,3), (T,3,3)
    i, j = _candidates(Pr[:, 1:], Pr[:, 1:], T[:, :, 1:].min(axis=1), T[:, :, 1:].max(axis=1))
    if not len(i):
        return np.zeros(len(P), bool)
    ahead = T[j, :, 0].max(axis=1) > Pr[i, 0]
    i, j = i[ahead], j[ahead]
    ray = np.broadcast_to([1.0, 0.0, 0.0], (len(i), 3))
    ok, u, v, t = _mt(Pr[i], ray, T[j, 0], T[j, 1] - T[j, 0], T[j, 2] - T[j, 0])
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0)
    return np.bincount(i[hit], minlength=len(P)) % 2 == 1


def inside(points, V, F) -> np.ndarray:
    """(K,) whether each point (K,3) lies inside the closed surface (V, F): rays along both :data:`RAYS` cross it
    an odd number of times. Points on the surface itself may come out either way."""
    P = np.asarray(points, float).reshape(-1, 3)
    V, F = np.asarray(V, float), np.asarray(F)
    out = _odd_crossings(P, V, F, RAYS[0])
    if out.any():
        out[out] = _odd_crossings(P[out], V, F, RAYS[1])
    return out


def _box(V):
    return V.min(axis=0), V.max(axis=0)


def _edges(F) -> np.ndarray:
    """Unique undirected edges (E,2) of the triangles F."""
    e = np.sort(np.concatenate([F[:, [0, 1]], F[:, [1, 2]], F[:, [2, 0]]]), axis=1)
    return np.unique(e, axis=0)


def _in_box(P, lo, hi) -> np.ndarray:
    """(K,) whether the bounding boxes of the point sets P (K,M,3) meet the box [lo, hi]."""
    return np.all((P.min(axis=1) <= hi) & (P.max(axis=1) >= lo), axis=1)


def _cell_keys(lo, hi, origin, h, shape):
    """(box index, cell key) of every grid cell each box [lo, hi] (M,k) spans, on the grid of cells of size h
    from ``origin`` with ``shape`` cells a side (keys are flat cell indices)."""
    a = np.clip(np.floor((lo - origin) / h).astype(np.int64), 0, shape - 1)
    b = np.clip(np.floor((hi - origin) / h).astype(np.int64), 0, shape - 1)
    span = b - a + 1                                                    # (M,k) cells a side
    n = np.prod(span, axis=1)
    box = np.repeat(np.arange(len(lo)), n)
    rank = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)    # which of the box's cells
    key = np.zeros(len(box), np.int64)
    for d in range(lo.shape[1]):                                        # mixed radix: the cell's index per axis
        step = span[box, d]
        key = key * shape[d] + a[box, d] + rank % step
        rank //= step
    return box, key


def _candidates(lo1, hi1, lo2, hi2):
    """(i, j) index arrays of the boxes [lo1, hi1] (M,k) and [lo2, hi2] (N,k) that meet: boxes registered on a
    uniform grid (cells about the size of a typical box of the second set), pairs sharing a cell tested."""
    if not len(lo1) or not len(lo2):
        return np.empty(0, np.intp), np.empty(0, np.intp)
    origin = np.minimum(lo1.min(axis=0), lo2.min(axis=0))
    extent = np.maximum(hi1.max(axis=0), hi2.max(axis=0)) - origin
    typical = float(np.median((hi2 - lo2).max(axis=1)))
    h = max(typical, float(extent.max()) / GRID_CELLS, 1e-300)
    shape = np.minimum(np.floor(extent / h).astype(np.int64) + 1, GRID_CELLS)
    h = np.maximum(extent / shape, 1e-300)                              # the grid covers the extent exactly
    b1, k1 = _cell_keys(lo1, hi1, origin, h, shape)
    b2, k2 = _cell_keys(lo2, hi2, origin, h, shape)
    order = np.argsort(k2, kind="stable")
    b2, k2 = b2[order], k2[order]
    start, stop = np.searchsorted(k2, k1, "left"), np.searchsorted(k2, k1, "right")
    n = stop - start
    i = np.repeat(b1, n)
    j = b2[np.repeat(start, n) + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)]
    pair = np.sort(i * len(lo2) + j)                                    # a pair shares several cells: once
    pair = pair[np.r_[True, pair[1:] != pair[:-1]][:len(pair)]]         # (np.unique hashes: ~10× slower here)
    i, j = pair // len(lo2), pair % len(lo2)
    meet = np.all((lo1[i] <= hi2[j]) & (hi1[i] >= lo2[j]), axis=1)
    return i[meet], j[meet]


def _edges_cross(V, edges, F, tol: float = 0.0) -> bool:
    """Whether a segment of ``edges`` (E,2) passes through a triangle of F (T,3), strictly inside both
    (:func:`_mt` on the pairs whose bounding boxes meet), more than ``tol`` (length) from the segment's ends: a
    segment poking less than that through the face is touching. A segment in a triangle's plane does not cross it."""
    P0, P1 = V[edges[:, 0]], V[edges[:, 1]]
    T = V[F]                                                            # (T,3,3)
    i, j = _candidates(np.minimum(P0, P1), np.maximum(P0, P1), T.min(axis=1), T.max(axis=1))
    if not len(i):
        return False
    d = P1[i] - P0[i]
    ok, u, v, t = _mt(P0[i], d, T[j, 0], T[j, 1] - T[j, 0], T[j, 2] - T[j, 0])
    end = np.maximum(EPS, tol / np.maximum(np.linalg.norm(d, axis=1), 1e-300))
    return bool(np.any(ok & (u > EPS) & (v > EPS) & (u + v < 1 - EPS) & (t > end) & (t < 1 - end)))


def _samples(V, F, sign: float, depth: float) -> np.ndarray:
    """Points just inside the solid bounded by the faces F: each triangle's centroid and the midpoints between it
    and the corners, moved ``depth`` along the inward normal (−``sign`` × the faces' normal)."""
    A, B, C = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    n = np.cross(B - A, C - A)
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    g = (A + B + C) / 3.0
    pts = np.concatenate([g, (g + A) / 2, (g + B) / 2, (g + C) / 2])
    return pts - sign * depth * np.tile(n, (4, 1))


def _probes(V, F, sign: float, lo, hi, depth: float) -> np.ndarray:
    """Points just inside the faces F (:func:`_samples`) within the boxes' overlap [lo, hi], nearest its centre
    first. Points on the surface itself are not used: touching parts would come out either way."""
    P = _samples(V, F, sign, depth)
    P = P[np.all((P >= lo) & (P <= hi), axis=1)]
    return P[np.argsort(np.linalg.norm(P - (lo + hi) / 2, axis=1))]


def _solids_overlap(V, Fa, Fb, sign: float, tol: float) -> bool:
    """Whether the closed parts Fa and Fb (faces of V, outward for ``sign`` +1) overlap: a point just inside one
    part's faces lies inside the other (a face of one inside the other, one wholly inside the other, or the same
    solid twice; surfaces that cross exactly edge on edge, as two copies of one mesh moved along an axis do), or
    an edge of one passes through a face of the other. The few probe points nearest the overlap's centre go
    first, then the edges, then the other probes."""
    (la, ha), (lb, hb) = _box(V[np.unique(Fa)]), _box(V[np.unique(Fb)])
    lo, hi = np.maximum(la, lb) - tol, np.minimum(ha, hb) + tol
    if np.any(lo > hi):
        return False
    probes = [(_probes(V, Fa, sign, lo, hi, 1e3 * tol), Fb), (_probes(V, Fb, sign, lo, hi, 1e3 * tol), Fa)]
    if any(inside(P[:FIRST_PROBES], V, F).any() for P, F in probes):
        return True
    for F1, F2 in ((Fa, Fb), (Fb, Fa)):
        edges = _edges(F1)
        edges = edges[_in_box(V[edges], lo, hi)]
        tris = F2[_in_box(V[F2], lo, hi)]
        if len(edges) and len(tris) and _edges_cross(V, edges, tris, tol):
            return True
    return any(inside(P[FIRST_PROBES:], V, F).any() for P, F in probes if len(P) > FIRST_PROBES)


def overlapping_parts(V, F, parts: list | None = None, tol: float | None = None) -> list:
    """Pairs (i, j), i < j, of the solid parts (:func:`mesh_parts`, or ``parts`` given) of the closed mesh (V, F)
    that overlap by more than ``tol`` (length; default TOUCH_RTOL of the mesh's extent — give the precision the
    vertices were stored with, e.g. single precision's, so that parts meant to touch do not count). Cavities (parts
    whose signed volume has the opposite sign to the whole mesh) are left out."""
    V = np.asarray(V, dtype=float)
    F = np.asarray(F, dtype=np.int64).reshape(-1, 3)
    parts = mesh_parts(F, len(V)) if parts is None else parts
    if len(parts) < 2:
        return []
    vols = np.array([signed_volume(V, F[p]) for p in parts])
    sign = np.sign(vols.sum()) or 1.0
    tol = max(TOUCH_RTOL * float(np.ptp(V, axis=0).max()), tol or 0.0)
    solid = [k for k in range(len(parts)) if np.sign(vols[k]) == sign]
    return [(i, j) for n, i in enumerate(solid) for j in solid[n + 1:]
            if _solids_overlap(V, F[parts[i]], F[parts[j]], sign, tol)]


#: Edges tested against the triangles at a time by :func:`self_intersects` (bounds its memory).
EDGE_BLOCK = 100_000


def self_intersects(V, F) -> bool:
    """Whether the surface (V, F) passes through itself: an edge crosses one of its triangles that does not share a
    vertex with it, strictly inside both. Such a surface (two solids glued at a vertex through each other, a part
    folded through itself) encloses no solid: its face integrals count some volume twice. Parts that only touch,
    and coplanar faces, do not count (as in :func:`overlapping_parts`)."""
    V = np.asarray(V, dtype=float)
    F = np.asarray(F, dtype=np.int64).reshape(-1, 3)
    edges = _edges(F)
    T = V[F]
    tlo, thi = T.min(axis=1), T.max(axis=1)
    for k in range(0, len(edges), EDGE_BLOCK):
        e = edges[k:k + EDGE_BLOCK]
        P0, P1 = V[e[:, 0]], V[e[:, 1]]
        i, j = _candidates(np.minimum(P0, P1), np.maximum(P0, P1), tlo, thi)
        apart = ~((F[j] == e[i, :1]).any(axis=1) | (F[j] == e[i, 1:]).any(axis=1))   # no shared vertex
        i, j = i[apart], j[apart]
        if not len(i):
            continue
        ok, u, v, t = _mt(P0[i], P1[i] - P0[i], T[j, 0], T[j, 1] - T[j, 0], T[j, 2] - T[j, 0])
        if np.any(ok & (u > EPS) & (v > EPS) & (u + v < 1 - EPS) & (t > EPS) & (t < 1 - EPS)):
            return True
    return False
