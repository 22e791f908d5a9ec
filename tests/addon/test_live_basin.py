"""The basin map on the floor (issue 47, item 3): the add-on's map is ``pem basin`` of the exported scene, cell for
cell (the command line run as its own process), shown as an image on a plane under the pendulum."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .conftest import ROOT  # noqa: E402
from .test_addon import pem  # noqa: E402, F401

GRID = 6
COLOURS = [(0.9, 0.1, 0.1, 1.0), (0.1, 0.8, 0.2, 1.0), (0.1, 0.2, 0.9, 1.0)]


@pytest.fixture
def basin(pem, ext):  # noqa: F811
    return importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.basin")


def three_magnets(pem, colours=COLOURS):  # noqa: F811
    """The demo's three-magnet pendulum, strongly damped, over 2 s (25 fps, dt 2 ms); each magnet its colour."""
    core = pem["pem_physics"].examples.three_magnet(friction=0.1, t_end=2.0, dt=2e-3)
    objs = pem["pem_addon.pendulum.importing"].build_objects(core, bpy.context)
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 25, 1, 51
    scene.pem.step_mode, scene.pem.dt, scene.pem.basin_grid = "DT", 2e-3, GRID
    magnets = [o for o in objs if o.pem.role == "FIXED"]
    for obj, colour in zip(magnets, colours):
        mat = bpy.data.materials.new(f"{obj.name} colour")
        mat.diffuse_color = colour
        obj.data.materials.clear()     # the import's own material first, if any
        obj.data.materials.append(mat)
    return objs, magnets


def pem_basin(scene_file, outdir, *options) -> dict:
    """``pem basin`` of a scene file, run as a user runs it (its own process); its basin.npz."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "pem_physics", "basin", str(scene_file), "--grid", str(GRID),
                           "-o", str(outdir), "-q", *options], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return dict(np.load(outdir / "basin.npz"))


def labels_of(img, colours) -> np.ndarray:
    """The label of each pixel of the map's image, read back by its colour (−1: the unsettled grey)."""
    n = img.size[0]
    px = np.empty(4 * n * n, np.float32)
    img.pixels.foreach_get(px)
    rgb = px.reshape(n, n, 4)[..., :3]
    out = np.full((n, n), -2)
    out[np.all(np.abs(rgb - 0.15) < 1e-6, axis=-1)] = -1
    for k, c in enumerate(colours):
        out[np.all(np.abs(rgb - np.asarray(c[:3], np.float32)) < 1e-6, axis=-1)] = k
    assert (out > -2).all(), "a pixel of no magnet's colour"
    return out


def test_the_map_is_pem_basin_of_the_exported_scene_cell_for_cell(pem, basin, tmp_path):  # noqa: F811
    objs, magnets = three_magnets(pem)
    bpy.context.scene.frame_end = 21            # 0.8 s of frames; the map runs its own Seconds
    bpy.context.scene.pem.basin_seconds = 2.0
    assert bpy.ops.pem.basin_map() == {"FINISHED"}
    img = bpy.data.images[basin.NAME]
    assert tuple(img.size) == (GRID, GRID)
    ours = labels_of(img, COLOURS)
    assert bpy.ops.pem.export_scene(filepath=str(tmp_path / "scene.toml")) == {"FINISHED"}
    theirs = pem_basin(tmp_path / "scene.toml", tmp_path / "basin", "--t-end", "2")
    # the command's labels are in its scene's order of fixed magnets: the exported file's, the same objects
    np.testing.assert_array_equal(ours, theirs["label"])
    assert len(set(ours.ravel())) > 1, "a map of one colour tests little: release points differ in where they rest"
    # the plane lies under the magnets and spans the grid's cells (BU = m here)
    plane = bpy.data.objects[basin.NAME]
    V = np.array([v.co for v in plane.data.vertices])
    half_cell = (theirs["x"][1] - theirs["x"][0]) / 2
    np.testing.assert_allclose([V[:, 0].min(), V[:, 0].max()], [theirs["x"][0] - half_cell,
                                                                 theirs["x"][-1] + half_cell], rtol=1e-6)
    assert V[:, 2].max() < min(o.matrix_world.translation.z for o in magnets)


def test_a_new_map_replaces_the_old_one(pem, basin):  # noqa: F811
    three_magnets(pem)
    bpy.context.scene.frame_end = 6          # 0.2 s: where they rest is not the question here
    bpy.context.scene.pem.basin_grid = 3
    assert bpy.ops.pem.basin_map() == {"FINISHED"}
    bpy.context.scene.pem.basin_grid = 2
    assert bpy.ops.pem.basin_map() == {"FINISHED"}
    assert [o.name for o in bpy.data.objects if o.name.startswith(basin.NAME)] == [basin.NAME]
    assert [i.name for i in bpy.data.images if i.name.startswith(basin.NAME)] == [basin.NAME]
    assert [m.name for m in bpy.data.meshes if m.name.startswith(basin.NAME)] == [basin.NAME]
    assert tuple(bpy.data.images[basin.NAME].size) == (2, 2)


def test_magnets_of_one_colour_get_the_maps_palette(pem, basin):  # noqa: F811
    _, magnets = three_magnets(pem, colours=[COLOURS[0]] * 3)
    np.testing.assert_array_equal(basin.colours(magnets), basin.core_basin.PALETTE[:3])


def test_a_scene_without_magnets_is_refused_by_name(pem):  # noqa: F811
    objs, magnets = three_magnets(pem)
    for obj in magnets:
        obj.pem.enabled = False
    with pytest.raises(RuntimeError, match="Basin map: .*fixed magnets"):
        bpy.ops.pem.basin_map()
    assert not bpy.data.images.get("PEM Basin Map")


def test_an_extent_beyond_the_bobs_reach_is_refused_in_the_panels_words(pem):  # noqa: F811
    three_magnets(pem)
    bpy.context.scene.pem.basin_extent = 1.0        # the bob's arm is 0.285 m
    with pytest.raises(RuntimeError, match="Basin map: Extent: .*lower Extent to at most") as err:
        bpy.ops.pem.basin_map()
    assert "--" not in str(err.value)
    assert not bpy.data.images.get("PEM Basin Map")


def test_a_map_over_a_day_is_refused_in_the_panels_words(pem):  # noqa: F811
    """64² release points of 10⁷ s at dt 2 ms: ~2·10¹³ body-steps, days at any engine's pace (≤ 4·10⁷ a second)."""
    three_magnets(pem)
    sp = bpy.context.scene.pem
    sp.basin_grid, sp.basin_seconds = 64, 1e7
    with pytest.raises(RuntimeError, match=r"Basin map: 64 × 64 release points of 1e\+07 s each at dt = 0\.002 s "
                                           r"would take ~[\d.,]+ (days|years) \(an estimate.*\): lower Grid, shorten "
                                           r"Seconds, or raise the time step dt \(Scene ▸ Magnetic Pendulum\)$") as err:
        bpy.ops.pem.basin_map()
    assert "--" not in str(err.value)                 # no command-line option: --t-end, --dt, --force
    assert not bpy.data.images.get("PEM Basin Map")


def test_a_map_over_a_day_of_the_frame_range_names_the_frame_range(pem):  # noqa: F811
    """Seconds 0 runs the frame range (2000 s): 4096² points of 5·10⁵ steps, ~8·10¹² body-steps, over a day at any
    engine's pace."""
    three_magnets(pem)
    scene = bpy.context.scene
    scene.frame_end = 50_001
    scene.pem.step_mode, scene.pem.substeps = "SUBSTEPS", 10
    scene.pem.basin_grid = 4096
    with pytest.raises(RuntimeError, match=r"Basin map: 4096 × 4096 release points of 2000 s each at dt = 0\.004 s "
                                           r"would take .*: lower Grid, set Seconds \(0 runs the whole frame range\) "
                                           r"or shorten the frame range, or use fewer substeps per frame \(Scene ▸ "
                                           r"Magnetic Pendulum\)$") as err:
        bpy.ops.pem.basin_map()
    assert "--" not in str(err.value)


def test_a_map_too_large_for_the_memory_is_refused_in_the_panels_words(pem, basin, monkeypatch):  # noqa: F811
    """The core's memory bound (half of what the process may take, here said to be 64 MiB) names Grid, and no
    option the panel lacks (--chunk)."""
    three_magnets(pem)
    bpy.context.scene.pem.basin_grid = 4096                # ~0.7 GB of cells
    monkeypatch.setattr(basin.budget, "available_bytes", lambda: 64 * 2**20)
    with pytest.raises(RuntimeError, match=r"Basin map: Grid: a 4,096 × 4,096 basin map would need .*: lower "
                                           r"Grid$") as err:
        bpy.ops.pem.basin_map()
    assert "--" not in str(err.value)
