"""The engine: a scene in motion, one stage per module.

- :mod:`.system` — compile a checked scene into flat arrays (principal frames, dipoles, sources).
- :mod:`.torques` — torques about the pivots and the energies behind them (gravity, fields,
  all dipole pairs).
- :mod:`.integrators` — time steppers: symplectic splitting (default), PEM's Euler/RK4, DOP853.
- :mod:`.simulate` — the driver: records, diagnostics, blow-up detection, ensembles.
- :mod:`.compiled` — the compiled engine (numba, optional): every method, every scene, one member
  per thread; :mod:`.lanes` — large ensembles of one pendulum over fixed magnets with members in
  SIMD lanes; :mod:`.pairs` — the all-pairs dipole sweep for many bodies. The numpy code stays the
  reference and the fallback.

Depends on :mod:`pem_physics.model`.
"""
