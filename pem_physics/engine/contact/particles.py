"""Translating spheres among walls: flights, impacts, sliding, lift-off and rest (theory §7).

N spheres (point masses with a radius): ``mass`` kg, ``radius`` m (0: a point), position ``x`` (3,)
m, velocity ``v`` (3,) m/s. Forces: uniform gravity ``gravity`` (3,) m/s² and an optional force
field ``force(x (3,) m, t s, i) → (3,) N`` on sphere i. Walls from :mod:`.walls` (every wall acts
on every sphere). Results: :class:`ParticleRun` with t (T,) s, x (T,N,3) m, v (T,N,3) m/s (a row
after every step and after every event) and the event log.

Each sphere is in one of four modes:

- ``flight``: free flight. Under uniform gravity alone this is the exact parabola
  x + vτ + ½gτ²; with a force field one classical RK4 step of at most ``dt``, and the state inside a
  step is that RK4 step re-taken from the step start with the shorter length (the dense output used
  for event location, 4th order like the step itself).
- ``contact``: sliding on a wall (frictionless): m a = F + λ∇f on the wall offset by the radius, λ
  from ``d²f/dt² = 0`` (:meth:`.walls.Wall.constraint_lambda`), RK4 steps of at most ``dt``, each
  followed by a projection back onto f = 0 (position along ∇f, then the normal velocity).
- ``rest``: on a static wall with no tangential force and no force field: x fixed, v = 0.
- ``zeno``: the accumulation of the infinitely many ever smaller bounces on a static plane under
  uniform gravity (below): the sphere moves on the plane with its tangential velocity until the
  closed-form accumulation time, then rests or slides.

Events, located with :func:`.events.first_crossing` on the state-advance of the step: a gap to a
wall or to another sphere turning negative (impact), λ turning positive (lift-off: the wall would
have to pull), the end of a Zeno accumulation. At an event every touching pair (gap ≤ ``touch_tol``)
that approaches is resolved with :func:`.impulses.resolve_contacts`: sphere pairs sorted by index,
then sphere–wall contacts sorted by sphere and wall index, swept until nothing approaches (equal
spheres in a line with e = 1: Newton's cradle). A sphere that leaves an impact on a wall with a
normal speed below ``slide_speed`` while the wall pushes (λ < 0) stays on it: it slides, or rests.

Zeno: a bounce on a static plane under uniform gravity with normal acceleration a_n towards it and
rebound speed u < ``slide_speed`` is followed by bounces with speeds u e^k, whose flights add up to
2u/(a_n(1 − e)); that time is skipped at once (the sphere hops less than u²/(2a_n) meanwhile), so a
ball dropped from h rests at √(2h/g)(1+e)/(1−e) to round-off. Elsewhere (curved or moving walls,
force fields) a slow impact switches straight to sliding, dropping a normal speed below
``slide_speed``.

Restitution: per pair ``pair_restitution[(a, b)]`` (sphere or wall names, either order), else the
pair rule of :func:`~pem_physics.model.scene.pair_value` on the spheres' own ``restitution`` (the scene's where
neither sets one). Sphere–sphere
contacts are impacts only: spheres resting on each other under a steady force are not modelled
(a ``max_events`` guard stops such runs with an error naming the two spheres).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...errors import SimulationError, ValidationError
from ...model.scene import pair_value
from . import events
from .impulses import Contact, ContactBody, check_restitution, resolve_contacts
from .walls import Offset, Plane, Wall

KINDS = ("impact", "slide", "lift-off", "rest")


@dataclass
class Ball:
    """A sphere: name, mass kg, radius m, x (3,) m, v (3,) m/s, restitution (None: the scene's)."""

    name: str
    mass: float
    radius: float
    x: np.ndarray
    v: np.ndarray
    restitution: float | None = None


@dataclass
class Event:
    """t s; kind in KINDS; bodies: sphere names; wall: wall name or None; impulse (3,) N·s on bodies[0]."""

    t: float
    kind: str
    bodies: tuple
    wall: str | None = None
    impulse: np.ndarray = field(default_factory=lambda: np.zeros(3))


@dataclass
class ParticleRun:
    names: list
    t: np.ndarray
    x: np.ndarray
    v: np.ndarray
    events: list
    mass: np.ndarray
    gravity: np.ndarray

    def energy(self) -> np.ndarray:
        """Kinetic + uniform-gravity potential energy (T,) J (a force field's potential not included)."""
        kin = 0.5 * np.einsum("n,tni,tni->t", self.mass, self.v, self.v)
        return kin - np.einsum("n,tni,i->t", self.mass, self.x, self.gravity)

    def of(self, kind: str) -> list:
        return [e for e in self.events if e.kind == kind]


class ParticleSim:
    """The simulator; ``run(t_end)`` integrates and returns a :class:`ParticleRun`.

    dt s: largest RK4 step (force field, sliding); max_flight s: largest exact-parabola step;
    n_sub / n_sub_rk: samples per exact-flight / RK4 step for event location;
    touch_tol m: gaps this small count as touching;
    slide_speed, rest_speed m/s: thresholds of normal (sliding) and tangential (rest) speed.
    """

    def __init__(self, balls: list[Ball], walls: list[Wall] = (), gravity=(0.0, 0.0, -9.81),
                 force: Callable | None = None, restitution: float = 1.0, pair_restitution: dict | None = None,
                 dt: float = 1e-3, max_flight: float = 0.05, n_sub: int = 16, n_sub_rk: int = 2,
                 touch_tol: float = 1e-9,
                 slide_speed: float = 1e-3, rest_speed: float = 1e-9, max_events: int = 100_000):
        self.balls = [Ball(b.name, float(b.mass), float(b.radius), np.array(b.x, float), np.array(b.v, float),
                           b.restitution) for b in balls]
        self.walls = list(walls)
        self.g = np.asarray(gravity, float)
        self.force = force
        self.e = check_restitution(restitution, "restitution")
        self.pair_e = {}
        for key, val in (pair_restitution or {}).items():
            a, b = key
            self.pair_e[frozenset((a, b))] = check_restitution(val, f"pair_restitution[{a}, {b}]")
        self.dt, self.max_flight, self.n_sub, self.n_sub_rk = float(dt), float(max_flight), int(n_sub), int(n_sub_rk)
        self.touch_tol, self.slide_speed, self.rest_speed = float(touch_tol), float(slide_speed), float(rest_speed)
        self.max_events = int(max_events)
        self._validate()
        self.N = len(self.balls)
        self.m = np.array([b.mass for b in self.balls])
        self.r = np.array([b.radius for b in self.balls])
        self.x = np.array([b.x for b in self.balls]).reshape(self.N, 3)
        self.v = np.array([b.v for b in self.balls]).reshape(self.N, 3)
        self.cw = [[w.offset(ri) for w in self.walls] for ri in self.r]  # walls the centres touch
        self.mode = ["flight"] * self.N
        self.on = [-1] * self.N       # wall index in contact/rest/zeno
        self.zeno_end = np.full(self.N, np.inf)
        self.t = 0.0
        self.events: list[Event] = []

    # --- set-up ----------------------------------------------------------------------------------
    def _validate(self):
        names = [b.name for b in self.balls] + [w.name for w in self.walls]
        if len(set(names)) != len(names):
            raise ValidationError("balls", f"sphere and wall names must be unique, got {names}")
        for i, b in enumerate(self.balls):
            p = f"balls[{i}]"
            if not (np.isfinite(b.mass) and b.mass > 0):
                raise ValidationError(f"{p}.mass", f"sphere {b.name!r}: mass must be positive, got {b.mass!r}")
            if not (np.isfinite(b.radius) and b.radius >= 0):
                raise ValidationError(f"{p}.radius", f"sphere {b.name!r}: radius must be ≥ 0, got {b.radius!r}")
            if b.x.shape != (3,) or b.v.shape != (3,) or not np.all(np.isfinite(np.r_[b.x, b.v])):
                raise ValidationError(p, f"sphere {b.name!r}: x and v must be 3 finite numbers each")
            if b.restitution is not None:
                check_restitution(b.restitution, f"{p}.restitution")
        for i, a in enumerate(self.balls):
            for j in range(i + 1, len(self.balls)):
                b = self.balls[j]
                gap = np.linalg.norm(a.x - b.x) - a.radius - b.radius
                if gap < -self.touch_tol:
                    raise ValidationError(f"balls[{i}]", f"sphere {a.name!r} overlaps sphere {b.name!r} "
                                          f"(balls[{j}]) by {-gap:.3g} m at t = 0")
            for w in self.walls:
                gap = w.gap(a.x, a.radius, 0.0)
                if gap < -self.touch_tol:
                    raise ValidationError(f"balls[{i}]", f"sphere {a.name!r} is outside wall {w.name!r} "
                                          f"(by {-gap:.3g} m) at t = 0")

    def restitution(self, a: str, b: str) -> float:
        key = frozenset((a, b))
        if key in self.pair_e:
            return self.pair_e[key]
        own = [None if bl.restitution is None else float(bl.restitution) for bl in self.balls if bl.name in key]
        own += [None] * (2 - len(own))          # a wall sets none here
        return pair_value(own[0], own[1], self.e)

    # --- motion inside a step ----------------------------------------------------------------------
    def _forces(self, i, x, t):
        F = self.m[i] * self.g
        return F if self.force is None else F + np.asarray(self.force(x, t, i), float)

    def _acc(self, i, x, v, t):
        F = self._forces(i, x, t)
        if self.mode[i] != "contact":
            return F / self.m[i]
        w = self.cw[i][self.on[i]]
        lam = w.constraint_lambda(x, v, F, self.m[i], t)
        return (F + lam * w.gradient(x, t)) / self.m[i]

    def _project(self, i, x, v, t):
        w = self.cw[i][self.on[i]]
        for _ in range(3):
            gr = w.gradient(x, t)
            x = x - w.value(x, t) * gr / (gr @ gr)
        gr = w.gradient(x, t)
        v = v - (gr @ v + w.dt(x, t)) * gr / (gr @ gr)
        return x, v

    def _exact(self, i) -> bool:
        return self.mode[i] in ("rest", "zeno") or (self.mode[i] == "flight" and self.force is None)

    def _advance(self, i, x0, v0, t0, tau):
        """State (x, v) of sphere i at t0 + tau from (x0, v0) at t0 (tau ≤ the step)."""
        mode = self.mode[i]
        if mode == "rest" or tau == 0.0:
            return x0.copy(), (np.zeros(3) if mode == "rest" else v0.copy())
        if mode == "flight" and self.force is None:
            return x0 + v0 * tau + 0.5 * self.g * tau * tau, v0 + self.g * tau
        if mode == "zeno":
            n = self.walls[self.on[i]].normal(x0, t0)
            gt = self.g - (n @ self.g) * n
            return x0 + v0 * tau + 0.5 * gt * tau * tau, v0 + gt * tau
        k1x, k1v = v0, self._acc(i, x0, v0, t0)
        k2x = v0 + 0.5 * tau * k1v
        k2v = self._acc(i, x0 + 0.5 * tau * k1x, k2x, t0 + 0.5 * tau)
        k3x = v0 + 0.5 * tau * k2v
        k3v = self._acc(i, x0 + 0.5 * tau * k2x, k3x, t0 + 0.5 * tau)
        k4x = v0 + tau * k3v
        k4v = self._acc(i, x0 + tau * k3x, k4x, t0 + tau)
        x = x0 + tau / 6.0 * (k1x + 2 * k2x + 2 * k3x + k4x)
        v = v0 + tau / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v)
        if mode == "contact":
            x, v = self._project(i, x, v, t0 + tau)
        return x, v

    # --- gaps ----------------------------------------------------------------------------------------
    def _pair_gap(self, i, j, xi, xj):
        return float(np.linalg.norm(xi - xj)) - self.r[i] - self.r[j]

    def _wall_rate(self, i, k, x, v, t):
        """d(gap)/dt (m/s) of sphere i against wall k: positive when separating."""
        w = self.cw[i][k]
        gr = w.gradient(x, t)
        return -(gr @ v + w.dt(x, t)) / float(np.linalg.norm(gr))

    def _candidates(self, t0, t1, exact):
        """(time, kind, payload) of the earliest event in (t0, t1], or None (exact: all flights closed-form)."""
        x0, v0 = self.x.copy(), self.v.copy()
        cache = {}

        def state(i, t):
            key = (i, t)
            if key not in cache:
                cache[key] = self._advance(i, x0[i], v0[i], t0, t - t0)
            return cache[key]

        best = None
        # touch_tol widened by the rounding of a gap (positions and radii of this size, a few ulps each)
        tol = self.touch_tol + 16 * np.finfo(float).eps * max(float(np.abs(x0).max(initial=0.0)),
                                                              float(self.r.max(initial=0.0)))

        def consider(g, kind, payload, side="a", rate=None):
            nonlocal best
            end = t1 if best is None else best[0]
            if end <= t0:
                return
            g_start = g(t0)
            n_sub = self.n_sub if exact else self.n_sub_rk
            fn, g0 = g, g_start
            if kind == "impact" and g_start <= self.touch_tol:
                if rate is not None and rate > 0.01 * self.slide_speed:
                    # touching and separating: look for the next root of g, not the one at t0; divided by
                    # (t − t0) the root at t0 goes away (a negative g0 from round-off is subtracted first)
                    lvl = min(g_start, 0.0)

                    def fn(t, g=g, lvl=lvl):
                        return (g(t) - lvl) / (t - t0) if t > t0 else rate

                    g0 = rate
                else:
                    # touching, not separating (a resting neighbour): an event only once it overlaps by touch_tol
                    # (and the gap's round-off: a pair moving on together at that overlap is no new impact)
                    if g_start + tol < 0:
                        return  # overlapping beyond tolerance and (after resolution) not approaching
                    fn, g0 = (lambda t, g=g: g(t) + tol), g_start + tol
            te = events.first_crossing(fn, t0, end, n_sub, g0=g0, side=side)
            if te is not None and (best is None or te < best[0]):
                best = (te, kind, payload)

        for i in range(self.N):
            if self.mode[i] == "contact":
                k = self.on[i]
                w = self.cw[i][k]
                consider(lambda t, i=i, w=w: -w.constraint_lambda(*state(i, t), self._forces(i, state(i, t)[0], t),
                                                                  self.m[i], t), "lift-off", (i, k), side="b")
            if self.mode[i] == "rest":
                continue
            for k, w in enumerate(self.walls):
                if k == self.on[i] and self.mode[i] != "flight":
                    continue
                consider(lambda t, i=i, w=w: w.gap(state(i, t)[0], self.r[i], t), "impact", (i, None),
                         rate=self._wall_rate(i, k, x0[i], v0[i], t0))
        for i in range(self.N):
            for j in range(i + 1, self.N):
                if self.mode[i] == "rest" and self.mode[j] == "rest":
                    continue
                d = x0[i] - x0[j]
                nd = float(np.linalg.norm(d))
                rate = float(d @ (v0[i] - v0[j])) / nd if nd > 0 else None
                consider(lambda t, i=i, j=j: self._pair_gap(i, j, state(i, t)[0], state(j, t)[0]), "impact", (i, j),
                         rate=rate)
        return best

    # --- events ----------------------------------------------------------------------------------------
    def _log(self, kind, bodies, wall=None, J=None):
        self.events.append(Event(self.t, kind, tuple(bodies), wall, np.zeros(3) if J is None else np.asarray(J)))
        if len(self.events) > self.max_events:
            raise SimulationError(self._too_many_events(), time=self.t)

    def _too_many_events(self, window: int = 1000) -> str:
        """The error of a run past ``max_events``: the pair whose impacts fill the last ``window`` events (two
        spheres first: resting on each other, they strike without end; else a sphere and a wall), by name."""
        recent = self.events[-window:]
        spheres = Counter(e.bodies for e in recent if e.kind == "impact" and len(e.bodies) == 2)
        walled = Counter((e.bodies[0], e.wall) for e in recent if e.kind == "impact" and e.wall is not None)
        head = f"more than {self.max_events} events by t = {self.t:g} s"
        if spheres:
            (a, b), k = spheres.most_common(1)[0]
            return (f"{head}: spheres {a!r} and {b!r} keep striking each other ({k} of the last {len(recent)} "
                    "events): they rest on each other, and resting sphere–sphere contact is not modelled; end the "
                    "run before they settle (lower t_end), or keep them apart")
        if walled:
            (a, w), k = walled.most_common(1)[0]
            return (f"{head}: sphere {a!r} keeps striking wall {w!r} ({k} of the last {len(recent)} events): end "
                    "the run earlier (lower t_end), or raise max_events")
        return (f"{head} (no impacts among the last {len(recent)}): end the run earlier (lower t_end), or raise "
                "max_events")

    def _resolve(self):
        """Impulses for every touching, approaching pair at the current time; then modes."""
        t = self.t
        bodies = [ContactBody.free(self.m[i], self.x[i], self.v[i], name=self.balls[i].name) for i in range(self.N)]
        contacts, what = [], []
        for i in range(self.N):
            for j in range(i + 1, self.N):
                d = self.x[i] - self.x[j]
                if self._pair_gap(i, j, self.x[i], self.x[j]) <= self.touch_tol:
                    n = d / np.linalg.norm(d)
                    e = self.restitution(self.balls[i].name, self.balls[j].name)
                    contacts.append(Contact(i, j, self.x[j] + self.r[j] * n, n, e))
                    what.append((i, j))
        walls_fixed = []
        for i in range(self.N):
            for k, w in enumerate(self.walls):
                if w.gap(self.x[i], self.r[i], t) <= self.touch_tol:
                    cw = self.cw[i][k]
                    n = -cw.normal(self.x[i], t)
                    gr = cw.gradient(self.x[i], t)
                    body = ContactBody.fixed(w.name)
                    body.v = (-cw.dt(self.x[i], t) / np.linalg.norm(gr)) * -n  # the wall surface's normal velocity
                    walls_fixed.append(body)
                    contacts.append(Contact(i, None, self.x[i] - self.r[i] * n, n,
                                            self.restitution(self.balls[i].name, w.name)))
                    what.append((i, ("wall", k)))
        if not contacts:
            return
        # the wall side of each contact: resolve_contacts takes j=None as a plain fixed wall, so moving walls
        # are appended as bodies of their own
        for c_idx, ct in enumerate(contacts):
            if ct.j is None:
                bodies.append(walls_fixed.pop(0))
                contacts[c_idx] = Contact(ct.i, len(bodies) - 1, ct.point, ct.normal, ct.e)
        v_in = self.v.copy()
        log = resolve_contacts(bodies, contacts)
        hit_wall = {}
        J_sum = {}
        for c_idx, J in log:
            J_sum[c_idx] = J_sum.get(c_idx, 0.0) + J
        for c_idx, J in J_sum.items():
            i, other = what[c_idx]
            if isinstance(other, tuple):
                self._log("impact", (self.balls[i].name,), self.walls[other[1]].name, J)
                hit_wall[(i, other[1])] = contacts[c_idx].e
            else:
                self._log("impact", (self.balls[i].name, self.balls[other].name), None, J)
        for i in range(self.N):
            self.v[i] = bodies[i].v
            if np.any(self.v[i] != v_in[i]) and self.mode[i] != "flight":
                self.mode[i], self.on[i] = "flight", -1
        for i in range(self.N):
            if self.mode[i] != "flight":
                continue
            for k, w in enumerate(self.walls):
                if w.gap(self.x[i], self.r[i], t) <= self.touch_tol:
                    self._maybe_settle(i, k, hit_wall.get((i, k)))
                    if self.mode[i] != "flight":
                        break

    def _maybe_settle(self, i, k, e_hit):
        """After an impact (restitution e_hit, or None) on wall k: stay on it if slow and pushed."""
        t = self.t
        u = self._wall_rate(i, k, self.x[i], self.v[i], t)
        if abs(u) >= self.slide_speed:
            return
        cw = self.cw[i][k]
        n = cw.normal(self.x[i], t)
        v_on = self.v[i] + u * n
        if cw.constraint_lambda(self.x[i], v_on, self._forces(i, self.x[i], t), self.m[i], t) >= 0:
            return  # the wall would have to pull: the sphere flies on
        base = self.walls[k]
        static_plane = isinstance(base, Plane) or (isinstance(base, Offset) and isinstance(base.base, Plane))
        a_n = float(n @ self.g)
        if static_plane and self.force is None and e_hit is not None and 0 < e_hit < 1 and u > 0 and a_n > 0:
            self.mode[i], self.on[i] = "zeno", k
            self.zeno_end[i] = t + 2.0 * u / (a_n * (1.0 - e_hit))
            self.x[i], self.v[i] = self._project(i, self.x[i], v_on, t)
            return
        self._settle(i, k, v_on)

    def _settle(self, i, k, v_on):
        t = self.t
        self.on[i] = k
        self.mode[i] = "contact"
        self.x[i], self.v[i] = self._project(i, self.x[i], v_on, t)
        cw = self.cw[i][k]
        n = cw.normal(self.x[i], t)
        F = self._forces(i, self.x[i], t)
        Ft = F - (n @ F) * n
        static = cw.dt(self.x[i], t) == 0 and cw.dt2(self.x[i], t) == 0 and self.force is None
        if static and np.linalg.norm(self.v[i]) <= self.rest_speed and np.linalg.norm(Ft) <= 1e-12 * np.linalg.norm(F):
            self.mode[i], self.v[i] = "rest", np.zeros(3)
            self._log("rest", (self.balls[i].name,), self.walls[k].name)
        else:
            self._log("slide", (self.balls[i].name,), self.walls[k].name)

    # --- driver ----------------------------------------------------------------------------------------
    def run(self, t_end: float, stop_at: tuple = ()) -> ParticleRun:
        """Integrate to t_end s, or to the first event whose kind is in ``stop_at``."""
        T, X, V = [self.t], [self.x.copy()], [self.v.copy()]
        self._resolve()
        T.append(self.t), X.append(self.x.copy()), V.append(self.v.copy())
        stuck = 0
        while self.t < t_end:
            exact = all(self._exact(i) for i in range(self.N))
            t1 = min(self.t + (self.max_flight if exact else self.dt), t_end, float(np.min(self.zeno_end)))
            best = self._candidates(self.t, t1, exact)
            te = t1 if best is None else best[0]
            for i in range(self.N):
                self.x[i], self.v[i] = self._advance(i, self.x[i], self.v[i], self.t, te - self.t)
            stuck = stuck + 1 if te == self.t else 0
            if stuck > 1000:
                raise SimulationError(f"no progress at t = {self.t:g} s (events repeat at one time)", time=self.t)
            self.t = te
            if best is not None:
                kind, payload = best[1], best[2]
                if kind == "lift-off":
                    i, k = payload
                    self.mode[i], self.on[i] = "flight", -1
                    self._log("lift-off", (self.balls[i].name,), self.walls[k].name)
                else:
                    self._resolve()
            for i in np.flatnonzero(self.zeno_end <= self.t):
                k = self.on[i]
                self.zeno_end[i] = np.inf
                self._settle(i, k, self.v[i])
            T.append(self.t), X.append(self.x.copy()), V.append(self.v.copy())
            if best is not None and best[1] in stop_at:
                break
        return ParticleRun([b.name for b in self.balls], np.array(T), np.array(X), np.array(V), self.events,
                           self.m.copy(), self.g.copy())


def simulate_particles(balls: list[Ball], walls: list[Wall] = (), t_end: float = 1.0, stop_at: tuple = (),
                       **kw) -> ParticleRun:
    """Build a :class:`ParticleSim` (keywords as there) and run it to ``t_end`` s (see :meth:`ParticleSim.run`)."""
    return ParticleSim(balls, walls, **kw).run(t_end, stop_at)
