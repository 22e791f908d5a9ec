"""PC2 point caches: round trip, the header bytes against the format written out by hand, bad input named."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

from pem_physics.io.pc2 import PC2Error, read_pc2, read_pc2_header, write_pc2


def test_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    samples = rng.normal(size=(7, 13, 3)) * 10
    path = tmp_path / "gas.pc2"
    write_pc2(path, samples, start_frame=5.0, sample_rate=0.5)
    back, head = read_pc2(path)
    assert back.dtype == np.float32 and back.shape == (7, 13, 3)
    np.testing.assert_array_equal(back, samples.astype(np.float32))
    assert head == {"version": 1, "n_points": 13, "start_frame": 5.0, "sample_rate": 0.5, "n_samples": 7}
    assert read_pc2_header(path) == head
    assert [p.name for p in tmp_path.iterdir()] == ["gas.pc2"]   # no temporary file left


def test_bytes_are_the_format_written_out_by_hand(tmp_path):
    samples = np.array([[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
                        [[-1.5, 0.25, 1e3], [7.0, 8.0, 9.0]]])            # 2 samples of 2 points
    path = tmp_path / "two.pc2"
    write_pc2(path, samples, start_frame=1.0, sample_rate=1.0)
    raw = path.read_bytes()
    header = (b"POINTCACHE2\x00"              # 12-byte signature
              + (1).to_bytes(4, "little")     # version
              + (2).to_bytes(4, "little")     # points
              + bytes.fromhex("0000803f")     # start frame 1.0 as little-endian IEEE float32
              + bytes.fromhex("0000803f")     # sample rate 1.0
              + (2).to_bytes(4, "little"))    # samples
    assert raw[:32] == header
    assert len(raw) == 32 + 2 * 2 * 3 * 4
    # sample-major, then point, then x y z: the second sample's first point is -1.5, 0.25, 1000
    assert raw[32 + 24:32 + 36] == struct.pack("<3f", -1.5, 0.25, 1000.0)
    assert raw[32:36] == bytes.fromhex("0000803f")


@pytest.mark.parametrize("samples, match", [
    (np.zeros((2, 3)), r"shape \(samples, points, 3\)"),
    (np.zeros((2, 3, 2)), r"shape \(samples, points, 3\)"),
    (np.zeros((0, 3, 3)), r"at least one sample"),
    (np.zeros((2, 0, 3)), r"at least one sample"),
])
def test_bad_shapes_are_named(tmp_path, samples, match):
    with pytest.raises(PC2Error, match=match):
        write_pc2(tmp_path / "x.pc2", samples)
    assert not any(tmp_path.iterdir())


def test_non_finite_values_are_named_by_sample_and_point(tmp_path):
    s = np.zeros((3, 4, 3))
    s[2, 1, 0] = np.nan
    with pytest.raises(PC2Error, match=r"samples\[2, 1, 0\] = nan is not finite"):
        write_pc2(tmp_path / "x.pc2", s)
    s[2, 1, 0] = 1e39   # finite in float64, inf in float32
    with pytest.raises(PC2Error, match=r"samples\[2, 1, 0\].*not finite \(as float32\)"):
        write_pc2(tmp_path / "x.pc2", s)
    with pytest.raises(PC2Error, match=r"sample_rate = 0 must be > 0"):
        write_pc2(tmp_path / "x.pc2", np.zeros((1, 1, 3)), sample_rate=0)
    with pytest.raises(PC2Error, match=r"start_frame = nan must be finite"):
        write_pc2(tmp_path / "x.pc2", np.zeros((1, 1, 3)), start_frame=float("nan"))
    assert not any(tmp_path.iterdir())


def test_a_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "keep.pc2"
    write_pc2(path, np.ones((1, 2, 3)))
    before = path.read_bytes()
    with pytest.raises(PC2Error):
        write_pc2(path, np.full((1, 2, 3), np.inf))
    assert path.read_bytes() == before


def test_bad_files_are_named(tmp_path):
    good = tmp_path / "good.pc2"
    write_pc2(good, np.ones((2, 3, 3)))
    raw = good.read_bytes()
    cases = {
        "short.pc2": (raw[:20], r"short.pc2: 20 bytes is shorter than the 32-byte PC2 header"),
        "magic.pc2": (b"POINTCACHE3\x00" + raw[12:], r"magic.pc2: not a PC2 file"),
        "version.pc2": (raw[:12] + (2).to_bytes(4, "little") + raw[16:], r"version.pc2: PC2 version 2"),
        "truncated.pc2": (raw[:-4], r"truncated.pc2: 100 bytes, but 2 samples of 3 points need 104"),
        "zero.pc2": (raw[:16] + (0).to_bytes(4, "little") + raw[20:32], r"zero.pc2: header says 0 points"),
    }
    for name, (data, match) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(PC2Error, match=match):
            read_pc2(path)
    with pytest.raises(FileNotFoundError):
        read_pc2(tmp_path / "missing.pc2")
    assert os.path.getsize(good) == 32 + 2 * 3 * 12
