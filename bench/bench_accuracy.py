"""Accuracy per cost of every integrator: error against wall time, and the default method against pem-rk4.

For each system × method × step size (a tolerance ladder for the adaptive dop853), measured in one run:

- wall time: best of a few runs of ``pem_physics.engine.simulate`` that record only the final state
  (``Trajectory.wall_time``: the integration loop, not the set-up);
- phase error: rotation angle (rad) of U·U_refᵀ between the final orientation and the reference's;
- energy error: max over t of |E(t) − E(0)| ÷ max over t of the kinetic energy, from a separate run
  with ~500 records (recording would distort the timing; dop853 then restarts at every record).

Systems and their references:

- ``t-handle``: the free T-handle of theory §4, 10 s (three Dzhanibekov flips). Reference: closed form
  (body-frame ω from Jacobi elliptic functions, theory §5; the orientation from Euler angles about the
  fixed L, Landau & Lifshitz §37, with the precession angle by Gauss–Legendre quadrature).
- ``heavy-top``: the example's symmetric top on its tip, released spinning without precession.
  Reference: closed form (cos θ = u from sn², theory §5; φ and ψ by quadrature).
- ``three-magnet``: the example's damped magnetic pendulum (friction 2e-4 N·m·s). No closed form:
  reference = dop853 at rtol 1e-12, atol 1e-14. Its energy error is measured on the undamped twin
  (friction 0), since the damped one loses energy by design. The motion is chaotic, so one trajectory's
  final error depends on how each method's local errors project on the unstable directions: a second
  phase error, ``phase_error_releases``, is the geometric mean over 8 releases (the example's and 7
  around the magnets) from one untimed ensemble run, against a dop853 ensemble reference.

Verdicts, splitting4 (the default) against pem-rk4 (the PEM manual's scheme), per system and per error
kind (phase, energy), using only points (of either method) that measure accuracy:

- the run reached t_end, and its error is below 0.3 (rad, or relative): errors that large no longer
  measure accuracy (a phase error saturates at π);
- the method is in its convergent regime there: halving dt (or tightening dop853's rtol 100×) cuts the
  error at least 2× (a fourth-order method's ideal is 16×). A point that fails this sits on a plateau —
  on a chaotic system, a trajectory that already went another way round a magnet — where the error says
  which wrong answer a method gave, not how accurate it is. Such points are listed, not compared.

- cost ratio: at each pem-rk4 point, pem-rk4's wall time ÷ the wall time at which splitting4 reaches the
  same error (log-log interpolation along splitting4's Pareto front; no extrapolation);
- ``dominates``: for every pem-rk4 point, splitting4 reaches ≤ that error in ≤ that wall time. Below
  splitting4's cheapest point its cheapest wall time is used (an upper bound), and a pem-rk4 error smaller
  than splitting4's smallest counts as not dominated.

Figures (``--out-dir``): accuracy_<system>.png (error against wall time for every method; below, each
method's wall time ÷ pem-rk4's at equal error) and accuracy_summary.png (pem-rk4 ÷ splitting4 wall time at
equal error, all systems). Full mode takes about 3 minutes on 2 cores, ``--quick`` about 30 s.

    python bench/bench_accuracy.py [--quick] [--json PATH] [--out-dir DIR] [--no-figures] [--repeats N]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.special import ellipj, ellipk, ellipkinc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import finish  # noqa: E402

from pem_physics import examples  # noqa: E402
from pem_physics.engine.simulate import Ensemble, simulate  # noqa: E402
from pem_physics.errors import SimulationError  # noqa: E402
from pem_physics.model.rotations import axis_angle_matrix  # noqa: E402

METHODS = ("splitting4", "splitting2", "pem-rk4", "pem-euler", "dop853")
DEFAULT, PEER = "splitting4", "pem-rk4"
#: The reference tolerances for systems without a closed form.
REFERENCE_TOL = {"rtol": 1e-12, "atol": 1e-14}
#: Errors at or above this no longer measure accuracy (phase saturates at π; energy error ~ the energy).
MEANINGFUL = 0.3
#: A point is in its method's convergent regime when the next finer point's error is this many times smaller.
CONVERGING = 2.0
#: The error kinds a point carries (releases: three-magnet only).
ERROR_KEYS = ("phase_error", "energy_error", "phase_error_releases")
#: Errors are floored here before taking logarithms (an energy error can be exactly 0).
FLOOR = 1e-16
#: Records of an energy run (its max is taken over these).
ENERGY_RECORDS = 500
COLORS = {"splitting4": "#1f77b4", "splitting2": "#17becf", "pem-rk4": "#d62728", "pem-euler": "#ff7f0e",
          "dop853": "#2ca02c"}


# ---------------------------------------------------------------------------- closed forms

def rotation_angle(U: np.ndarray, V: np.ndarray) -> float:
    """Angle (rad) of the rotation U·Vᵀ between two orientations (rows = body axes).

    atan2 of the axial vector's length and (tr − 1)/2: arccos of the trace alone loses small angles
    (an angle of 1e-8 changes the trace by 1e-16).
    """
    M = np.asarray(U) @ np.asarray(V).T
    s = 0.5 * np.array([M[2, 1] - M[1, 2], M[0, 2] - M[2, 0], M[1, 0] - M[0, 1]])
    return float(np.arctan2(np.linalg.norm(s), 0.5 * (np.trace(M) - 1.0)))


def _rx(a: float) -> np.ndarray:
    return axis_angle_matrix(np.array([1.0, 0.0, 0.0]), a)


def _rz(a: float) -> np.ndarray:
    return axis_angle_matrix(np.array([0.0, 0.0, 1.0]), a)


def _quadrature(f, t: float, panels_per_s: int = 40) -> tuple[float, float]:
    """∫₀ᵗ f by composite 20-point Gauss–Legendre, and an error estimate (the change when panels halve)."""
    x, w = np.polynomial.legendre.leggauss(20)

    def rule(n):
        edges = np.linspace(0.0, t, n + 1)
        lo, hi = edges[:-1, None], edges[1:, None]
        half = 0.5 * (hi - lo)
        return float(np.sum(half * w * f(half * x + 0.5 * (hi + lo))))

    n = panels_per_s * int(np.ceil(t)) + 20
    coarse, fine = rule(n), rule(2 * n)
    return fine, abs(fine - coarse)


def free_top(inertia, omega0, U0, t: float) -> dict:
    """Closed form of the torque-free asymmetric top at time t: orientation U, body-frame ω.

    inertia: principal moments I1 < I2 < I3 along the body axes (kg·m²); omega0: body-frame ω(0),
    with L² > 2E·I₂ and ω₃(0) > 0 (then ω₃ = A₃ dn never changes sign); U0: rows = body axes in lab.
    ω = (A₁ cn τ, A₂ sn τ, A₃ dn τ), τ = λt + τ₀ (theory §5). The orientation: with L along a fixed
    lab axis, θ and ψ follow from the body components of L and φ̇ = |L|(L₁²/I₁ + L₂²/I₂)/(L₁² + L₂²)
    (Landau & Lifshitz §37), integrated by quadrature.
    """
    I = np.asarray(inertia, float)
    w0 = np.asarray(omega0, float)
    I1, I2, I3 = I
    if not (I1 < I2 < I3 and w0[2] > 0):
        raise ValueError("free_top needs I1 < I2 < I3 and ω₃(0) > 0")
    p = I * w0 * w0
    # 2E·I₃ − L² and L² − 2E·I₁ written as sums of positive terms: no cancellation near the separatrix.
    d3, d1 = float(np.sum(p * (I3 - I))), float(np.sum(p * (I - I1)))
    if not np.sum(p * (I - I2)) > 0:
        raise ValueError("free_top is written for L² > 2E·I₂ (rotation closer to the largest axis)")
    m = (I2 - I1) * d3 / ((I3 - I2) * d1)
    lam = math.sqrt((I3 - I2) * d1 / (I1 * I2 * I3))
    A = np.sqrt([d3 / (I1 * (I3 - I1)), d3 / (I2 * (I3 - I2)), d1 / (I3 * (I3 - I1))])
    # The amplitude am τ₀ = atan2(sn, cn) is well conditioned where arcsin(sn) is not (sn ≈ 1 here).
    tau0 = float(ellipkinc(math.atan2(w0[1] / A[1], w0[0] / A[0]), m))

    def omega(tt):
        sn, cn, dn, _ = ellipj(lam * tt + tau0, m)
        return np.stack([A[0] * cn, A[1] * sn, A[2] * dn])

    L = float(np.linalg.norm(I * w0))

    def phidot(tt):
        sn, cn = ellipj(lam * tt + tau0, m)[:2]
        L1, L2 = I1 * A[0] * cn, I2 * A[1] * sn
        return L * (L1 * L1 / I1 + L2 * L2 / I2) / (L1 * L1 + L2 * L2)

    def theta_psi(Lb):
        return math.atan2(math.hypot(Lb[0], Lb[1]), Lb[2]), math.atan2(Lb[0], Lb[1])

    th0, ps0 = theta_psi(I * w0)
    wt = omega(t)
    th, ps = theta_psi(I * wt)
    phi, quad_err = _quadrature(phidot, t)
    # U = V·F: F a lab frame with its third axis along L (chosen so that φ(0) = 0), V = (Rz φ Rx θ Rz ψ)ᵀ.
    F = _rx(th0) @ _rz(ps0) @ np.asarray(U0, float)
    U = (_rz(phi) @ _rx(th) @ _rz(ps)).T @ F
    return {"orientation": U, "omega_body": wt, "quadrature_error": quad_err, "m": m,
            "omega0_mismatch": float(np.max(np.abs(omega(0.0) - w0)))}


def lagrange_top(I1: float, I3: float, mgl: float, U0, spin: float, t: float) -> dict:
    """Closed form of the heavy symmetric top released with ω = spin·u₃ (no precession, no nutation rate).

    I1, I3: moments about the tip (kg·m²); mgl = M·g·l (N·m), the centre of mass at +l on body z, gravity
    along −z; U0: rows = body axes. Euler angles z-x-z, body → lab = Rz(φ)·Rx(θ)·Rz(ψ). With a = I₃ω₃/I₁,
    β = 2Mgl/I₁, u = cos θ: u̇² = β(u₀ − u)(u − r₋)(r₊ − u), so u = r₋ + (u₀ − r₋) sn²(σt + K, k),
    k² = (u₀ − r₋)/(r₊ − r₋), σ = √(β(r₊ − r₋))/2 (theory §5); φ̇ = a(u₀ − u)/(1 − u²), ψ̇ = ω₃ − φ̇u.
    """
    R0 = np.asarray(U0, float).T
    th0 = math.atan2(math.hypot(R0[0, 2], R0[1, 2]), R0[2, 2])
    if not 1e-6 < th0 < math.pi - 1e-6:
        raise ValueError("lagrange_top needs a tilted top (0 < θ₀ < π)")
    phi0, psi0 = math.atan2(R0[0, 2], -R0[1, 2]), math.atan2(R0[2, 0], R0[2, 1])
    a, beta, u0 = I3 * spin / I1, 2.0 * mgl / I1, math.cos(th0)
    disc = math.sqrt(a**4 + 4.0 * beta * (beta - a * a * u0))
    rp, rm = (a * a + disc) / (2.0 * beta), (a * a - disc) / (2.0 * beta)
    k2 = (u0 - rm) / (rp - rm)
    sigma, K = math.sqrt(beta * (rp - rm)) / 2.0, float(ellipk(k2))

    def u(tt):
        sn = ellipj(sigma * tt + K, k2)[0]
        return rm + (u0 - rm) * sn * sn

    def phidot(tt):
        uu = u(tt)
        return a * (u0 - uu) / (1.0 - uu * uu)

    phi, e1 = _quadrature(phidot, t)
    drift, e2 = _quadrature(lambda tt: phidot(tt) * u(tt), t)
    R = _rz(phi0 + phi) @ _rx(math.acos(u(t))) @ _rz(psi0 + spin * t - drift)
    return {"orientation": R.T, "quadrature_error": e1 + e2, "nutation_period": 2.0 * K / sigma,
            "u_range": (rm, u0)}


def heavy_top_closed_form(scene, t: float) -> dict:
    """:func:`lagrange_top` with the parameters of a heavy-top scene (checked to fit its assumptions)."""
    body = scene.checked().bodies[0]
    mp = body.resolved_mass_properties()
    Ip = np.asarray(mp.inertia_about(np.zeros(3)))
    com = np.asarray(mp.center_of_mass, float)
    g = np.asarray(scene.gravity, float)
    U0 = np.asarray(body.orientation, float)
    spin = float(U0[2] @ np.asarray(body.angular_velocity, float))
    fits = (np.allclose(Ip, np.diag(np.diag(Ip)), atol=1e-15) and math.isclose(Ip[0, 0], Ip[1, 1], rel_tol=1e-12)
            and np.allclose(com[:2], 0.0) and com[2] > 0 and np.allclose(g[:2], 0.0) and g[2] < 0
            and np.allclose(body.angular_velocity, spin * U0[2], atol=1e-12 * abs(spin)))
    if not fits:
        raise ValueError("heavy_top_closed_form needs a symmetric top spinning about body z, COM on +z, g along −z")
    return lagrange_top(Ip[0, 0], Ip[2, 2], mp.mass * -g[2] * com[2], U0, spin, t)


def pendulum_closed_form(theta0: float, omega_small: float, t):
    """Planar pendulum released from rest at θ₀: θ(t) with sin(θ/2) = k·sn(K − ω₀t | k²), k = sin(θ₀/2).

    omega_small: small-amplitude angular frequency √(Mgd/I_P) (√(g/l) for a point bob).
    """
    k = math.sin(theta0 / 2.0)
    K = float(ellipk(k * k))
    return 2.0 * np.arcsin(k * ellipj(K - omega_small * np.asarray(t, float), k * k)[0])


# ---------------------------------------------------------------------------- systems

@dataclass
class Case:
    key: str
    title: str
    scene: object            # timed, and the phase error
    energy_scene: object     # the energy error
    t_end: float
    dts: list
    dop_rtols: list
    releases: np.ndarray | None = None  # (E,1,3,3) more initial orientations, for a chaotic system


def cases(quick: bool) -> list[Case]:
    """The three systems with their step-size ladders.

    Every fixed-step method runs the same ladder dt = 2⁻ᵏ s (a whole number of steps in every t_end),
    from steps too coarse to be useful down to fine ones: the comparison needs each method's curve to
    start above the errors the others reach, or "equal error" would need extrapolation.
    """
    ladder = lambda k0, k1: [2.0**-k for k in range(k0, k1 + 1)]  # noqa: E731
    th = examples.t_handle(t_end=10.0)
    top_t = 0.5 if quick else 1.0
    top = examples.heavy_top(t_end=top_t)
    mag_t = 2.0 if quick else 5.0
    mag = examples.three_magnet(t_end=mag_t)
    mag0 = examples.three_magnet(t_end=mag_t, friction=0.0)
    # The example's release and seven more around the magnets: on a chaotic trajectory one final-time
    # error depends on how each method's local errors happen to project on the unstable directions.
    rel = [(0.06, 0.035)] + [(0.07 * math.cos(a), 0.07 * math.sin(a)) for a in np.radians(np.arange(45, 360, 45))]
    releases = np.stack([examples.three_magnet(release=r).bodies[0].orientation for r in rel])[:, None]
    rtols = [1e-6, 1e-9] if quick else [1e-5, 1e-7, 1e-9, 1e-11]
    return [
        Case("t-handle", "free T-handle (Dzhanibekov), 10 s", th, th, 10.0, ladder(2, 8 if quick else 10), rtols),
        Case("heavy-top", f"heavy symmetric top, {top_t:g} s", top, top, top_t, ladder(6, 10 if quick else 12), rtols),
        Case("three-magnet", f"three-magnet pendulum, {mag_t:g} s", mag, mag0, mag_t,
             ladder(5, 10 if quick else 11), rtols, releases=releases),
    ]


def reference(case: Case) -> dict:
    """Reference final orientation, what it is, and how far a second method puts it."""
    T = case.t_end
    if case.key == "three-magnet":
        def dop(rtol, atol):
            sc = replace(case.scene, settings=replace(case.scene.settings, rtol=rtol, atol=atol))
            return simulate(sc, method="dop853", dt=T / 64, t_end=T, record_interval=T).orientation[-1, 0]
        U = dop(**REFERENCE_TOL)
        check = rotation_angle(U, dop(rtol=1e-11, atol=1e-13))
        sc = replace(case.scene, settings=replace(case.scene.settings, **REFERENCE_TOL))
        members = simulate(sc, method="dop853", dt=T / 64, t_end=T, record_interval=T,
                           ensemble=Ensemble(orientation=case.releases)).orientation[:, -1, 0]
        return {"orientation": U, "members": members, "kind": "dop853, rtol 1e-12, atol 1e-14",
                "check": "angle to dop853 at rtol 1e-11, atol 1e-13", "check_rad": check}
    if case.key == "t-handle":
        body = case.scene.checked().bodies[0]
        U0 = np.asarray(body.orientation, float)
        cf = free_top(np.diag(body.mass_properties.inertia), U0 @ body.angular_velocity, U0, T)
        kind = "closed form (Jacobi elliptic functions + quadrature)"
    else:
        cf = heavy_top_closed_form(case.scene, T)
        kind = "closed form (Lagrange top: sn² + quadrature)"
    sc = replace(case.scene, settings=replace(case.scene.settings, **REFERENCE_TOL))
    dop = simulate(sc, method="dop853", dt=T / 64, t_end=T, record_interval=T).orientation[-1, 0]
    return {"orientation": cf["orientation"], "kind": kind, "quadrature_error": cf["quadrature_error"],
            "check": "angle to dop853 at rtol 1e-12, atol 1e-14", "check_rad": rotation_angle(cf["orientation"], dop)}


# ---------------------------------------------------------------------------- measuring

def measure(case: Case, method: str, U_ref: np.ndarray, repeats: int, dt: float | None = None,
            rtol: float | None = None, extra=None, U_members: np.ndarray | None = None) -> dict:
    """One ladder point: best wall time, phase error, energy error (or why the run stopped).

    extra(trajectory) -> dict: more figures from the energy run's records, merged into the row.
    U_members: reference final orientations (E,3,3) of ``case.releases``; adds ``phase_error_releases``,
    the geometric mean of the members' phase errors, from one (untimed) ensemble run.
    """
    T = case.t_end
    scene, energy_scene = case.scene, case.energy_scene
    row = {"method": method, "dt": dt, "rtol": rtol, "atol": None}
    if method == "dop853":
        # dt only sets dop853's chunks (it restarts at each record); the step size is adaptive.
        dt = T / 256
        row.update(dt=dt, atol=rtol * 1e-2)
        tol = {"rtol": rtol, "atol": rtol * 1e-2}
        scene = replace(scene, settings=replace(scene.settings, **tol))
        energy_scene = replace(energy_scene, settings=replace(energy_scene.settings, **tol))
    steps = int(round(T / dt))
    row["steps"] = steps
    best, tr = math.inf, None
    for _ in range(repeats):
        try:
            tr = simulate(scene, method=method, dt=dt, t_end=T, record_interval=T)
        except SimulationError as err:
            # A blow-up is a result (the method cannot run at this step), not a crash of the benchmark.
            row.update(failed=str(err), energy_failed=None, wall_s=None, steps_per_s=None, phase_error=None,
                       energy_error=None)
            return row
        best = min(best, tr.wall_time)
    row["wall_s"] = best
    row["steps_per_s"] = steps / best
    row["phase_error"] = rotation_angle(tr.orientation[-1, 0], U_ref)
    if U_members is not None:
        try:
            ens = simulate(scene, method=method, dt=dt, t_end=T, record_interval=T,
                           ensemble=Ensemble(orientation=case.releases))
            errs = [max(rotation_angle(U, V), FLOOR) for U, V in zip(ens.orientation[:, -1, 0], U_members)]
            row["phase_error_releases"] = float(np.exp(np.mean(np.log(errs))))
        except SimulationError as err:
            row.update(phase_error_releases=None, releases_failed=str(err))
    every = 1 if method == "dop853" else max(1, steps // ENERGY_RECORDS)
    try:
        etr = simulate(energy_scene, method=method, dt=dt, t_end=T, record_interval=every * dt)
    except SimulationError as err:
        row.update(failed=None, energy_failed=str(err), energy_error=None)
        return row
    E = etr.total_energy
    row.update(failed=None, energy_failed=None,
               energy_error=float(np.max(np.abs(E - E[0])) / np.max(etr.kinetic_energy.sum(-1))))
    if extra is not None:
        row.update(extra(etr))
    return row


# ---------------------------------------------------------------------------- analysis

def _finite(row: dict, key: str) -> bool:
    e = row.get(key)
    return row.get("failed") is None and e is not None and math.isfinite(e)


def mark_convergence(rows: list) -> None:
    """Set row["plateau"][key] for each error kind: True when the next finer point of the same method
    (smaller dt; dop853: smaller rtol) does not cut the error CONVERGING× (see the module docstring).
    The finest point, and one whose finer neighbour failed, count as converging."""
    for method in {r["method"] for r in rows}:
        mine = sorted((r for r in rows if r["method"] == method),
                      key=lambda r: -(r["rtol"] if method == "dop853" else r["dt"]))
        for r, finer in zip(mine, mine[1:] + [None]):
            r["plateau"] = {k: bool(finer is not None and _finite(r, k) and _finite(finer, k)
                                    and max(r[k], FLOOR) < CONVERGING * max(finer[k], FLOOR))
                            for k in ERROR_KEYS if k in r}


def _valid(row: dict, key: str) -> bool:
    return _finite(row, key) and row[key] < MEANINGFUL and not row.get("plateau", {}).get(key, False)


def front(rows: list, key: str) -> list:
    """Pareto front (wall time ascending, error strictly descending) of a method's valid points."""
    pts = sorted((r["wall_s"], max(r[key], FLOOR)) for r in rows if _valid(r, key))
    out = []
    for w, e in pts:
        if not out or e < out[-1][1]:
            out.append((w, e))
    return out


def cost_at(fr: list, e: float, clamp: bool) -> float | None:
    """Wall time at which front ``fr`` reaches error ``e`` (log-log interpolation), None outside its range.

    clamp: for an error above the cheapest point's, return the cheapest wall time (an upper bound)
    instead of None. Never extrapolates toward smaller errors.
    """
    e = max(e, FLOOR)
    if not fr or e < fr[-1][1]:
        return None
    if e >= fr[0][1]:
        return fr[0][0] if (clamp or e == fr[0][1]) else None
    for (w0, e0), (w1, e1) in zip(fr, fr[1:]):
        if e1 <= e <= e0:
            f = (math.log(e) - math.log(e0)) / (math.log(e1) - math.log(e0))
            return math.exp(math.log(w0) + f * (math.log(w1) - math.log(w0)))
    return None


def compare(rows: list, key: str) -> dict:
    """splitting4 against pem-rk4 on one error kind: per pem-rk4 point, dominated? cost ratio?"""
    fr = front([r for r in rows if r["method"] == DEFAULT], key)
    points, ratios = [], []
    for r in rows:
        if r["method"] != PEER or not _valid(r, key):
            continue
        bound = cost_at(fr, r[key], clamp=True)
        exact = cost_at(fr, r[key], clamp=False)
        ratio = None if exact is None else r["wall_s"] / exact
        if ratio is not None:
            ratios.append(ratio)
        points.append({"dt": r["dt"], "error": r[key], "wall_s": r["wall_s"], "splitting4_wall_s": exact,
                       "splitting4_wall_bound_s": bound, "cost_ratio": ratio,
                       "dominated": bound is not None and bound <= r["wall_s"]})
    out = {"points": points, "dominates": all(p["dominated"] for p in points) if points else None}
    if ratios:
        out.update(cost_ratio_median=float(np.median(ratios)), cost_ratio_min=float(min(ratios)),
                   cost_ratio_max=float(max(ratios)), n_ratios=len(ratios))
    return out


def ratio_curves(rows: list, key: str, n: int = 40) -> dict:
    """Wall time of each method ÷ pem-rk4's at matched error, on a grid of errors both reach."""
    peer = front([r for r in rows if r["method"] == PEER], key)
    curves = {}
    for m in METHODS:
        if m == PEER:
            continue
        fr = front([r for r in rows if r["method"] == m], key)
        if not fr or not peer:
            continue
        lo, hi = max(fr[-1][1], peer[-1][1]), min(fr[0][1], peer[0][1])
        if not lo < hi:
            continue
        grid = np.geomspace(lo, hi, n)
        vals = [(float(e), cost_at(fr, e, False), cost_at(peer, e, False)) for e in grid]
        curves[m] = [(e, a / b) for e, a, b in vals if a is not None and b is not None]
    return curves


def summary_sentence(kind: str, cmp: dict) -> str:
    if "cost_ratio_median" not in cmp:
        if cmp.get("dominates"):
            return (f"at equal {kind} error: every pem-rk4 point is beaten outright (splitting4 reaches a smaller "
                    f"error in less wall time, so no ratio at equal error exists: its errors are all below pem-rk4's)")
        return f"at equal {kind} error: no pem-rk4 point inside splitting4's error range"
    x = cmp["cost_ratio_median"]
    how = "about as much as" if 0.9 <= x <= 1.1 else (f"{x:.2g}× less than" if x > 1 else f"{1 / x:.2g}× more than")
    return (f"at equal {kind} error, the default (splitting4) costs {how} pem-rk4 (pem-rk4 ÷ splitting4 wall "
            f"time: median {x:.2f} over {cmp['n_ratios']} pem-rk4 points, range "
            f"{cmp['cost_ratio_min']:.2f}–{cmp['cost_ratio_max']:.2f})")


# ---------------------------------------------------------------------------- figures

def figures(results: dict, out_dir: Path) -> list:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    def style(ax):
        # Labelled minor ticks pile up on a horizontal log axis; vertical ones (ratios, often within a
        # decade) keep matplotlib's labels.
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    labels = {"phase_error": "phase error (rad)", "energy_error": "relative energy error"}
    for key, res in results["systems"].items():
        rows = res["runs"]
        fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
        for col, ek in enumerate(("phase_error", "energy_error")):
            ax = axes[0, col]
            for m in METHODS:
                pts = sorted((r["wall_s"], max(r[ek], FLOOR)) for r in rows
                             if r["method"] == m and r.get("failed") is None and r[ek] is not None)
                if pts:
                    ax.loglog(*zip(*pts), "o-", color=COLORS[m], label=m, ms=4)
                rel = sorted((r["wall_s"], max(r["phase_error_releases"], FLOOR)) for r in rows
                             if ek == "phase_error" and m in (DEFAULT, PEER) and r["method"] == m
                             and r.get("phase_error_releases") is not None)
                if rel:
                    ax.loglog(*zip(*rel), "s--", color=COLORS[m], label=f"{m}, 8 releases (geo. mean)", ms=3)
            if ek == "phase_error":
                ref = res["reference"]
                ax.axhline(max(ref["check_rad"], FLOOR), color="gray", ls=":", lw=1, label=ref["check"])
            ax.set_xlabel("wall time (s)")
            ax.set_ylabel(labels[ek])
            style(ax)
            ax = axes[1, col]
            for m, curve in res["ratio_curves"][ek].items():
                if curve:
                    ax.loglog(*zip(*curve), "-", color=COLORS[m], label=f"{m} ÷ pem-rk4")
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_xlabel(labels[ek] + " (matched)")
            ax.set_ylabel("wall time ÷ pem-rk4's at equal error")
            style(ax)
        fig.suptitle(f"{res['title']} — reference: {res['reference']['kind']}", fontsize=10)
        fig.tight_layout()
        path = out_dir / f"accuracy_{key}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(str(path))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for col, ek in enumerate(("phase_error", "energy_error")):
        ax = axes[col]
        for i, (key, res) in enumerate(results["systems"].items()):
            curve = res["ratio_curves"][ek].get(DEFAULT)
            if curve:
                ax.loglog(*zip(*[(e, 1 / r) for e, r in curve]), "-", color=f"C{i}", label=key)
            curve = res["ratio_curves"].get("phase_error_releases", {}).get(DEFAULT) if ek == "phase_error" else None
            if curve:
                ax.loglog(*zip(*[(e, 1 / r) for e, r in curve]), "--", color=f"C{i}", label=f"{key}, 8 releases")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xlabel(labels[ek] + " (matched)")
        ax.set_ylabel("pem-rk4 ÷ splitting4 wall time")
        style(ax)
    fig.suptitle("Wall time of pem-rk4 ÷ the default splitting4's at equal error, measured in the same run "
                 "(> 1: the default is cheaper)", fontsize=10)
    fig.tight_layout()
    path = out_dir / "accuracy_summary.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    paths.append(str(path))
    return paths


# ---------------------------------------------------------------------------- main

def _fmt(x, spec):
    if x is None:
        return "—".rjust(int(spec.split(".")[0]))
    return format(x, spec)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter runs, fewer points, one timing each (< 1 min)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "docs" / "bench", help="figures (PNG) go here")
    ap.add_argument("--no-figures", action="store_true")
    ap.add_argument("--repeats", type=int, help="timing runs per point, best kept (default 3, quick 1)")
    args = ap.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    start = time.perf_counter()
    results = {
        "mode": "quick" if args.quick else "full",
        "machine": {"python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "definitions": {
            "wall_s": f"best of {repeats} runs, Trajectory.wall_time, one record (the final state)",
            "phase_error": "rotation angle (rad) of U_final·U_refᵀ",
            "energy_error": "max_t |E(t) − E(0)| / max_t KE(t), from a separate run with ~500 records; "
                            "three-magnet: the undamped twin (friction 0)",
            "cost_ratio": "pem-rk4 wall time ÷ splitting4 wall time at the same error (>1: default cheaper)",
            "dominates": "every pem-rk4 point (error < 0.3, in the convergent regime) is matched by splitting4 "
                         "at ≤ error in ≤ wall time",
            "plateau": "per error kind: the next finer point of the same method (dt/2, or dop853's rtol/100) "
                       "does not cut the error 2×: outside the convergent regime, not used in the verdicts",
            "phase_error_releases": "three-magnet only: geometric mean of the phase errors of 8 releases (the "
                                    "example's and 7 around the magnets), one untimed ensemble run, against a "
                                    "dop853 ensemble at rtol 1e-12, atol 1e-14",
        },
        "systems": {},
    }
    for case in cases(args.quick):
        ref = reference(case)
        U_ref, U_members = ref.pop("orientation"), ref.pop("members", None)
        rows = []
        for method in METHODS:
            if method == "dop853":
                rows += [measure(case, method, U_ref, repeats, rtol=r, U_members=U_members) for r in case.dop_rtols]
            else:
                rows += [measure(case, method, U_ref, repeats, dt=dt, U_members=U_members) for dt in case.dts]
        mark_convergence(rows)
        phase, energy = compare(rows, "phase_error"), compare(rows, "energy_error")
        res = {
            "title": case.title, "t_end": case.t_end, "reference": ref, "runs": rows,
            "splitting4_vs_pem_rk4": {"phase": phase, "energy": energy},
            "dominates_phase": phase["dominates"], "dominates_energy": energy["dominates"],
            "dominates": bool(phase["dominates"] and energy["dominates"]),
            "summary": [summary_sentence("phase", phase), summary_sentence("energy", energy)],
            "ratio_curves": {k: ratio_curves(rows, k) for k in ("phase_error", "energy_error")},
        }
        if U_members is not None:
            rel = compare(rows, "phase_error_releases")
            res["splitting4_vs_pem_rk4"]["phase_releases"] = rel
            res["dominates_phase_releases"] = rel["dominates"]
            res["summary"].append(summary_sentence(f"{len(U_members)}-release (geometric mean) phase", rel))
            res["ratio_curves"]["phase_error_releases"] = ratio_curves(rows, "phase_error_releases")
        results["systems"][case.key] = res
        print(f"\n== {case.title}; reference: {ref['kind']} ({ref['check']}: {ref['check_rad']:.1e} rad)")
        more = U_members is not None
        print(f"{'method':<11} {'dt / rtol':>10} {'steps':>6} {'wall ms':>9} {'phase rad':>10} {'energy':>10}"
              + (f" {'releases':>10}" if more else ""))
        for r in rows:
            step = f"{r['rtol']:.0e}" if r["method"] == "dop853" else f"{r['dt']:.3g}"
            note = "  blow-up" if r["failed"] else ("  blow-up (energy run)" if r["energy_failed"] else "")
            flat = [k.replace("_error", "").replace("_", " ") for k, v in r.get("plateau", {}).items() if v]
            note += f"  plateau: {', '.join(flat)}" if flat else ""
            wall_ms = None if r["wall_s"] is None else r["wall_s"] * 1e3
            print(f"{r['method']:<11} {step:>10} {r['steps']:>6} {_fmt(wall_ms, '9.1f')} "
                  f"{_fmt(r['phase_error'], '10.2e')} {_fmt(r['energy_error'], '10.2e')}"
                  + (f" {_fmt(r.get('phase_error_releases'), '10.2e')}" if more else "") + note)
        for line in res["summary"]:
            print("  " + line)
        print(f"  splitting4 dominates pem-rk4: phase {phase['dominates']}, energy {energy['dominates']}"
              + (f", phase over releases {res['dominates_phase_releases']}" if more else ""))
    results["dominates"] = {k: v["dominates"] for k, v in results["systems"].items()}
    if not args.no_figures:
        results["figures"] = figures(results, args.out_dir)
    return finish(results, start, args.json, indent=1, allow_nan=False)


if __name__ == "__main__":
    main()
