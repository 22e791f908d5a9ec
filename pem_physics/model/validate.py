"""Small validators shared by the scene model and the file readers.

Each takes the value and the key path that names it, and either returns a
clean numpy/Python value or raises :class:`ValidationError` naming the path.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from ..errors import ValidationError

#: The largest |phase| (rad) of an orbit, a rotating field or an oscillation: 1e4 rad (~1,600 turns) still holds
#: the phase to ~2e-12 rad; far beyond it rounding loses the phase's fraction of a turn (at 1e16 rad doubles are 2 rad
#: apart), as ``euler_deg`` refuses beyond ±1e6°.
MAX_PHASE = 1e4


def phase(value, path: str) -> float:
    """A checked phase (rad): a finite number within ±:data:`MAX_PHASE`."""
    p = number(value, path)
    if abs(p) > MAX_PHASE:
        raise ValidationError(path, f"{p!r} rad is beyond ±{MAX_PHASE:g} rad, where rounding has lost the phase's "
                                    "fraction of a turn; give it within ±2π")
    return p


def number(value, path: str, *, positive: bool = False, nonnegative: bool = False) -> float:
    """A finite real number (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise ValidationError(path, f"expected a number, got {describe(value)}")
    try:
        v = float(value)
    except OverflowError:   # an integer beyond a double's range
        raise ValidationError(path, f"number too large: {value}") from None
    if not math.isfinite(v):
        raise ValidationError(path, f"expected a finite number, got {v}")
    if positive and not v > 0:
        raise ValidationError(path, f"expected a positive number, got {value!r}")
    if nonnegative and v < 0:
        raise ValidationError(path, f"expected a number ≥ 0, got {value!r}")
    return v


def integer(value, path: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValidationError(path, f"expected an integer, got {describe(value)}")
    if minimum is not None and value < minimum:
        raise ValidationError(path, f"expected an integer ≥ {minimum}, got {value}")
    return int(value)


def vector(value, path: str, n: int = 3, *, nonzero: bool = False, unit: bool = False) -> np.ndarray:
    """A finite vector of ``n`` numbers; ``unit=True`` normalises a non-zero vector."""
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__"):
        raise ValidationError(path, f"expected {n} numbers, got {describe(value)}")
    if len(value) != n:
        raise ValidationError(path, f"expected {n} numbers, got {len(value)}")
    out = np.array([number(v, f"{path}[{i}]") for i, v in enumerate(value)], dtype=float)
    if (nonzero or unit) and not np.linalg.norm(out) > 0:
        raise ValidationError(path, "expected a non-zero vector")
    if unit:
        out = out / np.linalg.norm(out)
    return out


def rotation(value, path: str, tol: float = 1e-6) -> np.ndarray:
    """An orientation matrix (rows u1, u2, u3): orthonormal to ``tol`` and right-handed.

    Returned re-orthonormalised to machine precision so that small rounding in a
    file does not feed an integrator a slightly sheared frame.
    """
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 3:
        raise ValidationError(path, "expected 3 rows u1, u2, u3 of 3 numbers each")
    U = np.stack([vector(row, f"{path}[{i}]") for i, row in enumerate(value)])
    err = float(np.linalg.norm(U @ U.T - np.eye(3)))
    if err > tol:
        raise ValidationError(path, f"rows u1, u2, u3 are not orthonormal (‖UUᵀ−I‖ = {err:.3g})")
    if np.linalg.det(U) < 0:
        raise ValidationError(path, "rows u1, u2, u3 form a left-handed frame (u3 must be u1 × u2)")
    from .rotations import orthonormalize

    return orthonormalize(U)


#: Longest body or wall name: names label CSV columns, plots and events (a 50 MB name made a 1.3 GB CSV).
MAX_NAME = 200


def name(value, path: str) -> str:
    """A name: a non-empty string of at most :data:`MAX_NAME` characters without control characters (a newline or
    NUL would break the CSV header, the events file and PEM's UDF files)."""
    if not isinstance(value, str) or not value:
        raise ValidationError(path, "expected a non-empty string")
    if len(value) > MAX_NAME:
        raise ValidationError(path, f"a name of {len(value):,} characters; at most {MAX_NAME} are allowed")
    bad = next((c for c in value if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        raise ValidationError(path, f"a control character ({bad!r}) in the name {value[:40]!r}: use printable "
                                    "characters")
    return value


def choice(value, path: str, options) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValidationError(path, f"expected one of {', '.join(map(repr, options))}, got {describe(value)}")
    return value


def describe(value) -> str:
    """How a value is called in a message (in a scene file's words: a TOML value's kind and, short, itself)."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        text = repr(value)
        return "the string " + (text if len(text) <= 40 else text[:37] + "...'")
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)} item{'s' * (len(value) != 1)}"
    return f"a {type(value).__name__}"
