"""The event-driven gas engine's numba kernels (:mod:`.edmd` drives them): the event heap, the cell lists,
collision and wall times, the event loop (``_advance``) and the set-up (``_build``).

Apart from :mod:`.edmd` so that a run on kernels built ahead of time (:mod:`pem_physics.aot`) never imports numba:
this module is imported only when numba's JIT compiles (or loads from its cache) a case the build lacks.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import numba as _numba

#: The kernels a build made ahead of time holds (:mod:`pem_physics.aot`): kind → function. Only the 3D ones: Blender
#: (the user who cannot wait for a compile) makes 3D gases only, and every 3D case runs on these two.
BUILD_ENTRIES = {"gas_build_3d": "_build", "gas_advance_3d": "_advance"}

nb = _numba()
if nb is None:
    raise ImportError("the gas engine's JIT kernels need numba")

_jit = nb.njit(cache=True, error_model="numpy")
_jit_inline = nb.njit(cache=True, error_model="numpy", inline="always")
# Event loops that allocate nothing: no reference counting (pem_physics.engine.backends.kernels._jit_borrowed)
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
    """(d, gravity on, periodic) of the array ``spec`` (see :func:`spec_array`): d from its number of dimensions, a
    property of its type (each d compiled apart, its loops over axes unrolled), the other two from its length, read
    at run time (the same branch at every event: the CPU predicts it)."""
    k = spec.shape[0] - 1
    return (3 if spec.ndim == 2 else 2), (k & 1) != 0, (k & 2) != 0

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

# inlined at its call sites (_events, _build): with d fixed at compile time (spec), that made the event loop
# ~15 % faster (N = 4000) for ~25 % more compile time
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
    xi0, xi1, xi2, vi0, vi1, vi2 = _state_at(P, i, t, g, d, grav)
    cross, code = _crossing(i, xi0, xi1, xi2, vi0, vi1, vi2, P, box, width, ci, g, d, grav, periodic, nw, kind, cax)
    if not periodic:
        cross, code = _container_hit(i, xi0, xi1, xi2, vi0, vi1, vi2, P, g, d, grav, kind, cax, cont, wpar, cross,
                                     code)
    best, partner = _nearest_collision(i, t, slab_axis, slab_dir, xi0, xi1, xi2, vi0, vi1, vi2, P, box, spec, ci,
                                       nc, head, nxt, col_t, col_p, g)
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


@_jit_inline
def _state_at(P, i, t, g, d, grav):
    """Particle i's position and velocity (x0, x1, x2, v0, v1, v2) at time t (its flight since P[i, 6])."""
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
    return xi0, xi1, xi2, vi0, vi1, vi2


@_jit_inline
def _crossing(i, xi0, xi1, xi2, vi0, vi1, vi2, P, box, width, ci, g, d, grav, periodic, nw, kind, cax):
    """Particle i's first cell crossing (codes -1-nw-(2a+dir)) or, between hard walls, box face hit (codes
    -1-wall) from its state (xi, vi): (the time to it, s; its code), (inf, "no event") when it never moves."""
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
    return cross, code


@_jit_inline
def _container_hit(i, xi0, xi1, xi2, vi0, vi1, vi2, P, g, d, grav, kind, cax, cont, wpar, cross, code):
    """(cross, code), or the sphere's, cylinder's or a plane's hit when it comes first (codes -1-wall)."""
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
    return cross, code


@_jit_inline
def _nearest_collision(i, t, slab_axis, slab_dir, xi0, xi1, xi2, vi0, vi1, vi2, P, box, spec, ci, nc, head, nxt,
                       col_t, col_p, g):
    """Particle i's earliest collision (time, partner; inf, -1 for none) with the particles of the 3^d cells
    around it, or (slab_axis ≥ 0) of the stored one and the slab of cells just come into reach."""
    d, grav, periodic = _flags(spec)
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
    return best, partner

@_jit
def _advance(t_stop, max_events, e, spec, P, m, box, width, ci, cell, nc, head, nxt, prv,
             ev_t, ev_p, col_t, col_p, col_cnt, cnt, heap, hpos, hkey, acc, wall_imp, counts, log_t, log_i, log_j,
             keep_log, g, tc, tlast, cont, wpar):
    """Run events up to t_stop, at most max_events heap pops. acc = [time, virial];
    counts = [collisions, wall events, crossings, invalidated, logged, made elastic by t_c].
    spec: the case (spec_array); g (3,) gravity; tc the TC model's time, tlast (N,) last collisions;
    cont, wpar: the container (:func:`.edmd.container_arrays`).
    Returns :mod:`.edmd`'s REACHED/MAX_EVENTS/LOG_FULL (0, 1, 2)."""
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
            _collide(i, p, t, e, tc, P, m, box, g, d, grav, periodic, tlast, acc, counts)
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
            _reflect(i, -1 - p, t, P, m, g, d, grav, cont, wpar, wall_imp)
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
            r0 = i
            slab_axis, slab_dir = _cross_cell(i, -1 - nw - p, P, box, ci, cell, nc, head, nxt, prv, col_p, col_cnt,
                                              cnt, d)
            counts[2] += 1
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


@_jit_inline
def _drift(P, i, t, g, d, grav):
    """Particle i moved to time t along its flight (in place)."""
    for k in range(d):
        if grav:
            hi = t - P[i, 6]
            P[i, k] += (P[i, 3 + k] + 0.5 * g[k] * hi) * hi
            P[i, 3 + k] += g[k] * hi
        else:
            P[i, k] += P[i, 3 + k] * (t - P[i, 6])
    P[i, 6] = t


@_jit_inline
def _collide(i, p, t, e, tc, P, m, box, g, d, grav, periodic, tlast, acc, counts):
    """Particles i and p collide at t (in place): both moved to t, then the impulse along the line of centres with
    restitution e (1 within tc of a particle's last collision: the TC model), its virial added to acc[1]."""
    # scalars: no allocation per event
    _drift(P, i, t, g, d, grav)
    _drift(P, p, t, g, d, grav)
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


@_jit_inline
def _reflect(i, wall, t, P, m, g, d, grav, cont, wpar, wall_imp):
    """Particle i hits ``wall`` (a box face 0…2d−1, the sphere or cylinder, a plane) at t (in place): moved to t,
    its velocity mirrored about the wall's normal, the impulse added to wall_imp[wall]."""
    a = wall // 2
    _drift(P, i, t, g, d, grav)
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


@_jit_inline
def _cross_cell(i, code, P, box, ci, cell, nc, head, nxt, prv, col_p, col_cnt, cnt, d):
    """Particle i crosses into the next cell (``code`` 2a + dir: axis a, +1 odd, −1 even; through a periodic box's
    face it continues from its image), relinked in the cell lists. Returns (slab_axis, slab_dir) for
    :func:`_schedule`: the slab of cells just come into reach when its stored collision is still valid, else
    (−1, 0): scan all."""
    slab_axis = -1
    slab_dir = 0
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
    # the trajectory is unchanged: if the stored best collision is still valid, only the
    # slab of cells just come into reach can hold an earlier one
    # (on a periodic one-cell axis the wrap changes which images are in reach: scan all)
    q = col_p[i]
    if nc[a] > 1 and (q < 0 or cnt[q] == col_cnt[i]):
        slab_axis = a
        slab_dir = step
    return slab_axis, slab_dir


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
