"""Containers of the hard-sphere gas (pem_physics/gas/state.py Container): a sphere (a circle in 2D), a
cylinder and extra plane walls — geometry against pem_physics/engine/contact/walls.py, placement, the compiled
engine against the numpy reference, conservation, containment, and the wall pressure against the
ideal gas and Carnahan–Starling."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pem_physics.engine.contact import walls
from pem_physics.errors import ValidationError
from pem_physics.gas import edmd, measure
from pem_physics.gas.reference import exit_time, run_reference
from pem_physics.gas.state import Container, GasState, first_overlap, gas_in_container, make_gas

needs_numba = pytest.mark.skipif(not edmd.available(), reason="numba is not installed")


def piston_state(d=3, n=60, seed=3, length=9.0):
    """A hard-wall box cut by a piston (plane x_0 = 0.45 L_0, gas on x_0 ≥ it) and, in 3D, an oblique plane."""
    box = np.full(d, length)
    planes = [[1.0] + [0.0] * (d - 1) + [0.45 * box[0]]]
    if d == 3:
        nrm = np.array([0.0, -1.0, -1.0]) / math.sqrt(2)  # cuts off the corner at large y and z
        planes.append([*nrm, float(nrm @ np.array([0.0, 7.5, 7.5]))])
    return gas_in_container(Container(planes=planes), box, n, seed=seed)


#: small systems in each new container, for the sequence comparison: name → (state, t_end)
CONTAINER_CASES = {
    "sphere-3d": lambda: (make_gas(64, 0.12, 3, container="sphere", seed=3), 4.0),
    "circle-2d": lambda: (make_gas(64, 0.15, 2, container="sphere", seed=3), 8.0),
    "cylinder": lambda: (make_gas(64, 0.12, 3, container="cylinder", seed=3, axis=1, aspect=1.5), 4.0),
    "planes-3d": lambda: (piston_state(3), 4.0),
    "planes-2d": lambda: (piston_state(2, n=25, length=12.0), 5.0),
}


def all_gaps(state, positions):
    """(R·N, W) gaps of recorded positions (R, N, d)."""
    r = np.tile(state.radii, len(positions))
    return state.container.gaps(positions.reshape(-1, state.d), r, state.box)


# --- geometry ---------------------------------------------------------------------------------------------

def test_container_from_walls_has_the_gaps_of_the_walls_module():
    rng = np.random.default_rng(1)
    box = np.array([10.0, 10.0, 12.0])
    sph = walls.Sphere([5.0, 5.0, 5.0], 4.0)
    cyl = walls.Cylinder([5.0, 5.0, 0.0], [0.0, 0.0, 1.0], 4.5)
    pl = walls.Plane([0.0, 0.0, 3.0], [0.0, 0.6, 0.8])
    x = rng.uniform(2.0, 8.0, (50, 3))
    r = 0.3
    for wall, kind in ((sph, "sphere"), (cyl, "cylinder")):
        c = Container.from_walls([wall, pl])
        assert c.kind == kind and c.n_walls(3) == 8
        g = c.gaps(x, np.full(50, r), box)
        assert np.allclose(g[:, 6], [wall.gap(p, r) for p in x], atol=1e-12)
        assert np.allclose(g[:, 7], [pl.gap(p, r) for p in x], atol=1e-12)
    assert Container.from_walls([cyl]).axis == 2
    with pytest.raises(ValueError, match="obstacle"):
        Container.from_walls([walls.Sphere([5, 5, 5], 4.0, inside=False)])
    with pytest.raises(ValueError, match="along a box axis"):
        Container.from_walls([walls.Cylinder([5, 5, 5], [1, 1, 0], 3.0)])


def test_volumes_and_areas_of_the_containers():
    box = np.full(3, 10.0)
    s = Container("sphere", [5.0, 5.0, 5.0], 5.0)
    assert s.accessible_volume(0.0, box) == pytest.approx(4 / 3 * math.pi * 125)
    assert s.accessible_volume(0.5, box) == pytest.approx(4 / 3 * math.pi * 4.5 ** 3)
    assert s.wall_areas(0.5, box)[6] == pytest.approx(4 * math.pi * 4.5 ** 2)
    c = Container("cylinder", [5.0, 5.0, 5.0], 4.0, axis=0)
    assert c.accessible_volume(0.5, box) == pytest.approx(math.pi * 3.5 ** 2 * 9.0)
    a = c.wall_areas(0.5, box)
    assert a[0] == a[1] == pytest.approx(math.pi * 3.5 ** 2) and np.isnan(a[2]) and a[6] == pytest.approx(
        2 * math.pi * 3.5 * 9.0)
    p = Container(planes=[[-1.0, 0.0, 0.0, -6.0]])  # gas on x ≤ 6
    assert p.accessible_volume(0.5, box) == pytest.approx(5.0 * 9.0 * 9.0)
    assert p.wall_areas(0.5, box)[6] == pytest.approx(81.0)
    assert math.isnan(Container(planes=[[0.6, 0.8, 0.0, 1.0]]).accessible_volume(0.5, box))


def test_make_gas_fills_a_container_to_the_packing_fraction_of_its_whole_volume():
    for kind, d in (("sphere", 3), ("sphere", 2), ("cylinder", 3)):
        s = make_gas(300, 0.2, d, container=kind, seed=2)
        assert s.container.kind == kind and not s.periodic
        assert s.packing_fraction == pytest.approx(0.2, rel=1e-12)
        assert s.accessible_volume() < s.volume
        assert np.all(all_gaps(s, s.positions[None]) >= 0)
        assert first_overlap(s.positions, s.radii) is None
        assert s.kinetic_energy() == pytest.approx(0.5 * d * 300)
    c = make_gas(200, 0.1, 3, container="cylinder", axis=0, aspect=2.0)
    assert c.box[0] == pytest.approx(4 * c.container.radius) and c.box[1] == pytest.approx(2 * c.container.radius)
    a = make_gas(200, 0.1, 3, container="sphere", seed=5)
    b = make_gas(200, 0.1, 3, container="sphere", seed=5)
    assert np.array_equal(a.positions, b.positions)


def test_unreachable_packing_fractions_and_bad_containers_are_refused():
    with pytest.raises(ValueError, match="packing_fraction = 0.3 cannot be reached in a sphere"):
        make_gas(50, 0.3, 3, container="sphere")  # the centres reach only 55 % of a small sphere
    with pytest.raises(ValueError, match="cylinder.*d = 3"):
        make_gas(50, 0.1, 2, container="cylinder")
    with pytest.raises(ValueError, match="lattice"):
        make_gas(50, 0.1, 3, container="sphere", start="lattice")
    s = make_gas(30, 0.1, 3, container="sphere", seed=1)
    with pytest.raises(ValueError, match="needs periodic=False"):
        GasState(s.positions, s.velocities, s.radii, s.masses, s.box, True, container=s.container)
    x = s.positions.copy()
    x[0] = s.container.centre + [s.container.radius - 0.4, 0.0, 0.0]  # radius 0.5: sticks out by 0.1
    with pytest.raises(ValueError, match="particle 0 sticks out of the sphere container"):
        GasState(x, s.velocities, s.radii, s.masses, s.box, False, container=s.container)
    with pytest.raises(ValueError, match="does not fit in the box"):
        GasState(s.positions, s.velocities, s.radii, s.masses, s.box, False,
                 container=Container("sphere", s.container.centre, 0.6 * s.box[0]))
    with pytest.raises(ValidationError, match="gravity") as err:
        edmd.run(s, 1.0, gravity=[0, 0, -1.0], engine="numpy")
    assert err.value.path == "gravity"


# --- events -----------------------------------------------------------------------------------------------

def test_exit_time_is_the_far_root_from_inside_and_zero_just_outside_moving_out():
    y = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0 + 1e-15, 0.0, 0.0], [1.0, 1.0, 0.0]])
    u = np.array([[2.0, 0.0, 0.0], [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    t = exit_time(y, u, np.full(5, 2.0))
    assert t[0] == pytest.approx(1.0) and t[1] == pytest.approx(1.0) and t[2] == pytest.approx(3.0)
    assert t[3] == 0.0 and t[4] == math.inf


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_one_ball_in_a_sphere_keeps_its_angular_momentum_and_bounces_on_its_chord(engine):
    c = np.array([5.0, 5.0, 5.0])
    x0 = c + [0.0, 1.0, 0.0]
    v0 = np.array([1.0, 0.0, 0.3])
    s = GasState([x0], [v0], 0.5, 1.0, [10.0] * 3, False, container=Container("sphere", c, 5.0))
    run = edmd.run(s, 200.0, log=True, engine=engine, record_interval=1.0)
    rho = 4.5
    chord = 2 * math.sqrt(rho ** 2 - float(np.sum(np.cross(x0 - c, v0) ** 2)) / float(v0 @ v0)) / np.linalg.norm(v0)
    # the first hit ends the half chord from x0; every later flight is a full chord
    first = (-(x0 - c) @ v0 + math.sqrt(((x0 - c) @ v0) ** 2 - (v0 @ v0) * ((x0 - c) @ (x0 - c) - rho ** 2))) / (
        v0 @ v0)
    assert np.allclose(np.diff(run.log.time), chord, rtol=1e-9)
    assert run.log.time[0] == pytest.approx(first, rel=1e-12) and np.all(run.log.j == -7)
    L0 = np.cross(x0 - c, v0)
    rec = run.records
    L = np.cross(rec.positions[:, 0] - c, rec.velocities[:, 0])
    assert np.max(np.abs(L - L0)) < 1e-11
    assert np.max(np.linalg.norm(rec.positions[:, 0] - c, axis=1)) <= rho * (1 + 1e-12)
    assert run.wall_impulse[6] == pytest.approx(len(run.log) * 2 * math.sqrt(v0 @ v0 - (L0 @ L0) / rho ** 2),
                                                rel=1e-9)


def test_a_ball_under_gravity_bounces_on_a_tilted_plane():
    nrm = np.array([0.0, 0.6, 0.8])  # a ramp: normal into the gas, up and towards +y
    pl = Container(planes=[[*nrm, float(nrm @ [0.0, 0.0, 2.0])]])
    s = GasState([[3.0, 1.0, 6.0]], [[0.0, 0.0, 0.0]], 0.5, 1.0, [10.0] * 3, False, container=pl)
    ref = run_reference(s, 3.5, gravity=[0, 0, -1.0])  # falls 4.125 to the ramp: t = √8.25
    assert ref.n_wall_events >= 1 and ref.log.j[0] == -7
    x_hit = s.positions[0] + 0.5 * np.array([0, 0, -1.0]) * ref.log.time[0] ** 2
    assert x_hit @ nrm - pl.planes[0, 3] == pytest.approx(0.5, abs=1e-12)  # the surface touches the plane
    assert ref.state.kinetic_energy() + ref.state.potential_energy([0, 0, -1.0]) == pytest.approx(
        s.potential_energy([0, 0, -1.0]), abs=1e-12)


@needs_numba
@pytest.mark.parametrize("name", list(CONTAINER_CASES))
def test_compiled_and_reference_have_the_same_sequence_in_each_container(name):
    s, t_end = CONTAINER_CASES[name]()
    ref = run_reference(s, t_end)
    cmp = edmd.run(s, t_end, log=True, engine="numba")
    assert ref.n_collisions >= 100 and ref.n_wall_events >= 20, name
    assert len(cmp.log) == len(ref.log)
    assert np.array_equal(cmp.log.i, ref.log.i) and np.array_equal(cmp.log.j, ref.log.j)
    # the reference's vectorised pair search rounds in the last place from the first events on, and the
    # gas's chaos (and each curved reflection) amplifies it: ~1e-9 after a few hundred events
    assert np.max(np.abs(cmp.log.time - ref.log.time)) < 1e-7
    assert np.allclose(cmp.wall_impulse, ref.wall_impulse, rtol=1e-7, atol=1e-10)
    assert np.allclose(cmp.state.positions, ref.state.positions, atol=1e-6)
    assert np.any(ref.log.j <= -1 - 2 * s.d)  # the new walls were hit


@needs_numba
def test_plane_with_gravity_compiled_matches_reference():
    s = piston_state(3, n=50, seed=4)
    g = [0.0, -0.3, -1.0]
    ref = run_reference(s, 3.0, gravity=g)
    cmp = edmd.run(s, 3.0, log=True, engine="numba", gravity=g)
    assert len(cmp.log) == len(ref.log) and np.array_equal(cmp.log.j, ref.log.j)
    assert np.max(np.abs(cmp.log.time - ref.log.time)) < 1e-7


# --- conservation and containment -------------------------------------------------------------------------

@needs_numba
@pytest.mark.parametrize("kind", ["sphere", "cylinder", "circle", "planes"])
def test_energy_is_conserved_and_no_particle_ever_leaves_the_container(kind):
    if kind == "planes":
        s = piston_state(3, n=300, seed=6, length=14.0)
    else:
        s = make_gas(400, 0.2, 2 if kind == "circle" else 3, container="cylinder" if kind == "cylinder" else "sphere",
                     seed=6)
    t_end = 60.0 if kind == "circle" else 20.0
    run = edmd.run(s, t_end, record_interval=t_end / 400)
    assert run.n_collisions > 10_000 and run.n_wall_events > 1000
    assert np.all(np.abs(run.records.kinetic - s.kinetic_energy()) <= 1e-12 * s.kinetic_energy())
    gaps = all_gaps(s, run.records.positions)
    assert gaps.min() >= -1e-10  # every record of every particle inside
    assert first_overlap(run.state.positions, run.state.radii, tol=1e-9) is None


# --- wall pressure ----------------------------------------------------------------------------------------

@needs_numba
@pytest.mark.parametrize("kind,eta", [("sphere", 0.002), ("sphere", 0.02), ("cylinder", 0.02)])
def test_dilute_gas_presses_on_the_walls_as_the_ideal_gas_in_the_volume_the_centres_reach(kind, eta):
    """P = N k T / V_acc (1 + B₂ ρ): the second virial term 4 η_acc is ~0.8 % at η = 0.002 (within the
    2.5 % tolerance, so the bare ideal gas law is checked) and ~8 % at η = 0.02 (so it is included there).
    The statistical error of P is ~0.5 % (sphere) and ~2 % (cylinder caps), from 20 time blocks."""
    s = make_gas(1000, eta, 3, container=kind, seed=4)
    run = edmd.run(s, 400.0 if eta < 0.01 else 200.0, blocks=20)
    w = measure.wall_pressure(run, skip_blocks=1)
    eta_acc = 1000 * math.pi / 6 / s.accessible_volume()
    expect = w.ideal * (1 + 4 * eta_acc)
    curved = 6
    assert w.names[curved] == kind
    assert w.P[curved] == pytest.approx(expect, rel=0.025)
    assert abs(w.P[curved] - expect) < 4 * w.P_err[curved] + 0.005 * expect
    if eta < 0.01:
        assert w.P[curved] == pytest.approx(w.ideal, rel=0.025)
    if kind == "cylinder":  # the caps (box faces on the axis) too, each ~2 % statistical error
        assert w.P[4] == pytest.approx(expect, rel=0.08) and w.P[5] == pytest.approx(expect, rel=0.08)
        assert np.all(np.isnan(w.P[:4]))


@needs_numba
def test_dilute_gas_in_a_circle_presses_as_the_2d_ideal_gas():
    s = make_gas(1000, 0.02, 2, container="sphere", seed=4)
    run = edmd.run(s, 400.0, blocks=20)
    w = measure.wall_pressure(run, skip_blocks=1)
    eta_acc = 1000 * math.pi / 4 / s.accessible_volume()
    assert w.P[4] == pytest.approx(w.ideal * (1 + 2 * eta_acc), rel=0.04)  # B₂ρ = 2η in 2D; error ~2 %


@pytest.mark.slow
@needs_numba
def test_dense_gas_in_a_large_sphere_presses_near_carnahan_starling():
    """η = 0.25 (on the whole sphere) in a sphere of R_w ≈ 15.9 σ (N = 8000, ~20 s with its placement).

    The wall pressure is k T times the contact density, which at a concave wall exceeds the flat wall's
    (the bulk pressure) by O(σ/R_w): measured +6 % at R_w = 10 σ and +3.2 % at 15.9 σ, falling as 1/R_w.
    And the bulk is denser than N/V (the layer at the wall is thinner than σ/2 of empty space allows for):
    η_bulk ≈ 0.26, measured in the central ball r < R_w/2. So P is compared with Carnahan–Starling at the
    measured η_bulk, within 5 % (the curvature term plus ~1 % for η_bulk's sampling)."""
    s = make_gas(8000, 0.25, 3, container="sphere", seed=4)
    run = edmd.run(s, 30.0, blocks=15, record_interval=0.5)
    w = measure.wall_pressure(run, skip_blocks=3)
    c, R = s.container.centre, s.container.radius
    r = np.linalg.norm(run.records.positions[10:] - c, axis=2)
    eta_bulk = np.sum(r < R / 2) / len(r) / (4 / 3 * math.pi * (R / 2) ** 3) * math.pi / 6
    assert 0.25 < eta_bulk < 0.27
    p_cs = eta_bulk / (math.pi / 6) * measure.carnahan_starling(eta_bulk) * w.T
    assert w.P[6] == pytest.approx(p_cs, rel=0.05)
    assert w.P[6] > p_cs  # the curvature term has this sign


# --- command line and scene file --------------------------------------------------------------------------

@needs_numba
def test_gas_command_runs_a_sphere_container_reports_it_and_continues_from_its_output(tmp_path):
    from pem_physics import cli
    from pem_physics.analysis import gas_command

    out = tmp_path / "a"
    assert cli.main(["gas", "--box", "sphere", "--n", "300", "--packing-fraction", "0.1", "--t-end", "3",
                     "--seed", "2", "-o", str(out), "-q"]) == 0
    import json
    summary = json.loads((out / "summary.json").read_text())
    assert summary["box"] == "sphere" and summary["container"]["kind"] == "sphere"
    assert summary["packing_fraction"] == pytest.approx(0.1)
    R = summary["container"]["radius"]
    assert summary["accessible_volume"] == pytest.approx(4 / 3 * math.pi * (R - 0.5) ** 3)
    assert set(summary["wall_pressure"]) == {"sphere"} and summary["wall_pressure"]["sphere"]["P"] > 0
    with np.load(out / "gas.npz") as g:
        assert str(g["container_kind"]) == "sphere" and float(g["container_radius"]) == pytest.approx(R)
        x = g["positions"]
        assert np.all(np.linalg.norm(x - g["container_centre"], axis=-1) <= R - 0.5 + 1e-9)
    c = gas_command.check_config({"state": str(out / "gas.npz"), "t_end": 1.0})
    assert c["box"] == "sphere"
    st = gas_command.initial_state(c)
    assert st.container.kind == "sphere" and st.container.radius == pytest.approx(R)
    out2 = tmp_path / "b"
    assert cli.main(["gas", "--state", str(out / "gas.npz"), "--t-end", "1", "-o", str(out2), "-q"]) == 0
    assert json.loads((out2 / "summary.json").read_text())["container"]["kind"] == "sphere"


def test_gas_scene_container_keys_are_checked_by_name():
    from pem_physics.analysis import gas_command

    c = gas_command.check_config({"box": "cylinder", "cylinder_axis": 0, "cylinder_aspect": 2.0, "n": 200,
                                  "packing_fraction": 0.1})
    s = gas_command.initial_state(c)
    assert s.container.kind == "cylinder" and s.container.axis == 0
    assert s.box[0] == pytest.approx(4 * s.container.radius)
    bad = [({"box": "cube"}, "gas.box"), ({"box": "cylinder", "dimension": 2}, "gas.box"),
           ({"box": "sphere", "gravity": 1.0}, "gas.gravity"), ({"box": "sphere", "method": "timestep"}, "gas.method"),
           ({"cylinder_axis": 5}, "gas.cylinder_axis"), ({"cylinder_aspect": 0}, "gas.cylinder_aspect")]
    for cfg, path in bad:
        with pytest.raises(ValidationError) as err:
            gas_command.check_config(cfg)
        assert str(err.value).startswith(path), (cfg, str(err.value))
    with pytest.raises(ValidationError, match="gas.packing_fraction.*cannot be reached"):
        gas_command.initial_state(gas_command.check_config({"box": "sphere", "n": 40, "packing_fraction": 0.3}))
