"""What building the kernels costs: the whole build made ahead of time (``pem build-engine``, ``pip install .``, the
extension's zip), cold (numba's cache empty) and warm (numba's cache full, the module not yet built), the reuse of
a build the machine already has, and each kernel family alone, cold — whole processes, as a user waits for them.

    python bench/bench_build.py [--families scenes,gas] [--json PATH]

Each measurement is a fresh process with its own empty folders (``NUMBA_CACHE_DIR``, ``PEM_AOT_STORE``), so no
run sees another's cache. The peer is the project's own earlier figure, stated in docs/benchmarks.md beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_WHOLE = ("import sys; from pem_physics.engine.backends import prebuild; "
          "prebuild.build(sys.argv[1], log=lambda *a: None)")
_FAMILY = ("import sys; from pem_physics.engine.backends import prebuild; "
           "prebuild.build_part(sys.argv[2], sys.argv[1])")


def timed(code: str, *args: str, cache: Path, store: Path, jobs: str = "") -> float:
    """Wall seconds of ``python -c code args`` with its own numba cache and build store; ``jobs``: the parts compiled
    side by side (``PEM_BUILD_JOBS``; "": as many as there are CPUs)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PEM_AOT_STORE=str(store), PYTHONPATH=str(ROOT),
               PEM_BUILD_JOBS=jobs)
    env.pop("PEM_AOT_DIR", None)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *args], env=env, check=True, cwd=ROOT)
    return time.perf_counter() - t0


def main(argv=None) -> dict:
    if str(ROOT) not in sys.path:  # run as a script (python bench/bench_build.py): the checkout's package
        sys.path.insert(0, str(ROOT))
    from pem_physics.engine.backends import prebuild

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default=",".join(prebuild.FAMILIES), help="the families measured alone")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args(argv)
    out = {"families": {}}
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        tmp = Path(tmp)
        cache, store, where = tmp / "cache", tmp / "store", tmp / "where"
        out["whole_cold_s"] = timed(_WHOLE, str(where), cache=cache, store=store)
        out["reuse_s"] = timed(_WHOLE, str(tmp / "where2"), cache=cache, store=store)
        out["whole_warm_s"] = timed(_WHOLE, str(tmp / "where3"), cache=cache, store=tmp / "store2")
        out["jobs"] = prebuild.jobs()
        # the peer: the same build one part after another in one process (as every build was before the parts)
        out["whole_one_job_s"] = timed(_WHOLE, str(tmp / "where4"), cache=tmp / "cache1", store=tmp / "store1",
                                       jobs="1")
        for name in args.families.split(","):
            f = tmp / name
            out["families"][name] = timed(_FAMILY, str(f / "store"), name, cache=f / "cache", store=f / "store")
            print(f"build: {name} alone, cold {out['families'][name]:.1f} s", file=sys.stderr)
    print(f"build: whole cold {out['whole_cold_s']:.1f} s ({out['jobs']} parts at once; one at a time "
          f"{out['whole_one_job_s']:.1f} s), warm {out['whole_warm_s']:.1f} s, reused "
          f"{out['reuse_s']:.2f} s", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return out


if __name__ == "__main__":
    main()
