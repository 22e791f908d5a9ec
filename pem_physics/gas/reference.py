"""The numpy event-driven reference for hard disks and spheres: the definition, for small N.

Every event the next one is searched over all pairs (O(N²) a event, vectorised) and all walls.
Each particle carries its own time t_i: its position at time t is x_i + v_i (t − t_i), and only
the particles of an event are moved, as the compiled engine (:mod:`.edmd`) does, so that the two
do the same arithmetic and agree on the collision sequence.

Events (shapes: N particles, d dimensions; units as in :mod:`.state`):

- pair i, j with r = r_i − r_j (minimum image in a periodic box, re-taken at least every
  (L/2 − σ_max) / (2 max |v|), so that the image that comes into contact is never missed), v = v_i − v_j, σ = R_i + R_j,
  b = r·v < 0: contact after t = (−b − √(b² − v²(r² − σ²)))/v², evaluated as the equal
  c / (−b + √(b² − v² c)) with c = r² − σ² (no cancellation when the pair is near contact;
  a pair overlapping by round-off, c < 0, collides at once);
- collision: impulse J = −(1 + e) μ (v·r / r·r) r on i (−J on j), μ = m_i m_j / (m_i + m_j);
  the virial gains J·r = m_i Δv_i · r_ij;
- hard wall 2a (x_a = 0) or 2a + 1 (x_a = L_a): the centre reaches R_i or L_a − R_i, v_a → −v_a
  (a mirror), the wall takes 2 m |v_a|;
- sphere or cylinder container (wall 2d, :class:`.state.Container`): with y the centre's offset from
  the sphere's centre (from the cylinder's axis, the axis component dropped) and u its velocity (the
  same components), the exit root of |y + u t|² = (R_w − R_i)² (:func:`exit_time`); the velocity is
  mirrored about the normal y/|y| at contact, the wall takes 2 m |v·n|. No gravity with these;
- plane (n, h) (walls 2d + …): the gap n·x − h − R_i closes at −n·v (a quadratic reach under gravity),
  mirror about n;
- gravity g (d,) (hard walls only): every particle flies on a parabola x + v h + g h²/2, so relative
  motion is still straight and the pair formula holds with r, v taken at the search time; a wall
  is reached at the first root of a quadratic (:func:`reach_time`);
- TC model (``tc`` > 0): a collision in which either particle collided less than ``tc`` ago is
  elastic (e = 1), the guard against inelastic collapse (:func:`.state.default_tc`).
"""

from __future__ import annotations

import math
import time as _time

import numpy as np

from .state import EventLog, GasRecords, GasRun, GasState, check_gravity, check_run_args, default_tc, record_times


def pair_time(r, v, sigma) -> float:
    """Time to contact (≥ 0) of a pair with separation r (d,), relative velocity v (d,), contact distance
    sigma; inf when they do not meet. Scalar version of the formula in the module docstring."""
    b = float(np.dot(r, v))
    if b >= 0:
        return math.inf
    a = float(np.dot(v, v))
    c = float(np.dot(r, r)) - sigma * sigma
    disc = b * b - a * c
    if disc < 0:
        return math.inf
    return max(c / (-b + math.sqrt(disc)), 0.0)


def reach_time(h, u, a) -> np.ndarray:
    """Times ≥ 0 (arrays broadcast together) for a coordinate moving at u with acceleration a, both counted
    towards a boundary h ≥ 0 ahead (negative h, round-off past it, counts as 0), to reach it; inf if never.
    The root is taken in the form without cancellation, as the compiled engine does."""
    h = np.maximum(np.asarray(h, dtype=np.float64), 0.0)
    u, a = np.broadcast_arrays(np.asarray(u, dtype=np.float64), np.asarray(a, dtype=np.float64))
    h = np.broadcast_to(h, u.shape)
    out = np.full(u.shape, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.sqrt(u * u + 2.0 * a * h)
        pos = a > 0
        out = np.where(pos & (u > 0), 2.0 * h / (u + s), out)
        out = np.where(pos & (u <= 0), (s - u) / a, out)
        disc = u * u + 2.0 * a * h
        neg = (a < 0) & (u > 0) & (disc >= 0)
        out = np.where(neg, 2.0 * h / (u + np.sqrt(np.maximum(disc, 0.0))), out)
        out = np.where((a == 0) & (u > 0), h / u, out)
    return out


def _dot(a, b) -> float:
    """a · b summed left to right, as the compiled engine does (np.dot may sum in another order)."""
    out = 0.0
    for k in range(len(a)):
        out += float(a[k]) * float(b[k])
    return out


def exit_time(y, u, rho) -> np.ndarray:
    """Times ≥ 0 (N,) for centres at y (N, k) relative to a sphere's centre (the cylinder's axis, the axis
    component left out), moving at u (N, k), to reach the sphere |y| = rho (N,) from inside: the larger
    root of |y + u t|² = rho², taken without cancellation; 0 for one a hair outside moving out, inf at rest.
    The same arithmetic as the compiled engine."""
    a = np.sum(u * u, axis=1)
    b = np.sum(y * u, axis=1)
    cg = np.sum(y * y, axis=1) - rho * rho
    with np.errstate(divide="ignore", invalid="ignore"):
        sq = np.sqrt(np.maximum(b * b - a * cg, 0.0))
        out = np.where(b > 0.0, -cg / (b + sq), (sq - b) / a)
    out = np.where((b > 0.0) & (cg >= 0.0), 0.0, out)
    out = np.where(a > 0.0, np.maximum(out, 0.0), np.inf)
    return out


class ReferenceEngine:
    """Event-driven hard spheres in numpy; advance in chunks with :meth:`advance`, read with :meth:`snapshot`."""

    name = "numpy"

    def __init__(self, state: GasState, restitution: float = 1.0, log: bool = False, *, gravity=None,
                 tc: float = 0.0):
        self.x = state.positions.copy()      # (N, d) position at the particle's own time
        self.tp = np.full(state.n, state.time)  # (N,) each particle's own time
        self.v = state.velocities.copy()     # (N, d) velocity at the particle's own time
        self.gravity = check_gravity(state, gravity)
        self.grav = bool(np.any(self.gravity != 0))
        self.tc = float(tc)
        self.tlast = np.full(state.n, -np.inf)
        self.tc_elastic = 0
        self.radii, self.masses, self.box = state.radii.copy(), state.masses.copy(), state.box.copy()
        self.periodic, self.e, self.time = state.periodic, float(restitution), state.time
        self.n_collisions = self.n_wall_events = 0
        self.virial = 0.0
        self.container = state.container
        self.wall_impulse = np.zeros(state.container.n_walls(state.d))
        self._faces = state.container.face_active(state.d)
        self.keep_log = log
        self._log: tuple[list, list, list] = ([], [], [])
        n = state.n
        self._sigma = self.radii[:, None] + self.radii[None, :]
        self._upper = np.arange(n)[:, None] < np.arange(n)[None, :]

    def positions_at(self, t: float) -> np.ndarray:
        """Positions (N, d) at time t (not wrapped), without touching the engine."""
        h = (t - self.tp)[:, None]
        return self.x + (self.v + 0.5 * self.gravity * h) * h if self.grav else self.x + self.v * h

    def velocities_at(self, t: float) -> np.ndarray:
        """Velocities (N, d) at time t (a copy)."""
        return self.v + self.gravity * (t - self.tp)[:, None] if self.grav else self.v.copy()

    def _separation(self, r_i, r_j):
        dr = r_i - r_j
        if self.periodic:
            dr = dr - self.box * np.floor(dr / self.box + 0.5)
        return dr

    def next_event(self):
        """(time, i, j) of the next event from the current time; j < 0 for wall −1 − j; (inf, −1, −1) if none."""
        t = self.time
        r = self.positions_at(t)
        v = self.velocities_at(t)
        dr = self._separation(r[:, None, :], r[None, :, :])
        dv = v[:, None, :] - v[None, :, :]
        b = np.sum(dr * dv, axis=-1)
        a = np.sum(dv * dv, axis=-1)
        c = np.sum(dr * dr, axis=-1) - self._sigma * self._sigma
        disc = b * b - a * c
        ok = (b < 0) & (disc >= 0) & self._upper
        dt = np.full(b.shape, np.inf)
        dt[ok] = np.maximum(c[ok] / (-b[ok] + np.sqrt(disc[ok])), 0.0)
        k = int(np.argmin(dt))
        best, bi, bj = float(dt.flat[k]), k // len(r), k % len(r)
        if not self.periodic:
            with np.errstate(divide="ignore", invalid="ignore"):
                up = np.where(v > 0, (self.box - self.radii[:, None] - r) / v, np.inf)
                down = np.where(v < 0, (self.radii[:, None] - r) / v, np.inf)
            if self.grav:
                ax = self.gravity != 0
                up[:, ax] = reach_time((self.box - self.radii[:, None] - r)[:, ax], v[:, ax], self.gravity[ax])
                down[:, ax] = reach_time((r - self.radii[:, None])[:, ax], -v[:, ax], -self.gravity[ax])
            walls = np.maximum(np.stack([down, up], axis=-1), 0.0)  # (N, d, 2): wall 2a + side
            walls[:, ~self._faces, :] = np.inf
            walls = np.concatenate([walls.reshape(len(r), -1), self._container_times(r, v)], axis=1)
            k = int(np.argmin(walls))
            if walls.flat[k] < best:
                i, rest = divmod(k, walls.shape[1])
                best, bi, bj = float(walls.flat[k]), i, -1 - rest
        if not math.isfinite(best):
            return math.inf, -1, -1
        return t + best, bi, bj

    def _container_times(self, r, v) -> np.ndarray:
        """(N, W − 2d) times from now to the curved wall (if any) and each plane, positions r, velocities v (N, d)."""
        cont, d = self.container, self.box.size
        cols = []
        if cont.curved:
            y = r - cont.centre
            u = v.copy()
            if cont.kind == "cylinder":
                y[:, cont.axis] = 0.0
                u[:, cont.axis] = 0.0
            cols.append(exit_time(y, u, cont.radius - self.radii))
        for row in cont.planes:
            gap = r @ row[:d] - row[d] - self.radii
            w = v @ row[:d]
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(w < 0.0, np.maximum(gap, 0.0) / -w, np.inf)
            if self.grav:
                t = reach_time(gap, -w, -float(self.gravity @ row[:d]))
            cols.append(t)
        return np.stack(cols, axis=1) if cols else np.zeros((len(r), 0))

    def horizon(self) -> float:
        """How far ahead the minimum images stay the only ones in reach (inf between hard walls).

        In that time no pair's separation changes by more than L/2 − σ_max, so an image that comes
        into contact is within L/2 now: the minimum image. Past it the search is repeated."""
        if not self.periodic:
            return math.inf
        v_rel = 2.0 * float(np.sqrt(np.max(np.sum(self.v * self.v, axis=1))))
        room = 0.5 * float(self.box.min()) - 2.0 * float(self.radii.max())
        return room / v_rel if v_rel > 0 else math.inf

    def _move(self, i: int, t: float) -> None:
        h = t - self.tp[i]
        if self.grav:
            self.x[i] += (self.v[i] + 0.5 * self.gravity * h) * h
            self.v[i] += self.gravity * h
        else:
            self.x[i] += self.v[i] * h
        self.tp[i] = t

    def apply(self, t: float, i: int, j: int) -> None:
        """Carry out the event (t, i, j) found by :meth:`next_event`."""
        self.time = t
        self._move(i, t)
        if j >= 0:
            self._move(j, t)
            dr = self._separation(self.x[i], self.x[j])
            dv = self.v[i] - self.v[j]
            mu = self.masses[i] * self.masses[j] / (self.masses[i] + self.masses[j])
            e = self.e
            if self.tc > 0:
                if t - self.tlast[i] < self.tc or t - self.tlast[j] < self.tc:
                    e = 1.0
                    self.tc_elastic += 1
                self.tlast[i] = self.tlast[j] = t
            s = -(1.0 + e) * mu * np.dot(dv, dr) / np.dot(dr, dr)
            impulse = s * dr
            self.v[i] += impulse / self.masses[i]
            self.v[j] -= impulse / self.masses[j]
            self.virial += float(np.dot(impulse, dr))
            self.n_collisions += 1
        else:
            wall = -1 - j
            d = self.box.size
            if wall < 2 * d:
                a = wall // 2
                self.wall_impulse[wall] += 2.0 * self.masses[i] * abs(self.v[i, a])
                self.v[i, a] = -self.v[i, a]
            else:
                # mirror about the wall's normal at the contact point (elastic, like the box faces)
                cont = self.container
                if cont.curved and wall == 2 * d:
                    y = self.x[i] - cont.centre
                    if cont.kind == "cylinder":
                        y[cont.axis] = 0.0
                    nrm = y / math.sqrt(_dot(y, y))
                else:
                    nrm = cont.planes[wall - 2 * d - int(cont.curved), :d]
                vn = _dot(self.v[i], nrm)
                self.wall_impulse[wall] += 2.0 * self.masses[i] * abs(vn)
                self.v[i] -= 2.0 * vn * nrm
            self.n_wall_events += 1
        if self.keep_log:
            for lst, val in zip(self._log, (t, i, j)):
                lst.append(val)

    def advance(self, t_stop: float, max_events: int) -> bool:
        """Run events up to ``t_stop`` (at most ``max_events``); True when the time reached ``t_stop``."""
        for _ in range(max_events):
            t, i, j = self.next_event()
            reach = self.time + self.horizon()
            while t > reach and reach < t_stop:
                self.time = reach  # nothing moves (positions are lazy): only the search starts again
                t, i, j = self.next_event()
                reach = self.time + self.horizon()
            if t > t_stop:
                self.time = t_stop
                return True
            self.apply(t, i, j)
        return False

    def snapshot(self) -> GasState:
        """The state at the current time (positions wrapped into a periodic box)."""
        return GasState(self.positions_at(self.time), self.velocities_at(self.time), self.radii, self.masses,
                        self.box, self.periodic, self.time, validate=False, container=self.container)

    def kinetic_energy(self) -> float:
        v = self.velocities_at(self.time)
        return 0.5 * float(np.sum(self.masses * np.sum(v ** 2, axis=1)))

    def extra_info(self) -> dict:
        return {"tc_elastic": self.tc_elastic}

    def event_log(self) -> EventLog:
        t, i, j = self._log
        return EventLog(np.array(t, dtype=np.float64), np.array(i, dtype=np.int64), np.array(j, dtype=np.int64))


def drive(engine, state: GasState, t_end: float, *, blocks: int = 1, chunk_events: int = 100_000,
          progress=None, record_interval: float | None = None) -> GasRun:
    """Run ``engine`` (started from ``state``) to ``t_end`` in chunks of at most ``chunk_events`` events.

    ``blocks`` equal time blocks record their own virial and collision counts. With ``record_interval``
    the gas is recorded at ``state.time`` + k Δ (:func:`.state.record_times`) into ``run.records``:
    the engine stops at each record time and the positions and velocities there are read from its
    lazy per-particle state without moving anything, so the event sequence (and every number of the
    compiled engine) is the same whatever the interval. ``progress(t)`` is called after each chunk.
    Ctrl-C (KeyboardInterrupt) between chunks stops the run and returns the valid partial result
    (``complete`` False, ``t_end`` the time reached, the records up to there).
    """
    t0 = state.time
    edges = t0 + (t_end - t0) * np.arange(blocks + 1) / blocks
    edges[-1] = t_end
    rec_t = record_times(t0, t_end, record_interval) if record_interval is not None else np.zeros(0)
    # every stop: (time, kind) with kind 0 a record, 1 a block's end; a record at a block's end comes first
    stops = sorted([(float(t), 0) for t in rec_t] + [(float(t), 1) for t in edges[1:]])
    b_vir, b_coll, b_kin, b_wall, reached = [], [], [], [], [t0]
    recs: dict[str, list] = {k: [] for k in ("times", "positions", "velocities", "collisions", "virial",
                                            "kinetic", "potential")}
    complete = True
    wall0 = _time.perf_counter()
    vir0, coll0 = engine.virial, engine.n_collisions
    wall0_imp = engine.wall_impulse.copy()
    try:
        for t_stop, kind in stops:
            while not engine.advance(t_stop, chunk_events):
                if progress is not None:
                    progress(engine.time)
            if kind == 0:
                _record(engine, state, t_stop, recs)
            else:
                b_vir.append(engine.virial - vir0)
                b_coll.append(engine.n_collisions - coll0)
                b_kin.append(engine.kinetic_energy())
                b_wall.append(engine.wall_impulse - wall0_imp)
                reached.append(engine.time)
                vir0, coll0 = engine.virial, engine.n_collisions
                wall0_imp = engine.wall_impulse.copy()
            if progress is not None:
                progress(engine.time)
    except KeyboardInterrupt:
        # each chunk leaves the engine consistent, so the events so far make a valid shorter run
        complete = False
        if engine.time > reached[-1]:
            b_vir.append(engine.virial - vir0)
            b_coll.append(engine.n_collisions - coll0)
            b_kin.append(engine.kinetic_energy())
            b_wall.append(engine.wall_impulse - wall0_imp)
            reached.append(engine.time)
    wall = _time.perf_counter() - wall0
    info = {"engine": engine.name, "wall_time": wall, "events": engine.n_collisions + engine.n_wall_events}
    info.update(getattr(engine, "extra_info", dict)())
    records = None
    if record_interval is not None:
        n, d = state.n, state.d
        records = GasRecords(
            times=np.array(recs["times"], dtype=np.float64),
            positions=np.array(recs["positions"], dtype=np.float64).reshape(-1, n, d),
            velocities=np.array(recs["velocities"], dtype=np.float64).reshape(-1, n, d),
            collisions=np.array(recs["collisions"], dtype=np.int64),
            virial=np.array(recs["virial"], dtype=np.float64), kinetic=np.array(recs["kinetic"], dtype=np.float64),
            potential=np.array(recs["potential"], dtype=np.float64))
    return GasRun(state=engine.snapshot(), t_start=t0, t_end=engine.time, n_collisions=engine.n_collisions,
                  n_wall_events=engine.n_wall_events, virial=engine.virial, wall_impulse=engine.wall_impulse.copy(),
                  block_times=np.array(reached), block_virial=np.array(b_vir, dtype=np.float64),
                  block_collisions=np.array(b_coll, dtype=np.int64), block_kinetic=np.array(b_kin, dtype=np.float64),
                  log=engine.event_log() if engine.keep_log else None, complete=complete, info=info,
                  records=records, gravity=np.array(getattr(engine, "gravity", np.zeros(state.d)), dtype=np.float64),
                  restitution=float(getattr(engine, "e", 1.0)), tc=float(getattr(engine, "tc", 0.0)),
                  block_wall_impulse=np.array(b_wall, dtype=np.float64).reshape(len(b_wall), -1))


def _record(engine, state: GasState, t: float, recs: dict) -> None:
    """Append the gas at time t (the engine stopped there) to the record lists."""
    x = engine.positions_at(t)
    if state.periodic:
        x = x - state.box * np.floor(x / state.box)
    v = engine.velocities_at(t)
    g = getattr(engine, "gravity", None)
    recs["times"].append(t)
    recs["positions"].append(x)
    recs["velocities"].append(v)
    recs["collisions"].append(engine.n_collisions)
    recs["virial"].append(engine.virial)
    recs["kinetic"].append(0.5 * float(np.sum(state.masses * np.sum(v * v, axis=1))))
    recs["potential"].append(0.0 if g is None else 0.0 - float(np.sum(state.masses * (x @ g))))


def run_reference(state: GasState, t_end: float, *, restitution: float = 1.0, blocks: int = 1, log: bool = True,
                  progress=None, gravity=None, tc: float | None = None,
                  record_interval: float | None = None) -> GasRun:
    """Run the numpy reference from ``state`` to ``t_end`` (see :func:`drive`); the event log by default.
    ``gravity`` and ``tc`` as in :func:`.edmd.run`."""
    check_run_args(state, t_end, restitution, blocks)
    g = check_gravity(state, gravity)
    tc = default_tc(state, restitution, g, tc)
    return drive(ReferenceEngine(state, restitution, log, gravity=g, tc=tc), state, t_end, blocks=blocks,
                 chunk_events=1000, progress=progress, record_interval=record_interval)
