"""Checks and comparisons for scripts/gpu-check (Python 3, standard library).

  vec TRACE                          vec_add on a GPU: 3 kernels, copies, a memset, arrows
  metrics TRACE STDERR               NVML telemetry tracks, PM sampling (or its one-line refusal)
  range-metrics kernel|nvtx TRACE SUMMARY.json STDERR
                                     CUPTI range profiler: args.metrics on every kernel (kernel)
                                     or on the NVTX ranges that launch kernels (nvtx), the
                                     summary's metrics section; exit status 3 and one line
                                     when the driver refused profiling
  multi TRACE STDOUT [--graph-trace] [--events]
                                     multi_stream: every launch, copy, memset, graph, NVTX
  compare GPUTRACE_TRACE KINETO_TRACE PLAIN.json GPUTRACE.json KINETO.json
                                     PyTorch steps: gputrace and torch.profiler side by side
  self-test                          the checks and the table on synthetic traces (no GPU)

Each check prints PASS/FAIL lines; the exit status is 1 when one failed (3: range-metrics
could not measure because profiling was refused: nothing to check).
"""
import gzip
import json
import sys
from collections import defaultdict

failures = []


def check(ok, what):
    print(("PASS  " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)
    return ok


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    t = json.loads(data)
    return t if isinstance(t, dict) else {"traceEvents": t}


def spans(trace, cat=None, name=None):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and
            (cat is None or e.get("cat") == cat) and (name is None or e.get("name") == name)]


def launches(trace):
    """Host API spans by correlation id (the launching calls)."""
    out = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                out[c] = e
    return out


def arrows(trace):
    """(s, f) pairs of the ac2g arrows."""
    got = defaultdict(dict)
    for e in trace["traceEvents"]:
        if e.get("cat") == "ac2g" and e.get("ph") in ("s", "f"):
            got[e["id"]][e["ph"]] = e
    return [(f["s"], f["f"]) for f in got.values() if "s" in f and "f" in f]


def arrow_into(arr, d):
    """The s end of an arrow whose f end lies inside device span d."""
    for s, f in arr:
        if (f["pid"], f["tid"]) == (d["pid"], d["tid"]) and \
           d["ts"] <= f["ts"] <= d["ts"] + d["dur"]:
            yield s


def device_work(trace, cats=("kernel", "gpu_memcpy", "gpu_memset", "cuda_graph")):
    return [e for e in spans(trace) if e.get("cat") in cats]


def raw_ts(e):
    """Where the device span began before gputrace moved it to its launch
    (args.clamped_ns): alignment is judged on this, not on the clamped ts."""
    return e["ts"] - (e.get("args") or {}).get("clamped_ns", 0) / 1000.0


def check_links(trace, devs, label):
    """Each device span: its launch exists, it starts after the launch began,
    and an arrow leaves the launch for it."""
    host = launches(trace)
    arr = arrows(trace)
    missing = [d for d in devs if (d.get("args") or {}).get("correlation") not in host]
    check(not missing, f"{label}: every device span has its launching call "
          f"({len(devs) - len(missing)}/{len(devs)})")
    early = [d for d in devs if d["args"].get("correlation") in host and
             raw_ts(d) < host[d["args"]["correlation"]]["ts"]]
    worst = max((host[d["args"]["correlation"]]["ts"] - raw_ts(d) for d in early), default=0)
    check(not early, f"{label}: no device span starts before its launch, before clamping "
          f"({len(early)} do, by up to {worst:.3f} us)")
    unlinked = []
    for d in devs:
        h = host.get(d["args"].get("correlation"))
        if not h or not any((s["pid"], s["tid"]) == (h["pid"], h["tid"]) and
                            h["ts"] <= s["ts"] <= h["ts"] + h["dur"] for s in arrow_into(arr, d)):
            unlinked.append(d)
    check(not unlinked, f"{label}: an arrow from each launch to its work "
          f"({len(devs) - len(unlinked)}/{len(devs)})")


def cmd_vec(path):
    t = load(path)
    label = path.rsplit("/", 1)[-1]
    k = spans(t, "kernel")
    check(len(k) == 3 and all(e["name"].startswith("vec_add") for e in k),
          f"{label}: 3 vec_add kernels ({len(k)})")
    c = spans(t, "gpu_memcpy")
    check(sorted(e["args"]["kind"] for e in c) == ["DtoH", "HtoD", "HtoD"],
          f"{label}: 2 HtoD + 1 DtoH copies of 4 MiB")
    check(len(spans(t, "gpu_memset")) == 1, f"{label}: 1 memset")
    check(len(spans(t, "cuda_runtime", "cudaLaunchKernel")) == 3,
          f"{label}: 3 cudaLaunchKernel spans, one per call")
    check_links(t, device_work(t), label)


def cmd_multi(path, stdout_path, graph_trace=False, events=False):
    t = load(path)
    label = path.rsplit("/", 1)[-1]
    with open(stdout_path) as f:
        want = json.loads(next(l for l in f if l.startswith("{")))
    k, c, m = spans(t, "kernel"), spans(t, "gpu_memcpy"), spans(t, "gpu_memset")
    g = spans(t, "cuda_graph")
    runs = want["graph_launches"]
    if events:
        # CUDA events time each launch call; a graph is one span
        check(len(k) == want["kernels"], f"{label}: {want['kernels']} kernels ({len(k)})")
        check(len(g) == runs, f"{label}: {runs} graph launches ({len(g)})")
        check(all(e["args"].get("timing") == "cuda_events" for e in k + c + m + g),
              f"{label}: device times from CUDA events")
        check(len(m) == want["memset"], f"{label}: {want['memset']} memsets ({len(m)})")
    elif graph_trace:
        check(len(k) == want["kernels"], f"{label}: {want['kernels']} kernels ({len(k)})")
        check(len(g) == runs, f"{label}: {runs} whole-graph spans ({len(g)})")
        check(len(m) == want["memset"], f"{label}: {want['memset']} memsets ({len(m)})")
    else:
        nk = want["kernels"] + runs * want["graph_kernels"]
        check(len(k) == nk, f"{label}: {nk} kernels, graph nodes included ({len(k)})")
        nodes = [e for e in k if e["args"].get("graph_id")]
        check(len(nodes) == runs * want["graph_kernels"],
              f"{label}: graph kernels carry graph ids ({len(nodes)})")
        nm = want["memset"] + runs * want["graph_memsets"]
        check(len(m) == nm, f"{label}: {nm} memsets ({len(m)})")
        check(len(spans(t, "cuda_sync")) >= 1, f"{label}: synchronization on the device rows")
    check(len(c) == want["memcpy"], f"{label}: {want['memcpy']} copies ({len(c)})")
    kinds = {e["args"].get("kind") for e in c}
    check({"HtoD", "DtoH", "DtoD"} <= kinds, f"{label}: HtoD, DtoH and DtoD copies ({kinds})")
    # one span per call: the captured launches are calls too
    calls = len(spans(t, "cuda_runtime", "cudaLaunchKernel"))
    check(calls == want["kernels"] + want["graph_kernels"],
          f"{label}: one cudaLaunchKernel span per call ({calls})")
    streams = {(e["pid"], e["tid"]) for e in k}
    check(len(streams) >= 4, f"{label}: kernels on their streams' rows ({len(streams)} rows)")
    names = {e["name"] for e in spans(t, "user_annotation")}
    check(set(want["nvtx"]) <= names, f"{label}: NVTX ranges {want['nvtx']}")
    check_links(t, k + c + m + g, label)


def cmd_metrics(path, err_path):
    """NVML telemetry of every GPU; PM sampling samples that follow the kernels, or one line
    saying why the device refused (permission: NVreg_RestrictProfilingToAdminUsers)."""
    t = load(path)
    rows = {e["pid"]: e["args"]["name"] for e in t["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == "process_name"}
    counters = [e for e in t["traceEvents"] if e.get("ph") == "C"]
    power = [e for e in counters if e["name"] == "power" and "W" in e.get("args", {})]
    check(power and all(e["args"]["W"] > 0 for e in power), f"NVML power W samples ({len(power)})")
    freq = [e for e in counters if e["name"] == "frequency" and "sm MHz" in e.get("args", {})]
    check(freq and all(e["args"]["sm MHz"] > 0 for e in freq), f"NVML sm MHz samples ({len(freq)})")
    check(all(rows.get(e["pid"], "").startswith("GPU ") for e in power), "NVML rows are GPU rows")
    pm = [e for e in counters if e["name"] == "PM sampling"]
    lines = [l for l in open(err_path, errors="replace") if l.startswith("gputrace: CUDA metrics")]
    if pm:
        busy = [e["args"].get("gpu busy %", -1) for e in pm]
        check(all(0 <= b <= 100.5 for b in busy), f"PM sampling: gpu busy % in [0, 100] ({len(pm)} samples)")
        kernels = spans(t, "kernel")
        overlap = [e for e in pm if any(k["ts"] - 1000 <= e["ts"] <= k["ts"] + k["dur"]
                                        for k in kernels)]
        check(any(e["args"].get("gpu busy %", 0) > 0 for e in overlap) or not overlap,
              "PM sampling: busy while kernels run")
    else:
        check(len(lines) == 1, f"no PM sampling: one line says why ({lines})")


# ---- per-kernel and per-NVTX-range metrics: CUPTI's range profiler ----

REFUSED = 3  # exit status: the driver refused profiling, nothing was measured
PERMISSION = "no permission to profile the GPU"


def metric_values_ok(m, what):
    """A span's args.metrics: gpu time > 0, percentages within [0, 100]."""
    ok = check(isinstance(m, dict) and m.get("gpu time ns", 0) > 0,
               f"{what}: gpu time ns > 0 ({(m or {}).get('gpu time ns')})")
    pcts = {k: v for k, v in (m or {}).items() if k.endswith("%")}
    ok &= check(pcts and all(0 <= v <= 100.5 for v in pcts.values()),
                f"{what}: percentages in [0, 100] ({pcts})")
    return ok


def summary_rows(summary, section, key):
    """The summary JSON's metrics.<section> rows by (name, metric)."""
    return {(r[key], r["metric"]): r for r in (summary.get("metrics") or {}).get(section, [])}


def range_metrics(mode, trace, summary, err_lines):
    """The checks of cmd_range_metrics on loaded inputs; REFUSED, 1 or 0."""
    said = [l.rstrip("\n") for l in err_lines if l.startswith("gputrace: CUDA metrics")]
    refused = [l for l in said if PERMISSION in l]
    if refused:
        # the one clear line: what the driver said and how to allow it
        print("SKIPPED  profiling refused by the driver (NVreg_RestrictProfilingToAdminUsers=1"
              " or not root): " + refused[0])
        return REFUSED
    before = len(failures)
    if mode == "kernel":
        kernels = spans(trace, "kernel")
        check(kernels, f"kernels traced ({len(kernels)})")
        measured = [k for k in kernels if "metrics" in (k.get("args") or {})]
        check(kernels and len(measured) == len(kernels),
              f"every kernel has args.metrics ({len(measured)} of {len(kernels)})")
        for k in measured:
            m = k["args"]["metrics"]
            if not metric_values_ok(m, f"kernel {k['name'][:40]} at {k['ts']}"):
                break
            dur_ns = k["dur"] * 1000
            # the profiler's duration of the kernel and the activity record's are one
            # kernel's: alike, give or take the launch overhead the profiler counts
            check(0.5 * dur_ns - 1000 <= m["gpu time ns"] <= 2 * dur_ns + 20000,
                  f"kernel at {k['ts']}: gpu time ns {m['gpu time ns']} near its span "
                  f"({dur_ns:.0f} ns)")
        rows = summary_rows(summary, "kernels", "kernel")
        for name in sorted({k["name"] for k in measured}):
            r = rows.get((name, "gpu time ns"))
            n = sum(1 for k in measured if k["name"] == name)
            check(r and r["count"] == n and r["mean"] > 0,
                  f"summary metrics.kernels: {name[:40]}: gpu time ns over {n} kernels "
                  f"({r and (r['count'], r['mean'])})")
    else:
        # multi_stream's outermost ranges: compute launches kernels and carries their
        # metrics; setup and readback (copies, memsets) carry none, nor graph, which holds
        # a stream capture (a range profiler session breaks one: one line, said below)
        ranges = {e["name"]: e for e in spans(trace, "user_annotation")}
        if check("compute" in ranges, "NVTX range 'compute' traced"):
            metric_values_ok((ranges["compute"].get("args") or {}).get("metrics"),
                             "NVTX range compute")
        for name, why in (("setup", "no kernels"), ("readback", "no kernels"),
                          ("graph", "a stream capture")):
            if name in ranges:
                check("metrics" not in (ranges[name].get("args") or {}),
                      f"NVTX range {name} ({why}): no metrics")
        rows = summary_rows(summary, "ranges", "range")
        r = rows.get(("compute", "gpu time ns"))
        m = (ranges.get("compute", {}).get("args") or {}).get("metrics") or {}
        check(r and r["count"] == 1 and r["mean"] == m.get("gpu time ns"),
              f"summary metrics.ranges: compute's gpu time ns ({r and (r['count'], r['mean'])})")
    unexplained = [l for l in said if "range profiler on GPU" not in l and "has no" not in l
                   and "holds a stream capture" not in l]
    check(not unexplained, f"no refusal from the CUDA metrics ({unexplained})")
    return 1 if len(failures) > before else 0


def cmd_range_metrics(mode, path, summary_path, err_path):
    if mode not in ("kernel", "nvtx"):
        print(__doc__, file=sys.stderr)
        return 2
    err = open(err_path, errors="replace").readlines()
    if any(PERMISSION in l for l in err):
        return range_metrics(mode, {"traceEvents": []}, {}, err)
    return range_metrics(mode, load(path), json.load(open(summary_path)), err)


# ---- PyTorch: gputrace vs torch.profiler ----

def kernel_stats(trace, window=None):
    """Kernels (launched inside `window`, a (start, end) in us, when given)."""
    host = launches(trace)
    ks = []
    for e in spans(trace, "kernel"):
        h = host.get((e.get("args") or {}).get("correlation"))
        if window and (not h or not window[0] <= h["ts"] <= window[1]):
            continue
        ks.append((e, h))
    per = defaultdict(lambda: [0, 0.0])
    for e, _ in ks:
        per[e["name"]][0] += 1
        per[e["name"]][1] += e.get("dur", 0)
    with_launch = [(e, h) for e, h in ks if h]
    after = sum(1 for e, h in with_launch if raw_ts(e) >= h["ts"])
    return {
        "count": len(ks),
        "names": set(per),
        "total_us": sum(v[1] for v in per.values()),
        "per": per,
        "after": after / len(with_launch) if with_launch else float("nan"),
        "linked": len(with_launch),
    }


def profiled_window(trace):
    r = [e for e in spans(trace, "user_annotation", "profiled")]
    return (r[0]["ts"], r[0]["ts"] + r[0]["dur"]) if r else None


def pct(x):
    return "n/a" if x != x else f"{100 * x:.1f}%"


def cmd_compare(gt_path, kt_path, plain_path, gt_json, kt_json, out=sys.stdout):
    gt, kt = load(gt_path), load(kt_path)
    timing = {}
    for name, p in (("plain", plain_path), ("gputrace", gt_json), ("kineto", kt_json)):
        with open(p) as f:
            timing[name] = json.loads(next(l for l in f if l.startswith("{")))
    win = profiled_window(gt)
    a, b = kernel_stats(gt, win), kernel_stats(kt)
    base = timing["plain"]["steps_s"]

    def over(name, key="steps_s"):
        s, b0 = timing[name].get(key), timing["plain"].get(key)
        if s is None or not b0:
            return "n/a"
        return f"{s:.4f} s ({100 * (s - b0) / b0:+.1f}%)"

    rows = [
        ("kernels", a["count"], b["count"]),
        ("distinct kernel names", len(a["names"]), len(b["names"])),
        ("device time, all kernels (ms)", f"{a['total_us'] / 1000:.3f}",
         f"{b['total_us'] / 1000:.3f}"),
        ("kernels starting after their launch began", pct(a["after"]), pct(b["after"])),
        ("kernels linked to a launch", a["linked"], b["linked"]),
        ("measured steps, wall time (untraced %.4f s)" % base, over("gputrace"), over("kineto")),
        ("whole run, wall time (untraced %s)" % (
            "%.2f s" % timing["plain"]["wall_s"] if "wall_s" in timing["plain"] else "n/a"),
         over("gputrace", "wall_s"), over("kineto", "wall_s")),
    ]
    w = max(len(r[0]) for r in rows) + 2
    print(f"{'':{w}}{'gputrace':>26}{'torch.profiler':>26}", file=out)
    for r in rows:
        print(f"{r[0]:{w}}{str(r[1]):>26}{str(r[2]):>26}", file=out)
    if win is None:
        print("note: no NVTX range 'profiled' in the gputrace trace: all its kernels counted",
              file=out)
    only_gt, only_kt = sorted(a["names"] - b["names"]), sorted(b["names"] - a["names"])
    print(f"kernel names only in gputrace: {len(only_gt)}; only in torch.profiler: "
          f"{len(only_kt)}", file=out)
    for n in only_gt[:5]:
        print(f"  gputrace only: {n[:100]}", file=out)
    for n in only_kt[:5]:
        print(f"  torch.profiler only: {n[:100]}", file=out)
    print(f"\nper kernel (top 15 by gputrace device time){'':4}count gt/kt   time gt/kt (us)",
          file=out)
    top = sorted(a["names"] | b["names"], key=lambda n: -(a["per"].get(n, (0, 0))[1]))[:15]
    for n in top:
        ca, ta = a["per"].get(n, (0, 0.0))
        cb, tb = b["per"].get(n, (0, 0.0))
        print(f"  {n[:60]:60} {ca:5}/{cb:<5} {ta:10.1f}/{tb:<10.1f}", file=out)
    check(a["count"] > 0, "gputrace saw the PyTorch kernels")
    agree = b["count"] and abs(a["count"] - b["count"]) <= max(2, 0.02 * b["count"])
    print(("agree" if agree else "DIFFER") + f": kernel counts {a['count']} vs {b['count']}",
          file=out)
    return a, b


def cmd_self_test():
    """The checks and the comparison on small synthetic traces (CPU)."""
    import os
    import tempfile

    def ev(**kw):
        kw.setdefault("pid", 1)
        kw.setdefault("tid", 1)
        return kw

    gt = {"traceEvents": [
        ev(ph="X", cat="user_annotation", name="profiled", ts=100, dur=1000),
        ev(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=50, dur=5,
           args={"correlation": 1}),
        ev(ph="X", cat="kernel", name="warmup_k", pid=9, tid=2, ts=60, dur=10,
           args={"correlation": 1}),
    ]}
    kt = {"traceEvents": []}
    for i in range(4):
        c = 10 + i
        name = "gemm" if i % 2 else "relu"
        gt["traceEvents"] += [
            ev(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=200 + 100 * i, dur=5,
               args={"correlation": c}),
            ev(ph="X", cat="kernel", name=name, pid=9, tid=2, ts=210 + 100 * i, dur=20 + i,
               args={"correlation": c}),
            ev(ph="s", cat="ac2g", name="ac2g", id=c, ts=202 + 100 * i),
            ev(ph="f", cat="ac2g", name="ac2g", id=c, pid=9, tid=2, ts=210 + 100 * i, bp="e"),
        ]
        kt["traceEvents"] += [
            ev(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=200 + 100 * i, dur=5,
               args={"correlation": c}),
            ev(ph="X", cat="kernel", name=name, pid=0, tid=7, ts=209 + 100 * i, dur=20 + i,
               args={"correlation": c}),
        ]
    d = tempfile.mkdtemp()
    paths = {}
    for name, obj in (("gt.json", gt), ("kt.json", kt)):
        paths[name] = os.path.join(d, name)
        with open(paths[name], "w") as f:
            json.dump(obj, f)
    for name, s in (("plain", 1.0), ("gtt", 1.05), ("ktt", 1.4)):
        paths[name] = os.path.join(d, name)
        with open(paths[name], "w") as f:
            f.write(json.dumps({"steps_s": s, "wall_s": 10 * s}) + "\n")
    a, b = cmd_compare(paths["gt.json"], paths["kt.json"], paths["plain"], paths["gtt"],
                       paths["ktt"])
    check(a["count"] == 4 and b["count"] == 4, "self-test: the window keeps the 4 measured "
          "kernels, not the warm-up one")
    check(a["names"] == b["names"] == {"gemm", "relu"}, "self-test: kernel names compared")
    check(a["after"] == 1.0, "self-test: launch-before-kernel share")
    check_links(gt, spans(gt, "kernel")[1:], "self-test")
    # a kernel gputrace moved to its launch counts as starting before it
    clamped = {"traceEvents": [
        ev(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=10, dur=5,
           args={"correlation": 1}),
        ev(ph="X", cat="kernel", name="k", pid=9, tid=2, ts=10, dur=3,
           args={"correlation": 1, "clamped_ns": 2500}),
        ev(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=20, dur=5,
           args={"correlation": 2}),
        ev(ph="X", cat="kernel", name="k", pid=9, tid=2, ts=30, dur=3,
           args={"correlation": 2}),
    ]}
    check(kernel_stats(clamped)["after"] == 0.5,
          "self-test: alignment judged before clamping (args.clamped_ns)")
    self_test_range_metrics()


def self_test_range_metrics():
    """range-metrics on synthetic traces: what passes, what fails, the refusal."""
    def ev(**kw):
        kw.setdefault("pid", 9)
        kw.setdefault("tid", 2)
        return kw

    good = {"gpu time ns": 9000, "gpu busy %": 90, "sm active %": 80.5}
    trace = {"traceEvents": [ev(ph="X", cat="kernel", name="k", ts=10 * i, dur=9,
                                args={"metrics": dict(good)}) for i in range(3)]}
    summary = {"metrics": {"kernels": [{"kernel": "k", "metric": "gpu time ns", "count": 3,
                                        "mean": 9000, "min": 9000, "max": 9000}]}}
    err = ["gputrace: CUDA metrics: range profiler on GPU 0 (GH100), 5 metrics per kernel\n"]
    n = len(failures)
    got = range_metrics("kernel", trace, summary, err)
    check(got == 0 and len(failures) == n, "self-test: range-metrics kernel passes good metrics")
    # a kernel without metrics, one with a zero time: both fail (and are taken back)
    bad = json.loads(json.dumps(trace))
    del bad["traceEvents"][0]["args"]["metrics"]
    bad["traceEvents"][1]["args"]["metrics"]["gpu time ns"] = 0
    got = range_metrics("kernel", bad, summary, err)
    caught = len(failures) - n
    del failures[n:]
    check(got == 1 and caught >= 2, "self-test: range-metrics kernel fails missing and zero "
          f"metrics ({caught} failures)")
    refused = ["gputrace: CUDA metrics: per-kernel metrics on GPU 0: no permission to profile "
               "the GPU (load the driver with NVreg_RestrictProfilingToAdminUsers=0, or run as "
               "root)\n"]
    check(range_metrics("kernel", {"traceEvents": []}, {}, refused) == REFUSED,
          "self-test: range-metrics says profiling was refused (exit status 3)")
    ranges = {"traceEvents": [
        ev(ph="X", cat="user_annotation", name="setup", ts=0, dur=5, pid=1, tid=1, args={}),
        ev(ph="X", cat="user_annotation", name="compute", ts=10, dur=50, pid=1, tid=1,
           args={"metrics": dict(good)}),
        ev(ph="X", cat="kernel", name="k", ts=20, dur=9, args={}),
        ev(ph="X", cat="user_annotation", name="readback", ts=70, dur=5, pid=1, tid=1,
           args={}),
    ]}
    rsum = {"metrics": {"ranges": [{"range": "compute", "metric": "gpu time ns", "count": 1,
                                    "mean": 9000, "min": 9000, "max": 9000}]}}
    check(range_metrics("nvtx", ranges, rsum, []) == 0 and len(failures) == n,
          "self-test: range-metrics nvtx passes a measured range")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "vec" and len(rest) == 1:
        cmd_vec(rest[0])
    elif cmd == "multi" and len(rest) >= 2:
        cmd_multi(rest[0], rest[1], "--graph-trace" in rest, "--events" in rest)
    elif cmd == "metrics" and len(rest) == 2:
        cmd_metrics(*rest)
    elif cmd == "range-metrics" and len(rest) == 4:
        got = cmd_range_metrics(*rest)
        if got in (2, REFUSED):
            return got
    elif cmd == "compare" and len(rest) == 5:
        cmd_compare(*rest)
    elif cmd == "self-test" and not rest:
        cmd_self_test()
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
