"""Compiled contact geometry and the broad phase (the kernels' twin of :meth:`.contact.driver.ContactModel.gaps`):
sphere and wall gaps, the near-pair list, grazing dips, and the certified spans of free flight (:func:`_horizon`)."""

from __future__ import annotations

import numpy as np

from .kernel_flags import WALL_CYLINDER, WALL_PLANE, WALL_SPHERE, _jit_borrowed, _jit_inline
from .step_kernels import _omega_one_or_hinge

# ------------------------------------------------------------------ contacts (contacts.ContactModel.gaps)

@_jit_inline
def _wall_gap(C, w, x0, x1, x2, rad):
    """Gap (m) of a sphere of radius ``rad`` centred at x to static wall w (engine.walls: gap = −f − r)."""
    kind = C.wall_kind[w]
    p0, p1, p2 = x0 - C.wall_point[w, 0], x1 - C.wall_point[w, 1], x2 - C.wall_point[w, 2]
    if kind == WALL_PLANE:
        return (C.wall_dir[w, 0] * p0 + C.wall_dir[w, 1] * p1 + C.wall_dir[w, 2] * p2) - rad
    if kind == WALL_SPHERE:
        return -(C.wall_sign[w] * (np.sqrt(p0 * p0 + p1 * p1 + p2 * p2) - C.wall_radius[w])) - rad
    if kind == WALL_CYLINDER:  # ρ = (𝟙 − a aᵀ)(x − p), as walls.Cylinder forms it
        a0, a1, a2 = C.wall_dir[w, 0], C.wall_dir[w, 1], C.wall_dir[w, 2]
        r0 = (1.0 - a0 * a0) * p0 + (-(a0 * a1)) * p1 + (-(a0 * a2)) * p2
        r1 = (-(a1 * a0)) * p0 + (1.0 - a1 * a1) * p1 + (-(a1 * a2)) * p2
        r2 = (-(a2 * a0)) * p0 + (-(a2 * a1)) * p1 + (1.0 - a2 * a2) * p2
        return -(C.wall_sign[w] * (np.sqrt(r0 * r0 + r1 * r1 + r2 * r2) - C.wall_radius[w])) - rad
    # box: y = R (x − c), q = |y| − h; a container's f is max q, an obstacle's minus the signed distance
    qmax, m2 = -np.inf, 0.0
    for i in range(3):
        y = C.wall_axes[w, i, 0] * p0 + C.wall_axes[w, i, 1] * p1 + C.wall_axes[w, i, 2] * p2
        q = abs(y) - C.wall_half[w, i]
        qmax = max(qmax, q)
        if q > 0.0:
            m2 += q * q
    if C.wall_sign[w] > 0:
        return -qmax - rad
    return (np.sqrt(m2) + min(qmax, 0.0)) - rad

@_jit_inline
def _place_sphere(C, Q, Xb, X, q):
    """X[q] ← sphere q's lab centre (m) at the principal frames Q (B,3,3) and centres of rotation Xb (B,3) m (a
    fixed body's sphere is in the lab already)."""
    b = C.owner[q]
    c0, c1, c2 = C.center[q, 0], C.center[q, 1], C.center[q, 2]
    if b < 0:
        X[q, 0], X[q, 1], X[q, 2] = c0, c1, c2
        return
    for j in range(3):
        X[q, j] = Xb[b, j] + (c0 * Q[b, 0, j] + c1 * Q[b, 1, j] + c2 * Q[b, 2, j])

@_jit_borrowed
def _place_spheres(C, Q, Xb, X):
    """X (spheres,3) ← the lab sphere centres (m) of C (:func:`_place_sphere`)."""
    for q in range(C.owner.shape[0]):
        _place_sphere(C, Q, Xb, X, q)

@_jit_inline
def _pair_gap(C, k, S):
    """Gap (m) of pair k at the sphere centres S (spheres,3) (ContactModel.gaps)."""
    a, o = C.pair[k, 0], C.pair[k, 1]
    if k < C.spheres:
        d0, d1, d2 = S[a, 0] - S[o, 0], S[a, 1] - S[o, 1], S[a, 2] - S[o, 2]
        return np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - C.radius[a] - C.radius[o]
    return _wall_gap(C, o, S[a, 0], S[a, 1], S[a, 2], C.radius[a])

@_jit_borrowed
def _overlap(C, Q, Xb, X, g):
    """The first contact pair (ContactModel.pairs order) of C (compiled.ContactArrays), not resting, whose gap at
    the principal frames Q (B,3,3) and centres of rotation Xb (B,3) m (pivots; a translating body's centre of
    mass where it is now) is below its C.limit, or −1. Fills X (spheres, 3) with the lab sphere centres (m)
    and g (pairs,) with every pair's gap (m)."""
    _place_spheres(C, Q, Xb, X)
    first = -1
    for k in range(C.pair.shape[0]):
        g[k] = _pair_gap(C, k, X)
        if first < 0 and g[k] < C.limit[k] and not C.resting[k]:
            first = k
    return first

@_jit_borrowed
def _min_gap(C, Q, Xb, X, sel, n):
    """The smallest gap (m) of the pairs sel[:n] at the principal frames Q and centres of rotation Xb (what
    :func:`_overlap` gives them; contacts.ContactModel.gaps with ``pairs``: Brent's function). Fills the rows of
    X (spheres,3) of those pairs' spheres with their lab centres (m), as :func:`_place_spheres` does."""
    for m in range(n):
        k = sel[m]
        for side in range(2 if k < C.spheres else 1):
            _place_sphere(C, Q, Xb, X, C.pair[k, side])
    out = np.inf
    for m in range(n):
        out = min(out, _pair_gap(C, sel[m], X))
    return out

# ------------------------------------------------------------------ the near pairs (a broad phase: C.broad)
#
# A scene of many spheres checks every pair after every step (_overlap, _graze_near): 4950 pairs for 100 marbles,
# most of them far apart. With C.broad the step loop checks only the near pairs, a list made by a whole pass:
# every pair whose gap was at most R then (and every pair whose speed is not bounded). A gap moves no faster than
# its spheres (each gap is 1-Lipschitz in each sphere's centre: distances, planes, boxes, spheres, cylinders), so
# while no sphere has moved more than d_max from where the list was made, every other pair's gap is above
# F = R − 2·d_max; the list holds while F is above every limit a check compares a gap with — the contact and touch
# limits, and the grazing filter's bound for the fastest spheres (:func:`_far_ok`) — and a whole pass makes a new
# one where it fails. So the checks decide as the whole pass would, pair for pair, in the same order: the runs are
# bit for bit the same. The far pairs' entries in both gap arrays hold their gaps at the last pass (all above R):
# the loops over every pair (the impact search's, _resolve_impacts') read them as too far for any test, as they are.

#: The steps of motion at the current speed the near list's margin allows before a whole pass makes a new one.
NEAR_STEPS = 16

@_jit_borrowed
def _body_speeds(P0, L0, P, L, nb):
    """nb (B,4) ← |p| (kg·m/s) and |L| (kg·m²/s) of each body at a step's start (P0, L0) and end (P, L): the
    grazing filter's speed bounds (:func:`_graze_near`, :func:`_far_ok`)."""
    for b in range(L.shape[0]):
        nb[b, 0] = np.sqrt(P0[b, 0] * P0[b, 0] + P0[b, 1] * P0[b, 1] + P0[b, 2] * P0[b, 2])
        nb[b, 1] = np.sqrt(L0[b, 0] * L0[b, 0] + L0[b, 1] * L0[b, 1] + L0[b, 2] * L0[b, 2])
        nb[b, 2] = np.sqrt(P[b, 0] * P[b, 0] + P[b, 1] * P[b, 1] + P[b, 2] * P[b, 2])
        nb[b, 3] = np.sqrt(L[b, 0] * L[b, 0] + L[b, 1] * L[b, 1] + L[b, 2] * L[b, 2])

@_jit_borrowed
def _sphere_speed_max(owner, inv_mass, lever, nb):
    """The largest of the moving spheres' speed terms in :func:`_graze_near` (m/s, summed over the step's two
    ends): inv_mass·(|p₀| + |p₁|) + lever·(|L₀| + |L₁|), nb from :func:`_body_speeds`."""
    v = 0.0
    for q in range(owner.shape[0]):
        b = owner[q]
        if b >= 0:
            v = max(v, inv_mass[q] * (nb[b, 0] + nb[b, 2]) + lever[q] * (nb[b, 1] + nb[b, 3]))
    return v

@_jit_borrowed
def _far_ok(bf, F, vmax, h, delta, graze):
    """Whether a pair whose gaps at a step's start and end are both at least F (m) passes every check as apart:
    above the touch limit (and so the contact limits, ≤ 0), and with ``graze`` rejected by :func:`_graze_near`'s
    filter, m + tol < speed·fac·ρ, for any such pair: speed ≤ 2·vmax (two spheres), ρ ≤ max(2, ρ(F)) with
    ρ(m) = (σ + m + 2δ)/(σ + (m − tol)/2) — the filter's ρ with its larger gap at most 2δ above the smaller (δ (m):
    the farthest a sphere moved in the step), the smallest σ of the pairs (ρ falls as σ grows) and the largest tol;
    ρ(m) is a Möbius function of m tending to 2, so it lies between ρ(F) and 2 for m ≥ F. bf: see
    :func:`_overlap_near`. A margin of 1e-9 for the filter's rounding."""
    if not F > bf[4] * (1.0 + 1e-9) or not F > 0.0:
        return False
    if graze:
        if not F > bf[3]:
            return False
        s_min = bf[2]
        rho = max(2.0, (s_min + F + 2.0 * delta) / (s_min + 0.5 * (F - bf[3])))
        if not F >= 2.0 * vmax * (2.0 * (4.0 / 27.0) * h) * rho * (1.0 + 1e-9):
            return False
    return True

@_jit_borrowed
def _new_list(G, bounded, S, g, go, delta, nl, Sref, bi, bf, vmax, h, graze):
    """A new near list from a whole pass: g (P,) every pair's exact gap (m) at the sphere centres S, which become
    the list's reference (Sref); δ (m) how far a sphere moved since the gaps in go (P,) (the step's start: 0 for a
    state's own pass). R is the smallest margin :func:`_far_ok` accepts (doubled until it does) plus
    NEAR_STEPS steps of motion at vmax, plus 2δ; far pairs' entries of go take their gaps in g. Where no R is
    accepted (speeds not finite) the list holds every pair and bi[0] stays −1: the next check is a whole pass."""
    nS, nP = S.shape[0], g.shape[0]
    cmax = 0.0
    for q in range(nS):
        for x in range(3):
            Sref[q, x] = S[q, x]
            cmax = max(cmax, abs(S[q, x]))
    # the gaps' rounding: a few ulps of the coordinates and radii (1e-12 of them: a wide margin)
    rmax = 0.0
    for q in range(nS):
        rmax = max(rmax, G.radius[q])
    bf[5] = 1e-12 * (cmax + rmax)
    F = max(bf[4], bf[3], 1e-300) * 2.0
    if graze:
        F = max(F, 8.0 * vmax * (2.0 * (4.0 / 27.0) * h))
    tries = 0
    while not _far_ok(bf, F, vmax, h, delta, graze) and tries < 64:
        F *= 2.0
        tries += 1
    if not _far_ok(bf, F, vmax, h, delta, graze):
        for k in range(nP):
            nl[k] = k
        bi[0] = -1
        return
    R = F + NEAR_STEPS * 0.5 * vmax * h + 2.0 * delta * (1.0 + 1e-9) + bf[5]
    bf[0], bf[1] = R, delta
    nn = 0
    for k in range(nP):
        if g[k] <= R or not bounded[k] or G.resting[k]:
            nl[nn] = k
            nn += 1
        else:
            go[k] = g[k]
    bi[0] = nn

@_jit_borrowed
def _refresh(G, C, Q, Xb, P, L, S, g, go, nl, Sref, bi, bf, nb, h):
    """:func:`_overlap` of a state Q, Xb, P, L (the run's start, where a merged span ends, before a horizon: every
    gap exact, into S and g) and a new near list made from it (:func:`_new_list`, δ = 0; go: the other gap array,
    the next step's; h (s) the next step; nb scratch (B,4)). Takes C whole: it runs seldom."""
    first = _overlap(G, Q, Xb, S, g)
    C.checks[0] += 1
    vmax = 0.0
    if C.graze:
        _body_speeds(P, L, P, L, nb)
        vmax = _sphere_speed_max(C.owner, C.inv_mass, C.lever, nb)
    _new_list(G, C.bounded, S, g, go, 0.0, nl, Sref, bi, bf, vmax, h, C.graze)
    return first

@_jit_borrowed
def _overlap_near(G, bounded, Q, Xb, S, g, go, So, nl, Sref, bi, bf, vmax, h, graze, checks):
    """:func:`_overlap` at a step's end on the near pairs nl[:bi[0]] while the list holds, else a whole pass and a
    new list (see this section's comment). Q, Xb: the state; S (spheres,3), g (P,): its sphere centres and gaps
    (filled); go, So: the gaps and sphere centres at the step's start; vmax (m/s): :func:`_sphere_speed_max` over
    the step; h (s) its length; graze: C.graze. bi (1,) int: the list's length (−1: no list); bf (6,): R (m), the
    farthest a sphere has moved from Sref (m), the pairs' smallest σ (m, 1e300 if none), largest tol and largest
    touch limit (m), the gaps' rounding margin (m). checks (2,): whole passes and near-pair gaps taken."""
    _place_spheres(G, Q, Xb, S)
    d2, e2 = 0.0, 0.0
    for q in range(S.shape[0]):
        if G.owner[q] < 0:
            continue
        a0, a1, a2 = S[q, 0] - Sref[q, 0], S[q, 1] - Sref[q, 1], S[q, 2] - Sref[q, 2]
        d2 = max(d2, a0 * a0 + a1 * a1 + a2 * a2)
        a0, a1, a2 = S[q, 0] - So[q, 0], S[q, 1] - So[q, 1], S[q, 2] - So[q, 2]
        e2 = max(e2, a0 * a0 + a1 * a1 + a2 * a2)
    delta = np.sqrt(e2)
    nn = bi[0]
    if nn >= 0 and np.isfinite(d2) and np.isfinite(e2):
        bf[1] = max(bf[1], np.sqrt(d2))
        if _far_ok(bf, bf[0] - 2.0 * bf[1] * (1.0 + 1e-9) - bf[5], vmax, h, delta, graze):
            first = -1
            for m in range(nn):
                k = nl[m]
                g[k] = _pair_gap(G, k, S)
                if first < 0 and g[k] < G.limit[k] and not G.resting[k]:
                    first = k
            checks[1] += nn
            return first
    first = -1
    for k in range(g.shape[0]):
        g[k] = _pair_gap(G, k, S)
        if first < 0 and g[k] < G.limit[k] and not G.resting[k]:
            first = k
    checks[0] += 1
    _new_list(G, bounded, S, g, go, delta, nl, Sref, bi, bf, vmax, h, graze)
    return first

@_jit_borrowed
def _sphere_velocity(C, q, X, Xb, P, w):
    """Lab velocity (m/s) of sphere q's centre: p/M of a translating owner plus ω × (x − x_b); 0 on a fixed body.
    X (spheres,3), Xb, P, w (B,3): sphere centres, centres of rotation, linear momenta, angular velocities."""
    b = C.owner[q]
    if b < 0:
        return 0.0, 0.0, 0.0
    r0, r1, r2 = X[q, 0] - Xb[b, 0], X[q, 1] - Xb[b, 1], X[q, 2] - Xb[b, 2]
    f = C.inv_mass[q]
    return (f * P[b, 0] + (w[b, 1] * r2 - w[b, 2] * r1), f * P[b, 1] + (w[b, 2] * r0 - w[b, 0] * r2),
            f * P[b, 2] + (w[b, 0] * r1 - w[b, 1] * r0))

@_jit_borrowed
def _graze_rate(C, k, X, Xb, P, w):
    """The rate of pair k's interpolated quantity (contacts._dips): d/dt of the squared distance (m²/s) where
    C.sigma[k] > 0 (sphere pairs, sphere and cylinder obstacles, a box from outside), else of the gap (m/s)."""
    a, o = C.pair[k, 0], C.pair[k, 1]
    v0, v1, v2 = _sphere_velocity(C, a, X, Xb, P, w)
    if k < C.spheres:
        u0, u1, u2 = _sphere_velocity(C, o, X, Xb, P, w)
        return 2.0 * ((X[a, 0] - X[o, 0]) * (v0 - u0) + (X[a, 1] - X[o, 1]) * (v1 - u1)
                      + (X[a, 2] - X[o, 2]) * (v2 - u2))
    kind = C.wall_kind[o]
    p0, p1, p2 = X[a, 0] - C.wall_point[o, 0], X[a, 1] - C.wall_point[o, 1], X[a, 2] - C.wall_point[o, 2]
    if kind == WALL_PLANE:
        return C.wall_dir[o, 0] * v0 + C.wall_dir[o, 1] * v1 + C.wall_dir[o, 2] * v2
    if kind == WALL_CYLINDER:  # ρ·v (ρ ⊥ a, so ρ·(𝟙 − a aᵀ)v = ρ·v)
        a0, a1, a2 = C.wall_dir[o, 0], C.wall_dir[o, 1], C.wall_dir[o, 2]
        along = a0 * p0 + a1 * p1 + a2 * p2
        p0, p1, p2 = p0 - along * a0, p1 - along * a1, p2 - along * a2
    if kind == WALL_SPHERE or kind == WALL_CYLINDER:
        pv = p0 * v0 + p1 * v1 + p2 * v2
        if C.sigma[k] > 0.0:  # an obstacle: the squared distance to its centre or axis
            return 2.0 * pv
        return -pv / np.sqrt(p0 * p0 + p1 * p1 + p2 * p2)  # a container: g = R − |p| − r
    # box: y = R p, q = |y| − h; a container's g = −max q − r, an obstacle's (outside) squared distance Σ q₊²
    best, rate, sq = -np.inf, 0.0, 0.0
    for i in range(3):
        y = C.wall_axes[o, i, 0] * p0 + C.wall_axes[o, i, 1] * p1 + C.wall_axes[o, i, 2] * p2
        yd = C.wall_axes[o, i, 0] * v0 + C.wall_axes[o, i, 1] * v1 + C.wall_axes[o, i, 2] * v2
        if y < 0.0:
            yd = -yd
        q = abs(y) - C.wall_half[o, i]
        if q > best:
            best, rate = q, -yd
        if q > 0.0:
            sq += 2.0 * q * yd
    return rate if C.wall_sign[o] > 0 else sq

@_jit_borrowed
def _hermite_below(v0, v1, r0, r1, h, limit):
    """Whether the cubic Hermite interpolant p of v over a step of length h (p(0) = v0, p(1) = v1, rates
    r0, r1 at the ends; s = (t − t_c)/h) has an interior minimum below ``limit`` (contacts._hermite_min)."""
    c = h * r0
    b = 3.0 * (v1 - v0) - 2.0 * h * r0 - h * r1
    a = 2.0 * (v0 - v1) + h * r0 + h * r1
    A, B = 3.0 * a, 2.0 * b
    if A == 0.0:
        if not B > 0.0:
            return False
        s = -c / B
    else:
        D = B * B - 4.0 * A * c
        if not D > 0.0:
            return False
        root = np.sqrt(D)
        s = (-B + root) / (2.0 * A) if B < 0.0 else 2.0 * c / (-B - root)
    if not (0.0 < s < 1.0):
        return False
    u = 1.0 - s
    return v0 * u * u * (1.0 + 2.0 * s) + v1 * s * s * (3.0 - 2.0 * s) + h * (r0 * s * u * u - r1 * s * s * u) < limit

@_jit_borrowed
def _graze_near(pair, owner, spheres, tol, sigma, bounded, inv_mass, lever, resting, g0, g1, nb, h, near, nl, nn):
    """The cheap first half of the grazing check: near[k] ← whether pair k of nl[:nn] (the near pairs, in pair
    order: every pair without C.broad), apart at both ends of the step (g0 ≥ 0, g1 ≥ −tol) and not resting (held
    closed: contacts._dips skips them), passes the speed bound (contacts._dips' filter: its cubic could dip below
    the limit); returns how many do. Arguments: :func:`_grazing`'s and ContactArrays' fields of the same names; nb
    (B,4) the bodies' speeds (:func:`_body_speeds`). Only the arrays it needs, not M and C: passing those (every
    field of both, each array member by member) cost ~0.8 µs a step, longer than the check."""
    fac = 2.0 * (4.0 / 27.0) * h
    count = 0
    for i in range(nn):
        k = nl[i]
        near[k] = False
        G0, G1, tk = g0[k], g1[k], tol[k]
        if G0 < 0.0 or G1 < -tk or resting[k]:
            continue
        if bounded[k]:
            m, big, sg = min(G0, G1), max(G0, G1), sigma[k]
            a, o = pair[k, 0], pair[k, 1]
            speed = 0.0
            for side in range(2 if k < spheres else 1):
                q = a if side == 0 else o
                b = owner[q]
                if b >= 0:
                    speed += inv_mass[q] * (nb[b, 0] + nb[b, 2]) + lever[q] * (nb[b, 1] + nb[b, 3])
            s_eff = sg if sg > 0.0 else 1e300
            rho = (s_eff + big) / (s_eff + 0.5 * (max(m, -tk) - tk))
            if not m + tk < speed * fac * rho:
                continue
        near[k] = True
        count += 1
    return count

@_jit_borrowed
def _grazing(M, C, Q0, L0, X0, P0, Q, L, X, P, J, g0, g1, S0, S1, h, near, nl, nn, w0, w1):
    """The first pair apart at both ends of a step whose gap may dip below its limit inside it (a grazing
    contact, contacts._dips), or −1. The state at the step's start: Q0, L0, X0, P0, sphere centres S0 and gaps
    g0; at its end: Q, L, X, P, S1, g1 (shapes as :func:`_overlap`'s); h (s) the step; near (P,) the pairs of
    nl[:nn] that passed :func:`_graze_near` (called first: most steps end there); scratch w0, w1 (B,3).

    The same cheap bound and cubic Hermite interpolant as the numpy driver's, with half its limit (a pair
    flagged here has its step taken by that driver, which decides with the full limit and finds the contact
    time): a superset of the pairs it would flag, up to rounding."""
    for i in range(nn):
        k = nl[i]
        if not near[k]:
            continue
        G0, G1, tol, sg = g0[k], g1[k], C.tol[k], C.sigma[k]
        # ω at both ends of the pair's bodies only (a body of several flagged pairs: the same numbers again)
        for side in range(2 if k < C.spheres else 1):
            b = C.owner[C.pair[k, side]]
            if b >= 0:
                for end in range(2):
                    _omega_one_or_hinge(M, Q0 if end == 0 else Q, L0 if end == 0 else L, J,
                                        w0 if end == 0 else w1, b)
        r0 = _graze_rate(C, k, S0, X0, P0, w0)
        r1 = _graze_rate(C, k, S1, X, P, w1)
        half = 0.5 * tol
        if sg > 0.0:
            d0, d1 = G0 + sg, G1 + sg
            if _hermite_below(d0 * d0, d1 * d1, r0, r1, h, (sg - half) * (sg - half)):
                return k
        elif _hermite_below(G0, G1, r0, r1, h, -half):
            return k
    return -1

@_jit_borrowed
def _horizon(owner, spheres, pair, inv_mass, lever, sigma, tol, limit, force, lam2, axial, graze, g0, L, P, T, h,
             split, nmax, fb):
    """How many steps of length h (at most nmax; 1: none) from a state whose gaps are g0 (P,) m can run merged and
    unchecked — as many as the bound allows, to the step: none of them could end below a pair's limit or pass
    :func:`_graze_near`'s filter (with ``graze``), so the one-step-a-call checks would have passed every one.

    The bound (bounds.FlightBounds: scenes whose only force is gravity), for the splitting's kicks and drifts as
    they come, negative ones too (split (3,): a = Σ|drifts|, κ = Σ|kicks|, c = Σᵢ |dᵢ|·(|k₀| + … + |kᵢ|), the kicks
    before each drift): over n steps a drift moves a sphere no further than (|dᵢ|h)·(lever·|L| + inv_mass·|p|) at
    the |L|, |p| it has, and |L| grew by at most T̂·(the kicks' |coefficients|·h so far), so the spheres move at most
    lever·(|L₀| A₁ + T̂ A₂) + inv_mass·(|p₀| A₁ + force·A₂), A₁ = n h a, A₂ = h² (a κ n(n−1)/2 + c n); T̂ the
    largest torque in the chunk, |T̂ − T₀| ≤ λ²·(|L₀| A₁ + T̂ A₂) as gravity's torque follows the centre of
    mass, so T̂ ≤ (|T₀| + λ² |L₀| A₁)/(1 − λ² A₂) (no bound where λ² A₂ ≥ 1). At a step's end a sphere is at most
    lever·(|L₀| + T̂ n h κ) + inv_mass·(|p₀| + force·n h κ) fast. The checks look at the steps' ends only, and there
    drifts that turn a sphere about one axis set by the momentum (``axial``: a hinge, or a bob on a symmetric
    pendulum's axis; bounds.FlightBounds) add their angles: a step moves it as one drift of h at the step's start
    momentum would, within the kicks' second-order change (rotations are isometries, and turns about axes a, b move
    a point at most |a − b| apart) — a = Σdᵢ = 1 in A₁ and A₂ for such spheres, and for every translation (x += h·p/M
    adds up the same way); T̂ keeps a = Σ|dᵢ|, as the kicks take torques inside steps. A margin of 1e-9 of each
    bound; none for the
    states' rounding: a merged chunk's states differ from one-step-a-call ones by rounding as the numpy driver's
    do, and the limits themselves are rounding-sized (−CONTACT_RTOL·scale) — a pair that close is a toss-up for
    either. L, P, T (B,3): the state's momenta and torque; the other arguments ContactArrays' fields of the same
    names; scratch fb (B,6). Only the arrays it needs (a call passes every field of M or C member by member)."""
    B = L.shape[0]
    a, kap, cd = split[0], split[1], split[2]
    for b in range(B):
        fb[b, 0] = np.sqrt(P[b, 0] * P[b, 0] + P[b, 1] * P[b, 1] + P[b, 2] * P[b, 2])
        fb[b, 1] = np.sqrt(L[b, 0] * L[b, 0] + L[b, 1] * L[b, 1] + L[b, 2] * L[b, 2])
        fb[b, 2] = np.sqrt(T[b, 0] * T[b, 0] + T[b, 1] * T[b, 1] + T[b, 2] * T[b, 2])
    fac = 2.0 * (4.0 / 27.0) * h  # _graze_near's
    grip = 1e-9
    # 2, 4, 8, … up to where the bound fails (or nmax), then halving the interval between the last that held and
    # the first that failed: every m the bound allows is checked itself (the bound over m steps covers each of them)
    good, bad, m = 1, 0, 2
    while True:
        m = min(m, nmax)
        A1 = m * h * a
        A2 = h * h * (a * kap * 0.5 * m * (m - 1) + cd * m)
        A1x = m * h  # the same with a = Σdᵢ = 1: axial spheres and translations, at the steps' ends
        A2x = h * h * (kap * 0.5 * m * (m - 1) + cd * m)
        Kt = m * h * kap
        ok = True
        for b in range(B):  # the drift integral of |L| (fb[b, 3]; axial fb[b, 5]) and |L| at a step's end (fb[b, 4])
            den = 1.0 - lam2[b] * A2
            if not den > 0.0:
                ok = False
                break
            That = (fb[b, 2] + lam2[b] * fb[b, 1] * A1) / den
            fb[b, 3] = fb[b, 1] * A1 + That * A2
            fb[b, 4] = fb[b, 1] + That * Kt
            fb[b, 5] = fb[b, 1] * A1x + That * A2x
        for k in range(pair.shape[0] if ok else 0):
            D, V = 0.0, 0.0
            for side in range(2 if k < spheres else 1):
                q = pair[k, side]
                b = owner[q]
                if b >= 0:
                    turn = fb[b, 5] if axial[q] else fb[b, 3]
                    D += (inv_mass[q] * (fb[b, 0] * A1x + force[b] * A2x) + lever[q] * turn) * (1.0 + grip)
                    V += (inv_mass[q] * (fb[b, 0] + force[b] * Kt) + lever[q] * fb[b, 4]) * (1.0 + grip)
            lb, ub = g0[k] - D, g0[k] + D
            if not lb > limit[k]:
                ok = False
                break
            if graze:  # not near in any of the steps: min gap + tol ≥ speed (both ends: 2V)·fac·ρ
                tk = tol[k]
                s_eff = sigma[k] if sigma[k] > 0.0 else 1e300
                rho = (s_eff + ub) / (s_eff + 0.5 * (max(lb, -tk) - tk))
                if lb + tk < 2.0 * V * fac * rho * (1.0 + grip):
                    ok = False
                    break
        if ok:
            good = m
        else:
            bad = m
        if bad == 0:
            if good == nmax:
                return good
            m = 2 * good
        elif bad - good <= 1:
            return good
        else:
            m = (good + bad) // 2
