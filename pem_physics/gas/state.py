"""The state of a hard-sphere gas, start states, and the result of a run.

Shapes: N particles in d = 2 (disks) or d = 3 (spheres) dimensions.

- ``positions`` (N, d): centres, in length units. In a periodic box they are kept in [0, L) per
  axis; between hard walls a particle of radius R stays in [R, L − R].
- ``velocities`` (N, d), length / time; ``radii`` (N,), length; ``masses`` (N,), mass;
- ``box`` (d,): box lengths L; ``periodic`` True for a periodic box, False for hard walls.

Temperature is kinetic with k_B = 1: T = Σ m v² / (d N) (energy units), the definition the start
states are rescaled to and :func:`pem_physics.gas.measure.temperature` reports.

Wall ids (hard-wall boxes, in event logs and ``wall_impulse``): wall ``2 a`` is the plane x_a = 0,
wall ``2 a + 1`` the plane x_a = L_a; an event log stores a wall event with ``j = -1 - wall``.
"""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass, field

import numpy as np

#: Relative tolerance under which two particles at t = 0 count as overlapping (touching is allowed,
#: so a lattice at close packing is a valid start).
OVERLAP_TOL = 1e-10

#: Highest packing fraction random sequential insertion is asked to reach (it jams near 0.38 in
#: 3D and 0.55 in 2D, and slows down well before); denser starts use a lattice.
RANDOM_MAX = {2: 0.45, 3: 0.30}

#: Largest N for which :func:`make_gas` re-checks its start for overlaps with the O(N²) test.
VALIDATE_MAX = 20_000

#: Close-packing fractions of the lattices :func:`make_gas` builds.
LATTICE_MAX = {"fcc": math.pi / (3 * math.sqrt(2)), "triangular": math.pi / (2 * math.sqrt(3)),
               "square": math.pi / 4}


def ball_volume(radius, d: int):
    """Volume (d = 3) or area (d = 2) of a ball of the given radius (array or float)."""
    return (4.0 / 3.0) * math.pi * np.asarray(radius) ** 3 if d == 3 else math.pi * np.asarray(radius) ** 2


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
    #: False skips the O(N²) overlap check (engines passing on a state they produced; not for user input)
    validate: InitVar[bool] = True

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
        if self.periodic:
            short = np.flatnonzero(self.box <= 2.0 * sig_max)
            if short.size:
                a = int(short[0])
                raise ValueError(f"box[{a}] = {self.box[a]:g} is not longer than twice the largest diameter "
                                 f"{sig_max:g} (the minimum image would miss collisions)")
            self.positions -= self.box * np.floor(self.positions / self.box)
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
        """Box volume (d = 3) or area (d = 2)."""
        return float(np.prod(self.box))

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
                        self.box.copy(), self.periodic, self.time)


def first_overlap(positions, radii, box=None, tol: float = OVERLAP_TOL):
    """The first overlapping pair (i, j, distance) with distance < (R_i + R_j)(1 − tol), or None.

    ``box`` (d,) for minimum-image distances in a periodic box. All pairs, in row blocks so that
    memory stays ~O(N · block).
    """
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
             lattice: str | None = None) -> GasState:
    """N equal balls (radius, mass) at a packing fraction, Maxwell–Boltzmann velocities at ``temperature``.

    ``start``: "random" (random sequential insertion, packing fraction up to :data:`RANDOM_MAX`),
    "lattice" (``lattice`` "fcc" in 3D, "triangular" (default) or "square" in 2D; with N below the
    number of sites, N sites are picked at random) or "auto" (random when allowed, else lattice).
    The box is a cube (square; a rectangle close to a square for the triangular lattice) of the
    volume that gives the packing fraction. Deterministic for a given ``seed``.
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
    if start == "auto":
        start = "random" if packing_fraction <= RANDOM_MAX[d] else "lattice"
    top = RANDOM_MAX[d] if start == "random" else LATTICE_MAX[lattice]
    if not (math.isfinite(packing_fraction) and 0 < packing_fraction <= top):
        raise ValueError(f"packing_fraction = {packing_fraction!r} is out of range for start={start!r}"
                         + (f" lattice={lattice!r}" if start == "lattice" else "") + f": must be in (0, {top:.4f}]")
    rng = np.random.default_rng(seed)
    radii = np.full(n, float(radius))
    masses = np.full(n, float(mass))
    if start == "random":
        box = _box_lengths(n, radius, packing_fraction, d)
        pos = _random_insertion(n, radius, box, periodic, packing_fraction, rng)
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


def _random_insertion(n, radius, box, periodic, eta, rng, max_tries: int = 2000):
    """Random sequential insertion of n balls of ``radius`` (a cell grid keeps each try O(1))."""
    d = box.size
    sig = 2.0 * radius
    lo = np.zeros(d) if periodic else np.full(d, radius)
    hi = box if periodic else box - radius
    nc = np.maximum(np.floor(box / sig).astype(int), 1)
    width = box / nc
    grid: dict[tuple, list[int]] = {}
    pos = np.empty((n, d))
    offsets = np.stack(np.meshgrid(*([np.arange(-1, 2)] * d), indexing="ij"), -1).reshape(-1, d)
    for k in range(n):
        for _ in range(max_tries):
            x = lo + rng.random(d) * (hi - lo)
            c = np.minimum((x // width).astype(int), nc - 1)
            near = []
            for off in offsets:
                cc = c + off
                if periodic:
                    cc %= nc
                elif np.any(cc < 0) or np.any(cc >= nc):
                    continue
                near += grid.get(tuple(cc), [])
            if near:
                dr = pos[near] - x
                if periodic:
                    dr -= box * np.floor(dr / box + 0.5)
                if np.min(np.sum(dr * dr, axis=1)) < sig * sig:
                    continue
            pos[k] = x
            grid.setdefault(tuple(c), []).append(k)
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
    - ``wall_impulse`` (2d,): momentum given to each hard wall (mass · length / time);
    - ``block_times`` (B+1,), ``block_virial`` (B,), ``block_collisions`` (B,), ``block_kinetic`` (B,):
      the same sums over consecutive time blocks, and the kinetic energy at each block's end, for
      error bars (:func:`pem_physics.gas.measure.pressure`);
    - ``log``: the events (:class:`EventLog`) when asked for, else None;
    - ``complete``: False when the run was interrupted (``t_end`` is then where it stopped);
    - ``info``: engine ("numba" or "numpy"), wall time, event counts by kind, warnings;
    - ``records``: the gas at fixed times (:class:`GasRecords`) when a record interval was given, else None;
    - ``gravity`` (d,): the acceleration of the run (zeros without gravity); ``restitution``, ``tc``.
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

    @property
    def duration(self) -> float:
        return self.t_end - self.t_start


def check_run_args(state: GasState, t_end: float, restitution: float, blocks: int) -> None:
    """Shared argument checks of the engines (ValueError naming the argument)."""
    if not isinstance(state, GasState):
        raise ValueError(f"state must be a GasState, got {type(state).__name__}")
    if not (math.isfinite(t_end) and t_end >= state.time):
        raise ValueError(f"t_end = {t_end!r} must be finite and >= the state's time {state.time:g}")
    if not (math.isfinite(restitution) and 0 <= restitution <= 1):
        raise ValueError(f"restitution = {restitution!r} must be in [0, 1]")
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
    return g


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
    an explicit ``tc`` ≥ 0 is used as given.
    """
    if tc is not None:
        if not (math.isfinite(tc) and tc >= 0):
            raise ValueError(f"tc = {tc!r} must be finite and >= 0 (time units)")
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
