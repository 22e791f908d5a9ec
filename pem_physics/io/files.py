"""Files written atomically (a failed or interrupted write never leaves a half-written file), and input files
read only when they are regular files of a sane size (a FIFO would block, a link to /dev/zero never ends)."""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from pathlib import Path

from ..errors import ValidationError

#: The largest text input read (scene files, PEM UDF files and their includes), bytes: such files are kilobytes;
#: one this big is a mistake (a log, a data file named by accident).
MAX_TEXT_BYTES = 64 * 2**20
#: The largest mesh file read, bytes (a 1.3M-triangle binary STL is ~65 MB).
MAX_MESH_BYTES = 2 * 2**30


def checked_input(path, what: str = "file", limit: int = MAX_TEXT_BYTES) -> Path:
    """``path`` if it is a regular file of at most ``limit`` bytes (symbolic links followed), else a
    :class:`ValidationError` naming it and saying what is wrong; nothing is opened."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise ValidationError(str(path), "no such file") from None
    except OSError as err:
        raise ValidationError(str(path), f"cannot read the {what}: {err.strerror or err}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValidationError(str(path), f"is a folder: name the {what} itself")
    if not stat.S_ISREG(st.st_mode):
        raise ValidationError(str(path), f"not a regular file (a device, pipe or socket): name a {what}")
    if st.st_size > limit:
        raise ValidationError(str(path), f"{st.st_size / 2**20:,.0f} MiB is too big for a {what} "
                                         f"(at most {limit / 2**20:,.0f} MiB): is it the right file?")
    return p


def read_input_text(path, what: str = "file", limit: int = MAX_TEXT_BYTES, errors: str = "strict") -> str:
    """The UTF-8 text of an input file checked by :func:`checked_input` (never more than ``limit`` bytes read).
    Binary data (a NUL byte) is refused; ``errors="replace"`` tolerates other bytes (PEM's UDF files may carry
    comments in a legacy Japanese encoding)."""
    p = checked_input(path, what, limit)
    try:
        with open(p, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as err:
        raise ValidationError(str(path), f"cannot read the {what}: {err.strerror or err}") from None
    if len(data) > limit:
        raise ValidationError(str(path), f"grew past {limit / 2**20:,.0f} MiB while read: is it the right file?")
    utf = _wide_unicode(data)
    if utf:   # Windows' "Unicode" (Notepad, PowerShell 5's > and Out-File): text, but not UTF-8
        raise ValidationError(str(path), f"{utf} text, not UTF-8: save the {what} as UTF-8 (an editor's \"Save "
                                         "as\" ▸ encoding UTF-8)")
    if b"\x00" in data:
        raise ValidationError(str(path), f"binary data (a NUL byte at {data.index(0)}), not text: is it a {what}?")
    try:   # utf-8-sig: a leading byte-order mark (Excel's CSV, Notepad) is not part of the text
        return data.decode("utf-8-sig", errors=errors)
    except UnicodeDecodeError as err:
        raise ValidationError(str(path), f"not UTF-8 text ({err.reason} at byte {err.start}): is it a {what}?") \
            from None


def _wide_unicode(data: bytes) -> str:
    """"UTF-16" or "UTF-32" when ``data`` begins with that encoding's byte-order mark, or is ASCII text in UTF-16
    without one (every other byte of its start NUL); else empty."""
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    head = data[:64]
    if len(head) >= 8 and len(head) % 2 == 0 and (not any(head[1::2]) and all(head[0::2])
                                                  or not any(head[0::2]) and all(head[1::2])):
        return "UTF-16"
    return ""


def name_of_file(path, default: str = "scene") -> str:
    """A scene's (or a mesh shape's) name from its file's (one without a ``name`` of its own): the stem, control
    characters and those that break a line or reverse the text (:data:`..model.scene.UNSHOWN`) as ``?`` and at
    most 200 characters, so that the name itself is never refused for a file name's sake; ``default`` for a stem
    that is empty or only spaces."""
    from ..model.scene import UNSHOWN

    stem = "".join("?" if ord(c) < 32 or ord(c) == 127 or c in UNSHOWN else c for c in Path(path).stem)
    return stem[:200] if stem.strip() else default


def beside_scene(name: str, root, key: str, what: str) -> Path:
    """The file a scene file's ``key`` names, confined as a UDF's ``\\include`` is: a relative path inside
    ``root`` (the scene file's folder), no ``..`` or link leading out; a :class:`ValidationError` naming ``key``
    otherwise. (Whether it is a regular file of a sane size is the reader's check: :func:`checked_input`.)"""
    root = Path(root)
    if Path(name).is_absolute() or name.startswith(("\\", "~")):
        raise ValidationError(key, f"{name!r}: a {what} names a file beside the scene file (a relative path inside "
                                   f"{root}), not an absolute path; copy the file there")
    p = root / name
    try:
        inside = p.resolve().is_relative_to(root.resolve())
    except (OSError, ValueError):
        inside = False
    if not inside:
        raise ValidationError(key, f"{name!r} is outside the scene file's folder ({root}); copy the file there")
    return p


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def unique_name(folder, prefix: str, suffix: str, make) -> str:
    """A new path ``folder/prefix<random>suffix``, created by ``make(path)`` (which must fail with FileExistsError
    when the path exists: ``os.mkdir``, an ``O_EXCL`` open). What ``tempfile.mkstemp``/``mkdtemp`` do, without
    importing tempfile (with random and shutil, ~3 ms of a short run's start)."""
    for _ in range(100):
        p = os.path.join(folder, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            make(p)
            return p
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused name like {prefix}…{suffix} in {folder}")


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kw):
    """Open a temporary sibling of ``path``; on success rename it to ``path``, on error remove it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # created 0666 minus the umask, as a plain open() would
    tmp = unique_name(path.parent, f".{path.name}.", ".tmp", lambda p: os.close(os.open(p, _NEW_FILE, 0o666)))
    ok = False
    try:
        with open(tmp, mode, **kw) as fh:
            yield fh
        os.replace(tmp, path)
        ok = True
    finally:
        if not ok and os.path.exists(tmp):
            os.remove(tmp)


#: Largest inflation of an .npz read (uncompressed ÷ file size): floats of a run compress a few-fold; a
#: 1.5 MB file that holds 1.6 GB of zeros (a zip bomb) is not a run's.
MAX_NPZ_RATIO = 200


def checked_npz(path, what: str = "NumPy .npz file") -> Path:
    """``path`` if it is a regular file that is a zip of at most half the available memory once inflated (a 1.5 MB
    file can hold 1.6 GB of zeros); a :class:`ValidationError` naming it otherwise. Nothing is unpickled: every
    reader loads with ``allow_pickle=False``."""
    import zipfile

    from ..engine.budget import SHARE, available_bytes, gib

    p = checked_input(path, what, limit=1 << 62)
    try:
        with zipfile.ZipFile(p) as zf:
            inflated = sum(info.file_size for info in zf.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        raise ValidationError(str(path), f"not a {what} (not a zip archive: random bytes, cut short, or another "
                                         "kind of file)") from None
    if inflated > SHARE * available_bytes():
        raise ValidationError(str(path), f"inflates to {gib(inflated)}, more than half the memory available: is it "
                                         "the right file?")
    size = p.stat().st_size
    if inflated > MAX_NPZ_RATIO * size and inflated > 16 * 2**20:
        raise ValidationError(str(path), f"inflates {inflated / size:,.0f}-fold ({gib(size)} to {gib(inflated)}): "
                                         "not arrays of a run (ours compress a few-fold); is it the right file?")
    return p
