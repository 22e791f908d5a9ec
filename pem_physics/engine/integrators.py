"""Time integrators (theory §4).

Every integrator holds the state of an ensemble of E copies of one system:
orientations (E,B,3,3) and lab angular momenta about the pivots (E,B,3).
For a hinged body the stored momentum is ℓ·a (ℓ = a·L, the only component
that matters for a 1-DOF rotation about the lab axis a).

- ``splitting2``: symplectic splitting of Dullweber, Leimkuhler & McLachlan
  (J. Chem. Phys. 107, 5840, 1997): half kick, free rotation, half kick. The
  free rotation is a turn about L (exact) plus, for a body without an axis of
  symmetry, Strang-split turns about two principal axes (Fassò 2003: its error
  scales with the asymmetry; for symmetric bodies and needles it is exact).
  Friction is folded into the kicks as the exact solution of dL/dt = T − c·ω
  with the orientation frozen.
- ``splitting4``: 4th order. When every free body's rotation is exact (symmetric
  bodies, needles; hinges always are) the step is Blanes & Moan's SRKN₆ᵇ
  (J. Comput. Appl. Math. 142, 313, 2002) — six kicks, an error constant orders
  of magnitude below Yoshida's triple jump; otherwise Suzuki's five-stage
  composition of ``splitting2`` (which stays 4th order with an inexact drift,
  where SRKN₆ᵇ would drop to 2nd). Theory §4 names Yoshida's triple jump; both
  replacements keep its properties (symmetric, symplectic, 4th order) and cost
  less at equal error (``bench/bench_accuracy.py``).
- ``pem-euler``, ``pem-rk4``: the PEM manual's schemes exactly as the original
  engine runs them (for parity with PEM outputs; not for new work).
- ``dop853``: adaptive 8th-order Runge–Kutta (scipy) on quaternions, the
  high-accuracy reference.

Translating bodies (``System.translating``; theory §7) add their centre-of-mass positions X (E,B,3) m
and momenta P (E,B,3) kg·m/s to the state (rows of bodies that do not translate hold the pivot and
zero). The splitting kicks P by the forces as it kicks L by the torques (about the centres of mass X)
and drifts X by h·P/M as it turns the bodies: kinetic energy |P|²/2M + rotational energy is the
drift's Hamiltonian, the potential the kick's, so the schemes stay symplectic and of their order.
``dop853`` integrates X and P too; PEM's schemes do not translate (they refuse such systems).

Friction and the uniform field may differ between ensemble members
(``System.member_friction`` (E,), ``System.member_field`` (E,3); see ``System.per_member``);
every integrator honours them.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np

from ..errors import ValidationError
from ..model.rotations import cross, orientation_to_quat, pem_correct, quat_to_orientation, rotate_rows_about
from .system import PemSourceDriver, System
from .torques import evaluate

#: Corrections |1/λ_k − 1/λ_1| at or below this fraction of max 1/λ count as zero: the body is
#: treated as symmetric about axis k (a relative change of a moment of that size is far below
#: the rounding of a mesh integral), and its drift is exact.
SYMMETRY_RTOL = 1e-12

#: (3,9): (v @ CROSS_MATRIX).reshape(3, 3) is [v]×, the matrix with [v]× w = v × w.
CROSS_MATRIX = np.zeros((3, 3, 3))
for _i, _j, _k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
    CROSS_MATRIX[_j, _i, _k], CROSS_MATRIX[_k, _i, _j] = 1.0, -1.0  # ([v]×)_ik = ε_ijk v_j
CROSS_MATRIX = CROSS_MATRIX.reshape(3, 9)


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


def free_turn_plan(inv: np.ndarray):
    """The free-rotation sub-steps for bodies of inverse principal moments ``inv`` (Bf,3) kg⁻¹m⁻²:
    ((axis, fraction of h, coefficient (Bf,)), …), and 1/λ₁ (Bf,).

    Free rotation splits as T = |L|²/(2λ₁) + ½(1/λ₀ − 1/λ₁)L₀² + ½(1/λ₂ − 1/λ₁)L₂² (principal
    components L_k, λ₁ the middle moment). The first term is bi-invariant, so it commutes with the
    others and its flow — a turn of the whole body about the lab L by h|L|/λ₁ — is exact. The two
    corrections are turns about principal axes 0 and 2 (Strang-split; they do not commute). For a
    symmetric body (or a needle, λ₀ = 0) one correction vanishes and the drift is the exact free
    motion; for an asymmetric one the splitting error scales with the product of the two small
    corrections instead of with the moments themselves (Fassò, SIAM J. Numer. Anal. 41, 2003).
    """
    coef = inv - inv[:, 1:2]
    scale = np.max(inv) if inv.size else 0.0
    live = [k for k in (0, 2) if np.any(np.abs(coef[:, k]) > SYMMETRY_RTOL * scale)]
    if len(live) == 2:
        plan = ((0, 0.5), (2, 1.0), (0, 0.5))
    else:
        plan = tuple((k, 1.0) for k in live)
    return tuple((k, f, coef[:, k].copy()) for k, f in plan), inv[:, 1].copy()


def free_turn(Q: np.ndarray, L: np.ndarray, h: float, plan) -> np.ndarray:
    """Free rotation over h (s) of frames Q (E,Bf,3,3) (rows: principal axes) with lab angular momenta
    L (E,Bf,3) kg m²/s, by the sub-steps of :func:`free_turn_plan` (exact for symmetric bodies)."""
    plan, inv1 = plan
    # The turn about L by θ = h|L|/λ₁ (Rodrigues with K = [L]×, so no unit vector is formed):
    # rows q → Rq, Q → Q Rᵀ = Q − (sin θ/|L|) QK + ((1 − cos θ)/|L|²) QK².
    L2 = np.einsum("ebi,ebi->eb", L, L)
    norm = np.sqrt(L2)
    th = (h * inv1) * norm
    with np.errstate(invalid="ignore", divide="ignore"):  # |L| = 0: the limits below
        a = np.where(norm > 0, np.sin(th) / norm, h * inv1)[..., None, None]
        b = np.where(norm > 0, (1.0 - np.cos(th)) / L2, 0.5 * (h * inv1) ** 2)[..., None, None]
    K = (L @ CROSS_MATRIX).reshape(L.shape[:-1] + (3, 3))
    QK = Q @ K
    Q = Q - a * QK + b * (QK @ K)
    for k, frac, ck in plan:
        th = (frac * h) * np.einsum("ebi,ebi->eb", Q[:, :, k], L) * ck
        c, s = np.cos(th)[..., None], np.sin(th)[..., None]
        j, m = (k + 1) % 3, (k + 2) % 3
        qj = Q[:, :, j].copy()
        Q[:, :, j] = c * qj + s * Q[:, :, m]
        Q[:, :, m] = c * Q[:, :, m] - s * qj
    return Q


class Integrator:
    """Common interface. ``U`` orientations in user body axes, ``L`` lab momenta, ``t`` time;
    ``X`` (E,B,3) m centres of rotation and ``P`` (E,B,3) kg·m/s linear momenta (see the module docstring)."""

    name = ""

    def __init__(self, system: System, dt: float, U0: np.ndarray, omega0: np.ndarray):
        self.system = system
        self.dt = dt
        self.steps_done = 0
        U0 = np.array(U0, dtype=float)
        E = U0.shape[0]
        self.X = np.broadcast_to(system.pivot, (E,) + system.pivot.shape).copy()
        self.P = np.broadcast_to(system.mass[:, None] * system.velocity0, self.X.shape).copy()
        self.moving_x = np.flatnonzero(system.translating)  # indices of the translating bodies
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

    def position(self) -> np.ndarray:
        """Centres of rotation (E,B,3) m, lab: pivots (moving ones where they are now), centres of mass of free
        bodies (moving if translating)."""
        return self.system.centres(self.t, self.X)

    def linear_momentum(self) -> np.ndarray:
        """Linear momenta (E,B,3) kg·m/s, lab, of the translating bodies (zero rows for the others)."""
        return self.P


class Splitting(Integrator):
    """Symplectic splitting, 2nd order (Strang), or 4th order (SRKN₆ᵇ or Suzuki; see the module docstring).

    ``scheme`` names the step table in ``SCHEMES``; ``exact_drift`` says whether the free rotation
    of every free body is exact (no asymmetry corrections to split).
    """

    def __init__(self, system, dt, U0, omega0, order=2):
        self.order = order
        self.name = f"splitting{order}"
        if order not in (2, 4):
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
        self._plan = self._drift_plan()
        self.exact_drift = len(self._plan[0]) < 2  # no pair of non-commuting corrections to split
        if self.order == 2:
            self.scheme = "strang"
        else:
            self.scheme = "srkn6b" if self.exact_drift else "suzuki"
        self.drifts, self.kicks = SCHEMES[self.scheme]
        #: (E,) J: the work the drivers did on the bodies so far (driven magnets, moving pivots, a rotating
        #: field), None without drivers — see :meth:`_kick`
        self.driver_work = np.zeros(len(L0)) if self.system.driven else None
        self._jumps = None
        if self.driver_work is not None and self.system.moving_pivots:
            self._jumps = [None if m is None else m.jerk_jumps() for m in self.system.pivot_motions]
        self.T = self._torque(0.0)

    def _torque(self, t):
        """Torques (E,B,3) at the current state and time t; the forces (translating systems) go to ``self.F``,
        the drivers' power ∂V/∂t (scenes with drivers) to ``self.W``."""
        driven = self.driver_work is not None
        self._t_torque = t
        res = evaluate(self.system, self.system.kin_principal, self.Q, t, X=self.X if len(self.moving_x) else None,
                       power=driven)
        if len(self.moving_x):
            self.F = res.force
        if driven:
            self.W = res.power
        return res.torque

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
        if self.driver_work is not None:
            # time is a coordinate the drifts advance, its momentum −E the kicks change by −h·∂V/∂t: so the
            # drivers' work is summed with the scheme's own weights, and E − W is conserved to the scheme's order
            self.driver_work += h * self.W
        if len(self.moving_x):
            tr = self.moving_x
            self.P[:, tr] += h * self.F[:, tr]
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
            # (1 − e)/(c/I) as −expm1(−ch/I)/(c/I): exact to rounding however small ch/I (1 − e loses its digits)
            g = np.where(live, -np.expm1((-cf * h) * inv) / np.where(live, ci, 1.0), h)
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
            ell = np.where(damped, ell * eh + tau * -np.expm1(-ch * h / J) * J / np.where(damped, ch, 1.0),
                           ell + h * tau)
            self.L[:, self.hinge] = ell[..., None] * a

    def _drift_plan(self):
        """The free-rotation sub-steps of the free bodies (:func:`free_turn_plan`)."""
        return free_turn_plan(self.system.inv_moments[self.free])

    def follow(self, whole: Splitting, bodies: np.ndarray) -> None:
        """Step the way ``whole`` steps its bodies ``bodies`` (indices into whole's, increasing), which this
        integrator holds alone (:mod:`.groups`): the scheme and the free-turn sub-steps are chosen over all of a
        scene's free bodies (an asymmetric top makes every body's splitting4 Suzuki's, not SRKN₆ᵇ), so they are
        taken from ``whole``, with these bodies' coefficients (a sub-step of coefficient 0 turns a body by exactly
        nothing)."""
        pos = np.searchsorted(whole.free, bodies[np.isin(bodies, whole.free)])
        plan, inv1 = whole._plan
        self._plan = tuple((k, f, ck[pos]) for k, f, ck in plan), inv1[pos]
        self.exact_drift, self.scheme, self.drifts, self.kicks = (whole.exact_drift, whole.scheme, whole.drifts,
                                                                  whole.kicks)

    def _turn_free(self, Q, L, h):
        """Exact free rotation over h of the free bodies' frames Q (E,Bf,3,3) (rows: principal axes)."""
        return free_turn(Q, L, h, self._plan)

    def _drift(self, h):
        """Exact free rotation over h (free bodies: see ``_drift_plan``; hinged: about the hinge axis), and the
        free flight x += h·p/M of the translating bodies."""
        if len(self.moving_x):
            tr = self.moving_x
            self.X[:, tr] += (h / self.system.mass[tr])[:, None] * self.P[:, tr]
        if self.all_free:
            self.Q = self._turn_free(self.Q, self.L, h)
            return
        f = self.free
        if len(f):
            self.Q[:, f] = self._turn_free(self.Q[:, f], self.L[:, f], h)
        hg = self.hinge
        a = self.system.hinge_axis[hg]
        ell = np.einsum("ebi,bi->eb", self.L[:, hg], a)
        self.Q[:, hg] = rotate_rows_about(self.Q[:, hg], np.broadcast_to(a, ell.shape + (3,)),
                                          h * ell / self.J[:, hg])

    def advance(self, n):
        """n steps of kick b₁, drift a₁, kick b₂, …, drift a_s, kick b_{s+1} (``self.kicks``, ``self.drifts``).

        A step's closing kick and the next step's opening kick share orientation and torque, so they
        are one kick (a kick is an exact flow with everything but L frozen: two compose to one); the
        state is synchronised on return.
        """
        if n <= 0:
            return
        dt, a, b = self.dt, self.drifts, self.kicks
        s = len(a)
        if b[0]:
            self._kick(b[0] * dt)
        for step in range(n):
            t0 = self.t
            tau = 0.0
            nodes = [self._t_torque]   # the times the kicks' torques (and ∂V/∂t) were taken at
            for i in range(s):
                self._drift(a[i] * dt)
                tau += a[i]
                last = i == s - 1
                coef = b[i + 1] + (b[0] if last and step < n - 1 else 0.0)
                if coef or (last and step == n - 1):
                    self.T = self._torque(t0 + tau * dt)
                nodes.append(t0 + tau * dt)
                if coef:
                    self._kick(coef * dt)
            # Each turn is orthogonal only to round-off, and turns of similar angles round the same
            # way, so ‖QQᵀ − I‖ would grow linearly (~1e-16 a turn); one Newton–Schulz polar step
            # squares that error away and keeps the frames orthonormal to round-off for ever.
            Q = self.Q
            self.Q = 1.5 * Q - 0.5 * (Q @ np.swapaxes(Q, -1, -2)) @ Q
            if self._jumps is not None:
                self._jerk_steps(np.array(nodes))
            self.steps_done += 1

    def _jerk_steps(self, nodes):
        """Correct the drivers' work of the step whose kicks took their torques at ``nodes`` (s+1,) s for the
        steps of a moving pivot's jerk inside it.

        The kicks sum ∂V/∂t = M R_G·ȧ_pivot at their times with the scheme's weights — a quadrature exact to the
        scheme's order for a smooth ȧ, but a splined pivot's ȧ steps at every sample (its acceleration is
        piecewise linear). A step Δȧ at τ in (t₀, t₁] adds M R_G·Δȧ·(t₁ − τ) to the exact integral over the step,
        while the kicks count M R_G·Δȧ·Σ_{nodes ≥ τ} w (a sample's value is the right one at τ): their difference
        is added here, R_G taken at the step's end (an error O(dt·Δȧ·dt) a sample, the order of the error the
        kinked force itself leaves in the step). The nodes are the very times the kicks used, so consecutive
        steps share their boundary exactly."""
        t0, t1 = nodes[0], nodes[-1]
        weights = np.asarray(self.kicks, dtype=float) * self.dt
        Rg = None
        for b, jumps in enumerate(self._jumps):
            if jumps is None:
                continue
            times, dj = jumps
            lo, hi = np.searchsorted(times, t0, side="right"), np.searchsorted(times, t1, side="right")
            if lo == hi:
                continue
            if Rg is None:
                Rg = np.einsum("ebij,bi->ebj", self.Q, self.system.kin_principal.com)   # (E,B,3)
            corr = np.array([(t1 - tau) - weights[nodes >= tau].sum() for tau in times[lo:hi]])
            self.driver_work += self.system.mass[b] * (Rg[:, b] @ (corr @ dj[lo:hi]))


def _composition(gammas):
    """A symmetric composition of the Strang step (kick h/2, drift h, kick h/2) as (drifts, kicks)."""
    g = tuple(float(x) for x in gammas)
    kicks = (0.5 * g[0],) + tuple(0.5 * (g[i] + g[i + 1]) for i in range(len(g) - 1)) + (0.5 * g[-1],)
    return g, kicks


def _suzuki():
    """Suzuki's fourth-order five-stage composition (Phys. Lett. A 146, 319, 1990)."""
    p = 1.0 / (4.0 - 4.0 ** (1.0 / 3.0))
    return _composition((p, p, 1.0 - 4.0 * p, p, p))


def _srkn6b():
    """Blanes & Moan's SRKN₆ᵇ, fourth order, six kicks (J. Comput. Appl. Math. 142, 313, 2002, table 3)."""
    a1, a2 = 0.245298957184271, 0.604872665711080
    a3 = 0.5 - a1 - a2
    b1, b2, b3 = 0.0829844064174052, 0.396309801498368, -0.0390563049223486
    return (a1, a2, a3, a3, a2, a1), (b1, b2, b3, 1.0 - 2.0 * (b1 + b2 + b3), b3, b2, b1)


#: Step tables: name → (drift fractions a₁…a_s, kick fractions b₁…b_{s+1}); see ``Splitting.advance``.
SCHEMES = {"strang": ((1.0,), (0.5, 0.5)), "suzuki": _suzuki(), "srkn6b": _srkn6b()}


class PemScheme(Integrator):
    """PEM's explicit Euler or classic RK4 on (L, u_i), step for step as the original engine.

    Faithful details: ω used in a stage is the one computed at the end of the
    previous stage; stage times are (n+1)·dt, +dt/2, +dt/2, +dt (PEM's clock
    runs one step ahead); frames get PEM's approximate re-orthonormalisation
    after each step, while dipoles stay placed by the uncorrected frame until the
    next stage (for the dipole–dipole terms; the external field turns them with
    the corrected frame, see torques.evaluate); driven bodies move once per step
    (see PemSourceDriver).
    """

    def __init__(self, system, dt, U0, omega0, rk4=True):
        self.rk4 = rk4
        self.name = "pem-rk4" if rk4 else "pem-euler"
        if system.any_translating:
            from ..errors import ValidationError

            who = system.names[int(np.flatnonzero(system.translating)[0])]
            raise ValidationError("settings.method", f"{self.name!r} cannot run translating bodies ({who!r} has "
                                  "translate = true): PEM's schemes only turn bodies about fixed points; use "
                                  "splitting4, splitting2 or dop853")
        super().__init__(system, dt, U0, omega0)

    def _init(self, U0, L0, omega0):
        self.U = U0.copy()
        self.U_dip = U0.copy()
        # PEM keeps all components of L for hinged bodies too.
        I_lab = np.einsum("ebji,bjk,ebkl->ebil", U0, self.system.kin_body.inertia, U0)
        self.L = np.einsum("ebij,ebj->ebi", I_lab, omega0)
        self.w = omega0.copy()
        self.driver = PemSourceDriver(self.system, self.dt)

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


#: Methods that need a package besides numpy: {method: package}.
NEEDS = {"dop853": "scipy"}


@functools.cache
def _installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def missing_package(method: str) -> str | None:
    """The package ``method`` needs that this Python lacks (scipy for dop853: Blender ships without it), or None."""
    package = NEEDS.get(method)
    return package if package is not None and not _installed(package) else None


def check_available(method: str) -> None:
    """ValidationError at ``settings.method`` when ``method`` needs a package this Python lacks."""
    package = missing_package(method)
    if package is not None:
        raise ValidationError("settings.method", f"{method} needs {package}, which is not installed in this Python "
                                                 "(Blender ships without it): pick splitting4 (the default) or "
                                                 "another integrator")


class Dop853(Integrator):
    """Adaptive DOP853 (scipy) on unit quaternions and lab momenta: the reference method."""

    name = "dop853"

    def __init__(self, system, dt, U0, omega0, rtol=1e-10, atol=1e-12):
        check_available(self.name)  # before any work, not as an ImportError from the first step
        self.rtol, self.atol = rtol, atol
        self._first_step = None
        super().__init__(system, dt, U0, omega0)

    def _init(self, U0, L0, omega0):
        self.q = orientation_to_quat(U0)
        self.L = L0
        self.n_evals = 0
        #: (E,) J: the drivers' work so far (None without drivers), integrated with the state as W' = ∂V/∂t
        #: (the power at the state's time and orientations), to the method's tolerance
        self.driver_work = np.zeros(len(L0)) if self.system.driven else None

    @property
    def U(self):
        return quat_to_orientation(self.q)

    def _rhs(self, t, y):
        E, B = self.q.shape[:2]
        sys = self.system
        n = E * B
        q = y[: n * 4].reshape(E, B, 4)
        L = y[n * 4: n * 7].reshape(E, B, 3)
        q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        U = quat_to_orientation(q)
        w = omega_lab(sys, sys.kin_body, U, L, self.J)
        translating = sys.any_translating
        driven = self.driver_work is not None
        if translating:
            X = y[n * 7: n * 10].reshape(E, B, 3)
            P = y[n * 10: n * 13].reshape(E, B, 3)
            res = evaluate(sys, sys.kin_body, U, t, X=X, power=driven)
        else:
            res = evaluate(sys, sys.kin_body, U, t, power=driven)
        T = res.torque - sys.damping(w)
        if sys.hinged.any():
            a = sys.hinge_axis
            T = np.where(sys.hinged[:, None], np.einsum("ebi,bi->eb", T, a)[..., None] * a, T)
        # q̇ = ½ (0, ω) ⊗ q  (ω in the lab: left multiplication)
        dq = np.empty_like(q)
        dq[..., 0] = -np.einsum("ebi,ebi->eb", w, q[..., 1:])
        dq[..., 1:] = w * q[..., :1] + cross(w, q[..., 1:])
        self.n_evals += 1
        parts = [0.5 * dq.ravel(), T.ravel()]
        if translating:
            tr = sys.translating[:, None]
            parts += [np.where(tr, P / sys.mass[:, None], 0.0).ravel(), np.where(tr, res.force, 0.0).ravel()]
        if driven:
            parts.append(res.power)
        return np.concatenate(parts)

    def advance(self, n):
        from scipy.integrate import solve_ivp

        t0, t1 = self.t, (self.steps_done + n) * self.dt
        parts = [self.q.ravel(), self.L.ravel()]
        if self.system.any_translating:
            parts += [self.X.ravel(), self.P.ravel()]
        if self.driver_work is not None:
            parts.append(self.driver_work)
        y0 = np.concatenate(parts)
        first = None if self._first_step is None else min(self._first_step, t1 - t0)
        sol = solve_ivp(self._rhs, (t0, t1), y0, method="DOP853", rtol=self.rtol, atol=self.atol,
                        first_step=first)
        if not sol.success:
            from ..errors import SimulationError

            raise SimulationError(f"DOP853 failed between t = {t0:g} s and {t1:g} s: {sol.message}", time=t0)
        if len(sol.t) > 1:
            # Restart the next chunk with the step size reached, not from scratch.
            self._first_step = float(sol.t[-1] - sol.t[-2]) or None
        E, B = self.q.shape[:2]
        nb = E * B
        y = sol.y[:, -1]
        q = y[: nb * 4].reshape(E, B, 4)
        self.q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        self.L = y[nb * 4: nb * 7].reshape(E, B, 3)
        if self.system.any_translating:
            self.X = y[nb * 7: nb * 10].reshape(E, B, 3).copy()
            self.P = y[nb * 10: nb * 13].reshape(E, B, 3).copy()
        if self.driver_work is not None:
            self.driver_work = y[len(y) - E:].copy()
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
