"""Many interacting compass needles: time per integration step, compiled all-pairs sweep vs numpy.

n×n hinged needles in a periodic box (examples.compass_array), every dipole pair evaluated
(no cutoff). For each size: ms per step of pem-rk4 (four torque evaluations) and splitting4,
with the compiled sweep (pem_physics.engine.pairs.pair_sweep) and, as the peer measured in the same
run, the numpy sweep (memory-bounded blocks). Also ns per pair and evaluation, from which the
size where all pairs stop fitting a per-step budget follows (N² scaling).

    python bench/bench_nbody.py [--sides 16 32 64] [--numpy-max-side 32] [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import write_json  # noqa: E402

from pem_physics import examples
from pem_physics.engine import pairs, torques
from pem_physics.engine.simulate import simulate  # noqa: E402
from pem_physics.engine.system import compile_system  # noqa: E402


def ms_per_step(scene, method: str, steps: int) -> float:
    dt = scene.settings.dt
    simulate(scene, method=method, t_end=dt, record_interval=dt)  # compile / warm caches
    best = np.inf
    for _ in range(2):
        t0 = time.perf_counter()
        simulate(scene, method=method, t_end=steps * dt, record_interval=steps * dt)
        best = min(best, time.perf_counter() - t0)
    return best / steps * 1e3


def sweep_ns_per_pair(scene) -> float:
    """One compiled all-pairs evaluation, ns per (target, source) pair."""
    system = compile_system(scene.checked())
    U = system.U0[None][:, system.owner]
    p = np.einsum("edij,di->edj", U, system.kin_body.dmom)
    r = system.pivot[system.owner] + np.einsum("edij,di->edj", U, system.kin_body.dpos)
    none = np.zeros((0, 3))
    pairs.pair_sweep(r, p, system.owner, none, none, 1e-7, system.box, False)
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        pairs.pair_sweep(r, p, system.owner, none, none, 1e-7, system.box, False)
        best = min(best, time.perf_counter() - t0)
    return best / system.n_dipoles**2 * 1e9


def main(argv=None) -> list:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sides", type=int, nargs="+", default=[16, 32, 64])
    ap.add_argument("--numpy-max-side", type=int, default=32, help="largest size also run on the numpy path")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = []
    for n in args.sides:
        scene = examples.compass_array(n=n)
        N = n * n
        steps = max(3, min(50, 200_000_000 // N**2))
        row = {"needles": N, "pairs": N * N}
        if pairs.available():
            row["ns_per_pair"] = sweep_ns_per_pair(scene)
            for m in ("pem-rk4", "splitting4"):
                row[f"{m}_ms"] = ms_per_step(scene, m, steps)
        if n <= args.numpy_max_side:
            torques.PAIR_SWEEP = False
            try:
                for m in ("pem-rk4", "splitting4"):
                    row[f"{m}_numpy_ms"] = ms_per_step(scene, m, 3)
            finally:
                torques.PAIR_SWEEP = True
        rows.append(row)
        print("  ".join(f"{k} {v:,.3g}" if isinstance(v, float) else f"{k} {v:,}" for k, v in row.items()))
    if args.json:
        write_json(args.json, rows, indent=2)
    return rows


if __name__ == "__main__":
    main()
