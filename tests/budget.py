"""Hypothesis budgets: each property test names its example count for the repeatable CI run;
the profile picked by HYPOTHESIS_PROFILE (registered in conftest.py) scales it.

- ``repeatable`` (default): that count, derandomized;
- ``explore-ci``: fresh random examples, at most 50 a test, a bounded run for CI (``--hypothesis-seed``
  makes a failure reproducible);
- ``explore``: fresh random examples, at least 500 a test (a long local hunt);
- ``mutation`` (tests/test_mutants.py): as ``repeatable``, without shrinking a failure.

No profile has a deadline (conftest.py): how long an example takes depends on the machine's load (and the
first example of a numba test compiles), never on whether the code is right; and a deadline would not stop a
hanging example anyway (hypothesis measures an example after it returns).
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "repeatable")
EXPLORE_CI_MAX_EXAMPLES = 50


def property_settings(n: int, **kw) -> settings:
    """Hypothesis settings for a test that runs ``n`` examples in the repeatable profile (kw: other settings)."""
    if PROFILE == "explore-ci":
        return settings(max_examples=min(n, EXPLORE_CI_MAX_EXAMPLES), deadline=None, **kw)
    if PROFILE == "explore":
        return settings(max_examples=max(n, 500), deadline=None, **kw)
    return settings(max_examples=n, deadline=None, **kw)
