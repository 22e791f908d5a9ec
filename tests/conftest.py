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


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
