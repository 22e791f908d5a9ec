"""A gas build's plan and run: the box and settings read from Blender and checked (nothing changed), and the
event-driven run at the frame times (pure core, thread-safe, stops on request)."""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field

import bpy
import numpy as np

from ...pem_physics.io import gas_cache
from ..messages import AddonError
from ..units import matrix

#: A cache bigger than this (bytes) is refused before the run: the positions are held in memory in double
#: precision while it is written (three times its size).
MAX_CACHE_BYTES = 2**30


@dataclass
class Plan:
    """A checked build: everything :func:`run` and :func:`apply` need, read from Blender."""

    box_name: str
    n: int
    packing_fraction: float
    temperature: float
    seed: int
    periodic: bool
    lengths: np.ndarray      # (3,) box lengths, BU
    world: np.ndarray        # (4, 4) world matrix of the gas object: box corner, box rotation, no scale
    frame_start: int
    frame_end: int
    fps: float
    cache_dir: str           # absolute folder of the cache file
    relative: bool           # store the path relative to the .blend

    @property
    def times(self) -> np.ndarray:
        """Frame times (S,) in s: t_k = k / fps for frames frame_start + k."""
        return np.arange(self.frame_end - self.frame_start + 1) / self.fps

    def label(self) -> str:
        return f"Gas box '{self.box_name}'"


@dataclass
class Result:
    positions: np.ndarray    # (S, N, 3) centres at the frame times, BU, in the box frame
    radius: float            # BU
    info: dict
    total_time: float = 0.0  # s, the whole run: the start state, the engine's set-up (its first compile) and events
    removed: list = field(default_factory=list)  # stale caches of the same gas removed by apply (paths)


def cache_folder() -> tuple[str, bool]:
    """(folder for a new cache, whether to store its path relative to the .blend)."""
    if bpy.data.filepath:
        return os.path.dirname(bpy.path.abspath(bpy.data.filepath)), True
    return os.path.join(tempfile.gettempdir(), "pem_gas"), False


def box_frame(box, label: str) -> tuple[np.ndarray, np.ndarray]:
    """(box lengths (3,) BU, world matrix (4, 4) of the box's min corner with its rotation, no scale)."""
    loc, rot, scale = box.matrix_world.decompose()
    if min(scale) <= 0:
        raise AddonError(f"{label}: has a zero or negative scale {tuple(round(s, 6) for s in scale)}; "
                         "apply or fix the scale")
    corners = np.array([list(v) for v in box.bound_box], dtype=float)   # (8, 3) local
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    lengths = (hi - lo) * np.array(scale)
    if np.any(lengths <= 0):
        a = "xyz"[int(np.argmax(lengths <= 0))]
        raise AddonError(f"{label}: has zero size along {a} (dimensions {tuple(round(x, 6) for x in lengths)}); "
                         "a gas box needs a volume")
    W = matrix(box.matrix_world)
    rebuilt = np.eye(4)
    rebuilt[:3, :3] = matrix(rot.to_matrix()) * np.array(scale)
    rebuilt[:3, 3] = np.array(loc)
    if np.max(np.abs(rebuilt - W)) > 1e-5 * max(1.0, np.abs(W).max()):
        raise AddonError(f"{label}: its transform is sheared (a non-uniformly scaled parent?); unparent it or apply "
                         "the parent's scale")
    world = np.eye(4)
    world[:3, :3] = matrix(rot.to_matrix())
    world[:3, 3] = W[:3, :3] @ lo + W[:3, 3]
    return lengths, world


def prepare(context, box, n, packing_fraction, temperature, seed, periodic, frame_start, frame_end) -> Plan:
    """Check the settings and read the box; changes nothing. AddonError names the box and the setting."""
    if box is None:
        raise AddonError("No gas box: pick a mesh object whose dimensions define the box")
    label = f"Gas box '{box.name}'"
    lengths, world = box_frame(box, label)
    try:
        gas_cache.check_gas_args(n, packing_fraction, lengths, temperature)
    except ValueError as err:
        raise AddonError(f"{label}: {err}") from err
    if frame_end < frame_start:
        raise AddonError(f"{label}: frame range {frame_start}–{frame_end} is empty (end before start)")
    scene = context.scene
    fps = scene.render.fps / scene.render.fps_base
    if not fps > 0:
        raise AddonError(f"Scene '{scene.name}': frame rate must be positive")
    size = 32 + 12 * n * (frame_end - frame_start + 1)
    if size > MAX_CACHE_BYTES:
        raise AddonError(f"{label}: the cache of {n} particles over {frame_end - frame_start + 1} frames would be "
                         f"{size / 2**30:.1f} GB; use fewer particles or frames")
    folder, relative = cache_folder()
    return Plan(box.name, int(n), float(packing_fraction), float(temperature), int(seed), bool(periodic), lengths,
                world, int(frame_start), int(frame_end), fps, folder, relative)


def run(plan: Plan, progress=None, stop=None) -> Result:
    """Start state and the positions at the frame times (pure core; no bpy). AddonError names the box;
    Interrupted when ``stop()`` says so."""
    start = time.perf_counter()  # the engine's own wall time leaves out its set-up: compiling it (~20 s, once)
    try:
        state = gas_cache.gas_in_box(plan.n, plan.packing_fraction, plan.lengths, periodic=plan.periodic,
                                     temperature=plan.temperature, seed=plan.seed)
    except ValueError as err:
        raise AddonError(f"{plan.label()}: {err}") from err
    positions, info = gas_cache.frame_positions(state, plan.times, progress=progress, stop=stop)
    return Result(positions, float(state.radii[0]), info, time.perf_counter() - start)
