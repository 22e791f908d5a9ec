"""Optional compiled kernels (numba); the numpy code stays the reference and the fallback.

Blender ships numpy only, so nothing here is required: :func:`available` says whether numba
imported, and :func:`pem_rk4_supported` whether a system fits the fused kernel (one moving
pendulum per member, any number of dipoles on it, static fixed magnets, gravity, a uniform
field, friction; no hinge, driven bodies, rotating field or periodic box). The kernel performs
the scheme of :class:`pem_physics.integrators.PemScheme` (PEM's RK4, step for step; fused
multiply-adds and a few reciprocals make it agree to rounding, not bit for bit),
each member's step as straight-line code, members in SIMD lanes and split over THREADS threads;
``tests/engine/test_fast.py`` checks both agree. :func:`pair_sweep` is the all-pairs dipole sweep
for many interacting bodies (any scene, any integrator).
"""

from __future__ import annotations

import numpy as np

from ..jit import numba as _numba

numba = _numba()  # None without numba (Blender's Python, a plain numpy install): numpy runs instead

#: Ensembles smaller than this run on the numpy path (compilation would not pay).
MIN_MEMBERS = 64

#: Set False to force the numpy reference path (the tests compare both).
ENABLED = True


def available() -> bool:
    return numba is not None


def pem_rk4_supported(system) -> bool:
    # per_member: the kernel takes one friction and one field for the whole ensemble.
    return (available() and system.n_bodies == 1 and not system.hinged.any() and system.box is None
            and system.rotating_field is None and not system.per_member
            and not any(b.motion is not None for b in system.src_bodies))


#: Compiled per-member kernels run with the GIL released in this many threads.
THREADS = 2
#: Members per block: a compile-time constant of the kernel (changing it at run time has no
#: effect on compiled code). With the block's shape known, LLVM puts members in SIMD lanes
#: (8 doubles with AVX-512: ~5× the scalar kernel here). Every block is full (the ensemble is
#: padded with copies of its first member) and 64 is a multiple of any vector width × unroll,
#: so every member runs through the same vector code, never a scalar remainder loop (with
#: reassociation the two may round differently): a member's result depends neither on its
#: position in the ensemble nor on the number of threads (tests/engine/test_fast.py).
BLOCK = 64

_SIXTH = 1.0 / 6.0
# Fused multiply-adds, reassociation within a member's formulas and no signed zeros (what the
# vectoriser needs). Results agree with the numpy path to rounding (tests/engine/test_fast.py) and
# repeat bit for bit.
_FAST = {"contract", "reassoc", "nsz"}
_INLINE = dict(error_model="numpy", inline="always", fastmath=_FAST)
_NOGIL = dict(error_model="numpy", nogil=True, cache=True, fastmath=_FAST)

if numba is not None:
    @numba.njit(**_INLINE)
    def _torque(U, Ud, w, com, mass, g, dips, pivot, srcs, bext, k, c):
        """PEM torque about the pivot (3 floats): gravity and the external field turn the body by its frame U,
        dipole–dipole terms act on the dipoles as placed by frame Ud (PEM's cached lab dipoles); friction −cω.

        Frames are 9-tuples (rows = body axes, lab); dips/srcs are tuples of (x, y, z, mx, my, mz)
        per dipole, so numba compiles one straight-line body per count (no inner loops left).
        """
        rg0 = U[0] * com[0] + U[3] * com[1] + U[6] * com[2]
        rg1 = U[1] * com[0] + U[4] * com[1] + U[7] * com[2]
        rg2 = U[2] * com[0] + U[5] * com[1] + U[8] * com[2]
        t0 = mass * (rg1 * g[2] - rg2 * g[1])
        t1 = mass * (rg2 * g[0] - rg0 * g[2])
        t2 = mass * (rg0 * g[1] - rg1 * g[0])
        for dp in numba.literal_unroll(dips):
            s0 = Ud[0] * dp[0] + Ud[3] * dp[1] + Ud[6] * dp[2]
            s1 = Ud[1] * dp[0] + Ud[4] * dp[1] + Ud[7] * dp[2]
            s2 = Ud[2] * dp[0] + Ud[5] * dp[1] + Ud[8] * dp[2]
            p0 = Ud[0] * dp[3] + Ud[3] * dp[4] + Ud[6] * dp[5]
            p1 = Ud[1] * dp[3] + Ud[4] * dp[4] + Ud[7] * dp[5]
            p2 = Ud[2] * dp[3] + Ud[5] * dp[4] + Ud[8] * dp[5]
            pe0 = U[0] * dp[3] + U[3] * dp[4] + U[6] * dp[5]
            pe1 = U[1] * dp[3] + U[4] * dp[4] + U[7] * dp[5]
            pe2 = U[2] * dp[3] + U[5] * dp[4] + U[8] * dp[5]
            r0, r1, r2 = pivot[0] + s0, pivot[1] + s1, pivot[2] + s2
            B0 = B1 = B2 = 0.0
            F0 = F1 = F2 = 0.0
            for sj in numba.literal_unroll(srcs):
                e0, e1, e2 = r0 - sj[0], r1 - sj[1], r2 - sj[2]
                q0, q1, q2 = sj[3], sj[4], sj[5]
                inv_r2 = 1.0 / (e0 * e0 + e1 * e1 + e2 * e2)
                kr3 = k * np.sqrt(inv_r2) * inv_r2
                pad = p0 * e0 + p1 * e1 + p2 * e2
                pbd = q0 * e0 + q1 * e1 + q2 * e2
                pab = p0 * q0 + p1 * q1 + p2 * q2
                qq = pbd * inv_r2
                B0 += kr3 * (3.0 * qq * e0 - q0)
                B1 += kr3 * (3.0 * qq * e1 - q1)
                B2 += kr3 * (3.0 * qq * e2 - q2)
                s5 = 3.0 * kr3 * inv_r2
                a, b, cc = s5 * pad, s5 * pbd, s5 * (pab - 5.0 * pad * qq)
                F0 += a * q0 + b * p0 + cc * e0
                F1 += a * q1 + b * p1 + cc * e1
                F2 += a * q2 + b * p2 + cc * e2
            t0 += s1 * F2 - s2 * F1 + p1 * B2 - p2 * B1 + pe1 * bext[2] - pe2 * bext[1]
            t1 += s2 * F0 - s0 * F2 + p2 * B0 - p0 * B2 + pe2 * bext[0] - pe0 * bext[2]
            t2 += s0 * F1 - s1 * F0 + p0 * B1 - p1 * B0 + pe0 * bext[1] - pe1 * bext[0]
        return t0 - c * w[0], t1 - c * w[1], t2 - c * w[2]


    @numba.njit(**_INLINE)
    def _omega(U, L, I):
        """ω (lab) = Uᵀ I⁻¹ U L; I = the body-frame I⁻¹ as a 9-tuple."""
        b0 = U[0] * L[0] + U[1] * L[1] + U[2] * L[2]
        b1 = U[3] * L[0] + U[4] * L[1] + U[5] * L[2]
        b2 = U[6] * L[0] + U[7] * L[1] + U[8] * L[2]
        c0 = I[0] * b0 + I[1] * b1 + I[2] * b2
        c1 = I[3] * b0 + I[4] * b1 + I[5] * b2
        c2 = I[6] * b0 + I[7] * b1 + I[8] * b2
        return (U[0] * c0 + U[3] * c1 + U[6] * c2, U[1] * c0 + U[4] * c1 + U[7] * c2,
                U[2] * c0 + U[5] * c1 + U[8] * c2)


    @numba.njit(**_INLINE)
    def _dU(w, U, h):
        """h · (ω × each row of U)."""
        return (h * (w[1] * U[2] - w[2] * U[1]), h * (w[2] * U[0] - w[0] * U[2]), h * (w[0] * U[1] - w[1] * U[0]),
                h * (w[1] * U[5] - w[2] * U[4]), h * (w[2] * U[3] - w[0] * U[5]), h * (w[0] * U[4] - w[1] * U[3]),
                h * (w[1] * U[8] - w[2] * U[7]), h * (w[2] * U[6] - w[0] * U[8]), h * (w[0] * U[7] - w[1] * U[6]))


    @numba.njit(**_INLINE)
    def _add9(A, h, B):
        return (A[0] + h * B[0], A[1] + h * B[1], A[2] + h * B[2], A[3] + h * B[3], A[4] + h * B[4],
                A[5] + h * B[5], A[6] + h * B[6], A[7] + h * B[7], A[8] + h * B[8])


    @numba.njit(**_INLINE)
    def _rk1(a, b, c, d, e):
        """RK4's a + (b + 2c + 2d + e)/6 (times the rounded 1/6: one multiply, not a division)."""
        return a + (b + 2 * c + 2 * d + e) * _SIXTH


    @numba.njit(**_INLINE)
    def _rk9(U, A, B, C, D):
        return (_rk1(U[0], A[0], B[0], C[0], D[0]), _rk1(U[1], A[1], B[1], C[1], D[1]),
                _rk1(U[2], A[2], B[2], C[2], D[2]), _rk1(U[3], A[3], B[3], C[3], D[3]),
                _rk1(U[4], A[4], B[4], C[4], D[4]), _rk1(U[5], A[5], B[5], C[5], D[5]),
                _rk1(U[6], A[6], B[6], C[6], D[6]), _rk1(U[7], A[7], B[7], C[7], D[7]),
                _rk1(U[8], A[8], B[8], C[8], D[8]))


    @numba.njit(**_INLINE)
    def _add3(A, h, B):
        return A[0] + h * B[0], A[1] + h * B[1], A[2] + h * B[2]


    @numba.njit(**_INLINE)
    def _scale3(T, h):
        return T[0] * h, T[1] * h, T[2] * h


    @numba.njit(**_INLINE)
    def _correct(U):
        """PEM's Frame::correct2 (see rotations.pem_correct), element for element."""
        # Reciprocals instead of PEM's 18 divisions: 6 divisions, results within rounding.
        h0 = 2.0 / (1.0 + (U[0] * U[0] + U[1] * U[1] + U[2] * U[2]))
        h1 = 2.0 / (1.0 + (U[3] * U[3] + U[4] * U[4] + U[5] * U[5]))
        h2 = 2.0 / (1.0 + (U[6] * U[6] + U[7] * U[7] + U[8] * U[8]))
        a0, a1, a2 = U[0] * h0, U[1] * h0, U[2] * h0
        b0, b1, b2 = U[3] * h1, U[4] * h1, U[5] * h1
        c0, c1, c2 = U[6] * h2, U[7] * h2, U[8] * h2
        ab = a0 * b0 + a1 * b1 + a2 * b2
        bc = b0 * c0 + b1 * c1 + b2 * c2
        ca = c0 * a0 + c1 * a1 + c2 * a2
        fa, fb, fc = 1.0 / (1.0 - 0.5 * ab), 1.0 / (1.0 - 0.5 * bc), 1.0 / (1.0 - 0.5 * ca)
        return ((a0 - ab * b0) * fa, (a1 - ab * b1) * fa, (a2 - ab * b2) * fa,
                (b0 - bc * c0) * fb, (b1 - bc * c1) * fb, (b2 - bc * c2) * fb,
                (c0 - ca * a0) * fc, (c1 - ca * a1) * fc, (c2 - ca * a2) * fc)


    @numba.njit(**_INLINE)
    def _stage(Un, Ln, h, dL, dU, dt, com, mass, g, dips, pivot, srcs, bext, k, c, I):
        """One later RK4 stage: increments (dL, dU) at the state Un + h·dU, Ln + h·dL (dipoles placed by that frame)."""
        Us = _add9(Un, h, dU)
        ws = _omega(Us, _add3(Ln, h, dL), I)
        return (_scale3(_torque(Us, Us, ws, com, mass, g, dips, pivot, srcs, bext, k, c), dt), _dU(ws, Us, dt))

    @numba.njit(**_INLINE)
    def _steps(X, steps, dt, com, mass, g, dips, pivot, srcs, bext, k, c, I):
        """``steps`` RK4 steps in place; X (24,BLOCK) columns = members [U (9), U_dip (9), L (3), ω (3)].

        PemScheme's stages in PemScheme's order (PEM's RK4): one member's whole step is
        straight-line code on scalars, with nothing allocated inside the loops. Members are the inner
        loop, each state component is contiguous across members (structure of arrays) and the
        block's shape is a constant once inlined into ``_pem_rk4``: LLVM vectorises the loop.
        """
        for _ in range(steps):
            for m in range(BLOCK):
                Un = (X[0, m], X[1, m], X[2, m], X[3, m], X[4, m], X[5, m], X[6, m], X[7, m], X[8, m])
                Ud = (X[9, m], X[10, m], X[11, m], X[12, m], X[13, m], X[14, m], X[15, m], X[16, m], X[17, m])
                Ln = (X[18, m], X[19, m], X[20, m])
                w = (X[21, m], X[22, m], X[23, m])
                dL1 = _scale3(_torque(Un, Ud, w, com, mass, g, dips, pivot, srcs, bext, k, c), dt)
                dU1 = _dU(w, Un, dt)
                dL2, dU2 = _stage(Un, Ln, 0.5, dL1, dU1, dt, com, mass, g, dips, pivot, srcs, bext, k, c, I)
                dL3, dU3 = _stage(Un, Ln, 0.5, dL2, dU2, dt, com, mass, g, dips, pivot, srcs, bext, k, c, I)
                dL4, dU4 = _stage(Un, Ln, 1.0, dL3, dU3, dt, com, mass, g, dips, pivot, srcs, bext, k, c, I)
                L0 = _rk1(Ln[0], dL1[0], dL2[0], dL3[0], dL4[0])
                L1 = _rk1(Ln[1], dL1[1], dL2[1], dL3[1], dL4[1])
                L2 = _rk1(Ln[2], dL1[2], dL2[2], dL3[2], dL4[2])
                Us = _rk9(Un, dU1, dU2, dU3, dU4)
                wn = _omega(Us, (L0, L1, L2), I)
                Uc = _correct(Us)
                X[0, m], X[1, m], X[2, m], X[3, m], X[4, m], X[5, m], X[6, m], X[7, m], X[8, m] = Uc
                X[9, m], X[10, m], X[11, m], X[12, m], X[13, m], X[14, m], X[15, m], X[16, m], X[17, m] = Us
                X[18, m], X[19, m], X[20, m] = L0, L1, L2
                X[21, m], X[22, m], X[23, m] = wn[0], wn[1], wn[2]

    @numba.njit(**_NOGIL)
    def _pem_rk4(X, steps, dt, com, mass, g, dips, pivot, srcs, bext, k, c, I):
        """X (24, n·BLOCK), members as columns, advanced block by block (each block's state in L1)."""
        if X.shape[1] % BLOCK:
            raise ValueError("pem-rk4 kernel: member count must be a multiple of BLOCK")
        Y = np.empty((24, BLOCK))
        for a in range(0, X.shape[1], BLOCK):
            Y[:, :] = X[:, a:a + BLOCK]
            _steps(Y, steps, dt, com, mass, g, dips, pivot, srcs, bext, k, c, I)
            X[:, a:a + BLOCK] = Y


_POOLS: dict = {}


def _pool(n: int):
    """A thread pool of n workers, made once per process (simulate() calls in every 64 steps)."""
    if n not in _POOLS:
        from concurrent.futures import ThreadPoolExecutor

        _POOLS[n] = ThreadPoolExecutor(n, thread_name_prefix="pem-fast")
    return _POOLS[n]


def _tup(a) -> tuple:
    return tuple(float(v) for v in np.ravel(a))


def pem_rk4_advance(integ, n: int) -> None:
    """Advance a :class:`~pem_physics.integrators.PemScheme` (rk4) by n steps with the compiled kernel.

    Members are split into THREADS contiguous parts, each advanced by one thread with the GIL
    released; each member's arithmetic is independent of the split, so results repeat bit for bit.
    """
    sys_ = integ.system
    kin = sys_.kin_body
    rs, ms = sys_.sources(0.0)
    rs = np.asarray(rs, float).reshape(-1, 3)
    ms = np.asarray(ms, float).reshape(-1, 3)
    E = integ.U.shape[0]
    # A fresh state: the kernel works in place, and recorded states may share the old arrays.
    blocks = -(-E // BLOCK)
    X = np.concatenate([integ.U[:, 0].reshape(E, 9), integ.U_dip[:, 0].reshape(E, 9),
                        integ.L[:, 0], integ.w[:, 0]], axis=1)
    # (24, blocks·BLOCK): components contiguous across members; the padding repeats member 0
    X = np.ascontiguousarray(np.concatenate([X, np.repeat(X[:1], blocks * BLOCK - E, axis=0)]).T)
    dips = tuple(_tup(np.r_[kin.dpos[d], kin.dmom[d]]) for d in range(len(kin.dpos)))
    srcs = tuple(_tup(np.r_[rs[j], ms[j]]) for j in range(len(rs)))
    # numba cannot type an empty tuple here: stand in a source too far away to act (1/r² = 0,
    # every term exactly 0) and, for a bob without dipoles, a dipole of zero moment.
    far = (1e300, 1e300, 1e300, 0.0, 0.0, 0.0)
    if not dips:
        dips, srcs = ((0.0,) * 6,), (far,)
    elif not srcs:
        srcs = (far,)
    args = (n, float(integ.dt), _tup(kin.com[0]), float(sys_.mass[0]), _tup(sys_.gravity), dips,
            _tup(sys_.pivot[0]), srcs, _tup(sys_.external_field(0.0)), float(sys_.mu0 / (4 * np.pi)),
            float(sys_.friction), _tup(kin.inv_inertia[0]))
    cuts = np.linspace(0, blocks, min(THREADS, blocks) + 1).astype(int) * BLOCK
    parts = [X[:, a:b] for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    if len(parts) == 1:
        _pem_rk4(parts[0], *args)
    else:
        pool = _pool(len(parts))
        for f in [pool.submit(_pem_rk4, part, *args) for part in parts]:
            f.result()
    X = X[:, :E].T
    integ.U = X[:, 0:9].reshape(E, 1, 3, 3).copy()
    integ.U_dip = X[:, 9:18].reshape(E, 1, 3, 3).copy()
    integ.L = X[:, 18:21].reshape(E, 1, 3).copy()
    integ.w = X[:, 21:24].reshape(E, 1, 3).copy()
    integ.steps_done += n


# ---------------------------------------------------------------------------------------------
# All-pairs dipole sweep (many interacting bodies)

#: Below this many member·target·source pairs the numpy sweep is as fast (no thread start-up).
MIN_PAIRS = 1 << 15

#: Let LLVM reorder the pair sums (so it can vectorise them) and fuse multiply-adds; nothing
#: else: "nsz" lets it regroup r² + (1 − m) and "afn"/"arcp" approximate 1/x and √x, each
#: costing up to 1e-11 relative (seen on AVX-512, caught by tests/engine/test_fast.py).
_FM = {"reassoc", "contract"}

if numba is not None:
    @numba.njit(fastmath=_FM, error_model="numpy", inline="always")
    def _pair(dx, dy, dz, cx, cy, cz, ax, ay, az, m, k):
        """One source (moment c at separation d) acting on a dipole a: B, F and U terms (theory §3)."""
        r2 = dx * dx + dy * dy + dz * dz
        # Same-body pairs may coincide (r = 0): divide by 1 instead, then zero their weight (m = 0).
        # (A select, not numpy's r² + (1 − m): reassociated, that would round r² against 1.)
        inv_r2 = m / (r2 if m > 0.0 else 1.0)
        kr3 = k * np.sqrt(inv_r2) * inv_r2
        pad = ax * dx + ay * dy + az * dz
        pbd = cx * dx + cy * dy + cz * dz
        pab = ax * cx + ay * cy + az * cz
        q = pbd * inv_r2
        s5 = 3.0 * kr3 * inv_r2
        f1, f2, f3 = s5 * pad, s5 * pbd, s5 * (pab - 5.0 * pad * q)
        return (kr3 * (3.0 * q * dx - cx), kr3 * (3.0 * q * dy - cy), kr3 * (3.0 * q * dz - cz),
                f1 * cx + f2 * ax + f3 * dx, f1 * cy + f2 * ay + f3 * dy, f1 * cz + f2 * az + f3 * dz,
                kr3 * (pab - 3.0 * pad * q))

    @numba.njit(fastmath=_FM, error_model="numpy", inline="always")
    def _sum7(a, b):
        return a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5], a[6] + b[6]

    @numba.njit(fastmath=_FM, error_model="numpy", inline="always")
    def _min_image(d, L, periodic):
        return d - L * np.rint(d / L) if periodic else d

    @numba.njit(parallel=True, fastmath=_FM, error_model="numpy", cache=True)
    def _pair_sweep(rx, ry, rz, px, py, pz, owner, sx, sy, sz, qx, qy, qz, k, box, periodic, B, F, Uen):
        """Field, force and energy on every moving dipole from all others and the sources.

        Structure of arrays: rx… (E,D) lab positions (m) and px… moments (A·m²) of the moving
        dipoles, owner (D,) their bodies; sx…, qx… (S,) static sources. Outputs B, F (E,D,3),
        Uen (E,D) with moving pairs weighted ½ (each met twice) and sources 1 — the same sums
        as :func:`pem_physics.torques.dipole_pair_terms`. One (member, target) per iteration:
        each sum runs in a fixed order on one thread, so results repeat bit for bit.
        """
        E, D = rx.shape
        S = sx.shape[0]
        bx, by, bz = box[0], box[1], box[2]
        for idx in numba.prange(E * D):
            e = idx // D
            a = idx - e * D
            xa, ya, za = rx[e, a], ry[e, a], rz[e, a]
            ax, ay, az = px[e, a], py[e, a], pz[e, a]
            oa = owner[a]
            acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # B (3), F (3), energy
            for b in range(D):
                acc = _sum7(acc, _pair(_min_image(xa - rx[e, b], bx, periodic), _min_image(ya - ry[e, b], by, periodic),
                                       _min_image(za - rz[e, b], bz, periodic), px[e, b], py[e, b], pz[e, b],
                                       ax, ay, az, 1.0 if owner[b] != oa else 0.0, k))
            # each moving pair is met twice (a←b and b←a): half its energy here, the sources' in full
            acc = (acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], 0.5 * acc[6])
            for j in range(S):
                acc = _sum7(acc, _pair(_min_image(xa - sx[j], bx, periodic), _min_image(ya - sy[j], by, periodic),
                                       _min_image(za - sz[j], bz, periodic), qx[j], qy[j], qz[j], ax, ay, az, 1.0, k))
            B[e, a, 0], B[e, a, 1], B[e, a, 2] = acc[0], acc[1], acc[2]
            F[e, a, 0], F[e, a, 1], F[e, a, 2] = acc[3], acc[4], acc[5]
            Uen[e, a] = acc[6]


def pair_sweep_supported(E: int, D: int, S: int) -> bool:
    return available() and ENABLED and E * D * (D + S) >= MIN_PAIRS


def pair_sweep(r, p, owner, rs, ms, k, box, energies: bool):
    """All-pairs terms for :func:`pem_physics.torques.evaluate` with the compiled kernel.

    r, p (E,D,3) moving dipoles; owner (D,); rs, ms (S,3) fixed/driven sources; k = μ₀/4π;
    box (3,) or None. Returns B (E,D,3) T, F (E,D,3) N and U (E,D) J or None.
    """
    E, D = r.shape[:2]
    cols = [np.ascontiguousarray(a[..., i]) for a in (r, p) for i in range(3)]
    rs = np.asarray(rs, float).reshape(-1, 3)
    ms = np.asarray(ms, float).reshape(-1, 3)
    src = [np.ascontiguousarray(a[:, i]) for a in (rs, ms) for i in range(3)]
    B = np.empty((E, D, 3))
    F = np.empty((E, D, 3))
    U = np.empty((E, D))
    periodic = box is not None
    _pair_sweep(*cols, np.ascontiguousarray(owner, dtype=np.int64), *src, float(k),
                np.asarray(box if periodic else (1.0, 1.0, 1.0), float), periodic, B, F, U)
    return B, F, (U if energies else None)
