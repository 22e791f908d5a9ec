"""Brent's method — a root of g in a bracket [a, b], to round-off — written once, in reverse communication: the
caller evaluates g where it is asked and hands the value back. The numpy paths loop over it in Python
(:func:`.contact.events.brent`); the compiled kernels inline it (:mod:`.impact_kernels`,
:mod:`.contact.surface_run_kernels`) and evaluate g with a trial step of their own between calls.

Plain Python on purpose (no numba here): numba compiles these functions into the kernels.

The state ``bs`` (:data:`STATE` floats, a list or an array): a, b, c, g(a), g(b), g(c), the last two steps d and e,
the sign of g at the bracket's first end (±1), the iterations done, ``xtol`` (added to the tolerance, s), the side
asked for (:data:`SIDES`) and the most iterations. :func:`start` fills it; :func:`step` takes g at the point asked
for last (first: g(b)). Both return (done, t): the root when done, else the next point.
"""

from __future__ import annotations

#: Floats of the state (see the module docstring).
STATE = 13
#: Which end of the final bracket :func:`step` returns: where g has the sign of g(a) (or is zero), the other one,
#: or the end with the smaller |g|.
SIDES = {"a": 0.0, "b": 1.0, "best": 2.0}
EPS = 2.220446049250313e-16


def start(bs, a, b, fa, fb, xtol, side, maxiter):
    """Fill the state for [a, b] from g(a) = fa and g(b) = fb of opposite signs: (True, the root) when an end is
    one, else (False, b) — then :func:`step` with fb. (It does not call :func:`step` itself: numba compiles each
    function alone.)"""
    if fa == 0.0:
        return True, a
    if fb == 0.0:
        return True, b
    bs[0], bs[1], bs[2], bs[3], bs[4], bs[5] = a, b, a, fa, fb, fa
    bs[6] = b - a
    bs[7] = b - a
    bs[8] = 1.0 if fa > 0 else -1.0
    bs[9] = 0.0
    bs[10], bs[11], bs[12] = xtol, side, maxiter
    return False, b


def step(bs, f):
    """One evaluation: ``f`` is g at the point asked for last. (done, t): the root, or the next point."""
    a, b, c, fa, fc, d, e = bs[0], bs[1], bs[2], bs[3], bs[5], bs[6], bs[7]
    fb = f
    it = bs[9]
    while True:  # once: a loop only to leave it by break
        if it >= bs[12]:
            break
        it += 1.0
        if (fb > 0) == (fc > 0) and fb != 0.0:
            c, fc = a, fa
            d = e = b - a
        if abs(fc) < abs(fb):
            a, b, c = b, c, b
            fa, fb, fc = fb, fc, fb
        tol = 2.0 * EPS * abs(b) + 0.5 * bs[10] + 1e-300
        m = 0.5 * (c - b)
        if abs(m) <= tol or fb == 0.0:
            break
        if abs(e) >= tol and abs(fa) > abs(fb):   # inverse quadratic interpolation, or the secant
            s = fb / fa
            if a == c:
                p, q = 2.0 * m * s, 1.0 - s
            else:
                q, r = fa / fc, fb / fc
                p = s * (2.0 * m * q * (q - r) - (b - a) * (r - 1.0))
                q = (q - 1.0) * (r - 1.0) * (s - 1.0)
            if p > 0:
                q = -q
            else:
                p = -p
            if 2.0 * p < min(3.0 * m * q - abs(tol * q), abs(e * q)):
                e, d = d, p / q
            else:
                d = e = m
        else:   # bisection
            d = e = m
        a, fa = b, fb
        b = b + d if abs(d) > tol else b + (tol if m > 0 else -tol)
        bs[0], bs[1], bs[2], bs[3], bs[4], bs[5], bs[6], bs[7], bs[9] = a, b, c, fa, fb, fc, d, e, it
        return False, b
    if fb == 0.0 or bs[11] == 2.0:
        return True, (b if abs(fb) <= abs(fc) else c)
    on_a = (fb > 0) == (bs[8] > 0.0)
    return True, (b if on_a == (bs[11] == 0.0) else c)
