"""Which objects a scene's bake keyed: a copy of a baked object (its properties copied) is not baked, an object
linked into two scenes holds one scene's bake, and Delete Bake moves only the objects the bake keyed.

Oracles: the poses before the bake and after a move by hand (exact transform values), and the scene's
fingerprint (:func:`.test_addon.fingerprint`) unchanged by a refusal.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import fingerprint, pem, pendulum_setup  # noqa: E402, F401


@pytest.fixture
def cache(pem, ext):  # noqa: F811
    return importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.cache")


def _basis(obj):
    return [tuple(obj.location), tuple(obj.rotation_quaternion), obj.rotation_mode]


def _copy(obj, name, location):
    """A copy of ``obj`` (as Object.copy makes it: every property, PEM bookkeeping included) moved elsewhere."""
    dup = obj.copy()
    bpy.context.scene.collection.objects.link(dup)
    dup.name = name
    dup.animation_data_clear()
    dup.location = location
    return dup


def test_delete_bake_leaves_a_copy_of_a_baked_object_where_it_is(cache):
    obj, _ = pendulum_setup()
    before = _basis(obj)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    dup = _copy(obj, "Dup", (0.5, 0.5, 0.5))
    dup_before = _basis(dup)
    assert cache.baked_objects(bpy.context.scene) == [obj]
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert _basis(dup) == dup_before           # not moved: the bake did not key it
    assert _basis(obj) == before               # the original back where it was
    assert not obj.pem.baked and obj.animation_data is None


def test_a_copy_is_baked_as_a_body_of_its_own_and_keeps_its_start(cache):
    obj, _ = pendulum_setup()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    dup = _copy(obj, "Dup", (0.05, 0.0, -0.3))
    dup_before = _basis(dup)
    bpy.context.scene.frame_set(1)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}  # a re-bake: the copy is a new body, baked from where it is
    assert set(cache.baked_objects(bpy.context.scene)) == {obj, dup}
    assert dup.pem.bake_key != obj.pem.bake_key
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    np.testing.assert_allclose(_basis(dup)[0] + _basis(dup)[1], dup_before[0] + dup_before[1], atol=1e-7)


def test_a_renamed_baked_object_is_still_baked_after_save_and_reload(cache, tmp_path):
    obj, _ = pendulum_setup()
    before = _basis(obj)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    obj.name = "Renamed"
    _copy(obj, "Cube", (0.5, 0.5, 0.5))          # a copy under the original's first name
    path = str(tmp_path / "renamed.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj, dup = bpy.data.objects["Renamed"], bpy.data.objects["Cube"]
    assert [o.name for o in cache.baked_objects(bpy.context.scene)] == ["Renamed"]
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert _basis(obj) == before
    assert tuple(dup.location) == (0.5, 0.5, 0.5)


def _two_scenes():
    """The pendulum's cube and pivot linked into a second scene 'B' (the same objects)."""
    obj, piv = pendulum_setup()
    second = bpy.data.scenes.new("B")
    for o in (obj, piv):
        second.collection.objects.link(o)
    second.frame_start, second.frame_end = bpy.context.scene.frame_start, bpy.context.scene.frame_end
    return obj, bpy.context.scene, second


def _in(scene):
    return bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0])


def test_an_object_baked_in_one_scene_is_refused_a_bake_in_another(cache):
    obj, first, second = _two_scenes()
    before = _basis(obj)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    snap = fingerprint()
    with _in(second), pytest.raises(RuntimeError, match=rf"Object 'Cube' is baked in scene '{first.name}': "
                                                       "delete that bake first"):
        bpy.ops.pem.simulate_bake()
    assert fingerprint() == snap
    assert cache.baked_objects(second) == [] and cache.baked_objects(first) == [obj]
    with _in(second):
        assert bpy.ops.pem.clear_bake() == {"FINISHED"}   # nothing of its own to delete
    assert fingerprint() == snap
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert _basis(obj) == before                          # the first pose is kept
    with _in(second):
        assert bpy.ops.pem.simulate_bake() == {"FINISHED"}  # that bake deleted: now it may
    assert cache.baked_objects(second) == [obj]


def test_bake_all_refuses_an_object_of_two_scenes(cache):
    obj, first, second = _two_scenes()
    snap = fingerprint()
    with pytest.raises(RuntimeError, match=r"Object 'Cube' is a body of scenes .* and .*: it can hold one scene's"):
        bpy.ops.pem.bake_all()
    assert fingerprint() == snap
    assert not np.any([o.pem.baked for o in bpy.data.objects])


def test_delete_bake_removes_the_action_of_a_baked_object_deleted_since(cache):
    obj, _ = pendulum_setup()
    other = bpy.data.actions.new("Unused")               # the user's own orphan action: not the bake's
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    baked = obj.animation_data.action.name
    bpy.data.objects.remove(obj)
    assert baked in bpy.data.actions
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert baked not in bpy.data.actions
    assert [a.name for a in bpy.data.actions] == [other.name]


def test_a_rebake_removes_the_action_of_a_baked_object_deleted_since(cache):
    obj, piv = pendulum_setup()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    dup = obj.copy()
    dup.animation_data_clear()
    bpy.context.scene.collection.objects.link(dup)
    dup.location = (0.05, 0.0, -0.3)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    baked = obj.animation_data.action.name
    bpy.data.objects.remove(obj)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}   # the copy alone now
    assert baked not in bpy.data.actions
    assert [a.name for a in bpy.data.actions] == [dup.animation_data.action.name]


def test_an_object_baked_by_an_older_version_is_baked_and_rebakes_with_a_key(cache):
    """A bake of an older version: the object's flag and pre-bake pose, no key, no record. It counts as baked
    (Delete Bake restores it); linked into a second scene it does not block a bake there."""
    obj, piv = pendulum_setup()
    before = _basis(obj)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    obj.pem.bake_key = ""
    bpy.context.scene.pem.bake_objects = ""
    assert cache.baked_objects(bpy.context.scene) == [obj]
    second = bpy.data.scenes.new("B")
    for o in (obj, piv):
        second.collection.objects.link(o)
    assert cache.baked_elsewhere(second, [obj]) is None
    bpy.context.scene.frame_set(1)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}   # a re-bake gives it a key
    assert obj.pem.bake_key and cache.baked_objects(bpy.context.scene) == [obj]
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert _basis(obj) == before
