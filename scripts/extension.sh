#!/usr/bin/env bash
# Build the Blender extension: one zip per platform (blender_manifest.toml `platforms`) into dist/,
# each with numba + llvmlite for that platform (downloaded once into wheels/). Uses Blender's own
# extension tool from the bpy 5.0.1 wheel (.venvs/bpy50, set up on first use).
#   scripts/extension.sh [--out DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
py="$(scripts/venv.sh bpy50 requirements/bpy50.txt)"
exec "$py" scripts/extension.py "$@"
