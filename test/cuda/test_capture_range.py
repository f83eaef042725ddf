"""--capture-range nvtx:NAME[@DOMAIN] and --capture-count (README "Long runs"):
each matching NVTX range is one capture window with its own complete file,
holding that range and what happened inside it, and nothing else."""
import os
import pathlib
import subprocess
import time

import pytest

from conftest import (BUILD, PRELOAD, clean_env, default_signals, events, gputrace_capture,
                      gputrace_lines, load_trace, need, reaped, run, wait_trace,
                      window_ended)

APP = BUILD / "test" / "cuda" / "nvtx_steps"
HAVE_CUPTI = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include",
                          "cupti.h").exists()
pytestmark = pytest.mark.skipif(not HAVE_CUPTI, reason="CUDA backend not built (no cupti.h)")


def names(trace):
    """What the program did, in order (not gputrace's own window mark, check_window's)."""
    return [e["name"] for e in sorted(events(trace), key=lambda e: (e.get("ts", 0), -e.get("dur", 0)))
            if e.get("ph") in ("X", "i", "I") and e.get("cat") != "gputrace"]


def window_files(tmp_path):
    return sorted(tmp_path.glob("trace*.json"), key=lambda p: (len(p.name), p.name))


def check_window(trace, n):
    info = trace["gputrace"]
    assert info["complete"] and info["capture"]["window"] == n
    assert info["events_lost"] == 0
    lo, hi = info["capture"]["start_ns"], info["capture"]["end_ns"]
    for e in events(trace, ph="X"):
        assert lo <= round(e["ts"] * 1000) and round((e["ts"] + e["dur"]) * 1000) <= hi
    # the window, marked on a row of its own (tid 0): exactly its bounds
    mark = [e for e in events(trace, ph="X") if e["cat"] == "gputrace"]
    assert [(e["name"], e["tid"], round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
            for e in mark] == [(f"capture window {n}", 0, lo, hi)]


@pytest.mark.sanitize
def test_nvtx_range_windows_with_count(tmp_path):
    need(APP)
    r = run([APP, 5], tmp_path=tmp_path, env={"GPUTRACE_CAPTURE_RANGE": "nvtx:step",
                                              "GPUTRACE_CAPTURE_COUNT": "2"})
    assert r.returncode == 0, r.stderr
    assert gputrace_lines(r.stderr) == []
    files = window_files(tmp_path)
    assert [f.name for f in files] == ["trace.json", "trace-w2.json"]
    for n, f in enumerate(files, 1):
        t = load_trace(f)
        check_window(t, n)
        # the range, what it holds, and nothing else: no idle, no mark after it
        assert names(t) == ["step", f"fwd {n}", f"bwd {n}"]
        # the window opened before the range began and closed after it ended
        step = events(t, ph="X", name="step")[0]
        assert t["gputrace"]["capture"]["start_ns"] <= round(step["ts"] * 1000)


def test_nvtx_range_in_a_domain_every_one(tmp_path):
    need(APP)
    r = run([APP, 4], tmp_path=tmp_path, env={"GPUTRACE_CAPTURE_RANGE": "nvtx:capture@trainer",
                                              "GPUTRACE_CAPTURE_COUNT": "0"})
    assert r.returncode == 0, r.stderr
    files = window_files(tmp_path)
    assert [f.name for f in files] == ["trace.json"]  # only step 2 is wrapped in it
    t = load_trace(files[0])
    check_window(t, 1)
    assert sorted(names(t)) == sorted(["capture", "step", "fwd 2", "bwd 2"])
    assert events(t, ph="X", name="capture")[0]["args"]["domain"] == "trainer"


def test_nvtx_range_name_in_another_domain_does_not_match(tmp_path):
    need(APP)
    r = run([APP, 3], tmp_path=tmp_path, env={"GPUTRACE_CAPTURE_RANGE": "nvtx:capture"})
    assert r.returncode == 0, r.stderr
    assert window_files(tmp_path) == []


def test_nvtx_range_window_belongs_to_the_thread_that_opened_it(tmp_path):
    """The main thread's "step" opens the window; a "step" of another thread inside it is
    recorded, and its pop does not close the window: the main thread's pop does, after
    its own range (README: a push opens a window on the calling thread, its pop closes
    it). The next main "step" is the second window."""
    need(APP)
    r = run([APP, "threads"], tmp_path=tmp_path,
            env={"GPUTRACE_CAPTURE_RANGE": "nvtx:step", "GPUTRACE_CAPTURE_COUNT": "0"})
    assert r.returncode == 0, r.stderr
    assert gputrace_lines(r.stderr) == []
    files = window_files(tmp_path)
    assert [f.name for f in files] == ["trace.json", "trace-w2.json"]
    t = load_trace(files[0])
    check_window(t, 1)
    assert names(t) == ["step", "fwd 1", "step", "worker", "bwd 1"]
    steps = events(t, ph="X", name="step")
    assert len({e["tid"] for e in steps}) == 2
    main = [e for e in steps if e["tid"] == events(t, ph="X", name="bwd 1")[0]["tid"]]
    assert len(main) == 1 and t["gputrace"]["capture"]["end_ns"] >= round(
        (main[0]["ts"] + main[0]["dur"]) * 1000)
    t = load_trace(files[1])
    check_window(t, 2)
    assert names(t) == ["step", "fwd 2"]


def test_nvtx_range_pop_ends_only_its_own_window(tmp_path):
    """--duration 0.2 cuts the main thread's "step" (350 ms); a thread's "step" pushed at
    250 ms opens the second window, and the main thread's pop at 350 ms, inside it, does
    not end it: it lasts its 0.2 s, and holds "main-late". The ranges still open when a
    window ends are drawn up to its end, unended: the main thread's "step" in the first,
    the thread's "step" and "worker" (300 ms) in the second."""
    need(APP)
    r = run([APP, "handover"], tmp_path=tmp_path,
            env={"GPUTRACE_CAPTURE_RANGE": "nvtx:step", "GPUTRACE_CAPTURE_COUNT": "0",
                 "GPUTRACE_DURATION": "0.2"})
    assert r.returncode == 0, r.stderr
    files = window_files(tmp_path)
    assert [f.name for f in files] == ["trace.json", "trace-w2.json"]
    for n, f in enumerate(files, 1):
        t = load_trace(f)
        check_window(t, n)
        cap = t["gputrace"]["capture"]
        assert cap["end_ns"] - cap["start_ns"] == 200_000_000, f.name
        unended = [(e["name"], e["tid"], round((e["ts"] + e["dur"]) * 1000))
                   for e in events(t, ph="X", cat="user_annotation")
                   if e.get("args") == {"unended": True}]
        assert sorted(unended) == sorted(
            (name, tid, cap["end_ns"]) for name, tid in
            ([("step", t["gputrace"]["pid"])] if n == 1 else
             [("step", unended[0][1]), ("worker", unended[0][1])])), f.name
    assert unended[0][1] != t["gputrace"]["pid"]  # the thread's
    assert names(t) == ["step", "worker", "main-late"]


@pytest.mark.parametrize("after_us", [0, 300000])
def test_nvtx_ranges_ended_after_the_window_drawn_unended(tmp_path, after_us):
    """Ranges begun inside the main thread's "step" and ended after its pop: a thread's
    "across", a range of another domain and a start/end range. Each is drawn in the
    window's file up to its end, unended, whether its end comes at once (read in the
    cycle that ends the window: until 2026-12-06 it was not drawn at all) or 0.3 s later
    (read after the file was ended)."""
    need(APP)
    r = run([APP, "straddle", after_us], tmp_path=tmp_path,
            env={"GPUTRACE_CAPTURE_RANGE": "nvtx:step"})
    assert r.returncode == 0 and r.stdout == b"nvtx_steps: straddle\n", r.stderr
    (f,) = window_files(tmp_path)
    t = load_trace(f)
    check_window(t, 1)
    end = t["gputrace"]["capture"]["end_ns"]
    spans = {e["name"]: e for e in events(t, ph="X", cat="user_annotation")}
    assert sorted(spans) == ["across", "inner", "started", "step"]
    assert "unended" not in spans["step"].get("args", {})
    for name in ("across", "inner", "started"):
        e = spans[name]
        assert e["args"] == {"unended": True}, e
        assert round((e["ts"] + e["dur"]) * 1000) == end, e
    assert spans["across"]["tid"] != t["gputrace"]["pid"]  # the thread's row


def test_bad_capture_range_one_line(tmp_path):
    need(APP)
    r = run([APP, 1], tmp_path=tmp_path, env={"GPUTRACE_CAPTURE_RANGE": "nvtx:",
                                              "GPUTRACE_CAPTURE_COUNT": "many"})
    lines = gputrace_lines(r.stderr)
    assert len(lines) == 2
    assert "GPUTRACE_CAPTURE_RANGE='nvtx:'" in lines[0] and "nvtx:NAME[@DOMAIN]" in lines[0]
    assert "GPUTRACE_CAPTURE_COUNT='many'" in lines[1]
    assert r.returncode == 0
    assert "capture" not in load_trace(tmp_path / "trace.json")["gputrace"]


def test_cuda_profiler_api_ranges(tmp_path):
    """cudaProfilerStart/Stop through the shared libcudart (the fake one): each pair is a
    window holding both calls and what ran between them."""
    exe = BUILD / "test" / "cuda" / "fake_app"
    need(exe)
    r = run([exe, "profiler"], tmp_path=tmp_path,
            env={"GPUTRACE_CAPTURE_RANGE": "cudaProfilerApi", "GPUTRACE_CAPTURE_COUNT": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"fake_app: profiler ranges\n"
    files = window_files(tmp_path)
    assert [f.name for f in files] == ["trace.json", "trace-w2.json"]
    for n, f in enumerate(files, 1):
        t = load_trace(f)
        check_window(t, n)
        assert names(t) == ["cudaProfilerStart", "cudaMemsetAsync", "cudaStreamSynchronize",
                            "cudaProfilerStop"]


def test_cuda_profiler_api_count_then_untraced(tmp_path):
    exe = BUILD / "test" / "cuda" / "fake_app"
    need(exe)
    r = run([exe, "profiler"], tmp_path=tmp_path, env={"GPUTRACE_CAPTURE_RANGE": "cudaProfilerApi"})
    assert r.returncode == 0, r.stderr
    assert [f.name for f in window_files(tmp_path)] == ["trace.json"]
    check_window(load_trace(tmp_path / "trace.json"), 1)


SIM = BUILD / "cuda-sim"


def host_names(trace):
    """The CUDA API calls, in order (device work and syncs left out)."""
    return [e["name"] for e in sorted(events(trace, ph="X"), key=lambda e: e["ts"])
            if e.get("cat") in ("cuda_driver", "cuda_runtime")]


def device_records(trace):
    """CUPTI's device records in a file, in order: (name, bytes) of memsets, copies and
    kernels, (name, None) of syncs."""
    return [(e["name"], e["args"].get("bytes"))
            for e in sorted(events(trace, ph="X"), key=lambda e: e["ts"])
            if e.get("cat") in ("gpu_memset", "gpu_memcpy", "kernel", "cuda_sync")]


def profiler_window_work(n):
    """profiler_ranges' window n (its step 2n + 1): that step's memset and sync, and
    nothing of the steps run while paused."""
    return [("Memset (Device)", 1000 * (2 * n + 1)), ("Stream Sync", None)]


def profiler_exe(how):
    """profiler_ranges without libcudart (driver: what a statically linked cudart
    looks like) or with the shared one (runtime)."""
    return BUILD / "test" / "cuda" / ("profiler_drv" if how == "driver" else "profiler_rt")


def sim_cuda_env(tmp_path, exe):
    """The simulated stack for exe, CUPTI found through CUDA_HOME (as a program
    without libcudart finds it)."""
    need(exe)
    need(SIM / "libcupti.so.13")
    home = tmp_path / "cuda"
    home.mkdir()
    (home / "lib64").symlink_to(SIM)
    return {"LD_LIBRARY_PATH": str(SIM), "CUDA_HOME": str(home)}


def run_profiler_app(tmp_path, how, args, env):
    exe = profiler_exe(how)
    return run([exe, *args], tmp_path=tmp_path, env=dict(sim_cuda_env(tmp_path, exe), **env))


@pytest.mark.sanitize
@pytest.mark.parametrize("how", ["driver", "runtime"])
def test_cuda_profiler_api_ranges_on_the_simulated_stack(tmp_path, how):
    """driver: a program that has no libcudart.so (what a statically linked cudart looks
    like to gputrace: its cudaProfilerStart/Stop call the driver's) marks its ranges with
    cuProfilerStart/Stop, seen through CUPTI's driver callbacks only; CUPTI found through
    CUDA_HOME, as for such a program. runtime: the shared libcudart, interposed, whose
    markers call the driver's too: still one window per marker pair, holding both calls.
    Each window's file holds exactly its step's device work (CUPTI's records, flushed as
    the window ends), none of the steps run while paused, and nothing lost."""
    r = run_profiler_app(tmp_path, how, [], {"GPUTRACE_CAPTURE_RANGE": "cudaProfilerApi",
                                             "GPUTRACE_CAPTURE_COUNT": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"profiler_ranges: done\n"
    assert gputrace_lines(r.stderr) == []
    files = window_files(tmp_path)
    assert [f.name for f in files] == ["trace.json", "trace-w2.json"]
    want = (["cuProfilerStart", "cuMemsetD8Async", "cuStreamSynchronize", "cuProfilerStop"]
            if how == "driver" else
            ["cudaProfilerStart", "cudaMemsetAsync", "cudaStreamSynchronize", "cudaProfilerStop"])
    for n, f in enumerate(files, 1):
        t = load_trace(f)
        check_window(t, n)
        assert host_names(t) == want
        # CUPTI hands its records over when flushed: window n's device work is in
        # window n's file (flushed as the window ends), not later in none
        assert device_records(t) == profiler_window_work(n), f.name


@pytest.mark.parametrize("how", ["driver", "runtime"])
def test_nvtx_range_windows_shorter_than_their_ranges(tmp_path, how):
    """--capture-range nvtx:step with a --duration (50 ms) shorter than each "step" (200 ms):
    each range's pop comes while paused, and still ends the range. Every window's device
    work is inside one "step" only (the earlier windows' ranges are over), and each device
    row has one "step" annotation, not one more per earlier window. (With 5 ms, a loaded
    machine held the thread past the window's end before its memset or sync: 7 runs in 20
    lost that work from the window, at load 8.)"""
    r = run_profiler_app(tmp_path, how, ["nvtx-steps"], {
        "GPUTRACE_CAPTURE_RANGE": "nvtx:step", "GPUTRACE_CAPTURE_COUNT": "0",
        "GPUTRACE_DURATION": "0.05"})
    assert r.returncode == 0, r.stderr
    assert gputrace_lines(r.stderr) == []
    files = window_files(tmp_path)
    assert [f.name for f in files] == ["trace.json", "trace-w2.json", "trace-w3.json"]
    for n, f in enumerate(files, 1):
        t = load_trace(f)
        check_window(t, n)
        assert device_records(t) == [("Memset (Device)", 1000 * n), ("Stream Sync", None)]
        assert [e["args"]["ranges"] for e in events(t, ph="X")
                if e.get("cat") in ("gpu_memset", "cuda_sync")] == [["step"], ["step"]], f.name
        rows = [(e["pid"], e["tid"]) for e in events(t, ph="X", cat="gpu_user_annotation")]
        assert len(rows) == 2 and len(set(rows)) == 2, f.name


def windows_from_outside(tmp_path, exe, windows, env=None):
    """profiler_ranges, started paused, run step by step; a window opened from another
    shell (gputrace capture) before each step in windows, ended (--stop) after it, except
    one in windows that is "open": that one runs on until the process ends. Returns its
    stderr."""
    env = clean_env(dict(sim_cuda_env(tmp_path, exe), **{
        "LD_PRELOAD": PRELOAD, "GPUTRACE_START": "paused", "GPUTRACE_SUMMARY": "0",
        "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
        "GPUTRACE_RUN_DIR": str(tmp_path / "run")}, **(env or {})))
    p = subprocess.Popen([str(exe), "stdin"], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_signals)
    with reaped(p):
        assert p.stdout.readline() == b"ready\n"
        ended = 0
        for step in range(1, 7):
            if step in windows:
                assert gputrace_capture(tmp_path, p.pid).returncode == 0
                time.sleep(0.3)  # the trigger's handler, or the drain thread, opens it
            p.stdin.write(b"\n")
            p.stdin.flush()
            assert p.stdout.readline() == f"step {step}\n".encode()
            if step in windows and windows[step] != "open":
                r = gputrace_capture(tmp_path, "--stop", p.pid)
                assert r.returncode == 0, r.stderr
                ended += 1
                name = "trace.json" if ended == 1 else f"trace-w{ended}.json"
                wait_trace(tmp_path / name, window_ended, "window")
        _, err = p.communicate(timeout=60)  # it ends after step 6
    assert p.returncode == 0, err
    return err


@pytest.mark.sanitize
@pytest.mark.parametrize("how", ["driver", "runtime"])
def test_cuda_windows_from_outside_hold_their_device_work(tmp_path, how):
    """--start paused and two windows opened and ended from another shell (gputrace capture,
    --stop) around profiler_ranges' steps 3 and 5: each window's file holds its step's calls
    and exactly its device work (CUPTI flushed as its file is ended), nothing of the steps
    run while paused, nothing lost. The first window is opened by the signal handler (no
    drain thread yet), the second by the drain thread."""
    exe = profiler_exe(how)
    err = windows_from_outside(tmp_path, exe, {3: "ended", 5: "ended"})
    assert gputrace_lines(err) == []
    files = window_files(tmp_path)
    assert [f.name for f in files] == ["trace.json", "trace-w2.json"]
    want = ["cuMemsetD8Async", "cuStreamSynchronize"] if how == "driver" else \
        ["cudaMemsetAsync", "cudaStreamSynchronize"]
    for n, f in enumerate(files, 1):
        t = load_trace(f)
        check_window(t, n)
        assert host_names(t) == want
        assert device_records(t) == profiler_window_work(n), f.name


def test_cuda_records_after_their_windows_file_counted_late(tmp_path):
    """CUPTI 13.0 GA (its flush crash: gputrace flushes it at most every 10 s, not as a
    window ends): the device records of windows 1 and 2 (steps 3 and 5) come only with
    the exit's flush, inside window 3 (step 6, open until the exit). They are not written
    there and not dropped silently: counted window_late in window 3's trailer, two records
    each (a memset and its sync), and said in one line at exit though the summary is off;
    the paused steps' records count nothing."""
    exe = BUILD / "test" / "cuda" / "profiler_drv"
    err = windows_from_outside(tmp_path, exe, {3: "ended", 5: "ended", 6: "open"},
                               env={"CUDA_SIM_CUPTI_VERSION": "130000"})
    files = window_files(tmp_path)
    assert [f.name for f in files] == ["trace.json", "trace-w2.json", "trace-w3.json"]
    assert [l for l in gputrace_lines(err) if "13.0" not in l] == [
        f"gputrace: 4 events lost (window_late 4) in {files[2]}"]
    for n, f in enumerate(files[:2], 1):
        t = load_trace(f)
        check_window(t, n)
        assert device_records(t) == []  # CUPTI held them past the file's end
    info = load_trace(files[2])["gputrace"]
    assert info["capture"]["window"] == 3 and info["end"] == "exit"
    assert device_records(load_trace(files[2])) == [("Memset (Device)", 6000),
                                                    ("Stream Sync", None)]
    assert info["events_lost"] == 4
    assert {k: v for k, v in info["lost_by_reason"].items() if v} == {"window_late": 4}


@pytest.mark.parametrize("how", ["driver", "runtime"])
def test_cuda_windows_from_outside_after_an_nvtx_range_while_paused(tmp_path, how):
    """--start paused, and the program pushed and popped one NVTX range while paused (its
    thread's ring made then, with no drain thread): a window opened from outside with
    --duration still starts the drain thread with its first event, ends at its deadline
    with a complete file ("end": "window", its end_ns), while the process runs on; and a
    second trigger opens a second window, ended the same way."""
    exe = profiler_exe(how)
    env = clean_env(dict(sim_cuda_env(tmp_path, exe), **{
        "LD_PRELOAD": PRELOAD, "GPUTRACE_START": "paused", "GPUTRACE_SUMMARY": "0",
        "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
        "GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    p = subprocess.Popen([str(exe), "stdin-nvtx"], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    with reaped(p):
        assert p.stdout.readline() == b"ready\n"
        for n in (1, 2):
            r = gputrace_capture(tmp_path, "--duration", "0.3", p.pid)
            assert r.returncode == 0, r.stderr
            time.sleep(0.05)  # the handler, or the drain thread, opens it
            p.stdin.write(b"\n")
            p.stdin.flush()
            assert p.stdout.readline() == f"step {2 * n - 1}\n".encode()
            name = "trace.json" if n == 1 else f"trace-w{n}.json"
            # ended at its deadline while the process waits for its next step
            t = wait_trace(tmp_path / name, window_ended, "window")
            check_window(t, n)
            cap = t["gputrace"]["capture"]
            assert cap["end_ns"] - cap["start_ns"] == 300_000_000
            assert device_records(t) == [("Memset (Device)", 1000 * (2 * n - 1)),
                                         ("Stream Sync", None)]
            p.stdin.write(b"\n")  # a step while paused: in no window
            p.stdin.flush()
            assert p.stdout.readline() == f"step {2 * n}\n".encode()
        p.stdin.write(b"\n\n")
        p.stdin.flush()
        _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert gputrace_lines(err) == []
    assert [f.name for f in window_files(tmp_path)] == ["trace.json", "trace-w2.json"]


@pytest.mark.parametrize("how", ["driver", "runtime"])
def test_window_before_any_call_keeps_its_number(tmp_path, how):
    """--start paused, profiler_ranges waiting on stdin: window 1 opened and ended from
    outside before any step holds no GPU call (a paused process has no drain thread yet:
    the trigger's handler opened and ended it, with no file); window 2 holds step 1.
    Window 2's file was trace.json, "window": 1 (and nothing said of window 1), where a
    window with no call under a drain thread leaves its number unused (trace-w3.json
    follows trace.json). Now it is trace-w2.json, window 2, and GPUTRACE_LOG=info says
    window 1 held no call, as for the other."""
    exe = profiler_exe(how)
    env = clean_env(dict(sim_cuda_env(tmp_path, exe), **{
        "LD_PRELOAD": PRELOAD, "GPUTRACE_START": "paused", "GPUTRACE_SUMMARY": "0",
        "GPUTRACE_LOG": "info", "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
        "GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    p = subprocess.Popen([str(exe), "stdin"], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_signals)
    with reaped(p):
        assert p.stdout.readline() == b"ready\n"
        assert gputrace_capture(tmp_path, p.pid).returncode == 0
        time.sleep(0.1)
        assert gputrace_capture(tmp_path, "--stop", p.pid).returncode == 0
        assert gputrace_capture(tmp_path, p.pid).returncode == 0
        time.sleep(0.1)
        p.stdin.write(b"\n")
        p.stdin.flush()
        assert p.stdout.readline() == b"step 1\n"
        assert gputrace_capture(tmp_path, "--stop", p.pid).returncode == 0
        t = wait_trace(tmp_path / "trace-w2.json", window_ended, "window")
        p.stdin.write(b"\n" * 5)
        p.stdin.flush()
        _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    check_window(t, 2)
    assert device_records(t) == [("Memset (Device)", 1000), ("Stream Sync", None)]
    assert [f.name for f in window_files(tmp_path)] == ["trace-w2.json"]
    assert [l for l in gputrace_lines(err) if "window" in l] == [
        "gputrace: capture window 1 held no GPU call (it ended before this process made "
        "one): no file written"]


@pytest.mark.parametrize("how", ["driver", "runtime"])
def test_profiler_stop_leaves_a_window_opened_from_outside_open(tmp_path, how):
    """--capture-range cudaProfilerApi --capture-count 0, the program marks one range
    (window 1: step 1), then a window is opened from outside (gputrace capture) and the
    program starts and stops its profiler inside it: that stop ends only a window its own
    start opened (as an NVTX range's pop does), not the one opened from outside, which
    holds steps 2 and 3 and the markers until capture --stop ends it. Until 2026-12-07 the
    stop ended it once a range had opened an earlier window: step 3 was lost and capture
    --stop said no window was open (with no earlier range, it stayed open)."""
    exe = profiler_exe(how)
    env = clean_env(dict(sim_cuda_env(tmp_path, exe), **{
        "LD_PRELOAD": PRELOAD, "GPUTRACE_CAPTURE_RANGE": "cudaProfilerApi",
        "GPUTRACE_CAPTURE_COUNT": "0", "GPUTRACE_SUMMARY": "0",
        "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
        "GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    p = subprocess.Popen([str(exe), "stdin"], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_signals)

    def say(line, back):
        p.stdin.write(line)
        p.stdin.flush()
        assert p.stdout.readline() == back

    with reaped(p):
        assert p.stdout.readline() == b"ready\n"
        say(b"start\n", b"start\n")
        say(b"\n", b"step 1\n")
        say(b"stop\n", b"stop\n")
        wait_trace(tmp_path / "trace.json", window_ended, "window")
        r = gputrace_capture(tmp_path, p.pid)
        assert r.returncode == 0, r.stderr
        time.sleep(0.3)  # the drain thread opens it (at its next look)
        say(b"\n", b"step 2\n")
        say(b"start\n", b"start\n")
        say(b"stop\n", b"stop\n")
        say(b"\n", b"step 3\n")
        r = gputrace_capture(tmp_path, "--stop", p.pid)
        assert r.returncode == 0, r.stderr
        t = wait_trace(tmp_path / "trace-w2.json", window_ended, "window")
        p.stdin.write(b"\n" * 3)
        p.stdin.flush()
        _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert gputrace_lines(err) == []
    assert [f.name for f in window_files(tmp_path)] == ["trace.json", "trace-w2.json"]
    check_window(t, 2)
    start, stop = ("cuProfilerStart", "cuProfilerStop") if how == "driver" else \
        ("cudaProfilerStart", "cudaProfilerStop")
    assert [n for n in host_names(t) if "Profiler" in n] == [start, stop]
    assert device_records(t) == [("Memset (Device)", 2000), ("Stream Sync", None),
                                 ("Memset (Device)", 3000), ("Stream Sync", None)]
