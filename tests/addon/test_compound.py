"""Compound bodies: child meshes parented to a body are part of its mass (or left out, per body, with a note)."""

from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import cube, pem, pendulum_setup  # noqa: E402, F401


def props(pem, obj):  # noqa: F811
    mp, _ = pem["pem_addon.meshes"].mass_properties(obj, bpy.context)
    return mp


def test_a_parented_rod_counts_like_a_joined_one(pem):  # noqa: F811
    bob, _ = pendulum_setup()
    alone = props(pem, bob)
    rod = cube("Rod", size=0.1, location=(0.12, 0.03, -0.12), rotation=(0.1, 0.0, 0.2), scale=(0.3, 0.3, 2.0))
    world = rod.matrix_world.copy()
    rod.parent = bob
    rod.matrix_world = world
    bpy.context.view_layer.update()
    parented = props(pem, bob)
    # the oracle: the same two meshes joined into one object (joined into the bob: its frame is kept)
    bpy.ops.object.select_all(action="DESELECT")
    a, b = bob.copy(), rod.copy()
    a.data, b.data = bob.data.copy(), rod.data.copy()
    for o in (a, b):
        bpy.context.scene.collection.objects.link(o)
    b.parent = None
    b.matrix_world = rod.matrix_world
    a.matrix_world = bob.matrix_world
    bpy.context.view_layer.update()
    a.select_set(True)
    b.select_set(True)
    bpy.context.view_layer.objects.active = a
    bpy.ops.object.join()
    joined = props(pem, a)
    assert parented.mass > 1.1 * alone.mass          # the rod counts (0.18 of the bob)
    # the joined mesh stores the rod's vertices in single precision after the join: agreement to ~1e-7
    assert parented.mass == pytest.approx(joined.mass, rel=1e-6)
    np.testing.assert_allclose(parented.center_of_mass, joined.center_of_mass, rtol=0, atol=1e-7)
    np.testing.assert_allclose(parented.inertia, joined.inertia, rtol=0, atol=1e-6 * np.abs(joined.inertia).max())
    # excluded on request: the bob alone again
    bob.pem.include_children = False
    left = props(pem, bob)
    assert left.mass == pytest.approx(alone.mass, rel=1e-12)
    np.testing.assert_allclose(left.inertia, alone.inertia, rtol=1e-12, atol=1e-15)
    assert [o.name for o in pem["pem_addon.meshes"].excluded_parts(bob)] == ["Rod"]


def test_a_child_that_is_a_body_of_its_own_is_not_part_of_its_parent(pem):  # noqa: F811
    bob, _ = pendulum_setup()
    alone = props(pem, bob)
    magnet = cube("ChildMagnet", size=0.05, location=(0.12, 0.03, -0.4))
    magnet.parent = bob
    magnet.pem.enabled = True
    magnet.pem.role = "FIXED"
    bpy.context.view_layer.update()
    assert props(pem, bob).mass == pytest.approx(alone.mass, rel=1e-12)
