"""Live playback: an unbaked scene simulated as the timeline plays, as Blender's Rigid Body World plays one.

With *Simulate on Playback* on (``Scene.pem.live_playback``) and nothing baked, a frame change shows every moving
body where the simulation puts it at that frame. As soon as the scene is read, a thread simulates the whole range
(:data:`BACKGROUND`; the compiled kernels release the GIL), so playback mostly reads frames already made; the
frames simulated so far are kept (the live cache); a frame past them waits for the thread, or, without one, is
simulated from the start pose up to it in runs that at least double the cached span (at most twice one run over
the range); a frame before them is read from the cache; the last frame holds past the range's end. An edit of
what the simulation reads (the bake cache's fingerprint, :func:`.cache.inputs`) stops the thread, frees the live
cache and puts every body back in its start pose until it is simulated again. A bake stays the way to make keys;
a baked scene plays its keys.

The pose is written into the bodies' delta transforms, never into their own location and rotation: the start
pose is untouched and every other part of the add-on reads it as before (:data:`..keyframes.LIVE_DELTAS` marks
the objects whose deltas are live poses; :func:`.cache.inputs` reads them as zero). A body with delta transforms
of its own, or in the Axis Angle rotation mode (which has no delta rotation in Python), is refused by name. A
file is saved with the deltas cleared.

Reading the scene (:func:`.bake.prepare`) changes the frame, which a frame-change handler must not do: it runs
on a timer after an edit (:func:`prepare` is the direct call for scripts, ``blender -b`` and tests); the frame
handler only runs the core on the prepared scene and writes the deltas.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import bpy
import mathutils
import numpy as np

from ...pem_physics.errors import PemError
from ...pem_physics.io import bake as core_bake
from ...pem_physics.model import TabulatedMotion
from .. import handlers, messages
from ..keyframes import IDENTITY_DELTAS, LIVE_DELTAS, clear_live_deltas
from . import bake, cache

#: The live cache. "scene": whose; "plan": the prepared bake (:class:`.bake.Plan`) or None; "inputs": the
#: fingerprint it was read with; "poses": {object name: (delta locations (K,3) BU, delta quaternions (K,4))}
#: for frames start … "last"; "error": why there is none (the panel's words); "busy": inside prepare or a run
#: (our own frame changes are no edits); "seconds": wall time of the last run; "own": each moving object's own
#: location and quaternion (what the deltas are taken from).
_state = {"scene": None, "plan": None, "inputs": None, "poses": {}, "last": 0, "error": "", "busy": False,
          "stale": False, "seconds": 0.0, "own": {}}


#: Simulate the whole range on a thread as soon as the scene is read (the compiled kernels release the GIL), so
#: that playback reads frames already made and a frame past them waits only for the rest; off, a frame past the
#: cache runs where it is asked for (the fallback when the thread's run fails).
BACKGROUND = True

#: The thread's run: "thread", "stop" (its Event), "result" ((generation, outcome) when it ended), "gen" (the
#: current generation: a run started before a clear or an edit is ignored when it ends).
_job = {"thread": None, "stop": None, "result": None, "gen": 0}


@dataclasses.dataclass(frozen=True)
class _Named:
    """An object's name where the core's run needs an object (keys, messages): no Blender data on the thread."""

    name: str


def clear() -> None:
    _stop_job()
    _state.update(scene=None, plan=None, inputs=None, poses={}, last=0, error="", stale=False, seconds=0.0,
                  own={})


def error(scene=None) -> str:
    """Why live playback shows nothing (the panel's words), or "": of ``scene`` when given."""
    return _state["error"] if scene is None or _state["scene"] == scene.name else ""


def cached_frames(scene) -> tuple[int, int] | None:
    """(first, last) frame of the live cache of ``scene``, or None."""
    if _state["plan"] is None or _state["scene"] != scene.name or _state["stale"]:
        return None
    return _state["plan"].frame_start, _state["last"]


def active(scene) -> bool:
    """Whether frame changes of ``scene`` play the simulation live: switched on, and nothing baked."""
    return scene.pem.live_playback and not cache.is_baked(scene)


def _moving(plan) -> list:
    """The plan's objects that the simulation moves (the ones a bake keys): pendulums, free bodies, magnets
    driven by a motion of the core (a magnet following its own animation plays it)."""
    return [obj for obj, body in zip(plan.objects, plan.core.bodies)
            if body.role in ("pendulum", "free") or (body.role == "driven" and not isinstance(
                body.motion, TabulatedMotion))]


def _check(objects) -> None:
    """Refuse (AddonError naming the object) a moving body whose delta transforms are its own."""
    for obj in objects:
        if obj.get(LIVE_DELTAS):
            continue
        if obj.rotation_mode == "AXIS_ANGLE":
            raise messages.AddonError(f"Object '{obj.name}' uses the Axis Angle rotation mode, which live playback "
                                      "cannot offset: set it to Quaternion or an Euler order, or bake")
        own = [name for name, zero in IDENTITY_DELTAS.items() if tuple(getattr(obj, name)) != tuple(zero)]
        if own or tuple(obj.delta_scale) != (1.0, 1.0, 1.0):
            raise messages.AddonError(f"Object '{obj.name}' has delta transforms of its own, where live playback "
                                      "writes its pose: apply or clear them (Object ▸ Apply / Clear), or bake")


def prepare(context) -> bool:
    """Read the scene in its start pose (:func:`.bake.prepare`) and free the live cache; then show the current
    frame. False, with :func:`error` saying why, when the scene is refused."""
    scene = context.scene
    release(scene)
    clear()
    _state.update(scene=scene.name, busy=True)
    try:
        plan = bake.prepare(context)
        plan.prepared = None   # the runs are of the cached span, not the whole range
        moving = _moving(plan)
        _check(moving)
        own = {o.name: (np.array(o.location, dtype=float), np.array(_own_quaternion(o), dtype=float))
               for o in moving}
        _state.update(plan=plan, inputs=plan.inputs, last=plan.frame_start, own=own)
    except (messages.AddonError, PemError, ValueError, RuntimeError) as err:
        _state.update(plan=None, error=bake.user_message(err), inputs=cache.inputs(context))
        return False
    finally:
        _state["busy"] = False
    if BACKGROUND:
        _start_job()
    show(scene, scene.frame_current, wait=False)   # the start pose until the thread has the frame
    return True


def _part(plan, target: int):
    """The plan of the run from the start frame to frame ``target``, naming its objects (no Blender data)."""
    core = plan.core
    t_end = (target - plan.frame_start) / plan.fps
    return dataclasses.replace(
        plan, core=dataclasses.replace(core, settings=dataclasses.replace(core.settings, t_end=t_end)),
        prepared=None, frame_end=target, objects=[_Named(o.name) for o in plan.objects],
        walls=[_Named(o.name) for o in plan.walls or []])


def _poses(part, traj, own: dict) -> dict:
    """{object name: (delta locations (K,3) BU, delta quaternions (K,4))} at every whole frame of ``traj`` (pure:
    the thread's too); ``own``: each moving object's own location and quaternion."""
    if not traj.complete:
        raise messages.AddonError("The simulation stopped before the frame")
    poses = {}
    for obj, (frames, basis) in bake.keys_for(part, traj, part.per_frame).items():
        whole = np.abs(frames - np.round(frames)) < 1e-6   # the records at frames, not the impacts' own keys
        loc, q, _ = core_bake.decompose(basis[whole], name=f"Object '{obj.name}'")
        own_loc, own_q = own[obj.name]
        poses[obj.name] = (loc - own_loc, _times_inverse(q, own_q))
    return poses


def _run_to(target: int) -> None:
    """Simulate from the start pose to frame ``target`` here (progress in the status bar) and keep every whole
    frame's pose."""
    t0 = time.perf_counter()
    part = _part(_state["plan"], target)
    wm = bpy.context.window_manager
    wm.progress_begin(0, 100)
    try:
        traj = bake.run(part, progress=lambda f: wm.progress_update(int(100 * f)))
    finally:
        wm.progress_end()
    _state.update(poses=_poses(part, traj, _state["own"]), last=target, seconds=time.perf_counter() - t0)


def _start_job() -> None:
    """Simulate the whole range on a thread; :func:`_adopt` takes its frames when it ends."""
    _stop_job()
    plan, own, gen, stop = _state["plan"], _state["own"], _job["gen"], threading.Event()
    part = _part(plan, plan.frame_end)

    def work():
        t0 = time.perf_counter()
        try:
            traj = bake.run(part, stop=stop.is_set)
            outcome = ("stopped",) if stop.is_set() else ("ok", _poses(part, traj, own), time.perf_counter() - t0)
        except Exception as err:  # noqa: BLE001  (said in the panel by the main thread, as a bake's)
            outcome = ("error", bake.user_message(err))
        _job["result"] = (gen, outcome)

    thread = threading.Thread(target=work, daemon=True, name="pem-live-playback")
    _job.update(thread=thread, stop=stop, result=None)
    thread.start()
    if not bpy.app.background and not bpy.app.timers.is_registered(_adopt_timer):
        bpy.app.timers.register(_adopt_timer, first_interval=0.05)


def _stop_job() -> None:
    """Tell a running thread to stop; whatever it ends with is ignored (a new generation)."""
    if _job["stop"] is not None:
        _job["stop"].set()
    _job.update(thread=None, stop=None, result=None, gen=_job["gen"] + 1)


def _adopt(wait: bool = False) -> bool:
    """Take the thread's frames when it has ended (waiting for it if ``wait``); whether it still runs."""
    thread = _job["thread"]
    if thread is None:
        return False
    if wait:
        thread.join()
    if thread.is_alive():
        return True
    gen, outcome = _job["result"] or (None, ("stopped",))
    _job.update(thread=None, stop=None, result=None)
    if gen != _job["gen"] or _state["plan"] is None:
        return False
    if outcome[0] == "ok":
        _state.update(poses=outcome[1], last=_state["plan"].frame_end, seconds=outcome[2])
    elif outcome[0] == "error":
        _state.update(plan=None, poses={}, error=outcome[1])
    return False


def _show_current() -> None:
    scene = bpy.data.scenes.get(_state["scene"] or "")
    if scene is not None and active(scene):
        show(scene, scene.frame_current, wait=False)


def wait() -> None:
    """Wait for the thread's run, take its frames and show the current one (scripts, ``blender -b``, tests)."""
    _adopt(wait=True)
    _show_current()


def _adopt_timer():
    if _adopt():
        return 0.1
    _show_current()
    for window in getattr(bpy.context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type in ("DOPESHEET_EDITOR", "PROPERTIES"):
                area.tag_redraw()
    return None


def _own_quaternion(obj):
    if obj.rotation_mode == "QUATERNION":
        return mathutils.Quaternion(obj.rotation_quaternion).normalized()
    return obj.rotation_euler.to_quaternion()


def _times_inverse(q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """q ⊗ u⁻¹ for unit quaternions q (K,4) and u (4,), w first: the delta rotation D with D·U = Q."""
    w1, x1, y1, z1 = q.T
    w2, x2, y2, z2 = u[0], -u[1], -u[2], -u[3]
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], axis=-1)


def ensure(scene, frame: int, wait: bool = True) -> int | None:
    """The live cache's index of ``frame`` (clamped to the range; simulated up to it first when past the cache:
    by the thread, waited for, or here), or None when the scene has no live cache (or, not ``wait``ing, while the
    thread has not reached the frame)."""
    plan = _state["plan"]
    if plan is None or _state["scene"] != scene.name or _state["stale"]:
        return None
    start, end = plan.frame_start, plan.frame_end
    frame = min(max(frame, start), end)
    if frame > _state["last"] and _job["thread"] is not None:
        if not wait and _adopt():
            return None
        _adopt(wait=True)                   # the thread's run has the frame, or ends without it
        if _state["plan"] is None:
            return None
    if frame > _state["last"]:
        span = max(_state["last"] - start, round(plan.fps))
        _state["busy"] = True
        try:
            _run_to(min(end, max(frame, start + 2 * span)))
        except (messages.AddonError, PemError, ValueError, RuntimeError) as err:
            _state.update(plan=None, poses={}, error=bake.user_message(err))
            return None
        finally:
            _state["busy"] = False
    return frame - start


def show(scene, frame: int, wait: bool = True) -> None:
    """Put every moving body where the live cache has it at ``frame`` (its start pose when there is none, or
    while the thread has not reached it and we are not to ``wait``)."""
    k = ensure(scene, frame, wait)
    if k is None:
        release(scene)
        return
    for name, (dloc, dq) in _state["poses"].items():
        obj = scene.objects.get(name)
        if obj is None:
            continue
        obj[LIVE_DELTAS] = True
        i = min(k, len(dloc) - 1) if k > 0 else None
        obj.delta_location = (0.0, 0.0, 0.0) if i is None else dloc[i]
        q = mathutils.Quaternion((1.0, 0.0, 0.0, 0.0) if i is None else dq[i])
        if obj.rotation_mode == "QUATERNION":
            obj.delta_rotation_quaternion = q
        else:
            obj.delta_rotation_euler = q.to_euler(obj.rotation_mode)


def release(scene) -> None:
    """Every body whose deltas are live poses back in its start pose (deltas cleared, the mark removed)."""
    clear_live_deltas(scene.objects)


def _prepare_timer():
    context = bpy.context
    scene = context.scene
    if scene is not None and active(scene) and (_state["plan"] is None or _state["stale"]
                                                or _state["scene"] != scene.name):
        prepare(context)
    return None


def _ask_prepare() -> None:
    if not bpy.app.timers.is_registered(_prepare_timer):
        bpy.app.timers.register(_prepare_timer, first_interval=0.0)


@bpy.app.handlers.persistent
def on_frame_change(scene, depsgraph=None) -> None:
    """A frame change: the bodies where the simulation has them (simulated up to the frame first)."""
    if _state["busy"]:
        return
    if not active(scene):
        if _state["plan"] is not None:   # switched off or baked since: the start pose again
            release(scene)
            clear()
        return
    if _state["plan"] is None or _state["stale"] or _state["scene"] != scene.name:
        release(scene)
        if not _state["error"] or _state["scene"] != scene.name:
            _ask_prepare()
        return
    show(scene, scene.frame_current)


@bpy.app.handlers.persistent
def on_depsgraph_update(scene, depsgraph) -> None:
    """An edit of what the simulation reads frees the live cache; switching live playback on prepares one."""
    if _state["busy"] or not active(scene):
        return
    if _state["scene"] == scene.name and _state["inputs"] == cache.inputs(bpy.context):
        return
    _state["stale"] = True
    _stop_job()
    release(scene)
    _ask_prepare()


@bpy.app.handlers.persistent
def before_save(*_args) -> None:
    """The file is saved with every body in its start pose."""
    for scene in bpy.data.scenes:
        release(scene)


@bpy.app.handlers.persistent
def after_save(*_args) -> None:
    scene = bpy.context.scene
    if scene is not None and active(scene) and _state["scene"] == scene.name:
        show(scene, scene.frame_current)


@bpy.app.handlers.persistent
def after_load(*_args) -> None:
    """A file loaded: the old file's live cache goes, and no body keeps a live pose (an autosave may hold one)."""
    clear()
    for scene in bpy.data.scenes:
        release(scene)


_HANDLERS = ((bpy.app.handlers.frame_change_pre, on_frame_change),
             (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update),
             (bpy.app.handlers.save_pre, before_save), (bpy.app.handlers.save_post, after_save),
             (bpy.app.handlers.load_post, after_load))


def register():
    handlers.add(_HANDLERS)


def unregister():
    handlers.remove(_HANDLERS)
    for timer in (_prepare_timer, _adopt_timer):
        if bpy.app.timers.is_registered(timer):
            bpy.app.timers.unregister(timer)
    for scene in bpy.data.scenes:
        release(scene)
    clear()
