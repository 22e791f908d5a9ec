"""The table model's contact modes, tolerances and one small formula, shared by :mod:`.surface` (one contact) and
:mod:`.surface_several` (several at once)."""

from __future__ import annotations

import math

import numpy as np

APART, SLIDING, ROLLING = "apart", "sliding", "rolling"
#: a rim lying flat, its whole edge on the table (:mod:`.surface_flat`): sliding or spinning, or at rest
FLAT, FLAT_REST = "lying flat", "resting flat"
MODES = (APART, SLIDING, ROLLING, FLAT, FLAT_REST)
#: A shape whose gap is within TOUCH_RTOL·r of zero touches the table.
TOUCH_RTOL = 1e-9
#: Slip speeds below SLIP_RTOL·(speed scale) are no slip (their direction is round-off).
SLIP_RTOL = 1e-12
#: A block's region coordinate within REGION_RTOL·r of zero at a step's start is not watched in that step (the
#: step starts where it was just located).
REGION_RTOL = 1e-9
#: Newton iterations at most for a rim's deepest point on a curved table (it converges in a few).
RIM_ITERATIONS = 30
#: A rotation slower than ROT_RTOL·(|ω| + √(|g|/reach)) is at rest for the rolling and spinning resistance.
ROT_RTOL = 1e-12
#: A step whose energy balance (E change less the friction's work) exceeds SPLIT_RTOL·(energy scale) is taken as
#: two halves instead (recursively, at most MAX_SPLITS deep): the step error of a contact point that runs fast
#: round a rim, or of a body about to fall flat, then stays bounded (see :meth:`Surface.advance`).
SPLIT_RTOL = 1e-7
MAX_SPLITS = 12
#: A touching shape that starts a step a gap δ off the table (round-off) is put back on it within the step, but at
#: no more than CLOSE_RATE·(speed scale): δ closed whole in a step of 1e-30 s (an event found just after another)
#: took a velocity δ/h of 1e11 m/s. A step of length h → 0 is then no step, whatever δ.
CLOSE_RATE = 1e-9
_EPS = float(np.finfo(float).eps)


def landing_target(gap0: float, h: float, speed: float) -> float:
    """The gap (m) a step of length h (s) puts a touching shape at, which starts it gap0 (m) off the table: zero when
    |gap0| ≤ CLOSE_RATE·speed·h (always, but for steps far shorter than the time step), else gap0 less that much."""
    c = CLOSE_RATE * speed * h
    return gap0 - min(max(gap0, -c), c)


def cross(a, b) -> np.ndarray:
    """a × b of two 3-vectors (np.cross's generality costs ~20× more on one pair)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def norm(v) -> float:
    """|v| of a float vector (np.linalg.norm's arithmetic, √(v·v), without its generality: ~5× less on one vector)."""
    return math.sqrt(v.dot(v))
