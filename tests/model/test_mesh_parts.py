"""Closed parts of one mesh and which overlap: boxes placed by hand (closed-form geometry)."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from pem_physics.model.inertia import mesh_mass_properties
from pem_physics.model.mesh_parts import inside, mesh_parts, overlapping_parts, signed_volume

#: A unit cube's corners and its 12 outward triangles.
CORNERS = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float)
QUADS = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
TRIS = np.array([t for a, b, c, d in QUADS for t in ((a, b, c), (a, c, d))])


def boxes(*specs):
    """One mesh of boxes, each (lower corner (3,), sizes (3,)), with outward faces (flip=True: inward)."""
    V, F = [], []
    for k, spec in enumerate(specs):
        lo, size, *flip = spec
        V.append(np.asarray(lo, float) + CORNERS * np.asarray(size, float))
        F.append((TRIS[:, ::-1] if flip and flip[0] else TRIS) + 8 * k)
    return np.vstack(V), np.vstack(F)


def test_the_cube_is_closed_and_outward():
    V, F = boxes(((0, 0, 0), (1, 1, 1)))
    assert signed_volume(V, F) == pytest.approx(1.0) and mesh_mass_properties(V, F).mass == pytest.approx(1.0)
    assert inside([(0.5, 0.5, 0.5), (1.5, 0.5, 0.5), (0.99, 0.01, 0.5), (-0.01, 0.5, 0.5)], V, F).tolist() == [
        True, False, True, False]


@pytest.mark.parametrize("second, overlap", [
    (((0.5, 0, 0), (1, 1, 1)), True),              # half in: 1.5 m³ of solid, 2 m³ integrated
    (((2, 0, 0), (1, 1, 1)), False),               # apart
    (((1, 0, 0), (1, 1, 1)), False),               # touching face on face
    (((1, 1, 1), (1, 1, 1)), False),               # touching at a corner
    (((0.25, 0.25, 0.25), (0.5, 0.5, 0.5)), True),  # wholly inside: no surfaces cross
    (((0.25, 0.25, 0), (0.5, 0.5, 0.5)), True),    # inside, resting on the bottom face
    (((0.4, -1, 0.4), (0.2, 3, 0.2)), True),       # a bar through the cube: a cross, no vertex inside the other
    (((0, 0, 0), (1, 1, 1)), True),                # the same box twice (duplicated in place)
    (((0.25, 0.25, 0.25), (0.5, 0.5, 0.5), True), False),  # an inward box inside: a cavity, meant to subtract
])
def test_overlapping_parts(second, overlap):
    V, F = boxes(((0, 0, 0), (1, 1, 1)), second)
    assert [len(p) for p in mesh_parts(F, len(V))] == [12, 12]
    assert overlapping_parts(V, F) == ([(0, 1)] if overlap else [])


def test_one_part_and_three_parts():
    V, F = boxes(((0, 0, 0), (1, 1, 1)))
    assert overlapping_parts(V, F) == []
    V, F = boxes(((0, 0, 0), (1, 1, 1)), ((3, 0, 0), (1, 1, 1)), ((3.5, 0.5, 0.5), (1, 1, 1)))
    assert overlapping_parts(V, F) == [(1, 2)]


def test_overlap_of_a_mesh_turned_inside_out():
    """Every face flipped (the mass integrals flip it back as a whole): the overlap is still found."""
    V, F = boxes(((0, 0, 0), (1, 1, 1), True), ((0.5, 0, 0), (1, 1, 1), True))
    assert signed_volume(V, F) == pytest.approx(-2.0)
    assert overlapping_parts(V, F) == [(0, 1)]


@pytest.mark.parametrize("shift, overlap", [(0.0, False), (0.9, True)])
def test_linked_rings(shift, overlap):
    """Two tori (ring radius 1, tube 0.2) linked like a chain, each through the other's hole: their boxes overlap,
    their tubes do not (shift 0: 1 apart, the tubes' centre lines at least 1 apart); shifted by 0.9, b's tube
    runs through a's (centre lines 0.1 apart)."""
    a = trimesh.creation.torus(1.0, 0.2, major_sections=48, minor_sections=16)
    b = a.copy()
    b.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0]))
    b.apply_translation([1.0 + shift, 0.0, 0.0])
    V, F = np.vstack([a.vertices, b.vertices]), np.vstack([a.faces, b.faces + len(a.vertices)])
    assert overlapping_parts(V, F) == ([(0, 1)] if overlap else [])


def test_two_solids_glued_at_a_vertex_through_each_other_self_intersect():
    """One connected surface (the tetrahedra share the vertex at the origin), so no two parts to compare; the second
    tetrahedron's edges from the origin pierce the first one's slanted face x + y + z = 2 at (1.2, 0.4, 0.4) (closed
    form: s = 2 / 2.5 along (1.5, 0.5, 0.5)). Moved apart (sharing only the vertex, the second one mirrored) it does
    not; nor does a plain cube."""
    from pem_physics import examples
    from pem_physics.model.mesh_parts import self_intersects

    tet = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])   # outward for (0,0,0), (2,0,0), (0,2,0), (0,0,2)
    V1 = np.array([[0.0, 0, 0], [2, 0, 0], [0, 2, 0], [0, 0, 2]])

    def glued(V2):
        V = np.vstack([V1, V2])
        F2 = np.where(tet == 0, 0, tet + 3)                           # the second tetrahedron reuses vertex 0
        return V, np.vstack([tet, F2])

    assert self_intersects(*glued(np.array([[1.5, 0.5, 0.5], [0.5, 1.5, 0.5], [0.5, 0.5, 1.5]])))
    assert not self_intersects(*glued(-np.array([[1.5, 0.5, 0.5], [0.5, 1.5, 0.5], [0.5, 0.5, 1.5]])))
    assert not self_intersects(*examples.box_mesh((1.0, 2.0, 3.0)))
