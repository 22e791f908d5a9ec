"""The engine: a scene in motion, one stage per module.

- :mod:`.system` — compile a checked scene into flat arrays (principal frames, dipoles, sources).
- :mod:`.torques` — torques about the pivots and the energies behind them (gravity, fields,
  all dipole pairs).
- :mod:`.integrators` — time steppers: symplectic splitting (default), PEM's Euler/RK4, DOP853.
- :mod:`.simulate` — the driver: records, diagnostics, blow-up detection, ensembles.
- :mod:`.compiled` — the compiled engine (numba, optional): every method, every scene, one member
  per thread; its kernels are :mod:`.kernels` (JIT, cached on disk) or, for a single scene, the same
  kernels built ahead of time (:mod:`.aot`, ``pem build-engine``: a run without numba's start-up);
  :mod:`.lanes` — large ensembles of one pendulum over fixed magnets with members in SIMD lanes;
  :mod:`.pairs` — the all-pairs dipole sweep for many bodies. The numpy code stays the reference and
  the fallback.
- :mod:`.contact` — the contact stage (theory §7), run by :func:`.simulate.simulate` for scenes with contact
  spheres or walls: :mod:`.contact.walls` (implicit walls and their derivatives), :mod:`.contact.events`
  (event location), :mod:`.contact.impulses` (impulses with restitution and friction),
  :mod:`.contact.driver` (impacts between bodies and walls), :mod:`.contact.surface` and
  :mod:`.contact.surface_scene` (a body on a table: sliding, rolling, lift-off), :mod:`.contact.particles`
  (translating spheres among walls).

Depends on :mod:`pem_physics.model`.
"""
