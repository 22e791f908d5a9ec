"""Hard-sphere gas in Blender: one point mesh played by a PC2 point cache, spheres instanced on its points.

Thousands of particles are not thousands of objects. **Build Hard-Sphere Gas** fills a box
object with N equal spheres at a packing fraction, runs the event-driven engine
(:mod:`pem_physics.gas`) over the frame range and writes the centres at the frame times to a PC2
file, then creates one object:

- a mesh of N vertices (the centres at the first frame) with a per-point float attribute
  ``radius`` (Blender units);
- a *Mesh Cache* modifier reading the PC2 file: scene frame f shows sample f − frame_start, the
  positions at t = (f − frame_start) / fps seconds;
- a *Geometry Nodes* modifier instancing a UV sphere of radius 1 on every point, scaled by the
  point's ``radius`` (its *Material* input colours the spheres: :data:`MATERIAL_NAME` on a new gas).

Units: lengths in Blender units, times in seconds (scene frame rate), temperature T in
BU²/s² with k_B = 1 and a particle mass of 1, so √T is the r.m.s. velocity component in BU/s.
The gas lives in the box object's frame: the box's rotation and location at build time, its
scaled dimensions as the box lengths (the box object itself is not changed or followed later).

Periodic boxes show each particle wrapped into the box: one that leaves through a face comes back
through the opposite one and jumps across the box between two frames (the cache then uses no
interpolation between frames, which would draw it across the box); spheres near a face stick out
of it by up to a radius.

The cache goes next to the .blend (``//<blend name>_<object>_<token>.pc2``, a path relative to
the file) or, for an unsaved file, into ``<system temp>/pem_gas/`` (absolute; the report and the
panel say where). Each build writes a new file, so undo never brings back an object whose cache
was overwritten; a build removes the files of earlier builds of the same box's gas that no object
uses any more (:func:`.objects.remove_stale_caches`: a gas object deleted, or rebuilt), and the report says so.

As with Bake: :func:`.build.prepare` reads and checks everything (no changes), :func:`.build.run` is
pure core (thread-safe, stops on request), :func:`.objects.apply` writes the file and creates the object,
removing everything it made if any step fails.

The feature's modules: :mod:`.props` (the panel's settings), :mod:`.build` (plan and run), :mod:`.objects` (the
gas object, its cache file and material), :mod:`.operators` (Build, Delete) and :mod:`.ui` (the panels).
"""


from __future__ import annotations

import bpy
from bpy.props import PointerProperty

from .objects import move_caches_beside_the_blend
from .operators import PEM_OT_gas_build, PEM_OT_gas_delete
from .props import PEM_PG_gas
from .ui import PEM_PT_gas, PEM_PT_sidebar_gas

classes = (PEM_PG_gas, PEM_OT_gas_build, PEM_OT_gas_delete, PEM_PT_gas, PEM_PT_sidebar_gas)
_register, _unregister = bpy.utils.register_classes_factory(classes)


def register():
    _register()
    bpy.types.Scene.pem_gas = PointerProperty(type=PEM_PG_gas)
    if move_caches_beside_the_blend not in bpy.app.handlers.save_pre:
        bpy.app.handlers.save_pre.append(move_caches_beside_the_blend)


def unregister():
    if move_caches_beside_the_blend in bpy.app.handlers.save_pre:
        bpy.app.handlers.save_pre.remove(move_caches_beside_the_blend)
    del bpy.types.Scene.pem_gas
    _unregister()
