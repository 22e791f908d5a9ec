"""The PEM parity fixtures: scenes built here in Python, written as UDF by our writer into tests/data/pem/.

``tests/data/make_pem_reference.py`` writes each scene's input file and runs it through the original
engine to record the reference NPZ; ``tests/io/test_udf_parity.py`` runs the committed input with our
``pem-rk4`` / ``pem-euler`` and compares every record with that NPZ.

The first three rebuild PEM's own samples (its author's ellipsoid, pendulum and dipole inputs) in the
units those use; the others cover what those lack: moving–moving dipole pairs, pivot friction, a fixed
magnet and a driven one at constant velocity, a magnet on an elliptic orbit, a rotating field, a hinge
about a non-principal axis, a periodic box where the minimum image matters, and PEM's Euler.

Scenes use :mod:`math` for angles (not numpy's SIMD sin/cos) so that the written files do not depend
on the numpy build.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pem_physics.io.udf_scene import _Units
from pem_physics.io.udf_write import UNITS
from pem_physics.model.inertia import Cuboid, Cylinder, Ellipsoid, MassProperties, PointMass, Rod, Sphere
from pem_physics.model.scene import (
    MU0,
    Body,
    ConstantVelocity,
    Dipole,
    EllipticOrbit,
    RotatingField,
    Scene,
    Settings,
)

CGS = _Units(UNITS["cgs"])  # PEM-sample units → SI, exactly as the reader converts them
CM, GRAM = 1e-2, 1e-3


def rot(axis: str, deg: float) -> np.ndarray:
    """Orientation (rows = body axes in the lab) of a body turned by ``deg`` about lab ``axis``."""
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    i = "xyz".index(axis)
    j, k = (i + 1) % 3, (i + 2) % 3
    R = np.eye(3)
    R[j, j], R[j, k], R[k, j], R[k, k] = c, -s, s, c
    return R.T  # rows of Rᵀ are the columns of R: the turned body axes


def settings(steps: int, method: str = "pem-rk4", dt: float = 1e-3, report: int = 100) -> Settings:
    return Settings(method=method, dt=dt, t_end=steps * dt, record_interval=report * dt)


# ---------------------------------------------------------------------------- PEM's samples, rebuilt

def ellipsoid() -> Scene:
    """Free rotation of an ellipsoid (a, b, c = 1, 1, 4 cm; 1 g), ω₀ = (0.1, 0.1, 0.2) rad/s, no gravity.

    PEM writes a free body as a pendulum pivoted at its centre; ours is a ``free`` body, which the
    writer turns into exactly that. Mass properties: PEM's analysis diag(3.4, 3.4, 0.4) g·cm².
    """
    body = Body(name="ellipsoid", role="free", angular_velocity=(0.1, 0.1, 0.2), color=(1.0, 0.0, 0.0, 1.0),
                shapes=(Ellipsoid(semi_axes=(CM, CM, 4 * CM), mass=GRAM),),
                mass_properties=MassProperties(CGS.M * 1.0, np.zeros(3), CGS.inertia(np.diag([3.4, 3.4, 0.4]))))
    return Scene(name="ellipsoid", bodies=[body], gravity=(0, 0, 0), mu0=CGS.mu0(0.1), settings=settings(100_000))


def pendulum() -> Scene:
    """Five point-mass pendulums (l = 5 m, 1 kg, massless rod; g = 1) released at 30°…150° about y."""
    bodies = []
    for k, deg in enumerate((30, 60, 90, 120, 150)):
        bodies.append(Body(name=f"pendulum{k}", position=(0.0, 3.0 * k, 0.0), orientation=rot("y", -deg),
                           shapes=(PointMass(mass=1.0, center=(0, 0, -5.0)),
                                   Rod(half_length=2.5, direction=(0, 0, 1), mass=0.0, center=(0, 0, -2.5))),
                           color=(1.0, 0.0, 0.0, 1.0)))
    return Scene(name="pendulum", bodies=bodies, gravity=(0, 0, -1.0), mu0=10.0, settings=settings(100_000))


def dipole() -> Scene:
    """A dipole p = 1 along the long axis of an ellipsoid (3, 1, 1; M = 1) in B = 1 at 30°, released at 60°."""
    body = Body(name="compass", orientation=rot("z", 60), color=(1.0, 0.0, 0.0, 1.0),
                shapes=(Ellipsoid(semi_axes=(3.0, 1.0, 1.0), mass=1.0),),
                dipoles=(Dipole((0, 0, 0), (1.0, 0, 0)),))
    field = (math.cos(math.radians(30)), math.sin(math.radians(30)), 0.0)
    return Scene(name="dipole", bodies=[body], gravity=(0, 0, 0), field=field, mu0=10.0, settings=settings(100_000))


# ---------------------------------------------------------------------------- new coverage

def _bob(name, pivot, orientation, moment, length=0.1, omega=(0, 0, 0), color=None) -> Body:
    """A rod (2 g) with a sphere bob (1 cm, 10 g) hanging ``length`` below the pivot, magnet at the bob."""
    return Body(name=name, position=pivot, orientation=orientation, angular_velocity=omega, color=color,
                shapes=(Rod(half_length=length / 2, direction=(0, 0, 1), mass=2 * GRAM, center=(0, 0, -length / 2)),
                        Sphere(radius=CM, mass=10 * GRAM, center=(0, 0, -length))),
                dipoles=(Dipole((0, 0, -length), moment),))


def dipole_pair() -> Scene:
    """Two magnet pendulums 2 cm apart (cgs file): one released, one at rest; they trade energy."""
    a = _bob("a", (0.0, 0.0, 0.0), rot("x", 20) @ rot("y", 5), (0, 0, 0.1), color=(0.8, 0.2, 0.2, 1.0))
    b = _bob("b", (0.0, 2 * CM, 0.0), np.eye(3), (0, 0, 0.1), color=(0.2, 0.2, 0.8, 1.0))
    return Scene(name="dipole_pair", bodies=[a, b], gravity=(0, 0, -9.81), settings=settings(10_000))


def friction() -> Scene:
    """A spinning, swinging physical pendulum with pivot friction c = 200 g·cm²/s (cgs file, where the
    schema's unit for c is inverted): the swing decays over a few seconds."""
    body = Body(name="damped", orientation=rot("x", 40), angular_velocity=(0.5, 0.0, 3.0),
                shapes=(Cylinder(radius=0.3 * CM, half_length=5 * CM, axis=(0, 0, 1), mass=5 * GRAM,
                                 center=(0, 0, -5 * CM)),
                        Cuboid(half_sides=(2 * CM, 0.5 * CM, 0.5 * CM), mass=8 * GRAM, center=(0, 0, -10 * CM))))
    return Scene(name="friction", bodies=[body], gravity=(0, 0, -9.81), friction=CGS.friction(200.0),
                 settings=settings(10_000))


def driven_constant() -> Scene:
    """A magnet pendulum, a fixed magnet (turned frame, off-origin dipole) and a magnet driven past
    underneath at 5 cm/s (SI file)."""
    bob = _bob("bob", (0.0, 0.0, 0.3), rot("y", 10), (0.0, 0.0, -0.5), length=0.25)
    fixed = Body(name="fixed", role="fixed", position=(0.08, -0.05, 0.0), orientation=rot("z", 30) @ rot("x", 15),
                 dipoles=(Dipole((0.01, 0.0, 0.0), (0.0, 0.0, 2.0)),))
    driven = Body(name="driven", role="driven", position=(-0.25, 0.02, 0.0), motion=ConstantVelocity((0.05, 0, 0)),
                  dipoles=(Dipole((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),))
    return Scene(name="driven_constant", bodies=[bob, fixed, driven], gravity=(0, 0, -9.81),
                 settings=settings(10_000))


def driven_orbit() -> Scene:
    """A magnet pendulum over a magnet on a tilted elliptic orbit (phase 0.3, 2 rad/s) whose dipole sits
    off the body origin, so the orbiting frame's turn matters (cgs file: r1, r2 as lengths)."""
    bob = _bob("bob", (0.0, 0.0, 10 * CM), rot("x", 15), (0.0, 0.0, 0.2), length=8 * CM)
    orbit = EllipticOrbit(center=(0, 0, -1 * CM), r1=(4 * CM, 0, 0), r2=(0, 3 * CM, 1 * CM),
                          angular_velocity=2.0, phase=0.3)
    driven = Body(name="orbiter", role="driven", position=(4 * CM, 0, -1 * CM), orientation=rot("z", 20),
                  motion=orbit, dipoles=(Dipole((0.5 * CM, 0, 0), (0.0, 0.0, -0.1)),))
    return Scene(name="driven_orbit", bodies=[bob, driven], gravity=(0, 0, -9.81), settings=settings(10_000))


def rotating_field() -> Scene:
    """A compass needle hanging 1 cm below its pivot in an elliptically rotating field (SI file)."""
    needle = Body(name="needle", orientation=rot("z", 10),
                  shapes=(Cylinder(radius=0.002, half_length=0.03, axis=(1, 0, 0), mass=0.003,
                                   center=(0, 0, -0.01)),),
                  dipoles=(Dipole((0, 0, -0.01), (0.2, 0, 0)),))
    rf = RotatingField(b1=(0.01, 0, 0), b2=(0, 0.005, 0.002), angular_velocity=3.0)
    return Scene(name="rotating_field", bodies=[needle], gravity=(0, 0, -9.81), rotating_field=rf,
                 settings=settings(10_000))


def hinge() -> Scene:
    """A tilted slab hinged about lab x (not a principal axis: PEM projects ω on the axis), with a
    magnet in a uniform field (cgs file)."""
    slab = Body(name="slab", orientation=rot("z", 25) @ rot("y", 10), angular_velocity=(1.5, 0.2, 0.0),
                hinge=(1.0, 0.0, 0.0),
                shapes=(Cuboid(half_sides=(3 * CM, 1 * CM, 0.5 * CM), mass=20 * GRAM, center=(1 * CM, 0, -4 * CM)),),
                dipoles=(Dipole((0, 0, -4 * CM), (0.0, 0.05, 0.0)),))
    return Scene(name="hinge", bodies=[slab], gravity=(0, 0, -9.81), field=(0.0, 0.01, 0.004),
                 settings=settings(3_000))


def periodic() -> Scene:
    """Three compass pendulums at (0, 0), (1, 4), (4, 1) cm in a 5 cm periodic box: every pair
    interacts through a wrapped (minimum) image; no separation comes near half the box (SI file)."""
    bodies = []
    for k, ((x, y), heading) in enumerate((((0, 0), 17.0), ((1, 4), 115.0), ((4, 1), 235.0))):
        bodies.append(Body(name=f"needle{k}", position=(x * CM, y * CM, 0.0), orientation=rot("z", heading),
                           shapes=(Cylinder(radius=0.1 * CM, half_length=0.8 * CM, axis=(1, 0, 0), mass=GRAM,
                                            center=(0, 0, -0.3 * CM)),),
                           dipoles=(Dipole((0.2 * CM, 0, 0), (0.002, 0, 0)),)))
    return Scene(name="periodic", bodies=bodies, gravity=(0, 0, -9.81), periodic_box=(5 * CM, 5 * CM, 1.0),
                 settings=settings(10_000))


def euler() -> Scene:
    """PEM's explicit Euler: a magnet pendulum swinging over a fixed magnet (SI file, 2000 steps)."""
    bob = _bob("bob", (0.0, 0.0, 0.2), rot("x", 30), (0.0, 0.0, -0.05), length=0.15, omega=(0.5, 0.0, 0.0))
    magnet = Body(name="magnet", role="fixed", position=(0.02, 0.0, 0.0), dipoles=(Dipole((0, 0, 0), (0, 0, 1.0)),))
    return Scene(name="euler", bodies=[bob, magnet], gravity=(0, 0, -9.81), settings=settings(2_000, "pem-euler"))


@dataclass(frozen=True)
class Fixture:
    name: str
    build: object
    units: str
    sample: bool = False  # one of PEM's shipped samples (its recorded output exists beside PEM)


FIXTURES = {f.name: f for f in (
    Fixture("ellipsoid", ellipsoid, "cgs", sample=True),
    Fixture("pendulum", pendulum, "si", sample=True),
    Fixture("dipole", dipole, "si", sample=True),
    Fixture("dipole_pair", dipole_pair, "cgs"),
    Fixture("friction", friction, "cgs"),
    Fixture("driven_constant", driven_constant, "si"),
    Fixture("driven_orbit", driven_orbit, "cgs"),
    Fixture("rotating_field", rotating_field, "si"),
    Fixture("hinge", hinge, "cgs"),
    Fixture("periodic", periodic, "si"),
    Fixture("euler", euler, "si"),
)}

#: The fixture whose raw peer output is kept (small) to test reading PEM's output text.
RAW_OUTPUT = "euler"


def record_arrays(records) -> dict:
    """Per-record float64 arrays from PEM ``simulationResult`` records (file units).

    orientation (R,B,3,3) rows u1, u2, u3; angular_velocity, angular_momentum, torque (R,B,3).
    """
    def vec(d):
        return [d["x"], d["y"], d["z"]]

    U, w, L, T = [], [], [], []
    for r in records:
        pend = r["simulationResult"]["pendulum"]
        U.append([[vec(p["orientation"][k]) for k in ("u1", "u2", "u3")] for p in pend])
        w.append([vec(p["angularVelocity"]) for p in pend])
        L.append([vec(p["angularMomentum"]) for p in pend])
        T.append([vec(p["torque"]) for p in pend])
    return {"orientation": np.array(U, dtype=np.float64), "angular_velocity": np.array(w, dtype=np.float64),
            "angular_momentum": np.array(L, dtype=np.float64), "torque": np.array(T, dtype=np.float64)}


__all__ = ["FIXTURES", "RAW_OUTPUT", "Fixture", "record_arrays", "rot", "MU0"]
