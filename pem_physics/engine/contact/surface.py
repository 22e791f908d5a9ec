"""A rigid body on a table: persistent contact that slides, rolls and lifts off (issue 30; theory §7).

The body is free (position x of its centre of mass, momentum M v, angular momentum L about the centre of mass,
principal frame Q, rows the principal axes in lab coordinates) and carries contact shapes fixed in it: spheres (a
tippe top's ball, a top's rounded tip, a billiard ball: centre b, radius r) and rims (a circle of centre b, unit axis
a and radius r: a coin's or a disc's edge). The table is a plane (point q, unit normal n pointing to the allowed
side) or a curved static wall of :mod:`.walls` — a sphere, cylinder or box, inside (a bowl, a pipe, a tray) or outside
(a dome, a log, a block) — with friction μ and a restitution e for impacts. Gravity g is uniform.

A shape's lowest point P (the one nearest the table): a sphere's is C − r n; a rim's is C − r m/|m| with
m = n − (n·a)a, |m| the sine of its tilt (a rim lying flat, |m| = 0, touches along its whole edge: reported).
Its gap is n·(P − q). On a curved table a sphere's n = −∇f(C), f the wall's signed distance (negative on the
allowed side), and the gap is −f(C) − r; n turns as the centre moves, ṅ = −H Ċ (H the Hessian of f,
Ċ = v + ω × (C − x)): the contact point runs by Ṗ = Ċ + r H Ċ, and keeping n·u = 0 asks n·u̇ = (H Ċ)·u — the
curvature terms (theory §7's vᵀHv) the forces below take. A rim's contact point on a curved table is its deepest
point P = C + r d(φ*) (the maximum of f along the rim, by Newton's method from the tangent plane's answer), its gap
−f(P); it runs round the rim at φ̇ = −((H u)·d' + ∇f·(ω × d'))/(r d'·H d' − ∇f·d) and n·u̇ = (H Ṗ)·u. A block's edges
and corners (where its curvature jumps) are step boundaries: located like events, nothing changes there, so no step
straddles a jump.

States of the contact (one shape touches at a time):

- ``apart``: free flight; the gaps of every shape are watched, a crossing is located to round-off (Brent's method on
  trial steps from the step start, as :mod:`~pem_physics.engine.contacts` does) and resolved by the impulse of
  :func:`~pem_physics.engine.impulses.compute_impulse` (restitution e, friction μ). An impact whose rebound would
  not leave the table for a step (n·u⁺ ≤ |g·n|·dt) starts a persistent contact instead.
- ``sliding``: the contact point slips with velocity u_t; the table pushes with N n and rubs with −μ N û_t (Coulomb)
  or −μ N u_t (``friction="viscous"``, the tippe-top literature's gliding friction). N comes from the constraint
  (the gap stays zero), not from a spring.
- ``rolling`` (Coulomb only): the material point at P does not move (u = 0); the table's force F (3,) is whatever
  keeps it so, as long as |F_t| ≤ μ F_n.

Transitions are events located to round-off inside the step: lift-off where the normal force N (from the
acceleration-level constraint, below) reaches zero; stick where the slip reverses (u_t·u_t(step start) = 0; Coulomb
friction stops a slip in finite time); slip where the friction a rolling contact needs reaches μN.

Forces at the acceleration level (used for the events, the friction a rolling step needs, and the start of a step's
Newton iteration): with W = Qᵀ diag(1/I) Q, ω = W L, ρ = P − x, the contact point's material acceleration without
the table's force, followed along the moving contact point, is a₀ = g − (W(ω × L)) × ρ + ω × (Ṗ − v), where Ṗ − v
is ω × (C − x) for a sphere and adds r·ḋ (d = −m/|m|, ȧ = ω × a) for a rim (and r H Ċ on a curved table); a
force F at P adds K F, K = 𝟙/M − [ρ]× W [ρ]× (the effective inverse mass of the impulse formula, theory §7).
Rolling: K F = −a₀. Sliding: F = N (n + f) with f = μ t̂ (or −μ u_t), n·(a₀ + K F) = (H Ċ)·u (zero on a plane), so
N = ((H Ċ)·u − n·a₀) / n·K(n + f); a non-positive
n·K(n + f) is Painlevé's paradox (no force of the friction law keeps the contact), reported as an error with its time.

The step (length h), for sliding and rolling alike, is a RATTLE-type splitting: a half kick of gravity and an impulse
J₁ at P, the free flight of length h (x += h v, the exact free rotation of
:func:`~pem_physics.engine.integrators.free_turn` — exact for symmetric bodies), a half kick of gravity and an
impulse J₂ at the new P. J₁'s normal part λ₁ n is whatever puts the shape exactly on the table at the end of the
flight (a scalar equation, solved by the secant method to round-off); its tangential part is λ₁ f when sliding, and
(h/2)·F_t from the acceleration-level force when rolling. J₂ makes the contact point's normal velocity zero
(sliding: λ₂(n + f), f from the slip after the flight) or its whole velocity zero (rolling: K J₂ = −u). Gliding
friction depends on the slip's size, not only its direction: there J₁ takes the slip at the step's start and J₂
the slip after J₂ itself (implicit: a 3×3 solve inside the secant on λ₂), a trapezoidal pair — explicit at both
ends the step would be first order. So the gap and the normal velocity (and, rolling, the slip) end every step at
zero to round-off; the method is second order for both laws.

Jellett's integral λ = L·(x − P) (L about the centre of mass, x − P from the contact point to the centre of mass) is
constant for an axisymmetric body whose contact sphere is centred on the axis, whatever the force at P: the force's
torque (P − x) × F is normal to x − P, and x − P = (x − C) + r n changes only as the axis turns, which the free
motion of a symmetric body does about L. Both hold step by step here (every impulse acts at the P of the moment; the
flight is the exact free motion), so this method keeps λ to round-off through sliding and rolling. Energy: a step
changes E by exactly W(J₁) + W(J₂) − (h/2) g·J₁ (W(J) = J·(u⁻ + u⁺)/2, exact for an impulse on a rigid body; the last
term because the flight's potential drop counts J₁'s velocity and the gravity kicks' gain does not). A slide books the
tangential parts as the friction's work; a rolling contact's impulses are all the constraint's (friction does no work
on a point that does not slip). E − E₀ − W_friction is then the integration error: round-off for a uniform ball on a
plane (sliding, rolling, down a slope), second order in h otherwise. The constraint's share (``normal_work``) is not
zero on a step: it takes back what the gravity half kicks put into the contact point's velocity.

Two engines run this method: this module's numpy code, the reference, and :mod:`.surface_kernels`, the same
arithmetic compiled (numba, or ahead of time where a build is shipped) with no Python between steps, events or
halvings — ~25× faster; :func:`run` takes the compiled one where it can. They agree to round-off
(``tests/engine/test_surface_compiled.py``).

Limits: one contact at a time (a second shape reaching the table while one touches is reported, not resolved); the
table does not move; impacts with viscous friction are frictionless.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ...errors import SimulationError, ValidationError
from ..integrators import free_turn, free_turn_plan
from ..system import principal_frame
from . import surface_layout as lay
from .events import brent
from .impulses import ContactBody, check_restitution, compute_impulse
from .walls import Box, Cylinder, Plane, Sphere, Wall

APART, SLIDING, ROLLING = "apart", "sliding", "rolling"
MODES = (APART, SLIDING, ROLLING)
#: A shape whose gap is within TOUCH_RTOL·r of zero touches the table.
TOUCH_RTOL = 1e-9
#: At the start, a shape within START_RTOL·r of the table (either side) is put on it, the body moved along the
#: normal by that much: placements typed or stored in single precision (Blender's) are off by ~1e-7·r.
START_RTOL = 1e-6
#: Slip speeds below SLIP_RTOL·(speed scale) are no slip (their direction is round-off).
SLIP_RTOL = 1e-12
#: A block's region coordinate within REGION_RTOL·r of zero at a step's start is not watched in that step (the
#: step starts where it was just located).
REGION_RTOL = 1e-9
#: Newton iterations at most for a rim's deepest point on a curved table (it converges in a few).
RIM_ITERATIONS = 30
#: A rotation slower than ROT_RTOL·(|ω| + √(|g|/reach)) is at rest for the rolling and spinning resistance.
ROT_RTOL = 1e-12
#: At most this many transitions inside one step (more is chatter the model cannot resolve).
MAX_EVENTS_PER_STEP = 20
#: A step whose energy balance (E change less the friction's work) exceeds SPLIT_RTOL·(energy scale) is taken as
#: two halves instead (recursively, at most MAX_SPLITS deep): the step error of a contact point that runs fast
#: round a rim, or of a body about to fall flat, then stays bounded (see :meth:`Surface.advance`).
SPLIT_RTOL = 1e-7
MAX_SPLITS = 12
#: Steps between calls of a run's progress and stop callbacks.
PROGRESS_EVERY = 256
_EPS = float(np.finfo(float).eps)


def _cross(a, b) -> np.ndarray:
    """a × b of two 3-vectors (np.cross's generality costs ~20× more on one pair)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _vector(v, path: str) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValidationError(path, f"must be three finite numbers, got {v!r}")
    return a


@dataclass(frozen=True)
class ContactSphere:
    """A sphere fixed in the body: ``centre`` (3,) m in the body frame, from the centre of mass; ``radius`` m."""

    centre: tuple
    radius: float


@dataclass(frozen=True)
class ContactRim:
    """A circle fixed in the body (a coin's or a disc's edge): ``centre`` (3,) m in the body frame from the centre of
    mass, ``axis`` (3,) its normal in the body frame (any length), ``radius`` m."""

    centre: tuple
    axis: tuple
    radius: float


class TableBody:
    """A free rigid body for the table: ``mass`` kg, ``inertia`` (3,3) kg m² about the centre of mass in the body
    frame, ``shapes`` its :class:`ContactSphere` and :class:`ContactRim` (body frame, from the centre of mass)."""

    def __init__(self, mass: float, inertia, shapes, name: str = "body"):
        self.name = name
        if not (np.isfinite(mass) and mass > 0):
            raise ValidationError(f"{name}.mass", f"must be a positive number of kg, got {mass!r}")
        inertia = np.asarray(inertia, dtype=float)
        if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)) or not np.allclose(inertia, inertia.T,
                                                                                         rtol=1e-12, atol=0):
            raise ValidationError(f"{name}.inertia", "must be a symmetric 3×3 tensor (kg m²)")
        lam, N = principal_frame(0.5 * (inertia + inertia.T))
        if not lam[0] > 1e-12 * lam[2]:
            raise ValidationError(f"{name}.inertia", f"must be positive definite (a body that turns every way), "
                                  f"got principal moments {lam.tolist()}")
        if not shapes:
            raise ValidationError(f"{name}.contacts", "the body needs a contact sphere or rim to stand on the table")
        self.mass = float(mass)
        self.moments = lam
        self.inv = 1.0 / lam
        self.axes = N.T                              # rows: principal axes in body coordinates
        self.plan = free_turn_plan(self.inv[None])
        b, r, k = [], [], []
        for i, s in enumerate(shapes):
            c = _vector(s.centre, f"{name}.contacts[{i}].centre")
            if not (np.isfinite(s.radius) and s.radius > 0):
                raise ValidationError(f"{name}.contacts[{i}].radius",
                                      f"must be a positive length (m), got {s.radius!r}")
            a = np.zeros(3)
            if isinstance(s, ContactRim):
                a = _vector(s.axis, f"{name}.contacts[{i}].axis")
                if not np.linalg.norm(a) > 0:
                    raise ValidationError(f"{name}.contacts[{i}].axis", "a rim's axis must not be zero")
                a = self.axes @ (a / np.linalg.norm(a))
            b.append(self.axes @ c)
            r.append(float(s.radius))
            k.append(a)
        self.b = np.array(b)                         # (S,3) shape centres in principal coordinates
        self.r = np.array(r)                         # (S,) radii
        self.rim_axis = np.array(k)                  # (S,3) rims' unit axes in principal coordinates (0: a sphere)
        self.rim = np.linalg.norm(self.rim_axis, axis=1) > 0
        #: (S,3) a unit vector in each rim's plane (principal coordinates; zero for spheres): φ = 0 of its points
        self.rim_e1 = np.zeros_like(self.rim_axis)
        for i in np.flatnonzero(self.rim):
            a = self.rim_axis[i]
            e = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
            self.rim_e1[i] = e / np.linalg.norm(e)
        #: m: how far the shapes reach from the centre of mass (the length in the speed and energy scales)
        self.reach = float(np.max(self.r + np.linalg.norm(self.b, axis=1)))

    def shape_name(self, k: int) -> str:
        """Shape k in words: ``contact sphere #k`` or ``contact rim #k`` (as the Blender panel lists them)."""
        return f"contact {'rim' if self.rim[k] else 'sphere'} #{k}"

    def frame(self, orientation) -> np.ndarray:
        """The principal frame Q (rows: principal axes, lab) of a body whose body axes are the rows of
        ``orientation`` (3,3)."""
        return self.axes @ np.asarray(orientation, dtype=float)


class Table:
    """The surface the body stands on: the plane through ``point`` with unit ``normal`` (towards the allowed side),
    or ``wall``, a static :class:`~.walls.Plane`, :class:`~.walls.Sphere`, :class:`~.walls.Cylinder` or
    :class:`~.walls.Box` (inside: a bowl, a pipe, a tray; outside: a dome, a log); friction ``mu`` ≥ 0, restitution
    ``restitution`` ∈ [0, 1] of impacts.

    ``rolling_resistance`` δ_r and ``spin_resistance`` δ_s (m, default 0: none): while the contact rolls, a couple
    −N(δ_r ω̂_t + δ_s sgn(ω_n) n) opposes the rotation about the tangent (ω_t) and the normal (ω_n) — the normal force's
    line of action shifted δ_r ahead of the contact point (a ball's coefficient of rolling resistance is δ_r/r), and a
    contact patch's drilling friction — holding a rotation that stopped as long as it needs at most δN (Coulomb's law
    for couples).

    ``friction="coulomb"`` (default): |F_t| ≤ μN, −μN û_t while sliding (μ dimensionless). ``friction="viscous"``:
    the gliding friction of the tippe-top literature (Rauch-Wojciechowski & Rutstam, SIGMA 10, 017 (2014);
    Bou-Rabee, Marsden & Romero, SIAM J. Appl. Dyn. Syst. 3 (2004)): F_t = −μ N u_t (μ in s/m), which never sticks;
    its impacts are frictionless.
    """

    def __init__(self, point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), mu: float = 0.0, restitution: float = 0.0,
                 name: str | None = None, friction: str = "coulomb", wall: Wall | None = None,
                 rolling_resistance: float = 0.0, spin_resistance: float = 0.0):
        name = name or (wall.name if isinstance(wall, Wall) else "table")
        self.name = name
        if wall is None:
            n = _vector(normal, f"{name}.normal")
            if not np.linalg.norm(n) > 0:
                raise ValidationError(f"{name}.normal", "must not be zero")
            wall = Plane(_vector(point, f"{name}.point"), n, name)
        if type(wall) not in (Plane, Sphere, Cylinder, Box):
            raise ValidationError(f"{name}.kind", f"a table is a plane, sphere, cylinder or box wall, not "
                                  f"{type(wall).__name__}")
        #: the wall (walls.Wall: f < 0 on the allowed side, a signed distance) and whether it is a plane
        self.wall = wall
        self.flat = isinstance(wall, Plane)
        #: a plane's point and unit normal (towards the allowed side); None for curved walls
        self.point = wall.point if self.flat else None
        self.normal = wall.n if self.flat else None
        if not (np.isfinite(mu) and mu >= 0):
            raise ValidationError(f"{name}.mu", f"friction must be a number ≥ 0, got {mu!r}")
        self.mu = float(mu)
        if friction not in ("coulomb", "viscous"):
            raise ValidationError(f"{name}.friction", f"must be 'coulomb' or 'viscous', got {friction!r}")
        self.friction = friction
        self.restitution = check_restitution(restitution, f"{name}.restitution")
        for key, val in (("rolling_resistance", rolling_resistance), ("spin_resistance", spin_resistance)):
            if not (np.isfinite(val) and val >= 0):
                raise ValidationError(f"{name}.{key}", f"must be a length ≥ 0 (m), got {val!r}")
        #: m: the rolling and spinning resistance's lever arms δ_r, δ_s (0: none)
        self.rolling_resistance = float(rolling_resistance)
        self.spin_resistance = float(spin_resistance)
        self.resists = self.rolling_resistance > 0 or self.spin_resistance > 0


@dataclass
class State:
    """t s; x (3,) m centre of mass; v (3,) m/s; L (3,) kg m²/s about the centre of mass; Q (3,3) principal frame
    (rows, lab); ``mode`` one of :data:`MODES`; ``shape`` the touching shape (−1 when apart); ``slip`` (3,) the
    friction's direction when a slide starts from rest (zero otherwise)."""

    t: float
    x: np.ndarray
    v: np.ndarray
    L: np.ndarray
    Q: np.ndarray
    mode: str = APART
    shape: int = -1
    slip: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def copy(self) -> State:
        return State(self.t, self.x.copy(), self.v.copy(), self.L.copy(), self.Q.copy(), self.mode, self.shape,
                     self.slip.copy())


class Touch(NamedTuple):
    """A shape at the table (:meth:`Surface.contact`): its centre C (3,) m; the contact point's lever arm ρ = P − x;
    the lab inverse inertia W (3,3); ω (3,) rad/s; the contact point's material velocity u (3,) m/s; Ṗ − v (3,) m/s,
    the rate at which the contact point moves relative to the centre of mass (the sphere's centre's motion, plus the
    lowest point running round a rim or over a curved table); the table's unit normal n (3,) there; and curv
    (m/s²), what keeping n·u = 0 asks of n·u̇ on a curved table ((H Ċ)·u; zero on a plane)."""

    C: np.ndarray
    rho: np.ndarray
    W: np.ndarray
    w: np.ndarray
    u: np.ndarray
    moving: np.ndarray
    n: np.ndarray
    curv: float


class Surface:
    """A body, a table and gravity g (3,) m/s²: the state functions and the step of this module."""

    def __init__(self, body: TableBody, table: Table, gravity=(0.0, 0.0, -9.81)):
        self.body = body
        self.table = table
        self.g = _vector(gravity, "gravity")

    # --- geometry and kinematics -------------------------------------------------------------------
    def W(self, Q) -> np.ndarray:
        """Lab inverse inertia (3,3) about the centre of mass."""
        return (Q.T * self.body.inv) @ Q

    def lowest(self, k: int, x, Q, t: float | None = None):
        """(C, m, P) of shape k: its centre, the unnormalised direction −m of its lowest point from the centre
        (sphere: m = n; rim of lab axis a: m = n − (n·a)a, |m| the sine of its tilt) and that point P (lab, m)."""
        body = self.body
        C = x + body.b[k] @ Q
        if not body.rim[k]:
            n = self.normal_at(C, t)
            return C, n, C - body.r[k] * n
        if not self.table.flat:
            C, d, dp, P, gf, H = self._rim_point(k, x, Q, t)
            return C, -gf / np.linalg.norm(gf), P
        n = self.table.normal
        a = body.rim_axis[k] @ Q
        m = n - (n @ a) * a
        s = float(np.linalg.norm(m))
        if not s > 1e-9:
            raise SimulationError(f"{body.name!r}: contact rim #{k} lies flat on {self.table.name!r} (its whole edge "
                                  "touches); this model needs it tilted", time=t, body=body.name)
        return C, m, C - (body.r[k] / s) * m

    def _rim_point(self, k: int, x, Q, t: float | None = None):
        """Rim k's deepest point on a curved table: (C, d, d', P, ∇f(P), H(P)) with P = C + r d(φ*),
        d(φ) = cos φ e₁ + sin φ e₂ (e₁, e₂ = a × e₁ in the rim's plane), φ* the maximum of f(P(φ)) — Newton's method
        on ∇f·d' = 0 from the plane's answer at the tangent plane below C."""
        body = self.body
        r = float(body.r[k])
        C = x + body.b[k] @ Q
        a = body.rim_axis[k] @ Q
        e1 = body.rim_e1[k] @ Q
        e2 = _cross(a, e1)
        nC = self.normal_at(C, t)
        m = nC - (nC @ a) * a
        sm = float(np.linalg.norm(m))
        if not sm > 1e-9:
            raise SimulationError(f"{body.name!r}: contact rim #{k} lies flat on {self.table.name!r} (its whole edge "
                                  "touches); this model needs it tilted", time=t, body=body.name)
        phi = float(np.arctan2(-(m @ e2), -(m @ e1)))
        wall = self.table.wall
        for _ in range(RIM_ITERATIONS):
            d = np.cos(phi) * e1 + np.sin(phi) * e2
            dp = np.cos(phi) * e2 - np.sin(phi) * e1
            P = C + r * d
            gf, H = wall.gradient(P), wall.hessian(P)
            curvature = r * float(dp @ H @ dp) - float(gf @ d)
            if not curvature < 0:
                break
            step = -float(gf @ dp) / curvature
            phi += step
            if abs(step) <= 4 * _EPS:
                break
        d = np.cos(phi) * e1 + np.sin(phi) * e2
        dp = np.cos(phi) * e2 - np.sin(phi) * e1
        P = C + r * d
        return C, d, dp, P, wall.gradient(P), wall.hessian(P)

    def normal_at(self, C, t: float | None = None) -> np.ndarray:
        """The table's unit normal (3,) towards the allowed side at its point nearest C (lab, m)."""
        if self.table.flat:
            return self.table.normal
        n = self.table.wall.gradient(C)
        s = float(np.linalg.norm(n))
        if not s > 0:
            raise SimulationError(f"{self.body.name!r}: a contact sphere's centre is where {self.table.name!r} has "
                                  "no normal (its centre or axis)", time=t, body=self.body.name)
        return -n / s

    def gap(self, k: int, x, Q, t: float | None = None) -> float:
        """Shape k's gap (m, positive apart): n·(P − q) on a plane; a sphere's −f(C) − r on a curved wall (f its
        signed distance); a rim's −f(P) at its deepest point P (:meth:`_rim_point`)."""
        if self.table.flat:
            return float((self.lowest(k, x, Q, t)[2] - self.table.point) @ self.table.normal)
        if self.body.rim[k]:
            return -self.table.wall.value(self._rim_point(k, x, Q, t)[3])
        return -self.table.wall.value(x + self.body.b[k] @ Q) - float(self.body.r[k])

    def gaps(self, x, Q) -> np.ndarray:
        """Shape gaps (S,) m (positive apart)."""
        return np.array([self.gap(k, x, Q) for k in range(len(self.body.r))])

    def contact(self, st: State, k: int | None = None) -> Touch:
        """The :class:`Touch` of shape k (default: the touching one)."""
        k = st.shape if k is None else k
        if self.body.rim[k] and not self.table.flat:
            return self._rim_touch(st, k)
        C, m, P = self.lowest(k, st.x, st.Q, st.t)
        rho = P - st.x
        W = self.W(st.Q)
        w = W @ st.L
        u = st.v + _cross(w, rho)
        moving = _cross(w, C - st.x)
        n, curv = (m, 0.0) if not self.body.rim[k] else (self.table.normal, 0.0)
        if not self.table.flat:
            # n = −∇f(C) turns as the centre moves: ṅ = −H Ċ (H the wall's Hessian, Ċ = v + ω × (C − x)), so the
            # contact point P = C − r n moves by Ṗ = Ċ + r H Ċ, and keeping n·u = 0 needs n·u̇ = (H Ċ)·u
            HdC = self.table.wall.hessian(C) @ (st.v + moving)
            moving = moving + self.body.r[k] * HdC
            curv = float(HdC @ u)
        if self.body.rim[k]:
            # d = −m/|m| with m = n − (n·a)a and ȧ = ω × a: ḋ = −(ṁ − (ṁ·m̂)m̂)/|m|
            n = self.table.normal
            a = self.body.rim_axis[k] @ st.Q
            da = _cross(w, a)
            dm = -(n @ da) * a - (n @ a) * da
            s = float(np.linalg.norm(m))
            mh = m / s
            moving = moving - (self.body.r[k] / s) * (dm - (dm @ mh) * mh)
        return Touch(C, rho, W, w, u, moving, n, curv)

    def _rim_touch(self, st: State, k: int) -> Touch:
        """:meth:`contact` of a rim on a curved table. Its deepest point runs round it at φ̇ (from d/dt(∇f·d') = 0 at
        the moving P): φ̇ = −((H u)·d' + ∇f·(ω × d')) / (r d'·H d' − ∇f·d), so Ṗ − v = ω × ρ + r φ̇ d'; the normal
        −∇f(P) turns at −H Ṗ, so keeping n·u = 0 asks n·u̇ = (H Ṗ)·u."""
        C, d, dp, P, gf, H = self._rim_point(k, st.x, st.Q, st.t)
        r = float(self.body.r[k])
        rho = P - st.x
        W = self.W(st.Q)
        w = W @ st.L
        u = st.v + _cross(w, rho)
        phidot = -(float((H @ u) @ dp) + float(gf @ _cross(w, dp))) / (r * float(dp @ H @ dp) - float(gf @ d))
        moving = _cross(w, rho) + (r * phidot) * dp
        curv = float((H @ (st.v + moving)) @ u)
        return Touch(C, rho, W, w, u, moving, -gf / np.linalg.norm(gf), curv)

    def K(self, W, rho) -> np.ndarray:
        """Effective inverse mass (3,3) at the lever arm ρ."""
        S = np.array([[0.0, -rho[2], rho[1]], [rho[2], 0.0, -rho[0]], [-rho[1], rho[0], 0.0]])
        return np.eye(3) / self.body.mass - S @ W @ S

    def speed_scale(self, st: State) -> float:
        w = self.W(st.Q) @ st.L
        r = self.body.reach
        return float(np.linalg.norm(st.v) + np.linalg.norm(w) * r + np.sqrt(np.linalg.norm(self.g) * r))

    def energy(self, st: State) -> float:
        """Kinetic + gravitational energy (J), gravity's zero at x = 0."""
        w = self.W(st.Q) @ st.L
        return float(0.5 * self.body.mass * st.v @ st.v + 0.5 * st.L @ w - self.body.mass * self.g @ st.x)

    def jellett(self, st: State, k: int = 0) -> float:
        """Jellett's integral L·(x − P) (kg m³/s) for shape k (P its lowest point)."""
        return float(st.L @ (st.x - self.lowest(k, st.x, st.Q)[2]))

    # --- forces at the acceleration level ----------------------------------------------------------
    @staticmethod
    def _tangent(u, n) -> np.ndarray:
        return u - (u @ n) * n

    def friction_direction(self, st: State, u, n) -> np.ndarray:
        """t̂: the unit direction of the friction force of a slide (−û_t, or ``st.slip`` when the slip is round-off)."""
        ut = self._tangent(u, n)
        s = np.linalg.norm(ut)
        if s > SLIP_RTOL * self.speed_scale(st):
            return -ut / s
        return st.slip

    def friction_vector(self, st: State, u, n) -> np.ndarray:
        """f (3,): a slide's friction force is N·f (Coulomb: μ t̂; viscous: −μ u_t); n the normal there."""
        if self.table.friction == "viscous":
            return -self.table.mu * self._tangent(u, n)
        return self.table.mu * self.friction_direction(st, u, n)

    def force(self, st: State, mode: str | None = None):
        """The table's force F (3,) N at the contact point, by the acceleration-level constraint of ``mode``
        (default: the state's). Raises SimulationError for Painlevé's paradox."""
        mode = st.mode if mode is None else mode
        c = self.contact(st)
        a0 = self.g - _cross(c.W @ _cross(c.w, st.L), c.rho) + _cross(c.w, c.moving)
        K = self.K(c.W, c.rho)
        if mode == ROLLING:
            return self._rolling_solve(c, a0, -(c.W @ _cross(c.w, st.L)), c.w, reversal=False)[0]
        D = c.n + self.friction_vector(st, c.u, c.n)
        return ((c.curv - float(c.n @ a0)) / self._normal_mass(K, D, st.t, c.n)) * D

    def _rotations(self, c: Touch, w):
        """The resisted rotations of ω (3,) at the contact c: (ω_t, ω_n, whether each moves): a rotation below
        ROT_RTOL of the speed scale over the reach is at rest."""
        wn = float(w @ c.n)
        wt = w - wn * c.n
        tiny = ROT_RTOL * (float(np.linalg.norm(w)) + float(np.linalg.norm(self.g) / self.body.reach) ** 0.5)
        return wt, wn, float(np.linalg.norm(wt)) > tiny, abs(wn) > tiny

    def _rolling_solve(self, c: Touch, u, wr, w, reversal: bool):
        """(J, H) of a rolling contact with the resistance's couples: u + K J − [ρ]× W H = 0 (the contact point
        stays still) and, for each held rotation axis e, e·(wr + W([ρ]× J + H)) = 0, with H = (n·J) r̂ for the
        rotations that move (r̂ = −(δ_r ω̂_t + δ_s sgn(ω_n) n) from the angular velocity w) plus the held ones' couple.

        Kick (velocity level): u and wr the contact point's velocity and ω before it, J and H impulses (N·s, N·m·s);
        ``reversal``: a rotation the couple would turn round is held. Acceleration level: u = a₀, wr the angular
        acceleration without the table, J = F, H = C (N, N·m). A rotation at rest is held; a held one that needs
        more than δ (n·J) turns with δ (n·J) against the holding couple — Coulomb's law for couples, in time steps
        (the instant a rotation stops is a kick: not located inside the step)."""
        n, rho, W = c.n, c.rho, c.W
        K = self.K(W, rho)
        tb = self.table
        if not tb.resists:
            return -np.linalg.solve(K, u), np.zeros(3)
        t1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
        t1 /= np.linalg.norm(t1)
        wt, wn, rolls, spins = self._rotations(c, w)
        groups = []                 # (axes, δ, the rotation before)
        held, free = [], []
        if tb.rolling_resistance:
            groups.append(((t1, np.cross(n, t1)), tb.rolling_resistance, wt))
            held.append(not rolls)
            free.append(-tb.rolling_resistance * wt / np.linalg.norm(wt) if rolls else np.zeros(3))
        if tb.spin_resistance:
            groups.append(((n,), tb.spin_resistance, wn * n))
            held.append(not spins)
            free.append(-tb.spin_resistance * np.sign(wn) * n if spins else np.zeros(3))
        S = np.array([[0.0, -rho[2], rho[1]], [rho[2], 0.0, -rho[0]], [-rho[1], rho[0], 0.0]])
        for _ in range(2 * len(groups) + 2):
            r_free = sum((f for f, hd in zip(free, held) if not hd), np.zeros(3))
            axes = [e for g, hd in zip(groups, held) if hd for e in g[0]]
            m = len(axes)
            A = np.zeros((3 + m, 3 + m))
            b = np.zeros(3 + m)
            A[:3, :3] = K - np.outer(S @ (W @ r_free), n)
            b[:3] = -u
            for j, e in enumerate(axes):
                A[:3, 3 + j] = -S @ (W @ e)
                A[3 + j, :3] = e @ W @ S + (e @ W @ r_free) * n
                A[3 + j, 3:] = [e @ W @ f for f in axes]
                b[3 + j] = -float(e @ wr)
            z = np.linalg.solve(A, b)
            J = z[:3]
            jn = float(J @ n)
            H = jn * r_free + sum((z[3 + j] * e for j, e in enumerate(axes)), np.zeros(3))
            w2 = wr + W @ (S @ J + H)
            changed = False
            j0 = 0
            for i, ((ax, delta, before), hd) in enumerate(zip(groups, held)):
                if hd:
                    h_g = sum((z[3 + j0 + j] * e for j, e in enumerate(ax)), np.zeros(3))
                    j0 += len(ax)
                    if np.linalg.norm(h_g) > delta * max(jn, 0.0):     # cannot hold it: turns against the most
                        held[i], free[i], changed = False, delta * h_g / np.linalg.norm(h_g), True
                elif reversal:
                    after = w2 - float(w2 @ n) * n if len(ax) == 2 else float(w2 @ n) * n
                    if float(after @ before) < 0:                    # the couple would turn it round: hold it
                        held[i], changed = True, True
            if not changed:
                break
        return J, H

    def rolling_force(self, st: State, c: Touch | None = None):
        """(F, C): the table's force (3,) N at the contact point and the resistance's couple (3,) N·m that keep a
        rolling contact rolling (:meth:`_rolling_solve` at the acceleration level)."""
        c = self.contact(st) if c is None else c
        a0 = self.g - _cross(c.W @ _cross(c.w, st.L), c.rho) + _cross(c.w, c.moving)
        return self._rolling_solve(c, a0, -(c.W @ _cross(c.w, st.L)), c.w, reversal=False)

    def _normal_mass(self, K, D, t: float, n) -> float:
        """n·K·D (kg⁻¹): how a force N·D at the contact point moves it along the normal; SimulationError when not
        positive (Painlevé's paradox: no force of the friction law keeps the contact)."""
        den = float(n @ K @ D)
        if not den > 0:
            raise SimulationError(f"{self.body.name!r} on {self.table.name!r}: friction μ = {self.table.mu:g} leaves "
                                  "no normal force that keeps the contact (Painlevé's paradox)", time=t,
                                  body=self.body.name)
        return den

    # --- the step ----------------------------------------------------------------------------------
    def _impulse(self, v, L, rho, W, J, n, H=None):
        """(v, L, work_n, work_t, work_c) after the impulse J at the lever arm ρ and the couple impulse H (default
        none); the works J·(u⁻+u⁺)/2 split along the normal n and across it, and H·(ω⁻+ω⁺)/2 (together exactly the
        change of the kinetic energy)."""
        w0 = W @ L
        u0 = v + _cross(w0, rho)
        v = v + J / self.body.mass
        L = L + _cross(rho, J)
        if H is not None:
            L = L + H
        w1 = W @ L
        u1 = v + _cross(w1, rho)
        um = 0.5 * (u0 + u1)
        jn = float(J @ n)
        wn = jn * float(um @ n)
        wc = 0.0 if H is None else float(H @ (0.5 * (w0 + w1)))
        return v, L, wn, float(J @ um) - wn, wc

    def step(self, st: State, h: float):
        """One step of length h (s) from st (not changed): (new state, normal work J, friction work J)."""
        if st.mode == APART:
            v = st.v + 0.5 * h * self.g
            x = st.x + h * v
            Q = free_turn(st.Q[None, None], st.L[None, None], h, self.body.plan)[0, 0]
            v = v + 0.5 * h * self.g
            return State(st.t + h, x, v, st.L.copy(), Q, APART, -1, st.slip.copy()), 0.0, 0.0
        k = st.shape
        M = self.body.mass
        c = self.contact(st)
        n, rho, W = c.n, c.rho, c.W
        v0 = st.v + 0.5 * h * self.g
        u = v0 + _cross(c.w, rho)
        H1 = np.zeros(3)          # the resistance's couple impulse (rolling)
        if st.mode == ROLLING:
            F, C = self.rolling_force(st, c)
            D, Jt, H1 = n, 0.5 * h * (F - (F @ n) * n), 0.5 * h * C
        else:
            F = self.force(st)
            # the gliding law's first kick takes the slip before gravity's half kick: the adjoint of the second
            # kick (gravity's, then the implicit slip), so the step stays second order on a slope
            f1 = self.friction_vector(st, c.u if self.table.friction == "viscous" else u, n)
            D, Jt = n + f1, np.zeros(3)

        def land(lam):
            J = lam * D + Jt
            v1 = v0 + J / M
            L1 = st.L + _cross(rho, J) + H1
            x1 = st.x + h * v1
            Q1 = free_turn(st.Q[None, None], L1[None, None], h, self.body.plan)[0, 0]
            return self.gap(k, x1, Q1, st.t + h), x1, Q1, L1

        # λ₁: secant iterations from the acceleration-level normal impulse (the gap is nearly linear in λ)
        la = 0.5 * h * float(F @ n)
        ga = land(la)[0]
        lb = la + 1e-6 * max(abs(la), 0.5 * h * M * float(np.linalg.norm(self.g)), 1e-300)
        gb = land(lb)[0]
        for _ in range(60):
            if gb == ga:
                break
            lc = lb - gb * (lb - la) / (gb - ga)
            la, ga = lb, gb
            lb, gb = lc, land(lc)[0]
            if gb == 0.0 or abs(lb - la) <= 4 * _EPS * abs(lb):
                break
        lam = lb
        J1 = lam * D + Jt
        _, x1, Q1, L1 = land(lam)
        v1, _, wn1, wt1, wc1 = self._impulse(v0, st.L, rho, W, J1, n, H1)
        # kick 2 at the new contact point (on a curved table, with its normal there)
        v2 = v1 + 0.5 * h * self.g
        mid = State(st.t + h, x1, v2, L1, Q1, st.mode, k, st.slip.copy())
        c2 = self.contact(mid)
        n2, rho2, W2, u2 = c2.n, c2.rho, c2.W, c2.u
        K2 = self.K(W2, rho2)
        H2 = None
        if st.mode == ROLLING:
            w2 = W2 @ L1
            J2, H2 = self._rolling_solve(c2, v2 + _cross(w2, rho2), w2, w2, reversal=True)
        else:
            f2 = self.friction_vector(mid, u2, n2)
            # a Coulomb slip that reverses within the step keeps the first kick's direction: the step then ends past
            # the stick, where the stick event finds it (turning the friction round would hold the slip still)
            D2 = n2 + (f2 if self.table.friction == "viscous" or f2 @ f1 >= 0 else f1)
            J2 = (-float(n2 @ u2) / self._normal_mass(K2, D2, mid.t, n2)) * D2
            if self.table.friction == "viscous":
                J2 = self._gliding_kick(K2, n2, u2, float(J2 @ n2))
        v3, L3, wn2, wt2, wc2 = self._impulse(v2, L1, rho2, W2, J2, n2, H2)
        mid.v, mid.L = v3, L3
        # The step changes the energy by exactly W(J₁) + W(J₂) − (h/2) g·J₁: the flight's drop in potential energy
        # counts J₁'s velocity, the gravity kicks' gain does not. Without that term a slide across a slope booked
        # friction work biased by (h/2)·F_t·g_t a step, a first-order error in the energy balance.
        wn1 -= 0.5 * h * float(self.g @ n) * float(J1 @ n)
        wt1 -= 0.5 * h * float(self.g @ (J1 - float(J1 @ n) * n))
        if st.mode == ROLLING:
            # a rolling contact's tangential impulses are the constraint's, as its normal ones: they take back what
            # the gravity half kicks put into the contact point's velocity (booked as friction work they added a
            # spurious h·|g_t|-sized loss per unit time on a slope); friction does no work on a contact that rolls,
            # the rolling and spinning resistance's couples do
            return mid, wn1 + wn2 + wt1 + wt2, wc1 + wc2
        return mid, wn1 + wn2, wt1 + wt2

    def _gliding_kick(self, K, n, u, lam: float) -> np.ndarray:
        """The second kick J = λ(n − μ u⁺) of a gliding slide, implicit in the slip: u⁺ = u + K J, the contact
        point's velocity after it, with n·u⁺ = 0. The first kick takes the slip before it (explicit), so the pair is
        a trapezoidal rule in the slip and the step second order (explicit at both ends it is first order). For a
        given λ, (𝟙 + μλK) u⁺ = u + λ K n; λ by the secant method from the explicit kick's ``lam``."""
        mu = self.table.mu

        def after(lm):
            up = np.linalg.solve(np.eye(3) + (mu * lm) * K, u + lm * (K @ n))
            return float(n @ up), up

        la, (ga, _) = lam, after(lam)
        lb = lam * (1.0 + 1e-6) + 1e-300
        gb, up = after(lb)
        for _ in range(30):
            if gb == ga:
                break
            lc = lb - gb * (lb - la) / (gb - ga)
            la, ga = lb, gb
            lb = lc
            gb, up = after(lb)
            if gb == 0.0 or abs(lb - la) <= 4 * _EPS * abs(lb):
                break
        return lb * (n - mu * up)

    def energy_scale(self, st: State) -> float:
        """J: the kinetic energy plus M|g| times the reach of the shapes (what a step's energy error is measured
        against)."""
        w = self.W(st.Q) @ st.L
        return float(0.5 * self.body.mass * st.v @ st.v + 0.5 * st.L @ w
                     + self.body.mass * np.linalg.norm(self.g) * self.body.reach)

    def advance(self, st: State, h: float, depth: int = 0, scale: float | None = None):
        """:meth:`step` of length h, taken as two halves (recursively) while its energy balance — zero for the
        exact motion — exceeds SPLIT_RTOL·(energy scale): (new state, normal work, friction work). The halves
        end where the whole step ends, so records stay on the grid; deterministic. SimulationError when
        MAX_SPLITS halvings do not bring it down (the motion changes faster than any step can follow)."""
        scale = self.energy_scale(st) if scale is None else scale
        s, wn, wf = self.step(st, h)
        err = abs(self.energy(s) - self.energy(st) - wf)
        if err <= SPLIT_RTOL * scale:
            return s, wn, wf
        if depth >= MAX_SPLITS:
            raise SimulationError(f"{self.body.name!r} on {self.table.name!r}: the contact changes faster than a "
                                  f"step of {h:.3g} s can follow at t = {st.t:.9g} s (energy off by {err:.3g} J); "
                                  "lower dt", time=st.t, body=self.body.name)
        a, wn1, wf1 = self.advance(st, 0.5 * h, depth + 1, scale)
        b, wn2, wf2 = self.advance(a, st.t + h - a.t, depth + 1, scale)
        return b, wn1 + wn2, wf1 + wf2

    # --- events ------------------------------------------------------------------------------------
    def watch(self, st: State, start: State) -> list:
        """Event functions at st for a step from ``start``: [(kind, value, shape)], each positive before its event."""
        out = []
        g = self.gaps(st.x, st.Q)
        for k in range(len(g)):
            if k != st.shape:
                out.append(("impact", float(g[k]), k))
        if st.mode == APART:
            return out
        c = self.contact(st)
        F = self.force(st)
        N = float(F @ c.n)
        out.append(("lift-off", N, st.shape))
        if st.mode == ROLLING:
            out.append(("slip", self.table.mu * N - float(np.linalg.norm(F - N * c.n)), st.shape))
        elif self.table.friction == "coulomb":
            c0 = self.contact(start)
            u0 = self._tangent(c0.u, c0.n)
            ref = u0 if np.linalg.norm(u0) > SLIP_RTOL * self.speed_scale(start) else -start.slip
            out.append(("stick", float(self._tangent(c.u, c.n) @ ref), st.shape))
        q, q0 = self.regions(c.C), self.regions(self.contact(start).C)
        for i in range(len(q)):
            # the touching sphere's centre passing between a block's face, edge and corner regions, where the
            # table's curvature jumps: a step boundary, so no step straddles the jump (nothing changes there);
            # not watched in the step that starts on it (just located)
            if abs(q0[i]) > REGION_RTOL * self.body.r[st.shape]:
                out.append((f"region {i}", float(q[i] * np.sign(q0[i])), st.shape))
        return out

    def regions(self, C) -> np.ndarray:
        """A block's (an outside box table's) region coordinates |y| − h at C (3,) m, y the box coordinates of C
        (their signs tell face, edge or corner); empty for other tables."""
        wall = self.table.wall
        if not isinstance(wall, Box) or wall.inside:
            return np.zeros(0)
        return np.abs(wall.R @ (C - wall.centre)) - wall.h


class Event(NamedTuple):
    """A contact change: t s; kind (``impact``, ``impact, sliding``/``impact, rolling`` when the contact then
    persists, ``stick``, ``slip``, ``reversal``, ``lift-off``); shape index; impulse (3,) N·s the table gave
    (impacts; a stick's what stopped the last of the slip; zero otherwise); point (3,) m the contact point; x (3,) m
    and Q (3,3) the body's pose then."""

    t: float
    kind: str
    shape: int
    impulse: np.ndarray
    point: np.ndarray
    x: np.ndarray
    Q: np.ndarray


@dataclass
class Run:
    """Records on the grid: t (T,), x, v, L (T,3), Q (T,3,3), mode (T,) str, shape (T,) the touching shape (−1
    apart), energy (T,) J, friction_work,
    impact_work and normal_work (T,) J (cumulative, from the start); events (:class:`Event`); ``complete`` False
    when stopped early; ``engine`` what ran it (``numpy``, or ``numba`` with ``kernels`` ``ahead-of-time`` or
    ``jit``); ``load_s`` s the compiled kernel took to compile or load before the first step."""

    t: np.ndarray
    x: np.ndarray
    v: np.ndarray
    L: np.ndarray
    Q: np.ndarray
    mode: np.ndarray
    shape: np.ndarray
    energy: np.ndarray
    friction_work: np.ndarray
    impact_work: np.ndarray
    normal_work: np.ndarray
    events: list
    final: State
    complete: bool = True
    engine: str = "numpy"
    kernels: str | None = None
    load_s: float = 0.0

    def energy_balance(self) -> np.ndarray:
        """E − E₀ − W_friction − W_impacts (J) at each record: the integration error."""
        return self.energy - self.energy[0] - self.friction_work - self.impact_work


def start_state(surface: Surface, x, v, omega, orientation=None, t: float = 0.0, tolerance: float = 0.0) -> State:
    """The state of a body at x (m) with velocity v (m/s), angular velocity ω (rad/s, lab) and body axes the rows of
    ``orientation`` (default: the lab axes); its contact decided from the gaps (see :func:`settle`). A shape within
    START_RTOL·r of the table, or ``tolerance`` (m: the precision the positions were stored with), starts on it."""
    body = surface.body
    x, v, omega = _vector(x, "x"), _vector(v, "v"), _vector(omega, "omega")
    Q = body.frame(np.eye(3) if orientation is None else orientation)
    if not np.allclose(Q @ Q.T, np.eye(3), atol=1e-12):
        raise ValidationError(f"{body.name}.orientation", "must be a rotation matrix (rows: the body axes)")
    L = Q.T @ (body.moments * (Q @ omega))
    st = State(float(t), x, v, L, Q)
    g = surface.gaps(x, Q)
    worst = int(np.argmin(g / body.r))
    snap = max(START_RTOL * body.r[worst], tolerance)
    if g[worst] < -snap:
        raise ValidationError(f"{body.name}.contacts[{worst}]",
                              f"starts {-g[worst]:.6g} m inside {surface.table.name!r}: raise the body by that much")
    if abs(g[worst]) <= snap:
        # along the normal at the shape: a plane's, or a curved table's (its gap is a distance along it)
        st.x = x - g[worst] * surface.lowest(worst, x, Q, t)[1] if not surface.table.flat else \
            x - g[worst] * surface.table.normal
        g = surface.gaps(st.x, Q)
    touching = [k for k in range(len(g)) if g[k] <= TOUCH_RTOL * body.r[k]]
    if len(touching) > 1:
        raise ValidationError(f"{body.name}.contacts", f"shapes {touching} touch {surface.table.name!r} at once: "
                              "this model holds one contact at a time")
    if touching:
        st.shape = touching[0]
        settle(surface, st, dt=0.0)
    return st


def _push(surface: Surface, st: State, J) -> None:
    """Apply the impulse J (3,) at the touching shape's contact point (in place)."""
    rho = surface.contact(st).rho
    st.v = st.v + J / surface.body.mass
    st.L = st.L + _cross(rho, J)


def settle(surface: Surface, st: State, dt: float) -> np.ndarray:
    """Decide the contact of a state whose shape ``st.shape`` touches (in place): an impact if it approaches, then
    apart (it leaves within a step, or the table would have to pull), rolling (no slip and the friction suffices)
    or sliding. A contact that stays has what is left of its normal velocity taken (a plastic impulse). Returns
    the impulse (3,) N·s the table gave."""
    tb, body = surface.table, surface.body
    _, rho, W, w, u, _, n, _ = surface.contact(st)
    J = np.zeros(3)
    if u @ n < 0:
        b1 = ContactBody.free(body.mass, st.x, st.v, np.linalg.inv(W), w, name=body.name)
        mu = tb.mu if tb.friction == "coulomb" else 0.0
        J = compute_impulse(b1, ContactBody.fixed(tb.name), st.x + rho, n, tb.restitution, mu)
        _push(surface, st, J)
        _, rho, W, w, u, _, n, _ = surface.contact(st)
    if u @ n > max(abs(surface.g @ n) * dt, SLIP_RTOL * surface.speed_scale(st)):
        st.mode, st.shape = APART, -1
        return J
    if u @ n > 0:
        Jn = (-float(u @ n) / float(n @ surface.K(W, rho) @ n)) * n
        _push(surface, st, Jn)
        J = J + Jn
        u = surface.contact(st).u
    st.slip = np.zeros(3)
    if tb.friction == "coulomb" and np.linalg.norm(surface._tangent(u, n)) <= SLIP_RTOL * surface.speed_scale(st):
        F = surface.force(st, ROLLING)
        N = float(F @ n)
        Ft = F - N * n
        if N <= 0:
            st.mode, st.shape = APART, -1
            return J
        if np.linalg.norm(Ft) <= tb.mu * N:
            st.mode = ROLLING
            return J
        st.slip = Ft / np.linalg.norm(Ft)
    st.mode = SLIDING
    if float(surface.force(st) @ n) <= 0:
        st.mode, st.shape = APART, -1
    return J


def _transition(surface: Surface, st: State, kind: str, k: int, dt: float) -> tuple[str, np.ndarray]:
    """Apply the event ``kind`` of shape k at st (in place); the kind to log and the impulse given."""
    zero = np.zeros(3)
    if kind == "impact":
        if st.mode != APART:
            raise SimulationError(f"{surface.body.name!r}: {surface.body.shape_name(k)} reaches "
                                  f"{surface.table.name!r} while {surface.body.shape_name(st.shape)} touches it (this "
                                  "model holds one contact at a time)", time=st.t,
                                  body=surface.body.name)
        st.shape = k
        J = settle(surface, st, dt)
        return ("impact" if st.mode == APART else f"impact, {st.mode}"), J
    if kind == "lift-off":
        st.mode, st.shape = APART, -1
        return kind, zero
    if kind == "stick":
        # The event is where the slip turns past a right angle from the step's start: through zero on a straight
        # slide, but a slip whose direction turns (a spinning ball, a curved table) can pass beside zero, leaving at
        # most its tangential acceleration times a step. Friction stops that rest at once (its energy booked as
        # friction's), so the rolling steps that follow start without slip.
        c = surface.contact(st)
        J = -np.linalg.solve(surface.K(c.W, c.rho), c.u)
        _push(surface, st, J)
        st.mode = ROLLING
        st.slip = np.zeros(3)
        F = surface.force(st)
        n = surface.contact(st).n
        N = float(F @ n)
        Ft = F - N * n
        if np.linalg.norm(Ft) > surface.table.mu * N:      # the friction cannot hold it: slides the other way
            st.mode, st.slip = SLIDING, Ft / np.linalg.norm(Ft)
            return "reversal", J
        return kind, J
    # slip: slides in the direction the needed friction pointed
    F = surface.force(st)
    n = surface.contact(st).n
    Ft = F - float(F @ n) * n
    st.mode, st.slip = SLIDING, Ft / np.linalg.norm(Ft)
    return kind, zero


def _touch_only(surface: Surface, st: State, J: np.ndarray) -> bool:
    """Whether an impact left the body apart with an impulse below SLIP_RTOL of its momentum scale: a shape that
    reaches the table where it has just left it (a lift-off's gap stays within round-off of zero for a while).
    Not an event, and the shape is not watched again in that step (else the round-off gap fires it at once again)."""
    return st.mode == APART and float(np.linalg.norm(J)) <= SLIP_RTOL * surface.body.mass * surface.speed_scale(st)


def run(surface: Surface, state: State, t_end: float, dt: float, every: int = 1, progress=None, stop=None,
        engine: str = "auto") -> Run:
    """Integrate from ``state`` to t_end (s) in steps of dt (s), recording every ``every`` steps (and the last).
    ``progress(fraction)`` is called now and then; when ``stop()`` returns True the run ends (``complete`` False).

    ``engine``: ``"numpy"`` runs this module's reference; ``"compiled"`` the same method compiled
    (:mod:`.surface_kernels`, ahead of time when a build is shipped, else numba's JIT; :func:`run_compiled`);
    ``"auto"`` (default) the compiled run where it can run (:func:`compiled_available`), else the reference."""
    if not (np.isfinite(dt) and dt != 0):
        raise ValidationError("dt", f"must be a non-zero time step (s), got {dt!r}")
    if engine not in ("auto", "numpy", "compiled"):
        raise ValidationError("engine", f"must be 'auto', 'numpy' or 'compiled', got {engine!r}")
    if engine == "compiled" or (engine == "auto" and compiled_available()):
        return run_compiled(surface, state, t_end, dt, every, progress, stop)
    return run_numpy(surface, state, t_end, dt, every, progress, stop)


def run_numpy(surface: Surface, state: State, t_end: float, dt: float, every: int = 1, progress=None,
              stop=None) -> Run:
    """:func:`run` on this module's numpy reference."""
    st = state.copy()
    t0 = st.t
    n_steps = int(round((t_end - t0) / dt))
    keys = ("t", "x", "v", "L", "Q", "mode", "shape", "energy", "wf", "wi", "wn")
    rec = {k: [] for k in keys}
    events = []
    wf = wn = wi = 0.0
    complete = True

    def keep():
        for key, val in zip(keys, (st.t, st.x, st.v, st.L, st.Q, st.mode, st.shape, surface.energy(st), wf, wi, wn)):
            rec[key].append(val)

    keep()
    for i in range(1, n_steps + 1):
        if stop is not None and i % PROGRESS_EVERY == 0 and stop():
            complete = False
            if rec["t"][-1] != st.t:
                keep()
            break
        if progress is not None and i % PROGRESS_EVERY == 0:
            progress(i / n_steps)
        t_next = t0 + i * dt
        touched = set()     # shapes that touched without an impact in this step (_touch_only): not watched again
        for _ in range(MAX_EVENTS_PER_STEP):
            h = t_next - st.t
            trial, dwn, dwf = surface.advance(st, h)
            fired = [(kind, val, k) for kind, val, k in surface.watch(trial, st)
                     if val < 0 and not (kind == "impact" and k in touched)]
            if not fired:
                st, wn, wf = trial, wn + dwn, wf + dwf
                break
            first = None
            before = {(kind, k): val for kind, val, k in surface.watch(st, st)}
            for kind, val, k in fired:
                v0 = before.get((kind, k), 1.0)
                if v0 < 0:      # already past at the step start (round-off at a transition): no bracket
                    tau = 0.0
                else:
                    def g(tau, kind=kind, k=k, start=st):
                        s = surface.advance(start, tau)[0]
                        return next(v for kd, v, kk in surface.watch(s, start) if kd == kind and kk == k)
                    tau = brent(g, 0.0, h, v0 if v0 > 0 else None, val)
                if first is None or abs(tau) < abs(first[0]):
                    first = (tau, kind, k)
            tau, kind, k = first
            if tau != 0:
                s, dwn, dwf = surface.advance(st, tau)
                st, wn, wf = s, wn + dwn, wf + dwf
            if kind.startswith("region"):   # a step boundary only (Surface.watch)
                continue
            E0 = surface.energy(st)
            label, J = _transition(surface, st, kind, k, dt)
            if kind == "stick":
                wf += surface.energy(st) - E0
            else:
                wi += surface.energy(st) - E0
            if kind == "impact" and _touch_only(surface, st, J):
                touched.add(k)
                continue
            P = surface.lowest(k, st.x, st.Q, st.t)[2]
            events.append(Event(st.t, label, k, J, P, st.x.copy(), st.Q.copy()))
        else:
            raise SimulationError(f"{surface.body.name!r}: more than {MAX_EVENTS_PER_STEP} contact changes within "
                                  f"one step at t = {st.t:.9g} s (chatter); take a shorter step", time=st.t,
                                  body=surface.body.name)
        st.t = t_next
        if not (np.all(np.isfinite(st.x)) and np.all(np.isfinite(st.L))):
            raise SimulationError(f"{surface.body.name!r}: the state is no longer finite", time=st.t,
                                  body=surface.body.name)
        if i % every == 0 or i == n_steps:
            keep()
    return Run(*(np.array(rec[k]) for k in keys), events, st, complete)


# --- the compiled run ----------------------------------------------------------------------------------------

def _compiled_kernel():
    """(the compiled ``run_chunk`` of :mod:`.surface_kernels`, "ahead-of-time" or "jit"): from an ahead-of-time
    build that has it (no numba import), else numba's JIT; None when neither can run."""
    from .. import aot, compiled

    build = aot.load()
    if build is not None and "surface" in build.specs:
        return (lambda *args: build.call("surface", args)), "ahead-of-time"
    if not compiled.available():
        return None
    from . import surface_kernels

    return surface_kernels.run_chunk, "jit"


def compiled_available() -> bool:
    """Whether :func:`run_compiled` can run here (an ahead-of-time build, or numba)."""
    return _compiled_kernel() is not None


def model_arrays(surface: Surface) -> tuple:
    """The compiled kernel's model (par, b, r, ax, rim, plan, rim_e1) in :mod:`.surface_layout`'s layout."""
    body, tb = surface.body, surface.table
    par = np.zeros(lay.NPAR)
    par[lay.P_MASS] = body.mass
    par[lay.P_INV:lay.P_INV + 3] = body.inv
    par[lay.P_MOM:lay.P_MOM + 3] = body.moments
    wall = tb.wall
    if tb.flat:
        par[lay.P_WKIND], par[lay.P_WSIGN] = lay.WALL_PLANE, 1.0
        par[lay.P_N:lay.P_N + 3] = tb.normal
        par[lay.P_Q:lay.P_Q + 3] = tb.point
    elif isinstance(wall, Box):
        par[lay.P_WKIND], par[lay.P_WSIGN] = lay.WALL_BOX, 1.0 if wall.inside else -1.0
        par[lay.P_WC:lay.P_WC + 3], par[lay.P_WH:lay.P_WH + 3] = wall.centre, wall.h
        par[lay.P_WROT:lay.P_WROT + 9] = np.ravel(wall.R)
    else:
        cyl = isinstance(wall, Cylinder)
        par[lay.P_WKIND] = lay.WALL_CYLINDER if cyl else lay.WALL_SPHERE
        par[lay.P_WSIGN], par[lay.P_WR] = wall.sign, wall.radius
        par[lay.P_WC:lay.P_WC + 3] = wall.point if cyl else wall.centre
        if cyl:
            par[lay.P_WA:lay.P_WA + 3] = wall.a
    par[lay.P_MU], par[lay.P_E], par[lay.P_VISCOUS] = tb.mu, tb.restitution, float(tb.friction == "viscous")
    par[lay.P_G:lay.P_G + 3] = surface.g
    par[lay.P_REACH] = body.reach
    steps, inv1 = body.plan
    par[lay.P_INV1] = inv1[0]
    par[lay.P_TOUCH], par[lay.P_SLIP_RTOL], par[lay.P_SPLIT_RTOL] = TOUCH_RTOL, SLIP_RTOL, SPLIT_RTOL
    par[lay.P_MAX_SPLITS], par[lay.P_MAX_EVENTS], par[lay.P_REGION_RTOL] = MAX_SPLITS, MAX_EVENTS_PER_STEP, REGION_RTOL
    par[lay.P_DR], par[lay.P_DS], par[lay.P_ROT_RTOL] = tb.rolling_resistance, tb.spin_resistance, ROT_RTOL
    par[lay.P_RIM_ITER] = RIM_ITERATIONS
    plan = np.full((3, 3), -1.0)
    for p, (k, frac, coef) in enumerate(steps):
        plan[p] = (k, frac, coef[0])
    f = lambda a: np.ascontiguousarray(a, dtype=float)  # noqa: E731
    return (par, f(body.b), f(body.r), f(body.rim_axis), f(body.rim), plan, f(body.rim_e1))


def state_vector(st: State) -> np.ndarray:
    """A :class:`State` as the kernel's (24,) vector."""
    s = np.zeros(lay.NSTATE)
    s[lay.S_T] = st.t
    s[lay.S_X:lay.S_X + 3], s[lay.S_V:lay.S_V + 3], s[lay.S_L:lay.S_L + 3] = st.x, st.v, st.L
    s[lay.S_Q:lay.S_Q + 9] = np.ravel(st.Q)
    s[lay.S_MODE], s[lay.S_SHAPE] = MODES.index(st.mode), st.shape
    s[lay.S_SLIP:lay.S_SLIP + 3] = st.slip
    return s


def state_of(s: np.ndarray) -> State:
    """The :class:`State` of a kernel's (24,) vector."""
    x, v, L = (s[k:k + 3].copy() for k in (lay.S_X, lay.S_V, lay.S_L))
    return State(float(s[lay.S_T]), x, v, L, s[lay.S_Q:lay.S_Q + 9].reshape(3, 3).copy(), MODES[int(s[lay.S_MODE])],
                 int(s[lay.S_SHAPE]), s[lay.S_SLIP:lay.S_SLIP + 3].copy())


#: Events a compiled chunk's buffer holds at first (doubled, and the chunk run again, when it fills).
EVENT_CAPACITY = 64


def run_compiled(surface: Surface, state: State, t_end: float, dt: float, every: int = 1, progress=None,
                 stop=None) -> Run:
    """:func:`run` on the compiled kernel (:func:`.surface_kernels.run_chunk`): the same method, steps, events and
    records as :func:`run_numpy`, to round-off; chunks of PROGRESS_EVERY steps when there are callbacks (the
    numpy run's points for them), else one. When the kernel stops on a failure (Painlevé's paradox, a rim lying
    flat, chatter, …) the numpy reference runs the whole run instead and reports it in its words."""
    found = _compiled_kernel()
    if found is None:
        raise ValidationError("engine", "the compiled table kernel needs numba (pip install pem_physics[fast]) or "
                              "an ahead-of-time build (pem build-engine); use engine='numpy'")
    if not (np.isfinite(dt) and dt != 0):
        raise ValidationError("dt", f"must be a non-zero time step (s), got {dt!r}")
    kernel, kernels = found
    M = model_arrays(surface)
    s = state_vector(state)
    # a call of no steps first: numba compiles (first use) or loads its cache here, timed apart from the run
    t_load = _time.perf_counter()
    kernel(M, s.copy(), np.zeros(3), 0, 0, 0, float(state.t), float(dt), 1, np.zeros((1, lay.NSTATE + 4)), 0,
           np.zeros((1, 21)), 0, np.zeros(3))
    load_s = _time.perf_counter() - t_load
    t0 = float(state.t)
    n_steps = int(round((t_end - t0) / dt))
    every = int(every)
    R = np.zeros((n_steps // every + 3, lay.NSTATE + 4))
    R[0, :lay.NSTATE] = s
    R[0, lay.NSTATE] = surface.energy(state)
    rc = 1
    E = np.zeros((EVENT_CAPACITY, 21))
    ec = 0
    works = np.zeros(3)
    info = np.zeros(3)
    complete = True
    callbacks = progress is not None or stop is not None
    i = 0                       # steps done
    while i < n_steps:
        # run_numpy calls back before its step i + 1 when PROGRESS_EVERY divides i + 1: the chunks end there
        if callbacks and (i + 1) % PROGRESS_EVERY == 0:
            if stop is not None and stop():
                complete = False
                if R[rc - 1, lay.S_T] != s[lay.S_T]:
                    R[rc, :lay.NSTATE] = s
                    R[rc, lay.NSTATE] = surface.energy(state_of(s))
                    R[rc, lay.NSTATE + 1:] = works
                    rc += 1
                break
            if progress is not None:
                progress((i + 1) / n_steps)
        i1 = min(((i + 1) // PROGRESS_EVERY + 1) * PROGRESS_EVERY - 1, n_steps) if callbacks else n_steps
        while True:
            s1, works1 = s.copy(), works.copy()
            status, rc1, ec1 = kernel(M, s1, works1, i, i1, n_steps, t0, float(dt), every, R, rc, E, ec, info)
            if status != lay.EVENTS_FULL:
                break
            E = np.concatenate([E, np.zeros_like(E)])
        if status != lay.OK:
            return run_numpy(surface, state, t_end, dt, every, progress, stop)
        s, works, rc, ec, i = s1, works1, rc1, ec1, i1
    R = R[:rc]
    events = [Event(float(e[0]), lay.EVENT_KINDS[int(e[1])], int(e[2]), e[3:6].copy(), e[6:9].copy(), e[9:12].copy(),
                    e[12:21].reshape(3, 3).copy()) for e in E[:ec]]
    x, v, L = (R[:, k:k + 3].copy() for k in (lay.S_X, lay.S_V, lay.S_L))
    energy, wf, wi, wn = (R[:, lay.NSTATE + k].copy() for k in range(4))
    return Run(R[:, lay.S_T].copy(), x, v, L, R[:, lay.S_Q:lay.S_Q + 9].reshape(-1, 3, 3).copy(),
               np.array([MODES[int(m)] for m in R[:, lay.S_MODE]]), R[:, lay.S_SHAPE].astype(int), energy, wf, wi, wn,
               events, state_of(s), complete, "numba", kernels, load_s)
