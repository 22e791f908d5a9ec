"""PEM parity: each fixture input, run with the method it names, reproduces the original engine's records.

Oracle: the ``simulationResult`` records the original C++ engine wrote when it ran the very same input
file (``tests/data/pem/NAME.npz``, made by ``tests/data/make_pem_reference.py``): orientation, ω, L
and torque at every record, to 1e-9 relative to each quantity's scale over the run.

Two of PEM's records are its own bookkeeping, reproduced here by stepping our PEM scheme and reading
the same internal quantities: the torque is the one of the step's last stage (RK4: at the stage-3
prediction of the new state; Euler: at the old state; 0 in the first record), and a hinged body's L
is PEM's stored L, all of whose components keep growing (theory §3), not the physical I·ω.

The numpy scheme is stepped over a sample's first 10,000 steps (all of most samples); the three 100,000-step samples
run whole on the compiled engine through ``simulate()``, which the compiled-against-numpy tests tie to the scheme.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from pem_physics.engine.integrators import make_integrator
from pem_physics.engine.simulate import simulate
from pem_physics.engine.system import compile_system
from pem_physics.io.udf import read_udf
from pem_physics.io.udf_scene import scene_from_udf, units_of

from conftest import DATA
from pem_fixtures import FIXTURES

PEM = DATA / "pem"
TOL = 1e-9
QUANTITIES = ("orientation", "angular_velocity", "angular_momentum", "torque")


def rel_err(ours, ref):
    """max |a − b| / max|b| per body and quantity: relative to the vector's scale over the run."""
    scale = np.abs(ref).max(axis=(0, -1), keepdims=True)
    scale = np.where(scale > 0, scale, 1.0)
    return float(np.max(np.abs(ours - ref) / scale))


def load(name):
    doc = read_udf(PEM / f"{name}.udf")
    ref = np.load(PEM / f"{name}.npz")
    return doc, scene_from_udf(doc, name), ref


def pem_records(scene, n_records: int, report: int) -> dict:
    """Our PEM scheme stepped record by record: U, ω, PEM's stored L and its last-stage torque (SI)."""
    sc = scene.checked()
    system = compile_system(sc)
    integ = make_integrator(sc.settings.method, system, sc.settings.dt, system.U0[None], system.omega0[None])
    # the numpy scheme (make_integrator), whose stage torques we can watch
    last = {"T": np.zeros((1, system.n_bodies, 3))}
    torque = integ._torque

    def watched(*args):
        last["T"] = torque(*args)
        return last["T"]

    integ._torque = watched
    out = {k: [] for k in QUANTITIES}
    for k in range(n_records):
        if k:
            integ.advance(report)
        out["orientation"].append(integ.orientation()[0])
        out["angular_velocity"].append(integ.angular_velocity()[0])
        out["angular_momentum"].append(integ.momentum()[0])
        out["torque"].append(last["T"][0])
    return {k: np.array(v) for k, v in out.items()}


def to_file_units(rec: dict, units) -> dict:
    length, mass, time, _ = units
    return {"orientation": rec["orientation"], "angular_velocity": rec["angular_velocity"] * time,
            "angular_momentum": rec["angular_momentum"] * time / (mass * length**2),
            "torque": rec["torque"] * time**2 / (mass * length**2)}


#: The numpy scheme is stepped record by record over at most this many steps of a sample (~1 ms a step); the whole
#: of the 100,000-step samples is compared by :func:`test_simulate_reproduces_the_peer` on the compiled engine.
RECORD_BY_RECORD_STEPS = 10_000


def slow_if_long(name):
    """10,000 steps of the numpy scheme (~20 s on a slow machine) run once, on numpy 2 (the shorter ones on both)."""
    steps = min(FIXTURES[name].build().settings.steps, RECORD_BY_RECORD_STEPS)
    return pytest.param(name, marks=pytest.mark.slow) if steps >= 10_000 else name


@pytest.mark.parametrize("name", [slow_if_long(n) for n in FIXTURES])
def test_pem_scheme_reproduces_the_peer_record_by_record(name):
    doc, scene, ref = load(name)
    assert scene.settings.method in ("pem-rk4", "pem-euler")
    n_records = len(ref["step"])
    report = int(ref["step"][1])
    assert n_records == scene.settings.steps // report + 1
    n = min(n_records, RECORD_BY_RECORD_STEPS // report + 1)
    ours = to_file_units(pem_records(scene, n, report), units_of(doc))
    np.testing.assert_array_equal(ref["units"], units_of(doc))
    errs = {q: rel_err(ours[q], ref[q][:n]) for q in QUANTITIES}
    assert max(errs.values()) < TOL, errs


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ellipsoid", "pendulum", "dipole", "dipole_pair", "driven_orbit"])
def test_simulate_reproduces_the_peer(name):
    """The public path: simulate() of the loaded file (the compiled engine where numba loads), the whole sample,
    every record (L compared where it is physical: no hinge here)."""
    doc, scene, ref = load(name)
    traj = simulate(scene)
    n = len(traj.t)
    assert n == len(ref["step"])
    length, mass, time, _ = units_of(doc)
    assert rel_err(traj.orientation, ref["orientation"][:n]) < TOL
    assert rel_err(traj.omega * time, ref["angular_velocity"][:n]) < TOL
    assert not any(b.hinge is not None for b in scene.bodies)
    assert rel_err(traj.angular_momentum * time / (mass * length**2), ref["angular_momentum"][:n]) < TOL


def test_hinged_body_agrees_with_the_peer_through_simulate():
    """A hinge: simulate()'s orientation and ω match; its L is the physical I·ω, PEM's is not."""
    doc, scene, ref = load("hinge")
    traj = simulate(scene)
    length, mass, time, _ = units_of(doc)
    assert rel_err(traj.orientation, ref["orientation"]) < TOL
    assert rel_err(traj.omega * time, ref["angular_velocity"]) < TOL
    # PEM's stored L has grown far from I·ω: the physical momentum is not what PEM records
    L = traj.angular_momentum * time / (mass * length**2)
    assert rel_err(L[-1:], ref["angular_momentum"][-1:]) > 0.1


@pytest.mark.parametrize("name", list(FIXTURES))
def test_reference_belongs_to_the_committed_input(name):
    """The NPZ was made from exactly this input and def file (their SHA-256 are stored in it)."""
    ref = np.load(PEM / f"{name}.npz")
    assert str(ref["input_sha256"]) == hashlib.sha256((PEM / f"{name}.udf").read_bytes()).hexdigest()
    assert str(ref["def_sha256"]) == hashlib.sha256((PEM / "pem1_3_def.udf").read_bytes()).hexdigest()
    for q in QUANTITIES:
        assert ref[q].dtype == np.float64 and ref[q].shape[0] == len(ref["step"])


@pytest.mark.slow
def test_default_method_agrees_with_pem_where_pem_is_accurate():
    """The pendulum fixture with the default method: PEM's RK4 at dt = 1e-3 is accurate here, so both
    must agree to well within the physics (a check that parity is not only bookkeeping)."""
    doc, scene, ref = load("pendulum")
    traj = simulate(scene, method="splitting4", t_end=20.0)
    n = len(traj.t)
    assert rel_err(traj.orientation, ref["orientation"][:n]) < 1e-6


def test_a_definition_file_is_named_as_such():
    """Importing PEM's schema file (it declares fields, holds no simulation) says what it is."""
    from pathlib import Path

    from pem_physics.errors import ValidationError
    from pem_physics.io.udf_scene import load_scene as load_udf

    root = Path(__file__).resolve().parents[2]
    with pytest.raises(ValidationError, match=r"pem1_3_def: this is a PEM definition \(schema\) file, not an input"):
        load_udf(root / "examples" / "scenes" / "pem1_3_def.udf")
