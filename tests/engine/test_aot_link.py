"""The build's JIT that types and links without emitting (pem_physics.aot_link): what leaves it runs right,
nothing of it is cached, and numba's inlining copies keep each call site's own variables."""

import copy

import numpy as np
import pytest

from pem_physics.engine.backends import compiled

pytestmark = pytest.mark.skipif(not compiled.available(), reason="numba is not installed")


def _functions():
    """A fresh caller, its callee and an inlined helper at two call sites (new dispatchers: nothing compiled yet)."""
    import numba

    @numba.njit(inline="always")
    def scaled(x, k):
        y = x * k
        return y + 1.0

    @numba.njit
    def callee(a):
        return np.sum(a * a) + scaled(a[0], 2.0) - scaled(a[1], 3.0)

    @numba.njit
    def caller(a):
        return callee(a) * 2.0

    return caller, callee


def _reference(a):
    return 2.0 * (float(np.sum(a * a)) + (a[0] * 2.0 + 1.0) - (a[1] * 3.0 + 1.0))


def test_what_was_typed_inside_runs_right_after_it():
    import numba
    from numba.core import codegen

    from pem_physics.aot_link import linked_once

    caller, callee = _functions()
    a = np.array([0.5, -1.25, 3.0])
    sig = (numba.typeof(a),)
    with linked_once():
        caller.compile(sig)   # typed and linked only: its entry point does not exist
        assert caller.overloads and callee.overloads
        assert caller.overloads[sig].library._finalized
        assert "finalize" in vars(codegen.JITCodeLibrary)
    # left: numba's own methods again, the overloads forgotten, so a call compiles them for real
    assert "finalize" not in vars(codegen.JITCodeLibrary)
    assert not caller.overloads and not callee.overloads
    assert caller(a) == _reference(a)
    assert callee(a) == _reference(a) / 2.0


def test_nothing_typed_inside_is_cached():
    import numba
    from numba.core import caching

    from pem_physics.aot_link import linked_once

    saved = []
    plain = caching.Cache.save_overload
    caching.Cache.save_overload = lambda self, sig, cres: saved.append(sig)
    try:
        caller, _ = _functions()
        with linked_once():
            caller.compile((numba.typeof(np.zeros(3)),))
        assert saved == []
    finally:
        caching.Cache.save_overload = plain


def test_a_nested_block_is_part_of_the_outer():
    from numba.core import codegen

    from pem_physics.aot_link import linked_once

    with linked_once():
        with linked_once():
            pass
        assert "finalize" in vars(codegen.JITCodeLibrary)  # still patched: the outer block goes on
    assert "finalize" not in vars(codegen.JITCodeLibrary)


def test_another_numba_gets_its_plain_jit(monkeypatch):
    import numba
    from numba.core import codegen

    from pem_physics import aot_link

    monkeypatch.setattr(numba, "__version__", "0.99.0")
    with aot_link.linked_once():
        assert "finalize" not in vars(codegen.JITCodeLibrary)   # nothing patched: internals it was not written for
    monkeypatch.undo()
    with aot_link.linked_once():
        assert "finalize" in vars(codegen.JITCodeLibrary)


def _blocks(func):
    from numba.core import compiler

    return compiler.run_frontend(func).blocks


def test_blocks_of_one_scope_share_one_copied_scope_and_each_copy_is_new():
    from pem_physics.aot_link import SharedScopeCopy

    def f(a, b):
        s = 0.0
        for i in range(3):
            if a > b + i:
                s += a
            else:
                s -= b
        return s

    blocks = _blocks(f)
    assert len(blocks) > 2
    first = {label: SharedScopeCopy.deepcopy(b) for label, b in blocks.items()}
    scopes = {id(b.scope) for b in first.values()}
    assert len(scopes) == 1 and id(next(iter(blocks.values())).scope) not in scopes
    # numba's own copy (a memo per block) gives as many scopes as blocks: what made it quadratic (the copies kept
    # alive while their ids are compared: a freed object's id is reused)
    plain = [copy.deepcopy(b) for b in blocks.values()]
    assert len({id(b.scope) for b in plain}) == len(blocks)
    # the same IR copied again (inlined at a second call site): new objects, not the first copy's
    second = {label: SharedScopeCopy.deepcopy(b) for label, b in blocks.items()}
    for label in blocks:
        assert second[label] is not first[label] and second[label].scope is not first[label].scope
        assert [str(s) for s in second[label].body] == [str(s) for s in blocks[label].body]
    # anything but a block: copy.deepcopy as ever
    x = {"a": [1, 2]}
    y = SharedScopeCopy.deepcopy(x)
    assert y == x and y["a"] is not x["a"]
