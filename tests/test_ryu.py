"""The compiled float formatter (pem_physics/ryu.py) against CPython's own ``repr`` (David Gay's dtoa: a second,
independent implementation of the shortest round-trip digits), and the CSV writer's three paths against each
other."""

from __future__ import annotations

import numpy as np
import pytest

from pem_physics.io import output
from pem_physics.jit import numba

pytestmark = pytest.mark.skipif(numba() is None, reason="the compiled formatter needs numba")


def formatted(values) -> list[str]:
    from pem_physics import ryu

    table = np.ascontiguousarray(np.asarray(values, dtype=float).reshape(1, -1))
    out = np.empty(table.size * ryu.CELL, np.uint8)
    n = ryu.format_rows(table.view(np.uint64), out)
    text = out[:n].tobytes().decode("ascii")
    assert text.endswith("\n") and text.count("\n") == 1
    return text[:-1].split(",")


def hard_cases() -> list[float]:
    """Every power of two (the interval below 2^k is half as wide as above: Ryū's mm_shift), subnormals, the
    largest and smallest doubles, integers and decimals near the positional/exponent switch (10^16, 10^-4),
    exact ties in decimal (x.5, x.25: the round-to-even branch), numbers with many trailing zeros (exact
    decimals: the vr/vm trailing-zero branches), and their negatives."""
    v = [0.0, 1.0, 0.1, 0.2, 0.3, 2 / 3, 1e16, 1e15, 9999999999999998.0, 1234567890123456.0, 12345678901234567.0,
         1e-4, 1e-5, 0.00012345, 9.999999999999999e-05, 5e-324, 1e-323, 2.2250738585072014e-308,
         2.225073858507201e-308, 1.7976931348623157e308, 1e22, 1e23, 9007199254740993.0, 4.35, 0.5, 2.5, 1.25,
         1e100, 1e-100, 123456789.0, 5e-310, float(np.nextafter(1.0, 2.0)), float(np.nextafter(1.0, 0.0))]
    v += [2.0 ** k for k in range(-1074, 1024)] + [3 * 2.0 ** k for k in range(-1074, 1023)]
    v += [10.0 ** k for k in range(-323, 309)] + [float(10 ** k) for k in range(23)]
    v += [float(5 ** j * 2 ** k) for j in range(10, 24) for k in range(0, 90)]  # exact: multiples of 5^q, q ≤ 23
    v += [float(i) for i in range(1, 5000)] + [i / 1000 for i in range(1, 5000)] + [i / 8 for i in range(1, 2000)]
    with np.errstate(over="ignore"):  # the largest double's next is inf: in the list too
        v += [float(np.nextafter(x, np.inf)) for x in v[:5000]] + [float(np.nextafter(x, -np.inf)) for x in v[:5000]]
    return v + [-x for x in v]


def test_hard_cases_as_repr():
    values = hard_cases()
    got = formatted(values)
    bad = [(repr(x), g) for x, g in zip(values, got) if g != repr(x)]
    assert not bad, f"{len(bad)} of {len(values)} differ from repr, e.g. {bad[:5]}"


def test_inf_nan_and_signed_zero_as_repr():
    values = [np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0]
    assert formatted(values) == [repr(float(x)) for x in values] == ["inf", "-inf", "nan", "nan", "0.0", "-0.0"]


@pytest.mark.parametrize("seed", [1, 2])
def test_random_bit_patterns_as_repr(seed):
    """Doubles drawn uniformly over their bit patterns (every exponent equally often, both signs) and numbers
    as a trajectory holds them (normal deviates scaled by 10^-8 … 10^8): the same text as repr."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, np.iinfo(np.int64).max, size=200_000, dtype=np.int64).view(np.uint64)
    bits |= rng.integers(0, 2, size=bits.size).astype(np.uint64) << np.uint64(63)
    values = bits.view(np.float64)
    values = values[np.isfinite(values)]
    values = np.concatenate([values, rng.normal(size=100_000) * 10.0 ** rng.integers(-8, 9, size=100_000)])
    got = formatted(values)
    ref = list(map(repr, values.tolist()))
    bad = [(r, g) for r, g in zip(ref, got) if g != r]
    assert not bad, f"{len(bad)} of {len(ref)} differ from repr, e.g. {bad[:5]}"


def test_csv_rows_the_same_bytes_compiled_and_by_repr(monkeypatch):
    """The CSV writer's body: the compiled rows (JIT here; the ahead-of-time build's entry is checked bit for bit
    in tests/engine/test_aot.py) are the bytes of the repr path, and read back to the table's bits."""
    rng = np.random.default_rng(3)
    table = np.ascontiguousarray(rng.normal(size=(40, 7)) * 10.0 ** rng.integers(-6, 20, size=(40, 7)))
    table[0, :3] = [0.0, -0.0, np.nan]
    compiled = bytes(output.csv_rows(table))
    monkeypatch.setattr(output, "_rows_kernel", lambda: None)
    by_repr = bytes(output.csv_rows(table))
    assert compiled == by_repr
    back = np.array([[float(c) for c in line.split(",")] for line in compiled.decode().splitlines()])
    np.testing.assert_array_equal(back.view(np.uint64)[1:], table.view(np.uint64)[1:])
    assert output.csv_rows(np.zeros((0, 3))) == b""
    from pem_physics import ryu

    assert output.CELL == ryu.CELL == len(repr(-2.2250738585072014e-308)) + 1  # the copy io keeps (no numba import)
