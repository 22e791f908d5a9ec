"""Kapitza's pendulum: shaking the pivot of an upright pendulum fast enough keeps it up.

A point bob on a massless rod of length l stands nearly upright; its pivot moves vertically, z = a·cos ωt (an
exact oscillation: ``pivot_motion = {kind = "oscillation", …}`` in a scene file). In the high-frequency limit the
upright position is stable when a²ω² > 2gl, and the bob then swings slowly about it at Ω = √(a²ω²/2l² − g/l)
(Kapitza 1951; Landau–Lifshitz §30). Two runs, one on each side of the boundary (a²ω²/2gl = 3.6 and 0.58): the
first stays up swinging at Ω, the second falls.

Run: python examples/kapitza.py [OUTDIR]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import mean_period, report, save

from pem_physics import examples, simulate

G, L, F = 9.81, 0.2, 60.0


def tilt(traj) -> np.ndarray:
    """Angle (rad) of pivot → bob from straight up, signed, about the hinge (lab x)."""
    d = traj.center_of_mass[:, 0] - traj.position[:, 0]
    return np.arctan2(-d[:, 1], d[:, 2])


def main(t_end=None, outdir=None) -> dict:
    w = 2 * np.pi * F
    runs = {}
    for label, a in (("above", 0.01), ("below", 0.004)):
        traj = simulate(examples.kapitza(amplitude=a, frequency=F, length=L, t_end=t_end or 1.5,
                                         samples_per_period=None))
        save(traj, None if outdir is None else f"{outdir}/{label}")
        th = tilt(traj)
        runs[label] = {"amplitude_m": a, "a2w2_over_2gl": a * a * w * w / (2 * G * L),
                       "max_tilt_deg": float(np.degrees(np.abs(th).max())),
                       "slow_period_s": mean_period(traj.t, th), "energy_balance": traj.energy_balance()}
    a = runs["above"]["amplitude_m"]
    slow = np.sqrt(a * a * w * w / (2 * L * L) - G / L)
    result = {"runs": runs, "slow_period_closed_form_s": 2 * np.pi / slow,
              "claim": "upright is stable for a²ω² > 2gl, swinging slowly at √(a²ω²/2l² − g/l); it falls below"}
    up, down = runs["above"], runs["below"]
    result["claim_holds"] = bool(up["max_tilt_deg"] < 2 * 6.0 and down["max_tilt_deg"] > 90.0
                                 and (t_end is not None or abs(up["slow_period_s"] * slow / (2 * np.pi) - 1) < 0.05))
    return result


if __name__ == "__main__":
    report(main(outdir=sys.argv[1] if len(sys.argv) > 1 else "out/kapitza"))
