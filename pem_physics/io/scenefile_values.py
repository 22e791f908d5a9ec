"""How a scene file's values are read (:mod:`.scenefile`): tables with only their own keys (a misspelt key named,
with the closest valid one), numbers and vectors within range and in the file's units, strings, choices, and a
body's or a mesh's orientation given one of three ways. Each error names the key as the file spells it."""

from __future__ import annotations

import difflib

import numpy as np

from ..errors import ValidationError, join_path
from ..model import validate as _validate
from ..model.rotations import axis_angle_matrix
from .scenefile_keys import MAX_MAGNITUDE, ORIENTATION_KEYS

_REQUIRED = object()


# ---------------------------------------------------------------------------- units

class Units:
    """SI size of the file's units of length (m), mass (kg), time (s) and current (A)."""

    def __init__(self, length=1.0, mass=1.0, time=1.0, ampere=1.0):
        self.L, self.M, self.T, self.A = float(length), float(mass), float(time), float(ampere)

    # Derived units, SI per file unit (used as multipliers on read).
    @property
    def density(self):
        return self.M / self.L**3

    @property
    def inertia(self):
        return self.M * self.L**2

    @property
    def rate(self):
        return 1.0 / self.T

    @property
    def velocity(self):
        return self.L / self.T

    @property
    def accel(self):
        return self.L / self.T**2

    @property
    def friction(self):
        return self.M * self.L**2 / self.T

    @property
    def field(self):
        return self.M / (self.A * self.T**2)

    @property
    def mu0(self):
        return self.M * self.L / (self.T**2 * self.A**2)

    @property
    def moment(self):
        return self.A * self.L**2


SI = Units()


# ---------------------------------------------------------------------------- reading helpers

_describe = _validate.describe   # how a TOML value is called in a message (one describer for the model and the files)


def _table(value, path: str, allowed, what: str = "table", parent=()) -> dict:
    """``value`` as a dict with only ``allowed`` keys (unknown keys are errors with a suggestion).

    parent: the keys of the enclosing table, to explain the classic TOML slip of
    writing a key below a ``[sub.table]`` header when it belongs above it.
    """
    if not isinstance(value, dict):
        raise ValidationError(path, f"expected a {what}, got {_describe(value)}")
    for key in value:
        if key not in allowed:
            raise ValidationError(join_path(path, str(key)), "unknown key; " + _hint(str(key), allowed, parent))
    return value


def _hint(key: str, allowed, parent=()) -> str:
    close = difflib.get_close_matches(key, [str(a) for a in allowed], n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    if key in parent:
        return (f"{key!r} belongs to the enclosing table: in TOML, keys below a [table] header go into that "
                "table, so write it above the header")
    return f"valid keys: {', '.join(allowed)}"


def _number(value, path: str, unit: float = 1.0, *, positive=False, nonnegative=False) -> float:
    """A finite number (:func:`..model.validate.number`) times ``unit``; the result must stay in range."""
    out = _validate.number(value, path, positive=positive, nonnegative=nonnegative) * unit
    if not abs(out) <= MAX_MAGNITUDE:
        raise ValidationError(path, f"{value!r} is out of range (at most {MAX_MAGNITUDE:g} in SI units)")
    return out


def _vector(value, path: str, unit: float = 1.0, n: int = 3, *, nonzero=False) -> np.ndarray:
    """A vector of ``n`` finite numbers (:func:`..model.validate.vector`) times ``unit``, each in range."""
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise ValidationError(path, f"expected {n} numbers, got {_describe(value)}")
    return np.array([_number(x, f"{path}[{i}]", unit) for i, x in enumerate(_validate.vector(value, path, n,
                                                                                      nonzero=nonzero))])


def _matrix(value, path: str, rows: int, unit: float = 1.0) -> np.ndarray:
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != rows:
        got = f"{len(value)} rows" if isinstance(value, (list, tuple)) else _describe(value)
        raise ValidationError(path, f"expected {rows} rows of 3 numbers, got {got}")
    return np.stack([_vector(r, f"{path}[{i}]", unit) for i, r in enumerate(value)])


def _string(value, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(path, f"expected a non-empty string, got {_describe(value)}")
    return value


def _choice(value, path: str, options) -> str:
    if not isinstance(value, str) or value not in options:
        close = difflib.get_close_matches(value, options, n=1) if isinstance(value, str) else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValidationError(path, f"expected one of {', '.join(map(repr, options))}, got {_describe(value)}{hint}")
    return value


def _get(d: dict, key: str, path: str, read, default=_REQUIRED, expected: str = ""):
    """``read(d[key], path.key)``, or ``default`` when the key is absent (a missing required key is an error)."""
    p = join_path(path, key)
    if key not in d:
        if default is _REQUIRED:
            raise ValidationError(p, f"missing; expected {expected}" if expected else "missing")
        return default
    return read(d[key], p)


#: The largest |angle| of ``euler_deg`` (°): at 1e6° a double still holds the angle to ~1e-10°, far beyond it
#: nothing of the fraction of a turn (at 1e17° the spacing of doubles is 16°).
MAX_ANGLE_DEG = 1e6


def euler_deg_orientation(angles_deg) -> np.ndarray:
    """Orientation U (rows = body axes in lab) of intrinsic Z-Y'-X'' angles (yaw, pitch, roll) in degrees.

    The body → lab rotation is Rz(yaw)·Ry(pitch)·Rx(roll), the inverse of
    :func:`pem_physics.model.rotations.euler_zyx` (the CSV output's angles).
    """
    yaw, pitch, roll = np.radians(np.asarray(angles_deg, dtype=float))
    R = (axis_angle_matrix(np.array([0.0, 0.0, 1.0]), yaw) @ axis_angle_matrix(np.array([0.0, 1.0, 0.0]), pitch)
         @ axis_angle_matrix(np.array([1.0, 0.0, 0.0]), roll))
    return R.T


def _orientation(d: dict, path: str) -> np.ndarray | None:
    """The orientation U from exactly one of quaternion / axes / euler_deg (None when none is given)."""
    given = [k for k in ORIENTATION_KEYS if k in d]
    if len(given) > 1:
        raise ValidationError(join_path(path, given[1]), f"give only one of {', '.join(given)}")
    if not given:
        return None
    key = given[0]
    p = join_path(path, key)
    if key == "quaternion":
        q = _vector(d[key], p, n=4)
        norm = float(np.linalg.norm(q))
        if not abs(norm - 1.0) <= 1e-3:
            raise ValidationError(p, f"expected a unit quaternion [w, x, y, z], got length {norm:.6g}")
        from ..model.rotations import quat_to_orientation

        return quat_to_orientation(q / norm)
    if key == "euler_deg":
        angles = _vector(d[key], p)
        for k, a in enumerate(angles):
            if abs(a) > MAX_ANGLE_DEG:   # its fraction of a turn is rounding: the orientation would be arbitrary
                raise ValidationError(f"{p}[{k}]", f"{float(a)!r}° is beyond ±{MAX_ANGLE_DEG:g}°, where rounding has "
                                                   "lost the angle's fraction of a turn; give it within ±360°")
        return euler_deg_orientation(angles)
    U = _matrix(d[key], p, 3)
    err = float(np.linalg.norm(U @ U.T - np.eye(3)))
    if not err <= 1e-6:
        raise ValidationError(p, f"rows u1, u2, u3 are not orthonormal (‖UUᵀ−I‖ = {err:.3g})")
    if np.linalg.det(U) < 0:
        raise ValidationError(p, "rows u1, u2, u3 form a left-handed frame (u3 must be u1 × u2)")
    return U
