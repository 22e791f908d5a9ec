"""Tabulated motions: a driven magnet or a pendulum's pivot following sampled positions (and orientations).

A :class:`TabulatedMotion` holds sample times t_k (s, strictly increasing, the simulation's clock), positions
x_k (m, lab) and optionally orientations q_k (unit quaternions w, x, y, z, body → lab). Between samples:

- positions: the cubic spline through the samples (C²: position, velocity and acceleration continuous), its end
  slopes those of the cubic through the four samples at each end (so a smooth motion is matched to O(h⁴) in
  position, O(h³) in velocity and O(h²) in acceleration everywhere, ends included, h the sample spacing), or zero
  where a table starts or ends at rest (two equal samples). A motion that starts abruptly (a kink: at rest, then
  moving) is smoothed over about a sample on each side, and swings by a fraction of a step there: sample it finely;
  velocity and acceleration are the spline's own derivatives (one interpolant, not finite differences);
- orientations: the quaternion components (each sample's sign chosen to continue the previous one: q and −q are
  one rotation) splined the same way and normalised, q(t) = s(t)/|s(t)| — C² and through every sample; the
  angular velocity (lab, rad/s) is ω = 2 n′ n̄ with n = s/|s| and n′ = (s′ − n (n·s′))/|s|.

Bad tables are refused by :meth:`TabulatedMotion.checked` with the sample named: too few samples (4 at least),
times not strictly increasing, values not finite, a zero quaternion, or a jump — one step between samples more
than :data:`JUMP_RATIO` times as fast as both steps beside it (a constant-interpolation key, a teleport), which
a spline turns into a swing that is not in the data.

Shapes: K samples; evaluation at one time t (s) gives (3,) vectors and (3, 3) orientations (rows: the body axes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import ValidationError
from .rotations import quat_to_orientation

#: Fewest samples of a table: the end slopes come from the cubic through the four end samples.
MIN_SAMPLES = 4
#: A step between samples this many times longer than both steps beside it is a jump (see the module docstring).
JUMP_RATIO = 10.0


def _end_slopes(t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Derivatives at t[0] and t[-1] of the cubics through the first and the last four samples (K ≥ 4); zero in a
    column whose first (last) two samples are equal: a table that starts (ends) at rest says so, where the cubic
    through a start and the motion after it would give the start a speed it does not have."""
    def slope(x, v):
        # d/dx of the Lagrange polynomial through (x_j, v_j), j = 0..3, at x_0
        x0 = x[0]
        d = sum(1.0 / (x0 - x[j]) for j in range(1, 4)) * v[0]
        for k in range(1, 4):
            num = math.prod(x0 - x[j] for j in range(1, 4) if j != k)
            den = math.prod(x[k] - x[j] for j in range(4) if j != k)
            d = d + (num / den) * v[k]
        return d
    first, last = slope(t[:4], y[:4]), slope(t[::-1][:4], y[::-1][:4])
    return np.where(y[1] == y[0], 0.0, first), np.where(y[-2] == y[-1], 0.0, last)


def spline_moments(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Second derivatives (K, m) at the samples of the clamped cubic spline through (t (K,), y (K, m)), its end
    slopes from :func:`_end_slopes` (the tridiagonal system solved by the Thomas algorithm, O(K))."""
    K = len(t)
    h = np.diff(t)
    s0, s1 = _end_slopes(t, y)
    dy = np.diff(y, axis=0) / h[:, None]
    # rows: a_i M_{i−1} + b_i M_i + c_i M_{i+1} = r_i
    a = np.concatenate([[0.0], h])
    b = np.concatenate([[2.0 * h[0]], 2.0 * (h[:-1] + h[1:]), [2.0 * h[-1]]])
    c = np.concatenate([h, [0.0]])
    r = np.empty_like(y, dtype=float)
    r[0] = 6.0 * (dy[0] - s0)
    r[1:-1] = 6.0 * (dy[1:] - dy[:-1])
    r[-1] = 6.0 * (s1 - dy[-1])
    # forward sweep: the factors are the same for every column
    cp = np.empty(K)
    den = np.empty(K)
    den[0] = b[0]
    cp[0] = c[0] / b[0]
    al, bl, cl = a.tolist(), b.tolist(), c.tolist()
    cpl, denl = [cp[0]], [den[0]]
    for i in range(1, K):
        d_ = bl[i] - al[i] * cpl[-1]
        denl.append(d_)
        cpl.append(cl[i] / d_)
    den, cp = np.array(denl), np.array(cpl)
    rp = np.empty_like(r)
    rp[0] = r[0] / den[0]
    for i in range(1, K):
        rp[i] = (r[i] - a[i] * rp[i - 1]) / den[i]
    M = np.empty_like(r)
    M[-1] = rp[-1]
    for i in range(K - 2, -1, -1):
        M[i] = rp[i] - cp[i] * M[i + 1]
    return M


@dataclass(frozen=True)
class Spline:
    """The cubic spline of samples (t (K,), y (K, m)) with moments M (K, m): value and derivatives at a time."""

    t: np.ndarray
    y: np.ndarray
    M: np.ndarray

    @classmethod
    def through(cls, t, y) -> Spline:
        t = np.asarray(t, dtype=float)
        y = np.asarray(y, dtype=float)
        return cls(t, y, spline_moments(t, y))

    def __call__(self, time, order: int = 0) -> np.ndarray:
        """The spline's value (order 0), first (1), second (2) or third (3: constant on each interval, the one on
        the right at a sample) derivative at ``time`` (within the samples): (m,) at a float, (N, m) at N times
        (the same arithmetic per time, so bit for bit the values one at a time)."""
        t = self.t
        if np.ndim(time):
            time = np.asarray(time, dtype=float)
            i = np.clip(np.searchsorted(t, time, side="right") - 1, 0, len(t) - 2)
            h = (t[i + 1] - t[i])[:, None]
            A = (t[i + 1][:, None] - time[:, None]) / h
            B = (time[:, None] - t[i][:, None]) / h
        else:
            i = min(max(int(np.searchsorted(t, time, side="right")) - 1, 0), len(t) - 2)
            h = t[i + 1] - t[i]
            A = (t[i + 1] - time) / h
            B = (time - t[i]) / h
        y0, y1, M0, M1 = self.y[i], self.y[i + 1], self.M[i], self.M[i + 1]
        if order == 0:
            return A * y0 + B * y1 + ((A ** 3 - A) * M0 + (B ** 3 - B) * M1) * (h * h / 6.0)
        if order == 1:
            return (y1 - y0) / h + ((1.0 - 3.0 * A * A) * M0 + (3.0 * B * B - 1.0) * M1) * (h / 6.0)
        if order == 2:
            return A * M0 + B * M1
        return (M1 - M0) / h


def _jump(steps: np.ndarray) -> int | None:
    """Index k of the first step (K−1,) longer than JUMP_RATIO × both steps beside it (and than round-off); steps
    are rates (distance or angle per second between samples), so uneven sampling is no jump."""
    if len(steps) < 3:
        return None
    scale = float(np.max(steps)) if len(steps) else 0.0
    for k in range(len(steps)):
        left = steps[k - 1] if k > 0 else None
        right = steps[k + 1] if k + 1 < len(steps) else None
        sides = [s for s in (left, right) if s is not None]
        if steps[k] > 1e-9 * scale and all(steps[k] > JUMP_RATIO * s for s in sides):
            return k
    return None


def _spike(x: np.ndarray, dt: np.ndarray) -> int | None:
    """Index k of the first sample that lies off the path and back (a one-sample glitch): the steps into and out
    of it go opposite ways and are each longer than JUMP_RATIO × the steps beyond them — which :func:`_jump`,
    looking at one step at a time, cannot see. A kink (a motion that starts or turns) moves one way: not a spike."""
    d = np.diff(x, axis=0)
    rate = np.linalg.norm(d, axis=1) / dt
    scale = float(np.max(rate)) if len(rate) else 0.0
    for k in range(1, len(d)):
        out, back = rate[k - 1], rate[k]
        beyond = [rate[j] for j in (k - 2, k + 1) if 0 <= j < len(rate)]
        if (min(out, back) > 1e-9 * scale and float(d[k - 1] @ d[k]) < 0 and beyond
                and all(min(out, back) > JUMP_RATIO * b for b in beyond)):
            return k
    return None


@dataclass(frozen=True)
class TabulatedMotion:
    """Driven motion from samples (see the module docstring): ``times`` (K,) s, ``positions`` (K, 3) m (lab)
    and ``orientations`` (K, 4) unit quaternions (w, x, y, z; body → lab) or None (the body keeps its
    orientation). Build it, then call :meth:`checked`; the evaluation methods take a time (s) within the table."""

    times: Sequence[float]
    positions: Sequence[Sequence[float]]
    orientations: Sequence[Sequence[float]] | None = None
    #: the splines, made by :meth:`checked`
    _pos: Spline | None = field(default=None, repr=False, compare=False)
    _rot: Spline | None = field(default=None, repr=False, compare=False)

    def checked(self, path: str) -> TabulatedMotion:
        """The validated motion with its splines; a :class:`ValidationError` names the bad sample and the fix."""
        try:
            t = np.asarray(self.times, dtype=float)
            x = np.asarray(self.positions, dtype=float)
        except (TypeError, ValueError):
            raise ValidationError(f"{path}", "times and positions must be numbers (times (K,), positions (K, 3))") \
                from None
        if t.ndim != 1:
            raise ValidationError(f"{path}.times", f"expected a list of times, got shape {t.shape}")
        K = len(t)
        if K < MIN_SAMPLES:
            raise ValidationError(f"{path}.times", f"{K} sample(s): a table needs at least {MIN_SAMPLES} (the spline's "
                                                   "end slopes come from four samples); sample the motion more often")
        if x.shape != (K, 3):
            raise ValidationError(f"{path}.positions", f"expected {K} positions of 3 coordinates (one per time), got "
                                                       f"shape {x.shape}")
        for name, arr in (("times", t), ("positions", x)):
            bad = np.argwhere(~np.isfinite(arr))
            if bad.size:
                k = int(bad[0][0])
                raise ValidationError(f"{path}.{name}[{k}]", f"is not a finite number ({arr[k]!r}): every sample "
                                                             "needs a value")
        dt = np.diff(t)
        if np.any(dt <= 0):
            k = int(np.argmax(dt <= 0))
            raise ValidationError(f"{path}.times[{k + 1}]", f"t = {t[k + 1]!r} s does not come after t = {t[k]!r} s: "
                                                            "times must increase strictly (sort the samples, drop "
                                                            "repeated times)")
        k = _jump(np.linalg.norm(np.diff(x, axis=0), axis=1) / dt)
        if k is not None:
            raise ValidationError(f"{path}.positions[{k + 1}]",
                                  f"the position jumps by {np.linalg.norm(x[k + 1] - x[k]):.4g} m between t = "
                                  f"{t[k]:.6g} s and {t[k + 1]:.6g} s, over {JUMP_RATIO:g}× as fast as the steps "
                                  "beside it: a spline would swing through the gap; sample the motion more finely "
                                  "there or smooth it (in Blender: a key with Constant interpolation jumps)")
        k = _spike(x, dt)
        if k is not None:
            off = np.linalg.norm(x[k] - 0.5 * (x[k - 1] + x[k + 1]))
            raise ValidationError(f"{path}.positions[{k}]",
                                  f"the sample at t = {t[k]:.6g} s lies {off:.4g} m off the path of its neighbours and "
                                  f"back, over {JUMP_RATIO:g}× as fast as the steps beside it: a glitch; fix or drop "
                                  "that sample")
        rot = None
        q = None
        if self.orientations is not None:
            try:
                q = np.array(self.orientations, dtype=float)
            except (TypeError, ValueError):
                raise ValidationError(f"{path}.orientations", "expected quaternions (w, x, y, z), one per time") \
                    from None
            if q.shape != (K, 4):
                raise ValidationError(f"{path}.orientations", f"expected {K} quaternions (w, x, y, z), one per time, "
                                                              f"got shape {q.shape}")
            bad = np.argwhere(~np.isfinite(q))
            if bad.size:
                k = int(bad[0][0])
                raise ValidationError(f"{path}.orientations[{k}]", "is not finite: every sample needs a rotation")
            norm = np.linalg.norm(q, axis=1)
            if np.any(norm < 1e-12):
                k = int(np.argmax(norm < 1e-12))
                raise ValidationError(f"{path}.orientations[{k}]", "is a zero quaternion: it is no rotation")
            q /= norm[:, None]
            for k in range(1, K):  # q and −q are the same rotation: continue the previous sample's sign
                if q[k] @ q[k - 1] < 0:
                    q[k] = -q[k]
            angles = 2.0 * np.arccos(np.clip(np.abs(np.sum(q[1:] * q[:-1], axis=1)), 0.0, 1.0))
            k = _jump(angles / dt)
            if k is not None:
                raise ValidationError(f"{path}.orientations[{k + 1}]",
                                      f"the orientation jumps by {math.degrees(angles[k]):.4g}° between t = "
                                      f"{t[k]:.6g} s and {t[k + 1]:.6g} s, over {JUMP_RATIO:g}× as fast as the turns "
                                      "beside it: sample the motion more finely there or smooth it")
            if np.any(angles > 0.5 * math.pi):
                k = int(np.argmax(angles > 0.5 * math.pi))
                raise ValidationError(f"{path}.orientations[{k + 1}]",
                                      f"turns by {math.degrees(angles[k]):.4g}° since the sample before: more than "
                                      "90° between samples cannot be interpolated unambiguously; sample more often")
            rot = Spline.through(t, q)
        return TabulatedMotion(t, x, q, Spline.through(t, x), rot)

    # ------------------------------------------------------------------ evaluation (on a checked motion)

    @property
    def start(self) -> float:
        return float(self.times[0])

    @property
    def end(self) -> float:
        return float(self.times[-1])

    def position(self, t: float) -> np.ndarray:
        """Position (3,) m at t."""
        return self._pos(t)

    def velocity(self, t: float) -> np.ndarray:
        """Velocity (3,) m/s at t (the spline's derivative)."""
        return self._pos(t, 1)

    def acceleration(self, t: float) -> np.ndarray:
        """Acceleration (3,) m/s² at t (the spline's second derivative)."""
        return self._pos(t, 2)

    def jerk(self, t: float) -> np.ndarray:
        """Rate of change (3,) m/s³ of the acceleration at t (constant between samples; the right one at a
        sample)."""
        return self._pos(t, 3)

    def jerk_jumps(self) -> tuple[np.ndarray, np.ndarray]:
        """The inner samples' times (K−2,) s and the jumps (K−2, 3) m/s³ of the jerk there (right − left): the
        spline's acceleration is continuous and piecewise linear, so its rate steps at every inner sample."""
        t, M = self._pos.t, self._pos.M
        j = np.diff(M, axis=0) / np.diff(t)[:, None]
        return t[1:-1], np.diff(j, axis=0)

    def spline_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """The interpolant as arrays (what the compiled kernels evaluate): the sample times (K,) s, the samples
        (K, 7) — position m, then the sign-continued unit quaternion (zeros without orientations) — the splines'
        second derivatives at them (K, 7), and whether there are orientations."""
        K = len(self._pos.t)
        y, m = np.zeros((K, 7)), np.zeros((K, 7))
        y[:, :3], m[:, :3] = self._pos.y, self._pos.M
        if self._rot is not None:
            y[:, 3:], m[:, 3:] = self._rot.y, self._rot.M
        return np.array(self._pos.t, dtype=float), y, m, self._rot is not None

    def spline_slopes(self) -> np.ndarray:
        """The interpolant's first derivatives at its samples (K, 7), in :meth:`spline_table`'s columns (m/s, then
        the un-normalised quaternion's rate 1/s; zeros without orientations): with the samples they fix every
        cubic piece (an import turns them into Bezier keys)."""
        out = np.zeros((len(self._pos.t), 7))
        for k, tk in enumerate(self._pos.t):   # the derivative is continuous: either piece's value at a sample
            out[k, :3] = self._pos(tk, 1)
            if self._rot is not None:
                out[k, 3:] = self._rot(tk, 1)
        return out

    def quaternion(self, t: float) -> np.ndarray | None:
        """Unit quaternion (4,) (w, x, y, z) at t, or None without orientations."""
        if self._rot is None:
            return None
        s = self._rot(t)
        return s / np.linalg.norm(s)

    def orientation(self, t: float) -> np.ndarray | None:
        """Orientation U (3, 3) at t — rows the body axes in lab components, the project's convention
        (:mod:`.rotations`) — or None without orientations."""
        q = self.quaternion(t)
        return None if q is None else quat_to_orientation(q)

    def angular_velocity(self, t: float) -> np.ndarray:
        """Angular velocity (3,) rad/s, lab, at t (zero without orientations)."""
        if self._rot is None:
            return np.zeros(3)
        s, ds = self._rot(t), self._rot(t, 1)
        r = np.linalg.norm(s)
        n = s / r
        dn = (ds - n * (n @ ds)) / r
        # ω = 2 ṅ n̄ (its vector part): the scalar part vanishes for a unit quaternion
        w0, v0 = n[0], -n[1:]
        return 2.0 * (dn[0] * v0 + w0 * dn[1:] + np.cross(dn[1:], v0))

