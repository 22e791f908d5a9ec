"""Output sets (pem_physics/io/outset.py): one run's files published whole, never mixed with another run's.

Each case is a fault a user hit (issue "outputs that never lie"): a second run into the same folder that leaves
the first run's files beside its own, a write interrupted mid-publication, a failure before it, a file changed
after its run, a staging folder left by a killed process, an output path that cannot be a folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pem_physics import examples
from pem_physics.analysis.plot import plot_outputs, read_trajectory
from pem_physics.cli import main as cli_main
from pem_physics.engine.simulate import Ensemble, simulate
from pem_physics.errors import ValidationError
from pem_physics.io import outset
from pem_physics.io.output import write_outputs
from pem_physics.io.outset import MANIFEST, OutputSet, read_manifest, verified


def files(folder: Path) -> dict:
    """Name → SHA-256 of every plain file in the folder (what a user would see there)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def listed_exactly(folder: Path) -> None:
    """The manifest lists exactly the files beside it, each with its true size and SHA-256."""
    m = read_manifest(folder)
    assert m is not None
    on_disk = files(folder)
    assert set(m["files"]) == set(on_disk) - {MANIFEST}, (sorted(m["files"]), sorted(on_disk))
    for name, entry in m["files"].items():
        assert entry["sha256"] == on_disk[name] and entry["bytes"] == (folder / name).stat().st_size
    assert not [p for p in folder.iterdir() if p.name.startswith(".")], "temporary files left behind"


@pytest.fixture(scope="module")
def runs():
    """A contact run (writes events.csv), a plain run (CSV), an ensemble (no CSV): three different file sets."""
    contact = simulate(examples.build("newtons-cradle"), t_end=0.02)
    plain = simulate(examples.pendulum(t_end=0.05))
    ens = simulate(examples.pendulum(t_end=0.05), ensemble=Ensemble(angular_velocity=np.zeros((2, 1, 3))))
    assert contact.events is not None and plain.events is None and ens.ensemble
    return contact, plain, ens


def test_a_second_run_replaces_the_whole_set_and_leaves_nothing_stale(runs, tmp_path):
    contact, plain, ens = runs
    (tmp_path / "notes.txt").write_text("mine")   # a file of the user's: never touched
    write_outputs(contact, tmp_path)
    assert {"events.csv", "trajectory.csv"} <= set(read_manifest(tmp_path)["files"])
    write_outputs(plain, tmp_path)
    assert not (tmp_path / "events.csv").exists(), "the contact run's events.csv survived the next run"
    listed_exactly_but_notes(tmp_path)
    write_outputs(ens, tmp_path)   # an ensemble writes no CSV: the plain run's CSV must go
    assert not (tmp_path / "trajectory.csv").exists()
    listed_exactly_but_notes(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert read_trajectory(verified(tmp_path, "trajectory.npz")).ensemble


def listed_exactly_but_notes(folder: Path) -> None:
    notes = (folder / "notes.txt").read_bytes()
    (folder / "notes.txt").unlink()
    try:
        listed_exactly(folder)
    finally:
        (folder / "notes.txt").write_bytes(notes)


def test_files_no_manifest_lists_are_never_touched(runs, tmp_path):
    """A folder without a manifest (the user's files, or an older version's): a run that would write a file of the
    same name stops before anything changes, naming it; files of other names stay as they are beside the set."""
    _, plain, _ = runs
    for name in ("trajectory.csv", "summary.json", "energy.png"):
        (tmp_path / name).write_text("mine")
    with pytest.raises(ValidationError, match="no complete run output here"):
        verified(tmp_path, "trajectory.npz", "run output")
    with pytest.raises(ValidationError, match=r"summary\.json, trajectory\.csv in it are not listed by an output set"):
        write_outputs(plain, tmp_path)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {n: "mine" for n in
                                                                   ("trajectory.csv", "summary.json", "energy.png")}
    (tmp_path / "trajectory.csv").unlink()
    (tmp_path / "summary.json").unlink()
    write_outputs(plain, tmp_path)
    assert (tmp_path / "energy.png").read_text() == "mine"          # the user's figure stays
    assert json.loads((tmp_path / "summary.json").read_text())["complete"] is True
    write_outputs(plain, tmp_path)                                  # the set's own files: replaced
    assert (tmp_path / "energy.png").read_text() == "mine"


@pytest.mark.parametrize("edit", ["appended", "listed_with_another_hash", "listed_is_a_folder"])
def test_a_listed_file_edited_since_its_run_is_never_removed_nor_replaced(runs, tmp_path, edit):
    """A file the manifest lists but that no longer has the listed size and SHA-256 (the user edited it, or the
    manifest was edited to list a file of theirs, or the name is now a folder) is the user's: the next run stops
    before anything changes, naming it, and the previous set (its manifest too) stays as it was."""
    contact, plain, _ = runs
    write_outputs(plain, tmp_path)
    if edit == "appended":
        name = "trajectory.csv"
        with open(tmp_path / name, "a", encoding="utf-8") as fh:
            fh.write("my own line\n")
    else:
        name = "notes.txt" if edit == "listed_with_another_hash" else "mydir"
        if edit == "listed_with_another_hash":
            (tmp_path / name).write_text("mine")
        else:
            (tmp_path / name).mkdir()
            (tmp_path / name / "inside.txt").write_text("mine")
        m = json.loads((tmp_path / MANIFEST).read_text())
        m["files"][name] = {"bytes": 4, "sha256": "0" * 64}
        (tmp_path / MANIFEST).write_text(json.dumps(m))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    for run in (plain, contact):   # the same files again, or another set (which would remove the edited CSV)
        with pytest.raises(ValidationError, match=rf"{name} in it has changed since the run that wrote it"):
            write_outputs(run, tmp_path)
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    if edit == "listed_is_a_folder":
        assert (tmp_path / name / "inside.txt").read_text() == "mine"


def test_another_commands_set_is_never_published_over(runs, tmp_path):
    """`plot A -o B` where B holds a run: refused naming B's set, B's files intact (plot into A joins A's set)."""
    _, plain, _ = runs
    a, b = tmp_path / "a", tmp_path / "b"
    write_outputs(plain, a)
    write_outputs(plain, b)
    before = {p.name: p.read_bytes() for p in b.iterdir()}
    with pytest.raises(ValidationError, match=r"holds the output set of `run`"):
        plot_outputs(a, b)
    assert {p.name: p.read_bytes() for p in b.iterdir()} == before
    assert cli_main(["plot", str(a), "-o", str(b)]) == 2
    plot_outputs(a, a)
    assert "energy.png" in read_manifest(a)["files"]


def test_an_interrupted_publication_leaves_no_set_a_reader_trusts(runs, tmp_path, monkeypatch):
    contact, plain, _ = runs
    write_outputs(contact, tmp_path)
    real = os.replace
    moved = []

    def dies_after_one(src, dst):   # the process dies (disk full, SIGKILL) after moving one file in
        if Path(dst).parent == tmp_path:   # publication (the writers' own atomic renames go into staging)
            if len(moved) == 1:
                raise OSError(28, "No space left on device")
            moved.append(dst)
        real(src, dst)

    monkeypatch.setattr(outset.os, "replace", dies_after_one)
    with pytest.raises(OSError):
        write_outputs(plain, tmp_path)
    monkeypatch.undo()
    assert not (tmp_path / MANIFEST).exists()
    with pytest.raises(ValidationError, match="interrupted while publishing"):
        plot_outputs(tmp_path)
    assert cli_main(["plot", str(tmp_path)]) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".pem-staging-")]
    write_outputs(plain, tmp_path)   # the next run publishes a clean set
    listed_exactly(tmp_path)
    assert not (tmp_path / "events.csv").exists()


def test_a_failure_before_publication_leaves_the_previous_set_untouched(runs, tmp_path, monkeypatch):
    contact, plain, _ = runs
    write_outputs(contact, tmp_path)
    before = files(tmp_path)
    from pem_physics.io import output

    def full_disk(traj, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output, "write_csv", full_disk)
    with pytest.raises(OSError):
        write_outputs(plain, tmp_path)
    assert files(tmp_path) == before
    listed_exactly(tmp_path)


def test_a_file_changed_after_its_run_is_refused_by_name(runs, tmp_path):
    _, plain, _ = runs
    write_outputs(plain, tmp_path)
    data = bytearray((tmp_path / "trajectory.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "trajectory.npz").write_bytes(bytes(data))
    with pytest.raises(ValidationError, match=r"trajectory\.npz: changed since its run wrote it"):
        plot_outputs(tmp_path)


def test_plot_into_the_run_folder_joins_its_set(runs, tmp_path):
    _, plain, _ = runs
    write_outputs(plain, tmp_path)
    plot_outputs(tmp_path)
    m = read_manifest(tmp_path)
    assert m["command"] == "run" and m["complete"] is True
    assert {"trajectory.npz", "energy.png", "top_view.png"} <= set(m["files"])
    listed_exactly(tmp_path)


def test_a_killed_writers_staging_folder_is_removed_by_the_next_run(runs, tmp_path):
    _, plain, _ = runs
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"{outset.STAGING_PREFIX}{int(dead.stdout)}-abc"   # that process has exited
    stale.mkdir()
    (stale / "trajectory.npz").write_bytes(b"half")
    live = tmp_path / f"{outset.STAGING_PREFIX}{os.getppid()}-xyz"    # a live process's: left alone
    live.mkdir()
    write_outputs(plain, tmp_path)
    assert not stale.exists() and live.exists()


@pytest.mark.parametrize("make, message", [
    (lambda p: (p.write_text("x"), p)[1], "exists and is not a folder"),
    (lambda p: (p.write_text("x"), p / "sub")[1], "cannot create the output folder"),
    (lambda p: "", "empty: name the output folder"),
    # a name beyond the file system's 255 bytes: exists() raised ENAMETOOLONG, exit 1 after the whole run
    (lambda p: p / ("x" * 300), "-o: '.*a name in it is 300 bytes, longer than the file system allows"),
])
def test_an_output_path_that_cannot_be_a_folder_is_refused_before_the_run(tmp_path, capsys, make, message):
    target = make(tmp_path / "out")
    with pytest.raises(ValidationError, match=message):
        OutputSet(target, "run")
    assert cli_main(["run", "example:pendulum", "-o", str(target), "--t-end", "0.01", "-q"]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and "Traceback" not in err


def test_a_full_disk_during_a_run_is_a_message_and_the_previous_set_stays(tmp_path, capsys, monkeypatch):
    assert cli_main(["run", "example:pendulum", "-o", str(tmp_path), "--t-end", "0.05", "-q"]) == 0
    before = files(tmp_path)
    import numpy

    def full(*args, **kw):
        raise OSError(28, "No space left on device", str(tmp_path / "trajectory.npz"))

    monkeypatch.setattr(numpy, "savez", full)
    assert cli_main(["run", "example:pendulum", "-o", str(tmp_path), "--t-end", "0.1", "-q"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "not published" in err and "Traceback" not in err
    assert files(tmp_path) == before

    def full_unnamed(*args, **kw):   # a write through a file object: the error names no file
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(numpy, "savez", full_unnamed)
    assert cli_main(["run", "example:pendulum", "-o", str(tmp_path), "--t-end", "0.1", "-q"]) == 1
    assert f"error: {tmp_path}: No space left on device" in capsys.readouterr().err   # the folder, then
    assert files(tmp_path) == before


def test_a_scene_nested_beyond_reason_is_a_message(tmp_path, capsys):
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert cli_main(["run", str(deep), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "deep.toml: nested too deeply to read" in err
    assert "Traceback" not in err


@pytest.fixture
def holder(tmp_path):
    """A second process holding the lock of ``tmp_path / "out"`` (as a run writing there does) until killed."""
    out = tmp_path / "out"
    code = ("import sys; from pem_physics.io.outset import output_folder; output_folder(sys.argv[1], 'run'); "
            "print('locked', flush=True); sys.stdin.read()")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-c", code, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield out, proc
    finally:
        proc.kill()
        proc.wait()


def test_a_second_command_into_a_folder_in_use_is_refused_at_once(holder, capsys):
    out, proc = holder
    (out / "notes.txt").write_text("mine")
    assert cli_main(["run", "example:pendulum", "-o", str(out), "--t-end", "0.01", "-q"]) == 2
    err = capsys.readouterr().err
    assert f"in use by another pem command (pid {proc.pid})" in err and "Traceback" not in err
    assert err.count("\n") == 1 and read_manifest(out) is None      # one line; nothing published
    assert sorted(p.name for p in out.iterdir()) == [".pem-lock", "notes.txt"]
    proc.kill()   # killed, not ended: its lock must not block the folder
    proc.wait()
    assert cli_main(["run", "example:pendulum", "-o", str(out), "--t-end", "0.01", "-q"]) == 0
    assert read_manifest(out)["command"] == "run"
    assert not (out / ".pem-lock").exists() and (out / "notes.txt").read_text() == "mine"


def test_without_fcntl_a_lock_file_of_a_live_process_refuses_and_a_dead_ones_is_stale(tmp_path, monkeypatch):
    monkeypatch.setattr(outset.outlock, "fcntl", None)   # as on Windows: an O_EXCL lock file with the pid
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    try:
        (tmp_path / ".pem-lock").write_text(f"{live.pid}\n")
        with pytest.raises(ValidationError, match=rf"in use by another pem command \(pid {live.pid}\)"):
            OutputSet(tmp_path, "run")
        (tmp_path / ".pem-lock").write_text(f"{int(dead.stdout)}\n")   # that process has exited
        with OutputSet(tmp_path, "run") as out:
            assert (tmp_path / ".pem-lock").read_text() == f"{os.getpid()}\n"
            out.publish()
        assert not (tmp_path / ".pem-lock").exists()
    finally:
        live.kill()
        live.wait()


@pytest.mark.parametrize("name, code", [("out\nput", "U+000A"), ("out\x1b[2Jput", "U+001B"), ("out\x85put", "U+0085"),
                                        ("out\u202eput", "U+202E"), ("out\u2028put", "U+2028")])
def test_an_output_folder_named_with_a_control_character_is_refused(tmp_path, capsys, name, code):
    """-o $'a\\nb' was taken: a folder whose name breaks the lines (or reverses the text) of every message and
    listing that shows it, as a body's name may not."""
    target = tmp_path / name
    assert cli_main(["run", "example:pendulum", "-o", str(target), "--t-end", "0.01", "-q"]) == 2
    err = capsys.readouterr().err
    assert f"the character {code}" in err and "name the folder with printable characters" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not target.exists() and list(tmp_path.iterdir()) == []
