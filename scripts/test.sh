#!/usr/bin/env bash
# The README's test command: every test, in the environments we support.
#   1. core + tests on numpy 2.x with numba (.venvs/core): the compiled engine against numpy, then its
#      compiled-vs-numpy tests again with numpy's AVX-512 paths off (scripts/without-avx512.sh)
#   2. core + add-on tests under the bpy 5.0.1 wheel, numpy 1.26, numba installed beside Blender
#      (.venvs/bpy50-numba); the long physics runs (marked slow) already ran in step 1 and are not repeated
#   3. the add-on suite under every Blender we support, each in a venv WITHOUT numba (the numpy engine, and
#      the installed extension zip baking on its own bundled numba wheels for that Python):
#      bpy 4.2 LTS (.venvs/bpy42), 4.5 LTS (.venvs/bpy45), 5.2 LTS on Python 3.13 (.venvs/bpy52; our own
#      DeprecationWarnings are errors there, as everywhere), and 5.0's installed-extension test (.venvs/bpy50)
#   4. the benchmarks' own checks with their peers installed (.venvs/bench: MuJoCo, libigl)
#   4b. the chunked basin maps and sweeps on Dask distributed (.venvs/distributed)
#   5. the property tests again with fresh random examples (bounded), and the lint
# Every suite runs from a copy of the checkout (tracked and untracked, not ignored, files) in a
# temporary folder with nothing beside it: the project must carry every file its tests need
# (no ../shared). Each venv is created from requirements/*.txt (pinned) on first use, in .venvs/, with the
# Python its file names (3.11, or 3.13 for Blender 5.2: found on PATH, through pyenv or uv; without one the
# command stops and says how to get it). Extra arguments go to every pytest call (e.g. -x, -k name).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
status=0

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
copy="$work/pem-for-blender"
mkdir -p "$copy"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # files deleted in the work tree but still in the index are left out
  git -C "$root" ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [[ (-e "$f" || -L "$f") && ! -d "$f" ]] && printf '%s\0' "$f"; done \
    | xargs -0 -r cp --parents -t "$copy"
else
  tar -C "$root" --exclude=.venvs --exclude=out --exclude=dist -cf - . | tar -C "$copy" -xf -
fi
# the downloaded extension wheels (not in git) save a download; without them the tests fetch them
[[ -d "$root/wheels" ]] && cp -r "$root/wheels" "$copy/wheels"
[[ ! -e "$work/shared" ]] || { echo "unexpected $work/shared"; exit 1; }
echo "=== testing a copy in $copy (nothing beside it)"

run() {  # run NAME REQFILE PYTEST-ARGS...
  local name="$1" req="$2"; shift 2
  echo "=== [$name] setting up venv from $req"
  local py; py="$(scripts/venv.sh "$name" "$req")"
  echo "=== [$name] $("$py" -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)')"
  (cd "$copy" && "$py" -m pytest -p no:cacheprovider "$@") || status=1
}
# Two workers (pytest-xdist): the long physics runs are independent and this job is CPU-bound.
run core requirements/core.txt tests --ignore=tests/addon -n 2 "$@"
# numpy picks its SIMD exp/sin/cos by CPU: the compiled-against-numpy tests again with its AVX-512 paths off, so
# an AVX2 machine and an AVX-512 machine both see both cases (said so and skipped where the CPU has none)
(cd "$copy" && bash scripts/without-avx512.sh "$root/.venvs/core/bin/python" -n 2 "$@") || status=1
# Two workers here too: each is its own process with its own bpy.
run bpy50-numba requirements/bpy50-numba.txt tests -m "not slow" --ignore=tests/addon/test_extension.py -n 2 "$@"
(cd "$copy" && bash scripts/without-avx512.sh "$root/.venvs/bpy50-numba/bin/python" -m "not slow" -n 2 "$@") || status=1
run bpy42 requirements/bpy42.txt tests/addon "$@"
run bpy45 requirements/bpy45.txt tests/addon "$@"
run bpy52 requirements/bpy52.txt tests/addon "$@"
run bpy50 requirements/bpy50.txt tests/addon/test_extension.py "$@"
run bench requirements/bench.txt tests/test_bench_smoke.py "$@"
# Basin maps and sweeps on Dask distributed: a LocalCluster, a real scheduler with two worker processes on
# 127.0.0.1 (started and stopped by the tests), a worker killed mid-run, --resume (.venvs/distributed).
run distributed requirements/distributed.txt tests/analysis/test_chunks.py "$@"
# Hypothesis with fresh random examples (bounded: ≤ 50 a test); HYPOTHESIS_SEED=N repeats a failing run.
seed="${HYPOTHESIS_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
echo "=== [core] hypothesis, profile explore-ci, seed $seed"
(cd "$copy" && HYPOTHESIS_PROFILE=explore-ci "$root/.venvs/core/bin/python" -m pytest -p no:cacheprovider \
  tests --ignore=tests/addon -m "hypothesis and not slow" -n 2 --hypothesis-seed="$seed" "$@") || status=1
echo "=== lint"
(cd "$copy" && "$root/.venvs/core/bin/ruff" check pem_physics pem_addon tests bench scripts examples) || status=1
exit $status
