"""The compiled engine (numba): splitting4, splitting2, pem-rk4 and pem-euler for every scene.

The same step as :mod:`pem_physics.engine.integrators` (the numpy reference, which stays the
fallback and the definition), for any number of pendulum, free and hinged bodies, any number of
dipoles per body, fixed and driven magnets (constant velocity, elliptic orbit — and PEM's own
bookkeeping of them for ``pem-*`` —, tables of positions and orientations), pendulums on moving pivots (tables),
uniform and rotating fields, periodic boxes, friction, and
per-member friction and field, the drivers' work (splitting: summed by the kicks as
:class:`~..integrators.Splitting` sums it, so that the energy balance stays the integration error), translating
free bodies (splitting: centre-of-mass positions and momenta
kicked and drifted with the rotation, as :class:`~..integrators.Splitting` does), and (splitting, a single
scene) contact spheres and walls: the kernels check every gap after each step; a step that ends overlapping
they take themselves where they can (impacts, with Coulomb friction too: impact_kernels._resolve_impacts, a port of the
numpy driver's impact step, its trial steps starting anywhere in time; contacts that settle, and the resting
contacts held after every step and their lift-offs: impact_kernels._hold) and
otherwise stop at its start, for the numpy contact driver to take that step (:func:`..contact.driver.run_compiled`).
A single scene is an ensemble of one; members run in parallel
(``prange``), each member's arithmetic independent of the others, so results repeat bit for bit
whatever the thread count.

This module is the Python side — the scene's constant arrays (:class:`Model`) and the
:class:`Runner` that calls the kernels; the kernels themselves are in :mod:`.kernels` (numba, JIT
compiled and cached on disk). A scene or an ensemble may instead run the same kernels built ahead of time
(:mod:`pem_physics.aot`, ``pem build-engine``; an ensemble's members then in threads, or in SIMD lanes: :mod:`.lanes`):
then numba is not even imported, and a run starts at once.

One call of the kernels advances every member through a run of record marks without returning
to Python: it steps, checks for blow-ups at the same points as the numpy driver (every
``check_every`` steps and at each mark) and stores the raw state (orientation in the user's body
axes, lab L, lab ω; centre positions and linear momenta) at each mark. The driver in
:mod:`pem_physics.engine.simulate` calls it for chunks of marks sized to a bounded wall time, for
progress bars and Ctrl-C / Esc.

The arithmetic follows the numpy code operation for operation where that is cheap (same
formulas, same association); sums may run in another order, so the two agree to rounding
(``tests/engine/test_compiled.py``: 1e-12 relative after 1000 steps), not bit for bit. No
fastmath: results are IEEE-exact and repeatable.

Shapes: E members, B moving bodies, D dipoles on them, S source dipoles on K fixed/driven bodies.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ... import aot
from ...jit import numba as _numba
from ...model.analytic import Oscillation, UniformRotation
from ...model.motion import TabulatedMotion
from ...model.scene import ConstantVelocity, EllipticOrbit
from ..system import orbit_terms
from ..system import spin as orbit_spin

#: Methods the compiled engine runs (DOP853 stays with scipy).
METHODS = ("splitting4", "splitting2", "pem-rk4", "pem-euler")

#: Set False to force the numpy path (tests compare both).
ENABLED = True

#: Status codes written by the kernels, per member: (code, steps done, body). CONTACT (scenes with contacts):
#: a gap overlapped at the end of step ``steps done + 1``; the state is restored to that step's start and
#: the third entry is the pair (index into ContactModel.pairs) that overlapped first.
#: EVENTS_FULL: the events of the kernel's impact steps (ContactArrays' buffers) would overflow at step
#: ``steps done + 1``; the state is that step's start: flush the buffers and call again.
OK, NONFINITE, NOT_ORTHONORMAL, CONTACT, EVENTS_FULL = 0, 1, 2, 3, 4

#: The kernels hand a step to the numpy contact driver when a gap ends it below −CONTACT_RTOL·(r_a + r_b):
#: half the driver's own threshold (contacts.GAP_RTOL), so that the rounding by which the two engines'
#: states differ never skips a step the driver would call an impact. A step handed over that the driver
#: finds clear it simply takes as it is.
CONTACT_RTOL = 0.5e-12

#: The single-scene kernels' kinds in a build made ahead of time (``BUILD_ENTRIES`` of :mod:`.kernels`): one
#: splitting entry with or without contacts (:func:`no_contacts`), and PEM's.
ENTRIES = ("splitting", "pem")
#: Wall kinds in Model.wall_kind (model.make_wall / engine.walls).
WALL_PLANE, WALL_SPHERE, WALL_CYLINDER, WALL_BOX = 0, 1, 2, 3

#: Scene constants the kernels read. Body-frame vectors are in one choice of body axes (the
#: user's for pem-*, the principal frames for splitting). Driven-body kinds: 0 fixed,
#: 1 constant velocity, 2 elliptic orbit or uniform rotation, 3 a table (:data:`TAB_KINDS`).
#: Tables (driven bodies' and moving pivots'), one after another, table k rows tab_lo[k]…tab_lo[k+1]−1, of the
#: kind tab_kind[k]. A spline (:class:`~pem_physics.model.motion.TabulatedMotion`): tab_t (N,) s its samples'
#: times, tab_y (N,7) the samples (position m, quaternion w x y z; zeros without orientations) and tab_m (N,7) the
#: splines' second derivatives (Spline.M). A sum of cosines (:mod:`~pem_physics.model.analytic`): one row a term,
#: tab_y[:, :3] its amplitude a (m), tab_y[:, 3] ω (rad/s), tab_y[:, 4] φ (rad).
#: sb_tab (K,) and pv_tab (B,): each driven body's and each pivot's table (−1: none). power: the splitting
#: kernels sum the drivers' work (Splitting.driver_work; scenes with drivers).
Model = namedtuple("Model", [
    "pivot", "com", "mass", "inv_inertia", "hinged", "hinge_axis",       # (B,3) (B,3) (B,) (B,3,3) (B,) (B,3)
    "owner", "dpos", "dmom",                                             # (D,) (D,3) (D,3)
    "src_body", "src_pos", "src_mom",                                    # (S,) (S,3) (S,3)
    "sb_kind", "sb_pos", "sb_rot", "sb_vel", "sb_center", "sb_r1", "sb_r2",  # (K,) (K,3) (K,3,3) (K,3)…
    "sb_omega", "sb_phase", "sb_axis", "sb_spin",                        # (K,) (K,) (K,3) unit r1×r2, (K,3) ω·axis
    "static_sources", "gravity", "rf_on", "rf_b1", "rf_b2", "rf_omega", "rf_phase",
    "k", "pairs", "periodic", "box", "orth_limit",
    "tab_t", "tab_y", "tab_m", "tab_lo", "tab_kind", "sb_tab", "pv_tab", "pv_any", "power"])

#: Kinds of the Model's tables (tab_kind): a spline of positions, one of positions and orientations, a sum of
#: cosines (its terms' amplitudes, angular frequencies and phases).
TAB_POSITIONS, TAB_ORIENTATIONS, TAB_HARMONIC = 0, 1, 2
TAB_KINDS = (TAB_POSITIONS, TAB_ORIENTATIONS, TAB_HARMONIC)

#: The contact geometry the splitting kernels check after each step (contacts.ContactModel; empty arrays
#: without): C spheres, P pairs, W walls. An argument of its own, not Model fields: every
#: function that takes the Model gets its fields as arguments, and a larger Model costs seconds of first
#: compile; this tuple goes only to the step loop and the gap check. The moving spheres' centres of rotation
#: are not in it: they are the state's positions X (pivots, or translating bodies' centres of mass).
ContactArrays = namedtuple("ContactArrays", [
    "owner", "center", "radius",                                         # (C,) body or −1, (C,3), (C,)
    "pair", "spheres", "limit",                                          # (P,2), sphere pairs first, (P,) m
    "wall_kind", "wall_sign", "wall_point", "wall_dir", "wall_radius",   # (W,) (W,) (W,3) (W,3) (W,)
    "wall_axes", "wall_half",                                            # (W,3,3) (W,3)
    # the grazing check (broad_kernels._grazing; contacts.SpeedBounds): per sphere 1/M of a translating owner and
    # lever k; per pair whether its speed is bounded, σ (m), and the numpy driver's limit tol = GAP_RTOL·scale;
    # graze: whether to look for dips at all
    "inv_mass", "lever", "bounded", "sigma", "tol", "graze",
    # the impact step in the kernel (impact_kernels._resolve_impacts; contacts._advance_step): per pair the touch limit
    # contacts.TOUCH_RTOL·scale (m), restitution and friction; impact: whether the kernels take impact steps at all
    # (their trial steps start at the search's time); and the event buffers the kernel fills and the driver
    # empties after each call:
    # count (1,) int, loss (1,) J the running energy loss (the driver sets it before a call), per event (N,)
    # time, pair, side-1 body; (N,3) impulse, point, normal; (N,B,3,3) orientations (user's body axes), (N,B,3)
    # centres of rotation
    "touch", "e", "mu", "impact", "ev_count", "loss", "ev_t", "ev_pair", "ev_body", "ev_J", "ev_point", "ev_normal",
    "ev_U", "ev_X",
    # resting contacts (contacts._hold in the kernels, impact_kernels._hold): per pair whether it rests (the driver sets
    # it from ContactModel.resting before a call and reads it back after; the kernels hold them where they take
    # impact steps, ``impact``); per event its kind (EVENT_KINDS); the running loss (J) at each record mark of a call
    # (MARK_CAPACITY at most)
    "resting", "ev_kind", "rec_loss",
    # free flight in merged steps (broad_kernels._horizon; bounds.FlightBounds): per body the bound on |dp/dt| (N) and
    # the gravity torque's growth λ² (1/s²); per sphere whether the drifts turn it about one axis the momentum sets
    # (axial: its step-end bound takes Σdᵢ = 1); merge: whether the scene's forces allow it (gravity alone) and every
    # pair's speed is bounded where the grazing check is on; merged (1,) int: the steps the kernels ran so, unchecked;
    # span (3,) int: the certified span's end (a step count), and the horizons to skip and the next skip, carried
    # from call to call
    "force", "lam2", "axial", "merge", "merged", "span",
    # whether moving bodies act on each other (System.bodies_coupled): if not, the impact search's Brent trials
    # step only the bodies of the pairs they look at (impact_kernels._idle_but)
    "coupled",
    # broad: whether the step loop checks only the near pairs (broad_kernels._overlap_near: scenes of BROAD_PAIRS pairs
    # or more); checks (2,) int: the whole passes over the pairs and the near pairs' gaps taken, in the kernels
    "broad", "checks",
    # whether a contact model stands behind the arrays: False for :func:`no_contacts`, which the kernels neither
    # read nor write (the scene then steps as it would with no contact code at all)
    "present"])

#: Whether the kernels take impact steps themselves (impact_kernels._resolve_impacts) where they can, instead of
#: handing every one to the numpy contact driver; off only to compare the two.
IMPACTS = True
#: Events the kernel's buffers hold (a call stops with EVENTS_FULL before they overflow).
EVENT_CAPACITY = 256
#: The kinds of the kernels' events, by their code (kernel_flags.EV_IMPACT, EV_REST, EV_LIFT).
EVENT_KINDS = ("impact", "rest", "lift-off")
#: Record marks a call of a contact scene's kernel may hold (ContactArrays.rec_loss).
MARK_CAPACITY = 4096


def available() -> bool:
    """Whether numba's kernels can run (imports numba on first call)."""
    return ENABLED and _numba() is not None


def _kernels():
    """The numba kernels (:mod:`.kernels`), compiled or loaded from the disk cache on first use."""
    from . import kernels

    return kernels


def _f(a, shape=None) -> np.ndarray:
    """A writable, C-contiguous float64 copy (one array type per argument, so one compiled variant)."""
    a = np.array(a, dtype=np.float64, order="C", copy=True)
    return a.reshape(shape) if shape is not None else a


#: Whether the kernels merge the steps of free flight that no contact check could stop (broad_kernels._horizon); off
#: only to compare with one step a call.
MERGE = True


#: Pairs from which the kernels check only the near pairs after each step (broad_kernels._overlap_near: the same
#: decisions, bit for bit, as checking every pair; a list costs more than it saves on a few pairs).
BROAD_PAIRS = 128


#: Whether the kernels look for grazing contacts (pairs apart at both ends of a step that overlap in between,
#: broad_kernels._grazing) and hand their steps to the numpy driver; off only to show what it catches.
GRAZING = True


def contact_arrays(contacts, axes, U, J, coupled: bool = True) -> ContactArrays:
    """The :class:`ContactArrays` of a :class:`~..contact.model.ContactModel`, sphere centres of
    moving bodies turned into the body axes ``axes`` (B,3,3) (columns: those axes in the user's body
    coordinates; identities for the user's own axes).

    center (C,3) m: body coordinates about the centre of rotation (moving owner ≥ 0) or lab (fixed, owner −1);
    limit (P,) m: a pair whose gap ends a step below it stops the kernel (−CONTACT_RTOL·scale).
    Walls: kind (WALL_*); sign +1 inside (a container) / −1 (an obstacle) for spheres, cylinders and boxes;
    point: plane point, sphere or box centre, point on a cylinder's axis; dir: plane normal (into the
    allowed side) or cylinder direction; radius; axes (rows: box axes in lab); half sizes.
    The grazing constants (:class:`..contact.bounds.SpeedBounds`) need the orientations U (B,3,3) (user's body axes)
    and hinge inertias J (B,) of a state of the run. ``coupled``: whether moving bodies act on each other
    (System.bodies_coupled).
    """
    from ..contact import walls as wallmod
    C, W = len(contacts.radius), len(contacts.walls)
    N, B = EVENT_CAPACITY, len(axes)
    owner = np.array(contacts.owner, dtype=np.int64)
    center = _f(contacts.center, (-1, 3))
    for q in range(C):
        if owner[q] >= 0:
            center[q] = contacts.center[q] @ axes[owner[q]]
    radius = _f(contacts.radius)
    pair = np.array(contacts.pairs, dtype=np.int64).reshape(-1, 2)
    n_sphere = int(contacts.n_sphere_pairs)
    limit = -CONTACT_RTOL * _f(contacts.scale)
    walls = contacts.walls
    sb = contacts.speed_bounds(U, J)
    fl = contacts.flight_bounds(U, J)
    graze = bool(GRAZING and len(pair))
    tol = _f(contacts.gap_tol)
    kind, sign, point, direc = np.zeros(W, np.int64), np.ones(W), np.zeros((W, 3)), np.zeros((W, 3))
    wr, waxes, half = np.zeros(W), np.broadcast_to(np.eye(3), (W, 3, 3)).copy(), np.zeros((W, 3))
    for w, wall in enumerate(walls):
        if isinstance(wall, wallmod.Plane):
            kind[w], point[w], direc[w] = WALL_PLANE, wall.point, wall.n
        elif isinstance(wall, wallmod.Sphere):
            kind[w], point[w], wr[w], sign[w] = WALL_SPHERE, wall.centre, wall.radius, wall.sign
        elif isinstance(wall, wallmod.Cylinder):
            kind[w], point[w], direc[w], wr[w], sign[w] = WALL_CYLINDER, wall.point, wall.a, wall.radius, wall.sign
        elif isinstance(wall, wallmod.Box):
            kind[w], point[w], waxes[w], half[w] = WALL_BOX, wall.centre, wall.R, wall.h
            sign[w] = 1.0 if wall.inside else -1.0
        else:
            raise TypeError(f"no compiled gap for wall {wall!r}")
    return ContactArrays(owner=owner, center=center, radius=radius, pair=pair,
                         spheres=n_sphere, limit=_f(limit), wall_kind=kind, wall_sign=_f(sign), wall_point=_f(point),
                         wall_dir=_f(direc), wall_radius=_f(wr), wall_axes=_f(waxes), wall_half=_f(half),
                         inv_mass=_f(sb.inv_mass), lever=_f(sb.lever),
                         bounded=np.array(sb.bounded, dtype=np.bool_), sigma=_f(sb.sigma), tol=_f(tol),
                         graze=graze, touch=_f(contacts.touch_tol),
                         e=_f(contacts.e), mu=_f(contacts.mu), impact=bool(IMPACTS and len(pair)),
                         ev_count=np.zeros(1, np.int64), loss=np.zeros(1), ev_t=np.zeros(N),
                         ev_pair=np.zeros(N, np.int64), ev_body=np.zeros(N, np.int64), ev_J=np.zeros((N, 3)),
                         ev_point=np.zeros((N, 3)),
                         ev_normal=np.zeros((N, 3)), ev_U=np.zeros((N, B, 3, 3)), ev_X=np.zeros((N, B, 3)),
                         resting=np.zeros(len(pair), np.bool_),
                         ev_kind=np.zeros(N, np.int64), rec_loss=np.zeros(MARK_CAPACITY),
                         force=_f(fl.force), lam2=_f(fl.lam2), axial=np.array(fl.axial, dtype=np.bool_),
                         merge=bool(MERGE and fl.applies and len(pair) and (sb.bounded.all() or not graze)),
                         merged=np.zeros(1, np.int64), span=np.array([0, 0, 1], np.int64), coupled=bool(coupled),
                         broad=len(pair) >= BROAD_PAIRS, checks=np.zeros(2, np.int64), present=True)


def no_contacts(B: int) -> ContactArrays:
    """The :class:`ContactArrays` of a scene without contacts (B bodies): no spheres, pairs, walls or event room, every
    switch off. The kernels take it where a scene has no contact model — one compiled variant serves both: the
    branches it switches off cost nothing measurable, a second variant a third of the single-scene build."""
    i, x, x3, b = np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 3)), np.zeros(0, np.bool_)
    return ContactArrays(owner=i, center=x3, radius=x, pair=np.zeros((0, 2), np.int64), spheres=0, limit=x,
                         wall_kind=i, wall_sign=x, wall_point=x3, wall_dir=x3, wall_radius=x,
                         wall_axes=np.zeros((0, 3, 3)), wall_half=x3, inv_mass=x, lever=x, bounded=b, sigma=x, tol=x,
                         graze=False, touch=x, e=x, mu=x, impact=False, ev_count=np.zeros(1, np.int64),
                         loss=np.zeros(1), ev_t=x, ev_pair=i, ev_body=i, ev_J=x3, ev_point=x3, ev_normal=x3,
                         ev_U=np.zeros((0, B, 3, 3)), ev_X=np.zeros((0, B, 3)), resting=b, ev_kind=i, rec_loss=x,
                         force=x, lam2=x, axial=b, merge=False, merged=np.zeros(1, np.int64),
                         span=np.array([0, 0, 1], np.int64), coupled=False, broad=False,
                         checks=np.zeros(2, np.int64), present=False)


def _tables(system) -> tuple:
    """The tabulated and harmonic motions of ``system`` as the Model's arrays: (tab_t, tab_y, tab_m, tab_lo,
    tab_kind, sb_tab, pv_tab) (see :data:`Model`). A driven uniform rotation is an orbit (kind 2), not a table."""
    motions = []

    def add(m, pivot: bool) -> int:   # a pivot's uniform rotation is a sum of cosines, a body's an orbit
        if not isinstance(m, (TabulatedMotion, Oscillation)) and not (isinstance(m, UniformRotation) and pivot):
            return -1
        motions.append(m)
        return len(motions) - 1

    sb_tab = [add(b.motion, False) for b in system.src_bodies]
    pv_tab = [add(m, True) for m in (system.pivot_motions or [None] * system.n_bodies)]
    t, y, mm, lo, kind = [], [], [], [0], []
    for m in motions:
        if isinstance(m, TabulatedMotion):
            tk, yk, mk, has_rot = m.spline_table()
            kind.append(TAB_ORIENTATIONS if has_rot else TAB_POSITIONS)
        else:
            a, w, p = m.harmonic_terms()
            tk, yk, mk = np.zeros(len(w)), np.zeros((len(w), 7)), np.zeros((len(w), 7))
            yk[:, :3], yk[:, 3], yk[:, 4] = a, w, p
            kind.append(TAB_HARMONIC)
        t.append(tk)
        y.append(yk)
        mm.append(mk)
        lo.append(lo[-1] + len(tk))

    def cat(a, shape):
        return _f(np.concatenate(a) if a else np.zeros(shape))

    return (cat(t, (0,)), cat(y, (0, 7)), cat(mm, (0, 7)), np.array(lo, np.int64), np.array(kind, np.int64),
            np.array(sb_tab, np.int64), np.array(pv_tab, np.int64))


def build_model(system, kin, orth_limit: float, power: bool = False) -> Model:
    """The constant arrays of ``system`` in the body axes of ``kin`` (a Kinematics); ``power``: sum the drivers'
    work (the splitting kernels, scenes with drivers)."""
    K = len(system.src_bodies)
    kind = np.zeros(K, np.int64)
    pos, rot, vel, ctr, r1, r2 = (np.zeros((K, 3)), np.zeros((K, 3, 3)), np.zeros((K, 3)), np.zeros((K, 3)),
                                  np.zeros((K, 3)), np.zeros((K, 3)))
    omega, phase, axis, spin = np.zeros(K), np.zeros(K), np.zeros((K, 3)), np.zeros((K, 3))
    for j, body in enumerate(system.src_bodies):
        pos[j], rot[j] = body.position, body.orientation
        m = body.motion
        if isinstance(m, ConstantVelocity):
            kind[j], vel[j] = 1, m.velocity
        elif isinstance(m, (EllipticOrbit, UniformRotation)):
            kind[j] = 2
            ctr[j], r1[j], r2[j], omega[j], phase[j], axis[j] = orbit_terms(m)
            spin[j] = orbit_spin(m)  # as PemSourceDriver forms it
        elif isinstance(m, (TabulatedMotion, Oscillation)):
            kind[j] = 3
    tab_t, tab_y, tab_m, tab_lo, tab_kind, sb_tab, pv_tab = _tables(system)
    rf = system.rotating_field
    k = float(system.mu0 / (4 * np.pi))
    n_src = len(system.owner) + len(system.src_pos)
    return Model(
        pivot=_f(system.pivot, (-1, 3)), com=_f(kin.com, (-1, 3)), mass=_f(system.mass),
        inv_inertia=_f(kin.inv_inertia, (-1, 3, 3)), hinged=np.array(system.hinged, dtype=np.bool_),
        hinge_axis=_f(system.hinge_axis, (-1, 3)),
        owner=np.array(system.owner, dtype=np.int64), dpos=_f(kin.dpos, (-1, 3)),
        dmom=_f(kin.dmom, (-1, 3)),
        src_body=np.array(system.src_owner, dtype=np.int64), src_pos=_f(system.src_pos, (-1, 3)),
        src_mom=_f(system.src_mom, (-1, 3)),
        sb_kind=kind, sb_pos=pos, sb_rot=rot, sb_vel=vel, sb_center=ctr, sb_r1=r1, sb_r2=r2, sb_omega=omega,
        sb_phase=phase, sb_axis=axis, sb_spin=spin,
        static_sources=system.static_sources, gravity=_f(system.gravity),
        rf_on=rf is not None, rf_b1=_f(rf.b1 if rf is not None else np.zeros(3)),
        rf_b2=_f(rf.b2 if rf is not None else np.zeros(3)),
        rf_omega=float(rf.angular_velocity) if rf is not None else 0.0,
        rf_phase=float(rf.phase) if rf is not None else 0.0,
        k=k, pairs=bool(k > 0 and n_src > 1), periodic=system.box is not None,
        box=_f(system.box if system.box is not None else np.ones(3)), orth_limit=float(orth_limit),
        tab_t=tab_t, tab_y=tab_y, tab_m=tab_m, tab_lo=tab_lo, tab_kind=tab_kind, sb_tab=sb_tab, pv_tab=pv_tab,
        pv_any=bool((pv_tab >= 0).any()), power=bool(power))


#: Positions of the per-member arrays in the arguments of run_splitting / run_pem: a single scene
#: passes their one member straight to the member function (no parallel machinery to load).
_SPLIT_MEMBER_ARGS = frozenset((1, 2, 3, 4, 5, 6, 7, 8, 10, 24, 25, 26, 27, 28, 29, 30, 31))
#: Positions in run_splitting's arguments (and a member's): the records U, L, ω, X, P; the drivers' power and
#: work; the work at the marks; the status; the clock's start.
_SPLIT_OUT, _SPLIT_DW, _SPLIT_WORK, _SPLIT_STATUS, _SPLIT_T0 = slice(24, 29), 29, 30, 31, 32
_PEM_MEMBER_ARGS = frozenset((1, 2, 3, 4, 5, 6, 7, 9, 15, 16, 17, 18))


def _member(kind: str, args: tuple, e: int = 0) -> tuple:
    """The arguments of member ``e`` of an ensemble call: the member axis taken off the per-member arrays (views,
    C-contiguous: the kernels work in them in place)."""
    member = _SPLIT_MEMBER_ARGS if kind == "splitting" else _PEM_MEMBER_ARGS
    return tuple(a[e] if k in member else a for k, a in enumerate(args))


class Runner:
    """The compiled counterpart of an integrator object: same initial state, same steps, in numba.

    ``integ`` is a :class:`~pem_physics.engine.integrators.Splitting` or ``PemScheme`` just made by
    ``make_integrator`` (its constructor computed the initial momenta, torques and driver state);
    :meth:`advance_to` runs it through record marks and leaves its state in ``integ`` so that the
    numpy code can take over (records, a later chunk) at any point.
    """

    def __init__(self, integ, orth_limit: float, check_every: int):
        from ..integrators import PemScheme, Splitting

        self.integ = integ
        sys_ = integ.system
        self.check_every = int(check_every)
        #: the ahead-of-time build the run uses (:class:`pem_physics.aot.Build`), or None: numba's JIT. A scene or an
        #: ensemble takes the build whenever there is one (an ensemble's members then run in threads, as numba's
        #: parallel loop runs them): no compile, no numba import
        self.aot = aot.holding(*ENTRIES)
        E, B = integ.L.shape[:2]
        c = sys_.member_friction if sys_.member_friction is not None else np.full(E, sys_.friction)
        self.friction = _f(np.broadcast_to(c, (E,)))
        f = sys_.member_field if sys_.member_field is not None else np.broadcast_to(sys_.field, (E, 3))
        self.field = _f(f, (E, 3))
        if isinstance(integ, Splitting):
            self.kind = "splitting"
            #: the scene's contact geometry (a contacts.ContactModel) or None; with it, the kernel takes the impact
            #: steps it can (friction, settling and resting contacts included) and stops at the start of any other
            #: step that ends with an overlap (status CONTACT), where contacts.run_compiled takes over
            self.contacts = getattr(integ, "contacts", None)
            #: the kernels sum the drivers' work as Splitting does (its W and driver_work: scenes with drivers)
            self.power = getattr(integ, "driver_work", None) is not None
            self.model = build_model(sys_, sys_.kin_principal, orth_limit, self.power)
            #: its ContactArrays (:func:`no_contacts` without)
            self.contact = no_contacts(B) if self.contacts is None else contact_arrays(
                self.contacts, sys_.axes, integ.orientation()[0], np.broadcast_to(integ.J, (E, B))[0],
                sys_.bodies_coupled)
            #: (B,) which bodies translate (none: the kernels leave X and P alone)
            self.moving = np.array(sys_.translating, dtype=np.bool_)
            self.translating = bool(self.moving.any())
            plan, inv1 = integ._plan
            free = integ.free
            coef = np.zeros((len(plan), B))
            for n, (_, _, ck) in enumerate(plan):
                coef[n, free] = ck
            full_inv1 = np.zeros(B)
            full_inv1[free] = inv1
            self.split = (_f(integ.drifts), _f(integ.kicks), _f(sys_.inv_moments, (-1, 3)), _f(full_inv1),
                          np.array([k for k, _, _ in plan], np.int64), _f([fr for _, fr, _ in plan]), _f(coef))
            # Splitting._kick takes the plain path only for one scene-wide friction of exactly 0.
            self.damped = not (sys_.member_friction is None and sys_.friction == 0.0)
            self.axes = _f(sys_.axes, (-1, 3, 3))
        elif isinstance(integ, PemScheme):
            self.kind = "pem"
            self.model = build_model(sys_, sys_.kin_body, orth_limit)
            self.rk4 = bool(integ.rk4)
            self.friction_on = bool(sys_.has_friction)
        else:
            raise TypeError(f"no compiled counterpart for {type(integ).__name__}")
        #: :meth:`step`'s kernel arguments, made at its first call
        self._step_args = None
        #: the single-scene kernel's entry in an ahead-of-time build (:data:`ENTRIES`)
        self.entry = self.kind

    def member_call(self, marks) -> tuple:
        """(kind, args) of the single-scene kernel call through ``marks`` (ints): what
        :meth:`advance_to` passes to ``member_splitting`` / ``member_pem`` for an ensemble of one —
        also how :mod:`pem_physics.aot` learns the kernels' argument types."""
        args, _ = self._args(marks)
        return self.entry, _member(self.kind, args)

    def _args(self, marks) -> tuple:
        integ = self.integ
        marks = np.ascontiguousarray(marks, dtype=np.int64)
        E, B = integ.L.shape[:2]
        R = len(marks)
        out = np.zeros((E, R, B, 3, 3)), np.zeros((E, R, B, 3)), np.zeros((E, R, B, 3))
        status = np.zeros((E, 3), np.int64)
        steps0 = int(integ.steps_done)
        if self.kind == "splitting":
            Q, L, T = _f(integ.Q), _f(integ.L), _f(integ.T)
            J = _f(np.broadcast_to(integ.J, (E, B)))
            # the force is part of the state only where bodies translate (Splitting._torque): else any array
            X, P, F = _f(integ.X), _f(integ.P), _f(integ.F) if self.translating else np.zeros((E, B, 3))
            out_XP = np.zeros((E, R, B, 3)), np.zeros((E, R, B, 3))
            # the drivers' power at the state and their work so far (Splitting's W and driver_work), per member
            DW = np.zeros((E, 2))
            if self.power:
                DW[:, 0], DW[:, 1] = integ.W, integ.driver_work
            args = (self.model, Q, L, T, J, X, P, F, self.friction, self.damped, self.field, float(integ.dt), steps0,
                    marks, self.check_every, *self.split, self.moving, self.axes, *out, *out_XP, DW, np.zeros((E, R)),
                    status, 0.0, self.contact)
            return args, (Q, L, T, X, P, F, DW)
        drv = integ.driver
        K = len(drv.frames)
        frames = _f(np.broadcast_to(np.array(drv.frames).reshape(K, 3, 3), (E, K, 3, 3)))
        dtime = np.full(E, float(drv.time))
        U, Ud, L, w = _f(integ.U), _f(integ.U_dip), _f(integ.L), _f(integ.w)
        args = (self.model, U, Ud, L, w, frames, dtime, self.friction, self.friction_on, self.field,
                float(integ.dt), self.rk4, steps0, marks, self.check_every, *out, status)
        return args, (U, Ud, L, w, frames, dtime)

    def advance_to(self, marks) -> tuple:
        """Run through ``marks`` (increasing absolute step counts); returns (U, L, w, X, P, status).

        U (E,R,B,3,3), L and w (E,R,B,3) at each mark reached (rows past a blow-up or a contact are unset);
        X, P (E,R,B,3): centres of rotation (m) and linear momenta (kg·m/s) there — None when no body
        translates (pivots and zero: nothing to record); status (E,3) int: code (OK, NONFINITE,
        NOT_ORTHONORMAL, CONTACT), steps done, body index (the pair for CONTACT).
        The drivers' work (J) at each mark, for splitting scenes with drivers, is then in :attr:`work` (E,R).
        """
        integ = self.integ
        args, state = self._args(marks)
        E = integ.L.shape[0]
        if self.kind == "splitting":
            out_U, out_L, out_w, out_X, out_P = args[_SPLIT_OUT]
            status = args[_SPLIT_STATUS]
            #: (E,R) J: the drivers' work at the marks of the last call (None without drivers)
            self.work = args[_SPLIT_WORK] if self.power else None
            if not self.translating:
                out_X = out_P = None
        else:
            (out_U, out_L, out_w, status), out_X, out_P = args[-4:], None, None
        if E == 1:
            member = _member(self.kind, args)
            if self.aot is not None:
                self.aot.check(self.entry, member)
            r = self._single(self.entry)(*member)
        elif self.aot is not None:
            # an ensemble on the build: run_splitting's loop, its members in threads (the build's kernels release the
            # GIL; each member works in its own rows)
            from . import groups

            run = self._single(self.entry)
            self.aot.check(self.entry, _member(self.kind, args, 0))  # every member's arguments have the same types

            def members(first, last):
                for e in range(first, last):
                    r = run(*_member(self.kind, args, e))
                    if self.kind != "splitting":
                        state[5][e] = r  # dtime[e], as run_pem keeps it

            cuts = np.linspace(0, E, min(groups.threads(), E) + 1).astype(int)
            groups.run([lambda report, halt, a=a, b=b: members(a, b) for a, b in zip(cuts[:-1], cuts[1:])], None,
                       None, 1.0)
        else:
            k = _kernels()
            (k.run_splitting if self.kind == "splitting" else k.run_pem)(*args)
        if self.kind == "splitting":
            integ.Q, integ.L, integ.T, integ.X, integ.P, F, DW = state
            if self.translating:
                integ.F = F
            if self.power:
                integ.W, integ.driver_work = DW[:, 0].copy(), DW[:, 1].copy()
        else:
            U, Ud, L, w, frames, dtime = state
            if E == 1:
                dtime[0] = r
            integ.U, integ.U_dip, integ.L, integ.w = U, Ud, L, w
            # The driver's state is the same for every member (it does not depend on the bodies).
            drv = integ.driver
            drv.frames = [frames[0, j].copy() for j in range(frames.shape[1])]
            drv.time = float(dtime[0])
            drv.updates = int(status[:, 1].min()) + 1
        integ.steps_done = int(status[:, 1].min())
        return out_U, out_L, out_w, out_X, out_P, status

    def step(self, Q, L, T, J, X, P, F, h: float, t0: float = 0.0, DW=None) -> None:
        """One splitting step of length h (s) from time t0 (s) — principal frames Q (B,3,3), momenta L and torques T
        (B,3), hinge inertias J (B,), centres of rotation X (m), linear momenta P and forces F (B,3), and with drivers
        DW (2,) their power (W) and work (J) — all of one member, updated in place (X, P only for translating bodies;
        F any (B,3) array where none translates). No gap check: the contact driver's trial steps
        (:func:`..contact.driver.run_compiled`), which start anywhere in time."""
        state = (Q, L, T, J, X, P, F)
        member = self._step_args
        if member is None:  # the first call: the whole argument list, checked once (Brent calls this ~10× an impact)
            args = list(self._args([1])[0])
            args[1:8] = (a[None] for a in state)
            args[12] = 0
            args[-1] = no_contacts(len(J))  # no gap check
            member = self._step_args = list(_member(self.kind, tuple(args)))
            if self.aot is not None:
                self.aot.check(self.kind, member)
        else:
            # later calls change only the state and h: the state must keep the checked types (the compiled
            # code does not check them)
            for a, b in zip(state, member[1:8]):
                if a.dtype != b.dtype or a.shape != b.shape or not a.flags.c_contiguous:
                    raise TypeError(f"Runner.step: a state array of {a.dtype} {a.shape} where {b.dtype} {b.shape} "
                                    "(C-contiguous) is compiled")
            member[1:8] = state
        member[11] = float(h)
        member[_SPLIT_T0] = float(t0)
        if self.power:
            member[_SPLIT_DW][:] = DW
        self._single(self.kind)(*member)
        if self.power:
            DW[:] = member[_SPLIT_DW]

    def _single(self, entry: str):
        """The single-scene kernel ``entry``: ahead-of-time built when loaded (:mod:`pem_physics.aot`), else numba's."""
        if self.aot is not None:
            return self.aot.entry(entry)
        return getattr(_kernels(), _kernels().BUILD_ENTRIES[entry])


#: From this many dipole pairs per member on, a step is all-pairs work: the numpy driver with the
#: parallel, vectorised pair sweep of :mod:`.pairs` is faster than this engine, whose members evaluate
#: their pairs serially (1024 needles: ~8 ms against ~100 ms per RK4 step).
MAX_PAIRS = 1 << 14


def supports(integ) -> bool:
    """Whether the compiled engine runs this integrator object: the method is covered, the system is not
    a large all-pairs one, and there are kernels — an ahead-of-time build for a single scene
    (:mod:`pem_physics.aot`), else numba."""
    if not (ENABLED and getattr(integ, "name", "") in METHODS):
        return False
    sys_ = integ.system
    if getattr(integ, "contacts", None) is not None:
        # The kernels find the step of an impact and hand it to the numpy contact driver (contacts.run_compiled)
        if integ.name not in ("splitting4", "splitting2") or integ.L.shape[0] != 1:
            return False
    if sys_.n_dipoles * (sys_.n_dipoles + len(sys_.src_pos)) >= MAX_PAIRS:
        return False
    # the build (an ensemble's members in threads), else numba's JIT kernels
    return aot.holding(*ENTRIES) is not None or available()
