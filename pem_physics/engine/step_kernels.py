"""Compiled steps of the splitting integrator (the kernels' twin of :mod:`.integrators`): kicks, drifts,
orthonormality checks, PEM's corrector, the state copies that undo a step, and a chunk of free steps."""

from __future__ import annotations

import numpy as np

from . import orthonormal
from .kernel_flags import NONFINITE, NOT_ORTHONORMAL, OK, _jit_borrowed, _jit_inline
from .torque_kernels import _after, _external, _pivots, _sources_exact, _torque

_newton_schulz9 = _jit_inline(orthonormal.newton_schulz)

# ------------------------------------------------------------------ small linear algebra

@_jit_inline
def _orth_error(U):
    """‖U Uᵀ − I‖_F of a 3×3 frame (the constant turn to the user's axes does not change it)."""
    acc = 0.0
    for i in range(3):
        for j in range(3):
            g = U[i, 0] * U[j, 0] + U[i, 1] * U[j, 1] + U[i, 2] * U[j, 2] - (1.0 if i == j else 0.0)
            acc += g * g
    return np.sqrt(acc)

@_jit_inline
def _check(M, U, L):
    """(code, body) of the first body whose state is no longer sane (simulate._check)."""
    for b in range(L.shape[0]):
        if not (np.isfinite(L[b, 0]) and np.isfinite(L[b, 1]) and np.isfinite(L[b, 2])):
            return NONFINITE, b
    for b in range(L.shape[0]):
        if not _orth_error(U[b]) < M.orth_limit:
            return NOT_ORTHONORMAL, b
    return OK, 0

@_jit_inline
def _pem_correct(A, a, out, o):
    """rotations.pem_correct of frame A[a] into out[o] (PEM's Frame::correct2); A, out (n,3,3).

    Frames are indexed, not sliced: a view made in the step loop costs a reference count each time."""
    f0 = 1 + (A[a, 0, 0] * A[a, 0, 0] + A[a, 0, 1] * A[a, 0, 1] + A[a, 0, 2] * A[a, 0, 2])
    f1 = 1 + (A[a, 1, 0] * A[a, 1, 0] + A[a, 1, 1] * A[a, 1, 1] + A[a, 1, 2] * A[a, 1, 2])
    f2 = 1 + (A[a, 2, 0] * A[a, 2, 0] + A[a, 2, 1] * A[a, 2, 1] + A[a, 2, 2] * A[a, 2, 2])
    a0, a1, a2 = 2 * A[a, 0, 0] / f0, 2 * A[a, 0, 1] / f0, 2 * A[a, 0, 2] / f0
    b0, b1, b2 = 2 * A[a, 1, 0] / f1, 2 * A[a, 1, 1] / f1, 2 * A[a, 1, 2] / f1
    c0, c1, c2 = 2 * A[a, 2, 0] / f2, 2 * A[a, 2, 1] / f2, 2 * A[a, 2, 2] / f2
    d12 = a0 * b0 + a1 * b1 + a2 * b2
    d23 = b0 * c0 + b1 * c1 + b2 * c2
    d31 = c0 * a0 + c1 * a1 + c2 * a2
    g12, g23, g31 = 1 - 0.5 * d12, 1 - 0.5 * d23, 1 - 0.5 * d31
    out[o, 0, 0], out[o, 0, 1], out[o, 0, 2] = (a0 - d12 * b0) / g12, (a1 - d12 * b1) / g12, (a2 - d12 * b2) / g12
    out[o, 1, 0], out[o, 1, 1], out[o, 1, 2] = (b0 - d23 * c0) / g23, (b1 - d23 * c1) / g23, (b2 - d23 * c2) / g23
    out[o, 2, 0], out[o, 2, 1], out[o, 2, 2] = (c0 - d31 * a0) / g31, (c1 - d31 * a1) / g31, (c2 - d31 * a2) / g31

# ------------------------------------------------------------------ splitting (integrators.Splitting)

@_jit_inline
def _decayed(Q, L, T, inv_m, b, i, c, h):
    """Principal component i of L after h of dL/dt = T − c·ω with T and the frame frozen."""
    inv = inv_m[b, i]
    e = np.exp((-c * h) * inv)
    ci = c * (inv if inv > 0 else 1.0)
    # −expm1 for 1 − e: exact to rounding however small c·h·inv (Splitting._kick)
    g = -np.expm1((-c * h) * inv) / ci if (inv > 0 and ci > 0) else h
    lp = Q[b, i, 0] * L[b, 0] + Q[b, i, 1] * L[b, 1] + Q[b, i, 2] * L[b, 2]
    tp = Q[b, i, 0] * T[b, 0] + Q[b, i, 1] * T[b, 1] + Q[b, i, 2] * T[b, 2]
    return lp * e + tp * g

@_jit_inline
def _kick(M, Q, L, T, J, P, F, moving, idle, h, c, damped, inv_m, DW):
    """L ← exact solution over h of dL/dt = T − c·ω, orientation frozen, and P ← P + h·F (kg·m/s) for the
    translating bodies (``moving`` (B,) True) (Splitting._kick); with drivers (M.power) their work DW[1] (J) grows
    by h times the power DW[0] (W) at the kick's state. Bodies with ``idle`` (B,) True are left as they are."""
    if M.power:
        DW[1] += h * DW[0]
    for b in range(L.shape[0]):
        if idle[b]:
            continue
        if moving[b]:  # in this loop, not one of its own: each statement inlined costs compile time
            for j in range(3):
                P[b, j] += h * F[b, j]
        if M.hinged[b]:
            a0, a1, a2 = M.hinge_axis[b, 0], M.hinge_axis[b, 1], M.hinge_axis[b, 2]
            tau = T[b, 0] * a0 + T[b, 1] * a1 + T[b, 2] * a2
            if not damped:
                ht = h * tau
                L[b, 0] += ht * a0
                L[b, 1] += ht * a1
                L[b, 2] += ht * a2
                continue
            ell = L[b, 0] * a0 + L[b, 1] * a1 + L[b, 2] * a2
            eh = np.exp(-c * h / J[b])
            if c > 0:
                ell = ell * eh + tau * -np.expm1(-c * h / J[b]) * J[b] / c
            else:
                ell = ell + h * tau
            L[b, 0], L[b, 1], L[b, 2] = ell * a0, ell * a1, ell * a2
        elif not damped:
            L[b, 0] += h * T[b, 0]
            L[b, 1] += h * T[b, 1]
            L[b, 2] += h * T[b, 2]
        else:
            x0 = x1 = x2 = 0.0
            for i in range(3):  # one _decayed call site: each inlined copy costs compile time
                v = _decayed(Q, L, T, inv_m, b, i, c, h)
                if i == 0:
                    x0 = v
                elif i == 1:
                    x1 = v
                else:
                    x2 = v
            for j in range(3):
                L[b, j] = Q[b, 0, j] * x0 + Q[b, 1, j] * x1 + Q[b, 2, j] * x2

@_jit_inline
def _drift(M, Q, L, J, X, P, moving, idle, h, inv1, plan_axis, plan_frac, plan_coef):
    """Exact free rotation over h (Splitting._drift / _turn_free); hinged bodies turn about their axis; the
    translating bodies (``moving`` (B,) True) fly: X ← X + (h/M)·P (m). Bodies with ``idle`` (B,) True stay."""
    for b in range(Q.shape[0]):
        if idle[b]:
            continue
        if moving[b]:  # a translating body is never hinged
            hm = h / M.mass[b]
            for j in range(3):
                X[b, j] += hm * P[b, j]
        if M.hinged[b]:
            a0, a1, a2 = M.hinge_axis[b, 0], M.hinge_axis[b, 1], M.hinge_axis[b, 2]
            ell = L[b, 0] * a0 + L[b, 1] * a1 + L[b, 2] * a2
            ang = h * ell / J[b]
            c, s = np.cos(ang), np.sin(ang)
            for i in range(3):
                u0, u1, u2 = Q[b, i, 0], Q[b, i, 1], Q[b, i, 2]
                av = a0 * u0 + a1 * u1 + a2 * u2
                Q[b, i, 0] = u0 * c + (a1 * u2 - a2 * u1) * s + a0 * av * (1 - c)
                Q[b, i, 1] = u1 * c + (a2 * u0 - a0 * u2) * s + a1 * av * (1 - c)
                Q[b, i, 2] = u2 * c + (a0 * u1 - a1 * u0) * s + a2 * av * (1 - c)
            continue
        l0, l1, l2 = L[b, 0], L[b, 1], L[b, 2]
        L2 = l0 * l0 + l1 * l1 + l2 * l2
        norm = np.sqrt(L2)
        hi = h * inv1[b]
        th = hi * norm
        if norm > 0:
            fa = np.sin(th) / norm
            fb = (1.0 - np.cos(th)) / L2
        else:
            fa = hi
            fb = 0.5 * hi ** 2
        # Q ← Q − a·QK + b·QK·K with K = [L]× (a turn of every row about L by θ)
        for i in range(3):
            q0, q1, q2 = Q[b, i, 0], Q[b, i, 1], Q[b, i, 2]
            k0 = q0 * 0.0 + q1 * l2 + q2 * -l1
            k1 = q0 * -l2 + q1 * 0.0 + q2 * l0
            k2 = q0 * l1 + q1 * -l0 + q2 * 0.0
            kk0 = k0 * 0.0 + k1 * l2 + k2 * -l1
            kk1 = k0 * -l2 + k1 * 0.0 + k2 * l0
            kk2 = k0 * l1 + k1 * -l0 + k2 * 0.0
            Q[b, i, 0] = q0 - fa * k0 + fb * kk0
            Q[b, i, 1] = q1 - fa * k1 + fb * kk1
            Q[b, i, 2] = q2 - fa * k2 + fb * kk2
        for n in range(plan_axis.shape[0]):
            k = plan_axis[n]
            th = (plan_frac[n] * h) * (Q[b, k, 0] * l0 + Q[b, k, 1] * l1 + Q[b, k, 2] * l2) * plan_coef[n, b]
            c, s = np.cos(th), np.sin(th)
            j, m = (k + 1) % 3, (k + 2) % 3
            for i in range(3):
                qj, qm = Q[b, j, i], Q[b, m, i]
                Q[b, j, i] = c * qj + s * qm
                Q[b, m, i] = c * qm - s * qj

@_jit_inline
def _newton_schulz(Q, idle):
    """Q ← 1.5 Q − 0.5 (Q Qᵀ) Q for every body but the ``idle`` (B,) ones: squares the orthonormality error away."""
    for b in range(Q.shape[0]):
        if idle[b]:
            continue
        r = _newton_schulz9(Q[b, 0, 0], Q[b, 0, 1], Q[b, 0, 2], Q[b, 1, 0], Q[b, 1, 1], Q[b, 1, 2],
                            Q[b, 2, 0], Q[b, 2, 1], Q[b, 2, 2])
        for i in range(3):
            for j in range(3):
                Q[b, i, j] = r[3 * i + j]

@_jit_inline
def _omega_principal(M, Q, L, J, w):
    """ω lab (B,3) from Q (principal frames) and L (integrators.omega_lab with the principal kinematics)."""
    for b in range(L.shape[0]):
        _omega_one_or_hinge(M, Q, L, J, w, b)

@_jit_inline
def _omega_one_or_hinge(M, Q, L, J, w, b):
    """w[b]: body b's lab ω, through its hinge (J (B,) the inertias about the axes) or :func:`_omega_one`."""
    if M.hinged[b]:
        a0, a1, a2 = M.hinge_axis[b, 0], M.hinge_axis[b, 1], M.hinge_axis[b, 2]
        f = (L[b, 0] * a0 + L[b, 1] * a1 + L[b, 2] * a2) / J[b]
        w[b, 0], w[b, 1], w[b, 2] = f * a0, f * a1, f * a2
        return
    _omega_one(M.inv_inertia, Q, L, w, b)

@_jit_inline
def _omega_one(I, U, L, w, b):
    """w[b] = U[b]ᵀ I[b]⁺ U[b] L[b] for body b; I, U (B,3,3), L, w (B,3) (indexed: no views in the step loop)."""
    l0 = U[b, 0, 0] * L[b, 0] + U[b, 0, 1] * L[b, 1] + U[b, 0, 2] * L[b, 2]
    l1 = U[b, 1, 0] * L[b, 0] + U[b, 1, 1] * L[b, 1] + U[b, 1, 2] * L[b, 2]
    l2 = U[b, 2, 0] * L[b, 0] + U[b, 2, 1] * L[b, 1] + U[b, 2, 2] * L[b, 2]
    c0 = I[b, 0, 0] * l0 + I[b, 0, 1] * l1 + I[b, 0, 2] * l2
    c1 = I[b, 1, 0] * l0 + I[b, 1, 1] * l1 + I[b, 1, 2] * l2
    c2 = I[b, 2, 0] * l0 + I[b, 2, 1] * l1 + I[b, 2, 2] * l2
    for j in range(3):
        w[b, j] = U[b, 0, j] * c0 + U[b, 1, j] * c1 + U[b, 2, j] * c2


@_jit_borrowed
def _copy_bodies(Q, L, T, X, P, F, Qc, Lc, Tc, Xc, Pc, Fc, idle):
    """:func:`_copy_state` of the bodies not ``idle`` (B,) only."""
    for b in range(L.shape[0]):
        if not idle[b]:
            _copy_body(Q, L, T, X, P, F, Qc, Lc, Tc, Xc, Pc, Fc, b)

@_jit_borrowed
def _same_state(Q, L, T, X, P, F, Qc, Lc, Tc, Xc, Pc, Fc):
    """Whether Q (B,3,3), L, T, X, P, F (B,3) equal Qc… element for element (:func:`_copy_state`'s arrays)."""
    for b in range(L.shape[0]):
        for x in range(3):
            if not (L[b, x] == Lc[b, x] and T[b, x] == Tc[b, x] and X[b, x] == Xc[b, x] and P[b, x] == Pc[b, x]
                    and F[b, x] == Fc[b, x]):
                return False
            for y in range(3):
                if not Q[b, x, y] == Qc[b, x, y]:
                    return False
    return True

@_jit_borrowed
def _copy_state(Q, L, T, X, P, F, Qc, Lc, Tc, Xc, Pc, Fc):
    """Qc, Lc, Tc, Xc, Pc, Fc ← Q (B,3,3), L, T, X, P, F (B,3): the state at a step's start, kept to undo the
    step (positions, momenta and forces too: translating bodies carry them like Q, L and T). It restores too,
    called with the arguments swapped: a direction flag, constant at each call site, would compile it twice."""
    for b in range(L.shape[0]):
        _copy_body(Q, L, T, X, P, F, Qc, Lc, Tc, Xc, Pc, Fc, b)

@_jit_inline
def _copy_body(Q, L, T, X, P, F, Qc, Lc, Tc, Xc, Pc, Fc, b):
    """Body b's rows of :func:`_copy_state`."""
    for x in range(3):
        Lc[b, x], Tc[b, x] = L[b, x], T[b, x]
        Xc[b, x], Pc[b, x], Fc[b, x] = X[b, x], P[b, x], F[b, x]
        for y in range(3):
            Qc[b, x, y] = Q[b, x, y]

@_jit_borrowed
def _jerk_steps(M, Q, DW, kicks, nodes, dt):
    """Splitting._jerk_steps: the drivers' work of the step whose kicks took their torques at ``nodes`` (s+1,) s,
    corrected for the steps of each moving pivot's jerk (at its table's inner samples) inside it; R_G at the
    step's end (Q)."""
    t0, t1 = nodes[0], nodes[nodes.shape[0] - 1]
    for b in range(Q.shape[0]):
        k = M.pv_tab[b]
        if k < 0 or M.tab_kind[k] == 2:   # a sum of cosines: its jerk is smooth
            continue
        lo, hi = M.tab_lo[k] + 1, M.tab_lo[k + 1] - 1          # the inner samples
        a = _after(M, lo, hi, t0)                               # the first with τ > t0
        s0 = s1 = s2 = 0.0
        m = a
        while m < hi and M.tab_t[m] <= t1:
            tau = M.tab_t[m]
            w = 0.0
            for i in range(nodes.shape[0]):
                if nodes[i] >= tau:
                    w += kicks[i] * dt
            corr = (t1 - tau) - w
            tm, tl, tr = M.tab_t[m], M.tab_t[m - 1], M.tab_t[m + 1]
            for x in range(3):
                dj = (M.tab_m[m + 1, x] - M.tab_m[m, x]) / (tr - tm) - (M.tab_m[m, x] - M.tab_m[m - 1, x]) / (tm - tl)
                if x == 0:
                    s0 += corr * dj
                elif x == 1:
                    s1 += corr * dj
                else:
                    s2 += corr * dj
            m += 1
        if m == a:
            continue
        c0, c1, c2 = M.com[b, 0], M.com[b, 1], M.com[b, 2]
        rg0 = Q[b, 0, 0] * c0 + Q[b, 1, 0] * c1 + Q[b, 2, 0] * c2
        rg1 = Q[b, 0, 1] * c0 + Q[b, 1, 1] * c1 + Q[b, 2, 1] * c2
        rg2 = Q[b, 0, 2] * c0 + Q[b, 1, 2] * c1 + Q[b, 2, 2] * c2
        DW[1] += M.mass[b] * (rg0 * s0 + rg1 * s1 + rg2 * s2)

@_jit_borrowed
def _split_chunk(M, Q, L, T, J, X, P, F, moving, idle, n, steps, dt, c, damped, field, drifts, kicks, inv_m, inv1,
                 plan_axis, plan_frac, plan_coef, org, Rs, rs, ms, s, p, r, Td, DW, Xt, pv, SR, dB, nodes, tb):
    """Splitting.advance(n) for one member from ``steps`` steps done (kicks merged inside the chunk), its clock at
    tb + steps·dt (s): tb = 0 for the run's steps, the start time of a trial step of the impact search (whose
    steps start anywhere in time, as contacts._state's clock does).

    X, P, F (B,3): centres of rotation (m), linear momenta (kg·m/s) and forces (N, at the state, as T is
    the torque) — moved only for the translating bodies (``moving`` (B,) True), in the same kicks and drifts.
    Bodies with ``idle`` (B,) True keep their state (the impact search's trial steps, where nothing couples the
    bodies, move only the bodies of the pairs they look at); their torques and forces are still evaluated.
    DW (2,): the drivers' power at the state (W) and their work so far (J), summed when M.power (Splitting's W and
    driver_work). Scratch: Xt (B,3) the centres with moving pivots placed, pv (B,12), SR (K+S,6), dB (3,),
    nodes (s+1,) the times of the step's torques."""
    sa = drifts.shape[0]
    tau_end = 0.0
    for i in range(sa):
        tau_end += drifts[i]
    for step in range(n):
        t0 = tb + (steps + step) * dt
        # the time of the torque the step's first kick uses: the previous step's last one (tb at the start)
        nodes[0] = tb if steps + step == 0 else tb + (steps + step - 1) * dt + tau_end * dt
        tau = 0.0
        # j = 0: the first kick of the chunk, by the torque T given (later steps' first kicks are merged into
        # the last kick of the step before); j ≥ 1: drift j−1, then its kick. One call site per stage function:
        # numba inlines every site anew, and the compile time grows with their number.
        for j in range(sa + 1):
            if j == 0:
                if step > 0:
                    continue
                coef = kicks[0]
            else:
                i = j - 1
                _drift(M, Q, L, J, X, P, moving, idle, drifts[i] * dt, inv1, plan_axis, plan_frac, plan_coef)
                tau += drifts[i]
                nodes[j] = t0 + tau * dt
                last = i == sa - 1
                coef = kicks[i + 1] + (kicks[0] if last and step < n - 1 else 0.0)
                if coef != 0.0 or (last and step == n - 1):
                    t = t0 + tau * dt
                    if not M.static_sources:
                        _sources_exact(M, t, org, Rs, rs, ms, SR, M.power)
                    if M.power and M.rf_on:
                        w = M.rf_omega
                        ph = w * t + M.rf_phase
                        sn, cs = np.sin(ph), np.cos(ph)
                        for x in range(3):
                            dB[x] = w * (-M.rf_b1[x] * sn + M.rf_b2[x] * cs)
                    Xc = X
                    if M.pv_any:
                        _pivots(M, t, X, Xt, pv)
                        Xc = Xt
                    _torque(M, Q, Q, False, _external(M, field, t), rs, ms, Xc, T, F, s, p, r, Td, pv, SR, dB,
                            M.power, DW)
            if coef != 0.0:
                _kick(M, Q, L, T, J, P, F, moving, idle, coef * dt, c, damped, inv_m, DW)
        if dt > 0.0:  # a step of length 0 only evaluates the torques and forces (a hold's, _member_splitting)
            _newton_schulz(Q, idle)
        if M.power and M.pv_any:
            _jerk_steps(M, Q, DW, kicks, nodes, dt)
