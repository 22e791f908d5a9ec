"""Plausibility checks before and after a run: results that mean nothing must not pass as results.

Before (:func:`preflight`, called by :func:`~.simulate.simulate`):

- **errors** (:class:`~pem_physics.errors.ValidationError`, naming the items): dipoles of two
  bodies at one point (closer than :data:`COINCIDENT` m: the force between them is infinite; in a periodic box
  their minimum-image separation, so a dipole a box length from another's sits on its image), a body whose own
  dipoles can span more than half the periodic box along an axis (:func:`_check_spans`: the image is taken per
  dipole pair, so its ends would see different images of one dipole), and a
  moving body with no moment of inertia about its pivot (mass at the pivot or a zero tensor: any
  torque would turn it infinitely fast), a body whose start spin or torques turn it so fast that
  resolving t_end would take more than :data:`MAX_RESOLVED_STEPS` steps (an input beyond a physical range,
  such as a dipole moment of 1e100, which no dt fixes), and a start velocity or a start spin that moves a body's
  mass at the speed of light or faster (:func:`light_spin`; a spin slower than that but above
  :data:`MAX_SPIN_SPEED` is warned of);
- **warnings** (strings, kept in ``Trajectory.info["warnings"]``): a start spin about a body's axis of (near) zero
  moment of inertia (dropped: it carries no angular momentum), a periodic box smaller than the scene (dipoles
  of two bodies a box length or more apart along an axis: minimum-image separations then take images of the
  scene itself, not its distances), contact settings that nothing uses (:func:`contact_warnings`: walls with no
  contact spheres in the scene, a body's restitution without contact spheres), a hinged body's start spin across its
  hinge axis (the hinge drops it, as PEM does), and a step too large for the fastest
  motion. The fastest angular frequency is estimated at the start from the spin |ω₀| and from the
  torques' stiffness: each moving body is turned by ±ε about the three lab axes, the torque's change
  gives K (N·m/rad, ∂T/∂θ), and small oscillations θ̈ = I⁺K θ (I⁺ the pseudo-inverse of the inertia
  about the pivot, lab axes) have ω² = the largest |eigenvalue| of I⁺K. A moment about an axis along
  which the torques have no lever (a rod's own axis, whose turning changes no torque: K's column there
  is zero) then drops out, however small it is; ‖K‖/λ_min divided the swing's stiffness by it (the
  three-magnet pendulum: 222 rad/s estimated against 6.1 for its swing, while at 16 substeps of 24 fps
  its error over 1 s is 5e-12). A hinged body: ω² = a·K·a / (a·I·a) about its axis a. A translating
  body is also moved by ±δ along the lab axes, and the force's change gives ω ≈ √(‖∂F/∂x‖ / M).
  dt·ω above :data:`MAX_STEP_PHASE` warns (the splitting and RK4 lose accuracy quickly beyond; a
  pendulum that later swings close to a magnet is caught by the energy check instead).

After (:func:`postflight`): a dipole pair whose minimum image switched in a periodic box
(:func:`image_switch_warning`: its energy jumps there), and the energy balance. Pivot friction takes energy at the rate
c·Σ|ω|²; its work W(t) is integrated over the records (``Trajectory.friction_work``, cumulative
trapezoid, error O(Δt²) of the record spacing), so E(t) + W(t) − E(0) is the integration error
(``Trajectory.energy_balance``). Above :data:`MAX_BALANCE_ERROR` it warns with the number. Driven
magnets and a rotating field do work on the bodies that is not tracked: their scenes are not checked
(and the warning list says so).
"""

from __future__ import annotations

import numpy as np

from ..errors import ValidationError
from ..model.analytic import UniformRotation
from ..model.motion import TabulatedMotion
from ..model.rotations import axis_angle_matrix
from ..model.scene import EllipticOrbit
from .system import ZERO_MOMENT, System
from .torques import dipole_pair_terms, evaluate

#: Dipoles of different bodies closer than this (m) are at one point.
COINCIDENT = 1e-9
#: A hinged body's start spin across its axis beyond this share of |ω| (plus HINGE_SPIN_ATOL rad/s) is a spin the
#: hinge drops, said; below it, the round-off of a rotated axis and spin stored in single precision (8 float32 ε)
HINGE_SPIN_RTOL = 8 * 2.0**-23
HINGE_SPIN_ATOL = 1e-12
#: m/s: no start velocity of a translating body, nor the speed a start spin gives its mass, reaches it (this is
#: classical mechanics)
SPEED_OF_LIGHT = 299_792_458.0
#: m/s: a start spin that moves a body's mass faster than this (rms, :func:`spin_speed`) is beyond what any body
#: survives — the strongest rotors made (carbon-fibre flywheels, ultracentrifuges) burst near 1–2 km/s at the rim —
#: and is blamed as an input, not on the step (a top's 1e12 rad/s was told "try dt ≤ 5e-13 s")
MAX_SPIN_SPEED = 2e3
#: Largest dt·ω (rad per step) that passes without a warning.
MAX_STEP_PHASE = 0.5
#: Largest |E + W − E₀| / scale that passes without a warning.
MAX_BALANCE_ERROR = 1e-2


def _labels(scene) -> tuple[list, list]:
    """(moving dipole labels, source dipole labels) as ``bodies[i].dipoles[j]``, in the system's order."""
    moving, sources = [], []
    for i, body in enumerate(scene.bodies):
        target = moving if body.moving else sources
        target += [f"bodies[{i}].dipoles[{j}]" for j in range(len(body.dipoles))]
    return moving, sources


def preflight(scene, system: System) -> list:
    """Raise on a scene whose run would mean nothing; return warnings (str) about the step size.

    scene: the checked Scene ``system`` was compiled from (for the names of bodies and dipoles).
    """
    moving_idx = [i for i, b in enumerate(scene.bodies) if b.moving]
    for b in range(system.n_bodies):
        if not np.any(system.inv_moments[b] > 0):
            raise ValidationError(f"bodies[{moving_idx[b]}].mass_properties",
                                  f"{system.names[b]!r} has no moment of inertia about its pivot (its mass sits at "
                                  "the pivot, or the inertia tensor is zero): it cannot be turned")
    for i, body in enumerate(scene.bodies):   # a classical engine: a speed past light's is an absurd input
        speed = float(np.linalg.norm(body.velocity)) if body.moving and body.translate else 0.0
        if speed >= SPEED_OF_LIGHT:
            raise ValidationError(f"bodies[{i}].velocity", f"{body.name!r} starts at {speed:.3g} m/s, faster than "
                                  f"light ({SPEED_OF_LIGHT:.9g} m/s): beyond a physical range; give a physical "
                                  "velocity (SI units: m/s)")
    _check_spans(scene, system.box)
    box_warnings = _coincident(scene, system) + contact_warnings(scene)
    if system.n_bodies == 0:
        return box_warnings + _hinge_warnings(scene)
    spin, stiff = _frequencies(system)
    _check_physical(scene, spin, stiff, scene.settings.t_end)
    _check_light_spins(scene, system)
    _check_damping(scene, system, scene.settings.t_end)
    damping = [] if scene.settings.method != "splitting4" else [
        hint for hint in (damping_hint(system, scene.settings.dt, b) for b in range(system.n_bodies)) if hint]
    wild = [spin_warning(scene, system, b, system.omega0[b]) for b in range(system.n_bodies)]
    # an implausible spin is said as itself: no step would make its run mean something, so dt is not blamed for it
    stepped = np.where([msg is not None for msg in wild], 0.0, spin)
    return (box_warnings + _hinge_warnings(scene) + _zero_moment_warnings(scene, system)
            + [msg for msg in wild if msg] + _step_warnings(stepped, stiff, scene.settings.dt) + damping[:1])


def spin_speeds(system: System, b: int, omega, orientation=None) -> tuple[np.ndarray, np.ndarray]:
    """(v, r) of :func:`spin_speed` for angular velocities ``omega`` (N, 3) rad/s, lab, each at its own start
    ``orientation`` (N, 3, 3): rows the body axes in the lab, as ``System.U0`` (None: body b's start)."""
    w = np.asarray(omega, float).reshape(-1, 3)
    U = system.U0[b] if orientation is None else np.asarray(orientation, float)
    axes = np.swapaxes(U, -1, -2) @ system.axes[b]          # principal axes in the lab (columns)
    m = float(system.mass[b])
    with np.errstate(all="ignore"):
        top = np.max(np.abs(w), axis=-1)
        u = w / np.where(top > 0, top, 1.0)[:, None]        # scaled first: ω·Iω of a 1e200 rad/s spin is no overflow
        spin = top * np.linalg.norm(u, axis=-1)
        u = u / np.where(spin > 0, np.linalg.norm(u, axis=-1), 1.0)[:, None]
        along = np.einsum("...ji,...j->...i", axes, u)      # the spin's direction on the principal axes
        r = np.sqrt(np.sum(system.moments[b] * along**2, axis=-1) / m) if m > 0 else np.zeros(len(w))
    ok = (spin > 0) & (r > 0)
    return np.where(ok, spin * r, 0.0), np.where(ok, r, 0.0)


def spin_speed(system: System, b: int, omega, orientation=None) -> tuple[float, float]:
    """(v, r): the rms speed v (m/s) at which the angular velocity ``omega`` (3,) rad/s, lab, moves moving body b's
    mass about its pivot (its centre of mass if free), √(ω·Iω / m), and the radius r = v/|ω| (m) that speed is at;
    (0, 0) for a massless body or no spin. I is taken in lab axes at ``orientation`` (3, 3; rows the body axes in
    the lab; None: the body's start), so v depends on it."""
    v, r = spin_speeds(system, b, np.reshape(omega, (1, 3)),
                       None if orientation is None else np.reshape(orientation, (1, 3, 3)))
    return float(v[0]), float(r[0])


def light_spin(scene, system: System, b: int, omega, orientation=None) -> str | None:
    """The refusal of moving body b's start angular velocity ``omega`` (3,) rad/s, lab, at ``orientation`` (as
    :func:`spin_speed`), where its speed measure reaches :data:`SPEED_OF_LIGHT`: it names the body, the spin and
    the fix; None below."""
    v, r = spin_speed(system, b, omega, orientation)
    if v < SPEED_OF_LIGHT:
        return None
    name = scene.bodies[int(system.scene_index[b])].name
    return (f"{name!r} starts spinning at {float(np.linalg.norm(omega)):.3g} rad/s, which moves its mass at ≈ "
            f"{v:.2g} m/s (rms, {r:.2g} m from the axis), faster than light ({SPEED_OF_LIGHT:.9g} m/s): beyond a "
            f"physical range; give a physical angular velocity (rad/s: the strongest rotors burst near "
            f"{MAX_SPIN_SPEED:g} m/s, ≲ {MAX_SPIN_SPEED / r:.2g} rad/s for this one)")


def _check_light_spins(scene, system: System) -> None:
    """Refuse a moving body whose start spin moves its mass at the speed of light or faster (:func:`light_spin`)."""
    for b in range(system.n_bodies):   # a classical engine: the spin is the input to blame
        said = light_spin(scene, system, b, system.omega0[b])
        if said:
            raise ValidationError(f"bodies[{int(system.scene_index[b])}].angular_velocity", said)


def spin_warning(scene, system: System, b: int, omega, orientation=None) -> str | None:
    """The warning for moving body b's start angular velocity ``omega`` (3,) rad/s, lab, at ``orientation`` (as
    :func:`spin_speed`), where it moves the body's mass faster than :data:`MAX_SPIN_SPEED`: it names the body, the
    spin and what is plausible for the body's size; None for a plausible spin."""
    v, r = spin_speed(system, b, omega, orientation)
    if not v > MAX_SPIN_SPEED:
        return None
    i = int(system.scene_index[b])
    return (f"bodies[{i}] ({scene.bodies[i].name!r}): its start spin of {float(np.linalg.norm(omega)):.3g} rad/s "
            f"moves its mass at ≈ {v:.2g} m/s (rms, {r:.2g} m from the axis), which no body survives (the strongest "
            f"rotors burst near {MAX_SPIN_SPEED:g} m/s: ≲ {MAX_SPIN_SPEED / r:.2g} rad/s for this one); the spin is "
            "the cause, not the step: give a physical angular velocity (rad/s)")


def _hinge_warnings(scene) -> list:
    """A warning per hinged body whose start angular velocity (lab) has a part across its hinge axis beyond
    :data:`HINGE_SPIN_RTOL` of |ω|: the hinge keeps only ω·a (as PEM does), so that part is dropped unseen. Below it
    is the round-off of an axis and a spin stored in single precision (a Blender scene's), not a spin."""
    out = []
    for i, body in enumerate(scene.bodies):
        if not body.moving or body.hinge is None:
            continue
        a = np.asarray(body.hinge, float)
        w = np.asarray(body.angular_velocity, float)
        across = float(np.linalg.norm(w - (w @ a) * a))
        if across > HINGE_SPIN_RTOL * float(np.linalg.norm(w)) + HINGE_SPIN_ATOL:
            out.append(f"bodies[{i}] ({body.name!r}): its start angular velocity has {across:.3g} rad/s across its "
                       f"hinge axis, which the hinge drops (it turns at {float(w @ a):.6g} rad/s about the axis): "
                       "give an angular velocity along the hinge")
    return out


def _dipole_positions(system: System) -> tuple[np.ndarray, np.ndarray]:
    """Every dipole's lab position at t = 0 (N, 3), moving ones first, and its owner (N,): moving bodies 0…B−1,
    then the sources' bodies after them."""
    U0 = system.U0
    r = system.pivot[system.owner] + np.einsum("dij,di->dj", U0[system.owner], system.kin_body.dpos)
    rs, _ = system.sources(0.0)
    pos = np.concatenate([r.reshape(-1, 3), np.asarray(rs, float).reshape(-1, 3)])
    owner = np.concatenate([system.owner, system.n_bodies + np.asarray(system.src_owner, int)])
    return pos, owner


def _zero_moment_warnings(scene, system: System) -> list:
    """A warning per body (not hinged: the hinge's own warning says what it drops) whose start angular velocity
    turns it about a principal axis of (near) zero moment of inertia — below ZERO_MOMENT of its largest, which the
    engine's pseudo-inverse takes as none: a spin there has no angular momentum and is dropped (inertia
    [1, 1, 1e-12] and ω [0, 0.1, 1] started at [0, 0.1, 0]). Below HINGE_SPIN_RTOL of |ω| it is round-off."""
    out = []
    for b in range(system.n_bodies):
        dead = system.inv_moments[b] == 0
        if system.hinged[b] or not dead.any():
            continue
        w = system.omega0[b]
        axes = (system.U0[b].T @ system.axes[b])[:, dead]   # the dead principal axes in the lab (columns)
        part = axes @ (axes.T @ w)
        dropped = float(np.linalg.norm(part))
        if dropped > HINGE_SPIN_RTOL * float(np.linalg.norm(w)) + HINGE_SPIN_ATOL:
            i = int(system.scene_index[b])
            k = int(np.argmax(np.abs(axes.T @ w)))
            axis, moment = axes[:, k], float(system.moments[b][dead][k])
            kept = ", ".join(f"{x:.6g}" for x in w - part)
            out.append(f"bodies[{i}] ({scene.bodies[i].name!r}): its start angular velocity has {dropped:.3g} rad/s "
                       f"about an axis (lab [{', '.join(f'{x:.3g}' for x in axis)}]) whose moment of inertia, "
                       f"{moment:.3g} kg·m², is below {ZERO_MOMENT:g} of its largest: the engine takes it as none and "
                       f"drops that spin, which carries no angular momentum (it starts at [{kept}] rad/s); give the "
                       "body a moment of inertia about that axis, or no spin about it")
    return out


def contact_warnings(scene) -> list:
    """A warning per contact setting that nothing uses, naming it: walls in a scene where no body has contact
    spheres (a body passes through them), a body's ``restitution`` or ``contact_friction`` without contact
    spheres of its own, a ``pair_restitution`` whose items never touch, and ``placement_tolerance`` under
    ``contact_model = "impacts"`` (it places a body on a table, ``"surface"``)."""
    out = []
    if not scene.has_contacts:
        out += [f"walls[{i}] ({w.name!r}) touches nothing: no body has contact spheres ([[bodies.contacts]]), so "
                "every body passes through it; give the bodies that should meet it contact spheres"
                for i, w in enumerate(scene.walls)]
    for i, body in enumerate(scene.bodies):
        if body.contacts:
            continue
        out += [f"bodies[{i}].{key} ({body.name!r}) is not used: the body has no contact spheres "
                "([[bodies.contacts]]), so it touches nothing" for key in ("restitution", "contact_friction")
                if getattr(body, key) is not None]
    touching = {b.name for b in scene.bodies if b.contacts}
    walls = {w.name for w in scene.walls}
    for i, pair in enumerate(scene.pair_restitution):
        idle = [n for n in pair.names if n not in touching | walls]
        if idle or set(pair.names) <= walls:
            why = f"{idle[0]!r} has no contact spheres" if idle else "two walls never touch"
            out.append(f"pair_restitution[{i}] ({pair.names[0]!r}, {pair.names[1]!r}) is not used: {why}")
    if scene.contact_model == "impacts" and scene.placement_tolerance > 0:
        out.append(f"placement_tolerance ({scene.placement_tolerance:.6g} m) is not used: it places a body on a table "
                   "(contact_model = \"surface\"); this scene's contacts are impacts, which start where they are")
    return out


def _coincident(scene, system: System) -> list:
    """Raise on dipoles of two bodies at one point — in a periodic box at one point of the minimum image (a dipole
    a whole box length from another sits on its periodic image); return the warning of a periodic box smaller than
    the scene (:func:`_box_warning`)."""
    pos, owner = _dipole_positions(system)
    if len(pos) < 2:
        return []
    box = system.box
    widest = np.zeros(3)   # the largest separation along each lab axis of dipoles of different bodies
    widest_pair = [(0, 0)] * 3
    for start in range(0, len(pos), 512):  # rows in blocks: bounded memory for many dipoles
        raw = pos[start:start + 512, None] - pos[None]
        rows = np.arange(start, start + len(raw))
        other = (owner[rows, None] != owner[None]) & (rows[:, None] < np.arange(len(pos)))
        sep = raw if box is None else raw - box * np.rint(raw / box)   # the minimum image, as the engine takes it
        d = np.linalg.norm(sep, axis=-1)
        bad = other & (d < COINCIDENT)
        if bad.any():
            i, b = (int(x) for x in np.argwhere(bad)[0])
            a = start + i
            moving, sources = _labels(scene)
            names = moving + sources
            where = "" if box is None else (
                f" in the minimum image of periodic_box {_lengths(box)}: they are {_lengths(raw[i, b])} apart, a "
                "periodic image of one sits on the other")
            raise ValidationError(f"{names[a]} and {names[b]}",
                                  f"two bodies' dipoles at one point ({d[i, b]:.3g} m apart{where}): the force "
                                  "between them is infinite; move one of them" + ("" if box is None else
                                                                                  " or change periodic_box"))
        if box is not None and other.any():
            span = np.where(other[..., None], np.abs(raw), -1.0)
            for k in range(3):
                flat = int(np.argmax(span[..., k]))
                if span[..., k].flat[flat] > widest[k]:
                    i, b = np.unravel_index(flat, span.shape[:2])
                    widest[k], widest_pair[k] = span[..., k].flat[flat], (start + int(i), int(b))
    return [] if box is None else _box_warning(scene, box, widest, widest_pair)


#: Lab axes' names in messages.
AXES = "xyz"


def _turn_axis(body):
    """How a checked body can turn during a run: None (it keeps its orientation), a lab unit axis (3,) it turns
    about only (a hinge, an orbit's spin), or "any" (a free turn, a tabulated orientation)."""
    from .system import orbit_terms

    if body.moving:
        return "any" if body.hinge is None else np.asarray(body.hinge, float)
    motion = body.motion
    if isinstance(motion, (EllipticOrbit, UniformRotation)):
        return np.asarray(orbit_terms(motion)[5], float)
    if isinstance(motion, TabulatedMotion) and motion.orientations is not None:
        return "any"
    return None


def dipole_reach(body) -> np.ndarray:
    """The largest extent (3,) m along each lab axis that a checked body's dipoles reach in any orientation it can
    take: the largest |δ_k| over pairs of its dipoles, δ their separation. Turned freely a pair reaches its length
    |δ| along every axis; turned about a unit axis a only, |δ·a| |a_k| + |δ − (δ·a) a| √(1 − a_k²); not turned,
    its start |δ_k|."""
    U = np.asarray(body.orientation, float)
    r = np.array([np.asarray(d.position, float) for d in body.dipoles]).reshape(-1, 3) @ U  # lab offsets
    reach = np.zeros(3)
    if len(r) < 2:
        return reach
    turn = _turn_axis(body)
    for start in range(0, len(r), 512):   # rows in blocks: bounded memory for bodies of many dipoles
        delta = r[start:start + 512, None] - r[None]
        if turn is None:
            reach = np.maximum(reach, np.abs(delta).max(axis=(0, 1)))
        elif isinstance(turn, str):
            reach = np.maximum(reach, np.linalg.norm(delta, axis=-1).max())
        else:
            along = delta @ turn
            across = np.linalg.norm(delta - along[..., None] * turn, axis=-1)
            spread = np.abs(along)[..., None] * np.abs(turn) + across[..., None] * np.sqrt(
                np.clip(1.0 - turn**2, 0.0, 1.0))
            reach = np.maximum(reach, spread.max(axis=(0, 1)))
    return reach


def _check_spans(scene, box) -> None:
    """Refuse a body whose dipoles can span more than half the periodic box along an axis (:func:`dipole_reach`)
    while they meet another body's dipoles. Minimum-image separations are taken dipole pair by dipole pair: within
    half a box each of the body's dipoles sees the same image of another dipole wherever that one is near, beyond
    it the body's dipoles see different images of one dipole — a body torn between images, forces and torques
    that are no periodic scene's."""
    if box is None or not scene.mu0 > 0:
        return
    box = np.asarray(box, float)
    carriers = [i for i, b in enumerate(scene.bodies) if b.dipoles]
    moving = [i for i in carriers if scene.bodies[i].moving]
    for i in carriers:
        body = scene.bodies[i]
        # a moving body's dipoles meet every other body's, a fixed or driven one's only the moving bodies'
        met = [j for j in (carriers if body.moving else moving) if j != i]
        if len(body.dipoles) < 2 or not met:
            continue
        reach = dipole_reach(body)
        k = int(np.argmax(reach / box))
        if reach[k] > box[k] / 2:
            turned = "" if _turn_axis(body) is None else " as it turns"
            raise ValidationError(f"bodies[{i}].dipoles", f"body {body.name!r}: its dipoles span {reach[k]:.3g} m "
                                  f"along {AXES[k]}{turned}, more than half the periodic box's {box[k]:.3g} m along "
                                  f"{AXES[k]}, so minimum-image separations would take different images of one "
                                  f"dipole across the body: enlarge periodic_box to more than {2 * reach[k]:.3g} m "
                                  f"along {AXES[k]}, or bring the body's dipoles within {box[k] / 2:.3g} m of each "
                                  "other")


def _lengths(v) -> str:
    return "[" + ", ".join(f"{float(x):.3g}" for x in v) + "] m"


def _box_warning(scene, box: np.ndarray, widest: np.ndarray, pairs: list) -> list:
    """The warning of a periodic box smaller than the scene: two dipoles of different bodies a box length or more
    apart along an axis. The minimum-image convention takes each pair's nearest periodic image — one separation
    per pair, well-defined for pairs within half a box of each other — so a lattice's unit cell (its sites within
    one box) is what a periodic scene is; a scene wider than its box interacts with images of itself at
    separations that are not the scene's."""
    ratio = widest / box
    k = int(np.argmax(ratio))
    if ratio[k] < 1.0:
        return []
    a, b = pairs[k]
    moving, sources = _labels(scene)
    names = moving + sources
    return [f"periodic_box: the scene does not fit in the box: {names[a]} and {names[b]} are {widest[k]:.3g} m apart "
            f"along {AXES[k]}, the box {box[k]:.3g} m there. Minimum-image separations take each pair's nearest "
            f"periodic image (a pair's separation is well-defined within half a box, {box[k] / 2:.3g} m), so these "
            f"two interact through an image, not at their distance in the scene; for the scene as it is, give a box "
            f"of at least twice its largest dipole separation ({2 * widest[k]:.3g} m along {AXES[k]}), or place the "
            "dipoles as one periodic cell (within one box length of each other)"]


def fastest_frequency(system: System, eps: float = 1e-4) -> float:
    """Estimated largest angular frequency (rad/s) at the start: spin and torque stiffness (module docstring)."""
    spin, stiff = body_frequencies(system, eps)
    return float(max(spin.max(initial=0.0), stiff.max(initial=0.0)))


def body_frequencies(system: System, eps: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """Each moving body's spin |ω₀| (B,) and the angular frequency (B,) rad/s its torques' (forces') stiffness
    gives at the start (module docstring); inf where a torque or force is not finite.

    A body's stiffness is its own torque's (force's) change as it alone turns (moves). Where no two moving bodies
    carry dipoles, nothing couples them: a body's torque is the same sum whatever the others' poses, so every body
    turns at once in 6 probes of the scene, not 6 per body — 6·B probes of B bodies would grow as B² (a box of
    1000 marbles: 6000 copies of the scene, ~0.4 GB)."""
    B = system.n_bodies
    spin = np.linalg.norm(system.omega0, axis=-1).reshape(B)
    w = np.zeros(B)
    coupled = system.bodies_coupled
    probes = 6 * B if coupled else 6

    def probe(b: int, k: int, s: int) -> int:
        """The probe that turns (moves) body b by +ε (s = 0) or −ε (s = 1) about (along) lab axis k."""
        return (6 * b if coupled else 0) + 2 * k + s

    turns = [[axis_angle_matrix(np.eye(3)[k], sign * eps) for sign in (1.0, -1.0)] for k in range(3)]
    U = np.repeat(system.U0[None], probes, axis=0)  # (probes, B, 3, 3)
    for b in range(B):
        for k in range(3):
            for s in range(2):
                e = probe(b, k, s)
                U[e, b] = U[e, b] @ turns[k][s].T  # rows (body axes in lab) turned by R
    with np.errstate(all="ignore"):   # absurd inputs overflow here: they are named by the caller, not numpy
        T = evaluate(system, system.kin_body, U, 0.0).torque  # (probes, B, 3)
    if system.any_translating:
        # translating bodies also oscillate in position: ω ≈ √(‖∂F/∂x‖ / M), x moved by ±eps·(1 cm) per lab axis
        h = 1e-2 * eps
        X = np.repeat(system.pivot[None], probes, axis=0)
        for b in range(B):
            for k in range(3):
                X[probe(b, k, 0), b, k] += h
                X[probe(b, k, 1), b, k] -= h
        with np.errstate(all="ignore"):
            F = evaluate(system, system.kin_body, np.repeat(system.U0[None], probes, axis=0), 0.0, X=X).force
            for b in np.flatnonzero(system.translating):
                K = np.stack([(F[probe(b, k, 0), b] - F[probe(b, k, 1), b]) / (2 * h) for k in range(3)], axis=1)
                w[b] = np.sqrt(np.linalg.norm(K, 2) / system.mass[b]) if np.isfinite(K).all() else np.inf
    for b in range(B):
        with np.errstate(all="ignore"):
            K = np.stack([(T[probe(b, k, 0), b] - T[probe(b, k, 1), b]) / (2 * eps) for k in range(3)], axis=1)
        if not np.isfinite(K).all():
            w[b] = np.inf
        elif system.hinged[b]:
            a = system.hinge_axis[b]
            inert = float(system.hinge_inertia(system.U0[None])[0, b])
            if inert > 0:
                w[b] = max(w[b], float(np.sqrt(abs(float(a @ K @ a)) / inert)))
        elif K.any():  # no torque changes (a free marble): no oscillation to add
            U0 = system.U0[b]
            inv_lab = U0.T @ system.kin_body.inv_inertia[b] @ U0  # I⁺ in lab axes: ω = Uᵀ I⁺ U L
            with np.errstate(all="ignore"):
                M = inv_lab @ K
            w[b] = max(w[b], float(np.sqrt(np.abs(np.linalg.eigvals(M)).max()))) if np.isfinite(M).all() else np.inf
    return spin, w


#: Above this many dipole pairs × probes the stiffness is not probed (the spin alone is used): the probe
#: would cost more than a short run.
MAX_PROBE_PAIRS = 1 << 20


#: Above this many steps of dt·ω = MAX_STEP_PHASE a run's end, t_end, no longer tells its steps apart in doubles
#: (t_end/dt > 10¹⁵ ≈ 2⁵⁰): the motion is beyond a physical range, and no dt fixes it
MAX_RESOLVED_STEPS = 1e15


def _frequencies(system: System) -> tuple[np.ndarray, np.ndarray]:
    """:func:`body_frequencies`, or the spins alone (stiffness 0) where probing would cost more than
    MAX_PROBE_PAIRS."""
    D, S = system.n_dipoles, len(system.src_pos)
    if 6 * system.n_bodies * D * (D + S) > MAX_PROBE_PAIRS:
        return np.linalg.norm(system.omega0, axis=-1).reshape(-1), np.zeros(system.n_bodies)
    return body_frequencies(system)


def _step_warnings(spin: np.ndarray, stiff: np.ndarray, dt: float) -> list:
    """The warning of a step dt (s) too large for the fastest of the bodies' spins and stiffness frequencies (rad/s)."""
    w = float(max(spin.max(), stiff.max()))
    if dt * w > MAX_STEP_PHASE:
        return [f"dt = {dt:.3g} s is large for the fastest motion at the start (≈ {w:.3g} rad/s from the spin and "
                f"the torques, dt·ω = {dt * w:.2g} rad per step): expect large errors; try dt ≤ "
                f"{MAX_STEP_PHASE / w:.2g} s"]
    return []


def _check_physical(scene, spin: np.ndarray, stiff: np.ndarray, t_end: float) -> None:
    """Refuse a body whose start spin or torques turn it so fast that resolving t_end would take more than
    MAX_RESOLVED_STEPS steps: an absurd input (an angular velocity or a dipole moment of 1e100), not a step
    too large; the error names the body and the input, where the run would otherwise blow up blaming dt."""
    moving = [i for i, b in enumerate(scene.bodies) if b.moving]
    span = max(float(t_end), 0.0)
    for b in range(len(spin)):
        w = max(float(spin[b]), float(stiff[b]))
        if not w * span > MAX_RESOLVED_STEPS * MAX_STEP_PHASE:
            continue
        i = moving[b]
        name = scene.bodies[i].name
        steps = "no finite number of" if not np.isfinite(w) else f"{span * w / MAX_STEP_PHASE:.2g}"
        if spin[b] >= stiff[b]:
            raise ValidationError(f"bodies[{i}].angular_velocity",
                                  f"{name!r} starts spinning at {spin[b]:.3g} rad/s: resolving t_end = {span:g} s "
                                  f"would take {steps} steps, beyond what doubles tell apart; the input is beyond a "
                                  "physical range, not the step: give a physical angular velocity")
        raise ValidationError(f"bodies[{i}]", f"the torques (or forces) on {name!r} at the start turn it at "
                              f"{'an infinite rate' if not np.isfinite(w) else f'≈ {w:.3g} rad/s'}: resolving "
                              f"t_end = {span:g} s would take {steps} steps, beyond what doubles tell apart; the "
                              "input is beyond a physical range, not the step: check the dipole moments, field and "
                              "masses")


def damping_rate(system: System, b: int, friction: float | None = None) -> float:
    """The pivot friction's damping rate c/I (1/s) of moving body b: I its least moment about its pivot (or its
    hinge's); ``friction`` c (N·m·s, default the system's)."""
    c = system.friction if friction is None else friction
    if system.hinged[b]:
        inert = float(system.hinge_inertia(system.U0[None])[0, b])
        inv = 1.0 / inert if inert > 0 else 0.0
    else:
        inv = float(np.max(system.inv_moments[b]))
    return c * inv


def _backward_kick() -> float:
    """The largest backward kick of splitting4's schemes, as a fraction of dt (Suzuki's 0.12, SRKN₆ᵇ's 0.039)."""
    from .integrators import SCHEMES

    return max(-min(SCHEMES[name][1]) for name in ("suzuki", "srkn6b"))


def damping_hint(system: System, dt: float, b: int, friction: float | None = None) -> str | None:
    """What to do when splitting4's backward sub-step (a negative kick, a fraction k of dt) grows what the pivot
    friction takes from body b by more than e: exp(k·dt·c/I) — the exact decay run backwards, which errs and, past
    the doubles, blows up (10 N·m·s on the three-magnet pendulum, dt = 1 ms, blamed dt); None below it."""
    c = system.friction if friction is None else friction
    rate, k = damping_rate(system, b, c), _backward_kick()
    if not (c > 0 and k * dt * rate > 1.0):
        return None
    return (f"the pivot friction c = {c:g} N·m·s damps {system.names[b]!r} about its axis of least inertia within "
            f"I/c = {1 / rate:.3g} s, under a step of dt = {dt:g} s, and splitting4's backward sub-steps amplify "
            f"what it takes; use method splitting2 (exact for any friction), dt ≤ {1 / (k * rate):.2g} s, or a "
            "smaller friction")


def _check_damping(scene, system: System, t_end: float) -> None:
    """Refuse a pivot friction c whose damping rate c/I (1/s, I the body's least moment about its pivot, or its
    hinge's) stops a body within t_end/MAX_RESOLVED_STEPS: beyond a physical range (c = 1e90 N·m·s), which
    overflowed the splitting's backward sub-steps and blamed dt."""
    if not system.friction > 0 or not t_end > 0:
        return
    moving = [i for i, b in enumerate(scene.bodies) if b.moving]
    for b in range(system.n_bodies):
        rate = damping_rate(system, b)
        if rate * t_end > MAX_RESOLVED_STEPS * MAX_STEP_PHASE:
            raise ValidationError("friction", f"{system.friction:g} N·m·s stops {scene.bodies[moving[b]].name!r} "
                                  f"within {1 / rate:.3g} s (its moment of inertia about the pivot / c), less than "
                                  f"doubles tell apart over t_end = {t_end:g} s: beyond a physical range, not the "
                                  "step; give a physical pivot friction")


def friction_work(t: np.ndarray, omega: np.ndarray, friction) -> np.ndarray:
    """Work (J) done against pivot friction from the start to each record: ∫ c Σ_b |ω_b|² dt (cumulative
    trapezoid). t (R,), omega (…, R, B, 3) lab, friction c scalar or (E,) for an ensemble."""
    c = np.asarray(friction, float)
    power = np.einsum("...rbi,...rbi->...r", omega, omega) * (c[:, None] if c.ndim else c)
    out = np.zeros_like(power)
    if len(t) > 1:
        out[..., 1:] = np.cumsum(0.5 * (power[..., 1:] + power[..., :-1]) * np.diff(t), axis=-1)
    return out


#: The note of a run with drivers whose work was not summed (its energy balance would mean nothing).
BALANCE_NOT_SUMMED = ("energy balance not checked: driven magnets, moving pivots or a rotating field do work on the "
                      "bodies, which the splitting methods and dop853 sum (not PEM's schemes)")


def postflight(system: System, traj) -> list:
    """Warnings (str) about the finished run: the energy balance (module docstring) and the first switch of a
    dipole pair's minimum image in a periodic box (:func:`image_switch_warning`)."""
    switch = image_switch_warning(system, traj)
    if system.driven and traj.driver_work is None:
        return [BALANCE_NOT_SUMMED] + switch
    err = traj.energy_balance()
    if err > MAX_BALANCE_ERROR:
        loss = traj.friction_loss()
        cause = " or a larger periodic_box (minimum-image switches make the energy jump)" if switch else ""
        return [f"energy balance off by {100 * err:.3g} % of the energy scale (integration error; friction took "
                f"{100 * loss:.3g} %): the run is not accurate — try a smaller dt{cause}"] + switch
    return switch


#: Dipole pairs × records compared at once when looking for minimum-image switches (bounded memory).
SWITCH_BLOCK = 1 << 21


def _candidates(pos: np.ndarray, owner: np.ndarray, n_moving: int, box: np.ndarray) -> tuple:
    """(a, b): the dipole pairs (a moving, b any, of different bodies, each pair once) whose separation can have
    crossed a half-box boundary (n + ½)·L along some axis between the records pos (R, N, 3) m: its start distance
    to the nearest boundary is within the two dipoles' largest displacements from their start."""
    moved = np.abs(pos - pos[:1]).max(axis=0)   # (N, 3)
    a_all, b_all = [], []
    for start in range(0, n_moving, 512):
        rows = np.arange(start, min(start + 512, n_moving))
        d = (pos[0, rows, None] - pos[0, None]) / box
        gap = np.abs(d - np.floor(d) - 0.5) * box   # distance to the nearest half-box boundary, per axis
        near = (gap <= moved[rows, None] + moved[None]).any(axis=-1)
        near &= (owner[rows, None] != owner[None]) & (rows[:, None] < np.arange(len(owner)))
        a, b = np.nonzero(near)
        a_all.append(rows[a])
        b_all.append(b)
    return (np.concatenate(a_all), np.concatenate(b_all)) if a_all else (np.zeros(0, int), np.zeros(0, int))


def _first_switch(pos: np.ndarray, owner: np.ndarray, n_moving: int, box: np.ndarray):
    """(r, a, b) of the first switch of a dipole pair's minimum image between records r and r + 1 — the image
    rint(d/L) of the pair's separation d = pos[:, a] − pos[:, b] changes — or None. pos (R, N, 3) m: the moving
    dipoles first, then the fixed and driven ones; owner (N,): their bodies."""
    a, b = _candidates(pos, owner, n_moving, box)
    R = len(pos)
    best = None
    step = max(1, SWITCH_BLOCK // max(1, R))
    for start in range(0, len(a), step):
        pa, pb = a[start:start + step], b[start:start + step]
        image = np.rint((pos[:, pa] - pos[:, pb]) / box)   # (R, P, 3)
        changed = (image[1:] != image[:-1]).any(axis=-1)   # (R − 1, P)
        rows = changed.any(axis=1)
        if rows.any():
            r = int(np.argmax(rows))
            if best is None or r < best[0]:
                c = int(np.argmax(changed[r]))
                best = (r, int(pa[c]), int(pb[c]))
    return best


def _switch_state(t, pos, mom, r: int, a: int, b: int, box: np.ndarray, k: float) -> tuple:
    """(time s, axis, energy jump J) of the first minimum-image switch of pair (a, b) between records r and r + 1
    (pos, mom (R, N, 3) m, A·m²): where the separation, taken linear between the records, first meets a half-box
    boundary; the jump is the pair's energy in the image after less the one before, both at that point."""
    d0, d1 = pos[r, a] - pos[r, b], pos[r + 1, a] - pos[r + 1, b]
    n0, n1 = np.rint(d0 / box), np.rint(d1 / box)
    axes = np.flatnonzero(n0 != n1)
    way = np.sign(n1 - n0)[axes]
    edges = (n0[axes] + 0.5 * way) * box[axes]   # the first half-box boundary on the way from d0 to d1
    fs = np.clip((edges - d0[axes]) / (d1[axes] - d0[axes]), 0.0, 1.0)
    i = int(np.argmin(fs))
    f, axis = float(fs[i]), int(axes[i])
    d = d0 + f * (d1 - d0)
    pa = mom[r, a] + f * (mom[r + 1, a] - mom[r, a])
    pb = mom[r, b] + f * (mom[r + 1, b] - mom[r, b])
    before = d - box * n0
    after = before - box[axis] * way[i] * np.eye(3)[axis]
    def energy(s):   # the pair's energy at separation s (the one formula: torques.dipole_pair_terms)
        return float(dipole_pair_terms(s[None, None], pa[None, None], np.zeros((1, 1, 3)), pb[None, None], k,
                                       energy_weights=np.ones(1))[2][0, 0])

    jump = energy(after) - energy(before)
    return float(t[r] + f * (t[r + 1] - t[r])), axis, jump


def image_switch_warning(system: System, traj) -> list:
    """The warning (a list of one str, or none) of the first record interval of a periodic run in which a dipole
    pair's minimum image switched: its separation crossed half the box along an axis, so the pair's energy jumped
    from its value at separation d to the one at d ∓ L (the force, −∇ of the nearest image's energy, is
    discontinuous there and the total energy is not conserved). Read from the recorded dipole positions and moments
    (moving dipoles) and the fixed and driven dipoles' kinematics at the record times; a pair that crosses and
    crosses back between two records is not seen. The message names the time, the two bodies, the jump (J) and the
    fix."""
    if system.box is None or not system.mu0 > 0 or traj.dipole_position.shape[-2] == 0 or len(traj.t) < 2:
        return []
    box, t = np.asarray(system.box, float), np.asarray(traj.t, float)
    D = traj.dipole_position.shape[-2]
    pos_m = traj.dipole_position.reshape((-1, len(t), D, 3))
    mom_m = traj.dipole_moment.reshape((-1, len(t), D, 3))
    S = len(system.src_pos)
    if S:
        placed = [system.sources(float(x)) for x in (t[:1] if system.static_sources else t)]
        src_r = np.broadcast_to(np.array([p[0] for p in placed]), (len(t), S, 3))
        src_m = np.broadcast_to(np.array([p[1] for p in placed]), (len(t), S, 3))
    owner = np.concatenate([traj.dipole_owner, system.n_bodies + np.asarray(system.src_owner, int)])
    names = list(traj.names) + [body.name for body in system.src_bodies]
    found = None
    for e in range(len(pos_m)):
        pos, mom = pos_m[e], mom_m[e]
        if S:
            pos, mom = np.concatenate([pos, src_r], axis=1), np.concatenate([mom, src_m], axis=1)
        hit = _first_switch(pos, owner, D, box)
        if hit is not None and (found is None or hit[0] < found[1][0]):
            found = (e, hit, pos, mom)
    if found is None:
        return []
    e, (r, a, b), pos, mom = found
    when, axis, jump = _switch_state(t, pos, mom, r, a, b, box, system.mu0 / (4 * np.pi))
    scale = float(np.asarray(traj._energy_scale()).reshape(-1)[e])
    member = f" of ensemble member {e}" if traj.ensemble else ""
    return [f"periodic_box: the minimum image of the dipole pair of {names[owner[a]]!r} and {names[owner[b]]!r}"
            f"{member} switched at t ≈ {when:.6g} s (their separation crossed half the box, {box[axis] / 2:.3g} m, "
            f"along {AXES[axis]}), and the pair's energy jumped by {jump:.3g} J there ({100 * abs(jump) / scale:.2g} % "
            "of the energy scale): without a cutoff or an Ewald sum the energy is not conserved where a pair "
            "crosses half a box (the first such switch of the run is named); enlarge periodic_box so that the "
            "bodies stay within half a box of each other along each axis"]
