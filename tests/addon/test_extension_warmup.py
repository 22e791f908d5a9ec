"""An extension zip without kernels built ahead of time (built where there is no C compiler, or for a platform
other than the builder's) warms numba up in the background and bakes on the numba of its own wheels.

A file of its own, with a zip of its own that needs no kernel build: the test command's workers take whole files
(``--dist loadfile``), so its ~3 minutes of compiling run beside test_extension.py's kernel build, not after it.
"""

from __future__ import annotations

import importlib
import importlib.util
import zipfile
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .conftest import SANDBOX, bake_a_pendulum, extension_script, install_extension  # noqa: E402

#: Whether numba is importable before the extension is installed. The test command runs this file in venvs
#: without numba (bpy 4.2, 5.2), so the installed extension's numba can only come from its own wheels.
NUMBA_IN_ENV = importlib.util.find_spec("numba") is not None


@pytest.fixture(scope="module")
def zip_without_kernels(tmp_path_factory) -> Path:
    """This machine's zip, built with no kernels ahead of time (``scripts/extension.py``, no Python to build for)."""
    script = extension_script()
    zips = script.build(tmp_path_factory.mktemp("ext-build-plain"), pythons=[])
    (path,) = [z for z in zips if z.stem.endswith(script.host_platform().replace("-", "_"))]
    with zipfile.ZipFile(path) as zf:
        assert not [n for n in zf.namelist() if "/_aot/" in n], "the zip was to carry no kernels"
        assert any(n.endswith(".whl") and "numba" in n for n in zf.namelist()), "the zip carries no numba wheel"
    return path


@pytest.fixture
def installed(zip_without_kernels, monkeypatch):
    # the extension's own cache folder, which NUMBA_CACHE_DIR (set for the test run, say) would replace; before the
    # install: enabling the add-on starts the warm-up
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    yield from install_extension(zip_without_kernels)


@pytest.mark.slow  # ~3 min of compiling: once per Python (Blender 4.2 and 5.2), not again under 4.5 and 5.0
def test_installed_zip_without_kernels_warms_up_and_bakes_on_the_numba_of_its_wheels(installed):
    """Enabling the add-on starts its warm-up: numba's kernels compiled in a background process of Blender's Python,
    into the extension's cache folder; the bake then runs on numba — under bpy 4.2 (no numba of its own) the one
    from the zip's wheels — loading them, with no compile of its own."""
    module = f"bl_ext.user_default.{installed.name}"
    warmup = importlib.import_module(f"{module}.pem_addon.warmup")
    proc = warmup.process
    assert proc is not None, "enabling the add-on did not start the warm-up"
    assert warmup.start(module) is proc                             # one warm-up at a time
    assert proc.wait(timeout=900) == 0
    assert warmup.stamp_path().exists() and not warmup.needed()   # done once: not started again
    status = bake_a_pendulum()
    assert "compiling" not in status, status                        # loaded what the warm-up compiled
    import numba

    if not NUMBA_IN_ENV:
        assert Path(numba.__file__).resolve().is_relative_to(Path(SANDBOX).resolve()), numba.__file__
    assert "compiled engine" in status and "ahead of time" not in status, status
    cache = Path(bpy.utils.extension_path_user(module, path="numba_cache"))
    assert any(cache.rglob("*.nbi")), f"no compiled code cached in {cache}"
