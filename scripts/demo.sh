#!/usr/bin/env bash
# The README's main job: a headless Blender demo → OUTDIR (default out/demo): builds the three-magnet
# pendulum and a T-handle, computes mass properties, bakes keyframes, saves .blend files, renders preview
# frames (Cycles CPU) and plots the energies.
#   scripts/demo.sh [OUTDIR] [--blender 5.2|5.0|4.5|4.2]
# Blender 5.2.3 LTS (the bpy wheel, Python 3.13) by default; --blender picks another supported version.
# 5.2 and 5.0 bake on numba installed beside Blender (as the extension's own wheels give it); the 4.2 and
# 4.5 environments have no numba and bake on the numpy/plain-Python engine (the summary names it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
outdir="$root/out/demo"; blender=5.2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --blender) blender="${2:?--blender needs a version: 5.2, 5.0, 4.5 or 4.2}"; shift 2 ;;
    --blender=*) blender="${1#*=}"; shift ;;
    -*) echo "demo.sh: unknown option $1 (usage: scripts/demo.sh [OUTDIR] [--blender 5.2|5.0|4.5|4.2])" >&2; exit 2 ;;
    *) outdir="$1"; shift ;;
  esac
done
case "$blender" in
  5.2) env=bpy52-numba ;; 5.0) env=bpy50-numba ;; 4.5) env=bpy45 ;; 4.2) env=bpy42 ;;
  *) echo "demo.sh: Blender $blender is not one we support here (5.2, 5.0, 4.5 or 4.2)" >&2; exit 2 ;;
esac
py="$(scripts/venv.sh "$env" "requirements/$env.txt")"
exec "$py" scripts/demo.py "$outdir"
