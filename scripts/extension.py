"""Build the Blender extension: one zip per platform, each with the numba wheels for that platform.

    python scripts/extension.py [--out DIR] [--fetch-only]

Run it with a Python that has the ``bpy`` wheel (``scripts/extension.sh`` uses .venvs/bpy52): the
build is Blender's own ``blender_ext.py build --split-platforms``. The wheels that
``blender_manifest.toml`` lists (numba and llvmlite for Blender's Pythons 3.11 and 3.13) are downloaded
from PyPI into ``wheels/`` first when missing (pinned by file name; not kept in git). Each zip carries
its platform's wheels for both Pythons where numba has them; Blender installs the pair for its own.
Intel macOS (no numba wheel) gets a zip without wheels, Windows on ARM only the 3.13 pair: those
Blenders bake with the numpy engine, as the panel says.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "blender_manifest.toml"


def manifest() -> dict:
    return tomllib.loads(MANIFEST.read_text(encoding="utf-8"))


def fetch_wheels() -> list[Path]:
    """Download every wheel the manifest lists that is not in ``wheels/`` yet; return their paths."""
    paths = []
    for rel in manifest().get("wheels", []):
        path = (ROOT / rel).resolve()
        paths.append(path)
        if path.is_file():
            continue
        name, version, python, abi, platform = path.name[:-4].split("-")
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
               "--only-binary", ":all:", "--python-version", python.removeprefix("cp")[0] + "."
               + python.removeprefix("cp")[1:], "--abi", abi, "--platform", platform.split(".")[0],
               "--dest", str(path.parent), f"{name}=={version}"]
        subprocess.run(cmd, check=True)
        if not path.is_file():
            raise SystemExit(f"pip did not produce {path.name} (got {sorted(p.name for p in path.parent.iterdir())})")
    return paths


def blender_ext_tool() -> Path:
    import bpy

    path = Path(bpy.utils.system_resource("SCRIPTS")) / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
    if not path.is_file():
        raise SystemExit(f"Blender's extension tool is not where expected: {path}")
    return path


#: The ahead-of-time kernels each zip carries (pem_physics/_aot, :mod:`pem_physics.aot`): one build
#: per Python and numpy Blender bundles, each made with a venv of that Python (requirements/aot3*.txt).
AOT_BUILDS = (("aot311", "Blender 4.2 LTS – 5.0: Python 3.11, numpy 1"),
              ("aot313", "Blender 5.1+: Python 3.13, numpy 2"))
#: The Python of each of :data:`AOT_BUILDS`, as ``--python`` names it.
AOT_PYTHONS = {"3.11": "aot311", "3.13": "aot313"}
#: Only builds for the machine running this script can be made (numba compiles for the host's platform).
AOT_HOST = ("linux", "x86_64")



def build_aot(where: Path, log=print, pythons=None) -> list[Path]:
    """Compile the kernels ahead of time (:mod:`pem_physics.engine.backends.prebuild`: the single-scene kernels, the 3D
    gas engine and the ensembles' lanes, these also for AVX2 and AVX-512) for each of :data:`AOT_BUILDS`, both at once,
    compiled once per machine (:func:`pem_physics.aot.store`, keyed on the kernels' source, Python and
    numpy) and copied into ``where`` (a staged copy's
    ``pem_physics/_aot``), so a first bake or gas build in Blender needs no compile. Needs a C compiler; on
    another host, or without one, the zips ship without and Blender compiles on first use, as before. ``pythons``:
    only these of :data:`AOT_PYTHONS` (the demo's zip, for its one Blender)."""
    import platform

    if (sys.platform, platform.machine()) != AOT_HOST:
        log(f"ahead-of-time kernels: not built on {sys.platform}/{platform.machine()} (only {'/'.join(AOT_HOST)})")
        return []
    env = {k: v for k, v in os.environ.items() if k not in ("PEM_AOT_DIR", "PEM_AOT", "PEM_NUMBA")}
    where.mkdir(parents=True, exist_ok=True)
    runs = []
    for name, what in AOT_BUILDS:
        if pythons is not None and name not in {AOT_PYTHONS[p] for p in pythons}:
            continue
        venv = ["bash", str(ROOT / "scripts" / "venv.sh"), name, str(ROOT / "requirements" / f"{name}.txt")]
        py = subprocess.run(venv, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        runs.append((what, subprocess.Popen(
            [py, "-c", "import sys; from pem_physics.engine.backends import prebuild; "
             "print(*prebuild.build(sys.argv[1], log=lambda *a: None), sep='\\n')", str(where)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    out = []
    for what, proc in runs:
        stdout, stderr = proc.communicate()
        if proc.returncode != 0:
            log(f"ahead-of-time kernels for {what}: not built ({(stderr.strip().splitlines() or ['?'])[-1]})")
            continue
        built = [Path(line) for line in stdout.strip().splitlines()]  # the main build, then the lanes' variants
        out += built
        log(f"ahead-of-time kernels for {what}: {', '.join(so.name for so in built)}")
    return out


#: What the staged copy leaves out (besides what the manifest excludes): local environments and outputs.
_NOT_STAGED = shutil.ignore_patterns(".git", ".venvs", "dist", "out", "build", "wheels", "_aot", "__pycache__",
                                     ".hypothesis", ".pytest_cache", ".ruff_cache")


def build(out: Path, log=print, pythons=None) -> list[Path]:
    """Fetch the wheels, stage a copy of the source with the ahead-of-time kernels built into it
    (:func:`build_aot`, for ``pythons`` only where given; the checkout itself gets no build products), then one zip
    per platform into ``out``; return the zips."""
    fetch_wheels()
    out.mkdir(parents=True, exist_ok=True)
    m = manifest()
    for old in out.glob(f"{m['id']}-{m['version']}-*.zip"):
        old.unlink()
    (ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="extension-", dir=ROOT / "build") as tmp:
        stage = Path(tmp) / "src"
        shutil.copytree(ROOT, stage, ignore=_NOT_STAGED)
        shutil.copytree(ROOT / "wheels", stage / "wheels", copy_function=_link_or_copy)
        build_aot(stage / "pem_physics" / "_aot", log, pythons)
        subprocess.run([sys.executable, str(blender_ext_tool()), "build", "--split-platforms", "--source-dir",
                        str(stage), "--output-dir", str(out)], check=True, stdout=subprocess.DEVNULL)
    zips = sorted(out.glob(f"{m['id']}-{m['version']}-*.zip"))
    if len(zips) != len(m["platforms"]):
        raise SystemExit(f"expected one zip per platform {m['platforms']}, got {[z.name for z in zips]}")
    for z in zips:  # the kernels are machine code for AOT_HOST: the other platforms' zips leave them out
        if not z.stem.endswith(AOT_PLATFORM):
            _drop(z, "pem_physics/_aot/")
    return zips


#: The Blender platform of :data:`AOT_HOST` (the zip name's suffix).
AOT_PLATFORM = "linux_x64"


def host_platform() -> str:
    """The Blender platform of this machine (``linux-x64``, ``macos-arm64``, ``windows-x64``, …): its zip's suffix."""
    import platform

    os_name = {"linux": "linux", "darwin": "macos", "win32": "windows"}[sys.platform]
    machine = platform.machine().lower()
    return f"{os_name}-{'arm64' if machine in ('arm64', 'aarch64') else 'x64'}"


def _drop(zip_path: Path, prefix: str) -> None:
    """Rewrite a zip without the entries under ``prefix`` (written beside it, then moved over it)."""
    tmp = zip_path.with_suffix(".tmp")
    with zipfile.ZipFile(zip_path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if not info.filename.startswith(prefix):
                dst.writestr(info, src.read(info))
    os.replace(tmp, zip_path)


def _link_or_copy(src, dst):
    """A hard link (the wheels are large; the staged copy lives beside them), or a copy across file systems."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "dist"), help="output folder (default dist/)")
    ap.add_argument("--fetch-only", action="store_true", help="only download the wheels")
    ap.add_argument("--python", action="append", choices=sorted(AOT_PYTHONS),
                    help="build the kernels ahead of time for this Blender Python only (repeatable; default: all)")
    args = ap.parse_args(argv)
    if args.fetch_only:
        for p in fetch_wheels():
            print(p)
        return 0
    for z in build(Path(args.out), pythons=args.python):
        with zipfile.ZipFile(z) as zf:
            wheels = sorted(Path(n).name for n in zf.namelist() if n.endswith(".whl"))
            kernels = sorted(Path(n).name.split(".")[0] for n in zf.namelist() if "/_aot/" in n and n.endswith(".json"))
        print(f"{z}  ({z.stat().st_size / 1e6:.1f} MB; wheels: {', '.join(wheels) or 'none (numpy engine)'}; "
              f"ahead-of-time kernels: {', '.join(kernels) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
