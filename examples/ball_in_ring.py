"""A ball runs round the inside of a ring, leaves it, flies and strikes it again (theory §7; the seed's check).

A sphere slides without friction inside a vertical ring (a cylinder wall about z, gravity −y): held on the
wall by the constraint force N = m(v²/R − g·n̂), it leaves where N falls to zero. Started at the bottom with
speed v₀, energy gives v² = v₀² − 2g(R + y) and N = 0 gives cos θ = (2gR − v₀²)/(3gR), θ from the bottom:
for R = 2, g = 1, v₀ = √7 (the seed's numbers) the ball leaves at θ = 120°, y = 1 above the centre. It
then flies on a parabola and strikes the ring where that parabola meets the circle — a quartic in the time
of flight, solved here with numpy's polynomial roots, independently of the simulation.

The path of the sphere's centre is a circle of radius R; the ring (the wall) has radius R + r.

Run: python examples/ball_in_ring.py [OUTDIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from _common import report

from pem_physics.engine.contact.particles import Ball, simulate_particles
from pem_physics.engine.contact.walls import Cylinder


def predicted(R: float, g: float, v0: float) -> dict:
    """Lift-off point and velocity, and the strike (time after lift-off, point) — closed forms and a quartic."""
    cos_t = (2 * g * R - v0**2) / (3 * g * R)           # θ from the bottom
    th = np.arccos(cos_t)
    x0 = np.array([R * np.sin(th), -R * cos_t])          # counter-clockwise from the bottom (0, −R)
    speed = np.sqrt(v0**2 - 2 * g * (R + x0[1]))
    v = speed * np.array([np.cos(th), np.sin(th)])       # tangent, direction of travel
    # |x0 + v t − ½ g t² ŷ|² = R²: (g²/4) t⁴ − g v_y t³ + (|v|² − g y0) t² + 2 (x0·v) t + |x0|² − R² = 0
    coeffs = [g * g / 4, -g * v[1], v @ v - g * x0[1], 2 * x0 @ v, x0 @ x0 - R * R]
    roots = np.roots(coeffs)
    t_fly = min(r.real for r in roots if abs(r.imag) < 1e-9 and r.real > 1e-9)
    hit = x0 + v * t_fly - np.array([0.0, 0.5 * g * t_fly**2])
    return {"theta_deg": np.degrees(th), "lift_off": x0, "speed": speed, "flight_s": t_fly, "strike": hit}


#: The seed's numbers: ring radius (of the centre's path) m, gravity m/s², start speed m/s; ball radius m.
RING_R, G, V0, BALL_R = 2.0, 1.0, np.sqrt(7.0), 0.1


def main(t_end=None, outdir=None) -> dict:
    R, g, v0, r = RING_R, G, V0, BALL_R
    t_end = 20 * np.sqrt(R / g) if t_end is None else t_end
    drum = Cylinder([0, 0, 0], [0, 0, 1], R + r, inside=True, name="ring")
    ball = Ball("ball", 1.0, r, [0.0, -R, 0.0], [v0, 0.0, 0.0])
    run = simulate_particles([ball], [drum], t_end=t_end, gravity=(0, -g, 0),
                             dt=2e-3 * np.sqrt(R / g), restitution=1.0)
    lift = run.of("lift-off")[0]
    strike = next(e for e in run.of("impact") if e.t > lift.t)
    at = {e.kind: run.x[int(np.flatnonzero(run.t == e.t)[-1]), 0] for e in (lift, strike)}
    p = predicted(R, g, v0)
    result = {
        "lift_off_at_m": at["lift-off"][:2], "lift_off_predicted_m": p["lift_off"],
        "lift_off_angle_deg": p["theta_deg"],
        "lift_off_error_m": float(np.linalg.norm(at["lift-off"][:2] - p["lift_off"])),
        "flight_s": strike.t - lift.t, "flight_predicted_s": p["flight_s"],
        "strike_at_m": at["impact"][:2], "strike_predicted_m": p["strike"],
        "strike_error_m": float(np.linalg.norm(at["impact"][:2] - p["strike"])),
        "energy_drift_relative": float(np.ptp(run.energy()) / abs(run.energy()[0])),
        "events": [(e.kind, e.t) for e in run.events[:6]],
        "claim": "the ball leaves the ring at y = 1 above the centre (θ = 120°) and strikes it where its parabola "
                 "meets the circle",
    }
    result["claim_holds"] = bool(abs(at["lift-off"][1] - 1.0) < 1e-8 and result["lift_off_error_m"] < 1e-8
                                 and abs(result["flight_s"] - p["flight_s"]) < 1e-8
                                 and result["strike_error_m"] < 1e-8)
    if outdir is not None:
        _plot(run, p, R, r, Path(outdir))
    return result


def _plot(run, p, R, r, outdir: Path) -> None:
    from pem_physics.analysis.figures import figure, save

    outdir.mkdir(parents=True, exist_ok=True)
    fig = figure(6.0, 6.0)
    ax = fig.add_subplot(1, 1, 1)
    a = np.linspace(0, 2 * np.pi, 400)
    ax.plot((R + r) * np.cos(a), (R + r) * np.sin(a), "k-", lw=2, label="ring")
    ax.plot(run.x[:, 0, 0], run.x[:, 0, 1], "-", lw=1, label="centre of the ball")
    ax.plot(*p["lift_off"], "o", label="lift-off (predicted)")
    ax.plot(*p["strike"], "s", label="strike (predicted)")
    ax.set_aspect("equal")
    ax.legend(loc="lower right", fontsize=8)
    save(fig, outdir / "ball_in_ring.png")


if __name__ == "__main__":
    report(main(outdir=sys.argv[1] if len(sys.argv) > 1 else "out/ball_in_ring"))
