"""Messages in the panel's words: the add-on's own error (:class:`AddonError`, naming the object) and the core's
messages translated from scene-file paths (``bodies[0].dipoles[1]``) to the objects and fields a user sees
(:func:`object_message`)."""

from __future__ import annotations

import re

from ..pem_physics.errors import PemError


class AddonError(PemError):
    """A user-facing problem with the Blender scene; the message names the object."""


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 object``, ``2 objects`` (``words`` for an irregular plural)."""
    return f"{n} {word if n == 1 else words or word + 's'}"

#: Core setting paths in the panel's words: (pattern of the path, the setting's UI name and where it is).
_PANEL_NAMES = (
    (r"settings\.dt", "Time Step dt (Scene ▸ Magnetic Pendulum)"),
    (r"settings\.t_end", "frame range (Output ▸ Frame Range)"),
    (r"settings\.record_interval", "Substeps per Frame (Scene ▸ Magnetic Pendulum)"),
    (r"settings\.method", "Integrator (Scene ▸ Magnetic Pendulum)"),
    (r"gravity", "Gravity (Scene ▸ Magnetic Pendulum)"),
    (r"rotating_field\.?\w*", "Rotating field B1, B2, ω (Scene ▸ Magnetic Pendulum)"),
    (r"field", "External Field (Scene ▸ Magnetic Pendulum)"),
    (r"friction", "Friction (Scene ▸ Magnetic Pendulum)"),
    (r"mu0", "μ₀ (Scene ▸ Magnetic Pendulum)"),
    (r"periodic_box", "Periodic Box (Scene ▸ Magnetic Pendulum)"),
    (r"restitution", "Restitution (Scene ▸ Magnetic Pendulum)"),
    (r"contact_friction", "Contact Friction μ (Scene ▸ Magnetic Pendulum)"),
    (r"contact_model", "Contacts (Scene ▸ Magnetic Pendulum)"),
    (r"walls", "the Wall objects (Physics ▸ Magnetic Pendulum ▸ Role: Wall)"),
)
_BODY_FIELDS = {
    "mass_properties": "mass properties (Physics ▸ Magnetic Pendulum ▸ Mass Properties)",
    "inertia": "inertia (Physics ▸ Magnetic Pendulum ▸ Mass Properties)",
    "mass": "mass (Physics ▸ Magnetic Pendulum ▸ Mass Properties)",
    "angular_velocity": "Angular Velocity (Physics ▸ Magnetic Pendulum)",
    "hinge": "hinge axis (Physics ▸ Magnetic Pendulum)",
    "motion": "motion (Physics ▸ Magnetic Pendulum)",
    "translate": "Translate (Physics ▸ Magnetic Pendulum)",
    "velocity": "Velocity (Physics ▸ Magnetic Pendulum)",
    "restitution": "Own Restitution (Physics ▸ Magnetic Pendulum ▸ Contacts)",
    "contact_friction": "Own Friction μ (Physics ▸ Magnetic Pendulum ▸ Contacts)",
}

#: A wall's own settings (``walls[k].<key>``) in the panel's words: the wall object's Contacts box.
_WALL_FIELDS = {
    "restitution": "Own Restitution (Physics ▸ Magnetic Pendulum ▸ Contacts)",
    "contact_friction": "Own Friction μ (Physics ▸ Magnetic Pendulum ▸ Contacts)",
    "friction_law": "Friction Law (Physics ▸ Magnetic Pendulum ▸ Contacts)",
    "gliding_friction": "Gliding μ (Physics ▸ Magnetic Pendulum ▸ Contacts)",
    "rolling_resistance": "Rolling Resistance (Physics ▸ Magnetic Pendulum ▸ Contacts)",
    "spin_resistance": "Spin Resistance (Physics ▸ Magnetic Pendulum ▸ Contacts)",
}


#: Scene-file settings a core message may tell the user to set, in the panel's words.
_PANEL_PHRASES = (
    ('contact_model = "surface"', "Contacts: Rolling and Sliding (Scene ▸ Magnetic Pendulum)"),
    ('contact_model = "impacts"', "Contacts: Impacts (Scene ▸ Magnetic Pendulum)"),
    ('role = "free" and translate = true', "role Free with Translate on (Physics ▸ Magnetic Pendulum)"),
    ("set the wall's inside = true", "turn the wall's Container on (Physics ▸ Magnetic Pendulum)"),
    ("set the wall's inside = false", "turn the wall's Container off (Physics ▸ Magnetic Pendulum)"),
    ("remove the body's contact_friction (the table's gliding_friction applies)",
     "turn the body's Own Friction off (the table's Gliding μ applies)"),
    ("make the table Coulomb's", "set the table's Friction Law to Coulomb (Physics ▸ Magnetic Pendulum)"),
    ("set a contact_friction on the table (or the body, or the scene)",
     "turn Own Friction on for the table (or the body), or set the scene's Contact Friction μ"),
    ("has gliding_friction = 0 s/m", "has Gliding μ 0 s/m"),
    ("set the table's gliding_friction above 0 (s/m)",
     "set the table's Gliding μ above 0 s/m (Physics ▸ Magnetic Pendulum ▸ Contacts)"),
    ("give its centre on the body, in body coordinates (m)",      # a sphere (a rim: the add-on's own check first)
     "give its centre on the object (object coordinates); Fit Contact fits it to the mesh"),
)


def _contact_label(objects, i: int, j: int) -> str:
    """``contact rim #j`` or ``contact sphere #j``: the kind of object i's contact item j, as its panel lists it."""
    items = getattr(getattr(objects[i], "pem", None), "contacts", ()) if i < len(objects) else ()
    kind = getattr(items[j], "kind", "SPHERE") if j < len(items) else "SPHERE"
    return f"contact {'rim' if kind == 'RIM' else 'sphere'} #{j}"


def object_message(msg: str, objects, walls=()) -> str:
    """A core message in the panel's words: ``bodies[i].dipoles[j]`` → ``Object 'name' dipole #j`` (and
    ``contacts[j]`` → ``contact sphere #j`` or ``contact rim #j``, ``walls[k]`` → ``Object 'name' (wall)``), a leading
    ``bodies[i].field: …`` → ``Object 'name': <the field's UI name and where it is>: …``, a scene setting's
    path → its UI name and panel, and the scene-file settings of :data:`_PANEL_PHRASES` the same."""
    def name(i: int) -> str:
        return f"Object '{objects[i].name}'" if i < len(objects) else f"bodies[{i}]"

    for phrase, ui in _PANEL_PHRASES:
        msg = msg.replace(phrase, ui)
    names = {o.name for o in objects} | {w.name for w in walls}
    m = re.match(r"'([^']+)'", msg)
    if m and m[1] in names:          # the core names a body by its name alone: say it is the object
        msg = "Object " + msg

    msg = re.sub(r"bodies\[(\d+)\]\.dipoles\[(\d+)\]\.?", lambda m: f"{name(int(m[1]))} dipole #{m[2]}"
                 + (" " if m[0].endswith(".") else ""), msg)
    msg = re.sub(r"bodies\[(\d+)\]\.contacts\[(\d+)\]\.?", lambda m: f"{name(int(m[1]))} "
                 f"{_contact_label(objects, int(m[1]), int(m[2]))}" + (" " if m[0].endswith(".") else ""), msg)
    msg = re.sub(r"walls\[(\d+)\]\.(\w+)", lambda m: (f"walls[{m[1]}]: {_WALL_FIELDS[m[2]]}" if m[2] in _WALL_FIELDS
                                                      else m[0]), msg)   # "(wall) rolling_resistance: …" before
    msg = re.sub(r"walls\[(\d+)\]\.?", lambda m: (f"Object '{walls[int(m[1])].name}' (wall)" if int(m[1]) < len(walls)
                                                  else m[0].rstrip(".")) + (" " if m[0].endswith(".") else ""), msg)
    m = re.match(r"bodies\[(\d+)\]\.?(\w*)", msg)
    if m:
        field = _BODY_FIELDS.get(m[2], m[2])
        rest = msg[m.end():]
        rest = rest.lstrip(".") if not field or not rest.startswith(".") else " " + rest[1:]
        return f"{name(int(m[1]))}: {field}{rest}" if field else f"{name(int(m[1]))}{rest}"
    for pattern, ui in _PANEL_NAMES:
        m = re.match(pattern + r"(?=[:\[. ]|$)", msg)
        if m:
            return ui + msg[m.end():]
    return msg
