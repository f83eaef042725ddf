"""Threads: many short ones, ones that die while the drain thread writes
their rings, ones blocked in the device or cancelled inside a traced call."""
import resource

import pytest

from conftest import SANITIZE, default_signals, load_trace
from faultkit import check_exact, compare, notes, printed, prog, spans, valid_trace


@pytest.mark.sanitize
def test_ten_thousand_short_threads(tmp_path):
    r = compare(tmp_path, [prog("fault_threads"), "many", "10000", "100", "2"], timeout=120)
    assert r.traced.returncode == 0
    assert printed(r.traced.stdout, "threads") == 20000
    t = r.trace
    check_exact(t, printed(r.traced.stdout))
    # every thread that traced is in the trailer's thread list
    assert len(t["gputrace"]["threads"]) >= 10001
    # counted apart from the list (a checkpoint never walks the exited threads)
    assert t["gputrace"]["threads_total"] == len(t["gputrace"]["threads"])


def address_space_4g():
    default_signals()
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@pytest.mark.skipif(bool(SANITIZE), reason="sanitizer runtimes reserve terabytes of address space")
def test_last_trailer_is_json_when_the_exit_finds_no_memory(tmp_path):
    # 8000 threads' list (~280 KB) is asked for at an exit that finds the address space
    # used up: it was written with the numbers that found no room left out (not JSON)
    # (small rings: 4 MiB ones of threads exited faster than the drain frees them take
    # the address space first, and their threads' events are lost, no_thread_ring)
    r = compare(tmp_path, [prog("fault_threads"), "exhaust", "8000"],
                env={"GPUTRACE_BUFFER_KB": "64"}, preexec_fn=address_space_4g, timeout=120)
    assert r.traced.returncode == 0
    t = load_trace(r.trace_path)
    meta = t["gputrace"]
    assert meta["complete"] is True and meta["end"] == "exit"
    # the list cut, and said so; the counts whole
    assert meta["threads_listed"] == len(meta["threads"]) < meta["threads_total"] == 8001
    assert sum(meta["lost_by_reason"].values()) == meta["events_lost"]
    check_exact(t, printed(r.traced.stdout))


def test_threads_exit_while_drain_runs(tmp_path):
    r = compare(tmp_path, [prog("fault_threads"), "churn", "200", "20", "3000"],
                env={"GPUTRACE_FLUSH_MS": "10", "GPUTRACE_BUFFER_KB": "1024"})
    assert r.traced.returncode == 0
    check_exact(valid_trace(r.trace_path, keep_events=False), printed(r.traced.stdout), lost=None)


@pytest.mark.parametrize("action", ["device-wait", "queue-wait"])
def test_thread_blocked_in_device_wait_at_exit(tmp_path, action):
    r = compare(tmp_path, [prog("fault_threads"), action], timeout=30)
    assert r.traced.returncode == 0
    t = r.trace
    assert t["gputrace"]["complete"] is True
    # the blocked call never returned: it is no event; all the others are
    host = [e for e in t["traceEvents"] if e.get("cat") == "ze_api"]
    assert len(host) == printed(r.traced.stdout)
    meta = t["gputrace"]
    produced = printed(r.traced.stdout)
    if action == "queue-wait":
        # the kernel waiting on an event that never comes did not run: the
        # backend may report it lost, never invent a time for it
        kernels = [e for e in t["traceEvents"] if e.get("cat") == "kernel"]
        assert not kernels
        produced += meta["events_lost"]
    assert meta["events_recorded"] + meta["events_lost"] == produced


@pytest.mark.sanitize
def test_cancel_inside_traced_call(tmp_path):
    r = compare(tmp_path, [prog("fault_threads"), "cancel"], timeout=30)
    assert r.traced.returncode == 0
    assert b"waiter cancelled, cleanup calls 1" in r.traced.stdout
    # the cancelled call never returned: its wrapper's cleanup (run by the
    # forced unwind) records it, marked cancelled, and releases the guard,
    # so the cleanup handler's call is recorded too; nothing is lost
    t = r.trace
    check_exact(t, printed(r.traced.stdout) + 2, lost=0)
    waits = spans(t, name="zeEventHostSynchronize")
    cancelled = [e for e in waits if e["args"].get("cancelled") == 1]
    assert len(cancelled) == 1 and "result" not in cancelled[0]["args"], waits
    (wait,) = cancelled
    after = [e for e in spans(t) if e["tid"] == wait["tid"] and e["ts"] >= wait["ts"] + wait["dur"]]
    assert [e["name"] for e in after] == ["zeDriverGetApiVersion"]