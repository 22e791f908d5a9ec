"""Fixtures for the tests that need Blender (the ``bpy`` wheel, or Blender itself via tests/blender_run.py).

- Every test module here skips itself (``pytest.importorskip("bpy")``) where ``bpy`` is not
  installed (the plain numpy environment); this conftest then imports nothing from Blender.
- Blender's user resources (preferences, extension repositories) are redirected to a temporary
  directory for the session *before* ``bpy`` is imported, so installing the extension never
  touches the real user profile. Inside a running Blender ``bpy`` is already imported; then the
  sandbox is whatever ``tests/blender_run.py`` set up, and :data:`SANDBOX` is ``None`` if it was
  not (the install test then refuses to run).
- ``factory_reset`` (autouse) gives every test an empty factory-settings file.
- ``ext`` imports the repository root as a package under an alias, exactly as Blender imports
  an installed extension, so ``pem_addon``'s relative imports (``from .. import pem_physics``)
  resolve to this checkout's ``pem_physics``.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Environment variable naming the sandbox directory for Blender's user resources; set here (plain
#: Python) or by tests/blender_run.py (inside Blender) together with BLENDER_USER_RESOURCES.
SANDBOX_ENV = "PEM_TEST_USER_RESOURCES"

#: Name the repository root is imported under in these tests (Blender uses bl_ext.<repo>.<id>).
EXT_ALIAS = "pem_ext_under_test"


#: False in environments without Blender's Python module; every test module here then skips itself
#: with ``pytest.importorskip("bpy")`` (a skip raised in a conftest would be a collection error).
HAVE_BPY = "bpy" in sys.modules or importlib.util.find_spec("bpy") is not None


def _sandbox_user_resources() -> Path | None:
    """Point Blender's user resources at a fresh temporary directory, before bpy is imported.

    Returns the directory, or ``None`` if ``bpy`` was imported already (running inside Blender)
    and no sandbox was prepared by tests/blender_run.py.
    """
    if "bpy" in sys.modules:
        prepared = os.environ.get(SANDBOX_ENV)
        return Path(prepared) if prepared else None
    path = Path(tempfile.mkdtemp(prefix="pem-blender-user-"))
    os.environ["BLENDER_USER_RESOURCES"] = str(path)
    os.environ[SANDBOX_ENV] = str(path)
    atexit.register(shutil.rmtree, path)  # runs after bpy's own exit handlers (registered later)
    return path


if HAVE_BPY:
    SANDBOX = _sandbox_user_resources()
    import bpy
else:
    SANDBOX = None
    bpy = None


def user_resources_are_sandboxed() -> bool:
    """True if Blender's USER resource path lies inside :data:`SANDBOX`."""
    if SANDBOX is None:
        return False
    user = Path(bpy.utils.resource_path('USER')).resolve()
    return user == SANDBOX.resolve() or SANDBOX.resolve() in user.parents


class _CoreUnderAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``<alias>.pem_physics[.…]`` → the very module objects of the top-level ``pem_physics[.…]``.

    numba keys its compile cache on the name a package is imported under (:data:`pem_physics.jit.PACKAGE`): under a
    name of its own the add-on's core would compile every kernel the core's tests of the same run had compiled
    (minutes: the table's kernel alone ~100 s). The add-on's own modules keep the alias; Blender's own naming
    (``bl_ext.<repo>.<id>.pem_physics``) is what the installed zip's tests (test_extension.py) import.
    """

    def __init__(self, alias: str):
        self.prefix = alias + ".pem_physics"
        self._real_spec: dict = {}

    def find_spec(self, name, path=None, target=None):
        if name == self.prefix or name.startswith(self.prefix + "."):
            real = importlib.util.find_spec("pem_physics" + name[len(self.prefix):])
            if real is None:
                return None
            return importlib.machinery.ModuleSpec(name, self, is_package=real.submodule_search_locations is not None)
        return None

    def create_module(self, spec):
        module = importlib.import_module("pem_physics" + spec.name[len(self.prefix):])
        self._real_spec[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # the import system gave the module this alias's spec: give it back its own (its __package__ and relative
        # imports go by it)
        module.__spec__ = self._real_spec.pop(module.__spec__.name)


def import_repo_as_extension(alias: str = EXT_ALIAS):
    """Import the repository root as package ``alias`` (root ``__init__.py``, search path = root).

    This mirrors how Blender imports an installed extension (``bl_ext.user_default.<id>``): the
    root is a package, ``pem_addon`` and ``pem_physics`` are its subpackages; ``<alias>.pem_physics`` is the
    top-level ``pem_physics`` itself (:class:`_CoreUnderAlias`), so the add-on bakes on the kernels the core's tests
    compiled.
    """
    if alias in sys.modules:
        return sys.modules[alias]
    sys.meta_path.insert(0, _CoreUnderAlias(alias))
    spec = importlib.util.spec_from_file_location(alias, ROOT / "__init__.py", submodule_search_locations=[str(ROOT)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[alias] = module
    spec.loader.exec_module(module)
    return module


#: Modules of ours as Blender sees them: this checkout imported as an extension, or the installed zip.
OUR_MODULES = rf"({EXT_ALIAS}|pem_physics|bl_ext\.[^.]+\.pem_physics_pendulum)(\.|$)"


def pytest_configure(config):
    """Our own DeprecationWarnings are errors; short tracebacks unless ``--tb`` was given.

    A deprecated Blender API called from our code (``Material.use_nodes`` under 5.x, say) warns with the
    calling module's name: such a warning fails the test under every Blender version we test, while
    deprecations inside Blender, numpy or matplotlib stay warnings.

    Pytest's default ("auto"/"long") style prints ``repr()`` of every argument of the failing
    frame. When a bake fails, those arguments can be Blender structs (F-Curves, channelbags) of an
    action that the rollback has already deleted, and ``repr()`` of freed Blender memory
    segfaults the interpreter, losing the whole report. The short style prints no arguments.
    """
    if config.option.tbstyle == "auto":
        config.option.tbstyle = "short"
    config.addinivalue_line("filterwarnings", f"error::DeprecationWarning:{OUR_MODULES}")


def extension_script():
    """scripts/extension.py as a module (it builds the extension's zips)."""
    spec = importlib.util.spec_from_file_location("pem_extension_script", ROOT / "scripts" / "extension.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def install_extension(zip_path: Path):
    """Install ``zip_path`` into the sandboxed ``user_default`` repository, enabled, yield its folder; uninstall
    afterwards (a fixture's body: ``yield from install_extension(zip)``)."""
    import tomllib

    if SANDBOX is None:
        pytest.skip("Blender's user resources are not sandboxed; run inside Blender via tests/blender_run.py")
    assert user_resources_are_sandboxed(), (
        f"refusing to install: user resources {bpy.utils.resource_path('USER')} are outside {SANDBOX}")
    pkg_id = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))["id"]
    repo_dir = Path(bpy.utils.user_resource('EXTENSIONS', path="user_default"))
    result = bpy.ops.extensions.package_install_files(filepath=str(zip_path), repo='user_default',
                                                      enable_on_install=True)
    assert result == {'FINISHED'}, result
    yield repo_dir / pkg_id
    result = bpy.ops.extensions.package_uninstall(repo_directory=str(repo_dir), pkg_id=pkg_id)
    assert result == {'FINISHED'}, result
    assert not (repo_dir / pkg_id).exists()
    assert f"bl_ext.user_default.{pkg_id}" not in bpy.context.preferences.addons


def bake_a_pendulum() -> str:
    """Bake a cube swinging on an empty (frames 1–25); the scene's bake status."""
    pivot = bpy.data.objects.new("Pivot", None)
    bpy.context.scene.collection.objects.link(pivot)
    bpy.ops.mesh.primitive_cube_add(size=0.1, location=(0, 0, -0.3))
    cube = bpy.context.object
    cube.pem.enabled = True
    cube.pem.pivot_object = pivot
    cube.pem.density = 1000.0
    cube.pem.angular_velocity = (0.0, 2.0, 0.0)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 25
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    return bpy.context.scene.pem.status


@pytest.fixture(scope="session")
def ext():
    """The repository root imported as an extension package (see :func:`import_repo_as_extension`)."""
    return import_repo_as_extension()


@pytest.fixture(scope="session")
def addon(ext):
    """The ``pem_addon`` package of this checkout, imported as a subpackage of :func:`ext`."""
    return importlib.import_module(f"{ext.__name__}.pem_addon")


@pytest.fixture(scope="session")
def keyframes(addon):
    """``pem_addon.keyframes`` of this checkout."""
    return importlib.import_module(f"{addon.__name__}.keyframes")


@pytest.fixture(autouse=True)
def factory_reset():
    """Start every test from an empty factory-settings file (as MolecularNodes' tests do)."""
    if HAVE_BPY:
        bpy.ops.wm.read_factory_settings(use_empty=True)
    yield


@pytest.fixture
def scene():
    """The current (empty) scene."""
    return bpy.context.scene
