"""The files a compiled kernel can read — the key of numba's cache (:data:`pem_physics.jit.COMPILED_SOURCES`) and of
the build made ahead of time (:data:`pem_physics.aot.SOURCES`) — derived here from the code itself.

Compiled code reads the globals of the module its Python function was written in, and through them whatever that
module imports at its top, transitively. The list must hold every such file (else an edit leaves a stale kernel that
runs the old formula without a word) and nothing else (else an edit of a numpy reference or of the command line
recompiles every kernel: minutes).
"""

from __future__ import annotations

import ast
import importlib
import shutil
from pathlib import Path

import pytest

from conftest import ROOT

pytest.importorskip("numba")

from numba.core.dispatcher import Dispatcher  # noqa: E402

from pem_physics import (
    aot,  # noqa: E402
    jit,  # noqa: E402
)

PKG = ROOT / "pem_physics"


def module_of(path: Path) -> str:
    parts = ("pem_physics",) + path.relative_to(PKG).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_of(p): p for p in sorted(PKG.rglob("*.py"))}


def package_files(mod: str) -> set:
    """Every module of package ``mod`` (a bound package object reaches all its submodules)."""
    return {m for m in MODULES if m == mod or m.startswith(mod + ".")}


def top_level_imports(mod: str) -> set:
    """The package's modules ``mod`` binds at import: its top-level imports (inside ``try``/``if`` too), each
    ``from x import name`` resolved to the submodule ``x.name`` when there is one, else to ``x``."""
    path = MODULES[mod]
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = set()
    body = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while body:
        node = body.pop()
        if isinstance(node, (ast.Try, ast.If)):
            body += node.body + node.orelse + [s for h in getattr(node, "handlers", []) for s in h.body]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
            out |= {n for n in names if n in MODULES}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                out |= package_files(sub) if sub in MODULES else ({base} if base in MODULES else set())
    return {m for b in out for m in (package_files(b) if MODULES[b].name == "__init__.py" else {b})}


def kernel_modules() -> set:
    """The modules whose Python functions numba compiles: every dispatcher found on any module of the package."""
    found = set()
    for mod in MODULES:
        if mod.endswith("__main__"):
            continue
        for value in vars(importlib.import_module(mod)).values():
            if isinstance(value, Dispatcher) and value.py_func.__module__.startswith("pem_physics"):
                found.add(value.py_func.__module__)
    return found


def readable() -> set:
    """Files (relative to the package) compiled code can read: the kernel modules and their imports' closure."""
    seen, todo = set(), list(kernel_modules())
    while todo:
        mod = todo.pop()
        if mod not in seen:
            seen.add(mod)
            todo += top_level_imports(mod)
    return {MODULES[m].relative_to(PKG).as_posix() for m in seen}


@pytest.fixture(scope="module")
def files():
    return readable()


def test_the_kernels_key_holds_exactly_what_compiled_code_reads(files):
    assert {"engine/dipole_pair.py", "engine/brent.py", "engine/torque_kernels.py", "ryu.py"} <= files
    listed = set(jit.COMPILED_SOURCES)
    assert not files - listed, f"compiled code reads {sorted(files - listed)}: add them to jit.COMPILED_SOURCES"
    assert not listed - files, f"no kernel reads {sorted(listed - files)}: take them out of jit.COMPILED_SOURCES"
    assert all((PKG / f).is_file() for f in listed)


def test_the_build_made_ahead_of_time_is_keyed_on_them_too(files):
    missing = files - set(aot.SOURCES)
    assert not missing, f"aot.SOURCES lacks {sorted(missing)}: an edit there would leave a stale build loaded"


def test_an_edit_a_kernel_reads_changes_the_digest_and_others_do_not(tmp_path):
    copy = tmp_path / "pem_physics"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = jit.sources_digest(copy)
    assert before == jit.sources_digest(PKG)
    with open(copy / "engine" / "simulate.py", "a") as f:  # orchestration: no kernel reads it
        f.write("\n# an edit\n")
    with open(copy / "engine" / "contact" / "surface_several.py", "a") as f:  # a numpy reference
        f.write("\n# an edit\n")
    jit.sources_digest.cache_clear()
    assert jit.sources_digest(copy) == before
    text = (copy / "engine" / "dipole_pair.py").read_text(encoding="utf-8")
    (copy / "engine" / "dipole_pair.py").write_text(text.replace("3.0", "3.0000001", 1), encoding="utf-8")
    jit.sources_digest.cache_clear()
    assert jit.sources_digest(copy) != before
