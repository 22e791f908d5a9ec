"""The ghost path: where each moving body goes in the next few seconds, drawn while you edit the scene.

Switched on (``Scene.pem.show_ghost_path``, itself an edit) and at every edit of what the simulation reads (a
magnet, the pivot or a body moved, turned or typed, a dipole or a setting changed: the bake cache's fingerprint,
:func:`.cache.inputs`), the path is marked stale at once, so a stale path is never drawn, and a new one is asked
for on Blender's timer. The timer runs the simulation a bake would run, from the same start pose
(:func:`.bake.prepare`), over ``Scene.pem.ghost_seconds`` (rounded up to a whole frame, at most the simulation's
frame range), and keeps each moving body's path for the overlay (:mod:`.overlay`). Edits that come while one is
computed coalesce into the next. Nothing in the scene changes (frame, transforms, keys).

:func:`compute` is the direct call (tests, ``blender -b``: timers do not run there). :func:`to_curves` makes the
path into curve objects, to render it or keep it (an overlay is neither rendered nor saved).
"""

from __future__ import annotations

import math
import time

import bpy
import numpy as np

from ...pem_physics.errors import PemError
from .. import handlers, messages, units
from ..frames import simulation_range
from . import bake, cache

#: The path's state: "paths" {object name: (N, 3) world points, BU}, "stale" (an edit since), "error" (why there is
#: no path, in the panel's words), "seconds" (wall time of the last computation), "inputs" (what it was computed
#: from: :func:`.cache.inputs` and the seconds), "computing" (its own frame changes are no edits), "scene" (whose),
#: "edited" (the fingerprint the last edit's update took: the timer's computation reuses it).
_state = {"paths": {}, "stale": False, "error": "", "seconds": 0.0, "computing": False, "inputs": None,
          "edited": None}
#: RGBA of the path, in the overlay and on its curves.
COLOR = (1.0, 0.85, 0.25, 0.9)
#: The collection of the path's curves, and their material (a new export replaces the curves).
CURVES = "PEM Ghost Paths"
#: The curves' radius, as a share of the largest path's extent: thin, yet a pixel or more in a render that frames it.
BEVEL = 0.008
#: Points of the path a frame at most (a bake keys up to 8): a bob swinging at 2 m/s on a 0.3 m arm at 24 fps then sags
#: 0.7 mm between points, and its records cost a quarter (at 8 they were a fifth of its computation).
POINTS_PER_FRAME = 2


def paths() -> dict:
    """{object name: (N, 3) points in world coordinates, BU} of the last path; {} while stale."""
    return {} if _state["stale"] else _state["paths"]


def error() -> str:
    """Why the last computation gave no path (the panel's words), or ""."""
    return _state["error"]


def seconds() -> float:
    """Wall time (s) of the last computation, prepare and run."""
    return _state["seconds"]


def clear() -> None:
    _state.update(paths={}, stale=False, error="", seconds=0.0, inputs=None, scene=None, edited=None)


def _inputs(context) -> dict:
    return {**cache.inputs(context), "ghost seconds": context.scene.pem.ghost_seconds}


def _end_frame(scene) -> int:
    fps = scene.render.fps / scene.render.fps_base
    return simulation_range(scene)[0] + max(1, math.ceil(scene.pem.ghost_seconds * fps - 1e-9))


def compute(context, edited: dict | None = None) -> dict:
    """Simulate the next ``ghost_seconds`` from the start pose and keep every moving body's path (its centre of
    mass, world BU, at every record and impact): {object name: (N, 3)}. A scene the bake would refuse gives no
    path, and :func:`error` says why. ``edited``: the scene's fingerprint (:func:`_inputs`) as the last update
    found it, not taken again (a tenth of the computation)."""
    t0 = time.perf_counter()
    _state.update(computing=True, paths={}, error="", scene=context.scene.name)   # a failure leaves no old path
    try:
        fingerprint = None if edited is None else {k: v for k, v in edited.items() if k != "ghost seconds"}
        plan = bake.prepare(context, frame_end=_end_frame(context.scene), inputs=fingerprint,
                            records_cap=POINTS_PER_FRAME)
        _state["inputs"] = {**plan.inputs, "ghost seconds": context.scene.pem.ghost_seconds}
        traj = bake.run(plan)
        keys = bake.keys_for(plan, traj, 1)
        out = {}
        moving = {name: k for k, name in enumerate(traj.names)}
        for obj, P in zip(plan.objects, plan.parents):
            if obj in keys and obj.pem.role in ("PENDULUM", "FREE"):
                W = P @ keys[obj][1]   # (N, 4, 4) the object's world matrices, BU
                # the body's centre of mass, not the object's origin (a pendulum's origin is often its pivot)
                com = np.append(traj.center_of_mass[0, moving[obj.name]] / plan.unit, 1.0)
                out[obj.name] = (W @ (units.affine_inverse(W[0]) @ com))[:, :3]
        _state.update(paths=out, error="")
    except (messages.AddonError, PemError, ValueError, RuntimeError) as err:   # the bake's refusals, said
        _state.update(paths={}, error=bake.user_message(err), inputs=_inputs(context))
    finally:
        _state.update(stale=False, computing=False, seconds=time.perf_counter() - t0)
    return _state["paths"]


def _fresh(context) -> bool:
    return (not _state["stale"] and _state.get("scene") == context.scene.name and bool(_state["paths"])
            and _state["inputs"] == _inputs(context))


def _material():
    mat = bpy.data.materials.get(CURVES) or bpy.data.materials.new(CURVES)
    if mat.node_tree is None:   # Blender 4.x; from 5.0 every material has its node tree
        mat.use_nodes = True
    nodes = mat.node_tree.nodes
    nodes.clear()
    emit, out = nodes.new("ShaderNodeEmission"), nodes.new("ShaderNodeOutputMaterial")
    emit.inputs["Color"].default_value = COLOR
    emit.inputs["Strength"].default_value = 2.0
    mat.node_tree.links.new(emit.outputs["Emission"], out.inputs["Surface"])
    mat.diffuse_color = COLOR     # the viewport's Solid mode
    return mat


def to_curves(context) -> list:
    """The ghost path as curve objects, one poly line per moving body through the path's points (world BU),
    bevelled to show in a render, in the collection :data:`CURVES` (made and linked to the scene if missing); the
    curves of an earlier export go. The path is computed first unless the one shown is of the scene as it is.
    Raises AddonError, nothing changed, where there is no path (the panel's reason)."""
    if not _fresh(context):
        compute(context)
    found = paths()
    if not found:
        raise messages.AddonError(f"Ghost path: {error() or 'no moving body (a pendulum or a free body) to draw'}")
    scene = context.scene
    coll = bpy.data.collections.get(CURVES) or bpy.data.collections.new(CURVES)
    if coll.name not in scene.collection.children:
        scene.collection.children.link(coll)
    for obj in [o for o in coll.objects if "pem_ghost_of" in o]:
        data = obj.data
        bpy.data.objects.remove(obj)
        if data is not None and data.users == 0:
            bpy.data.curves.remove(data)
    size = max(float(np.ptp(p, axis=0).max()) for p in found.values())
    mat, made = _material(), []
    for name, P in found.items():
        curve = bpy.data.curves.new(f"{name} Ghost Path", "CURVE")
        curve.dimensions, curve.bevel_depth = "3D", BEVEL * size
        spline = curve.splines.new("POLY")
        spline.points.add(len(P) - 1)
        co = np.ones((len(P), 4))
        co[:, :3] = P
        spline.points.foreach_set("co", co.ravel())
        curve.materials.append(mat)
        obj = bpy.data.objects.new(curve.name, curve)
        obj["pem_ghost_of"] = name
        coll.objects.link(obj)
        made.append(obj)
    return made


def segments(scene) -> np.ndarray:
    """(K, 2, 3) line segments of the current paths (world BU); none while stale or switched off."""
    if not scene.pem.show_ghost_path or _state.get("scene") != scene.name:
        return np.empty((0, 2, 3))
    segs = [np.stack([p[:-1], p[1:]], axis=1) for p in paths().values() if len(p) > 1]
    return np.concatenate(segs) if segs else np.empty((0, 2, 3))


def _redraw() -> None:
    for window in getattr(bpy.context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type in ("VIEW_3D", "PROPERTIES"):
                area.tag_redraw()


def _recompute():
    """The timer: one computation for every edit since the last."""
    context = bpy.context
    if context.scene is not None and context.scene.pem.show_ghost_path and _state["stale"]:
        edited, _state["edited"] = _state["edited"], None
        compute(context, edited if edited is not None and edited["ghost seconds"] == context.scene.pem.ghost_seconds
                else None)
        _redraw()
    return None   # once


@bpy.app.handlers.persistent
def on_depsgraph_update(scene, depsgraph) -> None:
    """An edit of what the simulation reads (the bake cache's fingerprint of it, :func:`.cache.inputs`, differs
    from the path's): the path is stale now, and a new one is computed on the next timer tick. The fingerprint
    is kept as of the latest update (every edit brings one), for that computation to reuse."""
    if _state["computing"] or not scene.pem.show_ghost_path:
        return
    now = _inputs(bpy.context)
    if not _state["stale"] and _state["inputs"] == now:
        return
    _state.update(stale=True, edited=now)
    if not bpy.app.timers.is_registered(_recompute):
        bpy.app.timers.register(_recompute, first_interval=0.0)


@bpy.app.handlers.persistent
def forget(*_args) -> None:
    """A file loaded: the old file's path goes."""
    clear()


_HANDLERS = ((bpy.app.handlers.depsgraph_update_post, on_depsgraph_update), (bpy.app.handlers.load_post, forget))


def register():
    handlers.add(_HANDLERS)


def unregister():
    handlers.remove(_HANDLERS)
    if bpy.app.timers.is_registered(_recompute):
        bpy.app.timers.unregister(_recompute)
    clear()
