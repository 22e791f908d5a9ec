"""pem_physics — rigid bodies rotating about a pivot: gravity, fields, magnetic dipoles.

Pure numpy (scipy only for the ``dop853`` reference method); never imports bpy.
SI units throughout. Public API:

- scene data: :class:`Scene`, :class:`Body`, :class:`Dipole`, :class:`Settings`,
  :class:`RotatingField`, :class:`ConstantVelocity`, :class:`EllipticOrbit`
- shapes and mass properties: :mod:`pem_physics.inertia`
- :func:`simulate` → :class:`Trajectory`; :class:`Ensemble` for many initial conditions
- :func:`load_scene` (TOML, PEM UDF, Python) and :mod:`pem_physics.examples`
"""

from .errors import MeshError, PemError, SimulationError, ValidationError
from .model import (
    DEFAULT_METHOD,
    METHODS,
    MU0,
    Body,
    ConstantVelocity,
    Dipole,
    EllipticOrbit,
    RotatingField,
    Scene,
    Settings,
)
from .simulate import Ensemble, Trajectory, simulate

__version__ = "0.1.0"


def load_scene(path):
    """A Scene from a .toml scene file, a PEM .udf file, a .py file defining ``scene``, or ``example:NAME``."""
    from .cli import load_scene as _load

    return _load(str(path))


def __getattr__(name):
    # Submodules that pull in more (inertia needs nothing extra; examples builds scenes) load on first use.
    if name in ("examples", "inertia", "output", "rotations"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(name)


__all__ = ["Body", "ConstantVelocity", "DEFAULT_METHOD", "Dipole", "EllipticOrbit", "Ensemble", "METHODS",
           "MU0", "MeshError", "PemError", "RotatingField", "Scene", "Settings", "SimulationError",
           "Trajectory", "ValidationError", "load_scene", "simulate"]
