"""Start states of the hard-sphere gas (pem_physics/gas/state.py): constructors and refusals by name."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pem_physics.gas.state import (
    GasState,
    first_overlap,
    first_overlap_all_pairs,
    make_gas,
    maxwell_boltzmann_velocities,
)


@pytest.mark.parametrize("d,start,lattice,eta", [(3, "random", None, 0.25), (3, "lattice", "fcc", 0.5),
                                                  (2, "random", None, 0.3), (2, "lattice", "triangular", 0.7),
                                                  (2, "lattice", "square", 0.6)])
@pytest.mark.parametrize("periodic", [True, False])
def test_start_state_has_the_packing_fraction_temperature_and_no_overlap(d, start, lattice, eta, periodic):
    n = 108 if d == 3 else 100
    if not periodic:
        eta *= 0.5 if start == "random" else 0.8  # the centres of a hard-wall box reach a smaller volume
    s = make_gas(n, eta, d, start=start, lattice=lattice, seed=4, temperature=1.7, periodic=periodic)
    assert s.positions.shape == (n, d) and s.velocities.shape == (n, d)
    assert s.packing_fraction == pytest.approx(eta, rel=1e-12)
    assert first_overlap(s.positions, s.radii, s.box if periodic else None) is None
    assert np.sum(s.masses * np.sum(s.velocities ** 2, 1)) / (d * n) == pytest.approx(1.7, rel=1e-13)
    assert np.allclose(s.momentum(), 0.0, atol=1e-12)
    if not periodic:
        assert np.all(s.positions >= s.radii[:, None] * (1 - 1e-12))
        assert np.all(s.positions <= s.box - s.radii[:, None] * (1 - 1e-12))


def test_start_states_are_deterministic_from_the_seed():
    a, b, c = make_gas(50, 0.2, seed=7), make_gas(50, 0.2, seed=7), make_gas(50, 0.2, seed=8)
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)
    assert not np.array_equal(a.positions, c.positions)


def test_full_fcc_lattice_has_twelve_neighbours_at_close_packing():
    s = make_gas(256, math.pi / (3 * math.sqrt(2)), 3, start="lattice")
    dr = s.positions[:, None] - s.positions[None]
    dr -= s.box * np.round(dr / s.box)
    dist = np.linalg.norm(dr, axis=-1) + np.eye(256) * 9
    assert np.allclose(np.sum(dist < 1 + 1e-9, axis=1), 12)
    assert dist.min() == pytest.approx(1.0, rel=1e-12)


def test_maxwell_boltzmann_velocities_with_unequal_masses():
    m = np.linspace(0.5, 3, 400)
    v = maxwell_boltzmann_velocities(m, 2.0, 3, np.random.default_rng(0))
    assert np.allclose((m[:, None] * v).sum(0), 0, atol=1e-12)
    assert np.sum(m[:, None] * v * v) / (3 * 400) == pytest.approx(2.0, rel=1e-13)


def state_kw(**over):
    kw = dict(positions=[[1.0, 1.0, 1.0], [3.0, 1.0, 1.0]], velocities=np.zeros((2, 3)), radii=0.5, masses=1.0,
              box=[4.0, 4.0, 4.0], periodic=True)
    kw.update(over)
    return kw


@pytest.mark.parametrize("over,words", [
    (dict(positions=[[1.0, 1.0, 1.0], [1.5, 1.0, 1.0]]), ["particles 0 and 1 overlap", "t=0"]),
    (dict(radii=[0.5, -0.1]), ["radii[1]", "> 0"]),
    (dict(radii=[0.5, 0.0]), ["radii[1]"]),
    (dict(masses=[1.0, 0.0]), ["masses[1]"]),
    (dict(box=[4.0, -1.0, 4.0]), ["box[1]"]),
    (dict(box=[4.0, 4.0, 1.5]), ["box[2]", "longer than twice the largest diameter"]),
    (dict(box=[4.0, 4.0]), ["positions", "(N, 2)"]),
    (dict(box=[4.0] * 4), ["box", "2 or 3"]),
    (dict(velocities=np.zeros((3, 3))), ["velocities", "shape"]),
    (dict(velocities=[[0, 0, np.nan], [0, 0, 0]]), ["velocities[0, 2]", "not finite"]),
    (dict(positions=[[1.0, 1.0, 1.0], [3.8, 1.0, 1.0]], periodic=False), ["particle 1", "axis 0", "hard-wall"]),
])
def test_bad_state_is_refused_by_name(over, words):
    with pytest.raises(ValueError) as exc:
        GasState(**state_kw(**over))
    for w in words:
        assert w in str(exc.value)


def test_periodic_overlap_is_found_through_the_boundary():
    with pytest.raises(ValueError, match="particles 0 and 1 overlap"):
        GasState(**state_kw(positions=[[0.2, 1.0, 1.0], [3.9, 1.0, 1.0]]))


@pytest.mark.parametrize("args,kw,words", [
    ((10, 0.0), {}, ["packing_fraction = 0.0", "out of range"]),
    ((10, 0.45), dict(start="random"), ["packing_fraction = 0.45", "start='random'"]),
    ((10, 0.8), dict(start="lattice"), ["packing_fraction = 0.8", "lattice='fcc'"]),
    ((10, 0.2, 4), {}, ["d = 4"]),
    ((0, 0.2), {}, ["n = 0"]),
    ((10, 0.2), dict(radius=-1.0), ["radius = -1.0"]),
    ((10, 0.2), dict(mass=0.0), ["mass = 0.0"]),
    ((10, 0.2), dict(temperature=-1.0), ["temperature = -1.0"]),
    ((10, 0.2), dict(start="grid"), ["start = 'grid'"]),
    ((10, 0.2, 3), dict(lattice="square"), ["lattice = 'square'", "d = 3"]),
])
def test_bad_start_arguments_are_refused_by_name(args, kw, words):
    with pytest.raises(ValueError) as exc:
        make_gas(*args, **kw)
    for w in words:
        assert w in str(exc.value)


def test_random_insertion_that_jams_says_so():
    with pytest.raises(ValueError, match="no room for particle .* start='lattice'"):
        make_gas(64, 0.3, 3, periodic=False)  # the centres of a small hard-wall box reach ~half the volume


@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("d", [2, 3])
def test_the_cell_search_finds_the_first_overlap_of_all_pairs(d, periodic):
    """Oracle: every pair tested (first_overlap_all_pairs). Random clouds dense enough to overlap somewhere and
    sparse ones that may not, mixed radii, points outside the box (wrapped when periodic), N past the size from
    which cells are used."""
    rng = np.random.default_rng(10 * d + periodic)
    found = 0
    for _ in range(40):
        n = int(rng.integers(600, 2500))
        box = rng.uniform(8.0, 30.0, d)
        x = rng.uniform(-0.2, 1.2, (n, d)) * box
        r = rng.uniform(0.02, 0.2, n) * rng.choice([0.05 if d == 2 else 0.2, 1.0])
        b = box if periodic else None
        ref = first_overlap_all_pairs(x - box * np.floor(x / box) if periodic else x, r, b)
        got = first_overlap(x, r, b)
        assert (got is None) == (ref is None)
        if ref is not None:
            found += 1
            assert got[:2] == ref[:2]
            assert got[2] == pytest.approx(ref[2], rel=1e-12, abs=1e-12)
    assert 5 < found < 40   # both outcomes were tried


def test_a_planted_overlap_is_the_first_pair_named():
    s = make_gas(4000, 0.25, 3, start="lattice", seed=3)
    assert first_overlap(s.positions, s.radii, s.box) is None
    x = s.positions.copy()
    # two overlaps across the periodic boundary: the pair with the smaller first index is named
    x[2500] = x[3999] + [s.box[0] - 0.5 * (s.radii[2500] + s.radii[3999]), 0, 0]
    x[1200] = x[700] + [0.0, 0.0, 0.3]
    i, j, dist = first_overlap(x, s.radii, s.box)
    assert (i, j) == (700, 1200) and dist == pytest.approx(0.3, rel=1e-12)
    with pytest.raises(ValueError, match="700"):
        GasState(x, s.velocities, s.radii, s.masses, s.box)
