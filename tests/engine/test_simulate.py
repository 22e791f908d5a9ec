"""The simulation driver's bookkeeping (record times) and pivot friction, against closed forms.

Oracles: a free spherical body turns uniformly, U(t) = U₀ R(ω̂, |ω| t)ᵀ (rotation from scipy); a body
spinning about a principal axis with pivot friction c slows as ω(t) = ω₀ e^{−ct/I} and has turned by
ω₀ I/c (1 − e^{−ct/I}) (theory §3: T = −cω).
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from pem_physics.engine.simulate import simulate
from pem_physics.model import Body, Scene, Settings
from pem_physics.model.inertia import MassProperties

U0 = Rotation.from_rotvec([0.4, -0.9, 0.3]).as_matrix().T  # rows = body axes in the lab
OMEGA0 = np.array([0.3, -1.2, 2.0])


def spinning_sphere(method, dt, t_end, record_interval):
    body = Body(name="ball", role="free", orientation=U0, angular_velocity=OMEGA0,
                mass_properties=MassProperties(0.2, np.zeros(3), 2e-3 * np.eye(3)))
    return Scene(bodies=[body], gravity=(0, 0, -9.81),
                 settings=Settings(method=method, dt=dt, t_end=t_end, record_interval=record_interval))


def uniform_turn(t):
    """U(t) (R,3,3) of the sphere: every body axis turned by |ω|t about ω̂."""
    turns = Rotation.from_rotvec(np.outer(t, OMEGA0)).as_matrix()
    return U0[None] @ np.swapaxes(turns, -1, -2)


# (dt, record_interval, t_end) → the record times: multiples of the interval, and t_end last when it is not one.
RECORD_CASES = [
    (0.01, 0.03, 0.5, [0.03 * k for k in range(17)] + [0.5]),
    (0.02, 0.1, 0.3, [0.0, 0.1, 0.2, 0.3]),
    (0.01, None, 0.05, [0.0, 0.01, 0.02, 0.03, 0.04, 0.05]),
    (0.01, 0.5, 0.23, [0.0, 0.23]),
]


# Measured max |ΔU| over RECORD_CASES: 5.6e-16 (splitting4: a sphere's free turn is exact), 3.2e-13 (dop853),
# 2.1e-8 (pem-rk4, at dt = 0.02).
RECORD_TOL = {"splitting4": 5e-15, "dop853": 2e-12, "pem-rk4": 1e-7}


@pytest.mark.parametrize("method", sorted(RECORD_TOL))
@pytest.mark.parametrize("dt, interval, t_end, times", RECORD_CASES)
def test_records_fall_on_multiples_of_record_interval_and_hold_the_state_at_that_time(method, dt, interval, t_end,
                                                                                       times):
    """Record k is taken at t = k·record_interval (every record_every = interval/dt steps), plus a last
    partial record at t_end; each record holds the state at its time (the uniformly turning sphere)."""
    tr = simulate(spinning_sphere(method, dt, t_end, interval))
    np.testing.assert_allclose(tr.t, times, rtol=0, atol=1e-13)
    assert tr.steps == round(t_end / dt)
    # An off-by-one-step record would be ~dt·|ω| ≥ 2e-2 off.
    np.testing.assert_allclose(tr.orientation[:, 0], uniform_turn(np.array(times)), rtol=0, atol=RECORD_TOL[method])


def spinning_top(method, hinged, friction, t_end=2.0, dt=1e-2):
    """A symmetric body (I₃ = 2e-3 kg·m² about its body z) spinning at 5 rad/s about body z, with pivot friction."""
    axis = U0[2]
    body = Body(name="spinner", orientation=U0, angular_velocity=5.0 * axis, hinge=axis if hinged else None,
                mass_properties=MassProperties(0.1, np.zeros(3), np.diag([1e-3, 1e-3, 2e-3])))
    return Scene(bodies=[body], gravity=(0, 0, -9.81), friction=friction,
                 settings=Settings(method=method, dt=dt, t_end=t_end, record_interval=0.1))


# Measured (c = 1e-3 N·m·s, dt = 1e-2, 2 s; worst of free turn and hinge): max |Δω|/ω₀ and max |Δangle| (rad)
# of 6.32 rad turned: splitting4 4.4e-14, 8.4e-13; splitting2 6.8e-15, 6.6e-6 (friction is folded exactly into
# its kicks, the angle is 2nd order); dop853 2.7e-15, 3.6e-14; pem-rk4 1.3e-12, 1.0e-7.
FRICTION_TOL = {"splitting4": (3e-13, 5e-12), "splitting2": (5e-14, 3e-5), "dop853": (2e-14, 3e-13),
                "pem-rk4": (1e-11, 5e-7)}


@pytest.mark.parametrize("hinged", [False, True], ids=["free_turn", "hinged"])
@pytest.mark.parametrize("method", sorted(FRICTION_TOL))
def test_pivot_friction_slows_a_spin_exponentially(method, hinged):
    """Pivot friction −cω on a body spinning about a principal axis: ω(t) = ω₀ e^{−ct/I₃} about the same
    lab axis, turned angle ω₀ I₃/c (1 − e^{−ct/I₃}) (a friction that pushed would spin it up)."""
    c, I3, w0 = 1e-3, 2e-3, 5.0
    tr = simulate(spinning_top(method, hinged, c))
    decay = np.exp(-c * tr.t / I3)
    w_tol, angle_tol = FRICTION_TOL[method]
    np.testing.assert_allclose(tr.omega[:, 0], np.outer(w0 * decay, U0[2]), rtol=0, atol=w_tol * w0)
    u1 = tr.orientation[:, 0, 0]
    turned = np.unwrap(np.arctan2(u1 @ U0[1], u1 @ U0[0]))
    np.testing.assert_allclose(turned, w0 * I3 / c * (1 - decay), rtol=0, atol=angle_tol)
    np.testing.assert_allclose(tr.orientation[:, 0, 2], np.broadcast_to(U0[2], (len(tr.t), 3)), atol=1e-12)


def test_prepare_refuses_before_a_step_and_its_run_integrates_once():
    """prepare() checks all that can refuse a scene and sets the run up at its start (no step taken); execute()
    integrates it once — what simulate() returns, bit for bit — and refuses a second time."""
    from dataclasses import replace

    from pem_physics import Ensemble, Run, examples, prepare
    from pem_physics.errors import ValidationError

    scene = examples.build("three-magnet", t_end=0.2)
    run = prepare(scene)
    assert isinstance(run, Run) and run.integ.steps_done == 0
    assert run.marks[0] == 0 and run.marks[-1] == round(0.2 / scene.settings.dt)
    tr, ref = run.execute(), simulate(scene)
    for k in ("t", "orientation", "angular_momentum", "omega"):
        assert np.array_equal(getattr(tr, k), getattr(ref, k)), k
    with pytest.raises(RuntimeError, match="prepare"):
        run.execute()
    with pytest.raises(ValidationError, match="settings.t_end"):  # a run of no step
        prepare(scene, t_end=0.4 * scene.settings.dt)
    cradle = examples.build("newtons-cradle")
    b = list(cradle.bodies)
    r = b[1].contacts[0].radius
    b[2] = replace(b[2], position=(b[1].position[0] + r, *b[2].position[1:]))  # two balls one radius apart
    with pytest.raises(ValidationError, match="overlap"):
        prepare(replace(cradle, bodies=b))
    with pytest.raises(ValidationError, match="one member at a time"):
        prepare(cradle, ensemble=Ensemble())
    with pytest.raises(ValidationError, match="one member at a time"):
        prepare(examples.build("tippe-top"), ensemble=Ensemble())


@pytest.mark.parametrize("call, says", [
    (lambda sc: simulate(None), "scene: expected a pem_physics Scene, got NoneType"),
    (lambda sc: simulate("example:x"), "scene: expected a pem_physics Scene, got str; a scene file or example:NAME "
                                       "is read by pem_physics.load_scene"),
    (lambda sc: simulate({}), "scene: expected a pem_physics Scene, got dict"),
    (lambda sc: simulate(sc, ensemble="x"), "ensemble: expected a pem_physics Ensemble or None, got str"),
    (lambda sc: simulate(sc, ensemble=_ensemble(friction=[])), "ensemble: has no members (E = 0)"),
    (lambda sc: simulate(sc, ensemble=_ensemble(friction=["a"])), "ensemble.friction: expected an array of numbers"),
    # the value as typed, not numpy 2's repr ("got np.float64(-1.0)")
    (lambda sc: simulate(sc, ensemble=_ensemble(friction=[0.0, -1.0])),
     "ensemble.friction[1]: must be finite and ≥ 0, got -1.0"),
    (lambda sc: simulate(sc, ensemble=_ensemble(angular_velocity=[[[0, 0]], [[0, 0, 0]]])),
     "ensemble.angular_velocity: expected an array of numbers"),
    # a TypeError ('Dipole' object is not iterable) and an AttributeError (None has no 'method')
    (lambda sc: simulate(replace(sc, bodies=[replace(sc.bodies[0], dipoles=_dipole()), *sc.bodies[1:]])),
     "bodies[0].dipoles: expected a list of Dipole, got Dipole: put it in a list, [Dipole(…)]"),
    (lambda sc: simulate(replace(sc, bodies=[replace(sc.bodies[0], contacts=None), *sc.bodies[1:]])),
     "bodies[0].contacts: expected a list of ContactSphere, got None"),
    (lambda sc: simulate(replace(sc, walls=3)), "walls: expected a list of StaticWall, got int"),
    (lambda sc: simulate(replace(sc, settings=None)), "settings: expected a pem_physics Settings, got NoneType"),
    (lambda sc: _load(None), "path: expected the name of a scene file or example:NAME, got NoneType"),
])
def test_arguments_that_are_not_a_scene_or_an_ensemble_are_named(call, says):
    """The Python API raised AttributeError ('NoneType' object has no attribute 'settings'; 'str' … 'arrays') or
    numpy's ValueError (an empty friction list: a reduction with no identity): a ValidationError naming the
    argument."""
    from pem_physics import examples
    from pem_physics.errors import ValidationError

    with pytest.raises(ValidationError, match="^" + re.escape(says)):
        call(examples.three_magnet(t_end=0.01))


def _load(path):
    from pem_physics.io.loading import load_scene

    return load_scene(path)


def _dipole():
    from pem_physics.model.scene import Dipole

    return Dipole((0, 0, 0), (0, 0, 1))


def _ensemble(**kw):
    from pem_physics.engine.simulate import Ensemble

    return Ensemble(**kw)


def test_a_scene_file_named_by_a_path_object_loads(tmp_path):
    """load_scene(Path(...)) raised AttributeError ('PosixPath' object has no attribute 'startswith')."""
    from pathlib import Path

    from pem_physics.io.loading import load_scene

    here = Path(__file__).resolve().parents[2] / "examples" / "scenes" / "compass.toml"
    assert load_scene(here).bodies[0].name == load_scene(str(here)).bodies[0].name
