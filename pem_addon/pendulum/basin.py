"""The basin map on the floor: which magnet the bob comes to rest over, for every release point of a grid.

The core's basin map (:func:`pem_physics.analysis.basin.basin_map`, what ``pem basin`` runs: the ensemble engine,
every release point one member) of the scene a bake would run, over the simulation's frame range (or the map's own
*Seconds*), shown as an image on a plane under the pendulum: each cell coloured like the magnet it settles over
(the magnet's own colour, its material's or the object's, where the magnets differ; else the map's palette), dark
grey where it has not come to rest. Three phases, as the bake: :func:`prepare` (reads the scene), :func:`run` (pure
core, on a thread), :func:`apply` (the image and the plane, replaced as a whole on every new map).
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import mathutils
import numpy as np

from ...pem_physics.analysis import basin as core_basin
from ...pem_physics.engine import budget
from ...pem_physics.errors import ValidationError
from .. import messages
from . import bake

#: The names of the map's datablocks (one map per file: a new one replaces them).
NAME = "PEM Basin Map"
#: How far under the lowest magnet the plane lies, as a share of the map's width.
BELOW = 0.02
UNSETTLED = (0.15, 0.15, 0.15)
#: The core's basin options (``pem basin``'s), as the panel names them.
OPTION_FIELDS = {"--extent": "Extent", "--grid": "Grid", "--t-end": "Seconds"}
#: Advice in the core's refusals naming options the panel does not have (the add-on keeps the core's chunk size).
CLI_ONLY = (" (or --chunk)",)


@dataclass
class BasinPlan:
    core: object     # pem_physics Scene (checked), as the bake would run it
    grid: int        # points per side
    extent: float    # half-width of the square of release points, m (None: the core's default)
    magnets: list    # the fixed magnets' objects, in the map's label order
    unit: float      # metres per Blender unit
    objects: list    # bpy objects aligned with core.bodies (to name them in messages)
    t_end: float = None  # how long each release point runs, s (None: the simulation's frame range)


def prepare(context) -> BasinPlan:
    """The scene a bake would run (:func:`.bake.prepare`), checked for a map: one pendulum, fixed magnets."""
    sp = context.scene.pem
    plan = bake.prepare(context)
    plan.prepared = None
    by_name = {o.name: o for o in plan.objects}
    magnets = [by_name[b.name] for b in plan.core.bodies if b.role == "fixed" and b.dipoles]
    try:
        core_basin.bob_point(plan.core)
    except ValidationError as err:
        raise messages.AddonError(f"Basin map: {err.message}") from err
    if not magnets:
        raise messages.AddonError("Basin map: the scene needs fixed magnets (with dipoles) to settle over")
    extent = sp.basin_extent * plan.unit if sp.basin_extent > 0 else None
    t_end = sp.basin_seconds if sp.basin_seconds > 0 else None
    out = BasinPlan(plan.core, sp.basin_grid, extent, magnets, plan.unit, plan.objects, t_end)
    check_duration(out, context.scene)
    return out


def check_duration(plan: BasinPlan, scene) -> None:
    """AddonError, in the panel's words, when the map's runs (grid² release points of Seconds, or the frame range,
    at the scene's dt) are estimated to take more than a day: the bound ``pem basin`` refuses them by
    (:func:`~pem_physics.engine.budget.check_duration`, the same estimate), whose own words name its command-line
    options (--t-end, --dt, --force) the panel does not have."""
    t_end, dt = plan.t_end or plan.core.settings.t_end, plan.core.settings.dt
    members = plan.grid * plan.grid
    steps = round(t_end / dt)
    engine, pace = budget.engine_pace(members)
    seconds = float(steps) * max(sum(b.moving for b in plan.core.bodies), 1) * members / pace
    if not seconds > budget.MAX_RUN_SECONDS:
        return
    seconds_fix = ("shorten Seconds" if plan.t_end
                   else "set Seconds (0 runs the whole frame range) or shorten the frame range")
    step_fix = ("raise the time step dt" if scene.pem.step_mode == "DT" else "use fewer substeps per frame")
    raise messages.AddonError(f"Basin map: {plan.grid} × {plan.grid} release points of {t_end:g} s each at dt = "
                              f"{dt:.3g} s would take {budget.span(seconds)} (an estimate, at the {engine} engine's "
                              f"~{pace:.0e} body-steps a second; maps of more than {budget.MAX_RUN_SECONDS / 3600:g} "
                              f"hours are refused): lower Grid, {seconds_fix}, or {step_fix} (Scene ▸ Magnetic "
                              "Pendulum)")


def run(plan: BasinPlan, progress=None, stop=None) -> core_basin.BasinResult:
    """The core's basin map of the plan (thread-safe; ``stop()`` ends it early, the result then incomplete)."""
    try:
        return core_basin.basin_map(plan.core, grid=plan.grid, extent=plan.extent, t_end=plan.t_end,
                                    progress=progress, stop=stop)
    except ValidationError as err:   # the core names its command's options: the panel's fields instead
        text = err.message
        for phrase in CLI_ONLY:
            text = text.replace(phrase, "")
        for option, field in OPTION_FIELDS.items():
            text = text.replace(option, field)
        said = messages.object_message(f"{OPTION_FIELDS.get(err.path, err.path)}: {text}", plan.objects, [])
        raise messages.AddonError(f"Basin map: {said}") from err


def _colour(obj):
    """An object's colour as the viewport shows it in Solid mode: its first material's, else the object's."""
    mat = obj.active_material
    return tuple(mat.diffuse_color[:3]) if mat is not None else tuple(obj.color[:3])


def colours(magnets: list) -> np.ndarray:
    """(K, 3) RGB of each magnet's cells: the magnets' own colours where they all differ, else the core's palette
    (``pem basin``'s)."""
    own = [_colour(o) for o in magnets]
    if len(set(own)) == len(own):
        return np.array(own, dtype=float)
    return np.array([core_basin.PALETTE[k % len(core_basin.PALETTE)] for k in range(len(magnets))])


def pixels(result: core_basin.BasinResult, rgb: np.ndarray) -> np.ndarray:
    """(N, N, 4) RGBA of the map, row 0 the lowest y (Blender's images start at the bottom), column 0 the lowest x."""
    out = np.empty(result.label.shape + (4,))
    out[..., :3] = UNSETTLED
    out[..., 3] = 1.0
    for k in range(len(rgb)):
        out[result.label == k, :3] = rgb[k]
    return out


def _image(n: int, rgba: np.ndarray):
    img = bpy.data.images.get(NAME)
    if img is not None and tuple(img.size) != (n, n):
        bpy.data.images.remove(img)
        img = None
    if img is None:
        img = bpy.data.images.new(NAME, n, n, alpha=False, float_buffer=True)
    img.pixels.foreach_set(rgba.astype(np.float32).ravel())
    img.update()
    img.pack()   # the map goes with the .blend
    return img


def _material(img):
    mat = bpy.data.materials.get(NAME) or bpy.data.materials.new(NAME)
    if mat.node_tree is None:   # Blender 4.x; from 5.0 every material has its node tree (use_nodes deprecated)
        mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    nodes.clear()
    tex = nodes.new("ShaderNodeTexImage")
    tex.image, tex.interpolation = img, "Closest"     # one release point, one sharp cell
    emit = nodes.new("ShaderNodeEmission")
    out = nodes.new("ShaderNodeOutputMaterial")
    links.new(tex.outputs["Color"], emit.inputs["Color"])
    links.new(emit.outputs["Emission"], out.inputs["Surface"])
    tex.location, emit.location, out.location = (-400, 0), (-100, 0), (150, 0)
    return mat


def _plane(result: core_basin.BasinResult, plan: BasinPlan, context, mat):
    """The plane under the pendulum, its corners the grid's outer release points (BU), its UVs the image."""
    x0, x1, y0, y1 = result.x[0], result.x[-1], result.y[0], result.y[-1]
    hx, hy = 0.5 * (x1 - x0) / (len(result.x) - 1), 0.5 * (y1 - y0) / (len(result.y) - 1)  # half a cell
    x0, x1, y0, y1 = x0 - hx, x1 + hx, y0 - hy, y1 + hy
    # under the magnets' lowest point (their meshes' bounding boxes, BU), a little lower still
    low = min(min((o.matrix_world @ mathutils.Vector(c)).z for c in o.bound_box) for o in plan.magnets)
    z = low - BELOW * (x1 - x0) / plan.unit
    V = np.array([[x0, y0, 0.0], [x1, y0, 0.0], [x1, y1, 0.0], [x0, y1, 0.0]]) / plan.unit
    V[:, 2] = z
    mesh = bpy.data.meshes.new(NAME)
    mesh.from_pydata(V.tolist(), [], [(0, 1, 2, 3)])
    uv = mesh.uv_layers.new(name="UVMap")
    uv.data.foreach_set("uv", [0, 0, 1, 0, 1, 1, 0, 1])
    mesh.materials.append(mat)
    obj = bpy.data.objects.get(NAME)
    if obj is None or obj.type != "MESH":
        obj = bpy.data.objects.new(NAME, mesh)
        context.scene.collection.objects.link(obj)
    else:
        old = obj.data
        obj.data = mesh
        if old.users == 0:
            bpy.data.meshes.remove(old)
        mesh.name = NAME
    obj.matrix_world = ((1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1))
    obj.hide_select = True     # a picture, not a body: clicks go through to the pendulum
    return obj


def apply(plan: BasinPlan, result: core_basin.BasinResult, context):
    """Show ``result``: the image (packed into the .blend), its material and the plane, replacing an earlier map."""
    rgba = pixels(result, colours(plan.magnets))
    img = _image(result.label.shape[0], rgba)
    return _plane(result, plan, context, _material(img))
