"""Blender's values ↔ the core's SI doubles: lengths, exact values behind single-precision properties, poses.

Frames. Blender world coordinates are in Blender units (BU); the core's lab frame is the same
axes in metres: x_lab = unit · x_world, ``unit`` = ``scene.unit_settings.scale_length``; velocities
are stored like lengths (BU/s: Blender shows them × scale_length, in m/s), v_lab = unit · v. A body's
frame has the object's world rotation R (scale removed) as axes, so the core orientation is
U = Rᵀ (rows = body axes in lab), and its origin at the reference point P: the pivot for a
pendulum, the object origin otherwise. Body coordinates of a local point v:
x_B = unit · Rᵀ (M v + t − P) with M, t the object's world 3×3 and translation.
"""

from __future__ import annotations

import numpy as np

from ..pem_physics.model import (
    MU0,
)
from .messages import AddonError


def unit_scale(scene) -> float:
    """Metres per Blender unit."""
    s = scene.unit_settings.scale_length
    return float(s) if s > 0 else 1.0


def matrix(m) -> np.ndarray:
    """A mathutils Matrix as a float64 numpy array."""
    return np.array([list(row) for row in m], dtype=float)


def affine_inverse(M: np.ndarray) -> np.ndarray:
    """The inverse of affine matrices M (…, 4, 4) (last row 0 0 0 1): the 3×3 part by its adjugate over its
    determinant, the translation −A⁻¹t. Not np.linalg.inv: LAPACK's threaded solve for a 4×4 can take
    milliseconds where its threads must wake (numpy 1.26's OpenBLAS on a busy machine), 100× this whole
    function. Raises numpy's LinAlgError for a singular matrix (a zero scale), as np.linalg.inv does."""
    M = np.asarray(M, dtype=float)
    A, t = M[..., :3, :3], M[..., :3, 3]
    C = np.cross(A[..., [1, 2, 0], :], A[..., [2, 0, 1], :])   # row j: a_(j+1) × a_(j+2), column j of det·A⁻¹
    det = np.einsum("...i,...i->...", A[..., 0, :], C[..., 0, :])
    if not np.all(np.isfinite(det) & (det != 0.0)):
        raise np.linalg.LinAlgError("Singular matrix")
    out = np.zeros_like(M)
    out[..., :3, :3] = np.swapaxes(C, -1, -2) / det[..., None, None]
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", out[..., :3, :3], t)
    out[..., 3, 3] = 1.0
    return out


# ------------------------------------------------------------------------------------------ double precision
# Blender stores float properties and object transforms in single precision. Import keeps the exact
# (double) value beside each one it sets — an ID property ``pem_exact_<name>`` — and every read for the
# core takes it as long as the property still holds that value rounded to single precision; a value the
# user edits is used as typed (:func:`typed`: 9.81, not 9.8100004196167). A bake of an imported file thus
# runs the file's own numbers, and a typed one the typed numbers.

_EXACT = "pem_exact_"

#: Declared defaults that are no short decimal (μ₀ = 4π·10⁻⁷ T·m/A): a property still holding its default,
#: rounded to single precision, reaches the core as this double.
EXACT_DEFAULTS = {"mu0": MU0}


def _shortest(x: float) -> float:
    """The shortest decimal that rounds to float32(x) (what was typed), as a double."""
    return float(np.format_float_scientific(np.float32(x), unique=True))


def typed(value):
    """A single-precision value (float or sequence) as the user typed it: each component the shortest decimal
    that rounds to the stored float32 (float32(9.81) = 9.8100004196167 → 9.81; 0.001 → 0.001). Float, or
    ndarray for sequences."""
    if np.ndim(value) == 0:
        return _shortest(value)
    return np.array([_shortest(x) for x in np.ravel(value)], dtype=float).reshape(np.shape(value))


def set_exact(owner, name: str, value) -> None:
    """``owner.<name> = value``, keeping the double-precision value beside it."""
    setattr(owner, name, value)
    owner[_EXACT + name] = [float(v) for v in value] if np.ndim(value) else float(value)


def exact(owner, name: str):
    """``owner.<name>`` at double precision (float, or ndarray for vectors), for the core: the kept exact value
    while the single-precision property still equals it rounded (an imported value), else the declared
    default of :data:`EXACT_DEFAULTS` while it still holds that, else the value as typed (:func:`typed`)."""
    value = getattr(owner, name)
    vec = np.ndim(value) > 0 or not isinstance(value, (int, float))
    current = np.array(value, dtype=float) if vec else float(value)
    kept = owner.get(_EXACT + name, EXACT_DEFAULTS.get(name))
    if kept is not None:
        kept = np.array(kept, dtype=float) if vec else float(kept)
        if np.shape(kept) == np.shape(current) and np.array_equal(np.float32(kept), np.float32(current)):
            return kept
    return typed(current)


def set_exact_world(obj, M: np.ndarray) -> None:
    """``obj.matrix_world = M`` (BU), keeping the double-precision matrix beside it."""
    obj.matrix_world = to_matrix(M)
    obj[_EXACT + "world"] = [float(v) for v in np.ravel(M)]


def world(obj) -> np.ndarray:
    """obj's world matrix (4,4, BU): the kept exact one while the object has not moved since (its transform
    equal to that matrix to single precision), else Blender's."""
    M = matrix(obj.matrix_world)
    kept = obj.get(_EXACT + "world")
    if kept is not None:
        K = np.array(kept, dtype=float).reshape(4, 4)
        if np.all(np.abs(K - M) <= 4 * np.finfo(np.float32).eps * np.maximum(1.0, np.abs(K))):
            return K
    return M


#: The smallest scale (the length of a world matrix's axis) the rotation of a body is read from.
MIN_SCALE = 1e-12


def rotation_part(M: np.ndarray, name: str) -> np.ndarray:
    """The rotation R of a world matrix whose 3×3 is R·S (S a diagonal positive scale)."""
    A = M[:3, :3]
    norms = np.linalg.norm(A, axis=0)
    if not np.all(norms > 0):
        raise AddonError(f"Object '{name}' has zero scale on an axis: give it a scale other than 0")
    if not np.all(norms > MIN_SCALE):
        raise AddonError(f"Object '{name}' has a scale of {norms.min():.3g} on an axis, too small to simulate "
                         f"({MIN_SCALE:g} or less): give it a larger scale")
    R = A / norms
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-5 or np.linalg.det(R) < 0:
        raise AddonError(f"Object '{name}' is sheared or mirrored (negative scale, or a non-uniformly scaled "
                         "parent); apply the scale first")
    # Re-orthonormalise the float32 matrix so the core starts from an exact rotation.
    u, _, vt = np.linalg.svd(R)
    return u @ vt


def initial_basis(obj) -> np.ndarray:
    """The object's basis matrix as it is now: :func:`pem_addon.pendulum.bake.prepare` reads the scene with every body
    in its start pose (the scene's start frame, baked channels removed)."""
    return matrix(obj.matrix_basis)


def parent_world(obj) -> np.ndarray:
    """P_w with world = P_w · basis (parent world × parent inverse, or identity)."""
    return matrix(obj.matrix_world) @ affine_inverse(matrix(obj.matrix_basis))


def initial_world(obj) -> np.ndarray:
    """World matrix (4,4, BU) of obj as the core reads it: exact after an import (:func:`world`)."""
    return world(obj)


def to_matrix(M: np.ndarray):
    import mathutils

    return mathutils.Matrix([list(map(float, row)) for row in M])
