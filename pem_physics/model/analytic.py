"""Analytic motions of a pivot or a driven body: exact at every time, where a table is a spline through samples.

- :class:`Oscillation`: position(t) = c + Σₖ aₖ cos(ωₖ t + φₖ) (m) — aₖ (3,) m each term's amplitude along its own
  direction, ωₖ rad/s, φₖ rad, c the centre (default: the body's position as given). Kapitza's shaken pivot is one
  term, a pivot on an ellipse two.
- :class:`UniformRotation`: the body turns about the axis n̂ through c (default: its own position) at ω rad/s,
  right-handed: position(t) = c + R(n̂, ωt)(p₀ − c), orientation U(t) = U₀ R(n̂, ωt)ᵀ (rows: the body axes), p₀ and
  U₀ the body's at t = 0. A pivot on it runs round the circle (its position only).

Both are sums of cosines, c·cos 0 + Σ aₖ cos(ωₖ t + φₖ) (:meth:`harmonic_terms`: the centre a term of frequency 0),
which is how the compiled kernels hold them (as a table of their own kind) and how :func:`harmonic_sum` evaluates
them here, term by term in the same order. Position, velocity, acceleration and jerk are the sum's derivatives in
closed form — what a moving pivot needs (theory §3: the inertial force −M·a_pivot, the drivers' power M·R_G·ȧ).

Shapes: at a float time (3,) vectors; at N times (N, 3).

Where only keys can carry a motion (Blender's animation), :meth:`_Harmonic.table` samples it into a
:class:`~.motion.TabulatedMotion` of :data:`KEYS_PER_PERIOD` samples a period of its fastest term.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import ValidationError
from . import validate as v
from .motion import TabulatedMotion
from .rotations import axis_angle_matrix, orientation_to_quat

#: Samples a period of a motion's fastest term in :meth:`_Harmonic.table`: the spline through them is off the
#: cosine by ≈ (2π/64)⁴/384 ≈ 2.4e-7 of its amplitude (a cubic spline's h⁴·f⁗/384).
KEYS_PER_PERIOD = 64


def cosine_rate(w, p, t, order):
    """The order-th time derivative (0…3) of cos(w·t + p) at ``t`` (a float or an array): the one formula the
    numpy sums here and the compiled kernels (:func:`pem_physics.engine.torque_kernels._harmonic`, which numba
    compiles from this function) evaluate. ``order`` a variable in the kernels (numba compiles a function anew for
    each constant argument)."""
    ph = w * t + p
    if order == 0:
        return np.cos(ph)
    if order == 1:
        return -w * np.sin(ph)
    if order == 2:
        return (-w * w) * np.cos(ph)
    return (w * w * w) * np.sin(ph)


def harmonic_sum(a: np.ndarray, w: np.ndarray, p: np.ndarray, t, order: int = 0) -> np.ndarray:
    """The order-th time derivative (0…3) of Σₖ aₖ cos(ωₖ t + φₖ) at ``t`` (s): a (N,3), w (N,), p (N,); (3,) at a
    float, (T,3) at T times. Terms are added one by one in order (the compiled kernels' arithmetic)."""
    t = np.asarray(t, dtype=float)
    out = np.zeros(t.shape + (3,))
    for k in range(len(w)):
        out = out + a[k] * np.asarray(cosine_rate(w[k], p[k], t, order))[..., None]
    return out


class _Harmonic:
    """Evaluation shared by the analytic motions (their :meth:`harmonic_terms`): the interface of a moving pivot."""

    def harmonic_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _at(self, t, order: int) -> np.ndarray:
        return harmonic_sum(*self.harmonic_terms(), t, order)

    def position(self, t) -> np.ndarray:
        """Position (3,) m at t."""
        return self._at(t, 0)

    def velocity(self, t) -> np.ndarray:
        """Velocity (3,) m/s at t."""
        return self._at(t, 1)

    def acceleration(self, t) -> np.ndarray:
        """Acceleration (3,) m/s² at t."""
        return self._at(t, 2)

    def jerk(self, t) -> np.ndarray:
        """Rate of change (3,) m/s³ of the acceleration at t."""
        return self._at(t, 3)

    def jerk_jumps(self) -> tuple[np.ndarray, np.ndarray]:
        """The times (0,) and jumps (0, 3) of the jerk: a smooth motion has none (a table's steps at its samples)."""
        return np.zeros(0), np.zeros((0, 3))

    def orientations(self, t: np.ndarray, U0) -> np.ndarray | None:
        """Orientations (T,3,3) at times t (T,) of a body whose orientation at 0 is U0, or None (it keeps U0)."""
        return None

    def table(self, t_end: float, U0=None) -> TabulatedMotion:
        """The motion sampled from 0 to past ``t_end`` s, :data:`KEYS_PER_PERIOD` samples a period of its fastest
        term (at least 4 samples), with orientations from U0 (3,3) where the motion turns the body: the keys an
        animation can hold (a checked table)."""
        _, w, _ = self.harmonic_terms()
        fastest = float(np.max(np.abs(w)))
        per_second = KEYS_PER_PERIOD * fastest / (2 * math.pi) if fastest > 0 else 1.0
        n = max(4, int(math.ceil(t_end * per_second)) + 2)
        t = np.arange(n) / per_second
        U = None if U0 is None else self.orientations(t, U0)
        return TabulatedMotion(t, self.position(t), None if U is None else orientation_to_quat(U)).checked("motion")


@dataclass(frozen=True)
class Oscillation(_Harmonic):
    """position(t) = center + Σₖ amplitudes[k]·cos(angular_frequencies[k]·t + phases[k]): ``amplitudes`` (N,3) m,
    ``angular_frequencies`` (N,) rad/s, ``phases`` (N,) rad (default 0), ``center`` (3,) m (None: the body's
    position — :meth:`checked` fills it in). The body keeps its orientation."""

    amplitudes: Sequence[Sequence[float]]
    angular_frequencies: Sequence[float]
    phases: Sequence[float] | None = None
    center: Sequence[float] | None = None

    def checked(self, path: str, position=None) -> Oscillation:
        """The validated oscillation (arrays), its centre ``position`` (the body's) if it has none."""
        try:
            a = np.array(self.amplitudes, dtype=float)
            w = np.array(self.angular_frequencies, dtype=float)
            p = np.zeros(len(w)) if self.phases is None else np.array(self.phases, dtype=float)
        except (TypeError, ValueError):
            raise ValidationError(path, "expected numbers: amplitudes (N, 3), angular_frequencies (N,), phases (N,)") \
                from None
        if w.ndim != 1 or len(w) == 0:
            raise ValidationError(f"{path}.angular_frequencies", f"expected a list of one or more angular "
                                                                 f"frequencies (rad/s), got shape {w.shape}")
        if a.shape != (len(w), 3):
            raise ValidationError(f"{path}.amplitudes", f"expected {len(w)} amplitude vector(s) of 3 coordinates (one "
                                                        f"per angular frequency), got shape {a.shape}")
        if p.shape != w.shape:
            raise ValidationError(f"{path}.phases", f"expected {len(w)} phase(s) (one per angular frequency), got "
                                                    f"shape {p.shape}")
        for name, arr in (("amplitudes", a), ("angular_frequencies", w), ("phases", p)):
            bad = np.argwhere(~np.isfinite(arr))
            if bad.size:
                raise ValidationError(f"{path}.{name}[{int(bad[0][0])}]", "is not a finite number")
        for k, pk in enumerate(p):
            v.phase(float(pk), f"{path}.phases[{k}]")
        center = self.center if self.center is not None else position
        if center is None:
            raise ValidationError(f"{path}.center", "missing: give the centre of the oscillation")
        return Oscillation(a, w, p, v.vector(center, f"{path}.center"))

    def harmonic_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(a (N+1,3), ω (N+1,), φ (N+1,)): the centre as a term of frequency 0, then the oscillation's terms."""
        a = np.vstack([np.asarray(self.center, dtype=float)[None], np.asarray(self.amplitudes, dtype=float)])
        return (a, np.concatenate([[0.0], np.asarray(self.angular_frequencies, dtype=float)]),
                np.concatenate([[0.0], np.asarray(self.phases, dtype=float)]))


@dataclass(frozen=True)
class UniformRotation(_Harmonic):
    """The body turns about ``axis`` (3,) through ``center`` (3,) m (None: the body's position) at
    ``angular_velocity`` rad/s, right-handed (see the module docstring). :meth:`checked` takes the body's position
    at t = 0 and splits its offset from the axis into the circle's radii r₁ (⊥ the axis) and r₂ = n̂ × r₁."""

    axis: Sequence[float]
    angular_velocity: float
    center: Sequence[float] | None = None
    #: made by :meth:`checked`: the foot of the start on the axis, r₁, r₂ (m), the unit axis
    _orbit: tuple | None = field(default=None, repr=False, compare=False)

    def checked(self, path: str, position=None) -> UniformRotation:
        """The validated rotation of a body that starts at ``position`` (3,) m."""
        axis = v.vector(self.axis, f"{path}.axis")
        norm = float(np.linalg.norm(axis))
        if not norm > 0:
            raise ValidationError(f"{path}.axis", "is zero: give the direction the body turns about")
        w = v.number(self.angular_velocity, f"{path}.angular_velocity")
        if position is None:
            raise ValidationError(path, "a uniform rotation needs the body's position (check the body, not the motion)")
        p0 = v.vector(position, f"{path}.position")
        c = v.vector(self.center if self.center is not None else p0, f"{path}.center")
        n = axis / norm
        d = p0 - c
        foot = c + n * float(n @ d)
        r1 = d - n * float(n @ d)
        return UniformRotation(axis, w, c, (foot, r1, np.cross(n, r1), n))

    def orbit(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(centre of the circle (3,) m, r₁ (3,) m, r₂ (3,) m, unit axis (3,)): position(t) = centre + r₁ cos ωt +
        r₂ sin ωt — the terms of PEM's elliptic orbit, phase 0 (:func:`pem_physics.engine.system.orbit_terms`)."""
        return self._orbit

    def orientations(self, t: np.ndarray, U0) -> np.ndarray:
        """Orientations U₀ R(n̂, ωt)ᵀ (T,3,3) at times t (T,) (rows: the body axes)."""
        n, w = self._orbit[3], float(self.angular_velocity)
        return np.array([np.asarray(U0, dtype=float) @ axis_angle_matrix(n, w * tk).T for tk in t])

    def harmonic_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(a (3,3), ω (3,), φ (3,)): the circle's centre, r₁ cos ωt and r₂ sin ωt = r₂ cos(ωt − π/2)."""
        foot, r1, r2, _ = self._orbit
        w = float(self.angular_velocity)
        return np.stack([foot, r1, r2]), np.array([0.0, w, w]), np.array([0.0, 0.0, -0.5 * math.pi])
