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
import math
import re
import tomllib
from pathlib import Path

import numpy as np

from ..errors import ValidationError
from ..model.scene import (
    CONTACT_MODELS,
    FRICTION_LAWS,
    METHODS,
    MU0,
    STANDARD_GRAVITY,
    Body,
    ContactRim,
    ContactSphere,
    Dipole,
    PairRestitution,
    RotatingField,
    Scene,
    Settings,
    StaticWall,
    check_not_too_light,
    name_key,
)
from .files import name_of_file, read_input_text
from .scenefile_keys import (
    BODY_KEYS,
    CONTACT_KEYS,
    DIPOLE_KEYS,
    FIELD_KEYS,
    FORMAT,
    FORMAT_VERSION,
    MASS_PROPERTY_KEYS,
    MAX_MAGNITUDE,
    MAX_STEPS,
    MESH_SUFFIXES,
    MOTION_KEYS,
    ORIENTATION_KEYS,
    PAIR_KEYS,
    PIVOT_MOTIONS,
    ROLES,
    ROTATING_KEYS,
    SETTINGS_KEYS,
    SHAPE_KEYS,
    TABLE_COLUMNS,
    TABLE_QUATERNION,
    TOP_KEYS,
    UNIT_KEYS,
    WALL_KEYS,
)
from .scenefile_motions import MAX_TABLE_SPAN, _motion, _pivot_motion
from .scenefile_shapes import MeshSource, _mass_properties, _shape
from .scenefile_values import (
    MAX_ANGLE_DEG,
    SI,
    Units,
    _choice,
    _describe,
    _get,
    _matrix,
    _number,
    _orientation,
    _string,
    _table,
    _vector,
    euler_deg_orientation,
)

#: The reading is split by what it reads: the format's keys and limits (.scenefile_keys), values (.scenefile_values),
#: motions (.scenefile_motions), shapes and meshes (.scenefile_shapes); their public names are this module's too.
__all__ = ["FORMAT", "FORMAT_VERSION", "load_scene", "loads", "scene_from_dict", "euler_deg_orientation",
           "BODY_KEYS", "CONTACT_KEYS", "DIPOLE_KEYS", "FIELD_KEYS", "MASS_PROPERTY_KEYS", "MAX_ANGLE_DEG",
           "MAX_MAGNITUDE", "MAX_STEPS", "MAX_TABLE_SPAN", "MESH_SUFFIXES", "MOTION_KEYS", "MeshSource",
           "ORIENTATION_KEYS", "PAIR_KEYS", "PIVOT_MOTIONS", "ROLES", "ROTATING_KEYS", "SETTINGS_KEYS", "SHAPE_KEYS",
           "SI", "TABLE_COLUMNS", "TABLE_QUATERNION", "TOP_KEYS", "UNIT_KEYS", "Units", "WALL_KEYS"]


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
    if isinstance(raw_bodies, list) and not raw_bodies:   # given, and empty: not missing
        raise ValidationError("bodies", "empty (bodies = []): a scene needs at least one [[bodies]] table, a "
                                        "pendulum or a free body")
    if not isinstance(raw_bodies, list):
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
    try:
        return scene.checked()
    except ValidationError as err:   # the model's PairRestitution.names is the file's `bodies`
        m = _PAIR_NAMES.match(err.path)
        if m is None:
            raise
        raise ValidationError(f"{m.group(1)}.bodies{err.path[m.end():]}", err.message) from None


#: The model's path of a pair_restitution entry's names (``pair_restitution[3].names[1]``).
_PAIR_NAMES = re.compile(r"(pair_restitution\[\d+\])\.names")


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
