"""Drawing into an offscreen buffer and reading it back (Blender 5.2+ opens a GPU context in background mode)."""

from __future__ import annotations

import numpy as np


def draw_offscreen(width: int, height: int, draw, projection=None) -> np.ndarray:
    """Pixels (height, width, 4) RGBA float of ``draw()`` run into a cleared (transparent) offscreen buffer, with
    the identity model-view matrix and ``projection`` (a mathutils Matrix; default identity: normalised device
    coordinates). Needs ``gpu.init()`` done."""
    import gpu
    from mathutils import Matrix

    off = gpu.types.GPUOffScreen(width, height)
    try:
        with off.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=(0.0, 0.0, 0.0, 0.0))
            with gpu.matrix.push_pop(), gpu.matrix.push_pop_projection():
                gpu.matrix.load_matrix(Matrix.Identity(4))
                gpu.matrix.load_projection_matrix(projection if projection is not None else Matrix.Identity(4))
                draw()
            return np.array(fb.read_color(0, 0, width, height, 4, 0, "FLOAT").to_list()).reshape(height, width, 4)
    finally:
        off.free()
