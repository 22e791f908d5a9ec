"""pem_physics next to MuJoCo on the systems both can model: accuracy and speed, measured in the same run.

Systems (each built from the example scene's own masses, inertias and geometry):

- ``t-handle``: the free T-handle (examples.t_handle), 10 s. MuJoCo: a body with a free joint and an
  explicit ``<inertial diaginertia=…>``, gravity off (a free body's rotation does not feel it; MuJoCo's
  body would fall). Reference: the closed form of bench_accuracy.free_top.
- ``pendulum``: the point pendulum (examples.pendulum: 1 kg at 1 m, released at 60°), 5 s. MuJoCo: the
  mass on a ball joint (3 DOF, like ours) and on a hinge about x; MuJoCo needs a positive inertia, so the
  bob gets 1e-12 kg·m² (1e-12 of m·l²). Reference: the closed form θ(t) (elliptic sn).
- ``heavy-top``: the symmetric top (examples.heavy_top), 1 s, on a ball joint at its tip, with the
  example's mass, centre of mass and inertia about the COM (``fullinertia``); the spin is the initial
  qvel. Reference: the closed form of bench_accuracy.heavy_top_closed_form.

Conventions that must match (checked below): MuJoCo quaternions are (w, x, y, z) body → world, like
pem_physics' output; ball and free joints take the angular velocity in qvel in the *body* frame
(ω_body = U·ω_lab with U's rows the body axes); xmat is body → world, i.e. Uᵀ.

Before anything is reported the script checks that the two engines agree on the physics: our
splitting4 and MuJoCo's RK4, each at a small step, against the closed form at 16 times over the run,
and the initial energies. It stops with an error if an orientation differs by more than 1e-6 rad.

Measured per system × engine × integrator × dt (no contacts, no constraints, zero damping):

- speed: steps/s. pem_physics: Trajectory.wall_time of a run recording only its end (best of a few).
  MuJoCo: a Python loop of mj_step (best of a few), and mujoco.rollout (its C loop, best of a few);
- phase error: rotation angle (rad) between the final orientation and the reference's;
- energy error: max_t |E(t) − E(0)| ÷ max_t KE(t) over ~500 samples (MuJoCo: mjData.energy with the
  energy flag on, after mj_forward at each sample, since mj_step leaves it at the step's start);
- momentum error: |L(t) − L(0)| ÷ |L(0)| for the free T-handle, |L_z(t) − L_z(0)| ÷ |L(0)| for the
  top (both conserved), max over the samples.

Ratio columns "ours ÷ MuJoCo" (our splitting4 and pem-rk4 at the same dt against each MuJoCo row):
speed (> 1: ours faster), phase and energy error (< 1: ours more accurate). Per system, also the wall
time of our splitting4 ÷ MuJoCo RK4's (rollout) at equal phase error (log-log interpolation, no
extrapolation, errors above the reference's floor only), from extra coarser (ours) and finer (MuJoCo) steps.

Full mode takes about 70 s on 2 cores, ``--quick`` about 15 s.

    python bench/bench_mujoco.py [--quick] [--json PATH] [--repeats N]
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
from mujoco import rollout

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_accuracy import (  # noqa: E402
    Case,
    _rx,
    cost_at,
    free_top,
    front,
    heavy_top_closed_form,
    measure,
    pendulum_closed_form,
    rotation_angle,
)
from common import finish  # noqa: E402

from pem_physics import examples  # noqa: E402
from pem_physics.engine.simulate import simulate  # noqa: E402
from pem_physics.model.rotations import orientation_to_quat  # noqa: E402

OURS = ("splitting4", "pem-rk4")
MJ_INTEGRATORS = ("RK4", "Euler", "implicitfast")
#: Largest orientation difference (rad) allowed between the engines before reporting anything.
AGREE = 1e-6
#: Samples of an accuracy run.
SAMPLES = 500
#: The pendulum's bob inertia about its centre in MuJoCo (kg·m²): MuJoCo rejects a zero one.
BOB_INERTIA = 1e-12


def _num(*xs) -> str:
    return " ".join(f"{float(x):.17g}" for x in xs)


@dataclass
class MjModelSpec:
    """One MuJoCo model of a system: its worldbody XML, gravity and initial state."""

    name: str
    body_xml: str
    gravity: tuple
    qpos0: np.ndarray
    qvel0: np.ndarray
    inertia_body: np.ndarray | None = None  # about the joint's origin, body axes: for angular momentum

    def model(self, integrator: str, dt: float) -> mujoco.MjModel:
        xml = f"""<mujoco model="{self.name}">
  <option timestep="{dt:.17g}" integrator="{integrator}" gravity="{_num(*self.gravity)}">
    <flag energy="enable" contact="disable" constraint="disable"/>
  </option>
  <worldbody>{self.body_xml}</worldbody>
</mujoco>"""
        return mujoco.MjModel.from_xml_string(xml)


@dataclass
class MjCase:
    key: str
    title: str
    scene: object
    t_end: float
    reference: object          # t -> U_ref (3,3)
    models: list
    momentum: str | None       # "vector", "z" or None
    dts: list                  # both engines, with the same-dt ratios
    ours_extra: list = field(default_factory=list)   # more steps for ours (equal-error comparison)
    mj_extra: list = field(default_factory=list)     # more steps for MuJoCo RK4 (equal-error comparison)
    check_dt_ours: float = 1e-3
    check_dt_mj: float = 1e-4
    floor: float = 0.0         # phase errors below this are at the reference's accuracy


def cases(quick: bool) -> list[MjCase]:
    out = []
    # T-handle: principal axes = body axes (checked), centre of mass at the body origin.
    th = examples.t_handle(t_end=10.0)
    b = th.checked().bodies[0]
    mp = b.mass_properties
    I = np.asarray(mp.inertia)
    if not (np.allclose(I, np.diag(np.diag(I))) and np.allclose(mp.center_of_mass, 0)):
        raise ValueError("the T-handle example is expected to have diagonal inertia about its body origin")
    U0 = np.asarray(b.orientation)
    w0 = U0 @ np.asarray(b.angular_velocity)
    free = MjModelSpec("t-handle", f'<body name="handle"><freejoint/><inertial pos="0 0 0" mass="{_num(mp.mass)}" '
                       f'diaginertia="{_num(*np.diag(I))}"/></body>', (0.0, 0.0, 0.0),
                       np.r_[0, 0, 0, orientation_to_quat(U0)], np.r_[0, 0, 0, w0], I)
    out.append(MjCase("t-handle", "free T-handle, 10 s", th, 10.0,
                      lambda t, I=I, w0=w0, U0=U0: free_top(np.diag(I), w0, U0, t)["orientation"],
                      [free], "vector", [1 / 32, 1 / 128] if quick else [1 / 32, 1 / 128, 1 / 512],
                      ours_extra=[1 / 8, 1 / 16], mj_extra=[] if quick else [1 / 2048, 1 / 8192],
                      check_dt_ours=2.0**-10, check_dt_mj=2.0**-13, floor=1e-7))
    # Point pendulum: 1 kg at (0, 0, −1) m in body axes, tilted by θ₀ about x, from rest.
    pend = examples.pendulum(t_end=5.0)
    b = pend.checked().bodies[0]
    mp = b.mass_properties
    U0 = np.asarray(b.orientation)
    length = float(-mp.center_of_mass[2])
    theta0 = math.atan2(U0[1, 2], U0[1, 1])  # U0 = Rx(θ₀)ᵀ
    omega_small = math.sqrt(-float(np.asarray(pend.gravity)[2]) / length)
    inertial = (f'<inertial pos="{_num(*mp.center_of_mass)}" mass="{_num(mp.mass)}" '
                f'diaginertia="{_num(BOB_INERTIA, BOB_INERTIA, BOB_INERTIA)}"/>')
    ball = MjModelSpec("pendulum ball", f'<body name="bob"><joint type="ball"/>{inertial}</body>',
                       tuple(pend.gravity), orientation_to_quat(U0), np.zeros(3))
    hinge = MjModelSpec("pendulum hinge", f'<body name="bob"><joint type="hinge" axis="1 0 0"/>{inertial}</body>',
                        tuple(pend.gravity), np.array([theta0]), np.zeros(1))
    out.append(MjCase("pendulum", "point pendulum, 60°, 5 s", pend, 5.0,
                      lambda t: _rx(float(pendulum_closed_form(theta0, omega_small, t))).T,
                      [ball, hinge], None, [1e-2, 1e-3] if quick else [1e-2, 1e-3, 2.5e-4],
                      ours_extra=[5e-2, 2.5e-2], mj_extra=[5e-2, 2.5e-2],
                      check_dt_ours=2.0**-10, check_dt_mj=2.0**-12, floor=1e-10))
    # Heavy top: ball joint at the tip (body origin), inertia about the COM as MuJoCo wants it.
    top = examples.heavy_top(t_end=1.0)
    b = top.checked().bodies[0]
    mp = b.resolved_mass_properties()
    Ic = np.asarray(mp.inertia)
    U0 = np.asarray(b.orientation)
    body = (f'<body name="top"><joint type="ball"/><inertial pos="{_num(*mp.center_of_mass)}" mass="{_num(mp.mass)}" '
            f'fullinertia="{_num(Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2])}"/></body>')
    spec = MjModelSpec("heavy top", body, tuple(top.gravity), orientation_to_quat(U0),
                       U0 @ np.asarray(b.angular_velocity), np.asarray(mp.inertia_about(np.zeros(3))))
    out.append(MjCase("heavy-top", "heavy symmetric top, 1 s", top, 1.0,
                      lambda t: heavy_top_closed_form(top, t)["orientation"], [spec], "z",
                      [1e-3, 2e-4] if quick else [1e-3, 2e-4, 5e-5],
                      ours_extra=[4e-3, 2e-3], mj_extra=[] if quick else [1e-5, 2.5e-6],
                      check_dt_ours=2.0**-12, check_dt_mj=2.0**-18, floor=1e-9))
    return out


# ---------------------------------------------------------------------------- MuJoCo runs

def _reset(m, d, spec: MjModelSpec) -> None:
    mujoco.mj_resetData(m, d)
    d.qpos[:] = spec.qpos0
    d.qvel[:] = spec.qvel0


def _orientation(d) -> np.ndarray:
    return d.xmat[1].reshape(3, 3).T.copy()  # xmat: body → world = Uᵀ


def _momentum(d, spec: MjModelSpec) -> np.ndarray:
    R = d.xmat[1].reshape(3, 3)
    return R @ (spec.inertia_body @ d.qvel[-3:])  # the angular part of qvel: body frame


def mj_measure(case: MjCase, spec: MjModelSpec, integrator: str, dt: float, U_ref, repeats: int) -> dict:
    m = spec.model(integrator, dt)
    d = mujoco.MjData(m)
    n = int(round(case.t_end / dt))
    reps = repeats if n < 100_000 else 1
    loop = math.inf
    for _ in range(reps):
        _reset(m, d, spec)
        t0 = time.perf_counter()
        for _ in range(n):
            mujoco.mj_step(m, d)
        loop = min(loop, time.perf_counter() - t0)
    kind = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.empty(mujoco.mj_stateSize(m, kind))
    _reset(m, d, spec)
    mujoco.mj_getState(m, d, state0, kind)
    ro = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        states, _ = rollout.rollout(m, d, state0, nstep=n)
        ro = min(ro, time.perf_counter() - t0)
    # Accuracy, in a separate run: mj_forward at each sample refreshes energy and xmat for the current state.
    _reset(m, d, spec)
    mujoco.mj_forward(m, d)
    every = max(1, n // SAMPLES)
    E, KE, L = [d.energy.sum()], [d.energy[1]], []
    if case.momentum:
        L.append(_momentum(d, spec))
    for i in range(1, n + 1):
        mujoco.mj_step(m, d)
        if i % every == 0 or i == n:
            mujoco.mj_forward(m, d)
            E.append(d.energy.sum())
            KE.append(d.energy[1])
            if case.momentum:
                L.append(_momentum(d, spec))
    U = _orientation(d)
    # The rollout must have run the same dynamics as the loop (its last qpos is the loop's).
    if not np.allclose(states[0, -1, 1:1 + m.nq], d.qpos, rtol=0, atol=1e-12):
        raise RuntimeError(f"mujoco.rollout and the mj_step loop disagree for {spec.name} {integrator} dt={dt}")
    E, KE = np.array(E), np.array(KE)
    return {"system": case.key, "engine": "mujoco", "model": spec.name, "integrator": integrator, "dt": dt,
            "steps": n, "steps_per_s": n / loop, "steps_per_s_rollout": n / ro, "wall_s": ro, "failed": None,
            "phase_error": rotation_angle(U, U_ref),
            "energy_error": float(np.max(np.abs(E - E[0])) / np.max(KE)),
            "momentum_error": _momentum_error(np.array(L), case.momentum)}


def _momentum_error(L: np.ndarray, kind: str | None) -> float | None:
    if kind is None:
        return None
    scale = np.linalg.norm(L[0])
    if kind == "vector":
        return float(np.max(np.linalg.norm(L - L[0], axis=-1)) / scale)
    return float(np.max(np.abs(L[:, 2] - L[0, 2])) / scale)


# ---------------------------------------------------------------------------- agreement

def agreement(case: MjCase) -> dict:
    """Our splitting4 and MuJoCo's RK4, each at a small step, against the reference at 16 times."""
    T, n_rec = case.t_end, 16
    ours = simulate(case.scene, method="splitting4", dt=case.check_dt_ours, t_end=T, record_interval=T / n_rec)
    refs = [case.reference(t) for t in ours.t]
    out = {"times": n_rec, "dt_ours": case.check_dt_ours, "dt_mujoco": case.check_dt_mj,
           "ours_vs_reference_rad": max(rotation_angle(U, R) for U, R in zip(ours.orientation[:, 0], refs)),
           "models": {}}
    for spec in case.models:
        m = spec.model("RK4", case.check_dt_mj)
        d = mujoco.MjData(m)
        _reset(m, d, spec)
        mujoco.mj_forward(m, d)
        E0 = float(d.energy.sum())
        every = int(round(T / n_rec / case.check_dt_mj))
        Us = [_orientation(d)]
        for _ in range(n_rec):
            for _ in range(every):
                mujoco.mj_step(m, d)
            mujoco.mj_forward(m, d)
            Us.append(_orientation(d))
        ours_E0 = float(ours.total_energy[0])
        out["models"][spec.name] = {
            "mujoco_vs_reference_rad": max(rotation_angle(U, R) for U, R in zip(Us, refs)),
            "mujoco_vs_ours_rad": max(rotation_angle(U, V) for U, V in zip(Us, ours.orientation[:, 0])),
            "initial_energy_rel_diff": abs(E0 - ours_E0) / max(abs(ours_E0), float(ours.kinetic_energy[0].sum()),
                                                               1e-300),
        }
    worst = max([out["ours_vs_reference_rad"]] + [v["mujoco_vs_ours_rad"] for v in out["models"].values()])
    out["ok"] = bool(worst <= AGREE and all(v["initial_energy_rel_diff"] < 1e-9 for v in out["models"].values()))
    if not out["ok"]:
        raise RuntimeError(f"MuJoCo and pem_physics disagree on {case.key}: {out}")
    return out


# ---------------------------------------------------------------------------- ours

def ours_measure(case: MjCase, method: str, dt: float, U_ref, repeats: int) -> dict:
    def momentum(tr):
        return {"momentum_error": _momentum_error(tr.angular_momentum[:, 0], case.momentum)}

    c = Case(case.key, case.title, case.scene, case.scene, case.t_end, [], [])
    row = measure(c, method, U_ref, repeats, dt=dt, extra=momentum)
    return {"system": case.key, "engine": "pem_physics", "model": "scene", "integrator": method, "dt": dt,
            "steps": row["steps"], "steps_per_s": row.get("steps_per_s"), "steps_per_s_rollout": None,
            "wall_s": row.get("wall_s"), "failed": row.get("failed") or row.get("energy_failed"),
            "phase_error": row.get("phase_error"), "energy_error": row.get("energy_error"),
            "momentum_error": row.get("momentum_error")}


def _div(a, b):
    return None if a is None or b is None or b == 0 else a / b


def add_ratios(rows: list) -> None:
    """On each MuJoCo row: our splitting4 and pem-rk4 at the same system and dt ÷ that row."""
    for r in rows:
        if r["engine"] != "mujoco":
            continue
        for method in OURS:
            ours = [o for o in rows if o["engine"] == "pem_physics" and o["integrator"] == method
                    and o["system"] == r["system"] and math.isclose(o["dt"], r["dt"])]
            if not ours:
                continue
            o = ours[0]
            r[f"{method}_div_mujoco"] = {
                "speed": _div(o["steps_per_s"], r["steps_per_s"]),
                "speed_vs_rollout": _div(o["steps_per_s"], r["steps_per_s_rollout"]),
                "phase_error": _div(o["phase_error"], r["phase_error"]),
                "energy_error": _div(o["energy_error"], r["energy_error"]),
            }


def equal_error(ours_rows: list, mj_rows: list, floor: float) -> dict:
    """Wall time of ours ÷ MuJoCo's at the same phase error, at each of our points MuJoCo's curve reaches."""
    fr = front(mj_rows, "phase_error")
    pts = []
    for r in ours_rows:
        e = r["phase_error"]
        if r["failed"] or e is None or e < floor or e >= 0.3:
            continue
        w = cost_at(fr, e, clamp=False)
        if w is not None:
            pts.append({"dt": r["dt"], "phase_error": e, "ours_wall_s": r["wall_s"], "mujoco_wall_s": w,
                        "ours_div_mujoco_wall": r["wall_s"] / w})
    out = {"points": pts}
    if pts:
        ratios = [p["ours_div_mujoco_wall"] for p in pts]
        out.update(median=float(np.median(ratios)), min=float(min(ratios)), max=float(max(ratios)))
    return out


# ---------------------------------------------------------------------------- main

def _fmt(x, spec):
    if x is None:
        return "—".rjust(int(spec.split(".")[0]))
    return format(x, spec)


def observed_orders(rows: list, floor: float) -> dict:
    """Convergence order of the phase error between successive step sizes, per engine/model/integrator.

    Only errors above the reference's floor and below 0.3 rad, where the error still measures accuracy.
    """
    out = {}
    keys = sorted({(r["engine"], r["model"], r["integrator"]) for r in rows})
    for key in keys:
        pts = sorted((r["dt"], r["phase_error"]) for r in rows if (r["engine"], r["model"], r["integrator"]) == key
                     and not r["failed"] and r["phase_error"] is not None and floor <= r["phase_error"] < 0.3)
        orders = [math.log(e1 / e0) / math.log(d1 / d0) for (d0, e0), (d1, e1) in zip(pts, pts[1:])]
        if orders:
            out["/".join(key)] = orders
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer step sizes, one timing each (< 1 min)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--repeats", type=int, help="timing runs of ours per point, best kept (default 2, quick 1)")
    args = ap.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 2)
    mj_repeats = 3
    start = time.perf_counter()
    results = {"mode": "quick" if args.quick else "full",
               "machine": {"python": platform.python_version(), "numpy": np.__version__, "mujoco": mujoco.__version__,
                           "platform": platform.platform()},
               "agreement": {}, "rows": [], "equal_phase_error": {}, "observed_orders": {}}
    for case in cases(args.quick):
        results["agreement"][case.key] = ag = agreement(case)
        U_ref = case.reference(case.t_end)
        rows = []
        for dt in sorted(case.ours_extra + case.dts, reverse=True):
            rows += [ours_measure(case, m, dt, U_ref, repeats) for m in OURS]
        for spec in case.models:
            for integ in MJ_INTEGRATORS:
                dts = case.dts + (case.mj_extra if integ == "RK4" else [])
                rows += [mj_measure(case, spec, integ, dt, U_ref, mj_repeats) for dt in dts]
        add_ratios(rows)
        s4 = [r for r in rows if r["engine"] == "pem_physics" and r["integrator"] == "splitting4"]
        results["equal_phase_error"][case.key] = {
            spec.name: equal_error(s4, [r for r in rows if r["model"] == spec.name and r["integrator"] == "RK4"],
                                   case.floor) for spec in case.models}
        results["rows"] += rows
        results["observed_orders"][case.key] = orders = observed_orders(rows, case.floor)
        print(f"\n== {case.title}; agreement: ours vs reference {ag['ours_vs_reference_rad']:.1e} rad, "
              + ", ".join(f"{k}: MuJoCo RK4 vs ours {v['mujoco_vs_ours_rad']:.1e} rad"
                          for k, v in ag["models"].items()))
        print(f"{'engine/model':<16} {'integrator':<12} {'dt':>9} {'steps/s':>10} {'rollout/s':>10} {'phase rad':>9} "
              f"{'energy':>9} {'momentum':>9} | {'s4÷MJ speed':>11} {'phase':>8} {'energy':>8}")
        for r in rows:
            who = "ours" if r["engine"] == "pem_physics" else r["model"].replace("pendulum ", "")
            ratio = r.get("splitting4_div_mujoco", {})
            print(f"{who:<16} {r['integrator']:<12} {r['dt']:>9.3g} {_fmt(r['steps_per_s'], '10.0f')} "
                  f"{_fmt(r['steps_per_s_rollout'], '10.0f')} {_fmt(r['phase_error'], '9.1e')} "
                  f"{_fmt(r['energy_error'], '9.1e')} {_fmt(r['momentum_error'], '9.1e')} | "
                  f"{_fmt(ratio.get('speed'), '11.3f')} {_fmt(ratio.get('phase_error'), '8.1e')} "
                  f"{_fmt(ratio.get('energy_error'), '8.1e')}" + ("  blow-up" if r["failed"] else ""))
        print("  observed order of the phase error: " + "; ".join(
            f"{k.split('/', 1)[1]} {' '.join(f'{o:.1f}' for o in v)}" for k, v in orders.items()))
        for name, eq in results["equal_phase_error"][case.key].items():
            if "median" in eq:
                print(f"  equal phase error, splitting4 ÷ MuJoCo RK4 ({name}, rollout) wall time: median "
                      f"{eq['median']:.2g} (range {eq['min']:.2g}–{eq['max']:.2g}, {len(eq['points'])} points)")
            else:
                print(f"  equal phase error vs MuJoCo RK4 ({name}): no overlap above the reference floor")
    return finish(results, start, args.json, indent=1, allow_nan=False)


if __name__ == "__main__":
    main()
