"""A scene file's shapes and mass properties (:mod:`.scenefile`): spheres, cylinders, ellipsoids, cuboids, rods,
points and meshes (a mesh file beside the scene, or vertices and faces inline), read in the file's units and checked
to give finite mass properties; a mesh file's :class:`MeshSource` lets the scene be written back referencing it."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np

from ..errors import ValidationError, join_path
from ..model import inertia
from ..model import validate as _validate
from .files import name_of_file
from .scenefile_keys import BODY_KEYS, MASS_PROPERTY_KEYS, MAX_MAGNITUDE, MESH_SUFFIXES, SHAPE_KEYS
from .scenefile_values import (
    Units,
    _choice,
    _describe,
    _get,
    _hint,
    _matrix,
    _number,
    _orientation,
    _string,
    _table,
    _vector,
)


def _mass_properties(d, path, u: Units) -> inertia.MassProperties:
    d = _table(d, path, MASS_PROPERTY_KEYS, parent=BODY_KEYS)
    mass = _get(d, "mass", path, lambda x, p: _number(x, p, u.M, nonnegative=True), expected="a number (mass)")
    com = _get(d, "center_of_mass", path, lambda x, p: _vector(x, p, u.L), default=np.zeros(3))
    p = f"{path}.inertia"
    if "inertia" not in d:
        raise ValidationError(p, "missing; expected a 3×3 tensor about the centre of mass (mass·length²)")
    raw = d["inertia"]
    if isinstance(raw, list) and len(raw) == 3 and not any(isinstance(x, list) for x in raw):
        I = np.diag(_vector(raw, p, u.inertia))  # principal moments along the body axes
    else:
        I = _matrix(raw, p, 3, u.inertia)
    scale = max(1.0, float(np.abs(I).max())) if np.all(np.isfinite(I)) else 1.0
    if not np.all(np.isfinite(I)) or not np.allclose(I, I.T, rtol=1e-9, atol=1e-12 * scale):
        raise ValidationError(p, "expected a symmetric tensor")
    I = 0.5 * (I + I.T)
    lam = np.linalg.eigvalsh(I)
    if lam[0] < -1e-9 * max(abs(lam[-1]), 1e-300):
        raise ValidationError(p, f"not a physical inertia tensor: negative principal moment {lam[0]:.6g}")
    inertia.check_physical(I, p)   # I1 + I2 ≥ I3, as a UDF's or the panel's tensor
    return inertia.MassProperties(mass, com, I)


def _shape(d, path, u: Units, base_dir):
    if not isinstance(d, dict):
        raise ValidationError(path, f"expected a table, got {_describe(d)}")
    kind = _get(d, "kind", path, lambda x, p: _choice(x, p, tuple(SHAPE_KEYS)),
                expected="one of " + ", ".join(map(repr, SHAPE_KEYS)))
    allowed = SHAPE_KEYS[kind]
    for key in d:
        if key not in allowed:
            owners = [k for k, keys in SHAPE_KEYS.items() if key in keys]
            hint = _hint(str(key), allowed, BODY_KEYS)
            if owners and not hint.startswith("did you"):
                hint = f"{key!r} is a key of a {' or '.join(owners)} shape"
            raise ValidationError(f"{path}.{key}", f"unknown key for a {kind} shape; {hint}")
    if "mass" in d and "density" in d:
        raise ValidationError(f"{path}.density", "give only one of mass or density")
    if "mass" not in d and "density" not in d:
        raise ValidationError(f"{path}.mass", "missing; give the shape's mass or its density")
    mass = _get(d, "mass", path, lambda x, p: _number(x, p, u.M, nonnegative=True), default=None)
    density = _get(d, "density", path, lambda x, p: _number(x, p, u.density, nonnegative=True), default=None)
    if kind == "mesh":
        return _mesh(d, path, u, base_dir, mass, density)

    def length(key):
        return _get(d, key, path, lambda x, p: _number(x, p, u.L, positive=True), expected="a positive length")

    def direction(key, default):
        return _get(d, key, path, lambda x, p: _vector(x, p, nonzero=True), default=np.array(default, float))

    def lengths(key):
        return _get(d, key, path, lambda x, p: _vector(x, p, u.L), expected="3 positive lengths")

    center = _get(d, "center", path, lambda x, p: _vector(x, p, u.L), default=np.zeros(3))
    common = dict(mass=mass, density=density, center=center)
    # Read every parameter first (their errors already carry full paths); the constructors then only
    # check relations between them, whose errors get the shape's path put in front.
    if kind == "sphere":
        make, args = inertia.Sphere, dict(radius=length("radius"))
    elif kind == "cylinder":
        make, args = inertia.Cylinder, dict(radius=length("radius"), half_length=length("half_length"),
                                            axis=direction("axis", (0, 0, 1)))
    elif kind in ("ellipsoid", "cuboid"):
        key = "semi_axes" if kind == "ellipsoid" else "half_sides"
        make = inertia.Ellipsoid if kind == "ellipsoid" else inertia.Cuboid
        args = {key: lengths(key),
                "axes": _get(d, "axes", path, _shape_axes, default=((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)))}
    elif kind == "rod":
        make, args = inertia.Rod, dict(
            half_length=_get(d, "half_length", path, lambda x, p: _number(x, p, u.L, nonnegative=True),
                             expected="a length ≥ 0"),
            direction=direction("direction", (0, 0, 1)))
    else:
        make, args = inertia.PointMass, {}
    try:
        shape = make(**args, **common)
    except ValidationError as err:
        raise err.at(path) from None
    return _finite_shape(shape, path)


def _finite_shape(shape, path):
    mp = shape.mass_properties()
    if not (math.isfinite(mp.mass) and np.all(np.isfinite(mp.center_of_mass)) and np.all(np.isfinite(mp.inertia))):
        raise ValidationError(path, "the shape's mass properties overflow (check its size, mass or density)")
    return shape


def _shape_axes(value, path):
    """Two (or three, u3 = u1 × u2) directions u1, u2 of an ellipsoid or cuboid."""
    if not isinstance(value, list) or len(value) not in (2, 3):
        raise ValidationError(path, f"expected 2 or 3 directions [u1, u2(, u3)], got {_describe(value)}")
    rows = [_vector(r, f"{path}[{i}]", nonzero=True) for i, r in enumerate(value)]
    if len(rows) == 3:
        u1, u2 = rows[0] / np.linalg.norm(rows[0]), rows[1] / np.linalg.norm(rows[1])
        u3 = np.cross(u1, u2)
        n = float(np.linalg.norm(u3))
        if not (n > 1e-9 and np.allclose(rows[2] / np.linalg.norm(rows[2]), u3 / n, atol=1e-6)):
            raise ValidationError(f"{path}[2]", "u3 must point along u1 × u2 (or leave it out)")
        rows = rows[:2]
    return rows


# ---------------------------------------------------------------------------- meshes

class MeshSource:
    """Where a Mesh shape came from, so that writing the scene back references the file.

    file: absolute path; factor: SI metres per file unit (units.length × scale);
    rotation: (3,3) mesh → body; offset: (3,) m; digest: fingerprint of the
    vertices and faces as loaded (an edited mesh is written inline instead).
    """

    def __init__(self, file: Path, factor: float, rotation: np.ndarray, offset: np.ndarray, digest: str):
        self.file, self.factor, self.rotation, self.offset, self.digest = file, factor, rotation, offset, digest


def _digest(V, F) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(np.ascontiguousarray(V, dtype=float).tobytes())
    h.update(np.ascontiguousarray(F, dtype=np.int64).tobytes())
    return h.hexdigest()


def _mesh(d, path, u: Units, base_dir, mass, density):
    if ("file" in d) == ("vertices" in d):
        raise ValidationError(f"{path}.file", "give either file (a mesh file) or vertices and faces (inline)")
    scale = _get(d, "scale", path, lambda x, p: _number(x, p, positive=True), default=1.0)
    U = _orientation(d, path)
    R = np.eye(3) if U is None else U.T  # rows of U are the mesh axes in body coordinates
    offset = _get(d, "offset", path, lambda x, p: _vector(x, p, u.L), default=np.zeros(3))
    factor = _number(scale, f"{path}.scale", u.L)
    if "file" in d:
        file = _mesh_path(d["file"], f"{path}.file", base_dir)
        V, F = _read_mesh_file(file, f"{path}.file")
        where = f"{path}.file"
        name = name_of_file(file, "mesh")   # a display name from a file name, made a valid one
    else:
        if "faces" not in d:
            raise ValidationError(f"{path}.faces", "missing; inline vertices need faces (arrays of vertex indices)")
        V, F = _inline_mesh(d["vertices"], d["faces"], path)
        where, name, file = path, "mesh", None
    name = _get(d, "name", path, _validate.name, default=name)   # as body and scene names: it reaches files
    with np.errstate(over="ignore", invalid="ignore"):
        V = (V * factor) @ R.T + offset
    if not np.all(np.abs(V) <= MAX_MAGNITUDE):
        raise ValidationError(where if file is not None else f"{path}.vertices",
                              f"scaled mesh coordinates exceed {MAX_MAGNITUDE:g} m")
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, by _finite_shape
            mesh = inertia.Mesh(V, F, mass=mass, density=density, name=name)
    except ValidationError as err:
        sub = (err.path[len("mesh"):] if err.path.startswith("mesh") else err.path).lstrip(".")
        if file is None:
            raise type(err)(join_path(where, sub), err.message) from None
        raise type(err)(where, f"{err.message} (at {sub} of the loaded triangles)" if sub else err.message) from None
    if file is not None:
        mesh.source = MeshSource(file, factor, R, offset, _digest(mesh.vertices, mesh.faces))
    return _finite_shape(mesh, path)


def _mesh_path(value, path, base_dir) -> Path:
    name = _string(value, path)
    p = Path(name)
    if not p.is_absolute():
        p = Path(base_dir if base_dir is not None else Path.cwd()) / p
    try:
        ok = p.exists()      # a FIFO or a device exists: read_mesh says what it is, not "no such file"
    except (OSError, ValueError) as err:  # e.g. an embedded NUL character
        raise ValidationError(path, f"not a usable file name: {err}") from None
    if not ok:
        raise ValidationError(path, f"no such mesh file: {p}")
    if p.is_dir():
        raise ValidationError(path, f"{p} is a folder, not a mesh file: name the file ({', '.join(MESH_SUFFIXES)})")
    if p.suffix.lower() not in MESH_SUFFIXES:
        raise ValidationError(path, f"unknown mesh file type {p.suffix!r} (expected {', '.join(MESH_SUFFIXES)})")
    return p.resolve()


def _read_mesh_file(file: Path, path: str):
    """Vertices (N,3) and triangles (F,3) of a mesh file (:func:`.meshfile.read_mesh`, duplicate vertices merged)."""
    from .meshfile import read_mesh

    return read_mesh(file, path)


def _inline_mesh(vertices, faces, path):
    if not isinstance(vertices, list) or not vertices:
        raise ValidationError(f"{path}.vertices", f"expected an array of [x, y, z] points, got {_describe(vertices)}")
    V = np.stack([_vector(x, f"{path}.vertices[{i}]") for i, x in enumerate(vertices)])
    if not isinstance(faces, list) or not faces:
        raise ValidationError(f"{path}.faces", f"expected an array of faces [i, j, k, ...], got {_describe(faces)}")
    tris = []
    for j, f in enumerate(faces):
        fp = f"{path}.faces[{j}]"
        if not isinstance(f, list) or len(f) < 3:
            raise ValidationError(fp, f"expected 3 or more vertex indices, got {_describe(f)}")
        for k, i in enumerate(f):
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(V):
                raise ValidationError(f"{fp}[{k}]", f"expected a vertex index 0…{len(V) - 1}, got {_describe(i)}")
        tris.extend((f[0], f[k], f[k + 1]) for k in range(1, len(f) - 1))  # fan-triangulate polygons
    return V, np.array(tris, dtype=np.int64)
