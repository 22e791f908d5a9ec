"""The repository packs, validates, installs and enables as a Blender extension.

The zip is built and validated by Blender's own extension tool (``blender_ext.py`` from the
running Blender's ``addons_core/bl_pkg/cli``, run with the same Python), then installed with
``bpy.ops.extensions.package_install_files`` into the ``user_default`` repository of the
sandboxed user resources (see conftest.py), enabled, checked and uninstalled again.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .conftest import ROOT, SANDBOX, user_resources_are_sandboxed  # noqa: E402

MANIFEST = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))
PKG_ID = MANIFEST["id"]
MODULE = f"bl_ext.user_default.{PKG_ID}"

#: What may sit at the top of the zip: the package entry point, its manifest, the two packages.
ALLOWED_TOP_LEVEL = {"blender_manifest.toml", "__init__.py", "pem_addon", "pem_physics", "LICENSE"}
REQUIRED = {"blender_manifest.toml", "__init__.py", "pem_addon/__init__.py", "pem_addon/keyframes.py",
            "pem_physics/__init__.py"}
#: Importable at runtime inside Blender: the standard library, numpy, and Blender's own modules.
NOT_SHIPPED_WITH_BLENDER = ("scipy", "matplotlib", "trimesh", "pytest", "hypothesis")


def blender_ext_tool() -> Path:
    """Path of Blender's extension command-line tool for the running Blender."""
    path = Path(bpy.utils.system_resource('SCRIPTS')) / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
    assert path.is_file(), f"Blender's extension tool is not where expected: {path}"
    return path


def run_tool(*args: str) -> subprocess.CompletedProcess:
    """Run ``blender_ext.py ARGS`` with this Python; fail the test with its output if it fails."""
    cmd = [sys.executable, str(blender_ext_tool()), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (f"{' '.join(cmd)} exited {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def built_zip(tmp_path_factory) -> Path:
    """The extension zip, built from this checkout by ``blender_ext.py build``."""
    out = tmp_path_factory.mktemp("ext-build")
    run_tool("build", "--source-dir", str(ROOT), "--output-dir", str(out))
    path = out / f"{PKG_ID}-{MANIFEST['version']}.zip"
    assert path.is_file(), f"build did not produce {path.name}; found {sorted(p.name for p in out.iterdir())}"
    return path


def test_manifest_fields():
    assert MANIFEST["schema_version"] == "1.0.0"
    assert MANIFEST["type"] == "add-on"
    assert PKG_ID.isidentifier() and "__" not in PKG_ID and not PKG_ID.startswith("_") and not PKG_ID.endswith("_")
    tagline = MANIFEST["tagline"]
    assert len(tagline) < 64 and tagline[-1].isalnum(), tagline
    assert MANIFEST["license"] == ["SPDX:GPL-3.0-or-later"]
    assert MANIFEST["blender_version_min"] == "4.2.0"
    assert "wheels" not in MANIFEST, "runtime needs numpy only, which Blender ships"


def test_source_validates():
    run_tool("validate", str(ROOT))


def test_zip_validates(built_zip):
    run_tool("validate", str(built_zip))


def test_zip_holds_the_packages_and_nothing_else(built_zip):
    with zipfile.ZipFile(built_zip) as zf:
        names = set(zf.namelist())
    top = {n.split("/", 1)[0] for n in names}
    assert top <= ALLOWED_TOP_LEVEL, f"unexpected entries in the extension zip: {sorted(top - ALLOWED_TOP_LEVEL)}"
    assert REQUIRED <= names, f"missing from the zip: {sorted(REQUIRED - names)}"
    for package in ("pem_addon", "pem_physics"):
        sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / package).rglob("*.py")
                   if "__pycache__" not in p.parts}
        assert sources <= names, f"sources left out of the zip: {sorted(sources - names)}"
    junk = sorted(n for n in names if "__pycache__" in n or n.endswith(".pyc") or ".blend" in n
                  or any(part.startswith(".") for part in n.split("/")))
    assert not junk, f"junk in the extension zip: {junk}"


def test_core_imports_with_numpy_only(built_zip, tmp_path):
    """The shipped ``pem_physics`` imports with nothing but the standard library and numpy.

    Runs in a fresh interpreter that refuses scipy, matplotlib, trimesh, … (Blender has none
    of them), with the zip's contents, not the checkout, on ``sys.path``.
    """
    with zipfile.ZipFile(built_zip) as zf:
        zf.extractall(tmp_path / PKG_ID)
    script = textwrap.dedent(f"""
        import importlib.abc, sys
        BLOCKED = {NOT_SHIPPED_WITH_BLENDER!r}
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ImportError(f"{{name}} is not available inside Blender")
                return None
        sys.meta_path.insert(0, Block())
        sys.path.insert(0, {str(tmp_path)!r})
        import {PKG_ID}.pem_physics as core
        assert core.__file__.startswith({str(tmp_path)!r}), core.__file__
        print("ok", core.__version__)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), (
        f"the shipped pem_physics does not import with numpy only:\n{proc.stdout}\n{proc.stderr}")


@pytest.fixture
def installed(built_zip):
    """Install the zip into the sandboxed ``user_default`` repository, enabled; uninstall afterwards."""
    if SANDBOX is None:
        pytest.skip("Blender's user resources are not sandboxed; run inside Blender via tests/blender_run.py")
    assert user_resources_are_sandboxed(), (
        f"refusing to install: user resources {bpy.utils.resource_path('USER')} are outside {SANDBOX}")
    repo_dir = Path(bpy.utils.user_resource('EXTENSIONS', path="user_default"))
    result = bpy.ops.extensions.package_install_files(filepath=str(built_zip), repo='user_default',
                                                      enable_on_install=True)
    assert result == {'FINISHED'}, result
    yield repo_dir / PKG_ID
    result = bpy.ops.extensions.package_uninstall(repo_directory=str(repo_dir), pkg_id=PKG_ID)
    assert result == {'FINISHED'}, result
    assert not (repo_dir / PKG_ID).exists()
    assert MODULE not in bpy.context.preferences.addons


def test_install_enables_the_addon_with_its_core(installed):
    import addon_utils

    assert installed.is_dir() and (installed / "blender_manifest.toml").is_file()
    assert addon_utils.check(MODULE) == (True, True), "the extension is not enabled after install"
    assert MODULE in bpy.context.preferences.addons

    root = sys.modules[MODULE]
    assert Path(root.__file__).parent == installed, root.__file__
    addon = importlib.import_module(f"{MODULE}.pem_addon")
    core = importlib.import_module(f"{MODULE}.pem_physics")
    assert Path(core.__file__).parent == installed / "pem_physics", "pem_physics must come from the extension"
    # pem_addon reaches the core as its sibling: `from .. import pem_physics`.
    assert importlib.import_module("..pem_physics", package=addon.__name__) is core

    # The installed add-on registered its UI and operators, and they work end to end.
    assert hasattr(bpy.types, "PEM_PT_object") and hasattr(bpy.types.Object, "pem")
    bpy.ops.mesh.primitive_cube_add(size=2.0)
    cube = bpy.context.object
    cube.pem.density = 1000.0
    assert bpy.ops.pem.compute_mass_properties() == {"FINISHED"}
    assert abs(cube.pem.computed_mass - 8000.0) < 1e-3

    # The installed keyframe writer works.
    keys = importlib.import_module(f"{MODULE}.pem_addon.keyframes")
    obj = bpy.data.objects.new("Probe", None)
    bpy.context.scene.collection.objects.link(obj)
    keys.write_transform_keys(obj, [1.0, 2.0], [[0, 0, 0], [1, 0, 0]], [[1, 0, 0, 0], [0, 1, 0, 0]])
    bpy.context.scene.frame_set(2)
    assert tuple(obj.location) == (1.0, 0.0, 0.0)
