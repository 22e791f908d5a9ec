"""Rotation helpers: orientation matrices, quaternions, axis rotations.

Conventions (theory §1): an orientation is a 3×3 matrix ``U`` whose *rows* are
the body axes ``u_1, u_2, u_3`` in lab components, so ``U.T @ v_body`` is the
lab vector and ``U @ v_lab`` the body components. Quaternions are ``(w, x, y, z)``
and rotate body → lab, i.e. ``quat_to_matrix(q) == U.T``.
All functions accept leading batch axes (``...``).
"""

from __future__ import annotations

import numpy as np


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrix (..., 3, 3) of unit quaternions q (..., 4) (w, x, y, z), body → lab."""
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    R = np.empty(q.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - z * w)
    R[..., 0, 2] = 2 * (x * z + y * w)
    R[..., 1, 0] = 2 * (x * y + z * w)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - x * w)
    R[..., 2, 0] = 2 * (x * z - y * w)
    R[..., 2, 1] = 2 * (y * z + x * w)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., 4) (w ≥ 0 where possible) of rotation matrices R (..., 3, 3).

    Shepperd's method: picks the largest of w², x², y², z² to avoid cancellation.
    """
    R = np.asarray(R, dtype=float)
    m00, m11, m22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    tr = m00 + m11 + m22
    cand = np.stack([tr, m00, m11, m22], axis=-1)
    k = np.argmax(cand, axis=-1)
    q = np.empty(R.shape[:-2] + (4,))
    # Four formulas, each well conditioned when its diagonal term is the largest.
    s0 = np.sqrt(np.maximum(1 + tr, 1e-300)) * 2
    q0 = np.stack([0.25 * s0, (R[..., 2, 1] - R[..., 1, 2]) / s0,
                   (R[..., 0, 2] - R[..., 2, 0]) / s0, (R[..., 1, 0] - R[..., 0, 1]) / s0], -1)
    s1 = np.sqrt(np.maximum(1 + m00 - m11 - m22, 1e-300)) * 2
    q1 = np.stack([(R[..., 2, 1] - R[..., 1, 2]) / s1, 0.25 * s1,
                   (R[..., 0, 1] + R[..., 1, 0]) / s1, (R[..., 0, 2] + R[..., 2, 0]) / s1], -1)
    s2 = np.sqrt(np.maximum(1 + m11 - m00 - m22, 1e-300)) * 2
    q2 = np.stack([(R[..., 0, 2] - R[..., 2, 0]) / s2, (R[..., 0, 1] + R[..., 1, 0]) / s2,
                   0.25 * s2, (R[..., 1, 2] + R[..., 2, 1]) / s2], -1)
    s3 = np.sqrt(np.maximum(1 + m22 - m00 - m11, 1e-300)) * 2
    q3 = np.stack([(R[..., 1, 0] - R[..., 0, 1]) / s3, (R[..., 0, 2] + R[..., 2, 0]) / s3,
                   (R[..., 1, 2] + R[..., 2, 1]) / s3, 0.25 * s3], -1)
    q = np.choose(k[..., None], [q0, q1, q2, q3])
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0, -q, q)


def orientation_to_quat(U: np.ndarray) -> np.ndarray:
    """Quaternion (..., 4) body → lab of orientation matrices U (..., 3, 3) (rows = body axes)."""
    return matrix_to_quat(np.swapaxes(U, -1, -2))


def quat_to_orientation(q: np.ndarray) -> np.ndarray:
    """Orientation matrix U (rows = body axes in lab) of body → lab quaternions q (..., 4)."""
    return np.swapaxes(quat_to_matrix(q), -1, -2)


def continuous_signs(q: np.ndarray, axis: int = 0) -> np.ndarray:
    """Flip quaternion signs along ``axis`` so that consecutive ones have q[k]·q[k−1] ≥ 0.

    q and −q are the same rotation; interpolating between keys of opposite sign
    goes the long way round, which is what Blender would do.
    """
    q = np.moveaxis(np.array(q, dtype=float), axis, 0)
    if len(q) > 1:
        dots = np.sum(q[1:] * q[:-1], axis=-1)
        flips = np.cumsum(dots < 0, axis=0) % 2
        q[1:] = np.where(flips[..., None] == 1, -q[1:], q[1:])
    return np.moveaxis(q, 0, axis)


def axis_angle_matrix(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Active rotation matrix (..., 3, 3) by ``angle`` (rad) about unit ``axis`` (..., 3)."""
    a = np.asarray(axis, dtype=float)
    th = np.asarray(angle, dtype=float)[..., None, None]
    K = np.zeros(a.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2] = -a[..., 2], a[..., 1]
    K[..., 1, 0], K[..., 1, 2] = a[..., 2], -a[..., 0]
    K[..., 2, 0], K[..., 2, 1] = -a[..., 1], a[..., 0]
    eye = np.broadcast_to(np.eye(3), K.shape)
    return eye + np.sin(th) * K + (1 - np.cos(th)) * (K @ K)


def rotate_rows_about(U: np.ndarray, axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotate every row of U (..., 3, 3) about the lab unit ``axis`` (..., 3) by ``angle`` (...)."""
    a = np.asarray(axis, dtype=float)[..., None, :]
    c = np.cos(angle)[..., None, None]
    s = np.sin(angle)[..., None, None]
    av = np.sum(a * U, axis=-1, keepdims=True)
    return U * c + cross(a, U) * s + a * av * (1 - c)


def orthonormality_error(U: np.ndarray) -> np.ndarray:
    """Frobenius norm ‖U Uᵀ − I‖ (...) of orientation matrices U (..., 3, 3)."""
    G = U @ np.swapaxes(U, -1, -2)
    return np.linalg.norm(G - np.eye(3), axis=(-2, -1))


def pem_correct(U: np.ndarray) -> np.ndarray:
    """PEM's approximate re-orthonormalisation of a frame (``Frame::correct2``).

    First-order corrections of length and mutual angle; kept exactly as PEM
    does it so that ``pem-euler``/``pem-rk4`` reproduce PEM's records.
    """
    u = 2 * U / (1 + np.sum(U * U, axis=-1, keepdims=True))
    u1, u2, u3 = u[..., 0, :], u[..., 1, :], u[..., 2, :]
    d12 = np.sum(u1 * u2, axis=-1)[..., None]
    d23 = np.sum(u2 * u3, axis=-1)[..., None]
    d31 = np.sum(u3 * u1, axis=-1)[..., None]
    out = np.empty_like(u)
    out[..., 0, :] = (u1 - d12 * u2) / (1 - 0.5 * d12)
    out[..., 1, :] = (u2 - d23 * u3) / (1 - 0.5 * d23)
    out[..., 2, :] = (u3 - d31 * u1) / (1 - 0.5 * d31)
    return out


def orthonormalize(U: np.ndarray) -> np.ndarray:
    """Nearest proper rotation (polar decomposition) of each U (..., 3, 3)."""
    u, _, vt = np.linalg.svd(U)
    R = u @ vt
    det = np.linalg.det(R)
    u[..., :, 2] *= np.sign(det)[..., None]
    return u @ vt


def euler_zyx(U: np.ndarray) -> np.ndarray:
    """Intrinsic Z-Y'-X'' (yaw, pitch, roll) angles (..., 3) in rad of body → lab rotation Uᵀ."""
    R = np.swapaxes(U, -1, -2)
    yaw = np.arctan2(R[..., 1, 0], R[..., 0, 0])
    pitch = np.arcsin(np.clip(-R[..., 2, 0], -1.0, 1.0))
    roll = np.arctan2(R[..., 2, 1], R[..., 2, 2])
    return np.stack([yaw, pitch, roll], axis=-1)


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a × b over the last axis, with broadcasting (np.cross is several times slower on small arrays)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out
