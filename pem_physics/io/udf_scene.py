"""PEM UDF input files → :class:`~pem_physics.model.Scene` (SI units).

:mod:`pem_physics.io.udf` parses the file against its ``\\begin{def}`` schema;
this module gives the values their meaning, following what the original
engine does with them (``PemSimulator::input``):

- ``body[]`` holds shape definitions; ``simulation.pendulum[]`` and
  ``simulation.body[]`` place them (one definition may be placed many times).
- A pendulum simulates with its ``analysis`` block (mass, centre of mass and
  tensor *about the body origin* = the pivot). We honour it as the mass
  property override, so results match PEM even where PEM's own analyser used
  the manual's wrong cylinder/rod formulas (theory §2). Without ``analysis``
  (all zeros) the shapes are used, with the correct formulas.
- ``unitParameter`` (length, mass, time, ampere in SI) converts every value to
  SI; absent, the file is taken to be in SI already.
- The schema's unit for the friction coefficient (Time/Mass/Length²) is the
  inverse of what the engine uses it for (torque = −c·ω, so M·L²/T), and the
  elliptic orbit's r1, r2 are lengths though declared as fields; we convert
  by what the engine does (both confirmed by the original engine's runs of
  tests/data/pem/friction.udf and driven_orbit.udf, written in cm and g).
- ``// pem:`` comment lines (:mod:`.udf_notes`, written by :mod:`.udf_write`)
  give what the schema cannot: names, the scene's body order, a free body's
  role, contact coefficients, mesh names. Without them bodies are
  ``pendulum0…``, ``body0…`` in the file's order. A body's shapes are read
  with its ``analysis`` too (for display; the analysis gives the mass
  properties), except a writer's ``stand_in``.
- ``angularVelocity`` is the lab ω. PEM itself starts a pendulum from
  L = I·ω with the file's body-axes tensor, i.e. as if the body axes were the
  lab's; a file whose pendulum is turned *and* spinning at t = 0 therefore
  starts PEM from another state than the one written. We read what the file
  says (L = Iₗₐᵦ·ω), so such a file does not reproduce PEM's records;
  :mod:`.udf_write` writes spinning bodies in lab-aligned axes, where both agree.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import ValidationError
from ..model import validate as v
from ..model.scene import Body, ConstantVelocity, Dipole, EllipticOrbit, RotatingField, Scene, Settings
from .files import name_of_file
from .udf import UdfError
from .udf_notes import read_notes
from .udf_where import Trail, located

INTEGRATORS = {"4thOrderRungeKutta": "pem-rk4", "Euler": "pem-euler"}


def _vec(d, path) -> np.ndarray:
    if not isinstance(d, dict) or not all(k in d for k in "xyz"):
        raise ValidationError(path, "expected a vector {x, y, z}")
    return np.array([float(d["x"]), float(d["y"]), float(d["z"])])


def _get(d, key, path, *alternatives):
    for k in (key,) + alternatives:
        if isinstance(d, dict) and k in d and d[k] is not None:
            return d[k]
    raise ValidationError(f"{path}.{key}", "missing")


class _Units:
    def __init__(self, up):
        self.L, self.M, self.T, self.A = up

    def length(self, x):
        return x * self.L

    def inertia(self, x):
        return x * self.M * self.L**2

    def omega(self, x):
        return x / self.T

    def moment(self, x):
        return x * self.A * self.L**2

    def field(self, x):
        return x * self.M / (self.A * self.T**2)

    def mu0(self, x):
        return x * self.M * self.L / (self.T**2 * self.A**2)

    def accel(self, x):
        return x * self.L / self.T**2

    def friction(self, x):
        return x * self.M * self.L**2 / self.T

    def velocity(self, x):
        return x * self.L / self.T


def _shape(s, path, u: _Units):
    """One inertia shape of a UDF ``shape`` struct; its errors named under ``path``."""
    try:
        return _shape_of(s, path, u)
    except UdfError:
        raise
    except ValidationError as err:
        raise (err if err.path.startswith(path) else err.at(path)) from None


def _shape_of(s, path, u: _Units):
    from ..model import inertia

    kind = _get(s, "shape", path)
    center = u.length(_vec(_get(s, "center", path), f"{path}.center"))
    mass = u.M * float(_get(s, "mass", path))
    if kind == "sphere":
        return inertia.Sphere(radius=u.length(float(s["sphere"]["radius"])), mass=mass, center=center)
    if kind == "cylinder":
        c = s["cylinder"]
        return inertia.Cylinder(radius=u.length(float(c["radius"])), half_length=u.length(float(c["length"])),
                                axis=_vec(c["d"], f"{path}.cylinder.d"), mass=mass, center=center)
    if kind in ("ellipsoid", "cuboid"):
        c = s[kind]
        axes = (_vec(c["da"], f"{path}.{kind}.da"), _vec(c["db"], f"{path}.{kind}.db"))
        sizes = tuple(u.length(float(c[k])) for k in "abc")
        if kind == "ellipsoid":
            return inertia.Ellipsoid(semi_axes=sizes, axes=axes, mass=mass, center=center)
        return inertia.Cuboid(half_sides=sizes, axes=axes, mass=mass, center=center)
    if kind == "line":
        c = s["line"]
        return inertia.Rod(half_length=u.length(float(c["l"])), direction=_vec(c["d"], f"{path}.line.d"),
                           mass=mass, center=center)
    if kind == "point":
        return inertia.PointMass(mass=mass, center=center)
    if kind == "mesh":
        m = s["mesh"]
        ids = {int(v["id"]): i for i, v in enumerate(m["vertex"])}
        V = np.array([_vec(v["position"], f"{path}.mesh.vertex[{i}].position") for i, v in enumerate(m["vertex"])])
        faces = []
        for j, f in enumerate(m["face"]):
            refs = [int(r) for r in f["vertex"]]
            missing = [r for r in refs if r not in ids]
            if missing:
                raise ValidationError(f"{path}.mesh.face[{j}]", f"refers to unknown vertex id {missing[0]}")
            idx = [ids[r] for r in refs]
            if len(idx) < 3:
                raise ValidationError(f"{path}.mesh.face[{j}]", f"a face needs 3 or more vertices, got {len(idx)}")
            faces.extend([idx[0], idx[k], idx[k + 1]] for k in range(1, len(idx) - 1))  # fan-triangulate
        return inertia.Mesh(vertices=u.length(V) + center, faces=np.array(faces, dtype=np.int64), mass=mass)
    raise ValidationError(f"{path}.shape", f"unknown shape kind {kind!r}")


def _analysis(b, path, u: _Units):
    """PEM's precomputed mass properties, or None when the block is absent or all zero."""
    from ..model.inertia import MassProperties, check_physical

    a = b.get("analysis")
    if not a:
        return None
    mass = v.number(a["mass"], f"{path}.analysis.mass", nonnegative=True)
    I = a["inertiaMoment"]
    t = np.array([[I["xx"], I["yx"], I["zx"]], [I["yx"], I["yy"], I["zy"]], [I["zx"], I["zy"], I["zz"]]], float)
    com = _vec(a["massCenter"], f"{path}.analysis.massCenter")
    if mass == 0 and not t.any():
        return None
    mass_si, com_si, I_origin = u.M * mass, u.length(com), u.inertia(t)
    # the tensor as written, about the body origin (a body's about any point is physical; the one about the centre
    # of mass below may come out -1e-18 for a point mass): a negative moment was reported as 'zero inertia'
    check_physical(I_origin, f"{path}.analysis.inertiaMoment")
    # PEM's tensor is about the body origin (the pivot); ours is about the centre of mass.
    I_com = I_origin - mass_si * (com_si @ com_si * np.eye(3) - np.outer(com_si, com_si))
    return MassProperties(mass=mass_si, center_of_mass=com_si, inertia=I_com)


def _frame(o, path) -> np.ndarray:
    """Rows u1, u2, u3 as written; PEM's rounded values are re-orthonormalised by the model."""
    return np.stack([_vec(o[k], f"{path}.{k}") for k in ("u1", "u2", "u3")])


def scene_from_udf(doc, name: str = "udf") -> Scene:
    """Build a Scene from a parsed :class:`pem_physics.io.udf.UdfDocument` (not yet checked: :func:`checked_scene`
    checks it). An error names the file, line and column of the UDF field it is about."""
    return _converted(doc, name)[0]


def checked_scene(doc, name: str = "udf") -> Scene:
    """The checked Scene (:meth:`Scene.checked`) of a parsed UDF document. Every error, the model's check's
    included, names the UDF field (``simulation.time.dt``), never the scene model's path (``settings.dt``), at the
    file, line and column that give it (:mod:`.udf_where`)."""
    scene, trail = _converted(doc, name)
    try:
        return scene.checked()
    except ValidationError as err:
        raise located(err, doc, trail, units_of(doc)) from None


def _converted(doc, name: str) -> tuple[Scene, Trail]:
    """(the Scene, the :class:`.udf_where.Trail` of its bodies); a conversion error located in the file."""
    trail = Trail()
    try:
        return _scene(doc, name, trail), trail
    except UdfError:
        raise
    except ValidationError as err:
        raise located(err, doc) from None


def _scene(doc, name: str, trail: Trail) -> Scene:
    """The Scene of ``doc`` (see :func:`scene_from_udf`), each body's origin in the file noted in ``trail``."""
    data = doc.data
    up = data.get("unitParameter")
    if up:
        for key in ("length", "mass", "time", "ampere"):   # a zero unit made every inertia zero, named as such
            v.number(up[key], f"unitParameter.{key}", positive=True)
    u = _Units((float(up["length"]), float(up["mass"]), float(up["time"]), float(up["ampere"])) if up else (1, 1, 1, 1))
    defs = {}
    for i, b in enumerate(data.get("body") or []):
        defs[int(b["id"])] = (i, b)
    if "simulation" not in data and not data.get("body"):
        if doc.schema is None or not (doc.schema.fields or doc.schema.classes):
            raise ValidationError(f"{name}", "not a PEM input file: no \\include of a definition file, no data "
                                             "(empty, cut short, or another kind of file)")
        if not doc.includes:
            raise ValidationError(f"{name}", "this is a PEM definition (schema) file, not an input file: it declares "
                                             "the fields and holds no simulation; open the input file that includes it")
        raise ValidationError(f"{name}", "a PEM input file without its data block (\\begin{data} … \\end{data}): "
                                         "cut short?")
    sim = _get(data, "simulation", "")

    def definition(ref, path):
        if int(ref) not in defs:
            raise ValidationError(path, f"refers to body id {ref}, which body[] does not define")
        return defs[int(ref)]

    notes = read_notes(doc)
    entries = _pendulums(sim, definition, u, notes) + _sources(sim, definition, u, notes)
    bodies = []
    for body, placement, bpath, override, b in _ordered(entries, notes, doc):
        _trail(trail, len(bodies), placement, bpath, override, b)
        for key, note in notes.get(placement, {}).items():
            trail.keys[f"bodies[{len(bodies)}].{key}"] = note.path
        bodies.append(body)
    field = np.zeros(3)
    rotating = None
    mf = sim.get("magnetiField") or {}
    ftype = mf.get("fieldType", "false")
    if ftype == "constantField":
        field = u.field(_vec(mf["constantField"]["B"], "simulation.magnetiField.constantField.B"))
    elif ftype == "ellipticRotationField":
        e = mf["ellipticRotationField"]
        rotating = RotatingField(b1=u.field(_vec(e["B1"], "simulation.magnetiField.ellipticRotationField.B1")),
                                 b2=u.field(_vec(e["B2"], "simulation.magnetiField.ellipticRotationField.B2")),
                                 angular_velocity=u.omega(float(e["angularVelocity"])))
    elif ftype not in ("false", ""):
        raise ValidationError("simulation.magnetiField.fieldType", f"unknown field type {ftype!r}")
    fr = sim.get("PseudoFrictionTorque") or {}
    friction = u.friction(float(fr.get("coefficient", 0.0))) if fr.get("flag") == "true" else 0.0
    box = None
    if sim.get("periodicBoundaryCondition") == "true":
        size = sim["systemSize"]
        box = u.length(_vec(size["max"], "simulation.systemSize.max") - _vec(size["min"], "simulation.systemSize.min"))
    t = _get(sim, "time", "simulation")
    dt = u.T * float(t["dt"])
    steps, report = int(t["simulationSteps"]), int(t["reportSteps"])
    method = INTEGRATORS.get(sim.get("integrator"))
    if method is None:
        raise ValidationError("simulation.integrator", f"unknown integrator {sim.get('integrator')!r}")
    mu0 = sim.get("freeSpacePermeability")
    scene_notes = {k: n.value for k, n in notes.get("", {}).items()}
    for key, note in notes.get("", {}).items():
        trail.keys[key] = note.path
    tolerances = {k.split(".")[1]: scene_notes.pop(k) for k in ("settings.rtol", "settings.atol") if k in scene_notes}
    return Scene(
        name=scene_notes.pop("name", name), bodies=bodies, **scene_notes,
        gravity=u.accel(_vec(_get(sim, "gravity", "simulation"), "simulation.gravity")),
        field=field, rotating_field=rotating,
        mu0=u.mu0(float(mu0)) if mu0 is not None else 4e-7 * np.pi,
        friction=friction, periodic_box=box,
        settings=Settings(method=method, dt=dt, t_end=steps * dt, record_interval=report * dt, **tolerances),
    )


def _dipoles(b: dict, bpath: str, u: _Units) -> tuple:
    """The dipoles of body definition ``b`` (at ``bpath``), SI."""
    return tuple(Dipole(u.length(_vec(_get(m, "position", f"{bpath}.magnet[{k}]", "center"),
                                      f"{bpath}.magnet[{k}].position")),
                        u.moment(_vec(m["dipole"], f"{bpath}.magnet[{k}].dipole")))
                 for k, m in enumerate(b.get("magnet") or []))


def _shapes(b: dict, bpath: str, u: _Units, notes: dict) -> tuple:
    """The shapes of body definition ``b``, a mesh named by its ``// pem: name`` note; a shape noted
    ``stand_in`` (the writer's equivalent of a body given by its mass properties only) is not one of the scene's."""
    out = []
    for k, s in enumerate(b.get("shape") or []):
        path = f"{bpath}.shape[{k}]"
        noted = notes.get(path, {})
        if "stand_in" in noted and noted["stand_in"].value:
            continue
        shape = _shape(s, path, u)
        if "name" in noted:
            if not hasattr(shape, "name"):
                raise UdfError(noted["name"].where, f"{noted['name'].path}: only a mesh shape has a name; "
                                                         "remove the line")
            shape.name = noted["name"].value
        out.append(shape)
    return tuple(out)


def _noted(body: Body, noted: dict) -> Body:
    """``body`` with its placement's ``// pem:`` notes (name, role, restitution, contact_friction) applied."""
    values = {k: n.value for k, n in noted.items() if k != "index"}
    return replace(body, **values) if values else body


def _pendulums(sim: dict, definition, u: _Units, notes: dict) -> list:
    """(body, placement, definition path, analysis given, definition) of each ``simulation.pendulum[]`` entry."""
    out = []
    for i, p in enumerate(sim.get("pendulum") or []):
        path = f"simulation.pendulum[{i}]"
        j, b = definition(_get(p, "body", path), f"{path}.body")
        bpath = f"body[{j}]"
        override = _analysis(b, bpath, u)
        con = p.get("constraint") or {}
        hinge = _vec(con["rotationAxis"], f"{path}.constraint.rotationAxis") if con.get("flag") == "true" else None
        body = Body(
            name=f"pendulum{i}", role="pendulum",
            position=u.length(_vec(_get(p, "position", path, "center"), f"{path}.position")),
            orientation=_frame(_get(p, "orientation", path), f"{path}.orientation"),
            angular_velocity=u.omega(_vec(_get(p, "angularVelocity", path), f"{path}.angularVelocity")),
            shapes=_shapes(b, bpath, u, notes), mass_properties=override, hinge=hinge,
            dipoles=_dipoles(b, bpath, u), color=_color(b))
        out.append((_noted(body, notes.get(path, {})), path, bpath, override is not None, b))
    return out


def _sources(sim: dict, definition, u: _Units, notes: dict) -> list:
    """(body, placement, definition path, False, definition) of each ``simulation.body[]`` entry (fixed and driven
    magnets)."""
    out = []
    for i, s in enumerate(sim.get("body") or []):
        path = f"simulation.body[{i}]"
        j, b = definition(_get(s, "body", path), f"{path}.body")
        bpath = f"body[{j}]"
        kind = _get(s, "type", path)
        motion = None
        if kind == "constantVelocity":
            motion = ConstantVelocity(u.velocity(_vec(s["constantVelocity"]["velocity"],
                                                      f"{path}.constantVelocity.velocity")))
        elif kind == "ellipticRotation":
            e = s["ellipticRotation"]
            motion = EllipticOrbit(center=u.length(_vec(e["center"], f"{path}.ellipticRotation.center")),
                                   r1=u.length(_vec(e["r1"], f"{path}.ellipticRotation.r1")),
                                   r2=u.length(_vec(e["r2"], f"{path}.ellipticRotation.r2")),
                                   angular_velocity=u.omega(float(e["angularVelocity"])),
                                   phase=float(e["initialPhase"]))
        elif kind != "fixed":
            raise ValidationError(f"{path}.type", f"unknown body type {kind!r}")
        o = s["orientation"]
        u1 = _vec(o["u1"], f"{path}.orientation.u1")
        u2 = _vec(o["u2"], f"{path}.orientation.u2")
        # PEM builds a fixed body's frame from u1, u2 only (u3 = u1 × u2).
        body = Body(
            name=f"body{i}", role="fixed" if motion is None else "driven",
            position=u.length(_vec(_get(s, "position", path, "center"), f"{path}.position")),
            orientation=np.stack([u1, u2, np.cross(u1, u2)]), motion=motion,
            dipoles=_dipoles(b, bpath, u), color=_color(b))
        out.append((_noted(body, notes.get(path, {})), path, bpath, False, b))
    return out


def _ordered(entries: list, notes: dict, doc) -> list:
    """``entries`` in the scene's order: those whose placement has an ``index`` note by it, then the others in the
    file's order (PEM's files list the moving bodies first). An index given twice is refused at its second note."""
    seen: dict = {}
    for _, placement, *_ in entries:
        note = notes.get(placement, {}).get("index")
        if note is None:
            continue
        if note.value in seen:
            raise UdfError(note.where, f"{note.path}: {note.value} is already the index of "
                                                          f"{seen[note.value]}; give each body its own")
        seen[note.value] = placement

    def key(item):
        k, entry = item
        note = notes.get(entry[1], {}).get("index")
        return (0, note.value, k) if note is not None else (1, 0, k)

    return [entry for _, entry in sorted(enumerate(entries), key=key)]


def _trail(trail: Trail, i: int, placement: str, definition: str, override: bool, b: dict) -> None:
    """Note scene body ``i``'s placement and definition in ``trail``, and its magnets' positions where an older def
    version calls them ``center``."""
    trail.add(placement, definition, override)
    for k, m in enumerate(b.get("magnet") or []):
        if "position" not in m and "center" in m:
            trail.keys[f"bodies[{i}].dipoles[{k}].position"] = f"{definition}.magnet[{k}].center"


def _color(b):
    c = b.get("color") or []
    if not c:
        return None
    c0 = c[0]
    return (float(c0["red"]), float(c0["green"]), float(c0["blue"]), float(c0["trans"]))


def units_of(doc) -> tuple[float, float, float, float]:
    """(length, mass, time, ampere) of a UDF document in SI (1s when absent)."""
    up = doc.data.get("unitParameter")
    if not up:
        return (1.0, 1.0, 1.0, 1.0)
    return (float(up["length"]), float(up["mass"]), float(up["time"]), float(up["ampere"]))


def load_scene(path) -> Scene:
    """Read a PEM UDF input file into a checked Scene; an error names the file, line and UDF field."""
    from .udf import read_udf

    return checked_scene(read_udf(path), name=name_of_file(path))
