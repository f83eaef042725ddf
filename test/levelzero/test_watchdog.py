"""The hang watchdog (--watchdog SEC, GPUTRACE_WATCHDOG) on the simulated Level Zero
device: a kernel waits for an event nobody signals (the spec: it never completes) and
the host waits for its queue. What a user checks: one report, soon after SEC, naming
the blocked call, its thread and the program's function that called it, with the
kernel still pending on its queue; the program is not stopped; nothing is said about
a wait that ends in time; a bad value is one line."""
import json
import os
import pathlib
import select
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import (APPS, GPUTRACE, PRELOAD, ZE_SIM, clean_env, default_signals,
                      gputrace_capture, gputrace_env, gputrace_lines, load_trace, need, run,
                      sim_env, wait_trace, window_ended)

HANG = APPS / "ze_hang"


def start_hang(tmp_path, seconds, arg="forever", extra=None):
    need(HANG)
    need(ZE_SIM)
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_WATCHDOG": seconds,
                             "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
                             "GPUTRACE_SUMMARY": "0", **(extra or {})}))
    err = open(tmp_path / "stderr", "wb")
    proc = subprocess.Popen([str(HANG), arg], env=env, stdout=subprocess.PIPE, stderr=err)
    err.close()
    # bounded: a program that hangs before its wait (a CI run did, in zeInit) fails the
    # test instead of the whole suite
    if not select.select([proc.stdout], [], [], 60)[0]:
        proc.kill()
        proc.wait()
        pytest.fail("ze_hang never reached its wait (60 s)")
    assert proc.stdout.readline() == b"waiting\n"
    return proc


def reports(tmp_path, written=True):
    """The watchdog's reports; written: only those done (one is written under a .tmp
    name, then renamed), else the ones being written too."""
    return sorted(p for p in tmp_path.iterdir()
                  if ".watchdog" in p.name and not (written and p.name.endswith(".tmp")))


def report_once(proc, tmp_path, then):
    """Wait for the report; `then` seconds later there is still one, and the
    program still runs. The program is killed at the end."""
    try:
        deadline = time.monotonic() + 20
        while not reports(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert reports(tmp_path) == [tmp_path / "trace.watchdog.json"]
        assert proc.poll() is None, "the watchdog must not stop the program"
        time.sleep(then)
        assert reports(tmp_path, written=False) == [tmp_path / "trace.watchdog.json"]
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    return json.loads((tmp_path / "trace.watchdog.json").read_text())


@pytest.mark.sanitize
def test_watchdog_reports_a_wait_that_never_ends(tmp_path):
    proc = start_hang(tmp_path, "1")
    # the same blockage is not reported again (the watchdog looks every 0.25 s)
    report = report_once(proc, tmp_path, then=1.5)
    assert report["pid"] == proc.pid
    assert report["threshold_s"] == 1
    (blocked,) = report["blocked_threads"]
    assert blocked["call"] == "zeCommandQueueSynchronize"
    assert blocked["tid"] == proc.pid and blocked["thread"] == "ze_hang"
    assert int(blocked["handle"], 16) != 0
    # written soon after the threshold, by the process's own clock
    assert 1.0 <= blocked["blocked_s"] < 2.0, blocked
    stack = blocked["stack"]
    assert "zeCommandQueueSynchronize" in stack
    caller = stack.index("wait_for_device")
    assert stack.index("zeCommandQueueSynchronize") < caller < stack.index("main"), stack
    (pending,) = report["pending"]
    assert pending["name"] == "stuck_kernel"
    assert pending["row"] == "queue 0.0" and "simulated" in pending["device"]
    assert report["pending_not_listed"] == 0
    # one line on stderr names the file
    lines = [l for l in gputrace_lines((tmp_path / "stderr").read_bytes()) if "watchdog" in l]
    assert len(lines) == 1 and lines[0].endswith("report in " + str(tmp_path / "trace.watchdog.json")), lines
    assert "zeCommandQueueSynchronize" in lines[0]
    # the trace was checkpointed with the report: killed afterwards, it holds the launch
    trace = load_trace(tmp_path / "trace.json")
    names = [e.get("name") for e in trace["traceEvents"]]
    assert "zeCommandListAppendLaunchKernel" in names
    assert "zeCommandQueueExecuteCommandLists" in names


def test_watchdog_says_its_threshold_as_given(tmp_path):
    """--watchdog 1.234: the line and the report's reason say 1.234 s, as given (they said
    1.23; and 1800 as 1.8e+03, 86400 as 8.64e+04)."""
    proc = start_hang(tmp_path, "1.234")
    report = report_once(proc, tmp_path, then=0)
    assert report["threshold_s"] == 1.234
    assert report["reason"] == "1 thread blocked in zeCommandQueueSynchronize for over 1.234 s"
    lines = [l for l in gputrace_lines((tmp_path / "stderr").read_bytes())
             if l.startswith("gputrace: watchdog:")]
    assert [l.split(";")[0] for l in lines] == ["gputrace: watchdog: " + report["reason"]]


def test_watchdog_reports_device_work_that_never_finishes(tmp_path):
    """No thread waits (the program works on), but the kernel it submitted has not
    finished for SEC: that is a hang too, reported once, with no blocked thread."""
    proc = start_hang(tmp_path, "0.5", arg="busy")
    report = report_once(proc, tmp_path, then=1.0)  # twice SEC: not reported again
    assert report["reason"] == "device work not finished for over 0.5 s (stuck_kernel)"
    assert report["blocked_threads"] == []
    (pending,) = report["pending"]
    assert pending["name"] == "stuck_kernel" and pending["row"] == "queue 0.0"
    assert pending["pending_s"] >= 0.5


def two_polled_hangs(tmp_path, extra):
    """ze_hang poll (two hangs of 2.5 s, waited on in polls) under a 0.5 s watchdog: its
    run, and the paths of its two reports, checked to be the only ones."""
    need(HANG)
    need(ZE_SIM)
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_WATCHDOG": "0.5",
                             "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
                             "GPUTRACE_SUMMARY": "0"}))
    r = subprocess.run([str(HANG), "poll", "2500"] + extra, env=env, capture_output=True,
                       timeout=60)
    assert (r.returncode, r.stdout) == (0, b"waiting\nwaiting\ndone\n"), r.stderr
    first, second = tmp_path / "trace.watchdog.json", tmp_path / "trace.watchdog.1.json"
    assert reports(tmp_path, written=False) == [second, first]
    return r, first, second


def test_watchdog_reports_a_polled_hang_once(tmp_path):
    """ze_hang poll: the stuck kernel waited for by timed waits of 0.8 s (a program that
    polls), for 2.5 s, then released; then a second stuck launch, polled the same way. One
    report per hang, each naming its own launch; the waits of a hang made again are that
    hang. Every wait longer than SEC was a report of its own (7 for the two hangs), with
    a checkpoint and, with a flight recorder, a dump each."""
    r, first, second = two_polled_hangs(tmp_path, [])
    corrs = []
    for path in (first, second):
        report = json.loads(path.read_text())
        (blocked,) = report["blocked_threads"]
        assert blocked["call"] == "zeCommandQueueSynchronize"
        (pending,) = report["pending"]
        assert pending["name"] == "stuck_kernel"
        corrs.append(pending["correlation"])
    assert corrs[0] != corrs[1]
    lines = [l for l in gputrace_lines(r.stderr) if l.startswith("gputrace: watchdog:")]
    assert [l.rsplit(" ", 1)[1] for l in lines] == [str(first), str(second)], lines


def test_watchdog_reports_a_hang_waited_for_late_once(tmp_path):
    """ze_hang poll, each hang's first wait begun 0.25 s after its submission (a loaded
    machine held the program that long): still one report per hang, naming its stuck
    launch, and the blocked thread where its wait had begun when the work was SEC old (the
    report then waits for the wait to reach SEC). The work was reported first, as device
    work not finished with no thread blocked, and the thread's wait on it again: four
    reports for the two hangs (test_watchdog_reports_a_polled_hang_once under load)."""
    r, first, second = two_polled_hangs(tmp_path, ["250"])
    corrs = []
    for path in (first, second):
        report = json.loads(path.read_text())
        # which came first on a loaded machine: the wait's SEC, or the work's with no wait
        assert report["reason"] in (
            "1 thread blocked in zeCommandQueueSynchronize for over 0.5 s",
            "device work not finished for over 0.5 s (stuck_kernel)"), report["reason"]
        assert len(report["blocked_threads"]) == report["reason"].startswith("1 thread")
        (pending,) = report["pending"]
        assert pending["name"] == "stuck_kernel"
        corrs.append(pending["correlation"])
    assert corrs[0] != corrs[1]


def test_watchdog_names_the_call_of_the_thread_newly_blocked(tmp_path):
    """ze_hang two: a thread blocked in zeEventHostSynchronize is reported; 1.5 s later
    the main thread blocks in zeCommandQueueSynchronize too: its report's line names that
    call, the new hang (it named the first thread's, listed first, again)."""
    proc = start_hang(tmp_path, "0.5", arg="two")
    second = tmp_path / "trace.watchdog.1.json"
    try:
        deadline = time.monotonic() + 20
        while not second.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    first = json.loads((tmp_path / "trace.watchdog.json").read_text())
    assert first["reason"] == "1 thread blocked in zeEventHostSynchronize for over 0.5 s"
    report = json.loads(second.read_text())
    assert report["reason"] == "2 threads blocked in zeCommandQueueSynchronize for over 0.5 s"
    assert sorted(b["call"] for b in report["blocked_threads"]) == [
        "zeCommandQueueSynchronize", "zeEventHostSynchronize"]
    lines = [l for l in gputrace_lines((tmp_path / "stderr").read_bytes())
             if l.startswith("gputrace: watchdog:")]
    assert [l.split(";")[0] for l in lines] == ["gputrace: watchdog: " + first["reason"],
                                                "gputrace: watchdog: " + report["reason"]]


def test_watchdog_quiet_when_the_wait_ends_in_time(tmp_path):
    proc = start_hang(tmp_path, "3", arg="1500")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out == b"done\n"
    assert reports(tmp_path, written=False) == []
    assert not [l for l in gputrace_lines((tmp_path / "stderr").read_bytes()) if "watchdog" in l]
    trace = load_trace(tmp_path / "trace.json")
    (sync,) = [e for e in trace["traceEvents"] if e.get("name") == "zeCommandQueueSynchronize"]
    assert sync["dur"] >= 1400e3  # it did wait, 1.5 s, under the 3 s threshold


@pytest.mark.parametrize("value", ["soon", "0.05", "-1", "1.2345", "86401"])
def test_watchdog_bad_value_is_one_line(tmp_path, value):
    need(HANG)
    r = run([HANG, "20"], env=sim_env({"GPUTRACE_WATCHDOG": value}), tmp_path=tmp_path)
    assert r.returncode == 0 and r.stdout == b"waiting\ndone\n"
    (line,) = gputrace_lines(r.stderr)
    assert f"GPUTRACE_WATCHDOG='{value}' is not valid" in line
    assert "seconds from 0.1 to 86400" in line
    tool = subprocess.run([str(GPUTRACE), "run", "--watchdog", value, "--",
                           "true"], env=gputrace_env(), capture_output=True)
    assert tool.returncode == 2
    assert tool.stderr.decode().splitlines()[0] == (
        f"gputrace: --watchdog '{value}' is not valid: expected off or 0, or seconds from 0.1 "
        "to 86400 (to the millisecond, e.g. 30 or 2.5)")


def check_stuck_launch_dump(path, reason, report):
    """A flight recorder dump taken while the program hangs: complete, and it holds the
    launch of the kernel that never finishes (the report's pending correlation)."""
    t = load_trace(path)
    fr = t["gputrace"]["flight_recorder"]
    assert t["gputrace"]["complete"] is True and fr["reason"] == reason
    (launch,) = [e for e in t["traceEvents"]
                 if e["ph"] == "X" and e["name"] == "zeCommandListAppendLaunchKernel"]
    assert launch["args"]["kernel"] == "stuck_kernel"
    # ... and the submission the report names as the pending kernel's (its correlation)
    (pending,) = report["pending"]
    (submit,) = [e for e in t["traceEvents"]
                 if e["ph"] == "X" and e["name"] == "zeCommandQueueExecuteCommandLists"]
    assert submit["args"]["correlation"] == pending["correlation"]
    assert submit["ts"] > launch["ts"]
    assert fr["events_kept"] + fr["events_aged_out"] == t["gputrace"]["events_recorded"]


@pytest.mark.sanitize
def test_watchdog_report_names_the_flight_recorder_window(tmp_path):
    proc = start_hang(tmp_path, "1", extra={"GPUTRACE_FLIGHT_RECORDER": "30s"})
    report = report_once(proc, tmp_path, then=0.5)
    path = tmp_path / "trace.json"
    assert report["flight_recorder"] == str(path)
    check_stuck_launch_dump(path, "watchdog", report)
    lines = [l for l in gputrace_lines((tmp_path / "stderr").read_bytes()) if "watchdog" in l]
    assert len(lines) == 2, lines
    assert lines[0].startswith("gputrace: flight recorder (watchdog): ")
    assert lines[1].endswith(f"report in {tmp_path / 'trace.watchdog.json'}, flight recorder "
                             f"window in {path}"), lines
    # with the recorder off the report says so (the other tests): null
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "stderr", "trace.json", "trace.watchdog.json"]


def test_watchdog_dump_holds_the_stuck_launch_with_a_window_shorter_than_sec(tmp_path):
    """--watchdog 1.5 with --flight-recorder 0.5s (as 300 with 30s): the report comes 1.5 s
    into the hang, and its dump's window is the 0.5 s before the hang began, and all since:
    it holds the launch and the submission of the stuck kernel. It was the 0.5 s before the
    report, which held 0 events: the calls had aged out."""
    proc = start_hang(tmp_path, "1.5", extra={"GPUTRACE_FLIGHT_RECORDER": "0.5s"})
    report = report_once(proc, tmp_path, then=0)
    path = tmp_path / "trace.json"
    assert report["flight_recorder"] == str(path)
    check_stuck_launch_dump(path, "watchdog", report)
    t = load_trace(path)
    (mark,) = [e for e in t["traceEvents"] if e.get("cat") == "gputrace"]
    (pending,) = report["pending"]
    # the window: the 0.5 s before the stuck kernel's submission, up to the dump
    assert abs(mark["ts"] - (pending["submitted_us"] - 0.5e6)) < 1, (mark, pending)
    assert mark["ts"] + mark["dur"] >= report["time_us"]


def test_watchdog_report_under_run_names_the_runs_trace(tmp_path):
    """Under gputrace run the flight recorder's window is written into the process's
    part (OUT.parts/), which the run merges into OUT and removes: the report and its line
    name OUT, where the window is then (they named the part, gone by the run's end)."""
    need(HANG)
    need(ZE_SIM)
    out = tmp_path / "hang.json"
    err = open(tmp_path / "stderr", "wb")
    proc = subprocess.Popen([str(GPUTRACE), "run", "--watchdog", "1", "--flight-recorder", "30s",
                             "--no-summary", "-o", str(out), "--", str(HANG), "forever"],
                            env=gputrace_env(sim_env({"GPUTRACE_RUN_DIR": str(tmp_path / "run")})),
                            stdout=subprocess.PIPE, stderr=err, preexec_fn=default_signals)
    err.close()
    report_file = None
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not report_file:
            found = sorted(tmp_path.glob("hang.*.watchdog.json"))
            report_file = found[0] if found else None
            time.sleep(0.05)
        assert report_file, sorted(p.name for p in tmp_path.iterdir())
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    report = json.loads(report_file.read_text())
    assert report["flight_recorder"] == str(out)
    assert out.exists() and not (tmp_path / "hang.json.parts").exists()
    lines = [l for l in gputrace_lines((tmp_path / "stderr").read_bytes()) if "watchdog" in l]
    assert any(l.endswith(f"report in {report_file}, flight recorder window in {out}")
               for l in lines), lines


def wait_complete(path):
    wait_trace(path, lambda g: g.get("complete"), "complete trace")


@pytest.mark.sanitize
@pytest.mark.parametrize("capture_signal", [None, "RTMAX-1"])
def test_watchdog_and_capture_trigger_in_one_process(tmp_path, capture_signal):
    """The watchdog's unwind signal is never the capture trigger's, even where the trigger
    is the signal the watchdog would take first (RTMAX-1): both work in one hung process."""
    extra = {"GPUTRACE_FLIGHT_RECORDER": "30s", "GPUTRACE_RUN_DIR": str(tmp_path / "run")}
    if capture_signal:
        extra["GPUTRACE_CAPTURE_SIGNAL"] = capture_signal
    proc = start_hang(tmp_path, "1", extra=extra)
    try:
        c = gputrace_capture(tmp_path, "--dump", proc.pid)
        assert c.returncode == 0, c.stderr
        wait_complete(tmp_path / "trace.json")
        deadline = time.monotonic() + 20
        while not reports(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        report = json.loads((tmp_path / "trace.watchdog.json").read_text())
        # the trigger still reaches the process after the watchdog took its signal
        c = gputrace_capture(tmp_path, "--dump", "--all")
        assert c.returncode == 0, c.stderr
        wait_complete(tmp_path / "trace.2.json")
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    (blocked,) = report["blocked_threads"]
    assert "wait_for_device" in blocked["stack"], blocked  # unwound: the signal was ours
    assert report["flight_recorder"] == str(tmp_path / "trace.1.json")
    check_stuck_launch_dump(tmp_path / "trace.json", "capture --dump", report)
    check_stuck_launch_dump(tmp_path / "trace.1.json", "watchdog", report)
    check_stuck_launch_dump(tmp_path / "trace.2.json", "capture --dump", report)
    err = (tmp_path / "stderr").read_bytes().decode()
    assert "steps aside" not in err and "already has a handler" not in err, err


# ---- with capture windows: the watchdog watches in every window, and between them ----

def blocked_in_sync(report):
    """The one blocked thread: in the queue's synchronize called by wait_for_device,
    reported soon after the 1 s threshold."""
    (blocked,) = report["blocked_threads"]
    assert blocked["call"] == "zeCommandQueueSynchronize"
    assert "wait_for_device" in blocked["stack"], blocked
    assert 1.0 <= blocked["blocked_s"] < 3.0, blocked


def wait_report(tmp_path, name, timeout=20):
    deadline = time.monotonic() + timeout
    while not (tmp_path / name).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert reports(tmp_path) == [tmp_path / name], reports(tmp_path)
    return json.loads((tmp_path / name).read_text())


@pytest.mark.sanitize
def test_watchdog_with_delay(tmp_path):
    """--delay starts the process paused (its drain thread with it, which once started
    a watchdog that quit at once, paused): the program hangs before the window opens, at
    0.5 s, and is still blocked in it; the watchdog reports it."""
    proc = start_hang(tmp_path, "1", extra={"GPUTRACE_DELAY": "0.5"})
    try:
        report = wait_report(tmp_path, "trace.watchdog.json")
        assert proc.poll() is None, "the watchdog must not stop the program"
    finally:
        proc.kill()
        proc.wait()
    blocked_in_sync(report)


@pytest.mark.sanitize
@pytest.mark.parametrize("closed", [False, True], ids=["in-window", "window-closed"])
def test_watchdog_in_a_second_capture_window(tmp_path, closed):
    """--start paused, two windows from `gputrace capture`: the first records a kernel
    that finishes, the second the hang. The watchdog reports it in the second window;
    closed: the second window ends before SEC has passed, and the wait that began in it,
    still blocked, is reported all the same (README: the watchdog runs between windows)."""
    need(HANG)
    need(ZE_SIM)
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_WATCHDOG": "1",
                             "GPUTRACE_START": "paused",
                             "GPUTRACE_RUN_DIR": str(tmp_path / "run"),
                             "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
                             "GPUTRACE_SUMMARY": "0"}))
    err = open(tmp_path / "stderr", "wb")
    proc = subprocess.Popen([str(HANG), "stdin"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=err)
    err.close()

    def say(line, answer):
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == answer

    try:
        assert proc.stdout.readline() == b"ready\n"
        # window 1: a kernel that finishes; its file ends complete
        assert gputrace_capture(tmp_path, proc.pid).returncode == 0
        time.sleep(0.1)
        say(b"ok", b"ok\n")
        assert gputrace_capture(tmp_path, "--stop", proc.pid).returncode == 0
        wait_trace(tmp_path / "trace.json", window_ended, "window 1")
        time.sleep(1.5)  # longer than SEC: paused, with nothing blocked, nothing is said
        assert reports(tmp_path, written=False) == []
        # window 2: the hang
        assert gputrace_capture(tmp_path, proc.pid).returncode == 0
        time.sleep(0.1)
        say(b"ok", b"ok\n")
        say(b"hang", b"waiting\n")
        if closed:
            assert gputrace_capture(tmp_path, "--stop", proc.pid).returncode == 0
            w2 = wait_trace(tmp_path / "trace-w2.json", window_ended, "window 2")
        report = wait_report(tmp_path, "trace-w2.watchdog.json")
        assert proc.poll() is None, "the watchdog must not stop the program"
        if not closed:
            # checkpointed with the report: the window's file holds the stuck launch (read
            # as its checkpoints are: the same bytes twice)
            w2 = wait_trace(tmp_path / "trace-w2.json", lambda g: True, "window 2 checkpoint")
    finally:
        proc.kill()
        proc.wait()
    blocked_in_sync(report)
    (pending,) = report["pending"]
    assert pending["name"] == "stuck_kernel"
    kernels = [e["args"]["kernel"] for e in w2["traceEvents"]
               if e.get("name") == "zeCommandListAppendLaunchKernel"]
    assert "stuck_kernel" in kernels
    assert w2["gputrace"]["capture"]["window"] == 2
    lines = [l for l in gputrace_lines((tmp_path / "stderr").read_bytes()) if "watchdog" in l]
    assert len(lines) == 1 and lines[0].endswith(str(tmp_path / "trace-w2.watchdog.json")), lines


def hang_runs(tmp_path, argv_list, env=None):
    """Start each argv at once in tmp_path (a 1 s wait, watched at 0.3 s); their results."""
    need(HANG)
    need(ZE_SIM)
    procs = [subprocess.Popen([str(a) for a in argv], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              preexec_fn=default_signals) for argv in argv_list]
    return [(p, *p.communicate(timeout=60)) for p in procs]


@pytest.mark.parametrize("tmpdir", [None, "tmp"])
def test_watchdog_report_of_a_run_into_a_pipe(tmp_path, tmpdir):
    """-o /dev/stdout: the report goes into the folder the run started in, under the
    program's name; the trace reaches the pipe whole. The report went into the run's
    private parts folder, was taken for a trace, and the trace never came out. With
    TMPDIR=tmp (relative) too: the report went into tmp/gputrace-run-XXX/parts/ and was
    removed with it, the line naming a file that was gone."""
    env = {"GPUTRACE_RUN_DIR": str(tmp_path / "run")}
    if tmpdir:
        (tmp_path / tmpdir).mkdir()
        env["TMPDIR"] = tmpdir
    ((p, out, err),) = hang_runs(tmp_path, [[GPUTRACE, "run", "--no-summary", "--watchdog",
                                             "0.3", "-o", "/dev/stdout", "--", HANG, "1000"]],
                                 env=gputrace_env(sim_env(env)))
    assert p.returncode == 0, err
    trace = json.loads(out[out.index(b"{"):])
    assert any(e.get("name") == "zeCommandQueueSynchronize" for e in trace["traceEvents"])
    (report,) = tmp_path.glob("gputrace-ze_hang-*.watchdog.json")
    assert json.loads(report.read_text())["blocked_threads"][0]["call"] == \
        "zeCommandQueueSynchronize"
    assert gputrace_lines(err) == [
        f"gputrace: watchdog: 1 thread blocked in zeCommandQueueSynchronize for over 0.3 s; "
        f"report in {report}"], err


def test_watchdog_report_beside_a_trace_under_dev_shm(tmp_path):
    """A trace in a folder under /dev (/dev/shm, a tmpfs: where a job puts node-local
    files) is a file in a folder, not a device: its report goes beside it. Every path
    under /dev/ was taken for a device or a pipe, and the report went to the folder the
    process started in, under the program's name."""
    shm = pathlib.Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK | os.X_OK)):
        pytest.skip("no writable /dev/shm")
    folder = pathlib.Path(tempfile.mkdtemp(prefix="gputrace-test-", dir=shm))
    try:
        env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_WATCHDOG": "0.3",
                                 "GPUTRACE_OUTPUT": str(folder / "trace.json"),
                                 "GPUTRACE_SUMMARY": "0"}))
        ((p, _, err),) = hang_runs(tmp_path, [[HANG, "1000"]], env=env)
        assert p.returncode == 0, err
        assert sorted(f.name for f in folder.iterdir()) == ["trace.json",
                                                           "trace.watchdog.json"], err
        assert not list(tmp_path.glob("*.watchdog.json"))
        assert gputrace_lines(err) == [
            "gputrace: watchdog: 1 thread blocked in zeCommandQueueSynchronize for over 0.3 s; "
            f"report in {folder / 'trace.watchdog.json'}"], err
    finally:
        shutil.rmtree(folder)


def test_watchdog_reports_of_two_runs_into_one_name(tmp_path):
    """Two runs at once with one -o (two ranks): each gets its trace (the second
    job.1.json, its parts in job.json.parts.2/) and its report; the report in
    job.json.parts.2/ was taken for a trace and that run's trace never made."""
    env = gputrace_env(sim_env({"GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    runs = hang_runs(tmp_path, [[GPUTRACE, "run", "--no-summary", "--watchdog", "0.3", "-o",
                                 "job.json", "--", HANG, "1000"]] * 2, env=env)
    assert [p.returncode for p, _, _ in runs] == [0, 0], [e for _, _, e in runs]
    names = sorted(p.name for p in tmp_path.iterdir() if p.name != "run")
    traces = [n for n in names if not n.endswith(".watchdog.json")]
    assert traces == ["job.1.json", "job.json"], names
    assert len([n for n in names if n.endswith(".watchdog.json")]) == 2, names
    for t in traces:
        load_trace(tmp_path / t)


def test_watchdog_reports_of_processes_sharing_a_trace_name(tmp_path):
    """Two processes given one trace name: trace.json and trace.1.json, each with its
    report named after it, never one report over the other."""
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_WATCHDOG": "0.3",
                             "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
                             "GPUTRACE_SUMMARY": "0"}))
    runs = hang_runs(tmp_path, [[HANG, "1000"]] * 2, env=env)
    assert [p.returncode for p, _, _ in runs] == [0, 0]
    for name in ("trace", "trace.1"):
        pid = load_trace(tmp_path / f"{name}.json")["gputrace"]["pid"]
        assert json.loads((tmp_path / f"{name}.watchdog.json").read_text())["pid"] == pid
    assert len(reports(tmp_path)) == 2


def test_merge_skips_a_watchdog_report_a_glob_took(tmp_path):
    """`gputrace merge -o all.json dir/*.json` with a report among the traces (the
    README's recipe for ranks): the report is skipped with a note, the traces merged.
    The merge stopped: "not a readable trace"."""
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_WATCHDOG": "0.3",
                             "GPUTRACE_OUTPUT": str(tmp_path / "rank0.json"),
                             "GPUTRACE_SUMMARY": "0"}))
    ((p, _, _),) = hang_runs(tmp_path, [[HANG, "1000"]], env=env)
    assert p.returncode == 0
    inputs = sorted(tmp_path.glob("*.json"))
    assert [i.name for i in inputs] == ["rank0.json", "rank0.watchdog.json"]
    m = subprocess.run([str(GPUTRACE), "merge", "-o", str(tmp_path / "all.json")] +
                       [str(i) for i in inputs], env=gputrace_env(), capture_output=True)
    assert m.returncode == 0, m.stderr
    assert gputrace_lines(m.stderr)[0] == \
        f"gputrace merge: {inputs[1]}: a gputrace watchdog report, not a trace: skipped"
    merged = load_trace(tmp_path / "all.json")
    assert len(merged["gputrace"]["inputs"]) == 1


def test_run_never_takes_a_watchdog_report_in_its_parts_for_a_trace(tmp_path):
    """A report in the run's parts folder (a library that put it beside its part) is
    no trace of the run: the run's trace is the process's, with no note about it.
    It was taken: merged away with a note, or, alone, handed on as the trace."""
    need(HANG)
    need(ZE_SIM)
    report = json.dumps({"gputrace_watchdog": 1, "pid": 1, "blocked_threads": []})
    # a part of the run (its processes' folder): beside the part of this shell
    script = ('d=$(dirname "$GPUTRACE_OUTPUT"); printf %s "$R" > "$d/x-1.watchdog.json"; '
              'printf %s "$R" > "$d/x-2.watchdog.3.json"; exec "$@"')
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o", str(tmp_path / "t.json"),
                        "--", "sh", "-c", script, "sh", str(HANG), "1"],
                       cwd=tmp_path, env=gputrace_env(sim_env({"R": report})),
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert gputrace_lines(r.stderr) == [], r.stderr
    trace = load_trace(tmp_path / "t.json")
    assert any(e.get("name") == "zeCommandQueueSynchronize" for e in trace["traceEvents"])


def test_watchdog_report_it_could_not_write_names_the_file(tmp_path):
    """A report that cannot be written (here: the folder the process started in, where
    the report of a trace into a device goes, was removed meanwhile) is said in one
    line that names the file tried and why, so the user knows which folder to fix. The
    line said only the reason ("could not write the report: No such file or
    directory")."""
    need(HANG)
    need(ZE_SIM)
    gone = tmp_path / "gone"
    gone.mkdir()
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_WATCHDOG": "0.3",
                             "GPUTRACE_OUTPUT": "/dev/null", "GPUTRACE_SUMMARY": "0"}))
    err = open(tmp_path / "stderr", "wb")
    proc = subprocess.Popen([str(HANG), "1000"], env=env, cwd=gone, stdout=subprocess.PIPE,
                            stderr=err)
    err.close()
    try:
        assert select.select([proc.stdout], [], [], 60)[0], "ze_hang never reached its wait"
        assert proc.stdout.readline() == b"waiting\n"
        gone.rmdir()  # within the 0.3 s before the report
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and out == b"done\n"
    assert gputrace_lines((tmp_path / "stderr").read_bytes()) == [
        "gputrace: watchdog: 1 thread blocked in zeCommandQueueSynchronize for over 0.3 s; "
        f"could not write the report '{gone}/gputrace-ze_hang-{proc.pid}.watchdog.json': "
        "No such file or directory"]


def test_watchdog_watches_on_after_the_trace_could_not_be_written(tmp_path):
    """A trace that could not be written (a full disk: /dev/full) stops tracing; the
    hang watchdog watches on, until the process ends: a wait that began after the
    failure, on work submitted after it, is reported (in the folder the process started
    in, the trace having no folder), with its pending kernel. The watchdog's thread
    stopped with the trace, and the hang went unreported."""
    need(HANG)
    need(ZE_SIM)
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_WATCHDOG": "0.3",
                             "GPUTRACE_OUTPUT": "/dev/full", "GPUTRACE_SUMMARY": "0"}))
    err = tmp_path / "stderr"
    with open(err, "wb") as f:
        proc = subprocess.Popen([str(HANG), "stdin"], env=env, cwd=tmp_path,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=f)
    failed = "gputrace: cannot write the trace to '/dev/full': No space left on device; " \
             "tracing stops, the program goes on"
    report = tmp_path / f"gputrace-ze_hang-{proc.pid}.watchdog.json"
    try:
        assert select.select([proc.stdout], [], [], 60)[0], "ze_hang never started"
        assert proc.stdout.readline() == b"ready\n"
        deadline = time.monotonic() + 20
        while failed not in gputrace_lines(err.read_bytes()) and time.monotonic() < deadline:
            proc.stdin.write(b"ok\n")  # calls after which the drain writes
            proc.stdin.flush()
            assert proc.stdout.readline() == b"ok\n"
            time.sleep(0.05)
        assert gputrace_lines(err.read_bytes()) == [failed]
        proc.stdin.write(b"hang\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == b"waiting\n"
        deadline = time.monotonic() + 20
        while not report.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the watchdog must not stop the program"
    finally:
        proc.kill()
        proc.wait()
    r = json.loads(report.read_text())
    (blocked,) = r["blocked_threads"]
    assert blocked["call"] == "zeCommandQueueSynchronize" and "wait_for_device" in blocked["stack"]
    (pending,) = r["pending"]
    assert pending["name"] == "stuck_kernel" and pending["row"] == "queue 0.0"
    assert gputrace_lines(err.read_bytes()) == [
        failed, "gputrace: watchdog: 1 thread blocked in zeCommandQueueSynchronize for over "
                f"0.3 s; report in {report}"]


def test_watchdog_after_a_failed_trace_lets_the_program_exit(tmp_path):
    """After the trace failed, the watchdog watching on does not hold the exit: the wait
    ends, the program exits 0 as untraced, its report written."""
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_WATCHDOG": "0.3",
                             "GPUTRACE_OUTPUT": "/dev/full", "GPUTRACE_SUMMARY": "0"}))
    ((p, out, err),) = hang_runs(tmp_path, [[HANG, "1000"]], env=env)
    assert p.returncode == 0 and out == b"waiting\ndone\n", err
    lines = gputrace_lines(err)
    assert lines[0].startswith("gputrace: cannot write the trace to '/dev/full'"), lines
    assert len(lines) == 2 and lines[1].startswith("gputrace: watchdog: "), lines
    assert len(list(tmp_path.glob("gputrace-ze_hang-*.watchdog.json"))) == 1


@pytest.mark.parametrize("recorder", [None, "2s"])
def test_watchdog_report_under_way_at_exit_is_finished(tmp_path, recorder):
    """ze_hang exit: the program exits while the watchdog writes its report (the moment it
    asks the blocked thread, whose signals are blocked, for its stack: 0.2 s go by before it
    gives up). The exit waits for the report: its file and its line are there, the trace
    whole, the status 0. The process ended mid-report: no file, no line, and with the flight
    recorder on stderr said the dump "(watchdog)" and nothing of its report (a busy program
    exiting about 2 s into a hang did so)."""
    need(HANG)
    need(ZE_SIM)
    extra = {"GPUTRACE_FLIGHT_RECORDER": recorder} if recorder else {}
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_WATCHDOG": "0.3",
                             "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
                             "GPUTRACE_SUMMARY": "0", **extra}))
    p = subprocess.run([str(HANG), "exit"], env=env, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == b"waiting\nexiting\n", p.stderr
    report = tmp_path / "trace.watchdog.json"
    lines = gputrace_lines(p.stderr)
    said = f"gputrace: watchdog: 1 thread blocked in zeEventHostSynchronize for over 0.3 s; " \
           f"report in {report}"
    if recorder:
        trace = tmp_path / "trace.json"
        assert len(lines) == 2 and lines[0].startswith("gputrace: flight recorder (watchdog): ")
        assert lines[1] == said + f", flight recorder window in {trace}", lines
    else:
        assert lines == [said]
    r = json.loads(report.read_text())
    (blocked,) = r["blocked_threads"]
    assert blocked["call"] == "zeEventHostSynchronize"
    assert blocked["no_stack"] == "the thread did not answer (signal blocked?)"
    assert r["flight_recorder"] == (str(tmp_path / "trace.json") if recorder else None)
    load_trace(tmp_path / "trace.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.json", "trace.watchdog.json"]
