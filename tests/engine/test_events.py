"""Event location (engine/contact/events.py): Brent to round-off on the chosen side, first crossings, grazing dips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pem_physics.engine.contact.events import brent, first_crossing

from budget import property_settings

EPS = np.finfo(float).eps


@given(st.floats(-5, 5), st.floats(0.1, 3), st.floats(0.5, 20))
@property_settings(100)
def test_brent_finds_roots_to_round_off_on_the_chosen_side(root, width, k):
    g = lambda t: np.tanh(k * (root - t)) + 0.1 * (root - t) ** 3  # noqa: E731  (monotone, root known)
    a, b = root - width, root + 0.7 * width
    calls = []
    ta = brent(lambda t: calls.append(t) or g(t), a, b, side="a")
    tb = brent(g, a, b, side="b")
    assert g(ta) >= 0 and g(tb) <= 0
    assert abs(ta - root) <= 4 * EPS * max(1.0, abs(root)) and abs(tb - root) <= 4 * EPS * max(1.0, abs(root))
    assert len(calls) < 80
    assert brent(g, a, b, side="a") == ta  # deterministic


def test_first_crossing_of_a_falling_parabola():
    # gap of a ball dropped from 1 m: 1 − g t²/2, root √(2/g)
    g = 9.81
    t = first_crossing(lambda t: 1 - 0.5 * g * t * t, 0.0, 1.0, n_sub=4)
    assert abs(t - np.sqrt(2 / g)) < 4 * EPS and 1 - 0.5 * g * t * t >= 0
    assert first_crossing(lambda t: 1 + t, 0.0, 1.0) is None


@given(st.floats(0.05, 0.95), st.floats(1e-9, 1e-3), st.integers(2, 8))
@property_settings(100)
def test_grazing_dip_between_positive_samples_is_found(tm, depth, n_sub):
    # g = (t − tm)² − depth: both roots may fall inside one sub-interval, all samples positive
    g = lambda t: (t - tm) ** 2 - depth  # noqa: E731
    t = first_crossing(g, 0.0, 1.0, n_sub=n_sub)
    assert t is not None
    assert abs(t - (tm - np.sqrt(depth))) < 1e-12 and g(t) >= 0


def test_a_tangency_or_a_miss_is_not_an_event():
    assert first_crossing(lambda t: (t - 0.37) ** 2 + 1e-12, 0.0, 1.0) is None


def test_the_limit_two_samples_and_no_slope_miss_a_dip_in_the_middle():
    # documented limit: with one sub-interval both samples are "minima" only at the ends; the dip in
    # the middle of the step is missed unless the step has sub-intervals around it
    g = lambda t: (t - 0.5) ** 2 - 1e-3  # noqa: E731
    assert first_crossing(g, 0.0, 1.0, n_sub=1) is None
    assert abs(first_crossing(g, 0.0, 1.0, n_sub=2) - (0.5 - np.sqrt(1e-3))) < 1e-12


def test_the_kernels_brent_is_the_same_method_step_for_step():
    """The compiled kernels inline engine/brent.py's steps; compiled, they ask for the same points and return the
    same root bit for bit as the Python loop (events.brent) on the same g."""
    pytest.importorskip("numba")
    from pem_physics.engine import brent as root
    from pem_physics.engine.impact_kernels import _brent, _brent_start

    def g(t):
        return (t - 0.3) ** 3 + 1e-3 * (t - 0.3)

    asked = []
    want = brent(lambda t: asked.append(t) or g(t), 0.0, 1.0, g(0.0), g(1.0), side="a")
    bs = np.zeros(root.STATE)
    got_asked = []
    done, t = _brent_start(bs, 0.0, 1.0, g(0.0), g(1.0))
    while not done:
        got_asked.append(t)
        done, t = _brent(bs, g(t))
    assert t == want and got_asked == asked and len(asked) > 3
