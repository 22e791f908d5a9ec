"""From a trajectory to keyframe values: the Blender-free half of baking.

A moving body turns about its pivot P. If an object's world matrix was M₀
when the simulation started, its world matrix at time t is

    M(t) = T(P) · A(t) · T(−P) · M₀,   A(t) = U(t)ᵀ U(0)

(A maps the body as it was at t = 0 to its pose at t). Blender keys the
object's *basis* matrix, world = P_w · basis with P_w = parent world matrix ·
matrix_parent_inverse, so basis(t) = P_w⁻¹ · M(t); it is split into location,
rotation quaternion and (constant) scale here. The add-on only reads matrices
from Blender and writes the arrays back as keys.

Matrices are 4×4 numpy arrays in Blender units; ``unit`` is metres per Blender
unit (``scene.unit_settings.scale_length``).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ValidationError
from ..model.rotations import continuous_signs, matrix_to_quat


def world_matrices(U: np.ndarray, pivot_m: np.ndarray, M0: np.ndarray, unit: float = 1.0) -> np.ndarray:
    """World matrices (N,4,4) of one body from its orientations U (N,3,3) (U[0] = pose of M0).

    pivot_m: (3,) pivot in metres (the core's lab frame = Blender world × unit), or (N,3) the moving
    centre of rotation of a translating body (``Trajectory.position[:, b]``); then
    M(t) = T(P(t)) · A(t) · T(−P(0)) · M₀.
    """
    U = np.asarray(U, dtype=float)
    A = np.swapaxes(U, -1, -2) @ U[0]
    P = np.asarray(pivot_m, dtype=float) / unit
    P0 = P if P.ndim == 1 else P[0]
    out = np.zeros(U.shape[:-2] + (4, 4))
    out[..., :3, :3] = A
    out[..., :3, 3] = P - A @ P0
    out[..., 3, 3] = 1.0
    return out @ np.asarray(M0, dtype=float)


def decompose(basis: np.ndarray, *, rtol: float = 1e-6, name: str = "object"):
    """Location (N,3), quaternion (N,4, w first, sign-continuous) and scale (3,) of rigid basis matrices.

    Raises ValidationError when the matrices are not rotation × constant positive
    scale (e.g. a parent with non-uniform scale shears a turning child).
    """
    basis = np.asarray(basis, dtype=float)
    M3 = basis[..., :3, :3]
    scale = np.linalg.norm(M3, axis=-2)  # column norms
    s0 = scale[0]
    if not np.all(s0 > 0):
        raise ValidationError(name, "has zero scale on an axis; it cannot be keyed as a rotation")
    if np.max(np.abs(scale - s0)) > rtol * np.max(s0):
        raise ValidationError(name, "its scale would change while it turns (is a parent scaled non-uniformly?); "
                                    "apply the parent's scale or unparent the object")
    R = M3 / s0
    err = np.max(np.abs(R @ np.swapaxes(R, -1, -2) - np.eye(3)))
    if err > max(rtol, 1e-9) or np.any(np.linalg.det(R) < 0):
        raise ValidationError(name, "its transform is sheared or mirrored (non-uniform parent scale or negative "
                                    "scale); it cannot be keyed as a rotation")
    q = continuous_signs(matrix_to_quat(R), axis=0)
    return basis[..., :3, 3].copy(), q, s0


def rotation_angles(q: np.ndarray) -> np.ndarray:
    """Angles (N−1,) in rad turned between consecutive unit quaternions q (N,4)."""
    d = np.abs(np.sum(q[1:] * q[:-1], axis=-1))
    return 2.0 * np.arccos(np.clip(d, -1.0, 1.0))


def key_stride(q_fine: np.ndarray, per_frame: int, max_angle: float = math.radians(45.0)) -> int:
    """Samples to skip between keys so that no key-to-key turn exceeds max_angle.

    q_fine: quaternions (N,4) sampled ``per_frame`` times per frame (a power of two).
    Returns a stride dividing per_frame: per_frame (one key a frame) when the body
    turns less than max_angle per frame, smaller (sub-frame keys) when it is faster.
    """
    stride = per_frame
    while stride > 1:
        if rotation_angles(q_fine[::stride]).max(initial=0.0) <= max_angle:
            return stride
        stride //= 2
    return 1
