"""A scene with ``contact_model = "surface"``: its body on its table, run by :mod:`.surface`, recorded as a
:class:`~pem_physics.engine.simulate.Trajectory` (so files, plots and the Blender bake take it like any run).

What the surface model takes (:func:`check`, each refusal naming the item and the fix): one moving body, free and
translating, with contact spheres or rims; one wall, the table: a plane (its normal turned towards the body), or a
sphere, cylinder or box, inside (a bowl, a pipe, a tray) or outside (a dome, a log, a block);
gravity; other bodies only as scenery (no contacts, no dipoles). Not yet: magnets and fields, pivot friction,
ensembles. The coefficients of the body–table pair follow the impact model's rule
(:func:`.model.pair_coefficients`: an unset side is not zero); the wall's ``friction_law`` picks Coulomb's law
(μ, dimensionless) or gliding friction (its own ``gliding_friction``, s/m, never compared with a Coulomb μ).

The trajectory: one body; ``position`` and ``center_of_mass`` its centre of mass; ``torque`` the table's torque
about it (zero apart); ``events`` an :class:`~.model.EventLog` of every contact change (kinds ``impact``,
``impact, sliding`` / ``impact, rolling``, ``stick``, ``slip``, ``reversal``, ``lift-off``; impulses for impacts),
with the pose at each (the bake keys it); ``impact_loss`` the energy friction and impacts took, so
:meth:`~..simulate.Trajectory.energy_balance` is the integration error.
"""

from __future__ import annotations

import time as _time

import numpy as np

from ...errors import ValidationError
from ...model.rotations import orientation_to_quat, orthonormality_error
from ...model.scene import ContactRim, no_step
from . import surface as sf
from . import surface_flat
from . import surface_run as sr
from . import surface_several as several
from .model import EventLog, item_coefficients, make_wall, pair_coefficients
from .walls import Plane

INFO = ("persistent contact on the table — sliding, rolling, lift-off located to round-off, impacts — by the "
        "surface model's second-order splitting (engine/surface.py); settings.method is not used")


def check(scene) -> tuple[int, int]:
    """(index of the body, index of the wall) of a checked scene for the surface model; ValidationError if the
    scene is outside it."""
    fix = "or set contact_model = \"impacts\""
    moving = [i for i, b in enumerate(scene.bodies) if b.moving]
    if len(moving) != 1:
        raise ValidationError("contact_model", f"the surface model moves one body on a table; this scene moves "
                              f"{len(moving)}: make the others fixed scenery {fix}")
    i = moving[0]
    b = scene.bodies[i]
    if not b.translating:
        raise ValidationError(f"bodies[{i}].translate", "a body on a table moves freely: give it role = \"free\" and "
                              f"translate = true {fix}")
    if not b.contacts:
        raise ValidationError(f"bodies[{i}].contacts", "the body needs a contact sphere or rim to stand on the table")
    for j, o in enumerate(scene.bodies):
        if j != i and (o.contacts or o.dipoles):
            raise ValidationError(f"bodies[{j}]", "the surface model has one body on a table: other bodies are "
                                  f"scenery only (no contacts, no dipoles) {fix}")
    if b.dipoles or np.any(np.asarray(scene.field) != 0) or scene.rotating_field is not None:
        raise ValidationError(f"bodies[{i}].dipoles" if b.dipoles else "field", "magnets and fields are not part "
                              f"of the surface model yet: remove them {fix}")
    if scene.friction:
        raise ValidationError("friction", "pivot friction (−cω) is not part of the surface model: set it to 0 (the "
                              "table's contact_friction is the friction here)")
    if len(scene.walls) != 1:
        raise ValidationError("walls", "the surface model needs exactly one wall (the table: a plane, sphere, "
                              f"cylinder or box); this scene has {len(scene.walls)}")
    return i, 0


def table_coefficients(scene, i: int, w: int) -> tuple[float, float]:
    """(e, μ) of body ``i`` on wall ``w``, the table: the pair rule (:func:`.model.pair_coefficients`) for
    Coulomb's law; on a gliding table its ``gliding_friction`` (s/m), and a body that sets a Coulomb μ of its own is
    refused (the two laws' coefficients are not comparable)."""
    b, wall = scene.bodies[i], scene.walls[w]
    pair_e = {frozenset(p.names): p.restitution for p in scene.pair_restitution}
    e, mu = pair_coefficients(scene, pair_e, item_coefficients(b), item_coefficients(wall))
    if wall.friction_law == "viscous":
        if b.contact_friction is not None:
            raise ValidationError(f"bodies[{i}].contact_friction", f"the table {wall.name!r} rubs by gliding "
                                  f"friction (μ in s/m), the body by Coulomb's law (μ dimensionless): remove the "
                                  f"body's contact_friction (the table's gliding_friction applies), or make the "
                                  f"table Coulomb's")
        mu = wall.gliding_friction
    return e, mu


def friction_warnings(scene) -> list[str]:
    """What a user of a surface scene should know about its friction: a table whose friction is 0 — Coulomb's μ, or
    the gliding law's gliding_friction μ_g (s/m) — slides forever."""
    i, w = check(scene)
    if table_coefficients(scene, i, w)[1] != 0.0:
        return []
    if scene.walls[w].friction_law == "viscous":
        return [f"{scene.bodies[i].name!r} on {scene.walls[w].name!r} has gliding_friction = 0 s/m: it slides "
                "without friction and never rolls; set the table's gliding_friction above 0 (s/m)"]
    return [f"{scene.bodies[i].name!r} on {scene.walls[w].name!r} has friction μ 0: it slides without "
            "friction and never rolls; set a contact_friction on the table (or the body, or the scene)"]


def model(scene) -> tuple[sf.Surface, sf.State, int]:
    """The :class:`~.surface.Surface` of a checked scene, its start state and the body's scene index."""
    i, w = check(scene)
    b, wall = scene.bodies[i], scene.walls[w]
    mp = b.resolved_mass_properties(f"bodies[{i}]")
    com = np.asarray(mp.center_of_mass, float)
    shapes = []
    for c in b.contacts:      # body coordinates about the centre of mass, as the trajectory keeps them
        centre = np.asarray(c.center, float) - com
        shapes.append(sf.ContactRim(centre, c.axis, c.radius) if isinstance(c, ContactRim)
                      else sf.ContactSphere(centre, c.radius))
    body = sf.TableBody(mp.mass, mp.inertia, shapes, name=b.name)
    U = np.asarray(b.orientation, float)
    x = np.asarray(b.position, float) + com @ U
    if wall.kind == "plane":
        # the normal points into the allowed side (as the scene format says): a body starting behind the table
        # would fall away from it for the whole run
        n = np.asarray(wall.normal, float)
        if (x - np.asarray(wall.point, float)) @ n < 0:
            raise ValidationError(f"bodies[{i}].position", f"the body's centre of mass starts behind the plane "
                                  f"{wall.name!r} (against its normal {np.round(n, 6).tolist()}, which points to the "
                                  f"side a body stands on): move the body to that side, or turn the normal round "
                                  f"to stand it on the other face")
        surf = Plane(wall.point, n, name=wall.name)
    else:
        # a curved one's is its inside (a bowl, a pipe, a tray) or outside (a dome, a log, a block), as ``inside`` says
        surf = make_wall(wall)
        if surf.value(x) >= 0:
            where = "outside" if wall.inside else "inside"
            raise ValidationError(f"bodies[{i}].position", f"the body's centre of mass starts {where} the "
                                  f"{wall.kind} {wall.name!r}, the side it may not enter: move it, or set the wall's "
                                  f"inside = {str(not wall.inside).lower()}")
    reach = max(c.radius for c in b.contacts)
    for key in ("rolling_resistance", "spin_resistance"):
        d = getattr(wall, key) or 0.0
        if d > reach:        # the normal force's line of action shifted off the body: not a resistance any more
            raise ValidationError(f"walls[{w}].{key}", f"{d:g} m is longer than the body's contact radius "
                                  f"({reach:g} m): it is the lever arm of the normal force's shift, a small "
                                  f"fraction of the radius (δ/r ~ 0.001–0.01 for a ball on cloth); lower it")
    e, mu = table_coefficients(scene, i, w)
    table = sf.Table(mu=mu, restitution=e, name=wall.name, friction=wall.friction_law or "coulomb", wall=surf,
                     rolling_resistance=wall.rolling_resistance or 0.0, spin_resistance=wall.spin_resistance or 0.0)
    surface = sf.Surface(body, table, scene.gravity)
    try:
        state = sr.start_state(surface, x, b.velocity, b.angular_velocity, U, tolerance=scene.placement_tolerance)
    except ValidationError as err:   # name the scene's items
        path = err.path.replace(f"{b.name}.", f"bodies[{i}].", 1)
        raise ValidationError(path, err.message) from None
    return surface, state, i


def simulate(scene, progress=None, stop=None) -> dict:
    """Run a checked scene with ``contact_model = "surface"``: the fields of its
    :class:`~..simulate.Trajectory` (which :func:`~..simulate.simulate` makes of them)."""
    s = scene.settings
    surface, state, i = model(scene)
    if s.steps == 0 and s.t_end > 0:
        raise ValidationError("settings.t_end", no_step(s.t_end, s.dt))
    wall0 = _time.perf_counter()
    run = sr.run(surface, state, state.t + s.steps * s.dt, s.dt, every=s.record_every, progress=progress, stop=stop)
    wall = _time.perf_counter() - wall0 - run.load_s       # the integration's time, as simulate's
    body, table = surface.body, surface.table
    U = np.einsum("ji,tjk->tik", body.axes, run.Q)          # body axes (rows) from the principal ones
    W = np.einsum("tji,j,tjk->tik", run.Q, body.inv, run.Q)
    w = np.einsum("tij,tj->ti", W, run.L)
    M = body.mass
    torque = np.zeros_like(run.L)
    modes = [str(m) for m in run.mode]
    for r, mode in enumerate(run.mode):
        extra = run.extra[r] if run.extra is not None else ()
        if extra:
            st = sf.State(run.t[r], run.x[r], run.v[r], run.L[r], run.Q[r], str(mode), int(run.shape[r]),
                          extra=extra)
            acts = several.active(st)
            F = several.forces(surface, st, acts)
            torque[r] = sum(np.cross(surface.contact(st, k).rho, Fi) for (k, _, _), Fi in zip(acts, F))
            modes[r] = ", ".join(m for _, m, _ in acts)
        elif mode in (sf.FLAT, sf.FLAT_REST):
            st = sf.State(run.t[r], run.x[r], run.v[r], run.L[r], run.Q[r], str(mode), int(run.shape[r]))
            torque[r] = surface_flat.torque(surface, st)
        elif mode != sf.APART:
            st = sf.State(run.t[r], run.x[r], run.v[r], run.L[r], run.Q[r], str(mode), int(run.shape[r]))
            torque[r] = np.cross(surface.contact(st)[1], surface.force(st))
    log = EventLog()
    for ev in run.events:
        log.t.append(ev.t)
        log.body1.append(body.name)
        log.body2.append(table.name)
        log.kind.append(ev.kind)
        log.impulse.append(np.array(ev.impulse, float))
        log.point.append(np.array(ev.point, float))
        log.normal.append(surface.normal_of(ev.shape, ev.x, ev.Q).copy())
        log.orientation.append((body.axes.T @ ev.Q)[None])
        log.position.append(np.array(ev.x, float)[None])
    loss = 0.0 - (run.friction_work + run.impact_work)    # (0 − x: no "−0.0" in a summary)
    log.energy_loss = float(loss[-1])
    R = len(run.t)
    one = lambda a: a[:, None]  # noqa: E731  (R, ...) → (R, 1, ...): one body
    return dict(
        names=[body.name], t=run.t, quaternion=orientation_to_quat(U)[:, None], orientation=one(U),
        omega=one(w), omega_body=one(np.einsum("tij,tj->ti", U, w)), angular_momentum=one(run.L),
        angular_momentum_body=one(np.einsum("tij,tj->ti", U, run.L)), torque=one(torque),
        kinetic_energy=one(0.5 * M * np.einsum("ti,ti->t", run.v, run.v) + 0.5 * np.einsum("ti,ti->t", run.L, w)),
        gravity_energy=one(-M * run.x @ surface.g), field_energy=np.zeros((R, 1)), dipole_energy=np.zeros(R),
        orthonormality=one(orthonormality_error(U)), pivot=state.x[None].copy(), center_of_mass=one(run.x),
        dipole_position=np.zeros((R, 0, 3)), dipole_moment=np.zeros((R, 0, 3)),
        dipole_owner=np.zeros(0, dtype=np.intp), position=one(run.x), linear_momentum=one(M * run.v),
        velocity=one(run.v), translating=np.array([True]), method="surface", dt=s.dt,
        steps=int(round((run.t[-1] - run.t[0]) / s.dt)), wall_time=wall, complete=run.complete,
        info={"engine": run.engine, "kernels": run.kernels, "compile_or_load_s": run.load_s, "contacts": INFO,
              "contact_modes": modes, "warnings": friction_warnings(scene)},
        friction_work=np.zeros(R), events=log, impact_loss=loss)
