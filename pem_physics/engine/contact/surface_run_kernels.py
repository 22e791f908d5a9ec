"""The compiled run of a body on a table (:func:`run_chunk`), step for step :mod:`.surface_run`'s: a state's contact
decided (:func:`_settle`), events located by Brent's method and taken (:func:`_locate`, :func:`_transition`), the
chunk of steps between records — on :mod:`.surface_kernels`' model and step, whose docstring has the layouts.
"""

from __future__ import annotations

import numpy as np

from ..impact_kernels import _brent, _brent_start, _dissipative
from . import surface_several_kernels as several
from .surface_kernels import (
    _K,
    _Q,
    _contact,
    _cross,
    _dot,
    _energy,
    _energy_scale,
    _force,
    _jit,
    _lowest,
    _mv,
    _norm,
    _solve,
    _speed_scale,
    _step,
    _tangent,
    _watch,
)
from .surface_layout import (
    APART,
    EVENTS_FULL,
    FAIL_SECOND_SHAPE,
    FAIL_SEVERAL_EVENT,
    FAILED,
    IMPACT,
    IMPACT_ROLLING,
    IMPACT_SLIDING,
    LIFT_OFF,
    NSTATE,
    OK,
    P_E,
    P_G,
    P_MASS,
    P_MAX_EVENTS,
    P_MAX_SPLITS,
    P_MU,
    P_SLIP_RTOL,
    P_SPLIT_RTOL,
    P_VISCOUS,
    REVERSAL,
    ROLLING,
    S_L,
    S_MODE,
    S_Q,
    S_SHAPE,
    S_SLIP,
    S_T,
    S_V,
    S_X,
    SLIDING,
    SLIP,
    STICK,
)

#: The kernel a build made ahead of time holds (:mod:`pem_physics.aot`): kind → function.
BUILD_ENTRIES = {"surface": "run_chunk"}


@_jit
def _advance(M, s, h, info):
    """Surface.advance without recursion: a stack of (end time, depth) for the halves still to take; the step of one
    contact or none (:func:`.surface_kernels._step`) or of several (:func:`.surface_several_kernels.step`)."""
    par = M[0]
    scale = _energy_scale(par, s)
    ends = np.zeros(64)
    depths = np.zeros(64, dtype=np.int64)
    ends[0] = s[S_T] + h
    top = 0
    cur = s.copy()
    wn = wf = 0.0
    hh = h
    while top >= 0:
        if several.several(cur):
            trial, dwn, dwf = several.step(M, cur, hh, info)
        else:
            trial, dwn, dwf = _step(M, cur, hh, info)
        if info[0] != 0.0:
            return cur, wn, wf
        err = abs(_energy(par, trial) - _energy(par, cur) - dwf)
        if err <= par[P_SPLIT_RTOL] * scale:
            cur = trial
            wn += dwn
            wf += dwf
            top -= 1
            if top >= 0:    # the waiting frame's second half: a call of its own (as the recursion makes)
                hh = ends[top] - cur[S_T]
                ends[top] = cur[S_T] + hh
            continue
        d = depths[top]
        if d >= par[P_MAX_SPLITS]:
            info[0], info[1] = 3.0, cur[S_T]
            return cur, wn, wf
        depths[top] = d + 1
        top += 1
        hh = 0.5 * hh
        ends[top] = cur[S_T] + hh
        depths[top] = d + 1
    return cur, wn, wf


@_jit
def _push(M, s, J, info):
    rho = _contact(M, s, int(s[S_SHAPE]), info)[1]
    s[S_V:S_V + 3] = s[S_V:S_V + 3] + J / M[0][P_MASS]
    s[S_L:S_L + 3] = s[S_L:S_L + 3] + _cross(rho, J)


@_jit
def _impact_impulse(K, u, n, e, mu, info, t):
    """impulses.compute_impulse of a free body on a fixed wall of normal n: u the contact point's velocity, K its
    effective inverse mass (Coulomb friction μ, restitution e; the friction scaled down where the impulse would add
    kinetic energy: impact_kernels._dissipative)."""
    vn = _dot(n, u)
    if vn >= 0.0:
        return np.zeros(3)
    knn = _dot(n, _mv(K, n))
    if mu == 0.0:
        return (-(1.0 + e) * vn / knn) * n
    J = _solve(K, -e * vn * n - u)
    jn = _dot(n, J)
    Jt = J - jn * n
    if _norm(Jt) > mu * jn:
        tt = Jt / _norm(Jt)
        den = _dot(n, _mv(K, n + mu * tt))
        if not den > 0.0:
            info[0], info[1] = 2.0, t
            return np.zeros(3)
        J = (-(1.0 + e) * vn / den) * (n + mu * tt)
    j0, j1, j2 = _dissipative(K, n[0], n[1], n[2], u[0], u[1], u[2], e, J[0], J[1], J[2])
    return np.array([j0, j1, j2])


@_jit
def _settle(M, s, dt, info):
    """surface.settle (in place): the impulse J (3,) the table gave."""
    par = M[0]
    g = par[P_G:P_G + 3]
    C, rho, W, w, u, _, n, _ = _contact(M, s, int(s[S_SHAPE]), info)
    J = np.zeros(3)
    if _dot(u, n) < 0:
        mu = par[P_MU] if par[P_VISCOUS] == 0.0 else 0.0
        J = _impact_impulse(_K(par, W, rho), u, n, par[P_E], mu, info, s[S_T])
        _push(M, s, J, info)
        C, rho, W, w, u, _, n, _ = _contact(M, s, int(s[S_SHAPE]), info)
    if _dot(u, n) > max(abs(_dot(g, n)) * dt, par[P_SLIP_RTOL] * _speed_scale(par, s)):
        s[S_MODE], s[S_SHAPE] = APART, -1.0
        return J
    if _dot(u, n) > 0:
        Jn = (-_dot(u, n) / _dot(n, _mv(_K(par, W, rho), n))) * n
        _push(M, s, Jn, info)
        J = J + Jn
        u = _contact(M, s, int(s[S_SHAPE]), info)[4]
    s[S_SLIP:S_SLIP + 3] = 0.0
    if par[P_VISCOUS] == 0.0 and _norm(_tangent(u, n)) <= par[P_SLIP_RTOL] * _speed_scale(par, s):
        F = _force(M, s, ROLLING, info)
        N = _dot(F, n)
        Ft = F - N * n
        if N <= 0:
            s[S_MODE], s[S_SHAPE] = APART, -1.0
            return J
        if _norm(Ft) <= par[P_MU] * N:
            s[S_MODE] = ROLLING
            return J
        s[S_SLIP:S_SLIP + 3] = Ft / _norm(Ft)
    s[S_MODE] = SLIDING
    if _dot(_force(M, s, SLIDING, info), n) <= 0:
        s[S_MODE], s[S_SHAPE] = APART, -1.0
    return J


@_jit
def _transition(M, s, which, k, dt, info):
    """surface._transition (in place) of the watched event ``which`` (an index of :func:`_watch`'s values):
    (kind code, impulse)."""
    par, r = M[0], M[2]
    S = r.shape[0]
    zero = np.zeros(3)
    if which < S:
        if int(s[S_MODE]) != APART:
            info[0], info[1], info[2] = FAIL_SECOND_SHAPE, s[S_T], k
            return IMPACT, zero
        s[S_SHAPE] = k
        J = _settle(M, s, dt, info)
        mode = int(s[S_MODE])
        return (IMPACT if mode == APART else (IMPACT_SLIDING if mode == SLIDING else IMPACT_ROLLING)), J
    if which == S:
        s[S_MODE], s[S_SHAPE] = APART, -1.0
        return LIFT_OFF, zero
    if int(s[S_MODE]) == SLIDING:       # stick: friction stops what is left of the slip at once
        c = _contact(M, s, int(s[S_SHAPE]), info)
        J = -_solve(_K(par, c[2], c[1]), c[4])
        _push(M, s, J, info)
        s[S_MODE] = ROLLING
        s[S_SLIP:S_SLIP + 3] = 0.0
        F = _force(M, s, ROLLING, info)
        n = _contact(M, s, int(s[S_SHAPE]), info)[6]
        N = _dot(F, n)
        Ft = F - N * n
        if _norm(Ft) > par[P_MU] * N:
            s[S_MODE] = SLIDING
            s[S_SLIP:S_SLIP + 3] = Ft / _norm(Ft)
            return REVERSAL, J
        return STICK, J
    F = _force(M, s, ROLLING, info)     # slip
    n = _contact(M, s, int(s[S_SHAPE]), info)[6]
    Ft = F - _dot(F, n) * n
    s[S_MODE] = SLIDING
    s[S_SLIP:S_SLIP + 3] = Ft / _norm(Ft)
    return SLIP, zero


@_jit
def _locate(M, s, which, v0, val, h, info):
    """The time τ ∈ [0, h] from s at which watched value ``which`` crosses zero (surface.run's Brent call)."""
    bs = np.zeros(13)   # brent.STATE
    if v0 == 0.0:     # events.brent is given no g(0) then, and evaluates it
        v0 = _watch(M, _advance(M, s, 0.0, info)[0], s, info)[which]
    done, tau = _brent_start(bs, 0.0, h, v0, val)
    while not done:
        trial = _advance(M, s, tau, info)[0]
        if info[0] != 0.0:
            return 0.0
        f = _watch(M, trial, s, info)[which]
        done, tau = _brent(bs, f)
    return tau


@_jit
def _record(s, par, wf, wi, wn, R, rc):
    i = rc
    R[i, :NSTATE] = s
    R[i, NSTATE] = _energy(par, s)
    R[i, NSTATE + 1] = wf
    R[i, NSTATE + 2] = wi
    R[i, NSTATE + 3] = wn


@_jit
def run_chunk(M, s, works, i0, i1, n_steps, t0, dt, every, R, rc, E, ec, info):
    """Steps i0+1 … i1 of a run of n_steps from t0 (surface.run's loop), in place on the state s (24,) and the
    cumulative works (3,) = (friction, impacts, normal). Records every ``every`` steps (and the last) go to
    R[rc…] (rows: state (24), energy, the three works); events to E[ec…] (rows: t, kind, shape, impulse (3), point
    (3), x (3), Q (9)). Returns (status, records written, events written): EVENTS_FULL leaves s, works, R, E to be
    thrown away (the caller grows E and runs the chunk again from its copies); FAILED with info = (code, t,
    shape)."""
    par, r = M[0], M[2]
    S = r.shape[0]
    wf, wi, wn = works[0], works[1], works[2]
    max_events = int(par[P_MAX_EVENTS])
    touched = np.zeros(S, np.bool_)
    for i in range(i0 + 1, i1 + 1):
        t_next = t0 + i * dt
        settled = False
        touched[:] = False
        if several.several(s):
            # several contacts: their step compiled; a step in which one changes is the reference's
            h = t_next - s[S_T]
            trial, dwn, dwf = _advance(M, s, h, info)
            if info[0] != 0.0:
                return FAILED, rc, ec
            if several.watch_fires(M, trial, s, info) or info[0] != 0.0:
                info[0], info[1], info[2] = FAIL_SEVERAL_EVENT, s[S_T] + 0.5 * h, -1.0
                return FAILED, rc, ec
            s[:] = trial
            wn += dwn
            wf += dwf
            settled = True
        for _ in range(max_events if not settled else 0):
            h = t_next - s[S_T]
            trial, dwn, dwf = _advance(M, s, h, info)
            if info[0] != 0.0:
                return FAILED, rc, ec
            vals = _watch(M, trial, s, info)
            if info[0] != 0.0:
                return FAILED, rc, ec
            for j in range(S):
                if touched[j]:
                    vals[j] = np.inf
            any_fired = False
            for j in range(S + 5):
                if vals[j] < 0:
                    any_fired = True
            if not any_fired:
                s[:] = trial
                wn += dwn
                wf += dwf
                settled = True
                break
            before = _watch(M, s, s, info)
            best_tau = 0.0
            best = -1
            for j in range(S + 5):
                if not vals[j] < 0:
                    continue
                v0 = before[j]
                if v0 < 0:
                    tau = 0.0
                else:
                    tau = _locate(M, s, j, v0, vals[j], h, info)
                    if info[0] != 0.0:
                        return FAILED, rc, ec
                if best < 0 or abs(tau) < abs(best_tau):
                    best, best_tau = j, tau
            if best_tau != 0:
                nxt, dwn, dwf = _advance(M, s, best_tau, info)
                s[:] = nxt
                wn += dwn
                wf += dwf
            if best >= S + 2:       # a block's region boundary: a step boundary only
                continue
            E0 = _energy(par, s)
            k = best if best < S else int(s[S_SHAPE])
            stick = best == S + 1 and int(s[S_MODE]) == SLIDING
            kind, J = _transition(M, s, best, k, dt, info)
            if info[0] != 0.0:
                return FAILED, rc, ec
            if stick:
                wf += _energy(par, s) - E0
            else:
                wi += _energy(par, s) - E0
            if best < S and int(s[S_MODE]) == APART:   # surface._touch_only: a touch is no event
                if _norm(J) <= par[P_SLIP_RTOL] * par[P_MASS] * _speed_scale(par, s):
                    touched[best] = True
                    continue
            if ec >= E.shape[0]:
                return EVENTS_FULL, rc, ec
            P = _lowest(M, k, s[S_X:S_X + 3], _Q(s), info, s[S_T])[2]
            E[ec, 0], E[ec, 1], E[ec, 2] = s[S_T], kind, k
            E[ec, 3:6] = J
            E[ec, 6:9] = P
            E[ec, 9:12] = s[S_X:S_X + 3]
            E[ec, 12:21] = s[S_Q:S_Q + 9]
            ec += 1
        if not settled:
            info[0], info[1] = 5.0, s[S_T]
            return FAILED, rc, ec
        s[S_T] = t_next
        ok = True
        for j in range(S_X, S_Q + 9):
            if not np.isfinite(s[j]):
                ok = False
        if not ok:
            info[0], info[1] = 6.0, s[S_T]
            return FAILED, rc, ec
        if i % every == 0 or i == n_steps:
            _record(s, par, wf, wi, wn, R, rc)
            rc += 1
        works[0], works[1], works[2] = wf, wi, wn
    return OK, rc, ec
