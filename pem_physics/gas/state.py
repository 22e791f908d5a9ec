"""The state of a hard-sphere gas, start states, and the result of a run.

Shapes: N particles in d = 2 (disks) or d = 3 (spheres) dimensions.

- ``positions`` (N, d): centres, in length units. In a periodic box they are kept in [0, L) per
  axis; between hard walls a particle of radius R stays in [R, L − R].
- ``velocities`` (N, d), length / time; ``radii`` (N,), length; ``masses`` (N,), mass;
- ``box`` (d,): box lengths L; ``periodic`` True for a periodic box, False for hard walls;
- ``container`` (:class:`Container`): the hard-walled region inside the box (hard walls only): the box
  itself (default), a sphere, a cylinder, and extra planes; a particle's surface stays inside it.

Temperature is kinetic with k_B = 1: T = Σ m v² / (d N) (energy units), the definition the start
states are rescaled to and :func:`pem_physics.gas.measure.temperature` reports.

Wall ids (hard-wall boxes, in event logs and ``wall_impulse``): wall ``2 a`` is the plane x_a = 0,
wall ``2 a + 1`` the plane x_a = L_a; an event log stores a wall event with ``j = -1 - wall``. Other
containers (:class:`Container`: a sphere, a cylinder, extra planes) add wall ids 2d, 2d + 1, …
"""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass, field

import numpy as np

from ..errors import ValidationError

#: Relative tolerance under which two particles at t = 0 count as overlapping (touching is allowed,
#: so a lattice at close packing is a valid start).
OVERLAP_TOL = 1e-10

#: Highest packing fraction random sequential insertion is asked to reach (it jams near 0.38 in
#: 3D and 0.55 in 2D, and slows down well before); denser starts use a lattice.
RANDOM_MAX = {2: 0.45, 3: 0.30}

#: Packing fraction (on the volume the centres reach) past which :func:`make_gas` refuses a random start
#: in a container: random sequential insertion jams near 0.38 (3D) and 0.547 (2D) and slows well before.
RANDOM_JAM = {2: 0.50, 3: 0.34}

#: Largest N for which :func:`make_gas` re-checks its start for overlaps with the O(N²) test.
VALIDATE_MAX = 20_000

#: Close-packing fractions of the lattices :func:`make_gas` builds.
LATTICE_MAX = {"fcc": math.pi / (3 * math.sqrt(2)), "triangular": math.pi / (2 * math.sqrt(3)),
               "square": math.pi / 4}


def ball_volume(radius, d: int):
    """Volume (d = 3) or area (d = 2) of a ball of the given radius (array or float)."""
    return (4.0 / 3.0) * math.pi * np.asarray(radius) ** 3 if d == 3 else math.pi * np.asarray(radius) ** 2


CONTAINERS = ("box", "sphere", "cylinder")

#: Container kinds as the compiled engine's runtime integer (one compiled case serves them all).
KIND_CODE = {"box": 0, "sphere": 1, "cylinder": 2}


@dataclass(eq=False)
class Container:
    """The hard-walled region a gas lives in, inside its box (d,) (which the engines' cell grid spans).

    - ``kind`` "box": the box faces (the default; a periodic box is the plain ``periodic`` state);
    - "sphere": centres of particles of radius r stay in |x − c| ≤ R_w − r (a circle in 2D), ``centre``
      c (d,), ``radius`` R_w (length); the sphere must fit in the box;
    - "cylinder" (d = 3): axis along box axis ``axis`` through ``centre`` (its ``axis`` component is not
      used), radius R_w; closed by the two box faces x_axis = 0 and x_axis = L_axis;
    - ``planes`` (P, d + 1): extra flat walls (a piston, a divider), each row (n, h) with n (d,) the unit
      normal pointing into the gas (walls.Plane's convention) and the gas on the side n · x ≥ h + r.

    Geometry follows :mod:`pem_physics.engine.contact.walls` (the gap of a particle is its signed distance to the
    wall, positive inside); :meth:`from_walls` converts its Plane, Sphere and Cylinder objects.
    Wall ids (event logs j = −1 − id, ``wall_impulse``): 2a and 2a + 1 the box faces x_a = 0 and
    x_a = L_a (faces a curved wall replaces never see a hit), then 2d the sphere or cylinder (when
    there is one), then the planes in order. All walls are elastic mirrors.
    """

    kind: str = "box"
    centre: np.ndarray | None = None
    radius: float = 0.0
    axis: int = 0
    planes: np.ndarray | None = None

    def __post_init__(self):
        if self.kind not in CONTAINERS:
            raise ValueError(f"container kind = {self.kind!r} must be one of {', '.join(CONTAINERS)}")
        self.radius = float(self.radius)
        self.axis = int(self.axis)
        if self.centre is not None:
            self.centre = np.array(self.centre, dtype=np.float64).reshape(-1)
        pl = np.zeros((0, 0)) if self.planes is None else np.array(self.planes, dtype=np.float64)
        if pl.size == 0:
            pl = pl.reshape(0, 0)
        elif pl.ndim != 2 or pl.shape[1] not in (3, 4):
            raise ValueError(f"planes must have shape (P, d + 1) (a unit normal n and an offset h per row), "
                             f"got {pl.shape}")
        self.planes = pl
        if self.kind != "box" and not (math.isfinite(self.radius) and self.radius > 0):
            raise ValueError(f"container radius = {self.radius!r} must be > 0 for a {self.kind}")

    @property
    def curved(self) -> bool:
        return self.kind != "box"

    @property
    def trivial(self) -> bool:
        """The plain box: nothing but the box faces."""
        return self.kind == "box" and len(self.planes) == 0

    def n_walls(self, d: int) -> int:
        return 2 * d + int(self.curved) + len(self.planes)

    def wall_names(self, d: int) -> list[str]:
        """A name per wall id ("x0-", "x0+", …, "sphere"/"cylinder", "plane0", …)."""
        names = [f"x{a}{s}" for a in range(d) for s in "-+"]
        if self.curved:
            names.append(self.kind)
        return names + [f"plane{k}" for k in range(len(self.planes))]

    def face_active(self, d: int) -> np.ndarray:
        """(d,) bool: the box faces on axis a are walls (all for a box, the cylinder's axis only, none
        for a sphere)."""
        act = np.full(d, self.kind == "box")
        if self.kind == "cylinder":
            act[self.axis] = True
        return act

    def check(self, box: np.ndarray, periodic: bool, max_radius: float) -> None:
        """ValueError naming what is wrong with this container in ``box`` (d,)."""
        d = box.size
        if self.trivial:
            return
        if periodic:
            raise ValueError(f"a {self.kind} container{' with planes' if len(self.planes) else ''} needs "
                             f"periodic=False (its walls close the gas in)")
        if self.curved:
            if self.centre is None or self.centre.size != d or not np.all(np.isfinite(self.centre)):
                raise ValueError(f"container centre must be {d} finite numbers, got {self.centre!r}")
            if self.kind == "cylinder":
                if d != 3:
                    raise ValueError("a cylinder container needs d = 3 (in 2D use 'sphere', a circle)")
                if not 0 <= self.axis < d:
                    raise ValueError(f"cylinder axis = {self.axis} must be 0, 1 or 2")
            across = [a for a in range(d) if not (self.kind == "cylinder" and a == self.axis)]
            for a in across:
                if self.centre[a] - self.radius < -1e-12 * self.radius or \
                        self.centre[a] + self.radius > box[a] * (1 + 1e-12):
                    raise ValueError(f"the {self.kind} (centre {self.centre.tolist()}, radius {self.radius:g}) "
                                     f"does not fit in the box on axis {a} (length {box[a]:g})")
            if self.radius <= max_radius:
                raise ValueError(f"container radius {self.radius:g} must exceed the largest particle radius "
                                 f"{max_radius:g}")
        if len(self.planes):
            if self.planes.shape[1] != d + 1:
                raise ValueError(f"planes must have shape (P, {d + 1}) for d = {d}, got {self.planes.shape}")
            if not np.all(np.isfinite(self.planes)):
                raise ValueError("planes must be finite")
            norm = np.linalg.norm(self.planes[:, :d], axis=1)
            if np.any(np.abs(norm - 1.0) > 1e-9):
                k = int(np.argmax(np.abs(norm - 1.0)))
                raise ValueError(f"planes[{k}] normal has length {norm[k]:g}; it must be a unit vector")

    def gaps(self, x: np.ndarray, r: np.ndarray, box: np.ndarray) -> np.ndarray:
        """(N, W) gap of each particle (positions (N, d), radii (N,)) to each wall id: distance of its
        surface to the wall, positive inside (inf for faces that are not walls)."""
        n, d = x.shape
        r = np.asarray(r, dtype=np.float64).reshape(-1, 1)
        out = np.full((n, self.n_walls(d)), np.inf)
        act = self.face_active(d)
        for a in range(d):
            if act[a]:
                out[:, 2 * a] = x[:, a] - r[:, 0]
                out[:, 2 * a + 1] = box[a] - x[:, a] - r[:, 0]
        k = 2 * d
        if self.curved:
            y = x - self.centre
            if self.kind == "cylinder":
                y[:, self.axis] = 0.0
            out[:, k] = self.radius - np.sqrt(np.sum(y * y, axis=1)) - r[:, 0]
            k += 1
        if len(self.planes):
            out[:, k:] = x @ self.planes[:, :d].T - self.planes[:, d] - r
        return out

    def accessible_volume(self, r: float, box: np.ndarray) -> float:
        """Volume (area in 2D) of the region the centres of radius-r particles reach; nan where it is not
        computed here (a sphere or cylinder cut by planes, a box cut by oblique planes). r = 0 gives the
        container's full volume."""
        d = box.size
        lo, hi = np.full(d, r), box - r
        for row in self.planes:
            nrm, h = row[:d], row[d]
            nz = np.flatnonzero(nrm != 0)
            if self.curved or nz.size != 1:
                return math.nan
            a = int(nz[0])
            if nrm[a] > 0:
                lo[a] = max(lo[a], (h + r) / nrm[a])
            else:
                hi[a] = min(hi[a], (h + r) / nrm[a])
        span = np.maximum(hi - lo, 0.0)
        if self.kind == "box":
            return float(np.prod(span))
        rho = max(self.radius - r, 0.0)
        if self.kind == "sphere":
            return float(ball_volume(rho, d))
        return math.pi * rho * rho * float(span[self.axis])

    def wall_areas(self, r: float, box: np.ndarray) -> np.ndarray:
        """(W,) area (length in 2D) of the surface each wall's contacts lie on: the surface the centres of
        radius-r particles touch (the wall moved in by r), so that the ideal gas gives impulse / (area · t)
        = N k T / accessible volume. nan for faces that are not walls and for planes other than
        axis-aligned ones in a box container."""
        d = box.size
        span = np.maximum(box - 2 * r, 0.0)
        out = np.full(self.n_walls(d), math.nan)
        act = self.face_active(d)
        rho = max(self.radius - r, 0.0)
        for a in range(d):
            if not act[a]:
                continue
            if self.kind == "box":
                out[2 * a] = out[2 * a + 1] = float(np.prod(np.delete(span, a)))
            else:  # the cylinder's caps
                out[2 * a] = out[2 * a + 1] = math.pi * rho * rho
        k = 2 * d
        if self.curved:
            if self.kind == "sphere":
                out[k] = 4 * math.pi * rho * rho if d == 3 else 2 * math.pi * rho
            else:
                out[k] = 2 * math.pi * rho * float(span[self.axis])
            k += 1
        for q, row in enumerate(self.planes):
            nz = np.flatnonzero(row[:d] != 0)
            if self.kind == "box" and nz.size == 1:
                out[k + q] = float(np.prod(np.delete(span, int(nz[0]))))
        return out

    def to_dict(self) -> dict:
        """A JSON-able description (summary.json)."""
        out: dict = {"kind": self.kind}
        if self.curved:
            out.update(centre=self.centre.tolist(), radius=self.radius)
            if self.kind == "cylinder":
                out["axis"] = self.axis
        if len(self.planes):
            out["planes"] = self.planes.tolist()
        return out

    @classmethod
    def from_walls(cls, walls, d: int = 3) -> Container:
        """A container from :mod:`pem_physics.engine.contact.walls` objects (duck-typed, not imported): at most one
        inside Sphere or Cylinder (its direction along a box axis) and any number of Plane walls (normal
        into the gas). Their 3-vectors are cut to d components (in 2D their third must be 0)."""
        kind, centre, radius, axis, planes = "box", None, 0.0, 0, []

        def cut(v, what):
            v = np.asarray(v, dtype=np.float64)
            if d == 2 and v[2] != 0:
                raise ValueError(f"{what} has a z component {v[2]:g}; a 2D gas lives in the plane z = 0")
            return v[:d]

        for w in walls:
            name = type(w).__name__
            if name == "Plane":
                nrm = cut(w.n, "plane normal")
                planes.append([*(nrm / np.linalg.norm(nrm)), float(nrm @ cut(w.point, "plane point"))
                               / np.linalg.norm(nrm)])
            elif name in ("Sphere", "Cylinder"):
                if kind != "box":
                    raise ValueError("a container has at most one sphere or cylinder wall")
                if getattr(w, "sign", 1.0) < 0:
                    raise ValueError(f"{name} wall {w.name!r} is an obstacle (inside=False); only containers "
                                     f"(inside=True) are supported")
                radius = float(w.radius)
                if name == "Sphere":
                    kind, centre = "sphere", cut(w.centre, "sphere centre")
                else:
                    hit = np.flatnonzero(np.abs(np.abs(np.asarray(w.a)) - 1.0) < 1e-12)
                    if hit.size != 1:
                        raise ValueError(f"cylinder {w.name!r} direction {np.asarray(w.a).tolist()} must lie "
                                         f"along a box axis")
                    kind, centre, axis = "cylinder", np.asarray(w.point, dtype=np.float64), int(hit[0])
            else:
                raise ValueError(f"wall {getattr(w, 'name', name)!r} of type {name} is not supported by the gas "
                                 f"(Plane, Sphere, Cylinder)")
        return cls(kind, centre, radius, axis, np.array(planes) if planes else None)


@dataclass
class GasState:
    """Hard disks or spheres in a box at time ``time`` (see the module docstring for shapes and units)."""

    positions: np.ndarray
    velocities: np.ndarray
    radii: np.ndarray
    masses: np.ndarray
    box: np.ndarray
    periodic: bool = True
    time: float = 0.0
    #: False skips the overlap check (engines passing on a state they produced; not for user input)
    validate: InitVar[bool] = True
    #: the hard-walled region (:class:`Container`); None is the plain box
    container: Container | None = None

    def __post_init__(self, validate: bool = True):
        self.positions = np.array(self.positions, dtype=np.float64, order="C")
        self.velocities = np.array(self.velocities, dtype=np.float64, order="C")
        self.box = np.array(self.box, dtype=np.float64).reshape(-1)
        d = self.box.size
        n = self.positions.shape[0] if self.positions.ndim == 2 else -1
        self.radii = np.array(np.broadcast_to(np.asarray(self.radii, dtype=np.float64), (max(n, 0),)))
        self.masses = np.array(np.broadcast_to(np.asarray(self.masses, dtype=np.float64), (max(n, 0),)))
        self.periodic = bool(self.periodic)
        self.time = float(self.time)
        if self.container is None:
            self.container = Container()
        elif not isinstance(self.container, Container):
            raise ValueError(f"container must be a Container, got {type(self.container).__name__}")
        if d not in (2, 3):
            raise ValueError(f"box must have 2 or 3 lengths (disks or spheres), got {d}")
        if self.positions.ndim != 2 or self.positions.shape[1] != d or n < 1:
            raise ValueError(f"positions must have shape (N, {d}) with N >= 1, got {self.positions.shape}")
        if self.velocities.shape != self.positions.shape:
            raise ValueError(f"velocities must have the shape of positions {self.positions.shape}, "
                             f"got {self.velocities.shape}")
        for name in ("box", "positions", "velocities", "radii", "masses"):
            bad = np.argwhere(~np.isfinite(getattr(self, name)))
            if bad.size:
                where = ", ".join(str(int(k)) for k in bad[0])
                raise ValueError(f"{name}[{where}] is not finite" if where else f"{name} is not finite")
        if not math.isfinite(self.time):
            raise ValueError("time is not finite")
        for name in ("box", "radii", "masses"):
            a = getattr(self, name)
            if np.any(a <= 0):
                k = int(np.argmax(a <= 0))
                raise ValueError(f"{name}[{k}] = {a[k]:g} must be > 0")
        sig_max = 2.0 * float(self.radii.max())
        if not self.container.trivial:
            self.container.check(self.box, self.periodic, float(self.radii.max()))
        if self.periodic:
            short = np.flatnonzero(self.box <= 2.0 * sig_max)
            if short.size:
                a = int(short[0])
                raise ValueError(f"box[{a}] = {self.box[a]:g} is not longer than twice the largest diameter "
                                 f"{sig_max:g} (the minimum image would miss collisions)")
            self.positions -= self.box * np.floor(self.positions / self.box)
        elif not self.container.trivial:
            gaps = self.container.gaps(self.positions, self.radii, self.box)
            out = np.argwhere(gaps < -OVERLAP_TOL * self.radii[:, None])
            if out.size:
                i, w = (int(x) for x in out[0])
                raise ValueError(f"particle {i} sticks out of the {self.container.kind} container through wall {w} "
                                 f"({self.container.wall_names(self.d)[w]}) at t={self.time:g}: gap {gaps[i, w]:.3g}, "
                                 f"radius {self.radii[i]:g}")
        else:
            lo = self.positions - self.radii[:, None]
            hi = self.positions + self.radii[:, None] - self.box
            out = np.argwhere((lo < -OVERLAP_TOL * self.radii[:, None]) | (hi > OVERLAP_TOL * self.radii[:, None]))
            if out.size:
                i, a = (int(x) for x in out[0])
                raise ValueError(f"particle {i} sticks out of the hard-wall box on axis {a} at t={self.time:g}: "
                                 f"position {self.positions[i, a]:g}, radius {self.radii[i]:g}, "
                                 f"box length {self.box[a]:g}")
        pair = first_overlap(self.positions, self.radii, self.box if self.periodic else None) if validate else None
        if pair is not None:
            i, j, dist = pair
            raise ValueError(f"particles {i} and {j} overlap at t={self.time:g}: distance {dist:.12g} < "
                             f"sum of radii {self.radii[i] + self.radii[j]:.12g}")

    @property
    def n(self) -> int:
        return self.positions.shape[0]

    @property
    def d(self) -> int:
        return self.box.size

    @property
    def volume(self) -> float:
        """Volume (d = 3) or area (d = 2) of the container: the box's, or the whole inside of the sphere,
        cylinder or planes (not only the part the centres reach: :meth:`accessible_volume`); nan where
        :meth:`Container.accessible_volume` does not compute it."""
        if self.container.trivial:
            return float(np.prod(self.box))
        return self.container.accessible_volume(0.0, self.box)

    def accessible_volume(self) -> float:
        """Volume (area) the centres of the largest particles reach: the container shrunk by their radius
        (the box itself in a periodic box)."""
        if self.periodic:
            return float(np.prod(self.box))
        return self.container.accessible_volume(float(self.radii.max()), self.box)

    @property
    def packing_fraction(self) -> float:
        return float(ball_volume(self.radii, self.d).sum()) / self.volume

    def kinetic_energy(self) -> float:
        return 0.5 * float(np.sum(self.masses * np.sum(self.velocities ** 2, axis=1)))

    def momentum(self) -> np.ndarray:
        """Total momentum (d,)."""
        return (self.masses[:, None] * self.velocities).sum(axis=0)

    def potential_energy(self, gravity=None) -> float:
        """Gravitational energy −Σ m g·x (energy units; zero at the origin) for gravity (d,) or None."""
        if gravity is None:
            return 0.0
        return -float(np.sum(self.masses * (self.positions @ np.asarray(gravity, dtype=np.float64))))

    def copy(self) -> GasState:
        return GasState(self.positions.copy(), self.velocities.copy(), self.radii.copy(), self.masses.copy(),
                        self.box.copy(), self.periodic, self.time, container=self.container)


def first_overlap(positions, radii, box=None, tol: float = OVERLAP_TOL):
    """The first overlapping pair (i, j, distance) with i < j and distance < (R_i + R_j)(1 − tol) — first in
    the order of (i, j) — or None.

    ``box`` (d,) for minimum-image distances in a periodic box. Pairs are found through cells at least as
    wide as the largest diameter (O(N) work and memory: 3^d neighbour cells of each particle's cell), or
    among all pairs (:func:`first_overlap_all_pairs`, the reference) when there are too few particles or cells
    for that to pay.
    """
    x = np.asarray(positions, dtype=np.float64)
    r = np.asarray(radii, dtype=np.float64)
    n, d = x.shape
    if n < 2:
        return None
    sig_max = 2.0 * float(r.max())
    if box is not None:
        L = np.asarray(box, dtype=np.float64)
        nc = np.floor(L / (sig_max * (1.0 + 1e-9))).astype(np.int64)
        x = x - L * np.floor(x / L)
        lo = np.zeros(d)
    else:
        lo = x.min(axis=0)
        nc = np.floor((x.max(axis=0) - lo) / (sig_max * (1.0 + 1e-9))).astype(np.int64) + 1
    # a periodic axis of fewer than 3 cells would list a neighbour cell twice; too many cells cost memory
    if n < 512 or (box is not None and np.any(nc < 3)) or float(np.prod(nc.astype(np.float64))) > 8.0 * n + 4096:
        return first_overlap_all_pairs(x, r, box, tol)
    width = (L / nc) if box is not None else np.full(d, sig_max * (1.0 + 1e-9))
    ci = np.minimum(np.floor((x - lo) / width).astype(np.int64), nc - 1)   # round-off at the top face
    stride = np.cumprod(np.concatenate([[1], nc[:-1]]))
    cell = ci @ stride
    order = np.argsort(cell, kind="stable")
    # the particles of cell c: order[first[c]:first[c + 1]]
    first = np.searchsorted(cell[order], np.arange(int(np.prod(nc)) + 1))
    best = None
    for off in np.ndindex(*(3,) * d):
        o = np.asarray(off) - 1
        cj = ci + o
        if box is not None:
            cj %= nc
            keep = np.arange(n)
        else:
            keep = np.flatnonzero(np.all((cj >= 0) & (cj < nc), axis=1))
        nb = cj[keep] @ stride
        cnt = first[nb + 1] - first[nb]
        i = np.repeat(keep, cnt)
        # the k-th particle of each neighbour cell: its start in `order` plus k
        k = np.arange(len(i)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        j = order[np.repeat(first[nb], cnt) + k]
        pair = i < j
        i, j = i[pair], j[pair]
        dr = x[i] - x[j]
        if box is not None:
            dr -= L * np.floor(dr / L + 0.5)
        dist2 = np.einsum("ij,ij->i", dr, dr)
        sig = (r[i] + r[j]) * (1.0 - tol)
        bad = np.flatnonzero(dist2 < sig * sig)
        if bad.size:
            key = i[bad] * n + j[bad]
            b = bad[np.argmin(key)]
            cand = (int(i[b]), int(j[b]), float(math.sqrt(dist2[b])))
            if best is None or cand[:2] < best[:2]:
                best = cand
    return best


def first_overlap_all_pairs(positions, radii, box=None, tol: float = OVERLAP_TOL):
    """:func:`first_overlap` by testing all pairs, in row blocks so that memory stays ~O(N · block): the
    reference the cell search is tested against, and the method for small N."""
    x = np.asarray(positions, dtype=np.float64)
    r = np.asarray(radii, dtype=np.float64)
    n = len(x)
    block = max(1, 2_000_000 // max(n, 1))
    for s in range(0, n, block):
        e = min(n, s + block)
        dr = x[s:e, None, :] - x[None, :, :]
        if box is not None:
            dr -= box * np.floor(dr / box + 0.5)
        dist2 = np.sum(dr * dr, axis=-1)
        sig = (r[s:e, None] + r[None, :]) * (1.0 - tol)
        bad = (dist2 < sig * sig) & (np.arange(s, e)[:, None] < np.arange(n)[None, :])
        if bad.any():
            i, j = np.argwhere(bad)[0]
            return int(i + s), int(j), float(math.sqrt(dist2[i, j]))
    return None


def maxwell_boltzmann_velocities(masses, temperature: float, d: int, rng: np.random.Generator) -> np.ndarray:
    """Velocities (N, d) drawn from Maxwell–Boltzmann at ``temperature`` (k_B = 1), total momentum
    removed (N ≥ 2), then rescaled so that Σ m v² / (d N) equals ``temperature`` exactly."""
    m = np.asarray(masses, dtype=np.float64)
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature = {temperature!r} must be finite and >= 0")
    v = rng.standard_normal((m.size, d)) * np.sqrt(temperature / m)[:, None]
    if m.size >= 2:
        v -= (m[:, None] * v).sum(axis=0) / m.sum()
    t_now = float(np.sum(m[:, None] * v * v)) / (d * m.size)
    return v * math.sqrt(temperature / t_now) if t_now > 0 else np.zeros_like(v)


def _box_lengths(n: int, radius: float, eta: float, d: int, aspect=None) -> np.ndarray:
    """Box lengths (d,) holding n balls of ``radius`` at packing fraction eta; ``aspect`` (d,) the shape."""
    vol = n * float(ball_volume(radius, d)) / eta
    shape = np.ones(d) if aspect is None else np.asarray(aspect, dtype=np.float64)
    return shape * (vol / np.prod(shape)) ** (1.0 / d)


def _lattice_sites(kind: str, n: int, d: int):
    """Sites of a lattice with at least n sites in unit-free cell coordinates, and the box shape.

    Returns (sites (M, d) in [0, 1) box fractions, aspect (d,), nearest-neighbour distance as a
    fraction of the box length on axis 0).
    """
    if kind == "fcc":
        k = math.ceil((n / 4) ** (1 / 3) - 1e-9)
        base = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
        g = np.stack(np.meshgrid(*(np.arange(k),) * 3, indexing="ij"), -1).reshape(-1, 1, 3)
        sites = ((g + base[None]) / k).reshape(-1, 3) + 0.25 / k
        return sites, np.ones(3), 1.0 / (k * math.sqrt(2))
    if kind == "square":
        k = math.ceil(math.sqrt(n) - 1e-9)
        g = np.stack(np.meshgrid(np.arange(k), np.arange(k), indexing="ij"), -1).reshape(-1, 2)
        return (g + 0.5) / k, np.ones(2), 1.0 / k
    # triangular: rows ny (even, so the periodic box closes), columns nx, box aspect nx : ny √3/2
    nx = max(1, math.ceil(math.sqrt(n * math.sqrt(3) / 2) - 1e-9))
    ny = math.ceil(n / nx)
    ny += ny % 2
    g = np.stack(np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij"), -1).reshape(-1, 2).astype(float)
    g[:, 0] += 0.5 * (g[:, 1] % 2) + 0.25
    g[:, 1] += 0.5
    aspect = np.array([nx, ny * math.sqrt(3) / 2])
    return g / np.array([nx, ny]), aspect / aspect[0], 1.0 / nx


def make_gas(n: int, packing_fraction: float, d: int = 3, *, start: str = "auto", seed: int = 0,
             temperature: float = 1.0, radius: float = 0.5, mass: float = 1.0, periodic: bool = True,
             lattice: str | None = None, container: str = "box", axis: int = 2,
             aspect: float = 1.0) -> GasState:
    """N equal balls (radius, mass) at a packing fraction, Maxwell–Boltzmann velocities at ``temperature``.

    ``start``: "random" (random sequential insertion, packing fraction up to :data:`RANDOM_MAX`),
    "lattice" (``lattice`` "fcc" in 3D, "triangular" (default) or "square" in 2D; with N below the
    number of sites, N sites are picked at random) or "auto" (random when allowed, else lattice).
    The box is a cube (square; a rectangle close to a square for the triangular lattice) of the
    volume that gives the packing fraction. Deterministic for a given ``seed``.

    ``container`` "sphere" or "cylinder" (hard walls, random start only; ``periodic`` is ignored): the
    packing fraction is N v_ball over the *whole* container volume, (4/3) π R_w³ for a sphere (π R_w² in
    2D), π R_w² L for a cylinder of length L = ``aspect`` × 2 R_w along box axis ``axis``; the box is
    the container's bounding box, the container centred in it. The centres reach less, the container
    shrunk by the radius (:meth:`GasState.accessible_volume`); a packing fraction that, counted on that
    accessible volume, is past what random insertion reaches (:data:`RANDOM_JAM`) raises ValueError.
    """
    if d not in (2, 3):
        raise ValueError(f"d = {d!r} must be 2 (disks) or 3 (spheres)")
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n = {n!r} must be an integer >= 1")
    if not (math.isfinite(radius) and radius > 0):
        raise ValueError(f"radius = {radius!r} must be > 0")
    if not (math.isfinite(mass) and mass > 0):
        raise ValueError(f"mass = {mass!r} must be > 0")
    if start not in ("auto", "random", "lattice"):
        raise ValueError(f"start = {start!r} must be 'auto', 'random' or 'lattice'")
    lattice = lattice or ("fcc" if d == 3 else "triangular")
    if lattice not in LATTICE_MAX or (lattice == "fcc") != (d == 3):
        raise ValueError(f"lattice = {lattice!r} is not one for d = {d} ('fcc' in 3D, 'triangular' or 'square' in 2D)")
    if container not in CONTAINERS:
        raise ValueError(f"container = {container!r} must be one of {', '.join(CONTAINERS)}")
    if container != "box":
        if start == "lattice":
            raise ValueError(f"start = 'lattice' is for box containers; a {container} starts random")
        start = "random"
    if start == "auto":
        start = "random" if packing_fraction <= RANDOM_MAX[d] else "lattice"
    top = RANDOM_MAX[d] if start == "random" else LATTICE_MAX[lattice]
    if not (math.isfinite(packing_fraction) and 0 < packing_fraction <= top):
        raise ValueError(f"packing_fraction = {packing_fraction!r} is out of range for start={start!r}"
                         + (f" lattice={lattice!r}" if start == "lattice" else "") + f": must be in (0, {top:.4f}]")
    rng = np.random.default_rng(seed)
    radii = np.full(n, float(radius))
    masses = np.full(n, float(mass))
    if container != "box":
        box, cont = _container_for(container, n, radius, packing_fraction, d, axis, aspect)
        acc = cont.accessible_volume(radius, box)
        eta_acc = n * float(ball_volume(radius, d)) / acc if acc > 0 else math.inf
        if eta_acc > RANDOM_JAM[d]:
            raise ValueError(f"packing_fraction = {packing_fraction!r} cannot be reached in a {container} of "
                             f"{n} particles: the centres reach only {acc:.4g} of its volume "
                             f"{cont.accessible_volume(0.0, box):.4g}, a packing fraction {eta_acc:.3f} there, past "
                             f"the {RANDOM_JAM[d]} random insertion reaches (use more particles or a lower η)")
        pos = random_insertion(n, radius, box, False, packing_fraction, rng, container=cont)
        vel = maxwell_boltzmann_velocities(masses, temperature, d, rng)
        return GasState(pos, vel, radii, masses, box, False, validate=n <= VALIDATE_MAX, container=cont)
    if start == "random":
        box = _box_lengths(n, radius, packing_fraction, d)
        pos = random_insertion(n, radius, box, periodic, packing_fraction, rng)
    else:
        sites, aspect, nn = _lattice_sites(lattice, n, d)
        box = _box_lengths(n, radius, packing_fraction, d, aspect)
        if len(sites) > n:
            sites = sites[np.sort(rng.choice(len(sites), n, replace=False))]
        if periodic:
            pos = sites * box
            spacing = nn * box[0]
        else:  # stretch the lattice's extreme sites onto the walls of the region the centres may reach
            lo, hi = sites.min(axis=0), sites.max(axis=0)
            span = np.where(hi > lo, hi - lo, 1.0)
            pos = radius + (sites - lo) / span * (box - 2 * radius)
            spacing = float(np.min(nn / span * (box - 2 * radius) * np.where(hi > lo, 1.0, np.inf)))
        if spacing < 2 * radius * (1 - OVERLAP_TOL):
            raise ValueError(f"packing_fraction = {packing_fraction!r} is too high for a {lattice} lattice of "
                             f"{len(sites)} sites holding {n} particles" + ("" if periodic else " between hard walls"))
    vel = maxwell_boltzmann_velocities(masses, temperature, d, rng)
    # both constructions exclude overlaps (insertion tests each try, the lattice its spacing); the O(N²)
    # check stays as a safety net where it is cheap
    return GasState(pos, vel, radii, masses, box, periodic, validate=n <= VALIDATE_MAX)


def gas_in_container(container: Container, box, n: int, *, radius: float = 0.5, mass: float = 1.0,
                     temperature: float = 1.0, seed: int = 0) -> GasState:
    """N equal balls placed at random (no overlaps) inside any ``container`` in the hard-wall ``box`` (d,)
    (planes included), Maxwell–Boltzmann velocities at ``temperature``; ValueError when the centres' region
    is past what random insertion reaches (:data:`RANDOM_JAM`) or has no room. Deterministic for a seed."""
    box = np.array(box, dtype=np.float64).reshape(-1)
    d = box.size
    container.check(box, False, float(radius))
    acc = container.accessible_volume(float(radius), box)
    if acc <= 0:
        raise ValueError(f"the {container.kind} container in box {box.tolist()} leaves no room for centres of "
                         f"radius {radius:g}")
    eta_acc = n * float(ball_volume(radius, d)) / acc  # nan: a volume not computed here, insertion decides
    if eta_acc > RANDOM_JAM.get(d, 0.0):
        raise ValueError(f"{n} balls of radius {radius:g} fill {eta_acc:.3f} of the volume their centres reach "
                         f"in this {container.kind}, past the {RANDOM_JAM.get(d)} random insertion reaches")
    rng = np.random.default_rng(seed)
    pos = random_insertion(n, float(radius), box, False, eta_acc, rng, container=container)
    masses = np.full(n, float(mass))
    vel = maxwell_boltzmann_velocities(masses, temperature, d, rng)
    return GasState(pos, vel, np.full(n, float(radius)), masses, box, False, validate=n <= VALIDATE_MAX,
                    container=container)


def _container_for(kind: str, n: int, radius: float, eta: float, d: int, axis: int, aspect: float):
    """(box (d,), Container) of a sphere or cylinder whose whole volume holds n balls at packing fraction eta."""
    if not (math.isfinite(eta) and 0 < eta < 1):
        raise ValueError(f"packing_fraction = {eta!r} must be in (0, 1)")
    vol = n * float(ball_volume(radius, d)) / eta
    if kind == "sphere":
        rw = (vol / float(ball_volume(1.0, d))) ** (1.0 / d)
        return np.full(d, 2 * rw), Container("sphere", np.full(d, rw), rw)
    if d != 3:
        raise ValueError("container = 'cylinder' needs d = 3 (in 2D use 'sphere', a circle)")
    if axis not in (0, 1, 2):
        raise ValueError(f"axis = {axis!r} must be 0, 1 or 2")
    if not (math.isfinite(aspect) and aspect > 0):
        raise ValueError(f"aspect = {aspect!r} (cylinder length over diameter) must be > 0")
    rw = (vol / (2 * math.pi * aspect)) ** (1.0 / 3.0)
    box = np.full(3, 2 * rw)
    box[axis] = 2 * rw * aspect
    return box, Container("cylinder", box / 2, rw, axis)


def random_insertion(n, radius, box, periodic, eta, rng, max_tries: int = 2000, container=None):
    """Random sequential insertion of n balls of ``radius`` (a cell grid keeps each try O(1)); with a
    non-box ``container``, tries are drawn in the bounding box of the region the centres reach and the
    ones outside it are rejected."""
    d = box.size
    sig = 2.0 * radius
    lo = np.zeros(d) if periodic else np.full(d, radius)
    hi = box if periodic else box - radius
    inside = None
    if container is not None and not container.trivial:
        if container.curved:
            half = np.full(d, container.radius - radius)
            across = np.arange(d) != container.axis if container.kind == "cylinder" else np.ones(d, bool)
            lo = np.where(across, np.maximum(lo, container.centre - half), lo)
            hi = np.where(across, np.minimum(hi, container.centre + half), hi)
        cen = container.centre.copy() if container.curved else np.zeros(d)
        keep = np.ones(d)
        if container.kind == "cylinder":
            keep[container.axis] = 0.0
        rho2 = (container.radius - radius) ** 2
        planes = container.planes

        def inside(x):
            if container.curved:
                y = (x - cen) * keep
                if float(y @ y) > rho2:
                    return False
            return not len(planes) or bool(np.all(planes[:, :d] @ x - planes[:, d] - radius >= 0.0))
    nc = np.maximum(np.floor(box / sig).astype(int), 1)
    width = box / nc
    # cells keyed by their flat index; the 3^d around a try found with one vectorised step
    strides = np.cumprod(np.concatenate([nc[1:], [1]])[::-1])[::-1]
    grid: dict[int, list[int]] = {}
    pos = np.empty((n, d))
    offsets = np.stack(np.meshgrid(*([np.arange(-1, 2)] * d), indexing="ij"), -1).reshape(-1, d)
    for k in range(n):
        for _ in range(max_tries):
            x = lo + rng.random(d) * (hi - lo)
            if inside is not None and not inside(x):
                continue
            c = np.minimum((x // width).astype(int), nc - 1)
            cc = c + offsets
            if periodic:
                cc %= nc
            else:
                cc = cc[np.all((cc >= 0) & (cc < nc), axis=1)]
            near = [j for key in (cc @ strides).tolist() for j in grid.get(key, ())]
            if near:
                dr = pos[near] - x
                if periodic:
                    dr -= box * np.floor(dr / box + 0.5)
                if np.min(np.sum(dr * dr, axis=1)) < sig * sig:
                    continue
            pos[k] = x
            grid.setdefault(int(c @ strides), []).append(k)
            break
        else:
            raise ValueError(f"packing_fraction = {eta!r}: random insertion found no room for particle {k} of {n} "
                             f"after {max_tries} tries; use start='lattice'")
    return pos


@dataclass
class EventLog:
    """Events in the order they happened: ``time`` (K,), particle ``i`` (K,) and partner ``j`` (K,)
    (j ≥ 0 another particle, i < j; j < 0 hard wall ``-1 - j``, see the module docstring)."""

    time: np.ndarray
    i: np.ndarray
    j: np.ndarray

    def __len__(self) -> int:
        return len(self.time)

    def collisions(self) -> EventLog:
        """Only the pair collisions."""
        k = self.j >= 0
        return EventLog(self.time[k], self.i[k], self.j[k])


@dataclass
class GasRecords:
    """The gas at fixed record times (for animation and time series), R records of N particles:

    - ``times`` (R,); ``positions`` (R, N, d) (wrapped into a periodic box); ``velocities`` (R, N, d);
    - ``collisions`` (R,) pair collisions and ``virial`` (R,) the collision virial Σ m_i Δv_i · r_ij
      since the start, ``kinetic`` (R,) and ``potential`` (R,) energies (potential: −Σ m g·x, 0
      without gravity)."""

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    collisions: np.ndarray
    virial: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray

    def __len__(self) -> int:
        return len(self.times)


def record_times(t0: float, t_end: float, interval: float) -> np.ndarray:
    """t0, t0 + Δ, t0 + 2Δ, … ≤ t_end (each t0 + kΔ, not a running sum), and t_end itself at the end."""
    if not (math.isfinite(interval) and interval > 0):
        raise ValueError(f"record_interval = {interval!r} must be > 0")
    k = int(math.floor((t_end - t0) / interval * (1 + 1e-12)))
    if k > 10_000_000:
        raise ValueError(f"record_interval = {interval!r} gives {k} records over t = {t0:g}…{t_end:g}; at most 1e7")
    times = t0 + interval * np.arange(k + 1)
    times = times[times <= t_end]
    if t_end - times[-1] > 1e-9 * interval:
        times = np.append(times, t_end)
    return times


@dataclass
class GasRun:
    """The result of a run from ``t_start`` to ``t_end``.

    - ``state``: the final state at ``t_end`` (positions wrapped into a periodic box);
    - ``n_collisions``, ``n_wall_events``: event counts;
    - ``virial``: Σ over collisions of m_i Δv_i · r_ij (mass · length² / time; r_ij = r_i − r_j at
      contact), so that P = (2 K + virial / (t_end − t_start)) / (d V) for a gas of kinetic energy K;
    - ``wall_impulse`` (W,): momentum given to each hard wall (mass · length / time), W = 2d for a box
      (wall ids in the module docstring and :class:`Container`);
    - ``block_times`` (B+1,), ``block_virial`` (B,), ``block_collisions`` (B,), ``block_kinetic`` (B,):
      the same sums over consecutive time blocks, and the kinetic energy at each block's end, for
      error bars (:func:`pem_physics.gas.measure.pressure`);
    - ``log``: the events (:class:`EventLog`) when asked for, else None;
    - ``complete``: False when the run was interrupted (``t_end`` is then where it stopped);
    - ``info``: engine ("numba" or "numpy"), wall time, event counts by kind, warnings;
    - ``records``: the gas at fixed times (:class:`GasRecords`) when a record interval was given, else None;
    - ``gravity`` (d,): the acceleration of the run (zeros without gravity); ``restitution``, ``tc``;
    - ``block_wall_impulse`` (B, W): ``wall_impulse`` per time block (None where the method does not keep it),
      for the wall pressure's error bar (:func:`pem_physics.gas.measure.wall_pressure`).
    """

    state: GasState
    t_start: float
    t_end: float
    n_collisions: int
    n_wall_events: int
    virial: float
    wall_impulse: np.ndarray
    block_times: np.ndarray
    block_virial: np.ndarray
    block_collisions: np.ndarray
    block_kinetic: np.ndarray
    log: EventLog | None = None
    complete: bool = True
    info: dict = field(default_factory=dict)
    records: GasRecords | None = None
    gravity: np.ndarray | None = None
    restitution: float = 1.0
    tc: float = 0.0
    block_wall_impulse: np.ndarray | None = None

    @property
    def duration(self) -> float:
        return self.t_end - self.t_start


#: Why the event-driven engines refuse e = 0 (the timestep method takes it).
STICKY = ("restitution = 0: perfectly inelastic hard spheres stick on contact, and an event-driven run then stalls "
          "on collisions at zero speed (the TC model cannot part two spheres that stay touching); use a small e > 0 "
          "(e.g. 0.001: clusters still form and cool) or method = \"timestep\"")


def check_run_args(state: GasState, t_end: float, restitution: float, blocks: int, event: bool = True) -> None:
    """Shared argument checks of the engines (ValueError naming the argument); ``event``: an event-driven engine,
    which refuses e = 0 (:data:`STICKY`)."""
    if not isinstance(state, GasState):
        raise ValueError(f"state must be a GasState, got {type(state).__name__}")
    if not (math.isfinite(t_end) and t_end >= state.time):
        raise ValueError(f"t_end = {t_end!r} must be finite and >= the state's time {state.time:g}")
    if not (math.isfinite(restitution) and 0 <= restitution <= 1):
        raise ValueError(f"restitution = {restitution!r} must be in [0, 1]")
    if event and restitution == 0:
        raise ValueError(STICKY)
    if not isinstance(blocks, (int, np.integer)) or blocks < 1:
        raise ValueError(f"blocks = {blocks!r} must be an integer >= 1")


def check_gravity(state: GasState, gravity) -> np.ndarray:
    """Gravity as a (d,) array (zeros for None); a nonzero one needs a hard-wall box (ValueError naming it)."""
    if gravity is None:
        return np.zeros(state.d)
    g = np.array(gravity, dtype=np.float64).reshape(-1)
    if g.size != state.d or not np.all(np.isfinite(g)):
        raise ValueError(f"gravity = {np.asarray(gravity).tolist()!r} must be {state.d} finite numbers "
                         f"(length / time²)")
    if np.any(g != 0) and state.periodic:
        raise ValueError("gravity needs hard walls in its direction: a periodic box has none (use periodic=False)")
    if np.any(g != 0) and state.container.curved:
        # a parabola against a sphere or cylinder is a quartic in time: not supported (box faces and planes are)
        raise ValidationError("gravity", f"gravity with a curved ({state.container.kind}) container is not "
                                         f"supported: use container 'box' (planes allowed) or no gravity")
    return g


def collapse_message(restitution: float) -> str:
    """Why tc = 0 (the TC model off) is refused with ``restitution`` < 1, and the fix: one line."""
    return (f"0 turns the TC model off, and inelastic spheres (restitution {restitution:g} < 1) then undergo inelastic "
            f"collapse (infinitely many collisions in a finite time): the event-driven run would never end; give "
            f"tc > 0 or None (the default picks one), restitution = 1, or the fixed-step method (run_timestep)")


#: The TC model's default t_c as a fraction of the time to fly the smallest diameter at the start's speed scale.
TC_FRACTION = 1e-4
#: Under gravity, at least this fraction of √(σ_min / |g|): a settled pile keeps colliding about every t_c
#: (its particles rest on each other), so t_c sets the cost, ~N / t_c events per unit time.
TC_GRAVITY_FRACTION = 1e-3


def default_tc(state: GasState, restitution: float, gravity, tc: float | None) -> float:
    """The TC model's time t_c (Luding & McNamara 1998) guarding an inelastic gas against collapse.

    With e < 1 a cluster can make infinitely many collisions in finite time (inelastic collapse):
    the run would stall. In the TC model a collision of a particle that collided less than t_c ago
    is elastic, so intervals cannot shrink below ~t_c. ``tc`` None picks t_c = :data:`TC_FRACTION`
    × σ_min / u with u the rms speed at the start, under gravity at least :data:`TC_GRAVITY_FRACTION`
    × √(σ_min / |g|) (a pile resting on the floor collides about every t_c), and 0 (off) for e = 1;
    an explicit ``tc`` ≥ 0 is used as given, but ``tc`` = 0 with e < 1 is refused (ValidationError
    naming ``tc``): without the model the run could never end. Every event-driven run's entry point
    (:func:`.edmd.run`, :func:`.reference.run_reference`, :func:`.timestep.missed_collisions`) resolves
    its t_c here.
    """
    if tc is not None:
        if not (math.isfinite(tc) and tc >= 0):
            raise ValueError(f"tc = {tc!r} must be finite and >= 0 (time units)")
        if tc == 0 and restitution < 1:
            raise ValidationError("tc", collapse_message(restitution))
        return float(tc)
    if restitution >= 1.0:
        return 0.0
    sig = 2.0 * float(state.radii.min())
    u = math.sqrt(float(np.sum(state.masses * np.sum(state.velocities ** 2, axis=1))) / float(state.masses.sum()))
    g = np.zeros(state.d) if gravity is None else np.asarray(gravity, dtype=np.float64)
    tc = TC_FRACTION * sig / u if u > 0 else 0.0
    g_abs = float(np.linalg.norm(g))
    if g_abs > 0:
        tc = max(tc, TC_GRAVITY_FRACTION * math.sqrt(sig / g_abs))
    return tc
