"""TOML scene files: examples load and run, round trips, validation messages, units, fuzzing.

Oracles: the Python scene builders in pem_physics.examples (written independently of
the TOML files), closed-form mass properties of boxes, spheres and rods, and hand
unit conversions.
"""

from __future__ import annotations

import copy
import math
import shutil
import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from pem_physics import examples, simulate
from pem_physics.errors import PemError, ValidationError
from pem_physics.io.scene_writer import dumps, save_scene, scene_to_dict
from pem_physics.io.scenefile import FORMAT_VERSION, load_scene, loads, scene_from_dict
from pem_physics.model import (
    METHODS,
    Body,
    ConstantVelocity,
    Dipole,
    EllipticOrbit,
    RotatingField,
    Scene,
    Settings,
    TabulatedMotion,
)
from pem_physics.model.inertia import Cuboid, Cylinder, Ellipsoid, MassProperties, Mesh, PointMass, Rod, Sphere, steiner
from pem_physics.model.rotations import axis_angle_matrix, euler_zyx, quat_to_orientation
from pem_physics.model.scene import UNSHOWN

from budget import property_settings
from conftest import DATA

ROOT = Path(__file__).resolve().parents[2]
SCENES = ROOT / "examples" / "scenes"
#: the scene files among the examples (hard-sphere gas files, which `gas` runs, are not scenes)
EXAMPLE_FILES = sorted(p for p in SCENES.glob("*.toml") if "gas" not in tomllib.loads(p.read_text(encoding="utf-8")))
GAS_FILES = sorted(p for p in SCENES.glob("*.toml") if p not in EXAMPLE_FILES)


def test_a_gas_file_is_not_read_as_a_scene():
    assert GAS_FILES, "examples/scenes holds a hard-sphere gas file"
    with pytest.raises(ValidationError, match="hard-sphere gas file.*python -m pem_physics gas"):
        load_scene(GAS_FILES[0])


# ---------------------------------------------------------------------------- equivalence

def _close(a, b, path, rtol=1e-12, atol=1e-15):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    assert a.shape == b.shape, f"{path}: shape {a.shape} != {b.shape}"
    assert np.allclose(a, b, rtol=rtol, atol=atol), f"{path}: {a.tolist()} != {b.tolist()}"


SHAPE_FIELDS = {"sphere": ("radius",), "cylinder": ("radius", "half_length", "axis"),
                "ellipsoid": ("semi_axes", "axes"), "cuboid": ("half_sides", "axes"),
                "rod": ("half_length", "direction"), "point": (), "mesh": ("vertices",)}


def assert_equivalent(a: Scene, b: Scene, atol: float = 1e-15, rtol: float = 1e-12):
    """Every field of two scenes agrees numerically (shapes compared by their parameters, not just mass)."""
    a, b = a.checked(), b.checked()
    assert a.name == b.name
    for key in ("gravity", "field", "mu0", "friction"):
        _close(getattr(a, key), getattr(b, key), key, rtol, atol)
    assert (a.periodic_box is None) == (b.periodic_box is None)
    if a.periodic_box is not None:
        _close(a.periodic_box, b.periodic_box, "periodic_box", rtol, atol)
    assert (a.rotating_field is None) == (b.rotating_field is None)
    if a.rotating_field is not None:
        for key in ("b1", "b2", "angular_velocity", "phase"):
            _close(getattr(a.rotating_field, key), getattr(b.rotating_field, key), key, rtol, atol)
    sa, sb = a.settings, b.settings
    assert sa.method == sb.method
    for key in ("dt", "t_end", "rtol", "atol"):
        _close(getattr(sa, key), getattr(sb, key), f"settings.{key}", rtol, atol)
    assert (sa.record_interval is None) == (sb.record_interval is None)
    if sa.record_interval is not None:
        _close(sa.record_interval, sb.record_interval, "settings.record_interval", rtol, atol)
    assert len(a.bodies) == len(b.bodies)
    for i, (x, y) in enumerate(zip(a.bodies, b.bodies)):
        p = f"bodies[{i}]"
        assert (x.name, x.role, x.translate) == (y.name, y.role, y.translate), p
        for key in ("position", "orientation", "angular_velocity", "velocity"):
            _close(getattr(x, key), getattr(y, key), f"{p}.{key}", rtol, atol)
        for key in ("hinge", "color"):
            assert (getattr(x, key) is None) == (getattr(y, key) is None), f"{p}.{key}"
            if getattr(x, key) is not None:
                _close(getattr(x, key), getattr(y, key), f"{p}.{key}", rtol, atol)
        assert type(x.motion) is type(y.motion), f"{p}.motion"
        if isinstance(x.motion, ConstantVelocity):
            _close(x.motion.velocity, y.motion.velocity, f"{p}.motion.velocity", rtol, atol)
        elif isinstance(x.motion, TabulatedMotion):
            for key in ("times", "positions", "orientations"):
                if getattr(x.motion, key) is not None:
                    _close(getattr(x.motion, key), getattr(y.motion, key), f"{p}.motion.{key}", rtol, atol)
        elif x.motion is not None:
            for key in ("center", "r1", "r2", "angular_velocity", "phase"):
                _close(getattr(x.motion, key), getattr(y.motion, key), f"{p}.motion.{key}", rtol, atol)
        assert len(x.dipoles) == len(y.dipoles), f"{p}.dipoles"
        for k, (d, e) in enumerate(zip(x.dipoles, y.dipoles)):
            _close(d.position, e.position, f"{p}.dipoles[{k}].position", rtol, atol)
            _close(d.moment, e.moment, f"{p}.dipoles[{k}].moment", rtol, atol)
        assert (x.mass_properties is None) == (y.mass_properties is None), f"{p}.mass_properties"
        if x.mass_properties is not None:
            for key in ("mass", "center_of_mass", "inertia"):
                _close(getattr(x.mass_properties, key), getattr(y.mass_properties, key),
                       f"{p}.mass_properties.{key}", rtol, atol)
        assert len(x.shapes) == len(y.shapes), f"{p}.shapes"
        for k, (s, t) in enumerate(zip(x.shapes, y.shapes)):
            q = f"{p}.shapes[{k}]"
            assert s.kind == t.kind, q
            _close(s.mass, t.mass, f"{q}.mass", rtol, atol)
            _close(s.center, t.center, f"{q}.center", rtol, atol)
            for key in SHAPE_FIELDS[s.kind]:
                _close(getattr(s, key), getattr(t, key), f"{q}.{key}", rtol, atol)
            if s.kind == "mesh":
                assert np.array_equal(s.faces, t.faces), f"{q}.faces"
                assert s.name == t.name
        if x.moving:
            m, n = x.resolved_mass_properties(p), y.resolved_mass_properties(p)
            _close(m.inertia_about(np.zeros(3)), n.inertia_about(np.zeros(3)), f"{p} inertia", rtol, atol)


def round_trip(scene: Scene, base_dir=None) -> Scene:
    text = dumps(scene, base_dir=base_dir)
    tomllib.loads(text)  # valid TOML for the reference parser
    return loads(text, base_dir=base_dir)


# ---------------------------------------------------------------------------- the example files

def test_example_files_exist():
    names = {p.name for p in EXAMPLE_FILES}
    assert {"three_magnet.toml", "t_handle.toml", "compass.toml", "heavy_top.toml", "mesh_pendulum.toml"} <= names


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_loads_and_simulates(path):
    scene = load_scene(path)
    dt = scene.settings.dt
    traj = simulate(scene, t_end=5 * dt, record_interval=dt)
    assert traj.complete and len(traj.t) == 6
    assert np.all(np.isfinite(traj.quaternion)) and np.all(np.isfinite(traj.omega))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_round_trip(path, tmp_path):
    scene = load_scene(path)
    assert_equivalent(scene, round_trip(scene))
    out = tmp_path / "deep" / "copy.toml"
    save_scene(scene, out)
    assert_equivalent(scene, load_scene(out))
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("name, builder", [("three_magnet", examples.three_magnet), ("t_handle", examples.t_handle),
                                           ("compass", examples.compass)])
def test_example_files_match_python_builders(name, builder):
    scene = load_scene(SCENES / f"{name}.toml")
    expected = builder()
    expected.name = scene.name
    assert_equivalent(scene, expected, atol=1e-12, rtol=1e-9)


def test_heavy_top_spins_about_its_figure_axis():
    scene = load_scene(SCENES / "heavy_top.toml")
    top = scene.bodies[0]
    ref = examples.heavy_top()
    _close(top.orientation, ref.bodies[0].orientation, "orientation", atol=1e-12)
    for s, t in zip(top.shapes, ref.bodies[0].shapes):
        _close(s.mass_properties().inertia, t.mass_properties().inertia, "shape inertia")
    # 30° roll about x tilts the figure axis u3 to (0, −sin 30°, cos 30°); ω = 150 rad/s along it.
    u3 = np.array([0.0, -0.5, math.sqrt(3) / 2])
    _close(top.orientation[2], u3, "u3", atol=1e-15)
    _close(top.angular_velocity, 150 * u3, "omega", atol=1e-12)


def test_mesh_example_against_closed_forms():
    """The brick OBJ (2×1×4 cm, turned 90° about z, density 7.87 g/cm³) plus a rod, all in cm/g → SI by hand."""
    scene = load_scene(SCENES / "mesh_pendulum.toml")
    body = scene.bodies[0]
    brick = body.shapes[0]
    assert isinstance(brick, Mesh)
    rho = 7870.0                                   # kg/m³
    a, b, c = 0.005, 0.01, 0.02                    # half sides (m) along body x, y, z: the turn swaps file x, y
    m = rho * 8 * a * b * c
    assert brick.mass == pytest.approx(m, rel=1e-12)
    I_brick = m / 3 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    _close(np.ptp(brick.vertices, axis=0), [2 * a, 2 * b, 2 * c], "extent", atol=1e-15)
    _close(brick.mass_properties().inertia, I_brick, "brick inertia", rtol=1e-10, atol=1e-18)
    _close(brick.center, [0, 0, -0.24], "brick centre", atol=1e-15)
    # whole body about the pivot: brick + 5 g rod of length 22 cm hanging from the pivot
    m_rod, l_rod = 0.005, 0.22
    I_pivot = I_brick + steiner(m, [0, 0, -0.24]) + m_rod * l_rod**2 / 3 * np.diag([1.0, 1.0, 0.0])
    mp = body.resolved_mass_properties()
    assert mp.mass == pytest.approx(m + m_rod, rel=1e-12)
    _close(mp.inertia_about(np.zeros(3)), I_pivot, "body inertia about pivot", rtol=1e-10, atol=1e-18)
    _close(scene.gravity, [0, 0, -9.81], "gravity")
    assert scene.friction == pytest.approx(50 * 1e-3 * 1e-4)
    _close(body.dipoles[0].moment, [0, 0, -0.05], "moment (500 A·cm²)")
    _close(scene.bodies[1].dipoles[0].moment, [0, 0, -0.1], "moment (1000 A·cm²)")
    _close(body.position, [0, 0, 0.3], "pivot")


def test_mesh_file_written_back_as_reference(tmp_path):
    scene = load_scene(SCENES / "mesh_pendulum.toml")
    doc = scene_to_dict(scene, base_dir=SCENES)
    shape = doc["bodies"][0]["shapes"][0]
    assert shape["file"] == "meshes/brick.obj" and "vertices" not in shape
    # saved elsewhere: a relative path that still finds the mesh
    out = tmp_path / "elsewhere.toml"
    save_scene(scene, out)
    text = out.read_text(encoding="utf-8")
    assert "brick.obj" in text and "vertices" not in text
    assert_equivalent(scene, load_scene(out))
    # an edited mesh no longer matches its file: written inline
    brick = scene.bodies[0].shapes[0]
    moved = Mesh(brick.vertices + [0.0, 0.0, 0.01], brick.faces, density=brick.density, name="brick")
    moved.source = brick.source
    scene.bodies[0].shapes = (moved,) + tuple(scene.bodies[0].shapes[1:])
    shape = scene_to_dict(scene)["bodies"][0]["shapes"][0]
    assert "file" not in shape and len(shape["vertices"]) == 8
    assert_equivalent(scene, round_trip(scene))


def test_mesh_file_copied_with_scene_and_units(tmp_path):
    (tmp_path / "m").mkdir()
    shutil.copy(SCENES / "meshes" / "brick.obj", tmp_path / "m" / "b.obj")
    text = _minimal(shape='{ kind = "mesh", file = "m/b.obj", scale = 10.0, mass = 200.0 }',
                    units="[units]\nlength = 0.001\nmass = 0.001\n")
    scene = loads(text, base_dir=tmp_path)
    brick = scene.bodies[0].shapes[0]
    # 10 × (2×1×4) mm = 2 × 1 × 4 cm, 200 g
    _close(np.ptp(brick.vertices, axis=0), [0.02, 0.01, 0.04], "extent", atol=1e-15)
    ref = Cuboid(half_sides=(0.01, 0.005, 0.02), mass=0.2).mass_properties()
    _close(brick.mass_properties().inertia, ref.inertia, "inertia", rtol=1e-10, atol=1e-18)
    with pytest.raises(ValidationError, match=r"bodies\[0\]\.shapes\[0\]\.file: no such mesh file"):
        loads(text, base_dir=SCENES)


# ---------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("name", sorted(examples.BUILDERS))
def test_builder_round_trip(name):
    kw = {"n": 3} if name == "compass-array" else {}
    scene = examples.build(name, **kw)
    back = round_trip(scene)
    assert_equivalent(scene, back)
    assert_equivalent(back, round_trip(back))


def test_inline_mesh_round_trip():
    scene = examples.t_handle_mesh()
    doc = scene_to_dict(scene)
    assert all("vertices" in s and "faces" in s for s in doc["bodies"][0]["shapes"])
    assert_equivalent(scene, round_trip(scene))


def test_strings_escaped():
    scene = examples.t_handle()
    scene.name = 'tricky "name" \\ with = [brackets], ü and a # hash'   # (control characters: refused by name)
    scene.bodies[0].name = "a.b = [c]"
    back = round_trip(scene)
    assert back.name == scene.name and back.bodies[0].name == "a.b = [c]"


finite = st.floats(-5.0, 5.0, allow_nan=False, allow_infinity=False)
positive = st.floats(1e-3, 5.0)
vec3 = st.tuples(finite, finite, finite)
nonzero3 = vec3.filter(lambda v: np.linalg.norm(v) > 1e-3)


def shown_names(min_size: int = 1, max_size: int = 20):
    """Names a scene accepts: no control characters, none that break a line or reverse the text (UNSHOWN), and, when
    the name stands alone (``min_size`` ≥ 1), not spaces only."""
    text = st.text(st.characters(blacklist_categories=("Cc",), blacklist_characters=sorted(UNSHOWN)),
                   min_size=min_size, max_size=max_size)
    return text.filter(str.strip) if min_size else text


@st.composite
def orientations(draw):
    q = np.array(draw(st.tuples(finite, finite, finite, finite).filter(lambda q: np.linalg.norm(q) > 1e-2)))
    return quat_to_orientation(q / np.linalg.norm(q))


@st.composite
def shapes(draw):
    kind = draw(st.sampled_from(["sphere", "cylinder", "ellipsoid", "cuboid", "rod", "point", "mesh"]))
    mass, center = draw(positive), draw(vec3)
    if kind == "sphere":
        return Sphere(draw(positive), mass=mass, center=center)
    if kind == "cylinder":
        return Cylinder(draw(positive), draw(positive), draw(nonzero3), density=draw(positive), center=center)
    if kind in ("ellipsoid", "cuboid"):
        U = draw(orientations())
        cls = Ellipsoid if kind == "ellipsoid" else Cuboid
        return cls(draw(st.tuples(positive, positive, positive)), (U[0], U[1]), mass=mass, center=center)
    if kind == "rod":
        return Rod(draw(positive), draw(nonzero3), mass=mass, center=center)
    if kind == "point":
        return PointMass(mass=mass, center=center)
    V, F = examples.box_mesh(draw(st.tuples(positive, positive, positive)), center)
    V = V @ draw(orientations())
    name = draw(shown_names(max_size=8))
    return Mesh(V, F, **{draw(st.sampled_from(["mass", "density"])): mass}, name=name)


@st.composite
def bodies(draw, index: int, moving: bool):
    role = draw(st.sampled_from(["pendulum", "free"] if moving else ["pendulum", "free", "fixed", "driven"]))
    moves = role in ("pendulum", "free")
    override = moves and draw(st.booleans())
    mp = None
    shape_list = tuple(draw(st.lists(shapes(), max_size=3)))
    if override:
        A = np.array(draw(st.lists(vec3, min_size=3, max_size=3)))
        S = A @ A.T + 0.05 * np.eye(3)   # a mass distribution's second moment: its inertia tr(S)·1 − S is a body's
        mp = MassProperties(draw(positive), draw(vec3), np.trace(S) * np.eye(3) - S)
    elif moves:
        shape_list = (Sphere(draw(positive), mass=draw(positive), center=draw(vec3)),) + shape_list
    motion = None
    if role == "driven":
        motion = draw(st.one_of(st.builds(ConstantVelocity, vec3),
                                st.builds(EllipticOrbit, vec3, st.just((1.0, 0.2, 0.0)), st.just((0.0, 0.5, 0.3)),
                                          finite, finite)))
    return Body(name=f"b{index}" + draw(shown_names(min_size=0, max_size=4)), role=role,
                position=draw(vec3),
                orientation=draw(orientations()),
                angular_velocity=draw(vec3) if moves else (0.0, 0.0, 0.0), shapes=shape_list,
                mass_properties=mp,
                dipoles=tuple(draw(st.lists(st.builds(Dipole, vec3, vec3), max_size=2))),
                hinge=draw(st.one_of(st.none(), nonzero3)) if moves else None, motion=motion,
                color=draw(st.one_of(st.none(), st.tuples(*[st.floats(0, 1)] * 4))))


@st.composite
def scenes(draw):
    n = draw(st.integers(1, 3))
    dt = draw(st.floats(1e-5, 0.1))
    return Scene(
        bodies=[draw(bodies(i, moving=i == 0)) for i in range(n)],
        gravity=draw(vec3), field=draw(vec3),
        rotating_field=draw(st.one_of(st.none(), st.builds(RotatingField, vec3, vec3, finite, finite))),
        mu0=draw(positive), friction=draw(st.floats(0, 1)),
        periodic_box=draw(st.one_of(st.none(), st.tuples(positive, positive, positive))),
        settings=Settings(method=draw(st.sampled_from(METHODS)), dt=dt, t_end=dt * draw(st.integers(0, 1000)),
                          record_interval=draw(st.one_of(st.none(), st.integers(1, 20).map(lambda k: k * dt))),
                          rtol=draw(st.floats(1e-13, 0.5)), atol=draw(st.floats(1e-300, 0.5))),
        name=draw(shown_names(max_size=20)))


@property_settings(60, suppress_health_check=[HealthCheck.too_slow])
@given(scenes())
def test_generated_scenes_round_trip(scene):
    assert_equivalent(scene, round_trip(scene))


# ---------------------------------------------------------------------------- validation messages

def _minimal(shape='{ kind = "sphere", radius = 0.1, mass = 1.0 }', units="", extra_body="", extra_top=""):
    return f"""format = "pem-scene"
version = 1
{extra_top}
{units}
[[bodies]]
name = "bob"
pivot = [0.0, 0.0, 1.0]
shapes = [{shape}]
{extra_body}
"""


def _error(text, base_dir=None) -> ValidationError:
    with pytest.raises(ValidationError) as err:
        loads(text, base_dir=base_dir)
    return err.value


def _doc() -> dict:
    return tomllib.loads((SCENES / "three_magnet.toml").read_text(encoding="utf-8"))


def test_minimal_scene_defaults():
    scene = loads(_minimal())
    assert scene.settings == Settings().checked()
    _close(scene.gravity, [0, 0, -9.80665], "gravity")
    assert scene.bodies[0].role == "pendulum"


@pytest.mark.parametrize("mutate, path, message", [
    (lambda d: d["bodies"][0]["shapes"][0].__setitem__("radus", 1.0), "bodies[0].shapes[0].radus",
     "did you mean 'radius'"),
    (lambda d: d.__setitem__("gravty", [0, 0, 1]), "gravty", "did you mean 'gravity'"),
    (lambda d: d["settings"].__setitem__("record_intervall", 0.1), "settings.record_intervall",
     "did you mean 'record_interval'"),
    (lambda d: d["bodies"][1]["dipoles"][0].__setitem__("moments", [0, 0, 1]), "bodies[1].dipoles[0].moments",
     "did you mean 'moment'"),
    (lambda d: d["bodies"][0].__setitem__("angular_velocty", [0, 0, 1]), "bodies[0].angular_velocty",
     "did you mean 'angular_velocity'"),
    (lambda d: d["bodies"][0]["shapes"][0].__setitem__("semi_axes", [1, 1, 1]), "bodies[0].shapes[0].semi_axes",
     "ellipsoid"),
    (lambda d: d.setdefault("units", {}).__setitem__("friction", 1.0), "units.friction", "enclosing table"),
])
def test_unknown_keys_named_with_suggestion(mutate, path, message):
    doc = _doc()
    mutate(doc)
    with pytest.raises(ValidationError) as err:
        scene_from_dict(doc)
    assert err.value.path == path
    assert message in err.value.message


@pytest.mark.parametrize("mutate, path, message", [
    (lambda d: d["bodies"][2]["dipoles"][0].__setitem__("moment", [1, 2]), "bodies[2].dipoles[0].moment",
     "expected 3 numbers, got 2"),
    (lambda d: d["settings"].__setitem__("dt", "fast"), "settings.dt", "expected a number, got the string 'fast'"),
    (lambda d: d["bodies"][0]["shapes"][1].__setitem__("radius", True), "bodies[0].shapes[1].radius",
     "expected a number, got the boolean true"),
    (lambda d: d["bodies"][0]["shapes"][1].__setitem__("radius", -1.0), "bodies[0].shapes[1].radius", "positive"),
    (lambda d: d["bodies"][0].__setitem__("pivot", [0, "x", 0]), "bodies[0].pivot[1]", "expected a number"),
    (lambda d: d["bodies"][0].__setitem__("axes", [[1, 0, 0], [0, 1, 0]]), "bodies[0].axes", "expected 3 rows"),
    (lambda d: d["bodies"][0].__setitem__("axes", [[1, 0, 0], [0, 1, 0], [0, 0, -1]]), "bodies[0].axes",
     "left-handed"),
    (lambda d: d["bodies"][0].__setitem__("quaternion", [1, 0, 0, 0]), "bodies[0].axes", "only one of"),
    (lambda d: d["bodies"][0]["shapes"][0].__setitem__("density", 1000.0), "bodies[0].shapes[0].density",
     "only one of mass or density"),
    (lambda d: d["bodies"][0]["shapes"][0].pop("mass"), "bodies[0].shapes[0].mass", "missing"),
    (lambda d: d["bodies"][0]["shapes"][0].__setitem__("kind", "cylnder"), "bodies[0].shapes[0].kind",
     "did you mean 'cylinder'"),
    (lambda d: d["bodies"][0].pop("pivot"), "bodies[0].pivot", "missing"),
    (lambda d: d["bodies"][0].__setitem__("position", [0, 0, 0]), "bodies[0].position", "pivot"),
    (lambda d: d["bodies"][1].__setitem__("pivot", [0, 0, 0]), "bodies[1].pivot", "only pendulum"),
    (lambda d: d["bodies"][1].__setitem__("role", "driven"), "bodies[1].motion", "driven body needs"),
    (lambda d: d["bodies"][1].__setitem__("name", "bob"), "bodies[1].name", "duplicate"),
    (lambda d: d.__setitem__("bodies", {"name": "x"}), "bodies", "array of [[bodies]]"),
    (lambda d: d.__setitem__("field", [0, 0, 1]), "field", "expected a table"),
    (lambda d: d["settings"].__setitem__("method", "rk4"), "settings.method", "expected one of"),
    (lambda d: d["settings"].__setitem__("record_interval", 0.0015), "settings.record_interval", "multiple of dt"),
    (lambda d: d.__setitem__("version", 2), "version", "upgrade pem_physics"),
    (lambda d: d.__setitem__("version", "1"), "version", "expected a positive integer"),
    (lambda d: d.pop("format"), "format", "missing"),
    (lambda d: d.__setitem__("format", "pem"), "format", "expected 'pem-scene'"),
    (lambda d: d["bodies"][0].__setitem__("color", [1, 2, 3]), "bodies[0].color", "0…1"),
    (lambda d: d["bodies"][0].__setitem__("mass_properties", {"mass": 1.0, "inertia": [[1, 0, 0], [1, 1, 0],
                                                                                        [0, 0, 1]]}),
     "bodies[0].mass_properties.inertia", "symmetric"),
    (lambda d: d["bodies"][0]["shapes"].append({"kind": "rod", "half_length": 1.0, "density": 2.0}),
     "bodies[0].shapes[2].density", "give its mass"),
    (lambda d: d["bodies"][0]["shapes"].append({"kind": "mesh", "vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]],
                                                "faces": [[0, 1, 2], [0, 2, 1], [0, 1, 2], [0, 2, 1]], "mass": 1.0}),
     "bodies[0].shapes[2].vertices", "N ≥ 4"),
    (lambda d: d["bodies"][0]["shapes"].append({"kind": "mesh", "vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]],
                                                "faces": [[0, 1, 7]], "mass": 1.0}),
     "bodies[0].shapes[2].faces[0][2]", "vertex index 0…2"),
    (lambda d: d["settings"].__setitem__("t_end", 1e20), "settings.t_end", "steps"),
])
def test_bad_values_named(mutate, path, message):
    doc = _doc()
    mutate(doc)
    with pytest.raises(ValidationError) as err:
        scene_from_dict(doc)
    assert err.value.path == path, str(err.value)
    assert message in err.value.message, str(err.value)


def test_open_inline_mesh_names_face():
    V, F = examples.box_mesh((1, 1, 1))
    shape = {"kind": "mesh", "vertices": V.tolist(), "faces": F[:-1].tolist(), "density": 1.0}
    doc = _doc()
    doc["bodies"][0]["shapes"] = [shape]
    with pytest.raises(ValidationError, match="not closed") as err:
        scene_from_dict(doc)
    assert err.value.path.startswith("bodies[0].shapes[0].faces[")


def test_broken_toml_and_files(tmp_path):
    assert "not valid TOML" in _error("format = ").message
    with pytest.raises(ValidationError, match="missing.toml: no such file"):
        load_scene(tmp_path / "missing.toml")
    bad = tmp_path / "bad.obj"
    bad.write_text("this is not a mesh\n")
    err = _error(_minimal(shape='{ kind = "mesh", file = "bad.obj", mass = 1.0 }'), base_dir=tmp_path)
    assert err.path == "bodies[0].shapes[0].file"


# ---------------------------------------------------------------------------- orientation and units

def test_orientation_forms_agree():
    U = axis_angle_matrix(np.array([1.0, 2.0, 2.0]) / 3, 0.7).T
    from pem_physics.model.rotations import orientation_to_quat

    q = orientation_to_quat(U)
    yaw, pitch, roll = np.degrees(euler_zyx(U)).tolist()
    forms = [f"axes = {U.tolist()}", f"quaternion = {q.tolist()}", f"euler_deg = {[yaw, pitch, roll]}"]
    for form in forms:
        scene = loads(_minimal(extra_body=form))
        _close(scene.bodies[0].orientation, U, form, atol=1e-12)
    # euler_deg by hand: yaw 90° turns the body x axis onto lab y
    scene = loads(_minimal(extra_body="euler_deg = [90.0, 0.0, 0.0]"))
    _close(scene.bodies[0].orientation[0], [0, 1, 0], "u1", atol=1e-15)
    assert "unit quaternion" in _error(_minimal(extra_body="quaternion = [1.0, 1.0, 0.0, 0.0]")).message
    # a turn and a half is an angle; 1e17° is not one any more (doubles there are 16° apart)
    _close(loads(_minimal(extra_body="euler_deg = [540.0, 0.0, 0.0]")).bodies[0].orientation[0], [-1, 0, 0], "u1",
           atol=1e-15)
    assert 1e17 + 8 == 1e17   # the spacing the bound is for
    err = _error(_minimal(extra_body="euler_deg = [0.0, 1e17, 0.0]"))
    assert err.path == "bodies[0].euler_deg[1]" and "within ±360°" in err.message, err


def test_an_inertia_no_body_has_or_a_mass_too_small_to_simulate_is_refused():
    """I1 + I2 < I3 ran (the UDF reader and the panel refused it); a mass of 1e-320 kg ended in numpy's LinAlgError
    or in NaN trajectories marked complete."""
    whole = 'shapes = [{ kind = "sphere", radius = 0.1, mass = 1.0 }]'

    def given(mass, inertia):
        return _minimal().replace(whole, f"mass_properties = {{mass = {mass}, center_of_mass = [0, 0, -0.5], "
                                         f"inertia = {inertia}}}")

    err = _error(given(1.0, "[1, 1, 5]"))
    assert err.path == "bodies[0].mass_properties.inertia" and "triangle inequality" in err.message, err
    loads(given(1.0, "[1, 1, 2]"))                       # a lamina: I1 + I2 = I3
    for mass in ("1e-320", "1e-300", "1e-101"):
        err = _error(given(mass, "[1e-310, 1e-310, 1e-310]"))
        assert err.path == "bodies[0].mass_properties.mass" and "too small to simulate" in err.message, err
    err = _error(_minimal(shape='{ kind = "sphere", radius = 0.1, mass = 1e-320 }'))
    assert err.path.startswith("bodies[0].shapes") and "too small" in err.message, err
    loads(given("9.1e-31", "[1e-60, 1e-60, 1e-60]"))     # an electron's mass: small, not too small


@pytest.mark.parametrize("name, said", [("a\\u0000b", "control character"), ("x" * 5000, "5,000 characters"),
                                        ("", "non-empty"), ("   ", "a name of 3 space(s) only"),
                                        ("a\\u2028b", "U+2028 (LINE SEPARATOR)"), ("a\\u0085b", "U+0085"),
                                        ("\\u202Eevil", "U+202E (RIGHT-TO-LEFT OVERRIDE)")])
def test_a_scene_name_that_would_break_the_outputs_is_refused(name, said):
    """Body and wall names were checked, the scene's was not: a NUL or 5,000 characters reached sweep.json. A name of
    spaces, a line separator (a line break to Python's splitlines) or a right-to-left override (which shows every
    CSV column after it reversed) passed for scene, body and wall names alike."""
    err = _error(_minimal(extra_top=f'name = "{name}"'))
    assert err.path == "name" and said in err.message, err
    if name and len(name) < 100:
        err = _error(_minimal().replace('name = "bob"', f'name = "{name}"'))
        assert err.path == "bodies[0].name" and said in err.message, err


def test_a_file_whose_stem_would_be_a_refused_name_still_names_its_scene(tmp_path):
    """A scene file without a ``name`` takes its stem; a stem of spaces or with a right-to-left override is made a
    valid name (the default, or '?' for the character), never refused for the file's sake."""
    for stem, name in (("   ", "scene"), ("a\u202eb", "a?b")):
        path = tmp_path / f"{stem}.toml"
        path.write_text(_minimal(), encoding="utf-8")
        assert load_scene(path).name == name


@pytest.mark.parametrize("tolerance", ["1e90", "0.003"])
def test_a_placement_tolerance_beyond_the_contact_shapes_is_refused(tolerance):
    """placement_tolerance = 1e90 ran: a ball any distance above the table would start on it. It is a round-off
    (~1e-7 of the scene's size), so it must stay below a tenth of the smallest contact radius (here 0.028575 m)."""
    text = (SCENES / "billiard_ball.toml").read_text(encoding="utf-8")
    err = _error(text.replace('contact_model = "surface"', f'contact_model = "surface"\nplacement_tolerance = '
                                                               f'{tolerance}'), base_dir=SCENES)
    assert err.path == "placement_tolerance" and "bodies[0].contacts[0]" in err.message, err
    ok = loads(text.replace('contact_model = "surface"', 'contact_model = "surface"\nplacement_tolerance = 1e-6'))
    assert ok.placement_tolerance == 1e-6


_TETRA = ('kind = "mesh", density = 1000.0, vertices = [[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]], '
          'faces = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]]')


@pytest.mark.parametrize("name, said", [("a\\u001b[31mred", "control character"), ("n\\u0000", "control character"),
                                        ("x" * 5000, "5,000 characters"), ("", "non-empty")])
def test_a_mesh_shape_name_that_would_break_the_outputs_is_refused(name, said):
    """A mesh shape's name (written back by the scene writer, an object's name in Blender) was any string: ESC, NUL
    or 5,000 characters passed. Checked as body and scene names are, naming the key."""
    err = _error(_minimal(shape=f'{{ {_TETRA}, name = "{name}" }}'))
    assert err.path == "bodies[0].shapes[0].name" and said in err.message, err


def test_a_mesh_files_name_lends_a_valid_shape_name(tmp_path):
    """A mesh file's stem names its shape: control characters become '?' and at most 200 characters are kept,
    so a file is never refused for its name's sake."""
    stem = "br\x1bick" + "k" * 240
    shutil.copy(SCENES / "meshes" / "brick.obj", tmp_path / f"{stem}.obj")
    escaped = stem.replace("\x1b", "\\u001b")   # TOML's escape of ESC
    shape = f'{{ kind = "mesh", file = "{escaped}.obj", density = 1000.0 }}'
    name = loads(_minimal(shape=shape), base_dir=tmp_path).bodies[0].shapes[0].name
    assert name == ("br?ick" + "k" * 240)[:200]


def test_a_file_without_a_name_takes_its_file_names_even_when_long(tmp_path):
    """The name from a file's stem is made a valid name (at most 200 characters), not refused for the file's sake."""
    path = tmp_path / ("a" * 240 + ".toml")
    path.write_text(_minimal(), encoding="utf-8")
    assert load_scene(path).name == "a" * 200


def test_a_massless_moving_body_is_blamed_on_the_key_that_gives_its_mass():
    """The model's check says ``mass``; the file has shapes or mass_properties.mass: the error names those."""
    err = _error(_minimal(shape='{ kind = "sphere", radius = 0.1, mass = 0.0 }'))
    assert err.path == "bodies[0].shapes" and "shapes add up to 0" in err.message, err
    err = _error(_minimal(shape='{ kind = "sphere", radius = 0.1, density = 0.0 }'))
    assert err.path == "bodies[0].shapes" and "density > 0" in err.message, err
    text = _minimal().replace("shapes = [{ kind = \"sphere\", radius = 0.1, mass = 1.0 }]",
                              "mass_properties = {mass = 0, center_of_mass = [0, 0, -0.5], inertia = [0, 0, 0]}")
    err = _error(text)
    assert err.path == "bodies[0].mass_properties.mass" and "positive mass" in err.message, err
    # a massless fixed magnet beside the pendulum is fine: it does not move
    loads(_minimal() + '[[bodies]]\nname = "base"\nrole = "fixed"\nshapes = [{ kind = "sphere", radius = 0.1, '
                       'mass = 0.0 }]\n')


def test_angular_velocity_body_frame():
    scene = loads(_minimal(extra_body="euler_deg = [90.0, 0.0, 0.0]\nangular_velocity_body = [2.0, 0.0, 0.0]"))
    _close(scene.bodies[0].angular_velocity, [0, 2, 0], "omega", atol=1e-15)
    err = _error(_minimal(extra_body="angular_velocity = [1.0, 0, 0]\nangular_velocity_body = [1.0, 0, 0]"))
    assert err.path == "bodies[0].angular_velocity_body"


def test_units_cm_gram_match_si_by_hand():
    """The same pendulum written in SI and in cm/g/ms/mA gives the same SI scene (hand conversions)."""
    si = """format = "pem-scene"
version = 1
gravity = [0.0, 0.0, -9.8]
friction = 2e-5
mu0 = 1.25e-6
periodic_box = [1.0, 2.0, 3.0]
[field]
uniform = [0.001, 0.0, 0.0]
rotating = { b1 = [0.002, 0, 0], b2 = [0, 0.002, 0], angular_velocity = 3.0 }
[settings]
dt = 0.001
t_end = 0.5
record_interval = 0.01
[[bodies]]
name = "bob"
pivot = [0.0, 0.0, 0.5]
angular_velocity = [0.0, 4.0, 0.0]
shapes = [{ kind = "sphere", radius = 0.02, density = 7800.0, center = [0.0, 0.0, -0.3] },
          { kind = "rod", half_length = 0.15, mass = 0.01, center = [0.0, 0.0, -0.15] }]
dipoles = [{ position = [0.0, 0.0, -0.3], moment = [0.0, 0.0, 0.05] }]
[[bodies]]
name = "cart"
role = "driven"
motion = { kind = "constant_velocity", velocity = [0.1, 0.0, 0.0] }
"""
    # L = 1 cm, M = 1 g, T = 1 ms, A = 1 mA
    cgs = """format = "pem-scene"
version = 1
gravity = [0.0, 0.0, -9.8e-4]        # 9.8 m/s² = 980 cm/s² = 980e-6 cm/ms²
friction = 0.2                       # g cm²/ms = 1e-3·1e-4/1e-3 = 1e-4 kg m²/s
mu0 = 1.25e-13                       # g cm/(ms² mA²) = 1e-3·1e-2/(1e-6·1e-6) = 1e7 kg m/(s² A²)
periodic_box = [100.0, 200.0, 300.0]
[units]
length = 0.01
mass = 0.001
time = 0.001
ampere = 0.001
[field]
uniform = [1e-9, 0.0, 0.0]           # g/(mA ms²) = 1e-3/(1e-3·1e-6) = 1e6 T
rotating = { b1 = [2e-9, 0, 0], b2 = [0, 2e-9, 0], angular_velocity = 3e-3 }
[settings]
dt = 1.0
t_end = 500.0
record_interval = 10.0
[[bodies]]
name = "bob"
pivot = [0.0, 0.0, 50.0]
angular_velocity = [0.0, 4e-3, 0.0]
shapes = [{ kind = "sphere", radius = 2.0, density = 7.8, center = [0.0, 0.0, -30.0] },
          { kind = "rod", half_length = 15.0, mass = 10.0, center = [0.0, 0.0, -15.0] }]
dipoles = [{ position = [0.0, 0.0, -30.0], moment = [0.0, 0.0, 5e5] }]   # 0.05 A m² = 0.05·1e3·1e4 mA cm²
[[bodies]]
name = "cart"
role = "driven"
motion = { kind = "constant_velocity", velocity = [1e-2, 0.0, 0.0] }   # 0.1 m/s = 10 cm / 1000 ms
"""
    a, b = loads(si), loads(cgs)
    assert_equivalent(a, b, atol=1e-15, rtol=1e-12)
    # and the SI values themselves, from closed forms
    m_sphere = 7800.0 * 4 / 3 * math.pi * 0.02**3
    mp = a.bodies[0].resolved_mass_properties()
    assert mp.mass == pytest.approx(m_sphere + 0.01, rel=1e-12)
    I_zz_pivot = 0.4 * m_sphere * 0.02**2
    I_xx_pivot = I_zz_pivot + m_sphere * 0.3**2 + 0.01 * 0.3**2 / 3
    _close(np.diag(mp.inertia_about(np.zeros(3))), [I_xx_pivot, I_xx_pivot, I_zz_pivot], "inertia", rtol=1e-12)


def test_inertia_diagonal_shorthand_and_psd():
    text = _minimal(extra_body="[bodies.mass_properties]\nmass = 2.0\ninertia = [1.0, 2.0, 2.5]\n")
    mp = loads(text).bodies[0].mass_properties
    _close(mp.inertia, np.diag([1.0, 2.0, 2.5]), "inertia")
    bad = _minimal(extra_body="[bodies.mass_properties]\nmass = 2.0\ninertia = [1.0, -2.0, 2.5]\n")
    assert "negative principal moment" in _error(bad).message


# ---------------------------------------------------------------------------- fuzzing

toml_scalars = st.one_of(st.booleans(), st.integers(), st.floats(), st.text(max_size=12),
                         st.integers(-(2**70), 2**70), st.sampled_from([0, -1, 1e308, -1e308, 1e-320, "", "mesh"]))
toml_values = st.recursive(toml_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)


def _slots(node, out):
    """Every (container, key) in a document, depth first."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        out.append((node, k))
        _slots(v, out)
    return out


def _fuzz_bases() -> list[dict]:
    docs = [tomllib.loads(p.read_text(encoding="utf-8")) for p in EXAMPLE_FILES]
    docs.append(scene_to_dict(examples.t_handle_mesh()))
    docs.append(scene_to_dict(examples.compass_rotating()))
    scene = examples.compass()
    scene.bodies.append(Body(name="orbit", role="driven", motion=EllipticOrbit(), dipoles=(Dipole(),)))
    scene.periodic_box = (1.0, 1.0, 1.0)
    docs.append(scene_to_dict(scene))
    return docs


FUZZ_BASES = _fuzz_bases()


@property_settings(300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_only_validation_errors(data):
    doc = copy.deepcopy(data.draw(st.sampled_from(FUZZ_BASES)))
    for _ in range(data.draw(st.integers(1, 4))):
        slots = _slots(doc, [])
        op = data.draw(st.sampled_from(["delete", "replace", "add", "numeric"]))
        if op == "add":
            tables = [doc] + [c[k] for c, k in slots if isinstance(c[k], dict)]
            table = data.draw(st.sampled_from(tables))
            table[data.draw(st.text(min_size=1, max_size=10))] = data.draw(toml_values)
            continue
        if not slots:
            break
        container, key = data.draw(st.sampled_from(slots))
        if op == "delete":
            del container[key]
        elif op == "numeric":
            container[key] = data.draw(st.one_of(st.floats(), st.integers(-3, 3), st.just(0.0)))
        else:
            container[key] = data.draw(toml_values)
    try:
        scene = scene_from_dict(doc, base_dir=SCENES)
    except PemError as err:
        assert str(err)
        if isinstance(err, ValidationError):
            assert isinstance(err.path, str)
        return
    assert isinstance(scene, Scene)
    # whatever loads must also write back and re-read to the same scene
    assert_equivalent(scene, round_trip(scene, base_dir=SCENES))


def test_format_version_constant():
    assert FORMAT_VERSION == 1
    assert scene_to_dict(examples.t_handle())["version"] == 1


@pytest.mark.parametrize("name", ["dipole", "ellipsoid", "pendulum"])
def test_udf_samples_convert_and_round_trip(name, tmp_path):
    """PEM input files (with unit parameters and mass-property overrides) survive UDF → TOML → Scene."""
    from pem_physics.io.udf_scene import load_scene as load_udf

    scene = load_udf(DATA / "pem" / f"{name}.udf")
    save_scene(scene, tmp_path / f"{name}.toml")
    assert_equivalent(scene, load_scene(tmp_path / f"{name}.toml"))


# ---------------------------------------------------------------------------- the reference document

DOC = ROOT / "docs" / "scene-format.md"


def test_doc_full_example_loads_and_runs():
    text = DOC.read_text(encoding="utf-8")
    block = text.split("## Full example", 1)[1].split("```toml", 1)[1].split("```", 1)[0]
    scene = loads(block, base_dir=SCENES)
    assert [b.role for b in scene.bodies] == ["pendulum", "fixed", "driven", "free"]
    assert scene.mu0 == pytest.approx(4e-7 * math.pi, rel=1e-15)
    _close(scene.rotating_field.b1, [5e-3, 0, 0], "b1 (5 mT)")
    traj = simulate(scene, t_end=3 * scene.settings.dt, record_interval=scene.settings.dt)
    assert traj.complete
    assert_equivalent(scene, round_trip(scene, base_dir=SCENES))


def test_doc_names_every_key():
    from pem_physics.io import scenefile as sf

    text = DOC.read_text(encoding="utf-8")
    keys = set(sf.TOP_KEYS + sf.UNIT_KEYS + sf.FIELD_KEYS + sf.ROTATING_KEYS + sf.SETTINGS_KEYS + sf.BODY_KEYS
               + sf.MASS_PROPERTY_KEYS + sf.DIPOLE_KEYS)
    keys |= {k for ks in sf.SHAPE_KEYS.values() for k in ks} | {k for ks in sf.MOTION_KEYS.values() for k in ks}
    keys |= set(sf.SHAPE_KEYS) | set(sf.MOTION_KEYS) | set(METHODS) | set(sf.ROLES)
    missing = sorted(k for k in keys if f"`{k}`" not in text and f"[{k}]" not in text and f"{k}]]" not in text
                     and f".{k}]" not in text)
    assert not missing, f"docs/scene-format.md does not mention {missing}"


# ---------------------------------------------------------------------------- tabulated motions

TABLE_SCENE = """
format = "pem-scene"
version = 1

[settings]
dt = 1e-3
t_end = 0.2

[[bodies]]
name = "bob"
pivot = [0, 0, 0.3]
hinge = [1, 0, 0]
mass_properties = {{ mass = 0.1, center_of_mass = [0, 0, -0.2], inertia = [0, 0, 0] }}
pivot_motion = {pivot}

[[bodies]]
name = "rotor"
role = "driven"
dipoles = [{{ position = [0, 0, 0], moment = [0.1, 0, 0] }}]
motion = {motion}
"""


def write_tables(tmp_path):
    t = np.linspace(0.0, 0.25, 26)
    with open(tmp_path / "pivot.csv", "w") as fh:
        fh.write("t,x,y,z\n# the pivot shaken along z\n")
        for tk in t:
            fh.write(f"{float(tk)!r},0,0,{0.3 + 0.01 * float(np.sin(30 * tk))!r}\n")
    with open(tmp_path / "rotor.csv", "w") as fh:
        fh.write("t, x, y, z, qw, qx, qy, qz\n")
        for tk in t:
            fh.write(f"{float(tk)!r},0.05,0,-0.1,{float(np.cos(2 * tk))!r},0,0,{float(np.sin(2 * tk))!r}\n")
    return t


def test_tabulated_motions_read_from_csv_files_and_inline_alike(tmp_path):
    t = write_tables(tmp_path)
    from_files = loads(TABLE_SCENE.format(pivot='{ file = "pivot.csv" }',
                                          motion='{ kind = "tabulated", file = "rotor.csv" }'), base_dir=tmp_path)
    times = [float(x) for x in t]
    pivot = f"{{ times = {times}, positions = {[[0.0, 0.0, 0.3 + 0.01 * float(np.sin(30 * tk))] for tk in t]} }}"
    quats = [[float(np.cos(2 * tk)), 0, 0, float(np.sin(2 * tk))] for tk in t]
    motion = (f'{{ kind = "tabulated", times = {times}, positions = {[[0.05, 0.0, -0.1]] * len(t)}, '
              f'orientations = {quats} }}')
    inline = loads(TABLE_SCENE.format(pivot=pivot, motion=motion))
    a, b = simulate(from_files), simulate(inline)
    np.testing.assert_array_equal(a.orientation, b.orientation)
    # the table drives the run: the pivot is where the CSV puts it
    # the spline of 10 ms samples of a 30 rad/s sine: within 5/384·h⁴·max|x⁗| ≈ 1e-6 (more near the ends)
    np.testing.assert_allclose(a.position[:, 0, 2], 0.3 + 0.01 * np.sin(30 * a.t), rtol=0, atol=5e-6)
    # written back (inline) and read again: the same run
    again = simulate(loads(dumps(from_files)))
    np.testing.assert_allclose(again.orientation, a.orientation, rtol=0, atol=1e-13)


def test_a_motion_tables_quaternion_not_of_unit_length_is_refused_not_normalised(tmp_path):
    """A table's orientation of length 2 or 100 was normalised without a word; a body's own must be unit to 1e-3."""
    t = write_tables(tmp_path)
    rows = (tmp_path / "rotor.csv").read_text().splitlines()
    cells = rows[5].split(",")
    rows[5] = ",".join(cells[:4] + [repr(2 * float(c)) for c in cells[4:]])     # sample 4 on line 6: length 2
    (tmp_path / "rotor.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(ValidationError, match=r"rotor\.csv:6: expected a unit quaternion .* got length 2"):
        loads(TABLE_SCENE.format(pivot='{ file = "pivot.csv" }', motion='{ kind = "tabulated", file = "rotor.csv" }'),
              base_dir=tmp_path)
    times = [float(x) for x in t]
    quats = [[float(np.cos(2 * tk)), 0, 0, float(np.sin(2 * tk))] for tk in t]
    quats[3] = [100.0 * c for c in quats[3]]
    motion = (f'{{ kind = "tabulated", times = {times}, positions = {[[0.05, 0.0, -0.1]] * len(t)}, '
              f'orientations = {quats} }}')
    err = _error(TABLE_SCENE.format(pivot='{ file = "pivot.csv" }', motion=motion), base_dir=tmp_path)
    assert err.path == "bodies[1].motion.orientations[3]" and "got length 100" in err.message, err


@pytest.mark.parametrize("name", ["/etc/passwd", "../secretdir/secret.csv", "link.csv", "~/secret.csv"])
def test_a_motion_table_outside_the_scenes_folder_is_refused_unread(tmp_path, name):
    """As a UDF's include: an absolute path, a way up or a link leading out is refused by name before anything is
    opened, and nothing of the file reaches the message."""
    secret = tmp_path / "secretdir" / "secret.csv"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET-LINE,1,2,3\n")
    scenes = tmp_path / "scenes"
    scenes.mkdir()
    write_tables(scenes)
    (scenes / "link.csv").symlink_to(secret)
    with pytest.raises(ValidationError) as err:
        loads(TABLE_SCENE.format(pivot=f'{{ file = "{name}" }}', motion='{ kind = "tabulated", file = "rotor.csv" }'),
              base_dir=scenes)
    assert err.value.path == "bodies[0].pivot_motion.file", err.value.path
    assert "TOP-SECRET" not in str(err.value) and "root:" not in str(err.value)
    assert ("absolute path" in err.value.message) if name.startswith(("/", "~")) else ("outside" in err.value.message)


def test_a_motion_table_with_a_byte_order_mark_is_read(tmp_path):
    """Excel and Notepad save CSV with a leading byte-order mark: the header is still the header, the run the same."""
    write_tables(tmp_path)
    scene = TABLE_SCENE.format(pivot='{ file = "pivot.csv" }', motion='{ kind = "tabulated", file = "rotor.csv" }')
    plain = loads(scene, base_dir=tmp_path)
    for name in ("pivot.csv", "rotor.csv"):
        (tmp_path / name).write_bytes(b"\xef\xbb\xbf" + (tmp_path / name).read_bytes())
    marked = loads(scene, base_dir=tmp_path)
    np.testing.assert_array_equal(simulate(marked).orientation, simulate(plain).orientation)


def test_a_rejected_header_is_not_echoed(tmp_path):
    write_tables(tmp_path)
    (tmp_path / "private.csv").write_text("password=hunter2,x,y,z\n0,0,0,0\n")
    with pytest.raises(ValidationError) as err:
        loads(TABLE_SCENE.format(pivot='{ file = "private.csv" }', motion='{ kind = "tabulated", file = "rotor.csv" }'),
              base_dir=tmp_path)
    assert "hunter2" not in str(err.value) and "not the header" in str(err.value)


@pytest.mark.parametrize("pivot, motion, where, words", [
    ('{ file = "pivot.csv", times = [0, 1] }', '{ kind = "tabulated", file = "rotor.csv" }',
     "bodies[0].pivot_motion.times", "either file"),
    ('{ positions = [[0, 0, 0]] }', '{ kind = "tabulated", file = "rotor.csv" }',
     "bodies[0].pivot_motion.times", "missing"),
    ('{ file = "rotor.csv" }', '{ kind = "tabulated", file = "rotor.csv" }',
     "bodies[0].pivot_motion.orientations", "positions only"),
    ('{ kind = "elliptic_orbit" }', '{ kind = "tabulated", file = "rotor.csv" }',
     "bodies[0].pivot_motion.kind", "a pivot is a point"),
    ('{ file = "bad_header.csv" }', '{ kind = "tabulated", file = "rotor.csv" }', "bad_header.csv:1", "header"),
    ('{ file = "bad_cell.csv" }', '{ kind = "tabulated", file = "rotor.csv" }', "bad_cell.csv:3", "not a number"),
    ('{ file = "missing.csv" }', '{ kind = "tabulated", file = "rotor.csv" }', "missing.csv", "no such file"),
    ('{ file = "pivot.csv" }', '{ kind = "tabulated", file = "short.csv" }', "short.csv", "at least 4"),
    # a file's rows are named by the file's own lines (comments and blank lines counted), in the numbers written
    ('{ file = "nan.csv" }', '{ kind = "tabulated", file = "rotor.csv" }', "nan.csv:5", "'nan' is not a finite"),
    ('{ file = "repeated.csv" }', '{ kind = "tabulated", file = "rotor.csv" }', "repeated.csv:7",
     "t = 0.05 does not come after t = 0.05: times must increase strictly (sort the rows"),
    ('{ file = "long.csv" }', '{ kind = "tabulated", file = "rotor.csv" }', "long.csv:5", "spans more than 1e+100 s"),
    # a scene file's range and plain numbers hold in its tables too: x = 1e200 ran (an overflow warning), 1_0 was 10
    ('{ file = "huge.csv" }', '{ kind = "tabulated", file = "rotor.csv" }', "huge.csv:3",
     "position [1e+200, 0, 0.3] is out of range (at most 1e+100 in SI units)"),
    ('{ file = "underscore.csv" }', '{ kind = "tabulated", file = "rotor.csv" }', "underscore.csv:4",
     "column x: '1_0' is not a number"),
    ('{ times = [0, 0.05, 0.05, 0.2], positions = [[0, 0, 0.3], [0, 0, 0.3], [0, 0, 0.3], [0, 0, 0.3]] }',
     '{ kind = "tabulated", file = "rotor.csv" }', "bodies[0].pivot_motion.times[2]",
     "t = 0.05 does not come after t = 0.05: times must increase strictly (sort the samples"),
])
def test_bad_motion_tables_name_the_item(tmp_path, pivot, motion, where, words):
    write_tables(tmp_path)
    (tmp_path / "bad_header.csv").write_text("time,x,y,z\n0,0,0,0\n")
    (tmp_path / "bad_cell.csv").write_text("t,x,y,z\n0,0,0,0\n0.1,0,zero,0\n")
    (tmp_path / "short.csv").write_text("t,x,y,z\n0,0,0,0\n0.5,0,0,0\n")
    rows = "0,0,0,0.3\n0.05,0,0,0.3\n0.1,0,0,0.3\n0.2,0,0,0.3\n"
    (tmp_path / "nan.csv").write_text("# shaken\n\nt,x,y,z\n" + rows.replace("0.05,0,0,0.3", "0.05,nan,0,0.3"))
    (tmp_path / "repeated.csv").write_text("t,x,y,z\n# start\n0,0,0,0.3\n\n0.05,0,0,0.3\n# again\n0.05,0,0,0.3\n"
                                           "0.2,0,0,0.3\n")
    (tmp_path / "long.csv").write_text("t,x,y,z\n" + rows.replace("0.2,", "1e300,"))
    (tmp_path / "huge.csv").write_text("t,x,y,z\n" + rows.replace("0.05,0,0,0.3", "0.05,1e200,0,0.3"))
    (tmp_path / "underscore.csv").write_text("t,x,y,z\n" + rows.replace("0.1,0,0,0.3", "0.1,1_0,0,0.3"))
    with pytest.raises(ValidationError) as err:
        simulate(loads(TABLE_SCENE.format(pivot=pivot, motion=motion), base_dir=tmp_path))
    assert err.value.path.endswith(where) and words in err.value.message, (err.value.path, err.value.message)
    assert "np." not in err.value.message and "array(" not in err.value.message  # the user's numbers, not numpy's


def test_save_scene_names_a_folder_or_a_wrong_argument(tmp_path):
    """save_scene(scene, "/tmp") raised IsADirectoryError (its temporary file left beside the folder's parent);
    a folder, a path that is not a name and a scene that is not a Scene are ValidationErrors naming them."""
    scene = examples.pendulum()
    with pytest.raises(ValidationError, match=f"^{tmp_path}: is a folder: name the scene file to write in it"):
        save_scene(scene, tmp_path)
    assert list(tmp_path.parent.glob(f".{tmp_path.name}.*.tmp")) == []
    with pytest.raises(ValidationError, match="^path: expected a file name, got NoneType"):
        save_scene(scene, None)
    with pytest.raises(ValidationError, match="^scene: expected a pem_physics Scene, got dict"):
        save_scene({}, tmp_path / "x.toml")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("pairs, path, message", [
    # ball1–ball2 0.5 and ball2–ball1 0.9: the last won without a word
    ('bodies = ["heavy", "light"]\nrestitution = 0.5\n[[pair_restitution]]\nbodies = ["light", "heavy"]\n'
     'restitution = 0.9\n', "pair_restitution[1].bodies",
     "'light' and 'heavy' are already a pair in pair_restitution[0] (restitution 0.5 there, 0.9 here): keep one "
     "entry per pair"),
    # the model calls them names; the file's key is bodies
    ('bodies = ["heavy", "heavy"]\nrestitution = 0.5\n', "pair_restitution[0].bodies",
     "a pair needs two different items, got 'heavy' twice"),
])
def test_a_pair_restitution_named_twice_or_with_one_body_is_refused_by_the_files_key(pairs, path, message):
    text = (SCENES / "colliding_pendulums.toml").read_text(encoding="utf-8") + "\n[[pair_restitution]]\n" + pairs
    with pytest.raises(ValidationError) as err:
        loads(text)
    assert (err.value.path, err.value.message) == (path, message)
    # built in Python the model's own name stands
    from pem_physics.model.scene import PairRestitution

    scene = examples.build("colliding-pendulums")
    twice = (PairRestitution(("heavy", "light"), 0.5), PairRestitution(("light", "heavy"), 0.9))
    with pytest.raises(ValidationError, match=r"^pair_restitution\[1\]\.names: 'light' and 'heavy' are already"):
        replace(scene, pair_restitution=twice).checked()


def test_a_scene_with_no_bodies_is_called_empty_not_missing():
    """``bodies = []`` is given: it was "expected an array of [[bodies]] tables, got an array of 0 items" (read:
    missing); the key left out stays "missing"."""
    head = 'format = "pem-scene"\nversion = 1\n'
    with pytest.raises(ValidationError, match=r"^bodies: empty \(bodies = \[\]\): a scene needs at least one"):
        loads(head + "bodies = []\n")
    with pytest.raises(ValidationError, match=r"^bodies: missing; expected at least one \[\[bodies\]\] table"):
        loads(head)
    with pytest.raises(ValidationError, match=r"^bodies: empty: a scene needs at least one body"):
        replace(examples.pendulum(), bodies=[]).checked()


@pytest.mark.parametrize("line, says", [
    ("rtol = 1e-20", r"^settings\.rtol: expected 2\.22e-14 ≤ rtol < 1 \(dop853's relative tolerance: .*got 1e-20$"),
    ("rtol = 1.5", r"^settings\.rtol: expected 2\.22e-14 ≤ rtol < 1 .*got 1\.5$"),
    ("atol = 10", r"^settings\.atol: expected 0 < atol < 1 .*got 10$"),
])
def test_dop853_tolerances_out_of_their_range_are_refused_at_load(line, says):
    """rtol = 1e-20 was taken, and scipy's DOP853 raised it to 100 ε with a warning in the middle of the run;
    rtol ≥ 1 or atol ≥ 1 bound no error of a state whose orientation entries are at most 1."""
    text = (SCENES / "compass.toml").read_text(encoding="utf-8")
    with pytest.raises(ValidationError, match=says):
        loads(text.replace("[settings]\n", f'[settings]\nmethod = "dop853"\n{line}\n'))
    from pem_physics.model.scene import Settings

    key, value = line.split(" = ")
    with pytest.raises(ValidationError, match=says):
        Settings(method="dop853", **{key: float(value)}).checked()


def test_a_phase_beyond_what_doubles_hold_is_refused():
    """phase = 1e50 rad was run: its fraction of a turn is rounding (the spacing of doubles there is ~1e34 rad), so
    the field or orbit would start anywhere; euler_deg already refuses beyond ±1e6° for the same reason."""
    from pem_physics.model.scene import EllipticOrbit, RotatingField

    with pytest.raises(ValidationError, match=r"^field\.rotating\.phase: 1e\+50 rad is beyond ±10000 rad, where "
                                              r"rounding has lost the phase's fraction of a turn; give it within ±2π$"):
        RotatingField(phase=1e50).checked("field.rotating")
    with pytest.raises(ValidationError, match=r"^m\.phase: -20000\.0 rad is beyond ±10000 rad"):
        EllipticOrbit(phase=-2e4).checked("m")
    assert RotatingField(phase=-6.0).checked("f").phase == -6.0 and EllipticOrbit(phase=1e4).checked("m").phase == 1e4
    from pem_physics.model.analytic import Oscillation

    with pytest.raises(ValidationError, match=r"^b\.motion\.phases\[1\]: 1e\+30 rad is beyond ±10000 rad"):
        Oscillation([[0, 0, 0.01], [0, 0, 0.02]], [3.0, 5.0], [0.5, 1e30]).checked("b.motion", (0, 0, 0))
    assert list(Oscillation([[0, 0, 0.01]], [3.0], [-1e4]).checked("b", (0, 0, 0)).phases) == [-1e4]
