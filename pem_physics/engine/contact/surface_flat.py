"""A rim lying flat on a plane table (theory §7): a coin on its face, its whole edge touching — sliding and spinning
together, or at rest — and the landing of a rim that falls flat.

Lying flat the body keeps three freedoms: its centre of mass moves in the plane and it turns about the normal n at
ω_n (ω = ω_n n; L = I ω with I the lab inertia). The table presses with a total N = −M g·n spread round the ring as
p(φ) = N/2π + (c·r̂)/π (:mod:`.ring`: the least-norm spread; its first moment c, in the plane, is what keeps the rim
flat), and rubs each point with Coulomb's −μ p û: a force F at the ring's centre C and a couple T n
(:func:`.ring.ring_friction_map`, exact: elliptic integrals). c and the spin's acceleration ω̇_n follow from the
torque about the centre of mass, I ω̇_n n + ω_n² n × I n = ρ_C × (N n + F) + a c × n + T n (ρ_C = C − x, a the
ring's radius): three linear equations, F and T being linear in c for a given slip. Then M v̇ = M g + N n + F.

The step (``sliding``: :data:`FLAT`) is the explicit midpoint rule on (x, turn about n, v, ω_n), second order; the
friction's work is booked by Simpson's rule of its power F·v_C + T ω_n, so the energy balance E − E₀ − W_friction
measures the step's error as for the other contacts (:meth:`.surface.Surface.advance` halves a step where it
grows). Coulomb friction stops slide and spin together in a finite time; the stop is an event (the slip
(v_C, aω_n) turning past a right angle from the step's start, located to round-off), after which the rim rests
(:data:`FLAT_REST`) while friction can hold the load (on a sloping table: |F| ≤ μN), else slides from rest.

Landing: a rim that touches at one point (sliding or rolling) falls flat where its tilt |m| (the sine of the angle
between its axis and n) reaches zero — an event, its value the tilt signed by whether the lowest point is still on
the side it started the step on. A step whose lowest point turns past a right angle while well off flat (NEAR_FLAT
at both ends) is halved instead (:func:`sweeps`): it ran round the rim (a coin rolling on a tight circle) or passed
flat, which shorter steps tell apart. A rim that strikes
the table from the air within STRIKE_TILT of flat lands so too (struck at one point it would rattle down on its
far sides faster than any step). There the whole edge strikes at once: the normal impulse spread round the ring (a
total Jn and a first moment cJ) that leaves no point of the ring approaching — the rim's plastic impact, which
exists while cJ ≤ Jn (all of it on one point at most); with the table's restitution e > 0 the coin bounces off
whole when every point of the ring leaves, else the impact stays plastic. The landing's impulses are normal:
friction acts on the slip that remains in the flat slide that follows. A rim turning about a horizontal axis so
fast for its fall that cJ > Jn (rocking through flat) strikes with its point that approaches fastest alone, a
one-point impact (:func:`_rock`): it bounces off, or rocks up onto its edge about that point.

A rim lying flat leaves the table when gravity does not press it on (g·n ≥ 0: under a table, on a wall); it topples
when at rest its load's moment about the ring's centre exceeds a·N (reported: its centre of mass leans out past
the rim).

Not modelled (each reported by name): a rim sliding flat whose pressure's moment exceeds the least-norm spread's
a·N/2 (|c| > N/2: friction's moment on a tall body, a fast spin about an axis that is not principal), a rim at rest
that topples, another shape touching while the rim lies flat, a rim lying flat on a curved table.
"""

from __future__ import annotations

import numpy as np

from ...errors import SimulationError
from .impulses import ContactBody, compute_impulse
from .ring import ring_friction_map
from .surface_common import APART, FLAT, FLAT_REST, ROLLING, SLIDING, SLIP_RTOL, cross

#: A rim whose tilt (the sine of the angle between its axis and the table's normal) is at most FLAT_TILT lies flat:
#: when a run starts (placements stored in single precision are off by ~1e-7) and where a falling rim lands (the
#: event is located at this tilt, and the rim laid flat about its lowest point: ~r·FLAT_TILT of motion).
FLAT_TILT = 1e-5
#: Below a tilt of NEAR_FLAT a rim's lowest point runs round it at a rate ~ (its rocking rate)/tilt: a step may be
#: halved NEAR_FLAT_SPLITS more times than elsewhere to follow it down to FLAT_TILT.
NEAR_FLAT = 1e-3
NEAR_FLAT_SPLITS = 12
#: A rim that strikes the table from the air within STRIKE_TILT of flat strikes with its whole edge (laid flat about
#: its lowest point, ~r·STRIKE_TILT of motion): struck at one point, its far side would come down within
#: ~STRIKE_TILT/(its rocking rate) — a rattle of impacts at the rim's far sides no step can follow.
STRIKE_TILT = NEAR_FLAT


def _plane_frame(n) -> tuple:
    """Two unit tangents t₁, t₂ (3,) with t₁ × t₂ = n."""
    t1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


def tilt(surface, k: int, Q, n) -> float:
    """The sine of the angle between rim k's axis and the normal n (0: lying flat)."""
    a = surface.body.rim_axis[k] @ Q
    at = a - (a @ n) * n
    return float(np.linalg.norm(at - (at @ n) * n))


def lies_flat(surface, k: int, Q, within: float = FLAT_TILT) -> bool:
    """Whether shape k is a rim on a plane (a plane table or a tray's face) lying flat within ``within`` (a tilt:
    FLAT_TILT, or STRIKE_TILT for a rim striking the table from the air)."""
    plane = surface.plane(k)
    return bool(surface.body.rim[k]) and plane is not None and tilt(surface, k, Q, plane[1]) <= within


def _inertia(surface, Q) -> np.ndarray:
    """The lab inertia (3,3) kg m² about the centre of mass."""
    return (Q.T * surface.body.moments) @ Q


def _slip(surface, st, n, rho, wn):
    """(v_C (3,), w, whether it is round-off): the slip of the ring's centre in the plane and the rim speed aω_n; a
    slip below SLIP_RTOL of the speed scale is replaced by ``st.slip`` (its part in the plane the slide's
    direction, its part along n the spin's)."""
    r = float(surface.body.r[st.shape])
    vC = st.v + cross(wn * n, rho)
    vC = vC - float(vC @ n) * n
    w = r * wn
    if np.hypot(np.linalg.norm(vC), w) > SLIP_RTOL * surface.speed_scale(st):
        return vC, w, False
    s = st.slip
    return s - float(s @ n) * n, float(s @ n), True


def forces(surface, st, slip=None) -> tuple:
    """The acceleration-level forces of a rim lying flat and sliding: (N, c (3,), F (3,), T, v̇ (3,), ω̇_n) — the
    normal force N, the pressure's first moment c, the friction force F at the ring's centre and couple T about n
    (N, N, N, N·m), the centre of mass's acceleration (m/s²) and the spin's (rad/s²). ``slip`` (v_C, w): the slip
    whose direction the friction takes (default: the state's)."""
    body = surface.body
    k = st.shape
    q, n = surface.plane(k)
    M, r = body.mass, float(body.r[k])
    I = _inertia(surface, st.Q)
    rho = body.b[k] @ st.Q
    wn = float((surface.W(st.Q) @ st.L) @ n)
    vC, w, _ = _slip(surface, st, n, rho, wn) if slip is None else (*slip, False)
    N = -M * float(surface.g @ n)
    t1, t2 = _plane_frame(n)
    F0, T0, A, b = ring_friction_map(vC, w, n, t1, N, surface.table.mu, r)
    In = I @ n
    cols = [In] + [-(cross(rho, A @ t) + r * cross(t, n) + float(b @ t) * n) for t in (t1, t2)]
    rhs = cross(rho, N * n + F0) + T0 * n - wn * wn * cross(n, In)
    z = np.linalg.solve(np.stack(cols, axis=1), rhs)
    c = z[1] * t1 + z[2] * t2
    F = F0 + A @ c
    T = T0 + float(b @ c)
    return N, c, F, T, surface.g + (N * n + F) / M, float(z[0])


def _turned(Q, n, angle: float) -> np.ndarray:
    """The principal frame Q (rows, lab) turned by ``angle`` rad about n."""
    return Q @ _rotation(n, angle).T


def _power(surface, st, F, T) -> float:
    """W: the friction's power F·v_C + T ω_n on the ring's slip."""
    n = surface.plane(st.shape)[1]
    rho = surface.body.b[st.shape] @ st.Q
    wn = float((surface.W(st.Q) @ st.L) @ n)
    vC = st.v + cross(wn * n, rho)
    return float(F @ vC) + T * wn


def _slip_of(surface, st):
    n = surface.plane(st.shape)[1]
    rho = surface.body.b[st.shape] @ st.Q
    wn = float((surface.W(st.Q) @ st.L) @ n)
    vC, w, _ = _slip(surface, st, n, rho, wn)
    return vC, w


def step(surface, st, h: float):
    """One step of length h (s) from st (not changed): (new state, normal work 0, friction work J). A slip that
    turns past a right angle from the step's start keeps the start's direction (the step then ends past the stop,
    where the stick event finds it)."""
    if st.mode == FLAT_REST:
        out = st.copy()
        out.t = st.t + h
        return out, 0.0, 0.0
    n = surface.plane(st.shape)[1]
    s0 = _slip_of(surface, st)

    def rates(s):
        vC, w = _slip_of(surface, s)
        slip = s0 if float(vC @ s0[0]) + w * s0[1] < 0 else None
        N, c, F, T, a, wd = forces(surface, s, slip)
        return a, wd, _power(surface, s, F, T)

    def state(t, x, v, wn, Q):
        out = st.copy()
        out.t, out.x, out.v, out.Q, out.mode = t, x, v - float(v @ n) * n, Q, FLAT
        out.L = _inertia(surface, Q) @ (wn * n)
        return out

    w0 = float((surface.W(st.Q) @ st.L) @ n)
    a0, wd0, p0 = rates(st)
    half = state(st.t + 0.5 * h, st.x + 0.5 * h * st.v, st.v + 0.5 * h * a0, w0 + 0.5 * h * wd0,
                 _turned(st.Q, n, 0.5 * h * w0))
    a1, wd1, p1 = rates(half)
    wh = w0 + 0.5 * h * wd0
    end = state(st.t + h, st.x + h * half.v, st.v + h * a1, w0 + h * wd1, _turned(st.Q, n, h * wh))
    p2 = rates(end)[2]
    return end, 0.0, h * (p0 + 4.0 * p1 + p2) / 6.0


def watch(surface, st, start) -> list:
    """Event functions of a rim lying flat, [(kind, value, shape)], each positive before its event: another shape's
    gap (an impact), the pressure's least value N/2 − |c| (``tip``), the slip against the step start's (``stick``)."""
    g = surface.gaps(st.x, st.Q)
    out = [("impact", float(g[j]), j) for j in range(len(g)) if j != st.shape]
    if st.mode == FLAT_REST:
        return out
    N, c = forces(surface, st)[:2]
    out.append(("tip", 0.5 * N - float(np.linalg.norm(c)), st.shape))
    vC, w = _slip_of(surface, st)
    v0, w0 = _slip_of(surface, start)
    out.append(("stick", float(vC @ v0) + w * w0, st.shape))
    return out


def load(surface, st) -> tuple:
    """What holds a rim resting flat: (N, c (3,), F (3,), T) — the normal force, the pressure's first moment, the
    friction force at the ring's centre and its couple about n that keep it still (N, N, N, N·m)."""
    body = surface.body
    k = st.shape
    n = surface.plane(k)[1]
    M, r = body.mass, float(body.r[k])
    rho = body.b[k] @ st.Q
    N = -M * float(surface.g @ n)
    F = -M * (surface.g - float(surface.g @ n) * n)
    t1, t2 = _plane_frame(n)
    z = np.linalg.solve(np.stack([r * cross(t1, n), r * cross(t2, n), n], axis=1), -cross(rho, N * n + F))
    return N, z[0] * t1 + z[1] * t2, F, float(z[2])


def _holds(surface, st) -> bool:
    """Whether friction holds a rim resting flat. Exact where the load has no couple about n (a coin on a slope:
    |F| ≤ μN); else the load must lie inside the diamond |F|/μ + |T|/(μa) ≤ N − 2|c| (what the even part of the
    pressure alone can hold), and a load between that and |F| ≤ μN, |T| ≤ μNa is reported."""
    N, c, F, T = load(surface, st)
    mu, r = surface.table.mu, float(surface.body.r[st.shape])
    small = 1e-12 * (N * r + abs(T))
    if abs(T) <= small:
        return float(np.linalg.norm(F)) <= mu * N + small / r
    if mu > 0 and float(np.linalg.norm(F)) / mu + abs(T) / (mu * r) <= N - 2.0 * float(np.linalg.norm(c)):
        return True
    if float(np.linalg.norm(F)) > mu * N or abs(T) > mu * N * r:
        return False
    raise SimulationError(f"{surface.body.name!r}: {surface.body.shape_name(st.shape)} rests flat on "
                          f"{surface.table.name!r} with a load near what friction holds and a couple about the normal "
                          "(its centre of mass off its axis on a sloping table): whether it slips is not modelled; "
                          "a gentler slope or more friction holds it, a steeper slope or less friction lets it slide",
                          time=st.t, body=surface.body.name)


def _rest_or_slide(surface, st) -> str:
    """Put a rim lying flat whose slip is zero to rest, or sliding from rest the way its load pulls (in place);
    the mode taken. SimulationError for a load that topples it (its pressure's moment |c| > N: not even the whole
    load on one point of the edge holds it flat)."""
    n = surface.plane(st.shape)[1]
    st.slip = np.zeros(3)
    N, c = load(surface, st)[:2]
    if float(np.linalg.norm(c)) > N:
        raise SimulationError(f"{surface.body.name!r}: {surface.body.shape_name(st.shape)} lying flat on "
                              f"{surface.table.name!r} topples over its edge (its centre of mass leans out past the "
                              "rim: a tall body on a slope, or a rim off to one side of the centre of mass), which "
                              "this model does not follow; make the slope gentler, the rim wider or the centre of "
                              "mass lower", time=st.t, body=surface.body.name)
    if _holds(surface, st):
        st.mode = FLAT_REST
        return FLAT_REST
    N, c, F, T = load(surface, st)
    r = float(surface.body.r[st.shape])
    s = -(F - float(F @ n) * n) - (T / r) * n       # the slip goes against the friction the rest would need
    size = float(np.linalg.norm(s))
    st.slip = s / size if size > 0 else _plane_frame(n)[0]
    st.mode = FLAT
    return FLAT


def settle(surface, st, k: int, dt: float) -> np.ndarray:
    """Lay rim k flat on the table (in place; it touches, within FLAT_TILT of flat): turned exactly flat about its
    lowest point and put on the plane, then the impact of its whole edge (the module's docstring), then apart,
    sliding flat or resting flat. Returns the impulse (3,) N·s the table gave. A rim turning about a horizontal axis
    so fast for its fall that no impulse pressing on its edge stops every point of it (the impulse's first moment
    would exceed its total, all of it on one point) rocks: :func:`_rock`."""
    body = surface.body
    q, n = surface.plane(k)
    a = body.rim_axis[k] @ st.Q
    up = n if a @ n >= 0 else -n
    axis = cross(a, up)
    s = float(np.linalg.norm(axis))
    if s > 0:
        P = surface.lowest(k, st.x, st.Q, st.t)[2]
        e = axis / s
        R = _rotation(e, float(np.arctan2(s, float(a @ up))))
        st.x, st.Q = P + R @ (st.x - P), st.Q @ R.T
    C = st.x + body.b[k] @ st.Q
    st.x = st.x - float((C - q) @ n) * n
    st.shape, st.extra = k, ()
    r = float(body.r[k])
    rho = body.b[k] @ st.Q
    W = surface.W(st.Q)
    t1, t2 = _plane_frame(n)

    def normal_speeds(v, L):
        w = W @ L
        return np.array([float((v + cross(w, rho)) @ n), float(w @ t1), float(w @ t2)])

    u = normal_speeds(st.v, st.L)
    leaving = max(abs(float(surface.g @ n)) * dt, SLIP_RTOL * surface.speed_scale(st))
    if u[0] - r * np.hypot(u[1], u[2]) > leaving:      # every point of the ring leaves
        st.mode, st.shape, st.slip = APART, -1, np.zeros(3)
        return np.zeros(3)
    impulses = [(n / body.mass, cross(rho, n)), (np.zeros(3), r * cross(t1, n)), (np.zeros(3), r * cross(t2, n))]
    A = np.stack([normal_speeds(dv, dL) - normal_speeds(np.zeros(3), np.zeros(3)) for dv, dL in impulses], axis=1)
    z = np.linalg.solve(A, -u)
    Jn, cJ = float(z[0]), float(np.hypot(z[1], z[2]))
    scale = SLIP_RTOL * body.mass * surface.speed_scale(st)
    if cJ > max(Jn, 0.0) + scale:
        # (an impulse spread p ≥ 0 round the ring with total Jn and first moment cJ exists while cJ ≤ Jn; the
        # least-norm spread of the module's docstring is one only while cJ ≤ Jn/2, but the velocities after the
        # impact are the same for every spread with that total and moment)
        return _rock(surface, st, k, u, z[1] * t1 + z[2] * t2, t1, t2)
    e = surface.table.restitution
    for factor in ((1.0 + e, 1.0) if e > 0 else (1.0,)):
        v = st.v + factor * z[0] * impulses[0][0]
        L = st.L + factor * sum(zi * dL for zi, (_, dL) in zip(z, impulses))
        u1 = normal_speeds(v, L)
        if factor == 1.0 or u1[0] - r * np.hypot(u1[1], u1[2]) > leaving:
            break
    st.v, st.L = v, L
    J = factor * Jn * n
    if factor > 1.0 or not float(surface.g @ n) < 0:
        # bounced off whole, or gravity does not press it on (under a table, on a wall): it leaves (at rest on it)
        st.mode, st.shape, st.slip = APART, -1, np.zeros(3)
        return J
    # exactly flat: the spin about n alone
    wn = float((W @ st.L) @ n)
    st.L = _inertia(surface, st.Q) @ (wn * n)
    st.v = st.v - float(st.v @ n) * n
    st.mode, st.slip = FLAT, np.zeros(3)
    vC, w, rest = _slip(surface, st, n, rho, wn)
    if rest:
        st.v, st.L = np.zeros(3), np.zeros(3)
        _rest_or_slide(surface, st)
    return J


def _rock(surface, st, k: int, u, c, t1, t2) -> np.ndarray:
    """The impact of rim k laid flat whose whole edge cannot stop it (in place; u = (n·v_C, ω·t₁, ω·t₂) before it,
    c the first moment the whole edge's impulse would need): the point of the ring that approaches fastest (or, not
    turning, the one c leans on) strikes alone — the plastic impact's answer when no impulse spread round the ring
    with p ≥ 0 stops every point (then it stops the one that is least on its way up) — with the table's restitution
    and friction, as a one-point impact. Then the rim leaves (apart), or stays on that point:
    turned 2·FLAT_TILT about the tangent there (its far side up; the velocities scaled to keep the energy) so that
    this point is its lowest, in mode ``sliding`` for the caller to settle as a one-point contact (it rocks back onto
    its edge). Returns the impulse (3,) N·s."""
    body, tb = surface.body, surface.table
    n = surface.plane(k)[1]
    r = float(body.r[k])
    w = float(np.hypot(u[1], u[2]))
    rh = (u[2] * t1 - u[1] * t2) / w if w > 0 else c / float(np.linalg.norm(c))  # n·u = u₀ + r(ω₁ sin φ − ω₂ cos φ)
    P = st.x + body.b[k] @ st.Q + r * rh
    W = surface.W(st.Q)
    b1 = ContactBody.free(body.mass, st.x, st.v, np.linalg.inv(W), W @ st.L, name=body.name)
    mu = tb.mu if tb.friction == "coulomb" else 0.0
    J = compute_impulse(b1, ContactBody.fixed(tb.name), P, n, tb.restitution, mu)
    st.v, st.L = st.v + J / body.mass, st.L + cross(P - st.x, J)
    st.shape, st.slip = k, np.zeros(3)
    if float((st.v + cross(W @ st.L, P - st.x)) @ n) > SLIP_RTOL * surface.speed_scale(st):
        st.mode, st.shape = APART, -1
        return J
    E0, K0 = surface.energy(st), surface.energy(st) + body.mass * float(surface.g @ st.x)
    R = _rotation(cross(n, rh), 2.0 * FLAT_TILT)
    st.x, st.Q = P + R @ (st.x - P), st.Q @ R.T
    lift = surface.energy(st) - E0
    if 0.0 < lift < K0:
        f = np.sqrt(1.0 - lift / K0)
        st.v, st.L = f * st.v, f * st.L
    st.mode = SLIDING
    return J


def _rotation(e, angle: float) -> np.ndarray:
    """The rotation (3,3) by ``angle`` rad about the unit axis e (lab)."""
    c, s = np.cos(angle), np.sin(angle)
    return c * np.eye(3) + s * np.array([[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]]) \
        + (1 - c) * np.outer(e, e)


def transition(surface, st, kind: str, k: int, dt: float) -> tuple:
    """Apply the event ``kind`` to a state lying flat (in place): (the kind to log, the impulse (3,) given)."""
    body = surface.body
    if kind == "stick":
        J = -body.mass * st.v
        st.v, st.L = np.zeros(3), np.zeros(3)
        mode = _rest_or_slide(surface, st)
        return ("stick" if mode == FLAT_REST else "reversal"), J
    if kind == "tip":
        raise SimulationError(f"{body.name!r}: {body.shape_name(st.shape)} sliding flat on {surface.table.name!r} "
                              "presses one side of its edge too hard for this model (the moment about its centre of "
                              "mass of the friction, of gravity on a slope, or of a spin about an axis that is not a "
                              "principal one, needs more than half its weight's moment a·N/2): lifting or tipping onto "
                              "its edge is not modelled; lower μ or the centre of mass, widen the rim, or spin it "
                              "slower", time=st.t, body=body.name)
    raise SimulationError(f"{body.name!r}: {body.shape_name(k)} reaches {surface.table.name!r} while "
                          f"{body.shape_name(st.shape)} lies flat on it: a second contact beside a rim lying flat is "
                          "not modelled yet; keep the other shapes off the table while it lies flat (in a tray: a "
                          "slower slide, or a larger tray)", time=st.t, body=body.name)


def landing(surface, st, start) -> float:
    """The landing event's value for a rim touching at one point on a plane: its tilt, signed by whether its lowest
    point is on the side it was at the step's start, less FLAT_TILT (a step whose lowest point turned past a right
    angle well off flat is no landing but halved: :func:`sweeps`)."""
    k = st.shape
    n = surface.plane(k)[1]
    m = _down(surface, k, st.Q, n)
    m0 = _down(surface, k, start.Q, n)
    s = float(np.linalg.norm(m))
    return (s if float(m @ m0) >= 0 else -s) - FLAT_TILT


def on_a_plane(surface, st) -> bool:
    """Whether st touches at one point with a rim on a plane (where it can fall flat)."""
    return (st.mode in (SLIDING, ROLLING) and not st.extra and bool(surface.body.rim[st.shape])
            and surface.plane(st.shape) is not None)


def sweeps(surface, st, start) -> bool:
    """Whether a step from ``start`` to st took the lowest point of a rim touching at one point on a plane more than
    a right angle round it while well off flat (NEAR_FLAT, at both ends): :func:`landing` cannot tell a pass across
    flat from a lowest point running round the rim (a coin rolling on a tight circle, spinning down) — the step is
    halved until its ends tell (a pass across flat has one of them near flat, a run round the rim no flip)."""
    if not on_a_plane(surface, st):
        return False
    n = surface.plane(st.shape)[1]
    m, m0 = _down(surface, st.shape, st.Q, n), _down(surface, st.shape, start.Q, n)
    return min(float(np.linalg.norm(m)), float(np.linalg.norm(m0))) >= NEAR_FLAT and float(m @ m0) < 0


def near_flat(surface, st) -> bool:
    """Whether st touches at one point with a rim on a plane tilted less than NEAR_FLAT."""
    return on_a_plane(surface, st) and tilt(surface, st.shape, st.Q, surface.plane(st.shape)[1]) < NEAR_FLAT


def _down(surface, k: int, Q, n) -> np.ndarray:
    """Rim k's axis's part in the plane (3,), its length the tilt: near flat it points to or from the lowest point
    (as the axis leans up or down) and passes through zero as the rim passes flat. (Not (n·a)·a_t, the lowest point's
    own direction: that passes through zero where the rim stands upright, n·a = 0, which is no landing.)"""
    a = surface.body.rim_axis[k] @ Q
    at = a - (a @ n) * n
    return at - (at @ n) * n


def torque(surface, st) -> np.ndarray:
    """The table's torque (3,) N·m about the centre of mass on a rim lying flat (sliding or at rest)."""
    k = st.shape
    n = surface.plane(k)[1]
    rho = surface.body.b[k] @ st.Q
    N, c, F, T = load(surface, st) if st.mode == FLAT_REST else forces(surface, st)[:4]
    return cross(rho, N * n + F) + float(surface.body.r[k]) * cross(c, n) + T * n
