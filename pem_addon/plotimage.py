"""A diagnostics chart drawn with numpy into a Blender image (Blender ships no matplotlib).

Top panel: kinetic (red), potential = gravity + field + dipole (blue) and total energy (black),
common scale. Bottom panel: relative energy error (E − E₀)/max|E| (green) around a grey zero line.
"""

from __future__ import annotations

import bpy
import numpy as np

WIDTH, HEIGHT, MARGIN = 800, 500, 30


def _polyline(img, xs, ys, color, box):
    """Draw (xs, ys) in data space [0,1]² into box (x0, y0, x1, y1) of img (H,W,4), 2 px wide."""
    x0, y0, x1, y1 = box
    px = x0 + np.asarray(xs) * (x1 - x0)
    py = y0 + np.asarray(ys) * (y1 - y0)
    if len(px) < 2:
        return
    n = np.maximum(2, np.ceil(np.hypot(np.diff(px), np.diff(py))).astype(int) + 1)
    t = np.concatenate([np.linspace(0, 1, k) for k in n])
    seg = np.repeat(np.arange(len(n)), n)
    X = px[seg] + t * (px[seg + 1] - px[seg])
    Y = py[seg] + t * (py[seg + 1] - py[seg])
    for dx in (0, 1):
        for dy in (0, 1):
            xi = np.clip(np.round(X).astype(int) + dx, 0, img.shape[1] - 1)
            yi = np.clip(np.round(Y).astype(int) + dy, 0, img.shape[0] - 1)
            img[yi, xi] = color


def _scaled(v, lo, hi):
    return (np.asarray(v) - lo) / (hi - lo) if hi > lo else np.full(len(v), 0.5)


def chart(data: dict) -> np.ndarray:
    """RGBA float image (HEIGHT, WIDTH, 4), row 0 at the bottom (Blender's pixel order)."""
    img = np.ones((HEIGHT, WIDTH, 4), dtype=np.float32)
    t = np.asarray(data["t"], float)
    tx = _scaled(t, t.min(), t.max())
    K = np.asarray(data["kinetic"], float)
    P = np.asarray(data["gravity"], float) + np.asarray(data["field"], float) + np.asarray(data["dipole"], float)
    E = np.asarray(data["total"], float)
    top = (MARGIN, HEIGHT // 2 + MARGIN // 2, WIDTH - MARGIN, HEIGHT - MARGIN)
    bottom = (MARGIN, MARGIN, WIDTH - MARGIN, HEIGHT // 2 - MARGIN // 2)
    for x0, y0, x1, y1 in (top, bottom):  # frames
        img[y0:y1, [x0, x1 - 1]] = (0.6, 0.6, 0.6, 1)
        img[[y0, y1 - 1], x0:x1] = (0.6, 0.6, 0.6, 1)
    lo, hi = min(K.min(), P.min(), E.min()), max(K.max(), P.max(), E.max())
    for series, color in ((K, (0.85, 0.2, 0.15, 1)), (P, (0.15, 0.35, 0.85, 1)), (E, (0, 0, 0, 1))):
        _polyline(img, tx, _scaled(series, lo, hi), color, top)
    scale = max(np.abs(E).max(), np.abs(K).max(), 1e-300)
    err = (E - E[0]) / scale
    m = max(np.abs(err).max(), 1e-300)
    _polyline(img, [0, 1], [0.5, 0.5], (0.7, 0.7, 0.7, 1), bottom)
    _polyline(img, tx, 0.5 + 0.45 * err / m, (0.1, 0.6, 0.2, 1), bottom)
    return img


def energy_image(data: dict, name: str = "PEM Diagnostics"):
    """Create or update the Blender image ``name`` with :func:`chart` of ``data``."""
    img = bpy.data.images.get(name)
    if img is None or tuple(img.size) != (WIDTH, HEIGHT):
        if img is not None:
            bpy.data.images.remove(img)
        img = bpy.data.images.new(name, WIDTH, HEIGHT, alpha=True)
    img.pixels.foreach_set(chart(data).ravel())
    img.update()
    return img
