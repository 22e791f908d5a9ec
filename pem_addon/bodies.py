"""PEM bodies in a Blender scene: which objects take part, their pivots, and whether a pivot moves by itself."""

from __future__ import annotations

import bpy
import numpy as np

from . import keyframes
from .messages import AddonError
from .units import exact, initial_world, world


def pivot_world(obj) -> np.ndarray:
    """Pivot (BU, world) of a pendulum; AddonError naming the object if it has none, if it is its own, or if its
    pivot object is a simulated body (a chain the simulation cannot follow)."""
    p = obj.pem
    if p.pivot_mode == "OBJECT":
        piv = p.pivot_object
        if piv is None:
            raise AddonError(f"Object '{obj.name}' has no pivot: pick a pivot object (e.g. an Empty) or set "
                             "Pivot: Point")
        if piv.name not in bpy.context.scene.objects:
            raise AddonError(f"Object '{obj.name}': its pivot object '{piv.name}' is not in the scene")
        if piv == obj:
            raise AddonError(f"Object '{obj.name}' is its own pivot object; use Pivot: Point instead")
        if piv.pem.enabled and piv.pem.role in ("PENDULUM", "FREE"):
            # the simulation would hold the pivot at its start: two independent bodies, not the chain built
            raise AddonError(f"Object '{obj.name}': its pivot '{piv.name}' is itself simulated (a "
                             f"{piv.pem.role.lower()} body); chains of pendulums are not supported: pivot "
                             f"'{obj.name}' on an object the simulation does not move (an Empty), or turn "
                             f"Magnetic Pendulum off on '{piv.name}'")
        return world(piv)[:3, 3]
    return (initial_world(obj) @ np.r_[exact(p, "pivot_point"), 1.0])[:3]


def moves_by_itself(obj) -> bool:
    """Whether obj moves over the frames without PEM: its own animation (:func:`keyframes.animates_transform`),
    an active constraint, or a parent that moves."""
    while obj is not None:
        if keyframes.animates_transform(obj) or any(not c.mute for c in obj.constraints):
            return True
        obj = obj.parent
    return False


def animated_pivot(obj):
    """A pendulum's pivot object when it moves by itself (the simulation holds it at its start-frame position,
    while the viewport shows it moving), else None."""
    p = obj.pem
    piv = p.pivot_object if p.role == "PENDULUM" and p.pivot_mode == "OBJECT" else None
    return piv if piv is not None and moves_by_itself(piv) else None

def pem_objects(scene) -> list:
    """Objects of the scene with PEM enabled, in a stable (name) order."""
    return sorted((o for o in scene.objects if o.pem.enabled), key=lambda o: o.name)
