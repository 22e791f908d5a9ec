"""The round-off bound of tests/roundoff.py can still fail: real bugs exceed it, and it stays near rounding.

Oracle: numpy reference runs only (no compiled engine): a run with a planted error (a friction coefficient off
by 1e-6 relative; records one step late) stands for the run under test; it must break the bound that the
reference's twin runs measure, by a wide margin, while a regular motion's bound stays ~1e-12 relative.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_compiled import ARRAYS, assert_close, magnet_pendulum, reference

from conftest import splitting4_once
from roundoff import DIRECTIONS, measure, nudge, pick, twins


def runs(scene, **kw):
    """(numpy reference, its twins) of ``scene``."""
    return reference(scene, **kw), twins(lambda: reference(scene, **kw))


def worst(got, ref, tw, arrays=("orientation", "omega", "angular_momentum")):
    """The largest err/bound over ``arrays`` of got against ref."""
    return max(e / b for e, _, b, _ in (measure(getattr(got, k), getattr(ref, k), pick(tw, k), ref.steps)
                                        for k in arrays))


def test_nudge_moves_one_ulp_either_way_the_same_for_the_same_value():
    rng = np.random.default_rng(5)
    x = rng.normal(size=10_000) * 10.0 ** rng.integers(-5, 5, size=10_000)
    ys = [nudge(x, d) for d in DIRECTIONS]
    for y in ys:
        assert np.all((y == np.nextafter(x, np.inf)) | (y == np.nextafter(x, -np.inf)))
        assert 0.45 < np.mean(y > x) < 0.55                    # both ways, as if at random
    assert 0.45 < np.mean(ys[0] != ys[1]) < 0.55               # and independently in the two twins
    np.testing.assert_array_equal(nudge(x[::-1])[::-1], ys[0])  # by value, not by place or call
    assert nudge(x[3]) == ys[0][3]


@pytest.mark.parametrize("method", splitting4_once(["splitting4", "splitting2", "pem-rk4"]))
def test_a_friction_coefficient_off_by_1e_6_relative_exceeds_the_bound(method):
    """test_compiled's "friction" scene (the loosest bound there: the kicks' (1 − e⁻ᶜʰ/λ)/c loses digits to
    cancellation, so an ulp of exp moves it ~1e-11) with c·(1 + 1e-6): orientations ~1e-7 off."""
    scene = magnet_pendulum(friction=3e-5)
    ref, tw = runs(scene, method=method)
    bug = reference(replace(scene, friction=3e-5 * (1 + 1e-6)), method=method)
    with pytest.raises(AssertionError, match="round-off bound"):
        assert_close(ref, bug, tw)
    assert worst(bug, ref, tw) > 20  # measured 193 (splitting4), ~1e3 (splitting2), ~1e5 (pem-rk4)


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_records_one_step_late_exceed_the_bound():
    """Every record taken one step late (an off-by-one in the step count): far outside the bound."""
    scene = magnet_pendulum(friction=3e-5)
    ref, tw = runs(scene, record_interval=scene.settings.dt)
    for k in ("orientation", "omega"):
        a = getattr(ref, k)
        err, _, b, _ = measure(a[1:], a[:-1], [t[:-1] for t in pick(tw, k)], ref.steps)
        assert err > 1e4 * b, k


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_the_bound_stays_near_rounding_for_a_regular_motion():
    """The magnet pendulum without friction over 1000 steps: every quantity's bound ≤ 1e-11 of its scale (the
    floor alone is 8.9e-13), and with friction ≤ 3e-9 (measured 1.8e-9: the cancellation above)."""
    for scene, most in ((magnet_pendulum(), 1e-11), (magnet_pendulum(friction=3e-5), 3e-9)):
        ref, tw = runs(scene)
        for k in ARRAYS[:3]:
            _, _, b, scale = measure(getattr(ref, k), getattr(ref, k), pick(tw, k), ref.steps)
            assert b <= most * scale, (scene.friction, k, b / scale)
