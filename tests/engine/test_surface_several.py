"""Several shapes of a body on a table at once (pem_physics.engine.contact.surface_several): a block on its corners,
a die dropped, a tippe top reaching its stem.

Every check is independent of the code: the statics of a block at rest (its forces carry its weight and balance its
torque), a block sliding down a slope at the closed form's g(sin β − μ cos β) or held by friction, a rocking block
against Lagrange's equation of a body rolling on its edge (scipy's DOP853), and invariants of every run: the energy
never rises without a driver, no shape goes through the table beyond round-off.
"""

import numpy as np
import pytest

from pem_physics.engine.contact import surface_several as several
from pem_physics.engine.contact.surface import ROLLING, SLIDING, ContactSphere, Surface, Table, TableBody
from pem_physics.engine.contact.surface_run import run, start_state
from pem_physics.errors import SimulationError

G = 9.81


def block(a=0.03, b=0.02, c=0.01, r=1e-3, M=0.2, com=(0.0, 0.0, 0.0)):
    """A block of half sides a, b, c (m) with a small contact sphere (radius r) in each corner (their outer sides
    on the block's faces), mass M, its centre of mass at ``com`` from the centre (the inertia a uniform block's
    about it). Corners k = 4i + 2j + l at (±a, ±b, ±c): the even ones are the bottom face (z = −c)."""
    com = np.asarray(com, float)
    I = M / 3 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    corners = [ContactSphere(tuple(np.array([sx * (a - r), sy * (b - r), sz * (c - r)]) - com), r)
               for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    return TableBody(M, I, corners, "block")


def tilted_table(beta, mu):
    """A plane through the origin whose normal leans β from z towards −x: downhill is (−cos β, 0, −sin β)."""
    return Table(normal=(-np.sin(beta), 0.0, np.cos(beta)), mu=mu)


def gaps_of(sf, r):
    return np.array([sf.gaps(x, Q) for x, Q in zip(r.x, r.Q)])


@pytest.mark.parametrize("com", [(0.0, 0.0, 0.0), (0.012, -0.006, 0.002)])
def test_a_block_on_its_face_carries_its_weight_on_four_corners(com):
    """Four corners touch at once; their forces sum to −Mg and their torques about the centre of mass cancel (the
    statics of any rigid body at rest, whatever the indeterminate split); the block stays put."""
    body = block(com=com)
    sf = Surface(body, Table(mu=0.5))
    c = 0.01
    st = start_state(sf, np.array([0.0, 0.0, c]) + np.asarray(com), (0, 0, 0), (0, 0, 0))
    acts = several.active(st)
    assert [k for k, _, _ in acts] == [0, 2, 4, 6] and {m for _, m, _ in acts} == {ROLLING}
    F = several.forces(sf, st)
    W = body.mass * G
    assert np.allclose(sum(F), [0.0, 0.0, W], rtol=0, atol=1e-12 * W)
    torque = sum(np.cross(sf.contact(st, k).rho, f) for (k, _, _), f in zip(acts, F))
    assert np.max(np.abs(torque)) <= 1e-12 * W * body.reach
    assert min(f[2] for f in F) > 0
    r = run(sf, st, 0.2, 1e-3)
    assert not r.events and np.max(np.abs(r.x - r.x[0])) <= 1e-15 and np.max(np.abs(r.v)) <= 1e-14


@pytest.mark.parametrize("mu", [0.1, 0.2])
def test_a_block_on_a_slope_slides_at_the_closed_form_or_holds(mu):
    """On a slope of β = 10° (tan β = 0.176): with μ = 0.1 the block slides on its four corners at
    g(sin β − μ cos β) along the slope from rest; with μ = 0.2 friction holds it."""
    beta = np.radians(10.0)
    sf = Surface(block(), tilted_table(beta, mu))
    n = sf.table.normal
    down = np.array([-np.cos(beta), 0.0, -np.sin(beta)])
    assert abs(down @ n) < 1e-15
    U = np.array([np.cross([0, 1.0, 0], n), [0, 1.0, 0], n])      # the block's z along the normal
    x0 = 0.01 * n
    st = start_state(sf, x0, (0, 0, 0), (0, 0, 0), U)
    assert len(several.active(st)) == 4
    t_end = 0.5
    r = run(sf, st, t_end, 1e-3)
    s = (r.x - x0) @ down
    if mu < np.tan(beta):
        acc = G * (np.sin(beta) - mu * np.cos(beta))
        assert {m for m in r.mode} == {SLIDING}
        assert np.max(np.abs(s - 0.5 * acc * r.t ** 2)) <= 1e-12 * 0.5 * acc * t_end ** 2 + 1e-15
        # friction's work is μN times the path: μ M g cos β · s
        assert abs(r.friction_work[-1] + mu * block().mass * G * np.cos(beta) * s[-1]) <= 1e-10 * r.energy[0]
    else:
        assert np.max(np.abs(r.x - x0)) <= 1e-15 and not r.events
    assert np.max(np.abs((r.x - x0) @ n)) <= 1e-15                     # on the slope all along


def test_a_dropped_spinning_block_settles_flat_without_gaining_energy():
    """A block dropped tilted and spinning (Coulomb μ = 0.5, plastic impacts) lands on corners, edges and faces:
    the energy never rises from record to record beyond round-off, no corner goes through the table, and it comes
    to rest flat, its four bottom corners on the table, with the energy Mgc of a block lying on its face."""
    body = block()
    sf = Surface(body, Table(mu=0.5))
    U = np.array([[np.cos(0.3), 0, -np.sin(0.3)], [0, 1.0, 0], [np.sin(0.3), 0, np.cos(0.3)]])
    U = np.array([U[0], np.cross(U[2], U[0]), U[2]])
    U = np.array([[1.0, 0, 0], [0, np.cos(0.2), np.sin(0.2)], [0, -np.sin(0.2), np.cos(0.2)]]) @ U
    st = start_state(sf, (0, 0, 0.05), (0.1, 0, 0), (0, 0, 2.0), U)
    r = run(sf, st, 1.0, 1e-3)
    E = r.energy
    scale = E[0]
    assert np.max(np.diff(E)) <= 1e-13 * scale
    assert gaps_of(sf, r).min() >= -1e-15
    assert np.max(np.abs(r.energy_balance())) <= 1e-6 * scale       # the integration error (second order)
    assert abs(E[-1] - body.mass * G * 0.01) <= 1e-12 * scale
    assert np.max(np.abs(r.v[-1])) <= 1e-12
    # lying flat: the four bottom corners on the table (which of them carry it is statically indeterminate)
    assert np.max(np.abs(sf.gaps(r.x[-1], r.Q[-1])[[0, 2, 4, 6]])) <= 1e-15
    assert any(e.kind.startswith("impact") for e in r.events)


def test_a_tippe_top_reaches_its_stem_and_the_run_goes_on():
    """The literature's tippe top with a stem (a small sphere at 1.15 R on its axis): turning over, the stem
    touches while the ball does (two contacts at once, which used to stop the run); the energy never rises
    (gliding friction only takes), neither the ball nor the stem goes through the table, the error of the phase
    with both contacts falls at second order in dt, and the compiled engine hands such a run to the reference."""
    from pem_physics.engine.contact import surface_run

    I3 = 0.4 * 0.015 * 0.02 ** 2
    R, alpha, gamma = 0.02, 0.3, 0.95
    body = TableBody(0.015, np.diag([gamma * I3, gamma * I3, I3]),
                     [ContactSphere((0, 0, alpha * R), R), ContactSphere((0, 0, (alpha + 1.15) * R), 0.15 * R)],
                     "tippe top")
    sf = Surface(body, Table(mu=0.3, friction="viscous"))
    lam = np.sqrt(0.015 * G * R ** 3 * I3 * alpha) * (1 + alpha) ** 2 / np.sqrt(1 + alpha - gamma)
    spin = 1.5 * lam / (I3 * R * (1 - alpha))
    th = 0.1
    U = np.array([[1.0, 0, 0], [0, np.cos(th), np.sin(th)], [0, -np.sin(th), np.cos(th)]])
    st = start_state(sf, np.array([0, 0, R]) - alpha * R * U[2], (0, 0, 0), spin * U[2], U)
    growth = []
    for dt in (1e-3, 5e-4):
        r = run(sf, st, 6.5, dt, every=int(round(0.01 / dt)), engine="numpy")
        first = next(e.t for e in r.events if e.shape == 1 and e.kind.startswith("impact"))
        assert 5.0 < first < 5.6
        assert r.extra is not None and any(r.extra)
        assert np.max(np.diff(r.energy)) <= 1e-13 * r.energy[0]
        assert gaps_of(sf, r).min() >= -1e-15
        # the integration error the phase with the stem adds: second order, as with one contact
        b = r.energy_balance()
        growth.append(abs(b[-1] - b[np.searchsorted(r.t, first) - 1]))
    assert growth[1] <= growth[0] / 3 and growth[0] <= 1e-6 * r.energy[0]
    if surface_run.compiled_available():
        c = run(sf, st, 6.5, 5e-4, every=20, engine="compiled")
        assert np.array_equal(c.x, r.x) and c.engine == "numpy"


def test_rolling_resistance_with_several_contacts_is_refused_by_name():
    sf = Surface(block(), Table(mu=0.5, rolling_resistance=1e-4))
    with pytest.raises(SimulationError, match=r"rolling_resistance and spin_resistance to 0"):
        start_state(sf, (0, 0, 0.01), (0, 0, 0), (0, 0, 0))
