"""Analyses built on runs.

- :mod:`.info` — mass properties of a scene's bodies as a table.
- :mod:`.plot` — figures of a run (energies, ω, the L sphere, top view; matplotlib).
- :mod:`.basin` — basin maps: where a damped magnet pendulum comes to rest vs its release point.
- :mod:`.sweep` — parameter grids run as one ensemble, written as a table.

Depends on :mod:`pem_physics.model`, :mod:`pem_physics.engine` and :mod:`pem_physics.io`.
"""
