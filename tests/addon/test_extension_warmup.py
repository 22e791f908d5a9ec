"""An extension zip without kernels built ahead of time (built where there is no C compiler, or for a platform
other than the builder's) warms numba up in the background and bakes on the numba of its own wheels.

A file of its own, with a zip of its own that needs no kernel build: the test command's workers take whole files
(``--dist loadfile``), so its compiling runs beside test_extension.py's kernel build, not after it. What the warm-up
compiles is kept for the machine's next test run (:func:`machine_cache`), as the ahead-of-time builds are kept in
their store: the same sources, Python and numpy are compiled once per machine, not once per run (~7 min of a slow
2-core machine's test command).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .conftest import ROOT, SANDBOX, bake_a_pendulum, extension_script, install_extension  # noqa: E402

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


def machine_cache() -> Path:
    """This machine's copy of the compiled kernels the warm-up leaves in the extension's cache folder, for this
    Python and numpy (numba's own index in it keys each kernel on the sources' digest and the CPU)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pem_physics" / "test-warmup" / f"py{sys.version_info[0]}{sys.version_info[1]}-numpy{np.__version__}"


def extension_cache() -> Path:
    """The installed extension's numba cache folder (``extension_path_user(…, "numba_cache")``), known before the
    install: enabling the add-on starts the warm-up."""
    pkg_id = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))["id"]
    return Path(bpy.utils.user_resource('EXTENSIONS', path=".user")) / "user_default" / pkg_id / "numba_cache"


#: the stamp of a finished warm-up is the sandbox's own: seeded, it would keep the warm-up from starting at all
NOT_KERNELS = shutil.ignore_patterns("warm-*")


@pytest.fixture
def installed(zip_without_kernels, monkeypatch):
    # the extension's own cache folder, which NUMBA_CACHE_DIR (set for the test run, say) would replace
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    seed, cache = machine_cache(), extension_cache()
    shutil.rmtree(cache, ignore_errors=True)
    if seed.is_dir():
        shutil.copytree(seed, cache, ignore=NOT_KERNELS)
    yield from install_extension(zip_without_kernels)


def keep_for_the_next_run(cache: Path) -> None:
    """Replace :func:`machine_cache` with ``cache`` (written beside it, then renamed: a run stopped midway leaves
    the old copy whole)."""
    seed = machine_cache()
    seed.parent.mkdir(parents=True, exist_ok=True)
    new = seed.with_name(seed.name + f".new-{os.getpid()}")
    shutil.rmtree(new, ignore_errors=True)
    shutil.copytree(cache, new, ignore=NOT_KERNELS)
    old = seed.with_name(seed.name + f".old-{os.getpid()}")
    if seed.exists():
        seed.rename(old)
    new.rename(seed)
    shutil.rmtree(old, ignore_errors=True)


def compile_stats(package: str) -> tuple[int, int]:
    """(cache hits, compiles) summed over every numba kernel imported under ``package``."""
    hits = misses = 0
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == package or name.startswith(package + ".")):
            continue
        for f in vars(mod).values():
            stats = getattr(f, "stats", None)
            if stats is not None and hasattr(stats, "cache_hits"):
                hits += sum(stats.cache_hits.values())
                misses += sum(stats.cache_misses.values())
    return hits, misses


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
    hits, compiled = compile_stats(f"{module}.pem_physics")
    assert hits >= 1 and compiled == 0, (hits, compiled, status)     # loaded what the warm-up compiled
    import numba

    if not NUMBA_IN_ENV:
        assert Path(numba.__file__).resolve().is_relative_to(Path(SANDBOX).resolve()), numba.__file__
    assert "compiled engine" in status and "ahead of time" not in status, status
    cache = Path(bpy.utils.extension_path_user(module, path="numba_cache"))
    assert cache == extension_cache()
    assert any(cache.rglob("*.nbi")), f"no compiled code cached in {cache}"
    keep_for_the_next_run(cache)
