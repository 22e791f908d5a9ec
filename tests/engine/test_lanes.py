"""Ensembles with members in SIMD lanes (engine/backends/lanes.py) against the numpy reference and the per-member
engine.

Runs are compared within the round-off bound of tests/roundoff.py, measured on twin numpy runs with ulp-nudged
steps."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pem_physics import examples
from pem_physics.analysis.basin import release_orientations
from pem_physics.engine.backends import compiled, lanes
from pem_physics.engine.integrators import make_integrator
from pem_physics.engine.simulate import Ensemble, SimulationError, simulate
from pem_physics.engine.system import compile_system

from budget import property_settings
from roundoff import assert_follows, pick, twins

pytestmark = pytest.mark.skipif(not lanes.available(), reason="numba is not installed")


def lanes_kernels():
    """The lanes kernels module (imports numba: only where the tests run)."""
    from pem_physics.engine.backends import lanes_kernels

    return lanes_kernels


def members(scene, n=6):
    g = np.linspace(-0.07, 0.07, n)
    X, Y = np.meshgrid(g, g)
    return release_orientations(scene, X.ravel(), Y.ravel())


def run(scene, engine, **kw):
    """simulate() with the lanes kernels ("lanes"), the per-member compiled engine ("member"), numpy, or numpy's
    twin runs ("twins": ulp-nudged steps, which measure the round-off bound; tests/roundoff.py; a list)."""
    try:
        lanes.ENABLED = engine == "lanes"
        compiled.ENABLED = engine not in ("numpy", "twins")
        if engine == "twins":
            return twins(lambda: simulate(scene, **kw))
        return simulate(scene, **kw)
    finally:
        lanes.ENABLED = compiled.ENABLED = True


def assert_close(got, ref, tw, names=("orientation", "angular_momentum", "omega", "total_energy")):
    """got follows the numpy reference ref within the round-off bound that ref's twin runs ``tw`` measure."""
    assert np.array_equal(got.t, ref.t) and all(np.array_equal(t.t, ref.t) for t in tw) and got.steps == ref.steps
    for name in names:
        assert_follows(name, getattr(got, name), getattr(ref, name), pick(tw, name), ref.steps)


# ---------------------------------------------------------------------------- sin and cos in the drifts

def _ulps(got, want):
    return abs(got - want) / math.ulp(abs(want)) if want != 0 else abs(got) / math.ulp(0.0)


@given(st.floats(-2.0 ** 20, 2.0 ** 20, allow_nan=False))
@property_settings(200)
def test_sincos_within_two_ulp_of_libm(x):
    s, c = np.empty(1), np.empty(1)
    lanes_kernels().sincos_array(np.array([x]), s, c)
    assert _ulps(s[0], math.sin(x)) <= 2 and _ulps(c[0], math.cos(x)) <= 2


def test_sincos_at_quadrant_edges_and_non_finite():
    x = np.array([0.0, -0.0, np.pi / 4, np.pi / 2, np.pi, 1.5 * np.pi, 2 * np.pi, -np.pi / 2, 1e-300, 3e5,
                  np.inf, -np.inf, np.nan])
    s, c = np.empty_like(x), np.empty_like(x)
    lanes_kernels().sincos_array(x, s, c)
    for xi, si, ci in zip(x[:-3], s, c):
        assert _ulps(si, math.sin(xi)) <= 2 and _ulps(ci, math.cos(xi)) <= 2, xi
    assert np.isnan(s[-3:]).all() and np.isnan(c[-3:]).all()  # a blow-up stays visible


# ---------------------------------------------------------------------------- the schemes against numpy

CASES = {
    # name: (scene, method)
    "splitting4 friction": (examples.three_magnet(friction=5e-3, dt=1e-3, t_end=0.5), "splitting4"),
    "splitting4 no friction, field": (replace(examples.three_magnet(dt=1e-3, t_end=0.5), friction=0.0,
                                              field=(2e-4, -1e-4, 3e-4)), "splitting4"),
    "splitting2": (examples.three_magnet(friction=5e-3, dt=1e-3, t_end=0.5), "splitting2"),
    "pem-rk4 friction": (examples.three_magnet(friction=5e-3, dt=1e-3, t_end=0.5), "pem-rk4"),
    "pem-rk4 field, no magnets": (replace(examples.three_magnet(dt=1e-3, t_end=0.5), friction=0.0,
                                          field=(2e-4, -1e-4, 3e-4)), "pem-rk4"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_lanes_match_numpy_and_the_member_engine(case):
    scene, method = CASES[case]
    if case.endswith("no magnets"):
        scene = replace(scene, bodies=scene.bodies[:1])
    ens = Ensemble(orientation=members(scene))
    kw = dict(method=method, ensemble=ens, record_interval=0.1)
    got = run(scene, "lanes", **kw)
    ref = run(scene, "numpy", **kw)
    tw = run(scene, "twins", **kw)
    assert got.info["engine"] == "numba" and ref.info["engine"] == "numpy"
    assert_close(got, ref, tw)
    assert_close(run(scene, "member", **kw), ref, tw)


def test_asymmetric_free_body_takes_every_drift_turn():
    """The T-handle (free, three distinct moments): the drift plan has three turns about principal axes."""
    scene = examples.build("t-handle")
    system = compile_system(scene.checked())
    rng = np.random.default_rng(4)
    w = system.omega0[None] * (1 + 0.05 * rng.normal(size=(40, 1, 3)))
    integ = make_integrator("splitting4", Ensemble(angular_velocity=w).system(system), scene.settings.dt,
                            np.repeat(system.U0[None], 40, axis=0), w)
    assert len(integ._plan[0]) == 3 and lanes.supported(integ)
    # 50 steps: before the flip, which amplifies round-off (numpy and the member engine differ by 1e-8 at 200)
    kw = dict(method="splitting4", ensemble=Ensemble(angular_velocity=w), t_end=50 * scene.settings.dt)
    assert_close(run(scene, "lanes", **kw), run(scene, "numpy", **kw), run(scene, "twins", **kw))


@pytest.mark.slow  # a long run: once, on numpy 2 (noxfile.py)
def test_per_member_friction_and_field_equal_single_runs():
    """A sweep's ensemble (friction and field per member) in lanes against each member run alone in numpy."""
    scene = examples.three_magnet(dt=1e-3, t_end=0.3)
    E = 20
    c = np.linspace(0.0, 2e-3, E)
    B = np.stack([np.zeros(E), np.linspace(-1e-3, 1e-3, E), np.full(E, 2e-4)], axis=1)
    for method in ("splitting4", "pem-rk4"):
        ens = run(scene, "lanes", method=method, ensemble=Ensemble(friction=c, field=B))
        for e in (0, 7, E - 1):
            one = replace(scene, friction=c[e], field=B[e])
            want, tw = run(one, "numpy", method=method), run(one, "twins", method=method)
            for name in ("orientation", "angular_momentum"):
                assert_follows(f"{method} {name} of member {e}", getattr(ens, name)[e], getattr(want, name),
                               pick(tw, name), want.steps)


def test_member_result_independent_of_lane_block_and_threads():
    import numba

    scene = examples.three_magnet(friction=5e-3, dt=1e-3, t_end=0.1)
    U = members(scene, 7)                                       # 49 members
    U = np.concatenate([U, U[:11]])                             # 60: the last block padded
    for method in ("splitting4", "pem-rk4"):
        base = run(scene, "lanes", method=method, ensemble=Ensemble(orientation=U))
        assert np.array_equal(base.orientation[49:], base.orientation[:11])  # copies in other lanes/blocks
        rolled = run(scene, "lanes", method=method, ensemble=Ensemble(orientation=np.roll(U, 5, axis=0)))
        np.testing.assert_array_equal(np.roll(rolled.orientation, -5, axis=0), base.orientation)
        old = numba.get_num_threads()
        try:
            numba.set_num_threads(1)
            one = run(scene, "lanes", method=method, ensemble=Ensemble(orientation=U))
        finally:
            numba.set_num_threads(old)
        np.testing.assert_array_equal(one.orientation, base.orientation)
        np.testing.assert_array_equal(one.angular_momentum, base.angular_momentum)


def test_blow_up_names_the_same_member_and_time_as_the_member_engine():
    scene = examples.t_handle()
    system = compile_system(scene.checked())
    w = np.repeat(system.omega0[None], 40, axis=0)
    w[17] *= 40                                                 # one member spun far too fast for PEM's RK4
    errors = []
    for engine in ("lanes", "member"):
        with pytest.raises(SimulationError) as err:
            run(scene, engine, method="pem-rk4", ensemble=Ensemble(angular_velocity=w))
        errors.append(err.value)
    assert errors[0].member == errors[1].member == 17
    assert errors[0].time == errors[1].time and str(errors[0]) == str(errors[1])


def test_what_the_lanes_do_not_take():
    scene = examples.three_magnet(friction=5e-3, dt=1e-3, t_end=0.01)
    system = compile_system(scene.checked())

    def integ(sys_, method="splitting4", E=lanes.MIN_MEMBERS):
        U = np.repeat(sys_.U0[None], E, axis=0)
        return make_integrator(method, sys_, 1e-3, U, np.zeros((E,) + sys_.omega0.shape))

    assert lanes.supported(integ(system)) and lanes.supported(integ(system, "pem-rk4"))
    assert not lanes.supported(integ(system, E=lanes.MIN_MEMBERS - 1))        # small: per-member engine
    assert not lanes.supported(integ(system, "pem-euler"))
    hinged = replace(scene, bodies=[replace(scene.bodies[0], hinge=(1.0, 0.0, 0.0))] + list(scene.bodies[1:]))
    for other in (hinged, replace(scene, periodic_box=(1.0, 1.0, 1.0)),
                  examples.build("pendulum-wave")):                        # many bodies
        assert not lanes.supported(integ(compile_system(other.checked())))


@given(seed=st.integers(0, 2**32 - 1), method=st.sampled_from(["splitting4", "splitting2", "pem-rk4"]),
       n_magnets=st.integers(0, 3), friction=st.sampled_from([0.0, 1e-3]), per_member=st.booleans(),
       E=st.integers(lanes.MIN_MEMBERS, 70))
@property_settings(12)
def test_generated_ensembles_agree_with_the_member_engine(seed, method, n_magnets, friction, per_member, E):
    """Random ensembles (size, release points and spins, magnets, friction and field, per member or not):
    the lanes and the per-member engine against numpy."""
    rng = np.random.default_rng(seed)
    scene = examples.three_magnet(friction=friction, dt=1e-3, t_end=0.2)
    scene = replace(scene, bodies=scene.bodies[:1 + n_magnets], field=tuple(rng.normal(scale=1e-4, size=3)))
    xy = rng.uniform(-0.07, 0.07, size=(E, 2))
    ens = dict(orientation=release_orientations(scene, xy[:, 0], xy[:, 1]),
               angular_velocity=rng.normal(scale=0.5, size=(E, 1, 3)))
    if per_member:
        ens.update(friction=rng.uniform(0, 2e-3, E), field=rng.normal(scale=1e-4, size=(E, 3)))
    kw = dict(method=method, ensemble=Ensemble(**ens), record_interval=0.05)
    ref, tw = run(scene, "numpy", **kw), run(scene, "twins", **kw)
    assert_close(run(scene, "lanes", **kw), ref, tw)
    assert_close(run(scene, "member", **kw), ref, tw)
