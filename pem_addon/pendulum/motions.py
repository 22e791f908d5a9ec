"""The motion adapter: Blender's animation drives the physics.

A pendulum's pivot object that moves by itself (keys, constraints, drivers, a moving parent) and a driven magnet
with *Motion: Animation* are sampled from the depsgraph — ``Scene.pem.motion_samples`` times a frame over the
simulation's range — and handed to the core as tabulated motions (:class:`~pem_physics.model.TabulatedMotion`,
splined): the pivot's world positions, the magnet's world positions and orientations. The scene's frame is
restored afterwards. Times count from the simulation's start frame (s); positions are in metres.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ...pem_physics.errors import ValidationError
from ...pem_physics.model import TabulatedMotion
from ...pem_physics.model.rotations import orientation_to_quat
from ..bodies import animated_pivot
from ..messages import AddonError
from ..units import matrix, rotation_part


def animated_driver(obj) -> bool:
    """Whether obj is a driven magnet that follows its own animation (Motion: Animation)."""
    return obj.pem.role == "DRIVEN" and obj.pem.motion == "ANIMATION"


def followed(objects) -> list:
    """[(object sampled, what it drives, "pivot" or "driver")] of ``objects`` (PEM bodies), in their order."""
    out = []
    for obj in objects:
        piv = animated_pivot(obj)
        if piv is not None:
            out.append((piv, obj, "pivot"))
        elif animated_driver(obj):
            out.append((obj, obj, "driver"))
    return out


def sample(scene, targets, frame_start: int, t_last: float, fps: float, per_frame: int) -> tuple:
    """(times (K,) s, {object: world matrices (K,4,4) BU}) of ``targets`` sampled ``per_frame`` times a frame from
    the start frame until past t_last (s) — the last sample at or after it, and at least four samples — by
    evaluating the scene at each (sub-)frame; the current frame is restored."""
    n = max(4, math.ceil(t_last * fps * per_frame - 1e-9) + 1)
    frames = frame_start + np.arange(n) / per_frame
    out = {obj: np.empty((n, 4, 4)) for obj in targets}
    frame, subframe = scene.frame_current, scene.frame_subframe
    try:
        for i, f in enumerate(frames):
            whole = math.floor(f)
            scene.frame_set(int(whole), subframe=float(f - whole))
            for obj in targets:
                out[obj][i] = matrix(obj.matrix_world)
    finally:
        scene.frame_set(frame, subframe=subframe)
    return (frames - frame_start) / fps, out


#: How far (relative to the larger of 1 and the entry) an entry of a world matrix (BU) may stray from the start frame's
#: before the object counts as moved: single precision, as Blender evaluates it.
MOVE_RTOL = 1e-6


def first_moves(scene, targets, frame_start: int, t_last: float, fps: float, per_frame: int) -> dict:
    """{object: the first (sub-)frame at which its world matrix has left its start-frame one} for those of
    ``targets`` that move within t_last s of the start frame, sampled as :func:`sample` does (``per_frame`` times a
    frame); the scan stops once every target has moved, and the current frame is restored."""
    n = max(2, math.ceil(t_last * fps * per_frame - 1e-9) + 1)
    frame, subframe = scene.frame_current, scene.frame_subframe
    moved = {}
    try:
        scene.frame_set(frame_start)
        start = {obj: matrix(obj.matrix_world) for obj in targets}
        for f in frame_start + np.arange(1, n) / per_frame:
            if len(moved) == len(start):
                break
            whole = math.floor(f)
            scene.frame_set(int(whole), subframe=float(f - whole))
            for obj, M0 in start.items():
                if obj not in moved and np.any(np.abs(matrix(obj.matrix_world) - M0)
                                               > MOVE_RTOL * np.maximum(1.0, np.abs(M0))):
                    moved[obj] = float(f)
    finally:
        scene.frame_set(frame, subframe=subframe)
    return moved


#: How far (relative) a driven magnet's world scale may move from the start frame's: its dipoles sit where the start
#: frame's scale puts them, so a scale that is animated would move them in the viewport and not in the physics.
SCALE_RTOL = 1e-6


def _check_scale(name: str, t: np.ndarray, M: np.ndarray, fps: float, frame_start: int) -> None:
    """Refuse a driven magnet whose world scale (column lengths of its sampled matrices M (K,4,4)) changes."""
    scale = np.linalg.norm(M[:, :3, :3], axis=1)                     # (K,3): each local axis's length in the world
    drift = np.max(np.abs(scale / scale[0] - 1.0), axis=1)
    k = int(np.argmax(drift > SCALE_RTOL)) if np.any(drift > SCALE_RTOL) else None
    if k is not None:
        frame = frame_start + t[k] * fps
        raise AddonError(f"Object '{name}' changes its scale while it moves (from {tuple(np.round(scale[0], 6))} at "
                         f"the start frame to {tuple(np.round(scale[k], 6))} at frame {frame:.6g}): a driven "
                         "magnet keeps the scale it has at the start frame, so its magnets would sit elsewhere in "
                         "the viewport than in the simulation. Animate its location and rotation only (remove the "
                         "scale keys or drivers, or apply the scale)")


def tables(context, objects, frame_start: int, t_last: float, fps: float, unit: float) -> dict:
    """{PEM object: ("pivot", times, positions (K,3) m) or ("driver", times, positions m, U (K,3,3))} for every
    animated pivot and animated driven magnet among ``objects``; U rows are the body axes (the rotation part of
    the world matrix, its scale taken out). A driven magnet whose scale is animated is refused
    (:func:`_check_scale`)."""
    follow = followed(objects)
    if not follow:
        return {}
    per_frame = int(context.scene.pem.motion_samples)
    t, mats = sample(context.scene, sorted({o for o, _, _ in follow}, key=lambda o: o.name), frame_start, t_last,
                     fps, per_frame)
    out = {}
    for src, body, kind in follow:
        M = mats[src]
        x = unit * M[:, :3, 3]
        if kind == "pivot":
            out[body] = ("pivot", t, x)
        else:
            _check_scale(body.name, t, M, fps, frame_start)
            try:
                U = np.array([rotation_part(m, body.name).T for m in M])
            except AddonError as err:
                raise AddonError(f"{err} (while its animation was sampled)") from None
            out[body] = ("driver", t, x, U)
    return out


def motion_of(table: tuple, obj, source, frame_start: int, fps: float, per_frame: int) -> TabulatedMotion:
    """The checked TabulatedMotion of one of :func:`tables`' entries (``obj`` the PEM body, ``source`` the object
    whose animation was sampled, ``per_frame`` times a frame); a table the core refuses (a jump, a turn of more
    than 90° between samples) is refused in Blender's words: the animated object, the frames, the fix."""
    t = table[1]
    motion = (TabulatedMotion(t, table[2]) if table[0] == "pivot" else
              TabulatedMotion(t, table[2], orientation_to_quat(table[3])))
    try:
        return motion.checked("animation")
    except ValidationError as err:
        what = (f"Object '{source.name}' (the animated pivot of '{obj.name}')" if table[0] == "pivot"
                else f"Object '{obj.name}' (Motion: Animation)")
        m = re.search(r"\[(\d+)\]$", err.path)
        k = int(m[1]) if m else 0
        frames = f"frame {frame_start + t[max(k - 1, 0)] * fps:.6g} and {frame_start + t[k] * fps:.6g}"
        text = re.sub(r"between t = \S+ s and \S+ s", f"between {frames}", err.message)
        text = text.replace(" (in Blender: a key with Constant interpolation jumps)", "")
        if "between frame" not in text:
            text = f"at frame {frame_start + t[k] * fps:.6g} {text}"
        fix = ("a key with Constant interpolation, or a teleport, makes such a jump: use Bezier or Linear "
               "interpolation there, or smooth the motion" if "jumps" in text else
               "raise Motion Samples (Scene ▸ Magnetic Pendulum)")
        raise AddonError(f"{what}: its animation, sampled {per_frame}× a frame, {text} — {fix}") from None


def describe(objects, per_frame: int) -> list:
    """One line per animated pivot or driven magnet for the panel: what follows which animation, how sampled."""
    lines = []
    for src, body, kind in followed(objects):
        if kind == "pivot":
            lines.append(f"'{body.name}' swings from '{src.name}', which is animated: its pivot follows it, "
                         f"sampled {per_frame}× a frame")
        else:
            lines.append(f"'{body.name}' follows its animation (position and rotation), sampled {per_frame}× a frame")
    return lines
