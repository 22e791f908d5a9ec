"""The compiled (numba) model and step of a body on a table, the method of :mod:`.surface` (the run that calls
them, :func:`.surface_run_kernels.run_chunk`, is :mod:`.surface_run`'s twin).

:mod:`.surface` is the reference — its docstring has the physics; here every function carries the name of the
method it follows and does the same arithmetic on plain arrays, so that a whole run — its events located by Brent's
method (the impact kernels' reverse-communication :func:`..impact_kernels._brent`), its steps halved by the energy
check, its impacts — goes without Python between steps. The two agree to round-off (tested to 1e-12, the same events).

Layouts (all float64):

- a state ``s`` (24,): t, x (3), v (3), L (3), Q (9, rows the principal axes), mode (:data:`APART`, …), touching
  shape (−1 apart), slip (3);
- the model ``M``, a tuple (par, b, r, ax, rim, plan, e1): ``par`` the scalars (:data:`P_MASS`, …), b (S,3) shape
  centres and ax (S,3) rims' unit axes (zero: a sphere) in principal coordinates, r (S,) radii, rim (S,) 1.0 for a
  rim, plan (3,3) the free-turn sub-steps (axis, fraction of h, coefficient; a negative axis ends the plan), e1
  (S,3) a unit vector in each rim's plane (principal coordinates).

A failure (Painlevé's paradox, a rim lying flat, …) stops the chunk with a status code (:data:`OK`, …) and leaves
the message to the caller, which reruns the numpy reference to report it in its words.
"""

from __future__ import annotations

import math

import numpy as np

from ...jit import numba as _numba
from .surface_layout import (
    APART,
    P_CLOSE_RATE,
    P_DR,
    P_DS,
    P_G,
    P_INV,
    P_INV1,
    P_MASS,
    P_MU,
    P_N,
    P_Q,
    P_REACH,
    P_REGION_RTOL,
    P_RIM_ITER,
    P_ROT_RTOL,
    P_SLIP_RTOL,
    P_VISCOUS,
    P_WA,
    P_WC,
    P_WH,
    P_WKIND,
    P_WR,
    P_WROT,
    P_WSIGN,
    ROLLING,
    S_L,
    S_MODE,
    S_Q,
    S_SHAPE,
    S_SLIP,
    S_T,
    S_V,
    S_X,
    WALL_BOX,
    WALL_CYLINDER,
    WALL_PLANE,
    WALL_SPHERE,
)

nb = _numba()
if nb is None:
    raise ImportError("numba is not available (not installed, or PEM_NUMBA=0)")

_jit = nb.njit(cache=True, error_model="numpy")

_EPS = 2.220446049250313e-16


@_jit
def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@_jit
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@_jit
def _norm(a):
    return math.sqrt(_dot(a, a))


@_jit
def _mv(A, x):
    """A @ x."""
    out = np.zeros(3)
    for i in range(3):
        out[i] = A[i, 0] * x[0] + A[i, 1] * x[1] + A[i, 2] * x[2]
    return out


@_jit
def _vm(x, A):
    """x @ A."""
    out = np.zeros(3)
    for j in range(3):
        out[j] = x[0] * A[0, j] + x[1] * A[1, j] + x[2] * A[2, j]
    return out


@_jit
def _mm(A, B):
    """A @ B of 3×3 matrices."""
    out = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]
    return out


@_jit
def _skew(a):
    """[a]×: [a]× b = a × b."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


@_jit
def _solve(A, y):
    """A⁻¹ y of a 3×3 system (Gaussian elimination with partial pivoting, as LAPACK's LU)."""
    a = A.copy()
    b = y.copy()
    for c in range(3):
        p = c
        for i in range(c + 1, 3):
            if abs(a[i, c]) > abs(a[p, c]):
                p = i
        if p != c:
            for j in range(3):
                a[c, j], a[p, j] = a[p, j], a[c, j]
            b[c], b[p] = b[p], b[c]
        for i in range(c + 1, 3):
            f = a[i, c] / a[c, c]
            for j in range(c, 3):
                a[i, j] -= f * a[c, j]
            b[i] -= f * b[c]
    x = np.zeros(3)
    for i in range(2, -1, -1):
        acc = b[i]
        for j in range(i + 1, 3):
            acc -= a[i, j] * x[j]
        x[i] = acc / a[i, i]
    return x


@_jit
def _Q(s):
    return s[S_Q:S_Q + 9].copy().reshape((3, 3))


@_jit
def _W(par, Q):
    """Surface.W: Qᵀ diag(1/I) Q."""
    W = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            acc = 0.0
            for k in range(3):
                acc += Q[k, i] * par[P_INV + k] * Q[k, j]
            W[i, j] = acc
    return W


@_jit
def _wall(par, X):
    """The table's signed distance f (negative on the allowed side), its gradient (3,) and Hessian (3,3) at X: the
    formulas of walls.Plane, Sphere, Cylinder and Box (:data:`WALL_PLANE`, …; inside or outside)."""
    kind = int(par[P_WKIND])
    sign = par[P_WSIGN]
    grad = np.zeros(3)
    H = np.zeros((3, 3))
    if kind == WALL_PLANE:
        n = par[P_N:P_N + 3]
        return -_dot(n, X - par[P_Q:P_Q + 3]), -n, H
    if kind == WALL_SPHERE or kind == WALL_CYLINDER:
        rel = X - par[P_WC:P_WC + 3]
        if kind == WALL_CYLINDER:
            a = par[P_WA:P_WA + 3]
            rel = rel - _dot(a, rel) * a
        d = _norm(rel)
        f = sign * (d - par[P_WR])
        if d > 0:
            u = rel / d
            grad = sign * u
            for i in range(3):
                for j in range(3):
                    H[i, j] = -u[i] * u[j]
                H[i, i] += 1.0
            if kind == WALL_CYLINDER:
                a = par[P_WA:P_WA + 3]
                for i in range(3):
                    for j in range(3):
                        H[i, j] -= a[i] * a[j]
            H = (sign / d) * H
        return f, grad, H
    # a box: local coordinates y = R (X − c), q = |y| − h
    R = par[P_WROT:P_WROT + 9].copy().reshape((3, 3))
    y = _mv(R, X - par[P_WC:P_WC + 3])
    q = np.abs(y) - par[P_WH:P_WH + 3]
    sg = np.where(y >= 0, 1.0, -1.0)
    kmax = int(np.argmax(q))
    gy = np.zeros(3)
    if par[P_WSIGN] > 0:                         # a container
        gy[kmax] = sg[kmax]
        return q[kmax], _vm(gy, R), H
    m = np.maximum(q, 0.0)
    nm = _norm(m)
    f = -(nm + min(q[kmax], 0.0))
    if nm > 0:
        gy = sg * m / nm
        u = m / nm
        Hy = np.zeros((3, 3))
        for i in range(3):
            for j in range(3):
                Hy[i, j] = ((1.0 if (i == j and q[i] > 0) else 0.0) - u[i] * u[j]) / nm * sg[i] * sg[j]
        H = -_mm(_mm(R.T.copy(), Hy), R)
    else:
        gy[kmax] = sg[kmax]
    return f, -_vm(gy, R), H


@_jit
def _normal_at(par, C, info, t):
    """Surface.normal_at: the table's unit normal towards the allowed side at its point nearest C."""
    if int(par[P_WKIND]) == WALL_PLANE:
        return par[P_N:P_N + 3].copy()
    g = _wall(par, C)[1]
    sn = _norm(g)
    if not sn > 0:
        info[0], info[1] = 7.0, t
        return np.array([0.0, 0.0, 1.0])
    return -g / sn


@_jit
def _rim_point(M, k, x, Q, info, t):
    """Surface._rim_point: (C, d, d', P, ∇f(P), H(P)) of rim k on a curved table; info[0] = 1 (lying flat)."""
    par, b, r, ax = M[0], M[1], M[2], M[3]
    rk = r[k]
    C = x + _vm(b[k], Q)
    a = _vm(ax[k], Q)
    e1 = _vm(M[6][k], Q)
    e2 = _cross(a, e1)
    nC = _normal_at(par, C, info, t)
    m = nC - _dot(nC, a) * a
    sm = _norm(m)
    if not sm > 1e-9:
        info[0], info[1], info[2] = 1.0, t, k
        z = np.zeros(3)
        return C, z, z, C.copy(), z, np.zeros((3, 3))
    phi = math.atan2(-_dot(m, e2), -_dot(m, e1))
    for _ in range(int(par[P_RIM_ITER])):
        d = math.cos(phi) * e1 + math.sin(phi) * e2
        dp = math.cos(phi) * e2 - math.sin(phi) * e1
        P = C + rk * d
        f, gf, H = _wall(par, P)
        curvature = rk * _dot(dp, _mv(H, dp)) - _dot(gf, d)
        if not curvature < 0:
            break
        step = -_dot(gf, dp) / curvature
        phi += step
        if abs(step) <= 4 * _EPS:
            break
    d = math.cos(phi) * e1 + math.sin(phi) * e2
    dp = math.cos(phi) * e2 - math.sin(phi) * e1
    P = C + rk * d
    f, gf, H = _wall(par, P)
    return C, d, dp, P, gf, H


@_jit
def _lowest(M, k, x, Q, info, t):
    """Surface.lowest: (C, m, P); info[0] = 1 (a rim lying flat) on failure."""
    par, b, r, ax, rim = M[0], M[1], M[2], M[3], M[4]
    C = x + _vm(b[k], Q)
    if rim[k] == 0.0:
        n = _normal_at(par, C, info, t)
        return C, n, C - r[k] * n
    if int(par[P_WKIND]) != WALL_PLANE:
        C, d, dp, P, gf, H = _rim_point(M, k, x, Q, info, t)
        sg = _norm(gf)
        return C, -gf / (sg if sg > 0 else 1.0), P
    n = par[P_N:P_N + 3]
    a = _vm(ax[k], Q)
    m = n - _dot(n, a) * a
    s = _norm(m)
    if not s > 1e-9:
        info[0], info[1], info[2] = 1.0, t, k
        return C, m, C.copy()
    return C, m, C - (r[k] / s) * m


@_jit
def _gap(M, k, x, Q, info, t):
    """Surface.gap."""
    par = M[0]
    if int(par[P_WKIND]) == WALL_PLANE:
        P = _lowest(M, k, x, Q, info, t)[2]
        return _dot(P - par[P_Q:P_Q + 3], par[P_N:P_N + 3])
    if M[4][k] != 0.0:
        return -_wall(par, _rim_point(M, k, x, Q, info, t)[3])[0]
    return -_wall(par, x + _vm(M[1][k], Q))[0] - M[2][k]


@_jit
def _contact(M, s, k, info):
    """Surface.contact: (C, ρ, W, ω, u, Ṗ − v, n, curv)."""
    par, r, ax, rim = M[0], M[2], M[3], M[4]
    x, v, L, Q = s[S_X:S_X + 3], s[S_V:S_V + 3], s[S_L:S_L + 3], _Q(s)
    if rim[k] != 0.0 and int(par[P_WKIND]) != WALL_PLANE:     # Surface._rim_touch
        C, d, dp, P, gf, H = _rim_point(M, k, x, Q, info, s[S_T])
        rho = P - x
        W = _W(par, Q)
        w = _mv(W, L)
        u = v + _cross(w, rho)
        if info[0] != 0.0:
            return C, rho, W, w, u, np.zeros(3), np.array([0.0, 0.0, 1.0]), 0.0
        phidot = -(_dot(_mv(H, u), dp) + _dot(gf, _cross(w, dp))) / (r[k] * _dot(dp, _mv(H, dp)) - _dot(gf, d))
        moving = _cross(w, rho) + (r[k] * phidot) * dp
        curv = _dot(_mv(H, v + moving), u)
        return C, rho, W, w, u, moving, -gf / _norm(gf), curv
    C, m, P = _lowest(M, k, x, Q, info, s[S_T])
    rho = P - x
    W = _W(par, Q)
    w = _mv(W, L)
    u = v + _cross(w, rho)
    moving = _cross(w, C - x)
    n = m.copy() if rim[k] == 0.0 else par[P_N:P_N + 3].copy()
    curv = 0.0
    if int(par[P_WKIND]) != WALL_PLANE:
        HdC = _mv(_wall(par, C)[2], v + moving)
        moving = moving + r[k] * HdC
        curv = _dot(HdC, u)
    if rim[k] != 0.0 and info[0] == 0.0:
        a = _vm(ax[k], Q)
        da = _cross(w, a)
        dm = -_dot(n, da) * a - _dot(n, a) * da
        sm = _norm(m)
        mh = m / sm
        moving = moving - (r[k] / sm) * (dm - _dot(dm, mh) * mh)
    return C, rho, W, w, u, moving, n, curv


@_jit
def _coupling(par, W, rho_i, rho_j):
    """surface_several.coupling: K_ij = 𝟙/M − [ρ_i]× W [ρ_j]×, the acceleration of contact point i per force at j."""
    K = -_mm(_mm(_skew(rho_i), W), _skew(rho_j))
    for a in range(3):
        K[a, a] += 1.0 / par[P_MASS]
    return K


@_jit
def _K(par, W, rho):
    """Surface.K: 𝟙/M − [ρ]× W [ρ]×, the coupling of a contact point with itself."""
    return _coupling(par, W, rho, rho)


@_jit
def _speed_scale(par, s):
    w = _mv(_W(par, _Q(s)), s[S_L:S_L + 3])
    g = par[P_G:P_G + 3]
    return _norm(s[S_V:S_V + 3]) + _norm(w) * par[P_REACH] + math.sqrt(_norm(g) * par[P_REACH])


@_jit
def _energy(par, s):
    v, L = s[S_V:S_V + 3], s[S_L:S_L + 3]
    w = _mv(_W(par, _Q(s)), L)
    return 0.5 * par[P_MASS] * _dot(v, v) + 0.5 * _dot(L, w) - par[P_MASS] * _dot(par[P_G:P_G + 3], s[S_X:S_X + 3])


@_jit
def _energy_scale(par, s):
    v, L = s[S_V:S_V + 3], s[S_L:S_L + 3]
    w = _mv(_W(par, _Q(s)), L)
    return (0.5 * par[P_MASS] * _dot(v, v) + 0.5 * _dot(L, w)
            + par[P_MASS] * _norm(par[P_G:P_G + 3]) * par[P_REACH])


@_jit
def _tangent(u, n):
    return u - _dot(u, n) * n


@_jit
def _friction_vector(par, s, slip, u, n):
    """surface_several.friction_vector: f (3,) of a slide, its friction force N·f (Coulomb: μ t̂, t̂ = −û_t or
    ``slip`` (3,) when the slip is round-off; gliding: −μ u_t); a single contact passes its state's slip."""
    ut = _tangent(u, n)
    if par[P_VISCOUS] != 0.0:
        return -par[P_MU] * ut
    sp = _norm(ut)
    if sp > par[P_SLIP_RTOL] * _speed_scale(par, s):
        return par[P_MU] * (-ut / sp)
    return par[P_MU] * slip


@_jit
def _normal_mass(K, D, n, info, t):
    """Surface._normal_mass: n·K·D; info[0] = 2 (Painlevé) when not positive."""
    den = _dot(n, _mv(K, D))
    if not den > 0:
        info[0], info[1] = 2.0, t
        return 1.0
    return den


@_jit
def _solve_n(A, y):
    """A⁻¹ y of a small square system (Gaussian elimination with partial pivoting, as LAPACK's LU)."""
    m = y.shape[0]
    a = A.copy()
    b = y.copy()
    for c in range(m):
        p = c
        for i in range(c + 1, m):
            if abs(a[i, c]) > abs(a[p, c]):
                p = i
        if p != c:
            for j in range(m):
                a[c, j], a[p, j] = a[p, j], a[c, j]
            b[c], b[p] = b[p], b[c]
        for i in range(c + 1, m):
            f = a[i, c] / a[c, c]
            for j in range(c, m):
                a[i, j] -= f * a[c, j]
            b[i] -= f * b[c]
    x = np.zeros(m)
    for i in range(m - 1, -1, -1):
        acc = b[i]
        for j in range(i + 1, m):
            acc -= a[i, j] * x[j]
        x[i] = acc / a[i, i]
    return x


@_jit
def _rolling_solve(par, n, rho, W, u, wr, w, reversal):
    """Surface._rolling_solve: (J, H) keeping a rolling contact still, with the resistance's couples (held or
    against the rotation)."""
    K = _K(par, W, rho)
    dr, ds = par[P_DR], par[P_DS]
    if dr == 0.0 and ds == 0.0:
        return -_solve(K, u), np.zeros(3)
    if abs(n[0]) < 0.9:
        t1 = _cross(n, np.array([1.0, 0.0, 0.0]))
    else:
        t1 = _cross(n, np.array([0.0, 1.0, 0.0]))
    t1 = t1 / _norm(t1)
    t2 = _cross(n, t1)
    wn = _dot(w, n)
    wt = w - wn * n
    tiny = par[P_ROT_RTOL] * (_norm(w) + math.sqrt(_norm(par[P_G:P_G + 3]) / par[P_REACH]))
    rolls = _norm(wt) > tiny
    spins = abs(wn) > tiny
    # groups: 0 roll (axes t1, t2), 1 spin (axis n)
    use = np.array([dr > 0.0, ds > 0.0])
    held = np.array([not rolls, not spins])
    free = np.zeros((2, 3))
    before = np.zeros((2, 3))
    before[0] = wt
    before[1] = wn * n
    if rolls:
        free[0] = -dr * wt / _norm(wt)
    if spins:
        free[1] = -ds * (1.0 if wn > 0 else -1.0) * n
    delta = np.array([dr, ds])
    ax = np.zeros((3, 3))
    ax[0], ax[1], ax[2] = t1, t2, n
    grp = np.array([0, 0, 1])
    S = _skew(rho)
    J = np.zeros(3)
    H = np.zeros(3)
    for _ in range(2 * (int(use[0]) + int(use[1])) + 2):
        r_free = np.zeros(3)
        for i in range(2):
            if use[i] and not held[i]:
                r_free += free[i]
        idx = np.zeros(3, dtype=np.int64)
        m = 0
        for j in range(3):
            if use[grp[j]] and held[grp[j]]:
                idx[m] = j
                m += 1
        A = np.zeros((3 + m, 3 + m))
        b = np.zeros(3 + m)
        SWr = _mv(S, _mv(W, r_free))
        for i in range(3):
            for j in range(3):
                A[i, j] = K[i, j] - SWr[i] * n[j]
            b[i] = -u[i]
        WS = _mm(W, S)
        Wr = _mv(W, r_free)
        for jj in range(m):
            e = ax[idx[jj]]
            col = -_mv(S, _mv(W, e))
            eWS = _vm(e, WS)
            eWr = _dot(e, Wr)
            for i in range(3):
                A[i, 3 + jj] = col[i]
                A[3 + jj, i] = eWS[i] + eWr * n[i]
            for kk in range(m):
                A[3 + jj, 3 + kk] = _dot(e, _mv(W, ax[idx[kk]]))
            b[3 + jj] = -_dot(e, wr)
        z = _solve_n(A, b)
        J = z[:3].copy()
        jn = _dot(J, n)
        H = jn * r_free
        for jj in range(m):
            H = H + z[3 + jj] * ax[idx[jj]]
        w2 = wr + _mv(W, _mv(S, J) + H)
        changed = False
        for i in range(2):
            if not use[i]:
                continue
            if held[i]:
                hg = np.zeros(3)
                for jj in range(m):
                    if grp[idx[jj]] == i:
                        hg = hg + z[3 + jj] * ax[idx[jj]]
                if _norm(hg) > delta[i] * max(jn, 0.0):
                    held[i] = False
                    free[i] = delta[i] * hg / _norm(hg)
                    changed = True
            elif reversal:
                w2n = _dot(w2, n)
                after = w2 - w2n * n if i == 0 else w2n * n
                if _dot(after, before[i]) < 0:
                    held[i] = True
                    changed = True
        if not changed:
            break
    return J, H


@_jit
def _rolling_force(M, s, info):
    """Surface.rolling_force: (F, C)."""
    par = M[0]
    C, rho, W, w, u, moving, n, curv = _contact(M, s, int(s[S_SHAPE]), info)
    wxL = _cross(w, s[S_L:S_L + 3])
    a0 = par[P_G:P_G + 3] - _cross(_mv(W, wxL), rho) + _cross(w, moving)
    return _rolling_solve(par, n, rho, W, a0, -_mv(W, wxL), w, False)


@_jit
def _force(M, s, mode, info):
    """Surface.force: the table's force F (3,) by the constraint of ``mode``."""
    par = M[0]
    if mode == ROLLING:
        return _rolling_force(M, s, info)[0]
    C, rho, W, w, u, moving, n, curv = _contact(M, s, int(s[S_SHAPE]), info)
    a0 = par[P_G:P_G + 3] - _cross(_mv(W, _cross(w, s[S_L:S_L + 3])), rho) + _cross(w, moving)
    K = _K(par, W, rho)
    D = n + _friction_vector(par, s, s[S_SLIP:S_SLIP + 3], u, n)
    return ((curv - _dot(n, a0)) / _normal_mass(K, D, n, info, s[S_T])) * D


@_jit
def _impulse(par, v, L, rho, W, J, n, H):
    """Surface._impulse: (v, L, work_n, work_t, work_c)."""
    w0 = _mv(W, L)
    u0 = v + _cross(w0, rho)
    v1 = v + J / par[P_MASS]
    L1 = L + _cross(rho, J) + H
    w1 = _mv(W, L1)
    u1 = v1 + _cross(w1, rho)
    um = 0.5 * (u0 + u1)
    wn = _dot(J, n) * _dot(um, n)
    return v1, L1, wn, _dot(J, um) - wn, 0.5 * _dot(H, w0 + w1)


@_jit
def _free_turn(M, Q, L, h):
    """integrators.free_turn of one body: the frame after the free rotation over h."""
    par, plan = M[0], M[5]
    L2 = _dot(L, L)
    norm = math.sqrt(L2)
    th = (h * par[P_INV1]) * norm
    if norm > 0:
        a = math.sin(th) / norm
        b = (1.0 - math.cos(th)) / L2
    else:
        a = h * par[P_INV1]
        b = 0.5 * (h * par[P_INV1]) ** 2
    K = _skew(L)
    QK = _mm(Q, K)
    out = Q - a * QK + b * _mm(QK, K)
    for p in range(3):
        k = int(plan[p, 0])
        if k < 0:
            break
        th = (plan[p, 1] * h) * _dot(out[k], L) * plan[p, 2]
        c, sn = math.cos(th), math.sin(th)
        j, m = (k + 1) % 3, (k + 2) % 3
        qj = out[j].copy()
        qm = out[m].copy()
        out[j] = c * qj + sn * qm
        out[m] = c * qm - sn * qj
    return out


@_jit
def _landing_target(par, gap0, h, speed):
    """surface_common.landing_target: the gap a step of length h ends at, for a shape starting gap0 off the table."""
    c = par[P_CLOSE_RATE] * speed * h
    return gap0 - min(max(gap0, -c), c)


@_jit
def _land(M, s, k, lam, D, Jt, H1, v0, rho, h, target, info):
    """The gap, less ``target`` (:func:`_landing_target`), at the end of the flight after the first kick λ D + Jt
    and the couple impulse H1 (Surface.step's ``land``)."""
    par = M[0]
    J = lam * D + Jt
    v1 = v0 + J / par[P_MASS]
    L1 = s[S_L:S_L + 3] + _cross(rho, J) + H1
    x1 = s[S_X:S_X + 3] + h * v1
    Q1 = _free_turn(M, _Q(s), L1, h)
    return _gap(M, k, x1, Q1, info, s[S_T] + h) - target, x1, Q1, L1


@_jit
def _after_gliding_kick(mu, K, n, u, lam):
    """(n·u⁺, u⁺) after the gliding kick λ(n − μu⁺): (𝟙 + μλK) u⁺ = u + λ K n (Surface._gliding_kick)."""
    A = np.eye(3) + (mu * lam) * K
    up = _solve_n(A, u + lam * _mv(K, n))
    return _dot(n, up), up


@_jit
def _gliding_kick(mu, K, n, u, lam):
    """Surface._gliding_kick: the second kick of a gliding slide, implicit in the slip (secant on λ)."""
    la = lam
    ga, _ = _after_gliding_kick(mu, K, n, u, la)
    lb = lam * (1.0 + 1e-6) + 1e-300
    gb, up = _after_gliding_kick(mu, K, n, u, lb)
    for _ in range(30):
        if gb == ga:
            break
        lc = lb - gb * (lb - la) / (gb - ga)
        la, ga = lb, gb
        lb = lc
        gb, up = _after_gliding_kick(mu, K, n, u, lb)
        if gb == 0.0 or abs(lb - la) <= 4 * _EPS * abs(lb):
            break
    return lb * (n - mu * up)


@_jit
def _step(M, s, h, info):
    """Surface.step: (new state, normal work, friction work)."""
    par = M[0]
    g = par[P_G:P_G + 3]
    out = s.copy()
    mode = int(s[S_MODE])
    if mode == APART:
        v = s[S_V:S_V + 3] + 0.5 * h * g
        out[S_X:S_X + 3] = s[S_X:S_X + 3] + h * v
        out[S_Q:S_Q + 9] = _free_turn(M, _Q(s), s[S_L:S_L + 3], h).ravel()
        out[S_V:S_V + 3] = v + 0.5 * h * g
        out[S_T] = s[S_T] + h
        out[S_MODE], out[S_SHAPE] = APART, -1.0
        return out, 0.0, 0.0
    k = int(s[S_SHAPE])
    Mass = par[P_MASS]
    C, rho, W, w, u_, mv_, n, curv_ = _contact(M, s, k, info)
    v0 = s[S_V:S_V + 3] + 0.5 * h * g
    u = v0 + _cross(w, rho)
    H1 = np.zeros(3)
    if mode == ROLLING:
        F, Cc = _rolling_force(M, s, info)
        D = n.copy()
        Jt = 0.5 * h * (F - _dot(F, n) * n)
        H1 = 0.5 * h * Cc
        f1 = np.zeros(3)
    else:
        F = _force(M, s, mode, info)
        # gliding friction at the velocity before gravity's half kick (Surface.step)
        f1 = _friction_vector(par, s, s[S_SLIP:S_SLIP + 3], u_ if par[P_VISCOUS] != 0.0 else u, n)
        D = n + f1
        Jt = np.zeros(3)
    if info[0] != 0.0:
        return out, 0.0, 0.0
    target = _landing_target(par, _gap(M, k, s[S_X:S_X + 3], _Q(s), info, s[S_T]), h, _speed_scale(par, s))
    la = 0.5 * h * _dot(F, n)
    ga = _land(M, s, k, la, D, Jt, H1, v0, rho, h, target, info)[0]
    lb = la + 1e-6 * max(abs(la), 0.5 * h * Mass * _norm(g), 1e-300)
    gb = _land(M, s, k, lb, D, Jt, H1, v0, rho, h, target, info)[0]
    for _ in range(60):
        if gb == ga:
            break
        lc = lb - gb * (lb - la) / (gb - ga)
        la, ga = lb, gb
        lb = lc
        gb = _land(M, s, k, lc, D, Jt, H1, v0, rho, h, target, info)[0]
        if gb == 0.0 or abs(lb - la) <= 4 * _EPS * abs(lb):
            break
    lam = lb
    J1 = lam * D + Jt
    _, x1, Q1, L1 = _land(M, s, k, lam, D, Jt, H1, v0, rho, h, target, info)
    v1, _, wn1, wt1, wc1 = _impulse(par, v0, s[S_L:S_L + 3], rho, W, J1, n, H1)
    if info[0] != 0.0:
        return out, 0.0, 0.0
    v2 = v1 + 0.5 * h * g
    out[S_T] = s[S_T] + h
    out[S_X:S_X + 3] = x1
    out[S_V:S_V + 3] = v2
    out[S_L:S_L + 3] = L1
    out[S_Q:S_Q + 9] = Q1.ravel()
    _, rho2, W2, _, u2, _, n2, _ = _contact(M, out, k, info)
    K2 = _K(par, W2, rho2)
    H2 = np.zeros(3)
    if mode == ROLLING:
        w2 = _mv(W2, L1)
        J2, H2 = _rolling_solve(par, n2, rho2, W2, v2 + _cross(w2, rho2), w2, w2, True)
    else:
        f2 = _friction_vector(par, out, out[S_SLIP:S_SLIP + 3], u2, n2)
        if par[P_VISCOUS] != 0.0 or _dot(f2, f1) >= 0:
            D2 = n2 + f2
        else:
            D2 = n2 + f1
        J2 = (-_dot(n2, u2) / _normal_mass(K2, D2, n2, info, out[S_T])) * D2
        if par[P_VISCOUS] != 0.0:
            J2 = _gliding_kick(par[P_MU], K2, n2, u2, _dot(J2, n2))
    v3, L3, wn2, wt2, wc2 = _impulse(par, v2, L1, rho2, W2, J2, n2, H2)
    out[S_V:S_V + 3] = v3
    out[S_L:S_L + 3] = L3
    # the step's energy change is W(J₁) + W(J₂) − (h/2) g·J₁ (Surface.step)
    J1n = _dot(J1, n)
    wn1 -= 0.5 * h * _dot(g, n) * J1n
    wt1 -= 0.5 * h * _dot(g, J1 - J1n * n)
    if mode == ROLLING:     # the constraint's work, not friction's; the resistance's couples' (Surface.step)
        return out, wn1 + wn2 + wt1 + wt2, wc1 + wc2
    return out, wn1 + wn2, wt1 + wt2


@_jit
def _watch(M, s, start, info):
    """Surface.watch: (S+5,) event values, positive before each event (inf where none is watched): impacts of
    shapes 0…S−1 (not the touching one), lift-off, slip (rolling) or stick (Coulomb sliding), then a block's three
    region coordinates (step boundaries only)."""
    par, r = M[0], M[2]
    S = r.shape[0]
    out = np.full(S + 5, np.inf)
    x, Q = s[S_X:S_X + 3], _Q(s)
    shape = int(s[S_SHAPE])
    for k in range(S):
        if k != shape:
            out[k] = _gap(M, k, x, Q, info, s[S_T])
    mode = int(s[S_MODE])
    if mode == APART:
        return out
    c = _contact(M, s, shape, info)
    n = c[6]
    F = _force(M, s, mode, info)
    N = _dot(F, n)
    out[S] = N
    if mode == ROLLING:
        out[S + 1] = par[P_MU] * N - _norm(F - N * n)
    elif par[P_VISCOUS] == 0.0:
        c0 = _contact(M, start, int(start[S_SHAPE]), info)
        u0 = _tangent(c0[4], c0[6])
        if _norm(u0) > par[P_SLIP_RTOL] * _speed_scale(par, start):
            ref = u0
        else:
            ref = -start[S_SLIP:S_SLIP + 3]
        out[S + 1] = _dot(_tangent(c[4], n), ref)
    if int(par[P_WKIND]) == WALL_BOX and par[P_WSIGN] < 0:
        q = _regions(par, c[0])
        q0 = _regions(par, _contact(M, start, int(start[S_SHAPE]), info)[0])
        for i in range(3):
            if abs(q0[i]) > par[P_REGION_RTOL] * r[shape]:
                out[S + 2 + i] = q[i] * (1.0 if q0[i] > 0 else -1.0)
    return out


@_jit
def _regions(par, C):
    """Surface.regions of a block: |y| − h, y = R (C − c)."""
    R = par[P_WROT:P_WROT + 9].copy().reshape((3, 3))
    return np.abs(_mv(R, C - par[P_WC:P_WC + 3])) - par[P_WH:P_WH + 3]
