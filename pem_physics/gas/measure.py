"""Measurements on a hard-sphere gas run: pressure, temperature, collision rate, speeds; equations of state.

Units as in :mod:`.state` (k_B = 1). N particles, d dimensions, volume V (area in 2D), σ the
diameter (2 × the mean radius unless given).

- pressure from the virial over collisions (theory §7): P = (2 K + W / t) / (d V), where K is
  the kinetic energy and W = Σ m_i Δv_i · r_ij over the collisions of a time t; for a constant
  K this is P = ρ k_B T + W / (d V t). The error bar is the standard error over the run's time
  blocks (``blocks`` of the engines' ``run``), which are long compared with the collision time
  and so nearly independent;
- wall pressure (:func:`wall_pressure`, hard walls): the momentum each wall took per unit time per
  unit area of the surface the centres touch, from the engines' per-block wall impulses; a dilute gas
  gives N k T / V_acc (V_acc the volume the centres reach), a denser one k T × the contact density;
- reduced pressure βPσ^d = P σ^d / T; compressibility factor Z = βP/ρ;
- equations of state: Carnahan–Starling (3D) βP/ρ = (1 + η + η² − η³)/(1 − η)³ and Henderson
  (2D) βP/ρ = (1 + η²/8)/(1 − η)², with the contact values g(σ) they imply for the Enskog
  collision rate ν = 4 ρ σ² g √(π T/m) (3D), 2 ρ σ g √(π T/m) (2D);
- speeds: u = |v| √(m/T) follows the Maxwell distribution (3D) or Rayleigh's (2D) with unit
  scale, whatever the masses; the Kolmogorov–Smirnov statistic and its asymptotic p-value are
  computed here with numpy (no scipy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .state import GasRun, GasState

_erf = np.frompyfunc(math.erf, 1, 1)


def number_density(packing_fraction: float, d: int, sigma: float = 1.0) -> float:
    """ρ (particles per volume) of balls of diameter sigma at a packing fraction."""
    return packing_fraction / (math.pi / 6 * sigma ** 3 if d == 3 else math.pi / 4 * sigma ** 2)


def carnahan_starling(eta) -> np.ndarray | float:
    """Z = βP/ρ of hard spheres at packing fraction eta (Carnahan–Starling)."""
    return (1 + eta + eta ** 2 - eta ** 3) / (1 - eta) ** 3


def henderson(eta) -> np.ndarray | float:
    """Z = βP/ρ of hard disks at area fraction eta (Henderson)."""
    return (1 + eta ** 2 / 8) / (1 - eta) ** 2


def compressibility(eta, d: int):
    """Z = βP/ρ from the equation of state for d (Carnahan–Starling in 3D, Henderson in 2D)."""
    return carnahan_starling(eta) if d == 3 else henderson(eta)


def reduced_pressure_eos(eta, d: int):
    """βPσ^d from the equation of state for d."""
    return number_density(eta, d) * compressibility(eta, d)


def contact_value(eta, d: int):
    """g(σ), the pair distribution at contact, implied by the equation of state (Z = 1 + 2^(d-1) η g)."""
    return (1 - eta / 2) / (1 - eta) ** 3 if d == 3 else (1 - 7 * eta / 16) / (1 - eta) ** 2


def enskog_collision_rate(eta, d: int, temperature: float = 1.0, mass: float = 1.0, sigma: float = 1.0):
    """Collisions per particle per unit time (each collision counts for both partners), Enskog theory."""
    rho = number_density(eta, d, sigma)
    g = contact_value(eta, d)
    pref = 4 * sigma ** 2 if d == 3 else 2 * sigma
    return pref * rho * g * math.sqrt(math.pi * temperature / mass)


def temperature(state: GasState) -> float:
    """Kinetic temperature Σ m v² / (d N) (k_B = 1)."""
    return 2.0 * state.kinetic_energy() / (state.d * state.n)


@dataclass
class Pressure:
    """Pressure of a run: ``P`` and its standard error ``P_err`` (energy / volume), the temperature
    ``T`` used, the reduced pressure ``reduced`` = βPσ^d (± ``reduced_err``), Z = βP/ρ (± ``Z_err``)
    and the number of blocks the error comes from."""

    P: float
    P_err: float
    T: float
    reduced: float
    reduced_err: float
    Z: float
    Z_err: float
    blocks: int


def pressure(run: GasRun, sigma: float | None = None, skip_blocks: int = 0) -> Pressure:
    """Virial pressure of ``run`` over its time blocks after the first ``skip_blocks`` (equilibration).

    Each block's pressure uses the kinetic energy at its end (constant for e = 1); the mean is
    weighted by block duration; the error is the standard error of the block values (nan with one block).
    """
    st = run.state
    d, n, vol = st.d, st.n, st.volume
    sig = 2.0 * float(np.mean(st.radii)) if sigma is None else float(sigma)
    dt = np.diff(run.block_times)[skip_blocks:]
    vir = run.block_virial[skip_blocks:]
    kin = run.block_kinetic[skip_blocks:]
    if dt.size == 0 or np.any(dt <= 0):
        raise ValueError(f"skip_blocks = {skip_blocks} leaves no block of positive duration in the run")
    p_blocks = (2.0 * kin + vir / dt) / (d * vol)
    p = float(np.sum(p_blocks * dt) / np.sum(dt))
    err = float(np.std(p_blocks, ddof=1) / math.sqrt(p_blocks.size)) if p_blocks.size > 1 else math.nan
    T = float(np.sum(2.0 * kin / (d * n) * dt) / np.sum(dt))
    rho = n / vol
    return Pressure(P=p, P_err=err, T=T, reduced=p * sig ** d / T, reduced_err=err * sig ** d / T,
                    Z=p / (rho * T), Z_err=err / (rho * T), blocks=int(p_blocks.size))


@dataclass
class WallPressure:
    """Pressure on each hard wall of a run (:func:`wall_pressure`), all (W,) over the wall ids of
    :class:`.state.Container`: ``P`` (energy / volume) and its standard error ``P_err`` over the run's
    time blocks, the ``area`` used (length in 2D), the wall ``names``; ``ideal`` = N T / V_acc, the ideal
    gas's value with the volume the centres reach, and ``T`` the mean temperature of the blocks."""

    P: np.ndarray
    P_err: np.ndarray
    area: np.ndarray
    names: list
    ideal: float
    T: float


def wall_pressure(run: GasRun, skip_blocks: int = 0) -> WallPressure:
    """Momentum given to each wall per unit area per unit time, over the blocks after ``skip_blocks``.

    The area is that of the surface the centres touch (the wall moved in by the largest radius r:
    4π(R_w − r)² for a sphere, 2π(R_w − r)(L − 2r) for a cylinder's side, π(R_w − r)² for its caps,
    the face minus r at each edge for a box), so that a dilute gas gives P = N k T / V_acc on every wall,
    V_acc the volume the centres reach; a denser gas gives k T times the centres' density at contact
    (the contact theorem), which is the bulk pressure for a flat wall and differs by O(σ / R_w) on a
    curved one. Walls without an area here (faces a curved wall replaces, oblique planes) give nan.
    """
    st = run.state
    d = st.d
    if st.periodic:
        raise ValueError("a periodic box has no walls: no wall pressure (use pressure(), the virial)")
    if run.block_wall_impulse is None or len(run.block_wall_impulse) == 0:
        raise ValueError("the run has no per-block wall impulses (run it with an event-driven engine)")
    dt = np.diff(run.block_times)[skip_blocks:]
    imp = run.block_wall_impulse[skip_blocks:]
    kin = run.block_kinetic[skip_blocks:]
    if dt.size == 0 or np.any(dt <= 0):
        raise ValueError(f"skip_blocks = {skip_blocks} leaves no block of positive duration in the run")
    r = float(st.radii.max())
    area = st.container.wall_areas(r, st.box)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_blocks = imp / (area[None, :] * dt[:, None])
    p = np.sum(p_blocks * dt[:, None], axis=0) / np.sum(dt)
    err = (np.std(p_blocks, axis=0, ddof=1) / math.sqrt(p_blocks.shape[0]) if p_blocks.shape[0] > 1
           else np.full(p.shape, math.nan))
    T = float(np.sum(2.0 * kin / (d * st.n) * dt) / np.sum(dt))
    return WallPressure(P=p, P_err=err, area=area, names=st.container.wall_names(d),
                        ideal=st.n * T / st.container.accessible_volume(r, st.box), T=T)


def collision_rate(run: GasRun) -> float:
    """Collisions per particle per unit time, 2 N_coll / (N t) (each collision involves two particles)."""
    return 2.0 * run.n_collisions / (run.state.n * run.duration)


def mean_free_path(run: GasRun) -> float:
    """Mean speed over collision rate (length): the mean distance flown between collisions."""
    mean_speed = float(np.mean(np.linalg.norm(run.state.velocities, axis=1)))
    return mean_speed / collision_rate(run)


def scaled_speeds(state: GasState, T: float | None = None) -> np.ndarray:
    """u = |v| √(m/T) (N,): Maxwell (3D) / Rayleigh (2D) distributed with unit scale in equilibrium."""
    T = temperature(state) if T is None else T
    return np.linalg.norm(state.velocities, axis=1) * np.sqrt(state.masses / T)


def maxwell_cdf(u) -> np.ndarray:
    """CDF of the 3D Maxwell speed distribution with unit scale: erf(u/√2) − √(2/π) u e^(−u²/2)."""
    u = np.asarray(u, dtype=np.float64)
    return _erf(u / math.sqrt(2)).astype(np.float64) - math.sqrt(2 / math.pi) * u * np.exp(-u * u / 2)


def rayleigh_cdf(u) -> np.ndarray:
    """CDF of the 2D speed (Rayleigh) distribution with unit scale: 1 − e^(−u²/2)."""
    u = np.asarray(u, dtype=np.float64)
    return 1.0 - np.exp(-u * u / 2)


def speed_cdf(u, d: int) -> np.ndarray:
    return maxwell_cdf(u) if d == 3 else rayleigh_cdf(u)


def speed_pdf(u, d: int) -> np.ndarray:
    """Density of u: √(2/π) u² e^(−u²/2) (3D), u e^(−u²/2) (2D)."""
    u = np.asarray(u, dtype=np.float64)
    return (math.sqrt(2 / math.pi) * u * u if d == 3 else u) * np.exp(-u * u / 2)


def ks_statistic(samples, cdf) -> float:
    """Kolmogorov–Smirnov D = sup |F_n − F| of samples (n,) against a CDF (a vectorised callable)."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = x.size
    f = np.asarray(cdf(x), dtype=np.float64)
    k = np.arange(1, n + 1)
    return float(max(np.max(k / n - f), np.max(f - (k - 1) / n)))


def ks_pvalue(D: float, n: int) -> float:
    """Asymptotic p-value of the one-sample KS statistic (Kolmogorov's series with Stephens'
    finite-n correction λ = (√n + 0.12 + 0.11/√n) D); good to a few per cent for n ≥ 35."""
    sq = math.sqrt(n)
    lam = (sq + 0.12 + 0.11 / sq) * D
    if lam < 0.2:
        return 1.0
    k = np.arange(1, 101)
    return float(min(1.0, max(0.0, 2.0 * np.sum((-1.0) ** (k - 1) * np.exp(-2.0 * k * k * lam * lam)))))


def speed_ks_test(state: GasState, T: float | None = None) -> tuple[float, float]:
    """(D, p-value) of the scaled speeds against Maxwell (3D) / Rayleigh (2D)."""
    u = scaled_speeds(state, T)
    D = ks_statistic(u, lambda x: speed_cdf(x, state.d))
    return D, ks_pvalue(D, u.size)


def speed_histogram(state: GasState, bins: int = 30, T: float | None = None):
    """(counts (bins,), edges (bins+1,), expected counts (bins,)) of the scaled speeds u, the
    expectation from the Maxwell / Rayleigh CDF over each bin."""
    u = scaled_speeds(state, T)
    edges = np.linspace(0.0, max(float(u.max()), 4.0) * 1.0001, bins + 1)
    counts, _ = np.histogram(u, edges)
    expected = u.size * np.diff(speed_cdf(edges, state.d))
    return counts, edges, expected
