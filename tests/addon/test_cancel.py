"""Cancels end clean (Ctrl-C in a script, an object deleted mid-bake) and long bakes are bounded and estimated."""

from __future__ import annotations

import importlib

import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import fingerprint, pem, pendulum_setup  # noqa: E402, F401


def test_ctrl_c_during_the_run_cancels_and_changes_nothing(pem, monkeypatch):  # noqa: F811
    add_bake = pem["pem_addon.bake"]
    obj, _ = pendulum_setup()
    before = fingerprint()

    def interrupted(*args, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(add_bake, "run", interrupted)
    assert bpy.ops.pem.simulate_bake() == {"CANCELLED"}
    assert fingerprint() == before


def test_ctrl_c_while_writing_keys_restores_everything(pem, ext, monkeypatch):  # noqa: F811
    kf = importlib.import_module(f"{ext.__name__}.pem_addon.keyframes")
    obj, _ = pendulum_setup()
    obj.keyframe_insert("location", frame=1)
    before = fingerprint()

    def interrupted(*args, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(kf, "write_transform_keys", interrupted)
    assert bpy.ops.pem.simulate_bake() == {"CANCELLED"}
    assert fingerprint() == before and not obj.pem.baked and obj.pem.user_action is None


def test_an_object_deleted_while_the_bake_runs_is_noticed(pem):  # noqa: F811
    add_bake = pem["pem_addon.bake"]
    obj, _ = pendulum_setup()
    plan = add_bake.prepare(bpy.context)
    assert add_bake.deleted_objects(plan) == 0
    bpy.data.objects.remove(obj)            # what the modal bake finds when its thread is done
    assert add_bake.deleted_objects(plan) == 1


def test_substeps_are_bounded_and_the_run_is_estimated(pem):  # noqa: F811
    add_bake = pem["pem_addon.bake"]
    pendulum_setup()
    sp = bpy.context.scene.pem
    sp.substeps = 2**31 - 1
    assert sp.substeps == 4096
    sp.substeps = 16
    steps, seconds = add_bake.estimate(bpy.context)
    assert steps == 16 * 24 and seconds is None            # 24 frames at 16 substeps; no bake yet
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    steps, seconds = add_bake.estimate(bpy.context)
    assert seconds == pytest.approx(steps * sp.last_wall_time / sp.last_steps)


def test_an_open_mesh_says_how_to_go_on(pem):  # noqa: F811
    bpy.ops.mesh.primitive_cube_add(size=0.1)
    obj = bpy.context.object
    obj.data.polygons[0].select = True
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_mode(type="FACE")
    bpy.ops.mesh.select_all(action="DESELECT")
    bpy.ops.object.mode_set(mode="OBJECT")
    obj.data.polygons[0].select = True
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.delete(type="ONLY_FACE")          # a box with its lid off
    bpy.ops.object.mode_set(mode="OBJECT")
    obj.pem.enabled = True
    with pytest.raises(RuntimeError, match=r"not closed.*set Inertia Source to Primitive"):
        bpy.ops.pem.compute_mass_properties()


def test_core_messages_speak_the_panels_language(pem):  # noqa: F811
    adapters = pem["pem_addon.adapters"]
    obj, _ = pendulum_setup()
    objs = [obj]
    say = adapters.object_message
    assert say("settings.t_end: t_end / dt = 2.5 is not a whole number", objs).startswith(
        "frame range (Output ▸ Frame Range): t_end / dt")
    assert say("friction: must be ≥ 0, got -1", objs) == "Friction (Scene ▸ Magnetic Pendulum): must be ≥ 0, got -1"
    assert say("bodies[0].angular_velocity: expected 3 numbers", objs) == (
        "Object 'Cube': Angular Velocity (Physics ▸ Magnetic Pendulum): expected 3 numbers")
    assert say("bodies[0].dipoles[1].moment: expected 3 numbers", objs) == (
        "Object 'Cube' dipole #1 moment: expected 3 numbers")
    assert say("field: must be finite", objs).startswith("External Field (Scene ▸ Magnetic Pendulum)")
    # and through the operator: a scene value the core refuses
    bpy.context.scene.pem.field_mode = "UNIFORM"
    bpy.context.scene.pem.field = (float("nan"), 0.0, 0.0)
    with pytest.raises(RuntimeError, match=r"External Field \(Scene ▸ Magnetic Pendulum\)"):
        bpy.ops.pem.simulate_bake()
