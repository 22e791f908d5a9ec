#!/usr/bin/env bash
# Build the Blender extension: one zip per platform (blender_manifest.toml `platforms`) into dist/,
# each with numba + llvmlite for that platform and Blender's Pythons 3.11 and 3.13 (downloaded once into
# wheels/). Uses Blender's own extension tool from the bpy 5.2.3 LTS wheel (.venvs/bpy52, Python 3.13, set
# up on first use).
#   scripts/extension.sh [--out DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
py="$(scripts/venv.sh bpy52 requirements/bpy52.txt)"
exec "$py" scripts/extension.py "$@"
