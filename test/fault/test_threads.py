"""Threads: many short ones, ones that die while the drain thread writes
their rings, ones blocked in the device or cancelled inside a traced call."""
import pytest

from faultkit import check_exact, compare, notes, printed, prog


@pytest.mark.sanitize
def test_ten_thousand_short_threads(tmp_path):
    r = compare(tmp_path, [prog("fault_threads"), "many", "10000", "100", "2"], timeout=120)
    assert r.traced.returncode == 0
    assert printed(r.traced.stdout, "threads") == 20000
    t = r.trace
    check_exact(t, printed(r.traced.stdout))
    # every thread that traced is in the trailer's thread list
    assert len(t["gputrace"]["threads"]) >= 10001


def test_threads_exit_while_drain_runs(tmp_path):
    r = compare(tmp_path, [prog("fault_threads"), "churn", "200", "20", "3000"],
                env={"GPUTRACE_FLUSH_MS": "10", "GPUTRACE_BUFFER_KB": "1024"})
    assert r.traced.returncode == 0
    check_exact(r.trace, printed(r.traced.stdout), lost=None)


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


def test_cancel_inside_traced_call(tmp_path):
    r = compare(tmp_path, [prog("fault_threads"), "cancel"], timeout=30)
    assert r.traced.returncode == 0
    assert b"waiter cancelled, cleanup calls 1" in r.traced.stdout
    # the cancelled call never returned. The cleanup handler runs while the
    # unwound wrapper's guard is still set (nothing runs our code on a forced
    # unwind in C): its call is recorded, or counted lost as "reentrant",
    # never dropped; main's later calls are all recorded
    t = r.trace
    check_exact(t, printed(r.traced.stdout) + 1, lost=None)
    assert t["gputrace"]["events_lost"] == t["gputrace"]["lost_by_reason"].get("reentrant", 0) <= 1
