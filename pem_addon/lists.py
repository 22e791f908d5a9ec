"""The per-object lists of the panel (dipoles, contact spheres): one way to add, select, remove and draw.

A list is a CollectionProperty of the object's PEM settings (``collection``) with the index of its
selected row (``active``); the operators here act on the active object's list.
"""

from __future__ import annotations


def add_item(p, collection: str, active: str):
    """Append a new row to ``p.<collection>``, select it and return it."""
    items = getattr(p, collection)
    item = items.add()
    setattr(p, active, len(items) - 1)
    return item


def selected_item(p, collection: str, active: str):
    """The selected row of ``p.<collection>``, or None when the selection is out of range."""
    items, i = getattr(p, collection), getattr(p, active)
    return items[i] if 0 <= i < len(items) else None


class OnSelectedItem:
    """Mixin of an operator on the selected row of one of the active object's lists; a subclass names
    the list (``collection``) and its selection index (``active``)."""

    bl_options = {"REGISTER", "UNDO"}
    collection = ""
    active = ""

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and selected_item(obj.pem, cls.collection, cls.active) is not None


class RemoveSelectedItem(OnSelectedItem):
    """Mixin: remove the selected row; the selection moves to its neighbour."""

    def execute(self, context):
        p = context.object.pem
        items = getattr(p, self.collection)
        items.remove(getattr(p, self.active))
        setattr(p, self.active, max(0, min(getattr(p, self.active), len(items) - 1)))
        return {"FINISHED"}


def draw_list(layout, p, ui_list: str, collection: str, active: str, operators, rows: int = 3):
    """The list with its buttons (``operators``: (idname, icon) pairs) beside it; returns the selected
    row, for the caller to draw its fields, or None."""
    row = layout.row()
    row.template_list(ui_list, "", p, collection, p, active, rows=rows)
    ops = row.column(align=True)
    for idname, icon in operators:
        ops.operator(idname, icon=icon, text="")
    return selected_item(p, collection, active)
