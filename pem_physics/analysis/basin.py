"""Basin maps: where does a damped magnetic pendulum come to rest, as a function of where it is released?

The release point (x, y) of the bob (the pendulum's first dipole, else its centre of mass)
is swept over a grid; every grid point is one member of an :class:`~pem_physics.engine.simulate.Ensemble`,
integrated in vectorised chunks (memory stays bounded). A member is classified by the fixed
magnet nearest to the bob's final (x, y) when it has settled there (slow, and close to that
magnet), else −1.

    python -m pem_physics basin example:three-magnet --grid 128 --extent 0.08 --t-end 20 -o out/basin
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..engine.simulate import Ensemble, simulate
from ..engine.system import compile_system
from ..errors import ValidationError
from ..io.files import atomic_open
from ..model.rotations import axis_angle_matrix
from ..model.scene import Scene, rounded_end
from . import chunks, duration


@dataclass
class BasinResult:
    x: np.ndarray            # (N,) release x, m
    y: np.ndarray            # (N,) release y, m
    label: np.ndarray        # (N, N) int: index of the fixed magnet the bob settles over, −1 if none yet
    final_xy: np.ndarray     # (N, N, 2) bob position at the end, m
    final_speed: np.ndarray  # (N, N) bob speed at the end, m/s
    magnets_xy: np.ndarray   # (K, 2)
    t_end: float
    complete: bool
    wall_time: float
    failures: list = field(default_factory=list)  # chunks.Failure of chunks that blew up
    notes: list = field(default_factory=list)     # what --resume found and did not take (chunks.ChunkResults)


def bob_point(scene: Scene):
    """The one pendulum of a basin-map scene and its bob point (m, body coordinates): its first dipole, else
    its centre of mass."""
    moving = [b for b in scene.bodies if b.role in ("pendulum", "free")]
    if len(moving) != 1 or moving[0].role != "pendulum":
        raise ValidationError("bodies", "a basin map needs exactly one pendulum (and fixed magnets)")
    body = moving[0]
    point = np.asarray(body.dipoles[0].position if body.dipoles
                       else body.resolved_mass_properties().center_of_mass, dtype=float)
    return body, point


def release_orientations(scene: Scene, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """(E,1,3,3) orientations putting the bob at lab (x, y) (same distance from the pivot, hanging below).

    Points farther from the pivot axis than the bob's arm are clipped to the largest reachable radius (a basin
    map refuses such a grid: :func:`basin_map`).
    """
    body, point = bob_point(scene)
    U0 = np.asarray(body.orientation, dtype=float)
    arm0 = U0.T @ point  # lab vector pivot → bob at the scene's pose
    length = np.linalg.norm(arm0)
    # The arm's horizontal part: lab (x, y) relative to the pivot (which need not sit above the origin).
    xy = np.stack([xs, ys], axis=-1) - np.asarray(body.position, dtype=float)[:2]
    r = np.linalg.norm(xy, axis=-1)
    scale = np.where(r > 0.999 * length, 0.999 * length / np.maximum(r, 1e-300), 1.0)
    xy = xy * scale[:, None]
    z = -np.sqrt(np.maximum(length**2 - (xy**2).sum(-1), 0.0))
    target = np.concatenate([xy, z[:, None]], axis=-1) / length
    a = arm0 / length
    axis = np.cross(a, target)
    s = np.linalg.norm(axis, axis=-1)
    c = target @ a
    angle = np.arctan2(s, c)
    axis = np.where(s[:, None] > 1e-15, axis / np.maximum(s, 1e-300)[:, None], np.array([1.0, 0.0, 0.0]))
    R = axis_angle_matrix(axis, angle)  # (E,3,3) lab rotations
    return (U0[None] @ np.swapaxes(R, -1, -2))[:, None]  # rows u_i' = R u_i


def fixed_magnets_xy(scene: Scene) -> np.ndarray:
    """Lab (x, y) (K,2), m, of the fixed bodies that carry dipoles, in scene order (label k = row k)."""
    return np.array([np.asarray(b.position, float)[:2] for b in scene.bodies if b.role == "fixed" and b.dipoles]
                    ).reshape(-1, 2)


def default_settle_distance(magnets_xy: np.ndarray) -> float:
    """Half the smallest spacing between magnets (m), or 0.5 m for a single magnet."""
    d = np.linalg.norm(magnets_xy[:, None] - magnets_xy[None], axis=-1)
    return 0.5 * (d[d > 0].min() if (d > 0).any() else 1.0)


def classify(final_xy: np.ndarray, speed: np.ndarray, magnets_xy: np.ndarray, settle_speed: float,
             settle_distance: float) -> np.ndarray:
    """Label (E,) int: the magnet a bob at final_xy (E,2) m moving at speed (E,) m/s rests over, else −1.

    At rest means slower than settle_speed (m/s) and horizontally within settle_distance (m) of
    the nearest magnet; non-finite positions (members never run) get −1.
    """
    dist = np.linalg.norm(final_xy[:, None, :] - magnets_xy[None], axis=-1)
    nearest = np.argmin(np.where(np.isfinite(dist), dist, np.inf), axis=-1)
    settled = (speed < settle_speed) & (dist[np.arange(len(dist)), nearest] < settle_distance)
    return np.where(settled, nearest, -1)


#: The smallest spacing of release points, as a fraction of the arm: a few thousand double round-offs, so that
#: neighbouring cells start from release angles that differ in their own digits, not in round-off
MIN_SPACING = 1e-12


def basin_map(scene: Scene, grid: int = 64, extent: float | None = None, t_end: float | None = None,
              chunk: int = 4096, settle_speed: float = 1e-3, settle_distance: float | None = None,
              method: str | None = None, progress=None, stop=None, client=None, chunk_dir=None,
              resume: bool = False, force: bool = False, dt: float | None = None) -> BasinResult:
    """Sweep the release point over a grid×grid square of half-width ``extent`` (m) and classify.

    settle_speed: bob speed (m/s) below which a member counts as at rest; settle_distance: how
    close (m, horizontally) to a magnet it must rest (default: half the smallest magnet spacing).
    ``client`` (a dask.distributed Client) runs the chunks on a cluster; ``chunk_dir`` keeps each
    chunk in a file as it completes and ``resume`` continues an interrupted map from them
    (:mod:`.chunks`). Grid points of a failed chunk (a blow-up) are labelled −1 and listed in
    ``failures``. ``dt``: the runs' step (s; default the scene's). A map estimated to take more than a day is
    refused unless ``force`` (:func:`.duration.check_duration`: named by --dt when a smaller one than the scene's
    drives it, else by --t-end).
    """
    scene_dt, typed_dt = scene.settings.dt, dt
    if dt is not None:   # the map records only each run's start and end: the scene's interval does not apply
        scene = replace(scene, settings=replace(scene.settings, dt=dt, record_interval=None))
    bob_point(scene)
    magnets = fixed_magnets_xy(scene)
    if not len(magnets):
        raise ValidationError("bodies", "a basin map needs fixed magnets to settle over")
    if settle_distance is None:
        settle_distance = default_settle_distance(magnets)
    if extent is None:
        extent = 1.6 * np.abs(magnets).max()
    if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 2:
        raise ValidationError("--grid", f"expected an integer ≥ 2 (points per side), got {grid!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValidationError("--chunk", f"expected an integer ≥ 1 (members integrated together), got {chunk!r}")
    if not (np.isfinite(extent) and extent > 0):
        raise ValidationError("--extent", f"expected a half-width > 0 m, got {extent!r}")
    body, point = bob_point(scene)
    arm = float(np.linalg.norm(point))
    corners = np.array([[sx * extent, sy * extent] for sx in (-1, 1) for sy in (-1, 1)])
    far = float(np.max(np.linalg.norm(corners - np.asarray(body.position, float)[:2], axis=1)))
    if far >= 0.999 * arm:   # the bob cannot be released there: such cells would be clipped, not mapped
        pivot = np.asarray(body.position, float)[:2]
        most = max(0.0, 0.999 * arm - float(np.linalg.norm(pivot))) / np.sqrt(2.0)
        raise ValidationError("--extent", f"the grid's corners lie {far:.4g} m from the pivot axis; the bob's arm is "
                                          f"{arm:.4g} m long (it hangs below the pivot): lower --extent to at most "
                                          f"{most:.4g} m")
    # release points closer than a double resolves at the arm's (and the pivot's) size are one point: no map
    size = max(arm, float(np.linalg.norm(np.asarray(body.position, float)[:2])))
    least = MIN_SPACING * size * (grid - 1) / 2.0
    if extent < least:
        gap = 2 * extent / (grid - 1)
        raise ValidationError("--extent", f"{extent:.4g} m puts neighbouring release points {gap:.3g} m apart, below "
                                          f"{MIN_SPACING:g} of the bob's arm ({arm:.4g} m) that doubles tell apart: "
                                          f"every cell would be the same release; raise --extent to at least "
                                          f"{least:.3g} m")
    from ..engine import budget

    # the map's cells (label, final x-y, speed: ~40 bytes a point) and one chunk's trajectories
    budget.check(grid * grid * 40 + min(chunk, grid * grid) * budget.trajectory_record_bytes(1, 8) * 4, "--grid",
                 f"a {grid:,} × {grid:,} basin map", "lower --grid (or --chunk)")
    t_end = scene.settings.t_end if t_end is None else t_end
    if not t_end > 0:   # every cell would be its release point, "at rest" or not: no map
        raise ValidationError("--t-end", f"the bob must swing to find where it comes to rest: give --t-end > 0 s "
                                         f"(got {t_end:g}; seconds to a minute, by the friction)")
    xs = np.linspace(-extent, extent, grid)
    E = grid * grid
    dt = scene.settings.dt
    end, rounded = float(t_end), None
    if isinstance(dt, (int, float)) and dt > 0 and np.isfinite(t_end):   # others: refused by the run's own checks
        end, rounded = rounded_end(t_end, dt, "the map's runs end")
        duration.check_duration(round(t_end / dt), sum(b.moving for b in scene.bodies), E,
                                typed_dt, scene_dt, fewer="lower --grid", force=force)
    task = chunks.Task(_chunk, (scene, xs, method, t_end), E, chunk)
    t0 = time.perf_counter()
    run = chunks.run_chunks(task, kind="basin", run=dict(scene=scene, grid=xs, method=method, t_end=t_end),
                            chunk_dir=chunk_dir, resume=resume, client=client, progress=progress, stop=stop)
    final_xy = np.full((E, 2), np.nan)
    speed = np.full(E, np.nan)
    ran = np.zeros(E, bool)
    for i, arrays in enumerate(run.arrays):
        if arrays is None:
            continue
        sl = slice(*task.bounds(i))
        final_xy[sl], speed[sl] = arrays["final_xy"], arrays["speed"]
        ran[sl] = bool(arrays["complete"])
    label = classify(final_xy, speed, magnets, settle_speed, settle_distance)
    label[~ran] = -1
    return BasinResult(xs, xs.copy(), label.reshape(grid, grid), final_xy.reshape(grid, grid, 2),
                       speed.reshape(grid, grid), magnets, end, run.complete, time.perf_counter() - t0,
                       failures=run.failures, notes=([rounded] if rounded else []) + list(run.notes or []))



#: Share of a finished map's release points that never came to rest beyond which the map is said to say little.
UNSETTLED_WARN = 0.5


def unsettled_warnings(unsettled: int, members: int, t_end: float, complete: bool) -> list:
    """What to tell of release points still moving at ``t_end`` (label −1): a map of mostly "never settled" cells
    looks like a result but answers nothing."""
    if not complete or members == 0 or unsettled <= UNSETTLED_WARN * members:
        return []
    share = "none" if unsettled == members else f"only {members - unsettled} of {members}"
    return [f"{share} of the release points came to rest over a magnet by t_end = {t_end:g} s (label -1: still "
            "moving): raise --t-end, or the scene's friction"]


def _chunk(scene: Scene, xs: np.ndarray, method, t_end: float, start: int, stop: int, progress=None,
           stop_flag=None) -> dict:
    """Release points [start, stop) of the grid (row-major, x fastest): final bob (x, y) (n,2) m, speed (n,)
    m/s and ``complete``. One task of :func:`basin_map`: a pure function of its arguments."""
    _, point = bob_point(scene)
    X, Y = np.meshgrid(xs, xs, indexing="xy")
    U = release_orientations(scene, X.ravel()[start:stop], Y.ravel()[start:stop])
    pivot = compile_system(scene.checked()).pivot[0]
    traj = simulate(scene, method=method, t_end=t_end, record_interval=None if t_end == 0 else _interval(scene, t_end),
                    ensemble=Ensemble(orientation=U), progress=progress, stop=stop_flag)
    Uf = traj.orientation[:, -1, 0]      # (e,3,3)
    wf = traj.omega[:, -1, 0]            # (e,3)
    arm = np.einsum("eji,j->ei", Uf, point)
    bob = pivot + arm
    return {"final_xy": bob[:, :2], "speed": np.linalg.norm(np.cross(wf, arm), axis=-1),
            "complete": np.array(traj.complete)}


def _interval(scene: Scene, t_end: float) -> float:
    """Record only the start and the end (a whole number of steps)."""
    dt = scene.settings.dt
    return max(1, int(round(t_end / dt))) * dt


PALETTE = np.array([[0.85, 0.25, 0.2], [0.2, 0.45, 0.85], [0.95, 0.75, 0.15], [0.3, 0.7, 0.35],
                    [0.6, 0.35, 0.75], [0.3, 0.75, 0.8]])


def image(result: BasinResult) -> np.ndarray:
    """RGB (N,N,3) image: one colour per magnet, dark grey where unsettled."""
    rgb = np.full(result.label.shape + (3,), 0.15)
    for k in range(len(result.magnets_xy)):
        rgb[result.label == k] = PALETTE[k % len(PALETTE)]
    return rgb


def write(result: BasinResult, outdir) -> dict:
    """basin.npz (arrays), basin.png (the map with the magnets marked) and basin.json (summary), published as one
    output set (:mod:`..io.outset`); returns the summary."""
    from ..io.outset import OutputSet

    with OutputSet(outdir, "basin") as out:
        summary = _write_files(result, out.staging)
        out.publish(complete=result.complete and not result.failures)
    return summary


def _write_files(result: BasinResult, outdir: Path) -> dict:
    with atomic_open(outdir / "basin.npz", "wb") as fh:
        np.savez_compressed(fh, x=result.x, y=result.y, label=result.label, final_xy=result.final_xy,
                            final_speed=result.final_speed, magnets_xy=result.magnets_xy,
                            t_end=result.t_end, complete=result.complete)
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 6))
    ax = fig.add_subplot()
    e = [result.x[0], result.x[-1], result.y[0], result.y[-1]]
    ax.imshow(image(result), origin="lower", extent=e, interpolation="nearest")
    ax.scatter(result.magnets_xy[:, 0], result.magnets_xy[:, 1], c="white", edgecolors="black", s=60)
    ax.set_xlabel("release x (m)")
    ax.set_ylabel("release y (m)")
    ax.set_title(f"where the pendulum comes to rest (t = {result.t_end:g} s)"
                 + ("" if result.complete else " — interrupted"))
    with atomic_open(outdir / "basin.png", "wb") as fh:
        fig.savefig(fh, format="png", dpi=120)
    counts = {str(k): int((result.label == k).sum()) for k in range(-1, len(result.magnets_xy))}
    summary = {"grid": int(result.label.shape[0]), "t_end": result.t_end, "complete": result.complete,
               "wall_time_s": result.wall_time, "members": int(result.label.size), "counts": counts,
               "failures": [{"chunk": f.chunk, "grid_points": [f.start, f.stop - 1], "message": f.message}
                            for f in result.failures], "resume_notes": result.notes,
               "warnings": unsettled_warnings(counts["-1"], int(result.label.size), result.t_end, result.complete)}
    with atomic_open(outdir / "basin.json", "w") as fh:
        json.dump(summary, fh, indent=2)
    return summary
