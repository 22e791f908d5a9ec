"""Errors in a PEM UDF file name the file, the line and the UDF field as the file has it — never the scene model's
path (``bodies[0].orientation``, ``settings.dt``), which a user editing a ``.udf`` never wrote.

Oracles: the bad files are the shipped examples with one value changed by hand; the line each error must name is
the line of that change, found in the written text; the field is the one the def file (schema) puts there.
"""

from __future__ import annotations

import re
import shutil

import pytest

from pem_physics.io.loading import load_scene
from pem_physics.io.udf import UdfError

from conftest import ROOT

SCENES = ROOT / "examples" / "scenes"


def _bad(tmp_path, example: str, old: str, new: str, name: str = "bad.udf"):
    """``example`` (.udf beside its def file) with the one value ``old`` replaced by ``new``: (path, line of it)."""
    text = (SCENES / example).read_text()
    assert text.count(old) == 1, old
    shutil.copy(SCENES / "pem1_3_def.udf", tmp_path)
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    line = text[:text.index(old)].count("\n") + 1
    return path, line


def _error(path) -> str:
    with pytest.raises(UdfError) as info:
        load_scene(path)
    return str(info.value)


# (example, the value as written, the bad value, the UDF field named, what the message says, scene paths it must not)
CASES = [
    pytest.param("pendulum.udf", "{5000,10,0.001}", "{5000,10,0.0}", "simulation.time.dt",
                 "expected a positive number, got 0.0", "settings", id="zero-dt"),
    pytest.param("pendulum.udf", "{0.0,0.5,0.8660254037844386}", "{0.0,0.5,0.3}", "simulation.pendulum[0].orientation",
                 "not orthonormal", "bodies", id="bent-frame"),
    pytest.param("pendulum.udf", "{0.0,0.0,-9.81}", "{0.0,0.0,1e400}", "simulation.gravity.z",
                 "expected a finite number", "gravity[", id="infinite-gravity"),
    pytest.param("compass.udf", '{"true",{0.0,0.0,1.0}}', '{"true",{0.0,0.0,0.0}}',
                 "simulation.pendulum[0].constraint.rotationAxis", "expected a non-zero vector", "hinge",
                 id="zero-hinge"),
    pytest.param("compass.udf", "{{0.0,0.0,0.0}{0.2,0.0,0.0}}", "{{0.0,0.0,0.0}{1e400,0.0,0.0}}",
                 "body[0].magnet[0].dipole.x", "expected a finite number", "dipoles", id="infinite-dipole"),
    pytest.param("compass.udf", "{6e-09,9.03e-07,9.03e-07,0.0,0.0,0.0}", "{6e-09,9.03e-07,-9.03e-07,0.0,0.0,0.0}",
                 "body[0].analysis.inertiaMoment", "negative moment", "mass_properties", id="negative-inertia"),
    pytest.param("compass.udf", "{0.003,{0.0,0.0,0.0}{6e-09", "{1e-120,{0.0,0.0,0.0}{6e-09", "body[0].analysis.mass",
                 "too small to simulate", "bodies", id="too-light"),
    pytest.param("pendulum.udf", "{1.0,1.0,1.0,1.0}", "{1.0,0.0,1.0,1.0}", "unitParameter.mass",
                 "expected a positive number, got 0.0", "units", id="zero-unit"),
    pytest.param("pendulum.udf", "{5000,10,0.001}", "{5000,10,abc}", "simulation.time.dt",
                 "expected a number, got 'abc'", "settings", id="bad-number"),
]


@pytest.mark.parametrize("example, old, new, field, says, scene_path", CASES)
def test_a_bad_value_is_named_by_file_line_and_udf_field(tmp_path, example, old, new, field, says, scene_path):
    path, line = _bad(tmp_path, example, old, new)
    message = _error(path)
    assert re.match(rf"{re.escape(str(path))}:{line}:\d+: {re.escape(field)}: ", message), message
    assert says in message
    assert scene_path not in message


def test_a_value_left_out_is_named_where_it_is_missing(tmp_path):
    """simulation.time written without its dt: the format makes it 0, which the check refuses; the message says the
    value is missing, at the struct that ends without it."""
    path, line = _bad(tmp_path, "pendulum.udf", "{5000,10,0.001}", "{5000,10}")
    with pytest.warns(UserWarning, match="shorter than the schema"):
        message = _error(path)
    assert message.startswith(f"{path}:{line}:")
    assert "simulation.time.dt: expected a positive number, got 0.0" in message
    assert "not written in the file" in message and "write it" in message
    assert "settings" not in message


def test_a_missing_definition_is_named_at_its_reference(tmp_path):
    """A pendulum that names a body id no body[] defines: the line of the reference."""
    text = (SCENES / "pendulum.udf").read_text()
    old = "index = 0\n   0,\n"   # the pendulum's reference to body 0, after its notes
    path, line = _bad(tmp_path, "pendulum.udf", old, "index = 0\n   3,\n")
    line += 1
    assert text.splitlines()[line - 1].strip() == "0,"
    message = _error(path)
    assert message.startswith(f"{path}:{line}:")
    assert "simulation.pendulum[0].body: refers to body id 3" in message


def test_a_file_in_other_units_says_the_values_shown_are_si(tmp_path):
    """In a cgs file a value of the message is in SI (the model's check sees SI values): it says so."""
    path, line = _bad(tmp_path, "pendulum.udf", "{0.0,0.5,0.8660254037844386}", "{0.0,0.5,0.3}")
    path.write_text(path.read_text().replace("{1.0,1.0,1.0,1.0}", "{0.01,0.001,1.0,1.0}"))
    message = _error(path)
    assert message.startswith(f"{path}:{line}:") and "simulation.pendulum[0].orientation" in message
    assert "SI units" in message
