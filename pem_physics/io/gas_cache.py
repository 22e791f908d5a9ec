"""A hard-sphere gas in a given box, sampled at frame times: the Blender-free half of a gas point cache.

Units are the caller's (the Blender side uses Blender units and seconds): box lengths and radii
in a length unit, times in a time unit, temperature in mass · length² / time² with k_B = 1 (so
√(T / m) is the r.m.s. velocity component).

- :func:`gas_in_box` — N equal spheres filling a box of given lengths (d = 3) at a packing
  fraction, Maxwell–Boltzmann velocities;
- :func:`frame_positions` — the positions at a list of times, from one run of the event-driven
  engine (:mod:`pem_physics.gas.edmd`).

Sampling does not disturb the compiled engine: its ``advance(t_stop)`` stops before the first event
after ``t_stop`` without changing anything (the heap, the particles' own times and positions), and
the positions at t are read as x_i + v_i (t − t_i); so the events, and the positions at each frame,
are those of one uninterrupted run. (The numpy reference, used without numba, starts its
all-pairs event search again from each frame time, which changes round-off only.)

In a periodic box positions are wrapped into [0, L) per axis: a particle leaving through a face
re-enters at the opposite one, and in an animation jumps across the box between two frames.
"""

from __future__ import annotations

import math
import time as _time

import numpy as np

from ..errors import Interrupted
from ..gas import GasState, maxwell_boltzmann_velocities
from ..gas.state import OVERLAP_TOL, RANDOM_MAX, random_insertion

#: Packing fraction of random close packing of equal spheres: a disordered start cannot be denser.
RANDOM_CLOSE_PACKING = 0.64


def sphere_radius(n: int, packing_fraction: float, box) -> float:
    """Radius of n equal spheres that fill the box (3,) to the packing fraction: n (4/3) π R³ = η V."""
    volume = float(np.prod(np.asarray(box, dtype=np.float64)))
    return (3.0 * packing_fraction * volume / (4.0 * math.pi * n)) ** (1.0 / 3.0)


def check_gas_args(n, packing_fraction: float, box, temperature: float) -> np.ndarray:
    """The box lengths (3,) as floats; ValueError naming the first bad argument."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"N = {n!r} must be an integer >= 1")
    if not (math.isfinite(packing_fraction) and packing_fraction > 0):
        raise ValueError(f"packing fraction {packing_fraction:g} must be > 0")
    if packing_fraction > RANDOM_CLOSE_PACKING:
        raise ValueError(f"packing fraction {packing_fraction:g} is above the random close packing limit "
                         f"{RANDOM_CLOSE_PACKING} of hard spheres")
    b = np.asarray(box, dtype=np.float64).reshape(-1)
    if b.size != 3 or not np.all(np.isfinite(b)) or np.any(b <= 0):
        raise ValueError(f"box lengths {tuple(float(x) for x in b)} must be three finite lengths > 0")
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature {temperature:g} must be finite and >= 0")
    return b


def gas_in_box(n: int, packing_fraction: float, box, *, periodic: bool = True, temperature: float = 1.0,
               seed: int = 0, mass: float = 1.0) -> GasState:
    """N equal spheres (radius from :func:`sphere_radius`, mass ``mass``) in the box (3,) (lengths
    L_x, L_y, L_z; corner at the origin), Maxwell–Boltzmann velocities at ``temperature``.

    Up to the packing fraction random sequential insertion reaches quickly (0.30) the centres are
    placed at random; denser gases start from an fcc lattice fitted to the box (N of its sites
    picked at random), up to :data:`RANDOM_CLOSE_PACKING`. Deterministic for a given ``seed``.
    ValueError names the argument or says why the box cannot hold the spheres.
    """
    b = check_gas_args(n, packing_fraction, box, temperature)
    radius = sphere_radius(n, packing_fraction, b)
    thin = np.flatnonzero(b <= (4.0 if periodic else 2.0) * radius)
    if thin.size:
        a = int(thin[0])
        need = "longer than two diameters (periodic)" if periodic else "longer than a diameter"
        raise ValueError(f"box length {b[a]:g} on axis {'xyz'[a]} is too short for spheres of radius {radius:g}: "
                         f"it must be {need}; use more particles or a lower packing fraction")
    rng = np.random.default_rng(seed)
    if packing_fraction <= RANDOM_MAX[3]:
        pos = random_insertion(n, radius, b, periodic, packing_fraction, rng)
    else:
        pos = _fcc_start(n, radius, b, periodic, packing_fraction, rng)
    masses = np.full(n, float(mass))
    vel = maxwell_boltzmann_velocities(masses, temperature, 3, rng)
    return GasState(pos, vel, np.full(n, radius), masses, b, periodic)


def _fcc_start(n, radius, box, periodic, eta, rng) -> np.ndarray:
    """n sites (n, 3) of an fcc lattice stretched to the box, picked at random from its sites.

    The lattice is the even-parity points of an m_x × m_y × m_z grid (m_a even): spacing
    h_a = L_a / m_a in a periodic box (points at cell centres), (L_a − 2R) / (m_a − 1) between walls
    (extreme points on the walls' reach). Grid lines are added where the spacing is widest until
    there are n sites.
    """
    m = np.full(3, 2)

    def spacing(m):
        return box / m if periodic else (box - 2 * radius) / (m - 1)

    while np.prod(m) // 2 < n:
        m[int(np.argmax(spacing(m)))] += 2
    h = spacing(m)
    # nearest sites: one step on two axes (fcc neighbours) or two steps on one axis
    nearest = min(min(math.hypot(h[a], h[b]) for a in range(3) for b in range(a + 1, 3)), 2 * float(h.min()))
    if nearest < 2 * radius * (1 + 10 * OVERLAP_TOL):
        raise ValueError(f"packing fraction {eta:g} is too dense for a lattice start of {n} spheres in this box "
                         f"(nearest lattice sites {nearest:.4g} apart, diameter {2 * radius:.4g}); use a box closer "
                         f"to a cube, another N or a lower packing fraction")
    grid = np.stack(np.meshgrid(*(np.arange(k) for k in m), indexing="ij"), -1).reshape(-1, 3)
    grid = grid[grid.sum(axis=1) % 2 == 0]
    sites = (grid + 0.5) * h if periodic else radius + grid * h
    return sites[np.sort(rng.choice(len(sites), n, replace=False))]


def frame_positions(state: GasState, times, *, engine: str = "auto", progress=None, stop=None,
                    chunk_seconds: float = 0.1) -> tuple[np.ndarray, dict]:
    """Positions (S, N, 3) at the increasing times (S,) (≥ the state's time), from one run of the engine.

    ``engine``: "auto" (compiled when numba is there, else the numpy reference), "numba" or "numpy".
    ``progress(fraction)`` is called between chunks of about ``chunk_seconds`` of events;
    ``stop()`` returning True ends the run with :class:`pem_physics.errors.Interrupted`.
    Periodic boxes: positions wrapped into [0, L). Returns (positions, info) with info
    ``engine``, ``collisions``, ``wall_events``, ``wall_time`` (s), ``kinetic_energy`` (start, end).
    """
    from ..gas import edmd

    t = np.asarray(times, dtype=np.float64).reshape(-1)
    if t.size == 0 or not np.all(np.isfinite(t)) or t[0] < state.time or np.any(np.diff(t) < 0):
        raise ValueError(f"times must be a non-empty increasing sequence from the state's time {state.time:g}")
    eng = edmd.make_engine(state, engine=engine)
    out = np.empty((t.size, state.n, state.d))
    k0 = eng.kinetic_energy()
    events = 1000
    wall0 = _time.perf_counter()
    span = max(t[-1] - state.time, 1e-300)
    for s, ts in enumerate(t):
        while True:
            if stop is not None and stop():
                raise Interrupted(f"gas run stopped at t = {eng.time:g} of {t[-1]:g}")
            c0 = _time.perf_counter()
            done = eng.advance(float(ts), events)
            if done:
                break
            # size the next chunk to about chunk_seconds from this one's speed
            rate = events / max(_time.perf_counter() - c0, 1e-6)
            events = int(min(max(rate * chunk_seconds, 100), 50_000_000))
            if progress is not None:
                progress((eng.time - state.time) / span)
        x = eng.positions_at(float(ts))
        if state.periodic:
            x = x - state.box * np.floor(x / state.box)
        out[s] = x
        if progress is not None:
            progress((ts - state.time) / span)
    info = {"engine": eng.name, "kernels": getattr(eng, "kernels", None),
            "collisions": int(eng.n_collisions), "wall_events": int(eng.n_wall_events),
            "wall_time": _time.perf_counter() - wall0, "kinetic_energy": (k0, eng.kinetic_energy())}
    return out, info
