"""Per-kernel metrics on CUDA (--metrics-mode kernel, backends/cuda/range_profiler.c)
end to end on the simulated CUDA stack, whose libcupti plays CUPTI's range profiler
and host profiler (test/cuda/sim/cupti_profiler.c): chip SIM100 (8 SMs, 5 metrics a
pass, no DRAM counters), values from the simulated kernels (grid*block ns each)."""
import collections
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, gputrace_lines, need, run, load_trace

CUDA = BUILD / "test" / "cuda"
SIM = BUILD / "cuda-sim"
APP = CUDA / "sim_app"
CUDA_HOME = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))

if not (CUDA_HOME / "bin" / "nvcc").exists():
    pytest.skip(f"no nvcc under {CUDA_HOME} (HAVE_NVCC): the programs for the simulator are "
                "not built", allow_module_level=True)

SCALE = "void sim::scale<float>(float*, float, int)"
AXPY = "axpy(float const*, float*, int)"
KEYS = {"gpu time ns", "gpu busy %", "sm active %", "warps active %"}


def traced(tmp_path, args, env):
    need(APP)
    need(SIM / "libcupti.so.13")
    e = {"LD_LIBRARY_PATH": str(SIM), "GPUTRACE_METRICS_MODE": "kernel"}
    e.update(env)
    r = run([APP] + args, tmp_path=tmp_path, env=e)
    assert r.returncode == 0, r.stderr
    return load_trace(r.trace_path), r


def kernels(trace):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]


def metric_lines(stderr):
    return [l for l in gputrace_lines(stderr) if "CUDA metrics" in l]


@pytest.mark.sanitize
def test_every_launched_kernel_carries_its_metrics(tmp_path):
    summary = tmp_path / "s.json"
    t, r = traced(tmp_path, ["basic"], {"GPUTRACE_SUMMARY_JSON": str(summary),
                                       "GPUTRACE_LOG": "info"})
    ks = kernels(t)
    measured = [k for k in ks if "metrics" in k["args"]]
    assert collections.Counter(k["name"] for k in measured) == {SCALE: 3, AXPY: 1}
    # the graph's two kernels run from cuGraphLaunch: no session around them
    assert collections.Counter(k["name"] for k in ks if k not in measured) == {SCALE: 2}
    for k in measured:
        m = k["args"]["metrics"]
        assert set(m) == KEYS  # SIM100 has no dram__throughput: left out of the default set
        # the kernel's own time: grid*block ns, the span's duration
        assert m["gpu time ns"] == round(k["dur"] * 1000)
        assert m["gpu busy %"] == 100
    scale = next(k for k in measured if k["name"] == SCALE)["args"]["metrics"]
    axpy = next(k for k in measured if k["name"] == AXPY)["args"]["metrics"]
    assert (scale["gpu time ns"], scale["sm active %"], scale["warps active %"]) == (25600, 100, 12.5)
    assert (axpy["gpu time ns"], axpy["sm active %"], axpy["warps active %"]) == (8192, 100, 6.25)
    lines = metric_lines(r.stderr)
    assert "gputrace: CUDA metrics: SIM100 has no " \
        "dram__throughput.avg.pct_of_peak_sustained_elapsed: not sampled" in lines
    assert "gputrace: CUDA metrics: range profiler on GPU 0 (SIM100), 4 metrics per kernel" in lines
    assert len(lines) == 2
    # the profiler's own kernel after each measured one (the simulator does what an H200
    # did): drawn as its overhead on the device's overhead row, after the kernel it
    # follows, with no arrow, and neither a kernel of the program nor lost
    own = [e for e in t["traceEvents"] if e.get("ph") == "X" and e.get("name") == "WaitNs"]
    assert len(own) == len(measured) == 4
    overhead_row = {(e["pid"], e["tid"]) for e in t["traceEvents"] if e.get("ph") == "M"
                    and e["name"] == "thread_name" and e["args"]["name"] == "CUPTI overhead"}
    for o in own:
        assert o["cat"] == "overhead" and o["args"]["by"] == "CUPTI range profiler"
        assert o["args"]["stream"] == 6 and "metrics" not in o["args"]
        assert (o["pid"], o["tid"]) in overhead_row
        assert any(k["ts"] + k["dur"] <= o["ts"] for k in measured)
    assert not [e for e in t["traceEvents"] if e.get("ph") in ("s", "t", "f")
                and (e["pid"], e["tid"]) in overhead_row]
    sj = json.loads(summary.read_text())
    assert sj["lost"]["total"] == 0
    assert "WaitNs" not in {k["name"] for k in sj["kernels"]}
    assert sj["totals"]["overhead"]["count"] >= 4
    # nor the device's work: its busy time and spans are the program's kernels' (they
    # counted the profiler's kernels too, ~5x the busy time)
    device_work = [e for e in t["traceEvents"] if e.get("ph") == "X" and e["pid"] == own[0]["pid"]
                   and e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    [gpu] = sj["devices"]
    assert gpu["spans"] == len(device_work)
    assert gpu["span_total_ns"] == round(sum(e["dur"] for e in device_work) * 1000)
    # the summary's per-kernel means: the launches that carry them
    rows = {(k["kernel"], k["metric"]): k
            for k in sj["metrics"]["kernels"]}
    assert rows[(SCALE, "gpu time ns")]["count"] == 3
    assert rows[(SCALE, "gpu time ns")]["mean"] == 25600
    assert rows[(AXPY, "warps active %")]["mean"] == 6.25
    assert len(rows) == 8


def test_kernels_of_concurrent_threads_keep_their_own_metrics(tmp_path):
    # 4 threads launch at once: each kernel's metrics are its own shape's, however the
    # launches interleave (one range profiler session per launch)
    t, _ = traced(tmp_path, ["threads"], {})
    ks = kernels(t)
    assert len(ks) == 20
    shapes = collections.Counter()
    for k in ks:
        blocks = k["args"]["grid"][0]
        m = k["args"]["metrics"]
        assert k["args"]["block"][0] == 64 * blocks
        assert m["gpu time ns"] == 64 * blocks * blocks == round(k["dur"] * 1000)
        assert m["sm active %"] == 100 * blocks / 8
        assert m["warps active %"] == 100 * (2 * blocks) / 64
        shapes[blocks] += 1
    assert shapes == {1: 5, 2: 5, 3: 5, 4: 5}


def nvtx_unmeasured(tmp_path, case, key, line):
    """sim_app nvtx CASE in nvtx mode, where one range goes unmeasured: its one line, and
    that range the one counted lost, as KEY. The trace."""
    summary = tmp_path / "s.json"
    t, r = traced(tmp_path, ["nvtx", case], {"GPUTRACE_METRICS_MODE": "nvtx",
                                             "GPUTRACE_SUMMARY_JSON": str(summary)})
    assert r.stdout == f"nvtx: {case}\n".encode()
    assert metric_lines(r.stderr) == [line]
    lost = json.loads(summary.read_text())["lost"]
    assert lost["total"] == 1 and lost["by_reason"] == {key: 1}
    return t


@pytest.mark.sanitize
def test_nvtx_range_holding_a_stream_capture_leaves_the_capture_whole(tmp_path):
    """A range profiler session started at a launch into a capturing stream broke the
    capture on an H200 (the simulated CUPTI does the same): the range that holds a capture
    carries no metrics, one line, counted; the program's capture, graph and exit status are
    as untraced; the range after it is measured."""
    t = nvtx_unmeasured(tmp_path, "capture", "cupti_range_capture",
                        "gputrace: CUDA metrics: NVTX range 'graph' holds a stream capture: a "
                        "range profiler session breaks a capture, so the range carries no "
                        "metrics (counted as lost cupti_range_capture)")
    calls = [e for e in t["traceEvents"] if e.get("cat") == "cuda_runtime" and e.get("ph") == "X"]
    assert [e["name"] for e in calls if e["args"].get("result")] == []
    (graph,) = host_ranges(t, "graph")
    assert "metrics" not in (graph.get("args") or {})
    (after,) = host_ranges(t, "after")
    assert after["args"]["metrics"]["gpu time ns"] == 256
    # the captured kernels ran once each, from the graph's launch; the ones after, once each
    assert collections.Counter(k["name"] for k in kernels(t)) == {SCALE: 3, AXPY: 1}


@pytest.mark.parametrize("env, line", [
    ({"CUDA_SIM_PROFILING_RESTRICTED": "1"},
     "gputrace: CUDA metrics: per-kernel metrics on GPU 0: no permission to profile the GPU "
     "(load the driver with NVreg_RestrictProfilingToAdminUsers=0, or run as root)"),
    ({"GPUTRACE_METRICS": "gpu__time_duration.sum,sm__no_such_counter.sum"},
     "gputrace: CUDA metrics: 'sm__no_such_counter.sum' is not a metric of SIM100 "
     "(CUPTI_ERROR_INVALID_METRIC_NAME); the names are those of `ncu --query-metrics`"),
    ({"GPUTRACE_METRICS": "gpu__time_duration.sum,gr__cycles_active.avg.pct_of_peak_sustained_elapsed,"
                          "sm__cycles_active.avg.pct_of_peak_sustained_elapsed,"
                          "sm__warps_active.avg.pct_of_peak_sustained_active,"
                          "sm__threads_launched.sum,gpu__time_duration.sum"},
     "gputrace: CUDA metrics: the chosen metrics need 2 passes on GPU 0 (SIM100); per-kernel "
     "metrics take what one pass collects (more would replay every kernel): choose fewer"),
    ({"GPUTRACE_DISABLE_CUPTI": "1"},
     "gputrace: CUDA metrics need CUPTI, which is off (GPUTRACE_DISABLE_CUPTI or CUPTI refused): "
     "no per-kernel metrics"),
], ids=["no-permission", "unknown-metric", "two-passes", "cupti-off"])
def test_refusal_is_one_line_and_the_program_runs(tmp_path, env, line):
    t, r = traced(tmp_path, ["clock", "3", "0"], env)
    assert r.stdout == b"clock: 3 kernels\n"
    assert metric_lines(r.stderr) == [line]
    ks = kernels(t)
    assert len(ks) == 3 and all("metrics" not in k["args"] for k in ks)


@pytest.mark.parametrize("metrics, line, measured", [
    ("gpu_time_duration.sum",
     "gputrace: CUDA metrics: 'gpu_time_duration.sum' is not a metric: CUPTI's names have "
     "'__' (those of `ncu --query-metrics`), and no Level Zero device here takes metrics: "
     "ignored", KEYS),
    ("gpu__time_duration.sum, ComputeBasic",
     "gputrace: CUDA metrics: 'ComputeBasic' is not a metric: CUPTI's names have '__' "
     "(those of `ncu --query-metrics`), and no Level Zero device here takes metrics: "
     "ignored", {"gpu__time_duration.sum"}),
], ids=["misspelt", "level-zero-group"])
def test_a_name_no_backend_takes_is_one_line(tmp_path, metrics, line, measured):
    # a name without CUPTI's "__" is a Level Zero group's or metric's; with no Level Zero
    # device to judge it, the CUDA backend says it (it went unsaid: the kernels carried
    # the basic set as if no metric had been named)
    t, r = traced(tmp_path, ["clock", "3", "0"], {"GPUTRACE_METRICS": metrics})
    assert r.stdout == b"clock: 3 kernels\n"
    assert metric_lines(r.stderr) == [line]
    ks = kernels(t)
    assert len(ks) == 3 and all(set(k["args"]["metrics"]) == measured for k in ks)


def test_kernels_after_a_device_reset_carry_their_metrics(tmp_path):
    # cudaDeviceReset destroys the primary context, and the next call makes it anew at
    # the same handle: its kernels get a range profiler of their own (the destroyed
    # context's, reused, measured nothing and said nothing)
    summary = tmp_path / "s.json"
    t, r = traced(tmp_path, ["reset"], {"GPUTRACE_SUMMARY_JSON": str(summary)})
    assert r.stdout == b"reset: ok\n"
    assert metric_lines(r.stderr) == []
    ks = kernels(t)
    assert [k["name"] for k in ks] == [SCALE, AXPY] * 2
    assert [k["args"]["metrics"]["gpu time ns"] for k in ks] == [1024, 512] * 2
    assert all(set(k["args"]["metrics"]) == KEYS for k in ks)
    assert json.loads(summary.read_text())["lost"]["total"] == 0


def test_a_refusal_outlives_a_device_reset_in_one_line(tmp_path):
    # the context made anew is refused for the same reason: no second line
    t, r = traced(tmp_path, ["reset"], {"CUDA_SIM_PROFILING_RESTRICTED": "1"})
    assert r.stdout == b"reset: ok\n"
    assert metric_lines(r.stderr) == [
        "gputrace: CUDA metrics: per-kernel metrics on GPU 0: no permission to profile the GPU "
        "(load the driver with NVreg_RestrictProfilingToAdminUsers=0, or run as root)"]
    ks = kernels(t)
    assert len(ks) == 4 and all("metrics" not in k["args"] for k in ks)


def test_nvtx_ranges_around_a_device_reset(tmp_path):
    # the range after a reset is measured on the new context; a range inside which the
    # context is destroyed loses its session with it: one line, counted
    summary = tmp_path / "s.json"
    t, r = traced(tmp_path, ["reset", "nvtx"], {"GPUTRACE_METRICS_MODE": "nvtx",
                                               "GPUTRACE_SUMMARY_JSON": str(summary)})
    assert r.stdout == b"reset nvtx: ok\n"
    assert metric_lines(r.stderr) == [
        "gputrace: CUDA metrics: a context was destroyed (cudaDeviceReset, cuCtxDestroy) "
        "inside the NVTX range measuring it: its range carries no metrics (counted as lost "
        "cupti_range_unmeasured)"]
    rounds = host_ranges(t, "round")
    assert [e["args"]["metrics"]["gpu time ns"] for e in rounds] == [1536, 1536]
    resets = host_ranges(t, "reset")
    assert len(resets) == 2 and all("metrics" not in (e.get("args") or {}) for e in resets)
    lost = json.loads(summary.read_text())["lost"]
    assert lost["total"] == 2 and lost["by_reason"] == {"cupti_range_unmeasured": 2}


def test_chosen_metrics_by_name(tmp_path):
    t, r = traced(tmp_path, ["clock", "4", "0"],
                  {"GPUTRACE_METRICS": "sm__threads_launched.sum, gpu__time_duration.sum"})
    assert metric_lines(r.stderr) == []
    ks = kernels(t)
    assert len(ks) == 4
    for k in ks:
        assert k["args"]["metrics"] == {"sm__threads_launched.sum": 20000,
                                        "gpu__time_duration.sum": 20000}


def test_no_profiler_call_when_metrics_are_off(tmp_path):
    off, on = tmp_path / "off.log", tmp_path / "on.log"
    t, _ = traced(tmp_path, ["clock", "2", "0"], {"GPUTRACE_METRICS_MODE": "",
                                                 "CUDA_SIM_CUPTI_LOG": str(off)})
    assert all("metrics" not in k["args"] for k in kernels(t))
    assert "cuptiActivity" in off.read_text()  # the log works ...
    assert " profiler" not in off.read_text()  # ... and the profiler was never called
    traced(tmp_path, ["clock", "2", "0"], {"CUDA_SIM_CUPTI_LOG": str(on),
                                          "GPUTRACE_OUTPUT": str(tmp_path / "on.json")})
    assert on.read_text().count("cuptiRangeProfilerStart profiler") == 2


def test_thousands_of_launches_all_measured_none_lost(tmp_path):
    # records come in buffers, well after their launches: every kernel's metrics wait
    # for it (a table of 4096 ids lost 391 of 5000 here)
    summary = tmp_path / "s.json"
    t, _ = traced(tmp_path, ["clock", "5000", "0"], {"GPUTRACE_SUMMARY_JSON": str(summary)})
    ks = kernels(t)
    assert len(ks) == 5000
    assert all(k["args"]["metrics"]["gpu time ns"] == 20000 for k in ks)
    assert json.loads(summary.read_text())["lost"]["total"] == 0


# ---- per NVTX range (--metrics-mode nvtx): CUPTI's user ranges ----

def host_ranges(trace, name=None):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X"
            and e.get("cat") == "user_annotation" and (name is None or e["name"] == name)]


@pytest.mark.sanitize
def test_nvtx_ranges_carry_the_metrics_of_their_kernels(tmp_path):
    summary, log = tmp_path / "s.json", tmp_path / "cupti.log"
    t, r = traced(tmp_path, ["nvtx"], {"GPUTRACE_METRICS_MODE": "nvtx", "GPUTRACE_LOG": "info",
                                       "GPUTRACE_SUMMARY_JSON": str(summary),
                                       "GPUTRACE_SUMMARY": "1",
                                       "CUDA_SIM_CUPTI_LOG": str(log)})
    assert r.stdout == b"nvtx: 3 steps\n"
    assert metric_lines(r.stderr) == [
        "gputrace: CUDA metrics: SIM100 has no dram__throughput.avg.pct_of_peak_sustained_elapsed: "
        "not sampled",
        "gputrace: CUDA metrics: range profiler on GPU 0 (SIM100), 4 metrics per NVTX range"]
    # each step: its nested ranges' kernels, 2 x 256 ns (4 blocks of 2 warps) + 64 ns (2
    # blocks of 1 warp), measured although popped before they ran
    steps = host_ranges(t, "step")
    assert len(steps) == 3
    for s in steps:
        m = s["args"]["metrics"]
        assert set(m) == KEYS
        assert (m["gpu time ns"], m["gpu busy %"]) == (576, 100)
        assert m["sm active %"] == pytest.approx(100 * (512 * 4 / 8 + 64 * 2 / 8) / 576, rel=1e-12)
        assert m["warps active %"] == pytest.approx(100 * (512 * 2 / 64 + 64 / 64) / 576, rel=1e-12)
    # the kernels themselves: no per-kernel metrics in this mode; their time is the steps'
    ks = kernels(t)
    assert len(ks) == 11 and all("metrics" not in k["args"] for k in ks)
    assert sum(round(k["dur"] * 1000) for k in ks if k["args"]["grid"][0] in (2, 4)) == 3 * 576
    # nested ranges are not measured (one nesting level a pass), nor a range without kernels
    for name, count in (("fwd", 3), ("bwd", 3), ("idle", 1)):
        rs = host_ranges(t, name)
        assert len(rs) == count and all("metrics" not in (e.get("args") or {}) for e in rs)
    # ranges of two threads, one after the other: each its own kernel (8, 16 blocks of 4 warps)
    workers = sorted(host_ranges(t, "worker"), key=lambda e: e["args"]["metrics"]["gpu time ns"])
    assert [w["args"]["metrics"] for w in workers] == [
        {"gpu time ns": g, "gpu busy %": 100, "sm active %": 100, "warps active %": 6.25}
        for g in (1024, 2048)]
    assert len({w["tid"] for w in workers} | {steps[0]["tid"]}) == 3
    # the device rows' copies of the ranges carry none (values are the host span's)
    assert all("metrics" not in e["args"] for e in t["traceEvents"]
               if e.get("cat") == "gpu_user_annotation")
    # one user range pushed per measured range: the idle one cost no profiler call
    text = log.read_text()
    assert text.count("cuptiRangeProfilerPushRange profiler") == 5
    assert text.count("cuptiRangeProfilerStart profiler") == 5
    rows = {(x["range"], x["metric"]): x
            for x in json.loads(summary.read_text())["metrics"]["ranges"]}
    assert len(rows) == 8
    assert (rows[("step", "gpu time ns")]["count"], rows[("step", "gpu time ns")]["mean"]) == (3, 576)
    assert rows[("worker", "gpu time ns")]["mean"] == 1536
    assert rows[("worker", "gpu time ns")]["max"] == 2048
    assert "  range metrics (mean per range):\n    step (3): gpu busy % 100, gpu time ns 576, " \
        "sm active % 47.2222, warps active % 2.95139\n" in r.stderr.decode()


def test_nvtx_ranges_of_two_threads_at_once_on_one_context(tmp_path):
    # the range profiler measures a context: the first thread's range holds the session
    # (and counts both threads' kernels), the other's carries none: one line, counted
    t = nvtx_unmeasured(tmp_path, "overlap", "cupti_range_overlapped",
                        "gputrace: CUDA metrics: NVTX ranges of two threads overlap on one "
                        "context ('overlap' launched while another thread's range was "
                        "measured): the range profiler measures a context, so the later range "
                        "carries no metrics (counted as lost cupti_range_overlapped)")
    rs = host_ranges(t, "overlap")
    assert len(rs) == 2 and rs[0]["tid"] != rs[1]["tid"]
    measured = [e for e in rs if "metrics" in (e.get("args") or {})]
    assert len(measured) == 1
    assert measured[0]["args"]["metrics"]["gpu time ns"] == 2048


def test_a_thread_ending_inside_its_range_frees_the_context(tmp_path):
    """A thread ends with its outermost range open (a worker that returns without its
    pop): its session ends with it, and the main thread's later ranges are measured. The
    session stayed the dead thread's: every later range of the context went unmeasured,
    each counted as an overlap with a range the trace drew ended."""
    t = nvtx_unmeasured(tmp_path, "leave", "cupti_range_unmeasured",
                        "gputrace: CUDA metrics: NVTX range 'leaver' was still open when its "
                        "thread ended: drawn unended, it carries no metrics (counted as lost "
                        "cupti_range_unmeasured)")
    leaver = host_ranges(t, "leaver")
    assert len(leaver) == 1 and leaver[0]["args"] == {"unended": True}
    after = host_ranges(t, "after")
    assert len(after) == 3
    assert [e["args"]["metrics"]["gpu time ns"] for e in after] == [512] * 3


@pytest.mark.parametrize("env, line", [
    ({"CUDA_SIM_PROFILING_RESTRICTED": "1"},
     "gputrace: CUDA metrics: per-range metrics on GPU 0: no permission to profile the GPU "
     "(load the driver with NVreg_RestrictProfilingToAdminUsers=0, or run as root)"),
    ({"GPUTRACE_ACTIVITIES": "kernel,runtime"},
     "gputrace: CUDA metrics: GPUTRACE_METRICS_MODE=nvtx needs the annotation kind (NVTX is not "
     "traced): no per-range metrics"),
], ids=["no-permission", "no-annotations"])
def test_nvtx_refusal_is_one_line_and_the_program_runs(tmp_path, env, line):
    e = {"GPUTRACE_METRICS_MODE": "nvtx"}
    e.update(env)
    t, r = traced(tmp_path, ["nvtx"], e)
    assert r.stdout == b"nvtx: 3 steps\n"
    assert metric_lines(r.stderr) == [line]
    assert len(kernels(t)) == 11
    assert all("metrics" not in (e.get("args") or {}) for e in host_ranges(t))


# ---- scripts/gpu-check's range profiler check, on the simulated stack ----

@pytest.mark.parametrize("env, status, says", [
    ({}, 0, "PASS  every kernel has args.metrics (3 of 3)"),
    ({"CUDA_SIM_PROFILING_RESTRICTED": "1"}, 3,
     "SKIPPED  profiling refused by the driver (NVreg_RestrictProfilingToAdminUsers=1 or not "
     "root): gputrace: CUDA metrics: per-kernel metrics on GPU 0: no permission to profile"),
], ids=["measured", "refused"])
def test_gpu_check_range_metrics(tmp_path, env, status, says):
    """gpu_check.py range-metrics, as scripts/gpu-check runs it on a GPU, against vec_add
    (nvcc) on the simulated stack: measured kernels pass; a refusal of profiling is one
    line and exit status 3 (gpu-check's SKIPPED row), not a failure."""
    vec = CUDA / "vec_shared"
    need(vec)
    need(SIM / "libcupti.so.13")
    summary, err = tmp_path / "s.json", tmp_path / "err.txt"
    r = run([vec, 3], tmp_path=tmp_path,
            env=dict({"LD_LIBRARY_PATH": str(SIM), "GPUTRACE_METRICS_MODE": "kernel",
                      "GPUTRACE_SUMMARY_JSON": str(summary)}, **env))
    assert r.returncode == 0, r.stderr
    err.write_bytes(r.stderr)
    c = subprocess.run([sys.executable, str(ROOT / "test" / "cuda" / "gpu_check.py"),
                        "range-metrics", "kernel", str(r.trace_path), str(summary), str(err)],
                       capture_output=True, timeout=60)
    out = c.stdout.decode()
    assert c.returncode == status, out
    assert says in out
    assert "FAIL" not in out
