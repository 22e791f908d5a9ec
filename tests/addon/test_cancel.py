"""Cancels end clean (Ctrl-C in a script, an object deleted mid-bake) and long bakes are bounded and estimated."""

from __future__ import annotations

import importlib

import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import fingerprint, pem, pendulum_setup  # noqa: E402, F401


def test_ctrl_c_during_the_run_cancels_and_changes_nothing(pem, monkeypatch):  # noqa: F811
    add_bake = pem["pem_addon.pendulum.bake"]
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
    add_bake = pem["pem_addon.pendulum.bake"]
    obj, _ = pendulum_setup()
    plan = add_bake.prepare(bpy.context)
    assert add_bake.deleted_objects(plan) == []
    bpy.data.objects.remove(obj)            # what the modal bake finds when its thread is done
    assert add_bake.deleted_objects(plan) == ["Cube"]


def test_substeps_are_bounded_and_the_run_is_estimated(pem):  # noqa: F811
    add_bake = pem["pem_addon.pendulum.bake"]
    pendulum_setup()
    sp = bpy.context.scene.pem
    sp.substeps = 2**31 - 1  # kept as typed (no silent clamp), refused with the number (test_user_trial.py)
    assert sp.substeps == 2**31 - 1
    sp.substeps = 16
    steps, seconds, measured = add_bake.estimate(bpy.context)
    assert steps == 16 * 24 and not measured               # 24 frames at 16 substeps; no bake yet
    # one moving body, at the assumed speed of the engine that will run
    assert seconds in (pytest.approx(steps / add_bake.PRIOR_RATE["numba"]),
                       pytest.approx(steps / add_bake.PRIOR_RATE["numpy"]))
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    steps, seconds, measured = add_bake.estimate(bpy.context)
    assert measured and seconds == pytest.approx(steps * sp.last_wall_time / sp.last_steps)


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
    messages = pem["pem_addon.messages"]
    obj, _ = pendulum_setup()
    objs = [obj]
    say = messages.object_message
    assert say("settings.t_end: t_end / dt = 2.5 is not a whole number", objs).startswith(
        "frame range (Output ▸ Frame Range): t_end / dt")
    assert say("friction: must be ≥ 0, got -1", objs) == "Friction (Scene ▸ Magnetic Pendulum): must be ≥ 0, got -1"
    assert say("bodies[0].angular_velocity: expected 3 numbers", objs) == (
        "Object 'Cube': Angular Velocity (Physics ▸ Magnetic Pendulum): expected 3 numbers")
    assert say("bodies[0].dipoles[1].moment: expected 3 numbers", objs) == (
        "Object 'Cube' dipole #1 moment: expected 3 numbers")
    # a path below a field that has no panel name keeps its parts apart (it read "pivot_motionpositions[4]")
    assert say("bodies[0].pivot_motion.positions[4]: is not finite", objs) == (
        "Object 'Cube': pivot_motion positions[4]: is not finite")
    assert say("field: must be finite", objs).startswith("External Field (Scene ▸ Magnetic Pendulum)")
    # and through the operator: a scene value the core refuses
    bpy.context.scene.pem.field_mode = "UNIFORM"
    bpy.context.scene.pem.field = (float("nan"), 0.0, 0.0)
    with pytest.raises(RuntimeError, match=r"External Field \(Scene ▸ Magnetic Pendulum\)"):
        bpy.ops.pem.simulate_bake()


class _Recorder:
    """A window manager that records what the operator asks of it (headless Blender shows no dialog)."""

    def __init__(self):
        self.calls = []

    def invoke_confirm(self, op, event, **kw):
        self.calls.append(("invoke_confirm", kw))
        return {"RUNNING_MODAL"}

    def __getattr__(self, name):  # progress_begin, event_timer_add, modal_handler_add
        return lambda *a, **kw: self.calls.append((name, kw))


class _Context:
    """bpy.context with the recording window manager (and a workspace whose status text it records)."""

    def __init__(self, wm):
        self.window_manager = wm
        self.workspace = wm

    def __getattr__(self, name):
        return getattr(bpy.context, name)


def _operator(ops):
    """An object that runs the bake operator's own invoke (its class methods) outside Blender's event loop."""
    cls = ops.PEM_OT_bake
    return type("Op", (ops.ModalJob,), {"confirmed": False, "to_current_frame": False,
                                        "report": lambda self, *a: self.reports.append(a), "_frame_end": cls._frame_end,
                                        "reports": [], "invoke": cls.invoke, "_start": cls._start,
                                        "_job_done": cls._job_done, "cancel_message": cls.cancel_message})()


class _Event:
    def __init__(self, type):
        self.type = type


def _keyed_matrices(obj, frames):
    out = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        out.append([x for r in obj.matrix_world for x in r])
    return out


def test_the_modal_bake_applies_on_the_main_thread_what_a_script_bake_writes(pem):  # noqa: F811
    ops = pem["pem_addon.pendulum.operators"]
    obj, _ = pendulum_setup()
    wm, op = _Recorder(), _operator(ops)
    ctx = _Context(wm)
    assert op.invoke(ctx, None) == {"RUNNING_MODAL"}
    assert op.modal(ctx, _Event("MOUSEMOVE")) == {"PASS_THROUGH"}
    op._thread.join()
    assert not obj.pem.baked                          # the thread computes; only modal() writes the scene
    assert op.modal(ctx, _Event("TIMER")) == {"FINISHED"}
    names = [c[0] for c in wm.calls]
    assert "progress_update" in names and names[-3:] == ["event_timer_remove", "progress_end", "status_text_set"]
    assert obj.pem.baked and op.reports[0][0] == {"INFO"}
    modal = _keyed_matrices(obj, (1, 13, 25))
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}  # the script path, on the same scene
    assert _keyed_matrices(obj, (1, 13, 25)) == modal


def test_esc_in_the_modal_bake_changes_nothing(pem):  # noqa: F811
    ops = pem["pem_addon.pendulum.operators"]
    pendulum_setup()
    before = fingerprint()
    wm, op = _Recorder(), _operator(ops)
    ctx = _Context(wm)
    assert op.invoke(ctx, None) == {"RUNNING_MODAL"}
    assert op.modal(ctx, _Event("ESC")) == {"CANCELLED"}
    assert op._stop
    op._thread.join(timeout=60)
    assert op.reports == [({"WARNING"}, "Bake cancelled; nothing was changed")]
    assert [c[0] for c in wm.calls][-3:] == ["event_timer_remove", "progress_end", "status_text_set"]
    assert fingerprint() == before


def test_esc_while_the_engine_compiles_returns_at_once_and_no_second_run_overlaps(pem, monkeypatch):  # noqa: F811
    """A first bake may sit in numba's compiler (~10 s, not interruptible): Esc gives control back at once, the
    thread finishes on its own and its result is never applied, and until it has ended no other bake or gas
    build starts (their poll says why)."""
    import threading

    ops, add_bake, jobs = pem["pem_addon.pendulum.operators"], pem["pem_addon.pendulum.bake"], pem["pem_addon.jobs"]
    pendulum_setup()
    before = fingerprint()
    compiling, release = threading.Event(), threading.Event()
    real = add_bake.run

    def slow_first_compile(plan, progress=None, stop=None):
        compiling.set()
        release.wait(60)            # the compiler ignores stop() while it works
        return real(plan, progress=progress, stop=stop)

    monkeypatch.setattr(add_bake, "run", slow_first_compile)
    wm, op = _Recorder(), _operator(ops)
    ctx = _Context(wm)
    assert op.invoke(ctx, None) == {"RUNNING_MODAL"}
    assert compiling.wait(30)
    assert op.modal(ctx, _Event("ESC")) == {"CANCELLED"}   # returned while the "compile" still blocks: no wait
    assert op._thread.is_alive() and not release.is_set()
    assert "still finishing in the background" in jobs.busy()
    with pytest.raises(RuntimeError, match="still finishing in the background"):
        bpy.ops.pem.simulate_bake()
    release.set()
    op._thread.join(timeout=60)
    assert jobs.busy() is None
    assert fingerprint() == before                                     # the finished run was never applied
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}                 # and the next bake runs


def test_a_long_bake_asks_before_it_starts(pem):  # noqa: F811
    add_bake, ops = pem["pem_addon.pendulum.bake"], pem["pem_addon.pendulum.operators"]
    pendulum_setup()
    sp = bpy.context.scene.pem
    sp.last_steps, sp.last_wall_time = 10, 10.0      # 1 step/s measured here: the bake would take minutes
    steps, seconds, measured = add_bake.estimate(bpy.context)
    assert measured and seconds == pytest.approx(steps / 1.0) and add_bake.needs_confirmation(seconds)
    before = fingerprint()
    wm, op = _Recorder(), _operator(ops)
    assert op.invoke(_Context(wm), None) == {"RUNNING_MODAL"}
    (what, kw), = wm.calls
    assert what == "invoke_confirm" and kw["confirm_text"] == "Bake" and kw["title"] == "Long bake"
    assert f"{steps:,} integration steps" in kw["message"] and "last bake's speed" in kw["message"]
    assert op.confirmed                              # the dialog's OK runs execute(), which then bakes
    assert fingerprint() == before                   # nothing baked or started before the answer


def test_a_short_bake_starts_at_once_and_scripts_are_never_asked(pem):  # noqa: F811
    add_bake, ops = pem["pem_addon.pendulum.bake"], pem["pem_addon.pendulum.operators"]
    pendulum_setup()
    wm, op = _Recorder(), _operator(ops)
    steps, seconds, _ = add_bake.estimate(bpy.context)
    assert not add_bake.needs_confirmation(seconds)
    assert op.invoke(_Context(wm), None) == {"RUNNING_MODAL"}
    assert [c[0] for c in wm.calls] == ["progress_begin", "event_timer_add", "modal_handler_add"]
    op._thread.join()
    assert op._error is None and op._result is not None
    # a script (execute, as blender -b runs it) bakes a long scene without asking
    sp = bpy.context.scene.pem
    sp.last_steps, sp.last_wall_time = 10, 10.0
    assert add_bake.needs_confirmation(add_bake.estimate(bpy.context)[1])
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
