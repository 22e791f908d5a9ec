"""Every script in examples/ runs (short t_end) and its physical claim holds against a closed form."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ellipk

from pem_physics import examples

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name):
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_example_script_has_a_main():
    scripts = sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_"))
    assert set(scripts) >= {"pendulums", "heavy_top", "compass", "pendulum_wave", "compass_array",
                            "magnetic_pendulum", "t_handle", "methods"}
    for s in scripts:
        assert "def main(t_end=None, outdir=None" in (EXAMPLES / f"{s}.py").read_text(encoding="utf-8")


def test_ellipk_matches_scipy():
    for m in (0.0, 0.1, 0.5, 0.9, 0.999):
        assert examples.ellipk(m) == pytest.approx(ellipk(m), rel=1e-14)


def test_pendulums(tmp_path):
    res = load("pendulums").main(t_end=4.5, outdir=tmp_path)
    g = 9.81
    # simple: point mass on 1 m, 60°; physical: 0.1 kg rod of 0.5 m + 0.5 kg sphere r = 5 cm at its foot, 40°
    T_simple = 4 * np.sqrt(1.0 / g) * ellipk(np.sin(np.radians(30)) ** 2)
    M, d = 0.6, (0.1 * 0.25 + 0.5 * 0.5) / 0.6
    I_P = 0.1 * 0.5**2 / 3 + 0.5 * (0.4 * 0.05**2 + 0.5**2)
    T_phys = 4 * np.sqrt(I_P / (M * g * d)) * ellipk(np.sin(np.radians(20)) ** 2)
    assert res["simple"]["period_measured_s"] == pytest.approx(T_simple, rel=1e-5)
    assert res["physical"]["period_measured_s"] == pytest.approx(T_phys, rel=1e-5)
    assert res["claim_holds"]
    assert (tmp_path / "simple" / "energy.png").exists()


def test_heavy_top():
    res = load("heavy_top").main(t_end=0.2)
    M, l = 0.102, (0.1 * 0.04 + 0.002 * 0.03) / 0.102
    I3 = 0.1 * 0.03**2 / 2 + 0.002 * 0.002**2 / 2
    assert res["precession_rate_fast_top_Mgd_over_I3w3"] == pytest.approx(M * 9.81 * l / (I3 * 600.0), rel=1e-12)
    assert res["precession_rate"] == pytest.approx(M * 9.81 * l / (I3 * 600.0), rel=0.02)
    assert res["precession_rate"] == pytest.approx(res["precession_rate_closed_form"], rel=1e-4)
    assert res["nutation_period_s"] == pytest.approx(res["nutation_period_closed_form_s"], rel=1e-4)
    # fast top: the nutation period tends to 2π I₁/(I₃ω₃)
    I1 = 0.1 * (0.03**2 / 4 + 0.004**2 / 3) + 0.1 * 0.04**2 + 0.002 * (0.002**2 / 4 + 0.03**2 / 3 + 0.03**2)
    assert res["nutation_period_s"] == pytest.approx(2 * np.pi * I1 / (I3 * 600.0), rel=0.02)
    assert res["claim_holds"]


def test_compass():
    res = load("compass").main(t_end=0.6)
    p, B, m, r, h = 0.2, 1e-2, 0.003, 0.002, 0.03
    I = m * (r * r / 4 + h * h / 3)
    assert res["small_oscillation_frequency_sqrt_pB_over_I"] == pytest.approx(np.sqrt(p * B / I), rel=1e-12)
    assert res["period_measured_s"] == pytest.approx(4 * np.sqrt(I / (p * B)) * ellipk(np.sin(np.radians(15)) ** 2),
                                                     rel=1e-5)
    assert res["lag_measured_rad"] == pytest.approx(np.arcsin(1.2e-4 * 5.0 / (p * B)), rel=1e-3)
    assert res["claim_holds"]


def test_pendulum_wave():
    res = load("pendulum_wave").main(t_end=5.0)
    assert res["realign_max_error_rad"] < 1e-4 * res["amplitude_rad"]
    assert res["half_time_max_error_rad"] < 1e-4 * res["amplitude_rad"]
    assert res["quarter_time_spread_rad"] > res["amplitude_rad"]
    assert res["claim_holds"]


def test_pendulum_wave_lengths_follow_the_exact_period():
    scene = examples.pendulum_wave(n=15, cycles=51, period=60.0, amplitude_deg=10.0)
    K = ellipk(np.sin(np.radians(5.0)) ** 2)
    for k, b in enumerate(scene.bodies):
        length = -b.mass_properties.center_of_mass[2]
        assert 4 * np.sqrt(length / 9.81) * K * (51 + k) == pytest.approx(60.0, rel=1e-13)


def test_compass_array():
    res = load("compass_array").main(t_end=0.4)
    nf, f = res["no_friction"], res["friction"]
    assert nf["energy_drift_relative"] < 1e-5
    assert f["largest_energy_rise_J"] <= 0
    assert f["energy_end_J"] < f["energy_start_J"] - 0.1 * f["kinetic_energy_max_J"]
    assert res["claim_holds"]


def test_magnetic_pendulum():
    mod = load("magnetic_pendulum")
    res = mod.main(t_end=4.0)
    nf, f = res["no_friction"], res["friction"]
    assert nf["energy_drift_relative"] < 1e-5
    assert nf["kinetic_energy_late_mean_J"] > 0.1 * nf["kinetic_energy_max_J"]  # still swinging
    mags = mod.magnet_xy(examples.three_magnet())
    d = np.linalg.norm(mags - np.asarray(f["final_bob_xy_m"]), axis=1)
    assert d.min() < 0.01 and np.sort(d)[1] > 0.05  # over one magnet, far from the others
    assert f["final_kinetic_energy_J"] < 1e-3 * nf["kinetic_energy_max_J"]
    assert f["energy_never_increases"]
    assert res["claim_holds"]


def test_t_handle_from_mesh_flips_at_the_jacobi_interval():
    res = load("t_handle").main(t_end=12.0)
    # independent tensor: the two boxes by the cuboid formula, combined by hand
    rho = 2700.0
    def box(a, b, c, y):
        m = rho * 8 * a * b * c
        return m, np.array([0, y, 0]), m / 3 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    parts = [box(0.03, 0.005, 0.005, 0.0), box(0.005, 0.02, 0.005, 0.025)]
    M = sum(p[0] for p in parts)
    com = sum(p[0] * p[1] for p in parts) / M
    I = sum(p[2] + p[0] * ((p[1] - com) @ (p[1] - com) * np.eye(3) - np.outer(p[1] - com, p[1] - com)) for p in parts)
    moments = np.sort(np.linalg.eigvalsh(I))
    np.testing.assert_allclose(res["principal_moments_kg_m2"], moments, rtol=1e-12)
    # Jacobi: ω₂ = A₂ sn(λt + τ₀) changes sign every 2K(m)/λ
    w = 8.0 * np.array([1e-3, 1.0, 1e-3])
    I1, I2, I3 = moments
    L2, E2 = np.sum((moments * w) ** 2), np.sum(moments * w**2)
    if L2 < E2 * I2:
        I1, I3 = I3, I1
    m = (I2 - I1) * (E2 * I3 - L2) / ((I3 - I2) * (L2 - E2 * I1))
    lam = np.sqrt((I3 - I2) * (L2 - E2 * I1) / (I1 * I2 * I3))
    assert len(res["flip_times_s"]) >= 2
    assert res["flip_interval_s"] == pytest.approx(2 * ellipk(m) / lam, rel=1e-3)
    assert res["claim_holds"]


def test_methods_comparison(tmp_path):
    res = load("methods").main(t_end=5.0, outdir=tmp_path)
    e, s = res["pem-euler"], res["splitting4"]
    assert e["energy_error_end"] > 3 * e["energy_error_first_quarter"] > 1e-3  # grows
    assert s["energy_error_max"] < 1e-8  # bounded
    assert e["sphere_drift"]["orbit"] > 1e-2 > 1e-7 > s["sphere_drift"]["orbit"]
    assert res["claim_holds"]
    assert (tmp_path / "energy_error.png").read_bytes()[:4] == b"\x89PNG"
