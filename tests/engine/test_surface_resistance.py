"""Rolling and spinning resistance on a table (engine/contact/surface.py, ``Table(rolling_resistance=δ_r,
spin_resistance=δ_s)``): Coulomb's law for the couple −N(δ_r ω̂_t + δ_s sgn(ω_n) n) of a rolling contact. Closed forms:

- a uniform ball (radius r, I = (2/5)Mr²) rolling on a level table: about the contact point (7/5)Mr² ω̇ = −δ_r Mg, so
  it slows at a = (5/7)g δ_r/r, stops at t = v₀/a after v₀²/(2a), and rests; friction took all its (7/10)Mv₀²;
- spinning in place: I ω̇ = −δ_s Mg, stopping at ω₀I/(δ_s Mg), the centre not moving;
- at rest on a slope of angle α: held while r Mg sin α ≤ δ_r Mg cos α (tan α ≤ δ_r/r), else rolling down at
  (5/7)g(sin α − (δ_r/r) cos α).
"""

from __future__ import annotations

import numpy as np
import pytest

from pem_physics.engine.contact import surface as sf
from pem_physics.engine.contact import surface_run as sr
from pem_physics.engine.contact.surface import ContactSphere, Surface, Table, TableBody
from pem_physics.engine.contact.surface_run import start_state
from pem_physics.engine.contact.walls import Plane
from pem_physics.errors import ValidationError

G = 9.81
M, A = 0.1, 0.02
I = 0.4 * M * A * A


def ball():
    return TableBody(M, I * np.eye(3), [ContactSphere((0, 0, 0), A)], "ball")


ENGINES = ["numpy", "compiled"] if sr.compiled_available() else ["numpy"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_rolling_ball_slows_at_the_closed_form_rate_and_rests(engine):
    dr, v0, dt = 0.001, 0.5, 1e-3
    s = Surface(ball(), Table(mu=0.5, rolling_resistance=dr), (0, 0, -G))
    st = start_state(s, (0, 0, A), (v0, 0, 0), (0, v0 / A, 0))
    assert st.mode == sf.ROLLING
    a = (5 / 7) * G * dr / A
    t_stop = v0 / a
    r = sr.run(s, st, t_stop + 0.5, dt, engine=engine)
    v = np.where(r.t < t_stop, v0 - a * r.t, 0.0)
    x = np.where(r.t < t_stop, v0 * r.t - 0.5 * a * r.t ** 2, v0 ** 2 / (2 * a))
    # the velocity is exact at every record; the stop falls inside a step (Coulomb's law in time steps): the place
    # where it rests is off by less than what a step at the last speed covers
    assert np.max(np.abs(r.v[:, 0] - v)) <= 1e-12 * v0
    assert np.max(np.abs(r.x[:, 0] - x)) <= a * dt ** 2
    assert np.linalg.norm(r.final.v) <= 1e-15 * v0 and np.linalg.norm(s.W(r.final.Q) @ r.final.L) <= 1e-15 * v0 / A
    assert np.max(np.abs(r.energy_balance())) <= 1e-12 * M * v0 ** 2
    assert r.friction_work[-1] == pytest.approx(-0.7 * M * v0 ** 2, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_spinning_ball_stops_at_the_closed_form_time_in_place(engine):
    ds, w0 = 0.0005, 30.0
    s = Surface(ball(), Table(mu=0.5, spin_resistance=ds, rolling_resistance=0.001), (0, 0, -G))
    st = start_state(s, (0, 0, A), (0, 0, 0), (0, 0, w0))
    t_stop = w0 * I / (ds * M * G)
    r = sr.run(s, st, t_stop + 0.3, 1e-3, engine=engine)
    w = np.einsum("tji,j,tjk,tk->ti", r.Q, s.body.inv, r.Q, r.L)
    assert np.max(np.abs(w[:, 2] - np.maximum(w0 - ds * M * G / I * r.t, 0.0))) <= 1e-12 * w0 * r.t[-1] / 1e-3
    assert np.max(np.abs(r.x - r.x[0])) == 0.0 and np.linalg.norm(w[-1]) <= 1e-15 * w0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("factor", [0.9, 1.1])
def test_a_ball_on_a_slope_is_held_below_the_closed_form_angle_and_rolls_above(factor, engine):
    dr = 0.001
    al = np.arctan(factor * dr / A)
    n = np.array([np.sin(al), 0, np.cos(al)])
    s = Surface(ball(), Table(wall=Plane((0, 0, 0), n), mu=0.5, rolling_resistance=dr), (0, 0, -G))
    st = start_state(s, A * n, (0, 0, 0), (0, 0, 0))
    r = sr.run(s, st, 1.0, 1e-3, engine=engine)
    down = (r.x - r.x[0]) @ np.array([np.cos(al), 0, -np.sin(al)])
    acc = max((5 / 7) * G * (np.sin(al) - dr / A * np.cos(al)), 0.0)
    assert np.max(np.abs(down - 0.5 * acc * r.t ** 2)) <= 1e-14
    assert set(r.mode) == {sf.ROLLING} and np.max(np.abs(r.energy_balance())) <= 1e-15


def test_bad_resistance_is_named():
    with pytest.raises(ValidationError, match=r"^cloth\.rolling_resistance: must be a length ≥ 0"):
        Table(name="cloth", rolling_resistance=-1e-3)
    with pytest.raises(ValidationError, match=r"^cloth\.spin_resistance"):
        Table(name="cloth", spin_resistance=float("nan"))
