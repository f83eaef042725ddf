"""Kineto's dynamic plug-ins (PR 1148) hosted by gputrace: profilers written
for the PyTorch profiler (test/plugins/kineto_sim.cc, C++ against Kineto's
header name, one build per behaviour) traced in programs that never load
PyTorch. Each test reads the trace back and checks it exactly, and reads the
profiler's own log of the calls it got."""
import glob
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import (APPS, BUILD, PRELOAD, ROOT, SANITIZE, ZE_SIM, clean_env, default_signals,
                      events, gputrace_lines, load_trace, need, run, sim_env, wait_trace,
                      window_ended)
from test_plugins import (HOST_APP, HOST_EXIT, HOST_STDOUT, SIMACCEL, device_pid, meta,
                          plugin_dir, queue_tids)

KSIM = BUILD / "test" / "plugins" / "kineto"
KINETO_INC = BUILD / "test" / "plugins" / "kineto_inc"
FAKE_APP = BUILD / "test" / "cuda" / "fake_app"
WALL_SLEW = BUILD / "test" / "plugins" / "wall_slew.so"
US = 1.0  # trace times are microseconds

# Types (PR 1148 revision 92fa2ffc numbering) the reference profiler supports:
# cpu_op, gpu_user_annotation, gpu_memcpy, gpu_memset, kernel, gpu_pm_counter,
# privateuse1_runtime.
ALL_TYPES = "1 3 4 5 6 22 23"


def kdir(tmp_path, *variants, name="kineto"):
    d = tmp_path / name
    d.mkdir()
    for v in variants:
        so = KSIM / f"{v}.so"
        need(so)
        shutil.copy(so, d / so.name)
    return d


def run_kineto(tmp_path, d, app=None, sleep_ms=20, env=None, expect_rc=HOST_EXIT, log="log",
               wall_slew_ppm=None, timeout=120):
    """wall_slew_ppm: the wall clock (the plug-ins' UTC) runs that much faster
    than the trace clock, as chrony slews it (up to 83333 ppm); None: the machine's own."""
    e = {"KINETO_PLUGIN_LIB_DIR_PATH": str(d), "KSIM_LOG": str(tmp_path / log)}
    e.update(env or {})
    cmd = app or [HOST_APP, str(sleep_ms)]
    need(cmd[0])
    also = []
    if wall_slew_ppm is not None:
        need(WALL_SLEW)
        also.append(WALL_SLEW)
        e["GT_TEST_WALL_SLEW_PPM"] = str(wall_slew_ppm)
    r = run(cmd, env=e, tmp_path=tmp_path, also_preload=also, timeout=timeout)
    assert r.returncode == expect_rc, r.stderr.decode(errors="replace")
    if app is None and expect_rc == HOST_EXIT:
        assert r.stdout == HOST_STDOUT
    return r


def calls(tmp_path, log="log"):
    """The profiler's calls, as it logged them ("<call> ... main|other")."""
    path = tmp_path / log
    return path.read_text().splitlines() if path.exists() else []


def lifecycle(tmp_path):
    """The calls without their details: "<call> <thread>"."""
    return [f"{l.split()[0]} {l.split()[-1]}" for l in calls(tmp_path)
            if not l.startswith(("pushed", "rc "))]


def plugin_lines(stderr):
    return [l for l in gputrace_lines(stderr) if "plug-in" in l]


def flows(t, cat):
    """[(start event, end event)] of the arrows of a category, by id."""
    s = {e["id"]: e for e in events(t, ph="s", cat=cat)}
    f = {e["id"]: e for e in events(t, ph="f", cat=cat)}
    assert set(s) == set(f)
    return [(s[i], f[i]) for i in sorted(s)]


def inside(e, span):
    return (e["pid"], e["tid"]) == (span["pid"], span["tid"]) and \
        span["ts"] <= e["ts"] <= span["ts"] + span["dur"]


def binds(t, start, end, src, dst):
    """The arrow starts inside the span src and ends inside dst, at its start
    (the writer moves an arrow point 1 ns into its slice, writer/place.c)."""
    return inside(start, src) and inside(end, dst) and end["bp"] == "e" and \
        end["ts"] - dst["ts"] < 0.0015


def own_args(e):
    """A device event's args as the plug-in gave them: without the
    correlation and the int device and stream the writer adds (Kineto's
    keys) when the plug-in gave none."""
    return {k: v for k, v in e["args"].items()
            if k != "correlation" and not (k in ("device", "stream") and isinstance(v, int))}


def start_utc(tmp_path):
    return [int(l.split("utc=")[1].split()[0]) for l in calls(tmp_path) if l.startswith("start utc=")]


def wall_line(t):
    """The trace's wall-clock line: its anchor and the pair read at its last
    checkpoint, as (clock_ns, realtime_ns, realtime ns per clock ns)."""
    a, b = t["gputrace"]["anchor"], t["gputrace"]["anchor_last"]
    c0, r0 = int(a["clock_ns"]), int(a["realtime_ns"])
    rate = (int(b["realtime_ns"]) - r0) / (int(b["clock_ns"]) - c0)
    return c0, r0, rate


def to_utc_us(t, ts):
    """A trace time as UTC microseconds, through the trace's wall-clock line."""
    return to_utc_ns(t, ts) / 1000.0


def to_utc_ns(t, ts):
    """The same in whole nanoseconds (a double holds today's UTC in
    microseconds to 0.25 us only, and two roundings of that made 1 us of error)."""
    c0, r0, rate = wall_line(t)
    return r0 + round((round(ts * 1000) - c0) * rate)


def wall_us(t, dur):
    """A trace interval (us) as the wall clock measured it."""
    return dur * wall_line(t)[2]


def exact_us(us):
    """A plug-in's interval, given in whole ns: to the trace's ns, and to the
    line's slope, which read widths tilt by a few ppm (tens under TSan)."""
    return pytest.approx(us, abs=0.0015 + 5e-5 * us)


# The wall clock as CI's machines have had it: slewed under the run (chrony,
# up to 8.3%; 1.3% seen), which the plug-ins' UTC times must come through.
# "steady" is a wall clock that neither slews nor steps (wall_slew.c at 0 ppm):
# a CI machine's own stepped ~1.1 ms under these tests twice, moving plug-ins'
# times by as much, which no mapping of UTC to the trace clock can tell apart.
WALL_SLEWS = pytest.mark.parametrize("wall_slew_ppm", [0, 50000, -30000],
                                     ids=["steady", "slewed_fast", "slewed_slow"])


# ---- the reference profiler ----

@pytest.mark.sanitize
@WALL_SLEWS
def test_reference_profiler(tmp_path, wall_slew_ppm):
    """Devices, rows, spans, times, flows, counters and metadata, exactly."""
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"), wall_slew_ppm=wall_slew_ppm)
    assert plugin_lines(r.stderr) == []
    assert lifecycle(tmp_path) == ["register main", "registerProfiler main", "query main",
                                   "create main", "query main", "start other", "stop other",
                                   "process other", "destroy other"]
    log = calls(tmp_path)
    assert log[2].startswith("query handle=null size=48")
    assert log[3] == f"create size=32 types= {ALL_TYPES} main"
    assert log[4].startswith("query handle=set size=48")
    assert log[7].startswith("process batch=1 builder=64")
    t = r.trace
    pid = device_pid(t, "NPU 0: KinetoSim")
    tids = queue_tids(t, pid)
    assert set(tids) == {"compute", "copy"}
    sort = {e["tid"]: e["args"]["sort_index"] for e in events(t, ph="M", name="thread_sort_index",
                                                              pid=pid)}
    assert sort == {tids["compute"]: 0, tids["copy"]: 1}

    launches = sorted(events(t, ph="X", name="npuLaunchKernel"), key=lambda e: e["ts"])
    kernels = sorted(events(t, ph="X", cat="kernel"), key=lambda e: e["ts"])
    copies = sorted(events(t, ph="X", cat="gpu_memcpy"), key=lambda e: e["ts"])
    fills = sorted(events(t, ph="X", cat="gpu_memset"), key=lambda e: e["ts"])
    host = launches[0]["pid"]
    assert host != pid and len(launches) == len(kernels) == len(copies) == len(fills) == 3
    for h in launches:
        assert h["cat"] == "privateuse1_runtime" and (h["pid"], h["tid"]) == (host, host)
    assert [k["name"] for k in kernels] == ["npu_kernel_0", "npu_kernel_1", "npu_kernel_2"]
    assert all((k["pid"], k["tid"]) == (pid, tids["compute"]) for k in kernels)
    assert all((c["pid"], c["tid"]) == (pid, tids["copy"]) for c in copies + fills)
    base = launches[0]["ts"]
    # the plug-in's UTC start, on the trace's clock
    assert to_utc_us(t, base) == pytest.approx(start_utc(tmp_path)[0] / 1000.0, abs=50)
    for i in range(3):
        lh, k, c, f = launches[i], kernels[i], copies[i], fills[i]
        assert wall_us(t, lh["ts"] - base) == exact_us(1000 * i)
        assert wall_us(t, lh["dur"]) == exact_us(20)
        assert wall_us(t, k["ts"] - lh["ts"]) == exact_us(50)
        assert wall_us(t, k["dur"]) == exact_us(100 + 10 * i)
        assert wall_us(t, c["ts"] - lh["ts"]) == exact_us(300)
        assert wall_us(t, c["dur"]) == exact_us(40)
        assert wall_us(t, f["ts"] - lh["ts"]) == exact_us(400)
        assert wall_us(t, f["dur"]) == exact_us(10)
        assert lh["args"]["kernel"] == f"npu_kernel_{i}"
        assert k["args"]["device"] == 0  # the writer's, as for every device's kernels
        assert k["args"]["stream"] == k["tid"]  # an integer HTA reads, the row's number
        assert own_args(k) == {
            "grid": [64, 1, 1], "registers": 32 + i, "occupancy": 0.75, "stream_label": "compute",
            "queued": True, "context": None, "shape": {"x": [1, 2], "y": "z"},
            "escaped": "tab\there \u00e9"}
        assert own_args(c) == {"bytes": 4096 * (i + 1), "kind": "HtoD"}
        assert own_args(f) == {"bytes": 512}
    # one ac2g arrow from each launch to its kernel
    ac2g = flows(t, "ac2g")
    assert len(ac2g) == 3
    for (s, e), lh, k in zip(sorted(ac2g, key=lambda p: p[0]["ts"]), launches, kernels):
        assert binds(t, s, e, lh, k)
        assert lh["args"]["correlation"] == k["args"]["correlation"]
    # forward -> backward
    fwd, = events(t, ph="X", name="aten::mm")
    bwd, = events(t, ph="X", name="MmBackward0")
    assert fwd["cat"] == bwd["cat"] == "cpu_op"
    assert (fwd["pid"], fwd["tid"]) == (bwd["pid"], bwd["tid"]) == (host, host)
    assert wall_us(t, bwd["ts"] - fwd["ts"]) == exact_us(200)
    assert wall_us(t, bwd["dur"]) == exact_us(200)
    (s, e), = flows(t, "fwdbwd")
    assert binds(t, s, e, fwd, bwd)
    # the region on the compute row
    region, = events(t, ph="X", cat="gpu_user_annotation")
    assert (region["name"], region["pid"], region["tid"]) == ("npu_region", pid, tids["compute"])
    assert wall_us(t, region["ts"] - base) == exact_us(40)
    # GPU_PM_COUNTER: counter samples on the device, numeric metadata only
    util = sorted(events(t, ph="C", name="npu_util"), key=lambda e: e["ts"])
    assert [u["args"] for u in util] == [{"busy_pct": 12.5, "sm_active": 10},
                                         {"busy_pct": 25, "sm_active": 20},
                                         {"busy_pct": 37.5, "sm_active": 30}]
    assert all(u["pid"] == pid for u in util)
    assert [wall_us(t, u["ts"] - base) for u in util] == [exact_us(0), exact_us(1000),
                                                           exact_us(2000)]
    g = t["gputrace"]
    assert g["events_recorded"] == 18 and g["events_lost"] == 0


@pytest.mark.parametrize("activities,types,kept", [
    ("kernel,counter", "6 22", {"kernel", "counter"}),
    ("xpu_runtime,gpu_memcpy", "4 23", {"runtime", "memcpy"}),
    ("annotation", "1 3", {"annotation"}),
])
def test_enabled_types_reach_create(tmp_path, activities, types, kept):
    """create gets the supported types GPUTRACE_ACTIVITIES enables (Kineto's
    names work); events of the others are not recorded."""
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"), env={"GPUTRACE_ACTIVITIES": activities})
    assert calls(tmp_path)[3] == f"create size=32 types= {types} main"
    t = r.trace
    assert len(events(t, ph="X", cat="kernel")) == (3 if "kernel" in kept else 0)
    assert len(events(t, ph="C")) == (3 if "counter" in kept else 0)
    assert len(events(t, ph="X", name="npuLaunchKernel")) == (3 if "runtime" in kept else 0)
    assert len(events(t, ph="X", cat="gpu_memcpy")) == (3 if "memcpy" in kept else 0)
    assert len(events(t, ph="X", cat="cpu_op")) == (2 if "annotation" in kept else 0)
    assert len(events(t, ph="s", cat="ac2g")) == (3 if {"kernel", "runtime"} <= kept else 0)


# Kineto's ActivityType names (libkineto ActivityType.cpp), by the latest
# revision's type number, and the gputrace kind each is recorded as.
KINETO_NAMES = {
    "cpu_op": (1, "annotation"), "user_annotation": (2, "annotation"),
    "gpu_user_annotation": (3, "annotation"), "gpu_memcpy": (4, "memcpy"),
    "gpu_memset": (5, "memset"), "kernel": (6, "kernel"), "external_correlation": (7, "runtime"),
    "cuda_runtime": (8, "runtime"), "cuda_driver": (9, "driver"),
    "cpu_instant_event": (10, "annotation"), "python_function": (11, "annotation"),
    "overhead": (12, "overhead"), "mtia_runtime": (13, "runtime"),
    "mtia_ccp_events": (14, "kernel"), "mtia_insight": (15, "overhead"),
    "cuda_sync": (16, "sync"), "glow_runtime": (17, "runtime"),
    "cuda_profiler_range": (18, "annotation"), "hpu_op": (19, "runtime"),
    "xpu_runtime": (20, "runtime"), "collective_comm": (21, "kernel"),
    "gpu_pm_counter": (22, "counter"), "privateuse1_runtime": (23, "runtime"),
    "privateuse1_driver": (24, "driver"),
}


@pytest.mark.parametrize("name", sorted(KINETO_NAMES))
def test_every_kineto_name_enables_its_type(tmp_path, name):
    """Each of Kineto's names is a GPUTRACE_ACTIVITIES word (not refused, no
    fall-back to everything): a profiler supporting every type is created
    with that type and the others of its kind, nothing else."""
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"),
                   env={"GPUTRACE_ACTIVITIES": name, "KSIM_ALL_TYPES": "1"})
    assert gputrace_lines(r.stderr) == []
    kind = KINETO_NAMES[name][1]
    want = sorted(n for n, k in KINETO_NAMES.values() if k == kind)
    assert KINETO_NAMES[name][0] in want
    assert calls(tmp_path)[3] == f"create size=32 types= {' '.join(map(str, want))} main"


def test_no_enabled_type_not_created(tmp_path):
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"), env={"GPUTRACE_ACTIVITIES": "sync"})
    assert lifecycle(tmp_path) == ["register main", "registerProfiler main", "query main"]
    assert plugin_lines(r.stderr) == []
    # nothing recorded: no trace file
    assert not os.path.exists(r.trace_path)


def test_rows_named_after_use(tmp_path):
    """Device and resource infos given after the events (and after gputrace
    wrote the rows): the rows take those names, the last ones in the trace."""
    r = run_kineto(tmp_path, kdir(tmp_path, "late_info"),
                   env={"KSIM_INFO_DELAY_MS": "200", "GPUTRACE_FLUSH_MS": "10"})
    t = r.trace
    names = [(e["name"], e["pid"], e["tid"], e["args"]["name"]) for e in events(t, ph="M")
             if e["name"] in ("process_name", "thread_name") and e["pid"] != t["gputrace"]["pid"]]
    pid = names[0][1]
    assert [n[3] for n in names] == ["KinetoSim device 0", "stream 1", "stream 2",
                                     "NPU 0: KinetoSim", "compute", "copy"]
    assert device_pid(t, "NPU 0: KinetoSim") == pid  # named twice: the last name wins
    last = {(n[1], n[2]): n[3] for n in names}
    kernels = events(t, ph="X", cat="kernel")
    assert len(kernels) == 3 and {last[(k["pid"], k["tid"])] for k in kernels} == {"compute"}
    sort = {e["tid"]: e["args"]["sort_index"] for e in events(t, ph="M", name="thread_sort_index",
                                                              pid=pid)}
    assert sort[kernels[0]["tid"]] == 0


def test_also_from_gputrace_plugin_path(tmp_path):
    """A Kineto plug-in named on GPUTRACE_PLUGIN_PATH is hosted as well; on
    both paths it is loaded once."""
    d = kdir(tmp_path, "npu")
    r = run_kineto(tmp_path, d, env={"GPUTRACE_PLUGIN_PATH": str(d / "npu.so")})
    assert plugin_lines(r.stderr) == []
    assert [l for l in lifecycle(tmp_path) if l.startswith("create")] == ["create main"]
    assert len(events(r.trace, ph="X", cat="kernel")) == 3


def test_other_libraries_in_kineto_dir_are_passed_over(tmp_path):
    """Kineto's directory may hold other libraries: no word about them."""
    d = kdir(tmp_path, "npu")
    shutil.copy(BUILD / "test" / "plugins" / "good" / "libsimaccel.so", d / "libsimaccel.so")
    noreg = BUILD / "test" / "fault" / "plugin_noregister.so"
    if noreg.exists():
        shutil.copy(noreg, d / "zzz_noregister.so")
    r = run_kineto(tmp_path, d)
    assert plugin_lines(r.stderr) == []
    t = r.trace
    # the gputrace plug-in there is loaded too, beside the Kineto one
    assert len(events(t, ph="X", name="sim_kernel_0")) == 1
    assert len(events(t, ph="X", name="npu_kernel_0")) == 1


def test_other_libraries_past_the_limit_are_passed_over(tmp_path):
    """With 16 plug-ins loaded, a library of Kineto's directory that is no
    plug-in is still passed over without a word; a 17th plug-in gets its line."""
    d = kdir(tmp_path, "npu")
    for i in range(1, 16):
        shutil.copy(d / "npu.so", d / f"npu{i:02d}.so")
    noreg = BUILD / "test" / "fault" / "plugin_noregister.so"
    need(noreg)
    shutil.copy(noreg, d / "zz_noregister.so")
    r = run_kineto(tmp_path, d)
    assert plugin_lines(r.stderr) == []
    assert len(events(r.trace, ph="X", name="npu_kernel_0")) == 16
    shutil.copy(d / "npu.so", d / "zzz_npu.so")
    r = run_kineto(tmp_path, d)
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d / 'zzz_npu.so'}: more than 16 plug-ins; skipped"]
    assert len(events(r.trace, ph="X", name="npu_kernel_0")) == 16


# ---- revisions ----

def test_first_revision(tmp_path):
    """A plug-in of the PR's first revision (56-byte interface and builder,
    types 0-14): no types to query, a builder of its layout, its numbering."""
    r = run_kineto(tmp_path, kdir(tmp_path, "rev1"))
    assert plugin_lines(r.stderr) == []
    log = calls(tmp_path)
    assert [l.split()[0] for l in log] == ["register", "query", "create", "query", "start",
                                           "stop", "process", "destroy"]
    assert log[1].startswith("query handle=null")
    assert log[2] == "create size=32 types= - main"
    assert log[6].startswith("process batch=1 builder=56")
    t = r.trace
    assert len(events(t, ph="X", cat="cuda_runtime", name="npuLaunchKernel")) == 3
    assert len(events(t, ph="X", cat="kernel")) == 3
    sync, = events(t, ph="X", cat="cuda_sync")  # 13 in its numbering
    assert sync["name"] == "npuSynchronize"
    assert len(events(t, ph="C", name="npu_util")) == 3  # 14 in its numbering
    assert len(flows(t, "ac2g")) == 3 and len(flows(t, "fwdbwd")) == 1
    # no addDeviceInfo in that revision: the device keeps gputrace's name
    pid = device_pid(t, "KinetoSim device 0")
    assert set(queue_tids(t, pid)) == {"compute", "copy"}


def test_newer_revision(tmp_path):
    """Every struct bigger than today's (a later revision): read as far as
    this ABI goes, the rest ignored."""
    r = run_kineto(tmp_path, kdir(tmp_path, "newer"))
    assert plugin_lines(r.stderr) == []
    t = r.trace
    device_pid(t, "NPU 0: KinetoSim")
    assert len(events(t, ph="X", cat="kernel")) == 3
    assert len(events(t, ph="C")) == 3
    assert len(flows(t, "ac2g")) == 3 and len(flows(t, "fwdbwd")) == 1
    assert t["gputrace"]["events_recorded"] == 18


# ---- correlation ----

ZE_LAUNCHES = {"zeCommandListAppendMemoryCopy", "zeCommandListAppendLaunchKernel",
               "zeCommandListAppendMemoryFill", "zeCommandQueueExecuteCommandLists"}
CUDA_LAUNCHES = {"cudaMemcpy", "cudaMemsetAsync", "cudaLaunchKernel", "cudaMemcpyAsync"}


def check_pushed(tmp_path, t, cat, launch_names, count):
    """Each launch-class span had its id pushed around it, on its thread:
    the plug-in's span from push to pop lies inside it, linked by an arrow."""
    spans = [e for e in events(t, ph="X", cat=cat) if e["name"] in launch_names]
    assert len(spans) == count
    work = {w["args"]["External id"]: w for w in events(t, ph="X", name="npu_work")}
    assert set(work) == {s["args"]["correlation"] for s in spans}
    ac2g = flows(t, "ac2g")
    for s in spans:
        w = work[s["args"]["correlation"]]
        assert s["ts"] <= w["ts"] and w["ts"] + w["dur"] <= s["ts"] + s["dur"] + 0.001
        assert len([1 for a, b in ac2g if binds(t, a, b, s, w)]) == 1
    pushed = [l.split() for l in calls(tmp_path) if l.startswith("pushed")]
    assert len(pushed) == count and {int(p[3]) for p in pushed} == {t["gputrace"]["pid"]}
    assert "pop without push" not in calls(tmp_path)


@pytest.mark.sanitize
@WALL_SLEWS
def test_correlation_level_zero(tmp_path, wall_slew_ppm):
    app = APPS / "ze_basic"
    r = run_kineto(tmp_path, kdir(tmp_path, "corr"), app=[app], env=sim_env(), expect_rc=0,
                   wall_slew_ppm=wall_slew_ppm)
    assert plugin_lines(r.stderr) == []
    # 3 appends x 2 copies, 2 kernels, 1 fill; 3 executes; immediate: a kernel, a copy
    check_pushed(tmp_path, r.trace, "ze_api", ZE_LAUNCHES, 10)


@WALL_SLEWS
def test_correlation_cuda_runtime(tmp_path, wall_slew_ppm):
    r = run_kineto(tmp_path, kdir(tmp_path, "corr"), app=[FAKE_APP], expect_rc=0,
                   wall_slew_ppm=wall_slew_ppm)
    assert plugin_lines(r.stderr) == []
    # a copy, a fill, 4 launches (one refused by the runtime), an async copy
    check_pushed(tmp_path, r.trace, "cuda_runtime", CUDA_LAUNCHES, 7)


def test_correlation_popped_when_a_launch_is_cancelled_inside(tmp_path):
    """A thread cancelled inside cudaLaunchKernel (fake_app cancel-launch): the id pushed
    around the call is popped as the call unwinds, before the thread's cleanup handler
    launches again. It stayed pushed: the profiler never saw its pop (its span ended at 0)
    and the stack it keeps per thread held a stale id under every later launch's."""
    r = run_kineto(tmp_path, kdir(tmp_path, "corr"), app=[FAKE_APP, "cancel-launch"],
                   expect_rc=0)
    assert r.stdout == b"launcher cancelled\n"
    assert plugin_lines(r.stderr) == []
    spans = [e for e in events(r.trace, ph="X", cat="cuda_runtime")
             if e["name"] == "cudaLaunchKernel"]
    assert [s["args"].get("cancelled", 0) for s in spans] == [0, 1, 0]
    work = {w["args"]["External id"]: w for w in events(r.trace, ph="X", name="npu_work")}
    assert set(work) == {s["args"]["correlation"] for s in spans}
    for s in spans:
        w = work[s["args"]["correlation"]]
        # popped inside the call it was pushed for, the cancelled one as it unwound
        assert s["ts"] <= w["ts"] < w["ts"] + w["dur"] <= s["ts"] + s["dur"] + 0.001, (s, w)
    pushed = [l.split() for l in calls(tmp_path) if l.startswith("pushed")]
    assert len(pushed) == 3 and not [p for p in pushed if "unpopped" in p], pushed
    # each span, the cancelled one too, joined to its profiler span by one arrow
    ac2g = flows(r.trace, "ac2g")
    for s in spans:
        w = work[s["args"]["correlation"]]
        assert len([1 for a, b in ac2g if binds(r.trace, a, b, s, w)]) == 1, s


def test_correlation_of_a_driver_call_cancelled_inside(tmp_path):
    """A thread cancelled inside the driver's cuMemcpyDtoH (sim_app cancel drv-memcpy, on
    the simulated CUDA stack): its call, drawn cancelled as the thread exits, has no pop
    made for it there, where the profiler's per-thread state is gone (C++ thread_local
    destructors run before the thread's keys'): a pop there crashed the process."""
    app = BUILD / "test" / "cuda" / "sim_app"
    r = run_kineto(tmp_path, kdir(tmp_path, "corr"), app=[app, "cancel", "drv-memcpy"],
                   env={"LD_LIBRARY_PATH": str(BUILD / "cuda-sim")}, expect_rc=0)
    assert r.stdout == b"waiter cancelled\n"
    assert plugin_lines(r.stderr) == []
    (cancelled,) = [e for e in events(r.trace, ph="X", cat="cuda_driver")
                    if e["name"] == "cuMemcpyDtoH"]
    assert cancelled["args"]["cancelled"] == 1
    work = {w["args"]["External id"] for w in events(r.trace, ph="X", name="npu_work")}
    assert cancelled["args"]["correlation"] in work


def test_no_push_without_listener(tmp_path):
    """A profiler without push/pop gets none; the launches trace as always."""
    app = APPS / "ze_basic"
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"), app=[app], env=sim_env(), expect_rc=0)
    assert plugin_lines(r.stderr) == []
    assert not [l for l in calls(tmp_path) if "push" in l]
    assert len(events(r.trace, ph="X", cat="kernel")) == 3 + 7  # the plug-in's and the device's


# ---- threads, cycles ----

@pytest.mark.sanitize
def test_builder_from_many_threads(tmp_path):
    r = run_kineto(tmp_path, kdir(tmp_path, "threads"))
    assert plugin_lines(r.stderr) == []
    t = r.trace
    pid = device_pid(t, "NPU 0: KinetoSim")
    tids = queue_tids(t, pid)
    ks = events(t, ph="X", cat="kernel")
    assert len(ks) == 1000 and t["gputrace"]["events_lost"] == 0
    for n in range(4):
        mine = [k for k in ks if k["name"] == f"t{n}_kernel"]
        assert sorted(k["args"]["i"] for k in mine) == list(range(250))
        assert {k["tid"] for k in mine} == {tids["copy" if n % 2 else "compute"]}


def test_flow_from_an_instant_is_counted(tmp_path):
    """An ASYNC_CPU_GPU flow starting at a cpu_instant_event: an arrow binds to
    a slice, and an instant is none (Perfetto drops such an arrow), so no arrow
    is drawn and the flow is counted (GPUTRACE_LOG=info); the others are drawn."""
    d = kdir(tmp_path, "npu")
    r = run_kineto(tmp_path, d, env={"KSIM_ALL_TYPES": "1", "KSIM_INSTANT_FLOW": "1",
                                     "GPUTRACE_LOG": "info"})
    t = r.trace
    inst, = events(t, ph="i", name="f_instant")
    assert inst["cat"] == "cpu_instant_event"
    k, = events(t, ph="X", name="f_kernel")
    ac2g = flows(t, "ac2g")
    assert len(ac2g) == 3 and not any(inside(e, k) for _, e in ac2g)
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/npu.so (KinetoSim): 0 events refused, 0 metadata entries "
        "beyond 17 per event, 1 flows that do not start at a host span or touch an instant, "
        "0 events past 64 devices or 256 rows: not recorded"]


def test_rows_past_a_profilers_limit_are_counted(tmp_path):
    """A profiler has 256 (deviceId, resourceId) rows: events on more are not
    recorded, counted lost (plugin_dropped) and named at exit (GPUTRACE_LOG=info),
    never filed on another row; the rows it has keep theirs. The line counts the
    events, as the trailer does (it once counted each row's addResourceInfo too:
    92 "events" for 46 lost)."""
    d = kdir(tmp_path, "npu")
    r = run_kineto(tmp_path, d, env={"KSIM_ROWS": "300", "GPUTRACE_LOG": "info"})
    t = r.trace
    pid = device_pid(t, "NPU 0: KinetoSim")
    tids = queue_tids(t, pid)
    rk = events(t, ph="X", name=None, pid=pid)
    rows = [e for e in rk if e["name"].startswith("row_kernel_")]
    # compute and copy are two of the 256: the first 254 more get a row each
    assert sorted(int(e["name"].rsplit("_", 1)[1]) for e in rows) == list(range(254))
    assert len({e["tid"] for e in rows}) == 254
    assert {tids[f"row {int(e['name'].rsplit('_', 1)[1])}"] for e in rows} == {e["tid"] for e in rows}
    assert not {e["tid"] for e in rows} & {tids["compute"], tids["copy"]}
    assert len([e for e in rk if e["name"].startswith("npu_kernel_")]) == 3
    assert t["gputrace"]["lost_by_reason"]["plugin_dropped"] == 46
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/npu.so (KinetoSim): 0 events refused, 0 metadata entries "
        "beyond 17 per event, 0 flows that do not start at a host span or touch an instant, "
        "46 events past 64 devices or 256 rows: not recorded"]


def test_cycle_setting(tmp_path):
    """GPUTRACE_KINETO_CYCLE_MS: stop, processEvents, start on gputrace's
    thread every period; at exit the last stop and processEvents; each
    batch's flows stay within it. On the steady wall clock: on the machine's own, CI
    twice read a kernel 50 us after its launch as 50.024 and 50.028 us on the run's
    average line (500 ppm: adjtime's fixed slew rate, most likely, started or ended
    mid-run, which no line through the run's ends follows)."""
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"), sleep_ms=450,
                   env={"GPUTRACE_KINETO_CYCLE_MS": "100"}, wall_slew_ppm=0)
    assert plugin_lines(r.stderr) == []
    seq = lifecycle(tmp_path)
    assert seq[:6] == ["register main", "registerProfiler main", "query main", "create main",
                       "query main", "start other"]
    assert seq[-3:] == ["stop other", "process other", "destroy other"]
    middle = seq[6:-3]
    batches = len(middle) // 3
    assert batches >= 2 and middle == ["stop other", "process other", "start other"] * batches
    t = r.trace
    launches = sorted(events(t, ph="X", name="npuLaunchKernel"), key=lambda e: e["ts"])
    kernels = sorted(events(t, ph="X", cat="kernel"), key=lambda e: e["ts"])
    assert len(launches) == len(kernels) == 3 * (batches + 1)
    for s, e in flows(t, "ac2g"):
        lh = [h for h in launches if inside(s, h)]
        k = [k for k in kernels if inside(e, k)]
        assert len(lh) == len(k) == 1 and wall_us(t, k[0]["ts"] - lh[0]["ts"]) == exact_us(50)
    assert len(flows(t, "fwdbwd")) == batches + 1


def test_exec_hands_over_first(tmp_path):
    """At exec the profiler is stopped and hands its events over before the
    replaced image's file is ended: they are in that file (end "exec"); the
    new image's profiler records into the next file."""
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"), app=[HOST_APP, "50", "exec"])
    assert r.stdout == HOST_STDOUT and plugin_lines(r.stderr) == []
    image = ["register main", "registerProfiler main", "query main", "create main",
             "query main", "start other", "stop other", "process other"]
    assert lifecycle(tmp_path) == image + image + ["destroy other"]
    for path, end in ((r.trace_path, "exec"), (tmp_path / "trace.1.json", "exit")):
        t = load_trace(path)
        g = t["gputrace"]
        assert (g["complete"], g["end"], g["events_lost"]) == (True, end, 0)
        assert [k["name"] for k in sorted(events(t, ph="X", cat="kernel"),
                                          key=lambda e: e["ts"])] == \
            ["npu_kernel_0", "npu_kernel_1", "npu_kernel_2"]
        assert len(flows(t, "ac2g")) == 3 and g["events_recorded"] == 18


def test_failed_exec_starts_again(tmp_path):
    """An exec that fails: the profiler stopped for it is started again, and
    hands over at exit too; both batches in the one file."""
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"), app=[HOST_APP, "50", "exec-fail"])
    assert r.stdout == HOST_STDOUT and plugin_lines(r.stderr) == []
    assert lifecycle(tmp_path) == [
        "register main", "registerProfiler main", "query main", "create main", "query main",
        "start other", "stop other", "process other", "start other", "stop other",
        "process other", "destroy other"]
    t = r.trace
    assert t["gputrace"]["end"] == "exit" and t["gputrace"]["events_lost"] == 0
    assert len(events(t, ph="X", cat="kernel")) == 6 and len(flows(t, "ac2g")) == 6


def test_cycle_setting_checked(tmp_path):
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"), env={"GPUTRACE_KINETO_CYCLE_MS": "50"})
    assert gputrace_lines(r.stderr) == [
        "gputrace: GPUTRACE_KINETO_CYCLE_MS='50' is not valid: expected 0/off, or milliseconds "
        "from 100 to 3600000; using the default"]
    assert lifecycle(tmp_path).count("process other") == 1


# ---- capture windows ----

def window_spans(t, n):
    """The spans of window n's file, each checked inside the window, nothing lost."""
    info = t["gputrace"]
    assert info["capture"]["window"] == n and info["events_lost"] == 0, info
    lo, hi = info["capture"]["start_ns"], info["capture"]["end_ns"]
    spans = events(t, ph="X")
    for e in spans:
        assert lo <= round(e["ts"] * 1000) and round((e["ts"] + e["dur"]) * 1000) <= hi, e
    return spans


def itt_window_traces(tmp_path):
    """ze_itt's two window files (steps 3 and 5), read: [(trace, spans)]."""
    files = [tmp_path / "trace.json", tmp_path / "trace-w2.json"]
    assert sorted(p.name for p in tmp_path.glob("trace*")) == sorted(p.name for p in files)
    out = []
    for n, (path, step) in enumerate(zip(files, (3, 5)), 1):
        t = load_trace(path)
        spans = window_spans(t, n)
        assert {e["args"]["gx"] for e in spans if "gx" in e.get("args", {})} == {step}
        out.append((t, spans))
    return out


@pytest.mark.sanitize
@WALL_SLEWS
def test_capture_windows_start_and_stop_profiler(tmp_path, wall_slew_ppm):
    """--capture-range cudaProfilerApi over a Level Zero program whose ITT resume/pause mark
    steps 3 and 5 (ze_itt, 30 ms in each window): the profiler is created at start but
    started only as each window opens, stopped and processed as it closes (on a caller
    thread of gputrace's, which the thread that marks the range waits for, bounded), so
    each window's own file holds exactly one batch of its events, all inside that window,
    and nothing of it is recorded outside."""
    app = APPS / "ze_itt"
    need(ZE_SIM)
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"), app=[app, "6", "30"], expect_rc=0,
                   env=sim_env({"GPUTRACE_CAPTURE_RANGE": "cudaProfilerApi",
                                "GPUTRACE_CAPTURE_COUNT": "0"}), wall_slew_ppm=wall_slew_ppm)
    assert plugin_lines(r.stderr) == [] and r.stdout == b"ze_itt: 6 steps, ITT protocol 2\n"
    assert lifecycle(tmp_path) == [
        "register main", "registerProfiler main", "query main", "create main", "query main",
        "start other", "stop other", "process other",
        "start other", "stop other", "process other", "destroy other"]
    # each window: its own step, and the profiler's batch of this window's start
    for (t, spans), base in zip(itt_window_traces(tmp_path), start_utc(tmp_path)):
        kernels = sorted(e["name"] for e in spans if e["cat"] == "kernel")
        assert kernels == ["npu_kernel_0", "npu_kernel_1", "npu_kernel_2", "step"]
        launches = sorted((e for e in spans if e["name"] == "npuLaunchKernel"),
                          key=lambda e: e["ts"])
        assert [round(to_utc_ns(t, e["ts"]) - base, -3) for e in launches] == [
            0, 1000000, 2000000]
        assert len(events(t, ph="X", name="Memcpy HtoD")) == 3
        assert len(flows(t, "ac2g")) >= 3 and len(flows(t, "fwdbwd")) == 1


def test_delay_duration_window_starts_and_stops_profiler_on_drain_thread(tmp_path):
    """A --delay/--duration window (opened and closed by gputrace's drain thread, which the
    paused process runs for its plug-ins): the profiler starts and stops there, once, and
    the window's file holds its batch, inside the window."""
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"), sleep_ms=500,
                   env={"GPUTRACE_DELAY": "0.1", "GPUTRACE_DURATION": "0.2"})
    assert plugin_lines(r.stderr) == []
    assert lifecycle(tmp_path) == [
        "register main", "registerProfiler main", "query main", "create main", "query main",
        "start other", "stop other", "process other", "destroy other"]
    t = r.trace
    spans = window_spans(t, 1)
    assert sorted(e["name"] for e in spans if e["cat"] == "kernel") == [
        "npu_kernel_0", "npu_kernel_1", "npu_kernel_2"]
    # started within the drain thread's poll of the window's opening
    lo = t["gputrace"]["capture"]["start_ns"]
    assert 0 <= start_utc(tmp_path)[0] - to_utc_us(t, lo / 1000) * 1000 < 15e6


def test_triggered_window_in_a_range_process_starts_and_stops_profiler(tmp_path):
    """A process traced with --capture-range that never marks a range, given a window from
    outside (`gputrace capture --duration`): the drain thread starts the profiler as that
    window opens and stops it as it closes, as for any window no range opened."""
    need(HOST_APP)
    run_dir = tmp_path / "run"
    env = clean_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
                     "GPUTRACE_SUMMARY": "0", "GPUTRACE_RUN_DIR": str(run_dir),
                     "GPUTRACE_CAPTURE_RANGE": "cudaProfilerApi",
                     "KINETO_PLUGIN_LIB_DIR_PATH": str(kdir(tmp_path, "npu")),
                     "KSIM_LOG": str(tmp_path / "log")})
    # it runs until the test closes its stdin, once the window has ended (a fixed 1500 ms
    # raced the steps: a loaded machine found the process ended before the capture)
    p = subprocess.Popen([str(HOST_APP), "60000", "until-eof"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    try:
        deadline = time.monotonic() + 10
        # the profiler made first: a window open as it is made starts it there, on the
        # main thread (a loaded machine ran the constructor that late)
        while not ((run_dir / str(p.pid)).is_file() and len(lifecycle(tmp_path)) >= 5) and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        r = subprocess.run([str(ROOT / "scripts" / "gputrace"), "capture", "--duration", "0.3",
                            str(p.pid)], env=clean_env({"GPUTRACE_RUN_DIR": str(run_dir)}),
                           capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr
        wait_trace(tmp_path / "trace.json", window_ended, "window", timeout=30)
    finally:
        out, err = p.communicate(timeout=60)
    assert p.returncode == HOST_EXIT and out == HOST_STDOUT, err
    assert plugin_lines(err) == []
    assert lifecycle(tmp_path) == [
        "register main", "registerProfiler main", "query main", "create main", "query main",
        "start other", "stop other", "process other", "destroy other"]
    (path,) = glob.glob(str(tmp_path / "trace*.json"))
    spans = window_spans(load_trace(path), 1)
    assert sorted(e["name"] for e in spans if e["cat"] == "kernel") == [
        "npu_kernel_0", "npu_kernel_1", "npu_kernel_2"]


def test_capture_windows_start_and_stop_gputrace_plugin(tmp_path):
    """The same for a plug-in of gputrace's own ABI (SimAccel): start as each window opens
    (its collector records a batch from then), stop and flush as it closes; each window's
    file holds that window's batch only."""
    app = APPS / "ze_itt"
    need(ZE_SIM)
    need(app)
    r = run([app, "6", "30"], tmp_path=tmp_path, env=sim_env({
        "GPUTRACE_PLUGIN_PATH": str(plugin_dir(tmp_path, SIMACCEL)),
        "GPUTRACE_PLUGIN_CONFIG": "simaccel:kernels=2",
        "GPUTRACE_CAPTURE_RANGE": "cudaProfilerApi", "GPUTRACE_CAPTURE_COUNT": "0"}))
    assert r.returncode == 0 and gputrace_lines(r.stderr) == [], r.stderr
    for t, spans in itt_window_traces(tmp_path):
        assert sorted(e["name"] for e in spans if e["cat"] == "kernel") == [
            "sim_kernel_0", "sim_kernel_1", "step"]
        launches = sorted(e["ts"] for e in spans if e["name"] == "simLaunchKernel")
        assert len(launches) == 2 and launches[1] - launches[0] == pytest.approx(1000, abs=0.01)


# ---- broken plug-ins ----

BROKEN = {
    "register_fails": (r"register_fails\.so: KinetoPlugin_register\(\) returned 5; skipped",
                       ["register", "registerProfiler"]),
    "create_fails": (r"create_fails\.so \(KinetoSim\): profilerCreate\(\) returned -1; "
                     r"plug-in disabled, tracing goes on",
                     ["register", "registerProfiler", "query", "create"]),
    "start_fails": (r"start_fails\.so \(KinetoSim\): profilerStart\(\) returned 3; "
                    r"plug-in disabled, tracing goes on",
                    ["register", "registerProfiler", "query", "create", "query", "start"]),
    "process_fails": (r"process_fails\.so \(KinetoSim\): profilerProcessEvents\(\) returned 7; "
                      r"plug-in disabled, tracing goes on",
                      ["register", "registerProfiler", "query", "create", "query", "start",
                       "stop", "process"]),
    "wrong_size": (r"wrong_size\.so: registerProfiler\(\) got a KinetoPlugin_ProfilerInterface "
                   r"of 40 bytes; accepted: 88 or more \(Kineto PR 1148 revision 92fa2ffc and "
                   r"later\) or 56 \(its first revision\); profiler skipped",
                   ["register", "registerProfiler"]),
    "no_stop": (r"no_stop\.so: registerProfiler\(\) got an interface without profilerStop\(\), "
                r"which is required; profiler skipped", ["register", "registerProfiler"]),
    "null_handle": (r"null_handle\.so \(KinetoSim\): profilerCreate\(\) gave no profiler \(a NULL "
                    r"handle\); plug-in disabled, tracing goes on",
                    ["register", "registerProfiler", "query", "create"]),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_one_line(tmp_path, name):
    """One line naming the file and the call; never called again (not even
    destroy); the program and the trace go on."""
    d = kdir(tmp_path, name)
    r = run_kineto(tmp_path, d)
    lines = plugin_lines(r.stderr)
    pattern, seq = BROKEN[name]
    assert len(lines) == 1 and re.fullmatch(
        "gputrace: plug-in " + re.escape(str(d)) + "/" + pattern, lines[0]), lines
    assert [l.split()[0] for l in lifecycle(tmp_path)] == seq
    if name != "process_fails":
        # the program goes on; a plug-in that recorded nothing: no trace file
        assert not os.path.exists(r.trace_path)
        return
    t = r.trace
    # what it handed over before failing stays
    assert [k["name"] for k in events(t, ph="X", cat="kernel")] == [
        "before_failure_0", "before_failure_1"]
    assert t["gputrace"]["complete"] is True


def test_broken_next_to_good(tmp_path):
    d = kdir(tmp_path, *BROKEN, "npu")
    r = run_kineto(tmp_path, d)
    assert len(plugin_lines(r.stderr)) == len(BROKEN)
    t = r.trace
    assert len(events(t, ph="X", name="npu_kernel_1")) == 1
    assert len(flows(t, "ac2g")) == 3


def test_push_fails(tmp_path):
    app = APPS / "ze_basic"
    d = kdir(tmp_path, "push_fails")
    r = run_kineto(tmp_path, d, app=[app], env=sim_env(), expect_rc=0)
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/push_fails.so (KinetoSim): profilerPushCorrelationId() returned 9; "
        "plug-in disabled, tracing goes on"]
    assert [l.split()[0] for l in lifecycle(tmp_path)] == [
        "register", "registerProfiler", "query", "create", "query", "start"]
    assert len(events(r.trace, ph="X", cat="ze_api")) > 40


BAD_JSON = [  # what the plug-in gave -> the arg in the trace
    ("not json", "not json"), ('{"a":', '{"a":'), ('"unterminated', '"unterminated'),
    (b"\xff\xfe".decode("latin-1"), "\u00ff\u00fe"), ("[1,2]]", "[1,2]]"), ("NaN", "NaN"),
    ("01", "01"), ("+1", "+1"), ("'single'", "'single'"), ('"ctl\x01"', '"ctl\x01"'),
    ("[1,]", "[1,]"), ('{"k" 1}', '{"k" 1}'), ("tru", "tru"), ("1.", "1."),
    ('"bad \\x escape"', '"bad \\x escape"'),
    ('"\\ud800 lone surrogate escape"', '"\\ud800 lone surrogate escape"'),
    ("1e400", float("inf")), ("-0", 0), ("  [ ]  ", []), ("{}", {}), ('"\\u00e9"', "\u00e9"),
    ("12345678901234567890123", 12345678901234567890123),
]


def test_metadata_not_json(tmp_path):
    """Values that are not JSON are kept as strings, valid ones as the JSON
    they are; the file stays valid JSON for a real parser."""
    d = kdir(tmp_path, "bad_json")
    r = run_kineto(tmp_path, d, env={"GPUTRACE_LOG": "info"})
    text = open(r.trace_path, encoding="utf-8").read()
    t = json.loads(text)
    got = {e["name"]: own_args(e) for e in events(t, ph="X", cat="kernel")}
    for i, (_, want) in enumerate(BAD_JSON):
        assert got[f"bad_{i}"] == {"value": want}, (i, got[f"bad_{i}"])
    assert got["deep"]["deep"] == json.loads("[" * 64 + "]" * 64)
    assert got["deep"]["too_deep"] == "[" * 65 + "]" * 65
    assert got["many"] == {f"k{i}": i for i in range(17)}  # GT_ARGS_MAX
    # the ids the writer adds are not entries: 17 and the device's and the stream's
    many = next(e for e in events(t, ph="X", cat="kernel") if e["name"] == "many")
    assert sorted(many["args"]) == sorted([f"k{i}" for i in range(17)] + ["device", "stream"])
    # the README says the same cap
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "JSON text (17 entries at most)" in readme
    assert "17 entries per event at most" in readme
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/bad_json.so (KinetoSim): 0 "
        "events refused, 3 metadata entries beyond 17 per event, 0 flows that do not start at a "
        "host span or touch an instant, 0 events past 64 devices or 256 rows: not recorded"]


def test_names_and_values_cut_at_a_character(tmp_path):
    """Row names longer than 95 bytes and metadata values longer than 4096
    bytes are cut at the end of a character, never inside one (the first
    byte alone showed as another character: 'Ã', 'â')."""
    r = run_kineto(tmp_path, kdir(tmp_path, "npu"), env={"KSIM_LONG_NAMES": "1"})
    t = r.trace
    dev = "NP" + "\u00e9" * 46  # 94 bytes: the 47th character did not fit whole
    pid = device_pid(t, dev)
    assert set(queue_tids(t, pid)) == {"q" + "\u20ac" * 31, "copy"}
    kernels = events(t, ph="X", cat="kernel")
    assert len(kernels) == 3
    assert {k["args"]["cut_utf8"] for k in kernels} == {"x" + "\u00e9" * 2047}


def test_builder_misused(tmp_path):
    """Refused calls return -1 as Kineto's builder does, the first one has a
    line; what Kineto accepts is accepted."""
    d = kdir(tmp_path, "bad_calls")
    r = run_kineto(tmp_path, d)
    rcs = dict(l.split()[1:3] for l in calls(tmp_path) if l.startswith("rc "))
    assert rcs == {"name-first": "-1", "meta-first": "-1", "null-event": "-1",
                   "small-event": "-1", "ok-event": "0", "null-name": "-1", "null-meta": "-1",
                   "small-flow": "-1", "null-device": "-1", "zero-time": "-1", "backwards": "0",
                   "unknown-type": "0", "far-start": "-1", "far-end": "-1",
                   "unterminated-row": "0", "on-unterminated-row": "0",
                   "stale-builder": "-1"}
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/bad_calls.so (KinetoSim): setLastEventName() refused: no event "
        "added yet (the first refusal; the others are counted)"]
    ks = {k["name"]: k for k in events(r.trace, ph="X", cat="kernel")}
    # at_zero: before the clock's zero; far_start, far_end: INT64_MAX (the trace stretched
    # over 7427248875 s)
    assert set(ks) == {"good", "backwards", "unknown_type", "on_unterminated_row"}
    assert ks["backwards"]["dur"] == 0
    # a row name with no NUL before an unmapped page: 95 bytes of it read and
    # kept (all of it was read, past its end: the process died by SIGSEGV)
    row = ks["on_unterminated_row"]
    assert meta(r.trace, "thread_name")[(row["pid"], row["tid"])] == "u" * 95


def test_builder_call_after_process_events(tmp_path):
    """A call through the builder after processEvents returned (a collector
    thread of the profiler's, late) is refused with -1, as Kineto's builder
    does, and, the profiler's first refusal, has its line: the kernel it
    handed over was dropped without a word."""
    d = kdir(tmp_path, "late_call")
    r = run_kineto(tmp_path, d)
    assert [l.split()[1:3] for l in calls(tmp_path) if l.startswith("rc ")] == [
        ["late-event", "-1"]]
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/late_call.so (KinetoSim): addEvent() refused: called after "
        "profilerProcessEvents() returned (the builder is valid during that call only) (the "
        "first refusal; the others are counted)"]
    ks = sorted(events(r.trace, ph="X", cat="kernel"), key=lambda e: e["ts"])
    assert [k["name"] for k in ks] == ["npu_kernel_0", "npu_kernel_1", "npu_kernel_2"]


@pytest.mark.sanitize
def test_crash_in_process_events(tmp_path):
    """A fault in processEvents at exit: the process dies by it, and the trace
    holds what was handed over before, closed as after any crash."""
    r = run_kineto(tmp_path, kdir(tmp_path, "crash"), expect_rc=-11)
    t = r.trace
    assert t["gputrace"]["complete"] is True and t["gputrace"]["end"] == "signal SIGSEGV"
    # the fifth was still being described when it crashed
    assert [k["name"] for k in events(t, ph="X", cat="kernel")] == ["before_crash"] * 4


def test_crash_in_a_cycle_dies_at_once(tmp_path):
    """A fault in a GPUTRACE_KINETO_CYCLE_MS cycle's processEvents: the process
    dies by it at once, with no line about a call "still running" (the call
    that crashed held the calls lock: the final drain waited 2 s for it)."""
    start = time.monotonic()
    r = run_kineto(tmp_path, kdir(tmp_path, "crash"), sleep_ms=3000, expect_rc=-11,
                   env={"GPUTRACE_KINETO_CYCLE_MS": "100"})
    took = time.monotonic() - start
    assert plugin_lines(r.stderr) == []
    assert took < 1.5, took
    assert [l.split()[0] for l in lifecycle(tmp_path)] == [
        "register", "registerProfiler", "query", "create", "query", "start", "stop", "process"]
    t = r.trace
    assert t["gputrace"]["complete"] is True and t["gputrace"]["end"] == "signal SIGSEGV"
    assert [k["name"] for k in events(t, ph="X", cat="kernel")] == ["before_crash"] * 4


def test_process_events_that_never_returns(tmp_path):
    """processEvents stuck at exit is given up on as the last drain is: after
    5 s without an event handed over, one line naming the profiler and the
    call; the program exits with its own status, its trace complete."""
    d = kdir(tmp_path, "process_hangs")
    start = time.monotonic()
    r = run_kineto(tmp_path, d)
    took = time.monotonic() - start
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/process_hangs.so (KinetoSim): profilerProcessEvents() did not "
        "return: nothing handed over for 5000 ms; plug-in disabled, tracing goes on"]
    assert 5 <= took < 20, took
    assert [l.split()[0] for l in lifecycle(tmp_path)] == [
        "register", "registerProfiler", "query", "create", "query", "start", "stop", "process"]
    t = r.trace
    assert t["gputrace"]["complete"] is True and t["gputrace"]["end"] == "exit"
    # the third was still being described when it hung: counted lost (it was
    # neither written nor counted)
    assert [k["name"] for k in events(t, ph="X", cat="kernel")] == ["before_hang"] * 2
    assert t["gputrace"]["lost_by_reason"].get("plugin_dropped") == 1


def test_start_that_never_returns(tmp_path):
    """profilerStart stuck at process start is given up on as a gputrace plug-in's
    start is: after 5 s, one line naming the profiler and the call; the profilers
    loaded after it start and record, and the program runs and exits with its own
    status. (It was made on the program's thread before main, unbounded: the
    program hung there for good, with no line.)"""
    d = tmp_path / "kineto"
    d.mkdir()
    for so, name in (("start_hangs", "a_start_hangs"), ("npu", "b_npu")):
        need(KSIM / f"{so}.so")
        shutil.copy(KSIM / f"{so}.so", d / f"{name}.so")
    start = time.monotonic()
    r = run_kineto(tmp_path, d, timeout=40)
    took = time.monotonic() - start
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/a_start_hangs.so (KinetoSim): profilerStart() did not "
        "return: nothing handed over for 5000 ms; plug-in disabled, tracing goes on"]
    assert 5 <= took < 20, took
    # the stuck one is never called again; the next one's whole life
    assert [l.split()[0] for l in lifecycle(tmp_path)] == [
        "register", "registerProfiler", "query", "create", "query", "start",
        "register", "registerProfiler", "query", "create", "query", "start", "stop", "process",
        "destroy"]
    t = r.trace
    assert t["gputrace"]["complete"] is True and t["gputrace"]["end"] == "exit"
    assert [k["name"] for k in events(t, ph="X", cat="kernel")] == [
        "npu_kernel_0", "npu_kernel_1", "npu_kernel_2"]


def test_destroy_that_never_returns(tmp_path):
    """profilerDestroy stuck is not waited for after 1 s: the trace was written
    whole before it, and the line names Kineto's call (it said "destroy()", a call
    of gputrace's own ABI, not the profiler's)."""
    d = kdir(tmp_path, "destroy_hangs")
    r = run_kineto(tmp_path, d, timeout=40)
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/destroy_hangs.so (KinetoSim): profilerDestroy() did not return "
        "in 1000 ms; not waited for (the trace was written before it)"]
    t = r.trace
    assert t["gputrace"]["complete"] is True and t["gputrace"]["end"] == "exit"
    assert len(events(t, ph="X", cat="kernel")) == 3


def test_cycle_that_never_returns_costs_its_plugin(tmp_path):
    """processEvents stuck in a GPUTRACE_KINETO_CYCLE_MS cycle costs that plug-in,
    as a stuck drain-cycle flush does: one line naming the profiler and the call
    once it handed nothing over for 5 s, never called again, and the trace
    complete with what it handed over before. (It held the calls lock for good:
    the exit waited 2 s for it and stopped no other plug-in.)"""
    d = kdir(tmp_path, "process_hangs")
    # the program runs on past the 5 s (and a fifth) the cycle waits for the call
    r = run_kineto(tmp_path, d, sleep_ms=7000, env={"GPUTRACE_KINETO_CYCLE_MS": "100"})
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/process_hangs.so (KinetoSim): profilerProcessEvents() did not "
        "return: nothing handed over for 5000 ms; plug-in disabled, tracing goes on"]
    assert [l.split()[0] for l in lifecycle(tmp_path)] == [
        "register", "registerProfiler", "query", "create", "query", "start", "stop", "process"]
    t = r.trace
    assert t["gputrace"]["complete"] is True and t["gputrace"]["end"] == "exit"
    # the third was still being described when it hung: counted lost (it was
    # neither written nor counted)
    assert [k["name"] for k in events(t, ph="X", cat="kernel")] == ["before_hang"] * 2
    assert t["gputrace"]["lost_by_reason"].get("plugin_dropped") == 1


def test_exit_during_a_stuck_cycle_waits_2s(tmp_path):
    """The program ends while processEvents is stuck in a cycle: the exit waits
    2 s for the call, once, and says so in one line (the final drain waited 2 s
    more, 4 s in all)."""
    d = kdir(tmp_path, "process_hangs")
    start = time.monotonic()
    r = run_kineto(tmp_path, d, sleep_ms=300, env={"GPUTRACE_KINETO_CYCLE_MS": "100"})
    took = time.monotonic() - start
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-ins: plug-in {d}/process_hangs.so (KinetoSim): profilerProcessEvents() "
        "is still running after 2000 ms; not waited for longer"]
    assert 2.3 <= took < 3.5, took
    t = r.trace
    assert t["gputrace"]["complete"] is True and t["gputrace"]["end"] == "exit"
    assert [k["name"] for k in events(t, ph="X", cat="kernel")] == ["before_hang"] * 2


# ---- the header ----

KINETO_USE = r"""
#include <cstring>
#include "KinetoDynamicPluginInterface.h"
static int ok(KinetoPlugin_ProfilerCreate_Params *p) { p->pProfilerHandle = nullptr; return 0; }
int KinetoPlugin_register(const KinetoPlugin_Registry *r)
{
	KinetoPlugin_ProfilerInterface i;
	std::memset(&i, 0, sizeof(i));
	i.unpaddedStructSize = KINETO_PLUGIN_PROFILER_INTERFACE_UNPADDED_STRUCT_SIZE;
	i.profilerCreate = ok;
	return r->registerProfiler(r->pRegistryHandle, &i);
}
"""


@pytest.mark.parametrize("std", ["c++11", "c++17", "c++20"])
def test_header_builds_as_cxx(tmp_path, std):
    """The declarations, under Kineto's header name, in strict C++ with the
    layout assertions; KinetoPlugin_register exported."""
    need(KINETO_INC / "KinetoDynamicPluginInterface.h")
    src = tmp_path / "use.cc"
    src.write_text(KINETO_USE)
    out = tmp_path / "use.so"
    subprocess_run(["c++", f"-std={std}", "-pedantic", "-Wall", "-Wextra", "-Werror", "-fPIC",
                    "-shared", "-fvisibility=hidden", f"-I{KINETO_INC}", str(src), "-o", str(out)])
    syms = subprocess_run(["nm", "-D", "--defined-only", str(out)]).stdout
    assert re.search(r" T KinetoPlugin_register$", syms, re.M)


def test_header_builds_as_c(tmp_path):
    src = tmp_path / "use.c"
    src.write_text('#include "KinetoDynamicPluginInterface.h"\nint x;\n')
    subprocess_run(["cc", "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-c",
                    f"-I{KINETO_INC}", str(src), "-o", str(tmp_path / "use.o")])


def subprocess_run(cmd):
    import subprocess
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r


# ---- the README's example ----

def test_readme_kineto_example_works(tmp_path):
    """The README's Kineto profiler builds as a vendor builds it, against
    Kineto's header name, and shows up in the trace as the README says (on the
    steady wall clock, as test_cycle_setting says why)."""
    text = (ROOT / "README.md").read_text()
    m = re.search(r"^## Writing a plug-in\n(.*?)(?=^## )", text, re.M | re.S)
    assert m, "no 'Writing a plug-in' section"
    blocks = re.findall(r"```cpp\n(.*?)```", m.group(1), re.S)
    assert len(blocks) == 1, "one ```cpp block: the Kineto example"
    src = tmp_path / "tinynpu_kineto.cc"
    src.write_text(blocks[0])
    d = tmp_path / "kineto"
    d.mkdir()
    san = ["-fsanitize=address"] if SANITIZE == "address" else []
    subprocess_run(["c++", "-std=c++17", "-pedantic", "-Wall", "-Wextra", "-Werror", "-fPIC",
                    "-shared", f"-I{KINETO_INC}", *san, str(src), "-o",
                    str(d / "libtinynpu.so")])
    r = run_kineto(tmp_path, d, wall_slew_ppm=0)
    assert plugin_lines(r.stderr) == []
    t = r.trace
    pid = device_pid(t, "TinyNPU 0")
    assert set(queue_tids(t, pid)) == {"queue 0"}
    ks = sorted(events(t, ph="X", cat="kernel", pid=pid), key=lambda e: e["ts"])
    assert [(k["name"], wall_us(t, k["dur"]), own_args(k)) for k in ks] == [
        ("tiny_matmul", exact_us(50), {"tiles": 16, "unit": "mxu"})] * 2
    assert wall_us(t, ks[1]["ts"] - ks[0]["ts"]) == exact_us(100)
    temps = sorted(events(t, ph="C", name="temperature"), key=lambda e: e["ts"])
    assert [c["args"] for c in temps] == [{"celsius": 40.0}, {"celsius": 41.5}]
    assert all(c["pid"] == pid for c in temps)


def test_unit_tests_under_a_slewed_wall_clock():
    """check_plugins' Kineto cases (the builder and the UTC table, against the
    reference profiler) with the wall clock slewed 5% fast: each interval is
    checked at the rate the test itself measures."""
    check = BUILD / "test" / "check_plugins"
    need(check)
    need(WALL_SLEW)
    for ppm in ("50000", "-30000"):
        env = clean_env({"LD_PRELOAD": str(WALL_SLEW), "GT_TEST_WALL_SLEW_PPM": ppm,
                         "CK_RUN_CASE": "kineto", "CK_DEFAULT_TIMEOUT": "120"})
        r = subprocess.run([str(check)], env=env, capture_output=True, timeout=300)
        assert r.returncode == 0 and b"Failures: 0, Errors: 0" in r.stdout, r.stdout + r.stderr
