"""Defects a user trial found (issue 26), one test each.

Oracles: closed forms (the mass of a box of known density and size, frame arithmetic, the exact decimal typed),
core runs of scenes built here by hand, and measured errors (a run against one at an eighth of its step).
"""

from __future__ import annotations

import importlib
import os
import re

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import TOL, M, cube, empty, fingerprint, hand_built_core_run, pem, pendulum_setup  # noqa: E402, F401
from .test_translation import _Layout  # noqa: E402
from conftest import ROOT  # noqa: E402

SCENES = ROOT / "examples" / "scenes"


class _Op:
    """Runs an operator class's own methods outside Blender's operator machinery, recording its reports as
    (kind, text); ``props`` stand for the operator's properties."""

    def __init__(self, cls, **props):
        self._cls, self.reports = cls, []
        for name, prop in getattr(cls, "__annotations__", {}).items():  # the properties' declared defaults
            self.__dict__[name] = getattr(prop, "keywords", {}).get("default")
        self.__dict__.update(props)

    def report(self, kinds, text):
        self.reports.append((next(iter(kinds)), text))

    def __getattr__(self, name):
        attr = getattr(self._cls, name)
        return attr.__get__(self) if callable(attr) and not isinstance(attr, type) else attr


def _ops(pem):  # noqa: F811
    return pem["pem_addon.pendulum.operators"]


def mass_of(pem, obj) -> float:  # noqa: F811
    """The mass (kg) a bake of the scene would simulate for ``obj`` (read through the bake's own plan)."""
    plan = pem["pem_addon.pendulum.bake"].prepare(bpy.context)
    return plan.core.bodies[plan.objects.index(obj)].resolved_mass_properties().mass


# ------------------------------------------------------------------ 1. a re-bake after scaling a baked body

def test_a_rebake_after_scaling_simulates_and_keeps_the_new_scale(pem):  # noqa: F811
    obj, piv = pendulum_setup()                       # a 0.1 m cube of 1000 kg/m³: 1 kg
    scene = bpy.context.scene
    assert mass_of(pem, obj) == pytest.approx(1.0, rel=1e-6)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    scene.frame_set(7)
    obj.scale = (2.0, 2.0, 2.0)                       # only the scale changes: a 0.2 m cube, 8 kg
    assert mass_of(pem, obj) == pytest.approx(8.0, rel=1e-6)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    # what plays is the scaled cube's own motion: a core run built by hand from its start pose (scale 2)
    scene.frame_set(scene.frame_start)
    M0 = M(obj)
    np.testing.assert_allclose(np.linalg.norm(M0[:3, :3], axis=0), 2.0, rtol=1e-6)
    substeps = scene.pem.substeps
    traj = hand_built_core_run(pem, obj, np.array(piv.matrix_world.translation), (0.0, 2.0, 0.0),
                               1 / (24 * substeps), 24 / 24, substeps)
    expect = pem["pem_physics.io.bake"].world_matrices(traj.orientation[:, 0], traj.pivot[0], M0, 1.0)
    for k, f in enumerate(range(scene.frame_start, scene.frame_end + 1)):
        scene.frame_set(f)
        np.testing.assert_allclose(M(obj), expect[k], atol=TOL, err_msg=f"frame {f}")
    # Delete Bake puts back the start pose, but keeps the scale the user set after the first bake
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert tuple(obj.scale) == (2.0, 2.0, 2.0)


# ------------------------------------------------------------------ 2. a mesh under nested bodies

def test_a_mesh_under_nested_bodies_belongs_to_the_nearest_one_only(pem):  # noqa: F811
    """Outer ▸ Inner ▸ Leaf, Outer and Inner bodies: Leaf (a 0.2 m cube, 8 kg) is Inner's, not Outer's too."""
    meshes = pem["pem_addon.meshes"]
    outer = cube("Outer", size=0.1, location=(0.0, 0.0, -0.3))      # 1 kg at 1000 kg/m³
    inner = cube("Inner", size=0.1, location=(0.3, 0.0, -0.3))      # 1 kg
    leaf = cube("Leaf", size=0.2, location=(0.6, 0.0, -0.3))        # 8 kg
    for child, parent in ((inner, outer), (leaf, inner)):
        world = child.matrix_world.copy()
        child.parent = parent
        child.matrix_world = world
    for body in (outer, inner):
        body.pem.enabled = True
        body.pem.density = 1000.0
    bpy.context.view_layer.update()
    assert meshes.compound_parts(outer) == [] and meshes.compound_parts(inner) == [leaf]
    assert meshes.mass_properties(outer, bpy.context)[0].mass == pytest.approx(1.0, rel=1e-6)
    assert meshes.mass_properties(inner, bpy.context)[0].mass == pytest.approx(9.0, rel=1e-6)
    outer.pem.include_children = False                  # nothing of Outer's own is left out either
    assert meshes.excluded_parts(outer) == []


# ------------------------------------------------------------ 3. values typed in the panel reach the core as typed

def test_values_typed_in_the_panel_reach_the_bake_and_the_export_as_typed(pem, tmp_path):  # noqa: F811
    sf = pem["pem_physics.io.scenefile"]
    obj, _ = pendulum_setup()
    d = obj.pem.dipoles.add()
    d.moment = (0.0, 0.0, 0.3)
    sp = bpy.context.scene.pem
    sp.use_scene_gravity = False
    sp.gravity = (0.0, 0.0, -9.81)
    sp.step_mode, sp.dt, sp.friction = "DT", 0.001, 3e-4      # μ₀ left at its default, 4π·10⁻⁷
    expect = {"gravity": (0.0, 0.0, -9.81), "dt": 0.001, "mu0": 4e-7 * np.pi, "friction": 3e-4, "moment": 0.3}

    def check(core):
        got = {"gravity": tuple(core.gravity), "dt": core.settings.dt, "mu0": core.mu0, "friction": core.friction,
               "moment": core.bodies[0].dipoles[0].moment[2]}
        assert got == expect

    check(pem["pem_addon.pendulum.bake"].prepare(bpy.context).core)
    out = tmp_path / "typed.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    assert "9.8100004196167" not in out.read_text() and "0.0010000000474974513" not in out.read_text()
    check(sf.load_scene(out))
    sp.use_scene_gravity = True                               # the scene's own gravity, (0, 0, −9.81) by default
    assert tuple(pem["pem_addon.pendulum.bake"].prepare(bpy.context).core.gravity) == (0.0, 0.0, -9.81)


# ------------------------------------------------------------------ 4. a dt that divides the frame puts keys on frames

def _key_frames(pem, obj) -> dict:  # noqa: F811
    """{(data path, index): [frame of each key]} of the object's baked channels."""
    kf = importlib.import_module(f"{pem['pem_addon.messages'].__package__}.keyframes")
    return {(fc.data_path, fc.array_index): [k.co[0] for k in fc.keyframe_points]
            for fcs in kf._slot_fcurve_collections(obj) for fc in fcs}


@pytest.mark.parametrize("fps, dt, steps", [(25, 0.001, 40),          # 1/25 s = 40 × 1 ms
                                            (30, 1 / 3000, 100)])     # typed to single precision: 0.00033333334
def test_a_dt_that_divides_the_frame_puts_one_key_on_every_frame(pem, fps, dt, steps):  # noqa: F811
    obj, _ = pendulum_setup()
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = fps, 1, 26   # 26 frames
    scene.pem.step_mode, scene.pem.dt = "DT", dt
    plan = pem["pem_addon.pendulum.bake"].prepare(bpy.context)
    assert plan.core.settings.dt == 1 / (fps * steps)                  # one frame / steps exactly
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    keys = _key_frames(pem, obj)
    assert len(keys) == 7                                               # location and quaternion channels
    for channel, frames in keys.items():
        assert frames == list(range(1, 27)), channel                    # 26 keys, one on each frame


# ------------------------------------------------------------------ 5. a physically impossible manual inertia

@pytest.mark.parametrize("moments, match", [
    ((-1e-3, 1e-3, 1e-3, 0, 0, 0), r"negative moment of inertia"),
    ((1e-3, 1e-3, 3e-3, 0, 0, 0), r"triangle inequality I1 \+ I2 ≥ I3 \(0.002 < 0.003\)"),
    # diagonal entries that look fine, principal moments 2 ± 1.9 and 2 that do not: 0.1 + 2 < 3.9
    ((2.0, 2.0, 2.0, 1.9, 0, 0), r"triangle inequality I1 \+ I2 ≥ I3 \(2.1 < 3.9\)"),
])
def test_an_impossible_manual_inertia_is_refused_by_name_before_the_run(pem, moments, match):  # noqa: F811
    obj, _ = pendulum_setup()
    p = obj.pem
    p.inertia_source, p.mass_mode, p.mass = "MANUAL", "MASS", 1.0
    p.manual_inertia = moments
    before = fingerprint()
    with pytest.raises(RuntimeError, match=r"Object 'Cube': the manual inertia .*" + match):
        bpy.ops.pem.simulate_bake()
    assert fingerprint() == before
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match=r"Object 'Cube'.*" + match):
        bpy.ops.pem.compute_mass_properties()


def test_a_lamina_typed_to_three_digits_is_a_possible_inertia(pem):  # noqa: F811
    obj, _ = pendulum_setup()
    p = obj.pem
    p.inertia_source, p.mass_mode, p.mass = "MANUAL", "MASS", 1.0
    p.manual_inertia = (0.333e-3, 0.333e-3, 0.667e-3, 0, 0, 0)   # a thin square plate: I3 = I1 + I2, rounded
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}


# ------------------------------------------------------------------ 6. DOP853 where scipy is missing (Blender)

def test_dop853_without_scipy_is_named_in_the_panel_and_refused_before_the_bake(pem, ext, monkeypatch):  # noqa: F811
    integrators = importlib.import_module(f"{ext.__name__}.pem_physics.engine.integrators")
    ui = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.ui")
    monkeypatch.setattr(integrators, "_installed", lambda package: package != "scipy",  # Blender's own Python
                        raising=False)
    pendulum_setup()
    sp = bpy.context.scene.pem

    def labels():
        layout = _Layout()
        ui.draw_scene(layout, bpy.context)
        return [t for t in layout.labels if "scipy" in t]

    assert labels() == []
    sp.method = "DOP853"
    assert labels() == ["Integrator dop853 needs scipy, which this Blender lacks: pick another"]
    before = fingerprint()
    with pytest.raises(RuntimeError, match=r"^Error: Integrator \(Scene ▸ Magnetic Pendulum\): dop853 needs scipy, "
                                           r"which is not installed"):
        bpy.ops.pem.simulate_bake()
    assert fingerprint() == before
    # the core refuses it too, by the setting's name, before a step (not "No module named 'scipy'" from one)
    with pytest.raises(integrators.ValidationError, match=r"^settings.method: dop853 needs scipy"):
        integrators.make_integrator("dop853", None, 1e-3, None, None)


# ------------------------------------------------------------------ 7. the scene's Gravity checkbox

def test_the_scenes_gravity_checkbox_off_means_no_gravity(pem):  # noqa: F811
    obj, _ = pendulum_setup(omega=(0.0, 0.0, 0.0))       # at rest, off the vertical below its pivot
    scene = bpy.context.scene
    scene.use_gravity = False
    assert scene.pem.use_scene_gravity
    assert tuple(pem["pem_addon.pendulum.bake"].prepare(bpy.context).core.gravity) == (0.0, 0.0, 0.0)
    M0 = M(obj)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    for f in (scene.frame_start, 13, scene.frame_end):     # no torque at all: it stays where it is
        scene.frame_set(f)
        np.testing.assert_allclose(M(obj), M0, atol=TOL, err_msg=f"frame {f}")
    scene.use_gravity = True
    assert tuple(pem["pem_addon.pendulum.bake"].prepare(bpy.context).core.gravity) == (0.0, 0.0, -9.81)


# ------------------------------------------------------------------ 14. what an import replaces; animated pivots

def test_an_import_says_which_scene_settings_it_replaced_or_keeps_them(pem):  # noqa: F811
    sp = bpy.context.scene.pem
    sp.friction, sp.substeps, sp.dt = 0.5, 32, 0.002        # the user's own (the file's: 2e-4, dt = 0.001 s)
    op = _Op(_ops(pem).PEM_OT_import_scene, filepath=str(SCENES / "three_magnet.toml"), adapt_scene=False,
             replace_settings=True)
    assert op.execute(bpy.context) == {"FINISHED"}
    assert sp.friction == pytest.approx(2e-4) and sp.step_mode == "DT"   # the file's
    warnings = [text for kind, text in op.reports if kind == "WARNING"]
    assert len(warnings) == 1 and warnings[0].startswith("Scene 'Scene': the import replaced these settings with "
                                                         "the file's: ")
    for name in ("Scene Gravity", "Friction", "Step", "dt"):
        assert name in warnings[0]
    bpy.ops.wm.read_factory_settings(use_empty=True)
    sp = bpy.context.scene.pem
    sp.friction, sp.substeps = 0.5, 32
    assert bpy.ops.pem.import_scene(filepath=str(SCENES / "three_magnet.toml"), replace_settings=False) == {"FINISHED"}
    assert (sp.friction, sp.substeps, sp.step_mode, sp.use_scene_gravity) == (0.5, 32, "SUBSTEPS", True)
    assert any(o.pem.enabled for o in bpy.context.scene.objects)     # the bodies came in all the same


@pytest.mark.parametrize("how", ["keys", "parent", "constraint"])
def test_an_animated_pivot_is_named_in_the_panel_and_followed(pem, how):  # noqa: F811
    obj, piv = pendulum_setup()
    scene = bpy.context.scene
    ui = importlib.import_module(f"{pem['pem_addon.pendulum.bake'].__package__}.ui")

    def panel():
        layout = _Layout()
        ui.draw_object(layout, bpy.context, obj)
        return [t for t in layout.labels if "animated" in t]

    def bake_warnings():
        op = _Op(_ops(pem).PEM_OT_bake, confirmed=False)
        assert op.execute(bpy.context) == {"FINISHED"}
        return [text for kind, text in op.reports if kind == "WARNING" and "pivot" in text]

    assert panel() == [] and bake_warnings() == []
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    if how == "keys":
        for frame, x in ((1, 0.0), (25, 0.2)):
            piv.location.x = x
            piv.keyframe_insert("location", frame=frame)
    elif how == "parent":
        mover = empty("Mover")
        piv.parent = mover
        for frame, z in ((1, 0.0), (25, 0.1)):
            mover.location.z = z
            mover.keyframe_insert("location", frame=frame)
    else:
        target = empty("Target", location=(0.3, 0.0, 0.1))
        piv.constraints.new("COPY_LOCATION").target = target
    scene.frame_set(1)
    # the pivot is followed (tests/addon/test_animated.py): the panel says so and how, the bake warns of nothing
    assert panel() == ["Pivot 'Pivot' is animated: the pivot follows it, sampled 4× a frame"]
    assert bake_warnings() == []


# ------------------------------------------------------------------ 9. the core's item paths in the bake's words

def test_contact_warnings_name_the_objects(pem):  # noqa: F811
    """A ball hung at 30° leaning on a wall (touching, at rest): gravity presses it on without an impact, which
    the core warns about by the body's and the wall's names; the panel and report name the objects."""
    from .test_contacts import R_BALL, THETA, Z_PIVOT, L, _ball, _empty, _scene_setup

    _scene_setup(frames=6)
    ball = _ball("Ball", 0.0, _empty("Pivot", (0.0, 0.0, Z_PIVOT)), THETA)
    x = -L * np.sin(THETA) + R_BALL                           # the wall's face where the ball's side is
    bpy.ops.mesh.primitive_plane_add(size=0.1, location=(x, 0.0, Z_PIVOT - L * np.cos(THETA)),
                                     rotation=(0.0, -np.pi / 2, 0.0))   # facing −x, towards the ball
    wall = bpy.context.object
    wall.name = "Wall"
    wall.pem.enabled, wall.pem.role, wall.pem.wall_shape = True, "WALL", "PLANE"
    bpy.context.view_layer.update()
    op = _Op(_ops(pem).PEM_OT_bake, confirmed=False)
    assert op.execute(bpy.context) == {"FINISHED"}
    said = [text for kind, text in op.reports if kind == "WARNING"]
    pressing = [t for t in said if "press on each other" in t]
    assert len(pressing) == 1 and pressing[0].startswith(
        "Object 'Ball' and wall 'Wall' press on each other without an impact from t = ")
    assert "bodies[" not in bpy.context.scene.pem.last_warnings and "walls[" not in bpy.context.scene.pem.last_warnings
    assert ball.pem.baked


# ------------------------------------------------------------------ 10. absurd step counts, no silent clamp

@pytest.mark.parametrize("mode, value, steps, fix", [
    ("DT", 1e-12, "1e\\+12", "raise the time step dt"),                     # 1 s of frames / 1e-12 s
    ("SUBSTEPS", 2**31 - 1, "5.15e\\+10", "use fewer substeps per frame"),  # 24 frames × (2³¹ − 1)
])
def test_an_absurd_step_count_is_refused_with_the_number_and_the_fix(pem, mode, value, steps, fix):  # noqa: F811
    pendulum_setup()                                    # frames 1–25 at 24 fps: 1 s
    sp = bpy.context.scene.pem
    sp.step_mode = mode
    setattr(sp, "dt" if mode == "DT" else "substeps", value)
    if mode == "SUBSTEPS":
        assert sp.substeps == 2**31 - 1                 # not clamped silently to some bound
    match = rf"Scene 'Scene': {steps} integration steps .* more than the 1e\+09 a bake may take: {fix}"
    layout = _Layout()
    ui = importlib.import_module(f"{pem['pem_addon.pendulum.bake'].__package__}.ui")
    ui.draw_scene(layout, bpy.context)                  # the panel says so before the bake
    assert any(re.match(match, t) for t in layout.labels)
    before = fingerprint()
    with pytest.raises(RuntimeError, match=match):
        bpy.ops.pem.simulate_bake()
    assert fingerprint() == before


def test_substeps_beyond_the_slider_are_taken_as_typed(pem):  # noqa: F811
    pendulum_setup()
    sp = bpy.context.scene.pem
    sp.substeps = 10_000                                # above the slider's 256 and the old silent bound 4096
    assert sp.substeps == 10_000
    assert pem["pem_addon.pendulum.bake"].estimate(bpy.context)[0] == 24 * 10_000


# ------------------------------------------------------------------ 15. report texts; the legend

def test_reports_are_sentences_that_name_the_objects(pem, tmp_path):  # noqa: F811
    ops = _ops(pem)
    obj, _ = pendulum_setup()
    bpy.context.view_layer.objects.active = obj
    said = []

    def run(cls, **props):
        op = _Op(cls, **props)
        assert op.execute(bpy.context) == {"FINISHED"}
        said.extend(text for _, text in op.reports)
        return [text for _, text in op.reports]

    assert run(ops.PEM_OT_compute_mass) == ["Object 'Cube': mass 1 kg"]                 # 1000 kg/m³ × (0.1 m)³
    baked = run(ops.PEM_OT_bake, confirmed=False, to_current_frame=False)[0]
    assert baked.startswith("Baked ") and baked.endswith("; 25 keys per channel on 'Cube'")   # frames 1–25
    assert run(ops.PEM_OT_plot)[0] == "Plotted the last bake of Scene 'Scene' into image 'PEM Diagnostics'"
    out = tmp_path / "s.toml"
    assert run(ops.PEM_OT_export_scene, filepath=str(out)) == [f"Wrote Scene 'Scene' (1 body) to {out}"]
    assert run(ops.PEM_OT_clear_bake) == ["Deleted the bake of 1 object: 'Cube'"]
    assert run(ops.PEM_OT_clear_bake) == ["Scene 'Scene' has no bake to delete"]
    assert all(text[0].isupper() for text in said), said
    # an Empty for a mesh: "an empty", not "a empty"
    e = empty("Handle")
    e.pem.enabled = True
    bpy.context.view_layer.objects.active = e
    with pytest.raises(RuntimeError, match=r"Error: Object 'Handle' is an empty, not a mesh"):
        bpy.ops.pem.compute_mass_properties()


def test_the_plots_legend_sits_above_the_curves(pem, ext):  # noqa: F811
    plot = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.plotimage")
    pendulum_setup()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    img, layout = plot.chart(bpy.context.scene["pem_diagnostics"].to_dict())
    panel_top = plot.HEIGHT - plot.TOP                       # the energy panel's upper edge, px from the bottom
    for name, color, (x0, y0, x1, y1) in layout["legend"]:
        # swatch and name above the panel (outside every curve) and inside the image
        assert panel_top < y0 and y1 + 12 <= plot.HEIGHT and 0 <= x0 and x1 + 10 + plot.text_width(name) <= plot.WIDTH
        np.testing.assert_allclose(img[y0:y1, x0:x1], np.broadcast_to(color, (y1 - y0, x1 - x0, 4)), rtol=1e-6)


# ------------------------------------------------------------------ 12. overlapping parts, flipped normals

def _joined_cubes(name, offsets, size=0.1):
    """One mesh object of cubes of ``size`` (BU) at ``offsets`` from (0, 0, −0.3), joined (Ctrl J)."""
    sizes = size if isinstance(size, tuple) else (size,) * len(offsets)
    made = [cube(f"{name}.{k}", size=sizes[k], location=(dx, 0.0, -0.3)) for k, dx in enumerate(offsets)]
    bpy.ops.object.select_all(action="DESELECT")
    for o in made:
        o.select_set(True)
    bpy.context.view_layer.objects.active = made[0]
    bpy.ops.object.join()
    obj = bpy.context.object
    obj.name = name
    obj.pem.enabled, obj.pem.density = True, 1000.0
    obj.pem.pivot_mode, obj.pem.pivot_point = "POINT", (0.0, 0.0, 0.3)
    bpy.context.view_layer.update()
    return obj


def _mass_reports(pem, obj):  # noqa: F811
    """(mass computed (kg), warnings) of Compute Mass Properties on obj, and the warnings of a bake of the scene."""
    bpy.context.view_layer.objects.active = obj
    op = _Op(_ops(pem).PEM_OT_compute_mass)
    assert op.execute(bpy.context) == {"FINISHED"}
    bake = _Op(_ops(pem).PEM_OT_bake, confirmed=False)
    assert bake.execute(bpy.context) == {"FINISHED"}
    return (obj.pem.computed_mass, [t for k, t in op.reports if k == "WARNING"],
            [t for k, t in bake.reports if k == "WARNING" and obj.name in t])


def test_overlapping_parts_of_one_mesh_are_named(pem):  # noqa: F811
    bpy.context.scene.frame_end = 3
    twin = _joined_cubes("Twin", (0.0, 0.05))        # two 0.1 m cubes half in each other: 1.5 kg of solid at 1000
    mass, said, baked = _mass_reports(pem, twin)
    assert mass == pytest.approx(2.0, rel=1e-6)      # each cube's 1 kg: the shared half counted twice
    note = ("Object 'Twin': two closed parts of its mesh overlap, so the volume they share counts twice in the mass; "
            "unite them (Boolean modifier, Union) or move them apart")
    assert said == [note] and baked == [note]
    layout = _Layout()
    importlib.import_module(f"{pem['pem_addon.pendulum.bake'].__package__}.ui").draw_object(layout, bpy.context, twin)
    assert note in layout.labels
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.context.scene.frame_end = 3
    apart = _joined_cubes("Apart", (0.0, 0.1))       # face on face: 2 kg of solid, nothing shared
    mass, said, baked = _mass_reports(pem, apart)
    assert mass == pytest.approx(2.0, rel=1e-6) and said == [] and baked == []
    # meant to touch, 20 nm in (a few single-precision round-offs of its coordinates): no false warning
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.context.scene.frame_end = 3
    touching = _joined_cubes("Touching", (0.0, 0.09 - 2e-8), size=(0.1, 0.08))   # its corners inside the face
    mass, said, baked = _mass_reports(pem, touching)
    assert said == [] and baked == []


def test_a_mesh_with_inward_normals_is_named(pem):  # noqa: F811
    import bmesh

    bpy.context.scene.frame_end = 3
    obj = _joined_cubes("Inside Out", (0.0,))
    bm = bmesh.new()
    bm.from_mesh(obj.data)
    bmesh.ops.reverse_faces(bm, faces=bm.faces[:])
    bm.to_mesh(obj.data)
    bm.free()
    obj.data.update()
    mass, said, baked = _mass_reports(pem, obj)
    assert mass == pytest.approx(1.0, rel=1e-6)      # 1000 kg/m³ × (0.1 m)³, the normals turned back
    assert said == baked == ["Object 'Inside Out': the normals of its mesh point inwards; its mass was computed with "
                             "them turned outwards — recalculate them (Edit Mode ▸ Mesh ▸ Normals ▸ Recalculate "
                             "Outside)"]


# ------------------------------------------------------------------ 13. the gas build's time, stale caches, colour

def _gas_report(pem, box):  # noqa: F811
    """Build Hard-Sphere Gas (40 spheres, frames 1–4) in ``box`` through the operator; its INFO report."""
    operators = importlib.import_module(f"{pem['pem_addon.messages'].__package__}.gas.operators")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 4
    g = scene.pem_gas
    g.box, g.n, g.packing_fraction, g.seed, g.periodic = box, 40, 0.2, 3, False
    op = _Op(operators.PEM_OT_gas_build, box="", properties=type("P", (), {"is_property_set": lambda self, n: False})())
    assert op.execute(bpy.context) == {"FINISHED"}
    (text,) = [t for k, t in op.reports if k == "INFO"]
    return text, bpy.context.object


def test_the_gas_report_counts_the_engines_set_up(pem, ext, monkeypatch):  # noqa: F811
    """The engine's set-up (its first compile, here 1.5 s stood in by a pause) is part of the time reported."""
    import time

    edmd = importlib.import_module(f"{ext.__name__}.pem_physics.gas.edmd")
    real = edmd.make_engine

    def slow(*args, **kw):
        time.sleep(1.5)
        return real(*args, **kw)

    monkeypatch.setattr(edmd, "make_engine", slow)
    box = cube("Box", size=2.0, location=(0.0, 0.0, 0.0))
    t0 = time.perf_counter()
    text, obj = _gas_report(pem, box)
    outside = time.perf_counter() - t0
    m = re.search(r"collisions in (\d+\.\d+) s \((\d+\.\d) s of it setting up and compiling the engine", text)
    assert text.startswith(f"Object '{obj.name}': 40 spheres") and m, text
    total, setup = float(m[1]), float(m[2])
    # the report rounds to 0.01 s: it may read up to half of that above the time measured around it
    assert 1.5 <= total <= outside + 0.005 and setup >= 1.4


@pytest.mark.parametrize("saved", [False, True])
def test_a_rebuilt_gas_leaves_no_stale_cache_and_its_spheres_have_a_colour(pem, tmp_path, saved):  # noqa: F811
    """Unsaved: caches in the shared temporary folder (this session's own removed, another's kept); saved: next to
    the .blend."""
    box, other = cube("Box", size=2.0, location=(0.0, 0.0, 0.0)), cube("Other", size=2.0, location=(5.0, 0.0, 0.0))
    if saved:
        bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "gas.blend"))
    folder = importlib.import_module(f"{pem['pem_addon.messages'].__package__}.gas.build").cache_folder()[0]
    foreign = os.path.join(folder, ("gas_" if saved else "") + "Box_Gas_0123abcd.pc2")  # another session's, unsaved
    if not saved:
        os.makedirs(folder, exist_ok=True)
        open(foreign, "wb").close()
    _, kept = _gas_report(pem, other)
    _, first = _gas_report(pem, box)
    path = lambda o: bpy.path.abspath(o.modifiers["Gas Cache"].filepath)  # noqa: E731
    kept_file, first_file = path(kept), path(first)
    bpy.data.objects.remove(first)                     # the user deletes the gas, then builds it again
    text, second = _gas_report(pem, box)
    assert not os.path.exists(first_file) and os.path.exists(path(second)) and os.path.exists(kept_file)
    assert text.endswith("; removed 1 stale cache file(s) of earlier builds of this gas")
    if not saved:
        assert os.path.exists(foreign)
        os.remove(foreign)
    # the spheres render in a colour of their own, not the default grey
    bpy.context.scene.frame_set(2)
    dg = bpy.context.evaluated_depsgraph_get()
    mats = {m.original for i in dg.object_instances if i.is_instance and i.parent is not None
            and i.parent.original == second for m in i.object.data.materials if m is not None}
    assert len(mats) == 1
    (mat,) = mats
    assert tuple(mat.diffuse_color)[:3] != pytest.approx((0.8, 0.8, 0.8))
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    assert tuple(bsdf.inputs["Base Color"].default_value)[:3] != pytest.approx((0.8, 0.8, 0.8))
    for o in (kept, second):
        os.remove(path(o))


# ------------------------------------------------------------------ 8. the step-size warning against a measured error

def _step_error(pem, core, dt) -> float:  # noqa: F811
    """Largest difference (of orientation matrix entries) at t = 1 s between runs of ``core`` at dt and dt/8."""
    from dataclasses import replace

    simulate = pem["pem_physics.engine.simulate"].simulate
    runs = [simulate(replace(core, settings=replace(core.settings, dt=h, t_end=1.0, record_interval=dt)))
            for h in (dt, dt / 8)]
    return float(np.abs(runs[0].orientation[-1] - runs[1].orientation[-1]).max())


@pytest.mark.parametrize("mode, value, warned", [("SUBSTEPS", 16, False),   # the README's workflow: 24 fps × 16
                                                  ("DT", 0.2, True)])         # a step of 0.2 s
def test_the_step_warning_fires_when_the_measured_error_is_large_only(pem, ext, mode, value, warned):  # noqa: F811
    """The three-magnet pendulum (a rod: tiny moment about its own axis). At 16 substeps no warning, and the
    error measured against a run at an eighth of the step is below 1e-6; at 0.2 s the warning fires, and the
    measured error is above 1e-2."""
    examples = importlib.import_module(f"{ext.__name__}.pem_physics.examples")
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 24, 1, 25          # 1 s
    pem["pem_addon.pendulum.importing"].build_objects(examples.three_magnet(friction=2e-3, t_end=1.0), bpy.context)
    sp = scene.pem
    sp.step_mode = mode
    setattr(sp, "substeps" if mode == "SUBSTEPS" else "dt", value)
    plan = pem["pem_addon.pendulum.bake"].prepare(bpy.context)
    error = _step_error(pem, plan.core, plan.core.settings.dt)
    assert (error > 1e-2) if warned else (error < 1e-6), error
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert ("large for the fastest motion" in sp.last_warnings) == warned, sp.last_warnings
