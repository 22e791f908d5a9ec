"""Scenes the simulation cannot do as built are refused by name before anything changes: a pendulum hanging from
another simulated body (a chain) or from a driven magnet on a set path, a body that also has Blender's Rigid Body
physics, a body with an object constraint (Blender applies it after the bake's keys), an object the simulation
reads that a constraint ties to a simulated body or that is parented below one, and a fixed magnet or wall that
moves over the frames (the simulation holds both still).

Oracle: the scene's fingerprint (:func:`.test_addon.fingerprint`) unchanged by the refusal.
"""

from __future__ import annotations

import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import _expect_error, cube, empty, pem, pendulum_setup  # noqa: E402, F401


def _dipole(obj):
    """A fixed magnet needs a dipole."""
    d = obj.pem.dipoles.add()
    d.moment = (0.0, 0.0, 0.01)


@pytest.mark.parametrize("role", ["PENDULUM", "FREE"])
def test_a_pivot_that_is_itself_simulated_is_refused(pem, role):  # noqa: F811
    upper, _ = pendulum_setup()                          # 'Cube' swings on 'Pivot'
    lower = cube("Lower", location=(0.0, 0.0, -0.6))
    lower.pem.enabled = True
    lower.pem.pivot_object = upper                       # hung from the swinging cube: a chain
    lower.pem.density = 1000.0
    upper.pem.role = role
    _expect_error(rf"Object 'Lower': its pivot 'Cube' is itself simulated \(a {role.lower()} body\); chains of "
                  r"pendulums are not supported: pivot 'Lower' on an object the simulation does not move")


def test_a_fixed_body_is_a_pivot_still(pem):  # noqa: F811
    upper, _ = pendulum_setup()
    lower = cube("Lower", location=(0.0, 0.0, -0.6))
    lower.pem.enabled = True
    lower.pem.pivot_object = upper
    lower.pem.density = 1000.0
    upper.pem.role = "FIXED"
    _dipole(upper)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}


def test_a_body_with_blender_rigid_body_physics_is_refused(pem):  # noqa: F811
    obj, _ = pendulum_setup()
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.rigidbody.object_add() == {"FINISHED"}
    _expect_error(r"Object 'Cube' also has Blender Rigid Body physics, which overrides the bake: remove it "
                  r"\(Physics ▸ Rigid Body\)")


def test_an_active_rigid_body_on_a_fixed_body_is_refused(pem):  # noqa: F811
    pendulum_setup()
    wall = cube("Magnet", location=(0.0, 0.0, -0.8))
    wall.pem.enabled = True
    wall.pem.role = "FIXED"
    _dipole(wall)
    bpy.context.view_layer.objects.active = wall
    assert bpy.ops.rigidbody.object_add() == {"FINISHED"}
    _expect_error(r"Object 'Magnet' also has active Blender Rigid Body physics, which moves it")
    wall.rigid_body.type = "PASSIVE"
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}


@pytest.mark.parametrize("scale, match", [
    (1e-20, r"Object 'Cube' has a scale of 1e-20 on an axis, too small to simulate \(1e-12 or less\): give it a "
            r"larger scale"),
    (0.0, r"Object 'Cube' has zero scale on an axis: give it a scale other than 0")])
def test_a_tiny_scale_is_called_too_small_and_a_zero_one_zero(pem, scale, match):  # noqa: F811
    obj, _ = pendulum_setup()
    obj.scale = (scale, 1.0, 1.0)
    bpy.context.view_layer.update()
    _expect_error(match)


def _copy_location(obj, target, name="Copy Location"):
    con = obj.constraints.new("COPY_LOCATION")
    con.name = name
    con.target = target
    bpy.context.view_layer.update()                      # the pose it gives, before the fingerprint
    return con


@pytest.mark.parametrize("role", ["PENDULUM", "FREE"])
def test_a_simulated_body_with_a_constraint_is_refused_until_it_is_muted(pem, role):  # noqa: F811
    obj, _ = pendulum_setup()
    obj.pem.role = role
    anchor = empty("Anchor", location=(0.3, 0.0, -0.2))
    con = _copy_location(obj, anchor)
    _expect_error(r"Error: Object 'Cube' has the constraint 'Copy Location', which Blender applies after the bake's "
                  r"keys, so it would not move as simulated: mute or remove it \(Object Constraint properties\)$")
    con.enabled = False                                  # muted: Blender skips it, the keys play
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    frames = (bpy.context.scene.frame_start, bpy.context.scene.frame_end)
    seen = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        seen.append([tuple(row) for row in obj.matrix_world])
    assert seen[0] != seen[1]                             # it swings or spins as baked


def test_every_applied_constraint_is_named_and_a_targetless_one_is_not(pem):  # noqa: F811
    obj, _ = pendulum_setup()
    _copy_location(obj, empty("Anchor"), "Follow")
    obj.constraints.new("LIMIT_LOCATION").name = "Floor"
    obj.constraints.new("COPY_ROTATION").name = "No target"  # invalid (no target): Blender does not apply it
    bpy.context.view_layer.update()
    _expect_error(r"Object 'Cube' has the constraints 'Follow', 'Floor', which Blender applies after the bake's "
                  r"keys, so it would not move as simulated: mute or remove them")


def test_a_pivot_constrained_to_a_moving_empty_is_followed(pem):  # noqa: F811
    obj, piv = pendulum_setup()
    lead = empty("Lead", location=(0.0, 0.0, 0.1))
    lead.keyframe_insert("location", frame=1)
    lead.location = (0.05, 0.0, 0.1)
    lead.keyframe_insert("location", frame=25)
    _copy_location(piv, lead)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}     # read evaluated and sampled: nothing wrong to refuse


def test_a_pivot_constrained_to_a_simulated_body_is_refused(pem):  # noqa: F811
    obj, piv = pendulum_setup()
    other = cube("Other", location=(0.4, 0.0, -0.3))
    other.pem.enabled = True
    other.pem.role = "FREE"
    other.pem.density = 1000.0
    holder = empty("Holder", location=(0.0, 0.0, 0.1))
    piv.parent = holder                                  # through its parent's constraint
    con = _copy_location(holder, other, "Stick")
    _expect_error(r"Error: Object 'Pivot' \(the pivot of 'Cube'\): the constraint 'Stick' of its parent 'Holder' "
                  r"ties it to 'Other', which the bake moves; the simulation reads it before the bake, so it would "
                  r"move differently after it: mute or remove the constraint \(Object Constraint properties\)$")
    con.mute = True                                      # the older name of the same switch
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}


def test_a_wall_constrained_to_a_simulated_body_is_refused(pem):  # noqa: F811
    obj, _ = pendulum_setup()
    table = cube("Table", location=(0.0, 0.0, -1.0))
    table.pem.enabled = True
    table.pem.role = "WALL"
    _copy_location(table, obj)
    _expect_error(r"Error: Object 'Table': its constraint 'Copy Location' ties it to 'Cube', which the bake moves")


def _fixed_magnet(name="Magnet", location=(0.0, 0.0, -0.8)):
    magnet = cube(name, location=location)
    magnet.pem.enabled = True
    magnet.pem.role = "FIXED"
    _dipole(magnet)
    return magnet


def _table(name="Table", location=(0.0, 0.0, -1.0)):
    table = cube(name, location=location)
    table.pem.enabled = True
    table.pem.role = "WALL"
    return table


def _slide(obj, frame=12, dx=0.05):
    """Keys obj to slide dx along x from the start frame to ``frame`` (BU)."""
    obj.keyframe_insert("location", frame=1)
    obj.location.x += dx
    obj.keyframe_insert("location", frame=frame)
    bpy.context.scene.frame_set(1)


@pytest.mark.parametrize("make, what, held", [(_fixed_magnet, "a fixed magnet", "a fixed magnet"),
                                              (_table, "a wall", "walls")])
def test_a_fixed_magnet_or_wall_moved_by_its_keys_is_refused(pem, make, what, held):  # noqa: F811
    pendulum_setup()
    obj = make()
    _slide(obj)
    name = obj.name
    _expect_error(rf"Error: Object '{name}' is {what}, but its animation \(keys or drivers\) moves it over the "
                  r"simulation's frames \(at frame [\d.]+ it has left its start-frame pose\), and the simulation "
                  rf"holds {held} still there: ")
    if what == "a fixed magnet":                         # the fix offered: a driven magnet follows its animation
        obj.pem.role, obj.pem.motion = "DRIVEN", "ANIMATION"
        assert bpy.ops.pem.simulate_bake() == {"FINISHED"}


def test_a_fixed_magnet_with_a_driver_is_refused(pem):  # noqa: F811
    pendulum_setup()
    magnet = _fixed_magnet()
    fc = magnet.driver_add("location", 0)
    fc.driver.expression = "0.001 * frame"
    bpy.context.scene.frame_set(1)
    _expect_error(r"Object 'Magnet' is a fixed magnet, but its animation \(keys or drivers\) moves it .*: make it a "
                  r"driven magnet \(Motion: Animation\) to follow the motion, or remove its keys and drivers$")


def test_a_wall_whose_parent_moves_is_refused_and_a_still_one_passes(pem):  # noqa: F811
    pendulum_setup()
    table = _table()
    stand = empty("Stand", location=(0.0, 0.0, -0.5))
    table.parent = stand
    bpy.context.view_layer.update()
    _slide(stand)
    _expect_error(r"Object 'Table' is a wall, but its parent 'Stand' moves it over the simulation's frames .*: clear "
                  r"the parent \(Alt P ▸ Clear and Keep Transformation\) or stop it moving$")
    stand.animation_data_clear()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}      # a parent that stays put: the wall stays put


def test_a_fixed_magnet_constrained_to_an_animated_empty_is_refused_a_still_one_passes(pem):  # noqa: F811
    pendulum_setup()
    magnet = _fixed_magnet()
    lead = empty("Lead", location=(0.0, 0.0, -0.8))
    _copy_location(magnet, lead, "Follow")
    _slide(lead)
    _expect_error(r"Object 'Magnet' is a fixed magnet, but its constraint 'Follow' moves it over the simulation's "
                  r"frames .*: make it a driven magnet \(Motion: Animation\) to follow the motion, or mute or remove "
                  r"the constraint$")
    lead.animation_data_clear()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}      # constrained to something still: it stays put


def test_a_magnet_that_moves_only_after_the_frame_range_passes(pem):  # noqa: F811
    pendulum_setup()                                     # frames 1–25
    magnet = _fixed_magnet()
    magnet.keyframe_insert("location", frame=30)
    magnet.location.x += 0.05
    magnet.keyframe_insert("location", frame=40)
    bpy.context.scene.frame_set(1)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}


def _free_body(name="Other", location=(0.4, 0.0, -0.3)):
    body = cube(name, location=location)
    body.pem.enabled = True
    body.pem.role = "FREE"
    body.pem.density = 1000.0
    return body


def test_a_pivot_parented_to_a_simulated_body_is_refused_until_the_parent_is_cleared(pem):  # noqa: F811
    obj, piv = pendulum_setup()
    other = _free_body()
    piv.parent = other                                   # plain parenting, no constraint
    bpy.context.view_layer.update()
    _expect_error(r"Error: Object 'Pivot' \(the pivot of 'Cube'\): its parent 'Other' is moved by the bake; the "
                  r"simulation reads it before the bake, so it would move with 'Other' after it: clear the parent "
                  r"\(Alt P ▸ Clear and Keep Transformation\)$")
    piv.parent = None
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}


def test_a_pivot_under_a_child_of_a_simulated_body_is_refused(pem):  # noqa: F811
    obj, piv = pendulum_setup()
    other = _free_body()
    holder = empty("Holder", location=(0.0, 0.0, 0.1))
    holder.parent = other
    piv.parent = holder
    bpy.context.view_layer.update()
    _expect_error(r"Error: Object 'Pivot' \(the pivot of 'Cube'\): its parent 'Holder' is a child of 'Other', which "
                  r"the bake moves; the simulation reads it before the bake, so it would move with 'Other' after it: "
                  r"clear the parent")


@pytest.mark.parametrize("role", ["FIXED", "WALL"])
def test_a_fixed_magnet_or_wall_parented_to_a_simulated_body_is_refused(pem, role):  # noqa: F811
    obj, _ = pendulum_setup()
    child = _fixed_magnet("Child", location=(0.12, 0.03, -0.4)) if role == "FIXED" else _table("Child")
    child.parent = obj
    bpy.context.view_layer.update()
    _expect_error(r"Error: Object 'Child': its parent 'Cube' is moved by the bake; the simulation reads it before "
                  r"the bake, so it would move with 'Cube' after it: clear the parent")


def test_a_simulated_body_parented_to_another_is_refused(pem):  # noqa: F811
    obj, _ = pendulum_setup()
    lower = _free_body("Lower", location=(0.3, 0.0, -0.5))
    lower.parent = obj                                   # keyed in its parent's frame: the motions would add up
    bpy.context.view_layer.update()
    _expect_error(r"Error: Object 'Lower' is parented to 'Cube', which the bake moves: the bake keys it in its "
                  r"parent's frame, so the parent's motion would be added to the simulated one; clear the parent "
                  r"\(Alt P ▸ Clear and Keep Transformation\)$")


@pytest.mark.parametrize("motion, label", [("ORBIT", "Elliptic Orbit"), ("CONSTANT_VELOCITY", "Constant Velocity")])
def test_a_driven_magnet_on_a_set_path_as_a_pivot_is_refused(pem, motion, label):  # noqa: F811
    """The bake moves such a magnet as it runs, but the pendulum would swing from where it starts."""
    obj, piv = pendulum_setup()
    mover = cube("Mover", location=(0.0, 0.0, 0.1))
    mover.pem.enabled = True
    mover.pem.role, mover.pem.motion = "DRIVEN", motion
    mover.pem.velocity = (0.1, 0.0, 0.0)
    mover.pem.orbit_r1, mover.pem.orbit_r2 = (0.05, 0.0, 0.0), (0.0, 0.05, 0.0)
    mover.pem.orbit_omega = 3.0
    _dipole(mover)
    obj.pem.pivot_object = mover
    _expect_error(rf"Error: Object 'Cube': its pivot 'Mover' is a driven magnet on a set path \(Motion: {label}\), "
                  r"which a pivot cannot follow \(the simulation reads a pivot's motion before it runs\): animate "
                  r"'Mover' and set its Motion to Animation, or pivot 'Cube' on an object the simulation does not "
                  r"move$")
    for frame, x in ((1, 0.0), (25, 0.05)):              # its own animation: followed as the pivot and the magnet
        mover.location.x = x
        mover.keyframe_insert("location", frame=frame)
    bpy.context.scene.frame_set(1)
    _expect_error(r"Error: Object 'Cube': its pivot 'Mover' is a driven magnet on a set path")  # keys overridden
    mover.pem.motion = "ANIMATION"
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
