"""Hard-sphere gas in Blender: one point mesh played by a PC2 point cache, spheres instanced on its points.

Thousands of particles are not thousands of objects. **Build Hard-Sphere Gas** fills a box
object with N equal spheres at a packing fraction, runs the event-driven engine
(:mod:`pem_physics.gas`) over the frame range and writes the centres at the frame times to a PC2
file, then creates one object:

- a mesh of N vertices (the centres at the first frame) with a per-point float attribute
  ``radius`` (Blender units);
- a *Mesh Cache* modifier reading the PC2 file: scene frame f shows sample f − frame_start, the
  positions at t = (f − frame_start) / fps seconds;
- a *Geometry Nodes* modifier instancing a UV sphere of radius 1 on every point, scaled by the
  point's ``radius`` (its *Material* input colours the spheres: :data:`MATERIAL_NAME` on a new gas).

Units: lengths in Blender units, times in seconds (scene frame rate), temperature T in
BU²/s² with k_B = 1 and a particle mass of 1, so √T is the r.m.s. velocity component in BU/s.
The gas lives in the box object's frame: the box's rotation and location at build time, its
scaled dimensions as the box lengths (the box object itself is not changed or followed later).

Periodic boxes show each particle wrapped into the box: one that leaves through a face comes back
through the opposite one and jumps across the box between two frames (the cache then uses no
interpolation between frames, which would draw it across the box); spheres near a face stick out
of it by up to a radius.

The cache goes next to the .blend (``//<blend name>_<object>_<token>.pc2``, a path relative to
the file) or, for an unsaved file, into ``<system temp>/pem_gas/`` (absolute; the report and the
panel say where). Each build writes a new file, so undo never brings back an object whose cache
was overwritten; a build removes the files of earlier builds of the same box's gas that no object
uses any more (:func:`remove_stale_caches`: a gas object deleted, or rebuilt), and the report says so.

As with Bake: :func:`prepare` reads and checks everything (no changes), :func:`run` is
pure core (thread-safe, stops on request), :func:`apply` writes the file and creates the object,
removing everything it made if any step fails.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field

import bpy
import mathutils
import numpy as np
from bpy.props import BoolProperty, FloatProperty, IntProperty, PointerProperty, StringProperty

from ..pem_physics.errors import Interrupted, PemError
from ..pem_physics.io import gas_cache, pc2
from .jobs import ModalJob
from .messages import AddonError
from .units import matrix, typed

#: Name of the per-point float attribute holding each sphere's radius (Blender units).
RADIUS_ATTRIBUTE = "radius"
#: Custom property on a gas object: how it was built (a dict).
GAS_KEY = "pem_gas"
CACHE_MODIFIER = "Gas Cache"
SPHERES_MODIFIER = "Gas Spheres"
#: A cache bigger than this (bytes) is refused before the run: the positions are held in memory in double
#: precision while it is written (three times its size).
MAX_CACHE_BYTES = 2**30


def _box_poll(self, obj):
    return obj.type == "MESH"


class PEM_PG_gas(bpy.types.PropertyGroup):
    """The panel's settings for Build Hard-Sphere Gas (``Scene.pem_gas``); the operator's defaults."""

    box: PointerProperty(name="Box", type=bpy.types.Object, poll=_box_poll,
                         description="Mesh object whose dimensions (scale applied) and orientation are the gas box")
    n: IntProperty(name="Particles", default=500, soft_min=1, soft_max=100_000, description="Number of spheres N")
    packing_fraction: FloatProperty(
        name="Packing Fraction", default=0.2, soft_min=0.001, soft_max=0.64, precision=3,
        description="Fraction of the box volume the spheres fill (η); it sets their radius. Random start up to "
                    "0.30, fcc lattice start above, at most 0.64 (random close packing)")
    temperature: FloatProperty(name="Temperature", default=1.0, soft_min=0.0, soft_max=100.0,
                               description="k_B T per particle mass, BU²/s²: √T is the r.m.s. velocity component "
                                           "in Blender units per second")
    seed: IntProperty(name="Seed", default=0, min=0, description="Random seed of the start positions and velocities")
    periodic: BoolProperty(name="Periodic", default=True,
                           description="Periodic box (particles leaving through a face re-enter through the "
                                       "opposite one); off: hard walls")


@dataclass
class Plan:
    """A checked build: everything :func:`run` and :func:`apply` need, read from Blender."""

    box_name: str
    n: int
    packing_fraction: float
    temperature: float
    seed: int
    periodic: bool
    lengths: np.ndarray      # (3,) box lengths, BU
    world: np.ndarray        # (4, 4) world matrix of the gas object: box corner, box rotation, no scale
    frame_start: int
    frame_end: int
    fps: float
    cache_dir: str           # absolute folder of the cache file
    relative: bool           # store the path relative to the .blend

    @property
    def times(self) -> np.ndarray:
        """Frame times (S,) in s: t_k = k / fps for frames frame_start + k."""
        return np.arange(self.frame_end - self.frame_start + 1) / self.fps

    def label(self) -> str:
        return f"Gas box '{self.box_name}'"


@dataclass
class Result:
    positions: np.ndarray    # (S, N, 3) centres at the frame times, BU, in the box frame
    radius: float            # BU
    info: dict
    total_time: float = 0.0  # s, the whole run: the start state, the engine's set-up (its first compile) and events
    removed: list = field(default_factory=list)  # stale caches of the same gas removed by apply (paths)


def cache_folder() -> tuple[str, bool]:
    """(folder for a new cache, whether to store its path relative to the .blend)."""
    if bpy.data.filepath:
        return os.path.dirname(bpy.path.abspath(bpy.data.filepath)), True
    return os.path.join(tempfile.gettempdir(), "pem_gas"), False


def _box_frame(box, label: str) -> tuple[np.ndarray, np.ndarray]:
    """(box lengths (3,) BU, world matrix (4, 4) of the box's min corner with its rotation, no scale)."""
    loc, rot, scale = box.matrix_world.decompose()
    if min(scale) <= 0:
        raise AddonError(f"{label}: has a zero or negative scale {tuple(round(s, 6) for s in scale)}; "
                         "apply or fix the scale")
    corners = np.array([list(v) for v in box.bound_box], dtype=float)   # (8, 3) local
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    lengths = (hi - lo) * np.array(scale)
    if np.any(lengths <= 0):
        a = "xyz"[int(np.argmax(lengths <= 0))]
        raise AddonError(f"{label}: has zero size along {a} (dimensions {tuple(round(x, 6) for x in lengths)}); "
                         "a gas box needs a volume")
    W = matrix(box.matrix_world)
    rebuilt = np.eye(4)
    rebuilt[:3, :3] = matrix(rot.to_matrix()) * np.array(scale)
    rebuilt[:3, 3] = np.array(loc)
    if np.max(np.abs(rebuilt - W)) > 1e-5 * max(1.0, np.abs(W).max()):
        raise AddonError(f"{label}: its transform is sheared (a non-uniformly scaled parent?); unparent it or apply "
                         "the parent's scale")
    world = np.eye(4)
    world[:3, :3] = matrix(rot.to_matrix())
    world[:3, 3] = W[:3, :3] @ lo + W[:3, 3]
    return lengths, world


def prepare(context, box, n, packing_fraction, temperature, seed, periodic, frame_start, frame_end) -> Plan:
    """Check the settings and read the box; changes nothing. AddonError names the box and the setting."""
    if box is None:
        raise AddonError("No gas box: pick a mesh object whose dimensions define the box")
    label = f"Gas box '{box.name}'"
    lengths, world = _box_frame(box, label)
    try:
        gas_cache.check_gas_args(n, packing_fraction, lengths, temperature)
    except ValueError as err:
        raise AddonError(f"{label}: {err}") from err
    if frame_end < frame_start:
        raise AddonError(f"{label}: frame range {frame_start}–{frame_end} is empty (end before start)")
    scene = context.scene
    fps = scene.render.fps / scene.render.fps_base
    if not fps > 0:
        raise AddonError(f"Scene '{scene.name}': frame rate must be positive")
    size = 32 + 12 * n * (frame_end - frame_start + 1)
    if size > MAX_CACHE_BYTES:
        raise AddonError(f"{label}: the cache of {n} particles over {frame_end - frame_start + 1} frames would be "
                         f"{size / 2**30:.1f} GB; use fewer particles or frames")
    folder, relative = cache_folder()
    return Plan(box.name, int(n), float(packing_fraction), float(temperature), int(seed), bool(periodic), lengths,
                world, int(frame_start), int(frame_end), fps, folder, relative)


def run(plan: Plan, progress=None, stop=None) -> Result:
    """Start state and the positions at the frame times (pure core; no bpy). AddonError names the box;
    Interrupted when ``stop()`` says so."""
    start = time.perf_counter()  # the engine's own wall time leaves out its set-up: compiling it (~20 s, once)
    try:
        state = gas_cache.gas_in_box(plan.n, plan.packing_fraction, plan.lengths, periodic=plan.periodic,
                                     temperature=plan.temperature, seed=plan.seed)
    except ValueError as err:
        raise AddonError(f"{plan.label()}: {err}") from err
    positions, info = gas_cache.frame_positions(state, plan.times, progress=progress, stop=stop)
    return Result(positions, float(state.radii[0]), info, time.perf_counter() - start)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "gas"


def cache_path(plan: Plan, object_name: str) -> str:
    """Absolute path of a new cache file for the object (a fresh token: never an existing file)."""
    stem = _safe(os.path.splitext(os.path.basename(bpy.data.filepath))[0]) + "_" if plan.relative else ""
    return os.path.join(plan.cache_dir, f"{stem}{_safe(object_name)}_{uuid.uuid4().hex[:8]}.pc2")


#: The spheres' material on a new gas (created once, shared by every gas; set_material puts another).
MATERIAL_NAME = "PEM Gas Spheres"
SPHERE_COLOR = (0.8, 0.22, 0.05, 1.0)


def default_material():
    """(material, whether it was created now): :data:`MATERIAL_NAME`, a Principled BSDF of :data:`SPHERE_COLOR`
    (also its viewport colour), so that spheres do not render default grey."""
    mat = bpy.data.materials.get(MATERIAL_NAME)
    if mat is not None:
        return mat, False
    mat = bpy.data.materials.new(MATERIAL_NAME)
    if mat.node_tree is None:   # Blender 4.x; from 5.0 every material has its node tree (use_nodes deprecated)
        mat.use_nodes = True
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = SPHERE_COLOR
    mat.diffuse_color = SPHERE_COLOR
    return mat, True


def _cache_paths_in_use() -> set:
    """Absolute paths of every Mesh Cache modifier's file in the blend data."""
    return {os.path.normpath(bpy.path.abspath(m.filepath)) for o in bpy.data.objects for m in o.modifiers
            if m.type == "MESH_CACHE" and m.filepath}


#: Cache files this Blender session wrote (absolute): in the shared temporary folder (unsaved .blend files) only
#: these are this session's to remove; another Blender may be playing the others.
_written: set = set()


def remove_stale_caches(plan: Plan) -> list:
    """Delete the cache files of earlier builds of this box's gas that no object uses any more (the gas object
    was deleted or rebuilt): same folder, same name pattern as :func:`cache_path`, and next to this .blend (its
    name in theirs) or written by this session (the temporary folder). Returns their paths.

    Undo cannot bring such a file back: an undone deletion of an older gas object then plays no cache."""
    stem = _safe(os.path.splitext(os.path.basename(bpy.data.filepath))[0]) + "_" if plan.relative else ""
    pattern = re.compile(re.escape(stem + _safe(f"{plan.box_name} Gas")) + r"(\.\d+)?_[0-9a-f]{8}\.pc2")
    if not os.path.isdir(plan.cache_dir):
        return []
    used = _cache_paths_in_use()
    removed = []
    for name in sorted(os.listdir(plan.cache_dir)):
        path = os.path.normpath(os.path.join(plan.cache_dir, name))
        if pattern.fullmatch(name) and path not in used and (plan.relative or path in _written):
            try:
                os.remove(path)
                removed.append(path)
            except OSError:  # in use elsewhere or read-only: left, as before
                pass
    return removed


def sphere_node_group(name: str = "PEM Gas Spheres"):
    """A Geometry Nodes group: a UV sphere (radius 1, smooth) instanced on every point, scaled by the point's
    ``radius`` attribute, with the material of its *Material* input. Works on Blender 4.2 – 5.2 (the shade
    smooth node's sockets are reached by index: named "Geometry" in 4.2, "Mesh" in 5.0)."""
    ng = bpy.data.node_groups.new(name, "GeometryNodeTree")
    ng.is_modifier = True
    ng.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    ng.interface.new_socket("Material", in_out="INPUT", socket_type="NodeSocketMaterial")
    ng.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes, links = ng.nodes, ng.links
    gin = nodes.new("NodeGroupInput")
    gout = nodes.new("NodeGroupOutput")
    sphere = nodes.new("GeometryNodeMeshUVSphere")
    sphere.inputs["Segments"].default_value = 24
    sphere.inputs["Rings"].default_value = 12
    sphere.inputs["Radius"].default_value = 1.0
    smooth = nodes.new("GeometryNodeSetShadeSmooth")
    material = nodes.new("GeometryNodeSetMaterial")
    radius = nodes.new("GeometryNodeInputNamedAttribute")
    radius.data_type = "FLOAT"
    radius.inputs["Name"].default_value = RADIUS_ATTRIBUTE
    inst = nodes.new("GeometryNodeInstanceOnPoints")
    links.new(sphere.outputs["Mesh"], smooth.inputs[0])
    links.new(smooth.outputs[0], material.inputs["Geometry"])
    links.new(gin.outputs["Material"], material.inputs["Material"])
    links.new(gin.outputs["Geometry"], inst.inputs["Points"])
    links.new(material.outputs["Geometry"], inst.inputs["Instance"])
    links.new(radius.outputs["Attribute"], inst.inputs["Scale"])
    links.new(inst.outputs["Instances"], gout.inputs["Geometry"])
    for k, node in enumerate((gin, sphere, smooth, material, radius, inst, gout)):
        node.location = (200 * k - 600, 0 if node is not radius else -200)
    return ng


def set_material(obj, material) -> None:
    """Colour a gas object's spheres (the *Material* input of its Geometry Nodes modifier)."""
    mod = obj.modifiers[SPHERES_MODIFIER]
    socket = mod.node_group.interface.items_tree["Material"].identifier
    props = getattr(mod, "properties", None)
    if props is not None:   # Blender 5.2+: the inputs are RNA properties (an ID property is refused)
        getattr(props.inputs, socket).value = material
    else:                   # 4.2 to 5.1: the modifier's ID property named by the socket
        mod[socket] = material
    obj.update_tag()


def apply(plan: Plan, result: Result, context):
    """Write the cache and create the gas object; all or nothing (any failure removes what was made)."""
    made = []   # (collection, datablock) to remove on failure, newest last
    path = None
    try:
        name = f"{plan.box_name} Gas"
        mesh = bpy.data.meshes.new(name)
        made.append((bpy.data.meshes, mesh))
        mesh.vertices.add(plan.n)
        mesh.vertices.foreach_set("co", result.positions[0].astype(np.float32).ravel())
        attr = mesh.attributes.new(RADIUS_ATTRIBUTE, "FLOAT", "POINT")
        attr.data.foreach_set("value", np.full(plan.n, result.radius, dtype=np.float32))
        mesh.update()
        obj = bpy.data.objects.new(name, mesh)
        made.append((bpy.data.objects, obj))
        obj.matrix_world = mathutils.Matrix(plan.world.tolist())
        path = cache_path(plan, obj.name)
        pc2.write_pc2(path, result.positions, start_frame=plan.frame_start, sample_rate=1.0)
        _written.add(os.path.normpath(path))
        cache = obj.modifiers.new(CACHE_MODIFIER, "MESH_CACHE")
        cache.cache_format = "PC2"
        cache.filepath = bpy.path.relpath(path) if plan.relative else path
        cache.time_mode = "FRAME"
        cache.play_mode = "SCENE"
        cache.frame_start = float(plan.frame_start)   # sample = scene frame − frame_start
        cache.frame_scale = 1.0
        # between frames: a straight line is the exact flight between collisions, but across a periodic
        # wrap it would draw the particle through the box, so periodic gases hold each frame
        cache.interpolation = "NONE" if plan.periodic else "LINEAR"
        ng = sphere_node_group()
        made.append((bpy.data.node_groups, ng))
        spheres = obj.modifiers.new(SPHERES_MODIFIER, "NODES")
        spheres.node_group = ng
        mat, new = default_material()
        if new:
            made.append((bpy.data.materials, mat))
        set_material(obj, mat)
        obj[GAS_KEY] = {
            "box": plan.box_name, "n": plan.n, "packing_fraction": plan.packing_fraction,
            "temperature": plan.temperature, "seed": plan.seed, "periodic": plan.periodic,
            "radius": result.radius, "lengths": plan.lengths.tolist(), "frame_start": plan.frame_start,
            "frame_end": plan.frame_end, "fps": plan.fps, "cache": cache.filepath,
            "engine": result.info["engine"] + (", built ahead of time" if result.info.get("kernels") == "ahead-of-time"
                                               else ""),
            "collisions": result.info["collisions"],
            "wall_events": result.info["wall_events"], "wall_time": result.info["wall_time"],
            "total_time": result.total_time}
        context.collection.objects.link(obj)
    except BaseException:
        for collection, block in reversed(made):
            collection.remove(block)
        if path is not None and os.path.exists(path):
            os.remove(path)
        raise
    replaced = _remove_gases(plan.box_name, keep=obj)   # a rebuild replaces the box's gas: one object, its name
    if replaced:
        obj.name = replaced[0]
    result.removed = remove_stale_caches(plan)  # after the new object uses its own file
    for other in context.view_layer.objects:
        if other is not None:         # a replaced gas's entry until the view layer syncs
            other.select_set(False)
    obj.select_set(True)
    context.view_layer.objects.active = obj
    return obj


def gases_of(box_name: str) -> list:
    """The gas objects built in the box of that name."""
    return [o for o in bpy.data.objects if GAS_KEY in o and o[GAS_KEY].get("box") == box_name]


def _remove_gases(box_name: str, keep=None) -> list:
    """Remove the box's gas objects but ``keep`` (their meshes with them when no one else uses them); their names.
    Their cache files go with :func:`remove_stale_caches` (no object uses them any more)."""
    names = []
    for old in gases_of(box_name):
        if old is not keep:
            names.append(old.name)
            _remove_object(old)
    return names


def _remove_object(obj) -> None:
    """Remove a gas object, and its point mesh when no one else uses it."""
    mesh = obj.data
    bpy.data.objects.remove(obj)
    if mesh is not None and mesh.users == 0:
        bpy.data.meshes.remove(mesh)


def delete(obj) -> list:
    """Delete a gas object and its cache file (the file only if no other object plays it); the files removed."""
    path = os.path.normpath(bpy.path.abspath(obj[GAS_KEY]["cache"]))
    _remove_object(obj)
    if os.path.exists(path) and path not in _cache_paths_in_use():
        os.remove(path)
        return [path]
    return []


@bpy.app.handlers.persistent
def move_caches_beside_the_blend(filepath, *args):
    """Before a .blend is saved (``save_pre``): every gas cache still in the temporary folder (built before the file
    was saved) moves next to it and is played by a relative path (``//``), so the file and its caches travel
    together."""
    folder = os.path.dirname(bpy.path.abspath(filepath)) if filepath else ""
    if not folder:
        return
    stem = _safe(os.path.splitext(os.path.basename(filepath))[0]) + "_"
    temp = os.path.normpath(os.path.join(tempfile.gettempdir(), "pem_gas"))
    for obj in bpy.data.objects:
        if GAS_KEY not in obj or CACHE_MODIFIER not in obj.modifiers:
            continue
        mod = obj.modifiers[CACHE_MODIFIER]
        src = os.path.normpath(bpy.path.abspath(mod.filepath))
        if os.path.dirname(src) != temp or not os.path.exists(src):
            continue
        dst = os.path.join(folder, stem + os.path.basename(src))
        shutil.move(src, dst)             # across file systems too (the temporary folder often is another)
        _written.discard(src)
        _written.add(os.path.normpath(dst))
        mod.filepath = bpy.path.relpath(dst, start=folder)
        info = dict(obj[GAS_KEY])
        info["cache"] = mod.filepath
        obj[GAS_KEY] = info


def build(context, progress=None, stop=None, **settings):
    """prepare → run → apply, synchronously (scripts, ``blender -b``, tests); returns (object, Result)."""
    plan = prepare(context, **settings)
    result = run(plan, progress, stop)
    return apply(plan, result, context), result


#: Set-up time (s) beyond which the report says what took it (the engine's first compile).
SETUP_NOTE_SECONDS = 1.0


def report_text(obj, result: Result) -> str:
    """The build's report: what was made, the whole run's time (and the set-up's share, the engine's first
    compile, when it is noticeable), where the cache is and which stale caches were removed."""
    g = obj[GAS_KEY]
    where = bpy.path.abspath(g["cache"])
    setup = result.total_time - result.info["wall_time"]
    timing = f"{result.total_time:.2f} s" + (f" ({setup:.1f} s of it setting up and compiling the engine, once per "
                                            f"session; {result.info['wall_time']:.2f} s simulating)"
                                            if setup > SETUP_NOTE_SECONDS else "")
    removed = (f"; removed {len(result.removed)} stale cache file(s) of earlier builds of this gas"
               if result.removed else "")
    return (f"Object '{obj.name}': {g['n']} spheres of radius {g['radius']:.4g}, "
            f"{g['frame_end'] - g['frame_start'] + 1} frames, {g['collisions']} collisions in {timing} "
            f"({g['engine']} engine); cache {where}{removed}")


class PEM_OT_gas_build(ModalJob, bpy.types.Operator):
    """Fill a box object with hard spheres, simulate them over the frame range and play them from a point cache
    (Esc cancels and changes nothing)"""

    bl_idname = "pem.gas_build"
    bl_label = "Build Hard-Sphere Gas"
    bl_options = {"REGISTER", "UNDO"}

    # Unset properties take the scene's Hard-Sphere Gas settings (and its frame range).
    box: StringProperty(name="Box", description="Name of the box object (default: the panel's box)")
    n: IntProperty(name="Particles", default=500, soft_min=1, soft_max=100_000)
    packing_fraction: FloatProperty(name="Packing Fraction", default=0.2, soft_min=0.001, soft_max=0.64)
    temperature: FloatProperty(name="Temperature", default=1.0, soft_min=0.0, description="BU²/s² (k_B = m = 1)")
    seed: IntProperty(name="Seed", default=0, min=0)
    periodic: BoolProperty(name="Periodic", default=True)
    frame_start: IntProperty(name="Start Frame", description="Default: the scene's")
    frame_end: IntProperty(name="End Frame", description="Default: the scene's")

    job_label = "PEM gas: simulating"
    cancel_message = "Gas build cancelled; nothing was changed"

    def _settings(self, context) -> dict:
        g = context.scene.pem_gas
        out = {}
        for name in ("n", "packing_fraction", "temperature", "seed", "periodic"):
            out[name] = getattr(self, name) if self.properties.is_property_set(name) else getattr(g, name)
        for name in ("packing_fraction", "temperature"):  # single-precision properties: the decimals typed
            out[name] = typed(out[name])
        for name in ("frame_start", "frame_end"):
            out[name] = getattr(self, name) if self.properties.is_property_set(name) else getattr(context.scene, name)
        if self.box:
            box = bpy.data.objects.get(self.box)
            if box is None:
                raise AddonError(f"Gas box '{self.box}': no object of that name")
        else:
            box = g.box
        out["box"] = box
        return out

    def execute(self, context):
        try:
            obj, result = build(context, **self._settings(context))
        except (PemError, ValueError, OSError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        except KeyboardInterrupt:   # Ctrl-C in a script: apply() removed anything it had made
            self.report({"WARNING"}, "Gas build interrupted; nothing was changed")
            return {"CANCELLED"}
        self.report({"INFO"}, report_text(obj, result))
        return {"FINISHED"}

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        try:
            self._plan = prepare(context, **self._settings(context))
        except PemError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        return self._start_job(context, lambda progress, stop: run(self._plan, progress=progress, stop=stop))

    def _job_done(self, context, result, error) -> set:
        if isinstance(error, Interrupted):
            self.report({"WARNING"}, self.cancel_message)
            return {"CANCELLED"}
        if error is not None:
            self.report({"ERROR"}, str(error) if isinstance(error, PemError) else f"{type(error).__name__}: {error}")
            return {"CANCELLED"}
        try:
            obj = apply(self._plan, result, context)
        except (PemError, ValueError, OSError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, report_text(obj, result))
        return {"FINISHED"}


def draw_gas(layout, context) -> None:
    """The panel: settings, the sphere radius they give, the button, and the active gas object's build."""
    g = context.scene.pem_gas
    layout.use_property_split = True        # Blender's layout: labels left, values right
    layout.use_property_decorate = False
    col = layout.column()
    col.prop(g, "box")
    col.prop(g, "n")
    col.prop(g, "packing_fraction")
    col.prop(g, "temperature")
    col.prop(g, "seed")
    col.prop(g, "periodic")
    row = col.row(align=True)
    row.prop(context.scene, "frame_start")
    row.prop(context.scene, "frame_end")
    if g.box is not None:
        try:
            lengths, _ = _box_frame(g.box, f"Gas box '{g.box.name}'")
            if g.n >= 1 and g.packing_fraction > 0:
                r = gas_cache.sphere_radius(g.n, g.packing_fraction, lengths)
                col.label(text=f"Box {lengths[0]:.3g} × {lengths[1]:.3g} × {lengths[2]:.3g}: sphere radius {r:.3g}")
        except AddonError as err:
            col.label(text=str(err), icon="ERROR")
    folder, relative = cache_folder()
    col.label(text="Cache: next to the .blend" if relative else f"Cache: {folder} (file not saved)")
    layout.operator(PEM_OT_gas_build.bl_idname, icon="PHYSICS")
    obj = context.object
    if obj is not None and GAS_KEY in obj:
        info = obj[GAS_KEY]
        box = layout.box()
        box.label(text=f"{obj.name}: {info['n']} spheres, radius {info['radius']:.4g}", icon="INFO")
        box.label(text=f"η {info['packing_fraction']:.3g}, T {info['temperature']:.3g}, seed {info['seed']}, "
                       + ("periodic" if info["periodic"] else "hard walls"))
        box.label(text=f"Frames {info['frame_start']}–{info['frame_end']}, {info['collisions']} collisions, "
                       f"{info['engine']} engine")
        box.label(text=f"Cache: {info['cache']}")
        box.operator(PEM_OT_gas_delete.bl_idname, icon="TRASH")


class PEM_OT_gas_delete(bpy.types.Operator):
    """Delete the active gas object and its cache file"""

    bl_idname = "pem.gas_delete"
    bl_label = "Delete Gas"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.object
        if obj is None or GAS_KEY not in obj:
            cls.poll_message_set("Select a gas object (made by Build Hard-Sphere Gas)")
            return False
        return True

    def execute(self, context):
        obj = context.object
        name = obj.name
        removed = delete(obj)
        self.report({"INFO"}, f"Deleted gas '{name}'" + (f" and its cache {removed[0]}" if removed else ""))
        return {"FINISHED"}


class _GasPanel:
    def draw(self, context):
        draw_gas(self.layout, context)


class PEM_PT_gas(_GasPanel, bpy.types.Panel):
    bl_label = "Hard-Sphere Gas"
    bl_idname = "PEM_PT_gas"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "scene"
    bl_options = {"DEFAULT_CLOSED"}


class PEM_PT_sidebar_gas(_GasPanel, bpy.types.Panel):
    bl_label = "Hard-Sphere Gas"
    bl_idname = "PEM_PT_sidebar_gas"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "PEM"
    bl_options = {"DEFAULT_CLOSED"}


classes = (PEM_PG_gas, PEM_OT_gas_build, PEM_OT_gas_delete, PEM_PT_gas, PEM_PT_sidebar_gas)
_register, _unregister = bpy.utils.register_classes_factory(classes)


def register():
    _register()
    bpy.types.Scene.pem_gas = PointerProperty(type=PEM_PG_gas)
    if move_caches_beside_the_blend not in bpy.app.handlers.save_pre:
        bpy.app.handlers.save_pre.append(move_caches_beside_the_blend)


def unregister():
    if move_caches_beside_the_blend in bpy.app.handlers.save_pre:
        bpy.app.handlers.save_pre.remove(move_caches_beside_the_blend)
    del bpy.types.Scene.pem_gas
    _unregister()
