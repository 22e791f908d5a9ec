"""PEM bodies in a Blender scene: which objects take part, their pivots, and whether a pivot moves by itself."""

from __future__ import annotations

import bpy
import numpy as np

from . import keyframes
from .messages import AddonError
from .units import exact, initial_world, world


def pivot_world(obj) -> np.ndarray:
    """Pivot (BU, world) of a pendulum; AddonError naming the object if it has none, if it is its own, or if its
    pivot object is a simulated body (a chain the simulation cannot follow) or a driven magnet on a set path."""
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
        if piv.pem.enabled and piv.pem.role == "DRIVEN" and piv.pem.motion != "ANIMATION":
            # the core moves it as it runs (its keys, if any, overridden by the bake's); a pivot's motion is read
            # before the run: the pendulum would swing from where it starts
            label = piv.pem.bl_rna.properties["motion"].enum_items[piv.pem.motion].name
            raise AddonError(f"Object '{obj.name}': its pivot '{piv.name}' is a driven magnet on a set path (Motion: "
                             f"{label}), which a pivot cannot follow (the simulation reads a pivot's motion before "
                             f"it runs): animate '{piv.name}' and set its Motion to Animation, or pivot "
                             f"'{obj.name}' on an object the simulation does not move")
        return world(piv)[:3, 3]
    return (initial_world(obj) @ np.r_[exact(p, "pivot_point"), 1.0])[:3]


def applied_constraints(obj) -> list:
    """obj's object constraints Blender applies: enabled (not muted) and valid (a target where one is needed) —
    Blender's evaluation skips the others, so they move nothing. A zero influence still counts: it may be keyed to
    rise later in the frame range."""
    return [c for c in obj.constraints if c.enabled and c.is_valid]


def constraint_targets(con) -> list:
    """The objects a constraint reads (its target, pole target, custom space object, camera …: every object it
    points to)."""
    names = [p.identifier for p in con.bl_rna.properties
             if p.type == "POINTER" and p.fixed_type == bpy.types.Object.bl_rna]
    return [o for o in (getattr(con, n) for n in names) if o is not None]


def constrained_to(obj, keyed, seen=None):
    """(object holding the constraint, constraint, body of ``keyed``) when obj's pose follows a body the bake keys
    through an applied constraint — of obj or a parent, on that body or on an object that moves with it (a child,
    or constrained to it in turn) — else None. Such an object is read before the bake (held where the body
    starts, or sampled while the body stands still) but moves with the baked body after it."""
    seen = set() if seen is None else seen
    holder = obj
    while holder is not None:
        for con in applied_constraints(holder):
            for target in constraint_targets(con):
                body = _keyed_ancestor(target, keyed)
                if body is None and target not in seen:
                    seen.add(target)
                    found = constrained_to(target, keyed, seen)
                    body = found[2] if found else None
                if body is not None:
                    return holder, con, body
        holder = holder.parent
    return None


def parented_to(obj, keyed):
    """(obj's parent, the body of ``keyed`` it is or is a child of) when obj hangs, through plain parenting, below a
    body the bake keys, else None: such an object moves with the body after the bake."""
    body = _keyed_ancestor(obj.parent, keyed)
    return None if body is None else (obj.parent, body)


def _keyed_ancestor(obj, keyed):
    """obj, or the nearest of its parents, when it is in ``keyed``; else None."""
    while obj is not None and obj not in keyed:
        obj = obj.parent
    return obj


def moves_by_itself(obj) -> bool:
    """Whether obj moves over the frames without PEM: its own animation (:func:`keyframes.animates_transform`),
    a constraint Blender applies (:func:`applied_constraints`), or a parent that moves."""
    while obj is not None:
        if keyframes.animates_transform(obj) or applied_constraints(obj):
            return True
        obj = obj.parent
    return False


def motion_source(obj) -> tuple[str, str]:
    """(what moves obj by itself, how to stop it), in the panel's words, for an object :func:`moves_by_itself`
    says moves: its own animation first, then its constraints, then its parent."""
    if keyframes.animates_transform(obj):
        return "its animation (keys or drivers)", "remove its keys and drivers"
    cons = applied_constraints(obj)
    if cons:
        return f"its constraint '{cons[0].name}'", "mute or remove the constraint"
    return (f"its parent '{obj.parent.name}'",
            "clear the parent (Alt P ▸ Clear and Keep Transformation) or stop it moving")


def animated_pivot(obj):
    """A pendulum's pivot object when it moves by itself (the simulation holds it at its start-frame position,
    while the viewport shows it moving), else None."""
    p = obj.pem
    piv = p.pivot_object if p.role == "PENDULUM" and p.pivot_mode == "OBJECT" else None
    return piv if piv is not None and moves_by_itself(piv) else None

def pem_objects(scene) -> list:
    """Objects of the scene with PEM enabled, in a stable (name) order."""
    return sorted((o for o in scene.objects if o.pem.enabled), key=lambda o: o.name)
