"""Bodies that do not act on each other, stepped in threads: a single scene split into groups of bodies.

A scene whose moving bodies exchange nothing — no contacts, dipoles on at most one of them (fixed magnets, fields
and gravity act on each body alone) — is as many independent problems as it has bodies. The compiled kernels
release the GIL while they step (:mod:`.kernels`' entries ``nogil``; the builds made ahead of time too:
:mod:`pem_physics.aot`), so :func:`plan` splits such a scene into one contiguous group of bodies per core and the driver
steps each group in a thread of its own (:func:`run`). Every step of a body reads only that body's state, so each body's
numbers are the ones a run of the whole scene gives, bit for bit (tests/engine/test_groups.py); the records are then
taken over the whole scene as before.

Not split: ensembles (their members already run in parallel), contact scenes, scenes whose drivers' work is summed
over all bodies at every step (splitting methods with driven magnets, moving pivots or a rotating field), and runs
too short to repay a thread (:data:`MIN_BODY_STEPS`). ``PEM_THREADS`` sets how many threads a run may use (1: none).
"""

from __future__ import annotations

import os
import threading
from dataclasses import replace

import numpy as np

from ...errors import ValidationError

#: Body-steps (steps × moving bodies) below which a run keeps one thread: setting up a group (its system, integrator
#: and runner) costs ~1 ms of Python, ~10⁴ body-steps.
MIN_BODY_STEPS = 200_000


def threads() -> int:
    """Threads a run may use: ``PEM_THREADS``, else the cores this process may run on."""
    env = os.environ.get("PEM_THREADS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValidationError("PEM_THREADS", f"PEM_THREADS = {env!r} is not a whole number ≥ 1; set it to how "
                                                 "many threads a run may use (1: one), or unset it")
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def plan(system, integ, runner, steps: int) -> list | None:
    """The groups to step apart — index arrays (into the moving bodies) of contiguous, even runs of bodies, in
    order — or None to step the scene as one."""
    B = len(system.names)
    n = min(threads(), B)
    if n < 2 or steps * B < MIN_BODY_STEPS:
        return None
    if integ.L.shape[0] != 1 or getattr(integ, "contacts", None) is not None or getattr(runner, "power", False):
        return None
    if system.bodies_coupled:  # dipoles on two bodies act on each other
        return None
    return np.array_split(np.arange(B), n)


def sub_scene(scene, system, bodies):
    """``scene`` with only the moving bodies ``bodies`` (indices into ``system``'s) — its fixed bodies (magnets)
    all kept, the scene's order kept."""
    keep = set(system.scene_index[bodies].tolist())
    return replace(scene, bodies=[b for i, b in enumerate(scene.bodies) if i in keep or not b.moving])


def run(jobs: list, progress, stop, poll: float) -> list:
    """Run each ``job(progress, stop)`` in a thread of its own and return their results in order.

    The callbacks stay on the calling thread (Blender's progress bar and Esc, the command line's Ctrl-C): it alone
    calls ``progress`` (with the slowest group's fraction) and ``stop``, every ``poll`` s; a job's ``stop()`` turns
    true once the caller's has, or once another job failed — whose error is then raised here (the first group's,
    in order, if several failed)."""
    n = len(jobs)
    done = [0.0] * n
    results: list = [None] * n
    errors: list = [None] * n
    halt = threading.Event()

    def work(g):
        def report(fraction):
            done[g] = fraction

        try:
            results[g] = jobs[g](report, halt.is_set)
        except BaseException as err:  # noqa: BLE001 — raised again on the calling thread
            errors[g] = err
            halt.set()

    workers = [threading.Thread(target=work, args=(g,), name=f"pem-group-{g}", daemon=True) for g in range(n)]
    try:
        for t in workers:
            t.start()
        for t in workers:
            while t.is_alive():
                t.join(poll)
                if stop is not None and not halt.is_set() and stop():
                    halt.set()
                if progress is not None:
                    progress(min(done))
    finally:
        halt.set()  # an exception here (KeyboardInterrupt): the workers stop at their next call
        for t in workers:
            t.join()
    for err in errors:
        if err is not None:
            raise err
    if progress is not None:  # at least once, however short the run
        progress(min(done))
    return results
