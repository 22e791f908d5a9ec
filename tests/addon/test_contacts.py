"""Contacts in Blender: a Newton's cradle of Blender objects, a wall object, keys at the impacts, bad input.

Oracles: core runs of the same scenes written *by hand* here from the objects' world geometry and
the properties the test set (not through the add-on's adapters); the cradle's geometry (touching
balls, one in → one out); the definition of restitution (rebound speed = e × incoming speed) read
off the keyed angles; the fingerprint of the file before a failed bake.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import M, fingerprint, pem  # noqa: E402, F401

R_BALL = 1.0 / 64   # ball radius, BU = m: dyadic, so touching balls 2r apart are exact in single precision
L = 0.25            # string length, pivot to ball centre
Z_PIVOT = 0.5
MASS = 0.0625
FPS = 24
THETA = math.radians(30.0)


@pytest.fixture
def mods(pem, ext):  # noqa: F811
    out = dict(pem)
    for name in ("pem_addon.contacts.walls", "pem_addon.keyframes", "pem_physics.model.scene"):
        out[name] = importlib.import_module(f"{ext.__name__}.{name}")
    return out


def _ball(name, x, pivot, angle=0.0):
    """A UV-sphere ball hanging from ``pivot`` (an Empty), turned by ``angle`` about y about the pivot."""
    bpy.ops.mesh.primitive_uv_sphere_add(radius=R_BALL, segments=32, ring_count=16)
    obj = bpy.context.object
    obj.name = name
    P = np.array(pivot.location)
    obj.location = tuple(P + np.array([-L * math.sin(angle), 0.0, -L * math.cos(angle)]))
    obj.rotation_euler = (0.0, angle, 0.0)
    p = obj.pem
    p.enabled = True
    p.pivot_object = pivot
    p.use_hinge = True
    p.hinge_axis = (0.0, 1.0, 0.0)
    p.inertia_source = "MANUAL"
    p.mass = MASS
    p.manual_com = (0.0, 0.0, 0.0)
    j = 0.4 * MASS * R_BALL ** 2
    p.manual_inertia = (j, j, j, 0.0, 0.0, 0.0)
    c = p.contacts.add()
    c.center, c.radius = (0.0, 0.0, 0.0), R_BALL
    return obj


def _empty(name, location):
    e = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(e)
    e.location = location
    return e


def _scene_setup(frames, substeps=40, fps=FPS):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 1 + frames
    scene.render.fps, scene.render.fps_base = fps, 1.0
    scene.pem.substeps = substeps
    return scene


def build_cradle(n=5, frames=24):
    """Five balls touching in a row along x, hinged about y, the first raised by 30° towards −x."""
    scene = _scene_setup(frames)
    balls = []
    for k in range(n):
        piv = _empty(f"Pivot.{k + 1:03d}", (2 * R_BALL * k, 0.0, Z_PIVOT))
        balls.append(_ball(f"Ball.{k + 1:03d}", 2 * R_BALL * k, piv, THETA if k == 0 else 0.0))
    bpy.context.view_layer.update()
    return scene, balls


def hand_built_run(mods, balls, dt, t_end, every, walls=(), restitution=1.0):
    """The core scene of the same balls, written from their world matrices and the numbers the test set."""
    model, inertia = mods["pem_physics.model"], mods["pem_physics.model.inertia"]
    sc = mods["pem_physics.model.scene"]
    bodies = []
    for obj in balls:
        W = M(obj)
        u, _, vt = np.linalg.svd(W[:3, :3])
        R = u @ vt
        pivot = np.array(obj.pem.pivot_object.matrix_world.translation)
        com = R.T @ (W[:3, 3] - pivot)  # body axes = the ball's axes, origin at the pivot
        j = obj.pem.manual_inertia[0]  # as Blender stores it (single precision), like the mass
        mp = inertia.MassProperties(obj.pem.mass, com, np.diag([j, j, j]))
        bodies.append(model.Body(name=obj.name, position=pivot, orientation=R.T, mass_properties=mp,
                                 hinge=(0.0, 1.0, 0.0), contacts=(sc.ContactSphere(com, obj.pem.contacts[0].radius),)))
    scene = model.Scene(bodies=bodies, gravity=tuple(bpy.context.scene.gravity), restitution=restitution,
                        walls=tuple(walls), settings=model.Settings(dt=dt, t_end=t_end, record_interval=dt * every))
    return mods["pem_physics.engine.simulate"].simulate(scene)


def swing_angle(W, pivot):
    """Angle (rad) of the ball's string from the vertical, positive towards +x."""
    d = W[:3, 3] - pivot
    return math.atan2(d[0], -d[2])


def test_cradle_bake_one_in_one_out_matches_the_core(mods):
    scene, balls = build_cradle()
    M0 = [M(b) for b in balls]
    pivots = [np.array(b.pem.pivot_object.location) for b in balls]
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    dt = 1.0 / (FPS * 40)
    traj = hand_built_run(mods, balls, dt, 24 / FPS, 40)  # a record every frame
    wm = mods["pem_physics.io.bake"].world_matrices
    expect = [wm(traj.orientation[:, k], traj.pivot[k], M0[k]) for k in range(5)]
    t_hit = traj.events.t[0]
    assert traj.events.body1[:4] == [b.name for b in balls[:4]]  # one resolution along the chain
    f_hit = 1 + t_hit * FPS
    swung = 0.0
    for i, f in enumerate(range(scene.frame_start, scene.frame_end + 1)):
        scene.frame_set(f)
        for k, obj in enumerate(balls):
            np.testing.assert_allclose(M(obj), expect[k][i], atol=1e-6, err_msg=f"{obj.name} frame {f}")
        second = traj.events.t[4] if len(traj.events.t) > 4 else np.inf
        if f_hit + 1 <= f < 1 + second * FPS:  # after the first impact, before ball 5 comes back
            for k in range(4):
                assert abs(swing_angle(M(balls[k]), pivots[k])) < 1e-6, f"{balls[k].name} moved at frame {f}"
            swung = max(swung, swing_angle(M(balls[4]), pivots[4]))
    assert swung > math.radians(20.0)  # ball 5 swings out (to ~30° for e = 1)
    assert scene.pem.status.startswith("Baked")


def test_keys_at_the_impact_instant_hold_the_pose_there(mods):
    scene, balls = build_cradle(frames=12)
    M0 = [M(b) for b in balls]
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    traj = hand_built_run(mods, balls, 1.0 / (FPS * 40), 12 / FPS, 40)
    t_hit = traj.events.t[0]
    f_hit = 1 + t_hit * FPS
    assert abs(f_hit - round(f_hit)) > 0.01  # the impact falls between frames
    kf = mods["pem_addon.keyframes"]
    for k, obj in enumerate(balls):
        frames = sorted({kp.co[0] for fcs in kf._slot_fcurve_collections(obj) for fc in fcs
                         if fc.data_path == "rotation_quaternion" for kp in fc.keyframe_points})
        sub = [f for f in frames if abs(f - round(f)) > 1e-4]
        assert sub and min(abs(f - f_hit) for f in sub) < 1e-4, f"{obj.name}: no key at the impact frame {f_hit}"
        U = np.stack([traj.orientation[0, k], traj.events.orientation[0][k]])
        expect = mods["pem_physics.io.bake"].world_matrices(U, traj.pivot[k], M0[k])[1]
        scene.frame_set(int(f_hit), subframe=f_hit - int(f_hit))
        np.testing.assert_allclose(M(obj), expect, atol=1e-6, err_msg=obj.name)
    # the strike is sharp: ball 1 is at the bottom at the impact key and ball 5 leaves from there
    scene.frame_set(int(f_hit), subframe=f_hit - int(f_hit))
    assert abs(swing_angle(M(balls[0]), np.array(balls[0].pem.pivot_object.location))) < 1e-5


def test_wall_plane_rebounds_with_e_half(mods):
    scene = _scene_setup(frames=60, substeps=10, fps=100)
    piv = _empty("Pivot", (0.0, 0.0, Z_PIVOT))
    ball = _ball("Ball", 0.0, piv, THETA)
    bpy.ops.mesh.primitive_plane_add(size=0.1, location=(R_BALL, 0.0, Z_PIVOT - L), rotation=(0.0, -math.pi / 2, 0.0))
    wall = bpy.context.object
    wall.name = "Wall"
    w = wall.pem
    w.enabled, w.role, w.wall_shape = True, "WALL", "PLANE"
    w.use_restitution, w.restitution = True, 0.5
    bpy.context.view_layer.update()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    # the core's run of the same: a plane at x = r facing −x, e = 0.5
    sc = mods["pem_physics.model.scene"]
    plane = sc.StaticWall(kind="plane", name="Wall", point=(R_BALL, 0.0, Z_PIVOT - L), normal=(-1.0, 0.0, 0.0),
                          restitution=0.5)
    traj = hand_built_run(mods, [ball], 1e-3, 0.6, 10, walls=[plane])
    assert traj.events.body2[0] == "Wall"
    t_hit = traj.events.t[0]
    f_hit = 1 + t_hit * 100
    pivot = np.array(piv.location)

    def angle_at(f):
        scene.frame_set(int(math.floor(f)), subframe=f - math.floor(f))
        return swing_angle(M(ball), pivot)

    # speeds from the keyed angles: the frames just before and after the impact, and the impact key itself
    f0, f1 = math.floor(f_hit), math.ceil(f_hit)
    a_hit = angle_at(f_hit)
    w_in = (a_hit - angle_at(f0 - 1)) / ((f_hit - f0 + 1) / 100)
    w_out = (angle_at(f1 + 1) - a_hit) / ((f1 + 1 - f_hit) / 100)
    assert abs(a_hit) < 1e-5  # it strikes hanging straight down, where the plane is
    assert w_in > 2.0 and w_out < 0.0
    assert -w_out == pytest.approx(0.5 * w_in, rel=2e-3)
    for f in range(scene.frame_start, scene.frame_end + 1):  # never through the wall
        scene.frame_set(f)
        assert M(ball)[0, 3] <= 1e-6


def test_bad_contact_input_is_named_and_changes_nothing(mods):
    scene, balls = build_cradle(n=3, frames=4)

    def expect_error(match):
        bpy.context.view_layer.update()  # matrix_world follows the edits (the bake's frame_set would do it)
        before = fingerprint()
        with pytest.raises(RuntimeError, match=match):
            bpy.ops.pem.simulate_bake()
        assert fingerprint() == before

    extra = balls[2].pem.contacts.add()
    extra.radius = 0.0
    expect_error(r"Object 'Ball\.003' contact sphere #1: radius must be > 0")
    balls[2].pem.contacts.remove(1)
    balls[2].pem.contacts[0].center = (0.0, 0.0, 1100 * R_BALL)  # beyond a thousand ball radii: off the body
    expect_error(r"Error: Object 'Ball\.003' contact sphere #0 center: the contact sphere #0 of 'Ball\.003' is centred "
                 r"17\.2 m from the body's centre of mass, beyond 1000 times the body's size \(0\.0156 m: .*\); "
                 r"a contact sphere is part of the body: give its centre on the object \(object coordinates\); "
                 r"Fit Contact fits it to the mesh\n$")
    balls[2].pem.contacts[0].center = (0.0, 0.0, 0.0)
    balls[1].location.x += 0.1 * R_BALL  # ball 2 overlaps ball 3 at the start
    bpy.context.view_layer.update()
    expect_error(r"'Ball\.002' and 'Ball\.003' overlap")
    balls[1].location.x -= 0.1 * R_BALL
    balls[1].scale = (1.0, 1.0, 1.5)
    expect_error(r"Object 'Ball\.002' contact sphere #0: the object's scale .* is not uniform")
    balls[1].scale = (1.0, 1.0, 1.0)
    balls[0].pem.role = "FREE"
    expect_error(r"Object 'Ball\.001' has contact spheres, but it is a free body with Translate off")
    balls[0].pem.role = "DRIVEN"
    expect_error(r"Object 'Ball\.001' has contact spheres, but only pendulums, fixed bodies and translating free")
    balls[0].pem.role = "PENDULUM"
    scene.pem.method = "PEM_RK4"
    expect_error(r"Integrator .*splitting4")
    scene.pem.method = "SPLITTING4"
    bpy.ops.mesh.primitive_plane_add(size=0.1)
    wall = bpy.context.object
    wall.name = "Floor"
    wall.pem.enabled, wall.pem.role, wall.pem.wall_shape = True, "WALL", "BOX"
    expect_error(r"Object 'Floor' wall \(box\): every dimension must be > 0")
    wall.pem.wall_shape = "PLANE"
    wall.location.z = Z_PIVOT - L + 0.5 * R_BALL  # cuts through the hanging balls
    bpy.context.view_layer.update()
    expect_error(r"contact sphere of 'Ball\.00\d' lies .* past wall 'Floor', on the side it may not enter")
    wall.location.z = 0.0
    bpy.context.view_layer.update()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}


def test_failed_or_cancelled_contact_bake_changes_nothing_and_clear_restores(mods, monkeypatch):
    scene, balls = build_cradle(n=3, frames=12)
    balls[1].keyframe_insert("location", frame=1)  # user animation on one ball
    before = fingerprint()
    add_bake = mods["pem_addon.pendulum.bake"]
    calls = {"n": 0}

    def stop():  # Esc at the first poll: the compiled engine polls once per call of its kernels (the first: 64 steps)
        calls["n"] += 1
        return True

    with pytest.raises(add_bake.AddonError, match="did not finish"):
        add_bake.bake(bpy.context, stop=stop)
    assert calls["n"] >= 1
    assert fingerprint() == before
    kf = mods["pem_addon.keyframes"]
    real = kf.write_transform_keys
    written = {"n": 0}

    def fails_on_the_third(obj, *args, **kw):  # keys of two balls are written, then the bake fails
        written["n"] += 1
        if written["n"] == 3:
            raise RuntimeError("disk full")
        return real(obj, *args, **kw)

    monkeypatch.setattr(kf, "write_transform_keys", fails_on_the_third)
    with pytest.raises(RuntimeError, match="disk full"):
        bpy.ops.pem.simulate_bake()
    assert fingerprint() == before and not any(b.pem.baked for b in balls)
    monkeypatch.setattr(kf, "write_transform_keys", real)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert fingerprint() != before
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert fingerprint()[0] == before[0]


def test_fit_contact_sphere_and_overlay(mods):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.2, location=(1.0, 2.0, 3.0))
    obj = bpy.context.object
    obj.scale = (2.0, 2.0, 2.0)
    obj.pem.enabled = True
    obj.pem.role = "FIXED"
    assert bpy.ops.pem.contact_add() == {"FINISHED"}
    c = obj.pem.contacts[0]
    c.radius = 0.05
    assert bpy.ops.pem.contact_fit() == {"FINISHED"}
    assert c.radius == pytest.approx(0.2, rel=1e-6)  # object units: the mesh's bounding sphere
    np.testing.assert_allclose(c.center, (0.0, 0.0, 0.0), atol=1e-6)
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, -1.0))
    box = bpy.context.object
    box.pem.enabled, box.pem.role, box.pem.wall_shape, box.pem.wall_inside = True, "WALL", "BOX", True
    bpy.context.view_layer.update()
    geo = mods["pem_addon.pendulum.overlay"].geometry(bpy.context)["contacts"]
    ends = geo.reshape(-1, 3)
    on_ball = ends[np.linalg.norm(ends - np.array([1.0, 2.0, 3.0]), axis=1) < 1.0]
    np.testing.assert_allclose(np.linalg.norm(on_ball - np.array([1.0, 2.0, 3.0]), axis=1), 0.4, rtol=1e-5)
    assert len(geo) == 3 * 32 + 12  # three great circles of the ball (scaled), twelve box edges
    wall = mods["pem_addon.contacts.walls"].wall_of(box, 1.0)
    assert wall.kind == "box" and wall.inside
    np.testing.assert_allclose(wall.half_sizes, (0.5, 0.5, 0.5), atol=1e-6)
    np.testing.assert_allclose(wall.center, (0.0, 0.0, -1.0), atol=1e-6)
