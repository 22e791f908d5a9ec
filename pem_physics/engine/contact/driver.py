"""Contacts between the bodies the simulator moves: pendulums (hinged or not), translating free bodies and
fixed bodies carrying contact spheres, and static walls (theory §7).

The driver (:func:`run`) steps the integrator (``splitting4`` or ``splitting2``) from grid time k·dt to
(k+1)·dt and then evaluates every gap: sphere–sphere of different bodies, ``|x_a − x_b| − r_a − r_b``, and
sphere–wall, :meth:`~pem_physics.engine.walls.Wall.gap` (m; positive apart). When a gap ends the step below
−:data:`GAP_RTOL`·(r_a + r_b) (a round-off margin, so touching spheres at rest are not events), the step is
thrown away and the contact time is located by Brent's method (:func:`~pem_physics.engine.events.brent`)
on g(t) = min of the triggered gaps after *one step of the integrator of length t − t_c from the step
start t_c* (deterministic: the same inputs give the same times and states). Brent returns the end of
the final bracket where g ≥ 0, so the impulse is applied before the surfaces overlap. The state is
advanced to that time by the same step, every contact whose gap is at most :data:`TOUCH_RTOL`·(r_a + r_b)
there is collected, and :func:`~pem_physics.engine.impulses.resolve_contacts` resolves them
(:mod:`~pem_physics.engine.impulses`: effective mass ``K = −[r]× W [r]×`` with W the lab inverse
inertia about the pivot, ``a aᵀ/(a·I·a)`` through a hinge; ``K = 𝟙/M − [r]× W [r]×`` about the centre of
mass of a translating body, whose momentum p takes the impulse J as its L takes r × J; fixed bodies and
walls K = 0).

Grazing contacts (:func:`_dips`): a pair apart at both ends of a step may still have overlapped in between (a
sphere flying past another or past a box edge, a ball's apex poking through a ceiling). After every step each
such pair is interpolated by the cubic Hermite polynomial of its values and rates at both ends (rates from the
sphere-centre velocities v + ω × (x − C), :func:`_gap_rates`): of the squared centre distance (g + σ)² for
sphere pairs, sphere and cylinder obstacles and boxes from outside (σ = r_a + r_b, r + R, r), which is
quadratic in time on straight lines — the cubic is then exact, however long the step — and of the gap g itself
for planes (linear or quadratic in time under constant forces: exact again) and containers. When the cubic's
minimum inside the step is below the −:data:`GAP_RTOL`·(r_a + r_b) limit, the real gaps are evaluated at that
time by one trial step from the step start; a pair overlapping there has its first contact located by Brent's
method on [t_c, that time] and is resolved like any other impact. A cheap bound comes first (the cubic can only
dip that far when min(g0, g1) is small against dt times bounds on the end rates from |p|/M and |L|), so steps
with no pair close to touching pay a few vector operations and no rates.

Deterministic order of simultaneous contacts: sphere pairs sorted by (first sphere, second sphere)
in scene order (bodies in order, each body's contact spheres in order), then sphere–wall pairs
(sphere, wall) in scene order; the sweeps re-check every approach velocity after each impulse until
no pair approaches. For a line of equal balls with e = 1 listed along the line this is Newton's
cradle: one in → one out, two in → two out (see the impulses module for why the result does not
depend on the order). The rest of the step is then integrated from the impact time with one step of
the remaining length, and the gaps are checked again.

On the compiled engine (:func:`run_compiled`; translating bodies too, their x and p in the kernels) the kernels step
between impacts without returning to Python, evaluating every gap after each step and running the same
grazing check (bound, then cubic; ``broad_kernels._grazing``, with half the limit so that it flags a superset of
the pairs flagged here); the first step that ends overlapping or may dip is handed back, from its start, to
this driver's step (:func:`_advance_step`), which stays the one definition of what happens at an impact
(and decides whether a flagged dip is one), and the kernels go on from its end. That step's trial integrations
(Brent's) run on the kernel too, from the trial's start time (torques that depend on time are taken where numpy
takes them; the drivers' work carried): the same step to rounding, and most of an impact step's cost in numpy. The
kernels take the common impact step themselves (``kernels._member_splitting``'s impact search and
``impact_kernels._resolve_impacts``, a port of this driver's crossing branch, :func:`_resolve` and
:func:`~.impulses.resolve_contacts`: the same trial steps, Brent's method, contacts, sweeps and impulses, to
rounding), their events returned in buffers (``compiled.ContactArrays``) that :func:`run_compiled` appends to the
log as :func:`_log` would; they hand to this driver, from its start, every impact step they do not take: a pair
overlapping at an impact's start, a grazing dip flagged beside a crossing, no effective mass or wall normal, a
friction impulse without a defined normal part (Painlevé), nothing approaching, more than MAX_EVENTS_PER_STEP
impacts. Impacts with Coulomb friction are the kernels' (``impact_kernels._friction_impulse``: the sticking impulse from
the least-squares solve of K J = Δv by Jacobi's eigenvectors, as numpy's lstsq with rcond 1e-12, projected onto
the cone, its friction scaled down where it would add energy). Contacts that settle and rest are
the kernels' too: the settling impact, the hold after each step (``impact_kernels._hold``, a port of
:func:`_hold`: the push along the normal, the e = 0 sweeps with their friction, the forces and the drivers' power
evaluated again where the push left the bodies — steps of length 0 on the kernels' one call site —, the energy it
takes: kinetic plus the work of the forces along the push by Simpson's rule, exact for gravity) and the lift-offs.
Where gravity is the only force (:class:`FlightBounds`) and nothing rests, the kernels first bound how far and how
fast every contact sphere can move (``broad_kernels._horizon``: |L| grows by the torque, the torque by how far the
centre of mass turns, |p| by M·g) and run the steps that no check above could stop — no gap below its limit, no
pair through the grazing filter — merged and unchecked, as a scene without contacts runs (up to
``kernel_flags.SPAN`` steps a span; the gaps are taken again where a span ends): the same events, records to rounding.
In scenes of many pairs (``compiled.BROAD_PAIRS``) the kernels check only the near pairs after each step
(``broad_kernels._overlap_near``: a list from a whole pass, kept while no sphere can have closed its margin to any
limit a check compares a gap with — every gap moves no faster than its spheres), and where nothing couples the
bodies Brent's trial steps move only the bodies of the pairs they look at (``impact_kernels._idle_but``): both the same
decisions and numbers, bit for bit, as every pair checked and every body stepped.

Record rows stay on the regular grid; impacts are logged in an :class:`EventLog` (one row per contact pair
that received an impulse in a resolution, its impulses summed). Limits of the grazing check (none arise while
dt is short against the time a sphere takes to cross its own size): it finds a dip only where the cubic puts
one, so it misses (i) a dip the cubic does not reproduce: one shallower than the cubic's interpolation error,
or whose real minimum lies so far from the cubic's that the real gap is positive at the cubic's minimum time —
a path far from a straight line or a parabola within the step (a pendulum turning through a large angle, a
fast-spinning body, a force varying on the step's time scale), or a box edge passed in a step several times
longer than the ball faces the edge (the squared distance to a box is quadratic only piecewise); (ii) a second
dip of the same pair inside the same step (a cubic has one interior minimum); (iii) a dip less than
GAP_RTOL·(r_a + r_b) deep, which is no event. The kernels' check has the same limits. Resting contacts (theory
§7, Zeno): when an impact involving a translating body would rebound too slowly to leave for a step (e·|v_n| ≤ a_n·dt,
a_n the normal acceleration with which the forces press the sides together), it is resolved with e = 0 (event
kind ``"rest"``) and the pair is held closed from then on (:func:`_hold`: after each step overlaps are pushed
apart along the normal, the translating sides sharing it by 1/M, and approach velocities removed with e = 0
impulses, with the pair's Coulomb friction: each step's normal impulse M·g·dt bounds its friction impulse, so a
body slides under friction μg and rolls on once it sticks — without friction it slides freely; the energy this takes
is booked with the impacts'), until the gap opens by itself after a step (event ``"lift-off"``). Contacts between
pendulums and fixed bodies cannot rest: one that keeps pressing is passed through with a warning.
"""

from __future__ import annotations

import bisect
import copy

import numpy as np

from ...errors import SimulationError, ValidationError
from ..torques import evaluate
from .bounds import SpeedBounds
from .events import brent
from .impulses import Contact, ContactBody, resolve_contacts
from .model import CONTACT_METHODS, GAP_RTOL, MAX_EVENTS_PER_STEP, TOUCH_RTOL, ContactModel, EventLog

# ---------------------------------------------------------------------------- the integrator's state

_SHIFTED: dict = {}


def _shifted(cls):
    """``cls`` with its clock starting at ``t0`` (so one step of any length can start anywhere in time)."""
    cls = getattr(cls, "_unshifted", cls)
    if cls not in _SHIFTED:
        _SHIFTED[cls] = type(cls.__name__, (cls,), {"t": property(lambda self: self.t0 + self.steps_done * self.dt),
                                                    "_unshifted": cls})
    return _SHIFTED[cls]


def _state(integ, t0: float):
    """A copy of the integrator's state at time t0 (arrays copied; the clock restarts at t0)."""
    c = copy.copy(integ)
    for key in (("Q", "L", "T", "J", "X", "P") + (("F",) if len(integ.moving_x) else ())
                + (("driver_work", "W") if getattr(integ, "driver_work", None) is not None else ())):
        setattr(c, key, getattr(integ, key).copy())
    c._decay = {}  # the friction decay cache is keyed by the step length: keep Brent's lengths out of it
    c.__class__ = _shifted(type(integ))
    c.t0, c.steps_done = t0, 0
    return c


def _step(state, h: float):
    """The state after one step of the integrator of length h (s) from ``state`` (unchanged)."""
    out = _state(state, state.t)
    if h > 0:
        out.dt = h
        out.advance(1)
    return out


def _commit(integ, state, steps: int) -> None:
    integ.Q, integ.L, integ.T = state.Q.copy(), state.L.copy(), state.T.copy()
    integ.X, integ.P = state.X.copy(), state.P.copy()
    if len(integ.moving_x):
        integ.F = state.F.copy()
    if getattr(integ, "driver_work", None) is not None:
        integ.driver_work, integ.W = state.driver_work.copy(), state.W.copy()
    integ.steps_done = steps


def _pose(state) -> tuple[np.ndarray, np.ndarray]:
    """Orientations (B,3,3) and centres of rotation (B,3) of the one-member state."""
    return state.orientation()[0], state.X[0]


def _contact_bodies(model: ContactModel, state, contacts) -> dict:
    """{body index: ContactBody} at the state of the moving bodies the ``contacts`` (a list of
    :class:`Contact`) touch: pendulum (hinged or not) or, translating, free (only those: a box of many
    marbles has one or two at an impact)."""
    sys_ = model.system
    U, C = _pose(state)
    w = state.angular_velocity()[0]
    out = {}
    for b in sorted({ct.i for ct in contacts} | {ct.j for ct in contacts if ct.j is not None}):
        if sys_.hinged[b]:
            a = sys_.hinge_axis[b]
            W = np.outer(a, a) / float(state.J[0, b])
        else:
            W = U[b].T @ sys_.kin_body.inv_inertia[b] @ U[b]
        if sys_.translating[b]:
            M = float(sys_.mass[b])
            out[b] = ContactBody("free", M, C[b], W, state.P[0, b] / M, w[b], sys_.names[b])
        else:
            out[b] = ContactBody("pendulum", np.inf, C[b], W, np.zeros(3), w[b], sys_.names[b])
    return out


def _fixed_names(model: ContactModel, pairs, contacts) -> list:
    """The name of each contact's fixed side (a wall's or a fixed body's; None where both sides move), for
    :func:`~.impulses.resolve_contacts`' messages."""
    return [model.other_name(p, ct.i) if ct.j is None else None for p, ct in zip(pairs, contacts)]


def _kinetic(state) -> float:
    """Kinetic energy (J) of the one-member state: rotation ½ω·L plus translation |p|²/2M."""
    P = state.P[0]
    return 0.5 * float(np.einsum("bi,bi->", state.angular_velocity()[0], state.L[0])
                       + np.einsum("bi,bi,b->", P, P, 1.0 / state.system.mass))


def _apply(model: ContactModel, state, ct: Contact, J: np.ndarray, C: np.ndarray) -> None:
    """Apply the impulse J (3,) N·s at contact ct to the state's momenta (in place): body ct.i gets J at the
    contact point, body ct.j −J; a translating body's p changes by ±J, every body's L by ±r × J about its
    centre of rotation C (B,3) (through the hinge axis for a hinged body)."""
    sys_ = model.system
    for side, sign in ((ct.i, 1.0), (ct.j, -1.0)):
        if side is None:
            continue
        dL = sign * np.cross(ct.point - C[side], J)
        if sys_.translating[side]:
            state.P[0, side] += sign * J
        if sys_.hinged[side]:
            a = sys_.hinge_axis[side]
            state.L[0, side] += float(a @ dL) * a
        else:
            state.L[0, side] += dL


def _pressing(model: ContactModel, state, ct: Contact) -> float | None:
    """The normal acceleration (m/s²) with which the forces press the two sides of ct together (> 0: pressing),
    from the translating sides' forces; None when no side translates (a resting contact needs one)."""
    sys_ = model.system
    a, any_free = np.zeros(3), False
    for side, sign in ((ct.i, 1.0), (ct.j, -1.0)):
        if side is not None and sys_.translating[side]:
            a += sign * state.F[0, side] / sys_.mass[side]
            any_free = True
    return -float(ct.normal @ a) if any_free else None


def _resolve(model: ContactModel, state, t: float, log: EventLog) -> int:
    """Apply the impulses of every touching contact at the state (in place); the number of pairs hit.

    A contact whose rebound would be too slow to leave for even a step (e·|v_n| ≤ a_n·dt, a_n the normal
    acceleration pressing the sides together) settles instead (theory §7, Zeno): e = 0 and it becomes a
    resting contact (``model.resting``, kept closed by :func:`_hold`); resting contacts take e = 0.
    """
    U, C = _pose(state)
    X = model.positions(U, C)
    g = model.gaps(U, C)
    touch = [int(p) for p in np.flatnonzero(g <= model.touch_tol)]
    if not touch:
        return 0
    contacts = [model.contact(p, X, float(g[p])) for p in touch]
    bodies = _contact_bodies(model, state, contacts)
    settle = []
    for k, p in enumerate(touch):
        ct = contacts[k]
        if p in model.resting:
            ct.e = 0.0
            continue
        a_n = _pressing(model, state, ct)
        if a_n is not None and a_n > 0:
            v2 = np.zeros(3) if ct.j is None else bodies[ct.j].velocity_at(ct.point)
            v_n = float(ct.normal @ (bodies[ct.i].velocity_at(ct.point) - v2))
            if ct.e * max(-v_n, 0.0) <= a_n * model.dt:
                ct.e = 0.0
                settle.append(p)
    E0 = _kinetic(state)
    applied = resolve_contacts(bodies, contacts, fixed_names=_fixed_names(model, touch, contacts))
    total: dict = {}
    for k, J in applied:
        total[k] = total.get(k, 0.0) + J
    for k, J in total.items():
        ct = contacts[k]
        _apply(model, state, ct, J, C)
        _log(model, log, t, "rest" if touch[k] in settle else "impact", touch[k], ct, J, U, C)
    for p in settle:
        if p not in [touch[k] for k in total]:  # settled without an impulse (already at rest on contact)
            k = touch.index(p)
            _log(model, log, t, "rest", p, contacts[k], np.zeros(3), U, C)
    model.resting.update(settle)
    if total:
        log.energy_loss += E0 - _kinetic(state)
    return len(total) + len(settle)


def _log(model: ContactModel, log: EventLog, t: float, kind: str, p: int, ct: Contact, J, U, C) -> None:
    sys_ = model.system
    log.t.append(t)
    log.body1.append(sys_.names[ct.i])
    log.body2.append(model.other_name(p, ct.i))
    log.kind.append(kind)
    log.impulse.append(np.array(J, float))
    log.point.append(np.array(ct.point, float))
    log.normal.append(np.array(ct.normal, float))
    log.orientation.append(U.copy())
    log.position.append(np.array(C, float))


def _energy(state) -> float:
    """Total energy (J) of the one-member splitting state: kinetic + gravitational + field + dipole–dipole."""
    sys_ = state.system
    res = evaluate(sys_, sys_.kin_principal, state.Q, state.t, X=state.X, energies=True)
    return _kinetic(state) + float(res.gravity_energy.sum() + res.field_energy.sum() + res.dipole_energy.sum())


def _hold(model: ContactModel, state) -> tuple[float, list]:
    """Keep the resting contacts closed at the end of a step (theory §7: rest instead of ever shorter
    flights). Each resting pair that overlaps is pushed apart along its normal, the translating sides
    sharing the overlap in proportion to 1/M, and then no resting pair may approach (impulses with e = 0,
    the full effective masses). A pair found apart (gap above the touch tolerance) has lifted off: the
    forces no longer press it. Modifies the state in place (forces and torques re-evaluated); returns the
    energy (J) the correction took and the pairs that lifted off — the caller books them when it keeps
    the state.
    """
    if not model.resting:
        return 0.0, []
    sys_ = model.system
    U, C = _pose(state)
    g = model.gaps(U, C)
    lifted = sorted(p for p in model.resting if g[p] > TOUCH_RTOL * model.scale[p])
    held = sorted(p for p in model.resting if p not in lifted)
    if not held:
        return 0.0, lifted
    E0 = _energy(state)
    X = model.positions(U, C)
    for p in held:
        if g[p] >= 0:
            continue
        ct = model.contact(p, X, float(g[p]))
        sides = [(b, sign) for b, sign in ((ct.i, 1.0), (ct.j, -1.0)) if b is not None and sys_.translating[b]]
        w = sum(1.0 / sys_.mass[b] for b, _ in sides)
        for b, sign in sides:
            state.X[0, b] += (sign * -g[p] * (1.0 / sys_.mass[b]) / w) * ct.normal
    U, C = _pose(state)
    X = model.positions(U, C)
    g = model.gaps(U, C)
    contacts = []
    for p in held:
        ct = model.contact(p, X, float(g[p]))
        ct.e = 0.0
        contacts.append(ct)
    for k, J in resolve_contacts(_contact_bodies(model, state, contacts), contacts,
                                 fixed_names=_fixed_names(model, held, contacts)):
        _apply(model, state, contacts[k], J, C)
    state.T = state._torque(state.t)  # the closing kick's torque and force, at the corrected positions
    return E0 - _energy(state), lifted


def _approaching(model: ContactModel, state, pairs) -> list:
    """The pairs among ``pairs`` whose contact points approach each other at the state."""
    U, C = _pose(state)
    X = model.positions(U, C)
    g = model.gaps(U, C)
    cts = [model.contact(p, X, float(g[p])) for p in pairs]
    bodies = _contact_bodies(model, state, cts)
    out = []
    for p, ct in zip(pairs, cts):
        v2 = np.zeros(3) if ct.j is None else bodies[ct.j].velocity_at(ct.point)
        if float(ct.normal @ (bodies[ct.i].velocity_at(ct.point) - v2)) < 0:
            out.append(p)
    return out


def _advance_step(model: ContactModel, state, t_end: float, log: EventLog, _step=_step):
    """The state at t_end from ``state`` (at state.t, inside the step), impacts on the way resolved and
    resting contacts held (:func:`_hold`; they are not events). ``_step(state, h)``: the integrator's step
    (default the numpy one; :func:`run_compiled` passes the compiled kernel's, the same step to rounding)."""
    def keep(trial, held):
        loss, lifted = held
        log.energy_loss += loss
        for p in lifted:
            model.resting.discard(p)
            U, C = _pose(trial)
            ct = model.contact(p, model.positions(U, C), 0.0)
            _log(model, log, t_end, "lift-off", p, ct, np.zeros(3), U, C)
        return trial

    hit: list = []
    for _ in range(MAX_EVENTS_PER_STEP):
        tc = state.t
        g0 = _gaps_of(model, state)  # before g1: the memo holds the previous step's end, this step's start
        trial = _step(state, t_end - tc)
        held = _hold(model, trial)
        g1 = _gaps_of(model, trial)
        hit = [int(p) for p in np.flatnonzero(g1 < -GAP_RTOL * model.scale) if p not in model.resting]
        inside = [p for p in hit if g0[p] < 0]
        if inside and _approaching(model, state, inside):
            t_hit = tc  # touching at the start and approaching: the impact is now
        else:
            if inside:
                _persistent(model, inside, tc)
            crossing = [p for p in hit if g0[p] >= 0]
            # pairs apart at both ends whose gap dips below zero inside the step (grazing contacts)
            dip = _dips(model, state, trial, g0, g1, hit, _step)
            if dip is None:
                if not crossing:
                    return keep(trial, held)
                pairs, t_b, g_b = crossing, t_end, g1
            else:  # the bracket ends at the earliest dip found, before any later crossing
                t_b, g_b, dipping = dip
                pairs, hit = crossing + dipping, hit + dipping

            def g(t, pairs=pairs, tc=tc, start=state):
                return float(np.min(model.gaps(*_pose(_step(start, t - tc)), pairs=pairs)))

            t_hit = brent(g, tc, t_b, float(np.min(g0[pairs])), float(np.min(g_b[pairs])), side="a")
            state = _step(state, t_hit - tc)
        if not _resolve(model, state, t_hit, log):
            # nothing approaches at the contact: it presses without an impact (not modelled); let it through
            _persistent(model, hit, t_hit)
            if t_hit == tc:
                return keep(trial, held)
            trial = _step(state, t_end - t_hit)
            return keep(trial, _hold(model, trial))
    raise SimulationError(chatter_message(model, hit, t_end), time=t_end)


def chatter_message(model: ContactModel, pairs, t_end: float) -> str:
    """The error of a step that kept finding impacts: the pairs (indices) hit last, named by their two sides
    (a body and a wall, or two bodies), and what to change."""
    names = sorted({model.pair_names(int(p)) for p in pairs})
    which = "; ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "") if names else "?"
    return (f"more than {MAX_EVENTS_PER_STEP} impacts within one step before t = {t_end:.6g} s: the contacts of "
            f"{which} chatter (a contact pressed closed that only a translating body can rest on; not modelled for "
            "pendulums): try e closer to 1")


#: |h10(s)| = s(1 − s)² and |h11(s)| = s²(1 − s), the weights of the end rates in the cubic Hermite
#: interpolant, never exceed 4/27 on [0, 1] (their maximum, at s = 1/3 and 2/3).
_HERMITE_RATE_MAX = 4.0 / 27.0


def _gaps_of(model: ContactModel, state) -> np.ndarray:
    """:meth:`ContactModel.gaps` of the state, remembering the last result: a step's start is the state the
    previous step ended in (the same Q and X), so its gaps come for free. Keyed by the bytes of Q and X, on
    which alone the gaps depend."""
    key = state.Q.tobytes() + state.X.tobytes()
    memo = model._gap_memo
    if memo is not None and memo[0] == key:
        return memo[1].copy()
    g = model.gaps(*_pose(state))
    model._gap_memo = (key, g.copy())
    return g


def _dips(model: ContactModel, state, trial, g0: np.ndarray, g1: np.ndarray, skip, _step=_step):
    """A grazing contact inside the step from ``state`` (at t_c) to ``trial`` (at t_c + h): a pair apart at
    both ends (g0 ≥ 0, g1 ≥ −GAP_RTOL·scale; not resting, not in ``skip``) whose gap goes below
    −:data:`GAP_RTOL`·scale in between. Returns (t_m, gaps (P,) at t_m, the pairs below that limit there)
    for the earliest t_m found, or None.

    Each pair's gap g is interpolated by a cubic Hermite polynomial from its values and rates
    (:func:`_gap_rates`) at both ends: g itself, or, for a pair with a distance offset σ (:class:`SpeedBounds`:
    sphere pairs, sphere and cylinder obstacles, a box from outside), the squared distance q = (g + σ)²,
    q̇ = 2(g + σ)ġ, which is quadratic in time — so the cubic is exact — while the centres move on straight
    lines (for a sphere pair q = |x_a − x_b|²), where g itself has a kink-like hyperbolic dip that a cubic
    cannot follow once a step is long against the time the dip takes. Where the cubic's interior minimum is
    below the limit (g < −tol, i.e. q < (σ − tol)²), the real gaps are evaluated at the minimum's time t_m by
    one step of length t_m − t_c from the step start (the same trial step as Brent's), and the eligible pairs
    below the limit there are returned. Candidates are visited by (t_m, pair index): deterministic.

    Cheap filter first: the cubic is a convex combination of its end values plus the end rates times h with
    weights of at most 4/27, so g's can only dip below −tol when min(g0, g1) + tol < 4/27·h·(S0 + S1), S a
    bound on |ġ| (:func:`_pair_speeds`), and q's below (σ − tol)² only when
    (m + tol)(2σ + m − tol) < 4/27·h·2(σ + max(g0, g1))(S0 + S1), m = min(g0, g1); rates are computed only
    for the pairs that pass.
    """
    h = trial.t - state.t
    if not h > 0 or not len(g0):
        return None
    tol = model.gap_tol
    sb = model.speed_bounds(_pose(state)[0], state.J[0])
    # twice the bound: a margin for rounding (the filter only has to keep every pair the cubic could flag)
    bound = _pair_speeds(model, sb, state, trial) * (2.0 * _HERMITE_RATE_MAX * h)
    m = np.minimum(g0, g1)
    # squared distances: (m + tol)(2σ + m − tol) < bound·2(σ + max(g0, g1)), i.e. m + tol < bound·ρ with
    # ρ = (σ + max)/(σ + (m − tol)/2) (m ≥ −tol for every eligible pair); for g itself s_eff = 1e300: ρ = 1
    s_eff = np.where(sb.sigma > 0, sb.sigma, 1e300)
    sigma = sb.sigma
    rho = (s_eff + np.maximum(g0, g1)) / (s_eff + 0.5 * (np.maximum(m, -tol) - tol))
    near = m + tol < bound * rho
    if not near.any():
        return None
    excluded = model.resting.union(skip)
    cand = [int(p) for p in np.flatnonzero(near) if p not in excluded and g0[p] >= 0 and g1[p] >= -tol[p]]
    if not cand:
        return None
    r0, r1 = _gap_rates(model, state, cand), _gap_rates(model, trial, cand)
    tc = state.t
    times = []
    for k, p in enumerate(cand):
        s = float(sigma[p])
        if s > 0:  # the squared distance and its limit (σ − tol)²
            d0, d1 = float(g0[p]) + s, float(g1[p]) + s
            low = _hermite_min(d0 * d0, d1 * d1, 2.0 * d0 * r0[k], 2.0 * d1 * r1[k], h)
            below = low is not None and low[1] < (s - tol[p]) ** 2
        else:
            low = _hermite_min(float(g0[p]), float(g1[p]), r0[k], r1[k], h)
            below = low is not None and low[1] < -tol[p]
        if below:
            times.append((tc + float(low[0]) * h, p))
    eligible = None
    last = None
    for t_m, _p in sorted(times):
        if t_m == last or not tc < t_m < trial.t:
            continue
        last = t_m
        if eligible is None:
            eligible = (g0 >= 0) & (g1 >= -tol)
            eligible[list(excluded)] = False
        gm = model.gaps(*_pose(_step(state, t_m - tc)))
        dipping = [int(q) for q in np.flatnonzero(eligible & (gm < -tol))]
        if dipping:
            return t_m, gm, dipping
    return None



def _pair_speeds(model: ContactModel, sb: SpeedBounds, state, trial) -> np.ndarray:
    """(P,) m/s: the bounds on each pair's |dg/dt| at the step's start plus those at its end (inf: no bound),
    from |p| and |L| of every body at both (:class:`SpeedBounds`)."""
    owner = np.where(model.owner >= 0, model.owner, 0)
    speed = np.zeros(len(model.radius))
    for st in (state, trial):
        P, L = st.P[0], st.L[0]
        speed += (sb.inv_mass * np.sqrt(np.einsum("bi,bi->b", P, P))[owner]
                  + sb.lever * np.sqrt(np.einsum("bi,bi->b", L, L))[owner])
    out = speed[model.side_a] + np.where(model.side_b >= 0, speed[model.side_b], 0.0)
    out[~sb.bounded] = np.inf
    return out


def _gap_rates(model: ContactModel, state, pairs) -> list:
    """dg/dt (m/s) of ``pairs`` at the state. A sphere centre moves at v_c = v + ω × (x − C) (v = p/M of a
    translating body, 0 for a pendulum; v_c = 0 on a fixed body), as :meth:`ContactBody.velocity_at`; sphere
    pairs: d|x_a − x_b|/dt = n·(v_a − v_b), n = (x_a − x_b)/|x_a − x_b|; a sphere against a wall, gap = −f − r
    for a signed-distance f: −(∇f·v_a + ∂f/∂t), and for any other f, gap = −f/|∇f| − r, its full derivative.
    The driver's walls are static (:func:`make_wall`, and :meth:`ContactModel.gaps` evaluates them at their
    default time), so ∂f/∂t = 0; the ∂t terms, at the state's time, are there for a moving one."""
    X, V = _sphere_motion(model, state)
    t = float(state.t)
    out = []
    for p in pairs:
        a, b = model.pairs[p]
        if p < model.n_sphere_pairs:
            d = X[a] - X[b]
            out.append(float(d @ (V[a] - V[b])) / float(np.linalg.norm(d)))
            continue
        wall, x = model.walls[b], X[a]
        grad = wall.gradient(x, t)
        fdot = float(grad @ V[a]) + wall.dt(x, t)
        if wall.distance:
            out.append(-fdot)
        else:
            ng = float(np.linalg.norm(grad))
            gdot = float(grad @ (wall.hessian(x, t) @ V[a] + wall.dt_gradient(x, t)))
            out.append(-fdot / ng + wall.value(x, t) * gdot / ng**3)
    return out


def _sphere_motion(model: ContactModel, state) -> tuple[np.ndarray, np.ndarray]:
    """Lab sphere centres X (S,3) m and their velocities V (S,3) m/s at the state, remembering the last result
    (keyed by the bytes of Q, L, X and P; a step's end is the next step's start)."""
    key = state.Q.tobytes() + state.L.tobytes() + state.X.tobytes() + state.P.tobytes()
    memo = model._motion_memo
    if memo is not None and memo[0] == key:
        return memo[1], memo[2]
    sys_ = model.system
    U, C = _pose(state)
    X = model.positions(U, C)
    w = state.angular_velocity()[0]
    P = state.P[0]
    v = np.divide(P, sys_.mass[:, None], out=np.zeros_like(P), where=sys_.translating[:, None])
    V = np.zeros_like(X)
    moving = model.owner >= 0
    o = model.owner[moving]
    V[moving] = v[o] + np.cross(w[o], X[moving] - C[o])
    model._motion_memo = (key, X, V)
    return X, V


def _hermite_min(g0: float, g1: float, r0: float, r1: float, h: float):
    """(s, p(s)) at the interior minimum, 0 < s < 1, of the cubic Hermite interpolant p of a quantity (a gap,
    m, or a squared distance, m²) over a step of length h s (s = (t − t_c)/h; p(0) = g0, p(1) = g1,
    p'(0) = h·r0, p'(1) = h·r1, r0 and r1 its time derivatives at the ends), or None when p has no local
    minimum inside."""
    c = h * r0
    b = 3.0 * (g1 - g0) - 2.0 * h * r0 - h * r1
    a = 2.0 * (g0 - g1) + h * r0 + h * r1
    A, B = 3.0 * a, 2.0 * b  # p'(s) = A s² + B s + c; its minimum where p'' = 2A s + B > 0
    if A == 0.0:
        if not B > 0:
            return None
        s = -c / B
    else:
        D = B * B - 4.0 * A * c
        if not D > 0:
            return None
        root = D**0.5
        # s = (−B + √D)/(2A) (there p'' = √D > 0), written without cancellation
        s = (-B + root) / (2.0 * A) if B < 0 else 2.0 * c / (-B - root)
    if not 0.0 < s < 1.0:
        return None
    u = 1.0 - s
    return s, g0 * u * u * (1.0 + 2.0 * s) + g1 * s * s * (3.0 - 2.0 * s) + h * (r0 * s * u * u - r1 * s * s * u)


def _persistent(model: ContactModel, pairs, t: float) -> None:
    """Warn, once a pair of sides, that pair ``pairs[0]`` presses closed without an impact: named by its two sides
    (two bodies, or a body and a wall, as :func:`chatter_message` names them)."""
    names = model.pair_names(int(pairs[0]))
    text = (f"{names} press on each other without an impact from t = {t:.6g} s (a resting or sliding "
            "contact, not modelled yet): let through")
    if not any(w.startswith(f"{names} press") for w in model.warnings):
        model.warnings.append(text)


# ---------------------------------------------------------------------------- the driver

def check_method(method: str) -> None:
    if method not in CONTACT_METHODS:
        raise ValidationError("settings.method", f"scenes with contacts run with {' or '.join(CONTACT_METHODS)} "
                              f"(their steps restart at an impact), not {method!r}")


def run(model: ContactModel, integ, marks: list, record, check, progress=None, stop=None):
    """Integrate a one-member contact scene through the record ``marks`` (step numbers).

    ``record(integ, t)`` returns one record dict; ``check(integ)`` raises on a blow-up. Returns (times,
    records, complete, log, impact_loss) with impact_loss (R,) J the kinetic energy taken by impacts up to
    each record.
    """
    log = EventLog()
    dt = integ.dt
    model.dt = dt
    records, times, loss = [record(integ, 0.0)], [0.0], [0.0]
    state = _state(integ, 0.0)
    steps = marks[-1]
    complete = True
    for mark in marks[1:]:
        while integ.steps_done < mark:
            k = integ.steps_done + 1
            state = _advance_step(model, state, k * dt, log)
            _commit(integ, state, k)
            state = _state(integ, k * dt)  # the grid time exactly, not the sum of sub-steps
            check(integ)
            if stop is not None and stop():
                complete = False
                break
        if not complete:
            break
        records.append(record(integ, integ.t))
        times.append(integ.t)
        loss.append(log.energy_loss)
        if progress is not None:
            progress(integ.steps_done / max(steps, 1))
    if not complete and times[-1] != integ.t:
        records.append(record(integ, integ.t))
        times.append(integ.t)
        loss.append(log.energy_loss)
    return times, records, complete, log, np.array(loss)


def run_compiled(model: ContactModel, integ, runner, marks: list, check, blowup, progress=None, stop=None,
                 call_seconds: float = 0.1, check_every: int = 64):
    """:func:`run` with the steps between impacts on the compiled engine (``runner``: a
    :class:`~pem_physics.engine.backends.compiled.Runner` of ``integ`` built with ``integ.contacts`` = ``model``).

    Each kernel call runs through record marks until a step ends with a gap below
    −:data:`~pem_physics.engine.backends.compiled.CONTACT_RTOL`·(r_a + r_b) that the kernel does not resolve itself
    (status CONTACT, the state back at that step's start; the kernel takes most impact steps itself — friction,
    settling and resting contacts included —, logged here from its buffers after each call,
    status EVENTS_FULL when they are full); that one
    step is then :func:`_advance_step`'s, exactly as in :func:`run` (its trial steps on the kernel), and the kernels
    continue from its end. ``check(integ)``
    raises on a blow-up after a numpy step, ``blowup(status)`` on a kernel's blow-up status (E,3). Calls are
    sized to about ``call_seconds`` of wall time (the first to ``check_every`` steps) so progress and
    ``stop()`` are polled as by the compiled driver of :mod:`.simulate`; every kernel step is synchronised,
    so where the calls end does not change the numbers.

    Translating bodies are stepped by the kernels too (their positions and momenta go back and forth with
    the orientations and angular momenta); resting contacts (``model.resting``, handed to the kernels in
    ``ContactArrays.resting`` and read back after each call) are held by the kernels after each step
    (``impact_kernels._hold``) where they take impact steps (``ContactArrays.impact``); otherwise every step
    at rest is the numpy driver's, which holds them (:func:`_hold`).

    Returns (times, U (1,R,B,3,3), L (1,R,B,3), w (1,R,B,3), X (1,R,B,3), P (1,R,B,3), complete, log,
    impact_loss (R,) J, driver_work (1,R) J or None) — the states at the records (orientations in the user's body
    axes, lab momenta and angular velocities, centres of rotation in m and linear momenta in kg·m/s) and the
    drivers' work by each (scenes with drivers).
    """
    return _CompiledRun(model, integ, runner, marks, check, blowup, call_seconds, check_every).run(progress, stop)


class _CompiledRun:
    """:func:`run_compiled`'s run: the records so far, the size of the kernel's calls, the event log."""

    def __init__(self, model: ContactModel, integ, runner, marks: list, check, blowup, call_seconds: float,
                 check_every: int):
        self.model, self.integ, self.runner, self.marks = model, integ, runner, marks
        self.check, self.blowup, self.call_seconds, self.check_every = check, blowup, call_seconds, check_every
        self.log = EventLog()
        self.dt = model.dt = integ.dt
        # Brent's trial steps on the kernel too (most of an impact step's cost in numpy), but where pivots move
        self.step = _step if runner.model.pv_any else self._kernel_step
        self.U, self.L = [integ.orientation()[:, None]], [integ.momentum()[:, None]]
        self.w = [integ.angular_velocity()[:, None]]
        self.X, self.P = [integ.position()[:, None].copy()], [integ.linear_momentum()[:, None].copy()]
        # the drivers' work (scenes with drivers: the kernels and the numpy steps both sum it in integ)
        self.W = [integ.driver_work[:, None].copy()] if getattr(runner, "power", False) else None
        self.times, self.loss = [0.0], [0.0]
        self.per_call = check_every
        self.arrays = runner.contact

    def _kernel_step(self, state, h):
        """:func:`_step` on the kernel: the same step to rounding, from the state's time (so torques that depend on
        time are taken where numpy takes them), the drivers' power and work carried; the driver still decides
        everything."""
        out = _state(state, state.t)
        if h > 0:
            # the force is state only where bodies translate (_state copies it then): else a scratch array
            F = out.F[0] if len(out.moving_x) else np.zeros_like(out.X[0])
            DW = None
            if self.runner.power:
                DW = np.array([out.W[0], out.driver_work[0]])
            self.runner.step(out.Q[0], out.L[0], out.T[0], np.ascontiguousarray(out.J[0], dtype=float), out.X[0],
                             out.P[0], F, h, state.t, DW)
            if DW is not None:
                out.W[0], out.driver_work[0] = DW
            out.dt, out.steps_done = h, 1
        return out

    def keep(self, cU, cL, cw, cX, cP, ts, losses=None, cW=None) -> None:
        """Append records: states (1,R,…) at the times ``ts``, the running loss at each (default: the log's)."""
        if self.W is not None:
            self.W.append(cW)
        for rows, new in ((self.U, cU), (self.L, cL), (self.w, cw), (self.X, cX), (self.P, cP)):
            rows.append(new)
        self.times.extend(ts)
        self.loss.extend([self.log.energy_loss] * len(ts) if losses is None else losses)

    def keep_integ(self) -> None:
        """Record the integrator's state (after a step of this driver's, or where a stop leaves it)."""
        integ = self.integ
        self.keep(integ.orientation()[:, None], integ.momentum()[:, None], integ.angular_velocity()[:, None],
                  integ.position()[:, None].copy(), integ.linear_momentum()[:, None].copy(), [integ.t],
                  cW=None if self.W is None else integ.driver_work[:, None].copy())

    def flush(self, recorded) -> list:
        """Append the kernel's events (impacts, contacts settling and lifting off: impact_kernels._resolve_impacts,
        _lift_off) to the log as _log does, take its running energy loss, and return the loss at each of the
        ``recorded`` marks (step numbers; the kernel's rec_loss)."""
        from ..backends import compiled

        model, log, arrays = self.model, self.log, self.arrays
        names = model.system.names
        n = int(arrays.ev_count[0])
        # whole columns at once (a copy each, its rows the log's entries): a gas of marbles logs ~10⁴ events a
        # simulated second, and taking them one by one cost more than their steps
        pair, body = arrays.ev_pair[:n].tolist(), arrays.ev_body[:n].tolist()
        log.t.extend(arrays.ev_t[:n].tolist())
        log.body1.extend(names[i] for i in body)
        log.body2.extend(model.other_name(p, i) for p, i in zip(pair, body))
        log.kind.extend(compiled.EVENT_KINDS[k] for k in arrays.ev_kind[:n].tolist())
        for column, rows in ((log.impulse, arrays.ev_J), (log.point, arrays.ev_point), (log.normal, arrays.ev_normal),
                             (log.orientation, arrays.ev_U), (log.position, arrays.ev_X)):
            column.extend(rows[:n].copy())
        log.energy_loss = float(arrays.loss[0])  # the impacts' and the held contacts' (impact_kernels._hold)
        arrays.ev_count[0] = 0
        return arrays.rec_loss[:len(recorded)].tolist()

    def call(self, i: int) -> tuple:
        """One kernel call from the integrator's state through the marks from ``marks[i]`` on, as many as about
        ``call_seconds`` of wall time take: its records kept, its events logged. Returns (status (1,3), the number
        of marks it recorded)."""
        import time as _time

        from ..backends import compiled

        integ, marks, arrays, check_every = self.integ, self.marks, self.arrays, self.check_every
        start = integ.steps_done
        # the marks reached within per_call steps (at most a call's capacity)
        j = bisect.bisect_right(marks, start + self.per_call, i, min(len(marks), i + compiled.MARK_CAPACITY))
        # an intermediate end on the grid of multiples of check_every, where the kernels end their chunks anyway:
        # the wall-time sizing of calls then changes no number
        if j > i:
            call = list(marks[i:j])
        else:
            end = start + self.per_call - (start + self.per_call) % check_every
            if end <= start:
                end = start - start % check_every + check_every
            call = [min(end, marks[i])]
        t0 = _time.perf_counter()
        arrays.ev_count[0] = 0
        arrays.loss[0] = self.log.energy_loss  # the kernel adds its impacts' and holds' losses to the log's, in order
        arrays.resting[:] = False  # the kernel holds the resting pairs (impact_kernels._hold) and changes the set
        arrays.resting[sorted(self.model.resting)] = True
        cU, cL, cw, cX, cP, status = self.runner.advance_to(call)
        self.model.resting.clear()
        self.model.resting.update(int(p) for p in np.flatnonzero(arrays.resting))
        elapsed = _time.perf_counter() - t0
        code, reached = int(status[0, 0]), int(status[0, 1])
        n_rec = bisect.bisect_right(call, reached, 0, j - i)
        losses = self.flush(call[:n_rec])
        if code not in (compiled.OK, compiled.CONTACT, compiled.EVENTS_FULL):
            self.blowup(status)
        if cX is None:  # no body translates: the centres stay at the pivots, no linear momenta
            cX = np.broadcast_to(integ.position()[:, None], cU.shape[:3] + (3,))
            cP = np.zeros(cX.shape)
        self.keep(cU[:, :n_rec], cL[:, :n_rec], cw[:, :n_rec], cX[:, :n_rec], cP[:, :n_rec],
                  [m * self.dt for m in call[:n_rec]], losses, None if self.W is None else self.runner.work[:, :n_rec])
        done = reached - start
        if elapsed > 0 and done > 0:
            self.per_call = int(min(max(1, done * self.call_seconds / elapsed), 4 * done + 1))
        return status, n_rec

    def run(self, progress, stop) -> tuple:
        """Kernel calls, and the numpy driver's step (:func:`_advance_step`) wherever one stops at a contact it
        leaves to it, to the last mark: :func:`run_compiled`'s result."""
        from ..backends import compiled

        integ, marks, model, dt = self.integ, self.marks, self.model, self.dt
        steps, complete, i = marks[-1], True, 1
        while i < len(marks):
            status = None
            # pairs held closed (translating bodies only) where the kernels do not hold them (compiled.IMPACTS off, to
            # compare): the numpy driver's step, every step — it holds them after each step (_hold); its trial steps
            # still run on the kernels
            if not (model.resting and not self.arrays.impact):
                status, n_rec = self.call(i)
                i += n_rec
            if status is None or int(status[0, 0]) == compiled.CONTACT:
                k = integ.steps_done + 1
                state = _advance_step(model, _state(integ, (k - 1) * dt), k * dt, self.log, self.step)
                _commit(integ, state, k)
                self.check(integ)
                if i < len(marks) and marks[i] == k:
                    self.keep_integ()
                    i += 1
            if progress is not None:
                progress(integ.steps_done / max(steps, 1))
            if stop is not None and stop() and integ.steps_done < steps:
                complete = False
                if self.times[-1] != integ.t:
                    self.keep_integ()
                break
        U, L, w, X, P = (np.concatenate(x, axis=1) for x in (self.U, self.L, self.w, self.X, self.P))
        W = None if self.W is None else np.concatenate(self.W, axis=1)
        return self.times, U, L, w, X, P, complete, self.log, np.array(self.loss), W
