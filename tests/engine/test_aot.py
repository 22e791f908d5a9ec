"""The kernels built ahead of time (aot.py) against numba's JIT kernels: single scenes, and ensembles (their
members in threads, or in SIMD lanes: engine/backends/lanes.py).

Oracle: the JIT kernels, which test_compiled.py checks against the numpy reference feature by feature.
The ahead-of-time build compiles the very same functions, so every scene feature and method must give
bit-identical trajectories; a process that runs on the build must not import numba at all (the point
of the build); arguments of another type are refused by name; a build of other sources is not loaded.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from test_compiled import ARRAYS, FEATURES

from pem_physics import Ensemble, aot, examples, simulate
from pem_physics.engine.backends import compiled, prebuild

from conftest import ROOT

#: the builds ahead of time on one test worker (noxfile: --dist loadgroup): the store builds under a lock, which the
#: other worker would sit waiting on
pytestmark = [pytest.mark.skipif(not compiled.available(), reason="numba is not installed"), pytest.mark.slow,
              pytest.mark.xdist_group("aot-build")]


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory):
    """A build compiled cold, as on a new machine: numba's cache and the build store empty for its processes (the
    JIT there only types and links, aot_link.py), the kernels it is compared with from the tests' own cache. Once a
    session: the group's tests from other files, run between these, would tear a module's fixture down and build
    again (CI: twice 177 s)."""
    root = tmp_path_factory.mktemp("aot")
    where, fresh = root / "build", root / "cold"
    with pytest.MonkeyPatch.context() as mp:  # read by the build's processes, spawned with this environment
        mp.setenv("NUMBA_CACHE_DIR", str(fresh / "numba"))
        mp.setenv("PEM_AOT_STORE", str(fresh / "store"))
        prebuild.build(where, log=lambda *_: None)
    return where



def test_the_builds_are_grouped_on_one_worker(request):
    """``--dist loadgroup`` (noxfile's core) keeps this file's tests on one worker, which builds once; xdist marks a
    grouped test by a suffix on its node id, which pytest 9.2 drops (pytest-xdist issue 1386): the tests were
    spread over both workers without a word, each building (CI: twice 180 s)."""
    if getattr(request.config.option, "loadgroup", False):
        assert request.node.nodeid.endswith("@aot-build"), (
            f"--dist loadgroup did not group {request.node.nodeid} under pytest {pytest.__version__}: pin a pytest "
            "that pytest-xdist groups with (requirements/*.txt)")

def test_the_modules_share_one_c_runtime(build_dir):
    """pycc's C runtime (numba's containers, NRT) is compiled once for every module of a build, not once each: one
    folder of its objects in the store, beside the seven modules that link them (and load: the tests below)."""
    store = build_dir.parent / "cold" / "store"
    modules = sorted(store.glob("pem_kernels_*" + importlib.machinery.EXTENSION_SUFFIXES[0]))
    assert len(modules) == len(aot.PARTS) + len(aot.variants()), modules
    (runtime,) = [p for p in store.glob(".mixins-*") if p.is_dir()]
    assert json.loads((runtime / "objects.json").read_text()), runtime


def run(scene, monkeypatch, where, method):
    if where is None:
        monkeypatch.setenv("PEM_AOT", "0")
    else:
        monkeypatch.setenv("PEM_AOT", "1")
        monkeypatch.setenv("PEM_AOT_DIR", str(where))
    return simulate(scene, method=method, t_end=0.5)


@pytest.mark.parametrize("method", compiled.METHODS)
@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_build_gives_the_jit_kernels_numbers_bit_for_bit(feature, method, build_dir, monkeypatch):
    scene = FEATURES[feature]()
    jit = run(scene, monkeypatch, None, method)
    ahead = run(scene, monkeypatch, build_dir, method)
    assert jit.info["kernels"] == "jit" and ahead.info["kernels"] == "ahead-of-time"
    assert np.array_equal(jit.t, ahead.t)
    for k in ARRAYS:
        assert np.array_equal(getattr(jit, k), getattr(ahead, k)), k


@pytest.mark.parametrize("method", ["splitting4", "splitting2"])
def test_build_runs_translating_scenes_bit_for_bit(method, build_dir, monkeypatch):
    """Translating bodies (positions, momenta and forces in the kernels' state), without and with contacts."""
    from test_compiled_translation import TRANSLATION, mixed_scene

    for scene in (mixed_scene(), mixed_scene(rotating=False, contacts=True), examples.build("magnetic-marbles")):
        jit = run(scene, monkeypatch, None, method)
        ahead = run(scene, monkeypatch, build_dir, method)
        assert jit.info["kernels"] == "jit" and ahead.info["kernels"] == "ahead-of-time"
        for k in ARRAYS + TRANSLATION:
            assert np.array_equal(getattr(jit, k), getattr(ahead, k)), (scene.name, k)
        if jit.events is not None:
            assert len(jit.events) > 0 and jit.events.t == ahead.events.t and jit.events.kind == ahead.events.kind
            np.testing.assert_array_equal(np.array(jit.events.impulse), np.array(ahead.events.impulse))


@pytest.mark.parametrize("name", ["billiard-ball", "tippe-top", "tumbling-die"])
def test_build_runs_a_body_on_a_table_bit_for_bit(name, build_dir, monkeypatch):
    """The table's kernel (engine/contact/surface_run_kernels.py) is an entry of the build too, several contacts at
    once (the die on its corners and faces: surface_several_kernels.py) with it."""
    scene = examples.build(name)
    jit = run(scene, monkeypatch, None, "splitting4")
    ahead = run(scene, monkeypatch, build_dir, "splitting4")
    assert jit.info["kernels"] == "jit" and ahead.info["kernels"] == "ahead-of-time"
    for k in ("t", "position", "velocity", "orientation", "angular_momentum", "impact_loss"):
        assert np.array_equal(getattr(jit, k), getattr(ahead, k)), k
    assert jit.events.t == ahead.events.t and jit.events.kind == ahead.events.kind


def test_a_run_on_the_build_does_not_import_numba(build_dir, tmp_path):
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from pem_physics import examples, simulate\n"
            "for name in ('three-magnet', 'billiard-ball'):\n"
            "    tr = simulate(examples.build(name), t_end=0.05)\n"
            "    print(tr.info['engine'], tr.info['kernels'], 'numba' in sys.modules)\n")
    env = dict(os.environ, PEM_AOT_DIR=str(build_dir), PEM_AOT="1", NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["numba", "ahead-of-time", "False"] * 2


LANES_RUN = """
import sys
if {plain}:
    sys.modules["numba"] = None        # a plain install: no numba to import
sys.path.insert(0, {root!r})
import numpy as np
from pem_physics import Ensemble, examples, simulate
from pem_physics.engine.backends import lanes
ran = []                               # the module whose lanes kernels each call ran ("" for none)
real = lanes.Lanes.advance_to
lanes.Lanes.advance_to = lambda self, marks: ran.append(self.aot.paths["lanes"].name.split(".")[0]) or real(self, marks)
out = {{}}
for method in ("splitting4", "pem-rk4"):
    for E in (3, 40):  # three members: the members in threads; forty: the lanes, two blocks (one padded)
        w = np.zeros((E, 1, 3))
        w[:, 0, 0] = np.linspace(-2.0, 2.0, E)
        ran.clear()
        tr = simulate(examples.build("three-magnet"), method=method, t_end=0.05, ensemble=Ensemble(angular_velocity=w))
        out[f"{{method}}_{{E}}"] = tr.orientation, tr.angular_momentum, tr.info["kernels"], (ran or [""])[0]
np.savez({path!r}, **{{f"{{k}}_{{n}}": v[i] for k, v in out.items() for i, n in enumerate(("U", "L"))}},
         kernels=[v[2] for v in out.values()], lanes=[v[3] for v in out.values()],
         numba=[sys.modules.get("numba") is not None])
"""


def lanes_module() -> str:
    """The module whose lanes kernels this CPU should run: the widest variant it runs (:func:`aot.cpu_runs`, whose
    reading of the CPU test_variants_match_the_cpu checks), else the main build."""
    runs = [v for v in aot.variants() if aot.cpu_runs(v)]
    return aot.module_name("lanes", runs[0] if runs else "")


def test_ensembles_run_on_the_build_with_and_without_numba_in_lanes_too(build_dir, tmp_path, monkeypatch):
    """With numba installed or without it (a plain install), an ensemble takes the build and never imports numba:
    three members in threads, forty in SIMD lanes (two blocks, a thread each) on the lanes kernels built for this
    CPU's widest vector unit (:data:`aot.VARIANTS`) — each the JIT's numbers bit for bit (the same functions, no
    fused multiply-adds), splitting4 and pem-rk4."""
    from pem_physics.engine.backends import lanes

    env = dict(os.environ, PEM_AOT_DIR=str(build_dir), PEM_AOT="1", NUMBA_CACHE_DIR=str(tmp_path), PEM_THREADS="2")
    runs = {}
    for plain in (False, True):
        path = tmp_path / f"plain_{plain}.npz"
        subprocess.run([sys.executable, "-c", LANES_RUN.format(root=str(ROOT), path=str(path), plain=plain)],
                       env=env, check=True)
        runs[plain] = got = np.load(path)
        assert list(got["kernels"]) == ["ahead-of-time"] * 4 and not got["numba"][0]
        assert list(got["lanes"]) == ["", lanes_module()] * 2
    monkeypatch.setenv("PEM_AOT", "0")
    calls = [0]
    real = lanes.Lanes.advance_to
    monkeypatch.setattr(lanes.Lanes, "advance_to", lambda self, marks: calls.__setitem__(0, calls[0] + 1)
                        or real(self, marks))
    for method in ("splitting4", "pem-rk4"):
        for E in (3, 40):
            w = np.zeros((E, 1, 3))
            w[:, 0, 0] = np.linspace(-2.0, 2.0, E)
            calls[0] = 0
            jit = simulate(examples.build("three-magnet"), method=method, t_end=0.05,
                           ensemble=Ensemble(angular_velocity=w))
            assert jit.info["kernels"] == "jit" and (calls[0] > 0) == (E == 40)
            for got in runs.values():
                assert np.array_equal(jit.orientation, got[f"{method}_{E}_U"]), (method, E)
                assert np.array_equal(jit.angular_momentum, got[f"{method}_{E}_L"]), (method, E)


def test_every_lanes_build_gives_the_jits_numbers(build_dir):
    """The lanes kernels of the main build (any x86-64) and of each variant this CPU runs (AVX2, AVX-512) against
    numba's JIT kernels (compiled for this CPU) on the same call, 40 members over 300 steps: bit for bit — without
    fastmath no variant fuses a multiply-add, so a member's numbers do not depend on the CPU's vector width."""
    from pem_physics.engine.backends import lanes, lanes_kernels
    from pem_physics.engine.integrators import make_integrator
    from pem_physics.engine.system import compile_system

    scene = examples.build("three-magnet").checked()
    system = compile_system(scene)
    E = 40
    w = np.zeros((E, 1, 3))
    w[:, 0, 0] = np.linspace(-2.0, 2.0, E)
    builds = [aot.load(build_dir)] + [aot.load(build_dir, v) for v in aot.variants() if aot.cpu_runs(v)]
    assert all(b is not None for b in builds) and len({b.paths["lanes"] for b in builds}) == len(builds)
    for method in ("splitting4", "pem-rk4"):
        runner = lanes.Lanes(make_integrator(method, system, scene.settings.dt, np.repeat(system.U0[None], E, axis=0),
                                             w), 1e-6, 1000)
        entry, args = runner.call([100, 300])
        jit = lanes_kernels.blocks_splitting if entry == "lanes_splitting" else lanes_kernels.blocks_rk4
        jit(*args)
        want = args[-4:]
        assert want[3][:, 1].min() == 300 and not np.array_equal(want[0][0], want[0][-1])
        for b in builds:
            entry, args = runner.call([100, 300])
            b.call(entry, args)
            for a, x in zip(args[-4:], want):
                assert np.array_equal(a, x), (method, b.paths["lanes"].name)


def test_variants_match_the_cpu(build_dir, monkeypatch):
    """Which lanes build a CPU takes: :func:`aot.cpu_runs` (numpy's reading of the CPU) against the kernel's own
    flags in /proc/cpuinfo (Linux; an independent reading), and the choice: the widest variant the CPU runs, the
    main build where it runs none (as on a CPU without AVX2), numba's JIT only where there is no build."""
    from pem_physics.engine.backends import lanes

    flags = aot._cpuinfo_flags()
    if flags is not None and aot.variants() and not os.environ.get("NPY_DISABLE_CPU_FEATURES"):
        v3 = {"avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "abm", "movbe"} <= flags
        assert aot.cpu_runs("x86_64_v3") == v3
        assert aot.cpu_runs("x86_64_v4") == (v3 and {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}
                                             <= flags)
    monkeypatch.setenv("PEM_AOT_DIR", str(build_dir))
    assert lanes.build().paths["lanes"].name.split(".")[0] == lanes_module()
    for off in aot.variants():  # each variant off in turn, from the widest: the next one, then the main build
        runs = aot.cpu_runs
        monkeypatch.setattr(aot, "cpu_runs", lambda v, off=off, runs=runs: v != off and runs(v))
        assert lanes.build().paths["lanes"].name.split(".")[0] == lanes_module()
    monkeypatch.setattr(aot, "cpu_runs", lambda v: False)
    assert lanes.build().paths["lanes"].name.split(".")[0] == aot.module_name("lanes")
    monkeypatch.setenv("PEM_AOT", "0")
    assert lanes.build() is None


ENSEMBLE_RUN = """
import sys
sys.modules["numba"] = None            # a plain install: no numba to import
sys.path.insert(0, {root!r})
import numpy as np
from pem_physics import Ensemble, examples, simulate
out = {{}}
for method in ("splitting4", "pem-rk4"):
    w = np.zeros((3, 1, 3))
    w[:, 0, 0] = (0.0, 1.5, -2.0)
    tr = simulate(examples.build("three-magnet"), method=method, t_end=0.05, ensemble=Ensemble(angular_velocity=w))
    out[method] = tr.orientation, tr.angular_momentum, tr.info["kernels"], tr.info["engine"]
np.savez({path!r}, **{{f"{{m}}_{{k}}": v[i] for m, v in out.items() for i, k in enumerate(("U", "L"))}},
         kernels=[v[2] for v in out.values()], engines=[v[3] for v in out.values()],
         numba=[("numba" in sys.modules and sys.modules["numba"] is not None)])
"""


def test_an_ensemble_without_numba_runs_on_the_build_members_in_threads(build_dir, tmp_path, monkeypatch):
    """A plain install (no numba) has the build but not numba's parallel kernels: an ensemble runs its members on the
    build, in threads (here two for three members) — the JIT ensemble's numbers bit for bit (the same member
    function), numba never imported; PEM's scheme too (its driver clock kept per member)."""
    path = tmp_path / "ens.npz"
    env = dict(os.environ, PEM_AOT_DIR=str(build_dir), PEM_AOT="1", NUMBA_CACHE_DIR=str(tmp_path), PEM_THREADS="2")
    subprocess.run([sys.executable, "-c", ENSEMBLE_RUN.format(root=str(ROOT), path=str(path))], env=env, check=True)
    got = np.load(path)
    assert list(got["kernels"]) == ["ahead-of-time"] * 2 and list(got["engines"]) == ["numba"] * 2
    assert not got["numba"][0]
    monkeypatch.setenv("PEM_AOT", "0")
    for method in ("splitting4", "pem-rk4"):
        w = np.zeros((3, 1, 3))
        w[:, 0, 0] = (0.0, 1.5, -2.0)
        jit = simulate(examples.build("three-magnet"), method=method, t_end=0.05,
                       ensemble=Ensemble(angular_velocity=w))
        assert jit.info["kernels"] == "jit"
        assert np.array_equal(jit.orientation, got[f"{method}_U"]), method
        assert np.array_equal(jit.angular_momentum, got[f"{method}_L"]), method
        assert not np.array_equal(jit.orientation[:, 0], jit.orientation[:, 1])   # the members differ


def test_arguments_of_another_type_are_refused(build_dir):
    build = aot.load(build_dir)
    kind, args = next(prebuild.splitting_probes())
    build.check(kind, args)  # the probe's own arguments fit
    bad = list(args)
    bad[1] = bad[1].astype(np.float32)
    with pytest.raises(TypeError, match=r"member_splitting: argument 1: \['array', '<f4'"):
        build.check(kind, tuple(bad))
    with pytest.raises(TypeError, match="arguments where the build has"):
        build.check(kind, tuple(args[:-1]))


def test_a_build_of_other_sources_is_not_loaded(build_dir, monkeypatch):
    assert aot.load(build_dir) is not None
    monkeypatch.setattr(aot, "key", lambda: "0" * 16)
    assert aot.load(build_dir) is None
    monkeypatch.setenv("PEM_NUMBA", "0")
    monkeypatch.undo()
    monkeypatch.setenv("PEM_AOT", "0")
    assert aot.load(build_dir) is None


def test_run_says_how_to_start_without_numba_only_when_it_started_numba(build_dir, tmp_path, monkeypatch, capsys):
    """`run` on the JIT kernels notes `build-engine` (stderr); on the build, with -q or PEM_AOT=0 it does not."""
    from pem_physics import cli

    def note(folder, *extra, aot_on="1"):
        monkeypatch.setenv("PEM_AOT_DIR", str(folder))
        monkeypatch.setenv("PEM_AOT", aot_on)
        assert cli.main(["run", "example:three-magnet", "-o", str(tmp_path / "out"), "--t-end", "0.01", *extra]) == 0
        return "build-engine" in capsys.readouterr().err

    empty = tmp_path / "no-build"
    empty.mkdir()
    assert note(empty)
    assert not note(empty, "-q")
    assert not note(empty, aot_on="0")
    assert not note(build_dir)


@pytest.mark.parametrize("case", ["walls", "gravity", "periodic", "sphere container"])
def test_build_runs_the_3d_gas_bit_for_bit(case, build_dir, monkeypatch):
    """The hard-sphere gas engine's 3D kernels in the build (every case Blender makes: walls, gravity, periodic;
    containers are runtime data of the walls case) give the JIT kernels' collisions and positions bit for bit."""
    from pem_physics.gas import edmd
    from pem_physics.gas.state import make_gas

    state = make_gas(200, 0.2, 3, seed=1, periodic=case == "periodic",
                     container="sphere" if case == "sphere container" else "box")
    gravity = np.array([0.0, 0.0, -0.5]) if case == "gravity" else None
    out = []
    for where in (None, build_dir):
        if where is None:
            monkeypatch.setenv("PEM_AOT", "0")
        else:
            monkeypatch.setenv("PEM_AOT", "1")
            monkeypatch.setenv("PEM_AOT_DIR", str(where))
        eng = edmd.make_engine(state, 0.9, log=True, gravity=gravity)
        assert eng.kernels == ("jit" if where is None else "ahead-of-time")
        eng.advance(2.0, 10**7)
        out.append((eng.n_collisions, eng.n_wall_events, eng.positions_at(2.0), eng.event_log().time))
    (n1, w1, x1, t1), (n2, w2, x2, t2) = out
    assert n1 > 100 and (n1, w1) == (n2, w2)
    assert np.array_equal(x1, x2) and np.array_equal(t1, t2)


def test_a_gas_command_on_the_build_does_not_import_numba(build_dir, tmp_path):
    """``pem gas`` (3D, periodic) on the build: the event engine's JIT kernels live in their own module
    (gas/edmd_kernels.py), imported only when a case is missing from the build."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from pem_physics.cli import main\n"
            f"main(['gas', '--n', '500', '--eta', '0.2', '--t-end', '1', '-o', {str(tmp_path / 'out')!r}, '-q'])\n"
            "import json, pathlib\n"
            f"s = json.loads(pathlib.Path({str(tmp_path / 'out' / 'summary.json')!r}).read_text())\n"
            "print(s['engine'], s['collisions'] > 0, 'numba' in sys.modules)\n")
    env = dict(os.environ, PEM_AOT_DIR=str(build_dir), PEM_AOT="1", NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["numba", "True", "False"]


def test_a_run_writes_its_csv_on_the_build_without_numba(build_dir, tmp_path):
    """The CSV writer's row formatter (pem_physics/ryu.py) is an entry of the build (``csv_rows``): a run on the
    build formats its CSV without importing numba, in the bytes of the repr path, and the CSV reads back to the
    NPZ's numbers bit for bit."""
    out = tmp_path / "out"
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "import numpy as np\n"
            "from pem_physics.cli import main\n"
            "from pem_physics.io import output\n"
            f"main(['run', 'example:pendulum', '-o', {str(out)!r}, '--t-end', '0.5', '-q'])\n"
            "rng = np.random.default_rng(0)\n"
            "table = np.ascontiguousarray(rng.normal(size=(300, 9)) * 10.0 ** rng.integers(-9, 20, size=(300, 9)))\n"
            "built = bytes(output.csv_rows(table))\n"
            "output._rows_kernel = lambda: None\n"
            "print(built == bytes(output.csv_rows(table)), 'numba' in sys.modules)\n")
    env = dict(os.environ, PEM_AOT_DIR=str(build_dir), PEM_AOT="1", NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert res.stdout.split() == ["True", "False"]
    rows = (out / "trajectory.csv").read_text().splitlines()
    npz = np.load(out / "trajectory.npz")
    energy = np.array([float(r.rsplit(",", 1)[1]) for r in rows[1:]])
    assert rows[0].endswith(",energy_total") and np.array_equal(energy.view(np.uint64),
                                                                npz["total_energy"].view(np.uint64))


def test_the_build_steps_without_the_gil(build_dir, monkeypatch):
    """The build's kernels release the GIL as the JIT ones do (aot._releasing_the_gil): independent bodies step in
    threads on it (engine/backends/groups.py), bit for bit as one run."""
    from test_groups import longest_pause_while_stepping, mixed_scene

    from pem_physics.engine.backends import groups

    monkeypatch.setenv("PEM_AOT", "1")
    monkeypatch.setenv("PEM_AOT_DIR", str(build_dir))
    took, pause = longest_pause_while_stepping()
    assert pause < 0.5 * took, (took, pause)
    monkeypatch.setattr(groups, "MIN_BODY_STEPS", 0)
    monkeypatch.setenv("PEM_THREADS", "3")
    scene = mixed_scene("splitting4")
    threaded = simulate(scene)
    monkeypatch.setenv("PEM_THREADS", "1")
    whole = simulate(scene)
    assert threaded.info["threads"] == 3 and threaded.info["kernels"] == whole.info["kernels"] == "ahead-of-time"
    for name in ARRAYS:
        assert np.array_equal(getattr(threaded, name), getattr(whole, name)), name
