"""Run the Blender tests (tests/addon) inside a real Blender, with Blender's own Python.

Usage::

    blender -b --factory-startup --python tests/blender_run.py
    blender -b --factory-startup --python tests/blender_run.py -- -x -k keyframes
    blender -b --factory-startup --python tests/blender_run.py -- --site /path/to/site-packages -q

Arguments after ``--`` go to pytest, except ``--site DIR`` (repeatable), which puts ``DIR`` on
``sys.path`` first. Blender exits with pytest's exit code (0 = all passed).

Needs:

- ``pytest`` importable by *Blender's* Python (the same Python minor version as Blender's:
  3.11 for Blender 4.2–5.0). Either install it into Blender's Python,
  ``<blender>/<version>/python/bin/python3.11 -m pip install pytest``, or pass ``--site`` with a
  site-packages directory that has it (for example a Python 3.11 venv's). numpy ships with
  Blender; nothing else is needed.
- Write access to a temporary directory: Blender's user resources (preferences, extension
  repositories) are redirected there for the run, so the extension-install test never touches
  your real profile. Blender reads that location only at start-up, so when this script finds
  itself in a Blender that was not started that way, it starts a second Blender
  (``bpy.app.binary_path``, or ``$PEM_BLENDER_BINARY``) with ``BLENDER_USER_RESOURCES`` set to a
  fresh temporary directory, runs itself there, and exits with that Blender's exit code.

Run with a plain Python (``python tests/blender_run.py -- -q``) where the ``bpy`` wheel is
installed, it simply runs the same pytest call; tests/addon/conftest.py sets up the sandbox.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent / "addon"
SANDBOX_ENV = "PEM_TEST_USER_RESOURCES"  # must match tests/addon/conftest.py


def script_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Split the arguments after Blender's ``--`` into (extra sys.path entries, pytest args)."""
    args = argv[argv.index("--") + 1:] if "--" in argv else (argv[1:] if "bpy" not in sys.modules else [])
    sites, rest = [], []
    it = iter(args)
    for arg in it:
        if arg == "--site":
            site = next(it, None)
            if site is None:
                raise SystemExit("blender_run.py: --site needs a directory")
            sites.append(site)
        else:
            rest.append(arg)
    return sites, rest


def sandboxed() -> bool:
    """True if this Blender was started with its user resources in our sandbox (or bpy not yet loaded)."""
    if "bpy" not in sys.modules:
        return True  # plain Python: conftest.py sets the sandbox up before importing bpy
    sandbox = os.environ.get(SANDBOX_ENV)
    return bool(sandbox) and os.environ.get("BLENDER_USER_RESOURCES") == sandbox


def relaunch_sandboxed(argv: list[str]) -> int:
    """Start another Blender with user resources in a fresh temporary directory; return its exit code."""
    import bpy

    binary = os.environ.get("PEM_BLENDER_BINARY") or bpy.app.binary_path
    if not binary:
        raise SystemExit("blender_run.py: cannot find the Blender executable to relaunch "
                         "(bpy.app.binary_path is empty); set PEM_BLENDER_BINARY")
    after = argv[argv.index("--"):] if "--" in argv else []
    sandbox = tempfile.mkdtemp(prefix="pem-blender-user-")
    env = dict(os.environ, BLENDER_USER_RESOURCES=sandbox, **{SANDBOX_ENV: sandbox})
    cmd = [binary, "-b", "--factory-startup", "--python", str(Path(__file__).resolve()), *after]
    print(f"blender_run.py: relaunching with user resources in {sandbox}:\n  {' '.join(cmd)}", flush=True)
    code = subprocess.run(cmd, env=env).returncode
    shutil.rmtree(sandbox)
    return code


def run_pytest(sites: list[str], pytest_args: list[str]) -> int:
    """Run pytest on tests/addon with Blender's Python; return its exit code."""
    for site in reversed(sites):
        sys.path.insert(0, site)
    if importlib.util.find_spec("pytest") is None:
        print("blender_run.py: pytest is not importable by this Python "
              f"({sys.executable}, Python {sys.version.split()[0]}).\n"
              "Install it into Blender's Python (<blender>/<version>/python/bin/python3.11 -m pip install pytest)\n"
              "or pass a site-packages directory that has it: ... --python tests/blender_run.py -- --site DIR",
              file=sys.stderr)
        return 2
    import pytest

    root = TESTS.parent.parent
    return int(pytest.main([str(TESTS), "--rootdir", str(root), "-c", str(root / "pyproject.toml"),
                            "-p", "no:cacheprovider", *pytest_args]))


def main(argv: list[str]) -> int:
    sites, pytest_args = script_args(argv)
    if not sandboxed():
        return relaunch_sandboxed(argv)
    return run_pytest(sites, pytest_args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
