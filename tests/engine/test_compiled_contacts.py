"""Contact scenes on the compiled engine (kernels step between impacts, engine/contact/driver.run_compiled) against the
numpy contact driver alone (engine/contact/driver.run, compiled.ENABLED = False).

Oracles:
- the numpy-only run: the kernels' steps are the numpy steps to rounding and every impact step is the numpy
  driver's own, so the events (times, kinds, bodies, impulses) and the records agree within the round-off bound
  of tests/roundoff.py (measured on twin numpy runs with ulp-nudged steps; ~1e-12 relative here);
- the kernels' gap check (broad_kernels._overlap) against ContactModel.gaps for every wall kind, pair by pair;
- Newton's cradle one-in-one-out on the compiled engine against momentum and energy (test_contact_sim's
  closed forms: elliptic-integral quarter period, energy of the last ball);
- the ahead-of-time build against the JIT kernels, bit for bit, for one contact scene.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_contact_sim import CRADLE, body_energy, cradle_oracle

from pem_physics import examples, simulate
from pem_physics.engine.backends import compiled, prebuild
from pem_physics.engine.contact import driver as contacts
from pem_physics.engine.integrators import make_integrator
from pem_physics.engine.system import compile_system
from pem_physics.model.scene import Body, ContactSphere, Dipole, RotatingField, StaticWall

from roundoff import assert_follows, pick, twins

pytestmark = pytest.mark.skipif(not compiled.available(), reason="numba is not installed")

#: Recorded arrays compared between the engines (relative to each array's largest magnitude).
ARRAYS = ("orientation", "omega", "angular_momentum", "kinetic_energy", "gravity_energy", "center_of_mass",
          "torque")


def numpy_runs(scene, **kw):
    """(numpy-only trajectory, its twins) of ``scene``: the twins' ulp-nudged steps measure the round-off bound
    (tests/roundoff.py)."""
    compiled.ENABLED = False
    try:
        ref = simulate(scene, **kw)
        tw = twins(lambda: simulate(scene, **kw))
    finally:
        compiled.ENABLED = True
    assert ref.info["engine"] == "numpy" and all(t.info["engine"] == "numpy" for t in tw)
    return ref, tw


def both(scene, **kw):
    """(compiled, numpy-only, numpy's twins) trajectories of ``scene``."""
    fast = simulate(scene, **kw)
    assert fast.info["engine"] == "numba" and "compiled engine" in fast.info["contacts"]
    return (fast, *numpy_runs(scene, **kw))


def assert_same_run(fast, ref, tw, arrays=ARRAYS, base=None):
    """The same events (bodies, kinds) and, within the round-off bound (tests/roundoff.py) measured by the twins
    ``tw`` of the numpy run ``base`` (default ``ref``; another when ``ref`` is not the numpy run), the same event times,
    impulses, points, normals and energy taken, and the same records of ``arrays`` (relative to each quantity's
    largest magnitude; energies to the total energy's) in ``fast`` and ``ref``."""
    base = ref if base is None else base
    ev, er, eb, et = fast.events, ref.events, base.events, [t.events for t in tw]
    assert len(ev) == len(er) > 0
    assert (ev.body1, ev.body2, ev.kind) == (er.body1, er.body2, er.kind)
    # the twins must meet the same events, or their spread measures nothing (an event-structure separatrix)
    for e in et:
        assert (e.body1, e.body2, e.kind) == (eb.body1, eb.body2, eb.kind), "a twin run met other events"
    steps = ref.steps
    E_scale = np.max(np.abs(base.total_energy))
    for name, scale in (("t", None), ("impulse", None), ("point", None), ("normal", 1.0)):
        assert_follows(f"events.{name}", getattr(ev, name), getattr(er, name), pick(et, name), steps, scale,
                       getattr(eb, name))
    assert_follows("events.energy_loss", ev.energy_loss, er.energy_loss, pick(et, "energy_loss"), steps, E_scale,
                   eb.energy_loss)
    assert_follows("impact_loss", fast.impact_loss, ref.impact_loss, pick(tw, "impact_loss"), steps, E_scale,
                   base.impact_loss)
    np.testing.assert_array_equal(fast.t, ref.t)
    for k in arrays:
        assert_follows(k, getattr(fast, k), getattr(ref, k), pick(tw, k), steps, None, getattr(base, k))
    # both sum the drivers' work (the kernels' steps and the numpy driver's impact steps alike)
    assert fast.info["warnings"] == ref.info["warnings"]
    assert (fast.driver_work is None) == (ref.driver_work is None)
    if ref.driver_work is not None:
        assert_follows("driver_work", fast.driver_work, ref.driver_work, pick(tw, "driver_work"), steps, E_scale,
                       base.driver_work)


def swinging_ball(*walls, t_end=0.8):
    """One cradle ball (hinged about y) released at 30° from −x, with ``walls``."""
    scene = examples.newtons_cradle(n=1, t_end=t_end, dt=1e-3, **CRADLE)
    scene.walls = walls
    return scene


# The ball hangs at (0, 0, 0.0625), radius 0.0125; released from (−0.15, 0, 0.1027) it swings to +x.
WALLS = {
    "plane": (StaticWall(kind="plane", name="stop", point=(0.0125, 0.0, 0.0), normal=(-1.0, 0.0, 0.0),
                         restitution=0.5),),
    "sphere obstacle": (StaticWall(kind="sphere", name="knob", center=(0.03, 0.0, 0.07), radius=0.01, inside=False,
                                   restitution=0.8),),
    "sphere container": (StaticWall(kind="sphere", name="bowl", center=(-0.01, 0.0, 0.2), radius=0.19),),
    "cylinder": (StaticWall(kind="cylinder", name="rod", point=(0.035, 0.0, 0.075), direction=(0.0, 1.0, 0.0),
                            radius=0.008, inside=False, restitution=0.9),),
    "box container": (StaticWall(kind="box", name="case", center=(-0.01, 0.0, 0.1), half_sizes=(0.17, 0.05, 0.1),
                                 axes=((np.cos(0.1), 0.0, -np.sin(0.1)), (0.0, 1.0, 0.0),
                                       (np.sin(0.1), 0.0, np.cos(0.1))), restitution=0.7),),
    "box obstacle": (StaticWall(kind="box", name="block", center=(0.045, 0.0, 0.06), half_sizes=(0.01, 0.02, 0.02),
                                inside=False),),
    "plane and box": (StaticWall(kind="plane", name="stop", point=(0.03, 0.0, 0.0), normal=(-1.0, 0.0, 0.0)),
                      StaticWall(kind="box", name="case", center=(0.0, 0.0, 0.1), half_sizes=(0.17, 0.05, 0.1))),
}


# ---------------------------------------------------------------------------- the gap check

def gap_model(scene):
    scene = scene.checked()
    system = compile_system(scene)
    model = contacts.ContactModel(scene, system)
    integ = make_integrator("splitting4", system, 1e-3, system.U0[None], system.omega0[None])
    return system, model, integ


def ball_and_post(walls: str):
    """The swinging ball with the walls ``WALLS[walls]`` and a fixed post (a sphere–sphere pair besides)."""
    scene = swinging_ball(*WALLS[walls])
    scene.bodies.append(Body(name="post", role="fixed", position=(-0.2, 0.0, 0.06),
                             contacts=(ContactSphere((0.0, 0.0, 0.0), 0.01),)))
    return scene


def test_a_scene_without_contacts_takes_the_contact_kernels_types():
    """One compiled splitting kernel serves scenes with and without contacts (the build's single entry): the stand-in
    arrays of a scene without (compiled.no_contacts) have numba's types of a contact scene's, field by field, and are
    switched off; a numpy copy of the stand-in says it was neither read nor written."""
    import numba

    for walls in sorted(WALLS):
        system, model, integ = gap_model(ball_and_post(walls))
        real = compiled.contact_arrays(model, system.axes, integ.orientation()[0], integ.J[0])
        stand_in = compiled.no_contacts(len(system.axes))
        for field, a, b in zip(compiled.ContactArrays._fields, real, stand_in):
            assert numba.typeof(a) == numba.typeof(b), field
        assert real.present and not stand_in.present
    assert not any((stand_in.graze, stand_in.impact, stand_in.merge, stand_in.broad, stand_in.coupled))
    before = [np.array(a, copy=True) for a in stand_in]
    scene = examples.build("three-magnet", t_end=0.2).checked()
    system = compile_system(scene)
    integ = make_integrator("splitting4", system, scene.settings.dt, system.U0[None], system.omega0[None])
    runner = compiled.Runner(integ, 1e-6, 100)
    runner.advance_to([50, 100])
    for a, b in zip(runner.contact, before):
        assert np.array_equal(np.asarray(a), b)
    assert np.isclose(runner.integ.steps_done, 100)


@pytest.mark.parametrize("walls", sorted(WALLS))
def test_gap_check_matches_the_contact_model(walls, rng):
    """_overlap reports a pair exactly when its numpy gap is below the limit, at random poses of the ball."""
    from pem_physics.engine import broad_kernels
    from pem_physics.model.rotations import axis_angle_matrix

    scene = ball_and_post(walls)
    system, model, integ = gap_model(scene)
    arrays = compiled.contact_arrays(model, system.axes, integ.orientation()[0], integ.J[0])
    X = np.empty((len(model.radius), 3))
    for _ in range(20):
        U = axis_angle_matrix(np.array([0.0, 1.0, 0.0]), rng.uniform(-1.2, 1.2))[None]
        Q = np.einsum("bji,bjk->bik", system.axes, U)  # as Splitting keeps it
        g = model.gaps(U)
        for k in range(len(g)):
            for below, expect in ((1e-13, k), (-1e-13, -1)):
                limit = np.full(len(g), -np.inf)
                limit[k] = g[k] + below * model.scale[k]
                gk = np.empty(len(g))
                got = broad_kernels._overlap(arrays._replace(limit=limit), Q, system.pivot, X, gk)
                assert got == expect, (walls, k, g[k])
                np.testing.assert_allclose(gk, g, rtol=0, atol=1e-15)


@pytest.mark.parametrize("walls", sorted(WALLS))
def test_gaps_of_some_pairs_equal_those_of_all(walls, rng):
    """ContactModel.gaps for a subset of pairs (Brent's search: sphere by sphere, Wall.gap) = the same entries of
    the whole vector (sphere pairs at once, each wall's spheres at once: Wall.gaps)."""
    from pem_physics.model.rotations import axis_angle_matrix

    scene = ball_and_post(walls)
    _, model, _ = gap_model(scene)
    for _ in range(10):
        U = axis_angle_matrix(np.array([0.0, 1.0, 0.0]), rng.uniform(-1.2, 1.2))[None]
        every = model.gaps(U)
        some = [int(p) for p in rng.permutation(len(every))[: max(1, len(every) // 2)]]
        np.testing.assert_allclose(model.gaps(U, pairs=some), every[some], rtol=0, atol=1e-15)


@pytest.mark.parametrize("walls", sorted(WALLS))
def test_grazing_rates_match_finite_differences(walls, rng):
    """The rates the kernels' grazing check interpolates with (broad_kernels._graze_rate: d/dt of the squared distance
    (g + σ)² where σ > 0, else of the gap g) against central differences of ContactModel.gaps along the swing,
    for every pair apart, at random angles and rates."""
    from pem_physics.engine import broad_kernels
    from pem_physics.model.rotations import axis_angle_matrix

    scene = ball_and_post(walls)
    system, model, integ = gap_model(scene)
    arrays = compiled.contact_arrays(model, system.axes, integ.orientation()[0], integ.J[0])
    sigma = arrays.sigma
    y = np.array([0.0, 1.0, 0.0])

    def pose(theta):
        U = axis_angle_matrix(y, theta)[None]
        return U, np.einsum("bji,bjk->bik", system.axes, U)

    checked = 0
    for _ in range(12):
        theta, rate, eps = rng.uniform(-1.2, 1.2), rng.uniform(-6.0, 6.0), 1e-6
        U, Q = pose(theta)
        X = model.positions(U)
        # the angular velocity of the swing: the sign for which ω × (x − pivot) is the centre's velocity
        dX = (model.positions(pose(theta + eps)[0]) - model.positions(pose(theta - eps)[0])) / (2 * eps) * rate
        w = next(s * rate * y for s in (1.0, -1.0)
                 if np.allclose(np.cross(s * rate * y, X[0] - system.pivot[0]), dX[0], rtol=1e-6, atol=1e-9))
        S, g = np.empty((len(model.radius), 3)), np.empty(len(model.pairs))
        broad_kernels._overlap(arrays, Q, system.pivot, S, g)
        g_hi, g_lo = model.gaps(pose(theta + eps)[0]), model.gaps(pose(theta - eps)[0])
        for k in range(len(model.pairs)):
            if g[k] <= 1e-4:
                continue
            q_hi, q_lo = (g_hi[k] + sigma[k]) ** 2, (g_lo[k] + sigma[k]) ** 2
            fd = ((q_hi - q_lo) if sigma[k] > 0 else (g_hi[k] - g_lo[k])) / (2 * eps) * rate
            got = broad_kernels._graze_rate(arrays, k, S, system.pivot, np.zeros((1, 3)), w[None])
            assert got == pytest.approx(fd, rel=1e-6, abs=1e-9), (walls, k, theta)
            checked += 1
    assert checked >= 12


# ---------------------------------------------------------------------------- compiled against numpy

@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_newtons_cradle_matches_the_numpy_driver():
    fast, ref, tw = both(examples.newtons_cradle(t_end=2.0, dt=1e-3, **CRADLE), record_interval=2e-3)
    assert len(set(ref.events.t)) == 4  # one impact group every half period
    assert_same_run(fast, ref, tw)


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_cradle_two_in_two_out_matches_the_numpy_driver():
    assert_same_run(*both(examples.newtons_cradle(raised=2, t_end=1.0, dt=1e-3, **CRADLE), record_interval=2e-3))


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_colliding_pendulums_match_the_numpy_driver():
    fast, ref, tw = both(examples.colliding_pendulums(t_end=3.0), record_interval=5e-3)
    assert len(ref.events) >= 3
    assert_same_run(fast, ref, tw)


@pytest.mark.parametrize("walls", sorted(WALLS))
def test_a_pendulum_striking_walls_matches_the_numpy_driver(walls):
    fast, ref, tw = both(swinging_ball(*WALLS[walls]), record_interval=2e-3)
    assert {b for b in ref.events.body2} <= {w.name for w in WALLS[walls]}
    assert_same_run(fast, ref, tw)


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_fixed_body_spheres_and_splitting2():
    scene = examples.newtons_cradle(n=2, t_end=1.0, dt=1e-3, **CRADLE)
    r, L = CRADLE["radius"], CRADLE["length"]
    z = scene.bodies[0].position[2] - L
    scene.bodies.append(Body(name="post", role="fixed", position=(4 * r, 0.0, z),
                             contacts=(ContactSphere((0, 0, 0), r),)))
    for method in ("splitting4", "splitting2"):
        fast, ref, tw = both(scene, method=method, record_interval=2e-3)
        assert "post" in ref.events.body2
        assert_same_run(fast, ref, tw)


def rotating_field_pendulums():
    scene = examples.colliding_pendulums(t_end=1.5)
    scene.bodies[0] = replace(scene.bodies[0], dipoles=(Dipole((0.0, 0.0, -0.5), (0.5, 0.0, 0.0)),))
    scene.rotating_field = RotatingField((0.0, 0.0, 2e-2), (2e-2, 0.0, 0.0), angular_velocity=3.0)
    return scene


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_time_dependent_torques_in_the_kernels_impact_steps(monkeypatch):
    """A rotating field on a magnetised bob: the kernels' impact search starts its trial steps at its t_c (the
    torque is the field's there, as in numpy's), so the kernels take the impact steps themselves — no numpy impact
    step — and the run, drivers' work included, matches the numpy driver's."""
    from test_compiled_impacts import count_numpy_steps

    fast, ref, tw = both(rotating_field_pendulums(), record_interval=5e-3)
    assert len(fast.events) > 0 and fast.driver_work is not None
    assert_same_run(fast, ref, tw)
    calls = count_numpy_steps(monkeypatch)
    again = simulate(rotating_field_pendulums(), record_interval=5e-3)
    assert calls == [] and np.array_equal(again.orientation, fast.orientation)


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_time_dependent_trial_steps_of_the_numpy_impact_step_on_the_kernel(monkeypatch):
    """With the kernels' own impact steps off, each impact step is numpy's (contacts._advance_step), its Brent trial
    steps on the kernel from the trial's start time (Runner.step's t0) with the drivers' work carried: the same run."""
    from test_compiled_impacts import count_numpy_steps

    monkeypatch.setattr(compiled, "IMPACTS", False)
    fast, ref, tw = both(rotating_field_pendulums(), record_interval=5e-3)
    assert_same_run(fast, ref, tw)
    calls = count_numpy_steps(monkeypatch)
    again = simulate(rotating_field_pendulums(), record_interval=5e-3)
    assert len(calls) >= len(set(np.ceil(np.asarray(fast.events.t) / 1e-3 - 1e-9))) > 0
    assert np.array_equal(again.orientation, fast.orientation)


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_a_magnet_on_a_table_in_a_contact_scene():
    """A magnet keyed on a table (positions and orientations) beside magnetised colliding pendulums: the kernels
    step between impacts with the magnet where the table puts it and sum its work; the numpy driver takes the
    impact steps (time-dependent torques); the run matches the numpy one, drivers' work included."""
    from pem_physics.model.motion import TabulatedMotion
    from pem_physics.model.rotations import axis_angle_matrix, orientation_to_quat

    scene = examples.colliding_pendulums(t_end=1.5)
    scene.bodies[0] = replace(scene.bodies[0], dipoles=(Dipole((0.0, 0.0, -0.5), (0.5, 0.0, 0.0)),))
    t = np.linspace(0.0, 1.6, 161)
    turn = np.array([axis_angle_matrix(np.array([0.0, 0.0, 1.0]), 2.0 * tk).T for tk in t])
    keyed = TabulatedMotion(t, np.stack([-0.1 + 0.02 * np.sin(3 * t), 0.05 + 0 * t, 0.5 - 0.01 * t], 1),
                            orientation_to_quat(turn))
    scene.bodies.append(Body(name="keyed", role="driven", motion=keyed, dipoles=(Dipole((0, 0, 0), (0.3, 0, 0)),)))
    fast, ref, tw = both(scene, record_interval=5e-3)
    assert fast.driver_work is not None and np.max(np.abs(fast.driver_work)) > 1e-6  # the magnet does work
    assert_same_run(fast, ref, tw)


# ---------------------------------------------------------------------------- independent oracles

def test_cradle_one_in_one_out_on_the_compiled_engine():
    """Momentum and energy across the first impact: ball 1 stops, ball 5 leaves with all the energy."""
    scene = examples.newtons_cradle(t_end=0.33, dt=1e-3, **CRADLE)
    traj = simulate(scene, record_interval=1e-3)
    assert traj.info["engine"] == "numba"
    J, w_in, t_quarter, E0 = cradle_oracle(**CRADLE)
    ev = traj.events
    assert [(a, b) for a, b in zip(ev.body1, ev.body2)] == [(f"ball{k}", f"ball{k + 1}") for k in range(1, 5)]
    assert len(set(ev.t)) == 1 and abs(ev.t[0] - t_quarter) < 1e-12
    after = traj.t > ev.t[0]
    w = traj.omega[after][:, :, 1]
    assert np.max(np.abs(w[:, :4])) <= 1e-12 * w_in
    E5 = body_energy(traj, 4, CRADLE["mass"], J, traj.pivot[4, 2] - CRADLE["length"])[after]
    assert np.max(np.abs(E5 - E0)) < 1e-12 * E0
    assert abs(ev.energy_loss) <= 1e-14 * E0 and traj.energy_balance() < 1e-12


def test_stop_ends_a_compiled_contact_run_on_a_partial_record():
    seen = []
    traj = simulate(examples.newtons_cradle(t_end=1.0), progress=seen.append, stop=lambda: len(seen) >= 2,
                    record_interval=1e-3)
    assert traj.info["engine"] == "numba" and not traj.complete and len(seen) == 2
    assert traj.t[-1] == traj.steps * 1e-3 and len(traj.t) == len(traj.impact_loss)
    np.testing.assert_allclose(np.diff(traj.t[:-1]), 1e-3, rtol=1e-9)


# ---------------------------------------------------------------------------- ahead of time

@pytest.mark.slow
@pytest.mark.xdist_group("aot-build")  # with the other builds (tests/engine/test_aot.py)
def test_ahead_of_time_build_runs_contact_scenes_bit_for_bit(tmp_path, monkeypatch):
    prebuild.build(tmp_path, log=lambda *_: None)
    scene = examples.newtons_cradle(t_end=1.0, dt=1e-3)
    monkeypatch.setenv("PEM_AOT", "0")
    jit = simulate(scene, record_interval=2e-3)
    monkeypatch.setenv("PEM_AOT", "1")
    monkeypatch.setenv("PEM_AOT_DIR", str(tmp_path))
    ahead = simulate(scene, record_interval=2e-3)
    assert jit.info["kernels"] == "jit" and ahead.info["kernels"] == "ahead-of-time"
    assert jit.events.t == ahead.events.t and jit.events.body2 == ahead.events.body2
    np.testing.assert_array_equal(np.array(jit.events.impulse), np.array(ahead.events.impulse))
    for k in ARRAYS:
        assert np.array_equal(getattr(jit, k), getattr(ahead, k)), k
