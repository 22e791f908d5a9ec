"""Figures without a display: a matplotlib Figure on the Agg canvas, saved to PNG atomically.

Shared by every plot of the package (:mod:`.plot`, :mod:`.gas_plot`, :mod:`.sweep`); matplotlib is
imported on first use, so the package runs without it until a plot is asked for.
"""

from __future__ import annotations

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
