"""Pytest set-up: the code under test on sys.path, hypothesis profiles, shared fixtures.

Oracles live in oracles.py, hypothesis example budgets in budget.py.

The ``pem_physics`` under test is the checkout's, or the copy in the folder named by the
environment variable PEM_CODE_ROOT (tests/test_mutants.py plants bugs in such copies and runs
these tests against them; the check below makes sure the copy, not the checkout, is imported).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import Phase, settings

ROOT = Path(__file__).resolve().parents[1]
CODE_ROOT = Path(os.environ.get("PEM_CODE_ROOT") or ROOT).resolve()
if CODE_ROOT != ROOT:
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT]
if str(CODE_ROOT) not in sys.path:
    sys.path.insert(0, str(CODE_ROOT))
if CODE_ROOT != ROOT:
    import pem_physics

    if not Path(pem_physics.__file__).resolve().is_relative_to(CODE_ROOT):
        raise RuntimeError(f"PEM_CODE_ROOT={CODE_ROOT} but pem_physics was imported from {pem_physics.__file__}")

#: Test data carried by the repository (PEM fixtures: tests/data/pem/, made by tests/data/make_pem_reference.py).
DATA = ROOT / "tests" / "data"

# Hypothesis: the same examples on every run (a red CI must be reproducible, and the project
# promises bit-identical results), unless HYPOTHESIS_PROFILE asks for fresh random ones:
# "explore-ci" (bounded: at most 50 examples a test; budget.py) or "explore" (at least 500 a test).
# Example counts are set per test through budget.property_settings().
# No profile has a deadline (budget.py): an example's run time depends on the machine's load, not on the code.
settings.register_profile("repeatable", derandomize=True, print_blob=True, deadline=None)
settings.register_profile("explore-ci", derandomize=False, print_blob=True, deadline=None)
settings.register_profile("explore", derandomize=False, print_blob=True, deadline=None)
# tests/test_mutants.py: the repeatable examples, no shrinking (it only needs to know that a test fails)
settings.register_profile("mutation", derandomize=True, phases=[Phase.explicit, Phase.reuse, Phase.generate],
                          deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def pytest_report_header(config):
    """Name the hypothesis profile and seed, so that a failing exploratory run can be repeated, and numpy's
    AVX-512 code paths (on, or turned off by NPY_DISABLE_CPU_FEATURES: noxfile.without_avx512)."""
    from roundoff import avx512_targets

    seed = config.getoption("hypothesis_seed", None)
    off = os.environ.get("NPY_DISABLE_CPU_FEATURES", "")
    return [f"hypothesis profile: {os.environ.get('HYPOTHESIS_PROFILE', 'repeatable')}" + (
        f", --hypothesis-seed={seed}" if seed is not None else ""),
        f"numpy {np.__version__} AVX-512 code paths on: {' '.join(avx512_targets()) or 'none'}"
        + (f" (NPY_DISABLE_CPU_FEATURES={off!r})" if off else "")]


def splitting4_once(methods) -> list:
    """A parametrize's ``methods``, splitting4 marked slow: it runs the same kernels as splitting2 with a longer table
    of coefficients (three times the force evaluations), so outside the core's numpy-2 session, which runs every
    mark, splitting2 stands for it."""
    return [pytest.param(m, marks=pytest.mark.slow) if m == "splitting4" else m for m in methods]


#: What the quick command (noxfile's ``quick``: the inner loop) leaves out by the mark ``heavy``: tests of over ~5 s
#: on a slow 2-core machine (pytest --durations) whose cost is a numpy reference run over many scenes or steps, each
#: with lighter kin that stay — {test function: the parts of the parameter ids that are heavy (("",): every one)}.
#: The full matrix runs them as before, on numpy 2 and 1.26 and without AVX-512 (where they can fail differently).
HEAVY = {
    "test_compiled_engine_follows_numpy_for_1000_steps": ("pem-rk4",),        # splitting2 and Euler stay
    "test_generated_scenes_agree_with_numpy": ("",),
    "test_generated_translating_scenes_agree_with_numpy": ("",),
    "test_generated_ensembles_agree_with_the_member_engine": ("",),
    "test_ensemble_of_translating_bodies_follows_numpy_and_its_single_runs": ("",),
    "test_compiled_run_is_the_numpy_reference": ("coin_in_a_pipe", "marble_to_rest_in_a_bowl"),
    "test_a_pendulum_striking_walls_matches_the_numpy_driver": ("box", "sphere"),  # the plane, the cylinder stay
    "test_the_cell_search_finds_the_first_overlap_of_all_pairs": ("-True",),
    "test_python_path_matches_numpy": ("three magnets, friction", "field, no friction"),
    "test_a_vanishing_friction_gives_the_frictionless_run": ("numpy-True",),
    "test_lanes_match_numpy_and_the_member_engine": ("splitting4",),
    "test_falling_magnet_follows_numpy_and_the_parabola": ("splitting4",),
    "test_per_member_friction_and_field": ("splitting4",),
    "test_a_friction_coefficient_off_by_1e_6_relative_exceeds_the_bound": ("pem-rk4",),
    "test_the_examples_pass_clean": ("tumbling-die",),
    "test_a_coin_falling_from_its_edge_with_friction_lands_and_comes_to_rest": ("",),   # the landing's halvings
}


def pytest_collection_modifyitems(config, items):
    """Mark :data:`HEAVY`'s tests ``heavy``."""
    for item in items:
        name = getattr(item, "originalname", item.name)
        if any(part in item.name[len(name):] for part in HEAVY.get(name, ())):
            item.add_marker(pytest.mark.heavy)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
