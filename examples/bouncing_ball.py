"""A ball dropped on a floor with restitution e < 1 (a free body that translates; theory §7).

The n-th rebound rises e^{2n}·h (read from the flight times between impacts, height = g·Δt²/8), and the
infinitely many impacts add up to the finite rest time √(2h/g)(1+e)/(1−e). The simulation bounces until a
rebound would last less than a step, then lets the ball rest on the floor (no Zeno hang): the flights it
leaves out, 2e·v/(g(1−e)) after the last impact at speed v, close the gap to the rest time exactly.

Run: python examples/bouncing_ball.py [OUTDIR]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import report, save

from pem_physics import examples, simulate


def main(t_end=None, outdir=None) -> dict:
    h, e, g, R, m = 1.0, 0.8, 9.81, 0.02, 0.1
    scene = examples.bouncing_ball(height=h, radius=R, mass=m, restitution=e)
    traj = simulate(scene, t_end=t_end)
    ev = traj.events
    t = np.array(ev.t)
    impacts = np.array([k == "impact" for k in ev.kind])
    flights = np.diff(t[impacts])
    heights = g * flights**2 / 8
    n = np.arange(1, len(heights) + 1)
    rest = [i for i, k in enumerate(ev.kind) if k == "rest"]
    t_rest = np.sqrt(2 * h / g) * (1 + e) / (1 - e)
    left_out = None
    if rest:
        v = ev.impulse[rest[0]][2] / m  # the settling impact stops the ball: the floor pushes up by m·v
        left_out = 2 * e * v / (g * (1 - e))
    result = {
        "impacts": int(impacts.sum()), "rebound_heights_m": heights,
        "rebound_height_rel_error_max": float(np.max(np.abs(heights / (e ** (2 * n) * h) - 1))) if len(n) else None,
        "rest_at_s": t[rest[0]] if rest else None, "flights_left_out_s": left_out, "rest_time_closed_form_s": t_rest,
        "final_height_m": float(traj.position[-1, 0, 2] - R),
        "final_speed_m_s": float(np.linalg.norm(traj.velocity[-1, 0])),
        "claim": "the n-th rebound rises e^{2n}h; the ball comes to rest at √(2h/g)(1+e)/(1−e), without a Zeno hang",
    }
    result["claim_holds"] = bool(
        rest and len(n) >= 5 and result["rebound_height_rel_error_max"] < 1e-9
        and abs((result["rest_at_s"] + left_out) / t_rest - 1) < 1e-9
        and abs(result["final_height_m"]) < 1e-12 and result["final_speed_m_s"] < 1e-12)
    save(traj, outdir)
    return result


if __name__ == "__main__":
    report(main(outdir=sys.argv[1] if len(sys.argv) > 1 else "out/bouncing_ball"))
