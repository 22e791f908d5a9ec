"""The scene file format's name and version, the keys each of its tables takes, and the limits on its values
(:mod:`.scenefile` reads it; docs/scene-format.md documents every key)."""

from __future__ import annotations

FORMAT = "pem-scene"
FORMAT_VERSION = 1

# ---------------------------------------------------------------------------- the keys of each table

TOP_KEYS = ("format", "version", "name", "units", "gravity", "mu0", "friction", "periodic_box", "field",
            "settings", "bodies", "restitution", "pair_restitution", "walls", "contact_friction", "contact_model",
            "placement_tolerance")
UNIT_KEYS = ("length", "mass", "time", "ampere")
FIELD_KEYS = ("uniform", "rotating")
ROTATING_KEYS = ("b1", "b2", "angular_velocity", "phase")
SETTINGS_KEYS = ("method", "dt", "t_end", "record_interval", "rtol", "atol")
ORIENTATION_KEYS = ("quaternion", "axes", "euler_deg")
BODY_KEYS = ("name", "role", "pivot", "position") + ORIENTATION_KEYS + (
    "angular_velocity", "angular_velocity_body", "hinge", "color", "shapes", "mass_properties", "dipoles",
    "motion", "pivot_motion", "contacts", "restitution", "contact_friction", "translate", "velocity")
CONTACT_KEYS = ("center", "radius", "axis")
PAIR_KEYS = ("bodies", "restitution")
_WALL_COMMON = ("kind", "name", "restitution", "contact_friction", "friction_law", "gliding_friction",
                "rolling_resistance", "spin_resistance")
WALL_KEYS = {"plane": _WALL_COMMON + ("point", "normal"),
             "sphere": _WALL_COMMON + ("center", "radius", "inside"),
             "cylinder": _WALL_COMMON + ("point", "direction", "radius", "inside"),
             "box": _WALL_COMMON + ("center", "half_sizes", "axes", "inside")}
MASS_PROPERTY_KEYS = ("mass", "center_of_mass", "inertia")
DIPOLE_KEYS = ("position", "moment")
MOTION_KEYS = {"constant_velocity": ("kind", "velocity"),
               "elliptic_orbit": ("kind", "center", "r1", "r2", "angular_velocity", "phase"),
               "tabulated": ("kind", "times", "positions", "orientations", "file"),
               "oscillation": ("kind", "center", "amplitudes", "angular_frequencies", "phases"),
               "uniform_rotation": ("kind", "center", "axis", "angular_velocity")}
#: The motions a pivot may follow (a point: no orbit that turns a body, no constant velocity).
PIVOT_MOTIONS = ("tabulated", "oscillation", "uniform_rotation")
#: Columns of a tabulated motion's CSV file: time, position, and optionally the orientation's quaternion.
TABLE_COLUMNS = ("t", "x", "y", "z")
TABLE_QUATERNION = ("qw", "qx", "qy", "qz")
ROLES = ("pendulum", "free", "fixed", "driven")
SHAPE_KEYS = {
    "sphere": ("kind", "mass", "density", "center", "radius"),
    "cylinder": ("kind", "mass", "density", "center", "radius", "half_length", "axis"),
    "ellipsoid": ("kind", "mass", "density", "center", "semi_axes", "axes"),
    "cuboid": ("kind", "mass", "density", "center", "half_sides", "axes"),
    "rod": ("kind", "mass", "density", "center", "half_length", "direction"),
    "point": ("kind", "mass", "density", "center"),
    "mesh": ("kind", "mass", "density", "name", "file", "vertices", "faces", "scale", "offset")
    + ORIENTATION_KEYS,
}
MESH_SUFFIXES = (".obj", ".stl", ".ply", ".off", ".glb", ".gltf")

#: Largest magnitude (SI) of any number in a scene: far beyond anything physical, and small enough that
#: squares and cubes of it (inertia, volume) cannot overflow a double.
MAX_MAGNITUDE = 1e100
#: Most time steps a file may ask for (t_end / dt); far beyond any run that could finish.
MAX_STEPS = 1e12
