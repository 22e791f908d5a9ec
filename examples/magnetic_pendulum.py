"""Magnetic pendulum over three magnets. Without friction the energy is conserved and the bob keeps
moving; with pivot friction it comes to rest over one of the magnets.

Run: python examples/magnetic_pendulum.py [OUTDIR]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import report, save

from pem_physics import examples, simulate


def magnet_xy(scene) -> np.ndarray:
    """(3,2) x, y of the fixed magnets (m)."""
    return np.array([np.asarray(b.position, float)[:2] for b in scene.bodies if b.role == "fixed"])


def main(t_end=None, outdir=None, friction: float = 1e-2, dt: float = 2e-3) -> dict:
    """t_end (s) of both runs; friction: pivot friction c (N·m·s) of the damped run."""
    free = examples.three_magnet(friction=0.0, dt=dt)
    traj = simulate(free, t_end=t_end if t_end is not None else 20.0)
    ke = traj.kinetic_energy[:, 0]
    save(traj, None if outdir is None else f"{outdir}/no_friction",
         sources=[np.asarray(b.position) for b in free.bodies if b.role == "fixed"])

    damped = examples.three_magnet(friction=friction, dt=dt)
    dtraj = simulate(damped, t_end=t_end if t_end is not None else 20.0)
    bob = dtraj.dipole_position[-1, 0, :2]
    mags = magnet_xy(damped)
    dist = np.linalg.norm(mags - bob, axis=1)
    E = dtraj.total_energy
    save(dtraj, None if outdir is None else f"{outdir}/friction",
         sources=[np.asarray(b.position) for b in damped.bodies if b.role == "fixed"])
    result = {
        "no_friction": {"energy_drift_relative": traj.energy_drift(),
                        "energy_start_J": float(traj.total_energy[0]), "energy_end_J": float(traj.total_energy[-1]),
                        "kinetic_energy_late_mean_J": float(ke[len(ke) // 2:].mean()),
                        "kinetic_energy_max_J": float(ke.max())},
        "friction": {"coefficient_N_m_s": friction, "final_bob_xy_m": bob, "nearest_magnet": int(np.argmin(dist)),
                     "distance_to_nearest_magnet_xy_m": float(dist.min()),
                     "final_kinetic_energy_J": float(dtraj.kinetic_energy[-1, 0]),
                     "energy_start_J": float(E[0]), "largest_energy_rise_J": float(np.diff(E).max()),
                     "energy_never_increases": bool(np.all(np.diff(E) <= 1e-9 * np.abs(E).max()))},
        "claim": "no friction: energy conserved, keeps moving; friction: ends at rest over one magnet",
    }
    result["claim_holds"] = bool(traj.energy_drift() < 1e-2 and result["no_friction"]["kinetic_energy_late_mean_J"]
                                 > 0.05 * result["no_friction"]["kinetic_energy_max_J"]
                                 and dist.min() < 0.01 and result["friction"]["energy_never_increases"]
                                 and result["friction"]["final_kinetic_energy_J"] < 1e-2 * float(ke.max()))
    return result


if __name__ == "__main__":
    report(main(outdir=sys.argv[1] if len(sys.argv) > 1 else "out/magnetic_pendulum"))
