"""Figures of a run (PNG, matplotlib's Agg backend) and the ``plot`` command.

matplotlib is imported only inside the functions that draw, so the rest of
the package (and :func:`read_trajectory`) runs on numpy alone. Figures are
built on :class:`matplotlib.figure.Figure` directly (no pyplot global state)
and written atomically through :func:`pem_physics.io.files.atomic_open`.

Figures written by :func:`plot_outputs` for a run folder:

- ``energy.png``: kinetic, gravitational, field, dipole and total energy (J)
  and the relative energy error (E(t) − E(0))/scale against time (s);
- ``omega.png``: lab angular-velocity components (rad/s) of the first bodies;
- ``momentum_sphere.png``: the body-frame angular momentum L_body(t) of one
  body on the sphere of radius |L(0)| (the manual's figure 4.2);
- ``top_view.png``: dipole (or, without dipoles, centre-of-mass) paths seen
  from above, x–y in m.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..engine.simulate import Trajectory
from ..errors import ValidationError
from ..io.output import ARRAYS, MOTION_ARRAYS
from .figures import drawable, figure, save

#: Bodies drawn in the ω figure (one panel each); larger scenes show the first ones.
MAX_OMEGA_PANELS = 4
#: Paths drawn in the top view; larger scenes show the first ones.
MAX_TOP_VIEW_PATHS = 200
FIGURES = ("energy", "omega", "momentum_sphere", "top_view")


def partial_note(traj) -> str | None:
    """Why a trajectory is incomplete, for the figures' stamp; None for a complete run (or several runs)."""
    if isinstance(traj, Trajectory) and not traj.complete:
        return f"interrupted at t = {traj.t[-1]:g} s"
    return None


# ---------------------------------------------------------------------------- reading

def read_trajectory(path) -> Trajectory:
    """The :class:`Trajectory` stored by :func:`pem_physics.io.output.write_npz` (wall time and info are not stored).

    Every array is checked before use (:func:`_checked_file`): a file that is not what a run writes — an array
    missing, pickled (an object array), of another kind, shape or length than the others, no records, a ``meta``
    that is not the run's JSON — is a :class:`ValidationError` naming the file and the key."""
    path = Path(path)
    if path.is_dir():
        path = path / "trajectory.npz"
    if not path.exists():
        raise ValidationError(str(path), "no such file (expected a run's trajectory.npz)")
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise ValidationError(str(path), f"not a pem trajectory file: unreadable as .npz ({err})") from None
    with data:
        missing = [k for k in (*ARRAYS, "names", "meta") if k not in data.files]
        if missing:
            raise ValidationError(str(path), f"not a pem trajectory file: missing {', '.join(missing)}")
        arrays, names, meta = _checked_file(path, data)
        events = impact_loss = None
        if "event_t" in data.files:  # a contact scene's impact log
            from ..engine.contact.model import EventLog

            events = EventLog.from_arrays(arrays)
            impact_loss = arrays.get("impact_loss")
    fields = {k: arrays[k] for k in (*ARRAYS, *MOTION_ARRAYS, "driver_work") if k in arrays}
    return Trajectory(names=names, method=meta["method"], dt=float(meta["dt"]), steps=meta["steps"],
                      complete=meta["complete"], ensemble=meta["ensemble"], events=events, impact_loss=impact_loss,
                      **fields)


#: The shape of each array of a trajectory file after its records' axis R (B bodies, D dipoles, N events); an
#: ensemble's members lead (E, R, …). ``None``: the array has no records' axis (its whole shape is given).
_SHAPES = {"t": ((), None), "quaternion": (("B", 4), "f"), "orientation": (("B", 3, 3), "f"),
           **{k: (("B", 3), "f") for k in ("omega", "omega_body", "angular_momentum", "angular_momentum_body",
                                           "torque", "center_of_mass", "position", "linear_momentum", "velocity")},
           **{k: (("B",), "f") for k in ("kinetic_energy", "gravity_energy", "field_energy", "orthonormality")},
           "dipole_energy": ((), "f"), "driver_work": ((), "f"), "impact_loss": ((), "f"),
           "dipole_position": (("D", 3), "f"), "dipole_moment": (("D", 3), "f")}
_WHOLE = {"pivot": (("B", 3), "f"), "dipole_owner": (("D",), "i"), "translating": (("B",), "b"),
          "weight": (("B",), "f"), "event_t": (("N",), "f"), "event_impulse": (("N", 3), "f"),
          "event_point": (("N", 3), "f"), "event_normal": (("N", 3), "f"),
          **{k: (("N",), "U") for k in ("event_body1", "event_body2", "event_kind")}}
_KINDS = {"f": ("fiu", "numbers"), "i": ("iu", "integers"), "b": ("b", "booleans"), "U": ("US", "strings")}
#: The run facts in ``meta`` and their types.
_META = {"method": (str, ""), "dt": ((int, float), 0.0), "steps": (int, 0), "complete": (bool, True),
         "ensemble": (bool, False)}


def _checked_file(path: Path, data) -> tuple[dict, list, dict]:
    """(arrays, names, meta) of an open trajectory file, each array checked for its kind and shape against the
    others (``t`` sets the records R, ``names`` the bodies B, ``dipole_owner`` the dipoles D, ``event_t`` the
    events N, ``meta.ensemble`` whether members lead); a ValidationError naming the file and the key otherwise."""
    def bad(key: str, what: str) -> ValidationError:
        return ValidationError(str(path), f"not a pem trajectory file: {key} {what}")

    arrays = {}
    for key in data.files:
        try:
            arrays[key] = data[key]
        except (ValueError, OSError, EOFError) as err:   # an object array (pickled), or a damaged member
            raise bad(key, f"cannot be read without running pickled code, or is damaged ({err})") from None
    meta_text = arrays.pop("meta")
    if meta_text.shape != () or meta_text.dtype.kind not in "US":
        raise bad("meta", f"is not the run's facts as JSON text (a {meta_text.dtype} array of shape "
                          f"{meta_text.shape})")
    try:
        meta = json.loads(str(meta_text))
    except ValueError:
        raise bad("meta", "is not JSON text") from None
    if not isinstance(meta, dict):
        raise bad("meta", f"is not a JSON object (got {type(meta).__name__})")
    for key, (types, default) in _META.items():
        meta.setdefault(key, default)
        if not isinstance(meta[key], types) or (types is int and isinstance(meta[key], bool)):
            raise bad(f"meta.{key}", f"is {meta[key]!r}, not a {getattr(types, '__name__', 'number')}")
    names = arrays.pop("names")
    if names.ndim != 1 or names.dtype.kind not in "US" or len(names) == 0:
        raise bad("names", f"is not a list of body names (a {names.dtype} array of shape {names.shape})")
    t = arrays["t"]
    if t.ndim != 1 or t.dtype.kind not in "fiu":
        raise bad("t", f"is not a list of record times (a {t.dtype} array of shape {t.shape})")
    if len(t) == 0:
        raise bad("t", "holds no records (a run writes at least its start)")
    owner = arrays["dipole_owner"]
    sizes = {"B": len(names), "D": len(owner) if owner.ndim == 1 else -1,
             "N": len(arrays.get("event_t", t)) if arrays.get("event_t", t).ndim == 1 else -1}
    lead = arrays["quaternion"].shape[:1] if meta["ensemble"] and arrays["quaternion"].ndim else ()
    for key, value in arrays.items():
        if key in _SHAPES:
            tail, kind = _SHAPES[key]
            want = (len(t),) if key == "t" else (*lead, len(t), *(sizes.get(d, d) for d in tail))
        elif key in _WHOLE:
            tail, kind = _WHOLE[key]
            want = tuple(sizes.get(d, d) for d in tail)
        else:
            continue   # total_energy (recomputed from its parts) and arrays of later versions
        if kind is not None and value.dtype.kind not in _KINDS[kind][0]:
            raise bad(key, f"holds {value.dtype} values, not {_KINDS[kind][1]}")
        if value.shape != want:
            counts = ", ".join(f"{n} {w if n == 1 else plural}" for n, w, plural in (
                (len(t), "record", "records"), (len(names), "body", "bodies"), (sizes["D"], "dipole", "dipoles")))
            raise bad(key, f"has shape {value.shape}, expected {want} ({counts}"
                           f"{f', {lead[0]} members' if lead else ''})")
    if len(owner) and not (owner.min() >= 0 and owner.max() < len(names)):
        raise bad("dipole_owner", f"names bodies outside 0…{len(names) - 1}")
    return arrays, [str(n) for n in names], meta


# ---------------------------------------------------------------------------- measures

def relative_energy_error(traj: Trajectory) -> np.ndarray:
    """(E(t) − E(0)) / scale, (..., R); scale = max(|E(0)|, max |kinetic|) as in Trajectory.energy_drift."""
    E = traj.total_energy
    E0 = E[..., :1]
    scale = np.maximum(np.abs(E0), np.abs(traj.kinetic_energy.sum(-1)).max(axis=-1, keepdims=True))
    return (E - E0) / np.where(scale > 0, scale, 1.0)


def momentum_sphere_drift(traj: Trajectory, body: int = 0) -> dict:
    """How far body ``body``'s body-frame L path leaves its initial closed orbit on the |L| sphere.

    For a torque-free body the orbit is the cut of the sphere |L_body| = |L(0)|
    with the energy ellipsoid Σ L_k²/I_k = 2T(0). Returns ``radius``: max
    | |L(t)|/|L(0)| − 1 | (leaving the sphere) and ``orbit``: max |T(t)/T(0) − 1|
    (moving across orbits on it), both over the whole run, and ``orbit_first_half``
    over the first half of the records (a growing drift has orbit > orbit_first_half).
    """
    if traj.ensemble:
        raise ValueError("pass one ensemble member (traj.member(e))")
    Lb = np.linalg.norm(traj.angular_momentum_body[:, body], axis=-1)
    T = traj.kinetic_energy[:, body]
    r = np.abs(Lb / Lb[0] - 1) if Lb[0] > 0 else np.abs(Lb)
    o = np.abs(T / T[0] - 1) if T[0] > 0 else np.abs(T)
    half = max(1, len(T) // 2)
    return {"radius": float(r.max()), "orbit": float(o.max()), "orbit_first_half": float(o[:half].max())}


# ---------------------------------------------------------------------------- drawing


def _single(traj: Trajectory) -> Trajectory:
    """Ensemble runs are drawn through their first member."""
    return traj.member(0) if traj.ensemble else traj


def plot_energy(traj: Trajectory, path) -> Path:
    """Energies and relative energy error against time → PNG at ``path``."""
    traj = _single(traj)
    fig = figure(8, 7)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    t = traj.t
    for label, E in (("kinetic", traj.kinetic_energy.sum(-1)), ("gravity", traj.gravity_energy.sum(-1)),
                     ("field", traj.field_energy.sum(-1)), ("dipole–dipole", traj.dipole_energy)):
        if np.any(E):
            ax1.plot(t, E, lw=1, label=label)
    ax1.plot(t, traj.total_energy, "k", lw=1.5, label="total")
    ax1.set_ylabel("energy (J)")
    ax1.legend(loc="best", fontsize="small")
    ax1.set_title(f"energies ({traj.method}, dt = {traj.dt:g} s)")
    ax2.plot(t, relative_energy_error(traj), "C3", lw=1, label="E − E₀")
    friction = traj.friction_work is not None and np.any(traj.friction_work)
    if friction or traj.driver_work is not None:
        scale = np.abs(traj.total_energy[:1]).max()
        scale = max(scale, float(np.abs(traj.kinetic_energy.sum(-1)).max()))
        W = (traj.friction_work if friction else 0.0) - (traj.driver_work if traj.driver_work is not None else 0.0)
        what = " + ".join(["E"] + (["friction work"] if friction else [])) + (
            " − drivers' work" if traj.driver_work is not None else "")
        ax2.plot(t, (traj.total_energy + W - traj.total_energy[0]) / (scale or 1.0), "C2", lw=1,
                 label=f"{what} − E₀ (integration error)")
        ax2.legend(loc="best", fontsize="small")
    if traj.events is not None and len(traj.events):
        for ax in (ax1, ax2):  # one marker per impact time (simultaneous contacts share one)
            for k, te in enumerate(sorted(set(traj.events.t))):
                ax.axvline(te, color="0.6", lw=0.8, ls=":", label="impact" if k == 0 and ax is ax1 else None)
        ax1.legend(loc="best", fontsize="small")
    ax2.set_ylabel("(E − E₀) / scale")
    ax2.set_xlabel("t (s)")
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    return save(fig, path, partial_note(traj))


def plot_omega(traj: Trajectory, path) -> Path:
    """Lab angular-velocity components of the first MAX_OMEGA_PANELS bodies → PNG."""
    traj = _single(traj)
    n = min(len(traj.names), MAX_OMEGA_PANELS)
    fig = figure(8, 2.2 * n + 1)
    axes = np.atleast_1d(fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0])
    for b, ax in enumerate(axes):
        for k, c in enumerate("xyz"):
            ax.plot(traj.t, traj.omega[:, b, k], lw=1, label=f"ω_{c}")
        ax.set_ylabel(f"{drawable(traj.names[b])}\nω (rad/s)")
        ax.legend(loc="upper right", fontsize="small", ncol=3)
    axes[-1].set_xlabel("t (s)")
    more = f" (first {n} of {len(traj.names)} bodies)" if n < len(traj.names) else ""
    axes[0].set_title("angular velocity, lab frame" + more)
    fig.tight_layout()
    return save(fig, path, partial_note(traj))


def plot_momentum_sphere(trajs, path, body: int = 0) -> Path:
    """Body-frame L paths of body ``body`` on the |L(0)| sphere → PNG (the manual's figure 4.2).

    trajs: one Trajectory or a dict label → Trajectory (e.g. one per method).
    """
    if isinstance(trajs, Trajectory):
        trajs = {trajs.method or "run": trajs}
    trajs = {k: _single(v) for k, v in trajs.items()}
    import mpl_toolkits.mplot3d  # noqa: F401  (registers the 3d projection)

    fig = figure(7, 7)
    ax = fig.add_subplot(projection="3d")
    first = next(iter(trajs.values()))
    R = float(np.linalg.norm(first.angular_momentum_body[0, body]))
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 37), np.linspace(0, np.pi, 19))
    ax.plot_wireframe(R * np.cos(u) * np.sin(v), R * np.sin(u) * np.sin(v), R * np.cos(v),
                      color="0.8", lw=0.4)
    for i, (label, tr) in enumerate(trajs.items()):
        L = tr.angular_momentum_body[:, body]
        ax.plot(L[:, 0], L[:, 1], L[:, 2], color=f"C{i}", lw=1, label=drawable(str(label)))
        ax.scatter(*L[0], color=f"C{i}", s=12)
    ax.set_xlabel("L₁")
    ax.set_ylabel("L₂")
    ax.set_zlabel("L₃")
    lim = 1.1 * max(R, max(float(np.abs(t.angular_momentum_body[:, body]).max()) for t in trajs.values()))
    lim = lim if lim > 0 else 1.0
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_zlim(-lim, lim)
    ax.set_box_aspect((1, 1, 1))
    ax.legend(loc="upper left", fontsize="small")
    ax.set_title(f"body-frame angular momentum of {drawable(repr(first.names[body]))} (kg·m²/s)")
    return save(fig, path, partial_note(trajs))


def plot_top_view(traj: Trajectory, path, sources=None) -> Path:
    """Dipole paths (centres of mass for bodies without dipoles) seen from above → PNG.

    sources: optional (S,3) lab positions of fixed magnets to mark.
    """
    traj = _single(traj)
    fig = figure(7, 7)
    ax = fig.add_subplot()
    owners = set(int(o) for o in traj.dipole_owner)
    paths = [traj.dipole_position[:, d, :2] for d in range(traj.dipole_position.shape[1])]
    paths += [traj.center_of_mass[:, b, :2] for b in range(len(traj.names)) if b not in owners]
    for i, p in enumerate(paths[:MAX_TOP_VIEW_PATHS]):
        ax.plot(p[:, 0], p[:, 1], lw=0.8, color=f"C{i % 10}")
        ax.plot(p[-1, 0], p[-1, 1], "o", ms=3, color=f"C{i % 10}")
    if sources is not None and len(sources):
        s = np.asarray(sources, float).reshape(-1, 3)
        ax.plot(s[:, 0], s[:, 1], "k^", ms=8, label="fixed magnets")
        ax.legend(loc="best", fontsize="small")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title("paths seen from above (dots: final positions)")
    fig.tight_layout()
    return save(fig, path, partial_note(traj))


def plot_energy_errors(trajs: dict, path) -> Path:
    """|relative energy error| against time, one curve per labelled trajectory, log scale → PNG."""
    fig = figure(8, 5)
    ax = fig.add_subplot()
    for i, (label, tr) in enumerate(trajs.items()):
        tr = _single(tr)
        err = np.abs(relative_energy_error(tr))
        ax.semilogy(tr.t[1:], np.maximum(err[1:], 1e-17), lw=1, color=f"C{i}",
                    label=f"{drawable(str(label))} (dt = {tr.dt:g} s)")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("|E − E₀| / scale")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="best", fontsize="small")
    ax.set_title("relative energy error by method")
    fig.tight_layout()
    return save(fig, path)


def plot_outputs(outdir, pngdir=None, body: int | None = None) -> list[Path]:
    """All FIGURES for the run in ``outdir`` (its trajectory.npz), written to ``pngdir`` (default: outdir);
    for a ``gas`` run's folder (gas.npz) the gas figures of :mod:`.gas_plot` instead. ``body``: the index of the
    body whose L path is drawn (default the first; a gas has none to choose).

    Only a published output set is read (its manifest lists the file, size and SHA-256 agree: a folder left by an
    interrupted publication, a stale or foreign file is refused by name); the PNGs join the run's set when they
    go into its folder, or make a set of their own elsewhere."""
    from ..io.outset import OutputSet, read_manifest, verified

    m = read_manifest(outdir)
    if m is not None and "gas.npz" in m["files"] and "trajectory.npz" not in m["files"]:
        from .gas_plot import plot_gas_outputs

        if body is not None:   # it was taken in silence
            raise ValidationError("body", f"{outdir} holds a gas run: it has particles, no bodies to choose; drop it")
        return plot_gas_outputs(outdir, pngdir)
    traj = read_trajectory(verified(outdir, "trajectory.npz", "run output"))
    body = 0 if body is None else body
    if not 0 <= body < len(traj.names):
        n = len(traj.names)
        raise ValidationError("body", f"body index {body} out of range: the run has {n} bod{'y' if n == 1 else 'ies'} "
                                      f"({', '.join(map(repr, traj.names[:5]))}{', …' if n > 5 else ''}), indices 0 to "
                                      f"{n - 1}")
    pngdir = Path(pngdir) if pngdir is not None else Path(outdir)
    same = pngdir.resolve() == Path(outdir).resolve()
    with OutputSet(pngdir, "plot", extend=same) as out:
        paths = [plot_energy(traj, out.staging / "energy.png"),
                 plot_omega(traj, out.staging / "omega.png"),
                 plot_momentum_sphere(traj, out.staging / "momentum_sphere.png", body=body),
                 plot_top_view(traj, out.staging / "top_view.png")]
        out.publish(complete=traj.complete)
    return [out.outdir / p.name for p in paths]


def compare_methods(scene, methods, *, t_end=None, dt=None, record_interval=None, path=None,
                    sphere_path=None, body: int = 0) -> dict:
    """Run ``scene`` with each of ``methods`` and return {method: Trajectory}.

    dt: one step for all (s) or a dict method → step. With ``path`` the
    energy-error figure is written there, with ``sphere_path`` the L-sphere figure.
    """
    from ..engine.simulate import simulate

    out = {}
    for m in methods:
        step = dt.get(m) if isinstance(dt, dict) else dt
        out[m] = simulate(scene, method=m, dt=step, t_end=t_end, record_interval=record_interval)
    if path is not None:
        plot_energy_errors(out, path)
    if sphere_path is not None:
        plot_momentum_sphere(out, sphere_path, body=body)
    return out
