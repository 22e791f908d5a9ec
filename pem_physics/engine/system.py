"""Compile a validated :class:`~pem_physics.model.Scene` into flat numpy arrays.

B moving bodies (pendulum and free, in scene order), D dipoles on them, S
dipoles on fixed and driven bodies ("sources"). Body-frame vectors are kept in
two frames: the user's body frame (``kin_body``, used by PEM's schemes) and
each body's principal frame (``kin_principal``, used by the splitting and
reference methods, where the inertia tensor is diagonal).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..model.analytic import Oscillation, UniformRotation
from ..model.inertia import pseudo_inverse
from ..model.motion import TabulatedMotion
from ..model.rotations import axis_angle_matrix, cross, pem_correct
from ..model.scene import ConstantVelocity, EllipticOrbit, Scene

#: Eigenvalues below ZERO_MOMENT·λ_max are treated as zero (theory §1).
ZERO_MOMENT = 1e-10
#: The all-pairs dipole sweep works on blocks of targets holding about this many members·pairs.
PAIR_BLOCK = 1 << 20


class PairPlan:
    """What the dipole–dipole sweep needs that does not change during a run.

    mask (D, D+S) float: 1 where a target dipole feels a source (other body), 0
    on its own body; weights (D+S,): ½ for moving sources (each moving pair is
    met twice), 1 for fixed/driven ones.
    """

    def __init__(self, owner: np.ndarray, n_src: int, n_bodies: int):
        owner_b = np.concatenate([owner, np.full(n_src, -1)])
        self.n_sources = len(owner_b)
        self.mask = (owner[:, None] != owner_b[None, :]).astype(float)
        self.weights = np.where(owner_b >= 0, 0.5, 1.0)
        self.n_bodies = n_bodies
        self.identity = len(owner) == n_bodies and np.array_equal(owner, np.arange(n_bodies))
        self.bodies, self.starts = np.unique(owner, return_index=True)

    def block(self, E: int) -> int:
        return max(1, PAIR_BLOCK // max(1, E * self.n_sources))

    def to_bodies(self, x: np.ndarray) -> np.ndarray:
        """Sum per-dipole x (E,D,...) into their bodies: (E,B,...)."""
        if self.identity:
            return x
        out = np.zeros(x.shape[:1] + (self.n_bodies,) + x.shape[2:])
        if len(self.starts):
            out[:, self.bodies] = np.add.reduceat(x, self.starts, axis=1)
        return out


@dataclass(frozen=True)
class Kinematics:
    """Body-frame constants in one choice of body axes.

    com (B,3) m: pivot → centre of mass; dpos (D,3) m: pivot → dipole;
    dmom (D,3) A·m²: dipole moments; inertia (B,3,3) kg·m² about the pivot;
    inv_inertia (B,3,3): its pseudo-inverse.
    """

    com: np.ndarray
    dpos: np.ndarray
    dmom: np.ndarray
    inertia: np.ndarray
    inv_inertia: np.ndarray


@dataclass
class System:
    names: list            # B names of the moving bodies
    scene_index: np.ndarray  # (B,) index of each moving body in scene.bodies
    pivot: np.ndarray      # (B,3) m, lab: the centre of rotation (for a translating body: at t = 0)
    mass: np.ndarray       # (B,) kg
    kin_body: Kinematics
    kin_principal: Kinematics
    moments: np.ndarray    # (B,3) principal moments about the pivot, ascending
    inv_moments: np.ndarray  # (B,3) 1/λ, 0 for λ ≤ ZERO_MOMENT·λ_max
    axes: np.ndarray       # (B,3,3) columns = principal axes in body coordinates (det +1)
    hinged: np.ndarray     # (B,) bool
    hinge_axis: np.ndarray  # (B,3) lab unit axes (zeros where not hinged)
    U0: np.ndarray         # (B,3,3) initial orientations (rows = body axes in lab)
    omega0: np.ndarray     # (B,3) initial angular velocities, lab
    owner: np.ndarray      # (D,) moving-body index of each dipole (non-decreasing)
    src_owner: np.ndarray  # (S,) scene index of the body carrying each source dipole
    src_pos: np.ndarray    # (S,3) body coordinates of source dipoles
    src_mom: np.ndarray    # (S,3)
    src_bodies: list       # scene bodies that carry sources, in src_owner order
    gravity: np.ndarray    # (3,)
    field: np.ndarray      # (3,)
    rotating_field: object
    mu0: float
    friction: float
    box: np.ndarray | None
    #: Per-member parameters of an ensemble (set by :meth:`with_members`; None: every member shares the
    #: scalar above). member_friction (E,) N·m·s replaces ``friction``; member_field (E,3) T replaces ``field``.
    member_friction: np.ndarray | None = None
    member_field: np.ndarray | None = None
    #: (B,) bool: the body's centre of mass moves (free body with ``translate``; theory §7). Its centre of
    #: rotation is then the state's position x (E,B,3), starting at ``pivot``, with momentum p = M·velocity0.
    translating: np.ndarray | None = None
    velocity0: np.ndarray | None = None    # (B,3) m/s, lab; zero for bodies that do not translate
    #: (B,) the pivot's :class:`~pem_physics.model.motion.TabulatedMotion` of each body (None: a fixed pivot), or
    #: None when no pivot moves. A moving pivot is the body's centre of rotation at each time, and the inertial
    #: force −M·a_pivot acts at its centre of mass (an extra uniform "gravity" −a_pivot for that body).
    pivot_motions: list | None = None

    def __post_init__(self):
        B = len(self.names)
        if self.translating is None:
            self.translating = np.zeros(B, dtype=bool)
        if self.velocity0 is None:
            self.velocity0 = np.zeros((B, 3))

    @property
    def any_translating(self) -> bool:
        return bool(self.translating.any())

    @property
    def bodies_coupled(self) -> bool:
        """Whether moving bodies act on each other: dipoles on two or more of them (fixed magnets, fields and
        gravity act on each body alone; contacts are the contact model's)."""
        return len(set(self.owner.tolist())) > 1

    @property
    def moving_pivots(self) -> bool:
        """Whether some pivot follows a motion (:attr:`pivot_motions`)."""
        return self.pivot_motions is not None

    @property
    def tabulated(self) -> bool:
        """Whether a pivot or a driven magnet follows a tabulated motion."""
        return self.moving_pivots or any(isinstance(b.motion, TabulatedMotion) for b in self.src_bodies)

    @property
    def driven(self) -> bool:
        """Whether the potential energy depends on time explicitly (driven magnets, moving pivots, a rotating
        field): the drivers then do work on the bodies (:func:`.torques.evaluate`'s ``power``)."""
        return self.moving_pivots or not self.static_sources or self.rotating_field is not None

    def _pivot_rows(self, t, order: int) -> np.ndarray:
        """(B,3): each moving pivot's position (order 0), velocity, acceleration or jerk (3) at t; 0 elsewhere;
        (N,B,3) at N times t (N,)."""
        out = np.zeros(np.shape(t) + (self.n_bodies, 3))
        for b, m in enumerate(self.pivot_motions):
            if m is not None:
                out[..., b, :] = (m.position, m.velocity, m.acceleration, m.jerk)[order](t)
        return out

    def centres(self, t: float, X: np.ndarray | None = None) -> np.ndarray:
        """Centres of rotation (…,B,3) m at time t: ``X`` (default the pivots) with each moving pivot's position."""
        c = self.pivot if X is None else X
        if self.pivot_motions is None:
            return c
        moves = self.__dict__.get("_moves")
        if moves is None:   # (B,1) which pivots move: made once
            moves = self.__dict__["_moves"] = np.array([m is not None for m in self.pivot_motions])[:, None]
        return np.where(moves, self._pivot_rows(t, 0), c)

    def pivot_velocity(self, t: float) -> np.ndarray:
        """(B,3) m/s: each pivot's velocity at t (zero for fixed ones)."""
        return np.zeros((self.n_bodies, 3)) if self.pivot_motions is None else self._pivot_rows(t, 1)

    def pivot_acceleration(self, t: float) -> np.ndarray:
        """(B,3) m/s²: each pivot's acceleration at t (zero for fixed ones)."""
        return np.zeros((self.n_bodies, 3)) if self.pivot_motions is None else self._pivot_rows(t, 2)

    def pivot_jerk(self, t: float) -> np.ndarray:
        """(B,3) m/s³: the rate of change of each pivot's acceleration at t."""
        return np.zeros((self.n_bodies, 3)) if self.pivot_motions is None else self._pivot_rows(t, 3)

    @property
    def per_member(self) -> bool:
        """True when some parameter differs between ensemble members (member_friction or member_field set).

        Code that assumes one value for the whole ensemble must check this (the compiled kernels
        take friction and field per member).
        """
        return self.member_friction is not None or self.member_field is not None

    def with_members(self, friction: np.ndarray | None = None, field: np.ndarray | None = None) -> System:
        """A copy whose ensemble members have their own friction (E,) N·m·s and/or uniform field (E,3) T.

        The arrays are not validated here (see :meth:`pem_physics.engine.simulate.Ensemble.arrays`).
        """
        return replace(self, member_friction=None if friction is None else np.asarray(friction, dtype=float),
                       member_field=None if field is None else np.asarray(field, dtype=float))

    @property
    def has_friction(self) -> bool:
        """Whether any member feels pivot friction (the scalar fast paths skip it otherwise)."""
        return self.member_friction is not None or self.friction != 0.0

    def damping(self, w: np.ndarray) -> np.ndarray:
        """c·ω (E,B,3) N·m for angular velocities w (E,B,3) rad/s: the pivot friction torque is −c·ω."""
        if self.member_friction is None:
            return self.friction * w
        return self.member_friction[:, None, None] * w

    def pair_plan(self) -> PairPlan:
        plan = self.__dict__.get("_pair_plan")
        if plan is None:
            plan = self.__dict__["_pair_plan"] = PairPlan(self.owner, len(self.src_pos), self.n_bodies)
        return plan

    @property
    def n_bodies(self) -> int:
        return len(self.names)

    @property
    def n_dipoles(self) -> int:
        return len(self.owner)

    def hinge_inertia(self, U: np.ndarray) -> np.ndarray:
        """J = a·I_lab·a (…,B) about each hinge axis (constant while turning about a)."""
        a_body = np.einsum("...bij,bj->...bi", U, self.hinge_axis)
        return np.einsum("...bi,bij,...bj->...b", a_body, self.kin_body.inertia, a_body)

    def external_field(self, t: float) -> np.ndarray:
        """Uniform external field B(t) T: (3,), or (E,1,3) with per-member fields (broadcasts over dipoles)."""
        B = self.field if self.member_field is None else self.member_field[:, None, :]
        rf = self.rotating_field
        if rf is not None:
            ph = rf.angular_velocity * t + rf.phase
            B = B + np.asarray(rf.b1) * np.cos(ph) + np.asarray(rf.b2) * np.sin(ph)
        return B

    @property
    def static_sources(self) -> bool:
        """True when no fixed or driven dipole moves (their fields do not depend on time)."""
        return all(b.motion is None for b in self.src_bodies)

    def sources_and_rates(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Lab positions, moments (S,3) of the fixed and driven dipoles at t and their rates of change (S,3):
        ṙ = v + ω × (r − o), ṁ = ω × m for a body whose origin o moves at v and which turns at ω."""
        last = self.__dict__.get("_rates")
        if last is not None and last[0] == t:   # the torque and the drivers' power of one evaluation share them
            return last[1]
        r, m = self.sources(t)
        rdot, mdot = np.zeros_like(r), np.zeros_like(m)
        for k, body in enumerate(self.src_bodies):
            if body.motion is None:
                continue
            sel = self.src_owner == k
            origin, _ = source_placement(body, t)
            v, w = source_rates(body, t)
            rdot[sel] = v + cross(w, r[sel] - origin)
            mdot[sel] = cross(w, m[sel])
        out = (r, m, rdot, mdot)
        self.__dict__["_rates"] = (t, out)
        return out

    def sources(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Lab positions and moments (S,3) of the fixed and driven dipoles at time t (exact kinematics)."""
        static = self.static_sources
        if static and "_static_sources" in self.__dict__:
            return self.__dict__["_static_sources"]
        if static:
            t = 0.0         # they do not move: any time (or the records' times at once) places them alike
        last = self.__dict__.get("_sources_at")
        if last is not None and last[0] == t:
            return last[1]
        r = np.empty_like(self.src_pos)
        m = np.empty_like(self.src_mom)
        for k, body in enumerate(self.src_bodies):
            sel = self.src_owner == k
            origin, U = source_placement(body, t)
            r[sel] = origin + self.src_pos[sel] @ U
            m[sel] = self.src_mom[sel] @ U
        if static:
            self.__dict__["_static_sources"] = (r, m)
        else:   # the same time is asked for again within one evaluation (torques, the drivers' power, records)
            self.__dict__["_sources_at"] = (t, (r, m))
        return r, m


def orbit_terms(motion) -> tuple:
    """(centre (3,) m, r₁ (3,) m, r₂ (3,) m, ω rad/s, φ₀ rad, unit axis n̂ (3,)) of a motion that turns the body
    uniformly while its origin runs round an ellipse — PEM's elliptic orbit (n̂ = r₁×r₂/|r₁×r₂|) or a
    :class:`~pem_physics.model.analytic.UniformRotation` (a circle of any radius, phase 0): the origin at
    centre + r₁ cos(φ₀ + ωt) + r₂ sin(φ₀ + ωt), the orientation U₀ R(n̂, ωt)ᵀ."""
    if isinstance(motion, UniformRotation):
        centre, r1, r2, n = motion.orbit()
        return centre, r1, r2, float(motion.angular_velocity), 0.0, n
    n = cross(motion.r1, motion.r2)
    return (motion.center, motion.r1, motion.r2, float(motion.angular_velocity), float(motion.phase),
            n / np.linalg.norm(n))


def spin(motion) -> np.ndarray:
    """The angular velocity ω·n̂ (3,) rad/s, lab, of a body on :func:`orbit_terms`' motion (as PEM forms it)."""
    if isinstance(motion, UniformRotation):
        return float(motion.angular_velocity) * motion.orbit()[3]
    n = cross(motion.r1, motion.r2)
    return motion.angular_velocity * n / np.linalg.norm(n)


def source_placement(body, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Origin (3,) and orientation (3,3) of a fixed or driven body at time t."""
    motion = body.motion
    if motion is None:
        return body.position, body.orientation
    if isinstance(motion, ConstantVelocity):
        return body.position + motion.velocity * t, body.orientation
    if isinstance(motion, (EllipticOrbit, UniformRotation)):
        centre, r1, r2, w, phase, n = orbit_terms(motion)
        ph = phase + w * t
        origin = centre + r1 * np.cos(ph) + r2 * np.sin(ph)
        return origin, body.orientation @ axis_angle_matrix(n, w * t).T
    if isinstance(motion, Oscillation):
        return motion.position(t), body.orientation
    if isinstance(motion, TabulatedMotion):
        U = motion.orientation(t)
        return motion.position(t), body.orientation if U is None else U
    raise TypeError(f"unknown motion {motion!r}")


def source_rates(body, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Velocity (3,) m/s of the origin and angular velocity (3,) rad/s (lab) of a fixed or driven body at t."""
    motion = body.motion
    if motion is None:
        return np.zeros(3), np.zeros(3)
    if isinstance(motion, ConstantVelocity):
        return np.asarray(motion.velocity, dtype=float), np.zeros(3)
    if isinstance(motion, (EllipticOrbit, UniformRotation)):
        centre, r1, r2, w, phase, _ = orbit_terms(motion)
        ph = phase + w * t
        return w * (-r1 * np.sin(ph) + r2 * np.cos(ph)), spin(motion)
    if isinstance(motion, Oscillation):
        return motion.velocity(t), np.zeros(3)
    if isinstance(motion, TabulatedMotion):
        return motion.velocity(t), motion.angular_velocity(t)
    raise TypeError(f"unknown motion {motion!r}")


class PemSourceDriver:
    """PEM's own bookkeeping of driven bodies, reproduced for ``pem-*`` parity.

    PEM moves driven bodies once per step, after all RK stages, and turns an
    elliptically driven body by an explicit Euler step plus its approximate
    re-orthonormalisation. Positions during step i (1-based) are those after
    i updates (one at start-up): orbiting bodies sit at phase φ₀ + i·ω·dt;
    constant-velocity ones at PEM's clock after the previous step, which is
    i·dt for RK4 (0 during the first step) and (i − 1)·dt for Euler (PEM's
    RK4 advances its clock, set to i·dt at the start of step i, by dt inside
    the step; its Euler does not). The integrator sets ``time`` after each step.
    """

    def __init__(self, system: System, dt: float):
        self.system = system
        self.dt = dt
        self.frames = [np.array(b.orientation) for b in system.src_bodies]
        self.updates = 0
        self.time = 0.0
        self.update()

    def update(self) -> None:
        self.updates += 1
        for k, body in enumerate(self.system.src_bodies):
            m = body.motion
            if isinstance(m, (EllipticOrbit, UniformRotation)):
                w = spin(m)
                U = self.frames[k]
                self.frames[k] = pem_correct(U + cross(w, U) * self.dt)

    def current(self) -> tuple[np.ndarray, np.ndarray]:
        sys = self.system
        r = np.empty_like(sys.src_pos)
        mom = np.empty_like(sys.src_mom)
        for k, body in enumerate(sys.src_bodies):
            sel = sys.src_owner == k
            m = body.motion
            U = self.frames[k]
            if isinstance(m, (EllipticOrbit, UniformRotation)):
                centre, r1, r2, rate, phase, _ = orbit_terms(m)
                th = phase + self.updates * rate * self.dt
                origin = centre + r1 * np.cos(th) + r2 * np.sin(th)
            elif isinstance(m, ConstantVelocity):
                origin = body.position + m.velocity * self.time
            elif isinstance(m, (TabulatedMotion, Oscillation)):  # at PEM's clock, as a constant-velocity body is
                origin, U = source_placement(body, self.time)
            else:
                origin = body.position
            r[sel] = origin + sys.src_pos[sel] @ U
            mom[sel] = sys.src_mom[sel] @ U
        return r, mom


def principal_frame(I: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ascending moments (…,3) and right-handed principal axes (…,3,3) (columns) of I."""
    lam, N = np.linalg.eigh(I)
    N = N.copy()
    N[np.linalg.det(N) < 0, :, 2] *= -1
    return lam, N


def compile_system(scene: Scene) -> System:
    """Arrays of a validated scene (call ``scene.checked()`` first)."""
    moving = [i for i, b in enumerate(scene.bodies) if b.moving]
    names, pivots, masses, coms, tensors, U0s, w0s, hinged, axes_h = [], [], [], [], [], [], [], [], []
    translating, v0s, pivot_motions = [], [], []
    owner, dpos, dmom = [], [], []
    for k, i in enumerate(moving):
        body = scene.bodies[i]
        mp = body.resolved_mass_properties(f"bodies[{i}]")
        com = np.asarray(mp.center_of_mass, dtype=float)
        U = np.asarray(body.orientation, dtype=float)
        if body.role == "free":
            # A free body turns about its centre of mass: move the reference point there.
            pivot = np.asarray(body.position) + com @ U
            I = np.asarray(mp.inertia, dtype=float)
            shift = com
            com = np.zeros(3)
        else:
            pivot = np.asarray(body.position, dtype=float)
            I = np.asarray(mp.inertia_about(np.zeros(3)), dtype=float)
            shift = np.zeros(3)
        names.append(body.name)
        pivots.append(pivot)
        masses.append(float(mp.mass))
        coms.append(com)
        tensors.append(0.5 * (I + I.T))
        U0s.append(U)
        w0s.append(np.asarray(body.angular_velocity, dtype=float))
        hinged.append(body.hinge is not None)
        translating.append(body.translating)
        pivot_motions.append(body.pivot_motion)
        v0s.append(np.asarray(body.velocity, dtype=float) if body.translating else np.zeros(3))
        axes_h.append(np.zeros(3) if body.hinge is None else np.asarray(body.hinge, dtype=float))
        for d in body.dipoles:
            owner.append(k)
            dpos.append(np.asarray(d.position) - shift)
            dmom.append(np.asarray(d.moment))
    src_bodies, src_owner, spos, smom = [], [], [], []
    for b in scene.bodies:
        if b.moving or not b.dipoles:
            continue
        for d in b.dipoles:
            src_owner.append(len(src_bodies))
            spos.append(np.asarray(d.position))
            smom.append(np.asarray(d.moment))
        src_bodies.append(b)

    inertia = np.array(tensors)
    lam, N = principal_frame(inertia)
    lam_max = lam.max(axis=-1, keepdims=True)
    live = lam > ZERO_MOMENT * lam_max
    inv_lam = np.where(live, 1.0 / np.where(live, lam, 1.0), 0.0)
    com = np.array(coms)
    dpos = np.array(dpos).reshape(-1, 3)
    dmom = np.array(dmom).reshape(-1, 3)
    owner = np.array(owner, dtype=np.intp)
    kin_body = Kinematics(com, dpos, dmom, inertia, pseudo_inverse(inertia, rtol=ZERO_MOMENT))
    Nd = N[owner]
    kin_principal = Kinematics(
        np.einsum("bji,bj->bi", N, com),
        np.einsum("dji,dj->di", Nd, dpos),
        np.einsum("dji,dj->di", Nd, dmom),
        lam[..., None] * np.eye(3),
        inv_lam[..., None] * np.eye(3),
    )
    return System(
        names=names,
        scene_index=np.array(moving, dtype=np.intp),
        pivot=np.array(pivots),
        mass=np.array(masses),
        kin_body=kin_body,
        kin_principal=kin_principal,
        moments=lam,
        inv_moments=inv_lam,
        axes=N,
        hinged=np.array(hinged, dtype=bool),
        hinge_axis=np.array(axes_h),
        U0=np.array(U0s),
        omega0=np.array(w0s),
        owner=owner,
        src_owner=np.array(src_owner, dtype=np.intp),
        src_pos=np.array(spos).reshape(-1, 3),
        src_mom=np.array(smom).reshape(-1, 3),
        src_bodies=src_bodies,
        gravity=np.asarray(scene.gravity, dtype=float),
        field=np.asarray(scene.field, dtype=float),
        rotating_field=scene.rotating_field,
        mu0=float(scene.mu0),
        friction=float(scene.friction),
        box=None if scene.periodic_box is None else np.asarray(scene.periodic_box, dtype=float),
        translating=np.array(translating, dtype=bool),
        velocity0=np.array(v0s).reshape(-1, 3),
        pivot_motions=pivot_motions if any(m is not None for m in pivot_motions) else None,
    )
