"""Messages in the panel's words (issue 44, item 10): no internal paths, objects called objects, shapes by their
list number, plurals right."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import cube, fingerprint, pem, pendulum_setup  # noqa: E402, F401
from .test_translation import key_frames  # noqa: E402


@pytest.fixture
def mods(pem, ext):  # noqa: F811
    out = dict(pem)
    for name in ("pem_addon.pendulum.ui", "pem_addon.keyframes", "pem_physics.engine.contact.surface"):
        out[name] = importlib.import_module(f"{ext.__name__}.{name}")
    return out


@pytest.mark.parametrize("mode, key, word", [("DENSITY", "density", "Density"), ("MASS", "mass", "Mass")])
def test_a_nan_density_or_mass_is_named_as_the_panel_names_it(mods, mode, key, word):
    bpy.ops.wm.read_homefile(use_empty=True)
    obj, _ = pendulum_setup()
    obj.pem.mass_mode = mode
    setattr(obj.pem, key, float("nan"))
    bpy.context.view_layer.update()
    before = fingerprint()
    with pytest.raises(RuntimeError) as err:
        bpy.ops.pem.simulate_bake()
    msg = str(err.value)
    assert f"Object '{obj.name}': {word} (Physics ▸ Magnetic Pendulum ▸ Mass Properties) must be a finite number" in msg
    assert "mesh." not in msg and f".{key}" not in msg
    assert fingerprint() == before


def test_a_run_time_error_names_the_object_and_its_contact_rim(mods):
    """The table model's "a rim lies flat" (raised mid-run by the core with the body's name and its shape's number)
    reads in the panel as the object and its listed contact rim."""
    messages, sf = mods["pem_addon.messages"], mods["pem_physics.engine.contact.surface"]
    body = sf.TableBody(1.0, np.eye(3), [sf.ContactSphere((0, 0, 0), 0.1), sf.ContactRim((0, 0, 0.2), (0, 0, 1), 0.05)],
                        name="Coin")
    core = (f"'Coin': {body.shape_name(1)} lies flat on 'Table' (its whole edge touches); this model needs it "
            "tilted")
    objs = [type("O", (), {"name": "Coin"})()]
    said = messages.object_message(core, objs, [type("W", (), {"name": "Table"})()])
    assert said.startswith("Object 'Coin': contact rim #1 lies flat on 'Table'")


def test_child_meshes_are_counted_in_words(mods):
    from .test_translation import _Layout

    bpy.ops.wm.read_homefile(use_empty=True)
    body = cube(location=(0.0, 0.0, 0.0))
    body.pem.enabled, body.pem.role = True, "FREE"
    for k in range(2):
        child = cube(location=(0.3 * (k + 1), 0.0, 0.0))
        child.parent = body
        layout = _Layout()
        mods["pem_addon.pendulum.ui"].draw_object(layout, bpy.context, body)
        want = "Compound body: 1 child mesh included" if k == 0 else "Compound body: 2 child meshes included"
        assert want in layout.labels, layout.labels


@pytest.mark.parametrize("fps", [24, 30, 25, 60])
def test_switching_to_a_time_step_keeps_keys_on_whole_frames_at_any_fps(mods, fps):
    """The default dt (0.001 s) does not divide a frame at 24 or 30 fps: switching to Time Step takes the step the
    substeps gave instead, so the bake keys whole frames; a dt that divides the frame (0.001 s at 25 fps) is kept."""
    from .test_translation import _Layout

    bpy.ops.wm.read_homefile(use_empty=True)
    obj, _ = pendulum_setup()
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = fps, 1.0
    sp = scene.pem
    sp.step_mode = "DT"
    divides = 1000 % fps == 0
    if divides:
        assert sp.dt == pytest.approx(1e-3, rel=1e-7)
    else:
        assert sp.dt == pytest.approx(1 / (fps * sp.substeps), rel=1e-7)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    frames = key_frames(mods, obj, "rotation_quaternion")
    assert len(frames) == scene.frame_end - scene.frame_start + 1 and np.all(frames == np.round(frames)), frames
    bpy.ops.pem.clear_bake()
    sp.dt = 0.001                                      # typed: kept, and the panel says where keys fall
    layout = _Layout()
    mods["pem_addon.pendulum.ui"].draw_scene(layout, bpy.context)
    said = [t for t in layout.labels if t.startswith("Keys fall between frames")]
    assert bool(said) != divides, said


def test_computed_values_show_in_the_scenes_units(mods):
    """A 1.5 mm cube of density 1 g/cm³ (1.5⁻³ mm³ … 3.375 mg) in a metric scene: the panel says mg and mm³, not
    kg with an exponent; with the unit system None, the SI number and unit."""
    from .test_translation import _Layout

    bpy.ops.wm.read_homefile(use_empty=True)
    body = cube(size=0.0015, location=(0.0, 0.0, 0.0))
    body.pem.enabled, body.pem.role, body.pem.density = True, "FREE", 1000.0
    assert bpy.ops.pem.compute_mass_properties() == {"FINISHED"}
    scene = bpy.context.scene
    scene.unit_settings.system = "METRIC"

    def labels():
        layout = _Layout()
        mods["pem_addon.pendulum.ui"].draw_object(layout, bpy.context, body)
        return next(t for t in layout.labels if t.startswith("Mass:"))

    text = labels()
    assert "3.375 mg" in text and "e-0" not in text and "kg" not in text, text
    scene.unit_settings.system = "NONE"
    assert "3.375e-06 kg" in labels()


def test_the_gas_panel_lays_out_as_blenders(mods, ext):
    from .test_translation import _Layout

    ui = importlib.import_module(f"{ext.__name__}.pem_addon.gas.ui")
    layout = _Layout()
    layout.use_property_split = False
    ui.draw_gas(layout, bpy.context)
    assert layout.use_property_split and not layout.use_property_decorate
