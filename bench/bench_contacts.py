"""Scenes with contacts on the compiled engine: do they keep its speed?

Measures, in one run on this machine (steps/s, best of ``--repeat``; compile or cache load excluded by a
short warm-up run first):
- Newton's cradle (5 balls) and the colliding pendulums with their contacts on the compiled engine (the
  kernels check every gap after each step and take the common impact steps themselves), the same
  scenes with the contact spheres and walls removed (compiled: the speed to keep), with the pendulums'
  pivots moved out of the plane of the swing so that they never touch (compiled: the cost of the in-kernel gap
  check and of unmerged kicks alone), and with contacts
  on the numpy contact driver alone (compiled engine off); ratios contacts/no contacts and compiled/numpy,
  and the wall time of one impact step (the driver's Brent search and resolution) derived from them;
- a box of 100 marbles (translating free spheres, no gravity, elastic, 4950 sphere pairs + 100 sphere–wall
  pairs) with contacts on the compiled engine against the same box without contact spheres and walls, both
  compiled over the pendulums' longer time (the gas spread from its grid: ~35 % of the steps hold an impact; the
  run's set-up, ~20 ms, a small part of it), and against the numpy contact driver alone (over 1 s: it is slow);
- the bouncing ball at rest on its floor: a simulated second at rest against one of flight (issue 28's goal: ≤ 2×).

    python bench/bench_contacts.py [--repeat N] [--scale S] [--json PATH]

``--scale`` multiplies every run's simulated time (0.1 for a quick look). Every run in one thread
(``PEM_THREADS=1``): without contacts the marbles would step in groups on every core (engine/backends/groups.py), a
contact scene in one thread — the ratios compare the same work per thread.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import finish  # noqa: E402

from pem_physics import examples, simulate  # noqa: E402
from pem_physics.engine.backends import compiled  # noqa: E402
from pem_physics.model.inertia import Sphere  # noqa: E402
from pem_physics.model.scene import Body, ContactSphere, Scene, Settings, StaticWall  # noqa: E402

#: Simulated seconds of each run (before --scale): the compiled engine, the numpy contact driver, the marble box on
#: the numpy contact driver.
T_COMPILED, T_NUMPY, T_MARBLES = 20.0, 2.0, 1.0


def without_contacts(scene: Scene) -> Scene:
    """The same scene with no contact spheres and no walls (the bodies pass through each other)."""
    return replace(scene, bodies=[replace(b, contacts=()) for b in scene.bodies], walls=())


def never_touching(scene: Scene) -> Scene:
    """The same scene with body k's pivot moved 0.2·(k + 1) m along y, out of the x–z plane the pendulums swing
    in: the kernels check every gap after each step, but no impact comes — the in-kernel checks' own cost.
    The bodies move, not their contact spheres: a sphere moved off a pendulum's string axis would get a lever
    from the bob's tiny inertia about that axis, and the grazing check's speed bound (lever·|L|) would pass on
    most steps (~1.5 µs a step for the colliding pendulums) — a cost of that geometry, not of these scenes."""
    def moved(k, b):
        return replace(b, position=(b.position[0], b.position[1] + 0.2 * (k + 1), b.position[2]))

    return replace(scene, bodies=[moved(k, b) for k, b in enumerate(scene.bodies)])


def marble_box(n: int = 100, radius: float = 0.005, mass: float = 0.004, speed: float = 0.2, seed: int = 0) -> Scene:
    """``n`` marbles (translating free spheres) on a grid 2.5 radii apart with random velocities of ``speed`` m/s,
    in a box container just larger than the grid; no gravity, no dipoles, e = 1 (an elastic gas)."""
    rng = np.random.default_rng(seed)
    side = int(np.ceil(n ** (1 / 3)))
    spacing = 5 * radius
    bodies = []
    for k in range(n):
        i, j, m = k % side, (k // side) % side, k // (side * side)
        v = rng.normal(size=3)
        bodies.append(Body(name=f"marble{k}", role="free", translate=True,
                           position=tuple(spacing * (np.array([i, j, m]) - (side - 1) / 2)),
                           velocity=tuple(speed * v / np.linalg.norm(v)), shapes=(Sphere(radius=radius, mass=mass),),
                           contacts=(ContactSphere((0.0, 0.0, 0.0), radius),)))
    half = spacing * side / 2 + radius
    box = StaticWall(kind="box", name="box", center=(0.0, 0.0, 0.0), half_sizes=(half, half, half))
    return Scene(name=f"{n}-marble box", bodies=bodies, gravity=(0.0, 0.0, 0.0), restitution=1.0, walls=(box,),
                 settings=Settings(method="splitting2", dt=1e-3, t_end=T_MARBLES, record_interval=1e-2))


def rate(scene: Scene, engine: str, t_end: float, repeat: int) -> dict:
    """Best steps/s of ``scene`` over ``t_end`` s on ``engine`` ("numba": the compiled engine allowed, "numpy":
    turned off), with the engine the run reports and its number of impacts."""
    compiled.ENABLED = engine == "numba"
    try:
        simulate(scene, t_end=10 * scene.settings.dt)  # compiles or loads the kernels
        best, traj = 0.0, None
        for _ in range(repeat):
            t0 = time.perf_counter()
            traj = simulate(scene, t_end=t_end, record_interval=0.01)
            best = max(best, traj.steps / (time.perf_counter() - t0))
    finally:
        compiled.ENABLED = True
    return {"engine": traj.info["engine"], "steps": traj.steps, "steps_per_s": best,
            "events": 0 if traj.events is None else len(traj.events),
            "impact_steps": 0 if traj.events is None else len({int(np.ceil(t / scene.settings.dt))
                                                               for t in traj.events.t})}


def pendulum_scenes(repeat: int, scale: float) -> list:
    rows = []
    for name, scene in (("newtons-cradle (5 balls)", examples.newtons_cradle()),
                        ("colliding-pendulums", examples.colliding_pendulums())):
        with_c = rate(scene, "numba", T_COMPILED * scale, repeat)
        free = rate(without_contacts(scene), "numba", T_COMPILED * scale, repeat)
        idle = rate(never_touching(scene), "numba", T_COMPILED * scale, repeat)
        numpy_c = rate(scene, "numpy", T_NUMPY * scale, repeat)
        row = {"scene": name, "contacts_compiled": with_c, "no_contacts_compiled": free,
               "never_touching_compiled": idle, "contacts_numpy": numpy_c,
               "ratio_contacts_vs_no_contacts": with_c["steps_per_s"] / free["steps_per_s"],
               "ratio_never_touching_vs_no_contacts": idle["steps_per_s"] / free["steps_per_s"],
               "ratio_compiled_vs_numpy": with_c["steps_per_s"] / numpy_c["steps_per_s"],
               "impact_step_ms": 1e3 * (1 / with_c["steps_per_s"] - 1 / idle["steps_per_s"]) * with_c["steps"]
               / max(with_c["impact_steps"], 1)}
        rows.append(row)
        print(f"{name}")
        for label, r in (("contacts", with_c), ("no contacts", free), ("contacts never touching", idle),
                         ("contacts, numpy driver", numpy_c)):
            print(f"  {label:24s} {r['engine']:5s} {r['steps_per_s']:10.4g} steps/s  ({r['steps']} steps, "
                  f"{r['events']} events in {r['impact_steps']} impact steps)")
        print(f"  ratios: contacts/no contacts {row['ratio_contacts_vs_no_contacts']:5.2f}, never touching/no contacts "
              f"{row['ratio_never_touching_vs_no_contacts']:5.2f}, compiled/numpy driver "
              f"{row['ratio_compiled_vs_numpy']:6.1f}; one impact step (numpy driver) ≈ {row['impact_step_ms']:.1f} ms")
    return rows


def marbles(repeat: int, scale: float) -> dict:
    scene = marble_box()
    # both compiled runs as long as the pendulums': a step without contacts costs ~13 µs, and over 1 s the set-up
    # of a run (~20 ms) would be most of the rate; the gas has then spread from its grid (impacts grow more frequent)
    with_c = rate(scene, "numba", T_COMPILED * scale, repeat)
    free = rate(without_contacts(scene), "numba", T_COMPILED * scale, repeat)
    numpy_c = rate(scene, "numpy", T_MARBLES * scale, repeat)
    ratio = with_c["steps_per_s"] / free["steps_per_s"]
    vs_numpy = with_c["steps_per_s"] / numpy_c["steps_per_s"]
    impact_ms = 1e3 * (1 / with_c["steps_per_s"] - 1 / free["steps_per_s"]) * with_c["steps"] / max(
        with_c["impact_steps"], 1)
    print(f"{scene.name}")
    for label, r in (("contacts", with_c), ("no contacts", free), ("contacts, numpy driver", numpy_c)):
        print(f"  {label:24s} {r['engine']:5s} {r['steps_per_s']:10.4g} steps/s  ({r['steps']} steps, "
              f"{r['events']} events in {r['impact_steps']} impact steps)")
    print(f"  ratios: contacts/no contacts {ratio:.2g}, compiled/numpy driver {vs_numpy:.2g}; one impact step "
          f"≈ {impact_ms:.1f} ms")
    return {"scene": scene.name, "contacts": with_c, "no_contacts": free, "contacts_numpy": numpy_c,
            "ratio_contacts_vs_no_contacts": ratio, "ratio_compiled_vs_numpy": vs_numpy, "impact_step_ms": impact_ms}


def resting_ball(repeat: int, scale: float) -> dict:
    """The bouncing-ball example at dt = 1/2400 (Blender's 24 fps × 100): the wall time of a simulated second at rest
    on the floor (the run to 45 s less the run to 5 s; it rests from ≈ 4.1 s) against a simulated second of flight
    in the same scene (dropped from 2 km: the floor never reached, the steps in merged spans) and of flight with no
    contact spheres and no floor."""
    ball = examples.bouncing_ball()
    ball = replace(ball, bodies=[replace(ball.bodies[0], position=(0.1, 0.2, ball.bodies[0].position[2]))],
                   settings=replace(ball.settings, dt=1 / 2400))
    high = replace(ball, bodies=[replace(ball.bodies[0], position=(0.1, 0.2, 2000.0))])
    bare = without_contacts(high)
    t0, t1 = 5.0, 5.0 + 40.0 * scale

    def per_second(scene) -> float:
        simulate(scene, t_end=0.1)  # compiles or loads the kernels

        def wall(t_end):
            best = np.inf
            for _ in range(repeat):
                start = time.perf_counter()
                traj = simulate(scene, t_end=t_end, record_interval=1 / 24)
                best = min(best, time.perf_counter() - start)
            return best, traj

        (a, _), (b, traj) = wall(t0), wall(t1)
        return (b - a) / (t1 - t0), traj

    rest, traj = per_second(ball)
    assert traj.events.kind[-1] == "rest" and traj.events.t[-1] < t0, "the ball must rest before the measured span"
    flight, _ = per_second(high)
    free, _ = per_second(bare)
    out = {"rest_s_per_s": rest, "flight_s_per_s": flight, "free_s_per_s": free, "ratio_rest_vs_flight": rest / flight,
           "ratio_rest_vs_free": rest / free, "engine": traj.info["engine"]}
    print(f"resting ball (dt 1/2400): a simulated second at rest {1e3 * rest:.2f} ms, in flight over the floor "
          f"{1e3 * flight:.2f} ms, in flight without contacts {1e3 * free:.2f} ms: ratios {rest / flight:.2f}, "
          f"{rest / free:.2f}")
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if not compiled.available():
        print("numba is not installed: nothing to measure for the compiled engine")
        return {}
    os.environ["PEM_THREADS"] = "1"  # see the module's docstring
    res = {"pendulums": pendulum_scenes(args.repeat, args.scale), "marble_box": marbles(args.repeat, args.scale),
           "resting_ball": resting_ball(args.repeat, args.scale)}
    return finish(res, start, args.json, indent=2)


if __name__ == "__main__":
    main()
