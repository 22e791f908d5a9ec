"""Chunked runs of basin maps and sweeps: in this process or on Dask distributed, resumable from files.

A basin map or a sweep is cut into chunks of consecutive grid points. A chunk is a task: a pure
function of the run's inputs and its index (:class:`Task`), so it gives the same numbers bit for bit
wherever it runs — in this process, in a local worker process or on another machine of the same
kind (numba compiles for the machine it runs on: workers on other processor types may differ in
the last bits, as any two machines do). As each chunk completes, the process that holds the run
writes its arrays to ``<chunk_dir>/chunk_<i>.npz`` (atomically: workers need no shared file
system), and the result is assembled from the chunks. With ``resume=True`` the chunks already
written are loaded instead of run again, after checking ``manifest.json``: a digest of everything
the numbers depend on (scene, grid, chunking, method, times), field by field, so a folder of another
run is refused, naming what differs (e.g. ``scene.friction``), rather than mixed in. Each chunk file
carries its own identity too (the run's digest, its index and grid points): a chunk file that is
unreadable, truncated, copied over another or left by another run is named and computed again, never
taken. Chunk files without the manifest that vouches for them, or a ``manifest.json`` that is not one of ours
(damaged, or the user's), are neither taken nor removed: the run stops before it writes anything, naming them.

Where chunks run (:func:`run_chunks`): ``client`` (a ``dask.distributed.Client``), else this process.
:func:`client_for` makes one from ``--scheduler tcp://HOST:PORT`` (an existing cluster) or
``--workers N`` (a LocalCluster of N worker processes started for the run, one thread each, with
numba's threads split among them). dask and distributed are optional (``pip install
pem_physics[distributed]``); without them only the in-process path exists.

A chunk that fails (a blow-up: :class:`~pem_physics.errors.SimulationError`) is reported with its
grid points and the others go on; Ctrl-C (``stop()``) cancels what has not run and keeps every chunk
already written, so ``--resume`` continues from there. A worker lost mid-run costs nothing: Dask runs
its chunks again elsewhere.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import PemError, SimulationError, ValidationError
from ..io.files import atomic_open, checked_npz

MANIFEST = "manifest.json"


@dataclass
class Failure:
    """A chunk that did not run through: its index, grid points [start, stop) and the message."""

    chunk: int
    start: int
    stop: int
    message: str


@dataclass
class ChunkResults:
    """The arrays of every chunk that ran (None where one failed or was not reached), in chunk order."""

    arrays: list
    failures: list
    complete: bool
    ran: int      # chunks computed in this call
    loaded: int   # chunks taken from chunk files (resume)
    notes: list = None   # what resume found and did not take (bad chunk files, a missing manifest), for the user


class Task:
    """A picklable chunk task: ``fn(*args, start, stop, progress=None, stop_flag=None) -> dict`` of arrays
    (plus ``"complete"``: whether the chunk ran to its end) for grid points [start, stop)."""

    def __init__(self, fn, args: tuple, n: int, chunk: int):
        self.fn, self.args, self.n, self.chunk = fn, args, int(n), int(chunk)

    @property
    def n_chunks(self) -> int:
        return -(-self.n // self.chunk)

    def bounds(self, i: int) -> tuple[int, int]:
        return i * self.chunk, min(self.n, (i + 1) * self.chunk)

    def __call__(self, i: int, progress=None, stop=None) -> dict:
        start, end = self.bounds(i)
        return self.fn(*self.args, start, end, progress=progress, stop_flag=stop)


def digest(*parts) -> str:
    """What a run's numbers depend on, as a hex digest (pickled: scenes are dataclasses of arrays)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(pickle.dumps(p, protocol=4))
    return h.hexdigest()


def fields(run: dict) -> dict:
    """{name: digest} of what a run's numbers depend on (``run``: name → value), a dataclass field by field and
    a dict entry by entry ("scene.friction", "scene.settings.t_end", "values[field.x]"): a folder of another
    run is refused naming what differs."""
    out = {}
    for name, value in run.items():
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out.update(fields({f"{name}.{f.name}": getattr(value, f.name) for f in dataclasses.fields(value)}))
        elif isinstance(value, dict):
            out.update(fields({f"{name}[{k}]": v for k, v in value.items()}))
        else:
            out[name] = digest(value)
    return out


def check_folders(chunk_dir, outdir) -> None:
    """Refuse a ``--chunk-dir`` that is the output folder ``-o``, lies inside it or holds it, naming both: the chunk
    files and their manifest would lie among the published outputs (or the outputs among the chunks, where a
    later ``--resume`` finds them). Checked before either folder is made."""
    if chunk_dir is None or outdir is None:
        return
    chunks, out = (Path(os.path.abspath(os.fspath(p))).resolve() for p in (chunk_dir, outdir))
    if chunks == out:
        what = "is the output folder"
    elif out in chunks.parents:
        what = "lies inside the output folder"
    elif chunks in out.parents:
        what = "holds the output folder"
    else:
        return
    raise ValidationError(f"--chunk-dir {os.fspath(chunk_dir)}", f"{what} -o {os.fspath(outdir)}: the chunk files and "
                          "their manifest would be mixed with the published outputs; keep the chunks in a folder "
                          "of their own, outside -o (and -o outside it)")


def _chunk_path(folder: Path, i: int) -> Path:
    return folder / f"chunk_{i:06d}.npz"


def _prepare(folder: Path, run: dict, kind: str, task: Task, resume: bool) -> list:
    """Check or write the folder's manifest; returns notes for the user (a folder started afresh)."""
    if folder.exists() and not folder.is_dir():
        raise PemError(f"--chunk-dir {folder}: is a file, not a folder; name a folder for the chunk files")
    if resume and not (folder / MANIFEST).is_file() and not any(folder.glob("chunk_*.npz")):
        # resuming nothing would start afresh without a word (chunks without a manifest: named below)
        raise PemError(f"--resume: {folder} holds no run to continue (no {MANIFEST} of an earlier run's chunks): "
                       "name the --chunk-dir of the interrupted run, or drop --resume to start afresh")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise PemError(f"--chunk-dir {folder}: cannot create it ({err.strerror or err})") from None
    manifest = folder / MANIFEST
    want = {"kind": kind, "points": task.n, "chunk": task.chunk, "chunks": task.n_chunks, "run": run}
    notes = []
    have = None
    if manifest.exists():
        try:
            have = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            have = None
        if not isinstance(have, dict) or not {"kind", "points", "chunk", "chunks", "run"} <= set(have):
            # damaged, or a file of the user's that happens to have the name: neither is overwritten
            raise PemError(f"{manifest}: not a readable chunk manifest of pem (damaged, or a file of your own): "
                           "use another --chunk-dir, or delete it and the chunk files beside it to start afresh "
                           "(nothing was changed)")
    stale = sorted(folder.glob("chunk_*.npz"))
    if have is None and stale:
        # chunk files without a manifest that vouches for them: never reused (they may be any run's), never removed
        # (they may be the user's)
        raise PemError(f"{folder}: {len(stale)} chunk file(s) ({stale[0].name}…) that no manifest.json vouches for "
                       "(a run's whose manifest was deleted, or files of your own): use another --chunk-dir, or "
                       "delete them to start afresh (nothing was changed)")
    if have is not None:
        differ = [k for k in ("kind", "points", "chunk", "chunks") if have.get(k) != want[k]]
        theirs = have.get("run") if isinstance(have.get("run"), dict) else {}
        differ += [k for k in sorted(set(theirs) | set(run)) if theirs.get(k) != run.get(k)]
        if differ or set(have) != set(want):
            raise PemError(f"{folder}: its chunks belong to another run ({have.get('kind')}, "
                           f"{have.get('points')} points in chunks of {have.get('chunk')}; differs in: "
                           f"{', '.join(differ) or 'the manifest format'}); use another --chunk-dir, or empty this one")
        if not resume and any(folder.glob("chunk_*.npz")):
            raise PemError(f"{folder} already holds chunks of this run: pass --resume to continue it, or empty it")
    else:
        with atomic_open(manifest, "w") as fh:
            json.dump(want, fh, indent=2)
    return notes


#: Keys of a chunk file that say which chunk it is and what its numbers are (stored beside its arrays, checked
#: when it is loaded).
_IDENTITY = ("_run", "_index", "_start", "_stop", "_data")


def _data_digest(arrays: dict) -> str:
    """SHA-256 of a chunk's arrays (names, dtypes, shapes and bytes): an edited number changes it."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _write(folder: Path, i: int, arrays: dict, key: str, task: Task) -> None:
    start, stop = task.bounds(i)
    with atomic_open(_chunk_path(folder, i), "wb") as fh:
        np.savez(fh, **arrays, _run=np.array(key), _index=np.array(i), _start=np.array(start), _stop=np.array(stop),
                 _data=np.array(_data_digest(arrays)))


def _load(folder: Path, i: int, key: str, task: Task) -> tuple[dict | None, str | None]:
    """The arrays of chunk ``i``, or (None, why) when its file is unreadable or not that chunk of this run."""
    path = _chunk_path(folder, i)
    try:
        checked_npz(path, "chunk file")      # a zip that would inflate past the memory is not opened
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except ValidationError as err:
        return None, f"{path}: {err.message}; computed again"
    except Exception as err:  # noqa: BLE001 - any unreadable file (truncated zip, empty, bad header) is recomputed
        return None, f"{path}: unreadable ({type(err).__name__}: {err}); computed again"
    start, stop = task.bounds(i)
    got = tuple(data.get(k, np.array(None)).item() if k in data else None for k in _IDENTITY)
    arrays = {k: v for k, v in data.items() if k not in _IDENTITY}
    if got[:4] != (key, i, start, stop):
        if got[0] != key:
            why = "another run's chunk" if got[0] is not None else "a chunk file without its identity"
        else:
            why = f"chunk {got[1]} (grid points {got[2]}–{got[3] - 1 if got[3] is not None else '?'}), not chunk {i}"
        return None, f"{path}: {why}; computed again"
    if got[4] != _data_digest(arrays):
        return None, f"{path}: its numbers are not the ones it was written with (edited or damaged); computed again"
    return arrays, None


def run_chunks(task: Task, *, kind: str, run: dict, chunk_dir=None, resume: bool = False, client=None,
               progress=None, stop=None) -> ChunkResults:
    """Run every chunk of ``task``; see the module docstring. ``run``: name → value of everything the
    numbers depend on besides the chunking (:func:`fields`). ``progress(fraction)`` over grid points done,
    ``stop()`` polled between chunks (and inside an in-process chunk)."""
    folder = Path(chunk_dir) if chunk_dir is not None else None
    if resume and folder is None:
        raise PemError("--resume needs --chunk-dir (the folder holding the chunks of the interrupted run)")
    run = fields(run)
    key = digest(sorted(run.items()), task.n, task.chunk)
    if folder is not None:     # a chunk's place taken by something else could not be written at the end: say so now
        for i in range(task.n_chunks):
            p = _chunk_path(folder, i)
            if p.exists() and not p.is_file():
                raise PemError(f"{p} is not a file (a folder?) where chunk {i} belongs: remove it, or use another "
                               "--chunk-dir")
    notes = _prepare(folder, run, kind, task, resume) if folder is not None else []
    n = task.n_chunks
    arrays: list = [None] * n
    failures: list[Failure] = []
    loaded = 0
    todo = []
    for i in range(n):
        if folder is not None and resume and _chunk_path(folder, i).exists():
            arrays[i], why = _load(folder, i, key, task)
            if why is None:
                loaded += 1
                continue
            notes.append(why)
        todo.append(i)
    done_points = sum(task.bounds(i)[1] - task.bounds(i)[0] for i in range(n) if arrays[i] is not None)

    def report(extra: float = 0.0):
        if progress is not None:
            progress((done_points + extra) / max(task.n, 1))

    def failed(i, err):
        start, end = task.bounds(i)
        failures.append(Failure(i, start, end, str(err)))

    complete = True
    ran = 0
    if client is None:
        for i in todo:  # stop() is polled inside each chunk (simulate), which then returns what it reached
            start, end = task.bounds(i)
            try:
                out = task(i, progress=lambda f, n_=end - start: report(f * n_), stop=stop)
            except SimulationError as err:
                failed(i, err)
                continue
            ran += 1
            if not bool(out.get("complete", True)):  # stopped inside the chunk: kept in memory, not written
                arrays[i] = out
                complete = False
                break
            arrays[i] = out
            if folder is not None:
                _write(folder, i, out, key, task)
            done_points += end - start
            report()
    else:
        from distributed import as_completed

        futures = {client.submit(task, i, key=f"pem-{kind}-{key[:12]}-{i}", pure=False): i for i in todo}
        try:
            for fut in as_completed(list(futures)):
                i = futures[fut]
                if fut.status == "error":
                    err = fut.exception()
                    if not isinstance(err, SimulationError):
                        raise err
                    failed(i, err)
                    continue
                out = fut.result()
                ran += 1
                arrays[i] = out
                if folder is not None:
                    _write(folder, i, out, key, task)
                start, end = task.bounds(i)
                done_points += end - start
                report()
                if stop is not None and stop():
                    complete = False
                    break
        finally:
            pending = [f for f in futures if not f.done()]
            if pending:
                client.cancel(pending)
                complete = False
    failures.sort(key=lambda f: f.chunk)
    complete = complete and not failures and all(a is not None for a in arrays)
    return ChunkResults(arrays, failures, complete, ran, loaded, notes)


@contextlib.contextmanager
def client_for(scheduler: str | None = None, workers: int | None = None):
    """A dask.distributed Client for ``scheduler`` (an address) or ``workers`` local worker processes
    (started here and shut down on exit), or None when neither is asked for."""
    if scheduler is None and workers is None:
        yield None
        return
    if scheduler is not None and workers is not None:
        raise PemError("--scheduler and --workers exclude each other (an existing cluster, or one started here)")
    if workers is not None and not (isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1):
        raise PemError(f"--workers: expected a whole number ≥ 1, got {workers!r}")   # before asking for dask
    try:
        from distributed import Client, LocalCluster
    except ImportError as err:
        raise PemError("--scheduler/--workers need dask.distributed: pip install pem_physics[distributed]") from err
    if scheduler is not None:
        with Client(scheduler) as client:
            yield client
        return
    # One thread per worker process; numba's threads shared out so workers together use the cores once.
    threads = max(1, (os.cpu_count() or 1) // workers)
    env = {"NUMBA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": "1"}
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      env=env) as cluster, Client(cluster) as client:
        yield client
