"""Scene → UDF → scene keeps what PEM's schema has no field for, in ``// pem:`` notes; bad notes are refused.

Oracles: the scene we started from, field by field (its names, order, roles, shapes, contact coefficients,
tolerances); the committed parity inputs, which carry notes and which the original engine ran to the committed
records (tests/io/test_udf_parity.py holds their SHA-256); hand-written bad notes, each at a line we know.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from pem_physics import examples
from pem_physics.io.loading import load_scene
from pem_physics.io.udf import UdfError
from pem_physics.io.udf_write import write_udf
from pem_physics.model import Body, ConstantVelocity, Dipole, Scene, Settings
from pem_physics.model.inertia import Cylinder, MassProperties, Mesh, Sphere
from pem_physics.model.scene import PairRestitution

from conftest import DATA, ROOT

BOB = 'bob "é" →'   # a quote, an accent and an arrow: the note is a TOML string, escaped as one


def rich_scene() -> Scene:
    """Every optional item a PEM-writable scene may have; the fixed magnet first, so the file (moving bodies
    first) changes the order."""
    mesh = Mesh(*examples.box_mesh((0.01, 0.02, 0.03), (0.0, 0.0, -0.3)), density=1000.0, name="handle mesh")
    return Scene(
        name="rich scene",
        bodies=[
            Body(name="anchor", role="fixed", position=(0.0, 0.0, -0.5), dipoles=(Dipole((0, 0, 0), (0, 0, 1.0)),),
                 color=(0.1, 0.2, 0.3, 1.0)),
            Body(name=BOB, shapes=(Sphere(0.02, mass=0.3, center=(0, 0, -0.1)),
                                   Cylinder(0.005, 0.05, axis=(0, 0, 1), mass=0.01, center=(0, 0, -0.05))),
                 dipoles=(Dipole((0, 0, -0.1), (0, 0, 0.5)),), color=(1.0, 0.0, 0.0, 1.0), hinge=(0, 1.0, 0),
                 restitution=0.7, contact_friction=0.2),
            Body(name="handle", position=(0.5, 0.0, 0.0), shapes=(mesh,), angular_velocity=(0.0, 0.0, 0.0)),
            Body(name="top", role="free", position=(1.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 3.0),
                 shapes=(Sphere(0.05, mass=1.0, center=(0.0, 0.0, 0.02)),)),
            Body(name="orbiter", role="driven", position=(0.0, 1.0, -0.5), dipoles=(Dipole((0, 0, 0), (1.0, 0, 0)),),
                 motion=ConstantVelocity((0.1, 0.0, 0.0))),
            Body(name="heavy", position=(2.0, 0.0, 0.0),
                 mass_properties=MassProperties(1.0, np.array([0.0, 0.0, -0.2]), np.diag([0.01, 0.01, 0.02]))),
        ],
        restitution=0.8, contact_friction=0.1, pair_restitution=(PairRestitution((BOB, "anchor"), 0.5),),
        placement_tolerance=1e-6,
        settings=Settings(method="pem-rk4", dt=1e-3, t_end=0.1, record_interval=2e-3, rtol=1e-8, atol=1e-9))


def _same_shape(a, b):
    assert type(a) is type(b)
    assert getattr(a, "name", None) == getattr(b, "name", None)
    x, y = a.mass_properties(), b.mass_properties()
    assert y.mass == pytest.approx(x.mass, rel=1e-14)
    np.testing.assert_allclose(y.center_of_mass, x.center_of_mass, rtol=0, atol=1e-15)
    np.testing.assert_allclose(y.inertia, x.inertia, rtol=0, atol=1e-14 * np.abs(x.inertia).max())


def test_a_rich_scene_comes_back_field_by_field(tmp_path):
    """Names, order, the free role, mesh names, contact coefficients, pair restitution, placement tolerance, the
    scene's name and dop853 tolerances come back from their notes; shapes, dipoles, colours, hinges and motions from
    PEM's own fields. Two re-expressions, both PEM's (docs/core.md): a body's mass properties come back as the
    file's ``analysis`` block (the same values), and a free body's origin is its centre of mass."""
    scene = rich_scene().checked()
    back = load_scene(str(write_udf(scene, tmp_path / "rich.udf"))).checked()
    assert back.name == "rich scene"
    assert [b.name for b in back.bodies] == [b.name for b in scene.bodies]
    for a, b in zip(scene.bodies, back.bodies):
        assert (b.role, b.restitution, b.contact_friction, b.translate) == (a.role, a.restitution,
                                                                            a.contact_friction, a.translate)
        for key in ("orientation", "angular_velocity", "velocity"):
            np.testing.assert_allclose(getattr(b, key), getattr(a, key), rtol=0, atol=1e-15, err_msg=a.name)
        assert (a.hinge is None) == (b.hinge is None) and (a.color is None) == (b.color is None)
        if a.hinge is not None:
            np.testing.assert_array_equal(b.hinge, a.hinge)
        if a.color is not None:
            assert tuple(b.color) == tuple(a.color)
        assert len(b.dipoles) == len(a.dipoles)
        assert type(b.motion) is type(a.motion)
        if a.moving:
            mp, mq = a.resolved_mass_properties(), b.resolved_mass_properties()
            assert mq.mass == pytest.approx(mp.mass, rel=1e-14)
            np.testing.assert_allclose(mq.inertia, mp.inertia, rtol=0, atol=1e-12 * np.abs(mp.inertia).max())
        if a.role == "free":   # its origin moves to its centre of mass, with its shapes
            com = np.asarray(a.position) + np.asarray(a.orientation).T @ a.resolved_mass_properties().center_of_mass
            np.testing.assert_allclose(b.position, com, rtol=0, atol=1e-15)
            continue
        np.testing.assert_allclose(b.position, a.position, rtol=0, atol=1e-15)
        assert len(b.shapes) == len(a.shapes), a.name   # the stand-in ellipsoid of "heavy" is not read as one
        for s, t in zip(a.shapes, b.shapes):
            _same_shape(s, t)
        for d, e in zip(a.dipoles, b.dipoles):
            np.testing.assert_array_equal(e.position, d.position)
            np.testing.assert_array_equal(e.moment, d.moment)
    assert (back.restitution, back.contact_friction, back.placement_tolerance, back.contact_model) == (
        0.8, 0.1, 1e-6, "impacts")
    assert [(tuple(p.names), p.restitution) for p in back.pair_restitution] == [((BOB, "anchor"), 0.5)]
    s, t = scene.settings, back.settings
    assert (t.method, t.dt, t.t_end, t.record_interval, t.rtol, t.atol) == (s.method, s.dt, s.t_end,
                                                                            s.record_interval, 1e-8, 1e-9)


def test_the_parity_inputs_carry_notes():
    """The committed parity inputs (the original engine's records of them are the committed NPZ files, their
    SHA-256 held by test_udf_parity) carry notes: the engine ran files with notes and read them as comments."""
    text = (DATA / "pem" / "dipole_pair.udf").read_text(encoding="utf-8")
    assert text.count("// pem: name = ") >= 3 and "// pem: index = 1" in text


def _noted(tmp_path, old: str, new: str):
    """The pendulum example with its text ``old`` replaced by ``new``: (path, line of the change)."""
    scenes = ROOT / "examples" / "scenes"
    text = (scenes / "pendulum.udf").read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    shutil.copy(scenes / "pem1_3_def.udf", tmp_path)
    path = tmp_path / "noted.udf"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path, text[:text.index(old)].count("\n") + 1


BAD_NOTES = [
    pytest.param('// pem: name = "pendulum"', '// pem: nmae = "pendulum"', "simulation.pendulum[0] // pem: nmae",
                 "not a note of a simulation.pendulum[] entry", id="unknown-key"),
    pytest.param('// pem: name = "pendulum"', "// pem: restitution = 2.0", "simulation.pendulum[0] // pem: "
                 "restitution", "expected 0 ≤ e ≤ 1", id="bad-value"),
    pytest.param('// pem: name = "pendulum"', "// pem: name = pendulum", "// pem:", "not a note `key = value`",
                 id="not-toml"),
    pytest.param('// pem: name = "simple pendulum"', '// pem: name = "simple pendulum"\n// pem: name = "again"',
                 "// pem: name", "given again", id="twice"),
    pytest.param("// pem: stand_in = true", '// pem: name = "ball"', "body[0].shape[0] // pem: name",
                 "only a mesh shape has a name", id="name-of-a-point"),
]


@pytest.mark.parametrize("old, new, named, says", BAD_NOTES)
def test_a_bad_note_is_refused_with_its_line(tmp_path, old, new, named, says):
    path, line = _noted(tmp_path, old, new)
    line += new.count("\n")   # the bad line is the last of the new text
    with pytest.raises(UdfError) as err:
        load_scene(path)
    message = str(err.value)
    assert message.startswith(f"{path}:{line}:") and named in message and says in message, message


def test_an_error_about_a_noted_value_names_its_note(tmp_path):
    """Two bodies of one name: the scene's check refuses the second, named by its note's line, the first by its
    placement — never by the model's bodies[i]."""
    scene = Scene(bodies=[Body(name=n, position=(x, 0, 0), shapes=(Sphere(0.01, mass=0.1, center=(0, 0, -0.1)),))
                          for n, x in (("a", 0.0), ("b", 1.0))], settings=Settings(method="pem-rk4"))
    path = write_udf(scene, tmp_path / "twice.udf")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('// pem: name = "b"', '// pem: name = "a"'), encoding="utf-8")
    line = text[:text.index('// pem: name = "b"')].count("\n") + 1
    with pytest.raises(UdfError) as err:
        load_scene(path)
    message = str(err.value)
    assert message.startswith(f"{path}:{line}:"), message
    assert "simulation.pendulum[1] // pem: name: duplicate body name 'a' (also simulation.pendulum[0])" in message
    assert "bodies[" not in message


def test_an_index_given_twice_is_refused(tmp_path):
    scene = Scene(bodies=[Body(name=n, position=(x, 0, 0), shapes=(Sphere(0.01, mass=0.1, center=(0, 0, -0.1)),))
                          for n, x in (("a", 0.0), ("b", 1.0))], settings=Settings(method="pem-rk4"))
    path = write_udf(scene, tmp_path / "index.udf")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("// pem: index = 1", "// pem: index = 0"), encoding="utf-8")
    line = text[:text.index("// pem: index = 1")].count("\n") + 1
    with pytest.raises(UdfError, match=rf"index\.udf:{line}:\d+: simulation\.pendulum\[1\] // pem: index: 0 is already "
                                       r"the index of simulation\.pendulum\[0\]"):
        load_scene(path)


def test_a_pair_of_unknown_names_is_named_by_its_note(tmp_path):
    scene = rich_scene()
    path = write_udf(scene, tmp_path / "pair.udf")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('["bob \\"é\\" →", "anchor"]', '["bob", "anchor"]'), encoding="utf-8")
    line = text[:text.index("// pem: pair_restitution")].count("\n") + 1
    with pytest.raises(UdfError) as err:
        load_scene(path)
    message = str(err.value)
    assert message.startswith(f"{path}:{line}:") and "// pem: pair_restitution" in message, message
    assert "no body or wall is called 'bob'" in message


def test_a_note_in_another_struct_is_refused(tmp_path):
    """A note inside simulation.time (no place for one) is refused, not taken for the scene's."""
    path, line = _noted(tmp_path, "{5000,10,0.001}", '{\n// pem: name = "x"\n5000,10,0.001}')
    with pytest.raises(UdfError) as err:
        load_scene(path)
    message = str(err.value)
    assert message.startswith(f"{path}:{line + 1}:") and "simulation.time: a // pem: note stands" in message
