"""Mesh mass properties: triangles per second of pem_physics against trimesh and libigl, measured in the same run.

All compute volume, centre of mass and inertia tensor of the same closed icosphere meshes
(exact integrals); the script checks that they agree to 1e-10 (pem's numba and numpy paths:
1e-12) before timing. pem is timed on its default path (numba kernels for meshes of at least
``fastmesh.MIN_TRIANGLES`` triangles when numba is installed, else numpy) and on the numpy
reference path; libigl's C++ ``igl.moments`` is a second peer when ``import igl`` works.

    python bench/bench_inertia.py [--max-subdivisions 8] [--json PATH]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import write_json  # noqa: E402

from pem_physics.model import fastmesh
from pem_physics.model.inertia import mesh_mass_properties  # noqa: E402


def best_of(fn, repeat=5):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


@contextmanager
def numpy_path():
    """pem's numpy reference path, whatever the mesh size."""
    saved = fastmesh.ENABLED
    fastmesh.ENABLED = False
    try:
        yield
    finally:
        fastmesh.ENABLED = saved


def assert_agree(mp, volume, com, inertia, rtol, who):
    assert abs(mp.volume - volume) <= rtol * mp.volume, f"{who}: volume {volume} vs {mp.volume}"
    np.testing.assert_allclose(com, mp.center_of_mass, rtol=0, atol=rtol, err_msg=f"{who}: centre of mass")
    np.testing.assert_allclose(inertia, mp.inertia, rtol=0, atol=rtol * np.abs(mp.inertia).max(),
                               err_msg=f"{who}: inertia")


def main(argv=None):
    import trimesh

    try:
        import igl
    except ImportError:  # libigl is an optional peer (requirements/bench.txt)
        igl = None

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-subdivisions", type=int, default=8, help="icosphere level (8 → 1.3M triangles)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    numba_version = fastmesh.numba.__version__ if fastmesh.available() else "not installed"
    igl_version = "not installed"
    if igl is not None:
        try:
            igl_version = metadata.version("libigl")
        except metadata.PackageNotFoundError:  # imported from a source build, not a wheel
            igl_version = "?"
    print(f"python {platform.python_version()}  numpy {np.__version__}  numba {numba_version}  "
          f"trimesh {trimesh.__version__}  libigl {igl_version}  {platform.processor() or platform.machine()}")
    if fastmesh.available() and fastmesh.ENABLED:
        # Compile (or load from numba's cache) before any timing.
        saved = fastmesh.MIN_TRIANGLES
        fastmesh.MIN_TRIANGLES = 0
        try:
            mesh_mass_properties(*map(np.asarray, (trimesh.creation.icosphere(2).vertices,
                                                   trimesh.creation.icosphere(2).faces)))
        finally:
            fastmesh.MIN_TRIANGLES = saved
    rows = []
    for level in range(4, args.max_subdivisions + 1):
        m = trimesh.creation.icosphere(subdivisions=level)
        V, F = np.asarray(m.vertices), np.asarray(m.faces)
        n = len(F)
        fast = fastmesh.available() and fastmesh.ENABLED and n >= fastmesh.MIN_TRIANGLES
        ours = mesh_mass_properties(V, F, density=1.0)
        with numpy_path():
            ref = mesh_mass_properties(V, F, density=1.0)
        assert_agree(ref, ours.volume, ours.center_of_mass, ours.inertia, 1e-12, "pem numba vs numpy")
        assert_agree(ours, m.volume, m.center_mass, m.moment_inertia, 1e-10, "trimesh")
        if igl is not None:
            m0, m1, m2 = igl.moments(V, F)
            assert_agree(ours, m0, m1 / m0, m2, 1e-10, "igl.moments")

        def peer(V=V, F=F):
            t = trimesh.Trimesh(V, F, process=False)
            return t.mass_properties

        t_checked = best_of(lambda V=V, F=F: mesh_mass_properties(V, F, density=1.0))
        t_unchecked = best_of(lambda V=V, F=F: mesh_mass_properties(V, F, density=1.0, check=False))
        with numpy_path():
            t_numpy = best_of(lambda V=V, F=F: mesh_mass_properties(V, F, density=1.0))
            t_numpy_unchecked = best_of(lambda V=V, F=F: mesh_mass_properties(V, F, density=1.0, check=False))
        t_peer = best_of(peer)
        t_igl = best_of(lambda V=V, F=F: igl.moments(V, F)) if igl is not None else None
        row = {"triangles": n, "pem_s": t_checked, "pem_unchecked_s": t_unchecked, "trimesh_s": t_peer,
               "speedup_vs_trimesh": t_peer / t_checked, "speedup_unchecked_vs_trimesh": t_peer / t_unchecked,
               "pem_path": "numba" if fast else "numpy",
               "pem_numpy_s": t_numpy, "pem_numpy_unchecked_s": t_numpy_unchecked,
               "igl_s": t_igl, "ratio_vs_igl": t_unchecked / t_igl if t_igl else None,
               "ratio_checked_vs_igl": t_checked / t_igl if t_igl else None}
        rows.append(row)
        igl_txt = (f"igl {1e3 * t_igl:8.2f}  pem/igl {t_checked / t_igl:5.2f} / {t_unchecked / t_igl:5.2f}"
                   if t_igl else "igl n/a")
        print(f"{n:>9} triangles [{row['pem_path']:5}] ms: pem {1e3 * t_checked:8.2f} checked, "
              f"{1e3 * t_unchecked:8.2f} unchecked  numpy path {1e3 * t_numpy:8.2f} / {1e3 * t_numpy_unchecked:8.2f}  "
              f"trimesh {1e3 * t_peer:8.2f} (×{t_peer / t_checked:5.1f} / ×{t_peer / t_unchecked:5.1f})  {igl_txt}")
    if args.json:
        write_json(args.json, rows, indent=2)
    return rows


if __name__ == "__main__":
    main()
