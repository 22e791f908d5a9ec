"""How fast a contact model's spheres can move: the constants of the grazing check (:class:`SpeedBounds`) and of
free flight in merged steps (:class:`FlightBounds`), fixed for a run (theory §7; the kernels' copies in
:mod:`..broad_kernels`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import walls as wallmod


class SpeedBounds(NamedTuple):
    """Constants of the grazing check (:func:`_dips`, and the compiled kernels' copy of it), fixed for a run.

    A sphere centre moves at |v + ω × r| ≤ inv_mass·|p| + lever·|L| (p, L its body's momenta): inv_mass (S,)
    1/M of a translating owner (else 0), and lever (S,) k with ω × r = Uᵀ (I⁺ L_body × c) (c the sphere's centre
    in body axes), so k = ‖[c]× I⁺‖₂, the same at every orientation (a pendulum's bob gets the transverse 1/I,
    not the tiny inertia about its string); through a hinge ω = (a·L)/J a and k = |a × r|/J, constant as the
    body turns about a; 0 on fixed bodies. A sphere pair's gap changes no faster than the sum of its two
    spheres' speeds; a sphere's gap to a signed-distance wall (|∇f| = 1) no faster than the sphere moves; any
    other wall, or a hinge with J = 0: no bound (bounded (P,) False).

    sigma (P,) m: g + σ ≥ 0 is a distance whose square is quadratic in time along straight lines: r_a + r_b
    for a sphere pair (|x_a − x_b|), r + R for a sphere or cylinder obstacle (the distance to its centre or
    axis), r for a box from outside (the distance to the box); 0 (interpolate g itself) for a plane, whose g
    is already linear or quadratic in time, and for containers, whose g has no such form.
    """

    inv_mass: np.ndarray
    lever: np.ndarray
    bounded: np.ndarray
    sigma: np.ndarray


def _cross_columns(c: np.ndarray, M: np.ndarray) -> np.ndarray:
    """[c]× M (3,3): c (3,) crossed with each column of M (3,3), the products and differences np.cross(c, M.T).T
    takes, in its order (the same bits) without its axis handling (~20 µs a call, a run's set-up makes dozens)."""
    return np.array([c[1] * M[2] - c[2] * M[1], c[2] * M[0] - c[0] * M[2], c[0] * M[1] - c[1] * M[0]])


def _norm2(M: np.ndarray) -> float:
    """‖M‖₂ of a (3,3) matrix: its largest singular value, as np.linalg.norm(M, 2) takes it (the same LAPACK call)."""
    return float(np.linalg.svd(M, compute_uv=False).max())


def _lever(sys_, U: np.ndarray, J: np.ndarray, o: int, c: np.ndarray) -> float:
    """k (1/(kg·m)) with |ω × r| ≤ k·|L| for the point c (3,) m (body coordinates about body o's centre of
    rotation; :class:`SpeedBounds`): ‖[c]× I⁺‖₂, or |a × r|/J through a hinge; inf for a hinge with J = 0."""
    if sys_.hinged[o]:
        Jo = float(J[o])
        return float(np.linalg.norm(np.cross(U[o] @ sys_.hinge_axis[o], c))) / Jo if Jo > 0 else np.inf
    if not c.any():  # the centre of rotation itself (a marble's sphere): no lever
        return 0.0
    return _norm2(_cross_columns(c, sys_.kin_body.inv_inertia[o]))  # ‖[c]× I⁺‖₂


def speed_bounds(model, U: np.ndarray, J: np.ndarray) -> SpeedBounds:
    """The :class:`SpeedBounds` of ``model`` (a :class:`.model.ContactModel`) for a state at orientations U (B,3,3)
    with hinge inertias J (B,) kg·m² (a hinged body's axis in body coordinates is U's image of the lab axis: the
    same at any U that turns about it)."""
    sys_ = model.system
    S, P = len(model.radius), len(model.pairs)
    inv_mass, lever = np.zeros(S), np.zeros(S)
    finite = np.ones(S, dtype=bool)
    for q in range(S):
        o = int(model.owner[q])
        if o < 0:
            continue
        if sys_.translating[o] and sys_.mass[o] > 0:
            inv_mass[q] = 1.0 / float(sys_.mass[o])
        k = _lever(sys_, U, J, o, model.center[q])
        finite[q] = np.isfinite(k)
        lever[q] = k if finite[q] else 0.0
    sigma = np.zeros(P)
    bounded = finite[model.side_a] & np.where(model.side_b >= 0, finite[model.side_b], True)
    n = model.n_sphere_pairs
    sigma[:n] = model.radius[model.side_a[:n]] + model.radius[model.side_b[:n]]
    for p in range(n, P):
        a, b = model.pairs[p]
        wall, r = model.walls[b], float(model.radius[a])
        if type(wall) in (wallmod.Sphere, wallmod.Cylinder) and wall.sign < 0:
            sigma[p] = r + wall.radius
        elif type(wall) is wallmod.Box and not wall.inside:
            sigma[p] = r
        if not wall.distance:
            bounded[p] = False
    return SpeedBounds(inv_mass, lever, bounded, sigma)


class FlightBounds(NamedTuple):
    """How fast the bodies' momenta can grow in free flight (the compiled kernels' horizon of merged steps,
    ``broad_kernels._horizon``), for scenes whose only force is gravity (``applies``; dipoles, sources, moving pivots
    or a rotating field: False, and the kernels check after every step).

    force (B,) N: |M·g| of a translating body (dp/dt = M·g), 0 for the others. lam2 (B,) 1/s²: the gravity
    torque's growth as a pinned body turns — |T − T₀| = M·|g|·|Δr_G| and |Δr_G| ≤ k_G·(the drifts' ∫|L|) (k_G the
    centre of mass's lever, :func:`_lever`), so λ² = M·|g|·k_G (``broad_kernels._horizon`` bounds the largest torque of
    a span with it); 0 for a translating body (gravity pulls at its centre of rotation), inf for a hinge with
    J = 0.

    axial (S,) bool: whether the splitting's drifts move the sphere's centre by turns about one lab axis that only the
    momentum sets — about the hinge (angle ℓ/J·h), or about L (angle |L|·λ₁⁻¹·h, λ₁ the middle principal moment the
    free turn uses) where the body's other free-turn corrections turn about axes through the centre
    ([c]×(I⁺ − λ₁⁻¹𝟙) = 0: a bob on a symmetric pendulum's axis, any point of a spherical top). Such turns compose
    as their angles add, so a step's drifts (coefficients summing to 1) move the centre as far as one drift of h
    would, plus the kicks' second-order change: ``broad_kernels._horizon`` then bounds the spheres at the steps' ends
    with Σdᵢ = 1 in place of Σ|dᵢ| (2.32 for splitting4's negative coefficients), and so does a translating body's
    drift x += h·p/M."""

    force: np.ndarray
    lam2: np.ndarray
    applies: bool
    axial: np.ndarray


def flight_bounds(model, U: np.ndarray, J: np.ndarray) -> FlightBounds:
    """The :class:`FlightBounds` of ``model``'s system at orientations U (B,3,3) with hinge inertias J (B,)
    (as :func:`speed_bounds`)."""
    sys_ = model.system
    B = len(sys_.mass)
    g = float(np.linalg.norm(sys_.gravity))
    force, lam2 = np.zeros(B), np.zeros(B)
    for o in range(B):
        if sys_.translating[o]:
            force[o] = float(sys_.mass[o]) * g
        else:
            lam2[o] = float(sys_.mass[o]) * g * _lever(sys_, U, J, o, sys_.kin_body.com[o])
    applies = (len(sys_.owner) == 0 and len(sys_.src_pos) == 0 and not sys_.driven
               and bool(np.isfinite(lam2).all()))
    axial = np.array([o < 0 or _axial(sys_, o, c) for o, c in zip(np.asarray(model.owner, int), model.center)],
                     dtype=bool)
    return FlightBounds(force, lam2, applies, axial)


def _axial(sys_, o: int, c: np.ndarray) -> bool:
    """Whether the drifts turn the point c (3,) m (body coordinates about body o's centre of rotation) about one lab
    axis set by the momentum alone (:class:`FlightBounds`' axial): a hinged body, or [c]×(I⁺ − λ₁⁻¹𝟙) = 0 up to
    rounding (λ₁⁻¹ = ``inv_moments[o, 1]``, the free turn's)."""
    if sys_.hinged[o] or not c.any():  # the centre of rotation itself stays put
        return True
    inv = sys_.kin_body.inv_inertia[o]
    off = _cross_columns(c, inv - sys_.inv_moments[o, 1] * np.eye(3))  # [c]× (I⁺ − λ₁⁻¹𝟙)
    return bool(_norm2(off) <= 1e-12 * np.linalg.norm(c) * _norm2(inv))
