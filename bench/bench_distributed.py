"""A basin map on Dask distributed against the in-process path with the same threads.

Measures, in one run on this machine (needs requirements/distributed.txt):
- a ``--grid``² basin map of the damped three-magnet pendulum (default 512², t = ``--t-end``),
  in process (numba's threads over every core) and on a LocalCluster of ``--workers`` processes
  (the cores shared out among them): wall time of each, the overhead (distributed ÷ in-process − 1,
  goal ≤ 10 %), and that both maps are identical;
- the scheduling cost per chunk: many chunks of one member each (t = one step), per chunk on the
  cluster minus per chunk in process.

    python bench/bench_distributed.py [--grid 512] [--t-end 0.5] [--workers 2] [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import finish  # noqa: E402

from pem_physics import examples  # noqa: E402
from pem_physics.analysis import basin, chunks  # noqa: E402


def timed_map(scene, grid, chunk, client=None):
    t0 = time.perf_counter()
    res = basin.basin_map(scene, grid=grid, chunk=chunk, client=client)
    return res, time.perf_counter() - t0


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grid", type=int, default=512)
    ap.add_argument("--t-end", type=float, default=0.5)
    ap.add_argument("--chunk", type=int, default=8192)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tiny-chunks", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    try:
        import distributed  # noqa: F401
    except ImportError:
        print("dask.distributed is not installed: nothing to measure (requirements/distributed.txt)")
        return {}
    scene = examples.three_magnet(t_end=args.t_end)
    basin.basin_map(scene, grid=8, chunk=64, t_end=10 * scene.settings.dt)  # compile / load the kernels here
    local, t_local = timed_map(scene, args.grid, args.chunk)
    with chunks.client_for(workers=args.workers) as client:
        basin.basin_map(scene, grid=8, chunk=32, t_end=10 * scene.settings.dt, client=client)  # warm the workers
        dist, t_dist = timed_map(scene, args.grid, args.chunk, client)
        same = bool(np.array_equal(local.final_xy, dist.final_xy) and np.array_equal(local.label, dist.label))
        one = scene.settings.dt
        t0 = time.perf_counter()
        basin.basin_map(scene, grid=1, chunk=1, t_end=one)  # one chunk in process, for the per-call baseline
        per_local = time.perf_counter() - t0
        n = args.tiny_chunks
        side = int(np.ceil(np.sqrt(n)))
        t0 = time.perf_counter()
        basin.basin_map(scene, grid=side, chunk=1, t_end=one, client=client)
        per_dist = (time.perf_counter() - t0) / (side * side)
    members = args.grid ** 2
    steps = int(round(args.t_end / scene.settings.dt))
    overhead = t_dist / t_local - 1
    print(f"{args.grid}² basin map, {steps} steps: in process {t_local:.1f} s "
          f"({members * steps / t_local:.3g} pendulum-steps/s), {args.workers} local workers {t_dist:.1f} s "
          f"→ overhead {100 * overhead:+.1f} % (goal ≤ 10 %); identical maps: {same}")
    print(f"per chunk: {1e3 * per_dist:.1f} ms on the cluster ({side * side} one-member chunks), "
          f"{1e3 * per_local:.1f} ms for one in process")
    res = {"grid": args.grid, "steps": steps, "chunk": args.chunk, "workers": args.workers,
           "in_process_s": t_local, "distributed_s": t_dist, "overhead": overhead, "identical": same,
           "per_chunk_distributed_s": per_dist, "per_chunk_in_process_s": per_local}
    return finish(res, start, args.json, indent=2)


if __name__ == "__main__":
    main()
