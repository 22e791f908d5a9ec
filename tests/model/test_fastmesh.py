"""The optional numba mesh kernels against the numpy reference path, closed forms and trimesh."""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from budget import property_settings

numba = pytest.importorskip("numba")

from scipy.spatial import ConvexHull  # noqa: E402

from pem_physics import examples  # noqa: E402
from pem_physics.errors import MeshError  # noqa: E402
from pem_physics.model import fastmesh  # noqa: E402
from pem_physics.model.inertia import _raw_integrals, check_closed_mesh, mesh_mass_properties  # noqa: E402

RTOL = 1e-12


@contextmanager
def path(fast: bool):
    """Route inertia's mesh code through the numba kernels (any size) or the numpy reference."""
    saved = fastmesh.ENABLED, fastmesh.MIN_TRIANGLES
    fastmesh.ENABLED, fastmesh.MIN_TRIANGLES = fast, 0
    try:
        yield
    finally:
        fastmesh.ENABLED, fastmesh.MIN_TRIANGLES = saved


def both(V, F, **kw):
    with path(False):
        ref = mesh_mass_properties(V, F, **kw)
    with path(True):
        got = mesh_mass_properties(V, F, **kw)
    return ref, got


def assert_agree(got, ref, extent, rtol=RTOL):
    assert got.volume == pytest.approx(ref.volume, rel=rtol, abs=0)
    assert got.mass == pytest.approx(ref.mass, rel=rtol, abs=0)
    # Relative to the mesh's size, not to |com|: stricter for meshes far from the origin.
    np.testing.assert_allclose(got.center_of_mass, ref.center_of_mass, rtol=0, atol=rtol * extent)
    np.testing.assert_allclose(got.inertia, ref.inertia, rtol=0, atol=rtol * np.abs(ref.inertia).max())


def rotation(rng):
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def outward_hull(P):
    """Triangles (T,3) of the convex hull of P (N,3), wound counter-clockwise seen from outside."""
    hull = ConvexHull(P)
    F = hull.simplices.copy()
    a, b, c = P[F[:, 0]], P[F[:, 1]], P[F[:, 2]]
    inward = np.einsum("ij,ij->i", np.cross(b - a, c - a), hull.equations[:, :3]) < 0
    F[inward] = F[inward][:, ::-1]
    return F


@st.composite
def hull_meshes(draw):
    """A random convex polyhedron, rigidly moved and scaled, sometimes far (10³ sizes) from the origin."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(5, 80))
    P = rng.normal(size=(n, 3)) * rng.uniform(0.1, 3.0, 3)
    F = outward_hull(P)
    scale = 10.0 ** draw(st.floats(-3, 3))
    far = draw(st.sampled_from([0.0, 1.0, 1e3]))
    direction = rng.normal(size=3)
    V = scale * (P @ rotation(rng).T + far * np.ptp(P, axis=0).max() * direction / np.linalg.norm(direction))
    return V, F


def grid_box(n, sides):
    """Closed box [0,a]×[0,b]×[0,c] whose faces are n×n grids of quads: vertices (6n²+2,3), 12n² triangles."""
    points, tris = [], []
    m = n + 1
    i, j = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
    k0 = (i[:-1, :-1] * m + j[:-1, :-1]).ravel()  # lower corner of each quad in a face's m×m grid
    for axis, value in ((0, 0), (0, n), (1, 0), (1, n), (2, 0), (2, n)):
        # grid directions u, w with u × w along the outward normal
        u, w = [(axis + 1) % 3, (axis + 2) % 3][:: 1 if value else -1]
        k = k0 + m * m * len(points)
        pts = np.zeros((m * m, 3), np.int64)
        pts[:, axis], pts[:, u], pts[:, w] = value, i.ravel(), j.ravel()
        points.append(pts)
        tris += [np.c_[k, k + m, k + m + 1], np.c_[k, k + m + 1, k + 1]]
    # merge the copies of each lattice point along the box's edges
    lattice = np.concatenate(points)
    keys = (lattice[:, 0] * m + lattice[:, 1]) * m + lattice[:, 2]
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    V = lattice[first] * (np.asarray(sides, float) / n)
    return V, inverse[np.concatenate(tris)]


def double_cone(k, r=1.0, h=0.7):
    """Two cones on a regular k-gon of circumradius r, apexes at ±h: two vertices of valence k."""
    phi = 2 * np.pi * np.arange(k) / k
    V = np.r_[np.c_[r * np.cos(phi), r * np.sin(phi), np.zeros(k)], [[0, 0, h], [0, 0, -h]]]
    i = np.arange(k)
    F = np.r_[np.c_[i, (i + 1) % k, np.full(k, k)], np.c_[(i + 1) % k, i, np.full(k, k + 1)]]
    return V, F


def message(fn, *args, **kw):
    with pytest.raises(MeshError) as err:
        fn(*args, **kw)
    return str(err.value)


# ---------------------------------------------------------------- the dispatch

def test_inertia_dispatches_to_the_kernels(monkeypatch):
    V, F = double_cone(50)
    calls = []
    real = fastmesh.raw_integrals
    monkeypatch.setattr(fastmesh, "raw_integrals", lambda *a: calls.append(1) or real(*a))
    with path(True):
        mesh_mass_properties(V, F)
    assert calls == [1]
    with path(False):
        mesh_mass_properties(V, F)
    monkeypatch.setattr(fastmesh, "MIN_TRIANGLES", len(F) + 1)
    mesh_mass_properties(V, F)  # too small for the kernels at the default settings
    assert calls == [1]


# ---------------------------------------------------------------- numba = numpy

@property_settings(100)
@given(hull_meshes())
def test_kernels_match_numpy_on_random_hulls(mesh):
    V, F = mesh
    ref, got = both(V, F, density=3.5)
    assert_agree(got, ref, np.ptp(V, axis=0).max())


def test_million_triangle_icosphere_far_from_origin_matches_numpy(rng):
    trimesh = pytest.importorskip("trimesh")
    m = trimesh.creation.icosphere(subdivisions=8, radius=0.3)
    assert len(m.faces) > 1_000_000
    V = np.asarray(m.vertices) @ rotation(rng).T * (1.0, 0.7, 0.4) + 1e3 * 0.6 * np.array([0.6, -0.8, 0.0])
    ref, got = both(V, m.faces, density=7.8e3)
    assert_agree(got, ref, 0.6)


def test_kernels_match_trimesh(rng):
    trimesh = pytest.importorskip("trimesh")
    m = trimesh.creation.torus(major_radius=1.0, minor_radius=0.3, major_sections=512, minor_sections=256)
    m.apply_transform(trimesh.transformations.random_rotation_matrix(rng.random(3)))
    with path(True):
        got = mesh_mass_properties(m.vertices, m.faces)
    assert got.volume == pytest.approx(m.volume, rel=1e-10)
    np.testing.assert_allclose(got.center_of_mass, m.center_mass, atol=1e-10)
    np.testing.assert_allclose(got.inertia, m.moment_inertia, atol=1e-10 * np.abs(got.inertia).max())


def test_sums_are_within_the_rounding_bound_of_exactly_rounded_sums(rng):
    """Each of the 10 sums against math.fsum of the same terms computed by numpy, far from the origin.

    About the centroid the first moments cancel to ~0: only a bound relative to Σ|term| can hold.
    """
    V, F = grid_box(60, (1.0, 0.6, 0.3))
    V = V @ rotation(rng).T + (400.0, -300.0, 100.0)
    origin = V.mean(axis=0)
    v0, v1, v2 = V[F[:, 0]] - origin, V[F[:, 1]] - origin, V[F[:, 2]] - origin
    (x0, y0, z0), (x1, y1, z1), (x2, y2, z2) = v0.T, v1.T, v2.T
    D = x0 * (y1 * z2 - z1 * y2) + y0 * (z1 * x2 - x1 * z2) + z0 * (x1 * y2 - y1 * x2)
    s = v0 + v1 + v2
    pairs = [(0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (2, 0)]
    terms = [D, *(D * s.T)] + [D * (v0[:, i] * v0[:, j] + v1[:, i] * v1[:, j] + v2[:, i] * v2[:, j]
                                    + s[:, i] * s[:, j]) for i, j in pairs]
    vol, first, second = fastmesh.raw_integrals(V, F, origin)
    got = [6 * vol, *(24 * first)] + [120 * second[i, j] for i, j in pairs]
    eps = np.finfo(float).eps
    for g, t in zip(got, terms):
        # Plain sums of _RUN terms, then compensated adds: |error| ≤ (_RUN + a few)·eps·Σ|t|; a few
        # ulps more for the terms themselves, which the kernel may round differently (reassociation).
        assert abs(g - math.fsum(t)) <= (fastmesh._RUN + 16) * eps * np.abs(t).sum()


def test_raw_integrals_equal_the_numpy_integrals_about_the_same_origin(rng):
    V, F = grid_box(40, (0.2, 0.5, 0.9))
    V = V @ rotation(rng).T + 5.0
    origin = V.mean(axis=0)
    ref = _raw_integrals(V - origin, F)
    got = fastmesh.raw_integrals(V, F, origin)
    assert got[0] == pytest.approx(ref[0], rel=RTOL)
    scale = np.abs(ref[2]).max()
    np.testing.assert_allclose(got[1], ref[1], rtol=0, atol=RTOL * abs(ref[0]) * np.ptp(V, axis=0).max())
    np.testing.assert_allclose(got[2], ref[2], rtol=0, atol=RTOL * scale)


# ---------------------------------------------------------------- closed forms

@pytest.mark.parametrize("center", [(0.0, 0.0, 0.0), (1e3, -2e3, 0.5e3)])
def test_box_mesh_closed_form(center):
    half = np.array([0.3, 0.7, 1.1])
    V, F = examples.box_mesh(half, center)
    with path(True):
        mp = mesh_mass_properties(V, F, density=2.5)
    a, b, c = half
    M = 2.5 * 8 * a * b * c
    assert mp.volume == pytest.approx(8 * a * b * c, rel=RTOL)
    assert mp.mass == pytest.approx(M, rel=RTOL)
    np.testing.assert_allclose(mp.center_of_mass, center, rtol=0, atol=RTOL * 2 * half.max())
    want = M / 3 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    np.testing.assert_allclose(mp.inertia, want, rtol=0, atol=RTOL * want.max())


def test_large_grid_box_rotated_and_far_closed_form(rng):
    sides = np.array([1.0, 0.6, 0.3])
    V, F = grid_box(150, sides)
    assert len(F) == 12 * 150**2
    R = rotation(rng)
    offset = 1e3 * np.array([0.3, -0.5, 0.8])
    V = (V - sides / 2) @ R.T + offset
    ref, got = both(V, F, density=1.0)
    assert_agree(got, ref, 1.0)
    a, b, c = sides
    M = a * b * c
    # Rounding the rotated, far-moved vertices (ulp(10³) ≈ 1e-13) bounds what a closed form can check.
    assert got.volume == pytest.approx(M, rel=1e-11)
    np.testing.assert_allclose(got.center_of_mass, offset, rtol=0, atol=1e-11)
    want = R @ (M / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])) @ R.T
    np.testing.assert_allclose(got.inertia, want, rtol=0, atol=1e-11 * want.max())


def test_double_cone_closed_form_and_high_valence_vertices():
    k, r, h = 200, 0.8, 0.5  # the two apexes have valence 200: the kernel's sorting branch
    V, F = double_cone(k, r, h)
    assert fastmesh.closed_mesh_ok(F, len(V))
    ref, got = both(V, F)
    assert_agree(got, ref, 2 * r)
    base = 0.5 * k * r * r * np.sin(2 * np.pi / k)
    assert got.volume == pytest.approx(2 * base * h / 3, rel=RTOL)


# ---------------------------------------------------------------- determinism

def test_results_are_bit_identical_run_to_run_and_across_thread_counts(rng):
    V, F = grid_box(100, (0.4, 0.5, 0.6))
    V = V @ rotation(rng).T + 1e3
    with path(True):
        first = mesh_mass_properties(V, F)
        again = mesh_mass_properties(V, F)
        threads = numba.get_num_threads()
        try:
            numba.set_num_threads(1)
            serial = mesh_mass_properties(V, F)
        finally:
            numba.set_num_threads(threads)
    for other in (again, serial):
        assert other.volume == first.volume and other.mass == first.mass
        np.testing.assert_array_equal(other.center_of_mass, first.center_of_mass)
        np.testing.assert_array_equal(other.inertia, first.inertia)


# ---------------------------------------------------------------- the closed-mesh check

def mutate(F, kind, k, n_vertices):
    F = F.copy()
    if kind == "drop":
        return np.delete(F, k, axis=0)
    if kind == "flip":
        F[k] = F[k, ::-1]
    elif kind == "duplicate":
        F = np.r_[F, F[k:k + 1]]
    elif kind == "duplicate-flipped":
        F = np.r_[F, F[k:k + 1, ::-1]]
    elif kind == "degenerate":
        F[k, 2] = F[k, 0]
    elif kind == "rewire":
        F[k, 1] = (F[k, 1] + 1 + k % (n_vertices - 1)) % n_vertices
        if len(set(F[k])) < 3:
            F[k, 1] = F[(k + 1) % len(F), 0]
    elif kind == "swap":  # exchange a vertex between two faces
        j = (k + len(F) // 2) % len(F)
        F[k, 0], F[j, 0] = F[j, 0], F[k, 0]
    return F


KINDS = ["none", "drop", "flip", "duplicate", "duplicate-flipped", "degenerate", "rewire", "swap"]


@property_settings(100)
@given(hull_meshes(), st.sampled_from(KINDS), st.integers(0, 10**6))
def test_kernel_check_agrees_with_numpy_check(mesh, kind, k):
    V, F = mesh
    F = mutate(F, kind, k % len(F), len(V))
    try:
        with path(False):
            check_closed_mesh(F, len(V))
        numpy_ok, numpy_msg = True, None
    except MeshError as err:
        numpy_ok, numpy_msg = False, str(err)
    assert fastmesh.closed_mesh_ok(F, len(V)) == numpy_ok
    if kind == "none":
        assert numpy_ok
    if not numpy_ok:
        with path(True):
            assert message(check_closed_mesh, F, len(V)) == numpy_msg


@pytest.mark.parametrize("kind, words", [("drop", "is not closed"), ("flip", "not consistently oriented"),
                                         ("duplicate", "not manifold"), ("degenerate", "repeats a vertex")])
def test_defective_meshes_raise_the_same_error_through_both_paths(kind, words):
    for V, F in (examples.box_mesh((0.5, 0.4, 0.3)), double_cone(64)):
        bad = mutate(F, kind, 3, len(V))
        with path(False):
            want = message(mesh_mass_properties, V, bad)
        with path(True):
            assert not fastmesh.closed_mesh_ok(bad, len(V))
            assert message(mesh_mass_properties, V, bad) == want
        assert words in want


@pytest.mark.parametrize("d", [6, 33, 200])  # both sides of the kernel's quadratic / sorting switch (32)
def test_per_vertex_test_of_the_kernel(d, rng):
    """One vertex's corners: out-neighbours distinct and equal to the in-neighbours, or not."""
    outs = rng.permutation(10 * d)[:d].astype(np.int32)
    start = np.array([0, d])
    cases = {"permuted": (outs, rng.permutation(outs), 0)}
    dup = outs.copy()
    dup[-1] = dup[0]
    cases["repeated out"] = (dup, dup, 1)
    other = outs.copy()
    other[d // 2] = 10 * d + 1
    cases["one in differs"] = (outs, other, 1)
    twice = outs.copy()
    twice[1] = twice[0]
    cases["an in repeated"] = (outs, rng.permutation(twice), 1)
    for name, (o, i, bad) in cases.items():
        assert fastmesh._count_bad_vertices(start, o, i.astype(np.int32)) == bad, name


def test_out_of_range_indices_are_refused_not_read():
    V, F = examples.box_mesh((1.0, 1.0, 1.0))
    for bad_index in (-1, len(V), 2**40):
        bad = F.copy()
        bad[4, 1] = bad_index
        assert not fastmesh.closed_mesh_ok(bad, len(V))
        with path(False):
            want = message(mesh_mass_properties, V, bad)
        with path(True):
            assert message(mesh_mass_properties, V, bad) == want
        assert "out of range" in want
