"""A full ring overflows: the thread writes on, in order, into segments of
its own while the process's overflow budget (GPUTRACE_OVERFLOW_MB, 64 MiB by
default) lasts, and nothing is lost; past the budget what is dropped is
counted exactly, and the summary names the knob. The segments are made only
when a ring is full and given back once read."""
import glob
import json

import pytest

from faultkit import check_exact, compare, printed, prog, valid_trace


def thread_order(trace_path):
    """Each thread's spans in file order: their start times, per tid."""
    rows = {}

    def each(ev):
        if ev.get("ph") == "X" and ev.get("cat") == "ze_api":
            rows.setdefault(ev["tid"], []).append(ev["ts"])
    t = valid_trace(trace_path, keep_events=False, each=each)
    return t, rows


@pytest.mark.sanitize
def test_a_full_ring_overflows_and_loses_nothing(tmp_path):
    """Two threads call flat out into 16 KiB rings (256 events) at default
    settings and exit: every call is in the trace, each thread's in the order
    it made them, none lost, and the trailer says the overflow was used."""
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "2", "100000"],
                traced_env={"GPUTRACE_BUFFER_KB": "16", "GPUTRACE_SUMMARY": "1"}, timeout=300)
    assert r.traced.returncode == 0
    made = printed(r.traced.stdout)
    t, rows = thread_order(r.trace_path)
    check_exact(t, made, lost=0)
    meta = t["gputrace"]
    ovf = meta["overflow"]
    assert ovf["segments"] >= 1 and ovf["limit_bytes"] == 64 << 20
    assert 0 < ovf["peak_bytes"] <= ovf["limit_bytes"]
    # the two hammer threads' 100000 calls each, in the order they were made
    counts = sorted(len(v) for v in rows.values())
    assert counts[-2:] == [100000, 100000], counts
    for tid, ts in rows.items():
        assert all(a <= b for a, b in zip(ts, ts[1:])), f"thread {tid} out of order"
    assert "  lost events: 0\n" in r.traced.stderr.decode()


def test_overflow_budget_spent_counts_every_loss_and_names_the_knob(tmp_path):
    """A 1 MiB budget for 2 M calls flat out into a 4 KiB ring: the overflow
    runs out, and then recorded + lost is exactly what was made; the summary
    says to rerun with a bigger budget."""
    summary = tmp_path / "s.json"
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "1", "2000000"],
                traced_env={"GPUTRACE_BUFFER_KB": "4", "GPUTRACE_OVERFLOW_MB": "1",
                            "GPUTRACE_SUMMARY": "1", "GPUTRACE_SUMMARY_JSON": str(summary)},
                timeout=300)
    assert r.traced.returncode == 0
    made = printed(r.traced.stdout)
    t = valid_trace(r.trace_path, keep_events=False)
    meta = t["gputrace"]
    assert meta["events_lost"] > 0
    check_exact(t, made, lost=None)
    assert meta["lost_by_reason"] == {"ring_full": meta["events_lost"]}
    assert meta["overflow"]["limit_bytes"] == 1 << 20
    assert meta["overflow"]["peak_bytes"] <= 1 << 20
    err = r.traced.stderr.decode()
    assert ("a thread recorded faster than gputrace wrote, past its ring and the overflow: "
            "rerun with GPUTRACE_OVERFLOW_MB=4 (now 1 MiB for the process), or "
            "GPUTRACE_LOSSLESS=1 to make it wait") in err, err
    assert json.loads(summary.read_text())["lost"]["total"] == meta["events_lost"]


def test_overflow_off_has_no_overflow_in_the_trailer(tmp_path):
    """GPUTRACE_OVERFLOW_MB=0: a full ring drops as it always did (the
    lossless tests run so), and a run that never overflowed says nothing of
    it either."""
    for budget, calls in (("0", "300000"), ("64", "100")):
        d = tmp_path / budget
        d.mkdir()
        r = compare(d, [prog("fault_threads"), "hammer", "1", calls],
                    traced_env={"GPUTRACE_BUFFER_KB": "16", "GPUTRACE_OVERFLOW_MB": budget})
        assert r.traced.returncode == 0
        meta = valid_trace(r.trace_path, keep_events=False)["gputrace"]
        assert "overflow" not in meta
        assert (meta["events_lost"] > 0) == (budget == "0"), meta["events_lost"]


def test_a_budget_below_a_segment_of_the_ring_still_overflows(tmp_path):
    """1 MiB rings and a 1 MiB budget: a segment as big as the ring (and its
    header page) does not fit the budget, so the segments are smaller (three
    of 256 KiB). Until 2026-12-07 the budget held none: --overflow-mb 1 to 4
    with the default 4 MiB rings was off, and the advice after a 1 MiB run
    (4) changed nothing."""
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "2", "200000"],
                traced_env={"GPUTRACE_BUFFER_KB": "1024", "GPUTRACE_OVERFLOW_MB": "1"},
                timeout=300)
    assert r.traced.returncode == 0
    made = printed(r.traced.stdout)
    t = valid_trace(r.trace_path, keep_events=False)
    meta = t["gputrace"]
    check_exact(t, made, lost=None)
    assert meta["lost_by_reason"].get("ring_full", 0) == meta["events_lost"]
    if meta["events_lost"] == 0 and "overflow" not in meta:
        pytest.skip("the drain kept up: no ring filled")
    # a full ring went on into the overflow before anything was dropped
    assert "overflow" in meta, meta["lost_by_reason"]
    ovf = meta["overflow"]
    assert ovf["segments"] >= 1 and ovf["limit_bytes"] == 1 << 20
    assert 0 < ovf["peak_bytes"] <= ovf["limit_bytes"]


def test_an_exec_reads_the_overflow_whole(tmp_path):
    """Four threads call flat out into 4 KiB rings, are joined, and the
    program execs itself: the image's file (end "exec") holds every call its
    threads made, or counts it lost. The exec's cycles read two segments of a
    thread's backlog each, as a cycle of a running process does, and the
    rest went with the image, uncounted (155906 of 400102 calls recorded, 0
    lost)."""
    r = compare(tmp_path, [prog("fault_threads"), "hammer-exec", "4", "100000"],
                traced_env={"GPUTRACE_BUFFER_KB": "4",
                            "GPUTRACE_OUTPUT": str(tmp_path / "t-%p.json")},
                timeout=300)
    assert r.traced.returncode == 0
    files = sorted(glob.glob(str(tmp_path / "t-*.json")), key=lambda f: (len(f), f))
    assert len(files) == 2, files
    traces = [valid_trace(f, keep_events=False) for f in files]
    assert [t["gputrace"]["end"] for t in traces] == ["exec", "exit"]
    # main's 102 and the threads' 400000, then the new image's 102
    first = traces[0]
    check_exact(first, 102 + 400000, lost=None)
    per_thread = sorted(th["events"] + th["lost"] for th in first["gputrace"]["threads"])
    assert per_thread == [102, 100000, 100000, 100000, 100000], per_thread
    check_exact(traces[1], 102)
