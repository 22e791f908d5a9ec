"""Two magnetic marbles released at rest head to tail snap together (free bodies that translate; theory §7).

They meet when the energy integral t = ∫ dr / √(2(U(d₀) − U(r))/μ) says (U = −2kp²/r³, μ = m/2), bounce
with e < 1 until a rebound would last less than a step, and then rest in contact: the impacts took
exactly the magnetic energy U(d₀) − U(2R) released, and the pair's momentum stays zero throughout.

Run: python examples/magnetic_marbles.py [OUTDIR]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import report, save
from scipy.integrate import quad

from pem_physics import examples, simulate
from pem_physics.model.scene import MU0


def meeting_time(d0, R, m, p, k=MU0 / (4 * np.pi)) -> float:
    """Time (s) for two marbles at rest d0 apart to close to 2R: r = d0 − (d0 − 2R)s² lifts the 1/√ singularity."""
    L = d0 - 2 * R

    def U(r):
        return -2 * k * p * p / r**3

    return quad(lambda s: 2 * L * s / np.sqrt(4 * (U(d0) - U(d0 - L * s * s)) / m), 0, 1, epsabs=0, epsrel=1e-13)[0]


def main(t_end=None, outdir=None) -> dict:
    d0, R, m, p = 0.04, 0.005, 0.004, 0.05
    scene = examples.magnetic_marbles(distance=d0, radius=R, mass=m, moment=p)
    traj = simulate(scene, t_end=t_end)
    ev = traj.events
    k = MU0 / (4 * np.pi)
    released = 2 * k * p * p * (1 / (2 * R) ** 3 - 1 / d0**3)  # U(d0) − U(2R), J
    T = meeting_time(d0, R, m, p)
    gap = float(traj.position[-1, 1, 0] - traj.position[-1, 0, 0] - 2 * R)
    rest = [t for t, kind in zip(ev.t, ev.kind) if kind == "rest"]
    result = {
        "first_contact_s": ev.t[0] if len(ev) else None, "meeting_time_energy_integral_s": T,
        "impacts": ev.counts().get("impact", 0), "snapped_at_s": rest[0] if rest else None,
        "final_gap_m": gap,
        "final_relative_speed_m_s": float(np.linalg.norm(traj.velocity[-1, 1] - traj.velocity[-1, 0])),
        "momentum_max_kg_m_s": float(np.abs(traj.total_linear_momentum).max()),
        "energy_taken_by_contacts_J": float(traj.impact_loss[-1]), "magnetic_energy_released_J": released,
        "claim": "they meet at the energy-integral time, bounce, snap together; contacts take U(d0) − U(2R); p = 0",
    }
    result["claim_holds"] = bool(
        len(ev) and abs(ev.t[0] / T - 1) < 1e-9 and rest and abs(gap) < 1e-9 * R
        and result["final_relative_speed_m_s"] < 1e-9 and result["momentum_max_kg_m_s"] < 1e-15
        and abs(result["energy_taken_by_contacts_J"] / released - 1) < 1e-6)
    save(traj, outdir)
    return result


if __name__ == "__main__":
    report(main(outdir=sys.argv[1] if len(sys.argv) > 1 else "out/magnetic_marbles"))
