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
import subprocess
import sys
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


def build(out: Path) -> list[Path]:
    """Fetch the wheels, build one zip per platform into ``out``; return the zips."""
    fetch_wheels()
    out.mkdir(parents=True, exist_ok=True)
    m = manifest()
    for old in out.glob(f"{m['id']}-{m['version']}-*.zip"):
        old.unlink()
    subprocess.run([sys.executable, str(blender_ext_tool()), "build", "--split-platforms", "--source-dir", str(ROOT),
                    "--output-dir", str(out)], check=True, stdout=subprocess.DEVNULL)
    zips = sorted(out.glob(f"{m['id']}-{m['version']}-*.zip"))
    if len(zips) != len(m["platforms"]):
        raise SystemExit(f"expected one zip per platform {m['platforms']}, got {[z.name for z in zips]}")
    return zips


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "dist"), help="output folder (default dist/)")
    ap.add_argument("--fetch-only", action="store_true", help="only download the wheels")
    args = ap.parse_args(argv)
    if args.fetch_only:
        for p in fetch_wheels():
            print(p)
        return 0
    for z in build(Path(args.out)):
        with zipfile.ZipFile(z) as zf:
            wheels = sorted(Path(n).name for n in zf.namelist() if n.endswith(".whl"))
        print(f"{z}  ({z.stat().st_size / 1e6:.1f} MB; wheels: {', '.join(wheels) or 'none (numpy engine)'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
