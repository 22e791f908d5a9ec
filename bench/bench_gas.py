"""Hard-sphere gas: collisions per second of the compiled event-driven engine vs the C peer EDMD.

N = 4000 spheres at packing fraction 0.25 in a periodic cube, FCC start, Maxwell–Boltzmann velocities
at T = 1, run t = 0…100 (units σ = m = k_B T = 1), as the peer `../shared/peers/edmd` (Smallenburg's
`Single` variant) does with `initialconfig = 1` and `usethermostat = 0`. The peer is copied to a
temporary folder, switched to those settings with the sed of peers/README.md, built with `make`
and run in the same invocation; its collision count, pressure and run time are parsed from its
output. A missing peer or C compiler skips that row, saying so. Both speeds are wall-clock
collisions per second of the run proper (ours without the one-off numba compile, which a warm-up
run pays; the peer's including its own set-up, which is ~1 % of its run).

Ours and the peer run alternately ``--repeat`` times each (default 3) and the median run of each
is reported with the run-by-run ratios: the machine may be shared, and alternating exposes both to
the same load.

A scaling series follows (``--scaling``, on by default; ``--no-scaling`` skips it): N = 864, 4e3,
3.2e4, 2.56e5, 1.000188e6 (4k³, as the peer's FCC start needs; the peer runs each too) at the same
packing fraction, FCC start, each run for a time t that gives ~1e6
collisions (a few seconds), printing collisions per second of the event loop (the build of cells
and the first events, O(N), timed apart) and the engine's bytes per particle. An event costs
O(log N) (heap sifts) plus O(1) (neighbour cells), so collisions per second should fall slowly
(near N log N in total); in practice the fall comes from the caches: the particles' records
(64 bytes each) outgrow L2 near N = 8,000 and L3 near N = 500,000, and every event reads a few
dozen of them.

Whole processes (``--whole``, on by default), as a user runs each: ``python -m pem_physics gas --n N --eta 0.25
--t-end T --start lattice --record-interval T -o DIR -q`` (start-up, the FCC start and its overlap check, the run,
the pressure and speed statistics, gas.npz/gas.csv/summary.json and their manifest) against the peer's whole run
(its binary built beforehand), alternating, at N = 4000 (t = 100) and N = 256,000 (~1.5e6 collisions); ours on
the kernels built ahead of time (as after ``pip install``; built first into a temporary folder when this Python
has no build), in a fresh process each time.

    python bench/bench_gas.py [--t-end 100] [--n 4000] [--eta 0.25] [--repeat 3] [--no-scaling] [--no-whole]
                              [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from common import write_json  # noqa: E402

from pem_physics.gas import edmd, measure  # noqa: E402
from pem_physics.gas.state import make_gas  # noqa: E402

PEER = Path(__file__).resolve().parents[2] / "shared" / "peers" / "edmd"
SED = ("s/^int initialconfig = 0;/int initialconfig = 1;/; "
       "s/^const int usethermostat = 1;/const int usethermostat = 0;/")


def run_ours(n: int, eta: float, t_end: float) -> dict:
    edmd.run(make_gas(64, eta, 3, start="lattice", seed=0), 1.0)  # compile (or load the cache) outside the timing
    state = make_gas(n, eta, 3, start="lattice", seed=1)
    t0 = time.perf_counter()
    run = edmd.run(state, t_end, blocks=20)
    wall = time.perf_counter() - t0
    p = measure.pressure(run, skip_blocks=1)
    return {"engine": run.info["engine"], "collisions": run.n_collisions, "wall_s": wall,
            "collisions_per_s": run.n_collisions / wall, "pressure": p.reduced, "pressure_err": p.reduced_err,
            "cell_crossings": run.info.get("cell_crossings"), "invalidated": run.info.get("invalidated")}


def run_peer(n: int, eta: float, t_end: float) -> dict | str:
    """The peer's numbers, or a sentence saying why it could not run."""
    if not (PEER / "mdSingle.c").is_file():
        return f"peer not found at {PEER}"
    if shutil.which("make") is None or (shutil.which("gcc") is None and shutil.which("cc") is None):
        return "no C compiler (gcc/cc) or make on PATH"
    with tempfile.TemporaryDirectory() as tmp:
        for f in PEER.iterdir():
            if f.is_file():
                shutil.copy(f, tmp)
        src = Path(tmp) / "mdSingle.c"
        subprocess.run(["sed", "-i", SED, str(src)], check=True)
        text = src.read_text()
        text = re.sub(r"^double maxtime = [^;]*;", f"double maxtime = {t_end!r};", text, flags=re.M)
        text = re.sub(r"^double packfrac = [^;]*;", f"double packfrac = {eta!r};", text, flags=re.M)
        text = re.sub(r"^int N = [^;]*;", f"int N = {n};", text, flags=re.M)
        # It prints its running collision count every writeinterval (1 by default: none for t < 1, and up to a
        # unit short at the end); ten reports, the last just before t_end, count the whole run.
        text = re.sub(r"^double writeinterval = [^;]*;", f"double writeinterval = {t_end / 10 * (1 - 1e-9)!r};",
                      text, flags=re.M)
        src.write_text(text)
        build = subprocess.run(["make"], cwd=tmp, capture_output=True, text=True)
        if build.returncode != 0:
            return f"peer build failed: {build.stderr.strip()[-300:]}"
        t0 = time.perf_counter()
        out = subprocess.run(["./md"], cwd=tmp, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    if out.returncode != 0:
        return f"peer run failed (exit {out.returncode}): {out.stdout.strip()[-300:]}"
    coll = re.findall(r"Collisions:\s*(\d+)", out.stdout)
    press = re.search(r"Measured pressure\s*:\s*\S+\s*\+\s*\S+\s*=\s*(\S+)", out.stdout)
    if not coll or not press:
        return "could not parse the peer's output"
    return {"collisions": int(coll[-1]), "wall_s": wall, "collisions_per_s": int(coll[-1]) / wall,
            "pressure": float(press.group(1))}


def run_ours_whole(n: int, eta: float, t_end: float, env: dict) -> dict:
    """Our whole process on the command line (see the module docstring); seconds and the summary's numbers."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pem_physics", "gas", "--n", str(n), "--eta", repr(eta), "--t-end", repr(t_end),
               "--start", "lattice", "--record-interval", repr(t_end), "-o", tmp, "-q"]
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True)
        wall = time.perf_counter() - t0
        summary = json.loads((Path(tmp) / "summary.json").read_text())
    return {"wall_s": wall, "collisions": summary["collisions"], "kernels_wall_s": summary["wall_time_s"],
            "pressure": summary["reduced_pressure"]}


def whole_processes(eta: float, repeat: int) -> list[dict]:
    """Rows of whole-process times, ours and the peer's, alternating ``repeat`` times at N = 4000 and 256,000."""
    from pem_physics import aot
    from pem_physics.engine.backends import prebuild

    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as aot_dir, tempfile.TemporaryDirectory() as pyc:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(PYTHONPATH=str(root), PYTHONPYCACHEPREFIX=pyc)
        if aot.load() is None:
            t0 = time.perf_counter()
            prebuild.build(aot_dir, log=lambda *_: None)
            print(f"kernels built ahead of time for this run: {time.perf_counter() - t0:.1f} s")
            env["PEM_AOT_DIR"] = aot_dir
        rate = measure.enskog_collision_rate(eta, 3) / 2
        rows = []
        for n, t_end in ((4000, 100.0), (256_000, 1.5e6 / (rate * 256_000))):
            run_ours_whole(min(n, 4000), eta, 1.0, env)   # bytecode written once, as pip does at install
            mine, peers = [], []
            for _ in range(repeat):
                mine.append(run_ours_whole(n, eta, t_end, env))
                peers.append(run_peer(n, eta, t_end))
            ours = min(mine, key=lambda r: r["wall_s"])
            row = {"n": n, "t_end": t_end, "ours": ours}
            ok = [p for p in peers if isinstance(p, dict)]
            if ok:
                peer = min(ok, key=lambda r: r["wall_s"])
                row.update(peer=peer, ratio=peer["wall_s"] / ours["wall_s"])
                print(f"whole process N = {n}, t = {t_end:.4g}: ours {ours['wall_s']:.2f} s ({ours['collisions']} "
                      f"collisions), peer {peer['wall_s']:.2f} s ({peer['collisions']}); ratio peer ÷ ours "
                      f"{row['ratio']:.2f} (goal ≥ 1)")
            else:
                row["peer"] = {"skipped": peers[0]}
                print(f"whole process N = {n}: ours {ours['wall_s']:.2f} s; peer skipped: {peers[0]}")
            rows.append(row)
    return rows


def median_run(runs: list[dict]) -> dict:
    """The run with the median collisions per second (the lower middle one of an even count)."""
    return sorted(runs, key=lambda r: r["collisions_per_s"])[(len(runs) - 1) // 2]


#: N = 4k³ (an FCC lattice of k³ cells: the peer's start needs it), from ~10³ to ~10⁶
SCALING_N = (864, 4_000, 32_000, 256_000, 1_000_188)


def engine_bytes(eng) -> int:
    """Bytes of the engine's arrays (positions, velocities, cells, events, heap, …)."""
    return sum(v.nbytes for v in vars(eng).values() if isinstance(v, np.ndarray))


def run_scaling(eta: float, collisions: float = 1e6, with_peer: bool = True) -> list[dict]:
    """One row per N of :data:`SCALING_N`: collisions/s of the event loop, build time, bytes per particle, and the
    peer's collisions/s on the same N and time (its whole run: set-up included, ~1–10 % of it)."""
    rows = []
    edmd.run(make_gas(64, eta, 3, start="lattice", seed=0), 1.0)  # compile (or load the cache) outside the timing
    rate = measure.enskog_collision_rate(eta, 3) / 2  # collisions per particle-time / 2 = per-pair count rate
    for n in SCALING_N:
        state = make_gas(n, eta, 3, start="lattice", seed=1)
        t_run = collisions / (rate * n)
        t0 = time.perf_counter()
        eng = edmd.CompiledEngine(state)
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        while not eng.advance(t_run, 50_000_000):
            pass
        wall = time.perf_counter() - t0
        row = {"n": n, "t": t_run, "collisions": eng.n_collisions, "wall_s": wall, "build_s": build,
               "collisions_per_s": eng.n_collisions / wall, "bytes_per_particle": engine_bytes(eng) / n,
               "ns_per_collision_per_log2n": float(wall / eng.n_collisions / np.log2(n) * 1e9)}
        del eng, state
        # the peer on the same N and time: its fall with N is what the best C code does on this machine
        peer = run_peer(n, eta, t_run) if with_peer else "not asked"
        if isinstance(peer, dict):
            row.update(peer_collisions_per_s=peer["collisions_per_s"],
                       ratio=row["collisions_per_s"] / peer["collisions_per_s"])
        else:
            row["peer_skipped"] = peer
        rows.append(row)
    return rows


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--eta", type=float, default=0.25)
    ap.add_argument("--t-end", type=float, default=100.0)
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each, ours and the peer's alternating; the median run of each counts")
    ap.add_argument("--json", default=None)
    ap.add_argument("--scaling", action=argparse.BooleanOptionalAction, default=True,
                    help="also run the scaling series N = 4e3 … 1e6 (default on)")
    ap.add_argument("--whole", action=argparse.BooleanOptionalAction, default=True,
                    help="also time whole processes, ours and the peer's, at N = 4000 and 256,000 (default on)")
    a = ap.parse_args(argv)
    cs = measure.reduced_pressure_eos(a.eta, 3)
    # alternating runs, so that both see the same load on a shared machine; medians, not the fastest
    mine, peers = [], []
    for _ in range(a.repeat):
        mine.append(run_ours(a.n, a.eta, a.t_end))
        peers.append(run_peer(a.n, a.eta, a.t_end))
    ours = median_run(mine)
    peer_ok = [p for p in peers if isinstance(p, dict)]
    peer = median_run(peer_ok) if peer_ok else peers[0]
    print(f"hard spheres: N = {a.n}, packing fraction {a.eta}, periodic cube, t = 0…{a.t_end:g}; "
          f"Carnahan–Starling βPσ³ = {cs:.4f}")
    print(f"{'':10s} {'collisions':>11s} {'wall s':>7s} {'coll/s':>10s} {'βPσ³':>8s}")
    print(f"{'ours':10s} {ours['collisions']:11d} {ours['wall_s']:7.2f} {ours['collisions_per_s']:10.3g} "
          f"{ours['pressure']:8.4f} ± {ours['pressure_err']:.4f}  ({ours['engine']})")
    result = {"n": a.n, "eta": a.eta, "t_end": a.t_end, "carnahan_starling": cs, "ours": ours}
    if isinstance(peer, dict):
        ratio = ours["collisions_per_s"] / peer["collisions_per_s"]
        pairs = [o["collisions_per_s"] / p["collisions_per_s"] for o, p in zip(mine, peers) if isinstance(p, dict)]
        print(f"{'peer edmd':10s} {peer['collisions']:11d} {peer['wall_s']:7.2f} {peer['collisions_per_s']:10.3g} "
              f"{peer['pressure']:8.4f}")
        print(f"speed ratio ours / peer = {ratio:.2f} (goal ≥ 1); run by run: "
              + ", ".join(f"{r:.2f}" for r in pairs))
        result.update(peer=peer, ratio=ratio, ratios=pairs,
                      ours_runs=[r["collisions_per_s"] for r in mine],
                      peer_runs=[r["collisions_per_s"] for r in peer_ok])
    else:
        print(f"{'peer edmd':10s} skipped: {peer}")
        result["peer"] = {"skipped": peer}
    if a.scaling:
        rows = run_scaling(a.eta)
        print(f"\nscaling, packing fraction {a.eta}, ~1e6 collisions a row (event loop only; build timed apart)")
        print(f"{'N':>9s} {'t':>7s} {'collisions':>11s} {'wall s':>7s} {'build s':>7s} {'coll/s':>10s} "
              f"{'B/particle':>10s} {'ns/coll/log2N':>13s} {'peer coll/s':>11s} {'ratio':>6s}")
        for r in rows:
            peer = (f"{r['peer_collisions_per_s']:11.3g} {r['ratio']:6.2f}" if "ratio" in r
                    else f"  (peer: {r['peer_skipped']})")
            print(f"{r['n']:9d} {r['t']:7.3g} {r['collisions']:11d} {r['wall_s']:7.2f} {r['build_s']:7.2f} "
                  f"{r['collisions_per_s']:10.3g} {r['bytes_per_particle']:10.0f} "
                  f"{r['ns_per_collision_per_log2n']:13.1f} {peer}")
        result["scaling"] = rows
    if a.whole:
        result["whole_process"] = whole_processes(a.eta, a.repeat)
    if a.json:
        write_json(a.json, result, indent=1)
    return result


if __name__ == "__main__":
    main()
