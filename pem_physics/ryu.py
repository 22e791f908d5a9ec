"""Doubles as the shortest decimal text that reads back bit for bit — Python's ``repr`` — compiled (numba).

A CSV of a run is hundreds of thousands of numbers: ``repr`` of each takes ~0.27 µs (David Gay's dtoa behind
CPython's float formatting plus an object per number), a fifth of the whole run of the 15-pendulum wave. This is
Ulf Adams' Ryū (PLDI 2018: "Ryū: fast float-to-string conversion"), the shortest digits in the interval of reals
that round to the double, correctly rounded when several have that length, then laid out exactly as CPython's
``float.__repr__`` lays them out (positional for decimal exponents −4 < e ≤ 16, else ``d.ddde±XX``; ``inf``,
``-inf``, ``nan``, ``-0.0``), so the bytes are ``repr``'s. The reference is ``repr`` itself
(tests/test_ryu.py): every exponent, subnormals, powers of two (their asymmetric intervals), integers,
round-number ties.

Imported only where numba is (:func:`pem_physics.jit.numba`); a build made ahead of time carries
:func:`format_rows` (entry ``csv_rows``: :mod:`pem_physics.aot`), so a run that loads that build writes its CSV without
numba. The tables (5^q and 2^k/5^q to 125 bits, split into two 64-bit halves) are made here from Python's integers,
as Ryū's generator makes them.
"""

from __future__ import annotations

import numpy as np

from .jit import numba as _numba

#: The kernel a build made ahead of time holds (:mod:`pem_physics.aot`): kind → function.
BUILD_ENTRIES = {"csv_rows": "format_rows"}

nb = _numba()
_jit = nb.njit(cache=True, error_model="numpy")

#: Bits kept of 5^q (``_POW5``) and of 2^k / 5^q (``_POW5_INV``): 125 (Ryū's d2s)
_BITS = 125


def _tables() -> tuple[np.ndarray, np.ndarray]:
    """(342, 2) ⌊2^(bitlen(5^q) − 1 + 125) / 5^q⌋ + 1 and (326, 2) 5^q to its top 125 bits, as (low, high) uint64."""
    mask = (1 << 64) - 1
    inv = np.zeros((342, 2), np.uint64)
    pow5 = np.zeros((326, 2), np.uint64)
    for q in range(342):
        p = 5 ** q
        v = (1 << (p.bit_length() - 1 + _BITS)) // p + 1
        inv[q] = v & mask, v >> 64
    for q in range(326):
        p = 5 ** q
        n = p.bit_length()
        v = p >> (n - _BITS) if n >= _BITS else p << (_BITS - n)
        pow5[q] = v & mask, v >> 64
    return inv, pow5


_POW5_INV, _POW5 = _tables()

# uint64 constants: numba types a bare int literal as int64, and uint64 ⊕ int64 is float64
_U0, _U1, _U2, _U4, _U5, _U10 = (np.uint64(v) for v in (0, 1, 2, 4, 5, 10))
_U32, _U52, _U63, _U64 = (np.uint64(v) for v in (32, 52, 63, 64))
_LOW32 = np.uint64(0xFFFFFFFF)
_MANTISSA = np.uint64((1 << 52) - 1)
_HIDDEN = np.uint64(1 << 52)
_ABS = np.uint64((1 << 63) - 1)
_INF = np.uint64(0x7FF0000000000000)
#: The longest text a double takes ("-2.2250738585072014e-308") and its comma
CELL = 25


@_jit
def _umul128(a, b):
    """(low, high) 64-bit halves of the 128-bit product a·b of two uint64."""
    a_lo = a & _LOW32
    a_hi = a >> _U32
    b_lo = b & _LOW32
    b_hi = b >> _U32
    b00 = a_lo * b_lo
    mid1 = a_hi * b_lo + (b00 >> _U32)
    mid2 = a_lo * b_hi + (mid1 & _LOW32)
    return (mid2 << _U32) | (b00 & _LOW32), a_hi * b_hi + (mid1 >> _U32) + (mid2 >> _U32)


@_jit
def _mul_shift(m, low, high, j):
    """⌊m · (high·2⁶⁴ + low) / 2^j⌋ for m < 2⁵⁵, 64 < j < 128 (uint64)."""
    low1, high1 = _umul128(m, high)
    high0 = _umul128(m, low)[1]
    s = high0 + low1
    if s < high0:
        high1 += _U1
    d = j - _U64
    return (high1 << (_U64 - d)) | (s >> d)


@_jit
def _pow5_factor(v):
    """How many times 5 divides v (v > 0)."""
    n = 0
    while v % _U5 == _U0:
        v //= _U5
        n += 1
    return n


@_jit
def _pow5bits(e):
    """Bits of 5^e (0 ≤ e ≤ 3528)."""
    return ((e * 1217359) >> 19) + 1


@_jit
def shortest(a):
    """The shortest decimal (digits, exponent10) with digits·10^exponent10 reading back as the positive finite
    double whose bits are ``a`` (uint64); the one nearest to it among those of that length (Ryū's d2d)."""
    ieee_m = a & _MANTISSA
    ieee_e = np.int64(a >> _U52)
    if ieee_e == 0:
        e2 = 1 - 1023 - 52 - 2
        m2 = ieee_m
    else:
        e2 = ieee_e - 1023 - 52 - 2
        m2 = _HIDDEN | ieee_m
    even = (m2 & _U1) == _U0
    mv = _U4 * m2
    mm_shift = _U1 if (ieee_m != _U0 or ieee_e <= 1) else _U0
    vm_zeros = False
    vr_zeros = False
    if e2 >= 0:
        q = ((e2 * 78913) >> 18) - (1 if e2 > 3 else 0)  # ⌊log10 2^e2⌋, one less above 3
        e10 = q
        j = np.uint64(-e2 + q + _BITS + _pow5bits(q) - 1)
        lo, hi = _POW5_INV[q, 0], _POW5_INV[q, 1]
        vr = _mul_shift(mv, lo, hi, j)
        vp = _mul_shift(mv + _U2, lo, hi, j)
        vm = _mul_shift(mv - _U1 - mm_shift, lo, hi, j)
        if q <= 21:  # only then can 5^q divide mv and the bounds be exact decimals
            if mv % _U5 == _U0:
                vr_zeros = _pow5_factor(mv) >= q
            elif even:
                vm_zeros = _pow5_factor(mv - _U1 - mm_shift) >= q
            elif _pow5_factor(mv + _U2) >= q:
                vp -= _U1
    else:
        q = ((-e2 * 732923) >> 20) - (1 if -e2 > 1 else 0)  # ⌊log10 5^−e2⌋, one less above 1
        e10 = q + e2
        i = -e2 - q
        j = np.uint64(q - (_pow5bits(i) - _BITS))
        lo, hi = _POW5[i, 0], _POW5[i, 1]
        vr = _mul_shift(mv, lo, hi, j)
        vp = _mul_shift(mv + _U2, lo, hi, j)
        vm = _mul_shift(mv - _U1 - mm_shift, lo, hi, j)
        if q <= 1:
            vr_zeros = True
            if even:
                vm_zeros = mm_shift == _U1
            else:
                vp -= _U1
        elif q < 63:
            vr_zeros = (mv & ((_U1 << np.uint64(q)) - _U1)) == _U0
    removed = 0
    if vm_zeros or vr_zeros:  # the rare case (~0.7 %): an exact bound or an exact tie may decide
        last = 0
        while True:
            vp10 = vp // _U10
            vm10 = vm // _U10
            if vp10 <= vm10:
                break
            vr10 = vr // _U10
            vm_zeros = vm_zeros and vm - _U10 * vm10 == _U0
            vr_zeros = vr_zeros and last == 0
            last = np.int64(vr - _U10 * vr10)
            vr, vp, vm = vr10, vp10, vm10
            removed += 1
        if vm_zeros:
            while True:
                vm10 = vm // _U10
                if vm - _U10 * vm10 != _U0:
                    break
                vr10 = vr // _U10
                vr_zeros = vr_zeros and last == 0
                last = np.int64(vr - _U10 * vr10)
                vr, vp, vm = vr10, vp // _U10, vm10
                removed += 1
        if vr_zeros and last == 5 and vr % _U2 == _U0:
            last = 4  # an exact ...50…0 rounds to even
        up = (vr == vm and (not even or not vm_zeros)) or last >= 5
    else:
        up = False
        while True:
            vp10 = vp // _U10
            vm10 = vm // _U10
            if vp10 <= vm10:
                break
            vr10 = vr // _U10
            up = vr - _U10 * vr10 >= _U5
            vr, vp, vm = vr10, vp10, vm10
            removed += 1
        up = up or vr == vm
    return vr + (_U1 if up else _U0), e10 + removed


@_jit
def _put_ascii(out, pos, b0, b1, b2):
    out[pos] = b0
    out[pos + 1] = b1
    out[pos + 2] = b2
    return pos + 3


@_jit
def write_repr(bits, out, pos, digits):
    """Write ``repr`` of the double whose bits are ``bits`` (uint64) into ``out`` (uint8) from ``pos``; return the
    position after it. ``digits``: scratch, ≥ 17 uint8."""
    a = bits & _ABS
    if a >= _INF:
        if a > _INF:
            return _put_ascii(out, pos, 110, 97, 110)  # nan (its sign is not shown, as repr)
        if bits != a:
            out[pos] = 45
            pos += 1
        return _put_ascii(out, pos, 105, 110, 102)  # inf
    if bits != a:
        out[pos] = 45  # -
        pos += 1
    if a == _U0:
        return _put_ascii(out, pos, 48, 46, 48)  # 0.0
    v, e = shortest(a)
    n = 0
    while v != _U0:
        w = v // _U10
        digits[n] = np.uint8(48 + np.int64(v - _U10 * w))
        v = w
        n += 1
    # digits[n-1] is the leading digit; the value is 0.d₁d₂…dₙ × 10^point
    point = n + e
    if -4 < point <= 16:
        if point <= 0:
            out[pos] = 48
            out[pos + 1] = 46
            pos += 2
            for _ in range(-point):
                out[pos] = 48
                pos += 1
            for k in range(n - 1, -1, -1):
                out[pos] = digits[k]
                pos += 1
        elif point < n:
            for k in range(n - 1, n - 1 - point, -1):
                out[pos] = digits[k]
                pos += 1
            out[pos] = 46
            pos += 1
            for k in range(n - 1 - point, -1, -1):
                out[pos] = digits[k]
                pos += 1
        else:
            for k in range(n - 1, -1, -1):
                out[pos] = digits[k]
                pos += 1
            for _ in range(point - n):
                out[pos] = 48
                pos += 1
            out[pos] = 46
            out[pos + 1] = 48
            pos += 2
        return pos
    out[pos] = digits[n - 1]
    pos += 1
    if n > 1:
        out[pos] = 46
        pos += 1
        for k in range(n - 2, -1, -1):
            out[pos] = digits[k]
            pos += 1
    x = point - 1
    out[pos] = 101  # e
    out[pos + 1] = 45 if x < 0 else 43
    pos += 2
    x = abs(x)
    if x >= 100:
        out[pos] = 48 + x // 100
        pos += 1
    out[pos] = 48 + (x // 10) % 10
    out[pos + 1] = 48 + x % 10
    return pos + 2


@_jit
def format_rows(bits, out):
    """A table's rows as CSV text: ``bits`` (R, C) uint64, the doubles' bits (``table.view(np.uint64)``); ``out``
    (≥ R·C·:data:`CELL` bytes) receives each row's ``repr``\\ s joined by commas, each row ended by a newline.
    Returns the bytes written."""
    digits = np.empty(24, np.uint8)
    pos = 0
    for r in range(bits.shape[0]):
        for c in range(bits.shape[1]):
            if c:
                out[pos] = 44
                pos += 1
            pos = write_repr(bits[r, c], out, pos, digits)
        out[pos] = 10
        pos += 1
    return pos
