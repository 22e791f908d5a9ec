"""numba's first compile, done in a background process as soon as the add-on is enabled, so a first bake rarely
waits for it — on platforms whose zip carries no kernels built ahead of time (macOS, Windows; the linux-x64
zip's need no compile at all: :func:`..pem_physics.engine.kernels_built`).

The process is Blender's own Python (``sys.executable``) running :func:`..pem_physics.engine.warm` on the
extension's files imported under the very package name Blender gives them (numba keys its cache by source file
and pickles module names into it) with the extension's cache folder: what it compiles, a bake in Blender then
loads. It never imports bpy. Once done it leaves a stamp keyed on the kernels' source and numba's version, and is
not started again until either changes. A bake during the warm-up compiles on its own, as without it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from ..pem_physics import jit
from ..pem_physics.engine import build_key, kernels_built

#: The running warm-up (subprocess.Popen), or None.
process = None

_SCRIPT = r"""
import importlib, sys, types
root, package, stamp = sys.argv[1:4]
parts = package.split(".")
for i in range(1, len(parts)):   # bl_ext, bl_ext.user_default: bare namespaces, as Blender has them
    name = ".".join(parts[:i])
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.__path__ = []
        sys.modules[name] = module
ext = types.ModuleType(package)   # the extension's root, without its __init__ (which imports bpy)
ext.__path__ = [root]
sys.modules[package] = ext
importlib.import_module(package + ".pem_physics.engine").warm()
open(stamp, "w").write("warm")
"""


def _numba_version() -> str | None:
    """The installed numba's version, read from its metadata (numba itself is not imported)."""
    from importlib import metadata

    try:
        return metadata.version("numba")
    except metadata.PackageNotFoundError:
        return None


def stamp_path() -> Path:
    """The stamp a finished warm-up leaves: keyed on the kernels' source and the installed numba."""
    return jit.cache_dir() / f"warm-{build_key()}-{_numba_version()}"


def needed() -> bool:
    """Whether a warm-up would compile anything: numba is installed, no build made ahead of time loads, and no
    warm-up of these sources has finished."""
    return (os.environ.get("PEM_WARMUP", "1") != "0" and jit.installed() and not kernels_built()
            and not stamp_path().exists())


def start(package: str) -> subprocess.Popen | None:
    """Start the warm-up for the extension imported as ``package`` (``bl_ext.<repo>.<id>``), when
    :func:`needed`; returns the process."""
    global process
    if process is not None and process.poll() is None:
        return process
    if not needed():
        return None
    root = Path(sys.modules[package].__file__).parent
    paths = []
    for name in ("numba", "llvmlite", "numpy"):   # where Blender finds them (the extension's wheels, its own)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            paths.append(str(Path(spec.submodule_search_locations[0]).parent))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(dict.fromkeys(paths)))
    # the extension's cache folder: cache_dir() is it with the package's name appended, which the process appends
    # again itself (the same name: it imports the files under it)
    env["NUMBA_CACHE_DIR"] = str(jit.cache_dir().parent)
    stamp = stamp_path()
    stamp.parent.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-c", _SCRIPT, str(root), package, str(stamp)], env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               cwd=str(root))
    return process


def stop() -> None:
    """End a running warm-up (the add-on is disabled): numba writes its cache files whole, so nothing is left
    half-written."""
    global process
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
    process = None
