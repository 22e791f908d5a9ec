"""Contacts in scene files ([[bodies.contacts]], restitution, [[pair_restitution]], [[walls]]) and in the run
outputs (trajectory.npz event arrays, events.csv, summary.json counts, the energy plot's impact markers).

Oracles: the Python builders and hand-written TOML values; the written files are read back with the
standard library (tomllib, csv, json) and compared field by field.
"""

from __future__ import annotations

import csv
import json
import tomllib
from dataclasses import replace

import numpy as np
import pytest

from pem_physics import examples, simulate
from pem_physics.cli import main as cli_main
from pem_physics.engine.backends import compiled
from pem_physics.errors import ValidationError
from pem_physics.io.scene_writer import dumps
from pem_physics.io.scenefile import load_scene, loads
from pem_physics.model.scene import PairRestitution, StaticWall

from conftest import ROOT

SCENES = ROOT / "examples" / "scenes"


def assert_same_contacts(a, b):
    a, b = a.checked(), b.checked()
    assert a.restitution == b.restitution and a.contact_friction == b.contact_friction
    assert [(p.names, p.restitution) for p in a.pair_restitution] == [(p.names, p.restitution)
                                                                      for p in b.pair_restitution]
    for x, y in zip(a.bodies, b.bodies, strict=True):
        assert (x.restitution, x.contact_friction) == (y.restitution, y.contact_friction)
        assert len(x.contacts) == len(y.contacts)
        for c, d in zip(x.contacts, y.contacts):
            np.testing.assert_allclose(c.center, d.center, rtol=1e-12, atol=1e-15)
            assert c.radius == pytest.approx(d.radius, rel=1e-12)
    assert len(a.walls) == len(b.walls)
    for w, v in zip(a.walls, b.walls):
        assert ((w.kind, w.name, w.inside, w.restitution, w.contact_friction)
                == (v.kind, v.name, v.inside, v.restitution, v.contact_friction))
        keys = {"plane": ("point", "normal"), "sphere": ("center", "radius"),
                "cylinder": ("point", "direction", "radius"), "box": ("center", "half_sizes")}[w.kind]
        for key in keys:
            np.testing.assert_allclose(getattr(w, key), getattr(v, key), rtol=1e-12, atol=1e-15)
        if w.kind == "box":
            assert (w.axes is None) == (v.axes is None)
            if w.axes is not None:
                np.testing.assert_allclose(w.axes, v.axes, atol=1e-15)


def contact_scene():
    scene = examples.newtons_cradle(n=3, restitution=0.9)
    c, s = np.cos(0.3), np.sin(0.3)
    scene.walls = (StaticWall(kind="plane", name="floor", point=(0, 0, 0), normal=(0, 0, 2)),
                   StaticWall(kind="sphere", name="dome", center=(0, 0, 0.2), radius=2.0, restitution=0.5),
                   StaticWall(kind="cylinder", name="post", point=(1, 1, 0), direction=(0, 0, 1), radius=0.1,
                              inside=False),
                   StaticWall(kind="box", name="case", center=(0.05, 0, 0.2), half_sizes=(1, 1, 1),
                              axes=((c, s, 0), (-s, c, 0), (0, 0, 1))))
    scene.pair_restitution = (PairRestitution(("ball1", "ball2"), 0.8), PairRestitution(("ball3", "floor"), 0.1))
    scene.bodies[2].restitution = 0.95
    scene.contact_friction = 0.3
    scene.bodies[1].contact_friction = 0.0
    scene.walls = scene.walls[:3] + (replace(scene.walls[3], contact_friction=1.5),)
    return scene


def test_contacts_round_trip():
    scene = contact_scene()
    text = dumps(scene)
    doc = tomllib.loads(text)
    assert doc["restitution"] == 0.9 and [w["kind"] for w in doc["walls"]] == ["plane", "sphere", "cylinder", "box"]
    assert doc["bodies"][0]["contacts"] == [{"center": [0.0, 0.0, -0.3], "radius": 0.0125}]
    assert doc["contact_friction"] == 0.3 and doc["walls"][3]["contact_friction"] == 1.5
    assert doc["bodies"][1]["contact_friction"] == 0.0 and "contact_friction" not in doc["bodies"][0]
    back = loads(text)
    assert_same_contacts(scene, back)
    assert_same_contacts(back, loads(dumps(back)))


def test_scenes_without_contacts_are_written_as_before():
    doc = tomllib.loads(dumps(examples.compass()))
    assert not {"restitution", "walls", "pair_restitution", "contact_friction"} & set(doc)
    assert "contacts" not in doc["bodies"][0]


@pytest.mark.parametrize("name", ["newtons-cradle", "colliding-pendulums", "magnetic-marbles", "bouncing-ball"])
def test_example_files_match_the_builders(name):
    scene = load_scene(SCENES / (name.replace("-", "_") + ".toml"))
    ref = examples.build(name)
    assert_same_contacts(ref, scene)
    assert scene.has_contacts and scene.settings.dt == ref.settings.dt


def test_contacts_in_other_units():
    text = """
format = "pem-scene"
version = 1
restitution = 0.5
[units]
length = 0.01
[[bodies]]
pivot = [0, 0, 50]
mass_properties = {mass = 0.1, center_of_mass = [0, 0, -30], inertia = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]}
[[bodies.contacts]]
center = [0, 0, -30]
radius = 2
[[walls]]
kind = "sphere"
center = [0, 0, 20]
radius = 10
"""
    scene = loads(text)
    np.testing.assert_allclose(scene.bodies[0].contacts[0].center, [0, 0, -0.3])
    assert scene.bodies[0].contacts[0].radius == pytest.approx(0.02)
    assert scene.walls[0].radius == pytest.approx(0.1) and scene.walls[0].name == "wall0"
    assert scene.restitution == 0.5


BASE = """
format = "pem-scene"
version = 1
[[bodies]]
name = "bob"
pivot = [0, 0, 1]
mass_properties = {mass = 0.1, center_of_mass = [0, 0, -0.5], inertia = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]}
"""


@pytest.mark.parametrize("extra, message", [
    ("restitution = 1.5\n" + BASE, r"^restitution: expected 0 ≤ e ≤ 1, got 1\.5"),
    (BASE + "[[bodies.contacts]]\ncenter = [0, 0, -0.5]\nradius = 0\n",
     r"^bodies\[0\]\.contacts\[0\]\.radius: expected a positive number"),
    (BASE + "[[bodies.contacts]]\ncentre = [0, 0, -0.5]\nradius = 0.1\n",
     r"^bodies\[0\]\.contacts\[0\]\.centre: unknown key; did you mean 'center'\?"),
    (BASE + "restitution = -0.2\n", r"^bodies\[0\]\.restitution: expected 0 ≤ e ≤ 1"),
    (BASE + "[[walls]]\nkind = \"cone\"\n", r"^walls\[0\]\.kind: expected one of 'plane', 'sphere'"),
    (BASE + "[[walls]]\nkind = \"plane\"\nradius = 1\n", r"^walls\[0\]\.radius: unknown key"),
    (BASE + "[[walls]]\nkind = \"box\"\nhalf_sizes = [1, 0, 1]\n", r"^walls\[0\]\.half_sizes: expected 3 numbers > 0"),
    (BASE + "[[walls]]\nkind = \"plane\"\nname = \"bob\"\nnormal = [0, 0, 1]\n",
     r"^walls\[0\]\.name: 'bob' is already the name of a body or wall"),
    (BASE + "[[pair_restitution]]\nbodies = [\"bob\", \"nobody\"]\nrestitution = 0.5\n",
     r"^pair_restitution\[0\]\.bodies\[1\]: no body or wall is called 'nobody' \(they are 'bob'\)$"),
    # the file's key (bodies, not the model's names), and a misspelt wall's closest name
    (BASE + "[[walls]]\nkind = \"plane\"\nname = \"floor\"\nnormal = [0, 0, 1]\n"
            "[[pair_restitution]]\nbodies = [\"flor\", \"bob\"]\nrestitution = 0.5\n",
     r"^pair_restitution\[0\]\.bodies\[0\]: no body or wall is called 'flor'; did you mean 'floor'\?$"),
    (BASE + "[[pair_restitution]]\nbodies = [\"bob\"]\nrestitution = 0.5\n",
     r"^pair_restitution\[0\]\.bodies: expected two names"),
])
def test_bad_contact_files_are_named(extra, message):
    with pytest.raises(ValidationError, match=message):
        loads(extra)


# "é" written as one code point and as e + a combining acute accent: two strings that print alike
E_ONE, E_TWO = "Caf\u00e9", "Cafe\u0301"


def test_names_that_print_alike_are_one_name():
    """Two bodies (or a body and a wall) named "Café", once with é as one code point and once as e + a combining
    accent, were two items whose names print alike in every output: refused as duplicates, naming both encodings;
    a pair naming one spelling finds the item spelt the other way (and takes the item's own spelling)."""
    assert E_ONE != E_TWO and len(E_ONE) == 4 and len(E_TWO) == 5
    body = ("[[bodies]]\nname = \"{}\"\npivot = [0, 0, 1]\nmass_properties = {{mass = 0.1, center_of_mass = [0, 0, "
            "-0.5], inertia = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]}}\n")
    head = 'format = "pem-scene"\nversion = 1\n'
    with pytest.raises(ValidationError, match=r"^bodies\[1\]\.name: duplicate body name 'Cafe\u0301' \(also "
                                              r"bodies\[0\]\); the two print alike but are encoded differently "
                                              r"\('Caf\\xe9' and 'Cafe\\u0301'"):
        loads(head + body.format(E_ONE) + body.format(E_TWO))
    wall = '[[walls]]\nkind = "plane"\nname = "{}"\nnormal = [0, 0, 1]\n'
    with pytest.raises(ValidationError, match=r"^walls\[0\]\.name: 'Caf\u00e9' is already the name of a body or "
                                              r"wall; the two print alike"):
        loads(head + body.format(E_TWO) + wall.format(E_ONE))
    pair = '[[pair_restitution]]\nbodies = ["{}", "floor"]\nrestitution = 0.5\n'
    scene = loads(head + body.format(E_ONE) + wall.format("floor") + pair.format(E_TWO))
    assert scene.pair_restitution[0].names == (E_ONE, "floor")
    # the API as the files: the model checks the names
    api = examples.pendulum()
    api.bodies = [replace(api.bodies[0], name=E_ONE), replace(api.bodies[0], name=E_TWO, role="fixed")]
    with pytest.raises(ValidationError, match=r"^bodies\[1\]\.name: duplicate body name"):
        api.checked()
    api.bodies = api.bodies[:1]
    api.walls = (StaticWall(kind="plane", name="floor"),)
    api.pair_restitution = (PairRestitution(("floor", E_TWO), 0.5),)
    assert api.checked().pair_restitution[0].names == ("floor", E_ONE)
    api.pair_restitution = (PairRestitution((E_ONE, E_TWO), 0.5),)
    with pytest.raises(ValidationError, match=r"^pair_restitution\[0\]\.names: a pair needs two different items"):
        api.checked()


# ---------------------------------------------------------------------------- outputs

def test_run_writes_the_event_log(tmp_path):
    out = tmp_path / "run"
    assert cli_main(["run", "example:newtons-cradle", "-o", str(out), "--t-end", "0.3"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["impacts"] == 4 and summary["events"] == {"impact": 4}
    assert summary["engine"] == ("numba" if compiled.available() else "numpy")
    assert abs(summary["impact_energy_loss_J"]) < 1e-15
    rows = list(csv.DictReader((out / "events.csv").open(encoding="utf-8")))
    assert [(r["body1"], r["body2"], r["kind"]) for r in rows] == [(f"ball{k}", f"ball{k + 1}", "impact")
                                                                  for k in range(1, 5)]
    assert len({r["t"] for r in rows}) == 1 and float(rows[0]["impulse"]) > 0
    with np.load(out / "trajectory.npz") as data:
        assert data["event_t"].shape == (4,) and data["event_impulse"].shape == (4, 3)
        assert [str(x) for x in data["event_body2"]] == ["ball2", "ball3", "ball4", "ball5"]
        np.testing.assert_array_equal(data["event_impulse"][:, 0], [float(r["impulse_x"]) for r in rows])
    from pem_physics.analysis.plot import read_trajectory

    traj = read_trajectory(out)
    assert len(traj.events) == 4 and traj.events.body1[0] == "ball1"
    assert cli_main(["plot", str(out), "-o", str(tmp_path / "png")]) == 0
    assert (tmp_path / "png" / "energy.png").stat().st_size > 0


def test_trajectory_without_contacts_has_no_event_log():
    traj = simulate(examples.pendulum(), t_end=0.01)
    assert traj.events is None and traj.impact_loss is None


@pytest.mark.parametrize("where, text, message", [
    ("contact_friction", "contact_friction = -0.1", r"contact_friction: expected a friction coefficient μ ≥ 0"),
    ("bodies[0].contact_friction", "[[bodies]]\ncontact_friction = 'rough'", r"bodies\[0\]\.contact_friction"),
    ("walls[0].contact_friction", "[[walls]]\nkind = 'plane'\ncontact_friction = inf",
     r"walls\[0\]\.contact_friction: expected a finite number"),
])
def test_bad_contact_friction_is_named(where, text, message):
    body = "" if "[[bodies]]" in text else "[[bodies]]\n"
    doc = f'format = "pem-scene"\nversion = 1\n{text}\n{body}pivot = [0, 0, 1]\n' \
          "mass_properties = {mass = 1, center_of_mass = [0, 0, -1], inertia = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]}\n"
    with pytest.raises(ValidationError, match=message):
        loads(doc)


def test_bad_contact_friction_in_the_python_api_is_named():
    scene = examples.newtons_cradle(n=2)
    scene.bodies[1].contact_friction = float("nan")
    with pytest.raises(ValidationError, match=r"bodies\[1\]\.contact_friction: expected a finite number, got nan"):
        scene.checked()


def test_summary_counts_impacts_not_changes_of_a_contact():
    """summary.json's "impacts": every kind ``impact…`` and a settling (``rest``) that took an impulse; a stick,
    slip, reversal or lift-off is a change of a persistent contact, and a rest of a still contact took nothing."""
    from pem_physics.engine.contact.model import EventLog

    kinds = ["impact", "impact, sliding", "impact, rolling", "rest", "rest", "stick", "slip", "reversal", "lift-off"]
    impulses = [(0, 0, 1), (0, 0, 1), (0, 0, 1), (0, 0, 0.5), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0)]
    log = EventLog(t=list(range(len(kinds))), kind=kinds, impulse=[np.array(j, float) for j in impulses])
    assert log.impacts() == 4
