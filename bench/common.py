"""What the benchmark scripts share: their JSON results, written atomically."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pem_physics.io.output import atomic_open  # noqa: E402


def write_json(path, obj, **kw) -> None:
    """json.dumps(obj, **kw) to ``path`` via a temporary sibling: a failed run leaves no half file."""
    with atomic_open(path) as fh:
        fh.write(json.dumps(obj, **kw) + "\n")


def finish(results: dict, start: float, path=None, **kw) -> dict:
    """Record and print the run time (s since ``start``, perf_counter), then write the results if asked."""
    results["runtime_s"] = time.perf_counter() - start
    print(f"\nruntime {results['runtime_s']:.0f} s")
    if path:
        write_json(path, results, **kw)
    return results
