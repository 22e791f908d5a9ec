#!/usr/bin/env bash
# Usage: scripts/venv.sh NAME REQUIREMENTS_FILE
# Creates (or reuses) .venvs/NAME with exactly the pinned requirements; prints its python path.
# The Python version comes from a `# python: X.Y` line in the requirements file (default 3.11); the
# interpreter is found on PATH, through pyenv or through uv (scripts/find-python.sh), and the script stops
# with a message saying how to get one where none exists.
# uv (requirements/tools.txt, in .venvs/tools: made first, with venv and pip) makes every other venv.
# Reuse is keyed on the hash of the requirements file and the files it includes (-r), so a changed pin
# rebuilds the venv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
name="$1"; req="$2"
venv="$root/.venvs/$name"
version="$(sed -n 's/^# python: *\([0-9][0-9.]*\).*/\1/p' "$req" | head -n 1)"
version="${version:-3.11}"
stamp="$venv/.requirements.sha256"
# the file itself and every `-r FILE` it includes (relative to its folder), one level deep
includes=$(sed -n 's/^-r  *\(.*\)$/\1/p' "$req" | while read -r f; do printf '%s\n' "$(dirname "$req")/$f"; done)
want="$( { echo "python $version"; cat "$req" $includes; } | sha256sum | cut -d' ' -f1)"
mkdir -p "$root/.venvs"
exec 9>"$root/.venvs/.$name.lock"
! command -v flock >/dev/null || flock 9   # two builders at once (two test workers making the extension's zip) make the venv once
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "$venv/bin/python"; exit 0
fi
py="$("$root/scripts/find-python.sh" "$version")"
rm -rf "$venv"
uv="$root/.venvs/tools/bin/uv"
if [[ "$name" != tools ]]; then
  "$root/scripts/venv.sh" tools "$root/requirements/tools.txt" >/dev/null   # uv itself, once
fi
if [[ "$name" != tools && -x "$uv" ]]; then
  # seconds instead of minutes for a bpy venv; pip too, as the build scripts call it
  UV_PYTHON_DOWNLOADS=never "$uv" venv --quiet --python "$py" "$venv" >&2
  "$uv" pip install --quiet --python "$venv/bin/python" "pip==25.3" -r "$req" >&2
else
  "$py" -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade "pip==25.3" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
fi
echo "$want" > "$stamp"
echo "$venv/bin/python"
