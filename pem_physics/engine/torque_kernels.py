"""Compiled sources, fields and torques (the kernels' twin of :mod:`.torques`): moving pivots' tables, source
dipoles placed at a time, the dipole pair, the torque and force on every body (theory §3–§4)."""

from __future__ import annotations

import numpy as np

from ..model import analytic
from . import dipole_pair
from .kernel_flags import _jit, _jit_borrowed, _jit_inline

# ------------------------------------------------------------------ sources and fields

@_jit_inline
def _after(M, a, b, time):
    """The first index in a…b−1 of the sorted M.tab_t whose time is past ``time`` (b if none): searchsorted right."""
    while a < b:
        mid = (a + b) // 2
        if M.tab_t[mid] <= time:
            a = mid + 1
        else:
            b = mid
    return a


@_jit_borrowed
def _knot(M, k, time):
    """The interval i of table k's samples that holds ``time`` (Spline.__call__: searchsorted right − 1, clamped
    to the table): an index into M.tab_t."""
    lo, hi = M.tab_lo[k], M.tab_lo[k + 1]
    i = _after(M, lo, hi, time) - 1
    if i > hi - 2:
        i = hi - 2
    if i < lo:
        i = lo
    return i


@_jit_inline
def _cubic(M, i, col, A, B, h, order):
    """Column ``col`` of the spline in interval i at the weights A, B (Spline.__call__'s formulas)."""
    y0, y1, m0, m1 = M.tab_y[i, col], M.tab_y[i + 1, col], M.tab_m[i, col], M.tab_m[i + 1, col]
    if order == 3:
        return (m1 - m0) / h
    if order == 2:
        return A * m0 + B * m1
    if order == 1:
        return (y1 - y0) / h + ((1.0 - 3.0 * A * A) * m0 + (3.0 * B * B - 1.0) * m1) * (h / 6.0)
    return A * y0 + B * y1 + ((A ** 3.0 - A) * m0 + (B ** 3.0 - B) * m1) * (h * h / 6.0)


@_jit_borrowed
def _spline(M, i, time, order):
    """A tabulated motion's spline (model.motion.Spline.__call__, the same formulas) in interval i (:func:`_knot`) at
    ``time``: its 7 columns — position (m), then the quaternion's spline (w, x, y, z; not normalised) — as a tuple;
    value (order 0), first, second or third derivative. Callers pass ``order`` as a variable, not a constant: numba
    compiles a function anew for each constant argument it is called with."""
    t0, t1 = M.tab_t[i], M.tab_t[i + 1]
    h = t1 - t0
    A = (t1 - time) / h
    B = (time - t0) / h
    return (_cubic(M, i, 0, A, B, h, order), _cubic(M, i, 1, A, B, h, order), _cubic(M, i, 2, A, B, h, order),
            _cubic(M, i, 3, A, B, h, order), _cubic(M, i, 4, A, B, h, order), _cubic(M, i, 5, A, B, h, order),
            _cubic(M, i, 6, A, B, h, order))


_cosine_rate = _jit_inline(analytic.cosine_rate)


@_jit_borrowed
def _harmonic(M, k, time, order):
    """The order-th derivative (0…3) of the sum of cosines in table k (model.analytic.harmonic_sum: the same terms
    in the same order) at ``time``: a 3-tuple (m, m/s, m/s², m/s³). ``order`` a variable (see :func:`_spline`)."""
    x0 = x1 = x2 = 0.0
    for r in range(M.tab_lo[k], M.tab_lo[k + 1]):
        f = _cosine_rate(M.tab_y[r, 3], M.tab_y[r, 4], time, order)
        x0 += M.tab_y[r, 0] * f
        x1 += M.tab_y[r, 1] * f
        x2 += M.tab_y[r, 2] * f
    return x0, x1, x2


@_jit_borrowed
def _tabulated(M, j, t, org, R, SR):
    """Source body j on its table M.sb_tab[j] at t (system.source_placement, source_rates): origin org[j] (m),
    orientation R[j] (rows: body axes in lab) and into SR[j] its origin's velocity (m/s) and angular velocity
    (rad/s, lab) — TabulatedMotion.position, orientation (quat_to_orientation of the normalised spline),
    velocity and angular_velocity (ω = 2ṅn̄); on a sum of cosines (Oscillation) its position and velocity, the
    orientation kept."""
    k = M.sb_tab[j]
    if M.tab_kind[k] == 2:
        for o in range(2):
            h = _harmonic(M, k, t, o)
            for c in range(3):
                if o == 0:
                    org[j, c] = h[c]
                else:
                    SR[j, c], SR[j, 3 + c] = h[c], 0.0
        for a in range(3):
            for b in range(3):
                R[j, a, b] = M.sb_rot[j, a, b]
        return
    i = _knot(M, k, t)
    s0 = s1 = s2 = s3 = d0 = d1 = d2 = d3 = 0.0
    for o in range(2):  # the value and the rate, from one compiled _spline (o a variable)
        sp = _spline(M, i, t, o)
        for c in range(3):
            if o == 0:
                org[j, c] = sp[c]
            else:
                SR[j, c] = sp[c]
                SR[j, 3 + c] = 0.0
        if o == 0:
            s0, s1, s2, s3 = sp[3], sp[4], sp[5], sp[6]
        else:
            d0, d1, d2, d3 = sp[3], sp[4], sp[5], sp[6]
    if M.tab_kind[k] != 1:
        for a in range(3):
            for b in range(3):
                R[j, a, b] = M.sb_rot[j, a, b]
        return
    nr = np.sqrt(s0 * s0 + s1 * s1 + s2 * s2 + s3 * s3)
    n0, n1, n2, n3 = s0 / nr, s1 / nr, s2 / nr, s3 / nr
    # quaternion(): s/|s|; quat_to_matrix normalises again (a unit vector to rounding), then U = Rᵀ
    nn = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2 + n3 * n3)
    w, x, y, z = n0 / nn, n1 / nn, n2 / nn, n3 / nn
    R[j, 0, 0], R[j, 1, 0], R[j, 2, 0] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
    R[j, 0, 1], R[j, 1, 1], R[j, 2, 1] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
    R[j, 0, 2], R[j, 1, 2], R[j, 2, 2] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
    nd = n0 * d0 + n1 * d1 + n2 * d2 + n3 * d3
    e0, e1, e2, e3 = (d0 - n0 * nd) / nr, (d1 - n1 * nd) / nr, (d2 - n2 * nd) / nr, (d3 - n3 * nd) / nr
    v0, v1, v2 = -n1, -n2, -n3
    SR[j, 3] = 2.0 * (e0 * v0 + n0 * e1 + (e2 * v2 - e3 * v1))
    SR[j, 4] = 2.0 * (e0 * v1 + n0 * e2 + (e3 * v0 - e1 * v2))
    SR[j, 5] = 2.0 * (e0 * v2 + n0 * e3 + (e1 * v1 - e2 * v0))


@_jit_inline
def _skew(a0, a1, a2, i, j):
    """[a]×[i, j] for the axis a = (a0, a1, a2)."""
    if i == 0:
        return 0.0 if j == 0 else (-a2 if j == 1 else a1)
    if i == 1:
        return a2 if j == 0 else (0.0 if j == 1 else -a0)
    return -a1 if j == 0 else (a0 if j == 1 else 0.0)


@_jit_inline
def _rodrigues(a0, a1, a2, st, ct, i, j):
    """R[i, j] of R = 𝟙 + sin θ [a]× + (1 − cos θ)[a]×² (st = sin θ, ct = 1 − cos θ), without an array: the
    step loops that call :func:`_sources_exact` run without reference counts and so allocate nothing."""
    kk = (_skew(a0, a1, a2, i, 0) * _skew(a0, a1, a2, 0, j) + _skew(a0, a1, a2, i, 1) * _skew(a0, a1, a2, 1, j)
          + _skew(a0, a1, a2, i, 2) * _skew(a0, a1, a2, 2, j))
    return (1.0 if i == j else 0.0) + st * _skew(a0, a1, a2, i, j) + ct * kk


@_jit
def _sources_exact(M, t, org, R, rs, ms, SR, rates):
    """Lab positions rs and moments ms (S,3) of the source dipoles at time t (exact kinematics;
    engine.system.source_placement). org (K,3), R (K,3,3) scratch. With ``rates`` (the drivers' power is
    summed) the rates into SR (K+S,6): rows 0…K−1 each body's origin velocity (m/s) and angular velocity
    (rad/s, lab), rows K… each dipole's ṙ and ṁ (system.sources_and_rates)."""
    for j in range(M.sb_kind.shape[0]):
        kind = M.sb_kind[j]
        if kind == 3:
            _tabulated(M, j, t, org, R, SR)
        elif kind == 2:
            ph = M.sb_phase[j] + M.sb_omega[j] * t
            c, s = np.cos(ph), np.sin(ph)
            for i in range(3):
                org[j, i] = M.sb_center[j, i] + M.sb_r1[j, i] * c + M.sb_r2[j, i] * s
            # orientation @ Rᵀ, R = I + sin θ [a]× + (1 − cos θ)[a]×², θ = ω t (axis_angle_matrix)
            th = M.sb_omega[j] * t
            st, ct = np.sin(th), 1 - np.cos(th)
            a0, a1, a2 = M.sb_axis[j, 0], M.sb_axis[j, 1], M.sb_axis[j, 2]
            for a in range(3):
                for b in range(3):
                    R[j, a, b] = (M.sb_rot[j, a, 0] * _rodrigues(a0, a1, a2, st, ct, b, 0)
                                  + M.sb_rot[j, a, 1] * _rodrigues(a0, a1, a2, st, ct, b, 1)
                                  + M.sb_rot[j, a, 2] * _rodrigues(a0, a1, a2, st, ct, b, 2))
        else:
            for i in range(3):
                org[j, i] = M.sb_pos[j, i] + (M.sb_vel[j, i] * t if kind == 1 else 0.0)
            for a in range(3):
                for b in range(3):
                    R[j, a, b] = M.sb_rot[j, a, b]
        if rates and kind != 3:
            # source_rates: a constant velocity, or the orbit's w(−r₁ sin φ + r₂ cos φ) turning at w·n̂
            for x in range(3):
                SR[j, x], SR[j, 3 + x] = (M.sb_vel[j, x] if kind == 1 else 0.0), 0.0
            if kind == 2:
                w = M.sb_omega[j]
                ph = M.sb_phase[j] + w * t
                sn, cs = np.sin(ph), np.cos(ph)
                for x in range(3):
                    SR[j, x] = w * (-M.sb_r1[j, x] * sn + M.sb_r2[j, x] * cs)
                    SR[j, 3 + x] = M.sb_spin[j, x]
    _place_sources(M, org, R, rs, ms)
    if rates:
        # ṙ = v + ω × (r − o), ṁ = ω × m for every dipole, from its body's (v, ω)
        K = M.sb_kind.shape[0]
        for q in range(M.src_body.shape[0]):
            j = M.src_body[q]
            v0, v1, v2, w0, w1, w2 = SR[j, 0], SR[j, 1], SR[j, 2], SR[j, 3], SR[j, 4], SR[j, 5]
            d0, d1, d2 = rs[q, 0] - org[j, 0], rs[q, 1] - org[j, 1], rs[q, 2] - org[j, 2]
            m0, m1, m2 = ms[q, 0], ms[q, 1], ms[q, 2]
            SR[K + q, 0], SR[K + q, 1], SR[K + q, 2] = (v0 + (w1 * d2 - w2 * d1), v1 + (w2 * d0 - w0 * d2),
                                                        v2 + (w0 * d1 - w1 * d0))
            SR[K + q, 3], SR[K + q, 4], SR[K + q, 5] = w1 * m2 - w2 * m1, w2 * m0 - w0 * m2, w0 * m1 - w1 * m0

@_jit_inline
def _place_sources(M, org, R, rs, ms):
    for q in range(M.src_body.shape[0]):
        j = M.src_body[q]
        for i in range(3):
            rs[q, i] = org[j, i] + (M.src_pos[q, 0] * R[j, 0, i] + M.src_pos[q, 1] * R[j, 1, i]
                                    + M.src_pos[q, 2] * R[j, 2, i])
            ms[q, i] = M.src_mom[q, 0] * R[j, 0, i] + M.src_mom[q, 1] * R[j, 1, i] + M.src_mom[q, 2] * R[j, 2, i]

@_jit
def _sources_pem(M, updates, time, dt, frames, org, rs, ms, SR):
    """PemSourceDriver.current(): PEM's positions after ``updates`` updates, frames as PEM turned them; a body on a
    table placed (and its frame set) at PEM's clock ``time``, as a constant-velocity body is. SR (K+S,6) scratch."""
    for j in range(M.sb_kind.shape[0]):
        kind = M.sb_kind[j]
        if kind == 3:
            _tabulated(M, j, time, org, frames, SR)
        elif kind == 2:
            th = M.sb_phase[j] + updates * M.sb_omega[j] * dt
            c, s = np.cos(th), np.sin(th)
            for i in range(3):
                org[j, i] = M.sb_center[j, i] + M.sb_r1[j, i] * c + M.sb_r2[j, i] * s
        else:
            for i in range(3):
                org[j, i] = M.sb_pos[j, i] + (M.sb_vel[j, i] * time if kind == 1 else 0.0)
    _place_sources(M, org, frames, rs, ms)

@_jit_inline
def _external(M, field, t):
    bx, by, bz = field[0], field[1], field[2]
    if M.rf_on:
        ph = M.rf_omega * t + M.rf_phase
        c, s = np.cos(ph), np.sin(ph)
        bx = bx + M.rf_b1[0] * c + M.rf_b2[0] * s
        by = by + M.rf_b1[1] * c + M.rf_b2[1] * s
        bz = bz + M.rf_b1[2] * c + M.rf_b2[2] * s
    return bx, by, bz

@_jit_inline
def _separation(dx, dy, dz, k, periodic, box):
    """The separation d (its minimum image in a periodic box), 1/r² and k/r³ of a dipole pair."""
    if periodic:
        dx = dx - box[0] * np.rint(dx / box[0])
        dy = dy - box[1] * np.rint(dy / box[1])
        dz = dz - box[2] * np.rint(dz / box[2])
    inv_r2 = 1.0 / (dx * dx + dy * dy + dz * dz)
    return dx, dy, dz, inv_r2, k * np.sqrt(inv_r2) * inv_r2

_field_and_force = _jit_inline(dipole_pair.field_and_force)


@_jit_inline
def _pair(dx, dy, dz, cx, cy, cz, ax, ay, az, k, periodic, box):
    """Field and force on dipole a from dipole c at separation d = r_a − r_c, its minimum image in a periodic box
    (:func:`.dipole_pair.field_and_force`)."""
    if periodic:
        dx = dx - box[0] * np.rint(dx / box[0])
        dy = dy - box[1] * np.rint(dy / box[1])
        dz = dz - box[2] * np.rint(dz / box[2])
    return _field_and_force(dx, dy, dz, cx, cy, cz, ax, ay, az, k)

@_jit_inline
def _rate_energy(dx, dy, dz, cx, cy, cz, ax, ay, az, k, periodic, box):
    """a·B_c(r_a): the field of dipole c at d = r_a − r_c (minimum image) along a — −U_pair (torques.dipole_pair_terms);
    with c = ṁ_s of a source, B_s·ṁ_s of torques.driver_power (the field at the source from a, along ṁ_s)."""
    dx, dy, dz, inv_r2, kr3 = _separation(dx, dy, dz, k, periodic, box)
    pad = ax * dx + ay * dy + az * dz
    pcd = cx * dx + cy * dy + cz * dz
    return kr3 * (3.0 * pad * pcd * inv_r2 - (ax * cx + ay * cy + az * cz))

@_jit_borrowed
def _pivots(M, t, X, Xt, pv):
    """Centres of rotation Xt (B,3) m at t: X with each moving pivot at its table's position
    (system.centres), and pv (B,12) each moving pivot's position, velocity, acceleration and jerk (rows of
    fixed pivots stay zero)."""
    for b in range(X.shape[0]):
        k = M.pv_tab[b]
        if k < 0:
            for x in range(3):
                Xt[b, x] = X[b, x]
            continue
        harmonic = M.tab_kind[k] == 2
        i = _knot(M, k, t) if not harmonic else 0
        for o in range(4):
            if harmonic:
                h = _harmonic(M, k, t, o)
                for x in range(3):
                    pv[b, 3 * o + x] = h[x]
            else:
                sp = _spline(M, i, t, o)
                for x in range(3):
                    pv[b, 3 * o + x] = sp[x]
        for x in range(3):
            Xt[b, x] = pv[b, x]

@_jit_inline
def _torque(M, U, Ud, split, bext, rs, ms, X, T, F, s, p, r, Td, pv, SR, dB, power, W):
    """Torques T (B,3) N·m about the centres X (B,3) m at orientations U (gravity) with dipoles placed by Ud,
    and the total forces F (B,3) N on the bodies (gravity M·g plus the dipole forces: torques.evaluate's
    force, which only translating bodies use).

    X: the pivots, or for translating bodies their centres of mass now (the state's positions; rows of the
    other bodies hold their pivots, so a scene without translation gets the numbers it got from M.pivot).
    bext: the uniform external field (3-tuple); rs, ms (S,3) source dipoles in the lab;
    s, p, r (D,3) and Td (B,3) scratch. Friction is not included. The dipole forces are added to M·g one by
    one (torques.evaluate sums a body's dipoles first: the same to rounding).
    ``split`` (PEM's schemes): the external field turns each dipole as the frame U carries it,
    the dipole–dipole terms use the dipoles as Ud placed them (torques.evaluate with U_dipoles).

    Moving pivots (pv (B,12) from :func:`_pivots`, X their positions): a body's gravity is g − a_pivot (the pivot
    frame's). With ``power`` also ∂V/∂t at fixed U into W[0] (torques.driver_power and the inertial term
    M·R_G·ȧ_pivot): SR (K+S,6) the sources' rates (:func:`_sources_exact`), dB (3,) the rotating field's rate.
    """
    com, mass, gravity, owner, dpos, dmom = M.com, M.mass, M.gravity, M.owner, M.dpos, M.dmom
    pairs, k, periodic, box = M.pairs, M.k, M.periodic, M.box
    g0, g1, g2 = gravity[0], gravity[1], gravity[2]
    wsum = 0.0
    for b in range(U.shape[0]):
        c0, c1, c2 = com[b, 0], com[b, 1], com[b, 2]
        rg0 = U[b, 0, 0] * c0 + U[b, 1, 0] * c1 + U[b, 2, 0] * c2
        rg1 = U[b, 0, 1] * c0 + U[b, 1, 1] * c1 + U[b, 2, 1] * c2
        rg2 = U[b, 0, 2] * c0 + U[b, 1, 2] * c1 + U[b, 2, 2] * c2
        m = mass[b]
        e0, e1, e2 = g0 - pv[b, 6], g1 - pv[b, 7], g2 - pv[b, 8]  # zero rows for fixed pivots: g exactly
        T[b, 0] = m * (rg1 * e2 - rg2 * e1)
        T[b, 1] = m * (rg2 * e0 - rg0 * e2)
        T[b, 2] = m * (rg0 * e1 - rg1 * e0)
        F[b, 0] = m * g0
        F[b, 1] = m * g1
        F[b, 2] = m * g2
        Td[b, 0] = Td[b, 1] = Td[b, 2] = 0.0
        if power:
            wsum += m * (rg0 * pv[b, 9] + rg1 * pv[b, 10] + rg2 * pv[b, 11])
    D = owner.shape[0]
    if D == 0:
        if power:
            W[0] = wsum
        return
    K = M.sb_kind.shape[0]
    rates = power and not M.static_sources
    for d in range(D):
        b = owner[d]
        for j in range(3):
            s[d, j] = Ud[b, 0, j] * dpos[d, 0] + Ud[b, 1, j] * dpos[d, 1] + Ud[b, 2, j] * dpos[d, 2]
            p[d, j] = Ud[b, 0, j] * dmom[d, 0] + Ud[b, 1, j] * dmom[d, 1] + Ud[b, 2, j] * dmom[d, 2]
            r[d, j] = X[b, j] + s[d, j]
    bx, by, bz = bext
    for a in range(D):
        ax, ay, az = p[a, 0], p[a, 1], p[a, 2]
        ex, ey, ez = ax, ay, az  # the moment the external field turns
        if split:
            bo = owner[a]
            ex = U[bo, 0, 0] * dmom[a, 0] + U[bo, 1, 0] * dmom[a, 1] + U[bo, 2, 0] * dmom[a, 2]
            ey = U[bo, 0, 1] * dmom[a, 0] + U[bo, 1, 1] * dmom[a, 1] + U[bo, 2, 1] * dmom[a, 2]
            ez = U[bo, 0, 2] * dmom[a, 0] + U[bo, 1, 2] * dmom[a, 1] + U[bo, 2, 2] * dmom[a, 2]
        if pairs:
            Bx = By = Bz = Fx = Fy = Fz = 0.0
            oa = owner[a]
            xa, ya, za = r[a, 0], r[a, 1], r[a, 2]
            # the other bodies' dipoles, then the sources: one _pair call site (each inlined copy costs compile time)
            for c in range(D + rs.shape[0]):
                if c < D:
                    if owner[c] == oa:
                        continue
                    qx, qy, qz, cx, cy, cz = r[c, 0], r[c, 1], r[c, 2], p[c, 0], p[c, 1], p[c, 2]
                else:
                    q = c - D
                    qx, qy, qz, cx, cy, cz = rs[q, 0], rs[q, 1], rs[q, 2], ms[q, 0], ms[q, 1], ms[q, 2]
                t = _pair(xa - qx, ya - qy, za - qz, cx, cy, cz, ax, ay, az, k, periodic, box)
                Bx, By, Bz, Fx, Fy, Fz = Bx + t[0], By + t[1], Bz + t[2], Fx + t[3], Fy + t[4], Fz + t[5]
                if rates and c >= D:
                    # the source moves: −F_s·ṙ_s − B_s·ṁ_s, F_s = −(the force on a from it) (Newton's third law)
                    n = K + c - D
                    wsum += t[3] * SR[n, 0] + t[4] * SR[n, 1] + t[5] * SR[n, 2]
                    wsum -= _rate_energy(xa - qx, ya - qy, za - qz, SR[n, 3], SR[n, 4], SR[n, 5], ax, ay, az, k,
                                         periodic, box)
            if power:  # the dipole moves with its pivot: −F·v_pivot
                wsum -= Fx * pv[oa, 3] + Fy * pv[oa, 4] + Fz * pv[oa, 5]
            s0, s1, s2 = s[a, 0], s[a, 1], s[a, 2]
            if split:
                t0 = (s1 * Fz - s2 * Fy) + (ay * Bz - az * By) + (ey * bz - ez * by)
                t1 = (s2 * Fx - s0 * Fz) + (az * Bx - ax * Bz) + (ez * bx - ex * bz)
                t2 = (s0 * Fy - s1 * Fx) + (ax * By - ay * Bx) + (ex * by - ey * bx)
            else:
                Bx, By, Bz = Bx + bx, By + by, Bz + bz
                t0 = (s1 * Fz - s2 * Fy) + (ay * Bz - az * By)
                t1 = (s2 * Fx - s0 * Fz) + (az * Bx - ax * Bz)
                t2 = (s0 * Fy - s1 * Fx) + (ax * By - ay * Bx)
            # the force on the dipole's body: summed here, in the one pair loop (a second loop costs compile time)
            F[oa, 0] += Fx
            F[oa, 1] += Fy
            F[oa, 2] += Fz
        else:
            t0, t1, t2 = ey * bz - ez * by, ez * bx - ex * bz, ex * by - ey * bx
        b = owner[a]
        Td[b, 0] += t0
        Td[b, 1] += t1
        Td[b, 2] += t2
        if power and M.rf_on:  # the rotating field: −p·∂B/∂t
            wsum -= ax * dB[0] + ay * dB[1] + az * dB[2]
    for b in range(U.shape[0]):
        T[b, 0] += Td[b, 0]
        T[b, 1] += Td[b, 1]
        T[b, 2] += Td[b, 2]
    if power:
        W[0] = wsum
