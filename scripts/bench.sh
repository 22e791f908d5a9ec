#!/usr/bin/env bash
# Every benchmark, side by side with its peers → docs/benchmarks.md + docs/bench/*.png.
# Sets up .venvs/bench (core + mujoco + libigl, pinned) and the bpy venvs for the bake benchmark.
#   scripts/bench.sh [--quick]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
py="$(scripts/venv.sh bench requirements/bench.txt)"
scripts/venv.sh bpy50 requirements/bpy50.txt >/dev/null
scripts/venv.sh bpy42 requirements/bpy42.txt >/dev/null
exec "$py" bench/run_all.py "$@"
