"""Translating free bodies on the compiled engine against the numpy reference.

Oracles:
- the numpy integrators (engine/integrators.Splitting: P kicked by the forces as L by the torques, X drifted
  by h·P/M as the frames turn), which test_translation.py checks against closed forms; the kernels must
  follow them step for step — positions, momenta, orientations, angular momenta, energies and (with contacts)
  the event log over ~1000 steps within the round-off bound of tests/roundoff.py (~1e-12 relative here), as
  test_compiled.py asks of every other feature;
- the parabola x = x₀ + v₀t + ½gt² of a body on which no torque and no force but gravity acts (a splitting
  step is exact for a constant force, so the compiled run meets it to rounding);
- between impacts the steps are the kernels' (counted): a translating scene with no resting contact runs
  its free steps compiled, handing only impact steps to the numpy contact driver.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_compiled import ARRAYS, assert_close, rot, scenes
from test_compiled import both as both_free
from test_compiled_contacts import ARRAYS as CONTACT_ARRAYS
from test_compiled_contacts import assert_same_run
from test_compiled_contacts import both as both_contacts

from pem_physics import Ensemble, SimulationError, ValidationError, examples, simulate
from pem_physics.engine.backends import compiled
from pem_physics.model import Body, Dipole, RotatingField, Scene, Settings
from pem_physics.model.inertia import Cuboid
from pem_physics.model.scene import ContactSphere, StaticWall

from conftest import splitting4_once

pytestmark = pytest.mark.skipif(not compiled.available(), reason="numba is not installed")

#: The translation's own records, compared besides test_compiled's (relative to each array's largest magnitude).
TRANSLATION = ("position", "linear_momentum", "velocity", "center_of_mass")
#: the parabola's tolerance (relative): a splitting step is exact for a constant force, up to rounding
RTOL = 1e-12


def kernel_steps(monkeypatch) -> list:
    """Steps each call of the compiled kernels (compiled.Runner.advance_to) advanced, appended as runs go."""
    done = []
    advance_to = compiled.Runner.advance_to

    def counting(self, marks):
        start = self.integ.steps_done
        out = advance_to(self, marks)
        done.append(int(out[-1][:, 1].min()) - start)
        return out

    monkeypatch.setattr(compiled.Runner, "advance_to", counting)
    return done


# ---------------------------------------------------------------------------- scenes

def falling_magnet(**kw):
    """A spinning, asymmetric free magnet (dipole at its centre of mass, no field: no torque) thrown upwards."""
    body = Body(name="magnet", role="free", translate=True, position=(0.1, -0.2, 1.0), velocity=(1.0, 0.5, 2.0),
                orientation=rot((1, 2, 3), 25), angular_velocity=(0.4, -3.0, 1.2),
                shapes=[Cuboid(half_sides=(0.01, 0.015, 0.004), mass=0.05)],
                dipoles=[Dipole((0, 0, 0), (0.02, 0, 0.01))])
    scene = Scene(name="falling magnet", bodies=[body], gravity=(0.0, 0.0, -9.81),
                  settings=Settings(dt=1e-3, t_end=1.0, record_interval=0.01))
    return replace(scene, **kw)


def bouncing_ball_in_a_corner(t_end=2.0):
    """The bouncing-ball example thrown sideways at a second wall: floor and wall impacts, no resting yet."""
    scene = examples.bouncing_ball(t_end=t_end)
    scene.bodies = [replace(scene.bodies[0], velocity=(0.4, 0.0, 0.0), angular_velocity=(0.0, 2.0, 0.0))]
    scene.walls = tuple(scene.walls) + (StaticWall(kind="plane", name="wall", point=(0.3, 0.0, 0.0),
                                                   normal=(-1.0, 0.0, 0.0), restitution=0.9),)
    return scene


def mixed_scene(rotating=True, contacts=False):
    """A bar-magnet pendulum, a translating free magnet thrown past its bob and a fixed magnet, in a uniform
    (and, ``rotating``, a rotating) field; ``contacts``: spheres on the bob and the free magnet and a floor
    the free magnet bounces on."""
    bob = Body(name="bob", position=(0, 0, 0.3), orientation=rot((1, 0.3, 0), 25), angular_velocity=(0.5, -0.2, 0.1),
               shapes=[Cuboid(half_sides=(0.01, 0.02, 0.03), mass=0.05, center=(0, 0, -0.2))],
               dipoles=[Dipole((0, 0, -0.22), (0, 0, 0.3)), Dipole((0.005, 0, -0.18), (0.05, 0, 0.1))],
               contacts=(ContactSphere((0, 0, -0.2), 0.03),) if contacts else ())
    free = Body(name="flyer", role="free", translate=True, position=(-0.1, 0.03, 0.12), velocity=(0.3, 0.0, 1.5),
                orientation=rot((0, 1, 1), 30), angular_velocity=(1.0, 2.0, -0.5),
                shapes=[Cuboid(half_sides=(0.004, 0.008, 0.012), mass=0.01)],
                dipoles=[Dipole((0, 0, 0.004), (0.02, 0, 0))],
                contacts=(ContactSphere((0, 0, 0), 0.012),) if contacts else ())
    base = Body(name="base", role="fixed", position=(0.06, -0.02, -0.05), dipoles=[Dipole((0, 0, 0), (0, 0, -0.5))])
    scene = Scene(name="mixed", bodies=[bob, free, base], gravity=(0, 0, -9.81), field=(1e-3, 0, -2e-3),
                  rotating_field=RotatingField((2e-3, 0, 0), (0, 1e-3, 5e-4), 7.0, 0.3) if rotating else None,
                  restitution=0.9, settings=Settings(dt=1e-3, t_end=1.0, record_interval=0.01))
    if contacts:
        scene.walls = (StaticWall(kind="plane", name="floor", point=(0, 0, 0), normal=(0, 0, 1)),)
    return scene


# ---------------------------------------------------------------------------- which engine

@pytest.mark.parametrize("scene", [falling_magnet, lambda: examples.build("magnetic-marbles"),
                                   lambda: examples.build("bouncing-ball")])
def test_translating_scenes_run_on_the_compiled_engine(scene):
    traj = simulate(scene(), t_end=0.05)
    assert traj.info["engine"] == "numba" and traj.info["kernels"] in ("jit", "ahead-of-time")
    assert "engine_reason" not in traj.info
    assert traj.translating.any()


# ---------------------------------------------------------------------------- no contacts

@pytest.mark.parametrize("method", ["splitting4", "splitting2"])
def test_falling_magnet_follows_numpy_and_the_parabola(method):
    scene = falling_magnet()
    a, b, tw = both_free(scene, method=method)
    assert a.steps == b.steps == 1000
    assert_close(a, b, tw, ARRAYS + TRANSLATION)
    body = scene.bodies[0]
    t = b.t[:, None]
    g = np.asarray(scene.gravity)
    want = np.asarray(body.position) + np.asarray(body.velocity) * t + 0.5 * g * t**2
    np.testing.assert_allclose(b.position[:, 0], want, rtol=0, atol=RTOL * np.abs(want).max())
    np.testing.assert_allclose(b.velocity[:, 0], body.velocity + g * t, rtol=0, atol=RTOL * 10.0)
    np.testing.assert_allclose(b.torque, 0.0, atol=1e-18)


@pytest.mark.parametrize("method", splitting4_once(["splitting4", "splitting2"]))
def test_mixed_scene_follows_numpy(method):
    a, b, tw = both_free(mixed_scene(), method=method)
    assert a.steps == b.steps == 1000
    assert_close(a, b, tw, ARRAYS + TRANSLATION)
    assert np.ptp(b.position[:, 1, 2]) > 0.1  # the free magnet flies


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_two_magnets_attract_like_numpy():
    """The magnetic marbles without contact spheres, released head to tail 4 cm apart: they accelerate towards
    each other (stopped at 2.1 cm, before they would meet and pass through the 1/r⁴ singularity)."""
    scene = examples.magnetic_marbles(t_end=0.3, dt=3e-4)
    scene.bodies = [replace(b, contacts=()) for b in scene.bodies]
    a, b, tw = both_free(scene)
    assert a.steps == b.steps == 1000
    assert_close(a, b, tw, ARRAYS + TRANSLATION)
    gap = b.position[:, 1, 0] - b.position[:, 0, 0]
    assert 0.015 < gap[-1] < 0.025 and np.all(np.diff(gap) < 0)


def test_ensemble_of_translating_bodies_follows_numpy_and_its_single_runs():
    scene = mixed_scene()
    w = np.array([1.0, 0.5, -1.5])[:, None] * np.array([0.5, -0.2, 0.1])  # the bob's; the flyer's as in the scene
    ens = Ensemble(angular_velocity=np.stack([w, np.broadcast_to([1.0, 2.0, -0.5], w.shape)], axis=1),
                   field=np.array([[1e-3, 0, -2e-3], [0, 2e-3, 0], [0, 0, 0]]))
    a, b, tw = both_free(scene, t_end=0.5, ensemble=ens)
    assert_close(a, b, tw, ARRAYS + TRANSLATION)
    for e in range(3):  # each member is the single scene with its own spin and field: the same compiled code
        one = simulate(replace(scene, field=tuple(ens.field[e]),
                               bodies=[replace(scene.bodies[0], angular_velocity=ens.angular_velocity[e, 0]),
                                       *scene.bodies[1:]]), t_end=0.5)
        assert one.info["engine"] == "numba"
        for k in ("orientation", "position", "linear_momentum"):
            assert np.array_equal(getattr(one, k), getattr(b.member(e), k)), (e, k)


# ---------------------------------------------------------------------------- contacts

@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_magnetic_marbles_match_the_numpy_driver():
    """Attraction, impacts with e = 0.5, then the marbles snap together (resting contact: numpy steps)."""
    fast, ref, tw = both_contacts(examples.build("magnetic-marbles"))
    assert fast.steps == 1200 and "rest" in ref.events.kind
    assert_same_run(fast, ref, tw, CONTACT_ARRAYS + TRANSLATION)


def test_bouncing_ball_runs_its_free_steps_on_the_kernels(monkeypatch):
    steps = kernel_steps(monkeypatch)
    fast, ref, tw = both_contacts(bouncing_ball_in_a_corner())
    assert fast.steps == 2000 and {"floor", "wall"} <= set(ref.events.body2) and "rest" not in ref.events.kind
    assert_same_run(fast, ref, tw, CONTACT_ARRAYS + TRANSLATION)
    # the kernels take the impact steps too (impact_kernels._resolve_impacts), but for one whose contact already
    # touches at the step's start (the wall at t = 0.7 s, a grid time: contacts._advance_step's impact "now"), the
    # numpy driver takes it
    at_start = {round(t / 1e-3) for t in ref.events.t if abs(t / 1e-3 - round(t / 1e-3)) < 1e-9}
    assert len(at_start) == 1
    assert sum(steps) == fast.steps - len(at_start)


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_bouncing_ball_comes_to_rest_like_the_numpy_driver():
    scene = examples.build("bouncing-ball")  # rests at ≈ 4.1 s: numpy steps from there
    # dropped off the origin: the contact points are compared relative to their size, which must not be 0
    scene.bodies = [replace(scene.bodies[0], position=(0.1, 0.2, scene.bodies[0].position[2]))]
    fast, ref, tw = both_contacts(scene)
    assert ref.events.kind[-1] == "rest"
    assert_same_run(fast, ref, tw, CONTACT_ARRAYS + TRANSLATION)


@pytest.mark.parametrize("rotating", [True, False], ids=["rotating field", "uniform field"])
@pytest.mark.parametrize("method", splitting4_once(["splitting4", "splitting2"]))
def test_mixed_scene_with_contacts_matches_the_numpy_driver(rotating, method):
    """Pendulum, translating magnet, floor; a rotating field makes the torques time-dependent (Brent's trial
    steps numpy), a uniform one does not (trial steps on the kernel, compiled.Runner.step)."""
    fast, ref, tw = both_contacts(mixed_scene(rotating=rotating, contacts=True), method=method)
    assert fast.steps == 1000 and "floor" in ref.events.body2
    assert_same_run(fast, ref, tw, CONTACT_ARRAYS + TRANSLATION)


# ---------------------------------------------------------------------------- generated scenes

@st.composite
def translating_scenes(draw):
    """test_compiled's generated scenes with the first moving body and some others made free, translating bodies
    (a velocity drawn; a pendulum's pivot becomes the body's origin) and, sometimes, contact spheres at the
    moving bodies' centres of mass and a floor the translating ones fall on."""
    scene = draw(scenes())
    moving = [i for i, b in enumerate(scene.bodies) if b.role in ("pendulum", "free")]
    flags = draw(st.lists(st.booleans(), min_size=len(moving), max_size=len(moving)))
    bodies = list(scene.bodies)
    for k, i in enumerate(moving):
        if k == 0 or flags[k]:
            bodies[i] = replace(bodies[i], role="free", hinge=None, translate=True,
                                velocity=draw(st.tuples(*[st.floats(-0.3, 0.3)] * 3)))
    if draw(st.booleans()):
        # at the centre of mass in body coordinates (test_compiled: the shape's centre, 0.1 m below a pendulum's
        # pivot), on the bodies that take part in contacts: pendulums and translating free bodies
        bodies = [replace(b, contacts=(ContactSphere(tuple(b.shapes[0].center), 0.02),))
                  if b.role == "pendulum" or b.translate else b for b in bodies]
        # below the origin: the contact points are compared relative to their size, which must not be ~0
        floor = StaticWall(kind="plane", name="floor", point=(0, 0, -0.02), normal=(0, 0, 1))
        scene = replace(scene, walls=(floor,), restitution=draw(st.sampled_from([1.0, 0.7])))
    return replace(scene, bodies=bodies)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scene=translating_scenes(), method=st.sampled_from(["splitting4", "splitting2"]))
def test_generated_translating_scenes_agree_with_numpy(scene, method):
    try:
        if scene.walls:
            fast, ref, tw = both_contacts(scene, method=method)
        else:
            ref, fast, tw = both_free(scene, method=method)
    except SimulationError:
        return  # a blow-up in either engine (test_compiled checks that they are reported alike)
    except ValidationError as e:
        # tilted bodies side by side can start with their contact spheres overlapping: not a scene, the start
        # check refuses it (tests/engine/test_contacts*.py test that refusal)
        assume("overlap" not in e.message)
        raise
    if ref.events is not None and len(ref.events):
        assert_same_run(fast, ref, tw, ARRAYS + TRANSLATION)
    else:
        assert_close(ref, fast, tw, ARRAYS + TRANSLATION)
