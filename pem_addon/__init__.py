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

from ..pem_physics import jit
from . import (
    contacts,
    gas,
    keyframes,  # noqa: F401
    operators,
    overlay,
    props,
    timeline,
    ui,
    warmup,
)

# Submodules with register()/unregister(), in registration order.
_modules = (props, operators, ui, overlay, timeline, gas, contacts)


def _use_extension_cache_folder() -> None:
    """Compiled kernels (numba, bundled with the extension) cache in the extension's user folder.

    Installed as an extension, the root package is ``bl_ext.<repo>.<id>``; numba has not been
    imported yet (the core loads it on the first bake), so the folder can still be chosen.
    Elsewhere (the repository's tests) the core's per-user default stays.
    """
    import bpy

    root = __package__.rpartition(".")[0]
    if root.startswith("bl_ext."):
        jit.set_cache_dir(bpy.utils.extension_path_user(root, path="numba_cache", create=True))


def register():
    """Register every submodule in ``_modules``, in order; installed as an extension, start numba's warm-up when
    the zip carries no kernels built ahead of time for this Blender (:mod:`.warmup`)."""
    _use_extension_cache_folder()
    for module in _modules:
        module.register()
    root = __package__.rpartition(".")[0]
    if root.startswith("bl_ext."):
        warmup.start(root)


def unregister():
    """Unregister every submodule in ``_modules``, in reverse order (and end a running warm-up)."""
    warmup.stop()
    for module in reversed(_modules):
        module.unregister()
