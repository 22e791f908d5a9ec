"""Bodies on a table in Blender (Contacts: Rolling and Sliding): a billiard ball, a coin's rim, the tippe top's
scene file imported and baked, the panel's refusals.

Oracles: the billiard ball's closed form (it slides at −μg until t* = 2v₀/(7μg), then rolls at 5v₀/7); the core run
of the scene file the add-on exports (simulated here by the core, not through the bake); geometry from the keyed
world matrices alone (the rim's lowest point on the table).
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import M, fingerprint, pem  # noqa: E402, F401
from .test_translation import FPS, key_frames, setup_scene  # noqa: E402

R = 0.03125      # BU = m: the ball's radius, dyadic (exact in single precision)
V0 = 1.5         # m/s
MU = 0.25


@pytest.fixture
def mods(pem, ext):  # noqa: F811
    out = dict(pem)
    for name in ("pem_addon.contacts.pairs", "pem_addon.keyframes", "pem_addon.pendulum.ui", "pem_physics.model.scene",
                 "pem_physics.examples"):
        out[name] = importlib.import_module(f"{ext.__name__}.{name}")
    return out


def make_table(mu=MU, law="COULOMB"):
    bpy.ops.mesh.primitive_plane_add(size=4.0, location=(0.0, 0.0, 0.0))
    table = bpy.context.object
    table.name = "Table"
    w = table.pem
    w.enabled, w.role, w.wall_shape = True, "WALL", "PLANE"
    w.friction_law = law
    if law == "VISCOUS":
        w.gliding_friction = mu
    else:
        w.use_contact_friction, w.contact_friction = True, mu
    bpy.context.view_layer.update()
    return table


def make_ball(velocity=(V0, 0.0, 0.0)):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=R, segments=32, ring_count=16, location=(0.0, 0.0, R))
    ball = bpy.context.object
    ball.name = "Ball"
    p = ball.pem
    p.enabled, p.role, p.translate, p.velocity = True, "FREE", True, velocity
    p.inertia_source, p.mass, p.manual_com = "MANUAL", 0.125, (0.0, 0.0, 0.0)
    j = 0.4 * 0.125 * R * R
    p.manual_inertia = (j, j, j, 0.0, 0.0, 0.0)
    item = p.contacts.add()
    item.center, item.radius = (0.0, 0.0, 0.0), R
    bpy.context.view_layer.update()
    return ball


def import_example(mods, tmp_path, core):
    """Save the core scene ``core`` as a scene file and import it into an empty Blender scene, as a user would:
    (core, the file's path)."""
    path = tmp_path / "example.toml"
    mods["pem_physics.io.scene_writer"].save_scene(core, str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.pem.import_scene(filepath=str(path), adapt_scene=True) == {"FINISHED"}
    return core, path


def surface_scene(frames=18):
    scene = setup_scene(frames=frames)
    sp = scene.pem
    sp.contact_model = "SURFACE"
    sp.restitution = 0.0
    return scene


def test_billiard_ball_slides_then_rolls_in_blender(mods, tmp_path):
    scene = surface_scene()
    ball = make_ball()
    make_table()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    g = 9.81                          # the scene's gravity, as the add-on reads Blender's default (9.81 in float32)
    assert np.float32(-scene.gravity[2]) == np.float32(g)
    mu = float(np.float32(MU))        # the panel's μ, single precision
    v0 = float(np.float32(V0))
    # the inertia as the panel holds it: single precision, read as the shortest decimal that is that float
    # (what a user typing it would have typed): (2/5)MR² to 2e-8
    I = float(str(np.float32(0.4 * 0.125 * R * R)))
    # the slip v − Rω falls at μg(1 + MR²/I) (7μg/2 for I = (2/5)MR²); then it rolls at v₀ − μg·t*
    t_star = v0 / (mu * g * (1 + 0.125 * R * R / I))
    v_star = v0 - mu * g * t_star
    assert v_star == pytest.approx(5 * v0 / 7, rel=1e-7)
    x_star = v0 * t_star - 0.5 * mu * g * t_star ** 2
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        t = (f - 1) / FPS
        x = v0 * t - 0.5 * mu * g * t * t if t < t_star else x_star + v_star * (t - t_star)
        W = M(ball)
        np.testing.assert_allclose(W[:3, 3], (x, 0.0, R), atol=1e-6, err_msg=f"frame {f}")
    # a key where it starts to roll, between frames
    f_star = 1 + t_star * FPS
    assert abs(f_star - round(f_star)) > 0.01
    assert np.min(np.abs(key_frames(mods, ball) - f_star)) < 1e-4
    assert "surface" in scene.pem.last_method or "Rolling" in scene.pem.status, (scene.pem.last_method,
                                                                              scene.pem.status)
    # the panel says what the cloth took: (2/7)·½Mv₀², of the start's energy ½Mv₀² + MgR
    ke = 0.5 * 0.125 * v0 ** 2
    assert scene.pem.last_friction_loss == pytest.approx(2 / 7 * ke / (ke + 0.125 * g * R), rel=1e-6)
    # the exported scene (the start pose: frame 1), run by the core: the same motion
    scene.frame_set(scene.frame_start)
    out = tmp_path / "ball.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    sf = mods["pem_physics.io.scenefile"]
    traj = mods["pem_physics.engine.simulate"].simulate(sf.load_scene(str(out)))
    assert traj.events.kind == ["stick"] and traj.events.t[0] == pytest.approx(t_star, rel=1e-12)
    wm = mods["pem_physics.io.bake"].world_matrices
    M0 = np.eye(4)
    M0[:3, 3] = (0.0, 0.0, R)
    expect = wm(traj.orientation[:, 0], traj.position[:, 0], M0)
    rec_per_frame = round((len(traj.t) - 1) / (scene.frame_end - scene.frame_start))
    for i, f in enumerate(range(scene.frame_start, scene.frame_end + 1)):
        scene.frame_set(f)
        np.testing.assert_allclose(M(ball), expect[i * rec_per_frame], atol=1e-6, err_msg=f"frame {f}")


def test_a_ball_on_a_floor_of_kilometres_bakes(mods):
    """The start tolerance follows Blender's single precision of the scene's reach, at most half what the core
    takes for the smallest contact sphere: a 20 km floor under a 3 cm ball bakes (its reach's tolerance, 1 cm, is
    beyond the tenth of the ball the core takes, and a user cannot set it), the ball sliding on it."""
    surface_scene(frames=6)
    ball = make_ball()
    make_table().scale = (5000.0, 5000.0, 1.0)        # 4 m × 5000: 20 km across
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    bpy.context.scene.frame_set(6)
    assert M(ball)[2, 3] == pytest.approx(R, abs=1e-6)


def test_the_panel_shows_each_pairs_effective_friction_and_refuses_mixed_laws(mods):
    """The object panel lists the e and μ each pair takes, and whose (the pair rule: both set → the smaller, one →
    it, none → the scene's); a pair that will never grip, or mixes the gliding law with a Coulomb μ, is flagged;
    the bake of the mixed pair is refused in the panel's words, the scene left as it was, and a frictionless table
    is said in the bake's warnings."""
    from .test_translation import _Layout

    contacts, ui = mods["pem_addon.contacts.pairs"], mods["pem_addon.pendulum.ui"]
    scene = surface_scene(frames=4)
    ball = make_ball()
    table = make_table()
    lines = lambda o: contacts.pair_lines(scene, o)  # noqa: E731
    assert lines(ball) == [("With 'Table': μ 0.25 (Table's), e 0 (the scene's)", True)]
    assert lines(table) == [("With 'Ball': μ 0.25 (Table's), e 0 (the scene's)", True)]
    ball.pem.use_contact_friction, ball.pem.contact_friction = True, 0.125
    assert lines(ball) == [("With 'Table': μ 0.125 (the smaller), e 0 (the scene's)", True)]
    ball.pem.use_contact_friction, table.pem.use_contact_friction = False, False
    (text, ok), = lines(ball)
    assert text == "With 'Table': μ 0 (the scene's), e 0 (the scene's): slides forever, never rolls" and not ok
    layout = _Layout()
    ui.draw_scene(layout, bpy.context)
    assert "'Ball' with 'Table': μ 0 (the scene's), e 0 (the scene's): slides forever, never rolls" in layout.labels
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    assert "never rolls" in scene.pem.last_warnings and "Own Friction on for the table" in scene.pem.last_warnings
    bpy.ops.pem.clear_bake()
    # the gliding law: the table's own coefficient in s/m, never the scene's Coulomb μ
    scene.pem.contact_friction = 0.5
    table.pem.friction_law, table.pem.gliding_friction = "VISCOUS", 0.25
    assert lines(ball) == [("With 'Table': gliding μ 0.25 s/m (Table's), e 0 (the scene's)", True)]
    layout = _Layout()
    ui.draw_object(layout, bpy.context, table)
    names = [n for n, _ in layout.props]
    assert "gliding_friction" in names and "contact_friction" not in names
    ball.pem.use_contact_friction = True
    (text, ok), = lines(ball)
    assert "cannot meet the table's gliding law" in text and not ok
    bpy.context.view_layer.update()
    before = fingerprint()
    with pytest.raises(RuntimeError, match=r"Object 'Ball': Own Friction μ \(Physics ▸ Magnetic Pendulum ▸ Contacts\)"
                       r".*gliding friction.*turn the body's Own Friction off \(the table's Gliding μ applies\)"):
        bpy.ops.pem.simulate_bake()
    assert fingerprint() == before
    ball.pem.use_contact_friction = False
    core = mods["pem_addon.pendulum.bake"].prepare(bpy.context).core
    assert core.walls[0].friction_law == "viscous" and core.walls[0].gliding_friction == 0.25
    assert core.walls[0].contact_friction is None


def test_a_gliding_table_without_friction_is_flagged_and_said(mods):
    """Gliding μ 0 s/m is as frictionless as Coulomb's μ 0: the pair's panel line says the ball never rolls, and
    so does the bake's warning, naming the table's Gliding μ in the panel's words."""
    contacts = mods["pem_addon.contacts.pairs"]
    scene = surface_scene(frames=4)
    ball = make_ball()
    table = make_table()
    table.pem.use_contact_friction = False
    table.pem.friction_law, table.pem.gliding_friction = "VISCOUS", 0.0
    (text, ok), = contacts.pair_lines(scene, ball)
    assert text == "With 'Table': gliding μ 0 s/m (Table's), e 0 (the scene's): slides forever, never rolls"
    assert not ok
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    said = [w for w in scene.pem.last_warnings.splitlines() if "never rolls" in w]
    assert len(said) == 1 and "Gliding μ 0 s/m" in said[0] and "set the table's Gliding μ above 0" in said[0]
    assert "gliding_friction" not in said[0], said[0]


def test_rolling_resistance_brings_the_ball_to_rest_where_the_closed_form_says(mods, tmp_path):
    """The table's Rolling Resistance δ (a length, BU = m here): the ball slides to t* as without it, then rolls,
    slowing at a = (5/7)g·δ/R, and rests x* + v*²/(2a) from where it started; the exported scene keeps δ."""
    scene = surface_scene(frames=80)
    ball = make_ball()
    table = make_table()
    table.pem.rolling_resistance = 0.001953125          # 2⁻⁹: exact in single precision
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, scene.pem.status
    g, mu, v0 = 9.81, float(np.float32(MU)), float(np.float32(V0))
    I = float(str(np.float32(0.4 * 0.125 * R * R)))
    t_star = v0 / (mu * g * (1 + 0.125 * R * R / I))
    v_star = v0 - mu * g * t_star
    x_star = v0 * t_star - 0.5 * mu * g * t_star ** 2
    # rolling: about the contact point (I + MR²) v̇/R = −δ·Mg
    a = 0.001953125 * 0.125 * g * R / (I + 0.125 * R * R)
    assert (scene.frame_end - 1) / FPS > t_star + v_star / a          # it rests before the last frame
    scene.frame_set(scene.frame_end)
    assert M(ball)[0, 3] == pytest.approx(x_star + v_star ** 2 / (2 * a), abs=1e-5)
    scene.frame_set(scene.frame_end - 1)
    x_before = M(ball)[0, 3]
    scene.frame_set(scene.frame_end)
    assert M(ball)[0, 3] == x_before                               # at rest
    scene.frame_set(scene.frame_start)
    out = tmp_path / "rest.toml"
    assert bpy.ops.pem.export_scene(filepath=str(out)) == {"FINISHED"}
    core = mods["pem_physics.io.scenefile"].load_scene(str(out))
    assert core.walls[0].rolling_resistance == 0.001953125 and core.walls[0].spin_resistance is None
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.pem.import_scene(filepath=str(out), adapt_scene=True) == {"FINISHED"}
    table = bpy.data.objects["Table"]
    assert table.pem.rolling_resistance == 0.001953125 and table.pem.spin_resistance == 0.0


def test_fit_rim_finds_a_coin_s_edge(mods):
    setup_scene(frames=2)
    a, h = 0.0125, 0.001
    bpy.ops.mesh.primitive_cylinder_add(radius=a, depth=2 * h, vertices=64, location=(0.3, 0.0, 0.2))
    coin = bpy.context.object
    p = coin.pem
    p.enabled, p.role, p.translate = True, "FREE", True
    item = p.contacts.add()
    item.kind, item.axis, item.radius = "RIM", (0.0, 0.0, 1.0), 1.0
    assert bpy.ops.pem.contact_fit() == {"FINISHED"}
    assert item.radius == pytest.approx(a, rel=1e-6) and np.allclose(item.center, 0.0, atol=1e-9)
    item.axis = (1.0, 0.0, 0.0)          # across the coin: the rim reaches its farthest vertex from that axis
    assert bpy.ops.pem.contact_fit() == {"FINISHED"}
    assert item.radius == pytest.approx(math.hypot(a, h), rel=1e-5)   # fits are rounded to six digits


def test_a_rim_off_the_body_is_refused(mods):
    surface_scene(frames=4)
    make_table()
    a = 0.0125
    bpy.ops.mesh.primitive_cylinder_add(radius=a, depth=0.002, vertices=64, location=(0.0, 0.0, 0.03),
                                        rotation=(math.pi / 2, 0.0, 0.0))
    coin = bpy.context.object
    coin.name = "Coin"
    p = coin.pem
    p.enabled, p.role, p.translate = True, "FREE", True
    item = p.contacts.add()
    item.kind, item.axis, item.radius = "RIM", (0.0, 0.0, 1.0), 2 * a
    bpy.context.view_layer.update()
    before = fingerprint()
    with pytest.raises(RuntimeError, match=r"Object 'Coin' contact rim #0 \(radius 0\.025\) reaches 0\.0125 beyond "
                                           r"the object's mesh"):
        bpy.ops.pem.simulate_bake()
    assert fingerprint() == before
    item.axis = (0.0, 0.0, 0.0)
    with pytest.raises(RuntimeError, match=r"Object 'Coin' contact rim #0: its axis is zero"):
        bpy.ops.pem.simulate_bake()


def test_rolling_coin_scene_imports_and_rolls_on_its_circle(mods, tmp_path):
    """The example's coin (a rim on the table), imported and baked: its rim's lowest point stays on the table and
    its centre on the closed-form circle, at every frame (from the keyed world matrices alone)."""
    core, _ = import_example(mods, tmp_path, mods["pem_physics.examples"].rolling_coin(turns=0.5))
    coin = bpy.data.objects["coin"]
    assert coin.pem.contacts[0].kind == "RIM"
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, bpy.context.scene.pem.status
    scene = bpy.context.scene
    a, R = core.bodies[0].contacts[0].radius, 0.1
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        W = M(coin)
        axis = W[:3, 2] / np.linalg.norm(W[:3, 2])
        low = W[2, 3] - a * np.linalg.norm(np.array([0.0, 0.0, 1.0]) - axis[2] * axis)
        assert abs(low) <= 1e-6, f"frame {f}: the rim is {low:g} BU off the table"
        assert abs(math.hypot(W[0, 3], W[1, 3]) - R) <= 1e-4 * R, f"frame {f}: off the circle"


def make_coin(a, d, rotation, location, m=0.0075):
    """A coin (a cylinder mesh of radius a and thickness d, mass m, its inertia typed in), role Free, translating,
    its bottom face's edge a contact rim."""
    bpy.ops.mesh.primitive_cylinder_add(radius=a, depth=d, vertices=64, rotation=rotation, location=location)
    coin = bpy.context.object
    coin.name = "Coin"
    p = coin.pem
    p.enabled, p.role, p.translate = True, "FREE", True
    i1, i3 = m * (a * a / 4 + d * d / 12), m * a * a / 2
    p.inertia_source, p.mass, p.manual_com = "MANUAL", m, (0.0, 0.0, 0.0)
    p.manual_inertia = (i1, i1, i3, 0.0, 0.0, 0.0)
    item = p.contacts.add()
    item.kind, item.center, item.axis, item.radius = "RIM", (0.0, 0.0, -0.5 * d), (0.0, 0.0, 1.0), a
    bpy.context.view_layer.update()
    return coin


def test_a_coin_let_go_on_its_edge_falls_and_rests_flat(mods):
    """A coin (its bottom face's edge a contact rim) let go at rest with its face 60° from the table: it falls onto
    that face and lies still on it — its axis vertical and its face on the table (from the keyed world matrices
    alone), the last frames the same."""
    scene = surface_scene(frames=24)
    make_table(mu=0.5)
    a, d, th = 0.0125, 0.002, math.radians(60.0)
    coin = make_coin(a, d, (0.0, th, 0.0), (0.0, 0.0, a * math.sin(th) + 0.5 * d * math.cos(th)))
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, scene.pem.status
    ends = []
    for f in (scene.frame_end - 1, scene.frame_end):
        scene.frame_set(f)
        ends.append(M(coin))
    W = ends[-1]
    axis = W[:3, 2] / np.linalg.norm(W[:3, 2])
    assert abs(abs(axis[2]) - 1.0) <= 1e-9, f"the coin's axis {axis} is not vertical"
    assert abs(W[2, 3] - 0.5 * d) <= 1e-6, f"its centre is {W[2, 3]:g} BU up, not half its thickness"
    assert np.allclose(ends[0], ends[1], rtol=0, atol=1e-7)


def test_a_coin_dropped_nearly_flat_bounces_flat_in_blender(mods):
    """A coin (its bottom face's edge a contact rim) turned 3e-4 rad from flat, dropped with its lowest point H = 2 cm
    above a table of restitution e = 0.5: within STRIKE_TILT of flat its whole edge strikes (laid flat
    about its lowest point), so it bounces straight up, flat, as a ball would — its face's height at every keyed
    frame is the closed form (falling from H, leaving the k-th impact at e^k·√(2gH) while that outruns a step's
    g·dt, then at rest) and its axis stays vertical. (Struck at one point it rattled on its far sides, tilting and
    going into the table between frames.)"""
    scene = surface_scene(frames=24)
    scene.pem.restitution = 0.5
    make_table(mu=0.3)
    a, d, H, tilt = 0.0125, 0.002, 0.02, 3e-4
    coin = make_coin(a, d, (tilt, 0.0, 0.0), (0.0, 0.0, H + 0.5 * d * math.cos(tilt) + a * math.sin(tilt)))
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, scene.pem.status
    g = float(np.float32(9.81))
    e, dt = float(np.float32(0.5)), 1.0 / (FPS * scene.pem.substeps)
    t_hit = math.sqrt(2 * H / g)

    def height(t):
        """The bottom face's centre's height above the table at t: before the first impact its lowest point falls
        from H (the centre a·sin(tilt) above it); after, a ball's bounces with restitution e."""
        if t <= t_hit:
            return H - 0.5 * g * t * t + a * math.sin(tilt)
        v, t0 = math.sqrt(2 * g * H), t_hit
        while e * v > g * dt:
            v *= e
            if t <= t0 + 2 * v / g:
                return v * (t - t0) - 0.5 * g * (t - t0) ** 2
            t0 += 2 * v / g
        return 0.0

    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        W = M(coin)
        axis = W[:3, 2] / np.linalg.norm(W[:3, 2])
        face = W[2, 3] - 0.5 * d * axis[2]
        t = (f - scene.frame_start) / FPS
        assert abs(face - height(t)) <= 1e-6, f"frame {f}: its face is {face:g} BU up, not {height(t):g}"
        if t > t_hit:
            assert np.hypot(axis[0], axis[1]) <= 1e-6, f"frame {f}: the coin's axis {axis} is not vertical"


def test_refusals_name_the_object_and_leave_the_scene_as_it_was(mods):
    scene = surface_scene(frames=4)
    ball = make_ball()
    make_table()

    def expect_error(match):
        bpy.context.view_layer.update()
        before = fingerprint()
        with pytest.raises(RuntimeError, match=match):
            bpy.ops.pem.simulate_bake()
        assert fingerprint() == before

    scene.pem.contact_model = "IMPACTS"
    ball.pem.contacts[0].kind = "RIM"
    expect_error(r"Object 'Ball' contact rim #0 ?:? ?a rim stands on a table only in the surface contact model: "
                 r"set Contacts: Rolling and Sliding \(Scene ▸ Magnetic Pendulum\)")
    ball.pem.contacts[0].kind = "SPHERE"
    bpy.data.objects["Table"].pem.friction_law = "VISCOUS"    # ignored under Impacts: nothing to refuse
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    bpy.ops.pem.clear_bake()
    scene.pem.contact_model = "SURFACE"
    ball.location = (0.0, 0.0, 0.5 * R)
    expect_error(r"Object 'Ball' contact sphere #0 ?:? ?starts .* m inside 'Table': raise the body")
    ball.location = (0.0, 0.0, R)
    # a curved table: a sphere wall the ball starts on the wrong side of
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, location=(0.0, 0.0, 2.0))
    bowl = bpy.context.object
    bowl.name = "Bowl"
    bowl.pem.enabled, bowl.pem.role, bowl.pem.wall_shape, bowl.pem.wall_inside = True, "WALL", "SPHERE", True
    table = bpy.data.objects["Table"]
    table.pem.enabled = False
    expect_error(r"Object 'Ball'.*starts outside the sphere 'Bowl', the side it may not enter: move it, or turn the "
                 r"wall's Container off \(Physics ▸ Magnetic Pendulum\)")
    bpy.data.objects.remove(bowl)
    table.pem.enabled = True
    second = make_ball()
    second.location = (1.0, 0.0, R)
    expect_error(r"Contacts \(Scene ▸ Magnetic Pendulum\): the surface model moves one body on a table; this scene "
                 r"moves 2")


@pytest.mark.parametrize("key,value,label", [
    ("rolling_resistance", 1.0, "Rolling Resistance"), ("spin_resistance", 1.0, "Spin Resistance"),
    ("gliding_friction", float("nan"), "Gliding μ")])
def test_a_tables_own_setting_refused_is_named_by_its_field_in_the_panel(mods, key, value, label):
    """A refused value of the table's own (Rolling Resistance longer than the ball's radius, a Gliding μ of NaN) read
    "Object 'Table' (wall) rolling_resistance: …", the scene file's key: it names the panel's field and where it is."""
    surface_scene(frames=4)
    make_ball()
    table = make_table(law="VISCOUS" if key == "gliding_friction" else "COULOMB")
    setattr(table.pem, key, value)
    bpy.context.view_layer.update()
    before = fingerprint()
    with pytest.raises(RuntimeError) as err:
        bpy.ops.pem.simulate_bake()
    msg = str(err.value)
    assert f"Object 'Table' (wall): {label} (Physics ▸ Magnetic Pendulum ▸ Contacts): " in msg, msg
    assert key not in msg, msg
    assert fingerprint() == before


@pytest.mark.slow  # 8 s of a tippe top, baked and run on the numpy engine: under 4.2 and 5.2 (noxfile.py)
def test_tippe_top_scene_file_imports_and_bakes_upside_down(mods, tmp_path):
    """The example's scene file, imported (the table with its gliding friction included) and baked: it ends
    upside down, as the core's run of the same file does."""
    sf = mods["pem_physics.io.scenefile"]
    core, path = import_example(mods, tmp_path, mods["pem_physics.examples"].tippe_top(t_end=8.0, dt=1e-3))
    table = bpy.data.objects["table"]
    assert table.pem.role == "WALL" and table.pem.friction_law == "VISCOUS"
    assert bpy.context.scene.pem.contact_model == "SURFACE"
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, bpy.context.scene.pem.status
    scene = bpy.context.scene
    scene.frame_set(scene.frame_end)
    top = bpy.data.objects["tippe top"]
    assert M(top)[2, 2] < -0.99                       # its axis points down: turned over
    traj = mods["pem_physics.engine.simulate"].simulate(sf.load_scene(str(path)))
    assert traj.orientation[-1, 0, 2, 2] < -0.99


def test_marble_in_a_bowl_imports_and_swings_as_the_closed_form(mods, tmp_path):
    """A curved table: the example's marble in a spherical bowl, imported (the bowl a sphere wall object, inside)
    and baked. At every frame the keyed marble lies on the bowl (its centre R − r from the bowl's) and at the closed
    form's angle θ(t) = 2 arcsin(k sn(K − ω₀t, k)), ω₀² = 5g/(7(R − r))."""
    from scipy.special import ellipj, ellipk

    import_example(mods, tmp_path, mods["pem_physics.examples"].marble_in_a_bowl(swings=1.0))
    bowl = bpy.data.objects["bowl"]
    assert bowl.pem.role == "WALL" and bowl.pem.wall_shape == "SPHERE" and bowl.pem.wall_inside
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, bpy.context.scene.pem.status
    scene = bpy.context.scene
    R, r, th0 = 0.15, 0.008, np.radians(25.0)
    k = np.sin(th0 / 2)
    K = ellipk(k * k)
    w0 = np.sqrt(5 * 9.81 / (7 * (R - r)))
    fps = scene.render.fps / scene.render.fps_base
    marble = bpy.data.objects["marble"]
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        c = M(marble)[:3, 3]
        assert abs(np.linalg.norm(c - (0.0, 0.0, R)) - (R - r)) <= 1e-6, f"frame {f}: off the bowl"
        t = (f - scene.frame_start) / fps
        exact = 2 * np.arcsin(k * ellipj(K - w0 * t, k * k)[0])
        assert abs(np.arctan2(c[0], R - c[2]) - exact) <= 1e-5, f"frame {f}"


def test_a_marble_typed_onto_its_bowl_bakes_from_the_bowl(mods, tmp_path):
    """Placed on the bowl by typed single-precision values, 26 nm in: within what Blender can store, so the bake
    starts it on the bowl (refused before: "starts 2.6e-08 m inside"); a marble 10 µm in is still refused."""
    import_example(mods, tmp_path, mods["pem_physics.examples"].marble_in_a_bowl(swings=0.2))
    marble, scene = bpy.data.objects["marble"], bpy.context.scene
    centre, R, r = np.array([0.0, 0.0, 0.15]), 0.15, 0.008
    x = M(marble)[:3, 3]
    out = (x - centre) / np.linalg.norm(x - centre)
    exact = mods["pem_addon.units"]._EXACT
    for key in [k for k in marble.keys() if k.startswith(exact)]:
        del marble[key]                               # as a user typed it: no exact value kept beside
    marble.location = tuple(centre + (R - r + 26e-9) * out)
    bpy.context.view_layer.update()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, scene.pem.status
    scene.frame_set(scene.frame_start)
    assert abs(np.linalg.norm(M(marble)[:3, 3] - centre) - (R - r)) <= 1e-7
    bpy.ops.pem.clear_bake()
    marble.location = tuple(centre + (R - r + 1e-5) * out)
    bpy.context.view_layer.update()
    with pytest.raises(RuntimeError, match=r"starts 1e-05 m inside 'bowl'|starts 9\.99\d*e-06 m inside 'bowl'"):
        bpy.ops.pem.simulate_bake()


def test_a_table_bake_reports_progress_stops_when_asked_and_esc_changes_nothing(mods):
    from .test_cancel import _Context, _Event, _operator, _Recorder

    surface_scene(frames=48)                        # 768 steps: progress every 256
    make_ball()
    make_table()
    add_bake = mods["pem_addon.pendulum.bake"]
    plan = add_bake.prepare(bpy.context)
    seen = []
    traj = add_bake.run(plan, progress=seen.append, stop=lambda: len(seen) >= 1)
    assert not traj.complete and seen == [pytest.approx(1 / 3)] and traj.t[-1] < 0.75 * 48 / FPS
    before = fingerprint()
    wm, op = _Recorder(), _operator(mods["pem_addon.pendulum.operators"])
    ctx = _Context(wm)
    assert op.invoke(ctx, None) == {"RUNNING_MODAL"}
    assert op.modal(ctx, _Event("ESC")) == {"CANCELLED"}
    op._thread.join(timeout=60)
    assert op.reports == [({"WARNING"}, "Bake cancelled; nothing was changed")]
    assert fingerprint() == before


@pytest.mark.slow  # 3 s at 40 substeps a frame on the numpy engine: under 4.2 and 5.2 (noxfile.py)
def test_a_tippe_top_with_a_stem_rises_onto_it_in_blender(mods):
    """The tippe top of the literature with a second contact sphere at its stem's tip (which used to abort the
    bake: "one contact at a time"), started leaning 126° and spun at 5× the inversion threshold on a gliding
    table: the bake lands the stem while the ball touches, lifts the ball and leaves the top spinning on its stem,
    axis past 170° — read from the keyed world matrices alone: the stem's tip on the table, the ball clear of it."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = surface_scene(frames=72)                   # 3 s
    scene.pem.substeps = 40
    make_table(0.3, "VISCOUS")
    R, m, alpha, gamma, tilt = 0.02, 0.015, 0.3, 0.95, 2.2
    I3 = 0.4 * m * R * R
    lam = math.sqrt(m * 9.81 * R ** 3 * I3 * alpha) * (1 + alpha) ** 2 / math.sqrt(1 + alpha - gamma)
    spin = 5.0 * lam / (I3 * R * (1 - alpha))
    axis = np.array([0.0, -math.sin(tilt), math.cos(tilt)])
    bpy.ops.mesh.primitive_uv_sphere_add(radius=R, segments=32, ring_count=16,
                                         location=(0.0, 0.0, R),
                                         rotation=(tilt, 0.0, 0.0))
    top = bpy.context.object
    top.name = "Tippe Top"
    p = top.pem
    p.enabled, p.role, p.translate = True, "FREE", True
    p.inertia_source, p.mass, p.manual_com = "MANUAL", m, (0.0, 0.0, -alpha * R)
    p.manual_inertia = (gamma * I3, gamma * I3, I3, 0.0, 0.0, 0.0)
    p.angular_velocity = tuple(spin * axis)
    for centre, radius in (((0.0, 0.0, 0.0), R), ((0.0, 0.0, 1.15 * R), 0.15 * R)):
        item = p.contacts.add()
        item.center, item.radius = centre, radius
    bpy.context.view_layer.update()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, scene.pem.status
    scene.frame_set(scene.frame_end)
    W = M(top)
    assert W[2, 2] < math.cos(math.radians(170.0))              # its axis points down
    ball, stem = W[:3, 3], W[:3, :3] @ np.array([0.0, 0.0, 1.15 * R]) + W[:3, 3]
    assert abs(stem[2] - 0.15 * R) <= 1e-6                       # the stem's tip on the table
    assert ball[2] - R > 1e-3                                    # the ball clear of it


@pytest.mark.slow  # 2 s at 80 substeps a frame on the numpy engine: under 4.2 and 5.2 (noxfile.py)
def test_a_die_with_corner_spheres_tumbles_to_rest_on_a_face_in_blender(mods):
    """A 16 mm cube given a contact sphere in each corner by *Add Corner Spheres* (flush with its faces), thrown
    tumbling onto a table (e = 0.3, μ = 0.3): the bake comes to rest on a face — from the keyed world matrix alone:
    an axis vertical, the centre s/2 above the table. On a flat mesh the operator refuses by name and adds
    nothing."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = surface_scene(frames=48)                   # 2 s
    scene.pem.substeps, scene.pem.restitution = 80, 0.3
    make_table(0.3)
    s, m = 0.016, 0.0045
    bpy.ops.mesh.primitive_cube_add(size=s, location=(0.0, 0.0, 0.06), rotation=(0.4, 0.5, 0.2))
    die = bpy.context.object
    die.name = "Die"
    assert bpy.ops.pem.contact_add_corners(fraction=0.1875) == {"FINISHED"}
    p = die.pem
    assert len(p.contacts) == 8 and {round(c.radius, 9) for c in p.contacts} == {0.0015}
    assert np.allclose(sorted({abs(round(v, 7)) for c in p.contacts for v in c.center}), [0.0065])
    p.enabled, p.role, p.translate, p.velocity = True, "FREE", True, (0.6, 0.0, 0.0)
    p.inertia_source, p.mass, p.manual_com = "MANUAL", m, (0.0, 0.0, 0.0)
    p.manual_inertia = (m * s * s / 6, m * s * s / 6, m * s * s / 6, 0.0, 0.0, 0.0)
    p.angular_velocity = (12.0, -25.0, 8.0)
    bpy.context.view_layer.update()
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}, scene.pem.status
    scene.frame_set(scene.frame_end)
    W = M(die)
    assert np.max(np.abs(np.abs(W[2, :3]) - np.round(np.abs(W[2, :3])))) <= 1e-5       # a face down
    assert abs(W[2, 3] - s / 2) <= 1e-6
    bpy.ops.mesh.primitive_plane_add(size=0.1)
    flat = bpy.context.object
    with pytest.raises(RuntimeError, match=r"Object 'Plane': its mesh is flat"):
        bpy.ops.pem.contact_add_corners()
    assert len(flat.pem.contacts) == 0
