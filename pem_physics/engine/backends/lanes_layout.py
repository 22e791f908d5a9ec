"""The lanes kernels' block size, apart from :mod:`.lanes` and :mod:`.lanes_kernels` so that both read it and neither
imports the other at its top (the kernels' module imports numba; :mod:`.lanes` imports it only where no build is)."""

#: Members per block: a compile-time constant of the kernels (a multiple of any vector width).
#: The ensemble is padded to whole blocks with copies of its first member.
BLOCK = 32
