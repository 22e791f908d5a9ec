"""The gas object: its point mesh, the PC2 cache file it plays (beside the .blend), the spheres instanced on its
points and their material; removing a gas and the caches no object plays any more."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import uuid

import bpy
import mathutils
import numpy as np

from ...pem_physics.io import pc2
from .build import Plan, Result

#: Name of the per-point float attribute holding each sphere's radius (Blender units).
RADIUS_ATTRIBUTE = "radius"
#: Custom property on a gas object: how it was built (a dict).
GAS_KEY = "pem_gas"
CACHE_MODIFIER = "Gas Cache"
SPHERES_MODIFIER = "Gas Spheres"


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
    # deselect before removing: a removed object's view-layer entry dangles until the layer syncs, and
    # touching it then crashes Blender (seen 1 in 5 under 5.0)
    for other in context.view_layer.objects:
        other.select_set(False)
    replaced = _remove_gases(plan.box_name, keep=obj)   # a rebuild replaces the box's gas: one object, its name
    if replaced:
        obj.name = replaced[0]
    result.removed = remove_stale_caches(plan)  # after the new object uses its own file
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


#: A cache file's name as :func:`cache_path` makes it: letters, digits, ``_.-``, then ``_`` and an 8-digit hex token.
_CACHE_NAME = re.compile(r"[A-Za-z0-9_.-]*_[0-9a-f]{8}\.pc2")


def _temp_folder() -> str:
    return os.path.normpath(os.path.join(tempfile.gettempdir(), "pem_gas"))


def not_ours(obj, path: str) -> str | None:
    """Why the file ``path`` that gas object ``obj`` names is not a cache this add-on wrote for it, or None when it
    is: named as :func:`cache_path` names caches, in the folder caches are written to (beside this .blend, or the
    temporary folder), the file the object's Gas Cache modifier plays, with a PC2 header that matches its size.
    The object's record and its modifier's path can both be edited (or arrive so in any .blend): anything else is
    the user's."""
    if not _CACHE_NAME.fullmatch(os.path.basename(path)):
        return "its name is not one this add-on gives its caches"
    folders = {_temp_folder()}
    if bpy.data.filepath:
        folders.add(os.path.normpath(os.path.dirname(bpy.path.abspath(bpy.data.filepath))))
    if os.path.dirname(path) not in folders:
        return "it is not in the folder this add-on writes caches to"
    mod = obj.modifiers.get(CACHE_MODIFIER)
    if mod is None or mod.type != "MESH_CACHE" or os.path.normpath(bpy.path.abspath(mod.filepath)) != path:
        return "it is not the file the object's Gas Cache modifier plays"
    try:
        pc2.read_pc2_header(path)
    except (OSError, pc2.PC2Error):
        return "it is not a PC2 cache"
    return None


def delete(obj) -> tuple[list, str | None]:
    """Delete a gas object and its cache file: (the files removed, why the file named was left, or None). The file
    goes only if this add-on wrote it (:func:`not_ours`) and no other object plays it."""
    name = obj.name
    path = os.path.normpath(bpy.path.abspath(str(obj[GAS_KEY].get("cache", ""))))
    why = not_ours(obj, path) if os.path.isfile(path) else None
    _remove_object(obj)
    if why is not None:
        return [], f"Gas '{name}': its cache file {path} was left: {why}; delete it yourself if it is not needed"
    if os.path.isfile(path) and path not in _cache_paths_in_use():
        os.remove(path)
        return [path], None
    return [], None


def _free_path(folder: str, name: str) -> str:
    """``folder/name``, or where a file (or folder) of that name exists already, the same name with a fresh token
    (:func:`cache_path`'s pattern): a path no file has, so that moving a cache there overwrites nothing."""
    path = os.path.join(folder, name)
    head = name[:-len(".pc2")].rsplit("_", 1)[0] if name.endswith(".pc2") else _safe(name)
    while os.path.lexists(path):
        path = os.path.join(folder, f"{head}_{uuid.uuid4().hex[:8]}.pc2")
    return path


@bpy.app.handlers.persistent
def move_caches_beside_the_blend(filepath, *args):
    """Before a .blend is saved (``save_pre``): every gas cache still in the temporary folder (built before the file
    was saved) moves next to it and is played by a relative path (``//``), so the file and its caches travel
    together. A file already there under the cache's new name is never replaced: the cache gets a free name
    (:func:`_free_path`), which the object records."""
    folder = os.path.dirname(bpy.path.abspath(filepath)) if filepath else ""
    if not folder:
        return
    stem = _safe(os.path.splitext(os.path.basename(filepath))[0]) + "_"
    temp = _temp_folder()
    for obj in bpy.data.objects:
        if GAS_KEY not in obj or CACHE_MODIFIER not in obj.modifiers:
            continue
        mod = obj.modifiers[CACHE_MODIFIER]
        src = os.path.normpath(bpy.path.abspath(mod.filepath))
        if os.path.dirname(src) != temp or not os.path.exists(src):
            continue
        dst = _free_path(folder, stem + os.path.basename(src))
        shutil.move(src, dst)             # across file systems too (the temporary folder often is another)
        _written.discard(src)
        _written.add(os.path.normpath(dst))
        mod.filepath = bpy.path.relpath(dst, start=folder)
        info = dict(obj[GAS_KEY])
        info["cache"] = mod.filepath
        obj[GAS_KEY] = info
