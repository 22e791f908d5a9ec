"""Wall objects: the shape (plane, sphere, cylinder along local Z, box) fitted to the object's bounding box and
world transform, as the core's :class:`~pem_physics.model.scene.StaticWall` (lab, m)."""

from __future__ import annotations

import numpy as np

from ...pem_physics.model.scene import StaticWall
from .. import units
from ..messages import AddonError
from .pairs import contact_friction_of, restitution_of


def local_box(obj) -> tuple[np.ndarray, np.ndarray]:
    """(centre (3,), half sizes (3,)) of the object's bounding box in object coordinates (evaluated, BU)."""
    B = np.array([list(v) for v in obj.bound_box], dtype=float)
    lo, hi = B.min(axis=0), B.max(axis=0)
    return (lo + hi) / 2, (hi - lo) / 2


def wall_geometry(obj, M: np.ndarray | None = None) -> dict:
    """The wall an object of role Wall stands for, in world coordinates (BU): kind, and

    plane: point (3,) on the top (+Z) face of the bounding box, normal (3,) = local +Z (allowed side);
    sphere: center (3,), radius; cylinder: point (3,) = box centre, direction (3,) = local Z, radius =
    the larger X/Y half-dimension, half_length (for drawing); box: center (3,), half_sizes (3,), axes (3,3)
    rows = the object's axes in world. AddonError naming the object for a degenerate shape.
    """
    p = obj.pem
    M = units.world(obj) if M is None else M
    R = units.rotation_part(M, obj.name)
    scale = np.linalg.norm(M[:3, :3], axis=0)
    c_local, h_local = local_box(obj)
    h = h_local * scale  # world half-dimensions along the object's axes
    center = (M @ np.r_[c_local, 1.0])[:3]
    kind = p.wall_shape.lower()
    if kind == "plane":
        top = (M @ np.r_[c_local[0], c_local[1], c_local[2] + h_local[2], 1.0])[:3]
        return {"kind": kind, "point": top, "normal": R[:, 2], "size": h}
    if kind == "sphere":
        if np.ptp(h) > 0.01 * h.max():
            raise AddonError(f"Object '{obj.name}' wall (sphere): its dimensions {tuple(np.round(2 * h, 6))} differ; "
                             "a sphere wall needs equal ones (use the Box shape, or scale it evenly)")
        if not h.mean() > 0:
            raise AddonError(f"Object '{obj.name}' wall (sphere): radius must be > 0 (the object has no size)")
        return {"kind": kind, "center": center, "radius": float(h.mean())}
    if kind == "cylinder":
        radius = float(max(h[0], h[1]))
        if not radius > 0:
            raise AddonError(f"Object '{obj.name}' wall (cylinder): radius must be > 0 (the object has no X/Y size)")
        return {"kind": kind, "point": center, "direction": R[:, 2], "radius": radius, "half_length": float(h[2])}
    if not np.all(h > 0):
        raise AddonError(f"Object '{obj.name}' wall (box): every dimension must be > 0, got "
                         f"{tuple(np.round(2 * h, 6))}; use the Plane shape for a flat object")
    return {"kind": kind, "center": center, "half_sizes": h, "axes": R.T}


def wall_of(obj, unit: float, surface: bool = False) -> StaticWall:
    """The core StaticWall (lab, m) of an object of role Wall; ``surface``: the scene's contacts are Rolling and
    Sliding (the wall's friction law counts)."""
    g = wall_geometry(obj)
    gliding = surface and obj.pem.friction_law == "VISCOUS"     # its own coefficient: never the Coulomb μ
    kw = {"kind": g["kind"], "name": obj.name, "inside": bool(obj.pem.wall_inside), "restitution": restitution_of(obj),
          "contact_friction": None if gliding else contact_friction_of(obj),
          "friction_law": obj.pem.friction_law.lower() if surface else None,
          "gliding_friction": units.exact(obj.pem, "gliding_friction") if gliding else None}
    for key in ("rolling_resistance", "spin_resistance"):      # BU → m; only where a table rolls
        val = units.exact(obj.pem, key)
        kw[key] = unit * val if surface and val > 0 else None
    if g["kind"] == "plane":
        kw.update(point=unit * g["point"], normal=g["normal"])
    elif g["kind"] == "sphere":
        kw.update(center=unit * g["center"], radius=unit * g["radius"])
    elif g["kind"] == "cylinder":
        kw.update(point=unit * g["point"], direction=g["direction"], radius=unit * g["radius"])
    else:
        kw.update(center=unit * g["center"], half_sizes=unit * g["half_sizes"], axes=g["axes"])
    return StaticWall(**kw)
