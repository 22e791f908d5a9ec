#!/usr/bin/env bash
# The README's main job: a headless Blender demo (bpy 5.0.1 wheel) → OUTDIR (default out/demo):
# builds the three-magnet pendulum and a T-handle, computes mass properties, bakes keyframes,
# saves .blend files, renders preview frames (Cycles CPU) and plots the energies.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
py="$(scripts/venv.sh bpy50 requirements/bpy50.txt)"
exec "$py" scripts/demo.py "${1:-$root/out/demo}"
