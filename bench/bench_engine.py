"""The compiled engine side by side with the original PEM engine, and against our numpy path.

Measures, in one run on this machine:
- compile time: the first run in a process with an empty numba cache folder, per method family,
  and the warm start-up (a run that loads the cached kernels) — the whole process each time;
- PEM's three sample inputs (``../shared/pem-samples``; 1e5 RK4 steps, 1001 records): the whole
  process ``python -m pem_physics run SAMPLE.udf -o DIR`` against the original engine
  ``../shared/peers/pem/pem -I SAMPLE.udf`` on the same input, best of ``--repeat``; ratio =
  peer time / our time (≥ 1: we are as fast) — ours twice: on numba's JIT kernels loaded from the
  cache, and on the kernels built ahead of time (``pem build-engine``, built once here, its time
  reported). Rows whose peer or sample is absent are skipped, saying so;
- the 15-pendulum wave, 60 s at dt = 1e-3 (6e4 pem-rk4 steps of 15 bodies, records every 0.1 s),
  written as a PEM input file by our UDF writer: the whole process against the original engine on
  that same file;
- one scene, the damped three-magnet pendulum: steps/s of every method, compiled and numpy;
- an ensemble of the same pendulum with the default method: pendulum-steps/s.

    python bench/bench_engine.py [--repeat N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import finish  # noqa: E402

from pem_physics import Ensemble, examples, simulate  # noqa: E402
from pem_physics.engine.backends import compiled, prebuild, scalar  # noqa: E402

SHARED = ROOT.parent / "shared"
PEER = SHARED / "peers" / "pem" / "pem"
SAMPLES = SHARED / "pem-samples"
SAMPLE_NAMES = ("ellipsoid", "pendulum", "dipole")


def timed(cmd, cwd=None, env=None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def compile_times() -> dict:
    """Seconds for a first run with an empty cache and for a warm one, per method, whole process."""
    out = {}
    # Python's own bytecode first: our runs cache it in a folder of their own (our_env), so without this the
    # first run would also compile numba's, llvmlite's and numpy's source (~5 s), which pip did at install.
    # One throwaway compile (its kernel cache discarded) imports every module a compile needs.
    with tempfile.TemporaryDirectory() as cache:
        timed([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
               "from pem_physics import examples, simulate\n"
               "simulate(examples.build('three-magnet'), t_end=0.01)\n"], env=our_env(NUMBA_CACHE_DIR=cache))
    with tempfile.TemporaryDirectory() as cache:
        env = our_env(NUMBA_CACHE_DIR=cache)
        for label, method, E in (("splitting4", "splitting4", 0), ("pem-rk4", "pem-rk4", 0),
                                 ("splitting4, ensemble (SIMD lanes)", "splitting4", 64),
                                 ("pem-rk4, ensemble (SIMD lanes)", "pem-rk4", 64)):
            ens = f", ensemble=Ensemble(angular_velocity=np.zeros(({E}, 1, 3)))" if E else ""
            code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\nimport numpy as np\n"
                    "from pem_physics import Ensemble, examples, simulate\n"
                    f"simulate(examples.build('three-magnet'), method={method!r}, t_end=0.01{ens})\n")
            cold = timed([sys.executable, "-c", code], env=env)
            warm = min(timed([sys.executable, "-c", code], env=env) for _ in range(3))
            out[label] = {"first_run_s": cold, "warm_run_s": warm}
            print(f"{label:34s} first run (compiles) {cold:6.2f} s   warm start-up and run {warm:5.2f} s")
    # a scene with contacts compiles the splitting kernel twice (with its contact geometry, and without for the
    # contact driver's trial steps): its own empty cache
    with tempfile.TemporaryDirectory() as cache:
        env = our_env(NUMBA_CACHE_DIR=cache)
        label = "splitting4, Newton's cradle (contacts)"
        code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\nfrom pem_physics import examples, simulate\n"
                "simulate(examples.build('newtons-cradle'), method='splitting4', t_end=0.01)\n")
        cold = timed([sys.executable, "-c", code], env=env)
        warm = min(timed([sys.executable, "-c", code], env=env) for _ in range(3))
        out[label] = {"first_run_s": cold, "warm_run_s": warm}
        print(f"{label:34s} first run (compiles) {cold:6.2f} s   warm start-up and run {warm:5.2f} s")
    return out


#: Bytecode of our whole-process runs (see :func:`our_env`), removed at exit.
_PYC = tempfile.TemporaryDirectory(prefix="pem-bench-pyc-")


def our_env(**extra) -> dict:
    """The environment of our whole-process runs: the package runs as installed, its bytecode cached
    (pip writes the .pyc files at install). PYTHONDONTWRITEBYTECODE=1 in the caller's environment would
    make every run compile each of our modules from source again (~0.1 s a run); the cache goes to a
    folder of this benchmark's own (PYTHONPYCACHEPREFIX), not into the checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=_PYC.name, **extra)
    return env


def side_by_side(peer_cmd, cmd, cwd, repeat: int, aot_dir, *more) -> tuple:
    """Best whole-process times of the peer, of ``cmd`` on the JIT kernels (cache warm), on the ahead-of-time build
    and in each further environment of ``more`` — interleaved, one of each per round, so that a busy moment hits
    all of them."""
    envs = (our_env(PEM_AOT="0"), our_env(PEM_AOT="1", PEM_AOT_DIR=str(aot_dir))) + more
    for env in envs:  # compiles or loads the kernel cache and writes the bytecode once
        timed(cmd, cwd=cwd, env=env)
    runs = [(timed(peer_cmd, cwd=cwd),) + tuple(timed(cmd, cwd=cwd, env=env) for env in envs) for _ in range(repeat)]
    return tuple(min(r[i] for r in runs) for i in range(len(envs) + 1))


def build_aot(where) -> float:
    t0 = time.perf_counter()
    prebuild.build(where, log=lambda *_: None)
    took = time.perf_counter() - t0
    print(f"ahead-of-time build (pem build-engine): {took:.1f} s")
    return took


def pem_samples(repeat: int, aot_dir) -> list:
    rows = []
    if not PEER.exists() or not SAMPLES.exists():
        print(f"PEM samples: skipped — peer {PEER} or samples {SAMPLES} not found")
        return rows
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shutil.copy(SAMPLES / "pem1_3_def.udf", tmp)
        for name in SAMPLE_NAMES:
            shutil.copy(SAMPLES / f"{name}.udf", tmp)
            peer_cmd = [str(PEER), "-I", f"{name}.udf", "-O", f"{name}_peer.udf"]
            try:
                timed(peer_cmd, cwd=tmp)
            except (OSError, subprocess.CalledProcessError) as err:
                print(f"{name}: peer could not run ({err}); row skipped")
                continue
            cmd = [sys.executable, "-m", "pem_physics", "run", f"{name}.udf", "-o", f"out_{name}", "-q"]
            peer, jit, ahead = side_by_side(peer_cmd, cmd, tmp, repeat, aot_dir)
            rows.append({"sample": name, "peer_s": peer, "ours_s": jit, "ratio": peer / jit,
                         "ours_aot_s": ahead, "ratio_aot": peer / ahead})
            print(f"PEM sample {name:10s} peer {peer:5.2f} s   ours {jit:5.2f} s (JIT), {ahead:5.2f} s "
                  f"(ahead of time)   ratio {peer / jit:5.2f} / {peer / ahead:5.2f}")
    return rows


#: One run of a sample, timed phase by phase in its own process (bench_engine.sample_phases).
_PHASES = """
import json, sys, time
t0 = time.perf_counter()
from pem_physics.cli import main                      # the command line and the library (numpy included)
from pem_physics.engine.simulate import simulate
from pem_physics.io.loading import load_scene
from pem_physics.io.output import write_outputs
t1 = time.perf_counter()
scene = load_scene(sys.argv[1])
t2 = time.perf_counter()
traj = simulate(scene)
t3 = time.perf_counter()
write_outputs(traj, sys.argv[2])
t4 = time.perf_counter()
print(json.dumps({"imports_s": t1 - t0, "read_input_s": t2 - t1, "simulate_s": t3 - t2,
                  "kernel_load_s": traj.info.get("compile_or_load_s", 0.0), "steps_s": traj.wall_time,
                  "outputs_s": t4 - t3, "kernels": traj.info.get("kernels")}))
"""


def sample_phases(name: str, aot_dir, repeat: int = 5) -> dict | None:
    """Where the milliseconds of one PEM sample's run go (best of ``repeat`` per phase, each in a fresh process,
    on the kernels built ahead of time): the interpreter's start (``python -c pass``), imports, reading the UDF
    file, the run (loading the kernels, the steps, the records), writing the outputs."""
    if not SAMPLES.exists():
        return None
    env = our_env(PEM_AOT="1", PEM_AOT_DIR=str(aot_dir))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shutil.copy(SAMPLES / "pem1_3_def.udf", tmp)
        shutil.copy(SAMPLES / f"{name}.udf", tmp)
        import json

        runs = []
        for _ in range(repeat):
            out = subprocess.run([sys.executable, "-c", _PHASES, f"{name}.udf", "out"], cwd=tmp, env=env,
                                 check=True, capture_output=True, text=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        start = min(timed([sys.executable, "-c", "pass"], env=env) for _ in range(repeat))
    best = {k: min(r[k] for r in runs) for k in runs[0] if k != "kernels"}
    best["interpreter_start_s"] = start
    best["kernels"] = runs[0]["kernels"]
    print(f"{name}: where the time goes (ms): " + ", ".join(f"{k[:-2]} {1e3 * v:.1f}" for k, v in best.items()
                                                             if k.endswith("_s")))
    return best


def pendulum_wave(repeat: int, aot_dir) -> dict | None:
    if not PEER.exists():
        print(f"pendulum wave: skipped — peer {PEER} not found")
        return None
    from pem_physics.io.udf_write import write_udf

    scene = examples.pendulum_wave(dt=1e-3, t_end=60.0)
    scene = type(scene)(**{**scene.__dict__, "settings": type(scene.settings)(
        **{**scene.settings.__dict__, "method": "pem-rk4", "record_interval": 0.1})})
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_udf(scene, tmp / "wave.udf", method="pem-rk4")
        peer_cmd = [str(PEER), "-I", "wave.udf", "-O", "wave_peer.udf"]
        try:
            timed(peer_cmd, cwd=tmp)
        except (OSError, subprocess.CalledProcessError) as err:
            print(f"pendulum wave: peer could not run ({err}); row skipped")
            return None
        cmd = [sys.executable, "-m", "pem_physics", "run", "wave.udf", "-o", "out", "-q"]
        # its pendulums are independent: stepped in threads (engine/backends/groups.py), and once more in one
        # (PEM_THREADS=1)
        one = our_env(PEM_AOT="1", PEM_AOT_DIR=str(aot_dir), PEM_THREADS="1")
        peer, jit, ahead, single = side_by_side(peer_cmd, cmd, tmp, repeat, aot_dir, one)
        timed(cmd, cwd=tmp, env=our_env(PEM_AOT="1", PEM_AOT_DIR=str(aot_dir)))  # how many threads it took
        threads = json.loads((tmp / "out" / "summary.json").read_text())["threads"]
    print(f"pendulum wave (15 bodies, 6e4 steps)  peer {peer:5.2f} s   ours {jit:5.2f} s (JIT), {ahead:5.2f} s "
          f"(ahead of time, {threads} threads), {single:5.2f} s (one thread)   ratio {peer / jit:5.2f} / "
          f"{peer / ahead:5.2f} / {peer / single:5.2f}")
    return {"peer_s": peer, "ours_s": jit, "ratio": peer / jit, "ours_aot_s": ahead, "ratio_aot": peer / ahead,
            "threads": threads, "ours_aot_one_thread_s": single, "ratio_aot_one_thread": peer / single}


def single_scene() -> list:
    """Steps/s of one scene per method: compiled, the plain-Python path (one body without numba, splitting
    only) and the numpy reference."""
    scene = examples.build("three-magnet")
    rows = []
    for method in compiled.METHODS:
        engines = ("numba", "python", "numpy") if method.startswith("splitting") else ("numba", "numpy")
        for engine in engines:
            compiled.ENABLED = engine == "numba"
            scalar.FORCE = engine == "python"
            scalar.ENABLED = engine != "numpy"
            try:
                t_end = {"numba": 50.0, "python": 5.0, "numpy": 0.5}[engine]
                simulate(scene, method=method, t_end=0.01)
                t0 = time.perf_counter()
                tr = simulate(scene, method=method, t_end=t_end, record_interval=0.1)
                wall = time.perf_counter() - t0
            finally:
                compiled.ENABLED = scalar.ENABLED = True
                scalar.FORCE = False
            assert tr.info["engine"] == engine
            rows.append({"method": method, "engine": engine, "steps": tr.steps, "steps_per_s": tr.steps / wall})
            print(f"three-magnet {method:11s} {engine:6s} {tr.steps / wall:10.3g} steps/s")
    return rows


def ensemble(members: int, steps: int, aot_dir) -> dict:
    """An ensemble in SIMD lanes (engine/backends/lanes.py), on numba's JIT kernels and on the build's (the variant for
    this CPU's widest vector unit, aot.VARIANTS), in one run: pendulum-steps/s of each, best of three."""
    from pem_physics import aot
    from pem_physics.engine.backends import lanes

    scene = examples.build("three-magnet")
    rng = np.random.default_rng(0)
    w = rng.normal(scale=0.3, size=(members, 1, 3))
    dt = scene.settings.dt
    rates = {}
    for kernels, env in (("jit", {"PEM_AOT": "0"}), ("ahead-of-time", {"PEM_AOT": "1", "PEM_AOT_DIR": str(aot_dir)})):
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            built = lanes.build()
            simulate(scene, t_end=10 * dt, ensemble=Ensemble(angular_velocity=w[:64]))  # compile / load the kernel
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                simulate(scene, t_end=steps * dt, record_interval=steps * dt, ensemble=Ensemble(angular_velocity=w))
                best = min(best, time.perf_counter() - t0)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        rates[kernels] = members * steps / best
        print(f"ensemble of {members}, splitting4, {kernels}: {rates[kernels]:.3g} pendulum-steps/s")
    module = built.paths["lanes"].name.split(".")[0] if built is not None else ""  # the build whose lanes ran
    variant = next((v for v in aot.VARIANTS if module.startswith(f"pem_kernels_lanes_{v}_")),
                   "any x86-64" if module else "none: the JIT")
    return {"members": members, "steps": steps, "pendulum_steps_per_s": rates["jit"],
            "aot_pendulum_steps_per_s": rates["ahead-of-time"], "aot_variant": variant,
            "ratio_aot_to_jit": rates["ahead-of-time"] / rates["jit"]}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=9, help="rounds of the whole-process comparisons (best of): "
                    "a run of a PEM sample is ~0.3 s and moves by ±20 %% on a shared machine")
    ap.add_argument("--members", type=int, default=4096)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if not compiled.available():
        print("numba is not installed: nothing to measure for the compiled engine")
        return {}
    with tempfile.TemporaryDirectory() as aot_dir:
        res = {"compile": compile_times(), "aot_build_s": build_aot(aot_dir),
               "pem_samples": pem_samples(args.rounds, aot_dir),
               "sample_phases": sample_phases("ellipsoid", aot_dir),
               "pendulum_wave": pendulum_wave(args.rounds, aot_dir),
               "single": single_scene(), "ensemble": ensemble(args.members, 2000, aot_dir)}
    return finish(res, start, args.json, indent=2)


if __name__ == "__main__":
    main()
