"""Walls: implicit surfaces ``f(x, t) = 0`` with the allowed side ``f < 0`` (theory §7).

Units SI: positions m, times s. Every method takes one point ``x`` (3,) and a time ``t`` and returns

- ``value`` f (scalar), ``gradient`` ∇f (3,), ``hessian`` H (3,3),
- ``dt`` ∂t f, ``dt_gradient`` ∂t∇f (3,), ``dt2`` ∂t²f (scalars / (3,)),
- ``normal`` ∇f/|∇f| (3,), pointing into the *forbidden* side; a zero gradient raises
  :class:`~pem_physics.errors.SimulationError` naming the wall,
- ``gap(x, r, t)``: the signed distance from the surface of a sphere of radius r centred at x to
  the wall, positive on the allowed side, zero touching, negative overlapping.

The built-in walls (:class:`Plane`, :class:`Sphere`, :class:`Cylinder`, :class:`Box`) use signed
distances as f (``|∇f| = 1`` wherever f is smooth), so ``gap = −f − r`` exactly, and the surface a
sphere's centre touches is the wall offset by r, ``f + r`` (:meth:`Wall.offset`), with the same
derivatives. A :class:`UserWall` takes f and its derivatives from Python callables; its gap is the
first-order distance ``−f/|∇f| − r`` (exact where f is a signed distance, ``distance=True``), and
only a signed-distance user wall can be offset for spheres of nonzero radius.
:class:`Moving` translates any wall along a prescribed path d(t) (a shaken floor, a piston).

Box gap (documented choice): outside a box (the box is an obstacle) f is minus the exact Euclidean
signed distance: C¹ everywhere outside, its Hessian is piecewise smooth (0 facing a face, the
cylinder/sphere curvature facing an edge/corner; it jumps on the planes that continue the faces).
Inside a box (the box is a container) f = max_i(|y_i| − h_i) in box coordinates y: exactly the
distance to the nearest face, Hessian 0, with a kink on the medial planes where two faces are
equally near. A sphere reaches such a plane only in a corner touching two faces at once, which the
simulator treats as two impacts in a row.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import SimulationError, ValidationError

_ZERO3 = np.zeros(3)
_ZERO33 = np.zeros((3, 3))


def _vec(v, path: str, unit: bool = False) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValidationError(path, f"expected 3 finite numbers, got {v!r}")
    if unit:
        n = np.linalg.norm(a)
        if n == 0.0:
            raise ValidationError(path, "must not be the zero vector")
        a = a / n
    return a


def _positive(v, path: str) -> float:
    v = float(v)
    if not (np.isfinite(v) and v > 0.0):
        raise ValidationError(path, f"must be a positive finite number, got {v!r}")
    return v


class Wall:
    """Base class: a static wall of signed-distance type, unless a subclass says otherwise."""

    #: |∇f| = 1 where f is smooth: f is a signed distance, so gap = −f − r exactly.
    distance = True

    def __init__(self, name: str):
        self.name = name

    # --- to be provided by subclasses --------------------------------------------------------
    def value(self, x, t: float = 0.0) -> float:
        raise NotImplementedError

    def gradient(self, x, t: float = 0.0) -> np.ndarray:
        raise NotImplementedError

    def hessian(self, x, t: float = 0.0) -> np.ndarray:
        raise NotImplementedError

    def dt(self, x, t: float = 0.0) -> float:
        return 0.0

    def dt_gradient(self, x, t: float = 0.0) -> np.ndarray:
        return _ZERO3.copy()

    def dt2(self, x, t: float = 0.0) -> float:
        return 0.0

    # --- shared --------------------------------------------------------------------------------
    def normal(self, x, t: float = 0.0) -> np.ndarray:
        """Unit normal (3,) into the forbidden side; a zero gradient is an error naming the wall."""
        g = self.gradient(x, t)
        n = float(np.linalg.norm(g))
        if not n > 0.0:
            raise SimulationError(f"wall {self.name!r}: zero gradient ∇f at x = {np.asarray(x).tolist()}, "
                                  f"t = {t:g} s: the wall has no normal there", time=t)
        return g / n

    def gap(self, x, r: float = 0.0, t: float = 0.0) -> float:
        """Signed distance (m) of the surface of a sphere of radius r centred at x to the wall."""
        if self.distance:
            return -self.value(x, t) - r
        g = self.gradient(x, t)
        n = float(np.linalg.norm(g))
        if not n > 0.0:
            self.normal(x, t)  # raises with the wall's name
        return -self.value(x, t) / n - r

    def gaps(self, X, r) -> np.ndarray:
        """:meth:`gap` at t = 0 of spheres centred at X (n,3) m with radii r (n,) m: (n,) m. The static walls
        evaluate all of them at once (the contact driver asks after every trial step); others loop."""
        return np.array([self.gap(x, float(ri)) for x, ri in zip(X, r)], dtype=float)

    def offset(self, r: float) -> Wall:
        """The wall the centre of a sphere of radius r touches: f + r (signed-distance walls only)."""
        if r == 0.0:
            return self
        if not self.distance:
            raise ValidationError(f"walls.{self.name}", f"a sphere of radius {r:g} m needs f to be a signed "
                                  "distance (distance=True); otherwise give the sphere radius 0 and fold the "
                                  "radius into f")
        return Offset(self, r)

    def constraint_lambda(self, x, v, force, mass: float, t: float = 0.0) -> float:
        """λ (N per unit of f) of theory §7 that keeps ``d²f/dt² = 0`` for a point mass on the wall.

        ``m a = F + λ∇f``; λ < 0 means the wall pushes (∇f points into the forbidden side);
        λ > 0 would need the wall to pull: the mass lifts off.
        """
        g = self.gradient(x, t)
        gg = float(g @ g)
        if not gg > 0.0:
            self.normal(x, t)
        v = np.asarray(v, float)
        acc = g @ force / mass + v @ self.hessian(x, t) @ v + 2.0 * (self.dt_gradient(x, t) @ v) + self.dt2(x, t)
        return -acc * mass / gg

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Offset(Wall):
    """A signed-distance wall moved by r towards the allowed side (where sphere centres touch it)."""

    def __init__(self, base: Wall, r: float):
        super().__init__(base.name)
        self.base, self.r = base, float(r)

    def value(self, x, t=0.0):
        return self.base.value(x, t) + self.r

    def gradient(self, x, t=0.0):
        return self.base.gradient(x, t)

    def hessian(self, x, t=0.0):
        return self.base.hessian(x, t)

    def dt(self, x, t=0.0):
        return self.base.dt(x, t)

    def dt_gradient(self, x, t=0.0):
        return self.base.dt_gradient(x, t)

    def dt2(self, x, t=0.0):
        return self.base.dt2(x, t)


class Plane(Wall):
    """Plane through ``point`` (3,) m; ``normal`` (3,) points into the allowed side (a floor: +z)."""

    def __init__(self, point, normal, name: str = "plane"):
        super().__init__(name)
        self.point = _vec(point, f"walls.{name}.point")
        self.n = _vec(normal, f"walls.{name}.normal", unit=True)

    def value(self, x, t=0.0):
        return -float(self.n @ (np.asarray(x, float) - self.point))

    def gradient(self, x, t=0.0):
        return -self.n.copy()

    def hessian(self, x, t=0.0):
        return _ZERO33.copy()

    def gaps(self, X, r):
        return (np.asarray(X, float) - self.point) @ self.n - r


class Sphere(Wall):
    """Spherical wall, centre (3,) m, radius m; ``inside=True``: a container, else an obstacle."""

    def __init__(self, centre, radius: float, inside: bool = True, name: str = "sphere"):
        super().__init__(name)
        self.centre = _vec(centre, f"walls.{name}.centre")
        self.radius = _positive(radius, f"walls.{name}.radius")
        self.sign = 1.0 if inside else -1.0

    def _d(self, x):
        rel = np.asarray(x, float) - self.centre
        return rel, float(np.linalg.norm(rel))

    def value(self, x, t=0.0):
        return self.sign * (self._d(x)[1] - self.radius)

    def gradient(self, x, t=0.0):
        rel, d = self._d(x)
        # at the centre the distance has no gradient: report zero and let normal() name the wall
        return self.sign * rel / d if d > 0 else _ZERO3.copy()

    def hessian(self, x, t=0.0):
        rel, d = self._d(x)
        if d == 0:
            return _ZERO33.copy()
        u = rel / d
        return self.sign * (np.eye(3) - np.outer(u, u)) / d

    def gaps(self, X, r):
        rel = np.asarray(X, float) - self.centre
        return -(self.sign * (np.sqrt(np.einsum("ni,ni->n", rel, rel)) - self.radius)) - r


class Cylinder(Wall):
    """Infinite circular cylinder: axis through ``point`` (3,) along ``direction`` (3,), radius m."""

    def __init__(self, point, direction, radius: float, inside: bool = True, name: str = "cylinder"):
        super().__init__(name)
        self.point = _vec(point, f"walls.{name}.point")
        self.a = _vec(direction, f"walls.{name}.direction", unit=True)
        self.radius = _positive(radius, f"walls.{name}.radius")
        self.sign = 1.0 if inside else -1.0
        self.P = np.eye(3) - np.outer(self.a, self.a)

    def _rho(self, x):
        rho = self.P @ (np.asarray(x, float) - self.point)
        return rho, float(np.linalg.norm(rho))

    def value(self, x, t=0.0):
        return self.sign * (self._rho(x)[1] - self.radius)

    def gradient(self, x, t=0.0):
        rho, d = self._rho(x)
        return self.sign * rho / d if d > 0 else _ZERO3.copy()

    def hessian(self, x, t=0.0):
        rho, d = self._rho(x)
        if d == 0:
            return _ZERO33.copy()
        u = rho / d
        return self.sign * (self.P - np.outer(u, u)) / d

    def gaps(self, X, r):
        rho = (np.asarray(X, float) - self.point) @ self.P  # P is symmetric
        return -(self.sign * (np.sqrt(np.einsum("ni,ni->n", rho, rho)) - self.radius)) - r


class Box(Wall):
    """Box of ``half_sizes`` (3,) m about ``centre`` (3,); ``axes`` (3,3): rows are the box axes in lab
    components (orthonormal, right-handed; default the lab axes). ``inside=True``: a container."""

    def __init__(self, centre, half_sizes, axes=None, inside: bool = True, name: str = "box"):
        super().__init__(name)
        self.centre = _vec(centre, f"walls.{name}.centre")
        self.h = _vec(half_sizes, f"walls.{name}.half_sizes")
        if np.any(self.h <= 0):
            raise ValidationError(f"walls.{name}.half_sizes", f"must be positive, got {self.h.tolist()}")
        R = np.eye(3) if axes is None else np.asarray(axes, float)
        if R.shape != (3, 3) or not np.allclose(R @ R.T, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
            raise ValidationError(f"walls.{name}.axes", "must be a 3×3 orthonormal right-handed matrix (rows = axes)")
        self.R = R
        self.inside = bool(inside)

    def _local(self, x):
        y = self.R @ (np.asarray(x, float) - self.centre)
        return y, np.abs(y) - self.h

    def value(self, x, t=0.0):
        y, q = self._local(x)
        if self.inside:
            return float(np.max(q))
        m = np.maximum(q, 0.0)
        return -(float(np.linalg.norm(m)) + min(float(np.max(q)), 0.0))

    def gradient(self, x, t=0.0):
        y, q = self._local(x)
        s = np.where(y >= 0, 1.0, -1.0)
        gy = np.zeros(3)
        if self.inside:
            k = int(np.argmax(q))
            gy[k] = s[k]
            return self.R.T @ gy
        m = np.maximum(q, 0.0)
        nm = float(np.linalg.norm(m))
        if nm > 0:
            gy = s * m / nm
        else:  # inside the obstacle: the nearest face
            k = int(np.argmax(q))
            gy[k] = s[k]
        return -(self.R.T @ gy)

    def hessian(self, x, t=0.0):
        if self.inside:
            return _ZERO33.copy()
        y, q = self._local(x)
        m = np.maximum(q, 0.0)
        nm = float(np.linalg.norm(m))
        if nm == 0:
            return _ZERO33.copy()
        s = np.where(y >= 0, 1.0, -1.0)
        act = (q > 0).astype(float)
        u = m / nm
        Hy = (np.diag(act) - np.outer(u, u)) / nm * np.outer(s, s)
        return -(self.R.T @ Hy @ self.R)

    def gaps(self, X, r):
        q = np.abs((np.asarray(X, float) - self.centre) @ self.R.T) - self.h
        qmax = q.max(axis=1)
        if self.inside:
            return -qmax - r
        m = np.maximum(q, 0.0)
        return np.sqrt(np.einsum("ni,ni->n", m, m)) + np.minimum(qmax, 0.0) - r


class UserWall(Wall):
    """A wall from callables of (x (3,), t): ``f`` → float, ``grad`` → (3,), ``hess`` → (3,3), and for a
    moving wall ``dt`` → ∂t f, ``dt_grad`` → ∂t∇f (3,), ``dt2`` → ∂t²f (each zero when omitted).
    ``distance=True`` declares f a signed distance (|∇f| = 1 near the wall)."""

    def __init__(self, f: Callable, grad: Callable, hess: Callable, dt: Callable | None = None,
                 dt_grad: Callable | None = None, dt2: Callable | None = None, distance: bool = False,
                 name: str = "user"):
        super().__init__(name)
        for key, fn in (("f", f), ("grad", grad), ("hess", hess), ("dt", dt), ("dt_grad", dt_grad), ("dt2", dt2)):
            if fn is not None and not callable(fn):
                raise ValidationError(f"walls.{name}.{key}", "must be a callable of (x, t)")
        self._f, self._g, self._h = f, grad, hess
        self._ft, self._gt, self._ftt = dt, dt_grad, dt2
        self.distance = bool(distance)

    def value(self, x, t=0.0):
        return float(self._f(np.asarray(x, float), t))

    def gradient(self, x, t=0.0):
        return np.asarray(self._g(np.asarray(x, float), t), float).reshape(3)

    def hessian(self, x, t=0.0):
        return np.asarray(self._h(np.asarray(x, float), t), float).reshape(3, 3)

    def dt(self, x, t=0.0):
        return 0.0 if self._ft is None else float(self._ft(np.asarray(x, float), t))

    def dt_gradient(self, x, t=0.0):
        return _ZERO3.copy() if self._gt is None else np.asarray(self._gt(np.asarray(x, float), t), float).reshape(3)

    def dt2(self, x, t=0.0):
        return 0.0 if self._ftt is None else float(self._ftt(np.asarray(x, float), t))


class Moving(Wall):
    """``base`` translated by d(t): f(x, t) = f_base(x − d(t), t).

    ``displacement``, ``velocity``, ``acceleration``: callables t → (3,) m, m/s, m/s² (d, ḋ, d̈).
    """

    def __init__(self, base: Wall, displacement: Callable, velocity: Callable, acceleration: Callable):
        super().__init__(base.name)
        self.base = base
        self.distance = base.distance
        self.d, self.v, self.a = displacement, velocity, acceleration

    def _y(self, x, t):
        return np.asarray(x, float) - np.asarray(self.d(t), float)

    def value(self, x, t=0.0):
        return self.base.value(self._y(x, t), t)

    def gradient(self, x, t=0.0):
        return self.base.gradient(self._y(x, t), t)

    def hessian(self, x, t=0.0):
        return self.base.hessian(self._y(x, t), t)

    def dt(self, x, t=0.0):
        y = self._y(x, t)
        return self.base.dt(y, t) - self.base.gradient(y, t) @ np.asarray(self.v(t), float)

    def dt_gradient(self, x, t=0.0):
        y = self._y(x, t)
        return self.base.dt_gradient(y, t) - self.base.hessian(y, t) @ np.asarray(self.v(t), float)

    def dt2(self, x, t=0.0):
        y = self._y(x, t)
        v, a = np.asarray(self.v(t), float), np.asarray(self.a(t), float)
        return (self.base.dt2(y, t) - 2.0 * (self.base.dt_gradient(y, t) @ v) + v @ self.base.hessian(y, t) @ v
                - self.base.gradient(y, t) @ a)

    def offset(self, r: float) -> Wall:
        return self if r == 0.0 else Moving(self.base.offset(r), self.d, self.v, self.a)
