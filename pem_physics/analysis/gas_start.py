"""The start of a ``gas`` run: a saved state read back (a gas run's ``gas.npz`` or an npz of arrays, checked
field by field) or a new gas made from the checked config (:mod:`.gas_config`); and the error of a gas scene's key
(``gas.KEY``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ValidationError

if TYPE_CHECKING:
    from ..gas.state import GasState


def gas_error(key: str, message: str) -> ValidationError:
    """The error of the gas scene's key ``key`` (``gas.KEY``; on the command line the option ``--KEY``)."""
    return ValidationError(f"gas.{key}", message)


_err = gas_error


def load_state(path) -> GasState:
    """A state from an npz file: a gas run's ``gas.npz`` (its exact final state, else its last record) or a
    file with ``positions`` (N, d), ``velocities`` (N, d), ``radii``, ``masses``, ``box`` (and optionally
    ``periodic``, ``time``)."""
    from ..io.files import checked_npz
    from ..io.outset import read_manifest, verified

    path = Path(path)
    try:
        checked_npz(path, "gas state (.npz)")
        m = read_manifest(path.parent)
        if m is not None and path.name in m["files"]:   # a run's output: only as that run wrote it
            verified(path.parent, path.name, "gas run")
        data = np.load(path, allow_pickle=False)
    except ValidationError as err:
        raise _err("state", f"{err.path}: {err.message}") from None
    except (OSError, ValueError) as err:
        raise _err("state", f"{path}: not a readable .npz file ({err})") from None
    with data:
        try:
            return _state_of(path, data)
        except ValidationError:
            raise
        except (ValueError, TypeError, KeyError) as err:   # a field of the wrong type or shape
            raise _err("state", f"{path}: {err}") from None


def _scalar(data, name: str) -> float:
    """The number ``name`` of a saved state; ValueError naming it otherwise."""
    try:
        return float(data[name])
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number, got {np.asarray(data[name]).tolist()!r}") from None


def _flag(data, name: str) -> bool:
    """The true / false ``name`` of a saved state (a boolean, or the integer 0 or 1); ValueError naming it otherwise
    (the text 'False' is not false)."""
    a = np.asarray(data[name])
    if a.shape == () and (a.dtype.kind == "b" or (a.dtype.kind in "iu" and int(a) in (0, 1))):
        return bool(a)
    raise ValueError(f"{name}: expected true or false (a boolean), got {a.tolist()!r}")


#: Highest temperature accepted: N·d·T must stay far from the largest double (1.8e308) in the energy sums that
#: scale the start velocities (at T = 1e308 they overflowed and every velocity came out 0).
MAX_TEMPERATURE = 1e100
#: Longest side, in particle diameters, of the box a packing fraction may imply: doubles resolve a position in it to
#: about 1e-7 of a diameter (2.2e-16 × 1e9), and no less would do to find contacts.
MAX_BOX_DIAMETERS = 1e9
#: Largest speed a saved state may hold: v² then stays within gas.temperature's bound (1e100).
MAX_STATE_SPEED = 1e50
#: Range of a saved state's masses, radii and box lengths: a collision's reduced mass m₁m₂/(m₁ + m₂), a contact
#: distance squared and the box's volume then stay normal doubles (masses of 1e-307 made every reduced mass 0: no
#: impulse, 46 million collisions of spheres passing into each other; 1e300, positions of inf; a box of 1e-200 a
#: volume of 0).
STATE_SIZES = (1e-100, 1e100)


def _state_of(path: Path, data) -> GasState:
    """:func:`load_state`'s GasState from the open npz ``data``; ValueError (or TypeError, KeyError) naming the
    field at fault."""
    from ..gas.state import Container, GasState
    keys = set(data.files)
    need = {"radii", "masses", "box"}
    if not need <= keys:
        raise _err("state", f"{path}: missing {', '.join(sorted(need - keys))}")
    if "final_positions" in keys:
        x, v, t = data["final_positions"], data["final_velocities"], _scalar(data, "final_time")
    elif "positions" in keys and data["positions"].ndim == 3:
        x, v, t = data["positions"][-1], data["velocities"][-1], _scalar(data["times"], -1)
    elif "positions" in keys and "velocities" in keys:
        x, v = data["positions"], data["velocities"]
        t = _scalar(data, "time") if "time" in keys else 0.0
    else:
        raise _err("state", f"{path}: no positions and velocities")
    periodic = _flag(data, "periodic") if "periodic" in keys else True
    container = None
    if "container_kind" in keys:
        kind = str(data["container_kind"])
        planes = data["container_planes"] if "container_planes" in keys else None
        try:
            container = Container(kind, data["container_centre"] if kind != "box" else None,
                                  float(data["container_radius"]) if kind != "box" else 0.0,
                                  int(data["container_axis"]), planes)
        except (ValueError, KeyError) as err:
            raise _err("state", f"{path}: bad container ({err})") from err
    for name, a in (("positions", x), ("velocities", v)):
        a = np.asarray(a)
        if a.dtype.kind not in "fiu" or not np.all(np.isfinite(a)):
            raise ValueError(f"{name}: expected finite numbers")
    for name in ("radii", "masses", "box"):
        dtype = np.asarray(data[name]).dtype
        if dtype.kind not in "fiub":
            got = {"U": "text", "S": "bytes", "c": "complex numbers"}.get(dtype.kind, f"{dtype.name} values")
            raise ValueError(f"{name}: expected real numbers, got {got}")
    n, d = np.shape(x) if np.ndim(x) == 2 else (0, 0)
    for name, shape in (("positions", (n, d)), ("velocities", (n, d)), ("radii", (n,)), ("masses", (n,)),
                        ("box", (d,))):
        got = np.shape(data[name] if name in ("radii", "masses", "box") else (x if name == "positions" else v))
        if n == 0 or got != shape:
            raise ValueError(f"{name}: shape {got}, expected {shape} (N particles in d dimensions, from positions)")
    if np.abs(v).max(initial=0.0) > MAX_STATE_SPEED:
        raise ValueError(f"velocities up to {np.abs(v).max():.3g}: at most {MAX_STATE_SPEED:g} (a temperature of "
                         "at most 1e100, as gas.temperature)")
    _check_sizes(data, np.asarray(v, dtype=np.float64), d)
    return GasState(x, v, data["radii"], data["masses"], data["box"], periodic, t, container=container)


def _check_sizes(data, v: np.ndarray, d: int) -> None:
    """A saved state's masses, radii and box lengths within :data:`STATE_SIZES`, a box of at most
    MAX_BOX_DIAMETERS of its smallest particle's diameters a side (a new gas's bound), and its temperature
    Σ m v² / (N d) within gas.temperature's bound; ValueError naming the field otherwise. Values that are not
    positive and finite are left to GasState's own checks."""
    lo, hi = STATE_SIZES
    arrays = {name: np.asarray(data[name], dtype=np.float64) for name in ("masses", "radii", "box")}
    for name, a in arrays.items():
        a = a[np.isfinite(a) & (a > 0)]
        if a.size and not lo <= a.min() <= a.max() <= hi:
            bad = a.min() if a.min() < lo else a.max()
            raise ValueError(f"{name}: {bad:g} is outside {lo:g} … {hi:g} (the gas's units: σ = m = k_B T = 1 by "
                             "default), where a collision's reduced mass, a distance squared or the box's volume "
                             "leaves the range of doubles: rescale the state")
    radii, box, masses = arrays["radii"], arrays["box"], arrays["masses"]
    if radii.size and box.size and np.all(radii > 0) and np.all(box > 0):
        cells = float(box.max()) / (2.0 * float(radii.min()))
        if not cells <= MAX_BOX_DIAMETERS:
            raise ValueError(f"radii: the smallest, {radii.min():g}, makes the box ({box.max():g} a side) "
                             f"{cells:.3g} of its diameters a side; at most {MAX_BOX_DIAMETERS:g} (doubles resolve "
                             "positions there to about 1e-7 of a diameter): rescale the radii or the box")
    if masses.shape == (len(v),) and np.all(masses > 0):
        with np.errstate(over="ignore"):
            T = float(np.sum(masses[:, None] * v * v)) / (len(v) * d)
        if not T <= MAX_TEMPERATURE:
            raise ValueError(f"masses and velocities: their temperature Σ m v² / (N d) = {T:.3g} is beyond "
                             f"{MAX_TEMPERATURE:g}, as gas.temperature (the energy sums must stay finite in "
                             "doubles): rescale the masses or the velocities")


def initial_state(c: dict) -> GasState:
    """The start: the saved state, or ``make_gas`` from the checked config."""
    from ..gas.state import make_gas

    if c["state"] is not None:
        return load_state(c["state"])
    try:
        curved = c["box"] in ("sphere", "cylinder")
        return make_gas(c["n"], c["packing_fraction"], c["dimension"], start="random" if curved else c["start"],
                        seed=c["seed"], temperature=c["temperature"], periodic=c["box"] == "periodic",
                        container=c["box"] if curved else "box", axis=c["cylinder_axis"],
                        aspect=c["cylinder_aspect"])
    except ValueError as err:
        if "minimum image" in str(err):   # too few spheres: the periodic box they fill is under two diameters
            one = c["n"] == 1
            raise _err("n", f"{c['n']} sphere{'' if one else 's'} at packing fraction {c['packing_fraction']:g} "
                            f"fill{'s' if one else ''} a periodic box too small for the minimum image ({err}): use "
                            "more spheres, a lower packing fraction, or walls") from err
        raise _err("packing_fraction" if "packing_fraction" in str(err) else "start", str(err)) from err
