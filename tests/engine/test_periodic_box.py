"""Periodic boxes (engine/checks.py): a body whose dipoles span more than half the box is refused before the run;
a run in which a dipole pair's minimum image switches (its separation crosses half the box, where the pair's energy
jumps) is warned of with the time, the bodies and the jump, checked against hand computations."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from pem_physics import simulate
from pem_physics.errors import ValidationError
from pem_physics.model.inertia import MassProperties
from pem_physics.model.scene import Body, Dipole, Scene, Settings

K = 1e-7   # μ₀/4π, T·m/A


def _two_bodies(rod: Body, box=(1.0, 1.0, 1.0)) -> Scene:
    """``rod`` at the origin and a one-dipole pendulum 0.3 m away along y, no gravity, in a periodic box."""
    other = Body(name="other", position=(0.0, 0.3, 0.0), mass_properties=MassProperties(0.1, np.zeros(3), np.eye(3)),
                 dipoles=(Dipole((0, 0, 0), (0, 0, 1e-3)),))
    return Scene(bodies=[rod, other], gravity=(0, 0, 0), periodic_box=box,
                 settings=Settings(dt=1e-3, t_end=0.01))


def _rod(half: float, role: str = "free", axis=(1.0, 0.0, 0.0), hinge=None) -> Body:
    """Two dipoles ±``half`` (m) along ``axis`` (body = lab axes at the start)."""
    a = np.asarray(axis, float) * half
    props = MassProperties(0.1, np.zeros(3), np.eye(3) * 1e-3) if role != "fixed" else None
    return Body(name="rod", role=role, mass_properties=props, hinge=hinge,
                dipoles=(Dipole(tuple(a), (1e-3, 0, 0)), Dipole(tuple(-a), (1e-3, 0, 0))))


def test_a_body_whose_dipoles_span_more_than_half_the_box_is_refused_by_name():
    """Two dipoles 0.6 m apart on one body in a 1 m box: each of them would see another dipole's nearest image,
    which for a dipole near the far end is not the same image; refused, naming the body, its span and the fix."""
    with pytest.raises(ValidationError, match=re.escape(
            "bodies[0].dipoles: body 'rod': its dipoles span 0.6 m along x as it turns, more than half the periodic "
            "box's 1 m along x") + ".*enlarge periodic_box to more than 1.2 m along x, or bring the body's dipoles "
            r"within 0\.5 m of each other"):
        simulate(_two_bodies(_rod(0.3)))
    # a fixed magnet keeps its orientation: its span along x is what it is, and that is what is refused
    with pytest.raises(ValidationError, match=re.escape("body 'rod': its dipoles span 0.6 m along x, more than half")):
        simulate(_two_bodies(_rod(0.3, role="fixed")))
    # turned along z it spans nothing along x: a box of 0.4 m there takes it, with 1.5 m along z
    assert simulate(_two_bodies(_rod(0.3, role="fixed", axis=(0, 0, 1)), box=(0.4, 0.4, 1.5))).info["warnings"] == []


def test_a_body_within_half_the_box_runs_and_a_hinge_limits_the_span_to_what_it_turns():
    """0.4 m in a 1 m box runs clean. A body hinged about z with its dipoles 0.6 m apart along z keeps that span
    along z and none across it (|δ·a||a_k| + |δ⊥|√(1 − a_k²) = 0 for x, y): it runs in a box of 0.5 × 0.5 × 2 m,
    where the same body turning freely could bring its 0.6 m along x, and is refused."""
    traj = simulate(_two_bodies(_rod(0.2)))
    assert traj.complete and traj.info["warnings"] == []
    hinged = _rod(0.3, role="pendulum", axis=(0, 0, 1), hinge=(0, 0, 1))
    box = (0.5, 0.5, 2.0)
    assert simulate(_two_bodies(hinged, box=box)).info["warnings"] == []
    with pytest.raises(ValidationError, match=re.escape("its dipoles span 0.6 m along x as it turns, more than half "
                                                        "the periodic box's 0.5 m along x")):
        simulate(_two_bodies(_rod(0.3, role="pendulum", axis=(0, 0, 1)), box=box))
    # a body alone has no other dipole to see through an image: nothing to refuse
    alone = Scene(bodies=[_rod(0.3)], gravity=(0, 0, 0), periodic_box=(1, 1, 1), settings=Settings(t_end=0.01))
    assert simulate(alone).complete


P = 1e-2       # A·m², both dipoles
H = 0.1        # m: the pair's offset along y (across the crossing axis), which makes the jump nonzero
L = 1.0        # m: the box along x
X0, V = 0.3, 0.45   # m, m/s: the mover starts X0 from the other along x, moving away at V


def _crossing_scene(v: float, other_role: str = "free") -> Scene:
    """A dipole along x at rest at the origin (translating free body, or a fixed magnet) and a dipole along y on a
    translating body at (X0, H, 0) moving at v along x; no gravity, dipoles so weak (forces ~1e-12 N on 0.01 kg,
    torques ~1e-12 N·m on 4e-7 kg·m²) that both keep their headings and velocities."""
    props = MassProperties(0.01, np.zeros(3), np.eye(3) * 4e-7)
    still = Body(name="still", role=other_role, mass_properties=props if other_role == "free" else None,
                 translate=other_role == "free", dipoles=(Dipole((0, 0, 0), (P, 0, 0)),))
    mover = Body(name="mover", role="free", translate=True, position=(X0, H, 0.0), velocity=(v, 0.0, 0.0),
                 mass_properties=props, dipoles=(Dipole((0, 0, 0), (0, P, 0)),))
    return Scene(bodies=[still, mover], gravity=(0, 0, 0), periodic_box=(L, L, L),
                 settings=Settings(dt=1e-3, t_end=0.8, record_interval=1e-3))


def _energy(pa, pb, s) -> float:
    s, pa, pb = (np.asarray(x, float) for x in (s, pa, pb))
    r = float(np.linalg.norm(s))
    return K / r**3 * (pa @ pb - 3 * (pa @ s) * (pb @ s) / r**2)


@pytest.mark.parametrize("other_role", ["free", "fixed"])
def test_a_pair_crossing_half_the_box_is_warned_of_with_its_time_and_energy_jump(other_role):
    """The separation x_still − x_mover = −(X0 + V t) crosses −L/2 at t* = (L/2 − X0)/V = 0.444 s: the image
    taken switches from d = (−L/2, −H, 0) to d + L x̂ = (L/2, −H, 0), and the pair's energy jumps by
    U(d + L x̂) − U(d) = 3 k P² H L / r⁵, r² = L²/4 + H², for moments P x̂ and P ŷ."""
    traj = simulate(_crossing_scene(V, other_role))
    said = [w for w in traj.info["warnings"] if "minimum image" in w]
    assert len(said) == 1, traj.info["warnings"]
    msg = said[0]
    assert msg.startswith("periodic_box: the minimum image of the dipole pair of ")
    assert "'still'" in msg and "'mover'" in msg and "enlarge periodic_box" in msg
    t_star = (L / 2 - X0) / V
    when = float(re.search(r"switched at t ≈ (\S+) s", msg).group(1))
    assert when == pytest.approx(t_star, abs=1e-6)
    assert "crossed half the box, 0.5 m, along x" in msg
    jump = float(re.search(r"energy jumped by (\S+) J", msg).group(1))
    closed = 3 * K * P**2 * H * L / (L**2 / 4 + H**2) ** 2.5
    assert closed == pytest.approx(_energy((P, 0, 0), (0, P, 0), (L / 2, -H, 0))
                                   - _energy((P, 0, 0), (0, P, 0), (-L / 2, -H, 0)), rel=1e-12)
    assert jump == pytest.approx(closed, rel=2e-3)   # the message's 3 significant digits
    # the run's own energy jumps by as much across the record interval of the crossing (it is conserved elsewhere)
    r = int(math.floor(t_star / 1e-3))
    E = traj.total_energy
    assert E[r + 1] - E[r] == pytest.approx(closed, rel=1e-3)
    assert abs(E[r] - E[0]) < 1e-3 * closed


def test_a_run_whose_pairs_stay_within_half_the_box_gets_no_warning():
    """At V/3 the separation reaches X0 + 0.8 V/3 = 0.42 m < L/2 by t_end: no switch, no warning."""
    traj = simulate(_crossing_scene(V / 3))
    assert traj.info["warnings"] == []
