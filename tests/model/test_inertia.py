"""Mass properties against closed forms, trimesh (an independent implementation) and invariants."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import trimesh
from hypothesis import given
from hypothesis import strategies as st

from pem_physics.errors import MeshError, ValidationError
from pem_physics.model.inertia import (
    Cuboid,
    Cylinder,
    Ellipsoid,
    Mesh,
    MeshWarning,
    PointMass,
    Rod,
    Sphere,
    check_physical,
    combine,
    mesh_mass_properties,
    principal_axes,
    pseudo_inverse,
)

from budget import property_settings


def box_mesh(a, b, c):
    """Closed box [0,a]×[0,b]×[0,c] with outward winding (from trimesh's unit box, rescaled)."""
    m = trimesh.creation.box(extents=(a, b, c))
    return m.vertices + np.array([a, b, c]) / 2, m.faces


def random_rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


# ---------------------------------------------------------------- exact closed forms

def test_box_exact():
    a, b, c, rho = 0.3, 0.7, 1.9, 1234.5
    V, F = box_mesh(a, b, c)
    mp = mesh_mass_properties(V, F, density=rho)
    M = rho * a * b * c
    assert mp.volume == pytest.approx(a * b * c, rel=1e-12)
    assert mp.mass == pytest.approx(M, rel=1e-12)
    np.testing.assert_allclose(mp.center_of_mass, [a / 2, b / 2, c / 2], rtol=1e-12)
    want = M / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    np.testing.assert_allclose(mp.inertia, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_tetrahedron_exact():
    # Unit right tetrahedron: V = 1/6, COM = 1/4, ∫x² = 1/60, ∫xy = 1/120 (direct integration).
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    F = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    mp = mesh_mass_properties(V, F, density=1.0)
    assert mp.volume == pytest.approx(1 / 6, rel=1e-14)
    np.testing.assert_allclose(mp.center_of_mass, [0.25] * 3, rtol=1e-14)
    xx, xy = 1 / 60, 1 / 120
    I_origin = np.array([[2 * xx, -xy, -xy], [-xy, 2 * xx, -xy], [-xy, -xy, 2 * xx]])
    np.testing.assert_allclose(mp.inertia_about([0, 0, 0]), I_origin, rtol=1e-12)


def test_analytic_shapes_against_meshes():
    """Each analytic formula against a fine mesh of the same solid (O(1/faces) convergence)."""
    rng = np.random.default_rng(1)
    R = random_rotation(rng)
    cases = [
        (Sphere(radius=0.4, density=7.0), trimesh.creation.icosphere(subdivisions=6, radius=0.4)),
        (Cylinder(radius=0.3, half_length=0.8, axis=(0, 0, 1), density=7.0),
         trimesh.creation.cylinder(radius=0.3, height=1.6, sections=1024)),
        (Ellipsoid(semi_axes=(0.5, 0.3, 0.2), density=7.0),
         trimesh.creation.icosphere(subdivisions=6).apply_scale((0.5, 0.3, 0.2))),
        (Cuboid(half_sides=(0.5, 0.3, 0.2), density=7.0), trimesh.creation.box(extents=(1.0, 0.6, 0.4))),
    ]
    for shape, m in cases:
        mesh = mesh_mass_properties(m.vertices, m.faces, density=7.0)
        mp = shape.mass_properties()
        tol = 1e-12 if isinstance(shape, Cuboid) else 2e-4
        assert mp.mass == pytest.approx(mesh.mass, rel=tol), type(shape)
        np.testing.assert_allclose(mp.inertia, mesh.inertia, rtol=tol, atol=tol * np.abs(mp.inertia).max())
        # Rotated shape == rotated tensor.
        rot = mesh_mass_properties(m.vertices @ R.T, m.faces, density=7.0)
        np.testing.assert_allclose(rot.inertia, R @ mesh.inertia @ R.T, atol=1e-12 * np.abs(mesh.inertia).max())


@pytest.mark.parametrize("kind", ["icosphere", "cylinder", "torus"])
def test_mesh_convergence_first_order(kind):
    """Error against the closed form shrinks at least like 1/faces as the mesh refines."""
    errors, faces = [], []
    for level in range(3):
        if kind == "icosphere":
            m = trimesh.creation.icosphere(subdivisions=2 + level, radius=1.0)
            exact_I = 0.4 * (4 / 3 * np.pi) * np.ones(3)
        elif kind == "cylinder":
            m = trimesh.creation.cylinder(radius=1.0, height=2.0, sections=16 * 4**level)
            M = np.pi * 2
            exact_I = np.array([M * (1 / 4 + 1 / 3)] * 2 + [M / 2])
        else:
            R, r = 1.0, 0.3
            m = trimesh.creation.torus(major_radius=R, minor_radius=r, major_sections=16 * 2**level,
                                       minor_sections=16 * 2**level)
            M = 2 * np.pi**2 * R * r * r
            exact_I = np.array([M * (4 * R * R + 5 * r * r) / 8] * 2 + [M * (4 * R * R + 3 * r * r) / 4])
        mp = mesh_mass_properties(m.vertices, m.faces, density=1.0)
        errors.append(np.abs(np.sort(np.diag(mp.inertia)) - np.sort(exact_I)).max() / exact_I.max())
        faces.append(len(m.faces))
    for k in range(2):
        # error·faces must not grow: first order (or better) in 1/faces
        assert errors[k + 1] * faces[k + 1] <= 1.2 * errors[k] * faces[k], (errors, faces)
    assert errors[-1] < 5e-3


def test_against_trimesh(rng):
    m = trimesh.creation.torus(major_radius=1.0, minor_radius=0.3)
    m.apply_transform(trimesh.transformations.random_rotation_matrix(rng.random(3)))
    m.apply_translation([3.0, -2.0, 5.0])
    m.density = 2700.0
    mp = mesh_mass_properties(m.vertices, m.faces, density=2700.0)
    assert mp.mass == pytest.approx(m.mass, rel=1e-10)
    np.testing.assert_allclose(mp.center_of_mass, m.center_mass, rtol=1e-10)
    np.testing.assert_allclose(mp.inertia, m.moment_inertia, rtol=1e-10, atol=1e-10 * np.abs(mp.inertia).max())


# ---------------------------------------------------------------- invariants (hypothesis)

finite = st.floats(-3, 3, allow_nan=False)


@property_settings(60)
@given(seed=st.integers(0, 2**32 - 1), shift=st.tuples(finite, finite, finite),
       scale=st.floats(0.05, 20))
def test_rigid_motion_invariance(seed, shift, scale):
    rng = np.random.default_rng(seed)
    m = trimesh.creation.capsule(radius=0.2 * scale, height=0.5 * scale, count=(8, 8))
    R = random_rotation(rng)
    a = mesh_mass_properties(m.vertices, m.faces, density=3.0)
    b = mesh_mass_properties(m.vertices @ R.T + np.asarray(shift), m.faces, density=3.0)
    assert b.mass == pytest.approx(a.mass, rel=1e-12)
    np.testing.assert_allclose(b.center_of_mass, R @ a.center_of_mass + shift, atol=1e-11 * (1 + scale))
    np.testing.assert_allclose(b.inertia, R @ a.inertia @ R.T, atol=1e-11 * np.abs(a.inertia).max())


@property_settings(60)
@given(seed=st.integers(0, 2**32 - 1))
def test_steiner_consistency(seed):
    """Tensor about any point from the mesh integrated there == parallel-axis shift of the COM tensor."""
    rng = np.random.default_rng(seed)
    m = trimesh.creation.box(extents=rng.uniform(0.1, 2, 3))
    p = rng.normal(size=3)
    mp = mesh_mass_properties(m.vertices, m.faces, density=5.0)
    # Independent: translate the mesh so p is the origin; inertia_about(origin) of the moved mesh.
    moved = mesh_mass_properties(m.vertices - p, m.faces, density=5.0)
    np.testing.assert_allclose(mp.inertia_about(p), moved.inertia_about(np.zeros(3)),
                               atol=1e-12 * np.abs(moved.inertia_about(np.zeros(3))).max())
    # Composition of two halves == the whole (combine uses Steiner about the joint COM).
    ext = m.extents
    half = trimesh.creation.box(extents=(ext[0] / 2, ext[1], ext[2]))
    left = mesh_mass_properties(half.vertices - [ext[0] / 4, 0, 0], half.faces, density=5.0)
    right = mesh_mass_properties(half.vertices + [ext[0] / 4, 0, 0], half.faces, density=5.0)
    whole = combine([left, right])
    np.testing.assert_allclose(whole.inertia, mp.inertia, atol=1e-12 * np.abs(mp.inertia).max())
    np.testing.assert_allclose(whole.center_of_mass, mp.center_of_mass, atol=1e-13)


@property_settings(50)
@given(st.lists(st.floats(1e-6, 10), min_size=3, max_size=3), st.integers(0, 2**32 - 1),
       st.integers(0, 2))
def test_pseudo_inverse(moments, seed, zeros):
    rng = np.random.default_rng(seed)
    lam = np.array(moments)
    lam[:zeros] = 0.0
    R = random_rotation(rng)
    I = R @ np.diag(lam) @ R.T
    P = pseudo_inverse(I)
    # Moore–Penrose conditions (independent characterisation of the pseudo-inverse).
    scale = lam.max()
    np.testing.assert_allclose(I @ P @ I, I, atol=1e-9 * scale)
    np.testing.assert_allclose(P @ I @ P, P, atol=1e-9 / lam[lam > 0].min())
    cond = scale / lam[lam > 0].min()
    np.testing.assert_allclose(I @ P, (I @ P).T, atol=1e-14 * cond)  # round-off grows with the condition number
    stacked = pseudo_inverse(np.stack([I, I]))
    np.testing.assert_allclose(stacked[1], P)


def test_principal_axes_right_handed(rng):
    for _ in range(20):
        R = random_rotation(rng)
        I = R @ np.diag(rng.uniform(0.1, 3, 3)) @ R.T
        lam, N = principal_axes(I)
        assert np.linalg.det(N) == pytest.approx(1.0)
        np.testing.assert_allclose(N @ np.diag(lam) @ N.T, I, atol=1e-12)
        assert np.all(np.diff(lam) >= 0)


def frame_with_axis(d):
    """Two unit vectors e1, e2 completing the unit vector d to a right-handed orthonormal frame."""
    e1 = np.cross(d, [1.0, 0, 0] if abs(d[0]) < 0.9 else [0, 1.0, 0])
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(d, e1)


def cylinder_by_quadrature(M, a, h, d):
    """∫ρ(r²δ − rr)dV over the solid cylinder (radius a, half-length h, axis d, centre 0): Gauss–Legendre in
    the radius and along the axis, the trapezoid rule around it. Exact to round-off, since the integrand
    is a polynomial of degree ≤ 3 in the radius and 2 along the axis, and of degree 2 in cos φ, sin φ."""
    e1, e2 = frame_with_axis(d)
    x, w = np.polynomial.legendre.leggauss(4)
    s, ws = a * (x + 1) / 2, w * a / 2            # radius in [0, a]
    z, wz = h * x, w * h                          # along the axis in [−h, h]
    phi = 2 * np.pi * np.arange(8) / 8
    rho = M / (np.pi * a * a * 2 * h)
    I = np.zeros((3, 3))
    for si, wsi in zip(s, ws):
        for zi, wzi in zip(z, wz):
            for p in phi:
                r = si * (np.cos(p) * e1 + np.sin(p) * e2) + zi * d
                I += rho * wsi * si * (2 * np.pi / 8) * wzi * (r @ r * np.eye(3) - np.outer(r, r))
    return I


@pytest.mark.parametrize("axis", [(1, 0, 0), (0.3, -0.5, 0.8)])
def test_cylinder_and_rod_tensors_match_theory(axis):
    """Theory §2: solid cylinder (radius a, HALF-length h, axis d) M(a²/4 + h²/3)(δ − dd) + M(a²/2)dd, not the
    manual's h²/48 (manual error 1); thin rod of half-length l M(l²/3)(δ − dd) — each against the closed
    form and against a second method (exact quadrature of the definition I = ∫ρ(r²δ − rr)dV)."""
    d = np.asarray(axis, float) / np.linalg.norm(axis)
    dd, eye = np.outer(d, d), np.eye(3)
    M, a, h = 4.0, 0.3, 0.8
    cyl = Cylinder(radius=a, half_length=h, axis=axis, mass=M).mass_properties()
    closed = M * (a * a / 4 + h * h / 3) * (eye - dd) + M * a * a / 2 * dd
    np.testing.assert_allclose(cyl.inertia, closed, rtol=0, atol=1e-14 * M * h * h)
    np.testing.assert_allclose(cyl.inertia, cylinder_by_quadrature(M, a, h, d), rtol=0, atol=1e-13 * M * h * h)
    assert cyl.mass == M and np.array_equal(cyl.center_of_mass, np.zeros(3))
    # the manual's formula is far off: a wrong h² coefficient cannot hide in the tolerance
    manual = M * (a * a / 4 + h * h / 48) * (eye - dd) + M * a * a / 2 * dd
    assert np.abs(cyl.inertia - manual).max() > 0.1 * M * h * h

    l = 0.5
    rod = Rod(half_length=l, direction=axis, mass=2.0).mass_properties().inertia
    np.testing.assert_allclose(rod, 2.0 * l * l / 3 * (eye - dd), rtol=0, atol=1e-15)
    s, w = np.polynomial.legendre.leggauss(3)     # exact for the s² integrand
    s, w = l * s, w * l
    by_quadrature = sum(2.0 / (2 * l) * wi * (si * si) * (eye - dd) for si, wi in zip(s, w))
    np.testing.assert_allclose(rod, by_quadrature, rtol=0, atol=1e-15)
    assert not PointMass(mass=3.0).mass_properties().inertia.any()


def test_combine_shifts_each_part_by_the_parallel_axis_theorem():
    """combine() moves each part's tensor to the joint centre of mass (Steiner, theory §2). Oracles: two point
    masses (I = μ r²(δ − r̂r̂), μ = m₁m₂/(m₁+m₂)), and two cylinders of half-length h stacked end to end, which
    are one cylinder of half-length 2h (PEM's shipped magnetic pendulum stacks two with h = 0.25, centres 0.5 apart)."""
    m1, m2 = 2.0, 3.0
    r1, r2 = np.array([0.1, -0.2, 0.3]), np.array([-0.4, 0.5, 0.1])
    pts = combine([PointMass(mass=m1, center=r1).mass_properties(), PointMass(mass=m2, center=r2).mass_properties()])
    r = r1 - r2
    np.testing.assert_allclose(pts.center_of_mass, (m1 * r1 + m2 * r2) / (m1 + m2), rtol=1e-15)
    np.testing.assert_allclose(pts.inertia, m1 * m2 / (m1 + m2) * (r @ r * np.eye(3) - np.outer(r, r)), rtol=1e-14)
    d = np.array([0.0, 0.6, 0.8])
    cyl = Cylinder(radius=1.0, half_length=0.25, axis=d, mass=1.0).mass_properties()
    two = combine([cyl, cyl.translated(0.5 * d)])
    one = Cylinder(radius=1.0, half_length=0.5, axis=d, mass=2.0, center=0.25 * d).mass_properties()
    assert two.mass == 2.0
    np.testing.assert_allclose(two.center_of_mass, one.center_of_mass, atol=1e-16)
    np.testing.assert_allclose(two.inertia, one.inertia, rtol=0, atol=1e-14)


# ---------------------------------------------------------------- bad meshes

def test_open_mesh_names_edge():
    m = trimesh.creation.box()
    with pytest.raises(MeshError, match=r"not closed: edge \(\d+, \d+\)") as err:
        mesh_mass_properties(m.vertices, m.faces[:-1], density=1.0, path="bodies[0].shapes[1]")
    assert err.value.path.startswith("bodies[0].shapes[1].faces[")


def test_inconsistent_orientation():
    m = trimesh.creation.box()
    F = m.faces.copy()
    F[3] = F[3, ::-1]
    with pytest.raises(MeshError, match="not consistently oriented"):
        mesh_mass_properties(m.vertices, F, density=1.0)


def test_non_manifold():
    a = trimesh.creation.box()
    b = trimesh.creation.box()
    b.apply_translation([1.0, 0, 0])  # shares a face: its 4 edges get 3+ faces when merged
    V = np.vstack([a.vertices, b.vertices])
    F = np.vstack([a.faces, b.faces + len(a.vertices)])
    merged = trimesh.Trimesh(V, F, process=True)
    with pytest.raises(MeshError, match="not manifold|not consistently"):
        mesh_mass_properties(merged.vertices, merged.faces, density=1.0)


def test_zero_volume_and_bad_indices():
    flat = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.2, 0.2, 0]], float)  # a squashed tetrahedron
    F = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    with pytest.raises(MeshError, match="no volume"):
        mesh_mass_properties(flat, F, density=1.0)
    m = trimesh.creation.box()
    F = m.faces.copy()
    F[5, 1] = 99
    with pytest.raises(MeshError, match=r"faces\[5\].*out of range"):
        mesh_mass_properties(m.vertices, F)
    with pytest.raises(MeshError, match="vertices"):
        mesh_mass_properties(np.zeros((3, 2)), F)


def test_inward_normals_flipped_with_warning():
    V, F = box_mesh(1, 2, 3)
    with pytest.warns(MeshWarning, match="inwards"):
        mp = mesh_mass_properties(V, F[:, ::-1], density=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        good = mesh_mass_properties(V, F, density=1.0)
    assert mp.mass == pytest.approx(good.mass, rel=1e-14)
    np.testing.assert_allclose(mp.inertia, good.inertia)


def test_shape_validation_messages():
    with pytest.raises(ValidationError, match="radius: expected a positive number"):
        Sphere(radius=-1, mass=1)
    with pytest.raises(ValidationError, match="exactly one of mass or density"):
        Sphere(radius=1)
    with pytest.raises(ValidationError, match="axes\\[1\\]: must not be parallel"):
        Cuboid(half_sides=(1, 1, 1), axes=((1, 0, 0), (2, 0, 0)), mass=1)
    with pytest.raises(ValidationError, match="half_sides"):
        Cuboid(half_sides=(1, 0, 1), mass=1)
    with pytest.raises(ValidationError, match="no volume"):
        Rod(half_length=1, density=3)
    mesh = Mesh(*box_mesh(1, 1, 1), mass=2.0)
    assert mesh.density == pytest.approx(2.0)


def test_check_physical_accepts_bodies_and_refuses_what_no_body_has():
    """Closed forms: a box's, a rod's and a point mass's tensors pass; a negative moment and a triangle-inequality
    breach (principal moments 2 ± 1.9 and 2 of a tensor with harmless-looking diagonal) are refused at the path."""
    for I in (Cuboid(half_sides=(0.1, 0.2, 0.3), density=1.0).mass_properties().inertia,
              np.diag([0.0, 1.0, 1.0]), np.zeros((3, 3)), np.diag([1.0, 1.0, 2.0])):
        check_physical(I, "ok")
    with pytest.raises(ValidationError, match=r"^x: .*negative moment"):
        check_physical(np.diag([-1.0, 1.0, 1.0]), "x")
    with pytest.raises(ValidationError, match=r"^y: .*I1 \+ I2 ≥ I3 \(2.1 < 3.9\)"):
        check_physical([[2.0, 1.9, 0.0], [1.9, 2.0, 0.0], [0.0, 0.0, 2.0]], "y")


def l_prism():
    """An L-shaped prism (the L (0,0) (2,0) (2,1) (1,1) (1,3) (0,3) extruded over z in [0, 1]): its vertex
    centroid (2/3, 4/3, 1/2) is not its centre of mass (3/4, 5/4, 1/2)."""
    P = [(0, 0), (2, 0), (2, 1), (1, 1), (1, 3), (0, 3)]      # counter-clockwise seen from +z
    V = np.array([(x, y, 0.0) for x, y in P] + [(x, y, 1.0) for x, y in P])
    F = []
    for k in range(1, 5):                                     # the L is star-shaped from its corner P0
        F += [(0, k + 1, k), (6, 6 + k, 6 + k + 1)]           # bottom (−z), top (+z)
    for i in range(6):                                        # sides, outward
        j = (i + 1) % 6
        F += [(i, j, 6 + j), (i, 6 + j, 6 + i)]
    return V, np.array(F)


def test_a_lopsided_mesh_against_its_two_boxes():
    """The L prism is two boxes, A = [0,2]×[0,1]×[0,1] and B = [0,1]×[1,3]×[0,1]: its mass, centre of mass and
    inertia about it follow from theirs by the parallel-axis theorem, written out here. The mesh's integrals are
    taken about its vertex centroid, which is not the centre of mass: the shift between them must have its sign."""
    V, F = l_prism()
    mp = mesh_mass_properties(V, F, density=3.0)

    def box(lo, hi):
        lo, hi = np.array(lo, float), np.array(hi, float)
        s = hi - lo
        m = 3.0 * np.prod(s)
        return m, (lo + hi) / 2, m / 12 * np.diag([s[1] ** 2 + s[2] ** 2, s[0] ** 2 + s[2] ** 2, s[0] ** 2 + s[1] ** 2])

    parts = [box((0, 0, 0), (2, 1, 1)), box((0, 1, 0), (1, 3, 1))]
    M = sum(m for m, _, _ in parts)
    c = sum(m * x for m, x, _ in parts) / M
    I = sum(Ic + m * ((x - c) @ (x - c) * np.eye(3) - np.outer(x - c, x - c)) for m, x, Ic in parts)
    assert not np.allclose(V.mean(axis=0), c)
    np.testing.assert_allclose(mp.mass, M, rtol=1e-14)
    np.testing.assert_allclose(mp.center_of_mass, c, rtol=0, atol=1e-14)
    np.testing.assert_allclose(mp.inertia, I, rtol=0, atol=1e-13 * np.abs(I).max())
