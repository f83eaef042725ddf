"""The CUDA backend end to end, on a machine without a GPU (and with one):
nvcc programs (static and shared cudart) behave as untraced and leave a
valid trace; runtime calls through a shared libcudart become cuda_runtime
spans with their error codes; NVTX ranges arrive through NVTX's injection;
with CUPTI off, CUDA events time the launches (checked on a fake libcudart
that simulates a device)."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import BUILD, LIB, ROOT, clean_env, events, gputrace_lines, need, run, strip_gputrace

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "viewers"))
from viewer_rules import check_nesting, load_exact  # noqa: E402

CUDA = BUILD / "test" / "cuda"
CUDA_HOME = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
HAVE_NVCC = (CUDA_HOME / "bin" / "nvcc").exists()
HAVE_CUPTI = (CUDA_HOME / "include" / "cupti.h").exists()
# the CUDA backend (interposition included) is built only with CUPTI's headers
backend = pytest.mark.skipif(not HAVE_CUPTI, reason="CUDA backend not built (no cupti.h)")


def host_spans(trace, cat):
    return [e for e in events(trace, ph="X", cat=cat)]


def flows(trace):
    """{id: (start event, finish event)} of the ac2g arrows."""
    out = {}
    for e in trace["traceEvents"]:
        if e.get("cat") == "ac2g" and e.get("ph") in ("s", "f"):
            out.setdefault(e["id"], {})[e["ph"]] = e
    return out


def linked(trace, host, dev):
    """An arrow leaves `host` and lands inside `dev`."""
    for f in flows(trace).values():
        s, t = f.get("s"), f.get("f")
        if not s or not t:
            continue
        if (s["pid"], s["tid"]) == (host["pid"], host["tid"]) and \
           host["ts"] <= s["ts"] <= host["ts"] + host["dur"] and \
           (t["pid"], t["tid"]) == (dev["pid"], dev["tid"]) and \
           dev["ts"] <= t["ts"] <= dev["ts"] + dev["dur"]:
            return True
    return False


def notices(stderr):
    return [l for l in gputrace_lines(stderr) if not l.startswith("gputrace summary")]


# ---- nvcc programs: the same behaviour, a valid trace ----

@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not installed (HAVE_NVCC)")
@pytest.mark.parametrize("cudart", ["static", "shared"])
def test_nvcc_program_runs_as_untraced(tmp_path, cudart):
    exe = CUDA / f"vec_{cudart}"
    need(exe)
    plain = run([exe], traced=False)
    traced = run([exe], tmp_path=tmp_path)
    assert traced.stdout == plain.stdout
    assert traced.returncode == plain.returncode
    assert strip_gputrace(traced.stderr) == plain.stderr.decode()
    assert len(notices(traced.stderr)) <= 1, traced.stderr
    out = plain.stdout.decode()
    if out.startswith("no CUDA device") and cudart == "static":
        # static cudart calls the driver directly; without one, CUPTI is
        # idle: nothing recorded, so no trace file at all
        assert not os.path.exists(traced.trace_path)
        return
    trace = traced.trace
    assert trace["gputrace"]["complete"] is True
    runtime = host_spans(trace, "cuda_runtime")

    if out.startswith("no CUDA device"):
        # no driver here: nothing but the program's own runtime calls
        err = out.split(":")[1].strip()
        assert not events(trace, ph="X", cat="kernel")
        if cudart == "shared":
            assert [e["name"] for e in runtime] == ["cudaGetDeviceCount"]
            assert runtime[0]["args"]["result"] != 0
            assert runtime[0]["args"]["error"] == err
            assert runtime[0]["tid"] == runtime[0]["pid"]
        else:
            # static cudart calls the driver directly; without one, CUPTI is idle
            assert runtime == []
        return

    # a GPU: every kernel and copy, linked to its launch
    assert plain.returncode == 0, out
    kernels = events(trace, ph="X", cat="kernel")
    assert len(kernels) == 3
    assert all(k["name"].startswith("vec_add") for k in kernels)
    launches = {e["args"]["correlation"]: e for e in runtime if e["name"] == "cudaLaunchKernel"}
    assert len(launches) == 3
    for k in kernels:
        host = launches[k["args"]["correlation"]]
        assert k["ts"] >= host["ts"]
        assert linked(trace, host, k)
        assert k["args"]["grid"] == [4096, 1, 1] and k["args"]["block"] == [256, 1, 1]
    copies = events(trace, ph="X", cat="gpu_memcpy")
    assert sorted(c["args"]["kind"] for c in copies) == ["DtoH", "HtoD", "HtoD"]
    assert all(c["args"]["bytes"] == 4 << 20 for c in copies)
    assert len(events(trace, ph="X", cat="gpu_memset")) == 1


# ---- NVTX through its injection, no GPU needed ----

@pytest.mark.skipif(not HAVE_CUPTI, reason="no CUDA toolkit headers (nvtx3)")
def test_nvtx_start_end_ranges_past_the_open_limit(tmp_path):
    """4100 start/end ranges open at once, then all ended: the 4096 first are drawn as
    they ended, and the 4 past the limit are the ones left out and counted
    (nvtx_open_ranges). Each new one used to take the slot of the oldest: the 4 first,
    ended like the rest, were drawn as never ended, and the 4 counted lost were drawn."""
    exe = CUDA / "nvtx_app"
    need(exe)
    r = run([exe, "open", "4100"], tmp_path=tmp_path)
    assert r.returncode == 0 and r.stdout == b"nvtx_app: 4100 open\n", r.stderr
    g = r.trace["gputrace"]
    assert g["lost_by_reason"]["nvtx_open_ranges"] == 4 and g["events_lost"] == 4
    spans = events(r.trace, ph="X", cat="user_annotation")
    assert sorted(e["name"] for e in spans) == sorted(f"s{i}" for i in range(4096))
    assert not [e for e in spans if (e.get("args") or {}).get("unended")]
    # one range open while 5000 others start and end: two open at most, none lost (it
    # was pushed out by the 4096th after it)
    r = run([exe, "long", "5000"], tmp_path=tmp_path, trace=str(tmp_path / "long.json"))
    assert r.returncode == 0, r.stderr
    assert r.trace["gputrace"]["events_lost"] == 0
    spans = events(r.trace, ph="X", cat="user_annotation")
    assert len(spans) == 5001
    (long_range,) = [e for e in spans if e["name"] == "long"]
    assert not (long_range.get("args") or {}).get("unended")


@pytest.mark.sanitize
@pytest.mark.skipif(not HAVE_CUPTI, reason="no CUDA toolkit headers (nvtx3)")
@pytest.mark.parametrize("how", ["preload", "injection_only"])
def test_nvtx_ranges(tmp_path, how):
    exe = CUDA / "nvtx_app"
    need(exe)
    if how == "preload":
        r = run([exe], tmp_path=tmp_path)
    else:
        # no LD_PRELOAD: NVTX alone loads the library (as in a child that lost it)
        trace = tmp_path / "trace.json"
        r = run([exe], traced=False, tmp_path=tmp_path,
                env={"NVTX_INJECTION64_PATH": str(LIB), "GPUTRACE_OUTPUT": str(trace),
                     "GPUTRACE_SUMMARY": "0"})
        r.trace_path = trace
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"nvtx_app: done\n"
    trace = r.trace
    spans = events(trace, ph="X", cat="user_annotation")
    names = sorted(e["name"] for e in spans)
    assert names == ["data load", "handed over", "inner", "inner", "inner", "optimizer step",
                     "outer", "worker"]
    pid = trace["gputrace"]["pid"]
    outer = next(e for e in spans if e["name"] == "outer")
    assert outer["tid"] == pid
    for inner in (e for e in spans if e["name"] == "inner"):
        assert inner["tid"] == pid
        assert outer["ts"] <= inner["ts"]
        assert inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
        assert inner["dur"] >= 150
    worker = next(e for e in spans if e["name"] == "worker")
    handed = next(e for e in spans if e["name"] == "handed over")
    assert worker["tid"] != pid
    # on the process's lane (it need not nest with either thread's row), with
    # the thread that started it
    assert handed["tid"] not in (pid, worker["tid"]) and handed["pid"] == pid
    assert handed["args"] == {"tid": pid}
    lane = [e for e in events(trace, ph="M", pid=pid) if e["tid"] == handed["tid"]]
    assert sorted((e["name"], e["args"]) for e in lane) == [
        ("thread_name", {"name": "ranges"}), ("thread_sort_index", {"sort_index": 1})]
    assert handed["ts"] < worker["ts"] + worker["dur"]
    assert handed["ts"] + handed["dur"] > worker["ts"]  # ended by the worker, inside it
    # a pushed range and a started one keep their attributes to their end
    step = next(e for e in spans if e["name"] == "optimizer step")
    assert step["args"] == {"domain": "trainer", "color": "0xff00ff00", "payload": 42}
    load = next(e for e in spans if e["name"] == "data load")
    assert load["args"] == {"category": 3, "payload": 7, "tid": pid}
    assert not any("args" in e for e in spans if e["name"] in ("inner", "outer", "worker"))
    marks = {e["name"]: e for e in events(trace, ph="i", cat="user_annotation")}
    assert set(marks) == {"checkpoint", "loss"}
    assert outer["ts"] <= marks["checkpoint"]["ts"] <= outer["ts"] + outer["dur"]
    assert marks["loss"]["args"] == {"domain": "trainer", "color": "0xff00ff00",
                                     "payload": 0.25}


@pytest.mark.sanitize
@pytest.mark.skipif(not HAVE_CUPTI, reason="no CUDA toolkit headers (nvtx3)")
def test_nvtx_crossing_ranges_on_lanes(tmp_path):
    """Start/end ranges crossing each other (start a, start b, end a, end b) and
    one crossing a push/pop range: the push/pop range stays on the thread's row,
    each start/end range goes whole, with args.tid, on the first of the
    process's lanes where it nests, and every row nests as the viewers read it."""
    exe = CUDA / "nvtx_app"
    need(exe)
    r = run([exe, "cross"], tmp_path=tmp_path)
    assert r.returncode == 0 and r.stdout == b"nvtx_app: cross\n", r.stderr
    t = load_exact(r.trace_path)
    pid = t["gputrace"]["pid"]
    spans = events(t, ph="X", cat="user_annotation")
    assert sorted(e["name"] for e in spans) == ["a", "b", "p", "s"]
    by = {e["name"]: e for e in spans}
    span = lambda e: (int(e["ts"] * 1000), int((e["ts"] + e["dur"]) * 1000))
    (a0, a1), (b0, b1), (p0, p1), (s0, s1) = (span(by[n]) for n in "abps")
    assert a0 < b0 < a1 < b1 and p0 < s0 < p1 < s1
    for x, y in ((a0, b0), (b0, a1), (a1, b1), (p0, s0), (s0, p1), (p1, s1)):
        assert y - x >= 100000  # 100 us of work between the calls
    names = {e["tid"]: e["args"]["name"] for e in events(t, ph="M", pid=pid)
             if e["name"] == "thread_name"}
    assert by["p"]["tid"] == pid and "args" not in by["p"]
    assert {n: names[by[n]["tid"]] for n in "abs"} == {"a": "ranges", "b": "ranges 2",
                                                      "s": "ranges"}
    assert all(by[n]["args"] == {"tid": pid} for n in "abs")
    assert check_nesting(t) == 3


# ---- libcudart interposition (fake libcudart, no CUDA needed) ----

@pytest.mark.sanitize
@backend
def test_cancel_inside_runtime_call(tmp_path):
    """pthread_cancel of a thread blocked in cudaStreamSynchronize (through
    the libcudart wrappers): the wait is recorded, marked cancelled, and the
    call its cleanup handler makes is traced, not lost."""
    exe = CUDA / "fake_app"
    need(exe)
    r = run([exe, "cancel"], tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"waiter cancelled\n"
    trace = r.trace
    assert trace["gputrace"]["events_lost"] == 0
    runtime = host_spans(trace, "cuda_runtime")
    (wait,) = [e for e in runtime if e["name"] == "cudaStreamSynchronize"]
    assert wait["args"]["cancelled"] == 1 and "result" not in wait["args"]
    assert wait["dur"] >= 40 * 1000  # blocked until main cancelled it, 50 ms in
    waiter = [e for e in runtime if e["tid"] == wait["tid"]]
    assert [e["name"] for e in waiter].count("cudaLaunchKernel") == 3000
    assert waiter[-1]["name"] == "cudaSetDevice"  # the cleanup handler's call
    assert waiter[-1]["ts"] >= wait["ts"] + wait["dur"]
    main = [e["name"] for e in runtime if e["tid"] != wait["tid"]]
    assert main == ["cudaStreamCreate", "cudaSetDevice"]


@backend
def test_runtime_calls_through_shared_libcudart(tmp_path):
    exe = CUDA / "fake_app"
    need(exe)
    plain = run([exe], traced=False)
    r = run([exe], tmp_path=tmp_path)
    assert r.returncode == plain.returncode == 0
    assert r.stdout == plain.stdout
    trace = r.trace
    runtime = host_spans(trace, "cuda_runtime")
    names = [e["name"] for e in runtime]
    assert names == ["cudaGetDeviceCount", "cudaSetDevice", "cudaSetDevice", "cudaMalloc",
                     "cudaStreamCreate", "cudaMemcpy", "cudaMemsetAsync", "cudaLaunchKernel",
                     "cudaLaunchKernel", "cudaLaunchKernel", "cudaLaunchKernel",
                     "cudaMemcpyAsync", "cudaStreamSynchronize", "cudaStreamDestroy",
                     "cudaFree"]
    assert runtime[1]["args"]["result"] == 101
    assert runtime[1]["args"]["error"] == "cudaErrorInvalidDevice"
    assert runtime[2]["args"] == {"result": 0, "correlation": runtime[2]["args"]["correlation"]}
    assert runtime[10]["args"]["error"] == "cudaErrorInvalidValue"
    # the synchronize waited for the simulated device (3 x 300 us of kernels)
    assert runtime[12]["dur"] >= 900
    # getters are counted, not traced
    folded = events(trace, ph="i", name="folded CUDA API calls")
    assert len(folded) == 1 and folded[0]["args"] == {"cudaGetDevice": 100}
    # CUPTI is not there: no device spans, and no complaint about it
    assert not [e for e in trace["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy")]
    assert notices(r.stderr) == []


@backend
def test_cuda_event_timing_without_cupti(tmp_path):
    exe = CUDA / "fake_app"
    need(exe)
    r = run([exe], tmp_path=tmp_path, env={"GPUTRACE_DISABLE_CUPTI": "1"})
    assert r.returncode == 0, r.stderr
    trace = r.trace
    runtime = {e["args"]["correlation"]: e for e in host_spans(trace, "cuda_runtime")}
    kernels = events(trace, ph="X", cat="kernel")
    copies = events(trace, ph="X", cat="gpu_memcpy")
    sets = events(trace, ph="X", cat="gpu_memset")
    # the failed launch put nothing on the device
    assert [k["name"] for k in kernels] == ["scale_kernel"] * 3
    assert sorted(c["args"]["kind"] for c in copies) == ["DtoH", "HtoD"]
    assert len(sets) == 1 and sets[0]["args"]["bytes"] == 4096
    for dev in kernels + copies + sets:
        host = runtime[dev["args"]["correlation"]]
        assert host["name"] in ("cudaLaunchKernel", "cudaMemcpy", "cudaMemcpyAsync",
                                "cudaMemsetAsync")
        assert dev["ts"] >= host["ts"]
        assert linked(trace, host, dev)
        assert dev["args"]["timing"] == "cuda_events"
    # simulated kernels take 300 us and run one after another on their stream
    ks = sorted(kernels, key=lambda k: k["ts"])
    for k in ks:
        assert 280 <= k["dur"] <= 400, k
        assert k["args"]["stream"] == 13
    for a, b in zip(ks, ks[1:]):
        assert b["ts"] >= a["ts"] + a["dur"] - 1
    pid = ks[0]["pid"]
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e["name"] in ("process_name", "thread_name")}
    assert names[(pid, 0)] == "GPU 0"
    assert names[(pid, ks[0]["tid"])] == "stream 13"
    assert trace["gputrace"]["lost_by_reason"].get("cuda_event_timing", 0) == 0


@backend
def test_injection_variables_point_at_the_library(tmp_path):
    show = ["sh", "-c", 'echo "$CUDA_INJECTION64_PATH"; echo "$NVTX_INJECTION64_PATH"']
    r = run(show, tmp_path=tmp_path)
    assert r.stdout.decode().split() == [str(LIB.resolve())] * 2
    # another tool's injection is left alone
    r = run(show, tmp_path=tmp_path, env={"CUDA_INJECTION64_PATH": "/opt/tool/libinject.so"})
    assert r.stdout.decode().split() == ["/opt/tool/libinject.so", str(LIB.resolve())]
    # and nothing is set when the CUDA backend is off
    r = run(show, tmp_path=tmp_path, env={"GPUTRACE_BACKENDS": "ze"})
    assert r.stdout.decode().split() == []


# ---- scripts/gpu-check, as far as a CPU goes ----

@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not installed (HAVE_NVCC)")
def test_gpu_check_dry_run():
    out = CUDA / "gpu-check"
    env = clean_env({"BUILD": str(BUILD), "PYTHON": "/usr/bin/python3"})
    for k in ("GT_PRELOAD", "SANITIZE"):
        if os.environ.get(k):
            env[k] = os.environ[k]
    p = subprocess.run([str(ROOT / "scripts" / "gpu-check"), "--dry-run",
                        "--out", str(out), "--no-torch"],
                       env=env, capture_output=True, timeout=300)
    text = p.stdout.decode()
    assert p.returncode == 0, text + p.stderr.decode()
    report = (out / "report.txt").read_text()
    assert "FAIL" not in report
    # without a GPU every program ran both ways, and the checker ran its self-test
    if "SKIPPED: no GPU" in report:
        for prog in ("vec_static", "vec_shared", "multi_static", "multi_shared"):
            assert f"{prog} without a GPU: same output and status, valid trace" in report
        assert "checker self-test" in report
        # the range profiler's checks ran end to end on the simulated CUDA stack
        if (BUILD / "cuda-sim" / "libcupti.so.13").exists():
            for what in ("vec_add --metrics-mode kernel, simulated CUDA stack",
                         "multi_stream --metrics-mode nvtx, simulated CUDA stack"):
                assert f"{what}" in report and "SKIPPED: profiling" not in report
    assert (out / "bin" / "multi_shared").exists()


@backend
def test_launch_stacks(tmp_path):
    exe = CUDA / "fake_app"
    need(exe)
    r = run([exe], tmp_path=tmp_path, env={"GPUTRACE_STACKS": "8"})
    assert r.returncode == 0, r.stderr
    runtime = host_spans(r.trace, "cuda_runtime")
    launches = [e for e in runtime if e["name"] == "cudaLaunchKernel"]
    assert len(launches) == 4
    for e in launches:
        assert e["args"]["stack"].endswith("main;cudaLaunchKernel"), e
    # launches only, unless GPUTRACE_STACKS_ALL
    assert not [e for e in runtime if e["name"] == "cudaMalloc" and "stack" in e["args"]]


@backend
def test_backend_off_means_untouched(tmp_path):
    exe = CUDA / "fake_app"
    need(exe)
    r = run([exe], tmp_path=tmp_path, env={"GPUTRACE_BACKENDS": "ze"})
    assert r.returncode == 0, r.stderr
    # no CUDA call recorded, nothing else either: no trace file
    assert not os.path.exists(r.trace_path)


@backend
@pytest.mark.parametrize("how", ["lib", "dlsym"])
def test_libcudart_loaded_late(tmp_path, how):
    """libcudart dlopen()ed RTLD_LOCAL after start-up (`import torch`, ctypes): its
    calls still become spans, through the real functions of that libcudart."""
    exe = CUDA / "fake_late"
    need(exe)
    plain = run([exe, how, CUDA], traced=False)
    r = run([exe, how, CUDA], tmp_path=tmp_path)
    assert plain.stdout == r.stdout
    assert r.stdout.decode().split(":")[1].strip() == "101001"  # error 101, 1 device
    runtime = host_spans(r.trace, "cuda_runtime")
    assert [e["name"] for e in runtime] == ["cudaGetDeviceCount", "cudaSetDevice"]
    assert runtime[1]["args"]["error"] == "cudaErrorInvalidDevice"
