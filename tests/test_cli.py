"""The command line as a user runs it (subprocess): outputs, exit codes, messages, interruption."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import trimesh

from conftest import DATA, ROOT


def pem(*args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "pem_physics", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=kw.get("cwd", ROOT), timeout=kw.get("timeout", 300))


def test_help_for_every_command():
    for cmd in ("run", "inertia", "convert"):
        r = pem(cmd, "--help")
        assert r.returncode == 0 and "usage:" in r.stdout, (cmd, r.stderr)


def test_run_writes_npz_csv_summary(tmp_path):
    r = pem("run", "example:pendulum", "-o", tmp_path, "--t-end", "0.2", "--dt", "0.001", "-q")
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["complete"] is True and summary["steps"] == 200
    assert summary["method"] == "splitting4"
    with open(tmp_path / "trajectory.csv") as fh:
        rows = list(csv.reader(fh))
    npz = np.load(tmp_path / "trajectory.npz")
    assert len(rows) == 1 + len(npz["t"]) == 1 + summary["records"]
    header = rows[0]
    assert header[0] == "t" and any(h.endswith(".q_w") for h in header) and header[-1] == "energy_total"
    # CSV and NPZ hold the same numbers (repr round-trips floats exactly).
    col = header.index(next(h for h in header if h.endswith(".omega_x")))
    np.testing.assert_array_equal([float(r[col]) for r in rows[1:]], npz["omega"][:, 0, 0])


def test_run_and_info_end_quickly_with_everything_said_and_written(tmp_path):
    """`run` and `info` end with os._exit (cli.QUICK_EXIT: no interpreter teardown): what they print on a pipe is
    all there, the exit code is theirs, the output set is complete, no staging or temporary file is left, and the
    files have the mode a plain open() gives (0666 minus the umask)."""
    r = pem("run", "example:pendulum", "-o", tmp_path / "out", "--t-end", "0.2", "--dt", "0.001")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads((tmp_path / "out" / "summary.json").read_text())
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "pem-manifest.json", "summary.json", "trajectory.csv", "trajectory.npz"]
    umask = os.umask(0)
    os.umask(umask)
    for p in (tmp_path / "out").iterdir():
        assert p.stat().st_mode & 0o777 == 0o666 & ~umask, p
    r = pem("info", "example:pendulum", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)[0]["mass"] > 0
    r = pem("run", tmp_path / "missing.toml", "-o", tmp_path / "out2")
    assert r.returncode == 2 and "no such file" in r.stderr


def test_a_closed_stdout_is_said_and_the_published_files_stay_valid(tmp_path):
    """`run` printing its summary into a pipe whose reader has gone: exit 120 (as Python's own failed final flush),
    a message that says what happened — not that the outputs were lost — and the output set published and valid."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "pem_physics", "run", "example:pendulum", "-o", str(tmp_path / "out"),
                          "--t-end", "0.1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    p.stdout.close()   # the reader ends before anything is printed
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 120, err
    assert "standard output was closed" in err and "not published" not in err and "Traceback" not in err
    from pem_physics.io.outset import verified

    assert verified(tmp_path / "out", "trajectory.npz", "run").is_file()


def test_inertia_json_matches_closed_form(tmp_path):
    box = trimesh.creation.box(extents=(0.2, 0.4, 0.6))
    box.export(tmp_path / "box.obj")  # OBJ text: these coordinates are exact (STL/PLY store float32)
    r = pem("inertia", tmp_path / "box.obj", "--density", "1000")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    M = 1000 * 0.2 * 0.4 * 0.6
    assert out["mass"] == pytest.approx(M, rel=1e-12)
    assert out["volume"] == pytest.approx(0.048, rel=1e-12)
    np.testing.assert_allclose(np.diag(out["inertia_about_center_of_mass"]),
                               M / 12 * np.array([0.4**2 + 0.6**2, 0.2**2 + 0.6**2, 0.2**2 + 0.4**2]), rtol=1e-12)
    np.testing.assert_allclose(out["principal_moments"], sorted(np.diag(out["inertia_about_center_of_mass"])))


@pytest.mark.parametrize("args,says", [
    (("--density", "1e308"), "--density: expected a number > 0 and at most 1e+100"),
    (("--mass", "-2"), "--mass: expected a number > 0"),
    (("--density", "1000", "--scale", "1e200"), "--scale: the mesh would be 6e+199 m across"),
    (("--density", "1000", "--scale", "1e25"), "--scale: the mesh would be 6e+24 m across"),
])
def test_inertia_beyond_floating_points_range_names_the_option(tmp_path, args, says):
    """A density or a scale whose mass properties overflow: one line naming the option, no numpy warnings, no
    LinAlgError traceback."""
    trimesh.creation.box(extents=(0.2, 0.4, 0.6)).export(tmp_path / "box.obj")
    r = pem("inertia", tmp_path / "box.obj", *args)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "RuntimeWarning" not in r.stderr


@pytest.mark.parametrize("args,says", [
    (("basin", "example:three-magnet", "--grid", "3", "--dt", "-1"),   # (the map records only start and end)
     "error: --dt -1: expected a positive number"),
    (("run", "example:three-magnet", "--dt", "-1"), "error: --dt -1: expected a positive number"),
    (("run", "example:three-magnet", "--t-end", "-2"), "error: --t-end -2: expected a number ≥ 0"),
    # the record interval's own errors name --record-interval, not --dt (typed beside it)
    (("run", "example:three-magnet", "--dt", "0.001", "--record-interval", "0"),
     "error: --record-interval 0: expected a positive number, got 0.0"),
    (("run", "example:three-magnet", "--dt", "0.001", "--record-interval", "0.0015"),
     "error: --record-interval 0.0015: must be a whole multiple of dt = 0.001 s, got 0.0015 s"),
    # too many steps from a typed --dt: the option typed, not the scene's settings.t_end (20 s / 1e-13 s = 2e14)
    (("run", "example:three-magnet", "--dt", "1e-13"), "error: --dt 1e-13: t_end / dt = 2e+14 steps"),
    (("sweep", "example:three-magnet", "--param", "friction=0,1", "--dt", "1e-13"),
     "error: --dt 1e-13: t_end / dt = 2e+14 steps"),
    (("run", "example:three-magnet", "--t-end", "1", "--dt", "1e-13"),
     "error: --t-end 1 --dt 1e-13: t_end / dt = 1e+13 steps"),
])
def test_a_value_set_by_an_option_is_blamed_on_the_option(tmp_path, args, says):
    """A scene value the command line set (--dt, --t-end) that the scene refuses names the option typed, not the
    scene file's settings.dt or settings.record_interval; the scene's own values keep their names."""
    r = pem(*args, "-o", tmp_path / "out")
    assert r.returncode == 2 and says in r.stderr, r.stderr


def test_a_core_warning_is_one_line_without_source(tmp_path):
    """A warning the core raises (an inside-out mesh, flipped) reaches the user as one "warning:" line, not as
    Python's file:line: Category plus a line of the package's source."""
    (tmp_path / "tet.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 4 2\nf 1 3 4\nf 2 4 3\n")
    r = pem("inertia", tmp_path / "tet.obj", "--density", "1")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == ["warning: mesh: normals point inwards (signed volume -0.166667); flipped"]


def test_inertia_open_mesh_is_a_clear_error(tmp_path):
    box = trimesh.creation.box()
    open_box = trimesh.Trimesh(box.vertices, box.faces[:-2], process=False)
    open_box.export(tmp_path / "open.ply")
    r = pem("inertia", tmp_path / "open.ply", "--mass", "1")
    assert r.returncode == 2
    assert "not closed" in r.stderr and "Traceback" not in r.stderr


def test_bad_scene_exit_code_and_message(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from pem_physics import Scene, Body, Dipole\n"
                   "scene = Scene(bodies=[Body(name='b', role='fixed', dipoles=[Dipole((0, 0), (0, 0, 1))])])\n")
    r = pem("run", bad, "-o", tmp_path / "out")
    assert r.returncode == 2
    assert "bodies[0].dipoles[0].position" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out" / "trajectory.npz").exists()
    r = pem("run", tmp_path / "missing.toml", "-o", tmp_path / "out")
    assert r.returncode == 2 and "no such file" in r.stderr


def test_a_refused_run_leaves_no_folder_it_made(tmp_path):
    """`run … --dt -1 -o deep/a/b/c` made the four folders and left them empty; a folder that was there stays."""
    scene = tmp_path / "s.toml"
    scene.write_text((ROOT / "examples" / "scenes" / "three_magnet.toml").read_text(encoding="utf-8"))
    r = pem("run", scene, "--dt", "-1", "-o", tmp_path / "deep" / "a" / "b" / "c")
    assert r.returncode == 2 and "dt" in r.stderr
    assert not (tmp_path / "deep").exists()
    (tmp_path / "mine").mkdir()
    r = pem("run", scene, "--dt", "-1", "-o", tmp_path / "mine" / "out")
    assert r.returncode == 2 and (tmp_path / "mine").is_dir() and not (tmp_path / "mine" / "out").exists()


def test_a_method_a_table_scene_would_ignore_is_refused(tmp_path):
    """`run --method dop853` on a body on a table ran the table's own step and said surface in its summary."""
    r = pem("run", ROOT / "examples" / "scenes" / "billiard_ball.toml", "--method", "dop853", "-o", tmp_path / "o")
    assert r.returncode == 2 and "--method: dop853 does not apply: a body on a table" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("body,message", [
    ("scene = None\n", "'scene' must be a pem_physics Scene, got NoneType"),
    ("x = 1\nraise SystemExit(0)\n", "line 2: the scene file called exit(0) before defining its scene"),
    ("x = 1\nraise RuntimeError('my own check failed')\n", "line 2: RuntimeError: my own check failed"),
    ("scene = (\n", "line 1: SyntaxError: "),
    ("import no_such_module_here\n", "line 1: ModuleNotFoundError: No module named 'no_such_module_here'"),
])
def test_a_python_scene_files_own_error_is_one_line_naming_file_and_line(tmp_path, body, message):
    """A Python scene file that defines no Scene, raises, or does not parse: exit 2 and one line with the file, the
    line and the error — no traceback through the package's loader."""
    bad = tmp_path / "mine.py"
    bad.write_text(body)
    r = pem("info", bad)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert str(bad) in r.stderr and message in r.stderr, r.stderr


def test_a_python_scene_file_imports_a_module_beside_it(tmp_path):
    """A Python scene file imports a helper module from its own folder, as ``python scene.py`` would (it said "No
    module named 'helper'"); afterwards sys.path is as it was and the helper is forgotten, so a scene file in
    another folder gets its own helper of the same name."""
    from pem_physics.io.loading import load_scene

    for folder, length in (("a", 0.25), ("b", 0.5)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "helper.py").write_text(f"from pem_physics import examples\n\n"
                                                     f"def make():\n    return examples.pendulum(length={length})\n")
        (tmp_path / folder / "scene.py").write_text("import helper\n\nscene = helper.make()\n")
    # the bob (a point mass) hangs one length below the pivot: its centre of mass there, in body coordinates
    r = pem("info", tmp_path / "a" / "scene.py", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["center_of_mass"] == pytest.approx([0, 0, -0.25])
    path = list(sys.path)
    for folder, length in (("a", 0.25), ("b", 0.5)):
        body = load_scene(str(tmp_path / folder / "scene.py")).bodies[0]
        assert list(body.mass_properties.center_of_mass) == pytest.approx([0, 0, -length])
        assert sys.path == path and "helper" not in sys.modules


def test_a_python_scene_file_leaves_the_modules_it_did_not_bring_imported(tmp_path):
    """A scene file in a project folder that also holds the project's venv (``.venv/…/site-packages``) imported
    scipy for the first time: every module the scene's run imported under that folder was dropped from sys.modules,
    and the next import of scipy died ("cannot load module more than once per process", a traceback from ``run
    --method dop853``). Only the modules that lie in the scene's folder itself are forgotten; a package installed
    deeper, or imported before the scene ran, stays the very module the scene used."""
    from pem_physics.io.loading import load_scene

    site = tmp_path / ".venv" / "lib" / "site-packages"
    (site / "deeppkg").mkdir(parents=True)
    (site / "deeppkg" / "__init__.py").write_text("")
    (site / "deeppkg" / "part.py").write_text("")
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "__init__.py").write_text("")
    (tmp_path / "earlier" / "late.py").write_text("")
    (tmp_path / "helper.py").write_text("")
    (tmp_path / "scene.py").write_text("import deeppkg.part, earlier.late, helper\nfrom pem_physics import examples\n"
                                       "deeppkg.seen = earlier.seen = helper.seen = True\n"
                                       "scene = examples.pendulum()\n")
    sys.path[:0] = [str(site), str(tmp_path)]
    try:
        import earlier  # imported before the scene: its late submodule is not the scene's own

        load_scene(str(tmp_path / "scene.py"))
        assert sys.modules["deeppkg"].seen and sys.modules["earlier"].seen and "deeppkg.part" in sys.modules
        assert "earlier.late" in sys.modules and earlier.late is sys.modules["earlier.late"]
        assert "helper" not in sys.modules   # the module beside the scene is forgotten, as before
    finally:
        del sys.path[:2]
        for name in ("deeppkg", "deeppkg.part", "earlier", "earlier.late", "helper"):
            sys.modules.pop(name, None)


@pytest.mark.parametrize("helper,message", [
    ("x = 1\ny = (\n", "line 1 (helper.py, line 2): SyntaxError: "),
    ("x = 1\ny = 1 / 0\n", "line 1 (helper.py, line 2): ZeroDivisionError: division by zero"),
])
def test_an_error_in_a_module_beside_a_python_scene_names_that_module(tmp_path, helper, message):
    """An error in a helper module the scene file imports was said as the scene file's own at the helper's line
    ("scene.py: line 2: SyntaxError" where the scene has one line): the scene's line that imports it, and the
    helper's file and line."""
    (tmp_path / "helper.py").write_text(helper)
    (tmp_path / "scene.py").write_text("import helper\n")
    r = pem("info", tmp_path / "scene.py")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"error: {tmp_path / 'scene.py'}: {message}"), r.stderr


def test_convert_udf_to_toml_runs_the_same(tmp_path):
    out = tmp_path / "pendulum.toml"
    r = pem("convert", DATA / "pem" / "pendulum.udf", out)
    assert r.returncode == 0, r.stderr
    from pem_physics import load_scene, simulate

    a = simulate(load_scene(DATA / "pem" / "pendulum.udf"), t_end=0.05)
    b = simulate(load_scene(out), t_end=0.05)
    np.testing.assert_allclose(b.orientation, a.orientation, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.omega, a.omega, rtol=0, atol=1e-12)


def test_convert_to_udf_runs_the_same(tmp_path):
    """convert … OUT.udf writes a PEM input file and its def file; loading it back runs the same."""
    out = tmp_path / "compass.udf"
    r = pem("convert", "example:compass", out, "--method", "pem-rk4")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "pem1_3_def.udf").is_file() and "pem1_3_def.udf" in r.stdout
    from pem_physics import examples, load_scene, simulate

    a = simulate(examples.compass(), method="pem-rk4", t_end=0.05)
    b = simulate(load_scene(out), t_end=0.05)
    np.testing.assert_allclose(b.orientation, a.orientation, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.omega, a.omega, rtol=0, atol=1e-12 * np.abs(a.omega).max())
    r = pem("convert", "example:compass", tmp_path / "x.udf")  # the example's method is not PEM's
    assert r.returncode == 2 and "settings.method" in r.stderr and "Traceback" not in r.stderr
    r = pem("convert", "example:compass", tmp_path / "x.txt")
    assert r.returncode == 2 and ".toml scene file or a .udf" in r.stderr


def test_convert_never_overwrites_a_file_unasked_nor_its_input(tmp_path):
    """convert onto an existing file is refused (the user's file stays byte for byte) unless --force; onto its own
    input never (it would lose the file's comments and spellings); onto a folder with a message."""
    src = tmp_path / "mine.toml"
    assert pem("convert", "example:compass", src).returncode == 0
    text = src.read_text(encoding="utf-8") + "# my own notes\n"
    src.write_text(text, encoding="utf-8")
    other = tmp_path / "other.toml"
    other.write_text("not a scene, my file\n", encoding="utf-8")
    for args, says in (((src, src), "is the input scene itself"), ((src, src, "--force"), "is the input scene itself"),
                       ((src, other), "exists: choose another name, or pass --force"),
                       ((src, tmp_path), "is a folder")):
        r = pem("convert", *args)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    assert src.read_text(encoding="utf-8") == text and other.read_text(encoding="utf-8") == "not a scene, my file\n"
    r = pem("convert", src, other, "--force")
    assert r.returncode == 0, r.stderr
    assert "[[bodies]]" in other.read_text(encoding="utf-8")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and terminals")
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupt_flushes_partial_results(tmp_path, sig):
    """Ctrl-C and SIGTERM (kill, a job scheduler) both stop the run cleanly: its partial result is published as a
    set marked incomplete in every file (npz meta, summary, the CSV's first line, the manifest)."""
    import pty

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # stderr on a terminal: the run draws its progress bar there once it is under way (its Ctrl-C handler
    # installed), and Ctrl-C is pressed then, however long the start took on a loaded machine (no clock)
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "pem_physics", "run", "example:three-magnet", "-o", str(tmp_path),
                          "--t-end", "100000", "--record-interval", "1"],  # 1e8 steps: minutes, compiled
                         env=env, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    err = b""
    try:
        while b"%" not in err:
            chunk = os.read(master, 4096)
            if not chunk:
                break
            err += chunk
        p.send_signal(getattr(signal, sig))
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the run ended and closed the terminal
                break
            if not chunk:
                break
            err += chunk
    except OSError:
        pass  # the run ended before drawing its progress: the assertions below say how
    finally:
        os.close(master)
    p.communicate(timeout=120)
    err = err.decode(errors="replace")
    assert p.returncode == 130, err
    assert "interrupted" in err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["complete"] is False and 0 < summary["t_end"] < 100000
    npz = np.load(tmp_path / "trajectory.npz")
    assert len(npz["t"]) == summary["records"] and json.loads(str(npz["meta"]))["complete"] is False
    first = (tmp_path / "trajectory.csv").read_text().split("\n", 1)[0]
    # the time as a number a reader parses, the last record's (numpy 2's repr wrote "t = np.float64(1119.07) s")
    assert first == f"# partial run: interrupted at t = {float(npz['t'][-1])!r} s", first
    manifest = json.loads((tmp_path / "pem-manifest.json").read_text())
    assert manifest["complete"] is False and set(manifest["files"]) == {"trajectory.npz", "trajectory.csv",
                                                                        "summary.json"}


#: ``python -m pem_physics`` whose engine's set-up stands for numba's first build of the kernels: minutes of work
#: that polls no stop (85 s for the three-magnet scene's on a cold cache), announced on stdout when it begins.
STAND_IN_COMPILE = """
import sys, time
from pem_physics import cli
from pem_physics.engine import simulate

def compiling(*args, **kw):
    print("compiling", flush=True)
    time.sleep(60)
    raise AssertionError("the signal did not end the command")

simulate._engine = compiling
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_while_the_engine_compiles_ends_the_command_at_once(tmp_path, sig):
    """SIGTERM (a batch system's stop, kill) or Ctrl-C while numba compiled the kernels only asked the run to stop
    at its first check, after the compile: the run went on for minutes and needed SIGKILL. It now ends the command
    at once: code 130, one line, nothing written."""
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-c", STAND_IN_COMPILE, "run", "example:three-magnet", "-o", str(out),
                          "--t-end", "1e8", "--record-interval", "1e3", "--force"],   # days: it must not start
                         env=dict(os.environ, PYTHONPATH=str(ROOT)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "compiling\n", p.communicate()[1]
        p.send_signal(getattr(signal, sig))
        _, err = p.communicate(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 130, err
    assert err.splitlines() == ["interrupted before the run started (it was being set up or its engine compiled): "
                                "nothing was written"]
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("command", ["run", "plot"])
def test_ctrl_c_while_the_outputs_are_written_ends_in_one_line(tmp_path, monkeypatch, capsys, command):
    """After the run, while its files are published, Ctrl-C (or SIGTERM, the same here) ends with one line and
    code 130, no traceback; the folder keeps its previous set."""
    from pem_physics.cli import main
    from pem_physics.io import outset
    from pem_physics.io.outset import read_manifest

    out = tmp_path / "out"
    assert main(["run", "example:pendulum", "--t-end", "0.01", "-o", str(out), "-q"]) == 0
    before = read_manifest(out)

    def interrupted(self, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(outset.OutputSet, "publish", interrupted)
    argv = (["run", "example:pendulum", "--t-end", "0.01", "-o", str(out), "-q"] if command == "run"
            else ["plot", str(out)])
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert err.startswith("interrupted: this command's outputs were not published") and "Traceback" not in err
    monkeypatch.undo()
    assert read_manifest(out)["files"] == before["files"]
    assert not [p for p in out.iterdir() if p.name.startswith(".pem-staging")]


def test_numpys_arithmetic_warnings_reach_the_user_as_one_line(tmp_path, monkeypatch, capsys):
    """Raw "overflow encountered in exp" / "invalid value encountered in multiply" lines leaked, several a run
    (friction = 1e90, a dipole of 1e100, a marble at 1e100 m/s: each now refused by preflight); whatever still
    overflows is said once, in one line that says what it means."""
    from pem_physics import cli

    def overflowing(args):
        with np.errstate(all="warn"):
            np.exp(np.array([1000.0]))
            np.array([np.inf]) * 0.0
            np.exp(np.array([2000.0]))
        return 0

    monkeypatch.setattr(cli, "cmd_run", overflowing)
    assert cli.main(["run", "example:pendulum", "-o", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "warning: the arithmetic left the range of doubles (numpy: overflow encountered in exp): an input far outside "
        "a physical range, or a step far too large; the results past it are not to be trusted"]
    scene = (ROOT / "examples" / "scenes" / "heavy_top.toml").read_text(encoding="utf-8")
    (tmp_path / "f.toml").write_text(scene.replace("gravity = [", "friction = 1e90\ngravity = ["), encoding="utf-8")
    monkeypatch.undo()
    assert cli.main(["run", str(tmp_path / "f.toml"), "-o", str(tmp_path / "f"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: friction: 1e+90 N·m·s stops 'top'") and "encountered" not in err, err


def test_a_t_end_that_is_not_whole_steps_is_noted(tmp_path, capsys):
    """`run --t-end 0.05 --dt 0.03` ran to 0.06 s without a word: the scene format rounds t_end to whole steps
    (docs/scene-format.md), which stderr now says in one note; a t_end of whole steps says nothing."""
    from pem_physics.cli import main

    args = ["run", "example:pendulum", "-q", "--dt", "0.03", "--record-interval", "0.03"]
    assert main(args + ["--t-end", "0.05", "-o", str(tmp_path / "a")]) == 0
    assert capsys.readouterr().err == ("note: t_end = 0.05 s is not a whole number of steps of dt = 0.03 s: the run "
                                       "ends at 0.06 s (2 steps; t_end is rounded to whole steps)\n")
    assert main(args + ["--t-end", "0.06", "-o", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv, says", [
    # exactly half a step rounds to no step (to even): it is not "less than half a step"
    (["--dt", "0.002", "--t-end", "0.001"],
     "error: --t-end 0.001: t_end = 0.001 s is at most half a step (dt = 0.002 s): the run would take no step"),
    (["--dt", "0.002", "--t-end", "0.0009"], "t_end = 0.0009 s is less than half a step (dt = 0.002 s)"),
    # values shown with every digit they take: "got 0.001 s" for an interval that is not 0.001 was nonsense
    (["--dt", "0.001", "--t-end", "0.01", "--record-interval", "0.0010000001"],
     "error: --record-interval 0.0010000001: must be a whole multiple of dt = 0.001 s, got 0.0010000001 s"),
])
def test_messages_show_the_values_as_they_are(tmp_path, capsys, argv, says):
    from pem_physics.cli import main

    assert main(["run", "example:pendulum", *argv, "-o", str(tmp_path / "o"), "-q"]) == 2
    assert says in capsys.readouterr().err


def test_a_rounded_t_end_is_noted_with_every_digit(tmp_path, capsys):
    """t_end = 0.5000001 s in steps of 0.25 s: the run ends at 0.5 s; ':g' showed "t_end = 0.5 s is not a whole
    number of steps of dt = 0.25 s" — a value that is one."""
    from pem_physics.cli import main

    assert main(["run", "example:pendulum", "--dt", "0.25", "--t-end", "0.5000001", "--record-interval", "0.25",
                 "-o", str(tmp_path / "o"), "-q"]) == 0
    assert ("note: t_end = 0.5000001 s is not a whole number of steps of dt = 0.25 s: the run ends at 0.5 s (2 steps;"
            in capsys.readouterr().err)


@pytest.mark.parametrize("option, value, mass", [("--density", "1e-320", "8e-320"), ("--mass", "1e-150", "1e-150")])
def test_inertia_refuses_a_mass_below_what_a_scene_takes(capsys, option, value, mass):
    """inertia --density 1e-320 printed a mass of 8e-320 kg for the 2 m brick (volume 8 m³), which no scene takes
    (a body's mass must be at least 1e-100 kg)."""
    from pem_physics.cli import main

    brick = str(ROOT / "examples" / "scenes" / "meshes" / "brick.obj")
    assert main(["inertia", brick, option, value]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {option} {value}: gives the mesh a mass of {mass} kg, below the 1e-100 kg a scene's body "
                   "may weigh (lighter, its accelerations overflow): check --density or --mass (SI) and --scale\n")
    assert main(["inertia", brick, option, "1e-90" if option == "--mass" else "1e-99"]) == 0


def test_a_numba_cache_dir_that_is_a_file_is_refused_before_any_compile(tmp_path, monkeypatch, capsys):
    """NUMBA_CACHE_DIR naming a regular file: numba compiled every kernel again in every run, silently (minutes
    where a cached run takes seconds); refused at once, naming the variable and the fix. With numba off it runs."""
    from pem_physics.cli import main

    victim = tmp_path / "notes.txt"
    victim.write_text("mine")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(victim))
    monkeypatch.setenv("PEM_NUMBA", "1")
    assert main(["info", "example:pendulum"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: NUMBA_CACHE_DIR: {str(victim)!r} is not a folder") and "unset it" in err, err
    assert victim.read_text() == "mine"
    monkeypatch.setenv("PEM_NUMBA", "0")
    assert main(["info", "example:pendulum"]) == 0
