"""A body on a table run (theory §7; the model and its step: :mod:`.surface`): its start (:func:`start_state`, the
contact decided by :func:`settle`), the events inside a step located and taken (:func:`run_numpy`, the reference), and
the same run compiled with no Python between steps (:func:`run_compiled`, :mod:`.surface_run_kernels`). :func:`run`
takes the compiled one where it can; the records and events are a :class:`Run`.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ...errors import SimulationError, ValidationError
from . import surface_flat
from . import surface_layout as lay
from . import surface_several as several
from .events import brent
from .impulses import ContactBody, compute_impulse
from .surface import State, Surface, _vector
from .surface_common import (
    APART,
    CLOSE_RATE,
    FLAT,
    FLAT_REST,
    MAX_SPLITS,
    MODES,
    REGION_RTOL,
    RIM_ITERATIONS,
    ROLLING,
    ROT_RTOL,
    SLIDING,
    SLIP_RTOL,
    SPLIT_RTOL,
    TOUCH_RTOL,
)
from .surface_common import cross as _cross
from .walls import Box, Cylinder, Sphere

#: At the start, a shape within START_RTOL·r of the table (either side) is put on it, the body moved along the
#: normal by that much: placements typed or stored in single precision (Blender's) are off by ~1e-7·r.
START_RTOL = 1e-6
#: At most this many transitions inside one step (more is chatter the model cannot resolve).
MAX_EVENTS_PER_STEP = 20
#: Steps between calls of a run's progress and stop callbacks.
PROGRESS_EVERY = 256


class Event(NamedTuple):
    """A contact change: t s; kind (``impact``, ``impact, sliding``/``impact, rolling`` when the contact then
    persists, ``stick``, ``slip``, ``reversal``, ``lift-off``); shape index; impulse (3,) N·s the table gave
    (impacts; a stick's what stopped the last of the slip; zero otherwise); point (3,) m the contact point; x (3,) m
    and Q (3,3) the body's pose then."""

    t: float
    kind: str
    shape: int
    impulse: np.ndarray
    point: np.ndarray
    x: np.ndarray
    Q: np.ndarray


@dataclass
class Run:
    """Records on the grid: t (T,), x, v, L (T,3), Q (T,3,3), mode (T,) str, shape (T,) the touching shape (−1
    apart), energy (T,) J, friction_work,
    impact_work and normal_work (T,) J (cumulative, from the start); events (:class:`Event`); ``complete`` False
    when stopped early; ``engine`` what ran it (``numpy``, or ``numba`` with ``kernels`` ``ahead-of-time`` or
    ``jit``); ``load_s`` s the compiled kernel took to compile or load before the first step; ``extra`` (T,) the
    other touching shapes at each record (:attr:`State.extra`; None: never several)."""

    t: np.ndarray
    x: np.ndarray
    v: np.ndarray
    L: np.ndarray
    Q: np.ndarray
    mode: np.ndarray
    shape: np.ndarray
    energy: np.ndarray
    friction_work: np.ndarray
    impact_work: np.ndarray
    normal_work: np.ndarray
    events: list
    final: State
    complete: bool = True
    engine: str = "numpy"
    kernels: str | None = None
    load_s: float = 0.0
    #: (T,) at each record the other touching shapes when several touch ((shape, mode, slip), …; State.extra)
    extra: list | None = None
    #: a compiled stretch's: the kernel's code when it stopped at a contact change it leaves to the reference
    #: (:data:`.surface_layout.FAIL_SECOND_SHAPE`, :data:`~.surface_layout.FAIL_SEVERAL_EVENT`), else 0
    handover: float = 0.0

    def energy_balance(self) -> np.ndarray:
        """E − E₀ − W_friction − W_impacts (J) at each record: the integration error."""
        return self.energy - self.energy[0] - self.friction_work - self.impact_work


def _check_fits(surface: Surface) -> None:
    """Refuse a contact sphere that cannot move inside its container (an inside sphere or cylinder wall not larger
    than it: its centre would sit where the wall has no normal, or nowhere; an inside box narrower than it)."""
    wall, body = surface.table.wall, surface.whole.body
    inside = wall.sign > 0 if isinstance(wall, (Sphere, Cylinder)) else isinstance(wall, Box) and wall.inside
    if not inside:
        return
    room = float(np.min(wall.h)) if isinstance(wall, Box) else float(wall.radius)
    for k in np.flatnonzero(~body.rim):
        r = float(body.r[k])
        if r > room or (r >= room * (1 - 1e-9) and not isinstance(wall, Box)):
            what = {Sphere: "bowl", Cylinder: "pipe", Box: "tray"}[type(wall)]
            size = f"half its smallest side {room:.6g} m" if isinstance(wall, Box) else f"radius {room:.6g} m"
            raise ValidationError(f"{body.name}.contacts[{k}].radius",
                                  f"a contact sphere of radius {r:.6g} m does not fit inside the {what} "
                                  f"{surface.table.name!r} ({size}): "
                                  f"make the sphere smaller or the container larger")


def start_state(surface: Surface, x, v, omega, orientation=None, t: float = 0.0, tolerance: float = 0.0) -> State:
    """The state of a body at x (m) with velocity v (m/s), angular velocity ω (rad/s, lab) and body axes the rows of
    ``orientation`` (default: the lab axes); its contact decided from the gaps (see :func:`settle`). A shape within
    START_RTOL·r of the table, or ``tolerance`` (m: the precision the positions were stored with), starts on it."""
    body = surface.body
    x, v, omega = _vector(x, "x"), _vector(v, "v"), _vector(omega, "omega")
    Q = body.frame(np.eye(3) if orientation is None else orientation)
    if not np.allclose(Q @ Q.T, np.eye(3), atol=1e-12):
        raise ValidationError(f"{body.name}.orientation", "must be a rotation matrix (rows: the body axes)")
    L = Q.T @ (body.moments * (Q @ omega))
    st = State(float(t), x, v, L, Q)
    _check_fits(surface)
    g = surface.gaps(x, Q)
    worst = int(np.argmin(g / body.r))
    snap = max(START_RTOL * body.r[worst], tolerance)
    if g[worst] < -snap:
        raise ValidationError(f"{body.name}.contacts[{worst}]",
                              f"starts {-g[worst]:.6g} m inside {surface.table.name!r}: raise the body by that much")
    if abs(g[worst]) <= snap:
        # along the normal at the shape: a plane's, or a curved table's (its gap is a distance along it)
        plane = surface.plane(worst)
        st.x = x - g[worst] * (surface.lowest(worst, x, Q, t)[1] if plane is None else plane[1])
        g = surface.gaps(st.x, Q)
    touching = [k for k in range(len(g)) if g[k] <= max(TOUCH_RTOL * body.r[k], tolerance)]
    flat = [k for k in touching if surface_flat.lies_flat(surface, k, Q)]
    if flat and len(touching) > 1:
        raise ValidationError(f"{body.name}.contacts", f"{body.shape_name(flat[0])} starts lying flat on "
                              f"{surface.table.name!r} while another shape touches it too: a second contact beside "
                              "a rim lying flat is not modelled yet; raise the other shapes or tilt the rim")
    if flat:
        _land_flat(surface, st, flat[0], dt=0.0)
    elif len(touching) > 1:
        several.settle(surface, st, touching, dt=0.0)
    elif touching:
        st.shape = touching[0]
        settle(surface, st, dt=0.0)
    return st


def _push(surface: Surface, st: State, J) -> None:
    """Apply the impulse J (3,) at the touching shape's contact point (in place)."""
    rho = surface.contact(st).rho
    st.v = st.v + J / surface.body.mass
    st.L = st.L + _cross(rho, J)


def settle(surface: Surface, st: State, dt: float) -> np.ndarray:
    """Decide the contact of a state whose shape ``st.shape`` touches (in place): an impact if it approaches, then
    apart (it leaves within a step, or the table would have to pull), rolling (no slip and the friction suffices)
    or sliding. A contact that stays has what is left of its normal velocity taken (a plastic impulse). Returns
    the impulse (3,) N·s the table gave."""
    tb, body = surface.table, surface.body
    _, rho, W, w, u, _, n, _ = surface.contact(st)
    J = np.zeros(3)
    if u @ n < 0:
        b1 = ContactBody.free(body.mass, st.x, st.v, np.linalg.inv(W), w, name=body.name)
        mu = tb.mu if tb.friction == "coulomb" else 0.0
        J = compute_impulse(b1, ContactBody.fixed(tb.name), st.x + rho, n, tb.restitution, mu)
        _push(surface, st, J)
        _, rho, W, w, u, _, n, _ = surface.contact(st)
    if u @ n > max(abs(surface.g @ n) * dt, SLIP_RTOL * surface.speed_scale(st)):
        st.mode, st.shape = APART, -1
        return J
    if u @ n > 0:
        Jn = (-float(u @ n) / float(n @ surface.K(W, rho) @ n)) * n
        _push(surface, st, Jn)
        J = J + Jn
        u = surface.contact(st).u
    st.slip = np.zeros(3)
    if tb.friction == "coulomb" and np.linalg.norm(surface._tangent(u, n)) <= SLIP_RTOL * surface.speed_scale(st):
        F = surface.force(st, ROLLING)
        N = float(F @ n)
        Ft = F - N * n
        if N <= 0:
            st.mode, st.shape = APART, -1
            return J
        if np.linalg.norm(Ft) <= tb.mu * N:
            st.mode = ROLLING
            return J
        st.slip = Ft / np.linalg.norm(Ft)
    st.mode = SLIDING
    if float(surface.force(st) @ n) <= 0:
        st.mode, st.shape = APART, -1
    return J


def _land_flat(surface: Surface, st: State, k: int, dt: float) -> np.ndarray:
    """:func:`.surface_flat.settle` (in place), and the one-point contact it leaves a rim rocking back onto its edge
    in (mode ``sliding``) settled (:func:`settle`): the impulse (3,) N·s the table gave."""
    J = surface_flat.settle(surface, st, k, dt)
    return J + settle(surface, st, dt) if st.mode == SLIDING else J


def _transition(surface: Surface, st: State, kind: str, k: int, dt: float) -> tuple[str, np.ndarray]:
    """Apply the event ``kind`` of shape k at st (in place); the kind to log and the impulse given."""
    zero = np.zeros(3)
    if st.mode in (FLAT, FLAT_REST):
        return surface_flat.transition(surface, st, kind, k, dt)
    if kind == "flat" or (kind == "impact" and st.mode == APART
                          and surface_flat.lies_flat(surface, k, st.Q, surface_flat.STRIKE_TILT)):
        # a rim falls flat (from its edge, or through the air): its whole edge strikes at once
        J = _land_flat(surface, st, k, dt)
        return ("impact" if st.mode == APART else f"impact, {st.mode}"), J
    if kind == "impact" and st.mode != APART:
        # while others touch: the impact with them all, and with every shape at the table then (a block's face
        # lands on two corners at once, to round-off)
        g = surface.gaps(st.x, st.Q)
        at = [j for j in range(len(g)) if g[j] <= TOUCH_RTOL * surface.body.r[j]]
        J = several.settle(surface, st, sorted({a[0] for a in several.active(st)} | {k} | set(at)), dt, impact=k)
        mode = next((m for j, m, _ in several.active(st) if j == k), APART)
        return ("impact" if mode == APART else f"impact, {mode}"), J
    if st.extra:
        return several.transition(surface, st, kind, k, dt)
    if kind == "impact":
        st.shape = k
        J = settle(surface, st, dt)
        return ("impact" if st.mode == APART else f"impact, {st.mode}"), J
    if kind == "lift-off":
        st.mode, st.shape = APART, -1
        return kind, zero
    if kind == "stick":
        # The event is where the slip turns past a right angle from the step's start: through zero on a straight
        # slide, but a slip whose direction turns (a spinning ball, a curved table) can pass beside zero, leaving at
        # most its tangential acceleration times a step. Friction stops that rest at once (its energy booked as
        # friction's), so the rolling steps that follow start without slip.
        c = surface.contact(st)
        J = -np.linalg.solve(surface.K(c.W, c.rho), c.u)
        _push(surface, st, J)
        st.mode = ROLLING
        st.slip = np.zeros(3)
        F = surface.force(st)
        n = surface.contact(st).n
        N = float(F @ n)
        Ft = F - N * n
        if np.linalg.norm(Ft) > surface.table.mu * N:      # the friction cannot hold it: slides the other way
            st.mode, st.slip = SLIDING, Ft / np.linalg.norm(Ft)
            return "reversal", J
        return kind, J
    # slip: slides in the direction the needed friction pointed
    F = surface.force(st)
    n = surface.contact(st).n
    Ft = F - float(F @ n) * n
    st.mode, st.slip = SLIDING, Ft / np.linalg.norm(Ft)
    return kind, zero


def _watched(surface: Surface, s: State, start: State, touched: dict) -> list:
    """:meth:`.surface.Surface.watch` at s for a step from ``start``, the impacts of the shapes in ``touched`` ({shape:
    depth m}: they touched the table without an impact in this step, :func:`_touch_only`) watched that much deeper: the
    round-off gap where such a shape just left does not fire again, but a rim's far side coming down does (its
    lowest point passes to the other side of it as it turns through flat in the air)."""
    return [(kind, val + touched[k] if kind == "impact" and k in touched else val, k)
            for kind, val, k in surface.watch(s, start)]


def _touch(surface: Surface, st: State, k: int, touched: dict) -> None:
    """Watch shape k, which touched the table at st without an impact, TOUCH_RTOL·r below where it is (in place)."""
    touched[k] = max(touched.get(k, 0.0), -surface.gap(k, st.x, st.Q)) + TOUCH_RTOL * float(surface.body.r[k])


def _locate(surface: Surface, st: State, h: float, kind: str, k: int, v0: float, val: float, touched: dict) -> float:
    """Where in a step of length h from st the event (kind, shape k) crosses zero: v0 its value at st, val at h < 0."""
    if v0 < 0:      # already past at the step start (round-off at a transition): no bracket
        return 0.0

    def g(tau):
        # (a state past a rim's landing watches only that: the event is before it)
        s = surface.advance(st, tau)[0]
        return next((v for kd, v, kk in _watched(surface, s, st, touched) if kd == kind and kk == k), -1.0)

    g0 = v0 if v0 > 0 else g(0.0)
    if g0 > 0:
        return brent(g, 0.0, h, g0, val)
    # exactly zero at the start: a slide from rest, whose slip grows from zero (and may turn back within the step:
    # its stick is inside), or several contacts' kicks at h = 0 (below zero after a step of length 0: the event is at
    # the step's start) — a positive value inside, nearer and nearer the start, tells
    b, gb = h, val
    for _ in range(MAX_SPLITS):
        a = 0.5 * b
        ga = g(a)
        if ga > 0:
            return brent(g, a, b, ga, gb)
        b, gb = a, ga
    return 0.0


def _first_event(surface: Surface, st: State, h: float, touched: dict) -> tuple:
    """The trial step of length up to h from st, (state, normal work, friction work), the first event inside it,
    (tau, kind, shape) or None, and whether the trial took all of h.

    A trial whose rim's lowest point turns past a right angle well off flat (:func:`.surface_flat.sweeps`: it runs
    round the rim, as on a coin rolling on a tight circle or spinning down, or passes flat, which only shorter trials
    tell apart) is halved, at most MAX_SPLITS times. A trial that takes a rim past lying flat
    (:meth:`.surface.Surface.lands_flat`) tells only where it lands: past that instant its contact point has jumped to
    the rim's far side and the other events' values are no measure (a slip reverses, a normal force turns), so the
    landing is located first and the other events looked for before it."""
    full = True
    for _ in range(MAX_SPLITS):
        trial, dwn, dwf = surface.advance(st, h)
        if not surface_flat.sweeps(surface, trial, st):
            break
        h, full = 0.5 * h, False
    if trial.t < st.t + h:      # Surface.advance stopped at a half that passed flat: the trial ends there
        h, full = trial.t - st.t, False
    fired = [(kind, val, k) for kind, val, k in _watched(surface, trial, st, touched) if val < 0]
    if not fired:
        return trial, dwn, dwf, None, full
    before = {(kind, k): val for kind, val, k in _watched(surface, st, st, touched)}
    first = None
    if surface.lands_flat(trial, st):
        flat = next(ev for ev in fired if ev[0] == "flat")
        first = (_locate(surface, st, h, "flat", flat[2], before.get(("flat", flat[2]), 1.0), flat[1], touched),
                 "flat", flat[2])
        h = first[0]
        fired = [ev for ev in _watched(surface, surface.advance(st, h)[0], st, touched) if ev[1] < 0
                 and ev[0] != "flat"] if h > 0 else []
    for kind, val, k in fired:
        tau = _locate(surface, st, h, kind, k, before.get((kind, k), 1.0), val, touched)
        if first is None or abs(tau) < abs(first[0]):
            first = (tau, kind, k)
    return trial, dwn, dwf, first, full


def _touch_only(surface: Surface, st: State, k: int, J: np.ndarray) -> bool:
    """Whether an impact of shape k left it apart with an impulse below SLIP_RTOL of its momentum scale: a shape that
    reaches the table where it has just left it (a lift-off's gap stays within round-off of zero for a while).
    Not an event, and the shape is watched TOUCH_RTOL·r below where it is for the rest of that step (:func:`_touch`;
    else the round-off gap fires it at once again)."""
    return k not in {a[0] for a in several.active(st)} and \
        float(np.linalg.norm(J)) <= SLIP_RTOL * surface.body.mass * surface.speed_scale(st)


def _step(surface: Surface, st: State, t_next: float, dt: float, works: tuple, events: list) -> tuple:
    """The run's step from st to t_next (s), its events located and taken (appended to ``events``): (the state at
    t_next, the works (friction, impact, normal) J so far, from ``works``)."""
    wf, wi, wn = works
    touched = {}        # shapes that touched without an impact in this step (_touch_only): watched deeper
    changes = 0
    while True:
        trial, dwn, dwf, first, full = _first_event(surface, st, t_next - st.t, touched)
        if first is None:
            st, wn, wf = trial, wn + dwn, wf + dwf
            if full:
                break
            continue
        tau, kind, k = first
        if tau != 0:
            s, dwn, dwf = surface.advance(st, tau)
            st, wn, wf = s, wn + dwn, wf + dwf
        changes += 1
        if changes >= MAX_EVENTS_PER_STEP:
            corner = surface.corner_error(st)
            if corner is not None:
                raise corner
            raise SimulationError(f"{surface.body.name!r}: more than {MAX_EVENTS_PER_STEP} contact changes within "
                                  f"one step at t = {st.t:.9g} s (chatter); take a shorter step", time=st.t,
                                  body=surface.body.name)
        if kind.startswith("region"):   # a step boundary only (Surface.watch)
            continue
        E0 = surface.energy(st)
        label, J = _transition(surface, st, kind, k, dt)
        if kind == "stick":
            wf += surface.energy(st) - E0
        else:
            wi += surface.energy(st) - E0
        if kind == "impact" and _touch_only(surface, st, k, J):
            _touch(surface, st, k, touched)
            continue
        P = surface.lowest(k, st.x, st.Q, st.t)[2]
        events.append(Event(st.t, label, k, J, P, st.x.copy(), st.Q.copy()))
    st.t = t_next
    return st, (wf, wi, wn)


def run(surface: Surface, state: State, t_end: float, dt: float, every: int = 1, progress=None, stop=None,
        engine: str = "auto") -> Run:
    """Integrate from ``state`` to t_end (s) in steps of dt (s), recording every ``every`` steps (and the last).
    ``progress(fraction)`` is called now and then; when ``stop()`` returns True the run ends (``complete`` False).

    ``engine``: ``"numpy"`` runs this module's reference; ``"compiled"`` the same method compiled
    (:mod:`.surface_run_kernels`, ahead of time when a build is shipped, else numba's JIT; :func:`run_compiled`);
    ``"auto"`` (default) the compiled run where it can run (:func:`compiled_available`), else the reference."""
    if not (np.isfinite(dt) and dt != 0):
        raise ValidationError("dt", f"must be a non-zero time step (s), got {dt!r}")
    if engine not in ("auto", "numpy", "compiled"):
        raise ValidationError("engine", f"must be 'auto', 'numpy' or 'compiled', got {engine!r}")
    if engine == "compiled" or (engine == "auto" and compiled_available()):
        return run_compiled(surface, state, t_end, dt, every, progress, stop)
    return run_numpy(surface, state, t_end, dt, every, progress, stop)


def run_numpy(surface: Surface, state: State, t_end: float, dt: float, every: int = 1, progress=None,
              stop=None, resume: tuple | None = None) -> Run:
    """:func:`run` on this module's numpy reference. ``resume`` (t0, i0, (friction, impact, normal work)): go on
    with a run that started at t0 (s) from ``state``, the state after its step i0 and the works so far (the records
    and events from step i0 + 1 on; the compiled run hands over so)."""
    return _numpy_stretch(surface, state, t_end, dt, every, progress, stop, resume)[0]


def kernel_takes(surface: Surface, st: State) -> bool:
    """Whether the compiled kernel can step from ``st``: no rim lying flat (:mod:`.surface_flat`'s), no sphere
    filling a tray between two faces; several shapes touching (:mod:`.surface_several_kernels`) on a table taken
    whole (not a tray's faces), with no rolling or spinning resistance, and no more than the kernel's state holds."""
    if st.mode in (FLAT, FLAT_REST) or surface.on_opposite_faces(st) >= 0:
        return False
    return not st.extra or (surface.faces is None and not surface.table.resists
                            and len(st.extra) <= lay.MAX_EXTRA)


def _numpy_stretch(surface: Surface, state: State, t_end: float, dt: float, every: int, progress, stop,
                   resume: tuple | None, back_after: int | None = None) -> tuple:
    """:func:`run_numpy`'s run, and where it ended: (Run, its last step, the works there). ``back_after``: end at the
    first step, ``back_after`` steps or more after the start, from which the compiled kernel can go on
    (:func:`kernel_takes`); None: run to t_end."""
    st = state.copy()
    t0, i0, (wf, wi, wn) = (st.t, 0, (0.0, 0.0, 0.0)) if resume is None else resume
    n_steps = int(round((t_end - t0) / dt))
    keys = ("t", "x", "v", "L", "Q", "mode", "shape", "energy", "wf", "wi", "wn")
    rec = {k: [] for k in keys}
    extra = []
    events = []
    complete = True

    def keep():
        for key, val in zip(keys, (st.t, st.x, st.v, st.L, st.Q, st.mode, st.shape, surface.energy(st), wf, wi, wn)):
            rec[key].append(val)
        extra.append(st.copy().extra)

    if resume is None:
        keep()
    for i in range(i0 + 1, n_steps + 1):
        if stop is not None and i % PROGRESS_EVERY == 0 and stop():
            complete = False
            if not rec["t"] or rec["t"][-1] != st.t:
                keep()
            break
        if progress is not None and i % PROGRESS_EVERY == 0:
            progress(i / n_steps)
        t_next = t0 + i * dt
        st, (wf, wi, wn) = _step(surface, st, t_next, dt, (wf, wi, wn), events)
        if not (np.all(np.isfinite(st.x)) and np.all(np.isfinite(st.L))):
            raise SimulationError(f"{surface.body.name!r}: the state is no longer finite", time=st.t,
                                  body=surface.body.name)
        if i % every == 0 or i == n_steps:
            keep()
        if back_after is not None and i - i0 >= back_after and i < n_steps and kernel_takes(surface, st):
            break
    else:  # to the end (or nothing to do)
        i = max(i0, n_steps)
    return (Run(*(np.array(rec[k]) for k in keys), events, st, complete, extra=extra if any(extra) else None), i,
            (wf, wi, wn))


# --- the compiled run ----------------------------------------------------------------------------------------

def _compiled_kernel():
    """(the compiled ``run_chunk`` of :mod:`.surface_run_kernels`, "ahead-of-time" or "jit"): from an ahead-of-time
    build that has it (no numba import), else numba's JIT; None when neither can run."""
    from ... import aot
    from ..backends import compiled

    build = aot.load()
    if build is not None and "surface" in build.specs:
        return (lambda *args: build.call("surface", args)), "ahead-of-time"
    if not compiled.available():
        return None
    from . import surface_run_kernels

    return surface_run_kernels.run_chunk, "jit"


def compiled_available() -> bool:
    """Whether :func:`run_compiled` can run here (an ahead-of-time build, or numba)."""
    return _compiled_kernel() is not None


def model_arrays(surface: Surface) -> tuple:
    """The compiled kernel's model (par, b, r, ax, rim, plan, rim_e1) in :mod:`.surface_layout`'s layout."""
    body, tb = surface.body, surface.table
    par = np.zeros(lay.NPAR)
    par[lay.P_MASS] = body.mass
    par[lay.P_INV:lay.P_INV + 3] = body.inv
    par[lay.P_MOM:lay.P_MOM + 3] = body.moments
    wall = tb.wall
    if tb.flat:
        par[lay.P_WKIND], par[lay.P_WSIGN] = lay.WALL_PLANE, 1.0
        par[lay.P_N:lay.P_N + 3] = tb.normal
        par[lay.P_Q:lay.P_Q + 3] = tb.point
    elif isinstance(wall, Box):
        par[lay.P_WKIND], par[lay.P_WSIGN] = lay.WALL_BOX, 1.0 if wall.inside else -1.0
        par[lay.P_WC:lay.P_WC + 3], par[lay.P_WH:lay.P_WH + 3] = wall.centre, wall.h
        par[lay.P_WROT:lay.P_WROT + 9] = np.ravel(wall.R)
    else:
        cyl = isinstance(wall, Cylinder)
        par[lay.P_WKIND] = lay.WALL_CYLINDER if cyl else lay.WALL_SPHERE
        par[lay.P_WSIGN], par[lay.P_WR] = wall.sign, wall.radius
        par[lay.P_WC:lay.P_WC + 3] = wall.point if cyl else wall.centre
        if cyl:
            par[lay.P_WA:lay.P_WA + 3] = wall.a
    par[lay.P_MU], par[lay.P_E], par[lay.P_VISCOUS] = tb.mu, tb.restitution, float(tb.friction == "viscous")
    par[lay.P_G:lay.P_G + 3] = surface.g
    par[lay.P_REACH] = body.reach
    steps, inv1 = body.plan
    par[lay.P_INV1] = inv1[0]
    par[lay.P_TOUCH], par[lay.P_SLIP_RTOL], par[lay.P_SPLIT_RTOL] = TOUCH_RTOL, SLIP_RTOL, SPLIT_RTOL
    par[lay.P_MAX_SPLITS], par[lay.P_MAX_EVENTS], par[lay.P_REGION_RTOL] = MAX_SPLITS, MAX_EVENTS_PER_STEP, REGION_RTOL
    par[lay.P_DR], par[lay.P_DS], par[lay.P_ROT_RTOL] = tb.rolling_resistance, tb.spin_resistance, ROT_RTOL
    par[lay.P_RIM_ITER] = RIM_ITERATIONS
    par[lay.P_RCOND], par[lay.P_FRICTION_LAST] = several.RCOND, several.FRICTION_LAST
    par[lay.P_SEV_ITER], par[lay.P_CLOSE_RATE] = several.ITERATIONS, CLOSE_RATE
    plan = np.full((3, 3), -1.0)
    for p, (k, frac, coef) in enumerate(steps):
        plan[p] = (k, frac, coef[0])
    f = lambda a: np.ascontiguousarray(a, dtype=float)  # noqa: E731
    return (par, f(body.b), f(body.r), f(body.rim_axis), f(body.rim), plan, f(body.rim_e1))


def state_vector(st: State) -> np.ndarray:
    """A :class:`State` as the kernel's (NSTATE,) vector (:mod:`.surface_layout`): its other touching shapes after
    S_NEXTRA."""
    s = np.zeros(lay.NSTATE)
    s[lay.S_T] = st.t
    s[lay.S_X:lay.S_X + 3], s[lay.S_V:lay.S_V + 3], s[lay.S_L:lay.S_L + 3] = st.x, st.v, st.L
    s[lay.S_Q:lay.S_Q + 9] = np.ravel(st.Q)
    s[lay.S_MODE], s[lay.S_SHAPE] = MODES.index(st.mode), st.shape
    s[lay.S_SLIP:lay.S_SLIP + 3] = st.slip
    if len(st.extra) > lay.MAX_EXTRA:
        raise ValueError(f"{len(st.extra) + 1} touching shapes: the kernel's state holds {lay.MAX_EXTRA + 1}")
    s[lay.S_NEXTRA] = len(st.extra)
    for j, (k, mode, slip) in enumerate(st.extra):
        o = lay.S_EXTRA + lay.EXTRA_W * j
        s[o], s[o + 1], s[o + 2:o + 5] = k, MODES.index(mode), slip
    return s


def state_of(s: np.ndarray) -> State:
    """The :class:`State` of a kernel's (NSTATE,) vector."""
    x, v, L = (s[k:k + 3].copy() for k in (lay.S_X, lay.S_V, lay.S_L))
    extra = tuple((int(s[o]), MODES[int(s[o + 1])], s[o + 2:o + 5].copy())
                  for o in (lay.S_EXTRA + lay.EXTRA_W * j for j in range(int(s[lay.S_NEXTRA]))))
    return State(float(s[lay.S_T]), x, v, L, s[lay.S_Q:lay.S_Q + 9].reshape(3, 3).copy(), MODES[int(s[lay.S_MODE])],
                 int(s[lay.S_SHAPE]), s[lay.S_SLIP:lay.S_SLIP + 3].copy(), extra)


#: Events a compiled chunk's buffer holds at first (doubled, and the chunk run again, when it fills).
EVENT_CAPACITY = 64


def run_compiled(surface: Surface, state: State, t_end: float, dt: float, every: int = 1, progress=None,
                 stop=None) -> Run:
    """:func:`run` on the compiled kernel (:func:`.surface_run_kernels.run_chunk`): the same method, steps, events and
    records as :func:`run_numpy`, to round-off; chunks of PROGRESS_EVERY steps when there are callbacks (the
    numpy run's points for them), else one. Where the kernel cannot go on — a second shape reaches the table while
    one touches, the contacts change while several touch (the kernel steps several contacts, the reference decides
    their changes: :mod:`.surface_several`), a rim falls flat (which the reference lands), a failure (Painlevé's
    paradox, chatter, …) — the steps before that one stay compiled and the reference takes the run over from there,
    going on or failing in its own words, and hands it back to the kernel once it can go on (:func:`kernel_takes`,
    at least BACK_AFTER steps later): ``engine`` "numba+numpy". A failure in the run's first step gives the
    reference the whole run."""
    found = _compiled_kernel()
    if found is None:
        raise ValidationError("engine", "the compiled table kernel needs numba (pip install pem_physics[fast]) or "
                              "an ahead-of-time build (pem build-engine); use engine='numpy'")
    if not (np.isfinite(dt) and dt != 0):
        raise ValidationError("dt", f"must be a non-zero time step (s), got {dt!r}")
    kernel, kernels = found
    M = model_arrays(surface.whole)           # one contact a shape (a tray: the nearest face's)
    # a call of no steps first: numba compiles (first use) or loads its cache here, timed apart from the run
    t_load = _time.perf_counter()
    kernel(M, np.zeros(lay.NSTATE), np.zeros(3), 0, 0, 0, float(state.t), float(dt), 1,
           np.zeros((1, lay.NSTATE + 4)), 0, np.zeros((1, 21)), 0, np.zeros(3))
    load_s = _time.perf_counter() - t_load
    t0, every = float(state.t), int(every)
    n_steps = int(round((t_end - t0) / dt))
    pieces, st, i, works = [], state, 0, (0.0, 0.0, 0.0)
    back = BACK_AFTER
    while True:
        if kernel_takes(surface, st):
            piece, i1, st1, works1 = _compiled_stretch(kernel, M, surface, st, (t0, i, works), n_steps, dt, every,
                                                       progress, stop, 2 * back if pieces else None)
            if piece is None:  # a failure in the run's first step
                return run_numpy(surface, state, t_end, dt, every, progress, stop)
            piece.kernels, piece.load_s = kernels, load_s
            pieces.append(piece)
            if i1 >= n_steps or not piece.complete:
                break
            # a stretch handed back soon (a coin wobbling near flat, a die rocking between corners): the reference
            # keeps the next one twice as long, so that the tries stay few
            fresh = BACK_AFTER_CHANGE if piece.handover in (lay.FAIL_SECOND_SHAPE, lay.FAIL_SEVERAL_EVENT) \
                else BACK_AFTER
            back = min(2 * back, n_steps) if i1 - i < back else fresh
            st, i, works = st1, i1, works1
        piece, i, works = _numpy_stretch(surface, st, t_end, dt, every, progress, stop,
                                         None if i == 0 and not pieces else (t0, i, works), back)
        pieces.append(piece)
        st = piece.final
        if i >= n_steps or not piece.complete:
            break
    return pieces[0] if len(pieces) == 1 else _joined(pieces, kernels, load_s)


#: The fewest steps the numpy reference runs, once it has taken a run over, before it hands the run back to the
#: compiled kernel: a top hopping on its ball and stem hands over at every landing; a back and forth each step would
#: cost more than the reference's own steps.
BACK_AFTER = 50
#: The same after a contact change the kernel leaves to the reference (a shape reaching the table while another
#: touches, a change while several touch): the reference takes that step, and the kernel can go on right after.
BACK_AFTER_CHANGE = 4


def _compiled_stretch(kernel, M, surface: Surface, state: State, resume: tuple, n_steps: int, dt: float, every: int,
                      progress, stop, chunk: int | None = None) -> tuple:
    """The compiled kernel from ``state`` after step i of a run from t0 (``resume`` (t0, i, works)) up to step
    n_steps, or to the step before the one it cannot take (:func:`run_compiled`): (its Run, its last step, the state
    and works there), or (None, …) for a failure in the run's first step. ``chunk``: the first call's steps at most,
    doubling call by call (a stretch taken back may be handed over again soon: the kernel's steps past that are
    thrown away); None: as many as the callbacks allow."""
    t0, i, works = resume
    whole = state.copy()
    whole.shape = surface.whole_shape(state.shape)
    s = state_vector(whole)
    works = np.array(works, dtype=float)
    R = np.zeros(((n_steps - i) // every + 3, lay.NSTATE + 4))
    rc = 0
    if i == 0:  # the run's start: its first record
        R[0, :lay.NSTATE] = s
        R[0, lay.NSTATE] = surface.energy(state)
        rc = 1
    i_start = i
    E = np.zeros((EVENT_CAPACITY, 21))
    ec = 0
    info = np.zeros(3)
    complete = True
    handover = 0.0
    callbacks = progress is not None or stop is not None
    while i < n_steps:
        # run_numpy calls back before its step i + 1 when PROGRESS_EVERY divides i + 1: the chunks end there
        if callbacks and (i + 1) % PROGRESS_EVERY == 0:
            if stop is not None and stop():
                complete = False
                if rc == 0 or R[rc - 1, lay.S_T] != s[lay.S_T]:
                    R[rc, :lay.NSTATE] = s
                    R[rc, lay.NSTATE] = surface.energy(state_of(s))
                    R[rc, lay.NSTATE + 1:] = works
                    rc += 1
                break
            if progress is not None:
                progress((i + 1) / n_steps)
        i1 = min(((i + 1) // PROGRESS_EVERY + 1) * PROGRESS_EVERY - 1, n_steps) if callbacks else n_steps
        if chunk is not None:
            i1, chunk = min(i1, i + chunk), 2 * chunk
        while True:
            s1, works1 = s.copy(), works.copy()
            status, rc1, ec1 = kernel(M, s1, works1, i, i1, n_steps, t0, float(dt), every, R, rc, E, ec, info)
            if status != lay.EVENTS_FULL:
                break
            E = np.concatenate([E, np.zeros_like(E)])
        i_fail = min(max(int(np.floor((info[1] - t0) / dt)) + 1, i + 1), i1) \
            if status != lay.OK and info[1] > t0 + i * dt else None
        handover = float(info[0]) if status == lay.FAILED else 0.0
        if status != lay.FAILED or i_fail is not None:
            astray = _astray(surface, E[ec:ec1], R[rc:rc1], s1 if status == lay.OK else None, t0, dt, i, i1)
            if astray is not None and (i_fail is None or astray < i_fail):
                i_fail, handover = astray, 0.0
        if i_fail is not None:
            # the steps before that one compiled, the rest on the reference
            s1, works1 = s.copy(), works.copy()
            info[:] = 0.0
            status, rc1, ec1 = kernel(M, s1, works1, i, i_fail - 1, n_steps, t0, float(dt), every, R, rc, E, ec,
                                      info)
            if status == lay.OK:
                s, works, rc, ec, i = s1, works1, rc1, ec1, i_fail - 1
                break
        if status != lay.OK:
            if i_start == 0 and i == 0:
                return None, 0, state, tuple(works)
            break  # failed in this chunk's first step: the reference from the step before
        s, works, rc, ec, i = s1, works1, rc1, ec1, i1
    final = state_of(s)
    final.shape = surface.on_faces(final.shape, final.x, final.Q)
    piece = _compiled_run(surface, R[:rc], E[:ec], final, complete, "", 0.0)
    piece.handover = handover if i < n_steps and complete else 0.0
    return piece, i, final, tuple(works)


def _joined(pieces: list, kernels: str, load_s: float) -> Run:
    """One :class:`Run` of a run's stretches, compiled and numpy's, in order: ``engine`` "numba+numpy"."""
    keys = ("t", "x", "v", "L", "Q", "mode", "shape", "energy", "friction_work", "impact_work", "normal_work")
    joined = {k: np.concatenate([getattr(p, k) for p in pieces if len(p.t)]) for k in keys}
    extra = [e for p in pieces for e in (p.extra if p.extra is not None else [()] * len(p.t))]
    return Run(**joined, events=[e for p in pieces for e in p.events], final=pieces[-1].final,
               complete=pieces[-1].complete, engine="numba+numpy", kernels=kernels, load_s=load_s,
               extra=extra if any(extra) else None)


def _astray(surface: Surface, E, R, s_end, t0: float, dt: float, i: int, i1: int) -> int | None:
    """The first step of a compiled chunk (steps i+1 … i1 from t0: its events E, records R, and its end state s_end,
    None when it failed) from which the kernel is not the reference's method, or None:

    - an impact of a rim within STRIKE_TILT of flat (the reference lands its whole edge, the kernel strikes one point
      of it);
    - a shape found inside the table at an impact or at the chunk's end (the kernel does not watch a shape that just
      touched again in that step, and so misses a rim's far side coming down as it turns through flat in the air;
      the reference watches it deeper, :func:`_touch`);
    - a rim on a plane touching at one point that could reach flat before the next record — tilted less than twice
      its axis's speed times the records' spacing, or than 10·NEAR_FLAT (the kernel has no landing and does not
      halve a step whose lowest point runs past a right angle: the reference takes over from the record before).
    """
    r = surface.body.r

    def inside(x, Q) -> bool:
        return bool(np.any(surface.gaps(x, Q) < -TOUCH_RTOL * r))

    found = None
    for e in E:
        if lay.EVENT_KINDS[int(e[1])].startswith("impact"):
            x, Q = e[9:12], e[12:21].reshape(3, 3)
            k = surface.on_faces(int(e[2]), x, Q)
            if inside(x, Q) or surface_flat.lies_flat(surface, k, Q, surface_flat.STRIKE_TILT):
                found = min(max(int(np.ceil((e[0] - t0) / dt - 1e-6)), i + 1), i1)
                break
    rows = [row[:lay.NSTATE] for row in R] + ([] if s_end is None else [s_end])
    last = i                                            # the step of the last record trusted
    for row in rows:
        st = state_of(row)
        st.shape = surface.on_faces(st.shape, st.x, st.Q)
        step = int(round((st.t - t0) / dt))
        if (found is not None and step >= found) or step <= last:
            break
        if inside(st.x, st.Q):
            return last + 1
        if surface_flat.on_a_plane(surface, st):
            n = surface.plane(st.shape)[1]
            a = surface.body.rim_axis[st.shape] @ st.Q
            reach = 2.0 * float(np.linalg.norm(np.cross(surface.W(st.Q) @ st.L, a))) * (step - last) * dt
            if surface_flat.tilt(surface, st.shape, st.Q, n) < max(reach, 10 * surface_flat.NEAR_FLAT):
                return last + 1
        last = step
    return found


def _compiled_run(surface: Surface, R, E, final: State, complete: bool, kernels: str, load_s: float) -> Run:
    """The :class:`Run` of a compiled run's records R and events E (their shapes the whole body's: on a tray, each
    taken as its copy against the face it touches, :meth:`.surface.Surface.on_faces`)."""
    events = []
    for e in E:
        x, Q = e[9:12].copy(), e[12:21].reshape(3, 3).copy()
        events.append(Event(float(e[0]), lay.EVENT_KINDS[int(e[1])], surface.on_faces(int(e[2]), x, Q), e[3:6].copy(),
                            e[6:9].copy(), x, Q))
    x, v, L = (R[:, k:k + 3].copy() for k in (lay.S_X, lay.S_V, lay.S_L))
    Q = R[:, lay.S_Q:lay.S_Q + 9].reshape(-1, 3, 3).copy()
    energy, wf, wi, wn = (R[:, lay.NSTATE + k].copy() for k in range(4))
    shape = R[:, lay.S_SHAPE].astype(int)
    if surface.faces is not None:
        shape = np.array([surface.on_faces(int(k), xr, Qr) for k, xr, Qr in zip(shape, x, Q)], dtype=int)
    extra = [state_of(row).extra for row in R]
    return Run(R[:, lay.S_T].copy(), x, v, L, Q, np.array([MODES[int(m)] for m in R[:, lay.S_MODE]]), shape, energy,
               wf, wi, wn, events, final, complete, "numba", kernels, load_s, extra if any(extra) else None)
