#!/usr/bin/env bash
# Usage: scripts/without-avx512.sh PYTHON [PYTEST-ARGS...]
# The compiled-against-numpy tests again, under PYTHON, with numpy's AVX-512 code paths turned off.
# numpy picks the SIMD implementation of exp, sin, cos, sums … by CPU at run time, and its AVX2 and AVX-512
# versions differ in the last bit here and there: the round-off bounds of these tests (tests/roundoff.py) must
# hold on CPUs without AVX-512 too, so where this CPU has it the tests run a second time without it.
# NPY_DISABLE_CPU_FEATURES is set to exactly numpy's AVX-512 dispatch targets that this CPU has (their names
# differ between numpy 1.x and 2.x; `python tests/roundoff.py` prints them); on a CPU without AVX-512 there is
# nothing to turn off, the second run would repeat the first, and it is skipped (said so on stdout).
# Run from the repository root (or a copy of it). Extra arguments go to pytest (e.g. -n 2, -x, -m "not slow").
set -euo pipefail
py="$1"; shift
files=(tests/engine/test_compiled.py tests/engine/test_lanes.py tests/engine/test_scalar.py
       tests/engine/test_compiled_contacts.py tests/engine/test_compiled_translation.py
       tests/engine/test_compiled_impacts.py tests/engine/test_roundoff.py tests/engine/test_surface_compiled.py)
off="$(env -u NPY_DISABLE_CPU_FEATURES "$py" tests/roundoff.py)"
version="$("$py" -c 'import numpy; print(numpy.__version__)')"
if [[ -z "$off" ]]; then
  echo "=== numpy $version: this CPU has no AVX-512 code paths to turn off; the run without AVX-512 is the run" \
       "already done (skipped)"
  exit 0
fi
# numpy only warns about a name it does not know: make sure the paths are off before trusting the run
left="$(NPY_DISABLE_CPU_FEATURES="$off" "$py" tests/roundoff.py)"
if [[ -n "$left" ]]; then
  echo "=== numpy $version: NPY_DISABLE_CPU_FEATURES=\"$off\" left AVX-512 paths on: $left" >&2
  exit 1
fi
echo "=== numpy $version without AVX-512: NPY_DISABLE_CPU_FEATURES=\"$off\""
NPY_DISABLE_CPU_FEATURES="$off" "$py" -m pytest -p no:cacheprovider "${files[@]}" "$@"
