"""Contacts in Blender: contact spheres on pendulums, fixed and translating free bodies, wall objects, restitution.

Contact spheres are stored per object (``Object.pem.contacts``: centre in object coordinates, radius in
object units, both scaled with the object, whose scale must then be uniform). A wall is an object of role
*Wall*: its shape (plane, sphere, cylinder along local Z, box) is fitted to the object's bounding box and
world transform. :func:`body_contacts` and :func:`wall_of` turn them into the core's
:class:`~pem_physics.model.scene.ContactSphere` (body coordinates, m) and
:class:`~pem_physics.model.scene.StaticWall` (lab, m); errors name the object and the item. The module also
has the *Fit Contact Sphere* / add / *Add Corner Spheres* / remove operators and the overlay's line segments
(world, BU).
"""

from __future__ import annotations

import math

import bpy
import numpy as np

from ..pem_physics.errors import PemError
from ..pem_physics.model.scene import ContactRim, ContactSphere, StaticWall, pair_source, pair_value
from . import bodies, meshes, units
from .lists import OnSelectedItem, RemoveSelectedItem, add_item, draw_list
from .messages import AddonError

#: Relative spread of the scale (or of a sphere wall's dimensions) still taken as uniform.
UNIFORM_RTOL = 1e-4


def contact_friction_of(obj) -> float | None:
    """The object's own friction coefficient μ of impacts, or None for the scene's."""
    p = obj.pem
    return units.exact(p, "contact_friction") if p.use_contact_friction else None


def takes_contacts(obj) -> bool:
    """Whether the object takes part in contacts as a body: a pendulum, fixed or translating free body with
    contact spheres or rims."""
    p = obj.pem
    return bool(p.contacts) and (p.role in ("PENDULUM", "FIXED") or (p.role == "FREE" and p.translate))


#: At most this many pairs are listed in an object's panel (a box of marbles has thousands).
PAIR_LINES = 6


def pair_lines(scene, obj) -> list[tuple[str, bool]]:
    """The effective e and μ of each contact pair of ``obj`` with the scene's other contact objects, as the core
    forms them (:func:`~pem_physics.model.scene.pair_value`: an unset side is not zero), each ``(text, ok)`` with
    where each value comes from; ``ok`` False for a pair that will be refused or never grips. On a gliding table
    (Rolling and Sliding) μ is the table's Gliding μ alone."""
    sp = scene.pem
    surface = sp.contact_model == "SURFACE"
    mine = obj.pem.role == "WALL"
    if not (mine or takes_contacts(obj)):
        return []

    def meets(o) -> bool:     # walls meet bodies; bodies meet walls and (impacts) bodies, not two fixed ones
        if o.pem.role == "WALL":
            return not mine
        if not takes_contacts(o):
            return False
        return mine or (not surface and not (o.pem.role == obj.pem.role == "FIXED"))

    others = [o for o in bodies.pem_objects(scene) if o is not obj and meets(o)]
    out = []
    for other in others[:PAIR_LINES]:
        wall = obj if mine else other if other.pem.role == "WALL" else None
        body = other if mine else obj
        e_a, e_b = restitution_of(obj), restitution_of(other)
        whose = {"a": f"{obj.name}'s", "b": f"{other.name}'s", "scene": "the scene's", "both": "the smaller"}
        e = pair_value(e_a, e_b, units.exact(sp, "restitution"))
        e_text = f"e {e:.3g} ({whose[pair_source(e_a, e_b)]})"
        if surface and wall is not None and wall.pem.friction_law == "VISCOUS":
            if contact_friction_of(body) is not None:
                out.append((f"With '{other.name}': the body's Own Friction μ (Coulomb) cannot meet the table's "
                            "gliding law: turn it off", False))
                continue
            mu = units.exact(wall.pem, "gliding_friction")
            out.append((f"With '{other.name}': gliding μ {mu:.3g} s/m ({wall.name}'s), {e_text}", True))
            continue
        m_a, m_b = contact_friction_of(obj), contact_friction_of(other)
        mu = pair_value(m_a, m_b, units.exact(sp, "contact_friction"))
        ok = not (surface and mu == 0.0)
        out.append((f"With '{other.name}': μ {mu:.3g} ({whose[pair_source(m_a, m_b)]}), {e_text}"
                    + ("" if ok else ": slides forever, never rolls"), ok))
    if len(others) > PAIR_LINES:
        out.append((f"… and {len(others) - PAIR_LINES} more pairs", True))
    return out


def restitution_of(obj) -> float | None:
    """The object's own coefficient of restitution, or None for the scene's."""
    p = obj.pem
    return units.exact(p, "restitution") if p.use_restitution else None


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
        if not r > 0:
            raise AddonError(f"Object '{obj.name}' contact sphere #{k}: radius must be > 0 (got {r:g})")
        s = _uniform_scale(obj, M, f"contact sphere #{k}")
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
    c, h = _local_box(obj)
    tol = RIM_REACH_RTOL * 2 * float(h.max())
    out = np.maximum(np.abs(center - c) + reach - h, 0.0)
    if obj.type in ("MESH", "CURVE", "SURFACE", "FONT", "META") and np.any(out > tol):
        raise AddonError(f"Object '{obj.name}' contact rim #{k} (radius {r:g}) reaches {float(out.max()):.3g} beyond "
                         "the object's mesh: a rim off the body would hold it up on nothing; Fit Contact fits it "
                         "to the mesh's edge")


def _local_box(obj) -> tuple[np.ndarray, np.ndarray]:
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
    c_local, h_local = _local_box(obj)
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


# ------------------------------------------------------------------------------------------ overlay

def _circles(center: np.ndarray, radius: float, axes: np.ndarray, n: int = 32) -> np.ndarray:
    """Segments (3n,2,3) of three great circles of a sphere (world), in the planes of ``axes`` (3,3) columns."""
    a = np.linspace(0, 2 * np.pi, n + 1)
    segs = []
    for i, j in ((0, 1), (1, 2), (2, 0)):
        ring = center + radius * (np.cos(a)[:, None] * axes[:, i] + np.sin(a)[:, None] * axes[:, j])
        segs.append(np.stack([ring[:-1], ring[1:]], axis=1))
    return np.concatenate(segs)


def _rim(center: np.ndarray, radius: float, axis: np.ndarray, n: int = 48) -> np.ndarray:
    """Segments (n,2,3) of a rim (world): the circle of ``radius`` about ``axis`` (3,) through ``center``."""
    a = axis / np.linalg.norm(axis) if np.linalg.norm(axis) > 0 else np.array([0.0, 0.0, 1.0])
    u = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(a, u)
    t = np.linspace(0, 2 * np.pi, n + 1)
    ring = center + radius * (np.cos(t)[:, None] * u + np.sin(t)[:, None] * v)
    return np.stack([ring[:-1], ring[1:]], axis=1)


def _box_edges(center, half, axes_rows) -> np.ndarray:
    c = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    V = center + (c * half) @ axes_rows
    edges = [(a, b) for a in range(8) for b in range(a + 1, 8) if bin(a ^ b).count("1") == 1]
    return np.array([[V[a], V[b]] for a, b in edges])


def overlay_segments(scene) -> np.ndarray:
    """Line segments (k,2,3), world BU, of every contact sphere (three great circles) and wall outline."""
    segs = []
    for obj in bodies.pem_objects(scene):
        p = obj.pem
        M = units.matrix(obj.matrix_world)
        try:
            R = units.rotation_part(M, obj.name)
            if p.role == "WALL":
                g = wall_geometry(obj, M)
            else:
                s = float(np.linalg.norm(M[:3, :3], axis=0).mean())
                for c in p.contacts:
                    if not c.radius > 0:
                        continue
                    centre = (M @ np.r_[np.array(c.center), 1.0])[:3]
                    if c.kind == "RIM":
                        segs.append(_rim(centre, s * c.radius, R @ np.array(c.axis, float)))
                    else:
                        segs.append(_circles(centre, s * c.radius, R))
                continue
        except PemError:
            continue  # a shape the bake would refuse (with a message) is not drawn
        if g["kind"] == "plane":
            size = np.where(g["size"][:2] > 0, g["size"][:2], 1.0)
            rect = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]], float) * size
            P = g["point"] + rect[:, :1] * R[:, 0] + rect[:, 1:] * R[:, 1]
            segs.append(np.stack([P[:-1], P[1:]], axis=1))
            segs.append(np.array([[g["point"], g["point"] + 0.5 * size.mean() * g["normal"]]]))
        elif g["kind"] == "sphere":
            segs.append(_circles(g["center"], g["radius"], R))
        elif g["kind"] == "cylinder":
            a = np.linspace(0, 2 * np.pi, 33)
            ring = g["radius"] * (np.cos(a)[:, None] * R[:, 0] + np.sin(a)[:, None] * R[:, 1])
            for z in (-g["half_length"], g["half_length"]):
                P = g["point"] + z * g["direction"] + ring
                segs.append(np.stack([P[:-1], P[1:]], axis=1))
            for k in range(0, 32, 8):
                segs.append(np.array([[g["point"] + ring[k] - g["half_length"] * g["direction"],
                                       g["point"] + ring[k] + g["half_length"] * g["direction"]]]))
        else:
            segs.append(_box_edges(g["center"], g["half_sizes"], g["axes"]))
    return np.concatenate(segs) if segs else np.empty((0, 2, 3))


# ------------------------------------------------------------------------------------------ operators

class PEM_UL_contacts(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.label(text=f"#{index}", icon="MESH_CIRCLE" if item.kind == "RIM" else "SPHERE")
        row.prop(item, "radius", text="r")


class PEM_OT_contact_add(bpy.types.Operator):
    """Add a contact sphere to the active object, fitted to its mesh's bounding sphere"""

    bl_idname = "pem.contact_add"
    bl_label = "Add Contact Sphere"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def execute(self, context):
        obj = context.object
        item = add_item(obj.pem, "contacts", "active_contact")
        try:
            c, r = fit_sphere(obj, context)
        except PemError:
            return {"FINISHED"}  # nothing to fit to (an Empty without size): the defaults stay, to be typed in
        item.center, item.radius = tuple(c), r
        return {"FINISHED"}


class PEM_OT_contact_add_corners(bpy.types.Operator):
    """Add a contact sphere in each of the eight corners of the active object's bounding box, flush with its faces
    (a block or a die with rounded corners: it rests on faces, rocks on edges and tumbles)"""

    bl_idname = "pem.contact_add_corners"
    bl_label = "Add Corner Spheres"
    bl_options = {"REGISTER", "UNDO"}

    fraction: bpy.props.FloatProperty(
        name="Corner Radius", description="Radius of the corner spheres, a fraction of the smallest half side",
        default=0.1, min=1e-3, max=1.0, soft_min=0.01, soft_max=0.5, subtype="FACTOR")

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == "MESH"

    def execute(self, context):
        obj = context.object
        try:
            centres, r = corner_spheres(obj, context, self.fraction)
        except PemError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for c in centres:
            item = add_item(obj.pem, "contacts", "active_contact")
            item.kind, item.center, item.radius = "SPHERE", tuple(c), r
        self.report({"INFO"}, f"Object '{obj.name}': 8 corner spheres of radius {r:.6g}")
        return {"FINISHED"}


class PEM_OT_contact_remove(RemoveSelectedItem, bpy.types.Operator):
    """Remove the selected contact sphere"""

    bl_idname = "pem.contact_remove"
    bl_label = "Remove Contact Sphere"
    collection, active = "contacts", "active_contact"


class PEM_OT_contact_fit(OnSelectedItem, bpy.types.Operator):
    """Fit the selected contact to the object's evaluated mesh: a sphere to its bounding sphere, a rim around its
    axis to the farthest vertex"""

    bl_idname = "pem.contact_fit"
    bl_label = "Fit Contact"
    collection, active = "contacts", "active_contact"

    def execute(self, context):
        obj = context.object
        item = obj.pem.contacts[obj.pem.active_contact]
        try:
            c, r = fit_rim(obj, context, tuple(item.axis)) if item.kind == "RIM" else fit_sphere(obj, context)
        except PemError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        item.center, item.radius = tuple(c), r
        what = "rim" if item.kind == "RIM" else "sphere"
        self.report({"INFO"}, f"Object '{obj.name}': contact {what} #{obj.pem.active_contact} radius {r:.6g}")
        return {"FINISHED"}


def draw_object(layout, obj) -> None:
    """The contact part of the object panel: contact spheres and restitution, or the wall's shape."""
    p = obj.pem
    box = layout.box()
    box.label(text="Contacts", icon="MOD_PHYSICS")
    if p.role == "WALL":
        box.prop(p, "wall_shape")
        if p.wall_shape != "PLANE":
            box.prop(p, "wall_inside")
        else:
            box.label(text="Spheres stay on the side of the object's local +Z")
        if bpy.context.scene.pem.contact_model == "SURFACE":
            box.prop(p, "friction_law")
            col = box.column(align=True)
            col.prop(p, "rolling_resistance")
            col.prop(p, "spin_resistance")
    elif p.role in ("PENDULUM", "FIXED") or (p.role == "FREE" and (p.translate or p.contacts)):
        if p.role == "FREE" and not p.translate:  # spheres left from before: say why the bake will refuse them
            box.label(text="Contact spheres need Translate on (or remove them)", icon="ERROR")
        box.label(text="Contact spheres and rims (object coordinates)")
        c = draw_list(box, p, "PEM_UL_contacts", "contacts", "active_contact",
                      (("pem.contact_add", "ADD"), ("pem.contact_remove", "REMOVE")), rows=2)
        if c is not None:
            box.prop(c, "kind", expand=True)
            box.prop(c, "center")
            if c.kind == "RIM":
                box.prop(c, "axis")
                if bpy.context.scene.pem.contact_model != "SURFACE":
                    box.label(text="Rims need Contacts: Rolling and Sliding (Scene)", icon="ERROR")
            box.prop(c, "radius")
            box.operator("pem.contact_fit", icon="MESH_CIRCLE" if c.kind == "RIM" else "SPHERE")
        box.operator("pem.contact_add_corners", icon="MESH_CUBE")
    elif p.role == "FREE":
        box.label(text="A free body takes part in contacts when Translate is on")
        return
    else:
        box.label(text="Only pendulums, fixed bodies, translating free bodies and walls take part in contacts")
        return
    gliding = p.role == "WALL" and bpy.context.scene.pem.contact_model == "SURFACE" and p.friction_law == "VISCOUS"
    for use, name, label in (("use_restitution", "restitution", "e"),
                             ("use_contact_friction", "contact_friction", "μ")):
        if gliding and name == "contact_friction":     # the gliding law has its own coefficient (s/m)
            box.prop(p, "gliding_friction")
            continue
        row = box.row()
        row.prop(p, use)
        sub = row.row()
        sub.enabled = getattr(p, use)
        sub.prop(p, name, text=label)
    lines = pair_lines(bpy.context.scene, obj)
    if lines:
        col = box.column(align=True)
        col.label(text="Effective per pair:")
        for text, ok in lines:
            col.label(text=text, icon="BLANK1" if ok else "ERROR")


classes = (PEM_UL_contacts, PEM_OT_contact_add, PEM_OT_contact_add_corners, PEM_OT_contact_remove,
           PEM_OT_contact_fit)
register, unregister = bpy.utils.register_classes_factory(classes)
