"""Shared by the example scripts: path set-up, measurements on trajectories, writing outputs and plots."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing pem_physics
    sys.path.insert(0, str(ROOT))


def crossings(t, x, direction=+1) -> np.ndarray:
    """Times (s) where x crosses 0 going up (+1) or down (−1), by linear interpolation between records."""
    t, x = np.asarray(t, float), np.asarray(x, float)
    up = (x[:-1] < 0) & (x[1:] >= 0) if direction > 0 else (x[:-1] > 0) & (x[1:] <= 0)
    i = np.flatnonzero(up)
    return t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i])


def mean_period(t, x) -> float:
    """Mean spacing (s) of upward zero crossings of x(t); nan with fewer than two."""
    c = crossings(t, x, +1)
    return float(np.mean(np.diff(c))) if len(c) >= 2 else float("nan")


def swing_angle(traj, body=0, axis=0) -> np.ndarray:
    """Angle (rad) of pivot → centre of mass from straight down, about lab axis 0 (x) or 1 (y)."""
    d = traj.center_of_mass[:, body] - traj.pivot[body]
    side = d[:, 1] if axis == 0 else -d[:, 0]
    return np.arctan2(side, -d[:, 2])


def save(traj, outdir, sources=None) -> list:
    """trajectory files + the standard plots in ``outdir`` (nothing when outdir is None)."""
    if outdir is None:
        return []
    from pem_physics.analysis.plot import plot_outputs, plot_top_view
    from pem_physics.io.output import write_outputs

    write_outputs(traj, outdir)
    paths = plot_outputs(outdir)
    if sources is not None:
        paths.append(plot_top_view(traj, Path(outdir) / "top_view_magnets.png", sources=sources))
    return paths


def report(result: dict) -> None:
    """Print the measured quantities and the claim as JSON (numpy values made plain)."""
    def plain(v):
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, np.generic):
            return v.item()
        return v
    print(json.dumps(plain(result), indent=2))
