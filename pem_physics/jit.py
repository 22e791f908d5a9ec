"""Optional numba, imported once, with its compile cache in a folder the user can write.

Nothing in the core needs numba: without it (Blender's Python, a plain numpy install, or
``PEM_NUMBA=0`` in the environment) every compiled kernel has a numpy counterpart that runs
instead. With it, kernels are compiled on first use and cached on disk, so later processes load
them instead of compiling again. The cache folder is, in this order: ``NUMBA_CACHE_DIR`` (numba's
own variable), what :func:`set_cache_dir` was given (the Blender add-on passes its extension's user
folder), ``$XDG_CACHE_HOME/pem_physics/numba`` or ``~/.cache/pem_physics/numba``
(``%LOCALAPPDATA%\\pem_physics\\numba`` on Windows) — each with a subfolder named for the
package's import name (see :data:`PACKAGE`).

Inside that folder numba's cache is keyed on where a file lies *in the package* and on the content of every
source compiled code can read (:func:`sources_digest`), not on the file's absolute path: a fresh clone, the test
command's copy of the checkout or a reinstall on the same machine load what an earlier one compiled, and an edit
of any kernel source — a callee in another file too, which numba's own keys miss — compiles afresh.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

_state: dict = {}


def default_cache_dir() -> Path:
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "pem_physics" / "numba"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pem_physics" / "numba"


def set_cache_dir(path: str | os.PathLike) -> None:
    """Where compiled kernels are cached; call before the first kernel module is imported."""
    _state["cache_dir"] = Path(path)
    nb = _state.get("numba")
    if nb is not None:
        nb.config.CACHE_DIR = str(cache_dir())


#: The name this package was imported under (``pem_physics``, or e.g. ``bl_ext.user_default.<id>.pem_physics``
#: inside Blender). numba keys its cache by source file but pickles module names into it, so the same
#: files imported under two names must not share a cache folder (loading the other's index fails).
PACKAGE = __name__.rpartition(".")[0]


def cache_dir() -> Path:
    env = os.environ.get("NUMBA_CACHE_DIR")
    base = Path(env) if env else _state.get("cache_dir") or default_cache_dir()
    return base / PACKAGE


def numba():
    """The numba module, or None when it is not installed or ``PEM_NUMBA=0`` turns it off."""
    if "numba" not in _state:
        nb = None
        if os.environ.get("PEM_NUMBA", "1") != "0":
            if "numba" not in sys.modules:
                # LLVM -O2 instead of numba's default -O3: the kernels run as fast here (bench/bench_engine.py)
                # and the first compile takes ~10 % less; NUMBA_OPT set by the user wins
                os.environ.setdefault("NUMBA_OPT", "2")
            try:
                import numba as nb
            except ImportError:  # optional dependency: the numpy paths run instead
                nb = None
        if nb is not None:
            # The cache locator is chosen when a cached function is defined, so this must happen
            # before any kernel module is imported (they all import numba through here).
            nb.config.CACHE_DIR = str(cache_dir())
            _use_package_locator(nb)
        _state["numba"] = nb
    return _state["numba"]


#: The package's root folder (this file's); :func:`sources_digest` and the cache locator are relative to it.
ROOT = Path(__file__).resolve().parent
#: What compiled code can read (relative to :data:`ROOT`): the modules numba compiles functions of and every module
#: they import at their top, transitively — the key of every cached kernel. The rest (the numpy references, the
#: drivers between kernel calls, the command line, file formats) can change without a compile.
#: ``tests/engine/test_compiled_sources.py`` derives this list from the code and holds it equal.
COMPILED_SOURCES = (
    "errors.py", "jit.py", "ryu.py",
    "engine/brent.py", "engine/broad_kernels.py", "engine/dipole_pair.py", "engine/impact_kernels.py",
    "engine/kernel_flags.py", "engine/orthonormal.py", "engine/backends/kernels.py", "engine/backends/lanes_kernels.py",
    "engine/backends/lanes_layout.py",
    "engine/pairs.py", "engine/step_kernels.py", "engine/torque_kernels.py",
    "engine/contact/surface_kernels.py", "engine/contact/surface_layout.py", "engine/contact/surface_run_kernels.py",
    "engine/contact/surface_several_kernels.py",
    "gas/edmd.py", "gas/edmd_kernels.py", "gas/reference.py", "gas/state.py", "gas/timestep.py",
    "model/analytic.py", "model/fastmesh_kernels.py", "model/motion.py", "model/rotations.py", "model/validate.py",
)


@functools.cache
def sources_digest(root: Path = ROOT) -> str:
    """SHA-256 of :data:`COMPILED_SOURCES` under ``root`` (file names and contents, in a fixed order): the stamp of
    every cached kernel, so a change anywhere a kernel can reach invalidates them all."""
    import hashlib

    h = hashlib.sha256()
    for name in COMPILED_SOURCES:
        h.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return h.hexdigest()


def _use_package_locator(nb) -> None:
    """Put :class:`PackageLocator` first among numba's cache locators (files outside the package fall through to
    numba's own), and remove the caches of sources not used for :data:`KEEP_DAYS` days."""
    from numba.core import caching

    global PackageLocator
    if "PackageLocator" not in globals():
        class PackageLocator(caching.UserProvidedCacheLocator):
            """numba's cache locator for this package's files: the folder ``<CACHE_DIR>/<digest>/<their folder in
            the package>`` (``engine_contact``), the stamp :func:`sources_digest`. The digest is in the path, not
            only in the stamp, so two versions of the sources (a test's planted bug) never share a file."""

            def __init__(self, py_func, py_file):
                super().__init__(py_func, py_file)
                rel = Path(py_file).resolve().parent.relative_to(ROOT)
                folder = "_".join(("pkg",) + rel.parts)
                self._cache_path = os.path.join(nb.config.CACHE_DIR, sources_digest()[:16], folder)

            def get_source_stamp(self):
                return sources_digest()

            @classmethod
            def from_function(cls, py_func, py_file):
                if not Path(py_file).resolve().is_relative_to(ROOT):
                    return None
                return super().from_function(py_func, py_file)

    impl = caching._CacheImpl if hasattr(caching, "_CacheImpl") else caching.CacheImpl
    if PackageLocator not in impl._locator_classes:
        impl._locator_classes.insert(0, PackageLocator)
        _prune(Path(nb.config.CACHE_DIR))


#: Caches of other sources (a digest folder) not used for this many days are removed.
KEEP_DAYS = 14


def _prune(base: Path) -> None:
    """Mark this digest's cache as used today, and remove other digests' caches unused for :data:`KEEP_DAYS`."""
    import shutil
    import time

    mine = sources_digest()[:16]
    try:
        (base / mine).mkdir(parents=True, exist_ok=True)
        (base / mine / "used").touch()
        for other in base.iterdir():
            used = other / "used"
            if other.name != mine and used.is_file() and time.time() - used.stat().st_mtime > KEEP_DAYS * 86400:
                shutil.rmtree(other, ignore_errors=True)
    except OSError:  # a read-only or vanished cache folder: numba then compiles without caching, as before
        pass


def installed() -> bool:
    """Whether numba can be imported (without importing it: cheap enough for a UI redraw)."""
    if "numba" in _state:
        return _state["numba"] is not None
    if os.environ.get("PEM_NUMBA", "1") == "0":
        return False
    import importlib.util

    return importlib.util.find_spec("numba") is not None


def unavailable_reason() -> str | None:
    """Why compiled kernels are off (for messages), or None when numba is in use."""
    if numba() is not None:
        return None
    if os.environ.get("PEM_NUMBA", "1") == "0":
        return "turned off by PEM_NUMBA=0"
    return "numba is not installed"
