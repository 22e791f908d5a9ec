"""Plots, read_trajectory, and the plot/info commands."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest

from pem_physics import examples, simulate
from pem_physics.analysis.plot import (
    compare_methods,
    momentum_sphere_drift,
    plot_outputs,
    read_trajectory,
    relative_energy_error,
)
from pem_physics.cli import main as cli_main
from pem_physics.errors import ValidationError
from pem_physics.io.output import ARRAYS, write_outputs
from pem_physics.io.outset import MANIFEST, read_manifest

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def check_png(path):
    import matplotlib.image as mpimg

    assert path.read_bytes()[:8] == PNG_MAGIC
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    rgb = img[..., :3]
    # not blank: a real share of the pixels are drawn (not the white background) and they vary
    assert (rgb.min(axis=-1) < 0.9).mean() > 0.01
    assert rgb.std() > 0.05


@pytest.fixture(scope="module")
def magnet_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    traj = simulate(examples.three_magnet(), t_end=0.2)
    write_outputs(traj, out)
    return traj, out


def test_read_trajectory_round_trips_write_npz_exactly(magnet_run, tmp_path):
    traj, out = magnet_run
    back = read_trajectory(out / "trajectory.npz")
    for k in ARRAYS:
        a, b = getattr(traj, k), getattr(back, k)
        assert a.dtype == b.dtype and a.shape == b.shape, k
        assert np.array_equal(a, b), k
    assert back.names == traj.names
    assert (back.method, back.dt, back.steps, back.complete, back.ensemble) == \
        (traj.method, traj.dt, traj.steps, traj.complete, traj.ensemble)
    assert np.array_equal(back.total_energy, traj.total_energy)
    assert read_trajectory(out).names == traj.names  # a run folder works too


def test_read_trajectory_names_bad_input(tmp_path):
    with pytest.raises(ValidationError, match="no such file"):
        read_trajectory(tmp_path / "missing.npz")
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ValidationError, match="missing"):
        read_trajectory(tmp_path / "other.npz")


def test_plot_outputs_writes_valid_nonblank_pngs_atomically(magnet_run, tmp_path):
    _, out = magnet_run
    paths = plot_outputs(out, tmp_path / "png")
    assert sorted(p.name for p in paths) == ["energy.png", "momentum_sphere.png", "omega.png", "top_view.png"]
    for p in paths:
        check_png(p)
    # no temp files: the PNGs and the manifest of their output set, which lists exactly them
    assert sorted(x.name for x in (tmp_path / "png").iterdir()) == sorted([p.name for p in paths] + [MANIFEST])
    assert sorted(read_manifest(tmp_path / "png")["files"]) == sorted(p.name for p in paths)


def test_plot_command(magnet_run, tmp_path, capsys):
    _, out = magnet_run
    assert cli_main(["plot", str(out), "-o", str(tmp_path / "figs")]) == 0
    assert len(list((tmp_path / "figs").glob("*.png"))) == 4
    assert cli_main(["plot", str(tmp_path / "nothing-here")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_a_body_index_plot_cannot_take_is_named_as_typed(magnet_run, tmp_path, capsys):
    """``plot --body 5`` said "body: body index 5 out of range (the run has 1 bodies)": the option as typed, the
    bodies and the indices there are; on a gas run's folder (particles, no bodies) --body was taken in silence."""
    traj, out = magnet_run
    assert cli_main(["plot", str(out), "--body", "5", "-o", str(tmp_path / "a")]) == 2
    assert capsys.readouterr().err == f"error: --body 5: body index 5 out of range: the run has {len(traj.names)} " \
                                      f"body ('{traj.names[0]}'), indices 0 to 0\n"
    from pem_physics.gas import edmd

    if not edmd.available():
        pytest.skip("the gas run needs numba")
    assert cli_main(["gas", "--n", "20", "--box", "walls", "--t-end", "0.05", "-o", str(tmp_path / "gas"), "-q"]) == 0
    assert cli_main(["plot", str(tmp_path / "gas"), "--body", "0"]) == 2
    assert "error: --body 0: " in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not list((tmp_path / "gas").glob("*.png"))


@pytest.mark.parametrize("command", ["plot", "info"])
def test_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main([command, "--help"])
    assert exc.value.code == 0
    assert command in capsys.readouterr().out


def test_energy_error_plot_data_is_relative_error():
    """(E(t) − E(0))/scale with E = kinetic + gravity + field + dipole and scale = max(|E(0)|, max kinetic),
    on energies chosen by hand (values worked out here, not by the formula under test)."""
    traj = simulate(examples.pendulum(), t_end=0.003, dt=1e-3, record_interval=1e-3)
    assert len(traj.t) == 4
    fake = replace(traj, kinetic_energy=np.array([[1.0], [5.0], [0.5], [2.0]]),
                   gravity_energy=np.array([[-4.0], [-8.5], [-3.0], [-4.0]]),
                   field_energy=np.array([[0.0], [0.0], [0.25], [0.0]]),
                   dipole_energy=np.array([0.0, 0.5, -0.25, 0.0]))
    # totals −3, −3, −2.5, −2; scale = max(|−3|, 5) = 5
    np.testing.assert_allclose(relative_energy_error(fake), [0.0, 0.0, 0.1, 0.2], rtol=0, atol=1e-15)
    # with a smaller kinetic energy the scale is |E(0)| = 3
    small = replace(fake, kinetic_energy=fake.kinetic_energy / 5, gravity_energy=fake.gravity_energy
                    + np.array([[0.8], [4.0], [0.4], [1.6]]))
    np.testing.assert_allclose(relative_energy_error(small), [0.0, 0.0, 0.5 / 3, 1 / 3], rtol=0, atol=1e-15)


def test_momentum_sphere_euler_drifts_off_its_orbit_rk4_does_not(tmp_path):
    """The manual's figure 4.2, measured on the data: torque-free body, Euler vs RK4 at the same dt.

    On the |L| sphere the closed orbit is fixed by T (Σ L_k²/I_k = 2T). PEM's Euler keeps L exact in the
    lab and re-orthonormalises, so its path stays on the sphere but crosses orbits with a growing T error.
    """
    scene = examples.t_handle(omega=(3.0, 1.0, 0.5))
    trajs = compare_methods(scene, ["pem-euler", "pem-rk4"], t_end=5.0, dt=1 / 128, record_interval=4 / 128,
                            path=tmp_path / "energy_error.png", sphere_path=tmp_path / "sphere.png")
    check_png(tmp_path / "energy_error.png")
    check_png(tmp_path / "sphere.png")
    euler = momentum_sphere_drift(trajs["pem-euler"])
    rk4 = momentum_sphere_drift(trajs["pem-rk4"])
    assert euler["orbit"] > 1e-2 and euler["orbit"] > 1.5 * euler["orbit_first_half"]  # drifts, and keeps drifting
    assert rk4["orbit"] < 1e-7 and rk4["radius"] < 1e-8
    # independent of the recorded energies: the orbit label Σ L_k²/I_k from L_body and the tensor
    Ib = examples.T_HANDLE_INERTIA
    for tr, big in ((trajs["pem-euler"], True), (trajs["pem-rk4"], False)):
        Lb = tr.angular_momentum_body[:, 0]
        label = np.einsum("ri,ij,rj->r", Lb, np.linalg.inv(Ib), Lb)
        change = abs(label[-1] / label[0] - 1)
        assert (change > 1e-2) if big else (change < 1e-7)


def test_info_json_matches_closed_form(capsys):
    assert cli_main(["info", "example:compass", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    (needle,) = rows
    m, r, h = 0.003, 0.002, 0.03
    assert needle["role"] == "pendulum" and needle["mass"] == pytest.approx(m)
    Ia, It = m * r * r / 2, m * (r * r / 4 + h * h / 3)   # thin cylinder along body x
    np.testing.assert_allclose(np.diag(needle["inertia_about_center_of_mass"]), [Ia, It, It], rtol=1e-12)
    np.testing.assert_allclose(needle["principal_moments"], [Ia, It, It], rtol=1e-12)
    I = np.array(needle["inertia_about_center_of_mass"])
    for lam, a in zip(needle["principal_moments"], needle["principal_axes"]):
        np.testing.assert_allclose(I @ np.array(a), lam * np.array(a), atol=1e-15)


def test_info_pivot_tensor_uses_parallel_axes(capsys):
    assert cli_main(["info", "example:three-magnet", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    bob = rows["bob"]
    c = np.array(bob["center_of_mass"])
    expect = np.array(bob["inertia_about_center_of_mass"]) + bob["mass"] * (c @ c * np.eye(3) - np.outer(c, c))
    np.testing.assert_allclose(bob["inertia_about_pivot"], expect, rtol=1e-12)
    assert rows["magnet0"]["role"] == "fixed"
    assert cli_main(["info", "example:three-magnet"]) == 0
    table = capsys.readouterr().out
    assert "bob  [pendulum]" in table and "principal moments" in table


def test_ensemble_npz_round_trip_and_plots(tmp_path):
    from pem_physics.engine.simulate import Ensemble

    scene = examples.pendulum(t_end=0.1)
    w = np.array([[[0.0, 0.0, 0.0]], [[0.5, 0.0, 0.0]]])
    traj = simulate(scene, ensemble=Ensemble(angular_velocity=w))
    write_outputs(traj, tmp_path)   # an ensemble's set: trajectory.npz and summary.json (no CSV)
    back = read_trajectory(tmp_path / "trajectory.npz")
    assert back.ensemble and np.array_equal(back.omega, traj.omega)
    for p in plot_outputs(tmp_path):
        assert p.read_bytes()[:8] == PNG_MAGIC


def _edited_run(out, tmp_path, name, **changes):
    """A copy of the run folder ``out`` whose trajectory.npz has ``changes`` (key → array, None: dropped) and whose
    manifest is re-computed for it, so that only the file's contents can be at fault."""
    import hashlib
    import shutil

    folder = tmp_path / name
    shutil.copytree(out, folder)
    with np.load(folder / "trajectory.npz") as z:
        data = {k: z[k] for k in z.files}
    data.update(changes)
    with open(folder / "trajectory.npz", "wb") as fh:
        np.savez(fh, **{k: v for k, v in data.items() if v is not None})
    m = json.loads((folder / MANIFEST).read_text())
    blob = (folder / "trajectory.npz").read_bytes()
    m["files"]["trajectory.npz"].update(bytes=len(blob), sha256=hashlib.sha256(blob).hexdigest())
    (folder / MANIFEST).write_text(json.dumps(m))
    return folder


@pytest.mark.parametrize("change, says", [
    (dict(names=np.array(["bob"], dtype=object)), "names cannot be read without running pickled code"),
    (dict(t=np.zeros(3)), "quaternion has shape (21, 1, 4), expected (3, 1, 4) (3 records, 1 body, 1 dipole)"),
    (dict(t=np.zeros(0)), "t holds no records"),
    (dict(meta=np.array("{not json")), "meta is not JSON text"),
    (dict(meta=np.array('["splitting4"]')), "meta is not a JSON object"),
    (dict(meta=np.array('{"dt": "fast"}')), "meta.dt is 'fast', not a number"),
    (dict(omega=np.array([["a"]])), "omega holds <U1 values, not numbers"),
    (dict(dipole_owner=np.array([3])), "dipole_owner names bodies outside 0…0"),
    (dict(pivot=np.zeros((2, 3))), "pivot has shape (2, 3), expected (1, 3)"),
])
def test_a_trajectory_file_that_is_not_a_runs_is_named_by_key(magnet_run, tmp_path, capsys, change, says):
    """trajectory.npz edited and its manifest re-computed: `names` an object array gave numpy's ValueError
    traceback, `t` shorter than the rest matplotlib's, no records a numpy reduction's, `meta` not JSON a
    JSONDecodeError. One line naming the file and the key, exit 2, no figure."""
    _, out = magnet_run
    folder = _edited_run(out, tmp_path, "edited", **change)
    with pytest.raises(ValidationError, match="not a pem trajectory file: " + re.escape(says)):
        read_trajectory(folder / "trajectory.npz")
    assert cli_main(["plot", str(folder), "-o", str(tmp_path / "figs")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {folder / 'trajectory.npz'}: not a pem trajectory file: "), err
    assert says in err and err.count("\n") == 1 and not (tmp_path / "figs").exists()


def test_a_name_the_font_cannot_draw_is_spelled_out_without_a_warning(tmp_path, monkeypatch):
    """A body named with an emoji drew a box and made matplotlib warn "Glyph 129522 (\\N{MAGNET}) missing from
    font(s) DejaVu Sans"; the characters no font of matplotlib's has are now written by their Unicode names (an
    unnamed one as U+XXXX, an invisible one the font lacks dropped), and a name the font draws is left as it is."""
    import warnings

    from pem_physics.analysis import plot as plot_module
    from pem_physics.analysis.figures import drawable

    scene = examples.three_magnet()
    moving = [k for k, b in enumerate(scene.bodies) if b.role == "pendulum"][0]
    bodies = list(scene.bodies)
    bodies[moving] = replace(bodies[moving], name="🧲 magnet")
    out = tmp_path / "run"
    write_outputs(simulate(replace(scene, bodies=tuple(bodies)), t_end=0.05), out)
    figures = {}
    save = plot_module.save
    monkeypatch.setattr(plot_module, "save", lambda fig, path, *a: figures.setdefault(path.name, fig) and
                        save(fig, path, *a))
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # matplotlib's "Glyph … missing" is a UserWarning
        plot_outputs(out, tmp_path / "png")
    assert figures["omega.png"].axes[0].get_ylabel() == "\\N{MAGNET} magnet\nω (rad/s)"
    title = figures["momentum_sphere.png"].axes[0].get_title()
    assert title == "body-frame angular momentum of '\\N{MAGNET} magnet' (kg·m²/s)"
    assert drawable("Pendel ä, ω₀ — Ψ\n2") == "Pendel ä, ω₀ — Ψ\n2"    # drawn as it is: unchanged
    assert drawable("a\U0010fffdb") == "aU+10FFFDb"                     # no name (a private use character)
    assert drawable("a\U000e0101b\u2066c") == "abc"                      # a variation selector, an isolate mark
