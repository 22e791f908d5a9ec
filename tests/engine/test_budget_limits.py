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


@pytest.mark.parametrize("argv, says", [
    # the audit's case: 10¹² steps of a pendulum started without a word (days at the fastest engine's pace); at the
    # scene's dt (1 ms) the 10⁶ s are 10⁹ steps, minutes: the typed --dt makes it long, and is named
    (["run", "example:pendulum", "--dt", "1e-6", "--t-end", "1e6", "--record-interval", "1e6"],
     r"--dt 1e-06: 1e\+12 steps of 1 body would take ~[\d.]+ days \(an estimate.*\): raise --dt \(the scene's "
     r"step is 0\.001 s\) or shorten --t-end; --force"),
    # at the scene's own dt: --t-end (9·10¹¹ steps at 10⁷ a second: 1.04 days)
    (["run", "example:pendulum", "--t-end", "9e8", "--record-interval", "9e8"],
     r"--t-end 9e\+08: 9e\+11 steps of 1 body would take ~[\d.]+ days \(an estimate.*\): shorten --t-end or "
     r"raise --dt; --force"),
    # (over a day at every engine's pace: at the compiled ensembles' 4e7 body-steps/s, 1e7 steps of 262,144 members
    # are 18 hours — a map the test then ran, growing to 10 GB)
    (["basin", "example:three-magnet", "--grid", "512", "--t-end", "1e6"],
     r"--t-end: 1e\+09 steps of 1 body × 262,144 members would take ~[\d.]+ (days|years) \(an estimate.*\): "
     r"shorten --t-end or raise --dt, or lower --grid; --force"),
    # basin blamed --t-end for a typed --dt: 2·10¹¹ steps × 64 members are 3.7 days at 4·10⁷ a second, the scene's
    # 1 ms step 2·10⁴ steps (a fraction of a second)
    (["basin", "example:three-magnet", "--grid", "8", "--dt", "1e-10"],
     r"--dt: 2e\+11 steps of 1 body × 64 members would take ~[\d.]+ days \(an estimate.*\): raise --dt \(the "
     r"scene's step is 0\.001 s\) or shorten --t-end, or lower --grid; --force"),
    # a --dt larger than the scene's does not drive the cost (10¹¹ steps × 64: 1.85 days): --t-end does
    (["basin", "example:three-magnet", "--grid", "8", "--t-end", "2e8", "--dt", "2e-3"],
     r"--t-end: 1e\+11 steps of 1 body × 64 members would take ~[\d.]+ days \(an estimate.*\): shorten --t-end or "
     r"raise --dt, or lower --grid; --force"),
    (["sweep", "example:three-magnet", "--param", "friction=1e-4:1e-3:1000", "--dt", "1e-9"],
     r"--dt: 2e\+10 steps of 1 body × 1,000 members would take ~[\d.]+ days \(an estimate.*\): raise --dt \(the "
     r"scene's step is 0\.001 s\) or shorten --t-end, or sweep fewer points; --force"),
    (["sweep", "example:three-magnet", "--param", "friction=1e-4:1e-3:1000", "--t-end", "1e8"],
     r"--t-end: 1e\+11 steps of 1 body × 1,000 members would take ~[\d.]+ (days|years) \(an estimate"),
])
def test_a_run_that_would_take_days_is_refused_before_it_starts(tmp_path, capsys, argv, says):
    """Days whatever the engine: 10¹² body-steps at 10⁷ a second (the compiled kernels' best) are 10⁵ s; the map's
    and the sweep's 2.6·10¹⁴ and 10¹⁴ member-steps at 4·10⁷ a second (the compiled ensembles') are 75 and 29 days."""
    assert budget.PACE["compiled"] <= 1e7 and budget.PACE["compiled ensemble"] <= 4e7   # the cases' margins
    import re

    from pem_physics.cli import main

    out = tmp_path / "out"
    assert main([*argv, "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert re.search(says, err), err
    assert "--force to run anyway" in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()   # nothing written, no folder left behind


@pytest.mark.parametrize("argv", [
    ["run", "example:pendulum", "--t-end", "0.01"],
    ["sweep", "example:pendulum", "--param", "friction=0:1e-3:2", "--t-end", "0.01"],
])
def test_force_starts_a_run_over_the_bound(tmp_path, capsys, monkeypatch, argv):
    """With the bound lowered under a short run's estimate, the run is refused, and --force runs it."""
    from pem_physics.cli import main

    monkeypatch.setattr(budget, "MAX_RUN_SECONDS", 1e-9)
    assert main([*argv, "-o", str(tmp_path / "a"), "-q"]) == 2
    assert "--force to run anyway" in capsys.readouterr().err
    assert main([*argv, "-o", str(tmp_path / "b"), "-q", "--force"]) == 0
    assert (tmp_path / "b" / "pem-manifest.json").exists()


def test_a_smaller_dt_is_blamed_only_where_the_scenes_own_step_would_fit(monkeypatch):
    """A typed --dt below the scene's is named only when the same run at the scene's step passes the bound;
    otherwise the run's length is what makes it long, and --t-end is named first."""
    from pem_physics.analysis import duration

    monkeypatch.setenv("PEM_NUMBA", "0")
    fits = budget.MAX_RUN_SECONDS * budget.PACE["numpy"]            # body-steps a day at the numpy engine's pace
    with pytest.raises(ValidationError, match=r"^--dt: .*: raise --dt \(the scene's step is 0\.001 s\)"):
        duration.check_duration(fits * 10, 1, 1, 1e-4, 1e-3)        # at 1 ms: a tenth of the steps, within a day
    with pytest.raises(ValidationError, match=r"^--t-end: .*: shorten --t-end or raise --dt; --force"):
        duration.check_duration(fits * 20, 1, 1, 5e-4, 1e-3)        # at 1 ms still two days
    duration.check_duration(fits * 20, 1, 1, 5e-4, 1e-3, force=True)


def test_the_estimate_is_steps_times_bodies_times_members_over_the_engines_pace(monkeypatch):
    monkeypatch.setenv("PEM_NUMBA", "0")
    steps = budget.MAX_RUN_SECONDS * budget.PACE["numpy"] / (3 * 5)   # exactly at the bound: passes
    budget.check_duration(steps, 3, 5, "x", "fix")
    with pytest.raises(ValidationError, match=r"^x: .* 3 bodies × 5 members would take ~1\.01 days .*: fix; --force"):
        budget.check_duration(steps * 1.01, 3, 5, "x", "fix")
    budget.check_duration(steps * 1e6, 3, 5, "x", "fix", force=True)
