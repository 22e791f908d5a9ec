"""What every compiled kernel of the engine shares: numba's decorators (:data:`_jit` …), the status, wall and
event codes, the gap checks' view of the contact arrays (:data:`_Gaps`).

The kernels by stage (MuJoCo's engine_*.c): :mod:`.torque_kernels` (sources, fields, torques), :mod:`.step_kernels`
(the splitting's kicks and drifts, its chunk of free steps), :mod:`.broad_kernels` (contact gaps, the near pairs,
free-flight spans), :mod:`.impact_kernels` (impacts located and resolved, held contacts), :mod:`.kernels` (the step
loops: the entries a run calls). Shapes: E members, B moving bodies, D dipoles on them, S source dipoles on K
fixed/driven bodies.
"""

from collections import namedtuple

from ..jit import numba as _numba

nb = _numba()

#: Status codes (the same numbers as compiled.OK, NONFINITE, NOT_ORTHONORMAL, CONTACT, EVENTS_FULL).
OK, NONFINITE, NOT_ORTHONORMAL, CONTACT, EVENTS_FULL = 0, 1, 2, 3, 4
#: Wall kinds (compiled.WALL_PLANE, …).
WALL_PLANE, WALL_SPHERE, WALL_CYLINDER, WALL_BOX = 0, 1, 2, 3
#: Event kinds in the contact buffers (compiled.EVENT_KINDS: "impact", "rest", "lift-off").
EV_IMPACT, EV_REST, EV_LIFT = 0, 1, 2

if nb is None:
    raise ImportError("numba is not available (not installed, or PEM_NUMBA=0)")

#: The most steps one certified span of free flight takes (:func:`_horizon`), unchecked: 4096, found in 12 passes
#: over the pairs at most.
SPAN = 4096

#: The fields of compiled.ContactArrays the gap checks read (:func:`_overlap`, :func:`_min_gap`), under their names:
#: the step loop passes these, not the whole tuple — a call takes every array of its arguments member by member,
#: and the ~50 of ContactArrays cost ~0.4 µs a call, more than a small scene's gaps.
_Gaps = namedtuple("_Gaps", ["owner", "center", "radius", "pair", "spheres", "limit", "resting", "wall_kind",
                             "wall_sign", "wall_point", "wall_dir", "wall_radius", "wall_axes", "wall_half"])

_jit = nb.njit(cache=True, error_model="numpy")
_jit_inline = nb.njit(cache=True, error_model="numpy", inline="always")
_jit_par = nb.njit(cache=True, error_model="numpy", parallel=True)
# A single scene's entries release the GIL while they run (as their builds made ahead of time do: aot.py), so that
# groups of independent bodies can step in threads (groups.py)
_jit_entry = nb.njit(cache=True, error_model="numpy", nogil=True)
# The step loops allocate nothing and only borrow the arrays they are given: compiled without numba's
# reference counting, which otherwise puts an atomic count on every array taken from the Model or sliced
# in the loop (hundreds a step; the loop ran ~2x slower).
_jit_borrowed = nb.njit(cache=True, error_model="numpy", _nrt=False)
prange = nb.prange
