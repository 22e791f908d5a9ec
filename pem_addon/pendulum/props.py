"""Blender properties: per object (``Object.pem``) and per scene (``Scene.pem``).

Lengths the user types are in scene units (Blender units × ``unit_settings.scale_length`` =
metres), and so are velocities (Blender units per second; Blender shows them × scale_length, in
m/s); masses kg, densities kg/m³, moments A·m², fields T, angular velocities rad/s, inertia kg·m².
Dipole positions and moments are in object coordinates (they move and turn with the object;
positions are scaled with it, moments are not).
"""

from __future__ import annotations

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from ...pem_physics.model import DEFAULT_METHOD, METHODS, MU0
from ..frames import steps_per_frame
from ..keyframes import clear_live_deltas

ROLE_ITEMS = [
    ("PENDULUM", "Pendulum", "Rotates about a fixed pivot", "CON_PIVOT", 0),
    ("FREE", "Free (top)",
     "Rotates freely about its centre of mass; with Translate on it also flies, falls and bounces",
     "ORIENTATION_GIMBAL", 1),
    ("FIXED", "Fixed magnet", "Stays put; its dipoles act on the moving bodies", "SNAP_ON", 2),
    ("DRIVEN", "Driven magnet", "Moves on a prescribed path (constant velocity or elliptic orbit)", "DRIVER", 3),
    ("WALL", "Wall", "A static wall for contact spheres (plane, sphere, cylinder or box fitted to the object)",
     "MOD_PHYSICS", 4),
]
ROLE_TO_CORE = {"PENDULUM": "pendulum", "FREE": "free", "FIXED": "fixed", "DRIVEN": "driven"}

METHOD_DESCRIPTIONS = {
    "splitting4": "Symplectic splitting, 4th order (default): orthonormal to round-off, no energy drift",
    "splitting2": "Symplectic splitting, 2nd order",
    "pem-rk4": "The original PEM engine's RK4 (for parity with PEM outputs)",
    "pem-euler": "The original PEM engine's explicit Euler",
    "dop853": "Adaptive 8th-order Runge-Kutta (needs scipy, which Blender does not ship)",
}


def _method_items():
    return [(m.upper().replace("-", "_"), m, METHOD_DESCRIPTIONS.get(m, m)) for m in METHODS]


def method_name(enum_value: str) -> str:
    """Core method name of the enum identifier (``PEM_RK4`` → ``pem-rk4``)."""
    for m in METHODS:
        if m.upper().replace("-", "_") == enum_value:
            return m
    raise KeyError(enum_value)


def _step_mode_changed(self, context):
    """Switched to Time Step: a dt that does not divide the frame (the default 0.001 s at 24 or 30 fps) becomes the
    step the substeps gave, so keys stay on whole frames; a dt that divides it is kept."""
    scene = self.id_data
    fps = scene.render.fps / scene.render.fps_base
    if self.step_mode == "DT" and fps > 0 and steps_per_frame(fps, self.dt) == 0:
        self.dt = 1.0 / (fps * max(1, self.substeps))


def _tag_redraw(self, context):
    screen = getattr(context, "screen", None)
    if screen is not None:
        for area in screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()


def _live_switched(self, context):
    """Live playback switched off: the bodies back in their start pose at once (the live cache goes at the next
    frame change; on: the next update prepares one)."""
    if not self.live_playback and context.scene is not None:
        clear_live_deltas(context.scene.objects)


class PEM_PG_dipole(bpy.types.PropertyGroup):
    """A point magnetic dipole fixed in the object."""

    position: FloatVectorProperty(name="Position", subtype="XYZ", size=3, unit="LENGTH",
                                  description="Position in object coordinates", update=_tag_redraw)
    moment: FloatVectorProperty(name="Moment", subtype="XYZ", size=3, default=(0.0, 0.0, 1.0),
                                description="Magnetic moment in object axes, A·m²", update=_tag_redraw)


class PEM_PG_contact(bpy.types.PropertyGroup):
    """A contact sphere or rim fixed in the object (collision geometry only; mass comes from the mesh)."""

    kind: EnumProperty(name="Kind", items=[
        ("SPHERE", "Sphere", "A sphere: a ball, a top's rounded tip, a tippe top's body"),
        ("RIM", "Rim", "A circle around Axis: a coin's or a disc's edge (Contacts: Rolling and Sliding only)"),
    ], default="SPHERE", update=_tag_redraw)
    axis: FloatVectorProperty(name="Axis", subtype="XYZ", size=3, default=(0.0, 0.0, 1.0), update=_tag_redraw,
                              description="A rim's normal in object coordinates")
    center: FloatVectorProperty(name="Centre", subtype="XYZ", size=3, unit="LENGTH",
                                description="Centre in object coordinates (scaled with the object)", update=_tag_redraw)
    radius: FloatProperty(name="Radius", unit="LENGTH", default=0.1, precision=5, update=_tag_redraw,
                          description="Radius in object units (scaled with the object; the scale must be uniform)")


class PEM_PG_object(bpy.types.PropertyGroup):
    enabled: BoolProperty(name="Magnetic Pendulum", description="Simulate this object with PEM", default=False,
                          update=_tag_redraw)
    role: EnumProperty(name="Role", items=ROLE_ITEMS, default="PENDULUM", update=_tag_redraw)
    pivot_mode: EnumProperty(name="Pivot", items=[
        ("OBJECT", "Object", "Pivot at another object's origin (e.g. an Empty)"),
        ("POINT", "Point", "Pivot at a point in this object's coordinates"),
    ], default="OBJECT", update=_tag_redraw)
    pivot_object: PointerProperty(name="Pivot Object", type=bpy.types.Object, update=_tag_redraw)
    pivot_point: FloatVectorProperty(name="Pivot Point", subtype="XYZ", size=3, unit="LENGTH",
                                     description="Pivot in object coordinates", update=_tag_redraw)
    # --- mass properties
    include_children: BoolProperty(
        name="Include Child Meshes", default=True, update=_tag_redraw,
        description="Child meshes (not PEM bodies themselves) are part of this body's mass, like a compound "
                    "rigid body; off: the body is this mesh alone")
    inertia_source: EnumProperty(name="Inertia", items=[
        ("MESH", "Mesh (exact)", "Exact integrals over the evaluated mesh (modifiers and scale applied)"),
        ("PRIMITIVE", "Primitive", "An analytic solid fitted to the object's bounding box"),
        ("MANUAL", "Manual", "Mass, centre of mass and tensor typed in"),
    ], default="MESH")
    primitive: EnumProperty(name="Primitive", items=[
        ("CUBOID", "Box", ""), ("SPHERE", "Sphere", ""), ("CYLINDER", "Cylinder (Z)", ""),
        ("ELLIPSOID", "Ellipsoid", ""),
    ], default="CUBOID")
    mass_mode: EnumProperty(name="Mass From", items=[
        ("DENSITY", "Density", "Mass = density × volume"), ("MASS", "Mass", "Total mass given"),
    ], default="DENSITY")
    density: FloatProperty(name="Density (kg/m³)", description="Mass per volume, kg/m³ (Blender has no density "
                                                              "unit)", default=1000.0, min=0.0, soft_max=20000.0)
    mass: FloatProperty(name="Mass", description="Total mass, in the scene's mass unit", default=1.0, min=0.0,
                        soft_max=100.0, precision=4, unit="MASS")
    manual_com: FloatVectorProperty(name="Centre of Mass", subtype="XYZ", size=3, unit="LENGTH",
                                    description="In object coordinates")
    manual_inertia: FloatVectorProperty(name="Inertia", size=6, default=(1e-3, 1e-3, 1e-3, 0, 0, 0),
                                        description="Ixx, Iyy, Izz, Ixy, Ixz, Iyz about the centre of mass, "
                                                    "object axes, kg·m²", precision=6)
    # --- computed (read-only in the UI)
    computed_mass: FloatProperty(name="Mass", precision=6)
    computed_volume: FloatProperty(name="Volume", precision=6)
    computed_com: FloatVectorProperty(name="Centre of Mass", size=3, subtype="XYZ", precision=5)
    computed_moments: FloatVectorProperty(name="Principal Moments", size=3, precision=8)
    computed_axes: FloatVectorProperty(name="Principal Axes", size=9, precision=4)
    computed_inertia: FloatVectorProperty(name="Inertia", size=9)
    computed_stamp: StringProperty(name="Stamp", description="Fingerprint of the data the values were computed from")
    computed_notes: StringProperty(name="Notes", description="Warnings about the mesh the values were computed from "
                                                             "(overlapping parts, flipped normals), one per line")
    # --- motion
    angular_velocity: FloatVectorProperty(name="Angular Velocity", subtype="XYZ", size=3, unit="ROTATION",
                                          description="Initial angular velocity, world axes, per second (shown in "
                                                      "the scene's rotation unit: 57.3° is 1 rad/s)")
    use_hinge: BoolProperty(name="Hinge", description="Turn only about one axis", default=False)
    translate: BoolProperty(
        name="Translate", default=False, update=_tag_redraw,
        description="Free bodies: the centre of mass moves too, pushed by gravity, magnetic forces and contacts "
                    "(off: the body only turns about its fixed centre of mass)")
    hinge_axis: FloatVectorProperty(name="Hinge Axis", subtype="XYZ", size=3, default=(0.0, 0.0, 1.0),
                                    description="World axis")
    motion: EnumProperty(name="Motion", items=[
        ("CONSTANT_VELOCITY", "Constant Velocity", "Moves in a straight line at the Velocity"),
        ("ORBIT", "Elliptic Orbit", "PEM's analytic orbit, turning with it"),
        ("ANIMATION", "Animation", "Follows the object's own animation — keys, constraints, drivers, a moving "
                                   "parent — sampled Motion Samples times a frame (Scene ▸ Magnetic Pendulum)"),
    ], default="ORBIT")
    # One velocity per object, read by the role that has one: a driven magnet's constant velocity, or a
    # translating free body's initial centre-of-mass velocity. Both are the body's own velocity in world axes,
    # so a role change keeps a value the user would otherwise type twice.
    velocity: FloatVectorProperty(
        name="Velocity", subtype="VELOCITY", size=3,
        description="World axes: a driven magnet's constant velocity (Motion: Constant Velocity), or the initial "
                    "velocity of a translating free body's centre of mass")
    orbit_center: FloatVectorProperty(name="Orbit Centre", subtype="XYZ", size=3, unit="LENGTH")
    orbit_r1: FloatVectorProperty(name="R1", subtype="XYZ", size=3, unit="LENGTH", default=(0.05, 0.0, 0.0))
    orbit_r2: FloatVectorProperty(name="R2", subtype="XYZ", size=3, unit="LENGTH", default=(0.0, 0.05, 0.0))
    orbit_omega: FloatProperty(name="Angular Velocity", default=1.0, unit="ROTATION",
                               description="Orbital angular velocity, per second (in the scene's rotation unit)")
    orbit_phase: FloatProperty(name="Phase", subtype="ANGLE", default=0.0)
    # --- dipoles
    dipoles: CollectionProperty(type=PEM_PG_dipole)
    active_dipole: IntProperty(name="Active Dipole", default=0)
    # --- contacts (pendulum, fixed and translating free bodies: spheres; wall role: the shape fitted to the object)
    contacts: CollectionProperty(type=PEM_PG_contact)
    active_contact: IntProperty(name="Active Contact Sphere", default=0)
    use_restitution: BoolProperty(name="Own Restitution", default=False,
                                  description="Use a restitution of this object's own instead of the scene's")
    restitution: FloatProperty(name="Restitution", default=1.0, min=0.0, max=1.0, precision=3,
                               description="Coefficient of restitution e of this object's impacts (1 elastic, "
                                           "0 plastic). A pair takes the smaller where both objects set one, the "
                                           "one set where one does, else the scene's")
    use_contact_friction: BoolProperty(name="Own Friction", default=False,
                                       description="Use a friction coefficient of this object's own: it applies to "
                                                   "every pair with an object that sets none (the scene's is only "
                                                   "for pairs where neither does)")
    contact_friction: FloatProperty(name="Friction μ", default=0.0, min=0.0, soft_max=2.0, precision=3,
                                    description="Coulomb friction coefficient μ of this object's contacts "
                                                "(0 frictionless). A pair takes the smaller where both objects set "
                                                "one, the one set where one does, else the scene's")
    gliding_friction: FloatProperty(name="Gliding μ (s/m)", default=0.3, min=0.0, soft_max=2.0, precision=3,
                                    update=_tag_redraw,
                                    description="Coefficient μ of the gliding law F = −μ·N·(slip velocity), in "
                                                "seconds per metre; the table's alone (a Coulomb μ is another "
                                                "quantity and never combined with it)")
    wall_shape: EnumProperty(name="Wall Shape", items=[
        ("PLANE", "Plane", "Infinite plane through the origin; contact spheres stay on the side of local +Z"),
        ("SPHERE", "Sphere", "Sphere fitted to the bounding box (mean of the half-dimensions)"),
        ("CYLINDER", "Cylinder (Z)", "Infinite cylinder along local Z, radius from the X/Y dimensions"),
        ("BOX", "Box", "The object's bounding box"),
    ], default="PLANE", update=_tag_redraw)
    wall_inside: BoolProperty(name="Container", default=False, update=_tag_redraw,
                              description="Contact spheres stay inside the sphere, cylinder or box (off: outside)")
    friction_law: EnumProperty(name="Friction Law", items=[
        ("COULOMB", "Coulomb", "Friction up to μ times the normal force; a rolling contact sticks (μ dimensionless)"),
        ("VISCOUS", "Gliding", "Friction −μ·N·(slip velocity), as the tippe-top literature models it: never "
                               "sticks (the table's Gliding μ, in s/m)"),
    ], default="COULOMB", description="How the table rubs (Contacts: Rolling and Sliding)")
    rolling_resistance: FloatProperty(
        name="Rolling Resistance", default=0.0, min=0.0, soft_max=0.01, precision=5, unit="LENGTH", update=_tag_redraw,
        description="Lever arm δ of the couple −N·δ that resists a body rolling on this table (a ball's coefficient of "
                    "rolling resistance times its radius); 0: none (Contacts: Rolling and Sliding)")
    spin_resistance: FloatProperty(
        name="Spin Resistance", default=0.0, min=0.0, soft_max=0.01, precision=5, unit="LENGTH", update=_tag_redraw,
        description="Lever arm δ of the couple −N·δ that resists a body turning about the table's normal where it "
                    "touches (drilling friction); 0: none (Contacts: Rolling and Sliding)")
    # --- bake bookkeeping
    baked: BoolProperty(name="Baked", default=False)
    # Which bake keyed this object: a token of its own, kept in the scene's record too (Scene.pem.bake_objects),
    # since a copy of the object copies these properties and must not be taken for the object baked
    bake_key: StringProperty(name="Bake Key", description="Token naming this object in its scene's bake record")
    pre_bake_matrix: FloatVectorProperty(name="Pre-bake Basis", size=16)  # written by older versions; unused
    pre_bake_state: StringProperty(name="Pre-bake Transform",
                                   description="Transform values before the bake, the start pose of a re-bake (JSON)")
    # The user's own animation while the object plays its bake action (keyframes.use_own_action): kept
    # here (a counted reference, so the action survives saving) and put back by Delete Bake.
    user_action: PointerProperty(name="Own Animation", type=bpy.types.Action,
                                 description="The object's own action from before the bake, restored by Delete Bake")
    user_slot: StringProperty(name="Own Animation Slot", description="Its slot identifier (Blender 4.4+)")
    user_had_animation: BoolProperty(name="Had Animation Data", default=False)


def _own_range_from_scene(self, context):
    """Turning Scene Frame Range off starts the simulation's own range at the scene's (a point cache's default)."""
    if not self.use_scene_range and context is not None and context.scene is not None:
        scene = context.scene
        if scene.pem == self:
            self.frame_start, self.frame_end = scene.frame_start, scene.frame_end


class PEM_PG_scene(bpy.types.PropertyGroup):
    # --- the simulation's frame range (its cache's start and end, as Blender's point caches have)
    use_scene_range: BoolProperty(name="Scene Frame Range", default=True, update=_own_range_from_scene,
                                  description="The simulation covers the scene's frame range; off: a range of "
                                              "its own (Start, End), as a point cache has")
    frame_start: IntProperty(name="Start", default=1, min=-1048574, max=1048574,
                             description="Frame on which the simulation starts")
    frame_end: IntProperty(name="End", default=250, min=-1048574, max=1048574,
                           description="Frame on which the simulation stops")
    # --- the bake's record (pem_addon.pendulum.cache): its inputs' fingerprint and the frames it covers
    bake_inputs: StringProperty(name="Baked Inputs", description="Fingerprint of what the bake read (JSON)")
    bake_frame_start: IntProperty(name="Baked From", description="First frame of the bake")
    bake_frame_end: IntProperty(name="Baked To", description="Last frame of the bake")
    bake_objects: StringProperty(name="Baked Objects",
                                 description="The objects the bake keyed: {bake key: [name, session uid]} (JSON)")
    use_scene_gravity: BoolProperty(name="Scene Gravity", default=True,
                                    description="Use the scene's gravity (Scene properties; none when its Gravity "
                                                "checkbox is off)")
    gravity: FloatVectorProperty(name="Gravity", subtype="ACCELERATION", size=3, default=(0.0, 0.0, -9.81))
    field_mode: EnumProperty(name="External Field", items=[
        ("NONE", "None", ""), ("UNIFORM", "Uniform", ""), ("ROTATING", "Rotating", "B1 cos ωt + B2 sin ωt"),
    ], default="NONE", update=_tag_redraw)
    field: FloatVectorProperty(name="B", size=3, subtype="XYZ", description="Uniform field, T", precision=5)
    field_b1: FloatVectorProperty(name="B1", size=3, subtype="XYZ", default=(1e-3, 0, 0), precision=5)
    field_b2: FloatVectorProperty(name="B2", size=3, subtype="XYZ", default=(0, 1e-3, 0), precision=5)
    field_omega: FloatProperty(name="ω", default=1.0, unit="ROTATION",
                               description="Field angular velocity, per second (in the scene's rotation unit)")
    mu0: FloatProperty(name="μ₀", description="Vacuum permeability, T·m/A", default=MU0, precision=10, min=0.0)
    friction: FloatProperty(name="Friction", description="Pivot friction coefficient c (torque −cω), N·m·s",
                            default=0.0, min=0.0, precision=6)
    method: EnumProperty(name="Integrator", items=_method_items(),
                         default=DEFAULT_METHOD.upper().replace("-", "_"))
    step_mode: EnumProperty(name="Step", items=[
        ("SUBSTEPS", "Substeps per Frame", ""), ("DT", "Time Step", ""),
    ], default="SUBSTEPS", update=_step_mode_changed)
    # no hard maximum: Blender would clamp a larger value silently; a bake of too many steps is refused with
    # the number instead (scenes.MAX_BAKE_STEPS)
    substeps: IntProperty(name="Substeps", description="Integration steps per frame (the slider goes to 256; any "
                                                       "number may be typed, up to a bake of 10⁹ steps)",
                          default=16, min=1, soft_max=256)
    dt: FloatProperty(name="dt", description="Time step, s. When it divides the frame time (0.001 at 25 fps: 40 "
                                             "steps a frame) keys land on frames; else it is used as it is and keys "
                                             "fall at the step times (a little under a frame apart)",
                      default=1e-3, min=1e-12, soft_min=1e-6, precision=6, unit="TIME_ABSOLUTE")
    motion_samples: IntProperty(
        name="Motion Samples", default=4, min=1, soft_max=64,
        description="Samples per frame of animated pivots and of driven magnets with Motion: Animation; the "
                    "simulation follows a smooth spline through them (more samples for motions faster than a "
                    "frame, as a shaken pivot)")
    use_periodic: BoolProperty(name="Periodic Box", default=False)
    restitution: FloatProperty(name="Restitution", default=1.0, min=0.0, max=1.0, precision=3,
                               description="Coefficient of restitution e of a pair where neither object sets its "
                                           "own (1 elastic, 0 plastic)")
    contact_model: EnumProperty(name="Contacts", items=[
        ("IMPACTS", "Impacts", "Bodies with contact spheres bounce off each other and off walls; a resting contact "
                               "slides without friction"),
        ("SURFACE", "Rolling and Sliding", "One free body stands on one plane wall, the table: it slides, rolls, "
                                           "spins and lifts off with friction (tops, coins, balls)"),
    ], default="IMPACTS")
    contact_friction: FloatProperty(name="Contact Friction μ", default=0.0, min=0.0, soft_max=2.0, precision=3,
                                    description="Coulomb friction coefficient μ of a pair where neither object "
                                                "sets its own (0 frictionless); an object's Own Friction applies "
                                                "wherever it is set")
    show_contacts: BoolProperty(name="Contacts", default=True, update=_tag_redraw,
                                description="Draw contact spheres and walls")
    box: FloatVectorProperty(name="Box", size=3, subtype="XYZ", unit="LENGTH", default=(1.0, 1.0, 1.0))
    show_dipoles: BoolProperty(name="Dipoles", default=True, update=_tag_redraw)
    show_pivots: BoolProperty(name="Pivots", default=True, update=_tag_redraw)
    show_field_lines: BoolProperty(name="Field Lines", default=False, update=_tag_redraw)
    arrow_scale: FloatProperty(name="Arrow Scale", default=0.1, min=0.0, unit="LENGTH",
                               description="Arrow length for a 1 A·m² moment", update=_tag_redraw)
    show_ghost_path: BoolProperty(
        name="Ghost Path", default=False, update=_tag_redraw,
        description="While you move or edit a magnet, the pivot or a body, draw where each moving body goes in the "
                    "next Ghost Seconds from the start pose (the simulation a bake would run)")
    live_playback: BoolProperty(
        name="Simulate on Playback", default=False, update=_live_switched,
        description="With nothing baked, play the simulation as the timeline plays: frames are simulated as they "
                    "are reached and kept until an edit (the moving bodies' delta transforms hold the pose); a "
                    "bake makes keys")
    basin_grid: IntProperty(name="Grid", default=64, min=2, soft_max=256, max=4096,
                            description="Release points per side of the basin map (grid × grid runs)")
    basin_extent: FloatProperty(name="Extent", default=0.0, min=0.0, unit="LENGTH", precision=4,
                                description="Half-width of the square of release points around the origin (0: "
                                            "1.6 × the farthest magnet's distance, as pem basin)")
    basin_seconds: FloatProperty(name="Seconds", default=0.0, min=0.0, soft_max=120.0, precision=1,
                                 description="How long each release point runs before it is classified, s (0: the "
                                             "simulation's frame range; as pem basin --t-end)")
    ghost_seconds: FloatProperty(name="Ghost Seconds", default=5.0, min=0.05, soft_max=30.0, precision=2,
                                 description="How far ahead the ghost path goes, s (at most the simulation's "
                                             "frame range)")
    # --- diagnostics of the last bake
    status: StringProperty(name="Status")
    last_method: StringProperty(name="Method")
    last_engine: StringProperty(name="Engine", description="numba (compiled) or numpy, for the last bake")
    last_steps: IntProperty(name="Steps")
    last_wall_time: FloatProperty(name="Wall Time", unit="TIME_ABSOLUTE")
    last_energy_drift: FloatProperty(name="Energy Drift", precision=10,
                                     description="max |E(t) − E(0)| / energy scale: friction loss included")
    last_energy_error: FloatProperty(name="Integration Error", precision=10,
                                     description="Energy balance: max |E(t) + friction work − E(0)| / energy scale")
    last_friction_loss: FloatProperty(name="Friction Loss", precision=10,
                                      description="Energy taken by pivot friction and by contacts (impacts, a "
                                                  "table's friction) by the end / energy scale")
    last_warnings: StringProperty(name="Warnings", description="Plausibility warnings of the last bake (one per line)")
    last_orthonormality: FloatProperty(name="Orthonormality Error", precision=16)
    last_energy: FloatVectorProperty(name="Energy", size=2, description="Total energy at start and end, J")


classes = (PEM_PG_dipole, PEM_PG_contact, PEM_PG_object, PEM_PG_scene)
_register, _unregister = bpy.utils.register_classes_factory(classes)


def register():
    _register()
    bpy.types.Object.pem = PointerProperty(type=PEM_PG_object)
    bpy.types.Scene.pem = PointerProperty(type=PEM_PG_scene)


def unregister():
    del bpy.types.Scene.pem
    del bpy.types.Object.pem
    _unregister()
