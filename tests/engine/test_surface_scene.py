"""Scenes with contact_model = "surface": scene files, simulate(), the trajectory and the CLI.

The closed forms are the billiard ball's (its slip falls at (7/2)μg); the geometry checks place the contact shape on
the table from the trajectory alone (position + b @ orientation), independently of the stage's own bookkeeping.
"""

import csv
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from pem_physics import examples, simulate
from pem_physics.errors import ValidationError
from pem_physics.io.scene_writer import dumps
from pem_physics.io.scenefile import loads
from pem_physics.model.scene import ContactRim

from conftest import ROOT

G = 9.81

# a billiard ball in centimetres and grams (the units must reach the surface stage converted)
BALL_CM = """
format = "pem-scene"
version = 1
gravity = [0, 0, -981]
contact_model = "surface"
contact_friction = 0.2
restitution = 0
[units]
length = 0.01
mass = 0.001
[settings]
dt = 0.001
t_end = 0.6
[[bodies]]
name = "ball"
role = "free"
translate = true
position = [0, 0, 2.8575]
velocity = [150, 0, 0]
[[bodies.shapes]]
kind = "sphere"
radius = 2.8575
mass = 170
[[bodies.contacts]]
radius = 2.8575
[[walls]]
kind = "plane"
name = "cloth"
normal = [0, 0, 1]
"""


def test_billiard_ball_scene_in_centimetres_follows_the_closed_form():
    traj = simulate(loads(BALL_CM))
    v0, mu, a = 1.5, 0.2, 0.028575
    t_star = 2 * v0 / (7 * mu * G)
    ev = traj.events
    assert ev.kind == ["stick"] and ev.body1 == ["ball"] and ev.body2 == ["cloth"]
    assert abs(ev.t[0] - t_star) <= 1e-9 * t_star
    assert abs(traj.velocity[-1, 0, 0] - 5 * v0 / 7) <= 1e-9 * v0
    assert traj.method == "surface" and traj.complete and traj.info["engine"] in ("numpy", "numba")
    assert traj.energy_balance() <= 1e-12
    # friction took (2/7)·½Mv₀² (rolling at 5v₀/7 keeps (5/7)²·(7/5)·½Mv₀² = (5/7)·½Mv₀²)
    assert abs(traj.impact_loss[-1] - 0.17 * v0 ** 2 / 7) <= 1e-12 * 0.17 * v0 ** 2
    # the pose at the stick event is the ball's there (for the bake's sub-frame key)
    x_star = v0 * t_star - 0.5 * mu * G * t_star ** 2
    assert abs(ev.position[0][0][0] - x_star) <= 1e-9 and abs(ev.position[0][0][2] - a) <= 1e-12


def _stick_time(text: str) -> float:
    ev = simulate(loads(text)).events
    assert ev.kind == ["stick"], ev.kind
    return ev.t[0]


@pytest.mark.parametrize("scene_mu, table_mu, ball_mu, mu", [
    (None, 0.2, None, 0.2),      # the table alone sets μ: it applies (the scene's default 0 is not the ball's)
    (0.05, 0.2, None, 0.2),      # … however small the scene's
    (0.9, None, 0.2, 0.2),       # the ball alone sets it
    (0.05, 0.3, 0.2, 0.2),       # both: the smaller
    (0.2, None, None, 0.2),      # neither: the scene's
], ids=["table only", "table over the scene's", "ball only", "both", "neither"])
def test_the_tables_own_friction_applies_to_a_ball_that_sets_none(scene_mu, table_mu, ball_mu, mu):
    """The billiard ball's closed form t* = 2v₀/(7μg) with μ from the pair rule: unset is not zero."""
    text = _edit(BALL_CM, "contact_friction = 0.2\n", "" if scene_mu is None else f"contact_friction = {scene_mu}\n")
    if table_mu is not None:
        text = _edit(text, 'name = "cloth"', f'name = "cloth"\ncontact_friction = {table_mu}')
    if ball_mu is not None:
        text = _edit(text, 'translate = true', f'translate = true\ncontact_friction = {ball_mu}')
    t_star = 2 * 1.5 / (7 * mu * G)
    assert abs(_stick_time(text) - t_star) <= 1e-9 * t_star


def test_a_table_without_friction_says_the_ball_will_never_roll():
    traj = simulate(loads(_edit(BALL_CM, "contact_friction = 0.2\n", "")))
    assert traj.events.kind == []
    assert any("'ball' on 'cloth' has friction μ 0" in w and "never rolls" in w for w in traj.info["warnings"])
    assert not simulate(loads(BALL_CM)).info["warnings"]


def test_a_gliding_table_without_friction_says_the_ball_will_never_roll():
    """The gliding law with gliding_friction = 0 (s/m) is as frictionless as Coulomb's μ 0: said the same way,
    naming the gliding law's own setting (not Coulomb's contact_friction, which a gliding table refuses)."""
    traj = simulate(loads(_edit(_edit(BALL_CM, 'name = "cloth"', GLIDE), "gliding_friction = 0.003",
                                "gliding_friction = 0")))
    assert traj.events.kind == []
    said = [w for w in traj.info["warnings"] if "never rolls" in w]
    assert len(said) == 1 and "'ball' on 'cloth' has gliding_friction = 0 s/m" in said[0], traj.info["warnings"]
    assert "set the table's gliding_friction above 0" in said[0] and "contact_friction" not in said[0]
    assert not simulate(loads(_edit(BALL_CM, 'name = "cloth"', GLIDE))).info["warnings"]


GLIDE = 'name = "cloth"\nfriction_law = "viscous"\ngliding_friction = 0.003'   # s/cm: 0.3 s/m


def test_gliding_friction_is_read_in_the_files_units():
    """0.003 s/cm and 3 ms/cm are 0.3 s/m; the ball slides under F = −μ_g·N·u, its slip u decaying as
    exp(−(7/2)μ_g g t) and its speed v₀ − (2/7)u₀(1 − exp(−(7/2)μ_g g t)) (Newton for a uniform ball)."""
    cm = _edit(_edit(BALL_CM, 'name = "cloth"', GLIDE), "contact_friction = 0.2\n", "")
    assert loads(cm).walls[0].gliding_friction == pytest.approx(0.3, rel=1e-15)
    ms = _edit(_edit(cm, "gliding_friction = 0.003", "gliding_friction = 3"), "mass = 0.001",
               "mass = 0.001\ntime = 0.001")
    assert loads(ms).walls[0].gliding_friction == pytest.approx(0.3, rel=1e-15)
    traj = simulate(loads(cm))
    v0, t = 1.5, traj.t[-1]
    expect = v0 - 2 / 7 * v0 * (1 - np.exp(-3.5 * 0.3 * G * t))
    # the integration error, bounded by (rate·dt)² v₀: a μ_g off by the units (×100) would miss by ~0.4 m/s
    assert abs(traj.velocity[-1, 0, 0] - expect) <= (3.5 * 0.3 * G * 1e-3) ** 2 * v0


@pytest.mark.parametrize("edits, path, words", [
    ([('name = "cloth"', 'name = "cloth"\nfriction_law = "viscous"\ncontact_friction = 0.3')],
     r"walls\[0\]\.contact_friction", "rename the key to gliding_friction"),
    ([('name = "cloth"', 'name = "cloth"\nfriction_law = "viscous"')],
     r"walls\[0\]\.gliding_friction", "needs the table's gliding friction"),
    ([('name = "cloth"', 'name = "cloth"\nfriction_law = "coulomb"\ngliding_friction = 0.3')],
     r"walls\[0\]\.gliding_friction", "a Coulomb table takes contact_friction"),
    ([('name = "cloth"', GLIDE), ('translate = true', 'translate = true\ncontact_friction = 0.2')],
     r"bodies\[0\]\.contact_friction", "rubs by gliding friction"),
    ([('name = "cloth"', GLIDE), ('contact_model = "surface"', 'contact_model = "impacts"')],
     r"walls\[0\]\.gliding_friction", "surface\" only"),
])
def test_a_pair_never_mixes_the_two_laws_units(edits, path, words):
    """Coulomb's μ (dimensionless) and the gliding μ (s/m) are never compared or swapped: each mix is refused by
    name with its fix."""
    text = BALL_CM
    for old, new in edits:
        text = _edit(text, old, new)
    with pytest.raises(ValidationError) as err:
        simulate(loads(text))
    assert re.fullmatch(path, err.value.path), (err.value.path, str(err.value))
    assert words in str(err.value)


def test_the_scenes_coulomb_default_does_not_reach_a_gliding_table():
    """The scene's μ 0.2 is Coulomb's; on a gliding table the ball (setting none) takes the table's μ_g alone:
    the same run with the scene's μ 0 or 0.2."""
    text = _edit(BALL_CM, 'name = "cloth"', GLIDE)
    a, b = simulate(loads(text)), simulate(loads(_edit(text, "contact_friction = 0.2\n", "")))
    np.testing.assert_array_equal(a.velocity, b.velocity)


@pytest.mark.parametrize("name", ["rolling-coin", "tippe-top"])
def test_trajectory_keeps_the_contact_shape_on_the_table(name):
    """From the trajectory alone: the contact shape's lowest point (position + b @ orientation, b about the centre
    of mass) is on the table at every record, and the quaternion is the orientation."""
    scene = examples.build(name, **({"t_end": 1.0} if name == "tippe-top" else {"turns": 0.5}))
    traj = simulate(scene)
    body = scene.bodies[0]
    com = np.asarray(body.resolved_mass_properties("b").center_of_mass)
    c = body.contacts[0]
    centre = traj.position[:, 0] + (np.asarray(c.center) - com) @ traj.orientation[:, 0]
    if isinstance(c, ContactRim):
        axis = np.asarray(c.axis) @ traj.orientation[:, 0]
        m = np.array([0, 0, 1.0]) - axis[:, 2:3] * axis
        low = centre[:, 2] - c.radius * np.linalg.norm(m, axis=1)
    else:
        low = centre[:, 2] - c.radius
    assert np.max(np.abs(low)) <= 1e-12
    w, x, y, z = np.moveaxis(traj.quaternion[:, 0], -1, 0)
    R = np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                  np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                  np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)
    # body → lab rotation: its columns are the body axes, the rows of ``orientation``
    assert np.allclose(R, np.swapaxes(traj.orientation[:, 0], -1, -2), atol=1e-12)


@pytest.mark.parametrize("where, refused", [
    ((1e90, 0.0, 0.0), True),      # the audit's case: accepted, and the coin ran
    ((0.0, 0.0, 13.0), True),      # just beyond a thousand times the coin's 1.25 cm radius
    ((0.0, 0.0, 12.0), False),     # a lopsided body's far rim (a thousand sizes) is still taken
    ((0.0, 0.0, 0.001), False),    # a rim a millimetre off the coin's middle plane
])
def test_a_rim_far_off_the_body_is_refused_by_the_core(where, refused):
    """A scene file's rim whose centre is 1e90 m from its 2.5 cm coin was taken (only the add-on checks rims, against
    the mesh): refused by name, with the bound taken from the body's own size (its radius of gyration or contact
    radius, ×1000), so that a legitimate rim is never refused."""
    from dataclasses import replace

    from pem_physics.model.scene import CONTACT_REACH

    scene = examples.build("rolling-coin")
    coin = scene.bodies[0]
    rim = replace(coin.contacts[0], center=where)
    far = replace(scene, bodies=[replace(coin, contacts=(rim,))] + list(scene.bodies[1:]))
    if not refused:
        assert far.checked().bodies[0].contacts[0].center[2] == where[2]
        return
    with pytest.raises(ValidationError) as err:
        far.checked()
    assert err.value.path == "bodies[0].contacts[0].center"
    said = str(err.value)
    assert "the contact rim #0 of 'coin'" in said
    assert f"beyond {CONTACT_REACH:g} times the body's size (0.0125 m" in said
    assert "give its centre on the body, in body coordinates (m)" in said


def test_scene_file_round_trip_keeps_rims_laws_and_model():
    for name in ("rolling-coin", "tippe-top", "billiard-ball"):
        scene = examples.build(name).checked()
        again = loads(dumps(scene))
        assert again.contact_model == "surface"
        assert again.walls[0].friction_law == scene.walls[0].friction_law
        assert again.walls[0].gliding_friction == scene.walls[0].gliding_friction
        assert again.walls[0].contact_friction == scene.walls[0].contact_friction
        assert type(again.bodies[0].contacts[0]) is type(scene.bodies[0].contacts[0])
    coin = loads(dumps(examples.build("rolling-coin")))
    assert isinstance(coin.bodies[0].contacts[0], ContactRim)
    np.testing.assert_array_equal(coin.bodies[0].contacts[0].axis, [0, 0, 1])


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


@pytest.mark.parametrize("old, new, path, words", [
    ('name = "cloth"', 'name = "cloth"\nfriction_law = "viscous"\n', r"walls\[0\]\.friction_law", None),
    ('translate = true\nposition = [0, 0, 2.8575]\nvelocity = [150, 0, 0]', 'translate = false',
     r"bodies\[0\]\.contacts", "translate = true"),
    ('kind = "plane"\nname = "cloth"\nnormal = [0, 0, 1]',
     'kind = "sphere"\nname = "dome"\nradius = 100\ninside = false',
     r"bodies\[0\]\.position", "starts inside the sphere 'dome'"),
    ('kind = "plane"\nname = "cloth"\nnormal = [0, 0, 1]', 'kind = "plane"\nname = "cloth"\nnormal = [0, 0, 1]\n'
     '[[walls]]\nkind = "plane"\nname = "cushion"\npoint = [100, 0, 0]\nnormal = [-1, 0, 0]', r"walls", "exactly one"),
    ('position = [0, 0, 2.8575]', 'position = [0, 0, 2.8]', r"bodies\[0\]\.contacts\[0\]", "inside 'cloth'"),
    ('[[bodies.contacts]]', '[[bodies.dipoles]]\nmoment = [0, 0, 1]\n[[bodies.contacts]]',
     r"bodies\[0\]\.dipoles", "magnets"),
    ('contact_friction = 0.2', 'contact_friction = 0.2\nfriction = 0.001', r"friction", "pivot friction"),
    ('contact_model = "surface"', 'contact_model = "rolling"', r"contact_model", "surface"),
    ('position = [0, 0, 2.8575]', 'position = [0, 0, -50]', r"bodies\[0\]\.position", "starts behind the plane"),
    ('name = "cloth"', 'name = "cloth"\nrolling_resistance = 1000', r"walls\[0\]\.rolling_resistance",
     "longer than the body's contact radius"),
    ('name = "cloth"', 'name = "cloth"\nspin_resistance = 3', r"walls\[0\]\.spin_resistance",
     "longer than the body's contact radius"),
])
def test_scenes_outside_the_surface_model_are_refused_by_name(old, new, path, words):
    text = _edit(BALL_CM, old, new)
    if "friction_law" in new:
        text = _edit(text, 'contact_model = "surface"', 'contact_model = "impacts"')
    with pytest.raises(ValidationError) as err:
        simulate(loads(text))
    assert err.value.path is not None
    assert re.fullmatch(path, err.value.path), (err.value.path, str(err.value))
    if words:
        assert words in str(err.value)


def test_a_rim_needs_the_surface_model():
    text = _edit(BALL_CM, 'contact_model = "surface"', 'contact_model = "impacts"') + (
        '[[bodies]]\nname = "coin"\nrole = "free"\ntranslate = true\nposition = [10, 0, 5]\n'
        '[[bodies.shapes]]\nkind = "sphere"\nradius = 1\nmass = 1\n[[bodies.contacts]]\nradius = 1\naxis = [0, 0, 1]\n')
    with pytest.raises(ValidationError, match=r"^bodies\[1\]\.contacts\[0\]: a rim .*contact_model = \"surface\""):
        loads(text)


def test_two_moving_bodies_are_refused():
    text = BALL_CM + ('\n[[bodies]]\nname = "b2"\nrole = "free"\n'
                      '[[bodies.shapes]]\nkind = "sphere"\nradius = 1\nmass = 1\n')
    with pytest.raises(ValidationError, match=r"contact_model: the surface model moves one body"):
        simulate(loads(text))


def test_ensembles_are_refused():
    from pem_physics.engine.simulate import Ensemble

    with pytest.raises(ValidationError, match="one member at a time"):
        simulate(loads(BALL_CM), ensemble=Ensemble(angular_velocity=np.zeros((2, 1, 3))))


def test_cli_run_writes_the_contact_events(tmp_path):
    scene = tmp_path / "ball.toml"
    scene.write_text(BALL_CM, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "pem_physics", "run", str(scene), "-o", str(tmp_path / "out"), "-q"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["method"] == "surface" and summary["events"] == {"stick": 1}
    assert summary["impacts"] == 0                 # a stick is a change of the contact, not an impact
    with open(tmp_path / "out" / "events.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["kind"] for r in rows] == ["stick"]
    assert abs(float(rows[0]["t"]) - 2 * 1.5 / (7 * 0.2 * G)) <= 1e-9


def test_rolling_resistance_in_a_scene_file_in_centimetres():
    """A wall's rolling_resistance is a length (here 0.1 cm): the ball, set rolling, slows at (5/7)g·δ/r and rests
    after v₀²/(2a); the key survives a round trip and is refused under contact_model = "impacts"."""
    text = _edit(BALL_CM, 'velocity = [150, 0, 0]', 'velocity = [150, 0, 0]\nangular_velocity = [0, 52.4934383202, 0]')
    text = _edit(text, 'name = "cloth"', 'name = "cloth"\nrolling_resistance = 0.1')
    text = _edit(text, 't_end = 0.6', 't_end = 6.5')
    scene = loads(text)
    assert scene.walls[0].rolling_resistance == pytest.approx(0.001, rel=1e-15)
    traj = simulate(scene)
    v0, a, r = 1.5, (5 / 7) * G * 0.001 / 0.028575, 0.028575
    assert abs(1.5 - 52.4934383202 * r) < 1e-9
    assert traj.events.kind == []
    assert traj.position[-1, 0, 0] == pytest.approx(v0 ** 2 / (2 * a), abs=a * 1e-3 ** 2 + 1e-8)
    assert np.linalg.norm(traj.velocity[-1, 0]) <= 1e-12
    assert loads(dumps(scene)).walls[0].rolling_resistance == scene.walls[0].rolling_resistance
    with pytest.raises(ValidationError, match=r"^walls\[0\]\.rolling_resistance: applies to contact_model = "
                                              r"\"surface\" only"):
        loads(_edit(text, 'contact_model = "surface"', 'contact_model = "impacts"'))


def test_a_placement_within_the_stored_precision_starts_on_the_table():
    """A marble meant to lie on its bowl but 26 nm into it (single precision's rounding of a Blender scene) is
    refused at the default precision (START_RTOL·r = 8 nm) and, with placement_tolerance 10⁻⁷ m, starts on the bowl:
    its centre R − r from the bowl's to round-off."""
    from dataclasses import replace

    scene = examples.marble_in_a_bowl(swings=0.1)
    b = scene.bodies[0]
    centre, R, r = np.array([0.0, 0.0, 0.15]), 0.15, 0.008
    x = np.asarray(b.position, float)
    out = (x - centre) / np.linalg.norm(x - centre)
    scene.bodies = [replace(b, position=tuple(centre + (R - r + 26e-9) * out))]
    with pytest.raises(ValidationError, match=r"starts 2\.6\d*e-08 m inside 'bowl'"):
        simulate(scene)
    scene.placement_tolerance = 1e-7
    traj = simulate(scene)
    assert abs(np.linalg.norm(traj.position[0, 0] - centre) - (R - r)) <= 1e-15
    again = loads(dumps(scene))                             # the file keeps it
    assert again.placement_tolerance == 1e-7
