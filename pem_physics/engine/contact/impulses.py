"""Impulses at contacts between bodies (theory §7).

A contact: point c (3,) m, unit normal n (3,) from body 2 to body 1, restitution e ∈ [0, 1],
optional Coulomb friction μ ≥ 0. Each side is a :class:`ContactBody`:

- ``free``: mass M kg, centre of mass as centre of rotation, K = (1/M)𝟙 − [r]× W [r]×;
- ``pendulum``: rotation about a fixed pivot, K = −[r]× W [r]× (the pivot takes the rest);
- ``fixed`` (a wall, a fixed body): K = 0.

W (3,3) 1/(kg·m²) is the lab inverse inertia about the centre of rotation: the pseudo-inverse for
point-mass bodies (:func:`pem_physics.model.inertia.pseudo_inverse`), ``a aᵀ/(a·I·a)`` for a body
hinged on the unit axis a (:func:`hinge_inverse_inertia`). Lever arm r = c − centre (m). Velocities
m/s, angular velocities rad/s, impulses N·s, angular impulses N·m·s.

Frictionless: ``j = −(1+e)(n·v_rel)/(n·(K₁+K₂)n)``, J = j n, only when n·v_rel < 0 (approaching).
With friction the sticking impulse solves ``(K₁+K₂) J = Δv_rel`` for the relative velocity
``−e(n·v_rel) n`` afterwards (normal restitution, no slip); when its tangential part exceeds μ times
its normal part, the impulse is projected onto the friction cone: J = j (n + μ t̂) with t̂ the
direction of the sticking impulse's tangential part and j set by normal restitution.
In 3D neither impulse is sure to dissipate (K couples the normal and tangential directions: Kane's paradox),
so where one would add kinetic energy its friction is scaled down: J(s) = J_f + s (J₀ − J_f) from the
frictionless impulse J_f, which dissipates ½(1−e²)(n·v_rel)²/(n·K n) ≥ 0, towards that impulse J₀, with the
largest s ∈ [0, 1] whose energy change J·v_rel + ½ J·K J is ≤ 0 (:func:`dissipative_impulse`). It keeps as much
friction as the energy allows, J in the cone and the normal restitution (where J₀ has it), and leaves every
impulse that dissipates as it was: a closed form, where Stronge's energetic restitution would integrate the
impact along the normal impulse.

Simultaneous contacts (:func:`resolve_contacts`) are resolved pairwise, sweeping the contact list in
its given order and re-checking every approach velocity after each impulse, until no pair
approaches. Why a line of equal balls with e = 1 then gives Newton's cradle: each pairwise impact
of equal masses with e = 1 exchanges the two normal velocities, so the sweeps perform a bubble sort
of the velocities along the line; it stops only when no neighbour approaches, i.e. when the
velocities are non-decreasing along the direction of travel. That final state is unique — the
incoming velocities handed to the last balls, the rest at rest (one in → one out, two in → two
out) — whatever the order; listing the contacts along the direction of travel (as the particle
simulator does: pairs sorted by body index) only makes it take the fewest sweeps, one per ball
that comes out. (Solving all contacts at once with simultaneous impulses would instead spread the
momentum over the line; that is not what a real cradle does, because its balls are not quite
touching and the pulse passes one contact at a time.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import SimulationError, ValidationError
from ...model.inertia import pseudo_inverse

KINDS = ("free", "pendulum", "fixed")
#: float64's ε: the rounding of an impact's energy terms (:func:`dissipative_impulse`)
EPS = float(np.finfo(float).eps)


def skew(r) -> np.ndarray:
    """[r]× (…,3,3) of vectors r (…,3): skew(r) @ x == r × x."""
    r = np.asarray(r, float)
    S = np.zeros(r.shape + (3,))
    S[..., 0, 1], S[..., 0, 2], S[..., 1, 2] = -r[..., 2], r[..., 1], -r[..., 0]
    S[..., 1, 0], S[..., 2, 0], S[..., 2, 1] = r[..., 2], -r[..., 1], r[..., 0]
    return S


def hinge_inverse_inertia(I, axis) -> np.ndarray:
    """W = a aᵀ/(a·I·a) (3,3) of a body hinged on the unit axis a; I (3,3) lab, about a point on the hinge."""
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    return np.outer(a, a) / float(a @ np.asarray(I, float) @ a)


def check_restitution(e, path: str = "restitution") -> float:
    """e as a float, or a ValidationError naming ``path`` when it is not in [0, 1]."""
    e = float(e)
    if not 0.0 <= e <= 1.0:
        raise ValidationError(path, f"restitution must be in [0, 1], got {e!r}")
    return e


@dataclass
class ContactBody:
    """One side of a contact. ``v`` (3,) m/s (free bodies only), ``omega`` (3,) rad/s lab,
    ``centre`` (3,) m the centre of rotation (centre of mass or pivot), ``W`` (3,3) lab inverse
    inertia about it, ``mass`` kg (free bodies). Impulses update ``v`` and ``omega`` in place."""

    kind: str
    mass: float = np.inf
    centre: np.ndarray = field(default_factory=lambda: np.zeros(3))
    W: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    v: np.ndarray = field(default_factory=lambda: np.zeros(3))
    omega: np.ndarray = field(default_factory=lambda: np.zeros(3))
    name: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValidationError(f"{self.name}.kind", f"must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "free" and not (np.isfinite(self.mass) and self.mass > 0):
            raise ValidationError(f"{self.name}.mass", f"a free body needs a positive mass, got {self.mass!r}")
        self.centre = np.asarray(self.centre, float).copy()
        self.W = np.asarray(self.W, float).copy()
        self.v = np.asarray(self.v, float).copy()
        self.omega = np.asarray(self.omega, float).copy()

    @classmethod
    def free(cls, mass, com, v, inertia=None, omega=None, name=""):
        """Free body: inertia (3,3) lab about the centre of mass (None: a point mass)."""
        W = np.zeros((3, 3)) if inertia is None else pseudo_inverse(inertia)
        return cls("free", float(mass), com, W, v, np.zeros(3) if omega is None else omega, name)

    @classmethod
    def pendulum(cls, pivot, inertia, omega, name=""):
        """Pendulum about ``pivot``: inertia (3,3) lab about the pivot (pseudo-inverted)."""
        return cls("pendulum", np.inf, pivot, pseudo_inverse(inertia), np.zeros(3), omega, name)

    @classmethod
    def hinged(cls, pivot, inertia, axis, omega, name=""):
        """Pendulum turning only about the unit ``axis`` through ``pivot``."""
        return cls("pendulum", np.inf, pivot, hinge_inverse_inertia(inertia, axis), np.zeros(3), omega, name)

    @classmethod
    def fixed(cls, name=""):
        return cls("fixed", name=name)

    def K(self, c) -> np.ndarray:
        """Effective inverse mass (3,3) kg⁻¹ at the point c: Δv(c) = K J for an impulse J at c."""
        if self.kind == "fixed":
            return np.zeros((3, 3))
        S = skew(np.asarray(c, float) - self.centre)
        K = -S @ self.W @ S
        if self.kind == "free":
            K = K + np.eye(3) / self.mass
        return K

    def velocity_at(self, c) -> np.ndarray:
        if self.kind == "fixed":  # a moving wall carries its surface velocity in v
            return self.v.copy()
        return self.v + np.cross(self.omega, np.asarray(c, float) - self.centre)

    def apply(self, J, c) -> tuple[np.ndarray, np.ndarray]:
        """Apply the impulse J (3,) at c; return (Δv, Δω)."""
        if self.kind == "fixed":
            return np.zeros(3), np.zeros(3)
        dL = np.cross(np.asarray(c, float) - self.centre, J)
        dw = self.W @ dL
        dv = np.asarray(J, float) / self.mass if self.kind == "free" else np.zeros(3)
        self.v = self.v + dv
        self.omega = self.omega + dw
        return dv, dw


@dataclass
class Impulse:
    """J (3,) N·s on body 1 (body 2 gets −J); dp/dL: momentum / angular-momentum (about each body's
    centre of rotation) changes; dv/domega: velocity changes. Zero when the pair does not approach."""

    J: np.ndarray
    dp1: np.ndarray
    dL1: np.ndarray
    dp2: np.ndarray
    dL2: np.ndarray
    dv1: np.ndarray
    domega1: np.ndarray
    dv2: np.ndarray
    domega2: np.ndarray


def compute_impulse(b1: ContactBody, b2: ContactBody, c, n, e: float, mu: float = 0.0) -> np.ndarray:
    """The impulse J (3,) on body 1 at c (normal n from 2 to 1); zero if the bodies do not approach."""
    e = check_restitution(e)
    if not mu >= 0:
        raise ValidationError("friction", f"μ must be ≥ 0, got {mu!r}")
    c = np.asarray(c, float)
    n = np.asarray(n, float)
    vrel = b1.velocity_at(c) - b2.velocity_at(c)
    vn = float(n @ vrel)
    if vn >= 0.0:
        return np.zeros(3)
    K = b1.K(c) + b2.K(c)
    knn = float(n @ K @ n)
    if not knn > 0.0:
        raise SimulationError(f"contact {b1.name!r}–{b2.name!r}: no effective mass along the normal "
                              "(both sides fixed, or the normal runs through both centres of rotation)")
    if mu == 0.0:
        return (-(1.0 + e) * vn / knn) * n
    dv = -e * vn * n - vrel
    J = np.linalg.lstsq(K, dv, rcond=1e-12)[0]  # K may be singular (point-mass pendulums, walls)
    jn = float(n @ J)
    Jt = J - jn * n
    if np.linalg.norm(Jt) > mu * jn:
        t = Jt / np.linalg.norm(Jt)
        den = float(n @ K @ (n + mu * t))
        if not den > 0.0:
            raise SimulationError(f"contact {b1.name!r}–{b2.name!r}: friction μ = {mu:g} makes the normal impulse "
                                  "ill-defined (Painlevé-type coupling)")
        J = (-(1.0 + e) * vn / den) * (n + mu * t)
    return dissipative_impulse(J, K, n, vrel, e)


def dissipative_impulse(J, K, n, vrel, e: float) -> np.ndarray:
    """J (3,) N·s when friction's part of it adds no kinetic energy, else J_f + s (J − J_f) with the largest
    s ∈ [0, 1] for which it adds none. J_f = j_f n is the frictionless impulse, j_f = −(1+e) v_n/(n·K n), and
    friction's part J − J_f; K (3,3) kg⁻¹ = K₁ + K₂, n (3,) the unit normal, vrel (3,) m/s the approaching
    relative velocity (v_n = n·vrel < 0), e ∈ [0, 1]. So an impact never adds energy, and loses at least what the
    frictionless one loses, −½(1−e) j_f v_n (Newton's restitution with a sticking or cone impulse can add energy in
    3D: Kane's paradox).

    The energy change ΔT(s) = J(s)·vrel + ½ J(s)·K J(s) (J) is a convex quadratic c₂s² + c₁s + c₀ with
    c₀ = ΔT(0) = ½(1−e) j_f v_n ≤ 0: friction's part c₂s² + c₁s is not positive up to s = −c₁/c₂ where c₁ < 0,
    nowhere beyond s = 0 else; one Newton step on ΔT − c₀ evaluated at J(s) refines the root."""
    vn = float(n @ vrel)
    Kn = K @ n
    jf = -(1.0 + e) * vn / float(n @ Kn)
    c0 = 0.5 * (1.0 - e) * jf * vn
    KJ = K @ J
    # a gain within the rounding of its terms is none (an elastic impact's ΔT = 0 would be decided by it):
    # |J|·|v_rel| and tr K·|J|² bound them (K is positive semi-definite)
    JJ = float(J @ J)
    tol = 8.0 * EPS * (np.sqrt(JJ * float(vrel @ vrel)) + float(np.trace(K)) * JJ)
    if float(J @ vrel) + 0.5 * float(J @ KJ) - c0 <= tol:
        return J
    D = J - jf * n
    c1 = float(D @ (vrel + jf * Kn))  # D · the relative velocity after J_f
    c2 = 0.5 * float(D @ (KJ - jf * Kn))  # ½ D·K D
    s = _friction_root(c1, c2)
    # one Newton step on ΔT(s) − c₀ evaluated at J(s): c₂ loses digits where J is large along a soft direction of K
    J = jf * n + s * D
    KJ = K @ J
    g, dg = float(J @ vrel) + 0.5 * float(J @ KJ) - c0, float(D @ (vrel + KJ))
    if g > 0.0 and dg > 0.0:
        s = max(s - g / dg, 0.0)
        J = jf * n + s * D
    return J


def _friction_root(c1: float, c2: float) -> float:
    """The largest s ∈ [0, 1] with c₂s² + c₁s ≤ 0 (c₂ ≥ 0): −c₁/c₂ where c₁ < 0, else 0."""
    if c1 >= 0.0:
        return 0.0
    return min(-c1 / c2, 1.0) if c2 > 0.0 else 1.0


def contact_impulse(b1: ContactBody, b2: ContactBody, c, n, e: float, mu: float = 0.0) -> Impulse:
    """Compute and apply the impulse at one contact (updates b1 and b2); the changes it made."""
    J = compute_impulse(b1, b2, c, n, e, mu)
    c = np.asarray(c, float)
    dv1, dw1 = b1.apply(J, c)
    dv2, dw2 = b2.apply(-J, c)
    zero = np.zeros(3)
    dp1 = J.copy() if b1.kind == "free" else zero
    dp2 = -J if b2.kind == "free" else zero
    dL1 = np.cross(c - b1.centre, J) if b1.kind != "fixed" else zero
    dL2 = -np.cross(c - b2.centre, J) if b2.kind != "fixed" else zero
    return Impulse(J, dp1, dL1, dp2, dL2, dv1, dw1, dv2, dw2)


@dataclass
class Contact:
    """A contact between bodies[i] and bodies[j] (j = None: a wall or fixed body); normal n from j to i."""

    i: int
    j: int | None
    point: np.ndarray
    normal: np.ndarray
    e: float = 1.0
    mu: float = 0.0


def resolve_contacts(bodies: list, contacts: list, tol: float | None = None,
                     max_sweeps: int = 100_000, fixed_names=None) -> list[tuple[int, np.ndarray]]:
    """Resolve simultaneous contacts pairwise, in list order, sweeping until no pair approaches.

    ``bodies``: ContactBody list (updated in place); ``contacts``: :class:`Contact` list. A pair
    approaches when n·v_rel < −tol (m/s; default 1e-12 × the largest contact-point speed at the
    start). ``fixed_names``: each contact's fixed side's name (j = None: a wall or a fixed body), for
    messages. Returns (contact index, J) for every impulse applied, in order.
    """
    names = list(fixed_names) if fixed_names is not None else [None] * len(contacts)
    side2 = [ContactBody.fixed(names[k] or "a wall or fixed body") if ct.j is None else bodies[ct.j]
             for k, ct in enumerate(contacts)]
    if tol is None:
        speeds = [np.linalg.norm(bodies[ct.i].velocity_at(ct.point)) for ct in contacts]
        speeds += [np.linalg.norm(s.velocity_at(ct.point)) for s, ct in zip(side2, contacts)]
        tol = 1e-12 * max(speeds, default=0.0)
    log = []
    for _ in range(max_sweeps):
        hit = False
        for k, ct in enumerate(contacts):
            b1, b2 = bodies[ct.i], side2[k]
            vn = float(ct.normal @ (b1.velocity_at(ct.point) - b2.velocity_at(ct.point)))
            if vn < -tol:
                log.append((k, contact_impulse(b1, b2, ct.point, ct.normal, ct.e, ct.mu).J))
                hit = True
        if not hit:
            return log
    pairs = sorted({f"{bodies[ct.i].name!r}–{side2[k].name!r}" for k, ct in enumerate(contacts)})
    raise SimulationError(f"simultaneous contacts not resolved after {max_sweeps} sweeps ({len(contacts)} "
                          f"contacts: {', '.join(pairs[:4])}{' …' if len(pairs) > 4 else ''}; {len(log)} impulses)")
