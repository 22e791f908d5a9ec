"""What ``pem build-engine`` builds (:mod:`pem_physics.aot` builds it): the parts (:data:`FAMILIES`), each the
kernels some modules name (their ``BUILD_ENTRIES``) and one call of each, from which the build takes the argument
types to compile ahead of time (:func:`probes`).

A module of its own, above the stages, because the probes need scenes of every kind (contacts, a table, a gas).
"""

from __future__ import annotations

from ... import aot
from .compiled import Runner


def splitting_probes():
    """(entry, args) of the single-scene splitting kernel: splitting4 on Newton's cradle (with contacts; a scene without
    takes the same types, :func:`.compiled.no_contacts`)."""
    from ...examples import build as example
    from ..contact.model import ContactModel
    from ..integrators import make_integrator
    from ..system import compile_system

    scene = example("newtons-cradle").checked()
    system = compile_system(scene)
    integ = make_integrator("splitting4", system, scene.settings.dt, system.U0[None], system.omega0[None])
    integ.contacts = ContactModel(scene, system)
    yield Runner(integ, 1e-6, 1000).member_call([0])


def pem_probes():
    """(entry, args) of the single-scene PEM kernel: pem-rk4 on the three-magnet pendulum."""
    from ...examples import build as example
    from ..integrators import make_integrator
    from ..system import compile_system

    scene = example("three-magnet").checked()
    system = compile_system(scene)
    integ = make_integrator("pem-rk4", system, scene.settings.dt, system.U0[None], system.omega0[None])
    yield Runner(integ, 1e-6, 1000).member_call([0])


def lanes_probes():
    """(entry, args) of a call of each ensemble lanes kernel (:mod:`.lanes`): the three-magnet pendulum, an ensemble
    of the smallest size the lanes take, splitting4 and pem-rk4."""
    import numpy as np

    from ...examples import build as example
    from ..integrators import make_integrator
    from ..system import compile_system
    from . import lanes

    scene = example("three-magnet").checked()
    system = compile_system(scene)
    E = lanes.MIN_MEMBERS
    for method in ("splitting4", "pem-rk4"):
        integ = make_integrator(method, system, scene.settings.dt, np.repeat(system.U0[None], E, axis=0),
                                np.repeat(system.omega0[None], E, axis=0))
        yield lanes.Lanes(integ, 1e-6, 1000).call([0])


def csv_probe() -> tuple:
    """The arguments of one call of the CSV writer's kernel (:func:`pem_physics.ryu.format_rows`)."""
    import numpy as np

    return np.zeros((2, 3)).view(np.uint64), np.zeros(2 * 3 * 25, np.uint8)


def surface_probe() -> tuple:
    """The arguments of one call of the table's kernel (:func:`..contact.surface_run.run_compiled`'s)."""
    import numpy as np

    from ...examples import build as example
    from ..contact import surface_layout as lay
    from ..contact import surface_run as sf
    from ..contact.surface_scene import model

    surface, state, _ = model(example("tippe-top").checked())
    return (sf.model_arrays(surface), sf.state_vector(state), np.zeros(3), 0, 1, 1, 0.0, 1e-3, 1,
            np.zeros((3, lay.NSTATE + 4)), 1, np.zeros((sf.EVENT_CAPACITY, 21)), 0, np.zeros(3))


class _NoKernels:
    """The gas engine's kernels while :func:`gas_probes` makes its arguments: the first call does nothing."""

    @staticmethod
    def _build(*args):
        pass


def gas_probes():
    """(entry, args) of the gas engine's two kernels for 3D gases (every 3D case: walls, gravity, periodic —
    :data:`...gas.edmd.CASES` — runs on them), on a few spheres. The 2D ones stay with numba's JIT: Blender (the
    user who cannot wait for a compile) makes 3D gases only."""
    import numpy as np

    from ...gas import edmd
    from ...gas.state import GasState

    n, d = 4, 3
    x = np.array([[0.25, 0.25, 0.25], [0.75, 0.25, 0.25], [0.25, 0.75, 0.75], [0.75, 0.75, 0.25]])
    v = np.array([[1.0, 0.5, 0.2], [-0.3, 1.0, 0.4], [0.2, -0.7, 1.0], [-1.0, 0.1, -0.5]])
    # the engine's arrays without its first kernel call (which would compile the cell-list kernel in full before the
    # build, ~20 s: the build needs only the arguments' types)
    plain = edmd._kernels, edmd._aot_build
    edmd._kernels, edmd._aot_build = (lambda: _NoKernels), (lambda case: None)
    try:
        engine = edmd.CompiledEngine(GasState(x, v, np.full(n, 0.05), np.ones(n), np.ones(d), False, 0.0))
    finally:
        edmd._kernels, edmd._aot_build = plain
    case = edmd.compiled_case(d)
    yield f"gas_build_{case}", engine.build_call(0.0)
    yield f"gas_advance_{case}", engine.advance_call(1.0, 10)


def table_probes():
    """(entry, args) of a call of the table's kernel."""
    yield "surface", surface_probe()


def gas_and_csv_probes():
    """(entry, args) of the gas engine's kernels (:func:`gas_probes`) and of the CSV writer's."""
    yield from gas_probes()
    yield "csv_rows", csv_probe()


#: The kernels of each part of a build (:data:`pem_physics.aot.PARTS`): each part is a module of its own, compiled in
#: a process of its own (:func:`build`); what each costs to compile is measured on its own (bench/bench_build.py).
FAMILIES = {"splitting": splitting_probes, "pem": pem_probes, "lanes": lanes_probes, "table": table_probes,
            "gas": gas_and_csv_probes}
#: The modules whose ``BUILD_ENTRIES`` (kind → function) name the kernels of each part.
MODULES = {"splitting": ("pem_physics.engine.backends.kernels",), "pem": ("pem_physics.engine.backends.kernels",),
           "lanes": ("pem_physics.engine.backends.lanes_kernels",),
           "table": ("pem_physics.engine.contact.surface_run_kernels",),
           "gas": ("pem_physics.gas.edmd_kernels", "pem_physics.ryu")}


def probes(part: str) -> list:
    """(kind, dispatcher, args) of each kernel of ``part``: its numba dispatcher, named by the ``BUILD_ENTRIES`` of
    the part's :data:`MODULES`, and the arguments of one call (:data:`FAMILIES`), as :func:`pem_physics.aot.build`
    takes them."""
    import importlib

    entries = {}
    for name in MODULES[part]:
        module = importlib.import_module(name)
        entries.update({kind: getattr(module, fn) for kind, fn in module.BUILD_ENTRIES.items()})
    return [(kind, entries[kind], args) for kind, args in FAMILIES[part]()]
#: The order the parts start in: the longest compile (splitting) first, then the others so that its worker goes on
#: with the table and the other with lanes, gas and PEM, and the two end about together (bench/bench_build.py).
ORDER = ("splitting", "lanes", "gas", "table", "pem")


def build_part(part: str, store: str, force: bool = False) -> tuple:
    """Compile ``part`` (the lanes: also once for each wider vector unit, :data:`pem_physics.aot.VARIANTS`) into
    ``store``: (the modules' paths, the log's lines). What each worker of :func:`build` runs, in a process of its own:
    the JIT only types and links there (:func:`pem_physics.aot_link.linked_once`), which leaves its dispatchers unusable
    for running."""
    from ...aot_link import linked_once

    lines = []
    made = probes(part)  # made first: making them may run compiled code, which linked_once forbids
    with linked_once():  # one block: the variants reuse the lanes' typing and differ only in pycc's module
        paths = [aot.build(part, made, store, force, lines.append)]
        if part == "lanes":
            paths += [aot.build(part, made, store, force, lines.append, variant=v) for v in aot.variants()]
    return [str(p) for p in paths], lines


def _stored(part: str, store) -> list | None:
    """The paths of every module of ``part`` in the store, or None when one is missing."""
    import importlib.machinery
    from pathlib import Path

    names = [aot.module_name(part)] + ([aot.module_name(part, v) for v in aot.variants()] if part == "lanes" else [])
    paths = [Path(store) / (n + importlib.machinery.EXTENSION_SUFFIXES[0]) for n in names]
    if all(p.is_file() and p.with_name(n + ".json").is_file() for p, n in zip(paths, names)):
        return [str(p) for p in paths]
    return None


def jobs() -> int:
    """How many parts compile at once: ``PEM_BUILD_JOBS``, else the CPUs this process may run on."""
    import os

    env = os.environ.get("PEM_BUILD_JOBS", "").strip()
    if env:
        return max(1, int(env))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _compile_parts(todo: list, store, force: bool) -> dict:
    """part -> :func:`build_part`'s result for each of ``todo``: side by side in fresh processes (spawned: numba and
    LLVM are not safe to fork), :func:`jobs` at a time; one part too, never in this process (:func:`build_part`)."""
    n = min(jobs(), len(todo))
    if n == 0:
        return {}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from ...errors import PemError

    pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {part: pool.submit(build_part, part, str(store), force) for part in todo}
        out = {}
        for part, future in futures.items():
            try:
                out[part] = future.result()
            except BrokenProcessPool as err:
                raise PemError(f"pem build-engine: the process compiling the {part} kernels stopped ({err}; out of "
                               "memory?). PEM_BUILD_JOBS=1 compiles one part at a time.") from err
        return out
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def build(where=None, force: bool = False, log=print) -> list:
    """``pem build-engine``: the kernels built ahead of time (:mod:`pem_physics.aot`), each part of :data:`FAMILIES` a
    module compiled in a process of its own, :func:`jobs` side by side; the lanes kernels once more for each wider
    vector unit of this architecture (:data:`pem_physics.aot.VARIANTS`). Each is compiled once per machine into
    :func:`pem_physics.aot.store` (``force``: again) and copied from there into ``where`` (default
    :func:`pem_physics.aot.folder`, where runs load it); returns the modules' paths in ``where``, in the order of
    :data:`pem_physics.aot.PARTS`."""
    import shutil
    from pathlib import Path

    store = aot.store()
    found = {part: None if force else _stored(part, store) for part in ORDER}
    done = _compile_parts([part for part in ORDER if found[part] is None], store, force)
    built = []
    for part in aot.PARTS:
        paths, lines = done[part] if part in done else (found[part], [f"already built: {p}" for p in found[part]])
        for line in lines:
            log(line)
        built += [Path(p) for p in paths]
    where = Path(where) if where is not None else aot.folder()
    if where.resolve() == store.resolve():
        return built
    where.mkdir(parents=True, exist_ok=True)
    out = []
    for so in built:
        meta = so.parent / (so.name.split(".")[0] + ".json")
        for f in (so, meta):  # the module first: a crash between leaves no loadable half (aot.load wants both)
            tmp = where / f".{f.name}.tmp"
            shutil.copy2(f, tmp)
            tmp.replace(where / f.name)
        out.append(where / so.name)
    return out


def warm() -> None:
    """Run each kernel a Blender bake or gas build uses once under numba's JIT, so that it is compiled and cached
    (the add-on's background warm-up on platforms without a build made ahead of time): splitting4 and pem-rk4 on
    a single scene, splitting4 with contacts, a body on a table, the gas engine's 3D kernels."""
    from ...examples import build as example
    from ...gas import edmd
    from ...gas.state import make_gas
    from ..simulate import simulate

    scene = example("three-magnet")
    for method in ("splitting4", "pem-rk4"):
        simulate(scene, method=method, t_end=0.01)
    simulate(example("newtons-cradle"), t_end=0.01)
    simulate(example("tippe-top"), t_end=0.01)
    if edmd.available():  # one compile serves every 3D case (walls, gravity, periodic)
        edmd.make_engine(make_gas(32, 0.1, 3, seed=0)).advance(0.1, 1000)
