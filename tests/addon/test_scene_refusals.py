"""Scenes the simulation cannot do as built are refused by name before anything changes: a pendulum hanging from
another simulated body (a chain), a body that also has Blender's Rigid Body physics.

Oracle: the scene's fingerprint (:func:`.test_addon.fingerprint`) unchanged by the refusal.
"""

from __future__ import annotations

import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import _expect_error, cube, pem, pendulum_setup  # noqa: E402, F401


def _dipole(obj):
    """A fixed magnet needs a dipole."""
    d = obj.pem.dipoles.add()
    d.moment = (0.0, 0.0, 0.01)


@pytest.mark.parametrize("role", ["PENDULUM", "FREE"])
def test_a_pivot_that_is_itself_simulated_is_refused(pem, role):  # noqa: F811
    upper, _ = pendulum_setup()                          # 'Cube' swings on 'Pivot'
    lower = cube("Lower", location=(0.0, 0.0, -0.6))
    lower.pem.enabled = True
    lower.pem.pivot_object = upper                       # hung from the swinging cube: a chain
    lower.pem.density = 1000.0
    upper.pem.role = role
    _expect_error(rf"Object 'Lower': its pivot 'Cube' is itself simulated \(a {role.lower()} body\); chains of "
                  r"pendulums are not supported: pivot 'Lower' on an object the simulation does not move")


def test_a_fixed_body_is_a_pivot_still(pem):  # noqa: F811
    upper, _ = pendulum_setup()
    lower = cube("Lower", location=(0.0, 0.0, -0.6))
    lower.pem.enabled = True
    lower.pem.pivot_object = upper
    lower.pem.density = 1000.0
    upper.pem.role = "FIXED"
    _dipole(upper)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}


def test_a_body_with_blender_rigid_body_physics_is_refused(pem):  # noqa: F811
    obj, _ = pendulum_setup()
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.rigidbody.object_add() == {"FINISHED"}
    _expect_error(r"Object 'Cube' also has Blender Rigid Body physics, which overrides the bake: remove it "
                  r"\(Physics ▸ Rigid Body\)")


def test_an_active_rigid_body_on_a_fixed_body_is_refused(pem):  # noqa: F811
    pendulum_setup()
    wall = cube("Magnet", location=(0.0, 0.0, -0.8))
    wall.pem.enabled = True
    wall.pem.role = "FIXED"
    _dipole(wall)
    bpy.context.view_layer.objects.active = wall
    assert bpy.ops.rigidbody.object_add() == {"FINISHED"}
    _expect_error(r"Object 'Magnet' also has active Blender Rigid Body physics, which moves it")
    wall.rigid_body.type = "PASSIVE"
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}


@pytest.mark.parametrize("scale, match", [
    (1e-20, r"Object 'Cube' has a scale of 1e-20 on an axis, too small to simulate \(1e-12 or less\): give it a "
            r"larger scale"),
    (0.0, r"Object 'Cube' has zero scale on an axis: give it a scale other than 0")])
def test_a_tiny_scale_is_called_too_small_and_a_zero_one_zero(pem, scale, match):  # noqa: F811
    obj, _ = pendulum_setup()
    obj.scale = (scale, 1.0, 1.0)
    bpy.context.view_layer.update()
    _expect_error(match)
