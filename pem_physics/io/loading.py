"""Scene and mesh loading by file type: the one entry point the CLI, the API and the add-on share."""

from __future__ import annotations

import numpy as np

from ..errors import PemError, ValidationError
from .files import MAX_MESH_BYTES, checked_input, read_input_text


def load_scene(path: str):
    """A Scene from a TOML scene file, a PEM UDF file, a Python file defining ``scene``, or ``example:NAME``."""
    if path.startswith("example:"):
        from .. import examples

        return examples.build(path.split(":", 1)[1])
    p = checked_input(path, "scene file")   # a regular file of a sane size (a FIFO would block)
    suffix = p.suffix.lower()
    if suffix == ".toml":
        from .scenefile import load_scene as load_toml

        return load_toml(p)
    if suffix == ".udf":
        from .udf_scene import load_scene as load_udf

        return load_udf(p)
    if suffix == ".py":
        namespace: dict = {"__file__": str(p), "__name__": "pem_scene"}
        exec(compile(read_input_text(p, "Python scene file"), str(p), "exec"), namespace)
        if "scene" not in namespace:
            raise ValidationError(path, "a Python scene file must define a variable named 'scene'")
        return namespace["scene"]
    raise ValidationError(path, f"unknown scene file type {suffix!r} (expected .toml, .udf or .py)")


def load_mesh(path: str):
    """Vertices (V,3) and triangles (F,3) from OBJ/STL/PLY/OFF via trimesh (duplicate vertices merged)."""
    try:
        import trimesh
    except ImportError as err:
        raise PemError("reading mesh files needs the 'trimesh' package (pip install trimesh)") from err
    checked_input(path, "mesh file", MAX_MESH_BYTES)
    try:
        # unprocessed first: trimesh's processing drops NaN vertices and bad faces silently
        mesh = trimesh.load(path, force="mesh", process=False)
    except Exception as err:  # noqa: BLE001 - trimesh raises anything from ValueError to KeyError on bad files
        raise ValidationError(path, f"not a mesh file trimesh can read ({type(err).__name__}: {err}); "
                                    "OBJ, STL, PLY and OFF are read") from None
    faces = getattr(mesh, "faces", None)
    if faces is None or len(faces) == 0:
        raise ValidationError(path, "the file holds no triangles")
    V, F = np.asarray(mesh.vertices, dtype=float), np.asarray(faces, dtype=np.int64)
    bad = np.flatnonzero(~np.isfinite(V).all(axis=1))
    if bad.size:
        raise ValidationError(path, f"vertex {int(bad[0]) + 1} is not a finite point ({V[bad[0]].tolist()})")
    if F.min() < 0 or F.max() >= len(V):
        raise ValidationError(path, f"a face refers to vertex {int(F.max() if F.max() >= len(V) else F.min()) + 1}; "
                                    f"the file has {len(V)} vertices")
    mesh.merge_vertices()   # what processing does that we need: STL's per-triangle corners become shared vertices
    return np.asarray(mesh.vertices, dtype=float), np.asarray(mesh.faces, dtype=np.int64)
