"""PC2 point caches (the Lightwave / 3ds Max format Blender's Mesh Cache modifier reads).

Layout, little-endian, no padding::

    char[12]  b"POINTCACHE2\\0"
    int32     version           (1)
    int32     number of points  N
    float32   start frame
    float32   sample rate       (frames between samples)
    int32     number of samples S
    float32   x, y, z per point per sample: S × N × 3

so a file is 32 + 12 · N · S bytes. Blender's Mesh Cache modifier (time mode *Frame*, play mode
*Scene*) reads sample ``scene frame · frame_scale − frame_start`` and ignores the header's start
frame and sample rate; they are written for other readers.
"""

from __future__ import annotations

import math
import os
import struct

import numpy as np

from .files import atomic_open

MAGIC = b"POINTCACHE2\0"
VERSION = 1
#: magic, version, number of points, start frame, sample rate, number of samples
HEADER = struct.Struct("<12siiffi")


class PC2Error(ValueError):
    """A file that is not a valid PC2 point cache, or data that cannot be written as one."""


def write_pc2(path: str | os.PathLike, samples, start_frame: float = 0.0, sample_rate: float = 1.0) -> None:
    """Write ``samples`` (S, N, 3): S samples of N points (x, y, z), stored as float32.

    Atomic: the file appears complete or not at all. Raises :class:`PC2Error` for a wrong shape,
    no samples or points, non-finite values (named by sample and point) or a bad header value.
    """
    a = np.asarray(samples)
    if a.ndim != 3 or a.shape[2] != 3:
        raise PC2Error(f"samples must have shape (samples, points, 3), got {a.shape}")
    n_samples, n_points = a.shape[0], a.shape[1]
    if n_samples < 1 or n_points < 1:
        raise PC2Error(f"samples must hold at least one sample of one point, got shape {a.shape}")
    if n_points > 2**31 - 1 or n_samples > 2**31 - 1:
        raise PC2Error(f"shape {a.shape} does not fit the format's int32 counts")
    with np.errstate(over="ignore", invalid="ignore"):  # a value float32 cannot hold is reported just below
        a32 = np.ascontiguousarray(a, dtype="<f4")
    bad = np.argwhere(~np.isfinite(a32))
    if bad.size:
        s, i, k = (int(x) for x in bad[0])
        raise PC2Error(f"samples[{s}, {i}, {k}] = {float(a[s, i, k])!r} is not finite (as float32)")
    for name, value in (("start_frame", start_frame), ("sample_rate", sample_rate)):
        if not math.isfinite(value):
            raise PC2Error(f"{name} = {value!r} must be finite")
    if not sample_rate > 0:
        raise PC2Error(f"sample_rate = {sample_rate!r} must be > 0")
    header = HEADER.pack(MAGIC, VERSION, n_points, float(start_frame), float(sample_rate), n_samples)
    with atomic_open(path, "wb") as fh:
        fh.write(header)
        fh.write(a32.tobytes())


def read_pc2_header(path: str | os.PathLike) -> dict:
    """The header as a dict: ``version``, ``n_points``, ``start_frame``, ``sample_rate``, ``n_samples``."""
    with open(path, "rb") as fh:
        raw = fh.read(HEADER.size)
    return _parse_header(raw, path, os.path.getsize(path))


def read_pc2(path: str | os.PathLike) -> tuple[np.ndarray, dict]:
    """Read a PC2 file: (samples (S, N, 3) float32, header dict as :func:`read_pc2_header`).

    Raises :class:`PC2Error` naming the file and what is wrong (magic, version, counts, size).
    """
    with open(path, "rb") as fh:
        raw = fh.read()
    head = _parse_header(raw[:HEADER.size], path, len(raw))
    data = np.frombuffer(raw, dtype="<f4", offset=HEADER.size)
    return data.reshape(head["n_samples"], head["n_points"], 3).astype(np.float32), head


def _parse_header(raw: bytes, path, size: int) -> dict:
    if len(raw) < HEADER.size:
        raise PC2Error(f"{os.fspath(path)}: {len(raw)} bytes is shorter than the {HEADER.size}-byte PC2 header")
    magic, version, n_points, start, rate, n_samples = HEADER.unpack(raw)
    if magic != MAGIC:
        raise PC2Error(f"{os.fspath(path)}: not a PC2 file (starts with {magic!r}, expected {MAGIC!r})")
    if version != VERSION:
        raise PC2Error(f"{os.fspath(path)}: PC2 version {version} is not supported (only {VERSION})")
    if n_points < 1 or n_samples < 1:
        raise PC2Error(f"{os.fspath(path)}: header says {n_points} points and {n_samples} samples (need >= 1 each)")
    expected = HEADER.size + 12 * n_points * n_samples
    if size != expected:
        raise PC2Error(f"{os.fspath(path)}: {size} bytes, but {n_samples} samples of {n_points} points need "
                       f"{expected}")
    return {"version": version, "n_points": n_points, "start_frame": start, "sample_rate": rate,
            "n_samples": n_samples}
