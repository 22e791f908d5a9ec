"""The panel's out-of-date check costs no mesh evaluation per redraw; an edit still marks it out of date."""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import pem  # noqa: E402, F401


def test_out_of_date_check_evaluates_the_mesh_once_until_it_changes(pem, ext, monkeypatch):  # noqa: F811
    meshes = importlib.import_module(f"{ext.__name__}.pem_addon.meshes")
    bpy.ops.mesh.primitive_uv_sphere_add(segments=256, ring_count=128, radius=0.05)  # ~65k triangles
    obj = bpy.context.object
    obj.pem.enabled = True
    bpy.context.view_layer.update()
    assert bpy.ops.pem.compute_mass_properties() == {"FINISHED"}
    calls = {"n": 0}
    real = meshes.mesh_triangles

    def counted(*args, **kw):
        calls["n"] += 1
        return real(*args, **kw)

    monkeypatch.setattr(meshes, "mesh_triangles", counted)
    t0 = time.perf_counter()
    for _ in range(50):  # fifty redraws
        assert meshes.current_stamp(obj, bpy.context) == obj.pem.computed_stamp
    per_draw = (time.perf_counter() - t0) / 50
    assert calls["n"] == 0, "the mesh was evaluated during redraws"
    print(f"out-of-date check: {per_draw * 1e3:.3f} ms per redraw")
    # an edit of the mesh: the depsgraph reports it, the next check evaluates once and sees the change
    co = np.empty(3 * len(obj.data.vertices))
    obj.data.vertices.foreach_get("co", co)
    obj.data.vertices.foreach_set("co", co * 1.1)
    obj.data.update()
    bpy.context.view_layer.update()
    assert meshes.current_stamp(obj, bpy.context) != obj.pem.computed_stamp
    assert meshes.current_stamp(obj, bpy.context) != obj.pem.computed_stamp
    assert calls["n"] == 1
