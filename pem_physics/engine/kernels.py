"""The compiled kernels (numba) of the engine: the step functions behind :mod:`.compiled`.

Everything here is compiled by numba on first use (cached on disk, :mod:`pem_physics.jit`); the Python
side — the scene's constant arrays (:class:`~.compiled.Model`), the runner that calls these kernels
through record marks — lives in :mod:`.compiled`, which imports this module only when a kernel runs
(or not at all when an ahead-of-time build of the single-scene kernels is loaded: :mod:`.aot`).

Shapes: E members, B moving bodies, D dipoles on them, S source dipoles on K fixed/driven bodies.
Status codes per member: (code, steps done, body), codes as :data:`.compiled.OK` etc.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..jit import numba as _numba

nb = _numba()

#: Status codes (the same numbers as compiled.OK, NONFINITE, NOT_ORTHONORMAL, CONTACT, EVENTS_FULL).
OK, NONFINITE, NOT_ORTHONORMAL, CONTACT, EVENTS_FULL = 0, 1, 2, 3, 4
#: Wall kinds (compiled.WALL_PLANE, …).
WALL_PLANE, WALL_SPHERE, WALL_CYLINDER, WALL_BOX = 0, 1, 2, 3
#: Event kinds in the contact buffers (compiled.EVENT_KINDS: "impact", "rest", "lift-off").
EV_IMPACT, EV_REST, EV_LIFT = 0, 1, 2

if nb is None:
    raise ImportError("numba is not available (not installed, or PEM_NUMBA=0)")

#: The most steps one certified span of free flight takes (:func:`_horizon`), unchecked: 4096, found in 12 passes
#: over the pairs at most.
SPAN = 4096

#: The fields of compiled.ContactArrays the gap checks read (:func:`_overlap`, :func:`_min_gap`), under their names:
#: the step loop passes these, not the whole tuple — a call takes every array of its arguments member by member,
#: and the ~50 of ContactArrays cost ~0.4 µs a call, more than a small scene's gaps.
_Gaps = namedtuple("_Gaps", ["owner", "center", "radius", "pair", "spheres", "limit", "resting", "wall_kind",
                             "wall_sign", "wall_point", "wall_dir", "wall_radius", "wall_axes", "wall_half"])

_jit = nb.njit(cache=True, error_model="numpy")
_jit_inline = nb.njit(cache=True, error_model="numpy", inline="always")
_jit_par = nb.njit(cache=True, error_model="numpy", parallel=True)
# A single scene's entries release the GIL while they run (as their builds made ahead of time do: aot.py), so that
# groups of independent bodies can step in threads (groups.py)
_jit_entry = nb.njit(cache=True, error_model="numpy", nogil=True)
# The step loops allocate nothing and only borrow the arrays they are given: compiled without numba's
# reference counting, which otherwise puts an atomic count on every array taken from the Model or sliced
# in the loop (hundreds a step; the loop ran ~2x slower).
_jit_borrowed = nb.njit(cache=True, error_model="numpy", _nrt=False)
prange = nb.prange

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


@_jit_borrowed
def _tabulated(M, j, t, org, R, SR):
    """Source body j on its table M.sb_tab[j] at t (system.source_placement, source_rates): origin org[j] (m),
    orientation R[j] (rows: body axes in lab) and into SR[j] its origin's velocity (m/s) and angular velocity
    (rad/s, lab) — TabulatedMotion.position, orientation (quat_to_orientation of the normalised spline),
    velocity and angular_velocity (ω = 2ṅn̄)."""
    k = M.sb_tab[j]
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
    if not M.tab_rot[k]:
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

@_jit_inline
def _pair(dx, dy, dz, cx, cy, cz, ax, ay, az, k, periodic, box):
    """Field and force on dipole a from dipole c at separation d = r_a − r_c (torques.dipole_pair_terms)."""
    dx, dy, dz, inv_r2, kr3 = _separation(dx, dy, dz, k, periodic, box)
    pad = ax * dx + ay * dy + az * dz
    pbd = cx * dx + cy * dy + cz * dz
    pab = ax * cx + ay * cy + az * cz
    q = pbd * inv_r2
    s5 = 3.0 * kr3 * inv_r2
    f1, f2, f3 = s5 * pad, s5 * pbd, s5 * (pab - 5.0 * pad * q)
    return (kr3 * (3.0 * q * dx - cx), kr3 * (3.0 * q * dy - cy), kr3 * (3.0 * q * dz - cz),
            f1 * cx + f2 * ax + f3 * dx, f1 * cy + f2 * ay + f3 * dy, f1 * cz + f2 * az + f3 * dz)

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
        i = _knot(M, k, t)
        for o in range(4):
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
        q00, q01, q02 = Q[b, 0, 0], Q[b, 0, 1], Q[b, 0, 2]
        q10, q11, q12 = Q[b, 1, 0], Q[b, 1, 1], Q[b, 1, 2]
        q20, q21, q22 = Q[b, 2, 0], Q[b, 2, 1], Q[b, 2, 2]
        g00 = 0.5 * (q00 * q00 + q01 * q01 + q02 * q02)
        g01 = 0.5 * (q00 * q10 + q01 * q11 + q02 * q12)
        g02 = 0.5 * (q00 * q20 + q01 * q21 + q02 * q22)
        g11 = 0.5 * (q10 * q10 + q11 * q11 + q12 * q12)
        g12 = 0.5 * (q10 * q20 + q11 * q21 + q12 * q22)
        g22 = 0.5 * (q20 * q20 + q21 * q21 + q22 * q22)
        for j in range(3):
            a, b_, c = Q[b, 0, j], Q[b, 1, j], Q[b, 2, j]
            Q[b, 0, j] = 1.5 * a - (g00 * a + g01 * b_ + g02 * c)
            Q[b, 1, j] = 1.5 * b_ - (g01 * a + g11 * b_ + g12 * c)
            Q[b, 2, j] = 1.5 * c - (g02 * a + g12 * b_ + g22 * c)

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

    The bound (contacts.FlightBounds: scenes whose only force is gravity), for the splitting's kicks and drifts as
    they come, negative ones too (split (3,): a = Σ|drifts|, κ = Σ|kicks|, c = Σᵢ |dᵢ|·(|k₀| + … + |kᵢ|), the kicks
    before each drift): over n steps a drift moves a sphere no further than (|dᵢ|h)·(lever·|L| + inv_mass·|p|) at
    the |L|, |p| it has, and |L| grew by at most T̂·(the kicks' |coefficients|·h so far), so the spheres move at most
    lever·(|L₀| A₁ + T̂ A₂) + inv_mass·(|p₀| A₁ + force·A₂), A₁ = n h a, A₂ = h² (a κ n(n−1)/2 + c n); T̂ the
    largest torque in the chunk, |T̂ − T₀| ≤ λ²·(|L₀| A₁ + T̂ A₂) as gravity's torque follows the centre of
    mass, so T̂ ≤ (|T₀| + λ² |L₀| A₁)/(1 − λ² A₂) (no bound where λ² A₂ ≥ 1). At a step's end a sphere is at most
    lever·(|L₀| + T̂ n h κ) + inv_mass·(|p₀| + force·n h κ) fast. The checks look at the steps' ends only, and there
    drifts that turn a sphere about one axis set by the momentum (``axial``: a hinge, or a bob on a symmetric
    pendulum's axis; contacts.FlightBounds) add their angles: a step moves it as one drift of h at the step's start
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
        if k < 0:
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

# ------------------------------------------------------------------ impacts in the kernel (contacts._advance_step)

@_jit_borrowed
def _brent(bs, f):
    """One evaluation of events.brent (side="a", xtol 0, maxiter 200) in reverse communication: ``bs`` (10,)
    holds its state (a, b, c, fa, fb, fc, d, e, sign of g(a), iterations; set by :func:`_brent_start`), ``f``
    is g at the point it asked for last. Returns (done, t): the root (done) or the next point to evaluate g at.
    The same sequence of evaluations and the same result as events.brent."""
    a, b, c, fa, fc, d, e = bs[0], bs[1], bs[2], bs[3], bs[5], bs[6], bs[7]
    fb = f
    sign_a = bs[8] > 0.0
    it = bs[9]
    eps = 2.220446049250313e-16
    while True:  # once: a loop only to leave it by break
        if it >= 200.0:
            break
        it += 1.0
        if (fb > 0) == (fc > 0) and fb != 0.0:
            c, fc = a, fa
            d = e = b - a
        if abs(fc) < abs(fb):
            a, b, c = b, c, b
            fa, fb, fc = fb, fc, fb
        tol = 2.0 * eps * abs(b) + 0.5 * 0.0 + 1e-300
        m = 0.5 * (c - b)
        if abs(m) <= tol or fb == 0.0:
            break
        if abs(e) >= tol and abs(fa) > abs(fb):
            s = fb / fa
            if a == c:
                p, q = 2.0 * m * s, 1.0 - s
            else:
                q, r = fa / fc, fb / fc
                p = s * (2.0 * m * q * (q - r) - (b - a) * (r - 1.0))
                q = (q - 1.0) * (r - 1.0) * (s - 1.0)
            if p > 0:
                q = -q
            else:
                p = -p
            if 2.0 * p < min(3.0 * m * q - abs(tol * q), abs(e * q)):
                e, d = d, p / q
            else:
                d = e = m
        else:
            d = e = m
        a, fa = b, fb
        b = b + d if abs(d) > tol else b + (tol if m > 0 else -tol)
        bs[0], bs[1], bs[2], bs[3], bs[4], bs[5], bs[6], bs[7], bs[9] = a, b, c, fa, fb, fc, d, e, it
        return False, b
    if fb == 0.0:
        return True, (b if abs(fb) <= abs(fc) else c)
    on_a = (fb > 0) == sign_a
    return True, (b if on_a else c)

@_jit_borrowed
def _brent_start(bs, a, b, fa, fb):
    """Start :func:`_brent` on [a, b] from g(a) = fa ≥ 0 > g(b) = fb: (done, t) as it returns."""
    if fa == 0.0:
        return True, a
    if fb == 0.0:
        return True, b
    bs[0], bs[1], bs[2], bs[3], bs[4], bs[5] = a, b, a, fa, fb, fa
    bs[6] = bs[7] = b - a
    bs[8] = 1.0 if fa > 0 else -1.0
    bs[9] = 0.0
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

@_jit_inline
def _skew(r0, r1, r2, x, y):
    """Element (x, y) of [r]× (skew(r) @ u = r × u)."""
    if x == y:
        return 0.0
    if x == 0:
        return -r2 if y == 1 else r1
    if x == 1:
        return r2 if y == 0 else -r0
    return -r1 if y == 0 else r0

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
def _friction_impulse(M, bW, X, moving, i, j, c0, c1, c2, n0, n1, n2, vr0, vr1, vr2, vn, e, mu, kw):
    """impulses.compute_impulse with Coulomb friction μ > 0 for an approaching contact (vn = n·v_rel < 0, v_rel
    the relative velocity): the sticking impulse solves (K₁+K₂) J = −e v_n n − v_rel (least squares); when its
    tangential part exceeds μ times its normal part, J = j (n + μ t̂) with j from the normal restitution. Returns
    (J, ok); not ok where the normal impulse is ill-defined (n·K·(n + μ t̂) ≤ 0: Painlevé). kw (2,3,3) scratch."""
    K = kw[0]
    for x in range(3):
        for y in range(3):
            K[x, y] = 0.0
    _add_K(M, bW, X, moving, i, c0, c1, c2, K)
    _add_K(M, bW, X, moving, j, c0, c1, c2, K)
    # n·K·(n + μ t̂) for the sliding impulse, from K before the solve diagonalises it
    Kn0 = K[0, 0] * n0 + K[0, 1] * n1 + K[0, 2] * n2
    Kn1 = K[1, 0] * n0 + K[1, 1] * n1 + K[1, 2] * n2
    Kn2 = K[2, 0] * n0 + K[2, 1] * n1 + K[2, 2] * n2
    d0, d1, d2 = -e * vn * n0 - vr0, -e * vn * n1 - vr1, -e * vn * n2 - vr2
    J0, J1, J2 = _pinv_solve(K, kw[1], d0, d1, d2)
    jn = n0 * J0 + n1 * J1 + n2 * J2
    t0, t1, t2 = J0 - jn * n0, J1 - jn * n1, J2 - jn * n2
    tn = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    if tn <= mu * jn:
        return J0, J1, J2, True
    t0, t1, t2 = t0 / tn, t1 / tn, t2 / tn
    # n·K·(n + μ t) = (K n)·(n + μ t): K is symmetric
    den = Kn0 * (n0 + mu * t0) + Kn1 * (n1 + mu * t1) + Kn2 * (n2 + mu * t2)
    if not den > 0.0:
        return 0.0, 0.0, 0.0, False
    jm = -(1.0 + e) * vn / den
    return jm * (n0 + mu * t0), jm * (n1 + mu * t1), jm * (n2 + mu * t2), True

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

@_jit_entry
def _member_splitting(M, Qe, Le, Te, Je, Xe, Pe, Fe, c, damped, fe, dt, steps0, marks, check_every, drifts, kicks,
                      inv_m, inv1, plan_axis, plan_frac, plan_coef, moving, axes, oU, oL, ow, oX, oP, DWe, oW, st, tb,
                      C):
    """One member of :func:`run_splitting` (its arrays without the member axis).

    With contact pairs in C (compiled.ContactArrays) the steps run one at a time, the gaps checked after each
    (:func:`_overlap`) and, with C.graze, the pairs apart at both ends for a dip in between (:func:`_grazing`). A
    step that ends overlapping is an impact step: with C.impact it is taken here as contacts._advance_step takes it
    (:func:`_impact_search`), its events going to C's buffers; the run stops with status CONTACT (steps done, pair)
    at the start of any other step that ends overlapping or may dip — or of an impact step the search hands back (a
    grazing dip, a pair overlapping at its start, friction, a settling contact, nothing approaching, too many
    impacts) — and with EVENTS_FULL at the start of one whose events no longer fit; the state is then that step's start
    (a copy, :func:`_copy_state`). Where gravity is the only force (C.merge) and nothing rests, the steps that no
    check could stop (:func:`_horizon`) run merged and unchecked, spans of up to :data:`SPAN` steps, as without
    contacts; and a whole step without events that leaves the state (and the energy taken) as it was, or as it was
    a step before — a contact held at rest — repeats itself to the next mark: those steps are skipped, the mark
    given the state of its parity. Every step, trial steps of the search included, calls the unchanged
    :func:`_split_chunk` from one site: a second call site, or a contact branch inside its step loop, made
    its first compile 50–100 % longer.

    The impact search (contacts._advance_step's crossing branch; its phase in si[0]): 1 — a whole trial step from
    the base state (Q0…; the step's start, then each impact's state) at t_c to the step's end t_e, with its gaps
    g1: no pair below −C.tol ends the step; else, unless one of those pairs overlapped at t_c or another may
    dip, Brent (:func:`_brent`) on [t_c, t_e] of the smallest of their gaps after one trial step of length
    t − t_c from the base (2), then one such step to the root t_hit (3), where :func:`_resolve_impacts`
    applies the impulses; the base becomes that state, t_c = t_c + (t_hit − t_c), and 1 again. The trial steps
    run here, on the one call site; :func:`_impact_search` decides between them (a function of its own,
    without reference counts: as a part of this one it cost seconds more of first compile).

    DWe (2,): the drivers' power and work (:func:`_split_chunk`), oW (R,) the work at each mark. tb (s): the clock's
    start (0, or a trial step's start time when contacts.run_compiled takes one step of length dt on the kernel).
    The impact search's trial steps start at its t_c, so scenes whose torques depend on time take their impact steps
    here too."""
    B = Le.shape[0]
    D, S, K = M.owner.shape[0], M.src_body.shape[0], M.sb_kind.shape[0]
    nS, nP = (0, 0) if C is None else (C.owner.shape[0], C.pair.shape[0])
    # every array the steps use, made here: the steps (_splitting_steps) then run without reference counts. In the
    # order _splitting_steps unpacks them — A: org Rs rs ms s p r Td Xt pv SR dB nodes w Q0 L0 T0 X0 P0 F0 idle;
    # AC: S0 S1 g0 g1 nb w0 w1 near nl Sref bi bf; CS: Qs Ls Ts Xs Ps Fs hit bs ci cf order kw bv bw bW used;
    # CH: lifted dX Fh Fm Xh si sf split fb Qp Lp Tp Xp Pp Fp
    A = (np.empty((K, 3)), np.empty((K, 3, 3)), np.empty((S, 3)), np.empty((S, 3)), np.empty((D, 3)),
         np.empty((D, 3)), np.empty((D, 3)), np.empty((B, 3)), np.empty((B, 3)), np.zeros((B, 12)),
         np.zeros((K + S, 6)), np.zeros(3), np.zeros(drifts.shape[0] + 1), np.empty((B, 3)), np.empty((B, 3, 3)),
         np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)),
         np.zeros(B, np.bool_))
    AC = (np.empty((nS, 3)), np.empty((nS, 3)), np.empty(nP), np.empty(nP), np.empty((B, 4)), np.empty((B, 3)),
          np.empty((B, 3)), np.zeros(nP, np.bool_), np.arange(nP), np.empty((nS, 3)), np.array([nP]), np.zeros(6))
    CS = (np.empty((B, 3, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)),
          np.empty((B, 3)), np.empty(nP, np.int64), np.empty(10), np.empty((nP, 4), np.int64), np.empty((nP, 11)),
          np.empty(nP, np.int64), np.empty((2, 3, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3, 3)),
          np.empty(B, np.bool_))
    CH = (np.zeros(nP, np.bool_), np.zeros((B, 3)), np.zeros((B, 3)), np.zeros((B, 3)), np.zeros((B, 3)),
          np.zeros(5, np.int64), np.zeros(6), np.zeros(3), np.empty((B, 6)), np.empty((B, 3, 3)), np.empty((B, 3)),
          np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)))
    _splitting_steps(M, Qe, Le, Te, Je, Xe, Pe, Fe, c, damped, fe, dt, steps0, marks, check_every, drifts, kicks,
                     inv_m, inv1, plan_axis, plan_frac, plan_coef, moving, axes, oU, oL, ow, oX, oP, DWe, oW, st, tb,
                     C, A, AC, CS, CH)

@_jit_borrowed
def _splitting_steps(M, Qe, Le, Te, Je, Xe, Pe, Fe, c, damped, fe, dt, steps0, marks, check_every, drifts, kicks,
                     inv_m, inv1, plan_axis, plan_frac, plan_coef, moving, axes, oU, oL, ow, oX, oP, DWe, oW, st, tb,
                     C, A, AC, CS, CH):
    """:func:`_member_splitting`'s steps, on the arrays it made (A, AC, CS, CH: tuples of scratch arrays, unpacked
    below): compiled without reference counts (:data:`_jit_borrowed`), as every call of the loop — a chunk, a
    check, the horizon, a trial step — otherwise counted each array it passed (~17 % of a contact run)."""
    B = Le.shape[0]
    D = M.owner.shape[0]
    org, Rs, rs, ms, s, p, r, Td, Xt, pv, SR, dB, nodes, w, Q0, L0, T0, X0, P0, F0, idle = A
    # C is None: numba prunes every `C is None` branch at compile time, so a scene without contacts compiles
    # none of the contact code (its first compile ~2-4 s shorter); a contact scene compiles its own variant
    nP = 0 if C is None else C.pair.shape[0]
    # sphere centres and gaps at the step's start (S0, g0) and end (S1, g1): swapped after each step
    S0, S1, g0, g1, nb, w0, w1, near, nl, Sref, bi, bf = AC
    contacts = nP > 0
    # the near pairs (C.broad: :func:`_overlap_near`): nl[:bi[0]] the list (every pair, in order, without C.broad);
    # bf its margins (the pairs' smallest σ, largest tol and touch limit: bf[2:5])
    broad = contacts and C.broad
    if C is not None:
        # the impact search: the step's start (Qs…, to hand the step back), its pairs, Brent's state, and the
        # scratch of _resolve_impacts (kw: a friction impulse's K and its eigenvectors, _friction_impulse)
        Qs, Ls, Ts, Xs, Ps, Fs, hit, bs, ci, cf, order, kw, bv, bw, bW, used = CS
        # resting contacts held after each whole (trial) step (:func:`_hold`): the pairs that lifted off in
        # it, logged when the step is kept; and where the step started (events and loss), to hand it back whole
        lifted = CH[0]
        n_lift, hold_loss, ev_step0, loss_step0, searched = -1, 0.0, 0, 0.0, False
        # with dipoles the forces change where the hold moved the bodies: steps of length 0 at the same call site
        # evaluate them (at time t_hold) halfway along the push (reeval 2) and where it left them (reeval 1), for
        # Simpson's rule on the work ∫F·dx the push takes from the potential; dX the push, Fh the forces before it,
        # Fm halfway, Xh the held positions
        reeval, t_hold = 0, 0.0
        dX, Fh, Fm, Xh = CH[1], CH[2], CH[3], CH[4]
        # scenes whose torques depend on time too: the trial steps start at the search's t_c (tb of _split_chunk)
        can_impact = contacts and C.impact
        # the search's state (_impact_search): phase, pairs hit, first pair, iterations, events at the step's start;
        # t_c, t_end, t_hit, the next trial's length, the energy loss at the step's start
        si, sf = CH[5], CH[6]
        # free flight where no check could fire (:func:`_horizon`; C.merge: gravity the only force): the steps
        # before ``free_to`` run in merged chunks with no check at all (marks and the check grid still end chunks),
        # and the gaps are taken again where that span ends; the splitting's coefficient sums, scratch, and the
        # horizons skipped after one of a single step. The span and the skipping carry over from call to call
        # (C.span): where the driver's calls end (sized by wall time) must not decide where spans end, as a span's
        # chunks merge their kicks (rounding) — and a call stopped at a step's start leaves them as they were there
        split, fb = CH[7], CH[8]
        free_to, wait, backoff = C.span[0], C.span[1], C.span[2]
        at_start = (free_to, wait, backoff)
        # a standstill (a state that a step leaves as it was, or as it was a step before): whether the last step
        # was a whole one without events, and its start (Qp…, the energy taken then)
        last_plain, loss_prev = False, 0.0
        # the bodies a Brent trial leaves alone (idle, True there): whether they are set
        idling = False
        Qp, Lp, Tp, Xp, Pp, Fp = CH[9], CH[10], CH[11], CH[12], CH[13], CH[14]
        for i in range(drifts.shape[0]):
            split[0] += abs(drifts[i])
            for j in range(i + 1):
                split[2] += abs(drifts[i]) * abs(kicks[j])
        for i in range(kicks.shape[0]):
            split[1] += abs(kicks[i])
        G = _Gaps(C.owner, C.center, C.radius, C.pair, C.spheres, C.limit, C.resting, C.wall_kind, C.wall_sign,
                  C.wall_point, C.wall_dir, C.wall_radius, C.wall_axes, C.wall_half)
        if broad:
            bf[2], bf[3], bf[4] = 1e300, 0.0, 0.0
            for k in range(nP):
                if C.sigma[k] > 0.0:
                    bf[2] = min(bf[2], C.sigma[k])
                bf[3] = max(bf[3], C.tol[k])
                bf[4] = max(bf[4], C.touch[k])
            _refresh(G, C, Qe, Xe, Pe, Le, S0, g0, g1, nl, Sref, bi, bf, nb, dt)
        elif contacts:
            _overlap(G, Qe, Xe, S0, g0)
    if M.static_sources:
        # M.power, not a literal False: one signature with _split_chunk's call, which cannot compile its own (it runs
        # without reference counting, and this function allocates)
        _sources_exact(M, 0.0, org, Rs, rs, ms, SR, M.power)
    steps = steps0
    code, body = OK, 0
    dw0, dw1 = 0.0, 0.0   # the drivers' power and work at the step's start
    bw0, bw1 = 0.0, 0.0   # … and at the impact search's base state
    for i in range(marks.shape[0]):
        mark = marks[i]
        while steps < mark:
            n = min(check_every, mark - steps)
            if C is not None:  # chunks end on the grid of multiples of check_every too, as the driver's calls do
                n = min(check_every - steps % check_every, mark - steps)
            if C is None:
                _split_chunk(M, Qe, Le, Te, Je, Xe, Pe, Fe, moving, idle, n, steps, dt, c, damped, fe, drifts, kicks,
                             inv_m, inv1, plan_axis, plan_frac, plan_coef, org, Rs, rs, ms, s, p, r, Td, DWe, Xt, pv,
                             SR, dB, nodes, tb)
            else:
                h, k0, t0 = dt, steps, tb
                brent = False
                if contacts:
                    # one step a call: its kicks are not merged with the next step's, so each step ends
                    # synchronised, as the numpy contact driver's do, and can be undone from the copy — except in
                    # free flight that no check could stop (_horizon): those steps merged, as without contacts
                    nmax, n = n, 1
                    if steps < free_to:  # a certified span: merged, unchecked
                        n = min(nmax, free_to - steps)
                    elif reeval > 0:  # the forces along the hold's push (contacts._hold's state._torque at its end)
                        h, k0, t0 = 0.0, 0, t_hold
                    elif si[0] == 0:
                        at_start = (free_to, wait, backoff)
                        if last_plain:  # the last step's start, for a standstill of period 2 (the arrays
                            # swapped, not copied: Q0… take this step's start next)
                            Q0, L0, T0, X0, P0, F0, Qp, Lp, Tp, Xp, Pp, Fp = (Qp, Lp, Tp, Xp, Pp, Fp,
                                                                              Q0, L0, T0, X0, P0, F0)
                            loss_prev = loss_step0
                        _copy_state(Qe, Le, Te, Xe, Pe, Fe, Q0, L0, T0, X0, P0, F0)
                        dw0, dw1 = DWe[0], DWe[1]
                        bw0, bw1 = dw0, dw1
                        ev_step0, loss_step0, searched = C.ev_count[0], C.loss[0], False
                        if free_to > 0:  # a span ended: its gaps, as the step before it would have left them
                            free_to = 0
                            first = (_refresh(G, C, Qe, Xe, Pe, Le, S0, g0, g1, nl, Sref, bi, bf, nb, dt) if broad
                                     else _overlap(G, Qe, Xe, S0, g0))
                            if first >= 0:  # the bound failed (rounding-close): numpy's step
                                code, body = CONTACT, 0
                                break
                        if C.merge and not _any_near(C.resting, nl, _near_count(bi, nP)):
                            if wait > 0:
                                wait -= 1
                            else:
                                if broad:  # the horizon reads every pair's gap: all exact
                                    _refresh(G, C, Qe, Xe, Pe, Le, S0, g0, g1, nl, Sref, bi, bf, nb, dt)
                                span = _horizon(C.owner, C.spheres, C.pair, C.inv_mass, C.lever, C.sigma, C.tol,
                                                C.limit, C.force, C.lam2, C.axial, C.graze, g0, Le, Pe, Te, dt, split,
                                                SPAN, fb)
                                if span > 1:
                                    free_to = steps + span
                                    n = min(nmax, span)
                                # near a contact the horizon is one step for a while: in a crowded scene look
                                # again after 1, 2, 4… steps (at most one per 64 pairs, 64), so that it does
                                # not pay for a pass over its pairs every step
                                cap = min(64, max(1, nP // 64))
                                wait, backoff = (backoff - 1, min(2 * backoff, cap)) if span == 1 else (0, 1)
                    else:  # a trial step of the impact search: from its base state at t_c, of its length
                        # Brent's trials give only the gaps of the pairs hit (_min_gap): where nothing couples the
                        # bodies each body's step is its own (the same bits alone), so only those pairs' bodies
                        # step (and are set back to the base); the others' states are not read before the trial to
                        # the root, a whole step from the base
                        brent = si[0] == 2 and not C.coupled
                        if brent != idling:
                            _idle_but(C.pair, C.owner, C.spheres, hit, si[1] if brent else 0, brent, idle)
                            idling = brent
                        if idling:
                            _copy_bodies(Q0, L0, T0, X0, P0, F0, Qe, Le, Te, Xe, Pe, Fe, idle)
                        else:
                            _copy_state(Q0, L0, T0, X0, P0, F0, Qe, Le, Te, Xe, Pe, Fe)
                        DWe[0], DWe[1] = bw0, bw1
                        h, k0, t0 = sf[3], 0, sf[0]
                if idling and not brent:  # out of Brent's trials (stopped in them): every body steps again
                    _idle_but(C.pair, C.owner, C.spheres, hit, 0, False, idle)
                    idling = False
                in_span = steps < free_to
                if h > 0.0 or reeval > 0:  # a trial of length 0 is the base itself (contacts._step)
                    _split_chunk(M, Qe, Le, Te, Je, Xe, Pe, Fe, moving, idle, n, k0, h, c, damped, fe, drifts, kicks,
                                 inv_m, inv1, plan_axis, plan_frac, plan_coef, org, Rs, rs, ms, s, p, r, Td, DWe, Xt,
                                 pv, SR, dB, nodes, t0)
                if in_span:  # certified free flight: nothing to check (the gaps are taken where the span ends)
                    C.merged[0] += n
                    last_plain = False
                else:
                    if reeval == 2:  # the forces halfway: back to the held positions, and their forces next
                        for b in range(B):
                            for x in range(3):
                                Fm[b, x] = Fe[b, x]
                                Xe[b, x] = Xh[b, x]
                        reeval = 1
                        continue
                    if reeval == 1:  # the work the push took from the potential, by Simpson's rule (the hold
                        # booked F·Δx)
                        reeval = 0
                        more = 0.0
                        for b in range(B):
                            for x in range(3):
                                more += (4.0 * (Fm[b, x] - Fh[b, x]) + (Fe[b, x] - Fh[b, x])) * dX[b, x]
                        hold_loss += more / 6.0
                    else:
                        n_lift = -1
                        # a whole (trial) step: hold its resting contacts (contacts._hold); the check first: the call
                        # alone (~20 arrays) costs more than a step
                        nn = _near_count(bi, nP)
                        if can_impact and si[0] <= 1 and _any_near(C.resting, nl, nn):
                            hold_loss, n_lift, held, pushed = _hold(M, C, Qe, Le, Xe, Pe, Fe, Je, S1, g1, moving,
                                                                    lifted, ci, cf, order, w, bv, bw, bW, used, kw, dX,
                                                                    nl, nn)
                            if not held:  # no effective mass (not for a translating side): the numpy driver's step
                                code, body = CONTACT, 0
                            elif pushed and D > 0:
                                reeval, t_hold = 2, t0 + (k0 + 1) * h  # at the step's end
                                for b in range(B):
                                    for x in range(3):
                                        Fh[b, x] = Fe[b, x]
                                        Xh[b, x] = Xe[b, x]
                                        Xe[b, x] -= 0.5 * dX[b, x]
                                continue
                    if code == OK and si[0] == 2:  # Brent's trial: the smallest gap of its pairs (_impact_search,
                        # sf[5])
                        pair = -1
                        sf[5] = _min_gap(G, Qe, Xe, S1, hit, si[1])
                    else:
                        if C.graze:  # the speeds the grazing filter bounds (and the near list's margin)
                            _body_speeds(P0, L0, Pe, Le, nb)
                        if broad:
                            vmax = _sphere_speed_max(C.owner, C.inv_mass, C.lever, nb) if C.graze else 0.0
                            pair = _overlap_near(G, C.bounded, Qe, Xe, S1, g1, g0, S0, nl, Sref, bi, bf, vmax, h,
                                                 C.graze, C.checks)
                        else:
                            pair = _overlap(G, Qe, Xe, S1, g1) if contacts else -1
                    dip = -1
                    if C.graze and si[0] <= 1 and (pair < 0 or can_impact):
                        nn = _near_count(bi, nP)
                        if _graze_near(C.pair, C.owner, C.spheres, C.tol, C.sigma, C.bounded, C.inv_mass, C.lever,
                                       C.resting, g0, g1, nb, h, near, nl, nn) > 0:
                            dip = _grazing(M, C, Q0, L0, X0, P0, Qe, Le, Xe, Pe, Je, g0, g1, S0, S1, h, near, nl, nn,
                                           w0, w1)
                    # a step that ends apart and cannot dip, outside a search, needs nothing of it: the call alone
                    # (some 40 arrays passed member by member) cost ~1 µs a step
                    if code == OK and contacts and (si[0] != 0 or pair >= 0 or dip >= 0):
                        searched = searched or si[0] == 0
                        act, code, body = _impact_search(M, C, pair, dip, can_impact, steps, dt, Qe, Le, Te, Xe, Pe,
                                                         Fe, Je, Q0, L0, T0, X0, P0, F0, Qs, Ls, Ts, Xs, Ps, Fs, g0,
                                                         g1, S1, moving, axes, hit, bs, si, sf, ci, cf, order, w, bv,
                                                         bw, bW, used, kw, nl, _near_count(bi, nP))
                        if act == 3:  # handed back, or the event buffers full: stop at the step's start
                            DWe[0], DWe[1] = dw0, dw1
                            break
                        if act == 2:  # an impact resolved: its gaps are the next trial's start (and its state the base)
                            bw0, bw1 = DWe[0], DWe[1]
                            S0, S1 = S1, S0
                            g0, g1 = g1, g0
                        if act > 0:
                            continue
                    if code == OK and n_lift > 0 and C.ev_count[0] + n_lift > C.ev_t.shape[0]:
                        # no room to log the lift-offs: flush the buffers first, or (none to flush) the driver's step
                        code, body = (EVENTS_FULL if ev_step0 > 0 else CONTACT), 0
                    if code != OK:  # back to the step's start, as it was
                        _undo_events(C, ev_step0, loss_step0)
                        if searched:
                            _copy_state(Qs, Ls, Ts, Xs, Ps, Fs, Qe, Le, Te, Xe, Pe, Fe)
                        else:
                            _copy_state(Q0, L0, T0, X0, P0, F0, Qe, Le, Te, Xe, Pe, Fe)
                        si[0] = 0
                        DWe[0], DWe[1] = dw0, dw1
                        break
                    if n_lift >= 0:  # the step is kept: its hold's energy and lift-offs (contacts._advance_step's keep)
                        C.loss[0] += hold_loss
                        if n_lift > 0:
                            _lift_off(C, Qe, Xe, S1, axes, lifted, (steps + 1) * dt, cf, nl, _near_count(bi, nP))
                    # a standstill: a whole step with no event that left the state and the energy taken as they
                    # were (period 1), or as they were a step before (period 2: a ball held at rest on its floor,
                    # its momentum ±1 ulp of zero by turns); the steps do not depend on time (C.merge), so the steps
                    # to the next mark would repeat the cycle: they are skipped, the state the one the mark has
                    plain = C.merge and not searched and n_lift <= 0 and C.ev_count[0] == ev_step0
                    period = 0
                    if plain and C.loss[0] == loss_step0 and _same_state(Qe, Le, Te, Xe, Pe, Fe, Q0, L0, T0, X0,
                                                                          P0, F0):
                        period = 1
                    elif (plain and last_plain and C.loss[0] == loss_prev
                          and _same_state(Qe, Le, Te, Xe, Pe, Fe, Qp, Lp, Tp, Xp, Pp, Fp)):
                        period = 2
                    last_plain = plain
                    S0, S1 = S1, S0
                    g0, g1 = g1, g0
                    if period > 0:
                        C.merged[0] += mark - steps - n
                        if period == 2 and (mark - steps - n) % 2 == 1:  # the mark has the other state of the two
                            _copy_state(Q0, L0, T0, X0, P0, F0, Qe, Le, Te, Xe, Pe, Fe)
                            C.loss[0] = loss_step0
                            if broad:
                                _refresh(G, C, Qe, Xe, Pe, Le, S0, g0, g1, nl, Sref, bi, bf, nb, dt)
                            else:
                                _overlap(G, Qe, Xe, S0, g0)
                        n = mark - steps
                        last_plain = False
            steps += n
            if contacts and steps < mark and (steps - steps0) % check_every:
                continue  # one step a call: the blow-up check keeps its cadence of one per check_every steps
            code, body = _check(M, Qe, Le)
            if code != OK:
                break
        if code != OK:
            break
        _omega_principal(M, Qe, Le, Je, w)
        for b in range(B):
            for x in range(3):
                for y in range(3):
                    oU[i, b, x, y] = (axes[b, x, 0] * Qe[b, 0, y] + axes[b, x, 1] * Qe[b, 1, y]
                                      + axes[b, x, 2] * Qe[b, 2, y])
                oL[i, b, x] = Le[b, x]
                ow[i, b, x] = w[b, x]
                oX[i, b, x] = Xe[b, x]
                oP[i, b, x] = Pe[b, x]
        oW[i] = DWe[1]
        if C is not None:
            C.rec_loss[i] = C.loss[0]
    if C is not None:  # the span and skipping state for the next call (at the stopped step's start, if stopped)
        if code != OK:
            free_to, wait, backoff = at_start
        C.span[0], C.span[1], C.span[2] = free_to, wait, backoff
    st[0], st[1], st[2] = code, steps, body

@_jit_par
def run_splitting(M, Q, L, T, J, X, P, F, friction, damped, field, dt, steps0, marks, check_every, drifts, kicks,
                  inv_m, inv1, plan_axis, plan_frac, plan_coef, moving, axes, out_U, out_L, out_w, out_X, out_P,
                  DW, out_W, status, tb, C):
    """Advance every member through ``marks`` (absolute step counts) from ``steps0``; record at each mark.

    Q (E,B,3,3) principal frames, L (E,B,3), T (E,B,3) the torque at the current state, J (E,B)
    hinge inertias, X (E,B,3) m centres of rotation, P (E,B,3) kg·m/s linear momenta, F (E,B,3) N the
    forces at the current state — all updated in place; only the translating bodies (``moving`` (B,) bool)
    change X and P. friction (E,), field (E,3) per member; ``damped``
    selects the exact-decay kicks (a friction anywhere). out_U (E,R,B,3,3) in the user's body
    axes (axes (B,3,3)), out_L, out_w, out_X, out_P (E,R,B,3). status (E,3): code, steps done, body.
    DW (E,2) the drivers' power (W) and work (J) so far, out_W (E,R) the work at each mark (M.power; else unused);
    tb (s) the clock's start (0).
    C: the contact geometry (compiled.ContactArrays), None without (always for ensembles).
    Members run in parallel; a single scene calls ``_member_splitting`` directly.
    """
    for e in prange(L.shape[0]):
        _member_splitting(M, Q[e], L[e], T[e], J[e], X[e], P[e], F[e], friction[e], damped, field[e], dt, steps0,
                          marks, check_every, drifts, kicks, inv_m, inv1, plan_axis, plan_frac, plan_coef, moving,
                          axes, out_U[e], out_L[e], out_w[e], out_X[e], out_P[e], DW[e], out_W[e], status[e], tb, C)

# ------------------------------------------------------------------ PEM's schemes (integrators.PemScheme)

@_jit_inline
def _omega_pem(M, U, L, w):
    """ω (B,3) as PEM forms it: Uᵀ I⁻¹ U L, projected on the hinge axis for hinged bodies."""
    for b in range(L.shape[0]):
        _omega_one(M.inv_inertia, U, L, w, b)
        if M.hinged[b]:
            a0, a1, a2 = M.hinge_axis[b, 0], M.hinge_axis[b, 1], M.hinge_axis[b, 2]
            wa = w[b, 0] * a0 + w[b, 1] * a1 + w[b, 2] * a2
            w[b, 0], w[b, 1], w[b, 2] = wa * a0, wa * a1, wa * a2

@_jit_inline
def _dU(w, U, dt, out, k):
    """out[k] = (ω × each row of U)·dt; out (4,B,3,3)."""
    for b in range(U.shape[0]):
        w0, w1, w2 = w[b, 0], w[b, 1], w[b, 2]
        for i in range(3):
            u0, u1, u2 = U[b, i, 0], U[b, i, 1], U[b, i, 2]
            out[k, b, i, 0] = (w1 * u2 - w2 * u1) * dt
            out[k, b, i, 1] = (w2 * u0 - w0 * u2) * dt
            out[k, b, i, 2] = (w0 * u1 - w1 * u0) * dt

@_jit_borrowed
def _pem_chunk(M, U, Ud, L, w, frames, dtime, steps, n, dt, rk4, c, friction_on, field,
               org, rs, ms, s, p, r, Td, T, F, Un, Us, Up, Ln, dL, dU, G, Xt, pv, SR):
    """``n`` steps of PemScheme.advance from ``steps`` steps done; returns the driver's new time.

    A function of its own, called once per chunk, not inlined into the loop of :func:`_pem_marks`:
    numba copies an inlined body's IR block by block with its whole scope, and for a body this size
    that took most of the first compile (~10 s).
    RK4 as a loop over its four stages (one place that evaluates torques, so it inlines once):
    stage k starts from Un + a_k·(dU, dL of stage k−1), a = (0, ½, ½, 1), at times t₁, t₂, t₂, t₄;
    the first stage places the dipoles by the previous step's uncorrected frame (PEM's order).
    Euler is the first stage alone, with U advanced by the new ω.
    Scratch: T, F, Ln, Td (B,3); Un, Us, Up (B,3,3); dL (4,B,3); dU (4,B,3,3); G (1,3,3) — separate
    arrays, not slices of one: a view made in the step loop costs a reference count each time. PEM's schemes
    do not translate: torques about the pivots (moving ones placed in Xt, their motion in pv (B,12)), forces (F)
    unused. SR (K+S,6) scratch of the sources on tables.
    """
    for step in range(steps, steps + n):
        i = step + 1
        if M.src_body.shape[0] and not M.static_sources:
            _sources_pem(M, i, dtime, dt, frames, org, rs, ms, SR)
        t1 = i * dt
        t2 = t1 + 0.5 * dt
        t4 = t2 + 0.5 * dt
        B = L.shape[0]
        for b in range(B):
            for x in range(3):
                Ln[b, x] = L[b, x]
                for y in range(3):
                    Un[b, x, y] = U[b, x, y]
                    Us[b, x, y] = U[b, x, y]
                    Up[b, x, y] = Ud[b, x, y]
        for k in range(4 if rk4 else 1):
            t = t1 if k == 0 else (t2 if k < 3 else t4)
            if k > 0:  # stages after the first place the dipoles by the stage's own frame
                for b in range(B):
                    for x in range(3):
                        for y in range(3):
                            Up[b, x, y] = Us[b, x, y]
            Xc = M.pivot
            if M.pv_any:  # moving pivots at the stage's time
                _pivots(M, t, M.pivot, Xt, pv)
                Xc = Xt
            _torque(M, Us, Up, True, _external(M, field, t), rs, ms, Xc, T, F, s, p, r, Td, pv, SR, G[0, 0], False,
                    G[0, 1])
            if friction_on:
                for b in range(B):
                    T[b, 0] = T[b, 0] - c * w[b, 0]
                    T[b, 1] = T[b, 1] - c * w[b, 1]
                    T[b, 2] = T[b, 2] - c * w[b, 2]
            if not rk4:
                for b in range(B):
                    for x in range(3):
                        L[b, x] = L[b, x] + T[b, x] * dt
                _omega_pem(M, U, L, w)
                _dU(w, U, dt, dU, 0)
                for b in range(B):
                    for x in range(3):
                        for y in range(3):
                            Us[b, x, y] = U[b, x, y] + dU[0, b, x, y]
                break
            _dU(w, Us, dt, dU, k)
            if k < 3:
                a = 0.5 if k < 2 else 1.0
                for b in range(B):
                    for x in range(3):
                        dL[k, b, x] = T[b, x] * dt
                        L[b, x] = Ln[b, x] + a * dL[k, b, x]  # a = 1.0 at k = 2: the product is exact
                        for y in range(3):
                            Us[b, x, y] = Un[b, x, y] + a * dU[k, b, x, y]
            else:
                for b in range(B):
                    for x in range(3):
                        dL[3, b, x] = T[b, x] * dt
                        L[b, x] = Ln[b, x] + (dL[0, b, x] + 2 * dL[1, b, x] + 2 * dL[2, b, x] + dL[3, b, x]) / 6
                        for y in range(3):
                            Us[b, x, y] = Un[b, x, y] + (dU[0, b, x, y] + 2 * dU[1, b, x, y] + 2 * dU[2, b, x, y]
                                                         + dU[3, b, x, y]) / 6
            _omega_pem(M, Us, L, w)
        new_time = t4 if rk4 else t1
        for b in range(B):
            for x in range(3):
                for y in range(3):
                    Ud[b, x, y] = Us[b, x, y]
            _pem_correct(Us, b, U, b)
        # PemSourceDriver.update(): elliptically driven frames turn by an Euler step, then PEM's correction
        for j in range(M.sb_kind.shape[0]):
            if M.sb_kind[j] == 2:
                w0, w1, w2 = M.sb_spin[j, 0], M.sb_spin[j, 1], M.sb_spin[j, 2]
                for x in range(3):
                    u0, u1, u2 = frames[j, x, 0], frames[j, x, 1], frames[j, x, 2]
                    G[0, x, 0] = u0 + (w1 * u2 - w2 * u1) * dt
                    G[0, x, 1] = u1 + (w2 * u0 - w0 * u2) * dt
                    G[0, x, 2] = u2 + (w0 * u1 - w1 * u0) * dt
                _pem_correct(G, 0, frames, j)
        dtime = new_time
    return dtime

@_jit_entry
def _member_pem(M, Ue, Ude, Le, we, fe, dtime, c, friction_on, field_e, dt, rk4, steps0, marks, check_every,
                oU, oL, ow, st):
    """One member of :func:`run_pem`; returns the driver's time reached."""
    B = Le.shape[0]
    D, S, K = M.owner.shape[0], M.src_body.shape[0], M.sb_kind.shape[0]
    org = np.empty((K, 3))
    rs, ms = np.empty((S, 3)), np.empty((S, 3))
    s, p, r, Td = np.empty((D, 3)), np.empty((D, 3)), np.empty((D, 3)), np.empty((B, 3))
    T, F, Ln = np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3))  # scratch of _pem_chunk
    Un, Us, Up = np.empty((B, 3, 3)), np.empty((B, 3, 3)), np.empty((B, 3, 3))
    dL, dU, G = np.empty((4, B, 3)), np.empty((4, B, 3, 3)), np.empty((1, 3, 3))
    Xt, pv, SR = np.empty((B, 3)), np.zeros((B, 12)), np.zeros((K + S, 6))
    if S:
        _sources_pem(M, 1, 0.0, dt, fe, org, rs, ms, SR)
    return _pem_marks(M, Ue, Ude, Le, we, fe, dtime, c, friction_on, field_e, dt, rk4, steps0, marks, check_every,
                      oU, oL, ow, st, org, rs, ms, s, p, r, Td, T, F, Un, Us, Up, Ln, dL, dU, G, Xt, pv, SR)


@_jit_borrowed
def _pem_marks(M, Ue, Ude, Le, we, fe, dtime, c, friction_on, field_e, dt, rk4, steps0, marks, check_every,
               oU, oL, ow, st, org, rs, ms, s, p, r, Td, T, F, Un, Us, Up, Ln, dL, dU, G, Xt, pv, SR):
    """The step loop of :func:`_member_pem` through ``marks``, on scratch arrays it is given."""
    B = Le.shape[0]
    steps = steps0
    code, body = OK, 0
    for i in range(marks.shape[0]):
        mark = marks[i]
        while steps < mark:
            n = min(check_every, mark - steps)
            dtime = _pem_chunk(M, Ue, Ude, Le, we, fe, dtime, steps, n, dt, rk4, c, friction_on, field_e,
                               org, rs, ms, s, p, r, Td, T, F, Un, Us, Up, Ln, dL, dU, G, Xt, pv, SR)
            steps += n
            code, body = _check(M, Ue, Le)
            if code != OK:
                break
        if code != OK:
            break
        for b in range(B):
            for x in range(3):
                for y in range(3):
                    oU[i, b, x, y] = Ue[b, x, y]
                oL[i, b, x] = Le[b, x]
                ow[i, b, x] = we[b, x]
    st[0], st[1], st[2] = code, steps, body
    return dtime

@_jit_par
def run_pem(M, U, Ud, L, w, frames, dtime, friction, friction_on, field, dt, rk4, steps0, marks, check_every,
            out_U, out_L, out_w, status):
    """PemScheme for every member through ``marks``: U (E,B,3,3) corrected frames, Ud (E,B,3,3) frames
    placing the dipoles, L, w (E,B,3), frames (E,K,3,3) and dtime (E,) PEM's driver state — all in place.
    Members run in parallel; a single scene calls ``_member_pem`` directly.
    """
    for e in prange(L.shape[0]):
        dtime[e] = _member_pem(M, U[e], Ud[e], L[e], w[e], frames[e], dtime[e], friction[e], friction_on,
                               field[e], dt, rk4, steps0, marks, check_every, out_U[e], out_L[e], out_w[e],
                               status[e])
