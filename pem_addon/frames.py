"""Steps and frames: the frames a simulation covers, and when a time step divides Blender's frame time (keys then
land on whole frames)."""

from __future__ import annotations

#: A dt within this fraction of one frame / n (n whole) divides the frame: float32's epsilon, since a dt typed or
#: stored in single precision cannot tell the two apart (0.001 s at 25 fps is 1/25 s / 40).
DIVIDES_RTOL = 2.0**-23


def steps_per_frame(fps: float, dt: float) -> int:
    """Whole steps of ``dt`` (s) per frame at ``fps`` when dt divides the frame time to round-off
    (:data:`DIVIDES_RTOL`), else 0."""
    n = 1.0 / (fps * dt)
    steps = round(n)
    return int(steps) if steps >= 1 and abs(n - steps) <= DIVIDES_RTOL * n else 0


def simulation_range(scene) -> tuple[int, int]:
    """(first frame, last frame) the scene's simulation covers: the scene's frame range, or the simulation's own
    (``Scene.pem.use_scene_range`` off), as a Blender point cache has its own start and end."""
    sp = scene.pem
    if sp.use_scene_range:
        return scene.frame_start, scene.frame_end
    return sp.frame_start, sp.frame_end
