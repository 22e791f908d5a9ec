"""Records of a run whose pivot moves against the same run on a fixed pivot (issue 44, item 12).

The peer is the fixed pivot's own records, measured in this run: Kapitza's pendulum (its pivot shaken by a
table) run with a record every step; the records of its states built (``simulate._records``, what a run does after
its steps) for the moving pivot and for the same pendulum on a fixed one. The goal is at most twice the fixed
pivot's time (record by record it was ~150×). Whole ``simulate()`` calls are given beside them: they add the
steps and, for the moving pivot, checking its table (a spline through every sample).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pem_physics import examples, simulate  # noqa: E402
from pem_physics.engine.simulate import _records  # noqa: E402
from pem_physics.engine.system import compile_system  # noqa: E402


def best_of(fn, repeats: int) -> float:
    return min(fn() for _ in range(repeats))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=15000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    dt = 2e-4
    moving = examples.kapitza(t_end=args.records * dt, dt=dt)
    moving.settings = replace(moving.settings, record_interval=dt)
    fixed = moving.checked()
    fixed.bodies = [replace(b, pivot_motion=None) for b in fixed.bodies]
    out = {"records": args.records}
    for name, scene in (("moving", moving), ("fixed", fixed)):
        traj = simulate(scene)                       # compile and warm up outside the timing
        system = compile_system(scene.checked())
        U, L, w = (a[None] for a in (traj.orientation, traj.angular_momentum, traj.omega))

        def records(system=system, U=U, L=L, w=w, t=traj.t):
            t0 = time.perf_counter()
            _records(system, U, L, w, t)
            return time.perf_counter() - t0

        def whole(scene=scene):
            t0 = time.perf_counter()
            assert len(simulate(scene).t) == args.records + 1
            return time.perf_counter() - t0
        out[f"{name}_records_s"] = best_of(records, args.repeat)
        out[f"{name}_simulate_s"] = best_of(whole, args.repeat)
        print(f"{name} pivot: {args.records} records {out[f'{name}_records_s'] * 1e3:.1f} ms "
              f"({out[f'{name}_records_s'] / args.records * 1e6:.2f} µs each); whole simulate() "
              f"{out[f'{name}_simulate_s']:.3f} s")
    out["ratio"] = out["moving_records_s"] / out["fixed_records_s"]
    print(f"records, moving ÷ fixed: {out['ratio']:.2f} (goal ≤ 2)")
    return out


if __name__ == "__main__":
    main()
