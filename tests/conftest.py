"""Pytest set-up: the repository root on sys.path, shared fixtures. Oracles live in oracles.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SAMPLES = ROOT.parent / "shared" / "pem-samples"


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
