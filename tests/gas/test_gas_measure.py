"""Measurements (pem_physics/gas/measure.py): pressure against Carnahan–Starling and Henderson, collision
rate against Enskog, the speed distribution (Kolmogorov–Smirnov) after equilibration, the KS code itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pem_physics.gas import edmd, measure
from pem_physics.gas.state import GasState, make_gas

needs_numba = pytest.mark.skipif(not edmd.available(), reason="numba is not installed")


@needs_numba
@pytest.mark.parametrize("d,eta,t_end", [(3, 0.25, 30.0), (2, 0.30, 60.0)])
def test_virial_pressure_matches_the_equation_of_state(d, eta, t_end):
    """N = 1000 from a random start; 15 time blocks (the first dropped as equilibration, ~7 collisions
    per particle), each ~2 (3D) / ~4 (2D) mean collision times per particle × 7 long, so nearly
    independent: the standard error over blocks is the statistical error (~0.3 %). The tolerance is
    4 standard errors plus the equation of state's own error and finite-size effects at N = 1000
    (Carnahan–Starling lies 0.2 % below the accurate Kolafa–Labík–Malijevský value at η = 0.25,
    Henderson within ~0.3 % at η = 0.3; O(1/N) ~0.1 %)."""
    s = make_gas(1000, eta, d, seed=1)
    run = edmd.run(s, t_end, blocks=15)
    p = measure.pressure(run, skip_blocks=1)
    eos = measure.reduced_pressure_eos(eta, d)
    model_err = (0.002 if d == 3 else 0.004) * eos
    assert p.blocks == 14 and 0 < p.reduced_err < 0.01 * eos
    assert abs(p.reduced - eos) < 4 * p.reduced_err + model_err, (p, eos)
    assert p.T == pytest.approx(1.0, rel=1e-12)
    assert p.Z == pytest.approx(measure.compressibility(eta, d), abs=4 * p.Z_err + model_err / p.reduced * p.Z)
    # the collision rate follows from the same contact value g(σ) (Enskog)
    assert measure.collision_rate(run) == pytest.approx(measure.enskog_collision_rate(eta, d), rel=0.01)
    lam = measure.mean_free_path(run)
    mean_speed = math.sqrt(8 / math.pi) if d == 3 else math.sqrt(math.pi / 2)
    assert lam == pytest.approx(mean_speed / measure.enskog_collision_rate(eta, d), rel=0.05)


def test_pressure_of_a_known_run_by_hand():
    """Two equal spheres, one head-on collision in t = 2: P = (2K + W/t)/(dV) with W = 2 (σ = 1, v = ±1)."""
    s = GasState([[3.0, 5.0, 5.0], [6.0, 5.0, 5.0]], [[1.0, 0, 0], [-1.0, 0, 0]], 0.5, 1.0, [10.0] * 3)
    run = edmd.run(s, 2.0)
    p = measure.pressure(run)
    assert p.P == pytest.approx((2 * 1.0 + 2.0 / 2.0) / (3 * 1000.0), rel=1e-13)
    assert math.isnan(p.P_err) and p.T == pytest.approx(1 / 3, rel=1e-13)
    with pytest.raises(ValueError, match="skip_blocks = 1"):
        measure.pressure(run, skip_blocks=1)


@needs_numba
@pytest.mark.parametrize("d", [2, 3])
def test_speeds_relax_to_maxwell_boltzmann(d):
    """Start with every speed equal (far from equilibrium: the KS test rejects it), run ~30 collisions per
    particle, and the speeds pass the KS test against Maxwell (3D) / Rayleigh (2D); the histogram too."""
    s = make_gas(2000, 0.25, d, seed=3)
    rng = np.random.default_rng(0)
    u = rng.normal(size=(s.n, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    u -= u.mean(0)
    u *= math.sqrt(d * s.n / np.sum(u * u))  # T = 1 exactly, speeds nearly all √d
    s0 = GasState(s.positions, u, s.radii, s.masses, s.box)
    D0, p0 = measure.speed_ks_test(s0)
    assert p0 < 1e-10
    run = edmd.run(s0, 6.0 if d == 3 else 25.0)
    assert 2 * run.n_collisions / s.n > 30
    D, p = measure.speed_ks_test(run.state)
    assert p > 1e-3 and D < 0.05, (D, p)
    counts, edges, expected = measure.speed_histogram(run.state, bins=20)
    assert counts.sum() == s.n and expected.sum() == pytest.approx(s.n, rel=1e-3)
    big = expected > 20
    chi2 = np.sum((counts[big] - expected[big]) ** 2 / expected[big])
    assert chi2 < big.sum() + 6 * math.sqrt(2 * big.sum())


def test_ks_statistic_and_distributions_against_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(1)
    for d, dist in ((3, stats.maxwell), (2, stats.rayleigh)):
        x = np.linspace(0.0, 6.0, 61)
        assert np.allclose(measure.speed_cdf(x, d), dist.cdf(x), atol=1e-14)
        assert np.allclose(measure.speed_pdf(x, d), dist.pdf(x), atol=1e-14)
        for n, scale in ((200, 1.0), (1000, 1.1)):
            sample = dist.rvs(size=n, scale=scale, random_state=rng)
            D = measure.ks_statistic(sample, lambda u, d=d: measure.speed_cdf(u, d))
            ref = stats.kstest(sample, dist.cdf)
            assert D == pytest.approx(ref.statistic, rel=1e-12)
            exact = stats.kstwo.sf(D, n)
            assert measure.ks_pvalue(D, n) == pytest.approx(exact, rel=0.05, abs=1e-4)


def test_equations_of_state_values():
    assert measure.carnahan_starling(0.25) == pytest.approx(1.296875 / 0.421875, rel=1e-15)
    assert measure.reduced_pressure_eos(0.25, 3) == pytest.approx(1.4678, abs=1e-4)  # the peer's reference value
    assert measure.henderson(0.3) == pytest.approx((1 + 0.09 / 8) / 0.49, rel=1e-15)
    for d in (2, 3):  # Z = 1 + 2^(d-1) η g(σ): the contact value is the equation of state's
        eta = 0.37
        assert measure.compressibility(eta, d) == pytest.approx(1 + 2 ** (d - 1) * eta * measure.contact_value(eta, d))


def test_temperature_and_scaled_speeds_with_unequal_masses():
    s = make_gas(50, 0.1, 2, seed=2, temperature=2.5)
    s.masses[:] = np.linspace(1, 4, 50)
    assert measure.temperature(s) == pytest.approx(np.sum(s.masses * np.sum(s.velocities ** 2, 1)) / 100)
    u = measure.scaled_speeds(s, T=2.0)
    assert np.allclose(u, np.linalg.norm(s.velocities, axis=1) * np.sqrt(s.masses / 2.0))
