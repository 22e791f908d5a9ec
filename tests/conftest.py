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
# "explore-ci" (bounded: at most 50 examples a test, 60 s an example; budget.py) or "explore"
# (at least 500 a test). Example counts and deadlines are set per test through budget.property_settings().
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore-ci", derandomize=False, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
# tests/test_mutants.py: the repeatable examples, no shrinking (it only needs to know that a test fails)
settings.register_profile("mutation", derandomize=True, phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def pytest_report_header(config):
    """Name the hypothesis profile and seed, so that a failing exploratory run can be repeated."""
    seed = config.getoption("hypothesis_seed", None)
    return f"hypothesis profile: {os.environ.get('HYPOTHESIS_PROFILE', 'repeatable')}" + (
        f", --hypothesis-seed={seed}" if seed is not None else "")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
