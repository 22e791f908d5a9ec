"""Rigid bodies in Blender: the *Magnetic Pendulum* panels, their bake and its cache.

A scene's PEM bodies (pendulums, free bodies and tops, fixed and driven magnets, walls) form one simulation.
The feature's modules, in the order a bake goes through them: :mod:`.props` (``Object.pem``, ``Scene.pem``),
:mod:`.scenes` (the Blender scene → a checked core scene; :mod:`.motions` for pivots and magnets moved by
Blender's animation), :mod:`.bake` (prepare, run, apply: keys or nothing), :mod:`.cache` (the bake's state, as
Blender's point caches), then what shows it: :mod:`.ui` (panels), :mod:`.overlay` (dipoles, pivots and contacts
in the viewport), :mod:`.ghost` (the path of the next seconds, redrawn while you edit), :mod:`.live` (the simulation
played as the timeline plays, unbaked), :mod:`.timeline` (the
cache in the Timeline), :mod:`.plotimage` (the energy chart); :mod:`.operators` are thin wrappers around them,
:mod:`.importing` builds a core scene file as Blender objects.

Shared with the other features (``..``): :mod:`..bodies`, :mod:`..meshes`, :mod:`..units`, :mod:`..keyframes`,
:mod:`..messages`; contact spheres and walls are :mod:`..contacts`.
"""

from . import cache, ghost, live, operators, overlay, props, timeline, ui

# Submodules with register()/unregister(), in registration order.
_modules = (props, cache, operators, ui, overlay, timeline, ghost, live)


def register():
    for module in _modules:
        module.register()


def unregister():
    for module in reversed(_modules):
        module.unregister()
