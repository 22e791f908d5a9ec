"""A rigid body on a table: persistent contact that slides, rolls and lifts off (issue 30; theory §7).

The body is free (position x of its centre of mass, momentum M v, angular momentum L about the centre of mass,
principal frame Q, rows the principal axes in lab coordinates) and carries contact shapes fixed in it: spheres (a
tippe top's ball, a top's rounded tip, a billiard ball: centre b, radius r) and rims (a circle of centre b, unit axis
a and radius r: a coin's or a disc's edge). The table is a plane (point q, unit normal n pointing to the allowed
side) or a curved static wall of :mod:`.walls` — a sphere, cylinder or box, inside (a bowl, a pipe, a tray) or outside
(a dome, a log, a block) — with friction μ and a restitution e for impacts. Gravity g is uniform.

A shape's lowest point P (the one nearest the table): a sphere's is C − r n; a rim's is C − r m/|m| with
m = n − (n·a)a, |m| the sine of its tilt (a rim lying flat, |m| = 0, touches along its whole edge: on a plane,
:mod:`.surface_flat`'s state; on a curved table, reported).
Its gap is n·(P − q). On a curved table a sphere's n = −∇f(C), f the wall's signed distance (negative on the
allowed side), and the gap is −f(C) − r; n turns as the centre moves, ṅ = −H Ċ (H the Hessian of f,
Ċ = v + ω × (C − x)): the contact point runs by Ṗ = Ċ + r H Ċ, and keeping n·u = 0 asks n·u̇ = (H Ċ)·u — the
curvature terms (theory §7's vᵀHv) the forces below take. A rim's contact point on a curved table is its deepest
point P = C + r d(φ*) (the maximum of f along the rim, by Newton's method from the tangent plane's answer), its gap
−f(P); it runs round the rim at φ̇ = −((H u)·d' + ∇f·(ω × d'))/(r d'·H d' − ∇f·d) and n·u̇ = (H Ṗ)·u. A block's edges
and corners (where its curvature jumps) are step boundaries: located like events, nothing changes there, so no step
straddles a jump.

States of a contact:

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
flight (a scalar equation, solved by the secant method to round-off; a round-off gap at the start is closed at no
more than CLOSE_RATE of the speed scale: :func:`.surface_common.landing_target`); its tangential part is λ₁ f when
sliding, and (h/2)·F_t from the acceleration-level force when rolling. J₂ makes the contact point's normal velocity zero
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

A run (its start, events and records) is :mod:`.surface_run`'s. Two engines run this method: the numpy code here
and there, the reference, and :mod:`.surface_kernels` with :mod:`.surface_run_kernels`, the same arithmetic compiled
(numba, or ahead of time where a build is shipped) with no Python between steps, events or halvings — ~25× faster;
:func:`.surface_run.run` takes the compiled one where it can. They agree to round-off
(``tests/engine/test_surface_compiled.py``).

Several shapes touching at once (a tippe top on its ball and stem, a block on an edge): :mod:`.surface_several`,
the same step and events with a set of contacts. A rim lying flat on a plane (a coin on its face): :mod:`.surface_flat`
(its own state, step and events; the landing of a rim that falls flat). Limits: the table does not move; impacts
with viscous friction are frictionless.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ...errors import SimulationError, ValidationError
from ..integrators import free_turn, free_turn_plan
from ..system import principal_frame
from . import surface_flat, surface_several
from .impulses import check_restitution, skew
from .surface_common import (  # noqa: F401  (MODES, SLIDING: the modes, kept with the model that has them)
    _EPS,
    APART,
    FLAT,
    FLAT_REST,
    MAX_SPLITS,
    MODES,
    REGION_RTOL,
    RIM_ITERATIONS,
    ROLLING,
    ROT_RTOL,
    SLIDING,
    SLIP_RTOL,
    SPLIT_RTOL,
    landing_target,
    norm,
)
from .surface_common import cross as _cross
from .walls import Box, Cylinder, Plane, Sphere, Wall


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
    friction's direction when a slide starts from rest (zero otherwise); ``extra`` the other touching shapes when
    several touch at once, ((shape, mode, slip), …) in the order of their shapes (:mod:`.surface_several`)."""

    t: float
    x: np.ndarray
    v: np.ndarray
    L: np.ndarray
    Q: np.ndarray
    mode: str = APART
    shape: int = -1
    slip: np.ndarray = field(default_factory=lambda: np.zeros(3))
    extra: tuple = ()

    def copy(self) -> State:
        return State(self.t, self.x.copy(), self.v.copy(), self.L.copy(), self.Q.copy(), self.mode, self.shape,
                     self.slip.copy(), tuple((k, m, s.copy()) for k, m, s in self.extra))


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


def _box_faces(box: Box) -> tuple:
    """An inside box's six faces: points (6,3) m on them, unit normals (6,3) into the box, and their names (+x, −x,
    +y, … in the box's axes)."""
    points, normals, names = [], [], []
    for i, axis in enumerate("xyz"):
        for s in (1.0, -1.0):
            points.append(box.centre + s * box.h[i] * box.R[i])
            normals.append(-s * box.R[i])
            names.append(f"{'+' if s > 0 else '−'}{axis}")
    return np.array(points), np.array(normals), names


def _per_face(body: TableBody, names: list, table: str) -> TableBody:
    """``body`` with each shape once per face of a box (shape j: the whole body's shape j // 6 against face j % 6)."""
    out = copy.copy(body)
    idx = np.repeat(np.arange(len(body.r)), len(names))
    for attr in ("b", "r", "rim_axis", "rim", "rim_e1"):
        setattr(out, attr, getattr(body, attr)[idx])
    out.shape_name = lambda j: f"{body.shape_name(j // len(names))} (on the {names[j % len(names)]} face of {table!r})"
    return out


class Surface:
    """A body, a table and gravity g (3,) m/s²: the state functions and the step of this module.

    A tray (an inside :class:`~.walls.Box`) is taken as its six faces (``by_face``): each shape of the body is
    here once per face, shape j the body's shape j // 6 against face j % 6's plane, so that a shape in an edge or a
    corner of the box holds a contact with each face it touches (:mod:`.surface_several`). :attr:`whole` is the
    same surface with one contact a shape (the nearest face's), as the compiled kernel takes it."""

    def __init__(self, body: TableBody, table: Table, gravity=(0.0, 0.0, -9.81), by_face: bool = True):
        self.table = table
        self.g = _vector(gravity, "gravity")
        #: a tray's faces (points (6,3), inward normals (6,3), names), or None
        self.faces = None
        #: this surface with one contact a shape (itself, but for a tray)
        self.whole = self
        wall = table.wall
        if by_face and isinstance(wall, Box) and wall.inside:
            self.whole = Surface(body, table, gravity, by_face=False)
            self.faces = _box_faces(wall)
            body = _per_face(body, self.faces[2], table.name)
        self.body = body

    def plane(self, k: int):
        """(point (3,), unit normal (3,) towards the allowed side) m of the plane shape k stands on: the table's, or
        its face's on a tray; None on a curved table."""
        if self.faces is not None:
            f = k % len(self.faces[2])
            return self.faces[0][f], self.faces[1][f]
        return (self.table.point, self.table.normal) if self.table.flat else None

    def on_faces(self, k: int, x, Q) -> int:
        """The whole body's shape k (:attr:`whole`'s) as this surface's: on a tray its copy against the nearest face
        of the box at x, Q; else k (and −1 stays −1)."""
        if self.faces is None or k < 0:
            return k
        F = len(self.faces[2])
        return F * k + int(np.argmin([self.gap(F * k + f, x, Q) for f in range(F)]))

    def whole_shape(self, k: int) -> int:
        """This surface's shape k as the whole body's (:attr:`whole`'s): on a tray k // 6; else k."""
        return k if self.faces is None or k < 0 else k // len(self.faces[2])

    def normal_of(self, k: int, x, Q) -> np.ndarray:
        """The table's unit normal (3,) towards the allowed side where shape k of the body at x, Q meets it."""
        plane = self.plane(k)
        return plane[1] if plane is not None else self.normal_at(x + self.body.b[k] @ Q)

    # --- geometry and kinematics -------------------------------------------------------------------
    def W(self, Q) -> np.ndarray:
        """Lab inverse inertia (3,3) about the centre of mass."""
        return (Q.T * self.body.inv) @ Q

    def lowest(self, k: int, x, Q, t: float | None = None):
        """(C, m, P) of shape k: its centre, the unnormalised direction −m of its lowest point from the centre
        (sphere: m = n; rim of lab axis a: m = n − (n·a)a, |m| the sine of its tilt) and that point P (lab, m)."""
        body = self.body
        C = x + body.b[k] @ Q
        plane = self.plane(k)
        if not body.rim[k]:
            n = self.normal_at(C, t) if plane is None else plane[1]
            return C, n, C - body.r[k] * n
        if plane is None:
            C, d, dp, P, gf, H = self._rim_point(k, x, Q, t)
            return C, -gf / np.linalg.norm(gf), P
        n = plane[1]
        a = body.rim_axis[k] @ Q
        c = float(n @ a)
        at = a - c * n
        at = at - float(at @ n) * n     # twice: lying flat, a_t is round-off and one projection leaves it off the plane
        s = float(np.linalg.norm(at))
        # m = n − (n·a)a = s²n − c·a_t, its normal part written out: as n − (n·a)a it is round-off below s ~ 1e-8
        m = (s * s) * n - c * at
        if not s > 0:       # lying flat (surface_flat): every point of the edge is lowest
            return C, m, C + body.r[k] * (body.rim_e1[k] @ Q)
        return C, m, C + body.r[k] * ((c / s) * at - s * n)

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
        plane = self.plane(k)
        if plane is not None:
            return float((self.lowest(k, x, Q, t)[2] - plane[0]) @ plane[1])
        if self.body.rim[k]:
            return -self.table.wall.value(self._rim_point(k, x, Q, t)[3])
        return -self.table.wall.value(x + self.body.b[k] @ Q) - float(self.body.r[k])

    def gaps(self, x, Q) -> np.ndarray:
        """Shape gaps (S,) m (positive apart)."""
        return np.array([self.gap(k, x, Q) for k in range(len(self.body.r))])

    def contact(self, st: State, k: int | None = None) -> Touch:
        """The :class:`Touch` of shape k (default: the touching one)."""
        k = st.shape if k is None else k
        plane = self.plane(k)
        if self.body.rim[k] and plane is None:
            return self._rim_touch(st, k)
        C, m, P = self.lowest(k, st.x, st.Q, st.t)
        rho = P - st.x
        W = self.W(st.Q)
        w = W @ st.L
        u = st.v + _cross(w, rho)
        moving = _cross(w, C - st.x)
        n, curv = (m, 0.0) if not self.body.rim[k] else (plane[1], 0.0)
        if plane is None:
            # n = −∇f(C) turns as the centre moves: ṅ = −H Ċ (H the wall's Hessian, Ċ = v + ω × (C − x)), so the
            # contact point P = C − r n moves by Ṗ = Ċ + r H Ċ, and keeping n·u = 0 needs n·u̇ = (H Ċ)·u
            HdC = self.table.wall.hessian(C) @ (st.v + moving)
            moving = moving + self.body.r[k] * HdC
            curv = float(HdC @ u)
        if self.body.rim[k]:
            # d = −m/|m| with m = n − (n·a)a and ȧ = ω × a: ḋ = −(ṁ − (ṁ·m̂)m̂)/|m|
            n = plane[1]
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
        S = skew(rho)
        return np.eye(3) / self.body.mass - S @ W @ S

    def speed_scale(self, st: State) -> float:
        w = self.W(st.Q) @ st.L
        r = self.body.reach
        return float(norm(st.v) + norm(w) * r + np.sqrt(norm(self.g) * r))

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

    def friction_vector(self, st: State, u, n) -> np.ndarray:
        """f (3,): a slide's friction force is N·f (:func:`.surface_several.friction_vector` with the state's slip);
        n the normal there."""
        return surface_several.friction_vector(self, st, st.slip, u, n)

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
        S = skew(rho)
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
            # each law's coefficient as the scene names it: the gliding one is in s/m, not a Coulomb μ
            key = "gliding_friction" if self.table.friction == "viscous" else "contact_friction"
            what = (f"the gliding friction {key} = {self.table.mu:g} s/m" if key == "gliding_friction"
                    else f"friction μ = {self.table.mu:g}")
            raise SimulationError(f"{self.body.name!r} on {self.table.name!r}: {what} leaves no normal force that "
                                  f"keeps the contact (Painlevé's paradox): lower the {key}", time=t,
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
        if st.extra:
            return surface_several.step(self, st, h)
        if st.mode in (FLAT, FLAT_REST):
            return surface_flat.step(self, st, h)
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

        target = landing_target(self.gap(k, st.x, st.Q, st.t), h, self.speed_scale(st))

        def land(lam):
            J = lam * D + Jt
            v1 = v0 + J / M
            L1 = st.L + _cross(rho, J) + H1
            x1 = st.x + h * v1
            Q1 = free_turn(st.Q[None, None], L1[None, None], h, self.body.plan)[0, 0]
            return self.gap(k, x1, Q1, st.t + h) - target, x1, Q1, L1

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
        if self.lands_flat(mid, st):
            # past lying flat the contact point has jumped to the rim's far side, where the second kick has no
            # meaning (its friction can even leave no normal force): the step only tells the landing where to look
            return mid, 0.0, 0.0
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
        deepest = depth >= MAX_SPLITS + (surface_flat.NEAR_FLAT_SPLITS if surface_flat.near_flat(self, st) else 0)
        try:
            s, wn, wf = self.step(st, h)
        except SimulationError:
            # a rim on a plane: a step long enough to take it past flat may end anywhere (its contact point jumps
            # round the rim), even where no normal force holds it (Painlevé's paradox): halved like one whose
            # energy is off, and reported only where it cannot be halved further
            if deepest or not surface_flat.on_a_plane(self, st):
                raise
            s = None
        if s is None or surface_flat.sweeps(self, s, st):
            # (a rim's lowest point turned past a right angle well off flat: halved, whatever the energy says)
            err = np.inf
        else:
            err = abs(self.energy(s) - self.energy(st) - wf)
            if err <= SPLIT_RTOL * scale or (self.lands_flat(s, st) and surface_flat.near_flat(self, st)):
                # (a step from near flat past the instant a rim falls flat only tells the landing event where to
                # look; from further off it is halved like any other, so that no step's error passes for a landing)
                return s, wn, wf
        if deepest:
            corner = self.corner_error(st)
            if corner is not None:
                raise corner
            off = f"energy off by {err:.3g} J" if np.isfinite(err) else "its rim's lowest point running round it"
            raise SimulationError(f"{self.body.name!r} on {self.table.name!r}: the contact changes faster than a "
                                  f"step of {h:.3g} s can follow at t = {st.t:.9g} s ({off}); lower dt", time=st.t,
                                  body=self.body.name)
        a, wn1, wf1 = self.advance(st, 0.5 * h, depth + 1, scale)
        if self.lands_flat(a, st):      # past flat in the first half: the event is there (the second would be garbage)
            return a, wn1, wf1
        b, wn2, wf2 = self.advance(a, st.t + h - a.t, depth + 1, scale)
        return b, wn1 + wn2, wf1 + wf2

    def lands_flat(self, st: State, start: State) -> bool:
        """Whether a step from ``start`` to st took a rim touching at one point on a plane past lying flat."""
        return surface_flat.on_a_plane(self, st) and surface_flat.landing(self, st, start) < 0

    def corner_error(self, st: State):
        """The SimulationError to raise, instead of blaming dt, for a run that fails with a shape in an inside box's
        edge or corner where this model does not hold it (one contact a shape: a Surface made with by_face=False),
        or None."""
        k = self.whole.in_a_corner(st)
        if k < 0 or self.faces is not None:
            return None
        return SimulationError(f"{self.body.name!r}: {self.body.shape_name(k)} touches two faces of "
                               f"{self.table.name!r} at once at t = {st.t:.9g} s (an inside box's edge or corner): "
                               "a shape holds one contact with the table here (by_face=False); take the box face by "
                               "face, make it larger or its corners rounder (a sphere or cylinder wall)",
                               time=st.t, body=self.body.name)

    def on_opposite_faces(self, st: State) -> int:
        """A shape of a body in a container box (an inside Box table) whose sphere reaches two opposite faces at once
        (it fills the box's height, width or length, within a thousandth of its radius), or −1: one contact a shape
        (:attr:`whole`, the compiled kernel's view) cannot tell which of the two it stands on."""
        wall = self.table.wall
        if not isinstance(wall, Box) or not wall.inside:
            return -1
        body = self.whole.body
        for k in range(len(body.r)):
            if not body.rim[k] and np.any(wall.h <= body.r[k] * (1 + 1e-3)):
                return k
        return -1

    def in_a_corner(self, st: State) -> int:
        """A shape of a body in a container box (an inside Box table) whose sphere reaches two of its faces — an edge
        or a corner of the box (within a thousandth of its radius), where one shape would need two contacts — or −1."""
        wall = self.table.wall
        if not isinstance(wall, Box) or not wall.inside or self.faces is not None:   # by face: a contact each
            return -1
        for k in range(len(self.body.r)):
            y = np.abs(wall.R @ (st.x + self.body.b[k] @ st.Q - wall.centre))
            if np.sum(wall.h - y <= self.body.r[k] * (1 + 1e-3)) >= 2:
                return k
        return -1

    # --- events ------------------------------------------------------------------------------------
    def watch(self, st: State, start: State) -> list:
        """Event functions at st for a step from ``start``: [(kind, value, shape)], each positive before its event."""
        if st.extra:
            return surface_several.watch(self, st, start)
        if st.mode in (FLAT, FLAT_REST):
            return surface_flat.watch(self, st, start)
        out = []
        g = self.gaps(st.x, st.Q)
        for k in range(len(g)):
            if k != st.shape:
                out.append(("impact", float(g[k]), k))
        if st.mode == APART:
            return out
        if self.lands_flat(st, start):
            # past the instant a rim falls flat its contact point has jumped to the far side: no force there means
            # anything (it may even be Painlevé's paradox); the landing is located first (surface_run._first_event)
            return out + [("flat", surface_flat.landing(self, st, start), st.shape)]
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
        if self.body.rim[st.shape] and self.plane(st.shape) is not None:
            out.append(("flat", surface_flat.landing(self, st, start), st.shape))
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
