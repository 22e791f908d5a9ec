#!/usr/bin/env bash
# The pictures of the add-on guide (docs/addon-guide.md) → OUTDIR (default docs/guide): the three-magnet
# pendulum rendered before its bake and as its baked motion (Cycles CPU), the Timeline's cache bar baked and
# outdated (drawn offscreen by the add-on's own draw function), and the Plot Diagnostics image.
#   scripts/guide.sh [OUTDIR]
# Blender 5.2.3 LTS (the bpy wheel, Python 3.13, with numba): ~20 s once the environment is set up.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
outdir="$root/docs/guide"
case "${1:-}" in
  -*) echo "guide.sh: unknown option $1 (usage: scripts/guide.sh [OUTDIR])" >&2; exit 2 ;;
  ?*) outdir="$1" ;;
esac
py="$(scripts/venv.sh bpy52-numba requirements/bpy52-numba.txt)"
exec "$py" scripts/guide.py "$outdir"
