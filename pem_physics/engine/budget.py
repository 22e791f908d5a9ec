"""Memory and time a run will need, checked before anything is allocated or any step taken.

A run that would ask for more memory than the machine has is refused with the number and how to lower it,
instead of being killed by the operating system half-way (records of a long run, a gas of 10⁹ particles, a basin
map of 10¹⁰ points). The estimates count the arrays the run keeps (records, particle rows, map cells), not
Python's overheads: they are lower bounds, and the limit leaves half the available memory to everything else.

Likewise a run estimated to take more than :data:`MAX_RUN_SECONDS` of wall time (10¹² steps of a pendulum: days)
is refused before it starts, with the estimate and how to shorten it, unless the caller forces it
(:func:`check_duration`; the gas command refuses an event-driven run estimated over the same bound from its events,
:func:`pem_physics.analysis.gas_config.check_duration`).
"""

from __future__ import annotations

import os

from ..errors import ValidationError

#: Share of the available memory one run's arrays may take.
SHARE = 0.5

#: Bytes granted without reading the limits: reading them (the control group's files) takes ~0.5–1 ms, a tenth of
#: a short run (the ghost path's), and a process that cannot take this much fails before any run anyway.
SMALL = 16 * 2**20


#: Where Linux mounts the control groups (a batch system's memory limit lives there), and where a process reads
#: which group it is in.
CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"


def available_bytes() -> int:
    """Memory available to a new allocation: the least of the machine's (Linux's MemAvailable, else the physical
    memory, else 8 GiB), what this process's limits leave (``ulimit -v``/``-d``: the address space or data it may
    still take) and what its control group leaves (a batch system's or a container's memory limit)."""
    return min(_machine_bytes(), _rlimit_bytes(), _cgroup_bytes())


def _machine_bytes() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 8 * 2**30


def _status_bytes(field: str) -> int:
    """A size of this process from /proc/self/status (``VmSize``, ``VmData``), 0 where unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _rlimit_bytes() -> int:
    """What ``ulimit -v`` (address space) and ``ulimit -d`` (data) leave this process; unlimited: a huge number."""
    try:
        import resource
    except ImportError:        # Windows
        return 2**63
    out = 2**63
    for limit, used in ((getattr(resource, "RLIMIT_AS", None), "VmSize"),
                        (getattr(resource, "RLIMIT_DATA", None), "VmData")):
        if limit is None:
            continue
        soft = resource.getrlimit(limit)[0]
        if soft != resource.RLIM_INFINITY and soft >= 0:
            out = min(out, max(0, soft - _status_bytes(used)))
    return out


def _cgroup_bytes() -> int:
    """What this process's control group and those above it leave (memory.max − memory.current in cgroup v2,
    memory.limit_in_bytes − memory.usage_in_bytes in v1); none: a huge number."""
    out = 2**63
    try:
        with open(PROC_CGROUP, encoding="ascii") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3 or (parts[0] != "0" and "memory" not in parts[1].split(",")):
            continue
        v2 = parts[0] == "0"
        base = CGROUP_ROOT if v2 else os.path.join(CGROUP_ROOT, "memory")
        rel = parts[2].strip("/")
        while True:
            folder = os.path.join(base, rel) if rel else base
            limit = _read_int(os.path.join(folder, "memory.max" if v2 else "memory.limit_in_bytes"))
            used = _read_int(os.path.join(folder, "memory.current" if v2 else "memory.usage_in_bytes"))
            if limit is not None and limit < 2**60:
                out = min(out, max(0, limit - (used or 0)))
            if not rel:
                break
            rel = os.path.dirname(rel)
    return out


def _read_int(path: str):
    """An integer file of the cgroup tree ("max": None), None where missing or unreadable."""
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return None if text == "max" else int(text) if text.isdigit() else None


def gib(n: float) -> str:
    """A byte count for a message: GiB, MiB or KiB."""
    if n >= 2**30:
        return f"{n / 2**30:,.1f} GiB"
    return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n / 2**10:,.0f} KiB"


def check(nbytes: float, path: str, what: str, fix: str) -> None:
    """Refuse (a :class:`ValidationError` on ``path``) when ``nbytes`` exceed :data:`SHARE` of what is available;
    the message says what would need it and ``fix``. Requests up to :data:`SMALL` pass unchecked."""
    if nbytes <= SMALL:
        return
    avail = available_bytes()
    if nbytes > SHARE * avail:
        raise ValidationError(path, f"{what} would need ~{gib(nbytes)}, more than half the memory this process may "
                                    f"still take ({gib(avail)}: the machine's, its ulimit's and its control group's, "
                                    f"the least): {fix}")


def trajectory_record_bytes(bodies: int, dipoles: int, members: int = 1) -> int:
    """Bytes of one record of a :class:`~pem_physics.engine.simulate.Trajectory`: per body the orientation,
    quaternion, ω (lab, body), L (lab, body), torque, energies, pivot, centre of mass, position, momenta
    (~60 doubles), per dipole its position and moment (6); times the ensemble's members."""
    return 8 * members * (60 * bodies + 6 * dipoles + 4)


#: Body-steps a second (one body advanced one step; an ensemble's members count as bodies) of the engines at their
#: fastest, for :func:`check_duration`: the compiled kernels take ~7 × 10⁶ a second for one pendulum
#: (docs/benchmarks.md) and more for ensembles in SIMD lanes; numpy's engine ~10³–10⁵ (a Python call per step, or
#: per step of a vectorised ensemble). Rounded up: an estimate from them is a lower bound of the wall time.
PACE = {"compiled": 1e7, "compiled ensemble": 4e7, "numpy": 1e6}
#: Longest estimated wall time (s) a run starts without being forced: a day.
MAX_RUN_SECONDS = 86400.0


def engine_pace(members: int = 1) -> tuple[str, float]:
    """(engine, body-steps a second) a run of ``members`` will likely get: the compiled kernels unless
    ``PEM_NUMBA=0`` turns them off (not importing numba to learn whether it is there: where neither numba nor a
    build is, the numpy engine runs, slower than the estimate — still a lower bound)."""
    if os.environ.get("PEM_NUMBA", "1") == "0":
        return "numpy", PACE["numpy"]
    kind = "compiled ensemble" if members > 1 else "compiled"
    return kind, PACE[kind]


def span(seconds: float) -> str:
    """A wall time for a message: ~N minutes, hours, days or years."""
    for unit, size in (("years", 365.25 * 86400), ("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if seconds >= size:
            return f"~{seconds / size:,.3g} {unit}"
    return f"~{seconds:.3g} s"


def check_duration(steps: float, bodies: int, members: int, path: str, fix: str, force: bool = False) -> None:
    """Refuse (a :class:`ValidationError` on ``path``) a run of ``steps`` steps of ``bodies`` moving bodies ×
    ``members`` ensemble members whose estimated wall time (:func:`engine_pace`) exceeds :data:`MAX_RUN_SECONDS`,
    saying the estimate, ``fix`` and that ``--force`` runs it anyway; ``force`` lets it pass."""
    work = float(steps) * max(int(bodies), 1) * max(int(members), 1)
    engine, pace = engine_pace(members)
    seconds = work / pace
    if force or not seconds > MAX_RUN_SECONDS:
        return
    who = f"{bodies:,} bod{'y' if bodies == 1 else 'ies'}" + (f" × {members:,} members" if members > 1 else "")
    raise ValidationError(path, f"{float(steps):.3g} steps of {who} would take {span(seconds)} (an estimate, at "
                                f"the {engine} engine's ~{pace:.0e} body-steps a second; runs of more than "
                                f"{MAX_RUN_SECONDS / 3600:g} hours are refused): {fix}; --force to run anyway")
