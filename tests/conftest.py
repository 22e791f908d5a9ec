"""Pytest set-up: the repository root on sys.path, shared fixtures. Oracles live in oracles.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: Test data carried by the repository (PEM fixtures: tests/data/pem/, made by tests/data/make_pem_reference.py).
DATA = ROOT / "tests" / "data"

# Hypothesis: the same examples on every run (a red CI must be reproducible, and the project
# promises bit-identical results), unless HYPOTHESIS_PROFILE=explore asks for fresh random ones.
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
