"""Command line: ``python -m pem_physics`` (or ``pem``).

Sub-commands: run, inertia, convert (more are registered by the modules that provide them:
plot, info, basin, sweep).
Exit codes: 0 success, 1 simulation error, 2 invalid input, 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from pathlib import Path

import numpy as np

from .errors import PemError, SimulationError, ValidationError
from .model import METHODS


def load_scene(path: str):
    """A Scene from a TOML scene file, a PEM UDF file, a Python file defining ``scene``, or ``example:NAME``."""
    if path.startswith("example:"):
        from . import examples

        return examples.build(path.split(":", 1)[1])
    p = Path(path)
    if not p.exists():
        raise ValidationError(path, "no such file")
    suffix = p.suffix.lower()
    if suffix == ".toml":
        from .scenefile import load_scene as load_toml

        return load_toml(p)
    if suffix == ".udf":
        from .udf_scene import load_scene as load_udf

        return load_udf(p)
    if suffix == ".py":
        namespace: dict = {"__file__": str(p), "__name__": "pem_scene"}
        exec(compile(p.read_text(encoding="utf-8"), str(p), "exec"), namespace)
        if "scene" not in namespace:
            raise ValidationError(path, "a Python scene file must define a variable named 'scene'")
        return namespace["scene"]
    raise ValidationError(path, f"unknown scene file type {suffix!r} (expected .toml, .udf or .py)")


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


@contextlib.contextmanager
def interruptible(quiet: bool):
    """(progress, stop) callbacks for a long run: a progress bar, and Ctrl-C asks the run to stop cleanly."""
    flag = {"stop": False}

    def on_sigint(signum, frame):
        flag["stop"] = True

    old = signal.signal(signal.SIGINT, on_sigint)
    progress = _Progress(not quiet)
    try:
        yield progress, lambda: flag["stop"]
    finally:
        signal.signal(signal.SIGINT, old)
        progress.close()


def cmd_run(args) -> int:
    from .output import write_outputs
    from .simulate import simulate

    scene = load_scene(args.scene)
    with interruptible(args.quiet) as (progress, stop):
        traj = simulate(scene, method=args.method, dt=args.dt, t_end=args.t_end,
                        record_interval=args.record_interval, progress=progress, stop=stop)
    summary = write_outputs(traj, args.outdir)
    if not args.quiet:
        print(json.dumps(summary, indent=2))
    if not traj.complete:
        print(f"interrupted at t = {traj.t[-1]:g} s; partial results written to {args.outdir}", file=sys.stderr)
        return 130
    return 0


def load_mesh(path: str):
    """Vertices (V,3) and triangles (F,3) from OBJ/STL/PLY/OFF via trimesh (duplicate vertices merged)."""
    try:
        import trimesh
    except ImportError as err:
        raise PemError("reading mesh files needs the 'trimesh' package (pip install trimesh)") from err
    if not Path(path).exists():
        raise ValidationError(path, "no such file")
    mesh = trimesh.load(path, force="mesh", process=True)
    if len(mesh.faces) == 0:
        raise ValidationError(path, "the file holds no triangles")
    return np.asarray(mesh.vertices, dtype=float), np.asarray(mesh.faces, dtype=np.int64)


def cmd_inertia(args) -> int:
    from .inertia import mesh_mass_properties

    V, F = load_mesh(args.mesh)
    V = V * args.scale
    mp = mesh_mass_properties(V, F, density=args.density, mass=args.mass)
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
    }
    print(json.dumps(out, indent=2))
    return 0


def cmd_convert(args) -> int:
    from .scenefile import save_scene

    scene = load_scene(args.scene)
    out = Path(args.output)
    if out.suffix.lower() != ".toml":
        raise ValidationError(str(out), "the output must be a .toml scene file")
    save_scene(scene, out)
    if not args.quiet:
        print(f"wrote {out} ({len(scene.bodies)} bodies)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="pem", description="PEM physics: pendulums, tops and magnets.")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="simulate a scene and write trajectory.npz/.csv and summary.json")
    r.add_argument("scene", help="scene file (.toml, PEM .udf, .py defining 'scene') or example:NAME")
    r.add_argument("-o", "--outdir", required=True, help="output folder")
    r.add_argument("--method", choices=METHODS, help="integrator (default: the scene's)")
    r.add_argument("--dt", type=float, help="time step, s")
    r.add_argument("--t-end", type=float, help="end time, s")
    r.add_argument("--record-interval", type=float, help="time between records, s (a multiple of dt)")
    r.add_argument("-q", "--quiet", action="store_true")
    r.set_defaults(func=cmd_run)
    i = sub.add_parser("inertia", help="mass properties of a closed triangle mesh, as JSON")
    i.add_argument("mesh", help="OBJ/STL/PLY file")
    g = i.add_mutually_exclusive_group(required=True)
    g.add_argument("--density", type=float, help="kg/m³")
    g.add_argument("--mass", type=float, help="kg")
    i.add_argument("--scale", type=float, default=1.0, help="multiply coordinates by this (e.g. 0.001 for mm)")
    i.set_defaults(func=cmd_inertia)
    c = sub.add_parser("convert", help="write a scene (PEM .udf, .toml, .py, example:NAME) as a TOML scene file")
    c.add_argument("scene", help="input scene: PEM .udf, .toml, .py defining 'scene', or example:NAME")
    c.add_argument("output", help="output .toml file")
    c.add_argument("-q", "--quiet", action="store_true")
    c.set_defaults(func=cmd_convert)
    from . import basin, info, plot, sweep  # numpy only at import; matplotlib loads when a figure is drawn

    plot.add_commands(sub)
    info.add_commands(sub)
    basin.add_commands(sub)
    sweep.add_commands(sub)
    for extra in EXTRA_COMMANDS:
        extra(sub)
    return ap


#: Functions that add sub-commands (scene tools, plots, basin maps) to the parser.
EXTRA_COMMANDS: list = []


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except ValidationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except SimulationError as err:
        print(f"simulation failed: {err}", file=sys.stderr)
        return 1
    except PemError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
