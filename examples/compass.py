"""Compass needle: in a uniform field it swings at √(pB/I) (exactly 4√(I/pB)·K(sin²(θ₀/2)) per period);
in a rotating field with pivot friction c it follows with the steady lag δ, sin δ = cΩ/(pB).

Run: python examples/compass.py [OUTDIR]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import mean_period, report, save

from pem_physics import examples, simulate


def needle_constants(scene) -> tuple[float, float, float]:
    """p (A·m²), I about the hinge (kg·m²) of the scene's needle and its initial angle from x (rad)."""
    body = scene.checked().bodies[0]
    I = float(body.resolved_mass_properties().inertia_about(np.zeros(3))[2, 2])
    p = float(np.linalg.norm(body.dipoles[0].moment))
    heading = np.asarray(body.orientation)[0]
    return p, I, float(np.arctan2(heading[1], heading[0]))


def needle_heading(traj) -> np.ndarray:
    """Angle (rad) of the needle's body x axis from lab x, unwrapped."""
    u1 = traj.orientation[:, 0, 0, :]
    return np.unwrap(np.arctan2(u1[:, 1], u1[:, 0]))


def main(t_end=None, outdir=None) -> dict:
    uniform = examples.compass(moment=0.2, field=1e-2, theta0_deg=30.0)
    p, I, th0 = needle_constants(uniform)
    B = 1e-2
    omega0 = np.sqrt(p * B / I)
    T_exact = 4 * np.sqrt(I / (p * B)) * examples.ellipk(np.sin(th0 / 2) ** 2)
    traj = simulate(uniform, dt=2e-4, record_interval=1e-3, t_end=t_end if t_end is not None else 5 * T_exact)
    T = mean_period(traj.t, needle_heading(traj))
    save(traj, None if outdir is None else f"{outdir}/uniform")

    c, Omega = 1.2e-4, 5.0
    rotating = examples.compass_rotating(moment=p, field=B, field_rate=Omega, friction=c)
    rtraj = simulate(rotating, t_end=t_end if t_end is not None else 2.0)
    lag = Omega * rtraj.t - needle_heading(rtraj)
    late = rtraj.t > 0.8 * rtraj.t[-1]
    lag_exact = float(np.arcsin(c * Omega / (p * B)))
    save(rtraj, None if outdir is None else f"{outdir}/rotating")
    result = {
        "small_oscillation_frequency_sqrt_pB_over_I": omega0,
        "period_measured_s": T, "period_closed_form_s": T_exact,
        "period_small_amplitude_s": 2 * np.pi / omega0,
        "lag_measured_rad": float(lag[late].mean()), "lag_spread_rad": float(np.ptp(lag[late])),
        "lag_closed_form_rad": lag_exact,
        "claim": "uniform field: period 4√(I/pB)K(sin²(θ₀/2)) → 2π/√(pB/I); rotating field: lag arcsin(cΩ/(pB))",
    }
    result["claim_holds"] = bool(abs(T / T_exact - 1) < 1e-4 and abs(result["lag_measured_rad"] / lag_exact - 1) < 1e-3
                                 and result["lag_spread_rad"] < 1e-3)
    return result


if __name__ == "__main__":
    report(main(outdir=sys.argv[1] if len(sys.argv) > 1 else "out/compass"))
