"""Optional compiled mesh kernels (numba): mass-property integrals and the closed-mesh check.

Blender ships numpy only, so nothing here is required: :func:`available` says whether numba
imported. :mod:`pem_physics.model.inertia` stays the reference and the fallback; it calls in here
for meshes of at least :data:`MIN_TRIANGLES` triangles when :data:`ENABLED` is set.

* :func:`raw_integrals` computes the same exact polyhedral integrals as
  ``inertia._raw_integrals`` (signed tetrahedra from the origin) in one pass over the
  triangles, in parallel over fixed blocks of :data:`_BLOCK` triangles. Within a block, runs
  of :data:`_RUN` triangles are summed plainly (vectorized) and the run totals added with
  Neumaier compensation; block totals are then added in block order, again compensated. The
  partition depends only on the triangle count, so results are bit-identical run to run
  whatever the number of threads (on one machine: the vectorized run sums depend on the
  CPU's vector width), and the rounding error stays at a few ulps of the sum of magnitudes.
* :func:`closed_mesh_ok` decides whether the mesh is closed, manifold and consistently
  oriented by filing each triangle corner under its vertex (a parallel counting sort: O(F),
  no hashing, no global sort) and comparing each vertex's out- and in-neighbours. It only
  answers yes or no; on "no" ``inertia.check_closed_mesh`` runs its numpy diagnosis, so the
  error messages are the numpy path's, word for word.
"""

from __future__ import annotations

import numpy as np

from ..jit import numba as _numba

#: Meshes with fewer triangles run on the numpy path. Once loaded the kernels win at every size
#: (~10× on 2 cores), but the first call in a process loads them from numba's cache (~0.2 s; a
#: first-ever compile takes seconds), which numpy's ~0.2 µs per triangle repays only for big meshes.
MIN_TRIANGLES = 100_000

#: Set False to force the numpy reference path (the tests compare both).
ENABLED = True

#: Triangles per parallel block (fixed, so that results do not depend on the thread count).
_BLOCK = 8192
#: Triangles summed naively before a compensated add (bounds the error to ~_RUN ulps per run).
_RUN = 64


def available() -> bool:
    """Whether numba imports (None without it: Blender's Python, a plain numpy install; numpy runs instead).
    Imports numba: ask only for a mesh of at least :data:`MIN_TRIANGLES` triangles."""
    return _numba() is not None


#: The kernels (:mod:`.fastmesh_kernels`), by name: reached as attributes of this module too (the tests do).
_KERNELS = ('_neumaier', '_run_sums', '_block_sums', '_combine', '_vertex_stats', '_corner_buckets',
            '_count_bad_vertices')


def _k():
    """The compiled kernels' module, imported (with numba) on first use."""
    from . import fastmesh_kernels

    return fastmesh_kernels


def __getattr__(name):
    if name in _KERNELS:
        return getattr(_k(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def raw_integrals(V: np.ndarray, F: np.ndarray, origin) -> tuple[float, np.ndarray, np.ndarray]:
    """Signed volume, first moments (3,) and second moments ∫ x_i x_j dV (3,3) about ``origin``.

    Same integrals as ``inertia._raw_integrals(V - origin, F)`` without forming ``V - origin``.
    V: (N,3) float; F: (T,3) valid vertex indices; origin: (3,) in V's units.
    """
    V = np.ascontiguousarray(V, dtype=np.float64)
    F = np.ascontiguousarray(F, dtype=np.int64)
    n_blocks = max(1, -(-len(F) // _BLOCK))
    S = np.empty((n_blocks, 10))
    C = np.empty((n_blocks, 10))
    _k()._block_sums(V, F, np.ascontiguousarray(origin, dtype=np.float64), _BLOCK, _RUN, S, C)
    tot = _k()._combine(S, C)
    vol = tot[0] / 6.0
    first = tot[1:4] / 24.0
    xx, yy, zz, xy, yz, zx = tot[4:10] / 120.0
    second = np.array([[xx, xy, zx], [xy, yy, yz], [zx, yz, zz]])
    return float(vol), first, second


def vertex_stats(V: np.ndarray) -> tuple[np.ndarray, float]:
    """Mean vertex (3,) and the largest side of the bounding box of V (N,3), N ≥ 1."""
    mean, extent = _k()._vertex_stats(np.ascontiguousarray(V, dtype=np.float64))
    return mean, float(extent)


def closed_mesh_ok(F: np.ndarray, n_vertices: int) -> bool:
    """True if every index of F (T,3) is in 0..n_vertices-1, no triangle repeats a vertex, and the
    mesh is closed, manifold and consistently oriented: every directed edge occurs once and so
    does its reverse. Checked per vertex: its out-neighbours are distinct and equal its
    in-neighbours (as multisets), which is the numpy check's "sorted edge keys equal sorted
    reversed keys" split by source vertex.

    False means "not shown closed": ``inertia.check_closed_mesh`` then decides and explains.
    """
    if n_vertices >= 2**31 or len(F) == 0:  # int32 neighbour lists would overflow; leave it to numpy
        return False
    P = min(8, _k().numba.get_num_threads())  # any P gives the same answer
    start, outs, ins = _k()._corner_buckets(np.ascontiguousarray(F, dtype=np.int64), int(n_vertices), P)
    return start.size > 0 and _k()._count_bad_vertices(start, outs, ins) == 0
