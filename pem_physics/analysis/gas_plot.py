"""Figures of a ``gas`` output folder (its gas.npz): ``plot OUTDIR`` draws these when the folder holds a gas run.

- ``gas_pressure.png``: the virial pressure so far βPσ^d against time (from the records), with the
  equation of state's value (Carnahan–Starling in 3D, Henderson in 2D) as a line (not under gravity);
- ``gas_speeds.png``: histogram of the scaled speeds u = |v| √(m/T) of the last record with the
  Maxwell–Boltzmann (3D) or Rayleigh (2D) density;
- ``gas_snapshot.png``: the positions of the last record (disks to scale in 2D; in 3D the spheres
  whose centre lies in the middle slab of thickness σ along z, to scale, seen from above).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ValidationError
from ..gas import measure
from ..gas.state import ball_volume
from .figures import figure, save

FIGURES = ("gas_pressure", "gas_speeds", "gas_snapshot")


def read_gas(outdir) -> dict:
    """The arrays of a gas run's gas.npz (see :mod:`.gas_command`) as a dict."""
    from ..io.outset import verified

    path = verified(outdir, "gas.npz", "gas run output")
    with np.load(path, allow_pickle=False) as data:
        out = {k: data[k] for k in data.files}
    if "times" not in out or len(out["times"]) == 0:
        raise ValidationError(str(path), "the run has no records to draw")
    return out


def running_pressure(g: dict) -> tuple[np.ndarray, np.ndarray]:
    """(times (R−1,), βPσ^d so far (R−1,)) from the records (the first, at the start, has no virial yet)."""
    n, d = g["positions"].shape[1], g["positions"].shape[2]
    vol = float(np.prod(g["box"]))
    sig = 2.0 * float(np.mean(g["radii"]))
    t = g["times"][1:]
    span = t - g["times"][0]
    kin = g["kinetic"][1:]
    P = (2.0 * kin + g["virial"][1:] / span) / (d * vol)
    T = 2.0 * kin / (d * n)
    return t, P * sig ** d / np.where(T > 0, T, np.nan)


def plot_pressure(g: dict, path) -> Path:
    fig = figure(8, 5)
    ax = fig.add_subplot()
    t, red = running_pressure(g)
    d = g["positions"].shape[2]
    ax.plot(t, red, lw=1.2, color="C0", label="virial pressure so far")
    eta = float(np.sum(ball_volume(g["radii"], d)) / np.prod(g["box"]))
    if not np.any(g.get("gravity", np.zeros(d))):  # a stratified gas has no single bulk equation of state
        eos = float(measure.reduced_pressure_eos(eta, d))
        ax.axhline(eos, color="C3", ls="--", label=f"{'Carnahan–Starling' if d == 3 else 'Henderson'} {eos:.4f}")
    ax.set_xlabel("t (σ √(m/k_BT))")
    ax.set_ylabel(f"βPσ^{d}")
    ax.set_title(f"pressure, N = {g['positions'].shape[1]}, η = {eta:.3f}")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return save(fig, path, _partial(g))


def plot_speeds(g: dict, path) -> Path:
    v = g["velocities"][-1]
    m = g["masses"]
    d = v.shape[1]
    T = float(np.sum(m[:, None] * v * v)) / (d * len(m))
    u = np.linalg.norm(v, axis=1) * np.sqrt(m / T) if T > 0 else np.linalg.norm(v, axis=1)
    fig = figure(8, 5)
    ax = fig.add_subplot()
    edges = np.linspace(0.0, max(float(u.max()), 4.0), 41)
    ax.hist(u, edges, density=True, color="C0", alpha=0.6, label=f"t = {g['times'][-1]:.4g}, N = {len(u)}")
    x = np.linspace(0.0, edges[-1], 300)
    ax.plot(x, measure.speed_pdf(x, d), color="C3", lw=1.5, label="Maxwell–Boltzmann" if d == 3 else "2D (Rayleigh)")
    ax.set_xlabel("u = |v| √(m / k_BT)")
    ax.set_ylabel("density")
    ax.set_title("speed distribution")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return save(fig, path, _partial(g))


def plot_snapshot(g: dict, path) -> Path:
    from matplotlib.collections import EllipseCollection

    x = g["positions"][-1]
    r = g["radii"]
    box = g["box"]
    d = x.shape[1]
    if d == 3:
        mid = 0.5 * box[2]
        keep = np.abs(x[:, 2] - mid) <= r.mean()
        x, r = x[keep], r[keep]
        title = f"spheres with centres in the slab |z − {mid:.3g}| ≤ σ/2, t = {g['times'][-1]:.4g}"
    else:
        title = f"disks at t = {g['times'][-1]:.4g}"
    side = 7.0
    fig = figure(side, side * float(box[1] / box[0]) if box[1] < 2 * box[0] else side)
    ax = fig.add_subplot()
    ax.add_collection(EllipseCollection(2 * r, 2 * r, np.zeros_like(r), units="xy", offsets=x[:, :2],
                                        offset_transform=ax.transData, facecolors="C0", edgecolors="k",
                                        linewidths=0.3, alpha=0.8))
    ax.set_xlim(0, box[0])
    ax.set_ylim(0, box[1])
    ax.set_aspect("equal")
    ax.set_xlabel("x (σ)")
    ax.set_ylabel("y (σ)")
    ax.set_title(title, fontsize="small")
    fig.tight_layout()
    return save(fig, path, _partial(g))


def plot_gas_outputs(outdir, pngdir=None) -> list[Path]:
    """All :data:`FIGURES` for the gas run in ``outdir`` (its published output set), written to ``pngdir``
    (default: outdir; the PNGs then join the run's set)."""
    from ..io.outset import OutputSet

    g = read_gas(outdir)
    pngdir = Path(pngdir) if pngdir else Path(outdir)
    with OutputSet(pngdir, "plot", extend=pngdir.resolve() == Path(outdir).resolve()) as out:
        paths = [plot_pressure(g, out.staging / "gas_pressure.png"), plot_speeds(g, out.staging / "gas_speeds.png"),
                 plot_snapshot(g, out.staging / "gas_snapshot.png")]
        out.publish(complete=bool(g.get("complete", True)))
    return [out.outdir / p.name for p in paths]


def _partial(g: dict) -> str | None:
    """Why a gas run is incomplete, for the figures' stamp (None for a complete run)."""
    return None if bool(g.get("complete", True)) else f"interrupted at t = {float(g['final_time']):g}"
