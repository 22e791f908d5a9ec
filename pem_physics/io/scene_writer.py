"""Writing TOML scene files (format ``pem-scene``, version 1; read by :mod:`.scenefile`): a
:class:`~pem_physics.model.Scene` as the document :func:`scene_to_dict`, its text :func:`dumps`, a file
:func:`save_scene` (written atomically). Files are written in SI units (all units 1); mesh shapes read from a file
keep a reference to it while their vertices are unchanged. TOML has no writer in the standard library: the small
emitter is at the end of this module.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..errors import ValidationError
from ..model import inertia
from ..model.analytic import Oscillation, UniformRotation
from ..model.motion import TabulatedMotion
from ..model.scene import Body, ConstantVelocity, ContactRim, Scene, StaticWall
from .scenefile_keys import FORMAT, FORMAT_VERSION, SHAPE_KEYS
from .scenefile_shapes import MeshSource, _digest

__all__ = ["scene_to_dict", "dumps", "save_scene"]


def _floats(a) -> list:
    return np.asarray(a, dtype=float).tolist()


def scene_to_dict(scene: Scene, base_dir: Path | None = None) -> dict:
    """The TOML document (SI units) of ``scene``. Mesh files are referenced relative to ``base_dir`` if given."""
    s = scene.checked()
    doc: dict = {"format": FORMAT, "version": FORMAT_VERSION}
    if isinstance(s.name, str) and s.name:
        doc["name"] = s.name
    doc.update(units={"length": 1.0, "mass": 1.0, "time": 1.0, "ampere": 1.0}, gravity=_floats(s.gravity),
               mu0=float(s.mu0), friction=float(s.friction))
    if s.periodic_box is not None:
        doc["periodic_box"] = _floats(s.periodic_box)
    field: dict = {"uniform": _floats(s.field)}
    if s.rotating_field is not None:
        r = s.rotating_field
        field["rotating"] = {"b1": _floats(r.b1), "b2": _floats(r.b2),
                             "angular_velocity": float(r.angular_velocity), "phase": float(r.phase)}
    doc["field"] = field
    st = s.settings
    settings = {"method": st.method, "dt": float(st.dt), "t_end": float(st.t_end)}
    if st.record_interval is not None:
        settings["record_interval"] = float(st.record_interval)
    settings.update(rtol=float(st.rtol), atol=float(st.atol))
    doc["settings"] = settings
    doc["bodies"] = [_body_to_dict(b, f"bodies[{i}]", base_dir) for i, b in enumerate(s.bodies)]
    if s.has_contacts or s.walls or s.pair_restitution or s.restitution != 1.0:
        doc["restitution"] = float(s.restitution)
    if s.pair_restitution:
        doc["pair_restitution"] = [{"bodies": list(p.names), "restitution": float(p.restitution)}
                                   for p in s.pair_restitution]
    if s.walls:
        doc["walls"] = [_wall_to_dict(w) for w in s.walls]
    if s.contact_friction:
        doc["contact_friction"] = float(s.contact_friction)
    if s.contact_model != "impacts":
        doc["contact_model"] = s.contact_model
    if s.placement_tolerance:
        doc["placement_tolerance"] = float(s.placement_tolerance)
    return doc


def _wall_to_dict(w: StaticWall) -> dict:
    out: dict = {"kind": w.kind, "name": w.name}
    if w.restitution is not None:
        out["restitution"] = float(w.restitution)
    if w.contact_friction is not None:
        out["contact_friction"] = float(w.contact_friction)
    if w.friction_law is not None:
        out["friction_law"] = w.friction_law
    for key in ("gliding_friction", "rolling_resistance", "spin_resistance"):
        if getattr(w, key) is not None:
            out[key] = float(getattr(w, key))
    if w.kind == "plane":
        out.update(point=_floats(w.point), normal=_floats(w.normal))
    elif w.kind == "sphere":
        out.update(center=_floats(w.center), radius=float(w.radius))
    elif w.kind == "cylinder":
        out.update(point=_floats(w.point), direction=_floats(w.direction), radius=float(w.radius))
    else:
        out.update(center=_floats(w.center), half_sizes=_floats(w.half_sizes))
        if w.axes is not None:
            out["axes"] = _floats(w.axes)
    if w.kind != "plane":
        out["inside"] = bool(w.inside)
    return out


def _body_to_dict(b: Body, path: str, base_dir) -> dict:
    out: dict = {"name": b.name, "role": b.role}
    out["pivot" if b.role == "pendulum" else "position"] = _floats(b.position)
    out["axes"] = _floats(b.orientation)
    if b.moving:
        out["angular_velocity"] = _floats(b.angular_velocity)
    if b.translating:
        out["translate"] = True
        out["velocity"] = _floats(b.velocity)
    if b.hinge is not None:
        out["hinge"] = _floats(b.hinge)
    if b.color is not None:
        out["color"] = [float(x) for x in b.color]
    if b.mass_properties is not None:
        mp = b.mass_properties
        out["mass_properties"] = {"mass": float(mp.mass), "center_of_mass": _floats(mp.center_of_mass),
                                  "inertia": _floats(mp.inertia)}
    if b.motion is not None:
        out["motion"] = _motion_to_dict(b.motion)
    if b.pivot_motion is not None:
        out["pivot_motion"] = _motion_to_dict(b.pivot_motion)
    if b.shapes:
        out["shapes"] = [_shape_to_dict(sh, f"{path}.shapes[{k}]", base_dir) for k, sh in enumerate(b.shapes)]
    if b.dipoles:
        out["dipoles"] = [{"position": _floats(d.position), "moment": _floats(d.moment)} for d in b.dipoles]
    if b.restitution is not None:
        out["restitution"] = float(b.restitution)
    if b.contact_friction is not None:
        out["contact_friction"] = float(b.contact_friction)
    if b.contacts:
        out["contacts"] = [{"center": _floats(c.center), "radius": float(c.radius),
                            **({"axis": _floats(c.axis)} if isinstance(c, ContactRim) else {})} for c in b.contacts]
    return out


def _motion_to_dict(m) -> dict:
    """A driven body's or a pivot's motion as the scene file's table (a checked motion: centres filled in)."""
    if isinstance(m, ConstantVelocity):
        return {"kind": "constant_velocity", "velocity": _floats(m.velocity)}
    if isinstance(m, TabulatedMotion):
        return _tabulated_to_dict(m)
    if isinstance(m, Oscillation):
        out = {"kind": "oscillation", "amplitudes": _floats(m.amplitudes),
               "angular_frequencies": _floats(m.angular_frequencies)}
        if m.phases is not None:
            out["phases"] = _floats(m.phases)
        if m.center is not None:
            out["center"] = _floats(m.center)
        return out
    if isinstance(m, UniformRotation):
        out = {"kind": "uniform_rotation", "axis": _floats(m.axis), "angular_velocity": float(m.angular_velocity)}
        if m.center is not None:
            out["center"] = _floats(m.center)
        return out
    return {"kind": "elliptic_orbit", "center": _floats(m.center), "r1": _floats(m.r1), "r2": _floats(m.r2),
            "angular_velocity": float(m.angular_velocity), "phase": float(m.phase)}


def _tabulated_to_dict(m: TabulatedMotion) -> dict:
    out = {"kind": "tabulated", "times": _floats(m.times), "positions": _floats(m.positions)}
    if m.orientations is not None:
        out["orientations"] = _floats(m.orientations)
    return out


def _shape_to_dict(sh, path: str, base_dir) -> dict:
    kind = getattr(sh, "kind", None)
    if kind not in SHAPE_KEYS or not isinstance(sh, inertia.SHAPES[kind]):
        raise ValidationError(path, f"cannot write a shape of type {type(sh).__name__} to a scene file")
    if kind == "mesh":
        return _mesh_to_dict(sh, base_dir)
    out: dict = {"kind": kind, "mass": float(sh.mass), "center": _floats(sh.center)}
    if kind in ("sphere", "cylinder"):
        out["radius"] = float(sh.radius)
    if kind == "cylinder":
        out.update(half_length=float(sh.half_length), axis=_floats(sh.axis))
    if kind in ("ellipsoid", "cuboid"):
        out["semi_axes" if kind == "ellipsoid" else "half_sides"] = _floats(sh.semi_axes)
        out["axes"] = _floats(sh.axes[:2])
    if kind == "rod":
        out.update(half_length=float(sh.half_length), direction=_floats(sh.direction))
    return out


def _mesh_to_dict(sh, base_dir) -> dict:
    out: dict = {"kind": "mesh"}
    if isinstance(sh.name, str) and sh.name:
        out["name"] = sh.name
    if sh._density_arg is not None:
        out["density"] = float(sh._density_arg)
    else:
        out["mass"] = float(sh.mass)
    src = getattr(sh, "source", None)
    if isinstance(src, MeshSource) and src.digest == _digest(sh.vertices, sh.faces):
        file = src.file
        if base_dir is not None:
            try:
                file = Path(os.path.relpath(src.file, Path(base_dir).resolve()))
            except ValueError:  # another drive on Windows: keep the absolute path
                file = src.file
        out.update(file=file.as_posix(), scale=float(src.factor), axes=_floats(src.rotation.T),
                   offset=_floats(src.offset))
    else:
        out.update(vertices=_floats(sh.vertices), faces=np.asarray(sh.faces, dtype=np.int64).tolist())
    return out


def dumps(scene: Scene, base_dir: Path | None = None) -> str:
    """TOML text of ``scene`` (SI units; mesh file paths absolute unless ``base_dir`` is given)."""
    header = (f"# PEM scene file (format {FORMAT!r}, version {FORMAT_VERSION}); SI units.\n"
              "# Reference: docs/scene-format.md\n")
    return header + _emit_table(scene_to_dict(scene, base_dir), ())


def save_scene(scene: Scene, path) -> None:
    """Write ``scene`` as a TOML scene file, atomically; mesh files are referenced relative to its folder."""
    from .files import atomic_open

    if not isinstance(scene, Scene):
        raise ValidationError("scene", f"expected a pem_physics Scene, got {type(scene).__name__}")
    try:
        p = Path(path)
    except TypeError:
        raise ValidationError("path", f"expected a file name, got {type(path).__name__}") from None
    if p.is_dir():
        raise ValidationError(str(p), "is a folder: name the scene file to write in it (e.g. "
                                      f"{p / 'scene.toml'})")
    text = dumps(scene, base_dir=p.resolve().parent)
    with atomic_open(p, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


# ---------------------------------------------------------------------------- a small TOML emitter

_BARE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _key(k: str) -> str:
    return k if k and set(k) <= _BARE else _string_literal(k)


def _string_literal(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\n\t\r\b\f":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _value(x, indent: str = "") -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        f = float(x)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return repr(f)  # shortest text that reads back to the same double
    if isinstance(x, str):
        return _string_literal(x)
    if isinstance(x, (list, tuple)):
        if x and all(isinstance(e, (list, tuple)) for e in x):
            inner = indent + "    "
            return "[\n" + "".join(f"{inner}{_value(e, inner)},\n" for e in x) + indent + "]"
        return "[" + ", ".join(_value(e, indent) for e in x) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in x.items()) + "}"
    raise TypeError(f"cannot write {type(x).__name__} as TOML")


def _is_table_array(x) -> bool:
    return isinstance(x, list) and bool(x) and all(isinstance(e, dict) for e in x)


def _emit_table(d: dict, prefix: tuple) -> str:
    """Plain keys first, then sub-tables ``[a.b]``, then arrays of tables ``[[a.b]]`` (TOML requires that order)."""
    lines = [f"{_key(k)} = {_value(v)}\n" for k, v in d.items()
             if not isinstance(v, dict) and not _is_table_array(v)]
    text = "".join(lines)
    for k, v in d.items():
        if isinstance(v, dict):
            name = ".".join(_key(p) for p in prefix + (k,))
            text += f"\n[{name}]\n" + _emit_table(v, prefix + (k,))
    for k, v in d.items():
        if _is_table_array(v):
            name = ".".join(_key(p) for p in prefix + (k,))
            for item in v:
                text += f"\n[[{name}]]\n" + _emit_table(item, prefix + (k,))
    return text
