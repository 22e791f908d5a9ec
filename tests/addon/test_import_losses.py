"""What a scene file's import cannot carry into Blender is named, never dropped silently (issue: the audit of
File ▸ Import ▸ PEM Scene): a uniform field beside a rotating one, ``pair_restitution`` entries, dop853's
tolerances, a placement tolerance larger than a bake's; what it can carry (the rotating field's phase, a field
that does not rotate) comes over exactly.

Oracles: the file's own core scene (its field B(t) evaluated here from its definition, its run by the core) against
the core scene a bake of the imported Blender scene builds; the warnings' text.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import replace

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import pem  # noqa: E402, F401
from conftest import ROOT  # noqa: E402

SCENES = ROOT / "examples" / "scenes"


@pytest.fixture
def mods(pem, ext):  # noqa: F811
    out = dict(pem)
    for name in ("pem_physics.examples", "pem_physics.model.scene", "pem_addon.pendulum.scenes"):
        out[name] = importlib.import_module(f"{ext.__name__}.{name}")
    return out


def import_core(mods, core, **kw):
    """Import the core scene ``core`` into the current Blender scene: (objects, the import's warnings)."""
    notes = []
    objs = mods["pem_addon.pendulum.importing"].build_objects(core, bpy.context, notes=notes, **kw)
    return objs, notes


def baked_core(mods):
    """The core scene a bake of the current Blender scene runs."""
    return mods["pem_addon.pendulum.scenes"].build_scene(bpy.context)[0]


def field_at(scene, t):
    """The scene's external field B(t) (T), from the definitions of ``field`` and ``rotating_field``."""
    B = np.asarray(scene.field, float).copy()
    rf = scene.rotating_field
    if rf is not None:
        a = rf.angular_velocity * t + rf.phase
        B += np.asarray(rf.b1, float) * math.cos(a) + np.asarray(rf.b2, float) * math.sin(a)
    return B


def assert_same_field(mods, file_core):
    built = baked_core(mods)
    for t in np.linspace(0.0, 2.0, 9):
        np.testing.assert_allclose(field_at(built, t), field_at(file_core, t), rtol=0, atol=1e-13 * 1e-2,
                                   err_msg=f"B(t) at t = {t}")
    return built


# ------------------------------------------------------------------ fields

def test_a_uniform_field_beside_a_rotating_one_is_named_with_its_value(mods):
    file_core = replace(mods["pem_physics.examples"].compass_rotating(), field=(0.0, 0.0, 0.002))
    _, notes = import_core(mods, file_core)
    assert notes == [
        "Scene 'Scene': the file's uniform field (0, 0, 0.002) T is dropped: the External Field is uniform or "
        "rotating, not both, and the file has a rotating field too; a bake runs without the uniform field (run the "
        "file with python -m pem_physics run to include it)"]
    sp = bpy.context.scene.pem
    assert sp.field_mode == "ROTATING"            # the rotating field comes over as it is
    built = baked_core(mods)
    rf = file_core.rotating_field
    np.testing.assert_array_equal(built.rotating_field.b1, rf.b1)
    np.testing.assert_array_equal(built.rotating_field.b2, rf.b2)
    assert built.rotating_field.angular_velocity == rf.angular_velocity
    # kept by the user's choice: the scene's own settings are not the file's, nothing is said about them
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert import_core(mods, file_core, replace_settings=False)[1] == []


def test_the_import_operator_reports_each_loss_as_a_warning(mods, ext):
    """File ▸ Import ▸ PEM Scene shows what is dropped (its operator's execute, with a stand-in for the file)."""
    file_core = replace(mods["pem_physics.examples"].compass_rotating(), field=(0.0, 0.0, 0.002))
    ops = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.operators")
    op = type("Op", (), {"reports": [], "report": lambda self, *a: self.reports.append(a), "filepath": "f.toml",
                         "adapt_scene": False, "replace_settings": True, "load": lambda self, path: file_core})()
    assert ops._ImportBase.execute(op, bpy.context) == {"FINISHED"}
    warned = [text for kind, text in op.reports if kind == {"WARNING"}]
    assert any(w.startswith("Scene 'Scene': the file's uniform field (0, 0, 0.002) T is dropped") for w in warned)


def test_the_rotating_fields_phase_is_carried_into_b1_and_b2(mods):
    compass = mods["pem_physics.examples"].compass_rotating(t_end=0.2)
    file_core = replace(compass, rotating_field=replace(compass.rotating_field, phase=1.0),
                        settings=replace(compass.settings, record_interval=None))      # every step
    _, notes = import_core(mods, file_core, adapt_scene=True)
    assert notes == []
    built = assert_same_field(mods, file_core)    # B(t) is the file's: before, the phase was lost (1 → 0)
    # and the run: the bake's core (a record a frame) follows the file's
    sim = mods["pem_physics.engine.simulate"]
    a = sim.simulate(file_core.checked(), t_end=0.2)
    b = sim.simulate(built, t_end=0.2)
    steps = np.round(b.t / file_core.settings.dt).astype(int)
    assert len(steps) > 3 and np.allclose(a.t[steps], b.t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.quaternion, a.quaternion[steps], rtol=0, atol=1e-12)


def test_a_field_that_does_not_rotate_adds_to_the_uniform_one(mods):
    RotatingField = mods["pem_physics.model.scene"].RotatingField
    still = RotatingField(b1=(0.004, 0.0, 0.0), b2=(0.0, 0.003, 0.0), angular_velocity=0.0, phase=0.5)
    file_core = replace(mods["pem_physics.examples"].compass_rotating(), field=(0.0, 0.0, 0.002),
                        rotating_field=still)
    _, notes = import_core(mods, file_core)
    assert notes == []
    assert bpy.context.scene.pem.field_mode == "UNIFORM"
    np.testing.assert_allclose(bpy.context.scene.pem.field, field_at(file_core, 0.0), rtol=1e-7)  # single precision
    assert_same_field(mods, file_core)


# ------------------------------------------------------------------ contacts

def test_a_pair_restitution_is_named_with_both_objects_and_both_values(mods):
    PairRestitution = mods["pem_physics.model.scene"].PairRestitution
    colliding = mods["pem_physics.examples"].colliding_pendulums()           # the scene's e = 0.9
    bpy.data.objects.new("heavy", None)                                       # an import renames its body
    file_core = replace(colliding, pair_restitution=(PairRestitution(("heavy", "light"), 0.5),))
    objs, notes = import_core(mods, file_core)
    assert objs[0].name == "heavy.001"
    assert notes == [
        "Scene 'Scene': the file's restitution e = 0.5 between Object 'heavy.001' and Object 'light' "
        "(pair_restitution) is dropped: the add-on has no restitution per pair, only each object's Own Restitution, "
        "and a bake gives this pair e = 0.9 (the scene's Restitution) (give the objects Own Restitution 0.5 where "
        "their other pairs allow it, or run the file with python -m pem_physics run to include it)"]
    # an entry the pair rule gives anyway loses nothing: nothing is said
    bpy.ops.wm.read_factory_settings(use_empty=True)
    heavy = replace(colliding.bodies[0], restitution=0.5)                    # its own: the pair's smaller
    file_core = replace(colliding, bodies=[heavy, colliding.bodies[1]],
                        pair_restitution=(PairRestitution(("light", "heavy"), 0.5),))
    objs, notes = import_core(mods, file_core)
    assert notes == []
    assert objs[0].pem.use_restitution and objs[0].pem.restitution == pytest.approx(0.5)


# ------------------------------------------------------------------ run settings

def test_dop853_tolerances_the_bake_does_not_use_are_named(mods):
    base = mods["pem_physics.examples"].compass_rotating()
    file_core = replace(base, settings=replace(base.settings, method="dop853", rtol=1e-6))
    _, notes = import_core(mods, file_core)
    assert notes == [
        "Scene 'Scene': the file's dop853 tolerance rtol = 1e-06 is dropped: the add-on has no setting for it, "
        "and a bake uses rtol = 1e-10, atol = 1e-12 (run the file with python -m pem_physics run to use the file's)"]
    bpy.ops.wm.read_factory_settings(use_empty=True)
    file_core = replace(base, settings=replace(base.settings, method="dop853"))   # the bake's own
    assert import_core(mods, file_core)[1] == []


def test_a_placement_tolerance_larger_than_the_bakes_is_named(mods, tmp_path):
    ball = mods["pem_physics.examples"].billiard_ball()
    _, notes = import_core(mods, replace(ball, placement_tolerance=1e-3))
    assert len(notes) == 1 and notes[0].startswith("Scene 'Scene': the file's placement tolerance 0.001 m is dropped: "
                                                   "a bake takes the precision of this scene's positions, ")
    # a file the add-on wrote (its own tolerance) comes back without a word
    out = tmp_path / "ball.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    again = mods["pem_physics.io.scenefile"].load_scene(out)
    assert again.placement_tolerance > 0
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert import_core(mods, again)[1] == []


@pytest.mark.parametrize("path", sorted(p for p in SCENES.glob("*.toml") if p.stem != "hard_sphere_gas"),
                         ids=lambda p: p.stem)
def test_the_shipped_scenes_import_without_a_loss(mods, path):
    assert import_core(mods, mods["pem_physics.io.scenefile"].load_scene(path))[1] == []
