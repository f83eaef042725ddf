"""Capture windows on the simulated Level Zero device (README "Long runs").

What a user checks: nothing outside a window is in its file, every call made
inside it is there (or counted lost), the file is complete when the window
ends, and work appended before a window but run inside it is recorded."""
import json
import os
import re
import pathlib
import signal
import subprocess
import time

import pytest

from conftest import (APPS, GPUTRACE, PRELOAD, SANITIZE, ZE_SIM, clean_env, default_signals,
                      events, gputrace_capture, gputrace_env, load_trace, need, run, scan_trace,
                      sim_env, wait_trace, window_ended)

if not pathlib.Path("/usr/include/level_zero/ze_api.h").exists():
    pytest.skip("Level Zero headers (libze-dev) not installed: no Level Zero backend",
                allow_module_level=True)

WINDOW_APP = APPS / "ze_window"
BATCH = 8


def ns(us):
    return round(us * 1000)


def window_run(tmp_path, args, env):
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    r = run([WINDOW_APP] + [str(a) for a in args], env=sim_env(env), tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert b"ze_window: iterations=" in r.stdout
    return r


def check_inside(trace):
    """Every slice lies in the trailer's window; returns the window (ns)."""
    info = trace["gputrace"]
    cap = info["capture"]
    assert info["complete"] is True and info["end"] == "window"
    lo, hi = cap["start_ns"], cap["end_ns"]
    assert lo < hi
    spans = events(trace, ph="X")
    assert spans
    for e in spans:
        assert lo <= ns(e["ts"]) and ns(e["ts"]) + ns(e["dur"]) <= hi, e
    # the window, marked on a row of its own (tid 0): exactly its bounds
    mark = [e for e in spans if e["cat"] == "gputrace"]
    assert [(e["name"], e["tid"], ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in mark] == [
        (f"capture window {cap['window']}", 0, lo, hi)]
    return info, lo, hi


@pytest.mark.sanitize
def test_delay_duration_window_cuts_exactly(tmp_path):
    r = window_run(tmp_path, [900, BATCH],
                   {"GPUTRACE_DELAY": "0.25", "GPUTRACE_DURATION": "0.3"})
    trace = r.trace
    info, lo, hi = check_inside(trace)
    # the window is where it was asked for (the drain thread keeps deadlines to ~1 ms)
    assert 0.24e9 <= lo - info["anchor"]["clock_ns"] <= 0.3e9
    assert 0.299e9 <= hi - lo <= 0.33e9
    assert info["events_lost"] == 0
    # every launch made inside the window is there, none from outside: a contiguous run of
    # iterations, each launching "step" (regular list) and "imm" (immediate list) once
    launches = events(trace, ph="X", name="zeCommandListAppendLaunchKernel")
    gx = {}
    for e in launches:
        gx.setdefault(e["args"]["kernel"], []).append(e["args"]["gx"])
    for kernel in ("step", "imm"):
        got = sorted(gx[kernel])
        assert got == list(range(got[0], got[-1] + 1)), kernel
        assert got[0] > 1  # iterations ran before the window
    assert abs(len(gx["step"]) - len(gx["imm"])) <= 1
    # the regular list's kernels: every batch executed in the window is there whole, with
    # the launches of a batch appended before the window opened (kernels that would reach
    # past the window's end are cut: only the last execution may miss some)
    executes = sorted(events(trace, ph="X", name="zeCommandQueueExecuteCommandLists"),
                      key=lambda e: e["ts"])
    step = events(trace, ph="X", cat="kernel", name="step")
    per_exec = {}
    for e in step:
        per_exec.setdefault(e["args"]["correlation"], []).append(e["args"]["gx"])
    for x in executes[:-1]:
        got = sorted(per_exec.pop(x["args"]["correlation"]))
        assert len(got) == BATCH and got[0] % BATCH == 1
        assert got == list(range(got[0], got[0] + BATCH))
    if executes:
        per_exec.pop(executes[-1]["args"]["correlation"], None)
    # a batch executed just before the window whose kernels ran inside it (microseconds)
    assert sum(len(v) for v in per_exec.values()) <= BATCH


@pytest.mark.sanitize
def test_delay_window_ended_by_sigterm(tmp_path):
    """--delay starts the drain thread with the process, before anything is recorded: the
    fatal-signal handlers go in as its window opens, so a SIGTERM inside the window still
    leaves the window's trace complete (it left none)."""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_DELAY": "0.2",
                             "GPUTRACE_SUMMARY": "0",
                             "GPUTRACE_OUTPUT": str(tmp_path / "trace.json")}))
    p = subprocess.Popen([str(WINDOW_APP), "20000", str(BATCH)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    try:
        assert p.stdout.readline() == b"ze_window: ready\n"
        time.sleep(0.8)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGTERM, err
    info = load_trace(tmp_path / "trace.json")["gputrace"]
    assert info["complete"] is True and info["end"] == "signal SIGTERM", (info, err)
    assert info["capture"]["window"] == 1 and info["events_recorded"] > 0


def test_work_appended_while_paused_runs_in_window(tmp_path):
    """A regular list filled before the window and executed inside it: its kernels are
    timed and recorded (the backend keeps the list's books while paused); the appends
    themselves are not."""
    window_run(tmp_path, [400, BATCH, 1], {"GPUTRACE_DELAY": "0.2"})
    trace = load_trace(tmp_path / "trace.json")
    info = trace["gputrace"]
    assert info["capture"]["window"] == 1 and info["end"] == "exit" and info["complete"]
    lo = info["capture"]["start_ns"]
    assert not events(trace, ph="X", name="zeCommandListAppendLaunchKernel")
    assert len(events(trace, ph="X", name="zeCommandQueueExecuteCommandLists")) == 1
    step = events(trace, ph="X", cat="kernel", name="step")
    assert sorted(e["args"]["gx"] for e in step) == list(range(1, BATCH + 1))
    assert all(ns(e["ts"]) >= lo for e in events(trace, ph="X"))
    assert info["events_lost"] == 0


def test_start_paused_never_triggered_writes_nothing(tmp_path):
    r = window_run(tmp_path, [100, BATCH], {"GPUTRACE_START": "paused"})
    assert not (tmp_path / "trace.json").exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("setting,name", [
    ({"GPUTRACE_START": "paused"}, "GPUTRACE_START=paused"),
    ({"GPUTRACE_CAPTURE_RANGE": "nvtx:step"}, "GPUTRACE_CAPTURE_RANGE")])
def test_delay_with_other_windows_said_ignored(tmp_path, setting, name):
    """GPUTRACE_DELAY opens a window by itself; with GPUTRACE_START=paused (windows by the
    trigger) or GPUTRACE_CAPTURE_RANGE (by the program's marks) it is ignored, and one line
    says so (it was dropped without a word), naming the variables the user set, not the
    gputrace run options never given: the process stays paused, nothing is written."""
    r = window_run(tmp_path, [50, BATCH], dict(setting, GPUTRACE_DELAY="0.001"))
    lines = [l for l in r.stderr.decode().splitlines() if l.startswith("gputrace")]
    assert lines == [
        f"gputrace: GPUTRACE_DELAY opens a window by itself: it is ignored with {name}"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option,name", [(["--start", "paused"], "--start paused"),
                                         (["--capture-range", "nvtx:step"], "--capture-range")])
def test_delay_with_other_windows_said_ignored_under_gputrace_run(tmp_path, option, name):
    """Under gputrace run the options arrive as the variables: the line names the options,
    once for the run."""
    need(WINDOW_APP)
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o", str(tmp_path / "t.json"),
                        *option, "--delay", "0.001", "--", "sh", "-c",
                        f"{WINDOW_APP} 50 {BATCH}; {WINDOW_APP} 50 {BATCH}"],
                       env=gputrace_env(sim_env()), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.decode().splitlines() if "opens a window" in l]
    assert lines == [f"gputrace: --delay opens a window by itself: it is ignored with {name}"]


def test_capture_count_without_a_range_said_ignored(tmp_path):
    """GPUTRACE_CAPTURE_COUNT counts GPUTRACE_CAPTURE_RANGE's ranges; alone it was dropped
    without a word (the whole run recorded, as the user did not ask): one line says so,
    and the run is traced as without it."""
    r = window_run(tmp_path, [20, BATCH], {"GPUTRACE_CAPTURE_COUNT": "2"})
    lines = [l for l in r.stderr.decode().splitlines() if l.startswith("gputrace")]
    assert lines == ["gputrace: GPUTRACE_CAPTURE_COUNT counts the ranges of "
                     "GPUTRACE_CAPTURE_RANGE: it is ignored without it"]
    trailer = r.trace["gputrace"]
    assert "capture" not in trailer and trailer["events_recorded"] > 0
    # with a range, nothing is said
    r = window_run(tmp_path, [20, BATCH], {"GPUTRACE_CAPTURE_COUNT": "2",
                                           "GPUTRACE_CAPTURE_RANGE": "nvtx:step"})
    assert b"gputrace" not in r.stderr
    # under gputrace run: once for the run, naming the options
    need(WINDOW_APP)
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o", str(tmp_path / "t.json"),
                        "--capture-count", "3", "--", "sh", "-c",
                        f"{WINDOW_APP} 20 {BATCH}; {WINDOW_APP} 20 {BATCH}"],
                       env=gputrace_env(sim_env()), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.decode().splitlines() if l.startswith("gputrace")]
    assert lines == ["gputrace: --capture-count counts the ranges of --capture-range: it is "
                     "ignored without it"], lines


def test_bad_window_values_one_line_each(tmp_path):
    r = window_run(tmp_path, [50, BATCH], {"GPUTRACE_START": "later", "GPUTRACE_DELAY": "-1",
                                            "GPUTRACE_DURATION": "soon"})
    lines = [l for l in r.stderr.decode().splitlines() if l.startswith("gputrace")]
    assert any("GPUTRACE_START='later'" in l and "paused or running" in l for l in lines)
    assert any("GPUTRACE_DELAY='-1'" in l for l in lines)
    assert any("GPUTRACE_DURATION='soon'" in l for l in lines)
    assert len(lines) == 3
    # defaults kept: the whole run is traced
    assert "capture" not in load_trace(tmp_path / "trace.json")["gputrace"]


# ---- triggers from outside: gputrace capture ----



def let_threads_start():
    """ze_window's simulated device starts its engine's thread at the first launch, right
    after "ready". GCC 12's ThreadSanitizer runtime lets a signal land on a thread that
    glibc has started and it has not yet set up (LLVM's later runtime blocks signals
    there): a capture signal taken then crashed the program in the handler (SIGSEGV in
    __tsan_func_entry, 2 runs in 40). Sent a moment later, it lands on threads that run."""
    if SANITIZE == "thread":
        time.sleep(0.3)


def start_paused(tmp_path, extra=None, app=WINDOW_APP):
    """ze_window started paused, as a job script would; returns the process once it runs.
    It runs until its stdin is closed (communicate()): a fixed length, 1.5 to 5 s, raced
    the test's steps, which a loaded machine stretched past it (CI-like load: the process
    had ended before the --stop of test_capture_paused_processes_from_another_shell)."""
    env = clean_env(sim_env(dict({"LD_PRELOAD": PRELOAD, "GPUTRACE_START": "paused",
                                  "GPUTRACE_SUMMARY": "0",
                                  "GPUTRACE_OUTPUT": str(tmp_path / "trace-%p.json"),
                                  "GPUTRACE_RUN_DIR": str(tmp_path / "run")}, **(extra or {}))))
    p = subprocess.Popen([str(app), "0", str(BATCH)], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    assert p.stdout.readline() == b"ze_window: ready\n"
    assert (tmp_path / "run" / str(p.pid)).exists()
    let_threads_start()
    return p


def drain_threads(pid):
    """How many gputrace drain threads the process runs (they are named so)."""
    n = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            n += pathlib.Path(f"/proc/{pid}/task/{t}/comm").read_text() == "gputrace-drain\n"
        except OSError:
            pass  # a thread that ended meanwhile
    return n


def capture(tmp_path, *args):
    """gputrace capture from another shell (its own environment: only the run directory)."""
    return gputrace_capture(tmp_path, *args, shell=True)


def wait_window_file(path, timeout=10.0):
    """The trace of a window, once its end is on disk (the process runs on)."""
    return wait_trace(path, window_ended, "complete window", timeout)


def launch_gaps(trace, kernel):
    """The iterations missing between the first and the last launch of kernel in the
    file, as (first, last, ts before, ts after) in us from the window's start: empty
    when the run is contiguous."""
    lo = trace["gputrace"]["capture"]["start_ns"] / 1e3
    at = {e["args"]["gx"]: e["ts"] - lo
          for e in events(trace, ph="X", name="zeCommandListAppendLaunchKernel")
          if e["args"]["kernel"] == kernel}
    gx = sorted(at)
    return [(a + 1, b - 1, round(at[a]), round(at[b])) for a, b in zip(gx, gx[1:]) if b > a + 1]


def check_window(trace, seconds=None):
    info, lo, hi = check_inside(trace)
    if seconds:
        assert seconds * 1e9 <= hi - lo <= seconds * 1e9 + 0.05e9
    got = sorted(e["args"]["gx"] for e in events(trace, ph="X", name="zeCommandListAppendLaunchKernel")
                 if e["args"]["kernel"] == "imm")
    # each launch once, none missing (a gap's message says where, and what the trailer counted)
    assert got and got == list(range(got[0], got[-1] + 1)), (
        launch_gaps(trace, "imm"), launch_gaps(trace, "step"), len(got),
        {k: info.get(k) for k in ("events_recorded", "events_lost", "lost_by_reason", "threads",
                                   "clock", "capture")})
    assert_only_late_losses(info)
    return info


def assert_only_late_losses(info):
    """Nothing lost but, on a loaded machine, a call of an earlier window that reached its
    ring more than the writer's grace after that window closed (counted, README)."""
    assert {k for k, v in info["lost_by_reason"].items() if v} <= {"window_late"}, info
    assert info["events_lost"] <= 2


@pytest.mark.sanitize
def test_capture_paused_processes_from_another_shell(tmp_path):
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    procs = [start_paused(tmp_path) for _ in range(2)]
    try:
        # paused, a process has recorded nothing: no drain thread yet (it starts with
        # the first window), so the trigger is applied by the signal handler itself
        assert [drain_threads(p.pid) for p in procs] == [0, 0]
        # every traced process of the user: one window of 0.3 s each, one file each
        r = capture(tmp_path, "--duration", "0.3", "--all")
        assert r.returncode == 0, r.stderr
        assert sorted(r.stdout.decode().splitlines()) == sorted(
            f"gputrace capture: {p.pid} (ze_window): window of 0.300 s" for p in procs)
        for p in procs:
            info = check_window(wait_window_file(tmp_path / f"trace-{p.pid}.json"), 0.3)
            assert info["capture"]["window"] == 1
        assert [drain_threads(p.pid) for p in procs] == [1, 1]
        # one of them again, open-ended, ended by --stop: a second file
        first = procs[0]
        assert capture(tmp_path, first.pid).returncode == 0
        time.sleep(0.2)
        r = capture(tmp_path, "--stop", first.pid)
        assert r.returncode == 0 and b"window ends" in r.stdout
        info = check_window(wait_window_file(tmp_path / f"trace-{first.pid}-w2.json"))
        assert info["capture"]["window"] == 2
    finally:
        outs = [p.communicate(timeout=60) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert b"iterations=" in out
    assert not (tmp_path / f"trace-{procs[1].pid}-w2.json").exists()
    # the processes withdrew their announcements at exit
    assert list((tmp_path / "run").iterdir()) == []


def test_short_windows_back_to_back_keep_their_device_work(tmp_path):
    """Windows of 50 ms opened and closed from another shell, one right after the other,
    while the program waits on its device all the time: each file holds the kernels of
    its window, none counted late. (The drain left the reads of a cycle after the
    program's own reads to a later cycle: a short window's kernels were read after its
    file ended, all counted window_late in the next window's trailer, or nowhere.)"""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    proc = start_paused(tmp_path)
    try:
        for n in range(1, 5):
            assert capture(tmp_path, proc.pid).returncode == 0
            time.sleep(0.05)
            assert capture(tmp_path, "--stop", proc.pid).returncode == 0
            name = f"trace-{proc.pid}.json" if n == 1 else f"trace-{proc.pid}-w{n}.json"
            t = wait_window_file(tmp_path / name)
            info = t["gputrace"]
            assert info["capture"]["window"] == n
            launches = [e for e in events(t, ph="X", name="zeCommandListAppendLaunchKernel")]
            kernels = [e for e in events(t, ph="X", cat="kernel")]
            assert launches and kernels, (n, len(launches), info["lost_by_reason"])
            # every launch's kernel but those run after the window closed: the regular
            # list's batch appended in it, executed then, and an immediate one
            assert len(kernels) >= len(launches) - BATCH - 1, (n, len(launches), len(kernels))
            assert not info["lost_by_reason"].get("window_late"), (n, info["lost_by_reason"])
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


def window_of_a_capture(tmp_path, pid, path, n):
    """`gputrace capture --duration 0.2 PID`: the trailer of its window's file PATH, the
    process's Nth window, checked as a 0.2 s window."""
    r = capture(tmp_path, "--duration", "0.2", pid)
    assert r.returncode == 0, r.stderr
    info = check_window(wait_window_file(tmp_path / path), 0.2)
    assert info["capture"]["window"] == n
    return info


def test_each_window_counts_its_own_events(tmp_path):
    """Two windows of one process, two files: each trailer counts that file's events,
    in all (events_recorded) and per thread (threads[].events), not the process's since
    it started (README "Long runs")."""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    proc = start_paused(tmp_path)
    try:
        for n, path in ((1, f"trace-{proc.pid}.json"), (2, f"trace-{proc.pid}-w2.json")):
            info = window_of_a_capture(tmp_path, proc.pid, path, n)
            t = load_trace(tmp_path / path)
            recorded = sum(1 for e in t["traceEvents"]
                           if e["ph"] not in "Msf" and e.get("cat") != "gputrace")
            assert info["events_recorded"] == recorded
            assert sum(th["events"] for th in info["threads"]) == recorded, info["threads"]
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


def test_window_files_are_named_after_the_first_one(tmp_path):
    """A process whose trace name was taken (an earlier run's file, or the image an
    exec replaced: same pid) writes trace-PID.1.json; its second window goes to
    trace-PID.1-w2.json, beside it. It went to trace-PID-w2.json, which reads as the
    second window of the other trace-PID.json. The earlier file is left as it was."""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    proc = start_paused(tmp_path)
    stale = tmp_path / f"trace-{proc.pid}.json"
    stale.write_text('{"traceEvents": []}')
    try:
        for n, path in ((1, f"trace-{proc.pid}.1.json"), (2, f"trace-{proc.pid}.1-w2.json")):
            info = window_of_a_capture(tmp_path, proc.pid, path, n)
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert stale.read_text() == '{"traceEvents": []}'
    assert sorted(f.name for f in tmp_path.glob("trace-*.json")) == [
        f"trace-{proc.pid}.1-w2.json", f"trace-{proc.pid}.1.json", f"trace-{proc.pid}.json"]


def test_window_files_of_a_gz_name_are_gz(tmp_path):
    """GPUTRACE_OUTPUT trace-%p.gz (a .gz name without .json): a name taken gives
    trace-PID.1.gz, and its second window trace-PID.1-w2.gz, compressed as the first.
    They were trace-PID.gz.1 (no .gz name) and trace-PID.gz.1-w2, written plain: a .gz
    name decides the compression, and "-w2" went after its .gz."""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    proc = start_paused(tmp_path, {"GPUTRACE_OUTPUT": str(tmp_path / "trace-%p.gz")})
    stale = tmp_path / f"trace-{proc.pid}.gz"
    stale.write_text('{"traceEvents": []}')
    try:
        for n, path in ((1, f"trace-{proc.pid}.1.gz"), (2, f"trace-{proc.pid}.1-w2.gz")):
            window_of_a_capture(tmp_path, proc.pid, path, n)
            assert (tmp_path / path).read_bytes()[:2] == b"\x1f\x8b", path
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert stale.read_text() == '{"traceEvents": []}'
    assert sorted(f.name for f in tmp_path.glob("trace-*")) == [
        f"trace-{proc.pid}.1-w2.gz", f"trace-{proc.pid}.1.gz", f"trace-{proc.pid}.gz"]


def test_windows_from_outside_after_an_nvtx_range_while_paused(tmp_path):
    """ze_window_nvtx pushes and pops one NVTX range while paused (its thread's ring is
    made then, with no drain thread). A window from outside (--duration) still starts the
    drain thread with its first event, and ends at its deadline with a complete file while
    the process runs on; a second trigger opens a second window, ended the same way."""
    app = APPS / "ze_window_nvtx"
    for p in (ZE_SIM, app):
        need(p)
    proc = start_paused(tmp_path, app=app)
    try:
        assert drain_threads(proc.pid) == 0
        for n, path in ((1, f"trace-{proc.pid}.json"), (2, f"trace-{proc.pid}-w2.json")):
            info = window_of_a_capture(tmp_path, proc.pid, path, n)
            assert drain_threads(proc.pid) == 1
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert b"iterations=" in out
    assert sorted(f.name for f in tmp_path.glob("trace-*.json")) == [
        f"trace-{proc.pid}-w2.json", f"trace-{proc.pid}.json"]


def test_capture_stop_with_no_window_open(tmp_path):
    """--stop on a paused process with no window open says so in one line and exits 1 (no
    signal sent: nothing is written); once a window is open, --stop ends it (exit 0, its
    file complete); a second --stop finds none open again."""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    proc = start_paused(tmp_path)
    try:
        no_window = f"gputrace capture: {proc.pid} (ze_window): no window is open: nothing to end"
        r = capture(tmp_path, "--stop", proc.pid)
        assert (r.returncode, r.stdout, r.stderr.decode().splitlines()) == (1, b"", [no_window])
        assert capture(tmp_path, proc.pid).returncode == 0
        time.sleep(0.2)
        # another open request, plain or with a length, changes nothing: said so (it
        # printed "window opens" and exited 0), nothing sent
        for extra in ([], ["--duration", "0.1"]):
            r = capture(tmp_path, *extra, proc.pid)
            assert (r.returncode, r.stdout, r.stderr.decode().splitlines()) == (1, b"", [
                f"gputrace capture: {proc.pid} (ze_window): a window is open already: nothing "
                "to open (--stop ends it)"])
        r = capture(tmp_path, "--stop", proc.pid)
        assert r.returncode == 0, r.stderr
        assert r.stdout.decode().splitlines() == [
            f"gputrace capture: {proc.pid} (ze_window): window ends"]
        check_window(wait_window_file(tmp_path / f"trace-{proc.pid}.json"))
        r = capture(tmp_path, "--stop", proc.pid)
        assert (r.returncode, r.stdout, r.stderr.decode().splitlines()) == (1, b"", [no_window])
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert not (tmp_path / f"trace-{proc.pid}-w2.json").exists()
    assert list((tmp_path / "run").iterdir()) == []


def test_capture_refuses_what_it_cannot_reach(tmp_path):
    r = capture(tmp_path, "--all")
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1
    assert b"no traced process" in r.stderr
    r = capture(tmp_path, os.getpid())  # alive, but not traced
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1
    assert b"not traced by gputrace" in r.stderr
    r = capture(tmp_path, "--duration", "soon", "1")
    assert r.returncode == 2 and b"--duration wants seconds" in r.stderr
    # decimal only, in range, and the line says what is accepted (hex, a blank before
    # it were taken: 0x0.4p0 was a window of 0.25 s; 2100000 was refused unexplained)
    for bad in ("0x0.4p0", "' 1'", "2100000", "0.0005", "+1", "inf"):
        r = capture(tmp_path, "--duration", bad, "1")
        assert (r.returncode, r.stderr.decode().splitlines()) == (2, [
            "gputrace capture: --duration wants seconds, a decimal number from 0.001 to "
            f"2000000 (such as 30 or 0.5), not '{bad.strip(chr(39))}'"]), bad
    # an unknown option: what is accepted, --dump too (it was left out)
    r = capture(tmp_path, "--dumb", "1")
    assert (r.returncode, r.stderr.decode().splitlines()) == (2, [
        "gputrace capture: '--dumb' is not a pid (1 to 2147483647); use PID..., --all, "
        "--duration SEC, --stop or --dump"])
    # a pid that would wrap to another process's (2^32 + ours), or 0 (kill(0): our group)
    for bad in (os.getpid() + (1 << 32), 0, "99999999999"):
        r = capture(tmp_path, bad)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, (bad, r.stderr)
        assert f"'{bad}' is not a pid (1 to 2147483647)".encode() in r.stderr
    # a run directory open to others is not trusted
    (tmp_path / "run").mkdir(mode=0o755)
    os.chmod(tmp_path / "run", 0o755)
    r = capture(tmp_path, "--all")
    assert r.returncode == 1 and b"refused" in r.stderr and len(r.stderr.splitlines()) == 1


def test_capture_refuses_a_process_that_ended_unreaped(tmp_path):
    """A paused process killed (SIGKILL, as by the OOM killer) whose parent has not reaped it
    yet left its announcement, and /proc and kill() still find the zombie, which takes a
    signal for nothing: capture said "window opens" and exited 0 after a second, for a
    process that writes nothing. Now it says the process ended, exit 1; --all leaves it
    out without a word, and its stale announcement goes."""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    proc = start_paused(tmp_path)
    try:
        proc.kill()
        deadline = time.monotonic() + 10
        while (pathlib.Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
               != "Z" and time.monotonic() < deadline):
            time.sleep(0.01)
        assert (tmp_path / "run" / str(proc.pid)).exists()  # SIGKILL: left behind
        r = capture(tmp_path, "--all")
        assert (r.returncode, r.stdout, len(r.stderr.splitlines())) == (1, b"", 1), r.stderr
        assert b"no traced process of yours" in r.stderr
        assert list((tmp_path / "run").iterdir()) == []
        for args in ([], ["--duration", "1"], ["--stop"]):
            r = capture(tmp_path, *args, proc.pid)
            assert (r.returncode, r.stdout, r.stderr.decode().splitlines()) == (1, b"", [
                f"gputrace capture: process {proc.pid} has ended (its parent has not reaped "
                "it yet): nothing to trigger"]), args
    finally:
        proc.communicate(timeout=60)


def test_paused_windows_last_the_duration_given(tmp_path):
    """--start paused --duration 0.2 (GPUTRACE_DURATION): a window asked for with no length
    (gputrace capture PID) lasts 0.2 s, as the options' table says of every window; it ran
    until --stop, the setting dropped without a word. The first is opened by the trigger's
    handler (no drain thread yet), the second by the drain thread; capture --duration
    still sets a window's own length."""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    proc = start_paused(tmp_path, {"GPUTRACE_DURATION": "0.2"})
    mark = tmp_path / "run" / f"{proc.pid}.window"
    try:
        for n, args, seconds in ((1, [], 0.2), (2, [], 0.2), (3, ["--duration", "0.1"], 0.1)):
            r = capture(tmp_path, *args, proc.pid)
            assert r.returncode == 0, r.stderr
            assert r.stdout.decode().splitlines() == [
                f"gputrace capture: {proc.pid} (ze_window): " +
                ("window of 0.2 s (its --duration)" if not args else "window of 0.100 s")]
            name = f"trace-{proc.pid}.json" if n == 1 else f"trace-{proc.pid}-w{n}.json"
            info = check_window(wait_window_file(tmp_path / name), seconds)
            assert info["capture"]["window"] == n
            assert wait_gone(mark)  # ended by itself: no --stop
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


# ---- requests carried out in their order; the run directory's PID.window ----

SIG = signal.SIGRTMIN + 7  # the default capture signal


def wait_gone(path, timeout=1.0):
    """path is gone within timeout (a window mark the drain removes at its next look)."""
    deadline = time.monotonic() + timeout
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    return not path.exists()


def test_open_then_stop_back_to_back_leaves_no_window_open(tmp_path):
    """`capture PID; capture --stop PID` one right after the other, and two plain kills
    (each toggles) as quick: the requests are carried out in their order, so each pair
    is a window that opens and closes (its file complete while the process runs on),
    never one left open. (The --stop was taken before the open it followed and dropped,
    1 in 3; the second kill, seeing the phase still paused, asked for an open again:
    the window recorded until the exit, PID.window stayed.)"""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    proc = start_paused(tmp_path)
    mark = tmp_path / "run" / f"{proc.pid}.window"
    try:
        # a first window starts the drain thread, which carries out the requests after it
        assert capture(tmp_path, "--duration", "0.1", proc.pid).returncode == 0
        wait_window_file(tmp_path / f"trace-{proc.pid}.json")
        for i in range(12):
            if i % 2:
                os.kill(proc.pid, SIG)
                os.kill(proc.pid, SIG)
                time.sleep(0.05)  # a toggle marks its window as the drain opens it
            else:
                r = gputrace_capture(tmp_path, proc.pid)
                s = gputrace_capture(tmp_path, "--stop", proc.pid)
                assert (r.returncode, s.returncode) == (0, 0), (r.stderr, s.stderr)
                assert s.stdout.decode().splitlines() == [
                    f"gputrace capture: {proc.pid} (ze_window): window ends"]
            assert wait_gone(mark), f"pair {i}: window left open"
        # every window's file is complete (a window with nothing in it has none)
        files = list(tmp_path.glob(f"trace-{proc.pid}*.json"))
        assert len(files) >= 7, files
        for f in files:
            wait_trace(f, window_ended, "complete window", 3)
        r = capture(tmp_path, "--stop", proc.pid)
        assert r.returncode == 1 and b"no window is open" in r.stderr
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


def test_open_right_after_stop_is_taken(tmp_path):
    """`capture --stop PID` answered "window ends", then at once `capture --duration 0.1
    PID`: the open is taken (the window ends, its file is ended, then the next opens),
    not refused as if the window were still open; each window's file is complete.
    (Refused "a window is open already", rc 1, 1 in 2: the close was only taken at the
    drain's next look.)"""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    proc = start_paused(tmp_path)
    mark = tmp_path / "run" / f"{proc.pid}.window"
    try:
        assert capture(tmp_path, proc.pid).returncode == 0
        for i in range(8):
            time.sleep(0.05)
            s = gputrace_capture(tmp_path, "--stop", proc.pid)
            r = gputrace_capture(tmp_path, "--duration", "0.1", proc.pid)
            assert s.stdout.decode().splitlines() == [
                f"gputrace capture: {proc.pid} (ze_window): window ends"], s.stderr
            assert (r.returncode, r.stderr) == (0, b""), f"open {i} after --stop: {r.stderr}"
            assert r.stdout.decode().splitlines() == [
                f"gputrace capture: {proc.pid} (ze_window): window of 0.100 s"]
            # the window --stop ended, then the one of 0.1 s, each in a complete file
            for n in (2 * i + 1, 2 * i + 2):
                name = f"trace-{proc.pid}-w{n}.json" if n > 1 else f"trace-{proc.pid}.json"
                info = wait_window_file(tmp_path / name)["gputrace"]
                assert info["capture"]["window"] == n
            cap = info["capture"]
            assert 0.1e9 <= cap["end_ns"] - cap["start_ns"] <= 0.15e9, cap
            assert not mark.exists()
            if i < 7:
                assert capture(tmp_path, proc.pid).returncode == 0
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert not (tmp_path / f"trace-{proc.pid}-w17.json").exists()


def test_open_right_after_open_is_refused(tmp_path):
    """`capture PID PID` (or two captures at once): the first opens the window, the
    second finds it open and says so, rc 1, as README says of an open while one is
    open. The second was sent before the process had marked the first and printed
    "window opens" for a request that changed nothing (12 rounds in 20 here; with
    --duration it moved the window's end)."""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    proc = start_paused(tmp_path)
    opened = f"gputrace capture: {proc.pid} (ze_window): window opens (until --stop or exit)"
    refused = (f"gputrace capture: {proc.pid} (ze_window): a window is open already: "
               "nothing to open (--stop ends it)")
    try:
        for i in range(8):
            r = capture(tmp_path, proc.pid, proc.pid)
            assert (r.returncode, r.stdout.decode().splitlines(),
                    r.stderr.decode().splitlines()) == (1, [opened], [refused]), i
            assert capture(tmp_path, "--stop", proc.pid).returncode == 0
            name = f"trace-{proc.pid}-w{i + 1}.json" if i else f"trace-{proc.pid}.json"
            assert wait_window_file(tmp_path / name)["gputrace"]["capture"]["window"] == i + 1
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


# ---- ITT's __itt_resume / __itt_pause (--capture-range cudaProfilerApi) ----

@pytest.mark.parametrize("how,protocol,activities", [
    ("run", "2", None),
    ("preload", "1", "runtime,driver,kernel"),
])
def test_itt_pause_resume_ranges(tmp_path, how, protocol, activities):
    """The library is the program's ITT collector (backends/itt, INTEL_LIBITTNOTIFY64 named
    by the library itself, under gputrace run or plain LD_PRELOAD, ITT protocol 2 or 1, with
    annotations on or off); each resume/pause pair of the program is a window holding exactly
    its step (host calls and the kernel), one file each."""
    app = APPS / "ze_itt"
    for p in (ZE_SIM, app):
        need(p)
    extra = {"GPUTRACE_SUMMARY": "0", "ITT_TEST_PROTOCOL": protocol}
    if activities:
        extra["GPUTRACE_ACTIVITIES"] = activities
    env = gputrace_env(sim_env(extra))
    out = str(tmp_path / "trace-%p.json")
    if how == "run":
        # -o with %p: each process's own files (one per window) are the result
        cmd = [str(GPUTRACE), "run", "--capture-range", "cudaProfilerApi", "--capture-count",
               "0", "-o", out, "--", str(app)]
    else:
        env.update({"LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": out,
                    "GPUTRACE_CAPTURE_RANGE": "cudaProfilerApi", "GPUTRACE_CAPTURE_COUNT": "0"})
        cmd = [str(app)]
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"ze_itt: 6 steps, ITT protocol {protocol}\n".encode()
    files = sorted((p.name for p in tmp_path.glob("trace*")), key=len)
    assert len(files) == 2 and files[1] == files[0].replace(".json", "-w2.json"), files
    for n, (name, step) in enumerate(((files[0], 3), (files[1], 5)), 1):
        t = load_trace(tmp_path / name)
        info = t["gputrace"]
        assert info["capture"]["window"] == n and info["events_lost"] == 0
        lo, hi = info["capture"]["start_ns"], info["capture"]["end_ns"]
        spans = events(t, ph="X")
        assert sorted(e["name"] for e in spans) == sorted([
            "zeCommandListAppendLaunchKernel", "zeEventHostSynchronize", "zeEventHostReset",
            "step", f"capture window {n}"])
        assert {e["args"]["gx"] for e in spans if "gx" in e.get("args", {})} == {step}
        for e in spans:
            assert lo <= ns(e["ts"]) and ns(e["ts"]) + ns(e["dur"]) <= hi


@pytest.mark.parametrize("lossless", [False, True])
def test_lost_counts_of_a_thread_gone_in_window_1_stay_in_window_2(tmp_path, lossless):
    """A thread calls flat out into a 4 KiB ring (64 events, no overflow) in the first ITT
    window and exits there: its losses (or, with --lossless, its waits) are the process's
    since it started, so the second window's trailer, which loses nothing more, says the
    same counts as the first's, and so does its summary; the thread, gone before the second
    window, is listed only in the first's threads."""
    app = APPS / "ze_itt"
    for p in (ZE_SIM, app):
        need(p)
    calls = 20000 if lossless else 200000
    summary = tmp_path / "s.json"
    env = clean_env(sim_env({"GPUTRACE_BUFFER_KB": "4", "GPUTRACE_OVERFLOW_MB": "0",
                             "GPUTRACE_SUMMARY_JSON": str(summary)}))
    if lossless:
        env["GPUTRACE_LOSSLESS"] = "1"
    env.update({"LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
                "GPUTRACE_CAPTURE_RANGE": "cudaProfilerApi", "GPUTRACE_CAPTURE_COUNT": "0"})
    r = subprocess.run([str(app), "6", "0", str(calls)], env=env, capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (b"ze_itt: 6 steps, ITT protocol 2\n"
                        b"ze_itt: a thread made %d calls in step 3\n" % calls)
    # streamed: how many of the calls the drain kept up with (the first window's size, up to
    # ~30 MiB) depends on the machine
    w1 = scan_trace(tmp_path / "trace.json")["gputrace"]
    w2 = scan_trace(tmp_path / "trace-w2.json")["gputrace"]
    assert (w1["capture"]["window"], w2["capture"]["window"]) == (1, 2)
    # the thread: listed in the first window only, every call it made recorded or lost
    tids = [{t["tid"] for t in w["threads"]} for w in (w1, w2)]
    assert len(tids[0] - tids[1]) == 1 and tids[1] < tids[0]
    gone = [t for t in w1["threads"] if t["tid"] not in tids[1]][0]
    assert gone["events"] + gone["lost"] == calls
    for w in (w1, w2):
        assert w["threads_total"] == len(w["threads"])
        assert w["events_recorded"] == sum(t["events"] for t in w["threads"])
    if lossless:
        assert w1["events_lost"] == 0 and w1["lossless"]["waits"] > 0
        assert gone["events"] == calls
    else:
        assert w1["events_lost"] == gone["lost"] > 0
        assert w1["lost_by_reason"] == {"ring_full": w1["events_lost"]}
    # the second window lost nothing and waited for nothing: the counts since the start
    for key in ("events_lost", "lost_by_reason", "lossless"):
        assert w2.get(key) == w1.get(key), key
    s = json.loads(summary.read_text())  # the last window's
    assert s["lost"]["total"] == w1["events_lost"]
    if lossless:
        assert s["lossless"] == {k: w1["lossless"][k] for k in ("waits", "wait_ns")}


@pytest.mark.parametrize("per_process", [False, True])
def test_a_run_of_two_windows_is_one_process_losing_its_events_once(tmp_path, per_process):
    """gputrace run over ze_itt (two ITT windows, one process) whose thread loses events in
    the first: each window's trailer says the process's losses since it started. The run's
    one trace (merged) is one process with one GPU row and those losses (its second window
    was renumbered into a process of its own, whose pid never ran, each saying them all);
    with -o %p the summary of the two files says them once (it said twice as many)."""
    app = APPS / "ze_itt"
    for p in (ZE_SIM, app):
        need(p)
    out = tmp_path / ("t-%p.json" if per_process else "t.json")
    summary = tmp_path / "s.json"
    r = subprocess.run([str(GPUTRACE), "run", "--buffer-kb", "4", "--overflow-mb", "0",
                        "--capture-range", "cudaProfilerApi", "--capture-count", "0",
                        "--summary-json", str(summary), "-o", str(out), "--", str(app), "6",
                        "0", "200000"],
                       env=gputrace_env(sim_env()), capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    files = sorted(tmp_path.glob("t*.json"), key=lambda p: len(p.name))
    info = [scan_trace(f)["gputrace"] for f in files]
    if per_process:
        assert [i["capture"]["window"] for i in info] == [1, 2]
        lost = info[0]["events_lost"]
        assert info[1]["events_lost"] == lost
    else:
        assert len(files) == 1
        g = info[0]
        assert [i["gputrace"]["capture"]["window"] for i in g["inputs"]] == [1, 2]
        assert all(i["pid_map"] == {} for i in g["inputs"]), g["inputs"]
        assert g["host_pids"] == [g["inputs"][0]["gputrace"]["pid"]]
        lost = g["events_lost"]
    assert lost > 0
    s = json.loads(summary.read_text())
    assert s["lost"]["total"] == lost and s["lost"]["by_reason"] == {"ring_full": lost}
    assert len(s["devices"]) == 1, s["devices"]
    assert [(q["lost"], len(q["devices"])) for q in s["processes"]] == [(lost, 1)], \
        s["processes"]


# ---- gputrace run: capture --all in a multi-process run ----

HANG_APP = APPS / "ze_hang"


def run_lines(r):
    return [l for l in r.stderr.decode(errors="replace").splitlines()
            if l.startswith("gputrace") and "watchdog:" not in l]


@pytest.mark.parametrize("watchdog", [[], ["--watchdog", "1"]])
def test_run_window_inside_one_long_wait(tmp_path, watchdog):
    """ze_hang waits 1.5 s in zeCommandQueueSynchronize; the window (0.3 to 0.6 s) opens and
    closes inside that one call, which runs across both its edges and so is not recorded
    (README "The cut is exact"): no file, and the run says that, not that no process made a
    GPU call, nor (--watchdog, whose marks of the wait make the thread's ring) that a
    process could not write its trace."""
    for p in (ZE_SIM, HANG_APP):
        need(p)
    env = gputrace_env(sim_env({"GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    r = subprocess.run([str(GPUTRACE), "run", "--delay", "0.3", "--duration", "0.3"] + watchdog
                       + ["-o", str(tmp_path / "t.json"), "--", str(HANG_APP), "1500"],
                       env=env, capture_output=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert run_lines(r) == [
        "gputrace: a capture window opened, but no GPU call began and ended inside one (a call "
        "running across a window's edge, as one long wait, is not recorded): no trace written"]
    # no trace (a --watchdog report of the wait is no trace)
    assert not [f for f in tmp_path.glob("t*.json") if not f.name.endswith(".watchdog.json")]


def test_window_over_before_the_first_call_writes_no_file(tmp_path):
    """A --duration window from the start (1 us) is over before the program's first GPU
    call; with no drain thread yet, the calls made before it closes the window reach the
    rings, and are left out (after the window's end). A file was opened for them all the
    same: an empty trace ("0 spans over 0 ns"), where README "Long runs" says such a
    window writes no file. Now: none, GPUTRACE_LOG=info says why (once), and under
    gputrace run the run says no call was inside a window. A process that ends less than
    the window's grace (10 ms) after it closed (ze_window 1: one batch; any under a load
    that held the drain back past it, a CI run) ended it at its exit, unsaid."""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    for ms in (20, 1):
        r = window_run(tmp_path, [ms, BATCH], {"GPUTRACE_DURATION": "0.000001",
                                               "GPUTRACE_LOG": "info"})
        assert list(tmp_path.iterdir()) == [], r.stderr
        assert r.stderr.count(b"capture window 1 held no complete GPU call") == 1, (ms, r.stderr)
    env = gputrace_env(sim_env({"GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    r = subprocess.run([str(GPUTRACE), "run", "--duration", "0.000001", "-o",
                        str(tmp_path / "t.json"), "--", str(WINDOW_APP), "20", str(BATCH)],
                       env=env, capture_output=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert run_lines(r) == [
        "gputrace: a capture window opened, but no GPU call began and ended inside one (a call "
        "running across a window's edge, as one long wait, is not recorded): no trace written"]
    assert not list(tmp_path.glob("t*.json"))


@pytest.mark.sanitize
def test_capture_all_inside_one_gputrace_run(tmp_path):
    """gputrace run --start paused over a job of two processes; gputrace capture --all from
    another shell opens a window in each; the run's one trace holds both windows, each
    marked by its input's capture member, and nothing else."""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    env = gputrace_env(sim_env({"GPUTRACE_SUMMARY": "0",
                                "GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    job = f"{WINDOW_APP} 2500 {BATCH} & {WINDOW_APP} 2500 {BATCH}; wait"
    out = tmp_path / "trace.json"
    p = subprocess.Popen([str(GPUTRACE), "run", "--start", "paused", "-o", str(out), "--",
                          "/bin/sh", "-c", job], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    try:
        assert [p.stdout.readline() for _ in range(2)] == [b"ze_window: ready\n"] * 2
        let_threads_start()
        r = capture(tmp_path, "--duration", "0.3", "--all")
        assert r.returncode == 0, r.stderr
        # the two programs (the shell is traced too, and paused: its window records nothing)
        lines = [l for l in r.stdout.decode().splitlines() if "(ze_window)" in l]
        assert len(lines) == 2 and all(l.endswith(": window of 0.300 s") for l in lines), lines
        pids = sorted(int(l.split()[2]) for l in lines)
    finally:
        rest, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert rest.count(b"iterations=") == 2
    trace = load_trace(out)
    inputs = trace["gputrace"]["inputs"]
    assert sorted(i["gputrace"]["pid"] for i in inputs) == pids
    for i in inputs:
        info = i["gputrace"]
        assert info["capture"]["window"] == 1 and info["end"] == "window"
        hi, lo = info["capture"]["end_ns"], info["capture"]["start_ns"]
        assert 0.3e9 <= hi - lo <= 0.35e9
        assert_only_late_losses(info)
    # each window's kernels are there, on its own process's rows
    launches = events(trace, ph="X", name="zeCommandListAppendLaunchKernel")
    assert len({e["pid"] for e in launches}) == 2
    marks = [e for e in events(trace, ph="X") if e["cat"] == "gputrace"]
    assert sorted((e["name"], e["pid"]) for e in marks) == sorted(
        ("capture window 1", e["pid"]) for e in {e["pid"]: e for e in launches}.values())
    assert not (tmp_path / "trace.json.parts").exists()
    assert list((tmp_path / "run").iterdir()) == []


def test_many_nodes_recipe(tmp_path):
    """The README's 1000-rank job script (recipe_nodes.sh: two fake nodes of two ranks,
    srun a shell function, a run directory per node): each rank under its own gputrace
    run, paused; one capture --all per node reaches that node's ranks only (each once);
    every rank writes its window's file on the "shared" folder; one merge after the job
    holds them all, each process named by its rank."""
    for p in (ZE_SIM, WINDOW_APP):
        need(p)
    trace, rundir = tmp_path / "trace", tmp_path / "run"
    rundir.mkdir()
    r = subprocess.run(["/bin/sh", str(pathlib.Path(__file__).parent / "recipe_nodes.sh"),
                        str(GPUTRACE), str(trace), str(rundir), str(WINDOW_APP), "1500",
                        str(BATCH)], env=gputrace_env(sim_env()), capture_output=True, timeout=120,
                       preexec_fn=default_signals)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode().splitlines()
    assert out.count("ze_window: ready") == 4 and len([l for l in out if "iterations=" in l]) == 4
    # 4 ranks, each triggered once: with one run directory for both nodes each would be twice
    lines = [l for l in out if l.startswith("gputrace capture: ")]
    assert len(lines) == 4 and all(l.endswith("(ze_window): window of 0.300 s") for l in lines)
    pids = sorted(int(l.split()[2]) for l in lines)
    files = sorted(trace.iterdir())
    assert sorted(int(f.name.split("-")[1].split(".")[0]) for f in files) == pids
    for f in files:
        info = check_window(load_trace(f), 0.3)
        assert f.name == f"rank{info['rank']}-{info['pid']}.json"
        assert info["capture"]["window"] == 1
    merged = load_trace(tmp_path / "trace.json")
    assert sorted(i["gputrace"]["pid"] for i in merged["gputrace"]["inputs"]) == pids
    names = {e["args"]["name"] for e in events(merged, ph="M", name="process_name")}
    assert {n.split(": ")[0].split(" ", 1)[1] for n in names if n.endswith(": ze_window")} == {
        f"rank {i}" for i in range(4)}
    # the ranks withdrew their announcements, on each node
    assert sorted(p.name for p in rundir.iterdir()) == ["node0", "node1"]
    assert [list(p.iterdir()) for p in sorted(rundir.iterdir())] == [[], []]


# ---- gputrace run: no window ever opened ----

@pytest.mark.parametrize("setting,why", [
    (["--capture-range", "nvtx:stpe"],
     r'no NVTX range "stpe" was pushed \(--capture-range nvtx:stpe\)'),
    (["--capture-range", "cudaProfilerApi"],
     r"cudaProfilerStart \(or __itt_resume\) was never called "
     r"\(--capture-range cudaProfilerApi\)"),
    (["--delay", "100"], r"--delay 100 s is longer than the run \(it ended after \d+\.\d{3} s\)"),
    (["--start", "paused"], r"started with --start paused, and no gputrace capture opened one"),
])
@pytest.mark.parametrize("app", ["ze_window", "ze_window_nvtx"])
def test_run_says_no_window_opened(tmp_path, setting, why, app):
    """ze_window makes Level Zero calls all along, but no capture window ever opened: the
    run says so in one line, naming the setting (not that nothing made a GPU call), and
    writes nothing. So does ze_window_nvtx, whose NVTX range while paused made its thread's
    ring (not that it could not write a trace it never had)."""
    app = APPS / app
    for p in (ZE_SIM, app):
        need(p)
    env = gputrace_env(sim_env({"GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    r = subprocess.run([str(GPUTRACE), "run"] + setting + ["-o", str(tmp_path / "t.json"), "--",
                                                            str(app), "50", str(BATCH)],
                       env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert b"iterations=" in r.stdout
    lines = [l for l in r.stderr.decode().splitlines() if l.startswith("gputrace")]
    assert len(lines) == 1, lines
    assert re.fullmatch(f"gputrace: no capture window opened: {why}; no trace written",
                        lines[0]), lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_run_past_its_delay_not_said_shorter_than_it(tmp_path):
    """--delay 1e-9 on a program that ends in a millisecond (true: the drain thread's
    look, within about a millisecond of the window's time, comes after the end): the
    line said "--delay 1e-09 s is longer than the run (it ended after 0.000 s)". Now it
    says the run ended before the window was opened, or (the drain thread in time) that
    no GPU call was inside it."""
    env = gputrace_env({"GPUTRACE_RUN_DIR": str(tmp_path / "run")})
    for _ in range(3):
        r = subprocess.run([str(GPUTRACE), "run", "--delay", "1e-9", "-o",
                            str(tmp_path / "t.json"), "--", "true"],
                           env=env, capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        (line,) = [l for l in r.stderr.decode().splitlines() if l.startswith("gputrace")]
        assert re.fullmatch(
            r"gputrace: no capture window opened: --delay 1e-09 s: the run ended \d\.\d{4} s "
            r"after its start, before the drain thread opened the window \(within about a "
            r"millisecond\); no trace written|gputrace: a capture window opened, but no GPU "
            r"call began and ended inside one .*: no trace written", line), line


@pytest.mark.parametrize("setting,why", [
    (["--delay", "100"], "--delay: the run ended before it"),
    (["--start", "paused"], "--start paused, and no gputrace capture opened one"),
])
def test_run_ended_by_a_signal_before_any_window(tmp_path, setting, why):
    """The run is sent SIGTERM (a job's time limit) before its one window opened: its
    line says no window opened, naming the setting, not that no process made a GPU call;
    the program's end by the signal is the run's status."""
    app = APPS / "ze_hang"
    for p in (ZE_SIM, app):
        need(p)
    env = gputrace_env(sim_env({"GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    p = subprocess.Popen([str(GPUTRACE), "run"] + setting + ["-o", str(tmp_path / "t.json"),
                                                             "--", str(app), "forever"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    assert p.stdout.readline() == b"waiting\n"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == -signal.SIGTERM, err
    lines = [l for l in err.decode().splitlines() if l.startswith("gputrace")]
    assert lines == [f"gputrace: no capture window opened before the run ended ({why}): "
                     "no trace written"], lines
