#!/usr/bin/env bash
# The README's main job: a headless Blender demo → OUTDIR (default out/demo), on the extension as a user has it:
# its zip built (or reused) for this Blender (scripts/extension.py: the kernels ahead of time for its Python from
# the machine's build store), installed into a fresh user folder with Blender's installer, enabled; then it builds
# the three-magnet pendulum, a T-handle, a gas, Newton's cradle, Kapitza's pendulum, a magnetic gear, a tippe top
# and a rolling coin, bakes each on the installed extension, saves .blend files, renders preview frames (Cycles
# CPU), plots the energies and prints a table of where its time went.
#   scripts/demo.sh [OUTDIR] [--blender 5.2|5.0|4.5|4.2]
# Blender 5.2.3 LTS (the bpy wheel, Python 3.13) by default; --blender picks another supported version. Each runs
# in a venv without numba: the compiled engine comes from the installed zip's own wheels and kernels.
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
  5.2) env=bpy52 ;; 5.0) env=bpy50 ;; 4.5) env=bpy45 ;; 4.2) env=bpy42 ;;
  *) echo "demo.sh: Blender $blender is not one we support here (5.2, 5.0, 4.5 or 4.2)" >&2; exit 2 ;;
esac
start=$SECONDS
py="$(scripts/venv.sh "$env" "requirements/$env.txt")"
PEM_DEMO_VENV_S=$((SECONDS - start)) exec "$py" scripts/demo.py "$outdir"
