"""Contacts between pendulums through simulate(): Newton's cradle, pendulums striking pendulums and walls.

Oracles, derived here independently of pem_physics.engine.contact.impulses:
- a ball on a string hinged about y is a physical pendulum, J = (2/5) m r² + m L² about the pivot; released
  at rest from θ₀ it reaches the bottom after a quarter period T/4 = √(J/(m g L)) K(sin²(θ₀/2)) (scipy's
  complete elliptic integral) with ω_in = √(2 m g L (1 − cos θ₀)/J) (energy);
- an impulse j n at the contact point c changes the spin about y of a body pivoted at P by
  a j / J with a = ((c − P) × n)_y; the normal relative velocity of two such bodies is
  ω₁ a₁ − ω₂ a₂, so restitution −e·v_n needs j = −(1 + e) v_n / (a₁²/J₁ + a₂²/J₂) (planar algebra);
- two equal balls, e: outgoing spins ω_in (1 ∓ e)/2; energy lost E (1 − e²)/2.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import ellipk, ellipkinc

from pem_physics import examples, simulate
from pem_physics.engine.backends import compiled, scalar
from pem_physics.engine.integrators import make_integrator
from pem_physics.engine.system import compile_system
from pem_physics.errors import ValidationError
from pem_physics.model.inertia import Sphere
from pem_physics.model.scene import Body, ContactSphere, PairRestitution, Scene, StaticWall

G = 9.81
CRADLE = dict(length=0.3, radius=0.0125, mass=0.065, angle_deg=30.0)


def ball_inertia(m, r, L):
    return 0.4 * m * r * r + m * L * L


def cradle_oracle(angle_deg=30.0, length=0.3, radius=0.0125, mass=0.065):
    """(J, ω_in, T/4, E₀): the released ball's inertia about its pivot, speed at the bottom, time to get there
    and energy above the rest position."""
    J = ball_inertia(mass, radius, length)
    th = np.radians(angle_deg)
    E0 = mass * G * length * (1 - np.cos(th))
    return J, np.sqrt(2 * E0 / J), np.sqrt(J / (mass * G * length)) * ellipk(np.sin(th / 2) ** 2), E0


def body_energy(traj, b, m, J, z_rest):
    """(R,) energy ½Jω_y² + m g Δz of body b (spinning about y, inertia J about its pivot) above its rest
    height, from the recorded ω and centre of mass."""
    return 0.5 * J * traj.omega[:, b, 1] ** 2 + m * G * (traj.center_of_mass[:, b, 2] - z_rest)


def spin_y_change(ev, k, pivot, sign):
    """Angular impulse about y (N·m·s) of event k on the body pivoted at ``pivot`` (sign +1: body1, −1: body2)."""
    return sign * np.cross(np.asarray(ev.point[k]) - pivot, np.asarray(ev.impulse[k]))[1]


# ---------------------------------------------------------------------------- Newton's cradle

@pytest.fixture(scope="module")
def cradle_run():
    scene = examples.newtons_cradle(t_end=0.33, dt=1e-3, **CRADLE)
    return scene, simulate(scene, record_interval=1e-3)


def test_cradle_one_in_one_out(cradle_run):
    scene, traj = cradle_run
    J, w_in, t_quarter, E0 = cradle_oracle(**CRADLE)
    ev = traj.events
    # the compiled engine steps between impacts when numba is there; the numpy contact driver takes every impact
    assert traj.info["engine"] == ("numba" if compiled.available() else "numpy")
    assert "contact driver" in traj.info["contacts"]
    assert [(a, b) for a, b in zip(ev.body1, ev.body2)] == [(f"ball{k}", f"ball{k + 1}") for k in range(1, 5)]
    assert set(ev.kind) == {"impact"} and len(set(ev.t)) == 1
    t_hit = ev.t[0]
    np.testing.assert_array_equal(traj.t, np.arange(len(traj.t)) * 1e-3)  # records stay on the grid
    # located to round-off (measured 3e-15 s; splitting4 is accurate to round-off at this step)
    assert abs(t_hit - t_quarter) < 1e-12, t_hit - t_quarter
    after = traj.t > t_hit
    w = traj.omega[after][:, :, 1]
    assert np.max(np.abs(w[:, :4])) <= 1e-12 * w_in, np.max(np.abs(w[:, :4])) / w_in
    # ball 5 carries the energy: ½Jω² + m g Δz = E₀ at every record after the impact
    E5 = body_energy(traj, 4, CRADLE["mass"], J, traj.pivot[4, 2] - CRADLE["length"])[after]
    assert np.max(np.abs(E5 - E0)) < 1e-12 * E0, np.max(np.abs(E5 - E0)) / E0
    # across the impact (the log's impulses, to round-off): the spins about y sum to the same, ball 1
    # gives all of J ω_in, ball 5 takes it, no energy is lost with e = 1
    pivots = traj.pivot
    dl = np.zeros(5)
    for k in range(len(ev)):
        i, j = int(ev.body1[k][4:]) - 1, int(ev.body2[k][4:]) - 1
        dl[i] += spin_y_change(ev, k, pivots[i], 1.0)
        dl[j] += spin_y_change(ev, k, pivots[j], -1.0)
    assert abs(dl.sum()) <= 1e-15 * J * w_in
    assert np.allclose(dl[1:4], 0.0, atol=1e-15 * J * w_in)
    assert abs(abs(dl[4]) - J * w_in) < 1e-12 * J * w_in and abs(dl[0] + dl[4]) <= 1e-15 * J * w_in
    assert abs(ev.energy_loss) <= 1e-14 * E0


def test_cradle_two_in_two_out():
    scene = examples.newtons_cradle(raised=2, t_end=0.3, dt=1e-3, **CRADLE)
    traj = simulate(scene, record_interval=1e-3)
    J, w_in, t_quarter, E0 = cradle_oracle(**CRADLE)
    ev = traj.events
    assert len(set(ev.t)) == 1 and abs(ev.t[0] - t_quarter) < 1e-12
    after = traj.t > ev.t[0]
    w = traj.omega[after][:, :, 1]
    assert np.max(np.abs(w[:, :3])) <= 1e-12 * w_in
    for b in (3, 4):
        Eb = body_energy(traj, b, CRADLE["mass"], J, traj.pivot[b, 2] - CRADLE["length"])[after]
        assert np.max(np.abs(Eb - E0)) < 1e-12 * E0


@pytest.mark.parametrize("e", [0.0, 0.6])
def test_two_balls_with_restitution(e):
    """Two equal balls: the outgoing spins are ω_in(1 ∓ e)/2, the impacts take E₀(1 − e²)/2."""
    scene = examples.newtons_cradle(n=2, restitution=e, t_end=0.33, dt=1e-3, **CRADLE)
    traj = simulate(scene, record_interval=1e-3)
    J, w_in, t_quarter, E0 = cradle_oracle(**CRADLE)
    ev = traj.events
    assert len(ev) == 1 and abs(ev.t[0] - t_quarter) < 1e-12
    after = traj.t > ev.t[0]
    m = CRADLE["mass"]
    for b, f in ((0, (1 - e) / 2), (1, (1 + e) / 2)):
        Eb = body_energy(traj, b, m, J, traj.pivot[b, 2] - CRADLE["length"])[after]
        assert np.max(np.abs(Eb - f * f * E0)) < 1e-12 * E0
    lost = E0 * (1 - e * e) / 2
    assert abs(ev.energy_loss - lost) < 1e-12 * E0
    assert np.all(traj.impact_loss[after] == ev.energy_loss) and np.all(traj.impact_loss[~after] == 0)
    assert traj.energy_balance() < 1e-12 and traj.info["warnings"] == []


def test_energy_conserved_over_several_impacts():
    """e = 1, three impact groups (out, back, out): total energy to the integrator's accuracy."""
    scene = examples.newtons_cradle(t_end=1.2, dt=1e-3, **CRADLE)
    traj = simulate(scene)
    assert len(set(traj.events.t)) == 2
    E = traj.total_energy
    _, _, _, E0 = cradle_oracle(**CRADLE)
    assert np.max(np.abs(E - E[0])) < 1e-12 * E0  # measured 9e-15 (splitting2: 8e-6)
    assert traj.energy_balance() < 1e-12


# ---------------------------------------------------------------------------- pendulum strikes pendulum

def test_pendulum_strikes_pendulum():
    """The colliding-pendulums example against the planar impulse about the two pivots (module docstring)."""
    e, gap, theta0 = 0.9, 0.002, np.radians(35.0)
    scene = examples.colliding_pendulums(angle_deg=35.0, restitution=e, gap=gap, t_end=0.6)
    traj = simulate(scene, record_interval=1e-3)
    m1, r1, L1, P1 = 0.2, 0.03, 0.5, np.array([0.0, 0.0, 1.0])
    m2, r2, L2, P2 = 0.05, 0.02, 0.3, np.array([0.05 + gap, 0.0, 0.8])
    J1, J2 = ball_inertia(m1, r1, L1), ball_inertia(m2, r2, L2)
    c2 = P2 + np.array([0.0, 0.0, -L2])

    def centre1(alpha):  # heavy bob at angle alpha from the vertical, towards +x
        return P1 + L1 * np.array([np.sin(alpha), 0.0, -np.cos(alpha)])

    alpha = brentq(lambda a: np.linalg.norm(centre1(a) - c2) - r1 - r2, -theta0, 0.2, xtol=1e-15)
    # spin about y: ω_y < 0 moves a hanging bob towards +x (ŷ × (−ẑ) = −x̂)
    w1 = -np.sqrt(2 * m1 * G * L1 * (np.cos(alpha) - np.cos(theta0)) / J1)
    k = np.sin(theta0 / 2)
    t_hit = np.sqrt(J1 / (m1 * G * L1)) * (ellipkinc(np.arcsin(np.sin(alpha / 2) / k), k * k) + ellipk(k * k))
    n = (centre1(alpha) - c2) / (r1 + r2)
    c = c2 + r2 * n
    a1, a2 = np.cross(c - P1, n)[1], np.cross(c - P2, n)[1]
    vn = w1 * a1
    j = -(1 + e) * vn / (a1 * a1 / J1 + a2 * a2 / J2)
    w1_out, w2_out = w1 + a1 * j / J1, -a2 * j / J2

    ev = traj.events
    assert len(ev) == 1 and (ev.body1[0], ev.body2[0]) == ("heavy", "light")
    assert abs(ev.t[0] - t_hit) < 1e-12, ev.t[0] - t_hit
    assert np.allclose(ev.impulse[0], j * n, rtol=0, atol=1e-12 * abs(j))
    assert np.allclose(ev.point[0], c, rtol=0, atol=1e-12)
    # after the impact each pendulum keeps its own energy: compare with the oracle's outgoing spins
    after = traj.t > ev.t[0]
    E1 = body_energy(traj, 0, m1, J1, P1[2] - L1)[after]
    E2 = body_energy(traj, 1, m2, J2, P2[2] - L2)[after]
    E1_out = 0.5 * J1 * w1_out**2 + m1 * G * L1 * (1 - np.cos(alpha))
    scale = m1 * G * L1 * (1 - np.cos(theta0))
    assert np.max(np.abs(E1 - E1_out)) < 1e-12 * scale
    assert np.max(np.abs(E2 - 0.5 * J2 * w2_out**2)) < 1e-12 * scale
    assert abs(ev.energy_loss - (0.5 * J1 * w1**2 - 0.5 * J1 * w1_out**2 - 0.5 * J2 * w2_out**2)) < 1e-12 * scale


def test_impact_time_converges_with_the_step():
    """The located impact time does not depend on dt beyond the integrator's error (much smaller step)."""
    scene = examples.colliding_pendulums(t_end=0.4)
    t1 = simulate(scene, dt=2e-3).events.t[0]
    t2 = simulate(scene, dt=5e-4).events.t[0]
    assert abs(t1 - t2) < 1e-12, t1 - t2  # measured 2.5e-14 s


def test_pendulum_bounces_off_a_wall():
    """A hinged ball released at 30° strikes a vertical plane where it hangs: e = 0.5 returns e² of the energy."""
    scene = examples.newtons_cradle(n=1, t_end=0.33, dt=1e-3, **CRADLE)
    r = CRADLE["radius"]
    scene.walls = (StaticWall(kind="plane", name="stop", point=(r, 0.0, 0.0), normal=(-1.0, 0.0, 0.0),
                              restitution=0.5),)
    traj = simulate(scene, record_interval=1e-3)
    J, _, t_quarter, E0 = cradle_oracle(**CRADLE)
    ev = traj.events
    assert len(ev) == 1 and (ev.body1[0], ev.body2[0]) == ("ball1", "stop")
    assert abs(ev.t[0] - t_quarter) < 1e-12
    assert np.allclose(ev.normal[0], (-1.0, 0.0, 0.0))
    after = traj.t > ev.t[0]
    E = body_energy(traj, 0, CRADLE["mass"], J, traj.pivot[0, 2] - CRADLE["length"])[after]
    assert np.max(np.abs(E - 0.25 * E0)) < 1e-12 * E0


def test_pair_restitution_overrides_the_bodies():
    scene = examples.newtons_cradle(n=2, restitution=1.0, t_end=0.33, dt=1e-3, **CRADLE)
    scene.bodies[1].restitution = 0.2
    traj = simulate(scene)
    _, _, _, E0 = cradle_oracle(**CRADLE)
    assert abs(traj.events.energy_loss - E0 * (1 - 0.2**2) / 2) < 1e-12 * E0  # the smaller e of the two
    scene.pair_restitution = (PairRestitution(("ball1", "ball2"), 0.6),)
    traj = simulate(scene)
    assert abs(traj.events.energy_loss - E0 * (1 - 0.6**2) / 2) < 1e-12 * E0


def test_the_pairs_and_their_coefficients_are_those_of_a_double_loop():
    """ContactModel enumerates its sphere pairs with arrays (half a million for 1000 marbles); a plain double loop over
    the spheres — the second method — gives the same pairs in the same order, with the same e (a pair_restitution
    entry naming both bodies, else the pair rule), μ (the pair rule) and scale (r_a + r_b): marbles of their own e and
    μ, or the scene's, two named pairs (one in either order) and one entry naming a wall; a body with two spheres has
    no pair of its own; two fixed spheres none."""
    from pem_physics.engine.contact.model import ContactModel, item_coefficients, pair_coefficients

    rng = np.random.default_rng(3)
    bodies = [Body(name=f"m{k}", role="free", translate=True, position=(0.03 * k, 0.0, 0.0),
                   shapes=(Sphere(radius=0.01, mass=0.01),), restitution=float(rng.uniform(0.3, 1)) if k % 3 else None,
                   contact_friction=float(rng.uniform(0, 0.5)) if k % 2 else None,
                   contacts=(ContactSphere((0.0, 0.0, 0.0), 0.01),) + ((ContactSphere((0.0, 0.0, 0.0), 0.005),)
                                                                       if k == 4 else ()))
              for k in range(9)]
    bodies += [Body(name=f"post{k}", role="fixed", position=(0.0, 0.5 + 0.1 * k, 0.0),
                    shapes=(Sphere(radius=0.01, mass=0.01),), contacts=(ContactSphere((0.0, 0.0, 0.0), 0.02),))
               for k in range(2)]
    floor = StaticWall(kind="plane", name="floor", point=(0.0, 0.0, -1.0), normal=(0.0, 0.0, 1.0))
    scene = Scene(name="pairs", bodies=bodies, walls=(floor,), restitution=0.7, contact_friction=0.3,
                  pair_restitution=(PairRestitution(("m1", "m2"), 0.123), PairRestitution(("m7", "m3"), 0.456),
                                    PairRestitution(("m5", "floor"), 0.2))).checked()
    model = ContactModel(scene, compile_system(scene))
    items = [item_coefficients(b) for b in scene.bodies for _ in b.contacts]
    pair_e = {frozenset(p.names): p.restitution for p in scene.pair_restitution}
    expect = []
    for a in range(len(items)):
        for b in range(a + 1, len(items)):
            if items[a][0] != items[b][0] and not (model.owner[a] < 0 and model.owner[b] < 0):
                e, mu = pair_coefficients(scene, pair_e, items[a], items[b])
                expect.append(((a, b), e, mu, model.radius[a] + model.radius[b]))
    n = model.n_sphere_pairs
    assert n == len(expect) == 10 * 9 // 2 - 1 + 10 * 2 and {0.123, 0.456} <= set(model.e[:n].tolist())
    assert [(p, e, mu, sc) for p, e, mu, sc in zip(model.pairs[:n], model.e[:n].tolist(), model.mu[:n].tolist(),
                                                   model.scale[:n].tolist())] == expect


# ---------------------------------------------------------------------------- engines and bad input

def test_engines_for_contact_scenes():
    """The scalar engine declines contact scenes; the compiled one takes single non-translating splitting scenes
    (it stops at each impact for the numpy driver: tests/engine/test_compiled_contacts.py)."""
    scene = examples.newtons_cradle().checked()
    system = compile_system(scene)
    integ = make_integrator("splitting4", system, 1e-3, system.U0[None], system.omega0[None])
    integ.contacts = object()
    assert not scalar.supported(integ)
    assert compiled.supports(integ) == compiled.available()
    U0, w0 = system.U0[None].repeat(2, 0), system.omega0[None].repeat(2, 0)
    ensemble = make_integrator("splitting4", system, 1e-3, U0, w0)
    ensemble.contacts = object()
    assert not compiled.supports(ensemble)


def cradle(**kw):
    return examples.newtons_cradle(t_end=0.01, **kw)


def test_bad_contact_input_is_named():
    scene = cradle()
    scene.bodies[2].contacts = (ContactSphere((0, 0, -0.3), 0.0),)
    with pytest.raises(ValidationError, match=r"^bodies\[2\]\.contacts\[0\]\.radius: expected > 0"):
        scene.checked()
    with pytest.raises(ValidationError, match=r"^restitution: expected 0 ≤ e ≤ 1"):
        cradle(restitution=1.5).checked()
    scene = cradle()
    scene.bodies[1].restitution = -0.1
    with pytest.raises(ValidationError, match=r"^bodies\[1\]\.restitution: expected 0 ≤ e ≤ 1"):
        scene.checked()
    scene = cradle()
    scene.pair_restitution = (PairRestitution(("ball1", "ball9"), 0.5),)
    with pytest.raises(ValidationError, match=r"^pair_restitution\[0\]\.names\[1\]: no body or wall is called"):
        scene.checked()
    scene = cradle()
    scene.bodies[0].role = "free"
    scene.bodies[0].hinge = None
    with pytest.raises(ValidationError, match=r"^bodies\[0\]\.contacts: only pendulum, fixed and translating free "):
        scene.checked()


def test_overlaps_at_the_start_name_both_items():
    scene = cradle()
    scene.bodies[3].position = (0.075 - 0.001, 0.0, scene.bodies[3].position[2])  # 1 mm into ball 3
    with pytest.raises(ValidationError, match=r"^bodies\[2\]\.contacts\[0\] and bodies\[3\]\.contacts\[0\]: "
                                              r"the contact spheres of 'ball3' and 'ball4' overlap"):
        simulate(scene)
    scene = cradle()
    scene.walls = (StaticWall(kind="plane", name="floor", point=(0, 0, 0.1), normal=(0, 0, 1)),)
    with pytest.raises(ValidationError, match=r"^bodies\[0\]\.contacts\[0\] and walls\[0\]: the contact sphere of "
                                              r"'ball1' lies .* past wall 'floor', on the side it may not enter"):
        simulate(scene)


@pytest.mark.parametrize("where, refused", [
    ((1e90, 0.0, 0.0), True),      # the audit's case: accepted, and the ball ran
    ((0.0, 0.0, 12.7), True),      # just beyond a thousand times the ball's radius of gyration √(2/5)·2 cm
    ((0.0, 0.0, 12.6), False),     # a lopsided body's far sphere (a thousand sizes) is still taken
    ((0.0, 0.0, -0.02), False),    # on the ball's surface
])
def test_a_contact_sphere_far_off_its_body_is_refused(where, refused):
    """A contact sphere centred 1e90 m from its 2 cm ball was taken: refused by name like a rim, the bound a
    thousand times the body's size — here its radius of gyration √(2/5) R = 1.265 cm (solid sphere, by hand),
    larger than the 2 mm contact sphere's radius."""
    R, M = 0.02, 0.1
    size = np.sqrt(0.4) * R
    ball = Body(name="ball", role="free", translate=True, shapes=(Sphere(R, mass=M),),
                contacts=(ContactSphere(where, 0.1 * R),))
    scene = Scene(bodies=[ball])
    if not refused:
        assert scene.checked().bodies[0].contacts[0].center[2] == where[2]
        return
    with pytest.raises(ValidationError) as err:
        scene.checked()
    assert err.value.path == "bodies[0].contacts[0].center"
    said = str(err.value)
    d = np.linalg.norm(where)
    assert f"the contact sphere #0 of 'ball' is centred {d:.3g} m from the body's centre of mass" in said
    assert f"beyond 1000 times the body's size ({size:.3g} m" in said
    assert "give its centre on the body, in body coordinates (m)" in said


def test_methods_and_ensembles_without_contact_support_are_refused():
    from pem_physics.engine.simulate import Ensemble

    with pytest.raises(ValidationError, match=r"^settings\.method: scenes with contacts run with splitting4"):
        simulate(cradle(), method="pem-rk4")
    with pytest.raises(ValidationError, match=r"^ensemble: scenes with contacts run one member at a time"):
        simulate(cradle(), ensemble=Ensemble(friction=np.zeros(2)))


def test_fixed_body_spheres_are_obstacles():
    """A fixed body's sphere acts like a wall: the ball bounces back with e = 1 at the quarter period."""
    scene = examples.newtons_cradle(n=1, t_end=0.33, dt=1e-3, **CRADLE)
    r, L = CRADLE["radius"], CRADLE["length"]
    z = scene.bodies[0].position[2] - L
    scene.bodies.append(Body(name="post", role="fixed", position=(2 * r, 0.0, z),
                             contacts=(ContactSphere((0, 0, 0), r),)))
    traj = simulate(scene, record_interval=1e-3)
    _, w_in, t_quarter, _ = cradle_oracle(**CRADLE)
    ev = traj.events
    assert len(ev) == 1 and (ev.body1[0], ev.body2[0]) == ("ball1", "post")
    assert abs(ev.t[0] - t_quarter) < 1e-12
    i = np.searchsorted(traj.t, ev.t[0])
    assert traj.omega[i - 1, 0, 1] * traj.omega[i, 0, 1] < 0  # turned back


def test_progress_and_stop_work_with_contacts(monkeypatch):
    monkeypatch.setattr(compiled, "ENABLED", False)  # the numpy driver (the compiled one polls once a kernel call)
    seen = []
    traj = simulate(cradle(), progress=seen.append, stop=lambda: len(seen) >= 3, record_interval=1e-3)
    # stop() is polled after every step: the step after the third record ends the run with a partial record
    assert not traj.complete and seen == pytest.approx([0.1, 0.2, 0.3])
    np.testing.assert_allclose(traj.t, [0.0, 1e-3, 2e-3, 3e-3, 4e-3], rtol=1e-15)


def test_contact_messages_name_both_sides_a_wall_by_its_name():
    """The chatter error said "a resting contact between pendulums" whatever chattered (a pendulum on a wall too),
    and an impulse error called every fixed side 'wall' (a fixed body too): each names the actual two sides."""
    from pem_physics.engine.contact import driver
    from pem_physics.engine.contact.impulses import Contact, ContactBody, resolve_contacts
    from pem_physics.engine.contact.model import ContactModel
    from pem_physics.errors import SimulationError

    scene = examples.newtons_cradle(n=1)
    scene.walls = (StaticWall(kind="plane", name="stop", point=(0.0125, 0.0, 0.0), normal=(-1.0, 0.0, 0.0)),)
    scene.bodies.append(Body(name="post", role="fixed", position=(-0.2, 0.0, 0.06),
                             contacts=(ContactSphere((0.0, 0.0, 0.0), 0.01),)))
    scene = scene.checked()
    model = ContactModel(scene, compile_system(scene))
    said = driver.chatter_message(model, [model.n_sphere_pairs, 0], 1.0)
    assert "the contacts of 'ball1' and 'post'; 'ball1' and wall 'stop' chatter" in said, said
    assert "between pendulums" not in said
    # a pendulum with no inverse inertia, approaching a fixed side: named by the name the driver passes
    ball = ContactBody("pendulum", np.inf, np.zeros(3), np.zeros((3, 3)), np.zeros(3), np.array([0.0, 1.0, 0.0]),
                       "ball1")
    touch = Contact(0, None, np.array([0.0, 0.0, -1.0]), np.array([1.0, 0.0, 0.0]))
    with pytest.raises(SimulationError, match="contact 'ball1'–'post': no effective mass"):
        resolve_contacts([ball], [touch], fixed_names=["post"])


@pytest.mark.parametrize("engine", ["numpy", "compiled"])
def test_a_contact_pressed_without_an_impact_is_warned_of_by_the_bodies_names(engine, monkeypatch):
    """A ball hung at 30° leaning on a wall: gravity presses it on without an impact. The warning named the contact
    labels (``bodies[0].contacts[0] and walls[0]``); it names the body and the wall as the scene calls them."""
    if engine == "numpy":
        monkeypatch.setattr(compiled, "ENABLED", False)
    L, r = CRADLE["length"], CRADLE["radius"]
    scene = examples.newtons_cradle(n=1, t_end=0.02, dt=1e-3, **CRADLE)
    x = -L * np.sin(np.radians(CRADLE["angle_deg"])) + r   # the wall's face where the raised ball's side is
    scene.walls = (StaticWall(kind="plane", name="stop", point=(x, 0.0, 0.0), normal=(-1.0, 0.0, 0.0)),)
    said = [w for w in simulate(scene).info["warnings"] if "press on each other" in w]
    assert len(said) == 1 and said[0].startswith("'ball1' and wall 'stop' press on each other without an impact "
                                                 "from t = "), said
    assert "bodies[" not in said[0] and "walls[" not in said[0]
