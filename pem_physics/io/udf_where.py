"""Errors in a PEM UDF file named as the file writes them: its file, line and column, the UDF field path.

A UDF file becomes a :class:`~pem_physics.model.Scene` (:mod:`.udf_scene`), whose check names items by the scene
model's paths (``bodies[0].orientation``, ``settings.dt``): words a user editing the ``.udf`` never wrote. While it
converts, :mod:`.udf_scene` keeps a :class:`Trail` — which ``simulation.pendulum[k]`` / ``simulation.body[k]`` and
which ``body[j]`` definition each scene body came from — and :func:`located` maps an error's path back to the UDF
field (``simulation.pendulum[0].orientation``, ``simulation.time.dt``) and, through
:meth:`.udf.UdfDocument.locate`, to the line and column where the file gives it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ValidationError
from .udf import UdfError

__all__ = ["Trail", "located", "udf_path"]


@dataclass
class Trail:
    """Where each scene body of a UDF file came from: ``placements[i]`` is scene body i's placement
    (``simulation.pendulum[0]``), ``definitions[i]`` its ``body[j]``, ``overrides[i]`` whether that definition's
    ``analysis`` block gives its mass properties (else its shapes do); ``keys`` maps a scene path to a UDF path
    where the reader found a value under another name (``position`` given as ``center``) or in a ``// pem:`` note
    (``bodies[1].name`` → ``simulation.pendulum[1] // pem: name``)."""

    placements: list = field(default_factory=list)
    definitions: list = field(default_factory=list)
    overrides: list = field(default_factory=list)
    keys: dict = field(default_factory=dict)

    def add(self, placement: str, definition: str, override: bool) -> None:
        self.placements.append(placement)
        self.definitions.append(definition)
        self.overrides.append(override)


#: Scene paths (their first steps) → the UDF field that gives them.
_SCENE = {
    "gravity": "simulation.gravity",
    "field": "simulation.magnetiField.constantField.B",
    "rotating_field.b1": "simulation.magnetiField.ellipticRotationField.B1",
    "rotating_field.b2": "simulation.magnetiField.ellipticRotationField.B2",
    "rotating_field.angular_velocity": "simulation.magnetiField.ellipticRotationField.angularVelocity",
    "rotating_field": "simulation.magnetiField",
    "mu0": "simulation.freeSpacePermeability",
    "friction": "simulation.PseudoFrictionTorque.coefficient",
    "periodic_box": "simulation.systemSize",
    "settings.dt": "simulation.time.dt",
    "settings.t_end": "simulation.time.simulationSteps",
    "settings.record_interval": "simulation.time.reportSteps",
    "settings.method": "simulation.integrator",
    "settings": "simulation.time",
    "bodies": "simulation",
}
#: A scene body's paths (after ``bodies[i].``) → the field of its placement (``P``) or definition (``D``).
_BODY = {
    "position": "P.position",
    "orientation": "P.orientation",
    "angular_velocity": "P.angularVelocity",
    "hinge": "P.constraint.rotationAxis",
    "motion.velocity": "P.constantVelocity.velocity",
    "motion.center": "P.ellipticRotation.center",
    "motion.r1": "P.ellipticRotation.r1",
    "motion.r2": "P.ellipticRotation.r2",
    "motion.angular_velocity": "P.ellipticRotation.angularVelocity",
    "motion.phase": "P.ellipticRotation.initialPhase",
    "motion": "P.type",
    "color": "D.color",
    "dipoles": "D.magnet",
    "shapes": "D.shape",
}
#: A body's mass properties (after ``bodies[i].``) → the field of its ``analysis`` block.
_ANALYSIS = {"mass": "mass", "inertia": "inertiaMoment", "mass_properties.mass": "mass",
             "mass_properties.center_of_mass": "massCenter", "mass_properties.inertia": "inertiaMoment"}
#: The fields of a dipole (``bodies[i].dipoles[k].…``) as a magnet's.
_DIPOLE = {"position": "position", "moment": "dipole"}
#: A vector's components, a frame's rows.
_XYZ, _ROWS = ("x", "y", "z"), ("u1", "u2", "u3")

#: What the path of a ``// pem:`` note holds (:mod:`.udf_notes`).
NOTE = "// pem:"
_BODY_PATH = re.compile(r"bodies\[(\d+)\](?:\.(.*))?$")
_INDEX = re.compile(r"\[(\d+)\]")
#: Scene-model paths quoted inside a message (``… (also bodies[1])``).
_QUOTED_PATH = re.compile(r"bodies\[\d+\](?:\.[A-Za-z_]+|\[\d+\])*")


def _first(table: dict, rest: str) -> tuple[str, str] | None:
    """(the UDF field, the rest of the path) for the longest key of ``table`` that begins ``rest``."""
    for key in sorted(table, key=len, reverse=True):
        if rest == key or rest.startswith(key + ".") or rest.startswith(key + "["):
            return table[key], rest[len(key):]
    return None


def _components(udf: str, tail: str) -> str:
    """``udf`` followed by a scene path's tail, its indices of a vector as ``.x``/``.y``/``.z`` and of a frame's
    rows as ``.u1``…: ``simulation.gravity`` + ``[2]`` → ``simulation.gravity.z``."""
    rows = udf.endswith(".orientation")
    for m in _INDEX.finditer(tail):
        k = int(m.group(1))
        names = _ROWS if rows else _XYZ
        if k >= len(names):
            break
        udf += "." + names[k]
        rows = False
    return udf


def _body_path(i: int, rest: str, trail: Trail) -> str:
    """The UDF field of scene body ``i``'s item ``rest`` (``orientation[1]``, ``dipoles[0].moment``, ``mass``)."""
    placement, definition = trail.placements[i], trail.definitions[i]
    if f"bodies[{i}].{rest}" in trail.keys:
        return trail.keys[f"bodies[{i}].{rest}"]
    if rest.split(".")[0].split("[")[0] in ("mass", "inertia", "mass_properties"):
        if not trail.overrides[i]:
            return f"{definition}.shape"
        field = _first(_ANALYSIS, rest)
        return f"{definition}.analysis{'.' + field[0] if field else ''}"
    found = _first(_BODY, rest)
    if found is None:
        return placement
    target, tail = found
    udf = target.replace("P", placement, 1) if target.startswith("P") else target.replace("D", definition, 1)
    if target == "D.magnet":
        m = re.match(r"\[(\d+)\](?:\.(\w+))?(.*)$", tail)
        if m is None:
            return udf
        udf += f"[{m.group(1)}]"
        if m.group(2) in _DIPOLE:
            k = f"bodies[{i}].dipoles[{m.group(1)}].{m.group(2)}"
            udf = trail.keys.get(k, f"{udf}.{_DIPOLE[m.group(2)]}")
            return _components(udf, m.group(3))
        return udf
    if target == "D.shape":
        m = re.match(r"\[(\d+)\]", tail)
        return f"{udf}[{m.group(1)}]" if m else udf
    return _components(udf, tail)


def udf_path(scene_path: str, trail: Trail) -> str | None:
    """The UDF field path of the scene-model path ``scene_path``; None for one the file does not give (the scene's
    name, taken from the file's name)."""
    noted = _first(trail.keys, scene_path)   # a value of a // pem: note (a name, a pair_restitution entry)
    if noted is not None:
        return noted[0] if NOTE in noted[0] else _components(*noted)
    m = _BODY_PATH.match(scene_path)
    if m and int(m.group(1)) < len(trail.placements):
        return _body_path(int(m.group(1)), m.group(2) or "", trail) if m.group(2) else trail.placements[int(m.group(1))]
    found = _first(_SCENE, scene_path)
    if found is None:
        return None
    target, tail = found
    return _components(target, tail)


def located(err: ValidationError, doc, trail: Trail | None = None, units: tuple = (1.0, 1.0, 1.0, 1.0)) -> UdfError:
    """``err`` as a :class:`.udf.UdfError` at the file, line and column of the UDF field it is about.

    ``trail``: given, ``err`` names a scene-model path (the scene's check); None, it names a UDF path already (an
    error of the conversion). Scene paths quoted in the message are named as UDF fields too. An error the file has no
    place for (a name taken from the file's name) comes back naming the file.
    """
    path = err.path
    if trail is not None:
        path = udf_path(err.path, trail) or ""
    message = err.message
    if trail is not None:
        message = _QUOTED_PATH.sub(lambda m: udf_path(m.group(), trail) or m.group(), message)
    found = doc.locate(path) if path else None
    name = str(doc.path) if doc.path is not None else (doc.source.name if doc.source is not None else "")
    if found is None:
        return UdfError(name, f"{path}: {message}" if path else message)
    where, given = found
    if given in doc.defaulted:
        message += (" — not written in the file: its struct ends here without it, and a value left out is 0 (or "
                    "empty, or the first choice); write it")
    if trail is not None and tuple(units) != (1.0, 1.0, 1.0, 1.0):
        message += " (values in SI units: m, kg, s, A; the file's unitParameter converts its own to them)"
    return UdfError(where, f"{path}: {message}")
