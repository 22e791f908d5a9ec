"""Friction of impacts (Coulomb μ) from the panel: into the core scene, out to a scene file and back, bad input.

Oracles: the numbers the test set on the objects and the scene (read back from the core scene the bake
prepares and from the TOML file, parsed here with tomllib), the file written before the failed bake.
"""

from __future__ import annotations

import importlib
import tomllib

import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import fingerprint, pem  # noqa: E402, F401
from .test_contacts import build_cradle  # noqa: E402


@pytest.fixture
def bake_mod(pem, ext):  # noqa: F811
    return importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.bake")


def _floor():
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0.0, 0.0, 0.0))
    floor = bpy.context.object
    floor.name = "Floor"
    floor.pem.enabled, floor.pem.role, floor.pem.wall_shape = True, "WALL", "PLANE"
    return floor


def test_friction_of_the_scene_objects_and_walls_reaches_the_core(bake_mod):
    scene, balls = build_cradle(n=2, frames=4)
    floor = _floor()
    scene.pem.contact_friction = 0.25
    balls[1].pem.use_contact_friction, balls[1].pem.contact_friction = True, 0.5
    balls[0].pem.contact_friction = 0.75                 # not used: its own friction is off
    floor.pem.use_contact_friction, floor.pem.contact_friction = True, 1.5
    bpy.context.view_layer.update()
    core = bake_mod.prepare(bpy.context).core
    assert core.contact_friction == pytest.approx(0.25)
    by_name = {b.name: b.contact_friction for b in core.bodies}
    assert by_name["Ball.001"] is None and by_name["Ball.002"] == pytest.approx(0.5)
    (wall,) = core.walls
    assert wall.name == "Floor" and wall.contact_friction == pytest.approx(1.5)


def test_friction_goes_out_to_a_scene_file_and_back(bake_mod, tmp_path):
    scene, balls = build_cradle(n=2, frames=4)
    scene.pem.contact_friction = 0.25
    balls[1].pem.use_contact_friction, balls[1].pem.contact_friction = True, 0.5
    out = tmp_path / "friction.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    doc = tomllib.loads(out.read_text(encoding="utf-8"))
    assert doc["contact_friction"] == 0.25
    friction = {b["name"]: b.get("contact_friction") for b in doc["bodies"]}
    assert friction == {"Ball.001": None, "Ball.002": 0.5}
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.pem.import_scene(filepath=str(out)) == {"FINISHED"}
    sp = bpy.context.scene.pem
    assert sp.contact_friction == pytest.approx(0.25)
    b2 = bpy.data.objects["Ball.002"].pem
    assert b2.use_contact_friction and b2.contact_friction == pytest.approx(0.5)
    assert not bpy.data.objects["Ball.001"].pem.use_contact_friction


def test_a_negative_friction_typed_by_a_script_is_clamped_to_zero(bake_mod):
    scene, balls = build_cradle(n=2, frames=4)
    balls[0].pem.contact_friction = -1.0                 # the property clamps at its minimum, as typed in the UI
    assert balls[0].pem.contact_friction == 0.0
    balls[0].pem.use_contact_friction = True
    before = fingerprint()
    assert bake_mod.prepare(bpy.context).core.bodies[0].contact_friction == 0.0
    assert fingerprint() == before
