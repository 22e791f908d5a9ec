"""The test matrix as nox sessions, each a virtual environment of pinned requirements (requirements/*.txt) installed
by uv. Run through scripts/test.sh, which installs nox and uv (requirements/tools.txt) and tests a copy of the
checkout with nothing beside it:

    bash scripts/test.sh                  every session below: the README's test command and .ci/run
    bash scripts/test.sh quick            the inner loop: the core on numpy 2 (not the slow marks), the add-on
                                          under Blender 5.2 LTS
    bash scripts/test.sh -s blender-4.2   one session (-l lists them); arguments after -- go to every pytest

Each test runs where it can fail differently (docs/testing.md has the map): physics that does not touch Blender
runs on numpy 2 (``core``) and numpy 1.26 (``numpy1``), not once per Blender; what touches Blender runs under each
Blender we support; what numpy's SIMD paths can change runs again with AVX-512 off.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True
#: what ``nox`` alone runs: the whole matrix (``quick`` repeats parts of it, so it is left out)
nox.options.sessions = ["core", "numpy1", "blender-4.2", "blender-4.5", "blender-5.2", "blender-5.0", "bench",
                        "distributed", "hypothesis", "lint"]

HERE = Path(__file__).resolve().parent
#: the compiled-against-numpy tests: the ones numpy's AVX-512 code paths (exp, sin, cos, sums) can change
ROUNDOFF_FILES = ("tests/engine/test_compiled.py", "tests/engine/test_lanes.py", "tests/engine/test_scalar.py",
                  "tests/engine/test_compiled_contacts.py", "tests/engine/test_compiled_translation.py",
                  "tests/engine/test_compiled_impacts.py", "tests/engine/test_roundoff.py",
                  "tests/engine/test_surface_compiled.py")

#: tests in those files that numpy's code paths cannot change: not run again without AVX-512
NOT_ROUNDOFF = ("tests/engine/test_compiled.py::test_compiled_code_is_cached_on_disk",)


def interpreter(version: str) -> str:
    """A CPython ``version`` (X.Y) for uv to build a venv from, found by scripts/find-python.sh (PATH, pyenv's
    installs, uv's); where there is none, the version itself: uv then stops the session saying it found none, and
    scripts/find-python.sh says how to get one."""
    found = subprocess.run(["bash", str(HERE / "scripts" / "find-python.sh"), version], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else version


PY311, PY313 = interpreter("3.11"), interpreter("3.13")


def install(session: nox.Session, *names: str) -> None:
    """The pinned sets ``requirements/<name>.txt`` into the session's venv (uv: seconds when already there)."""
    args = ["pip==25.3"]  # the tests that build call pip (a wheel, the extension's numba wheels)
    for name in names:
        args += ["-r", str(HERE / "requirements" / f"{name}.txt")]
    session.install(*args)


def pytest(session: nox.Session, *args: str, env: dict | None = None) -> None:
    session.run("python", "-m", "pytest", "-p", "no:cacheprovider", *args, *session.posargs, env=env)


def without_avx512(session: nox.Session, *args: str) -> None:
    """:data:`ROUNDOFF_FILES` again with numpy's AVX-512 code paths off, so an AVX2 and an AVX-512 machine both see
    both cases (tests/roundoff.py names numpy's AVX-512 targets this CPU has; without any, there is nothing to turn
    off and the run would repeat the first: said and skipped)."""
    off = session.run("python", "tests/roundoff.py", silent=True, env={"NPY_DISABLE_CPU_FEATURES": ""})
    if off is None:  # --install-only: nothing runs
        return
    off = off.strip()
    if not off:
        session.log("this CPU has no AVX-512 code paths to turn off: the run without AVX-512 is the one done")
        return
    left = session.run("python", "tests/roundoff.py", silent=True, env={"NPY_DISABLE_CPU_FEATURES": off}).strip()
    if left:  # numpy only warns about a name it does not know: make sure the paths are off before trusting the run
        session.error(f"NPY_DISABLE_CPU_FEATURES={off!r} left AVX-512 paths on: {left}")
    session.log(f"without AVX-512: NPY_DISABLE_CPU_FEATURES={off!r}")
    pytest(session, *ROUNDOFF_FILES, *(f"--deselect={t}" for t in NOT_ROUNDOFF), *args,
           env={"NPY_DISABLE_CPU_FEATURES": off})


@nox.session(python=PY311)
def core(session):
    """The core and its tests on numpy 2.x with numba (Python 3.11), every mark but the property tests that
    ``hypothesis`` runs on the same numpy with fresh examples; then without AVX-512."""
    install(session, "core")
    # loadgroup: the builds made ahead of time on one worker (xdist_group "aot-build"), not one waiting on the other
    pytest(session, "tests", "--ignore=tests/addon", "-m", "not hypothesis or slow", "-n", "2", "--dist", "loadgroup")
    without_avx512(session, "-n", "2")


@nox.session(python=PY311)
def numpy1(session):
    """The core on numpy 1.26 (Blender 4.2–5.0's) with numba, inside Blender 5.0: the core's tests but the slow
    marks (numpy 2 ran them), the add-on's baking on numba installed beside Blender; then without AVX-512."""
    install(session, "bpy50-numba")
    pytest(session, "tests", "-m", "not slow", "--ignore=tests/addon/test_extension.py", "-n", "2")
    without_avx512(session, "-m", "not slow", "-n", "2")


def blender(version: str, req: str, python: str, slow: bool):
    @nox.session(name=f"blender-{version}", python=python)
    def run(session):
        install(session, req)
        # a file's tests on one worker: the extension's zips and other module fixtures are made once
        pytest(session, "tests/addon", "-n", "2", "--dist", "loadfile", *([] if slow else ["-m", "not slow"]))
    run.__doc__ = (f"The add-on under Blender {version} without numba (the numpy engine); the extension's zip "
                   "installed and baking on its own wheels and kernels" + (
                       "." if slow else " (the slow marks ran under 4.2, the same Python, numpy and numba)."))
    return run


blender_42 = blender("4.2", "bpy42", PY311, slow=True)
blender_45 = blender("4.5", "bpy45", PY311, slow=False)
blender_52 = blender("5.2", "bpy52", PY313, slow=True)


@nox.session(name="blender-5.0", python=PY311)
def blender_50(session):
    """The extension's zip installed into Blender 5.0 without numba, baking on its own wheels and kernels (the rest
    of the add-on ran under 5.0 in ``numpy1``, with numba beside Blender; the slow marks under 4.2, the same
    Python, numpy and numba)."""
    install(session, "bpy50")
    pytest(session, "tests/addon/test_extension.py", "-m", "not slow")


@nox.session(python=PY311)
def bench(session):
    """The benchmarks' own oracles and verdicts, with their peers installed (MuJoCo, libigl)."""
    install(session, "bench")
    pytest(session, "tests/test_bench_smoke.py")


@nox.session(python=PY311)
def distributed(session):
    """Basin maps and sweeps on Dask distributed: a LocalCluster and a real scheduler with two worker processes on
    127.0.0.1, a worker killed mid-run, --resume."""
    install(session, "distributed")
    pytest(session, "tests/analysis/test_chunks.py")


@nox.session(python=PY311)
def hypothesis(session):
    """The property tests (not the slow ones: ``core`` runs those) with fresh random examples, as many as the
    repeatable run's, at most 50 a test; HYPOTHESIS_SEED=N repeats a run. Their repeatable examples run in
    ``numpy1``."""
    install(session, "core")
    seed = os.environ.get("HYPOTHESIS_SEED") or str(int.from_bytes(os.urandom(4), "little"))
    session.log(f"hypothesis profile explore-ci, seed {seed}")
    pytest(session, "tests", "--ignore=tests/addon", "-m", "hypothesis and not slow", "-n", "2",
           f"--hypothesis-seed={seed}", env={"HYPOTHESIS_PROFILE": "explore-ci"})


@nox.session(python=PY311)
def lint(session):
    session.install("ruff==0.17.6")
    session.run("ruff", "check", "pem_physics", "pem_addon", "tests", "bench", "scripts", "examples", "noxfile.py")


@nox.session(python=PY311)
def quick(session):
    """The inner loop, first half: the core on numpy 2 without the slow and heavy marks (scripts/test.sh quick runs
    it and ``quick-blender``)."""
    install(session, "core")
    pytest(session, "tests", "--ignore=tests/addon", "-m", "not slow and not heavy", "-n", "2")


@nox.session(name="quick-blender", python=PY313)
def quick_blender(session):
    """The inner loop, second half: the add-on under Blender 5.2 LTS without the slow marks."""
    install(session, "bpy52")
    pytest(session, "tests/addon", "-n", "2", "--dist", "loadfile", "-m", "not slow")
