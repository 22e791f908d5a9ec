"""A gas in a given box and its positions at frame times (pem_physics/io/gas_cache.py).

Oracles: the start state's own packing fraction, box and overlap checks (GasState, first_overlap), and
independent single runs of the engine to each frame time (sampling must not change the run).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from pem_physics.errors import Interrupted
from pem_physics.gas import edmd
from pem_physics.gas.state import first_overlap
from pem_physics.io.gas_cache import frame_positions, gas_in_box, sphere_radius


@pytest.mark.parametrize("eta, periodic", [(0.2, True), (0.2, False), (0.45, True), (0.45, False)])
def test_gas_fills_the_box_to_the_packing_fraction(eta, periodic):
    box = (2.0, 1.5, 1.0)
    s = gas_in_box(300, eta, box, periodic=periodic, temperature=2.0, seed=4)
    assert s.packing_fraction == pytest.approx(eta, rel=1e-12)
    np.testing.assert_array_equal(s.box, box)
    assert s.radii[0] == pytest.approx(sphere_radius(300, eta, box))
    assert first_overlap(s.positions, s.radii, s.box if periodic else None) is None
    if not periodic:
        assert np.all(s.positions >= s.radii[0] * (1 - 1e-12)) and np.all(s.positions <= s.box - s.radii[0] + 1e-12)
    assert np.sum(s.velocities ** 2) / (3 * 300) == pytest.approx(2.0)          # T = Σ m v² / (d N), m = 1
    again = gas_in_box(300, eta, box, periodic=periodic, temperature=2.0, seed=4)
    np.testing.assert_array_equal(again.positions, s.positions)


@pytest.mark.parametrize("args, match", [
    (dict(n=0, packing_fraction=0.2, box=(1, 1, 1)), r"N = 0 must be an integer >= 1"),
    (dict(n=2.5, packing_fraction=0.2, box=(1, 1, 1)), r"N = 2.5 must be an integer"),
    (dict(n=10, packing_fraction=0.9, box=(1, 1, 1)), r"packing fraction 0.9 is above the random close packing"),
    (dict(n=10, packing_fraction=-0.1, box=(1, 1, 1)), r"packing fraction -0.1 must be > 0"),
    (dict(n=10, packing_fraction=0.2, box=(1, 0, 1)), r"box lengths .* must be three finite lengths > 0"),
    (dict(n=10, packing_fraction=0.2, box=(1, 1, 1), temperature=-1.0), r"temperature -1 must be"),
    (dict(n=2, packing_fraction=0.3, box=(1, 1, 1)), r"box length 1 on axis x is too short"),
    (dict(n=500, packing_fraction=0.6, box=(4, 1, 1)), r"packing fraction 0.6 is too dense for a lattice start"),
])
def test_bad_settings_are_named(args, match):
    with pytest.raises(ValueError, match=match):
        gas_in_box(**args)


@pytest.mark.parametrize("periodic", [True, False])
def test_frame_positions_are_those_of_one_uninterrupted_run(periodic):
    s = gas_in_box(80, 0.25, (3.0, 2.5, 2.0), periodic=periodic, seed=2)
    times = np.arange(9) / 24.0
    engine = "auto"
    pos, info = frame_positions(s, times, engine=engine)
    assert pos.shape == (9, 80, 3) and info["collisions"] > 50
    np.testing.assert_array_equal(pos[0], s.positions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # the numpy fallback without numba says so
        for k in (3, 8):
            alone = edmd.run(s, float(times[k])).state.positions
            # the compiled engine is not disturbed at all; the numpy reference searches again from each frame
            # time, which changes round-off only
            tol = 0.0 if edmd.available() else 1e-9
            np.testing.assert_allclose(pos[k], alone, rtol=0, atol=tol)
    if periodic:
        assert np.all(pos >= 0) and np.all(pos <= s.box)
    else:
        r = s.radii[0]
        assert np.all(pos >= r - 1e-9) and np.all(pos <= s.box - r + 1e-9)
    assert info["kinetic_energy"][1] == pytest.approx(info["kinetic_energy"][0], rel=1e-12)


def test_stop_interrupts_and_progress_reaches_one():
    s = gas_in_box(40, 0.2, (2.0, 2.0, 2.0), seed=1)
    seen = []
    frame_positions(s, [0.0, 0.1, 0.2], progress=seen.append)
    assert seen and seen[-1] == pytest.approx(1.0) and all(0 <= f <= 1 for f in seen)
    with pytest.raises(Interrupted, match="stopped"):
        frame_positions(s, [0.0, 0.1], stop=lambda: True)
    with pytest.raises(ValueError, match="increasing"):
        frame_positions(s, [0.2, 0.1])
    assert math.isfinite(sphere_radius(40, 0.2, (2, 2, 2)))
