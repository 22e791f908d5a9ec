"""PEM for Blender: Blender extension entry point.

The repository root is the extension package (``bl_ext.<repo>.pem_physics_pendulum`` once
installed). This file only delegates to :mod:`pem_addon`, which holds everything that imports
``bpy``; the physics core :mod:`pem_physics` is a sibling package and never imports ``bpy``.

``pem_addon`` is imported inside ``register``/``unregister`` rather than at module level, so that
importing this package outside Blender never pulls in ``bpy`` (for instance a test runner or tool
that treats the repository root as a package while the plain-numpy environment is active).
"""


def register():
    """Register the add-on (called by Blender when the extension is enabled)."""
    from . import pem_addon

    pem_addon.register()


def unregister():
    """Unregister the add-on (called by Blender when the extension is disabled)."""
    from . import pem_addon

    pem_addon.unregister()
