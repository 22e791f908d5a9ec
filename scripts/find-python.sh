#!/usr/bin/env bash
# Usage: scripts/find-python.sh X.Y
# Prints the path of a working CPython X.Y interpreter: $PYTHON if it is X.Y, then pythonX.Y on PATH,
# then pyenv's installed X.Y.* (newest), then uv's (`uv python find`). Without one it says how to get
# one and exits 1 (nothing is skipped: the caller stops).
set -euo pipefail
want="$1"
is_version() {  # is_version CMD: CMD runs and is CPython $want
  [[ -n "$1" ]] && "$1" -c "import sys, platform; sys.exit(not (platform.python_implementation() == 'CPython' and '%d.%d' % sys.version_info[:2] == '$want'))" >/dev/null 2>&1
}
candidates=()
[[ -n "${PYTHON:-}" ]] && candidates+=("$PYTHON")
command -v "python$want" >/dev/null 2>&1 && candidates+=("$(command -v "python$want")")
if command -v pyenv >/dev/null 2>&1; then
  pyroot="$(pyenv root 2>/dev/null || true)"
  # pyenv's shim for pythonX.Y fails unless X.Y is selected: look at its installed versions directly
  for d in $(ls -d "$pyroot"/versions/"$want".* 2>/dev/null | sort -V -r); do
    candidates+=("$d/bin/python$want")
  done
fi
command -v uv >/dev/null 2>&1 && candidates+=("$(uv python find "$want" 2>/dev/null || true)")
for c in "${candidates[@]}"; do
  if is_version "$c"; then echo "$c"; exit 0; fi
done
cat >&2 <<MSG
error: no Python $want interpreter found (looked for \$PYTHON, python$want on PATH, pyenv's versions, uv).
  This environment needs Python $want exactly. Install one, then run the command again:
    pyenv install $want        # pyenv (https://github.com/pyenv/pyenv)
    uv python install $want    # or uv
    apt-get install python$want python$want-venv   # or your system's packages, where they have it
  or point PYTHON at one: PYTHON=/path/to/python$want bash scripts/test.sh
MSG
exit 1
