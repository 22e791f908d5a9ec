"""Core simulation throughput on the damped three-magnet pendulum.

Measures, in one run on this machine:
- single scene: steps/s of each method (pem_physics.engine.simulate);
- ensemble: member-steps/s for E copies integrated as one vectorised call;
- the peer: a straightforward per-step numpy RK4 prototype of the same
  pendulum (written plainly, one pendulum at a time), measured on the same scene.
Prints each figure and its ratio to the peer.

    python bench/bench_core.py [--steps N] [--ensemble E] [--json PATH]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import write_json  # noqa: E402

from pem_physics.engine.backends import compiled, lanes  # noqa: E402
from pem_physics.engine.simulate import Ensemble, simulate  # noqa: E402
from pem_physics.engine.system import compile_system  # noqa: E402
from pem_physics.examples import three_magnet  # noqa: E402
from pem_physics.model.rotations import axis_angle_matrix  # noqa: E402


def prototype_rk4(scene, steps: int, dt: float) -> float:
    """A plain RK4 on (L, U) for one pendulum over fixed magnets; returns wall seconds."""
    sysm = compile_system(scene.checked())
    M, com = sysm.mass[0], sysm.kin_body.com[0]
    Iinv = sysm.kin_body.inv_inertia[0]
    s_body, m_body = sysm.kin_body.dpos[0], sysm.kin_body.dmom[0]
    pivot, g = sysm.pivot[0], sysm.gravity
    src_r, src_m = sysm.sources(0.0)
    k = sysm.mu0 / (4 * np.pi)
    c = sysm.friction

    def torque(U, L):
        Rg = U.T @ com
        T = M * np.cross(Rg, g)
        s = U.T @ s_body
        p = U.T @ m_body
        r = pivot + s
        B = np.zeros(3)
        F = np.zeros(3)
        for rb, pb in zip(src_r, src_m):
            d = r - rb
            dn = np.linalg.norm(d)
            n = d / dn
            B += k / dn**3 * (3 * np.dot(pb, n) * n - pb)
            F += 3 * k / dn**4 * (np.dot(p, n) * pb + np.dot(pb, n) * p + np.dot(p, pb) * n
                                  - 5 * np.dot(p, n) * np.dot(pb, n) * n)
        w = U.T @ (Iinv @ (U @ L))
        return T + np.cross(s, F) + np.cross(p, B) - c * w, w

    U = sysm.U0[0].copy()
    L = np.zeros(3)
    t0 = time.perf_counter()
    for _ in range(steps):
        T1, w1 = torque(U, L)
        k1L, k1U = T1, np.cross(w1, U)
        T2, w2 = torque(U + 0.5 * dt * k1U, L + 0.5 * dt * k1L)
        k2L, k2U = T2, np.cross(w2, U + 0.5 * dt * k1U)
        T3, w3 = torque(U + 0.5 * dt * k2U, L + 0.5 * dt * k2L)
        k3L, k3U = T3, np.cross(w3, U + 0.5 * dt * k2U)
        T4, w4 = torque(U + dt * k3U, L + dt * k3L)
        k4L, k4U = T4, np.cross(w4, U + dt * k3U)
        L = L + dt / 6 * (k1L + 2 * k2L + 2 * k3L + k4L)
        U = U + dt / 6 * (k1U + 2 * k2U + 2 * k3U + k4U)
    return time.perf_counter() - t0


def best_of(fn, repeats=3):
    return min(fn() for _ in range(repeats))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--ensemble", type=int, default=4096)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    dt = 1e-3
    scene = three_magnet(dt=dt)
    results = {"machine": {"python": sys.version.split()[0], "numpy": np.__version__,
                           "platform": platform.platform(), "processor": platform.processor()}}

    peer = best_of(lambda: prototype_rk4(scene, args.steps, dt))
    peer_rate = args.steps / peer
    results["peer_prototype_rk4_steps_per_s"] = peer_rate
    print(f"peer: straightforward numpy RK4 prototype   {peer_rate:12.0f} steps/s")

    for method in ("splitting4", "splitting2", "pem-rk4"):
        def run(method=method):
            tr = simulate(scene, method=method, t_end=args.steps * dt, record_interval=args.steps * dt)
            results["single_engine"] = tr.info["engine"]
            return tr.wall_time
        rate = args.steps / best_of(run)
        results[f"single_{method}_steps_per_s"] = rate
        print(f"single scene, {method:<11}               {rate:12.0f} steps/s   ratio {rate / peer_rate:6.2f}")

    E = args.ensemble
    results["ensemble_size"] = E
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(E, 3)) * 0.3
    U = np.stack([axis_angle_matrix(v / np.linalg.norm(v), np.linalg.norm(v)).T for v in vecs])[:, None]
    ens_steps = max(20, args.steps // 20)
    # engines: "numpy" (both compiled paths off), "engine" (the compiled engine, one member per thread,
    # engine/backends/compiled.py), "kernel" (the ensemble kernels of engine/backends/lanes.py, members in SIMD lanes)
    variants = [("splitting4", "numpy"), ("pem-rk4", "numpy")]
    if lanes.available():
        variants += [(m, e) for m in ("splitting4", "pem-rk4") for e in ("engine", "kernel")]
    for method, engine in variants:
        # The compiled paths are ~50× faster: give them more steps so fixed costs don't dominate.
        n_steps = ens_steps if engine == "numpy" else args.steps

        def run(method=method, engine=engine, n_steps=n_steps):
            lanes.ENABLED = engine == "kernel"
            compiled.ENABLED = engine != "numpy"
            try:
                tr = simulate(scene, method=method, t_end=n_steps * dt, record_interval=n_steps * dt,
                              ensemble=Ensemble(orientation=U))
            finally:
                lanes.ENABLED = compiled.ENABLED = True
            return tr.wall_time
        if engine != "numpy":
            run()  # compile once, outside the timing
        rate = E * n_steps / best_of(run, 2)
        suffix = {"numpy": "", "engine": "_engine", "kernel": "_lanes"}[engine]
        label = f"{method} ({ {'numpy': 'numpy', 'engine': 'compiled engine', 'kernel': 'SIMD kernel'}[engine]})"
        results[f"ensemble_{method}{suffix}_member_steps_per_s"] = rate
        print(f"ensemble E={E}, {label:<28} {rate:12.0f} member-steps/s   ratio {rate / peer_rate:8.1f}")
    if args.json:
        write_json(args.json, results, indent=2)
    return results


if __name__ == "__main__":
    main()
