"""Exceptions raised by pem_physics.

Every user-facing problem is a :class:`PemError`. Bad input is a
:class:`ValidationError` whose ``path`` names the offending item in the same
dotted/indexed form a scene file uses, e.g. ``bodies[2].dipoles[0].moment``.
"""

from __future__ import annotations


class PemError(Exception):
    """Base class of every error pem_physics raises on purpose."""


def join_path(prefix: str, path: str) -> str:
    """Join two key paths: ``join_path("bodies[0]", "mass") == "bodies[0].mass"``."""
    if not prefix:
        return path
    if not path:
        return prefix
    if path.startswith("["):
        return prefix + path
    return f"{prefix}.{path}"


class ValidationError(PemError, ValueError):
    """Invalid input; ``path`` names the item, ``message`` says what was expected."""

    def __init__(self, path: str, message: str):
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)

    def at(self, prefix: str) -> ValidationError:
        """The same error with ``prefix`` put in front of its path."""
        err = type(self)(join_path(prefix, self.path), self.message)
        err.__cause__ = self.__cause__
        return err


class MeshError(ValidationError):
    """A triangle mesh that has no well-defined enclosed volume."""


class SimulationError(PemError):
    """The integration blew up (NaN/inf or orthonormality lost)."""

    def __init__(self, message: str, time: float | None = None, body: str | None = None,
                 member: int | None = None):
        self.time = time
        self.body = body
        self.member = member  # ensemble member index, or None for a single run
        super().__init__(message)


class Interrupted(PemError):
    """A run stopped on request; the partial result is attached as ``result``."""

    def __init__(self, message: str, result=None):
        self.result = result
        super().__init__(message)
