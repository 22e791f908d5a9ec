"""pem_physics — rigid bodies rotating about a pivot: gravity, fields, magnetic dipoles.

Pure numpy (scipy only for the ``dop853`` reference method); never imports bpy.
SI units throughout. The package is layered, each layer importing only those above it:

- :mod:`pem_physics.errors` — the exceptions every layer raises;
- :mod:`pem_physics.model` — scene data, mass properties, rotations, validation;
- :mod:`pem_physics.engine` — scene → arrays, torques, integrators, the simulation driver;
- :mod:`pem_physics.io` — scene loading, TOML and PEM UDF files, trajectory outputs, bake values;
- :mod:`pem_physics.analysis` — info tables, plots, basin maps, parameter sweeps;
- :mod:`pem_physics.examples` — the built-in scenes; :mod:`pem_physics.cli` — the command line.

Public API:

- scene data: :class:`Scene`, :class:`Body`, :class:`Dipole`, :class:`Settings`,
  :class:`RotatingField`; motions :class:`ConstantVelocity`, :class:`EllipticOrbit`, :class:`Oscillation`,
  :class:`UniformRotation` (exact) and :class:`TabulatedMotion` (sampled, splined)
- shapes and mass properties: :mod:`pem_physics.model.inertia`
- :func:`simulate` → :class:`Trajectory` (:func:`prepare` → :class:`Run` checks a scene first, :meth:`Run.execute`
  integrates it); :class:`Ensemble` for many initial conditions
- :func:`load_scene` (TOML, PEM UDF, Python) and :mod:`pem_physics.examples`
"""

from .engine.simulate import Ensemble, Run, Trajectory, prepare, simulate
from .errors import MeshError, PemError, SimulationError, ValidationError
from .model.analytic import Oscillation, UniformRotation
from .model.motion import TabulatedMotion
from .model.scene import (
    DEFAULT_METHOD,
    METHODS,
    MU0,
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

__version__ = "0.1.0"


def load_scene(path):
    """A Scene from a .toml scene file, a PEM .udf file, a .py file defining ``scene``, or ``example:NAME``."""
    from .io.loading import load_scene as _load

    return _load(str(path))


def __getattr__(name):
    # The built-in scenes load on first use (``pem_physics.examples``).
    if name == "examples":
        import importlib

        return importlib.import_module(".examples", __name__)
    raise AttributeError(name)


__all__ = ["Body", "ConstantVelocity", "ContactRim", "ContactSphere",
           "DEFAULT_METHOD", "Dipole", "EllipticOrbit", "Ensemble", "METHODS", "MU0", "MeshError", "Oscillation",
           "PairRestitution", "PemError", "RotatingField", "Run", "Scene", "Settings",
           "SimulationError", "StaticWall", "TabulatedMotion", "Trajectory", "UniformRotation", "ValidationError",
           "load_scene", "prepare", "simulate"]
