"""Ready-made scenes (SI units), used by the CLI (``example:NAME``), the demo and the add-on.

Each builder takes keyword overrides for its main parameters and returns a
:class:`~pem_physics.model.Scene`.
"""

from __future__ import annotations

import numpy as np

from .inertia import Cylinder, MassProperties, Sphere
from .model import Body, Dipole, Scene, Settings
from .rotations import axis_angle_matrix

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
    top = Body(name="top", orientation=R.T, angular_velocity=R.T @ np.array([0.0, 0.0, spin]), shapes=shapes)
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
