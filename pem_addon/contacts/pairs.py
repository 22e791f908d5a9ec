"""Each contact pair's effective friction and restitution: a body's own values, the wall's, the scene's, and
the lines the panel shows for them."""

from __future__ import annotations

from ...pem_physics.model.scene import pair_source, pair_value
from .. import bodies, units


def contact_friction_of(obj) -> float | None:
    """The object's own friction coefficient μ of impacts, or None for the scene's."""
    p = obj.pem
    return units.exact(p, "contact_friction") if p.use_contact_friction else None


def takes_contacts(obj) -> bool:
    """Whether the object takes part in contacts as a body: a pendulum, fixed or translating free body with
    contact spheres or rims."""
    p = obj.pem
    return bool(p.contacts) and (p.role in ("PENDULUM", "FIXED") or (p.role == "FREE" and p.translate))


#: At most this many pairs are listed in an object's panel (a box of marbles has thousands).
PAIR_LINES = 6


def pair_lines(scene, obj) -> list[tuple[str, bool]]:
    """The effective e and μ of each contact pair of ``obj`` with the scene's other contact objects, as the core
    forms them (:func:`~pem_physics.model.scene.pair_value`: an unset side is not zero), each ``(text, ok)`` with
    where each value comes from; ``ok`` False for a pair that will be refused or never grips. On a gliding table
    (Rolling and Sliding) μ is the table's Gliding μ alone."""
    sp = scene.pem
    surface = sp.contact_model == "SURFACE"
    mine = obj.pem.role == "WALL"
    if not (mine or takes_contacts(obj)):
        return []

    def meets(o) -> bool:     # walls meet bodies; bodies meet walls and (impacts) bodies, not two fixed ones
        if o.pem.role == "WALL":
            return not mine
        if not takes_contacts(o):
            return False
        return mine or (not surface and not (o.pem.role == obj.pem.role == "FIXED"))

    others = [o for o in bodies.pem_objects(scene) if o is not obj and meets(o)]
    out = []
    for other in others[:PAIR_LINES]:
        wall = obj if mine else other if other.pem.role == "WALL" else None
        body = other if mine else obj
        e_a, e_b = restitution_of(obj), restitution_of(other)
        whose = {"a": f"{obj.name}'s", "b": f"{other.name}'s", "scene": "the scene's", "both": "the smaller"}
        e = pair_value(e_a, e_b, units.exact(sp, "restitution"))
        e_text = f"e {e:.3g} ({whose[pair_source(e_a, e_b)]})"
        if surface and wall is not None and wall.pem.friction_law == "VISCOUS":
            if contact_friction_of(body) is not None:
                out.append((f"With '{other.name}': the body's Own Friction μ (Coulomb) cannot meet the table's "
                            "gliding law: turn it off", False))
                continue
            mu = units.exact(wall.pem, "gliding_friction")
            ok = mu != 0.0
            out.append((f"With '{other.name}': gliding μ {mu:.3g} s/m ({wall.name}'s), {e_text}"
                        + ("" if ok else ": slides forever, never rolls"), ok))
            continue
        m_a, m_b = contact_friction_of(obj), contact_friction_of(other)
        mu = pair_value(m_a, m_b, units.exact(sp, "contact_friction"))
        ok = not (surface and mu == 0.0)
        out.append((f"With '{other.name}': μ {mu:.3g} ({whose[pair_source(m_a, m_b)]}), {e_text}"
                    + ("" if ok else ": slides forever, never rolls"), ok))
    if len(others) > PAIR_LINES:
        out.append((f"… and {len(others) - PAIR_LINES} more pairs", True))
    return out


def restitution_of(obj) -> float | None:
    """The object's own coefficient of restitution, or None for the scene's."""
    p = obj.pem
    return units.exact(p, "restitution") if p.use_restitution else None
