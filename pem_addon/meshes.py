"""A body's geometry from Blender and its mass properties: the evaluated triangles of its mesh and compound
parts, checks that name what is wrong with a mesh (overlapping parts, flipped normals), the mass properties
computed from them (stored on the object with a stamp of what they came from) and digests that tell when the
mesh changed."""

from __future__ import annotations

import hashlib
import warnings

import bpy
import numpy as np

from ..pem_physics.errors import PemError, ValidationError
from ..pem_physics.model import (
    inertia,
    mesh_parts,
)
from .messages import AddonError
from .units import affine_inverse, exact, initial_world, matrix, rotation_part, unit_scale

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
        inv = affine_inverse(matrix(obj.matrix_world))
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
