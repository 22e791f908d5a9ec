"""One moving body in plain Python floats: the fast path for a single scene where numba is absent.

Blender ships numpy but not numba, and on platforms without bundled numba wheels every bake would
run on the numpy reference, whose cost is numpy's per-call overhead on 3-vectors (~10 calls per
sub-step). For the common case — one moving body (pendulum or free, not hinged) over fixed
magnets, gravity, a uniform field and friction, integrated with splitting4 or splitting2 — this
module runs :class:`~..integrators.Splitting`'s step on Python floats instead: the same formulas in
the same order as :mod:`.compiled` (so the three agree to rounding; ``tests/engine/test_scalar.py``
checks it against the numpy reference to 1e-12), ~20× the numpy reference's steps per second.

It runs only where numba is not installed (the compiled engine is faster still) and not when numba
was turned off on purpose with ``PEM_NUMBA=0`` (which asks for the numpy reference); :data:`FORCE`
runs it anyway (the tests).
"""

from __future__ import annotations

import math
import os

import numpy as np

from ..dipole_pair import field_and_force
from ..orthonormal import newton_schulz

#: Set False to run single scenes without numba on the numpy reference.
ENABLED = True
#: Run this path even where numba is installed or turned off (tests compare it with numpy).
FORCE = False


def supported(integ) -> bool:
    """Whether this path runs the integrator: no numba (or FORCE), splitting, one member, one moving body that
    is not hinged and does not translate, static sources, no rotating field or periodic box."""
    from ...jit import installed
    from ..integrators import Splitting

    if not ENABLED or not isinstance(integ, Splitting):
        return False
    if getattr(integ, "contacts", None) is not None:  # impacts restart steps: the numpy contact driver runs them
        return False
    if not FORCE and (installed() or os.environ.get("PEM_NUMBA", "1") == "0"):
        return False
    sys_ = integ.system
    return (integ.L.shape[0] == 1 and sys_.n_bodies == 1 and not sys_.hinged.any() and sys_.box is None
            and sys_.rotating_field is None and sys_.static_sources and not sys_.per_member
            and not sys_.any_translating and not sys_.moving_pivots)


def _t(a) -> tuple:
    return tuple(float(x) for x in np.ravel(a))


class Runner:
    """compiled.Runner's interface on Python floats: :meth:`advance_to` runs through record marks and leaves
    the state in the integrator object."""

    def __init__(self, integ, orth_limit: float, check_every: int):
        self.integ = integ
        sys_ = integ.system
        self.check_every = int(check_every)
        self.orth_limit = float(orth_limit)
        kin = sys_.kin_principal
        rs, ms = sys_.sources(0.0)
        self.dips = [(_t(p), _t(m)) for p, m in zip(np.reshape(kin.dpos, (-1, 3)), np.reshape(kin.dmom, (-1, 3)))]
        self.srcs = [(_t(r), _t(m)) for r, m in zip(np.reshape(rs, (-1, 3)), np.reshape(ms, (-1, 3)))]
        self.com, self.mass, self.gravity = _t(kin.com[0]), float(sys_.mass[0]), _t(sys_.gravity)
        self.pivot, self.field = _t(sys_.pivot[0]), _t(sys_.field)
        self.k = float(sys_.mu0 / (4 * np.pi))
        self.inv_inertia = _t(kin.inv_inertia[0])
        self.axes = np.asarray(sys_.axes[0], float)
        plan, inv1 = integ._plan
        self.inv1 = float(inv1[0]) if len(inv1) else 0.0
        self.plan = [(int(a), float(fr), float(ck[0])) for a, fr, ck in plan]
        self.drifts, self.kicks = _t(integ.drifts), _t(integ.kicks)
        self.damped = not (sys_.friction == 0.0)  # Splitting._kick's test (one scene-wide friction)
        self.friction = float(sys_.friction)
        self.inv_m = _t(sys_.inv_moments[0])
        self._decay = {}

    # ------------------------------------------------------------------ the pieces of a step

    def _torque(self, q):
        """Torque about the pivot at principal frame q (9-tuple, rows = principal axes): torque_kernels._torque."""
        c0, c1, c2 = self.com
        g0, g1, g2 = self.gravity
        rg0 = q[0] * c0 + q[3] * c1 + q[6] * c2
        rg1 = q[1] * c0 + q[4] * c1 + q[7] * c2
        rg2 = q[2] * c0 + q[5] * c1 + q[8] * c2
        m = self.mass
        T0, T1, T2 = m * (rg1 * g2 - rg2 * g1), m * (rg2 * g0 - rg0 * g2), m * (rg0 * g1 - rg1 * g0)
        d0 = d1 = d2 = 0.0
        p0, p1, p2 = self.pivot
        bx, by, bz = self.field
        k = self.k
        for (x0, x1, x2), (m0, m1, m2) in self.dips:
            s0 = q[0] * x0 + q[3] * x1 + q[6] * x2
            s1 = q[1] * x0 + q[4] * x1 + q[7] * x2
            s2 = q[2] * x0 + q[5] * x1 + q[8] * x2
            ax = q[0] * m0 + q[3] * m1 + q[6] * m2
            ay = q[1] * m0 + q[4] * m1 + q[7] * m2
            az = q[2] * m0 + q[5] * m1 + q[8] * m2
            r0, r1, r2 = p0 + s0, p1 + s1, p2 + s2
            Bx = By = Bz = Fx = Fy = Fz = 0.0
            for (rx, ry, rz), (cx, cy, cz) in self.srcs:
                bx_, by_, bz_, fx, fy, fz = field_and_force(r0 - rx, r1 - ry, r2 - rz, cx, cy, cz, ax, ay, az, k)
                Bx += bx_
                By += by_
                Bz += bz_
                Fx += fx
                Fy += fy
                Fz += fz
            Bx, By, Bz = Bx + bx, By + by, Bz + bz
            d0 += (s1 * Fz - s2 * Fy) + (ay * Bz - az * By)
            d1 += (s2 * Fx - s0 * Fz) + (az * Bx - ax * Bz)
            d2 += (s0 * Fy - s1 * Fx) + (ax * By - ay * Bx)
        return T0 + d0, T1 + d1, T2 + d2

    def _factors(self, h):
        """Per principal axis (e, g) of the exact damped kick over h (Splitting._kick)."""
        if h not in self._decay:
            c = self.friction
            out = []
            for inv in self.inv_m:
                e = math.exp((-c * h) * inv)
                ci = c * (inv if inv > 0 else 1.0)
                out.append((e, -math.expm1((-c * h) * inv) / ci if (inv > 0 and ci > 0) else h))
            self._decay[h] = tuple(out)
        return self._decay[h]

    def _kick(self, q, L, T, h):
        if not self.damped:
            return L[0] + h * T[0], L[1] + h * T[1], L[2] + h * T[2]
        (e0, g0), (e1, g1), (e2, g2) = self._factors(h)
        x0 = (q[0] * L[0] + q[1] * L[1] + q[2] * L[2]) * e0 + (q[0] * T[0] + q[1] * T[1] + q[2] * T[2]) * g0
        x1 = (q[3] * L[0] + q[4] * L[1] + q[5] * L[2]) * e1 + (q[3] * T[0] + q[4] * T[1] + q[5] * T[2]) * g1
        x2 = (q[6] * L[0] + q[7] * L[1] + q[8] * L[2]) * e2 + (q[6] * T[0] + q[7] * T[1] + q[8] * T[2]) * g2
        return (q[0] * x0 + q[3] * x1 + q[6] * x2, q[1] * x0 + q[4] * x1 + q[7] * x2,
                q[2] * x0 + q[5] * x1 + q[8] * x2)

    def _drift(self, q, L, h):
        """Exact free rotation over h (Splitting._turn_free): about L by h|L|/λ₁, then the plan's turns."""
        l0, l1, l2 = L
        L2 = l0 * l0 + l1 * l1 + l2 * l2
        norm = math.sqrt(L2)
        hi = h * self.inv1
        if norm > 0:
            th = hi * norm
            fa = math.sin(th) / norm
            fb = (1.0 - math.cos(th)) / L2
        else:
            fa, fb = hi, 0.5 * hi ** 2
        out = []
        for i in (0, 3, 6):
            q0, q1, q2 = q[i], q[i + 1], q[i + 2]
            k0 = q1 * l2 - q2 * l1
            k1 = q2 * l0 - q0 * l2
            k2 = q0 * l1 - q1 * l0
            out += (q0 - fa * k0 + fb * (k1 * l2 - k2 * l1), q1 - fa * k1 + fb * (k2 * l0 - k0 * l2),
                    q2 - fa * k2 + fb * (k0 * l1 - k1 * l0))
        for a, frac, cf in self.plan:
            th = (frac * h) * (out[3 * a] * l0 + out[3 * a + 1] * l1 + out[3 * a + 2] * l2) * cf
            c, s = math.cos(th), math.sin(th)
            j, m = 3 * ((a + 1) % 3), 3 * ((a + 2) % 3)
            for i in range(3):
                qj, qm = out[j + i], out[m + i]
                out[j + i] = c * qj + s * qm
                out[m + i] = c * qm - s * qj
        return out

    @staticmethod
    def _newton_schulz(q):
        return list(newton_schulz(*q))

    def _chunk(self, q, L, T, n):
        """Splitting.advance(n) (compiled._split_chunk): kicks merged between the steps of the chunk."""
        dt, a, b = self.integ.dt, self.drifts, self.kicks
        s = len(a)
        if b[0] != 0.0:
            L = self._kick(q, L, T, b[0] * dt)
        for step in range(n):
            for i in range(s):
                q = self._drift(q, L, a[i] * dt)
                last = i == s - 1
                coef = b[i + 1] + (b[0] if last and step < n - 1 else 0.0)
                if coef != 0.0 or (last and step == n - 1):
                    T = self._torque(q)
                if coef != 0.0:
                    L = self._kick(q, L, T, coef * dt)
            q = self._newton_schulz(q)
        return q, L, T

    def _sane(self, q, L) -> int:
        if not all(math.isfinite(x) for x in L):
            return 1
        acc = 0.0
        for i in range(3):
            for j in range(3):
                g = q[3 * i] * q[3 * j] + q[3 * i + 1] * q[3 * j + 1] + q[3 * i + 2] * q[3 * j + 2] - (i == j)
                acc += g * g
        return 0 if math.sqrt(acc) < self.orth_limit else 2

    def advance_to(self, marks) -> tuple:
        """As compiled.Runner.advance_to: (U (1,R,1,3,3), L, w (1,R,1,3), None, None, status (1,3)) — no
        positions and linear momenta: the body does not translate."""
        integ = self.integ
        R = len(marks)
        out_U, out_L, out_w = np.zeros((1, R, 1, 3, 3)), np.zeros((1, R, 1, 3)), np.zeros((1, R, 1, 3))
        q = [float(x) for x in integ.Q[0, 0].ravel()]
        L = tuple(float(x) for x in integ.L[0, 0])
        T = tuple(float(x) for x in integ.T[0, 0])
        steps, code = integ.steps_done, 0
        for r, mark in enumerate(marks):
            while steps < mark:
                n = min(self.check_every, mark - steps)
                q, L, T = self._chunk(q, L, T, n)
                steps += n
                code = self._sane(q, L)
                if code:
                    break
            if code:
                break
            Q = np.array(q).reshape(3, 3)
            out_U[0, r, 0] = self.axes @ Q
            out_L[0, r, 0] = L
            I = np.array(self.inv_inertia).reshape(3, 3)
            out_w[0, r, 0] = Q.T @ (I @ (Q @ np.array(L)))
        integ.Q = np.array(q).reshape(1, 1, 3, 3)
        integ.L = np.array(L).reshape(1, 1, 3)
        integ.T = np.array(T).reshape(1, 1, 3)
        integ.steps_done = steps
        return out_U, out_L, out_w, None, None, np.array([[code, steps, 0]], np.int64)
