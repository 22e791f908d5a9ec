"""Coulomb friction at impacts through simulate(): a spinning-free ball strikes a floor obliquely.

Oracle, derived here for a solid sphere (I = 2/5 m r²) of speed (v_t, −v_n) hitting a plane with restitution e
and friction μ, no gravity, no spin before: the sticking impulse would leave the contact point without slip,
J_t = −(2/7) m v_t, against J_n = (1 + e) m v_n; it lies inside the cone when (2/7)|v_t| ≤ μ (1 + e) v_n.
Then v_t' = (5/7) v_t and ω' r = v_t' (rolling). Else the ball slides: v_t' = v_t − μ (1 + e) v_n and
ω' = (5/2) μ (1 + e) v_n / r. Always v_n' = e v_n.
"""

from __future__ import annotations

import numpy as np
import pytest

from pem_physics import simulate
from pem_physics.model import Body, Scene, Settings
from pem_physics.model.inertia import Sphere
from pem_physics.model.scene import ContactSphere, StaticWall

R, M = 0.05, 0.2


def _strike(vt, vn, e, mu, per_body=False):
    ball = Body(name="ball", role="free", translate=True, position=(0.0, 0.0, R + 0.01), velocity=(vt, 0.0, -vn),
                shapes=(Sphere(radius=R, mass=M),), contacts=(ContactSphere((0.0, 0.0, 0.0), R),),
                contact_friction=mu if per_body else None)
    floor = StaticWall(kind="plane", name="floor", point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0),
                       contact_friction=None if per_body else mu)
    t_end = 0.02 / vn
    scene = Scene(bodies=[ball], gravity=(0.0, 0.0, 0.0), restitution=e, walls=(floor,),
                  contact_friction=10.0,  # the other side takes the scene's: the pair the smaller of the two
                  settings=Settings(method="splitting4", dt=t_end / 200, t_end=t_end))
    traj = simulate(scene)
    assert list(traj.events.kind) == ["impact"]
    return traj.velocity[-1, 0], traj.omega[-1, 0]


@pytest.mark.parametrize("e", [1.0, 0.6])
def test_sliding_impact_takes_mu_times_the_normal_impulse(e):
    vt, vn, mu = 2.0, 1.0, 0.1                       # (2/7)·2 = 0.57 > 0.1·(1+e): slides
    v, w = _strike(vt, vn, e, mu)
    np.testing.assert_allclose(v, [vt - mu * (1 + e) * vn, 0.0, e * vn], rtol=1e-12, atol=1e-12)
    # the floor pushes the contact point back (−x) under the centre: the ball spins about −y… its top goes +x
    np.testing.assert_allclose(w, [0.0, 2.5 * mu * (1 + e) * vn / R, 0.0], rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("per_body", [False, True])
def test_a_rough_impact_sticks_and_leaves_the_ball_rolling(per_body):
    vt, vn, e, mu = 1.0, 2.0, 0.5, 0.8              # (2/7)·1 ≤ 0.8·1.5: sticks
    v, w = _strike(vt, vn, e, mu, per_body)
    np.testing.assert_allclose(v, [5 / 7 * vt, 0.0, e * vn], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w[1] * R, v[0], rtol=1e-12)   # rolling: no slip at the contact point


def test_without_friction_the_tangential_velocity_is_kept():
    v, w = _strike(1.5, 1.0, 0.8, 0.0)
    np.testing.assert_allclose(v, [1.5, 0.0, 0.8], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, 0.0, atol=1e-12)
