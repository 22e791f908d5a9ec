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
- contacts (theory §7, not yet wired into :func:`.simulate.simulate`): :mod:`.walls` — implicit
  walls f(x, t) with their derivatives; :mod:`.impulses` — impulses with the effective mass, restitution,
  friction, simultaneous contacts; :mod:`.events` — event location (Brent); :mod:`.particles` —
  translating spheres among walls: flights, impacts, sliding, lift-off, rest.

Depends on :mod:`pem_physics.model`.
"""
