"""Command line: ``python -m pem_physics`` (or ``pem``).

The top of the package: it parses arguments, calls the library (model, engine, io, analysis)
and turns its errors into messages and exit codes. Sub-commands: run, inertia, convert, plot,
info, basin, sweep.
Exit codes: 0 success, 1 simulation error, 2 invalid input, 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from .analysis.sweep_parameters import PARAMETERS as SWEEP_PARAMETERS
from .errors import PemError, SimulationError, ValidationError
from .io import outset
from .io.loading import load_mesh, load_scene
from .io.outset import output_folder
from .model.scene import METHODS


class _Progress:
    """A one-line progress bar on stderr (only when it is a terminal)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.last = -1

    def __call__(self, fraction: float) -> None:
        pct = int(fraction * 100)
        if self.enabled and pct != self.last:
            self.last = pct
            bar = "#" * (pct // 4)
            sys.stderr.write(f"\r[{bar:<25}] {pct:3d}%")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


class NotStarted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM before the run first reported progress or asked whether to stop: while it was set up or
    its engine compiled (numba's first build takes minutes), when there is nothing to publish yet."""


@contextlib.contextmanager
def interruptible(quiet: bool):
    """(progress, stop) callbacks for a long run: a progress bar, and Ctrl-C or SIGTERM (``kill``, a job
    scheduler's stop) asks the run to stop cleanly; its partial result is then published marked incomplete.
    Before the run first reports progress or polls ``stop()`` (setting up, compiling its kernels) the signal ends
    the command at once (:class:`NotStarted`), as does a second signal the run has not yet honoured."""
    flag = {"stop": False, "started": False}

    def on_signal(signum, frame):
        again = flag["stop"]
        flag["stop"] = True   # threads of the run stop at their next poll whatever happens here
        if not flag["started"]:
            raise NotStarted
        if again:
            raise KeyboardInterrupt

    def stop() -> bool:
        flag["started"] = True
        return flag["stop"]

    def report(fraction: float) -> None:   # started before the bar shows it: a signal then keeps what was run
        flag["started"] = True
        progress(fraction)

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    progress = _Progress(not quiet)
    try:
        yield report, stop
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        progress.close()


def cmd_run(args) -> int:
    from .analysis import duration
    from .engine.simulate import prepare
    from .io.output import write_outputs

    scene = load_scene(args.scene)
    if args.method and scene.contact_model == "surface":
        raise ValidationError("--method", f"{args.method} does not apply: a body on a table (contact_model = "
                                          "\"surface\") runs the table's own second-order step; drop --method")
    output_folder(args.outdir, "run")   # checked before the run, not after it
    with interruptible(args.quiet) as (progress, stop):
        run = prepare(scene, method=args.method, dt=args.dt, t_end=args.t_end, record_interval=args.record_interval)
        # settings.t_end: named --t-end with its value where typed (_as_option); a --dt that drives it, by itself
        duration.check_duration(run.scene.settings.steps, len(run.system.names), 1, args.dt, scene.settings.dt,
                                force=args.force, t_end_path="settings.t_end",
                                dt_path=_typed("dt", args.dt) if args.dt is not None else "--dt")
        traj = run.execute(progress, stop)
    summary = write_outputs(traj, args.outdir)
    if not args.quiet:
        print(json.dumps(summary, indent=2))
    for line in traj.info.get("warnings", []):
        print(f"warning: {line}", file=sys.stderr)
    rounded = _rounded_end(scene.settings.t_end if args.t_end is None else args.t_end,
                           scene.settings.dt if args.dt is None else args.dt, traj)
    if rounded:
        print(f"note: {rounded}", file=sys.stderr)
    if not args.quiet and not traj.ensemble and traj.info.get("kernels") == "jit":
        from . import aot

        if aot.enabled():  # numba's import and cache load are most of a short run: say how to skip them
            print("note: this run started numba's JIT engine (~1 s of start-up); `python -m pem_physics "
                  "build-engine` (or `pip install .`) builds the same kernels ahead of time once (a few minutes, "
                  "needs a C compiler) and later runs of one scene start without numba", file=sys.stderr)
    if not traj.complete:
        print(f"interrupted at t = {traj.t[-1]:g} s; partial results written to {args.outdir}", file=sys.stderr)
        return 130
    return 0


def _rounded_end(t_end: float, dt: float, traj) -> str | None:
    """The note of a run whose t_end (s) is not a whole number of steps dt (s): the scene format rounds it to whole
    steps (docs/scene-format.md), so the run ends elsewhere than the user asked — said, not silent."""
    from .model.scene import rounded_end

    return rounded_end(t_end, dt)[1] if traj.complete else None


def cmd_build_engine(args) -> int:
    from .engine.backends import prebuild

    try:
        prebuild.build(args.dir, force=args.force)
    except KeyboardInterrupt:
        print("build-engine interrupted: nothing half-built was left and nothing was installed; runs keep using the "
              "kernels they had (numba's JIT, or an earlier build)", file=sys.stderr)
        return 130
    return 0


#: Largest mesh whose surface ``inertia`` checks for self-intersection by default (the check's cost grows with it).
SELF_CHECK_FACES = 100_000


def cmd_inertia(args) -> int:
    from .model.inertia import mesh_mass_properties

    if not (np.isfinite(args.scale) and args.scale > 0):
        raise ValidationError("--scale", f"expected a factor > 0 (mesh units to metres), got {args.scale!r}")
    from .io.scenefile import MAX_MAGNITUDE as MAX_VALUE  # a scene file's bound on every number

    for name, value in (("--density", args.density), ("--mass", args.mass)):
        if value is not None and not (np.isfinite(value) and 0 < value <= MAX_VALUE):
            raise ValidationError(name, f"expected a number > 0 and at most {MAX_VALUE:g} (SI), got {value!r}")
    V, F = load_mesh(args.mesh)
    V = V * args.scale
    size = float(np.max(np.ptp(V, axis=0))) if len(V) else 0.0   # m across
    # volume ~ size³, inertia ~ ρ·size⁵ (or m·size²): compared in logarithms, which do not overflow
    big = np.log10(MAX_VALUE)
    if size > 0 and (not np.isfinite(size) or 3 * np.log10(size) > big
                     or (np.log10(args.mass) + 2 * np.log10(size) if args.mass else
                         np.log10(args.density or 1.0) + 5 * np.log10(size)) > big):
        raise ValidationError("--scale", f"the mesh would be {size:g} m across: its volume or inertia would pass "
                                         f"{MAX_VALUE:g} (SI); check --scale (mesh units to metres)")
    with np.errstate(over="ignore", invalid="ignore"):   # checked below, by name
        mp = mesh_mass_properties(V, F, density=args.density, mass=args.mass)
    from .model.scene import MIN_MASS

    if not mp.mass >= MIN_MASS:   # a scene's lightest body: 1e-320 kg/m³ gave 8e-320 kg, a mass no scene takes
        given = _typed("density", args.density) if args.mass is None else _typed("mass", args.mass)
        raise ValidationError(given, f"gives the mesh a mass of {mp.mass:.3g} kg, below the {MIN_MASS:g} kg a scene's "
                                     "body may weigh (lighter, its accelerations overflow): check --density or --mass "
                                     "(SI) and --scale")
    size = [mp.mass, mp.volume or 0.0, *np.ravel(mp.center_of_mass), *np.ravel(mp.inertia)]
    if not all(np.isfinite(size)) or max(abs(x) for x in size) > MAX_VALUE:
        raise ValidationError(args.mesh, f"its mass properties at --scale {args.scale:g} and this density or mass "
                                         f"pass {MAX_VALUE:g} (SI) or floating point's range: check --scale (mesh "
                                         "units to metres), --density and --mass")
    from .model.mesh_parts import mesh_parts, overlapping_parts, self_intersects

    parts = mesh_parts(F, len(V))
    pairs = overlapping_parts(V, F, parts)
    if pairs:   # their common volume would count twice: two 1 m³ cubes overlapping by half gave 2.0, not 1.5
        i, j = pairs[0]
        raise ValidationError(args.mesh, f"parts {i + 1} and {j + 1} of its {len(parts)} closed parts overlap (faces "
                                         f"{int(parts[i][0]) + 1}… and {int(parts[j][0]) + 1}…"
                                         + (f", and {len(pairs) - 1} more pair(s)" if len(pairs) > 1 else "")
                                         + "): their common volume would count twice; join them into one closed "
                                           "surface (a union, e.g. Blender's Boolean modifier) or move them apart")
    checked = args.check_surface == "always" or (args.check_surface == "auto" and len(F) <= SELF_CHECK_FACES)
    if checked and self_intersects(V, F):
        raise ValidationError(args.mesh, "the surface passes through itself (an edge crosses one of its faces): it "
                                         "encloses no solid and some volume would count twice; repair it (e.g. "
                                         "Blender's 3D-Print Toolbox ▸ Intersections, or a union of the parts)")
    moments, axes = mp.principal()
    out = {
        "mesh": args.mesh,
        "triangles": int(len(F)),
        "mass": mp.mass,
        "volume": mp.volume,
        "center_of_mass": mp.center_of_mass.tolist(),
        "inertia_about_center_of_mass": mp.inertia.tolist(),
        "inertia_about_origin": mp.inertia_about(np.zeros(3)).tolist(),
        "principal_moments": moments.tolist(),
        "principal_axes": axes.T.tolist(),
        "closed_parts": len(parts),
        "self_intersection_checked": checked,
    }
    print(json.dumps(out, indent=2))
    return 0


def _new_output(out: Path, source: str, force: bool) -> None:
    """Refuse an output that would destroy a file: the input scene itself, a folder, or (without ``--force``) any
    existing file."""
    if out.is_dir():
        raise ValidationError(str(out), "is a folder: give the output file's name")
    if not (out.exists() or out.is_symlink()):
        return
    if Path(source).exists() and out.resolve() == Path(source).resolve():
        raise ValidationError(str(out), "is the input scene itself: write the converted scene to another file")
    if not force:
        raise ValidationError(str(out), "exists: choose another name, or pass --force to replace it")


def cmd_convert(args) -> int:
    out = Path(args.output)
    _new_output(out, args.scene, args.force)
    scene = load_scene(args.scene)
    suffix = out.suffix.lower()
    if suffix == ".toml":
        from .io.scene_writer import save_scene

        if args.method or args.units or args.udf_version:
            raise ValidationError(str(out), "--method, --units and --udf-version apply to .udf output only")
        save_scene(scene, out)
    elif suffix == ".udf":
        from .io.udf_write import DEF_FILES, write_udf

        version = args.udf_version or "1.3"
        write_udf(scene, out, units=args.units or "si", version=version, method=args.method)
        if not args.quiet:
            print(f"wrote {out} and {out.parent / DEF_FILES[version]} (PEM def {version})")
        return 0
    else:
        raise ValidationError(str(out), "the output must be a .toml scene file or a .udf PEM input file")
    if not args.quiet:
        print(f"wrote {out} ({len(scene.bodies)} bodies)")
    return 0


# The analysis modules are imported by their commands: ``run`` starts ~20 ms sooner without them.

def cmd_plot(args) -> int:
    from .analysis import plot

    paths = plot.plot_outputs(args.outdir, args.pngdir, body=args.body)
    for p in paths:
        print(p)
    return 0


def add_plot_command(sub) -> None:
    p = sub.add_parser("plot", help="PNG figures (energies, ω, L sphere, top view) from a run's output folder")
    p.add_argument("outdir", help="folder written by 'run' (holds trajectory.npz)")
    p.add_argument("-o", "--pngdir", help="where to write the PNGs (default: the run folder)")
    p.add_argument("--body", type=int, help="body index for the L-sphere figure (default 0)")
    p.set_defaults(func=cmd_plot)


def cmd_info(args) -> int:
    from .analysis import info

    rows = info.body_info(load_scene(args.scene))
    print(json.dumps(rows, indent=2) if args.json else info.format_table(rows))
    return 0


def add_info_command(sub) -> None:
    p = sub.add_parser("info", help="mass, centre of mass, inertia tensors and principal axes of a scene's bodies")
    p.add_argument("scene", help="scene file (.toml, PEM .udf, .py defining 'scene') or example:NAME")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_info)


def cmd_basin(args) -> int:
    from .analysis import basin, chunks

    scene = load_scene(args.scene)
    if args.friction is not None:
        scene = replace(scene, friction=args.friction)
    chunks.check_folders(args.chunk_dir, args.outdir)
    output_folder(args.outdir, "basin")   # checked before the run, not after it
    with interruptible(args.quiet) as (progress, stop), chunks.client_for(args.scheduler, args.workers) as client:
        result = basin.basin_map(scene, grid=args.grid, extent=args.extent, t_end=args.t_end, chunk=args.chunk,
                                 method=args.method, progress=progress, stop=stop, client=client,
                                 chunk_dir=args.chunk_dir, resume=args.resume, force=args.force, dt=args.dt)
    summary = basin.write(result, args.outdir)
    if not args.quiet:
        print(json.dumps(summary, indent=2))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    for line in summary["warnings"]:
        print(f"warning: {line}", file=sys.stderr)
    for f in result.failures:
        print(f"simulation failed for grid points {f.start}–{f.stop - 1} (chunk {f.chunk}): {f.message}",
              file=sys.stderr)
    if result.failures:
        return 1
    if not result.complete:
        print(f"interrupted; partial map written to {args.outdir}", file=sys.stderr)
        return 130
    return 0


def add_basin_command(sub) -> None:
    b = sub.add_parser("basin", help="basin map: where a damped pendulum comes to rest vs its release point")
    b.add_argument("scene", help="scene with one pendulum and fixed magnets (e.g. example:three-magnet)")
    b.add_argument("-o", "--outdir", required=True)
    b.add_argument("--grid", type=int, default=64, help="grid points per side (default 64)")
    b.add_argument("--extent", type=float, help="half-width of the release square, m (default: 1.6 × magnet radius)")
    b.add_argument("--t-end", type=float, help="integration time, s (default: the scene's)")
    b.add_argument("--dt", type=float, help="time step, s (default: the scene's)")
    b.add_argument("--friction", type=float, help="pivot friction, N·m·s (default: the scene's)")
    b.add_argument("--chunk", type=int, default=4096, help="members integrated together (bounds memory)")
    b.add_argument("--method", help="integrator (default: the scene's); with numba installed, splitting4/2 and "
                                    "pem-rk4 run members in SIMD lanes")
    add_chunk_options(b)
    b.add_argument("--force", action="store_true", help="start even a map estimated to take more than a day")
    b.add_argument("-q", "--quiet", action="store_true")
    b.set_defaults(func=cmd_basin)


def add_chunk_options(p) -> None:
    """Where the chunks of a basin map or sweep run, and their files (pem_physics.analysis.chunks)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--scheduler", help="run the chunks on an existing Dask cluster: its scheduler's address, "
                                       "e.g. tcp://HOST:8786 (pip install pem_physics[distributed])")
    g.add_argument("--workers", type=int, help="run the chunks on N local worker processes (Dask LocalCluster)")
    p.add_argument("--chunk-dir", help="keep each chunk's result in this folder as it completes (a killed run "
                                       "can then --resume)")
    p.add_argument("--resume", action="store_true", help="continue the run whose chunks are in --chunk-dir")


def cmd_sweep(args) -> int:
    from .analysis import chunks, sweep

    scene = load_scene(args.scene)
    params = [sweep.parse_param(t) for t in args.param]
    if args.heatmap is not None:  # checked now, not after a long run
        names = [c[0] for c in sweep.columns(scene.checked())]
        if args.heatmap not in names:
            raise ValidationError("--heatmap", f"unknown column {args.heatmap!r}; choose one of {', '.join(names)}")
        varying = [p.spec for p in params if len(p.values) > 1]
        if len(varying) != 2:
            raise ValidationError("--heatmap", f"a heat map needs exactly two parameters with several values; "
                                               f"{len(varying)} vary ({', '.join(varying) or 'none'})")
    sweep.check_params(scene.checked(), params)   # a grid that does not fit the scene: refused before any folder
    chunks.check_folders(args.chunk_dir, args.outdir)
    output_folder(args.outdir, "sweep")   # checked before the run, not after it
    with interruptible(args.quiet) as (progress, stop), chunks.client_for(args.scheduler, args.workers) as client:
        result = sweep.sweep(scene, params, t_end=args.t_end, dt=args.dt, method=args.method, samples=args.samples,
                             chunk=args.chunk, settle_speed=args.settle_speed, settle_distance=args.settle_distance,
                             progress=progress, stop=stop, client=client, chunk_dir=args.chunk_dir,
                             resume=args.resume, force=args.force)
    summary = sweep.write(result, args.outdir, scene_label=args.scene, scene_name=scene.name, heatmap=args.heatmap)
    if not args.quiet:
        brief = {k: summary[k] for k in ("members", "members_completed", "complete", "wall_time_s", "method",
                                         "dt", "t_end")}
        print(json.dumps(brief, indent=2))
    for note in result.notes or []:
        print(f"note: {note}", file=sys.stderr)
    for warning in result.warnings or []:
        print(f"warning: {warning}", file=sys.stderr)
    if result.error is not None:
        print(f"simulation failed: {result.error}; partial table written to {args.outdir}", file=sys.stderr)
        return 1
    if not result.complete:
        print(f"interrupted; partial table written to {args.outdir} "
              f"({result.members_completed} of {summary['members']} grid points done)", file=sys.stderr)
        return 130
    return 0


def add_sweep_command(sub) -> None:
    s = sub.add_parser("sweep", help="run a scene over a grid of parameters (friction, field, release, ω) "
                                     "and write a table",
                       description="Sweep parameters over their Cartesian grid (the first --param varies slowest) "
                                   "and write sweep.csv, sweep.json and, for two varying parameters, sweep.png. "
                                   "Parameters: " + ", ".join(f"{k} ({u})" for k, (u, _) in SWEEP_PARAMETERS.items()))
    s.add_argument("scene", help="scene file (.toml, PEM .udf, .py defining 'scene') or example:NAME")
    s.add_argument("-o", "--outdir", required=True, help="output folder")
    s.add_argument("--param", action="append", required=True, metavar="NAME=VALUES",
                   help="a swept parameter: NAME=start:stop:count, NAME=a,b,c or NAME=value (repeat for more)")
    s.add_argument("--t-end", type=float, help="integration time, s (default: the scene's)")
    s.add_argument("--dt", type=float, help="time step, s (default: the scene's)")
    s.add_argument("--method", choices=METHODS, help="integrator (default: the scene's)")
    s.add_argument("--samples", type=int, default=200,
                   help="records per member for energy_max and settle_time (default 200)")
    s.add_argument("--chunk", type=int, default=1024, help="members integrated together at most (bounds memory)")
    s.add_argument("--settle-speed", type=float, default=1e-3,
                   help="bob speed, m/s, below which a magnet pendulum counts as at rest (default 1e-3)")
    s.add_argument("--settle-distance", type=float,
                   help="how close, m, to a magnet it must rest (default: half the smallest magnet spacing)")
    s.add_argument("--heatmap", help="outcome column drawn in sweep.png (default: label, else energy_final)")
    add_chunk_options(s)
    s.add_argument("--force", action="store_true", help="start even a sweep estimated to take more than a day")
    s.add_argument("-q", "--quiet", action="store_true")
    s.set_defaults(func=cmd_sweep)


def add_run_command(sub) -> None:
    r = sub.add_parser("run", help="simulate a scene and write trajectory.npz/.csv and summary.json")
    r.add_argument("scene", help="scene file (.toml, PEM .udf, .py defining 'scene') or example:NAME")
    r.add_argument("-o", "--outdir", required=True, help="output folder")
    r.add_argument("--method", choices=METHODS, help="integrator (default: the scene's)")
    r.add_argument("--dt", type=float, help="time step, s")
    r.add_argument("--t-end", type=float, help="end time, s")
    r.add_argument("--record-interval", type=float, help="time between records, s (a multiple of dt)")
    r.add_argument("--force", action="store_true", help="start even a run estimated to take more than a day")
    r.add_argument("-q", "--quiet", action="store_true")
    r.set_defaults(func=cmd_run)


def add_inertia_command(sub) -> None:
    i = sub.add_parser("inertia", help="mass properties of a closed triangle mesh, as JSON")
    i.add_argument("mesh", help="OBJ/STL/PLY file")
    g = i.add_mutually_exclusive_group(required=True)
    g.add_argument("--density", type=float, help="kg/m³")
    g.add_argument("--mass", type=float, help="kg")
    i.add_argument("--scale", type=float, default=1.0, help="multiply coordinates by this (e.g. 0.001 for mm)")
    i.add_argument("--check-surface", choices=("auto", "always", "never"), default="auto",
                   help="check that the surface does not pass through itself: auto (meshes up to "
                        f"{SELF_CHECK_FACES:,} triangles; ~20 s for 300k), always, never")
    i.set_defaults(func=cmd_inertia)


def add_convert_command(sub) -> None:
    c = sub.add_parser("convert", help="write a scene (PEM .udf, .toml, .py, example:NAME) as a TOML scene file "
                                       "or as a PEM UDF input file")
    c.add_argument("scene", help="input scene: PEM .udf, .toml, .py defining 'scene', or example:NAME")
    c.add_argument("output", help="output .toml scene file, or .udf PEM input file (its def file is written beside)")
    c.add_argument("--method", choices=("pem-rk4", "pem-euler"),
                   help=".udf: PEM's integrator for the file (default: the scene's, which must be one of these)")
    c.add_argument("--units", choices=("si", "cgs"), help=".udf: units of the numbers in the file (default si)")
    c.add_argument("--udf-version", choices=("1.0", "1.1", "1.2", "1.3"), help=".udf: PEM def version (default 1.3)")
    c.add_argument("--force", action="store_true", help="replace an existing output file (never the input)")
    c.add_argument("-q", "--quiet", action="store_true")
    c.set_defaults(func=cmd_convert)


def add_build_engine_command(sub) -> None:
    e = sub.add_parser("build-engine", help="compile the single-scene kernels and the 3D gas engine ahead of time "
                                            "(needs numba and a C compiler; pip install does it): later runs start "
                                            "without loading numba")
    e.add_argument("--force", action="store_true", help="build again even if a build for this source exists")
    e.add_argument("--dir", help="where to keep the build (default: the compile cache's aot folder, or PEM_AOT_DIR)")
    e.set_defaults(func=cmd_build_engine)


def add_gas_command(sub) -> None:
    from .analysis.gas_command import add_gas_command as add

    add(sub)


#: Sub-command name → the function that adds it to the parser, in the order of ``pem --help``.
COMMANDS = {"run": add_run_command, "inertia": add_inertia_command, "convert": add_convert_command,
            "build-engine": add_build_engine_command, "plot": add_plot_command, "info": add_info_command,
            "basin": add_basin_command, "sweep": add_sweep_command, "gas": add_gas_command}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; ``only`` (a sub-command's name) adds just that sub-command: argparse spends
    ~1 ms per option on help texts and translations, a noticeable part of a short ``run``'s start-up."""
    ap = argparse.ArgumentParser(prog="pem", description="PEM physics: pendulums, tops and magnets.")
    sub = ap.add_subparsers(dest="command", required=True)
    for name, add in COMMANDS.items():
        if only is None or name == only:
            add(sub)
    if only is None:
        for extra in EXTRA_COMMANDS:
            extra(sub)
    return ap


#: Sub-commands that leave nothing behind when they return — their output files closed and published, no thread,
#: no child process, no atexit duty — which ``python -m pem_physics`` therefore ends with ``os._exit`` after
#: flushing stdout and stderr: the interpreter's teardown (unloading numpy, the kernels, every module) is 15–20 ms,
#: a tenth of a PEM sample's whole run (bench_engine.sample_phases).
QUICK_EXIT = frozenset({"run", "info"})

#: Functions that add sub-commands (scene tools, plots, basin maps) to the parser.
EXTRA_COMMANDS: list = []


def _terminate_as_interrupt():
    """SIGTERM (``kill``, a batch system's stop) as Ctrl-C outside a run's own handling, so that it ends with
    the same one line instead of silently; the previous handler, or None off the main thread."""
    try:
        return signal.signal(signal.SIGTERM, signal.default_int_handler)
    except ValueError:   # not the main thread (an embedding application): leave its handlers alone
        return None


#: Scene paths an option of the command line sets: an error there names the option the user typed.
OPTION_OF = {"settings.dt": "dt", "settings.t_end": "t_end", "settings.method": "method", "friction": "friction",
             "body": "body"}


def _as_option(err: ValidationError, args) -> ValidationError:
    """``err`` about a scene value that an option given on the command line set (``--dt`` for ``settings.dt``),
    named by that option; a record interval's error by the option behind it (:func:`_record_interval_option`)."""
    if err.path == "settings.record_interval":
        return _record_interval_option(err, args)
    if err.path == "settings.t_end" and err.message.startswith("t_end / dt") and getattr(args, "dt", None) is not None:
        return _steps_option(err, args)
    key = OPTION_OF.get(err.path)
    value = getattr(args, key, None) if key else None
    if value is None:
        return err
    return ValidationError(_typed(key, value), err.message)


def _typed(key: str, value) -> str:
    """An option as the user typed it: ``--t-end 100000``."""
    from .model.scene import shown

    option = "--" + key.replace("_", "-")
    return f"{option} {shown(value)}" if isinstance(value, float) else f"{option} {value}"


def _steps_option(err: ValidationError, args) -> ValidationError:
    """Too many steps (t_end / dt over the limit) where ``--dt`` was typed: named by the options typed (``--dt``,
    with ``--t-end`` when typed too), the scene's own t_end said as such when it was not."""
    t_end = getattr(args, "t_end", None)
    typed = " ".join(_typed(key, value) for key, value in (("t_end", t_end), ("dt", args.dt)) if value is not None)
    if t_end is None:
        return ValidationError(typed, f"{err.message} (t_end from the scene's settings.t_end): choose a larger --dt, "
                                      "or a shorter run with --t-end")
    return ValidationError(typed, f"{err.message}: choose a larger --dt or a smaller --t-end")


def _record_interval_option(err: ValidationError, args) -> ValidationError:
    """A ``settings.record_interval`` error named by the option that caused it: ``--record-interval`` where typed
    (its value refused, not a multiple of dt, too many records); else, for records that would not fit in memory,
    ``--t-end`` (the run's length); for an interval the typed ``--dt`` does not divide, ``--dt``. The scene's own
    record interval keeps its name, and the message its reason."""
    typed = {key: getattr(args, key, None) for key in ("record_interval", "t_end", "dt")}
    if typed["record_interval"] is not None:
        return ValidationError(_typed("record_interval", typed["record_interval"]), err.message)
    if "would need" in err.message:   # the records' memory (engine.budget): the run's length sets their number
        return err if typed["t_end"] is None else ValidationError(_typed("t_end", typed["t_end"]), err.message)
    if typed["dt"] is not None and err.message.startswith("must be a whole multiple"):
        return ValidationError("--dt", f"{typed['dt']:g} s does not divide the scene's record interval "
                                       f"(settings.record_interval {err.message}): choose a dt that does")
    if typed["dt"] is not None and "steps" in err.message:   # the scene's interval is too many of the typed steps
        return ValidationError(_typed("dt", typed["dt"]), f"the scene's record interval (settings.record_interval) "
                                                          f"{err.message} of it: choose a larger dt")
    return err


#: numpy's floating-point warnings ("overflow encountered in exp", "invalid value encountered in multiply", …)
_ARITHMETIC = ("overflow encountered", "underflow encountered", "invalid value encountered", "divide by zero")


def _arithmetic_once(show):
    """``warnings.showwarning`` that turns numpy's floating-point RuntimeWarnings into one line for the user, the
    first time (the error or warning that follows names the cause), and passes every other warning to ``show``."""
    said = []

    def showwarning(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if not (issubclass(category, RuntimeWarning) and any(a in text for a in _ARITHMETIC)):
            return show(message, category, filename, lineno, file, line)
        if not said:
            said.append(text)
            print(f"warning: the arithmetic left the range of doubles (numpy: {text}): an input far outside a "
                  "physical range, or a step far too large; the results past it are not to be trusted",
                  file=sys.stderr)

    return showwarning


def _check_cache_folder() -> None:
    """Refuse a ``NUMBA_CACHE_DIR`` that names something other than a folder: numba would compile every kernel again
    in every run without a word (minutes where a cached run takes seconds)."""
    where = os.environ.get("NUMBA_CACHE_DIR", "")
    if where and os.environ.get("PEM_NUMBA", "1") != "0" and os.path.exists(where) and not os.path.isdir(where):
        raise ValidationError("NUMBA_CACHE_DIR", f"{where!r} is not a folder, so no compiled kernel could be cached "
                                                 "and every run would compile them again: unset it or name a folder")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # the first word names the sub-command (no option takes effect before it); anything else — help, a
    # misspelt command — gets the whole parser and its messages
    ap = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = ap.parse_args(argv)
    term = _terminate_as_interrupt()
    import warnings

    shown = warnings.formatwarning   # a warning the core raises is a line for the user, not a line of our source
    warnings.formatwarning = lambda message, *_args, **_kw: f"warning: {message}\n"
    show = warnings.showwarning
    warnings.showwarning = _arithmetic_once(show)
    try:
        _check_cache_folder()
        return args.func(args)
    except NotStarted:   # Ctrl-C or SIGTERM while the run was set up or compiled its engine
        print("interrupted before the run started (it was being set up or its engine compiled): nothing was written",
              file=sys.stderr)
        return 130
    except KeyboardInterrupt:   # Ctrl-C or SIGTERM outside a run's own handling: while its outputs were written
        print("interrupted: this command's outputs were not published; the output folder keeps its previous set "
              "(the next command into it finishes a publication that was cut short)", file=sys.stderr)
        return 130
    except ValidationError as err:
        print(f"error: {_as_option(err, args)}", file=sys.stderr)
        return 2
    except SimulationError as err:
        print(f"simulation failed: {err}", file=sys.stderr)
        return 1
    except PemError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # stdout's reader went away (`… | head`): what was printed is cut short, files are not
        # as Python's documentation advises: point stdout at devnull so that the final flush cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print("error: standard output was closed before everything was printed on it (the reader of a pipe "
              "ended); files the command wrote are as it wrote them", file=sys.stderr)
        return 120
    except OSError as err:   # the disk filled, a folder vanished or lost its permissions while a run wrote
        folder = getattr(args, "outdir", None) or getattr(args, "pngdir", None)
        where = f"{err.filename}: " if err.filename else (f"{folder}: " if folder else "")
        print(f"error: {where}{err.strerror or err} — this run's output set was not published; free space or fix "
              "the folder and run again", file=sys.stderr)
        return 1
    except RecursionError:   # a scene nested beyond reason (100000 '[' in a TOML file)
        print("error: the input is nested too deeply to read (thousands of levels of brackets): is it the right "
              "file?", file=sys.stderr)
        return 2
    finally:
        outset.release_locks()     # the output folders this command held
        outset.take_back_empty()   # a folder made for outputs that never came
        warnings.formatwarning = shown
        warnings.showwarning = show
        if term is not None:
            signal.signal(signal.SIGTERM, term)
