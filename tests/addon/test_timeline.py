"""The cache bar in the Timeline: where it is (the baked frames, edge to edge, through the timeline's own frame →
pixel mapping), its colour per state, nothing when not baked; drawn for real offscreen where Blender can open a
GPU context in background mode (5.2+) and read back.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")
import gpu  # noqa: E402

from .offscreen import draw_offscreen  # noqa: E402


@pytest.fixture
def timeline(ext):
    return importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.timeline")


def test_the_bar_spans_the_baked_frames_in_the_states_colour(timeline):
    to_x = lambda f: 10.0 + 4.0 * (f - 1)  # noqa: E731  (a timeline showing 4 px a frame from x = 10)
    assert timeline.bar("NOT_BAKED", 1, 25, to_x) is None
    rect, color = timeline.bar("BAKED", 1, 25, to_x)
    assert rect[0] == 10.0 and rect[2] == 10.0 + 4.0 * 24 and color == timeline.BAKED_COLOR
    assert rect[3] - rect[1] == timeline.BAR_HEIGHT
    rect2, color = timeline.bar("OUTDATED", 1, 25, to_x, ui_scale=2.0)
    assert color == timeline.OUTDATED_COLOR and rect2[3] - rect2[1] == 2 * timeline.BAR_HEIGHT
    assert timeline.bar("BAKED", 5, 5, to_x) is None  # no frames


def test_the_bar_is_drawn_where_computed(timeline):
    if not hasattr(gpu, "init"):
        pytest.skip(f"Blender {bpy.app.version_string} cannot open a GPU context in background mode (5.2+ can)")
    from mathutils import Matrix

    gpu.init()
    W, H = 96, 32
    rect, color = timeline.bar("BAKED", 1, 25, lambda f: 10.0 + 3.0 * (f - 1))  # x 10 … 82
    # pixel space, as in a POST_PIXEL handler: x, y in pixels → normalised device coordinates
    pixels = Matrix(((2 / W, 0, 0, -1), (0, 2 / H, 0, -1), (0, 0, 1, 0), (0, 0, 0, 1)))
    px = draw_offscreen(W, H, lambda: timeline.draw_bar(rect, color), pixels)
    lit = px[:, :, 3] > 0.5
    rows, cols = np.flatnonzero(lit.any(axis=1)), np.flatnonzero(lit.any(axis=0))
    assert (cols.min(), cols.max() + 1) == (10, 82), cols
    assert (rows.min(), rows.max() + 1) == (int(timeline.BAR_BOTTOM), int(timeline.BAR_BOTTOM + timeline.BAR_HEIGHT))
    np.testing.assert_allclose(px[rows[0], 40, :3], np.array(color[:3]) * 1.0, atol=0.15)
