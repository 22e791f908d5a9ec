"""The near pairs (broad_kernels._overlap_near, ContactArrays.broad) and the Brent trials of independent bodies
(impact_kernels._idle_but) — both shortcuts that must change no bit of a run.

Oracles:
- the same kernels checking every pair after every step (compiled.BROAD_PAIRS above the scene's pairs) and
  stepping every body in every trial (``coupled`` forced on): records and events bit for bit the same, on scenes
  of every kind of check — a gas of marbles in a box (impacts on each other and on the walls, grazes), marbles
  settling under gravity on a floor with friction (resting contacts held, lifting off, standstills), pendulums
  colliding (merged spans of free flight and their horizons), a grazing pass; and in the bench's box of 100
  marbles the near pairs took a small part of the gaps of every pair at every check (ContactArrays.checks);
- the premise that a pair's gap moves no faster than its spheres, for every wall kind and for sphere pairs: random
  centres and displacements, against the numpy contact model's own gaps (walls.py);
- the bound that keeps far pairs out of the grazing filter (broad_kernels._far_ok): random pairs that it admits, put
  through the numpy driver's filter (contacts._dips' cheap bound), are never flagged — and pairs just inside the
  bound's premises at its edge show it is not vacuous.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_compiled_impacts import count_numpy_steps
from test_merged_flight import captured

from pem_physics import examples, simulate
from pem_physics.engine.backends import compiled
from pem_physics.engine.contact import walls

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_contacts import marble_box  # noqa: E402

pytestmark = pytest.mark.skipif(not compiled.available(), reason="numba is not installed")


def kernels():
    from pem_physics.engine import broad_kernels as k

    return k


def assert_identical(a, b):
    """Every array of two trajectories and every event field, bit for bit."""
    assert a.steps == b.steps and a.info["engine"] == b.info["engine"] == "numba"
    names = [k for k, v in vars(a).items() if isinstance(v, np.ndarray)]
    assert "center_of_mass" in names and "impact_loss" in names
    for k in names:
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)
    assert len(a.events) == len(b.events)
    for k in ("t", "body1", "body2", "kind"):
        assert getattr(a.events, k) == getattr(b.events, k), k
    for k in ("impulse", "point", "normal", "orientation", "position"):
        np.testing.assert_array_equal(np.array(getattr(a.events, k)), np.array(getattr(b.events, k)), err_msg=k)
    assert a.events.energy_loss == b.events.energy_loss


def settling_marbles(t_end=0.6):
    """Twelve marbles dropped in a box onto its floor under gravity, e = 0.3, μ = 0.2: impacts with friction go to
    the numpy driver, the settled marbles rest on the floor (held by the kernels), some lift off again."""
    scene = marble_box(n=12, speed=0.3, seed=5)
    return replace(scene, gravity=(0.0, 0.0, -9.81), restitution=0.3, contact_friction=0.2,
                   settings=replace(scene.settings, t_end=t_end))


def grazing_pass():
    """A marble box of 20 whose marbles fly fast (6 m/s at dt 1e-3: more than a radius a step), so pairs can
    touch and part again inside a step: the grazing filter and its cubic have work."""
    scene = marble_box(n=20, speed=6.0, seed=7)
    return replace(scene, settings=replace(scene.settings, t_end=0.1))


SCENES = {
    "marble-gas": lambda: replace(marble_box(n=27, speed=0.4, seed=3),
                                  settings=replace(marble_box().settings, t_end=0.5)),
    "settling-marbles": settling_marbles,
    "grazing-pass": grazing_pass,
    "colliding-pendulums": lambda: examples.colliding_pendulums(t_end=2.0),
}


@pytest.mark.parametrize("name", list(SCENES))
def test_near_pairs_and_idle_bodies_give_the_run_of_every_pair_bit_for_bit(monkeypatch, name):
    scene = SCENES[name]()
    made = captured(monkeypatch)
    monkeypatch.setattr(compiled, "BROAD_PAIRS", 0)
    fast = simulate(scene, record_interval=1e-2)
    C = made[-1]
    assert C.broad and not C.coupled
    assert len(fast.events) > 0
    # every pair after every check, every body in every trial
    monkeypatch.setattr(compiled, "BROAD_PAIRS", 10 ** 9)
    original = compiled.contact_arrays

    def coupled(*args, **kw):
        return original(*args[:4], True)

    monkeypatch.setattr(compiled, "contact_arrays", coupled)
    full = simulate(scene, record_interval=1e-2)
    assert not made[-1].broad and made[-1].coupled
    assert_identical(fast, full)


def test_the_near_pairs_take_a_small_part_of_the_gaps(monkeypatch):
    """In the bench's box of 100 marbles (5050 pairs) a whole pass comes every few steps and each check takes a
    few dozen near pairs: far below the gap of every pair at every check the kernels made before."""
    made = captured(monkeypatch)
    scene = marble_box()
    traj = simulate(scene, t_end=0.3, record_interval=1e-2)
    C = made[-1]
    assert C.broad and len(traj.events) > 50
    passes, near = (int(x) for x in C.checks)
    n_pairs = len(C.pair)
    assert passes < 0.2 * traj.steps
    assert passes * n_pairs + near < 0.25 * n_pairs * traj.steps


def test_the_scenes_exercise_what_they_are_named_for(monkeypatch):
    """The settling marbles rest and lift off; the fast marbles pass pairs through the grazing filter's cubic
    (a dip hands its step to the numpy driver: contacts._advance_step called)."""
    monkeypatch.setattr(compiled, "BROAD_PAIRS", 0)
    traj = simulate(settling_marbles(), record_interval=1e-2)
    assert traj.events.kind.count("rest") >= 3 and traj.events.kind.count("lift-off") >= 1
    calls = count_numpy_steps(monkeypatch)
    simulate(grazing_pass(), record_interval=1e-2)
    assert len(calls) >= 1


@pytest.mark.parametrize("kind", ["plane", "sphere", "cylinder", "box", "box-obstacle", "sphere-obstacle", "pair"])
def test_a_gap_moves_no_faster_than_its_spheres(kind):
    """|g(x + d) − g(x)| ≤ |d| for a sphere centre x moved by d (for a pair: each centre in turn), with the numpy
    model's gaps: the premise of the near list's margin (R − 2·d_max)."""
    rng = np.random.default_rng(11)
    r = 0.01
    if kind == "pair":
        def gap(x):
            return np.linalg.norm(x - np.array([0.01, -0.02, 0.005])) - 2 * r
    else:
        wall = {
            "plane": walls.Plane((0.0, 0.0, -0.1), (0.3, 0.4, 1.0)),
            "sphere": walls.Sphere((0.0, 0.0, 0.0), 0.3),
            "sphere-obstacle": walls.Sphere((0.0, 0.0, 0.0), 0.05, inside=False),
            "cylinder": walls.Cylinder((0.0, 0.0, 0.0), (0.2, 0.1, 1.0), 0.2),
            "box": walls.Box((0.0, 0.0, 0.0), (0.2, 0.3, 0.25)),
            "box-obstacle": walls.Box((0.0, 0.0, 0.0), (0.05, 0.08, 0.06), inside=False),
        }[kind]

        def gap(x):
            return float(wall.gap(x, r))
    worst = 0.0
    for _ in range(4000):
        x = rng.uniform(-0.25, 0.25, 3)
        d = rng.normal(size=3) * 10.0 ** rng.uniform(-6, -1)
        step = np.linalg.norm(d)
        change = abs(gap(x + d) - gap(x))
        assert change <= step * (1 + 1e-9) + 1e-15, (x, d, change, step)
        worst = max(worst, change / step)
    assert worst > 0.99  # the bound is reached: the test can tell a gap that moves faster


def test_far_pairs_pass_the_grazing_filter_as_apart():
    """broad_kernels._far_ok(F) admits a margin F only where every pair whose gaps at both ends are ≥ F (one end at most
    2δ above the other), its speeds ≤ vmax each, σ ≥ the smallest, tol ≤ the largest, is not flagged by the
    numpy driver's filter: min + tol < speed·(8/27)·h·ρ, ρ = (σ + max)/(σ + (max(min, −tol) − tol)/2)."""
    k = kernels()
    rng = np.random.default_rng(5)
    admitted = 0
    close = 0.0
    for _ in range(3000):
        h = 10.0 ** rng.uniform(-5, -2)
        vmax = 10.0 ** rng.uniform(-2, 1.5)
        s_min = rng.choice([1e300, 10.0 ** rng.uniform(-4, -1)])
        tk_max, touch = 10.0 ** rng.uniform(-16, -12), 10.0 ** rng.uniform(-13, -9)
        delta = vmax * h * rng.uniform(0, 1)
        bf = np.array([0.0, 0.0, s_min, tk_max, touch, 0.0])
        F = 2.0 * vmax * (2.0 * 4.0 / 27.0) * h * 10.0 ** rng.uniform(-0.5, 1.0)
        if not k._far_ok(bf, F, vmax, h, delta, True):
            continue
        admitted += 1
        for _ in range(20):  # pairs at the premises' edges
            m = F * (1 + rng.uniform(0, 0.01) * rng.integers(0, 2))
            big = m + 2 * delta * rng.uniform(0.9, 1.0)
            sigma = s_min if s_min < 1e300 else 0.0
            tol = tk_max * rng.uniform(0, 1)
            speed = 2 * vmax * rng.uniform(0.99, 1.0)
            s_eff = sigma if sigma > 0 else 1e300
            rho = (s_eff + big) / (s_eff + 0.5 * (max(m, -tol) - tol))
            flagged = m + tol < speed * (2.0 * (4.0 / 27.0) * h) * rho
            assert not flagged
            close = max(close, speed * (2.0 * (4.0 / 27.0) * h) * rho / (m + tol))
    assert admitted > 500
    assert close > 0.5  # pairs come near the filter's edge: the bound is not far looser than the filter
    # and a margin under the contact or touch limits is never admitted
    bf = np.array([0.0, 0.0, 1e300, 1e-15, 1e-10, 0.0])
    assert not k._far_ok(bf, 5e-11, 0.0, 1e-3, 0.0, False)
    assert not k._far_ok(bf, -1.0, 0.0, 1e-3, 0.0, False)
    assert k._far_ok(bf, 1e-9, 0.0, 1e-3, 0.0, False)
