#!/usr/bin/env bash
# The README's test command: every test, in the environments we support.
#   1. core + tests on numpy 2.x (.venvs/core)
#   2. core + add-on tests under the bpy 5.0.1 wheel, numpy 1.26 (.venvs/bpy50); the long physics
#      runs (marked slow) already ran in step 1 and are not repeated here
#   3. add-on tests under the bpy 4.2 LTS wheel (.venvs/bpy42)
#   4. the benchmarks' own checks with their peers installed (.venvs/bench: MuJoCo, libigl)
# Each venv is created from requirements/*.txt (pinned) on first use.
# Extra arguments go to every pytest call (e.g. -x, -k name).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
status=0
run() {  # run NAME REQFILE PYTEST-ARGS...
  local name="$1" req="$2"; shift 2
  echo "=== [$name] setting up venv from $req"
  local py; py="$(scripts/venv.sh "$name" "$req")"
  echo "=== [$name] $("$py" -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)')"
  "$py" -m pytest "$@" || status=1
}
# Two workers (pytest-xdist): the long physics runs are independent and this job is CPU-bound.
run core requirements/core.txt tests --ignore=tests/addon -n 2 "$@"
if [[ -f requirements/bpy50.txt ]]; then
  run bpy50 requirements/bpy50.txt tests -m "not slow" "$@"
fi
if [[ -f requirements/bpy42.txt ]]; then
  run bpy42 requirements/bpy42.txt tests/addon "$@"
fi
run bench requirements/bench.txt tests/test_bench_smoke.py "$@"
echo "=== lint"
"$root/.venvs/core/bin/ruff" check pem_physics pem_addon tests bench scripts examples || status=1
exit $status
