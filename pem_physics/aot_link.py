"""numba's JIT made to type and link, not optimise and emit, while a build made ahead of time compiles
(:mod:`pem_physics.aot`).

A build compiles each entry with numba's JIT (for the types of its result), then with pycc, which links the IR of
every function the entries call into one module, optimises it and emits it. Under the plain JIT each of those
functions (~300 for the table's kernel, numba's own overloads counted) is also a library of its own that links its
whole call tree, optimises it again and emits its machine code: the same code once per caller, level after level, and
none of it used by the build. Inside :func:`linked_once` a JIT library keeps its functions' own passes but only links
its callees, makes no Python wrappers and is never emitted: pycc's module is optimised and emitted once. Numba's
inlining copies a scope once, not once per block (:class:`SharedScopeCopy`). The whole cold build took 163 s before,
100 s after, on 2 cores (docs/benchmarks.md).

Nothing compiled inside may run: its entry points do not exist. So nothing of it is cached on disk, and on leaving,
every dispatcher that gained an overload inside forgets its overloads; the builds run it in processes of their own
(:func:`pem_physics.engine.backends.prebuild.build_part`). The kernels are the plain build's bit for bit — without
fastmath LLVM keeps every floating-point operation — and as fast (``tests/engine/test_aot.py`` compares a cold build
with the JIT kernels).
"""

from __future__ import annotations

import copy
from contextlib import contextmanager

_depth = [0]


@contextmanager
def linked_once():
    """While the block runs, numba's JIT libraries link their callees' IR but neither optimise nor emit code (see the
    module's docstring); re-entrant (an inner block is part of the outer). On a numba it was not written against
    (:data:`NUMBA_VERSIONS`), a plain block: the build is then as slow as before, never wrong."""
    if _depth[0]:
        _depth[0] += 1
        try:
            yield
        finally:
            _depth[0] -= 1
        return
    patch = _patch()
    if patch is None:
        yield
        return
    install, remove = patch
    _depth[0] = 1
    install()
    try:
        yield
    finally:
        _depth[0] = 0
        remove()


#: numba's versions (major.minor) whose internals :func:`linked_once` was written against and tested with (the pinned
#: one, requirements/*.txt); on any other the build runs numba's plain JIT: slower, never wrong.
NUMBA_VERSIONS = ("0.68",)


def _patch():
    """(install, remove) of the patch on numba's JIT, or None on a numba not in :data:`NUMBA_VERSIONS` or lacking
    what it replaces."""
    try:
        import numba

        if ".".join(numba.__version__.split(".")[:2]) not in NUMBA_VERSIONS:
            return None
        from numba.core import caching, codegen, dispatcher, inline_closurecall, lowering
        from numba.core.registry import cpu_target

        lib, gen, disp, cache = codegen.JITCodeLibrary, codegen.JITCPUCodegen, dispatcher.Dispatcher, caching.Cache
        low = lowering.Lower
        plain = (lib.get_pointer_to_function, gen.set_env, disp.add_overload, cache.save_overload,
                 low.create_cpython_wrapper, low.create_cfunc_wrapper)
        needs = ((lib, "_get_module_for_linking"), (lib, "_finalize_dynamic_globals"), (lib, "_raise_if_finalized"),
                 (disp, "_reset_overloads"))
        if ("finalize" in vars(lib) or inline_closurecall.copy is not copy
                or not all(hasattr(x, n) for x, n in needs)):
            return None
    except (ImportError, AttributeError):
        return None
    touched = []

    def finalize(self):
        # CPUCodeLibrary.finalize without its _optimize_final_module and _finalize_final_module's emission
        self._raise_if_finalized()
        seen = set()
        for library in self._linking_libraries:
            if library not in seen:
                seen.add(library)
                self._reload_init.update(library._reload_init)
                self._final_module.link_in(library._get_module_for_linking(), preserve=True)
        self._final_module.verify()
        self._finalize_dynamic_globals()
        self._pem_unemitted = True
        self._finalized = True

    def get_pointer_to_function(self, name):
        # a placeholder address for the wrapper numba makes of every overload: never called (see linked_once)
        return 1 if getattr(self, "_pem_unemitted", False) else plain[0](self, name)

    def set_env(self, env_name, env):
        if self._engine.get_global_value_address(env_name):  # 0: a library never emitted
            plain[1](self, env_name, env)

    def create_cpython_wrapper(self, release_gil=False):
        if not isinstance(self.library, lib):  # never called here; pycc's exports need theirs
            plain[4](self, release_gil)

    def create_cfunc_wrapper(self):
        if not isinstance(self.library, lib):
            plain[5](self)

    def add_overload(self, cres):
        touched.append(self)
        plain[2](self, cres)

    def install():
        cpu_target.target_context.refresh()  # numba's runtime compiled and emitted before: it runs
        lib.finalize, lib.get_pointer_to_function, gen.set_env = finalize, get_pointer_to_function, set_env
        disp.add_overload = add_overload
        low.create_cpython_wrapper, low.create_cfunc_wrapper = create_cpython_wrapper, create_cfunc_wrapper
        cache.save_overload = lambda self, sig, cres: None
        inline_closurecall.copy = SharedScopeCopy

    def remove():
        del lib.finalize  # CPUCodeLibrary's again
        (lib.get_pointer_to_function, gen.set_env, disp.add_overload, cache.save_overload, low.create_cpython_wrapper,
         low.create_cfunc_wrapper) = plain
        for d in set(touched):
            d._reset_overloads()
        touched.clear()
        inline_closurecall.copy = copy
        SharedScopeCopy.scope = SharedScopeCopy.memo = None

    return install, remove


class SharedScopeCopy:
    """``copy`` as numba's inlining (``inline="always"``) sees it: it deep-copies a callee's IR block by block, each
    block with a memo of its own, so each block's copy copied the scope they all share — every variable of the
    function: quadratic in the callee's size (~40 % of the gas kernels' build). Here the blocks of one scope share
    one memo, so the copied blocks share one copied scope, as the original blocks share theirs."""

    scope = memo = None

    @classmethod
    def deepcopy(cls, x, memo=None):
        from numba.core import ir

        if memo is None and isinstance(x, ir.Block):
            # a new copy: another scope, or a block copied before (one IR inlined at a second call site); the scope
            # is held, so its id is not reused while the memo lives
            if x.scope is not cls.scope or id(x) in cls.memo:
                cls.scope, cls.memo = x.scope, {}
            return copy.deepcopy(x, cls.memo)
        return copy.deepcopy(x, memo)
