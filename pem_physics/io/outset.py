"""Output sets: every file of one command's run, published together with a manifest, or not at all.

A command (``run``, ``gas``, ``basin``, ``sweep``, ``plot``) writes its files into a fresh staging folder
inside the output folder (``.pem-staging-<pid>-<random>/``), flushes them to disk, and only then publishes
them: the previous set's manifest is removed (from that instant the folder holds no set a reader trusts),
the previous set's files that the new set does not have are removed (no stale ``events.csv`` or ``sweep.png``
survives), the new files are moved in (``os.replace``: same file system), and the new manifest
``pem-manifest.json`` is written last (atomically, flushed). The manifest lists every file with its size and
SHA-256, the command, and whether the run completed.

Readers (``plot``, the add-on, ``--state``) trust only what a manifest lists, with its size and hash
(:func:`verified`); a folder without one — an interrupted publication, an older version's output, a foreign
folder — is refused with a message that says so. A failure or interruption before the publication leaves the
previous set as it was; a staging folder left by a killed process is removed by the next command that
writes there. A run stopped by Ctrl-C or SIGTERM publishes its partial result marked ``complete: false``.

One command at a time writes into a folder: :func:`output_folder` locks it (:mod:`.outlock`) for the whole
command, and a second command into it is refused at once, naming the process that holds it.

Files no set wrote are never touched: a publication removes and replaces only what the previous manifest lists,
each still as its run wrote it (size and SHA-256), or what a publication cut short was moving (:data:`JOURNAL`);
a file of the same name that no set lists — the user's, or an older version's —, a listed file edited since its
run, or a folder holding another command's set (``plot A -o B`` where B holds a run) stops it before anything
changes.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
import unicodedata
from pathlib import Path

from ..aot import sha256  # the interpreter's own (hashlib loads OpenSSL: ~4 ms of a short run)
from ..errors import ValidationError
from ..model.scene import UNSHOWN
from . import outlock
from .files import atomic_open, unique_name

MANIFEST = "pem-manifest.json"
FORMAT = "pem-output-set/1"
STAGING_PREFIX = ".pem-staging-"
#: While a set is published (the old manifest gone, the new one not yet written) this lists the files of both, so
#: that a publication cut short is finished by the next one without touching files no set wrote.
JOURNAL = ".pem-publishing.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def _fsync_path(path: Path, directory: bool = False) -> None:
    fd = os.open(path, (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if directory else os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot sync a directory; the files themselves are synced
        if not directory:
            raise
    finally:
        os.close(fd)


def _sha256(path: Path) -> str:
    if path.stat().st_size > 1 << 20:   # OpenSSL's (4 ms to import) hashes ~4× faster: worth it past a megabyte
        import hashlib

        h = hashlib.sha256()
    else:
        h = sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: The folders :func:`output_folder` created in this process, outermost first: a command refused or failed before
#: it wrote takes back those still empty (:func:`take_back_empty`).
_CREATED: list = []


def take_back_empty() -> None:
    """Remove the folders :func:`output_folder` created that are still empty, innermost first (the command line,
    as a command ends: a refused command leaves no folder behind)."""
    while _CREATED:
        try:
            _CREATED.pop().rmdir()   # only an empty folder goes
        except OSError:
            pass


def release_locks() -> None:
    """Give back the output folders' locks :func:`output_folder` took (the command line, as a command ends)."""
    outlock.release_all()


def output_folder(outdir, command: str | None = None) -> Path:
    """The output folder, created if missing and locked for this process (:mod:`.outlock`: until
    :func:`release_locks`; a second command writing there is refused at once); a clear :class:`ValidationError` for
    anything unusable or in use, and, given the ``command`` about to write there, for a folder holding another
    command's set (never published over)."""
    text = os.fspath(outdir) if outdir is not None else ""
    if not str(text).strip():
        raise ValidationError("-o/--outdir", "empty: name the output folder")
    bad = next((c for c in str(text) if ord(c) < 0x20 or c == "\x7f" or c in UNSHOWN), None)
    if bad is not None:   # a newline in a folder's name splits every message and listing that shows it
        raise ValidationError("-o", f"{ascii(str(text)[:60])}: the character U+{ord(bad):04X} "
                                    f"({unicodedata.name(bad, 'a control character')}) in the folder's name breaks "
                                    "the line or reverses the text where it is shown: name the folder with printable "
                                    "characters")
    path = Path(text)
    try:   # exists() itself raises for a name the file system cannot hold
        if path.exists() and not path.is_dir():
            raise ValidationError(str(path), "exists and is not a folder: name a folder for the outputs")
        missing = [p for p in (path, *path.parents) if not p.exists()]
        path.mkdir(parents=True, exist_ok=True)
        _CREATED.extend(reversed(missing))
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            shown = text if len(text) <= 60 else f"{text[:40]}…{text[-16:]}"
            longest = max(len(os.fsencode(n)) for n in path.parts)
            what = f"a name in it is {longest:,} bytes" if longest > 255 else \
                f"it is {len(os.fsencode(text)):,} bytes"
            raise ValidationError("-o", f"{shown!r}: {what}, longer than the file system allows: name a shorter "
                                        "folder") from None
        raise ValidationError(str(path), f"cannot create the output folder ({e.strerror or e}): "
                                         "name a folder you may write to") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValidationError(str(path), "the output folder is not writable: name a folder you may write to")
    took = outlock.acquire(path)
    old = read_manifest(path) if command else None
    if old is not None and old.get("command") != command:
        if took:
            outlock.release(path)
        raise ValidationError(str(path), f"holds the output set of `{old.get('command')}` ({len(old['files'])} "
                                         f"files): write the {command} outputs into another folder (nothing was "
                                         "changed)")
    return path


def _journal(outdir: Path) -> set:
    """The files a publication cut short was replacing (:data:`JOURNAL`), or none."""
    try:
        data = json.loads((Path(outdir) / JOURNAL).read_text(encoding="utf-8"))
        return {n for n in data["files"] if isinstance(n, str) and _NAME.match(n)}
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def read_manifest(outdir) -> dict | None:
    """The folder's manifest, or None where it has none (or an unreadable one)."""
    path = Path(outdir) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), dict):
        return None
    return data


def verified(outdir, name: str, what: str = "output") -> Path:
    """The path of ``name`` in the output set of ``outdir``, after checking the manifest lists it and its size and
    SHA-256 match; a :class:`ValidationError` naming the folder or file and what to do otherwise."""
    outdir = Path(outdir)
    if not outdir.is_dir():
        raise ValidationError(str(outdir), f"{'is a file, not a folder' if outdir.exists() else 'no such folder'} "
                                           f"(expected the folder of a {what})")
    m = read_manifest(outdir)
    if m is None:
        raise ValidationError(str(outdir), f"no complete {what} here (no {MANIFEST}: the run that wrote this folder "
                                           "was interrupted while publishing, or it is not a pem output folder, or "
                                           "an older version wrote it): run the command again into this folder")
    entry = m["files"].get(name)
    path = outdir / name
    if entry is None:
        raise ValidationError(str(path), f"not part of the output set in {outdir} (its {m.get('command')} run wrote "
                                         f"{', '.join(sorted(m['files']))})")
    try:
        size = path.stat().st_size
    except OSError:
        raise ValidationError(str(path), "listed in the manifest but missing: run the command again") from None
    if size != entry.get("bytes") or _sha256(path) != entry.get("sha256"):
        raise ValidationError(str(path), "changed since its run wrote it (size or SHA-256 differ from "
                                         f"{MANIFEST}): run the command again")
    return path


def _as_written(path: Path, entry) -> bool:
    """Whether ``path`` is still what its manifest ``entry`` says the run wrote (or is gone): a regular file of the
    listed size and SHA-256. Only such files does a publication remove or replace."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return True
    if not stat.S_ISREG(st.st_mode) or not isinstance(entry, dict):
        return False
    return st.st_size == entry.get("bytes") and _sha256(path) == entry.get("sha256")


def _remove_dead_staging(outdir: Path) -> None:
    """Staging folders of processes that no longer run (killed mid-write) go."""
    for d in outdir.glob(STAGING_PREFIX + "*"):
        try:
            pid = int(d.name[len(STAGING_PREFIX):].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not outlock.alive(pid):
            _rmtree(d)


class OutputSet:
    """The files of one command's run: write them under :attr:`staging`, then :meth:`publish`.

    Use as a context manager: leaving it with an exception discards the staging folder and leaves the previous
    set as it was. ``extend=True`` (``plot`` into a run's folder) keeps the files of the current set and adds or
    replaces its own.
    """

    def __init__(self, outdir, command: str, *, extend: bool = False):
        held = outlock.holds(outdir)   # the command line locked it for the whole command: it keeps it
        self.outdir = output_folder(outdir, None if extend else command)
        self._own_lock = not held and outlock.holds(self.outdir)   # taken here (library use): given back on exit
        self.command = command
        self.extend = extend
        try:
            _remove_dead_staging(self.outdir)
            self.staging = Path(unique_name(self.outdir, f"{STAGING_PREFIX}{os.getpid()}-", "",
                                            lambda p: os.mkdir(p, 0o700)))
        except BaseException:
            self._unlock()
            raise
        self.published = False

    def _unlock(self) -> None:
        if self._own_lock:
            outlock.release(self.outdir)
            self._own_lock = False

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, kind, value, tb) -> None:
        try:
            self.staging.rmdir()   # published: its files moved out, it is empty
        except FileNotFoundError:
            pass
        except OSError:            # something left in it (a failed run): remove it whole
            _rmtree(self.staging)
        finally:
            self._unlock()

    def publish(self, *, complete: bool = True, extra: dict | None = None) -> dict:
        """Move the staged files into the output folder as one set; returns the manifest."""
        names = sorted(p.name for p in self.staging.iterdir() if not p.name.startswith("."))
        for name in names:
            if not _NAME.match(name) or not (self.staging / name).is_file():
                raise ValueError(f"output set: unexpected entry {name!r}")
        files = {}
        for name in names:
            p = self.staging / name
            _fsync_path(p)
            files[name] = {"bytes": p.stat().st_size, "sha256": _sha256(p)}
        old = read_manifest(self.outdir)
        # ours to replace: what the set's manifest lists, and what a publication cut short was moving
        previous = {n for n in old["files"] if _NAME.match(n)} if old is not None else set()
        edited = sorted(n for n in previous if not _as_written(self.outdir / n, old["files"][n]))
        if edited:  # a listed file edited since (or replaced by a folder): the user's now
            one = len(edited) == 1
            raise ValidationError(str(self.outdir), f"{', '.join(edited)} in it {'has' if one else 'have'} changed "
                                                    f"since the run that wrote {'it' if one else 'them'} (size or "
                                                    f"SHA-256 differ from {MANIFEST}, or not a file): move "
                                                    f"{'it' if one else 'them'} away or write into another folder "
                                                    "(nothing was changed)")
        previous |= _journal(self.outdir)
        mine = sorted(n for n in names if (self.outdir / n).exists() and n not in previous)
        if mine:
            raise ValidationError(str(self.outdir), f"{', '.join(mine)} in it {'is' if len(mine) == 1 else 'are'} not "
                                                    "listed by an output set of this tool (a file of your own, or an "
                                                    "older version's): move them away or write into another folder "
                                                    "(nothing was changed)")
        kept = {}
        if self.extend and old is not None:
            kept = {n: e for n, e in old["files"].items() if n in previous and n not in files}
        command = self.command
        if self.extend and old is not None:   # plot's PNGs join the run's set: its command and completeness stay
            command, complete = old.get("command", command), bool(complete) and bool(old.get("complete", True))
        manifest = {"format": FORMAT, "command": command, "complete": bool(complete),
                    "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "files": {**kept, **files}, **(extra or {})}
        with atomic_open(self.outdir / JOURNAL, "w", encoding="utf-8") as fh:
            json.dump({"files": sorted(previous | set(names))}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        # From here until the new manifest is in place the folder holds no set that a reader trusts.
        if old is not None or (self.outdir / MANIFEST).exists():
            (self.outdir / MANIFEST).unlink(missing_ok=True)
            _fsync_path(self.outdir, directory=True)
        for name in previous - set(files) - set(kept):
            (self.outdir / name).unlink(missing_ok=True)
        for name in names:
            os.replace(self.staging / name, self.outdir / name)
        _fsync_path(self.outdir, directory=True)
        with atomic_open(self.outdir / MANIFEST, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        (self.outdir / JOURNAL).unlink(missing_ok=True)
        _fsync_path(self.outdir, directory=True)
        self.published = True
        return manifest


def _rmtree(path) -> None:
    import shutil  # only when a folder goes: its import (with bz2 and lzma) is ~2 ms of a short run

    shutil.rmtree(path, ignore_errors=True)
