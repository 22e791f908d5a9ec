"""Bake, in three phases so that nothing is half-written:

1. :func:`prepare` reads the Blender scene into a core scene (no changes; errors name the object);
2. :func:`run` integrates it (pure core; thread-safe, interruptible through ``stop``);
3. :func:`apply` writes keys for every moving and driven object inside animation snapshots —
   any failure restores every object exactly — then records bake bookkeeping and diagnostics.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass

import bpy
import numpy as np

from ...pem_physics import simulate
from ...pem_physics.engine import Trajectory, check_available, kernels_built, source_placement
from ...pem_physics.engine import prepare as prepare_run
from ...pem_physics.errors import PemError, SimulationError, ValidationError
from ...pem_physics.io import bake as core_bake
from ...pem_physics.model import TabulatedMotion
from .. import bodies, keyframes, messages, units
from ..frames import simulation_range
from ..keyframes import BAKED_PROPS, restore_transform_state, transform_state
from ..messages import AddonError
from . import cache, scenes

#: How the status line names the core's engines (Trajectory.info["engine"]).
ENGINE_NAMES = {"numba": "compiled", "python": "plain-Python (no numba)", "numpy": "numpy",
                "numba+numpy": "compiled, numpy where several contacts touch at once"}

#: A body may turn at most this much between consecutive keys (else sub-frame keys are written).
MAX_KEY_ANGLE = np.radians(45.0)

#: A translating body's keyed path (straight lines between keys) may stray from its simulated centre at most
#: this fraction of the body's size (its radius of gyration about the centre of mass) between keys; else
#: sub-frame keys are written. A free fall sags g·Δt²/8 between keys Δt apart (2.1 mm at 24 fps): a marble
#: gets sub-frame keys, a football one per frame. Impacts are not sags: they get keys of their own.
MAX_KEY_SAG = 0.05

#: Custom property on a bake's own action (:func:`.keyframes.use_own_action`): the bake key of the object it
#: was made for, so that Delete Bake finds it after the object was deleted.
BAKE_KEY_MARK = "pem_bake_key"


@dataclass
class Plan:
    core: object            # pem_physics Scene (checked)
    objects: list            # bpy objects aligned with core.bodies
    worlds: list             # initial world matrices (4,4) in BU
    fps: float
    frame_start: int
    unit: float
    per_frame: int           # records per frame
    moved: dict = None       # baked objects moved by hand since their bake: {object: transform state (JSON)}
    parents: list = None     # parent-world matrices (4,4) at the start frame, aligned with objects
    notes: list = None       # warnings known before the run (mesh notes), reported with the bake's
    walls: list = None       # wall objects aligned with core.walls (to name them in the core's messages)
    inputs: dict = None      # the cache's fingerprint of what was read (cache.inputs), stored with the bake
    frame_end: int = 0       # the last frame the bake covers
    prepared: object = None  # the core's checked run (engine.Run), executed by the first :func:`run`


def prepare(context, frame_end: int | None = None, inputs: dict | None = None, records_cap: int = 8) -> Plan:
    """Read the scene in its start pose: every body as it is at the simulation's start frame with the baked
    channels removed — the same whatever the current frame. ``frame_end``: bake up to that frame only (*Bake to
    Current Frame*), else to the end of the simulation's range (:func:`.frames.simulation_range`).

    A baked object starts from its pose before the bake (its own animation, if it has one, evaluated at the
    start frame), or from where it was moved by hand after the bake (a re-bake then starts there). The
    scene is left exactly as it was: current frame, transforms, assigned actions. ``inputs``: the scene's
    :func:`.cache.inputs` where the caller has just taken them (the ghost path's update), else taken here.
    ``records_cap``: records a frame at most (:func:`.scenes.record_plan`; keys need up to 8).
    """
    scene = context.scene
    fps, dt, substeps, t_end, frame_start = scenes.time_settings(context, frame_end)
    last = simulation_range(scene)[1]
    last = last if frame_end is None else min(last, frame_end)
    if inputs is None:
        inputs = cache.inputs(context)  # before anything moves: what the panel compares with after the bake
    objects = bodies.pem_objects(scene)
    refuse_baked_elsewhere(scene, objects)
    walls = [o for o in objects if o.pem.role == "WALL"]  # core.walls, in their order
    frame, subframe = scene.frame_current, scene.frame_subframe
    now = {obj: transform_state(obj) for obj in objects}
    keyed = set(cache.baked_objects(scene))
    moved = {obj: now[obj] for obj in objects
             if obj in keyed and keyframes.edited_by_hand(obj, frame + subframe)}
    core, objects, worlds, parents, notes = _read_start_pose(context, objects, now, keyed, moved, frame_start,
                                                             frame_end, records_cap, frame, subframe)
    try:  # meaningless scenes, wrong integrators, overlaps at the start …: refused before anything runs, on this
        # thread, in the panel's words; the run executes this preparation
        check_available(core.settings.method)  # dop853 without scipy (Blender has none)
        prepared = prepare_run(core)
    except ValidationError as err:
        raise AddonError(messages.object_message(str(err), objects, walls)) from err
    return Plan(prepared.scene, objects, worlds, fps, frame_start, units.unit_scale(scene),
                scenes.record_plan(fps, dt, substeps, records_cap)[1], moved, parents, notes, walls, inputs, last,
                prepared)


def _read_start_pose(context, objects, now, keyed, moved, frame_start, frame_end, records_cap, frame, subframe):
    """:func:`prepare`'s reading of the scene at the start frame, the baked channels out of the way: (core scene,
    its objects, their worlds, their parents' worlds, notes); the frame and every transform put back after."""
    scene = context.scene
    with contextlib.ExitStack() as stack:
        for obj in objects:
            p = obj.pem
            if obj not in keyed:
                continue
            if obj not in moved and p.pre_bake_state:
                restore_transform_state(obj, p.pre_bake_state, BAKED_PROPS)
            if keyframes.owns_action(obj):  # its own animation plays while the start pose is read
                stack.enter_context(keyframes.playing(obj, p.user_action, p.user_slot))
        try:
            scene.frame_set(frame_start)
            notes = []
            # checked once, by the core's prepare below (a second Scene.checked cost ~10 % of a ghost path)
            core, objects, worlds = scenes.build_scene(context, notes, frame_end, check=False, records_cap=records_cap)
            parents = [units.parent_world(obj) for obj in objects]  # evaluated: world and basis agree here
        finally:
            stack.close()
            scene.frame_set(frame, subframe=subframe)
            for obj, state in now.items():
                restore_transform_state(obj, state)
            # matrix_world is recomputed from the values as set (a float32 rounding off the evaluated animation's)
            # until the next evaluation: a refused or cancelled bake leaves the scene exactly as it was
            context.view_layer.update()
    return core, objects, worlds, parents, notes


def refuse_baked_elsewhere(scene, objects) -> None:
    """AddonError when another scene holds a bake of one of ``objects`` (linked into both scenes): the object
    keeps one pre-bake pose, which a second bake would overwrite."""
    found = cache.baked_elsewhere(scene, objects)
    if found is not None:
        obj, other = found
        raise AddonError(f"Object '{obj.name}' is baked in scene '{other.name}': delete that bake first")


def run(plan: Plan, progress=None, stop=None) -> Trajectory:
    """The core run of ``plan`` (its preparation, the first time); a failure mid-run (SimulationError) in the
    panel's words."""
    prepared, plan.prepared = plan.prepared, None
    try:
        if prepared is not None:
            return prepared.execute(progress, stop)
        return simulate(plan.core, progress=progress, stop=stop)
    except SimulationError as err:
        raise AddonError(messages.object_message(str(err), plan.objects, plan.walls or [])) from err


def run_all(plans: list, progress=None, stop=None) -> list:
    """:func:`run` each plan in turn (Bake All); ``progress`` gets the fraction of all of them."""
    out = []
    for k, plan in enumerate(plans):
        part = None if progress is None else (lambda f, k=k: progress((k + f) / len(plans)))
        out.append(run(plan, part, stop))
    return out


#: An impact closer than this (frames) to a regular key adds no key of its own: Blender's keys are single
#: precision, and two keys that close would not stay strictly increasing.
MIN_IMPACT_KEY_GAP = 1e-3


def impact_keys(plan: Plan, traj: Trajectory, t_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times (K,) s, orientations (K,B,3,3), centres (K,B,3) m) of the impacts that get keys of their own:
    one per impact instant (simultaneous impacts of a resolution share one), none within
    :data:`MIN_IMPACT_KEY_GAP` frames of a regular key at ``t_keys`` (s) or of another impact key. The poses
    are the core's, at the located impact time (:attr:`pem_physics.engine.contact.driver.EventLog.orientation` and
    ``.position``: a translating body's centre there, the kink of its path)."""
    ev = traj.events
    B = traj.orientation.shape[1]
    if ev is None or not len(ev.t):
        return np.empty(0), np.empty((0, B, 3, 3)), np.empty((0, B, 3))
    t_ev = np.asarray(ev.t, dtype=float)
    first = np.r_[0, np.flatnonzero(np.diff(t_ev) != 0) + 1]  # the rows of one resolution are consecutive
    gap = MIN_IMPACT_KEY_GAP / plan.fps
    keep, taken = [], np.sort(np.asarray(t_keys, dtype=float))
    for i in first:
        k = np.searchsorted(taken, t_ev[i])
        near = [taken[j] for j in (k - 1, k) if 0 <= j < len(taken)]
        if all(abs(t_ev[i] - x) > gap for x in near) and t_ev[i] < taken[-1]:
            keep.append(i)
            taken = np.insert(taken, k, t_ev[i])
    return (t_ev[keep], np.asarray([ev.orientation[i] for i in keep]).reshape(-1, B, 3, 3),
            np.asarray([ev.position[i] for i in keep]).reshape(-1, B, 3))


def _key_records(n: int, stride: int) -> np.ndarray:
    """Indices of the records keyed at ``stride``: every stride-th, and the last."""
    idx = np.arange(0, n, stride)
    return idx if idx[-1] == n - 1 else np.r_[idx, n - 1]


def path_sag(t: np.ndarray, x: np.ndarray, stride: int, t_events=()) -> float:
    """Largest distance (m) between a record of the path x (R,3) at times t (R,) and the straight line between
    the keys around it, keys at every ``stride``-th record. A key interval holding an event (its time strictly
    inside) counts no sag: the event gets a key of its own (:func:`impact_keys`), which splits it at the kink."""
    idx = _key_records(len(t), stride)
    n = np.diff(idx)
    a, b = np.repeat(idx[:-1], n), np.repeat(idx[1:], n)
    i = np.arange(idx[0], idx[-1])
    w = ((t[i] - t[a]) / (t[b] - t[a]))[:, None]
    sag = np.linalg.norm(x[i] - (x[a] + w * (x[b] - x[a])), axis=-1)
    ev = np.sort(np.asarray(t_events, dtype=float))
    if len(ev):
        sag[np.searchsorted(ev, t[a], side="right") < np.searchsorted(ev, t[b], side="left")] = 0.0
    return float(sag.max(initial=0.0))


def path_stride(t: np.ndarray, x: np.ndarray, per_frame: int, tol: float, t_events=()) -> int:
    """Records to skip between keys (a power of two dividing per_frame, as :func:`key_stride`) so that the keyed
    path of a translating body stays within ``tol`` (m) of its simulated path (:func:`path_sag`)."""
    stride = per_frame
    while stride > 1 and path_sag(t, x, stride, t_events) > tol:
        stride //= 2
    return stride


def body_size(body) -> float:
    """A moving body's size (m) for :data:`MAX_KEY_SAG`: its radius of gyration √(tr I / 2M) about the centre
    of mass (0.77·r for a ball of radius r)."""
    mp = body.resolved_mass_properties()
    return float(np.sqrt(np.trace(np.asarray(mp.inertia, float)) / (2.0 * mp.mass)))


def _translating(traj: Trajectory) -> np.ndarray:
    """(B,) bool: which moving bodies of the trajectory move their centre (older trajectories: none)."""
    B = traj.orientation.shape[1]
    return np.zeros(B, bool) if traj.translating is None else np.asarray(traj.translating, bool)


def key_stride(plan: Plan, traj: Trajectory) -> int:
    """One stride for every body: no key-to-key turn over :data:`MAX_KEY_ANGLE`, no translating body's keyed
    path further than :data:`MAX_KEY_SAG` of its size from the simulated one."""
    q_all = traj.quaternion
    stride = min(core_bake.key_stride(q_all[:, k], plan.per_frame, MAX_KEY_ANGLE) for k in range(q_all.shape[1]))
    moving = [b for b in plan.core.bodies if b.moving]
    t_ev = traj.events.t if traj.events is not None else ()
    pivots = np.array([b.pivot_motion is not None for b in moving])
    for k in np.flatnonzero(_translating(traj) | pivots):   # keyed paths of moving centres and pivots
        body = next(b for b in moving if b.name == traj.names[k])
        tol = MAX_KEY_SAG * body_size(body)
        stride = min(stride, path_stride(traj.t, traj.position[:, k], stride, tol, t_ev))
    return stride


def keys_for(plan: Plan, traj: Trajectory, stride: int):
    """{object: (frames, basis matrices)} for every object that moves: keys at every ``stride``-th record,
    and at each impact instant (sub-frame keys with the pose there, so a strike is sharp at any frame rate).
    A translating body's keys follow its moving centre (``Trajectory.position``); a pendulum's and a turning
    free body's turn about their fixed pivot or centre of mass."""
    idx = _key_records(len(traj.t), stride)
    t_ev, U_ev, X_ev = impact_keys(plan, traj, traj.t[idx])
    translating = _translating(traj)
    order = np.argsort(np.r_[traj.t[idx], t_ev], kind="stable")
    t = np.r_[traj.t[idx], t_ev][order]
    frames = plan.frame_start + t * plan.fps
    out = {}
    moving = {name: k for k, name in enumerate(traj.names)}
    for body, obj, M0, P in zip(plan.core.bodies, plan.objects, plan.worlds, plan.parents):
        if body.role in ("pendulum", "free"):
            k = moving[body.name]
            U = np.concatenate([traj.orientation[idx, k], U_ev[:, k]])[order]
            if translating[k] or body.pivot_motion is not None:   # its centre (or pivot) moves
                X = np.concatenate([traj.position[idx, k], X_ev[:, k]])[order]
                W = core_bake.world_matrices(U, X, M0, plan.unit)
            else:
                W = core_bake.world_matrices(U, traj.pivot[k], M0, plan.unit)
        elif body.role == "driven" and isinstance(body.motion, TabulatedMotion):
            continue   # it follows its own animation, which the bake leaves as it is
        elif body.role == "driven":
            U0 = np.asarray(body.orientation)
            P0 = np.asarray(body.position) / plan.unit
            W = np.empty((len(t), 4, 4))
            for i, ti in enumerate(t):  # once per key, not per step: prescribed motion, cheap
                origin, U = source_placement(body, float(ti))
                A = np.eye(4)
                A[:3, :3] = U.T @ U0
                A[:3, 3] = np.asarray(origin) / plan.unit - A[:3, :3] @ P0
                W[i] = A @ M0
        else:
            continue
        out[obj] = (frames, units.affine_inverse(P) @ W)
    return out


def checked_keys(plan: Plan, traj: Trajectory) -> dict:
    """{object: (frames, locations, quaternions)} of the keys a bake writes, every check made (nothing changed
    yet): what :func:`apply` writes. AddonError naming the object when a key cannot be written."""
    if not traj.complete:
        raise AddonError("The simulation did not finish; nothing was baked")
    keys = keys_for(plan, traj, key_stride(plan, traj))
    decomposed = {}
    for obj, (frames, basis) in keys.items():
        try:
            loc, q, _ = core_bake.decompose(basis, name=f"Object '{obj.name}'")
        except ValidationError as err:
            raise AddonError(str(err)) from err
        decomposed[obj] = (frames, loc, q)
    return decomposed


def apply(plan: Plan, traj: Trajectory, context, decomposed: dict | None = None) -> int:
    """Write the keys (:func:`checked_keys`, or ``decomposed`` when already checked); returns the number of keys
    per channel. All-or-nothing."""
    if decomposed is None:
        decomposed = checked_keys(plan, traj)  # all checks before any change
    refuse_baked_elsewhere(context.scene, list(decomposed))
    snapshots = []
    moved = plan.moved or {}
    keyed = set(cache.baked_objects(context.scene))
    try:
        for obj, (frames, loc, q) in decomposed.items():
            p = obj.pem
            before = (p.baked, p.bake_key, p.pre_bake_state, p.user_action, p.user_slot, p.user_had_animation)
            snapshots.append((obj, keyframes.snapshot_animation(obj), before))
            if obj not in keyed:
                # the first bake (a copy of a baked object too: what it copied is not its own): its start pose
                # and the user's own animation are kept for Delete Bake and re-bakes; the keys go into an action
                # of the bake's own; a key of its own names it in the scene's record
                p.pre_bake_state = transform_state(obj)
                user = keyframes.use_own_action(obj)
                p.user_action, p.user_slot, p.user_had_animation = user.action, user.slot, user.had_animation_data
                p.bake_key = uuid.uuid4().hex
                obj.animation_data.action[BAKE_KEY_MARK] = p.bake_key  # the bake's own action, by its key
            elif obj in moved:
                p.pre_bake_state = moved[obj]  # moved by hand after the bake: the new start pose
            if not p.bake_key:  # baked by an older version, without a key: one from now on
                p.bake_key = uuid.uuid4().hex
            keyframes.write_transform_keys(obj, frames, loc, q)
            p.baked = True
    except BaseException:
        for obj, snap, (baked, key, state, action, slot, had) in reversed(snapshots):
            keyframes.restore_animation(obj, snap)
            p = obj.pem
            p.baked, p.bake_key, p.pre_bake_state, p.user_action, p.user_slot, p.user_had_animation = (
                baked, key, state, action, slot, had)
        raise
    for _, snap, _ in snapshots:
        keyframes.discard_snapshot(snap)
    # the core names items by path (bodies[0].contacts[1], walls[0]); the panel and report name the objects
    said = [messages.object_message(w, plan.objects, plan.walls or []) for w in traj.info.get("warnings", [])]
    _store_diagnostics(context.scene, traj, (plan.notes or []) + said)
    for obj in keyed:  # baked before, but no longer moving (now a fixed magnet, a wall, off)
        if obj not in decomposed:
            clear(obj)
    _remove_orphan_actions(context.scene)  # of objects deleted since the last bake: the record is replaced
    cache.store(context.scene, plan.inputs, plan.frame_start, plan.frame_end, list(decomposed))
    context.scene.frame_set(context.scene.frame_current)
    return len(next(iter(decomposed.values()))[0]) if decomposed else 0


def _store_diagnostics(scene, traj: Trajectory, warnings: list) -> None:
    """The bake's numbers and ``warnings`` (in the panel's words, one sentence each) for the panel and report."""
    sp = scene.pem
    E = traj.total_energy
    sp.last_method = traj.method
    sp.last_steps = traj.steps
    sp.last_wall_time = traj.wall_time
    sp.last_energy_drift = traj.energy_drift()
    sp.last_energy_error = traj.energy_balance()
    sp.last_friction_loss = traj.friction_loss() + traj.contact_loss()
    sp.last_warnings = "\n".join(warnings)
    sp.last_orthonormality = float(np.max(traj.orthonormality))
    sp.last_energy = (float(E[0]), float(E[-1]))
    engine = traj.info.get("engine", "numpy")
    rate = traj.steps / traj.wall_time if traj.wall_time > 0 else float("inf")
    sp.last_engine = engine
    load = traj.info.get("compile_or_load_s", 0.0)
    sp.status = (f"Baked {traj.steps} steps ({traj.method}) in {traj.wall_time:.2f} s, "
                 f"{ENGINE_NAMES.get(engine, engine)} engine"
                 + (" (built ahead of time)" if traj.info.get("kernels") == "ahead-of-time" else "")
                 + f", {rate:.3g} steps/s"
                 + (f" (+{load:.1f} s compiling the engine, once)" if load > 2.0 else ""))
    n = len(traj.t)
    pick = np.unique(np.linspace(0, n - 1, min(n, 2000)).astype(int))
    scene["pem_diagnostics"] = {
        "t": traj.t[pick].tolist(),
        "total": E[pick].tolist(),
        "kinetic": traj.kinetic_energy.sum(-1)[pick].tolist(),
        "gravity": traj.gravity_energy.sum(-1)[pick].tolist(),
        "field": traj.field_energy.sum(-1)[pick].tolist(),
        "dipole": traj.dipole_energy[pick].tolist(),
        "friction_work": (traj.friction_work[pick] if traj.friction_work is not None else np.zeros(len(pick))).tolist(),
    }


#: A bake estimated to run longer than this (seconds) asks before it starts (the Bake button;
#: scripts and ``blender -b`` calling the operator's execute are not asked).
CONFIRM_SECONDS = 60.0

#: Steps per second of one moving body assumed before a bake has measured the speed here: below the
#: measured rates of docs/benchmarks.md (three-magnet pendulum: compiled ~4e5, numpy ~700 steps/s), so the
#: first estimate errs long. The compiled engine's first compile (10–25 s, once) is not included.
PRIOR_RATE = {"numba": 1e5, "numpy": 500.0}


def expected_engine(context) -> tuple[str, str | None]:
    """(engine a bake of the scene will run on, "numba" or "numpy"; why numpy, or None) from the panel's
    settings alone (cheap enough for a redraw; never raises): every scene runs compiled where numba loads
    (translating bodies and contacts included)."""
    from ...pem_physics import jit

    if jit.installed() or ahead_of_time():
        return "numba", None
    return "numpy", jit.unavailable_reason()


def ahead_of_time() -> bool:
    """Whether the single-scene kernels built ahead of time load here (the extension ships them for Blender's
    Pythons on linux-x64): a bake then starts at once, with no compile."""
    return kernels_built()


def estimate(context, frame_end: int | None = None) -> tuple[int, float, bool]:
    """(integration steps of a bake now, estimated seconds, whether the speed was measured).

    Seconds at the last bake's speed on this scene, or before any bake at :data:`PRIOR_RATE` of the
    engine that will run, divided among the moving bodies. A speed measured on the compiled engine is not
    promised when the bake will now run on numpy (numba no longer loads); the other way round the measured
    speed errs long, and is kept.
    """
    fps, dt, substeps, t_end, _ = scenes.time_settings(context, frame_end)
    steps = int(round(t_end / dt))
    sp = context.scene.pem
    engine, _ = expected_engine(context)
    slower_now = engine != "numba" and sp.last_engine == "numba"
    if sp.last_wall_time > 0 and sp.last_steps > 0 and not slower_now:
        return steps, steps * sp.last_wall_time / sp.last_steps, True
    moving = sum(1 for o in bodies.pem_objects(context.scene) if o.pem.role in ("PENDULUM", "FREE"))
    rate = PRIOR_RATE[engine] / max(1, moving)
    return steps, steps / rate, False


def needs_confirmation(seconds: float) -> bool:
    return seconds > CONFIRM_SECONDS


def confirmation_message(steps: int, seconds: float, measured: bool) -> str:
    """What the dialog before a long bake says."""
    how = "at the last bake's speed" if measured else "estimated before any bake here"
    return (f"{steps:,} integration steps: about {_duration(seconds)} ({how}). Esc cancels while it runs; "
            "fewer substeps or a shorter frame range bake faster.")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def deleted_objects(plan: Plan) -> list:
    """Names of the plan's objects deleted since :func:`prepare` (while a modal bake ran)."""
    gone = []
    for obj, body in zip(plan.objects, plan.core.bodies):  # each body is named after its object
        try:
            _ = obj.name
        except ReferenceError:  # the Python object outlived the Blender object
            gone.append(body.name)
    return gone


def bake(context, progress=None, stop=None, frame_end: int | None = None) -> int:
    """prepare → run → apply, synchronously (scripts, ``blender -b``, tests)."""
    plan = prepare(context, frame_end)
    traj = run(plan, progress, stop)
    return apply(plan, traj, context)


def delete(scene) -> list:
    """Delete the scene's bake (*Delete Bake*): every object it keyed back as before it (:func:`clear`); the
    objects, in name order. A copy of a baked object is not one of them (:func:`.cache.baked_objects`): it stays
    where it is."""
    # among all the scene's objects: one that stopped being a body after its bake still plays it
    objs = cache.baked_objects(scene)
    for obj in objs:
        clear(obj)
    _remove_orphan_actions(scene)
    cache.forget(scene)
    return objs



def _remove_orphan_actions(scene) -> None:
    """Remove the actions this scene's bake made that nothing uses any more (their object was deleted after the
    bake): made by the add-on (:data:`.keyframes.CREATED_MARK`) for one of the bake's keys, no users, no fake
    user."""
    keys = set(cache.recorded_keys(scene))
    for action in list(bpy.data.actions):
        if (action.users == 0 and not action.use_fake_user and action.get(keyframes.CREATED_MARK)
                and action.get(BAKE_KEY_MARK) in keys):
            bpy.data.actions.remove(action)


def clear(obj) -> None:
    """Undo the bake: the object's own animation (action, slot, keys) and its pre-bake location and rotation
    back exactly; its scale and delta transforms stay as they are now (:data:`BAKED_PROPS`)."""
    p = obj.pem
    if not p.baked:
        return
    if keyframes.owns_action(obj):
        keyframes.restore_user_action(obj, keyframes.UserAnimation(p.user_action, p.user_slot, p.user_had_animation))
    else:  # baked by an older version, into the object's own action: remove the baked channels
        keyframes.clear_keys(obj)
    restore_transform_state(obj, p.pre_bake_state, BAKED_PROPS)
    p.baked = False
    p.bake_key = ""
    p.pre_bake_state = ""
    p.user_action, p.user_slot, p.user_had_animation = None, "", False


def user_message(err: BaseException) -> str:
    if isinstance(err, (AddonError, PemError)):
        return str(err)
    return f"{type(err).__name__}: {err}"


