"""The Blender side of PEM: everything that imports ``bpy`` lives in this package.

``pem_addon`` is a subpackage of the extension package (the repository root), so it reaches
the physics core as a sibling: ``from .. import pem_physics`` / ``from ..pem_physics import …``.
That works wherever the root is imported as a package: installed as an extension
(``bl_ext.user_default.pem_physics_pendulum``) or in the repository's bpy tests, which import
the root under an alias package (see ``tests/addon/conftest.py``).

By feature, each with its properties, operators and panels: :mod:`.pendulum` (rigid bodies, their bake and
cache), :mod:`.contacts` (contact spheres, rims, walls, pairs), :mod:`.gas` (hard-sphere gases). Shared by
them, the adapters of one kind of thing each: :mod:`.bodies`, :mod:`.meshes` (geometry and mass properties),
:mod:`.units`, :mod:`.keyframes` (writing and undoing keys), :mod:`.frames`, :mod:`.messages`, :mod:`.lists`,
:mod:`.jobs` (modal runs on a thread), :mod:`.warmup`. A feature imports the shared modules and, for the
pendulum, :mod:`.contacts`; nothing imports upwards (tests/test_layout.py holds it).

Like Blender's bundled add-ons, this ``__init__`` registers nothing itself; it delegates to each feature's
``register``/``unregister`` (whose modules end with ``classes = (...)`` and
``register, unregister = bpy.utils.register_classes_factory(classes)``).
"""

from ..pem_physics import jit
from . import contacts, gas, pendulum, warmup

# Features with register()/unregister(), in registration order.
_modules = (pendulum, gas, contacts)


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
