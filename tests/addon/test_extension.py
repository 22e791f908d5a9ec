"""The repository packs, validates, installs and enables as a Blender extension.

The zips are built (one per platform, each with that platform's numba wheels: scripts/extension.py)
and validated by Blender's own extension tool (``blender_ext.py`` from the
running Blender's ``addons_core/bl_pkg/cli``, run with the same Python), then installed with
``bpy.ops.extensions.package_install_files`` into the ``user_default`` repository of the
sandboxed user resources (see conftest.py), enabled, checked and uninstalled again.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .conftest import ROOT, bake_a_pendulum, extension_script, install_extension  # noqa: E402

MANIFEST = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))
PKG_ID = MANIFEST["id"]
MODULE = f"bl_ext.user_default.{PKG_ID}"

#: What may sit at the top of the zip: the package entry point, its manifest, the two packages, wheels.
ALLOWED_TOP_LEVEL = {"blender_manifest.toml", "__init__.py", "pem_addon", "pem_physics", "LICENSE", "wheels"}
#: The zip for this machine (the tests install it).
HOST_PLATFORM = "linux-x64"
#: (wheel platform tag, Python tag) pairs the manifest ships numba + llvmlite for; zips by Blender platform below.
WHEEL_PYTHONS = {(tag, py) for tag in ("manylinux_2_28_x86_64", "macosx_12_0_arm64", "win_amd64")
                 for py in ("cp311", "cp313")} | {("win_arm64", "cp313")}
#: Blender platform → the wheel platform tag and Pythons of its zip (Intel macOS: none, the numpy engine).
ZIP_WHEELS = {"linux-x64": ("manylinux", {"cp311", "cp313"}), "macos-arm64": ("macosx_12_0_arm64", {"cp311", "cp313"}),
              "windows-x64": ("win_amd64", {"cp311", "cp313"}), "windows-arm64": ("win_arm64", {"cp313"}),
              "macos-x64": (None, set())}
REQUIRED = {"blender_manifest.toml", "__init__.py", "pem_addon/__init__.py", "pem_addon/keyframes.py",
            "pem_physics/__init__.py", "LICENSE"}
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
def built_zips(tmp_path_factory) -> dict:
    """Platform → zip, built from this checkout by ``scripts/extension.py`` (``blender_ext.py build
    --split-platforms``; the wheels are downloaded once into wheels/)."""
    out = tmp_path_factory.mktemp("ext-build")
    zips = extension_script().build(out)
    return {z.stem.rsplit("-", 1)[1].replace("_", "-"): z for z in zips}


@pytest.fixture(scope="module")
def built_zip(built_zips) -> Path:
    return built_zips[HOST_PLATFORM]


def test_manifest_fields():
    assert MANIFEST["schema_version"] == "1.0.0"
    assert MANIFEST["type"] == "add-on"
    assert PKG_ID.isidentifier() and "__" not in PKG_ID and not PKG_ID.startswith("_") and not PKG_ID.endswith("_")
    tagline = MANIFEST["tagline"]
    assert len(tagline) < 64 and tagline[-1].isalnum(), tagline
    assert MANIFEST["license"] == ["SPDX:GPL-3.0-or-later"]
    assert MANIFEST["blender_version_min"] == "4.2.0"
    assert HOST_PLATFORM in MANIFEST["platforms"]
    # numba and llvmlite, a matching pair for each platform and each of Blender's Pythons that PyPI has them for
    # (numba 0.68.1: cp311 and cp313 on linux-x64, macos-arm64, windows-x64; cp313 only on windows-arm64; none on
    # Intel macOS). Blender derives the Pythons it accepts from these wheels: both must be there.
    by_platform = {}
    for w in (Path(w).name for w in MANIFEST["wheels"]):
        name, version, python, abi, platform = w[:-4].split("-")
        assert python == abi, w
        by_platform.setdefault((platform.split(".")[-1], python), set()).add((name, version))
    assert set(by_platform) == set(WHEEL_PYTHONS), sorted(by_platform)
    assert all(pkgs == {("numba", "0.68.1"), ("llvmlite", "0.50.0")} for pkgs in by_platform.values()), by_platform
    assert MANIFEST["permissions"]["files"], "the add-on reads and writes files: it must say so"


def test_source_validates():
    extension_script().fetch_wheels()
    run_tool("validate", str(ROOT))


def test_one_zip_per_platform_with_its_own_wheels(built_zips):
    assert set(built_zips) == set(MANIFEST["platforms"]) == set(ZIP_WHEELS)
    for platform, path in built_zips.items():
        with zipfile.ZipFile(path) as zf:
            wheels = sorted(Path(n).name for n in zf.namelist() if n.endswith(".whl"))
        tag, pythons = ZIP_WHEELS[platform]
        # a numba + llvmlite pair for each Python, all for this platform
        assert len(wheels) == 2 * len(pythons), (platform, wheels)
        assert all(tag in w for w in wheels), (platform, wheels)
        assert {w.split("-")[2] for w in wheels} == pythons, (platform, wheels)
        with zipfile.ZipFile(path) as zf:
            kernels = sorted(Path(n).name for n in zf.namelist() if "/_aot/" in n)
        if platform == HOST_PLATFORM:  # the kernels built ahead of time, for each of Blender's Pythons and numpys
            # (the main build, and the lanes' for AVX2 and AVX-512: x86_64_v3, x86_64_v4), a module and its types each
            assert [k.split(".")[0].rsplit("_", 1)[0] for k in kernels] == sorted(
                f"pem_kernels_{part}cpython_{abi}" for part in ("splitting_", "pem_", "lanes_", "lanes_x86_64_v3_",
                                                                 "lanes_x86_64_v4_", "table_", "gas_")
                for abi in ("311_np1", "313_np2") for _ in range(2)), kernels
            assert {k.rsplit(".", 1)[1] for k in kernels} == {"so", "json"}, kernels
        else:                          # machine code for linux-x64 only: not carried elsewhere
            assert kernels == [], (platform, kernels)
        size_mb = path.stat().st_size / 1e6
        # the wheels are the zip (~60 MB of llvmlite per Python on Linux); our own code and kernels are under 3 MB
        # (measured 2.4, then 2.52 once the table's run left its model's module — the table modules 0.8-1.1 MB,
        # depending on the build —: 0.5 of code, the rest the twelve kernel modules, stripped; a stray file or an
        # unstripped build, 2-3x the kernels, is more)
        wheel_mb = sum((ROOT / "wheels" / w).stat().st_size for w in wheels) / 1e6
        assert size_mb < wheel_mb + 3.0, (platform, size_mb, wheel_mb)
        print(f"{platform}: {size_mb:.1f} MB, wheels {wheels}")
        run_tool("validate", str(path))


def test_a_blender_on_another_python_is_refused_with_a_clear_message(built_zip):
    """A Blender whose Python the zip has no wheels for (a future 3.14, or the long-gone 3.10) gets Blender's own
    refusal naming both Pythons we support — a message, no traceback — while 3.11 (4.2 LTS to 5.0) and 3.13
    (5.1, 5.2 LTS) are accepted. This is the check Blender's extension system makes on the zip's manifest when a
    user installs it (``bl_pkg``: the Pythons derived from the manifest's wheels, then the compatibility test)."""
    from bl_pkg.bl_extension_utils import pkg_manifest_params_compatible_or_error, python_versions_from_wheels

    with zipfile.ZipFile(built_zip) as zf:
        manifest = tomllib.loads(zf.read("blender_manifest.toml").decode("utf-8"))
    pythons = [".".join(map(str, v)) for v in sorted(python_versions_from_wheels(manifest["wheels"]))]
    assert pythons == ["3.11", "3.13"], pythons
    errors = []
    for python, ok in (((3, 11, 9), True), ((3, 13, 5), True), ((3, 14, 0), False), ((3, 10, 12), False)):
        message = pkg_manifest_params_compatible_or_error(
            blender_version_min=manifest["blender_version_min"], blender_version_max="",
            platforms=manifest["build"]["generated"]["platforms"], python_versions=pythons,
            this_platform=HOST_PLATFORM, this_blender_version=bpy.app.version, this_python_version=python,
            error_fn=errors.append)
        if ok:
            assert message is None, (python, message)
        else:
            assert message == f"This Python version ({python[0]}.{python[1]}) isn't compatible with (3.11, 3.13)"
    assert not errors, errors


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
    """The zip installed into the sandboxed ``user_default`` repository, enabled; uninstalled afterwards."""
    yield from install_extension(built_zip)


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


def _bake_a_ball_on_a_table():
    """A ball rolling on a table (Contacts: Rolling and Sliding): the surface model's own kernel."""
    bpy.ops.mesh.primitive_plane_add(size=4.0)
    table = bpy.context.object
    table.pem.enabled, table.pem.role, table.pem.wall_shape = True, "WALL", "PLANE"
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.03125, location=(2.5, 0.0, 0.03125))
    ball = bpy.context.object
    ball.pem.enabled, ball.pem.role, ball.pem.translate, ball.pem.velocity = True, "FREE", True, (1.0, 0.0, 0.0)
    ball.pem.density = 1000.0
    item = ball.pem.contacts.add()
    item.radius = 0.03125
    table.location.x = 2.5
    scene = bpy.context.scene
    scene.pem.contact_model = "SURFACE"
    for obj in bpy.data.objects:
        if obj.name.startswith("Cube"):
            obj.pem.enabled = False
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, scene.pem.status
    scene.pem.contact_model = "IMPACTS"
    return scene.pem.status


def test_installed_zip_bakes_at_once_on_its_kernels_built_ahead_of_time(installed):
    """On linux-x64 the zip carries the kernels built ahead of time for this Blender's Python and numpy: the first
    bake in a fresh user folder runs on them — no compile, nothing in numba's cache — and the panel says so; a body
    on a table too (the surface model's kernel is in the build)."""
    status = bake_a_pendulum()
    assert "compiled engine (built ahead of time)" in status and "compiling" not in status, status
    status = _bake_a_ball_on_a_table()
    assert "compiled engine (built ahead of time)" in status and "compiling" not in status, status
    aot = importlib.import_module(f"{MODULE}.pem_physics.aot")
    build = aot.load()
    assert build is not None and set(build.paths) == set(aot.PARTS), build
    assert {p.parent for p in build.paths.values()} == {installed / "pem_physics" / "_aot"}, build
    # an ensemble's: the widest this CPU runs
    lanes = importlib.import_module(f"{MODULE}.pem_physics.engine.backends.lanes")
    runs = [v for v in aot.variants() if aot.cpu_runs(v)]
    got = lanes.build().paths["lanes"]
    assert got.name.startswith(aot.module_name("lanes", runs[0] if runs else "") + "."), got
    cache = Path(bpy.utils.extension_path_user(MODULE, path="numba_cache"))
    assert not any(cache.rglob("*.nbi")), "the bake compiled with numba although the zip carries its kernels"
