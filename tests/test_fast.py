"""The optional numba kernel against the numpy reference path (same scheme, same numbers)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pem_physics import examples, fast
from pem_physics.basin import release_orientations
from pem_physics.simulate import Ensemble, simulate
from pem_physics.system import compile_system

pytestmark = pytest.mark.skipif(not fast.available(), reason="numba is not installed")


def members(scene, n=8):
    g = np.linspace(-0.07, 0.07, n)
    X, Y = np.meshgrid(g, g)
    return release_orientations(scene, X.ravel(), Y.ravel())


def both(scene, U, **kw):
    try:
        fast.ENABLED = False
        ref = simulate(scene, method="pem-rk4", ensemble=Ensemble(orientation=U), **kw)
    finally:
        fast.ENABLED = True
    return ref, simulate(scene, method="pem-rk4", ensemble=Ensemble(orientation=U), **kw)


@pytest.mark.parametrize("variant", ["friction", "field", "no-magnets"])
def test_kernel_matches_numpy_pem_rk4(variant):
    scene = examples.three_magnet(friction=5e-3, dt=1e-3, t_end=0.4)
    if variant == "field":
        scene = replace(scene, friction=0.0, field=(2e-4, -1e-4, 3e-4))
    if variant == "no-magnets":
        scene = replace(scene, bodies=scene.bodies[:1])
    U = members(scene)
    assert len(U) >= fast.MIN_MEMBERS and fast.pem_rk4_supported(compile_system(scene.checked()))
    ref, got = both(scene, U, record_interval=0.1)
    for name in ("orientation", "angular_momentum", "omega"):
        a, b = getattr(ref, name), getattr(got, name)
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * np.abs(a).max(), err_msg=name)


def test_unsupported_systems_use_the_numpy_path():
    scene = examples.three_magnet(friction=5e-3, dt=1e-3, t_end=0.01)
    hinged = replace(scene, bodies=[replace(scene.bodies[0], hinge=(1.0, 0.0, 0.0))] + list(scene.bodies[1:]))
    periodic = replace(scene, periodic_box=(1.0, 1.0, 1.0))
    for sc in (hinged, periodic):
        assert not fast.pem_rk4_supported(compile_system(sc.checked()))
        ref, got = both(sc, members(sc))
        np.testing.assert_array_equal(got.orientation, ref.orientation)
