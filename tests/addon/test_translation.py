"""Free bodies that translate, in Blender: a ball dropped on a wall plane, a thrown ball, Translate off, bad input,
the panel, the engine line and estimate, import/export.

Oracles: the closed form of free flight (z(t) = z₀ − g t²/2 until the impact at t = √(2h/g); the parabola
x₀ + v t + g t²/2 of a thrown ball); core runs of the same scenes written *by hand* here from the objects'
world geometry and the numbers the test set (not through the add-on's adapters); the maximum distance g·Δt²/8
between a parabola and its chord; the fingerprint of the file before a failed bake.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import replace

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import M, fingerprint, pem  # noqa: E402, F401

R_BALL = 0.0625   # BU: dyadic, exact in single precision
H = 0.5           # drop height of the ball's lowest point above the floor
MASS = 0.125
FPS = 24
SUBSTEPS = 16     # 8 records a frame (scenes.record_plan)


@pytest.fixture
def mods(pem, ext):  # noqa: F811
    out = dict(pem)
    for name in ("pem_addon.contacts", "pem_addon.keyframes", "pem_addon.pendulum.ui", "pem_physics.model.scene"):
        out[name] = importlib.import_module(f"{ext.__name__}.{name}")
    return out


def setup_scene(frames=24, unit=1.0):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 1 + frames
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.pem.substeps = SUBSTEPS
    scene.unit_settings.scale_length = unit
    return scene


def make_ball(name="Ball", location=(0.0, 0.0, H + R_BALL), radius=R_BALL, translate=True, velocity=(0.0, 0.0, 0.0),
              contact=True):
    """A UV-sphere ball, role Free, inertia typed in (a uniform ball), its contact sphere fitted to the mesh."""
    bpy.ops.mesh.primitive_uv_sphere_add(radius=radius, segments=32, ring_count=16, location=location)
    obj = bpy.context.object
    obj.name = name
    p = obj.pem
    p.enabled, p.role, p.translate, p.velocity = True, "FREE", translate, velocity
    p.inertia_source = "MANUAL"
    p.mass = MASS
    p.manual_com = (0.0, 0.0, 0.0)
    j = 0.4 * MASS * radius ** 2
    p.manual_inertia = (j, j, j, 0.0, 0.0, 0.0)
    if contact:
        assert bpy.ops.pem.contact_add() == {"FINISHED"}  # fitted to the mesh's bounding sphere
        assert p.contacts[0].radius == pytest.approx(radius, rel=1e-6)
    bpy.context.view_layer.update()
    return obj


def make_floor(e=0.5):
    bpy.ops.mesh.primitive_plane_add(size=4.0, location=(0.0, 0.0, 0.0))
    floor = bpy.context.object
    floor.name = "Floor"
    w = floor.pem
    w.enabled, w.role, w.wall_shape = True, "WALL", "PLANE"
    w.use_restitution, w.restitution = True, e
    bpy.context.view_layer.update()
    return floor


def hand_built_run(mods, obj, t_end, walls=(), unit=1.0):
    """The core scene of the ball, written from its world matrix and the values the test set (as Blender stores
    them, single precision); one record per frame."""
    model, inertia = mods["pem_physics.model"], mods["pem_physics.model.inertia"]
    sc = mods["pem_physics.model.scene"]
    W = M(obj)
    u, _, vt = np.linalg.svd(W[:3, :3])
    p = obj.pem
    j = p.manual_inertia[0]
    mp = inertia.MassProperties(p.mass, np.zeros(3), np.diag([j, j, j]))
    s = float(np.linalg.norm(W[:3, 0]))
    contacts = tuple(sc.ContactSphere(unit * s * np.array(c.center), unit * s * c.radius) for c in p.contacts)
    body = model.Body(name=obj.name, role="free", translate=p.translate, position=unit * W[:3, 3],
                      orientation=(u @ vt).T, velocity=unit * np.array(p.velocity) if p.translate else (0.0, 0.0, 0.0),
                      angular_velocity=tuple(p.angular_velocity), mass_properties=mp, contacts=contacts)
    dt = 1.0 / (FPS * SUBSTEPS)
    scene = model.Scene(bodies=[body], gravity=tuple(bpy.context.scene.gravity), walls=tuple(walls),
                        settings=model.Settings(dt=dt, t_end=t_end, record_interval=dt * SUBSTEPS))
    return mods["pem_physics.engine.simulate"].simulate(scene)


def key_frames(mods, obj, path="location"):
    kf = mods["pem_addon.keyframes"]
    return np.array(sorted({kp.co[0] for fcs in kf._slot_fcurve_collections(obj) for fc in fcs
                            if fc.data_path == path for kp in fc.keyframe_points}))


def at(scene, f):
    scene.frame_set(int(math.floor(f)), subframe=f - math.floor(f))


# ------------------------------------------------------------------------------------------ the dropped ball

def test_dropped_ball_bounces_off_a_wall_plane_like_the_core_and_the_closed_form(mods):
    scene = setup_scene()
    ball = make_ball()
    make_floor(e=0.5)
    M0 = M(ball)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    sc = mods["pem_physics.model.scene"]
    floor = sc.StaticWall(kind="plane", name="Floor", point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), restitution=0.5)
    traj = hand_built_run(mods, ball, 1.0, walls=[floor])
    g = -scene.gravity[2]
    t_hit = math.sqrt(2 * H / g)
    assert traj.events.body2[0] == "Floor" and traj.events.t[0] == pytest.approx(t_hit, rel=1e-9)
    wm = mods["pem_physics.io.bake"].world_matrices
    expect = wm(traj.orientation[:, 0], traj.position[:, 0], M0)
    for i, f in enumerate(range(scene.frame_start, scene.frame_end + 1)):
        scene.frame_set(f)
        W = M(ball)
        np.testing.assert_allclose(W, expect[i], atol=1e-6, err_msg=f"frame {f}")
        t = (f - 1) / FPS
        if t < t_hit:  # the first fall, in closed form
            np.testing.assert_allclose(W[:3, 3], (0.0, 0.0, H + R_BALL - g * t * t / 2), atol=1e-6,
                                       err_msg=f"frame {f}")
        assert W[2, 3] >= R_BALL - 1e-6, f"through the floor at frame {f}"
        np.testing.assert_allclose(W[:3, :3], M0[:3, :3], atol=1e-6)  # a ball struck through its centre: no spin
    # it bounced: e = 0.5 ⇒ the first rebound rises e²·H
    t_top = t_hit + 0.5 * math.sqrt(2 * g * H) / g
    at(scene, 1 + t_top * FPS)
    sag = mods["pem_addon.pendulum.bake"].MAX_KEY_SAG * math.sqrt(0.6) * R_BALL  # straight keys cut the apex at most so
    assert M(ball)[2, 3] == pytest.approx(R_BALL + 0.25 * H, abs=sag)
    # a key at the impact instant, between frames, with the ball touching the floor there
    f_hit = 1 + t_hit * FPS
    assert abs(f_hit - round(f_hit)) > 0.01
    frames = key_frames(mods, ball)
    assert np.min(np.abs(frames - f_hit)) < 1e-4
    at(scene, f_hit)
    np.testing.assert_allclose(M(ball)[:3, 3], (0.0, 0.0, R_BALL), atol=1e-6)
    np.testing.assert_allclose(traj.events.position[0][0], (0.0, 0.0, R_BALL), atol=1e-12)
    assert np.all(np.diff(frames) > 0)
    st = scene.pem.status
    # the bake names the engine it ran on: compiled where numba loads (translating bodies included)
    assert f"{'compiled' if traj.info['engine'] == 'numba' else 'numpy'}" in st, st


def test_thrown_ball_follows_the_parabola_in_scene_units(mods):
    """Velocity is stored like a length, in BU/s (Blender shows it × scale_length, in m/s): with 1 BU = 1 cm,
    1 m/s is 100 BU/s. Gravity is m/s², as the add-on reads it."""
    unit = 0.01
    scene = setup_scene(frames=12, unit=unit)
    v0 = np.array([1.0, 0.5, 2.0])  # m/s
    x0 = np.array([0.25, -0.5, 1.0])  # BU
    ball = make_ball(location=tuple(x0), velocity=tuple(v0 / unit), contact=False)
    ball.pem.angular_velocity = (0.0, 0.0, 3.0)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    g = np.array(scene.gravity, float)
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        t = (f - 1) / FPS
        want = x0 + (v0 * t + 0.5 * g * t * t) / unit
        np.testing.assert_allclose(M(ball)[:3, 3], want, atol=1e-6 * np.abs(want).max(), err_msg=f"frame {f}")
        a = 3.0 * t  # the spin about z goes on about the moving centre
        np.testing.assert_allclose(M(ball)[:2, :2], [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]],
                                   atol=1e-5)


def test_a_small_fast_path_gets_sub_frame_keys_within_the_sag_bound(mods):
    """A marble in free fall: one key a frame would sag g·Δt²/8 = 2.1 mm off the parabola, a third of its radius;
    the bake keys it more densely, until the keyed path is within MAX_KEY_SAG of its size everywhere."""
    add_bake = mods["pem_addon.pendulum.bake"]
    scene = setup_scene(frames=6)
    r = 1.0 / 128
    ball = make_ball(location=(0.0, 0.0, 1.0), radius=r, contact=False)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    frames = key_frames(mods, ball)
    per_frame = (len(frames) - 1) / (scene.frame_end - scene.frame_start)
    assert per_frame == 4  # sags 2.1 mm, 0.53 mm, 0.13 mm at 1, 2, 4 keys a frame; the bound is 0.30 mm
    tol = add_bake.MAX_KEY_SAG * math.sqrt(0.6) * r
    g = -scene.gravity[2]
    worst = 0.0
    for f in np.linspace(1, scene.frame_end, 401):
        at(scene, f)
        t = (f - 1) / FPS
        worst = max(worst, abs(M(ball)[2, 3] - (1.0 - g * t * t / 2)))
    assert worst <= tol + 1e-6 and worst > 0.25 * tol


def test_path_sag_is_the_chord_distance_of_a_parabola(mods):
    add_bake = mods["pem_addon.pendulum.bake"]
    g, dt = 9.81, 1.0 / 192
    t = np.arange(0, 97) * dt
    x = np.stack([t, 0 * t, -g * t * t / 2], axis=1)
    for stride in (1, 2, 4, 8):  # the midpoint of each chord is a record: the sag is exactly g·(stride·dt)²/8
        expect = 0.0 if stride == 1 else g * (stride * dt) ** 2 / 8
        assert add_bake.path_sag(t, x, stride) == pytest.approx(expect, rel=1e-9, abs=1e-15)
    assert add_bake.path_stride(t, x, 8, tol=g * (2 * dt) ** 2 / 8 * 1.01) == 2
    # a kink inside a key interval (an impact there gets its own key) is not a sag
    kinked = x.copy()
    kinked[50:, 2] = 2 * kinked[50, 2] - kinked[50:, 2]
    assert add_bake.path_sag(t, kinked, 8) > 1e-3
    assert add_bake.path_sag(t, kinked, 8, t_events=[t[50] - 0.25 * dt]) == pytest.approx(g * (8 * dt) ** 2 / 8)


# ------------------------------------------------------------------------------------------ Translate off

def test_translate_off_keeps_the_centre_in_place(mods):
    scene = setup_scene(frames=12)
    ball = make_ball(translate=False, velocity=(5.0, 0.0, 0.0), contact=False)  # the velocity is ignored
    ball.pem.angular_velocity = (0.5, 0.0, 4.0)
    M0 = M(ball)
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    traj = hand_built_run(mods, ball, 0.5)
    assert traj.translating.tolist() == [False]
    expect = mods["pem_physics.io.bake"].world_matrices(traj.orientation[:, 0], traj.pivot[0], M0)
    for i, f in enumerate(range(scene.frame_start, scene.frame_end + 1)):
        scene.frame_set(f)
        np.testing.assert_allclose(M(ball), expect[i], atol=1e-6, err_msg=f"frame {f}")
        np.testing.assert_allclose(M(ball)[:3, 3], M0[:3, 3], atol=1e-7)  # turns, never moves
    assert "translating" not in scene.pem.status


# ------------------------------------------------------------------------------------------ bad input, clear

def test_bad_translation_input_is_named_and_changes_nothing(mods):
    scene = setup_scene(frames=4)
    ball = make_ball(translate=False)
    make_floor()

    def expect_error(match):
        bpy.context.view_layer.update()
        before = fingerprint()
        with pytest.raises(RuntimeError, match=match):
            bpy.ops.pem.simulate_bake()
        assert fingerprint() == before

    expect_error(r"Object 'Ball' has contact spheres, but it is a free body with Translate off.*Turn on Translate")
    ball.pem.translate = True
    ball.pem.use_hinge = True
    expect_error(r"Object 'Ball': Hinge and Translate are both on")
    ball.pem.use_hinge = False
    scene.pem.method = "PEM_RK4"  # PEM's own integrators have no translation
    expect_error(r"Integrator \(Scene ▸ Magnetic Pendulum\): 'pem-rk4' cannot run translating bodies \('Ball'")
    scene.pem.method = "SPLITTING4"
    ball.location.z = 0.5 * R_BALL  # starts half through the floor
    expect_error(r"Object 'Ball' contact sphere #0 and Object 'Floor' \(wall\): .* lies .* past wall 'Floor', on the "
                 r"side it may not enter")
    ball.location.z = H + R_BALL
    bpy.context.view_layer.update()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}


def test_clear_bake_puts_a_translated_ball_back(mods):
    scene = setup_scene(frames=12)
    ball = make_ball(velocity=(0.5, 0.0, 0.0))
    make_floor()
    ball.rotation_mode = "XYZ"
    ball.rotation_euler = (0.0, 0.0, 0.25)
    bpy.context.view_layer.update()
    state = (tuple(ball.location), tuple(ball.rotation_euler), ball.rotation_mode)
    before = fingerprint()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}  # a re-bake starts from the same place
    scene.frame_set(10)
    assert tuple(ball.location) != state[0]
    assert bpy.ops.pem.clear_bake() == {"FINISHED"}
    assert (tuple(ball.location), tuple(ball.rotation_euler), ball.rotation_mode) == state
    bpy.context.view_layer.update()
    assert fingerprint() == before


# ------------------------------------------------------------------------------------------ engine, panel

def test_engine_line_and_estimate_for_translating_scenes(mods):
    """Translating bodies bake on the compiled engine where numba loads: the panel says so, and the estimate
    uses that engine's prior rate; a speed measured on numba is not promised to a bake that will run numpy."""
    add_bake = mods["pem_addon.pendulum.bake"]
    setup_scene(frames=24)
    ball = make_ball(translate=False, contact=False)
    sp = bpy.context.scene.pem
    ui = mods["pem_addon.pendulum.ui"]
    jit = importlib.import_module(f"{ui.__name__.rsplit('.', 3)[0]}.pem_physics.jit")
    ball.pem.translate = True
    engine, reason = add_bake.expected_engine(bpy.context)
    assert (engine, reason) == (("numba", None) if jit.installed() else ("numpy", jit.unavailable_reason()))
    steps, seconds, measured = add_bake.estimate(bpy.context)
    assert not measured and seconds == pytest.approx(steps / add_bake.PRIOR_RATE[engine])
    sp.last_engine, sp.last_steps, sp.last_wall_time = "numba", 10_000, 0.01
    assert add_bake.estimate(bpy.context)[2] == (engine == "numba")
    sp.last_engine = "numpy"
    assert add_bake.estimate(bpy.context)[1] == pytest.approx(steps * 0.01 / 10_000)
    layout = _Layout()
    ui._engine_line(layout, bpy.context)
    text = " ".join(layout.labels)
    assert "Engine: compiled (numba; the first bake compiles it" in text if jit.installed() else "Python/numpy" in text


class _Layout:
    """Records the properties and labels a panel draws (and whether their row is enabled)."""

    def __init__(self, root=None):
        self.root = root or self
        self.enabled = True
        if root is None:
            self.props, self.labels = [], []

    def prop(self, data, name, **kw):
        self.root.props.append((name, self.enabled))

    def label(self, text="", **kw):
        self.root.labels.append(text)

    def template_list(self, ui_list, *a, **kw):
        self.root.props.append((ui_list, self.enabled))

    def operator(self, idname, **kw):
        return type("Props", (), {})()

    def _child(self, *a, **kw):
        child = _Layout(self.root)
        child.enabled = self.enabled
        return child

    row = column = box = split = _child


def test_panel_shows_translate_velocity_and_contacts_for_free_bodies(mods):
    ui = mods["pem_addon.pendulum.ui"]
    ball = make_ball(translate=False, contact=False)

    def draw():
        layout = _Layout()
        ui.draw_object(layout, bpy.context, ball)
        return dict(layout.props), layout.labels

    props, labels = draw()
    assert props["translate"] and not props["velocity"]  # Velocity greyed out until Translate is on
    assert "PEM_UL_contacts" not in props and any("when Translate is on" in t for t in labels)
    ball.pem.translate = True
    props, labels = draw()
    assert props["velocity"] and "PEM_UL_contacts" in props
    assert not props["use_hinge"]  # a translating body has no hinge: greyed out while it is off
    assert not any("numpy engine" in t for t in labels)  # translating bodies bake compiled too
    ball.pem.use_hinge = True
    props, labels = draw()
    assert any("cannot be hinged" in t for t in labels)
    ball.pem.use_hinge = False
    ball.pem.translate = False
    ball.pem.contacts.add()  # spheres left on a body that no longer translates: listed, with the reason
    props, labels = draw()
    assert "PEM_UL_contacts" in props and any("need Translate on" in t for t in labels)


# ------------------------------------------------------------------------------------------ import / export

def test_export_import_round_trip_of_translate_and_velocity(mods, tmp_path):
    setup_scene(frames=12)
    v0 = (0.1, -0.3, 1.7)  # typed: reaches the core as typed; imported: the import keeps the double beside it
    make_ball(velocity=v0)
    out = tmp_path / "scene.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    sf, sim = mods["pem_physics.io.scenefile"], mods["pem_physics.engine.simulate"]
    core = sf.load_scene(out)
    body = core.bodies[0]
    assert body.translate and body.role == "free" and len(body.contacts) == 1
    assert tuple(body.velocity) == v0  # the decimals typed, not Blender's single-precision neighbours
    a = sim.simulate(core, t_end=0.2)
    # a file with exact doubles: they survive import and export unchanged
    exact = tmp_path / "exact.toml"
    mods["pem_physics.io.scene_writer"].save_scene(replace(core, bodies=[replace(body, velocity=v0)]), exact)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.pem.import_scene(filepath=str(exact)) == {"FINISHED"}
    obj = bpy.context.scene.objects["Ball"]
    assert obj.pem.role == "FREE" and obj.pem.translate and len(obj.pem.contacts) == 1
    np.testing.assert_allclose(obj.pem.velocity, v0, rtol=1e-6)
    again = tmp_path / "again.toml"
    assert bpy.ops.pem.export_scene(filepath=str(again)) == {"FINISHED"}
    back = sf.load_scene(again).bodies[0]
    assert back.translate and tuple(back.velocity) == v0
    b = sim.simulate(sf.load_scene(again), t_end=0.2)
    assert np.abs(b.position - a.position).max() < 1e-6
    # in a scene of 1 BU = 1 cm the velocity is kept in BU/s, and exported in m/s again
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.context.scene.unit_settings.scale_length = 0.01
    assert bpy.ops.pem.import_scene(filepath=str(exact)) == {"FINISHED"}
    np.testing.assert_allclose(bpy.context.scene.objects["Ball"].pem.velocity, np.array(v0) / 0.01, rtol=1e-6)
    assert bpy.ops.pem.export_scene(filepath=str(again)) == {"FINISHED"}
    np.testing.assert_allclose(sf.load_scene(again).bodies[0].velocity, v0, rtol=1e-15)
    # a free body without translate stays so
    bpy.ops.wm.read_factory_settings(use_empty=True)
    setup_scene(frames=12)
    make_ball(translate=False, contact=False)
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    assert not sf.load_scene(out).bodies[0].translate


def test_engine_line_says_when_the_kernels_are_built_ahead_of_time(mods, monkeypatch):
    ui = mods["pem_addon.pendulum.ui"]
    core = ui.__name__.rsplit('.', 3)[0] + ".pem_physics"
    aot = importlib.import_module(f"{core}.aot")
    entries = importlib.import_module(f"{core}.engine.backends.compiled").ENTRIES
    # a build that loads, with the single-scene kernels (the extension's linux-x64 zip)
    monkeypatch.setattr(aot, "load", lambda *a: aot.Build({}, {}, dict.fromkeys(entries, [])))
    layout = _Layout()
    ui._engine_line(layout, bpy.context)
    assert layout.labels == ["Engine: compiled, built ahead of time (no compile)"]
