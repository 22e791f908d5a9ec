"""Hard-sphere gas in Blender: a point mesh played by a PC2 cache, spheres instanced with Geometry Nodes.

Oracles: the core's own runs of the same start state, one uninterrupted run to each frame time
(``edmd.run``), compared with what Blender evaluates through the depsgraph — the Mesh Cache
modifier applied to the mesh, and the Geometry Nodes instances (position and scale = radius).
"""

from __future__ import annotations

import importlib
import os
import warnings

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import fingerprint, pem  # noqa: E402, F401

# Small enough for the numpy reference engine (bpy 4.2 has no numba), large enough to collide.
N = 40
FRAMES = (5, 14)          # a start frame other than 0 or 1, so that the frame mapping is really tested


@pytest.fixture(scope="module")
def mods(pem, ext):  # noqa: F811
    return {name: importlib.import_module(f"{ext.__name__}.{name}") for name in (
        "pem_addon.gas.build", "pem_addon.gas.objects", "pem_addon.gas.operators", "pem_physics.io.pc2",
        "pem_physics.io.gas_cache", "pem_physics.gas.edmd")}


def box_object(name="Cube", size=2.0, location=(0.4, -0.2, 1.0), rotation=(0.3, -0.2, 0.5), scale=(1.2, 1.0, 0.9)):
    bpy.ops.mesh.primitive_cube_add(size=size, location=location, rotation=rotation)
    obj = bpy.context.object
    obj.name = name
    obj.scale = scale
    bpy.context.view_layer.update()
    return obj


def setup(periodic=True):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.render.fps = 24
    box = box_object()
    g = scene.pem_gas
    g.box, g.n, g.packing_fraction, g.temperature, g.seed, g.periodic = box, N, 0.2, 1.5, 7, periodic
    return box


def data_fingerprint():
    """Every object's transform and state (test_addon.fingerprint) and the names of every datablock kind a
    build creates."""
    return (fingerprint(), sorted(o.name for o in bpy.data.objects), sorted(m.name for m in bpy.data.meshes),
            sorted(n.name for n in bpy.data.node_groups), sorted(m.name for m in bpy.data.materials),
            sorted(o.name for o in bpy.context.scene.collection.all_objects))


def cache_files(mods):
    folder, _ = mods["pem_addon.gas.build"].cache_folder()
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def the_gas():
    (obj,) = [o for o in bpy.data.objects if "pem_gas" in o]
    return obj


def core_positions(mods, obj, frames):
    """Positions (len(frames), N, 3) from the core: the gas built from the object's recorded settings, one
    uninterrupted engine run to each frame's time t = (f − frame_start) / fps, wrapped in a periodic box."""
    g = obj["pem_gas"]
    state = mods["pem_physics.io.gas_cache"].gas_in_box(
        g["n"], g["packing_fraction"], np.array(g["lengths"]), periodic=bool(g["periodic"]),
        temperature=g["temperature"], seed=g["seed"])
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # without numba the engine says it runs the reference
        for f in frames:
            t = (f - g["frame_start"]) / g["fps"]
            x = mods["pem_physics.gas.edmd"].run(state, t).state.positions
            out.append(x)
    return np.array(out), float(state.radii[0])


def evaluated_vertices(obj, frame):
    """The evaluated mesh's vertices (N, 3), object coordinates, with the Mesh Cache applied (the instancing
    modifier switched off for the moment: it turns the points into instances)."""
    spheres = obj.modifiers["Gas Spheres"]
    spheres.show_viewport = False
    bpy.context.scene.frame_set(frame)
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = ev.to_mesh()
    co = np.empty(3 * len(mesh.vertices), dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    ev.to_mesh_clear()
    spheres.show_viewport = True
    return co.reshape(-1, 3)


def evaluated_instances(obj, frame):
    """World matrices (K, 4, 4) of the instances the evaluated gas object makes at the frame."""
    bpy.context.scene.frame_set(frame)
    dg = bpy.context.evaluated_depsgraph_get()
    return np.array([np.array(i.matrix_world) for i in dg.object_instances
                     if i.is_instance and i.parent is not None and i.parent.original == obj])


@pytest.mark.parametrize("periodic", [True, False])
def test_build_plays_the_core_run_at_the_frame_times(mods, periodic):
    box = setup(periodic)
    box_before = np.array(box.matrix_world)
    assert bpy.ops.pem.gas_build() == {"FINISHED"}
    obj = the_gas()
    g = obj["pem_gas"]
    assert obj.name == "Cube Gas" and len(obj.data.vertices) == N and g["periodic"] == periodic
    assert [m.type for m in obj.modifiers] == ["MESH_CACHE", "NODES"]
    np.testing.assert_array_equal(np.array(box.matrix_world), box_before)   # the box is not touched
    # the box's frame: lengths = its scaled dimensions, the gas object at its min corner, turned with it
    np.testing.assert_allclose(g["lengths"], np.array(box.dimensions), rtol=1e-6)
    W = np.array(obj.matrix_world)
    corner = np.array(box.matrix_world) @ np.array([-1.0, -1.0, -1.0, 1.0])
    np.testing.assert_allclose(W[:, 3], corner, atol=1e-6)
    np.testing.assert_allclose(W[:3, :3] @ np.diag(box.scale), np.array(box.matrix_world)[:3, :3], atol=1e-6)

    frames = [FRAMES[0], FRAMES[0] + 1, FRAMES[0] + 4, FRAMES[1]]
    expect, radius = core_positions(mods, obj, frames)
    assert np.abs(expect[-1] - expect[0]).max() > radius     # the gas really moved
    lengths = np.array(g["lengths"])
    for f, x in zip(frames, expect):
        # float32 of the core's float64 (the numpy reference without numba differs by round-off)
        np.testing.assert_allclose(evaluated_vertices(obj, f), x.astype(np.float32), rtol=0, atol=2e-6,
                                   err_msg=f"frame {f}")
        if periodic:
            assert np.all(x >= 0) and np.all(x <= lengths)
        else:
            assert np.all(x >= radius - 1e-9) and np.all(x <= lengths - radius + 1e-9)
    # before the first frame and after the last the cache holds its first and last samples
    np.testing.assert_allclose(evaluated_vertices(obj, FRAMES[0] - 3), expect[0], atol=2e-6)
    np.testing.assert_allclose(evaluated_vertices(obj, FRAMES[1] + 5), expect[-1], atol=2e-6)

    # the spheres: one instance a point, at the point (world), scaled by the radius attribute
    radii = np.empty(N, dtype=np.float32)
    obj.data.attributes["radius"].data.foreach_get("value", radii)
    np.testing.assert_allclose(radii, radius, rtol=1e-6)
    assert g["radius"] == pytest.approx(radius)
    inst = evaluated_instances(obj, frames[2])
    assert len(inst) == N
    world = expect[2] @ W[:3, :3].T + W[:3, 3]
    order = np.lexsort(world.T)
    got = inst[np.lexsort(inst[:, :3, 3].T)]
    np.testing.assert_allclose(got[:, :3, 3], world[order], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got[:, :3, :3], axis=1), radius, rtol=1e-5)


@pytest.mark.parametrize("change, match", [
    (dict(n=0), r"Gas box 'Cube': N = 0 must be an integer >= 1"),
    (dict(packing_fraction=0.9), r"Gas box 'Cube': packing fraction 0.9 is above the random close packing limit"),
    (dict(packing_fraction=0.0), r"Gas box 'Cube': packing fraction 0 must be > 0"),
    (dict(n=2, packing_fraction=0.3), r"Gas box 'Cube': box length .* is too short for spheres"),
    (dict(temperature=-1.0), r"Gas box 'Cube': temperature -1 must be finite and >= 0"),
    (dict(frame_start=10, frame_end=3), r"Gas box 'Cube': frame range 10–3 is empty"),
    (dict(box="Nowhere"), r"Gas box 'Nowhere': no object of that name"),
])
def test_a_failed_build_changes_nothing(mods, change, match):
    setup()
    before, files = data_fingerprint(), cache_files(mods)
    with pytest.raises(RuntimeError, match=match):
        bpy.ops.pem.gas_build(**change)
    assert data_fingerprint() == before and cache_files(mods) == files


def test_no_box_and_a_flat_box_are_named(mods):
    setup()
    bpy.context.scene.pem_gas.box = None
    with pytest.raises(RuntimeError, match=r"No gas box: pick a mesh object"):
        bpy.ops.pem.gas_build()
    bpy.ops.mesh.primitive_plane_add(size=2.0)
    plane = bpy.context.object
    before = data_fingerprint()
    with pytest.raises(RuntimeError, match=r"Gas box 'Plane': has zero size along z"):
        bpy.ops.pem.gas_build(box=plane.name)
    assert data_fingerprint() == before


@pytest.mark.parametrize("where", ["write_pc2", "sphere_node_group", "interrupt"])
def test_a_failure_while_creating_removes_everything(mods, monkeypatch, where):
    setup()
    objects = mods["pem_addon.gas.objects"]
    before, files = data_fingerprint(), cache_files(mods)

    def broken(*args, **kw):
        raise KeyboardInterrupt if where == "interrupt" else OSError("disk full")

    if where == "write_pc2":
        monkeypatch.setattr(objects.pc2, "write_pc2", broken)
    elif where == "sphere_node_group":
        monkeypatch.setattr(objects, "sphere_node_group", broken)   # after the cache file was written
    else:
        monkeypatch.setattr(mods["pem_addon.gas.build"].gas_cache, "frame_positions", broken)   # Ctrl-C during the run
    if where == "interrupt":
        assert bpy.ops.pem.gas_build() == {"CANCELLED"}
    else:
        with pytest.raises(RuntimeError, match="disk full"):
            bpy.ops.pem.gas_build()
    assert data_fingerprint() == before and cache_files(mods) == files


def test_save_and_reload_keeps_it_working(mods, tmp_path):
    setup(periodic=True)
    blend = tmp_path / "gas.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert bpy.ops.pem.gas_build() == {"FINISHED"}
    obj = the_gas()
    path = obj.modifiers["Gas Cache"].filepath
    assert path.startswith("//gas_Cube_Gas_") and path.endswith(".pc2")        # relative, next to the .blend
    assert os.path.dirname(bpy.path.abspath(path)) == str(tmp_path)
    samples, head = mods["pem_physics.io.pc2"].read_pc2(bpy.path.abspath(path))
    assert head["n_points"] == N and head["n_samples"] == FRAMES[1] - FRAMES[0] + 1
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    obj = the_gas()
    for k in (0, 3, FRAMES[1] - FRAMES[0]):
        np.testing.assert_array_equal(evaluated_vertices(obj, FRAMES[0] + k), samples[k])
    assert len(evaluated_instances(obj, FRAMES[0] + 3)) == N
    expect, _ = core_positions(mods, obj, [FRAMES[0] + 3])
    np.testing.assert_allclose(samples[3], expect[0], rtol=0, atol=2e-6)


def test_material_input_colours_the_spheres(mods):
    setup()
    assert bpy.ops.pem.gas_build(n=30, frame_end=FRAMES[0] + 2) == {"FINISHED"}
    obj = the_gas()
    mat = bpy.data.materials.new("Blue")
    mods["pem_addon.gas.objects"].set_material(obj, mat)
    # what renders: the evaluated instances (the spheres) carry the material
    bpy.context.scene.frame_set(FRAMES[0] + 1)
    dg = bpy.context.evaluated_depsgraph_get()
    spheres = [i.object for i in dg.object_instances if i.is_instance and i.parent is not None
               and i.parent.original == obj]
    assert len(spheres) == 30
    assert all([m.original for m in s.data.materials if m is not None] == [mat] for s in spheres)
    assert obj["pem_gas"]["n"] == 30 and len(obj.data.vertices) == 30


def test_a_cache_too_big_is_refused_before_the_run(mods, monkeypatch):
    setup()
    monkeypatch.setattr(mods["pem_addon.gas.build"], "MAX_CACHE_BYTES", 1000)
    before = data_fingerprint()
    with pytest.raises(RuntimeError, match=r"Gas box 'Cube': the cache of 40 particles over 10 frames would be"):
        bpy.ops.pem.gas_build()
    assert data_fingerprint() == before


def test_a_rebuild_replaces_the_gas_and_delete_takes_its_cache(mods, tmp_path):
    """Building again in the same box replaces its gas: one object, the same name, the old cache file gone;
    Delete Gas removes the object and its file."""
    bpy.ops.wm.read_homefile(use_empty=True)
    setup(periodic=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "rebuild.blend"))
    assert bpy.ops.pem.gas_build() == {"FINISHED"}
    first = the_gas()
    name, first_cache = first.name, bpy.path.abspath(first.modifiers["Gas Cache"].filepath)
    bpy.context.scene.pem_gas.seed = 8
    assert bpy.ops.pem.gas_build() == {"FINISHED"}
    obj = the_gas()                                            # exactly one gas object
    path = bpy.path.abspath(obj.modifiers["Gas Cache"].filepath)
    assert obj.name == name and obj["pem_gas"]["seed"] == 8
    assert os.path.exists(path) and not os.path.exists(first_cache)
    assert len([m for m in bpy.data.meshes if m.name.startswith("Cube Gas")]) == 1
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.pem.gas_delete() == {"FINISHED"}
    assert not [o for o in bpy.data.objects if "pem_gas" in o] and not os.path.exists(path)
    assert not bpy.ops.pem.gas_delete.poll()


def test_a_gas_built_before_the_first_save_moves_beside_the_blend(mods, tmp_path):
    """Built in an unsaved file, the cache sits in the temporary folder; saving the .blend moves it next to the
    file and plays it by a relative path, so the file and its cache go together; it still plays after reload."""
    bpy.ops.wm.read_homefile(use_empty=True)
    setup(periodic=True)
    assert bpy.ops.pem.gas_build() == {"FINISHED"}
    obj = the_gas()
    temp_path = obj.modifiers["Gas Cache"].filepath
    assert os.path.isabs(temp_path)
    before = evaluated_vertices(obj, FRAMES[0] + 3)
    blend = tmp_path / "later.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    path = obj.modifiers["Gas Cache"].filepath
    assert path.startswith("//later_") and obj["pem_gas"]["cache"] == path
    assert os.path.dirname(bpy.path.abspath(path)) == str(tmp_path) and not os.path.exists(temp_path)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    np.testing.assert_array_equal(evaluated_vertices(the_gas(), FRAMES[0] + 3), before)


@pytest.mark.parametrize("named", ["notes.txt", "elsewhere", "other_0123abcd.pc2", "fake_0123abcd.pc2"])
def test_delete_gas_leaves_a_file_it_did_not_write(mods, tmp_path, named, capfd):
    """The gas object's record names a file (editable, or so in any .blend): Delete Gas removes the object but
    leaves every file it did not write — another name, another folder, one its modifier does not play, not a
    PC2 cache — byte for byte, and says so."""
    bpy.ops.wm.read_homefile(use_empty=True)
    setup(periodic=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "user.blend"))
    assert bpy.ops.pem.gas_build() == {"FINISHED"}
    obj = the_gas()
    own = bpy.path.abspath(obj.modifiers["Gas Cache"].filepath)
    if named == "elsewhere":                     # a real cache of ours, copied out of the cache folder
        (tmp_path / "sub").mkdir()
        target = tmp_path / "sub" / os.path.basename(own)
        target.write_bytes(open(own, "rb").read())
    elif named == "other_0123abcd.pc2":          # a cache's name, in the folder, but not what the object plays
        target = tmp_path / named
        target.write_bytes(open(own, "rb").read())
    else:                                        # the user's notes, or a file named like a cache that is not one
        target = tmp_path / named
        target.write_bytes(b"the user's own bytes\n")
    if named == "fake_0123abcd.pc2":
        obj.modifiers["Gas Cache"].filepath = str(target)
    content = target.read_bytes()
    info = dict(obj["pem_gas"])
    info["cache"] = str(target)
    obj["pem_gas"] = info
    bpy.context.view_layer.objects.active = obj
    capfd.readouterr()
    assert bpy.ops.pem.gas_delete() == {"FINISHED"}
    assert target.read_bytes() == content
    assert f"Gas 'Cube Gas': its cache file {target} was left: " in capfd.readouterr().out
    assert not [o for o in bpy.data.objects if "pem_gas" in o]


def test_saving_never_overwrites_a_file_beside_the_blend(mods, tmp_path):
    """A file beside the .blend already has the name the cache would get (<blend>_<cache name>): saving leaves it
    byte for byte and moves the cache under a free name, which the object plays."""
    bpy.ops.wm.read_homefile(use_empty=True)
    setup(periodic=True)
    assert bpy.ops.pem.gas_build() == {"FINISHED"}
    obj = the_gas()
    temp_path = obj.modifiers["Gas Cache"].filepath
    cache_bytes = open(temp_path, "rb").read()
    taken = tmp_path / ("later_" + os.path.basename(temp_path))
    taken.write_bytes(b"the user's file\n")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "later.blend"))
    assert taken.read_bytes() == b"the user's file\n"
    path = bpy.path.abspath(obj.modifiers["Gas Cache"].filepath)
    assert os.path.dirname(path) == str(tmp_path) and path != str(taken)
    assert obj["pem_gas"]["cache"] == obj.modifiers["Gas Cache"].filepath
    assert open(path, "rb").read() == cache_bytes and not os.path.exists(temp_path)
