"""The compiled event-driven engine (numba) for hard disks and spheres: cell lists, one event per particle.

The same events and arithmetic as :mod:`.reference` (the definition and the fallback without
numba), organised for large N:

- cell lists: each axis is cut into nc ≥ 3 cells of width ≥ the largest diameter (an axis too
  short for 3 cells is one cell), so a particle can only touch particles in its own and the
  3^d − 1 surrounding cells; cells are doubly linked lists (``head``, ``nxt``, ``prv``);
- one scheduled event per particle: the earliest of its collisions with those neighbours, its
  hard-wall hits and its next cell crossing, kept in an indexed 4-ary min-heap (``heap``, ``hpos``,
  with each slot's time beside it in ``hkey``) keyed by event time, so rescheduling a particle is
  one sift;
- lazy invalidation: a collision event stores the partner's collision counter; when it reaches
  the top of the heap with a changed counter, the particle is rescheduled instead (a collision of
  i with j is found by whichever of the two was rescheduled last, so none is missed);
- lazy positions: each particle carries its own time t_i and its position x_i at t_i; only the
  particles of an event are moved. A cell crossing changes only the cell (and, across a periodic
  boundary, shifts x_i by the box length), so it does not touch the trajectory;
- memory: one 64-byte row per particle (x, v, t_i, R_i) starting a cache line, particles stored in
  Z order of their starting cells (``perm``; everything read from outside is in the state's
  order), so that a particle's neighbours are mostly near it in memory;
- the case (d, gravity, periodic or hard walls) is part of the kernels' argument types
  (:func:`spec_array`), so each case is compiled apart without those tests in its inner loops;
- containers (:class:`.state.Container`: a sphere, a cylinder, extra planes) are runtime values
  (:func:`container_arrays`) read only in the hard-wall cases: a wall hit is one more candidate of the
  particle's event (the exit root of a quadratic for the sphere and cylinder, a linear or quadratic
  reach for a plane), wall ids 2d, 2d + 1, … after the box faces; the cell grid still spans the box
  (the container's bounding box). Event codes: ≥ 0 a partner, −1 − w wall w < W, then the cell
  crossings −1 − W − (2a + dir).

Measured against neighbour lists with a shell (the C peer's method: a list of the particles
within σ + shell, rebuilt when a particle has moved shell/2): at N = 4000, packing fraction 0.25
it ran 0.6–0.7× as fast as these cell lists (2.1·10⁶ rebuilds, each a 27-cell search, against
0.94·10⁶ cell crossings, each a 9-cell search, per 1.4·10⁶ collisions), so it is not used.

One call of the kernel runs at most ``max_events`` heap pops without returning to Python;
:func:`run` calls it in chunks sized to ~0.2 s for progress and Ctrl-C (see
:func:`.reference.drive`). No fastmath: results are IEEE-exact and repeatable.

Shapes: N particles, d = 2 or 3, C cells, K = 3^d neighbour offsets (fewer on one-cell axes).
"""

from __future__ import annotations

import math
import time as _time
import warnings

import numpy as np

from ..jit import numba as _numba
from ..jit import unavailable_reason
from .reference import ReferenceEngine, drive
from .state import EventLog, GasRun, GasState, check_gravity, check_run_args, default_tc  # noqa: F401 (re-exported)

nb = _numba()

#: Set False to force the numpy reference (tests compare both).
ENABLED = True

#: Kernel return codes: reached t_stop, ran max_events, event log full.
REACHED, MAX_EVENTS, LOG_FULL = 0, 1, 2


def available() -> bool:
    """Whether the compiled engine runs (numba installed; its 3D cases then run on kernels built ahead of time
    where a build has them, :func:`_aot_build`)."""
    return ENABLED and nb is not None


#: The cases the kernels are compiled for (:func:`spec_array`): dimensions, gravity, periodic box (gravity needs
#: hard walls). The 3D ones are entries of their own in a build made ahead of time (:mod:`..engine.prebuild`).
CASES = tuple((d, g, p) for d in (2, 3) for g in (False, True) for p in (False, True) if not (g and p))


def case_name(d: int, gravity: bool, periodic: bool) -> str:
    """``3d``, ``3d_gravity``, ``2d_periodic``: the suffix of a case's entries in a build."""
    return f"{d}d" + ("_gravity" if gravity else "") + ("_periodic" if periodic else "")


def _aot_build(case: str):
    """The build made ahead of time when it has this case's gas kernels, else None (numba's JIT then)."""
    from ..engine import aot

    build = aot.load()
    return build if build is not None and f"gas_advance_{case}" in build.specs else None


if nb is not None:
    _jit = nb.njit(cache=True, error_model="numpy")
    _jit_inline = nb.njit(cache=True, error_model="numpy", inline="always")
    # Event loops that allocate nothing: no reference counting (pem_physics.engine.kernels._jit_borrowed)
    _borrowed = nb.njit(cache=True, error_model="numpy", _nrt=False)

    # The event queue: a 4-ary min-heap of particles keyed by event time, with each slot's key stored
    # beside it (hkey) so that comparing the 4 children reads one contiguous run instead of 4 random
    # ev_t entries; half the depth of a binary heap. hpos[i] is particle i's slot.

    @_jit_inline
    def _sift_up(heap, hpos, hkey, k, item, kt):
        while k > 0:
            parent = (k - 1) >> 2
            pk = hkey[parent]
            if pk <= kt:
                break
            p = heap[parent]
            heap[k] = p
            hkey[k] = pk
            hpos[p] = k
            k = parent
        heap[k] = item
        hkey[k] = kt
        hpos[item] = k

    @_jit_inline
    def _sift_down(heap, hpos, hkey, k, item, kt):
        n = heap.shape[0]
        while True:
            c = 4 * k + 1
            if c >= n:
                break
            m = c
            mk = hkey[c]
            if c + 3 < n:
                k1 = hkey[c + 1]
                k2 = hkey[c + 2]
                k3 = hkey[c + 3]
                # the smaller of each pair, then of the two (ties to the lower slot: deterministic)
                m01 = c + 1 if k1 < mk else c
                v01 = k1 if k1 < mk else mk
                m23 = c + 3 if k3 < k2 else c + 2
                v23 = k3 if k3 < k2 else k2
                m = m23 if v23 < v01 else m01
                mk = v23 if v23 < v01 else v01
            else:
                for q in range(c + 1, n):
                    if hkey[q] < mk:
                        m = q
                        mk = hkey[q]
            if mk >= kt:
                break
            ch = heap[m]
            heap[k] = ch
            hkey[k] = mk
            hpos[ch] = k
            k = m
        heap[k] = item
        hkey[k] = kt
        hpos[item] = k

    @_jit_inline
    def _reheap(heap, hpos, hkey, i, ti):
        """Particle i's event time changed to ti: move it to its place."""
        k = hpos[i]
        if k > 0 and ti < hkey[(k - 1) >> 2]:
            _sift_up(heap, hpos, hkey, k, i, ti)
        else:
            _sift_down(heap, hpos, hkey, k, i, ti)

    @_jit_inline
    def _flags(spec):
        """(d, gravity on, periodic) from the number of dimensions of the array ``spec`` (see
        :func:`spec_array`): a property of its type, so each combination is compiled apart, with the
        branches on them resolved at compile time."""
        k = spec.ndim - 1
        return (3 if k & 1 else 2), (k & 2) != 0, (k & 4) != 0

    @_jit_inline
    def _image(q, length, periodic):
        if periodic:
            if q > 0.5 * length:
                return q - length
            if q < -0.5 * length:
                return q + length
        return q

    @_jit_inline
    def _cell_index(ci, i, nc, d):
        c = 0
        for k in range(d):
            c = c * nc[k] + ci[i, k]
        return c

    @_jit_inline
    def _unlink(head, nxt, prv, c, i):
        p = prv[i]
        q = nxt[i]
        if p >= 0:
            nxt[p] = q
        else:
            head[c] = q
        if q >= 0:
            prv[q] = p

    @_jit_inline
    def _link(head, nxt, prv, c, i):
        q = head[c]
        nxt[i] = q
        prv[i] = -1
        if q >= 0:
            prv[q] = i
        head[c] = i

    @_jit_inline
    def _near_cell(c, o, n, length, periodic):
        """The cell o ∈ {−1, 0, 1} steps from cell c on an axis of n cells and the shift of the image of
        its particles next to cell c (r_i − r_j gains it); cell −1 past a hard wall. A periodic axis of
        one cell gives its cell for every o, shifted by −o L (every image that can come within reach);
        a hard-wall axis of one cell gives it for o = 0 only."""
        if n == 1:
            if periodic:
                return 0, -o * length
            return (0 if o == 0 else -1), 0.0
        cc = c + o
        if cc < 0:
            if not periodic:
                return -1, 0.0
            return cc + n, length  # the image of a particle in cell cc sits at x − L
        if cc >= n:
            if not periodic:
                return -1, 0.0
            return cc - n, -length
        return cc, 0.0

    @_jit_inline
    def _scan_cell(j, i, t, xi0, xi1, xi2, vi0, vi1, vi2, ri, s0, s1, s2, P, nxt, g, d, grav, best, partner):
        """The earliest contact time (best, partner) of particle i (position xi, velocity vi at time t,
        radius ri) with the particles of the cell list starting at j, whose images are shifted by s
        (r_i − r_j gains s); best and partner come in as the best so far."""
        while j >= 0:
            if j != i:
                dtj = t - P[j, 6]
                if grav:
                    # equal accelerations: the relative motion is straight, the same quadratic
                    dr0 = xi0 - (P[j, 0] + (P[j, 3] + 0.5 * g[0] * dtj) * dtj) + s0
                    dr1 = xi1 - (P[j, 1] + (P[j, 4] + 0.5 * g[1] * dtj) * dtj) + s1
                    dv0 = vi0 - (P[j, 3] + g[0] * dtj)
                    dv1 = vi1 - (P[j, 4] + g[1] * dtj)
                else:
                    dr0 = xi0 - (P[j, 0] + P[j, 3] * dtj) + s0
                    dr1 = xi1 - (P[j, 1] + P[j, 4] * dtj) + s1
                    dv0 = vi0 - P[j, 3]
                    dv1 = vi1 - P[j, 4]
                b = dr0 * dv0 + dr1 * dv1
                rr = dr0 * dr0 + dr1 * dr1
                vv = dv0 * dv0 + dv1 * dv1
                if d == 3:
                    if grav:
                        dr2 = xi2 - (P[j, 2] + (P[j, 5] + 0.5 * g[2] * dtj) * dtj) + s2
                        dv2 = vi2 - (P[j, 5] + g[2] * dtj)
                    else:
                        dr2 = xi2 - (P[j, 2] + P[j, 5] * dtj) + s2
                        dv2 = vi2 - P[j, 5]
                    b += dr2 * dv2
                    rr += dr2 * dr2
                    vv += dv2 * dv2
                if b < 0.0:
                    sig = ri + P[j, 7]
                    cgap = rr - sig * sig
                    disc = b * b - vv * cgap
                    if disc >= 0.0:
                        dt = cgap / (-b + math.sqrt(disc))
                        if dt < 0.0:
                            dt = 0.0
                        if t + dt < best:
                            best = t + dt
                            partner = j
            j = nxt[j]
        return best, partner

    @_jit_inline
    def _reach(h, u, a):
        """Time ≥ 0 for a coordinate that moves towards a boundary h ≥ 0 ahead (clamped: round-off may put
        it a hair past) at speed u with acceleration a (both counted towards it) to reach it; inf if never."""
        if h < 0.0:
            h = 0.0
        if a > 0.0:
            s = math.sqrt(u * u + 2.0 * a * h)
            if u > 0.0:
                return 2.0 * h / (u + s)  # the root without cancellation
            return (s - u) / a
        if a < 0.0:
            if u <= 0.0:
                return np.inf
            disc = u * u + 2.0 * a * h
            if disc < 0.0:
                return np.inf  # turns back before the boundary
            return 2.0 * h / (u + math.sqrt(disc))
        if u > 0.0:
            return h / u
        return np.inf

    @_jit_inline
    def _exit(y0, y1, y2, u0, u1, u2, rho):
        """Time ≥ 0 for a centre at y (relative to the sphere's centre / the cylinder's axis) moving at u to
        reach |y| = rho from inside: the exit root of |y + u t|² = rho², without cancellation (the
        arithmetic of :func:`.reference.exit_time`); 0 a hair outside moving out, inf at rest."""
        a = u0 * u0 + u1 * u1 + u2 * u2
        if not a > 0.0:
            return np.inf
        b = y0 * u0 + y1 * u1 + y2 * u2
        cg = y0 * y0 + y1 * y1 + y2 * y2 - rho * rho
        if b > 0.0 and cg >= 0.0:
            return 0.0
        disc = b * b - a * cg
        sq = math.sqrt(disc) if disc > 0.0 else 0.0
        dt = -cg / (b + sq) if b > 0.0 else (sq - b) / a
        return dt if dt > 0.0 else 0.0

    # inlined at its call sites (_events, _build): with the case fixed at compile time (spec), that
    # made the event loop ~15 % faster (N = 4000) for ~25 % more compile time per case
    @_jit_inline
    def _schedule(i, t, slab_axis, slab_dir, P, box, width, spec, ci, nc, head, nxt,
                  ev_t, ev_p, col_t, col_p, col_cnt, cnt, g, cont, wpar):
        """Particle i's earliest event from time t into ev_t/ev_p (the heap is not touched).

        Its best collision (col_t, col_p, col_cnt) comes from a scan of the 3^d surrounding cells, or,
        with slab_axis ≥ 0 (after a cell crossing, trajectory unchanged and the stored collision still
        valid), from the stored one and the slab of cells just entered on slab_axis (direction slab_dir).
        cont, wpar: the container (:func:`container_arrays`), read only between hard walls."""
        d, grav, periodic = _flags(spec)
        # walls: the 2d box faces, then the sphere or cylinder, then the planes (all hard walls: periodic has none)
        nw = 2 * d if periodic else cont[3]
        kind = 0 if periodic else cont[0]
        cax = -1 if periodic else cont[1]
        dti = t - P[i, 6]
        if grav:
            xi0 = P[i, 0] + (P[i, 3] + 0.5 * g[0] * dti) * dti
            xi1 = P[i, 1] + (P[i, 4] + 0.5 * g[1] * dti) * dti
            xi2 = P[i, 2] + (P[i, 5] + 0.5 * g[2] * dti) * dti if d == 3 else 0.0
            vi0 = P[i, 3] + g[0] * dti
            vi1 = P[i, 4] + g[1] * dti
            vi2 = P[i, 5] + g[2] * dti if d == 3 else 0.0
        else:
            xi0 = P[i, 0] + P[i, 3] * dti
            xi1 = P[i, 1] + P[i, 4] * dti
            xi2 = P[i, 2] + P[i, 5] * dti if d == 3 else 0.0
            vi0 = P[i, 3]
            vi1 = P[i, 4]
            vi2 = P[i, 5] if d == 3 else 0.0
        # cell crossings (codes -1-nw-(2a+dir)) and, between hard walls, wall hits (codes -1-wall)
        cross = np.inf
        code = -1 - nw - 2 * d  # "no event"
        for k in range(d):
            face = kind == 0 or k == cax  # the box faces on axis k are walls
            vk = vi0 if k == 0 else (vi1 if k == 1 else vi2)
            xk = xi0 if k == 0 else (xi1 if k == 1 else xi2)
            if grav and g[k] != 0.0:
                # a parabola can reach either side of its cell (gravity needs hard walls: no wrap)
                dt = _reach((ci[i, k] + 1) * width[k] - xk, vk, g[k])
                c = -1 - nw - (2 * k + 1)
                dw = _reach(box[k] - P[i, 7] - xk, vk, g[k])
                if face and dw < dt:
                    dt = dw
                    c = -1 - (2 * k + 1)
                dn = _reach(xk - ci[i, k] * width[k], -vk, -g[k])
                if dn < dt:
                    dt = dn
                    c = -1 - nw - 2 * k
                dw = _reach(xk - P[i, 7], -vk, -g[k])
                if face and dw < dt:
                    dt = dw
                    c = -1 - 2 * k
            elif vk > 0.0:
                dt = ((ci[i, k] + 1) * width[k] - xk) / vk
                c = -1 - nw - (2 * k + 1)
                if not periodic and face:
                    dw = (box[k] - P[i, 7] - xk) / vk
                    if dw < dt:
                        dt = dw
                        c = -1 - (2 * k + 1)
            elif vk < 0.0:
                dt = (ci[i, k] * width[k] - xk) / vk
                c = -1 - nw - 2 * k
                if not periodic and face:
                    dw = (P[i, 7] - xk) / vk
                    if dw < dt:
                        dt = dw
                        c = -1 - 2 * k
            else:
                continue
            if dt < 0.0:
                dt = 0.0
            if dt < cross:
                cross = dt
                code = c
        if not periodic:
            if kind != 0:
                # the sphere (cylinder: the same in the plane across its axis)
                y0 = xi0 - wpar[0, 0]
                y1 = xi1 - wpar[0, 1]
                y2 = xi2 - wpar[0, 2] if d == 3 else 0.0
                u0 = vi0
                u1 = vi1
                u2 = vi2
                if cax == 0:
                    y0 = 0.0
                    u0 = 0.0
                elif cax == 1:
                    y1 = 0.0
                    u1 = 0.0
                elif cax == 2:
                    y2 = 0.0
                    u2 = 0.0
                dt = _exit(y0, y1, y2, u0, u1, u2, wpar[0, 3] - P[i, 7])
                if dt < cross:
                    cross = dt
                    code = -1 - 2 * d
            for q in range(cont[2]):
                # plane q: the gap n·x − h − R closes at −n·v (−n·g under gravity)
                row = 1 + q
                gap = wpar[row, 0] * xi0 + wpar[row, 1] * xi1 + wpar[row, 2] * xi2 - wpar[row, 3] - P[i, 7]
                w = wpar[row, 0] * vi0 + wpar[row, 1] * vi1 + wpar[row, 2] * vi2
                if grav:
                    dt = _reach(gap, -w, -(wpar[row, 0] * g[0] + wpar[row, 1] * g[1] + wpar[row, 2] * g[2]))
                elif w < 0.0:
                    dt = (gap if gap > 0.0 else 0.0) / -w
                else:
                    continue
                if dt < cross:
                    cross = dt
                    code = -1 - (2 * d + int(kind != 0) + q)
        # collisions with particles in the cells to scan
        if slab_axis >= 0:
            best = col_t[i]
            partner = col_p[i]
        else:
            best = np.inf
            partner = -1
        c0 = ci[i, 0]
        c1 = ci[i, 1]
        c2 = ci[i, 2] if d == 3 else 0
        nc1 = nc[1]
        nc2 = nc[2] if d == 3 else 1
        ri = P[i, 7]
        # the image of a neighbour is the one in the neighbouring cell (not the minimum image: with
        # 3 cells a neighbour can be more than L/2 away and still the one that comes into contact)
        if slab_axis < 0:
            # all 3^d cells around: loops of fixed length (unrolled by the compiler)
            for o0 in range(-1, 2):
                a0, s0 = _near_cell(c0, o0, nc[0], box[0], periodic)
                if a0 < 0:
                    continue
                for o1 in range(-1, 2):
                    a1, s1 = _near_cell(c1, o1, nc1, box[1], periodic)
                    if a1 < 0:
                        continue
                    base = (a0 * nc1 + a1) * nc2
                    if d == 3:
                        for o2 in range(-1, 2):
                            a2, s2 = _near_cell(c2, o2, nc2, box[2], periodic)
                            if a2 >= 0:
                                best, partner = _scan_cell(head[base + a2], i, t, xi0, xi1, xi2, vi0, vi1, vi2,
                                                           ri, s0, s1, s2, P, nxt, g, d, grav, best, partner)
                    else:
                        best, partner = _scan_cell(head[base], i, t, xi0, xi1, xi2, vi0, vi1, vi2,
                                                   ri, s0, s1, 0.0, P, nxt, g, d, grav, best, partner)
        else:
            # only the slab just come into reach: offset slab_dir on slab_axis
            lo0 = slab_dir if slab_axis == 0 else -1
            lo1 = slab_dir if slab_axis == 1 else -1
            lo2 = (slab_dir if slab_axis == 2 else -1) if d == 3 else 0
            hi0 = slab_dir if slab_axis == 0 else 1
            hi1 = slab_dir if slab_axis == 1 else 1
            hi2 = (slab_dir if slab_axis == 2 else 1) if d == 3 else 0
            for o0 in range(lo0, hi0 + 1):
                a0, s0 = _near_cell(c0, o0, nc[0], box[0], periodic)
                if a0 < 0:
                    continue
                for o1 in range(lo1, hi1 + 1):
                    a1, s1 = _near_cell(c1, o1, nc1, box[1], periodic)
                    if a1 < 0:
                        continue
                    base = (a0 * nc1 + a1) * nc2
                    for o2 in range(lo2, hi2 + 1):
                        if d == 3:
                            a2, s2 = _near_cell(c2, o2, nc2, box[2], periodic)
                            if a2 < 0:
                                continue
                        else:
                            a2 = 0
                            s2 = 0.0
                        best, partner = _scan_cell(head[base + a2], i, t, xi0, xi1, xi2, vi0, vi1, vi2,
                                                   ri, s0, s1, s2, P, nxt, g, d, grav, best, partner)
        col_t[i] = best
        col_p[i] = partner
        if partner >= 0:
            col_cnt[i] = cnt[partner]
        if t + cross < best:
            ev_t[i] = t + cross
            ev_p[i] = code
        else:
            ev_t[i] = best
            ev_p[i] = partner

    @_jit
    def _advance(t_stop, max_events, e, spec, P, m, box, width, ci, cell, nc, head, nxt, prv,
                 ev_t, ev_p, col_t, col_p, col_cnt, cnt, heap, hpos, hkey, acc, wall_imp, counts, log_t, log_i, log_j,
                 keep_log, g, tc, tlast, cont, wpar):
        """Run events up to t_stop, at most max_events heap pops. acc = [time, virial];
        counts = [collisions, wall events, crossings, invalidated, logged, made elastic by t_c].
        spec: the case (spec_array); g (3,) gravity; tc the TC model's time, tlast (N,) last collisions;
        cont, wpar: the container (:func:`container_arrays`). Returns REACHED/MAX_EVENTS/LOG_FULL."""
        return _events(t_stop, max_events, e, spec, P, m, box, width, ci, cell, nc, head, nxt, prv,
                       ev_t, ev_p, col_t, col_p, col_cnt, cnt, heap, hpos, hkey, acc, wall_imp, counts, log_t, log_i,
                       log_j, keep_log, g, tc, tlast, cont, wpar)

    @_borrowed
    def _events(t_stop, max_events, e, spec, P, m, box, width, ci, cell, nc, head, nxt, prv,
                ev_t, ev_p, col_t, col_p, col_cnt, cnt, heap, hpos, hkey, acc, wall_imp, counts, log_t, log_i, log_j,
                keep_log, g, tc, tlast, cont, wpar):
        """The event loop of :func:`_advance` on the scratch arrays it is given (no allocation, so compiled
        without reference counting: numba otherwise counts every array argument of every call)."""
        d, grav, periodic = _flags(spec)
        nw = 2 * d if periodic else cont[3]
        for _ in range(max_events):
            i = heap[0]
            t = ev_t[i]
            if t > t_stop:
                acc[0] = t_stop
                return 0
            p = ev_p[i]
            # the particles to reschedule after this event (one call site, so that it can be inlined)
            r0 = -1
            r1 = -1
            slab_axis = -1
            slab_dir = 0
            if p >= 0 and cnt[p] != col_cnt[i]:
                # the partner has collided since: this event is void, look again
                acc[0] = t
                counts[3] += 1
                r0 = i
            elif p >= 0:
                if keep_log and counts[4] >= log_t.shape[0]:
                    return 2
                acc[0] = t
                # move both to t, then the impulse along the line of centres (scalars: no allocation per event)
                for k in range(d):
                    if grav:
                        hi = t - P[i, 6]
                        hp = t - P[p, 6]
                        P[i, k] += (P[i, 3 + k] + 0.5 * g[k] * hi) * hi
                        P[p, k] += (P[p, 3 + k] + 0.5 * g[k] * hp) * hp
                        P[i, 3 + k] += g[k] * hi
                        P[p, 3 + k] += g[k] * hp
                    else:
                        P[i, k] += P[i, 3 + k] * (t - P[i, 6])
                        P[p, k] += P[p, 3 + k] * (t - P[p, 6])
                P[i, 6] = t
                P[p, 6] = t
                dr0 = _image(P[i, 0] - P[p, 0], box[0], periodic)
                dr1 = _image(P[i, 1] - P[p, 1], box[1], periodic)
                dr2 = _image(P[i, 2] - P[p, 2], box[2], periodic) if d == 3 else 0.0
                rr = dr0 * dr0 + dr1 * dr1
                bv = dr0 * (P[i, 3] - P[p, 3]) + dr1 * (P[i, 4] - P[p, 4])
                if d == 3:
                    rr += dr2 * dr2
                    bv += dr2 * (P[i, 5] - P[p, 5])
                mu = m[i] * m[p] / (m[i] + m[p])
                ee = e
                if tc > 0.0:
                    # TC model: a particle that collided less than tc ago collides elastically (no collapse)
                    if t - tlast[i] < tc or t - tlast[p] < tc:
                        ee = 1.0
                        counts[5] += 1
                    tlast[i] = t
                    tlast[p] = t
                s = -(1.0 + ee) * mu * bv / rr
                j0 = s * dr0
                j1 = s * dr1
                P[i, 3] += j0 / m[i]
                P[p, 3] -= j0 / m[p]
                P[i, 4] += j1 / m[i]
                P[p, 4] -= j1 / m[p]
                vir = j0 * dr0 + j1 * dr1
                if d == 3:
                    j2 = s * dr2
                    P[i, 5] += j2 / m[i]
                    P[p, 5] -= j2 / m[p]
                    vir += j2 * dr2
                acc[1] += vir
                cnt[i] += 1
                cnt[p] += 1
                counts[0] += 1
                if keep_log:
                    n = counts[4]
                    log_t[n] = t
                    log_i[n] = min(i, p)
                    log_j[n] = max(i, p)
                    counts[4] = n + 1
                r0 = i
                r1 = p
            elif p >= -nw:
                if keep_log and counts[4] >= log_t.shape[0]:
                    return 2
                acc[0] = t
                wall = -1 - p
                a = wall // 2
                for k in range(d):
                    if grav:
                        hi = t - P[i, 6]
                        P[i, k] += (P[i, 3 + k] + 0.5 * g[k] * hi) * hi
                        P[i, 3 + k] += g[k] * hi
                    else:
                        P[i, k] += P[i, 3 + k] * (t - P[i, 6])
                P[i, 6] = t
                if wall < 2 * d:
                    wall_imp[wall] += 2.0 * m[i] * abs(P[i, 3 + a])
                    P[i, 3 + a] = -P[i, 3 + a]
                else:
                    # mirror about the wall's normal n at the contact point
                    if wall == 2 * d and cont[0] != 0:
                        n0 = P[i, 0] - wpar[0, 0]
                        n1 = P[i, 1] - wpar[0, 1]
                        n2 = P[i, 2] - wpar[0, 2] if d == 3 else 0.0
                        if cont[1] == 0:
                            n0 = 0.0
                        elif cont[1] == 1:
                            n1 = 0.0
                        elif cont[1] == 2:
                            n2 = 0.0
                        ln = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
                        n0 /= ln
                        n1 /= ln
                        n2 /= ln
                    else:
                        row = 1 + wall - 2 * d - int(cont[0] != 0)
                        n0 = wpar[row, 0]
                        n1 = wpar[row, 1]
                        n2 = wpar[row, 2]
                    vn = P[i, 3] * n0 + P[i, 4] * n1 + (P[i, 5] * n2 if d == 3 else 0.0)
                    wall_imp[wall] += 2.0 * m[i] * abs(vn)
                    P[i, 3] -= 2.0 * vn * n0
                    P[i, 4] -= 2.0 * vn * n1
                    if d == 3:
                        P[i, 5] -= 2.0 * vn * n2
                cnt[i] += 1
                counts[1] += 1
                if keep_log:
                    n = counts[4]
                    log_t[n] = t
                    log_i[n] = i
                    log_j[n] = p
                    counts[4] = n + 1
                r0 = i
            elif p >= -nw - 2 * d:
                acc[0] = t
                code = -1 - nw - p
                a = code // 2
                c_old = cell[i]
                if code % 2 == 1:
                    step = 1
                    cc = ci[i, a] + 1
                    if cc >= nc[a]:
                        cc = 0
                        # the particle leaves through the box face: continue its trajectory from the image
                        P[i, a] -= box[a]
                else:
                    step = -1
                    cc = ci[i, a] - 1
                    if cc < 0:
                        cc = nc[a] - 1
                        P[i, a] += box[a]
                ci[i, a] = cc
                c_new = _cell_index(ci, i, nc, d)
                if c_new != c_old:
                    _unlink(head, nxt, prv, c_old, i)
                    _link(head, nxt, prv, c_new, i)
                    cell[i] = c_new
                counts[2] += 1
                # the trajectory is unchanged: if the stored best collision is still valid, only the
                # slab of cells just come into reach can hold an earlier one
                # (on a periodic one-cell axis the wrap changes which images are in reach: scan all)
                q = col_p[i]
                r0 = i
                if nc[a] > 1 and (q < 0 or cnt[q] == col_cnt[i]):
                    slab_axis = a
                    slab_dir = step
            else:
                # no event at all (a particle at rest out of reach): nothing will ever happen to it
                acc[0] = t_stop
                return 0
            for r in range(2):
                q = r0 if r == 0 else r1
                if q >= 0:
                    _schedule(q, t, slab_axis, slab_dir, P, box, width, spec, ci, nc, head, nxt,
                              ev_t, ev_p, col_t, col_p, col_cnt, cnt, g, cont, wpar)
                    _reheap(heap, hpos, hkey, q, ev_t[q])
        return 1

    @_jit
    def _build(P, box, width, spec, ci, cell, nc, head, nxt, prv, ev_t, ev_p, col_t, col_p,
               col_cnt, cnt, heap, hpos, hkey, t, g, cont, wpar):
        """Cell lists, every particle's first event and the heap."""
        n = P.shape[0]
        d, grav, periodic = _flags(spec)
        for i in range(n):
            for k in range(d):
                c = int(math.floor(P[i, k] / width[k]))
                ci[i, k] = min(max(c, 0), nc[k] - 1)
            cell[i] = _cell_index(ci, i, nc, d)
            _link(head, nxt, prv, cell[i], i)
        for i in range(n):
            _schedule(i, t, -1, 0, P, box, width, spec, ci, nc, head, nxt,
                      ev_t, ev_p, col_t, col_p, col_cnt, cnt, g, cont, wpar)
        for k in range(n):
            heap[k] = k
            hpos[k] = k
            hkey[k] = ev_t[k]
        for k in range((n - 2) // 4, -1, -1):
            _sift_down(heap, hpos, hkey, k, heap[k], hkey[k])


def spatial_order(x: np.ndarray, width: np.ndarray, nc: np.ndarray) -> np.ndarray:
    """Indices (N,) that sort positions x (N, d) by the Z-order (Morton) code of their cells (widths
    (d,), counts (d,)); ties keep the given order."""
    n, d = x.shape
    c = np.clip(np.floor(x / width).astype(np.int64), 0, nc - 1).astype(np.uint64)
    bits = 21 if d == 3 else 32
    code = np.zeros(n, np.uint64)
    for b in range(bits):
        for k in range(d):
            code |= ((c[:, k] >> np.uint64(b)) & np.uint64(1)) << np.uint64(d * b + (d - 1 - k))
    return np.argsort(code, kind="stable")


def aligned_zeros(shape: tuple[int, int]) -> np.ndarray:
    """Zeros (float64) whose first element starts a 64-byte cache line (numpy's large blocks start 16
    bytes past one), so that a row of 8 is one line, not two."""
    size = int(np.prod(shape))
    buf = np.zeros(size + 8)
    off = (-buf.ctypes.data % 64) // 8
    return buf[off:off + size].reshape(shape)


def spec_array(d: int, gravity: bool, periodic: bool) -> np.ndarray:
    """An empty array whose number of dimensions, 1 + (d == 3) + 2 gravity + 4 periodic, tells the
    kernels the case they run (:func:`_flags`): numba compiles one version per case, without the
    tests on d, gravity and walls in the inner loops."""
    return np.zeros((1,) * (1 + (d == 3) + 2 * bool(gravity) + 4 * bool(periodic)))


def container_arrays(container, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The container as the kernels read it: ``cont`` int64 [kind (0 box, 1 sphere, 2 cylinder), cylinder
    axis (−1 otherwise), planes P, walls W], and ``wpar`` (1 + P, 4): row 0 the centre (3, zero-padded) and
    R_w, then each plane's normal (3, zero-padded) and offset h. Runtime values, not types: every
    container runs in the one compiled hard-wall case."""
    from .state import KIND_CODE

    npl = len(container.planes)
    cont = np.array([KIND_CODE[container.kind], container.axis if container.kind == "cylinder" else -1, npl,
                     container.n_walls(d)], np.int64)
    wpar = np.zeros((1 + npl, 4))
    if container.curved:
        wpar[0, :d] = container.centre
        wpar[0, 3] = container.radius
    if npl:
        wpar[1:, :d] = container.planes[:, :d]
        wpar[1:, 3] = container.planes[:, d]
    return cont, wpar


def cell_grid(box: np.ndarray, sigma_max: float, periodic: bool) -> tuple[np.ndarray, np.ndarray]:
    """Cells per axis (d,) and their widths (d,): width ≥ the largest diameter (with a margin for
    round-off), and in a periodic box at least 3 cells or a single one (so that the 3^d
    neighbour cells are distinct)."""
    nc = np.floor(box / (sigma_max * (1.0 + 1e-9))).astype(np.int64)
    nc = np.maximum(nc, 1)
    if periodic:
        nc[nc < 3] = 1
    return nc, box / nc


class CompiledEngine:
    """The numba engine with the interface of :class:`.reference.ReferenceEngine` (advance, snapshot, …).

    ``gravity`` (d,) length / time² or None (needs a hard-wall box); ``tc`` the TC model's time (0: off)."""

    name = "numba"

    def __init__(self, state: GasState, restitution: float = 1.0, log: bool = False, log_capacity: int = 4096,
                 gravity=None, tc: float = 0.0):
        n, d = state.n, state.d
        self.d = d
        self.periodic = state.periodic
        self.e = float(restitution)
        self.gravity = check_gravity(state, gravity)
        self.grav = bool(np.any(self.gravity != 0.0))
        self.g3 = np.zeros(3)
        self.g3[:d] = self.gravity
        self.tc = float(tc)
        self.tlast = np.full(n, -np.inf)
        self.box = state.box.copy()
        self.rad, self.masses = state.radii.copy(), state.masses.copy()
        self.spec = spec_array(d, self.grav, self.periodic)
        self.nc, self.width = cell_grid(self.box, 2.0 * float(self.rad.max()), self.periodic)
        # particles are kept in Z order of their starting cells (perm: slot → the state's index), so that
        # neighbours in space are mostly neighbours in memory (cache lines shared, fewer misses at large N)
        self.perm = spatial_order(state.positions, self.width, self.nc)
        self.inv = np.empty(n, np.int64)
        self.inv[self.perm] = np.arange(n)
        # one cache line per particle: x (3), v (3), own time, radius (a 2D gas leaves x_2, v_2 at 0)
        self.P = aligned_zeros((n, 8))
        self.P[:, :d] = state.positions[self.perm]
        self.P[:, 3:3 + d] = state.velocities[self.perm]
        self.P[:, 6] = state.time
        self.P[:, 7] = state.radii[self.perm]
        self.m = state.masses[self.perm]
        self.acc = np.array([state.time, 0.0])
        self.container = state.container
        self.cont, self.wpar = container_arrays(state.container, d)
        self.wall_impulse = np.zeros(int(self.cont[3]))
        self.counts = np.zeros(6, np.int64)
        self.keep_log = log
        cap = log_capacity if log else 1
        self.log_t, self.log_i, self.log_j = np.zeros(cap), np.zeros(cap, np.int64), np.zeros(cap, np.int64)
        self.cnt = np.zeros(n, np.int64)
        self.col_cnt = np.zeros(n, np.int64)
        self.ev_t = np.zeros(n)
        self.ev_p = np.zeros(n, np.int64)
        self.heap = np.zeros(n, np.int64)
        self.hpos = np.zeros(n, np.int64)
        self.hkey = np.zeros(n)
        self.cell = np.full(n, -1, np.int64)
        self.nxt = np.full(n, -1, np.int64)
        self.prv = np.full(n, -1, np.int64)
        self.head = np.full(int(np.prod(self.nc)), -1, np.int64)
        self.ci = np.zeros((n, d), np.int64)
        self.col_t = np.zeros(n)
        self.col_p = np.zeros(n, np.int64)
        #: the kernels: built ahead of time for this case when a build has them (:mod:`..engine.aot`; no
        #: numba import, no compile), else numba's
        self.case = case_name(d, self.grav, self.periodic)
        self.aot = _aot_build(self.case)
        self.kernels = "ahead-of-time" if self.aot is not None else "jit"
        args = self.build_call(state.time)
        if self.aot is not None:
            self.aot.call(f"gas_build_{self.case}", args)
        else:
            _build(*args)

    def build_call(self, t: float) -> tuple:
        """The arguments of the cell-list and heap kernel (``_build``) at time t."""
        return (self.P, self.box, self.width, self.spec, self.ci, self.cell, self.nc, self.head,
                self.nxt, self.prv, self.ev_t, self.ev_p, self.col_t, self.col_p, self.col_cnt,
                self.cnt, self.heap, self.hpos, self.hkey, float(t), self.g3, self.cont, self.wpar)

    def advance_call(self, t_stop: float, max_events: int) -> tuple:
        """The arguments of the event-loop kernel (``_advance``): also what :mod:`..engine.prebuild` compiles
        ahead of time from."""
        return (float(t_stop), int(max_events), self.e, self.spec, self.P, self.m, self.box,
                self.width, self.ci, self.cell, self.nc, self.head, self.nxt, self.prv,
                self.ev_t, self.ev_p, self.col_t, self.col_p, self.col_cnt, self.cnt, self.heap,
                self.hpos, self.hkey, self.acc, self.wall_impulse, self.counts, self.log_t, self.log_i,
                self.log_j, bool(self.keep_log), self.g3, self.tc, self.tlast, self.cont, self.wpar)

    @property
    def x(self) -> np.ndarray:
        """Positions (N, d) at each particle's own time (a copy, in the state's order)."""
        return self.P[self.inv, :self.d]

    @property
    def v(self) -> np.ndarray:
        """Velocities (N, d) at each particle's own time (a copy, in the state's order)."""
        return self.P[self.inv, 3:3 + self.d]

    @property
    def tp(self) -> np.ndarray:
        """Each particle's own time (N,) (a copy, in the state's order)."""
        return self.P[self.inv, 6]

    @property
    def time(self) -> float:
        return float(self.acc[0])

    @property
    def virial(self) -> float:
        return float(self.acc[1])

    @property
    def n_collisions(self) -> int:
        return int(self.counts[0])

    @property
    def n_wall_events(self) -> int:
        return int(self.counts[1])

    def advance(self, t_stop: float, max_events: int) -> bool:
        """Run heap events (collisions, wall hits, cell crossings, invalidated events) up to ``t_stop``,
        at most ``max_events`` of them; True when the time reached ``t_stop``. Stopping changes nothing but
        the clock, so where the stops fall (records, blocks, chunks) does not change the run."""
        while True:
            args = self.advance_call(t_stop, max_events)
            code = (self.aot.call(f"gas_advance_{self.case}", args) if self.aot is not None else _advance(*args))
            if code != LOG_FULL:
                return code == REACHED
            grow = len(self.log_t)
            self.log_t = np.concatenate([self.log_t, np.zeros(grow)])
            self.log_i = np.concatenate([self.log_i, np.zeros(grow, np.int64)])
            self.log_j = np.concatenate([self.log_j, np.zeros(grow, np.int64)])

    def positions_at(self, t: float) -> np.ndarray:
        """Positions (N, d) at time t (not wrapped into a periodic box), read without touching the engine."""
        h = (t - self.tp)[:, None]
        return self.x + (self.v + 0.5 * self.gravity * h) * h if self.grav else self.x + self.v * h

    def velocities_at(self, t: float) -> np.ndarray:
        """Velocities (N, d) at time t (a copy)."""
        return self.v + self.gravity * (t - self.tp)[:, None] if self.grav else self.v.copy()

    def snapshot(self) -> GasState:
        return GasState(self.positions_at(self.time), self.velocities_at(self.time), self.rad, self.masses, self.box,
                        self.periodic, self.time, validate=False, container=self.container)

    def kinetic_energy(self) -> float:
        v = self.velocities_at(self.time)
        return 0.5 * float(np.sum(self.masses * np.sum(v ** 2, axis=1)))

    def event_log(self) -> EventLog:
        """The logged events with the state's particle indices (i < j for a pair, j = −1 − wall for a wall)."""
        k = int(self.counts[4])
        i = self.perm[self.log_i[:k]]
        j = self.log_j[:k]
        pair = j >= 0
        jj = np.where(pair, self.perm[np.where(pair, j, 0)], j)
        return EventLog(self.log_t[:k].copy(), np.where(pair, np.minimum(i, jj), i),
                        np.where(pair, np.maximum(i, jj), jj))

    def extra_info(self) -> dict:
        return {"cell_crossings": int(self.counts[2]), "invalidated": int(self.counts[3]),
                "tc_elastic": int(self.counts[5]), "cells": self.nc.tolist()}


def make_engine(state: GasState, restitution: float = 1.0, log: bool = False, engine: str = "auto", *,
                gravity=None, tc: float = 0.0):
    """The compiled engine, or the numpy reference (``engine`` "numpy", or "auto" without numba)."""
    if engine not in ("auto", "numba", "numpy"):
        raise ValueError(f"engine = {engine!r} must be 'auto', 'numba' or 'numpy'")
    if engine == "numba" and not available():
        raise ValueError(f"engine = 'numba' was asked for but {unavailable_reason() or 'it is turned off'}")
    if engine == "numpy" or not available():
        return ReferenceEngine(state, restitution, log, gravity=gravity, tc=tc)
    return CompiledEngine(state, restitution, log, gravity=gravity, tc=tc)


def run(state: GasState, t_end: float, *, restitution: float = 1.0, blocks: int = 1, log: bool = False,
        engine: str = "auto", progress=None, chunk_seconds: float = 0.2, gravity=None, tc: float | None = None,
        record_interval: float | None = None) -> GasRun:
    """Run from ``state`` to ``t_end`` with the compiled engine (the numpy reference without numba,
    noted in ``info["warnings"]``); see :func:`.reference.drive` for ``blocks``, ``record_interval``,
    ``progress`` and Ctrl-C.

    ``gravity`` (d,): uniform acceleration (length / time²), parabolic flights; needs a hard-wall box.
    ``tc``: the TC model's time against inelastic collapse (see :func:`.state.default_tc`; None picks
    it, 0 turns it off). Chunks are sized to about ``chunk_seconds`` of wall time from the speed of the
    previous chunk.
    """
    check_run_args(state, t_end, restitution, blocks)
    g = check_gravity(state, gravity)
    tc = default_tc(state, restitution, g, tc)
    eng = make_engine(state, restitution, log, engine, gravity=g, tc=tc)
    fallback = isinstance(eng, ReferenceEngine) and engine == "auto"
    if fallback:
        warnings.warn(f"hard-sphere gas: compiled engine unavailable ({unavailable_reason() or 'turned off'}); "
                      f"running the O(N²) numpy reference", RuntimeWarning, stacklevel=2)
    result = drive(_Paced(eng, chunk_seconds), state, t_end, blocks=blocks, chunk_events=1, progress=progress,
                   record_interval=record_interval)
    if fallback:
        result.info.setdefault("warnings", []).append(
            f"numba unavailable ({unavailable_reason() or 'turned off'}): ran the numpy reference")
    return result


class _Paced:
    """Wraps an engine so each advance() runs ~chunk_seconds of events (the count adapts to the speed)."""

    def __init__(self, engine, chunk_seconds: float):
        self._e = engine
        self._seconds = chunk_seconds
        self._events = 1000

    def __getattr__(self, name):
        return getattr(self._e, name)

    def advance(self, t_stop: float, max_events: int) -> bool:
        t0 = _time.perf_counter()
        done = self._e.advance(t_stop, self._events)
        dt = _time.perf_counter() - t0
        if not done:
            rate = self._events / max(dt, 1e-6)
            self._events = int(min(max(rate * self._seconds, 100), 50_000_000))
        return done
