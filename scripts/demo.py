"""Headless demo (the README's main job): build, compute, bake, save .blend files, render previews, plot.

Run with the bpy wheel's Python (scripts/demo.sh does that):

    python scripts/demo.py [OUTDIR]        # default out/demo

1. Three-magnet pendulum (pem_physics.examples.three_magnet, with friction): imported into Blender
   as objects with pivots and dipoles, baked (Simulate & Bake), saved, rendered (Cycles CPU).
2. T-handle (Dzhanibekov): a T-shaped mesh whose inertia is computed from the mesh triangles in
   Blender, spun about its middle axis, baked, saved, rendered.
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

import bpy  # noqa: E402
import numpy as np  # noqa: E402


def import_extension(alias="pem_demo_ext"):
    """The repository root as a package, as Blender imports an installed extension."""
    spec = importlib.util.spec_from_file_location(alias, ROOT / "__init__.py", submodule_search_locations=[str(ROOT)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[alias] = mod
    spec.loader.exec_module(mod)
    mod.register()
    return mod


def material(name, rgba, metallic=0.0, roughness=0.4):
    mat = bpy.data.materials.new(name)
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


def render_frames(outdir: Path, stem: str, frames):
    scene = bpy.context.scene
    paths = []
    for f in frames:
        scene.frame_set(f)
        path = outdir / f"{stem}_frame{f:04d}.png"
        scene.render.filepath = str(path)
        bpy.ops.render.render(write_still=True)
        paths.append(path)
    return paths


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


def three_magnet(ext, outdir: Path) -> dict:
    examples = importlib.import_module(f"{ext.__name__}.pem_physics.examples")
    adapters = importlib.import_module(f"{ext.__name__}.pem_addon.adapters")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = 25
    core = examples.three_magnet(friction=2e-3, t_end=8.0, dt=1e-3)
    objs = adapters.build_objects(core, bpy.context)
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
    t0 = time.perf_counter()
    bpy.ops.pem.simulate_bake()
    bake_s = time.perf_counter() - t0
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
    bob = next(o for o in objs if o.pem.role == "PENDULUM")
    magnet_end = bob.matrix_world @ bob.pem.dipoles[0].position
    nearest = min((o for o in objs if o.pem.role == "FIXED"),
                  key=lambda o: (o.matrix_world.translation.xy - magnet_end.xy).length)
    return {"bake_wall_s": round(bake_s, 2), "simulation_wall_s": round(sp.last_wall_time, 3),
            "engine": sp.last_engine, "status": sp.status, "steps": sp.last_steps, "method": sp.last_method,
            "energy_drift_relative": sp.last_energy_drift, "renders": [p.name for p in frames],
            "bob_magnet_at_end_xy": [round(x, 4) for x in magnet_end.xy],
            "nearest_fixed_magnet": nearest.name}


def t_handle(ext, outdir: Path) -> dict:
    examples = importlib.import_module(f"{ext.__name__}.pem_physics.examples")
    adapters = importlib.import_module(f"{ext.__name__}.pem_addon.adapters")
    model = importlib.import_module(f"{ext.__name__}.pem_physics.model")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = 25
    core = examples.t_handle_mesh(t_end=10.0)
    shapes_only = model.Scene(bodies=[b for b in core.bodies], gravity=(0, 0, 0), settings=core.settings)
    (obj,) = adapters.build_objects(shapes_only, bpy.context)
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


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    outdir = Path(argv[0] if argv else ROOT / "out" / "demo").resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    ext = import_extension()
    t0 = time.perf_counter()
    summary = {"blender": bpy.app.version_string, "three_magnet": three_magnet(ext, outdir),
               "t_handle": t_handle(ext, outdir)}
    summary["total_wall_s"] = round(time.perf_counter() - t0, 1)
    (outdir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    print(f"demo output in {outdir}")


if __name__ == "__main__":
    main()
