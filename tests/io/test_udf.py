"""PEM UDF reading: every def version, every shape kind, units, bodies, fields — and clear errors.

Oracles: values written by hand into the UDF text below, converted to SI by hand; the analytic
cuboid formula for a mesh cube; the schema of PEM's def versions (which fields each has); the
text of an output file the original engine wrote (tests/data/pem/euler_o.udf).
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from pem_physics.engine.simulate import simulate
from pem_physics.io.udf import UdfError, parse_udf, read_records, read_udf
from pem_physics.io.udf_scene import scene_from_udf
from pem_physics.model.inertia import Mesh, Sphere

from conftest import DATA

PEM = DATA / "pem"  # def files of every version and inputs, written by our writer (make_pem_reference.py)

DEFS = {"1.0": "pem_def.udf", "1.1": "pem1_1_def.udf", "1.2": "pem1_2_def.udf", "1.3": "pem1_3_def.udf"}

# A 2 cm cube as 8 vertices and 6 outward quads (fan-triangulated by the reader).
CUBE_V = [(-1, -1, -1), (1, -1, -1), (1, 1, -1), (-1, 1, -1), (-1, -1, 1), (1, -1, 1), (1, 1, 1), (-1, 1, 1)]
CUBE_F = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]


def v(x):
    return "{" + ",".join(repr(float(c)) for c in x) + "}"


def shape(kind, center, mass, sphere=0.0, cylinder=(0, 0, (0, 0, 1)), ellipsoid=(0, 0, 0), cuboid=(0, 0, 0),
          mesh=None, line=(0, (0, 0, 1))):
    ax = v((1, 0, 0)) + v((0, 1, 0))
    mesh_txt = "{[][]}"
    if mesh is not None:
        V, F = mesh
        verts = "".join("{" + f"{i},{v(p)}" + "}" for i, p in enumerate(V))
        faces = "".join("{" + f"{100 + j},[" + ",".join(str(i) for i in f) + "]}" for j, f in enumerate(F))
        mesh_txt = "{[" + verts + "][" + faces + "]}"
    return ("{" + f"{v(center)} {mass}, \"{kind}\", {{{sphere}}} {{{cylinder[0]},{cylinder[1]},{v(cylinder[2])}}} "
            f"{{{ellipsoid[0]},{ellipsoid[1]},{ellipsoid[2]},{ax}}} {{{cuboid[0]},{cuboid[1]},{cuboid[2]},{ax}}} "
            f"{mesh_txt} {{{line[0]},{v(line[1])}}}" + "}")


def body(id_, shapes, magnets, analysis=None):
    mags = "".join("{" + v(p) + v(m) + "}" for p, m in magnets)
    an = analysis or "{0.0,{0,0,0}{0,0,0,0,0,0}}"
    return "{" + f"{id_},[{''.join(shapes)}][{mags}][{{1,0.5,0,1}}]{an}" + "}"


FRAME = "{" + v((1, 0, 0)) + v((0, 1, 0)) + v((0, 0, 1)) + "}"


def write_case(tmp_path, version, extra_sim_v13="", friction=None, periodic=None):
    """A scene in PEM units cm, g, s, A: a mesh-cube pendulum with a magnet, a fixed and an orbiting magnet."""
    shutil.copy(PEM / DEFS[version], tmp_path / DEFS[version])
    bodies = [
        body(0, [shape("mesh", (0, 0, -5), 8.0, mesh=(CUBE_V, CUBE_F)),
                 shape("sphere", (0, 0, -8), 2.0, sphere=0.5)], [((0, 0, -8), (0, 0, 1))]),
        body(7, [shape("point", (0, 0, 0), 1.0)], [((0, 0, 0), (0, 0, -2))]),
    ]
    pend = "{" + f"0,{v((0, 0, 10))}{FRAME}{v((0, 0.5, 0))}{{\"false\",{v((0, 0, 1))}}}" + "}"
    fixed = "{" + (f"7,{v((3, 0, 0))}{FRAME}\"fixed\",{{{v((0, 0, 0))}}}"
                   f"{{{v((0, 0, 0))},0,0,{v((1, 0, 0))}{v((0, 1, 0))}}}") + "}"
    orbit = "{" + (f"7,{v((0, 0, 0))}{FRAME}\"ellipticRotation\",{{{v((0, 0, 0))}}}"
                   f"{{{v((0, 0, -1))},0.25,2.0,{v((4, 0, 0))}{v((0, 3, 0))}}}") + "}"
    new = version != "1.0"  # PseudoFrictionTorque arrived in 1.1
    sim = ["{1000,10,1e-3}"]
    if version == "1.3":
        box = periodic or ((-10, -10, -10), (10, 10, 10))
        sim.append("{" + v(box[0]) + v(box[1]) + "}")
    sim.append('"4thOrderRungeKutta",')
    if version == "1.3":
        sim.append('"true",' if periodic else '"false",')
    sim.append(f"[{pend}] [{fixed}{orbit}]")
    sim.append(v((0, 0, -980)))
    sim.append('{"ellipticRotationField",{' + v((0, 0, 0)) + "}{3.0," + v((1, 0, 0)) + v((0, 2, 0)) + "}}")
    sim.append("12.566,")
    if new:
        sim.append('{"true",0.5}' if friction else '{"false",0.0}')
    text = (f'\\include {{"{DEFS[version]}"}}\n\\begin{{data}}\n'
            "unitParameter:{1e-2,1e-3,1.0,1.0}\n"
            f"body[]:[{''.join(bodies)}]\n"
            f"simulation:{{\n {' '.join(sim)}\n}}\n\\end{{data}}\n")
    path = tmp_path / f"case{version}.udf"
    path.write_text(text)
    return path


@pytest.mark.parametrize("version", list(DEFS))
def test_all_versions_shapes_units_bodies(tmp_path, version):
    path = write_case(tmp_path, version, friction=True)
    doc = read_udf(path)
    assert doc.version == ("1" if version == "1.0" else version)
    scene = scene_from_udf(doc, "case").checked()
    pend, fixed, orbit = scene.bodies
    assert (pend.role, fixed.role, orbit.role) == ("pendulum", "fixed", "driven")
    np.testing.assert_allclose(pend.position, [0, 0, 0.1])
    np.testing.assert_allclose(pend.angular_velocity, [0, 0.5, 0])
    cube, ball = pend.shapes
    assert isinstance(cube, Mesh) and isinstance(ball, Sphere)
    # 2 cm cube of 8 g at (0,0,-5 cm): I = M (2a)²/6 about its centre, a = 1 cm.
    mp = cube.mass_properties()
    assert mp.mass == pytest.approx(8e-3, rel=1e-14)
    np.testing.assert_allclose(mp.center_of_mass, [0, 0, -0.05], atol=1e-16)
    np.testing.assert_allclose(mp.inertia, np.eye(3) * 8e-3 * 0.02**2 / 6, rtol=1e-12, atol=1e-12 * 5.4e-7)
    assert ball.radius == pytest.approx(0.005) and ball.mass == pytest.approx(2e-3)
    assert tuple(pend.color) == (1.0, 0.5, 0.0, 1.0)
    np.testing.assert_allclose(pend.dipoles[0].position, [0, 0, -0.08])
    np.testing.assert_allclose(pend.dipoles[0].moment, [0, 0, 1e-4])  # A·cm² → A·m²
    np.testing.assert_allclose(fixed.position, [0.03, 0, 0])
    np.testing.assert_allclose(fixed.dipoles[0].moment, [0, 0, -2e-4])
    m = orbit.motion
    np.testing.assert_allclose(m.center, [0, 0, -0.01])
    np.testing.assert_allclose(m.r1, [0.04, 0, 0])
    assert m.angular_velocity == 2.0 and m.phase == 0.25
    np.testing.assert_allclose(scene.gravity, [0, 0, -9.8])
    rf = scene.rotating_field
    assert rf.angular_velocity == 3.0
    np.testing.assert_allclose(rf.b2, [0, 2e-3, 0])  # g/(A s²) = 1e-3 T
    np.testing.assert_allclose(rf.b1, [1e-3, 0, 0])
    assert scene.mu0 == pytest.approx(12.566 * 1e-3 * 1e-2)
    assert scene.friction == (pytest.approx(0.5 * 1e-3 * 1e-4) if version != "1.0" else 0.0)
    assert scene.settings.method == "pem-rk4"
    assert scene.settings.dt == 1e-3 and scene.settings.t_end == pytest.approx(1.0)
    traj = simulate(scene, t_end=0.02)  # and it runs
    assert np.isfinite(traj.total_energy).all()


def test_periodic_box(tmp_path):
    path = write_case(tmp_path, "1.3", periodic=((-10, -10, -5), (10, 30, 5)))
    scene = scene_from_udf(read_udf(path))
    np.testing.assert_allclose(scene.periodic_box, [0.2, 0.4, 0.1])


def test_def_files_schemas():
    for version, name in DEFS.items():
        doc = read_udf(PEM / name)
        body = doc.schema.classes["Body"]
        magnet = next(f for f in body[1] if f.name == "magnet")
        first = magnet.type[1][0].name
        assert first == ("position" if version == "1.3" else "center"), version
        sim = doc.schema.fields["simulation"].type[1]
        names = [f.name for f in sim]
        assert ("PseudoFrictionTorque" in names) == (version != "1.0")
        assert ("periodicBoundaryCondition" in names) == (version == "1.3")


def test_records_match_the_file_text():
    """The records of an output file the original engine wrote, against the numbers printed in it."""
    recs = read_records(PEM / "euler_o.udf")
    assert len(recs) == 21  # 2000 steps reported every 100, and the start
    # Record #1, first pendulum, as printed in the file.
    text = (PEM / "euler_o.udf").read_text()
    block = text[text.index('\\begin{record}{"#1"}'):]
    start = block.index("{{") + 2
    first_vector = block[start: block.index("}", start)]
    want = [float(x) for x in first_vector.split(",")]
    u1 = recs[1]["simulationResult"]["pendulum"][0]["orientation"]["u1"]
    assert [u1["x"], u1["y"], u1["z"]] == want
    # version 1.2+ records also carry the lab positions and moments of the dipoles
    assert len(recs[1]["simulationResult"]["body"][0]["magnet"]) == 1


# ---------------------------------------------------------------- errors name file, line, column and field

def doc_text(data):
    return '\\include {"pem1_3_def.udf"}\n\\begin{data}\n' + data + "\n\\end{data}\n"


def parse(tmp_path, data):
    shutil.copy(PEM / "pem1_3_def.udf", tmp_path)
    p = tmp_path / "bad.udf"
    p.write_text(doc_text(data))
    return read_udf(p)


def test_error_bad_number(tmp_path):
    with pytest.raises(UdfError, match=r"bad\.udf:4:1: unitParameter\.mass: expected a number, got 'abc'"):
        parse(tmp_path, "unitParameter:{1.0,\nabc,1,1}")


def test_error_bad_select(tmp_path):
    good = (PEM / "pendulum.udf").read_text().replace('"4thOrderRungeKutta"', '"Verlet"')
    (tmp_path / "p.udf").write_text(good)
    shutil.copy(PEM / "pem1_3_def.udf", tmp_path)
    with pytest.raises(UdfError, match=r"p\.udf:\d+:\d+: simulation\.integrator: 'Verlet' is not one of"):
        read_udf(tmp_path / "p.udf")


def test_a_field_given_twice_is_refused_not_replaced(tmp_path):
    """Read as before, the last value won without a word (a second simulation entry: 300 steps, not 5000)."""
    with pytest.raises(UdfError, match=r"bad\.udf:4:1: unitParameter: given twice in one data block; keep one"):
        parse(tmp_path, "unitParameter:{1,1,1,1}\nunitParameter:{2,1,1,1}")
    p = tmp_path / "two.udf"
    p.write_text(doc_text("unitParameter:{1,1,1,1}") + "\\begin{data}\nunitParameter:{2,1,1,1}\n\\end{data}\n")
    with pytest.raises(UdfError, match=r"two\.udf:5:1: unitParameter: given again in a second data block"):
        read_udf(p)


def test_text_outside_the_sections_is_refused_with_its_line(tmp_path):
    """Text after ``\\end{data}`` (a value pasted below the block) was dropped without a word, as was any text
    between or before the sections: refused with file, line and column, as a stray value inside a block is;
    blanks and // comments outside the sections stay allowed."""
    shutil.copy(PEM / "pem1_3_def.udf", tmp_path)
    p = tmp_path / "tail.udf"
    # lines: 1 \include, 2 \begin{data}, 3 unitParameter, 4 \end{data}, 5 blank, 6 the stray value
    p.write_text(doc_text("unitParameter:{1,1,1,1}") + "\nsimulation:{}\n")
    with pytest.raises(UdfError, match=r"tail\.udf:6:1: text outside any section: 'simulation:\{\}' — values belong "
                                       r"inside \\begin\{data\}"):
        read_udf(p)
    p.write_text("pendulum\n" + doc_text("unitParameter:{1,1,1,1}"))
    with pytest.raises(UdfError, match=r"tail\.udf:1:1: not PEM UDF text \(no \\include"):
        read_udf(p)
    p.write_text('\\include {"pem1_3_def.udf"}\n\\begin{data}\nunitParameter:{1,1,1,1}\n\\end{data} x\n')
    with pytest.raises(UdfError, match=r"tail\.udf:4:12: text outside any section: 'x'"):
        read_udf(p)
    p.write_text("// by hand\n\n" + doc_text("unitParameter:{1,2,1,1}") + "  // the end\n\n")
    assert read_udf(p).data["unitParameter"]["mass"] == 2.0


SECRET = "hunter2-s3cr3t-p4ssw0rd"   # longer than the 20 characters a UDF token may be quoted


@pytest.mark.parametrize("name, text", [
    ("creds.txt", f"DB_USER=admin\nDB_PASSWORD={SECRET}\n"),                     # a file that is no UDF at all
    ("passwd.udf", f"root:x:0:0:{SECRET}:/root:/bin/bash\n"),                     # a link to /etc/passwd, as it were
    ("tail.udf", '\\include {"pem1_3_def.udf"}\n\\begin{data}\nunitParameter:{1,1,1,1}\n\\end{data}\n'
                 f"password:{SECRET}{SECRET}\n"),                                   # after a section: a short word
    ("data.udf", '\\include {"pem1_3_def.udf"}\n\\begin{data}\nunitParameter:{1,1,"'
                 f'{SECRET}{SECRET}",1}}\n\\end{{data}}\n'),                       # a long token in a value
])
def test_a_file_that_is_not_udf_text_is_named_never_quoted(tmp_path, name, text):
    """An ``\\include`` of a credentials file, or a link named .udf to /etc/passwd, printed the file's first line
    in the error (``text outside any section: 'DB_PASSWORD=hunter2'``): a file not recognised as UDF text is named
    with its line, none of its content shown; a UDF file's stray token is quoted at most 20 characters."""
    shutil.copy(PEM / "pem1_3_def.udf", tmp_path)
    (tmp_path / name).write_text(text)
    main = tmp_path / "main.udf"
    main.write_text(f'\\include {{"{name}"}}\n' if name == "creds.txt" else "")
    with pytest.raises(UdfError) as err:
        read_udf(main if name == "creds.txt" else tmp_path / name)
    message = str(err.value)
    assert SECRET not in message and "DB_USER" not in message and "root:x" not in message
    if name in ("creds.txt", "passwd.udf"):
        assert re.match(rf".*{re.escape(name)}:1:1: not PEM UDF text", message), message


def test_error_too_many_values_and_unknown_field(tmp_path):
    with pytest.raises(UdfError, match=r"unitParameter: more values than the schema's 4 fields"):
        parse(tmp_path, "unitParameter:{1,1,1,1,1}")
    with pytest.raises(UdfError, match=r"bad\.udf:3:1: simulaton: not a field"):
        parse(tmp_path, "simulaton:{}")


def test_error_missing_include_and_unclosed(tmp_path):
    p = tmp_path / "x.udf"
    p.write_text('\\include {"nowhere_def.udf"}\n')
    with pytest.raises(UdfError, match=r"x\.udf:1:1: included file 'nowhere_def.udf' not found"):
        read_udf(p)
    with pytest.raises(UdfError, match=r"never closed"):
        parse_udf("\\begin{data}\nfoo:1\n")
    with pytest.raises(UdfError, match="before any schema"):
        parse_udf("\\begin{data}\nfoo:1\n\\end{data}\n")


def test_error_unknown_body_reference(tmp_path):
    # the first pendulum's body reference (after the integrator, the periodic flag and its // pem: notes) → 3
    text, n = re.subn(r'("false",\s*\[\s*\{\s*(?://[^\n]*\s*)*)0,', r"\g<1>3,", (PEM / "pendulum.udf").read_text(),
                      count=1)
    assert n == 1
    (tmp_path / "p.udf").write_text(text)
    shutil.copy(PEM / "pem1_3_def.udf", tmp_path)
    with pytest.raises(Exception, match=r"simulation\.pendulum\[0\]\.body: refers to body id 3"):
        scene_from_udf(read_udf(tmp_path / "p.udf"))
