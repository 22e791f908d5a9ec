"""The benchmarks' own oracles and verdict logic (bench/bench_accuracy.py, bench/bench_mujoco.py), kept fast.

The closed forms the benchmarks measure against are checked here against the core on short runs, and the
dominance check against hand-made curves, so a wrong reference or a wrong verdict cannot go unnoticed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import bench_accuracy as ba  # noqa: E402

from pem_physics import examples  # noqa: E402
from pem_physics.engine.simulate import simulate  # noqa: E402


def test_rotation_angle_keeps_small_angles():
    U = ba._rx(1e-9)
    assert ba.rotation_angle(U, np.eye(3)) == pytest.approx(1e-9, rel=1e-6)
    assert ba.rotation_angle(ba._rz(3.0), np.eye(3)) == pytest.approx(3.0, rel=1e-12)


def test_free_top_closed_form_matches_the_core():
    sc = examples.t_handle(t_end=2.5)
    I = np.diag(examples.T_HANDLE_INERTIA)
    w0 = np.array([0.01, 8.0, 0.01])
    start = ba.free_top(I, w0, np.eye(3), 0.0)
    assert ba.rotation_angle(start["orientation"], np.eye(3)) < 1e-12
    assert start["omega0_mismatch"] < 1e-12
    tr = simulate(sc, method="splitting4", dt=1 / 512, t_end=2.5, record_interval=2.5)  # past the flip at 2.24 s
    cf = ba.free_top(I, w0, np.eye(3), 2.5)
    assert ba.rotation_angle(tr.orientation[-1, 0], cf["orientation"]) < 1e-6
    np.testing.assert_allclose(tr.omega_body[-1, 0], cf["omega_body"], atol=1e-4)  # of 8 rad/s


def test_lagrange_top_closed_form_matches_the_core():
    sc = examples.heavy_top(t_end=0.25)  # about one nutation period
    assert ba.rotation_angle(ba.heavy_top_closed_form(sc, 0.0)["orientation"], sc.bodies[0].orientation) < 1e-12
    tr = simulate(sc, method="splitting4", dt=1 / 2048, t_end=0.25, record_interval=0.25)
    assert ba.rotation_angle(tr.orientation[-1, 0], ba.heavy_top_closed_form(sc, 0.25)["orientation"]) < 1e-8


def test_pendulum_closed_form_starts_at_rest_at_theta0():
    th0, w = np.radians(60), np.sqrt(9.81)
    assert ba.pendulum_closed_form(th0, w, 0.0) == pytest.approx(th0, rel=1e-14)
    h = 1e-6  # released from rest: θ'(0) = 0, θ''(0) = −ω₀² sin θ₀
    th = [ba.pendulum_closed_form(th0, w, t) for t in (-h, 0.0, h)]
    assert (th[2] - th[0]) / (2 * h) == pytest.approx(0.0, abs=1e-6)
    assert (th[2] - 2 * th[1] + th[0]) / h**2 == pytest.approx(-9.81 * np.sin(th0), rel=1e-3)


def _rows(method, walls, errors):
    return [{"method": method, "dt": 2.0**-k, "wall_s": w, "phase_error": e, "failed": None}
            for k, (w, e) in enumerate(zip(walls, errors))]


def test_dominance_check_on_made_up_curves():
    s4 = _rows("splitting4", [1, 2, 4, 8], [1e-2, 1e-3, 1e-4, 1e-5])
    # pem-rk4 twice as slow for the same error: dominated, cost ratio 2
    slow = _rows("pem-rk4", [2, 4, 8], [1e-2, 1e-3, 1e-4])
    out = ba.compare(s4 + slow, "phase_error")
    assert out["dominates"] is True
    assert out["cost_ratio_median"] == pytest.approx(2.0)
    # one pem-rk4 point cheaper than splitting4 at its error: not dominated
    fast = _rows("pem-rk4", [2, 1.5], [1e-2, 1e-3])
    assert ba.compare(s4 + fast, "phase_error")["dominates"] is False
    # a pem-rk4 error below anything splitting4 reached cannot count as dominated
    deep = _rows("pem-rk4", [100], [1e-7])
    assert ba.compare(s4 + deep, "phase_error")["dominates"] is False
    # errors too large to mean anything are left out
    junk = _rows("pem-rk4", [0.1], [2.0])
    assert ba.compare(s4 + junk, "phase_error")["dominates"] is None


def test_mujoco_models_agree_with_the_core_on_the_pendulum():
    pytest.importorskip("mujoco")
    import bench_mujoco as bm

    case = next(c for c in bm.cases(quick=True) if c.key == "pendulum")
    out = bm.agreement(case)  # raises if the engines disagree
    assert out["ok"]
    for model in out["models"].values():
        assert model["mujoco_vs_ours_rad"] < 1e-8
