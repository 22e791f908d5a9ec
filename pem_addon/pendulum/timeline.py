"""The simulation cache's state in the Timeline, as Blender draws its own caches there (Timeline ▸ View ▸ Cache).

Blender lets an add-on draw in an editor, not add a row to its cache display: a draw handler of the Dope Sheet
editor in Timeline mode draws one bar along the bottom of the timeline over the frames the bake covers —
opaque for a bake that is up to date, red for an outdated one (:mod:`.cache`), pale over the frames live playback
has simulated (:mod:`.live`) — and nothing otherwise or when the timeline's *Cache* display is off.

:func:`bar` computes the rectangle (pixels) and colour with plain arithmetic, so it is tested headless;
:func:`draw_bar` only uploads it.
"""

from __future__ import annotations

import bpy

from . import cache, live

#: Bar colours (RGBA): a baked cache in our overlay's magnet orange, an outdated one red, the frames live playback
#: has simulated (:mod:`.live`) paler, as Blender draws a cache that is not baked.
BAKED_COLOR = (1.0, 0.55, 0.1, 0.9)
OUTDATED_COLOR = (0.9, 0.15, 0.1, 0.9)
LIVE_COLOR = (1.0, 0.55, 0.1, 0.35)
#: The state :func:`bar` takes for frames simulated live.
LIVE = "LIVE"
#: Height of the bar and its distance from the bottom of the timeline, in pixels at UI scale 1 (Blender's cache
#: rows are a few pixels high, above the scrollbar).
BAR_HEIGHT = 4.0
BAR_BOTTOM = 16.0

_handle = None


def bar(state: str, frame_start: int, frame_end: int, to_x, ui_scale: float = 1.0):
    """((x0, y0, x1, y1) pixels, RGBA) of the cache bar, or None when there is nothing to show.

    ``to_x(frame)`` maps a frame to the region's x in pixels (``view2d.view_to_region``); the bar spans the
    baked frames [frame_start, frame_end] edge to edge, as Blender draws a cache.
    """
    if state == cache.NOT_BAKED or frame_end <= frame_start:
        return None
    color = {cache.BAKED: BAKED_COLOR, LIVE: LIVE_COLOR}.get(state, OUTDATED_COLOR)
    y0 = BAR_BOTTOM * ui_scale
    return (float(to_x(frame_start)), y0, float(to_x(frame_end)), y0 + BAR_HEIGHT * ui_scale), color


def draw_bar(rect, color) -> None:
    """Fill ``rect`` (x0, y0, x1, y1) with ``color`` under the current GPU matrices (pixel space in a
    POST_PIXEL handler)."""
    import gpu
    from gpu_extras.batch import batch_for_shader

    x0, y0, x1, y1 = rect
    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    batch = batch_for_shader(shader, "TRIS", {"pos": [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]},
                             indices=[(0, 1, 2), (0, 2, 3)])
    gpu.state.blend_set("ALPHA")
    shader.uniform_float("color", color)
    batch.draw(shader)
    gpu.state.blend_set("NONE")


def _draw():
    context = bpy.context
    space, region, scene = context.space_data, context.region, context.scene
    if (scene is None or region is None or space is None or getattr(space, "mode", None) != "TIMELINE"
            or not space.show_cache or not hasattr(scene, "pem")):
        return
    to_x = lambda f: region.view2d.view_to_region(f, 0, clip=False)[0]  # noqa: E731
    if not cache.is_baked(scene):  # cheap: the fingerprints are only compared for a baked scene
        span = live.cached_frames(scene) if live.active(scene) else None
        shown = None if span is None else bar(LIVE, *span, to_x, context.preferences.system.ui_scale)
    else:
        sp = scene.pem
        shown = bar(cache.state(context), sp.bake_frame_start, sp.bake_frame_end, to_x,
                    context.preferences.system.ui_scale)
    if shown is not None:
        draw_bar(*shown)


def register():
    global _handle
    if _handle is None and not bpy.app.background:
        _handle = bpy.types.SpaceDopeSheetEditor.draw_handler_add(_draw, (), "WINDOW", "POST_PIXEL")


def unregister():
    global _handle
    if _handle is not None:
        bpy.types.SpaceDopeSheetEditor.draw_handler_remove(_handle, "WINDOW")
        _handle = None
