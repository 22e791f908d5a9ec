"""The compiled event-driven engine (numba) for hard disks and spheres: cell lists, one event per particle.

The same events and arithmetic as :mod:`.reference` (the definition and the fallback without
numba), organised for large N:

- cell lists: each axis is cut into nc ≥ 3 cells of width ≥ the largest diameter (an axis too
  short for 3 cells is one cell), so a particle can only touch particles in its own and the
  3^d − 1 surrounding cells; cells are doubly linked lists (``head``, ``nxt``, ``prv``);
- one scheduled event per particle: the earliest of its collisions with those neighbours, its
  hard-wall hits and its next cell crossing, kept in an indexed 4-ary min-heap (``heap``, ``hpos``,
  with each slot's time beside it in ``hkey``) keyed by event time, so rescheduling a particle is
  one sift;
- lazy invalidation: a collision event stores the partner's collision counter; when it reaches
  the top of the heap with a changed counter, the particle is rescheduled instead (a collision of
  i with j is found by whichever of the two was rescheduled last, so none is missed);
- lazy positions: each particle carries its own time t_i and its position x_i at t_i; only the
  particles of an event are moved. A cell crossing changes only the cell (and, across a periodic
  boundary, shifts x_i by the box length), so it does not touch the trajectory;
- memory: one 64-byte row per particle (x, v, t_i, R_i) starting a cache line, particles stored in
  Z order of their starting cells (``perm``; everything read from outside is in the state's
  order), so that a particle's neighbours are mostly near it in memory;
- the case (d, gravity, periodic or hard walls) comes in :func:`spec_array`: d is part of the kernels' argument
  types (each d compiled apart, its loops over axes unrolled), gravity and a periodic box are read at run time
  (one compile serves every case of a d; a branch taken the same way at every event costs nothing measurable);
- containers (:class:`.state.Container`: a sphere, a cylinder, extra planes) are runtime values
  (:func:`container_arrays`) read only in the hard-wall cases: a wall hit is one more candidate of the
  particle's event (the exit root of a quadratic for the sphere and cylinder, a linear or quadratic
  reach for a plane), wall ids 2d, 2d + 1, … after the box faces; the cell grid still spans the box
  (the container's bounding box). Event codes: ≥ 0 a partner, −1 − w wall w < W, then the cell
  crossings −1 − W − (2a + dir).

Measured against neighbour lists with a shell (the C peer's method: a list of the particles
within σ + shell, rebuilt when a particle has moved shell/2): at N = 4000, packing fraction 0.25
it ran 0.6–0.7× as fast as these cell lists (2.1·10⁶ rebuilds, each a 27-cell search, against
0.94·10⁶ cell crossings, each a 9-cell search, per 1.4·10⁶ collisions), so it is not used.

One call of the kernel runs at most ``max_events`` heap pops without returning to Python;
:func:`run` calls it in chunks sized to ~0.2 s for progress and Ctrl-C (see
:func:`.reference.drive`). No fastmath: results are IEEE-exact and repeatable.

Shapes: N particles, d = 2 or 3, C cells, K = 3^d neighbour offsets (fewer on one-cell axes).
"""

from __future__ import annotations

import time as _time
import warnings

import numpy as np

from .. import jit
from ..jit import unavailable_reason
from .reference import ReferenceEngine, drive
from .state import EventLog, GasRun, GasState, check_gravity, check_run_args, default_tc  # noqa: F401 (re-exported)

#: Set False to force the numpy reference (tests compare both).
ENABLED = True

#: Kernel return codes: reached t_stop, ran max_events, event log full.
REACHED, MAX_EVENTS, LOG_FULL = 0, 1, 2


def available() -> bool:
    """Whether the compiled engine runs: numba installed (not imported by this check), its 3D cases then on
    kernels built ahead of time where a build has them (:func:`_aot_build`: no numba import)."""
    return ENABLED and jit.installed()


def _kernels():
    """The JIT kernels (:mod:`.edmd_kernels`: imports numba, compiles or loads the case from numba's cache)."""
    from . import edmd_kernels

    return edmd_kernels


#: The cases the kernels run (:func:`spec_array`): dimensions, gravity, periodic box (gravity needs hard walls).
CASES = tuple((d, g, p) for d in (2, 3) for g in (False, True) for p in (False, True) if not (g and p))


def compiled_case(d: int) -> str:
    """``3d``, ``2d``: what the kernels are compiled for (the number of dimensions), the suffix of their entries in
    a build made ahead of time (the 3D ones: :mod:`..engine.backends.prebuild`)."""
    return f"{d}d"


def _aot_build(case: str):
    """The build made ahead of time when it has this case's gas kernels, else None (numba's JIT then)."""
    from .. import aot

    build = aot.load()
    return build if build is not None and f"gas_advance_{case}" in build.specs else None



def spatial_order(x: np.ndarray, width: np.ndarray, nc: np.ndarray) -> np.ndarray:
    """Indices (N,) that sort positions x (N, d) by the Z-order (Morton) code of their cells (widths
    (d,), counts (d,)); ties keep the given order."""
    n, d = x.shape
    c = np.clip(np.floor(x / width).astype(np.int64), 0, nc - 1).astype(np.uint64)
    bits = 21 if d == 3 else 32
    code = np.zeros(n, np.uint64)
    for b in range(bits):
        for k in range(d):
            code |= ((c[:, k] >> np.uint64(b)) & np.uint64(1)) << np.uint64(d * b + (d - 1 - k))
    return np.argsort(code, kind="stable")


def aligned_zeros(shape: tuple[int, int]) -> np.ndarray:
    """Zeros (float64) whose first element starts a 64-byte cache line (numpy's large blocks start 16
    bytes past one), so that a row of 8 is one line, not two."""
    size = int(np.prod(shape))
    buf = np.zeros(size + 8)
    off = (-buf.ctypes.data % 64) // 8
    return buf[off:off + size].reshape(shape)


def spec_array(d: int, gravity: bool, periodic: bool) -> np.ndarray:
    """Zeros whose number of dimensions, 1 + (d == 3), and length, 1 + gravity + 2 periodic, tell the kernels the
    case they run (:func:`.edmd_kernels._flags`): numba compiles one version per d (a type), without the tests on
    d in the inner loops; gravity and the walls are read from the length at run time."""
    return np.zeros((1 + bool(gravity) + 2 * bool(periodic),) + (1,) * (d == 3))


def container_arrays(container, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The container as the kernels read it: ``cont`` int64 [kind (0 box, 1 sphere, 2 cylinder), cylinder
    axis (−1 otherwise), planes P, walls W], and ``wpar`` (1 + P, 4): row 0 the centre (3, zero-padded) and
    R_w, then each plane's normal (3, zero-padded) and offset h. Runtime values, not types: every
    container runs in the one compiled hard-wall case."""
    from .state import KIND_CODE

    npl = len(container.planes)
    cont = np.array([KIND_CODE[container.kind], container.axis if container.kind == "cylinder" else -1, npl,
                     container.n_walls(d)], np.int64)
    wpar = np.zeros((1 + npl, 4))
    if container.curved:
        wpar[0, :d] = container.centre
        wpar[0, 3] = container.radius
    if npl:
        wpar[1:, :d] = container.planes[:, :d]
        wpar[1:, 3] = container.planes[:, d]
    return cont, wpar


def cell_grid(box: np.ndarray, sigma_max: float, periodic: bool) -> tuple[np.ndarray, np.ndarray]:
    """Cells per axis (d,) and their widths (d,): width ≥ the largest diameter (with a margin for
    round-off), and in a periodic box at least 3 cells or a single one (so that the 3^d
    neighbour cells are distinct)."""
    nc = np.floor(box / (sigma_max * (1.0 + 1e-9))).astype(np.int64)
    nc = np.maximum(nc, 1)
    if periodic:
        nc[nc < 3] = 1
    return nc, box / nc


class CompiledEngine:
    """The numba engine with the interface of :class:`.reference.ReferenceEngine` (advance, snapshot, …).

    ``gravity`` (d,) length / time² or None (needs a hard-wall box); ``tc`` the TC model's time (0: off)."""

    name = "numba"

    def __init__(self, state: GasState, restitution: float = 1.0, log: bool = False, log_capacity: int = 4096,
                 gravity=None, tc: float = 0.0):
        n, d = state.n, state.d
        self.d = d
        self.periodic = state.periodic
        self.e = float(restitution)
        self.gravity = check_gravity(state, gravity)
        self.grav = bool(np.any(self.gravity != 0.0))
        self.g3 = np.zeros(3)
        self.g3[:d] = self.gravity
        self.tc = float(tc)
        self.tlast = np.full(n, -np.inf)
        self.box = state.box.copy()
        self.rad, self.masses = state.radii.copy(), state.masses.copy()
        self.spec = spec_array(d, self.grav, self.periodic)
        self.nc, self.width = cell_grid(self.box, 2.0 * float(self.rad.max()), self.periodic)
        # particles are kept in Z order of their starting cells (perm: slot → the state's index), so that
        # neighbours in space are mostly neighbours in memory (cache lines shared, fewer misses at large N)
        self.perm = spatial_order(state.positions, self.width, self.nc)
        self.inv = np.empty(n, np.int64)
        self.inv[self.perm] = np.arange(n)
        # one cache line per particle: x (3), v (3), own time, radius (a 2D gas leaves x_2, v_2 at 0)
        self.P = aligned_zeros((n, 8))
        self.P[:, :d] = state.positions[self.perm]
        self.P[:, 3:3 + d] = state.velocities[self.perm]
        self.P[:, 6] = state.time
        self.P[:, 7] = state.radii[self.perm]
        self.m = state.masses[self.perm]
        self.acc = np.array([state.time, 0.0])
        self.container = state.container
        self.cont, self.wpar = container_arrays(state.container, d)
        self.wall_impulse = np.zeros(int(self.cont[3]))
        self.counts = np.zeros(6, np.int64)
        self.keep_log = log
        cap = log_capacity if log else 1
        self.log_t, self.log_i, self.log_j = np.zeros(cap), np.zeros(cap, np.int64), np.zeros(cap, np.int64)
        self.cnt = np.zeros(n, np.int64)
        self.col_cnt = np.zeros(n, np.int64)
        self.ev_t = np.zeros(n)
        self.ev_p = np.zeros(n, np.int64)
        self.heap = np.zeros(n, np.int64)
        self.hpos = np.zeros(n, np.int64)
        self.hkey = np.zeros(n)
        self.cell = np.full(n, -1, np.int64)
        self.nxt = np.full(n, -1, np.int64)
        self.prv = np.full(n, -1, np.int64)
        self.head = np.full(int(np.prod(self.nc)), -1, np.int64)
        self.ci = np.zeros((n, d), np.int64)
        self.col_t = np.zeros(n)
        self.col_p = np.zeros(n, np.int64)
        #: the kernels: built ahead of time for this case when a build has them (:mod:`pem_physics.aot`; no
        #: numba import, no compile), else numba's
        self.case = compiled_case(d)
        self.aot = _aot_build(self.case)
        self.kernels = "ahead-of-time" if self.aot is not None else "jit"
        args = self.build_call(state.time)
        if self.aot is not None:
            self.aot.call(f"gas_build_{self.case}", args)
        else:
            _kernels()._build(*args)

    def build_call(self, t: float) -> tuple:
        """The arguments of the cell-list and heap kernel (``_build``) at time t."""
        return (self.P, self.box, self.width, self.spec, self.ci, self.cell, self.nc, self.head,
                self.nxt, self.prv, self.ev_t, self.ev_p, self.col_t, self.col_p, self.col_cnt,
                self.cnt, self.heap, self.hpos, self.hkey, float(t), self.g3, self.cont, self.wpar)

    def advance_call(self, t_stop: float, max_events: int) -> tuple:
        """The arguments of the event-loop kernel (``_advance``): also what :mod:`..engine.backends.prebuild` compiles
        ahead of time from."""
        return (float(t_stop), int(max_events), self.e, self.spec, self.P, self.m, self.box,
                self.width, self.ci, self.cell, self.nc, self.head, self.nxt, self.prv,
                self.ev_t, self.ev_p, self.col_t, self.col_p, self.col_cnt, self.cnt, self.heap,
                self.hpos, self.hkey, self.acc, self.wall_impulse, self.counts, self.log_t, self.log_i,
                self.log_j, bool(self.keep_log), self.g3, self.tc, self.tlast, self.cont, self.wpar)

    @property
    def x(self) -> np.ndarray:
        """Positions (N, d) at each particle's own time (a copy, in the state's order)."""
        return self.P[self.inv, :self.d]

    @property
    def v(self) -> np.ndarray:
        """Velocities (N, d) at each particle's own time (a copy, in the state's order)."""
        return self.P[self.inv, 3:3 + self.d]

    @property
    def tp(self) -> np.ndarray:
        """Each particle's own time (N,) (a copy, in the state's order)."""
        return self.P[self.inv, 6]

    @property
    def time(self) -> float:
        return float(self.acc[0])

    @property
    def virial(self) -> float:
        return float(self.acc[1])

    @property
    def n_collisions(self) -> int:
        return int(self.counts[0])

    @property
    def n_wall_events(self) -> int:
        return int(self.counts[1])

    def advance(self, t_stop: float, max_events: int) -> bool:
        """Run heap events (collisions, wall hits, cell crossings, invalidated events) up to ``t_stop``,
        at most ``max_events`` of them; True when the time reached ``t_stop``. Stopping changes nothing but
        the clock, so where the stops fall (records, blocks, chunks) does not change the run."""
        while True:
            args = self.advance_call(t_stop, max_events)
            code = (self.aot.call(f"gas_advance_{self.case}", args) if self.aot is not None
                    else _kernels()._advance(*args))
            if code != LOG_FULL:
                return code == REACHED
            grow = len(self.log_t)
            self.log_t = np.concatenate([self.log_t, np.zeros(grow)])
            self.log_i = np.concatenate([self.log_i, np.zeros(grow, np.int64)])
            self.log_j = np.concatenate([self.log_j, np.zeros(grow, np.int64)])

    def positions_at(self, t: float) -> np.ndarray:
        """Positions (N, d) at time t (not wrapped into a periodic box), read without touching the engine."""
        h = (t - self.tp)[:, None]
        return self.x + (self.v + 0.5 * self.gravity * h) * h if self.grav else self.x + self.v * h

    def velocities_at(self, t: float) -> np.ndarray:
        """Velocities (N, d) at time t (a copy)."""
        return self.v + self.gravity * (t - self.tp)[:, None] if self.grav else self.v.copy()

    def snapshot(self) -> GasState:
        return GasState(self.positions_at(self.time), self.velocities_at(self.time), self.rad, self.masses, self.box,
                        self.periodic, self.time, validate=False, container=self.container)

    def kinetic_energy(self) -> float:
        v = self.velocities_at(self.time)
        return 0.5 * float(np.sum(self.masses * np.sum(v ** 2, axis=1)))

    def event_log(self) -> EventLog:
        """The logged events with the state's particle indices (i < j for a pair, j = −1 − wall for a wall)."""
        k = int(self.counts[4])
        i = self.perm[self.log_i[:k]]
        j = self.log_j[:k]
        pair = j >= 0
        jj = np.where(pair, self.perm[np.where(pair, j, 0)], j)
        return EventLog(self.log_t[:k].copy(), np.where(pair, np.minimum(i, jj), i),
                        np.where(pair, np.maximum(i, jj), jj))

    def extra_info(self) -> dict:
        return {"cell_crossings": int(self.counts[2]), "invalidated": int(self.counts[3]),
                "tc_elastic": int(self.counts[5]), "cells": self.nc.tolist()}


def make_engine(state: GasState, restitution: float = 1.0, log: bool = False, engine: str = "auto", *,
                gravity=None, tc: float = 0.0):
    """The compiled engine, or the numpy reference (``engine`` "numpy", or "auto" without numba)."""
    if engine not in ("auto", "numba", "numpy"):
        raise ValueError(f"engine = {engine!r} must be 'auto', 'numba' or 'numpy'")
    if engine == "numba" and not available():
        raise ValueError(f"engine = 'numba' was asked for but {unavailable_reason() or 'it is turned off'}")
    if engine == "numpy" or not available():
        return ReferenceEngine(state, restitution, log, gravity=gravity, tc=tc)
    return CompiledEngine(state, restitution, log, gravity=gravity, tc=tc)


def run(state: GasState, t_end: float, *, restitution: float = 1.0, blocks: int = 1, log: bool = False,
        engine: str = "auto", progress=None, chunk_seconds: float = 0.2, gravity=None, tc: float | None = None,
        record_interval: float | None = None) -> GasRun:
    """Run from ``state`` to ``t_end`` with the compiled engine (the numpy reference without numba,
    noted in ``info["warnings"]``); see :func:`.reference.drive` for ``blocks``, ``record_interval``,
    ``progress`` and Ctrl-C.

    ``gravity`` (d,): uniform acceleration (length / time²), parabolic flights; needs a hard-wall box.
    ``tc``: the TC model's time against inelastic collapse (see :func:`.state.default_tc`; None picks
    it, 0 turns it off: refused with e < 1, ValidationError naming ``tc``, before any event). Chunks are sized to
    about ``chunk_seconds`` of wall time from the speed of the previous chunk.
    """
    check_run_args(state, t_end, restitution, blocks)
    g = check_gravity(state, gravity)
    tc = default_tc(state, restitution, g, tc)
    eng = make_engine(state, restitution, log, engine, gravity=g, tc=tc)
    fallback = isinstance(eng, ReferenceEngine) and engine == "auto"
    if fallback:
        warnings.warn(f"hard-sphere gas: compiled engine unavailable ({unavailable_reason() or 'turned off'}); "
                      f"running the O(N²) numpy reference", RuntimeWarning, stacklevel=2)
    result = drive(_Paced(eng, chunk_seconds), state, t_end, blocks=blocks, chunk_events=1, progress=progress,
                   record_interval=record_interval)
    if fallback:
        result.info.setdefault("warnings", []).append(
            f"numba unavailable ({unavailable_reason() or 'turned off'}): ran the numpy reference")
    return result


class _Paced:
    """Wraps an engine so each advance() runs ~chunk_seconds of events (the count adapts to the speed)."""

    def __init__(self, engine, chunk_seconds: float):
        self._e = engine
        self._seconds = chunk_seconds
        self._events = 1000

    def __getattr__(self, name):
        return getattr(self._e, name)

    def advance(self, t_stop: float, max_events: int) -> bool:
        t0 = _time.perf_counter()
        done = self._e.advance(t_stop, self._events)
        dt = _time.perf_counter() - t0
        if not done:
            rate = self._events / max(dt, 1e-6)
            self._events = int(min(max(rate * self._seconds, 100), 50_000_000))
        return done
