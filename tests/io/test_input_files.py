"""Input files are read only when they are what they claim: UDF includes stay in the UDF file's folder, and
scene, UDF, gas and mesh paths must be regular files of a sane size (issue "outputs that never lie", items 3-5).

Each case is a file a hostile or mistaken input named: a secret outside the folder (by ``..``, an absolute path,
a link), a FIFO (which would block a reader forever), a link to /dev/zero (which never ends), a folder, a huge
file. The refusal must name the item, say what to do, and show nothing of the file it refused to read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from pem_physics.cli import main as cli_main
from pem_physics.errors import ValidationError
from pem_physics.io.loading import load_scene
from pem_physics.io.udf import UdfError, read_udf

from budget import property_settings
from conftest import DATA, ROOT

SECRET = "SECRET_TOKEN_abc123"
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, /dev/zero and symbolic links")


@pytest.fixture
def folders(tmp_path):
    """scene/ with PEM's 1.3 definition file, and secret/ beside it holding a 'definition file' of secrets."""
    scene, secret = tmp_path / "scene", tmp_path / "secret"
    scene.mkdir()
    secret.mkdir()
    shutil.copy(DATA / "pem" / "pem1_3_def.udf", scene)
    (secret / "secret.txt").write_text(f"\\begin{{def}}\nclass {SECRET}: {{ x: double }}\n\\end{{def}}\n")
    return scene, secret


def udf(folder, include: str):
    path = folder / "x.udf"
    path.write_text(f'\\include {{"{include}"}}\n\\begin{{data}}\nnothing: 1\n\\end{{data}}\n')
    return path


@posix_only
@pytest.mark.parametrize("include, says", [
    ("../secret/secret.txt", "outside the folder of the UDF file"),
    ("sub/../../secret/secret.txt", "outside the folder of the UDF file"),
    ("{secret}/secret.txt", "not an absolute path"),
    ("/etc/passwd", "not an absolute path"),
    ("/proc/self/environ", "not an absolute path"),
    ("link_def.udf", "outside the folder of the UDF file"),   # a link inside that points outside
])
def test_an_include_outside_the_udf_files_folder_is_refused_unread(folders, include, says):
    scene, secret = folders
    (scene / "sub").mkdir()
    os.symlink(secret / "secret.txt", scene / "link_def.udf")
    path = udf(scene, include.format(secret=secret))
    with pytest.raises(UdfError, match=says) as err:
        read_udf(path)
    assert SECRET not in str(err.value) and "x.udf:1:1" in str(err.value)


def test_an_include_beside_the_file_still_works(folders):
    scene, _ = folders
    path = udf(scene, "pem1_3_def.udf")
    with pytest.raises(UdfError, match="nothing: not a field of this file's schema"):   # read, parsed, checked
        read_udf(path)


@posix_only
def test_special_files_are_refused_without_blocking(tmp_path):
    """A FIFO named as a scene or include would block a reader for ever: refused by its type, never opened (run in a
    child process with a timeout, so a hang fails the test instead of the suite)."""
    fifo = tmp_path / "scene.toml"
    os.mkfifo(fifo)
    os.mkfifo(tmp_path / "fifo_def.udf")
    udf(tmp_path, "fifo_def.udf")
    os.symlink("/dev/zero", tmp_path / "zero.toml")
    code = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from pem_physics.errors import ValidationError
from pem_physics.io.loading import load_scene
for p in ({str(fifo)!r}, {str(tmp_path / 'x.udf')!r}, {str(tmp_path / 'zero.toml')!r}, {str(tmp_path)!r}):
    try:
        load_scene(p)
    except ValidationError as e:
        print(e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    lines = out.stdout.splitlines()
    assert len(lines) == 4, out
    assert "scene.toml: not a regular file (a device, pipe or socket)" in lines[0]
    assert "fifo_def.udf" in lines[1] and "not a regular file" in lines[1]
    assert "zero.toml: not a regular file" in lines[2]
    assert "is a folder: name the scene file itself" in lines[3]


def test_a_huge_file_is_refused_by_its_size(tmp_path, capsys):
    big = tmp_path / "big.toml"
    with open(big, "wb") as fh:   # sparse: no disk used
        fh.truncate(65 * 2**20)
    with pytest.raises(ValidationError, match=r"big\.toml: 65 MiB is too big for a scene file \(at most 64 MiB\)"):
        load_scene(str(big))
    assert cli_main(["run", str(big), "-o", str(tmp_path / "out")]) == 2
    assert "too big for a scene file" in capsys.readouterr().err


def test_bytes_that_are_not_text_are_refused_by_name(tmp_path, capsys):
    for name in ("junk.toml", "junk.udf"):
        (tmp_path / name).write_bytes(bytes(range(256)) * 4)
        assert cli_main(["run", str(tmp_path / name), "-o", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert f"{name}: binary data (a NUL byte at 0), not text" in err and "Traceback" not in err
    (tmp_path / "latin.toml").write_bytes(b'name = "caf\xe9"\n')
    assert cli_main(["run", str(tmp_path / "latin.toml"), "-o", str(tmp_path / "out")]) == 2
    assert "latin.toml: not UTF-8 text" in capsys.readouterr().err


@pytest.mark.parametrize("encoding, says", [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16"), ("utf-16-be", "UTF-16"),
                                           ("utf-32", "UTF-32")])
def test_a_scene_file_saved_as_utf16_is_named_so(tmp_path, capsys, encoding, says):
    """A scene file saved by Windows' Notepad as "Unicode" or by PowerShell 5's ``>`` (UTF-16, a byte-order mark) was
    called "binary data (a NUL byte at 3), not text": it is text, in another encoding; the message says which and
    to save it as UTF-8."""
    text = (ROOT / "examples" / "scenes" / "three_magnet.toml").read_text(encoding="utf-8")
    for suffix in (".toml", ".py", ".udf"):
        path = tmp_path / f"scene{suffix}"
        path.write_bytes(text.encode(encoding))
        assert cli_main(["info", str(path)]) == 2
        err = capsys.readouterr().err
        assert re.fullmatch(rf"error: {re.escape(str(path))}: {says} text, not UTF-8: save the (Python |UDF )?"
                            r"(scene )?file as UTF-8 \(an editor's \"Save as\" ▸ encoding UTF-8\)\n", err), err
    assert cli_main(["gas", str(path.with_suffix(".toml")), "-o", str(tmp_path / "out")]) == 2
    assert f"{says} text, not UTF-8: save the gas scene file as UTF-8" in capsys.readouterr().err


@pytest.mark.parametrize("content, says", [
    (b"\x00\x01garbage" * 200, "the file holds no triangles"),
    (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n",   # a face past the vertices
     "not a mesh file trimesh can read (a face names a vertex the file does not have)"),
    (b"v 0 0 0\nv 1 0 0\nv 0 nan 0\nv 0 0 1\nf 1 2 3\nf 1 3 4\nf 1 4 2\nf 2 4 3\n", "vertex 3 is not a finite point"),
])
def test_a_bad_mesh_file_is_a_message_naming_it(tmp_path, capsys, content, says):
    path = tmp_path / "m.obj"
    path.write_bytes(content)
    assert cli_main(["inertia", str(path), "--density", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {says}" in err and "Traceback" not in err


CUBE = "".join(f"v {x} {y} {z}\n" for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)) + \
    "f 1 3 4 2\nf 5 6 8 7\nf 1 2 6 5\nf 3 7 8 4\nf 1 5 7 3\nf 2 4 8 6\n"


@pytest.mark.parametrize("make, says", [
    (lambda p: os.mkfifo(p), "not a regular file (a device, pipe or socket)"),
    (lambda p: os.symlink("/dev/zero", p), "not a regular file (a device, pipe or socket)"),
    (lambda p: p.write_text(CUBE.replace("v 1", "v 1e200").replace("v -1", "v -1e200")), "coordinates up to 1e+200"),
    (lambda p: p.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n"), "the file holds no triangles"),   # points, no faces
])
def test_a_mesh_that_is_no_usable_mesh_is_named_in_both_readers(tmp_path, capsys, make, says):
    """The inertia command and a scene file's mesh shape read through one reader: a FIFO or a link to /dev/zero
    exists (not "no such mesh file") and is never opened; a cube of half-side 1e200 is refused for its size (not
    "the file has 1 vertex"); a file with points and no faces is no mesh (not numpy's broadcast error)."""
    path = tmp_path / "m.obj"
    make(path)
    assert cli_main(["inertia", str(path), "--density", "1"]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and "no such mesh file" not in err, err
    scene = tmp_path / "s.toml"
    scene.write_text(f'format = "pem-scene"\nversion = 1\n[[bodies]]\nname = "b"\npivot = [0, 0, 0]\n'
                     f'[[bodies.shapes]]\n'
                     f'kind = "mesh"\nfile = "{path.name}"\ndensity = 1\n')
    with pytest.raises(ValidationError) as e:
        load_scene(str(scene))
    assert e.value.path == "bodies[0].shapes[0].file" and says in e.value.message, (e.value.path, e.value.message)


def test_bytes_that_are_no_stl_are_refused_before_trimesh(tmp_path, capsys):
    """Random bytes named .stl (trimesh decoded 300 MiB of them as text, then failed for want of charset_normalizer)
    are refused by the binary STL's own size rule (84 + 50 bytes a triangle); a real binary STL still reads: the
    cube of side 2 has volume 8 and, at density 1, I = 8·(2²+2²)/12 = 16/3 about each axis."""
    path = tmp_path / "r.stl"
    path.write_bytes(os.urandom(4096))
    assert cli_main(["inertia", str(path), "--density", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: not an STL file: a binary STL declaring" in err and "this file is 4096 bytes" in err
    assert "Traceback" not in err
    verts = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float32)
    tris = [(0, 3, 2), (0, 1, 3), (4, 7, 5), (4, 6, 7), (0, 5, 1), (0, 4, 5), (2, 7, 6), (2, 3, 7), (0, 6, 4),
            (0, 2, 6), (1, 7, 3), (1, 5, 7)]   # outward
    rows = np.zeros(len(tris), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")])
    rows["v"] = verts[np.array(tris)]
    path.write_bytes(b"binary cube".ljust(80, b" ") + len(tris).to_bytes(4, "little") + rows.tobytes())
    assert cli_main(["inertia", str(path), "--density", "1"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["mass"] == pytest.approx(8.0, rel=1e-12) and "flipped" not in captured.err
    np.testing.assert_allclose(np.diag(out["inertia_about_center_of_mass"]), 16 / 3, rtol=1e-12)


def test_a_missing_optional_package_of_trimesh_is_named(tmp_path, capsys, monkeypatch):
    """A format whose reader needs a package trimesh lacks: the message names the package and the way round it."""
    import trimesh

    def missing(*a, **k):
        raise ModuleNotFoundError("No module named 'charset_normalizer'", name="charset_normalizer")

    monkeypatch.setattr(trimesh, "load", missing)
    path = tmp_path / "a.stl"
    path.write_text("solid cube\nendsolid cube\n")
    assert cli_main(["inertia", str(path), "--density", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: reading this file needs the optional package 'charset_normalizer'" in err
    assert "Traceback" not in err


def test_inertia_scale_zero_is_named(tmp_path, capsys):
    assert cli_main(["inertia", str(ROOT / "examples" / "scenes" / "meshes" / "brick.obj"), "--density", "1",
                     "--scale", "0"]) == 2
    assert "--scale: expected a factor > 0" in capsys.readouterr().err


@pytest.mark.parametrize("text, says", [
    ("", "not a PEM input file: no \\include of a definition file, no data"),
    ('\\include {"pem1_3_def.udf"}\n', "a PEM input file without its data block"),
])
def test_an_empty_or_cut_short_udf_is_called_what_it_is(folders, text, says):
    scene, _ = folders
    (scene / "x.udf").write_text(text)
    with pytest.raises(ValidationError, match=re.escape(says)):
        load_scene(str(scene / "x.udf"))


def test_a_zero_unit_in_a_udf_is_named():
    text = (DATA / "pem" / "pendulum.udf").read_text()
    bad = re.sub(r"(unitParameter:\s*\{)\s*[-0-9.eE+]+", r"\g<1>0", text, count=1)
    assert bad != text
    from pem_physics.io.udf import parse_udf
    from pem_physics.io.udf_scene import scene_from_udf

    with pytest.raises(ValidationError, match=r"unitParameter\.length: expected a positive number, got 0"):
        scene_from_udf(parse_udf(bad, "x.udf", DATA / "pem"))


def test_random_bytes_as_a_gas_state_are_named(tmp_path, capsys):
    (tmp_path / "s.npz").write_bytes(os.urandom(3000))
    assert cli_main(["gas", "-o", str(tmp_path / "o"), "--state", str(tmp_path / "s.npz"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "gas.state" in err and "s.npz: not a gas state (.npz) (not a zip archive" in err and "pickle" not in err


# ---------------------------------------------------------------------------- fuzz: any text, a message or a scene

VALID_UDF = (DATA / "pem" / "pendulum.udf").read_text(encoding="utf-8")


@pytest.mark.hypothesis
@property_settings(150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mangled_udf_file_gives_a_scene_or_a_message_never_a_traceback(tmp_path_factory, data):
    """A valid PEM input with a slice cut out, a span duplicated or bytes replaced: reading it either gives a scene
    or raises ValidationError (the CLI's message) — never another exception, never a hang."""
    text = VALID_UDF
    n = len(text)
    a = data.draw(st.integers(0, n), label="a")
    b = data.draw(st.integers(a, min(n, a + 200)), label="b")
    op = data.draw(st.sampled_from(["cut", "dup", "junk"]), label="op")
    if op == "cut":
        text = text[:a] + text[b:]
    elif op == "dup":
        text = text[:b] + text[a:b] + text[b:]
    else:
        text = text[:a] + data.draw(st.text(st.sampled_from('{}[]\\":,0123456789.e-+ abcx\n'), max_size=20)) + text[b:]
    folder = tmp_path_factory.mktemp("udf")
    shutil.copy(DATA / "pem" / "pem1_3_def.udf", folder)
    (folder / "x.udf").write_text(text, encoding="utf-8")
    try:
        load_scene(str(folder / "x.udf")).checked()
    except ValidationError:
        pass


@pytest.mark.hypothesis
@property_settings(150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=400) | st.text(max_size=400).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_any_bytes_as_a_scene_file_give_a_message(tmp_path_factory, raw):
    folder = tmp_path_factory.mktemp("toml")
    for suffix in (".toml", ".udf"):
        (folder / f"x{suffix}").write_bytes(raw)
        try:
            load_scene(str(folder / f"x{suffix}")).checked()
        except ValidationError:
            pass


def test_overlapping_closed_parts_in_one_mesh_file_are_refused_by_the_inertia_command(tmp_path, capsys):
    """Two cubes of side 2 m (box_mesh takes half-widths) overlapping by 1.5 m (a 10 m³ solid): the face integrals
    give 16 m³, the common 6 m³ counted twice; the command names the overlap instead of printing 16. Apart, the
    same two cubes give 16 m³, correctly."""
    from pem_physics import examples

    V, F = examples.box_mesh((1.0, 1.0, 1.0))

    def obj(path, shift):
        VV = np.vstack([V, V + np.array(shift)])
        FF = np.vstack([F, F + len(V)])
        path.write_text("".join(f"v {x!r} {y!r} {z!r}\n" for x, y, z in VV.tolist())
                        + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in FF.tolist()))
        return path

    assert cli_main(["inertia", str(obj(tmp_path / "overlap.obj", (0.5, 0, 0))), "--density", "1"]) == 2
    assert "parts 1 and 2 of its 2 closed parts overlap" in capsys.readouterr().err
    assert cli_main(["inertia", str(obj(tmp_path / "apart.obj", (3.0, 0, 0))), "--density", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["volume"] == pytest.approx(16.0, rel=1e-12)


def test_a_surface_through_itself_is_refused_by_the_inertia_command(tmp_path, capsys):
    """Two tetrahedra sharing a vertex, one through the other (tests/model/test_mesh_parts.py): one connected
    surface, so no two parts to compare, but its face integrals count the shared volume twice."""
    tet = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    V = np.array([[0.0, 0, 0], [2, 0, 0], [0, 2, 0], [0, 0, 2], [1.5, 0.5, 0.5], [0.5, 1.5, 0.5], [0.5, 0.5, 1.5]])
    F = np.vstack([tet, np.where(tet == 0, 0, tet + 3)])
    path = tmp_path / "glued.obj"
    path.write_text("".join(f"v {x!r} {y!r} {z!r}\n" for x, y, z in V.tolist())
                    + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in F.tolist()))
    assert cli_main(["inertia", str(path), "--density", "1"]) == 2
    assert "the surface passes through itself" in capsys.readouterr().err
    assert cli_main(["inertia", str(path), "--density", "1", "--check-surface", "never"]) == 0
    assert json.loads(capsys.readouterr().out)["self_intersection_checked"] is False


def test_an_impossible_analysis_block_in_a_udf_is_named():
    """PEM's precomputed inertia with a negative moment was reported as 'the inertia tensor is zero'."""
    from pem_physics.io.udf import parse_udf
    from pem_physics.io.udf_scene import scene_from_udf

    doc = parse_udf((DATA / "pem" / "ellipsoid.udf").read_text(), "ellipsoid.udf", DATA / "pem")
    body = doc.data["body"][0]
    assert body["analysis"]["inertiaMoment"]["xx"] == 3.4       # the file's (3.4, 3.4, 0.4): a body's
    body["analysis"]["inertiaMoment"]["xx"] = -3.4
    with pytest.raises(ValidationError, match=r"body\[0\]\.analysis\.inertiaMoment: principal moments .* a negative "
                                              "moment of inertia"):
        scene_from_udf(doc)


def test_an_npz_that_inflates_a_thousand_fold_is_refused(tmp_path, capsys):
    np.savez_compressed(tmp_path / "bomb.npz", positions=np.zeros(50_000_000, np.uint8))   # 50 MB of zeros
    assert (tmp_path / "bomb.npz").stat().st_size < 1_000_000
    assert cli_main(["gas", "-o", str(tmp_path / "o"), "--state", str(tmp_path / "bomb.npz"), "-q"]) == 2
    assert "bomb.npz: inflates" in capsys.readouterr().err


def test_a_folder_or_a_file_where_the_other_is_expected_is_named_as_such(tmp_path, capsys):
    """`plot` of a file, `--chunk-dir` that is a file, a mesh that is a folder: each says which it is, not "no such
    folder", "File exists" or "unknown mesh file type ''"."""
    (tmp_path / "afile.txt").write_text("mine")
    (tmp_path / "meshes.obj").mkdir()
    assert cli_main(["plot", str(tmp_path / "afile.txt")]) == 2
    assert "afile.txt: is a file, not a folder (expected the folder of a" in capsys.readouterr().err
    assert cli_main(["basin", "example:three-magnet", "--grid", "3", "--t-end", "0.01", "-q", "-o",
                     str(tmp_path / "out"), "--chunk-dir", str(tmp_path / "afile.txt")]) == 2
    assert "--chunk-dir " in (err := capsys.readouterr().err) and "is a file, not a folder" in err
    scene = tmp_path / "s.toml"
    scene.write_text('format = "pem-scene"\nversion = 1\n[[bodies]]\nname = "b"\nrole = "fixed"\n'
                     '[[bodies.shapes]]\nkind = "mesh"\nfile = "meshes.obj"\ndensity = 1.0\n')
    assert cli_main(["info", str(scene)]) == 2
    assert "is a folder, not a mesh file" in capsys.readouterr().err
    assert (tmp_path / "afile.txt").read_text() == "mine"
