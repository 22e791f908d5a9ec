"""Run a scene: integrate, record diagnostics, detect blow-ups.

:func:`simulate` returns a :class:`Trajectory`. Array shapes: R records,
B moving bodies, D dipoles on them; an ensemble run adds a leading E axis
(E, R, B, ...). Units: SI (s, rad/s, kg·m²/s, N·m, J).
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from ..errors import SimulationError, ValidationError
from ..model.rotations import orientation_to_quat, orthonormality_error
from ..model.scene import Scene, Settings, no_step
from .integrators import Splitting, make_integrator, omega_lab
from .system import System, compile_system
from .torques import evaluate

#: ‖UUᵀ − I‖ above this stops a run: the orientation no longer is a rotation.
ORTHONORMALITY_LIMIT = 1e-3
#: Steps between blow-up checks when records are further apart.
CHECK_EVERY = 64


def _numbers(value, path: str) -> np.ndarray:
    """``value`` as an array of floats, or a ValidationError naming ``path`` (strings, ragged lists, None)."""
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValidationError(path, f"expected an array of numbers ({err})") from None


@dataclass
class Ensemble:
    """Initial conditions, and optionally some parameters, of E copies of a scene.

    orientation: (E,B,3,3) rows = body axes in lab, or None for the scene's;
    angular_velocity: (E,B,3) rad/s lab, or None for the scene's. B counts the
    moving bodies (pendulum and free) in scene order.
    friction: (E,) pivot friction coefficients c, N·m·s, or None for the scene's;
    field: (E,3) uniform external field B, T, lab, or None for the scene's (a
    scene's rotating field is added to it). Member e of the ensemble then runs
    exactly like the scene with ``friction=friction[e]``, ``field=field[e]``.
    """

    orientation: np.ndarray | None = None
    angular_velocity: np.ndarray | None = None
    friction: np.ndarray | None = None
    field: np.ndarray | None = None

    def system(self, system: System) -> System:
        """``system`` with this ensemble's per-member friction and field (unchanged if it has none)."""
        c, f = self._parameters()
        if c is None and f is None:
            return system
        return system.with_members(friction=c, field=f)

    def _parameters(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The validated per-member friction (E,) and field (E,3), each None when not given."""
        c = f = None
        if self.friction is not None:
            c = _numbers(self.friction, "ensemble.friction")
            if c.ndim != 1:
                raise ValidationError("ensemble.friction", f"expected shape (E,), got {c.shape}")
            if not np.all(np.isfinite(c) & (c >= 0)):
                e = int(np.argmax(~(np.isfinite(c) & (c >= 0))))
                raise ValidationError(f"ensemble.friction[{e}]", f"must be finite and ≥ 0, got {float(c[e])!r}")
        if self.field is not None:
            f = _numbers(self.field, "ensemble.field")
            if f.ndim != 2 or f.shape[1] != 3:
                raise ValidationError("ensemble.field", f"expected shape (E, 3), got {f.shape}")
            if not np.all(np.isfinite(f)):
                raise ValidationError("ensemble.field", "values must be finite")
        return c, f

    def arrays(self, system: System) -> tuple[np.ndarray, np.ndarray]:
        """Initial orientations (E,B,3,3) and angular velocities (E,B,3), validated and filled in from the scene."""
        B = system.n_bodies
        sizes = {len(a) for a in self._parameters() if a is not None}
        U = w = None
        if self.orientation is not None:
            U = _numbers(self.orientation, "ensemble.orientation")
            if U.ndim != 4 or U.shape[1:] != (B, 3, 3):
                raise ValidationError("ensemble.orientation", f"expected shape (E, {B}, 3, 3), got {U.shape}")
            err = orthonormality_error(U)
            if not np.all(err < 1e-6) or not np.all(np.linalg.det(U) > 0):
                e, b = np.unravel_index(int(np.argmax(np.where(np.isfinite(err), err, np.inf))), err.shape)
                raise ValidationError(f"ensemble.orientation[{e}][{b}]",
                                      "not a proper rotation (rows must be orthonormal, right-handed)")
            sizes.add(U.shape[0])
        if self.angular_velocity is not None:
            w = _numbers(self.angular_velocity, "ensemble.angular_velocity")
            if w.ndim != 3 or w.shape[1:] != (B, 3):
                raise ValidationError("ensemble.angular_velocity", f"expected shape (E, {B}, 3), got {w.shape}")
            if not np.all(np.isfinite(w)):
                raise ValidationError("ensemble.angular_velocity", "values must be finite")
            sizes.add(w.shape[0])
        if len(sizes) != 1:
            raise ValidationError("ensemble", "give orientation, angular_velocity, friction and/or field with the "
                                              f"same leading size E (got sizes {sorted(sizes)})")
        E = sizes.pop()
        if E == 0:
            raise ValidationError("ensemble", "has no members (E = 0): give at least one")
        if U is None:
            U = np.broadcast_to(system.U0, (E, B, 3, 3)).copy()
        if w is None:
            w = np.broadcast_to(system.omega0, (E, B, 3)).copy()
        return U, w


@dataclass
class Trajectory:
    """Recorded states. See the module docstring for shapes and units."""

    names: list
    t: np.ndarray                 # (R,)
    quaternion: np.ndarray        # (..., R, B, 4) w, x, y, z; body → lab; signs continuous in time
    orientation: np.ndarray       # (..., R, B, 3, 3) rows = body axes in lab
    omega: np.ndarray             # (..., R, B, 3) lab
    omega_body: np.ndarray        # (..., R, B, 3)
    angular_momentum: np.ndarray  # (..., R, B, 3) lab, about the pivot
    angular_momentum_body: np.ndarray  # (..., R, B, 3)
    torque: np.ndarray            # (..., R, B, 3) lab, about the pivot, friction included
    kinetic_energy: np.ndarray    # (..., R, B) rotational + translational (|p|²/2M)
    gravity_energy: np.ndarray    # (..., R, B)
    field_energy: np.ndarray      # (..., R, B)
    dipole_energy: np.ndarray     # (..., R)
    orthonormality: np.ndarray    # (..., R, B) ‖UUᵀ − I‖
    pivot: np.ndarray             # (B,3) lab
    center_of_mass: np.ndarray    # (..., R, B, 3) lab
    dipole_position: np.ndarray   # (..., R, D, 3) lab
    dipole_moment: np.ndarray     # (..., R, D, 3) lab
    dipole_owner: np.ndarray      # (D,) body index
    #: centres of rotation, lab m: the pivot of a pendulum, the centre of mass of a free body — moving for a
    #: translating one (theory §7); with ``orientation`` this places every body: a body point at b (body
    #: coordinates about the centre) is at position + b @ orientation
    position: np.ndarray | None = None         # (..., R, B, 3)
    linear_momentum: np.ndarray | None = None  # (..., R, B, 3) kg·m/s lab, translating bodies (0 for the others)
    velocity: np.ndarray | None = None         # (..., R, B, 3) m/s lab, centre-of-mass velocity (0 if not translating)
    translating: np.ndarray | None = None      # (B,) bool
    method: str = ""
    dt: float = 0.0
    steps: int = 0
    wall_time: float = 0.0
    complete: bool = True
    ensemble: bool = False
    info: dict = field(default_factory=dict)
    friction_work: np.ndarray | None = None  # (..., R) J done against pivot friction since the start (checks)
    #: (..., R) J: the work the drivers (driven magnets, moving pivots, a rotating field) did on the bodies since
    #: the start, summed by the integrator's own kicks (splitting methods) or integrated with the state (dop853); None
    #: where not summed (PEM's schemes)
    driver_work: np.ndarray | None = None
    #: contact scenes: impacts (:class:`~pem_physics.engine.contact.driver.EventLog`) and the kinetic energy (J) they
    #: took up to each record (R,); None for scenes without contacts
    events: object | None = None
    impact_loss: np.ndarray | None = None
    #: (B,) N: each body's weight m·|g| (None: not known, as for a trajectory read back from a file). With the
    #: distance of its centre of mass from its centre of rotation it bounds the energy the body's rotation can
    #: exchange with gravity: a floor of :meth:`_energy_scale`
    weight: np.ndarray | None = None

    @property
    def total_energy(self) -> np.ndarray:
        """(..., R) kinetic + gravitational + field + dipole–dipole energy, J."""
        return (self.kinetic_energy.sum(-1) + self.gravity_energy.sum(-1)
                + self.field_energy.sum(-1) + self.dipole_energy)

    @property
    def total_linear_momentum(self) -> np.ndarray:
        """(..., R, 3) kg·m/s: Σ p of the translating bodies (pivots and fixed magnets excluded)."""
        return self.linear_momentum.sum(-2)

    @property
    def total_angular_momentum(self) -> np.ndarray:
        """(..., R, 3) kg·m²/s about the lab origin: Σ (L + x × p). A pendulum's L is about its pivot, so the
        sum is the system's angular momentum only for scenes of free bodies (conserved without external
        torques: isolated magnets, no gravity torque on free bodies)."""
        return (self.angular_momentum + np.cross(self.position, self.linear_momentum)).sum(-2)

    def energy_drift(self) -> float:
        """max |E(t) − E(0)| / scale over all records (and members); scale as :meth:`_energy_scale`."""
        Et = self.total_energy
        return float(np.max(np.abs(Et - Et[..., :1]) / self._energy_scale()))

    def _energy_scale(self) -> np.ndarray:
        """(..., 1) J: what energy errors are measured against — the largest of |E(0)|, the largest kinetic energy,
        and Σ m·|g|·d over the bodies, d (m) the distance of a body's centre of mass from its centre of rotation
        (the most its rotation can exchange with gravity). The last keeps a body all but centred on its pivot
        (d ~ 1e-19 m: energies ~1e-34 J, every change of them round-off of its orientation) from reading as a
        large relative error; for a pendulum it is of the order of |E(0)| anyway."""
        E0 = self.total_energy[..., :1]
        scale = np.maximum(np.abs(E0), np.abs(self.kinetic_energy.sum(-1)).max(axis=-1, keepdims=True))
        if self.weight is not None and self.position is not None:
            arm = np.linalg.norm(self.center_of_mass - self.position, axis=-1).max(axis=-2)   # (..., B) m
            scale = np.maximum(scale, (arm * self.weight).sum(-1)[..., None])
        return np.where(scale > 0, scale, 1.0)

    def energy_balance(self) -> float:
        """max |E(t) + W(t) − E(0)| / scale: the integration error, with the work W of pivot friction and impacts
        counted, less the drivers' work (equals :meth:`energy_drift` without friction, impacts and drivers). With
        drivers (driven magnets, moving pivots, a rotating field) meaningful only where their work was summed
        (:attr:`driver_work` not None); E of a body on a moving pivot is its energy in the pivot's frame."""
        W = self.friction_work if self.friction_work is not None else 0.0
        if self.impact_loss is not None:
            W = W + self.impact_loss
        if self.driver_work is not None:
            W = W - self.driver_work
        Et = self.total_energy + W
        return float(np.max(np.abs(Et - Et[..., :1]) / self._energy_scale()))

    def friction_loss(self) -> float:
        """Energy taken by pivot friction by the last record, relative to the energy scale (max over members)."""
        if self.friction_work is None:
            return 0.0
        return float(np.max(self.friction_work[..., -1:] / self._energy_scale()))

    def contact_loss(self) -> float:
        """Energy taken by contacts — impacts, resting contacts, a table's friction — by the last record, relative to
        the energy scale (0 for scenes without contacts)."""
        if self.impact_loss is None:
            return 0.0
        return float(np.max(self.impact_loss[..., -1:] / self._energy_scale()))

    def member(self, e: int) -> Trajectory:
        """One ensemble member as a single-scene trajectory."""
        if not self.ensemble:
            raise ValueError("not an ensemble trajectory")
        kw = {}
        for name, value in self.__dict__.items():
            if isinstance(value, np.ndarray) and name not in ("t", "pivot", "dipole_owner", "impact_loss",
                                                              "translating", "weight"):
                kw[name] = value[e]
        return replace(self, ensemble=False, **kw)

    def body(self, name: str) -> int:
        return self.names.index(name)


def _record(system: System, integ, t: float) -> dict:
    rec = _record_state(system, integ.orientation(), integ.momentum(), integ.angular_velocity(), t,
                        integ.position(), integ.linear_momentum())
    if getattr(integ, "driver_work", None) is not None:  # numpy splitting steps sum the drivers' work
        rec["driver_work"] = integ.driver_work.copy()
    return rec


def _record_state(system: System, U: np.ndarray, L: np.ndarray, w: np.ndarray, t: float,
                  X: np.ndarray | None = None, P: np.ndarray | None = None) -> dict:
    """Every recorded array of states U (N,B,3,3) (user body axes), L, w (N,B,3) at time t.

    X, P (N,B,3): centres of rotation (m) and linear momenta (kg·m/s); None: the pivots and zero (no body
    translates). N runs over ensemble members, or over records of a time-independent scene (see ``_records``).
    """
    kin = system.kin_body
    if X is None:
        X = np.broadcast_to(system.centres(t), L.shape)
    if P is None:
        P = np.zeros(L.shape)
    res = evaluate(system, kin, U, t, energies=True, X=X if system.any_translating else None)
    torque = res.torque - system.damping(w)
    if system.hinged.any():
        # The physical angular momentum of a hinged body is I_lab ω, not the stored ℓ·a.
        I_lab = np.einsum("ebji,bjk,ebkl->ebil", U, kin.inertia, U)
        L = np.where(system.hinged[:, None], np.einsum("ebij,ebj->ebi", I_lab, w), L)
    Ud = U[:, system.owner]
    s = np.einsum("edij,di->edj", Ud, kin.dpos)
    v = P / system.mass[:, None]
    return dict(
        quaternion=orientation_to_quat(U),
        orientation=U.copy(),
        omega=w,
        omega_body=np.einsum("ebij,ebj->ebi", U, w),
        angular_momentum=L.copy(),
        angular_momentum_body=np.einsum("ebij,ebj->ebi", U, L),
        torque=torque,
        kinetic_energy=0.5 * np.einsum("ebi,ebi->eb", w, L) + 0.5 * np.einsum("ebi,ebi->eb", v, P),
        gravity_energy=res.gravity_energy,
        field_energy=res.field_energy,
        dipole_energy=res.dipole_energy,
        orthonormality=orthonormality_error(U),
        center_of_mass=X + np.einsum("ebij,bi->ebj", U, kin.com),
        dipole_position=X[:, system.owner] + s,
        dipole_moment=np.einsum("edij,di->edj", Ud, kin.dmom),
        position=np.array(X, dtype=float),
        linear_momentum=np.array(P, dtype=float),
        velocity=v,
    )


def _check(system: System, integ, ensemble: bool) -> None:
    """Stop with a SimulationError naming time and body if the state is no longer sane."""
    L = integ.momentum()
    bad = ~np.all(np.isfinite(L), axis=-1)
    what = "non-finite angular momentum"
    if not bad.any():
        err = orthonormality_error(integ.orientation())
        bad = ~(err < ORTHONORMALITY_LIMIT)
        what = f"orientation no longer orthonormal (‖UUᵀ−I‖ > {ORTHONORMALITY_LIMIT:g})"
    if bad.any():
        e, b = np.argwhere(bad)[0]
        who = f"body {system.names[b]!r}" + (f" of ensemble member {e}" if ensemble else "")
        raise SimulationError(
            f"blow-up at t = {integ.t:.6g} s: {what} for {who}; {_blowup_fix(system, integ, int(e), int(b))}",
            time=integ.t, body=system.names[b], member=int(e) if ensemble else None)


def _blowup_fix(system: System, integ, e: int, b: int) -> str:
    """What to do about a blow-up of body b (member e): where the pivot friction damps it within a step, that
    (:func:`.checks.damping_hint`: splitting4's backward sub-steps), else a smaller dt or another method."""
    from .checks import damping_hint

    c = None if system.member_friction is None else float(system.member_friction[e])
    hint = damping_hint(system, integ.dt, b, c) if getattr(integ, "name", "") == "splitting4" else None
    return hint or "try a smaller dt or another method"


def simulate(scene: Scene, *, method: str | None = None, dt: float | None = None,
             t_end: float | None = None, record_interval: float | None = None,
             ensemble: Ensemble | None = None,
             progress: Callable[[float], None] | None = None,
             stop: Callable[[], bool] | None = None) -> Trajectory:
    """Integrate ``scene`` and return its trajectory: :func:`prepare`, then :meth:`Run.execute`.

    method/dt/t_end/record_interval override ``scene.settings``. ``ensemble``
    runs E copies with other initial conditions (and, optionally, their own
    friction and uniform field) in one vectorised call.
    ``progress(fraction)`` is called as the run advances; when ``stop()``
    returns True the run ends early and the trajectory has ``complete=False``.
    """
    return prepare(scene, method=method, dt=dt, t_end=t_end, record_interval=record_interval,
                   ensemble=ensemble).execute(progress, stop)


@dataclass
class Run:
    """A scene checked and set up to integrate (:func:`prepare`); :meth:`execute` integrates it, once.

    scene: the checked scene, its settings with the overrides; system: its arrays (:class:`~.system.System`);
    warnings: what the checks before the run found (they become the trajectory's); ensemble: the members, or None.
    integ: the integrator (its state the run's start), contacts: the contact model (:mod:`.contact.model`) or None,
    marks: the step counts of the records — all None for a body on a table (``contact_model = "surface"``), whose run
    :mod:`.contact.surface_scene` sets up itself."""

    scene: Scene
    system: System
    warnings: list
    ensemble: Ensemble | None = None
    integ: object = None
    contacts: object = None
    marks: list | None = None
    done: bool = False

    def execute(self, progress: Callable[[float], None] | None = None,
                stop: Callable[[], bool] | None = None) -> Trajectory:
        """Integrate: the :class:`Trajectory`. ``progress(fraction)`` is called as the run advances; when
        ``stop()`` returns True the run ends early and the trajectory has ``complete=False``."""
        if self.done:
            raise RuntimeError("Run.execute: this run has been executed (its integrator is at its end): prepare() "
                               "another")
        self.done = True
        if self.scene.contact_model == "surface":
            from .contact import surface_scene

            fields = surface_scene.simulate(self.scene, progress, stop)
            fields["quaternion"] = _continuous(fields["quaternion"])
            traj = Trajectory(**fields)
            traj.info["warnings"] = self.warnings + traj.info["warnings"]
            return traj
        from .backends import compiled

        engine, runner, load_s, kernels = _engine(self.integ, self.ensemble)
        split = None
        if type(runner) is compiled.Runner:  # not the Python floats' runner, nor the lanes (groups.plan says the rest)
            from .backends import groups

            split = groups.plan(self.system, self.integ, runner, self.marks[-1])  # independent bodies: in threads
        wall0 = _time.perf_counter()
        times, arrays, complete, events, impact_loss = self._integrate(runner, split, progress, stop)
        return self._trajectory(times, arrays, complete, _time.perf_counter() - wall0, engine, load_s, kernels,
                                split, events, impact_loss)

    def _integrate(self, runner, split, progress, stop) -> tuple:
        """(times, record arrays (E,R,…), complete, events, impact loss) on the engine chosen (``runner``: None for
        numpy; ``split``: groups of independent bodies stepped in threads, or None)."""
        system, integ, contacts, marks, many = self.system, self.integ, self.contacts, self.marks, \
            self.ensemble is not None
        events = impact_loss = None
        if split is not None:
            times, arrays, complete = _run_groups(self.scene, system, integ, split, marks, progress, stop)
        elif contacts is not None:
            from .contact import driver as contact_mod

            check = lambda ig: _check(system, ig, False)  # noqa: E731
            if runner is not None:
                times, U, L, w, X, P, complete, events, impact_loss, W = contact_mod.run_compiled(
                    contacts, integ, runner, marks, check, lambda status: _raise_blowup(system, integ, status, False),
                    progress, stop, CALL_SECONDS, CHECK_EVERY)
                arrays = _records(system, U, L, w, np.array(times), X, P)
                if W is not None:
                    arrays["driver_work"] = W
            else:
                times, records, complete, events, impact_loss = contact_mod.run(
                    contacts, integ, marks, lambda ig, t: _record(system, ig, t), check, progress, stop)
                arrays = {k: np.stack([r[k] for r in records], axis=1) for k in records[0]}
        elif runner is not None:
            times, arrays, complete = _run_compiled(system, integ, runner, marks, many, progress, stop)
        else:
            times, records, complete = _run_numpy(system, integ, marks, many, progress, stop)
            arrays = {k: np.stack([r[k] for r in records], axis=1) for k in records[0]}  # (E,R,...)
        return times, arrays, complete, events, impact_loss

    def _trajectory(self, times, arrays, complete, wall, engine, load_s, kernels, split, events,
                    impact_loss) -> Trajectory:
        """The :class:`Trajectory` of a run's records, with its diagnostics and the checks after it."""
        from . import checks

        system, settings = self.system, self.scene.settings
        arrays["quaternion"] = _continuous(arrays["quaternion"])
        if self.ensemble is None:
            arrays = {k: a[0] for k, a in arrays.items()}
        t = np.array(times)
        c = system.member_friction if system.member_friction is not None else system.friction
        traj = Trajectory(
            names=list(system.names), t=t, pivot=system.pivot.copy(),
            dipole_owner=system.owner.copy(), method=settings.method, dt=settings.dt,
            steps=self.integ.steps_done, wall_time=wall, complete=complete, ensemble=self.ensemble is not None,
            info={"evaluations": getattr(self.integ, "n_evals", None), "engine": engine, "compile_or_load_s": load_s,
                  "kernels": kernels},
            friction_work=checks.friction_work(t, arrays["omega"], c), events=events, impact_loss=impact_loss,
            translating=system.translating.copy(), weight=system.mass * float(np.linalg.norm(system.gravity)),
            **arrays)
        if split is not None:
            traj.info["threads"] = len(split)  # groups of independent bodies, each stepped in a thread (groups.py)
        warnings = self.warnings
        if self.contacts is not None:
            if engine == "numba":
                traj.info["contacts"] = ("steps, impacts (with Coulomb friction) and contacts that settle and rest on "
                                         "the compiled engine (engine/impact_kernels.py); the other impact steps "
                                         "located and resolved by the numpy contact driver (engine/contact/driver.py)")
            else:
                traj.info["contacts"] = ("impacts located and resolved by the numpy contact driver "
                                         "(engine/contact/driver.py)")
            warnings = warnings + self.contacts.warnings
        traj.info["warnings"] = warnings + checks.postflight(system, traj)
        return traj


def _check_arguments(scene, ensemble) -> None:
    """A ValidationError naming the argument that is not a :class:`Scene` (a file name, a dict, None) or an
    :class:`Ensemble` (or None), before anything reads it."""
    if not isinstance(scene, Scene):
        hint = ("; a scene file or example:NAME is read by pem_physics.load_scene" if isinstance(scene, str) else
                "; a dict of a scene file's keys is read by pem_physics.io.scenefile.scene_from_dict"
                if isinstance(scene, dict) else "")
        raise ValidationError("scene", f"expected a pem_physics Scene, got {type(scene).__name__}{hint}")
    if not isinstance(scene.settings, Settings):   # read (replaced) before Scene.checked would say so
        raise ValidationError("settings", f"expected a pem_physics Settings, got {type(scene.settings).__name__}")
    if ensemble is not None and not isinstance(ensemble, Ensemble):
        raise ValidationError("ensemble", f"expected a pem_physics Ensemble or None, got {type(ensemble).__name__}")


def prepare(scene: Scene, *, method: str | None = None, dt: float | None = None, t_end: float | None = None,
            record_interval: float | None = None, ensemble: Ensemble | None = None) -> Run:
    """Check ``scene`` and set up its run (:class:`Run`; :meth:`Run.execute` integrates it). method/dt/t_end/
    record_interval override ``scene.settings``; ``ensemble``: E members (:class:`Ensemble`).

    Everything that can refuse a scene does it here, before any step: a scene whose run would mean nothing
    (:func:`.checks.preflight`), a method that cannot take its contacts, spheres overlapping at the start, a body
    outside a table's model or inside its table, a run of no step, records that would not fit in memory — each a
    :class:`~pem_physics.errors.ValidationError` naming the item and the fix."""
    from . import budget, checks

    _check_arguments(scene, ensemble)
    s = scene.settings
    settings = replace(s, method=method or s.method, dt=s.dt if dt is None else dt,
                       t_end=s.t_end if t_end is None else t_end,
                       record_interval=s.record_interval if record_interval is None else record_interval)
    scene = replace(scene, settings=settings).checked()
    settings = scene.settings
    system = compile_system(scene)
    warnings = checks.preflight(scene, system)  # raises on scenes whose run would mean nothing
    steps, every = settings.steps, settings.record_every
    if steps == 0 and settings.t_end > 0:
        raise ValidationError("settings.t_end", no_step(settings.t_end, settings.dt))
    if scene.contact_model == "surface":
        from .contact import surface_scene

        if ensemble is not None:
            raise ValidationError("ensemble", "scenes with contact_model = \"surface\" run one member at a time")
        surface_scene.model(scene)  # outside the model, or a shape inside the table: refused now
        return Run(scene, system, warnings)
    if scene.has_contacts and ensemble is not None:
        raise ValidationError("ensemble", "scenes with contacts run one member at a time")
    if ensemble is None:
        U0, w0 = system.U0[None], system.omega0[None]
    else:
        U0, w0 = ensemble.arrays(system)
        system = ensemble.system(system)
    # the method's own refusals first (PEM's schemes and translating bodies), then the contacts'
    integ = make_integrator(settings.method, system, settings.dt, U0, w0, rtol=settings.rtol, atol=settings.atol)
    contacts = None
    if scene.has_contacts:
        from .contact import driver as contact_mod

        contact_mod.check_method(settings.method)
        contacts = contact_mod.ContactModel(scene, system)
        contacts.check_start(system.U0)
    # the engines check this: the scalar one declines contact scenes, the compiled one stops at impacts
    integ.contacts = contacts
    n_records = steps // every + 2
    budget.check(n_records * budget.trajectory_record_bytes(len(system.names), len(system.owner), len(U0)),
                 "settings.record_interval", f"{n_records - 1:,} records of {len(system.names)} "
                 f"bod{'y' if len(system.names) == 1 else 'ies'}" + (f" × {len(U0)} members" if len(U0) > 1 else ""),
                 f"record less often (a record interval of {max(1, round(steps / 1e5)) * settings.dt:.6g} s gives "
                 f"~{steps / max(1, round(steps / 1e5)):,.0f} records) or shorten t_end")
    marks = list(range(0, steps + 1, every))
    if marks[-1] != steps:
        marks.append(steps)
    return Run(scene, system, warnings, ensemble, integ, contacts, marks)


def _engine(integ, ensemble) -> tuple:
    """(engine name, runner or None: numpy, the time (s) its kernels took to compile or load, which kernels) of
    the fastest engine that runs ``integ``: the compiled one (a member a call, or the lanes for a large ensemble),
    else Python floats for one body, else numpy. numba (if any) loads here, after the caller chose its cache
    folder."""
    from .backends import compiled, scalar

    if compiled.supports(integ):
        t0 = _time.perf_counter()  # compiling (first run) or loading the kernels, timed apart from the integration
        kind = compiled.Runner
        if ensemble is not None:
            from .backends import lanes

            # Large ensembles of one pendulum over fixed magnets run with members in SIMD lanes.
            kind = lanes.Lanes if lanes.supported(integ) else compiled.Runner
        runner = kind(integ, ORTHONORMALITY_LIMIT, CHECK_EVERY)
        runner.advance_to([])
        kernels = "ahead-of-time" if getattr(runner, "aot", None) is not None else "jit"
        return "numba", runner, _time.perf_counter() - t0, kernels
    if scalar.supported(integ):  # no numba: one body on Python floats beats numpy's per-call overhead
        return "python", scalar.Runner(integ, ORTHONORMALITY_LIMIT, CHECK_EVERY), 0.0, None
    return "numpy", None, 0.0, None


def _run_numpy(system: System, integ, marks: list, ensemble: bool, progress, stop):
    """The reference driver: numpy steps in chunks of at most CHECK_EVERY, a check after each."""
    records = [_record(system, integ, 0.0)]
    times = [0.0]
    complete = True
    steps = marks[-1]
    for mark in marks[1:]:
        while integ.steps_done < mark:
            integ.advance(min(CHECK_EVERY, mark - integ.steps_done))
            _check(system, integ, ensemble)
            if stop is not None and stop():
                complete = False
                break
        if not complete:
            break
        records.append(_record(system, integ, integ.t))
        times.append(integ.t)
        if progress is not None:
            progress(integ.steps_done / max(steps, 1))
    if not complete and times[-1] != integ.t:
        records.append(_record(system, integ, integ.t))
        times.append(integ.t)
    return times, records, complete


#: Wall time the compiled driver aims to spend per call between progress reports and stop checks.
CALL_SECONDS = 0.1


def _run_compiled(system: System, integ, runner, marks: list, ensemble: bool, progress, stop):
    """The compiled driver: the kernel runs through many marks per call (no Python between steps).

    Calls are sized to about CALL_SECONDS of wall time, so progress bars move and ``stop()`` (Ctrl-C,
    Esc) is honoured; a call may end between records (an intermediate mark), where a stop keeps the
    state reached as a last, partial record — as the numpy driver does.
    """
    run = _states_compiled(system, integ, runner, marks, ensemble, progress, stop)
    arrays = _records(system, run.U, run.L, run.w, np.array(run.times), run.X, run.P)
    if run.W is not None:
        arrays["driver_work"] = run.W
    return run.times, arrays, run.complete


def _run_groups(scene: Scene, system: System, integ, split: list, marks: list, progress, stop):
    """:func:`_run_compiled` on groups of bodies that do not act on each other, each in a thread (:mod:`.groups`):
    each group a scene of its own (its bodies, all fixed magnets), the states joined in body order, the records
    taken over the whole ``system``. Stopped early, the run keeps the records every group reached."""
    from .backends import compiled, groups

    s = scene.settings
    subs = [compile_system(groups.sub_scene(scene, system, bodies)) for bodies in split]
    jobs = []
    for sub, bodies in zip(subs, split):
        ig = make_integrator(s.method, sub, s.dt, sub.U0[None], sub.omega0[None], rtol=s.rtol, atol=s.atol)
        if isinstance(ig, Splitting):
            ig.follow(integ, bodies)
        runner = compiled.Runner(ig, ORTHONORMALITY_LIMIT, CHECK_EVERY)
        jobs.append(lambda report, halt, sub=sub, ig=ig, runner=runner:
                    _states_compiled(sub, ig, runner, marks, False, report, halt))
    runs = groups.run(jobs, progress, stop, CALL_SECONDS)
    R = min(len(r.steps) for r in runs)
    while any(r.steps[R - 1] != runs[0].steps[R - 1] for r in runs):
        R -= 1  # a stopped group's last, partial record that another group does not have

    def joined(name):
        return np.concatenate([getattr(r, name)[:, :R] for r in runs], axis=2)

    X = P = None
    if system.any_translating:  # a group without translating bodies: their pivots and no momentum, as one run has
        X = np.concatenate([r.X[:, :R] if r.X is not None else np.broadcast_to(sub.pivot, (1, R) + sub.pivot.shape)
                            for r, sub in zip(runs, subs)], axis=2)
        P = np.concatenate([r.P[:, :R] if r.P is not None else np.zeros((1, R) + sub.pivot.shape)
                            for r, sub in zip(runs, subs)], axis=2)
    times = runs[0].times[:R]
    integ.steps_done = runs[0].steps[R - 1]
    complete = all(r.complete for r in runs) and R == len(runs[0].steps)
    return times, _records(system, joined("U"), joined("L"), joined("w"), np.array(times), X, P), complete


class _States(NamedTuple):
    """What the compiled driver reached: the record times (s) and their step counts, the states there (E,R,B,…:
    frames U, momenta L, lab ω, and where bodies translate centres X and linear momenta P, else None), the
    drivers' work W (E,R) or None, and whether the run went to its end."""

    times: list
    steps: list
    U: np.ndarray
    L: np.ndarray
    w: np.ndarray
    X: np.ndarray | None
    P: np.ndarray | None
    W: np.ndarray | None
    complete: bool


def _states_compiled(system: System, integ, runner, marks: list, ensemble: bool, progress, stop) -> _States:
    """:func:`_run_compiled`'s loop: the states at the records, not yet the recorded quantities."""
    from .backends import compiled

    U = [integ.orientation()[:, None]]
    L = [integ.momentum()[:, None]]
    w = [integ.angular_velocity()[:, None]]
    # positions and linear momenta: recorded where bodies translate (the runner returns None where none does)
    X = [integ.position()[:, None]] if system.any_translating else None
    P = [integ.linear_momentum()[:, None]] if system.any_translating else None
    # the drivers' work, where the kernels sum it (splitting scenes with drivers)
    W = [integ.driver_work[:, None].copy()] if getattr(runner, "power", False) else None
    times, at = [0.0], [0]
    steps = marks[-1]
    E, B = integ.L.shape[:2]
    complete = True
    # Steps per call: start with one check interval, as the numpy driver polls stop() (the first call
    # may also load the compiled code), then scale to the measured speed.
    per_call = CHECK_EVERY
    i = 1
    while i < len(marks):
        start = integ.steps_done
        target = _sync_point(marks, i, start, start + per_call)
        j = i
        while j < len(marks) and marks[j] <= target:
            j += 1
        call = list(marks[i:j])
        if not call or call[-1] < target:
            call.append(target)  # an intermediate mark: reached, not recorded (unless we stop there)
        t0 = _time.perf_counter()
        cU, cL, cw, cX, cP, status = runner.advance_to(call)
        elapsed = _time.perf_counter() - t0
        if (status[:, 0] != compiled.OK).any():
            _raise_blowup(system, integ, status, ensemble)
        n_rec = j - i
        U.append(cU[:, :n_rec])
        L.append(cL[:, :n_rec])
        w.append(cw[:, :n_rec])
        if X is not None:
            X.append(cX[:, :n_rec])
            P.append(cP[:, :n_rec])
        if W is not None:
            W.append(runner.work[:, :n_rec])
        times.extend(m * integ.dt for m in call[:n_rec])
        at.extend(call[:n_rec])
        i = j
        if progress is not None:
            progress(integ.steps_done / max(steps, 1))
        if stop is not None and stop() and integ.steps_done < steps:
            complete = False
            if times[-1] != integ.t:
                U.append(cU[:, -1:])
                L.append(cL[:, -1:])
                w.append(cw[:, -1:])
                if X is not None:
                    X.append(cX[:, -1:])
                    P.append(cP[:, -1:])
                if W is not None:
                    W.append(runner.work[:, -1:])
                times.append(integ.t)
                at.append(integ.steps_done)
            break
        done = integ.steps_done - start
        if elapsed > 0 and done > 0:
            per_call = int(min(max(1, done * CALL_SECONDS / elapsed), 4 * done + 1))
    U, L, w = (np.concatenate(x, axis=1) for x in (U, L, w))
    if X is not None:
        X, P = np.concatenate(X, axis=1), np.concatenate(P, axis=1)
    return _States(times, at, U, L, w, X, P, None if W is None else np.concatenate(W, axis=1), complete)


def _raise_blowup(system: System, integ, status: np.ndarray, ensemble: bool) -> None:
    """Raise the SimulationError of the first member whose kernel status (E,3) reports a blow-up."""
    from .backends import compiled

    bad = status[:, 0] != compiled.OK
    first = int(status[bad, 1].min())
    e = int(np.flatnonzero(bad & (status[:, 1] == first))[0])
    b = int(status[e, 2])
    what = ("non-finite angular momentum" if status[e, 0] == compiled.NONFINITE
            else f"orientation no longer orthonormal (‖UUᵀ−I‖ > {ORTHONORMALITY_LIMIT:g})")
    t_bad = first * integ.dt
    who = f"body {system.names[b]!r}" + (f" of ensemble member {e}" if ensemble else "")
    raise SimulationError(
        f"blow-up at t = {t_bad:.6g} s: {what} for {who}; {_blowup_fix(system, integ, e, b)}",
        time=t_bad, body=system.names[b], member=e if ensemble else None)


def _sync_point(marks: list, i: int, start: int, want: int) -> int:
    """Where a compiled call may end: the last record mark or check point at or before ``want``, but past
    ``start`` (marks[i] is the next record mark, start ≥ marks[i-1]).

    Check points are CHECK_EVERY steps apart from each record mark, as in the numpy driver; a
    splitting step synchronises there (closing kick), so ending calls only there keeps results
    independent of how the run is cut into calls (of the machine's speed) — bit for bit.
    """
    j = i
    while j + 1 < len(marks) and marks[j] <= want:
        j += 1
    if marks[j] <= want:
        return marks[j]
    base = marks[j - 1]
    point = base + ((want - base) // CHECK_EVERY) * CHECK_EVERY
    if point <= start:
        point = min(marks[j], base + ((start - base) // CHECK_EVERY + 1) * CHECK_EVERY)
    return point


def _records(system: System, U, L, w, t, X=None, P=None) -> dict:
    """Recorded arrays (E,R,...) from states (E,R,B,...) at times t (R,); X, P (E,R,B,3) the centres of
    rotation (m) and linear momenta (kg·m/s), None where no body translates (pivots and zero).

    A scene whose torques do not depend on time (no rotating field, no driven magnet), or only through moving
    pivots (each record's time a row's), is evaluated in one vectorised call over all members and records;
    otherwise record by record.
    """
    E, R = U.shape[:2]
    pivots_only = system.moving_pivots and system.static_sources and system.rotating_field is None
    if not system.driven or pivots_only:
        flat = system
        if system.per_member:
            c, f = system.member_friction, system.member_field
            flat = system.with_members(friction=None if c is None else np.repeat(c, R, axis=0),
                                       field=None if f is None else np.repeat(f, R, axis=0))
        def flat_(a):
            return None if a is None else a.reshape((E * R,) + a.shape[2:])

        times = np.broadcast_to(np.asarray(t, dtype=float), (E, R)).reshape(-1) if pivots_only else 0.0
        rec = _record_state(flat, flat_(U), flat_(L), flat_(w), times, flat_(X), flat_(P))
        return {k: v.reshape((E, R) + v.shape[1:]) for k, v in rec.items()}
    per = [_record_state(system, U[:, r], L[:, r], w[:, r], float(t[r]), None if X is None else X[:, r],
                         None if P is None else P[:, r]) for r in range(R)]
    return {k: np.stack([p[k] for p in per], axis=1) for k in per[0]}


def _continuous(q: np.ndarray) -> np.ndarray:
    """Quaternion signs continuous along the record axis (axis 1 of (E,R,B,4))."""
    from ..model.rotations import continuous_signs

    return continuous_signs(q, axis=1)


def angular_velocity(system: System, U: np.ndarray, L: np.ndarray) -> np.ndarray:
    """ω (E,B,3) for orientations U (E,B,3,3) (user body axes) and lab momenta L (E,B,3)."""
    return omega_lab(system, system.kin_body, U, L, system.hinge_inertia(U))
