"""Mesh mass properties: triangles per second of pem_physics against trimesh, measured in the same run.

Both compute volume, centre of mass and inertia tensor of the same closed icosphere meshes
(exact integrals); the script also checks that they agree to 1e-10 before timing.

    python bench/bench_inertia.py [--max-subdivisions 8] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pem_physics.inertia import mesh_mass_properties  # noqa: E402


def best_of(fn, repeat=5):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    import trimesh

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-subdivisions", type=int, default=8, help="icosphere level (8 → 1.3M triangles)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    print(f"python {platform.python_version()}  numpy {np.__version__}  trimesh {trimesh.__version__}  "
          f"{platform.processor() or platform.machine()}")
    rows = []
    for level in range(4, args.max_subdivisions + 1):
        m = trimesh.creation.icosphere(subdivisions=level)
        V, F = np.asarray(m.vertices), np.asarray(m.faces)
        ours = mesh_mass_properties(V, F, density=1.0)
        assert abs(ours.volume - m.volume) <= 1e-10 * m.volume
        np.testing.assert_allclose(ours.inertia, m.moment_inertia, atol=1e-10 * np.abs(ours.inertia).max())

        def peer(V=V, F=F):
            t = trimesh.Trimesh(V, F, process=False)
            return t.mass_properties

        t_checked = best_of(lambda V=V, F=F: mesh_mass_properties(V, F, density=1.0))
        t_unchecked = best_of(lambda V=V, F=F: mesh_mass_properties(V, F, density=1.0, check=False))
        t_peer = best_of(peer)
        n = len(F)
        row = {"triangles": n, "pem_s": t_checked, "pem_unchecked_s": t_unchecked, "trimesh_s": t_peer,
               "speedup_vs_trimesh": t_peer / t_checked, "speedup_unchecked_vs_trimesh": t_peer / t_unchecked}
        rows.append(row)
        print(f"{n:>9} triangles  pem {n / t_checked:12.3e} tri/s (closedness checked)  "
              f"{n / t_unchecked:12.3e} tri/s (unchecked)  trimesh {n / t_peer:12.3e} tri/s  "
              f"ratio {t_peer / t_checked:5.2f} / {t_peer / t_unchecked:5.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return rows


if __name__ == "__main__":
    main()
