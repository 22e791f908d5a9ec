"""Blender's application handlers (``bpy.app.handlers``) added and removed by the features that need them."""

from __future__ import annotations


def add(pairs) -> None:
    """Append each ``(handler list, function)`` of ``pairs`` to its list, once."""
    for handlers, fn in pairs:
        if fn not in handlers:
            handlers.append(fn)


def remove(pairs) -> None:
    """Remove each ``(handler list, function)`` of ``pairs`` from its list, where it is."""
    for handlers, fn in pairs:
        if fn in handlers:
            handlers.remove(fn)
