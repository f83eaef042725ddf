"""Processes: every process that inherits the preload traces on its own into
its own file (GPUTRACE_OUTPUT with %p), with exactly its own calls; a child
given an environment without LD_PRELOAD runs untraced and unharmed."""
import os
import re

import pytest

from faultkit import (ZE_API, check_exact, compare, notes, printed, prog, trace_files,
                      valid_trace, wait_for)


def run_tree(tmp_path, args, **kw):
    r = compare(tmp_path, [prog("fault_proc")] + args,
                traced_env={"GPUTRACE_OUTPUT": str(tmp_path / "t-%p.json")}, **kw)
    return r, read_traces(tmp_path)


def read_traces(tmp_path):
    """Each trace file checked and counted (not held: some have millions of
    events), by the pid that wrote it; "host_pids" are the pids of its
    host spans."""
    traces = {}
    for f in trace_files(tmp_path):
        host_pids = set()

        def note(ev):
            if ev.get("cat") == ZE_API:
                host_pids.add(ev["pid"])
        t = valid_trace(f, keep_events=False, each=note)
        t["host_pids"] = host_pids
        traces.setdefault(t["gputrace"]["pid"], []).append((f, t))
    return traces


def per_pid(tmp_path):
    """calls each traced process reported, by pid."""
    out = {}
    for pid, key, n in notes(tmp_path / "traced.notes"):
        if key != "hot":
            out[pid] = out.get(pid, 0) + n
    return out


def story(made, traces):
    """What a failure needs: the calls each process noted, and every file
    with its trailer's pid, the pids of its host spans, its counts and its
    end (a missing or mixed-up file then tells which process it was)."""
    files = [f"{os.path.basename(f)}: pid {pid} host_pids {sorted(t['host_pids'])} "
             f"recorded {t['gputrace']['events_recorded']} lost {t['gputrace']['events_lost']} "
             f"complete {t['gputrace']['complete']} end {t['gputrace'].get('end')}"
             for pid, lst in sorted(traces.items()) for f, t in lst]
    return "\n".join([f"noted calls by pid: {made}"] + files)


def check_each(tmp_path, traces, expect_pids=None):
    made = per_pid(tmp_path)
    if expect_pids is not None:
        assert len(made) == expect_pids, story(made, traces)
    for pid, n in made.items():
        assert pid in traces, (pid, story(made, traces))
        assert len(traces[pid]) == 1, (pid, story(made, traces))
        (f, t), = traces[pid]
        assert t["gputrace"]["complete"] is True, (f, story(made, traces))
        check_exact(t, n)
        # every host span on its own process
        assert t["host_pids"] == {pid}, (pid, story(made, traces))
    return made


@pytest.mark.sanitize
def test_fork_in_multithreaded_program(tmp_path):
    r, traces = run_tree(tmp_path, ["fork-mt", "300"])
    assert r.traced.returncode == 0
    assert printed(r.traced.stdout, "child") == 900
    made = per_pid(tmp_path)
    assert len(made) == 4  # parent + 3 children
    hot = [n for pid, key, n in notes(tmp_path / "traced.notes") if key == "hot"]
    parent = [p for p in made if made[p] == 1002][0]
    for pid, n in made.items():
        (f, t), = traces[pid]
        # the parent's hot threads may overflow their rings: counted as lost
        check_exact(t, n + (hot[0] if pid == parent else 0), lost=None if pid == parent else 0)
        assert t["gputrace"]["complete"] is True


@pytest.mark.sanitize
def test_threads_forking_at_once(tmp_path):
    """4 threads fork 5 children each at the same time: every fork waits for
    the drain on its own, and every child writes its own complete trace."""
    r, traces = run_tree(tmp_path, ["fork-race", "200"])
    assert r.traced.returncode == 0
    assert printed(r.traced.stdout, "child") == 20 * 200
    check_each(tmp_path, traces, expect_pids=21)


def test_fork_exec_chain(tmp_path):
    r, traces = run_tree(tmp_path, ["chain", "3", "200"])
    assert r.traced.returncode == 0
    for level in range(4):
        assert printed(r.traced.stdout, f"level{level}") == 202
    check_each(tmp_path, traces, expect_pids=4)


def assert_compact(path):
    """No bigger than its content needs: the whitespace the kill-safe layout
    reserves ahead of the events (64 KiB to 1 MiB) is cut off, as at exit."""
    data = open(path, "rb").read()
    assert re.search(rb" {4097,}", data) is None, (path, len(data))


@pytest.mark.parametrize("n", [150, 5000])
def test_exec_chain_same_pid(tmp_path, n):
    """exec keeps the pid: each image closes its file (end "exec") and the
    next writes a new one beside it. Each file is finished as at exit: the
    replaced images' were ~93% blank (the reserve ahead of the events)."""
    r = compare(tmp_path, [prog("fault_proc"), "exec-self", "2", str(n)],
                traced_env={"GPUTRACE_OUTPUT": str(tmp_path / "t-%p.json")})
    assert r.traced.returncode == 0
    files = trace_files(tmp_path)
    assert len(files) == 3, files
    # t-PID.json, t-PID.1.json, t-PID.2.json: in the order of the images
    files.sort(key=lambda f: (len(f), f))
    ends = [valid_trace(f)["gputrace"]["end"] for f in files]
    assert ends == ["exec", "exec", "exit"]
    for f in files:
        t = valid_trace(f)
        assert t["gputrace"]["complete"] is True
        check_exact(t, n + 2)
        assert_compact(f)


def test_exec_that_fails_goes_on_in_the_same_file(tmp_path):
    """The exec's cycles compact the file; when the exec fails the program
    goes on, and the same file takes the rest: one trace, every call."""
    r = compare(tmp_path, [prog("fault_proc"), "exec-fail", "300"],
                traced_env={"GPUTRACE_OUTPUT": str(tmp_path / "t-%p.json")})
    assert r.traced.returncode == 0
    files = trace_files(tmp_path)
    assert len(files) == 1, files
    t = valid_trace(files[0])
    assert (t["gputrace"]["complete"], t["gputrace"]["end"]) == (True, "exit")
    check_exact(t, printed(r.traced.stdout))
    assert_compact(files[0])


@pytest.mark.parametrize("how", ["spawn", "vfork", "system"])
def test_spawned_child_traces_on_its_own(tmp_path, how):
    r, traces = run_tree(tmp_path, [how, "400"])
    assert r.traced.returncode == 0
    assert printed(r.traced.stdout, "leaf") == 402
    check_each(tmp_path, traces, expect_pids=2)
    if how == "system":
        # the shell between them leaves at most an empty, valid trace
        for pid, lst in traces.items():
            if pid not in per_pid(tmp_path):
                for f, t in lst:
                    assert t["gputrace"]["events_recorded"] == 0


def test_exec_with_environment_without_preload(tmp_path):
    r, traces = run_tree(tmp_path, ["exec-env", "400"])
    assert r.traced.returncode == 0
    assert printed(r.traced.stdout, "leaf") == 402
    made = per_pid(tmp_path)
    assert len(made) == 2
    # only the parent traced; the child honoured its environment
    assert len(traces) == 1
    (pid,) = traces
    (f, t), = traces[pid]
    check_exact(t, made[pid])


def wait_for_daemons(tmp_path, processes):
    """Until the processes that noted calls (a daemon outlives the run) are that many,
    and each one's trace is complete: the traces then."""
    def done():
        # a daemon notes its calls before its exit writes its trace
        complete = {pid for pid, ts in read_traces(tmp_path).items()
                    if any(t["gputrace"]["complete"] for f, t in ts)}
        made = per_pid(tmp_path)
        return len(made) >= processes and set(made) <= complete
    assert wait_for(done)
    return read_traces(tmp_path)


def test_daemon_double_fork(tmp_path):
    r, traces = run_tree(tmp_path, ["daemon", "400"])
    assert r.traced.returncode == 0
    traces = wait_for_daemons(tmp_path, 2)
    made = per_pid(tmp_path)
    assert sorted(made.values()) == [402, 1002]
    for pid, n in made.items():
        (f, t), = traces[pid]
        check_exact(t, n)


@pytest.mark.sanitize
def test_daemon_call_before_any_traced_call(tmp_path):
    """daemon() forks inside libc, in a process that has recorded nothing (no fork
    handler of ours was in yet): the daemon traces on its own, into its own file."""
    r, traces = run_tree(tmp_path, ["daemon-call", "300"])
    assert r.traced.returncode == 0
    traces = wait_for_daemons(tmp_path, 1)
    made = per_pid(tmp_path)
    assert list(made.values()) == [302]
    assert set(traces) == set(made)  # the parent, which recorded nothing, made no file
    check_each(tmp_path, traces, expect_pids=1)


@pytest.mark.sanitize
def test_fork_child_handler_registered_first_is_traced(tmp_path):
    """The program's fork child handler, registered before any traced call, makes calls:
    ours ran first (registered before the program's, as it registers), so they are the
    child's first events, in the child's own trace."""
    r, traces = run_tree(tmp_path, ["atfork-child", "250"])
    assert r.traced.returncode == 0
    made = check_each(tmp_path, traces, expect_pids=2)
    assert sorted(made.values()) == [250, 1002]
