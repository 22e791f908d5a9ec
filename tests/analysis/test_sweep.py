"""Parameter sweeps: per-member friction/field in the core, members against single runs and closed forms,
grid order and files, clear errors for bad --param, interruption and blow-ups."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import numpy as np
import pytest
from cli_helpers import CtrlCProgress

from pem_physics import examples
from pem_physics.analysis.sweep import PARAMETERS, check_params, parse_param, sweep, write
from pem_physics.cli import main
from pem_physics.engine.simulate import Ensemble, simulate
from pem_physics.engine.system import compile_system
from pem_physics.errors import ValidationError
from pem_physics.model import METHODS


def params(*texts):
    return [parse_param(t) for t in texts]


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


# ---------------------------------------------------------------------------- core: per-member parameters

@pytest.mark.parametrize("method", METHODS)
def test_ensemble_members_with_their_own_friction_and_field_match_single_runs(method):
    scene = examples.three_magnet(friction=0.0, t_end=0.1, dt=1e-3)
    c = np.array([0.0, 1e-3, 5e-3])
    B = np.array([[0.0, 0.0, 0.0], [1e-4, 0.0, -2e-4], [0.0, 3e-4, 1e-4]])
    ens = simulate(scene, method=method, ensemble=Ensemble(friction=c, field=B))
    for e in range(3):
        one = simulate(replace(scene, friction=c[e], field=B[e]), method=method)
        # Same arithmetic except for c = 0 (the splitting's friction-free kick is another formula) and
        # dop853 (one adaptive step size for the whole ensemble): round-off level, relative to each array.
        tol = 1e-8 if method == "dop853" else 1e-11
        for name in ("angular_momentum", "orientation", "torque", "field_energy", "dipole_energy"):
            want = getattr(one, name)
            np.testing.assert_allclose(getattr(ens, name)[e], want, rtol=0, atol=tol * np.abs(want).max(),
                                       err_msg=f"{name} of member {e}")


def test_per_member_systems_are_marked_and_kept_off_the_compiled_kernel():
    system = compile_system(examples.three_magnet().checked())
    assert not system.per_member
    marked = Ensemble(friction=np.zeros(4)).system(system)
    assert marked.per_member
    assert Ensemble(field=np.zeros((4, 3))).system(system).per_member


def test_ensemble_parameters_are_validated():
    scene = examples.three_magnet(t_end=0.01)
    with pytest.raises(ValidationError, match=r"ensemble\.friction\[1\]: must be finite and ≥ 0"):
        simulate(scene, ensemble=Ensemble(friction=np.array([0.0, -1.0])))
    with pytest.raises(ValidationError, match=r"ensemble\.field: expected shape \(E, 3\)"):
        simulate(scene, ensemble=Ensemble(field=np.zeros((2, 2))))
    with pytest.raises(ValidationError, match="same leading size E"):
        simulate(scene, ensemble=Ensemble(friction=np.zeros(2), field=np.zeros((3, 3))))


# ---------------------------------------------------------------------------- sweep members vs independent runs

def test_sweep_members_equal_single_runs_of_the_changed_scene():
    scene = examples.three_magnet(t_end=0.5, dt=2e-3)
    res = sweep(scene, params("friction=2e-3,1e-2", "field.z=-1e-3,2e-3"))
    assert res.complete and res.members_completed == 4
    out = res.outcomes
    for i in range(4):
        c, bz = res.values["friction"][i], res.values["field.z"][i]
        one = simulate(replace(scene, friction=c, field=(0.0, 0.0, bz)), record_interval=res.record_interval)
        bob = one.dipole_position[:, 0]
        E = one.total_energy
        np.testing.assert_allclose(
            [out["energy_initial"][i], out["energy_final"][i], out["energy_max"][i]], [E[0], E[-1], E.max()],
            rtol=1e-12)
        np.testing.assert_allclose([out[f"bob_{k}_final"][i] for k in "xyz"], bob[-1], rtol=0, atol=1e-13)
        np.testing.assert_allclose([out[f"omega_{k}_final"][i] for k in "xyz"], one.omega[-1, 0], rtol=0,
                                   atol=1e-12)
        assert out["t_final"][i] == one.t[-1] == 0.5 and out["completed"][i] == 1



def test_a_sweep_of_no_time_is_refused():
    """t_end = 0 gave every member's start as its outcome: refused, naming --t-end."""
    with pytest.raises(ValidationError, match=r"--t-end: the sweep's runs must take steps"):
        sweep(examples.three_magnet(), params("friction=2e-3,1e-2"), t_end=0.0)

def test_release_points_match_scenes_built_at_that_release():
    # examples.three_magnet builds its pose independently of basin.release_orientations.
    scene = examples.three_magnet(friction=0.01, t_end=0.3, dt=2e-3)
    res = sweep(scene, params("release.x=0.02,-0.03", "release.y=0.01,0.04"))
    for i in range(4):
        x, y = res.values["release.x"][i], res.values["release.y"][i]
        one = simulate(examples.three_magnet(friction=0.01, t_end=0.3, dt=2e-3, release=(x, y)),
                       record_interval=res.record_interval)
        start, end = one.dipole_position[0, 0], one.dipole_position[-1, 0]
        np.testing.assert_allclose(start[:2], [x, y], atol=1e-12)
        np.testing.assert_allclose([res.outcomes[f"bob_{k}_final"][i] for k in "xyz"], end, atol=1e-9)
        np.testing.assert_allclose(res.outcomes["energy_initial"][i], one.total_energy[0], rtol=1e-12)


def test_body_spin_matches_a_top_built_with_that_spin():
    scene = examples.heavy_top(t_end=0.04)
    res = sweep(scene, params("omega_body.3=100,250"))
    for i, spin in enumerate([100.0, 250.0]):
        one = simulate(examples.heavy_top(spin=spin, t_end=0.04), record_interval=res.record_interval)
        np.testing.assert_allclose([res.outcomes[f"omega_{k}_final"][i] for k in "xyz"], one.omega[-1, 0],
                                   rtol=1e-12, atol=1e-12)


def test_compass_members_follow_the_damped_oscillator_in_their_own_field():
    """θ'' + (c/I) θ' + (pB/I) θ = 0 from θ = 0, θ' = ω₀: ω(t) = ω₀ e^(−γt) (cos Ω_d t − γ/Ω_d sin Ω_d t)."""
    p, w0, t_end = 0.2, 0.02, 0.3
    I = 0.003 * (0.002**2 / 4 + 0.03**2 / 3)  # the needle: solid cylinder about a transverse axis (theory §2)
    scene = examples.compass(moment=p, theta0_deg=0.0, t_end=t_end)
    res = sweep(scene, params("friction=0,4e-6,9e-6", "field.x=2e-3,5e-3,1e-2", f"omega.z={w0}"), dt=5e-4)
    c, B = res.values["friction"], res.values["field.x"]
    gamma = c / (2 * I)
    wd = np.sqrt(p * B / I - gamma**2)
    expected = w0 * np.exp(-gamma * t_end) * (np.cos(wd * t_end) - gamma / wd * np.sin(wd * t_end))
    assert np.ptp(wd * t_end) > 6  # the members are far apart in phase: a mix-up would show
    np.testing.assert_allclose(res.outcomes["omega_z_final"], expected, rtol=0, atol=1e-5 * w0)
    undamped = c == 0
    np.testing.assert_allclose(res.outcomes["energy_final"][undamped], res.outcomes["energy_initial"][undamped],
                               rtol=1e-9)


# ---------------------------------------------------------------------------- table, files, determinism

def test_grid_order_columns_and_files(tmp_path):
    scene = examples.three_magnet(t_end=0.02, dt=2e-3)
    ps = params("friction=0:2e-4:3", "field.z=1e-3,-1e-3")
    res = sweep(scene, ps)
    summary = write(res, tmp_path / "a", scene_label="example:three-magnet", scene_name=scene.name)
    header, rows = read_csv(tmp_path / "a" / "sweep.csv")
    assert header == ["friction", "field.z", "energy_initial", "energy_final", "energy_max", "omega_final",
                      "omega_x_final", "omega_y_final", "omega_z_final", "bob_x_final", "bob_y_final",
                      "bob_z_final", "bob_speed_final", "label", "settle_time", "t_final", "completed"]
    table = np.array([[float(x) for x in r] for r in rows])
    # Row-major: the first --param varies slowest.
    np.testing.assert_array_equal(table[:, 0], [0, 0, 1e-4, 1e-4, 2e-4, 2e-4])
    np.testing.assert_array_equal(table[:, 1], [1e-3, -1e-3] * 3)
    np.testing.assert_array_equal(table[:, -1], 1)
    np.testing.assert_array_equal(table[:, header.index("t_final")], 0.02)
    meta = json.loads((tmp_path / "a" / "sweep.json").read_text(encoding="utf-8"))
    assert meta == summary
    assert meta["complete"] is True and meta["members"] == 6 and meta["members_completed"] == 6
    assert [p["name"] for p in meta["parameters"]] == ["friction", "field.z"]
    assert meta["parameters"][0]["values"] == [0.0, 1e-4, 2e-4] and meta["parameters"][0]["unit"] == "N·m·s"
    assert [c["name"] for c in meta["columns"]] == header
    assert (meta["method"], meta["dt"], meta["t_end"]) == ("splitting4", 2e-3, 0.02)
    assert (tmp_path / "a" / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Same input, same table, byte for byte.
    write(sweep(scene, ps), tmp_path / "b")
    assert (tmp_path / "a" / "sweep.csv").read_bytes() == (tmp_path / "b" / "sweep.csv").read_bytes()
    # One varying parameter: a table, no heat map.
    write(sweep(scene, params("friction=0,1e-4", "field.z=1e-3")), tmp_path / "c")
    assert not (tmp_path / "c" / "sweep.png").exists()


def test_free_body_table_has_no_bob_columns():
    res = sweep(examples.t_handle(t_end=0.1), params("omega_body.2=4,8"))
    assert "bob_x_final" not in res.outcomes and "label" not in res.outcomes
    np.testing.assert_allclose(res.outcomes["omega_final"], [4.0, 8.0], rtol=1e-3)


def test_cli_writes_the_table(tmp_path, capsys):
    code = main(["sweep", "example:compass", "-o", str(tmp_path), "-q", "--t-end", "0.01",
                 "--param", "field.x=1e-3,2e-3", "--method", "pem-rk4"])
    assert code == 0
    header, rows = read_csv(tmp_path / "sweep.csv")
    assert header[0] == "field.x" and len(rows) == 2
    assert json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))["method"] == "pem-rk4"


# ---------------------------------------------------------------------------- errors

@pytest.mark.parametrize("text, message", [
    ("frction=1", "unknown parameter 'frction' (did you mean 'friction'?); valid: friction, field, field.x"),
    ("friction", "expected NAME=VALUES"),
    ("friction=", "no values after '='"),
    ("friction=0:1", "a range is start:stop:count (3 parts), got 2 parts"),
    ("friction=0:1:1", "count must be a whole number ≥ 2, got '1'"),
    ("friction=0:1:2.5", "count must be a whole number ≥ 2, got '2.5'"),
    ("friction=a,b", "value #1 must be a number, got 'a'"),
    ("friction=1,,2", "empty item"),
    ("friction=-1e-3", "friction must be ≥ 0, got -0.001"),
    ("friction=-1:1:3", "friction must be ≥ 0, got -1"),
    ("field.z=nan", "the value must be finite, got 'nan'"),
    ("field.z=0,inf", "value #2 must be finite, got 'inf'"),
    ("field.z=0,1e300", "value #2 1e+300 is beyond ±1e+100 (SI), as in a scene file"),   # NaN rows, numpy's noise
    ("friction=0:1e101:3", "stop 1e+101 is beyond ±1e+100"),
])
def test_bad_param_text_names_the_option(text, message):
    with pytest.raises(ValidationError) as info:
        parse_param(text)
    assert info.value.path == f"--param {text}"
    assert message in info.value.message


@pytest.mark.parametrize("scene, texts, where, message", [
    ("three-magnet", ["field=0:1e-3:2"], "--param field=0:1e-3:2", "the scene's field is zero"),
    ("t-handle", ["release.x=0.01"], "--param release.x=0.01", "exactly one moving body, a pendulum"),
    ("three-magnet", ["friction=0,1", "friction=2"], "--param friction=2", "swept twice"),
    ("compass", ["field=1e-3", "field.x=1e-3"], "--param field.x=1e-3", "cannot be combined"),
    ("heavy-top", ["omega.z=1", "omega_body.3=2"], "--param omega_body.3=2", "cannot be combined"),
    ("three-magnet", ["release.x=0.3"], "--param release.x=0.3", "the bob's arm is 0.285 m long"),
    # a field on a scene without a moving dipole: every member the same run, exit 0 (a swept field acts on nothing)
    ("heavy-top", ["field.x=0,1"], "--param field.x=0,1", "no moving body of the scene carries a dipole"),
    ("t-handle", ["friction=0,1", "field=1"], "--param field=1", "the field acts on nothing"),
])
def test_params_that_do_not_fit_the_scene_name_the_option(scene, texts, where, message):
    with pytest.raises(ValidationError) as info:
        check_params(examples.build(scene).checked(), params(*texts))
    assert info.value.path == where
    assert message in info.value.message


@pytest.mark.parametrize("text, message", [
    ("friction=0,1e90", "at grid point 1 (friction=1e+90): friction: 1e+90 N·m·s stops 'top'"),
    ("omega.z=0,1e100", "at grid point 1 (omega.z=1e+100): a start spin of 1e+100 rad/s would take"),
])
def test_a_swept_value_beyond_a_physical_range_is_refused_by_its_param(text, message):
    """friction=0,1e90 ran into numpy's overflow warnings and "try a smaller dt"; omega.z=1e100 warned "dt ≤
    5e-101 s": refused before any member runs, naming the --param and the grid point, as a run refuses them."""
    with pytest.raises(ValidationError) as info:
        sweep(examples.heavy_top(t_end=0.01), params(text))
    assert info.value.path == f"--param {text}" and message in info.value.message, info.value


def test_components_of_one_vector_combine():
    check_params(examples.three_magnet().checked(), params("field.x=0,1e-3", "field.z=1e-3", "friction=0"))
    check_params(examples.heavy_top().checked(), params("omega_body.1=0,1", "omega_body.3=100"))


@pytest.mark.parametrize("name", ["newtons-cradle", "tippe-top"])
def test_a_scene_with_contacts_is_refused_before_running_saying_what_to_do(tmp_path, capsys, name):
    """sweep integrates its grid as one ensemble; contact scenes (impacts, a body on a table) run one member at a
    time: refused naming the scene and the command that runs them, nothing written."""
    code = main(["sweep", f"example:{name}", "-o", str(tmp_path / "out"), "--param", "friction=0,1e-4"])
    assert code == 2
    err = capsys.readouterr().err
    assert "scene: has contacts" in err and "run each value with `pem run` instead" in err
    assert not (tmp_path / "out").exists()


def test_cli_rejects_a_bad_param_before_running(tmp_path, capsys):
    code = main(["sweep", "example:three-magnet", "-o", str(tmp_path / "out"), "--param", "frction=0:1e-4:3"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--param frction=0:1e-4:3: unknown parameter 'frction'" in err
    assert all(name in err for name in PARAMETERS)
    assert not (tmp_path / "out").exists()
    code = main(["sweep", "example:compass", "-o", str(tmp_path / "out"), "--param", "field.x=0,1e-3",
                 "--heatmap", "label"])
    assert code == 2
    assert "--heatmap: unknown column 'label'; choose one of energy_initial" in capsys.readouterr().err
    code = main(["sweep", "example:compass", "-o", str(tmp_path / "out"), "--param", "field.x=0,1e-3",
                 "--heatmap", "energy_final"])
    assert code == 2
    assert "exactly two parameters with several values; 1 vary (field.x=0,1e-3)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------- interruption and blow-ups

def test_interrupted_sweep_writes_a_partial_table_marked_incomplete(tmp_path):
    scene = examples.three_magnet(t_end=0.4, dt=2e-3)
    reached = []
    # Ask to stop once the first chunk (2 of 6 members) is done: the second stops early, the third never runs.
    res = sweep(scene, params("friction=0:1e-3:6"), chunk=2, progress=reached.append,
                stop=lambda: bool(reached) and reached[-1] >= 2 / 6)
    assert not res.complete and res.members_completed == 2 and res.error is None
    summary = write(res, tmp_path)
    assert summary["complete"] is False and summary["members_completed"] == 2
    header, rows = read_csv(tmp_path / "sweep.csv")
    col = {name: np.array([float(r[k]) for r in rows]) for k, name in enumerate(header)}
    np.testing.assert_array_equal(col["friction"], np.linspace(0, 1e-3, 6))  # every grid point has a row
    np.testing.assert_array_equal(col["completed"], [1, 1, 0, 0, 0, 0])
    assert np.all(col["t_final"][:2] == 0.4) and np.all(col["t_final"][2:4] < 0.4)
    assert np.all(np.isnan(col["energy_final"][4:])) and np.all(col["label"][4:] == -1)
    assert json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))["complete"] is False


def test_ctrl_c_on_the_command_line_writes_the_partial_table(tmp_path, monkeypatch, capsys):

    from pem_physics import cli

    monkeypatch.setattr(cli, "_Progress", CtrlCProgress)
    code = main(["sweep", "example:three-magnet", "-o", str(tmp_path), "-q", "--t-end", "1", "--dt", "2e-3",
                 "--chunk", "2", "--param", "friction=0,1e-3,2e-3,3e-3"])
    assert code == 130
    assert "interrupted; partial table written" in capsys.readouterr().err
    meta = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    assert meta["complete"] is False and meta["members_completed"] < 4
    _, rows = read_csv(tmp_path / "sweep.csv")
    assert len(rows) == 4 and rows[-1][-1] == "0"


def test_a_blow_up_names_the_grid_point_and_keeps_the_table(tmp_path):
    # Explicit Euler at Ω·dt ≈ 15 for the second member: its orientation degenerates.
    res = sweep(examples.compass(t_end=1.0), params("field.x=1e-2,10"), method="pem-euler", dt=1e-2)
    assert not res.complete and res.members_completed == 0
    assert "blow-up" in res.error and "grid point 1 (field.x=10)" in res.error
    assert write(res, tmp_path)["error"] == res.error
    _, rows = read_csv(tmp_path / "sweep.csv")
    assert len(rows) == 2 and all(r[-1] == "0" for r in rows)


def test_a_one_parameter_sweep_after_a_two_parameter_one_leaves_no_heat_map(tmp_path):
    """The heat map belongs to the two-parameter run: the next run's output set does not keep it (the manifest
    lists exactly what is in the folder)."""
    from pem_physics.io.outset import MANIFEST, read_manifest

    base = ["sweep", "example:compass", "-o", str(tmp_path), "-q", "--t-end", "0.01", "--method", "pem-rk4"]
    assert main(base + ["--param", "field.x=1e-3,2e-3", "--param", "field.y=0,1e-3"]) == 0
    assert (tmp_path / "sweep.png").is_file()
    assert main(base + ["--param", "field.x=1e-3,2e-3"]) == 0
    assert not (tmp_path / "sweep.png").exists()
    assert sorted(read_manifest(tmp_path)["files"]) == sorted(p.name for p in tmp_path.iterdir() if p.name != MANIFEST)


def test_a_spin_too_fast_for_the_step_is_said_as_a_run_says_it(tmp_path, capsys):
    """omega.z swept to 10¹² rad/s: energies of 10²⁰ J (now refused: faster than light); at 10⁹ rad/s a run of that
    grid point warns that no body survives that spin (checks.preflight, not blaming dt), so the sweep says the same,
    naming the grid point, on stderr and in sweep.json."""
    sc = examples.build("heavy-top")
    dt = sc.settings.dt
    single = simulate(replace(sc, bodies=[replace(sc.bodies[0], angular_velocity=(0.0, 0.0, 1e9))]), t_end=4 * dt)
    run_said = [w for w in single.info["warnings"] if "start spin of 1e+09 rad/s" in w]
    assert len(run_said) == 1 and not any(w.startswith("dt = ") for w in single.info["warnings"])
    path = tmp_path / "top.toml"
    from pem_physics.io.scene_writer import save_scene

    save_scene(sc, str(path))
    rc = main(["sweep", str(path), "--param", "omega.z=0,1e9", "--t-end", str(4 * dt), "-o", str(tmp_path / "out"),
               "-q"])
    assert rc == 0
    err = capsys.readouterr().err
    assert "warning: at grid point 1 (omega.z=1e+09): " + run_said[0] in err and "warning: dt = " not in err
    said = json.loads((tmp_path / "out" / "sweep.json").read_text())["warnings"]
    assert len(said) == 1 and "1e+09" in said[0]
    rc = main(["sweep", str(path), "--param", "omega.z=0,1", "--t-end", str(4 * dt), "-o", str(tmp_path / "calm"),
               "-q"])
    assert rc == 0 and json.loads((tmp_path / "calm" / "sweep.json").read_text())["warnings"] == []


def test_a_swept_spin_moving_the_mass_faster_than_light_is_refused_before_running():
    """A swept spin past light was only warned of: refused before any member runs, naming the --param and the grid
    point, as a run refuses it. A solid ball (R = 2 cm) moves its mass at rms |ω| √(2/5) R: light at
    ω_c = c / (√(2/5) R), by hand; 0.99 ω_c is warned of and runs."""
    from pem_physics.model.inertia import Sphere
    from pem_physics.model.scene import Body, Scene, Settings

    R, c = 0.02, 299_792_458.0
    w_c = float(c / (np.sqrt(0.4) * R))
    ball = Scene(bodies=[Body(name="ball", role="free", shapes=(Sphere(R, mass=0.1),))],
                 settings=Settings(dt=1e-3, t_end=4e-3))
    text = f"omega.z=0,{1.01 * w_c!r}"
    with pytest.raises(ValidationError) as info:
        sweep(ball, params(text))
    assert info.value.path == f"--param {text}"
    said = info.value.message
    assert said.startswith(f"at grid point 1 (omega.z={1.01 * w_c:g}): 'ball' starts spinning at "), said
    assert "faster than light" in said and "give a physical angular velocity (rad/s" in said
    res = sweep(ball, params(f"omega.z=0,{0.99 * w_c!r}"))
    assert res.complete and len(res.warnings) == 1 and "('ball'): its start spin of" in res.warnings[0]


ROD_A, ROD_H = 1e-3, 0.5    # m: the hanging rod's radius and half-length


def hanging_rod(omega: float = 0.0):
    """A thin cylinder (radius A = 1 mm, half-length H = 0.5 m, mass 0.1 kg) hanging from its pivot, spinning at
    ``omega`` rad/s about the lab z axis (its own axis)."""
    from pem_physics.model.inertia import Cylinder
    from pem_physics.model.scene import Body, Scene, Settings

    rod = Body(name="rod", position=(0.0, 0.0, 1.0), angular_velocity=(0.0, 0.0, omega),
               shapes=(Cylinder(ROD_A, ROD_H, mass=0.1, center=(0.0, 0.0, -ROD_H)),))
    return Scene(bodies=[rod], settings=Settings(dt=1e-3, t_end=4e-3))


def rod_spin_speed(omega: float, x: float) -> float:
    """The rms speed (m/s) a spin ``omega`` (rad/s) about lab z gives the rod's mass when released with its centre of
    mass at lab x = ``x`` (m, from the pivot axis): v² = ω²(I_a cos²θ + I_t sin²θ)/m, sin θ = x/H, with the moments
    about the pivot I_a = m A²/2 (its axis) and I_t = m(A²/4 + H²/3) + m H² (across: Steiner), by hand."""
    s2 = (x / ROD_H) ** 2
    return omega * np.sqrt(ROD_A**2 / 2 * (1 - s2) + (ROD_A**2 / 4 + 4 * ROD_H**2 / 3) * s2)


@pytest.mark.parametrize("texts, spin", [
    (("omega.z=1e4", "release.x=0,0.45"), 0.0),
    (("release.x=0,0.45",), 1e4),              # the scene's own spin (lab), the body turned under it
])
def test_a_spin_is_judged_at_each_grid_points_own_orientation(texts, spin):
    """The spin's speed measure √(ω·Iω/m) takes the inertia in lab axes at the start pose: 1e4 rad/s about z moves
    the hanging rod's mass at 7 m/s (about its own axis) but at 5.2 km/s once released 64° out (release.x = 0.45
    m): the sweep judged only the scene's pose and said nothing; now the grid point where no body survives the spin
    is warned of, with the speed computed by hand."""
    res = sweep(hanging_rod(spin), params(*texts))
    v = rod_spin_speed(1e4, 0.45)
    assert rod_spin_speed(1e4, 0.0) < 2e3 < v
    wild = [w for w in res.warnings if "its start spin of" in w]
    assert len(wild) == 1 and wild[0].startswith("at grid point 1 ("), res.warnings
    assert f"moves its mass at ≈ {v:.2g} m/s" in wild[0], wild[0]


def test_a_spin_past_light_at_another_grid_points_orientation_is_refused():
    """1e9 rad/s about z moves the hanging rod's mass at 7e5 m/s (below light: warned of), but at 5.2e8 m/s
    released at x = 0.45 m: refused naming that grid point and the --params that set it."""
    v = rod_spin_speed(1e9, 0.45)
    assert rod_spin_speed(1e9, 0.0) < 299_792_458.0 <= v
    with pytest.raises(ValidationError) as info:
        sweep(hanging_rod(), params("omega.z=1e9", "release.x=0,0.45"))
    assert info.value.path == "--param omega.z=1e9 and --param release.x=0,0.45"
    said = info.value.message
    assert said.startswith("at grid point 1 (omega.z=1e+09, release.x=0.45): 'rod' starts spinning at 1e+09 rad/s, "
                           f"which moves its mass at ≈ {v:.2g} m/s"), said
    assert "faster than light" in said


def test_a_field_too_strong_for_the_step_is_said_as_a_run_says_it(tmp_path, capsys):
    """field.x swept to 10⁶ T: a compass needle then swings at ~10⁵ rad/s, energies of 10¹¹ J; a run of that grid
    point warns that dt is too large for its torques, so the sweep says the same, naming the grid point; a sweep of
    ordinary fields says nothing."""
    sc = examples.build("compass")
    single = simulate(replace(sc, field=(1e6, 0.0, 0.0)), t_end=4 * sc.settings.dt)
    assert any("is large for the fastest motion" in w for w in single.info["warnings"])
    rc = main(["sweep", "example:compass", "--param", "field.x=1e-3,1e6", "--t-end", str(4 * sc.settings.dt),
               "-o", str(tmp_path / "out"), "-q"])
    assert rc == 0
    assert "warning: at grid point 1 (field.x=1e+06): dt = " in capsys.readouterr().err
    said = json.loads((tmp_path / "out" / "sweep.json").read_text())["warnings"]
    assert len(said) == 1 and "is large for the fastest motion" in said[0]
    rc = main(["sweep", "example:compass", "--param", "field.x=1e-3,2e-3", "--t-end", str(4 * sc.settings.dt),
               "-o", str(tmp_path / "calm"), "-q"])
    assert rc == 0 and json.loads((tmp_path / "calm" / "sweep.json").read_text())["warnings"] == []
