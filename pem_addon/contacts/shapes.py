"""Contact spheres and rims on a body: the core's shapes (body coordinates, m) from the object's items, and fits
to its mesh (a bounding sphere, a rim, spheres in the corners of its box)."""

from __future__ import annotations

import math

import numpy as np

from ...pem_physics.model.scene import ContactRim, ContactSphere
from .. import meshes, units
from ..messages import AddonError
from .walls import local_box

#: Relative spread of the scale (or of a sphere wall's dimensions) still taken as uniform.
UNIFORM_RTOL = 1e-4


def _uniform_scale(obj, M: np.ndarray, what: str) -> float:
    s = np.linalg.norm(M[:3, :3], axis=0)
    if np.ptp(s) > UNIFORM_RTOL * s.max():
        raise AddonError(f"Object '{obj.name}' {what}: the object's scale {tuple(np.round(s, 6))} is not uniform, "
                         "so a sphere would become an ellipsoid; apply the scale (Ctrl A ▸ Scale) first")
    return float(s.mean())


def body_contacts(obj, M: np.ndarray, S: np.ndarray, offset: np.ndarray, unit: float) -> tuple:
    """ContactSphere or ContactRim (body coordinates, m) of each of obj's contacts.

    M: the object's world matrix (4,4, BU); S: object coordinates → object frame (3,3, m per object unit,
    :func:`meshes.object_frame_scale`); offset: the object origin in body coordinates (3,) m.
    """
    p = obj.pem
    if not p.contacts:
        return ()
    if p.role == "FREE" and not p.translate:
        raise AddonError(f"Object '{obj.name}' has contact spheres, but it is a free body with Translate off: a body "
                         "that only turns about its fixed centre of mass takes no part in contacts. Turn on "
                         "Translate (Physics ▸ Magnetic Pendulum), or remove the contact spheres")
    if p.role not in ("PENDULUM", "FIXED", "FREE"):
        role = {"DRIVEN": "Driven magnet"}.get(p.role, p.role)
        raise AddonError(f"Object '{obj.name}' has contact spheres, but only pendulums, fixed bodies and translating "
                         f"free bodies take part in contacts (its role is {role}): remove them or change the role")
    out = []
    for k, c in enumerate(p.contacts):
        r = units.exact(c, "radius")
        label = f"contact {'rim' if c.kind == 'RIM' else 'sphere'} #{k}"
        if not r > 0:
            raise AddonError(f"Object '{obj.name}' {label}: radius must be > 0 (got {r:g})")
        s = _uniform_scale(obj, M, label)
        if c.kind == "RIM":
            _check_rim_on_body(obj, k, units.exact(c, "center"), units.exact(c, "axis"), r)
            a = S @ units.exact(c, "axis")
            out.append(ContactRim(S @ units.exact(c, "center") + offset, a / np.linalg.norm(a), unit * s * r))
        else:
            out.append(ContactSphere(S @ units.exact(c, "center") + offset, unit * s * r))
    return tuple(out)


#: A rim may reach out of the object's bounding box by this fraction of the box's largest dimension.
RIM_REACH_RTOL = 0.01


def _check_rim_on_body(obj, k: int, center: np.ndarray, axis: np.ndarray, r: float) -> None:
    """AddonError unless rim k (object coordinates) has an axis and lies on the object: its circle inside the
    object's bounding box (within RIM_REACH_RTOL of its size) — a rim off the body would hold it up on nothing."""
    if not np.linalg.norm(axis) > 0:
        raise AddonError(f"Object '{obj.name}' contact rim #{k}: its axis is zero; give the rim's normal")
    a = axis / np.linalg.norm(axis)
    reach = r * np.sqrt(np.clip(1.0 - a * a, 0.0, 1.0))     # the circle's half-extent along each object axis
    c, h = local_box(obj)
    tol = RIM_REACH_RTOL * 2 * float(h.max())
    out = np.maximum(np.abs(center - c) + reach - h, 0.0)
    if obj.type in ("MESH", "CURVE", "SURFACE", "FONT", "META") and np.any(out > tol):
        raise AddonError(f"Object '{obj.name}' contact rim #{k} (radius {r:g}) reaches {float(out.max()):.3g} beyond "
                         "the object's mesh: a rim off the body would hold it up on nothing; Fit Contact fits it "
                         "to the mesh's edge")


def _vertices(obj, context) -> np.ndarray:
    if obj.type == "MESH":
        V, _ = meshes.body_triangles(obj, context.evaluated_depsgraph_get())
    else:
        V = np.array([list(v) for v in obj.bound_box], dtype=float)
    if not len(V):
        raise AddonError(f"Object '{obj.name}' has no vertices to fit a contact to")
    return V


def _six_digits(c: np.ndarray, r: float) -> tuple[np.ndarray, float]:
    # Single-precision vertices put a UV sphere of radius 1/64 at 1/64·(1 + 2e-7), centred 5e-9 off: enough for
    # two such balls placed touching to overlap at the start. Rounding removes that noise.
    q = 10.0 ** (math.floor(math.log10(r)) - 5)  # six significant digits
    return np.round(c / q) * q, float(np.round(r / q) * q)


def fit_rim(obj, context, axis=(0.0, 0.0, 1.0)) -> tuple[np.ndarray, float]:
    """(centre (3,), radius) in object coordinates of the rim around ``axis`` through the bounding box's centre
    that reaches the farthest vertex (a coin's edge), rounded to six significant digits."""
    V = _vertices(obj, context)
    a = np.asarray(axis, float)
    if not np.linalg.norm(a) > 0:
        raise AddonError(f"Object '{obj.name}': a rim's axis must not be zero")
    a = a / np.linalg.norm(a)
    c = (V.min(axis=0) + V.max(axis=0)) / 2
    d = V - c
    r = float(np.linalg.norm(d - np.outer(d @ a, a), axis=1).max())
    if not r > 0:
        raise AddonError(f"Object '{obj.name}': its mesh has no size across the axis; a rim needs a radius > 0")
    return _six_digits(c, r)


def fit_sphere(obj, context) -> tuple[np.ndarray, float]:
    """(centre (3,), radius) in object coordinates of the evaluated mesh's bounding sphere: centred on the
    bounding box, through the farthest vertex (compound parts included), rounded to six significant digits."""
    V = _vertices(obj, context)
    c = (V.min(axis=0) + V.max(axis=0)) / 2
    r = float(np.linalg.norm(V - c, axis=1).max())
    if not r > 0:
        raise AddonError(f"Object '{obj.name}': its mesh has no size; a contact sphere needs a radius > 0")
    return _six_digits(c, r)


def corner_spheres(obj, context, fraction: float) -> tuple[np.ndarray, float]:
    """(centres (8,3), radius) in object coordinates of a contact sphere in each corner of the evaluated mesh's
    bounding box, flush with its faces (a block's or a die's rounded corners): radius ``fraction`` of the box's
    smallest half side, rounded to six significant digits."""
    V = _vertices(obj, context)
    lo, hi = V.min(axis=0), V.max(axis=0)
    half = (hi - lo) / 2
    if not float(half.min()) > 0:
        raise AddonError(f"Object '{obj.name}': its mesh is flat (a bounding box of size {tuple(2 * half)}); "
                         "corner spheres need a solid")
    c, r = _six_digits((lo + hi) / 2, fraction * float(half.min()))
    q = half - r
    return np.array([c + np.array([sx, sy, sz]) * q for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]), r
