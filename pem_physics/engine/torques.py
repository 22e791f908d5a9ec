"""Torques about each body's pivot and the potential energies behind them (theory §3).

Shapes: E ensemble members, B moving bodies, D dipoles on them, S fixed/driven
source dipoles. Orientations U are (E,B,3,3) with rows = body axes in lab
components; the body-frame constants come from a :class:`~pem_physics.engine.system.Kinematics`
in the same axes. Everything is vectorised over E, B, D and dipole pairs.
Friction (−cω) is not included here: integrators treat it themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.rotations import cross
from .system import Kinematics, System


@dataclass
class TorqueResult:
    """torque (E,B,3) N·m, lab, about the pivots (centres of mass of free bodies); energies in J.

    force (E,B,3) N, lab: the total force on each body (gravity M·g plus the dipole forces), computed
    only for systems with translating bodies (None otherwise; a pivot takes the force on a pendulum).
    """

    torque: np.ndarray
    force: np.ndarray | None = None
    gravity_energy: np.ndarray | None = None  # (E,B)
    field_energy: np.ndarray | None = None    # (E,B)
    dipole_energy: np.ndarray | None = None   # (E,) all dipole–dipole pairs, each counted once
    #: (E,) W: ∂V/∂t at fixed orientations — the power with which the drivers (driven magnets, moving pivots, a
    #: rotating field) change the potential energy V (asked for with ``power=True``; zero without drivers)
    power: np.ndarray | None = None


def dipole_pair_terms(ra, pa, rb, pb, k, box=None, mask=None, energy_weights=None):
    """Field, force and energy on dipoles ``a`` from dipoles ``b``.

    ra, pa: (E,Na,3) positions (m) and moments (A·m²) of the targets;
    rb, pb: (E,Nb,3) of the sources (E may be 1 to broadcast);
    k = μ₀/4π; box: (3,) periodic lengths or None; mask: (Na,Nb) float, 1 for
    pairs to include, 0 to leave out (same body). Returns B (E,Na,3) T,
    F (E,Na,3) N and, given energy_weights (Nb,), U (E,Na) J: Σ_b w_b U_ab.
    With d = r_a − r_b (theory §3):
    B = k/r⁵ [3(p_b·d) d − r² p_b],
    F = 3k/r⁵ [(p_a·d) p_b + (p_b·d) p_a + (p_a·p_b) d − 5 (p_a·d)(p_b·d) d / r²],
    U = k/r³ [p_a·p_b − 3 (p_a·d)(p_b·d)/r²].
    """
    d = ra[:, :, None, :] - rb[:, None, :, :]
    if box is not None:
        # rint is odd (rounds half to even), so the pair (b, a) sees exactly −d even at half a box
        d = d - box * np.rint(d / box)
    r2 = (d * d).sum(-1)
    if mask is not None:
        # Excluded pairs may coincide (r = 0): shift r² away from 0, then zero their weight.
        inv_r2 = mask / (r2 + (1.0 - mask))
    else:
        inv_r2 = 1.0 / r2
    kr3 = k * np.sqrt(inv_r2) * inv_r2
    pa_ = pa[:, :, None, :]
    pb_ = pb[:, None, :, :]
    pad = (pa_ * d).sum(-1)
    pbd = (pb_ * d).sum(-1)
    pab = (pa_ * pb_).sum(-1)
    q = pbd * inv_r2
    B = (kr3[..., None] * (3.0 * q[..., None] * d - pb_)).sum(-2)
    s5 = 3.0 * kr3 * inv_r2
    F = ((s5 * pad)[..., None] * pb_ + (s5 * pbd)[..., None] * pa_
         + (s5 * (pab - 5.0 * pad * q))[..., None] * d).sum(-2)
    U = None
    if energy_weights is not None:
        U = (kr3 * (pab - 3.0 * pad * q) * energy_weights).sum(-1)
    return B, F, U


#: From this many member·target·source pairs on, the compiled sweep (:mod:`.pairs`) beats numpy's (below,
#: thread start-up costs more than it saves). Set PAIR_SWEEP False to force the numpy sweep (tests compare both).
PAIR_SWEEP_MIN = 1 << 15
PAIR_SWEEP = True


def pair_sweep_supported(E: int, D: int, S: int) -> bool:
    """Whether :func:`_all_pairs` runs the compiled sweep: numba present and E·D·(D+S) ≥ PAIR_SWEEP_MIN.
    Smaller systems never import numba here (a single scene on the ahead-of-time kernels runs without it)."""
    if not (PAIR_SWEEP and E * D * (D + S) >= PAIR_SWEEP_MIN):
        return False
    from . import pairs  # numba (if any) loads on first use, after the caller chose its cache folder

    return pairs.available()


def _all_pairs(system: System, r, p, rs, ms, k: float, energies: bool):
    """B, F (E,D,3) and pair energies (E,D) or None on the moving dipoles r, p (E,D,3) from all others.

    Uses the compiled kernel when numba is there and the sweep is big enough; else numpy, over
    blocks of targets so that memory stays near PAIR_BLOCK members·pairs.
    """
    E, D = r.shape[:2]
    if pair_sweep_supported(E, D, len(rs)):
        from . import pairs

        return pairs.pair_sweep(r, p, system.owner, rs, ms, k, system.box, energies)
    plan = system.pair_plan()
    if len(rs):
        rb = np.concatenate([r, np.broadcast_to(rs, (E,) + rs.shape)], axis=1)
        pb = np.concatenate([p, np.broadcast_to(ms, (E,) + ms.shape)], axis=1)
    else:
        rb, pb = r, p
    weights = plan.weights if energies else None
    block = plan.block(E)
    if D <= block:
        return dipole_pair_terms(r, p, rb, pb, k, system.box, plan.mask, weights)
    Bdd, F = np.empty_like(p), np.empty_like(p)
    Ud_ = np.zeros((E, D)) if energies else None
    for i0 in range(0, D, block):
        i1 = min(D, i0 + block)
        Bb, Fb, Ub = dipole_pair_terms(r[:, i0:i1], p[:, i0:i1], rb, pb, k, system.box, plan.mask[i0:i1], weights)
        Bdd[:, i0:i1], F[:, i0:i1] = Bb, Fb
        if energies:
            Ud_[:, i0:i1] = Ub
    return Bdd, F, Ud_


def evaluate(system: System, kin: Kinematics, U: np.ndarray, t: float,
             sources: tuple[np.ndarray, np.ndarray] | None = None, *,
             U_dipoles: np.ndarray | None = None, energies: bool = False,
             X: np.ndarray | None = None, power: bool = False) -> TorqueResult:
    """Torques (E,B,3) on every moving body at orientations U (E,B,3,3) and time t (s; or (E,) times, one a row,
    where only pivots move: records of such a run in one call).

    X: (E,B,3) m, lab centres of rotation (default ``system.pivot``); translating bodies' centres of
    mass move, so a system with translating bodies passes its state's positions here. Torques are
    about X (the dipole at r turns its body about x by (r − x) × F + p × B), and for such a system
    the result also holds the forces (see :class:`TorqueResult`).

    sources: lab (r, m) of fixed/driven dipoles at t (default: exact kinematics).
    U_dipoles: orientations that place the dipoles for the dipole–dipole terms when they
    differ from U (PEM places dipoles before re-orthonormalising its frames, but turns them
    in the external field with the frame U).

    A body whose pivot moves (``system.pivot_motions``) turns about the pivot's position at t, and in the
    pivot's frame the inertial force −M·a_pivot(t) acts at its centre of mass: its gravity is g − a_pivot(t)
    (torque and gravity energy alike, so that the energy is the one of the pivot's frame).
    power: also ∂V/∂t at fixed U (:attr:`TorqueResult.power`, see :func:`driver_power`).
    """
    E = U.shape[0]
    Rg = np.einsum("ebij,bi->ebj", U, kin.com)
    g = system.gravity
    if system.moving_pivots:
        g = g - system.pivot_acceleration(t)          # (B,3): the pivot frame's effective gravity
    torque = system.mass[:, None] * cross(Rg, g)
    result = TorqueResult(torque)
    translating = system.any_translating
    centre = system.centres(t, X)
    if translating:
        result.force = np.broadcast_to(system.mass[:, None] * system.gravity, torque.shape).copy()
    if energies:
        result.gravity_energy = -system.mass * (np.einsum("ebi,bi->eb", Rg, np.broadcast_to(g, Rg.shape[1:]))
                                                if np.ndim(g) <= 2 else np.einsum("ebi,ebi->eb", Rg, g))
        if translating:
            # A translating body's height counts from the lab origin (its centre of rotation moves);
            # other bodies keep theirs from the pivot, as always.
            com = np.broadcast_to(centre, Rg.shape) + Rg
            result.gravity_energy = np.where(system.translating, -system.mass * np.einsum(
                "ebi,i->eb", com, system.gravity), result.gravity_energy)
        result.field_energy = np.zeros(torque.shape[:2])
        result.dipole_energy = np.zeros(E)
    if power:
        # the inertial potential M·R_G·a_pivot(t) changes with the pivot's acceleration
        result.power = (system.mass * np.einsum("ebi,bi->eb", Rg, system.pivot_jerk(t))).sum(-1) \
            if system.moving_pivots else np.zeros(E)
    D = system.n_dipoles
    if D == 0:
        return result
    plan = system.pair_plan()
    Ud = (U if U_dipoles is None else U_dipoles)[:, system.owner]
    s = np.einsum("edij,di->edj", Ud, kin.dpos)
    p = np.einsum("edij,di->edj", Ud, kin.dmom)
    r = centre[..., system.owner, :] + s
    Bext = system.external_field(t)
    k = system.mu0 / (4 * np.pi)
    # PEM turns a dipole in the external field with the body's own (corrected) frame U, while its
    # dipole–dipole terms use the dipoles it placed with the uncorrected frame (U_dipoles).
    pe = None if U_dipoles is None else np.einsum("edij,di->edj", U[:, system.owner], kin.dmom)
    F = None
    if k > 0 and plan.n_sources > 1:
        rs, ms = system.sources(t) if sources is None else sources
        Bdd, F, Ud_ = _all_pairs(system, r, p, rs, ms, k, energies)
        if pe is None:
            Td = cross(s, F) + cross(p, Bdd + Bext)
        else:
            Td = cross(s, F) + cross(p, Bdd) + cross(pe, np.broadcast_to(Bext, pe.shape))
        if energies:
            result.dipole_energy = Ud_.sum(axis=1)
        if translating:
            result.force += plan.to_bodies(F)
    else:
        Td = cross(p if pe is None else pe, np.broadcast_to(Bext, p.shape))
    result.torque = torque + plan.to_bodies(Td)
    if energies:
        # Bext is (3,), or (E,1,3) when every ensemble member has its own field.
        pB = p @ Bext if Bext.ndim == 1 else np.einsum("edi,eki->ed", p, Bext)
        result.field_energy = plan.to_bodies(-pB[..., None])[..., 0]
    if power:
        result.power = result.power + driver_power(system, t, r, p, F, k)
    return result


def driver_power(system: System, t: float, r, p, F, k: float) -> np.ndarray:
    """∂V/∂t (E,) W of the magnetic energy at fixed body orientations: the power the drivers put in.

    r, p (E,D,3): the moving dipoles at t; F (E,D,3) N the forces on them from every other dipole (None without
    pairs). V depends on t explicitly through the moving pivots (their dipoles move with velocity v_pivot:
    −F·v_pivot), the driven magnets (a source dipole at r_s with moment m_s moving with ṙ_s = v + ω × (r_s − o),
    ṁ_s = ω × m_s: −F_s·ṙ_s − B_s·ṁ_s, with F_s and B_s the force and field on it from the moving dipoles;
    source–source energy is not the bodies') and the rotating field (−Σ p·∂B/∂t).
    """
    E = r.shape[0]
    out = np.zeros(E)
    if F is not None and system.moving_pivots:
        v = system.pivot_velocity(t)[system.owner]                       # (D,3)
        out -= np.einsum("edi,di->e", F, v)
    if k > 0 and not system.static_sources and len(system.src_pos):
        rs, ms, rdot, mdot = system.sources_and_rates(t)
        Bs, Fs, _ = dipole_pair_terms(rs[None], ms[None], r, p, k, system.box)
        out -= np.einsum("esi,si->e", Fs, rdot) + np.einsum("esi,si->e", Bs, mdot)
    rf = system.rotating_field
    if rf is not None:
        ph = rf.angular_velocity * t + rf.phase
        dB = rf.angular_velocity * (-np.asarray(rf.b1) * np.sin(ph) + np.asarray(rf.b2) * np.cos(ph))
        out -= np.einsum("edi,i->e", p, dB)
    return out
