"""Parameter sweeps: run a scene over a grid of parameter values and write one table row per grid point.

The same machinery as basin maps (:mod:`pem_physics.analysis.basin`): the whole Cartesian grid is one
:class:`~pem_physics.engine.simulate.Ensemble`, integrated in vectorised chunks (memory stays bounded),
with a progress bar; Ctrl-C stops cleanly and the partial table is written, marked incomplete.

    python -m pem_physics sweep example:three-magnet --param friction=0:2e-4:5 \\
        --param field.z=-1e-3:1e-3:5 --t-end 10 -o out/sweep

``--param NAME=VALUES`` (repeatable). VALUES is ``start:stop:count`` (``count`` evenly spaced
values, both ends included), a list ``a,b,c``, or one value (a plain override, e.g.
``friction=1e-4``). The grid is the Cartesian product in row-major order: the first ``--param``
varies slowest, the last fastest (like nested loops written in the order given).

Parameters (:data:`PARAMETERS`; SI units):

=====================  ======  ===============================================================
name                   unit    meaning
=====================  ======  ===============================================================
friction               N·m·s   pivot friction coefficient c (torque −cω on every moving body)
field.x/.y/.z          T       one lab component of the uniform external field; the other
                               components keep the scene's values
field                  T       field strength along the scene's field direction (signed)
release.x, release.y   m       lab (x, y) where the bob of the scene's one pendulum starts
                               (it hangs below the pivot at its arm's length; the other
                               coordinate keeps the scene's value); see basin.release_orientations
omega.x/.y/.z          rad/s   initial angular velocity of the one moving body, lab component
omega_body.1/.2/.3     rad/s   the same along the body's axes u1, u2, u3 at its start
=====================  ======  ===============================================================

``field`` cannot be combined with ``field.*``, nor ``omega.*`` with ``omega_body.*``. A hinged
body keeps only the part of its angular velocity along the hinge.

Outputs in the output folder (all written atomically):

- ``sweep.csv``: the parameter columns, then the outcomes (:func:`columns` lists them with units):
  total energy at the start, end and its maximum over the records; the final angular speed;
  for one moving body its final ω components; for one pendulum its bob's final position and
  speed (the bob is its first dipole, else its centre of mass); for a pendulum over fixed magnets
  the ``label`` of the magnet it settled over (basin maps' classification, −1: none) and
  ``settle_time``; ``t_final`` (time reached) and ``completed`` (1 if the member reached t_end).
  Members never run (after an interruption) have empty outcomes (``nan``) and completed 0.
- ``sweep.json``: scene, method, dt, t_end, record interval, grid definition, column units,
  member counts, wall time and the ``complete`` flag (false after Ctrl-C or a blow-up).
- ``sweep.png``: a heat map of one outcome (``--heatmap``; default ``label`` for a magnet
  pendulum, else ``energy_final``) when exactly two parameters take several values.

Each member runs exactly like the scene with its parameter values set (friction and field per
member through :attr:`pem_physics.engine.system.System.per_member`); with the fixed-step methods a
member's numbers equal a single run's, with ``dop853`` the step sizes are shared by the members
of a chunk, so they agree to the tolerances.
"""

from __future__ import annotations

import csv
import difflib
import json
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..engine.simulate import Ensemble, simulate
from ..engine.system import compile_system
from ..errors import SimulationError, ValidationError
from ..io.files import atomic_open
from ..io.scenefile import MAX_MAGNITUDE
from ..model.scene import Scene, rounded_end
from . import basin, chunks, duration
from .sweep_parameters import PARAMETERS

#: Largest grid accepted (a typo like count 1e8 should fail at once, not after hours).
MAX_MEMBERS = 10_000_000
#: Records kept per chunk are bounded to about this many bytes (chunks shrink for big scenes).
MEMORY_BUDGET = 256 * 2**20
#: Axes of a heat map with at most this many grid values get one tick per value.
MAX_GRID_TICKS = 8
AXIS = {"x": 0, "y": 1, "z": 2, "1": 0, "2": 1, "3": 2}


@dataclass(frozen=True)
class SweepParam:
    """One swept parameter: its name (a key of :data:`PARAMETERS`), values (n,) in SI, and the text given."""

    name: str
    values: np.ndarray
    spec: str

    @property
    def where(self) -> str:
        """How error messages name it: the command-line option as typed."""
        return f"--param {self.spec}"


def _number(text: str, where: str, what: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise ValidationError(where, f"{what} must be a number, got {text!r}") from None
    if not math.isfinite(x):
        raise ValidationError(where, f"{what} must be finite, got {text!r}")
    if abs(x) > MAX_MAGNITUDE:   # a scene file's bound on every number: beyond it sums overflow
        raise ValidationError(where, f"{what} {x:g} is beyond ±{MAX_MAGNITUDE:g} (SI), as in a scene file")
    return x


def parse_param(text: str) -> SweepParam:
    """A :class:`SweepParam` from ``NAME=start:stop:count``, ``NAME=a,b,c`` or ``NAME=value``."""
    where = f"--param {text}"
    name, eq, spec = text.partition("=")
    name, spec = name.strip(), spec.strip()
    if not eq or not name:
        raise ValidationError(where, "expected NAME=VALUES, e.g. friction=0:2e-4:5 or field.z=-1e-3,0,1e-3")
    if name not in PARAMETERS:
        close = difflib.get_close_matches(name, PARAMETERS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValidationError(where, f"unknown parameter {name!r}{hint}; valid: {', '.join(PARAMETERS)}")
    if not spec:
        raise ValidationError(where, "no values after '='; give start:stop:count, a,b,c or one value")
    if ":" in spec:
        parts = spec.split(":")
        if len(parts) != 3:
            raise ValidationError(where, f"a range is start:stop:count (3 parts), got {len(parts)} parts")
        start = _number(parts[0], where, "start")
        stop = _number(parts[1], where, "stop")
        count = parts[2].strip()
        if not count.isdigit() or int(count) < 2:
            raise ValidationError(where, f"count must be a whole number ≥ 2, got {count!r}")
        if int(count) > MAX_MEMBERS:
            raise ValidationError(where, f"count {count} is more than {MAX_MEMBERS} points")
        values = np.linspace(start, stop, int(count))
    else:
        items = spec.split(",")
        if any(not s.strip() for s in items):
            raise ValidationError(where, "empty item in the list of values")
        values = np.array([_number(s, where, "the value" if len(items) == 1 else f"value #{k + 1}")
                           for k, s in enumerate(items)])
    if name == "friction" and np.any(values < 0):
        raise ValidationError(where, f"friction must be ≥ 0, got {float(values.min()):g}")
    return SweepParam(name, values, text)


def grid(params: list[SweepParam]) -> dict[str, np.ndarray]:
    """Parameter values (N,) per name over the Cartesian grid, row-major (the first parameter slowest)."""
    mesh = np.meshgrid(*[p.values for p in params], indexing="ij")
    return {p.name: m.ravel() for p, m in zip(params, mesh)}


def _group(name: str) -> str:
    """``field.x`` → ``field.*``; names without a component stay as they are."""
    return name.split(".")[0] + ".*" if "." in name else name


#: Parameter groups that set the same thing two ways.
CONFLICTS = ({"field", "field.*"}, {"omega.*", "omega_body.*"})


def check_params(scene: Scene, params: list[SweepParam]) -> None:
    """Raise a ValidationError naming the offending ``--param`` if the set does not fit ``scene`` (checked)."""
    if not params:
        raise ValidationError("--param", "give at least one parameter to sweep")
    if scene.has_contacts or scene.contact_model == "surface":
        raise ValidationError("scene", "has contacts (walls or contact spheres): sweep integrates its grid as one "
                                       "ensemble, and a scene with contacts runs one member at a time; run each "
                                       "value with `pem run` instead")
    seen: dict[str, SweepParam] = {}
    for p in params:
        if p.name in seen:
            raise ValidationError(p.where, f"{p.name} is swept twice (also {seen[p.name].where!r})")
        for other in seen.values():
            pair = {_group(p.name), _group(other.name)}
            if pair in CONFLICTS:
                a, b = sorted(pair)
                raise ValidationError(p.where, f"cannot be combined with {other.where!r}: {a} and {b} both set "
                                               f"the {'field' if 'field' in a else 'initial angular velocity'}")
        seen[p.name] = p
    size = math.prod(len(p.values) for p in params)
    if size > MAX_MEMBERS:
        raise ValidationError("--param", f"the grid has {size} points; at most {MAX_MEMBERS} are allowed")
    moving = [b for b in scene.bodies if b.moving]
    for p in params:
        if p.name.startswith("field") and not any(b.dipoles for b in moving):   # every member the same run
            raise ValidationError(p.where, "no moving body of the scene carries a dipole: the field acts on nothing "
                                           "and every value would give the same run; add dipoles or sweep another "
                                           "parameter")
        if p.name == "field" and not np.any(scene.field):
            raise ValidationError(p.where, "the scene's field is zero, so it has no direction; "
                                           "sweep field.x, field.y or field.z instead")
        if p.name.startswith("omega") and len(moving) != 1:
            raise ValidationError(p.where, f"needs a scene with exactly one moving body (it has {len(moving)})")
        if p.name.startswith("release"):
            if len(moving) != 1 or moving[0].role != "pendulum":
                raise ValidationError(p.where, "needs a scene with exactly one moving body, a pendulum")
    if any(p.name.startswith("release") for p in params):
        body, point = basin.bob_point(scene)
        pivot = np.asarray(body.position, float)
        arm = np.linalg.norm(point)
        g = grid(params)
        bob = bob_start(scene)
        x = g.get("release.x", np.array([bob[0]])) - pivot[0]
        y = g.get("release.y", np.array([bob[1]])) - pivot[1]
        r = np.hypot(x, y)
        if np.any(r >= 0.999 * arm):
            which = [p.where for p in params if p.name.startswith("release")]
            raise ValidationError(" and ".join(which),
                                  f"release point {np.max(r):.4g} m from the pivot axis; the bob's arm "
                                  f"is {arm:.4g} m long (it must hang below the pivot)")


def bob_start(scene: Scene) -> np.ndarray:
    """Lab position (3,) m of the bob (first dipole, else centre of mass) of the scene's one pendulum."""
    body, point = basin.bob_point(scene)
    return np.asarray(body.position, float) + np.asarray(body.orientation, float).T @ point


def members(scene: Scene, system, values: dict[str, np.ndarray]) -> Ensemble:
    """The :class:`Ensemble` for grid points with parameter ``values`` (each (E,)).

    ``scene`` is the scene handed to simulate() (not yet checked), ``system`` its compiled form.

    Single-valued friction/field parameters are expected to be applied to the scene already
    (see :func:`scene_overrides`); here every given parameter becomes a per-member array.
    """
    E = len(next(iter(values.values())))
    ens = Ensemble()
    if "friction" in values:
        ens.friction = values["friction"]
    if any(k == "field" or k.startswith("field.") for k in values):
        f = np.broadcast_to(np.asarray(scene.field, float), (E, 3)).copy()
        if "field" in values:
            f = values["field"][:, None] * (f / np.linalg.norm(f, axis=-1, keepdims=True))
        for k in ("x", "y", "z"):
            if f"field.{k}" in values:
                f[:, AXIS[k]] = values[f"field.{k}"]
        ens.field = f
    U = None
    if "release.x" in values or "release.y" in values:
        bob = bob_start(scene)
        xs = values.get("release.x", np.full(E, bob[0]))
        ys = values.get("release.y", np.full(E, bob[1]))
        U = ens.orientation = basin.release_orientations(scene, xs, ys)
    if any(k.startswith("omega") for k in values):
        if U is None:
            U = np.broadcast_to(system.U0, (E,) + system.U0.shape)
        w = np.broadcast_to(system.omega0, (E,) + system.omega0.shape).copy()  # (E,1,3) lab
        if any(k.startswith("omega_body.") for k in values):
            wb = np.einsum("ebij,ebj->ebi", U, w)  # body components at each member's start
            for k in ("1", "2", "3"):
                if f"omega_body.{k}" in values:
                    wb[:, 0, AXIS[k]] = values[f"omega_body.{k}"]
            w = np.einsum("ebij,ebi->ebj", U, wb)
        for k in ("x", "y", "z"):
            if f"omega.{k}" in values:
                w[:, 0, AXIS[k]] = values[f"omega.{k}"]
        ens.angular_velocity = w
    return ens


def scene_overrides(scene: Scene, params: list[SweepParam]) -> tuple[Scene, list[SweepParam]]:
    """Apply single-valued friction/field parameters to the scene; return it and the parameters left per member.

    A parameter that does not vary needs no per-member arrays, so such sweeps keep the scalar
    (and compiled) code paths.
    """
    per_member = []
    for p in params:
        if len(p.values) == 1 and p.name == "friction":
            scene = replace(scene, friction=float(p.values[0]))
        elif len(p.values) == 1 and p.name.startswith("field") and not any(
                q.name.startswith("field") and len(q.values) > 1 for q in params):
            f = np.array(scene.field, dtype=float)
            if p.name == "field":
                f = float(p.values[0]) * f / np.linalg.norm(f)
            else:
                f[AXIS[p.name[-1]]] = float(p.values[0])
            scene = replace(scene, field=f)
        else:
            per_member.append(p)
    return scene, per_member


@dataclass
class SweepResult:
    """A sweep's table: ``params`` (the grid definition), ``values`` name → (N,) parameter values per
    grid point (row-major, first parameter slowest), ``outcomes`` name → (N,) (see :func:`columns`)."""

    params: list
    values: dict
    outcomes: dict
    t_end: float
    dt: float
    method: str
    record_interval: float
    complete: bool
    members_completed: int
    wall_time: float
    columns: list = None  # (name, unit, meaning) of each outcome, as :func:`columns`
    magnets_xy: np.ndarray | None = None
    settle_speed: float | None = None
    settle_distance: float | None = None
    error: str | None = None
    notes: list = None   # what --resume found and did not take (chunks.ChunkResults)
    warnings: list = None  # what a run of one grid point would warn about (a step too large for its spin)

    @property
    def varying(self) -> list:
        return [p for p in self.params if len(p.values) > 1]


def columns(scene: Scene) -> list[tuple[str, str, str]]:
    """Outcome columns (name, unit, meaning) a sweep of ``scene`` writes, in order."""
    moving = [b for b in scene.bodies if b.moving]
    cols = [("energy_initial", "J", "total energy at t = 0"),
            ("energy_final", "J", "total energy at t_final"),
            ("energy_max", "J", "largest total energy over the records"),
            ("omega_final", "rad/s", "largest |ω| over the moving bodies at t_final")]
    if len(moving) == 1:
        cols += [(f"omega_{c}_final", "rad/s", f"ω, lab {c}, at t_final") for c in "xyz"]
    if len(moving) == 1 and moving[0].role == "pendulum":
        cols += [(f"bob_{c}_final", "m", f"bob position, lab {c}, at t_final") for c in "xyz"]
        cols += [("bob_speed_final", "m/s", "bob speed at t_final")]
        if len(basin.fixed_magnets_xy(scene)):
            cols += [("label", "", "fixed magnet the bob rests over at t_final (index in the scene), −1: none"),
                     ("settle_time", "s", "first record time from which the bob stays within settle_distance "
                                          "of that magnet (nan if label is −1)")]
    cols += [("t_final", "s", "time the member reached"),
             ("completed", "", "1 if the member ran to t_end, else 0")]
    return cols


def sweep(scene: Scene, params: list[SweepParam], *, t_end: float | None = None, dt: float | None = None,
          method: str | None = None, samples: int = 200, chunk: int = 1024, settle_speed: float = 1e-3,
          settle_distance: float | None = None, progress=None, stop=None, client=None, chunk_dir=None,
          resume: bool = False, force: bool = False) -> SweepResult:
    """Integrate ``scene`` at every point of the parameter grid and collect the outcomes.

    samples: records per member (energy_max and settle_time are taken over them);
    chunk: members integrated together at most (fewer when the records would exceed
    MEMORY_BUDGET); settle_speed (m/s) and settle_distance (m; default half the smallest magnet
    spacing) classify a magnet pendulum's end state as basin maps do. ``progress(fraction)``
    and ``stop()`` as for :func:`~pem_physics.engine.simulate.simulate`. A blow-up fails its chunk: the
    result is then incomplete and ``error`` holds the message naming the grid point; the other
    chunks still run. ``client`` (a dask.distributed Client) runs the chunks on a cluster;
    ``chunk_dir`` keeps each chunk's outcomes in a file as it completes and ``resume`` continues an
    interrupted run from them (:mod:`.chunks`). A sweep estimated to take more than a day is refused unless
    ``force`` (:func:`.duration.check_duration`: the refusal names --dt when a smaller one than the scene's drives it).
    """
    for value, name in ((samples, "--samples"), (chunk, "--chunk")):
        if not (isinstance(value, (int, np.integer)) and value >= 1):
            raise ValidationError(name, f"must be a whole number ≥ 1, got {value!r}")
    if not (settle_speed > 0 and math.isfinite(settle_speed)):
        raise ValidationError("--settle-speed", f"must be a positive number, got {settle_speed!r}")
    if settle_distance is not None and not (settle_distance > 0 and math.isfinite(settle_distance)):
        raise ValidationError("--settle-distance", f"must be a positive number, got {settle_distance!r}")
    check_params(scene.checked(), params)
    base, per_member = scene_overrides(scene, params)
    s = base.settings
    base = replace(base, settings=replace(s, method=method or s.method, dt=s.dt if dt is None else dt,
                                          t_end=s.t_end if t_end is None else t_end, record_interval=None))
    # The unchecked scene goes to simulate(), which checks it exactly as for a single run (checking
    # re-orthonormalises orientations, so checking twice could change the last bits).
    checked = base.checked()
    settings = checked.settings
    if not settings.t_end > 0:   # every member's outcome would be its start: no sweep
        raise ValidationError("--t-end", f"the sweep's runs must take steps: give --t-end > 0 s (got "
                                         f"{settings.t_end:g})")
    steps = settings.steps
    every = max(1, -(-steps // samples))  # ceil: at most `samples` intervals
    record_interval = every * settings.dt
    system = compile_system(checked)
    values = grid(params)
    N = len(next(iter(values.values())))
    duration.check_duration(steps, system.n_bodies, N, dt, s.dt, fewer="sweep fewer points", force=force)
    cols = columns(checked)
    has_label = any(name == "label" for name, _, _ in cols)
    magnets = basin.fixed_magnets_xy(checked) if has_label else None
    if has_label and settle_distance is None:
        settle_distance = basin.default_settle_distance(magnets)
    records = steps // every + 2
    per_member_bytes = 16 * records * (50 * system.n_bodies + 7 * system.n_dipoles + 2)
    chunk = max(1, min(chunk, MEMORY_BUDGET // per_member_bytes))
    names = [p.name for p in per_member]
    where = {p.name: p.where for p in params}
    _friction_check(base, values, where)
    warnings = (_spin_warnings(base, system, values, settings.dt, settings.t_end, where)
                + _field_warnings(base, system, values, where))
    task = chunks.Task(_chunk, (base, names, values, record_interval, [c[0] for c in cols], magnets, settle_speed,
                                settle_distance), N, chunk)
    t0 = time.perf_counter()
    run = chunks.run_chunks(task, kind="sweep", run=dict(scene=base, parameters=names, values=values,
                                                         record_interval=record_interval, settle_speed=settle_speed,
                                                         settle_distance=settle_distance),
                            chunk_dir=chunk_dir, resume=resume, client=client, progress=progress, stop=stop)
    out = {name: np.full(N, np.nan) for name, _, _ in cols}
    out["completed"] = np.zeros(N, dtype=int)
    if has_label:
        out["label"] = np.full(N, -1, dtype=int)
    for i, arrays in enumerate(run.arrays):
        if arrays is None:
            continue
        sl = slice(*task.bounds(i))
        for name in out:
            out[name][sl] = arrays[name]
    error = "; ".join(f.message for f in run.failures) or None
    end, rounded = rounded_end(settings.t_end, settings.dt, "the sweep's runs end")
    return SweepResult(params=list(params), values=values, outcomes=out, t_end=end, dt=settings.dt,
                       method=settings.method, record_interval=record_interval, complete=run.complete,
                       members_completed=int(out["completed"].sum()), wall_time=time.perf_counter() - t0, columns=cols,
                       magnets_xy=magnets, settle_speed=settle_speed if has_label else None,
                       settle_distance=float(settle_distance) if has_label else None, error=error,
                       notes=([rounded] if rounded else []) + list(run.notes or []), warnings=warnings)


def _beyond(where: dict, names, k: int, values: dict, said: str) -> ValidationError:
    """A refusal ``said`` at grid point k (an input beyond a physical range), named by the swept ``names``'
    --param texts (``where``: name → text)."""
    texts = [where[n] for n in names if n in where]
    return ValidationError(" and ".join(texts) or "--param", f"at grid point {_point(k, values)}: {said}")


def _friction_check(base: Scene, values: dict, where: dict) -> None:
    """Refuse a swept friction beyond a physical range (:func:`~pem_physics.engine.checks.preflight` at the
    largest value: c = 1e90 N·m·s overflowed the splitting's sub-steps with numpy's warnings)."""
    if "friction" not in values:
        return
    from ..engine.checks import preflight

    k = int(np.argmax(values["friction"]))
    strongest = replace(base, friction=float(values["friction"][k])).checked()
    try:
        preflight(strongest, compile_system(strongest))
    except ValidationError as err:
        raise _beyond(where, ["friction"], k, values, f"{err.path}: {err.message}") from None


def _spin_warnings(base: Scene, system, values: dict, dt: float, t_end: float, where: dict) -> list:
    """The step warning a run would give (:func:`~pem_physics.engine.checks.preflight`), for the grid point with
    the fastest start spin: a swept ω of 10¹² rad/s makes energies of 10²⁰ J, which a run says (blaming the spin,
    which no body survives, not dt) and a sweep must; one too fast for doubles to resolve over t_end (10¹⁰⁰ rad/s)
    or moving the body's mass faster than light is refused, as a run refuses it. A swept release turns the body
    under its (lab) spin, so the spin's speed is judged at every grid point's own start pose."""
    if not any(k.startswith(("omega", "release")) for k in values):
        return []
    from ..engine.checks import MAX_RESOLVED_STEPS, MAX_STEP_PHASE

    ens = members(base, system, values)
    N = len(next(iter(values.values())))
    omega = np.asarray(ens.angular_velocity if ens.angular_velocity is not None
                       else np.broadcast_to(system.omega0, (N,) + system.omega0.shape))    # (N, B, 3)
    w = np.linalg.norm(omega, axis=-1).max(axis=-1)   # (N,)
    k = int(np.argmax(w))
    swept = [n for n in values if n.startswith("omega")]    # a release turns the body, not ω: |ω| is the scene's
    if swept and w[k] * t_end > MAX_RESOLVED_STEPS * MAX_STEP_PHASE:
        raise _beyond(where, swept, k, values,
                      f"a start spin of {w[k]:.3g} rad/s would take {t_end * w[k] / MAX_STEP_PHASE:.2g} steps over "
                      f"t_end = {t_end:g} s, beyond what doubles tell apart: beyond a physical range; sweep a smaller "
                      "range")
    wild = _wild_spins(base, system, omega, ens.orientation, values, where,
                       [n for n in values if n.startswith(("omega", "release"))])
    if wild:
        return wild
    if not swept or not dt * w[k] > MAX_STEP_PHASE:   # the scene's own |ω|: its run's preflight says so
        return []
    return [f"dt = {dt:.3g} s is large for the spin at grid point {_point(k, values)} (|ω| = {w[k]:.3g} rad/s, "
            f"dt·ω = {dt * w[k]:.2g} rad per step): expect large errors there; try dt ≤ {MAX_STEP_PHASE / w[k]:.2g} s "
            "or a smaller range"]


def _wild_spins(base: Scene, system, omega: np.ndarray, U, values: dict, where: dict, names: list) -> list:
    """At the grid point whose start spin ``omega`` (N, B, 3) rad/s, lab, moves a body's mass fastest: refuse a
    speed reaching light, else the warnings of a spin no body survives (as a run: checks.preflight, blaming the
    spin, not dt). ``U``: (N, B, 3, 3) each point's start orientation, or None for the scene's."""
    from ..engine.checks import light_spin, spin_speeds, spin_warning

    # √(ω·Iω/m) takes I in lab axes at the start pose: judged at each point's own (a swept release turns the body)
    pose = [None if U is None else np.asarray(U)[:, b] for b in range(omega.shape[1])]
    v = np.stack([spin_speeds(system, b, omega[:, b], pose[b])[0] for b in range(omega.shape[1])], axis=-1)
    k = int(np.argmax(v.max(axis=-1)))
    at = [None if U is None else pose[b][k] for b in range(omega.shape[1])]
    for b in range(omega.shape[1]):   # a spin moving the mass faster than light is refused, as a run refuses it
        said = light_spin(base, system, b, omega[k, b], at[b])
        if said:
            raise _beyond(where, names, k, values, said)
    wild = [spin_warning(base, system, b, omega[k, b], at[b]) for b in range(omega.shape[1])]
    return [f"at grid point {_point(k, values)}: {msg}" for msg in wild if msg]


def _field_warnings(base: Scene, system, values: dict, where: dict) -> list:
    """The step warning a run would give (:func:`~pem_physics.engine.checks.preflight`: the torques' fastest
    frequency) at the grid point of the strongest swept field: a field of 10⁶ T swings a compass needle at
    thousands of rad/s, which a run of that point says and a sweep must."""
    if not any(k == "field" or k.startswith("field.") for k in values):
        return []
    from ..engine.checks import preflight

    fields = np.asarray(members(base, system, values).field, float)   # (N, 3)
    k = int(np.argmax(np.linalg.norm(fields, axis=-1)))
    strongest = replace(base, field=fields[k]).checked()
    try:
        said = preflight(strongest, compile_system(strongest))
    except ValidationError as err:   # a field beyond a physical range
        raise _beyond(where, [n for n in values if n.startswith("field")], k, values,
                      f"{err.path}: {err.message}") from None
    return [f"at grid point {_point(k, values)}: {w}" for w in said]


def _chunk(base: Scene, names: list, values: dict, record_interval: float, cols: list, magnets, settle_speed: float,
           settle_distance, start: int, stop: int, progress=None, stop_flag=None) -> dict:
    """The outcome columns (name → (stop−start,)) of grid points [start, stop): one task of :func:`sweep`,
    plus ``complete`` (whether every member ran to the end). A blow-up raises SimulationError naming the
    grid point."""
    system = compile_system(base.checked())
    n = stop - start
    part = {name: values[name][start:stop] for name in names}
    ens = members(base, system, part) if part else Ensemble(
        orientation=np.broadcast_to(system.U0, (n,) + system.U0.shape))
    try:
        traj = simulate(base, ensemble=ens, record_interval=record_interval, progress=progress, stop=stop_flag)
    except SimulationError as err:
        at = "" if err.member is None else " at grid point " + _point(start + err.member, values)
        raise SimulationError(f"{err}{at}", time=err.time, body=err.body, member=err.member) from err
    out = {name: np.full(n, np.nan) for name in cols}
    out["completed"] = np.full(n, int(traj.complete))
    Etot = traj.total_energy                          # (e,R)
    out["energy_initial"] = Etot[:, 0]
    out["energy_final"] = Etot[:, -1]
    out["energy_max"] = Etot.max(axis=1)
    wf = traj.omega[:, -1]                            # (e,B,3)
    out["omega_final"] = np.linalg.norm(wf, axis=-1).max(axis=-1)
    out["t_final"] = np.full(n, traj.t[-1])
    if "omega_x_final" in out:
        for k, c in enumerate("xyz"):
            out[f"omega_{c}_final"] = wf[:, 0, k]
    if "bob_x_final" in out:
        path = traj.dipole_position[:, :, 0] if system.n_dipoles > 0 else traj.center_of_mass[:, :, 0]  # (e,R,3)
        bob = path[:, -1]
        for k, c in enumerate("xyz"):
            out[f"bob_{c}_final"] = bob[:, k]
        speed = np.linalg.norm(np.cross(wf[:, 0], bob - system.pivot[0]), axis=-1)
        out["bob_speed_final"] = speed
        if "label" in out:
            label = basin.classify(bob[:, :2], speed, magnets, settle_speed, settle_distance)
            out["label"] = label
            out["settle_time"] = _settle_time(traj.t, path[..., :2], label, magnets, settle_distance)
    out["complete"] = np.array(traj.complete)
    return out


def _point(i: int, values: dict) -> str:
    return f"{i} (" + ", ".join(f"{k}={v[i]:g}" for k, v in values.items()) + ")"


def _settle_time(t: np.ndarray, xy: np.ndarray, label: np.ndarray, magnets: np.ndarray, distance: float):
    """(e,) first record time from which the bob path xy (e,R,2) stays within ``distance`` of magnet ``label``."""
    target = magnets[np.maximum(label, 0)]                              # (e,2)
    inside = np.linalg.norm(xy - target[:, None], axis=-1) < distance  # (e,R)
    outside = ~inside
    R = inside.shape[1]
    last_out = R - 1 - np.argmax(outside[:, ::-1], axis=1)
    first = np.where(outside.any(axis=1), np.minimum(last_out + 1, R - 1), 0)
    return np.where(label >= 0, t[first], np.nan)


# ---------------------------------------------------------------------------- files

def write(result: SweepResult, outdir, *, scene_label: str = "", scene_name: str = "",
          heatmap: str | None = None) -> dict:
    """sweep.csv (the table), sweep.png (heat map when two parameters vary) and sweep.json, published as one
    output set (:mod:`..io.outset`: a heat map of an earlier two-parameter sweep does not survive); returns the
    JSON."""
    from ..io.outset import OutputSet

    with OutputSet(outdir, "sweep") as out:
        summary = _write_files(result, out.staging, scene_label, scene_name, heatmap)
        out.publish(complete=result.complete and result.error is None)
    return summary


def _write_files(result: SweepResult, outdir: Path, scene_label: str, scene_name: str,
                 heatmap: str | None) -> dict:
    names = list(result.values) + list(result.outcomes)
    table = [result.values[n] for n in result.values] + [result.outcomes[n] for n in result.outcomes]
    ints = [a.dtype.kind in "iu" for a in table]
    with atomic_open(outdir / "sweep.csv", "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(names)
        for i in range(len(table[0])):
            w.writerow([str(int(a[i])) if isint else repr(float(a[i])) for a, isint in zip(table, ints)])
    png = None
    if len(result.varying) == 2:
        heatmap = heatmap or ("label" if "label" in result.outcomes else "energy_final")
        png = write_heatmap(result, outdir / "sweep.png", heatmap)
    docs = {n: (u, m) for n, u, m in result.columns}
    docs.update(PARAMETERS)
    summary = {
        "scene": scene_label,
        "scene_name": scene_name,
        "method": result.method,
        "dt": result.dt,
        "t_end": result.t_end,
        "record_interval": result.record_interval,
        "order": "row-major: the first parameter varies slowest",
        "parameters": [{"name": p.name, "unit": PARAMETERS[p.name][0], "spec": p.spec,
                        "values": [float(v) for v in p.values]} for p in result.params],
        "columns": [{"name": n, "unit": docs[n][0], "meaning": docs[n][1]} for n in names],
        "members": int(len(table[0])),
        "members_completed": int(result.members_completed),
        "complete": result.complete,
        "error": result.error,
        "wall_time_s": result.wall_time,
        "heatmap": None if png is None else {"file": png.name, "column": heatmap},
        "resume_notes": result.notes or [],
        "warnings": result.warnings or [],
    }
    if result.magnets_xy is not None:
        summary.update(magnets_xy=result.magnets_xy.tolist(), settle_speed=result.settle_speed,
                       settle_distance=result.settle_distance)
    with atomic_open(outdir / "sweep.json", "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    return summary


def write_heatmap(result: SweepResult, path, column: str) -> Path:
    """A PNG heat map of outcome ``column`` over the two varying parameters (rows: the first)."""
    from .figures import figure, save

    if column not in result.outcomes:
        raise ValidationError("--heatmap", f"unknown column {column!r}; choose one of {', '.join(result.outcomes)}")
    py, px = result.varying
    Z = result.outcomes[column].reshape(len(py.values), len(px.values)).astype(float)
    fig = figure(7.0, 5.5)
    ax = fig.add_subplot()
    xs, ys = _axis(px.values), _axis(py.values)
    if column == "label":
        rgb = np.full(Z.shape + (3,), 0.15)
        for k in range(len(result.magnets_xy)):
            rgb[Z == k] = basin.PALETTE[k % len(basin.PALETTE)]
        ax.pcolormesh(xs, ys, rgb, shading="nearest")
        from matplotlib.patches import Patch

        keys = [Patch(color=basin.PALETTE[k % len(basin.PALETTE)], label=f"magnet {k}")
                for k in range(len(result.magnets_xy))] + [Patch(color=(0.15, 0.15, 0.15), label="not settled")]
        ax.legend(handles=keys, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    else:
        import matplotlib

        cmap = matplotlib.colormaps["viridis"].with_extremes(bad=(0.6, 0.6, 0.6))
        mesh = ax.pcolormesh(xs, ys, np.ma.masked_invalid(Z), shading="nearest", cmap=cmap)
        unit = {n: u for n, u, _ in result.columns}.get(column, "")
        fig.colorbar(mesh, ax=ax, label=f"{column} ({unit})" if unit else column)
    for axis, p, pos in (("x", px, xs), ("y", py, ys)):
        getattr(ax, f"set_{axis}label")(f"{p.name} ({PARAMETERS[p.name][0]})")
        set_ticks = getattr(ax, f"set_{axis}ticks")
        if not _monotonic(p.values):  # drawn in index space: label the cells with their values
            set_ticks(pos, [f"{v:g}" for v in p.values])
            continue
        # Small values (fields in T, friction) would otherwise print as long, overlapping decimals.
        ax.ticklabel_format(axis=axis, style="sci", scilimits=(-2, 3))
        if len(pos) <= MAX_GRID_TICKS:
            set_ticks(pos)  # one tick per grid value
    ax.set_title(f"{column} (t = {result.t_end:g} s)" + ("" if result.complete else " — incomplete"))
    fig.tight_layout()
    return save(fig, path)


def _monotonic(v: np.ndarray) -> bool:
    d = np.diff(v)
    return bool(np.all(d > 0) or np.all(d < 0))


def _axis(v: np.ndarray) -> np.ndarray:
    """Cell centres to draw at: the values when they are monotonic, else 0..n-1."""
    return np.asarray(v, float) if _monotonic(v) else np.arange(len(v), dtype=float)
