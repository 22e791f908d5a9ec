"""Scene → PEM UDF input file, and the PEM schema ("def") file it ``\\include``\\s.

The inverse of :mod:`.udf_scene`: :func:`write_udf` writes a
:class:`~pem_physics.model.Scene` as an input file the original PEM engine
runs (``pem -I scene.udf -O out.udf``) and that :func:`pem_physics.load_scene`
reads back into a scene that simulates the same. The schema is described here
in Python (:func:`schema`, every def version the reader knows: 1.0–1.3) and
its text generated from that (:func:`def_text`); the data are written
positionally in that schema's field order by one schema walker, which refuses
a value tree with a field missing or extra, so none can be missed or misplaced.

What the file says and why:

- Each scene body gets one ``body[]`` definition (identical definitions are
  shared) and one placement: pendulum bodies in ``simulation.pendulum[]``,
  fixed and driven bodies in ``simulation.body[]`` (``fixed``,
  ``constantVelocity``, ``ellipticRotation``). Moving bodies come first; each
  placement's ``// pem:`` notes (:mod:`.udf_notes`) give its name and its place
  in the scene, and the scene's its name, contact coefficients and dop853
  tolerances: comment lines PEM skips, from which the reader restores them.
- A ``free`` body (it turns about its fixed centre of mass) is written as a
  pendulum pivoted at its centre of mass — the same motion (PEM's own free
  ellipsoid sample is written so); a ``role = "free"`` note brings it back free.
- PEM starts a pendulum from L = I·ω with its file tensor I (body axes) and
  the lab ω, whatever the orientation: right only when the body axes are the
  lab's. A body that spins at t = 0 and is turned is therefore written in
  lab-aligned body axes (orientation = identity, shapes, dipoles and tensor
  turned with it): the same motion, and the state PEM starts from is the
  scene's. (PEM's frame re-orthonormalisation depends on the axes, so its
  RK4 then differs from ours in the scene's axes by its O(|ω·dt|⁵) step error.)
- PEM simulates a pendulum with its ``analysis`` block (mass, centre of mass
  and tensor about the body origin = the pivot), not with the shapes, so that
  block carries the scene's exact mass properties. The shapes are written too,
  as PEM shapes, for PEM's viewer and analyser; a body given only by its mass
  properties gets one equivalent shape: the solid ellipsoid with the same mass,
  centre and tensor (a point mass when the tensor about the centre is zero),
  noted ``stand_in`` so the reader does not take it for one of the scene's.
- Units: ``unitParameter`` gives the file's length, mass, time and ampere in
  SI. ``units="si"`` (default) writes SI values; ``"cgs"`` writes the PEM
  samples' units (cm, g, s, A); a 4-tuple gives any. Every number is the
  shortest decimal that the reader converts back to exactly the scene's SI
  value (when one exists; otherwise the nearest), so a round trip through the
  file is exact in SI and nearly always exact in other units.
- ``friction`` is written in M·L²/T and the orbit's ``r1``, ``r2`` as lengths
  (what the engine does with them, whatever the schema's unit tags say).

What PEM cannot express raises :class:`~pem_physics.errors.ValidationError`
naming the item: integrators other than ``pem-rk4`` / ``pem-euler``; a uniform
field together with a rotating one; a rotating field with a phase; friction
(before def 1.1) or a periodic box (before 1.3) in older def versions; a step
count beyond PEM's ``int``; and tensors PEM would invert differently from us
(see :func:`_check_pem_inverse`), e.g. a spinning point-mass pendulum.

Output is deterministic: the same scene gives byte-identical files. Files are
written atomically (:func:`pem_physics.io.files.atomic_open`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ValidationError
from ..model.analytic import Oscillation, UniformRotation
from ..model.inertia import Cuboid, Cylinder, Ellipsoid, MassProperties, Mesh, PointMass, Rod, Sphere
from ..model.motion import TabulatedMotion
from ..model.scene import ConstantVelocity, EllipticOrbit, Scene
from .scene_writer import _value as _toml
from .udf_notes import NOTE_MARK, NOTES
from .udf_scene import _Units

__all__ = ["VERSIONS", "DEF_FILES", "UNITS", "schema", "def_text", "udf_text", "write_def", "write_udf"]

#: def versions the writer (and the reader) know.
VERSIONS = ("1.0", "1.1", "1.2", "1.3")
#: The def file name PEM uses for each version (the input ``\include``\ s it by name).
DEF_FILES = {"1.0": "pem_def.udf", "1.1": "pem1_1_def.udf", "1.2": "pem1_2_def.udf", "1.3": "pem1_3_def.udf"}
#: Named unit systems: (length m, mass kg, time s, ampere A) of one file unit.
UNITS = {"si": (1.0, 1.0, 1.0, 1.0), "cgs": (1e-2, 1e-3, 1.0, 1.0)}
#: PEM's methods and the name its ``simulation.integrator`` gives them.
INTEGRATORS = {"pem-rk4": "4thOrderRungeKutta", "pem-euler": "Euler"}
#: PEM reads the step counts into a C ``int``.
INT_MAX = 2**31 - 1
#: PEM's pseudo-inverse of a singular tensor drops eigenvalues ≤ this (absolute, in file units).
PEM_EPS = 1e-8
#: Our engine treats eigenvalues below this fraction of the largest as zero (engine.system.ZERO_MOMENT).
ZERO_MOMENT = 1e-10


# ============================================================================ the schema, as Python

@dataclass(frozen=True)
class F:
    """One schema field: ``name``, its type, ``array`` (``name[]``), a unit tag and a comment.

    type: "double" | "int" | "string" | "ID" | a class name (e.g. "Vector3d") |
    ("select", options) | ("ref", class) | a tuple of F (a struct).
    """

    name: str
    type: object
    array: bool = False
    unit: str | None = None
    note: str | None = None


def _vec(name, unit=None, note=None):
    return F(name, "Vector3d", unit=unit, note=note)


def _frame_fields():
    return (F("orientation", (_vec("u1"), _vec("u2"), _vec("u3")), note="body axes u1, u2, u3 in lab components"),)


def _magnet(version):
    # 1.3 renamed the dipole's "center" to "position".
    where = "position" if version == "1.3" else "center"
    return (_vec(where, "Length", "dipole position, body coordinates"),
            _vec("dipole", "Ampere*Length^2", "dipole moment, body coordinates"))


def schema(version: str = "1.3") -> dict:
    """The PEM schema of def ``version`` as Python: classes, global (input) fields, record fields.

    Returns {"header": [(name, value)], "classes": [(name, type, unit)], "globals": (F, …),
    "results": (F, …)}. Field names and order are PEM's (they are the file format);
    unit tags are the physically right ones (the engine ignores them).
    """
    if version not in VERSIONS:
        raise ValidationError("version", f"unknown PEM def version {version!r}; choose one of {', '.join(VERSIONS)}")
    v = VERSIONS.index(version)
    half = "half length"
    shape = (
        _vec("center", "Length", "shape centre, body coordinates"),
        F("mass", "double", unit="Mass"),
        F("shape", ("select", ("sphere", "cylinder", "ellipsoid", "cuboid", "mesh", "line", "point"))),
        F("sphere", (F("radius", "double", unit="Length"),)),
        F("cylinder", (F("radius", "double", unit="Length"), F("length", "double", unit="Length", note=half),
                       _vec("d", note="axis direction"))),
        F("ellipsoid", (F("a", "double", unit="Length", note=half), F("b", "double", unit="Length", note=half),
                        F("c", "double", unit="Length", note=half), _vec("da", note="direction of a"),
                        _vec("db", note="direction of b"))),
        F("cuboid", (F("a", "double", unit="Length", note=half), F("b", "double", unit="Length", note=half),
                     F("c", "double", unit="Length", note=half), _vec("da", note="direction of a"),
                     _vec("db", note="direction of b"))),
        F("mesh", (F("vertex", "Vertex", array=True), F("face", "Face", array=True))),
        F("line", (F("l", "double", unit="Length", note=half), _vec("d", note="direction"))),
    )
    body = (
        F("id", "ID"),
        F("shape", shape, array=True),
        F("magnet", _magnet(version), array=True),
        F("color", (F("red", "double"), F("green", "double"), F("blue", "double"), F("trans", "double")),
          array=True),
        F("analysis", (F("mass", "double", unit="Mass"), _vec("massCenter", "Length", "body coordinates"),
                       F("inertiaMoment", "SymMat3x3", unit="Mass*Length^2", note="about the body origin")),
          note="what PEM simulates with"),
    )
    classes = [
        ("Vector3d", (F("x", "double", unit="unit"), F("y", "double", unit="unit"), F("z", "double", unit="unit")),
         "unit"),
        ("SymMat3x3", tuple(F(k, "double", unit="unit") for k in ("xx", "yy", "zz", "yx", "zx", "zy")), "unit"),
        ("Vertex", (F("id", "ID"), _vec("position", "Length")), None),
        ("Face", (F("id", "ID"), F("vertex", ("ref", "Vertex"), array=True)), None),
        ("Body", body, None),
    ]
    sim = [F("time", (F("simulationSteps", "int"), F("reportSteps", "int"), F("dt", "double", unit="Time")))]
    if v >= 3:
        sim.append(F("systemSize", (_vec("min", "Length"), _vec("max", "Length")), note="periodic box"))
    sim.append(F("integrator", ("select", ("4thOrderRungeKutta", "Euler"))))
    if v >= 3:
        sim.append(F("periodicBoundaryCondition", ("select", ("false", "true"))))
    sim += [
        F("pendulum", (F("body", ("ref", "Body")), _vec("position", "Length", "pivot, lab"), *_frame_fields(),
                       _vec("angularVelocity", "1/Time"),
                       F("constraint", (F("flag", ("select", ("false", "true"))),
                                        _vec("rotationAxis", note="hinge axis, lab")))), array=True),
        F("body", (F("body", ("ref", "Body")), _vec("position", "Length", "body origin, lab"), *_frame_fields(),
                   F("type", ("select", ("fixed", "constantVelocity", "ellipticRotation"))),
                   F("constantVelocity", (_vec("velocity", "Length/Time"),)),
                   F("ellipticRotation", (_vec("center", "Length"), F("initialPhase", "double"),
                                          F("angularVelocity", "double", unit="1/Time"),
                                          _vec("r1", "Length"), _vec("r2", "Length")),
                     note="position = center + r1 cos(phase) + r2 sin(phase)")), array=True),
        _vec("gravity", "Length/Time^2"),
        # "magnetiField" (sic) is PEM's spelling.
        F("magnetiField", (F("fieldType", ("select", ("false", "constantField", "ellipticRotationField"))),
                           F("constantField", (_vec("B", "Mass/Ampere/Time^2"),)),
                           F("ellipticRotationField", (F("angularVelocity", "double", unit="1/Time"),
                                                       _vec("B1", "Mass/Ampere/Time^2"),
                                                       _vec("B2", "Mass/Ampere/Time^2"))))),
        F("freeSpacePermeability", "double", unit="Mass*Length/Time^2/Ampere^2"),
    ]
    if v >= 1:
        sim.append(F("PseudoFrictionTorque", (F("flag", ("select", ("false", "true"))),
                                              F("coefficient", "double", unit="Mass*Length^2/Time",
                                                note="torque = -coefficient * omega"))))
    globals_ = (
        F("unitParameter", (F("length", "double", unit="m"), F("mass", "double", unit="kg"),
                            F("time", "double", unit="s"), F("ampere", "double", unit="A"))),
        F("body", "Body", array=True),
        F("simulation", tuple(sim)),
    )
    res_pend = [*_frame_fields(), _vec("angularVelocity", "1/Time"),
                _vec("angularMomentum", "Mass*Length^2/Time"), _vec("torque", "Mass*Length^2/Time^2")]
    res_body = [_vec("position", "Length"), *_frame_fields()]
    if v >= 2:  # 1.2 added the lab positions and moments of the dipoles to each record
        lab = (_vec("position" if v >= 3 else "center", "Length"), _vec("dipole", "Ampere*Length^2"))
        res_pend.append(F("magnet", lab, array=True))
        res_body.append(F("magnet", lab, array=True))
    results = (F("simulationResult", (F("pendulum", tuple(res_pend), array=True),
                                      F("body", tuple(res_body), array=True),
                                      _vec("gravity", "Length/Time^2"), _vec("magnetiField", "Mass/Ampere/Time^2"),
                                      F("cpuTime", "double", unit="s"))),)
    header = [("EngineType", "pem"), ("EngineVersion", "1" if version == "1.0" else version), ("IOType", "INOUT"),
              ("ProjectName", ""), ("Comment", f"PEM schema, def version {version} (written by pem_physics)"),
              ("Action", "pem.act;pem_show.act;pem_analyzer.act")]
    return {"header": header, "classes": classes, "globals": globals_, "results": results}


# ---------------------------------------------------------------------------- def text

def _type_text(t, indent: int) -> str:
    if isinstance(t, str):
        return t
    if t[0] == "select":
        return "select{" + ",".join(f'"{o}"' for o in t[1]) + "}"
    if t[0] == "ref":
        return f"<{t[1]},ID>"
    pad = "\t" * (indent + 1)
    return "{\n" + "".join(pad + _field_text(f, indent + 1) + "\n" for f in t) + "\t" * indent + "}"


def _field_text(f: F, indent: int) -> str:
    unit = f"[{f.unit}]" if f.unit else ""
    note = f" // {f.note}" if f.note else ""
    return f"{f.name}{'[]' if f.array else ''}:{_type_text(f.type, indent)}{unit}{note}"


def def_text(version: str = "1.3") -> str:
    """The text of PEM's def file for ``version`` (header, unit table, classes, inputs, records)."""
    s = schema(version)
    out = ["\\begin{header}", "\\begin{def}"]
    out += [f"\t{name}:string;" for name, _ in s["header"]]
    out += ["\\end{def}", "\\begin{data}"]
    out += [f'{name}:"{value}"' for name, value in s["header"]]
    out += ["\\end{data}", "\\end{header}", ""]
    # GOURMET's unit table: the file's units in SI, taken from unitParameter.
    out += ["\\begin{unit}"]
    out += [f"[{q}] = {{$unitParameter.{k}}} [{si}]"
            for q, k, si in (("Length", "length", "m"), ("Mass", "mass", "kg"), ("Time", "time", "s"),
                             ("Ampere", "ampere", "A"))]
    out += ["\\end{unit}", "", "\\begin{def}"]
    for name, t, unit in s["classes"]:
        out.append(f"class {name}:{_type_text(t, 0)}{f'[{unit}]' if unit else ''}")
    out += ["\\end{def}", "", "\\begin{global_def}"]
    out += [_field_text(f, 0) for f in s["globals"]]
    out += ["\\end{global_def}", "", "\\begin{def}"]
    out += [_field_text(f, 0) for f in s["results"]]
    out += ["\\end{def}", ""]
    return "\n".join(out)


# ============================================================================ data: a value tree → text

def _resolve(t, classes: dict):
    while isinstance(t, str) and t in classes:
        t = classes[t]
    return t


def _zero(t, classes: dict, array: bool = False):
    """The all-default value of a type: 0, "", the first select option, [] for arrays, dicts for structs."""
    if array:
        return []
    t = _resolve(t, classes)
    if t == "double":
        return 0.0
    if t in ("int", "ID"):
        return 0
    if t == "string":
        return ""
    if t[0] == "select":
        return t[1][0]
    if t[0] == "ref":
        return 0
    return {f.name: _zero(f.type, classes, f.array) for f in t}


class _Text:
    """Positional UDF text of values (dicts / lists / numbers / strings) in a schema's field order."""

    WIDTH = 110  # a value whose one-line form is longer is broken over lines

    def __init__(self, classes: dict):
        self.classes = classes

    def value(self, x, t, array: bool, path: str) -> tuple[str, bool]:
        """(one-line text, is-composite) of x; composite values are emitted without separators."""
        if array:
            if not isinstance(x, list):
                raise TypeError(f"{path}: expected a list")
            return "[" + self._join([self.value(e, t, False, f"{path}[{i}]") for i, e in enumerate(x)]) + "]", True
        t = _resolve(t, self.classes)
        if isinstance(t, tuple) and t and isinstance(t[0], F):
            given = set(x) - {NOTES} if isinstance(x, dict) else set()
            if not isinstance(x, dict) or given != {f.name for f in t}:
                extra = sorted(given - {f.name for f in t}) if isinstance(x, dict) else x
                missing = sorted({f.name for f in t} - given) if isinstance(x, dict) else []
                raise TypeError(f"{path}: fields do not match the schema (extra {extra}, missing {missing})")
            # notes are line comments: their text holds a line break, so pretty() never writes this value on one line
            notes = "".join(f"{NOTE_MARK} {n}\n" for n in x.get(NOTES, ()))
            return "{" + notes + self._join([self.value(x[f.name], f.type, f.array, f"{path}.{f.name}")
                                             for f in t]) + "}", True
        if t == "double":
            if not isinstance(x, str):
                raise TypeError(f"{path}: a double must arrive formatted, got {x!r}")
            return x, False
        if t in ("int", "ID") or t[0] == "ref":
            if not isinstance(x, int) or isinstance(x, bool):
                raise TypeError(f"{path}: expected an int, got {x!r}")
            return str(x), False
        if t[0] == "select" and x not in t[1]:
            raise TypeError(f"{path}: {x!r} is not one of {t[1]}")
        return f'"{x}"', False

    @staticmethod
    def _join(items) -> str:
        # Scalars are followed by a comma, structs and arrays by nothing (PEM's own files do the same).
        out = []
        for i, (text, composite) in enumerate(items):
            out.append(text if composite or i == len(items) - 1 else text + ",")
        return "".join(out)

    def composite(self, t, array: bool) -> bool:
        t = _resolve(t, self.classes)
        return array or (isinstance(t, tuple) and bool(t) and isinstance(t[0], F))

    def pretty(self, x, t, array: bool, path: str, indent: int) -> str:
        """Text of x, broken over lines (one element or field per line) where one line would be too long."""
        flat, composite = self.value(x, t, array, path)
        if not composite or ("\n" not in flat and len(flat) + indent <= self.WIDTH):
            return flat
        pad = " " * (indent + 1)
        if array:
            parts = [(self.pretty(e, t, False, f"{path}[{i}]", indent + 1), self.composite(t, False))
                     for i, e in enumerate(x)]
            open_, close = "[", "]"
        else:
            parts = [(self.pretty(x[f.name], f.type, f.array, f"{path}.{f.name}", indent + 1),
                      self.composite(f.type, f.array)) for f in _resolve(t, self.classes)]
            open_, close = "{", "}"
        lines = [pad + (text if comp or i == len(parts) - 1 else text + ",")
                 for i, (text, comp) in enumerate(parts)]
        if not array:
            lines = [f"{pad}{NOTE_MARK} {n}" for n in x.get(NOTES, ())] + lines
        return open_ + "\n" + "\n".join(lines) + "\n" + " " * indent + close


# ============================================================================ scene → value tree

def _unit_system(units) -> tuple[float, float, float, float]:
    if isinstance(units, str):
        if units.lower() not in UNITS:
            raise ValidationError("units", f"unknown unit system {units!r}; choose one of {', '.join(UNITS)} "
                                           "or give (length, mass, time, ampere) in SI")
        return UNITS[units.lower()]
    try:
        vals = tuple(float(x) for x in units)
    except (TypeError, ValueError):
        raise ValidationError("units", f"expected 'si', 'cgs' or 4 positive numbers, got {units!r}") from None
    if len(vals) != 4 or not all(np.isfinite(vals)) or not all(x > 0 for x in vals):
        raise ValidationError("units", f"expected 4 positive numbers (length, mass, time, ampere), got {units!r}")
    return vals


class _Numbers:
    """Formats SI values in file units: the shortest decimal the reader maps back to the exact value."""

    def __init__(self, units):
        self.units = units
        self.u = _Units(units)
        self.si = units == (1.0, 1.0, 1.0, 1.0)
        # forward maps (file → SI) exactly as udf_scene applies them, and the scale they multiply by
        u = self.u
        self.kinds = {
            "raw": (lambda x: x, 1.0),
            "length": (u.length, u.L),
            "mass": (lambda x: u.M * x, u.M),
            "inertia": (u.inertia, u.M * u.L**2),
            "omega": (u.omega, 1.0 / u.T),
            "moment": (u.moment, u.A * u.L**2),
            "field": (u.field, u.M / (u.A * u.T**2)),
            "mu0": (u.mu0, u.M * u.L / (u.T**2 * u.A**2)),
            "accel": (u.accel, u.L / u.T**2),
            "friction": (u.friction, u.M * u.L**2 / u.T),
            "velocity": (u.velocity, u.L / u.T),
            "time": (lambda x: u.T * x, u.T),
        }

    def __call__(self, x, kind: str = "raw") -> str:
        x = float(x) + 0.0  # + 0.0 turns −0.0 into 0.0: the same number, a tidier file
        forward, scale = self.kinds[kind]
        if self.si or kind == "raw":
            return _double(repr(x))
        q = x / scale
        for digits in range(1, 18):
            s = f"{q:.{digits}g}"
            if forward(float(s)) == x:
                return _double(s)
        return _double(repr(q))  # no decimal maps back exactly: the nearest one

    def file_value(self, x, kind: str) -> float:
        return float(self(x, kind))

    def vec(self, a, kind: str = "raw") -> dict:
        return {k: self(c, kind) for k, c in zip("xyz", np.asarray(a, dtype=float))}


def _double(s: str) -> str:
    """A double's text with a decimal point or exponent, so no reader takes it for an int."""
    if s in ("0", "-0"):
        return s + ".0"
    return s if any(c in s for c in ".eE") else s + ".0"


class _BodyAxes:
    """Body coordinates x (scene) → file body coordinates R·(x − offset).

    offset: a free body's centre of mass (its pivot in the file); R: Uᵀ when a spinning body is
    re-expressed in lab-aligned axes (None: the scene's own axes).
    """

    def __init__(self, offset=None, R=None):
        self.offset = np.zeros(3) if offset is None else np.asarray(offset, dtype=float)
        self.R = None if R is None else np.asarray(R, dtype=float)

    def point(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float) - self.offset
        return x if self.R is None else x @ self.R.T

    def direction(self, d) -> np.ndarray:
        d = np.asarray(d, dtype=float)
        return d if self.R is None else d @ self.R.T

    def mass_properties(self, mp: MassProperties) -> MassProperties:
        out = MassProperties(mp.mass, mp.center_of_mass - self.offset, mp.inertia)
        return out if self.R is None else out.rotated(self.R)


class _Writer:
    def __init__(self, scene: Scene, units, version: str, method: str | None):
        if not isinstance(scene, Scene):
            raise ValidationError("scene", f"expected a Scene, got {type(scene).__name__}")
        if version not in VERSIONS:
            raise ValidationError("version", f"unknown PEM def version {version!r}; "
                                             f"choose one of {', '.join(VERSIONS)}")
        self.version = version
        self.v = VERSIONS.index(version)
        self.scene = scene.checked()
        self.units = _unit_system(units)
        self.num = _Numbers(self.units)
        s = schema(version)
        self.classes = {name: t for name, t, _ in s["classes"]}
        self.globals = s["globals"]
        self.method = self._method(method)
        self.defs: list = []          # body definitions (value trees), in id order
        self.def_ids: dict = {}       # one-line text of a definition (ids zeroed) → id
        self.next_vertex = 0
        self.next_face = 0

    # ------------------------------------------------------------------ checks of what PEM can say

    def _method(self, method):
        m = self.scene.settings.method if method is None else method
        if m not in INTEGRATORS:
            where = "settings.method" if method is None else "method"
            raise ValidationError(where, f"PEM integrates with 'pem-rk4' or 'pem-euler' only, not {m!r} "
                                         "(choose one for the file: method=… / --method)")
        return m

    def _check_scene(self):
        sc = self.scene
        for i, b in enumerate(sc.bodies):
            if b.translating:
                raise ValidationError(f"bodies[{i}].translate", f"PEM has no translation: {b.name!r} is a translating "
                                      "free body, which a UDF file cannot express (write a TOML scene instead)")
            if b.contacts:
                raise ValidationError(f"bodies[{i}].contacts", f"PEM has no contacts: {b.name!r} carries contact "
                                      "spheres, which a UDF file cannot express (write a TOML scene instead)")
            if b.pivot_motion is not None:
                raise ValidationError(f"bodies[{i}].pivot_motion", f"PEM has no moving pivots: {b.name!r} swings "
                                      "from one, which a UDF file cannot express (write a TOML scene instead)")
            if isinstance(b.motion, (TabulatedMotion, Oscillation, UniformRotation)):
                what = ("a table" if isinstance(b.motion, TabulatedMotion) else
                        "an oscillation" if isinstance(b.motion, Oscillation) else "a uniform rotation")
                raise ValidationError(f"bodies[{i}].motion", f"PEM's driven bodies move at a constant velocity or on "
                                      f"an elliptic orbit: {b.name!r} follows {what}, which a UDF file cannot express "
                                      "(write a TOML scene instead)")
        if sc.walls:
            raise ValidationError("walls", f"PEM has no walls: {sc.walls[0].name!r} cannot be written to a UDF file "
                                           "(write a TOML scene instead)")
        if sc.rotating_field is not None:
            if np.any(sc.field):
                raise ValidationError("field", "PEM has either a uniform or a rotating field, not both "
                                               f"(field = {sc.field.tolist()} T with a rotating field)")
            if sc.rotating_field.phase != 0:
                raise ValidationError("rotating_field.phase", "PEM's rotating field has no phase "
                                                              f"(got {sc.rotating_field.phase})")
        if sc.friction and self.v < 1:
            raise ValidationError("friction", "def version 1.0 has no friction (PseudoFrictionTorque came in 1.1)")
        if sc.periodic_box is not None and self.v < 3:
            raise ValidationError("periodic_box", f"def version {self.version} has no periodic box (came in 1.3)")
        st = sc.settings
        steps, report = st.steps, st.record_every
        if steps > INT_MAX:
            raise ValidationError("settings.t_end", f"{steps} steps; PEM counts steps in an int (≤ {INT_MAX})")
        if report > INT_MAX:
            raise ValidationError("settings.record_interval", f"every {report} steps; PEM's limit is {INT_MAX}")

    # ------------------------------------------------------------------ bodies

    def _shape(self, shape, tf: _BodyAxes, path) -> dict:
        """A PEM shape (value tree) for one of our shapes, in the file's body axes ``tf``."""
        n = self.num
        z = _zero(self.classes["Body"][1].type, self.classes)  # the shape struct (Body.shape[])
        if isinstance(shape, Mesh):
            verts = [{"id": i, "position": n.vec(p, "length")} for i, p in enumerate(tf.point(shape.vertices))]
            faces = [{"id": j, "vertex": [int(k) for k in f]} for j, f in enumerate(shape.faces)]
            z.update(center=n.vec(np.zeros(3), "length"), mass=n(shape.mass, "mass"), shape="mesh",
                     mesh={"vertex": verts, "face": faces})
            return {**self._fill(z), NOTES: [_note("name", shape.name)]}
        z.update(center=n.vec(tf.point(shape.center), "length"), mass=n(shape.mass, "mass"))
        if isinstance(shape, Sphere):
            z.update(shape="sphere", sphere={"radius": n(shape.radius, "length")})
        elif isinstance(shape, Cylinder):
            z.update(shape="cylinder", cylinder={"radius": n(shape.radius, "length"),
                                                 "length": n(shape.half_length, "length"),
                                                 "d": n.vec(tf.direction(shape.axis))})
        elif isinstance(shape, (Cuboid, Ellipsoid)):
            kind = "cuboid" if isinstance(shape, Cuboid) else "ellipsoid"
            a, b, c = (n(s, "length") for s in shape.semi_axes)
            z.update(shape=kind, **{kind: {"a": a, "b": b, "c": c, "da": n.vec(tf.direction(shape.axes[0])),
                                           "db": n.vec(tf.direction(shape.axes[1]))}})
        elif isinstance(shape, Rod):
            z.update(shape="line", line={"l": n(shape.half_length, "length"),
                                         "d": n.vec(tf.direction(shape.direction))})
        elif isinstance(shape, PointMass):
            z.update(shape="point")
        else:
            raise ValidationError(path, f"PEM has no shape like {type(shape).__name__}")
        return self._fill(z)

    def _fill(self, z: dict) -> dict:
        """Format the zeros left in a shape tree (every double must arrive as text)."""
        def fix(x):
            if isinstance(x, dict):
                return {k: fix(v) for k, v in x.items()}
            if isinstance(x, list):
                return [fix(v) for v in x]
            if isinstance(x, float):
                return self.num(x)
            return x
        return fix(z)

    def _equivalent_shape(self, mp: MassProperties) -> dict:
        """One PEM shape with the mass, centre and tensor of ``mp`` (file axes): a solid ellipsoid or a point.

        Semi-axes² = 5/(2M)·(I_j + I_k − I_i) from the principal moments I_i about the centre.
        """
        lam, axes = mp.principal()
        m = mp.mass
        if not lam.max() > 0:
            return {**self._shape(PointMass(mass=m, center=mp.center_of_mass), _BodyAxes(), ""),
                    NOTES: [_note("stand_in", True)]}
        s = np.sqrt(np.clip(2.5 / m * (lam.sum() - 2 * lam), 0.0, None))
        n = self.num
        z = _zero(self.classes["Body"][1].type, self.classes)
        z.update(center=n.vec(mp.center_of_mass, "length"), mass=n(m, "mass"), shape="ellipsoid",
                 ellipsoid={"a": n(s[0], "length"), "b": n(s[1], "length"), "c": n(s[2], "length"),
                            "da": n.vec(axes[:, 0]), "db": n.vec(axes[:, 1])})
        return {**self._fill(z), NOTES: [_note("stand_in", True)]}

    def _magnets(self, body, tf: _BodyAxes) -> list:
        where = "position" if self.v >= 3 else "center"
        return [{where: self.num.vec(tf.point(d.position), "length"),
                 "dipole": self.num.vec(tf.direction(d.moment), "moment")} for d in body.dipoles]

    def _color(self, body) -> list:
        if body.color is None:
            return []
        c = [float(x) for x in body.color]
        if len(c) != 4:
            raise ValidationError("color", f"expected (red, green, blue, trans), got {body.color!r}")
        return [dict(zip(("red", "green", "blue", "trans"), (self.num(x) for x in c)))]

    def _analysis(self, mp: MassProperties | None, path: str, relaid: bool) -> dict:
        n = self.num
        if mp is None:
            zero = self.num(0.0)
            return {"mass": zero, "massCenter": n.vec(np.zeros(3)),
                    "inertiaMoment": {k: zero for k in ("xx", "yy", "zz", "yx", "zx", "zy")}}
        I = mp.inertia_about(np.zeros(3))
        I = 0.5 * (I + I.T)
        tensor = {k: n(I[i, j], "inertia") for k, (i, j) in
                  (("xx", (0, 0)), ("yy", (1, 1)), ("zz", (2, 2)), ("yx", (1, 0)), ("zx", (2, 0)), ("zy", (2, 1)))}
        _check_pem_inverse(tensor, path, relaid)
        return {"mass": n(mp.mass, "mass"), "massCenter": n.vec(mp.center_of_mass, "length"),
                "inertiaMoment": tensor}

    def _axes(self, body, i: int) -> _BodyAxes:
        """The body axes the file uses for scene body i (see _BodyAxes)."""
        if not body.moving:
            return _BodyAxes()
        offset = np.zeros(3)
        if body.role == "free":
            # turns about its centre of mass: the pivot goes there, body coordinates move with it
            offset = np.asarray(body.resolved_mass_properties(f"bodies[{i}]").center_of_mass, dtype=float)
        U = np.asarray(body.orientation, dtype=float)
        if np.any(body.angular_velocity) and not np.array_equal(U, np.eye(3)):
            # PEM starts a pendulum from L = I_body·ω, its file tensor times the lab ω, whatever the
            # orientation: right only when the body axes are the lab's. So a spinning body is written
            # in lab-aligned body axes (orientation = identity); the motion is the same.
            return _BodyAxes(offset, U.T)
        return _BodyAxes(offset)

    def _definition(self, body, i: int, tf: _BodyAxes) -> int:
        """The id of a body definition for scene body i (shared with an identical earlier one)."""
        path = f"bodies[{i}]"
        mp = None
        if body.moving:
            mp = tf.mass_properties(body.resolved_mass_properties(path))
        if body.shapes:
            shapes = [self._shape(s, tf, f"{path}.shapes[{k}]") for k, s in enumerate(body.shapes)]
        elif mp is not None:
            shapes = [self._equivalent_shape(mp)]
        else:
            shapes = []
        d = {"id": 0, "shape": shapes, "magnet": self._magnets(body, tf), "color": self._color(body),
             "analysis": self._analysis(mp, f"{path}.mass_properties", tf.R is not None)}
        key = _Text(self.classes).value(d, "Body", False, path)[0]
        if key in self.def_ids:
            return self.def_ids[key]
        new_id = len(self.defs)
        d["id"] = new_id
        # Vertex and face ids are unique in the whole file (GOURMET resolves references by class and id).
        for s in shapes:
            mesh = s["mesh"]
            base_v, base_f = self.next_vertex, self.next_face
            for vtx in mesh["vertex"]:
                vtx["id"] += base_v
            for face in mesh["face"]:
                face["id"] += base_f
                face["vertex"] = [k + base_v for k in face["vertex"]]
            self.next_vertex += len(mesh["vertex"])
            self.next_face += len(mesh["face"])
        self.def_ids[key] = new_id
        self.defs.append(d)
        return new_id

    def _frame(self, U) -> dict:
        U = np.asarray(U, dtype=float)
        return {k: self.num.vec(U[r]) for r, k in enumerate(("u1", "u2", "u3"))}

    def _pendulum(self, body, i: int) -> dict:
        n = self.num
        tf = self._axes(body, i)
        ref = self._definition(body, i, tf)
        position = np.asarray(body.position, dtype=float)
        U = np.asarray(body.orientation, dtype=float)
        if body.role == "free":
            position = position + tf.offset @ U  # exactly as engine.system places a free body's pivot
        hinge = body.hinge is not None
        notes = self._body_notes(body, i) + ([_note("role", "free")] if body.role == "free" else [])
        return {NOTES: notes, "body": ref, "position": n.vec(position, "length"),
                "orientation": self._frame(np.eye(3) if tf.R is not None else U),
                "angularVelocity": n.vec(body.angular_velocity, "omega"),
                "constraint": {"flag": "true" if hinge else "false",
                               # PEM normalises the axis even when unused: never write a zero vector
                               "rotationAxis": n.vec(body.hinge if hinge else (0.0, 0.0, 1.0))}}

    def _source(self, body, i: int) -> dict:
        n = self.num
        zero = n.vec(np.zeros(3))
        out = {NOTES: self._body_notes(body, i),
               "body": self._definition(body, i, _BodyAxes()), "position": n.vec(body.position, "length"),
               "orientation": self._frame(body.orientation), "type": "fixed",
               "constantVelocity": {"velocity": zero},
               "ellipticRotation": {"center": zero, "initialPhase": n(0.0), "angularVelocity": n(0.0),
                                    "r1": zero, "r2": zero}}
        m = body.motion
        if isinstance(m, ConstantVelocity):
            out["type"] = "constantVelocity"
            out["constantVelocity"] = {"velocity": n.vec(m.velocity, "velocity")}
        elif isinstance(m, EllipticOrbit):
            out["type"] = "ellipticRotation"
            out["ellipticRotation"] = {"center": n.vec(m.center, "length"), "initialPhase": n(m.phase),
                                       "angularVelocity": n(m.angular_velocity, "omega"),
                                       "r1": n.vec(m.r1, "length"), "r2": n.vec(m.r2, "length")}
        return out

    @staticmethod
    def _body_notes(body, i: int) -> list[str]:
        """What the file keeps of scene body ``i`` in ``// pem:`` notes (PEM's schema has no field for it)."""
        out = [_note("name", body.name), _note("index", i)]
        for key in ("restitution", "contact_friction"):
            if getattr(body, key) is not None:
                out.append(_note(key, float(getattr(body, key))))
        return out

    def _scene_notes(self) -> list[str]:
        """The scene's ``// pem:`` notes: its name, contact settings and dop853 tolerances, each where it is set."""
        sc, st = self.scene, self.scene.settings
        out = [_note("name", sc.name)]
        defaults = Scene()
        for key in ("restitution", "contact_friction", "contact_model", "placement_tolerance"):
            if getattr(sc, key) != getattr(defaults, key):
                out.append(_note(key, getattr(sc, key)))
        if sc.pair_restitution:
            out.append(_note("pair_restitution", [{"bodies": list(p.names), "restitution": float(p.restitution)}
                                                  for p in sc.pair_restitution]))
        for key in ("rtol", "atol"):
            if getattr(st, key) != getattr(defaults.settings, key):
                out.append(_note(f"settings.{key}", float(getattr(st, key))))
        return out

    def _system_size(self) -> dict:
        n = self.num
        sc = self.scene
        if sc.periodic_box is not None:
            # Only the size matters to PEM (minimum image); centring on the origin keeps max − min exact.
            size = np.array([n.file_value(x, "length") for x in sc.periodic_box])
            return {"min": n.vec(-size / 2), "max": n.vec(size / 2)}
        # Not periodic: a box around the bodies, for PEM's viewer only.
        pts = [np.asarray(b.position, dtype=float) for b in sc.bodies]
        pts += [np.asarray(b.position) + np.asarray(d.position) @ np.asarray(b.orientation)
                for b in sc.bodies for d in b.dipoles]
        P = np.array(pts) / self.units[0]
        lo, hi = P.min(axis=0), P.max(axis=0)
        pad = max(1.0, float(np.max(hi - lo))) * 0.5
        return {"min": n.vec(np.floor(lo - pad)), "max": n.vec(np.ceil(hi + pad))}

    # ------------------------------------------------------------------ the document

    def tree(self) -> dict:
        self._check_scene()
        sc = self.scene
        n = self.num
        moving = [(i, b) for i, b in enumerate(sc.bodies) if b.moving]
        sources = [(i, b) for i, b in enumerate(sc.bodies) if not b.moving]
        pendulums = [self._pendulum(b, i) for i, b in moving]
        bodies = [self._source(b, i) for i, b in sources]
        st = sc.settings
        zero = n.vec(np.zeros(3))
        mf = {"fieldType": "false", "constantField": {"B": zero},
              "ellipticRotationField": {"angularVelocity": n(0.0), "B1": zero, "B2": zero}}
        if sc.rotating_field is not None:
            rf = sc.rotating_field
            mf["fieldType"] = "ellipticRotationField"
            mf["ellipticRotationField"] = {"angularVelocity": n(rf.angular_velocity, "omega"),
                                           "B1": n.vec(rf.b1, "field"), "B2": n.vec(rf.b2, "field")}
        elif np.any(sc.field):
            mf["fieldType"] = "constantField"
            mf["constantField"] = {"B": n.vec(sc.field, "field")}
        sim = {"time": {"simulationSteps": st.steps, "reportSteps": st.record_every, "dt": n(st.dt, "time")},
               "integrator": INTEGRATORS[self.method], "pendulum": pendulums, "body": bodies,
               "gravity": n.vec(sc.gravity, "accel"), "magnetiField": mf,
               "freeSpacePermeability": n(sc.mu0, "mu0")}
        if self.v >= 1:
            sim["PseudoFrictionTorque"] = {"flag": "true" if sc.friction else "false",
                                           "coefficient": n(sc.friction, "friction")}
        if self.v >= 3:
            sim["systemSize"] = self._system_size()
            sim["periodicBoundaryCondition"] = "true" if sc.periodic_box is not None else "false"
        L, M, T, A = self.units
        return {"unitParameter": {"length": n(L), "mass": n(M), "time": n(T), "ampere": n(A)},
                "body": self.defs, "simulation": sim}

    def text(self) -> str:
        tree = self.tree()
        out = [f'\\include {{"{DEF_FILES[self.version]}"}}', "", "\\begin{data}"]
        out += [f"{NOTE_MARK} {n}" for n in self._scene_notes()]
        pr = _Text(self.classes)
        for f in self.globals:
            out.append(f"{f.name}{'[]' if f.array else ''}:{pr.pretty(tree[f.name], f.type, f.array, f.name, 0)}")
        out += ["\\end{data}", ""]
        return "\n".join(out)


def _note(key: str, value) -> str:
    """A ``// pem:`` note's text ``key = value`` (a TOML value on one line: :mod:`.udf_notes`)."""
    return f"{key} = {_toml(value)}"


def _check_pem_inverse(tensor: dict, path: str, relaid: bool = False) -> None:
    """Refuse a tensor that PEM would invert differently from our engine.

    PEM inverts the tensor when its determinant (its own formula) is not exactly 0 and
    otherwise keeps eigenvalues > 1e-8 in file units; we drop eigenvalues
    < 1e-10·λ_max. Both agree when a singular tensor is exactly singular in the file
    and its other moments are above 1e-8 file units.
    """
    t = {k: float(v) for k, v in tensor.items()}
    xx, yy, zz, yx, zx, zy = (t[k] for k in ("xx", "yy", "zz", "yx", "zx", "zy"))
    det = xx * yy * zz + yx * zy * zx + zx * yx * zy - (zx * yy * zx + yx * yx * zz + xx * zy * zy)
    lam = np.linalg.eigvalsh(np.array([[xx, yx, zx], [yx, yy, zy], [zx, zy, zz]]))
    lam_max = float(np.abs(lam).max())
    singular_for_us = lam.min() <= ZERO_MOMENT * lam_max
    if det != 0 and singular_for_us:
        if relaid:
            raise ValidationError(path, "a spinning body with a singular inertia tensor (a point mass or thin rod) "
                                        "cannot be written for PEM: PEM starts it from L = I_body·ω, right only in "
                                        "lab-aligned body axes, where this tensor is singular but not exactly, so "
                                        "PEM would invert it; start it at rest, or give it a small finite size")
        raise ValidationError(path, "the inertia tensor about the pivot is singular (a point mass or thin rod) "
                                    "but not exactly, so PEM would invert it and blow up; put the centre of mass "
                                    "on a body axis (e.g. (0, 0, -l)) so the tensor is exactly singular")
    if det == 0:
        kept = lam[lam > ZERO_MOMENT * lam_max]
        if np.any(kept <= PEM_EPS):
            raise ValidationError(path, f"principal moments {kept.min():.3g} ≤ 1e-8 in the file's units: PEM's "
                                        "pseudo-inverse would drop them; write the file in larger units "
                                        "(units='cgs' or bigger)")


# ============================================================================ public API

def udf_text(scene: Scene, *, units="si", version: str = "1.3", method: str | None = None) -> str:
    """The PEM input file text of ``scene`` (``\\include``\\ s :data:`DEF_FILES` [version]).

    units: "si", "cgs" or (length m, mass kg, time s, ampere A) of one file unit.
    method: "pem-rk4" / "pem-euler"; None uses the scene's (which must be one of them).
    """
    return _Writer(scene, units, version, method).text()


def write_def(directory, version: str = "1.3") -> Path:
    """Write the def file of ``version`` into ``directory`` (atomically); returns its path.

    An existing file of that name is left alone when it declares the same schema
    (e.g. PEM's own copy); a different one is an error rather than overwritten.
    """
    from .files import atomic_open
    from .udf import parse_udf

    text = def_text(version)
    path = Path(directory) / DEF_FILES[version]
    if path.exists():
        old = path.read_text(encoding="utf-8", errors="replace")
        if old == text:
            return path
        mine, theirs = parse_udf(text, str(path)).schema, parse_udf(old, str(path)).schema
        if (mine.classes, mine.fields, mine.global_fields) == (theirs.classes, theirs.fields, theirs.global_fields):
            return path
        raise ValidationError(str(path), f"exists and declares a different schema than PEM def {version}; "
                                         "remove it or write the scene elsewhere")
    with atomic_open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    return path


def write_udf(scene: Scene, path, *, units="si", version: str = "1.3", method: str | None = None) -> Path:
    """Write ``scene`` as a PEM input file ``path`` and the def file beside it; returns ``path``.

    See :func:`udf_text` for the arguments. Both files are written atomically.
    """
    from .files import atomic_open

    p = Path(path)
    if p.suffix.lower() != ".udf":
        raise ValidationError(str(p), "a PEM input file must end in .udf")
    text = udf_text(scene, units=units, version=version, method=method)
    if p.name == DEF_FILES[version]:
        raise ValidationError(str(p), "that name is the def file's; choose another")
    write_def(p.parent if str(p.parent) else Path("."), version)
    with atomic_open(p, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    return p
