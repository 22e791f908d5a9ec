"""Hard-sphere gas: event-driven molecular dynamics of hard disks (d = 2) and spheres (d = 3).

Between events the particles fly straight; events are elastic (or, with restitution e < 1,
inelastic) pair collisions and mirror collisions with hard walls: the box faces, or a container
(:class:`.state.Container`: a sphere, a cylinder, extra planes). Units are the user's: a
length (usually the diameter σ), a mass m and an energy k_B T, so times are in σ √(m / k_B T)
and k_B = 1 throughout.

- :mod:`.state` — :class:`GasState` (positions (N, d), velocities (N, d), radii (N,), masses (N,),
  box (d,)), start states (random, lattice, Maxwell–Boltzmann velocities) and :class:`GasRun`;
- :mod:`.reference` — the plain numpy event-driven code, O(N²) a event, the definition;
- :mod:`.edmd` — the compiled engine (numba, cell lists, one event per particle in a heap); also
  gravity (parabolic flights, hard walls), restitution e < 1 with the TC guard against inelastic
  collapse, records at fixed times (:class:`GasRecords`) that leave the run bit-identical;
- :mod:`.timestep` — the seed's fixed-time-step method (O(N²) overlap checks, backtracking), for
  comparison: :func:`.timestep.missed_collisions` (its collisions matched against the event-driven run's);
- :mod:`.measure` — pressure from the collision virial, temperature, collision rate, mean free
  path, speed distribution and its Kolmogorov–Smirnov test, equations of state.
"""

from .state import (
    Container,
    EventLog,
    GasRecords,
    GasRun,
    GasState,
    gas_in_container,
    make_gas,
    maxwell_boltzmann_velocities,
)

__all__ = ["Container", "GasRun", "GasState", "EventLog", "GasRecords", "gas_in_container", "make_gas",
           "maxwell_boltzmann_velocities"]
