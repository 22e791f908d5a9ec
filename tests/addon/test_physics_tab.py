"""The add-on in Properties ▸ Physics as Blender's own physics types are there: an entry in the grid of physics
types (Blender's PHYSICS_PT_add) that turns it on, and off with ✕; the panel's header checkbox; offered only for
object types that can be bodies or walls (not cameras or lights)."""

from __future__ import annotations

import importlib

import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import pem  # noqa: E402, F401 (registers the add-on)
from .test_lists import _Layout  # noqa: E402


@pytest.fixture
def ui(pem, ext):  # noqa: F811
    return importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.ui")


def _grid(ui, obj):
    """What our appended draw function adds to Blender's physics grid for ``obj``: [(kind, name, icon)]."""
    calls = []

    class Row(_Layout):
        def operator(self, idname, **kw):
            calls.append(("op", idname, kw.get("text"), kw.get("icon")))

    panel = type("Panel", (), {"layout": type("L", (), {"row": lambda self, **kw: Row(calls)})()})()
    bpy.context.view_layer.objects.active = obj
    ui.draw_physics_add(panel, bpy.context)
    return calls


def test_the_physics_grid_offers_magnetic_pendulum_for_bodies_and_not_for_cameras_or_lights(ui):
    assert ui.draw_physics_add in bpy.types.PHYSICS_PT_add._dyn_ui_initialize()   # appended to Blender's grid
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.object
    assert _grid(ui, cube) == [("op", "pem.body_toggle", "Magnetic Pendulum", "FORCE_MAGNETIC")]
    for kind, data in (("CAMERA", bpy.data.cameras.new("C")), ("LIGHT", bpy.data.lights.new("L", "POINT"))):
        obj = bpy.data.objects.new(kind.title(), data)
        bpy.context.scene.collection.objects.link(obj)
        assert _grid(ui, obj) == [], kind
        bpy.context.view_layer.objects.active = obj
        assert not bpy.ops.pem.body_toggle.poll()
        assert not ui.PEM_PT_object.poll(bpy.context) and not ui.PEM_PT_sidebar_object.poll(bpy.context)
    empty = bpy.data.objects.new("Magnet", None)
    bpy.context.scene.collection.objects.link(empty)
    assert _grid(ui, empty)[0][1] == "pem.body_toggle"          # an empty may be a body (typed inertia)


def test_the_grid_entry_turns_the_body_on_and_off_and_undo_knows(ui):
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.object
    assert not cube.pem.enabled and not ui.PEM_PT_object.poll(bpy.context)      # as Rigid Body's, until on
    assert ui.PEM_PT_sidebar_object.poll(bpy.context)             # the sidebar's, with its checkbox, always
    assert bpy.ops.pem.body_toggle() == {"FINISHED"}
    assert cube.pem.enabled and ui.PEM_PT_object.poll(bpy.context)
    assert _grid(ui, cube) == [("op", "pem.body_toggle", "Magnetic Pendulum", "X")]   # ✕ once on, as Cloth's
    cube.pem.density = 1234.0                                     # settings survive turning it off and on
    assert bpy.ops.pem.body_toggle() == {"FINISHED"} and not cube.pem.enabled
    assert bpy.ops.pem.body_toggle() == {"FINISHED"} and cube.pem.enabled and cube.pem.density == 1234.0
    assert "UNDO" in bpy.types.PEM_OT_body_toggle.bl_options


def test_the_panel_header_carries_the_checkbox(ui):
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.object
    layout = _Layout()
    panel = type("P", (), {"layout": layout})()
    ui.PEM_PT_object.draw_header(panel, bpy.context)
    assert layout.calls == [("prop", "enabled")]
    body = _Layout()
    ui.draw_object(body, bpy.context, cube)                       # off: the body of the panel only says how
    assert ("prop", "enabled") not in body.calls and not [c for c in body.calls if c[0] == "prop"]


@pytest.mark.parametrize("kind", ["CAMERA", "LIGHT", "ARMATURE"])
def test_a_camera_light_or_armature_enabled_from_python_is_refused_by_name(ui, kind):
    """The Physics tab does not offer them; a script can still set ``pem.enabled``: the bake refuses the object by
    name and says how to fix it, leaving the scene as it was (nothing keyed)."""
    from .test_addon import fingerprint, pendulum_setup

    bpy.ops.wm.read_homefile(use_empty=True)
    pendulum_setup()
    data = {"CAMERA": lambda: bpy.data.cameras.new("C"), "LIGHT": lambda: bpy.data.lights.new("L", "POINT"),
            "ARMATURE": lambda: bpy.data.armatures.new("A")}[kind]()
    obj = bpy.data.objects.new("Thing", data)
    bpy.context.scene.collection.objects.link(obj)
    obj.pem.enabled, obj.pem.role = True, "PENDULUM"
    obj.pem.dipoles.add()
    bpy.context.view_layer.update()
    before = fingerprint()
    article = "an" if kind == "ARMATURE" else "a"
    with pytest.raises(RuntimeError, match=rf"Object 'Thing' is {article} {kind.lower()}: only meshes .* can be "
                                           r"Magnetic Pendulum bodies or walls; turn its Magnetic Pendulum off"):
        bpy.ops.pem.simulate_bake()
    assert fingerprint() == before
    obj.pem.enabled = False
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
