"""Headless demo (the README's main job): build, compute, bake, save .blend files, render previews, plot — on the
extension as a user has it: its zip built (or reused) for this Blender, installed into a fresh user folder with
Blender's own installer, enabled, and every scene baked on it (its numba wheels, its kernels built ahead of time).

Run with the bpy wheel's Python, in a venv without numba (scripts/demo.sh does that):

    python scripts/demo.py [OUTDIR]        # default out/demo

1. Three-magnet pendulum (pem_physics.examples.three_magnet, with friction): imported into Blender
   as objects with pivots and dipoles, played live (Simulate on Playback, nothing baked: the bob's pose at every
   frame, compared with the bake's), baked (Bake), saved, rendered (Cycles CPU). Then, with more friction, its
   ghost path (Ghost Path to Curve) and its basin map (Basin Map) under it, rendered from above.
2. T-handle (Dzhanibekov): a T-shaped mesh whose inertia is computed from the mesh triangles in
   Blender, spun about its middle axis, baked, saved, rendered.
3. Hard-sphere gas: 500 spheres in a box (Build Hard-Sphere Gas: a PC2 point cache on a point mesh,
   spheres instanced by Geometry Nodes), saved with its cache beside it, three frames rendered.
4. Newton's cradle: five balls on strings (hinged pendulums with contact spheres), baked with keys at the
   impacts, saved, three frames rendered (released, just after the strike, ball 5 at its far swing).
5. Kapitza's pendulum: a bob on a rod standing upright on a pivot Empty that a driver shakes up and down at
   30 Hz (a²ω² = 3.6 × 2gl): the bake follows the animated pivot and the bob stays up; rendered.
6. A magnetic gear: a magnet keyed to spin (Motion: Animation) turns a compass magnet above it in step,
   lagging by arcsin(cΩ/K); rendered.
7. A tippe top with a stem on a table (Contacts: Rolling and Sliding, two contact spheres, the table's friction
   Gliding): spun above the literature's threshold, friction turns it over onto its stem, on which it spins, the
   ball lifted; rendered (upright, tipping, on its stem).
8. A coin rolling on its rim in a steady circle (the closed form's spin, lean and speed typed in the panel);
   rendered.
Also writes the energy plots (matplotlib) and prints a summary.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Keep Blender's user profile out of it (no preferences or extensions are written).
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="pem-demo-user-"))

import warnings  # noqa: E402

import bpy  # noqa: E402
import numpy as np  # noqa: E402

# A deprecated Blender API called from this script or the add-on is an error (Blender's own and other
# packages' deprecations stay warnings).
warnings.filterwarnings("error", category=DeprecationWarning,
                        module=r"(__main__|bl_ext\.[^.]+\.pem_physics_pendulum)(\.|$)")

#: Where the demo's time went (seconds), printed as a table at the end: scripts/demo.sh passes the venv's.
TIMES = {"venv": float(os.environ.get("PEM_DEMO_VENV_S", "nan"))}
#: The installed extension's package name (``bl_ext.user_default.<id>``), once installed.
EXT_PACKAGE = ""


def _extension_script():
    spec = importlib.util.spec_from_file_location("pem_extension_script", ROOT / "scripts" / "extension.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def install_extension(outdir: Path):
    """Build this machine's zip (scripts/extension.py: the kernels ahead of time for this Blender's Python, reused
    from the machine's store when it has them), install it into the fresh user folder with Blender's installer,
    enabled, as a user does; returns the installed package (``bl_ext.user_default.<id>``)."""
    ext_script = _extension_script()
    t0 = time.perf_counter()
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    with tempfile.TemporaryDirectory(prefix="pem-demo-zip-") as tmp:   # every platform's zip: ~400 MB, not kept
        zips = ext_script.build(Path(tmp), log=lambda *a: print(*a, flush=True), pythons=[python])
        (zip_path,) = [z for z in zips if z.stem.endswith(ext_script.host_platform().replace("-", "_"))]
        TIMES["zip (kernels + blender_ext build)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = bpy.ops.extensions.package_install_files(filepath=str(zip_path), repo="user_default",
                                                          enable_on_install=True)
        if result != {"FINISHED"}:
            raise SystemExit(f"installing {zip_path.name} failed: {result}")
        size_mb = zip_path.stat().st_size / 1e6
    pkg = ext_script.manifest()["id"]
    ext = importlib.import_module(f"bl_ext.user_default.{pkg}")
    global EXT_PACKAGE
    EXT_PACKAGE = ext.__name__
    TIMES["install + enable"] = time.perf_counter() - t0
    print(f"installed {zip_path.name} ({size_mb:.0f} MB) into {ext.__path__[0]}", flush=True)
    return ext


def new_scene():
    """An empty file with the preferences kept (factory settings would disable an installed extension; the
    user folder is a fresh temporary one, so there is no startup file of anyone's to load)."""
    bpy.ops.wm.read_homefile(use_empty=True)


def material(name, rgba, metallic=0.0, roughness=0.4):
    mat = bpy.data.materials.new(name)
    if mat.node_tree is None:   # Blender 4.x; from 5.0 every material has its node tree (use_nodes deprecated)
        mat.use_nodes = True
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = rgba
    bsdf.inputs["Metallic"].default_value = metallic
    bsdf.inputs["Roughness"].default_value = roughness
    mat.diffuse_color = rgba
    return mat


def set_material(obj, mat, smooth=True):
    obj.data.materials.clear()
    obj.data.materials.append(mat)
    for poly in obj.data.polygons:
        poly.use_smooth = smooth


def stage(target, distance, elevation_deg, azimuth_deg, lens=50, ground_z=0.0, size=2.0):
    """Camera looking at target, a sun and an area light, a ground plane, a soft world."""
    scene = bpy.context.scene
    target = np.asarray(target, float)
    el, az = math.radians(elevation_deg), math.radians(azimuth_deg)
    pos = target + distance * np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    cam_data = bpy.data.cameras.new("Camera")
    cam_data.lens = lens
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    cam.location = pos
    direction = target - pos
    cam.rotation_euler = _look_rotation(direction)
    scene.camera = cam
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.data.energy = 3.0
    sun.rotation_euler = (math.radians(40), math.radians(10), math.radians(30))
    scene.collection.objects.link(sun)
    area = bpy.data.objects.new("Fill", bpy.data.lights.new("Fill", "AREA"))
    area.data.energy = 30.0 * size**2
    area.data.size = size
    area.location = target + np.array([-size, -size, 1.5 * size])
    area.rotation_euler = _look_rotation(target - np.asarray(area.location))
    scene.collection.objects.link(area)
    bpy.ops.mesh.primitive_plane_add(size=10 * size, location=(target[0], target[1], ground_z))
    ground = bpy.context.object
    ground.name = "Ground"
    set_material(ground, material("Ground", (0.82, 0.8, 0.76, 1.0), roughness=0.8))
    world = bpy.data.worlds.new("World")
    scene.world = world
    if world.node_tree is None:   # Blender 4.x, as for materials
        world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.55, 0.62, 0.72, 1.0)
    world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.6


def _look_rotation(direction):
    import mathutils

    return mathutils.Vector(tuple(direction)).to_track_quat("-Z", "Y").to_euler()


def render_settings(samples=16, res=(480, 360)):
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
    scene.render.resolution_x, scene.render.resolution_y = res
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.render.film_transparent = False


def render_frames(outdir: Path, stem: str, frames, follow=None):
    """Render ``frames`` to outdir/<stem>_frameNNNN.png; ``follow`` an object the camera keeps in view (moved
    with the object's x and y, looking the same way)."""
    scene = bpy.context.scene
    paths = []
    t0 = time.perf_counter()
    cam = scene.camera
    if follow is not None:
        scene.frame_set(frames[0])
        offset = np.array(cam.location) - np.array(follow.matrix_world.translation) * [1.0, 1.0, 0.0]
    for f in frames:
        scene.frame_set(f)
        if follow is not None:
            cam.location = np.array(follow.matrix_world.translation) * [1.0, 1.0, 0.0] + offset
        path = outdir / f"{stem}_frame{f:04d}.png"
        scene.render.filepath = str(path)
        bpy.ops.render.render(write_still=True)
        paths.append(path)
    TIMES[f"renders: {stem}"] = TIMES.get(f"renders: {stem}", 0.0) + time.perf_counter() - t0
    return paths


def time_table(summary: dict) -> str:
    """Where the demo's time went: the venv, the zip, the install, each bake, each scene's renders."""
    rows = [(k, v) for k, v in TIMES.items() if not k.startswith("renders")]
    for name, res in summary.items():
        if isinstance(res, dict):
            bake = res.get("bake_wall_s", res.get("build_wall_s"))
            if bake is not None:
                rows.append((f"bake: {name}", float(bake)))
    rows += [(k, v) for k, v in TIMES.items() if k.startswith("renders")]
    width = max(len(k) for k, _ in rows)
    lines = [f"{'step':<{width}}  seconds", f"{'-' * width}  -------"]
    lines += [f"{k:<{width}}  {v:7.1f}" for k, v in rows]
    lines.append(f"{'demo.py in all':<{width}}  {summary['total_wall_s']:7.1f}")
    return "\n".join(lines)


def plot_energy(scene, path: Path, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = scene["pem_diagnostics"]
    t = np.array(d["t"])
    total = np.array(d["total"])
    kinetic = np.array(d["kinetic"])
    potential = np.array(d["gravity"]) + np.array(d["field"]) + np.array(d["dipole"])
    fig, (a, b) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    a.plot(t, kinetic, label="kinetic")
    a.plot(t, potential, label="gravity + field + dipole")
    a.plot(t, total, "k", label="total")
    a.set_ylabel("energy (J)")
    a.legend(fontsize=8)
    a.set_title(title)
    scale = max(np.abs(total).max(), np.abs(kinetic).max())
    work = np.array(d.get("friction_work", np.zeros_like(total)))
    b.plot(t, (total - total[0]) / scale, "C1", label="E − E₀ (friction loss included)")
    b.plot(t, (total + work - total[0]) / scale, "g", label="E + friction work − E₀ (integration error)")
    b.set_ylabel("relative to max|E|")
    b.legend(fontsize=8)
    b.set_xlabel("t (s)")
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


def save_blend(path: Path):
    tmp = path.with_name(path.stem + ".tmp.blend")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp), copy=True)
    os.replace(tmp, path)


def _support_bar(pivot):
    """A horizontal bar the pendulum hangs from (decoration only; not a PEM body)."""
    bpy.ops.mesh.primitive_cylinder_add(radius=0.004, depth=0.16, location=pivot, rotation=(0.0, math.pi / 2, 0.0))
    bar = bpy.context.object
    bar.name = "Support"
    return bar


def build_three_magnet(ext, friction=2e-3) -> list:
    """The three-magnet pendulum's objects in a new empty scene (pivot friction N·m·s), mass properties computed;
    not baked. ``ext`` is the extension's root package (this checkout imported as one, or the installed extension)."""
    examples = importlib.import_module(f"{ext.__name__}.pem_physics.examples")
    importing = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.importing")
    new_scene()
    scene = bpy.context.scene
    scene.render.fps = 25
    core = examples.three_magnet(friction=friction, t_end=8.0, dt=1e-3)
    objs = importing.build_objects(core, bpy.context)
    scene.frame_start, scene.frame_end = 1, 1 + 8 * 25
    scene.pem.step_mode, scene.pem.dt = "DT", 1e-3
    scene.pem.show_field_lines = True
    bob_mat = material("Bob", (0.75, 0.18, 0.12, 1.0), metallic=0.6, roughness=0.25)
    mag_mat = material("Magnet", (0.12, 0.2, 0.65, 1.0), metallic=0.3, roughness=0.35)
    for o in objs:
        set_material(o, bob_mat if o.pem.role == "PENDULUM" else mag_mat)
    for o in objs:  # exact mass properties shown in the panel, as a user would press the button
        bpy.context.view_layer.objects.active = o
        if o.pem.role == "PENDULUM":
            bpy.ops.pem.compute_mass_properties()
    return objs


def play_live(ext, obj) -> tuple[list, float]:
    """*Simulate on Playback*: the scene played from its first frame to its last, nothing baked; (obj's world
    matrices at each frame, wall seconds of the play)."""
    live = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.live")
    scene = bpy.context.scene
    scene.pem.live_playback = True
    t0 = time.perf_counter()
    assert live.prepare(bpy.context), live.error()
    poses = []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        poses.append(np.array(obj.matrix_world))
    wall = time.perf_counter() - t0
    scene.pem.live_playback = False
    scene.frame_set(scene.frame_start)
    return poses, wall


def three_magnet(ext, outdir: Path) -> dict:
    objs = build_three_magnet(ext)
    scene = bpy.context.scene
    bob = next(o for o in objs if o.pem.role == "PENDULUM")
    live_poses, live_s = play_live(ext, bob)
    t0 = time.perf_counter()
    bpy.ops.pem.simulate_bake()
    bake_s = time.perf_counter() - t0
    fps = scene.render.fps / scene.render.fps_base
    baked = []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        baked.append(np.array(bob.matrix_world))
    live_vs_bake = float(np.max(np.abs(np.array(live_poses) - np.array(baked))))
    # both single precision (the bake's keys, the live deltas): a few float32 ulps apart, never more
    assert live_vs_bake <= 8 * np.finfo(np.float32).eps, f"live playback differs from the bake by {live_vs_bake}"
    TIMES["three-magnet live playback"] = live_s
    support = _support_bar(pivot=(0.0, 0.0, 0.3))
    set_material(support, material("Steel", (0.3, 0.3, 0.32, 1.0), metallic=0.8, roughness=0.35))
    stage(target=(0.0, 0.0, 0.13), distance=0.62, elevation_deg=18, azimuth_deg=-65, lens=40, ground_z=-0.012,
          size=0.5)
    render_settings()
    save_blend(outdir / "three_magnet.blend")
    frames = render_frames(outdir, "three_magnet", [1, 26, 101, scene.frame_end])
    plot_energy(scene, outdir / "three_magnet_energy.png", "Three-magnet pendulum (friction 2e-3 N·m·s)")
    sp = scene.pem
    scene.frame_set(scene.frame_end)
    magnet_end = bob.matrix_world @ bob.pem.dipoles[0].position
    nearest = min((o for o in objs if o.pem.role == "FIXED"),
                  key=lambda o: (o.matrix_world.translation.xy - magnet_end.xy).length)
    played = (scene.frame_end - scene.frame_start) / fps
    return {"live_playback": {"frames": len(live_poses), "wall_s": round(live_s, 3),
                              "real_time_over_wall": round(played / live_s, 1),
                              "max_difference_from_the_bake": live_vs_bake},
            "bake_wall_s": round(bake_s, 2), "simulation_wall_s": round(sp.last_wall_time, 3),
            "engine": sp.last_engine, "status": sp.status, "steps": sp.last_steps, "method": sp.last_method,
            "energy_drift_relative": sp.last_energy_drift, "renders": [p.name for p in frames],
            "bob_magnet_at_end_xy": [round(x, 4) for x in magnet_end.xy],
            "nearest_fixed_magnet": nearest.name}


def three_magnet_map(ext, outdir: Path) -> dict:
    """The same pendulum with 7.5 times the friction, so that a release point comes to rest within seconds: its
    ghost path (the next 5 s from the start pose) made into a curve, and the basin map (which magnet the bob ends
    over, for every release point of a 48² grid over 10 s) on a plane under it; one frame rendered from above."""
    objs = build_three_magnet(ext, friction=1.5e-2)
    scene = bpy.context.scene
    sp = scene.pem
    sp.show_ghost_path, sp.ghost_seconds = True, 5.0
    t0 = time.perf_counter()
    bpy.ops.pem.ghost_path_to_curve()
    TIMES["three-magnet ghost path"] = time.perf_counter() - t0
    sp.basin_grid, sp.basin_seconds = 48, 10.0
    t0 = time.perf_counter()
    bpy.ops.pem.basin_map()
    TIMES["three-magnet basin map 48²"] = time.perf_counter() - t0
    plane = bpy.data.objects["PEM Basin Map"]
    corners = np.array([plane.matrix_world @ v.co for v in plane.data.vertices])
    pixels = np.array(plane.active_material.node_tree.nodes["Image Texture"].image.pixels[:]).reshape(48, 48, 4)
    grey = np.all(np.abs(pixels[..., :3] - 0.15) < 1e-6, axis=-1)
    support = _support_bar(pivot=(0.0, 0.0, 0.3))
    set_material(support, material("Steel", (0.3, 0.3, 0.32, 1.0), metallic=0.8, roughness=0.35))
    width = float(np.ptp(corners[:, 0]))
    stage(target=(0.0, 0.0, float(corners[0, 2])), distance=2.1 * width, elevation_deg=62, azimuth_deg=-80, lens=40,
          ground_z=float(corners[0, 2]) - 0.002, size=width)
    render_settings()
    save_blend(outdir / "three_magnet_map.blend")
    frames = render_frames(outdir, "three_magnet_map", [1])
    curve = next(o for o in bpy.data.collections["PEM Ghost Paths"].objects)
    return {"ghost_path_points": len(curve.data.splines[0].points), "ghost_seconds": sp.ghost_seconds,
            "basin_grid": 48, "basin_seconds": sp.basin_seconds, "basin_width_m": round(width, 4),
            "at_rest_share": round(float(1.0 - grey.mean()), 3), "magnets": len([o for o in objs
                                                                                  if o.pem.role == "FIXED"]),
            "renders": [p.name for p in frames]}


def t_handle(ext, outdir: Path) -> dict:
    examples = importlib.import_module(f"{ext.__name__}.pem_physics.examples")
    importing = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.importing")
    model = importlib.import_module(f"{ext.__name__}.pem_physics.model")
    new_scene()
    scene = bpy.context.scene
    scene.render.fps = 25
    core = examples.t_handle_mesh(t_end=10.0)
    shapes_only = model.Scene(bodies=[b for b in core.bodies], gravity=(0, 0, 0), settings=core.settings)
    (obj,) = importing.build_objects(shapes_only, bpy.context)
    obj.location = (0.0, 0.0, 0.06)
    # Inertia from the mesh itself, computed in Blender (two box shells, aluminium).
    p = obj.pem
    p.inertia_source, p.mass_mode, p.density = "MESH", "DENSITY", 2700.0
    bpy.context.view_layer.objects.active = obj
    bpy.ops.pem.compute_mass_properties()
    scene.frame_start, scene.frame_end = 1, 1 + 10 * 25
    scene.pem.use_scene_gravity = False
    scene.pem.gravity = (0.0, 0.0, 0.0)
    scene.pem.step_mode, scene.pem.substeps = "SUBSTEPS", 40
    set_material(obj, material("Anodised", (0.15, 0.35, 0.7, 1.0), metallic=0.7, roughness=0.35), smooth=False)
    bpy.ops.pem.simulate_bake()
    stage(target=(0.0, 0.0, 0.05), distance=0.3, elevation_deg=25, azimuth_deg=-70, lens=50, ground_z=-0.01,
          size=0.2)
    render_settings()
    save_blend(outdir / "t_handle.blend")
    frames = render_frames(outdir, "t_handle", [1, 40, 80, 120])
    plot_energy(scene, outdir / "t_handle_energy.png", "T-handle (free, no gravity): energy")
    sp = scene.pem
    return {"mass_kg": p.computed_mass, "principal_moments": list(p.computed_moments), "steps": sp.last_steps,
            "method": sp.last_method, "energy_drift_relative": sp.last_energy_drift,
            "renders": [f.name for f in frames]}


def hard_sphere_gas(ext, outdir: Path) -> dict:
    """500 hard spheres between the walls of a 2 m cube (η = 0.2), played from a PC2 point cache."""
    gas_objects = importlib.import_module(f"{ext.__name__}.pem_addon.gas.objects")
    new_scene()
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = 1, 25
    for old in outdir.glob("gas_*.pc2"):   # each build writes a fresh cache; keep only this run's
        old.unlink()
    bpy.ops.wm.save_as_mainfile(filepath=str(outdir / "gas.blend"))   # so that the cache goes next to it
    bpy.ops.mesh.primitive_cube_add(size=2.0, location=(0.0, 0.0, 1.0))
    box = bpy.context.object
    box.name = "Box"
    t0 = time.perf_counter()
    bpy.ops.pem.gas_build(box=box.name, n=500, packing_fraction=0.2, temperature=1.0, seed=1, periodic=False)
    build_s = time.perf_counter() - t0
    obj = bpy.context.object
    gas_objects.set_material(obj, material("Spheres", (0.8, 0.22, 0.05, 1.0), roughness=0.35))
    box.modifiers.new("Edges", "WIREFRAME").thickness = 0.02   # the box drawn as its edges
    set_material(box, material("Frame", (0.1, 0.1, 0.12, 1.0), metallic=0.5), smooth=False)
    stage(target=(0.0, 0.0, 0.9), distance=6.5, elevation_deg=22, azimuth_deg=-60, lens=45, ground_z=-0.01,
          size=2.0)
    render_settings(samples=8, res=(400, 300))
    scene.cycles.max_bounces = 3   # 500 glossy spheres: deep bounces cost time and add little at this size
    save_blend(outdir / "gas.blend")
    frames = render_frames(outdir, "gas", [1, 13, 25])
    info = obj["pem_gas"]
    return {"n": info["n"], "packing_fraction": round(info["packing_fraction"], 4), "radius": round(info["radius"], 4),
            "collisions": info["collisions"], "engine": info["engine"], "build_wall_s": round(build_s, 2),
            "cache": info["cache"], "renders": [p.name for p in frames]}


def build_newtons_cradle() -> list:
    """Five steel balls on V-strings from a frame, each a hinged pendulum with one contact sphere (fitted to its
    mesh), the first raised by 30°, in a new empty scene; returns the balls, not baked."""
    import mathutils

    new_scene()
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = 1, 1 + 36   # 1.5 s: the strike, ball 5 out and back
    scene.pem.substeps = 40
    r, length, top = 1.0 / 64, 0.25, 0.35   # dyadic sizes: balls placed touching are exact in single precision
    steel = material("Steel", (0.8, 0.8, 0.82, 1.0), metallic=0.85, roughness=0.3)
    string = material("String", (0.05, 0.05, 0.05, 1.0), roughness=0.8)
    frame_mat = material("Frame", (0.12, 0.12, 0.13, 1.0), metallic=0.6, roughness=0.3)
    half_y, span = 0.08, (-0.17, 0.3)
    for y in (-half_y, half_y):   # the frame: two top bars on four posts
        bpy.ops.mesh.primitive_cylinder_add(radius=0.004, depth=span[1] - span[0], rotation=(0.0, math.pi / 2, 0.0),
                                            location=(sum(span) / 2, y, top))
        set_material(bpy.context.object, frame_mat)
        for x in span:
            bpy.ops.mesh.primitive_cylinder_add(radius=0.004, depth=top, location=(x, y, top / 2))
            set_material(bpy.context.object, frame_mat)
    balls = []
    for k in range(5):
        pivot = bpy.data.objects.new(f"Pivot.{k + 1:03d}", None)
        scene.collection.objects.link(pivot)
        pivot.location = (2 * r * k, 0.0, top)
        angle = math.radians(30.0) if k == 0 else 0.0
        bpy.ops.mesh.primitive_uv_sphere_add(radius=r, segments=32, ring_count=16)
        ball = bpy.context.object
        ball.name = f"Ball.{k + 1:03d}"
        ball.location = (2 * r * k - length * math.sin(angle), 0.0, top - length * math.cos(angle))
        ball.rotation_euler = (0.0, angle, 0.0)
        set_material(ball, steel)
        p = ball.pem
        p.enabled, p.pivot_object, p.use_hinge, p.hinge_axis = True, pivot, True, (0.0, 1.0, 0.0)
        p.mass_mode, p.density, p.include_children = "DENSITY", 7850.0, False   # massless strings
        bpy.context.view_layer.objects.active = ball
        bpy.ops.pem.contact_add()   # one contact sphere, fitted to the ball's mesh
        for y in (-half_y, half_y):   # a V of strings from the bars to the ball: children, so they swing with it
            v = np.array([0.0, y, length])   # bar point, in the ball's (unrotated) coordinates
            mid, n = v / 2, np.linalg.norm(v)
            bpy.ops.mesh.primitive_cylinder_add(radius=0.0006, depth=n, location=tuple(mid))
            s = bpy.context.object
            s.rotation_mode = "QUATERNION"
            s.rotation_quaternion = mathutils.Vector((0, 0, 1)).rotation_difference(mathutils.Vector(tuple(v / n)))
            set_material(s, string)
            s.parent = ball
            s.matrix_parent_inverse.identity()
        balls.append(ball)
    bpy.context.view_layer.update()
    return balls


def newtons_cradle(outdir: Path) -> dict:
    """The cradle baked (one in, one out; keys at the impact instants keep the strike sharp) and rendered."""
    balls = build_newtons_cradle()
    scene = bpy.context.scene
    t0 = time.perf_counter()
    bpy.ops.pem.simulate_bake()
    bake_s = time.perf_counter() - t0
    # frames: before the impact (released), just after it, ball 5 at its farthest swing
    angles = []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        d = [np.array(b.matrix_world.translation) - np.array(b.pem.pivot_object.location) for b in balls]
        angles.append([math.degrees(math.atan2(x[0], -x[2])) for x in d])
    angles = np.array(angles)
    hit = int(np.argmax(angles[:, 4] > 1e-3))
    far = hit + int(np.argmax(angles[hit:hit + 20, 4]))
    frames = [scene.frame_start + hit - 2, scene.frame_start + hit, scene.frame_start + far]
    stage(target=(0.065, 0.0, 0.16), distance=0.72, elevation_deg=12, azimuth_deg=-90, lens=45, ground_z=0.0,
          size=0.6)
    render_settings()
    save_blend(outdir / "newtons_cradle.blend")
    paths = render_frames(outdir, "newtons_cradle", frames)
    sp = scene.pem
    return {"bake_wall_s": round(bake_s, 2), "status": sp.status, "steps": sp.last_steps,
            "frames": frames, "swing_deg_at_frames": [[round(a, 2) for a in angles[f - scene.frame_start]]
                                                      for f in frames],
            "renders": [p.name for p in paths]}


def build_kapitza() -> tuple:
    """A bob (sphere, 2 cm) on a light rod standing on a pivot Empty whose height a driver sets,
    z = a·cos(2π·30 Hz·t), a = 2 cm (frame 1 is t = 0); returns (bob, pivot), not baked."""
    new_scene()
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = 1, 1 + 36     # 1.5 s
    sp = scene.pem
    sp.substeps, sp.motion_samples = 160, 25           # 20 samples a shake, ω·dt = 0.05
    pivot = bpy.data.objects.new("Shaker", None)
    scene.collection.objects.link(pivot)
    pivot.empty_display_type, pivot.empty_display_size = "PLAIN_AXES", 0.03
    fc = pivot.driver_add("location", 2)
    fc.driver.expression = "0.02*cos(2*pi*30*(frame-1)/24)"   # a simple expression: no Python scripts needed
    tilt, length = math.radians(6.0), 0.2
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.02, segments=32, ring_count=16,
                                         location=(0.0, -length * math.sin(tilt), 0.02 + length * math.cos(tilt)))
    bob = bpy.context.object
    bob.name = "Bob"
    set_material(bob, material("Bob", (0.75, 0.2, 0.15, 1.0), metallic=0.3, roughness=0.35))
    bpy.ops.mesh.primitive_cylinder_add(radius=0.002, depth=length, location=(0.0, 0.0, -length / 2),
                                        rotation=(0.0, 0.0, 0.0))
    rod = bpy.context.object
    rod.name = "Rod"
    set_material(rod, material("Rod", (0.1, 0.1, 0.1, 1.0), metallic=0.6))
    rod.parent = bob                                      # it swings with the bob (its mass: none, a light rod)
    rod.rotation_euler = (tilt, 0.0, 0.0)
    rod.location = (0.0, length * math.sin(tilt) / 2, -length * math.cos(tilt) / 2)
    p = bob.pem
    p.enabled, p.pivot_object, p.use_hinge, p.hinge_axis = True, pivot, True, (1.0, 0.0, 0.0)
    p.mass_mode, p.density, p.include_children = "DENSITY", 7850.0, False
    bpy.context.view_layer.update()
    return bob, pivot


def kapitza(outdir: Path) -> dict:
    bob, pivot = build_kapitza()
    scene = bpy.context.scene
    t0 = time.perf_counter()
    bpy.ops.pem.simulate_bake()
    bake_s = time.perf_counter() - t0
    tilts = []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        d = np.array(bob.matrix_world.translation) - np.array(pivot.matrix_world.translation)
        tilts.append(math.degrees(math.atan2(math.hypot(d[0], d[1]), d[2])))
    stage(target=(0.0, 0.0, 0.12), distance=0.6, elevation_deg=8, azimuth_deg=-90, lens=50, ground_z=-0.08,
          size=0.6)
    render_settings()
    save_blend(outdir / "kapitza.blend")
    paths = render_frames(outdir, "kapitza", [1, 19, 37])
    sp = scene.pem
    return {"bake_wall_s": round(bake_s, 2), "status": sp.status, "steps": sp.last_steps,
            "energy_balance": sp.last_energy_error, "max_tilt_deg": round(max(tilts), 2),
            "stays_upright": bool(max(tilts) < 12.0), "renders": [p.name for p in paths]}


def build_gear() -> tuple:
    """A bar magnet keyed to spin about z at Ω = 11.1 rad/s (linear keys, Motion: Animation) and a compass magnet
    hinged about z 3 cm above it, pivot friction c = 2e-5 N·m·s; returns (driver, follower), not baked."""
    new_scene()
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = 1, 1 + 36
    sp = scene.pem
    sp.substeps, sp.friction, sp.use_scene_gravity = 96, 2e-5, True
    red, blue = material("North", (0.8, 0.15, 0.1, 1.0)), material("South", (0.1, 0.25, 0.8, 1.0))
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 0.0))
    driver = bpy.context.object
    driver.name, driver.scale = "Rotor", (0.03, 0.008, 0.008)
    set_material(driver, red, smooth=False)
    rate = 0.6 * 1e-7 * 0.5 * 0.2 / 0.03 ** 3 / 2e-5    # 0.6 of the pull-out rate K/c
    for frame in (1, 1 + 36):
        driver.rotation_euler.z = rate * (frame - 1) / 24
        driver.keyframe_insert("rotation_euler", index=2, frame=frame)
    keyframes = importlib.import_module(f"{EXT_PACKAGE}.pem_addon.keyframes")
    for fcurves in keyframes.action_fcurve_collections(driver.animation_data.action):
        for fcu in fcurves:
            for k in fcu.keyframe_points:
                k.interpolation = "LINEAR"
    p = driver.pem
    p.enabled, p.role, p.motion = True, "DRIVEN", "ANIMATION"
    m = p.dipoles.add()
    m.position, m.moment = (0.0, 0.0, 0.0), (0.5, 0.0, 0.0)
    pivot = bpy.data.objects.new("Axle", None)
    scene.collection.objects.link(pivot)
    pivot.location = (0.0, 0.0, 0.03)
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 0.03))
    follower = bpy.context.object
    follower.name, follower.scale = "Needle", (0.02, 0.003, 0.003)
    follower.rotation_euler.z = math.pi                    # antiparallel to the rotor: their resting pose
    set_material(follower, blue, smooth=False)
    p = follower.pem
    p.enabled, p.pivot_object, p.use_hinge, p.hinge_axis = True, pivot, True, (0.0, 0.0, 1.0)
    p.mass_mode, p.density = "DENSITY", 7500.0
    d = p.dipoles.add()
    d.position, d.moment = (0.0, 0.0, 0.0), (0.2, 0.0, 0.0)   # A·m² along the needle (its object x axis)
    bpy.context.view_layer.update()
    return driver, follower, rate


def gear(outdir: Path) -> dict:
    driver, follower, rate = build_gear()
    scene = bpy.context.scene
    t0 = time.perf_counter()
    bpy.ops.pem.simulate_bake()
    bake_s = time.perf_counter() - t0
    lag = []
    for f in range(scene.frame_start + 24, scene.frame_end + 1):   # after it has settled
        scene.frame_set(f)
        a = driver.matrix_world.to_euler().z
        b = follower.matrix_world.to_euler().z
        lag.append((a + math.pi - b + math.pi) % (2 * math.pi) - math.pi)
    K = 1e-7 * 0.5 * 0.2 / 0.03 ** 3
    stage(target=(0.0, 0.0, 0.015), distance=0.12, elevation_deg=35, azimuth_deg=-60, lens=50, ground_z=-0.02,
          size=0.3)
    render_settings()
    save_blend(outdir / "magnetic_gear.blend")
    paths = render_frames(outdir, "magnetic_gear", [1, 13, 25])
    sp = scene.pem
    return {"bake_wall_s": round(bake_s, 2), "status": sp.status, "rate_rad_s": round(rate, 3),
            "lag_rad": round(float(np.mean(lag)), 5), "lag_closed_form_rad": round(math.asin(2e-5 * rate / K), 5),
            "renders": [p.name for p in paths]}


def _table(mu: float, law: str, size: float = 0.6):
    """A plane Wall at z = 0 (the table) with its own friction (Coulomb's μ, or the gliding law's μ in s/m) and
    a wooden look; the body on it sets none, so the table's applies."""
    bpy.ops.mesh.primitive_plane_add(size=size, location=(0.0, 0.0, 0.0))
    table = bpy.context.object
    table.name = "Table"
    set_material(table, material("Wood", (0.55, 0.36, 0.2, 1.0), roughness=0.6), smooth=False)
    w = table.pem
    w.enabled, w.role, w.wall_shape = True, "WALL", "PLANE"
    w.friction_law = law
    if law == "VISCOUS":
        w.gliding_friction = mu
    else:
        w.use_contact_friction, w.contact_friction = True, mu
    return table


def build_tippe_top() -> tuple:
    """The literature's tippe top: a ball (R = 2 cm, 15 g) whose centre of mass lies 0.3R below its centre
    (Mass Properties: Manual, I₁ = 0.95 I₃) with a stem on its axis (a second contact sphere of 0.15R at its tip,
    1.15R from the ball's centre), the stem's half painted red, tilted 0.1 rad and spun at 5× the inversion
    threshold of Rauch-Wojciechowski & Rutstam (SIGMA 10, 017, 2014) on a table with gliding friction
    (μ = 0.3 s/m): it turns over, lands its stem and rises on it; returns (top, spin), not baked."""
    import bmesh
    from mathutils import Matrix

    new_scene()
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = 1, 1 + 10 * 24               # 10 s
    sp = scene.pem
    sp.substeps, sp.contact_model, sp.restitution = 40, "SURFACE", 0.0
    _table(0.3, "VISCOUS", size=3.0)
    R, m, alpha, gamma = 0.02, 0.015, 0.3, 0.95
    I3 = 0.4 * m * R * R
    lam = math.sqrt(m * 9.81 * R ** 3 * I3 * alpha) * (1 + alpha) ** 2 / math.sqrt(1 + alpha - gamma)
    spin = 5.0 * lam / (I3 * R * (1 - alpha))
    tilt = 0.1
    bpy.ops.mesh.primitive_uv_sphere_add(radius=R, segments=48, ring_count=24, location=(0.0, 0.0, R),
                                         rotation=(tilt, 0.0, 0.0))
    top = bpy.context.object
    top.name = "Tippe Top"
    bpy.context.view_layer.objects.active = top
    bpy.ops.pem.contact_add()                                          # the ball itself: fitted to the mesh
    bm = bmesh.new()                                                   # the stem: a rod and its round tip
    bm.from_mesh(top.data)
    bmesh.ops.create_cone(bm, cap_ends=True, segments=24, radius1=0.08 * R, radius2=0.08 * R, depth=0.5 * R,
                          matrix=Matrix.Translation((0.0, 0.0, 0.9 * R)))
    bmesh.ops.create_uvsphere(bm, u_segments=24, v_segments=12, radius=0.15 * R,
                              matrix=Matrix.Translation((0.0, 0.0, 1.15 * R)))
    bm.to_mesh(top.data)
    bm.free()
    white, red = material("Enamel", (0.92, 0.9, 0.85, 1.0), roughness=0.25), material("Stem", (0.8, 0.1, 0.08, 1.0))
    top.data.materials.append(white)
    top.data.materials.append(red)
    for poly in top.data.polygons:
        poly.use_smooth = True
        poly.material_index = 1 if poly.center.z > 0.35 * R else 0
    p = top.pem
    p.enabled, p.role, p.translate = True, "FREE", True
    p.inertia_source, p.mass, p.manual_com = "MANUAL", m, (0.0, 0.0, -alpha * R)
    p.manual_inertia = (gamma * I3, gamma * I3, I3, 0.0, 0.0, 0.0)
    axis = np.array([0.0, -math.sin(tilt), math.cos(tilt)])            # the body's z axis after the tilt about x
    p.angular_velocity = tuple(spin * axis)
    item = p.contacts.add()                                            # the stem's tip
    item.center, item.radius = (0.0, 0.0, 1.15 * R), 0.15 * R
    bpy.context.view_layer.update()
    return top, spin


def tippe_top(outdir: Path) -> dict:
    top, spin = build_tippe_top()
    scene = bpy.context.scene
    t0 = time.perf_counter()
    bpy.ops.pem.simulate_bake()
    bake_s = time.perf_counter() - t0
    tilt, where = [], []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        tilt.append(math.degrees(math.acos(max(-1.0, min(1.0, top.matrix_world[2][2])))))
        where.append(np.array(top.matrix_world.translation))
    half = int(np.argmax(np.array(tilt) > 90.0))
    W = np.array(top.matrix_world)
    tip = W[:3, :3] @ np.array([0.0, 0.0, 0.023]) + W[:3, 3]         # the stem's tip sphere (1.15R from the centre)
    on_stem = bool(abs(tip[2] - 0.003) < 1e-5 and W[2, 3] > 0.021)   # its tip on the table, the ball (R) clear
    # friction drives it across the table (~1 m) while it turns over: the camera follows it
    stage(target=(where[0][0], where[0][1], 0.02), distance=0.3, elevation_deg=20, azimuth_deg=-70, lens=50,
          ground_z=-0.05, size=0.3)
    render_settings()
    save_blend(outdir / "tippe_top.blend")
    paths = render_frames(outdir, "tippe_top", [1, scene.frame_start + half, scene.frame_end], follow=top)
    sp = scene.pem
    return {"bake_wall_s": round(bake_s, 2), "status": sp.status, "steps": sp.last_steps, "spin_rad_s": round(spin, 2),
            "energy_balance": sp.last_energy_error, "final_tilt_deg": round(tilt[-1], 2),
            "turned_over": bool(tilt[-1] > 170.0), "on_its_stem": on_stem, "renders": [p.name for p in paths]}


def build_coin() -> tuple:
    """A coin (radius 12.5 mm, 7.5 g, Mass Properties: Manual as a thin disc) on its rim, leaning 17° towards the
    centre of a 10 cm circle, with the closed form's speed and spin for rolling on it (pem_physics.examples.
    rolling_coin) on a table with μ = 1; returns (coin, R, Ω), not baked."""
    new_scene()
    scene = bpy.context.scene
    scene.render.fps = 24
    sp = scene.pem
    sp.substeps, sp.contact_model, sp.restitution = 80, "SURFACE", 0.0
    _table(1.0, "COULOMB")
    a, m, R, th = 0.0125, 0.0075, 0.1, math.radians(17.0)
    I1, I3 = m * a * a / 4, m * a * a / 2
    omega = math.sqrt(m * a * 9.81 * math.tan(th) / (I1 * math.sin(th) + R * (I3 / a + m * a)))
    spin = -omega * (R + a * math.sin(th)) / a
    scene.frame_start, scene.frame_end = 1, 1 + int(math.ceil(2 * 2 * math.pi / omega * 24))   # two turns
    up = np.array([-math.sin(th), 0.0, math.cos(th)])                  # contact point → centre
    k = np.array([math.cos(th), 0.0, math.sin(th)])                    # the coin's axis
    bpy.ops.mesh.primitive_cylinder_add(radius=a, depth=0.0016, vertices=96, location=(0.0, 0.0, 0.0))
    coin = bpy.context.object
    coin.name = "Coin"
    set_material(coin, material("Brass", (0.85, 0.65, 0.25, 1.0), metallic=0.9, roughness=0.3))
    import mathutils

    W = np.eye(4)
    W[:3, :3] = np.column_stack([up, np.cross(k, up), k])
    W[:3, 3] = (R, 0.0, a * math.cos(th))
    coin.matrix_world = mathutils.Matrix([list(map(float, r)) for r in W])
    p = coin.pem
    p.enabled, p.role, p.translate = True, "FREE", True
    p.inertia_source, p.mass, p.manual_com = "MANUAL", m, (0.0, 0.0, 0.0)
    p.manual_inertia = (I1, I1, I3, 0.0, 0.0, 0.0)
    p.velocity = (0.0, omega * R, 0.0)
    p.angular_velocity = tuple(omega * np.array([0.0, 0.0, 1.0]) + spin * k)
    item = p.contacts.add()
    item.kind, item.axis, item.center, item.radius = "RIM", (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), a
    bpy.context.view_layer.update()
    return coin, R, omega


def rolling_coin(outdir: Path) -> dict:
    coin, R, omega = build_coin()
    scene = bpy.context.scene
    t0 = time.perf_counter()
    bpy.ops.pem.simulate_bake()
    bake_s = time.perf_counter() - t0
    off = []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        off.append(abs(math.hypot(coin.matrix_world[0][3], coin.matrix_world[1][3]) - R))
    stage(target=(0.0, 0.0, 0.0), distance=0.36, elevation_deg=30, azimuth_deg=-60, lens=50, ground_z=-0.05,
          size=0.4)
    render_settings()
    save_blend(outdir / "rolling_coin.blend")
    n = scene.frame_end - scene.frame_start
    paths = render_frames(outdir, "rolling_coin", [1, 1 + n // 3, 1 + 2 * n // 3])
    sp = scene.pem
    return {"bake_wall_s": round(bake_s, 2), "status": sp.status, "steps": sp.last_steps,
            "turn_period_s": round(2 * math.pi / omega, 4), "max_off_circle_m": float(max(off)),
            "on_its_circle": bool(max(off) < 1e-3 * R), "renders": [p.name for p in paths]}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    outdir = Path(argv[0] if argv else ROOT / "out" / "demo").resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    ext = install_extension(outdir)
    summary = {"blender": bpy.app.version_string, "three_magnet": three_magnet(ext, outdir),
               "three_magnet_map": three_magnet_map(ext, outdir),
               "t_handle": t_handle(ext, outdir), "gas": hard_sphere_gas(ext, outdir),
               "newtons_cradle": newtons_cradle(outdir), "kapitza": kapitza(outdir), "magnetic_gear": gear(outdir),
               "tippe_top": tippe_top(outdir), "rolling_coin": rolling_coin(outdir)}
    summary["total_wall_s"] = round(time.perf_counter() - t0, 1)
    summary["times_s"] = {k: round(v, 2) for k, v in TIMES.items()}
    (outdir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    print(time_table(summary))
    print(f"demo output in {outdir}")


if __name__ == "__main__":
    main()
