"""Compiled impacts (the kernels' twin of :mod:`.contact.events` and :mod:`.contact.impulses`): an impact's
step located by Brent's method, the impulses with Coulomb friction in sweeps, held contacts and their lift-offs."""

from __future__ import annotations

import numpy as np

from . import brent
from .broad_kernels import _pair_gap, _place_spheres
from .kernel_flags import (
    CONTACT,
    EV_IMPACT,
    EV_LIFT,
    EV_REST,
    EVENTS_FULL,
    OK,
    WALL_CYLINDER,
    WALL_PLANE,
    WALL_SPHERE,
    _jit_borrowed,
    _jit_inline,
)
from .step_kernels import _copy_state, _omega_one_or_hinge
from .torque_kernels import _skew

#: float64's ε (impulses.EPS): the rounding of an impact's energy terms
EPS = float(np.finfo(np.float64).eps)

# ------------------------------------------------------------------ impacts in the kernel (contacts._advance_step)

_brent = _jit_borrowed(brent.step)
_brent_fill = _jit_borrowed(brent.start)


@_jit_borrowed
def _brent_start(bs, a, b, fa, fb):
    """:func:`.brent.start` and its first step on [a, b], as the impact search and the table ask: side "a", xtol 0,
    200 iterations (events.brent's defaults); ``bs`` (brent.STATE,)."""
    done, t = _brent_fill(bs, a, b, fa, fb, 0.0, 0.0, 200.0)
    if done:
        return done, t
    return _brent(bs, fb)

@_jit_borrowed
def _wall_normal(C, w, x0, x1, x2):
    """The unit normal of static wall w at x into its forbidden side (walls.Wall.normal: ∇f/|∇f|), and whether
    it has one (a zero gradient: the numpy driver raises)."""
    kind = C.wall_kind[w]
    p0, p1, p2 = x0 - C.wall_point[w, 0], x1 - C.wall_point[w, 1], x2 - C.wall_point[w, 2]
    if kind == WALL_PLANE:
        n0, n1, n2 = -C.wall_dir[w, 0], -C.wall_dir[w, 1], -C.wall_dir[w, 2]
    elif kind == WALL_SPHERE or kind == WALL_CYLINDER:
        if kind == WALL_CYLINDER:
            a0, a1, a2 = C.wall_dir[w, 0], C.wall_dir[w, 1], C.wall_dir[w, 2]
            r0 = (1.0 - a0 * a0) * p0 + (-(a0 * a1)) * p1 + (-(a0 * a2)) * p2
            r1 = (-(a1 * a0)) * p0 + (1.0 - a1 * a1) * p1 + (-(a1 * a2)) * p2
            r2 = (-(a2 * a0)) * p0 + (-(a2 * a1)) * p1 + (1.0 - a2 * a2) * p2
            p0, p1, p2 = r0, r1, r2
        d = np.sqrt(p0 * p0 + p1 * p1 + p2 * p2)
        if not d > 0.0:
            return 0.0, 0.0, 0.0, False
        sg = C.wall_sign[w]
        n0, n1, n2 = sg * p0 / d, sg * p1 / d, sg * p2 / d
    else:  # box: y = R (x − c), q = |y| − h
        y0 = C.wall_axes[w, 0, 0] * p0 + C.wall_axes[w, 0, 1] * p1 + C.wall_axes[w, 0, 2] * p2
        y1 = C.wall_axes[w, 1, 0] * p0 + C.wall_axes[w, 1, 1] * p1 + C.wall_axes[w, 1, 2] * p2
        y2 = C.wall_axes[w, 2, 0] * p0 + C.wall_axes[w, 2, 1] * p1 + C.wall_axes[w, 2, 2] * p2
        q0, q1, q2 = abs(y0) - C.wall_half[w, 0], abs(y1) - C.wall_half[w, 1], abs(y2) - C.wall_half[w, 2]
        s0 = 1.0 if y0 >= 0 else -1.0
        s1 = 1.0 if y1 >= 0 else -1.0
        s2 = 1.0 if y2 >= 0 else -1.0
        m0, m1, m2 = max(q0, 0.0), max(q1, 0.0), max(q2, 0.0)
        nm = np.sqrt(m0 * m0 + m1 * m1 + m2 * m2)
        g0 = g1 = g2 = 0.0
        if C.wall_sign[w] < 0 and nm > 0:
            g0, g1, g2 = s0 * m0 / nm, s1 * m1 / nm, s2 * m2 / nm
        else:  # a container, or inside an obstacle: the face of the largest q (the first of equal ones)
            k = 0 if (q0 >= q1 and q0 >= q2) else (1 if q1 >= q2 else 2)
            if k == 0:
                g0 = s0
            elif k == 1:
                g1 = s1
            else:
                g2 = s2
        sg = 1.0 if C.wall_sign[w] > 0 else -1.0
        n0 = sg * (C.wall_axes[w, 0, 0] * g0 + C.wall_axes[w, 1, 0] * g1 + C.wall_axes[w, 2, 0] * g2)
        n1 = sg * (C.wall_axes[w, 0, 1] * g0 + C.wall_axes[w, 1, 1] * g1 + C.wall_axes[w, 2, 1] * g2)
        n2 = sg * (C.wall_axes[w, 0, 2] * g0 + C.wall_axes[w, 1, 2] * g1 + C.wall_axes[w, 2, 2] * g2)
    nn = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    if not nn > 0.0:
        return 0.0, 0.0, 0.0, False
    return n0 / nn, n1 / nn, n2 / nn, True

@_jit_borrowed
def _kinetic(M, Q, L, P, J, w):
    """Kinetic energy (J): ½(Σ ω·L + Σ |p|²/M) (contacts._kinetic); w (B,3) scratch, left holding ω."""
    rot, tr = 0.0, 0.0
    for b in range(L.shape[0]):
        _omega_one_or_hinge(M, Q, L, J, w, b)
        rot += w[b, 0] * L[b, 0] + w[b, 1] * L[b, 1] + w[b, 2] * L[b, 2]
        tr += (P[b, 0] * P[b, 0] + P[b, 1] * P[b, 1] + P[b, 2] * P[b, 2]) * (1.0 / M.mass[b])
    return 0.5 * (rot + tr)

@_jit_borrowed
def _point_velocity(bv, bw, X, b, c0, c1, c2):
    """Velocity (m/s) of the point c of body b (ContactBody.velocity_at): v + ω × (c − centre); b < 0: at rest."""
    if b < 0:
        return 0.0, 0.0, 0.0
    r0, r1, r2 = c0 - X[b, 0], c1 - X[b, 1], c2 - X[b, 2]
    return (bv[b, 0] + (bw[b, 1] * r2 - bw[b, 2] * r1), bv[b, 1] + (bw[b, 2] * r0 - bw[b, 0] * r2),
            bv[b, 2] + (bw[b, 0] * r1 - bw[b, 1] * r0))

@_jit_borrowed
def _knn(M, bW, X, moving, b, c0, c1, c2, n0, n1, n2):
    """n·K n of body b at the point c (ContactBody.K: K = −[r]× W [r]× (+ 𝟙/M translating)); 0 for b < 0."""
    if b < 0:
        return 0.0
    r0, r1, r2 = c0 - X[b, 0], c1 - X[b, 1], c2 - X[b, 2]
    # −[r]× W [r]× n = r × (W (r × n)): n·K n = (r × n)·W (r × n)
    u0, u1, u2 = r1 * n2 - r2 * n1, r2 * n0 - r0 * n2, r0 * n1 - r1 * n0
    out = 0.0
    for x in range(3):
        ux = u0 if x == 0 else (u1 if x == 1 else u2)
        out += ux * (bW[b, x, 0] * u0 + bW[b, x, 1] * u1 + bW[b, x, 2] * u2)
    if moving[b]:
        out += (n0 * n0 + n1 * n1 + n2 * n2) / M.mass[b]
    return out

@_jit_borrowed
def _kick_body(bv, bw, bW, X, moving, mass, b, c0, c1, c2, j0, j1, j2):
    """ContactBody.apply of the impulse j at c to body b's velocities bv, bw (nothing for b < 0)."""
    if b < 0:
        return
    r0, r1, r2 = c0 - X[b, 0], c1 - X[b, 1], c2 - X[b, 2]
    d0, d1, d2 = r1 * j2 - r2 * j1, r2 * j0 - r0 * j2, r0 * j1 - r1 * j0
    for x in range(3):
        bw[b, x] += bW[b, x, 0] * d0 + bW[b, x, 1] * d1 + bW[b, x, 2] * d2
    if moving[b]:
        bv[b, 0] += j0 / mass[b]
        bv[b, 1] += j1 / mass[b]
        bv[b, 2] += j2 / mass[b]

@_jit_borrowed
def _contact_at(C, p, S, gp, cf, k):
    """ContactModel.contact of pair p at the sphere centres S (spheres,3) with its gap gp (m): cf[k, 0:3] ← the
    contact point (m), cf[k, 3:6] ← the normal (lab, pointing onto side 1). Returns (side-1 body, side-2 body or
    −1 for a fixed one, whether the wall has a normal there)."""
    a, o = C.pair[p, 0], C.pair[p, 1]
    oa = C.owner[a]
    if p < C.spheres:
        ob = C.owner[o]
        n0, n1, n2 = S[a, 0] - S[o, 0], S[a, 1] - S[o, 1], S[a, 2] - S[o, 2]
        nn = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        n0, n1, n2 = n0 / nn, n1 / nn, n2 / nn
        f = C.radius[o] + 0.5 * gp
        cf[k, 0], cf[k, 1], cf[k, 2] = S[o, 0] + f * n0, S[o, 1] + f * n1, S[o, 2] + f * n2
        if oa < 0:  # the moving sphere is side 1
            cf[k, 3], cf[k, 4], cf[k, 5] = -n0, -n1, -n2
            return ob, -1, True
        cf[k, 3], cf[k, 4], cf[k, 5] = n0, n1, n2
        return oa, ob, True
    m0, m1, m2, ok = _wall_normal(C, o, S[a, 0], S[a, 1], S[a, 2])
    if not ok:
        return oa, -1, False
    r = C.radius[a]
    cf[k, 0], cf[k, 1], cf[k, 2] = S[a, 0] + r * m0, S[a, 1] + r * m1, S[a, 2] + r * m2
    cf[k, 3], cf[k, 4], cf[k, 5] = -m0, -m1, -m2
    return oa, -1, True

@_jit_borrowed
def _contact_bodies(M, Q, P, J, w, moving, ci, nc, bv, bw, bW, used):
    """contacts._contact_bodies for the nc contacts of ci: bv, bw (B,3) the velocities (m/s) and angular
    velocities (from w (B,3), which must hold ω: :func:`_kinetic` leaves it there) and bW (B,3,3) the lab inverse
    inertias about the centres of the bodies they touch (used (B,) marks them)."""
    for b in range(used.shape[0]):
        used[b] = False
    for k in range(nc):
        for side in range(2):
            b = ci[k, 1 + side]
            if b < 0 or used[b]:
                continue
            used[b] = True
            for x in range(3):
                bv[b, x] = P[b, x] / M.mass[b] if moving[b] else 0.0
                bw[b, x] = w[b, x]
            if M.hinged[b]:
                for x in range(3):
                    for y in range(3):
                        bW[b, x, y] = M.hinge_axis[b, x] * M.hinge_axis[b, y] / J[b]
            else:  # Qᵀ I⁺ Q (principal frames: the user's Uᵀ I⁺ U)
                for x in range(3):
                    for y in range(3):
                        acc = 0.0
                        for u in range(3):
                            acc += Q[b, u, x] * (M.inv_inertia[b, u, 0] * Q[b, 0, y] + M.inv_inertia[b, u, 1]
                                                 * Q[b, 1, y] + M.inv_inertia[b, u, 2] * Q[b, 2, y])
                        bW[b, x, y] = acc

@_jit_borrowed
def _point_speed(bv, bw, X, ci, cf, nc):
    """The largest speed (m/s) of either side's point at the nc contacts (impulses.resolve_contacts' scale)."""
    speed = 0.0
    for k in range(nc):
        c0, c1, c2 = cf[k, 0], cf[k, 1], cf[k, 2]
        v0, v1, v2 = _point_velocity(bv, bw, X, ci[k, 1], c0, c1, c2)
        u0, u1, u2 = _point_velocity(bv, bw, X, ci[k, 2], c0, c1, c2)
        speed = max(speed, np.sqrt(v0 * v0 + v1 * v1 + v2 * v2), np.sqrt(u0 * u0 + u1 * u1 + u2 * u2))
    return speed

@_jit_borrowed
def _add_K(M, bW, X, moving, b, c0, c1, c2, K):
    """K (3,3) += ContactBody.K of body b at the point c: −[r]× W [r]× (+ 𝟙/M translating); nothing for b < 0."""
    if b < 0:
        return
    r0, r1, r2 = c0 - X[b, 0], c1 - X[b, 1], c2 - X[b, 2]
    for x in range(3):
        for y in range(3):
            acc = 0.0
            for u in range(3):
                su = _skew(r0, r1, r2, x, u)
                if su == 0.0:
                    continue
                for v in range(3):
                    acc += su * bW[b, u, v] * _skew(r0, r1, r2, v, y)
            K[x, y] -= acc
        if moving[b]:
            K[x, x] += 1.0 / M.mass[b]

@_jit_borrowed
def _pinv_solve(A, V, d0, d1, d2):
    """The least-squares, least-norm solution x of A x = d for a symmetric A (3,3) (numpy.linalg.lstsq with
    rcond = 1e-12: singular values below 1e-12 of the largest count as zero): A is diagonalised in place by
    Jacobi's rotations (its eigenvectors into V (3,3)), x = Σ (v·d/λ) v over the eigenvalues kept."""
    for x in range(3):
        for y in range(3):
            V[x, y] = 1.0 if x == y else 0.0
    for _sweep in range(50):
        off = A[0, 1] * A[0, 1] + A[0, 2] * A[0, 2] + A[1, 2] * A[1, 2]
        diag = A[0, 0] * A[0, 0] + A[1, 1] * A[1, 1] + A[2, 2] * A[2, 2]
        if not off > 1e-36 * diag:
            break
        for pq in range(3):
            p, q = (0, 1) if pq == 0 else ((0, 2) if pq == 1 else (1, 2))
            apq = A[p, q]
            if apq == 0.0:
                continue
            theta = (A[q, q] - A[p, p]) / (2.0 * apq)
            t = 1.0 / (abs(theta) + np.sqrt(theta * theta + 1.0))
            if theta < 0.0:
                t = -t
            c = 1.0 / np.sqrt(t * t + 1.0)
            s = t * c
            for k in range(3):
                akp, akq = A[k, p], A[k, q]
                A[k, p], A[k, q] = c * akp - s * akq, s * akp + c * akq
            for k in range(3):
                apk, aqk = A[p, k], A[q, k]
                A[p, k], A[q, k] = c * apk - s * aqk, s * apk + c * aqk
            for k in range(3):
                vkp, vkq = V[k, p], V[k, q]
                V[k, p], V[k, q] = c * vkp - s * vkq, s * vkp + c * vkq
    top = max(abs(A[0, 0]), abs(A[1, 1]), abs(A[2, 2]))
    x0 = x1 = x2 = 0.0
    for i in range(3):
        lam = A[i, i]
        if not abs(lam) > 1e-12 * top:
            continue
        f = (V[0, i] * d0 + V[1, i] * d1 + V[2, i] * d2) / lam
        x0 += f * V[0, i]
        x1 += f * V[1, i]
        x2 += f * V[2, i]
    return x0, x1, x2

@_jit_borrowed
def _sum_K(M, bW, X, moving, i, j, c0, c1, c2, K):
    """K (3,3) ← K₁ + K₂ of bodies i and j at the point c (:func:`_add_K`; −1: a fixed side)."""
    for x in range(3):
        for y in range(3):
            K[x, y] = 0.0
    _add_K(M, bW, X, moving, i, c0, c1, c2, K)
    _add_K(M, bW, X, moving, j, c0, c1, c2, K)

@_jit_borrowed
def _friction_root(a1, a2):
    """impulses._friction_root: the largest s ∈ [0, 1] with a₂s² + a₁s ≤ 0 (a₂ ≥ 0)."""
    if a1 >= 0.0:
        return 0.0
    return min(-a1 / a2, 1.0) if a2 > 0.0 else 1.0

@_jit_borrowed
def _energy_change(K, vr0, vr1, vr2, J0, J1, J2):
    """The energy change's terms J·v_rel and ½ J·K J (J) of the impulse J at a contact of K (3,3), and K J."""
    k0 = K[0, 0] * J0 + K[0, 1] * J1 + K[0, 2] * J2
    k1 = K[1, 0] * J0 + K[1, 1] * J1 + K[1, 2] * J2
    k2 = K[2, 0] * J0 + K[2, 1] * J1 + K[2, 2] * J2
    return J0 * vr0 + J1 * vr1 + J2 * vr2, 0.5 * (J0 * k0 + J1 * k1 + J2 * k2), k0, k1, k2

@_jit_borrowed
def _dissipative(K, n0, n1, n2, vr0, vr1, vr2, e, J0, J1, J2):
    """impulses.dissipative_impulse: J when friction's part of it (J − J_f, J_f the frictionless impulse) adds no
    kinetic energy (beyond the rounding of the terms), else J_f + s (J − J_f) with the largest s ∈ [0, 1] for which
    it adds none, the root refined by one Newton step at J(s); K (3,3) = K₁ + K₂, n the unit normal, v_rel the
    relative velocity (m/s)."""
    vn = n0 * vr0 + n1 * vr1 + n2 * vr2
    m0 = K[0, 0] * n0 + K[0, 1] * n1 + K[0, 2] * n2
    m1 = K[1, 0] * n0 + K[1, 1] * n1 + K[1, 2] * n2
    m2 = K[2, 0] * n0 + K[2, 1] * n1 + K[2, 2] * n2
    jf = -(1.0 + e) * vn / (n0 * m0 + n1 * m1 + n2 * m2)
    a0 = 0.5 * (1.0 - e) * jf * vn
    jv, jkj, k0, k1, k2 = _energy_change(K, vr0, vr1, vr2, J0, J1, J2)
    # a gain within the rounding of its terms (|J|·|v_rel| and tr K·|J|² bound them) is none
    JJ = J0 * J0 + J1 * J1 + J2 * J2
    tol = 8.0 * EPS * (np.sqrt(JJ * (vr0 * vr0 + vr1 * vr1 + vr2 * vr2)) + (K[0, 0] + K[1, 1] + K[2, 2]) * JJ)
    if jv + jkj - a0 <= tol:
        return J0, J1, J2
    D0, D1, D2 = J0 - jf * n0, J1 - jf * n1, J2 - jf * n2
    a1 = D0 * (vr0 + jf * m0) + D1 * (vr1 + jf * m1) + D2 * (vr2 + jf * m2)
    a2 = 0.5 * (D0 * (k0 - jf * m0) + D1 * (k1 - jf * m1) + D2 * (k2 - jf * m2))
    s = _friction_root(a1, a2)
    J0, J1, J2 = jf * n0 + s * D0, jf * n1 + s * D1, jf * n2 + s * D2
    jv, jkj, k0, k1, k2 = _energy_change(K, vr0, vr1, vr2, J0, J1, J2)
    g = jv + jkj - a0
    dg = D0 * (vr0 + k0) + D1 * (vr1 + k1) + D2 * (vr2 + k2)
    if g > 0.0 and dg > 0.0:
        s = max(s - g / dg, 0.0)
        J0, J1, J2 = jf * n0 + s * D0, jf * n1 + s * D1, jf * n2 + s * D2
    return J0, J1, J2

@_jit_borrowed
def _friction_impulse(M, bW, X, moving, i, j, c0, c1, c2, n0, n1, n2, vr0, vr1, vr2, vn, e, mu, kw):
    """impulses.compute_impulse with Coulomb friction μ > 0 for an approaching contact (vn = n·v_rel < 0, v_rel
    the relative velocity): the sticking impulse solves (K₁+K₂) J = −e v_n n − v_rel (least squares); when its
    tangential part exceeds μ times its normal part, J = j (n + μ t̂) with j from the normal restitution; where
    that impulse would add kinetic energy, :func:`_dissipative` scales its friction down. Returns (J, ok); not ok
    where the normal impulse is ill-defined (n·K·(n + μ t̂) ≤ 0: Painlevé). kw (2,3,3) scratch."""
    K = kw[0]
    _sum_K(M, bW, X, moving, i, j, c0, c1, c2, K)
    # n·K·(n + μ t̂) for the sliding impulse, from K before the solve diagonalises it
    Kn0 = K[0, 0] * n0 + K[0, 1] * n1 + K[0, 2] * n2
    Kn1 = K[1, 0] * n0 + K[1, 1] * n1 + K[1, 2] * n2
    Kn2 = K[2, 0] * n0 + K[2, 1] * n1 + K[2, 2] * n2
    d0, d1, d2 = -e * vn * n0 - vr0, -e * vn * n1 - vr1, -e * vn * n2 - vr2
    J0, J1, J2 = _pinv_solve(K, kw[1], d0, d1, d2)
    jn = n0 * J0 + n1 * J1 + n2 * J2
    t0, t1, t2 = J0 - jn * n0, J1 - jn * n1, J2 - jn * n2
    tn = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    if tn > mu * jn:
        t0, t1, t2 = t0 / tn, t1 / tn, t2 / tn
        # n·K·(n + μ t) = (K n)·(n + μ t): K is symmetric
        den = Kn0 * (n0 + mu * t0) + Kn1 * (n1 + mu * t1) + Kn2 * (n2 + mu * t2)
        if not den > 0.0:
            return 0.0, 0.0, 0.0, False
        jm = -(1.0 + e) * vn / den
        J0, J1, J2 = jm * (n0 + mu * t0), jm * (n1 + mu * t1), jm * (n2 + mu * t2)
    _sum_K(M, bW, X, moving, i, j, c0, c1, c2, K)  # the solve diagonalised K in place
    J0, J1, J2 = _dissipative(K, n0, n1, n2, vr0, vr1, vr2, e, J0, J1, J2)
    return J0, J1, J2, True

@_jit_borrowed
def _sweeps(M, X, moving, ci, cf, order, nc, bv, bw, bW, tol, kw):
    """impulses.resolve_contacts: sweeps over the nc contacts in their order until none approaches faster than
    tol (m/s), each an impulse on the velocities bv, bw — −(1+e) v_n/(n·K n) n without friction, else
    :func:`_friction_impulse` (e in cf[k, 9], μ in cf[k, 10]); the sum per contact in cf[k, 6:9], bit 1 of
    ci[k, 3] set at its first impulse and order[:n] the contacts in the order of their first impulses. Returns n,
    or −1 (no effective mass, an ill-defined friction impulse, or no end to the sweeps). kw (2,3,3) scratch."""
    nJ = 0
    for _sweep in range(100_000):
        hit = False
        for k in range(nc):
            i, j = ci[k, 1], ci[k, 2]
            c0, c1, c2, n0, n1, n2 = cf[k, 0], cf[k, 1], cf[k, 2], cf[k, 3], cf[k, 4], cf[k, 5]
            v0, v1, v2 = _point_velocity(bv, bw, X, i, c0, c1, c2)
            u0, u1, u2 = _point_velocity(bv, bw, X, j, c0, c1, c2)
            vn = n0 * (v0 - u0) + n1 * (v1 - u1) + n2 * (v2 - u2)
            if not vn < -tol:
                continue
            knn = (_knn(M, bW, X, moving, i, c0, c1, c2, n0, n1, n2)
                   + _knn(M, bW, X, moving, j, c0, c1, c2, n0, n1, n2))
            if not knn > 0.0:
                return -1
            if cf[k, 10] == 0.0:
                jm = -(1.0 + cf[k, 9]) * vn / knn
                j0, j1, j2 = jm * n0, jm * n1, jm * n2
            else:
                j0, j1, j2, ok = _friction_impulse(M, bW, X, moving, i, j, c0, c1, c2, n0, n1, n2, v0 - u0, v1 - u1,
                                                   v2 - u2, vn, cf[k, 9], cf[k, 10], kw)
                if not ok:
                    return -1
            _kick_body(bv, bw, bW, X, moving, M.mass, i, c0, c1, c2, j0, j1, j2)
            _kick_body(bv, bw, bW, X, moving, M.mass, j, c0, c1, c2, -j0, -j1, -j2)
            if ci[k, 3] & 1 == 0:  # its first impulse: contacts._resolve's dict keeps this order
                ci[k, 3] |= 1
                order[nJ] = k
                nJ += 1
            cf[k, 6] += j0
            cf[k, 7] += j1
            cf[k, 8] += j2
            hit = True
        if not hit:
            return nJ
    return -1

@_jit_borrowed
def _apply_impulses(M, L, P, X, moving, ci, cf, order, nJ):
    """contacts._apply of each contact's summed impulse cf[k, 6:9] (k = order[:nJ], in that order) to the momenta
    L, P (B,3): ±J on a translating side's p, ±r × J about its centre X on its L (through the hinge axis)."""
    for m in range(nJ):
        k = order[m]
        c0, c1, c2 = cf[k, 0], cf[k, 1], cf[k, 2]
        j0, j1, j2 = cf[k, 6], cf[k, 7], cf[k, 8]
        for side in range(2):
            b = ci[k, 1 + side]
            if b < 0:
                continue
            sg = 1.0 if side == 0 else -1.0
            r0, r1, r2 = c0 - X[b, 0], c1 - X[b, 1], c2 - X[b, 2]
            d0, d1, d2 = sg * (r1 * j2 - r2 * j1), sg * (r2 * j0 - r0 * j2), sg * (r0 * j1 - r1 * j0)
            if moving[b]:
                P[b, 0] += sg * j0
                P[b, 1] += sg * j1
                P[b, 2] += sg * j2
            if M.hinged[b]:
                a0, a1, a2 = M.hinge_axis[b, 0], M.hinge_axis[b, 1], M.hinge_axis[b, 2]
                f = a0 * d0 + a1 * d1 + a2 * d2
                L[b, 0] += f * a0
                L[b, 1] += f * a1
                L[b, 2] += f * a2
            else:
                L[b, 0] += d0
                L[b, 1] += d1
                L[b, 2] += d2

@_jit_borrowed
def _log_event(C, Q, X, axes, t, kind, p, body, cf, k, impulse):
    """Append one event to C's buffers (room checked by the caller): time t (s), kind (EV_*), pair p,
    side-1 body, the point and normal cf[k, 0:6], the impulse cf[k, 6:9] (or 0), the bodies' poses."""
    e = C.ev_count[0]
    C.ev_t[e], C.ev_pair[e], C.ev_body[e], C.ev_kind[e] = t, p, body, kind
    for x in range(3):
        C.ev_J[e, x] = cf[k, 6 + x] if impulse else 0.0
        C.ev_point[e, x], C.ev_normal[e, x] = cf[k, x], cf[k, 3 + x]
    for b in range(X.shape[0]):
        for x in range(3):
            for y in range(3):
                C.ev_U[e, b, x, y] = (axes[b, x, 0] * Q[b, 0, y] + axes[b, x, 1] * Q[b, 1, y]
                                      + axes[b, x, 2] * Q[b, 2, y])
            C.ev_X[e, b, x] = X[b, x]
    C.ev_count[0] = e + 1

@_jit_borrowed
def _resolve_impacts(M, C, Q, L, X, P, F, J, S, g, moving, axes, dt, t, ci, cf, order, w, bv, bw, bW, used, kw, nl,
                     nn):
    """contacts._resolve at the state Q, L, X, P, F (forces), J (hinge inertias) with sphere centres S and gaps g
    (its :func:`_overlap`): every pair with g ≤ C.touch is a contact (ContactModel.contact), resolved as
    impulses.resolve_contacts does (sweeps in pair order until none approaches; impulses :func:`_sweeps`,
    Coulomb friction included), the summed impulse per contact applied to L and P
    (contacts._apply), the events appended to C's buffers (time t) and the kinetic energy
    taken added to C.loss[0]. A resting pair (C.resting) takes e = 0; a contact whose rebound would not outlast
    a step (e·|v_n| ≤ a_n·dt, the forces pressing) settles: e = 0,
    a "rest" event, and C.resting from then on. Returns the number of events; −1 when the numpy driver must take
    the step (no contact, no effective mass, an ill-defined friction
    impulse, no wall normal, nothing approaching), −2 when the event buffers are full. Scratch: ci (P,4) int,
    cf (P,11), order (P,) int, w, bv, bw (B,3), bW (B,3,3), used (B,) bool, kw (2,3,3). nl[:nn]: the pairs that
    can touch (the near pairs, in order: :func:`_overlap_near`; every pair without C.broad)."""
    nc = 0
    for i in range(nn):
        p = nl[i]
        if not g[p] <= C.touch[p]:
            continue
        i, j, ok = _contact_at(C, p, S, g[p], cf, nc)
        if not ok:
            return -1
        ci[nc, 0], ci[nc, 1], ci[nc, 2], ci[nc, 3] = p, i, j, 0
        cf[nc, 6] = cf[nc, 7] = cf[nc, 8] = 0.0
        cf[nc, 9] = 0.0 if C.resting[p] else C.e[p]
        cf[nc, 10] = C.mu[p]
        nc += 1
    if nc == 0:
        return -1
    E0 = _kinetic(M, Q, L, P, J, w)
    _contact_bodies(M, Q, P, J, w, moving, ci, nc, bv, bw, bW, used)
    # a contact that would settle (contacts._resolve: e·|v_n| ≤ a_n·dt with the forces pressing): bit 2 of ci[k, 3]
    n_settle = 0
    for k in range(nc):
        if C.resting[ci[k, 0]]:
            continue
        i, j = ci[k, 1], ci[k, 2]
        c0, c1, c2, n0, n1, n2 = cf[k, 0], cf[k, 1], cf[k, 2], cf[k, 3], cf[k, 4], cf[k, 5]
        free = False
        a0 = a1 = a2 = 0.0
        for side in range(2):
            b = i if side == 0 else j
            if b >= 0 and moving[b]:
                sg = 1.0 if side == 0 else -1.0
                a0 += sg * F[b, 0] / M.mass[b]
                a1 += sg * F[b, 1] / M.mass[b]
                a2 += sg * F[b, 2] / M.mass[b]
                free = True
        if free:
            a_n = -(n0 * a0 + n1 * a1 + n2 * a2)
            if a_n > 0:
                v0, v1, v2 = _point_velocity(bv, bw, X, i, c0, c1, c2)
                u0, u1, u2 = _point_velocity(bv, bw, X, j, c0, c1, c2)
                v_n = n0 * (v0 - u0) + n1 * (v1 - u1) + n2 * (v2 - u2)
                if cf[k, 9] * max(-v_n, 0.0) <= a_n * dt:
                    cf[k, 9] = 0.0
                    ci[k, 3] = 2
                    n_settle += 1
    nJ = _sweeps(M, X, moving, ci, cf, order, nc, bv, bw, bW, 1e-12 * _point_speed(bv, bw, X, ci, cf, nc), kw)
    if nJ < 0 or nJ + n_settle == 0:
        return -1
    quiet = 0  # settled without an impulse (at rest on contact already): a "rest" event of its own
    for k in range(nc):
        if ci[k, 3] == 2:
            quiet += 1
    n0_ev = C.ev_count[0]
    if n0_ev + nJ + quiet > C.ev_t.shape[0]:
        return -2
    _apply_impulses(M, L, P, X, moving, ci, cf, order, nJ)
    if nJ > 0:
        C.loss[0] += E0 - _kinetic(M, Q, L, P, J, w)
    for m in range(nJ):  # in the order of their first impulses, as contacts._resolve logs them
        k = order[m]
        _log_event(C, Q, X, axes, t, EV_REST if ci[k, 3] & 2 else EV_IMPACT, ci[k, 0], ci[k, 1], cf, k, True)
    for k in range(nc):
        if ci[k, 3] == 2:
            _log_event(C, Q, X, axes, t, EV_REST, ci[k, 0], ci[k, 1], cf, k, False)
        if ci[k, 3] & 2:
            C.resting[ci[k, 0]] = True
    return nJ + quiet

@_jit_inline
def _near_count(bi, nP):
    """How many pairs nl holds: the near list's length bi[0], or every pair (nP) where there is no list."""
    return bi[0] if bi[0] >= 0 else nP

@_jit_inline
def _any_near(a, nl, nn):
    """Whether a[k] for any k of nl[:nn] (C.resting: a resting pair is always a near pair, :func:`_new_list`)."""
    for i in range(nn):
        if a[nl[i]]:
            return True
    return False

@_jit_borrowed
def _hold(M, C, Q, L, X, P, F, J, S, g, moving, lifted, ci, cf, order, w, bv, bw, bW, used, kw, dX, nl, nn):
    """contacts._hold at the end of a (trial) step: each resting pair
    (C.resting) whose gap is above C.touch has lifted off (lifted (P,) ← True; it stays in C.resting until the step
    is kept); each other one that overlaps is pushed apart along its normal, the translating sides sharing the
    overlap in proportion to 1/M (dX (B,3) ← each body's displacement, m); then no resting pair may approach
    (impulses with e = 0, with the pairs' friction). Modifies X, L, P in place; S and g (P,) are scratch. Returns (the
    energy taken, J: kinetic lost plus F·Δx, the potential the push gives back at the forces F before it — exact
    for gravity; with dipoles the caller evaluates the forces halfway along the push and at its end and completes
    Simpson's rule; the number lifted; False where an impulse finds no effective mass; whether a body moved).
    nl[:nn]: the near pairs, every resting one among them (every pair without C.broad; lifted is set for them)."""
    _place_spheres(C, Q, X, S)
    n_lift, n_held = 0, 0
    for i in range(nn):
        k = nl[i]
        lifted[k] = False
        if not C.resting[k]:
            continue
        g[k] = _pair_gap(C, k, S)
        if g[k] > C.touch[k]:
            lifted[k] = True
            n_lift += 1
        else:
            n_held += 1
    if n_held == 0:
        return 0.0, n_lift, True, False
    E0 = _kinetic(M, Q, L, P, J, w)  # leaves ω in w, which the push does not change
    work, pushed = 0.0, False
    for b in range(X.shape[0]):
        for x in range(3):
            dX[b, x] = 0.0
    for i in range(nn):
        k = nl[i]
        if not C.resting[k] or lifted[k] or not g[k] < 0.0:
            continue
        i, j, ok = _contact_at(C, k, S, g[k], cf, 0)
        if not ok:
            return 0.0, n_lift, False, pushed
        inv = 0.0
        for side in range(2):
            b = i if side == 0 else j
            if b >= 0 and moving[b]:
                inv += 1.0 / M.mass[b]
        for side in range(2):
            b = i if side == 0 else j
            if b >= 0 and moving[b]:
                f = (1.0 if side == 0 else -1.0) * -g[k] * (1.0 / M.mass[b]) / inv
                for x in range(3):
                    dx = f * cf[0, 3 + x]
                    X[b, x] += dx
                    dX[b, x] += dx
                    work += F[b, x] * dx
                pushed = True
    _place_spheres(C, Q, X, S)
    nc = 0
    for i in range(nn):
        k = nl[i]
        if not C.resting[k] or lifted[k]:
            continue
        i, j, ok = _contact_at(C, k, S, _pair_gap(C, k, S), cf, nc)
        if not ok:
            return 0.0, n_lift, False, pushed
        ci[nc, 0], ci[nc, 1], ci[nc, 2], ci[nc, 3] = k, i, j, 0
        cf[nc, 6] = cf[nc, 7] = cf[nc, 8] = cf[nc, 9] = 0.0
        cf[nc, 10] = C.mu[k]
        nc += 1
    _contact_bodies(M, Q, P, J, w, moving, ci, nc, bv, bw, bW, used)
    nJ = _sweeps(M, X, moving, ci, cf, order, nc, bv, bw, bW, 1e-12 * _point_speed(bv, bw, X, ci, cf, nc), kw)
    if nJ < 0:
        return 0.0, n_lift, False, pushed
    _apply_impulses(M, L, P, X, moving, ci, cf, order, nJ)
    return E0 - _kinetic(M, Q, L, P, J, w) + work, n_lift, True, pushed

@_jit_borrowed
def _lift_off(C, Q, X, S, axes, lifted, t, cf, nl, nn):
    """Keep a held step: each pair of nl[:nn] in lifted (P,) leaves C.resting and lifted, and is logged as a
    "lift-off" (zero impulse, its contact at gap 0 at the sphere centres S, contacts._advance_step's keep). A lifted
    pair was resting, so near (:func:`_hold`)."""
    for i in range(nn):
        k = nl[i]
        if lifted[k]:
            lifted[k] = False
            C.resting[k] = False
            i, _j, _ok = _contact_at(C, k, S, 0.0, cf, 0)
            _log_event(C, Q, X, axes, t, EV_LIFT, k, i, cf, 0, False)

@_jit_borrowed
def _undo_events(C, ev0, loss0):
    """Take back the events logged since C.ev_count was ev0 (a step handed back): the pairs they settled leave
    C.resting, the running loss returns to loss0."""
    for e in range(ev0, C.ev_count[0]):
        if C.ev_kind[e] == EV_REST:
            C.resting[C.ev_pair[e]] = False
    C.ev_count[0], C.loss[0] = ev0, loss0

@_jit_borrowed
def _idle_but(pair, owner, spheres, hit, n, on, idle):
    """idle (B,) ← ``on`` for every body but the owners of the spheres of pairs hit[:n] (sphere pairs first,
    ``spheres`` of them; a wall pair's second entry is its wall), which are left False."""
    for b in range(idle.shape[0]):
        idle[b] = on
    for m in range(n):
        k = hit[m]
        for side in range(2 if k < spheres else 1):
            b = owner[pair[k, side]]
            if b >= 0:
                idle[b] = False

@_jit_borrowed
def _impact_search(M, C, pair, dip, can_impact, steps, dt, Qe, Le, Te, Xe, Pe, Fe, Je, Q0, L0, T0, X0, P0, F0,
                   Qs, Ls, Ts, Xs, Ps, Fs, g0, g1, S1, moving, axes, hit, bs, si, sf, ci, cf, order, w, bv, bw, bW,
                   used, kw, nl, nn):
    """The impact search of :func:`_member_splitting` after a step (or trial step) that ended at Qe… with sphere
    centres S1 and gaps g1 (``pair``: :func:`_overlap`'s; ``dip``: :func:`_grazing`'s, −1 if not run), from the
    base state Q0… with gaps g0; the step started at Qs…. Its state: si (phase, pairs hit, first pair,
    iterations, events at the step's start), sf (t_c, t_end, t_hit, the next trial's length, energy loss at the
    step's start, and after a Brent trial its function's value: _min_gap); ``hit`` (P,) the pairs hit, ``bs``
    Brent's state. Returns (action, code, body): 0 the step is done (its end in Qe); 1 take the next trial step
    (of length sf[3] from Q0…); 2 an impact resolved at Qe, now also the base (Q0…; the caller swaps the gaps);
    3 stop with (code, body): the step handed back
    (CONTACT) or the event buffers full (EVENTS_FULL), the state back at the step's start."""
    phase, nhit, first, n_iter, ev0 = si[0], si[1], si[2], si[3], si[4]
    tc, t_end, t_hit, trial_h, loss0 = sf[0], sf[1], sf[2], sf[3], sf[4]
    action = 0
    back, full = False, False  # hand the step back to the numpy driver; or stop to flush the events
    if phase == 0 and (pair >= 0 or dip >= 0):
        if dip >= 0 or not can_impact:
            _copy_state(Q0, L0, T0, X0, P0, F0, Qe, Le, Te, Xe, Pe, Fe)
            return 3, CONTACT, (pair if pair >= 0 else dip)
        # an impact step: the search starts from the step's start (contacts._state: t_c = (k−1)·dt)
        _copy_state(Q0, L0, T0, X0, P0, F0, Qs, Ls, Ts, Xs, Ps, Fs)
        ev0, loss0, first, n_iter = C.ev_count[0], C.loss[0], pair, 0
        tc, t_end = steps * dt, (steps + 1) * dt
        trial_h = t_end - tc
        phase = 1
        if trial_h != dt:  # the driver's whole trial step is not this one: take it
            action = 1
    if action == 0 and phase == 1:  # a whole trial step from t_c to t_end
        nhit = 0
        ga, gb = np.inf, np.inf
        for i in range(nn):  # the near pairs: the others are too far for any test (_overlap_near)
            k = nl[i]
            if g1[k] < -C.tol[k] and not C.resting[k]:
                if g0[k] < 0.0:
                    back = True  # overlapping at t_c already: the driver's (_approaching, _persistent)
                hit[nhit] = k
                nhit += 1
                ga, gb = min(ga, g0[k]), min(gb, g1[k])
        n_iter += 1
        if back or dip >= 0 or n_iter > 1000:
            back = True
        elif nhit > 0:
            done, tb = _brent_start(bs, tc, t_end, ga, gb)
            phase = 2 if not done else 3
            trial_h, t_hit = tb - tc, tb
            action = 1
        else:
            phase = 0  # no impact left in the step: the trial is its end
    elif action == 0 and phase == 2:  # Brent's trial: the smallest gap of the pairs hit
        done, tb = _brent(bs, sf[5])  # the smallest gap of the pairs hit (_min_gap)
        if done:
            phase = 3
        trial_h, t_hit = tb - tc, tb
        action = 1
    elif action == 0 and phase == 3:  # the state at the impact: resolve, and take the rest of the step from it
        res = _resolve_impacts(M, C, Qe, Le, Xe, Pe, Fe, Je, S1, g1, moving, axes, dt, t_hit, ci, cf, order, w, bv,
                               bw, bW, used, kw, nl, nn)
        if res < 0:
            back = True
            full = res == -2 and ev0 > 0  # the buffers are full: flush them and come back
        else:
            _copy_state(Qe, Le, Te, Xe, Pe, Fe, Q0, L0, T0, X0, P0, F0)
            tc = tc + trial_h  # the state's clock, as contacts._step leaves it
            trial_h = t_end - tc
            phase = 1
            action = 2
    code, body = OK, 0
    if back:
        _copy_state(Qs, Ls, Ts, Xs, Ps, Fs, Qe, Le, Te, Xe, Pe, Fe)
        _undo_events(C, ev0, loss0)
        phase = 0
        action, code, body = 3, (EVENTS_FULL if full else CONTACT), first
    si[0], si[1], si[2], si[3], si[4] = phase, nhit, first, n_iter, ev0
    sf[0], sf[1], sf[2], sf[3], sf[4] = tc, t_end, t_hit, trial_h, loss0
    return action, code, body
