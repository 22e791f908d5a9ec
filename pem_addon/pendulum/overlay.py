"""Viewport overlay (gpu draw handler): dipole arrows, pivot markers, field lines of fixed magnets, contact
spheres and walls, the ghost path (:mod:`.ghost`).

:func:`geometry` computes the line segments (world coordinates, BU) with numpy so it can be
tested headless; :func:`_draw` only uploads them.
"""

from __future__ import annotations

import bpy
import numpy as np

from .. import bodies, messages, units
from ..contacts import overlay as contact_lines
from . import ghost

_handle = None

DIPOLE_COLOR = (1.0, 0.35, 0.1, 1.0)
PIVOT_COLOR = (0.1, 0.9, 0.9, 1.0)
FIELD_COLOR = (0.55, 0.55, 1.0, 0.6)
CONTACT_COLOR = (0.3, 1.0, 0.3, 0.8)
GHOST_COLOR = ghost.COLOR
LINE_WIDTH = 2.0   # pixels


def _arrow(start, vec):
    """Segments (k,2,3) of an arrow from start along vec, with a two-line head."""
    end = start + vec
    n = np.linalg.norm(vec)
    if n == 0:
        return np.empty((0, 2, 3))
    d = vec / n
    side = np.cross(d, [0.0, 0.0, 1.0] if abs(d[2]) < 0.9 else [1.0, 0.0, 0.0])
    side /= np.linalg.norm(side)
    head = 0.25 * n
    return np.array([[start, end], [end, end - head * d + 0.5 * head * side],
                     [end, end - head * d - 0.5 * head * side]])


def dipoles_world(scene):
    """(positions (D,3) BU, moments (D,3) A·m², is_fixed (D,)) of every PEM dipole, at the current frame."""
    pos, mom, fixed = [], [], []
    for obj in bodies.pem_objects(scene):
        M = units.matrix(obj.matrix_world)
        try:
            R = units.rotation_part(M, obj.name)
        except messages.AddonError:
            continue
        for d in obj.pem.dipoles:
            pos.append((M @ np.r_[np.array(d.position), 1.0])[:3])
            mom.append(R @ np.array(d.moment))
            fixed.append(obj.pem.role in ("FIXED", "DRIVEN"))
    return (np.array(pos).reshape(-1, 3), np.array(mom).reshape(-1, 3), np.array(fixed, dtype=bool))


def field_lines(pos, mom, seeds_per_dipole=8, steps=60, length=None):
    """Field lines of point dipoles (BU): RK2 along B/|B| from seeds on a small ring around each dipole."""
    if len(pos) == 0:
        return np.empty((0, 2, 3))
    span = np.ptp(pos, axis=0).max() if len(pos) > 1 else 1.0
    length = length or max(span, 1e-3) * 1.5
    h = length / steps
    seeds = []
    for r, m in zip(pos, mom):
        d = m / (np.linalg.norm(m) or 1.0)
        e1 = np.cross(d, [0, 0, 1.0] if abs(d[2]) < 0.9 else [1.0, 0, 0])
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(d, e1)
        a = np.linspace(0, 2 * np.pi, seeds_per_dipole, endpoint=False)
        ring = np.cos(a)[:, None] * e1 + np.sin(a)[:, None] * e2
        seeds.append(r + 0.05 * length * (0.6 * ring + d))
    x = np.concatenate(seeds)

    def direction(x):
        dd = x[:, None, :] - pos[None]
        r2 = np.maximum((dd * dd).sum(-1), 1e-18)
        pd = (mom[None] * dd).sum(-1)
        B = ((3 * pd / r2)[..., None] * dd - mom[None]) / (r2 ** 1.5)[..., None]
        B = B.sum(1)
        return B / np.maximum(np.linalg.norm(B, axis=-1, keepdims=True), 1e-30)

    segs = []
    for _ in range(steps):  # a fixed number of steps for a picture, vectorised over all lines
        mid = x + 0.5 * h * direction(x)
        nxt = x + h * direction(mid)
        segs.append(np.stack([x, nxt], axis=1))
        x = nxt
    return np.concatenate(segs)


def geometry(context) -> dict:
    """{"dipoles", "pivots", "field", "contacts", "ghost": (k,2,3)} line segments in world coordinates (BU)."""
    scene = context.scene
    sp = scene.pem
    out = {"dipoles": np.empty((0, 2, 3)), "pivots": np.empty((0, 2, 3)), "field": np.empty((0, 2, 3)),
           "contacts": np.empty((0, 2, 3)), "ghost": ghost.segments(scene)}
    unit = units.unit_scale(scene)
    pos, mom, fixed = dipoles_world(scene)
    if sp.show_dipoles and len(pos):
        arrows = [_arrow(r, m * sp.arrow_scale) for r, m in zip(pos, mom)]
        out["dipoles"] = np.concatenate(arrows) if arrows else out["dipoles"]
    if sp.show_pivots:
        marks = []
        for obj in bodies.pem_objects(scene):
            if obj.pem.role != "PENDULUM":
                continue
            try:
                P = bodies.pivot_world(obj)
            except messages.AddonError:
                continue
            s = 0.02 / unit
            for axis in np.eye(3):
                marks.append([P - s * axis, P + s * axis])
        if marks:
            out["pivots"] = np.array(marks)
    if sp.show_field_lines and fixed.any():
        out["field"] = field_lines(pos[fixed], mom[fixed])
    if sp.show_contacts:
        out["contacts"] = contact_lines.overlay_segments(scene)
    return out


def draw_segments(geo: dict, viewport_size) -> None:
    """Draw the overlay's line segments (``geometry()``'s arrays, (K, 2, 3) in world coordinates) with the current
    GPU matrices; ``viewport_size`` (width, height) in pixels."""
    import gpu
    from gpu_extras.batch import batch_for_shader

    # Wide lines through the polyline shader: Metal (macOS) and Vulkan have no glLineWidth, so
    # gpu.state.line_width_set does nothing there; POLYLINE_UNIFORM_COLOR (Blender 4.0+) draws them everywhere.
    shader = gpu.shader.from_builtin("POLYLINE_UNIFORM_COLOR")
    shader.uniform_float("viewportSize", tuple(float(v) for v in viewport_size))
    shader.uniform_float("lineWidth", LINE_WIDTH)
    gpu.state.blend_set("ALPHA")
    for key, color in (("field", FIELD_COLOR), ("dipoles", DIPOLE_COLOR), ("pivots", PIVOT_COLOR),
                       ("contacts", CONTACT_COLOR), ("ghost", GHOST_COLOR)):
        segs = geo.get(key, ())
        if len(segs):
            batch = batch_for_shader(shader, "LINES", {"pos": np.asarray(segs, np.float32).reshape(-1, 3).tolist()})
            shader.uniform_float("color", color)
            batch.draw(shader)
    gpu.state.blend_set("NONE")


def _draw():
    context = bpy.context
    if context.scene is None or not hasattr(context.scene, "pem") or context.region is None:
        return
    draw_segments(geometry(context), (context.region.width, context.region.height))


def register():
    global _handle
    if _handle is None and not bpy.app.background:
        _handle = bpy.types.SpaceView3D.draw_handler_add(_draw, (), "WINDOW", "POST_VIEW")


def unregister():
    global _handle
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, "WINDOW")
        _handle = None
