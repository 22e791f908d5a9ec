"""Scene and mesh loading by file type: the one entry point the CLI, the API and the add-on share."""

from __future__ import annotations

from ..errors import ValidationError
from .files import checked_input, read_input_text


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
    """Vertices (V,3) and triangles (F,3) from OBJ/STL/PLY/OFF, duplicate vertices merged
    (:func:`.meshfile.read_mesh`)."""
    from .meshfile import read_mesh

    return read_mesh(path)
