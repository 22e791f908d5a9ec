"""A billiard ball struck without spin (and with backspin) slides, then rolls (a body on a table; issue 30).

On the cloth (friction μ) the contact point slips at v − aω, which friction brings down at (7/2)μg: the ball
rolls from t* = 2(1 + w)v₀/(7μg) at (5 − 2w)v₀/7, w the backspin in units of v₀/a — forward for w < 5/2, stopped
at 5/2, coming back above. The simulation locates the stick to round-off and rolls on (contact_model = "surface").

Run: python examples/billiard_ball.py [OUTDIR]
"""

from __future__ import annotations

import sys

from _common import report, save

from pem_physics import examples, simulate


def main(t_end=None, outdir=None) -> dict:
    v0, mu, g = 2.0, 0.2, 9.81
    runs = {}
    for w in (0.0, 1.0, 4.0):
        t_star = 2 * (1 + w) * v0 / (7 * mu * g)
        run_to = t_end if t_end is not None else round(1.2 * t_star, 3) + 0.1
        traj = simulate(examples.billiard_ball(speed=v0, backspin=w, mu=mu, t_end=run_to))
        ev = traj.events
        stick = [t for t, k in zip(ev.t, ev.kind) if k == "stick"]
        runs[f"backspin {w:g}"] = {
            "stick_s": stick[0] if stick else None, "stick_closed_form_s": t_star,
            "final_speed_m_s": float(traj.velocity[-1, 0, 0]), "rolling_speed_closed_form_m_s": (5 - 2 * w) * v0 / 7,
            "energy_balance": traj.energy_balance(),
        }
        if w == 0.0:
            save(traj, outdir)
    result = {"runs": runs,
              "claim": "the ball rolls from 2(1 + w)v₀/(7μg) at (5 − 2w)v₀/7 (w = backspin·a/v₀), to 1e-9"}
    result["claim_holds"] = bool(all(
        r["stick_s"] is not None and abs(r["stick_s"] / r["stick_closed_form_s"] - 1) < 1e-9
        and abs(r["final_speed_m_s"] - r["rolling_speed_closed_form_m_s"]) < 1e-9 * v0 and r["energy_balance"] < 1e-12
        for r in runs.values()))
    return result


if __name__ == "__main__":
    report(main(outdir=sys.argv[1] if len(sys.argv) > 1 else "out/billiard_ball"))
