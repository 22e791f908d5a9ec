"""Time integrators (theory §4).

Every integrator holds the state of an ensemble of E copies of one system:
orientations (E,B,3,3) and lab angular momenta about the pivots (E,B,3).
For a hinged body the stored momentum is ℓ·a (ℓ = a·L, the only component
that matters for a 1-DOF rotation about the lab axis a).

- ``splitting2``: symplectic splitting of Dullweber, Leimkuhler & McLachlan
  (J. Chem. Phys. 107, 5840, 1997): half kick, exact free rotations about the
  principal axes, half kick. Friction is folded into the kicks as the exact
  solution of dL/dt = T − c·ω with the orientation frozen.
- ``splitting4``: Yoshida's triple-jump composition of ``splitting2`` (4th order).
- ``pem-euler``, ``pem-rk4``: the PEM manual's schemes exactly as the original
  engine runs them (for parity with PEM outputs; not for new work).
- ``dop853``: adaptive 8th-order Runge–Kutta (scipy) on quaternions, the
  high-accuracy reference.

Friction and the uniform field may differ between ensemble members
(``System.member_friction`` (E,), ``System.member_field`` (E,3); see ``System.per_member``);
every integrator honours them.
"""

from __future__ import annotations

import numpy as np

from .rotations import cross, orientation_to_quat, pem_correct, quat_to_orientation, rotate_rows_about
from .system import PemSourceDriver, System
from .torques import evaluate

#: The free-rotation sub-steps of one splitting step: (principal axis, fraction of h).
#: Axis 0 has the smallest moment; turning about the middle axis in the middle
#: keeps the unstable rotation (tennis racket) accurate.
ROTATION_SEQUENCE = ((0, 0.5), (2, 0.5), (1, 1.0), (2, 0.5), (0, 0.5))


def omega_lab(system: System, kin, U, L, J=None):
    """Angular velocity (E,B,3) lab from momenta L (E,B,3) at orientations U in ``kin``'s axes.

    ω = Uᵀ I⁺ U L; hinged bodies (given their J = a·I_lab·a, (E,B)) turn at ℓ/J about a.
    """
    Lb = np.einsum("ebij,ebj->ebi", U, L)
    wb = np.einsum("bij,ebj->ebi", kin.inv_inertia, Lb)
    w = np.einsum("ebij,ebi->ebj", U, wb)
    if J is not None and system.hinged.any():
        a = system.hinge_axis
        ell = np.einsum("ebi,bi->eb", L, a)
        w = np.where(system.hinged[:, None], (ell / np.where(system.hinged, J, 1.0))[..., None] * a, w)
    return w


class Integrator:
    """Common interface. ``U`` orientations in user body axes, ``L`` lab momenta, ``t`` time."""

    name = ""

    def __init__(self, system: System, dt: float, U0: np.ndarray, omega0: np.ndarray):
        self.system = system
        self.dt = dt
        self.steps_done = 0
        U0 = np.array(U0, dtype=float)
        self.J = system.hinge_inertia(U0)  # (E,B); meaningful only where hinged
        I_lab = np.einsum("ebji,bjk,ebkl->ebil", U0, system.kin_body.inertia, U0)
        L0 = np.einsum("ebij,ebj->ebi", I_lab, omega0)
        if system.hinged.any():
            a = system.hinge_axis
            ell = self.J * np.einsum("ebi,bi->eb", omega0, a)
            L0 = np.where(system.hinged[:, None], ell[..., None] * a, L0)
        self._init(U0, L0, np.array(omega0, dtype=float))

    @property
    def t(self) -> float:
        return self.steps_done * self.dt

    def advance(self, n: int) -> None:
        raise NotImplementedError

    # Overridden where the state is kept in other axes.
    def orientation(self) -> np.ndarray:
        return self.U

    def momentum(self) -> np.ndarray:
        return self.L

    def angular_velocity(self) -> np.ndarray:
        return omega_lab(self.system, self.system.kin_body, self.U, self.L, self.J)


class Splitting(Integrator):
    """Symplectic splitting, 2nd order, or 4th order by Yoshida's triple jump."""

    def __init__(self, system, dt, U0, omega0, order=2):
        self.order = order
        self.name = f"splitting{order}"
        if order == 2:
            self.fractions = (1.0,)
        elif order == 4:
            w1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
            self.fractions = (w1, 1.0 - 2.0 * w1, w1)
        else:
            raise ValueError(f"order must be 2 or 4, got {order}")
        self._decay = {}
        super().__init__(system, dt, U0, omega0)

    def _init(self, U0, L0, omega0):
        sys = self.system
        self.Q = np.einsum("bji,ebjk->ebik", sys.axes, U0)  # rows = principal axes in lab
        self.L = L0
        self.free = np.flatnonzero(~sys.hinged)
        self.hinge = np.flatnonzero(sys.hinged)
        self.all_free = len(self.hinge) == 0
        self.T = self._torque(0.0)

    def _torque(self, t):
        return evaluate(self.system, self.system.kin_principal, self.Q, t).torque

    def orientation(self):
        return np.einsum("bij,ebjk->ebik", self.system.axes, self.Q)

    def angular_velocity(self):
        return omega_lab(self.system, self.system.kin_principal, self.Q, self.L, self.J)

    def _kick(self, h):
        """L ← exact solution over h of dL/dt = T − c·ω with the orientation frozen.

        c is the scene's friction or, for an ensemble with per-member friction, c (E,) N·m·s;
        a member with c = 0 takes the limit (decay 1, impulse h·T), so it gets the numbers an
        undamped run gets, and a member with c > 0 those of a single run with that c.
        """
        sys, T = self.system, self.T
        c = sys.friction if sys.member_friction is None else sys.member_friction
        if sys.member_friction is None and c == 0.0:
            if self.all_free:
                self.L += h * T
            else:
                self.L[:, self.free] += h * T[:, self.free]
                a = sys.hinge_axis[self.hinge]
                tau = np.einsum("ebi,bi->eb", T[:, self.hinge], a)
                self.L[:, self.hinge] += (h * tau)[..., None] * a
            return
        cf = c if np.ndim(c) == 0 else c[:, None, None]         # against (E,Bf,3)
        if h not in self._decay:
            inv = sys.inv_moments[self.free]                    # (Bf,3)
            e = np.exp((-cf * h) * inv)
            ci = cf * np.where(inv > 0, inv, 1.0)
            live = (inv > 0) & (ci > 0)
            g = np.where(live, (1.0 - e) / np.where(live, ci, 1.0), h)
            self._decay[h] = (e, g)
        e, g = self._decay[h]
        f = self.free
        Q = self.Q[:, f]
        Lp = np.einsum("ebij,ebj->ebi", Q, self.L[:, f])
        Tp = np.einsum("ebij,ebj->ebi", Q, T[:, f])
        self.L[:, f] = np.einsum("ebij,ebi->ebj", Q, Lp * e + Tp * g)
        if len(self.hinge):
            a = sys.hinge_axis[self.hinge]
            J = self.J[:, self.hinge]
            ch = c if np.ndim(c) == 0 else c[:, None]           # against (E,Bh)
            ell = np.einsum("ebi,bi->eb", self.L[:, self.hinge], a)
            tau = np.einsum("ebi,bi->eb", T[:, self.hinge], a)
            eh = np.exp(-ch * h / J)
            damped = ch > 0
            ell = np.where(damped, ell * eh + tau * (1.0 - eh) * J / np.where(damped, ch, 1.0), ell + h * tau)
            self.L[:, self.hinge] = ell[..., None] * a

    def _drift(self, h):
        """Exact free rotation over h: turns about principal axes (or the hinge axis)."""
        inv = self.system.inv_moments
        if self.all_free:
            Q, L = self.Q, self.L
            for k, frac in ROTATION_SEQUENCE:
                th = (frac * h) * np.einsum("ebi,ebi->eb", Q[:, :, k], L) * inv[:, k]
                c, s = np.cos(th)[..., None], np.sin(th)[..., None]
                j, m = (k + 1) % 3, (k + 2) % 3
                qj = Q[:, :, j].copy()
                Q[:, :, j] = c * qj + s * Q[:, :, m]
                Q[:, :, m] = c * Q[:, :, m] - s * qj
            return
        f = self.free
        Q, L, inv_f = self.Q[:, f], self.L[:, f], inv[f]
        for k, frac in ROTATION_SEQUENCE:
            th = (frac * h) * np.einsum("ebi,ebi->eb", Q[:, :, k], L) * inv_f[:, k]
            c, s = np.cos(th)[..., None], np.sin(th)[..., None]
            j, m = (k + 1) % 3, (k + 2) % 3
            qj = Q[:, :, j].copy()
            Q[:, :, j] = c * qj + s * Q[:, :, m]
            Q[:, :, m] = c * Q[:, :, m] - s * qj
        self.Q[:, f] = Q
        hg = self.hinge
        a = self.system.hinge_axis[hg]
        ell = np.einsum("ebi,bi->eb", self.L[:, hg], a)
        self.Q[:, hg] = rotate_rows_about(self.Q[:, hg], np.broadcast_to(a, ell.shape + (3,)),
                                          h * ell / self.J[:, hg])

    def advance(self, n):
        dt = self.dt
        for _ in range(n):
            t0 = self.t
            tau = 0.0
            for frac in self.fractions:
                h = frac * dt
                self._kick(0.5 * h)
                self._drift(h)
                tau += frac
                self.T = self._torque(t0 + tau * dt)
                self._kick(0.5 * h)
            self.steps_done += 1


class PemScheme(Integrator):
    """PEM's explicit Euler or classic RK4 on (L, u_i), step for step as the original engine.

    Faithful details: ω used in a stage is the one computed at the end of the
    previous stage; stage times are (n+1)·dt, +dt/2, +dt/2, +dt (PEM's clock
    runs one step ahead); frames get PEM's approximate re-orthonormalisation
    after each step, while dipoles stay placed by the uncorrected frame until the
    next stage; driven bodies move once per step (see PemSourceDriver).
    """

    def __init__(self, system, dt, U0, omega0, rk4=True):
        self.rk4 = rk4
        self.name = "pem-rk4" if rk4 else "pem-euler"
        super().__init__(system, dt, U0, omega0)

    def _init(self, U0, L0, omega0):
        self.U = U0.copy()
        self.U_dip = U0.copy()
        # PEM keeps all components of L for hinged bodies too.
        I_lab = np.einsum("ebji,bjk,ebkl->ebil", U0, self.system.kin_body.inertia, U0)
        self.L = np.einsum("ebij,ebj->ebi", I_lab, omega0)
        self.w = omega0.copy()
        self.driver = PemSourceDriver(self.system, self.dt)
        from . import fast

        # The fused numba kernel runs the same scheme (equal to rounding); used for large ensembles when it applies.
        self.fast = (self.rk4 and fast.ENABLED and U0.shape[0] >= fast.MIN_MEMBERS
                     and fast.pem_rk4_supported(self.system))

    def angular_velocity(self):
        return self.w

    def _omega(self, U, L):
        w = omega_lab(self.system, self.system.kin_body, U, L)
        if self.system.hinged.any():
            # PEM projects ω on the axis (wrong unless a is principal; theory §3).
            a = self.system.hinge_axis
            wa = np.einsum("ebi,bi->eb", w, a)
            w = np.where(self.system.hinged[:, None], wa[..., None] * a, w)
        return w

    def _torque(self, U, U_dip, w, t, src):
        T = evaluate(self.system, self.system.kin_body, U, t, src, U_dipoles=U_dip).torque
        if self.system.has_friction:
            T = T - self.system.damping(w)
        return T

    def advance(self, n):
        if self.fast:
            from .fast import pem_rk4_advance

            pem_rk4_advance(self, n)
            return
        dt = self.dt
        for _ in range(n):
            i = self.steps_done + 1
            src = self.driver.current()
            t1 = i * dt
            if not self.rk4:
                T = self._torque(self.U, self.U_dip, self.w, t1, src)
                self.L = self.L + T * dt
                self.w = self._omega(self.U, self.L)
                U = self.U + cross(self.w[..., None, :], self.U) * dt
                self.driver.time = t1
            else:
                Ln, Un = self.L, self.U
                T = self._torque(Un, self.U_dip, self.w, t1, src)
                dL1, dU1 = T * dt, cross(self.w[..., None, :], Un) * dt
                L, U = Ln + 0.5 * dL1, Un + 0.5 * dU1
                w = self._omega(U, L)
                t2 = t1 + 0.5 * dt
                T = self._torque(U, U, w, t2, src)
                dL2, dU2 = T * dt, cross(w[..., None, :], U) * dt
                L, U = Ln + 0.5 * dL2, Un + 0.5 * dU2
                w = self._omega(U, L)
                T = self._torque(U, U, w, t2, src)
                dL3, dU3 = T * dt, cross(w[..., None, :], U) * dt
                L, U = Ln + dL3, Un + dU3
                w = self._omega(U, L)
                t4 = t2 + 0.5 * dt
                T = self._torque(U, U, w, t4, src)
                dL4, dU4 = T * dt, cross(w[..., None, :], U) * dt
                self.L = Ln + (dL1 + 2 * dL2 + 2 * dL3 + dL4) / 6
                U = Un + (dU1 + 2 * dU2 + 2 * dU3 + dU4) / 6
                self.w = self._omega(U, self.L)
                self.driver.time = t4
            self.U_dip = U
            self.U = pem_correct(U)
            self.driver.update()
            self.steps_done += 1


class Dop853(Integrator):
    """Adaptive DOP853 (scipy) on unit quaternions and lab momenta: the reference method."""

    name = "dop853"

    def __init__(self, system, dt, U0, omega0, rtol=1e-10, atol=1e-12):
        self.rtol, self.atol = rtol, atol
        self._first_step = None
        super().__init__(system, dt, U0, omega0)

    def _init(self, U0, L0, omega0):
        self.q = orientation_to_quat(U0)
        self.L = L0
        self.n_evals = 0

    @property
    def U(self):
        return quat_to_orientation(self.q)

    def _rhs(self, t, y):
        E, B = self.q.shape[:2]
        sys = self.system
        q = y[: E * B * 4].reshape(E, B, 4)
        L = y[E * B * 4:].reshape(E, B, 3)
        q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        U = quat_to_orientation(q)
        w = omega_lab(sys, sys.kin_body, U, L, self.J)
        T = evaluate(sys, sys.kin_body, U, t).torque - sys.damping(w)
        if sys.hinged.any():
            a = sys.hinge_axis
            T = np.where(sys.hinged[:, None], np.einsum("ebi,bi->eb", T, a)[..., None] * a, T)
        # q̇ = ½ (0, ω) ⊗ q  (ω in the lab: left multiplication)
        dq = np.empty_like(q)
        dq[..., 0] = -np.einsum("ebi,ebi->eb", w, q[..., 1:])
        dq[..., 1:] = w * q[..., :1] + cross(w, q[..., 1:])
        self.n_evals += 1
        return np.concatenate([0.5 * dq.ravel(), T.ravel()])

    def advance(self, n):
        from scipy.integrate import solve_ivp

        t0, t1 = self.t, (self.steps_done + n) * self.dt
        y0 = np.concatenate([self.q.ravel(), self.L.ravel()])
        first = None if self._first_step is None else min(self._first_step, t1 - t0)
        sol = solve_ivp(self._rhs, (t0, t1), y0, method="DOP853", rtol=self.rtol, atol=self.atol,
                        first_step=first)
        if not sol.success:
            from .errors import SimulationError

            raise SimulationError(f"DOP853 failed between t = {t0:g} s and {t1:g} s: {sol.message}", time=t0)
        if len(sol.t) > 1:
            # Restart the next chunk with the step size reached, not from scratch.
            self._first_step = float(sol.t[-1] - sol.t[-2]) or None
        E, B = self.q.shape[:2]
        y = sol.y[:, -1]
        q = y[: E * B * 4].reshape(E, B, 4)
        self.q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        self.L = y[E * B * 4:].reshape(E, B, 3)
        self.steps_done += n


def make_integrator(method: str, system: System, dt: float, U0, omega0, *, rtol=1e-10, atol=1e-12) -> Integrator:
    """The integrator called ``method`` (see model.METHODS) started at (U0, ω0), each (E,B,3,3)/(E,B,3)."""
    if method == "splitting2":
        return Splitting(system, dt, U0, omega0, order=2)
    if method == "splitting4":
        return Splitting(system, dt, U0, omega0, order=4)
    if method == "pem-rk4":
        return PemScheme(system, dt, U0, omega0, rk4=True)
    if method == "pem-euler":
        return PemScheme(system, dt, U0, omega0, rk4=False)
    if method == "dop853":
        return Dop853(system, dt, U0, omega0, rtol=rtol, atol=atol)
    raise ValueError(f"unknown method {method!r}")
