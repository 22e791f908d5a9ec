"""``// pem:`` notes: what a scene has and PEM's UDF format has no field for, carried in comment lines.

A UDF file written by :mod:`.udf_write` keeps the scene's names and settings that PEM's schema cannot hold as
line comments the original engine skips, one ``key = value`` (a TOML value, SI units) a line::

    simulation:{
     …
     [
      {
       // pem: name = "bob"
       // pem: index = 0
       0,
       …

A note belongs to the innermost struct it is written in: a placement (``simulation.pendulum[k]``,
``simulation.body[k]``) for a body's, a ``body[j].shape[k]`` for a shape's, none (the data block's top) for the
scene's. :func:`read_notes` finds and checks them (an unknown key, a bad value, a key given twice: refused with the
file, line and key); :mod:`.udf_scene` applies them. The keys are in :data:`KEYS`.
"""

from __future__ import annotations

import bisect
import re
import tomllib
from dataclasses import dataclass

from ..errors import ValidationError
from ..model.scene import CONTACT_MODELS
from .scenefile import _array_of_tables, _contact_friction, _pair, _restitution
from .scenefile_values import _choice, _number, _string

__all__ = ["NOTES", "NOTE_MARK", "KEYS", "Note", "read_notes"]

#: The key of a value tree's notes (a list of ``key = value`` texts) in :mod:`.udf_write`.
NOTES = "//"
#: How a note's line begins.
NOTE_MARK = "// pem:"
_NOTE = re.compile(r"^[ \t]*// pem:[ \t]*(.*?)[ \t]*$", re.M)
#: The structs a note may belong to (else it is the scene's).
_PLACEMENT = re.compile(r"simulation\.(pendulum|body)\[\d+\]$")
_SHAPE = re.compile(r"body\[\d+\]\.shape\[\d+\]$")


def _index(value, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(path, f"expected a whole number ≥ 0 (the body's place in the scene), got {value!r}")
    return value


def _true_or_false(value, path: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(path, f"expected true or false, got {value!r}")
    return value


def _pairs(value, path: str) -> tuple:
    return tuple(_pair(x, f"{path}[{k}]") for k, x in enumerate(_array_of_tables(value, path)))


#: Where → key → its check (value, path) → value. Lengths in SI units (m).
KEYS = {
    "scene": {
        "name": _string,
        "restitution": _restitution,
        "contact_friction": _contact_friction,
        "contact_model": lambda x, p: _choice(x, p, CONTACT_MODELS),
        "placement_tolerance": lambda x, p: _number(x, p, nonnegative=True),
        "pair_restitution": _pairs,
        "settings.rtol": lambda x, p: _number(x, p, positive=True),
        "settings.atol": lambda x, p: _number(x, p, positive=True),
    },
    "pendulum": {
        "name": _string,
        "index": _index,
        "role": lambda x, p: _choice(x, p, ("pendulum", "free")),
        "restitution": _restitution,
        "contact_friction": _contact_friction,
    },
    "body": {
        "name": _string,
        "index": _index,
        "restitution": _restitution,
        "contact_friction": _contact_friction,
    },
    "shape": {"name": _string, "stand_in": _true_or_false},
}
_WHAT = {"scene": "the scene (at the top of the data block)", "pendulum": "a simulation.pendulum[] entry",
         "body": "a simulation.body[] entry", "shape": "a body[].shape[] entry"}


@dataclass(frozen=True)
class Note:
    """One checked note: its ``value``, the ``path`` errors name it by (``simulation.pendulum[0] // pem: name``),
    its ``offset`` in the file's text and ``where`` that is (``file:line:col``)."""

    value: object
    path: str
    offset: int
    where: str


def _spans(doc) -> list[tuple[int, int, str]]:
    """(start, end, path) of every struct of the data blocks, by start."""
    return sorted((doc.offsets[path], end, path) for path, end in doc.ends.items() if path in doc.offsets)


def _owner(spans: list, offset: int) -> str:
    """The path of the innermost struct around ``offset``; "" for none (the top of a data block).

    Scans back from the last struct that starts before ``offset``: a note stands at the head of its struct, so the
    first struct found still open is nearly always the one just before it."""
    k = bisect.bisect_left(spans, (offset,))
    for i in range(k - 1, -1, -1):
        if spans[i][1] > offset:
            return spans[i][2]
    return ""


def _flat(d: dict, prefix: str = "") -> list[tuple[str, object]]:
    """A TOML document's (dotted key, value) pairs: ``settings.rtol = 1e-8`` → [("settings.rtol", 1e-8)]."""
    out = []
    for k, x in d.items():
        key = f"{prefix}{k}"
        if isinstance(x, dict):
            out += _flat(x, key + ".")
        else:
            out.append((key, x))
    return out


def read_notes(doc) -> dict[str, dict[str, Note]]:
    """The ``// pem:`` notes of a parsed UDF document: owner path ("" for the scene) → key → :class:`Note`.

    Each is recorded in ``doc.offsets`` under its path, so an error about its value names its line. A note that is
    not ``key = value``, has a key unknown where it stands, a bad value or a key given twice is a
    :class:`.udf.UdfError` naming the file, line and key.
    """
    src = doc.source
    out: dict[str, dict[str, Note]] = {}
    if src is None:
        return out
    spans = None
    for m in _NOTE.finditer(src.text):
        spans = _spans(doc) if spans is None else spans
        owner = _owner(spans, m.start())
        if owner and not (_SHAPE.match(owner) or _PLACEMENT.match(owner)):
            raise src.error(m.start(1), f"{owner}: a {NOTE_MARK} note stands at the top of the data block (the "
                                        "scene's), in a simulation.pendulum[] or simulation.body[] entry (a body's) "
                                        "or in a body[].shape[] entry (a shape's); move it there, or remove it")
        kind = "scene" if not owner else "shape" if _SHAPE.match(owner) else _PLACEMENT.match(owner).group(1)
        try:
            pairs = _flat(tomllib.loads(m.group(1)))
        except tomllib.TOMLDecodeError as err:
            raise src.error(m.start(1), f"{NOTE_MARK} {m.group(1)[:40]!r}: not a note `key = value` (a TOML value: "
                                        f"{err}); correct it, or remove the line") from None
        for key, value in pairs:
            path = f"{owner} {NOTE_MARK} {key}".lstrip()
            check = KEYS[kind].get(key)
            if check is None:
                raise src.error(m.start(1), f"{path}: not a note of {_WHAT[kind]} (known there: "
                                            f"{', '.join(KEYS[kind])}); correct the key, or remove the line")
            mine = out.setdefault(owner, {})
            if key in mine:
                raise src.error(m.start(1), f"{path}: given again (first at {mine[key].where}); keep "
                                            "one")
            try:
                value = check(value, path)
            except ValidationError as err:
                raise src.error(m.start(1), f"{path}: {err.message}") from None
            mine[key] = Note(value, path, m.start(1), src.where(m.start(1)))
            doc.offsets[path] = m.start(1)
    return out
