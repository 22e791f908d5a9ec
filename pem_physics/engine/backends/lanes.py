"""Ensembles with members in SIMD lanes: one pendulum over static magnets, many members.

Basin maps and parameter sweeps run thousands of copies of one scene: one moving body (a
pendulum or a free body, not hinged) with any number of dipoles, fixed magnets, gravity, a
uniform field and friction (both may differ per member), no rotating field, driven magnets or
periodic box (:func:`supported`). Here the members of a block of :data:`BLOCK` are the innermost
loop of every operation: each state component is contiguous across the block (structure of
arrays), every inner loop is straight-line code over the lanes, and LLVM puts members in SIMD
lanes. The schemes are those of :mod:`.integrators` (the numpy reference):
:class:`~..integrators.Splitting` (splitting4 / splitting2) and :class:`~..integrators.PemScheme`
(pem-rk4), in the same order of operations; sin/cos in the drifts are a vectorisable
polynomial (:func:`.lanes_kernels.sincos`, within an ulp or two of libm), so the two agree to rounding
(``tests/engine/test_lanes.py``), not bit for bit. No fastmath: every lane's arithmetic is
IEEE-exact and independent of the others, so a member's result does not depend on its
position, the block it lands in, or the number of threads.

The kernels (:mod:`.lanes_kernels`) run a range of blocks each and release the GIL: :class:`Lanes` hands the blocks
to one thread per core (:func:`.groups.threads`), each a contiguous range. They are the build's made ahead of time
(:mod:`pem_physics.aot`), for the widest vector unit this CPU has: AVX-512 or AVX2 (:data:`pem_physics.aot.VARIANTS`,
four lanes of doubles), else any x86-64 (two lanes of SSE2) — 8.3·10⁶, 7.4·10⁶ and 4.1·10⁶ splitting4 member-steps/s for
4096 members in one thread here, against numba's JIT for this CPU's 8.1·10⁶ — the same numbers bit for bit; so a process
with the build never imports numba. Without a build (a source checkout, a platform the zip carries none for) they
are numba's JIT kernels, compiled for this CPU once and cached.

Shapes: E members; one moving body with D dipoles; S static source dipoles.
"""

from __future__ import annotations

import numpy as np

from .lanes_layout import BLOCK

#: Ensembles smaller than this run on the per-member compiled engine (no padding to pay for).
MIN_MEMBERS = 16

#: Set False to run ensembles on the per-member compiled engine instead (the tests compare both).
ENABLED = True


def available() -> bool:
    """Whether numba's JIT can compile the lanes kernels (imports numba)."""
    from ...jit import numba as _numba

    return ENABLED and _numba() is not None


def build():
    """The build made ahead of time (:class:`pem_physics.aot.Build`) that holds the lanes kernels for the widest vector
    unit this CPU runs (:data:`pem_physics.aot.VARIANTS`, :func:`pem_physics.aot.cpu_runs`), else the main build if it
    holds them, else None."""
    from ... import aot

    for b in [aot.load(variant=v) for v in aot.variants() if aot.cpu_runs(v)] + [aot.load()]:
        if b is not None and all(e in b.specs for e in aot.VARIANT_ENTRIES):
            return b
    return None


def supported(integ) -> bool:
    """Whether the lanes kernels run this integrator object: a build holding them, or numba; splitting4/2 or
    pem-rk4; an ensemble of at least MIN_MEMBERS; one moving body, not hinged, not translating, on a fixed pivot;
    static sources; no rotating field or box."""
    from ..integrators import PemScheme, Splitting

    if not ENABLED:
        return False
    if not (isinstance(integ, Splitting) or (isinstance(integ, PemScheme) and integ.rk4)):
        return False
    sys_ = integ.system
    return (integ.L.shape[0] >= MIN_MEMBERS and sys_.n_bodies == 1 and not sys_.hinged.any()
            and sys_.box is None and sys_.rotating_field is None and sys_.static_sources and not sys_.any_translating
            and not sys_.moving_pivots and (build() is not None or available()))


def _c(a, dtype=np.float64) -> np.ndarray:
    return np.array(a, dtype=dtype, order="C", copy=True)


def _blocks(rows: np.ndarray) -> np.ndarray:
    """(E, n) per-member rows → (n, E padded to whole blocks) columns; padding repeats member 0."""
    E = rows.shape[0]
    pad = -(-E // BLOCK) * BLOCK
    return _c(np.concatenate([rows, np.repeat(rows[:1], pad - E, axis=0)]).T)


class Lanes:
    """The lanes counterpart of a Splitting or PemScheme (rk4) ensemble, with compiled.Runner's interface:
    :meth:`advance_to` runs through record marks and leaves the state in the integrator object."""

    def __init__(self, integ, orth_limit: float, check_every: int):
        from ..integrators import Splitting

        self.integ = integ
        sys_ = integ.system
        self.check_every = int(check_every)
        #: the build made ahead of time whose lanes kernels run (:func:`build`), or None: numba's JIT
        self.aot = build()
        E = integ.L.shape[0]
        c = sys_.member_friction if sys_.member_friction is not None else np.full(E, sys_.friction)
        f = sys_.member_field if sys_.member_field is not None else np.broadcast_to(sys_.field, (E, 3))
        self.P = _blocks(np.concatenate([np.broadcast_to(c, (E,))[:, None], np.reshape(f, (E, 3))], axis=1))
        self.splitting = isinstance(integ, Splitting)
        kin = sys_.kin_principal if self.splitting else sys_.kin_body
        rs, ms = sys_.sources(0.0)
        scene = (_c(kin.com[0]), float(sys_.mass[0]), _c(sys_.gravity), _c(sys_.pivot[0]),
                 _c(np.reshape(kin.dpos, (-1, 3))), _c(np.reshape(kin.dmom, (-1, 3))), _c(np.reshape(rs, (-1, 3))),
                 _c(np.reshape(ms, (-1, 3))), float(sys_.mu0 / (4 * np.pi)))
        if self.splitting:
            plan, inv1 = integ._plan
            self.args = (float(integ.dt),
                         not (sys_.member_friction is None and sys_.friction == 0.0),  # Splitting._kick's test
                         _c(integ.drifts), _c(integ.kicks), _c(sys_.inv_moments[0]), _c(kin.inv_inertia[0]),
                         float(inv1[0]) if len(inv1) else 0.0, _c([a for a, _, _ in plan], np.int64),
                         _c([fr for _, fr, _ in plan]), _c([float(ck[0]) for _, _, ck in plan]), *scene,
                         _c(sys_.axes[0]), float(orth_limit))
        else:
            self.args = (float(integ.dt), bool(sys_.has_friction), _c(kin.inv_inertia[0]), *scene, float(orth_limit))

    def call(self, marks) -> tuple:
        """(entry, arguments) of one kernel call through ``marks`` over every block (the build's probe,
        :func:`.prebuild.lanes_probes`), the state taken from the integrator object: entry ``lanes_splitting`` or
        ``lanes_rk4``, arguments (X, P, first block, end block, steps done, marks, …, out_U, out_L, out_w, status)."""
        integ = self.integ
        marks = np.ascontiguousarray(marks, dtype=np.int64)
        E = integ.L.shape[0]
        R = len(marks)
        out = (np.zeros((E, R, 1, 3, 3)), np.zeros((E, R, 1, 3)), np.zeros((E, R, 1, 3)), np.zeros((E, 3), np.int64))
        if self.splitting:
            X = _blocks(np.concatenate([integ.Q.reshape(E, 9), integ.L.reshape(E, 3), integ.T.reshape(E, 3)], axis=1))
        else:
            X = _blocks(np.concatenate([integ.U.reshape(E, 9), integ.U_dip.reshape(E, 9), integ.L.reshape(E, 3),
                                        integ.w.reshape(E, 3)], axis=1))
        return ("lanes_splitting" if self.splitting else "lanes_rk4",
                (X, self.P, 0, X.shape[1] // BLOCK, integ.steps_done, marks, self.check_every, *self.args, *out))

    def _kernel(self, entry: str):
        """The kernel of ``entry``: the build's (:meth:`advance_to` checks the arguments' types first) or numba's JIT
        (compiled or loaded from the disk cache on first use)."""
        if self.aot is not None:
            return self.aot.entry(entry)
        from . import lanes_kernels

        return lanes_kernels.blocks_splitting if entry == "lanes_splitting" else lanes_kernels.blocks_rk4

    def advance_to(self, marks) -> tuple:
        """As compiled.Runner.advance_to: (U (E,R,1,3,3), L, w (E,R,1,3), None, None, status (E,3)) — no
        positions and linear momenta: the body does not translate. The blocks run in threads, a contiguous range
        each (the kernels release the GIL; each block works in its own columns and members' rows)."""
        from . import groups

        integ = self.integ
        entry, args = self.call(marks)
        if self.aot is not None:
            self.aot.check(entry, args)
        run = self._kernel(entry)
        X = args[0]
        out_U, out_L, out_w, status = args[-4:]
        E = integ.L.shape[0]
        blocks = X.shape[1] // BLOCK
        cuts = np.linspace(0, blocks, min(groups.threads(), blocks) + 1).astype(int)
        if len(cuts) == 2:
            run(*args)
        else:
            def job(first, end):
                return lambda report, halt: run(*args[:2], first, end, *args[4:])

            groups.run([job(a, b) for a, b in zip(cuts[:-1], cuts[1:])], None, None, 1.0)
        steps0 = integ.steps_done
        if self.splitting:
            X = X[:, :E].T
            integ.Q = X[:, 0:9].reshape(E, 1, 3, 3).copy()
            integ.L = X[:, 9:12].reshape(E, 1, 3).copy()
            integ.T = X[:, 12:15].reshape(E, 1, 3).copy()
        else:
            X = X[:, :E].T
            integ.U = X[:, 0:9].reshape(E, 1, 3, 3).copy()
            integ.U_dip = X[:, 9:18].reshape(E, 1, 3, 3).copy()
            integ.L = X[:, 18:21].reshape(E, 1, 3).copy()
            integ.w = X[:, 21:24].reshape(E, 1, 3).copy()
        done = int(status[:, 1].min())
        if not self.splitting and done > steps0:
            # PEM's driver clock as _member_pem leaves it (static sources: nothing else moves)
            drv, dt = integ.driver, integ.dt
            drv.time = (done * dt + 0.5 * dt) + 0.5 * dt
            drv.updates = done + 1
        integ.steps_done = done
        return out_U, out_L, out_w, None, None, status
