"""Which restitution e and friction μ an impact takes from its two sides (docs/scene-format.md, Contacts): the
[[pair_restitution]] entry naming both, else the pair rule — the smaller where both sides set their own, the one
set where one side does (an unset side is not zero, nor the scene's), the scene's where neither does. Every rule is
checked in both orders of the sides (which body comes first in the scene, body or wall smaller), for body pairs and
body–wall pairs.

Oracles, derived here for solid spheres (mass m, radius R, I = 2/5 m R²) without gravity, no spin before,
the contact normal n along z and the approach speed v_n, the tangential slip speed v_t along x:
- a sphere striking a wall: along n the wall's side is immovable, K = (1/m) nn + (7/2m) tt (theory §7:
  K = 𝟙/m − [r]× W [r]×, r = −R n, W = 𝟙/I), so J_n = (1 + e) m v_n, the sticking impulse J_t = −(2/7) m v_t;
- two equal spheres: K = (2/m) nn + (7/m) tt, J_n = (1 + e) m v_n / 2, sticking J_t = −m v_t / 7.
Sliding (|sticking J_t| > μ J_n) takes J_t = −μ J_n along the slip: the speeds and spins after follow from J
alone (Δv = ±J/m, ΔL = r × (±J)). The scenes slide for the smaller μ of each test and would stick for the
larger, so a pair rule taking the larger (or one side's) μ changes every number checked.
"""

from __future__ import annotations

import numpy as np
import pytest

from pem_physics import simulate
from pem_physics.model import Body, Scene, Settings
from pem_physics.model.inertia import Sphere
from pem_physics.model.scene import ContactSphere, PairRestitution, StaticWall

R, M = 0.05, 0.2
VT, VN = 2.0, 1.0            # slip and approach speeds (m/s)
GAP = 0.01                   # m between the surfaces at t = 0


def ball(name, position, velocity, e=None, mu=None):
    return Body(name=name, role="free", translate=True, position=position, velocity=velocity,
                shapes=(Sphere(radius=R, mass=M),), contacts=(ContactSphere((0.0, 0.0, 0.0), R),),
                restitution=e, contact_friction=mu)


def run(bodies, walls=(), scene_e=1.0, scene_mu=0.0, pairs=()):
    t_end = 2 * GAP / VN  # the impact at GAP / VN, then as long again in free flight
    scene = Scene(bodies=bodies, walls=walls, gravity=(0.0, 0.0, 0.0), restitution=scene_e,
                  contact_friction=scene_mu, pair_restitution=pairs,
                  settings=Settings(method="splitting4", dt=t_end / 200, t_end=t_end))
    traj = simulate(scene)
    assert list(traj.events.kind) == ["impact"], traj.events.kind
    np.testing.assert_allclose(traj.events.normal[0], (0.0, 0.0, 1.0), atol=1e-12)
    return traj


def rule(a, b, scene):
    """The documented pair rule, written out here: both set → the smaller, one → it, none → the scene's."""
    if a is not None and b is not None:
        return min(a, b)
    return a if a is not None else b if b is not None else scene


def striker(e=None, mu=None, name="striker"):
    """A sphere flying down at the origin's contact: directly above it when it touches (normal +z)."""
    return ball(name, (-VT * GAP / VN, 0.0, 2 * R + GAP), (VT, 0.0, -VN), e, mu)


def floor(e=None, mu=None):
    """A wall whose surface a striker's lower sphere meets at z = R (its centre at 2R at contact)."""
    return StaticWall(kind="plane", name="floor", point=(0.0, 0.0, R), normal=(0.0, 0.0, 1.0),
                      restitution=e, contact_friction=mu)


def expected_pair(e, mu):
    """(v1, v2, ω1, ω2) after two equal spheres meet (striker 1 onto resting 2) with e and μ (sliding)."""
    jn = (1 + e) * M * VN / 2
    assert 1 / 7 * M * VT > mu * jn  # slides
    J = np.array([-mu * jn, 0.0, jn])                    # on sphere 1 (the striker); −J on sphere 2
    L = R * mu * jn * np.array([0.0, 1.0, 0.0])          # r₁ × J = −R ẑ × J = r₂ × (−J), both alike
    inertia = 0.4 * M * R**2
    return np.array([VT, 0.0, -VN]) + J / M, -J / M, L / inertia, L / inertia


def expected_wall(e, mu):
    """(v, ω) after a sphere strikes an immovable plane with e and μ (sliding)."""
    jn = (1 + e) * M * VN
    assert 2 / 7 * M * VT > mu * jn
    J = np.array([-mu * jn, 0.0, jn])
    return np.array([VT, 0.0, -VN]) + J / M, R * mu * jn * np.array([0.0, 1.0, 0.0]) / (0.4 * M * R**2)


def assert_after(traj, want):
    """The last record (free flight after the impact) of velocities then spins equals ``want``."""
    B = traj.velocity.shape[1]
    got = [traj.velocity[-1, b] for b in range(B)] + [traj.omega[-1, b] for b in range(B)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12 * VT / R)


# ---------------------------------------------------------------------------- friction μ

@pytest.mark.parametrize("rough_first", [True, False], ids=["rough striker", "smooth striker"])
def test_a_rough_ball_striking_a_smoother_one_slides_with_the_smaller_mu(rough_first):
    """μ 0.8 against 0.05: the pair slides with 0.05 (with 0.8 it would stick: 1/7 of the slip stopped)."""
    rough, smooth = 0.8, 0.05
    mu1, mu2 = (rough, smooth) if rough_first else (smooth, rough)
    traj = run([striker(mu=mu1), ball("target", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mu=mu2)], scene_mu=2.0)
    jn = M * VN  # e = 1
    np.testing.assert_allclose(traj.events.impulse[0], [-smooth * jn, 0.0, jn], rtol=1e-12, atol=1e-12 * jn)
    assert_after(traj, expected_pair(1.0, smooth))


@pytest.mark.parametrize("ball_mu, wall_mu, scene_mu", [
    (0.8, 0.05, 0.0),      # the wall smoother
    (0.05, 0.8, 0.0),      # the ball smoother
    (None, 0.05, 0.8),     # only the wall sets μ: the wall's, though the scene's is larger
    (0.05, None, 0.8),     # only the ball sets μ: the ball's
    (None, 0.1, 0.02),     # only the wall sets μ: the wall's, though the scene's is smaller
    (0.1, None, 0.0),      # only the ball, the scene's 0: the ball's (unset is not frictionless)
    (None, None, 0.1),     # neither: the scene's
], ids=["wall smoother", "ball smoother", "wall only", "ball only", "wall only scene smaller",
        "ball only scene zero", "scene"])
def test_a_ball_striking_a_wall_slides_with_the_pair_rules_mu(ball_mu, wall_mu, scene_mu):
    mu = rule(ball_mu, wall_mu, scene_mu)
    traj = run([striker(mu=ball_mu)], walls=(floor(mu=wall_mu),), scene_mu=scene_mu)
    jn = 2 * M * VN
    np.testing.assert_allclose(traj.events.impulse[0], [-mu * jn, 0.0, jn], rtol=1e-12, atol=1e-12 * jn)
    assert_after(traj, expected_wall(1.0, mu))


@pytest.mark.parametrize("first_sets", [True, False], ids=["striker sets", "target sets"])
def test_one_ball_setting_mu_gives_the_pair_its_mu(first_sets):
    """Only one ball sets μ 0.05; the scene's 0 is not the other's: the pair slides with 0.05."""
    mu1, mu2 = (0.05, None) if first_sets else (None, 0.05)
    traj = run([striker(mu=mu1), ball("target", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mu=mu2)], scene_mu=0.0)
    assert_after(traj, expected_pair(1.0, 0.05))


def test_a_frictionless_side_makes_the_pair_frictionless():
    """μ = 0 on one side: the slip is kept and no spin is made, however rough the other side."""
    traj = run([striker(mu=0.0), ball("target", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mu=5.0)], scene_mu=5.0)
    assert_after(traj, expected_pair(1.0, 0.0))


# ---------------------------------------------------------------------------- restitution e

@pytest.mark.parametrize("e1, e2, scene_e, pair_e", [
    (0.3, 0.9, 1.0, None),     # the striker's the smaller
    (0.9, 0.3, 1.0, None),     # the target's the smaller
    (None, 0.7, 0.4, None),    # only the target sets e: its, though the scene's is smaller
    (0.7, None, 0.4, None),    # only the striker sets e
    (None, None, 0.4, None),   # neither: the scene's
    (0.3, 0.2, 1.0, 0.8),      # [[pair_restitution]] overrides both, larger than either
], ids=["striker smaller", "target smaller", "target only", "striker only", "scene", "pair entry"])
def test_two_balls_rebound_with_the_pair_rules_e_or_their_pair_entry(e1, e2, scene_e, pair_e):
    e = pair_e if pair_e is not None else rule(e1, e2, scene_e)
    pairs = () if pair_e is None else (PairRestitution(("target", "striker"), pair_e),)
    traj = run([striker(e=e1), ball("target", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), e=e2)], scene_e=scene_e,
               pairs=pairs)
    assert_after(traj, expected_pair(e, 0.0))


@pytest.mark.parametrize("ball_e, wall_e, scene_e, pair_e", [
    (0.3, 0.9, 1.0, None),
    (0.9, 0.3, 1.0, None),
    (None, 0.7, 0.4, None),
    (0.7, None, 0.4, None),
    (None, None, 0.4, None),
    (0.3, 0.2, 1.0, 0.8),
], ids=["ball smaller", "wall smaller", "wall only", "ball only", "scene", "pair entry"])
def test_a_ball_rebounds_from_a_wall_with_the_pair_rules_e_or_their_pair_entry(ball_e, wall_e, scene_e, pair_e):
    e = pair_e if pair_e is not None else rule(ball_e, wall_e, scene_e)
    pairs = () if pair_e is None else (PairRestitution(("floor", "striker"), pair_e),)
    traj = run([striker(e=ball_e)], walls=(floor(e=wall_e),), scene_e=scene_e, pairs=pairs)
    assert_after(traj, expected_wall(e, 0.0))
