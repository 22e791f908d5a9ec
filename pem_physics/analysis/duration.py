"""The refusal of a run estimated to take more than a day (:func:`~pem_physics.engine.budget.check_duration`),
worded alike by ``run``, ``basin`` and ``sweep``: it names the option that drives the cost — ``--dt`` when the user
gave one smaller than the scene's own and the run would fit in the bound at the scene's step (the steps it adds are
what make the run long), else ``--t-end`` — and says how to lower it, with ``--force`` to run anyway.
"""

from __future__ import annotations

from ..engine import budget
from ..errors import ValidationError


def dt_drives(steps: float, bodies: int, members: int, dt: float | None, scene_dt) -> bool:
    """Whether a ``--dt`` the user gave (s; None: not given) is what makes a run of ``steps`` steps too long: smaller
    than the scene's own step ``scene_dt`` (s), at which the same run would pass the bound."""
    if dt is None or not isinstance(scene_dt, (int, float)) or not dt < scene_dt:
        return False
    try:
        budget.check_duration(steps * dt / scene_dt, bodies, members, "", "")
    except ValidationError:
        return False
    return True


def check_duration(steps: float, bodies: int, members: int, dt: float | None, scene_dt, *, fewer: str = "",
                   force: bool = False, t_end_path: str = "--t-end", dt_path: str = "--dt") -> None:
    """:func:`~pem_physics.engine.budget.check_duration` of ``steps`` steps of ``bodies`` × ``members``, refused on
    ``dt_path`` when :func:`dt_drives` (``dt`` the user's step, ``scene_dt`` the scene's, s), else on
    ``t_end_path``; the fix names both options, that one first, then ``fewer`` (e.g. "lower --grid")."""
    more = f", or {fewer}" if fewer else ""
    if not force and dt_drives(steps, bodies, members, dt, scene_dt):
        path, fix = dt_path, f"raise --dt (the scene's step is {scene_dt:g} s) or shorten --t-end{more}"
    else:
        path, fix = t_end_path, f"shorten --t-end or raise --dt{more}"
    budget.check_duration(steps, bodies, members, path, fix, force=force)
