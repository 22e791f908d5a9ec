"""The Hard-Sphere Gas panel's settings (``Scene.pem_gas``): the operator's defaults."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, FloatProperty, IntProperty, PointerProperty


def _box_poll(self, obj):
    return obj.type == "MESH"


class PEM_PG_gas(bpy.types.PropertyGroup):
    """The panel's settings for Build Hard-Sphere Gas (``Scene.pem_gas``); the operator's defaults."""

    box: PointerProperty(name="Box", type=bpy.types.Object, poll=_box_poll,
                         description="Mesh object whose dimensions (scale applied) and orientation are the gas box")
    n: IntProperty(name="Particles", default=500, soft_min=1, soft_max=100_000, description="Number of spheres N")
    packing_fraction: FloatProperty(
        name="Packing Fraction", default=0.2, soft_min=0.001, soft_max=0.64, precision=3,
        description="Fraction of the box volume the spheres fill (η); it sets their radius. Random start up to "
                    "0.30, fcc lattice start above, at most 0.64 (random close packing)")
    temperature: FloatProperty(name="Temperature", default=1.0, soft_min=0.0, soft_max=100.0,
                               description="k_B T per particle mass, BU²/s²: √T is the r.m.s. velocity component "
                                           "in Blender units per second")
    seed: IntProperty(name="Seed", default=0, min=0, description="Random seed of the start positions and velocities")
    periodic: BoolProperty(name="Periodic", default=True,
                           description="Periodic box (particles leaving through a face re-enter through the "
                                       "opposite one); off: hard walls")
