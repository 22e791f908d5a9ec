"""The body adapter, Blender data ↔ pem_physics (Bonsai's ``tool`` layer): exact values, poses, meshes and mass
properties of PEM objects, pivots, messages in the panel's words, and building objects from an imported scene.
The scene as a whole (its time settings, the core Scene) is :mod:`.scenes`; contact spheres and walls are
:mod:`.contacts`.

Frames. Blender world coordinates are in Blender units (BU); the core's lab frame is the same
axes in metres: x_lab = unit · x_world, ``unit`` = ``scene.unit_settings.scale_length``; velocities
are stored like lengths (BU/s: Blender shows them × scale_length, in m/s), v_lab = unit · v. A body's
frame has the object's world rotation R (scale removed) as axes, so the core orientation is
U = Rᵀ (rows = body axes in lab), and its origin at the reference point P: the pivot for a
pendulum, the object origin otherwise. Body coordinates of a local point v:
x_B = unit · Rᵀ (M v + t − P) with M, t the object's world 3×3 and translation.
"""

from __future__ import annotations

import hashlib
import math
import re
import warnings

import bpy
import numpy as np

from ..pem_physics.errors import PemError, ValidationError
from ..pem_physics.model import (
    MU0,
    ConstantVelocity,
    ContactRim,
    Oscillation,
    Scene,
    TabulatedMotion,
    UniformRotation,
    inertia,
    mesh_parts,
)
from . import keyframes
from .frames import DIVIDES_RTOL, steps_per_frame  # noqa: F401 (the add-on's modules take them here)
from .props import ROLE_TO_CORE


class AddonError(PemError):
    """A user-facing problem with the Blender scene; the message names the object."""


def unit_scale(scene) -> float:
    """Metres per Blender unit."""
    s = scene.unit_settings.scale_length
    return float(s) if s > 0 else 1.0


def matrix(m) -> np.ndarray:
    """A mathutils Matrix as a float64 numpy array."""
    return np.array([list(row) for row in m], dtype=float)


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
    obj.matrix_world = _to_matrix(M)
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


def rotation_part(M: np.ndarray, name: str) -> np.ndarray:
    """The rotation R of a world matrix whose 3×3 is R·S (S a diagonal positive scale)."""
    A = M[:3, :3]
    norms = np.linalg.norm(A, axis=0)
    if not np.all(norms > 1e-12):
        raise AddonError(f"Object '{name}' has zero scale on an axis")
    R = A / norms
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-5 or np.linalg.det(R) < 0:
        raise AddonError(f"Object '{name}' is sheared or mirrored (negative scale, or a non-uniformly scaled "
                         "parent); apply the scale first")
    # Re-orthonormalise the float32 matrix so the core starts from an exact rotation.
    u, _, vt = np.linalg.svd(R)
    return u @ vt


def initial_basis(obj) -> np.ndarray:
    """The object's basis matrix as it is now: :func:`pem_addon.bake.prepare` reads the scene with every body
    in its start pose (the scene's start frame, baked channels removed)."""
    return matrix(obj.matrix_basis)


def parent_world(obj) -> np.ndarray:
    """P_w with world = P_w · basis (parent world × parent inverse, or identity)."""
    return matrix(obj.matrix_world) @ np.linalg.inv(matrix(obj.matrix_basis))


def initial_world(obj) -> np.ndarray:
    """World matrix (4,4, BU) of obj as the core reads it: exact after an import (:func:`world`)."""
    return world(obj)


# ------------------------------------------------------------------------------------------ meshes

#: Object types that can be PEM bodies or walls: meshes (exact inertia), other geometry (an analytic primitive
#: fitted to the bounding box, or typed inertia) and empties (typed inertia: a point magnet, a pivot body).
#: Cameras, lights, armatures and the like are not offered the Physics tab's entry.
BODY_TYPES = frozenset({"MESH", "CURVE", "SURFACE", "FONT", "META", "EMPTY"})


def _not_a_mesh(obj) -> AddonError:
    kind = obj.type.lower().replace("_", " ")
    article = "an" if kind[0] in "aeiou" else "a"
    return AddonError(f"Object '{obj.name}' is {article} {kind}, not a mesh: choose Inertia: Primitive or Manual")


def mesh_triangles(obj, depsgraph) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (N,3) in object coordinates and triangles (T,3) of the evaluated mesh (modifiers applied)."""
    if obj.type != "MESH":
        raise _not_a_mesh(obj)
    ob_eval = obj.evaluated_get(depsgraph)
    mesh = ob_eval.to_mesh()
    try:
        mesh.calc_loop_triangles()
        V = np.empty(3 * len(mesh.vertices), dtype=np.float64)
        mesh.vertices.foreach_get("co", V)
        F = np.empty(3 * len(mesh.loop_triangles), dtype=np.int64)
        mesh.loop_triangles.foreach_get("vertices", F)
    finally:
        ob_eval.to_mesh_clear()
    return V.reshape(-1, 3), F.reshape(-1, 3)


def _own_meshes(obj) -> list:
    """Mesh descendants of obj whose nearest PEM-body ancestor is obj, by name: the walk down the children
    stops at a child that is a PEM body itself, since what hangs below it is that body's (a mesh under
    nested bodies belongs to the innermost one only, and is counted once)."""
    out, todo = [], list(obj.children)
    while todo:
        child = todo.pop()
        if child.pem.enabled:
            continue
        if child.type == "MESH":
            out.append(child)
        todo.extend(child.children)
    return sorted(out, key=lambda o: o.name)


def compound_parts(obj) -> list:
    """Mesh descendants of obj that are part of its body (a compound body, like Blender's rigid-body compound
    shapes): every child mesh, recursively, down to the next PEM body (:func:`_own_meshes`); [] when the body
    excludes them."""
    return _own_meshes(obj) if obj.pem.include_children else []


def excluded_parts(obj) -> list:
    """Child meshes left out of the body's mass (include_children off), for the panel's note."""
    return [] if obj.pem.include_children else _own_meshes(obj)


def _body_meshes(obj, depsgraph) -> list:
    """[(object, vertices (N,3) in obj's object coordinates, triangles (T,3))] of obj's evaluated mesh and of
    each of its compound parts (a child's mesh carried into obj's coordinates by the two world matrices)."""
    out = [(obj, *mesh_triangles(obj, depsgraph))]
    parts = compound_parts(obj)
    if parts:
        inv = np.linalg.inv(matrix(obj.matrix_world))
        for child in parts:
            Vc, Fc = mesh_triangles(child, depsgraph)
            A = inv @ matrix(child.matrix_world)
            out.append((child, Vc @ A[:3, :3].T + A[:3, 3], Fc))
    return out


def _joined(meshes) -> tuple[np.ndarray, np.ndarray]:
    """One (vertices, triangles) of the meshes of :func:`_body_meshes`, in their order."""
    if len(meshes) == 1:
        return meshes[0][1], meshes[0][2]
    offsets = np.cumsum([0] + [len(V) for _, V, _ in meshes[:-1]])
    return np.vstack([V for _, V, _ in meshes]), np.vstack([F + k for (_, _, F), k in zip(meshes, offsets)])


def body_triangles(obj, depsgraph) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (N,3) in obj's object coordinates and triangles (T,3) of obj's evaluated mesh and its compound
    parts (:func:`_body_meshes`)."""
    return _joined(_body_meshes(obj, depsgraph))


#: Single precision's unit round-off: Blender stores coordinates, dimensions and transforms as float32.
FLOAT32_EPS = 2.0 ** -24


def float32_tolerance(size: float) -> float:
    """How far apart (in the units of ``size``) two values meant to be equal may be once Blender has stored them:
    a few single-precision round-offs of the largest coordinate involved (each value rounded, then transformed)."""
    return 8.0 * FLOAT32_EPS * float(size)


def _overlap_notes(obj, V, F, meshes) -> list:
    """Warnings naming obj when closed parts of its body's mesh (V, F: :func:`_joined` ``meshes``) overlap: the
    volume they share is counted twice in the mass (:func:`mesh_parts.overlapping_parts`)."""
    parts = mesh_parts.mesh_parts(F, len(V))
    pairs = mesh_parts.overlapping_parts(V, F, parts, tol=float32_tolerance(np.abs(V).max(initial=0.0)))
    if not pairs:
        return []
    first_face = np.cumsum([0] + [len(f) for _, _, f in meshes])

    def owner(part) -> str:  # the object whose mesh holds the part
        return meshes[int(np.searchsorted(first_face, part[0], side="right")) - 1][0].name

    notes = []
    for a, b in pairs:
        na, nb = owner(parts[a]), owner(parts[b])
        where = ("two closed parts of its mesh overlap" if na == nb == obj.name
                 else f"closed parts of '{na}' and '{nb}' overlap" if na != nb
                 else f"two closed parts of its child '{na}' overlap")
        notes.append(f"Object '{obj.name}': {where}, so the volume they share counts twice in the mass; unite them "
                     "(Boolean modifier, Union) or move them apart")
    return notes


def _flipped_note(obj) -> str:
    return (f"Object '{obj.name}': the normals of its mesh point inwards; its mass was computed with them turned "
            "outwards — recalculate them (Edit Mode ▸ Mesh ▸ Normals ▸ Recalculate Outside)")


def object_frame_scale(obj, M: np.ndarray, unit: float) -> np.ndarray:
    """3×3 taking object coordinates to the object frame in metres: unit · Rᵀ · M₃."""
    R = rotation_part(M, obj.name)
    return unit * R.T @ M[:3, :3]


#: Digests of evaluated meshes' vertices, by object name. A panel redraw asks whether the mass properties
#: are out of date; evaluating a big mesh for that costs tens of ms, so the digest is kept until the
#: depsgraph reports the object's geometry changed (:func:`on_depsgraph_update`, registered by the add-on).
_mesh_digests: dict = {}


def _digest(V: np.ndarray) -> bytes:
    return hashlib.sha1(np.ascontiguousarray(V, dtype=np.float32).tobytes()).digest()


def mesh_digest(obj, context) -> bytes:
    """The digest of obj's evaluated mesh (cached; see :data:`_mesh_digests`)."""
    if obj.name not in _mesh_digests:
        _mesh_digests[obj.name] = _digest(body_triangles(obj, context.evaluated_depsgraph_get())[0])
    return _mesh_digests[obj.name]


@bpy.app.handlers.persistent
def on_depsgraph_update(scene, depsgraph) -> None:
    """Forget the mesh digests of objects whose geometry changed (a mesh datablock: every object)."""
    for update in depsgraph.updates:
        original = update.id.original
        if isinstance(original, bpy.types.Object):
            if original.parent is not None and (update.is_updated_geometry or update.is_updated_transform):
                _mesh_digests.clear()  # it may be a compound body's part: its body's digest changes too
            elif update.is_updated_geometry:
                _mesh_digests.pop(original.name, None)
        elif isinstance(original, (bpy.types.Mesh, bpy.types.Scene)) and update.is_updated_geometry:
            _mesh_digests.clear()


@bpy.app.handlers.persistent
def forget_mesh_digests(*_args) -> None:
    _mesh_digests.clear()


def stamp(obj, V: np.ndarray | bytes | None, M: np.ndarray, p) -> str:
    """Fingerprint of everything the computed mass properties depend on (V: vertices or their digest)."""
    h = hashlib.sha1()
    if V is not None:
        h.update(V if isinstance(V, bytes) else _digest(V))
    h.update(np.round(np.linalg.norm(M[:3, :3], axis=0), 6).tobytes())
    h.update(repr((p.inertia_source, p.primitive, p.mass_mode, round(p.density, 9), round(p.mass, 9),
                   tuple(p.manual_com), tuple(p.manual_inertia), p.include_children)).encode())
    return h.hexdigest()


def mass_kg(p, unit: float) -> float:
    """The typed Mass in kg. Its property has Blender's mass unit, shown as the stored value × scale_length³
    (Blender scales masses with the cube of the scene's length scale), so it is stored in kg / unit³."""
    return exact(p, "mass") * unit**3


def mass_properties(obj, context, M: np.ndarray | None = None, notes: list | None = None):
    """(MassProperties in the object frame — metres, object axes —, stamp) of a moving object.

    ``notes``: a list that gets a warning (a sentence naming the object) for a mesh whose mass is computed but
    likely not what was meant: closed parts that overlap (counted twice), normals pointing inwards (flipped).
    """
    p = obj.pem
    unit = unit_scale(context.scene)
    M = initial_world(obj) if M is None else M
    S = object_frame_scale(obj, M, unit)
    V = None
    amount = {"density": exact(p, "density")} if p.mass_mode == "DENSITY" else {"mass": mass_kg(p, unit)}
    for key, value in amount.items():   # a script can store NaN or a negative: named as the panel names it
        if not (np.isfinite(value) and value >= 0):
            raise AddonError(f"Object '{obj.name}': {'Density' if key == 'density' else 'Mass'} (Physics ▸ Magnetic "
                             f"Pendulum ▸ Mass Properties) must be a finite number ≥ 0, got {value:g}")
    try:
        if p.inertia_source == "MANUAL":
            I = exact(p, "manual_inertia")
            tensor = np.array([[I[0], I[3], I[4]], [I[3], I[1], I[5]], [I[4], I[5], I[2]]])
            inertia.check_physical(tensor, f"Object '{obj.name}': the manual inertia (Physics ▸ Magnetic Pendulum "
                                           "▸ Mass Properties)")
            mp = inertia.MassProperties(mass_kg(p, unit), S @ exact(p, "manual_com"), tensor)
        else:
            meshes = _body_meshes(obj, context.evaluated_depsgraph_get()) if obj.type == "MESH" else None
            V, F = _joined(meshes) if meshes else (None, None)
            if p.inertia_source == "MESH":
                if V is None:
                    raise _not_a_mesh(obj)
                if len(F) < 4:
                    raise AddonError(f"Object '{obj.name}': the mesh has {len(F)} triangles; a closed solid needs "
                                     "at least 4")
                try:
                    with warnings.catch_warnings(record=True) as caught:  # a flipped mesh: said by name, below
                        warnings.simplefilter("always", inertia.MeshWarning)
                        mp = inertia.mesh_mass_properties(V @ S.T, F, path=f"Object '{obj.name}' mesh", **amount)
                    if notes is not None:
                        notes += [_flipped_note(obj)] if any(issubclass(w.category, inertia.MeshWarning)
                                                             for w in caught) else []
                        notes += _overlap_notes(obj, V @ S.T, F, meshes)
                except ValidationError as err:
                    if "not closed" not in str(err):
                        raise
                    raise AddonError(f"{err}. Exact mass properties need a closed solid: close the mesh, or set "
                                     "Inertia Source to Primitive (a box, sphere, cylinder or ellipsoid fitted to "
                                     "the object) or Manual (Physics ▸ Magnetic Pendulum ▸ Mass Properties)") from err
            else:
                if V is not None and len(V):
                    W = V @ S.T
                    lo, hi = W.min(axis=0), W.max(axis=0)
                else:  # Empties and curves: the display size
                    lo, hi = -np.abs(np.diag(S)), np.abs(np.diag(S))
                c, h = (lo + hi) / 2, (hi - lo) / 2
                if p.primitive == "SPHERE":
                    shape = inertia.Sphere(radius=float(h.mean()), center=c, **amount)
                elif p.primitive == "CYLINDER":
                    shape = inertia.Cylinder(radius=float(max(h[0], h[1])), half_length=float(h[2]), center=c,
                                             **amount)
                elif p.primitive == "ELLIPSOID":
                    shape = inertia.Ellipsoid(semi_axes=h, center=c, **amount)
                else:
                    shape = inertia.Cuboid(half_sides=h, center=c, **amount)
                mp = shape.mass_properties()
    except ValidationError as err:
        msg = str(err)
        raise AddonError(msg if msg.startswith("Object") else f"Object '{obj.name}': {msg}") from err
    if not mp.mass > 0:
        raise AddonError(f"Object '{obj.name}' has zero mass: set a positive density or mass")
    if V is not None:
        _mesh_digests[obj.name] = _digest(V)
    return mp, stamp(obj, V, M, p)


def store_mass_properties(obj, mp, st: str, notes=()) -> None:
    """Write computed values to the object's properties (COM in object coordinates, SI otherwise), and the
    warnings of :func:`mass_properties` for the panel."""
    p = obj.pem
    p.computed_notes = "\n".join(notes)
    moments, axes = mp.principal()
    p.computed_mass = mp.mass
    p.computed_volume = mp.volume or 0.0
    p.computed_moments = moments
    p.computed_axes = axes.T.reshape(-1)  # rows = principal axes (object axes)
    p.computed_inertia = mp.inertia.reshape(-1)
    p.computed_com = mp.center_of_mass
    p.computed_stamp = st


def current_stamp(obj, context) -> str | None:
    """Stamp of the object as it is now, without integrating (None if it has no usable transform)."""
    try:
        M = initial_world(obj)
        V = None
        if obj.pem.inertia_source != "MANUAL" and obj.type == "MESH":
            V = mesh_digest(obj, context)
        return stamp(obj, V, M, obj.pem)
    except PemError:
        return None


# ------------------------------------------------------------------------------------------ scene

def pivot_world(obj) -> np.ndarray:
    """Pivot (BU, world) of a pendulum; AddonError naming the object if it has none."""
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


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 object``, ``2 objects`` (``words`` for an irregular plural)."""
    return f"{n} {word if n == 1 else words or word + 's'}"


def pem_objects(scene) -> list:
    """Objects of the scene with PEM enabled, in a stable (name) order."""
    return sorted((o for o in scene.objects if o.pem.enabled), key=lambda o: o.name)


#: Core setting paths in the panel's words: (pattern of the path, the setting's UI name and where it is).
_PANEL_NAMES = (
    (r"settings\.dt", "Time Step dt (Scene ▸ Magnetic Pendulum)"),
    (r"settings\.t_end", "frame range (Output ▸ Frame Range)"),
    (r"settings\.record_interval", "Substeps per Frame (Scene ▸ Magnetic Pendulum)"),
    (r"settings\.method", "Integrator (Scene ▸ Magnetic Pendulum)"),
    (r"gravity", "Gravity (Scene ▸ Magnetic Pendulum)"),
    (r"rotating_field\.?\w*", "Rotating field B1, B2, ω (Scene ▸ Magnetic Pendulum)"),
    (r"field", "External Field (Scene ▸ Magnetic Pendulum)"),
    (r"friction", "Friction (Scene ▸ Magnetic Pendulum)"),
    (r"mu0", "μ₀ (Scene ▸ Magnetic Pendulum)"),
    (r"periodic_box", "Periodic Box (Scene ▸ Magnetic Pendulum)"),
    (r"restitution", "Restitution (Scene ▸ Magnetic Pendulum)"),
    (r"contact_friction", "Contact Friction μ (Scene ▸ Magnetic Pendulum)"),
    (r"contact_model", "Contacts (Scene ▸ Magnetic Pendulum)"),
    (r"walls", "the Wall objects (Physics ▸ Magnetic Pendulum ▸ Role: Wall)"),
)
_BODY_FIELDS = {
    "mass_properties": "mass properties (Physics ▸ Magnetic Pendulum ▸ Mass Properties)",
    "inertia": "inertia (Physics ▸ Magnetic Pendulum ▸ Mass Properties)",
    "mass": "mass (Physics ▸ Magnetic Pendulum ▸ Mass Properties)",
    "angular_velocity": "Angular Velocity (Physics ▸ Magnetic Pendulum)",
    "hinge": "hinge axis (Physics ▸ Magnetic Pendulum)",
    "motion": "motion (Physics ▸ Magnetic Pendulum)",
    "translate": "Translate (Physics ▸ Magnetic Pendulum)",
    "velocity": "Velocity (Physics ▸ Magnetic Pendulum)",
    "restitution": "Own Restitution (Physics ▸ Magnetic Pendulum ▸ Contacts)",
    "contact_friction": "Own Friction μ (Physics ▸ Magnetic Pendulum ▸ Contacts)",
}


#: Scene-file settings a core message may tell the user to set, in the panel's words.
_PANEL_PHRASES = (
    ('contact_model = "surface"', "Contacts: Rolling and Sliding (Scene ▸ Magnetic Pendulum)"),
    ('contact_model = "impacts"', "Contacts: Impacts (Scene ▸ Magnetic Pendulum)"),
    ('role = "free" and translate = true', "role Free with Translate on (Physics ▸ Magnetic Pendulum)"),
    ("set the wall's inside = true", "turn the wall's Container on (Physics ▸ Magnetic Pendulum)"),
    ("set the wall's inside = false", "turn the wall's Container off (Physics ▸ Magnetic Pendulum)"),
    ("remove the body's contact_friction (the table's gliding_friction applies)",
     "turn the body's Own Friction off (the table's Gliding μ applies)"),
    ("make the table Coulomb's", "set the table's Friction Law to Coulomb (Physics ▸ Magnetic Pendulum)"),
    ("set a contact_friction on the table (or the body, or the scene)",
     "turn Own Friction on for the table (or the body), or set the scene's Contact Friction μ"),
)


def object_message(msg: str, objects, walls=()) -> str:
    """A core message in the panel's words: ``bodies[i].dipoles[j]`` → ``Object 'name' dipole #j`` (and
    ``contacts[j]`` → ``contact sphere #j``, ``walls[k]`` → ``Object 'name' (wall)``), a leading
    ``bodies[i].field: …`` → ``Object 'name': <the field's UI name and where it is>: …``, a scene setting's
    path → its UI name and panel, and the scene-file settings of :data:`_PANEL_PHRASES` the same."""
    def name(i: int) -> str:
        return f"Object '{objects[i].name}'" if i < len(objects) else f"bodies[{i}]"

    for phrase, ui in _PANEL_PHRASES:
        msg = msg.replace(phrase, ui)
    names = {o.name for o in objects} | {w.name for w in walls}
    m = re.match(r"'([^']+)'", msg)
    if m and m[1] in names:          # the core names a body by its name alone: say it is the object
        msg = "Object " + msg

    msg = re.sub(r"bodies\[(\d+)\]\.dipoles\[(\d+)\]\.?", lambda m: f"{name(int(m[1]))} dipole #{m[2]}"
                 + (" " if m[0].endswith(".") else ""), msg)
    msg = re.sub(r"bodies\[(\d+)\]\.contacts\[(\d+)\]\.?", lambda m: f"{name(int(m[1]))} contact sphere #{m[2]}"
                 + (" " if m[0].endswith(".") else ""), msg)
    msg = re.sub(r"walls\[(\d+)\]\.?", lambda m: (f"Object '{walls[int(m[1])].name}' (wall)" if int(m[1]) < len(walls)
                                                  else m[0].rstrip(".")) + (" " if m[0].endswith(".") else ""), msg)
    m = re.match(r"bodies\[(\d+)\]\.?(\w*)", msg)
    if m:
        field = _BODY_FIELDS.get(m[2], m[2])
        rest = msg[m.end():]
        rest = rest.lstrip(".") if not field or not rest.startswith(".") else " " + rest[1:]
        return f"{name(int(m[1]))}: {field}{rest}" if field else f"{name(int(m[1]))}{rest}"
    for pattern, ui in _PANEL_NAMES:
        m = re.match(pattern + r"(?=[:\[. ]|$)", msg)
        if m:
            return ui + msg[m.end():]
    return msg


# ------------------------------------------------------------------------------------------ import

def _shape_mesh(shape):
    """Vertices (N,3) and faces of a display mesh for a core shape (body coordinates, m)."""
    if isinstance(shape, inertia.Mesh):
        return shape.vertices, shape.faces
    if isinstance(shape, inertia.Sphere):
        return _uv_sphere(np.full(3, shape.radius), np.eye(3), shape.center)
    if isinstance(shape, inertia.Ellipsoid) and not isinstance(shape, inertia.Cuboid):
        return _uv_sphere(shape.semi_axes, shape.axes, shape.center)
    if isinstance(shape, inertia.Cuboid):
        c = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
        V = (c * shape.half_sides) @ shape.axes + shape.center
        F = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
        return V, F
    if isinstance(shape, inertia.Cylinder):
        return _cylinder(shape.radius, shape.half_length, shape.axis, shape.center)
    if isinstance(shape, inertia.Rod):
        r = max(shape.half_length * 0.02, 1e-4)
        return _cylinder(r, shape.half_length, shape.direction, shape.center)
    r = 0.01  # point mass: a small ball
    return _uv_sphere(np.full(3, r), np.eye(3), shape.center)


def _uv_sphere(semi, axes, center, n=16):
    th = np.linspace(0, np.pi, n // 2 + 1)[1:-1]
    ph = np.linspace(0, 2 * np.pi, n, endpoint=False)
    pts = [(0, 0, -1)] + [(np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), -np.cos(t)) for t in th for p in ph] + [
        (0, 0, 1)]
    V = (np.array(pts) * semi) @ np.asarray(axes) + center
    F = []
    rings = len(th)
    for j in range(n):
        F.append((0, 1 + (j + 1) % n, 1 + j))
    for i in range(rings - 1):
        for j in range(n):
            a, b = 1 + i * n + j, 1 + i * n + (j + 1) % n
            F.append((a, b, b + n, a + n))
    top = len(pts) - 1
    for j in range(n):
        F.append((top, 1 + (rings - 1) * n + j, 1 + (rings - 1) * n + (j + 1) % n))
    return V, F


def _cylinder(radius, half, axis, center, n=24):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.array([1.0, 0, 0]) if abs(axis[0]) < 0.9 else np.array([0, 1.0, 0])
    e1 = np.cross(axis, helper)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    ang = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ring = np.cos(ang)[:, None] * e1 + np.sin(ang)[:, None] * e2
    V = np.vstack([ring * radius - half * axis, ring * radius + half * axis]) + center
    F = [tuple(range(n - 1, -1, -1)), tuple(range(n, 2 * n))]
    F += [(j, (j + 1) % n, n + (j + 1) % n, n + j) for j in range(n)]
    return V, F


def _new_mesh_object(name, V, F, collection, color=None):
    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(map(float, v)) for v in V], [], [tuple(int(i) for i in f) for f in F])
    me.update()
    obj = bpy.data.objects.new(name, me)
    collection.objects.link(obj)
    if color is not None:
        mat = bpy.data.materials.new(f"{name}_PEM")
        mat.diffuse_color = tuple(float(c) for c in color[:4]) if len(color) >= 4 else (*color[:3], 1.0)
        me.materials.append(mat)
    return obj


#: The scene's PEM settings an import sets (Scene.pem property names), and the scene's own ones it may set.
IMPORTED_SETTINGS = ("use_scene_gravity", "gravity", "field_mode", "field", "field_b1", "field_b2", "field_omega",
                     "mu0", "friction", "restitution", "contact_friction", "contact_model", "use_periodic", "box",
                     "method", "step_mode", "dt", "motion_samples")
IMPORTED_SCENE_SETTINGS = (("render", "fps", "Frame Rate"), ("render", "fps_base", "Frame Rate Base"),
                           (None, "frame_end", "End Frame"))


def settings_snapshot(scene) -> dict:
    """{UI name: value} of the settings an import may change (:data:`IMPORTED_SETTINGS`, frame rate and range)."""
    sp = scene.pem
    out = {sp.bl_rna.properties[name].name: _plain(getattr(sp, name)) for name in IMPORTED_SETTINGS}
    for owner, name, ui in IMPORTED_SCENE_SETTINGS:
        out[ui] = getattr(getattr(scene, owner) if owner else scene, name)
    return out


def _plain(value):
    return tuple(value) if np.ndim(value) else value


def changed_settings(before: dict, after: dict) -> list:
    """UI names of the settings whose values differ between two :func:`settings_snapshot`."""
    return [name for name, value in after.items() if before.get(name) != value]


def build_objects(core: Scene, context, collection=None, adapt_scene: bool = False,
                  replace_settings: bool = True) -> list:
    """Create Blender objects for a core scene (import): meshes, pivots, dipoles and, with ``replace_settings``,
    the scene's PEM settings (:data:`IMPORTED_SETTINGS`). Returns the objects.

    Mass properties are carried over exactly as the core resolves them (Inertia: Manual), so
    a bake of the imported scene reproduces the core's run of the file.
    """
    core = core.checked()
    scene = context.scene
    unit = unit_scale(scene)
    collection = collection or scene.collection
    made = []
    keyed = []   # (object, tabulated motion): keyed once the frame rate and range are settled
    for body in core.bodies:
        U = np.asarray(body.orientation)
        R = U.T
        P = np.asarray(body.position) / unit
        parts = [_shape_mesh(s) for s in body.shapes] if body.shapes else []
        if not parts and body.contacts:   # a body given by its mass properties: show what it stands on
            parts = [_cylinder(c.radius, 0.05 * c.radius, c.axis, np.asarray(c.center, float))
                     if isinstance(c, ContactRim) else _uv_sphere(np.full(3, c.radius), np.eye(3), c.center, n=32)
                     for c in body.contacts]
        if not parts and body.role in ("pendulum", "free") and body.mass_properties is not None:
            com = np.asarray(body.mass_properties.center_of_mass)
            parts = [_uv_sphere(np.full(3, 0.02 * max(1.0, np.linalg.norm(com) * 5)), np.eye(3), com)]
        if not parts:
            parts = [_cylinder(0.01, 0.005, (0, 0, 1), np.zeros(3))]
        V_all, F_all, off = [], [], 0
        for V, F in parts:
            V_all.append(np.asarray(V, float) / unit)
            F_all += [tuple(i + off for i in f) for f in F]
            off += len(V)
        obj = _new_mesh_object(body.name, np.vstack(V_all), F_all, collection, body.color)
        Mw = np.eye(4)
        Mw[:3, :3] = R
        Mw[:3, 3] = P
        set_exact_world(obj, Mw)
        p = obj.pem
        p.enabled = True
        p.role = {v: k for k, v in ROLE_TO_CORE.items()}[body.role]
        for d in body.dipoles:
            item = p.dipoles.add()
            set_exact(item, "position", tuple(np.asarray(d.position) / unit))
            set_exact(item, "moment", tuple(np.asarray(d.moment, float)))
        for c in body.contacts:  # object coordinates are the body's, in BU (the object is unscaled)
            item = p.contacts.add()
            set_exact(item, "center", tuple(np.asarray(c.center) / unit))
            set_exact(item, "radius", c.radius / unit)
            if isinstance(c, ContactRim):
                item.kind = "RIM"
                set_exact(item, "axis", tuple(np.asarray(c.axis, float)))
        if body.restitution is not None:
            p.use_restitution = True
            set_exact(p, "restitution", body.restitution)
        if body.contact_friction is not None:
            p.use_contact_friction = True
            set_exact(p, "contact_friction", body.contact_friction)
        if body.role in ("pendulum", "free"):
            mp = body.resolved_mass_properties()
            p.inertia_source = "MANUAL"
            p.mass_mode = "MASS"
            set_exact(p, "mass", mp.mass / unit**3)
            set_exact(p, "manual_com", tuple(np.asarray(mp.center_of_mass) / unit))
            I = mp.inertia
            set_exact(p, "manual_inertia", (I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]))
            set_exact(p, "angular_velocity", tuple(np.asarray(body.angular_velocity, float)))
            if body.hinge is not None:
                p.use_hinge = True
                set_exact(p, "hinge_axis", tuple(np.asarray(body.hinge, float)))
        if body.translating:
            p.translate = True
            set_exact(p, "velocity", tuple(np.asarray(body.velocity, float) / unit))
        if body.role == "pendulum":
            piv = bpy.data.objects.new(f"{body.name}_pivot", None)
            piv.empty_display_type = "SPHERE"
            piv.empty_display_size = 0.02 / unit
            collection.objects.link(piv)
            set_exact_world(piv, np.block([[np.eye(3), P[:, None]], [np.zeros((1, 3)), np.ones((1, 1))]]))
            p.pivot_mode = "OBJECT"
            p.pivot_object = piv
            if body.pivot_motion is not None:
                keyed.append((piv, _keys_of(body.pivot_motion, core.settings.t_end)))
        if body.role == "driven":
            m = body.motion
            if isinstance(m, (TabulatedMotion, Oscillation, UniformRotation)):
                p.motion = "ANIMATION"
                keyed.append((obj, _keys_of(m, core.settings.t_end, U)))
            elif isinstance(m, ConstantVelocity):
                p.motion = "CONSTANT_VELOCITY"
                set_exact(p, "velocity", tuple(np.asarray(m.velocity, float) / unit))
            else:
                p.motion = "ORBIT"
                set_exact(p, "orbit_center", tuple(np.asarray(m.center) / unit))
                set_exact(p, "orbit_r1", tuple(np.asarray(m.r1) / unit))
                set_exact(p, "orbit_r2", tuple(np.asarray(m.r2) / unit))
                set_exact(p, "orbit_omega", m.angular_velocity)
                set_exact(p, "orbit_phase", m.phase)
        made.append(obj)
    made += [_wall_object(w, unit, collection, core.contact_model == "surface") for w in core.walls]
    if replace_settings:
        _apply_settings(core, scene)
    if adapt_scene:  # only when asked: the frame rate and range are the user's
        _adapt_frames(core, scene)
    if keyed:
        _key_motions(scene, keyed, unit, replace_settings)
    return made


def _keys_of(motion, t_end: float, U0=None) -> TabulatedMotion:
    """The table an import keys for a motion: a table itself, an exact motion (Oscillation, UniformRotation) sampled
    to past ``t_end`` s (:meth:`~pem_physics.model.analytic.Oscillation.table`: Blender's animation holds keys, so
    the bake follows the exact motion to the spline's ~2e-7 of its amplitude); U0 a driven body's orientation."""
    if isinstance(motion, TabulatedMotion):
        return motion
    return motion.table(t_end, U0 if isinstance(motion, UniformRotation) else None)


#: Most samples a frame an import sets Motion Samples to (where a table's times need more, it sets the densest).
MAX_IMPORT_SAMPLES = 64


def _key_motions(scene, keyed, unit: float, replace_settings: bool) -> None:
    """Key each (object, tabulated motion) of an import: Bezier keys that are the table's own spline (t = 0 at the
    simulation's start frame; :func:`.keyframes.write_spline_keys`), location (BU) and, for a driven magnet with
    orientations, rotation_quaternion — the table's quaternion is Blender's (body → world).

    With ``replace_settings``, Motion Samples is set so that the bake's sub-frame samples include every table
    time (:func:`import_samples`): a spline through those samples *is* the file's spline (a C² piecewise cubic is
    its own interpolant on a finer grid holding its knots), so the bake follows the file's motion to the keys'
    single precision, not to a resampling error."""
    fps = scene.render.fps / scene.render.fps_base
    start = simulation_range(scene)[0]
    for obj, motion in keyed:
        t, y, _, has_rot = motion.spline_table()
        slopes = motion.spline_slopes() / fps          # per frame
        channels = [("location", y[:, :3] / unit, slopes[:, :3] / unit)]
        if has_rot:
            obj.rotation_mode = "QUATERNION"
            channels.append(("rotation_quaternion", y[:, 3:], slopes[:, 3:]))
        keyframes.write_spline_keys(obj, start + t * fps, channels, action_name=f"{obj.name}_Motion")
    if replace_settings:
        scene.pem.motion_samples = import_samples([m.times for _, m in keyed], fps)


def import_samples(tables, fps: float) -> int:
    """Samples a frame for imported tables (times (K,) s each): the fewest whose sub-frames hold every table time
    (to 1e-9 of a sub-frame), up to :data:`MAX_IMPORT_SAMPLES`; failing that, enough for the densest table's
    rate."""
    frames = np.concatenate([np.asarray(t, float) for t in tables]) * fps
    for n in range(1, MAX_IMPORT_SAMPLES + 1):
        if np.all(np.abs(frames * n - np.round(frames * n)) < 1e-9 * np.maximum(1.0, np.abs(frames * n))):
            return n
    return min(MAX_IMPORT_SAMPLES, max(math.ceil(1.0 / np.min(np.diff(t)) / fps - 1e-9) for t in tables))


def simulation_range(scene) -> tuple[int, int]:
    """(first frame, last frame) the scene's simulation covers: the scene's frame range, or the simulation's own
    (``Scene.pem.use_scene_range`` off), as a Blender point cache has its own start and end."""
    sp = scene.pem
    if sp.use_scene_range:
        return scene.frame_start, scene.frame_end
    return sp.frame_start, sp.frame_end


#: Size (m) of the display mesh of an imported plane wall, and the length of an imported cylinder wall's (both are
#: infinite in the simulation).
WALL_DISPLAY_SIZE = 1.0


def _wall_object(w, unit: float, collection, surface: bool):
    """A Wall object for a core StaticWall (import): a mesh that :func:`.contacts.wall_geometry` fits back to
    the same wall (plane: a square whose local +Z is the normal; sphere, cylinder along local Z, box)."""
    R = np.eye(3)
    if w.kind == "plane":
        n = np.asarray(w.normal, float)
        e1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
        e1 /= np.linalg.norm(e1)
        R = np.column_stack([e1, np.cross(n, e1), n])
        h = 0.5 * WALL_DISPLAY_SIZE
        V, F, at = np.array([[-h, -h, 0.0], [h, -h, 0.0], [h, h, 0.0], [-h, h, 0.0]]), [(0, 1, 2, 3)], w.point
    elif w.kind == "sphere":
        (V, F), at = _uv_sphere(np.full(3, w.radius), np.eye(3), np.zeros(3), n=32), w.center
    elif w.kind == "cylinder":
        d = np.asarray(w.direction, float)
        e1 = np.cross(d, [1.0, 0.0, 0.0] if abs(d[0]) < 0.9 else [0.0, 1.0, 0.0])
        e1 /= np.linalg.norm(e1)
        R = np.column_stack([e1, np.cross(d, e1), d])
        (V, F), at = _cylinder(w.radius, 0.5 * WALL_DISPLAY_SIZE, (0, 0, 1), np.zeros(3), n=32), w.point
    else:
        R = np.eye(3) if w.axes is None else np.asarray(w.axes, float).T
        c = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * w.half_sizes
        V, at = c, w.center
        F = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    obj = _new_mesh_object(w.name, np.asarray(V, float) / unit, F, collection)
    Mw = np.eye(4)
    Mw[:3, :3] = R
    Mw[:3, 3] = np.asarray(at, float) / unit
    set_exact_world(obj, Mw)
    p = obj.pem
    p.enabled, p.role, p.wall_shape = True, "WALL", w.kind.upper()
    p.wall_inside = bool(w.inside)
    if w.restitution is not None:
        p.use_restitution = True
        set_exact(p, "restitution", w.restitution)
    if w.contact_friction is not None:
        p.use_contact_friction = True
        set_exact(p, "contact_friction", w.contact_friction)
    if surface:
        p.friction_law = (w.friction_law or "coulomb").upper()
        if w.gliding_friction is not None:
            set_exact(p, "gliding_friction", w.gliding_friction)
        for key in ("rolling_resistance", "spin_resistance"):
            set_exact(p, key, (getattr(w, key) or 0.0) / unit)
    return obj


def _apply_settings(core: Scene, scene) -> None:
    """The scene's PEM settings (:data:`IMPORTED_SETTINGS`) from a core scene."""
    unit = unit_scale(scene)
    sp = scene.pem
    sp.use_scene_gravity = False
    set_exact(sp, "gravity", tuple(np.asarray(core.gravity, float)))
    if core.rotating_field is not None:
        sp.field_mode = "ROTATING"
        rf = core.rotating_field
        set_exact(sp, "field_b1", tuple(rf.b1))
        set_exact(sp, "field_b2", tuple(rf.b2))
        set_exact(sp, "field_omega", rf.angular_velocity)
    elif np.any(core.field):
        sp.field_mode = "UNIFORM"
        set_exact(sp, "field", tuple(np.asarray(core.field, float)))
    else:
        sp.field_mode = "NONE"
    set_exact(sp, "mu0", core.mu0)
    set_exact(sp, "restitution", core.restitution)
    set_exact(sp, "contact_friction", core.contact_friction)
    sp.contact_model = core.contact_model.upper()
    set_exact(sp, "friction", core.friction)
    sp.use_periodic = core.periodic_box is not None
    if core.periodic_box is not None:
        set_exact(sp, "box", tuple(np.asarray(core.periodic_box) / unit))
    st = core.settings
    sp.method = st.method.upper().replace("-", "_")
    sp.step_mode = "DT"
    set_exact(sp, "dt", st.dt)


def _adapt_frames(core: Scene, scene) -> None:
    """A frame rate the file's dt divides (the scene's own if it does) and a frame range of the file's duration."""
    st = core.settings
    for fps in (scene.render.fps, 24, 25, 30, 50, 60, 20, 100):
        if steps_per_frame(fps, st.dt):
            scene.render.fps, scene.render.fps_base = fps, 1.0
            break
    fps = scene.render.fps / scene.render.fps_base
    scene.frame_end = scene.frame_start + max(1, int(math.ceil(st.t_end * fps - 1e-9)))


def _to_matrix(M: np.ndarray):
    import mathutils

    return mathutils.Matrix([list(map(float, row)) for row in M])
