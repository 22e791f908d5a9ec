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
the side it started the step on. There the whole edge strikes at once: the normal impulse spread round the ring
(least norm: a total and a first moment) that leaves no point of the ring approaching — the rim's plastic impact;
with the table's restitution e > 0 the coin bounces off whole when every point of the ring leaves, else the impact
stays plastic (a coin does not rock back onto its edge here). The landing's impulses are normal: friction acts on
the slip that remains in the flat slide that follows.

Not modelled (each reported by name): a flat rim whose friction's moment would lift part of it (|c| > N/2, the
coin tipping onto its edge), another shape touching while the rim lies flat, a rim lying flat on a curved table.
"""

from __future__ import annotations

import numpy as np

from ...errors import SimulationError
from .ring import ring_friction_map
from .surface_common import APART, FLAT, FLAT_REST, SLIP_RTOL, cross

#: A rim whose tilt (the sine of the angle between its axis and the table's normal) is at most FLAT_TILT lies flat:
#: when a run starts (placements stored in single precision are off by ~1e-7) and where a falling rim lands (the
#: event is located at this tilt, and the rim laid flat about its lowest point: ~r·FLAT_TILT of motion).
FLAT_TILT = 1e-5
#: Below a tilt of NEAR_FLAT a rim's lowest point runs round it at a rate ~ (its rocking rate)/tilt: a step may be
#: halved NEAR_FLAT_SPLITS more times than elsewhere to follow it down to FLAT_TILT.
NEAR_FLAT = 1e-3
NEAR_FLAT_SPLITS = 12


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


def lies_flat(surface, k: int, Q) -> bool:
    """Whether shape k is a rim on a plane (a plane table or a tray's face) lying flat within FLAT_TILT."""
    plane = surface.plane(k)
    return bool(surface.body.rim[k]) and plane is not None and tilt(surface, k, Q, plane[1]) <= FLAT_TILT


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
    c, s = np.cos(angle), np.sin(angle)
    R = c * np.eye(3) + s * np.array([[0, -n[2], n[1]], [n[2], 0, -n[0]], [-n[1], n[0], 0]]) + (1 - c) * np.outer(n, n)
    return Q @ R.T


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
                          "(its centre of mass off its axis on a sloping table): whether it slips is not modelled",
                          time=st.t, body=surface.body.name)


def _rest_or_slide(surface, st) -> str:
    """Put a rim lying flat whose slip is zero to rest, or sliding from rest the way its load pulls (in place);
    the mode taken."""
    n = surface.plane(st.shape)[1]
    st.slip = np.zeros(3)
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
    sliding flat or resting flat. Returns the impulse (3,) N·s the table gave."""
    body = surface.body
    q, n = surface.plane(k)
    a = body.rim_axis[k] @ st.Q
    up = n if a @ n >= 0 else -n
    axis = cross(a, up)
    s = float(np.linalg.norm(axis))
    if s > 0:
        P = surface.lowest(k, st.x, st.Q, st.t)[2]
        e = axis / s
        ang = float(np.arctan2(s, float(a @ up)))
        c_, s_ = np.cos(ang), np.sin(ang)
        R = c_ * np.eye(3) + s_ * np.array([[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]]) \
            + (1 - c_) * np.outer(e, e)
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
    if cJ > 0.5 * max(Jn, 0.0) + scale:
        raise SimulationError(f"{body.name!r}: {body.shape_name(k)} lands flat on {surface.table.name!r} turning "
                              "about a horizontal axis so fast that it would rock back onto its edge, which this "
                              "model does not follow; lower dt or start it tilted", time=st.t, body=body.name)
    e = surface.table.restitution
    for factor in ((1.0 + e, 1.0) if e > 0 else (1.0,)):
        v = st.v + factor * z[0] * impulses[0][0]
        L = st.L + factor * sum(zi * dL for zi, (_, dL) in zip(z, impulses))
        u1 = normal_speeds(v, L)
        if factor == 1.0 or u1[0] - r * np.hypot(u1[1], u1[2]) > leaving:
            break
    st.v, st.L = v, L
    J = factor * Jn * n
    if factor > 1.0:
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


def transition(surface, st, kind: str, k: int, dt: float) -> tuple:
    """Apply the event ``kind`` to a state lying flat (in place): (the kind to log, the impulse (3,) given)."""
    body = surface.body
    if kind == "stick":
        J = -body.mass * st.v
        st.v, st.L = np.zeros(3), np.zeros(3)
        mode = _rest_or_slide(surface, st)
        return ("stick" if mode == FLAT_REST else "reversal"), J
    if kind == "tip":
        raise SimulationError(f"{body.name!r}: {body.shape_name(st.shape)} lying flat on {surface.table.name!r} "
                              "would tip onto its edge (the friction's moment lifts part of it), which this model does "
                              "not follow", time=st.t, body=body.name)
    raise SimulationError(f"{body.name!r}: {body.shape_name(k)} reaches {surface.table.name!r} while "
                          f"{body.shape_name(st.shape)} lies flat on it: a second contact beside a rim lying flat is "
                          "not modelled yet", time=st.t, body=body.name)


def landing(surface, st, start) -> float:
    """The landing event's value for a rim touching at one point on a plane: its tilt, signed by whether its lowest
    point is on the side it was at the step's start, less FLAT_TILT."""
    k = st.shape
    n = surface.plane(k)[1]
    m = _down(surface, k, st.Q, n)
    m0 = _down(surface, k, start.Q, n)
    s = float(np.linalg.norm(m))
    return (s if float(m @ m0) >= 0 else -s) - FLAT_TILT


def near_flat(surface, st) -> bool:
    """Whether st touches at one point with a rim on a plane tilted less than NEAR_FLAT."""
    if st.mode == APART or st.extra or st.mode in (FLAT, FLAT_REST) or not surface.body.rim[st.shape]:
        return False
    plane = surface.plane(st.shape)
    return plane is not None and tilt(surface, st.shape, st.Q, plane[1]) < NEAR_FLAT


def _down(surface, k: int, Q, n) -> np.ndarray:
    """Rim k's axis's part in the plane (3,), its length the tilt: it passes through zero as the rim passes flat. (Not
    (n·a)·a_t, the lowest point's own direction: that passes through zero where the rim stands upright.)"""
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
