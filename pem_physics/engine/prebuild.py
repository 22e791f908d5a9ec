"""What ``pem build-engine`` builds: one call of each single-scene kernel entry (:data:`.aot.ENTRIES`), from
which :func:`.aot.build` takes the argument types to compile ahead of time.

A module of its own because the probes need scenes of every kind — a contact scene's needs the contact
model (:mod:`.contacts`), which itself runs on :mod:`.compiled`.
"""

from __future__ import annotations

from . import aot
from .compiled import Runner


def probes():
    """(entry, args) of a single-scene kernel call of each entry, for :func:`.aot.build` to take the types from."""
    from ..examples import build as example
    from .contacts import ContactModel
    from .integrators import make_integrator
    from .system import compile_system

    scene = example("three-magnet").checked()
    system = compile_system(scene)
    for method in ("splitting4", "pem-rk4"):
        integ = make_integrator(method, system, scene.settings.dt, system.U0[None], system.omega0[None])
        yield Runner(integ, 1e-6, 1000).member_call([0])
    scene = example("newtons-cradle").checked()
    system = compile_system(scene)
    integ = make_integrator("splitting4", system, scene.settings.dt, system.U0[None], system.omega0[None])
    integ.contacts = ContactModel(scene, system)
    yield Runner(integ, 1e-6, 1000).member_call([0])


def build(where=None, force: bool = False, log=print):
    """``pem build-engine``: the single-scene kernels built ahead of time (:mod:`.aot`); returns the module path."""
    return aot.build(probes(), where, force, log)
