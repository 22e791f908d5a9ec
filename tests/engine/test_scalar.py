"""The plain-Python path for one body without numba (engine/backends/scalar.py) against the numpy reference, within the
round-off bound of tests/roundoff.py (measured on twin numpy runs with ulp-nudged steps)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pem_physics import examples
from pem_physics.engine.backends import compiled, scalar
from pem_physics.engine.integrators import make_integrator
from pem_physics.engine.simulate import Ensemble, simulate
from pem_physics.engine.system import compile_system

from roundoff import assert_follows, pick, twins


def run(scene, python: bool, twin: bool = False, **kw):
    """simulate() without the compiled engine, on the Python path (forced) or the numpy reference (``twin``: its
    twin runs, a list, with ulp-nudged steps; tests/roundoff.py)."""
    try:
        compiled.ENABLED = False
        scalar.FORCE, scalar.ENABLED = python, python
        if twin:
            return twins(lambda: simulate(scene, **kw))
        return simulate(scene, **kw)
    finally:
        compiled.ENABLED = scalar.ENABLED = True
        scalar.FORCE = False


CASES = {
    "three magnets, friction": (examples.three_magnet(friction=5e-3, dt=1e-3, t_end=1.0), "splitting4"),
    "field, no friction": (replace(examples.three_magnet(dt=1e-3, t_end=1.0), friction=0.0,
                                   field=(2e-4, -1e-4, 3e-4)), "splitting4"),
    "splitting2": (examples.three_magnet(friction=5e-3, dt=1e-3, t_end=1.0), "splitting2"),
    "no magnets": (examples.three_magnet(friction=5e-3, dt=1e-3, t_end=1.0), "splitting4"),
    # 50 steps: before the flip, which amplifies round-off
    "free asymmetric body": (replace(examples.build("t-handle"), settings=replace(
        examples.build("t-handle").settings, t_end=50 / 32)), "splitting4"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_python_path_matches_numpy(case):
    scene, method = CASES[case]
    if case == "no magnets":
        scene = replace(scene, bodies=scene.bodies[:1])
    kw = dict(method=method, record_interval=scene.settings.t_end / 10)
    got, ref, tw = run(scene, True, **kw), run(scene, False, **kw), run(scene, False, twin=True, **kw)
    assert got.info["engine"] == "python" and ref.info["engine"] == "numpy"
    assert got.steps == ref.steps and np.array_equal(got.t, ref.t)
    for name in ("orientation", "angular_momentum", "omega", "total_energy", "torque"):
        assert_follows(name, getattr(got, name), getattr(ref, name), pick(tw, name), ref.steps)


def test_stop_keeps_a_partial_record_like_numpy():
    scene = examples.three_magnet(friction=5e-3, dt=1e-3, t_end=1.0)
    got = run(scene, True, record_interval=0.1, stop=lambda: True)   # stops after the first call
    assert not got.complete and 0 < got.steps < 1000 and got.t[-1] == got.steps * 1e-3
    part = replace(scene, settings=replace(scene.settings, t_end=got.steps * 1e-3))
    ref, tw = run(part, False, record_interval=0.1), run(part, False, twin=True, record_interval=0.1)
    for name in ("orientation", "angular_momentum"):
        assert_follows(name, getattr(got, name)[-1], getattr(ref, name)[-1], [a[-1] for a in pick(tw, name)],
                       got.steps)


def test_when_the_python_path_runs(monkeypatch):
    scene = examples.three_magnet(friction=5e-3, dt=1e-3, t_end=0.01)
    system = compile_system(scene.checked())

    def integ(sys_, method="splitting4", E=1):
        U = np.repeat(sys_.U0[None], E, axis=0)
        return make_integrator(method, sys_, 1e-3, U, np.zeros((E,) + sys_.omega0.shape))

    scalar.FORCE = True
    try:
        assert scalar.supported(integ(system)) and scalar.supported(integ(system, "splitting2"))
        assert not scalar.supported(integ(system, "pem-rk4"))
        assert not scalar.supported(integ(system, E=2))                          # ensembles: numpy / compiled
        assert not scalar.supported(integ(Ensemble(friction=np.zeros(1)).system(system)))
        hinged = replace(scene, bodies=[replace(scene.bodies[0], hinge=(1.0, 0.0, 0.0))] + list(scene.bodies[1:]))
        for other in (hinged, replace(scene, periodic_box=(1.0, 1.0, 1.0)), examples.build("pendulum-wave"),
                      examples.build("compass-rotating")):
            assert not scalar.supported(integ(compile_system(other.checked())))
    finally:
        scalar.FORCE = False
    # without FORCE: only where numba is not installed, and never when PEM_NUMBA=0 asks for the reference
    from pem_physics import jit

    monkeypatch.setattr(jit, "installed", lambda: False)
    assert scalar.supported(integ(system))
    monkeypatch.setenv("PEM_NUMBA", "0")
    assert not scalar.supported(integ(system))
    monkeypatch.setattr(jit, "installed", lambda: True)
    monkeypatch.delenv("PEM_NUMBA")
    assert not scalar.supported(integ(system))
