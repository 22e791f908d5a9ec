"""The compiled engine's step loops (numba): the entries :mod:`.compiled` calls — the splitting's
(:func:`_member_splitting`, with contacts too) and PEM's schemes (:func:`_member_pem`). The stages they call are
modules of their own (:mod:`.kernel_flags` lists them).

Everything here is compiled by numba on first use (cached on disk, :mod:`pem_physics.jit`); the Python
side — the scene's constant arrays (:class:`~.compiled.Model`), the runner that calls these kernels
through record marks — lives in :mod:`.compiled`, which imports this module only when a kernel runs
(or not at all when an ahead-of-time build of the single-scene kernels is loaded: :mod:`pem_physics.aot`).

Shapes: E members, B moving bodies, D dipoles on them, S source dipoles on K fixed/driven bodies.
Status codes per member: (code, steps done, body), codes as :data:`.compiled.OK` etc.
"""

from __future__ import annotations

import numpy as np

from ..broad_kernels import (
    _body_speeds,
    _graze_near,
    _grazing,
    _horizon,
    _min_gap,
    _overlap,
    _overlap_near,
    _refresh,
    _sphere_speed_max,
)
from ..impact_kernels import _any_near, _hold, _idle_but, _impact_search, _lift_off, _near_count, _undo_events
from ..kernel_flags import (
    CONTACT,
    EVENTS_FULL,
    OK,
    SPAN,
    _Gaps,
    _jit_borrowed,
    _jit_entry,
    _jit_inline,
    _jit_par,
    prange,
)
from ..step_kernels import (
    _check,
    _copy_bodies,
    _copy_state,
    _omega_one,
    _omega_principal,
    _pem_correct,
    _same_state,
    _split_chunk,
)
from ..torque_kernels import _external, _pivots, _sources_exact, _sources_pem, _torque

#: The kernels a build made ahead of time holds (:mod:`pem_physics.aot`): kind → function. One splitting entry serves
#: scenes with and without contacts (:func:`.compiled.no_contacts`).
BUILD_ENTRIES = {"splitting": "_member_splitting", "pem": "_member_pem"}

# The step loop's state between its phases, in two small arrays (CH[15], CH[16]) so that the phases, functions of
# their own inlined into the loop, share it: iv (int64) and fv (float64) at these indices.
_FREE_TO, _WAIT, _BACKOFF, _AT_FREE_TO, _AT_WAIT, _AT_BACKOFF, _REEVAL, _N_LIFT, _EV0, _SEARCHED, _LAST_PLAIN, \
    _IDLING, _CODE, _BODY = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
_T_HOLD, _HOLD_LOSS, _LOSS0, _LOSS_PREV, _DW0, _DW1, _BW0, _BW1 = 0, 1, 2, 3, 4, 5, 6, 7
#: their sizes
_NI, _NF = 14, 8


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
    nS, nP = C.owner.shape[0], C.pair.shape[0]
    # every array the steps use, made here: the steps (_splitting_steps) then run without reference counts. In the
    # order _splitting_steps unpacks them — A: org Rs rs ms s p r Td Xt pv SR dB nodes w Q0 L0 T0 X0 P0 F0 idle;
    # AC: S0 S1 g0 g1 nb w0 w1 near nl Sref bi bf; CS: Qs Ls Ts Xs Ps Fs hit bs ci cf order kw bv bw bW used;
    # CH: lifted dX Fh Fm Xh si sf split fb Qp Lp Tp Xp Pp Fp iv fv
    A = (np.empty((K, 3)), np.empty((K, 3, 3)), np.empty((S, 3)), np.empty((S, 3)), np.empty((D, 3)),
         np.empty((D, 3)), np.empty((D, 3)), np.empty((B, 3)), np.empty((B, 3)), np.zeros((B, 12)),
         np.zeros((K + S, 6)), np.zeros(3), np.zeros(drifts.shape[0] + 1), np.empty((B, 3)), np.empty((B, 3, 3)),
         np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)),
         np.zeros(B, np.bool_))
    AC = (np.empty((nS, 3)), np.empty((nS, 3)), np.empty(nP), np.empty(nP), np.empty((B, 4)), np.empty((B, 3)),
          np.empty((B, 3)), np.zeros(nP, np.bool_), np.arange(nP), np.empty((nS, 3)), np.array([nP]), np.zeros(6))
    CS = (np.empty((B, 3, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)),
          np.empty((B, 3)), np.empty(nP, np.int64), np.empty(13), np.empty((nP, 4), np.int64), np.empty((nP, 11)),
          np.empty(nP, np.int64), np.empty((2, 3, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3, 3)),
          np.empty(B, np.bool_))
    CH = (np.zeros(nP, np.bool_), np.zeros((B, 3)), np.zeros((B, 3)), np.zeros((B, 3)), np.zeros((B, 3)),
          np.zeros(5, np.int64), np.zeros(6), np.zeros(3), np.empty((B, 6)), np.empty((B, 3, 3)), np.empty((B, 3)),
          np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3)), np.zeros(_NI, np.int64),
          np.zeros(_NF))
    _splitting_steps(M, Qe, Le, Te, Je, Xe, Pe, Fe, c, damped, fe, dt, steps0, marks, check_every, drifts, kicks,
                     inv_m, inv1, plan_axis, plan_frac, plan_coef, moving, axes, oU, oL, ow, oX, oP, DWe, oW, st, tb,
                     C, A, AC, CS, CH)

@_jit_borrowed
def _splitting_steps(M, Qe, Le, Te, Je, Xe, Pe, Fe, c, damped, fe, dt, steps0, marks, check_every, drifts, kicks,
                     inv_m, inv1, plan_axis, plan_frac, plan_coef, moving, axes, oU, oL, ow, oX, oP, DWe, oW, st, tb,
                     C, A, AC, CS, CH):
    """:func:`_member_splitting`'s steps, on the arrays it made (A, AC, CS, CH: tuples of scratch arrays, unpacked
    below): compiled without reference counts (:data:`_jit_borrowed`), as every call of the loop — a chunk, a
    check, the horizon, a trial step — otherwise counted each array it passed (~17 % of a contact run). A step's
    phases: where it starts (:func:`_step_begin`: a whole step, a trial step of the impact search, a span of free
    flight), the one call of :func:`_split_chunk`, the resting contacts held (:func:`_step_hold`), the gaps checked
    and the impact search (:func:`_step_search`), the step kept or handed back and a standstill skipped
    (:func:`_step_keep`); the marks' records (:func:`_record`)."""
    org, Rs, rs, ms, s, p, r, Td, Xt, pv, SR, dB, nodes, w, Q0, L0, T0, X0, P0, F0, idle = A
    S0, S1, g0, g1, nb, w0, w1, near, nl, Sref, bi, bf = AC
    Qs, Ls, Ts, Xs, Ps, Fs, hit, bs, ci, cf, order, kw, bv, bw, bW, used = CS
    # resting contacts held after each whole (trial) step: the pairs that lifted off in it (CH[0]); the hold's push
    # dX, the forces before it Fh and halfway Fm, the held positions Xh (_step_hold); the search's state si, sf
    # (_impact_search); the splitting's coefficient sums and the horizon's scratch (_horizon); a standstill's other
    # start (Qp…: _step_keep); the loop's state (iv, fv: the indices above)
    lifted, dX, Fh, Fm, Xh, si, sf, split, fb, Qp, Lp, Tp, Xp, Pp, Fp, iv, fv = CH
    # a scene without contacts passes compiled.no_contacts (C.present False): no pairs, every switch off, nothing
    # written in C — it steps in chunks of check_every as it would with no contact code at all
    nP = C.pair.shape[0]
    contacts = nP > 0
    G = _Gaps(C.owner, C.center, C.radius, C.pair, C.spheres, C.limit, C.resting, C.wall_kind, C.wall_sign,
              C.wall_point, C.wall_dir, C.wall_radius, C.wall_axes, C.wall_half)
    _steps_setup(M, C, G, drifts, kicks, split, Qe, Le, Xe, Pe, S0, g0, g1, nb, nl, Sref, bi, bf, dt, org, Rs, rs,
                 ms, SR, iv, fv)
    steps = steps0
    code, body = OK, 0
    for i in range(marks.shape[0]):
        mark = marks[i]
        while steps < mark:
            n = min(check_every, mark - steps)
            if C.present:  # chunks end on the grid of multiples of check_every too, as the driver's calls do
                n = min(check_every - steps % check_every, mark - steps)
            h, k0, t0 = dt, steps, tb
            brent = False
            if contacts:
                # one step a call: its kicks are not merged with the next step's, so each step ends
                # synchronised, as the numpy contact driver's do, and can be undone from the copy — except in
                # free flight that no check could stop (_horizon): those steps merged, as without contacts
                nmax, n = n, 1
                if steps < iv[_FREE_TO]:  # a certified span: merged, unchecked
                    n = min(nmax, iv[_FREE_TO] - steps)
                elif iv[_REEVAL] > 0:  # the forces along the hold's push (contacts._hold's state._torque at its end)
                    h, k0, t0 = 0.0, 0, fv[_T_HOLD]
                elif si[0] == 0:
                    if iv[_LAST_PLAIN]:  # the last step's start, for a standstill of period 2 (the arrays
                        # swapped, not copied: Q0… take this step's start next)
                        Q0, L0, T0, X0, P0, F0, Qp, Lp, Tp, Xp, Pp, Fp = (Qp, Lp, Tp, Xp, Pp, Fp,
                                                                          Q0, L0, T0, X0, P0, F0)
                        fv[_LOSS_PREV] = fv[_LOSS0]
                    n = _step_begin(C, G, steps, nmax, dt, (Qe, Le, Te, Xe, Pe, Fe), (Q0, L0, T0, X0, P0, F0), DWe,
                                    (S0, S1, g0, g1), (nb, nl, Sref, bi, bf), split, fb, iv, fv)
                    if n == 0:  # a span's end whose bound failed (rounding-close): numpy's step
                        code, body = CONTACT, 0
                        break
                else:  # a trial step of the impact search: from its base state at t_c, of its length
                    brent = _trial_begin(C, (Q0, L0, T0, X0, P0, F0), (Qe, Le, Te, Xe, Pe, Fe), DWe, hit, si, idle,
                                         iv, fv)
                    h, k0, t0 = sf[3], 0, sf[0]
            if iv[_IDLING] and not brent:  # out of Brent's trials (stopped in them): every body steps again
                _idle_but(C.pair, C.owner, C.spheres, hit, 0, False, idle)
                iv[_IDLING] = 0
            in_span = steps < iv[_FREE_TO]
            if h > 0.0 or iv[_REEVAL] > 0:  # a trial of length 0 is the base itself (contacts._step)
                _split_chunk(M, Qe, Le, Te, Je, Xe, Pe, Fe, moving, idle, n, k0, h, c, damped, fe, drifts, kicks,
                             inv_m, inv1, plan_axis, plan_frac, plan_coef, org, Rs, rs, ms, s, p, r, Td, DWe, Xt,
                             pv, SR, dB, nodes, t0)
            if in_span:  # certified free flight: nothing to check (the gaps are taken where the span ends)
                C.merged[0] += n
                iv[_LAST_PLAIN] = 0
            else:
                iv[_CODE], iv[_BODY] = OK, 0
                if _step_hold(M, C, (Qe, Le, Te, Xe, Pe, Fe), Je, S1, g1, moving, lifted,
                              (ci, cf, order, w, bv, bw, bW, used, kw), (dX, Fh, Fm, Xh), nl, bi, si, t0, k0, h, iv,
                              fv):
                    continue  # the forces along the hold's push first (steps of length 0)
                act = _step_search(M, C, G, steps, dt, (Qe, Le, Te, Xe, Pe, Fe), Je, (Q0, L0, T0, X0, P0, F0),
                                   (Qs, Ls, Ts, Xs, Ps, Fs), (S0, S1, g0, g1), (nb, nl, Sref, bi, bf), (w0, w1, near),
                                   h, moving, axes, hit, bs, si, sf, (ci, cf, order, w, bv, bw, bW, used, kw), DWe, iv,
                                   fv)
                if act == 2:  # an impact resolved: its gaps are the next trial's start (and its state the base)
                    S0, S1 = S1, S0
                    g0, g1 = g1, g0
                if act > 0:
                    if act == 3:  # handed back, or the event buffers full: stop at the step's start
                        code, body = iv[_CODE], iv[_BODY]
                        break
                    continue
                n = _step_keep(C, G, steps, mark, n, dt, (Qe, Le, Te, Xe, Pe, Fe), (Q0, L0, T0, X0, P0, F0),
                               (Qs, Ls, Ts, Xs, Ps, Fs), (Qp, Lp, Tp, Xp, Pp, Fp), (S0, S1, g0, g1),
                               (nb, nl, Sref, bi, bf), axes, lifted, cf, si, DWe, iv, fv)
                if iv[_CODE] != OK:
                    code, body = iv[_CODE], iv[_BODY]
                    break
                S0, S1 = S1, S0
                g0, g1 = g1, g0
            steps += n
            if contacts and steps < mark and (steps - steps0) % check_every:
                continue  # one step a call: the blow-up check keeps its cadence of one per check_every steps
            code, body = _check(M, Qe, Le)
            if code != OK:
                break
        if code != OK:
            break
        _record(i, M, Qe, Le, Je, Xe, Pe, axes, w, oU, oL, ow, oX, oP, DWe, oW, C)
    if C.present:  # the span and skipping state for the next call (at the stopped step's start, if stopped)
        if code != OK:
            iv[_FREE_TO], iv[_WAIT], iv[_BACKOFF] = iv[_AT_FREE_TO], iv[_AT_WAIT], iv[_AT_BACKOFF]
        C.span[0], C.span[1], C.span[2] = iv[_FREE_TO], iv[_WAIT], iv[_BACKOFF]
    st[0], st[1], st[2] = code, steps, body


@_jit_inline
def _steps_setup(M, C, G, drifts, kicks, split, Qe, Le, Xe, Pe, S0, g0, g1, nb, nl, Sref, bi, bf, dt, org, Rs, rs, ms,
                 SR, iv, fv):
    """The loop's start: its state (iv, fv: the span and skipping carried over in C.span, as where the driver's
    calls end — sized by wall time — must not decide where spans end: a span's chunks merge their kicks, rounding),
    the splitting's coefficient sums (split: Σ|d|, Σ|k|, Σ_i |d_i| Σ_{j≤i} |k_j|, for _horizon), the gaps at the
    start and the near pairs' margins (the pairs' smallest σ, largest tol and touch limit: bf[2:5]), the static
    sources' fields."""
    nP = C.pair.shape[0]
    iv[_N_LIFT] = -1
    iv[_FREE_TO], iv[_WAIT], iv[_BACKOFF] = C.span[0], C.span[1], C.span[2]
    iv[_AT_FREE_TO], iv[_AT_WAIT], iv[_AT_BACKOFF] = C.span[0], C.span[1], C.span[2]
    for i in range(drifts.shape[0]):
        split[0] += abs(drifts[i])
        for j in range(i + 1):
            split[2] += abs(drifts[i]) * abs(kicks[j])
    for i in range(kicks.shape[0]):
        split[1] += abs(kicks[i])
    if nP > 0 and C.broad:
        bf[2], bf[3], bf[4] = 1e300, 0.0, 0.0
        for k in range(nP):
            if C.sigma[k] > 0.0:
                bf[2] = min(bf[2], C.sigma[k])
            bf[3] = max(bf[3], C.tol[k])
            bf[4] = max(bf[4], C.touch[k])
        _refresh(G, C, Qe, Xe, Pe, Le, S0, g0, g1, nl, Sref, bi, bf, nb, dt)
    elif nP > 0:
        _overlap(G, Qe, Xe, S0, g0)
    if M.static_sources:
        # M.power, not a literal False: one signature with _split_chunk's call, which cannot compile its own (it runs
        # without reference counting, and this function allocates)
        _sources_exact(M, 0.0, org, Rs, rs, ms, SR, M.power)


@_jit_inline
def _step_begin(C, G, steps, nmax, dt, E, Z, DWe, gaps, nears, split, fb, iv, fv) -> int:
    """A whole step's start (outside a search): the state copied (Q0…, to hand the step back whole), the drivers'
    work and the events and loss so far; where a span of free flight ended, its gaps; where gravity is the only
    force and nothing rests (C.merge), the horizon (:func:`_horizon`) — the steps to run merged, n (≥ 1; 0 when a
    span's end overlaps: numpy's step). E, Z: the state and the step's start (Q, L, T, X, P, F); gaps (S0, S1, g0,
    g1); nears (nb, nl, Sref, bi, bf). (Tuples: a call of over 30 arguments is one numba cannot inline.)"""
    Qe, Le, Te, Xe, Pe, Fe = E
    Q0, L0, T0, X0, P0, F0 = Z
    S0, S1, g0, g1 = gaps
    nb, nl, Sref, bi, bf = nears
    nP = C.pair.shape[0]
    broad = C.broad
    n = 1
    iv[_AT_FREE_TO], iv[_AT_WAIT], iv[_AT_BACKOFF] = iv[_FREE_TO], iv[_WAIT], iv[_BACKOFF]
    _copy_state(Qe, Le, Te, Xe, Pe, Fe, Q0, L0, T0, X0, P0, F0)
    fv[_DW0], fv[_DW1] = DWe[0], DWe[1]
    fv[_BW0], fv[_BW1] = DWe[0], DWe[1]
    iv[_EV0], fv[_LOSS0], iv[_SEARCHED] = C.ev_count[0], C.loss[0], 0
    if iv[_FREE_TO] > 0:  # a span ended: its gaps, as the step before it would have left them
        iv[_FREE_TO] = 0
        first = (_refresh(G, C, Qe, Xe, Pe, Le, S0, g0, g1, nl, Sref, bi, bf, nb, dt) if broad
                 else _overlap(G, Qe, Xe, S0, g0))
        if first >= 0:  # the bound failed (rounding-close)
            return 0
    if C.merge and not _any_near(C.resting, nl, _near_count(bi, nP)):
        if iv[_WAIT] > 0:
            iv[_WAIT] -= 1
        else:
            if broad:  # the horizon reads every pair's gap: all exact
                _refresh(G, C, Qe, Xe, Pe, Le, S0, g0, g1, nl, Sref, bi, bf, nb, dt)
            span = _horizon(C.owner, C.spheres, C.pair, C.inv_mass, C.lever, C.sigma, C.tol, C.limit, C.force,
                            C.lam2, C.axial, C.graze, g0, Le, Pe, Te, dt, split, SPAN, fb)
            if span > 1:
                iv[_FREE_TO] = steps + span
                n = min(nmax, span)
            # near a contact the horizon is one step for a while: in a crowded scene look again after 1, 2, 4…
            # steps (at most one per 64 pairs, 64), so that it does not pay for a pass over its pairs every step
            cap = min(64, max(1, nP // 64))
            if span == 1:
                iv[_WAIT], iv[_BACKOFF] = iv[_BACKOFF] - 1, min(2 * iv[_BACKOFF], cap)
            else:
                iv[_WAIT], iv[_BACKOFF] = 0, 1
    return n


@_jit_inline
def _trial_begin(C, Z, E, DWe, hit, si, idle, iv, fv) -> bool:
    """A trial step of the impact search, from its base state (Q0…). Brent's trials give only the gaps of the pairs
    hit (_min_gap): where nothing couples the bodies each body's step is its own (the same bits alone), so only those
    pairs' bodies step (and are set back to the base); the others' states are not read before the trial to the root,
    a whole step from the base. Whether it is such a trial."""
    Q0, L0, T0, X0, P0, F0 = Z
    Qe, Le, Te, Xe, Pe, Fe = E
    brent = si[0] == 2 and not C.coupled
    if brent != (iv[_IDLING] != 0):
        _idle_but(C.pair, C.owner, C.spheres, hit, si[1] if brent else 0, brent, idle)
        iv[_IDLING] = 1 if brent else 0
    if iv[_IDLING]:
        _copy_bodies(Q0, L0, T0, X0, P0, F0, Qe, Le, Te, Xe, Pe, Fe, idle)
    else:
        _copy_state(Q0, L0, T0, X0, P0, F0, Qe, Le, Te, Xe, Pe, Fe)
    DWe[0], DWe[1] = fv[_BW0], fv[_BW1]
    return brent


@_jit_inline
def _step_hold(M, C, E, Je, S1, g1, moving, lifted, scratch, push, nl, bi, si, t0, k0, h, iv, fv) -> bool:
    """After a whole (trial) step: hold its resting contacts (contacts._hold; the check first: the call alone, ~20
    arrays, costs more than a step). With dipoles the forces change where the hold moved the bodies: steps of length
    0 at the same call site evaluate them (at time t_hold) halfway along the push (reeval 2) and where it left them
    (reeval 1), for Simpson's rule on the work ∫F·dx the push takes from the potential. Whether such a step of
    length 0 comes next (the loop continues). scratch: _hold's (ci, cf, order, w, bv, bw, bW, used, kw); push
    (dX, Fh, Fm, Xh)."""
    Qe, Le, Te, Xe, Pe, Fe = E
    ci, cf, order, w, bv, bw, bW, used, kw = scratch
    dX, Fh, Fm, Xh = push
    B = Le.shape[0]
    if iv[_REEVAL] == 2:  # the forces halfway: back to the held positions, and their forces next
        for b in range(B):
            for x in range(3):
                Fm[b, x] = Fe[b, x]
                Xe[b, x] = Xh[b, x]
        iv[_REEVAL] = 1
        return True
    if iv[_REEVAL] == 1:  # the work the push took from the potential, by Simpson's rule (the hold booked F·Δx)
        iv[_REEVAL] = 0
        more = 0.0
        for b in range(B):
            for x in range(3):
                more += (4.0 * (Fm[b, x] - Fh[b, x]) + (Fe[b, x] - Fh[b, x])) * dX[b, x]
        fv[_HOLD_LOSS] += more / 6.0
        return False
    iv[_N_LIFT] = -1
    nn = _near_count(bi, C.pair.shape[0])
    if C.pair.shape[0] > 0 and C.impact and si[0] <= 1 and _any_near(C.resting, nl, nn):
        hold_loss, n_lift, held, pushed = _hold(M, C, Qe, Le, Xe, Pe, Fe, Je, S1, g1, moving, lifted, ci, cf, order,
                                                w, bv, bw, bW, used, kw, dX, nl, nn)
        fv[_HOLD_LOSS], iv[_N_LIFT] = hold_loss, n_lift
        if not held:  # no effective mass (not for a translating side): the numpy driver's step
            iv[_CODE], iv[_BODY] = CONTACT, 0
        elif pushed and M.owner.shape[0] > 0:
            iv[_REEVAL], fv[_T_HOLD] = 2, t0 + (k0 + 1) * h  # at the step's end
            for b in range(B):
                for x in range(3):
                    Fh[b, x] = Fe[b, x]
                    Xh[b, x] = Xe[b, x]
                    Xe[b, x] -= 0.5 * dX[b, x]
            return True
    return False


@_jit_inline
def _step_search(M, C, G, steps, dt, E, Je, Z, Zs, gaps, nears, graze, h, moving, axes, hit, bs, si, sf, scratch, DWe,
                 iv, fv) -> int:
    """The step's gaps (a Brent trial's: the smallest of its pairs', sf[5]; else every near pair's, and the grazing
    dips) and, where a pair overlaps or may dip or a search runs, the impact search (:func:`_impact_search`). What
    the loop does next: 0 go on (keep the step), 1 the next trial, 2 the next trial from an impact (the gaps
    swapped), 3 stop at the step's start (iv[_CODE] says why). Zs: the step's start the search keeps; graze (w0, w1,
    near): the grazing filter's scratch."""
    Qe, Le, Te, Xe, Pe, Fe = E
    Q0, L0, T0, X0, P0, F0 = Z
    Qs, Ls, Ts, Xs, Ps, Fs = Zs
    S0, S1, g0, g1 = gaps
    nb, nl, Sref, bi, bf = nears
    w0, w1, near = graze
    ci, cf, order, w, bv, bw, bW, used, kw = scratch
    nP = C.pair.shape[0]
    contacts = nP > 0
    broad = contacts and C.broad
    can_impact = contacts and C.impact
    code = iv[_CODE]
    if code == OK and si[0] == 2:  # Brent's trial: the smallest gap of its pairs (_impact_search, sf[5])
        pair = -1
        sf[5] = _min_gap(G, Qe, Xe, S1, hit, si[1])
    else:
        if C.graze:  # the speeds the grazing filter bounds (and the near list's margin)
            _body_speeds(P0, L0, Pe, Le, nb)
        if broad:
            vmax = _sphere_speed_max(C.owner, C.inv_mass, C.lever, nb) if C.graze else 0.0
            pair = _overlap_near(G, C.bounded, Qe, Xe, S1, g1, g0, S0, nl, Sref, bi, bf, vmax, h, C.graze, C.checks)
        else:
            pair = _overlap(G, Qe, Xe, S1, g1) if contacts else -1
    dip = -1
    if C.graze and si[0] <= 1 and (pair < 0 or can_impact):
        nn = _near_count(bi, nP)
        if _graze_near(C.pair, C.owner, C.spheres, C.tol, C.sigma, C.bounded, C.inv_mass, C.lever, C.resting, g0, g1,
                       nb, h, near, nl, nn) > 0:
            dip = _grazing(M, C, Q0, L0, X0, P0, Qe, Le, Xe, Pe, Je, g0, g1, S0, S1, h, near, nl, nn, w0, w1)
    # a step that ends apart and cannot dip, outside a search, needs nothing of it: the call alone (some 40 arrays
    # passed member by member) cost ~1 µs a step
    if code == OK and contacts and (si[0] != 0 or pair >= 0 or dip >= 0):
        if si[0] == 0:
            iv[_SEARCHED] = 1
        act, code, body = _impact_search(M, C, pair, dip, can_impact, steps, dt, Qe, Le, Te, Xe, Pe, Fe, Je, Q0, L0,
                                         T0, X0, P0, F0, Qs, Ls, Ts, Xs, Ps, Fs, g0, g1, S1, moving, axes, hit, bs, si,
                                         sf, ci, cf, order, w, bv, bw, bW, used, kw, nl, _near_count(bi, nP))
        iv[_CODE], iv[_BODY] = code, body
        if act == 3:
            DWe[0], DWe[1] = fv[_DW0], fv[_DW1]
            return 3
        if act == 2:
            fv[_BW0], fv[_BW1] = DWe[0], DWe[1]
            return 2
        if act > 0:
            return 1
    return 0


@_jit_inline
def _step_keep(C, G, steps, mark, n, dt, E, Z, Zs, Zp, gaps, nears, axes, lifted, cf, si, DWe, iv, fv) -> int:
    """The step's end: handed back to its start when it cannot be kept (iv[_CODE] not OK: events that do not fit,
    or a stop set before), else kept — its hold's energy and lift-offs (contacts._advance_step's keep). A
    standstill — a whole step with no event that left the state and the energy taken as they were (period 1), or as
    they were a step before (period 2: a ball held at rest on its floor, its momentum ±1 ulp of zero by turns) —
    repeats to the next mark (the steps do not depend on time: C.merge): those steps are skipped, the mark given the
    state of its parity. The steps this one stands for (n, or to the mark). The caller swaps the gaps (S0↔S1, g0↔g1)
    after a kept step: here the next step's start gaps are still S1, g1. Zp: the start of the step before."""
    Qe, Le, Te, Xe, Pe, Fe = E
    Q0, L0, T0, X0, P0, F0 = Z
    Qs, Ls, Ts, Xs, Ps, Fs = Zs
    Qp, Lp, Tp, Xp, Pp, Fp = Zp
    S0, S1, g0, g1 = gaps
    nb, nl, Sref, bi, bf = nears
    nP = C.pair.shape[0]
    n_lift = iv[_N_LIFT]
    if iv[_CODE] == OK and n_lift > 0 and C.ev_count[0] + n_lift > C.ev_t.shape[0]:
        # no room to log the lift-offs: flush the buffers first, or (none to flush) the driver's step
        iv[_CODE], iv[_BODY] = (EVENTS_FULL if iv[_EV0] > 0 else CONTACT), 0
    if iv[_CODE] != OK:  # back to the step's start, as it was
        _undo_events(C, iv[_EV0], fv[_LOSS0])
        if iv[_SEARCHED]:
            _copy_state(Qs, Ls, Ts, Xs, Ps, Fs, Qe, Le, Te, Xe, Pe, Fe)
        else:
            _copy_state(Q0, L0, T0, X0, P0, F0, Qe, Le, Te, Xe, Pe, Fe)
        si[0] = 0
        DWe[0], DWe[1] = fv[_DW0], fv[_DW1]
        return n
    if n_lift >= 0:  # the step is kept: its hold's energy and lift-offs
        C.loss[0] += fv[_HOLD_LOSS]
        if n_lift > 0:
            _lift_off(C, Qe, Xe, S1, axes, lifted, (steps + 1) * dt, cf, nl, _near_count(bi, nP))
    plain = C.merge and iv[_SEARCHED] == 0 and n_lift <= 0 and C.ev_count[0] == iv[_EV0]
    period = 0
    if plain and C.loss[0] == fv[_LOSS0] and _same_state(Qe, Le, Te, Xe, Pe, Fe, Q0, L0, T0, X0, P0, F0):
        period = 1
    elif (plain and iv[_LAST_PLAIN] and C.loss[0] == fv[_LOSS_PREV]
          and _same_state(Qe, Le, Te, Xe, Pe, Fe, Qp, Lp, Tp, Xp, Pp, Fp)):
        period = 2
    iv[_LAST_PLAIN] = 1 if plain else 0
    if period == 0:
        return n
    C.merged[0] += mark - steps - n
    if period == 2 and (mark - steps - n) % 2 == 1:  # the mark has the other state of the two
        _copy_state(Q0, L0, T0, X0, P0, F0, Qe, Le, Te, Xe, Pe, Fe)
        C.loss[0] = fv[_LOSS0]
        # the gaps of the next step's start: S1, g1 (swapped by the caller), g0 its scratch
        if nP > 0 and C.broad:
            _refresh(G, C, Qe, Xe, Pe, Le, S1, g1, g0, nl, Sref, bi, bf, nb, dt)
        else:
            _overlap(G, Qe, Xe, S1, g1)
    iv[_LAST_PLAIN] = 0
    return mark - steps


@_jit_inline
def _record(i, M, Qe, Le, Je, Xe, Pe, axes, w, oU, oL, ow, oX, oP, DWe, oW, C):
    """Mark i's record: the body axes (oU), L, ω, X, P, the drivers' work and the contacts' loss."""
    B = Le.shape[0]
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
    if C.present:
        C.rec_loss[i] = C.loss[0]


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
    C: the contact geometry (compiled.ContactArrays; compiled.no_contacts without, always for ensembles).
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
