"""Torques and energies: the classic dipole configurations and −dU/dψ by finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pem_physics.engine.system import compile_system
from pem_physics.engine.torques import dipole_pair_terms, evaluate
from pem_physics.model import MU0, Body, Dipole, RotatingField, Scene, Settings
from pem_physics.model.inertia import MassProperties
from pem_physics.model.rotations import axis_angle_matrix, orthonormalize

from budget import property_settings

P, R = 0.4, 0.03  # theory §3 reference values


def pair_energy_force(pa, pb, d):
    B, F, U = dipole_pair_terms(np.array([[d]]), np.array([[pa]]), np.zeros((1, 1, 3)), np.array([[pb]]),
                                MU0 / (4 * np.pi), energy_weights=np.ones(1))
    return U[0, 0], F[0, 0]


@pytest.mark.parametrize("pa,pb,d,U_ref", [
    ((P, 0, 0), (P, 0, 0), (R, 0, 0), -1.1852e-3),   # head to tail
    ((P, 0, 0), (-P, 0, 0), (0, R, 0), -5.926e-4),   # side by side, antiparallel
    ((P, 0, 0), (P, 0, 0), (0, R, 0), +5.926e-4),    # side by side, parallel
    ((P, 0, 0), (-P, 0, 0), (R, 0, 0), +1.1852e-3),  # head to head
])
def test_classic_configurations(pa, pb, d, U_ref):
    U, F = pair_energy_force(np.array(pa, float), np.array(pb, float), np.array(d, float))
    assert U == pytest.approx(U_ref, rel=1e-4)
    # the force is −∇U, by central differences in the separation
    h = 1e-7
    for i in range(3):
        e = np.eye(3)[i] * h
        Up, _ = pair_energy_force(np.array(pa, float), np.array(pb, float), np.array(d, float) + e)
        Um, _ = pair_energy_force(np.array(pa, float), np.array(pb, float), np.array(d, float) - e)
        assert F[i] == pytest.approx(-(Up - Um) / (2 * h), rel=1e-6, abs=1e-9)


def test_head_to_tail_attraction_is_0_1185_newton():
    _, F = pair_energy_force(np.array([P, 0, 0]), np.array([P, 0, 0]), np.array([R, 0, 0]))
    assert F[0] == pytest.approx(-0.1185, rel=1e-3)  # pulled back towards the source


def random_rotation(v):
    v = np.asarray(v, float)
    n = np.linalg.norm(v)
    return np.eye(3) if n == 0 else axis_angle_matrix(v / n, n)


vec = st.lists(st.floats(-1, 1), min_size=3, max_size=3).map(np.array)


@st.composite
def scenes(draw):
    n_moving = draw(st.integers(1, 3))
    bodies = []
    for i in range(n_moving):
        nd = draw(st.integers(0, 3))
        pivot = draw(vec) * 0.2 + np.array([0.25 * i, 0, 0])
        bodies.append(Body(
            name=f"m{i}", orientation=random_rotation(draw(vec) * 3).T, position=pivot,
            mass_properties=MassProperties(0.1 + draw(st.floats(0, 1)), draw(vec) * 0.05, np.eye(3) * 1e-4),
            dipoles=[Dipole(draw(vec) * 0.05, draw(vec)) for _ in range(nd)]))
    for j in range(draw(st.integers(0, 2))):
        bodies.append(Body(name=f"f{j}", role="fixed", position=draw(vec) * 0.3 + np.array([0, 0.3, 0]),
                           orientation=random_rotation(draw(vec) * 3).T,
                           dipoles=[Dipole(draw(vec) * 0.02, draw(vec))]))
    periodic = draw(st.booleans())
    return Scene(bodies=bodies, gravity=draw(vec) * 10, field=draw(vec) * 0.01,
                 rotating_field=RotatingField(draw(vec) * 0.01, draw(vec) * 0.01, 3.0),
                 periodic_box=(1.5, 1.7, 1.9) if periodic else None, settings=Settings())


def potential(system, U, t):
    res = evaluate(system, system.kin_body, U, t, energies=True)
    return res.gravity_energy.sum() + res.field_energy.sum() + res.dipole_energy.sum()


@property_settings(60)
@given(scenes(), st.floats(0, 2))
def test_torque_is_minus_gradient_of_energy(scene, t):
    """T·δψ = −δU for a small rotation δψ of one body about its pivot (central differences)."""
    system = compile_system(scene.checked())
    U = system.U0[None].copy()
    res = evaluate(system, system.kin_body, U, t, energies=True)
    T = res.torque[0]
    eps = 1e-6
    energy = np.abs(res.gravity_energy).sum() + np.abs(res.field_energy).sum() + np.abs(res.dipole_energy).sum()
    # Central differences of U carry round-off ~1e-16·|U|/eps: allow 1e-8·|U| (a torque that is zero
    # by symmetry, e.g. gravity along R_G, is then compared with that noise, not with 1e-12·0).
    scale = max(1e-12, np.abs(T).max())
    for b in range(system.n_bodies):
        for k in range(3):
            Rp = axis_angle_matrix(np.eye(3)[k], eps)
            Up, Um = U.copy(), U.copy()
            Up[0, b] = U[0, b] @ Rp.T
            Um[0, b] = U[0, b] @ Rp
            dU = (potential(system, Up, t) - potential(system, Um, t)) / (2 * eps)
            assert T[b, k] == pytest.approx(-dU, rel=1e-5, abs=1e-6 * scale + 1e-8 * energy)


def test_fixed_bodies_feel_no_torque_and_same_body_dipoles_do_not_interact():
    body = Body(name="m", mass_properties=MassProperties(1.0, np.zeros(3), np.eye(3)),
                dipoles=[Dipole((0.01, 0, 0), (1, 0, 0)), Dipole((-0.01, 0, 0), (0, 1, 0))])
    system = compile_system(Scene(bodies=[body], gravity=(0, 0, 0)).checked())
    res = evaluate(system, system.kin_body, system.U0[None], 0.0, energies=True)
    assert np.all(res.torque == 0) and res.dipole_energy[0] == 0


def test_periodic_minimum_image_uses_nearest_copy():
    """A dipole 0.9 box lengths away acts like one at 0.1 box lengths on the other side."""
    def mk(x):
        return Body(name=f"b{x}", role="fixed", position=(x, 0, 0), dipoles=[Dipole((0, 0, 0), (0, 0, 1))])
    m = Body(name="m", mass_properties=MassProperties(1.0, np.zeros(3), np.eye(3)),
             dipoles=[Dipole((0, 0, 0), (1, 0, 0))])
    near = compile_system(Scene(bodies=[m, mk(-0.1)], gravity=(0, 0, 0)).checked())
    far = compile_system(Scene(bodies=[m, mk(0.9)], gravity=(0, 0, 0), periodic_box=(1, 1, 1)).checked())
    Tn = evaluate(near, near.kin_body, near.U0[None], 0.0).torque
    Tf = evaluate(far, far.kin_body, far.U0[None], 0.0).torque
    np.testing.assert_allclose(Tf, Tn, rtol=1e-12)
    assert np.abs(Tn).max() > 0


def test_orthonormalize_is_a_rotation():
    rng = np.random.default_rng(1)
    M = rng.normal(size=(10, 3, 3))
    R = orthonormalize(M)
    np.testing.assert_allclose(R @ np.swapaxes(R, -1, -2), np.broadcast_to(np.eye(3), R.shape), atol=1e-14)
    assert np.all(np.linalg.det(R) > 0)


def test_pem_places_dipoles_by_one_frame_and_turns_them_in_the_field_by_another():
    """U_dipoles (PEM's cached, uncorrected frame) places the dipoles for the dipole–dipole terms only;
    the external field turns the body's dipole by its frame U: τ = (Uᵀm) × B, by hand."""
    m = np.array([0.3, 0.0, 0.1])
    B = np.array([0.0, 2e-3, 1e-3])
    body = Body(name="b", mass_properties=MassProperties(1.0, np.zeros(3), np.eye(3)), dipoles=(Dipole((0, 0, 0), m),))
    sys_ = compile_system(Scene(bodies=[body], gravity=(0, 0, 0), field=B, settings=Settings()).checked())
    U = axis_angle_matrix(np.array([0.0, 0.0, 1.0]), 0.4).T[None, None]
    Ud = axis_angle_matrix(np.array([1.0, 0.0, 0.0]), 0.2).T[None, None]  # very different, to tell them apart
    T = evaluate(sys_, sys_.kin_body, U, 0.0, U_dipoles=Ud).torque[0, 0]
    np.testing.assert_allclose(T, np.cross(U[0, 0].T @ m, B), rtol=1e-14)
    # with a second (fixed) dipole the pair term uses Ud: the total minus the field part is the Ud-placed pair
    src = Body(name="s", role="fixed", position=(0.05, 0.0, 0.0), dipoles=(Dipole((0, 0, 0), (0, 0, 0.2)),))
    sys2 = compile_system(Scene(bodies=[body, src], gravity=(0, 0, 0), field=B, settings=Settings()).checked())
    T2 = evaluate(sys2, sys2.kin_body, U, 0.0, U_dipoles=Ud).torque[0, 0]
    pair_only = evaluate(sys2, sys2.kin_body, Ud, 0.0).torque[0, 0] - np.cross(Ud[0, 0].T @ m, B)
    np.testing.assert_allclose(T2, pair_only + np.cross(U[0, 0].T @ m, B), rtol=1e-12, atol=1e-18)
