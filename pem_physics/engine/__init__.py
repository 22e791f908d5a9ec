"""The engine: a scene in motion, one stage per module.

- :mod:`.system` — compile a checked scene into flat arrays (principal frames, dipoles, sources).
- :mod:`.torques` — torques about the pivots and the energies behind them (gravity, fields,
  all dipole pairs).
- :mod:`.dipole_pair` — one dipole pair's field and force, written once for every path that takes a pair at a time
  (the compiled kernels, the lanes, the plain-Python path); :mod:`.brent` Brent's root finder, written once in
  reverse communication (the numpy contact driver loops over it, the kernels inline it).
- :mod:`.integrators` — time steppers: symplectic splitting (default), PEM's Euler/RK4, DOP853.
- :mod:`.simulate` — the driver: records, diagnostics, blow-up detection, ensembles.
- the stages' compiled kernels beside their numpy twins: :mod:`.torque_kernels`, :mod:`.step_kernels`,
  :mod:`.broad_kernels` (gaps, near pairs, free flight), :mod:`.impact_kernels`, :mod:`.kernel_flags` (what they
  share); :mod:`.pairs` — the all-pairs dipole sweep for many bodies.
- :mod:`.backends` — the engines that run them, apart from the physics: :mod:`.backends.compiled` (numba,
  optional: every method, every scene, one member per thread; its step loops :mod:`.backends.kernels`, JIT and
  cached on disk or built ahead of time by :mod:`pem_physics.aot`: a run without numba's start-up),
  :mod:`.backends.groups` (independent bodies in threads), :mod:`.backends.lanes` (large ensembles in SIMD
  lanes), :mod:`.backends.scalar` (one body on Python floats), :mod:`.backends.prebuild` (what a build holds).
  The numpy code stays the reference and the fallback.
- :mod:`.contact` — the contact stage (theory §7), run by :func:`.simulate.simulate` for scenes with contact
  spheres or walls: :mod:`.contact.walls` (implicit walls and their derivatives), :mod:`.contact.events`
  (event location), :mod:`.contact.impulses` (impulses with restitution and friction),
  :mod:`.contact.driver` (impacts between bodies and walls), :mod:`.contact.surface` and
  :mod:`.contact.surface_scene` (a body on a table: sliding, rolling, lift-off), :mod:`.contact.particles`
  (translating spheres among walls).

The engine's public face (what a front end such as the Blender add-on uses; the stages above are its inside):
:func:`prepare` → :class:`Run` (whose ``execute()`` is :func:`pem_physics.simulate`) → :class:`Trajectory`,
:class:`Ensemble`; :func:`source_placement` (where a fixed or driven body is at a time); :func:`missing_package`
and :func:`check_available` (a method's optional package); :func:`kernels_built`, :func:`build_key` and
:func:`warm` (the compiled kernels: built ahead of time and loadable here, the key of this source's build,
compiling them under numba's JIT).

Depends on :mod:`pem_physics.model`.
"""

from .integrators import check_available, missing_package
from .simulate import Ensemble, Run, Trajectory, prepare
from .system import source_placement

# not simulate(): the name is the stage's module (pem_physics.engine.simulate); the function is pem_physics.simulate
__all__ = ["Ensemble", "Run", "Trajectory", "build_key", "check_available", "kernels_built", "missing_package",
           "prepare", "source_placement", "warm"]


def kernels_built() -> bool:
    """Whether the single-scene kernels built ahead of time load here (a bake then starts with no compile)."""
    from ..aot import holding
    from .backends.compiled import ENTRIES

    return holding(*ENTRIES) is not None   # None too for a build this interpreter cannot load


def build_key() -> str:
    """The key of this source's kernels (what a build made ahead of time and numba's cache are made for)."""
    from ..aot import key

    return key()


def warm() -> None:
    """Compile and cache every kernel a bake or a gas build uses under numba's JIT (:func:`.backends.prebuild.warm`)."""
    from .backends.prebuild import warm as _warm

    _warm()
