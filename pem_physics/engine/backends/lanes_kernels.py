"""The ensemble kernels of :mod:`.lanes` (members in SIMD lanes), compiled by numba's JIT or ahead of time.

A module of their own because it imports numba: :mod:`.lanes` imports it only where numba runs the kernels (its JIT,
for this CPU's vector width: where there is no build); else they come from the build made ahead of time
(:mod:`pem_physics.aot`: the entries ``lanes_splitting`` and ``lanes_rk4``, also for AVX2 and AVX-512) and numba is
never imported. The entries run a range of blocks (:func:`blocks_splitting`, :func:`blocks_rk4`) and release the GIL:
:class:`.lanes.Lanes` runs the ranges in threads, as numba's parallel loop did, and a build can hold them (numba's
ahead-of-time compiler cannot compile parallel loops). Layout, schemes and accuracy: :mod:`.lanes`.
"""

from __future__ import annotations

import numpy as np

from ...jit import numba as _numba
from .. import dipole_pair, orthonormal
from .lanes_layout import BLOCK

#: The kernels a build made ahead of time holds (:mod:`pem_physics.aot`): kind → function (a range of blocks a call).
BUILD_ENTRIES = {"lanes_splitting": "blocks_splitting", "lanes_rk4": "blocks_rk4"}

nb = _numba()

# Cody–Waite split of π/2 (fdlibm's pio2_1, pio2_2 of 33 bits each and the 53-bit tail pio2_2t) and the
# minimax coefficients of fdlibm's __kernel_sin / __kernel_cos on [−π/4, π/4].
_TWO_OVER_PI = 6.36619772367581382433e-01
_PIO2_1 = 1.57079632673412561417e+00
_PIO2_2 = 6.07710050630396597660e-11
_PIO2_3 = 2.02226624879595063154e-21
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11

# error_model="numpy": a division by zero gives inf/nan instead of raising, so the lane loops have
# no exits and vectorise; no fastmath (each lane IEEE-exact, as the per-member engine)
_inline = nb.njit(error_model="numpy", inline="always")
_jit = nb.njit(error_model="numpy", cache=True, nogil=True)
_field_and_force = _inline(dipole_pair.field_and_force)
_newton_schulz9 = _inline(orthonormal.newton_schulz)

@_inline
def sincos(x):
    """(sin x, cos x) without branches or calls (vectorisable): quadrant by rounding x·2/π,
    Cody–Waite reduction, fdlibm's kernels. Within 2 ulp of libm for |x| < 2²⁰·π/2; NaN for
    non-finite x."""
    n = np.rint(x * _TWO_OVER_PI)
    r = ((x - n * _PIO2_1) - n * _PIO2_2) - n * _PIO2_3
    z = r * r
    s = r + (z * r) * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
    hz = 0.5 * z
    w = 1.0 - hz
    c = w + (((1.0 - w) - hz) + z * (z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))))
    q = n - 4.0 * np.floor(0.25 * n)          # quadrant 0..3, as a float (no int conversion)
    odd = (q == 1.0) | (q == 3.0)
    sv = c if odd else s
    cv = s if odd else c
    sv = -sv if q >= 2.0 else sv
    cv = -cv if (q == 1.0) | (q == 2.0) else cv
    return sv, cv

@_jit
def sincos_array(x, s, c):
    """sin and cos of every element of x (for the tests)."""
    for i in range(x.shape[0]):
        s[i], c[i] = sincos(x[i])

# ------------------------------------------------------------------ splitting (integrators.Splitting)
# Block state Y (15, BLOCK): rows 0–8 the principal frame Q (row-major, rows = principal axes in
# the lab), 9–11 L (lab), 12–14 the torque T at the current state. Per-member parameters
# P (4, BLOCK): friction c, uniform field (3).

@_inline
def _torque(A, ur, dr, tr, split, P, com, mass, gravity, pivot, dpos, dmom, rs, ms, k, W):
    """Torque about the pivot into rows tr…tr+2 of A (kernels._torque, friction not included).

    Rows ur…ur+8 of A hold the frame U that gravity (and, with ``split``, the uniform field) turns,
    rows dr…dr+8 the frame placing the dipoles for the dipole–dipole terms (PEM's rule; the same
    rows as ur for the splitting). The row offsets are constants at every call, so the loops index
    rows a constant BLOCK apart. W (16·BLOCK) scratch.
    """
    c0, c1, c2 = com[0], com[1], com[2]
    g0, g1, g2 = gravity[0], gravity[1], gravity[2]
    p0, p1, p2 = pivot[0], pivot[1], pivot[2]
    for m in range(BLOCK):
        rg0 = A[(ur + 0) * BLOCK + m] * c0 + A[(ur + 3) * BLOCK + m] * c1 + A[(ur + 6) * BLOCK + m] * c2
        rg1 = A[(ur + 1) * BLOCK + m] * c0 + A[(ur + 4) * BLOCK + m] * c1 + A[(ur + 7) * BLOCK + m] * c2
        rg2 = A[(ur + 2) * BLOCK + m] * c0 + A[(ur + 5) * BLOCK + m] * c1 + A[(ur + 8) * BLOCK + m] * c2
        A[tr * BLOCK + m] = mass * (rg1 * g2 - rg2 * g1)
        A[(tr + 1) * BLOCK + m] = mass * (rg2 * g0 - rg0 * g2)
        A[(tr + 2) * BLOCK + m] = mass * (rg0 * g1 - rg1 * g0)
        W[13 * BLOCK + m] = W[14 * BLOCK + m] = W[15 * BLOCK + m] = 0.0
    for d in range(dpos.shape[0]):
        x0, x1, x2 = dpos[d, 0], dpos[d, 1], dpos[d, 2]
        m0, m1, m2 = dmom[d, 0], dmom[d, 1], dmom[d, 2]
        for m in range(BLOCK):
            # W rows: 0–2 s (pivot → dipole), 3–5 p (moment), 6–8 B, 9–11 F (sums over sources)
            for j in range(3):
                W[j * BLOCK + m] = (A[(dr + j) * BLOCK + m] * x0 + A[(dr + 3 + j) * BLOCK + m] * x1
                                    + A[(dr + 6 + j) * BLOCK + m] * x2)
                W[(3 + j) * BLOCK + m] = (A[(dr + j) * BLOCK + m] * m0 + A[(dr + 3 + j) * BLOCK + m] * m1
                                          + A[(dr + 6 + j) * BLOCK + m] * m2)
                W[(6 + j) * BLOCK + m] = 0.0
                W[(9 + j) * BLOCK + m] = 0.0
        for q in range(rs.shape[0]):
            # every array read but W's hoisted out of the lane loop: LLVM then needs no run-time
            # alias checks against W's stores, and vectorises the loop
            cx, cy, cz = ms[q, 0], ms[q, 1], ms[q, 2]
            rx, ry, rz = rs[q, 0], rs[q, 1], rs[q, 2]
            for m in range(BLOCK):
                # r_a − r_c = (pivot + s) − r_c, formed as compiled does: (pivot + s) first
                dx = (p0 + W[0 * BLOCK + m]) - rx
                dy = (p1 + W[1 * BLOCK + m]) - ry
                dz = (p2 + W[2 * BLOCK + m]) - rz
                ax, ay, az = W[3 * BLOCK + m], W[4 * BLOCK + m], W[5 * BLOCK + m]
                bx, by, bz, fx, fy, fz = _field_and_force(dx, dy, dz, cx, cy, cz, ax, ay, az, k)
                W[6 * BLOCK + m] += bx
                W[7 * BLOCK + m] += by
                W[8 * BLOCK + m] += bz
                W[9 * BLOCK + m] += fx
                W[10 * BLOCK + m] += fy
                W[11 * BLOCK + m] += fz
        for m in range(BLOCK):
            s0, s1, s2 = W[0 * BLOCK + m], W[1 * BLOCK + m], W[2 * BLOCK + m]
            ax, ay, az = W[3 * BLOCK + m], W[4 * BLOCK + m], W[5 * BLOCK + m]
            Fx, Fy, Fz = W[9 * BLOCK + m], W[10 * BLOCK + m], W[11 * BLOCK + m]
            bx, by, bz = P[1 * BLOCK + m], P[2 * BLOCK + m], P[3 * BLOCK + m]
            if split:
                # PEM: the uniform field turns the moment as the frame U carries it
                ex = A[ur * BLOCK + m] * m0 + A[(ur + 3) * BLOCK + m] * m1 + A[(ur + 6) * BLOCK + m] * m2
                ey = A[(ur + 1) * BLOCK + m] * m0 + A[(ur + 4) * BLOCK + m] * m1 + A[(ur + 7) * BLOCK + m] * m2
                ez = A[(ur + 2) * BLOCK + m] * m0 + A[(ur + 5) * BLOCK + m] * m1 + A[(ur + 8) * BLOCK + m] * m2
                Bx, By, Bz = W[6 * BLOCK + m], W[7 * BLOCK + m], W[8 * BLOCK + m]
                W[13 * BLOCK + m] += (s1 * Fz - s2 * Fy) + (ay * Bz - az * By) + (ey * bz - ez * by)
                W[14 * BLOCK + m] += (s2 * Fx - s0 * Fz) + (az * Bx - ax * Bz) + (ez * bx - ex * bz)
                W[15 * BLOCK + m] += (s0 * Fy - s1 * Fx) + (ax * By - ay * Bx) + (ex * by - ey * bx)
            else:
                Bx, By, Bz = W[6 * BLOCK + m] + bx, W[7 * BLOCK + m] + by, W[8 * BLOCK + m] + bz
                W[13 * BLOCK + m] += (s1 * Fz - s2 * Fy) + (ay * Bz - az * By)
                W[14 * BLOCK + m] += (s2 * Fx - s0 * Fz) + (az * Bx - ax * Bz)
                W[15 * BLOCK + m] += (s0 * Fy - s1 * Fx) + (ax * By - ay * Bx)
    for m in range(BLOCK):
        A[tr * BLOCK + m] += W[13 * BLOCK + m]
        A[(tr + 1) * BLOCK + m] += W[14 * BLOCK + m]
        A[(tr + 2) * BLOCK + m] += W[15 * BLOCK + m]

@_inline
def _kick(Y, n, h, damped, E, G):
    """L ← exact solution over h of dL/dt = T − c·ω, frame frozen (Splitting._kick); E, G (nk,3,BLOCK)
    the decay factors of kick n."""
    if not damped:
        for m in range(BLOCK):
            Y[9 * BLOCK + m] += h * Y[12 * BLOCK + m]
            Y[10 * BLOCK + m] += h * Y[13 * BLOCK + m]
            Y[11 * BLOCK + m] += h * Y[14 * BLOCK + m]
        return
    for m in range(BLOCK):
        l0, l1, l2 = Y[9 * BLOCK + m], Y[10 * BLOCK + m], Y[11 * BLOCK + m]
        t0, t1, t2 = Y[12 * BLOCK + m], Y[13 * BLOCK + m], Y[14 * BLOCK + m]
        x0 = _decayed(Y, 0, n, l0, l1, l2, t0, t1, t2, E, G, m)
        x1 = _decayed(Y, 1, n, l0, l1, l2, t0, t1, t2, E, G, m)
        x2 = _decayed(Y, 2, n, l0, l1, l2, t0, t1, t2, E, G, m)
        Y[9 * BLOCK + m] = Y[0 * BLOCK + m] * x0 + Y[3 * BLOCK + m] * x1 + Y[6 * BLOCK + m] * x2
        Y[10 * BLOCK + m] = Y[1 * BLOCK + m] * x0 + Y[4 * BLOCK + m] * x1 + Y[7 * BLOCK + m] * x2
        Y[11 * BLOCK + m] = Y[2 * BLOCK + m] * x0 + Y[5 * BLOCK + m] * x1 + Y[8 * BLOCK + m] * x2

@_inline
def _decayed(Y, i, n, l0, l1, l2, t0, t1, t2, E, G, m):
    """Principal component i of L after kick n (compiled._decayed with the tabled factors)."""
    qi0, qi1, qi2 = Y[(3 * i) * BLOCK + m], Y[(3 * i + 1) * BLOCK + m], Y[(3 * i + 2) * BLOCK + m]
    return ((qi0 * l0 + qi1 * l1 + qi2 * l2) * E[(3 * n + i) * BLOCK + m]
            + (qi0 * t0 + qi1 * t1 + qi2 * t2) * G[(3 * n + i) * BLOCK + m])

@_inline
def _drift(Y, h, inv1, plan_axis, plan_frac, plan_coef):
    """Exact free rotation over h (Splitting._turn_free): a turn about L by h|L|/λ₁, then the plan's
    turns about principal axes."""
    hi = h * inv1
    for m in range(BLOCK):
        l0, l1, l2 = Y[9 * BLOCK + m], Y[10 * BLOCK + m], Y[11 * BLOCK + m]
        L2 = l0 * l0 + l1 * l1 + l2 * l2
        norm = np.sqrt(L2)
        sn, cs = sincos(hi * norm)
        live = norm > 0
        fa = sn / norm if live else hi
        fb = (1.0 - cs) / L2 if live else 0.5 * hi ** 2
        for i in range(3):
            q0, q1, q2 = Y[(3 * i) * BLOCK + m], Y[(3 * i + 1) * BLOCK + m], Y[(3 * i + 2) * BLOCK + m]
            k0 = q1 * l2 - q2 * l1
            k1 = q2 * l0 - q0 * l2
            k2 = q0 * l1 - q1 * l0
            Y[(3 * i) * BLOCK + m] = q0 - fa * k0 + fb * (k1 * l2 - k2 * l1)
            Y[(3 * i + 1) * BLOCK + m] = q1 - fa * k1 + fb * (k2 * l0 - k0 * l2)
            Y[(3 * i + 2) * BLOCK + m] = q2 - fa * k2 + fb * (k0 * l1 - k1 * l0)
    for n in range(plan_axis.shape[0]):
        f = plan_frac[n] * h
        cf = plan_coef[n]
        # the plan turns about principal axis 0 or 2 (Splitting._drift_plan); one loop per axis, so
        # the rows are constants and LLVM sees that they do not overlap
        if plan_axis[n] == 0:
            _turn_rows(Y, 0, 1, 2, f, cf)
        else:
            _turn_rows(Y, 2, 0, 1, f, cf)

@_inline
def _turn_rows(Y, a, j, k, f, cf):
    """Turn rows j, k of every lane's Q about row a by f·(Q_a·L)·cf (Splitting._turn_free's plan step)."""
    for m in range(BLOCK):
        th = f * (Y[(3 * a) * BLOCK + m] * Y[9 * BLOCK + m] + Y[(3 * a + 1) * BLOCK + m] * Y[10 * BLOCK + m]
                  + Y[(3 * a + 2) * BLOCK + m] * Y[11 * BLOCK + m]) * cf
        sn, cs = sincos(th)
        for i in range(3):
            qj, qk = Y[(3 * j + i) * BLOCK + m], Y[(3 * k + i) * BLOCK + m]
            Y[(3 * j + i) * BLOCK + m] = cs * qj + sn * qk
            Y[(3 * k + i) * BLOCK + m] = cs * qk - sn * qj

@_inline
def _newton_schulz(Y):
    for m in range(BLOCK):
        r = _newton_schulz9(Y[0 * BLOCK + m], Y[1 * BLOCK + m], Y[2 * BLOCK + m], Y[3 * BLOCK + m],
                            Y[4 * BLOCK + m], Y[5 * BLOCK + m], Y[6 * BLOCK + m], Y[7 * BLOCK + m], Y[8 * BLOCK + m])
        for i in range(9):
            Y[i * BLOCK + m] = r[i]

@_inline
def _check_rows(Y, ur, lr, orth_limit, alive, code, at, steps):
    """Mark lanes whose state is no longer sane (simulate._check): code 1 non-finite L (rows lr…),
    2 frame (rows ur…) not orthonormal; ``at`` the steps done when first seen."""
    for m in range(BLOCK):
        fin = (np.isfinite(Y[lr * BLOCK + m]) and np.isfinite(Y[(lr + 1) * BLOCK + m])
               and np.isfinite(Y[(lr + 2) * BLOCK + m]))
        acc = 0.0
        for i in range(3):
            for j in range(3):
                g = (Y[(ur + 3 * i) * BLOCK + m] * Y[(ur + 3 * j) * BLOCK + m]
                     + Y[(ur + 3 * i + 1) * BLOCK + m] * Y[(ur + 3 * j + 1) * BLOCK + m]
                     + Y[(ur + 3 * i + 2) * BLOCK + m] * Y[(ur + 3 * j + 2) * BLOCK + m] - (1.0 if i == j else 0.0))
                acc += g * g
        c = 0 if fin and np.sqrt(acc) < orth_limit else (1 if not fin else 2)
        if alive[m] and c != 0:
            alive[m] = False
            code[m] = c
            at[m] = steps

@_jit
def _split_block(Y, P, steps0, marks, check_every, dt, damped, drifts, kicks, inv_m, inv_inertia, inv1,
                 plan_axis, plan_frac, plan_coef, com, mass, gravity, pivot, dpos, dmom, rs, ms, k, axes,
                 orth_limit, oU, oL, ow, st, first):
    """Splitting.advance through ``marks`` for one block (compiled._member_splitting, lane by lane).

    oU (E,R,1,3,3), oL, ow (E,R,1,3) and st (E,3) are the whole ensemble's outputs; this block's
    lanes are members first … first+BLOCK−1 (members past E are padding, not written).
    """
    sa = drifts.shape[0]
    nk = sa + 2
    E = st.shape[0]
    Ed = np.empty(nk * 3 * BLOCK)
    Gd = np.empty(nk * 3 * BLOCK)
    hk = np.empty(nk)
    for n in range(sa + 1):
        hk[n] = kicks[n] * dt
    hk[sa + 1] = (kicks[sa] + kicks[0]) * dt
    for n in range(nk):
        h = hk[n]
        for i in range(3):
            inv = inv_m[i]
            for m in range(BLOCK):
                c = P[m]
                e = np.exp((-c * h) * inv)
                ci = c * (inv if inv > 0 else 1.0)
                Ed[(3 * n + i) * BLOCK + m] = e
                Gd[(3 * n + i) * BLOCK + m] = -np.expm1((-c * h) * inv) / ci if (inv > 0 and ci > 0) else h
    W = np.empty(16 * BLOCK)
    alive = np.ones(BLOCK, np.bool_)
    code = np.zeros(BLOCK, np.int64)
    at = np.zeros(BLOCK, np.int64)
    steps = steps0
    for r in range(marks.shape[0]):
        mark = marks[r]
        while steps < mark:
            n = min(check_every, mark - steps)
            if kicks[0] != 0.0:
                _kick(Y, 0, hk[0], damped, Ed, Gd)
            for step in range(n):
                for i in range(sa):
                    _drift(Y, drifts[i] * dt, inv1, plan_axis, plan_frac, plan_coef)
                    last = i == sa - 1
                    closing = last and step < n - 1 and kicks[0] != 0.0
                    coef = kicks[i + 1] + (kicks[0] if last and step < n - 1 else 0.0)
                    if coef != 0.0 or (last and step == n - 1):
                        _torque(Y, 0, 0, 12, False, P, com, mass, gravity, pivot, dpos, dmom, rs, ms, k, W)
                    if coef != 0.0:
                        _kick(Y, sa + 1 if closing else i + 1, coef * dt, damped, Ed, Gd)
                _newton_schulz(Y)
            steps += n
            _check_rows(Y, 0, 9, orth_limit, alive, code, at, steps)
        for m in range(min(BLOCK, E - first)):
            if not alive[m]:
                continue
            e = first + m
            q = np.empty((3, 3))
            for x in range(3):
                for y in range(3):
                    q[x, y] = Y[(3 * x + y) * BLOCK + m]
            for x in range(3):
                for y in range(3):
                    oU[e, r, 0, x, y] = axes[x, 0] * q[0, y] + axes[x, 1] * q[1, y] + axes[x, 2] * q[2, y]
                oL[e, r, 0, x] = Y[(9 + x) * BLOCK + m]
            # ω = Qᵀ I⁻¹ Q L (compiled._omega_one)
            l0 = q[0, 0] * Y[9 * BLOCK + m] + q[0, 1] * Y[10 * BLOCK + m] + q[0, 2] * Y[11 * BLOCK + m]
            l1 = q[1, 0] * Y[9 * BLOCK + m] + q[1, 1] * Y[10 * BLOCK + m] + q[1, 2] * Y[11 * BLOCK + m]
            l2 = q[2, 0] * Y[9 * BLOCK + m] + q[2, 1] * Y[10 * BLOCK + m] + q[2, 2] * Y[11 * BLOCK + m]
            I = inv_inertia
            c0 = I[0, 0] * l0 + I[0, 1] * l1 + I[0, 2] * l2
            c1 = I[1, 0] * l0 + I[1, 1] * l1 + I[1, 2] * l2
            c2 = I[2, 0] * l0 + I[2, 1] * l1 + I[2, 2] * l2
            for j in range(3):
                ow[e, r, 0, j] = q[0, j] * c0 + q[1, j] * c1 + q[2, j] * c2
    for m in range(min(BLOCK, E - first)):
        e = first + m
        st[e, 0] = code[m]
        st[e, 1] = steps if alive[m] else at[m]
        st[e, 2] = 0

@_jit
def blocks_splitting(X, P, b0, b1, steps0, marks, check_every, dt, damped, drifts, kicks, inv_m, inv_inertia, inv1,
                     plan_axis, plan_frac, plan_coef, com, mass, gravity, pivot, dpos, dmom, rs, ms, k, axes,
                     orth_limit, oU, oL, ow, st):
    """Blocks b0 … b1−1 of X (15, n·BLOCK) and P (4, n·BLOCK) through ``marks`` (:class:`.lanes.Lanes` runs the
    blocks in threads, a range each: the kernel releases the GIL and each block works in its own columns)."""
    for b in range(b0, b1):
        a = b * BLOCK
        # flat copies: rows a constant BLOCK apart, so LLVM sees that the rows do not overlap
        Y = np.empty(15 * BLOCK)
        Pb = np.empty(4 * BLOCK)
        Y.reshape((15, BLOCK))[:, :] = X[:, a:a + BLOCK]
        Pb.reshape((4, BLOCK))[:, :] = P[:, a:a + BLOCK]
        _split_block(Y, Pb, steps0, marks, check_every, dt, damped, drifts, kicks, inv_m, inv_inertia, inv1,
                     plan_axis, plan_frac, plan_coef, com, mass, gravity, pivot, dpos, dmom, rs, ms, k, axes,
                     orth_limit, oU, oL, ow, st, a)
        X[:, a:a + BLOCK] = Y.reshape((15, BLOCK))


# ------------------------------------------------------------------ PEM's RK4 (integrators.PemScheme)
# Block state Y (24·BLOCK): rows 0–8 U (corrected frame, user body axes), 9–17 U_dip (the
# uncorrected frame placing the dipoles), 18–20 L, 21–23 ω. Stage rows S (36·BLOCK): 0–8 the
# stage's frame, 9–11 its L, 12–14 its ω, 15–17 its torque, 18–20 and 21–29 the weighted sums of
# the increments dL and dU, 30–32 and 33–41 the last stage's increments.

@_inline
def _omega_rows(A, ur, lr, wr, I):
    """ω (rows wr…) = Uᵀ I⁻¹ U L for frame rows ur…, L rows lr… of A (compiled._omega_one)."""
    i00, i01, i02 = I[0, 0], I[0, 1], I[0, 2]
    i10, i11, i12 = I[1, 0], I[1, 1], I[1, 2]
    i20, i21, i22 = I[2, 0], I[2, 1], I[2, 2]
    for m in range(BLOCK):
        L0, L1, L2 = A[lr * BLOCK + m], A[(lr + 1) * BLOCK + m], A[(lr + 2) * BLOCK + m]
        u00, u01, u02 = A[ur * BLOCK + m], A[(ur + 1) * BLOCK + m], A[(ur + 2) * BLOCK + m]
        u10, u11, u12 = A[(ur + 3) * BLOCK + m], A[(ur + 4) * BLOCK + m], A[(ur + 5) * BLOCK + m]
        u20, u21, u22 = A[(ur + 6) * BLOCK + m], A[(ur + 7) * BLOCK + m], A[(ur + 8) * BLOCK + m]
        l0 = u00 * L0 + u01 * L1 + u02 * L2
        l1 = u10 * L0 + u11 * L1 + u12 * L2
        l2 = u20 * L0 + u21 * L1 + u22 * L2
        c0 = i00 * l0 + i01 * l1 + i02 * l2
        c1 = i10 * l0 + i11 * l1 + i12 * l2
        c2 = i20 * l0 + i21 * l1 + i22 * l2
        A[wr * BLOCK + m] = u00 * c0 + u10 * c1 + u20 * c2
        A[(wr + 1) * BLOCK + m] = u01 * c0 + u11 * c1 + u21 * c2
        A[(wr + 2) * BLOCK + m] = u02 * c0 + u12 * c1 + u22 * c2

@_inline
def _rk4_increments(S, dt, P, friction_on):
    """The stage's torque − cω and the increments dL = T·dt, dU = (ω × rows of U)·dt (rows 30–41)."""
    for m in range(BLOCK):
        cm = P[m]
        w0, w1, w2 = S[12 * BLOCK + m], S[13 * BLOCK + m], S[14 * BLOCK + m]
        t0, t1, t2 = S[15 * BLOCK + m], S[16 * BLOCK + m], S[17 * BLOCK + m]
        if friction_on:
            t0, t1, t2 = t0 - cm * w0, t1 - cm * w1, t2 - cm * w2
        S[30 * BLOCK + m], S[31 * BLOCK + m], S[32 * BLOCK + m] = t0 * dt, t1 * dt, t2 * dt
        for i in range(3):
            u0, u1, u2 = S[(3 * i) * BLOCK + m], S[(3 * i + 1) * BLOCK + m], S[(3 * i + 2) * BLOCK + m]
            S[(33 + 3 * i) * BLOCK + m] = (w1 * u2 - w2 * u1) * dt
            S[(34 + 3 * i) * BLOCK + m] = (w2 * u0 - w0 * u2) * dt
            S[(35 + 3 * i) * BLOCK + m] = (w0 * u1 - w1 * u0) * dt

@_inline
def _pem_correct_rows(Y):
    """U (rows 0–8) ← PEM's correction (Frame::correct2) of U_dip (rows 9–17) (compiled._pem_correct)."""
    for m in range(BLOCK):
        A00, A01, A02 = Y[9 * BLOCK + m], Y[10 * BLOCK + m], Y[11 * BLOCK + m]
        A10, A11, A12 = Y[12 * BLOCK + m], Y[13 * BLOCK + m], Y[14 * BLOCK + m]
        A20, A21, A22 = Y[15 * BLOCK + m], Y[16 * BLOCK + m], Y[17 * BLOCK + m]
        f0 = 1 + (A00 * A00 + A01 * A01 + A02 * A02)
        f1 = 1 + (A10 * A10 + A11 * A11 + A12 * A12)
        f2 = 1 + (A20 * A20 + A21 * A21 + A22 * A22)
        a0, a1, a2 = 2 * A00 / f0, 2 * A01 / f0, 2 * A02 / f0
        b0, b1, b2 = 2 * A10 / f1, 2 * A11 / f1, 2 * A12 / f1
        c0, c1, c2 = 2 * A20 / f2, 2 * A21 / f2, 2 * A22 / f2
        d12 = a0 * b0 + a1 * b1 + a2 * b2
        d23 = b0 * c0 + b1 * c1 + b2 * c2
        d31 = c0 * a0 + c1 * a1 + c2 * a2
        g12, g23, g31 = 1 - 0.5 * d12, 1 - 0.5 * d23, 1 - 0.5 * d31
        Y[0 * BLOCK + m], Y[1 * BLOCK + m], Y[2 * BLOCK + m] = (a0 - d12 * b0) / g12, (a1 - d12 * b1) / g12, \
            (a2 - d12 * b2) / g12
        Y[3 * BLOCK + m], Y[4 * BLOCK + m], Y[5 * BLOCK + m] = (b0 - d23 * c0) / g23, (b1 - d23 * c1) / g23, \
            (b2 - d23 * c2) / g23
        Y[6 * BLOCK + m], Y[7 * BLOCK + m], Y[8 * BLOCK + m] = (c0 - d31 * a0) / g31, (c1 - d31 * a1) / g31, \
            (c2 - d31 * a2) / g31

@_inline
def _rk4_step(Y, S, P, dt, friction_on, inv_inertia, com, mass, gravity, pivot, dpos, dmom, rs, ms, k, W):
    """One step of PemScheme.advance (rk4) for every lane (kernels._pem_chunk with static sources)."""
    for m in range(BLOCK):
        for r in range(9):
            S[r * BLOCK + m] = Y[r * BLOCK + m]
        for r in range(3):
            S[(9 + r) * BLOCK + m] = Y[(18 + r) * BLOCK + m]
            S[(12 + r) * BLOCK + m] = Y[(21 + r) * BLOCK + m]
    # stage 1: gravity and the field by U, the dipoles placed by the previous step's U_dip (PEM's order)
    _torque_split_dip(Y, S, P, com, mass, gravity, pivot, dpos, dmom, rs, ms, k, W)
    _rk4_increments(S, dt, P, friction_on)
    for m in range(BLOCK):
        for r in range(3):
            S[(18 + r) * BLOCK + m] = S[(30 + r) * BLOCK + m]
        for r in range(9):
            S[(21 + r) * BLOCK + m] = S[(33 + r) * BLOCK + m]
    for stage in range(1, 4):
        a = 0.5 if stage < 3 else 1.0
        wgt = 2.0 if stage < 3 else 1.0
        for m in range(BLOCK):
            for r in range(9):
                S[r * BLOCK + m] = Y[r * BLOCK + m] + a * S[(33 + r) * BLOCK + m]
            for r in range(3):
                S[(9 + r) * BLOCK + m] = Y[(18 + r) * BLOCK + m] + a * S[(30 + r) * BLOCK + m]
        _omega_rows(S, 0, 9, 12, inv_inertia)
        _torque(S, 0, 0, 15, True, P, com, mass, gravity, pivot, dpos, dmom, rs, ms, k, W)
        _rk4_increments(S, dt, P, friction_on)
        for m in range(BLOCK):
            for r in range(3):
                S[(18 + r) * BLOCK + m] = S[(18 + r) * BLOCK + m] + wgt * S[(30 + r) * BLOCK + m]
            for r in range(9):
                S[(21 + r) * BLOCK + m] = S[(21 + r) * BLOCK + m] + wgt * S[(33 + r) * BLOCK + m]
    for m in range(BLOCK):
        for r in range(3):
            S[(9 + r) * BLOCK + m] = Y[(18 + r) * BLOCK + m] + S[(18 + r) * BLOCK + m] / 6
            Y[(18 + r) * BLOCK + m] = S[(9 + r) * BLOCK + m]
        for r in range(9):
            S[r * BLOCK + m] = Y[r * BLOCK + m] + S[(21 + r) * BLOCK + m] / 6
            Y[(9 + r) * BLOCK + m] = S[r * BLOCK + m]
    _omega_rows(S, 0, 9, 12, inv_inertia)
    for m in range(BLOCK):
        for r in range(3):
            Y[(21 + r) * BLOCK + m] = S[(12 + r) * BLOCK + m]
    _pem_correct_rows(Y)

@_inline
def _torque_split_dip(Y, S, P, com, mass, gravity, pivot, dpos, dmom, rs, ms, k, W):
    """Stage 1's torque into S rows 15–17: frame U from S rows 0–8, dipoles by U_dip (Y rows 9–17)."""
    # the dipole frame lives in Y: copy it next to the stage frame (rows 42–50 of S)
    for m in range(BLOCK):
        for r in range(9):
            S[(42 + r) * BLOCK + m] = Y[(9 + r) * BLOCK + m]
    _torque(S, 0, 42, 15, True, P, com, mass, gravity, pivot, dpos, dmom, rs, ms, k, W)

@_jit
def _rk4_block(Y, P, steps0, marks, check_every, dt, friction_on, inv_inertia, com, mass, gravity, pivot,
               dpos, dmom, rs, ms, k, orth_limit, oU, oL, ow, st, first):
    """PemScheme (rk4) through ``marks`` for one block (compiled._member_pem, lane by lane)."""
    E = st.shape[0]
    S = np.empty(51 * BLOCK)
    W = np.empty(16 * BLOCK)
    alive = np.ones(BLOCK, np.bool_)
    code = np.zeros(BLOCK, np.int64)
    at = np.zeros(BLOCK, np.int64)
    steps = steps0
    for r in range(marks.shape[0]):
        mark = marks[r]
        while steps < mark:
            n = min(check_every, mark - steps)
            for _ in range(n):
                _rk4_step(Y, S, P, dt, friction_on, inv_inertia, com, mass, gravity, pivot, dpos, dmom, rs, ms,
                          k, W)
            steps += n
            # the check of simulate._check: finite L, orthonormal corrected frame
            _check_rows(Y, 0, 18, orth_limit, alive, code, at, steps)
        for m in range(min(BLOCK, E - first)):
            if alive[m]:
                e = first + m
                for x in range(3):
                    for y in range(3):
                        oU[e, r, 0, x, y] = Y[(3 * x + y) * BLOCK + m]
                    oL[e, r, 0, x] = Y[(18 + x) * BLOCK + m]
                    ow[e, r, 0, x] = Y[(21 + x) * BLOCK + m]
    for m in range(min(BLOCK, E - first)):
        e = first + m
        st[e, 0] = code[m]
        st[e, 1] = steps if alive[m] else at[m]
        st[e, 2] = 0

@_jit
def blocks_rk4(X, P, b0, b1, steps0, marks, check_every, dt, friction_on, inv_inertia, com, mass, gravity, pivot,
               dpos, dmom, rs, ms, k, orth_limit, oU, oL, ow, st):
    """Blocks b0 … b1−1 of X (24, n·BLOCK) and P (4, n·BLOCK) through ``marks`` (as :func:`blocks_splitting`)."""
    for b in range(b0, b1):
        a = b * BLOCK
        Y = np.empty(24 * BLOCK)
        Pb = np.empty(4 * BLOCK)
        Y.reshape((24, BLOCK))[:, :] = X[:, a:a + BLOCK]
        Pb.reshape((4, BLOCK))[:, :] = P[:, a:a + BLOCK]
        _rk4_block(Y, Pb, steps0, marks, check_every, dt, friction_on, inv_inertia, com, mass, gravity,
                   pivot, dpos, dmom, rs, ms, k, orth_limit, oU, oL, ow, st, a)
        X[:, a:a + BLOCK] = Y.reshape((24, BLOCK))
