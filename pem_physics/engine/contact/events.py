"""Event location inside a time step (theory §7): where does a gap function g(t) first go negative?

- :func:`brent` — Brent's bracketing root finder (inverse quadratic interpolation, secant and
  bisection; Brent 1973, the netlib ``zeroin``): given g(a), g(b) of opposite signs it shrinks the
  bracket to round-off (about 4·eps·|t|) and returns the end of the final bracket on a chosen side,
  so an impact is applied *before* the surfaces overlap. Deterministic: the same inputs give the
  same sequence of evaluations.
- :func:`first_crossing` — the first time in (t0, t1] where g turns negative, for g built from a
  state-advance function (dense output, or a re-integration from the step start) and a gap
  function (:func:`gap_of`). It samples g on ``n_sub`` equal sub-intervals; a sign change between
  samples is bracketed directly. A grazing approach whose minimum dips below zero between samples
  that are all positive (a double root, or two roots within one sub-interval) is caught by
  minimising g around every local minimum of the samples, the end samples included (golden section
  on the one or two sub-intervals beside it), and bracketing the first root between the sample
  before and the minimiser.

  Limits: the dip search assumes g is unimodal on the two sub-intervals around a sample minimum
  and close to a parabola there; it skips an interior sample minimum g_k whose value exceeds the
  larger rise to its neighbours (a parabola's true minimum is at most a quarter of that rise below
  g_k). A minimum at an end sample is searched when the parabola through the three samples at that
  end opens upwards with its vertex in the end sub-interval (so ``n_sub`` ≥ 2 for this check). A dip
  narrower than a sub-interval that leaves no local minimum among the samples (g keeps falling or
  rising through the samples around it) is missed: choose ``n_sub`` so that a sub-interval is short
  against the time the gap takes to change by its own size. A dip that only touches zero (a
  tangency) is not an event. Before t0 the caller is in charge: a gap already negative at t0 is
  reported as an event at t0.

Times in s; g in whatever unit the caller uses (m for gaps, N for constraint forces).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import brent as root

#: golden-section ratio for the dip search
_GOLD = 0.5 * (3.0 - 5.0**0.5)


def brent(g: Callable[[float], float], a: float, b: float, ga: float | None = None, gb: float | None = None,
          xtol: float = 0.0, maxiter: int = 200, side: str = "a") -> float:
    """A root of g in [a, b] to round-off (plus ``xtol``, s), from g(a), g(b) of opposite signs (:mod:`..brent`,
    the kernels' own, looped over here).

    ``side="a"``: return the end of the final bracket where g has the sign of g(a) (or is zero);
    ``side="b"``: the other one; ``side="best"``: the end with the smaller |g|.
    """
    fa = float(g(a)) if ga is None else float(ga)
    fb = float(g(b)) if gb is None else float(gb)
    if fa != 0.0 and fb != 0.0 and (fa > 0) == (fb > 0):
        raise ValueError(f"brent: g({a!r}) = {fa!r} and g({b!r}) = {fb!r} do not bracket a root")
    bs = [0.0] * root.STATE
    done, t = root.start(bs, a, b, fa, fb, float(xtol), root.SIDES[side], float(maxiter))
    if not done:
        done, t = root.step(bs, fb)
    while not done:
        done, t = root.step(bs, float(g(t)))
    return t


def golden_min(g: Callable[[float], float], a: float, b: float, iters: int = 60) -> tuple[float, float]:
    """(t, g(t)) at the minimum of a unimodal g on [a, b], golden section to ~1e-12 of the interval."""
    x1 = a + _GOLD * (b - a)
    x2 = b - _GOLD * (b - a)
    g1, g2 = float(g(x1)), float(g(x2))
    for _ in range(iters):
        if g1 <= g2:
            b, x2, g2 = x2, x1, g1
            x1 = a + _GOLD * (b - a)
            g1 = float(g(x1))
        else:
            a, x1, g1 = x1, x2, g2
            x2 = b - _GOLD * (b - a)
            g2 = float(g(x2))
        if g1 < 0 or g2 < 0:  # a negative value is all the caller needs to know
            break
    return (x1, g1) if g1 <= g2 else (x2, g2)


def _end_dip(ts, gs, k, rise) -> bool:
    """Might g dip below zero in the sub-interval next to the end sample k, a sample minimum?

    The parabola through the three samples nearest that end decides: it must open upwards, have its
    vertex in that sub-interval and a vertex value below ``rise`` (a margin for g not quite a parabola).
    """
    if len(ts) < 3:
        return False
    idx = [0, 1, 2] if k == 0 else [-3, -2, -1]
    t3, g3 = ts[idx], gs[idx]
    d1 = (g3[1] - g3[0]) / (t3[1] - t3[0])
    d2 = (g3[2] - g3[1]) / (t3[2] - t3[1])
    curv = (d2 - d1) / (t3[2] - t3[0])  # g ≈ g3[0] + d1 (t − t0) + curv (t − t0)(t − t1)
    if not curv > 0:
        return False
    tv = 0.5 * (t3[0] + t3[1]) - d1 / (2 * curv)
    side = (ts[0], ts[1]) if k == 0 else (ts[-2], ts[-1])
    if not side[0] <= tv <= side[1]:
        return False
    gv = g3[0] + d1 * (tv - t3[0]) + curv * (tv - t3[0]) * (tv - t3[1])
    return gv < rise


def gap_of(advance: Callable[[float], object], gap: Callable[[object, float], float]) -> Callable[[float], float]:
    """g(t) = gap(advance(t), t): ``advance`` gives the state at t inside the step."""
    return lambda t: float(gap(advance(t), t))


def first_crossing(g: Callable[[float], float], t0: float, t1: float, n_sub: int = 8,
                   g0: float | None = None, dg0: float | None = None, side: str = "a") -> float | None:
    """The first t in (t0, t1] where g turns negative, to round-off on the allowed side (g(t) ≥ 0);
    None if there is none (within the limits in the module docstring).

    ``side="b"``: return the end of the final bracket where g < 0 instead. ``g0`` = g(t0) if known;
    ``dg0`` = dg/dt at t0 if known (a rising start then needs no dip search in the first sub-interval).
    """
    ts = np.linspace(t0, t1, n_sub + 1)
    gs = np.empty(n_sub + 1)
    gs[0] = float(g(t0)) if g0 is None else float(g0)
    if gs[0] < 0:
        return t0
    for k in range(1, n_sub + 1):
        gs[k] = float(g(ts[k]))
        if gs[k] < 0:
            return brent(g, float(ts[k - 1]), float(ts[k]), gs[k - 1], gs[k], side=side)
    for k in range(n_sub + 1):
        lo, hi = max(k - 1, 0), min(k + 1, n_sub)
        if gs[k] > gs[lo] or gs[k] > gs[hi]:
            continue  # not a local minimum of the samples
        if k == 0 and dg0 is not None and dg0 >= 0:
            continue  # g starts rising: a unimodal g has no dip after t0
        rise = max(gs[lo], gs[hi]) - gs[k]
        if 0 < k < n_sub and gs[k] > rise:
            continue  # between two samples a near-parabolic dip reaches at most rise/4 below the sample minimum
        if k in (0, n_sub) and not _end_dip(ts, gs, k, rise):
            continue
        tm, gm = golden_min(g, float(ts[lo]), float(ts[hi]))
        if gm < 0:
            return brent(g, float(ts[lo]), tm, gs[lo], gm, side=side)
    return None
