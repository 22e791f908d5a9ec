"""The compiled engine's step loops (numba): the entries :mod:`.compiled` calls — the splitting's
(:func:`_member_splitting`, with contacts too) and PEM's schemes (:func:`_member_pem`). The stages they call are
modules of their own (:mod:`.kernel_flags` lists them).

Everything here is compiled by numba on first use (cached on disk, :mod:`pem_physics.jit`); the Python
side — the scene's constant arrays (:class:`~.compiled.Model`), the runner that calls these kernels
through record marks — lives in :mod:`.compiled`, which imports this module only when a kernel runs
(or not at all when an ahead-of-time build of the single-scene kernels is loaded: :mod:`.aot`).

Shapes: E members, B moving bodies, D dipoles on them, S source dipoles on K fixed/driven bodies.
Status codes per member: (code, steps done, body), codes as :data:`.compiled.OK` etc.
"""

from __future__ import annotations

import numpy as np

from .broad_kernels import (
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
from .impact_kernels import _any_near, _hold, _idle_but, _impact_search, _lift_off, _near_count, _undo_events
from .kernel_flags import (
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
from .step_kernels import (
    _check,
    _copy_bodies,
    _copy_state,
    _omega_one,
    _omega_principal,
    _pem_correct,
    _same_state,
    _split_chunk,
)
from .torque_kernels import _external, _pivots, _sources_exact, _sources_pem, _torque


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
    # CH: lifted dX Fh Fm Xh si sf split fb Qp Lp Tp Xp Pp Fp
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
    # a scene without contacts passes compiled.no_contacts (C.present False): no pairs, every switch off, nothing
    # written in C — it steps in chunks of check_every as it would with no contact code at all
    nP = C.pair.shape[0]
    # sphere centres and gaps at the step's start (S0, g0) and end (S1, g1): swapped after each step
    S0, S1, g0, g1, nb, w0, w1, near, nl, Sref, bi, bf = AC
    contacts = nP > 0
    # the near pairs (C.broad: :func:`_overlap_near`): nl[:bi[0]] the list (every pair, in order, without C.broad);
    # bf its margins (the pairs' smallest σ, largest tol and touch limit: bf[2:5])
    broad = contacts and C.broad
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
            if C.present:  # chunks end on the grid of multiples of check_every too, as the driver's calls do
                n = min(check_every - steps % check_every, mark - steps)
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
        if C.present:
            C.rec_loss[i] = C.loss[0]
    if C.present:  # the span and skipping state for the next call (at the stopped step's start, if stopped)
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
