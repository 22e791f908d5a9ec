"""Export PEM Scene writes a .toml scene file or a .udf PEM input file, by the name's extension, and never
replaces a file PEM did not write unless told to (as ``python -m pem_physics convert`` without --force).

Oracles: the files' bytes before and after, and the core's own readers of what was written.
"""

from __future__ import annotations

import importlib

import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import fingerprint, pem, pendulum_setup  # noqa: E402, F401


@pytest.fixture
def core(pem, ext):  # noqa: F811
    return {name: importlib.import_module(f"{ext.__name__}.pem_physics.io.{name}") for name in ("scenefile", "loading")}


@pytest.mark.parametrize("name", ["notes.toml", "scene.blend", "notes.txt", "input.udf", "noextension"])
def test_export_never_replaces_a_file_pem_did_not_write(core, tmp_path, name):
    pendulum_setup()
    target = tmp_path / name
    target.write_bytes(b"the user's own bytes\n")
    before = fingerprint()
    with pytest.raises(RuntimeError, match=r"Cannot export to .*: "):
        bpy.ops.pem.export_scene(filepath=str(target))
    assert target.read_bytes() == b"the user's own bytes\n"
    assert fingerprint() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_other_extensions_are_refused_and_nothing_is_written(core, tmp_path):
    pendulum_setup()
    with pytest.raises(RuntimeError, match=r"must end in \.toml .* or \.udf"):
        bpy.ops.pem.export_scene(filepath=str(tmp_path / "scene.blend"))
    assert list(tmp_path.iterdir()) == []


def test_overwrite_replaces_a_users_file_and_a_pem_scene_file_is_replaced_anyway(core, tmp_path):
    pendulum_setup()
    target = tmp_path / "notes.toml"
    target.write_bytes(b"the user's own bytes\n")
    assert bpy.ops.pem.export_scene(filepath=str(target), overwrite=True) == {"FINISHED"}
    scene = core["scenefile"].load_scene(target)
    assert [b.name for b in scene.bodies][:1] == ["Cube"]
    first = target.read_bytes()
    bpy.context.scene.pem.substeps = 3
    assert bpy.ops.pem.export_scene(filepath=str(target)) == {"FINISHED"}   # PEM's own file: replaced
    assert target.read_bytes() != first


def test_a_udf_name_writes_a_pem_input_file(core, tmp_path):
    pendulum_setup()
    target = tmp_path / "pendulum.udf"
    assert bpy.ops.pem.export_scene(filepath=str(target), udf_method="pem-euler") == {"FINISHED"}
    text = target.read_text(encoding="utf-8")
    assert text.startswith('\\include {"pem1_3_def.udf"}') and "euler" in text.lower()
    assert (tmp_path / "pem1_3_def.udf").exists()
    assert core["loading"].load_scene(str(target)).settings.method == "pem-euler"   # the core reads it back


def test_a_udf_export_keeps_the_object_names(core, tmp_path):
    """PEM's schema has no names: the export carries them (and the scene's) in // pem: notes the core reads back,
    as the .toml export keeps them."""
    pendulum_setup()
    toml, udf = tmp_path / "scene.toml", tmp_path / "scene.udf"
    assert bpy.ops.pem.export_scene(filepath=str(toml)) == {"FINISHED"}
    assert bpy.ops.pem.export_scene(filepath=str(udf)) == {"FINISHED"}
    a, b = core["scenefile"].load_scene(toml), core["loading"].load_scene(str(udf))
    assert [x.name for x in b.bodies] == [x.name for x in a.bodies] and "Cube" in [x.name for x in b.bodies]
    assert b.name == a.name == bpy.context.scene.name
