"""The viewport overlay's lines, drawn for real into an offscreen buffer and read back.

Blender 5.2 can open a GPU context in background mode (``gpu.init()``); older versions cannot, and this file
then skips with that reason. What is checked against the geometry alone: a segment across normalised device
coordinates −0.8 … 0.8 (identity matrices) covers pixels (1 ± 0.8)/2 · width, is ``LINE_WIDTH`` pixels thick on
every GPU backend (the polyline shader: Metal and Vulkan ignore ``line_width_set``) and has the dipole colour.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")
import gpu  # noqa: E402

from .offscreen import draw_offscreen  # noqa: E402


@pytest.fixture(scope="module")
def gpu_context():
    if not hasattr(gpu, "init"):
        pytest.skip(f"Blender {bpy.app.version_string} cannot open a GPU context in background mode (5.2+ can)")
    gpu.init()


@pytest.mark.parametrize("width", [2.0, 5.0])
def test_overlay_lines_are_drawn_where_and_as_wide_as_asked(gpu_context, ext, monkeypatch, width):
    overlay = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.overlay")
    monkeypatch.setattr(overlay, "LINE_WIDTH", width)
    W = H = 64
    px = draw_offscreen(W, H, lambda: overlay.draw_segments(
        {"dipoles": np.array([[[-0.8, 0.0, 0.0], [0.8, 0.0, 0.0]]])}, (W, H)))
    lit = px[:, :, 3] > 0.5
    rows, cols = np.flatnonzero(lit.any(axis=1)), np.flatnonzero(lit.any(axis=0))
    assert abs(len(rows) - width) <= 1, (rows, width)                       # thickness in pixels
    assert abs((rows.min() + rows.max() + 1) / 2 - H / 2) <= 1, rows         # centred on y = 0
    assert abs(cols.min() - (1 - 0.8) / 2 * W) <= 1.5 and abs(cols.max() + 1 - (1 + 0.8) / 2 * W) <= 1.5, cols
    np.testing.assert_allclose(px[H // 2, W // 2], overlay.DIPOLE_COLOR, atol=2 / 255)
