"""A plain ``pip install`` builds the kernels ahead of time (setup.py), and a run after it starts without numba.

Oracle: what the installed package does in a fresh venv that has numpy and nothing else — the run's own report of
its kernels, and whether numba was imported at all; the wheel's tag and contents.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile

import numpy as np
import pytest

from conftest import ROOT

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                 reason="no C compiler: the kernels cannot be built ahead of time here"),
              pytest.mark.xdist_group("aot-build")]  # with the other builds (tests/engine/test_aot.py)


def test_a_plain_install_runs_on_kernels_built_at_install(tmp_path):
    # built from a copy of the package's sources: pip builds in the source tree (build/, *.egg-info), which must not
    # be the checkout's (a half-finished build left there broke the next one)
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "pem_physics", src / "pem_physics", ignore=shutil.ignore_patterns("__pycache__", "_aot"))
    whl_dir = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-w", str(whl_dir), "-q",
                    "--disable-pip-version-check"], check=True, timeout=1800)
    (wheel,) = whl_dir.glob("pem_physics-*.whl")
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert f"-{tag}-{tag}-" in wheel.name, wheel.name  # machine code: tagged for its Python and platform
    with zipfile.ZipFile(wheel) as zf:
        kernels = [n for n in zf.namelist() if "/_aot/" in n]
    assert any(n.endswith(".so") or n.endswith(".pyd") for n in kernels), kernels
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    # numpy of this major version (the build's: numpy ≥ 2), nothing else: no numba
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"numpy=={np.__version__}",
                    str(wheel), "--no-deps"], check=True, timeout=600)
    code = ("import sys, json\n"
            "from pem_physics import examples, simulate\n"
            "tr = simulate(examples.build('three-magnet'), t_end=0.2)\n"
            "print(json.dumps([tr.info['engine'], tr.info['kernels'], 'numba' in sys.modules,\n"
            "                  __import__('importlib').util.find_spec('numba') is not None]))\n")
    # the venv's own package, not a checkout a PYTHONPATH of the caller's names
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([str(py), "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["numba", "ahead-of-time", False, False]
