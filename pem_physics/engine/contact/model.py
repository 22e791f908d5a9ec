"""The contact model of a scene (``contact_model = "impacts"``): its spheres, walls and pairs with their
coefficients (:class:`ContactModel`: gaps, normals, the pair rule for e and μ), the log of a run's events
(:class:`EventLog`) and the driver's tolerances. :mod:`.driver` steps it; :mod:`.bounds` bounds how fast its
spheres move."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import ValidationError
from ...model.scene import pair_value
from . import walls as wallmod
from .bounds import FlightBounds, SpeedBounds, flight_bounds, speed_bounds
from .impulses import Contact

#: Integrators the contact driver can restart with a step of any length.
CONTACT_METHODS = ("splitting4", "splitting2")
#: A gap below −GAP_RTOL·(r_a + r_b) at the end of a step is an impact inside the step.
GAP_RTOL = 1e-12
#: At an impact, every contact with gap ≤ TOUCH_RTOL·(r_a + r_b) takes part in the resolution.
TOUCH_RTOL = 1e-9
#: At t = 0 a gap below −OVERLAP_RTOL·(r_a + r_b) is an overlap (an error).
OVERLAP_RTOL = 1e-9
#: More resolutions than this inside one step: the contacts chatter (Zeno); the run stops.
MAX_EVENTS_PER_STEP = 1000


@dataclass
class EventLog:
    """Impacts of a run: N rows. t (N,) s; body1, body2 (N,) names (body2 may be a wall, normal from 2 to 1);
    kind (N,) ``"impact"``, ``"rest"`` (a contact settles: a plastic impact, or none if already still) or
    ``"lift-off"`` (a resting contact opens; zero impulse); impulse (N,3) N·s on body1 (−impulse on body2);
    point (N,3) m and normal (N,3) lab; energy_loss: total energy taken by all impacts and by holding resting
    contacts (:func:`_hold`), J. orientation (N,B,3,3): every moving body's
    orientation at the impact (rows = body axes in lab; an impulse leaves it unchanged), so a bake can key the
    pose at the impact instant; position (N,B,3): every moving body's centre of rotation then (moves for
    translating bodies); both in memory only (not in :meth:`arrays`)."""

    t: list = field(default_factory=list)
    body1: list = field(default_factory=list)
    body2: list = field(default_factory=list)
    kind: list = field(default_factory=list)
    impulse: list = field(default_factory=list)
    point: list = field(default_factory=list)
    normal: list = field(default_factory=list)
    energy_loss: float = 0.0
    orientation: list = field(default_factory=list)
    position: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.t)

    def arrays(self) -> dict:
        """The log as numpy arrays (see the class docstring), keys prefixed ``event_``."""
        return {"event_t": np.array(self.t, dtype=float),
                "event_body1": np.array(self.body1, dtype=str), "event_body2": np.array(self.body2, dtype=str),
                "event_kind": np.array(self.kind, dtype=str),
                "event_impulse": np.array(self.impulse, dtype=float).reshape(-1, 3),
                "event_point": np.array(self.point, dtype=float).reshape(-1, 3),
                "event_normal": np.array(self.normal, dtype=float).reshape(-1, 3)}

    @classmethod
    def from_arrays(cls, data) -> EventLog:
        return cls(t=[float(x) for x in data["event_t"]], body1=[str(x) for x in data["event_body1"]],
                   body2=[str(x) for x in data["event_body2"]], kind=[str(x) for x in data["event_kind"]],
                   impulse=list(np.asarray(data["event_impulse"], float)),
                   point=list(np.asarray(data["event_point"], float)),
                   normal=list(np.asarray(data["event_normal"], float)))

    def impacts(self) -> int:
        """Number of impacts: events of a kind ``impact…``, and settlings (``rest``) that took an impulse; not
        ``stick``, ``slip``, ``reversal`` or ``lift-off`` (changes of a persistent contact)."""
        return sum(1 for k, j in zip(self.kind, self.impulse)
                   if k.startswith("impact") or (k == "rest" and np.any(np.asarray(j) != 0)))

    def counts(self) -> dict:
        """Number of events of each kind."""
        out: dict = {}
        for k in self.kind:
            out[k] = out.get(k, 0) + 1
        return out


def make_wall(w) -> wallmod.Wall:
    """The engine wall (:mod:`.walls`) of a validated :class:`~pem_physics.model.scene.StaticWall`."""
    if w.kind == "plane":
        return wallmod.Plane(w.point, w.normal, name=w.name)
    if w.kind == "sphere":
        return wallmod.Sphere(w.center, w.radius, inside=w.inside, name=w.name)
    if w.kind == "cylinder":
        return wallmod.Cylinder(w.point, w.direction, w.radius, inside=w.inside, name=w.name)
    return wallmod.Box(w.center, w.half_sizes, axes=w.axes, inside=w.inside, name=w.name)


def pair_coefficients(scene, pair_e: dict, a: tuple, b: tuple) -> tuple[float, float]:
    """(e, μ) of the contacts between items a and b, each (name, own e, own μ; None where the item sets none): the
    ``pair_restitution`` entry naming both (``pair_e``: frozenset of the two names → e) if there is one, else
    :func:`~pem_physics.model.scene.pair_value` of their e and of their μ with the scene's as the default."""
    e = pair_e.get(frozenset((a[0], b[0])))
    if e is None:
        e = pair_value(a[1], b[1], scene.restitution)
    return e, pair_value(a[2], b[2], scene.contact_friction)


def item_coefficients(item) -> tuple[str, float | None, float | None]:
    """(name, own e, own μ) of a body or wall, None where it sets none."""
    return item.name, item.restitution, item.contact_friction


def _pair_values(a: np.ndarray, b: np.ndarray, default: float) -> np.ndarray:
    """:func:`~pem_physics.model.scene.pair_value` for arrays of own values, NaN where a side sets none."""
    out = np.fmin(a, b)                        # the smaller of two, the one of one (fmin passes over a NaN)
    return np.where(np.isnan(out), default, out)


class ContactModel:
    """The contact geometry of a checked scene compiled to ``system``.

    S spheres: ``owner`` (S,) moving-body index or −1 (on a fixed body), ``center`` (S,3) body coordinates
    about the centre of rotation (moving: pivot, or centre of mass of a free body) or lab (fixed),
    ``radius`` (S,) m. P pairs: sphere pairs ``(a, b)`` first, then
    sphere–wall pairs ``(a, wall)``; ``scale`` (P,) m is r_a + r_b (r_a for a wall).
    """

    def __init__(self, scene, system):
        moving = {int(i): k for k, i in enumerate(system.scene_index)}
        owner, center, radius, labels, names, e_item, mu_item = [], [], [], [], [], [], []
        for i, body in enumerate(scene.bodies):
            _, e_b, mu_b = item_coefficients(body)
            # a free body turns about its centre of mass: its spheres are kept relative to that (as its dipoles)
            shift = (np.asarray(body.resolved_mass_properties(f"bodies[{i}]").center_of_mass, float)
                     if body.contacts and body.role == "free" else np.zeros(3))
            for k, c in enumerate(body.contacts):
                owner.append(moving.get(i, -1))
                # fixed bodies do not move: keep their spheres in the lab
                center.append(np.asarray(c.center, float) - shift if i in moving
                              else np.asarray(body.position, float) + np.asarray(c.center, float) @ body.orientation)
                radius.append(float(c.radius))
                labels.append(f"bodies[{i}].contacts[{k}]")
                names.append(body.name)
                e_item.append(e_b)
                mu_item.append(mu_b)
        self.system = system
        self.owner = np.array(owner, dtype=np.intp)
        self.center = np.array(center, dtype=float).reshape(-1, 3)
        self.radius = np.array(radius, dtype=float)
        self.labels, self.names = labels, names
        self.walls = [make_wall(w) for w in scene.walls]
        self.wall_names = [w.name for w in scene.walls]
        pair_e = {frozenset(p.names): p.restitution for p in scene.pair_restitution}
        wall_items = [item_coefficients(w) for w in scene.walls]
        S = len(radius)
        # every sphere pair of two bodies, not both fixed, in the order (0, 1), (0, 2), … (1, 2), … — with arrays:
        # a box of 1000 marbles has half a million pairs
        ia, ib = np.triu_indices(S, 1)
        tags, body_of = np.unique(np.array(names, dtype=str), return_inverse=True)  # the bodies by name
        body_of = body_of.reshape(-1)
        keep = (body_of[ia] != body_of[ib]) & ((self.owner[ia] >= 0) | (self.owner[ib] >= 0))  # not one body's
        ia, ib = ia[keep], ib[keep]
        e_s = np.array([np.nan if x is None else x for x in e_item], dtype=float)    # NaN: the item sets none
        mu_s = np.array([np.nan if x is None else x for x in mu_item], dtype=float)
        e_p = _pair_values(e_s[ia], e_s[ib], scene.restitution)  # the pair rule (pair_coefficients) …
        ta, tb = body_of[ia], body_of[ib]
        for both, e_ab in pair_e.items():  # … unless a pair_restitution entry names both bodies
            if len(both) == 2:
                n1, n2 = (int(np.searchsorted(tags, n)) if n in tags else -1 for n in both)
                e_p[((ta == n1) & (tb == n2)) | ((ta == n2) & (tb == n1))] = e_ab
        e, mu = e_p.tolist(), _pair_values(mu_s[ia], mu_s[ib], scene.contact_friction).tolist()
        scale = (self.radius[ia] + self.radius[ib]).tolist()
        pairs = list(zip(ia.tolist(), ib.tolist()))
        self.n_sphere_pairs = len(pairs)
        for a in range(S):
            if owner[a] < 0:
                continue
            for w in range(len(self.walls)):
                pairs.append((a, w))
                e_ab, mu_ab = pair_coefficients(scene, pair_e, (names[a], e_item[a], mu_item[a]), wall_items[w])
                e.append(e_ab)
                mu.append(mu_ab)
                scale.append(radius[a])
        self.pairs = pairs
        ab = np.array(pairs, dtype=np.intp).reshape(-1, 2)
        #: (P,) the pairs' first sphere, and their second (sphere pairs) or −1 (walls)
        self.side_a = ab[:, 0].copy()
        self.side_b = np.where(np.arange(len(pairs)) < self.n_sphere_pairs, ab[:, 1], -1)
        #: per wall: (its pair indices, their spheres), for :meth:`gaps` to evaluate a wall's pairs at once
        self.wall_pairs = [(np.flatnonzero((self.side_b < 0) & (ab[:, 1] == w)),
                            ab[(self.side_b < 0) & (ab[:, 1] == w), 0]) for w in range(len(self.walls))]
        self.e = np.array(e, dtype=float)
        self.mu = np.array(mu, dtype=float)
        self.scale = np.array(scale, dtype=float)
        #: (P,) m: a gap below −gap_tol at a step's end, or dipping below it inside, is an impact (GAP_RTOL·scale)
        self.gap_tol = GAP_RTOL * self.scale
        #: (P,) m: at an impact, every pair with gap ≤ touch_tol takes part in the resolution (TOUCH_RTOL·scale)
        self.touch_tol = TOUCH_RTOL * self.scale
        self.warnings: list = []
        #: resting contacts (pair indices; see ``_hold``) and the run's step (s), set by :func:`run`
        self.resting: set = set()
        self.dt = 0.0
        # what the contact driver remembers between steps (a step's end is the next step's start):
        # (key, gaps) of _gaps_of, (key, X, V) of _sphere_motion, and the SpeedBounds (see speed_bounds)
        self._gap_memo = None
        self._motion_memo = None
        self._bounds = None

    # ------------------------------------------------------------------ geometry
    def positions(self, U: np.ndarray, C: np.ndarray | None = None) -> np.ndarray:
        """Lab sphere centres (S,3) m for orientations U (B,3,3) (rows = body axes in lab) and centres of
        rotation C (B,3) m (default: the pivots; translating bodies pass their positions)."""
        C = self.system.pivot if C is None else C
        X = self.center.copy()
        mv = self.owner >= 0
        if mv.any():
            o = self.owner[mv]
            X[mv] = C[o] + np.einsum("sij,si->sj", U[o], self.center[mv])
        return X

    def gaps(self, U: np.ndarray, C: np.ndarray | None = None, pairs=None) -> np.ndarray:
        """Gaps (P,) m of every pair at orientations U (B,3,3), centres C (B,3): positive apart, negative
        overlapping; with ``pairs`` (a list of pair indices) only theirs, in that order (Brent's search)."""
        X = self.positions(U, C)
        if pairs is not None:
            out = np.empty(len(pairs))
            for k, p in enumerate(pairs):
                a, b = self.side_a[p], self.side_b[p]
                out[k] = (float(np.linalg.norm(X[a] - X[b])) - self.radius[a] - self.radius[b] if b >= 0
                          else self.walls[self.pairs[p][1]].gap(X[a], self.radius[a]))
            return out
        out = np.empty(len(self.pairs))
        n = self.n_sphere_pairs
        if n:
            a, b = self.side_a[:n], self.side_b[:n]
            d = X[a] - X[b]
            out[:n] = np.sqrt(np.einsum("pi,pi->p", d, d)) - self.radius[a] - self.radius[b]
        for wall, (pairs, spheres) in zip(self.walls, self.wall_pairs):
            if len(pairs):
                out[pairs] = wall.gaps(X[spheres], self.radius[spheres])
        return out

    def speed_bounds(self, U: np.ndarray, J: np.ndarray) -> SpeedBounds:
        """The grazing check's :class:`SpeedBounds` (computed once a run: they do not change; U (B,3,3) and
        J (B,) of any state of it)."""
        if self._bounds is None:
            self._bounds = speed_bounds(self, U, J)
        return self._bounds

    def flight_bounds(self, U: np.ndarray, J: np.ndarray) -> FlightBounds:
        """The compiled kernels' :class:`FlightBounds` of free flight (U, J as for :meth:`speed_bounds`)."""
        return flight_bounds(self, U, J)

    def pair_label(self, p: int) -> tuple[str, str]:
        a, b = self.pairs[p]
        if p < self.n_sphere_pairs:
            return self.labels[a], self.labels[b]
        return self.labels[a], f"walls[{b}]"

    def pair_names(self, p: int) -> str:
        """Pair p's two sides for a message: "'a' and 'b'" (two bodies' spheres) or "'a' and wall 'w'"."""
        a, b = self.pairs[p]
        if p < self.n_sphere_pairs:
            return f"{self.names[a]!r} and {self.names[b]!r}"
        return f"{self.names[a]!r} and wall {self.wall_names[b]!r}"

    def check_start(self, U: np.ndarray, C: np.ndarray | None = None) -> None:
        """Raise a ValidationError naming both items when spheres overlap each other or a wall at t = 0."""
        g = self.gaps(U, C)
        bad = np.flatnonzero(g < -OVERLAP_RTOL * self.scale)
        if len(bad):
            p = int(bad[0])
            la, lb = self.pair_label(p)
            a, b = self.pairs[p]
            if p < self.n_sphere_pairs:
                raise ValidationError(f"{la} and {lb}", f"the contact spheres of {self.names[a]!r} and "
                                      f"{self.names[b]!r} overlap by {-g[p]:.3g} m at t = 0")
            raise ValidationError(f"{la} and {lb}", f"the contact sphere of {self.names[a]!r} lies "
                                  f"{-g[p]:.3g} m past wall {self.wall_names[b]!r}, on the side it may not enter, at "
                                  "t = 0: move it back")

    def contact(self, p: int, X: np.ndarray, gap: float) -> Contact:
        """Contact p at sphere centres X (S,3): indices into the body list of :meth:`bodies` (fixed: None)."""
        a, b = self.pairs[p]
        oa = int(self.owner[a])
        if p < self.n_sphere_pairs:
            ob = int(self.owner[b])
            n = X[a] - X[b]
            n = n / np.linalg.norm(n)
            point = X[b] + (self.radius[b] + 0.5 * gap) * n
            if oa < 0:  # the moving sphere is side 1
                return Contact(ob, None, point, -n, float(self.e[p]), float(self.mu[p]))
            return Contact(oa, None if ob < 0 else ob, point, n, float(self.e[p]), float(self.mu[p]))
        nw = self.walls[b].normal(X[a])
        return Contact(oa, None, X[a] + self.radius[a] * nw, -nw, float(self.e[p]), float(self.mu[p]))

    def other_name(self, p: int, i: int) -> str:
        """The name of pair p's other side, seen from body i (a wall's name, or the other body's)."""
        a, b = self.pairs[p]
        if p >= self.n_sphere_pairs:
            return self.wall_names[b]
        return self.names[b] if self.names[a] == self.system.names[i] else self.names[a]
