"""--lossless: a thread whose ring is full waits for the drain thread instead
of losing the event, each stall bounded; the waits are counted. Without it,
what a full ring drops is counted exactly. A lossless thread never hangs
where no drain will come (the process ends, a pipe nobody reads, a paused
capture, a fork)."""
import json
import os

import pytest

from faultkit import (check_exact, compare, printed, prog, run_with_slow_reader, trace_files,
                      valid_trace)

SPAN = b'"name":"zeDriverGetApiVersion"'


def trailer(path):
    """The trace's "gputrace" trailer, read from its end (a trace of millions
    of events is not parsed whole: see count_spans)."""
    with open(path, "rb") as fh:
        fh.seek(max(0, os.path.getsize(path) - (1 << 16)))
        tail = fh.read()
    assert tail.rstrip().endswith(b"}"), "the trace does not end with its trailer"
    return json.loads(b"{" + tail[tail.rindex(b'"gputrace":'):])["gputrace"]


def count_spans(path):
    """zeDriverGetApiVersion events in the file: one per line, counted as bytes."""
    n, prev = 0, b""
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            n += (prev[-len(SPAN) + 1:] + chunk).count(SPAN)
            prev = chunk
    return n


def test_lossless_records_every_call_of_a_thread_calling_flat_out(tmp_path):
    """2 M calls as fast as the thread can make them into a 16 KiB ring (256
    slots: without --lossless nearly all would be lost)."""
    summary = tmp_path / "s.json"
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "1", "2000000"],
                traced_env={"GPUTRACE_LOSSLESS": "1", "GPUTRACE_BUFFER_KB": "16", "GPUTRACE_OVERFLOW_MB": "0",
                            "GPUTRACE_SUMMARY_JSON": str(summary)}, timeout=300)
    assert r.traced.returncode == 0
    made = printed(r.traced.stdout)
    assert made >= 2000000
    meta = trailer(r.trace_path)
    assert meta["complete"] is True
    assert (meta["events_recorded"], meta["events_lost"]) == (made, 0), meta["lost_by_reason"]
    assert count_spans(r.trace_path) == made - 2  # all but zeInit and zeDriverGet
    assert meta["lossless"]["waits"] > 0 and meta["lossless"]["wait_ns"] > 0
    assert meta["lossless"]["timeout_ms"] == 1000
    s = json.loads(summary.read_text())
    assert s["lost"]["total"] == 0
    assert s["lossless"] == {"waits": meta["lossless"]["waits"],
                             "wait_ns": meta["lossless"]["wait_ns"]}


@pytest.mark.sanitize
def test_lossless_small_ring_exact_trace_and_summary(tmp_path):
    """The same, smaller, parsed whole: every call a span, none lost, and the
    summary on stderr says how often the thread waited."""
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "1", "100000"],
                traced_env={"GPUTRACE_LOSSLESS": "on", "GPUTRACE_BUFFER_KB": "4", "GPUTRACE_OVERFLOW_MB": "0",
                            "GPUTRACE_SUMMARY": "1"}, timeout=300)
    assert r.traced.returncode == 0
    t = r.counted
    check_exact(t, printed(r.traced.stdout), lost=0)
    waits = t["gputrace"]["lossless"]["waits"]
    assert waits > 0
    err = r.traced.stderr.decode()
    assert "  lost events: 0\n" in err
    assert f"  waits for a full buffer (--lossless): {waits}, " in err


def test_without_lossless_lost_is_offered_minus_recorded(tmp_path):
    summary = tmp_path / "s.json"
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "1", "300000"],
                traced_env={"GPUTRACE_BUFFER_KB": "16", "GPUTRACE_OVERFLOW_MB": "0", "GPUTRACE_SUMMARY_JSON": str(summary)})
    assert r.traced.returncode == 0
    made = printed(r.traced.stdout)
    meta = trailer(r.trace_path)
    assert meta["events_lost"] > 0
    assert meta["events_lost"] == made - meta["events_recorded"]
    assert meta["lost_by_reason"] == {"ring_full": meta["events_lost"]}
    assert count_spans(r.trace_path) == meta["events_recorded"] - 2  # zeInit, zeDriverGet
    assert "lossless" not in meta
    s = json.loads(summary.read_text())
    assert s["lost"]["total"] == meta["events_lost"] and s["lossless"] is None


def test_lossless_wait_is_bounded_when_the_drain_is_stuck(tmp_path):
    """The trace goes to a pipe nobody reads until the program's loop is
    over: the drain thread is stuck in a write. A lossless thread waits at
    most GPUTRACE_LOSSLESS seconds for it, once, then drops (counted) until
    the drain moves again; the program is never hung."""
    p, out, err, n, got = run_with_slow_reader(
        tmp_path, {"GPUTRACE_FLUSH_MS": "10", "GPUTRACE_BUFFER_KB": "64", "GPUTRACE_OVERFLOW_MB": "0",
                   "GPUTRACE_LOSSLESS": "0.2"}, [prog("fault_threads"), "slow", "300000"])
    assert p.returncode == 0, err
    # one stall of 0.2 s at most, not one per call (nor a hang)
    assert n["worst_ns"] < 1_000_000_000, n
    assert n["loop_ns"] < 10_000_000_000, n
    meta = json.loads(got)["gputrace"]
    assert meta["complete"] is True
    assert meta["events_recorded"] + meta["events_lost"] == printed(out)
    assert meta["events_lost"] > 0
    assert meta["lossless"]["waits"] >= 1
    assert meta["lossless"]["wait_ns"] >= 200_000_000
    # GPUTRACE_SUMMARY=0: the losses' one line, whose advice does not offer
    # GPUTRACE_LOSSLESS=1 to a process that had it on (it did)
    (line,) = [l for l in err.decode().splitlines() if "events lost" in l]
    assert line.endswith("(now 64 KiB per thread)"), line


def test_lossless_paused_capture_records_nothing_and_never_waits(tmp_path):
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "1", "300000"],
                traced_env={"GPUTRACE_LOSSLESS": "1", "GPUTRACE_BUFFER_KB": "4", "GPUTRACE_OVERFLOW_MB": "0",
                            "GPUTRACE_START": "paused"}, timeout=60)
    assert r.traced.returncode == 0
    assert not r.trace_path.exists()


def test_lossless_flight_recorder_keeps_its_window_without_loss(tmp_path):
    """In flight recorder mode the drain moves records into the window's
    memory: a lossless thread waits for that, and the window (which keeps
    the newest events by design) is complete up to its size."""
    summary = tmp_path / "s.json"
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "1", "300000"],
                traced_env={"GPUTRACE_LOSSLESS": "1", "GPUTRACE_BUFFER_KB": "4", "GPUTRACE_OVERFLOW_MB": "0",
                            "GPUTRACE_FLIGHT_RECORDER": "64MB",
                            "GPUTRACE_SUMMARY_JSON": str(summary)}, timeout=120)
    assert r.traced.returncode == 0
    s = json.loads(summary.read_text())
    assert s["lost"]["total"] == 0, s["lost"]
    assert s["lossless"]["waits"] > 0


def test_lossless_fork_children_lose_nothing(tmp_path):
    """Threads call flat out while the process forks children that call at
    once: the parent's waits live through the forks (which hold the drain),
    each child's drain starts with its first call."""
    r = compare(tmp_path, [prog("fault_proc"), "fork-mt", "3000"],
                traced_env={"GPUTRACE_OUTPUT": str(tmp_path / "t-%p.json"),
                            "GPUTRACE_LOSSLESS": "1", "GPUTRACE_BUFFER_KB": "4", "GPUTRACE_OVERFLOW_MB": "0"}, timeout=120)
    assert r.traced.returncode == 0
    files = trace_files(tmp_path)
    assert len(files) == 4
    for f in files:
        meta = valid_trace(f, keep_events=False)["gputrace"]
        assert meta["complete"] is True
        assert meta["events_lost"] == 0, (f, meta["lost_by_reason"])
