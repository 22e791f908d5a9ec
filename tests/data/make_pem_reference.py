"""Make the PEM parity data in tests/data/pem/: UDF inputs, def files and the peer's recorded results.

    python tests/data/make_pem_reference.py [--peer PATH] [--samples DIR] [--only NAME …]

1. Writes every scene of ``tests/pem_fixtures.py`` as a PEM input file with our writer
   (``pem_physics.io.udf_write``), and the def (schema) files of versions 1.0–1.3.
2. When the original engine is present (``--peer``, default ``../shared/peers/pem/pem`` beside the
   repository; it needs LAPACK, e.g. ``apt-get install liblapack3``), runs each input through it in
   a temporary folder and stores its records as ``NAME.npz``: float64 arrays (file units)
   ``orientation`` (R,B,3,3), ``angular_velocity``, ``angular_momentum``, ``torque`` (R,B,3),
   ``step`` (R,), ``units`` (length, mass, time, ampere in SI), and the SHA-256 of the input and of
   the def file it was run with. The small raw output of one fixture is kept as ``NAME_o.udf``.
   Without the peer the NPZ files are left as they are, and the script says so.
3. Sanity checks, when PEM's shipped samples are present (``--samples``, default
   ``../shared/pem-samples``): our def files declare the same schema as PEM's, and our rewrite
   of each sample scene, run through the peer, reproduces PEM's shipped recorded output.

Nothing from ../shared is copied: the inputs and schemas are written by our code, the numbers
are the peer's measurements.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from pem_physics.io.udf import read_records, read_udf  # noqa: E402
from pem_physics.io.udf_write import DEF_FILES, UNITS, VERSIONS, def_text, udf_text, write_def  # noqa: E402

from pem_fixtures import FIXTURES, RAW_OUTPUT, record_arrays  # noqa: E402

OUT = HERE / "pem"
#: Our rewrite of a sample must reproduce PEM's shipped output to this (relative to each quantity's
#: scale over the run): PEM's sample inputs round cos 30° etc. to 14 digits, ours do not.
SAMPLE_TOL = 1e-9


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save_npz(path: Path, arrays: dict) -> None:
    """An .npz with fixed zip timestamps, so the same numbers give the same bytes."""
    from pem_physics.io.files import atomic_open

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            arr = io.BytesIO()
            np.lib.format.write_array(arr, np.asarray(arrays[name]), allow_pickle=False)
            zf.writestr(info, arr.getvalue())
    with atomic_open(path, "wb") as fh:
        fh.write(buf.getvalue())


def run_peer(peer: Path, inp: Path, def_file: Path) -> tuple[list, str]:
    """Records of the peer's run of ``inp`` and the raw output text."""
    with tempfile.TemporaryDirectory(prefix="pem-peer-") as d:
        shutil.copy(inp, d)
        shutil.copy(def_file, d)
        r = subprocess.run([str(peer), "-I", inp.name, "-O", "out.udf"], cwd=d, capture_output=True, text=True)
        out = Path(d) / "out.udf"
        if r.returncode != 0 or not out.is_file():
            raise SystemExit(f"peer failed on {inp.name} (exit {r.returncode}):\n"
                             f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        return read_records(out), out.read_text(encoding="utf-8")


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    """max |a − b| / scale, scale = max |b| per body and quantity over the run."""
    scale = np.abs(b).max(axis=(0, -1), keepdims=True)
    scale = np.where(scale > 0, scale, 1.0)
    return float(np.max(np.abs(a - b) / scale))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", type=Path, default=ROOT.parent / "shared" / "peers" / "pem" / "pem")
    ap.add_argument("--samples", type=Path, default=ROOT.parent / "shared" / "pem-samples")
    ap.add_argument("--only", nargs="*", choices=sorted(FIXTURES), help="only these fixtures")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)

    for version in VERSIONS:
        write_def(OUT, version)
    def13 = OUT / DEF_FILES["1.3"]

    names = args.only or list(FIXTURES)
    inputs = {}
    for name in names:
        fx = FIXTURES[name]
        path = OUT / f"{name}.udf"
        text = udf_text(fx.build(), units=fx.units)
        from pem_physics.io.files import atomic_open

        with atomic_open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        inputs[name] = path
        print(f"wrote {path.relative_to(ROOT)} ({len(text)} bytes)")

    if args.samples.is_dir():
        for version in VERSIONS:
            theirs = args.samples / DEF_FILES[version]
            if theirs.is_file():
                a = read_udf(OUT / DEF_FILES[version]).schema
                b = read_udf(theirs).schema
                same = (a.classes, a.fields, a.global_fields) == (b.classes, b.fields, b.global_fields)
                print(f"def {version}: {'same schema as' if same else 'DIFFERENT schema from'} PEM's {theirs.name}")
                if not same:
                    return 1
        assert def_text("1.3") == def13.read_text(encoding="utf-8")

    if not args.peer.is_file():
        print(f"peer absent ({args.peer}): inputs and def files written; the NPZ references are NOT regenerated "
              "(the committed ones are kept)")
        return 0

    peer_sha = sha256(args.peer)
    worst = 0.0
    for name, inp in inputs.items():
        recs, raw = run_peer(args.peer, inp, def13)
        arrays = record_arrays(recs)
        doc = read_udf(inp)
        up = doc.data["unitParameter"]
        st = doc.data["simulation"]["time"]
        report = int(st["reportSteps"])
        arrays.update(step=np.arange(len(recs), dtype=np.int64) * report,
                      units=np.array([up["length"], up["mass"], up["time"], up["ampere"]], dtype=np.float64),
                      input_sha256=np.array(sha256(inp)), def_sha256=np.array(sha256(def13)),
                      peer_sha256=np.array(peer_sha))
        save_npz(OUT / f"{name}.npz", arrays)
        n_rec, n_body = arrays["orientation"].shape[:2]
        print(f"{name}: peer ran {st['simulationSteps']} steps, {n_rec} records × {n_body} pendulums "
              f"→ {(OUT / f'{name}.npz').relative_to(ROOT)} ({(OUT / f'{name}.npz').stat().st_size} bytes)")
        if name == RAW_OUTPUT:
            from pem_physics.io.files import atomic_open

            with atomic_open(OUT / f"{name}_o.udf", "w", encoding="utf-8", newline="\n") as fh:
                fh.write(raw)
        shipped = args.samples / f"{name}_o.udf"
        if FIXTURES[name].sample and shipped.is_file():
            ref = record_arrays(read_records(shipped))
            if ref["orientation"].shape != arrays["orientation"].shape:
                print(f"  {name}: record shapes differ from PEM's shipped output: {ref['orientation'].shape}")
                return 1
            # PEM's output is in the sample's units; ours may be written in others (same physics)
            ours_units = tuple(arrays["units"])
            theirs_units = tuple(float(x) for x in (read_udf(args.samples / f"{name}.udf").data.get(
                "unitParameter") or dict(zip(("length", "mass", "time", "ampere"), UNITS["si"]))).values())
            if ours_units != theirs_units:
                print(f"  {name}: written in units {ours_units}, PEM's sample in {theirs_units}")
                return 1
            errs = {k: rel_err(arrays[k], ref[k]) for k in ("orientation", "angular_velocity", "angular_momentum")}
            worst = max(worst, *errs.values())
            print(f"  vs PEM's shipped {shipped.name}: max relative difference "
                  + ", ".join(f"{k} {v:.2g}" for k, v in errs.items()))
            if max(errs.values()) > SAMPLE_TOL:
                print(f"  {name}: our rewrite does not reproduce PEM's sample (tolerance {SAMPLE_TOL})")
                return 1
    print(f"done; samples reproduced to {worst:.2g} relative" if worst else "done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
