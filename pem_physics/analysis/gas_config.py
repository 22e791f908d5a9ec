"""The ``gas`` command's scene: its keys, defaults and limits, a gas scene file or built-in example read, and
every check made before a run (:func:`check_config`, :func:`check_length`, :func:`check_tc`), each error naming
the key (``gas.KEY``). What the keys mean: :mod:`.gas_command`'s docstring."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ValidationError
from .gas_start import MAX_BOX_DIAMETERS, MAX_TEMPERATURE, load_state
from .gas_start import gas_error as _err

if TYPE_CHECKING:
    from ..gas.state import GasState

# The gas modules (and tomllib) are imported by the functions that use them: the command line registers
# this command on every start, and ``run`` need not load them. MAX_TEMPERATURE and MAX_BOX_DIAMETERS, bounds of a
# saved state too, are .gas_start's (imported above).

#: Bytes the event-driven engine keeps per particle (positions, velocities, event heap, cell lists; docs/gas.md).
BYTES_PER_PARTICLE = 248
#: Bytes a time block keeps (its edges, virial and collision counts as Python floats: 10⁸ blocks took 11.8 GB).
BYTES_PER_BLOCK = 128
#: Most steps of the timestep method, and most events (collisions, cell and wall crossings, estimated) of an
#: event-driven run, a run may ask for: the ``run`` command's cap on steps (``MAX_STEPS``), far beyond any run that
#: could finish (10¹² events are three weeks at the engine's 5 × 10⁵ collisions per second).
MAX_EVENTS = 1e12
#: Bytes a cell of the event-driven engine's cell lists takes (its list head, an int64; cells are about a diameter
#: wide, so a dilute gas has many: gas/edmd.py ``cell_grid``).
BYTES_PER_CELL = 8

#: Most energy, in k_B T, a fall across the box's longest side L may give a particle (m |g| L / k_B T): beyond it the
#: fall's speed √(2 |g| L) is over 1e15 thermal speeds √(k_B T / m) and the fall lasts under 1e-15 time units, lost
#: in round-off (2.2e-16) of the speeds and times (the start's temperature and the run's times would mean nothing).
MAX_GRAVITY_ENERGY = 1e30

#: Fraction of the mean free time τ from which the TC model's time t_c draws a warning (:func:`check_tc`): a collision
#: within t_c of either partner's last one is elastic, about 1 − e^(−2 t_c / τ) of them (2 % at t_c = τ / 100). The
#: model is the run's (Luding & McNamara) for t_c ≪ τ; a t_c of τ or more (given, not the default) is refused: 86 %
#: or more of the collisions elastic, the restitution in effect switched off.
TC_WARN_FRACTION = 0.01

#: ``box`` values: a periodic box, hard box faces, hard containers
BOXES = ("periodic", "walls", "sphere", "cylinder")

#: Options that a saved state (``state``, ``--state``) fixes: its particles, their positions and velocities (hence
#: the packing fraction and temperature, and no start to pick) and its box. Given with a state, each is refused
#: unless it restates the state's own value (``n``, ``dimension``, ``box``, ``packing_fraction``, ``cylinder_axis``).
STATE_FIXES = ("n", "dimension", "packing_fraction", "temperature", "box", "cylinder_axis", "cylinder_aspect",
               "seed", "start")

#: The built-in scene ``example:hard-sphere-gas`` (examples/scenes/hard_sphere_gas.toml holds the same).
EXAMPLE = {"n": 4000, "dimension": 3, "packing_fraction": 0.25, "temperature": 1.0, "box": "periodic",
           "restitution": 1.0, "t_end": 20.0, "record_interval": 0.5, "blocks": 20, "method": "event", "seed": 1,
           "start": "auto"}

DEFAULTS = {"n": 1000, "dimension": 3, "packing_fraction": 0.25, "temperature": 1.0, "box": "periodic",
            "cylinder_axis": 2, "cylinder_aspect": 1.0, "restitution": 1.0,
            "tc": None, "gravity": None, "t_end": 10.0, "record_interval": None, "blocks": 20,
            "method": "event", "dt": None, "seed": 0, "start": "auto", "state": None}

EXAMPLES = {"hard-sphere-gas": EXAMPLE}

#: command-line option → scene key
OPTIONS = {"n": "n", "dimension": "dimension", "packing_fraction": "packing_fraction", "temperature": "temperature",
           "box": "box", "cylinder_axis": "cylinder_axis", "cylinder_aspect": "cylinder_aspect",
           "restitution": "restitution", "tc": "tc", "gravity": "gravity", "t_end": "t_end",
           "record_interval": "record_interval", "blocks": "blocks", "method": "method", "dt": "dt", "seed": "seed",
           "start": "start", "state": "state"}


def load_gas_scene(source: str) -> dict:
    """The ``[gas]`` table of a TOML scene file, or a built-in ``example:NAME`` (a dict, not yet checked)."""
    if source.startswith("example:"):
        name = source.split(":", 1)[1]
        if name not in EXAMPLES:
            from ..examples import BUILDERS

            if name in BUILDERS:   # a scene of bodies: another command's
                raise ValidationError("example", f"{name!r} is a scene of bodies, not a hard-sphere gas: run it with "
                                                 f"`python -m pem_physics run example:{name} -o OUTDIR` (the gas "
                                                 f"examples: {', '.join(EXAMPLES)})")
            raise ValidationError("example", f"unknown gas example {name!r}; choose one of {', '.join(EXAMPLES)}")
        return dict(EXAMPLES[name])
    path = Path(source)
    import tomllib

    from ..io.files import read_input_text

    text = read_input_text(path, "gas scene file")
    if path.suffix.lower() in (".py", ".udf"):   # not TOML: "not valid TOML: Invalid statement (at line 1 …)"
        raise ValidationError(str(path), f"a {'Python' if path.suffix.lower() == '.py' else 'PEM UDF'} scene of "
                                         f"bodies, not a gas scene (a .toml file with one [gas] table): run it with "
                                         f"`python -m pem_physics run {source} -o OUTDIR`")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValidationError(str(path), f"not valid TOML: {err}") from None
    if "gas" not in doc and ("bodies" in doc or doc.get("format") == "pem-scene"):
        raise ValidationError(str(path), "a scene of bodies (format = \"pem-scene\"), not a gas scene (one [gas] "
                                         f"table): run it with `python -m pem_physics run {source} -o OUTDIR`")
    if set(doc) != {"gas"} or not isinstance(doc["gas"], dict):
        raise ValidationError(str(path), f"a gas scene has one table [gas], found {', '.join(doc) or 'nothing'}")
    cfg = dict(doc["gas"])
    if "state" in cfg:   # beside the scene file, as a motion table: a shared scene reads no other
        from ..io.files import beside_scene

        cfg["state"] = str(beside_scene(_state_name(cfg["state"]), path.parent, "gas.state", "saved state"))
    return cfg


def _state_name(value) -> str:
    """``state`` as given: a file's or a folder's name (the scene's ``state = 5`` said "no such file: 5", and an
    empty one, the scene's folder or the current one, "is a folder without a gas.npz")."""
    if not isinstance(value, str) or not value.strip():
        what = f"the string {value!r}" if isinstance(value, str) else repr(value)
        raise _err("state", f"expected the name of a saved state (a gas run's gas.npz or its output folder), got "
                            f"{what}")
    return value


def _number(cfg, key, *, integer=False):
    val = cfg[key]
    if isinstance(val, bool) or not isinstance(val, (int, float)) or (integer and not float(val).is_integer()):
        raise _err(key, f"expected {'an integer' if integer else 'a number'}, got {val!r}")
    if not math.isfinite(val):
        raise _err(key, f"expected a finite number, got {val!r}")
    return int(val) if integer else float(val)


def _option(key: str) -> str:
    return "--" + key.replace("_", "-")


def _refuse_overridden(given: dict, saved: GasState, box: str) -> None:
    """Refuse (``gas.state``) the options in ``given`` (key → value typed on the command line) that the saved state
    would override (:data:`STATE_FIXES`); one that restates the state's value is not overridden."""
    same = {"n": saved.n, "dimension": saved.d, "box": box}
    if saved.container.kind == "cylinder":
        same["cylinder_axis"] = saved.container.axis
    dropped = []
    for key in OPTIONS:
        value = given.get(key)
        if key not in STATE_FIXES or value is None:
            continue
        if key in same and not isinstance(value, bool) and value == same[key]:
            continue
        if (key == "packing_fraction" and isinstance(value, float)
                and math.isclose(value, saved.packing_fraction, rel_tol=1e-9)):
            continue
        dropped.append(_option(key))
    if dropped:
        raise _err("state", f"the saved state gives the gas its particles, their positions and velocities (hence N, "
                            f"the dimension, packing fraction and temperature, no start to pick) and its box "
                            f"({box}); drop {', '.join(dropped)}: with a state "
                            f"{'it is' if len(dropped) == 1 else 'they are'} ignored")


def _implied_box(n: int, eta: float, d: int, box: str, axis: int, aspect: float) -> np.ndarray:
    """The box lengths (d,), in diameters, that n particles at packing fraction eta start in (``make_gas``'s: a cube,
    or a sphere's or cylinder's bounding box; a lattice start's box differs by a few diameters); inf on overflow."""
    vol = n * (math.pi / 6 if d == 3 else math.pi / 4) / eta   # balls of diameter 1
    with np.errstate(over="ignore"):
        if box == "sphere":
            r = (vol / (math.pi * 4 / 3 if d == 3 else math.pi)) ** (1.0 / d)
            return np.full(d, 2 * r)
        if box == "cylinder":
            r = (vol / (2 * math.pi * aspect)) ** (1.0 / 3.0)
            sides = np.full(3, 2 * r)
            sides[axis] *= aspect
            return sides
        return np.full(d, vol ** (1.0 / d))


def _check_box(c: dict) -> None:
    """Refuse a packing fraction (or cylinder aspect) whose box is longer than :data:`MAX_BOX_DIAMETERS` a side."""
    n, d, eta = c["n"], c["dimension"], c["packing_fraction"]
    side = float(_implied_box(n, eta, d, c["box"], c["cylinder_axis"], 1.0).max())
    if not side <= MAX_BOX_DIAMETERS:
        raise _err("packing_fraction", f"η = {eta:g} spreads {n:,} {'spheres' if d == 3 else 'disks'} over a box "
                                       f"{side:.3g} diameters a side; at most {MAX_BOX_DIAMETERS:g} (doubles resolve "
                                       f"positions there to about 1e-7 of a diameter): raise the packing fraction")
    if c["box"] == "cylinder":
        side = float(_implied_box(n, eta, d, "cylinder", c["cylinder_axis"], c["cylinder_aspect"]).max())
        if not side <= MAX_BOX_DIAMETERS:
            raise _err("cylinder_aspect", f"{c['cylinder_aspect']:g} makes the cylinder's box {side:.3g} diameters on "
                                          f"its longest side; at most {MAX_BOX_DIAMETERS:g} (doubles resolve positions "
                                          f"there to about 1e-7 of a diameter): choose an aspect nearer 1")


def _state_file(path: Path) -> str:
    """The saved state ``state`` names: a file, or a gas run's output folder (its gas.npz)."""
    if path.is_dir():
        if (path / "gas.npz").is_file():
            return str(path / "gas.npz")
        others = sorted(p.name for p in path.glob("*.npz"))[:3]
        raise _err("state", f"{path} is a folder without a gas.npz (a gas run's output)"
                            + (f"; it holds {', '.join(others)}" if others else "")
                            + ": name the saved state's .npz file, or a gas run's output folder")
    if not path.is_file():
        raise _err("state", f"no such file: {path}")
    return str(path)


def _cylinder_room(n: int, eta: float, aspect: float) -> tuple[float, float, float]:
    """(length, diameter, volume the centres reach) of the cylinder that holds n spheres of diameter 1 at packing
    fraction eta (on its whole volume) with length / diameter ``aspect`` (``make_gas``'s cylinder)."""
    vol = n * math.pi / 6 / eta
    r = (vol / (2 * math.pi * aspect)) ** (1.0 / 3.0)
    length = 2 * r * aspect
    return length, 2 * r, math.pi * max(r - 0.5, 0.0) ** 2 * max(length - 1.0, 0.0)


def _check_cylinder_aspect(c: dict) -> None:
    """Refuse an aspect that makes the cylinder too flat or too thin for its spheres (``gas.cylinder_aspect``): the
    volume their centres reach (the cylinder shrunk by a radius) puts them past the packing fraction random insertion
    reaches (``RANDOM_JAM``), where other aspects would not; the message gives the aspects that do. When none does,
    ``gas.packing_fraction`` is refused, with the numbers of the best aspect. The best is 1: the room π (R − ½)² (L − 1)
    at a given volume π R² L is largest where R / (R − ½) = L / (L − 1), that is L = 2 R."""
    from ..gas.state import RANDOM_JAM

    n, eta, aspect = c["n"], c["packing_fraction"], c["cylinder_aspect"]
    need = n * math.pi / 6 / RANDOM_JAM[3]   # the volume the centres must reach
    length, width, room = _cylinder_room(n, eta, aspect)
    if room >= need:
        return
    _, _, best = _cylinder_room(n, eta, 1.0)
    if best < need:
        raise _err("packing_fraction", f"{eta:g} cannot be reached in a cylinder of {n:,} spheres at any aspect: at "
                                       f"the best, 1, their centres reach only {best:.4g} of its volume "
                                       f"{n * math.pi / 6 / eta:.4g}, a packing fraction {n * math.pi / 6 / best:.3f} "
                                       f"there, past the {RANDOM_JAM[3]} random insertion reaches (use more "
                                       f"particles or a lower η)")

    def edge(bad: float) -> float:   # the aspect between 1 and ``bad`` where the room is just enough
        good = 1.0
        for _ in range(60):
            mid = math.sqrt(good * bad)
            good, bad = (mid, bad) if _cylinder_room(n, eta, mid)[2] >= need else (good, mid)
        return good

    raise _err("cylinder_aspect", f"{aspect:g} makes the cylinder of {n:,} spheres at η = {eta:g} {length:.3g} "
                                  f"diameters long and {width:.3g} across, too {'flat' if aspect < 1 else 'thin'}: "
                                  f"their centres reach {room:.4g} of its volume, {need:.4g} needed for random "
                                  f"insertion (a packing fraction of at most {RANDOM_JAM[3]} there); choose an "
                                  f"aspect from {_round(edge(1e-30), math.ceil):g} to "
                                  f"{_round(edge(1e30), math.floor):g}")


def _round(x: float, way) -> float:
    """x > 0 to 3 significant digits, rounded ``way`` (math.ceil or math.floor): a range's ends that stay inside it."""
    scale = 10.0 ** (math.floor(math.log10(x)) - 2)
    return way(x / scale) * scale


def check_config(cfg: dict, given: dict | None = None) -> dict:
    """The scene's values over :data:`DEFAULTS`, checked; every error names the item (``gas.KEY``). ``given``: the
    values typed on the command line (key → value), which a saved state must not silently override."""
    from ..gas.state import LATTICE_MAX

    unknown = sorted(set(cfg) - set(DEFAULTS))
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], list(DEFAULTS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise _err(unknown[0], f"unknown key; {hint}the keys are {', '.join(DEFAULTS)}")
    c = {**DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    saved = None
    if c["state"] is not None:
        c["state"] = _state_file(Path(_state_name(c["state"])))
        saved = load_state(c["state"])  # the start's size, dimension and box are the saved state's
        box = "periodic" if saved.periodic else ("walls" if saved.container.kind == "box" else saved.container.kind)
        _refuse_overridden(given or {}, saved, box)
        c.update(n=saved.n, dimension=saved.d, packing_fraction=saved.packing_fraction, box=box)
    c["n"] = _number(c, "n", integer=True)
    if c["n"] < 1:
        raise _err("n", f"expected an integer >= 1, got {c['n']}")
    c["dimension"] = _number(c, "dimension", integer=True)
    if c["dimension"] not in (2, 3):
        raise _err("dimension", f"expected 2 (disks) or 3 (spheres), got {c['dimension']}")
    d = c["dimension"]
    top = LATTICE_MAX["fcc" if d == 3 else "triangular"]
    eta = _number(c, "packing_fraction")
    if not 0 < eta < top:
        raise _err("packing_fraction", f"expected 0 < η < {top:.2f}, got {eta:g}")
    if eta < sys.float_info.min and c["state"] is None:
        raise _err("packing_fraction", f"{eta:g} is below the smallest normal double ({sys.float_info.min:.3g}): the "
                                       f"box it implies has no finite size; raise the packing fraction")
    c["packing_fraction"] = eta
    c["temperature"] = _number(c, "temperature")
    if not 0 < c["temperature"] <= MAX_TEMPERATURE:
        raise _err("temperature", f"expected 0 < T ≤ {MAX_TEMPERATURE:g} (in units of the particles' m u² / k_B: the "
                                  f"energy sums must stay finite in doubles), got {c['temperature']:g}")
    if c["box"] not in BOXES:
        raise _err("box", f"expected one of {', '.join(repr(b) for b in BOXES)}, got {c['box']!r}")
    if c["box"] == "cylinder" and d != 3:
        raise _err("box", "a cylinder needs dimension 3 (in 2D use \"sphere\", a circle)")
    for key in ("cylinder_axis", "cylinder_aspect"):   # given for another box, each was taken and ignored
        if cfg.get(key) is not None and c["box"] != "cylinder":
            raise _err(key, f"applies to box = \"cylinder\" only (the box is {c['box']!r}): drop {key}, or set box "
                            "= \"cylinder\"")
    c["cylinder_axis"] = _number(c, "cylinder_axis", integer=True)
    if c["cylinder_axis"] not in (0, 1, 2):
        raise _err("cylinder_axis", f"expected 0, 1 or 2, got {c['cylinder_axis']}")
    c["cylinder_aspect"] = _number(c, "cylinder_aspect")
    if not c["cylinder_aspect"] > 0:
        raise _err("cylinder_aspect", f"expected a length / diameter > 0, got {c['cylinder_aspect']:g}")
    if c["state"] is None:
        _check_box(c)
        if c["box"] == "cylinder":
            _check_cylinder_aspect(c)
    c["restitution"] = _number(c, "restitution")
    if not 0 <= c["restitution"] <= 1:
        raise _err("restitution", f"expected 0 ≤ e ≤ 1, got {c['restitution']:g}")
    if c["tc"] is not None:
        c["tc"] = _number(c, "tc")
        if c["tc"] < 0:
            raise _err("tc", f"expected a time >= 0, got {c['tc']:g}")
    _check_gravity(c, d)
    _check_gravity_strength(c, saved)
    c["t_end"] = _number(c, "t_end")
    if c["t_end"] <= 0:
        raise _err("t_end", f"expected a duration > 0, got {c['t_end']:g}")
    if c["record_interval"] is None:
        c["record_interval"] = c["t_end"] / 100
    c["record_interval"] = _number(c, "record_interval")
    if not 0 < c["record_interval"] <= c["t_end"]:
        raise _err("record_interval", f"expected 0 < interval ≤ t_end = {c['t_end']:g}, got {c['record_interval']:g}")
    if c["t_end"] / c["record_interval"] > 1e6:
        raise _err("record_interval", f"{c['record_interval']:g} gives more than 1e6 records over t_end = "
                                      f"{c['t_end']:g}")
    c["blocks"] = _number(c, "blocks", integer=True)
    if c["blocks"] < 1:
        raise _err("blocks", f"expected an integer >= 1, got {c['blocks']}")
    from ..engine import budget

    budget.check(c["blocks"] * BYTES_PER_BLOCK, "gas.blocks", f"{c['blocks']:,} time blocks",
                 "use fewer blocks (a few dozen give the pressure and its error)")
    if c["method"] not in ("event", "timestep"):
        raise _err("method", f"expected 'event' or 'timestep', got {c['method']!r}")
    if c["method"] == "event" and c["restitution"] == 0:
        from ..gas.state import STICKY

        raise _err("restitution", STICKY.removeprefix("restitution = 0: "))
    if c["method"] == "event" and c["tc"] == 0 and c["restitution"] < 1:
        raise _err("tc", f"0 turns the TC model off, and inelastic spheres (restitution {c['restitution']:g} < 1) "
                         f"then collapse: an event-driven run stalls on ever more collisions in a cluster while its "
                         f"time stops; use a small tc > 0 (e.g. 1e-4, or leave tc out: the default is 1e-4 σ / rms "
                         f"speed) or method = \"timestep\"")
    if c["method"] == "timestep" and c["box"] in ("sphere", "cylinder"):
        raise _err("method", f"the timestep method has no {c['box']} container (use method = \"event\")")
    if c["tc"] is not None and c["method"] == "timestep":
        raise _err("tc", "applies to method = \"event\" only: the timestep method has no TC model (its inelastic "
                         "collisions all take the restitution); drop tc, or set method = \"event\"")
    if c["dt"] is not None and c["method"] == "event":
        raise _err("dt", "applies to method = \"timestep\" only: the event-driven method has no step (each "
                         "collision happens at its exact time, records every record_interval); drop dt, or set "
                         "method = \"timestep\"")
    if c["dt"] is not None:
        c["dt"] = _number(c, "dt")
        if c["dt"] <= 0:
            raise _err("dt", f"expected a step > 0, got {c['dt']:g}")
        if c["dt"] > c["t_end"]:
            raise _err("dt", f"{c['dt']:g} is longer than the run (t_end = {c['t_end']:g}): lower dt")
    c["seed"] = _number(c, "seed", integer=True)
    if not 0 <= c["seed"] < 2**63:
        raise _err("seed", f"expected an integer from 0 to 2**63 - 1, got {c['seed']}")
    if c["start"] not in ("auto", "random", "lattice"):
        raise _err("start", f"expected 'auto', 'random' or 'lattice', got {c['start']!r}")
    if c["state"] is None:   # (a saved state brings its own N, checked when it is read)
        _check_memory(c, eta, d)
    return c


def _check_gravity(c: dict, d: int) -> None:
    """``gravity`` (a number g along −axis d−1, or d numbers) into c as a list, and what it needs of the box and
    method."""
    g = c["gravity"]
    if g is not None:
        if isinstance(g, (int, float)) and not isinstance(g, bool):
            c["gravity"] = [0.0] * (d - 1) + [-float(g)]
        elif isinstance(g, (list, tuple)) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in g):
            if len(g) != d:
                raise _err("gravity", f"expected {d} components (dimension {d}), got {len(g)}")
            c["gravity"] = [float(x) for x in g]
        else:
            raise _err("gravity", f"expected a number g (along −axis {d - 1}) or a list of {d} numbers, got {g!r}")
        if not all(math.isfinite(x) for x in c["gravity"]):
            raise _err("gravity", f"expected finite numbers, got {c['gravity']}")
        if any(c["gravity"]) and c["state"] is not None and c["box"] != "walls":   # a state keeps its box
            raise _err("gravity", "needs hard walls in its direction"
                       + (", and the saved state's box is periodic" if c["box"] == "periodic" else
                          f" (not a curved container), and the saved state's is a {c['box']}")
                       + " (a state keeps its box): this state cannot take gravity; drop gravity, or start from a "
                         "state with walls")
        if any(c["gravity"]) and c["box"] == "periodic":
            raise _err("gravity", "needs hard walls in its direction: set box = \"walls\"")
        if any(c["gravity"]) and c["box"] in ("sphere", "cylinder"):
            raise _err("gravity", f"not supported with box = \"{c['box']}\" (a curved container): use box = "
                                  f"\"walls\" or no gravity")
        if c["method"] == "timestep" and any(c["gravity"]):
            raise _err("gravity", "the timestep method has no gravity (use method = \"event\")")


def _check_gravity_strength(c: dict, saved: GasState | None) -> None:
    """Refuse (``gas.gravity``) a gravity whose fall across the box gives a particle more than
    :data:`MAX_GRAVITY_ENERGY` k_B T (the new gas's box, temperature and unit mass, or the saved state's)."""
    g = float(np.linalg.norm(c["gravity"])) if c["gravity"] is not None else 0.0
    if g == 0.0:
        return
    if saved is None:
        side = float(_implied_box(c["n"], c["packing_fraction"], c["dimension"], c["box"], c["cylinder_axis"],
                                  c["cylinder_aspect"]).max())
        m, kt, whose = 1.0, c["temperature"], "the temperature"
    else:
        from ..gas import measure

        side, m, kt = float(np.max(saved.box)), float(np.mean(saved.masses)), measure.temperature(saved)
        whose = "the saved state's temperature"
        if not kt > 0:   # a state at rest: the fall gives the only speed scale (the run's length is checked apart)
            return
    ratio = m * g * side / kt
    if not ratio <= MAX_GRAVITY_ENERGY:
        raise _err("gravity", f"|g| = {g:g} gives a particle falling across the box (side {side:.3g}) {ratio:.3g} "
                              f"k_B T at {whose} {kt:g}; at most {MAX_GRAVITY_ENERGY:g} k_B T (beyond it the "
                              f"thermal speeds and the fall's time are lost in round-off): lower gravity")


def _check_memory(c: dict, eta: float, d: int) -> None:
    """What a new gas's run holds in memory — its particles and records, the event-driven engine's cell lists —
    fits (:mod:`..engine.budget`), each refusal naming the key to lower."""
    from ..engine import budget

    records = int(c["t_end"] / c["record_interval"]) + 2
    budget.check(c["n"] * (BYTES_PER_PARTICLE + records * 2 * d * 8), "gas.n",
                 f"{c['n']:,} particles with {records:,} records of their positions and velocities",
                 "lower n, or record less often (record_interval)")
    if c["method"] == "event" or c["restitution"] > 0:   # the timestep method compares with an event-driven run
        sides = _implied_box(c["n"], eta, d, c["box"], c["cylinder_axis"], c["cylinder_aspect"])
        cells = float(np.prod(np.maximum(np.floor(sides), 1.0)))
        lists = ("the event-driven engine's cell lists" if c["method"] == "event" else
                 "the cell lists of the event-driven run the timestep method's collisions are matched against")
        budget.check(cells * BYTES_PER_CELL, "gas.packing_fraction",
                     f"η = {eta:g} spreads {c['n']:,} particles over {cells:.3g} cells of one diameter: {lists}",
                     "raise the packing fraction (or use fewer particles)")


def expected_events(state: GasState, duration: float, gravity=None) -> float:
    """About how many events an event-driven run of ``duration`` from ``state`` takes: collisions at Enskog's rate
    and crossings of the engine's cells (or walls), at the start's speeds (with gravity, those a fall across the box
    gives too). An estimate to refuse runs that cannot finish (an inelastic gas cools, and takes fewer)."""
    return sum(expected_event_kinds(state, duration, gravity))


def expected_event_kinds(state: GasState, duration: float, gravity=None) -> tuple[float, float]:
    """(collisions, cell or wall crossings) of :func:`expected_events`, apart: the numpy reference has no cells."""
    from ..gas import measure

    n, d = state.n, state.d
    m = float(np.mean(state.masses))
    sig, sig_max = 2.0 * float(np.mean(state.radii)), 2.0 * float(np.max(state.radii))
    T = measure.temperature(state)
    if gravity is not None:
        T += m * float(np.linalg.norm(gravity)) * float(np.max(state.box))
    if not T > 0 or not duration > 0:
        return 0.0, 0.0
    collisions = n / 2 * measure.enskog_collision_rate(min(state.packing_fraction, 0.9), d, T, m, sig)
    nc = np.maximum(np.floor(state.box / sig_max), 1.0)   # the cells of gas/edmd.py's cell_grid
    if state.periodic:
        nc[nc < 3] = 1.0
    crossings = n * math.sqrt(2 * T / (math.pi * m)) * float(np.sum(nc / state.box))
    return duration * collisions, duration * crossings


#: Events a second of the compiled event-driven engine at its fastest, for :func:`check_duration`: 1.5–8 × 10⁵
#: collisions a second (docs/benchmarks.md, N = 10³–10⁶; a cell crossing costs less), rounded up to 2 × 10⁶ so that
#: an estimate from it is a lower bound of the wall time.
COMPILED_EVENTS_PER_SECOND = 2e6
#: Seconds the numpy reference takes per pair and event: it searches all N (N − 1) / 2 pairs for every next event
#: (gas/reference.py); measured 1.2–3 × 10⁻⁷ s (N = 100–1600, one core), taken ten times faster for a lower bound.
NUMPY_SECONDS_PER_PAIR = 2e-8


def event_run_seconds(state: GasState, duration: float, gravity=None) -> tuple[str, float, float]:
    """(engine, events, estimated wall seconds) of an event-driven run of ``duration`` from ``state`` on the engine
    that will run it: the compiled one where numba is installed (not imported here), its collisions and crossings at
    :data:`COMPILED_EVENTS_PER_SECOND`; else the numpy reference, its collisions (it has no cells) each searching
    every pair at :data:`NUMPY_SECONDS_PER_PAIR`. A lower bound, as the paces are."""
    from ..gas import edmd

    collisions, crossings = expected_event_kinds(state, duration, gravity)
    if edmd.available():
        return "compiled", collisions + crossings, (collisions + crossings) / COMPILED_EVENTS_PER_SECOND
    pairs = state.n * (state.n - 1) / 2
    return "numpy", collisions, collisions * pairs * NUMPY_SECONDS_PER_PAIR


def check_duration(c: dict, state: GasState, force: bool = False) -> None:
    """Refuse (``gas.t_end``) an event-driven run from ``state`` — the method's, or the one the timestep method's
    collisions are matched against — estimated (:func:`event_run_seconds`) to take more than
    :data:`~pem_physics.engine.budget.MAX_RUN_SECONDS` (a day) of wall time, as ``run``, ``basin`` and ``sweep`` do,
    unless ``force``: a strong gravity's fall makes every particle fast, and the events many."""
    from ..engine import budget

    if force or (c["method"] == "timestep" and c["restitution"] == 0):   # no event-driven run then
        return
    engine, events, seconds = event_run_seconds(state, c["t_end"], c["gravity"])
    if not seconds > budget.MAX_RUN_SECONDS:
        return
    which = "the event-driven run the timestep method's collisions are matched against: " if c["method"] == \
        "timestep" else ""
    pace = (f"the compiled engine's ~{COMPILED_EVENTS_PER_SECOND:.0e} events a second" if engine == "compiled" else
            f"the numpy reference's ~{events / seconds:.2g} events a second for {state.n:,} particles (the compiled "
            "engine needs numba)")
    raise _err("t_end", f"{c['t_end']:g} would take {budget.span(seconds)} ({which}about {events:.2g} events, an "
                        f"estimate at {pace}; runs of more than {budget.MAX_RUN_SECONDS / 3600:g} hours are refused): "
                        "lower t_end (or n, or gravity); --force to run anyway")


def check_length(c: dict, state: GasState) -> None:
    """Refuse (``gas.t_end``) a run from ``state`` that could not finish: more than :data:`MAX_EVENTS` steps of the
    timestep method, or an event-driven run (the method's, or the one the timestep method's collisions are
    matched against) of more than :data:`MAX_EVENTS` events (:func:`expected_events`)."""
    t = c["t_end"]
    timestep = c["method"] == "timestep"
    if timestep:
        from ..gas.timestep import default_dt

        dt = c["dt"] if c["dt"] is not None else default_dt(state)
        if t / dt > MAX_EVENTS:
            how = "" if c["dt"] is not None else f" (dt's default {dt:.3g}, 1/50 of σ / rms speed)"
            raise _err("t_end", f"t_end / dt = {t / dt:.3g} steps of the timestep method{how}; at most "
                                f"{MAX_EVENTS:g}: lower t_end (or raise dt)")
        if c["restitution"] == 0:   # no event-driven run to compare with
            return
    events = expected_events(state, t, c["gravity"])
    if events > MAX_EVENTS:
        which = "the event-driven run the timestep method's collisions are matched against: " if timestep else ""
        raise _err("t_end", f"{t:g} would take about {events:.2g} events ({which}collisions at Enskog's rate and "
                            f"cell crossings, at the start's speeds); at most {MAX_EVENTS:g}: lower t_end")


def check_tc(c: dict, state: GasState) -> str | None:
    """Refuse (``gas.tc``) an event-driven inelastic run whose TC model time t_c (given) is at least the mean free
    time τ at the start (Enskog's collision rate); a warning (the line to print) when t_c (given or the default) is
    at least :data:`TC_WARN_FRACTION` of τ; else None. The gas cools, so τ only grows in a run: the start is the
    worst case (but under gravity the floor's denser layer collides more often than the mean packing fraction says)."""
    from ..gas import measure
    from ..gas.state import default_tc

    if c["method"] != "event" or not 0 < c["restitution"] < 1:
        return None
    g = None if c["gravity"] is None else np.asarray(c["gravity"], dtype=np.float64)
    tc, default = default_tc(state, c["restitution"], g, c["tc"]), default_tc(state, c["restitution"], g, None)
    sig = 2.0 * float(np.mean(state.radii))
    rate = measure.enskog_collision_rate(min(state.packing_fraction, 0.9), state.d, measure.temperature(state),
                                         float(np.mean(state.masses)), sig)
    if not (rate > 0 and tc * rate >= TC_WARN_FRACTION):
        return None
    tau, elastic = 1.0 / rate, -math.expm1(-2.0 * tc * rate)
    text = (f"{tc:.3g}{'' if c['tc'] is not None else ' (its default)'} is {tc / tau:.3g} × the mean free time "
            f"{tau:.3g} (Enskog's, at the start): in the TC model a collision within tc of either partner's last one "
            f"is elastic, some {elastic:.0%} or more of them here (more where clusters recollide)")
    fix = f"use a tc well below {tau:.3g}" + (f" (leave tc out: the default is {default:.3g})"
                                             if c["tc"] is not None and default * rate < TC_WARN_FRACTION else "")
    if c["tc"] is not None and tc >= tau:
        raise _err("tc", f"{text}, so restitution {c['restitution']:g} is in effect switched off; {fix}")
    return f"gas.tc: {text}, weakening restitution {c['restitution']:g}: {fix}"
