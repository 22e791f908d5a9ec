"""Heavy symmetric top released with pure spin: precession rate and nutation period against the closed form.

Closed form (theory §5, Lagrange top, u = cos θ): u̇² = β(u−u₁)(u−u₂)(u−u₃),
β = 2Mgl/I₁; nutation period 4K(k)/√(β(u₃−u₁)), k² = (u₂−u₁)/(u₃−u₁); the mean
precession rate is the time average of φ̇ = a(u₀−u)/(1−u²), a = I₃ω₃/I₁; for a
fast top it is ≈ Mgl/(I₃ω₃).

Run: python examples/heavy_top.py [OUTDIR]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import crossings, report, save

from pem_physics import examples, simulate


def closed_form(scene) -> dict:
    """Nutation period (s) and mean precession rate (rad/s) of the top (pure spin about its axis at t = 0)."""
    body = scene.checked().bodies[0]
    mp = body.resolved_mass_properties()
    I = mp.inertia_about(np.zeros(3))
    I1, I3 = float(I[0, 0]), float(I[2, 2])
    l = float(np.linalg.norm(mp.center_of_mass))
    g = float(np.linalg.norm(scene.gravity))
    U = np.asarray(body.orientation)
    w3 = float(U[2] @ np.asarray(body.angular_velocity))
    u0 = float(U[2, 2])
    a, beta = I3 * w3 / I1, 2 * mp.mass * g * l / I1
    # f(u) = (u0 − u)[β(1 − u²) − a²(u0 − u)]: roots u0 and those of βu² − a²u − (β − a²u0)
    disc = np.sqrt(a**4 + 4 * beta * (beta - a * a * u0))
    u1, u3 = (a * a - disc) / (2 * beta), (a * a + disc) / (2 * beta)
    u2 = u0
    k2 = (u2 - u1) / (u3 - u1)
    period = 4 * examples.ellipk(k2) / np.sqrt(beta * (u3 - u1))
    # time average of φ̇ over one nutation: u = u1 + (u2 − u1) sin² s makes dt ∝ ds/√(u3 − u)
    s, wgt = np.polynomial.legendre.leggauss(200)
    s = 0.25 * np.pi * (s + 1)
    u = u1 + (u2 - u1) * np.sin(s) ** 2
    dens = wgt / np.sqrt(u3 - u)
    phidot = a * (u0 - u) / (1 - u * u)
    return {"nutation_period_s": period, "precession_rate": float(phidot @ dens / dens.sum()),
            "precession_rate_fast_top": mp.mass * g * l / (I3 * w3), "u_range": (u1, u2)}


def main(t_end=None, outdir=None) -> dict:
    scene = examples.heavy_top(spin=600.0, tilt_deg=30.0)
    exact = closed_form(scene)
    traj = simulate(scene, dt=2e-4, record_interval=4e-4,
                    t_end=t_end if t_end is not None else 6 * exact["nutation_period_s"])
    axis = traj.orientation[:, 0, 2, :]  # the symmetry axis in the lab
    u = axis[:, 2]
    phi = np.unwrap(np.arctan2(axis[:, 1], axis[:, 0]))
    mid = 0.5 * sum(exact["u_range"])
    down = crossings(traj.t, u - mid, -1)
    period = float(np.mean(np.diff(down)))
    phi_at = np.interp(down, traj.t, phi)
    rate = float((phi_at[-1] - phi_at[0]) / (down[-1] - down[0]))
    result = {
        "nutation_period_s": period, "nutation_period_closed_form_s": exact["nutation_period_s"],
        "precession_rate": rate, "precession_rate_closed_form": exact["precession_rate"],
        "precession_rate_fast_top_Mgd_over_I3w3": exact["precession_rate_fast_top"],
        "cos_theta_range": [float(u.min()), float(u.max())], "cos_theta_range_closed_form": exact["u_range"],
        "claim": "mean precession ≈ Mgd/(I₃ω₃) (exactly the Lagrange-top average); nutation period 4K(k)/√(β(u₃−u₁))",
    }
    result["claim_holds"] = bool(abs(period / exact["nutation_period_s"] - 1) < 1e-3
                                 and abs(rate / exact["precession_rate"] - 1) < 1e-3
                                 and abs(rate / exact["precession_rate_fast_top"] - 1) < 0.05)
    save(traj, outdir)
    return result


if __name__ == "__main__":
    report(main(outdir=sys.argv[1] if len(sys.argv) > 1 else "out/heavy_top"))
