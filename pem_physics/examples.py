"""Ready-made scenes (SI units), used by the CLI (``example:NAME``), the demo and the add-on.

Each builder takes keyword overrides for its main parameters and returns a
:class:`~pem_physics.model.Scene`.
"""

from __future__ import annotations

import numpy as np

from .model.elliptic import elliptic_ke
from .model.inertia import Cylinder, MassProperties, Sphere
from .model.rotations import axis_angle_matrix
from .model.scene import Body, Dipole, Scene, Settings

#: T-handle of the tennis-racket article (kg·m², principal axes).
T_HANDLE_INERTIA = np.diag([62.2, 171.5, 210.5]) * 1e-6


def three_magnet(friction: float = 2e-4, release=(0.06, 0.035), t_end: float = 20.0, dt: float = 1e-3,
                 magnet_radius: float = 0.05, moment: float = 0.5, bob_moment: float = 0.3) -> Scene:
    """Magnetic pendulum: a 0.25 m rod with a magnet bob over three fixed magnets (attracting).

    release: (x, y) lab position of the bob (m) at rest at t = 0; the pivot is
    at (0, 0, 0.3) and the bob's magnet hangs 1.5 cm above the magnets' plane.
    """
    pivot = np.array([0.0, 0.0, 0.3])
    length = 0.285  # pivot → bob magnet
    x, y = release
    down = np.array([x, y, -np.sqrt(max(length**2 - x * x - y * y, 1e-12))]) / length
    # Body z axis points from the bob up to the pivot; find the rotation taking −e_z to `down`.
    axis = np.cross([0.0, 0.0, -1.0], down)
    ang = np.arccos(np.clip(-down[2], -1, 1))
    R = axis_angle_matrix(axis / np.linalg.norm(axis), ang) if np.linalg.norm(axis) > 0 else np.eye(3)
    bob = Body(
        name="bob", role="pendulum", position=pivot, orientation=R.T,
        shapes=(Cylinder(radius=0.002, half_length=0.125, axis=(0, 0, 1), mass=0.01, center=(0, 0, -0.125)),
                Sphere(radius=0.012, mass=0.06, center=(0, 0, -0.27))),
        dipoles=(Dipole((0.0, 0.0, -length), (0.0, 0.0, -bob_moment)),),
        color=(0.8, 0.3, 0.2, 1.0),
    )
    bodies = [bob]
    for k in range(3):
        a = 2 * np.pi * k / 3 + np.pi / 2
        bodies.append(Body(name=f"magnet{k}", role="fixed",
                           position=(magnet_radius * np.cos(a), magnet_radius * np.sin(a), 0.0),
                           shapes=(Cylinder(radius=0.008, half_length=0.005, axis=(0, 0, 1), mass=0.01,
                                            center=(0, 0, -0.005)),),
                           dipoles=(Dipole((0.0, 0.0, 0.0), (0.0, 0.0, -moment)),),
                           color=(0.2, 0.3, 0.8, 1.0)))
    return Scene(name="three-magnet pendulum", bodies=bodies, gravity=(0, 0, -9.81), friction=friction,
                 settings=Settings(dt=dt, t_end=t_end, record_interval=10 * dt))


def t_handle(omega=(0.01, 8.0, 0.01), t_end: float = 10.0, dt: float = 1 / 32) -> Scene:
    """The tennis-racket T-handle spinning about its middle axis (Dzhanibekov effect)."""
    body = Body(name="t_handle", role="free", angular_velocity=omega,
                mass_properties=MassProperties(0.05, np.zeros(3), T_HANDLE_INERTIA.copy()))
    return Scene(name="T-handle (Dzhanibekov)", bodies=[body], gravity=(0, 0, -9.81),
                 settings=Settings(dt=dt, t_end=t_end))


def compass(moment: float = 0.2, field: float = 1e-2, theta0_deg: float = 30.0, t_end: float = 5.0) -> Scene:
    """A compass needle (thin cylinder with a dipole along it) in a uniform field along x."""
    R = axis_angle_matrix(np.array([0.0, 0.0, 1.0]), np.radians(theta0_deg))
    needle = Body(name="needle", role="pendulum", orientation=R.T, hinge=(0, 0, 1),
                  shapes=(Cylinder(radius=0.002, half_length=0.03, axis=(1, 0, 0), mass=0.003),),
                  dipoles=(Dipole((0, 0, 0), (moment, 0, 0)),))
    return Scene(name="compass", bodies=[needle], gravity=(0, 0, -9.81), field=(field, 0, 0),
                 settings=Settings(dt=1e-4, t_end=t_end, record_interval=1e-3))


def pendulum(length: float = 1.0, theta0_deg: float = 60.0, t_end: float = 5.0) -> Scene:
    """A simple pendulum: point bob on a massless rod (singular inertia tensor)."""
    R = axis_angle_matrix(np.array([1.0, 0.0, 0.0]), np.radians(theta0_deg))
    bob = Body(name="pendulum", orientation=R.T,
               mass_properties=MassProperties(1.0, np.array([0, 0, -length]), np.zeros((3, 3))))
    return Scene(name="simple pendulum", bodies=[bob], gravity=(0, 0, -9.81),
                 settings=Settings(dt=1e-3, t_end=t_end, record_interval=1e-2))


def heavy_top(spin: float = 150.0, tilt_deg: float = 30.0, t_end: float = 3.0) -> Scene:
    """A symmetric top on a fixed tip: a disc on a short axle, spinning fast."""
    R = axis_angle_matrix(np.array([1.0, 0.0, 0.0]), np.radians(tilt_deg))
    shapes = (Cylinder(radius=0.03, half_length=0.004, axis=(0, 0, 1), mass=0.1, center=(0, 0, 0.04)),
              Cylinder(radius=0.002, half_length=0.03, axis=(0, 0, 1), mass=0.002, center=(0, 0, 0.03)))
    # spin (rad/s) about the symmetry axis: body z, which is R e_z in the lab
    top = Body(name="top", orientation=R.T, angular_velocity=R @ np.array([0.0, 0.0, spin]), shapes=shapes)
    return Scene(name="heavy symmetric top", bodies=[top], gravity=(0, 0, -9.81),
                 settings=Settings(dt=2e-4, t_end=t_end, record_interval=2e-3))


BUILDERS = {
    "three-magnet": three_magnet,
    "t-handle": t_handle,
    "compass": compass,
    "pendulum": pendulum,
    "heavy-top": heavy_top,
}


def build(name: str, **kw) -> Scene:
    from .errors import ValidationError

    if name not in BUILDERS:
        raise ValidationError("example", f"unknown example {name!r}; choose one of {', '.join(BUILDERS)}")
    return BUILDERS[name](**kw)


# ---------------------------------------------------------------------------- more scenes

def ellipk(m: float) -> float:
    """Complete elliptic integral of the first kind K(m), parameter m = k² < 1 (arithmetic–geometric mean)."""
    return float(elliptic_ke(np.sqrt(1.0 - m))[0])


def box_mesh(half_sides, center=(0.0, 0.0, 0.0)) -> tuple[np.ndarray, np.ndarray]:
    """A closed box: vertices (8,3) m and outward-wound triangles (12,3)."""
    h = np.asarray(half_sides, float)
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    V = corners * h + np.asarray(center, float)
    # vertex index = 4·(x>0) + 2·(y>0) + (z>0); each face as two counter-clockwise triangles seen from outside
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    F = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], dtype=np.int64)
    return V, F


def t_handle_shapes(bar_half=(0.03, 0.005, 0.005), stem_half=(0.005, 0.02, 0.005), density: float = 2700.0):
    """Two touching, non-overlapping box meshes forming a T (crossbar along x, stem along +y); body coordinates."""
    from .model.inertia import Mesh

    bar = Mesh(*box_mesh(bar_half), density=density, name="crossbar")
    stem = Mesh(*box_mesh(stem_half, center=(0.0, bar_half[1] + stem_half[1], 0.0)), density=density, name="stem")
    return (bar, stem)


def t_handle_mesh(spin: float = 8.0, perturbation: float = 1e-3, t_end: float = 10.0, dt: float = 1e-3) -> Scene:
    """A free T-handle built from box meshes, spun about its intermediate principal axis (Dzhanibekov flips).

    The spin (rad/s) is along the intermediate axis with a relative ``perturbation``
    along the other two.
    """
    from .model.inertia import combine

    shapes = t_handle_shapes()
    mp = combine(s.mass_properties() for s in shapes)
    _, axes = mp.principal()  # columns: smallest, intermediate, largest
    omega = spin * (axes[:, 1] + perturbation * (axes[:, 0] + axes[:, 2]))
    body = Body(name="t_handle", role="free", position=mp.center_of_mass, angular_velocity=omega, shapes=shapes)
    return Scene(name="T-handle from meshes", bodies=[body], gravity=(0, 0, -9.81),
                 settings=Settings(dt=dt, t_end=t_end, record_interval=10 * dt))


def physical_pendulum(length: float = 0.5, bob_radius: float = 0.05, theta0_deg: float = 40.0,
                      t_end: float = 5.0) -> Scene:
    """A rod (0.1 kg) hanging from its end with a sphere bob (0.5 kg) at its foot, swinging about x."""
    from .model.inertia import Rod

    R = axis_angle_matrix(np.array([1.0, 0.0, 0.0]), np.radians(theta0_deg))
    shapes = (Rod(half_length=length / 2, direction=(0, 0, 1), mass=0.1, center=(0, 0, -length / 2)),
              Sphere(radius=bob_radius, mass=0.5, center=(0, 0, -length)))
    body = Body(name="pendulum", orientation=R.T, shapes=shapes, hinge=(1, 0, 0))
    return Scene(name="physical pendulum", bodies=[body], gravity=(0, 0, -9.81),
                 settings=Settings(dt=1e-3, t_end=t_end, record_interval=1e-2))


def pendulum_wave(n: int = 15, cycles: int = 51, period: float = 60.0, amplitude_deg: float = 10.0,
                  spacing: float = 0.05, dt: float = 2e-3, t_end: float | None = None) -> Scene:
    """``n`` simple pendulums in a row along x; pendulum k makes ``cycles`` + k swings in ``period`` s.

    Lengths use the exact finite-amplitude period 4√(l/g)·K(sin²(θ₀/2)), so all
    realign after ``period`` s. Pivots at height 1 m, all released at θ₀ about x.
    """
    g = 9.81
    theta0 = np.radians(amplitude_deg)
    K = ellipk(np.sin(theta0 / 2) ** 2)
    R = axis_angle_matrix(np.array([1.0, 0.0, 0.0]), theta0)
    bodies = []
    for k in range(n):
        T_k = period / (cycles + k)
        length = g * (T_k / (4 * K)) ** 2
        bodies.append(Body(name=f"pendulum{k:02d}", position=(k * spacing, 0.0, 1.0), orientation=R.T,
                           mass_properties=MassProperties(0.1, np.array([0, 0, -length]), np.zeros((3, 3)))))
    return Scene(name="pendulum wave", bodies=bodies, gravity=(0, 0, -g),
                 settings=Settings(dt=dt, t_end=period if t_end is None else t_end, record_interval=5 * dt))


def compass_array(n: int = 10, spacing: float = 0.02, moment: float = 0.003, friction: float = 0.0,
                  seed: int = 1, t_end: float = 5.0, dt: float = 5e-3, periodic: bool = True) -> Scene:
    """An n×n square lattice of compass needles hinged about z, interacting through their dipoles.

    Random initial headings (``seed``); a periodic box of n·spacing in x and y
    (minimum-image separations) when ``periodic``. Needles: 1 g, half-length
    0.4·spacing, dipole ``moment`` (A·m²) along the needle.
    """
    rng = np.random.default_rng(seed)
    half = 0.4 * spacing
    bodies = []
    for i in range(n):
        for j in range(n):
            R = axis_angle_matrix(np.array([0.0, 0.0, 1.0]), rng.uniform(0, 2 * np.pi))
            bodies.append(Body(name=f"needle_{i}_{j}", position=(i * spacing, j * spacing, 0.0), orientation=R.T,
                               hinge=(0, 0, 1),
                               shapes=(Cylinder(radius=0.05 * spacing, half_length=half, axis=(1, 0, 0), mass=1e-3),),
                               dipoles=(Dipole((0, 0, 0), (moment, 0, 0)),)))
    box = (n * spacing, n * spacing, 1e3 * n * spacing) if periodic else None
    return Scene(name=f"{n}×{n} compass array", bodies=bodies, gravity=(0, 0, -9.81), friction=friction,
                 periodic_box=box, settings=Settings(dt=dt, t_end=t_end, record_interval=10 * dt))


def compass_rotating(moment: float = 0.2, field: float = 1e-2, field_rate: float = 5.0, friction: float = 1.2e-4,
                     t_end: float = 2.0, dt: float = 5e-4) -> Scene:
    """The compass needle in a field of constant strength turning about z at ``field_rate`` rad/s.

    With pivot friction c the needle follows with a steady lag δ, sin δ = c·Ω/(p·B).
    """
    from .model.scene import RotatingField

    needle = Body(name="needle", role="pendulum", hinge=(0, 0, 1),
                  shapes=(Cylinder(radius=0.002, half_length=0.03, axis=(1, 0, 0), mass=0.003),),
                  dipoles=(Dipole((0, 0, 0), (moment, 0, 0)),))
    rot = RotatingField(b1=(field, 0, 0), b2=(0, field, 0), angular_velocity=field_rate)
    return Scene(name="compass in a rotating field", bodies=[needle], gravity=(0, 0, -9.81), rotating_field=rot,
                 friction=friction, settings=Settings(dt=dt, t_end=t_end, record_interval=4 * dt))


def newtons_cradle(n: int = 5, raised: int = 1, angle_deg: float = 30.0, length: float = 0.3,
                   radius: float = 0.0125, mass: float = 0.065, restitution: float = 1.0,
                   t_end: float = 2.0, dt: float = 1e-3) -> Scene:
    """Newton's cradle: ``n`` equal steel balls (``mass`` kg, ``radius`` m) on strings of ``length`` m (pivot to
    ball centre), hinged about y so they swing in the x–z plane, touching at rest in a row along x.

    The first ``raised`` balls are pulled back together by ``angle_deg`` and released at rest; each ball
    carries one contact sphere; ``restitution`` is the scene's e.
    """
    from .model.scene import ContactSphere

    bodies = []
    R = axis_angle_matrix(np.array([0.0, 1.0, 0.0]), np.radians(angle_deg))  # turns the ball towards −x
    for k in range(n):
        up = k < raised
        bodies.append(Body(name=f"ball{k + 1}", position=(2.0 * radius * k, 0.0, length + radius + 0.05),
                           orientation=R.T if up else np.eye(3), hinge=(0.0, 1.0, 0.0),
                           shapes=(Sphere(radius=radius, mass=mass, center=(0.0, 0.0, -length)),),
                           contacts=(ContactSphere((0.0, 0.0, -length), radius),),
                           color=(0.75, 0.75, 0.8, 1.0)))
    return Scene(name="Newton's cradle", bodies=bodies, gravity=(0, 0, -9.81), restitution=restitution,
                 settings=Settings(dt=dt, t_end=t_end, record_interval=20 * dt))


def colliding_pendulums(angle_deg: float = 35.0, restitution: float = 0.9, gap: float = 0.002,
                        t_end: float = 3.0, dt: float = 1e-3) -> Scene:
    """Two pendulums of different masses and lengths whose bobs hang ``gap`` m apart at the same height.

    "heavy": 0.2 kg bob (radius 3 cm) on a 0.5 m massless string; "light": 0.05 kg bob (radius 2 cm) on
    0.3 m. The heavy one is raised by ``angle_deg`` (away from the other) and released at rest;
    ``restitution`` is the scene's e. Neither is hinged: the impulse keeps them in the x–z plane.
    """
    from .model.scene import ContactSphere

    R = axis_angle_matrix(np.array([0.0, 1.0, 0.0]), np.radians(angle_deg))
    heavy = Body(name="heavy", position=(0.0, 0.0, 1.0), orientation=R.T,
                 shapes=(Sphere(radius=0.03, mass=0.2, center=(0.0, 0.0, -0.5)),),
                 contacts=(ContactSphere((0.0, 0.0, -0.5), 0.03),), color=(0.8, 0.3, 0.2, 1.0))
    light = Body(name="light", position=(0.05 + gap, 0.0, 0.8),
                 shapes=(Sphere(radius=0.02, mass=0.05, center=(0.0, 0.0, -0.3)),),
                 contacts=(ContactSphere((0.0, 0.0, -0.3), 0.02),), color=(0.2, 0.3, 0.8, 1.0))
    return Scene(name="colliding pendulums", bodies=[heavy, light], gravity=(0, 0, -9.81), restitution=restitution,
                 settings=Settings(dt=dt, t_end=t_end, record_interval=20 * dt))


def magnetic_marbles(distance: float = 0.04, radius: float = 0.005, mass: float = 0.004, moment: float = 0.05,
                     restitution: float = 0.5, t_end: float = 0.6, dt: float = 5e-4) -> Scene:
    """Two magnetic marbles (free, translating spheres, ``mass`` kg, ``radius`` m, a dipole of ``moment`` A·m²
    along x at each centre) released at rest head to tail ``distance`` m apart, centre to centre, in free space.

    They attract (U = −2kp²/r³), meet, bounce with ``restitution`` e until the rebounds would last less than
    a step and then stay together: they snap (theory §7). No gravity: the pair's momentum stays zero.
    """
    from .model.scene import ContactSphere

    def marble(name, x, color):
        return Body(name=name, role="free", translate=True, position=(x, 0.0, 0.0),
                    shapes=(Sphere(radius=radius, mass=mass),), dipoles=(Dipole((0.0, 0.0, 0.0), (moment, 0.0, 0.0)),),
                    contacts=(ContactSphere((0.0, 0.0, 0.0), radius),), color=color)

    return Scene(name="magnetic marbles", bodies=[marble("marble1", 0.0, (0.8, 0.3, 0.2, 1.0)),
                                                  marble("marble2", distance, (0.2, 0.3, 0.8, 1.0))],
                 gravity=(0.0, 0.0, 0.0), restitution=restitution,
                 settings=Settings(dt=dt, t_end=t_end, record_interval=10 * dt))


def bouncing_ball(height: float = 1.0, radius: float = 0.02, mass: float = 0.1, restitution: float = 0.8,
                  t_end: float = 5.0, dt: float = 1e-3) -> Scene:
    """A ball (free, translating sphere) dropped from rest ``height`` m above a floor (its lowest point above the
    plane z = 0) with restitution e < 1.

    The n-th rebound rises e^{2n}·height; the impacts come ever faster and add up to the rest time
    √(2h/g)(1+e)/(1−e); once a rebound would last less than a step the ball rests on the floor instead of
    bouncing on (no Zeno hang; theory §7). ``splitting2``: gravity alone, every step is exact.
    """
    from .model.scene import ContactSphere, StaticWall

    ball = Body(name="ball", role="free", translate=True, position=(0.0, 0.0, height + radius),
                shapes=(Sphere(radius=radius, mass=mass),), contacts=(ContactSphere((0.0, 0.0, 0.0), radius),),
                color=(0.8, 0.3, 0.2, 1.0))
    floor = StaticWall(kind="plane", name="floor", point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0))
    return Scene(name="bouncing ball", bodies=[ball], gravity=(0.0, 0.0, -9.81), restitution=restitution,
                 walls=(floor,), settings=Settings(method="splitting2", dt=dt, t_end=t_end, record_interval=10 * dt))


BUILDERS.update({
    "t-handle-mesh": t_handle_mesh,
    "physical-pendulum": physical_pendulum,
    "pendulum-wave": pendulum_wave,
    "compass-array": compass_array,
    "compass-rotating": compass_rotating,
    "newtons-cradle": newtons_cradle,
    "colliding-pendulums": colliding_pendulums,
    "magnetic-marbles": magnetic_marbles,
    "bouncing-ball": bouncing_ball,
})


# ---------------------------------------------------------------------------- driven by tabulated motions

def _samples(t_end: float, per_second: float) -> np.ndarray:
    """Sample times (s) from 0 to past t_end, ``per_second`` a second (a table must cover the whole run)."""
    n = int(np.ceil(t_end * per_second)) + 2
    return np.arange(n) / per_second


def _point_pendulum(name: str, length: float, mass: float, tilt: float, up: bool, **kw) -> Body:
    """A point bob on a massless rod hinged about x, ``tilt`` rad from straight down (or up with ``up``)."""
    R = axis_angle_matrix(np.array([1.0, 0.0, 0.0]), tilt)
    return Body(name=name, orientation=R.T, hinge=(1, 0, 0),
                mass_properties=MassProperties(mass, np.array([0.0, 0.0, length if up else -length]), np.zeros((3, 3))),
                **kw)


def _vertical_shake(amplitude: float, w: float, t_end: float, samples_per_period: int | None):
    """A pivot motion z = amplitude·cos(w·t) (m, rad/s): a table of ``samples_per_period`` samples a period to past
    ``t_end``, or (None) the exact oscillation."""
    from .model.analytic import Oscillation
    from .model.motion import TabulatedMotion

    if samples_per_period is None:
        return Oscillation(amplitudes=[(0.0, 0.0, amplitude)], angular_frequencies=[w])
    t = _samples(t_end, samples_per_period * w / (2 * np.pi))
    return TabulatedMotion(t, np.stack([0 * t, 0 * t, amplitude * np.cos(w * t)], 1))


def kapitza(amplitude: float = 0.01, frequency: float = 60.0, length: float = 0.2, tilt_deg: float = 6.0,
            t_end: float = 1.5, dt: float = 2e-4, samples_per_period: int | None = 40) -> Scene:
    """Kapitza's pendulum: a point bob 0.1 kg on a massless rod of ``length`` m standing upright, ``tilt_deg`` off
    vertical, its pivot shaken vertically, z = ``amplitude``·cos(2π·``frequency``·t) (a table of
    ``samples_per_period`` samples a period; None: the exact :class:`~.model.analytic.Oscillation`). Upright is
    stable when a²ω² > 2gl (high-frequency limit), with the slow swing √(a²ω²/2l² − g/l) about it."""
    table = _vertical_shake(amplitude, 2 * np.pi * frequency, t_end, samples_per_period)
    bob = _point_pendulum("bob", length, 0.1, np.radians(tilt_deg), True, pivot_motion=table)
    return Scene(name="Kapitza's pendulum", bodies=[bob], gravity=(0, 0, -9.81),
                 settings=Settings(dt=dt, t_end=t_end, record_interval=10 * dt))


def parametric_pendulum(amplitude: float = 0.005, length: float = 0.2, tilt_deg: float = 0.5, t_end: float = 15.0,
                        dt: float = 2e-3, samples_per_period: int | None = 40, frequency_ratio: float = 2.0) -> Scene:
    """Parametric resonance: a hanging point pendulum (0.1 kg, ``length`` m) whose pivot moves vertically,
    z = ``amplitude``·cos(Ωt), Ω = ``frequency_ratio``·ω₀, ω₀ = √(g/l) (a table of ``samples_per_period`` samples
    a period; None: exact). At Ω = 2ω₀ (Mathieu's first tongue, h = 4a/l) a small swing grows as e^{st},
    s = h·ω₀/4 = a·ω₀/l."""
    table = _vertical_shake(amplitude, frequency_ratio * np.sqrt(9.81 / length), t_end, samples_per_period)
    bob = _point_pendulum("bob", length, 0.1, np.radians(tilt_deg), False, pivot_motion=table)
    return Scene(name="parametric resonance", bodies=[bob], gravity=(0, 0, -9.81),
                 settings=Settings(dt=dt, t_end=t_end, record_interval=5 * dt))


def keyed_circle(keys_per_turn: int | None = 32, radius: float = 0.04, rate: float = 2 * np.pi, t_end: float = 2.0,
                 dt: float = 1e-3) -> Scene:
    """A magnet carried round a circle of ``radius`` m under a magnetic pendulum at ``rate`` rad/s, turning with it:
    keyed at ``keys_per_turn`` positions and orientations a turn (a :class:`~.model.motion.TabulatedMotion`), or
    with None PEM's analytic elliptic orbit — the keyed motion matches it to the spline's error, O(keys⁻⁴)."""
    from .model.motion import TabulatedMotion
    from .model.rotations import orientation_to_quat
    from .model.scene import EllipticOrbit

    orbit = EllipticOrbit(center=(0.0, 0.0, 0.0), r1=(radius, 0.0, 0.0), r2=(0.0, radius, 0.0),
                          angular_velocity=rate)
    if keys_per_turn is not None:
        t = _samples(t_end, keys_per_turn * rate / (2 * np.pi))
        ph = rate * t
        pos = np.stack([radius * np.cos(ph), radius * np.sin(ph), 0 * t], 1)
        U = np.array([axis_angle_matrix(np.array([0.0, 0.0, 1.0]), p).T for p in ph])   # rows: body axes (U₀ = 𝟙)
        orbit = TabulatedMotion(t, pos, orientation_to_quat(U))
    magnet = Body(name="rotor", role="driven", position=(radius, 0.0, 0.0), motion=orbit,
                  dipoles=(Dipole((0.01, 0.0, 0.0), (0.0, 0.0, 0.5)),))
    bob = Body(name="pendulum", position=(0.0, 0.0, 0.3), orientation=axis_angle_matrix(np.array([1.0, 0, 0]), 0.2).T,
               mass_properties=MassProperties(0.05, np.array([0.0, 0.0, -0.28]), np.diag([1e-6, 1e-6, 1e-7])),
               dipoles=(Dipole((0.0, 0.0, -0.285), (0.0, 0.0, -0.3)),))
    return Scene(name="magnet keyed on a circle", bodies=[bob, magnet], gravity=(0, 0, -9.81), friction=2e-4,
                 settings=Settings(dt=dt, t_end=t_end, record_interval=10 * dt))


def magnetic_gear(rate: float = 10.0, moment: float = 0.5, follower_moment: float = 0.2, distance: float = 0.03,
                  friction: float = 2e-5, t_end: float = 3.0, dt: float = 2.5e-4,
                  samples_per_turn: int | None = 64) -> Scene:
    """A magnetic gear: a magnet (moment ``moment`` A·m² in its xy plane) spun about z at ``rate`` rad/s by keys
    (``samples_per_turn`` tabulated orientations a turn; None: the exact uniform rotation), and a compass magnet
    hinged about z ``distance`` m above it on the same axis, with pivot friction c. The driver's field there,
    −k·m₁/d³ (k = μ₀/4π), turns with it, so the follower turns in step, antiparallel and lagging by δ,
    sin δ = cΩ/K, K = k·m₁·m₂/d³ — up to its pull-out rate Ω = K/c."""
    from .model.analytic import UniformRotation
    from .model.motion import TabulatedMotion
    from .model.rotations import orientation_to_quat

    if samples_per_turn is None:
        spin = UniformRotation(axis=(0.0, 0.0, 1.0), angular_velocity=rate)
    else:
        t = _samples(t_end, samples_per_turn * rate / (2 * np.pi))
        U = np.array([axis_angle_matrix(np.array([0.0, 0.0, 1.0]), rate * tk).T for tk in t])
        spin = TabulatedMotion(t, np.zeros((len(t), 3)), orientation_to_quat(U))
    driver = Body(name="driver", role="driven", motion=spin,
                  dipoles=(Dipole((0.0, 0.0, 0.0), (moment, 0.0, 0.0)),))
    follower = Body(name="follower", role="pendulum", position=(0.0, 0.0, distance), hinge=(0, 0, 1),
                    orientation=axis_angle_matrix(np.array([0.0, 0.0, 1.0]), np.pi).T,
                    shapes=(Cylinder(radius=0.002, half_length=0.01, axis=(1, 0, 0), mass=0.001),),
                    dipoles=(Dipole((0.0, 0.0, 0.0), (follower_moment, 0.0, 0.0)),))
    return Scene(name="magnetic gear", bodies=[follower, driver], gravity=(0, 0, -9.81), friction=friction,
                 settings=Settings(dt=dt, t_end=t_end, record_interval=4 * dt))


BUILDERS.update({
    "kapitza": kapitza,
    "parametric-pendulum": parametric_pendulum,
    "keyed-circle": keyed_circle,
    "magnetic-gear": magnetic_gear,
})


def _surface_scene(name: str, body: Body, mu: float, t_end: float, dt: float, record_every: int = 10,
                   friction_law: str | None = None, table=None, restitution: float = 0.0) -> Scene:
    """``body`` on ``table`` (default: the plane z = 0) with the table's own friction μ (Coulomb's, or the gliding
    law's in s/m for ``friction_law = "viscous"``), persistent contact (``contact_model = "surface"``)."""
    from dataclasses import replace

    from .model.scene import StaticWall

    table = StaticWall(kind="plane", name="table", point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0)) \
        if table is None else table
    table = replace(table, friction_law=friction_law, **({"gliding_friction": mu} if friction_law == "viscous"
                                                         else {"contact_friction": mu}))
    return Scene(name=name, bodies=[body], gravity=(0.0, 0.0, -9.81), restitution=restitution, walls=(table,),
                 contact_model="surface", settings=Settings(dt=dt, t_end=t_end, record_interval=record_every * dt))


def billiard_ball(speed: float = 2.0, backspin: float = 0.0, mu: float = 0.2, radius: float = 0.028575,
                  mass: float = 0.17, t_end: float = 1.0, dt: float = 1e-3) -> Scene:
    """A billiard ball struck along x at ``speed`` m/s on a cloth of friction μ, with backspin ``backspin``·v/a
    (0: none). It slides, its slip falling at (7/2)μg, and rolls from t* = 2(1 + w)v/(7μg) at (5 − 2w)v/7 —
    forward, stopped (w = 5/2) or coming back."""
    from .model.scene import ContactSphere

    ball = Body(name="ball", role="free", translate=True, position=(0.0, 0.0, radius), velocity=(speed, 0.0, 0.0),
                angular_velocity=(0.0, -backspin * speed / radius, 0.0),
                shapes=(Sphere(radius=radius, mass=mass),), contacts=(ContactSphere((0.0, 0.0, 0.0), radius),),
                color=(0.9, 0.9, 0.85, 1.0))
    return _surface_scene("billiard ball", ball, mu, t_end, dt)


def tippe_top(spin_factor: float = 1.5, tilt_deg: float = 5.7, radius: float = 0.02, mass: float = 0.015,
              alpha: float = 0.3, gamma: float = 0.95, mu: float = 0.3, t_end: float = 10.0,
              dt: float = 1e-3) -> Scene:
    """The tippe top as the literature models it: a sphere (radius R) whose centre of mass lies αR below its centre,
    I₁ = γI₃ about the centre of mass, on a table with gliding friction F = −μN·u (μ in s/m), spun about its axis
    tilted by ``tilt_deg``. Body coordinates: origin at the sphere's centre, the "stem" along +z.

    Rauch-Wojciechowski & Rutstam (SIGMA 10, 017, 2014): for 1 − α² < γ < 1 the top turns over when Jellett's
    λ = L·(x − P) exceeds λ_thres = √(mgR³I₃α)(1 + α)²/√(1 + α − γ); spinning upright λ = I₃ω R(1 − α), so the
    spin is ``spin_factor``·λ_thres/(I₃R(1 − α))."""
    from .model.scene import ContactSphere

    I3 = 0.4 * mass * radius ** 2
    lam = np.sqrt(mass * 9.81 * radius ** 3 * I3 * alpha) * (1 + alpha) ** 2 / np.sqrt(1 + alpha - gamma)
    spin = spin_factor * lam / (I3 * radius * (1 - alpha))
    U = axis_angle_matrix(np.array([1.0, 0.0, 0.0]), np.radians(tilt_deg)).T
    top = Body(name="tippe top", role="free", translate=True, position=(0.0, 0.0, radius), orientation=U,
               angular_velocity=tuple(spin * U[2]),
               mass_properties=MassProperties(mass, (0.0, 0.0, -alpha * radius), np.diag([gamma * I3, gamma * I3, I3])),
               contacts=(ContactSphere((0.0, 0.0, 0.0), radius),), color=(0.85, 0.2, 0.15, 1.0))
    return _surface_scene("tippe top", top, mu, t_end, dt, record_every=20, friction_law="viscous")


def rolling_coin(lean_deg: float = 17.0, circle_radius: float = 0.1, radius: float = 0.0125, mass: float = 0.0075,
                 mu: float = 1.0, turns: float = 2.0, dt: float = 5e-4) -> Scene:
    """A thin coin (radius a, I₁ = ma²/4, I₃ = ma²/2) rolling steadily, leaning by θ towards the centre of the
    circle of radius R its centre runs on, at Ω² = mag tanθ / (I₁ sinθ + R(I₃/a + ma)) and spin
    s = −Ω(R + a sinθ)/a about its axis (Newton–Euler for the steady motion; tanθ = (3/2)v²/(gR) for R ≫ a)."""
    from .model.scene import ContactRim

    th = np.radians(lean_deg)
    I1, I3 = mass * radius ** 2 / 4, mass * radius ** 2 / 2
    omega = np.sqrt(mass * radius * 9.81 * np.tan(th)
                    / (I1 * np.sin(th) + circle_radius * (I3 / radius + mass * radius)))
    spin = -omega * (circle_radius + radius * np.sin(th)) / radius
    x, y, z = np.eye(3)
    up = np.cos(th) * z - np.sin(th) * x
    k = np.sin(th) * z + np.cos(th) * x
    coin = Body(name="coin", role="free", translate=True, position=tuple(circle_radius * x + radius * np.cos(th) * z),
                orientation=np.array([up, np.cross(k, up), k]), velocity=tuple(omega * circle_radius * y),
                angular_velocity=tuple(omega * z + spin * k),
                mass_properties=MassProperties(mass, (0.0, 0.0, 0.0), np.diag([I1, I1, I3])),
                contacts=(ContactRim((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), radius),), color=(0.8, 0.6, 0.2, 1.0))
    return _surface_scene("rolling coin", coin, mu, turns * 2 * np.pi / omega, dt)


def marble_in_a_bowl(amplitude_deg: float = 25.0, bowl_radius: float = 0.15, radius: float = 0.008,
                     mass: float = 0.005, mu: float = 0.5, swings: float = 2.0, dt: float = 5e-4) -> Scene:
    """A glass marble (uniform, radius r) let go at rest ``amplitude_deg`` up the side of a spherical bowl (radius
    R, the inside of a sphere wall): it rolls, a pendulum of length R − r under (5/7)g — ω₀² = 5g/(7(R − r)),
    period 4K(sin(θ₀/2))/ω₀ (K the complete elliptic integral of the first kind) — for ``swings`` periods."""
    from .model.scene import ContactSphere, StaticWall

    th = np.radians(amplitude_deg)
    L = bowl_radius - radius
    # K(k) = π / (2 AGM(1, cos(θ₀/2))), k = sin(θ₀/2): the arithmetic–geometric mean, to round-off in a few steps
    a, b = 1.0, np.cos(th / 2)
    while abs(a - b) > 1e-15 * a:
        a, b = 0.5 * (a + b), np.sqrt(a * b)
    period = 4 * (np.pi / (2 * a)) / np.sqrt(5 * 9.81 / (7 * L))
    marble = Body(name="marble", role="free", translate=True,
                  position=(L * np.sin(th), 0.0, bowl_radius - L * np.cos(th)),
                  shapes=(Sphere(radius=radius, mass=mass),), contacts=(ContactSphere((0.0, 0.0, 0.0), radius),),
                  color=(0.3, 0.55, 0.9, 1.0))
    bowl = StaticWall(kind="sphere", name="bowl", center=(0.0, 0.0, bowl_radius), radius=bowl_radius, inside=True)
    return _surface_scene("marble in a bowl", marble, mu, swings * period, dt, record_every=4, table=bowl)


def tumbling_die(side: float = 0.016, mass: float = 0.0045, corner: float = 0.0015, mu: float = 0.3,
                 restitution: float = 0.3, height: float = 0.06, speed: float = 0.6, t_end: float = 2.0,
                 dt: float = 5e-4) -> Scene:
    """A die thrown onto a table: a uniform cube of side s (I = ms²/6) with rounded corners — a contact sphere of
    radius ρ in each of the eight, flush with the faces — let go ``height`` m above the table at ``speed`` m/s
    along x, tilted and tumbling, on a table of Coulomb friction μ and restitution e. It lands on corners and
    edges, several at once, bounces, rolls over and comes to rest on a face (its energy then Mg·s/2)."""
    from .model.scene import ContactSphere

    q = side / 2 - corner
    corners = tuple(ContactSphere((sx * q, sy * q, sz * q), corner) for sx in (-1, 1) for sy in (-1, 1)
                    for sz in (-1, 1))
    U = axis_angle_matrix(np.array([1.0, 2.0, 0.5]) / np.linalg.norm([1.0, 2.0, 0.5]), 0.7).T
    die = Body(name="die", role="free", translate=True, position=(0.0, 0.0, height), orientation=U,
               velocity=(speed, 0.0, 0.0), angular_velocity=(12.0, -25.0, 8.0),
               mass_properties=MassProperties(mass, (0.0, 0.0, 0.0), np.eye(3) * mass * side ** 2 / 6),
               contacts=corners, color=(0.95, 0.95, 0.92, 1.0))
    return _surface_scene("tumbling die", die, mu, t_end, dt, record_every=4, restitution=restitution)


BUILDERS.update({
    "tumbling-die": tumbling_die,
    "billiard-ball": billiard_ball,
    "tippe-top": tippe_top,
    "rolling-coin": rolling_coin,
    "marble-in-a-bowl": marble_in_a_bowl,
})
