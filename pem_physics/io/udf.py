"""Reader for the original PEM engine's UDF files (OCTA/GOURMET format), driven by their schema.

A UDF file ``\\include``\\s a definition file (``pem1_3_def.udf`` etc.) whose
``\\begin{def}`` / ``\\begin{global_def}`` blocks declare classes and fields;
``\\begin{data}`` blocks then give values *positionally* in that order
(structs ``{…}``, arrays ``[…]``, strings, numbers). Output files add
``\\begin{record}{"#n"}`` blocks, each a data block of the non-global fields
(``simulationResult``).

Values come back as plain Python: structs → dict (field → value), arrays →
list, ``double`` → float, ``int``/``ID``/references → int, ``string``/``select`` → str.
A struct written shorter than its schema gets the remaining fields' defaults
(0, "", [], the first select option), as GOURMET does. Anything else that does
not fit the schema raises :class:`UdfError` with file, line, column and the
field path; so does text outside the sections (before the first, between two,
after the last ``\\end``) other than blanks and ``//`` comments.
"""

from __future__ import annotations

import bisect
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ValidationError
from .files import checked_input, read_input_text

__all__ = ["UdfError", "UdfDocument", "Schema", "read_udf", "parse_udf", "read_records"]


class UdfError(ValidationError):
    """Malformed or unsupported UDF content; ``path`` is ``file:line:col``, the message names the field."""


# ---------------------------------------------------------------------------- tokens

_TOKEN = re.compile(r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_$][A-Za-z_0-9$.]*)
  | (?P<punct>[{}\[\]<>:,;*/^()=+\-!|&%@#?'.])
""", re.VERBOSE)

_SECTION = re.compile(r"""\\(?P<cmd>begin|end|include)\s*\{\s*(?P<arg>"[^"]*"|[A-Za-z_]\w*)\s*\}""")
_RECORD_LABEL = re.compile(r"\s*\{\s*\"([^\"]*)\"\s*\}")
#: What may stand outside the sections: blanks and ``//`` comments (as inside a block).
_BLANK = re.compile(r"(?:\s+|//[^\n]*)*")


class _Source:
    """Text of one file with offset → line:col mapping for messages."""

    def __init__(self, text: str, name: str):
        self.text = text
        self.name = name
        self._lines = None   # line starts, found when a message first needs one (a 2 MB file has 1e5 lines)

    def where(self, offset: int) -> str:
        if self._lines is None:
            self._lines = [m.end() for m in re.finditer("\n", self.text)]
        line = bisect.bisect_right(self._lines, offset)
        col = offset - (self._lines[line - 1] if line else 0) + 1
        return f"{self.name}:{line + 1}:{col}"

    def error(self, offset: int, message: str) -> UdfError:
        return UdfError(self.where(offset), message)


#: The most characters of a file's text a message quotes: enough to find a token, too few to print a secret of a
#: file named by mistake (an ``\\include`` of a credentials file quotes nothing of it: see :func:`_outside`).
_QUOTED = 20


def _short(text: str) -> str:
    """``text`` quoted for a message, at most :data:`_QUOTED` characters of it."""
    return repr(text[:_QUOTED] + ("…" if len(text) > _QUOTED else ""))


def _got(text: str) -> str:
    """A token found where another was expected, for a message: shortened, or the end of the block."""
    return _short(text) if text else "'end of block'"


def _outside(src: _Source, start: int, end: int) -> None:
    """Refuse text between sections (before the first, between two, after the last ``\\end``) that is not blank
    or a ``//`` comment: as a stray value inside a data block is refused, never dropped without a word.

    Text before any section means the file is not UDF text at all (a credentials file named by an ``\\include``, a
    link to ``/etc/passwd``): its line is named and nothing of it is quoted. After a section only its first word
    is, shortened (:func:`_short`)."""
    off = _BLANK.match(src.text, start, end).end()
    if off >= end:
        return
    if start == 0:
        raise src.error(off, "not PEM UDF text (no \\include, \\begin{def} or \\begin{data} before it; its content "
                             "is not shown): is it the right file?")
    word = src.text[off:end].split(None, 1)[0]
    raise src.error(off, f"text outside any section: {_short(word)} — values belong inside \\begin{{data}} … "
                         "\\end{data}; remove it, or make it a // comment")


def _tokens(src: _Source, start: int, end: int) -> list[tuple[str, str, int]]:
    """(kind, text, offset) tokens of src.text[start:end]; whitespace and // comments dropped."""
    out = []
    pos = start
    text = src.text
    match = _TOKEN.match
    while pos < end:
        m = match(text, pos, end)
        if m is None:
            raise src.error(pos, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup
        if kind != "ws":
            out.append((kind, m.group(), pos))
        pos = m.end()
    out.append(("eof", "", end))
    return out


class _Cursor:
    def __init__(self, src: _Source, toks):
        self.src = src
        self.toks = toks
        self.i = 0

    def peek(self):
        return self.toks[self.i]

    def next(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def accept(self, text: str) -> bool:
        if self.toks[self.i][1] == text and self.toks[self.i][0] in ("punct",):
            self.i += 1
            return True
        return False

    def expect(self, text: str, what: str):
        t = self.next()
        if t[1] != text or t[0] not in ("punct",):
            raise self.src.error(t[2], f"{what}: expected {text!r}, got {_got(t[1])}")
        return t

    def skip_separators(self):
        while self.toks[self.i][0] == "punct" and self.toks[self.i][1] in ",;":
            self.i += 1

    def skip_brackets(self, open_: str, close: str):
        """Skip a balanced ``[…]`` (a unit annotation) starting at the current open bracket."""
        depth = 0
        while True:
            kind, text, off = self.next()
            if kind == "eof":
                raise self.src.error(off, f"unclosed {open_!r}")
            if kind == "punct" and text == open_:
                depth += 1
            elif kind == "punct" and text == close:
                depth -= 1
                if depth == 0:
                    return


# ---------------------------------------------------------------------------- schema

@dataclass
class Field:
    name: str
    # ("double",) ("int",) ("string",) ("id",) ("select", options) ("ref", cls) ("struct", fields) ("class", name)
    type: tuple
    array: bool = False


@dataclass
class Schema:
    """Classes and top-level fields declared by a file's def blocks."""

    classes: dict = field(default_factory=dict)   # name → type tuple
    fields: dict = field(default_factory=dict)    # top-level field name → Field
    global_fields: set = field(default_factory=set)

    def resolve(self, t: tuple, where: str = "") -> tuple:
        while t[0] == "class":
            if t[1] not in self.classes:
                raise UdfError(where, f"unknown class {t[1]!r}")
            t = self.classes[t[1]]
        return t


_SCALARS = {"double": ("double",), "float": ("double",), "int": ("int",), "string": ("string",), "ID": ("id",),
            "bool": ("bool",)}


def _parse_type(cur: _Cursor) -> tuple:
    kind, text, off = cur.next()
    if kind == "name" and text in _SCALARS:
        return _SCALARS[text]
    if kind == "name" and text == "select":
        cur.expect("{", "select")
        options = []
        while not cur.accept("}"):
            k, t, o = cur.next()
            if k != "str":
                raise cur.src.error(o, f"select: expected a quoted option, got {_short(str(t))}")
            options.append(t[1:-1])
            cur.skip_separators()
        return ("select", tuple(options))
    if kind == "punct" and text == "<":
        k, cls, o = cur.next()
        if k != "name":
            raise cur.src.error(o, f"reference: expected a class name, got {_short(str(cls))}")
        cur.skip_separators()
        cur.next()  # the key field (ID)
        cur.expect(">", "reference")
        return ("ref", cls)
    if kind == "punct" and text == "{":
        fields = []
        while not cur.accept("}"):
            fields.append(_parse_field(cur))
            cur.skip_separators()
        return ("struct", tuple(fields))
    if kind == "name":
        return ("class", text)
    raise cur.src.error(off, f"expected a type, got {_short(text)}")


def _parse_field(cur: _Cursor) -> Field:
    kind, name, off = cur.next()
    if kind != "name":
        raise cur.src.error(off, f"expected a field name, got {_short(name)}")
    array = False
    if cur.accept("["):
        while not cur.accept("]"):  # [] or [N]
            if cur.next()[0] == "eof":
                raise cur.src.error(off, f"{name}: unclosed '['")
        array = True
    cur.expect(":", f"field {name}")
    t = _parse_type(cur)
    if cur.peek()[:2] == ("punct", "["):
        cur.skip_brackets("[", "]")  # unit annotation
    return Field(name, t, array)


def _parse_def(src: _Source, start: int, end: int, schema: Schema, is_global: bool) -> None:
    cur = _Cursor(src, _tokens(src, start, end))
    while cur.peek()[0] != "eof":
        kind, text, off = cur.peek()
        if kind == "name" and text == "class":
            cur.next()
            k, name, o = cur.next()
            if k != "name":
                raise src.error(o, f"class: expected a name, got {_short(name)}")
            cur.expect(":", f"class {name}")
            schema.classes[name] = _parse_type(cur)
            if cur.peek()[:2] == ("punct", "["):
                cur.skip_brackets("[", "]")
        else:
            f = _parse_field(cur)
            schema.fields[f.name] = f
            if is_global:
                schema.global_fields.add(f.name)
        cur.skip_separators()


# ---------------------------------------------------------------------------- data

def _default(schema: Schema, t: tuple, array: bool):
    if array:
        return []
    t = schema.resolve(t)
    k = t[0]
    if k == "double":
        return 0.0
    if k in ("int", "id", "ref"):
        return 0
    if k == "bool":
        return False
    if k == "string":
        return ""
    if k == "select":
        return t[1][0] if t[1] else ""
    return {f.name: _default(schema, f.type, f.array) for f in t[1]}


class UdfShortStructWarning(UserWarning):
    """A UDF data block wrote a struct with fewer values than its schema's fields: the format gives the rest
    defaults, which for a mass or a moment of inertia is seldom what was meant."""


class _DataParser:
    """Values of one data block by its schema. ``offsets`` (None: not kept, as in an output file's records) gets
    each value's path → the offset of its first character, and ``defaulted`` the paths of the fields a short struct
    left out (their offset: the struct's closing brace, where they would have been written); ``ends`` each struct's
    path → the offset of its closing brace."""

    def __init__(self, schema: Schema, cur: _Cursor, strict: bool = False, offsets: dict | None = None,
                 defaulted: set | None = None, ends: dict | None = None):
        self.schema = schema
        self.cur = cur
        self.src = cur.src
        self.strict = strict
        #: the structs written shorter than their schema: "file:line:col path (fields left out)"
        self.short: list[str] = []
        self.offsets = offsets
        self.defaulted = defaulted
        self.ends = ends

    def _keep(self, path: str, offset: int) -> None:
        # a mesh's vertices and faces are many (1e5 in a large file): its errors are named at the mesh
        if self.offsets is not None and ".mesh." not in path:
            self.offsets[path] = offset

    def value(self, t: tuple, array: bool, path: str):
        cur = self.cur
        self._keep(path, cur.peek()[2])
        if array:
            cur.expect("[", path)
            out = []
            while not cur.accept("]"):
                if cur.peek()[0] == "eof":
                    raise self.src.error(cur.peek()[2], f"{path}: unclosed '['")
                out.append(self.value(t, False, f"{path}[{len(out)}]"))
                cur.skip_separators()
            return out
        t = self.schema.resolve(t, self.src.name)
        k = t[0]
        if k == "struct":
            cur.expect("{", path)
            out = {}
            fields = t[1]
            n = 0
            while not cur.accept("}"):
                if n >= len(fields):
                    tok = cur.peek()
                    raise self.src.error(tok[2], f"{path}: more values than the schema's {len(fields)} fields "
                                                 f"({', '.join(f.name for f in fields)})")
                f = fields[n]
                out[f.name] = self.value(f.type, f.array, f"{path}.{f.name}" if path else f.name)
                n += 1
                cur.skip_separators()
            if self.strict and n < len(fields):
                raise self.src.error(cur.toks[cur.i - 1][2], f"{path}: {n} of the schema's {len(fields)} fields given "
                                                              f"(missing {', '.join(f.name for f in fields[n:])})")
            if n < len(fields):
                self.short.append(f"{self.src.where(cur.toks[cur.i - 1][2])} {path or 'the block'} (no "
                                  f"{', '.join(f.name for f in fields[n:])})")
            if self.ends is not None and ".mesh." not in path:
                self.ends[path] = cur.toks[cur.i - 1][2]
            for f in fields[n:]:
                out[f.name] = _default(self.schema, f.type, f.array)
                missing = f"{path}.{f.name}" if path else f.name
                self._keep(missing, cur.toks[cur.i - 1][2])
                if self.defaulted is not None:
                    self.defaulted.add(missing)
            return out
        kind, text, off = cur.next()
        if k == "double":
            if kind != "num":
                raise self.src.error(off, f"{path}: expected a number, got {_got(text)}")
            return float(text)
        if k in ("int", "id", "ref"):
            if kind != "num" or not re.fullmatch(r"[-+]?\d+", text):
                raise self.src.error(off, f"{path}: expected an integer, got {_got(text)}")
            return int(text)
        if k == "bool":
            if kind == "name" and text in ("true", "false"):
                return text == "true"
            raise self.src.error(off, f"{path}: expected true or false, got {_short(text)}")
        if kind != "str":
            raise self.src.error(off, f"{path}: expected a quoted string, got {_got(text)}")
        s = text[1:-1]
        if k == "select" and s not in t[1]:
            raise self.src.error(off, f"{path}: {_short(s)} is not one of {', '.join(repr(o) for o in t[1])}")
        return s

    def block(self) -> dict:
        """``name[]: value`` pairs of one data block."""
        cur = self.cur
        out = {}
        while cur.peek()[0] != "eof":
            kind, name, off = cur.next()
            if kind != "name":
                raise self.src.error(off, f"expected a field name, got {_short(name)}")
            if cur.accept("["):
                cur.expect("]", name)
            cur.expect(":", name)
            f = self.schema.fields.get(name)
            if f is None:
                known = ", ".join(sorted(self.schema.fields))
                raise self.src.error(off, f"{name}: not a field of this file's schema (known: {known})")
            if name in out:   # read as PEM would, the last value would win without a word
                raise self.src.error(off, f"{name}: given twice in one data block; keep one")
            out[name] = self.value(f.type, f.array, name)
            cur.skip_separators()
        return out


# ---------------------------------------------------------------------------- documents

#: The last step of a value's path: ``.name`` or ``[index]``.
_LAST_STEP = re.compile(r"(?:\.[^.\[\]]+|\[\d+\])$")


@dataclass
class UdfDocument:
    """A parsed UDF file: ``data`` (top-level fields of the data blocks), ``header``, ``records``.

    ``offsets``: each input value's path (``simulation.time.dt``, ``body[0].shape[1]``) → where it starts in the
    file's text; ``defaulted``: the paths of fields a short struct left out (placed at its closing brace);
    ``ends``: each input struct's path → where its closing brace is.
    """

    path: Path | None
    schema: Schema
    data: dict
    header: dict
    records: list  # [(label, dict)]
    includes: list
    source: _Source | None = None
    offsets: dict = field(default_factory=dict)
    defaulted: set = field(default_factory=set)
    ends: dict = field(default_factory=dict)

    @property
    def version(self) -> str:
        return str(self.header.get("EngineVersion", ""))

    def locate(self, path: str) -> tuple[str, str] | None:
        """(``file:line:col``, the path found) of the value at ``path``, else of the nearest value holding it
        (``simulation.time.dt[0]`` → ``simulation.time.dt``); None when the file gives none of them."""
        if self.source is None:
            return None
        p = path
        while p:
            if p in self.offsets:
                return self.source.where(self.offsets[p]), p
            cut = _LAST_STEP.search(p)
            p = p[:cut.start()] if cut else ""
        return None


def _include_path(src: _Source, offset: int, arg: str, base_dir: Path, root: Path) -> Path:
    """The file an ``\\include`` names, confined to ``root`` (the folder of the file the user named): an absolute
    path, a ``..`` or a link that leaves it is refused by name before anything is opened, as is anything but a
    regular file of a sane size (:func:`.files.checked_input`)."""
    if Path(arg).is_absolute() or arg.startswith(("\\", "~")):
        raise src.error(offset, f"\\include {arg!r}: an include names a file beside the UDF file (a relative "
                                f"path inside {root}), not an absolute path")
    path = base_dir / arg
    try:
        inside = path.resolve().is_relative_to(root.resolve())
    except OSError:
        inside = False
    if not inside:
        raise src.error(offset, f"\\include {arg!r}: outside the folder of the UDF file ({root}); copy the "
                                "definition file beside it")
    if not path.exists():
        raise src.error(offset, f"included file {arg!r} not found in {base_dir}")
    try:
        return checked_input(path, "UDF definition file")
    except ValidationError as err:
        raise src.error(offset, f"\\include {arg!r}: {err.message}") from None


def _parse(text: str, name: str, base_dir: Path | None, want_records: bool, depth: int = 0,
           strict: bool = False, root: Path | None = None) -> UdfDocument:
    root = base_dir if root is None else root
    if depth > 8:
        raise UdfError(name, "\\include nested too deeply")
    src = _Source(text, name)
    schema = Schema()
    header_schema = Schema()
    data: dict = {}
    header: dict = {}
    records: list = []
    includes: list = []
    stack: list[tuple[str, int, int]] = []  # (section, content start, offset of \begin)
    short: list[str] = []
    offsets: dict = {}
    defaulted: set = set()
    ends: dict = {}
    record_label = None
    pos = 0
    while True:
        m = _SECTION.search(text, pos)
        if m is None:
            break
        cmd, arg = m.group("cmd"), m.group("arg").strip('"')
        if not stack:
            _outside(src, pos, m.start())
        pos = m.end()
        if cmd == "include":
            if stack:
                raise src.error(m.start(), "\\include inside a section")
            if base_dir is None:
                raise src.error(m.start(), f"cannot resolve \\include {arg!r} without a file location")
            inc_path = _include_path(src, m.start(), arg, base_dir, root)
            inc = _parse(read_input_text(inc_path, "UDF definition file", errors="replace"), str(inc_path),
                         inc_path.parent,
                         False, depth + 1, root=root)
            schema.classes.update(inc.schema.classes)
            schema.fields.update(inc.schema.fields)
            schema.global_fields |= inc.schema.global_fields
            header.update(inc.header)
            includes.append(inc_path)
            continue
        if cmd == "begin":
            if arg == "record":
                if not want_records:   # an output file's records (thousands): skipped by plain search
                    end = text.find("\\end{record}", pos)
                    if end < 0:
                        raise src.error(m.start(), "\\begin{record} without \\end{record}")
                    pos = end + len("\\end{record}")
                    continue
                lm = _RECORD_LABEL.match(text, pos, pos + 200)
                record_label = lm.group(1) if lm else str(len(records))
                if lm:
                    pos = lm.end()
            stack.append((arg, pos, m.start()))
            if arg == "unit":  # unit conversion table for GOURMET's display; units come from unitParameter
                end = text.find("\\end{unit}", pos)
                if end < 0:
                    raise src.error(m.start(), "\\begin{unit} without \\end{unit}")
                pos = end
            continue
        # \end
        if not stack or stack[-1][0] != arg:
            opened = f"\\begin{{{stack[-1][0]}}}" if stack else "any section"
            raise src.error(m.start(), f"\\end{{{arg}}} does not close {opened}")
        section, start, begin_off = stack.pop()
        in_header = any(s[0] == "header" for s in stack)
        in_record = any(s[0] == "record" for s in stack)
        if section in ("def", "global_def"):
            _parse_def(src, start, m.start(), header_schema if in_header else schema, section == "global_def")
        elif section == "data":
            target_schema = header_schema if in_header else schema
            if not target_schema.fields:
                raise src.error(begin_off, "data block before any schema (missing \\include of the def file?)")
            keep = not (in_header or in_record)
            parser = _DataParser(target_schema, _Cursor(src, _tokens(src, start, m.start())), strict,
                                 offsets if keep else None, defaulted if keep else None, ends if keep else None)
            block = parser.block()
            short += parser.short
            if in_record:
                records.append((record_label, block))
            else:
                into = header if in_header else data
                again = sorted(set(block) & set(into))
                if again:
                    raise src.error(begin_off, f"{', '.join(again)}: given again in a second data block (the "
                                               "first block's values would be replaced); keep one")
                into.update(block)
    if stack:
        raise src.error(stack[-1][2], f"\\begin{{{stack[-1][0]}}} is never closed")
    _outside(src, pos, len(text))
    if short:
        warnings.warn(UdfShortStructWarning(
            f"{name}: {len(short)} struct(s) written shorter than the schema, the fields left out taking its "
            f"defaults (0, empty, the first choice): {'; '.join(short[:3])}{' …' if len(short) > 3 else ''} — give "
            "every field, or check that the file was not cut short"), stacklevel=2)
    return UdfDocument(Path(name) if base_dir is not None else None, schema, data, header, records, includes,
                       src, offsets, defaulted, ends)


def parse_udf(text: str, name: str = "<udf>", base_dir: Path | None = None, records: bool = False,
              strict: bool = False) -> UdfDocument:
    """Parse UDF text; ``base_dir`` resolves ``\\include``. ``records``: also parse record blocks.

    ``strict``: a struct written shorter than its schema is an error (instead of taking defaults).
    """
    return _parse(text, name, Path(base_dir) if base_dir is not None else None, records, strict=strict)


def read_udf(path, records: bool = False, strict: bool = False) -> UdfDocument:
    """Read a UDF file (its ``\\include`` files are looked up beside it); ``strict`` as in :func:`parse_udf`."""
    p = Path(path)
    try:
        text = read_input_text(p, "UDF file", errors="replace")
    except ValidationError as err:
        raise UdfError(err.path, err.message) from None
    return _parse(text, str(p), p.parent, records, strict=strict)


def read_records(path) -> list[dict]:
    """The record blocks of a PEM output file (``*_o.udf``), in order, each a dict of its fields."""
    return [block for _, block in read_udf(path, records=True).records]
