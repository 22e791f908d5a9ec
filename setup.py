"""Build hook: ``pip install .`` (and ``pip wheel .``) compiles the engine's kernels ahead of time for the Python
and numpy it builds for (:mod:`pem_physics.aot`, :mod:`pem_physics.engine.backends.prebuild`), so a run after a
plain install starts without importing numba or compiling anything. Everything else is in pyproject.toml.

The build environment has numba, numpy and setuptools (pyproject.toml ``[build-system]``); compiling needs a C
compiler. Without one (or with ``PEM_AOT_BUILD=0``) the package installs without the build and runs on numba's
JIT kernels when numba is installed (``[fast]``), else on numpy, as before. The wheel is tagged for its platform
and Python, since it carries machine code for them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution


class BuildWithKernels(build_py):
    """build_py, then the kernels compiled into the built package's ``pem_physics/_aot``."""

    def run(self):
        super().run()
        if os.environ.get("PEM_AOT_BUILD", "1") == "0":
            print("pem_physics: PEM_AOT_BUILD=0, the kernels are not built ahead of time", file=sys.stderr)
            return
        lib = Path(self.build_lib).resolve()
        where = lib / "pem_physics" / "_aot"
        env = {k: v for k, v in os.environ.items() if k not in ("PEM_AOT_DIR", "PEM_AOT", "PEM_NUMBA")}
        code = ("import sys; from pem_physics.engine.backends import prebuild; "
                "prebuild.build(sys.argv[1], log=lambda *a: print(*a, file=sys.stderr))")
        run = subprocess.run([sys.executable, "-c", code, str(where)], cwd=lib, env=env,
                             capture_output=True, text=True)
        if run.returncode != 0:
            why = (run.stderr.strip().splitlines() or ["?"])[-1]
            print(f"pem_physics: the kernels were not built ahead of time ({why}); runs use numba's JIT when numba "
                  "is installed, else numpy", file=sys.stderr)
        else:
            print(run.stderr.strip(), file=sys.stderr)


class PlatformDistribution(Distribution):
    """The wheel carries machine code for one platform and Python: tag it so (not py3-none-any)."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithKernels}, distclass=PlatformDistribution)
