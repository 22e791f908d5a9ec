"""The ``gas`` command: a hard-sphere gas run from a scene file and/or options, and its output folder.

Scene file (TOML, e.g. ``examples/scenes/hard_sphere_gas.toml``), every key optional, one table::

    [gas]
    n = 4000                 # particles
    dimension = 3            # 2 (disks) or 3 (spheres)
    packing_fraction = 0.25  # η: volume (area) fraction of the balls
    temperature = 1.0        # k_B T, energy units (σ = m = k_B = 1 by default)
    box = "periodic"         # or "walls" (hard mirrors), "sphere" or "cylinder" (hard containers)
    cylinder_axis = 2        # box = "cylinder": the axis (0, 1, 2) it lies along, closed by the box faces
    cylinder_aspect = 1.0    # box = "cylinder": length / diameter
    restitution = 1.0        # e of pair collisions (walls stay mirrors)
    tc = 1e-5                # event only: TC model time against inelastic collapse (default: picked when e < 1;
                             # 0, off, is refused with e < 1: the event-driven run would stall in the collapse;
                             # keep it well below the mean free time: a warning from 1/100 of it, refused from 1×)
    gravity = 1.0            # g along −axis d−1 (a number) or a vector [gx, gy(, gz)]; needs box = "walls"
                             # (a sphere or cylinder container refuses gravity)
    t_end = 100.0            # time units σ √(m / k_B T)
    record_interval = 1.0    # records of positions and velocities (default t_end / 100)
    blocks = 20              # time blocks for the pressure's error bar
    method = "event"         # or "timestep" (the seed's fixed-step method, O(N²) a step)
    dt = 0.01                # timestep only (default: 1/50 of σ / rms speed)
    seed = 1
    start = "auto"           # "random", "lattice" or "auto"
    state = "prev/gas.npz"   # start from a saved state instead (n, dimension, η, box come from it); a gas run's
                             # output folder ("prev") stands for its gas.npz

A run must be able to finish and its start must fit in doubles and memory: at most :data:`MAX_EVENTS` steps of the
timestep method or (estimated) events of an event-driven run; a packing fraction whose box is at most
:data:`MAX_BOX_DIAMETERS` a side and whose cell lists fit in memory; a gravity whose fall across the box gives a
particle at most :data:`MAX_GRAVITY_ENERGY` k_B T. With ``state`` (or ``--state``) the options
that the state fixes (``--n``, ``--dimension``, ``--packing-fraction``, ``--temperature``, ``--box``,
``--cylinder-axis``, ``--cylinder-aspect``, ``--seed``, ``--start``) are refused unless they restate its value.

Containers (``box`` "sphere", "cylinder"): hard walls, a random start; the packing fraction is counted
on the container's whole volume ((4/3) π R_w³, π R_w² L), the box is its bounding box. The summary
reports the container and the pressure on each wall from the momentum it took
(:func:`pem_physics.gas.measure.wall_pressure`).

``example:hard-sphere-gas`` is the built-in scene :data:`EXAMPLE` (the same as the example file).
Command-line options override the scene's values. Outputs (all written atomically):

- ``gas.npz``: ``times`` (R,), ``positions`` (R, N, d), ``velocities`` (R, N, d), ``radii`` (N,),
  ``masses`` (N,), ``box`` (d,), ``periodic``, ``gravity`` (d,), the container (``container_kind``,
  ``container_centre``, ``container_radius``, ``container_axis``, ``container_planes``), per record ``collisions``,
  ``virial``, ``kinetic``, ``potential`` (R,), and the exact final state ``final_positions``,
  ``final_velocities``, ``final_time`` (a later ``state =`` continues from it);
- ``gas.csv``: per record the time, temperature, kinetic and potential energy, collisions so far
  and the virial pressure so far (P and βPσ^d);
- ``summary.json``: N, η, collisions, collisions per wall-clock second, βPσ^d ± its error, the
  equation of state's value and the deviation (in errors and relative), temperature, mean free
  path, the Kolmogorov–Smirnov p-value of the speeds, and for ``timestep`` the collisions missed
  against the event-driven run from the same start.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ValidationError
from ..io.files import atomic_open

if TYPE_CHECKING:
    from ..gas.state import GasRun, GasState

# The gas modules (and tomllib) are imported by the functions that use them: the command line registers
# this command on every start, and ``run`` need not load them.

#: Highest temperature accepted: N·d·T must stay far from the largest double (1.8e308) in the energy sums that
#: scale the start velocities (at T = 1e308 they overflowed and every velocity came out 0).
MAX_TEMPERATURE = 1e100
#: Bytes the event-driven engine keeps per particle (positions, velocities, event heap, cell lists; docs/gas.md).
BYTES_PER_PARTICLE = 248
#: Bytes a time block keeps (its edges, virial and collision counts as Python floats: 10⁸ blocks took 11.8 GB).
BYTES_PER_BLOCK = 128
#: Most steps of the timestep method, and most events (collisions, cell and wall crossings, estimated) of an
#: event-driven run, a run may ask for: the ``run`` command's cap on steps (``MAX_STEPS``), far beyond any run that
#: could finish (10¹² events are three weeks at the engine's 5 × 10⁵ collisions per second).
MAX_EVENTS = 1e12
#: Longest side, in particle diameters, of the box a packing fraction may imply: doubles resolve a position in it to
#: about 1e-7 of a diameter (2.2e-16 × 1e9), and no less would do to find contacts.
MAX_BOX_DIAMETERS = 1e9
#: Bytes a cell of the event-driven engine's cell lists takes (its list head, an int64; cells are about a diameter
#: wide, so a dilute gas has many: gas/edmd.py ``cell_grid``).
BYTES_PER_CELL = 8

#: Most energy, in k_B T, a fall across the box's longest side L may give a particle (m |g| L / k_B T): beyond it the
#: fall's speed √(2 |g| L) is over 1e15 thermal speeds √(k_B T / m) and the fall lasts under 1e-15 time units, lost
#: in round-off (2.2e-16) of the speeds and times (the start's temperature and the run's times would mean nothing).
MAX_GRAVITY_ENERGY = 1e30

#: Wall-clock seconds an event-driven run may go on while its simulated time advances by less than
#: :data:`STALL_FRACTION` of the run before the command stops it as stalled (:class:`_StallGuard`): inelastic collapse
#: (a cluster's collisions pile up at one instant, e.g. with the TC model off) stops the time for good while the
#: collisions grow by millions a second. A run that advanced that slowly would take over 10¹⁰ s (300 years) to end.
STALL_SECONDS = 10.0
#: See :data:`STALL_SECONDS`.
STALL_FRACTION = 1e-9

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


def _err(key: str, message: str) -> ValidationError:
    return ValidationError(f"gas.{key}", message)


def load_gas_scene(source: str) -> dict:
    """The ``[gas]`` table of a TOML scene file, or a built-in ``example:NAME`` (a dict, not yet checked)."""
    if source.startswith("example:"):
        name = source.split(":", 1)[1]
        if name not in EXAMPLES:
            raise ValidationError("example", f"unknown gas example {name!r}; choose one of {', '.join(EXAMPLES)}")
        return dict(EXAMPLES[name])
    path = Path(source)
    import tomllib

    from ..io.files import read_input_text

    try:
        doc = tomllib.loads(read_input_text(path, "gas scene file"))
    except tomllib.TOMLDecodeError as err:
        raise ValidationError(str(path), f"not valid TOML: {err}") from None
    if set(doc) != {"gas"} or not isinstance(doc["gas"], dict):
        raise ValidationError(str(path), f"a gas scene has one table [gas], found {', '.join(doc) or 'nothing'}")
    cfg = dict(doc["gas"])
    if isinstance(cfg.get("state"), str):   # beside the scene file, as a motion table: a shared scene reads no other
        from ..io.files import beside_scene

        cfg["state"] = str(beside_scene(cfg["state"], path.parent, "gas.state", "saved state"))
    return cfg


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


def check_config(cfg: dict, given: dict | None = None) -> dict:
    """The scene's values over :data:`DEFAULTS`, checked; every error names the item (``gas.KEY``). ``given``: the
    values typed on the command line (key → value), which a saved state must not silently override."""
    from ..gas.state import LATTICE_MAX

    unknown = sorted(set(cfg) - set(DEFAULTS))
    if unknown:
        raise _err(unknown[0], f"unknown key; the keys are {', '.join(DEFAULTS)}")
    c = {**DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    saved = None
    if c["state"] is not None:
        c["state"] = _state_file(Path(str(c["state"])))
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
    c["cylinder_axis"] = _number(c, "cylinder_axis", integer=True)
    if c["cylinder_axis"] not in (0, 1, 2):
        raise _err("cylinder_axis", f"expected 0, 1 or 2, got {c['cylinder_axis']}")
    c["cylinder_aspect"] = _number(c, "cylinder_aspect")
    if not c["cylinder_aspect"] > 0:
        raise _err("cylinder_aspect", f"expected a length / diameter > 0, got {c['cylinder_aspect']:g}")
    if c["state"] is None:
        _check_box(c)
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
                 "the cell lists of the event-driven run that counts the timestep method's missed collisions")
        budget.check(cells * BYTES_PER_CELL, "gas.packing_fraction",
                     f"η = {eta:g} spreads {c['n']:,} particles over {cells:.3g} cells of one diameter: {lists}",
                     "raise the packing fraction (or use fewer particles)")


def expected_events(state: GasState, duration: float, gravity=None) -> float:
    """About how many events an event-driven run of ``duration`` from ``state`` takes: collisions at Enskog's rate
    and crossings of the engine's cells (or walls), at the start's speeds (with gravity, those a fall across the box
    gives too). An estimate to refuse runs that cannot finish (an inelastic gas cools, and takes fewer)."""
    from ..gas import measure

    n, d = state.n, state.d
    m = float(np.mean(state.masses))
    sig, sig_max = 2.0 * float(np.mean(state.radii)), 2.0 * float(np.max(state.radii))
    T = measure.temperature(state)
    if gravity is not None:
        T += m * float(np.linalg.norm(gravity)) * float(np.max(state.box))
    if not T > 0 or not duration > 0:
        return 0.0
    collisions = n / 2 * measure.enskog_collision_rate(min(state.packing_fraction, 0.9), d, T, m, sig)
    nc = np.maximum(np.floor(state.box / sig_max), 1.0)   # the cells of gas/edmd.py's cell_grid
    if state.periodic:
        nc[nc < 3] = 1.0
    crossings = n * math.sqrt(2 * T / (math.pi * m)) * float(np.sum(nc / state.box))
    return duration * (collisions + crossings)


def check_length(c: dict, state: GasState) -> None:
    """Refuse (``gas.t_end``) a run from ``state`` that could not finish: more than :data:`MAX_EVENTS` steps of the
    timestep method, or an event-driven run (the method's, or the one that counts the timestep method's missed
    collisions) of more than :data:`MAX_EVENTS` events (:func:`expected_events`)."""
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
        which = "the event-driven run that counts the timestep method's missed collisions: " if timestep else ""
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


#: Largest speed a saved state may hold: v² then stays within gas.temperature's bound (1e100).
MAX_STATE_SPEED = 1e50


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
    n, d = np.shape(x) if np.ndim(x) == 2 else (0, 0)
    for name, shape in (("positions", (n, d)), ("velocities", (n, d)), ("radii", (n,)), ("masses", (n,)),
                        ("box", (d,))):
        got = np.shape(data[name] if name in ("radii", "masses", "box") else (x if name == "positions" else v))
        if n == 0 or got != shape:
            raise ValueError(f"{name}: shape {got}, expected {shape} (N particles in d dimensions, from positions)")
    if np.abs(v).max(initial=0.0) > MAX_STATE_SPEED:
        raise ValueError(f"velocities up to {np.abs(v).max():.3g}: at most {MAX_STATE_SPEED:g} (a temperature of "
                         "at most 1e100, as gas.temperature)")
    return GasState(x, v, data["radii"], data["masses"], data["box"], periodic, t, container=container)


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


def run_gas(c: dict, state: GasState | None = None, progress=None) -> tuple[GasRun, dict]:
    """Run the checked config ``c``; (the run, extras: missed collisions for timestep)."""
    state = initial_state(c) if state is None else state
    extra: dict = {}
    t_end = state.time + c["t_end"]
    gravity = c["gravity"]
    # imported here: the timestep method loads numba; the event engine only when a case is not built ahead of time
    if c["method"] == "timestep":
        from ..gas.timestep import run_timestep

        run = run_timestep(state, t_end, c["dt"], restitution=c["restitution"], blocks=c["blocks"],
                           record_interval=c["record_interval"], progress=progress)
        # the count compares with an event-driven run, which cannot take e = 0 (spheres that stick): none then
        extra["missed_collisions"] = _missed_collisions(state, run, c["restitution"]) if c["restitution"] > 0 else None
    else:
        from ..gas import edmd

        guard = _StallGuard(progress, state.time, t_end)
        run = edmd.run(state, t_end, restitution=c["restitution"], blocks=c["blocks"], gravity=gravity,
                       tc=c["tc"], record_interval=c["record_interval"], progress=guard)
        extra["stalled"] = guard.stalled
    return run, extra


def _missed_collisions(state: GasState, run: GasRun, restitution: float) -> int | None:
    """The collisions the timestep ``run`` missed: an event-driven run's count from the same start over the same
    span minus the run's (gas.timestep.missed_collisions, whose event-driven run has the TC model off: with e < 1 it
    collapsed and never ended). Here the event-driven run has the default TC model (off for e = 1, the same count),
    under :class:`_StallGuard`; None when it did not reach the end."""
    from ..gas import edmd

    guard = _StallGuard(None, state.time, run.t_end)
    ev = edmd.run(state, run.t_end, restitution=restitution, progress=guard)
    return ev.n_collisions - run.n_collisions if ev.complete else None


class _StallGuard:
    """The progress callback of an event-driven run (fed its simulated time after each chunk of events, about 0.2 s
    of wall time; passed on to ``progress``) that stops the run as Ctrl-C does — the engine keeps a valid partial
    result — when the time has advanced by at most :data:`STALL_FRACTION` of the run (t0 … t1) over
    :data:`STALL_SECONDS` of wall time; ``stalled`` is then the time it stuck at (else None)."""

    def __init__(self, progress, t0: float, t1: float):
        self.progress, self.step = progress, (t1 - t0) * STALL_FRACTION
        self.mark: tuple[float, float] | None = None   # (simulated, wall) time when the time last advanced a step
        self.stalled: float | None = None

    def __call__(self, t: float) -> None:
        now = time.perf_counter()
        if self.mark is None or t - self.mark[0] > self.step:
            self.mark = (t, now)
        elif now - self.mark[1] > STALL_SECONDS:
            self.stalled = t
            raise KeyboardInterrupt
        if self.progress is not None:
            self.progress(t)


def summarize(run: GasRun, c: dict, extra: dict) -> dict:
    """summary.json's content (see the module docstring)."""
    from ..gas import measure

    st = run.state
    d, n = st.d, st.n
    eta = st.packing_fraction
    sig = 2.0 * float(np.mean(st.radii))
    nb = len(run.block_times) - 1
    cont = st.container
    box_name = "periodic" if st.periodic else ("walls" if cont.kind == "box" else cont.kind)
    out = {"n": n, "dimension": d, "packing_fraction": eta, "box": box_name,
           "container": None if st.periodic else cont.to_dict(),
           "accessible_volume": _finite(st.accessible_volume()), "box_lengths": st.box.tolist(),
           "method": c["method"], "engine": run.info.get("engine"),
           "restitution": run.restitution, "tc": run.tc,
           "gravity": None if run.gravity is None or not np.any(run.gravity) else run.gravity.tolist(),
           "t_start": run.t_start, "t_end": run.t_end, "complete": run.complete,
           "collisions": run.n_collisions, "wall_events": run.n_wall_events,
           "wall_time_s": run.info.get("wall_time"),
           "collisions_per_s": run.n_collisions / run.info["wall_time"] if run.info.get("wall_time") else None,
           "temperature": measure.temperature(st), "records": 0 if run.records is None else len(run.records)}
    notes = []
    if extra.get("stalled") is not None:
        notes.append(stall_message(run, extra["stalled"]))
    if extra.get("tc_warning"):
        notes.append(extra["tc_warning"])
    if c["method"] == "timestep":
        out["dt"] = run.info.get("dt")
        out["missed_collisions"] = missed = extra.get("missed_collisions")
        if missed:
            notes.append(f"the timestep method missed {missed} collision(s) that an event-driven run of the same "
                         "start has (pairs that passed through each other within a step): lower dt")
        elif missed is None and run.restitution > 0:
            notes.append("no missed-collision count: the event-driven run to compare with did not reach the end")
    if run.duration > 0 and run.n_collisions > 0:
        p = measure.pressure(run, sigma=sig, skip_blocks=1 if nb >= 3 else 0)
        eos = float(measure.reduced_pressure_eos(eta, d))
        out.update(reduced_pressure=p.reduced, reduced_pressure_err=None if math.isnan(p.reduced_err)
                   else p.reduced_err, pressure_blocks=p.blocks,
                   eos="Carnahan–Starling" if d == 3 else "Henderson", eos_reduced_pressure=eos,
                   deviation_relative=p.reduced / eos - 1,
                   deviation_in_errors=None if not p.reduced_err > 0 else (p.reduced - eos) / p.reduced_err,
                   mean_free_path=measure.mean_free_path(run))
        D, pval = measure.speed_ks_test(st)
        out.update(ks_statistic=D, ks_pvalue=pval)
    else:
        notes.append("no collisions: no pressure, mean free path or speed test")
    if out["gravity"]:
        notes.append("gravity: the gas is stratified, the bulk equation of state does not apply")
    if run.restitution < 1:
        notes.append("restitution < 1: the gas cools, it is not in equilibrium (the EOS and Maxwell do not apply)")
    if not st.periodic:
        notes.append("hard walls: the collision virial misses the walls' share; compare with care")
        if c["method"] == "event" and run.duration > 0 and run.block_wall_impulse is not None:
            w = measure.wall_pressure(run, skip_blocks=1 if nb >= 3 else 0)
            out["wall_pressure"] = {name: {"P": float(p), "P_err": _finite(e), "area": float(a)}
                                    for name, p, e, a in zip(w.names, w.P, w.P_err, w.area)
                                    if math.isfinite(p)}
            out["wall_pressure_ideal_gas"] = _finite(w.ideal)
    out["notes"] = notes
    return out


def stall_message(run: GasRun, t: float) -> str:
    """What a run stopped by :class:`_StallGuard` at time t says (summary.json's notes, the command's last line)."""
    cause = (f"inelastic collapse: raise tc (the TC model's time, {run.tc:g}) or the restitution"
             if run.restitution < 1 else "spheres pressed together: check the start")
    return (f"the event-driven run stalled at t = {t:.10g}: {run.n_collisions:,} collisions, and its time advanced "
            f"by at most {STALL_FRACTION:g} of the run over {STALL_SECONDS:g} s of wall time ({cause})")


def _finite(x):
    """x as a float, None when it is not finite (summary.json has no nan)."""
    return float(x) if x is not None and math.isfinite(x) else None


def write_gas_outputs(run: GasRun, c: dict, outdir, extra: dict | None = None) -> dict:
    """gas.npz, gas.csv and summary.json into ``outdir``, published as one output set (:mod:`..io.outset`); returns
    the summary. A partial run says so in every file: ``complete`` in gas.npz and summary.json, a ``#`` comment
    above gas.csv's header."""
    from ..io.outset import OutputSet

    with OutputSet(outdir, "gas") as out:
        summary = _write_gas_files(run, c, out.staging, extra)
        out.publish(complete=run.complete)
    return summary


def _write_gas_files(run: GasRun, c: dict, outdir: Path, extra: dict | None) -> dict:
    extra = extra or {}
    st = run.state
    rec = run.records
    arrays = {"radii": st.radii, "masses": st.masses, "box": st.box, "periodic": np.array(st.periodic),
              "gravity": np.zeros(st.d) if run.gravity is None else run.gravity,
              "final_positions": st.positions, "final_velocities": st.velocities, "final_time": np.array(st.time),
              "container_kind": np.array(st.container.kind), "container_axis": np.array(st.container.axis),
              "container_radius": np.array(st.container.radius),
              "container_centre": np.zeros(st.d) if st.container.centre is None else st.container.centre,
              "container_planes": st.container.planes.reshape(-1, st.d + 1), "complete": np.array(run.complete)}
    if rec is not None:
        arrays.update(times=rec.times, positions=rec.positions, velocities=rec.velocities,
                      collisions=rec.collisions, virial=rec.virial, kinetic=rec.kinetic, potential=rec.potential)
    with atomic_open(outdir / "gas.npz", "wb") as fh:
        np.savez(fh, **arrays)   # stored: positions and velocities deflate by ~5 %, at 0.5 s for 4000 spheres
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if not run.complete:
        buf.write(f"# partial run: interrupted at t = {run.t_end:g}\n")
    w.writerow(["t", "temperature", "kinetic", "potential", "collisions", "pressure", "reduced_pressure"])
    if rec is not None:
        sig = 2.0 * float(np.mean(st.radii))
        for k in range(len(rec)):
            T = 2.0 * rec.kinetic[k] / (st.d * st.n)
            dt = rec.times[k] - run.t_start
            P = (2.0 * rec.kinetic[k] + rec.virial[k] / dt) / (st.d * st.volume) if dt > 0 else math.nan
            red = P * sig ** st.d / T if dt > 0 and T > 0 else math.nan
            w.writerow([f"{rec.times[k]:.10g}", f"{T:.10g}", f"{rec.kinetic[k]:.10g}", f"{rec.potential[k]:.10g}",
                        int(rec.collisions[k]), "" if math.isnan(P) else f"{P:.10g}",
                        "" if math.isnan(red) else f"{red:.10g}"])
    with atomic_open(outdir / "gas.csv", "w", encoding="utf-8") as fh:
        fh.write(buf.getvalue())
    summary = summarize(run, c, extra)
    with atomic_open(outdir / "summary.json", "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2, allow_nan=False, default=float)
    return summary


class _Bar:
    """A one-line progress bar on stderr (a terminal only), fed the simulated time."""

    def __init__(self, t0: float, t1: float, enabled: bool):
        self.t0, self.span, self.last = t0, max(t1 - t0, 1e-300), -1
        self.enabled = enabled and sys.stderr.isatty()

    def __call__(self, t: float) -> None:
        pct = int(min(max((t - self.t0) / self.span, 0.0), 1.0) * 100)
        if self.enabled and pct != self.last:
            self.last = pct
            sys.stderr.write(f"\r[{'#' * (pct // 4):<25}] {pct:3d}%  t = {t:.4g}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


#: command-line option → scene key
OPTIONS = {"n": "n", "dimension": "dimension", "packing_fraction": "packing_fraction", "temperature": "temperature",
           "box": "box", "cylinder_axis": "cylinder_axis", "cylinder_aspect": "cylinder_aspect",
           "restitution": "restitution", "tc": "tc", "gravity": "gravity", "t_end": "t_end",
           "record_interval": "record_interval", "blocks": "blocks", "method": "method", "dt": "dt", "seed": "seed",
           "start": "start", "state": "state"}


def _parse_gravity(text: str):
    parts = [p for p in text.replace(",", " ").split() if p]
    try:
        vals = [float(p) for p in parts]
    except ValueError as err:
        raise _err("gravity", f"expected a number or comma-separated numbers, got {text!r}") from err
    return vals[0] if len(vals) == 1 else vals


def cmd_gas(args) -> int:
    import signal

    from ..io.outset import output_folder

    cfg = load_gas_scene(args.scene) if args.scene else {}
    given = {}   # the options typed (their defaults are None)
    for opt, key in OPTIONS.items():
        val = getattr(args, opt)
        if val is not None:
            cfg[key] = given[key] = _parse_gravity(val) if key == "gravity" else val
    c = check_config(cfg, given)
    state = initial_state(c)
    check_length(c, state)
    tc_warning = check_tc(c, state)
    if tc_warning:
        print(f"warning: {tc_warning}", file=sys.stderr)
    output_folder(args.outdir, "gas")   # checked before the run, not after it
    bar = _Bar(state.time, state.time + c["t_end"], not args.quiet)
    # SIGTERM (kill, a job scheduler) stops the run as Ctrl-C does: the engines keep a valid partial result
    old_term = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        run, extra = run_gas(c, state, progress=bar)
        extra["tc_warning"] = tc_warning
    except KeyboardInterrupt:   # before the engines could catch it: while numba compiled them, say
        print("interrupted before the run started (the engine was being set up or compiled); nothing was written",
              file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, old_term)
        bar.close()
    summary = write_gas_outputs(run, c, args.outdir, extra)
    if not args.quiet:
        print(json.dumps(summary, indent=2))
    for line in run.info.get("warnings", []):
        print(f"warning: {line}", file=sys.stderr)
    if extra.get("stalled") is not None:
        print(f"simulation failed: {stall_message(run, extra['stalled'])}; partial results written to {args.outdir}",
              file=sys.stderr)
        return 1
    if not run.complete:
        print(f"interrupted at t = {run.t_end:g}; partial results written to {args.outdir}", file=sys.stderr)
        return 130
    return 0


def add_gas_command(sub) -> None:
    """Register ``gas`` on the CLI's sub-parsers."""
    p = sub.add_parser("gas", help="hard-sphere gas (event-driven or fixed-step): gas.npz, gas.csv, summary.json",
                       description="Hard disks (dimension 2) or spheres (3), event-driven molecular dynamics. "
                                   "Units: σ (diameter) = m = k_B T = 1 unless the scene says otherwise.")
    p.add_argument("scene", nargs="?", help="gas scene file (.toml with a [gas] table) or example:hard-sphere-gas")
    p.add_argument("-o", "--outdir", required=True, help="output folder")
    p.add_argument("--n", type=int, help="number of particles")
    p.add_argument("--dimension", "-d", type=int, choices=(2, 3), help="2 (disks) or 3 (spheres)")
    p.add_argument("--packing-fraction", "--eta", type=float, help="volume (area) fraction η")
    p.add_argument("--temperature", type=float, help="k_B T (energy units)")
    p.add_argument("--box", choices=BOXES, help="periodic box, hard box faces, or a hard sphere / cylinder container")
    p.add_argument("--cylinder-axis", type=int, choices=(0, 1, 2), help="--box cylinder: the axis it lies along")
    p.add_argument("--cylinder-aspect", type=float, help="--box cylinder: length / diameter (default 1)")
    p.add_argument("--restitution", type=float, help="coefficient of restitution e of pair collisions (≤ 1)")
    p.add_argument("--tc", type=float, help="TC model time against inelastic collapse (default: picked for e < 1)")
    p.add_argument("--gravity", help="g along −axis d−1, or a vector 'gx,gy[,gz]' (needs --box walls)")
    p.add_argument("--t-end", type=float, help="duration of the run (time units)")
    p.add_argument("--record-interval", type=float, help="time between records (default t_end / 100)")
    p.add_argument("--blocks", type=int, help="time blocks for the pressure's error bar (default 20)")
    p.add_argument("--method", choices=("event", "timestep"), help="event-driven (default) or the fixed-step method")
    p.add_argument("--dt", type=float, help="step of the timestep method")
    p.add_argument("--seed", type=int)
    p.add_argument("--start", choices=("auto", "random", "lattice"), help="start configuration")
    p.add_argument("--state", help="start from a saved state (a gas run's gas.npz or output folder, or an npz of "
                                   "arrays)")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_gas)
