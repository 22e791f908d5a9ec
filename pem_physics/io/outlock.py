"""An exclusive lock on an output folder for the whole of one command.

Two commands writing into one output folder at once (``run … -o out`` twice, ``plot`` into a folder a run is
writing) would each publish a set over the other's, and one result would be silently gone. So a command takes
the folder's lock before it runs (:func:`acquire`) and keeps it until it ends; a second command asking for it is
refused at once, with the process id of the holder.

The lock is a file :data:`LOCK` in the folder holding the holder's process id. Where ``fcntl`` exists (Linux,
macOS) the file is locked with ``flock``: the operating system drops the lock when its process ends, however it
ends, so a killed command never blocks the folder. Elsewhere (Windows) the file is created exclusively
(``O_EXCL``); one naming a process that no longer runs is stale and is removed. The file is removed when the
lock is released, so a folder left empty is empty.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from pathlib import Path

from ..errors import ValidationError

try:
    import fcntl
except ImportError:   # Windows
    fcntl = None

LOCK = ".pem-lock"
#: A lock file without a process id in it older than this (s) is a creator that died between creating and
#: writing it (O_EXCL locks only): stale.
_UNWRITTEN_STALE_S = 30.0
#: Folder (real path) → (descriptor, lock file) of the locks this process holds.
_HELD: dict = {}


def key(folder) -> str:
    """The name under which a folder's lock is held: its real path (two spellings of one folder share one)."""
    return os.path.realpath(os.fspath(folder))


def holds(folder) -> bool:
    """Whether this process holds the lock of ``folder`` (False for anything that cannot name a folder)."""
    try:
        return key(folder) in _HELD
    except (TypeError, ValueError, OSError):
        return False


def acquire(folder) -> bool:
    """Lock the existing folder ``folder`` for this process until :func:`release`; True when this call took the lock,
    False when this process held it already. A :class:`ValidationError` naming the folder and the process holding it
    when another one does."""
    k = key(folder)
    if k in _HELD:
        return False
    path = Path(folder) / LOCK
    fd = None
    if fcntl is not None:
        fd = _flock(Path(folder), path)
    if fd is None:   # no fcntl, or a file system without flock
        fd = _exclusive(Path(folder), path)
    _HELD[k] = (fd, path)
    return True


def release(folder) -> None:
    """Give the lock of ``folder`` back (nothing if this process does not hold it)."""
    fd, path = _HELD.pop(key(folder), (None, None))
    if fd is None:
        return
    if fcntl is not None:   # removed while still locked: no one can lock the name we are about to drop
        path.unlink(missing_ok=True)
        os.close(fd)
    else:                   # Windows removes no file a process has open
        os.close(fd)
        path.unlink(missing_ok=True)


def release_all() -> None:
    """Give back every lock this process holds (the command line, as a command ends)."""
    for k in list(_HELD):
        release(k)


def _busy(folder: Path, pid) -> ValidationError:
    who = f"pid {pid}" if pid else "its pid not yet written"
    return ValidationError(str(folder), f"in use by another pem command ({who}): wait for it to end or choose "
                                        "another output folder (-o)")


def _read_pid(path: Path):
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _write_pid(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode("ascii"))


def _flock(folder: Path, path: Path):
    """The descriptor of ``path`` locked with ``flock``, or None where the file system cannot lock."""
    for _ in range(100):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise _busy(folder, _read_pid(path)) from None
            return None   # ENOLCK, EOPNOTSUPP (some network file systems): the O_EXCL lock instead
        try:   # its holder may have removed the file between our open and lock: ours must be the file at the name
            st, mine = os.stat(path), os.fstat(fd)
            if (st.st_ino, st.st_dev) == (mine.st_ino, mine.st_dev):
                _write_pid(fd)
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)
    raise _busy(folder, _read_pid(path))


def _exclusive(folder: Path, path: Path) -> int:
    """The descriptor of ``path`` created exclusively; a stale one (its process gone) is removed first."""
    for _ in range(3):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pid = _read_pid(path)
            try:
                age = time.time() - path.stat().st_mtime
            except FileNotFoundError:
                continue
            if (pid is not None and pid != os.getpid() and not alive(pid)) or \
                    (pid is None and age > _UNWRITTEN_STALE_S):
                try:
                    path.unlink()   # Windows refuses while its (live) holder has it open: then it is not stale
                except FileNotFoundError:
                    pass
                except OSError:
                    raise _busy(folder, pid) from None
                continue
            raise _busy(folder, pid) from None
        _write_pid(fd)
        return fd
    raise _busy(folder, _read_pid(path))


def alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (on Windows without ``os.kill``, which would end it)."""
    if sys.platform == "win32":
        import ctypes

        kernel = ctypes.WinDLL("kernel32", use_last_error=True)
        handle = kernel.OpenProcess(0x1000, False, pid)   # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return ctypes.get_last_error() == 5   # ERROR_ACCESS_DENIED: it exists, another user's
        code = ctypes.c_ulong()
        try:
            return bool(kernel.GetExitCodeProcess(handle, ctypes.byref(code))) and code.value == 259  # STILL_ACTIVE
        finally:
            kernel.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
