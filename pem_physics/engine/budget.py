"""Memory a run will need, checked before anything is allocated.

A run that would ask for more memory than the machine has is refused with the number and how to lower it,
instead of being killed by the operating system half-way (records of a long run, a gas of 10⁹ particles, a basin
map of 10¹⁰ points). The estimates count the arrays the run keeps (records, particle rows, map cells), not
Python's overheads: they are lower bounds, and the limit leaves half the available memory to everything else.
"""

from __future__ import annotations

import os

from ..errors import ValidationError

#: Share of the available memory one run's arrays may take.
SHARE = 0.5


def available_bytes() -> int:
    """Memory available to a new allocation: Linux's MemAvailable, else the physical memory, else 8 GiB."""
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


def gib(n: float) -> str:
    """A byte count for a message: GiB, MiB or KiB."""
    if n >= 2**30:
        return f"{n / 2**30:,.1f} GiB"
    return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n / 2**10:,.0f} KiB"


def check(nbytes: float, path: str, what: str, fix: str) -> None:
    """Refuse (a :class:`ValidationError` on ``path``) when ``nbytes`` exceed :data:`SHARE` of what is available;
    the message says what would need it and ``fix``."""
    avail = available_bytes()
    if nbytes > SHARE * avail:
        raise ValidationError(path, f"{what} would need ~{gib(nbytes)}, more than half the memory this machine has "
                                    f"available ({gib(avail)}): {fix}")


def trajectory_record_bytes(bodies: int, dipoles: int, members: int = 1) -> int:
    """Bytes of one record of a :class:`~pem_physics.engine.simulate.Trajectory`: per body the orientation,
    quaternion, ω (lab, body), L (lab, body), torque, energies, pivot, centre of mass, position, momenta
    (~60 doubles), per dipole its position and moment (6); times the ensemble's members."""
    return 8 * members * (60 * bodies + 6 * dipoles + 4)
