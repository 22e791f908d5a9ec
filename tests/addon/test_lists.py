"""The object's lists in the panel (dipoles, contact spheres): add, duplicate, remove, selection, drawing.

Oracles: the list contents set and read back through bpy (not through the add-on's helpers), the
operators' poll as Blender evaluates it (bpy.ops ... .poll()), and the calls a recording layout gets.
"""

from __future__ import annotations

import importlib

import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import pem  # noqa: E402, F401


class _Layout:
    """Records what a panel draws: template_list's list name and every operator's idname."""

    def __init__(self, calls=None):
        self.calls = [] if calls is None else calls

    def template_list(self, ui_list, _id, data, prop, active_data, active_prop, rows=0):
        self.calls.append(("list", ui_list, prop, active_prop))

    def operator(self, idname, **kw):
        self.calls.append(("op", idname))
        return type("Props", (), {})()

    def prop(self, data, name, **kw):
        self.calls.append(("prop", name))

    def __getattr__(self, name):  # row, column, box, label, split, separator…: the same recorder
        return lambda *a, **kw: _Layout(self.calls) if name in ("row", "column", "box", "split") else None


def _active_cube():
    bpy.ops.mesh.primitive_cube_add(size=0.1)
    obj = bpy.context.object
    obj.pem.enabled = True
    return obj


def test_dipoles_add_duplicate_remove_keep_a_valid_selection(pem):  # noqa: F811
    obj = _active_cube()
    p = obj.pem
    assert not bpy.ops.pem.dipole_remove.poll() and not bpy.ops.pem.dipole_duplicate.poll()
    assert bpy.ops.pem.dipole_add() == {"FINISHED"}
    assert len(p.dipoles) == 1 and p.active_dipole == 0 and tuple(p.dipoles[0].moment) == (0.0, 0.0, 1.0)
    p.dipoles[0].position, p.dipoles[0].moment = (0.01, 0.02, 0.03), (1.0, -2.0, 0.5)
    assert bpy.ops.pem.dipole_duplicate() == {"FINISHED"}
    assert len(p.dipoles) == 2 and p.active_dipole == 1
    assert tuple(p.dipoles[1].moment) == (1.0, -2.0, 0.5)
    assert tuple(p.dipoles[1].position) == pytest.approx((0.01, 0.02, 0.03))
    p.dipoles[1].moment = (0.0, 3.0, 0.0)
    assert tuple(p.dipoles[0].moment) == (1.0, -2.0, 0.5)  # a copy, not the same item
    p.active_dipole = 0
    assert bpy.ops.pem.dipole_remove() == {"FINISHED"}
    assert len(p.dipoles) == 1 and tuple(p.dipoles[0].moment) == (0.0, 3.0, 0.0) and p.active_dipole == 0
    assert bpy.ops.pem.dipole_remove() == {"FINISHED"}
    assert len(p.dipoles) == 0 and p.active_dipole == 0
    assert not bpy.ops.pem.dipole_remove.poll()
    p.dipoles.add()
    p.active_dipole = 5                            # a stale index (e.g. from a script): nothing to act on
    assert not bpy.ops.pem.dipole_duplicate.poll() and not bpy.ops.pem.dipole_remove.poll()


def test_contact_spheres_add_and_remove(pem):  # noqa: F811
    obj = _active_cube()
    obj.pem.role = "FIXED"
    p = obj.pem
    assert not bpy.ops.pem.contact_remove.poll() and not bpy.ops.pem.contact_fit.poll()
    assert bpy.ops.pem.contact_add() == {"FINISHED"} and bpy.ops.pem.contact_add() == {"FINISHED"}
    assert len(p.contacts) == 2 and p.active_contact == 1
    # fitted to the cube's bounding sphere: half its diagonal (object units)
    assert p.contacts[1].radius == pytest.approx(0.05 * 3 ** 0.5, rel=1e-6)
    p.contacts[0].radius = 0.01
    assert bpy.ops.pem.contact_remove() == {"FINISHED"}
    assert len(p.contacts) == 1 and p.active_contact == 0 and p.contacts[0].radius == pytest.approx(0.01)


def test_the_object_panel_draws_both_lists_and_the_selected_rows(pem, ext):  # noqa: F811
    ui = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.ui")
    obj = _active_cube()
    obj.pem.role = "PENDULUM"
    bpy.ops.pem.dipole_add()
    bpy.ops.pem.contact_add()
    layout = _Layout()
    ui.draw_object(layout, bpy.context, obj)
    lists = [c for c in layout.calls if c[0] == "list"]
    assert ("list", "PEM_UL_dipoles", "dipoles", "active_dipole") in lists
    assert ("list", "PEM_UL_contacts", "contacts", "active_contact") in lists
    ops = [c[1] for c in layout.calls if c[0] == "op"]
    for idname in ("pem.dipole_add", "pem.dipole_remove", "pem.dipole_duplicate", "pem.contact_add",
                   "pem.contact_remove", "pem.contact_fit"):
        assert idname in ops
    props = [c[1] for c in layout.calls if c[0] == "prop"]
    assert {"position", "moment", "center", "radius"} <= set(props)  # the selected dipole and contact sphere
    obj.pem.active_dipole = 3                      # stale selection: the list draws, no row fields
    layout = _Layout()
    ui.draw_object(layout, bpy.context, obj)
    assert "moment" not in [c[1] for c in layout.calls if c[0] == "prop"]
