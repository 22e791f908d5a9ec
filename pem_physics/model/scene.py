"""The scene model: bodies, dipoles, fields and run settings (SI units).

A :class:`Scene` is plain data built in Python, from a TOML scene file
(:mod:`pem_physics.io.scenefile`) or from a PEM UDF file (:mod:`pem_physics.io.udf`).
:meth:`Scene.validate` checks every value and names the offending item, e.g.
``bodies[2].dipoles[0].moment: expected 3 numbers``.

Body coordinates: every body has its own frame. Its origin is the body's
``position`` in the lab (for a pendulum: the pivot) and its axes are the rows
u1, u2, u3 of ``orientation``. Shapes, centres of mass and dipoles are given in
body coordinates.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dc_field

import numpy as np

from ..errors import ValidationError
from . import validate as v
from .analytic import Oscillation, UniformRotation
from .motion import TabulatedMotion

ROLES = ("pendulum", "free", "fixed", "driven")
METHODS = ("splitting4", "splitting2", "pem-rk4", "pem-euler", "dop853")
DEFAULT_METHOD = "splitting4"
MU0 = 4e-7 * math.pi
STANDARD_GRAVITY = 9.80665


@dataclass(frozen=True)
class Dipole:
    """A point magnetic dipole fixed to a body.

    position: (3,) m, body coordinates. moment: (3,) A·m², body coordinates.
    """

    position: Sequence[float] = (0.0, 0.0, 0.0)
    moment: Sequence[float] = (0.0, 0.0, 1.0)

    def checked(self, path: str) -> Dipole:
        return Dipole(v.vector(self.position, f"{path}.position"), v.vector(self.moment, f"{path}.moment"))


@dataclass(frozen=True)
class ConstantVelocity:
    """Driven motion: the body translates, position(t) = position₀ + velocity·t (m/s)."""

    velocity: Sequence[float] = (0.0, 0.0, 0.0)

    def checked(self, path: str) -> ConstantVelocity:
        return ConstantVelocity(v.vector(self.velocity, f"{path}.velocity"))


@dataclass(frozen=True)
class EllipticOrbit:
    """Driven motion (PEM's ``ellipticRotation``).

    position(t) = center + r1 cos(φ₀ + ωt) + r2 sin(φ₀ + ωt) (m), and the body
    turns about n = r1×r2/|r1×r2| at the same rate ω (rad/s), so a magnet on it
    keeps facing the same way relative to the orbit.
    """

    center: Sequence[float] = (0.0, 0.0, 0.0)
    r1: Sequence[float] = (1.0, 0.0, 0.0)
    r2: Sequence[float] = (0.0, 1.0, 0.0)
    angular_velocity: float = 1.0
    phase: float = 0.0

    def checked(self, path: str) -> EllipticOrbit:
        r1 = v.vector(self.r1, f"{path}.r1")
        r2 = v.vector(self.r2, f"{path}.r2")
        if not np.linalg.norm(np.cross(r1, r2)) > 0:
            raise ValidationError(f"{path}.r2", "r1 and r2 must not be parallel (they span the orbit plane)")
        return EllipticOrbit(v.vector(self.center, f"{path}.center"), r1, r2,
                             v.number(self.angular_velocity, f"{path}.angular_velocity"),
                             v.phase(self.phase, f"{path}.phase"))


@dataclass(frozen=True)
class RotatingField:
    """Elliptically rotating uniform field B(t) = b1 cos(ωt + φ) + b2 sin(ωt + φ) (T)."""

    b1: Sequence[float] = (1e-3, 0.0, 0.0)
    b2: Sequence[float] = (0.0, 1e-3, 0.0)
    angular_velocity: float = 1.0
    phase: float = 0.0

    def checked(self, path: str) -> RotatingField:
        return RotatingField(v.vector(self.b1, f"{path}.b1"), v.vector(self.b2, f"{path}.b2"),
                             v.number(self.angular_velocity, f"{path}.angular_velocity"),
                             v.phase(self.phase, f"{path}.phase"))


@dataclass(frozen=True)
class ContactSphere:
    """A sphere that takes part in contacts (theory §7): ``center`` (3,) m in body coordinates, radius m.

    Contact spheres are collision geometry only; the body's mass and inertia come from its shapes.
    """

    center: Sequence[float] = (0.0, 0.0, 0.0)
    radius: float = 0.01

    def checked(self, path: str) -> ContactSphere:
        r = v.number(self.radius, f"{path}.radius")
        if not r > 0:
            raise ValidationError(f"{path}.radius", f"expected > 0, got {self.radius!r}")
        return ContactSphere(v.vector(self.center, f"{path}.center"), r)


@dataclass(frozen=True)
class ContactRim:
    """A circle that stands on a table (``contact_model = "surface"``): a coin's or a disc's edge. ``center`` (3,)
    m and ``axis`` (3,) its normal, in body coordinates; ``radius`` m. Collision geometry only."""

    center: Sequence[float] = (0.0, 0.0, 0.0)
    axis: Sequence[float] = (0.0, 0.0, 1.0)
    radius: float = 0.01

    def checked(self, path: str) -> ContactRim:
        r = v.number(self.radius, f"{path}.radius")
        if not r > 0:
            raise ValidationError(f"{path}.radius", f"expected > 0, got {self.radius!r}")
        return ContactRim(v.vector(self.center, f"{path}.center"), v.vector(self.axis, f"{path}.axis", unit=True), r)


#: How contacts are simulated: ``impacts`` (the contact driver: impacts between any bodies and walls, resting
#: contacts held frictionless) or ``surface`` (one free body on one plane wall in persistent contact that slides,
#: rolls and lifts off with friction: :mod:`pem_physics.engine.contact.surface`).
CONTACT_MODELS = ("impacts", "surface")
#: A wall's friction law in the surface model: Coulomb's (``contact_friction`` μ, dimensionless) or the tippe-top
#: literature's gliding friction F = −μ_g N u_t (``gliding_friction`` μ_g, s/m).
FRICTION_LAWS = ("coulomb", "viscous")


def pair_value(a: float | None, b: float | None, default: float) -> float:
    """A pair's coefficient (e or μ) from its two sides' own values, None where a side sets none: the smaller where
    both set one, the one set where one side does, else the scene's ``default`` — an unset side is not zero."""
    if a is None:
        return default if b is None else b
    return a if b is None else min(a, b)


def pair_source(a: float | None, b: float | None) -> str:
    """Which rule of :func:`pair_value` gives the pair's value: ``"both"`` (the smaller), ``"a"``, ``"b"`` or
    ``"scene"``."""
    if a is None:
        return "scene" if b is None else "b"
    return "a" if b is None else "both"


def restitution_value(e, path: str) -> float:
    """A coefficient of restitution as a float, or a ValidationError naming ``path`` when not in [0, 1]."""
    x = v.number(e, path)
    if not 0.0 <= x <= 1.0:
        raise ValidationError(path, f"expected 0 ≤ e ≤ 1, got {e!r}")
    return x


def contact_friction_value(mu, path: str) -> float:
    """A Coulomb friction coefficient μ of impacts as a float, or a ValidationError naming ``path`` when not a
    finite number ≥ 0."""
    x = v.number(mu, path)
    if not (0.0 <= x < float("inf")):
        raise ValidationError(path, f"expected a friction coefficient μ ≥ 0, got {mu!r}")
    return x


WALL_KINDS = ("plane", "sphere", "cylinder", "box")


@dataclass(frozen=True)
class StaticWall:
    """A static wall for contact spheres (theory §7, :mod:`pem_physics.engine.contact.walls`), SI units.

    kind ``plane``: through ``point`` (3,) m with ``normal`` (3,) into the allowed side;
    ``sphere``: ``center`` (3,) m, ``radius`` m; ``cylinder``: axis through ``point`` along
    ``direction`` (3,), ``radius`` m; ``box``: ``center``, ``half_sizes`` (3,) m, ``axes`` (3,3) rows
    = box axes in the lab (None: the lab axes). ``inside``: the sphere, cylinder or box is a
    container (True) or an obstacle (False). ``restitution``, ``contact_friction`` (μ of impacts): None
    for the scene's. ``friction_law`` (``contact_model = "surface"`` only): one of :data:`FRICTION_LAWS`, None for
    Coulomb's; ``gliding_friction`` μ_g (s/m) the gliding law's coefficient (it implies that law, and Coulomb's
    ``contact_friction`` is then refused). ``rolling_resistance``, ``spin_resistance`` (surface only): the lever
    arms δ_r,
    δ_s (m) of the couple −N(δ_r ω̂_t + δ_s sgn(ω_n) n) that resists a rolling contact's rotation; None: none.
    """

    kind: str = "plane"
    name: str = "wall"
    point: Sequence[float] = (0.0, 0.0, 0.0)
    normal: Sequence[float] = (0.0, 0.0, 1.0)
    center: Sequence[float] = (0.0, 0.0, 0.0)
    radius: float = 1.0
    direction: Sequence[float] = (0.0, 0.0, 1.0)
    half_sizes: Sequence[float] = (1.0, 1.0, 1.0)
    axes: Sequence[Sequence[float]] | None = None
    inside: bool = True
    restitution: float | None = None
    contact_friction: float | None = None
    friction_law: str | None = None
    gliding_friction: float | None = None
    rolling_resistance: float | None = None
    spin_resistance: float | None = None

    def checked(self, path: str) -> StaticWall:
        _name(self.name, f"{path}.name")
        kind = v.choice(self.kind, f"{path}.kind", WALL_KINDS)
        if not isinstance(self.inside, bool):
            raise ValidationError(f"{path}.inside", f"expected true or false, got {self.inside!r}")
        out = replace(self, kind=kind,
                      point=v.vector(self.point, f"{path}.point"),
                      normal=v.vector(self.normal, f"{path}.normal", unit=True),
                      center=v.vector(self.center, f"{path}.center"),
                      direction=v.vector(self.direction, f"{path}.direction", unit=True),
                      half_sizes=v.vector(self.half_sizes, f"{path}.half_sizes"),
                      axes=None if self.axes is None else v.rotation(self.axes, f"{path}.axes"),
                      restitution=None if self.restitution is None
                      else restitution_value(self.restitution, f"{path}.restitution"),
                      contact_friction=None if self.contact_friction is None
                      else contact_friction_value(self.contact_friction, f"{path}.contact_friction"),
                      friction_law=None if self.friction_law is None
                      else v.choice(self.friction_law, f"{path}.friction_law", FRICTION_LAWS),
                      gliding_friction=None if self.gliding_friction is None
                      else v.number(self.gliding_friction, f"{path}.gliding_friction", nonnegative=True),
                      rolling_resistance=None if self.rolling_resistance is None
                      else v.number(self.rolling_resistance, f"{path}.rolling_resistance", nonnegative=True),
                      spin_resistance=None if self.spin_resistance is None
                      else v.number(self.spin_resistance, f"{path}.spin_resistance", nonnegative=True))
        if kind in ("sphere", "cylinder"):
            r = v.number(self.radius, f"{path}.radius")
            if not r > 0:
                raise ValidationError(f"{path}.radius", f"expected > 0, got {self.radius!r}")
            out = replace(out, radius=r)
        if kind == "box" and not np.all(out.half_sizes > 0):
            raise ValidationError(f"{path}.half_sizes", f"expected 3 numbers > 0, got {out.half_sizes.tolist()}")
        return out


def _checked_law(w: StaticWall, path: str) -> StaticWall:
    """``w`` with its friction law resolved: ``gliding_friction`` implies the gliding law; each law has its own
    coefficient (Coulomb's μ is dimensionless, the gliding μ_g in s/m), never the other's."""
    law = w.friction_law
    if w.gliding_friction is not None:
        if law == "coulomb":
            raise ValidationError(f"{path}.gliding_friction", "a Coulomb table takes contact_friction (μ, "
                                  "dimensionless): remove gliding_friction, or set friction_law = \"viscous\"")
        law = "viscous"
    if law == "viscous":
        if w.contact_friction is not None:
            raise ValidationError(f"{path}.contact_friction", "a gliding (viscous) table's friction is "
                                  "gliding_friction (μ in s/m), not Coulomb's dimensionless contact_friction: "
                                  "rename the key to gliding_friction (or set friction_law = \"coulomb\")")
        if w.gliding_friction is None:
            raise ValidationError(f"{path}.gliding_friction", "friction_law = \"viscous\" needs the table's "
                                  "gliding friction μ (s/m): set gliding_friction")
    return replace(w, friction_law=law)


#: Characters that break a line or reorder the text around them where a name is shown (a CSV header, a terminal,
#: a spreadsheet): the C1 controls (U+0085 is a line break to Python's splitlines and to XML), the line and
#: paragraph separators, and Unicode's bidirectional embeddings, overrides and isolates (U+202E shows "bob.q_w" as
#: "w_q.bob" and every column after it reversed).
UNSHOWN = frozenset([*map(chr, range(0x80, 0xA0)), "\u2028", "\u2029", *map(chr, range(0x202A, 0x202F)),
                      *map(chr, range(0x2066, 0x206A))])


def _name(value, path: str) -> str:
    """A name (:func:`.validate.name`) that shows as it is: not only spaces, and none of the characters that break
    a line or reorder the text around them (:data:`UNSHOWN`)."""
    v.name(value, path)
    if not value.strip():
        raise ValidationError(path, f"a name of {len(value)} space(s) only: give a name that shows in the outputs")
    bad = next((c for c in value if c in UNSHOWN), None)
    if bad is not None:
        raise ValidationError(path, f"the character U+{ord(bad):04X} ({unicodedata.name(bad, 'a control character')}) "
                                    f"in the name {ascii(value[:40])} breaks the line or reverses the text where the "
                                    "name is shown (CSV headers, terminals): use printable characters")
    return value


def name_key(name: str) -> str:
    """The form in which names of bodies and walls are compared: Unicode's NFC. "é" as one code point and as "e"
    plus a combining accent print alike, so they are one name (a duplicate, or the same item in a pair)."""
    return unicodedata.normalize("NFC", name)


def _spelt(first: str, again: str) -> str:
    """The note of a name given again spelt with other code points (nothing when it is spelt alike)."""
    if first == again:
        return ""
    return (f"; the two print alike but are encoded differently ({ascii(first)} and {ascii(again)}: an accented "
            "letter as one code point or as a letter plus a combining accent): give them different names")


@dataclass(frozen=True)
class PairRestitution:
    """The restitution e of contacts between two named items (bodies or walls), overriding theirs."""

    names: Sequence[str] = ("", "")
    restitution: float = 1.0


@dataclass
class Body:
    """One rigid body.

    role: ``pendulum`` rotates about its pivot ``position``; ``free`` rotates
    about its centre of mass; ``fixed`` magnets stay put; ``driven`` magnets
    follow ``motion``. Fixed and driven bodies only carry dipoles.
    translate: a free body whose centre of mass also moves (6 DOF: gravity and dipole forces push it;
    theory §7); False keeps it turning about a fixed centre of mass. velocity: (3,) m/s, lab, the initial
    velocity of the centre of mass of a translating body.
    shapes: inertia shapes (:mod:`pem_physics.model.inertia`) in body coordinates;
    mass_properties: an override (PEM's ``analysis``) used instead of the shapes.
    hinge: a lab-frame axis; the body then only turns about it (1 DOF).
    motion: a driven body's: constant velocity, PEM's elliptic orbit, an :class:`.analytic.Oscillation` or
    :class:`.analytic.UniformRotation` (exact), or a :class:`.motion.TabulatedMotion` (sampled positions and
    orientations, splined), which then places the body (``position`` and, with orientations, ``orientation`` are
    its start).
    pivot_motion: a pendulum's pivot following an Oscillation, a UniformRotation (the pivot runs round the circle)
    or a TabulatedMotion (positions only): the body turns about the moving pivot, the inertial force −M·a_pivot
    acting at its centre of mass (theory §3, moving pivots).
    """

    name: str = "body"
    role: str = "pendulum"
    position: Sequence[float] = (0.0, 0.0, 0.0)
    orientation: Sequence[Sequence[float]] = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    angular_velocity: Sequence[float] = (0.0, 0.0, 0.0)
    shapes: Sequence = ()
    mass_properties: object | None = None
    dipoles: Sequence[Dipole] = ()
    hinge: Sequence[float] | None = None
    motion: ConstantVelocity | EllipticOrbit | Oscillation | UniformRotation | TabulatedMotion | None = None
    pivot_motion: Oscillation | UniformRotation | TabulatedMotion | None = None
    color: Sequence[float] | None = None
    #: contact spheres (body coordinates) and the body's own restitution and friction coefficient μ of impacts
    #: (None: the scene's)
    contacts: Sequence[ContactSphere | ContactRim] = ()
    restitution: float | None = None
    contact_friction: float | None = None
    translate: bool = False
    velocity: Sequence[float] = (0.0, 0.0, 0.0)

    @property
    def moving(self) -> bool:
        return self.role in ("pendulum", "free")

    @property
    def translating(self) -> bool:
        """Whether the body's centre of mass moves (a free body with ``translate``)."""
        return self.role == "free" and bool(self.translate)

    def resolved_mass_properties(self, path: str = ""):
        """The mass properties the simulation uses (override, else the sum of the shapes)."""
        from . import inertia

        if self.mass_properties is not None:
            mp = self.mass_properties
            if not isinstance(mp, inertia.MassProperties):
                raise ValidationError(f"{path}.mass_properties", "expected a MassProperties")
            v.number(mp.mass, f"{path}.mass_properties.mass", nonnegative=True)
            v.vector(mp.center_of_mass, f"{path}.mass_properties.center_of_mass")
            I = np.asarray(mp.inertia, dtype=float)
            if I.shape != (3, 3) or not np.all(np.isfinite(I)):
                raise ValidationError(f"{path}.mass_properties.inertia", "expected a finite 3×3 tensor")
            if not np.allclose(I, I.T, rtol=1e-12, atol=1e-15 * max(1.0, float(np.abs(I).max()))):
                raise ValidationError(f"{path}.mass_properties.inertia", "tensor is not symmetric")
            return mp
        if not self.shapes:
            raise ValidationError(f"{path}.shapes", f"a {self.role} body needs shapes or mass_properties")
        parts = []
        for i, shape in enumerate(self.shapes):
            try:
                parts.append(shape.mass_properties())
            except ValidationError as err:
                raise err.at(f"{path}.shapes[{i}]") from err
        return inertia.combine(parts)

    def checked(self, path: str) -> Body:
        """A copy with every value validated and converted to numpy arrays."""
        _name(self.name, f"{path}.name")
        v.choice(self.role, f"{path}.role", ROLES)
        _listed(self.shapes, f"{path}.shapes", "shape")
        _listed(self.dipoles, f"{path}.dipoles", "Dipole")
        _listed(self.contacts, f"{path}.contacts", "ContactSphere")
        for i, shape in enumerate(self.shapes):   # a mesh's name reaches files (the scene writer, add-on objects)
            if getattr(shape, "name", None) is not None:
                _name(shape.name, f"{path}.shapes[{i}].name")
        if not isinstance(self.translate, (bool, np.bool_)):
            raise ValidationError(f"{path}.translate", f"expected true or false, got {self.translate!r}")
        if self.translate and self.role != "free":
            raise ValidationError(f"{path}.translate", f"only free bodies translate (role is {self.role!r})")
        out = replace(
            self,
            position=v.vector(self.position, f"{path}.position"),
            orientation=v.rotation(self.orientation, f"{path}.orientation"),
            angular_velocity=v.vector(self.angular_velocity, f"{path}.angular_velocity"),
            dipoles=tuple(d.checked(f"{path}.dipoles[{i}]") if isinstance(d, Dipole)
                          else _bad(f"{path}.dipoles[{i}]", "expected a Dipole")
                          for i, d in enumerate(self.dipoles)),
            hinge=None if self.hinge is None else v.vector(self.hinge, f"{path}.hinge", unit=True),
            contacts=tuple(c.checked(f"{path}.contacts[{i}]") if isinstance(c, (ContactSphere, ContactRim))
                           else _bad(f"{path}.contacts[{i}]", "expected a ContactSphere or a ContactRim")
                           for i, c in enumerate(self.contacts)),
            restitution=None if self.restitution is None
            else restitution_value(self.restitution, f"{path}.restitution"),
            contact_friction=None if self.contact_friction is None
            else contact_friction_value(self.contact_friction, f"{path}.contact_friction"),
            translate=bool(self.translate),
            velocity=v.vector(self.velocity, f"{path}.velocity"),
        )
        if np.any(out.velocity) and not out.translating:
            raise ValidationError(f"{path}.velocity", "only a translating body (a free body with translate = true) "
                                  "has a velocity")
        if out.translating and self.hinge is not None:
            raise ValidationError(f"{path}.hinge", "a translating body cannot be hinged (a hinge is a fixed axis)")
        if out.contacts and not (self.role in ("pendulum", "fixed") or out.translating):
            raise ValidationError(f"{path}.contacts", "only pendulum, fixed and translating free bodies "
                                  f"(translate = true) take part in contacts (role is {self.role!r}, not translating)")
        if self.role == "driven":
            if not isinstance(self.motion, DRIVEN_MOTIONS):
                raise ValidationError(f"{path}.motion", "a driven body needs a ConstantVelocity, EllipticOrbit, "
                                      "Oscillation, UniformRotation or TabulatedMotion motion")
            if isinstance(self.motion, (Oscillation, UniformRotation)):
                out.motion = self.motion.checked(f"{path}.motion", out.position)
                if isinstance(out.motion, Oscillation):   # the body's position is the oscillation's at t = 0
                    out.position = out.motion.position(0.0)
            else:
                out.motion = self.motion.checked(f"{path}.motion")
            if isinstance(out.motion, TabulatedMotion):
                out.position = out.motion.position(out.motion.start)
                if out.motion.orientations is not None:
                    out.orientation = out.motion.orientation(out.motion.start)
        elif self.motion is not None:
            raise ValidationError(f"{path}.motion", f"only driven bodies have a motion (role is {self.role!r})")
        if self.pivot_motion is not None:
            self._check_pivot_motion(out, path)
        if out.moving:
            mp = self.resolved_mass_properties(path)
            if not mp.mass > 0:
                raise ValidationError(f"{path}.mass", f"a {self.role} body needs a positive mass, got {mp.mass}")
            check_not_too_light(mp.mass, f"{path}.mass")
            I = np.asarray(mp.inertia_about(np.zeros(3)) if self.role == "pendulum" else mp.inertia, dtype=float)
            if not np.all(np.isfinite(I)):
                raise ValidationError(f"{path}.inertia", "the inertia tensor is not finite (sizes or masses too large)")
            largest = np.max(np.linalg.eigvalsh(I))
            if not largest > 0:
                raise ValidationError(f"{path}.inertia", "the inertia tensor is zero: the body cannot rotate")
            if largest < MIN_INERTIA:
                raise ValidationError(f"{path}.inertia", f"its largest moment {largest:.3g} kg·m² is too small to "
                                                         f"simulate (its angular accelerations overflow): give at "
                                                         f"least {MIN_INERTIA:g} kg·m²")
            _check_contact_reach(out, mp, path)
        elif self.hinge is not None:
            raise ValidationError(f"{path}.hinge",
                                  f"only pendulum and free bodies can be hinged (role is {self.role!r})")
        if self.role in ("fixed", "driven") and np.any(out.angular_velocity):
            raise ValidationError(f"{path}.angular_velocity", f"a {self.role} body has no angular velocity of its own")
        return out

    def _check_pivot_motion(self, out, path: str) -> None:
        """Check ``pivot_motion`` into ``out`` (the checked body), placing the body at the pivot's start."""
        m = self.pivot_motion
        if self.role != "pendulum":
            raise ValidationError(f"{path}.pivot_motion", f"only a pendulum has a pivot to move (role is "
                                                          f"{self.role!r})")
        if not isinstance(m, (Oscillation, UniformRotation, TabulatedMotion)):
            raise ValidationError(f"{path}.pivot_motion", "expected an Oscillation, a UniformRotation or a "
                                                          "TabulatedMotion (times and positions)")
        if isinstance(m, TabulatedMotion) and m.orientations is not None:
            raise ValidationError(f"{path}.pivot_motion.orientations", "a pivot is a point: give its positions "
                                                                       "only (a hinge keeps its lab axis)")
        if out.contacts:
            raise ValidationError(f"{path}.pivot_motion", "a pendulum with a moving pivot cannot have contact "
                                                          "spheres yet: remove its contacts or fix its pivot")
        if isinstance(m, TabulatedMotion):
            out.pivot_motion = m.checked(f"{path}.pivot_motion")
            out.position = out.pivot_motion.position(out.pivot_motion.start)
        else:
            out.pivot_motion = m.checked(f"{path}.pivot_motion", out.position)
            if isinstance(m, Oscillation):
                out.position = out.pivot_motion.position(0.0)


#: A contact shape's (sphere's or rim's) centre may lie at most this many times the body's size from its centre of
#: mass: a contact shape is part of the body, its centre a radius of gyration or two from the centre of mass (a
#: coin's edge: 1.4, a rod's end: 1.7), and a thousand leaves room for any lopsided body while a centre 1e90 m from a
#: 2 cm coin is refused (the add-on checks rims against the mesh; a scene file's shape has only the body's own size
#: to be checked against).
CONTACT_REACH = 1e3


def _check_contact_reach(out, mp, path: str) -> None:
    """Refuse a contact sphere or rim of the checked moving body ``out`` whose centre lies more than CONTACT_REACH
    times the body's size from its centre of mass (``mp``): the size (m) is the larger of its radius of gyration
    √(λ_max/m) about the centre of mass and its largest contact shape's radius."""
    if not out.contacts:
        return
    com = np.asarray(mp.center_of_mass, float)
    with np.errstate(all="ignore"):
        gyration = float(np.sqrt(max(float(np.max(np.linalg.eigvalsh(np.asarray(mp.inertia, float)))), 0.0)
                                 / float(mp.mass)))
    size = max(gyration, max(float(c.radius) for c in out.contacts))
    for k, c in enumerate(out.contacts):
        d = float(np.linalg.norm(np.asarray(c.center, float) - com))
        if not d <= CONTACT_REACH * size:
            what = "rim" if isinstance(c, ContactRim) else "sphere"
            raise ValidationError(f"{path}.contacts[{k}].center", f"the contact {what} #{k} of {out.name!r} is "
                                  f"centred {d:.3g} m from the body's centre of mass, beyond {CONTACT_REACH:g} times "
                                  f"the body's size ({size:.3g} m: its radius of gyration or largest contact "
                                  f"radius); a contact {what} is part of the body: give its centre on the body, in "
                                  "body coordinates (m)")


#: The motions a driven body may follow.
DRIVEN_MOTIONS = (ConstantVelocity, EllipticOrbit, Oscillation, UniformRotation, TabulatedMotion)


def check_not_too_light(mass: float, path: str) -> None:
    """Raise ValidationError at ``path`` for a moving body's positive mass (kg) below :data:`MIN_MASS`."""
    if mass < MIN_MASS:
        raise ValidationError(path, f"{mass:.3g} kg is too small to simulate (its accelerations overflow): give at "
                                    f"least {MIN_MASS:g} kg")


#: The largest placement_tolerance, as a fraction of the smallest contact shape's radius: the tolerance is the
#: round-off of stored positions (~10⁻⁷ of a scene's size); a tenth of a ball already starts it on a table it misses
PLACEMENT_TOLERANCE_MAX = 0.1


def _placement_tolerance(value, bodies: list) -> float:
    """The validated ``placement_tolerance`` (m): ≥ 0, finite and below PLACEMENT_TOLERANCE_MAX of the smallest
    contact shape's radius (a larger one would put a body that visibly misses a table on it)."""
    tol = v.number(value, "placement_tolerance", nonnegative=True)
    shapes = [(c.radius, f"bodies[{i}].contacts[{k}]") for i, b in enumerate(bodies) for k, c in enumerate(b.contacts)]
    if shapes:
        r, where = min(shapes)
        if tol > PLACEMENT_TOLERANCE_MAX * r:
            raise ValidationError("placement_tolerance", f"{tol:.6g} m is more than {PLACEMENT_TOLERANCE_MAX:g} of "
                                  f"the smallest contact shape's radius ({where}, {r:.6g} m); it is the round-off of "
                                  "the stored start positions (~1e-7 of the scene's size): lower it, or move the "
                                  "body onto the table")
    return tol


def _check_span(m: TabulatedMotion, settings: Settings, path: str) -> None:
    """A table must cover the run: from t = 0 to its last step (t_end rounded to whole steps of dt)."""
    if m.start > 0.0:
        raise ValidationError(f"{path}.times[0]", f"the table starts at t = {m.start:.6g} s, after the run's start "
                                                  "(t = 0): give a sample at 0 s or earlier")
    last = settings.steps * settings.dt
    if m.end < last * (1.0 - 1e-12):
        rounded = "" if last == settings.t_end else f" (t_end = {settings.t_end:.6g} s in whole steps of dt)"
        raise ValidationError(f"{path}.times", f"the table ends at t = {m.end:.6g} s, before the run's last step at "
                                               f"{last:.10g} s{rounded}: sample the motion to the end, or shorten "
                                               "t_end")


def shown(x: float) -> str:
    """A number for a message: ``{:g}`` where that is the number itself (``1e+06``, ``0.001``), else every digit it
    takes (``0.0010000001``, not ``0.001``: a message must not show two different values as one)."""
    x = float(x)
    g, r = f"{x:g}", repr(x)
    return g if not math.isfinite(x) or (float(g) == x and len(g) <= len(r)) else r   # 1e-320: not 9.99989e-321


def rounded_end(t_end: float, dt: float, who: str = "the run ends") -> tuple[float, str | None]:
    """(s) The time a run of ``t_end`` (s) in steps of ``dt`` (s) ends at — t_end rounded to whole steps
    (:attr:`Settings.steps`) — and, where that is not t_end, the note that says so (``who``: "the run ends", "the
    map's runs end"), the values with every digit they take (:func:`shown`)."""
    steps = int(round(t_end / dt))
    k = t_end / dt
    if abs(k - round(k)) <= 1e-9 * max(1.0, k):
        return float(t_end), None
    end = steps * dt
    return float(end), (f"t_end = {shown(t_end)} s is not a whole number of steps of dt = {shown(dt)} s: {who} at "
                        f"{shown(end)} s ({steps:,} steps; t_end is rounded to whole steps)")


def no_step(t_end: float, dt: float) -> str:
    """The message of a run of ``t_end`` > 0 s that rounds to no step of ``dt`` s (t_end ≤ dt / 2: half a step
    rounds to even, 0)."""
    than = "at most" if 2 * t_end >= dt else "less than"
    return (f"t_end = {shown(t_end)} s is {than} half a step (dt = {shown(dt)} s): the run would take no step; lower "
            "dt or raise t_end")


def _bad(path: str, message: str):
    raise ValidationError(path, message)


def _listed(items, path: str, what: str):
    """``items`` if it is a list or tuple (of ``what``); else a ValidationError naming ``path`` — a single item
    given where a list is expected (``dipoles=Dipole(…)``) was a TypeError from deep inside the check."""
    if isinstance(items, (list, tuple)):
        return items
    got = type(items).__name__
    hint = f": put it in a list, [{got}(…)]" if got == what else ""
    raise ValidationError(path, f"expected a list of {what}, got {'None' if items is None else got}{hint}")


#: The finest relative tolerance dop853 takes (scipy's DOP853 raises any finer one to it, 100 ε, with a warning).
MIN_RTOL = 100 * np.finfo(float).eps
#: Longest run a scene may ask for (guards integer conversions against absurd t_end / dt).
MAX_STEPS = 1e12
#: The lightest moving body and its smallest largest moment (kg, kg·m²): far below any physical body (an electron
#: is 9e-31 kg), far above where a force over a mass overflows double precision (1e308).
MIN_MASS, MIN_INERTIA = 1e-100, 1e-200


@dataclass
class Settings:
    """Integrator settings. dt and t_end in s; record_interval in s (None: every step)."""

    method: str = DEFAULT_METHOD
    dt: float = 1e-3
    t_end: float = 1.0
    record_interval: float | None = None
    rtol: float = 1e-10
    atol: float = 1e-12

    def checked(self, path: str = "settings") -> Settings:
        out = Settings(
            method=v.choice(self.method, f"{path}.method", METHODS),
            dt=v.number(self.dt, f"{path}.dt", positive=True),
            t_end=v.number(self.t_end, f"{path}.t_end", nonnegative=True),
            record_interval=None if self.record_interval is None
            else v.number(self.record_interval, f"{path}.record_interval", positive=True),
            rtol=v.number(self.rtol, f"{path}.rtol", positive=True),
            atol=v.number(self.atol, f"{path}.atol", positive=True),
        )
        if not MIN_RTOL <= out.rtol < 1:   # scipy's DOP853 raised a finer one to 100 ε with a warning; ≥ 1: no accuracy
            raise ValidationError(f"{path}.rtol", f"expected {MIN_RTOL:.3g} ≤ rtol < 1 (dop853's relative tolerance: "
                                                  f"none finer than 100 ε, and 1 or more bounds nothing), got "
                                                  f"{shown(out.rtol)}")
        if not out.atol < 1:   # the orientation's entries are at most 1 in size: an atol of 1 leaves them unchecked
            raise ValidationError(f"{path}.atol", f"expected 0 < atol < 1 (dop853's absolute tolerance on the state, "
                                                  f"whose orientation entries are at most 1), got {shown(out.atol)}")
        if out.t_end / out.dt > MAX_STEPS:
            raise ValidationError(f"{path}.t_end", f"t_end / dt = {out.t_end / out.dt:.3g} steps; at most "
                                                   f"{MAX_STEPS:.0e} are allowed")
        if out.record_interval is not None and out.record_interval / out.dt > MAX_STEPS:
            raise ValidationError(f"{path}.record_interval", "is more than 1e12 steps")
        _ = out.record_every  # validates the interval against dt
        return out

    @property
    def steps(self) -> int:
        """Number of steps of size dt covering t_end (t_end is rounded to a whole step)."""
        return int(round(self.t_end / self.dt))

    @property
    def record_every(self) -> int:
        if self.record_interval is None:
            return 1
        k = self.record_interval / self.dt
        if abs(k - round(k)) > 1e-9 * max(1.0, k) or round(k) < 1:
            raise ValidationError("settings.record_interval",
                                  f"must be a whole multiple of dt = {shown(self.dt)} s, got "
                                  f"{shown(self.record_interval)} s")
        return int(round(k))


@dataclass
class Scene:
    """Everything a simulation needs (SI units).

    gravity: (3,) m/s²; field: uniform B (3,) T; rotating_field: adds an
    elliptically rotating B(t); mu0: vacuum permeability (T·m/A); friction:
    pivot friction coefficient c (N·m·s), torque −cω on every moving body;
    periodic_box: (3,) box lengths (m) for minimum-image dipole separations.
    """

    bodies: Sequence[Body] = dc_field(default_factory=list)
    gravity: Sequence[float] = (0.0, 0.0, -STANDARD_GRAVITY)
    field: Sequence[float] = (0.0, 0.0, 0.0)
    rotating_field: RotatingField | None = None
    mu0: float = MU0
    friction: float = 0.0
    periodic_box: Sequence[float] | None = None
    settings: Settings = dc_field(default_factory=Settings)
    name: str = "scene"
    #: contacts (theory §7): the default coefficient of restitution, per-pair overrides, static walls, and the
    #: default Coulomb friction coefficient μ of impacts (0: frictionless); each only for pairs whose two sides set
    #: none of their own (:func:`pair_value`)
    restitution: float = 1.0
    pair_restitution: Sequence[PairRestitution] = ()
    walls: Sequence[StaticWall] = ()
    contact_friction: float = 0.0
    #: one of :data:`CONTACT_MODELS`
    contact_model: str = "impacts"
    #: m: how far the start positions may be from where they were meant, by the precision they were stored with (a
    #: Blender scene's are single precision: ~10⁻⁷ of their size); a body on a table within it starts on the table
    placement_tolerance: float = 0.0

    @property
    def has_contacts(self) -> bool:
        """Whether any body carries contact spheres (walls alone touch nothing)."""
        return any(getattr(b, "contacts", ()) for b in self.bodies)

    def checked(self) -> Scene:
        """A validated copy; raises ValidationError naming the first bad item."""
        _name(self.name, "name")   # it goes into summary.json, sweep.json and file headers, as body names do
        if not isinstance(self.bodies, (list, tuple)):
            raise ValidationError("bodies", "expected a list of bodies")
        if not self.bodies:
            raise ValidationError("bodies", "empty: a scene needs at least one body, a pendulum or a free body")
        bodies = []
        for i, b in enumerate(self.bodies):
            if not isinstance(b, Body):
                raise ValidationError(f"bodies[{i}]", "expected a Body")
            bodies.append(b.checked(f"bodies[{i}]"))
        if not any(b.moving for b in bodies):
            raise ValidationError("bodies", "the scene has no pendulum or free body to simulate")
        first: dict[str, int] = {}
        for i, b in enumerate(bodies):
            j = first.setdefault(name_key(b.name), i)
            if j != i:
                raise ValidationError(f"bodies[{i}].name", f"duplicate body name {b.name!r} (also bodies[{j}])"
                                                           f"{_spelt(bodies[j].name, b.name)}")
        box = None
        if self.periodic_box is not None:
            box = v.vector(self.periodic_box, "periodic_box")
            if not np.all(box > 0):
                raise ValidationError("periodic_box", "box lengths must be positive")
        if not isinstance(self.settings, Settings):
            raise ValidationError("settings", "expected a Settings")
        settings = self.settings.checked("settings")
        for i, b in enumerate(bodies):
            for name, m in (("motion", b.motion), ("pivot_motion", b.pivot_motion)):
                if isinstance(m, TabulatedMotion):
                    _check_span(m, settings, f"bodies[{i}].{name}")
        return Scene(
            bodies=bodies,
            gravity=v.vector(self.gravity, "gravity"),
            field=v.vector(self.field, "field"),
            rotating_field=None if self.rotating_field is None else self.rotating_field.checked("rotating_field"),
            mu0=v.number(self.mu0, "mu0", nonnegative=True),
            friction=v.number(self.friction, "friction", nonnegative=True),
            periodic_box=box,
            settings=settings,
            name=self.name,
            **self._checked_contacts(bodies),
        )

    def _checked_contacts(self, bodies: list) -> dict:
        """The validated restitution, pair_restitution and walls (names must be unique among bodies and walls)."""
        e = restitution_value(self.restitution, "restitution")
        walls = []
        for i, w in enumerate(_listed(self.walls, "walls", "StaticWall")):
            if not isinstance(w, StaticWall):
                raise ValidationError(f"walls[{i}]", "expected a StaticWall")
            walls.append(w.checked(f"walls[{i}]"))
        names = {name_key(b.name): b.name for b in bodies}   # the names in compared form → as given
        for i, w in enumerate(walls):
            if name_key(w.name) in names:
                raise ValidationError(f"walls[{i}].name", f"{w.name!r} is already the name of a body or wall"
                                                          f"{_spelt(names[name_key(w.name)], w.name)}")
            names[name_key(w.name)] = w.name
        pairs = []
        seen: dict = {}   # the pair (as compared names, either order) → the index of the entry that named it first
        for i, p in enumerate(_listed(self.pair_restitution, "pair_restitution", "PairRestitution")):
            path = f"pair_restitution[{i}]"
            if not isinstance(p, PairRestitution):
                raise ValidationError(path, "expected a PairRestitution")
            if isinstance(p.names, str) or len(p.names) != 2:
                raise ValidationError(f"{path}.names", f"expected two names, got {p.names!r}")
            for k, n in enumerate(p.names):
                if not isinstance(n, str) or name_key(n) not in names:
                    raise ValidationError(f"{path}.names[{k}]", f"no body or wall is called {n!r}")
            pair = tuple(names[name_key(n)] for n in p.names)   # each spelt as its item is
            if pair[0] == pair[1]:
                raise ValidationError(f"{path}.names", f"a pair needs two different items, got {pair[0]!r} twice")
            e_i = restitution_value(p.restitution, f"{path}.restitution")
            j = seen.setdefault(frozenset(map(name_key, pair)), i)
            if j != i:   # the last would win without a word (0.5 one way, 0.9 the other: which did the user mean?)
                raise ValidationError(f"{path}.names", f"{pair[0]!r} and {pair[1]!r} are already a pair in "
                                                       f"pair_restitution[{j}] (restitution {pairs[j].restitution!r} "
                                                       f"there, {e_i!r} here): keep one entry per pair")
            pairs.append(PairRestitution(pair, e_i))
        model = v.choice(self.contact_model, "contact_model", CONTACT_MODELS)
        if model == "impacts":
            for i, b in enumerate(bodies):
                for k, c in enumerate(b.contacts):
                    if isinstance(c, ContactRim):
                        raise ValidationError(f"bodies[{i}].contacts[{k}]", "a rim stands on a table only in the "
                                              "surface contact model: set contact_model = \"surface\" (or use "
                                              "contact spheres)")
            for i, w in enumerate(walls):
                for key in ("gliding_friction", "friction_law", "rolling_resistance", "spin_resistance"):
                    if getattr(w, key) is not None:
                        raise ValidationError(f"walls[{i}].{key}", "applies to contact_model = \"surface\" only "
                                              "(a body on a table): remove it or change the contact model")
        else:
            walls = [_checked_law(w, f"walls[{i}]") for i, w in enumerate(walls)]
        return dict(restitution=e, pair_restitution=tuple(pairs), walls=tuple(walls),
                    contact_friction=contact_friction_value(self.contact_friction, "contact_friction"),
                    contact_model=model, placement_tolerance=_placement_tolerance(self.placement_tolerance, bodies))
