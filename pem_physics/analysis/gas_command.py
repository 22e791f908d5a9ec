"""The ``gas`` command: a hard-sphere gas run from a scene file and/or options, and its output folder.

Scene file (TOML, e.g. ``examples/scenes/hard_sphere_gas.toml``), every key optional, one table::

    [gas]
    n = 4000                 # particles
    dimension = 3            # 2 (disks) or 3 (spheres)
    packing_fraction = 0.25  # η: volume (area) fraction of the balls
    temperature = 1.0        # k_B T, energy units (σ = m = k_B = 1 by default)
    box = "periodic"         # or "walls" (hard mirrors), "sphere" or "cylinder" (hard containers)
    cylinder_axis = 2        # box = "cylinder": the axis (0, 1, 2) it lies along, closed by the box faces
    cylinder_aspect = 1.0    # box = "cylinder": length / diameter (refused, with the range that fits, when too
                             # flat or thin for the spheres' centres to have room)
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
timestep method or (estimated) events of an event-driven run, an event-driven run estimated to take at most a day
on the engine that will run it (:func:`check_duration`; ``--force`` starts a longer one); a packing fraction whose
box is at most :data:`MAX_BOX_DIAMETERS` a side and whose cell lists fit in memory; a gravity whose fall across the
box gives a particle at most :data:`MAX_GRAVITY_ENERGY` k_B T. With ``state`` (or ``--state``) the options
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
  path, the Kolmogorov–Smirnov p-value of the speeds, and for ``timestep``: ``passes``, the collisions the run
  itself saw it miss (pairs that passed through each other within a step), and against an event-driven run from
  the same start, its collisions matched by pair and time within dt
  (:func:`pem_physics.gas.timestep.missed_collisions`): ``missed_collisions`` (the event-driven run's without a
  match), ``spurious_collisions`` (the run's without one), ``matched_collisions`` and ``first_mismatch_time``
  (the runs agree up to it, then part ways).
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

from ..io.files import atomic_open
from .gas_config import (
    BOXES,
    BYTES_PER_BLOCK,
    BYTES_PER_CELL,
    BYTES_PER_PARTICLE,
    DEFAULTS,
    EXAMPLE,
    EXAMPLES,
    MAX_BOX_DIAMETERS,
    MAX_EVENTS,
    MAX_GRAVITY_ENERGY,
    MAX_TEMPERATURE,
    OPTIONS,
    STATE_FIXES,
    TC_WARN_FRACTION,
    check_config,
    check_duration,
    check_length,
    check_tc,
    expected_events,
    load_gas_scene,
)
from .gas_start import MAX_STATE_SPEED, initial_state, load_state
from .gas_start import gas_error as _err

if TYPE_CHECKING:
    from ..gas.state import GasRun, GasState

#: The scene's keys, defaults, limits and checks live in .gas_config, the start in .gas_start: imported here for
#: this module's callers (``gas_command.check_config`` …) as before the split.
__all__ = ["BOXES", "BYTES_PER_BLOCK", "BYTES_PER_CELL", "BYTES_PER_PARTICLE", "DEFAULTS", "EXAMPLE", "EXAMPLES",
           "MAX_BOX_DIAMETERS", "MAX_EVENTS", "MAX_GRAVITY_ENERGY", "MAX_STATE_SPEED", "MAX_TEMPERATURE", "OPTIONS",
           "STALL_FRACTION", "STALL_SECONDS", "STATE_FIXES", "TC_WARN_FRACTION", "add_gas_command", "check_config",
           "check_duration", "check_length", "check_tc", "cmd_gas", "expected_events", "initial_state",
           "load_gas_scene", "load_state", "run_gas", "stall_message", "summarize", "write_gas_outputs"]

# The gas modules (and tomllib) are imported by the functions that use them: the command line registers
# this command on every start, and ``run`` need not load them.

#: Wall-clock seconds an event-driven run may go on while its simulated time advances by less than
#: :data:`STALL_FRACTION` of the run before the command stops it as stalled (:class:`_StallGuard`): inelastic collapse
#: (a cluster's collisions pile up at one instant, e.g. with the TC model off) stops the time for good while the
#: collisions grow by millions a second. A run that advanced that slowly would take over 10¹⁰ s (300 years) to end.
STALL_SECONDS = 10.0
#: See :data:`STALL_SECONDS`.
STALL_FRACTION = 1e-9


def run_gas(c: dict, state: GasState | None = None, progress=None) -> tuple[GasRun, dict]:
    """Run the checked config ``c``; (the run, extras: for timestep its comparison with an event-driven run)."""
    state = initial_state(c) if state is None else state
    extra: dict = {}
    t_end = state.time + c["t_end"]
    gravity = c["gravity"]
    # imported here: the timestep method loads numba; the event engine only when a case is not built ahead of time
    if c["method"] == "timestep":
        from ..gas.timestep import run_timestep

        run = run_timestep(state, t_end, c["dt"], restitution=c["restitution"], blocks=c["blocks"],
                           record_interval=c["record_interval"], progress=progress, log=True)
        # the comparison is an event-driven run, which cannot take e = 0 (spheres that stick): none then; nor
        # after Ctrl-C (or SIGTERM) stopped the run, which asked for the command to end, not for another run
        extra["comparison"] = extra["comparison_interrupted"] = None
        if c["restitution"] > 0 and run.complete:
            extra["comparison"], extra["comparison_interrupted"] = _compare(state, run)
    else:
        from ..gas import edmd

        guard = _StallGuard(progress, state.time, t_end)
        run = edmd.run(state, t_end, restitution=c["restitution"], blocks=c["blocks"], gravity=gravity,
                       tc=c["tc"], record_interval=c["record_interval"], progress=guard)
        extra["stalled"] = guard.stalled
    return run, extra


def _compare(state: GasState, run: GasRun):
    """(comparison, interrupted): the timestep ``run``'s collisions matched against an event-driven run's from the
    same start (:func:`pem_physics.gas.timestep.missed_collisions`: with e < 1 the default TC model), under
    :class:`_StallGuard`, and None. (None, None) when that run stalled; (None, t) when Ctrl-C (or SIGTERM) stopped
    it at its time t: the engine keeps a partial run, and the command must end as interrupted."""
    from ..gas.timestep import missed_collisions

    guard = _StallGuard(None, state.time, run.t_end)
    comp = missed_collisions(state, run, progress=guard)
    if comp.complete:
        return comp, None
    return None, (comp.t_end if guard.stalled is None else None)


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
        _timestep_summary(run, extra, out, notes)
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


def _timestep_summary(run: GasRun, extra: dict, out: dict, notes: list) -> None:
    """The timestep method's own count of the collisions it passed over and its comparison with the event-driven
    run (``extra["comparison"]``, :class:`pem_physics.gas.timestep.CollisionComparison`), into ``out`` and ``notes``."""
    out["passes"] = passes = run.info.get("passes")
    if passes:
        notes.append(f"the timestep method missed {passes} collision(s): pairs that passed through each other within "
                     f"a step (or whose overlap was found already separating), by its own check: lower dt")
    comp = extra.get("comparison")
    out["missed_collisions"] = None if comp is None else comp.missed
    out["spurious_collisions"] = None if comp is None else comp.spurious
    out["matched_collisions"] = None if comp is None else comp.matched
    out["first_mismatch_time"] = None if comp is None else comp.first_mismatch
    if comp is not None and comp.first_mismatch is not None:
        notes.append(f"against an event-driven run of the same start (collisions matched by pair and time within dt): "
                     f"{comp.missed} of its {comp.event_collisions} collision(s) missing here, {comp.spurious} of "
                     f"this run's {comp.timestep_collisions} spurious; the runs agree up to t = "
                     f"{comp.first_mismatch:.6g} and part ways after it (chaos: one different collision changes all "
                     f"that follow), so these counts also hold the collisions that differ because of it")
    elif extra.get("comparison_interrupted") is not None:
        notes.append(f"no comparison with an event-driven run: it was interrupted at t = "
                     f"{extra['comparison_interrupted']:g}")
    elif comp is None and run.restitution > 0 and run.complete:
        notes.append("no comparison with an event-driven run: it did not reach the end")


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
    check_duration(c, state, force=args.force)
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
    if extra.get("comparison_interrupted") is not None:   # the run is whole; the count it is compared by is not
        print(f"interrupted at t = {extra['comparison_interrupted']:g} of the event-driven run compared with; partial "
              f"results written to {args.outdir} (the timestep run whole, without its comparison)",
              file=sys.stderr)
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
    p.add_argument("--force", action="store_true", help="start even a run estimated to take more than a day")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_gas)
