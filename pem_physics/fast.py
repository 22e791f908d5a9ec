"""Optional compiled kernels (numba); the numpy code stays the reference and the fallback.

Blender ships numpy only, so nothing here is required: :func:`available` says whether numba
imported, and :func:`pem_rk4_supported` whether a system fits the fused kernel (one moving
pendulum per member, any number of dipoles on it, static fixed magnets, gravity, a uniform
field, friction; no hinge, driven bodies, rotating field or periodic box). The kernel performs
the same arithmetic as :class:`pem_physics.integrators.PemScheme` (PEM's RK4, step for step),
one ensemble member per thread; ``tests/test_fast.py`` checks both agree.
"""

from __future__ import annotations

import numpy as np

try:  # optional dependency
    import numba
except ImportError:  # Blender's Python, or a plain numpy install
    numba = None

#: Ensembles smaller than this run on the numpy path (compilation would not pay).
MIN_MEMBERS = 64

#: Set False to force the numpy reference path (the tests compare both).
ENABLED = True


def available() -> bool:
    return numba is not None


def pem_rk4_supported(system) -> bool:
    return (available() and system.n_bodies == 1 and not system.hinged.any() and system.box is None
            and system.rotating_field is None and not any(b.motion is not None for b in system.src_bodies))


if numba is not None:
    @numba.njit(cache=True, fastmath=False)
    def _torque(U, Ud, w, com, mass, g, dpos, dmom, pivot, rs, ms, bext, k, c, out):
        """PEM torque about the pivot: gravity (frame U), dipoles placed by frame Ud, friction −cω."""
        rg0 = U[0, 0] * com[0] + U[1, 0] * com[1] + U[2, 0] * com[2]
        rg1 = U[0, 1] * com[0] + U[1, 1] * com[1] + U[2, 1] * com[2]
        rg2 = U[0, 2] * com[0] + U[1, 2] * com[1] + U[2, 2] * com[2]
        t0 = mass * (rg1 * g[2] - rg2 * g[1])
        t1 = mass * (rg2 * g[0] - rg0 * g[2])
        t2 = mass * (rg0 * g[1] - rg1 * g[0])
        for d in range(dpos.shape[0]):
            s0 = Ud[0, 0] * dpos[d, 0] + Ud[1, 0] * dpos[d, 1] + Ud[2, 0] * dpos[d, 2]
            s1 = Ud[0, 1] * dpos[d, 0] + Ud[1, 1] * dpos[d, 1] + Ud[2, 1] * dpos[d, 2]
            s2 = Ud[0, 2] * dpos[d, 0] + Ud[1, 2] * dpos[d, 1] + Ud[2, 2] * dpos[d, 2]
            p0 = Ud[0, 0] * dmom[d, 0] + Ud[1, 0] * dmom[d, 1] + Ud[2, 0] * dmom[d, 2]
            p1 = Ud[0, 1] * dmom[d, 0] + Ud[1, 1] * dmom[d, 1] + Ud[2, 1] * dmom[d, 2]
            p2 = Ud[0, 2] * dmom[d, 0] + Ud[1, 2] * dmom[d, 1] + Ud[2, 2] * dmom[d, 2]
            r0, r1, r2 = pivot[0] + s0, pivot[1] + s1, pivot[2] + s2
            B0, B1, B2 = bext[0], bext[1], bext[2]
            F0 = F1 = F2 = 0.0
            for j in range(rs.shape[0]):
                e0, e1, e2 = r0 - rs[j, 0], r1 - rs[j, 1], r2 - rs[j, 2]
                q0, q1, q2 = ms[j, 0], ms[j, 1], ms[j, 2]
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
            t0 += s1 * F2 - s2 * F1 + p1 * B2 - p2 * B1
            t1 += s2 * F0 - s0 * F2 + p2 * B0 - p0 * B2
            t2 += s0 * F1 - s1 * F0 + p0 * B1 - p1 * B0
        out[0] = t0 - c * w[0]
        out[1] = t1 - c * w[1]
        out[2] = t2 - c * w[2]

    @numba.njit(cache=True)
    def _omega(U, L, Iinv, out):
        b0 = U[0, 0] * L[0] + U[0, 1] * L[1] + U[0, 2] * L[2]
        b1 = U[1, 0] * L[0] + U[1, 1] * L[1] + U[1, 2] * L[2]
        b2 = U[2, 0] * L[0] + U[2, 1] * L[1] + U[2, 2] * L[2]
        c0 = Iinv[0, 0] * b0 + Iinv[0, 1] * b1 + Iinv[0, 2] * b2
        c1 = Iinv[1, 0] * b0 + Iinv[1, 1] * b1 + Iinv[1, 2] * b2
        c2 = Iinv[2, 0] * b0 + Iinv[2, 1] * b1 + Iinv[2, 2] * b2
        for j in range(3):
            out[j] = U[0, j] * c0 + U[1, j] * c1 + U[2, j] * c2

    @numba.njit(cache=True)
    def _dU(w, U, h, out):
        """out = h · (ω × each row of U)."""
        for i in range(3):
            out[i, 0] = h * (w[1] * U[i, 2] - w[2] * U[i, 1])
            out[i, 1] = h * (w[2] * U[i, 0] - w[0] * U[i, 2])
            out[i, 2] = h * (w[0] * U[i, 1] - w[1] * U[i, 0])

    @numba.njit(cache=True)
    def _correct(U, u, out):
        """PEM's Frame::correct2 (see rotations.pem_correct); ``u`` is scratch space (3,3)."""
        for i in range(3):
            n2 = U[i, 0] * U[i, 0] + U[i, 1] * U[i, 1] + U[i, 2] * U[i, 2]
            for j in range(3):
                u[i, j] = 2.0 * U[i, j] / (1.0 + n2)
        for i in range(3):
            k = (i + 1) % 3
            dot = u[i, 0] * u[k, 0] + u[i, 1] * u[k, 1] + u[i, 2] * u[k, 2]
            for j in range(3):
                out[i, j] = (u[i, j] - dot * u[k, j]) / (1.0 - 0.5 * dot)

    @numba.njit(cache=True)
    def _axpy(A, h, B, out):
        """out = A + h·B for 3×3 arrays, without temporaries."""
        for i in range(3):
            for j in range(3):
                out[i, j] = A[i, j] + h * B[i, j]

    @numba.njit(parallel=True, cache=True)
    def _pem_rk4(U, Udip, L, W, steps, dt, com, mass, g, dpos, dmom, pivot, rs, ms, bext, k, c, Iinv):
        E = U.shape[0]
        for e in numba.prange(E):
            Un = U[e].copy()
            Ud = Udip[e].copy()
            Ln = L[e].copy()
            w = W[e].copy()
            T = np.empty(3)
            Us = np.empty((3, 3))
            Ls = np.empty(3)
            dU1, dU2, dU3, dU4 = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
            dL1, dL2, dL3, dL4 = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
            ws = np.empty(3)
            Uc = np.empty((3, 3))
            scratch = np.empty((3, 3))
            for _ in range(steps):
                _torque(Un, Ud, w, com, mass, g, dpos, dmom, pivot, rs, ms, bext, k, c, T)
                for j in range(3):
                    dL1[j] = T[j] * dt
                _dU(w, Un, dt, dU1)
                for j in range(3):
                    Ls[j] = Ln[j] + 0.5 * dL1[j]
                _axpy(Un, 0.5, dU1, Us)
                _omega(Us, Ls, Iinv, ws)
                _torque(Us, Us, ws, com, mass, g, dpos, dmom, pivot, rs, ms, bext, k, c, T)
                for j in range(3):
                    dL2[j] = T[j] * dt
                _dU(ws, Us, dt, dU2)
                for j in range(3):
                    Ls[j] = Ln[j] + 0.5 * dL2[j]
                _axpy(Un, 0.5, dU2, Us)
                _omega(Us, Ls, Iinv, ws)
                _torque(Us, Us, ws, com, mass, g, dpos, dmom, pivot, rs, ms, bext, k, c, T)
                for j in range(3):
                    dL3[j] = T[j] * dt
                _dU(ws, Us, dt, dU3)
                for j in range(3):
                    Ls[j] = Ln[j] + dL3[j]
                _axpy(Un, 1.0, dU3, Us)
                _omega(Us, Ls, Iinv, ws)
                _torque(Us, Us, ws, com, mass, g, dpos, dmom, pivot, rs, ms, bext, k, c, T)
                for j in range(3):
                    dL4[j] = T[j] * dt
                _dU(ws, Us, dt, dU4)
                for j in range(3):
                    Ln[j] = Ln[j] + (dL1[j] + 2 * dL2[j] + 2 * dL3[j] + dL4[j]) / 6
                for i in range(3):
                    for j in range(3):
                        Us[i, j] = Un[i, j] + (dU1[i, j] + 2 * dU2[i, j] + 2 * dU3[i, j] + dU4[i, j]) / 6
                _omega(Us, Ln, Iinv, w)
                _correct(Us, scratch, Uc)
                for i in range(3):
                    for j in range(3):
                        Ud[i, j] = Us[i, j]
                        Un[i, j] = Uc[i, j]
            U[e] = Un
            Udip[e] = Ud
            L[e] = Ln
            W[e] = w


def pem_rk4_advance(integ, n: int) -> None:
    """Advance a :class:`~pem_physics.integrators.PemScheme` (rk4) by n steps with the fused kernel."""
    sys_ = integ.system
    kin = sys_.kin_body
    rs, ms = sys_.sources(0.0)
    rs = np.ascontiguousarray(np.asarray(rs, float).reshape(-1, 3))
    ms = np.ascontiguousarray(np.asarray(ms, float).reshape(-1, 3))
    k = sys_.mu0 / (4 * np.pi) if rs.shape[0] else 0.0
    # Fresh copies: the kernel works in place, and recorded states may share the old arrays.
    U = np.array(integ.U[:, 0], dtype=float, order="C")
    Ud = np.array(integ.U_dip[:, 0], dtype=float, order="C")
    L = np.array(integ.L[:, 0], dtype=float, order="C")
    W = np.array(integ.w[:, 0], dtype=float, order="C")
    _pem_rk4(U, Ud, L, W, n, integ.dt, np.ascontiguousarray(kin.com[0]), float(sys_.mass[0]),
             np.asarray(sys_.gravity, float), np.ascontiguousarray(kin.dpos), np.ascontiguousarray(kin.dmom),
             np.asarray(sys_.pivot[0], float), rs, ms, np.asarray(sys_.external_field(0.0), float), k,
             float(sys_.friction), np.ascontiguousarray(kin.inv_inertia[0]))
    integ.U, integ.U_dip, integ.L, integ.w = U[:, None], Ud[:, None], L[:, None], W[:, None]
    integ.steps_done += n
