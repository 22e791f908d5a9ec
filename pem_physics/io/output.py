"""Writing trajectories: NPZ (all arrays), CSV (one row per record), summary JSON.

Every file is written atomically: to a temporary file in the same folder,
then renamed over the target, so a failed or interrupted run never leaves a
half-written file behind.
"""

from __future__ import annotations

import csv
import io
import json
import sys

import numpy as np

from .. import aot
from ..engine.simulate import Trajectory
from ..jit import numba
from ..model.rotations import euler_zyx
from .files import atomic_open
from .outset import OutputSet

ARRAYS = ("t", "quaternion", "orientation", "omega", "omega_body", "angular_momentum",
          "angular_momentum_body", "torque", "kinetic_energy", "gravity_energy", "field_energy",
          "dipole_energy", "orthonormality", "pivot", "center_of_mass", "dipole_position",
          "dipole_moment", "dipole_owner")
#: Written by this version, optional on reading (older files lack them): centres of rotation (…,R,B,3) m,
#: linear momenta (…,R,B,3) kg·m/s and velocities (…,R,B,3) m/s of the bodies, which bodies translate (B,), and
#: their weights m·|g| (B,) N (a floor of the energy scale: ``Trajectory._energy_scale``).
MOTION_ARRAYS = ("position", "linear_momentum", "velocity", "translating", "weight")


def write_npz(traj: Trajectory, path) -> None:
    """All trajectory arrays plus names and run facts in one NPZ (stored, not deflated: doubles of a trajectory
    shrink by ~10 % and deflating them cost a short run a third of its output time)."""
    data = {k: getattr(traj, k) for k in ARRAYS}
    data.update({k: getattr(traj, k) for k in MOTION_ARRAYS if getattr(traj, k) is not None})
    data["names"] = np.array(traj.names)
    data["total_energy"] = traj.total_energy
    meta = dict(method=traj.method, dt=traj.dt, steps=traj.steps, complete=traj.complete,
                ensemble=traj.ensemble)
    data["meta"] = np.array(json.dumps(meta))
    if traj.driver_work is not None:  # the work (J) the drivers did by each record, which the energy balance counts
        data["driver_work"] = traj.driver_work
    if traj.events is not None:  # contact scenes: the impact log (event_t, event_body1, …) and the energy it took
        data.update(traj.events.arrays())
        data["impact_loss"] = traj.impact_loss
    with atomic_open(path, "wb") as fh:
        np.savez(fh, **data)


def csv_columns(traj: Trajectory) -> tuple[list[str], np.ndarray]:
    """Header and (R, C) table: per body quaternion, Euler angles, ω lab/body, L body, torque, energies;
    a translating body adds its centre-of-mass position x (m) and linear momentum p (kg·m/s), lab."""
    if traj.ensemble:
        raise ValueError("CSV holds one scene; write ensemble members one at a time (traj.member(e))")
    cols, blocks = ["t"], [traj.t[:, None]]
    euler = euler_zyx(traj.orientation)
    for b, name in enumerate(traj.names):
        def add(label, arr, comps, name=name):
            cols.extend(f"{name}.{label}_{c}" for c in comps)
            blocks.append(arr.reshape(len(traj.t), -1))
        add("q", traj.quaternion[:, b], "wxyz")
        add("euler_zyx", euler[:, b], ("yaw", "pitch", "roll"))
        add("omega", traj.omega[:, b], "xyz")
        add("omega_body", traj.omega_body[:, b], "123")
        add("L", traj.angular_momentum[:, b], "xyz")
        add("L_body", traj.angular_momentum_body[:, b], "123")
        add("torque", traj.torque[:, b], "xyz")
        add("energy", np.stack([traj.kinetic_energy[:, b], traj.gravity_energy[:, b],
                                traj.field_energy[:, b]], -1), ("kinetic", "gravity", "field"))
        add("orthonormality", traj.orthonormality[:, b, None], ("err",))
        if traj.translating is not None and traj.translating[b]:
            add("x", traj.position[:, b], "xyz")
            add("p", traj.linear_momentum[:, b], "xyz")
    cols += ["energy_dipole", "energy_total"]
    blocks += [traj.dipole_energy[:, None], traj.total_energy[:, None]]
    return cols, np.concatenate(blocks, axis=1)


def write_csv(traj: Trajectory, path) -> None:
    cols, table = csv_columns(traj)
    head = io.StringIO()
    if not traj.complete:   # a partial run says so in every file (npz meta, summary, this comment)
        head.write(f"# partial run: interrupted at t = {float(traj.t[-1])!r} s\n")   # not np.float64(…)
    csv.writer(head, lineterminator="\n").writerow(cols)
    # every cell is a float (no quoting needed), written as repr: the shortest text that reads back bit for bit
    body = csv_rows(np.ascontiguousarray(table, dtype=float))
    with atomic_open(path, "wb") as fh:
        fh.write(head.getvalue().encode("utf-8"))
        fh.write(body)


def csv_rows(table: np.ndarray):
    """The rows of a (R, C) float64 table as CSV text (bytes): each cell ``repr`` of its float, commas between, a
    newline after each row. Compiled (:mod:`pem_physics.ryu`, ~0.08 µs a cell against ~0.27 for ``repr``) when a
    build made ahead of time carries it or numba already runs this process's kernels; else ``repr`` itself."""
    kernel = _rows_kernel()
    if kernel is None or not table.size:
        # tolist() hands Python floats (~5× faster than numpy scalars) and one %r format per row beats a join
        row = ",".join(["%r"] * table.shape[1]) + "\n"
        return "".join(row % tuple(r) for r in table.tolist()).encode("ascii")
    out = np.empty(table.size * CELL, np.uint8)
    return memoryview(out)[:kernel(table.view(np.uint64), out)]


#: Bytes a cell can take: the longest repr of a double ("-2.2250738585072014e-308") and its comma
#: (:data:`pem_physics.ryu.CELL`, repeated here: importing ryu imports numba)
CELL = 25


def _rows_kernel():
    """The compiled row formatter to use, or None (see :func:`csv_rows`). Without a build, numba's JIT version only
    where numba is already running: starting it (~0.4 s) would cost more than ``repr`` saves."""
    build = aot.load()
    if build is not None and "csv_rows" in build.specs:
        return lambda bits, out: build.call("csv_rows", (bits, out))
    if "numba" in sys.modules and numba() is not None:
        from .. import ryu

        return ryu.format_rows
    return None


def summary(traj: Trajectory) -> dict:
    return {
        "method": traj.method,
        "dt": traj.dt,
        "steps": traj.steps,
        "t_end": float(traj.t[-1]),
        "records": len(traj.t),
        "bodies": list(traj.names),
        "wall_time_s": traj.wall_time,
        "steps_per_second": traj.steps / traj.wall_time if traj.wall_time > 0 else None,
        "engine": traj.info.get("engine", "numpy"),
        "compile_or_load_s": traj.info.get("compile_or_load_s", 0.0),
        "kernels": traj.info.get("kernels"),
        "threads": traj.info.get("threads", 1),
        "energy_drift_relative": traj.energy_drift(),
        "energy_balance_error_relative": traj.energy_balance(),
        "friction_loss_relative": traj.friction_loss(),
        "warnings": list(traj.info.get("warnings", [])),
        "orthonormality_error_max": float(np.max(traj.orthonormality)),
        "complete": traj.complete,
        **({} if traj.translating is None or not traj.translating.any() else {
            "translating": [n for n, m in zip(traj.names, traj.translating) if m],
            "linear_momentum_final": traj.total_linear_momentum[..., -1, :].tolist(),
            "angular_momentum_about_origin_final": traj.total_angular_momentum[..., -1, :].tolist()}),
        **({} if traj.driver_work is None else {
            "driver_work_final_J": float(np.asarray(traj.driver_work)[..., -1].max())}),
        **({} if traj.events is None else {"events": traj.events.counts(), "impacts": traj.events.impacts(),
                                           "impact_energy_loss_J": float(traj.events.energy_loss)}),
    }


EVENT_COLUMNS = ("t", "kind", "body1", "body2", "impulse_x", "impulse_y", "impulse_z", "impulse",
                 "point_x", "point_y", "point_z", "normal_x", "normal_y", "normal_z")


def write_events(traj: Trajectory, path) -> None:
    """The impact log, one row per event: t (s), kind, body1, body2 (body or wall; normal from 2 to 1),
    impulse on body1 (N·s, components and magnitude), contact point (m) and normal, lab."""
    ev = traj.events
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(EVENT_COLUMNS)
    for k in range(len(ev)):
        J = np.asarray(ev.impulse[k], float)
        w.writerow([repr(float(ev.t[k])), ev.kind[k], ev.body1[k], ev.body2[k], *map(repr, J.tolist()),
                    repr(float(np.linalg.norm(J))), *map(repr, np.asarray(ev.point[k], float).tolist()),
                    *map(repr, np.asarray(ev.normal[k], float).tolist())])
    with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(buf.getvalue())


def write_summary(traj: Trajectory, path) -> dict:
    data = summary(traj)
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    return data


def write_outputs(traj: Trajectory, outdir) -> dict:
    """trajectory.npz, trajectory.csv and summary.json (events.csv for contact scenes) in ``outdir``, published as
    one output set (:mod:`.outset`: the previous set's files go, a manifest lists the new ones); returns the
    summary."""
    with OutputSet(outdir, "run") as out:
        write_npz(traj, out.staging / "trajectory.npz")
        if not traj.ensemble:
            write_csv(traj, out.staging / "trajectory.csv")
        if traj.events is not None:
            write_events(traj, out.staging / "events.csv")
        summary = write_summary(traj, out.staging / "summary.json")
        out.publish(complete=traj.complete)
    return summary
