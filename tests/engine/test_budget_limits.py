"""The memory a run may take is the least of the machine's, the process's ulimit and its control group's
(issue 46: a run the check accepted died in numpy's allocation under a batch system's 2 GiB limit)."""

from __future__ import annotations

import pytest

from pem_physics.engine import budget
from pem_physics.errors import ValidationError

GiB = 2**30


def test_ulimit_v_bounds_what_a_run_may_take(monkeypatch):
    resource = pytest.importorskip("resource")
    monkeypatch.setattr(budget, "_machine_bytes", lambda: 64 * GiB)
    monkeypatch.setattr(budget, "_cgroup_bytes", lambda: 2**63)
    real = resource.getrlimit
    monkeypatch.setattr(resource, "getrlimit", lambda r: (2 * GiB, resource.RLIM_INFINITY) if r == resource.RLIMIT_AS
                        else real(r))
    monkeypatch.setattr(budget, "_status_bytes", lambda field: GiB // 2 if field == "VmSize" else 0)
    assert budget.available_bytes() == 2 * GiB - GiB // 2
    with pytest.raises(ValidationError, match=r"--grid: .* ~1\.0 GiB, more than half the memory this process may "
                                              r"still take \(1\.5 GiB: the machine's, its ulimit's"):
        budget.check(1 * GiB, "--grid", "a map", "lower --grid")


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_a_control_groups_limit_bounds_what_a_run_may_take(tmp_path, monkeypatch, version):
    """The group's limit minus its use, the tightest up the tree (a job's limit set on a parent group)."""
    monkeypatch.setattr(budget, "_machine_bytes", lambda: 64 * GiB)
    monkeypatch.setattr(budget, "_rlimit_bytes", lambda: 2**63)
    proc = tmp_path / "cgroup"
    root = tmp_path / "fs"
    if version == "v2":
        proc.write_text("0::/batch/job7/step0\n")
        for rel, limit, used in (("", None, None), ("batch", "max", 5 * GiB), ("batch/job7", 2 * GiB, GiB // 4),
                                 ("batch/job7/step0", "max", GiB // 4)):
            d = root / rel
            d.mkdir(parents=True, exist_ok=True)
            if limit is not None:
                (d / "memory.max").write_text(f"{limit}\n")
                (d / "memory.current").write_text(f"{used}\n")
    else:
        proc.write_text("12:memory:/job7\n11:cpu,cpuacct:/job7\n")
        d = root / "memory" / "job7"
        d.mkdir(parents=True)
        (d / "memory.limit_in_bytes").write_text(f"{2 * GiB}\n")
        (d / "memory.usage_in_bytes").write_text(f"{GiB // 4}\n")
        (root / "memory" / "memory.limit_in_bytes").write_text(f"{2**63 - 4096}\n")   # the root: no limit
    monkeypatch.setattr(budget, "CGROUP_ROOT", str(root))
    monkeypatch.setattr(budget, "PROC_CGROUP", str(proc))
    assert budget.available_bytes() == 2 * GiB - GiB // 4


def test_a_small_request_is_granted_without_reading_the_limits(monkeypatch):
    """Up to budget.SMALL the limits are not read (a short run's set-up would otherwise spend a millisecond on the
    control group's files); above it they are, and bind."""
    read = []
    monkeypatch.setattr(budget, "available_bytes", lambda: read.append(1) or 0)
    budget.check(budget.SMALL, "--grid", "a map", "lower --grid")
    assert read == []
    with pytest.raises(ValidationError, match="--grid"):
        budget.check(budget.SMALL + 1, "--grid", "a map", "lower --grid")
    assert read == [1]
