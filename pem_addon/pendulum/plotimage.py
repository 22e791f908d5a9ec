"""A diagnostics chart drawn with numpy into a Blender image (Blender ships no matplotlib).

Top panel: kinetic (red), potential = gravity + field + dipole (blue) and total energy (black), J,
on common axes. Bottom panel: the energy balance, (E + W − E₀)/scale (green, W the work of pivot
friction: what remains is integration error), around a grey zero line. Both panels have tick marks
with numbers, axis titles with units, and the top one a legend above it; text is drawn with a small bitmap
font (5×7 glyphs, scaled ×2).
"""

from __future__ import annotations

import math

import bpy
import numpy as np

WIDTH, HEIGHT = 900, 560
LEFT, RIGHT, TOP, BOTTOM, GAP = 90, 20, 30, 50, 60  # plot margins, px
SCALE = 2                                           # glyph pixel size
INK = (0.1, 0.1, 0.1, 1.0)
GRID = (0.85, 0.85, 0.85, 1.0)
SERIES = (("kinetic", (0.85, 0.2, 0.15, 1.0)), ("potential", (0.15, 0.35, 0.85, 1.0)),
          ("total", (0.0, 0.0, 0.0, 1.0)))
BALANCE_COLOR = (0.1, 0.6, 0.2, 1.0)

# 5×7 glyphs, one int per row (bit 4 = leftmost column), top row first.
_FONT = {
    "0": (14, 17, 19, 21, 25, 17, 14), "1": (4, 12, 4, 4, 4, 4, 14), "2": (14, 17, 1, 2, 4, 8, 31),
    "3": (31, 2, 4, 2, 1, 17, 14), "4": (2, 6, 10, 18, 31, 2, 2), "5": (31, 16, 30, 1, 1, 17, 14),
    "6": (6, 8, 16, 30, 17, 17, 14), "7": (31, 1, 2, 4, 8, 8, 8), "8": (14, 17, 17, 14, 17, 17, 14),
    "9": (14, 17, 17, 15, 1, 2, 12), ".": (0, 0, 0, 0, 0, 12, 12), "-": (0, 0, 0, 31, 0, 0, 0),
    "+": (0, 4, 4, 31, 4, 4, 0), "(": (2, 4, 8, 8, 8, 4, 2), ")": (8, 4, 2, 2, 2, 4, 8),
    "/": (0, 1, 2, 4, 8, 16, 0), " ": (0,) * 7, ":": (0, 12, 12, 0, 12, 12, 0), "=": (0, 0, 31, 0, 31, 0, 0),
    "a": (0, 0, 14, 1, 15, 17, 15), "b": (16, 16, 22, 25, 17, 17, 30), "c": (0, 0, 14, 16, 16, 17, 14),
    "d": (1, 1, 13, 19, 17, 17, 15), "e": (0, 0, 14, 17, 31, 16, 14), "f": (6, 9, 8, 28, 8, 8, 8),
    "g": (0, 15, 17, 17, 15, 1, 14), "h": (16, 16, 22, 25, 17, 17, 17), "i": (4, 0, 12, 4, 4, 4, 14),
    "k": (16, 16, 18, 20, 24, 20, 18), "l": (12, 4, 4, 4, 4, 4, 14), "m": (0, 0, 26, 21, 21, 17, 17),
    "n": (0, 0, 22, 25, 17, 17, 17), "o": (0, 0, 14, 17, 17, 17, 14), "p": (0, 0, 30, 17, 30, 16, 16),
    "r": (0, 0, 22, 25, 16, 16, 16), "s": (0, 0, 14, 16, 14, 1, 30), "t": (8, 8, 28, 8, 8, 9, 6),
    "u": (0, 0, 17, 17, 17, 19, 13), "v": (0, 0, 17, 17, 17, 10, 4), "w": (0, 0, 17, 17, 21, 21, 10),
    "x": (0, 0, 17, 10, 4, 10, 17), "y": (0, 0, 17, 17, 15, 1, 14), "E": (31, 16, 16, 30, 16, 16, 31),
    "J": (7, 2, 2, 2, 2, 18, 12), "W": (17, 17, 17, 21, 21, 21, 10),
}


def text_width(s: str) -> int:
    return len(s) * 6 * SCALE


def draw_text(img, s: str, x: int, y: int, color=INK, align: str = "left") -> None:
    """Write s with its baseline-left corner at (x, y) px (y up, Blender's pixel order); align left/right/center."""
    if align == "right":
        x -= text_width(s)
    elif align == "center":
        x -= text_width(s) // 2
    for ch in s:
        rows = _FONT.get(ch, _FONT[" "])
        for r, bits in enumerate(rows):
            for c in range(5):
                if bits & (16 >> c):
                    y0, x0 = y + (6 - r) * SCALE, x + c * SCALE
                    if 0 <= x0 and x0 + SCALE <= img.shape[1] and 0 <= y0 and y0 + SCALE <= img.shape[0]:
                        img[y0:y0 + SCALE, x0:x0 + SCALE] = color
        x += 6 * SCALE


def nice_ticks(lo: float, hi: float, n: int = 5) -> np.ndarray:
    """Tick values at a 1, 2 or 5 × 10ᵏ step inside [lo, hi]: the widest such step giving 3 to n + 1 ticks."""
    if not hi > lo:
        return np.array([lo])
    e = math.floor(math.log10((hi - lo) / max(n - 1, 1)))
    steps = [m * 10.0 ** k for k in (e - 1, e, e + 1) for m in (1, 2, 5)]

    def count(step):
        return math.floor(hi / step + 1e-9) - math.ceil(lo / step - 1e-9) + 1

    fitting = [st for st in steps if 3 <= count(st) <= n + 1]
    step = max(fitting) if fitting else min(steps)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = first + step * np.arange(count(step))
    return np.where(np.abs(ticks) < step * 1e-9, 0.0, ticks)


def tick_label(v: float) -> str:
    return f"{v:.3g}".replace("e-0", "e-").replace("e+0", "e")


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
            xi = np.clip(np.round(X).astype(int) + dx, x0, x1 - 1)
            yi = np.clip(np.round(Y).astype(int) + dy, y0, y1 - 1)
            img[yi, xi] = color


def _scaled(v, lo, hi):
    return (np.asarray(v) - lo) / (hi - lo) if hi > lo else np.full(len(v), 0.5)


def _axes(img, box, xlo, xhi, ylo, yhi, xlabel: str | None, ytitle: str) -> dict:
    """Frame, grid, tick numbers and titles of one panel; returns the ticks drawn."""
    x0, y0, x1, y1 = box
    xt, yt = nice_ticks(xlo, xhi), nice_ticks(ylo, yhi, 4)
    for v in yt:
        y = int(round(y0 + _scaled([v], ylo, yhi)[0] * (y1 - y0)))
        img[y, x0:x1] = GRID
        img[y, x0 - 6:x0] = INK
        draw_text(img, tick_label(v), x0 - 10, y - 7, align="right")
    for v in xt:
        x = int(round(x0 + _scaled([v], xlo, xhi)[0] * (x1 - x0)))
        img[y0:y1, x] = GRID
        img[y0 - 6:y0, x] = INK
        if xlabel is not None:
            draw_text(img, tick_label(v), x, y0 - 24, align="center")
    img[y0:y1, [x0, x1 - 1]] = INK
    img[[y0, y1 - 1], x0:x1] = INK
    draw_text(img, ytitle, x0, y1 + 6)
    if xlabel is not None:
        draw_text(img, xlabel, (x0 + x1) // 2, y0 - 46, align="center")
    return {"x": xt, "y": yt}


def chart(data: dict) -> tuple[np.ndarray, dict]:
    """(RGBA float image (HEIGHT, WIDTH, 4), row 0 at the bottom (Blender's pixel order); layout: the ticks of
    both panels and the legend's entries with their boxes, for callers and tests)."""
    img = np.ones((HEIGHT, WIDTH, 4), dtype=np.float32)
    t = np.asarray(data["t"], float)
    K = np.asarray(data["kinetic"], float)
    P = np.asarray(data["gravity"], float) + np.asarray(data["field"], float) + np.asarray(data["dipole"], float)
    E = np.asarray(data["total"], float)
    W = np.asarray(data.get("friction_work", np.zeros_like(E)), float)
    mid = BOTTOM + (HEIGHT - TOP - BOTTOM - GAP) // 3
    top = (LEFT, mid + GAP, WIDTH - RIGHT, HEIGHT - TOP)
    bottom = (LEFT, BOTTOM, WIDTH - RIGHT, mid)
    tlo, thi = float(t.min()), float(t.max())
    tx = _scaled(t, tlo, thi)
    lo, hi = min(K.min(), P.min(), E.min()), max(K.max(), P.max(), E.max())
    pad = 0.05 * (hi - lo) if hi > lo else 1.0
    lo, hi = lo - pad, hi + pad
    layout = {"top": _axes(img, top, tlo, thi, lo, hi, None, "energy (J)")}
    for series, (_, color) in zip((K, P, E), SERIES):
        _polyline(img, tx, _scaled(series, lo, hi), color, top)
    scale = max(np.abs(E).max(), np.abs(K).max(), 1e-300)
    err = (E + W - E[0]) / scale
    m = max(np.abs(err).max(), 1e-15)
    layout["bottom"] = _axes(img, bottom, tlo, thi, -1.1 * m, 1.1 * m, "time (s)",
                             "energy balance (E + friction work - E0)/scale")
    _polyline(img, [0, 1], [0.5, 0.5], (0.6, 0.6, 0.6, 1), bottom)
    _polyline(img, tx, _scaled(err, -1.1 * m, 1.1 * m), BALANCE_COLOR, bottom)
    layout["legend"] = _legend(img, top)
    return img, layout


def _legend(img, box) -> list:
    """The legend in one row above the panel ``box``, right-aligned: outside the plot, so it hides no curve
    (inside its top right corner it covered the kinetic energy's peaks). Returns (name, colour, swatch box)."""
    entries = []
    widths = [40 + text_width(name) for name, _ in SERIES]   # swatch 30 px, 10 px, the name
    x, y = box[2] - sum(widths) - 20 * (len(SERIES) - 1), box[3] + 8
    for (name, color), width in zip(SERIES, widths):
        img[y + 5:y + 9, x:x + 30] = color
        draw_text(img, name, x + 40, y)
        entries.append((name, color, (x, y + 5, x + 30, y + 9)))
        x += width + 20
    return entries


def energy_image(data: dict, name: str = "PEM Diagnostics"):
    """Create or update the Blender image ``name`` with :func:`chart` of ``data``."""
    img = bpy.data.images.get(name)
    if img is None or tuple(img.size) != (WIDTH, HEIGHT):
        if img is not None:
            bpy.data.images.remove(img)
        img = bpy.data.images.new(name, WIDTH, HEIGHT, alpha=True)
    img.pixels.foreach_set(chart(data)[0].ravel())
    img.update()
    return img
