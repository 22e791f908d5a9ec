"""Several shapes of a body touching the table at once (theory §7): a tippe top on its ball and its stem, a block
on an edge or a face, a die. :mod:`.surface`'s model and step with one contact grown to a set.

Each touching shape i has its own state — sliding (friction along its own slip) or rolling (its contact point at
rest) — and its own contact point P_i, lever arm ρ_i = P_i − x and normal n_i. A force F_j at P_j accelerates the
contact point i by K_ij F_j, K_ij = 𝟙/M − [ρ_i]× W [ρ_j]× (:func:`coupling`); the forces of all contacts are found
together. Each contact's unknowns are a basis B_i (sliding: the one column n_i + f_i, f_i its friction vector;
rolling: the three axes) and its conditions a projection P_i (sliding: n_iᵀ, the normal motion; rolling: 𝟙):

    P_i (a_i + Σ_j K_ij B_j z_j) = c_i    (all i),

a_i the contact point's velocity (a kick) or acceleration (the forces) without the table, c_i zero or the curvature
term of a curved table. Four corners of a block on a face ask more than the body's six freedoms allow (the forces
are statically indeterminate): the system is solved in the least-squares sense with the least-norm answer, which
keeps every condition when they agree (they do: they come from one rigid motion) and spreads the load evenly.

The step is :meth:`.surface.Surface.step`'s splitting with every contact at once: a half kick of gravity and
impulses at every P_i whose normal parts put every shape exactly on the table at the end of the flight (a Newton
iteration on the gaps, its Jacobian h·n_i·K_ij·D_j: the gaps are nearly linear in the impulses; a shape that
starts a round-off gap off the table is put back at no more than CLOSE_RATE of the speed scale, so that a step of
length h → 0 is no step: :func:`.surface_common.landing_target`), the exact free
flight, a half kick and impulses that take every contact point's normal velocity (rolling: its whole velocity)
away. Gliding friction's second kick is implicit in the slip (a fixed-point iteration, converging by the factor
μ·λ/M ≪ 1), as with one contact. The energy books work as with one contact (the work of simultaneous impulses
J_i is exactly Σ J_i·(u_i⁻ + u_i⁺)/2).

Events (:func:`watch`, each positive before it): another shape's gap (an impact), each contact's normal force
(lift-off), a rolling contact's friction reserve μN − |F_t| (slip), a Coulomb slide's slip against its start
(stick). A shape that reaches the table while others touch (:func:`settle`): the impulses of the impact are found
together — a plastic compression that leaves no contact approaching (contacts whose impulse would pull let go),
then the restitution e of each contact's compression impulse (Poisson's law, which never adds energy), with
Coulomb's friction where the pressed contacts can stop (a sticking impact, each in its cone) or slide against
their slips — and the contacts that stay are given their states.

The compiled engine steps several contacts (:mod:`.surface_several_kernels`, the same arithmetic); the steps in
which they change (:func:`settle`, :func:`transition`) are this module's, :func:`.surface_run.run_compiled` handing
them over and taking the run back. Not yet with several contacts: the rolling and spinning resistance (refused by
name), a rim lying flat beside another contact (:mod:`.surface_flat` holds a rim alone), and a tray taken face by
face on the compiled engine (the reference's).
"""

from __future__ import annotations

import numpy as np

from ...errors import SimulationError
from ..integrators import free_turn
from .impulses import skew
from .surface_common import _EPS, APART, ROLLING, SLIDING, SLIP_RTOL, cross, landing_target, norm

#: Newton iterations at most for the first kick's normal impulses, and fixed-point ones for gliding friction.
ITERATIONS = 60
#: Slips that friction stops within SIMULTANEOUS·dt of another contact's stick stop with it (a block or die
#: coming to rest stops its corners together; one at a time, each would be asked for the others' friction).
SIMULTANEOUS = 1e-3
#: Where several rolling contacts' forces are statically indeterminate and the even split leaves one outside its
#: friction cone, the split with friction weighted 1/FRICTION_LAST² is tried: the normal forces carry what they can,
#: friction the rest. A die at rest in a tilted tray's corner stands on the floor and leans on the wall with no
#: friction at all; the even split asked each wall contact for friction three times its normal force (μ = 0.1), and
#: its stick and slip took turns without end.
FRICTION_LAST = 1e-3
#: Conditions whose singular values fall below RCOND of the largest are taken as dependent: four corners on a
#: curved table are independent only through its curvature, and solving for that last freedom turns round-off in
#: the right-hand side into impulses without bound.
RCOND = 1e-9


def active(st) -> list:
    """The touching shapes of a state: [(shape, mode, slip (3,))], the primary first."""
    if st.mode == APART:
        return []
    return [(st.shape, st.mode, st.slip)] + list(st.extra)


def assign(st, acts) -> None:
    """Set the touching shapes of st (in place) to ``acts`` [(shape, mode, slip)], ordered by shape."""
    acts = sorted(acts, key=lambda a: a[0])
    if not acts:
        st.mode, st.shape, st.slip, st.extra = APART, -1, np.zeros(3), ()
        return
    (k, mode, slip), rest = acts[0], acts[1:]
    st.shape, st.mode, st.slip = k, mode, np.array(slip, dtype=float)
    st.extra = tuple((j, m, np.array(s, dtype=float)) for j, m, s in rest)


def _unit(v) -> np.ndarray:
    """v/|v|, or zero for a zero vector (a slide's direction then comes from its slip)."""
    s = float(np.linalg.norm(v))
    return v / s if s > 0 else np.zeros(3)


def coupling(surface, W, rho_i, rho_j) -> np.ndarray:
    """K_ij (3,3) kg⁻¹: the acceleration of contact point i (lever arm ρ_i) per force at contact point j."""
    return couplings(surface, W, [rho_i], [rho_j])[0, 0]


def couplings(surface, W, rho_i, rho_j) -> np.ndarray:
    """K (ki,kj,3,3) kg⁻¹ of :func:`coupling` for every pair of lever arms ρ_i (ki,3), ρ_j (kj,3): in one pass, as
    the several contacts' solves take them (a pair at a time, small arrays' overheads were most of a step)."""
    SW = skew(rho_i) @ W
    return _I3 / surface.body.mass - SW[:, None] @ skew(rho_j)[None]


def friction_vector(surface, st, slip, u, n) -> np.ndarray:
    """f (3,) of a sliding contact (u its velocity, n the normal there): its force is N (n + f) (Coulomb: μ t̂,
    t̂ = −û_t or ``slip`` (3,) when the slip is round-off; gliding: −μ u_t). One contact's and several's alike."""
    ut = u - (u @ n) * n
    if surface.table.friction == "viscous":
        return -surface.table.mu * ut
    s = norm(ut)
    if s > SLIP_RTOL * surface.speed_scale(st):
        return surface.table.mu * (-ut / s)
    return surface.table.mu * np.asarray(slip, dtype=float)


def _refuse_resistance(surface, st) -> None:
    if surface.table.resists:
        raise SimulationError(f"{surface.body.name!r}: {len(active(st))} of its contact shapes touch "
                              f"{surface.table.name!r} at once, and the rolling and spinning resistance is not "
                              "modelled for several contacts: set the table's rolling_resistance and "
                              "spin_resistance to 0", time=st.t, body=surface.body.name)


_X, _Y, _I3 = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]), np.eye(3)


def _frame(n) -> np.ndarray:
    """(3,3) columns n, t₁, t₂: a contact's normal and two tangents (np.cross's and np.linalg.norm's arithmetic, at
    a tenth of their cost on single vectors: a die's step makes dozens)."""
    t1 = cross(n, _X if abs(n[0]) < 0.9 else _Y)
    t1 /= np.sqrt(t1.dot(t1))
    F = np.empty((3, 3))
    F[:, 0], F[:, 1], F[:, 2] = n, t1, cross(n, t1)
    return F


def solve(surface, W, cs, modes, D, a, c=None, share=None, system=None) -> list:
    """The contacts' forces or impulses [(3,)] from P_i (a_i + Σ_j K_ij B_j z_j) = c_i (module docstring): ``cs``
    their touches, ``modes`` their states, ``D`` each sliding contact's direction (3,), ``a`` [(3,)] the contact
    points' velocities or accelerations without the table, ``c`` [float] the sliding contacts' normal targets
    (default zero). Where the conditions leave the split open, the least norm; with ``share`` [float ≥ 0] the
    rolling contacts' tangential parts weighted by them (the least Σ|F_n,j|² + Σ|F_t,j|²/share_j: a contact that
    carries more takes more of the friction; shares ≪ 1 leave friction to where the normal forces cannot do
    without it). ``system``: :func:`conditions` of the same W, cs, modes and D, made once for several solves."""
    A, rows, cols = conditions(surface, W, cs, modes, D) if system is None else system
    b = np.concatenate([(0.0 if c is None or modes[i] != SLIDING else c[i]) - rows[i] @ a[i]
                        for i in range(len(cs))])
    S = np.concatenate([[1.0] if mode == SLIDING else [1.0] + 2 * [1.0 if share is None else np.sqrt(share[i])]
                        for i, mode in enumerate(modes)])
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(b))):
        raise SimulationError(f"{surface.body.name!r} on {surface.table.name!r}: the state of its contacts is no "
                              "longer finite; lower dt", body=surface.body.name)
    z = S * np.linalg.lstsq(A * S, b, rcond=RCOND)[0]
    out, p = [], 0
    for col in cols:
        out.append(col @ z[p:p + col.shape[1]])
        p += col.shape[1]
    return out


def conditions(surface, W, cs, modes, D) -> tuple:
    """(A, rows, cols) of :func:`solve`'s conditions: A (m, m) the unknowns' effect on the conditions, each contact's
    rows P_i (1 or 3, 3) and columns B_i (3, 1 or 3) — what the solves of one instant share."""
    rows, cols = [], []
    k = len(cs)
    R, C = np.zeros((k, 3, 3)), np.zeros((k, 3, 3))     # each contact's rows and columns, a sliding one's padded
    keep = np.zeros((k, 3), bool)
    for i, (ci, mode) in enumerate(zip(cs, modes)):
        rows.append(ci.n[None] if mode == SLIDING else _I3)
        cols.append(D[i][:, None] if mode == SLIDING else _frame(ci.n))
        R[i, :len(rows[i])], C[i, :, :cols[i].shape[1]] = rows[i], cols[i]
        keep[i, :len(rows[i])] = True
    B = R[:, None] @ couplings(surface, W, [c.rho for c in cs], [c.rho for c in cs]) @ C[None]   # (k,k,3,3)
    keep = keep.ravel()
    return B.transpose(0, 2, 1, 3).reshape(3 * k, 3 * k)[keep][:, keep], rows, cols


def forces(surface, st, acts=None, cs=None) -> list:
    """The table's forces [(3,)] N at the contact points of ``acts`` (default: the state's touching shapes), by
    the acceleration-level conditions of their states (a normal force that comes out negative is a lift-off).
    Several rolling contacts share the friction in proportion to their normal forces (:func:`solve`'s ``share``,
    from the least-norm split, twice): a block held on a slope by four corners needs μ ≥ tan β at each, as it
    does in all. Where that split leaves a contact outside its cone, the normal forces carry what they can and
    friction the rest (``share`` × FRICTION_LAST², :func:`_friction_last`): a die leaning on a wall needs none."""
    acts = active(st) if acts is None else acts
    cs = [surface.contact(st, k) for k, _, _ in acts] if cs is None else cs
    _refuse_resistance(surface, st)
    W = cs[0].W
    wdot = W @ cross(cs[0].w, st.L)
    a0 = [surface.g - cross(wdot, ci.rho) + cross(ci.w, ci.moving) for ci in cs]
    modes = [m for _, m, _ in acts]
    D = [ci.n + friction_vector(surface, st, slip, ci.u, ci.n) for ci, (_, _, slip) in zip(cs, acts)]
    curv = [ci.curv for ci in cs]
    system = conditions(surface, W, cs, modes, D)
    F = solve(surface, W, cs, modes, D, a0, curv, system=system)
    if sum(m == ROLLING for m in modes) > 1:
        F = _shared(surface, W, cs, modes, D, a0, curv, F, 1.0, system)
        if _outside_cones(surface, cs, modes, F):
            last = _shared(surface, W, cs, modes, D, a0, curv, F, FRICTION_LAST ** 2, system)
            F = F if _outside_cones(surface, cs, modes, last) else last
    return F


def _shared(surface, W, cs, modes, D, a0, curv, F, weight: float, system) -> list:
    """The rolling contacts' friction shared in proportion to the normal forces (of F, then of each split; twice),
    the shares times ``weight``; ``system`` the instant's :func:`conditions`."""
    for _ in range(2):
        N = np.array([max(float(Fi @ ci.n), 0.0) for Fi, ci in zip(F, cs)])
        if not N.max() > 0:
            break
        F = solve(surface, W, cs, modes, D, a0, curv, share=weight * N / N.max(), system=system)
    return F


def _outside_cones(surface, cs, modes, F) -> bool:
    """Whether a rolling contact of forces F pulls or needs more friction than μN."""
    mu = surface.table.mu
    return any(m == ROLLING and (Fi @ ci.n <= 0 or np.linalg.norm(Fi - (Fi @ ci.n) * ci.n) > mu * float(Fi @ ci.n))
               for Fi, ci, m in zip(F, cs, modes))


def _push(surface, st, cs, J) -> None:
    """Apply impulses J [(3,)] at the touches ``cs`` (in place)."""
    for ci, Ji in zip(cs, J):
        st.v = st.v + Ji / surface.body.mass
        st.L = st.L + cross(ci.rho, Ji)


def _works(cs, J, u0, u1):
    """(normal work, tangential work) J of impulses J at touches cs, the contact points' velocities u0 before and
    u1 after (Σ J_i·(u0_i + u1_i)/2, split along each normal and across it)."""
    wn = wt = 0.0
    for ci, Ji, a, b in zip(cs, J, u0, u1):
        um = 0.5 * (a + b)
        jn = float(Ji @ ci.n)
        wn += jn * float(um @ ci.n)
        wt += float(Ji @ um) - jn * float(um @ ci.n)
    return wn, wt


def _velocities(st, cs) -> list:
    w = cs[0].W @ st.L
    return [st.v + cross(w, ci.rho) for ci in cs]


def step(surface, st, h: float):
    """One step of length h (s) with several contacts (module docstring): (new state, normal work J, friction
    work J)."""
    acts = active(st)
    modes = [m for _, m, _ in acts]
    M = surface.body.mass
    cs = [surface.contact(st, k) for k, _, _ in acts]
    W = cs[0].W
    F = forces(surface, st, acts, cs)
    v0 = st.v + 0.5 * h * surface.g
    viscous = surface.table.friction == "viscous"
    D1, Jt = [], []
    for ci, (_, mode, slip), Fi in zip(cs, acts, F):
        if mode == ROLLING:
            D1.append(ci.n)
            Jt.append(0.5 * h * (Fi - (Fi @ ci.n) * ci.n))
        else:
            u = v0 + cross(ci.w, ci.rho)
            D1.append(ci.n + friction_vector(surface, st, slip, ci.u if viscous else u, ci.n))
            Jt.append(np.zeros(3))

    speed = surface.speed_scale(st)
    targets = np.array([landing_target(surface.gap(k, st.x, st.Q, st.t), h, speed) for k, _, _ in acts])

    def land(lam):
        J = [lam[i] * D1[i] + Jt[i] for i in range(len(cs))]
        v1 = v0 + sum(J) / M
        L1 = st.L + sum(cross(ci.rho, Ji) for ci, Ji in zip(cs, J))
        x1 = st.x + h * v1
        Q1 = free_turn(st.Q[None, None], L1[None, None], h, surface.body.plan)[0, 0]
        gaps = np.array([surface.gap(k, x1, Q1, st.t + h) for k, _, _ in acts]) - targets
        return gaps, J, x1, v1, L1, Q1

    rhos = [c.rho for c in cs]
    G = h * np.einsum("ia,ijab,jb->ij", np.array([c.n for c in cs]), couplings(surface, W, rhos, rhos), np.array(D1))
    lam = np.array([0.5 * h * float(Fi @ ci.n) for ci, Fi in zip(cs, F)])
    best = land(lam)
    for _ in range(ITERATIONS):
        d = np.linalg.lstsq(G, best[0], rcond=RCOND)[0]
        trial_lam = lam - d
        trial = land(trial_lam)
        if not np.linalg.norm(trial[0]) < np.linalg.norm(best[0]):
            break
        lam, best = trial_lam, trial
        if np.linalg.norm(d) <= 4 * _EPS * np.linalg.norm(lam) or not np.any(best[0]):
            break
    _, J1, x1, v1, L1, Q1 = best
    u0 = [v0 + cross(ci.w, ci.rho) for ci in cs]
    u1 = [v1 + cross(W @ L1, ci.rho) for ci in cs]
    wn1, wt1 = _works(cs, J1, u0, u1)
    g = surface.g
    for ci, Ji in zip(cs, J1):
        jn = float(Ji @ ci.n)
        wn1 -= 0.5 * h * float(g @ ci.n) * jn
        wt1 -= 0.5 * h * float(g @ (Ji - jn * ci.n))
    mid = st.copy()
    mid.t, mid.x, mid.v, mid.L, mid.Q = st.t + h, x1, v1 + 0.5 * h * g, L1, Q1
    cs2 = [surface.contact(mid, k) for k, _, _ in acts]
    W2 = cs2[0].W
    ua = _velocities(mid, cs2)
    D2 = []
    for ci, c1, (_, _, slip), Di, ui in zip(cs2, cs, acts, D1, ua):
        # a Coulomb slip that reverses within the step keeps the first kick's direction (as with one contact)
        f1, f2 = Di - c1.n, friction_vector(surface, mid, slip, ui, ci.n)
        D2.append(ci.n + (f2 if viscous or f2 @ f1 >= 0 else f1))
    J2 = solve(surface, W2, cs2, modes, D2, ua)
    if viscous:
        J2 = _gliding_kicks(surface, W2, cs2, modes, ua, J2)
    _push(surface, mid, cs2, J2)
    wn2, wt2 = _works(cs2, J2, ua, _velocities(mid, cs2))
    if all(m == ROLLING for m in modes):
        return mid, wn1 + wn2 + wt1 + wt2, 0.0
    # rolling contacts' tangential impulses are the constraint's (no slip, no friction work)
    roll_t = _rolling_tangential_work(cs, J1, u0, u1, modes, h, g) + _rolling_tangential_work(
        cs2, J2, ua, _velocities(mid, cs2), modes, 0.0, g)
    return mid, wn1 + wn2 + roll_t, wt1 + wt2 - roll_t


def _rolling_tangential_work(cs, J, u0, u1, modes, h, g) -> float:
    """The tangential work of the rolling contacts' impulses (with the first kick's gravity term for h > 0)."""
    out = 0.0
    for ci, Ji, a, b, mode in zip(cs, J, u0, u1, modes):
        if mode == ROLLING:
            jt = Ji - float(Ji @ ci.n) * ci.n
            out += float(jt @ (0.5 * (a + b))) - 0.5 * h * float(g @ jt)
    return out


def _gliding_kicks(surface, W, cs, modes, ua, J):
    """The second kicks J_i = λ_i (n_i − μ u⁺_i,t) of gliding slides, implicit in the slips after them (u⁺): a
    fixed-point iteration from the explicit kicks ``J``."""
    mu = surface.table.mu
    rhos = [c.rho for c in cs]
    K = couplings(surface, W, rhos, rhos)
    for _ in range(ITERATIONS):
        after = [u + sum(K[i, j] @ Jj for j, Jj in enumerate(J)) for i, u in enumerate(ua)]
        D = [ci.n - mu * (up - (up @ ci.n) * ci.n) for ci, up in zip(cs, after)]
        J_new = solve(surface, W, cs, modes, D, ua)
        change = max(float(np.linalg.norm(a - b)) for a, b in zip(J_new, J))
        J = J_new
        if change <= 4 * _EPS * max(float(np.linalg.norm(j)) for j in J):
            break
    return J


def watch(surface, st, start) -> list:
    """Event functions at st for a step from ``start``: [(kind, value, shape)], each positive before its event."""
    acts = active(st)
    mine = {k for k, _, _ in acts}
    out = [("impact", float(surface.gap(k, st.x, st.Q)), k) for k in range(len(surface.body.r)) if k not in mine]
    cs = [surface.contact(st, k) for k, _, _ in acts]
    F = forces(surface, st, acts, cs)
    slips0 = {k: s for k, _, s in active(start)}
    for ci, (k, mode, _), Fi in zip(cs, acts, F):
        N = float(Fi @ ci.n)
        out.append(("lift-off", N, k))
        if mode == ROLLING:
            out.append(("slip", surface.table.mu * N - float(np.linalg.norm(Fi - N * ci.n)), k))
        elif surface.table.friction == "coulomb" and k in slips0:
            c0 = surface.contact(start, k)
            u0 = c0.u - (c0.u @ c0.n) * c0.n
            ref = u0 if np.linalg.norm(u0) > SLIP_RTOL * surface.speed_scale(start) else -slips0[k]
            out.append(("stick", float((ci.u - (ci.u @ ci.n) * ci.n) @ ref), k))
    return out


def _compress(surface, st, cs, restitution: float):
    """The impulses [(3,)] of an impact at the touches cs (normal, frictionless): the plastic compression that
    leaves no contact point approaching (a contact whose impulse would pull is let go), then each contact's
    restitution e times its compression impulse (Poisson's law)."""
    W = cs[0].W
    u = _velocities(st, cs)
    held = [i for i, ci in enumerate(cs) if float(u[i] @ ci.n) < 0]
    lam = np.zeros(len(cs))
    for _ in range(2 * len(cs) + 2):
        if not held:
            break
        sub = [cs[i] for i in held]
        J = solve(surface, W, sub, [SLIDING] * len(sub), [c.n for c in sub], [u[i] for i in held])
        lam[:] = 0.0
        for i, Ji in zip(held, J):
            lam[i] = float(Ji @ cs[i].n)
        after = [u[i] + sum(coupling(surface, W, cs[i].rho, cs[j].rho) @ (lam[j] * cs[j].n) for j in held)
                 for i in range(len(cs))]
        pulls = [i for i in held if lam[i] < 0]
        comes = [i for i in range(len(cs)) if i not in held and float(after[i] @ cs[i].n) < 0]
        if not pulls and not comes:
            break
        if pulls:
            held.remove(min(pulls, key=lambda i: lam[i]))
        else:
            held.append(comes[0])
            held.sort()
    J = [(1.0 + restitution) * max(lam[i], 0.0) * ci.n for i, ci in enumerate(cs)]
    if surface.table.friction == "coulomb" and surface.table.mu > 0:
        J = _with_friction(surface, st, cs, held, u, restitution) or J
    return J


def _with_friction(surface, st, cs, held, u, restitution: float):
    """Coulomb's friction in an impact at the contacts ``held`` (those the compression holds), or None when it
    cannot be had: the impulses that stop those contact points altogether (a sticking impact) when each stays in
    its friction cone, else the ones along n_i + μ t̂_i (t̂_i against the slip before) that end the normal
    approach (a sliding impact); restitution e adds e times the normal parts. None too when an impulse would pull,
    the kinetic energy would rise or a contact point would be left approaching (the frictionless impulses are
    taken then)."""
    if not held:
        return None
    W, mu = cs[0].W, surface.table.mu
    sub = [cs[i] for i in held]
    us = [u[i] for i in held]
    J = solve(surface, W, sub, [ROLLING] * len(sub), [c.n for c in sub], us)
    if not all(float(Ji @ c.n) >= 0 and np.linalg.norm(Ji - (Ji @ c.n) * c.n) <= mu * float(Ji @ c.n)
               for Ji, c in zip(J, sub)):
        D = []
        for c, ui in zip(sub, us):
            ut = ui - (ui @ c.n) * c.n
            s = float(np.linalg.norm(ut))
            D.append(c.n - (mu / s) * ut if s > SLIP_RTOL * surface.speed_scale(st) else c.n)
        J = solve(surface, W, sub, [SLIDING] * len(sub), D, us)
        if not all(float(Ji @ c.n) >= 0 for Ji, c in zip(J, sub)):
            return None
    J = [Ji + restitution * float(Ji @ c.n) * c.n for Ji, c in zip(J, sub)]
    out = [np.zeros(3) for _ in cs]
    for i, Ji in zip(held, J):
        out[i] = Ji
    trial = st.copy()
    _push(surface, trial, cs, out)
    if not surface.energy(trial) <= surface.energy(st):
        return None
    tiny = SLIP_RTOL * surface.speed_scale(st)
    if any(float(ui @ ci.n) < -tiny for ui, ci in zip(_velocities(trial, cs), cs)):
        return None     # friction at the pressed contacts drove another one into the table
    return out


def settle(surface, st, shapes, dt: float, impact: int | None = None):
    """Decide the contacts of a state whose ``shapes`` touch the table (in place): the impact's impulses if any
    approaches (:func:`_compress`), then which stay (a contact point leaving faster than |g·n|·dt, or whose normal
    force would pull, lets go) and each one's state (a Coulomb contact without slip rolls while its friction
    suffices). Returns the impulse (3,) N·s the table gave at shape ``impact`` (zero when not given)."""
    modes = {k: m for k, m, _ in active(st)}
    acts = [(k, modes.get(k, SLIDING), np.zeros(3)) for k in sorted(shapes)]
    assign(st, acts)
    _refuse_resistance(surface, st)
    cs = [surface.contact(st, k) for k, _, _ in acts]
    J = _compress(surface, st, cs, surface.table.restitution)
    _push(surface, st, cs, J)
    J_impact = next((Ji for (k, _, _), Ji in zip(acts, J) if k == impact), np.zeros(3))
    for _ in range(4 * len(acts) + 4):
        cs = [surface.contact(st, k) for k, _, _ in acts]
        u = _velocities(st, cs)
        scale = SLIP_RTOL * surface.speed_scale(st)
        leaving = [i for i, ci in enumerate(cs) if float(u[i] @ ci.n) > max(abs(surface.g @ ci.n) * dt, scale)]
        if leaving:
            acts = [a for i, a in enumerate(acts) if i not in leaving]
            assign(st, acts)
            if not acts:
                return J_impact
            continue
        if any(float(u[i] @ ci.n) < -scale for i, ci in enumerate(cs)):
            # still approaching somewhere (a contact let go in the compression, pressed by another's friction):
            # a plastic impact once more
            Jc = _compress(surface, st, cs, 0.0)
            _push(surface, st, cs, Jc)
            J_impact = J_impact + next((Ji for (k, _, _), Ji in zip(acts, Jc) if k == impact), np.zeros(3))
            continue
        rest = [i for i, ci in enumerate(cs) if float(u[i] @ ci.n) > 0]
        if rest:            # what is left of the normal velocities (a plastic impulse)
            Jn = solve(surface, cs[0].W, cs, [SLIDING] * len(cs), [ci.n for ci in cs], u)
            _push(surface, st, cs, Jn)
            J_impact = J_impact + next((Ji for (k, _, _), Ji in zip(acts, Jn) if k == impact), np.zeros(3))
            cs = [surface.contact(st, k) for k, _, _ in acts]
            u = _velocities(st, cs)
        coulomb = surface.table.friction == "coulomb"
        acts = [(k, ROLLING if coulomb and np.linalg.norm(ui - (ui @ ci.n) * ci.n) <= scale else SLIDING,
                 np.zeros(3)) for (k, _, _), ci, ui in zip(acts, cs, u)]
        assign(st, acts)
        changed = True
        for _ in range(2 * len(acts) + 2):
            F = forces(surface, st, acts, cs)
            N = [float(Fi @ ci.n) for Fi, ci in zip(F, cs)]
            if min(N) <= 0:
                i = int(np.argmin(N))
                acts = acts[:i] + acts[i + 1:]
                cs = cs[:i] + cs[i + 1:]
                assign(st, acts)
                break
            over = [i for i, ((_, m, _), ci, Fi, n) in enumerate(zip(acts, cs, F, N))
                    if m == ROLLING and np.linalg.norm(Fi - n * ci.n) > surface.table.mu * n]
            if not over:
                changed = False
                break
            i = over[0]
            Ft = F[i] - N[i] * cs[i].n
            acts[i] = (acts[i][0], SLIDING, _unit(Ft))
            assign(st, acts)
        if not acts:
            return J_impact
        if not changed or len(acts) == 1:
            assign(st, acts)
            return J_impact
    return J_impact


def transition(surface, st, kind: str, k: int, dt: float = 0.0):
    """Apply the event ``kind`` of shape k to a state with several contacts (in place): (the kind to log, the
    impulse (3,) given). A stick stops with it every other slip that friction would stop within
    SIMULTANEOUS·dt (μ|g|·SIMULTANEOUS·dt m/s at most) — within dt when the contact could not hold otherwise."""
    acts = active(st)
    zero = np.zeros(3)
    if kind == "lift-off":
        assign(st, [a for a in acts if a[0] != k])
        return kind, zero
    cs = [surface.contact(st, j) for j, _, _ in acts]
    i = next(i for i, a in enumerate(acts) if a[0] == k)
    if kind == "slip":
        F = forces(surface, st, acts, cs)[i]
        Ft = F - float(F @ cs[i].n) * cs[i].n
        acts[i] = (k, SLIDING, _unit(Ft))
        assign(st, acts)
        return kind, zero
    # stick: the slip of contact k stopped, and with it every other slip about to stop (SIMULTANEOUS); when k
    # then cannot hold, the slips friction stops within the step stop too (four corners on a curved table coming
    # to rest: one at a time, each is asked for more than its cone and turns round at once, without end)
    start = st.copy()
    gdt = surface.table.mu * float(np.linalg.norm(surface.g)) * dt
    label, Ji, stopped = _stick(surface, st, i, max(SLIP_RTOL * surface.speed_scale(st), SIMULTANEOUS * gdt))
    if label == "reversal":
        trial = start.copy()
        label2, Ji2, stopped2 = _stick(surface, trial, i, gdt)
        if stopped2 > stopped and label2 != "reversal":
            st.v, st.L, st.mode, st.shape, st.slip, st.extra = (trial.v, trial.L, trial.mode, trial.shape,
                                                                 trial.slip, trial.extra)
            return label2, Ji2
    return label, Ji


def _stick(surface, st, i: int, tolerance: float):
    """The stick of contact i (in place): its slip and every other slip up to ``tolerance`` m/s stopped together,
    the others holding; then each rolling contact whose friction would leave its cone slides the way the friction
    it needs points. (the kind to log: "stick", or "reversal" when contact i slides again; its impulse; how many
    slips were stopped)."""
    acts = active(st)
    cs = [surface.contact(st, j) for j, _, _ in acts]
    u = _velocities(st, cs)
    stops = [j == i or m == ROLLING or np.linalg.norm(u[j] - (u[j] @ ci.n) * ci.n) <= tolerance
             for j, ((_, m, _), ci) in enumerate(zip(acts, cs))]
    modes = [ROLLING if stop else SLIDING for stop in stops]
    J = solve(surface, cs[0].W, cs, modes, [ci.n for ci in cs], u)
    _push(surface, st, cs, J)
    acts = [(j, ROLLING, np.zeros(3)) if stop else a for (j, _, _), a, stop in zip(acts, acts, stops)]
    assign(st, acts)
    label = "stick"
    for _ in range(len(acts)):
        cs = [surface.contact(st, j) for j, _, _ in acts]
        F = forces(surface, st, acts, cs)
        # (a normal force ≤ 0 is a lift-off, found by the events)
        over = [(np.linalg.norm(Fj - (Fj @ cj.n) * cj.n) - surface.table.mu * float(Fj @ cj.n), j)
                for j, (Fj, cj, (_, m, _)) in enumerate(zip(F, cs, acts)) if m == ROLLING and Fj @ cj.n > 0]
        worst, j = max(over) if over else (0.0, -1)
        if not worst > 0:
            break
        Ft = F[j] - float(F[j] @ cs[j].n) * cs[j].n
        acts[j] = (acts[j][0], SLIDING, _unit(Ft))
        assign(st, acts)
        label = "reversal" if j == i else label
    return label, J[i], sum(stops)
