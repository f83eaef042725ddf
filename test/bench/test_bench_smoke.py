"""The benchmark programs and harness keep working: each program runs once at
a tiny size and its report line is read back; nothing is timed or compared
(make bench measures, make test does not)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import (BUILD, LIB, ROOT, ZE_SIM, clean_env, count_events, events, load_trace, need,
                      scan_trace, sim_env)

BIN = BUILD / "test" / "bench"
HAVE_ZE = os.path.exists("/usr/include/level_zero/ze_api.h")
# Under a sanitizer the preloaded runtime differs and timings mean nothing: the
# plain build is what make bench measures.
pytestmark = pytest.mark.skipif(bool(os.environ.get("SANITIZE")),
                                reason="benchmarks run in the plain build only")


def report(stdout):
    """The bench= line as a dict."""
    lines = [l for l in stdout.decode().splitlines() if l.startswith("bench=")]
    assert len(lines) == 1, stdout
    return dict(kv.split("=", 1) for kv in lines[0].split())


def run(cmd, env=None, timeout=60):
    proc = subprocess.run([str(c) for c in cmd], env=clean_env(env), capture_output=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc


def test_floor_reports_its_calls():
    need(BIN / "bench_floor")
    for clock in ("raw", "tsc"):
        r = report(run([BIN / "bench_floor", 3000, 1000, 0, clock]).stdout)
        assert r["bench"] == ("floor" if clock == "raw" else "floor_tsc")
        assert int(r["calls"]) == 3000
        assert float(r["wall_ns"]) > 0


def test_floor_rejects_an_unknown_clock():
    need(BIN / "bench_floor")
    proc = subprocess.run([str(BIN / "bench_floor"), "10", "10", "0", "hpet"],
                          capture_output=True)
    assert proc.returncode == 1
    assert b"use raw or tsc" in proc.stderr


def test_core_emit_records_every_call(tmp_path):
    need(BIN / "bench_core")
    trace = tmp_path / "emit.json"
    r = report(run([BIN / "bench_core", "emit", trace, 2, 500, 100, 1000]).stdout)
    assert (r["bench"], r["threads"], r["calls"], r["dropped"]) == ("emit", "2", "1000", "0")
    t = load_trace(trace)
    # 100 warm-up calls per thread, then the measured ones
    assert len(events(t, ph="X", name="zeDriverGetApiVersion")) == 2 * (500 + 100)
    assert t["gputrace"]["events_lost"] == 0


@pytest.mark.parametrize("ext", [".json", ".json.gz"])
def test_core_drain_writes_the_events(tmp_path, ext):
    need(BIN / "bench_core")
    trace = tmp_path / ("drain" + ext)
    r = report(run([BIN / "bench_core", "drain", trace, 2, 2000, 2]).stdout)
    assert (r["bench"], r["events"], r["rounds"]) == ("drain", "2000", "2")
    assert int(r["round_bytes"]) > 0
    assert not (tmp_path / ("drain" + ext + ".raw")).exists()
    t = load_trace(trace)
    # a priming event, then two rounds of 2000 spans over the 8 names
    spans = events(t, ph="X", cat="ze_api")
    assert len(spans) == 1 + 2 * 2000
    assert t["gputrace"]["events_recorded"] == 1 + 2 * 2000


@pytest.mark.skipif(not HAVE_ZE, reason="no Level Zero headers")
def test_ze_calls_untraced_and_traced(tmp_path):
    need(BIN / "bench_ze")
    need(ZE_SIM)
    cmd = [BIN / "bench_ze", "calls", 2, 300, 100, 100]
    r = report(run(cmd, sim_env()).stdout)
    assert (r["bench"], r["threads"], r["calls"]) == ("calls", "2", "600")
    trace = tmp_path / "calls.json"
    env = sim_env({"LD_PRELOAD": str(LIB), "GPUTRACE_OUTPUT": str(trace),
                   "GPUTRACE_SUMMARY": "0"})
    r = report(run(cmd, env).stdout)
    assert r["calls"] == "600"
    t = load_trace(trace)
    # 100 warm-up calls per thread plus the measured 300
    assert len(events(t, ph="X", name="zeDriverGetApiVersion")) == 2 * 400
    assert t["gputrace"]["events_lost"] == 0


@pytest.mark.skipif(not HAVE_ZE, reason="no Level Zero headers")
@pytest.mark.parametrize("kind", ["regular", "immediate"])
def test_ze_launches_untraced_and_traced(tmp_path, kind):
    need(BIN / "bench_ze")
    cmd = [BIN / "bench_ze", "launch", kind, 40, 8]
    r = report(run(cmd, sim_env()).stdout)
    assert (r["bench"], r["calls"]) == ("launch_" + kind, "40")
    trace = tmp_path / "launch.json"
    env = sim_env({"LD_PRELOAD": str(LIB), "GPUTRACE_OUTPUT": str(trace),
                   "GPUTRACE_SUMMARY": "0"})
    run(cmd, env)
    t = load_trace(trace)
    # 8 warm-up launches, then 40
    assert len(events(t, ph="X", name="zeCommandListAppendLaunchKernel")) == 48


def test_spawn_splits_start_up_from_exit():
    """bench_spawn --split over bench_true (row 7s/7e): both halves measured, each
    shorter than the whole, for every process."""
    need(BIN / "bench_spawn")
    need(BIN / "bench_true")
    for env in (None, {"LD_PRELOAD": str(LIB)}):
        r = report(run([BIN / "bench_spawn", "--split", 5, BIN / "bench_true"], env).stdout)
        assert (r["bench"], r["procs"]) == ("spawn", "5")
        start, exit_, whole = int(r["start_med_ns"]), int(r["exit_med_ns"]), int(r["med_ns"])
        assert 0 < start < whole and 0 < exit_ < whole


def test_spawn_split_needs_a_program_that_says_when():
    need(BIN / "bench_spawn")
    proc = subprocess.run([str(BIN / "bench_spawn"), "--split", "2", "/bin/true"],
                          capture_output=True, env=clean_env())
    assert proc.returncode == 1
    assert b"wrote no times" in proc.stderr


def test_exit_syscalls_reads_only_the_exit():
    """Row 7w's strace reader: only calls started after the report line count;
    a wait the writer wakes is fine, a timed-out one and any timed sleep are not."""
    sys.path.insert(0, str(ROOT / "test" / "bench"))
    try:
        import bench
    finally:
        sys.path.pop(0)
    log = "\n".join([
        '100 nanosleep({tv_sec=0, tv_nsec=1000000}, NULL) = 0',  # before exit: ignored
        '101 futex(0x7f, FUTEX_WAIT_PRIVATE, 0, {tv_sec=0, tv_nsec=10000000} <unfinished ...>',
        '100 write(1, "bench=exit calls=5 exit_at_ns=1"..., 40) = 40',
        '101 <... futex resumed>) = 0',  # began before: not the exit's
        '100 futex(0x7e, FUTEX_WAIT_PRIVATE, 1, {tv_sec=5, tv_nsec=0} <unfinished ...>',
        '101 futex(0x7e, FUTEX_WAKE_PRIVATE, 2147483647) = 1',
        '100 <... futex resumed>) = 0',
        '101 write(5, "{", 1) = 1',
    ])
    got = bench.exit_syscalls(log)
    assert (got["sleeps"], got["timed_out_waits"], got["futex_calls"], got["marker_seen"]) == \
        (0, 0, 2, True)
    got = bench.exit_syscalls(log + "\n".join([
        "", '102 clock_nanosleep(CLOCK_MONOTONIC, 0, {tv_sec=0, tv_nsec=1000000}, NULL) = 0',
        '101 futex(0x7d, FUTEX_WAIT_PRIVATE, 0, {tv_sec=0, tv_nsec=1000000}) = -1 ETIMEDOUT '
        '(Connection timed out)',
        '103 nanosleep({tv_sec=1, tv_nsec=0},  <unfinished ...>']))
    assert (got["sleeps"], got["timed_out_waits"]) == (2, 1)
    assert not bench.exit_syscalls(log.replace("bench=exit", "bench=x"))["marker_seen"]


@pytest.mark.skipif(not HAVE_ZE, reason="no Level Zero headers")
def test_exit_after_recording_sleeps_on_nothing(tmp_path):
    """The exit of a process whose events are all still to write (row 7w) waits
    for the writer only: under strace -f, no thread starts a timed sleep after
    the program calls exit(), and no wait ends by its timeout; every event is
    in the file."""
    need(BIN / "bench_ze")
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    trace, log = tmp_path / "exit.json", tmp_path / "exit.strace"
    env = sim_env({"GPUTRACE_OUTPUT": str(trace), "GPUTRACE_SUMMARY": "0",
                   "GPUTRACE_BUFFER_KB": "65536", "GPUTRACE_FLUSH_MS": "60000"})
    run(["strace", "-f", "-qq", "-o", log, "-e", "trace=nanosleep,clock_nanosleep,futex,write",
         "-E", f"LD_PRELOAD={LIB}", BIN / "bench_ze", "exit", 50000, 0], env)
    sys.path.insert(0, str(ROOT / "test" / "bench"))
    try:
        import bench
    finally:
        sys.path.pop(0)
    got = bench.exit_syscalls(log.read_text())
    assert got["marker_seen"] and got["sleeps"] == 0 and got["timed_out_waits"] == 0, got
    t = scan_trace(trace)
    assert count_events(t, ph="X", name="zeDriverGetApiVersion") == 50000
    assert t["gputrace"]["events_lost"] == 0 and t["gputrace"]["complete"] is True


def test_spawn_reports_its_processes(tmp_path):
    need(BIN / "bench_spawn")
    r = report(run([BIN / "bench_spawn", 5, "/bin/true"]).stdout)
    assert (r["bench"], r["procs"]) == ("spawn", "5")
    assert int(r["med_ns"]) > 0 and int(r["cpu_med_ns"]) >= 0 and float(r["faults"]) > 0
    # under the library, a process that records nothing leaves no file
    proc = subprocess.run([str(BIN / "bench_spawn"), "5", "/bin/true"], cwd=tmp_path,
                          env=clean_env({"LD_PRELOAD": str(LIB)}), capture_output=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stderr == b"" and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not HAVE_ZE, reason="no Level Zero headers")
def test_ze_exit_prints_when_it_exits(tmp_path):
    need(BIN / "bench_ze")
    trace = tmp_path / "exit.json"
    env = sim_env({"LD_PRELOAD": str(LIB), "GPUTRACE_OUTPUT": str(trace),
                   "GPUTRACE_SUMMARY": "0"})
    r = report(run([BIN / "bench_ze", "exit", 50, 1000], env).stdout)
    assert r["bench"] == "exit" and int(r["exit_at_ns"]) > 0
    t = load_trace(trace)
    assert len(events(t, ph="X", name="zeDriverGetApiVersion")) == 50
    assert t["gputrace"]["complete"] is True


def test_ze_rejects_bad_arguments():
    need(BIN / "bench_ze")
    proc = subprocess.run([str(BIN / "bench_ze"), "launch", "sideways", "10"],
                          capture_output=True, env=clean_env(sim_env()))
    assert proc.returncode == 1
    assert b"use regular or immediate" in proc.stderr


@pytest.mark.skipif(not HAVE_ZE, reason="no Level Zero headers")
def test_cuda_launches_on_the_simulated_stack(tmp_path):
    """bench_cuda (row 8's CUDA figures): synchronized launches, traced with per-kernel
    and per-range metrics, every launch measured."""
    need(BIN / "bench_cuda")
    sim = {"LD_LIBRARY_PATH": str(BUILD / "cuda-sim")}
    r = report(run([BIN / "bench_cuda", 300, 100, 0, 0], sim).stdout)
    assert (r["bench"], r["calls"]) == ("cuda_launch", "300")
    for mode, ranged, cat in (("kernel", 0, "kernel"), ("nvtx", 1, "user_annotation")):
        trace = tmp_path / f"{mode}.json"
        r = report(run([BIN / "bench_cuda", 300, 100, 0, ranged],
                       dict(sim, LD_PRELOAD=str(LIB), GPUTRACE_OUTPUT=str(trace),
                            GPUTRACE_METRICS_MODE=mode)).stdout)
        assert r["bench"] == ("cuda_launch_ranged" if ranged else "cuda_launch")
        measured = [e for e in events(load_trace(trace), "X")
                    if e.get("cat") == cat and "metrics" in (e.get("args") or {})]
        assert len(measured) == 300


@pytest.mark.skipif(not HAVE_ZE, reason="built without Level Zero headers (libze-dev)")
def test_stack_row_launches_walk_the_default_depth(tmp_path):
    """Row 6's launch lines measure --stacks as it is used: the default depth, a
    launch's whole stack. They traced with GPUTRACE_STACKS=1, which has been a depth
    of one frame since 2026-11-24 (the launch's own: no walk at all)."""
    for p in ("bench_ze", "bench_core", "bench_floor", "bench_spawn", "libempty.so"):
        need(BIN / p)  # make bench builds them
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(ROOT / "test" / "bench" / "bench.py"), "--quick",
                           "--only", "6", "--json", str(out)], capture_output=True, timeout=120,
                          env=clean_env({"BUILD": str(BUILD)}))
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    launches = json.loads(out.read_text())["results"]["6_stacks"]["launches"]
    # _start, __libc_start_main, ..., main, the launch: more than the launch's frame
    assert launches.get("frames", 1) >= 3, launches
    assert "GPUTRACE_STACKS=on" in launches["workload"], launches


def test_harness_quick_run_prints_every_row(tmp_path):
    """bench.py end to end at tiny sizes: every row is in the table and the JSON."""
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(ROOT / "test" / "bench" / "bench.py"), "--quick",
                           "--json", str(out)], capture_output=True, timeout=120,
                          env=clean_env({"BUILD": str(BUILD)}))
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    text = proc.stdout.decode()
    for measure in ("1 added cost per host call", "1c flight recorder (30s)",
                    "2 scaling with threads",
                    "3 drain + JSON", "3t writer into tmpfs", "4 memory (peak RSS)",
                    "5 device path, per launch", "5k launch, its kind left out",
                    "5w launches, whole process",
                    "6 stacks (--stacks)", "7 processes"):
        assert measure in text
    assert "CUDA kernel mode, simulated stack" in text
    figures = json.loads(out.read_text())
    assert sorted(figures["results"]) == ["1_host_call", "1c_flight", "2_threads", "3_drain",
                                          "3_writer", "4_memory", "5_device",
                                          "5k_kind_left_out", "5w_device_whole", "6_stacks",
                                          "7_processes", "8_metrics", "8n_no_metrics"]
    # row 5w: the whole process, traced and untraced; 1000 launches lose nothing
    for kind in ("regular", "immediate"):
        x = figures["results"]["5w_device_whole"][kind]
        assert x["events_lost"] == 0 and x["untraced_ns_per_launch"] > 0
    # row 5k: launches with kernels left out and row 1's call, each traced and untraced
    left_out = figures["results"]["5k_kind_left_out"]
    for key in ("plain_call", "regular", "immediate"):
        assert left_out[key]["events_lost"] == 0 and left_out[key]["untraced_ns"] > 0
    # row 8n: the METRICS=0 library against this one, both tracing every call and launch
    nm = figures["results"]["8n_no_metrics"]
    assert "8n metrics off vs compiled out" in text
    for key in ("host_call", "regular", "immediate") + (("cuda",) if "cuda" in nm else ()):
        assert nm[key]["events_lost"] == nm[key]["without_events_lost"] == 0
        assert nm[key]["with_ns"] > 0 and nm[key]["without_ns"] > 0
    # row 6: launches with --stacks carry a stack and lose nothing
    stacked = figures["results"]["6_stacks"]
    if "rows" in stacked:
        assert "launches, immediate list, --stacks" in text
        for kind in ("regular", "immediate"):
            x = stacked["launches"][kind]
            assert x["events_lost"] == x["base_events_lost"] == 0
            assert x["base"] > 0 and x["traced"] > 0
    writer = figures["results"]["3_writer"]
    assert "status" in writer or (writer["events_lost"] == 0 and writer["cycle_ns"] > 0)
    assert figures["quick"] is True
    assert figures["results"]["1_host_call"]["events_lost"] == 0
    assert figures["results"]["1c_flight"]["events_lost"] == 0
    procs = figures["results"]["7_processes"]
    assert "floor: an empty preloaded library" in text
    assert procs["loop_run_cpu_ns"] > 0 and procs["loop_untraced_cpu_ns"] > 0
    # page faults of a process that records nothing: the library's own pages
    # come on top of an empty preload's, which come on top of none
    assert procs["quiet_faults"] > procs["empty_faults"] > procs["untraced_faults"] > 0
    assert procs["untraced_cpu_ns"] > 0
    assert procs["events_lost"] == 0
    for measure in ("7s start-up, records nothing", "7e exit, records nothing",
                    "7w exit writing 10^6 events", "strace -f on that exit"):
        assert measure in text
    split = procs["split"]
    assert split["start_untraced_ns"] > 0 and split["exit_untraced_ns"] > 0
    assert split["total_added_ns"] == split["start_added_ns"] + split["exit_added_ns"]
    written = procs["exit_written"]
    assert written["events_lost"] == 0 and written["events_recorded"] >= 2000
    assert written["write_ns"] > 0 and written["untraced_exit_ns"] > 0
    assert written.get("marker_seen", True)
