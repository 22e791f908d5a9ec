"""Chunked basin maps and sweeps (analysis/chunks.py): chunk files, resume, failures, Dask distributed.

Oracle: the in-process run of the same map or sweep with the same chunking, which test_basin.py and
test_sweep.py check against closed forms and single runs. Whatever the path — chunk files, a resumed
run, a LocalCluster, a real scheduler with two worker processes, a worker killed mid-run — the
numbers must be those, bit for bit. The Dask tests run where dask.distributed is installed
(requirements/distributed.txt); the others everywhere.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace

import numpy as np
import pytest
from cli_helpers import CtrlCProgress

from pem_physics import examples
from pem_physics.analysis import basin, chunks, sweep
from pem_physics.errors import PemError

from conftest import CODE_ROOT


def small_map(**kw):
    scene = examples.three_magnet(t_end=0.3, dt=2e-3)
    return basin.basin_map(scene, grid=6, chunk=8, **kw)  # 36 points in 5 chunks


def same_map(a, b):
    np.testing.assert_array_equal(a.label, b.label)
    np.testing.assert_array_equal(a.final_xy, b.final_xy)
    np.testing.assert_array_equal(a.final_speed, b.final_speed)


@pytest.fixture(scope="module")
def reference():
    return small_map()


def test_chunk_files_hold_the_chunks_and_change_nothing(reference, tmp_path):
    res = small_map(chunk_dir=tmp_path)
    same_map(res, reference)
    assert res.complete and not res.failures
    assert sorted(p.name for p in tmp_path.glob("chunk_*.npz")) == [f"chunk_{i:06d}.npz" for i in range(5)]
    with np.load(tmp_path / "chunk_000002.npz") as z:  # points 16..23
        np.testing.assert_array_equal(z["final_xy"], reference.final_xy.reshape(-1, 2)[16:24])


def test_resume_after_an_interruption_finishes_with_the_same_map(reference, tmp_path):
    reached = []
    part = small_map(chunk_dir=tmp_path, progress=reached.append, stop=lambda: bool(reached) and reached[-1] >= 0.4)
    assert not part.complete
    written = sorted(tmp_path.glob("chunk_*.npz"))
    assert 1 <= len(written) < 5
    calls = []
    real = basin._chunk

    def counted(*a, **kw):
        calls.append(a[-2:])
        return real(*a, **kw)

    basin._chunk = counted
    try:
        done = small_map(chunk_dir=tmp_path, resume=True)
    finally:
        basin._chunk = real
    same_map(done, reference)
    assert done.complete and len(calls) == 5 - len(written)   # the written chunks were not run again


def test_a_chunk_folder_of_another_run_is_refused(tmp_path):
    small_map(chunk_dir=tmp_path)
    with pytest.raises(PemError, match="already holds chunks of this run: pass --resume"):
        small_map(chunk_dir=tmp_path)
    scene = examples.three_magnet(t_end=0.3, dt=2e-3)
    with pytest.raises(PemError, match="belong to another run"):
        basin.basin_map(scene, grid=6, chunk=4, chunk_dir=tmp_path, resume=True)
    with pytest.raises(PemError, match="--resume needs --chunk-dir"):
        small_map(resume=True)


def counting_chunks(monkeypatch):
    """The grid-point ranges basin._chunk computes from now on (a list the test reads)."""
    calls = []
    real = basin._chunk

    def counted(*a, **kw):
        calls.append(tuple(a[-2:]))
        return real(*a, **kw)

    monkeypatch.setattr(basin, "_chunk", counted)
    return calls


def _edited(path):
    """The chunk with one number changed and its identity kept."""
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["speed"] = data["speed"].copy()
    data["speed"][3] += 1.0
    np.savez(path, **data)


def _zip_bomb(path):
    """A 'chunk' of a few kB that inflates to 256 MiB of zeros."""
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("speed.npy", "w", force_zip64=True) as fh:
            block = bytes(2**20)
            for _ in range(256):
                fh.write(block)


@pytest.mark.parametrize("damage, says", [
    (lambda d: (d / "chunk_000002.npz").write_bytes(b""), "chunk_000002.npz: not a chunk file (not a zip archive"),
    (lambda d: (d / "chunk_000002.npz").write_bytes((d / "chunk_000002.npz").read_bytes()[:300]),
     "chunk_000002.npz: not a chunk file (not a zip archive"),
    (lambda d: (d / "chunk_000002.npz").write_bytes((d / "chunk_000001.npz").read_bytes()),
     "chunk_000002.npz: chunk 1 (grid points 8–15), not chunk 2"),
    (lambda d: np.savez(d / "chunk_000002.npz", final_xy=np.zeros((8, 2)), speed=np.zeros(8), complete=True),
     "chunk_000002.npz: a chunk file without its identity"),
    (lambda d: _edited(d / "chunk_000002.npz"), "chunk_000002.npz: its numbers are not the ones it was written with"),
    (lambda d: _zip_bomb(d / "chunk_000002.npz"), "chunk_000002.npz: inflates"),
])
def test_a_bad_chunk_file_is_named_and_computed_again(reference, tmp_path, monkeypatch, damage, says):
    """An unreadable, truncated, copied-over or foreign chunk file is never taken on --resume: it is named and its
    grid points computed again, and the map is the reference's bit for bit."""
    small_map(chunk_dir=tmp_path)
    damage(tmp_path)
    calls = counting_chunks(monkeypatch)
    done = small_map(chunk_dir=tmp_path, resume=True)
    same_map(done, reference)
    assert calls == [(16, 24)], calls   # chunk 2 alone
    assert len(done.notes) == 1 and says in done.notes[0] and "computed again" in done.notes[0], done.notes


def test_a_chunk_of_another_run_is_not_taken_even_where_the_manifests_agree(reference, tmp_path, monkeypatch):
    """Chunk files carry the run's digest: one from another run (other t_end) copied in is computed again."""
    other = tmp_path / "other"
    basin.basin_map(examples.three_magnet(t_end=0.2, dt=2e-3), grid=6, chunk=8, chunk_dir=other)
    small_map(chunk_dir=tmp_path)
    (tmp_path / "chunk_000003.npz").write_bytes((other / "chunk_000003.npz").read_bytes())
    calls = counting_chunks(monkeypatch)
    done = small_map(chunk_dir=tmp_path, resume=True)
    same_map(done, reference)
    assert calls == [(24, 32)] and "another run's chunk" in done.notes[0]


def test_chunk_files_without_their_manifest_are_neither_taken_nor_removed(reference, tmp_path, monkeypatch, capsys):
    """Chunk files without the manifest that vouches for them are never reused, even for another --t-end (the
    trial's wrong map with exit 0), nor deleted (they may be the user's): the run stops before it writes anything,
    naming them; once they are gone it runs."""
    from pem_physics.cli import main

    args = ["basin", "example:three-magnet", "--grid", "6", "--chunk", "8", "--dt", "2e-3", "-q",
            "--chunk-dir", str(tmp_path / "chunks")]
    assert main(args + ["--t-end", "0.2", "-o", str(tmp_path / "a")]) == 0
    (tmp_path / "chunks" / "manifest.json").unlink()
    before = {p.name: p.read_bytes() for p in (tmp_path / "chunks").iterdir()}
    calls = counting_chunks(monkeypatch)
    assert main(args + ["--t-end", "0.3", "-o", str(tmp_path / "b"), "--resume"]) == 2
    assert "5 chunk file(s) (chunk_000000.npz…) that no manifest.json vouches for" in capsys.readouterr().err
    assert calls == [] and {p.name: p.read_bytes() for p in (tmp_path / "chunks").iterdir()} == before
    for p in (tmp_path / "chunks").iterdir():
        p.unlink()
    # nothing left to continue: --resume would start afresh without a word, so it is refused
    assert main(args + ["--t-end", "0.3", "-o", str(tmp_path / "b"), "--resume"]) == 2
    assert "--resume: " in capsys.readouterr().err and calls == []
    assert main(args + ["--t-end", "0.3", "-o", str(tmp_path / "b")]) == 0
    assert len(calls) == 5   # every chunk computed
    with np.load(tmp_path / "b" / "basin.npz") as z:
        np.testing.assert_array_equal(z["label"], reference.label)   # the t_end = 0.3 map, not the 0.2 one


@pytest.mark.parametrize("text", ["{ not json", '{"project": "mine", "version": 3}'])
def test_a_manifest_that_is_not_ours_is_never_overwritten(tmp_path, text):
    """A damaged manifest.json, or the user's own file of that name: the run stops naming it, the file as it was."""
    small_map(chunk_dir=tmp_path)
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(PemError, match="manifest.json: not a readable chunk manifest of pem"):
        small_map(chunk_dir=tmp_path, resume=True)
    assert (tmp_path / "manifest.json").read_text() == text


# ---------------------------------------------------------------------------- resume refuses another run's folder
# A folder written by one run, resumed by a run that differs in one thing its numbers depend on: without the
# manifest comparison the old chunks would be loaded into the new result (or fail to fit it). Each field
# that defines the run is changed alone, and the refusal must name it.

def basin_run(scene=None, **kw):
    """small_map's basin map, with its scene or keywords changed."""
    args = dict(grid=6, chunk=8) | kw
    return basin.basin_map(scene or examples.three_magnet(t_end=0.3, dt=2e-3), **args)


def sweep_run(scene=None, params=("friction=0,1e-4,2e-4",), **kw):
    return sweep.sweep(scene or examples.compass(t_end=0.05), sweep_params(*params), **(dict(chunk=2) | kw))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Folders holding every chunk of a complete basin map and of a complete sweep (small_map's, sweep_run's)."""
    where = tmp_path_factory.mktemp("written")
    basin_run(chunk_dir=where / "basin")
    sweep_run(chunk_dir=where / "sweep")
    return where


def moved_magnet():
    scene = examples.three_magnet(t_end=0.3, dt=2e-3)
    k = next(i for i, b in enumerate(scene.bodies) if b.role == "fixed")
    scene.bodies[k] = replace(scene.bodies[k], position=tuple(np.asarray(scene.bodies[k].position) + (0.001, 0, 0)))
    return scene


BASIN_CHANGES = {  # the field the refusal must name: the changed run (folder and resume in **w)
    "scene.friction": lambda **w: basin_run(examples.three_magnet(friction=3e-4, t_end=0.3, dt=2e-3), **w),
    "scene.settings.dt": lambda **w: basin_run(examples.three_magnet(t_end=0.3, dt=1e-3), **w),
    "scene.field": lambda **w: basin_run(replace(examples.three_magnet(t_end=0.3, dt=2e-3), field=(1e-4, 0, 0)), **w),
    "scene.bodies": lambda **w: basin_run(moved_magnet(), **w),
    "t_end": lambda **w: basin_run(t_end=0.25, **w),
    "method": lambda **w: basin_run(method="splitting2", **w),
    "grid": lambda **w: basin_run(extent=0.05, **w),                  # the same 36 points, elsewhere
    "points": lambda **w: basin_run(grid=7, **w),
    "chunk": lambda **w: basin_run(chunk=4, **w),
}
SWEEP_CHANGES = {
    "values[friction]": lambda **w: sweep_run(params=("friction=0,1e-4,3e-4",), **w),
    "parameters": lambda **w: sweep_run(params=("field.x=0,1e-4,2e-4",), **w),
    "scene.settings.t_end": lambda **w: sweep_run(t_end=0.04, **w),
    "scene.settings.dt": lambda **w: sweep_run(dt=5e-4, **w),
    "scene.settings.method": lambda **w: sweep_run(method="splitting2", **w),
    "scene.field": lambda **w: sweep_run(replace(examples.compass(t_end=0.05), field=(2e-2, 0, 0)), **w),
    "record_interval": lambda **w: sweep_run(samples=20, **w),
    "settle_speed": lambda **w: sweep_run(settle_speed=2e-3, **w),
    "chunk": lambda **w: sweep_run(chunk=1, **w),
    "kind": lambda **w: basin_run(**w),                               # a basin map resumed into a sweep's folder
}


@pytest.mark.parametrize("kind, field", [("basin", f) for f in BASIN_CHANGES] + [("sweep", f) for f in SWEEP_CHANGES])
def test_resume_refuses_a_folder_of_a_run_that_differs_in_one_field(kind, field, written, tmp_path):
    shutil.copytree(written / kind, tmp_path / kind)
    change = (BASIN_CHANGES if kind == "basin" else SWEEP_CHANGES)[field]
    with pytest.raises(PemError, match=r"belong to another run \(.*differs in: .*" + re.escape(field)):
        change(chunk_dir=tmp_path / kind, resume=True)


def test_resume_of_the_same_run_loads_every_chunk(written, tmp_path):
    """The control: resumed unchanged, both folders are accepted and nothing is run again."""
    for kind, again in (("basin", basin_run), ("sweep", sweep_run)):
        shutil.copytree(written / kind, tmp_path / kind)
        res = again(chunk_dir=tmp_path / kind, resume=True)
        assert res.complete


def test_a_blow_up_fails_its_chunk_and_the_others_run(tmp_path):
    # Explicit Euler at Ω·dt ≈ 15 for the field of 10 T only: its chunk (chunk = 1) fails, the other four complete.
    res = sweep.sweep(examples.compass(t_end=1.0), sweep_params("field.x=0,1e-4,10,1e-3,2e-3"), method="pem-euler",
                      dt=1e-3, chunk=1, chunk_dir=tmp_path)
    assert not res.complete and res.members_completed == 4
    assert res.error.count("blow-up") == 1 and "grid point 2 (field.x=10)" in res.error
    np.testing.assert_array_equal(res.outcomes["completed"], [1, 1, 0, 1, 1])
    assert sorted(p.name for p in tmp_path.glob("chunk_*.npz")) == [f"chunk_{i:06d}.npz" for i in (0, 1, 3, 4)]


def sweep_params(*texts):
    return [sweep.parse_param(t) for t in texts]


def test_run_chunks_reports_failures_with_their_grid_points():
    from pem_physics.errors import SimulationError

    def fn(start, stop, progress=None, stop_flag=None):
        if start == 4:
            raise SimulationError("blow-up")
        return {"v": np.arange(start, stop, dtype=float), "complete": np.array(True)}

    run = chunks.run_chunks(chunks.Task(fn, (), 10, 4), kind="t", run={"k": 0})
    assert not run.complete and run.ran == 2
    (f,) = run.failures
    assert (f.chunk, f.start, f.stop) == (1, 4, 8) and f.message == "blow-up"
    np.testing.assert_array_equal(run.arrays[2]["v"], [8, 9])


# ------------------------------------------------------------------------------------------- Dask distributed

needs_dask = pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                reason="dask.distributed is not installed (requirements/distributed.txt)")


@needs_dask
def test_a_local_cluster_gives_the_in_process_map(reference, tmp_path):
    with chunks.client_for(workers=2) as client:
        res = small_map(client=client, chunk_dir=tmp_path)
    same_map(res, reference)
    assert res.complete and len(list(tmp_path.glob("chunk_*.npz"))) == 5


@needs_dask
def test_a_sweep_on_a_local_cluster_equals_the_in_process_sweep():
    scene = examples.three_magnet(t_end=0.2, dt=2e-3)
    ps = sweep_params("friction=0:1e-3:6")
    ref = sweep.sweep(scene, ps, chunk=2)
    with chunks.client_for(workers=2) as client:
        res = sweep.sweep(scene, ps, chunk=2, client=client)
    for name in ref.outcomes:
        np.testing.assert_array_equal(res.outcomes[name], ref.outcomes[name])


@pytest.fixture
def cluster(tmp_path):
    """A real `dask scheduler` and two `dask worker` processes on 127.0.0.1 (shut down by the test)."""
    env = dict(os.environ, PYTHONPATH=str(CODE_ROOT), NUMBA_NUM_THREADS="1")
    sched_file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        # no clock: wait as long as the scheduler takes on a loaded machine, unless it exits without starting
        while not sched_file.exists():
            assert procs[0].poll() is None, f"the scheduler exited with code {procs[0].returncode}"
            time.sleep(0.1)
        for _ in range(2):
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                           str(sched_file), "--nthreads", "1", "--no-dashboard", "--no-nanny",
                                           "--host", "127.0.0.1"],
                                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        import json

        address = json.loads(sched_file.read_text())["address"]
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, procs[1:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


@needs_dask
def test_a_real_scheduler_and_two_workers_give_the_in_process_map(reference, cluster, tmp_path):
    address, _ = cluster
    with chunks.client_for(scheduler=address) as client:
        res = small_map(client=client)
    same_map(res, reference)


@needs_dask
def test_a_worker_killed_mid_run_loses_nothing(cluster, tmp_path):
    address, workers = cluster
    scene = examples.three_magnet(t_end=1.0, dt=2e-3)
    ref = basin.basin_map(scene, grid=8, chunk=4)            # 16 chunks
    killed = []

    def progress(f):
        if f > 0 and not killed:
            workers[0].send_signal(signal.SIGKILL)
            killed.append(f)

    with chunks.client_for(scheduler=address) as client:
        res = basin.basin_map(scene, grid=8, chunk=4, client=client, progress=progress, chunk_dir=tmp_path)
    assert killed and killed[0] < 1 and workers[0].wait(timeout=30) != 0
    same_map(res, ref)
    assert res.complete and len(list(tmp_path.glob("chunk_*.npz"))) == 16


@needs_dask
def test_cli_resume_after_ctrl_c_on_a_cluster(cluster, tmp_path, monkeypatch):
    import json

    from pem_physics import cli

    address, _ = cluster
    args = ["sweep", "example:three-magnet", "-q", "--t-end", "0.3", "--dt", "2e-3", "--chunk", "1",
            "--param", "friction=0:1e-3:8", "--scheduler", address, "--chunk-dir", str(tmp_path / "chunks")]

    monkeypatch.setattr(cli, "_Progress", CtrlCProgress)
    assert cli.main(args + ["-o", str(tmp_path / "a")]) == 130
    part = len(list((tmp_path / "chunks").glob("chunk_*.npz")))
    assert 1 <= part <= 8
    monkeypatch.undo()
    assert cli.main(args + ["-o", str(tmp_path / "b"), "--resume"]) == 0
    assert cli.main(["sweep", "example:three-magnet", "-q", "--t-end", "0.3", "--dt", "2e-3", "--chunk", "1",
                     "--param", "friction=0:1e-3:8", "-o", str(tmp_path / "c")]) == 0
    assert (tmp_path / "b" / "sweep.csv").read_text() == (tmp_path / "c" / "sweep.csv").read_text()
    assert json.loads((tmp_path / "b" / "sweep.json").read_text())["complete"] is True


def test_resume_with_nothing_to_continue_is_refused(tmp_path, monkeypatch):
    """A missing or empty --chunk-dir, or a run's output folder, started afresh under --resume without a word."""
    calls = counting_chunks(monkeypatch)
    (tmp_path / "empty").mkdir()
    for folder in (tmp_path / "missing", tmp_path / "empty"):
        with pytest.raises(PemError, match=r"--resume: .* holds no run to continue .* drop --resume to start afresh"):
            small_map(chunk_dir=folder, resume=True)
    assert calls == [] and not (tmp_path / "missing").exists() and not any((tmp_path / "empty").iterdir())


def test_a_folder_where_a_chunk_belongs_is_refused_before_the_map(tmp_path, monkeypatch):
    """It could not be written at the end (the map failed after all its work, naming a temporary file): named now,
    nothing run."""
    small_map(chunk_dir=tmp_path)
    (tmp_path / "chunk_000002.npz").unlink()
    (tmp_path / "chunk_000002.npz").mkdir()
    calls = counting_chunks(monkeypatch)
    with pytest.raises(PemError, match=r"chunk_000002\.npz is not a file \(a folder\?\) where chunk 2 belongs"):
        small_map(chunk_dir=tmp_path, resume=True)
    assert calls == []


@pytest.mark.parametrize("command", ["basin", "sweep"])
@pytest.mark.parametrize("chunk_dir, outdir, what", [
    ("out/b2", "out/b2", "is the output folder"),
    ("out/b2/chunks", "out/b2", "lies inside the output folder"),
    ("out", "out/b2", "holds the output folder"),
])
def test_chunks_and_outputs_in_one_folder_are_refused_naming_both(tmp_path, monkeypatch, capsys, command, chunk_dir,
                                                                  outdir, what):
    """`basin --chunk-dir out/b2 -o out/b2` put the chunk files and their manifest beside the published set (exit 0);
    inside -o, or -o inside the chunks, mixes them as well. Refused before any chunk runs or any folder is made."""
    from pem_physics.cli import main

    monkeypatch.chdir(tmp_path)
    calls = counting_chunks(monkeypatch)
    run = (["basin", "example:three-magnet", "--grid", "4", "--chunk", "4"] if command == "basin" else
           ["sweep", "example:three-magnet", "--chunk", "1", "--param", "friction=0:1e-3:2"])
    assert main(run + ["--t-end", "0.2", "-q", "--chunk-dir", chunk_dir, "-o", outdir]) == 2
    assert capsys.readouterr().err.startswith(f"error: --chunk-dir {chunk_dir}: {what} -o {outdir}: the chunk files")
    assert calls == [] and not (tmp_path / "out").exists()


@pytest.mark.parametrize("workers", ["0", "-1"])
def test_a_worker_count_below_one_is_refused_before_dask_is_asked_for(tmp_path, capsys, workers):
    """`basin --workers 0` answered "need dask.distributed" where dask is missing (and installing it would not
    help): the value is refused first, wherever dask is."""
    from pem_physics.cli import main

    assert main(["basin", "example:three-magnet", "--grid", "4", "--t-end", "0.2", "-q", "--workers", workers,
                 "-o", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == f"error: --workers: expected a whole number ≥ 1, got {workers}\n"
