"""A traced program run under Valgrind: people debug GPU programs with it, and the
library starts its clock inside Valgrind's CPU, which is not the host's."""
import shutil

import pytest

from conftest import BUILD, events, need, run, sim_env


def test_traced_program_runs_under_valgrind(tmp_path):
    """Valgrind's CPU says Intel with RDTSCP whatever the host has, and runs RDTSCP only
    where the host has it: on an AMD KVM guest without it the library's first TSC read
    killed the program with SIGILL (the clock read RDTSCP where CPUID offered it). Under
    Valgrind the clock reads LFENCE + RDTSC: the program ends with its own status, and
    its appends and kernels are all in the trace, each kernel after the execute that ran it
    began."""
    valgrind = shutil.which("valgrind")
    if not valgrind:
        pytest.skip("valgrind is not installed (make deps installs it)")
    bench = BUILD / "test" / "bench" / "bench_ze"
    need(bench)
    # --tool=none: Valgrind's CPU without memcheck's cost; what it runs is the same
    r = run([valgrind, "-q", "--tool=none", bench, "launch", "regular", 20, 1, 0],
            tmp_path=tmp_path, env=sim_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    trace = r.trace
    meta = trace["gputrace"]
    assert meta["complete"] and meta["events_lost"] == 0, meta
    def by_corr(name):
        return {e["args"]["correlation"]: e for e in events(trace, ph="X", name=name)}
    appends = by_corr("zeCommandListAppendLaunchKernel")
    executes = by_corr("zeCommandQueueExecuteCommandLists")
    kernels = events(trace, ph="X", cat="kernel", name="bench_kernel")
    assert len(appends) == len(executes) == len(kernels) == 21  # a first round warms up
    # a regular list's kernel: correlation its execute, correlation2 its append
    assert sorted(k["args"]["correlation2"] for k in kernels) == sorted(appends)
    for k in kernels:
        assert k["ts"] >= executes[k["args"]["correlation"]]["ts"], k
