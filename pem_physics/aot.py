"""Kernels built ahead of time: a run that starts without numba.

numba compiles the kernels on first use and caches the machine code on disk, but every new process still imports
numba (~0.3 s) and initialises its compiler to load that cache (~0.5 s) — longer than the whole run of a PEM sample
(1e5 RK4 steps, ~0.3 s). ``pem build-engine`` (:mod:`pem_physics.engine.backends.prebuild`, which knows what a build
holds) compiles the very functions the JIT path calls once more, with numba's ahead-of-time compiler, into Python
extension modules that need only numpy at run time — one per part (:data:`PARTS`), each compiled in a process of its
own, side by side. Each kernel module names its own entries (``BUILD_ENTRIES``: kind → function), so this module
knows no kernel: :func:`build` compiles the dispatchers it is handed. A run loads a build (:func:`load`) and calls
its kernels (:meth:`Build.call`): same machine code, bit-identical results, no numba import. The kernels release the
GIL while they run (:func:`_releasing_the_gil`), as the JIT entries do: independent bodies step in threads. The
ensembles' lanes kernels are built once more for each wider vector unit (:data:`VARIANTS`: AVX2, AVX-512), the one
this CPU runs chosen at run time.

The build lives beside numba's cache (``<cache>/aot``, or ``PEM_AOT_DIR``), or ships in the package
(:data:`SHIPPED`: the Blender extension's zip carries builds for Blender's Pythons), under a name keyed on the
kernels' source, the Python minor version, numpy's major version and the machine, so an edited kernel or another
interpreter never loads a stale build; it is written to a temporary folder and moved into place (a crash leaves no
half-written module). Linking needs a C compiler (gcc, clang or MSVC). Each call checks its arguments against the
types the build was made for (kind, dtype, dimensions, layout of every array and of every field of a record),
because compiled code does not check them itself. ``PEM_AOT=0`` (or ``PEM_NUMBA=0``) turns it off.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import json
import os
import platform
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import PemError
from .jit import COMPILED_SOURCES, cache_dir

try:  # the interpreter's own SHA-256 (3.11: _sha256, 3.12+: _sha2); hashlib loads OpenSSL first, ~4 ms of a ~0.25 s run
    from _sha256 import sha256
except ImportError:
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

#: What a build is keyed on (:func:`key`): every file compiled code reads (:data:`pem_physics.jit.COMPILED_SOURCES`),
#: this builder, the probes that give the entries' argument types and the runners that make those arguments.
SOURCES = COMPILED_SOURCES + ("aot.py", "aot_link.py", "engine/backends/prebuild.py", "engine/backends/compiled.py",
                               "engine/backends/lanes.py")


_loaded: dict = {}


#: Builds shipped with the package (the Blender extension's zip carries them: ``scripts/extension.py`` compiles
#: them for each Python and numpy Blender bundles), searched before the user's own (:func:`folders`).
SHIPPED = Path(__file__).resolve().parent / "_aot"


def folder() -> Path:
    """Where builds are made and kept: ``PEM_AOT_DIR`` or ``aot`` in the compile cache
    (:func:`pem_physics.jit.cache_dir`)."""
    env = os.environ.get("PEM_AOT_DIR")
    return Path(env) if env else cache_dir() / "aot"


def store() -> Path:
    """Where builds are compiled, once per machine for each :func:`module_name` (sources, Python, numpy, variant):
    ``PEM_AOT_STORE``, or ``aot-store`` in the compile cache. Nothing loads from here: ``pem build-engine``,
    ``pip install``, the extension's zip and the tests copy their build out of it
    (:func:`pem_physics.engine.backends.prebuild.build`)."""
    env = os.environ.get("PEM_AOT_STORE")
    return Path(env) if env else cache_dir() / "aot-store"


@contextmanager
def _locked(path: Path):
    """An exclusive lock on ``path`` (created) while the block runs, where the platform has ``fcntl``: two
    processes building the same module (two test workers, a test and ``pip install``) build it once."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock; a second builder compiles the same module again
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def folders() -> list:
    """Where :func:`load` looks, in order: ``PEM_AOT_DIR`` alone when set, else the shipped builds
    (:data:`SHIPPED`), then the user's (:func:`folder`)."""
    return [folder()] if os.environ.get("PEM_AOT_DIR") else [SHIPPED, folder()]


def abi_tag() -> str:
    """The interpreter and numpy a build is for: an extension module loads into one CPython minor version
    (``cpython_311``) and one numpy major version (``np1``, ``np2``)."""
    return f"{sys.implementation.cache_tag.replace('-', '_')}_np{np.__version__.split('.')[0]}"


#: (the sources' paths, their sizes and modification times, the key): :func:`key` hashes them again only when
#: they change
_key_memo: list = [None, None, ""]


def key() -> str:
    """What a build depends on: the kernels' and Model's source, Python and numpy (:func:`abi_tag`), the machine.
    Not the interpreter's full version string: a build made with one CPython 3.11 loads in any other (Blender's).
    Hashed once per process while the files stay as they were (each run looks for a build: hashing ~150 kB of
    source took ~0.7 ms a look, two looks a run)."""
    if _key_memo[0] is None:
        package = Path(__file__).resolve().parent
        _key_memo[0] = [str(package / name) for name in SOURCES]
    stamp = tuple((st.st_size, st.st_mtime_ns) for st in map(os.stat, _key_memo[0]))
    if _key_memo[1] != stamp:
        h = sha256()
        for p in _key_memo[0]:
            with open(p, "rb") as f:
                h.update(f.read())
        h.update(f"{abi_tag()}|{platform.machine()}|{sys.platform}".encode())
        _key_memo[1:] = [stamp, h.hexdigest()[:16]]
    return _key_memo[2]


#: Builds of the lanes kernels (:mod:`pem_physics.engine.backends.lanes`) for wider vector units, beside the main build
#: (which is for any CPU of its architecture: SSE2 on x86-64, two lanes of doubles): variant name → the LLVM CPU it is
#: compiled for, widest first. x86-64-v3 is AVX2 (four lanes; every x86-64 CPU since 2013–2015), x86-64-v4 AVX-512 (LLVM
#: still prefers 256-bit vectors there, as numba's JIT does on such a CPU, with AVX-512's 32 registers and masks). The
#: first this CPU runs is taken (:func:`cpu_runs`). Without fastmath LLVM fuses no multiply-add, so every variant
#: gives the main build's numbers bit for bit (``tests/engine/test_aot.py``).
VARIANTS = {"x86_64_v4": "x86-64-v4", "x86_64_v3": "x86-64-v3"}
#: the entries a variant holds: the lanes kernels only (the single-scene kernels gain nothing from wide vectors)
VARIANT_ENTRIES = ("lanes_splitting", "lanes_rk4")
#: what a CPU needs for each variant, in numpy's names (``__cpu_features__``), and in /proc/cpuinfo's for the
#: features numpy 1.26 and 2.1 do not name; numpy 2.4 names the levels themselves (``X86_V3``, ``X86_V4``)
_NEEDS = {"x86_64_v3": (("AVX", "AVX2", "FMA3", "F16C"), {"bmi1", "bmi2", "abm", "movbe"}),
          "x86_64_v4": (("AVX", "AVX2", "FMA3", "F16C", "AVX512_SKX"), {"bmi1", "bmi2", "abm", "movbe"})}


#: The parts of a build, each its own extension module compiled in a process of its own
#: (:func:`pem_physics.engine.backends.prebuild.build` runs them side by side): the single-scene splitting kernel, PEM's
#: (apart: the two cores then end about together), the ensembles' lanes, the table's, the 3D gas with the CSV writer
#: (small, and each module carries ~0.3 MB of numba's runtime). A run loads the parts it finds (:func:`load`);
#: a part missing or unloadable leaves its kernels to numba's JIT.
PARTS = ("splitting", "pem", "lanes", "table", "gas")


def module_name(part: str, variant: str = "") -> str:
    """The file name (without suffix) of the build of ``part`` (:data:`PARTS`) for this source and interpreter;
    ``variant``: one of :data:`VARIANTS` (the lanes only), or "" for any CPU of the architecture."""
    return f"pem_kernels_{part}_{variant + '_' if variant else ''}{abi_tag()}_{key()}"


def variants() -> list:
    """The variants this machine's architecture has (x86-64 only: the others build for their own baseline)."""
    return list(VARIANTS) if platform.machine().lower() in ("x86_64", "amd64") else []


@functools.cache
def _cpuinfo_flags() -> set | None:
    """The first processor's feature flags in /proc/cpuinfo (Linux), or None where there is none."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def cpu_runs(variant: str) -> bool:
    """Whether this CPU runs the build ``variant`` (:data:`VARIANTS`), from what numpy detected at start-up (its
    ``__cpu_features__``, which ``NPY_DISABLE_CPU_FEATURES`` may have switched off too): numpy 2.4 names the x86-64
    levels itself (``X86_V3``, ``X86_V4``); before (1.26, 2.1: Blender's), their vector features (:data:`_NEEDS`),
    with BMI1/2, LZCNT and MOVBE from /proc/cpuinfo where there is one (every CPU with AVX2 and FMA has them; a
    virtual machine may hide them)."""
    if variant not in variants():
        return False
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as has
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as has
    level = "X86_V" + variant[-1]
    if level in has:
        return bool(has[level])
    vector, scalar = _NEEDS[variant]
    if not all(has.get(f) for f in vector):
        return False
    flags = _cpuinfo_flags()
    return flags is None or scalar <= flags


def spec(x):
    """A JSON-able description of an argument's compiled type (what the build's wrapper assumes)."""
    if x is None:
        return "none"
    if isinstance(x, np.ndarray):
        return ["array", x.dtype.str, x.ndim, bool(x.flags.c_contiguous)]
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, (int, np.integer)):
        return "int"
    if isinstance(x, (float, np.floating)):
        return "float"
    if isinstance(x, tuple):
        return ["tuple", [spec(v) for v in x]]
    raise TypeError(f"no compiled type for {type(x).__name__}")


@dataclass
class Build:
    """The loaded ahead-of-time modules (one per part of :data:`PARTS` found) and the argument types of each kernel."""

    modules: dict   # kernel kind -> the extension module that exports it
    paths: dict     # part -> the module's file
    specs: dict     # kernel kind -> its arguments' :func:`spec`

    def check(self, kind: str, args: tuple) -> None:
        """Refuse a call whose arguments are not of the types the build was compiled for."""
        got, want = [spec(a) for a in args], self.specs[kind]
        if got != want:
            bad = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w) if len(got) == len(want) else None
            where = f"argument {bad}: {got[bad]} where the build has {want[bad]}" if bad is not None else (
                f"{len(got)} arguments where the build has {len(want)}")
            raise TypeError(f"ahead-of-time kernel member_{kind}: {where} (rebuild: pem build-engine)")

    def entry(self, kind: str):
        """The compiled entry ``kind`` itself (unchecked: :meth:`check` its arguments once)."""
        return getattr(self.modules[kind], "member_" + kind)

    def call(self, kind: str, args: tuple):
        """Run the entry ``kind`` on ``args``, checked first (:meth:`check`)."""
        self.check(kind, args)
        return self.entry(kind)(*args)


def enabled() -> bool:
    return os.environ.get("PEM_AOT", "1") != "0" and os.environ.get("PEM_NUMBA", "1") != "0"


def load(where: Path | None = None, variant: str = "") -> Build | None:
    """The build for this source and interpreter, or None (none built, turned off, or not loadable): each part of
    :data:`PARTS` (a ``variant``'s: the lanes) from ``where``, or from the first of :func:`folders` that has it;
    ``variant``: one of :data:`VARIANTS` (whether this CPU runs it is the caller's test, :func:`cpu_runs`), or "" for
    the main build."""
    if not enabled():
        return None
    places = (Path(where),) if where is not None else tuple(folders())
    memo = (places, variant, key())
    if memo in _loaded:
        return _loaded[memo]
    modules, paths, specs = {}, {}, {}
    for part in ("lanes",) if variant else PARTS:
        for place in places:
            found = _load_part(place, module_name(part, variant))
            if found is not None:
                module, paths[part], part_specs = found
                specs.update(part_specs)
                modules.update(dict.fromkeys(part_specs, module))
                break
    build = Build(modules, paths, specs) if paths else None
    _loaded[memo] = build
    return build


def holding(*kinds) -> Build | None:
    """The build (:func:`load`) when it holds every kernel of ``kinds`` (``"splitting"`` …), else None."""
    build = load()
    return build if build is not None and all(k in build.specs for k in kinds) else None


def _load_part(where: Path, name: str):
    """(module, path, specs) of the module ``name`` in ``where``, or None: not there, or not loadable (warned)."""
    so = where / (name + importlib.machinery.EXTENSION_SUFFIXES[0])
    meta = where / (name + ".json")
    if not (so.is_file() and meta.is_file()):
        return None
    try:
        specs = json.loads(meta.read_text(encoding="utf-8"))["specs"]
        spec_ = importlib.util.spec_from_file_location(name, so)
        module = importlib.util.module_from_spec(spec_)
        spec_.loader.exec_module(module)
    except (ImportError, OSError, ValueError, KeyError) as err:
        # a build this interpreter cannot load (another numpy's ABI, missing system libraries, a damaged
        # file): numba's JIT kernels instead, as without a build — said, since their compile takes minutes
        import warnings

        warnings.warn(f"the kernels built ahead of time at {so} could not be loaded ({type(err).__name__}: "
                      f"{err}); numba's JIT compiles them instead (a minute or more the first time). Rebuild "
                      "them with `pem build-engine --force`", RuntimeWarning, stacklevel=3)
        return None
    return module, so, specs


@contextmanager
def _releasing_the_gil():
    """numba's ahead-of-time compiler with ``nogil`` (which ``cc.export`` cannot ask for): each exported kernel's
    Python wrapper releases the GIL while the compiled code runs, as the JIT kernels declared ``nogil`` do, so
    independent bodies can run in threads (:mod:`pem_physics.engine.backends.groups`). The wrapper reads
    ``flags.release_gil`` of the flags pycc makes for every export; this makes them with it set."""
    from numba.pycc import compiler as pycc

    plain = pycc.Flags

    class Flags(plain):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            self.release_gil = True

    pycc.Flags = Flags
    try:
        yield
    finally:
        pycc.Flags = plain


def build(part: str, probes, where: Path | None = None, force: bool = False, log=print, variant: str = "") -> Path:
    """Compile the part ``part`` (:data:`PARTS`) ahead of time into ``where`` (default :func:`folder`).

    ``probes`` yields (kind, dispatcher, args): the numba dispatcher of each kind the part holds and the arguments of
    one call of it (:func:`pem_physics.engine.backends.prebuild.probes`):
    the build is compiled for those argument types; for the CPU of ``variant`` (:data:`VARIANTS`), or for any CPU
    of this architecture (""). Returns the module's path. Needs numba and a C compiler; raises
    :class:`PemError` saying which is missing.
    """
    where = Path(where) if where is not None else folder()
    name = module_name(part, variant)
    with _locked(where / f".{name}.lock"):
        return _build(probes, where, name, force, log, variant)


def compiler_class():
    """numba's ahead-of-time compiler (``numba.pycc.CC``); a :class:`PemError` naming what is missing (it imports
    setuptools, which a venv need not have)."""
    try:
        from numba.pycc import CC
    except ImportError as err:
        raise PemError(f"pem build-engine: numba's ahead-of-time compiler cannot be loaded ({err}): install "
                       "setuptools (pip install setuptools). The package works without the build: runs keep using "
                       "numba's JIT kernels.") from err
    return CC


def _mixin_objects(cc, build_dir: str, where: Path) -> list:
    """The object files of the C runtime pycc links into every module: its module glue (compiled with the module's
    name, so once per module, in ``build_dir``) and numba's containers and NRT, compiled once per numba and
    interpreter into ``where`` and shared by every part and variant (1.4 s of the C compiler a module, seven modules a
    build), where ``CC._compile_mixins`` compiles them all for each module."""
    import hashlib
    import shutil
    import tempfile

    sources = cc._get_mixin_sources()
    if not sources or not sources[0].endswith("modulemixin.c"):  # another pycc than the one this was written for
        return type(cc)._compile_mixins(cc, build_dir)
    include_dirs = cc._toolchain.get_python_include_dirs()

    def compile_(srcs, into):
        return cc._toolchain.compile_objects(srcs, into, include_dirs=include_dirs, macros=cc._get_mixin_defines(),
                                             extra_cflags=cc._get_extra_cflags())

    shared = sources[1:]
    defines = [d for d in cc._get_mixin_defines() if d[0] != "PYCC_MODULE_NAME"]
    digest = hashlib.sha256(repr((defines, cc._get_extra_cflags(), sys.version, include_dirs,
                                  importlib.machinery.EXTENSION_SUFFIXES[0])).encode())
    for src in shared:  # their text, not their paths: another numba in the same venv has the same paths
        digest.update(Path(src).read_bytes())
    tag = digest.hexdigest()[:16]
    home = where / f".mixins-{tag}"
    with _locked(where / f".mixins-{tag}.lock"):
        if not (home / "objects.json").is_file():
            tmp = Path(tempfile.mkdtemp(prefix=".mixins-build-", dir=where))
            try:
                objects = [os.path.relpath(o, tmp) for o in compile_(shared, str(tmp))]
                (tmp / "objects.json").write_text(json.dumps(objects), encoding="utf-8")
                os.replace(tmp, home)  # whole or not at all: objects.json is in it
            except BaseException as err:
                shutil.rmtree(tmp, ignore_errors=True)
                if not (isinstance(err, OSError) and (home / "objects.json").is_file()):
                    raise  # (else another builder's got there first: Windows has no lock)
    objects = json.loads((home / "objects.json").read_text(encoding="utf-8"))
    return compile_(sources[:1], build_dir) + [str(home / o) for o in objects]


def _prune(where: Path, name: str) -> None:
    """Remove builds of other sources of this part, interpreter and variant from ``where`` once they are older than
    :data:`pem_physics.jit.KEEP_DAYS`: a store or folder two checkouts share (a dev tree beside an installed copy, two
    test runs) holds both versions' builds, and one removing the other's at once would pull a module from under
    the other's copy or load. Windows cannot remove a module another process loaded: they stay there."""
    if sys.platform == "win32":
        return
    from .jit import KEEP_DAYS

    now = time.time()
    for old in where.glob(name.replace(key(), "*")):  # other Pythons', numpys' and variants' builds stay
        try:
            if (not old.name.startswith(name) and not old.name.startswith(".")
                    and now - old.stat().st_mtime > KEEP_DAYS * 86400):
                old.unlink()
        except OSError:  # removed by another builder meanwhile
            pass


def _build(probes, where: Path, name: str, force: bool, log, variant: str) -> Path:
    """:func:`build` under its lock."""
    from .jit import numba as _numba

    so = where / (name + importlib.machinery.EXTENSION_SUFFIXES[0])
    if so.is_file() and (where / (name + ".json")).is_file() and not force:
        log(f"already built: {so}")
        return so
    nb = _numba()
    if nb is None:
        raise PemError("pem build-engine needs numba (pip install pem_physics[fast]); it is not installed "
                       "or PEM_NUMBA=0 turns it off")
    import shutil  # here, not at the top: a run that loads the build never needs shutil or tempfile
    import tempfile
    import warnings

    CC = compiler_class()
    t0 = time.perf_counter()

    def no_compiler(err) -> PemError:   # distutils reports a missing compiler in many ways: name it once here
        return PemError(f"pem build-engine: compiling the kernels ahead of time failed ({err}); it needs a C "
                        "compiler (gcc, clang or MSVC) and the Python headers. The package works without the build: "
                        "runs keep using numba's JIT kernels.")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nb.NumbaPendingDeprecationWarning)
        where.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=where))
        try:                                   # nothing half-built stays, whatever stops it (Ctrl-C too)
            try:
                cc = CC(name)
            except Exception as err:
                raise no_compiler(err) from err
            cc.output_dir = str(tmp)
            cc.verbose = False
            cc.target_cpu = VARIANTS.get(variant, "")  # "": LLVM's generic CPU of the architecture
            cc._compile_mixins = lambda build_dir: _mixin_objects(cc, build_dir, where)
            specs = {}
            for kind, disp, args in probes:
                types = tuple(nb.typeof(a) for a in args)
                disp.compile(types)
                sig = disp.overloads[types].signature
                cc.export("member_" + kind, sig)(disp.py_func)
                specs[kind] = [spec(a) for a in args]
            try:
                with _releasing_the_gil():
                    cc.compile()
            except Exception as err:
                raise no_compiler(err) from err
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    built = tmp / so.name
    if sys.platform.startswith("linux") and shutil.which("strip"):
        # pycc links with debug information, half to two thirds of the file and never read: the Blender zip
        # carries six builds
        import subprocess

        subprocess.run(["strip", "--strip-unneeded", str(built)], capture_output=True, check=False)
    (tmp / (name + ".json")).write_text(json.dumps({"specs": specs, "numba": nb.__version__,
                                                     "numpy": np.__version__, "python": sys.version}),
                                        encoding="utf-8")
    os.replace(built, so)  # the module first: load() wants both, so a crash between leaves no usable half
    os.replace(tmp / (name + ".json"), where / (name + ".json"))
    shutil.rmtree(tmp, ignore_errors=True)
    _prune(where, name)
    _loaded.clear()  # a load before the build found none
    log(f"built {so} in {time.perf_counter() - t0:.1f} s")
    return so
