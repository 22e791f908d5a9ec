"""Optional numba, imported once, with its compile cache in a folder the user can write.

Nothing in the core needs numba: without it (Blender's Python, a plain numpy install, or
``PEM_NUMBA=0`` in the environment) every compiled kernel has a numpy counterpart that runs
instead. With it, kernels are compiled on first use and cached on disk, so later processes load
them instead of compiling again. The cache folder is, in this order: ``NUMBA_CACHE_DIR`` (numba's
own variable), what :func:`set_cache_dir` was given (the Blender add-on passes its extension's user
folder), ``$XDG_CACHE_HOME/pem_physics/numba`` or ``~/.cache/pem_physics/numba``
(``%LOCALAPPDATA%\\pem_physics\\numba`` on Windows) — each with a subfolder named for the
package's import name (see :data:`PACKAGE`).
"""

from __future__ import annotations

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
        _state["numba"] = nb
    return _state["numba"]


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
