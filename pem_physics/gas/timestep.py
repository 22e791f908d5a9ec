"""The seed's fixed-time-step method for hard disks and spheres: the comparison for the event-driven engine.

Every step of length ``dt`` (time units):

1. every particle flies straight for dt; one that has crossed a hard wall is mirrored back
   (x → 2 (L − R) − x or 2R − x, v_a → −v_a: exact for a particle alone);
2. all N(N − 1)/2 pairs are checked for overlap, |r| < σ (O(N²), minimum image in a periodic box),
   in index order; an overlapping pair that approaches (b = r·v < 0) is backtracked to its contact
   instant with the collision-time formula of theory §7, t = (−b − √(b² − v²(r² − σ²)))/v² (< 0
   here, the contact was in the past), given the impulse along the line of centres there
   (restitution e) and moved forward again by −t on its new velocities.

A pair that meets and separates within one step, or whose overlap is found already separating,
is a collision the method misses. The run counts these itself (``info["passes"]``): a pair that got
no impulse in a step is traced back straight on its final velocities, and counts when it was apart
at the step's start and came within σ (exact for straight flights; a particle that also hit a wall or
another particle in the step is traced on its final velocity). :func:`missed_collisions` matches the
run's collisions against an event-driven run's from the same start, by pair and contact time within
dt: the event-driven run's without a match are missed, the run's own without one spurious. The two
runs agree until the first unmatched collision (``first_mismatch``); after it they part ways (one
different collision changes every later one, and chaos amplifies even round-off), and both counts
then grow with the collisions that differ because of it: over long runs of many particles, read
``passes`` for the misses. No gravity: the parabolic flights and floor contacts are the
event-driven engine's.

Compiled with numba when available (one kernel call runs many steps), else the same code runs as
plain Python (slow: for small N only).
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass

import numpy as np

from ..jit import numba as _numba
from . import edmd
from .state import EventLog, GasRecords, GasRun, GasState, check_run_args, record_times

nb = _numba()


def _approach(x, v, i, j, box, periodic):
    """(b, v²) of the pair i, j: b = r·w and w·w with r = x_i − x_j (minimum image), w = v_i − v_j."""
    b = 0.0
    vv = 0.0
    for k in range(x.shape[1]):
        q = x[i, k] - x[j, k]
        if periodic:
            q -= box[k] * math.floor(q / box[k] + 0.5)
        w = v[i, k] - v[j, k]
        b += q * w
        vv += w * w
    return b, vv


if nb is not None:
    _approach = nb.njit(cache=True, error_model="numpy")(_approach)


def _steps(nsteps, dt, e, periodic, x, v, rad, m, box, acc, wall_imp, t0, keep, log_t, log_i, log_j):
    """nsteps steps in place: x (N, d), v (N, d); acc = [virial, collisions, wall events, steps done, log
    entries, passes]. With ``keep`` each collision's contact instant and pair (i < j) go to log_t, log_i, log_j
    (K,) while they have room; acc[4] counts them all, so a caller sees a log that overflowed (acc[4] > K).
    acc[5] counts the passes: pairs whose straight paths came within contact during a step and got no impulse."""
    n, d = x.shape
    for _ in range(nsteps):
        t_step = t0 + (acc[3] + 1.0) * dt  # the time at this step's end
        vmax2 = 0.0
        for i in range(n):
            s2 = 0.0
            for k in range(d):
                s2 += v[i, k] * v[i, k]
                x[i, k] += v[i, k] * dt
                if periodic:
                    if x[i, k] >= box[k]:
                        x[i, k] -= box[k]
                    elif x[i, k] < 0.0:
                        x[i, k] += box[k]
                else:
                    lo = rad[i]
                    hi = box[k] - rad[i]
                    if x[i, k] > hi:
                        x[i, k] = 2.0 * hi - x[i, k]
                        wall_imp[2 * k + 1] += 2.0 * m[i] * abs(v[i, k])
                        v[i, k] = -v[i, k]
                        acc[2] += 1.0
                    elif x[i, k] < lo:
                        x[i, k] = 2.0 * lo - x[i, k]
                        wall_imp[2 * k] += 2.0 * m[i] * abs(v[i, k])
                        v[i, k] = -v[i, k]
                        acc[2] += 1.0
            vmax2 = max(vmax2, s2)
        span = 2.0 * math.sqrt(vmax2) * dt  # the most a pair's separation changes in the step
        for i in range(n - 1):
            for j in range(i + 1, n):
                sig = rad[i] + rad[j]
                rr = 0.0
                for k in range(d):
                    q = x[i, k] - x[j, k]
                    if periodic:
                        q -= box[k] * math.floor(q / box[k] + 0.5)
                    rr += q * q
                if rr >= sig * sig:
                    if rr >= (sig + span) * (sig + span):  # farther apart, they were apart all the step
                        continue
                b, vv = _approach(x, v, i, j, box, periodic)
                if rr >= sig * sig or b >= 0.0:
                    # no impulse: a pass when, traced back straight on the final velocities, the pair was apart at
                    # the step's start and came within sig (the margin: a pair that collided at the last step's
                    # end starts this one at sig)
                    u = min(b / vv, dt) if b > 0.0 else 0.0  # how long before the step's end they were closest
                    tol = sig * sig * (1.0 - 1e-10)
                    if rr - 2.0 * u * b + u * u * vv < tol <= rr - 2.0 * dt * b + dt * dt * vv:
                        acc[5] += 1.0
                    continue
                tb = (-b - math.sqrt(b * b - vv * (rr - sig * sig))) / vv  # < 0: the contact instant
                rc = 0.0
                bc = 0.0
                for k in range(d):
                    q = x[i, k] - x[j, k]
                    if periodic:
                        q -= box[k] * math.floor(q / box[k] + 0.5)
                    w = v[i, k] - v[j, k]
                    q += w * tb  # separation at contact
                    rc += q * q
                    bc += q * w
                mu = m[i] * m[j] / (m[i] + m[j])
                s = -(1.0 + e) * mu * bc / rc
                vir = 0.0
                for k in range(d):
                    q = x[i, k] - x[j, k]
                    if periodic:
                        q -= box[k] * math.floor(q / box[k] + 0.5)
                    q += (v[i, k] - v[j, k]) * tb
                    jk = s * q
                    vir += jk * q
                    # back to contact, kick, forward again: x += v tb; v += Δv; x −= v' tb
                    x[i, k] += v[i, k] * tb
                    x[j, k] += v[j, k] * tb
                    v[i, k] += jk / m[i]
                    v[j, k] -= jk / m[j]
                    x[i, k] -= v[i, k] * tb
                    x[j, k] -= v[j, k] * tb
                acc[0] += vir
                acc[1] += 1.0
                if keep:
                    k = int(acc[4])
                    if k < log_t.size:
                        log_t[k] = t_step + tb
                        log_i[k] = i
                        log_j[k] = j
                    acc[4] += 1.0
        acc[3] += 1.0


if nb is not None:
    _steps = nb.njit(cache=True, error_model="numpy")(_steps)


def default_dt(state: GasState) -> float:
    """A step of 1/50 of the time to fly the smallest diameter at the rms speed (time units)."""
    u = math.sqrt(float(np.sum(state.velocities ** 2)) / state.n)
    sig = 2.0 * float(state.radii.min())
    return 0.02 * sig / u if u > 0 else 0.01 * sig


#: Entries of a fixed-step run's collision log at its start (it doubles when a chunk of steps overflows it).
LOG_START = 1024


class _Kernel:
    """The state of a fixed-step run between kernel calls: x, v (N, d), the sums ``acc`` (see :func:`_steps`),
    ``wall_imp`` (2d,) and, with ``keep``, the collision log (grown, the chunk redone, when a chunk overflows it)."""

    def __init__(self, state: GasState, h: float, restitution: float, keep: bool):
        self.state, self.h, self.e, self.keep = state, h, float(restitution), keep
        self.x, self.v = state.positions.copy(), state.velocities.copy()
        self.acc = np.zeros(6)
        self.wall_imp = np.zeros(2 * state.d)
        cap = LOG_START if keep else 0
        self.log_t, self.log_i, self.log_j = np.zeros(cap), np.zeros(cap, np.int64), np.zeros(cap, np.int64)

    def run(self, k: int) -> None:
        """k more steps."""
        s = self.state
        saved = (self.x.copy(), self.v.copy(), self.acc.copy(), self.wall_imp.copy()) if self.keep else None
        while True:
            _steps(k, self.h, self.e, s.periodic, self.x, self.v, s.radii, s.masses, s.box, self.acc, self.wall_imp,
                   s.time, self.keep, self.log_t, self.log_i, self.log_j)
            need = int(self.acc[4])
            if need <= self.log_t.size:
                return
            # the log overflowed in this chunk: redo it (the same arithmetic) with room for all its entries
            self.x[:], self.v[:], self.acc[:], self.wall_imp[:] = saved
            grow = 2 * need - self.log_t.size
            self.log_t = np.concatenate([self.log_t, np.zeros(grow)])
            self.log_i = np.concatenate([self.log_i, np.zeros(grow, np.int64)])
            self.log_j = np.concatenate([self.log_j, np.zeros(grow, np.int64)])

    def event_log(self) -> EventLog | None:
        if not self.keep:
            return None
        k = int(self.acc[4])
        return EventLog(self.log_t[:k].copy(), self.log_i[:k].copy(), self.log_j[:k].copy())

    def kinetic(self) -> float:
        return 0.5 * float(np.sum(self.state.masses * np.sum(self.v * self.v, axis=1)))


def run_timestep(state: GasState, t_end: float, dt: float | None = None, *, restitution: float = 1.0,
                 blocks: int = 1, record_interval: float | None = None, progress=None,
                 chunk_seconds: float = 0.2, log: bool = False) -> GasRun:
    """Run the fixed-step method from ``state`` to ``t_end`` (see the module docstring); a :class:`GasRun`.

    ``dt`` (time units; default :func:`default_dt`) is shortened so that the steps end exactly on
    ``t_end``, every block end and every record time (``record_interval`` is rounded to a whole
    number of steps). Ctrl-C between chunks keeps the valid partial run (``complete`` False).
    ``log``: keep ``run.log``, the pair collisions (no wall events) at their backtracked contact instants, in the
    order applied (:func:`missed_collisions` needs it). ``info``: ``"method": "timestep"``, the step, the steps done,
    ``"passes"``: the collisions the run itself saw it miss (see the module docstring).
    """
    check_run_args(state, t_end, restitution, blocks, event=False)
    if not state.container.trivial:
        raise ValueError(f"the timestep method has only the box (periodic or hard faces), not a "
                         f"{state.container.kind} container{' with planes' if len(state.container.planes) else ''}; "
                         f"use the event-driven engine")
    if dt is None:
        dt = default_dt(state)
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt = {dt!r} must be > 0 (time units)")
    t0 = state.time
    span = t_end - t0
    nsteps = max(1, math.ceil(span / dt * (1 - 1e-12))) if span > 0 else 0
    if record_interval is not None:
        rec_t = record_times(t0, t_end, record_interval)
        per = max(1, round(record_interval / dt))
        nsteps = max(nsteps, 1)
        nsteps = per * math.ceil(nsteps / per)
    h = span / nsteps if nsteps else 0.0
    # step indices where something is read: block ends and records (each record at its nearest step)
    block_steps = [round(nsteps * (k + 1) / blocks) for k in range(blocks)]
    rec_steps = [] if record_interval is None else [min(nsteps, round((t - t0) / h)) if h > 0 else 0 for t in rec_t]
    ker = _Kernel(state, h, restitution, log)
    acc = ker.acc
    recs: dict[str, list] = {k: [] for k in ("times", "positions", "velocities", "collisions", "virial",
                                            "kinetic", "potential")}
    b_vir, b_coll, b_kin, reached = [], [], [], [t0]
    stops = sorted({*block_steps, *rec_steps})
    done = 0
    per_chunk = 10
    complete = True
    wall0 = _time.perf_counter()
    vir0, coll0 = 0.0, 0
    try:
        for stop in stops:
            while done < stop:
                k = min(per_chunk, stop - done)
                c0 = _time.perf_counter()
                ker.run(k)
                done = int(acc[3])
                spent = _time.perf_counter() - c0
                per_chunk = int(min(max(k * chunk_seconds / max(spent, 1e-6), 1), 10_000_000))
                if progress is not None:
                    progress(t0 + done * h)
            t = t0 + done * h
            if stop in rec_steps:
                for key, val in zip(recs, (t, ker.x.copy(), ker.v.copy(), int(acc[1]), float(acc[0]), ker.kinetic(),
                                           0.0)):
                    recs[key].append(val)
            if stop in block_steps:
                b_vir.append(acc[0] - vir0)
                b_coll.append(int(acc[1]) - coll0)
                b_kin.append(ker.kinetic())
                reached.append(t)
                vir0, coll0 = float(acc[0]), int(acc[1])
    except KeyboardInterrupt:
        # a kernel call always finishes its steps, so x, v hold the state after `done` whole steps
        complete = False
        done = int(acc[3])
        if done and t0 + done * h > reached[-1]:
            b_vir.append(acc[0] - vir0)
            b_coll.append(int(acc[1]) - coll0)
            b_kin.append(ker.kinetic())
            reached.append(t0 + done * h)
    t_reached = t0 + done * h if done < nsteps else t_end
    n, d = state.n, state.d
    records = None
    if record_interval is not None:
        records = GasRecords(np.array(recs["times"], dtype=np.float64),
                             np.array(recs["positions"], dtype=np.float64).reshape(-1, n, d),
                             np.array(recs["velocities"], dtype=np.float64).reshape(-1, n, d),
                             np.array(recs["collisions"], dtype=np.int64), np.array(recs["virial"]),
                             np.array(recs["kinetic"]), np.array(recs["potential"]))
    info = {"engine": "numba" if nb is not None else "python", "method": "timestep", "dt": h, "steps": done,
            "wall_time": _time.perf_counter() - wall0, "events": int(acc[1] + acc[2]), "passes": int(acc[5])}
    final = GasState(ker.x, ker.v, state.radii, state.masses, state.box, state.periodic, t_reached, validate=False)
    return GasRun(state=final, t_start=t0, t_end=t_reached, n_collisions=int(acc[1]), n_wall_events=int(acc[2]),
                  virial=float(acc[0]), wall_impulse=ker.wall_imp, block_times=np.array(reached),
                  block_virial=np.array(b_vir, dtype=np.float64), block_collisions=np.array(b_coll, dtype=np.int64),
                  block_kinetic=np.array(b_kin, dtype=np.float64), complete=complete, info=info, records=records,
                  gravity=np.zeros(d), restitution=float(restitution), tc=0.0, log=ker.event_log())


@dataclass
class CollisionComparison:
    """A fixed-step run's pair collisions matched against an event-driven run's from the same start, over
    ``t_start`` … ``t_end`` (time units): a collision of one run is matched to one of the same pair in the other
    within ``window`` (the step dt), each used once.

    - ``missed``: the event-driven run's collisions left unmatched (the fixed step missed them);
    - ``spurious``: the fixed-step run's collisions left unmatched (it had them, the exact dynamics did not);
    - ``matched``: the pairs of collisions found in both; ``event_collisions`` = matched + missed,
      ``timestep_collisions`` = matched + spurious;
    - ``first_mismatch``: the contact time of the earliest unmatched collision of either run (None when all
      matched): the runs agree up to it, and after it they part ways;
    - ``complete``: False when the event-driven run was interrupted (``t_end`` is then where it stopped, and the
      fixed-step run's collisions after it are left out).
    """

    missed: int
    spurious: int
    matched: int
    event_collisions: int
    timestep_collisions: int
    first_mismatch: float | None
    t_start: float
    t_end: float
    window: float
    complete: bool = True


def _match_sorted(ka, ta, kb, tb, window, used_a, used_b):
    """Greedy matching of two lists sorted by (pair key, time): a and b are matched when their keys are equal and
    their times differ by at most ``window``; marks used_a, used_b (bool, in place). For each key this pairs the
    most events possible (both sorted, the earliest unmatched first)."""
    p = q = 0
    while p < ka.size and q < kb.size:
        if ka[p] < kb[q]:
            p += 1
        elif ka[p] > kb[q]:
            q += 1
        elif abs(ta[p] - tb[q]) <= window:
            used_a[p] = used_b[q] = True
            p += 1
            q += 1
        elif ta[p] < tb[q]:
            p += 1
        else:
            q += 1


if nb is not None:
    _match_sorted = nb.njit(cache=True)(_match_sorted)


def match_collisions(a: EventLog, b: EventLog, window: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Which pair collisions of ``a`` (K_a,) and ``b`` (K_b,) (wall events ignored) have a partner in the other: a
    collision of the same pair (i < j, particles 0 … n − 1) within ``window`` in time, each used once. Two bool
    arrays over a's and b's pair collisions (in the order of ``a.collisions()``, ``b.collisions()``)."""
    a, b = a.collisions(), b.collisions()
    ka = a.i.astype(np.int64) * n + a.j
    kb = b.i.astype(np.int64) * n + b.j
    oa, ob = np.lexsort((a.time, ka)), np.lexsort((b.time, kb))
    ua, ub = np.zeros(len(a), bool), np.zeros(len(b), bool)
    _match_sorted(ka[oa], np.ascontiguousarray(a.time[oa]), kb[ob], np.ascontiguousarray(b.time[ob]), float(window),
                  ua, ub)
    used_a, used_b = np.empty_like(ua), np.empty_like(ub)
    used_a[oa], used_b[ob] = ua, ub
    return used_a, used_b


def missed_collisions(state: GasState, timestep_run: GasRun, *, engine: str = "auto",
                      progress=None) -> CollisionComparison:
    """The collisions a fixed-step run from ``state`` missed and the ones it had in excess: its log (run with
    ``log=True``) matched against an event-driven run's from the same start to ``timestep_run.t_end``, with the
    same restitution and, for e < 1, the default TC model (:func:`.state.default_tc`; the fixed-step method needs
    none: its steps cannot shrink). ``progress(t)`` is the event-driven run's (Ctrl-C there ends it early,
    ``complete`` False). Window: the run's step dt. See :class:`CollisionComparison`."""
    if timestep_run.log is None:
        raise ValueError("timestep_run has no collision log to match: run it with run_timestep(..., log=True)")
    e = timestep_run.restitution
    if e == 0:
        raise ValueError("restitution = 0 (sticky spheres): there is no event-driven run to compare with (it would "
                         "stall on collisions at zero speed); compare a run with restitution > 0")
    ev = edmd.run(state, timestep_run.t_end, restitution=e, engine=engine, tc=None, log=True, progress=progress)
    fs = timestep_run.log.collisions()
    if not ev.complete:
        keep = fs.time <= ev.t_end
        fs = EventLog(fs.time[keep], fs.i[keep], fs.j[keep])
    window = float(timestep_run.info.get("dt", timestep_run.duration))
    evc = ev.log.collisions()
    used_e, used_f = match_collisions(evc, fs, window, state.n)
    lone = np.concatenate([evc.time[~used_e], fs.time[~used_f]])
    return CollisionComparison(
        missed=int(np.sum(~used_e)), spurious=int(np.sum(~used_f)), matched=int(np.sum(used_e)),
        event_collisions=len(evc), timestep_collisions=len(fs),
        first_mismatch=float(lone.min()) if lone.size else None, t_start=state.time, t_end=ev.t_end,
        window=window, complete=ev.complete)
