"""Hardware metrics and Sysman telemetry of Level Zero devices, end to end on the simulated
device: its metric values and Sysman readings follow from the simulated work
(test/levelzero/sim/README.md), so every sample is checked against the device spans of the
same trace: a kernel-only stretch is busy 100%, an idle one 0%, a kernel's GpuTime is its
span. The program behaves as untraced; nothing is called or set when nothing is asked."""
import collections
import json
import os
import pathlib
import subprocess

import pytest

from conftest import (BUILD, GPUTRACE, SANITIZE, TSAN_FORK_THREAD, ZE_SIM, events, gputrace_env,
                      gputrace_lines, load_trace, need, run, sim_env, strip_gputrace)

if not pathlib.Path("/usr/include/level_zero/ze_api.h").exists():
    pytest.skip("Level Zero headers (libze-dev) not installed: no Level Zero backend",
                allow_module_level=True)

LZ = BUILD / "test" / "levelzero"
LOAD = LZ / "ze_load"
APPS = BUILD / "test" / "apps"
BASIC = APPS / "ze_basic"
TOOL = BUILD / "gputrace-tool"
TICK = 52.083
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LANES = 2048  # EU lanes of the simulated device


def ns(us):
    return round(us * 1000)


def span(e):
    return ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])


def traced(tmp_path, cmd, env, check_stderr=True):
    """cmd untraced and traced (with env): same stdout and status; the trace and the run."""
    for p in (ZE_SIM, cmd[0]):
        need(p)
    tmp_path.mkdir(parents=True, exist_ok=True)
    plain = run(cmd, traced=False, env=sim_env())
    r = run(cmd, env=sim_env(env), tmp_path=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout
    if check_stderr:
        assert strip_gputrace(r.stderr) == strip_gputrace(plain.stderr)
    return r.trace, r


def device_spans(trace, cats=DEVICE_CATS):
    return sorted((e for e in events(trace, ph="X") if e.get("cat") in cats),
                  key=lambda e: e["ts"])


def union_in(spans, a, b):
    """ns of [a, b) covered by the spans."""
    iv = sorted((max(s, a), min(e, b)) for s, e in map(span, spans) if e > a and s < b)
    total, cs, ce = 0, None, None
    for s, e in iv:
        if ce is None or s > ce:
            total += (ce - cs) if ce is not None else 0
            cs, ce = s, e
        else:
            ce = max(ce, e)
    return total + ((ce - cs) if ce is not None else 0)


def samples(trace, name):
    return sorted(events(trace, ph="C", name=name), key=lambda e: e["ts"])


# ---- time mode ---------------------------------------------------------------------------

@pytest.mark.sanitize
def test_time_mode_samples_follow_the_work(tmp_path):
    t, r = traced(tmp_path, [LOAD, 40, 30, 4],
                  {"GPUTRACE_METRICS_MODE": "time", "GPUTRACE_METRICS_HZ": "1000"})
    dev, kernels = device_spans(t), device_spans(t, ("kernel",))
    copies = device_spans(t, ("gpu_memcpy",))
    cs = samples(t, "ComputeBasic")
    assert len(cs) >= 100, len(cs)
    # one track per group and device, series named with their units, on the device's row
    assert {e["pid"] for e in cs} == {dev[0]["pid"]}
    assert set(cs[0]["args"]) == {"GpuTime ns", "GpuBusy %", "EuActive %", "EuThreadOccupancy %",
                                  "GpuMemoryBytesRead bytes", "GpuMemoryBytesWritten bytes",
                                  "AvgGpuCoreFrequency MHz"}
    # one report per 1 ms period, each at its own start
    for a, b in zip(cs, cs[1:]):
        assert a["args"]["GpuTime ns"] == 1e6
        assert abs(ns(b["ts"]) - ns(a["ts"]) - 1000000) <= TICK + 1, (a, b)
    # each report is the device's activity in its period, as the trace's spans show it
    tol = 100 * 4 * TICK / 1e6
    for s in cs:
        a = ns(s["ts"])
        assert s["args"]["GpuBusy %"] == pytest.approx(
            100 * union_in(dev, a, a + 1000000) / 1e6, abs=tol), s
        assert s["args"]["EuActive %"] == pytest.approx(
            100 * union_in(kernels, a, a + 1000000) / 1e6, abs=tol), s
    # the kernel-only stretch is busy all through, the idle ones not at all
    k0, k1 = span(kernels[0])[0], span([k for k in kernels if k["name"] == "load_kernel"][-1])[1]
    inside = [s for s in cs if k0 <= ns(s["ts"]) and ns(s["ts"]) + 1000000 <= k1]
    assert len(inside) >= 35
    for s in inside:
        assert s["args"]["GpuBusy %"] == pytest.approx(100, abs=tol)
        assert s["args"]["EuActive %"] == pytest.approx(100, abs=tol)
        assert s["args"]["EuThreadOccupancy %"] == pytest.approx(100, abs=tol)
        assert s["args"]["AvgGpuCoreFrequency MHz"] == 1600
    idle = [s for s in cs if union_in(dev, ns(s["ts"]) - 1000, ns(s["ts"]) + 1001000) == 0]
    assert len(idle) >= 40
    assert all(s["args"]["GpuBusy %"] == 0 and s["args"]["AvgGpuCoreFrequency MHz"] == 300
               for s in idle)
    # the bytes of the copies, spread over the periods they ran in (floors: 1 byte each)
    total = sum(e["args"]["bytes"] for e in copies)
    assert total == 4 * (8 << 20)
    for key in ("GpuMemoryBytesRead bytes", "GpuMemoryBytesWritten bytes"):
        got = sum(s["args"][key] for s in cs)
        assert total - len(cs) <= got <= total, key
    # the summary: the mean of every series, per device
    summary = json.loads(run_summary(tmp_path, r.trace_path))
    rows = {(c["counter"], c["series"]): c for c in summary["metrics"]["counters"]}
    busy = rows[("ComputeBasic", "GpuBusy %")]
    assert busy["samples"] == len(cs)
    assert busy["max"] == pytest.approx(100, abs=tol) and busy["min"] == 0
    assert busy["mean"] == pytest.approx(sum(s["args"]["GpuBusy %"] for s in cs) / len(cs))


def run_summary(tmp_path, trace_path):
    need(TOOL)
    out = tmp_path / "summary.json"
    r = run([TOOL, "summary", "--json", out, trace_path], traced=False)
    assert r.returncode == 0, r.stderr
    return out.read_text()


def test_time_mode_groups_and_metrics_by_name(tmp_path):
    """Two groups of different domains at once; a metric's name picks its group with
    only that series."""
    t, _ = traced(tmp_path, [LOAD, 5, 5, 1], {"GPUTRACE_METRICS": "MemoryProfile,ComputeBasic"})
    mp, cb = samples(t, "MemoryProfile"), samples(t, "ComputeBasic")
    assert mp and cb
    assert set(mp[0]["args"]) == {"GpuTime ns", "CopyEngineBusy %", "GpuMemoryBytesRead bytes",
                                  "GpuMemoryBytesWritten bytes"}
    copies = device_spans(t, ("gpu_memcpy",))
    for s in mp:
        a = ns(s["ts"])
        assert s["args"]["CopyEngineBusy %"] == pytest.approx(
            100 * union_in(copies, a, a + 1000000) / 1e6, abs=0.05)
    t, _ = traced(tmp_path / "b", [LOAD, 5, 5, 1], {"GPUTRACE_METRICS": "GpuBusy, EuActive"})
    assert all(set(s["args"]) == {"GpuBusy %", "EuActive %"} for s in samples(t, "ComputeBasic"))


# ---- kernel mode ---------------------------------------------------------------------------

def kernel_items(e):
    a = e["args"]
    return a["gx"] * a["gy"] * a["gz"] * a["lx"] * a["ly"] * a["lz"]


def check_kernel_metrics(k, others=()):
    m = k["args"]["metrics"]
    s, e = span(k)
    # the query covers the kernel exactly (the span is in device ticks, GpuTime in ns)
    assert abs(m["GpuTime ns"] - (e - s)) <= TICK + 1, k
    assert m["GpuTime ns"] == kernel_items(k)  # the simulated duration
    assert m["GpuBusy %"] == pytest.approx(100) and m["EuActive %"] == pytest.approx(100)
    assert m["EuThreadOccupancy %"] == pytest.approx(100 * min(1, kernel_items(k) / LANES))
    assert m["GpuMemoryBytesRead bytes"] == 0 and m["GpuMemoryBytesWritten bytes"] == 0
    assert m["AvgGpuCoreFrequency MHz"] == 1600
    assert "QueryBeginTime ns" not in m  # the time is the span's own


@pytest.mark.sanitize
def test_kernel_mode_every_kernel_gets_its_metrics(tmp_path):
    summary = tmp_path / "s.json"
    t, r = traced(tmp_path, [LOAD, 10, 5, 2],
                  {"GPUTRACE_METRICS_MODE": "kernel", "GPUTRACE_SUMMARY_JSON": str(summary)})
    kernels = device_spans(t, ("kernel",))
    names = collections.Counter(k["name"] for k in kernels)
    assert names == {"load_kernel": 10, "wait_kernel": 1, "imm_kernel": 1}
    for k in kernels:
        check_kernel_metrics(k)
    # waiting for its event (5 ms) is not the kernel's time
    wait = next(k for k in kernels if k["name"] == "wait_kernel")
    assert wait["args"]["metrics"]["GpuTime ns"] == 256
    # copies are not kernels: no metrics
    assert all("metrics" not in c["args"] for c in device_spans(t, ("gpu_memcpy",)))
    # no counter track in kernel mode
    assert not samples(t, "ComputeBasic")
    # the summary: each kernel's mean, in the JSON and from `gputrace summary`
    rows = {(k["kernel"], k["metric"]): k for k in json.loads(summary.read_text())["metrics"]["kernels"]}
    assert rows[("load_kernel", "GpuTime ns")]["count"] == 10
    assert rows[("load_kernel", "GpuTime ns")]["mean"] == 1e6
    assert rows[("wait_kernel", "EuThreadOccupancy %")]["mean"] == pytest.approx(12.5)
    again = json.loads(run_summary(tmp_path, r.trace_path))["metrics"]["kernels"]
    assert {(k["kernel"], k["metric"]): k["mean"] for k in again} == \
        {key: row["mean"] for key, row in rows.items()}


def test_kernel_mode_regular_list_executed_again(tmp_path):
    """ze_basic: a regular list executed 3 times (its queries start over each time),
    a barrier and a fill between kernels, an immediate list."""
    t, _ = traced(tmp_path, [BASIC, 3], {"GPUTRACE_METRICS_MODE": "kernel"})
    kernels = device_spans(t, ("kernel",))
    assert collections.Counter(k["name"] for k in kernels) == {"vector_add": 3, "scale": 3,
                                                               "imm_kernel": 1}
    for k in kernels:
        check_kernel_metrics(k)


@pytest.mark.parametrize("reset", [0, 1], ids=["fresh_event", "reset_event"])
def test_kernel_mode_kernels_signaling_the_programs_events(tmp_path, reset):
    """ze_own_events: 50 kernels, each signaling an event of the program's own that it
    waits for, then (reset=1) resets or (0) leaves for a fresh one. Each is read at the
    program's next append or reset, often a moment before its metrics are in: it waits
    for them rather than go without (about half the kernels did, each counted lost)."""
    summary = tmp_path / "s.json"
    t, _ = traced(tmp_path, [APPS / "ze_own_events", 50, reset],
                  {"GPUTRACE_METRICS_MODE": "kernel", "GPUTRACE_SUMMARY_JSON": str(summary)})
    kernels = device_spans(t, ("kernel",))
    assert [k["name"] for k in kernels] == ["own_event_kernel"] * 50
    assert [k for k in kernels if "metrics" not in k["args"]] == []
    for k in kernels:
        check_kernel_metrics(k)
    assert t["gputrace"]["events_lost"] == 0, t["gputrace"]["lost_by_reason"]
    # a CI gate on the loss: the reason is one gputrace knows (README, "Lost counts")
    r = run([TOOL, "check", summary, "lost == 0", "lost.ze_metrics_unread == 0"], traced=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert b"PASS lost.ze_metrics_unread == 0: 0" in r.stdout


def test_stderr_summary_has_a_metrics_section(tmp_path):
    need(LOAD)
    r = run([LOAD, 3, 2, 1], env=sim_env({"GPUTRACE_METRICS_MODE": "kernel",
                                          "GPUTRACE_SUMMARY": "1"}), tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    text = r.stderr.decode()
    assert "  kernel metrics (mean per launch):" in text
    assert "    load_kernel (3):" in text and "GpuTime ns 1e+06" in text


# ---- telemetry ------------------------------------------------------------------------------

TELEMETRY_SERIES = {"frequency": {"gpu MHz", "memory MHz"}, "temperature": {"gpu °C", "memory °C"},
                    "power": {"W"}, "memory": {"used bytes"},
                    "memory bandwidth": {"read GB/s", "write GB/s"},
                    "engine utilization": {"all %", "compute %", "copy %"}}


def telemetry_series(t):
    series = collections.defaultdict(set)
    for e in events(t, ph="C"):
        if e["name"] in TELEMETRY_SERIES:
            series[e["name"]] |= set(e["args"])
    return series


@pytest.mark.sanitize
def test_telemetry_tracks(tmp_path):
    """Every track and series, values in the model's range (the sanitizers' run: their
    slowdown blurs when a reading was taken, so exactness is the next test's)."""
    t, _ = traced(tmp_path, [LOAD, 20, 20, 2],
                  {"GPUTRACE_TELEMETRY": "1", "GPUTRACE_TELEMETRY_HZ": "200"})
    assert telemetry_series(t) == TELEMETRY_SERIES
    assert all(20 - 0.5 <= e["args"]["W"] <= 101 for e in samples(t, "power"))
    assert all(300 <= e["args"]["gpu MHz"] <= 1600 for e in samples(t, "frequency"))
    assert all(35 <= e["args"]["gpu °C"] <= 85 for e in samples(t, "temperature"))


def test_telemetry_of_a_program_shorter_than_its_period(tmp_path):
    """The first reading comes near the program's zeInit, not a period after the drain
    thread first looked (before zeInit, as under `gputrace run`): ze_pingpong (~90 ms)
    ends within a 5 Hz period, and got one reading, at its exit, so no rate (power,
    engine utilization, bandwidth)."""
    out = tmp_path / "t.json"
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary",
                        "--telemetry", "--telemetry-hz", "5", "-o", str(out), "--",
                        str(BUILD / "test" / "apps" / "ze_pingpong"), "150"],
                       env=gputrace_env(sim_env()),
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    t = load_trace(out)
    (init,) = [e for e in events(t, ph="X") if e["name"] == "zeInit"]
    first = min(ns(e["ts"]) for e in events(t, ph="C") if e["name"] in TELEMETRY_SERIES)
    assert first - span(init)[1] < 50000000  # 10 ms, and a loaded machine's margin
    assert telemetry_series(t) == TELEMETRY_SERIES


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="an NVIDIA driver is installed")
@pytest.mark.skipif(SANITIZE == "thread", reason=TSAN_FORK_THREAD)
def test_telemetry_of_a_wrapped_program_is_not_said_missing(tmp_path):
    """gputrace run --telemetry -- sh -c 'ze_pingpong; true': the shell has no telemetry of
    its own (no NVML here, no Level Zero device), the GPU program has. The run said
    "--telemetry: nothing recorded" (the shell's line) over a trace full of telemetry; it
    says it only when no process of the run recorded any, and then once."""
    def gputrace_run(out, script):
        return subprocess.run([str(GPUTRACE), "run", "--no-summary",
                               "--telemetry", "-o", str(out), "--", "sh", "-c", script],
                              env=gputrace_env(sim_env({"LD_LIBRARY_PATH": ""})),
                              capture_output=True, timeout=60)
    pingpong = BUILD / "test" / "apps" / "ze_pingpong"
    r = gputrace_run(tmp_path / "t.json", f"{pingpong} 20; true")
    assert r.returncode == 0, r.stderr
    assert not [l for l in gputrace_lines(r.stderr) if "telemetry" in l], r.stderr
    assert telemetry_series(load_trace(tmp_path / "t.json")) == TELEMETRY_SERIES
    # three processes, none with telemetry: one line, from the run
    r = gputrace_run(tmp_path / "none.json", "sh -c true; sh -c true")
    assert r.returncode == 0, r.stderr
    said = [l for l in gputrace_lines(r.stderr) if "telemetry" in l]
    assert said == ["gputrace: --telemetry: nothing recorded: libnvidia-ml.so.1 (NVML, which "
                    "the NVIDIA driver installs) could not be opened, and no Level Zero device "
                    "gave Sysman telemetry (read from the program's zeInit on); telemetry "
                    "needs one of them"], r.stderr


@pytest.mark.skipif(SANITIZE == "thread", reason=TSAN_FORK_THREAD)
def test_one_series_per_gpu_in_a_run_of_two_gpu_programs(tmp_path):
    """A GPU's telemetry is the machine's: under gputrace run one process samples each GPU
    at a time, as with NVML. Two Level Zero programs side by side in one run drew the same
    GPU's power, frequency... twice, in their two device rows, sampled at the same
    moments; now each series goes on in one process's row, then maybe in the other's once
    the first ends, never back and forth."""
    out = tmp_path / "t.json"
    pingpong = BUILD / "test" / "apps" / "ze_pingpong"
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary",
                        "--telemetry", "--telemetry-hz", "50", "-o", str(out), "--", "sh", "-c",
                        f"{pingpong} 300 & {pingpong} 300; wait"],
                       env=gputrace_env(sim_env()),
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    t = load_trace(out)
    rows = {e["pid"]: e["args"]["name"] for e in events(t, ph="M", name="process_name")}
    assert len({p for p, name in rows.items() if name.endswith(": ze_pingpong")}) == 2, rows
    for series in TELEMETRY_SERIES:
        by_gpu = collections.defaultdict(list)
        for e in events(t, ph="C", name=series):
            # "vm [pid N] GPU 0: ...": the two programs' rows of one GPU
            name = rows[e["pid"]]
            by_gpu[name[name.index("GPU "):]].append((e["ts"], e["pid"]))
        assert list(by_gpu) == ["GPU 0: gputrace simulated GPU"], (series, rows)
        for gpu, samples in by_gpu.items():
            order = [pid for _, pid in sorted(samples)]
            stretches = [p for i, p in enumerate(order) if not i or p != order[i - 1]]
            assert len(stretches) == len(set(order)), (series, order)
            assert len(order) >= 3, (series, order)


def test_telemetry_follows_the_work(tmp_path):
    t, _ = traced(tmp_path, [LOAD, 150, 120, 4],
                  {"GPUTRACE_TELEMETRY": "1", "GPUTRACE_TELEMETRY_HZ": "100"})
    dev, kernels = device_spans(t), device_spans(t, ("kernel",))
    assert telemetry_series(t) == TELEMETRY_SERIES
    k0 = span(kernels[0])[0]
    k1 = span([k for k in kernels if k["name"] == "load_kernel"][-1])[1]

    # the last reading, at exit, is drawn from the one before: that rate holds until the
    # trace's end (the work of a stretch whose readings the device held back lands there)
    end = max(span(e)[1] if e.get("ph") == "X" else ns(e["ts"])
              for e in t["traceEvents"] if "ts" in e)

    def intervals(name):
        """(start, end, args) of a rate: each sample holds until the next, the last one
        until the trace's end."""
        s = samples(t, name)
        return [(ns(a["ts"]), ns(b["ts"]) if b else end, a["args"])
                for a, b in zip(s, s[1:] + [None])]

    # A reading is drawn at the moment gputrace took it, and Sysman reads the device's work
    # up to where it is known; on a loaded machine either may lag by tens of ms: 30 ms of
    # margin on each side of a stretch, and most (not all) readings inside it must be
    # exact; every one is within the model's range
    margin = 30000000

    def busy(a, b):
        return k0 + margin <= a and b + margin <= k1

    def idle(a, b):
        return union_in(dev, a - margin, b + margin) == 0

    def mostly(values, want, abs_tol, at_least=3):
        exact = [v for v in values if abs(v - want) <= abs_tol]
        assert len(values) >= at_least and len(exact) >= 0.8 * len(values), (want, values)

    power = intervals("power")
    assert all(20 - 0.5 <= v["W"] <= 100 + 1 for a, b, v in power)
    mostly([v["W"] for a, b, v in power if busy(a, b)], 100, 1, at_least=5)  # 20 W + 80 W busy
    mostly([v["W"] for a, b, v in power if idle(a, b)], 20, 0.5)
    engines = intervals("engine utilization")
    assert all(0 <= v["compute %"] <= 101 and v["copy %"] <= 101 for a, b, v in engines)
    mostly([v["compute %"] for a, b, v in engines if busy(a, b)], 100, 1)
    mostly([v["all %"] for a, b, v in engines if idle(a, b)], 0, 0)
    # instants: a GPU busy through the last 10 ms runs at 1600 MHz, an idle one at 300
    freq = samples(t, "frequency")
    assert all(300 <= f["args"]["gpu MHz"] <= 1600 and f["args"]["memory MHz"] == 1200
               for f in freq)
    mostly([f["args"]["gpu MHz"] for f in freq
            if k0 + 10000000 + margin <= ns(f["ts"]) <= k1 - margin], 1600, 0)
    mostly([f["args"]["gpu MHz"] for f in freq
            if union_in(dev, ns(f["ts"]) - 10000000 - margin, ns(f["ts"]) + margin) == 0],
           300, 0)
    # memory used: the program's two 8 MiB device buffers, as they are allocated
    used = {e["args"]["used bytes"] for e in samples(t, "memory")}
    assert used <= {0, 8 << 20, 16 << 20} and 16 << 20 in used
    # copies read what they write; nothing moves while idle
    bw = intervals("memory bandwidth")
    assert any(v["read GB/s"] > 0 for a, b, v in bw)
    for a, b, v in bw:
        assert v["read GB/s"] == v["write GB/s"]
        if idle(a, b):
            assert v["read GB/s"] == 0


def test_telemetry_engine_utilization_is_at_most_100(tmp_path):
    """Sysman's engine counters (active time and timestamp) are each in whole
    microseconds: a busy engine read over 1 ms (1000 Hz) came out at up to 100.1 %,
    in one reading of ten. A share of the time is at most all of it."""
    t, _ = traced(tmp_path, [LOAD, 150, 20, 1],
                  {"GPUTRACE_TELEMETRY": "1", "GPUTRACE_TELEMETRY_HZ": "1000"})
    engines = [e["args"] for e in samples(t, "engine utilization")]
    values = [v for a in engines for v in a.values()]
    assert len(engines) >= 50 and all(0 <= v <= 100 for v in values), max(values)
    assert sum(a["compute %"] == 100 for a in engines) >= 10  # busy readings still read 100



def test_telemetry_engine_group_is_one_sample_when_its_readings_are_apart(tmp_path):
    """An engine group's shares are one sample over one interval. When the driver's
    read of one engine blocks (the simulator holds every 5th engine reading 0.8 ms),
    the next round finds that engine too soon for a rate and the others not: the whole
    round waits. Drawing the others alone left samples without 'compute %' (seen in CI
    at 1000 Hz on a loaded machine) and that engine's next rate drawn from the wrong
    start."""
    t, _ = traced(tmp_path, [LOAD, 150, 20, 1],
                  {"GPUTRACE_TELEMETRY": "1", "GPUTRACE_TELEMETRY_HZ": "1000",
                   "ZE_SIM_ENGINE_READ_STALL_US": "800/5"})
    engines = samples(t, "engine utilization")
    partial = [e for e in engines if set(e["args"]) != {"all %", "compute %", "copy %"}]
    assert len(engines) >= 30 and not partial, (len(engines), partial[:3])
    assert all(0 <= v <= 100 for e in engines for v in e["args"].values())
    assert sum(e["args"]["compute %"] == 100 for e in engines) >= 10
    ts = [e["ts"] for e in engines]
    assert ts == sorted(set(ts))  # one sample per interval start

# ---- off, and what is set when ---------------------------------------------------------------

def test_off_means_no_metric_or_sysman_call(tmp_path):
    """Off by default: the simulator aborts at the first zet or zes call it sees."""
    t, _ = traced(tmp_path, [BASIC, 2], {"ZE_SIM_FORBID_TOOLS": "1"})
    assert not [e for e in events(t, ph="C") if e["name"] not in ("device memory", "host USM")]
    assert all("metrics" not in k["args"] for k in device_spans(t, ("kernel",)))


@pytest.mark.parametrize("env,expect", [
    ({}, "[][]"),
    ({"GPUTRACE_METRICS_MODE": "kernel"}, "[1][]"),
    ({"GPUTRACE_METRICS": "ComputeBasic"}, "[1][]"),
    ({"GPUTRACE_TELEMETRY": "1"}, "[][1]"),
    ({"GPUTRACE_METRICS_MODE": "time", "GPUTRACE_TELEMETRY": "1"}, "[1][1]"),
    ({"GPUTRACE_METRICS_MODE": "time", "GPUTRACE_BACKENDS": "cupti"}, "[][]"),
])
def test_driver_environment_set_only_when_asked(tmp_path, env, expect):
    r = run(["sh", "-c", 'echo "[$ZET_ENABLE_METRICS][$ZES_ENABLE_SYSMAN]"'], env=env,
            tmp_path=tmp_path)
    assert r.returncode == 0 and r.stdout.decode().strip() == expect


NOMETRICS_LIB = BUILD / "no-metrics" / "libgputrace.so"  # make METRICS=0 (bench row 8n)


@pytest.mark.skipif(bool(os.environ.get("SANITIZE")),
                    reason="the METRICS=0 library is built beside the plain build only")
def test_a_build_without_metrics_support_says_so(tmp_path):
    """make METRICS=0: metrics and telemetry asked for cost one line; nothing of them runs
    (no variable for the driver, and the simulator aborts at a zet or zes call), and the
    trace is whole."""
    need(NOMETRICS_LIB)
    trace = tmp_path / "t.json"
    env = sim_env({"LD_PRELOAD": str(NOMETRICS_LIB), "GPUTRACE_OUTPUT": str(trace),
                   "GPUTRACE_SUMMARY": "0",
                   "GPUTRACE_METRICS_MODE": "kernel", "GPUTRACE_TELEMETRY": "1",
                   "ZE_SIM_FORBID_TOOLS": "1"})
    r = run([BASIC, 2], traced=False, env=env)
    assert r.returncode == 0, r.stderr
    assert gputrace_lines(r.stderr) == [
        "gputrace: this library was built without metrics support (make METRICS=0): "
        "metrics and telemetry not recorded"]
    t = load_trace(trace)
    kernels = device_spans(t, ("kernel",))
    assert len(kernels) == 5 and all("metrics" not in k["args"] for k in kernels)
    r = run(["sh", "-c", 'echo "[$ZET_ENABLE_METRICS][$ZES_ENABLE_SYSMAN]"'], traced=False,
            env=dict(env, GPUTRACE_OUTPUT=str(tmp_path / "sh.json")))
    assert r.stdout.decode().strip() == "[][]"


# ---- several contexts, and a fork child: the simulator's activation table ---------------------

def test_kernel_metrics_of_two_contexts_and_of_a_fork_child(tmp_path):
    """A second context's activation (zetContextActivateMetricGroups) took the simulated
    driver's lock twice, and the program hung: ze_contexts, and ze_fork's child (a
    context of its own). Each kernel has its metrics, nothing lost."""
    t, _ = traced(tmp_path / "contexts", [BUILD / "test" / "apps" / "ze_contexts", 2, 1],
                  {"GPUTRACE_METRICS_MODE": "kernel"})
    kernels = device_spans(t, ("kernel",))
    assert len(kernels) == 2 and all("metrics" in k["args"] for k in kernels), kernels
    assert t["gputrace"]["events_lost"] == 0
    need(LZ / "ze_fork")
    r = run([LZ / "ze_fork"], env=sim_env({"GPUTRACE_METRICS_MODE": "kernel",
                                           "GPUTRACE_OUTPUT": str(tmp_path / "f-%p.json")}),
            tmp_path=tmp_path, timeout=30, check_trace=False)
    assert r.returncode == 0, r.stderr
    files = sorted(tmp_path.glob("f-*.json"))
    assert len(files) == 2, files
    kernels = [k for f in files for k in device_spans(load_trace(f), ("kernel",))]
    assert len(kernels) == 3 and all("metrics" in k["args"] for k in kernels), kernels


# ---- what cannot be measured: one line each, the program unharmed ------------------------------

@pytest.mark.parametrize("env,needle", [
    ({"GPUTRACE_METRICS": "NoSuchGroup"},
     "GPUTRACE_METRICS: no metric group or metric 'NoSuchGroup' on GPU 0: "
     "gputrace simulated GPU (its groups: ComputeBasic, MemoryProfile;"),
    ({"GPUTRACE_METRICS": "MemoryProfile", "GPUTRACE_METRICS_MODE": "kernel"},
     "metric group MemoryProfile of GPU 0: gputrace simulated GPU cannot be measured in "
     "GPUTRACE_METRICS_MODE=kernel (it is time-based only)"),
    ({"GPUTRACE_METRICS_MODE": "time", "ZE_SIM_METRICS_PARANOID": "1"},
     "no permission to read performance counters"),
    ({"GPUTRACE_METRICS_MODE": "kernel", "ZE_SIM_METRICS_PARANOID": "1"},
     "no permission to read performance counters"),
    # a device whose driver offers no metric groups
    ({"GPUTRACE_METRICS_MODE": "kernel", "ZE_SIM_METRIC_GROUPS": "0"},
     "ze: GPU 0: gputrace simulated GPU offers no metric groups"),
    ({"GPUTRACE_METRICS_MODE": "time", "ZE_SIM_METRIC_GROUPS": "0"},
     "ze: GPU 0: gputrace simulated GPU offers no metric groups"),
    # the driver initialized before ZET_ENABLE_METRICS was set (zeInit ran earlier)
    ({"GPUTRACE_METRICS_MODE": "kernel", "ZE_SIM_INITIALIZED_EARLIER": "1"},
     "ze: metrics of GPU 0: gputrace simulated GPU: listing metric groups: the driver has "
     "metrics off (ZET_ENABLE_METRICS=1 must be in the environment before the first zeInit; "
     "gputrace sets it at start-up, so zeInit ran earlier"),
    ({"GPUTRACE_METRICS_MODE": "time", "ZE_SIM_INITIALIZED_EARLIER": "1"},
     "the driver has metrics off (ZET_ENABLE_METRICS=1 must be in the environment before"),
    # ... and Sysman off with it (Level Zero alone: no NVML line, see test_nvml.py)
    ({"GPUTRACE_TELEMETRY": "1", "GPUTRACE_BACKENDS": "ze",
      "ZE_SIM_INITIALIZED_EARLIER": "1"},
     "ze: no telemetry from GPU 0: gputrace simulated GPU: Sysman is off in the driver "
     "(ZES_ENABLE_SYSMAN=1 must be in the environment before the first zeInit"),
])
def test_refusals_are_one_line(tmp_path, env, needle):
    t, r = traced(tmp_path, [BASIC, 2], env)
    lines = gputrace_lines(r.stderr)
    assert len(lines) == 1 and needle in lines[0], lines
    assert not samples(t, "ComputeBasic")
    assert not telemetry_series(t)
    assert all("metrics" not in k["args"] for k in device_spans(t, ("kernel",)))
    assert len(device_spans(t, ("kernel",))) == 5  # the trace is whole otherwise


@pytest.mark.skipif(SANITIZE == "thread", reason=TSAN_FORK_THREAD)
@pytest.mark.parametrize("options, env, said, not_said", [
    (["--metrics", "NoSuchGroup"], {}, "gputrace: ze: --metrics: no metric group or metric "
     "'NoSuchGroup' on GPU 0", "GPUTRACE_METRICS"),
    (["--metrics", "MemoryProfile", "--metrics-mode", "kernel"], {},
     "cannot be measured in --metrics-mode kernel (it is time-based only)",
     "GPUTRACE_METRICS_MODE"),
], ids=["no-such-group", "mode"])
def test_refusals_under_run_name_its_options(tmp_path, options, env, said, not_said):
    """Under gputrace run the settings came as its options, so its lines name those
    (under plain LD_PRELOAD, the variables: test_refusals_are_one_line)."""
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o", str(tmp_path / "t.json"),
                        *options, "--", str(BASIC), "2"],
                       env=gputrace_env(sim_env(env)), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = gputrace_lines(r.stderr)
    assert len(lines) == 1 and said in lines[0] and not_said not in lines[0], lines


# ---- gputrace metrics ----------------------------------------------------------------------

def test_gputrace_metrics_lists_groups_and_metrics(tmp_path):
    need(TOOL)
    r = run([GPUTRACE, "metrics"], traced=False,
            env=sim_env({"GPUTRACE_TOOL": str(TOOL), "LD_LIBRARY_PATH": ""}))
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "  GPU 0: gputrace simulated GPU\n" in out
    assert "    ComputeBasic (time, kernel, domain 0):" in out
    assert "    MemoryProfile (time, domain 1):" in out
    for key in ("GpuTime ns", "GpuBusy %", "EuActive %", "CopyEngineBusy %", "QueryBeginTime ns"):
        assert f"      {key} " in out
    assert "telemetry (--telemetry): frequency (2 domains, MHz)" in out
    # the simulated GPU's one memory module, in the singular (was "1 modules")
    assert ("    telemetry (--telemetry): frequency (2 domains, MHz), power (1, W), temperature "
            "(2 sensors, °C), memory and memory bandwidth (1 module, bytes, GB/s), engine "
            "utilization (3 groups, %)\n") in out, out
    # nothing on this machine is not an error
    r = run([GPUTRACE, "metrics"], traced=False,
            env={"GPUTRACE_TOOL": str(TOOL), "ZE_ENABLE_ALT_DRIVERS": "/nonexistent.so"})
    assert r.returncode == 0 and b"Level Zero: no devices" in r.stdout
