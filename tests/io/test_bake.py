"""The Blender-free half of baking: world matrices about a pivot, decomposition, sub-frame keys."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pem_physics.errors import ValidationError
from pem_physics.io.bake import decompose, key_stride, rotation_angles, world_matrices
from pem_physics.model.rotations import axis_angle_matrix, quat_to_matrix

from budget import property_settings


def rigid(R, t, s=(1, 1, 1)):
    M = np.eye(4)
    M[:3, :3] = R @ np.diag(s)
    M[:3, 3] = t
    return M


def random_R(rng):
    v = rng.normal(size=3)
    return axis_angle_matrix(v / np.linalg.norm(v), rng.uniform(0, np.pi))


@property_settings(40)
@given(st.integers(0, 10_000), st.booleans(), st.floats(0.01, 10.0))
def test_points_follow_the_rotation_about_the_pivot(seed, parented, unit):
    rng = np.random.default_rng(seed)
    N = 7
    U = np.stack([random_R(rng).T for _ in range(N)])  # orientations (rows = body axes)
    M0 = rigid(random_R(rng), rng.normal(size=3), s=rng.uniform(0.5, 2.0, size=3))
    Pw = rigid(random_R(rng), rng.normal(size=3), s=(1.7,) * 3) if parented else np.eye(4)
    pivot_m = rng.normal(size=3)
    basis = np.linalg.solve(Pw, world_matrices(U, pivot_m, M0, unit))
    loc, q, scale = decompose(basis)
    # recompose as Blender does: world = Pw · T(loc) · R(q) · S(scale)
    world = np.array([Pw @ rigid(quat_to_matrix(q[k]), loc[k], scale) for k in range(N)])
    X = np.append(rng.normal(size=3), 1.0)  # a point of the object, local coordinates
    x0 = (M0 @ X)[:3] * unit  # metres, at the start
    P = pivot_m
    for k in range(N):
        expected = P + U[k].T @ U[0] @ (x0 - P)  # the core's rigid rotation about the pivot
        np.testing.assert_allclose((world[k] @ X)[:3] * unit, expected, atol=1e-9 * (1 + np.abs(expected).max()))
    assert np.all(np.sum(q[1:] * q[:-1], axis=-1) >= 0)


def test_non_uniform_parent_scale_is_refused():
    U = np.stack([axis_angle_matrix(np.array([0, 0, 1.0]), a).T for a in (0.0, 0.5)])
    Pw = rigid(np.eye(3), np.zeros(3), s=(1, 2, 1))
    basis = np.linalg.solve(Pw, world_matrices(U, np.zeros(3), np.eye(4)))
    with pytest.raises(ValidationError, match="Cube: .*scale"):
        decompose(basis, name="Cube")


@pytest.mark.parametrize("deg_per_frame,expected", [(10, 8), (44, 8), (60, 4), (100, 2), (170, 2), (200, 1)])
def test_key_stride_keeps_turns_under_45_degrees(deg_per_frame, expected):
    per_frame = 8
    n = 5 * per_frame + 1
    angles = np.radians(deg_per_frame) * np.arange(n) / per_frame
    q = np.stack([np.cos(angles / 2), 0 * angles, 0 * angles, np.sin(angles / 2)], axis=-1)
    stride = key_stride(q, per_frame)
    assert stride == expected
    if deg_per_frame * stride / per_frame <= 45:
        assert rotation_angles(q[::stride]).max() <= math.radians(45) + 1e-12
