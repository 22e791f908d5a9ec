"""Run every benchmark and write docs/benchmarks.md (+ docs/bench/ratios.png).

    .venvs/core/bin/python bench/run_all.py [--quick]

Each figure is measured in this run next to its peer (a plain numpy RK4 prototype, trimesh,
Blender's keyframe_insert loop) and reported as a ratio. The Blender benchmark runs with the
bpy venvs' Pythons when they exist.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402


def nbody_step_ms(n_side: int) -> dict:
    from pem_physics import examples
    from pem_physics.simulate import simulate

    sc = examples.compass_array(n=n_side)
    out = {"needles": n_side * n_side, "pairs": (n_side * n_side) ** 2}
    for m in ("pem-rk4", "splitting4"):
        dt = sc.settings.dt
        simulate(sc, method=m, t_end=dt, record_interval=dt)
        t0 = time.perf_counter()
        simulate(sc, method=m, t_end=3 * dt, record_interval=3 * dt)
        out[f"{m}_ms_per_step"] = (time.perf_counter() - t0) / 3 * 1e3
    return out


def bake_bench(keys: int) -> list:
    rows = []
    for venv in ("bpy50", "bpy42"):
        py = ROOT / ".venvs" / venv / "bin" / "python"
        if not py.exists():
            continue
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
            path = fh.name
        subprocess.run([str(py), str(ROOT / "bench" / "bench_bake.py"), "--keys", str(keys), "--json", path],
                       check=True, capture_output=True, text=True)
        rows.append(json.loads(Path(path).read_text()))
        os.remove(path)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a few minutes)")
    args = ap.parse_args(argv)
    import bench_core
    import bench_inertia

    import pem_physics.fast as fast

    quick = args.quick
    core = bench_core.main(["--steps", "500" if quick else "2000", "--ensemble", "2048" if quick else "8192"])
    mesh = bench_inertia.main(["--max-subdivisions", "7" if quick else "8"])
    nbody = nbody_step_ms(16 if quick else 32)
    bake = bake_bench(1000 if quick else 5000)

    docs = ROOT / "docs"
    (docs / "bench").mkdir(parents=True, exist_ok=True)
    peer = core["peer_prototype_rk4_steps_per_s"]
    labels, ratios = [], []
    for key, label in (("single_splitting4_steps_per_s", "single, splitting4"),
                       ("single_pem-rk4_steps_per_s", "single, pem-rk4"),
                       ("ensemble_splitting4_member_steps_per_s", "ensemble, splitting4 (numpy)"),
                       ("ensemble_pem-rk4_member_steps_per_s", "ensemble, pem-rk4 (numpy)"),
                       ("ensemble_pem-rk4_numba_member_steps_per_s", "ensemble, pem-rk4 (numba)")):
        if key in core:
            labels.append(label)
            ratios.append(core[key] / peer)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.barh(labels, ratios, color="#3a6ea5")
    ax.set_xscale("log")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xlabel("pendulum-steps/s ÷ plain numpy RK4 prototype (same run)")
    fig.tight_layout()
    fig.savefig(docs / "bench" / "ratios.png", dpi=110)
    plt.close(fig)

    m = mesh[-1]
    lines = [
        "# Benchmarks",
        "",
        f"Written by `bench/run_all.py{' --quick' if quick else ''}` on {time.strftime('%Y-%m-%d')}. "
        "Every number below was measured in that run, next to its peer.",
        "",
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}, numba {fast.numba.__version__ if fast.available() else 'not installed'}.",
        "",
        "## Three-magnet pendulum (damped), steps per second",
        "",
        "Peer: a plain numpy RK4 on (L, U) for one pendulum (`bench/bench_core.py`), "
        f"{peer:,.0f} steps/s here.",
        "",
        "| run | steps/s | ratio to peer |",
        "|---|---:|---:|",
    ]
    for key, label in zip(["single_splitting4_steps_per_s", "single_splitting2_steps_per_s",
                           "single_pem-rk4_steps_per_s", "ensemble_splitting4_member_steps_per_s",
                           "ensemble_pem-rk4_member_steps_per_s", "ensemble_pem-rk4_numba_member_steps_per_s"],
                          ["single scene, splitting4 (default)", "single scene, splitting2", "single scene, pem-rk4",
                           "ensemble, splitting4, numpy", "ensemble, pem-rk4, numpy", "ensemble, pem-rk4, numba"]):
        if key in core:
            lines.append(f"| {label} | {core[key]:,.0f} | {core[key] / peer:,.1f} |")
    lines += ["", "![ratios](bench/ratios.png)", "",
              "Goal (issue 5): ≥ 10⁷ pendulum-steps/s with RK4 on 2 cores. **Not reached**: the numba kernel "
              "(one member per thread, PEM's RK4 step for step) gives the figure above.", "",
              "## Mesh mass properties", "",
              "| triangles | pem (checked) s | pem (unchecked) s | trimesh s | ratio (checked / unchecked) |",
              "|---:|---:|---:|---:|---:|"]
    for r in mesh:
        lines.append(f"| {r['triangles']:,} | {r['pem_s']:.4f} | {r['pem_unchecked_s']:.4f} | {r['trimesh_s']:.4f} | "
                     f"{r['speedup_vs_trimesh']:.2f} / {r['speedup_unchecked_vs_trimesh']:.2f} |")
    lines += ["", f"Largest mesh: {m['triangles']:,} triangles in {m['pem_s'] * 1e3:.0f} ms with the closedness "
              f"check. Goal (issue 5): ≥ 10× trimesh — **not reached** (numpy only).", "",
              "## Many interacting needles (all pairs)", "",
              f"{nbody['needles']} hinged compass needles, {nbody['pairs']:,} dipole pairs, periodic box: "
              f"pem-rk4 {nbody['pem-rk4_ms_per_step']:.0f} ms per step, splitting4 "
              f"{nbody['splitting4_ms_per_step']:.0f} ms per step (numpy, pairs in memory-bounded blocks). "
              "Goal (issue 5): ≤ 25 ms for 1024 needles — **not reached**.", "",
              "## Baking keyframes in Blender", "",
              "| Blender | bulk writer keys/s | keyframe_insert loop keys/s | ratio |", "|---|---:|---:|---:|"]
    for r in bake:
        lines.append(f"| {r['blender']} | {r['bulk_keys_per_s']:,.0f} | {r['keyframe_insert_keys_per_s']:,.0f} | "
                     f"{r['ratio']:.0f} |")
    (docs / "benchmarks.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {docs / 'benchmarks.md'}")


if __name__ == "__main__":
    main()
