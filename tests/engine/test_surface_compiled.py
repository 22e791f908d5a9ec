"""The compiled run of a body on a table (engine/contact/surface_run_kernels.py) against the numpy reference
(engine/contact/surface.py), which test_surface.py checks against closed forms and invariants.

The two do the same arithmetic in the same order except for the small linear solves and libm's sin/cos (numpy's
SIMD ones differ by an ulp between CPUs), so they agree to round-off: the same events (kind, shape) at the same times
to 1e-12 of the run's length, states to 1e-12 of their scales. Orientations carry the round-off of every step's turn,
which grows with the angle turned: 1e-12 × (1 + the angle turned, rad). A state after an event also carries the
event's time tolerance times its rate (a stick's impulse stops the slip left then). The scenes together take every
kind of contact change (impacts that rebound, slide or roll, stick, slip, reversal,
lift-off), rims and spheres, Coulomb and gliding friction, a tilted table, curved tables (a dome, a pipe, a bowl,
a tray; rims too) and a block's edge, rolling and spinning resistance.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from test_surface import NORMAL, G, ball, basis, leaning_rod, rolling_coin, spun_tippe, tilted, tippe

from pem_physics.engine.backends import compiled
from pem_physics.engine.contact import surface as sf
from pem_physics.engine.contact import surface_run as sr
from pem_physics.engine.contact.surface import ContactRim, ContactSphere, Surface, Table, TableBody
from pem_physics.engine.contact.surface_common import TOUCH_RTOL
from pem_physics.engine.contact.surface_run import start_state
from pem_physics.engine.contact.walls import Box, Cylinder, Sphere
from pem_physics.errors import SimulationError, ValidationError

from conftest import ROOT

needs_numba = pytest.mark.skipif(not compiled.available(), reason="numba is not installed")


def dropped_ball():
    a = 0.01
    s = Surface(ball(0.05, a), Table(mu=0.2, restitution=0.5), (0, 0, -G))
    return s, start_state(s, (0, 0, a + 0.2), (0, 0, 0), (0, 0, 0)), 1.0, 1e-3, 1


def billiard_backspin():
    a, v0 = 0.028575, 2.0
    t1, t2 = basis(NORMAL)
    s = Surface(ball(0.17, a), Table(point=0.1 * t2, normal=NORMAL, mu=0.2), -G * NORMAL)
    st = start_state(s, 0.1 * t2 + a * NORMAL + 0.3 * t1, v0 * t1, -0.5 * v0 / a * np.cross(NORMAL, t1))
    return s, st, 1.0, 1e-3, 1


def ball_up_a_slope():
    """Sliding up a 30° slope with μ = 0.1 < tan 30°/3.5: the slip stops where friction cannot hold it (reversal)."""
    al = np.radians(30)
    s = Surface(ball(0.1, 0.02), Table(mu=0.1), G * np.array([-np.sin(al), 0, -np.cos(al)]))
    return s, start_state(s, (0, 0, 0.02), (1.0, 0, 0), (0, 0, 0)), 1.0, 1e-3, 1


def rocking_eccentric_ball():
    """A tippe top let go at 69° without spin rocks, sticking and slipping (μ = 0.05)."""
    R, alpha = 0.02, 0.3
    s = Surface(tippe(R=R, alpha=alpha)[0], Table(mu=0.05), (0, 0, -G))
    U = tilted(1.2)
    return s, start_state(s, np.array([0, 0, R]) - alpha * R * U[2], (0, 0, 0), (0, 0, 0), U), 1.0, 5e-4, 20


def tippe_top_dropped_spinning():
    """Dropped at 0.05 m, spinning: impacts that rebound and that stay (sliding), hops (lift-off)."""
    R, alpha = 0.02, 0.3
    s = Surface(tippe(R=R, alpha=alpha)[0], Table(mu=0.3, restitution=0.6), (0, 0, -G))
    U = tilted(0.7)
    st = start_state(s, np.array([0, 0, R + 0.05]) - alpha * R * U[2], (0.3, 0, 0), 150 * U[2], U)
    return s, st, 1.0, 5e-4, 20


def tippe_top_gliding():
    R, alpha = 0.02, 0.3
    s = Surface(tippe(R=R, alpha=alpha)[0], Table(mu=0.3, friction="viscous"), (0, 0, -G))
    return s, spun_tippe(s, R, alpha, 120.0, theta0=0.4), 0.6, 5e-4, 20


def coin_on_its_circle():
    s, st, _ = rolling_coin(0.3, 0.1)
    return s, st, 0.5, 5e-4, 10


def ball_off_a_dome():
    """Rolls, slips, leaves (a sphere's outside)."""
    R, a = 0.5, 0.02
    s = Surface(ball(0.1, a), Table(wall=Sphere((0, 0, 0), R, inside=False, name="dome"), mu=0.5), (0, 0, -G))
    return s, start_state(s, ((R + a) * np.sin(0.05), 0, (R + a) * np.cos(0.05)), (0, 0, 0), (0, 0, 0)), 1.0, 1e-3, 1


def ball_in_a_pipe():
    """Slides across and along a pipe (a cylinder's inside) until it sticks."""
    R, a = 0.5, 0.02
    s = Surface(ball(0.1, a), Table(wall=Cylinder((0, 0, R), (1, 0, 0), R, inside=True, name="pipe"), mu=0.4),
                (0, 0, -G))
    st = start_state(s, (0, (R - a) * np.sin(0.5), R - (R - a) * np.cos(0.5)), (0.3, 0, 0), (0, 0, 0))
    return s, st, 1.0, 1e-3, 10


def ball_over_a_block_edge():
    """Rolls along a block's top, over its edge (a step boundary where the curvature jumps), slips, leaves, falls
    past its side."""
    a, v0 = 0.02, 0.1
    s = Surface(ball(0.1, a), Table(wall=Box((-0.3, 0, -0.5), (0.3, 0.3, 0.5), inside=False, name="block"), mu=0.5,
                                    restitution=0.3), (0, 0, -G))
    return s, start_state(s, (-0.01, 0, a), (v0, 0, 0), (0, v0 / a, 0)), 0.5, 5e-4, 4


def ball_dropped_in_a_tray():
    s = Surface(ball(0.1, 0.02), Table(wall=Box((0, 0, 0.5), (1, 1, 0.5), inside=True, name="tray"), mu=0.3,
                                       restitution=0.5), (0, 0, -G))
    return s, start_state(s, (0, 0, 0.3), (0.2, 0.1, 0), (0, 0, 0)), 1.5, 1e-3, 10


def tippe_top_in_a_bowl():
    R = 0.2
    s = Surface(tippe()[0], Table(wall=Sphere((0, 0, R), R, inside=True, name="bowl"), mu=0.3, friction="viscous"),
                (0, 0, -G))
    U = tilted(0.1)
    return s, start_state(s, np.array([0, 0, 0.02]) - 0.006 * U[2], (0, 0, 0), 180 * U[2], U), 0.5, 5e-4, 20


def ball_rolling_to_rest():
    """Rolling and spinning resistance: a ball rolling and spinning slows, stops rolling, stops spinning, rests."""
    a = 0.02
    s = Surface(ball(0.1, a), Table(mu=0.5, rolling_resistance=0.001, spin_resistance=0.0005), (0, 0, -G))
    return s, start_state(s, (0, 0, a), (0.5, 0.2, 0), (0, 0.5 / a, 10.0)), 2.0, 1e-3, 10


def marble_to_rest_in_a_bowl():
    R, a = 0.3, 0.02
    s = Surface(ball(0.1, a), Table(wall=Sphere((0, 0, R), R, inside=True), mu=0.5, rolling_resistance=0.0005),
                (0, 0, -G))
    return s, start_state(s, ((R - a) * np.sin(0.3), 0, R - (R - a) * np.cos(0.3)), (0, 0.1, 0), (0, 0, 0)), 4.0, \
        1e-3, 10


def tippe_top_with_resistance():
    s = Surface(tippe()[0], Table(mu=0.3, rolling_resistance=0.0002, spin_resistance=0.0002), (0, 0, -G))
    U = tilted(0.3)
    return s, start_state(s, np.array([0, 0, 0.02]) - 0.006 * U[2], (0, 0, 0), 100 * U[2], U), 1.0, 5e-4, 20


def coin_in_a_pipe():
    """A rim on a curved table: a tilted, spinning coin rolling and slipping inside a pipe (stick and slip)."""
    a, m = 0.02, 0.05
    coin = TableBody(m, np.diag([m * a * a / 4, m * a * a / 4, m * a * a / 2]), [ContactRim((0, 0, 0), (0, 0, 1), a)],
                     "coin")
    s = Surface(coin, Table(wall=Cylinder((0, 0, 0.3), (0, 1, 0), 0.3, inside=True), mu=0.5), (0, 0, -G))
    U = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    st = start_state(s, (0.28 * np.sin(0.4), 0, 0.3 - 0.28 * np.cos(0.4)), (0, 0.05, 0), (0, 0, 0.3), U)
    return s, st, 0.9, 1e-3, 5


def coin_off_a_dome():
    """A rim rolling off a dome (a sphere's outside) in its plane: slips, leaves."""
    a, m = 0.02, 0.05
    coin = TableBody(m, np.diag([m * a * a / 4, m * a * a / 4, m * a * a / 2]), [ContactRim((0, 0, 0), (0, 0, 1), a)],
                     "coin")
    s = Surface(coin, Table(wall=Sphere((0, 0, 0), 0.5, inside=False), mu=0.5), (0, 0, -G))
    U = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    return s, start_state(s, (0.52 * np.sin(0.05), 0, 0.52 * np.cos(0.05)), (0, 0, 0), (0, 0, 0), U), 1.5, 1e-3, 5


def _die():
    s, m, rho = 0.016, 0.0045, 0.0015
    q = s / 2 - rho
    return TableBody(m, np.eye(3) * m * s * s / 6, [ContactSphere((a * q, b * q, c * q), rho) for a in (-1, 1)
                                                   for b in (-1, 1) for c in (-1, 1)], "die")


def _block():
    a, b, c, r, m = 0.03, 0.02, 0.01, 1e-3, 0.2
    corners = [ContactSphere((sx * (a - r), sy * (b - r), sz * (c - r)), r)
               for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    return TableBody(m, m / 3 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b]), corners, "block"), c


def block_down_a_slope():
    """Several contacts at once: a block on four corners sliding down a 0.3 rad slope (Coulomb μ = 0.2), turning."""
    body, c = _block()
    beta = 0.3
    s = Surface(body, Table(normal=(-np.sin(beta), 0.0, np.cos(beta)), mu=0.2), (0, 0, -G))
    U = np.array([[np.cos(beta), 0, np.sin(beta)], [0, 1.0, 0], [-np.sin(beta), 0, np.cos(beta)]])
    return s, start_state(s, c * U[2], (0, 0.05, 0), 2.0 * U[2], U), 0.5, 1e-3, 10


def block_gliding_in_a_bowl():
    """Four corners on a curved table with gliding friction: a block sliding and spinning in a bowl."""
    body, c = _block()
    R = 0.3
    s = Surface(body, Table(wall=Sphere((0, 0, R), R, inside=True, name="bowl"), mu=0.5, friction="viscous"),
                (0, 0, -G))
    st = start_state(s, (0, 0, 0.0125), (0.1, 0.05, 0), (0, 0, 3.0))
    return s, st, 0.5, 1e-3, 10


def die_thrown_on_a_plane():
    """Lands on corners and edges, bounces, rolls over; several corners at once (Coulomb μ = 0.3, e = 0.4)."""
    from pem_physics.model.rotations import axis_angle_matrix

    s = Surface(_die(), Table(mu=0.3, restitution=0.4), (0, 0, -G))
    U = axis_angle_matrix(np.array([0.77685654468701, 0.6267582445143515, 0.06056411404658504]), 0.8995863071850618).T
    return s, start_state(s, (0.0, 0.0, 0.03), (-0.1, 0.0, 0.0), (-1.63, -4.82, 5.99), U), 1.0, 5e-4, 4


def can_rolling_on_its_side():
    """Two rims at once: a can on its side rolling (v = ωa) and turning in a slow circle."""
    a, h, m = 0.03, 0.05, 0.3
    I = np.diag([m * (3 * a * a + 4 * h * h) / 12] * 2 + [m * a * a / 2])
    can = TableBody(m, I, [ContactRim((0, 0, -h), (0, 0, 1), a), ContactRim((0, 0, h), (0, 0, 1), a)], "can")
    s = Surface(can, Table(mu=0.5), (0, 0, -G))
    U = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])           # the can's axis along y
    return s, start_state(s, (0, 0, a), (0.3, 0, 0), (0, 0.3 / a, 0.1), U), 0.5, 1e-3, 10


#: scenes with several contacts at once (surface_several and its kernel)
SEVERAL = (block_down_a_slope, block_gliding_in_a_bowl, die_thrown_on_a_plane, can_rolling_on_its_side)
SCENES = {f.__name__: f for f in SEVERAL + (coin_in_a_pipe, coin_off_a_dome,
    ball_rolling_to_rest, marble_to_rest_in_a_bowl, tippe_top_with_resistance, dropped_ball, billiard_backspin,
    ball_up_a_slope, rocking_eccentric_ball, tippe_top_dropped_spinning, tippe_top_gliding, coin_on_its_circle,
    ball_off_a_dome, ball_in_a_pipe, ball_over_a_block_edge, ball_dropped_in_a_tray, tippe_top_in_a_bowl)}


def agree(a, b, s: Surface, t_end: float):
    """Assert two runs of the same scene agree to round-off (see the module docstring): each quantity to 1e-12 of its
    scale, plus what its rate changes it by within the events' time tolerance 1e-12·t_end (a state just after an
    event carries the event's time error: a stick's impulse stops the slip left then)."""
    reach = s.body.reach + np.max(np.linalg.norm(a.x - a.x[0], axis=1))
    speed = max(s.speed_scale(sf.State(t, x, v, L, Q)) for t, x, v, L, Q in zip(a.t, a.x, a.v, a.L, a.Q))
    dt_ev = 1e-12 * t_end
    force = s.body.mass * (np.linalg.norm(s.g) + speed ** 2 / s.body.reach)      # N: the forces' scale
    assert [e.kind for e in a.events] == [e.kind for e in b.events]
    for e, f in zip(a.events, b.events):
        assert abs(e.t - f.t) <= dt_ev
        if e.shape != f.shape:
            # a tie: two shapes reaching the table at one instant (a die's edge landing on two corners), which
            # round-off names first — both at the table then, taken in the one impact
            # (or two slips that stop together); the impulse and point are each one's
            g = s.gaps(e.x, e.Q)
            assert max(g[e.shape], g[f.shape]) <= TOUCH_RTOL * s.body.r.max(), (e, f)
        else:
            assert np.max(np.abs(e.impulse - f.impulse)) <= 1e-12 * s.body.mass * speed + force * dt_ev
            assert np.max(np.abs(e.point - f.point)) <= 1e-12 * reach + speed * dt_ev
        assert np.max(np.abs(e.x - f.x)) <= 1e-12 * reach + speed * dt_ev
    assert np.array_equal(a.t, b.t) and np.array_equal(a.mode, b.mode) and np.array_equal(a.shape, b.shape)
    extras = [[[(k, m) for k, m, _ in e] for e in (r.extra or [()] * len(r.t))] for r in (a, b)]
    assert extras[0] == extras[1]
    w = np.einsum("tji,j,tjk,tk->ti", a.Q, s.body.inv, a.Q, a.L)
    turned = float(np.sum(np.linalg.norm(w[1:], axis=1) * np.diff(a.t)))
    energy = np.max(np.abs(a.energy)) + s.energy_scale(sf.State(a.t[0], a.x[0], a.v[0], a.L[0], a.Q[0]))
    assert np.max(np.abs(a.x - b.x)) <= 1e-12 * reach + speed * dt_ev
    assert np.max(np.abs(a.v - b.v)) <= 1e-12 * speed + force / s.body.mass * dt_ev
    L_scale = max(np.max(np.abs(a.L)), s.body.moments.max() * speed / s.body.reach)
    assert np.max(np.abs(a.L - b.L)) <= 1e-12 * L_scale + force * reach * dt_ev
    assert np.max(np.abs(a.Q - b.Q)) <= 1e-12 * (1 + turned) + np.max(np.linalg.norm(w, axis=1)) * dt_ev
    for k in ("energy", "friction_work", "impact_work", "normal_work"):
        assert np.max(np.abs(getattr(a, k) - getattr(b, k))) <= 1e-12 * energy + force * speed * dt_ev, k


@pytest.mark.parametrize("name", sorted(SCENES))
@needs_numba
def test_compiled_run_is_the_numpy_reference(name):
    s, st, t_end, dt, every = SCENES[name]()
    a = sr.run(s, st, t_end, dt, every, engine="numpy")
    b = sr.run(s, st, t_end, dt, every, engine="compiled")
    # (several contacts' changes are the reference's: the steps where they happen)
    several = name in {f.__name__ for f in SEVERAL} and any(len(e) for e in b.extra or [])
    assert a.engine == "numpy" and b.engine in (("numba", "numba+numpy") if several else ("numba",))
    agree(a, b, s, t_end)
    assert b.final.mode == a.final.mode and b.final.t == a.final.t


@pytest.mark.parametrize("name", sorted(set(SCENES) - {f.__name__ for f in SEVERAL}))
@needs_numba
def test_a_run_handed_to_the_reference_and_back_is_the_reference(name, monkeypatch):
    """The compiled run hands a run over to the numpy reference where the kernel cannot go on and takes it back once
    it can (several contacts that end, a flat rim that rises): forced here at a third and two thirds of each scene,
    the joined run — compiled, numpy, compiled, numpy, compiled — is the reference's to round-off: records on the same
    grid, none twice, works carried across, the same events."""
    s, st, t_end, dt, every = SCENES[name]()
    n = int(round(t_end / dt))
    marks = (n // 3, 2 * n // 3)
    astray, stretch = sr._astray, sr._numpy_stretch
    stretches = []

    def forced(surface, E, R, s_end, t0, dt_, i, i1):
        found = astray(surface, E, R, s_end, t0, dt_, i, i1)
        return min([m for m in marks if i < m <= i1] + ([found] if found is not None else []), default=None)

    def counted(*args, **kw):
        stretches.append(kw.get("back_after", args[8] if len(args) > 8 else None))
        return stretch(*args, **kw)

    monkeypatch.setattr(sr, "_astray", forced)
    monkeypatch.setattr(sr, "_numpy_stretch", counted)
    a = sr.run(s, st, t_end, dt, every, engine="numpy")
    stretches.clear()
    b = sr.run(s, st, t_end, dt, every, engine="compiled")
    assert b.engine == "numba+numpy" and len(stretches) >= 2 and all(k == sr.BACK_AFTER for k in stretches)
    agree(a, b, s, t_end)
    assert b.final.mode == a.final.mode and b.final.t == a.final.t


@needs_numba
def test_a_run_the_kernel_cannot_take_back_is_tried_seldom(monkeypatch):
    """Where the kernel hands every stretch it is given straight back (a coin wobbling near flat the whole time), the
    reference keeps the run twice as long each time before it tries again: a handful of tries in a run, not one
    every BACK_AFTER steps, and the joined run is still the reference's."""
    s, st, t_end, dt, every = SCENES["rocking_eccentric_ball"]()
    n = int(round(t_end / dt))
    astray, stretch = sr._astray, sr._compiled_stretch
    tries = []

    def forced(surface, E, R, s_end, t0, dt_, i, i1):
        found = astray(surface, E, R, s_end, t0, dt_, i, i1)
        return i + 1 if i >= n // 4 else (n // 4 if i < n // 4 <= i1 else found)

    monkeypatch.setattr(sr, "_astray", forced)
    monkeypatch.setattr(sr, "_compiled_stretch", lambda *a, **k: tries.append(a[4][1]) or stretch(*a, **k))
    a = sr.run(s, st, t_end, dt, every, engine="numpy")
    b = sr.run(s, st, t_end, dt, every, engine="compiled")
    assert b.engine == "numba+numpy" and tries[0] == 0
    # numpy stretches of 50, 100, 200, … steps between the tries: log₂ of the steps left over BACK_AFTER, and the first
    assert 3 <= len(tries) <= 2 + int(np.log2(n / sr.BACK_AFTER)) + 1, tries
    agree(a, b, s, t_end)


@needs_numba
def test_the_scenes_take_every_kind_of_contact_change():
    kinds = set()
    for make in SCENES.values():
        s, st, t_end, dt, every = make()
        kinds |= {e.kind for e in sr.run(s, st, t_end, dt, every, engine="compiled").events}
    assert kinds == {"impact", "impact, sliding", "impact, rolling", "stick", "slip", "reversal", "lift-off"}


@needs_numba
def test_chunks_and_a_full_event_buffer_change_nothing(monkeypatch):
    """Callbacks cut the run into chunks of PROGRESS_EVERY steps and a small event buffer makes chunks run again:
    neither may change a bit; a stop ends the run on a step with ``complete`` False."""
    s, st, t_end, dt, every = tippe_top_dropped_spinning()
    whole = sr.run(s, st, t_end, dt, every, engine="compiled")
    assert len(whole.events) > 8
    monkeypatch.setattr(sr, "EVENT_CAPACITY", 2)
    seen = []
    cut = sr.run(s, st, t_end, dt, every, engine="compiled", progress=seen.append, stop=lambda: False)
    assert len(seen) == int(round(t_end / dt)) // sr.PROGRESS_EVERY and seen == sorted(seen)
    seen_numpy = []
    sr.run(s, st, t_end, dt, every, engine="numpy", progress=seen_numpy.append)
    assert seen == seen_numpy
    for k in ("t", "x", "v", "L", "Q", "energy", "friction_work", "impact_work", "normal_work"):
        assert np.array_equal(getattr(whole, k), getattr(cut, k)), k
    assert [e.t for e in whole.events] == [e.t for e in cut.events]
    runs = {}
    for engine in ("numpy", "compiled"):
        calls = []
        runs[engine] = sr.run(s, st, t_end, dt, every, engine=engine,
                              stop=lambda calls=calls: calls.append(1) or len(calls) > 1)
    assert not runs["compiled"].complete and not runs["numpy"].complete
    assert runs["compiled"].t[-1] == pytest.approx((2 * sr.PROGRESS_EVERY - 1) * dt, rel=1e-15)
    agree(runs["numpy"], runs["compiled"], s, t_end)


@needs_numba
@pytest.mark.parametrize("v0", [0.0, 0.3])
def test_a_ball_that_fills_a_trays_height_stands_on_its_floor_on_both_engines(v0):
    """A ball as tall as the tray touches its floor and its ceiling at once. The kernel, one contact a shape, took the
    ceiling (the nearer face of a tie), let go of it at once and fell 1.2 µm (g·dt²/2) into the floor, where it stayed;
    the run is now the numpy reference's (the tray face by face). Thrown along the floor it slides, then rolls from
    the closed-form time 2v₀/(7μg), never below the floor."""
    r, mu, dt = 0.008, 0.5, 5e-4
    tray = Box(np.array([0.0, 0.0, r]), np.array([0.05, 0.05, r]), np.eye(3), True, "tray")
    s = Surface(ball(0.005, r), Table(mu=mu, wall=tray), (0, 0, -G))
    run = sr.run(s, start_state(s, (0, 0, r), (v0, 0, 0), (0, 0, 0)), 0.05, dt, engine="compiled")
    assert np.min(run.x[:, 2] - r) >= -1e-15
    kinds = [e.kind for e in run.events]
    if v0 == 0:
        assert not kinds and np.max(np.abs(run.v)) <= 1e-15
    else:
        assert kinds == ["stick"] and run.events[0].t == pytest.approx(2 * v0 / (7 * mu * G), rel=1e-12)


@pytest.mark.parametrize("wall, size", [(Sphere((0, 0, 0.01), 0.008), "radius 0.008 m"),
                                        (Sphere((0, 0, 0.01), 0.006), "radius 0.006 m"),
                                        (Cylinder((0, 0, 0.01), (1, 0, 0), 0.008), "radius 0.008 m"),
                                        (Box(np.array([0, 0, 0.01]), np.array([0.05, 0.05, 0.006]), np.eye(3), True),
                                         "half its smallest side 0.006 m")])
def test_a_sphere_that_does_not_fit_its_container_is_refused_by_name(wall, size):
    """A contact sphere as large as a bowl or a pipe (its centre where the wall has no normal) or larger than the
    container: refused at the start naming the sphere and the container, not a failure mid-run or "raise the body"."""
    what = {Sphere: "bowl", Cylinder: "pipe", Box: "tray"}[type(wall)]
    s = Surface(ball(0.005, 0.008), Table(wall=wall), (0, 0, -G))
    with pytest.raises(ValidationError, match=rf"ball\.contacts\[0\]\.radius: a contact sphere of radius 0\.008 m does "
                                              rf"not fit inside the {what} '{wall.name}' \({size}\): make the sphere "
                                              rf"smaller or the container larger"):
        start_state(s, (0, 0, 0.01), (0, 0, 0), (0, 0, 0))


def test_a_failing_compiled_run_reports_as_the_reference():
    """Painlevé's paradox (test_surface's leaning rod, μ = 3 > 5/3): the same error, time and body."""
    body, x, U = leaning_rod()
    errs = {}
    for engine in ("numpy", "compiled"):
        for direction in (+1, -1):
            s = Surface(body, Table(mu=3.0), (0, 0, -G))
            try:
                sr.run(s, start_state(s, x, (direction * 1.0, 0, 0), (0, 0, 0), U), 0.01, 1e-4, engine=engine)
            except SimulationError as err:
                errs[engine] = (str(err), err.time, err.body)
    assert "Painlevé" in errs["numpy"][0] and errs["compiled"] == errs["numpy"]


@needs_numba
def test_a_table_scene_runs_compiled_by_default():
    from pem_physics import examples, simulate

    tr = simulate(examples.build("billiard-ball"))
    assert tr.info["engine"] == "numba" and tr.info["kernels"] in ("jit", "ahead-of-time")
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from pem_physics import examples, simulate\n"
            "print(simulate(examples.build('billiard-ball')).info['engine'])\n")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PEM_NUMBA="0"), capture_output=True,
                         text=True, check=True)
    assert out.stdout.split() == ["numpy"]


@pytest.mark.parametrize("name", SCENES)
@pytest.mark.parametrize("engine", [pytest.param("numpy", marks=pytest.mark.slow),  # long runs: once, on numpy 2
                                    pytest.param("compiled", marks=needs_numba)])
def test_every_joule_is_booked(engine, name):
    """The energy bookkeeping is exact: the free flight keeps the energy of a symmetric body exactly, each impulse's
    work J·(u⁻ + u⁺)/2 (and a couple's H·(ω⁻ + ω⁺)/2) is the kinetic energy it adds, and a step adds −(h/2)g·J₁ — so
    E − E₀ less the friction's, the impacts' and the constraint's work is round-off in every scene (each body here is
    symmetric), whatever the step. The energy balance (without the constraint's share) is the integration error:
    round-off for a ball on a plane, second order otherwise (test_surface.py, test_surface_curved.py)."""
    s, st, t_end, dt, every = SCENES[name]()
    r = sr.run(s, st, t_end, dt, every, engine=engine)
    scale = np.max(np.abs(r.energy)) + s.energy_scale(st)
    booked = r.energy - r.energy[0] - r.friction_work - r.impact_work - r.normal_work
    assert np.max(np.abs(booked)) <= 1e-12 * scale


@needs_numba
@pytest.mark.parametrize("m, n, rank", [(1, 1, 1), (6, 6, 6), (12, 12, 12), (12, 12, 6), (9, 12, 5), (12, 7, 7)])
def test_the_kernels_least_squares_is_numpys_least_norm_answer(m, n, rank):
    """The several contacts' solves (surface_several_kernels._lstsq, one-sided Jacobi SVD) against LAPACK's gelsd
    through numpy.linalg.lstsq: the same least-norm least-squares answer, full rank or not (four corners on a plane
    give twelve conditions of rank six), with b inside A's range and outside it; to round-off times the condition
    of the kept part (≤ 1e3 here)."""
    from pem_physics.engine.contact.surface_several_kernels import _lstsq

    rng = np.random.default_rng(m * 100 + n * 10 + rank)
    U, _ = np.linalg.qr(rng.normal(size=(m, m)))
    V, _ = np.linalg.qr(rng.normal(size=(n, n)))
    sig = np.logspace(0, -3, rank)
    A = (U[:, :rank] * sig) @ V[:, :rank].T
    for b in (A @ rng.normal(size=n), rng.normal(size=m)):
        want = np.linalg.lstsq(A, b, rcond=1e-9)[0]
        got = _lstsq(A, b, 1e-9)
        assert np.max(np.abs(got - want)) <= 1e3 * 64 * np.finfo(float).eps * np.max(np.abs(want))


@needs_numba
def test_a_contact_change_is_the_references_for_a_few_steps_only(monkeypatch):
    """A die thrown on a plane lands on corners and edges, several at once: the kernel stops at each change of its
    contacts it leaves to the reference (a shape reaching the table while another touches, a lift-off, stick or slip
    while several touch); the reference takes that step and hands the run back BACK_AFTER_CHANGE steps later (twice
    as many when the kernel hands it back at once), so that nearly every step is compiled — and the joined run is
    the reference's to round-off."""
    s, st, t_end, dt, every = die_thrown_on_a_plane()
    stretch, backs, steps = sr._numpy_stretch, [], []

    def counted(*args, **kw):
        out = stretch(*args, **kw)
        backs.append(args[8] if len(args) > 8 else kw.get("back_after"))
        steps.append(out[1] - (args[7][1] if args[7] is not None else 0))
        return out

    monkeypatch.setattr(sr, "_numpy_stretch", counted)
    b = sr.run(s, st, t_end, dt, every, engine="compiled")
    n = int(round(t_end / dt))
    assert b.engine == "numba+numpy" and min(backs) == sr.BACK_AFTER_CHANGE
    assert sum(steps) <= 0.05 * n, (sum(steps), n)
    monkeypatch.setattr(sr, "_numpy_stretch", stretch)
    agree(sr.run(s, st, t_end, dt, every, engine="numpy"), b, s, t_end)
