"""Mutation check: every planted bug in the physics core must make a test fail that names the physics it breaks.

Each row of MUTANTS plants one bug (an exact source text in a file under pem_physics/, replaced) in a fresh
copy of pem_physics/ and runs the row's test selection against the copy in a subprocess
(PEM_CODE_ROOT, honoured by tests/conftest.py, which also checks that the copy is what gets imported).
The selection must FAIL; the un-mutated copy must PASS every selection (one run). A row whose source
text no longer occurs exactly once fails, so the table cannot rot silently when the code changes.

A bug planted in a numba kernel is run as the kernel's Python source (NUMBA_DISABLE_JIT=1): the same statements
the compiler translates, so the compiled-against-numpy tests see the same wrong numbers, without a cold compile of
every kernel per planted copy (~160 s each on a slow 2-core machine, against ~20 s). That the compiled code equals
its source is what the ordinary run of those tests checks.

Run in CI once, in the core session (marked slow). Script mode prints a table:
``python tests/test_mutants.py [ID ...]``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str          # path under pem_physics/
    original: str      # exact source text, occurring once in that file
    replacement: str
    tests: tuple       # pytest node ids (relative to the repository root) that must catch it
    physics: str       # what the bug breaks
    #: "numpy": the bug is in the reference code and its tests run with the compiled engine off
    #: (PEM_NUMBA=0), so they check the numpy path itself; "compiled": the bug is in a numba kernel and
    #: the compiled-against-numpy tests must catch it (the kernels run as Python: module docstring).
    engine: str = "numpy"


BILLIARD = "tests/engine/test_surface.py::test_billiard_ball_slides_then_rolls_as_the_closed_form"
DRIVEN_TORQUE = "tests/engine/test_driven.py::test_driven_magnet_torque_equals_fixed_magnet_at_its_closed_form_place"
PEM_DRIVER = "tests/engine/test_driven.py::test_pem_schemes_place_driven_magnets_like_pem"
TORQUE_GRADIENT = "tests/engine/test_torques.py::test_torque_is_minus_gradient_of_energy"
RECORDS = ("tests/engine/test_simulate.py::"
           "test_records_fall_on_multiples_of_record_interval_and_hold_the_state_at_that_time")
FRICTION = "tests/engine/test_simulate.py::test_pivot_friction_slows_a_spin_exponentially"
SHAPES = "tests/model/test_inertia.py::test_cylinder_and_rod_tensors_match_theory"
ORDER_CONDITIONS = "tests/engine/test_splitting.py::test_tables_satisfy_their_order_conditions_to_round_off"
ROD_PENDULUM = "tests/engine/test_dynamics.py::test_point_mass_pendulum_skips_rotation_about_its_rod"

COMPILED = "tests/engine/test_compiled.py::test_compiled_engine_follows_numpy_for_1000_steps[{}]"
LANES = "tests/engine/test_lanes.py::test_lanes_match_numpy_and_the_member_engine[{}]"
LANES_SINCOS = "tests/engine/test_lanes.py::test_sincos_at_quadrant_edges_and_non_finite"
PAIR_RULES = "tests/engine/test_pair_rules.py::"
BALL_PAIR_MU = PAIR_RULES + "test_a_rough_ball_striking_a_smoother_one_slides_with_the_smaller_mu"
ONE_BALL_MU = PAIR_RULES + "test_one_ball_setting_mu_gives_the_pair_its_mu"
WALL_MU = PAIR_RULES + "test_a_ball_striking_a_wall_slides_with_the_pair_rules_mu"
BALL_PAIR_E = PAIR_RULES + "test_two_balls_rebound_with_the_pair_rules_e_or_their_pair_entry"
WALL_E = PAIR_RULES + "test_a_ball_rebounds_from_a_wall_with_the_pair_rules_e_or_their_pair_entry"
RESUME = "tests/analysis/test_chunks.py::test_resume_refuses_a_folder_of_a_run_that_differs_in_one_field[{}]"

MUTANTS = [
    Mutant("driven-half-speed", "engine/system.py",
           "return body.position + motion.velocity * t, body.orientation",
           "return body.position + motion.velocity * (0.5 * t), body.orientation",
           (DRIVEN_TORQUE,), "a constant-velocity magnet moves at half its speed"),
    Mutant("orbit-phase-dropped", "engine/system.py",
           "ph = phase + w * t\n        origin = centre",
           "ph = w * t\n        origin = centre",
           (DRIVEN_TORQUE,), "an orbiting magnet ignores its initial phase φ₀"),
    Mutant("orbit-angular-speed", "engine/system.py",
           "ph = phase + w * t\n        origin = centre",
           "ph = phase + 0.5 * w * t\n        origin = centre",
           (DRIVEN_TORQUE,), "an orbiting magnet goes round at half its angular speed"),
    Mutant("orbit-turns-backwards", "engine/system.py",
           "return origin, body.orientation @ axis_angle_matrix(n, w * t).T",
           "return origin, body.orientation @ axis_angle_matrix(n, w * t)",
           (DRIVEN_TORQUE,), "an orbiting magnet's frame turns against its orbit"),
    Mutant("pem-driver-orbit-off-by-one", "engine/system.py",
           "th = phase + self.updates * rate * self.dt",
           "th = phase + (self.updates - 1) * rate * self.dt",
           (PEM_DRIVER,), "PEM's driven orbit one step behind PEM"),
    Mutant("pem-driver-clock-off-by-one", "engine/integrators.py",
           "self.driver.time = t4",
           "self.driver.time = t1",
           (PEM_DRIVER,), "PEM's RK4 places constant-velocity magnets one step behind PEM"),
    Mutant("dipole-force-torque-sign", "engine/torques.py",
           "Td = cross(s, F) + cross(p, Bdd + Bext)",
           "Td = cross(F, s) + cross(p, Bdd + Bext)",
           (TORQUE_GRADIENT,), "the dipole force's torque s × F has the wrong sign (T·δψ ≠ −δU)"),
    Mutant("field-torque-sign", "engine/torques.py",
           "Td = cross(p if pe is None else pe, np.broadcast_to(Bext, p.shape))",
           "Td = cross(np.broadcast_to(Bext, p.shape), p if pe is None else pe)",
           (TORQUE_GRADIENT, "tests/engine/test_dynamics.py::test_compass_small_oscillation_frequency"),
           "a uniform field's torque p × B has the wrong sign"),
    Mutant("gravity-torque-sign", "engine/torques.py",
           "torque = system.mass[:, None] * cross(Rg, g)",
           "torque = system.mass[:, None] * cross(g, Rg)",
           (TORQUE_GRADIENT, "tests/engine/test_dynamics.py::test_reference_method_matches_closed_forms"),
           "gravity's torque M R_G × g has the wrong sign (pendulums fall over)"),
    Mutant("steiner-dropped-in-combine", "model/inertia.py",
           "I += p.inertia_about(com)",
           "I += p.inertia",
           ("tests/model/test_inertia.py::test_combine_shifts_each_part_by_the_parallel_axis_theorem",),
           "combine() forgets the parallel-axis (Steiner) term"),
    Mutant("cylinder-h2-over-48", "model/inertia.py",
           "(a2 / 4 + h2 / 3)", "(a2 / 4 + h2 / 48)",
           (SHAPES,), "the manual's cylinder formula h²/48 (16× too small)"),
    Mutant("cylinder-h2-over-12", "model/inertia.py",
           "(a2 / 4 + h2 / 3)", "(a2 / 4 + h2 / 12)",
           (SHAPES,), "the cylinder formula for a FULL length h (h²/12) applied to the half-length"),
    Mutant("rod-l2-over-12", "model/inertia.py",
           "self.mass * self.half_length**2 / 3",
           "self.mass * self.half_length**2 / 12",
           (SHAPES,), "the thin rod formula for a full length (l²/12) applied to the half-length"),
    Mutant("srkn6b-coefficient", "engine/integrators.py",
           "b1, b2, b3 = 0.0829844064174052, 0.396309801498368, -0.0390563049223486",
           "b1, b2, b3 = 0.0829844064174052, 0.396309801498386, -0.0390563049223486",
           (ORDER_CONDITIONS,), "a typo in Blanes–Moan's SRKN6b table (last two digits of b2 swapped: 1.8e-14)"),
    Mutant("suzuki-coefficient", "engine/integrators.py",
           "p = 1.0 / (4.0 - 4.0 ** (1.0 / 3.0))",
           "p = 0.4144907718",
           (ORDER_CONDITIONS,), "Suzuki's p = 1/(4 − 4^⅓) rounded to 10 digits"),
    Mutant("splitting4-is-second-order", "engine/integrators.py",
           'self.scheme = "srkn6b" if self.exact_drift else "suzuki"',
           'self.scheme = "strang"',
           ("tests/engine/test_dynamics.py::test_tennis_racket_default_method_matches_jacobi_flip_times",
            "tests/engine/test_dynamics.py::test_default_method_is_fourth_order_on_closed_forms"),
           "the default method silently drops to 2nd order (the Strang table)"),
    Mutant("records-at-wrong-multiple", "engine/simulate.py",
           "marks = list(range(0, steps + 1, every))",
           "marks = list(range(0, steps + 1, every + 1))",
           (RECORDS,), "records not at multiples of record_interval"),
    Mutant("last-partial-record-dropped", "engine/simulate.py",
           "marks.append(steps)", "pass",
           (RECORDS,), "no record at t_end when it is not a multiple of record_interval"),
    Mutant("friction-sign-splitting", "engine/integrators.py",
           "e = np.exp((-cf * h) * inv)", "e = np.exp((cf * h) * inv)",
           (FRICTION,), "pivot friction −cω pushes instead of brakes (free turn, default method)"),
    Mutant("friction-sign-hinge", "engine/integrators.py",
           "eh = np.exp(-ch * h / J)", "eh = np.exp(ch * h / J)",
           (FRICTION,), "pivot friction pushes a hinged body"),
    Mutant("friction-sign-pem", "engine/integrators.py",
           "T = T - self.system.damping(w)", "T = T + self.system.damping(w)",
           (FRICTION,), "pivot friction pushes in PEM's schemes"),
    Mutant("pseudo-inverse-keeps-zero-moments", "model/inertia.py",
           "live = lam > rtol * lam_max", "live = lam > 0.0",
           ("tests/model/test_inertia.py::test_pseudo_inverse", ROD_PENDULUM),
           "the pseudo-inverse divides by a zero moment's round-off (rotation about a rod)"),
    Mutant("principal-moments-keep-zero-moments", "engine/system.py",
           "live = lam > ZERO_MOMENT * lam_max", "live = lam > 0.0",
           (ROD_PENDULUM,), "the splitting's 1/λ divides by a zero moment's round-off"),
    Mutant("pair-larger-between-bodies", "engine/contact/model.py",
           "out = np.fmin(a, b)", "out = np.fmax(a, b)",
           (BALL_PAIR_MU, BALL_PAIR_E), "two bodies' impact takes the larger of their e and μ"),
    Mutant("pair-larger-with-walls", "model/scene.py",
           "return a if b is None else min(a, b)", "return a if b is None else max(a, b)",
           (WALL_MU, WALL_E), "a body–wall impact takes the larger of the two sides' e and μ"),
    Mutant("one-side-set-meets-the-scene", "model/scene.py",
           "return default if b is None else b", "return default if b is None else min(b, default)",
           (WALL_MU, WALL_E), "a wall's own μ or e is cut to the scene's for a body that sets none (unset as 0)"),
    Mutant("unset-pair-ignores-the-scene", "engine/contact/model.py",
           "return np.where(np.isnan(out), default, out)", "return np.where(np.isnan(out), 0.0, out)",
           (BALL_PAIR_E,), "two bodies that set no e take 0 instead of the scene's"),
    Mutant("one-ball-setting-mu-ignored", "engine/contact/model.py",
           "out = np.fmin(a, b)", "out = np.minimum(a, b)",
           (ONE_BALL_MU,), "one body's own μ is lost when the other sets none (a NaN taken as the pair's)"),
    Mutant("pair-restitution-ignored", "engine/contact/model.py",
           "pair_e = {frozenset(p.names): p.restitution for p in scene.pair_restitution}", "pair_e = {}",
           (BALL_PAIR_E, WALL_E), "[[pair_restitution]] entries are ignored"),
    Mutant("table-force-at-the-centre", "engine/contact/surface.py",
           "rho = P - st.x\n        W = self.W(st.Q)\n        w = W @ st.L\n        u = st.v + _cross(w, rho)\n"
           "        moving",
           "rho = C - st.x\n        W = self.W(st.Q)\n        w = W @ st.L\n        u = st.v + _cross(w, rho)\n"
           "        moving",
           (BILLIARD,), "the table's force acts at the contact shape's centre, not at its contact point"),
    Mutant("table-friction-pushes", "engine/contact/surface_several.py",
           "return surface.table.mu * (-ut / s)", "return surface.table.mu * (ut / s)",
           (BILLIARD,), "sliding friction pushes along the slip instead of against it"),
    Mutant("table-kernel-friction-pushes", "engine/contact/surface_kernels.py",
           "return par[P_MU] * (-ut / sp)", "return par[P_MU] * (ut / sp)",
           ("tests/engine/test_surface_compiled.py::test_compiled_run_is_the_numpy_reference[billiard_backspin]",),
           "the compiled table run's sliding friction pushes along the slip", engine="compiled"),
    Mutant("mesh-com-shift-sign", "model/inertia.py",
           "I_com = I_origin - steiner(m, com_local)", "I_com = I_origin + steiner(m, com_local)",
           ("tests/model/test_inertia.py::test_a_lopsided_mesh_against_its_two_boxes",),
           "a mesh's inertia is moved from its vertex centroid to its centre of mass with the wrong sign"),
    Mutant("particles-pair-e-larger", "engine/contact/particles.py",
           "return pair_value(own[0], own[1], self.e)",
           "return pair_value(own[0], own[1], self.e) if None in own else max(own)",
           ("tests/engine/test_particles.py::test_two_particles_rebound_with_the_pair_rules_e",),
           "two free particles rebound with the larger of their restitutions"),
    Mutant("gliding-kick-explicit", "engine/contact/surface.py",
           "                J2 = self._gliding_kick(K2, n2, u2, float(J2 @ n2))", "                J2 = 1.0 * J2",
           ("tests/engine/test_surface.py::test_gliding_friction_converges_at_second_order_down_a_slope",),
           "the gliding law's second kick takes the slip before it: the table's step drops to first order"),
    Mutant("gliding-kernel-kick-explicit", "engine/contact/surface_kernels.py",
           "            J2 = _gliding_kick(par[P_MU], K2, n2, u2, _dot(J2, n2))", "            J2 = 1.0 * J2",
           ("tests/engine/test_surface_compiled.py::test_compiled_run_is_the_numpy_reference[tippe_top_gliding]",),
           "the compiled gliding kick is explicit while the numpy reference's is implicit", engine="compiled"),
    Mutant("table-curvature-dropped", "engine/contact/surface.py",
           "curv = float(HdC @ u)", "curv = 0.0",
           ("tests/engine/test_surface_curved.py::test_ball_rolls_off_a_dome_slipping_and_leaving_where_the_closed_"
            "form_says[sphere]",),
           "a curved table's normal force without the curvature the sliding contact point follows"),
    Mutant("table-slope-work-unbooked", "engine/contact/surface.py",
           "wt1 -= 0.5 * h * float(self.g @ (J1 - float(J1 @ n) * n))", "wt1 -= 0.0",
           ("tests/engine/test_surface_compiled.py::test_every_joule_is_booked[numpy-ball_up_a_slope]",),
           "a step's energy change misses −(h/2)g·J₁: a slide across a slope books friction work wrong"),
    Mutant("resume-manifest-unchecked", "analysis/chunks.py",
           "if differ or set(have) != set(want):", "if False:",
           (RESUME.format("basin-scene.friction"), RESUME.format("sweep-settle_speed")),
           "--resume loads the chunks of a folder written by another run"),
    Mutant("resume-run-fields-unchecked", "analysis/chunks.py",
           "differ += [k for k in sorted(set(theirs) | set(run)) if theirs.get(k) != run.get(k)]",
           "differ += []",
           (RESUME.format("basin-t_end"), RESUME.format("basin-method")),
           "--resume compares only the chunking, not what the run's numbers depend on"),
    Mutant("compiled-dipole-force-torque-sign", "engine/torque_kernels.py",
           "t0 = (s1 * Fz - s2 * Fy) + (ay * Bz - az * By)\n",
           "t0 = (s2 * Fy - s1 * Fz) + (ay * Bz - az * By)\n",
           (COMPILED.format("dipoles and a fixed magnet-splitting2"),),
           "the compiled torque of a dipole force has the wrong sign", engine="compiled"),
    Mutant("compiled-friction-off-by-1e-6", "engine/step_kernels.py",
           "e = np.exp((-c * h) * inv)",
           "e = np.exp((-c * (1.0 + 1e-6) * h) * inv)",
           (COMPILED.format("friction-splitting2"),),
           "the compiled kick's friction decay off by 1e-6 relative (outside the round-off bound of tests/roundoff.py)",
           engine="compiled"),
    Mutant("compiled-orbit-phase-dropped", "engine/torque_kernels.py",
           "ph = M.sb_phase[j] + M.sb_omega[j] * t",
           "ph = M.sb_omega[j] * t",
           (COMPILED.format("driven magnets-splitting2"),),
           "the compiled engine's orbiting magnet ignores its initial phase", engine="compiled"),
    Mutant("compiled-rk4-stage-time", "engine/backends/kernels.py",
           "t = t1 if k == 0 else (t2 if k < 3 else t4)",
           "t = t1 if k == 0 else (t1 if k < 3 else t4)",
           (COMPILED.format("rotating field-pem-rk4"),),
           "the compiled RK4 evaluates its middle stages at the wrong time", engine="compiled"),
    Mutant("compiled-friction-decay", "engine/step_kernels.py",
           "e = np.exp((-c * h) * inv)",
           "e = np.exp((-c * h) * inv * 0.5)",
           (COMPILED.format("friction-splitting2"),),
           "the compiled kick damps the spin at half the friction", engine="compiled"),
    Mutant("compiled-merged-kick-dropped", "engine/step_kernels.py",
           "coef = kicks[i + 1] + (kicks[0] if last and step < n - 1 else 0.0)",
           "coef = kicks[i + 1]",
           (COMPILED.format("gravity pendulum-splitting2"),),
           "the compiled splitting step loses the opening kick of every step after the first", engine="compiled"),
    Mutant("near-pairs-graze-ratio-dropped", "engine/broad_kernels.py",
           "rho = max(2.0, (s_min + F + 2.0 * delta) / (s_min + 0.5 * (F - bf[3])))",
           "rho = 1.0",
           ("tests/engine/test_near_pairs.py::test_far_pairs_pass_the_grazing_filter_as_apart",),
           "the near list's margin ignores the grazing filter's gap ratio: far pairs it could flag go unchecked",
           engine="compiled"),
    Mutant("brent-trials-idle-the-hit-bodies", "engine/impact_kernels.py",
           "            if b >= 0:\n                idle[b] = False\n",
           "            if b >= 0:\n                idle[b] = on\n",
           ("tests/engine/test_near_pairs.py::test_near_pairs_and_idle_bodies_give_the_run_of_every_pair_bit_for_bit"
            "[marble-gas]",),
           "Brent's trials leave the bodies of the pairs they look at unmoved: the impacts found at the wrong time",
           engine="compiled"),
    Mutant("lanes-sincos-quadrant", "engine/backends/lanes_kernels.py",
           "cv = -cv if (q == 1.0) | (q == 2.0) else cv",
           "cv = -cv if (q == 1.0) | (q == 3.0) else cv",
           (LANES_SINCOS,), "the vectorised cosine has the wrong sign in the third and fourth quadrants",
           engine="compiled"),
    Mutant("lanes-merged-kick-decay", "engine/backends/lanes_kernels.py",
           "_kick(Y, sa + 1 if closing else i + 1, coef * dt, damped, Ed, Gd)",
           "_kick(Y, i + 1, coef * dt, damped, Ed, Gd)",
           (LANES.format("splitting2"),),
           "the lanes' merged kick between steps decays the spin by the wrong factor", engine="compiled"),
    Mutant("lanes-rk4-weights", "engine/backends/lanes_kernels.py",
           "wgt = 2.0 if stage < 3 else 1.0",
           "wgt = 2.0",
           (LANES.format("pem-rk4 friction"),),
           "the lanes' RK4 weighs its last stage twice", engine="compiled"),
]


def planted_copy(dest: Path, mutant: Mutant | None) -> Path:
    """A copy of pem_physics/ under dest, with ``mutant`` planted; returns dest (the PEM_CODE_ROOT)."""
    shutil.copytree(ROOT / "pem_physics", dest / "pem_physics", ignore=shutil.ignore_patterns("__pycache__"))
    if mutant is not None:
        path = dest / "pem_physics" / mutant.file
        text = path.read_text(encoding="utf-8")
        assert text.count(mutant.original) == 1, f"{mutant.id}: source text not found exactly once in {mutant.file}"
        path.write_text(text.replace(mutant.original, mutant.replacement), encoding="utf-8")
    return dest


def run_tests(code_root: Path, tests, stop_first: bool = True, engine: str = "numpy") -> subprocess.CompletedProcess:
    """pytest on ``tests`` (node ids) in a subprocess, importing pem_physics from code_root.

    engine "numpy" turns the compiled engine off (PEM_NUMBA=0): the tests then run the numpy reference.
    engine "compiled" runs the compiled engine's kernels as their Python source (NUMBA_DISABLE_JIT=1, no build
    made ahead of time), planted or not, so the unplanted run is the baseline of the planted ones.
    """
    env = dict(os.environ, PEM_CODE_ROOT=str(code_root), HYPOTHESIS_PROFILE="mutation",
               PEM_NUMBA="0" if engine == "numpy" else "1",
               PYTHONPATH=os.pathsep.join([str(code_root)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    if engine == "compiled":
        env.update(NUMBA_DISABLE_JIT="1", PEM_AOT="0")
    for var in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_CURRENT_TEST"):
        env.pop(var, None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
           *(["-x"] if stop_first else []), *tests]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def summary(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("FAILED", "ERROR")) or " passed" in ln
             or " failed" in ln]
    return "\n".join(lines[-6:]) or proc.stdout[-2000:] + proc.stderr[-2000:]


def test_table_matches_the_source():
    """Every planted text occurs exactly once in the current source, and each row is well formed."""
    assert len({m.id for m in MUTANTS}) == len(MUTANTS)
    for m in MUTANTS:
        text = (ROOT / "pem_physics" / m.file).read_text(encoding="utf-8")
        assert text.count(m.original) == 1, f"{m.id}: {m.original!r} occurs {text.count(m.original)}× in {m.file}"
        assert m.replacement != m.original and m.tests and m.physics
        for t in m.tests:
            assert (ROOT / t.split("::")[0]).is_file(), f"{m.id}: no test file {t}"


@pytest.mark.parametrize("engine", ["numpy", "compiled"])
def test_unmutated_copy_passes_every_selection(tmp_path, engine):
    selection = sorted({t for m in MUTANTS if m.engine == engine for t in m.tests})
    proc = run_tests(planted_copy(tmp_path, None), selection, stop_first=False, engine=engine)
    assert proc.returncode == 0, summary(proc)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_planted_bug_is_caught(mutant, tmp_path):
    proc = run_tests(planted_copy(tmp_path, mutant), mutant.tests, engine=mutant.engine)
    # exit code 1: tests ran and failed (2–5 would be an interruption, a usage error or nothing collected)
    assert proc.returncode == 1, f"{mutant.id} ({mutant.physics}) not caught:\n{summary(proc)}"
    assert "FAILED" in proc.stdout, summary(proc)


def main(ids) -> int:
    """Script mode: the unplanted baseline of each engine, then each (or each named) mutant planted; prints whether
    and by which test it is caught."""
    import tempfile

    rows = [m for m in MUTANTS if not ids or m.id in ids]
    runs = [(None, engine) for engine in sorted({m.engine for m in rows})] + [(m, m.engine) for m in rows]
    bad = 0
    for m, engine in runs:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            tests = sorted({t for r in rows if r.engine == engine for t in r.tests}) if m is None else m.tests
            proc = run_tests(planted_copy(Path(tmp), m), tests, stop_first=m is not None, engine=engine)
            ok = proc.returncode == 0 if m is None else proc.returncode == 1
            bad += not ok
            failed = [ln.split(" - ")[0] for ln in proc.stdout.splitlines() if ln.startswith("FAILED")]
            name = f"(none, {engine})" if m is None else m.id
            print(f"{name:40s} {'ok ' if ok else 'BAD'} {time.perf_counter() - t0:6.1f} s  "
                  f"{'passes' if m is None and ok else ', '.join(failed) or summary(proc)}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
