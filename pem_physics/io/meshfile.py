"""Mesh files (OBJ, STL, PLY, OFF) read into vertices and triangles: the one reader of the ``inertia`` command and
of scene files' mesh shapes. Whatever the file holds, the result is a clear :class:`ValidationError` naming it or
the mesh: a FIFO or a device is not read, a file that is no mesh or whose numbers a double cannot integrate is
refused, and trimesh's own failures (a missing optional package included) are reported as what they mean."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import PemError, ValidationError
from .files import MAX_MESH_BYTES, checked_input

#: Largest coordinate a mesh may have: its volume integrals (coordinates cubed, fifth powers for the inertia)
#: must stay finite in double precision.
MAX_COORDINATE = 1e50


def _check_stl(p: Path, label: str) -> None:
    """Refuse an STL file that is neither ASCII (it starts with ``solid`` and is text) nor a binary STL whose size is
    the one its header declares (80 bytes, a triangle count N, 50 bytes a triangle): what else trimesh would try to
    decode as text, slowly and with an unrelated error."""
    size = p.stat().st_size
    with open(p, "rb") as f:
        head = f.read(84)
    if head[:5].lower() == b"solid" and b"\0" not in head:
        return
    n = int.from_bytes(head[80:84], "little") if len(head) == 84 else None
    if n is None or size != 84 + 50 * n:
        declared = "" if n is None else f"declaring {n} triangles should be 84 + 50·{n} = {84 + 50 * n} bytes, "
        raise ValidationError(label, f"not an STL file: a binary STL {declared}this file is {size} bytes and does "
                                     "not start with 'solid' (an ASCII STL); export the mesh again")


def read_mesh(path, label: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V,3) and triangles (F,3) of the mesh file ``path`` (duplicate vertices merged); ``label`` names
    it in messages (default the path)."""
    label = str(path) if label is None else label
    try:
        import trimesh
    except ImportError as err:
        raise PemError(f"{label}: reading mesh files needs the 'trimesh' package (pip install trimesh)") from err
    p = Path(path)
    try:
        checked_input(p, "mesh file", MAX_MESH_BYTES)   # a regular file of a sane size: a FIFO would block
    except ValidationError as err:
        raise ValidationError(label, err.message) from None
    if p.suffix.lower() == ".stl":
        _check_stl(p, label)
    try:
        # unprocessed first: trimesh's processing drops NaN vertices and bad faces silently
        mesh = trimesh.load(str(p), force="mesh", process=False)
    except ImportError as err:  # a format's optional package: name it, not the file
        package = err.name or "trimesh[easy]"
        raise ValidationError(label, f"reading this file needs the optional package {package!r} (pip install "
                                     f"{package}), or save the mesh as OBJ or binary STL") from None
    except Exception as err:  # noqa: BLE001 - trimesh raises anything
        # the reader's own words may quote the file: only what kind of fault it was (an IndexError is a face that
        # names a vertex the file does not have)
        what = ("a face names a vertex the file does not have" if isinstance(err, IndexError) else
                f"the reader stopped with {type(err).__name__}")
        raise ValidationError(label, f"not a mesh file trimesh can read ({what}); OBJ, STL, PLY and OFF are read: "
                                     "export the mesh again") from None
    faces, verts = getattr(mesh, "faces", None), getattr(mesh, "vertices", None)
    if faces is None or verts is None or len(faces) == 0:
        raise ValidationError(label, "the file holds no triangles: is it a mesh (OBJ, STL, PLY, OFF)?")
    V, F = np.asarray(verts, dtype=float), np.asarray(faces)
    if V.ndim != 2 or V.shape[1] != 3 or F.ndim != 2 or F.shape[1] != 3 or not np.issubdtype(F.dtype, np.integer):
        raise ValidationError(label, f"not a triangle mesh (vertices of shape {V.shape}, faces of shape {F.shape}): "
                                     "is it a mesh (OBJ, STL, PLY, OFF)?")
    F = F.astype(np.int64)
    bad = np.flatnonzero(~np.isfinite(V).all(axis=1))
    if bad.size:
        raise ValidationError(label, f"vertex {int(bad[0]) + 1} is not a finite point ({V[bad[0]].tolist()})")
    big = float(np.abs(V).max(initial=0.0))
    if big > MAX_COORDINATE:
        raise ValidationError(label, f"coordinates up to {big:.3g}: too large for exact volume integrals in double "
                                     f"precision (at most {MAX_COORDINATE:g}); give the file in other units and scale "
                                     "it (a scene's mesh scale, or --scale)")
    if F.min() < 0 or F.max() >= len(V):
        raise ValidationError(label, f"a face refers to vertex {int(F.max() if F.max() >= len(V) else F.min()) + 1}; "
                                     f"the file has {len(V)} vertices")
    mesh.merge_vertices()   # what processing does that we need: STL's per-triangle corners become shared vertices
    return np.asarray(mesh.vertices, dtype=float), np.asarray(mesh.faces, dtype=np.int64)
