"""TOML scene files (format ``pem-scene``, version 1) ↔ :class:`~pem_physics.model.Scene`.

The format is documented key by key in ``docs/scene-format.md``. Reading uses
the standard library's :mod:`tomllib`; writing is :mod:`.scene_writer`'s.

Every value is checked while it is read; a problem raises
:class:`~pem_physics.errors.ValidationError` whose path names the key the way
the file spells it, e.g. ``bodies[2].dipoles[0].moment: expected 3 numbers``.
Unknown keys are errors (with the closest valid key suggested), so a typo can
never silently fall back to a default.

Values in a file are in the units of its ``[units]`` table (SI sizes of the
length, mass, time and current units, like PEM's ``unitParameter``); the Scene
is always SI. Written files are SI (all units 1).
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
import tomllib
from pathlib import Path

import numpy as np

from ..errors import ValidationError, join_path
from ..model import inertia
from ..model import validate as _validate
from ..model.analytic import Oscillation, UniformRotation
from ..model.motion import MIN_SAMPLES, TabulatedMotion
from ..model.rotations import axis_angle_matrix
from ..model.scene import (
    CONTACT_MODELS,
    FRICTION_LAWS,
    METHODS,
    MU0,
    STANDARD_GRAVITY,
    Body,
    ConstantVelocity,
    ContactRim,
    ContactSphere,
    Dipole,
    EllipticOrbit,
    PairRestitution,
    RotatingField,
    Scene,
    Settings,
    StaticWall,
    check_not_too_light,
    name_key,
)
from .files import beside_scene, name_of_file, read_input_text

__all__ = ["FORMAT", "FORMAT_VERSION", "load_scene", "loads", "scene_from_dict", "euler_deg_orientation"]

FORMAT = "pem-scene"
FORMAT_VERSION = 1

# ---------------------------------------------------------------------------- the keys of each table

TOP_KEYS = ("format", "version", "name", "units", "gravity", "mu0", "friction", "periodic_box", "field",
            "settings", "bodies", "restitution", "pair_restitution", "walls", "contact_friction", "contact_model",
            "placement_tolerance")
UNIT_KEYS = ("length", "mass", "time", "ampere")
FIELD_KEYS = ("uniform", "rotating")
ROTATING_KEYS = ("b1", "b2", "angular_velocity", "phase")
SETTINGS_KEYS = ("method", "dt", "t_end", "record_interval", "rtol", "atol")
ORIENTATION_KEYS = ("quaternion", "axes", "euler_deg")
BODY_KEYS = ("name", "role", "pivot", "position") + ORIENTATION_KEYS + (
    "angular_velocity", "angular_velocity_body", "hinge", "color", "shapes", "mass_properties", "dipoles",
    "motion", "pivot_motion", "contacts", "restitution", "contact_friction", "translate", "velocity")
CONTACT_KEYS = ("center", "radius", "axis")
PAIR_KEYS = ("bodies", "restitution")
_WALL_COMMON = ("kind", "name", "restitution", "contact_friction", "friction_law", "gliding_friction",
                "rolling_resistance", "spin_resistance")
WALL_KEYS = {"plane": _WALL_COMMON + ("point", "normal"),
             "sphere": _WALL_COMMON + ("center", "radius", "inside"),
             "cylinder": _WALL_COMMON + ("point", "direction", "radius", "inside"),
             "box": _WALL_COMMON + ("center", "half_sizes", "axes", "inside")}
MASS_PROPERTY_KEYS = ("mass", "center_of_mass", "inertia")
DIPOLE_KEYS = ("position", "moment")
MOTION_KEYS = {"constant_velocity": ("kind", "velocity"),
               "elliptic_orbit": ("kind", "center", "r1", "r2", "angular_velocity", "phase"),
               "tabulated": ("kind", "times", "positions", "orientations", "file"),
               "oscillation": ("kind", "center", "amplitudes", "angular_frequencies", "phases"),
               "uniform_rotation": ("kind", "center", "axis", "angular_velocity")}
#: The motions a pivot may follow (a point: no orbit that turns a body, no constant velocity).
PIVOT_MOTIONS = ("tabulated", "oscillation", "uniform_rotation")
#: Columns of a tabulated motion's CSV file: time, position, and optionally the orientation's quaternion.
TABLE_COLUMNS = ("t", "x", "y", "z")
TABLE_QUATERNION = ("qw", "qx", "qy", "qz")
ROLES = ("pendulum", "free", "fixed", "driven")
SHAPE_KEYS = {
    "sphere": ("kind", "mass", "density", "center", "radius"),
    "cylinder": ("kind", "mass", "density", "center", "radius", "half_length", "axis"),
    "ellipsoid": ("kind", "mass", "density", "center", "semi_axes", "axes"),
    "cuboid": ("kind", "mass", "density", "center", "half_sides", "axes"),
    "rod": ("kind", "mass", "density", "center", "half_length", "direction"),
    "point": ("kind", "mass", "density", "center"),
    "mesh": ("kind", "mass", "density", "name", "file", "vertices", "faces", "scale", "offset")
    + ORIENTATION_KEYS,
}
MESH_SUFFIXES = (".obj", ".stl", ".ply", ".off", ".glb", ".gltf")

#: Largest magnitude (SI) of any number in a scene: far beyond anything physical, and small enough that
#: squares and cubes of it (inertia, volume) cannot overflow a double.
MAX_MAGNITUDE = 1e100
#: Most time steps a file may ask for (t_end / dt); far beyond any run that could finish.
MAX_STEPS = 1e12

_REQUIRED = object()


# ---------------------------------------------------------------------------- units

class Units:
    """SI size of the file's units of length (m), mass (kg), time (s) and current (A)."""

    def __init__(self, length=1.0, mass=1.0, time=1.0, ampere=1.0):
        self.L, self.M, self.T, self.A = float(length), float(mass), float(time), float(ampere)

    # Derived units, SI per file unit (used as multipliers on read).
    @property
    def density(self):
        return self.M / self.L**3

    @property
    def inertia(self):
        return self.M * self.L**2

    @property
    def rate(self):
        return 1.0 / self.T

    @property
    def velocity(self):
        return self.L / self.T

    @property
    def accel(self):
        return self.L / self.T**2

    @property
    def friction(self):
        return self.M * self.L**2 / self.T

    @property
    def field(self):
        return self.M / (self.A * self.T**2)

    @property
    def mu0(self):
        return self.M * self.L / (self.T**2 * self.A**2)

    @property
    def moment(self):
        return self.A * self.L**2


SI = Units()


# ---------------------------------------------------------------------------- reading helpers

_describe = _validate.describe   # how a TOML value is called in a message (one describer for the model and the files)


def _table(value, path: str, allowed, what: str = "table", parent=()) -> dict:
    """``value`` as a dict with only ``allowed`` keys (unknown keys are errors with a suggestion).

    parent: the keys of the enclosing table, to explain the classic TOML slip of
    writing a key below a ``[sub.table]`` header when it belongs above it.
    """
    if not isinstance(value, dict):
        raise ValidationError(path, f"expected a {what}, got {_describe(value)}")
    for key in value:
        if key not in allowed:
            raise ValidationError(join_path(path, str(key)), "unknown key; " + _hint(str(key), allowed, parent))
    return value


def _hint(key: str, allowed, parent=()) -> str:
    close = difflib.get_close_matches(key, [str(a) for a in allowed], n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    if key in parent:
        return (f"{key!r} belongs to the enclosing table: in TOML, keys below a [table] header go into that "
                "table, so write it above the header")
    return f"valid keys: {', '.join(allowed)}"


def _number(value, path: str, unit: float = 1.0, *, positive=False, nonnegative=False) -> float:
    """A finite number (:func:`..model.validate.number`) times ``unit``; the result must stay in range."""
    out = _validate.number(value, path, positive=positive, nonnegative=nonnegative) * unit
    if not abs(out) <= MAX_MAGNITUDE:
        raise ValidationError(path, f"{value!r} is out of range (at most {MAX_MAGNITUDE:g} in SI units)")
    return out


def _vector(value, path: str, unit: float = 1.0, n: int = 3, *, nonzero=False) -> np.ndarray:
    """A vector of ``n`` finite numbers (:func:`..model.validate.vector`) times ``unit``, each in range."""
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise ValidationError(path, f"expected {n} numbers, got {_describe(value)}")
    return np.array([_number(x, f"{path}[{i}]", unit) for i, x in enumerate(_validate.vector(value, path, n,
                                                                                      nonzero=nonzero))])


def _matrix(value, path: str, rows: int, unit: float = 1.0) -> np.ndarray:
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != rows:
        got = f"{len(value)} rows" if isinstance(value, (list, tuple)) else _describe(value)
        raise ValidationError(path, f"expected {rows} rows of 3 numbers, got {got}")
    return np.stack([_vector(r, f"{path}[{i}]", unit) for i, r in enumerate(value)])


def _string(value, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(path, f"expected a non-empty string, got {_describe(value)}")
    return value


def _choice(value, path: str, options) -> str:
    if not isinstance(value, str) or value not in options:
        close = difflib.get_close_matches(value, options, n=1) if isinstance(value, str) else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValidationError(path, f"expected one of {', '.join(map(repr, options))}, got {_describe(value)}{hint}")
    return value


def _get(d: dict, key: str, path: str, read, default=_REQUIRED, expected: str = ""):
    """``read(d[key], path.key)``, or ``default`` when the key is absent (a missing required key is an error)."""
    p = join_path(path, key)
    if key not in d:
        if default is _REQUIRED:
            raise ValidationError(p, f"missing; expected {expected}" if expected else "missing")
        return default
    return read(d[key], p)


#: The largest |angle| of ``euler_deg`` (°): at 1e6° a double still holds the angle to ~1e-10°, far beyond it
#: nothing of the fraction of a turn (at 1e17° the spacing of doubles is 16°).
MAX_ANGLE_DEG = 1e6


def euler_deg_orientation(angles_deg) -> np.ndarray:
    """Orientation U (rows = body axes in lab) of intrinsic Z-Y'-X'' angles (yaw, pitch, roll) in degrees.

    The body → lab rotation is Rz(yaw)·Ry(pitch)·Rx(roll), the inverse of
    :func:`pem_physics.rotations.euler_zyx` (the CSV output's angles).
    """
    yaw, pitch, roll = np.radians(np.asarray(angles_deg, dtype=float))
    R = (axis_angle_matrix(np.array([0.0, 0.0, 1.0]), yaw) @ axis_angle_matrix(np.array([0.0, 1.0, 0.0]), pitch)
         @ axis_angle_matrix(np.array([1.0, 0.0, 0.0]), roll))
    return R.T


def _orientation(d: dict, path: str) -> np.ndarray | None:
    """The orientation U from exactly one of quaternion / axes / euler_deg (None when none is given)."""
    given = [k for k in ORIENTATION_KEYS if k in d]
    if len(given) > 1:
        raise ValidationError(join_path(path, given[1]), f"give only one of {', '.join(given)}")
    if not given:
        return None
    key = given[0]
    p = join_path(path, key)
    if key == "quaternion":
        q = _vector(d[key], p, n=4)
        norm = float(np.linalg.norm(q))
        if not abs(norm - 1.0) <= 1e-3:
            raise ValidationError(p, f"expected a unit quaternion [w, x, y, z], got length {norm:.6g}")
        from ..model.rotations import quat_to_orientation

        return quat_to_orientation(q / norm)
    if key == "euler_deg":
        angles = _vector(d[key], p)
        for k, a in enumerate(angles):
            if abs(a) > MAX_ANGLE_DEG:   # its fraction of a turn is rounding: the orientation would be arbitrary
                raise ValidationError(f"{p}[{k}]", f"{float(a)!r}° is beyond ±{MAX_ANGLE_DEG:g}°, where rounding has "
                                                   "lost the angle's fraction of a turn; give it within ±360°")
        return euler_deg_orientation(angles)
    U = _matrix(d[key], p, 3)
    err = float(np.linalg.norm(U @ U.T - np.eye(3)))
    if not err <= 1e-6:
        raise ValidationError(p, f"rows u1, u2, u3 are not orthonormal (‖UUᵀ−I‖ = {err:.3g})")
    if np.linalg.det(U) < 0:
        raise ValidationError(p, "rows u1, u2, u3 form a left-handed frame (u3 must be u1 × u2)")
    return U


# ---------------------------------------------------------------------------- reading a document

def load_scene(path) -> Scene:
    """Read a TOML scene file (mesh files are looked up relative to its folder)."""
    p = Path(path)
    text = read_input_text(path, "scene file")
    return loads(text, base_dir=p.resolve().parent, name=name_of_file(p), source=str(path))


def loads(text: str, base_dir: Path | None = None, name: str = "scene", source: str = "") -> Scene:
    """A Scene from TOML text; ``name`` is used when the document has no ``name`` key."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValidationError(source, f"not valid TOML: {err}") from None
    except RecursionError:
        raise ValidationError(source, "nested too deeply to read (thousands of levels of brackets): is it the right "
                                      "file?") from None
    if isinstance(doc.get("gas"), dict):  # a hard-sphere gas file (pem_physics.analysis.gas_command), not a scene
        raise ValidationError(source or "gas", "this is a hard-sphere gas file, not a scene of bodies: run it with "
                                               "`python -m pem_physics gas FILE -o OUTDIR`")
    if "name" not in doc:
        doc["name"] = name
    return scene_from_dict(doc, base_dir=base_dir)


def scene_from_dict(doc: dict, base_dir: Path | None = None) -> Scene:
    """A validated Scene (SI) from a parsed TOML document.

    base_dir: folder that relative mesh ``file`` paths start from (default: the current directory).
    """
    doc = _table(doc, "", TOP_KEYS, "TOML document")
    fmt = _get(doc, "format", "", lambda x, p: x, expected=f"format = {FORMAT!r}")
    if fmt != FORMAT:
        raise ValidationError("format", f"expected {FORMAT!r}, got {_describe(fmt)}")
    version = _get(doc, "version", "", lambda x, p: x, expected=f"version = {FORMAT_VERSION}")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValidationError("version", f"expected a positive integer, got {_describe(version)}")
    if version > FORMAT_VERSION:
        raise ValidationError("version", f"this file is scene format version {version}, but this pem_physics reads "
                              f"versions up to {FORMAT_VERSION}; upgrade pem_physics")
    u = _get(doc, "units", "", _units, default=SI)
    name = _get(doc, "name", "", _string, default="scene")
    uniform, rotating = _get(doc, "field", "", lambda x, p: _field(x, p, u), default=(np.zeros(3), None))
    box = _get(doc, "periodic_box", "", lambda x, p: _vector(x, p, u.L), default=None)
    if box is not None and not np.all(box > 0):
        raise ValidationError("periodic_box", "expected three positive box lengths")
    raw_bodies = _get(doc, "bodies", "", lambda x, p: x, expected="at least one [[bodies]] table")
    if not isinstance(raw_bodies, list) or not raw_bodies:
        raise ValidationError("bodies", f"expected an array of [[bodies]] tables, got {_describe(raw_bodies)}")
    bodies = [_body(b, f"bodies[{i}]", i, u, base_dir) for i, b in enumerate(raw_bodies)]
    scene = Scene(
        name=name,
        bodies=bodies,
        gravity=_get(doc, "gravity", "", lambda x, p: _vector(x, p, u.accel),
                     default=np.array([0.0, 0.0, -STANDARD_GRAVITY])),
        field=uniform,
        rotating_field=rotating,
        mu0=_get(doc, "mu0", "", lambda x, p: _number(x, p, u.mu0, nonnegative=True), default=MU0),
        friction=_get(doc, "friction", "", lambda x, p: _number(x, p, u.friction, nonnegative=True), default=0.0),
        periodic_box=box,
        settings=_get(doc, "settings", "", lambda x, p: _settings(x, p, u), default=Settings()),
        restitution=_get(doc, "restitution", "", _restitution, default=1.0),
        pair_restitution=tuple(_pair(x, f"pair_restitution[{k}]") for k, x in enumerate(
            _get(doc, "pair_restitution", "", lambda x, p: _array_of_tables(x, p), default=[]))),
        walls=tuple(_wall(x, f"walls[{k}]", k, u) for k, x in enumerate(
            _get(doc, "walls", "", lambda x, p: _array_of_tables(x, p), default=[]))),
        contact_friction=_get(doc, "contact_friction", "", _contact_friction, default=0.0),
        contact_model=_get(doc, "contact_model", "", lambda x, p: _choice(x, p, CONTACT_MODELS), default="impacts"),
        placement_tolerance=_get(doc, "placement_tolerance", "", lambda x, p: _number(x, p, u.L, nonnegative=True),
                                 default=0.0),
    )
    _check_pair_names(scene)
    return scene.checked()


def _check_pair_names(scene: Scene) -> None:
    """Each ``pair_restitution`` entry's two names are a body's or a wall's: an error names the file's key
    (``bodies[k]``) and the closest name when there is one (a misspelt wall)."""
    names = [b.name for b in scene.bodies] + [w.name for w in scene.walls]
    keys = {name_key(n) for n in names}   # "é" as one code point or as e + accent: one name (Scene.checked)
    for i, pair in enumerate(scene.pair_restitution):
        for k, n in enumerate(pair.names):
            if name_key(n) not in keys:
                close = difflib.get_close_matches(n, names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f" (they are {', '.join(map(repr, names))})"
                raise ValidationError(f"pair_restitution[{i}].bodies[{k}]", f"no body or wall is called {n!r}{hint}")


def _check_mass(role: str, path: str, shapes, mp) -> None:
    """A moving body's mass (its ``mass_properties``, else its ``shapes``' sum) is positive; the error names the
    file's key it comes from, not the model's ``mass``."""
    if mp is not None:
        if not mp.mass > 0:
            raise ValidationError(f"{path}.mass_properties.mass", f"a {role} body needs a positive mass, got "
                                                                  f"{mp.mass:g}; give a mass > 0")
        check_not_too_light(mp.mass, f"{path}.mass_properties.mass")
    elif shapes:
        total = sum(s.mass_properties().mass for s in shapes)
        if not total > 0:
            raise ValidationError(f"{path}.shapes", f"a {role} body needs a positive mass, its shapes add up to "
                                                    f"{total:g}; give a shape a mass or a density > 0")
        check_not_too_light(total, f"{path}.shapes")


def _restitution(value, path) -> float:
    e = _number(value, path)
    if not 0.0 <= e <= 1.0:
        raise ValidationError(path, f"expected 0 ≤ e ≤ 1, got {value!r}")
    return e


def _contact_friction(value, path) -> float:
    mu = _number(value, path)
    if not 0.0 <= mu < float("inf"):
        raise ValidationError(path, f"expected a friction coefficient μ ≥ 0, got {value!r}")
    return mu


def _contact(d, path, u: Units) -> ContactSphere | ContactRim:
    """A contact sphere, or a rim when the table has an ``axis``."""
    d = _table(d, path, CONTACT_KEYS, parent=BODY_KEYS)
    center = _get(d, "center", path, lambda x, p: _vector(x, p, u.L), default=np.zeros(3))
    radius = _get(d, "radius", path, lambda x, p: _number(x, p, u.L, positive=True), expected="a number > 0 (length)")
    if "axis" in d:
        return ContactRim(center=center, radius=radius,
                          axis=_get(d, "axis", path, lambda x, p: _vector(x, p, nonzero=True)))
    return ContactSphere(center=center, radius=radius)


def _pair(d, path) -> PairRestitution:
    d = _table(d, path, PAIR_KEYS, parent=TOP_KEYS)
    names = _get(d, "bodies", path, lambda x, p: x, expected="two names [a, b] of bodies or walls")
    if not isinstance(names, list) or len(names) != 2:
        raise ValidationError(f"{path}.bodies", f"expected two names [a, b], got {_describe(names)}")
    names = tuple(_string(n, f"{path}.bodies[{k}]") for k, n in enumerate(names))
    return PairRestitution(names, _get(d, "restitution", path, _restitution, expected="a number 0 ≤ e ≤ 1"))


def _wall(d, path, index: int, u: Units) -> StaticWall:
    if not isinstance(d, dict):
        raise ValidationError(path, f"expected a table, got {_describe(d)}")
    kind = _get(d, "kind", path, lambda x, p: _choice(x, p, tuple(WALL_KEYS)),
                expected=" or ".join(map(repr, WALL_KEYS)))
    d = _table(d, path, WALL_KEYS[kind], parent=TOP_KEYS)
    L = lambda x, p: _vector(x, p, u.L)  # noqa: E731
    direction = lambda x, p: _vector(x, p, nonzero=True)  # noqa: E731
    kw = dict(kind=kind, name=_get(d, "name", path, _string, default=f"wall{index}"),
              restitution=_get(d, "restitution", path, _restitution, default=None),
              contact_friction=_get(d, "contact_friction", path, _contact_friction, default=None),
              friction_law=_get(d, "friction_law", path, lambda x, p: _choice(x, p, FRICTION_LAWS), default=None),
              gliding_friction=_get(d, "gliding_friction", path,     # s/m: time over length
                                    lambda x, p: _number(x, p, 1.0 / u.velocity, nonnegative=True), default=None),
              rolling_resistance=_get(d, "rolling_resistance", path,
                                      lambda x, p: _number(x, p, u.L, nonnegative=True), default=None),
              spin_resistance=_get(d, "spin_resistance", path,
                                   lambda x, p: _number(x, p, u.L, nonnegative=True), default=None))
    if kind == "plane":
        kw.update(point=_get(d, "point", path, L, default=np.zeros(3)),
                  normal=_get(d, "normal", path, direction, expected="3 numbers: the normal into the allowed side"))
    else:
        kw["inside"] = _get(d, "inside", path, _boolean, default=True)
    if kind in ("sphere", "cylinder"):
        kw["radius"] = _get(d, "radius", path, lambda x, p: _number(x, p, u.L, positive=True),
                            expected="a number > 0 (length)")
    if kind == "sphere":
        kw["center"] = _get(d, "center", path, L, default=np.zeros(3))
    if kind == "cylinder":
        kw.update(point=_get(d, "point", path, L, default=np.zeros(3)),
                  direction=_get(d, "direction", path, direction, expected="3 numbers: the axis direction"))
    if kind == "box":
        kw.update(center=_get(d, "center", path, L, default=np.zeros(3)),
                  half_sizes=_get(d, "half_sizes", path, L, expected="3 numbers > 0 (length)"),
                  axes=_get(d, "axes", path, lambda x, p: _matrix(x, p, 3), default=None))
    return StaticWall(**kw)


def _boolean(value, path) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(path, f"expected true or false, got {_describe(value)}")
    return value


def _units(d, path) -> Units:
    d = _table(d, path, UNIT_KEYS, parent=TOP_KEYS)
    return Units(*(_get(d, k, path, _unit_size, default=1.0) for k in UNIT_KEYS))


def _unit_size(value, path) -> float:
    x = _number(value, path, positive=True)
    if not 1e-30 <= x <= 1e30:  # keeps every derived unit (up to cubes) a normal double
        raise ValidationError(path, f"expected a unit size between 1e-30 and 1e30 (SI), got {value!r}")
    return x


def _field(d, path, u: Units):
    d = _table(d, path, FIELD_KEYS, parent=TOP_KEYS)
    uniform = _get(d, "uniform", path, lambda x, p: _vector(x, p, u.field), default=np.zeros(3))
    rotating = _get(d, "rotating", path, lambda x, p: _rotating(x, p, u), default=None)
    return uniform, rotating


def _rotating(d, path, u: Units) -> RotatingField:
    d = _table(d, path, ROTATING_KEYS, parent=FIELD_KEYS)
    return RotatingField(
        b1=_get(d, "b1", path, lambda x, p: _vector(x, p, u.field), expected="3 numbers (field)"),
        b2=_get(d, "b2", path, lambda x, p: _vector(x, p, u.field), expected="3 numbers (field)"),
        angular_velocity=_get(d, "angular_velocity", path, lambda x, p: _number(x, p, u.rate),
                              expected="a number (1/time)"),
        phase=_get(d, "phase", path, lambda x, p: _number(x, p), default=0.0))


def _settings(d, path, u: Units) -> Settings:
    d = _table(d, path, SETTINGS_KEYS, parent=TOP_KEYS)
    base = Settings()
    out = Settings(
        method=_get(d, "method", path, lambda x, p: _choice(x, p, METHODS), default=base.method),
        dt=_get(d, "dt", path, lambda x, p: _number(x, p, u.T, positive=True), default=base.dt),
        t_end=_get(d, "t_end", path, lambda x, p: _number(x, p, u.T, nonnegative=True), default=base.t_end),
        record_interval=_get(d, "record_interval", path, lambda x, p: _number(x, p, u.T, positive=True),
                             default=None),
        rtol=_get(d, "rtol", path, lambda x, p: _number(x, p, positive=True), default=base.rtol),
        atol=_get(d, "atol", path, lambda x, p: _number(x, p, positive=True), default=base.atol))
    # Step counts must be countable integers (the model rounds these ratios to ints).
    for key, value in (("t_end", out.t_end), ("record_interval", out.record_interval)):
        if value is not None and not value / out.dt <= MAX_STEPS:
            raise ValidationError(f"{path}.{key}", f"{key} / dt = {value / out.dt:.3g} steps; at most {MAX_STEPS:.0e}")
    return out


def _body(d, path: str, index: int, u: Units, base_dir) -> Body:
    d = _table(d, path, BODY_KEYS, parent=TOP_KEYS)
    role = _get(d, "role", path, lambda x, p: _choice(x, p, ROLES), default="pendulum")
    if role == "pendulum":
        if "position" in d:
            raise ValidationError(f"{path}.position", "a pendulum's origin is its pivot: write 'pivot' instead")
        position = _get(d, "pivot", path, lambda x, p: _vector(x, p, u.L),
                        expected="3 numbers (length): a pendulum body needs its pivot point")
    else:
        if "pivot" in d:
            raise ValidationError(f"{path}.pivot", f"only pendulum bodies have a pivot (role is {role!r}); "
                                  "write 'position' for the body origin")
        position = _get(d, "position", path, lambda x, p: _vector(x, p, u.L), default=np.zeros(3))
    U = _orientation(d, path)
    if U is None:
        U = np.eye(3)
    if "angular_velocity" in d and "angular_velocity_body" in d:
        raise ValidationError(f"{path}.angular_velocity_body", "give only one of angular_velocity, "
                              "angular_velocity_body")
    omega = _get(d, "angular_velocity", path, lambda x, p: _vector(x, p, u.rate), default=np.zeros(3))
    if "angular_velocity_body" in d:
        omega = U.T @ _vector(d["angular_velocity_body"], f"{path}.angular_velocity_body", u.rate)
    shapes = _get(d, "shapes", path, lambda x, p: _array_of_tables(x, p), default=[])
    shapes = tuple(_shape(s, f"{path}.shapes[{k}]", u, base_dir) for k, s in enumerate(shapes))
    dipoles = _get(d, "dipoles", path, lambda x, p: _array_of_tables(x, p), default=[])
    dipoles = tuple(_dipole(s, f"{path}.dipoles[{k}]", u) for k, s in enumerate(dipoles))
    body = Body(
        name=_get(d, "name", path, _string, default=f"body{index}"),
        role=role, position=position, orientation=U, angular_velocity=omega, shapes=shapes,
        mass_properties=_get(d, "mass_properties", path, lambda x, p: _mass_properties(x, p, u), default=None),
        dipoles=dipoles,
        hinge=_get(d, "hinge", path, lambda x, p: _vector(x, p, nonzero=True), default=None),
        motion=_get(d, "motion", path, lambda x, p: _motion(x, p, u, base_dir), default=None),
        pivot_motion=_get(d, "pivot_motion", path, lambda x, p: _pivot_motion(x, p, u, base_dir), default=None),
        color=_get(d, "color", path, _color, default=None),
        contacts=tuple(_contact(c, f"{path}.contacts[{k}]", u) for k, c in enumerate(
            _get(d, "contacts", path, lambda x, p: _array_of_tables(x, p), default=[]))),
        restitution=_get(d, "restitution", path, _restitution, default=None),
        contact_friction=_get(d, "contact_friction", path, _contact_friction, default=None),
        translate=_get(d, "translate", path, _boolean, default=False),
        velocity=_get(d, "velocity", path, lambda x, p: _vector(x, p, u.velocity), default=np.zeros(3)))
    if role in ("pendulum", "free"):
        _check_mass(role, path, shapes, body.mass_properties)
    if "translate" in d and role != "free":
        raise ValidationError(f"{path}.translate", f"only free bodies translate (role is {role!r})")
    if "velocity" in d and not body.translate:
        raise ValidationError(f"{path}.velocity", "only a translating body has a velocity: add translate = true "
                              "(to a free body)")
    if role in ("pendulum", "free") and body.mass_properties is None and shapes:
        # Catch overflowing sums (e.g. huge densities) here, before the model's eigen-decomposition sees them.
        with np.errstate(over="ignore", invalid="ignore"):
            mp = body.resolved_mass_properties(path)
            I0 = mp.inertia_about(np.zeros(3))
        if not (math.isfinite(mp.mass) and np.all(np.isfinite(mp.inertia)) and np.all(np.isfinite(I0))):
            raise ValidationError(f"{path}.shapes", "the shapes' mass properties overflow (check sizes and masses)")
    return body


def _array_of_tables(value, path) -> list:
    if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
        raise ValidationError(path, f"expected an array of tables ([[{path.split('.')[-1]}]]), got {_describe(value)}")
    return value


def _color(value, path):
    if not isinstance(value, (list, tuple)) or len(value) not in (3, 4):
        raise ValidationError(path, "expected 3 or 4 numbers (red, green, blue[, alpha] in 0…1), "
                              f"got {_describe(value)}")
    c = tuple(_number(x, f"{path}[{i}]") for i, x in enumerate(value))
    if not all(0.0 <= x <= 1.0 for x in c):
        raise ValidationError(path, "colour components must lie in 0…1")
    return c


def _dipole(d, path, u: Units) -> Dipole:
    d = _table(d, path, DIPOLE_KEYS, parent=BODY_KEYS)
    return Dipole(position=_get(d, "position", path, lambda x, p: _vector(x, p, u.L), default=np.zeros(3)),
                  moment=_get(d, "moment", path, lambda x, p: _vector(x, p, u.moment),
                              expected="3 numbers (magnetic moment, ampere·length²)"))


def _motion(d, path, u: Units, base_dir=None, kinds=tuple(MOTION_KEYS), pivot: bool = False):
    if not isinstance(d, dict):
        raise ValidationError(path, f"expected a table, got {_describe(d)}")
    if pivot and "kind" not in d:
        d = {"kind": "tabulated", **d}    # a pivot's table may leave its kind out
    if pivot and d["kind"] in MOTION_KEYS and d["kind"] not in kinds:
        raise ValidationError(f"{path}.kind", f"a pivot is a point: it moves by a table, an oscillation or a uniform "
                                              f"rotation ({', '.join(map(repr, kinds))}), not {d['kind']!r}")
    kind = _get(d, "kind", path, lambda x, p: _choice(x, p, kinds), expected=" or ".join(map(repr, kinds)))
    d = _table(d, path, MOTION_KEYS[kind], parent=BODY_KEYS)
    if kind == "tabulated":
        return _tabulated(d, path, u, base_dir, pivot=pivot)
    if kind == "oscillation":
        return _oscillation(d, path, u)
    if kind == "uniform_rotation":
        return UniformRotation(
            axis=_get(d, "axis", path, lambda x, p: _vector(x, p, nonzero=True), expected="3 numbers (a direction)"),
            angular_velocity=_get(d, "angular_velocity", path, lambda x, p: _number(x, p, u.rate),
                                  expected="a number (1/time)"),
            center=_get(d, "center", path, lambda x, p: _vector(x, p, u.L), default=None))
    if kind == "constant_velocity":
        return ConstantVelocity(_get(d, "velocity", path, lambda x, p: _vector(x, p, u.velocity),
                                     expected="3 numbers (length/time)"))
    return EllipticOrbit(
        center=_get(d, "center", path, lambda x, p: _vector(x, p, u.L), default=np.zeros(3)),
        r1=_get(d, "r1", path, lambda x, p: _vector(x, p, u.L), expected="3 numbers (length)"),
        r2=_get(d, "r2", path, lambda x, p: _vector(x, p, u.L), expected="3 numbers (length)"),
        angular_velocity=_get(d, "angular_velocity", path, lambda x, p: _number(x, p, u.rate),
                              expected="a number (1/time)"),
        phase=_get(d, "phase", path, lambda x, p: _number(x, p), default=0.0))


def _oscillation(d, path, u: Units) -> Oscillation:
    """An oscillation: ``amplitudes`` (a list of 3-vectors, length), ``angular_frequencies`` (one per amplitude,
    1/time), ``phases`` (radians, default 0) and ``center`` (length, default the body's position)."""
    def listed(key, read, expected):
        def each(x, p):
            if not isinstance(x, list) or not x:
                raise ValidationError(p, f"expected a list of one or more {expected}, got {_describe(x)}")
            return [read(v, f"{p}[{i}]") for i, v in enumerate(x)]
        return _get(d, key, path, each, expected=f"a list of {expected}")

    a = listed("amplitudes", lambda x, p: _vector(x, p, u.L), "3-vectors (length)")
    w = listed("angular_frequencies", lambda x, p: _number(x, p, u.rate), "numbers (1/time)")
    phases = listed("phases", lambda x, p: _number(x, p), "numbers (radians)") if "phases" in d else None
    return Oscillation(amplitudes=a, angular_frequencies=w, phases=phases,
                       center=_get(d, "center", path, lambda x, p: _vector(x, p, u.L), default=None))


def _pivot_motion(d, path, u: Units, base_dir):
    """A pivot's motion: a table (its ``kind`` may be left out), an oscillation or a uniform rotation."""
    return _motion(d, path, u, base_dir, kinds=PIVOT_MOTIONS, pivot=True)


def _tabulated(d, path, u: Units, base_dir, pivot: bool = False) -> TabulatedMotion:
    """A tabulated motion: ``times`` (time units) and ``positions`` (length) inline, with ``orientations`` (unit
    quaternions w, x, y, z) for a driven body, or ``file``: a CSV file (relative to the scene file) with a header
    row t, x, y, z [, qw, qx, qy, qz]. The table itself is checked by the model (sorted, finite, no jumps)."""
    if "file" in d:
        extra = [k for k in ("times", "positions", "orientations") if k in d]
        if extra:
            raise ValidationError(f"{path}.{extra[0]}", "give either file (a CSV table) or times and positions")
        t, x, q, where = _table_file(d["file"], f"{path}.file", base_dir)
        _check_times(t, u.T, where, "the rows")
    else:
        for key in ("times", "positions"):
            if key not in d:
                raise ValidationError(f"{path}.{key}", "missing: a tabulated motion needs times and positions "
                                                       "(or a CSV file)")
        if not isinstance(d["times"], list):
            raise ValidationError(f"{path}.times", f"expected a list of times, got {_describe(d['times'])}")
        t = np.array([_number(v, f"{path}.times[{i}]") for i, v in enumerate(d["times"])])
        if not isinstance(d["positions"], list):
            raise ValidationError(f"{path}.positions", f"expected a list of positions, got {_describe(d['positions'])}")
        x = np.array([_vector(v, f"{path}.positions[{i}]") for i, v in enumerate(d["positions"])]).reshape(-1, 3)
        _check_times(t, u.T, lambda k: f"{path}.times" + ("" if k is None else f"[{k}]"), "the samples")
        q = None
        if "orientations" in d:
            if not isinstance(d["orientations"], list):
                raise ValidationError(f"{path}.orientations", "expected a list of quaternions (w, x, y, z)")
            q = np.array([_vector(v, f"{path}.orientations[{i}]", n=4)
                          for i, v in enumerate(d["orientations"])]).reshape(-1, 4)
    if pivot and q is not None:
        raise ValidationError(f"{path}.orientations", "a pivot is a point: give its positions only")
    if q is not None:   # as a body's own quaternion: unit length to 1e-3, not normalised from any length
        norm = np.linalg.norm(q, axis=1)
        off = np.flatnonzero(~(np.abs(norm - 1.0) <= 1e-3))
        if off.size:
            k = int(off[0])
            at = where(k) if "file" in d else f"{path}.orientations[{k}]"
            raise ValidationError(at, f"expected a unit quaternion (w, x, y, z), got length {norm[k]:.6g}")
    out = np.flatnonzero(~np.all(np.abs(x * u.L) <= MAX_MAGNITUDE, axis=1))   # a scene's numbers' range
    if out.size:
        k = int(out[0])
        shown = ", ".join(f"{v:g}" for v in x[k])
        raise ValidationError(where(k) if "file" in d else f"{path}.positions[{k}]",
                              f"position [{shown}] is out of range (at most {MAX_MAGNITUDE:g} in SI units)")
    return TabulatedMotion(t * u.T, x * u.L, q)


def _table_file(value, path, base_dir):
    """(times (K,), positions (K,3), quaternions (K,4) or None, where) of a motion's CSV file, in the scene's units;
    ``where(k)`` names the file's line of sample k (the file itself for None). Confined as a UDF's
    ``\\include`` is: a relative path inside the scene file's folder (the working folder for a scene given as
    text), no ``..`` or link leading out, a regular file of a sane size; a rejected file's content is never
    echoed."""
    import csv

    name = _string(value, path)
    p = beside_scene(name, base_dir if base_dir is not None else Path.cwd(), path, "motion table")
    text = read_input_text(p, "motion table")
    # (line number, cells) of each row; blank and comment lines skipped, so that errors name the file's own lines
    rows = [(n, next(csv.reader([line]))) for n, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        raise ValidationError(str(p), "empty: expected a header row t, x, y, z [, qw, qx, qy, qz] and one row a sample")
    line, first = rows[0]
    head = [c.strip().lower() for c in first]
    if tuple(head) not in (TABLE_COLUMNS, TABLE_COLUMNS + TABLE_QUATERNION):
        raise ValidationError(f"{p}:{line}", "the first row is not the header: expected t, x, y, z or t, x, y, z, "
                                             "qw, qx, qy, qz")
    rows = rows[1:]
    out = np.empty((len(rows), len(head)))
    for i, (line, row) in enumerate(rows):
        if len(row) != len(head):
            raise ValidationError(f"{p}:{line}", f"{len(row)} values, expected {len(head)} ({', '.join(head)})")
        for j, cell in enumerate(row):
            # a plain decimal number: Python's float() also takes 1_0 and digits of other scripts
            if not _CSV_NUMBER.fullmatch(cell.strip()):
                raise ValidationError(f"{p}:{line}", f"column {head[j]}: {cell.strip()[:24]!r} is not a "
                                                     "number (digits, a point, an exponent)")
            out[i, j] = float(cell)
            if not math.isfinite(out[i, j]):
                raise ValidationError(f"{p}:{line}", f"column {head[j]}: {cell.strip()[:24]!r} is not a finite "
                                                     "number: every sample needs a value")
    lines = [line for line, _ in rows]
    return (out[:, 0], out[:, 1:4], (out[:, 4:8] if len(head) == 8 else None),
            lambda k: str(p) if k is None else f"{p}:{lines[k]}")


#: A number in a motion table: decimal digits with an optional point and exponent (inf and nan are named apart).
_CSV_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)", re.I | re.A)
#: The longest span of a motion table's times (s): its spline holds powers up to the third of a sample interval, so
#: far beyond it the arithmetic overflows (and no run is that long).
MAX_TABLE_SPAN = 1e100


def _check_times(t: np.ndarray, seconds: float, where, rows: str) -> None:
    """A motion table's times (K,) as written (``seconds`` each), before the model checks its samples: enough of
    them, strictly increasing and within :data:`MAX_TABLE_SPAN`. Each error names the sample as ``where(k)`` (a
    file's line, a list's index; the whole table for None) in the numbers written; ``rows``: the samples in the
    user's words."""
    if len(t) < MIN_SAMPLES:
        raise ValidationError(where(None), f"{len(t)} sample(s): a table needs at least {MIN_SAMPLES} (the spline's "
                                           "end slopes come from four samples); sample the motion more often")
    step = np.diff(t)
    if np.any(step <= 0):
        k = int(np.argmax(step <= 0)) + 1
        raise ValidationError(where(k), f"t = {float(t[k])!r} does not come after t = {float(t[k - 1])!r}: times "
                                        f"must increase strictly (sort {rows}, drop repeated times)")
    if (t[-1] - t[0]) * seconds > MAX_TABLE_SPAN:
        raise ValidationError(where(len(t) - 1), f"t = {float(t[-1])!r}: the table spans more than "
                                                 f"{MAX_TABLE_SPAN:g} s, beyond what its spline can hold; give times "
                                                 "over the run, in the scene's time unit")


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


# ---------------------------------------------------------------------------- writing
