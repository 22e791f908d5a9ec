"""The model: what a scene is, before anything moves.

- :mod:`.scene` — scene data (:class:`Scene`, :class:`Body`, :class:`Dipole`, :class:`Settings`,
  driven motions, the rotating field) and its validation; re-exported here.
- :mod:`.motion` — tabulated motions (sampled positions and orientations, splined) for driven magnets and
  moving pivots; :mod:`.analytic` the exact ones (an oscillation, a uniform rotation).
- :mod:`.inertia` — mass properties: analytic shapes, exact closed-mesh integrals, Steiner shifts,
  the pseudo-inverse; :mod:`.fastmesh` its optional compiled kernel; :mod:`.mesh_parts` a mesh's
  closed parts and which of them overlap.
- :mod:`.rotations` — rotation matrices, quaternions, Euler angles, PEM's re-orthonormalisation.
- :mod:`.validate` — the checks every scene value goes through (messages name the item).

Depends on :mod:`pem_physics.errors` only.
"""

from .analytic import Oscillation, UniformRotation
from .motion import TabulatedMotion
from .scene import (
    DEFAULT_METHOD,
    METHODS,
    MU0,
    PLACEMENT_TOLERANCE_MAX,
    Body,
    ConstantVelocity,
    ContactRim,
    ContactSphere,
    Dipole,
    EllipticOrbit,
    PairRestitution,
    RotatingField,
    Scene,
    Settings,
    StaticWall,
)

__all__ = ["Body", "ConstantVelocity", "ContactRim", "ContactSphere",
           "DEFAULT_METHOD", "Dipole", "EllipticOrbit", "METHODS", "MU0", "Oscillation", "PLACEMENT_TOLERANCE_MAX",
           "PairRestitution", "RotatingField", "Scene", "Settings", "StaticWall", "TabulatedMotion",
           "UniformRotation"]
