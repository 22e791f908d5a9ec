"""`pem build-engine` when it cannot finish (issue 46): no C compiler, or Ctrl-C — one clear line, nothing
half-built left in the folder, and the package still runs on numba's JIT; and a store two checkouts share."""

from __future__ import annotations

import pytest

from pem_physics import aot
from pem_physics.cli import main
from pem_physics.engine.backends import compiled, prebuild
from pem_physics.errors import PemError

pytestmark = pytest.mark.skipif(not compiled.available(), reason="numba is not installed")


def test_no_c_compiler_is_said_and_leaves_nothing(tmp_path, monkeypatch):
    def no_compiler(name):
        raise RuntimeError("could not find a C compiler (distutils: unable to find vcvarsall / cc)")

    monkeypatch.setattr(aot, "compiler_class", lambda: no_compiler)
    with pytest.raises(PemError, match=r"needs a C compiler .* works without the build: runs keep using numba's JIT"):
        aot.build("lanes", prebuild.probes("lanes"), tmp_path, force=True, log=lambda *a: None)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".build-")]


def test_no_setuptools_is_said(monkeypatch):
    """numba's pycc imports setuptools, which a venv need not have: named, with the fix (it was a traceback)."""
    import builtins

    real = builtins.__import__

    def without_pycc(name, *a, **k):
        if name.startswith("numba.pycc"):
            raise ImportError("The 'setuptools' package is required at runtime for pycc support.")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", without_pycc)
    with pytest.raises(PemError, match=r"cannot be loaded .*setuptools.*: install setuptools .* works without the "
                                       r"build"):
        aot.compiler_class()


def test_ctrl_c_while_building_leaves_nothing_and_ends_in_one_line(tmp_path, monkeypatch, capsys):
    class Interrupted:     # a kernel whose compile is interrupted
        def compile(self, types):
            raise KeyboardInterrupt

    class Compiler:        # the kernels' compile is interrupted before pycc does anything
        def __init__(self, name):
            pass

    monkeypatch.setattr(aot, "compiler_class", lambda: Compiler)
    probes = [(kind, Interrupted(), args) for kind, _, args in prebuild.probes("lanes")]
    with pytest.raises(KeyboardInterrupt):
        aot.build("lanes", probes, tmp_path, force=True, log=lambda *a: None)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".build-")]
    monkeypatch.setattr(prebuild, "build", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert main(["build-engine"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("build-engine interrupted: nothing half-built was left") and "Traceback" not in err


def test_a_damaged_build_is_said_not_skipped_silently(tmp_path, monkeypatch):
    """A build file that does not load (cut short, another ABI) falls back to numba's JIT, minutes of compiling:
    a warning names the file and the fix."""
    import importlib.machinery

    monkeypatch.setattr(aot, "enabled", lambda: True)
    name = aot.module_name("splitting")
    (tmp_path / (name + importlib.machinery.EXTENSION_SUFFIXES[0])).write_bytes(b"\x7fELF cut short")
    (tmp_path / (name + ".json")).write_text('{"specs": {}}')
    with pytest.warns(RuntimeWarning, match=r"could not be loaded .* numba's JIT compiles them instead .*"
                                             r"`pem build-engine --force`"):
        assert aot.load(tmp_path) is None


def test_a_build_leaves_another_checkouts_build_alone_until_it_is_old(tmp_path):
    """Two checkouts sharing a store (a dev tree beside an installed copy, two test runs) build different keys of
    one part: a build removes the other's only once it is older than KEEP_DAYS — removed at once, it was pulled
    from under the other's copy (a FileNotFoundError seen when two test runs shared the store)."""
    import os
    import time

    from pem_physics.jit import KEEP_DAYS

    name = aot.module_name("gas")
    other = {s: tmp_path / (name.replace(aot.key(), "0123456789abcdef") + s) for s in (".so", ".json")}
    old = {s: tmp_path / (name.replace(aot.key(), "fedcba9876543210") + s) for s in (".so", ".json")}
    for p in [*other.values(), *old.values()]:
        p.write_text("a build")
    for p in old.values():
        then = time.time() - (KEEP_DAYS + 1) * 86400
        os.utime(p, (then, then))
    aot._prune(tmp_path, name)
    assert all(p.is_file() for p in other.values())
    assert not any(p.exists() for p in old.values()) or os.name == "nt"
