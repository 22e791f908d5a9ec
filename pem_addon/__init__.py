"""The Blender side of PEM: everything that imports ``bpy`` lives in this package.

``pem_addon`` is a subpackage of the extension package (the repository root), so it reaches
the physics core as a sibling: ``from .. import pem_physics`` / ``from ..pem_physics import …``.
That works wherever the root is imported as a package: installed as an extension
(``bl_ext.user_default.pem_physics_pendulum``) or in the repository's bpy tests, which import
the root under an alias package (see ``tests/blender/conftest.py``).

Like Blender's bundled add-ons, this ``__init__`` registers nothing itself; it delegates to the
``register``/``unregister`` of the submodules listed in ``_modules`` (each of those ends with
``classes = (...)`` and ``register, unregister = bpy.utils.register_classes_factory(classes)``).
:mod:`.keyframes` is a plain utility module with nothing to register. The core is imported by
the modules that use it, not here, so the keyframe utilities work (and are tested) on their own.
"""

from . import (
    keyframes,  # noqa: F401
    operators,
    overlay,
    props,
    ui,
)

# Submodules with register()/unregister(), in registration order.
_modules = (props, operators, ui, overlay)


def register():
    """Register every submodule in ``_modules``, in order."""
    for module in _modules:
        module.register()


def unregister():
    """Unregister every submodule in ``_modules``, in reverse order."""
    for module in reversed(_modules):
        module.unregister()
