"""Keyframe writing in Blender: the add-on's bulk writer against a ``keyframe_insert`` loop, same run.

Run with a Python that has ``bpy`` (e.g. .venvs/bpy50/bin/python bench/bench_bake.py [--keys N]).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
from common import write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    import bpy

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=2000, help="frames keyed (7 channels each)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    spec = importlib.util.spec_from_file_location("pem_bench_ext", ROOT / "__init__.py",
                                                  submodule_search_locations=[str(ROOT)])
    ext = importlib.util.module_from_spec(spec)
    sys.modules["pem_bench_ext"] = ext
    spec.loader.exec_module(ext)
    from pem_bench_ext.pem_addon import keyframes

    bpy.ops.wm.read_factory_settings(use_empty=True)
    n = args.keys
    rng = np.random.default_rng(0)
    frames = np.arange(1, n + 1, dtype=float)
    loc = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)

    a = bpy.data.objects.new("bulk", None)
    bpy.context.scene.collection.objects.link(a)
    t0 = time.perf_counter()
    keyframes.write_transform_keys(a, frames, loc, q)
    t_bulk = time.perf_counter() - t0

    b = bpy.data.objects.new("loop", None)
    bpy.context.scene.collection.objects.link(b)
    b.rotation_mode = "QUATERNION"
    t0 = time.perf_counter()
    for i in range(n):
        b.location = loc[i]
        b.rotation_quaternion = q[i]
        b.keyframe_insert("location", frame=frames[i])
        b.keyframe_insert("rotation_quaternion", frame=frames[i])
    t_loop = time.perf_counter() - t0
    keys = 7 * n
    out = {"blender": bpy.app.version_string, "keys": keys, "bulk_keys_per_s": keys / t_bulk,
           "keyframe_insert_keys_per_s": keys / t_loop, "ratio": t_loop / t_bulk}
    print(f"Blender {bpy.app.version_string}: bulk {keys / t_bulk:12.0f} keys/s   keyframe_insert loop "
          f"{keys / t_loop:10.0f} keys/s   ratio {t_loop / t_bulk:6.1f}")
    if args.json:
        write_json(args.json, out, indent=2)
    return out


if __name__ == "__main__":
    main()
