"""Figures without a display: a matplotlib Figure on the Agg canvas, saved to PNG atomically.

Shared by every plot of the package (:mod:`.plot`, :mod:`.gas_plot`, :mod:`.sweep`); matplotlib is
imported on first use, so the package runs without it until a plot is asked for.
"""

from __future__ import annotations

import functools
import unicodedata
from pathlib import Path

from ..errors import PemError
from ..io.files import atomic_open


def figure(width: float = 8.0, height: float = 5.0):
    """A matplotlib Figure of ``width`` × ``height`` inches at 100 dpi, on the Agg canvas."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise PemError("plots need the 'matplotlib' package (pip install matplotlib)") from err
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _invisible(c: str) -> bool:
    """A format character (joiner, direction mark) or variation selector (the emoji or text style of the character
    before): drawn as nothing, so where the font lacks it a stand-in would only be noise."""
    code = ord(c)
    return unicodedata.category(c) == "Cf" or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


@functools.lru_cache(maxsize=4)
def _charmap(fonts: tuple) -> frozenset:
    """The code points the fonts at the paths ``fonts`` (matplotlib's fallback chain, in order) have glyphs for."""
    from matplotlib import font_manager

    return frozenset().union(*(font_manager.get_font(f).get_charmap() for f in fonts))


def _default_fonts() -> tuple:
    """Paths of the fonts matplotlib draws plain text with now (rcParams: its family and the fallbacks after it)."""
    from matplotlib import font_manager

    props = font_manager.FontProperties()
    find = getattr(font_manager.fontManager, "_find_fonts_by_props", None)  # the fallback chain (matplotlib ≥ 3.6)
    return tuple(find(props)) if find is not None else (font_manager.findfont(props),)


def drawable(text: str) -> str:
    """``text`` as a figure can draw it with matplotlib's current font: each character no font of its fallback chain
    has a glyph for — an emoji in a body's name, say, drawn as a box with a "Glyph … missing" warning — becomes its
    Unicode name, ``\\N{MAGNET}``, or ``U+XXXX`` when it has none; invisible ones (variation selectors, joiners) are
    dropped. Control characters (a newline) are layout and stay. Text the fonts cover comes back unchanged."""
    covered = _charmap(_default_fonts())
    if all(ord(c) in covered for c in text):
        return text
    out = []
    for c in text:
        if ord(c) in covered or unicodedata.category(c) == "Cc":
            out.append(c)
        elif _invisible(c):
            continue
        else:
            name = unicodedata.name(c, None)
            out.append(f"\\N{{{name}}}" if name else f"U+{ord(c):04X}")
    return "".join(out)


def save(fig, path, partial: str | None = None) -> Path:
    """Write ``fig`` as a PNG at ``path`` (replaced atomically); returns the path. ``partial``: why the run is
    incomplete (e.g. "interrupted at t = 3.2 s"), stamped across the top of the figure in red."""
    path = Path(path)
    if partial:
        fig.text(0.5, 0.995, f"PARTIAL RUN: {partial}", ha="center", va="top", color="#c00000",
                 fontsize="small", fontweight="bold")
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png")
    return path
