"""The flight recorder (issue 17, point 3): --flight-recorder SEC|MB keeps the
last window of a run in bounded memory and writes it, as one valid trace, when
the process crashes or exits with a non-zero status; nothing otherwise. The
program (test/apps/ze_flight) runs kernels on the simulated Level Zero device
for a while, prints when it ends (CLOCK_MONOTONIC_RAW, the trace's clock) and
then ends as asked."""
import collections
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import (APPS, GPUTRACE, PRELOAD, SANITIZE, clean_env, default_signals,
                      gputrace_capture, gputrace_env, gputrace_lines, load_trace, need, run,
                      scan_trace, sim_env, wait_trace)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "viewers"))
from viewer_rules import check_flows  # noqa: E402

APP = APPS / "ze_flight"


def flight(tmp_path, seconds, end, window, pause_us=100, extra=None):
    need(APP)
    env = sim_env({"GPUTRACE_FLIGHT_RECORDER": window})
    env.update(extra or {})
    r = run([APP, seconds, end, pause_us], env=env, tmp_path=tmp_path)
    out = dict(line.split() for line in r.stdout.decode().splitlines())
    return r, int(out["end_ns"])


def check_window(tmp_path, r, end_ns, window_s, reason):
    """The dump: valid, named rows, only the window's events, the newest there,
    arrows whole and bound to their slices, every event formatted accounted."""
    t = load_trace(r.trace_path)
    g = t["gputrace"]
    fr = g["flight_recorder"]
    assert fr["reason"] == reason
    assert g["complete"] is True
    ev = t["traceEvents"]
    # the dump is marked as a capture window is: one slice of the span it holds,
    # on the process's "capture windows" row (gputrace's, not a recorded event)
    marks = [e for e in ev if e["ph"] == "X" and e.get("cat") == "gputrace" and e["tid"] == 0]
    assert [(m["name"], m["args"]) for m in marks] == [
        (f"flight recorder dump {fr['dump']}", {"dump": fr["dump"]})]
    assert marks[0]["ts"] + marks[0]["dur"] >= end_ns / 1e3
    assert marks[0]["ts"] >= (end_ns - window_s * 1e9) / 1e3
    by_ph = collections.Counter(e["ph"] for e in ev if e not in marks)
    # exact accounting: what is in the file, and what aged out, is every event recorded
    assert fr["events_kept"] == sum(n for ph, n in by_ph.items() if ph not in "Msf")
    assert fr["events_kept"] + fr["events_aged_out"] == g["events_recorded"]
    assert fr["events_aged_out"] > 0 and fr["events_kept"] > 0
    assert fr["flows_kept"] == by_ph["s"] + by_ph["f"]
    # the rows are named: process, its thread, the device's rows
    names = {(e["name"], e["pid"]) for e in ev if e["ph"] == "M"}
    pid = r_pid = next(e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name")
    assert ("thread_name", r_pid) in names
    dev_pids = {e["pid"] for e in ev if e["ph"] == "X" and e.get("cat") == "kernel"}
    assert dev_pids and all(("process_name", p) in names for p in dev_pids)
    # only the last window: every slice reaches into it (the dump came after end_ns)
    start_us = (end_ns - window_s * 1e9) / 1e3
    slices = [e for e in ev if e["ph"] == "X"]
    assert all(e["ts"] + e["dur"] > start_us for e in slices), min(e["ts"] for e in slices)
    assert all(e["ts"] > start_us for e in ev if e["ph"] in "sfiC")
    # ... and it is the newest: the last synchronize ended just before end_ns
    syncs = [e for e in slices if e["name"] == "zeCommandQueueSynchronize" and e["pid"] == pid]
    newest = max(e["ts"] + e["dur"] for e in syncs)
    assert end_ns / 1e3 - 100e3 < newest <= end_ns / 1e3
    # arrows: both ends in the file, bound to their launch and its kernel
    ends = collections.defaultdict(set)
    for e in ev:
        if e["ph"] in "sf":
            ends[e["id"]].add(e["ph"])
    assert ends and all(v == {"s", "f"} for v in ends.values())
    assert check_flows(t) == by_ph["s"]
    return t


@pytest.mark.sanitize
def test_flight_recorder_after_sigsegv(tmp_path):
    r, end_ns = flight(tmp_path, 1.5, "segv", "0.4s")
    assert r.returncode == -signal.SIGSEGV, r.stderr
    check_window(tmp_path, r, end_ns, 0.4, "signal SIGSEGV")
    assert os.listdir(tmp_path) == ["trace.json"]


def test_flight_recorder_after_abort(tmp_path):
    r, end_ns = flight(tmp_path, 1, "abort", "300ms")
    assert r.returncode == -signal.SIGABRT, r.stderr
    check_window(tmp_path, r, end_ns, 0.3, "signal SIGABRT")


def test_flight_recorder_after_nonzero_exit(tmp_path):
    r, end_ns = flight(tmp_path, 1, "exit3", "0.3")
    assert r.returncode == 3, r.stderr
    check_window(tmp_path, r, end_ns, 0.3, "exit status not 0")
    line = [ln for ln in r.stderr.decode().splitlines() if "flight recorder" in ln]
    assert line == [f"gputrace: flight recorder (exit status not 0): "
                    f"{load_trace(r.trace_path)['gputrace']['flight_recorder']['events_kept']} "
                    f"events of the last window in {r.trace_path}"]


def test_flight_recorder_output_folder_missing_falls_back(tmp_path):
    """GPUTRACE_OUTPUT in a folder that is not there: the dump goes to the default name in
    the folder the process started in, with one line, as a plain trace does (README
    "Configuration"). The window was lost: "cannot write the flight recorder's window"."""
    need(APP)
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_FLIGHT_RECORDER": "0.3",
                             "GPUTRACE_SUMMARY": "0",
                             "GPUTRACE_OUTPUT": str(tmp_path / "gone" / "trace.json")}))
    p = subprocess.run([str(APP), "0.5", "exit3", "100"], env=env, cwd=tmp_path,
                       capture_output=True, timeout=60, preexec_fn=default_signals)
    assert p.returncode == 3, p.stderr
    (dump,) = tmp_path.glob("gputrace-ze_flight-*.json")
    fr = load_trace(dump)["gputrace"]["flight_recorder"]
    assert fr["reason"] == "exit status not 0" and fr["events_kept"] > 0
    assert gputrace_lines(p.stderr) == [
        f"gputrace: cannot write the flight recorder's window to '{tmp_path}/gone/trace.json': "
        f"No such file or directory; writing it to {dump}",
        f"gputrace: flight recorder (exit status not 0): {fr['events_kept']} events of the "
        f"last window in {dump}"]


def test_flight_recorder_writes_nothing_on_success(tmp_path):
    r, _ = flight(tmp_path, 0.3, "ok", "0.1s")
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path) == []
    assert b"gputrace" not in r.stderr


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_flight_recorder_memory_flat_over_a_long_run(tmp_path):
    """A run 20x the window: the traced process's RSS late is where it was early."""
    need(APP)
    out = tmp_path / "trace.json"
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": str(out),
                             "GPUTRACE_SUMMARY": "0", "GPUTRACE_FLIGHT_RECORDER": "0.2s",
                             # a small ring: its first lap (pages touched) is over early
                             "GPUTRACE_BUFFER_KB": "256"}))
    if SANITIZE == "address":
        # ASan holds every freed block (the simulated driver's too) in a quarantine of
        # up to 256 MiB by design: RSS would measure that, not what the process keeps
        env["ASAN_OPTIONS"] += ":quarantine_size_mb=0"
    p = subprocess.Popen([str(APP), "4", "exit3", "50"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    # unloaded, RSS stops growing about 1 s in (the recorder full, 5 windows in); a
    # loaded machine (the suite's own CI) gets there later: early is taken at 1.8 s
    early = late = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3.6:
        time.sleep(0.1)
        if not early and time.monotonic() - t0 >= 1.8:
            early = rss_kib(p.pid)
    late = rss_kib(p.pid)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 3, stderr
    if SANITIZE != "thread":  # TSan's shadow and history grow with the run, not ours
        # the launch table made as launches filled it grew 512 KiB a second here
        assert early and late - early < 768, (early, late)
    end_ns = int(dict(ln.split() for ln in stdout.decode().splitlines())["end_ns"])
    r = type("R", (), {"trace_path": str(out)})
    t = check_window(tmp_path, r, end_ns, 0.2, "exit status not 0")
    fr = t["gputrace"]["flight_recorder"]
    # 20 windows and more went by: most of the run aged out; the recorder kept its bound
    assert fr["events_aged_out"] > 10 * fr["events_kept"]
    assert fr["bytes"] <= fr["max_bytes"] == 64 << 20


def test_flight_recorder_mb_bound(tmp_path):
    r, end_ns = flight(tmp_path, 1.5, "exit3", "1MB", pause_us=0)
    assert r.returncode == 3, r.stderr
    t = load_trace(r.trace_path)
    fr = t["gputrace"]["flight_recorder"]
    assert fr["window_s"] is None and fr["max_bytes"] == 1 << 20
    assert 0 < fr["bytes"] <= 1 << 20
    assert os.path.getsize(r.trace_path) < (1 << 20) + 8192  # events, names, head, trailer
    assert fr["events_kept"] + fr["events_aged_out"] == t["gputrace"]["events_recorded"]
    assert fr["events_aged_out"] > fr["events_kept"] > 0
    ends = collections.defaultdict(set)
    for e in t["traceEvents"]:
        if e["ph"] in "sf":
            ends[e["id"]].add(e["ph"])
    assert all(v == {"s", "f"} for v in ends.values())
    assert check_flows(t) == len(ends)
    # the dump's mark spans what it kept (a byte budget has no cutoff: it opened at 0,
    # the machine's uptime before the first event), and the summary leaves it out
    (mark,) = [e for e in t["traceEvents"] if e["ph"] == "X" and e.get("cat") == "gputrace"]
    kept = [e for e in t["traceEvents"] if e["ph"] in "XiC" and e is not mark]
    assert mark["ts"] == min(e["ts"] for e in kept)
    assert mark["ts"] + mark["dur"] >= max(e["ts"] + e.get("dur", 0) for e in kept) - 0.001
    s = json.loads(subprocess.run([str(GPUTRACE), "summary", "--json", "-", r.trace_path],
                                  env=gputrace_env(),
                                  capture_output=True, timeout=60, check=True).stdout)
    assert s["spans"] == sum(e["ph"] == "X" for e in kept)
    assert s["window"]["duration_ns"] <= round(mark["dur"] * 1000) + 1
    assert not [a for a in s["api_calls"] if a["name"].startswith("flight recorder")]


@pytest.mark.parametrize("value", ["abc", "0", "5MBx", "1.5MB", "0.001s", "-3"])
def test_flight_recorder_bad_value_one_line(tmp_path, value):
    r, _ = flight(tmp_path, 0.1, "ok", value)
    assert r.returncode == 0
    lines = r.stderr.decode().splitlines()
    assert lines == [f"gputrace: GPUTRACE_FLIGHT_RECORDER='{value}' is not valid: expected "
                     "seconds (30, 30s, 0.5s or 500ms; 10ms to 86400s) or megabytes "
                     "(64MB; 1 to 65536); using the default"]
    # the default: no flight recorder, the whole run in the trace
    assert "flight_recorder" not in load_trace(r.trace_path)["gputrace"]


@pytest.mark.parametrize("value,window_s,max_mb", [
    ("30S", 30, 64), ("500MS", 0.5, 64), ("0.5S", 0.5, 64), ("2m", None, 2), ("2mb", None, 2),
    ("2MIB", None, 2), ("2.0MB", None, 2)])
def test_flight_recorder_units_in_any_case(tmp_path, value, window_s, max_mb):
    """README: a unit in any case, as 64MB's always was ("64m" was refused, "64mb" taken;
    "30s" taken, "30S" refused); a whole number of megabytes written with a .0 is one."""
    r, _ = flight(tmp_path, 0.1, "exit3", value)
    assert r.returncode == 3, r.stderr
    assert not [l for l in gputrace_lines(r.stderr) if "is not valid" in l], r.stderr
    fr = load_trace(r.trace_path)["gputrace"]["flight_recorder"]
    assert (fr["window_s"], fr["max_bytes"]) == (window_s, max_mb << 20)


def test_gputrace_run_flight_recorder(tmp_path):
    need(APP)
    env = gputrace_env(sim_env())
    bad = subprocess.run([str(GPUTRACE), "run", "--flight-recorder", "30x", "--", "true"],
                         env=env, capture_output=True)
    assert bad.returncode == 2
    assert bad.stderr.decode().splitlines()[0] == (
        "gputrace: --flight-recorder '30x' is not valid: expected seconds (30, 30s, 0.5s or "
        "500ms; 10ms to 86400s) or megabytes (64MB; 1 to 65536)")
    out = tmp_path / "run.json"
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o", str(out),
                        "--flight-recorder", "300ms", "--", str(APP), "1", "exit3", "100"],
                       env=env, capture_output=True, preexec_fn=default_signals)
    assert r.returncode == 3, r.stderr
    # the process's file is a part, merged and removed: it is not named as the trace
    said = [ln for ln in r.stderr.decode().splitlines() if ln.startswith("gputrace")]
    assert len(said) == 1 and re.fullmatch(
        r"gputrace: flight recorder \(exit status not 0\): \d+ events of the last window "
        r"of ze_flight \(pid \d+\) written for the run's trace", said[0]), said
    end_ns = int(dict(ln.split() for ln in r.stdout.decode().splitlines())["end_ns"])
    check_window(tmp_path, type("R", (), {"trace_path": str(out)}), end_ns, 0.3,
                 "exit status not 0")
    ok = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o", str(tmp_path / "ok.json"),
                         "--flight-recorder", "300ms", "--", str(APP), "0.2", "ok", "100"],
                        env=env, capture_output=True, preexec_fn=default_signals)
    assert ok.returncode == 0
    assert not (tmp_path / "ok.json").exists()
    assert ok.stderr.decode().splitlines() == [
        "gputrace: flight recorder: no process crashed, failed or was asked for its window: "
        "no trace written"]
    # one process of the run ends well (nothing to write), the next fails: the run says
    # the one dump, and not that the first "could not write its trace"
    both = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o",
                           str(tmp_path / "both.json"), "--flight-recorder", "300ms", "--",
                           "sh", "-c", f"{APP} 0.2 ok 100 >/dev/null; "
                                       f"exec {APP} 0.2 exit3 100 >/dev/null"],
                          env=env, capture_output=True, preexec_fn=default_signals)
    assert both.returncode == 3, both.stderr
    said = [ln for ln in both.stderr.decode().splitlines() if ln.startswith("gputrace")]
    assert len(said) == 1 and said[0].startswith("gputrace: flight recorder (exit status not 0)"), \
        said
    assert (tmp_path / "both.json").exists()


def wait_dump(path):
    """A dump once it is complete on disk (it is named while still a skeleton)."""
    return wait_trace(path, lambda g: g.get("complete"), "complete dump")


def check_dump(t, window_s, reason, number):
    """A dump taken while the program runs on: the last window_s before it, marked."""
    g = t["gputrace"]
    fr = g["flight_recorder"]
    assert (fr["reason"], fr["dump"]) == (reason, number)
    ev = t["traceEvents"]
    marks = [e for e in ev if e["ph"] == "X" and e.get("cat") == "gputrace" and e["tid"] == 0]
    assert [(m["name"], m["args"]) for m in marks] == [
        (f"flight recorder dump {number}", {"dump": number})]
    start, taken = marks[0]["ts"], marks[0]["ts"] + marks[0]["dur"]
    # the whole window before the request, in µs, and what came until the dump was written
    assert window_s * 1e6 - 2 < marks[0]["dur"] < window_s * 1e6 + 5e6
    recorded = [e for e in ev if e not in marks and e["ph"] not in "M"]
    slices = [e for e in recorded if e["ph"] == "X"]
    assert all(start < e["ts"] + e["dur"] <= taken for e in slices)
    assert all(start < e["ts"] <= taken for e in recorded if e["ph"] in "sfiC")
    # the newest: the program synchronizes every ~50 µs up to the dump
    syncs = [e["ts"] + e["dur"] for e in slices if e["name"] == "zeCommandQueueSynchronize"]
    assert taken - 100e3 < max(syncs)
    by_ph = collections.Counter(e["ph"] for e in recorded)
    assert fr["events_kept"] == sum(n for ph, n in by_ph.items() if ph not in "sf") > 0
    assert fr["events_kept"] + fr["events_aged_out"] == g["events_recorded"]
    assert fr["flows_kept"] == by_ph["s"] + by_ph["f"]
    assert check_flows(t) == by_ph["s"]


def small_ring_flight_env(tmp_path):
    """A 1 s flight recorder with a small ring (a cycle reads little of a backlog: 2
    segments of 256 KiB), writing trace.json in tmp_path."""
    return clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_FLIGHT_RECORDER": "1s",
                              "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
                              "GPUTRACE_SUMMARY": "0", "GPUTRACE_BUFFER_KB": "256",
                              "GPUTRACE_RUN_DIR": str(tmp_path / "run")}))


def test_flight_recorder_dump_right_after_a_dump(tmp_path):
    """Two dumps asked for 0.3 s apart of a program calling flat out (no pause). While
    the first is written the program records on into its rings' overflow; a cycle reads
    a thread's overflow two segments at a time, and the second dump was written at the
    end of the next cycle, holding only the backlog's oldest part: a 1 s window's dump
    of a busy program held 0 events, or none of the last half second. A dump's cycle
    reads what was recorded up to its request."""
    need(APP)
    env = small_ring_flight_env(tmp_path)
    proc = subprocess.Popen([str(APP), "4", "ok", "0"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=default_signals)
    asked = []
    try:
        time.sleep(1.5)
        for _ in range(2):
            asked.append(time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW))
            assert gputrace_capture(tmp_path, "--dump", proc.pid).returncode == 0
            time.sleep(0.3)
    finally:
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    dumps = [tmp_path / "trace.json", tmp_path / "trace.1.json"]
    assert set(tmp_path.glob("trace*.json")) == set(dumps), err
    for dump, at in zip(dumps, asked):
        syncs = []

        def each(e):
            if e["ph"] == "X" and e["name"] == "zeCommandQueueSynchronize":
                syncs.append(e["ts"] + e["dur"])
        # a 1 s window of a program calling flat out: over load_trace's 16 MiB
        fr = scan_trace(dump, each=each)["gputrace"]["flight_recorder"]
        assert fr["reason"] == "capture --dump" and fr["events_kept"] > 0, (dump, fr)
        # the program synchronizes every few µs: its last one before the request is there
        assert syncs and max(syncs) > (at - 100e6) / 1e3, (dump, at / 1e3 - max(syncs or [0]))


def test_flight_recorder_window_ends_where_it_was_asked_for(tmp_path):
    """A dump's window is the SEC before it was asked for, however late the drain writes
    it. A program calling flat out with a small ring keeps the drain behind: two trigger
    signals 50 ms apart (the second while the first is written), then a SIGINT (while
    the second is). The window was counted back from the write, up to seconds after the
    request: the second dump held none of the second before its request (only what came
    after it), the SIGINT's only its last 0.3 s; and what a cycle wrote while a dump
    waited aged the window's start out."""
    need(APP)
    env = small_ring_flight_env(tmp_path)
    proc = subprocess.Popen([str(APP), "20", "ok", "0"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=default_signals)
    asked = []
    try:
        time.sleep(2.5)  # a window and more: from its first call on (a slow start here)
        for _ in range(2):
            asked.append(time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW))
            os.kill(proc.pid, signal.SIGRTMIN + 7)  # the bare trigger: no command's delay
            time.sleep(0.05)  # the second while the first is written
        deadline = time.monotonic() + 30
        while not (tmp_path / "trace.1.json").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        asked.append(time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW))
        proc.send_signal(signal.SIGINT)
    finally:
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGINT, err
    dumps = [tmp_path / "trace.json", tmp_path / "trace.1.json", tmp_path / "trace.2.json"]
    assert set(tmp_path.glob("trace*.json")) == set(dumps), err
    for dump, at, reason in zip(dumps, asked, ["trigger", "trigger", "signal SIGINT"]):
        ends, marks = [], []

        def each(e):
            if e["ph"] == "X" and e.get("cat") == "gputrace" and e["tid"] == 0:
                marks.append(e)
            elif e["ph"] == "X" and e["name"] == "zeCommandQueueSynchronize":
                ends.append(e["ts"] + e["dur"])
        g = scan_trace(dump, each=each)["gputrace"]
        fr = g["flight_recorder"]
        assert fr["reason"] == reason, (dump, fr)
        # the window opens a second before the request (its handler ran within 0.1 s;
        # the drain wrote the second dump 0.3 to 2.5 s after it here)
        start = marks[0]["ts"]
        assert at / 1e3 - 1e6 <= start < at / 1e3 - 1e6 + 100e3, (dump, start - at / 1e3)
        # ... and holds it whole (the program synchronizes every few µs), unless the
        # drain fell so far behind (a starved machine) that full rings lost its end or
        # the memory bound (64 MiB) its start: both are said
        if g["events_lost"] == 0:
            assert ends and max(ends) > at / 1e3 - 100e3, (dump, max(ends or [0]) - at / 1e3)
            if fr["bytes"] < fr["max_bytes"] - (1 << 20):
                assert min(ends) < start + 100e3, (dump, min(ends) - start)


@pytest.mark.sanitize
def test_flight_recorder_dumps_on_a_signal_inside_the_driver(tmp_path):
    """A SIGINT that lands while the program's thread holds the driver's lock (the
    simulator sends it from inside the first synchronize): the device's last read,
    through that driver, waits for a thread that waits for us. A flight recorder writes
    its dump after that read: after 3 s the handler gave up, with no dump at all and a
    line saying the trace kept its last checkpoint (a flight recorder has none). The
    read is now left out, the dump's trailer says so, and it holds every call made."""
    need(APP)
    out = tmp_path / "trace.json"
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": str(out),
                             "GPUTRACE_SUMMARY": "0", "GPUTRACE_FLIGHT_RECORDER": "1s",
                             "ZE_SIM_SIGNAL_IN_WAIT": str(int(signal.SIGINT))}))
    start = time.monotonic()
    r = subprocess.run([str(APP), "2", "ok", "0"], env=env, capture_output=True, timeout=60,
                       preexec_fn=default_signals)
    took = time.monotonic() - start
    assert r.returncode == -signal.SIGINT, r.stderr
    lines = gputrace_lines(r.stderr)
    assert len(lines) == 1 and lines[0].startswith(
        "gputrace: flight recorder (signal SIGINT): "), lines
    assert took < 2.5, took
    t = load_trace(out)
    g = t["gputrace"]
    assert (g["complete"], g["end"], g["device_flush"], g["events_lost"]) == \
        (True, "signal SIGINT", "unfinished", 0), g
    assert g["flight_recorder"]["reason"] == "signal SIGINT"
    # every call up to the synchronize the signal landed in
    names = collections.Counter(e["name"] for e in t["traceEvents"]
                                if e.get("cat") == "ze_api")
    assert names["zeInit"] == names["zeCommandQueueExecuteCommandLists"] == 1, names


def test_flight_recorder_dump_counts_device_work_still_waiting(tmp_path):
    """A program whose iterations are in NVTX ranges: its device work, read in a cycle,
    waits for the next one (its ranges complete) before it is written. A dump asked for
    meanwhile counted it as recorded, neither kept nor aged out: events_kept +
    events_aged_out came out short of events_recorded by up to a cycle's device work
    (1466 of 7968 here). The trailer counts it apart (events_waiting), and the last
    dump, at the end, holds it."""
    app = APPS / "ze_flight_nvtx"
    need(app)
    out = tmp_path / "trace.json"
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": str(out),
                             "GPUTRACE_SUMMARY": "0", "GPUTRACE_FLIGHT_RECORDER": "1s",
                             "GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    p = subprocess.Popen([str(app), "3", "exit3", "50"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    try:
        time.sleep(1.0)
        for _ in range(3):
            os.kill(p.pid, signal.SIGRTMIN + 7)
            time.sleep(0.3)
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 3, stderr
    # a request made while a dump's cycle runs may be taken with the next (a busy machine)
    dumps = sorted(tmp_path.glob("trace*.json"), key=lambda f: (f != out, f.name))
    assert dumps[0] == out and len(dumps) >= 2, stderr
    waiting = []
    for dump in dumps:
        t = load_trace(dump)
        g, ev = t["gputrace"], t["traceEvents"]
        fr = g["flight_recorder"]
        kept = [e for e in ev if e["ph"] not in "Msf" and e.get("cat") != "gputrace" and
                e.get("cat") != "gpu_user_annotation" and not e.get("args", {}).get("unended")]
        assert fr["events_kept"] == len(kept), dump
        assert fr["events_kept"] + fr["events_aged_out"] + fr.get("events_waiting", 0) \
            == g["events_recorded"], (dump, fr, g["events_recorded"])
        waiting.append((fr["dump"], fr["reason"], fr["events_waiting"]))
    # the case at hand: some waited at each request; none at the end (all written)
    waiting.sort()
    assert waiting[-1][1:] == ("exit status not 0", 0), waiting
    assert all(reason == "trigger" and n > 0 for _, reason, n in waiting[:-1]), waiting


def test_gputrace_run_says_every_processs_dump(tmp_path):
    """Under gputrace run each distinct warning is printed once per run; a dump's line
    names no file there, so two processes that dumped the same number of events said it
    once in all (one line for two dumps). Each dump has its line, naming its process."""
    need(APP)
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o", str(tmp_path / "run.json"),
                        "--flight-recorder", "5s", "--", "sh", "-c",
                        f"{APP} 0 exit3 & {APP} 0 exit3; wait"],
                       env=gputrace_env(sim_env()), capture_output=True,
                       preexec_fn=default_signals)
    assert r.returncode == 0, r.stderr
    said = gputrace_lines(r.stderr)
    pids = sorted(int(m.group(1)) for m in (re.fullmatch(
        r"gputrace: flight recorder \(exit status not 0\): \d+ events of the last window "
        r"of ze_flight \(pid (\d+)\) written for the run's trace", ln) for ln in said) if m)
    assert len(said) == 2 and len(set(pids)) == 2, said
    # the pids named are the processes' rows in the run's trace
    assert set(pids) <= {e["pid"] for e in load_trace(tmp_path / "run.json")["traceEvents"]
                         if e["ph"] == "M" and e["name"] == "process_name"}


@pytest.mark.sanitize
def test_flight_recorder_dumps_on_the_trigger_from_another_process(tmp_path):
    """A run 30x the window: `gputrace capture --dump PID`, `--dump --all` and the bare
    trigger signal each write the last window, the program runs on, memory stays flat."""
    need(APP)
    out = tmp_path / "trace.json"
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": str(out),
                             "GPUTRACE_SUMMARY": "0", "GPUTRACE_FLIGHT_RECORDER": "0.2s",
                             "GPUTRACE_BUFFER_KB": "256",
                             "GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    if SANITIZE == "address":
        # see the memory test above; and the blocks a dump freed go back to the
        # system (ASan's allocator kept them: +0.3 to +2.3 MiB over 3 dumps, where
        # the plain build stays within 40 KiB of its size after the first)
        env["ASAN_OPTIONS"] += ":quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
    # 6 s: the three requests take ~3.5 s, more on a loaded machine (at 4.5 s the program
    # had ended before the third, and no dump came)
    p = subprocess.Popen([str(APP), "6", "ok", "50"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    try:
        time.sleep(1.0)  # 5 windows in: the recorder is full
        c = gputrace_capture(tmp_path, "--dump", p.pid)
        assert c.returncode == 0, c.stderr
        assert c.stdout.decode().splitlines() == [
            f"gputrace capture: {p.pid} (ze_flight): flight recorder writes its window"]
        first = wait_dump(out)
        time.sleep(1.0)
        # measured from a second after the first dump: writing one grows the process
        # once (the file's output thread and its buffers), not with each dump
        early = rss_kib(p.pid)
        c = gputrace_capture(tmp_path, "--dump", "--all")
        assert c.returncode == 0, c.stderr
        second = wait_dump(tmp_path / "trace.1.json")
        time.sleep(0.5)
        os.kill(p.pid, signal.SIGRTMIN + 7)  # the bare trigger signal: kill -s RTMIN+7
        third = wait_dump(tmp_path / "trace.2.json")
        time.sleep(1.0)
        # the least of a few: a drain a loaded machine held back lets a ring overflow
        # into a segment for a moment (given back once read)
        late = rss_kib(p.pid)
        for _ in range(4):
            time.sleep(0.1)
            late = min(late, rss_kib(p.pid))
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, stderr  # the program ran on, and ended well: no fourth dump
    if SANITIZE != "thread":  # TSan's shadow grows with the run, not ours
        # 0 to 260 KiB here; 1.2 MiB when a dump's scratch came from malloc (kept from
        # the second dump on), 2 MiB more when a held-back drain's waiting list kept its
        # pages (CI: +3148 KiB)
        assert early and late - early < 1024, (early, late)
    check_dump(first, 0.2, "capture --dump", 1)
    check_dump(second, 0.2, "capture --dump", 2)
    check_dump(third, 0.2, "trigger", 3)
    # 20 windows went by: most of the run aged out of each dump
    fr = third["gputrace"]["flight_recorder"]
    assert fr["events_aged_out"] > 5 * fr["events_kept"]
    assert sorted(os.listdir(tmp_path)) == ["run", "trace.1.json", "trace.2.json", "trace.json"]
    lines = [ln for ln in stderr.decode().splitlines() if ln.startswith("gputrace")]
    assert [ln.split(":")[1] for ln in lines] == [
        " flight recorder (capture --dump)", " flight recorder (capture --dump)",
        " flight recorder (trigger)"], lines
    assert os.listdir(tmp_path / "run") == []  # the announcement went with the process


def test_capture_open_request_to_recorders_does_not_wait(tmp_path):
    """`gputrace capture --all` (an open request, not --dump) on three processes with a flight
    recorder: each writes its window, as the trigger does. capture waited 1 s for each
    one's window mark, which a recorder never makes (over 3 s here; 12 s for a node of 8
    ranks): now it returns at once."""
    need(APP)
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_SUMMARY": "0",
                             "GPUTRACE_OUTPUT": str(tmp_path / "t-%p.json"),
                             "GPUTRACE_FLIGHT_RECORDER": "5s",
                             "GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    procs = [subprocess.Popen([str(APP), "4", "ok", "100"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, preexec_fn=default_signals)
             for _ in range(3)]
    try:
        deadline = time.monotonic() + 10
        while (not all((tmp_path / "run" / str(p.pid)).exists() for p in procs)
               and time.monotonic() < deadline):
            time.sleep(0.02)
        t0 = time.monotonic()
        c = gputrace_capture(tmp_path, "--all")
        took = time.monotonic() - t0
        assert c.returncode == 0, c.stderr
        assert sorted(c.stdout.decode().splitlines()) == sorted(
            f"gputrace capture: {p.pid} (ze_flight): flight recorder writes its window"
            for p in procs)
        assert took < 2.0, took
        for p in procs:
            wait_dump(tmp_path / f"t-{p.pid}.json")
        for p in procs:
            p.communicate(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0, 0]


def test_capture_dump_refused_without_a_flight_recorder(tmp_path):
    need(APP)
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": str(tmp_path / "t.json"),
                             "GPUTRACE_SUMMARY": "0", "GPUTRACE_START": "paused",
                             "GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    p = subprocess.Popen([str(APP), "1", "ok", "100"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "run" / str(p.pid)).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        c = gputrace_capture(tmp_path, "--dump", p.pid)
        assert c.returncode == 1
        assert c.stderr.decode().splitlines() == [
            f"gputrace capture: {p.pid} (ze_flight) has no flight recorder (--flight-recorder): "
            "nothing to dump"]
        bad = gputrace_capture(tmp_path, "--dump", "--stop", p.pid)
        assert bad.returncode == 2
        assert bad.stderr.decode().splitlines() == [
            "gputrace capture: --stop, --duration and --dump do not go together"]
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0
    assert not (tmp_path / "t.json").exists()  # still paused: nothing was opened


def test_flight_recorder_ignores_windows_options_with_one_line(tmp_path):
    r, end_ns = flight(tmp_path, 0.6, "exit3", "0.2s", extra={"GPUTRACE_START": "paused"})
    assert r.returncode == 3
    # the variables set, not gputrace run's options (never given here)
    assert r.stderr.decode().splitlines()[0] == (
        "gputrace: GPUTRACE_FLIGHT_RECORDER records the whole run and writes its window on the "
        "trigger: GPUTRACE_START=paused, GPUTRACE_DELAY, GPUTRACE_DURATION and "
        "GPUTRACE_CAPTURE_RANGE are ignored with it")
    check_window(tmp_path, r, end_ns, 0.2, "exit status not 0")


def test_gputrace_run_dump_then_failure_each_event_once(tmp_path):
    """Under gputrace run a process dumps on request, then fails: the run's trace holds both
    dumps, each marked like a capture window, and every event once (the later dump holds
    what the earlier did not; its trailer counts the rest as in earlier dumps)."""
    need(APP)
    env = clean_env(sim_env({"GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    out = tmp_path / "run.json"
    p = subprocess.Popen([str(GPUTRACE), "run", "--no-summary", "-o", str(out),
                          "--flight-recorder", "1s", "--", str(APP), "2", "exit3", "100"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any((tmp_path / "run").glob("[0-9]*")):
            time.sleep(0.02)
        time.sleep(1.2)
        c = gputrace_capture(tmp_path, "--dump", "--all")
        assert c.returncode == 0, c.stderr
    finally:
        stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 3, stderr
    t = load_trace(out)
    inputs = t["gputrace"]["inputs"]
    frs = [i["gputrace"]["flight_recorder"] for i in inputs]
    assert [(f["dump"], f["reason"]) for f in frs] == [(1, "capture --dump"),
                                                       (2, "exit status not 0")]
    first, second = (i["gputrace"] for i in inputs)
    # dump 1 held all it had; dump 2 the rest of its window (1 s over a dump 0.8 s before)
    assert first["flight_recorder"]["events_in_earlier_dumps"] == 0
    assert second["flight_recorder"]["events_in_earlier_dumps"] > 0
    # exactly what the first held: what it aged out is in neither dump, counted aged out
    for kind in ("events", "flows"):
        assert second["flight_recorder"][f"{kind}_in_earlier_dumps"] == \
            first["flight_recorder"][f"{kind}_kept"], kind
    for g in (first, second):
        fr = g["flight_recorder"]
        assert fr["events_kept"] + fr["events_aged_out"] + fr["events_in_earlier_dumps"] == \
            g["events_recorded"]
    # each dump's events_recorded is the process's running total: the run's trace counts
    # the process once, with its last dump's (not their sum)
    assert first["events_recorded"] < second["events_recorded"]
    assert t["gputrace"]["events_recorded"] == second["events_recorded"]
    assert t["gputrace"]["events_lost"] == second["events_lost"]
    ev = t["traceEvents"]
    marks = sorted((e for e in ev if e["ph"] == "X" and e.get("cat") == "gputrace"),
                   key=lambda e: e["ts"])
    assert [m["name"] for m in marks] == ["flight recorder dump 1", "flight recorder dump 2"]
    # the window before the request, and what came until the dump was written
    assert 1e6 - 2 < marks[0]["dur"] < 1e6 + 5e6
    # the second starts where the first ended: they tile the run, no overlap
    assert marks[1]["ts"] == pytest.approx(marks[0]["ts"] + marks[0]["dur"], abs=1)
    # every event once: no host call or kernel appears twice
    seen = collections.Counter((e["name"], e["ts"], e.get("tid")) for e in ev
                               if e["ph"] == "X" and e.get("cat") != "gputrace")
    assert seen and max(seen.values()) == 1
    kept = sum(f["events_kept"] for f in frs)
    assert kept == sum(1 for e in ev if e["ph"] not in "Msf" and e.get("cat") != "gputrace")
