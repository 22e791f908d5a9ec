"""A scene file's motions (:mod:`.scenefile`): a driven body's or a pivot's, given inline (an orbit, an oscillation,
a uniform rotation, a table of samples) or as a CSV table beside the scene file, every sample checked and named by
its line or index."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ..errors import ValidationError
from ..model.analytic import Oscillation, UniformRotation
from ..model.motion import MIN_SAMPLES, TabulatedMotion
from ..model.scene import ConstantVelocity, EllipticOrbit
from .files import beside_scene, read_input_text
from .scenefile_keys import BODY_KEYS, MAX_MAGNITUDE, MOTION_KEYS, PIVOT_MOTIONS, TABLE_COLUMNS, TABLE_QUATERNION
from .scenefile_values import Units, _choice, _describe, _get, _number, _string, _table, _vector


def _motion(d, path, u: Units, base_dir=None, kinds=tuple(MOTION_KEYS), pivot: bool = False):
    if not isinstance(d, dict):
        raise ValidationError(path, f"expected a table, got {_describe(d)}")
    if pivot and "kind" not in d:
        d = {"kind": "tabulated", **d}    # a pivot's table may leave its kind out
    if pivot and d["kind"] in MOTION_KEYS and d["kind"] not in kinds:
        raise ValidationError(f"{path}.kind", f"a pivot is a point: it moves by a table, an oscillation or a uniform "
                                              f"rotation ({', '.join(map(repr, kinds))}), not {d['kind']!r}")
    kind = _get(d, "kind", path, lambda x, p: _choice(x, p, kinds), expected=" or ".join(map(repr, kinds)))
    d = _table(d, path, MOTION_KEYS[kind], parent=BODY_KEYS)
    if kind == "tabulated":
        return _tabulated(d, path, u, base_dir, pivot=pivot)
    if kind == "oscillation":
        return _oscillation(d, path, u)
    if kind == "uniform_rotation":
        return UniformRotation(
            axis=_get(d, "axis", path, lambda x, p: _vector(x, p, nonzero=True), expected="3 numbers (a direction)"),
            angular_velocity=_get(d, "angular_velocity", path, lambda x, p: _number(x, p, u.rate),
                                  expected="a number (1/time)"),
            center=_get(d, "center", path, lambda x, p: _vector(x, p, u.L), default=None))
    if kind == "constant_velocity":
        return ConstantVelocity(_get(d, "velocity", path, lambda x, p: _vector(x, p, u.velocity),
                                     expected="3 numbers (length/time)"))
    return EllipticOrbit(
        center=_get(d, "center", path, lambda x, p: _vector(x, p, u.L), default=np.zeros(3)),
        r1=_get(d, "r1", path, lambda x, p: _vector(x, p, u.L), expected="3 numbers (length)"),
        r2=_get(d, "r2", path, lambda x, p: _vector(x, p, u.L), expected="3 numbers (length)"),
        angular_velocity=_get(d, "angular_velocity", path, lambda x, p: _number(x, p, u.rate),
                              expected="a number (1/time)"),
        phase=_get(d, "phase", path, lambda x, p: _number(x, p), default=0.0))


def _oscillation(d, path, u: Units) -> Oscillation:
    """An oscillation: ``amplitudes`` (a list of 3-vectors, length), ``angular_frequencies`` (one per amplitude,
    1/time), ``phases`` (radians, default 0) and ``center`` (length, default the body's position)."""
    def listed(key, read, expected):
        def each(x, p):
            if not isinstance(x, list) or not x:
                raise ValidationError(p, f"expected a list of one or more {expected}, got {_describe(x)}")
            return [read(v, f"{p}[{i}]") for i, v in enumerate(x)]
        return _get(d, key, path, each, expected=f"a list of {expected}")

    a = listed("amplitudes", lambda x, p: _vector(x, p, u.L), "3-vectors (length)")
    w = listed("angular_frequencies", lambda x, p: _number(x, p, u.rate), "numbers (1/time)")
    phases = listed("phases", lambda x, p: _number(x, p), "numbers (radians)") if "phases" in d else None
    return Oscillation(amplitudes=a, angular_frequencies=w, phases=phases,
                       center=_get(d, "center", path, lambda x, p: _vector(x, p, u.L), default=None))


def _pivot_motion(d, path, u: Units, base_dir):
    """A pivot's motion: a table (its ``kind`` may be left out), an oscillation or a uniform rotation."""
    return _motion(d, path, u, base_dir, kinds=PIVOT_MOTIONS, pivot=True)


def _tabulated(d, path, u: Units, base_dir, pivot: bool = False) -> TabulatedMotion:
    """A tabulated motion: ``times`` (time units) and ``positions`` (length) inline, with ``orientations`` (unit
    quaternions w, x, y, z) for a driven body, or ``file``: a CSV file (relative to the scene file) with a header
    row t, x, y, z [, qw, qx, qy, qz]. The table itself is checked by the model (sorted, finite, no jumps)."""
    if "file" in d:
        extra = [k for k in ("times", "positions", "orientations") if k in d]
        if extra:
            raise ValidationError(f"{path}.{extra[0]}", "give either file (a CSV table) or times and positions")
        t, x, q, where = _table_file(d["file"], f"{path}.file", base_dir)
        _check_times(t, u.T, where, "the rows")
    else:
        for key in ("times", "positions"):
            if key not in d:
                raise ValidationError(f"{path}.{key}", "missing: a tabulated motion needs times and positions "
                                                       "(or a CSV file)")
        if not isinstance(d["times"], list):
            raise ValidationError(f"{path}.times", f"expected a list of times, got {_describe(d['times'])}")
        t = np.array([_number(v, f"{path}.times[{i}]") for i, v in enumerate(d["times"])])
        if not isinstance(d["positions"], list):
            raise ValidationError(f"{path}.positions", f"expected a list of positions, got {_describe(d['positions'])}")
        x = np.array([_vector(v, f"{path}.positions[{i}]") for i, v in enumerate(d["positions"])]).reshape(-1, 3)
        _check_times(t, u.T, lambda k: f"{path}.times" + ("" if k is None else f"[{k}]"), "the samples")
        q = None
        if "orientations" in d:
            if not isinstance(d["orientations"], list):
                raise ValidationError(f"{path}.orientations", "expected a list of quaternions (w, x, y, z)")
            q = np.array([_vector(v, f"{path}.orientations[{i}]", n=4)
                          for i, v in enumerate(d["orientations"])]).reshape(-1, 4)
    if pivot and q is not None:
        raise ValidationError(f"{path}.orientations", "a pivot is a point: give its positions only")
    if q is not None:   # as a body's own quaternion: unit length to 1e-3, not normalised from any length
        norm = np.linalg.norm(q, axis=1)
        off = np.flatnonzero(~(np.abs(norm - 1.0) <= 1e-3))
        if off.size:
            k = int(off[0])
            at = where(k) if "file" in d else f"{path}.orientations[{k}]"
            raise ValidationError(at, f"expected a unit quaternion (w, x, y, z), got length {norm[k]:.6g}")
    out = np.flatnonzero(~np.all(np.abs(x * u.L) <= MAX_MAGNITUDE, axis=1))   # a scene's numbers' range
    if out.size:
        k = int(out[0])
        shown = ", ".join(f"{v:g}" for v in x[k])
        raise ValidationError(where(k) if "file" in d else f"{path}.positions[{k}]",
                              f"position [{shown}] is out of range (at most {MAX_MAGNITUDE:g} in SI units)")
    return TabulatedMotion(t * u.T, x * u.L, q)


def _table_file(value, path, base_dir):
    """(times (K,), positions (K,3), quaternions (K,4) or None, where) of a motion's CSV file, in the scene's units;
    ``where(k)`` names the file's line of sample k (the file itself for None). Confined as a UDF's
    ``\\include`` is: a relative path inside the scene file's folder (the working folder for a scene given as
    text), no ``..`` or link leading out, a regular file of a sane size; a rejected file's content is never
    echoed."""
    import csv

    name = _string(value, path)
    p = beside_scene(name, base_dir if base_dir is not None else Path.cwd(), path, "motion table")
    text = read_input_text(p, "motion table")
    # (line number, cells) of each row; blank and comment lines skipped, so that errors name the file's own lines
    rows = [(n, next(csv.reader([line]))) for n, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        raise ValidationError(str(p), "empty: expected a header row t, x, y, z [, qw, qx, qy, qz] and one row a sample")
    line, first = rows[0]
    head = [c.strip().lower() for c in first]
    if tuple(head) not in (TABLE_COLUMNS, TABLE_COLUMNS + TABLE_QUATERNION):
        raise ValidationError(f"{p}:{line}", "the first row is not the header: expected t, x, y, z or t, x, y, z, "
                                             "qw, qx, qy, qz")
    rows = rows[1:]
    out = np.empty((len(rows), len(head)))
    for i, (line, row) in enumerate(rows):
        if len(row) != len(head):
            raise ValidationError(f"{p}:{line}", f"{len(row)} values, expected {len(head)} ({', '.join(head)})")
        for j, cell in enumerate(row):
            # a plain decimal number: Python's float() also takes 1_0 and digits of other scripts
            if not _CSV_NUMBER.fullmatch(cell.strip()):
                raise ValidationError(f"{p}:{line}", f"column {head[j]}: {cell.strip()[:24]!r} is not a "
                                                     "number (digits, a point, an exponent)")
            out[i, j] = float(cell)
            if not math.isfinite(out[i, j]):
                raise ValidationError(f"{p}:{line}", f"column {head[j]}: {cell.strip()[:24]!r} is not a finite "
                                                     "number: every sample needs a value")
    lines = [line for line, _ in rows]
    return (out[:, 0], out[:, 1:4], (out[:, 4:8] if len(head) == 8 else None),
            lambda k: str(p) if k is None else f"{p}:{lines[k]}")


#: A number in a motion table: decimal digits with an optional point and exponent (inf and nan are named apart).
_CSV_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)", re.I | re.A)
#: The longest span of a motion table's times (s): its spline holds powers up to the third of a sample interval, so
#: far beyond it the arithmetic overflows (and no run is that long).
MAX_TABLE_SPAN = 1e100


def _check_times(t: np.ndarray, seconds: float, where, rows: str) -> None:
    """A motion table's times (K,) as written (``seconds`` each), before the model checks its samples: enough of
    them, strictly increasing and within :data:`MAX_TABLE_SPAN`. Each error names the sample as ``where(k)`` (a
    file's line, a list's index; the whole table for None) in the numbers written; ``rows``: the samples in the
    user's words."""
    if len(t) < MIN_SAMPLES:
        raise ValidationError(where(None), f"{len(t)} sample(s): a table needs at least {MIN_SAMPLES} (the spline's "
                                           "end slopes come from four samples); sample the motion more often")
    step = np.diff(t)
    if np.any(step <= 0):
        k = int(np.argmax(step <= 0)) + 1
        raise ValidationError(where(k), f"t = {float(t[k])!r} does not come after t = {float(t[k - 1])!r}: times "
                                        f"must increase strictly (sort {rows}, drop repeated times)")
    if (t[-1] - t[0]) * seconds > MAX_TABLE_SPAN:
        raise ValidationError(where(len(t) - 1), f"t = {float(t[-1])!r}: the table spans more than "
                                                 f"{MAX_TABLE_SPAN:g} s, beyond what its spline can hold; give times "
                                                 "over the run, in the scene's time unit")
