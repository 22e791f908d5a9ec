"""The extension in each supported Blender, as a user meets it: install, first bake, a new session, a warm bake.

    python bench/bench_blender.py [--versions 4.2,4.5,5.0,5.2] [--json OUT]

For each Blender (the bpy wheels in .venvs/bpy42, bpy45, bpy50, bpy52: venvs without numba, made by
scripts/venv.sh), the linux-x64 zip built from this checkout (scripts/extension.py) is installed into a fresh
user folder (``BLENDER_USER_RESOURCES``) and enabled; its compiled engine is the kernels it carries built ahead
of time (scripts/extension.py), else the numba from its own wheels.
Measured, whole operator calls seen from Python (``bpy.ops``, the synchronous ``execute`` path a script uses):

- ``install_s``: ``extensions.package_install_files`` of the zip, enable included (the wheels for this Python
  unpacked);
- ``first_bake_s``: the first Bake in that user folder, numba's compile cache empty: on the kernels the zip
  carries built ahead of time where they load (no compile), else numba's compile;
- ``warm_bake_s``: the same scene built again and baked in the same session;
- ``new_session_bake_s``: a new process on the same user folder (the extension enabled again), its first bake
  (numba imported and the cached kernels loaded).

Scenes: the demo's three-magnet pendulum (8 s at dt = 1e-3: 8000 steps) and its five-ball Newton's cradle
(1.5 s, 40 substeps a frame at 24 fps, contacts: the contact kernel variant); then the demo's gas, 500 hard
spheres in a 2 m box over 25 frames (``gas_first_build_s``, ``gas_new_session_build_s``). The builders are the
demo's own (scripts/demo.py), run against the installed extension. Any Python runs it (e.g. .venvs/core/bin/python).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENVS = {"4.2": "bpy42", "4.5": "bpy45", "5.0": "bpy50", "5.2": "bpy52"}
PKG_ID = "pem_physics_pendulum"
MODULE = f"bl_ext.user_default.{PKG_ID}"


def _child(phase: str, zip_path: str, out: str) -> None:
    """Inside one Blender (this process has its bpy): the measurements of one phase, as JSON into ``out``."""
    import importlib

    import bpy

    addon_utils = importlib.import_module("addon_utils")  # Blender's own module: importable once bpy is

    sys.path.insert(0, str(ROOT / "scripts"))
    res: dict = {"blender": bpy.app.version_string, "python": sys.version.split()[0]}
    t0 = time.perf_counter()
    if phase == "first":
        assert bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default",
                                                        enable_on_install=True) == {"FINISHED"}
        res["install_s"] = time.perf_counter() - t0
    else:
        addon_utils.enable(MODULE, default_set=True)
        res["enable_s"] = time.perf_counter() - t0
    assert addon_utils.check(MODULE)[1], "the extension is not enabled"
    ext = importlib.import_module(MODULE)
    import demo  # the demo's scene builders, run against the installed extension

    def bake() -> float:
        t = time.perf_counter()
        assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
        return time.perf_counter() - t

    for name, build in (("three_magnet", lambda: demo.build_three_magnet(ext)),
                        ("cradle", demo.build_newtons_cradle)):
        build()
        key = "first_bake_s" if phase == "first" else "new_session_bake_s"
        res[f"{name}_{key}"] = bake()
        res[f"{name}_engine"] = bpy.context.scene.pem.last_engine
        res[f"{name}_kernels"] = ("ahead-of-time" if "built ahead of time" in bpy.context.scene.pem.status
                                  else "jit")
        res[f"{name}_steps"] = bpy.context.scene.pem.last_steps
        if phase == "first":
            build()
            res[f"{name}_warm_bake_s"] = bake()
    # the demo's gas: 500 hard spheres between the walls of a 2 m cube (η = 0.2), 25 frames at 24 fps
    demo.new_scene()
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 24, 1, 25
    bpy.ops.wm.save_as_mainfile(filepath=str(Path(out).with_suffix(".blend")))  # the cache goes next to it
    bpy.ops.mesh.primitive_cube_add(size=2.0, location=(0.0, 0.0, 1.0))
    t = time.perf_counter()
    assert bpy.ops.pem.gas_build(box=bpy.context.object.name, n=500, packing_fraction=0.2, temperature=1.0, seed=1,
                                 periodic=False) == {"FINISHED"}
    res["gas_first_build_s" if phase == "first" else "gas_new_session_build_s"] = time.perf_counter() - t
    res["gas_engine"] = bpy.context.object["pem_gas"]["engine"]
    import numba

    res["numba_from"] = numba.__file__
    Path(out).write_text(json.dumps(res))


def measure(version: str, zip_path: Path) -> dict:
    """Both phases of one Blender in fresh processes on one fresh user folder."""
    py = ROOT / ".venvs" / VENVS[version] / "bin" / "python"
    if not py.exists():
        subprocess.run(["bash", str(ROOT / "scripts" / "venv.sh"), VENVS[version],
                        str(ROOT / "requirements" / f"{VENVS[version]}.txt")], check=True, stdout=subprocess.DEVNULL)
    res: dict = {}
    with tempfile.TemporaryDirectory(prefix="pem-bench-user-") as user:
        env = dict(os.environ, BLENDER_USER_RESOURCES=user)
        env.pop("NUMBA_CACHE_DIR", None)
        for phase in ("first", "session"):
            out = Path(user) / f"{phase}.json"
            subprocess.run([str(py), __file__, "--child", phase, "--zip", str(zip_path), "--out", str(out)],
                           check=True, env=env, cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL)
            res.update(json.loads(out.read_text()))
    assert Path(res["numba_from"]).resolve().is_relative_to(Path(user).resolve()), \
        f"numba came from {res['numba_from']}, not the extension's wheels"
    return res


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", default=",".join(VENVS), help="comma-separated Blender versions")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--zip", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child, args.zip, args.out)
        return {}
    with tempfile.TemporaryDirectory(prefix="pem-bench-zip-") as d:
        # built as scripts/extension.sh builds it (Blender 5.2's own extension tool, in its venv)
        subprocess.run(["bash", str(ROOT / "scripts" / "extension.sh"), "--out", d], check=True,
                       stdout=subprocess.DEVNULL)
        zip_path = next(Path(d).glob("*linux_x64.zip"))
        results = {"zip_mb": round(zip_path.stat().st_size / 1e6, 1)}
        for v in args.versions.split(","):
            results[v] = measure(v, zip_path)
            r = results[v]
            scenes = "; ".join(f"{s}: first {r[f'{s}_first_bake_s']:.1f} s, new session "
                               f"{r[f'{s}_new_session_bake_s']:.2f} s, warm {r[f'{s}_warm_bake_s']:.2f} s "
                               f"({r[f'{s}_engine']}, {r[f'{s}_kernels']})" for s in ("three_magnet", "cradle"))
            print(f"Blender {r['blender']} (Python {r['python']}): install {r['install_s']:.2f} s; {scenes}; "
                  f"gas of 500: first {r['gas_first_build_s']:.1f} s, new session {r['gas_new_session_build_s']:.1f} s "
                  f"({r['gas_engine']})", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
