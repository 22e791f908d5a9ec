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
is a collision the method misses; :func:`missed_collisions` counts them against the event-driven
run from the same start (its count over the same interval minus this one's). No gravity: the
parabolic flights and floor contacts are the event-driven engine's.

Compiled with numba when available (one kernel call runs many steps), else the same code runs as
plain Python (slow: for small N only).
"""

from __future__ import annotations

import math
import time as _time

import numpy as np

from ..jit import numba as _numba
from .edmd import run as run_event
from .state import GasRecords, GasRun, GasState, check_run_args, record_times

nb = _numba()


def _steps(nsteps, dt, e, periodic, x, v, rad, m, box, acc, wall_imp):
    """nsteps steps in place: x (N, d), v (N, d); acc = [virial, collisions, wall events, steps done]."""
    n, d = x.shape
    for _ in range(nsteps):
        for i in range(n):
            for k in range(d):
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
                    continue
                b = 0.0
                vv = 0.0
                for k in range(d):
                    q = x[i, k] - x[j, k]
                    if periodic:
                        q -= box[k] * math.floor(q / box[k] + 0.5)
                    w = v[i, k] - v[j, k]
                    b += q * w
                    vv += w * w
                if b >= 0.0:
                    continue  # already separating: the collision (if any) is lost
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
        acc[3] += 1.0


if nb is not None:
    _steps = nb.njit(cache=True, error_model="numpy")(_steps)


def default_dt(state: GasState) -> float:
    """A step of 1/50 of the time to fly the smallest diameter at the rms speed (time units)."""
    u = math.sqrt(float(np.sum(state.velocities ** 2)) / state.n)
    sig = 2.0 * float(state.radii.min())
    return 0.02 * sig / u if u > 0 else 0.01 * sig


def run_timestep(state: GasState, t_end: float, dt: float | None = None, *, restitution: float = 1.0,
                 blocks: int = 1, record_interval: float | None = None, progress=None,
                 chunk_seconds: float = 0.2) -> GasRun:
    """Run the fixed-step method from ``state`` to ``t_end`` (see the module docstring); a :class:`GasRun`.

    ``dt`` (time units; default :func:`default_dt`) is shortened so that the steps end exactly on
    ``t_end``, every block end and every record time (``record_interval`` is rounded to a whole
    number of steps). Ctrl-C between chunks keeps the valid partial run (``complete`` False).
    ``info``: ``"method": "timestep"``, the step, the steps done.
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
    x, v = state.positions.copy(), state.velocities.copy()
    acc = np.zeros(4)
    wall_imp = np.zeros(2 * state.d)
    recs: dict[str, list] = {k: [] for k in ("times", "positions", "velocities", "collisions", "virial",
                                            "kinetic", "potential")}
    b_vir, b_coll, b_kin, reached = [], [], [], [t0]
    stops = sorted({*block_steps, *rec_steps})
    done = 0
    per_chunk = 10
    complete = True
    wall0 = _time.perf_counter()

    def kinetic():
        return 0.5 * float(np.sum(state.masses * np.sum(v * v, axis=1)))

    vir0, coll0 = 0.0, 0
    try:
        for stop in stops:
            while done < stop:
                k = min(per_chunk, stop - done)
                c0 = _time.perf_counter()
                _steps(k, h, float(restitution), state.periodic, x, v, state.radii, state.masses, state.box,
                       acc, wall_imp)
                done = int(acc[3])
                spent = _time.perf_counter() - c0
                per_chunk = int(min(max(k * chunk_seconds / max(spent, 1e-6), 1), 10_000_000))
                if progress is not None:
                    progress(t0 + done * h)
            t = t0 + done * h
            if stop in rec_steps:
                recs["times"].append(t)
                recs["positions"].append(x.copy())
                recs["velocities"].append(v.copy())
                recs["collisions"].append(int(acc[1]))
                recs["virial"].append(float(acc[0]))
                recs["kinetic"].append(kinetic())
                recs["potential"].append(0.0)
            if stop in block_steps:
                b_vir.append(acc[0] - vir0)
                b_coll.append(int(acc[1]) - coll0)
                b_kin.append(kinetic())
                reached.append(t)
                vir0, coll0 = float(acc[0]), int(acc[1])
    except KeyboardInterrupt:
        # a kernel call always finishes its steps, so x, v hold the state after `done` whole steps
        complete = False
        done = int(acc[3])
        if done and t0 + done * h > reached[-1]:
            b_vir.append(acc[0] - vir0)
            b_coll.append(int(acc[1]) - coll0)
            b_kin.append(kinetic())
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
            "wall_time": _time.perf_counter() - wall0, "events": int(acc[1] + acc[2])}
    final = GasState(x, v, state.radii, state.masses, state.box, state.periodic, t_reached, validate=False)
    return GasRun(state=final, t_start=t0, t_end=t_reached, n_collisions=int(acc[1]), n_wall_events=int(acc[2]),
                  virial=float(acc[0]), wall_impulse=wall_imp, block_times=np.array(reached),
                  block_virial=np.array(b_vir, dtype=np.float64), block_collisions=np.array(b_coll, dtype=np.int64),
                  block_kinetic=np.array(b_kin, dtype=np.float64), complete=complete, info=info, records=records,
                  gravity=np.zeros(d), restitution=float(restitution), tc=0.0)


def missed_collisions(state: GasState, timestep_run: GasRun, *, restitution: float = 1.0, engine: str = "auto") -> int:
    """Collisions the fixed-step run missed: the event-driven run's count from the same start over the same
    interval (``state.time`` … ``timestep_run.t_end``) minus the fixed-step run's count."""
    ev = run_event(state, timestep_run.t_end, restitution=restitution, engine=engine, tc=0.0)
    return ev.n_collisions - timestep_run.n_collisions
