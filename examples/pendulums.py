"""Simple and physical pendulums: measured period against 4√(I/(M g d))·K(sin²(θ₀/2)).

Run: python examples/pendulums.py [OUTDIR]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import mean_period, report, save, swing_angle

from pem_physics import examples, simulate


def closed_form_period(scene) -> float:
    """4√(I_P/(M g d))·K(sin²(θ₀/2)) for the scene's single pendulum swinging about lab x."""
    body = scene.checked().bodies[0]
    mp = body.resolved_mass_properties()
    U = np.asarray(body.orientation)
    I_P = float((U.T @ mp.inertia_about(np.zeros(3)) @ U)[0, 0])  # about the lab x axis through the pivot
    d = float(np.linalg.norm(mp.center_of_mass))
    g = float(np.linalg.norm(scene.gravity))
    com = U.T @ mp.center_of_mass
    theta0 = float(np.arctan2(com[1], -com[2]))
    return 4 * np.sqrt(I_P / (mp.mass * g * d)) * examples.ellipk(np.sin(theta0 / 2) ** 2)


def main(t_end=None, outdir=None) -> dict:
    result = {}
    for name, scene in (("simple", examples.pendulum(length=1.0, theta0_deg=60.0)),
                        ("physical", examples.physical_pendulum(theta0_deg=40.0))):
        T_exact = closed_form_period(scene)
        traj = simulate(scene, t_end=t_end if t_end is not None else 5 * T_exact)
        T = mean_period(traj.t, swing_angle(traj))
        result[name] = {"period_measured_s": T, "period_closed_form_s": T_exact,
                        "relative_error": abs(T / T_exact - 1)}
        save(traj, None if outdir is None else f"{outdir}/{name}")
    result["claim"] = "period = 4√(I/(M g d))·K(sin²(θ₀/2))"
    result["claim_holds"] = all(result[k]["relative_error"] < 1e-4 for k in ("simple", "physical"))
    return result


if __name__ == "__main__":
    report(main(outdir=sys.argv[1] if len(sys.argv) > 1 else "out/pendulums"))
