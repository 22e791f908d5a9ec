#!/usr/bin/env bash
# The README's test command and .ci/run: the nox sessions of noxfile.py, on a copy of the checkout in a temporary
# folder with nothing beside it (tracked and untracked, not ignored, files), so a test that needs a file from
# outside the repository fails.
#   bash scripts/test.sh                 every session (the full matrix)
#   bash scripts/test.sh quick           the inner loop: the core on numpy 2 without the slow marks, the add-on
#                                        under Blender 5.2 LTS
#   bash scripts/test.sh -s NAME ...     nox's own options (-l lists the sessions); after -- : pytest's (-x, -k)
# The runner itself (nox, uv: requirements/tools.txt) goes into .venvs/tools; each session's venv into .venvs/nox,
# made by uv from the pinned requirements/*.txt and reused while they stay the same.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
start=$SECONDS
tools="$(scripts/venv.sh tools requirements/tools.txt)"
tools="$(dirname "$tools")"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
copy="$work/pem-for-blender"
mkdir -p "$copy"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # files deleted in the work tree but still in the index are left out
  git -C "$root" ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [[ (-e "$f" || -L "$f") && ! -d "$f" ]] && printf '%s\0' "$f"; done \
    | xargs -0 -r cp --parents -t "$copy"
else
  tar -C "$root" --exclude=.venvs --exclude=out --exclude=dist --exclude=build -cf - . | tar -C "$copy" -xf -
fi
# the downloaded extension wheels (not in git) save a download; without them the tests fetch them
[[ -d "$root/wheels" ]] && cp -r "$root/wheels" "$copy/wheels"
[[ ! -e "$work/shared" ]] || { echo "unexpected $work/shared"; exit 1; }
echo "=== testing a copy in $copy (nothing beside it)"

args=("$@")
[[ "${1:-}" == quick ]] && args=(-s quick quick-blender "${@:2}")
# uv finds the interpreters noxfile.interpreter names; it never downloads one (no network but the registries)
export UV_PYTHON_DOWNLOADS=never
# bytecode is written (into the command's own venvs under .venvs/ and its copy of the tree): with
# PYTHONDONTWRITEBYTECODE set, each of the run's hundreds of Python processes compiled numpy, scipy, numba and bpy's
# modules from source again (~1-2 s of CPU each)
unset PYTHONDONTWRITEBYTECODE
status=0
PATH="$tools:$PATH" "$tools/nox" -f "$copy/noxfile.py" --envdir "$root/.venvs/nox" --no-color "${args[@]}" || status=$?
echo "=== all sessions: $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s, exit $status"
exit $status
