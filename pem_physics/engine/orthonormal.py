"""Newton–Schulz's step on a frame, written once for every path that takes one frame at a time: the compiled
kernels (:mod:`.step_kernels`, :mod:`.backends.lanes_kernels`: numba inlines it) and the plain-Python path
(:mod:`.backends.scalar`).

Plain Python on purpose (as :mod:`.dipole_pair`): no numba here, so the path without numba runs it as it is.
"""

from __future__ import annotations


def newton_schulz(q00, q01, q02, q10, q11, q12, q20, q21, q22):
    """Q ← 1.5 Q − ½ (Q Qᵀ) Q of a 3×3 frame Q given row by row (q_ij: row i, column j); returns the nine new
    entries in the same order. Squares Q's orthonormality error ‖Q Qᵀ − 𝟙‖ away."""
    g00 = 0.5 * (q00 * q00 + q01 * q01 + q02 * q02)
    g01 = 0.5 * (q00 * q10 + q01 * q11 + q02 * q12)
    g02 = 0.5 * (q00 * q20 + q01 * q21 + q02 * q22)
    g11 = 0.5 * (q10 * q10 + q11 * q11 + q12 * q12)
    g12 = 0.5 * (q10 * q20 + q11 * q21 + q12 * q22)
    g22 = 0.5 * (q20 * q20 + q21 * q21 + q22 * q22)
    return (1.5 * q00 - (g00 * q00 + g01 * q10 + g02 * q20),
            1.5 * q01 - (g00 * q01 + g01 * q11 + g02 * q21),
            1.5 * q02 - (g00 * q02 + g01 * q12 + g02 * q22),
            1.5 * q10 - (g01 * q00 + g11 * q10 + g12 * q20),
            1.5 * q11 - (g01 * q01 + g11 * q11 + g12 * q21),
            1.5 * q12 - (g01 * q02 + g11 * q12 + g12 * q22),
            1.5 * q20 - (g02 * q00 + g12 * q10 + g22 * q20),
            1.5 * q21 - (g02 * q01 + g12 * q11 + g22 * q21),
            1.5 * q22 - (g02 * q02 + g12 * q12 + g22 * q22))
