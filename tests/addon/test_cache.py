"""The simulation cache with Blender's semantics (issue 26): its own frame range, the states not baked / baked /
outdated and what changed, the settings greyed while baked, Bake / Delete Bake, Bake to Current Frame, Bake All /
Delete All Bakes, and the properties' Blender units.

Oracles: frame arithmetic (which frames hold keys), the same scene baked another way (the whole range against
up to a frame; one scene alone against every scene at once), the pose before the bake, and Blender's documented
display rule for masses (value × scale_length³).
"""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import cube, empty, pem, pendulum_setup  # noqa: E402, F401


@pytest.fixture
def mods(pem, ext):  # noqa: F811
    out = dict(pem)
    for name in ("pem_addon.pendulum.cache", "pem_addon.pendulum.ui", "pem_addon.keyframes"):
        out[name] = importlib.import_module(f"{ext.__name__}.{name}")
    return out


def state(mods):
    return mods["pem_addon.pendulum.cache"].state(bpy.context)


def changes(mods):
    return mods["pem_addon.pendulum.cache"].changes(bpy.context)


def key_frames(mods, obj) -> np.ndarray:
    """The frames of the object's baked location keys (X channel)."""
    kf = mods["pem_addon.keyframes"]
    for fcurves in kf._slot_fcurve_collections(obj):
        for fc in fcurves:
            if fc.data_path == "location" and fc.array_index == 0:
                return np.array([k.co[0] for k in fc.keyframe_points])
    return np.empty(0)


def poses(obj, frames, scene=None) -> np.ndarray:
    out = []
    for f in frames:
        (scene or bpy.context.scene).frame_set(int(f))
        out.append([x for r in obj.matrix_world for x in r])
    return np.array(out)


# ------------------------------------------------------------------ states

def test_a_bake_is_baked_until_an_input_changes_and_scrubbing_changes_nothing(mods):
    obj, piv = pendulum_setup()
    assert state(mods) == "NOT_BAKED"
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert state(mods) == "BAKED"
    for f in (1, 7, 25, 3):  # the bodies move, the inputs do not
        bpy.context.scene.frame_set(f)
        assert state(mods) == "BAKED", f
    assert bpy.context.scene.pem.bake_frame_start == 1 and bpy.context.scene.pem.bake_frame_end == 25


def _change_setting(obj, piv):
    bpy.context.scene.pem.substeps = 32


def _change_scale(obj, piv):
    obj.scale = (1.5, 1.5, 1.5)


def _change_pose(obj, piv):
    bpy.context.scene.frame_set(9)
    obj.location.x += 0.01   # moved by hand after the bake


def _change_mesh(obj, piv):
    obj.data.vertices[0].co.x += 0.01
    obj.data.update()
    bpy.context.view_layer.update()


def _change_pivot(obj, piv):
    piv.location.z += 0.02
    bpy.context.view_layer.update()


def _change_dipole(obj, piv):
    obj.pem.dipoles.add().moment = (0.0, 0.0, 0.5)


def _change_density(obj, piv):
    obj.pem.density = 1200.0


def _change_range(obj, piv):
    bpy.context.scene.frame_end = 30


def _change_gravity(obj, piv):
    bpy.context.scene.use_gravity = False


def _change_unit_scale(obj, piv):
    bpy.context.scene.unit_settings.scale_length = 0.01      # the scene's metres per unit: every length changes


def _change_fps_base(obj, piv):
    bpy.context.scene.render.fps_base = 1.001                # 24 → 23.976 fps: another clock


@pytest.mark.parametrize("change, what", [
    (_change_setting, "simulation settings"), (_change_range, "simulation settings"),
    (_change_unit_scale, "simulation settings"), (_change_fps_base, "simulation settings"),
    (_change_gravity, "simulation settings"), (_change_scale, "Object 'Cube'"), (_change_pose, "Object 'Cube'"),
    (_change_mesh, "Object 'Cube'"), (_change_pivot, "Object 'Cube'"), (_change_dipole, "Object 'Cube'"),
    (_change_density, "Object 'Cube'"),
])
def test_any_input_changed_after_the_bake_marks_it_outdated_and_names_it(mods, change, what):
    obj, piv = pendulum_setup()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert state(mods) == "BAKED"
    change(obj, piv)
    assert state(mods) == "OUTDATED"
    assert changes(mods) == [what]
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}   # a re-bake reads the change and is up to date again
    assert state(mods) == "BAKED", changes(mods)


def test_an_animated_pivot_keeps_the_state_while_scrubbing_and_its_keys_are_inputs(mods):
    obj, piv = pendulum_setup()
    for frame, x in ((1, 0.0), (25, 0.05)):
        piv.location.x = x
        piv.keyframe_insert("location", index=0, frame=frame)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    for f in (1, 12, 25):       # the pivot moves over the frames; its keys do not
        bpy.context.scene.frame_set(f)
        assert state(mods) == "BAKED", f
    kf = mods["pem_addon.keyframes"]
    fc = next(fc for fcs in kf._slot_fcurve_collections(piv) for fc in fcs if fc.data_path == "location")
    fc.keyframe_points[0].co.y = 0.01  # the pivot's start moves
    assert changes(mods) == ["Object 'Cube'"]


def _shaken_pivot(mods):
    """A pendulum whose pivot is keyed along x, with a Noise modifier on that channel (strength 0.02)."""
    obj, piv = pendulum_setup()
    for frame, x in ((1, 0.0), (25, 0.05)):
        piv.location.x = x
        piv.keyframe_insert("location", index=0, frame=frame)
    kf = mods["pem_addon.keyframes"]
    fc = next(fc for fcs in kf._slot_fcurve_collections(piv) for fc in fcs if fc.data_path == "location")
    noise = fc.modifiers.new("NOISE")
    noise.strength, noise.scale = 0.02, 3.0
    return obj, piv, noise


def test_an_f_curve_modifier_of_an_animated_pivot_is_an_input(mods):
    """The bake reads the pivot's evaluated motion: a Noise modifier's strength changes it (a re-bake differs),
    so the bake is outdated — and scrubbing, which moves the pivot, changes nothing."""
    obj, piv, noise = _shaken_pivot(mods)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    first = poses(obj, range(1, 26))
    for f in (1, 7, 25):
        bpy.context.scene.frame_set(f)
        assert state(mods) == "BAKED", (f, changes(mods))
    noise.strength = 0.04
    assert changes(mods) == ["Object 'Cube'"]
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert state(mods) == "BAKED"
    assert np.max(np.abs(poses(obj, range(1, 26)) - first)) > 1e-3      # what the outdated state said


@pytest.mark.parametrize("edit", ["driver", "constraint", "parent's modifier", "unkeyed channel"])
def test_what_else_moves_an_animated_pivot_is_an_input(mods, edit):
    """Drivers, constraints, an animated parent's modifiers and the channels the keys leave alone all move the
    pivot the bake samples."""
    obj, piv, noise = _shaken_pivot(mods)
    if edit == "driver":
        d = piv.driver_add("location", 2).driver
        d.expression = "0.01"
    elif edit == "constraint":
        c = piv.constraints.new("LIMIT_LOCATION")
        c.use_max_x, c.max_x = True, 0.04
    elif edit == "parent's modifier":
        parent = empty("Shaker", location=(0.0, 0.0, 0.0))
        parent.keyframe_insert("location", index=1, frame=1)
        parent.location.y = 0.02
        parent.keyframe_insert("location", index=1, frame=25)
        piv.parent = parent
        kf = mods["pem_addon.keyframes"]
        fc = next(fc for fcs in kf._slot_fcurve_collections(parent) for fc in fcs if fc.data_path == "location")
        mod = fc.modifiers.new("NOISE")
        mod.strength = 0.01
    bpy.context.view_layer.update()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert state(mods) == "BAKED"
    if edit == "driver":
        piv.animation_data.drivers[0].driver.expression = "0.02"
    elif edit == "constraint":
        piv.constraints[0].max_x = 0.03
    elif edit == "parent's modifier":
        mod.strength = 0.02
    else:
        piv.location.y = 0.01           # a component no key sets: the pivot moves
    bpy.context.view_layer.update()
    assert changes(mods) == ["Object 'Cube'"], edit


def test_a_body_added_after_the_bake_is_named_new(mods):
    obj, piv = pendulum_setup()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    other = cube("Other", location=(0.5, 0.0, -0.3))
    other.pem.enabled, other.pem.role = True, "FIXED"
    other.pem.dipoles.add()
    assert changes(mods) == ["Object 'Other' (new)"]
    other.pem.enabled = False
    assert state(mods) == "BAKED"


def test_delete_bake_puts_every_body_back_and_forgets_the_bake(mods):
    obj, piv = pendulum_setup()
    before = [x for r in obj.matrix_world for x in r]
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    bpy.context.scene.frame_set(13)
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert state(mods) == "NOT_BAKED" and not obj.pem.baked
    assert bpy.context.scene.pem.bake_inputs == "" and bpy.context.scene.pem.bake_frame_end == 0
    np.testing.assert_allclose([x for r in obj.matrix_world for x in r], before, atol=1e-7)


# ------------------------------------------------------------------ frame ranges

def test_the_simulation_has_its_own_frame_range_starting_as_the_scenes(mods):
    obj, piv = pendulum_setup()                     # scene frames 1–25
    sp = bpy.context.scene.pem
    sp.use_scene_range = False                      # the own range starts as the scene's, as a point cache
    assert (sp.frame_start, sp.frame_end) == (1, 25)
    sp.frame_start, sp.frame_end = 5, 30            # beyond the scene's end: a cache may outlast the range
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    np.testing.assert_array_equal(key_frames(mods, obj), np.arange(5, 31))  # a key a frame, 5 to 30
    assert (sp.bake_frame_start, sp.bake_frame_end) == (5, 30)
    # the same motion as the scene range 5–30 baked: the own range is the scene's range for the physics
    own = poses(obj, range(5, 31))
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    sp.use_scene_range = True
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 5, 30
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    np.testing.assert_array_equal(poses(obj, range(5, 31)), own)


def test_an_empty_own_range_is_refused_naming_the_fields(mods):
    pendulum_setup()
    sp = bpy.context.scene.pem
    sp.use_scene_range = False
    sp.frame_start, sp.frame_end = 40, 40
    with pytest.raises(RuntimeError, match=r"simulation's frame range \(Cache ▸ Start, End\) 40–40 is empty"):
        bpy.ops.pem.simulate_bake()
    assert state(mods) == "NOT_BAKED"


def test_bake_to_current_frame_is_the_start_of_the_whole_bake(mods):
    obj, piv = pendulum_setup()                     # frames 1–25
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    whole = poses(obj, range(1, 26))
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    bpy.context.scene.frame_set(12)
    assert bpy.ops.pem.simulate_bake(to_current_frame=True) == {"FINISHED"}
    np.testing.assert_array_equal(key_frames(mods, obj), np.arange(1, 13))
    assert bpy.context.scene.pem.bake_frame_end == 12 and state(mods) == "BAKED"
    # the same steps from the same start: the poses agree to the keys' single precision
    np.testing.assert_allclose(poses(obj, range(1, 13)), whole[:12], rtol=0, atol=1e-6)


def test_bake_to_a_frame_not_after_the_start_is_refused(mods):
    pendulum_setup()
    bpy.context.scene.frame_set(1)
    with pytest.raises(RuntimeError, match="current frame 1 is not after the simulation's start frame 1"):
        bpy.ops.pem.simulate_bake(to_current_frame=True)
    assert state(mods) == "NOT_BAKED"


# ------------------------------------------------------------------ every scene

def test_bake_all_bakes_every_scene_as_each_alone_and_delete_all_undoes_it(mods):
    obj, piv = pendulum_setup()
    first = bpy.context.scene
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    alone = poses(obj, range(1, 26))
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    start = [x for r in obj.matrix_world for x in r]
    bpy.ops.scene.new(type="FULL_COPY")             # the same pendulum in a second scene
    second = next(s for s in bpy.data.scenes if s != first)
    copy = next(o for o in second.objects if o.pem.enabled)
    assert copy != obj
    copy.pem.pivot_object = next(o for o in second.objects if o.type == "EMPTY")
    assert bpy.ops.pem.bake_all() == {"FINISHED"}
    cache = mods["pem_addon.pendulum.cache"]
    for scene in (first, second):
        with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
            assert cache.state(bpy.context) == "BAKED", scene.name
    assert obj.pem.baked and copy.pem.baked
    np.testing.assert_array_equal(key_frames(mods, copy), np.arange(1, 26))
    np.testing.assert_allclose(poses(obj, range(1, 26), first), alone, rtol=0, atol=1e-6)
    kf = mods["pem_addon.keyframes"]
    for f in (1, 13, 25):  # the copy's keys are the original's: the same physics read through the other scene
        got = [fc.evaluate(f) for fcs in kf._slot_fcurve_collections(copy) for fc in fcs]
        want = [fc.evaluate(f) for fcs in kf._slot_fcurve_collections(obj) for fc in fcs]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    assert bpy.ops.pem.delete_all_bakes() == {"FINISHED"}
    assert not obj.pem.baked and not copy.pem.baked
    first.frame_set(1)
    np.testing.assert_allclose([x for r in obj.matrix_world for x in r], start, atol=1e-7)


def test_bake_all_skips_scenes_already_baked(mods, ext):
    obj, piv = pendulum_setup()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    ops = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.operators")
    assert ops.PEM_OT_bake_all._plans(None, bpy.context) == []  # nothing to do: baked and up to date
    bpy.context.scene.pem.substeps = 8                          # outdated: baked again
    assert [s.name for s, _ in ops.PEM_OT_bake_all._plans(None, bpy.context)] == [bpy.context.scene.name]


# ------------------------------------------------------------------ the panels

class _Layout:
    """Records what a panel draws: properties (name, enabled, active), labels, operators (idname, text, props),
    and whether property split is on where each property is drawn."""

    def __init__(self, root=None, parent=None):
        self.root = root or self
        self.enabled = parent.enabled if parent else True
        self.active = parent.active if parent else True
        self.use_property_split = parent.use_property_split if parent else False
        self.use_property_decorate = True
        if root is None:
            self.props, self.labels, self.operators = [], [], []

    def prop(self, data, name, **kw):
        self.root.props.append((name, self.enabled, self.active, self.use_property_split))

    def label(self, text="", **kw):
        self.root.labels.append(text)

    def template_list(self, ui_list, *a, **kw):
        self.root.props.append((ui_list, self.enabled, self.active, self.use_property_split))

    def operator(self, idname, text="", **kw):
        props = type("Props", (), {})()
        self.root.operators.append((idname, text, props))
        return props

    def _child(self, *a, **kw):
        return _Layout(self.root, self)

    row = column = box = split = _child


def test_the_cache_panel_shows_each_state_and_its_buttons(mods):
    ui = mods["pem_addon.pendulum.ui"]
    obj, piv = pendulum_setup()

    def draw():
        layout = _Layout()
        ui.draw_cache(layout, bpy.context)
        return layout

    layout = draw()
    assert "Not baked" in layout.labels
    assert [(i, t) for i, t, _ in layout.operators] == [
        ("pem.simulate_bake", "Bake"), ("pem.clear_bake", "Delete Bake"),
        ("pem.simulate_bake", "Bake to Current Frame"), ("pem.bake_all", "Bake All"),
        ("pem.delete_all_bakes", "Delete All Bakes")]
    assert layout.operators[2][2].to_current_frame is True
    assert ("frame_start", True, True, True) in layout.props      # the range is editable before a bake
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    layout = draw()
    assert "Baked: frames 1–25" in layout.labels
    assert ("frame_start", False, True, True) in layout.props     # fixed while baked, as a point cache's
    bpy.context.scene.pem.substeps = 20
    layout = draw()
    assert "Outdated bake (frames 1–25): changed since" in layout.labels and "    Simulation settings" in layout.labels


def test_settings_are_greyed_while_baked_and_laid_out_as_blenders(mods):
    ui = mods["pem_addon.pendulum.ui"]
    obj, piv = pendulum_setup()

    def draw(fn, *args):
        layout = _Layout()
        fn(layout, bpy.context, *args)
        return {name: (enabled, active, split) for name, enabled, active, split in layout.props}

    for fn, args, name in ((ui.draw_scene, (), "substeps"), (ui.draw_object, (obj,), "density")):
        assert draw(fn, *args)[name] == (True, True, True), fn    # live, labels on the left
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    for fn, args, name in ((ui.draw_scene, (), "substeps"), (ui.draw_object, (obj,), "density")):
        assert draw(fn, *args)[name] == (True, False, True), fn   # greyed, still editable (marks it outdated)
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert draw(ui.draw_scene)["substeps"] == (True, True, True)


# ------------------------------------------------------------------ units

def test_properties_carry_blender_units(mods):
    Obj = bpy.types.Object.bl_rna.properties["pem"].fixed_type.bl_rna.properties
    Scn = bpy.types.Scene.bl_rna.properties["pem"].fixed_type.bl_rna.properties
    units = {name: Obj[name].unit for name in ("mass", "pivot_point", "velocity", "angular_velocity",
                                               "orbit_omega", "orbit_phase", "manual_com")}
    units |= {"dt": Scn["dt"].unit, "gravity": Scn["gravity"].unit, "field_omega": Scn["field_omega"].unit}
    assert units == {"mass": "MASS", "pivot_point": "LENGTH", "velocity": "VELOCITY", "angular_velocity": "ROTATION",
                     "orbit_omega": "ROTATION", "orbit_phase": "ROTATION", "manual_com": "LENGTH",
                     "dt": "TIME_ABSOLUTE", "gravity": "ACCELERATION", "field_omega": "ROTATION"}


def test_a_mass_typed_in_scene_units_reaches_the_core_in_kg(mods):
    """1 BU = 1 cm: Blender shows a mass property as its value × scale_length³ (BKE_scene_unit_scale), so what the
    panel shows as 2 kg is stored as 2·10⁶ and must reach the core as 2 kg."""
    obj, piv = pendulum_setup()
    scene = bpy.context.scene
    scene.unit_settings.system = "METRIC"
    scale = 0.01
    scene.unit_settings.scale_length = scale
    p = obj.pem
    p.mass_mode = "MASS"
    p.mass = 2.0 / scale**3
    shown = bpy.utils.units.to_string("METRIC", "MASS", p.mass * scale**3)
    assert shown in ("2 kg", "2.0 kg", "2.000 kg") or shown.replace(" ", "").startswith("2kg"), shown
    plan = mods["pem_addon.pendulum.bake"].prepare(bpy.context)
    mass = plan.core.bodies[plan.objects.index(obj)].resolved_mass_properties().mass
    assert mass == pytest.approx(2.0, rel=1e-7)


def test_bake_all_from_the_button_runs_on_a_thread_and_applies_on_the_main_thread(mods, ext):
    """The modal path (progress, Esc) bakes what the script path bakes."""
    from .test_cancel import _Context, _Event, _Recorder

    ops = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.operators")
    obj, piv = pendulum_setup()
    assert bpy.ops.pem.bake_all() == {"FINISHED"}
    want = poses(obj, range(1, 26))
    assert bpy.ops.pem.delete_all_bakes() == {"FINISHED"}
    cls = ops.PEM_OT_bake_all
    op = type("Op", (ops.ModalJob,), {"report": lambda self, *a: self.reports.append(a), "reports": [],
                                      **{k: getattr(cls, k) for k in ("invoke", "_job_done", "_plans", "_apply",
                                                                      "cancel_message", "job_label")}})()
    wm = _Recorder()
    ctx = _Context(wm)
    assert op.invoke(ctx, None) == {"RUNNING_MODAL"}
    op._thread.join()
    assert not obj.pem.baked                          # the thread computes; only modal() writes the scene
    assert op.modal(ctx, _Event("TIMER")) == {"FINISHED"}, op.reports
    assert obj.pem.baked and state(mods) == "BAKED"
    np.testing.assert_array_equal(poses(obj, range(1, 26)), want)


def test_bake_all_refuses_by_scene_and_changes_no_scene(mods):
    """A scene that cannot bake (a pendulum without a pivot) stops Bake All before anything runs, naming it; the
    other scene is left unbaked."""
    obj, piv = pendulum_setup()
    first = bpy.context.scene
    bpy.ops.scene.new(type="FULL_COPY")
    second = next(s for s in bpy.data.scenes if s != first)
    copy = next(o for o in second.objects if o.pem.enabled)
    copy.pem.pivot_object = None                      # the copy has no pivot
    with pytest.raises(RuntimeError, match=re.escape(f"Scene '{second.name}': Object '{copy.name}' has no pivot")):
        bpy.ops.pem.bake_all()
    assert not obj.pem.baked and not copy.pem.baked


def test_a_body_that_no_longer_moves_is_unbaked_by_the_next_bake(mods):
    """Baked as a pendulum, then made a fixed magnet: the next bake keys it no more and puts it back where it was
    before its bake (its own start pose), as Delete Bake would."""
    obj, piv = pendulum_setup()
    before = [x for r in obj.matrix_world for x in r]
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"} and obj.pem.baked
    other = cube("Other", location=(0.5, 0.0, -0.3))   # a second pendulum keeps the scene a simulation
    other.pem.enabled, other.pem.pivot_object = True, piv
    obj.pem.role = "FIXED"
    obj.pem.dipoles.add().moment = (0.0, 0.0, 0.1)
    bpy.context.scene.frame_set(13)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert not obj.pem.baked and other.pem.baked and state(mods) == "BAKED"
    for f in (1, 13, 25):
        bpy.context.scene.frame_set(f)
        np.testing.assert_allclose([x for r in obj.matrix_world for x in r], before, atol=1e-7)


def test_the_last_bakes_line_never_says_baked_of_an_outdated_or_deleted_bake(mods):
    from .test_translation import _Layout

    ui = mods["pem_addon.pendulum.ui"]
    pendulum_setup()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    status = bpy.context.scene.pem.status
    assert status.startswith("Baked ")

    def lines():
        layout = _Layout()
        ui.draw_scene(layout, bpy.context)
        return [t for t in layout.labels if status in t]

    assert lines() == [status]
    bpy.context.scene.pem.substeps = 20                      # outdated, as the Cache panel says
    assert state(mods) == "OUTDATED"
    assert lines() == [f"Last bake (outdated: see Cache): {status}"]
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert lines() == [f"Last bake (deleted): {status}"]
