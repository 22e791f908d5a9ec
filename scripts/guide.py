"""The pictures of the add-on guide (docs/addon-guide.md), rendered headless with the bpy wheel's Python
(scripts/guide.sh does that):

    python scripts/guide.py [OUTDIR]        # default docs/guide

01-scene.png            the three-magnet pendulum of the demo at its start frame (Cycles CPU)
02-baked-motion.png     after Bake: one swing of the baked motion, seven frames in one picture (onion skin)
03-timeline-baked.png   the Timeline's cache bar of a bake over frames 1–100, drawn offscreen by the add-on's
04-timeline-outdated.png    own draw function (pem_addon/pendulum/timeline.py), baked and outdated
05-diagnostics.png      the image Plot Diagnostics makes of the bake ("PEM Diagnostics")

The scene, stage, render settings and renders are scripts/demo.py's (imported, not copied).
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import demo  # noqa: E402, I001  (first: it sets up Blender's user folder, then imports bpy)

import bpy  # noqa: E402
import numpy as np  # noqa: E402

#: Frames of the baked motion in 02-baked-motion.png: the bob's first swing (frame 1 to 13: one side to the
#: other), every other frame.
MOTION_FRAMES = (1, 3, 5, 7, 9, 11, 13)
RES = (480, 300)
SAMPLES = 16
#: The Timeline strip: its size, the frames it shows and the background grey of Blender's timeline.
STRIP = (480, 90)
STRIP_FRAMES = (1, 100)
STRIP_MARGIN = 16
BACKGROUND = (0.16, 0.16, 0.16, 1.0)
TICK, TICK_MAJOR = (0.22, 0.22, 0.22, 1.0), (0.3, 0.3, 0.3, 1.0)
#: Drawn as on a screen at Blender's Resolution Scale 2, so the few-pixel bar shows in a small picture.
UI_SCALE = 2.0


def read_png(path: Path) -> np.ndarray:
    """(H, W, 4) float pixels of a PNG (rows bottom to top, as Blender keeps them; byte values / 255)."""
    img = bpy.data.images.load(str(path))
    try:
        w, h = img.size
        px = np.empty(w * h * 4, dtype=np.float32)
        img.pixels.foreach_get(px)
    finally:
        bpy.data.images.remove(img)
    return px.reshape(h, w, 4)


def write_png(px: np.ndarray, path: Path) -> None:
    """Save (H, W, 4) pixels in [0, 1] (display values, rows bottom to top) as an 8-bit PNG, through a temporary
    Blender image."""
    h, w = px.shape[:2]
    img = bpy.data.images.new("guide-out", w, h, alpha=True)
    try:
        img.pixels.foreach_set(np.clip(px, 0.0, 1.0).astype(np.float32).ravel())
        img.filepath_raw = str(path)
        img.file_format = "PNG"
        img.save()
    finally:
        bpy.data.images.remove(img)


def render_to(path: Path, frame: int, tmp: Path) -> None:
    """Render ``frame`` of the scene with demo.render_frames and move the picture to ``path``."""
    (out,) = demo.render_frames(tmp, "guide", [frame])
    os.replace(out, path)


def onion_skin(frames: list) -> np.ndarray:
    """One picture of several renders from a still camera: the background (their per-pixel median: the moving bob
    is elsewhere in most of them) with each frame's differing pixels over it, later frames more opaque, the last
    one fully."""
    stack = np.stack(frames)
    background = np.median(stack, axis=0)
    out = background.copy()
    n = len(frames)
    for k, px in enumerate(frames):
        alpha = 0.35 + 0.65 * k / max(n - 1, 1)
        diff = np.abs(px[..., :3] - background[..., :3]).max(axis=-1)
        mask = np.clip((diff - 0.02) / 0.06, 0.0, 1.0)[..., None] * alpha   # soft edge, no noise speckle
        out[..., :3] = out[..., :3] * (1.0 - mask) + px[..., :3] * mask
    out[..., 3] = 1.0
    return out


def timeline_strip(timeline, state: str) -> np.ndarray:
    """The Timeline's lower part as the add-on draws it: the frame grid of frames 1–100 (a line every 5 frames,
    brighter every 10) on the timeline's grey, and the cache bar of a bake over frames 1–100 in ``state``
    (:func:`pem_addon.pendulum.timeline.bar` and :func:`~pem_addon.pendulum.timeline.draw_bar`), drawn offscreen
    and read back."""
    import gpu
    from mathutils import Matrix

    gpu.init()
    W, H = STRIP
    f0, f1 = STRIP_FRAMES

    def to_x(frame):
        return STRIP_MARGIN + (frame - f0) * (W - 2 * STRIP_MARGIN) / (f1 - f0)

    off = gpu.types.GPUOffScreen(W, H)
    try:
        with off.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=BACKGROUND)
            with gpu.matrix.push_pop(), gpu.matrix.push_pop_projection():
                gpu.matrix.load_matrix(Matrix.Identity(4))
                # pixel space, as in the timeline's POST_PIXEL draw handler
                gpu.matrix.load_projection_matrix(Matrix(((2 / W, 0, 0, -1), (0, 2 / H, 0, -1), (0, 0, 1, 0),
                                                          (0, 0, 0, 1))))
                for frame in range(0, f1 + 1, 5):
                    if frame < f0:
                        continue
                    x = round(to_x(frame))
                    width = UI_SCALE / 2
                    timeline.draw_bar((x - width, 0, x + width, H), TICK_MAJOR if frame % 10 == 0 else TICK)
                shown = timeline.bar(state, f0, f1, to_x, UI_SCALE)
                timeline.draw_bar(*shown)
            px = np.array(fb.read_color(0, 0, W, H, 4, 0, "FLOAT").to_list(), dtype=np.float32).reshape(H, W, 4)
    finally:
        off.free()
    px[..., 3] = 1.0
    return px


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    outdir = Path(argv[0] if argv else demo.ROOT / "docs" / "guide").resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    ext = demo.import_extension()
    timeline = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.timeline")
    cache = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.cache")
    written = []

    def done(path: Path):
        written.append(path)
        print(f"wrote {path} ({path.stat().st_size // 1024} KB)", flush=True)

    with tempfile.TemporaryDirectory(prefix="pem-guide-") as tmpname:
        tmp = Path(tmpname)
        # 1. the scene as built (not baked), at its start frame
        demo.build_three_magnet(ext)
        scene = bpy.context.scene
        demo.set_material(demo._support_bar(pivot=(0.0, 0.0, 0.3)),
                          demo.material("Steel", (0.3, 0.3, 0.32, 1.0), metallic=0.8, roughness=0.35))
        # the demo's stage, the camera a little further back: the support bar stays in the wider picture
        demo.stage(target=(0.0, 0.0, 0.14), distance=0.7, elevation_deg=18, azimuth_deg=-65, lens=40,
                   ground_z=-0.012, size=0.5)
        demo.render_settings(samples=SAMPLES, res=RES)
        render_to(outdir / "01-scene.png", scene.frame_start, tmp)
        done(outdir / "01-scene.png")

        # 2. Bake, then the motion of the first swing in one picture
        if bpy.ops.pem.simulate_bake() != {"FINISHED"} or cache.state(bpy.context) != cache.BAKED:
            raise SystemExit(f"guide: the bake failed ({cache.state_text(bpy.context)})")
        renders = demo.render_frames(tmp, "motion", MOTION_FRAMES)
        write_png(onion_skin([read_png(p) for p in renders]), outdir / "02-baked-motion.png")
        done(outdir / "02-baked-motion.png")

        # 3, 4. the Timeline's cache bar, baked and outdated
        for name, state in (("03-timeline-baked.png", cache.BAKED), ("04-timeline-outdated.png", cache.OUTDATED)):
            write_png(timeline_strip(timeline, state), outdir / name)
            done(outdir / name)

        # 5. Plot Diagnostics of the bake
        if bpy.ops.pem.plot_diagnostics() != {"FINISHED"}:
            raise SystemExit("guide: Plot Diagnostics failed")
        img = bpy.data.images["PEM Diagnostics"]
        img.filepath_raw = str(outdir / "05-diagnostics.png")
        img.file_format = "PNG"
        img.save()
        done(outdir / "05-diagnostics.png")
    print(f"guide: {len(written)} pictures in {outdir} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
