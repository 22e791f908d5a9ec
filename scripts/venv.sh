#!/usr/bin/env bash
# Usage: scripts/venv.sh NAME REQUIREMENTS_FILE
# Creates (or reuses) .venvs/NAME with exactly the pinned requirements; prints its python path.
# Reuse is keyed on the requirements file's hash, so a changed pin rebuilds the venv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
name="$1"; req="$2"
venv="$root/.venvs/$name"
py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null 2>&1 || py=python3
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "$venv/bin/python"; exit 0
fi
rm -rf "$venv"
"$py" -m venv "$venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade "pip==25.3" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
echo "$want" > "$stamp"
echo "$venv/bin/python"
