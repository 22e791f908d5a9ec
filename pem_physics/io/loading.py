"""Scene and mesh loading by file type: the one entry point the CLI, the API and the add-on share."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from ..errors import PemError, ValidationError
from .files import checked_input, read_input_text

#: The gas command's built-in scenes (analysis.gas_config.EXAMPLES, a layer above: a test holds the two equal).
GAS_EXAMPLES = ("hard-sphere-gas",)


def load_scene(path: str):
    """A Scene from a TOML scene file, a PEM UDF file, a Python file defining ``scene``, or ``example:NAME``
    (``path``: a str or a path object)."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):   # a Scene, None, bytes: an AttributeError ('… has no attribute startswith')
        raise ValidationError("path", f"expected the name of a scene file or example:NAME, got {type(path).__name__}")
    if path.startswith("example:"):
        from .. import examples

        name = path.split(":", 1)[1]
        if name in GAS_EXAMPLES:   # the gas command's ("unknown example 'hard-sphere-gas'", said run and info)
            raise ValidationError(path, "a hard-sphere gas, not a scene of bodies: run it with `python -m pem_physics "
                                        f"gas {path} -o OUTDIR`")
        return examples.build(name)
    p = checked_input(path, "scene file")   # a regular file of a sane size (a FIFO would block)
    suffix = p.suffix.lower()
    if suffix == ".toml":
        from .scenefile import load_scene as load_toml

        return load_toml(p)
    if suffix == ".udf":
        from .udf_scene import load_scene as load_udf

        return load_udf(p)
    if suffix == ".py":
        return _python_scene(path, p)
    raise ValidationError(path, f"unknown scene file type {suffix!r} (expected .toml, .udf or .py)")


def load_mesh(path: str):
    """Vertices (V,3) and triangles (F,3) from OBJ/STL/PLY/OFF, duplicate vertices merged
    (:func:`.meshfile.read_mesh`)."""
    from .meshfile import read_mesh

    return read_mesh(path)


@contextlib.contextmanager
def _importable(folder: Path):
    """The scene file's folder first on ``sys.path`` while the file runs, so that it imports a module beside it as
    ``python scene.py`` would; afterwards ``sys.path`` is as it was, and the modules imported from that folder are
    forgotten (the next scene file may have a helper of the same name beside it). Only those: a module that lies
    deeper (a project's own ``.venv/…/site-packages``, numpy's or scipy's first import during the scene) stays, as
    does a package imported before (this package itself, when the scene file lies beside it): forgetting them made
    their next import load a second copy ("cannot load module more than once per process")."""
    entry = str(folder)
    before = set(sys.modules)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):   # the script may have removed it itself
            sys.path.remove(entry)
        new = set(sys.modules) - before
        tops = {name.partition(".")[0] for name in new} - before
        beside = {top for top in tops if _beside(sys.modules.get(top), top, folder)}
        for name in new:
            if name.partition(".")[0] in beside:
                del sys.modules[name]


def _beside(module, top: str, folder: Path) -> bool:
    """Whether the top-level module ``top`` was imported from ``folder`` itself: its file ``top.py`` (or an extension
    module ``top.*.so``) or its package folder ``top/`` lies directly in it."""
    where = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", None) or ()), None)
    if not where or not _inside(where, folder):
        return False
    first = Path(where).resolve().relative_to(folder).parts[0]
    return first == top or first.split(".")[0] == top


def _inside(file: str, folder: Path) -> bool:
    try:
        return Path(file).resolve().is_relative_to(folder)
    except (OSError, ValueError):
        return False


def _python_scene(path: str, p) -> object:
    """The ``scene`` a Python scene file defines; its own errors (a syntax error, an exception it raises) as one
    line naming the file and line, not a traceback through this package."""
    from ..model.scene import Scene

    source = read_input_text(p, "Python scene file")
    namespace: dict = {"__file__": str(p), "__name__": "pem_scene"}
    folder = Path(p).resolve().parent
    try:
        with _importable(folder):
            exec(compile(source, str(p), "exec"), namespace)
    except PemError:   # pem's own, raised by the script's calls: they name their item already
        raise
    except SystemExit as err:   # exit() in the scene: it would end the command as if it had succeeded
        raise ValidationError(path, f"{_where(err, p, folder)}the scene file called exit("
                                    f"{'' if err.code is None else err.code!r}) before defining its scene: a scene "
                                    "file defines 'scene' and does not exit") from None
    except SyntaxError as err:
        raise ValidationError(path, f"{_where(err, p, folder)}{type(err).__name__}: {err.msg}") from None
    except Exception as err:  # noqa: BLE001 - the user's script: any error it raises is its own
        raise ValidationError(path, f"{_where(err, p, folder)}{type(err).__name__}: {err}") from None
    if "scene" not in namespace:
        raise ValidationError(path, "a Python scene file must define a variable named 'scene'")
    scene = namespace["scene"]
    if not isinstance(scene, Scene):
        raise ValidationError(path, f"'scene' must be a pem_physics Scene, got {type(scene).__name__}")
    return scene


def _where(err: BaseException, p: Path, folder: Path) -> str:
    """Where in the scene file ``p`` the error ``err`` arose, ``line 2: ``, and where in a module beside it that the
    file imports when it arose there, ``line 2 (helper.py, line 3): ``; empty when neither is known."""
    import traceback

    frames = [(f.filename, f.lineno) for f in traceback.extract_tb(err.__traceback__)]
    if isinstance(err, SyntaxError) and err.filename:   # the file that did not parse: no frame of its own
        frames.append((err.filename, err.lineno))
    scene = str(p)
    mine = [line for file, line in frames if file == scene]
    beside = [(file, line) for file, line in frames
              if file != scene and not file.startswith("<") and Path(file).is_file() and _inside(file, folder)]
    where = f"line {mine[-1]}" if mine else ""
    if beside:
        file, line = beside[-1]
        where += f"{' ' if where else ''}({Path(file).resolve().relative_to(folder)}, line {line})"
    return f"{where}: " if where else ""
