"""The compiled step and events of a body touching the table with several shapes at once, :mod:`.surface_several`'s
(its docstring has the physics): each function carries the name of the one it follows and does the same arithmetic
on :mod:`.surface_kernels`' arrays. The touching shapes are the state's first contact (mode, shape, slip) and its
others after ``S_NEXTRA`` (:mod:`.surface_layout`).

What changes the set of contacts — an impact with several touching, a lift-off, a stick or slip — is the
reference's (:func:`.surface_several.settle`, :func:`.surface_several.transition`): the run's kernel stops at the step
where one fires (:func:`watch_fires`) and :func:`.surface_run.run_compiled` hands that step to the reference, which
hands the run back when the kernel can take it. The least-squares solves are a one-sided Jacobi SVD (:func:`_lstsq`)
with LAPACK's gelsd cut (singular values below RCOND of the largest dropped): the least-norm answer, as numpy's.
"""

from __future__ import annotations

import math

import numpy as np

from .surface_kernels import (
    _EPS,
    _Q,
    _contact,
    _coupling,
    _cross,
    _dot,
    _free_turn,
    _friction_vector,
    _gap,
    _jit,
    _landing_target,
    _mm,
    _mv,
    _norm,
    _speed_scale,
    _tangent,
)
from .surface_layout import (
    EXTRA_W,
    P_FRICTION_LAST,
    P_G,
    P_MASS,
    P_MU,
    P_RCOND,
    P_SEV_ITER,
    P_SLIP_RTOL,
    P_VISCOUS,
    ROLLING,
    S_EXTRA,
    S_L,
    S_MODE,
    S_NEXTRA,
    S_Q,
    S_SHAPE,
    S_SLIP,
    S_T,
    S_V,
    S_X,
    SLIDING,
)

#: Jacobi sweeps at most (they converge quadratically: a dozen reach round-off for the 12 unknowns of 4 corners).
SWEEPS = 60


@_jit
def _lstsq(A, b, rcond):
    """x (n,): the least-norm least-squares solution of A x = b (A (m, n)), singular values up to rcond times the
    largest taken as zero (numpy.linalg.lstsq's answer): A's SVD by one-sided Jacobi rotations of its columns."""
    m, n = A.shape
    G = A.copy()
    V = np.eye(n)
    # a column of A's null space is round-off; rotating it against a large one makes new round-off of the same
    # relative size, without end: columns below n·ε of A's norm are taken as zero
    tiny = 0.0
    for i in range(m):
        for j in range(n):
            tiny += A[i, j] * A[i, j]
    tiny *= (n * _EPS) ** 2
    for _ in range(SWEEPS):
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                alpha = beta = gamma = 0.0
                for i in range(m):
                    alpha += G[i, p] * G[i, p]
                    beta += G[i, q] * G[i, q]
                    gamma += G[i, p] * G[i, q]
                if abs(gamma) <= _EPS * math.sqrt(alpha * beta) or min(alpha, beta) <= tiny:
                    continue
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                t = (1.0 if zeta >= 0 else -1.0) / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = c * t
                for i in range(m):
                    gp, gq = G[i, p], G[i, q]
                    G[i, p], G[i, q] = c * gp - s * gq, s * gp + c * gq
                for i in range(n):
                    vp, vq = V[i, p], V[i, q]
                    V[i, p], V[i, q] = c * vp - s * vq, s * vp + c * vq
        if not rotated:
            break
    sig = np.zeros(n)
    for j in range(n):
        acc = 0.0
        for i in range(m):
            acc += G[i, j] * G[i, j]
        sig[j] = math.sqrt(acc)
    cut = rcond * np.max(sig) if n > 0 else 0.0
    x = np.zeros(n)
    for j in range(n):
        if not sig[j] > cut:
            continue
        ub = 0.0
        for i in range(m):
            ub += G[i, j] * b[i]
        f = ub / (sig[j] * sig[j])         # (u_jᵀ b)/σ_j with u_j = G[:, j]/σ_j
        for i in range(n):
            x[i] += f * V[i, j]
    return x


@_jit
def acts(s):
    """surface_several.active: the touching shapes (k,), their modes (k,) and slips (k, 3), the first contact first."""
    ne = int(s[S_NEXTRA])
    shapes = np.empty(ne + 1, np.int64)
    modes = np.empty(ne + 1, np.int64)
    slips = np.empty((ne + 1, 3))
    shapes[0], modes[0] = int(s[S_SHAPE]), int(s[S_MODE])
    slips[0] = s[S_SLIP:S_SLIP + 3]
    for j in range(ne):
        o = S_EXTRA + EXTRA_W * j
        shapes[j + 1], modes[j + 1] = int(s[o]), int(s[o + 1])
        slips[j + 1] = s[o + 2:o + 5]
    return shapes, modes, slips


@_jit
def _touches(M, s, shapes, info):
    """Surface.contact of each touching shape: (ρ (k,3), W (3,3), ω (3,), u (k,3), Ṗ − v (k,3), n (k,3), curv (k,))."""
    k = shapes.shape[0]
    rho, u, mov, n = np.empty((k, 3)), np.empty((k, 3)), np.empty((k, 3)), np.empty((k, 3))
    curv = np.empty(k)
    W = np.zeros((3, 3))
    w = np.zeros(3)
    for i in range(k):
        C, r_, W, w, u_, m_, n_, c_ = _contact(M, s, shapes[i], info)
        rho[i], u[i], mov[i], n[i], curv[i] = r_, u_, m_, n_, c_
    return rho, W, w, u, mov, n, curv


@_jit
def _frame(n):
    """surface_several._frame: (3,3) columns n, t₁, t₂."""
    t1 = _cross(n, np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0]))
    t1 = t1 / math.sqrt(_dot(t1, t1))
    F = np.empty((3, 3))
    F[:, 0], F[:, 1], F[:, 2] = n, t1, _cross(n, t1)
    return F


@_jit
def _conditions(par, W, rho, n, modes, D):
    """surface_several.conditions: (A (m,m), rows P (k,3,3), columns B (k,3,3), each contact's count (k,) and offset
    (k+1,)); a sliding contact's one row n and column D padded with zeros."""
    k = modes.shape[0]
    P, B = np.zeros((k, 3, 3)), np.zeros((k, 3, 3))
    cnt, off = np.empty(k, np.int64), np.zeros(k + 1, np.int64)
    for i in range(k):
        if modes[i] == SLIDING:
            cnt[i] = 1
            P[i, 0] = n[i]
            B[i, :, 0] = D[i]
        else:
            cnt[i] = 3
            for a in range(3):
                P[i, a, a] = 1.0
            B[i] = _frame(n[i])
        off[i + 1] = off[i] + cnt[i]
    A = np.zeros((off[k], off[k]))
    for i in range(k):
        for j in range(k):
            blk = _mm(_mm(P[i], _coupling(par, W, rho[i], rho[j])), B[j])
            for a in range(cnt[i]):
                for b in range(cnt[j]):
                    A[off[i] + a, off[j] + b] = blk[a, b]
    return A, P, B, cnt, off


@_jit
def _solve(par, system, modes, a, c, share, info, t):
    """surface_several.solve: the forces or impulses (k,3) from P_i (a_i + Σ_j K_ij B_j z_j) = c_i; ``c`` (k,) the
    sliding contacts' normal targets, ``share`` (k,) the rolling ones' weights (empty: none); info = 9 when the
    conditions are no longer finite."""
    A, P, B, cnt, off = system
    k = modes.shape[0]
    m = off[k]
    b = np.empty(m)
    S = np.ones(m)
    for i in range(k):
        Pa = _mv(P[i], a[i])
        for r in range(cnt[i]):
            b[off[i] + r] = -Pa[r]
        if modes[i] == SLIDING:
            b[off[i]] = c[i] - Pa[0]
        elif share.shape[0] > 0:
            S[off[i] + 1] = math.sqrt(share[i])
            S[off[i] + 2] = S[off[i] + 1]
    ok = True
    for r in range(m):
        if not np.isfinite(b[r]):
            ok = False
        for q in range(m):
            if not np.isfinite(A[r, q]):
                ok = False
    if not ok:
        info[0], info[1] = 9.0, t
        return np.zeros((k, 3))
    AS = A.copy()
    for q in range(m):
        AS[:, q] *= S[q]
    z = S * _lstsq(AS, b, par[P_RCOND])
    out = np.zeros((k, 3))
    for i in range(k):
        for r in range(cnt[i]):
            out[i] += z[off[i] + r] * B[i, :, r]
    return out


@_jit
def _outside_cones(par, n, modes, F):
    """surface_several._outside_cones."""
    for i in range(modes.shape[0]):
        if modes[i] == ROLLING:
            N = _dot(F[i], n[i])
            if N <= 0 or _norm(F[i] - N * n[i]) > par[P_MU] * N:
                return True
    return False


@_jit
def _shared(par, system, n, modes, a0, curv, F, weight, info, t):
    """surface_several._shared."""
    k = modes.shape[0]
    for _ in range(2):
        N = np.empty(k)
        for i in range(k):
            N[i] = max(_dot(F[i], n[i]), 0.0)
        top = np.max(N)
        if not top > 0:
            break
        F = _solve(par, system, modes, a0, curv, weight * N / top, info, t)
    return F


@_jit
def forces(M, s, shapes, modes, slips, info):
    """surface_several.forces: the table's forces (k,3) N at the touching shapes, and their normals (k,3)."""
    par = M[0]
    rho, W, w, u, mov, n, curv = _touches(M, s, shapes, info)
    wdot = _mv(W, _cross(w, s[S_L:S_L + 3]))
    g = par[P_G:P_G + 3]
    k = shapes.shape[0]
    a0, D = np.empty((k, 3)), np.empty((k, 3))
    for i in range(k):
        a0[i] = g - _cross(wdot, rho[i]) + _cross(w, mov[i])
        D[i] = n[i] + _friction_vector(par, s, slips[i], u[i], n[i])
    system = _conditions(par, W, rho, n, modes, D)
    none = np.zeros(0)
    F = _solve(par, system, modes, a0, curv, none, info, s[S_T])
    rolling = 0
    for i in range(k):
        if modes[i] == ROLLING:
            rolling += 1
    if rolling > 1:
        F = _shared(par, system, n, modes, a0, curv, F, 1.0, info, s[S_T])
        if _outside_cones(par, n, modes, F):
            last = _shared(par, system, n, modes, a0, curv, F, par[P_FRICTION_LAST] ** 2, info, s[S_T])
            if not _outside_cones(par, n, modes, last):
                F = last
    return F, n


@_jit
def _land(M, s, shapes, lam, D1, Jt, v0, rho, h, targets, info):
    """surface_several.step's ``land``: (gaps (k,) less their ``targets``, x1, v1, L1, Q1) after the first kicks
    λ_i D_i + Jt_i."""
    par = M[0]
    k = shapes.shape[0]
    Jsum = np.zeros(3)
    L1 = s[S_L:S_L + 3].copy()
    for i in range(k):
        J = lam[i] * D1[i] + Jt[i]
        Jsum = Jsum + J
        L1 = L1 + _cross(rho[i], J)
    v1 = v0 + Jsum / par[P_MASS]
    x1 = s[S_X:S_X + 3] + h * v1
    Q1 = _free_turn(M, _Q(s), L1, h)
    gaps = np.empty(k)
    for i in range(k):
        gaps[i] = _gap(M, shapes[i], x1, Q1, info, s[S_T] + h) - targets[i]
    return gaps, x1, v1, L1, Q1


@_jit
def _works(n, J, u0, u1):
    """surface_several._works: (normal work, tangential work) J."""
    wn = wt = 0.0
    for i in range(n.shape[0]):
        um = 0.5 * (u0[i] + u1[i])
        jn = _dot(J[i], n[i])
        wn += jn * _dot(um, n[i])
        wt += _dot(J[i], um) - jn * _dot(um, n[i])
    return wn, wt


@_jit
def _rolling_tangential_work(n, J, u0, u1, modes, h, g):
    """surface_several._rolling_tangential_work."""
    out = 0.0
    for i in range(n.shape[0]):
        if modes[i] == ROLLING:
            jt = J[i] - _dot(J[i], n[i]) * n[i]
            out += _dot(jt, 0.5 * (u0[i] + u1[i])) - 0.5 * h * _dot(g, jt)
    return out


@_jit
def _gliding_kicks(par, W, rho, n, modes, ua, J, info, t):
    """surface_several._gliding_kicks: the gliding slides' second kicks, implicit in the slips after them."""
    k = modes.shape[0]
    mu = par[P_MU]
    zero = np.zeros(k)
    none = np.zeros(0)
    for _ in range(int(par[P_SEV_ITER])):
        D = np.empty((k, 3))
        for i in range(k):
            up = ua[i].copy()
            for j in range(k):
                up = up + _mv(_coupling(par, W, rho[i], rho[j]), J[j])
            D[i] = n[i] - mu * (up - _dot(up, n[i]) * n[i])
        J_new = _solve(par, _conditions(par, W, rho, n, modes, D), modes, ua, zero, none, info, t)
        change = big = 0.0
        for i in range(k):
            change = max(change, _norm(J_new[i] - J[i]))
            big = max(big, _norm(J_new[i]))
        J = J_new
        if change <= 4 * _EPS * big:
            break
    return J


@_jit
def _velocities(s, W, rho):
    w = _mv(W, s[S_L:S_L + 3])
    out = np.empty((rho.shape[0], 3))
    for i in range(rho.shape[0]):
        out[i] = s[S_V:S_V + 3] + _cross(w, rho[i])
    return out


@_jit
def step(M, s, h, info):
    """surface_several.step: (new state, normal work J, friction work J)."""
    par = M[0]
    g = par[P_G:P_G + 3]
    shapes, modes, slips = acts(s)
    k = shapes.shape[0]
    rho, W, w, u_, mov, n, curv = _touches(M, s, shapes, info)
    F = forces(M, s, shapes, modes, slips, info)[0]
    v0 = s[S_V:S_V + 3] + 0.5 * h * g
    viscous = par[P_VISCOUS] != 0.0
    D1, Jt = np.empty((k, 3)), np.zeros((k, 3))
    for i in range(k):
        if modes[i] == ROLLING:
            D1[i] = n[i]
            Jt[i] = 0.5 * h * (F[i] - _dot(F[i], n[i]) * n[i])
        else:
            u = u_[i] if viscous else v0 + _cross(w, rho[i])
            D1[i] = n[i] + _friction_vector(par, s, slips[i], u, n[i])
    G = np.empty((k, k))
    lam = np.empty(k)
    for i in range(k):
        for j in range(k):
            G[i, j] = h * _dot(n[i], _mv(_coupling(par, W, rho[i], rho[j]), D1[j]))
        lam[i] = 0.5 * h * _dot(F[i], n[i])
    speed = _speed_scale(par, s)
    targets = np.empty(k)
    for i in range(k):
        targets[i] = _landing_target(par, _gap(M, shapes[i], s[S_X:S_X + 3], _Q(s), info, s[S_T]), h, speed)
    gaps, x1, v1, L1, Q1 = _land(M, s, shapes, lam, D1, Jt, v0, rho, h, targets, info)
    for _ in range(int(par[P_SEV_ITER])):
        d = _lstsq(G, gaps, par[P_RCOND])
        trial_lam = lam - d
        tg, tx, tv, tL, tQ = _land(M, s, shapes, trial_lam, D1, Jt, v0, rho, h, targets, info)
        if not _norm_k(tg) < _norm_k(gaps):
            break
        lam, gaps, x1, v1, L1, Q1 = trial_lam, tg, tx, tv, tL, tQ
        if _norm_k(d) <= 4 * _EPS * _norm_k(lam) or not np.any(gaps != 0.0):
            break
    J1 = np.empty((k, 3))
    u0 = np.empty((k, 3))
    for i in range(k):
        J1[i] = lam[i] * D1[i] + Jt[i]
        u0[i] = v0 + _cross(w, rho[i])
    w1 = _mv(W, L1)
    u1 = np.empty((k, 3))
    for i in range(k):
        u1[i] = v1 + _cross(w1, rho[i])
    wn1, wt1 = _works(n, J1, u0, u1)
    for i in range(k):
        jn = _dot(J1[i], n[i])
        wn1 -= 0.5 * h * _dot(g, n[i]) * jn
        wt1 -= 0.5 * h * _dot(g, J1[i] - jn * n[i])
    mid = s.copy()
    mid[S_T] = s[S_T] + h
    mid[S_X:S_X + 3], mid[S_V:S_V + 3], mid[S_L:S_L + 3] = x1, v1 + 0.5 * h * g, L1
    mid[S_Q:S_Q + 9] = Q1.ravel()
    rho2, W2, w2, ua, mov2, n2, curv2 = _touches(M, mid, shapes, info)
    D2 = np.empty((k, 3))
    for i in range(k):
        # a Coulomb slip that reverses within the step keeps the first kick's direction (as with one contact)
        f1 = D1[i] - n[i]
        f2 = _friction_vector(par, mid, slips[i], ua[i], n2[i])
        D2[i] = n2[i] + (f2 if viscous or _dot(f2, f1) >= 0 else f1)
    J2 = _solve(par, _conditions(par, W2, rho2, n2, modes, D2), modes, ua, np.zeros(k), np.zeros(0), info,
                mid[S_T])
    if viscous:
        J2 = _gliding_kicks(par, W2, rho2, n2, modes, ua, J2, info, mid[S_T])
    for i in range(k):
        mid[S_V:S_V + 3] = mid[S_V:S_V + 3] + J2[i] / par[P_MASS]
        mid[S_L:S_L + 3] = mid[S_L:S_L + 3] + _cross(rho2[i], J2[i])
    ub = _velocities(mid, W2, rho2)
    wn2, wt2 = _works(n2, J2, ua, ub)
    rolling = 0
    for i in range(k):
        if modes[i] == ROLLING:
            rolling += 1
    if rolling == k:
        return mid, wn1 + wn2 + wt1 + wt2, 0.0
    # rolling contacts' tangential impulses are the constraint's (no slip, no friction work)
    roll_t = _rolling_tangential_work(n, J1, u0, u1, modes, h, g) + _rolling_tangential_work(
        n2, J2, ua, ub, modes, 0.0, g)
    return mid, wn1 + wn2 + roll_t, wt1 + wt2 - roll_t


@_jit
def _norm_k(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * a[i]
    return math.sqrt(acc)


@_jit
def watch_fires(M, s, start, info):
    """Whether an event of surface_several.watch fires in a step from ``start`` to s: a shape not touching below the
    table, a contact's normal force not positive, a rolling contact's friction beyond μN, a Coulomb slide's slip
    turned past a right angle from the step's start."""
    par, r = M[0], M[2]
    shapes, modes, slips = acts(s)
    k = shapes.shape[0]
    x, Q = s[S_X:S_X + 3], _Q(s)
    for j in range(r.shape[0]):
        mine = False
        for i in range(k):
            mine = mine or shapes[i] == j
        if not mine and _gap(M, j, x, Q, info, s[S_T]) < 0:
            return True
    F, n = forces(M, s, shapes, modes, slips, info)
    shapes0, modes0, slips0 = acts(start)
    for i in range(k):
        N = _dot(F[i], n[i])
        if N < 0:
            return True
        if modes[i] == ROLLING:
            if par[P_MU] * N - _norm(F[i] - N * n[i]) < 0:
                return True
        elif par[P_VISCOUS] == 0.0:
            for i0 in range(shapes0.shape[0]):
                if shapes0[i0] != shapes[i]:
                    continue
                c0 = _contact(M, start, shapes[i], info)
                u0 = _tangent(c0[4], c0[6])
                ref = u0 if _norm(u0) > par[P_SLIP_RTOL] * _speed_scale(par, start) else -slips0[i0]
                c = _contact(M, s, shapes[i], info)
                if _dot(_tangent(c[4], c[6]), ref) < 0:
                    return True
    return False


@_jit
def several(s):
    """Whether the state has several touching shapes."""
    return s[S_NEXTRA] > 0 and int(s[S_MODE]) != 0

