"""The round-off bound: how far a re-implemented run may drift from the numpy reference and still be right.

Two correct implementations of one integration do not agree to the last bit. The compiled kernels sum in
another order and call libm's (or their own) sin/cos/exp, where numpy calls the SIMD versions it picks for
the CPU at run time — its AVX2 and AVX-512 exp differ by an ulp here and there, so numpy itself differs
between machines. Each step adds such last-bit differences and the dynamics carries them forward: a damped,
driven or nearly unstable motion grows them, so a fixed tolerance (1e-12) held on one CPU only. The bound
is measured instead, in the same test, on the reference run itself:

    max |got − ref|  ≤  FACTOR · max |twin − ref|  +  FLOOR_ULPS · ε · steps · scale

- ``ref``: the numpy reference; ``got``: the run under test (compiled kernels, SIMD lanes, the plain-Python
  path), recorded at the same times; maxima over every recorded element of one quantity, and over the twins.
- the twins (:func:`twins`): the reference run twice more, under :func:`nudged` with the direction +1 and
  −1: every np.sin, np.cos and np.exp result one ulp up (down) — a library that rounds the other way, the
  worst case for a drift, since a step meets nearly the same arguments again and again (a friction decay
  exp(−c·h/λ) exactly the same) —, and every torque and force, the state after every sub-step and every
  contact impulse one ulp up or down as if at random (:func:`nudge`) — sums taken in another order. The run's
  own dynamics carries these to the end just as it carries the engine's differences: |twin − ref| measures
  how much this trajectory amplifies an ulp a step (a gas of marbles, chaotic, a lot; a pendulum, little).
- ``FACTOR`` = 10: the twins make one-ulp differences; an implementation's are up to a few ulp (the lanes'
  sincos is within 2 ulp of libm, test_lanes.py; a sum of n terms re-ordered moves by up to ~n/2 ulp of its
  largest, n ~ 3–10 here) and fall in places the twins do not nudge: a few, times a margin of ~3.
  Measured over the compiled-against-numpy tests of tests/engine (~1500 quantities; numpy 2.4 and 1.26,
  numpy's AVX-512 paths on and off): |got − ref| ≤ 0.19 of the bound (0.11 but for numpy 1.26 with
  AVX-512), the bound itself 1e-12 relative in the median, 5e-12 at the 90th percentile.
- the floor: round-off that the dynamics does not amplify accumulates at most linearly, a few roundings of
  ½ ulp a step: ``FLOOR_ULPS`` = 4 ulp (ε = 2.2e-16) of the quantity's ``scale`` a step, 8.9e-13 relative
  over 1000 steps (the fixed tolerance these tests had). It carries the bound where the twins' spread is
  tiny (a short run; a motion that damps what it is given).

For a regular motion the bound is ~1e-12 relative, at most ~1e-10 in tests/engine but for the magnet pendulum
with pivot friction on splitting4 (~2e-9): its kicks' (1 − e^(−c·h/λ))/c loses ~5 digits to cancellation
(c·h/λ ~ 1e-5), so an ulp of exp moves that term by ~1e-11 at every step. A real bug (a friction coefficient
off by 1e-6 relative, records one step late) exceeds the bound by orders of magnitude
(tests/engine/test_roundoff.py). ``scale``: the quantity's largest magnitude in the reference unless the
caller names another (energy terms: the largest energy term, see test_compiled.assert_close).
"""

from __future__ import annotations

import contextlib
import importlib
import os

import numpy as np

EPS = float(np.finfo(float).eps)
FACTOR = 10.0
FLOOR_ULPS = 4.0

#: the numpy functions whose results :func:`nudged` moves by an ulp: those the integrators call whose SIMD
#: implementation numpy picks by CPU
TRANSCENDENTALS = ("sin", "cos", "exp", "expm1")
#: the twins' directions (:func:`twins`)
DIRECTIONS = (+1, -1)
#: odd multipliers for :func:`nudge`'s hash, one a direction (Fibonacci hashing: 2⁶⁴/φ, and another)
_HASH = {+1: np.uint64(0x9E3779B97F4A7C15), -1: np.uint64(0xC2B2AE3D27D4EB4F)}


def nudge(x, direction: int = +1) -> np.ndarray:
    """x one ulp up or down (float64 array), which way a fixed pseudo-random function of x's bits (and of the
    twin's ``direction``): as a re-ordered sum, the same for the same value, on different values as if at
    random."""
    x = np.asarray(x, dtype=float)
    bits = np.atleast_1d(x).view(np.uint64)
    up = (bits * _HASH[direction]) >> np.uint64(63)  # the top bit of the product
    return np.nextafter(x, np.where(up.reshape(x.shape) == 1, np.inf, -np.inf))


@contextlib.contextmanager
def nudged(direction: int = +1, package: str = "pem_physics"):
    """Inside, np.sin, np.cos, np.exp and np.expm1 come out one ulp towards ``direction`` (+1: up); the torques and
    forces the integrators evaluate, the state after every kick (L, translating bodies' P) and drift (frames,
    translating bodies' X) of the splitting and after every step of PEM's schemes (L, U), and every contact
    impulse an ulp up or down (:func:`nudge`).

    For the twin runs of the numpy reference only: with the compiled engine off (numba must not compile
    against these wrappers). ``package``: the pem_physics whose engine is patched (the add-on tests name the
    installed extension's copy)."""
    integrators = importlib.import_module(f"{package}.engine.integrators")
    contacts = importlib.import_module(f"{package}.engine.contact.driver")
    Splitting, PemScheme = integrators.Splitting, integrators.PemScheme
    saved = [(np, name, getattr(np, name)) for name in TRANSCENDENTALS] + [
        (integrators, "evaluate", integrators.evaluate), (contacts, "resolve_contacts", contacts.resolve_contacts),
        (Splitting, "_kick", Splitting._kick), (Splitting, "_drift", Splitting._drift),
        (PemScheme, "advance", PemScheme.advance)]
    original = {(id(owner), name): f for owner, name, f in saved}
    towards = direction * np.inf

    def old(owner, name):
        return original[(id(owner), name)]

    def mixed(x):
        return nudge(x, direction)

    def transcendental(f):
        def g(*args, **kw):
            out = f(*args, **kw)
            if isinstance(out, np.ndarray):
                return np.nextafter(out, towards, out=out)  # in place: a caller's ``out`` may hold it
            return np.nextafter(out, towards)
        return g

    def evaluate(*args, **kw):
        res = old(integrators, "evaluate")(*args, **kw)
        res.torque = mixed(res.torque)
        if res.force is not None:
            res.force = mixed(res.force)
        return res

    def resolve_contacts(*args, **kw):
        return [(k, mixed(J)) for k, J in old(contacts, "resolve_contacts")(*args, **kw)]

    def kick(self, h):
        old(Splitting, "_kick")(self, h)
        self.L = mixed(self.L)
        tr = self.moving_x  # translating bodies (a pendulum's X is its pivot, which does not move)
        self.P[:, tr] = mixed(self.P[:, tr])

    def drift(self, h):
        old(Splitting, "_drift")(self, h)
        self.Q = mixed(self.Q)
        tr = self.moving_x
        self.X[:, tr] = mixed(self.X[:, tr])

    def advance(self, n):
        for _ in range(n):
            old(PemScheme, "advance")(self, 1)
            self.L, self.U = mixed(self.L), mixed(self.U)

    patched = {"evaluate": evaluate, "resolve_contacts": resolve_contacts, "_kick": kick, "_drift": drift,
               "advance": advance}
    try:
        for owner, name, f in saved:
            setattr(owner, name, transcendental(f) if owner is np else patched[name])
        yield
    finally:
        for owner, name, f in saved:
            setattr(owner, name, f)


def twins(run, package: str = "pem_physics") -> list:
    """``run()`` (the numpy reference, compiled engine off) under :func:`nudged` in each of ``DIRECTIONS``."""
    out = []
    for direction in DIRECTIONS:
        with nudged(direction, package):
            out.append(run())
    return out


def pick(runs, name: str) -> list:
    """The recorded arrays ``name`` of each run in ``runs`` (one quantity of the twins, for :func:`assert_follows`)."""
    return [getattr(r, name) for r in runs]


def bound(spread: float, steps: int, scale: float) -> float:
    """The largest |got − ref| allowed (module docstring) for a quantity of size ``scale`` after ``steps`` steps
    whose twins spread from the reference by ``spread``."""
    return FACTOR * spread + FLOOR_ULPS * EPS * steps * scale


def measure(got, ref, twins, steps: int, scale: float | None = None, base=None) -> tuple[float, float, float, float]:
    """(max |got − ref|, max |twin − base| over the twins, bound, scale) of one recorded quantity; ``twins``: its
    arrays in the twin runs. ``base``: the numpy run the twins repeat, when ``ref`` is another run (two compiled
    paths compared with each other); default ``ref``."""
    got, ref = np.asarray(got, dtype=float), np.asarray(ref, dtype=float)
    base = ref if base is None else np.asarray(base, dtype=float)
    if scale is None:
        scale = float(np.max(np.abs(base), initial=0.0))
    err = float(np.max(np.abs(got - ref), initial=0.0))
    spread = max(float(np.max(np.abs(np.asarray(t, dtype=float) - base), initial=0.0)) for t in twins)
    return err, spread, max(bound(spread, steps, scale), 1e-300), scale


def assert_follows(name: str, got, ref, twins, steps: int, scale: float | None = None, base=None) -> float:
    """Assert that quantity ``name`` of ``got`` follows ``ref`` within the round-off bound that ``twins`` (its
    arrays in the twin runs) measure; returns err/bound.

    With PEM_ROUNDOFF_LOG=FILE set, appends "test, name, err, bound (both relative to the scale), err/bound" to
    FILE (for measurements)."""
    err, spread, b, scale = measure(got, ref, twins, steps, scale, base)
    log = os.environ.get("PEM_ROUNDOFF_LOG")
    if log:
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
        with open(log, "a", encoding="utf-8") as fh:
            s = scale if scale > 0 else float("nan")  # a quantity that is 0 throughout: compared exactly
            fh.write(f"{test}\t{name}\t{err / s:.3e}\t{b / s:.3e}\t{err / b:.4f}\n")
    assert err <= b, (f"{name}: differs from the reference by {err:.3g}, more than its round-off bound {b:.3g} "
                      f"(tests/roundoff.py: {FACTOR:g} × the twin runs' spread {spread:.3g} + {FLOOR_ULPS:g} ulp "
                      f"a step over {steps} steps)")
    return err / b


def avx512_targets() -> list[str]:
    """numpy's AVX-512 code paths that this process may take: the targets its build dispatches to at run time
    (``__cpu_dispatch__``; numpy 1.26: AVX512F, AVX512CD, AVX512_SKX … AVX512_ICL; numpy 2.x: X86_V4,
    AVX512_ICL, AVX512_SPR) that this CPU has and NPY_DISABLE_CPU_FEATURES has not turned off. Given as
    NPY_DISABLE_CPU_FEATURES (space-separated) they turn those paths off: numpy refuses to disable a baseline
    feature and ignores, with a warning only, a name it does not dispatch to, so the value must be exactly
    these. Empty on a CPU without AVX-512."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath as umath
    return [t for t in umath.__cpu_dispatch__
            if (t.startswith("AVX512") or t == "X86_V4") and umath.__cpu_features__.get(t)]


if __name__ == "__main__":
    # noxfile.without_avx512: the NPY_DISABLE_CPU_FEATURES value that turns numpy's AVX-512 paths off
    print(" ".join(avx512_targets()))
