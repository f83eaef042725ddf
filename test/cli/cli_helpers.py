"""Helpers of the gputrace command tests: run scripts/gputrace against the
build under test, read traces exactly (Decimal microseconds -> integer ns),
and recompute a summary from a trace independently of writer/summary.c."""
import decimal
import gzip
import json
import os
import pathlib
import subprocess
from collections import defaultdict

from conftest import BUILD, GPUTRACE, PRELOAD, gputrace_env

SCRIPT = GPUTRACE
TOOL = BUILD / "gputrace-tool"
CLI = BUILD / "test" / "cli"
PLUGIN_DIR = CLI / "plugin"
SPAWN = CLI / "spawn"
STACK_APP = CLI / "stack_app"
LIB = pathlib.Path(PRELOAD.split()[-1])


def gt_env(extra=None):
    """Environment for scripts/gputrace: this build's library and tool."""
    return gputrace_env(extra)


def gputrace(args, cwd, env=None, input=None, timeout=90, script=SCRIPT):
    return subprocess.run([str(script)] + [str(a) for a in args], cwd=str(cwd),
                          env=env if env is not None else gt_env(), input=input,
                          capture_output=True, timeout=timeout)


def plugin_env(n=3, extra=None):
    e = {"GPUTRACE_PLUGIN_CONFIG": f"clitest:{n}"}
    if extra:
        e.update(extra)
    return gt_env(e)


def load_exact(path):
    """A trace with every number as Decimal, so ts/dur convert to exact ns."""
    data = pathlib.Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data, parse_float=decimal.Decimal, parse_int=decimal.Decimal)


def ns(us):
    return int((decimal.Decimal(us) * 1000).to_integral_value(decimal.ROUND_HALF_UP))


def trace_files(d):
    d = pathlib.Path(d)
    return sorted(list(d.glob("*.json")) + list(d.glob("*.json.gz")))


def host_pids(trace):
    g = trace.get("gputrace") or {}
    if g.get("host_pids"):
        return {int(p) for p in g["host_pids"]}
    return {int(g["pid"])} if g.get("pid") is not None else set()


def union_ns(intervals):
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def process_owners(g):
    """pid (host or device row) -> its process, (pid, exe, host, rank), from a
    trace's "gputrace" object: a plain trace's pid and devices, or a merged
    trace's inputs through their pid_map."""
    out = {}
    if not g:
        return out
    if g.get("inputs") is not None:
        for inp in g["inputs"]:
            pid_map = {int(k): int(v) for k, v in (inp.get("pid_map") or {}).items()}
            for pid, key in process_owners(inp.get("gputrace")).items():
                out[pid_map.get(pid, pid)] = key
        return out
    rank = g.get("rank")
    key = (int(g["pid"]), os.path.basename(g.get("exe") or "") or None, g.get("hostname"),
           None if rank is None else str(rank))
    out[int(g["pid"])] = key
    for d in g.get("devices") or []:
        out[int(d["pid"])] = key
    return out


def expected_summary(trace):
    """The summary's numbers, recomputed from the trace's "X" events."""
    hosts = host_pids(trace)
    owners = process_owners(trace.get("gputrace"))
    procs = defaultdict(lambda: {"kernels": [0, 0], "api_calls": [0, 0],
                                 "devices": defaultdict(list)})
    names = {int(e["pid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    kernels, api, annotations = defaultdict(list), defaultdict(list), defaultdict(list)
    copies = defaultdict(lambda: [0, 0, []])  # count, bytes, durations
    devices = defaultdict(list)
    first, last, spans = None, 0, 0
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        start, dur = ns(e["ts"]), ns(e.get("dur", 0))
        first = start if first is None else min(first, start)
        last = max(last, start + dur)
        spans += 1
        pid = int(e["pid"])
        args = e.get("args") or {}
        proc = procs[owners[pid]] if pid in owners else None
        if pid not in hosts and e.get("cat") in ("cuda_sync", "gpu_sync"):
            continue  # a wait on a device row: not work, not busy
        if pid not in hosts:
            devices[names.get(pid, f"pid {pid}")].append((start, start + dur))
            if proc is not None:
                proc["devices"][names.get(pid, f"pid {pid}")].append((start, start + dur))
                if e["cat"] == "kernel":
                    proc["kernels"][0] += 1
                    proc["kernels"][1] += dur
            if e["cat"] == "kernel":
                kernels[e["name"]].append(dur)
            elif e["cat"] in ("gpu_memcpy", "gpu_memset"):
                kind = args.get("kind", "copy") if e["cat"] == "gpu_memcpy" else "memset"
                c = copies[kind]
                c[0] += 1
                c[1] += int(args.get("bytes", 0))
                c[2].append(dur)
        elif e["cat"] == "user_annotation":
            annotations[e["name"]].append(dur)
        elif e["cat"] != "overhead":
            api[e["name"]].append(dur)
            if proc is not None:
                proc["api_calls"][0] += 1
                proc["api_calls"][1] += dur

    def rows(d):
        return {k: {"count": len(v), "total_ns": sum(v), "min_ns": min(v), "max_ns": max(v)}
                for k, v in d.items()}
    return {
        "spans": spans,
        "window": (first or 0, last),
        "kernels": rows(kernels),
        "api_calls": rows(api),
        "annotations": rows(annotations),
        "copies": {k: {"count": c[0], "bytes": c[1], "total_ns": sum(c[2])}
                   for k, c in copies.items()},
        "devices": {k: {"spans": len(v), "busy_ns": union_ns(v)} for k, v in devices.items()},
        "lost": int((trace.get("gputrace") or {}).get("events_lost", 0)),
        "processes": {k: {"kernels": {"count": v["kernels"][0], "total_ns": v["kernels"][1]},
                          "api_calls": {"count": v["api_calls"][0], "total_ns": v["api_calls"][1]},
                          "devices": {d: union_ns(iv) for d, iv in v["devices"].items()}}
                      for k, v in procs.items()},
    }


def check_summary_json(s, expect):
    """Assert a summary JSON (writer/summary.c's schema) equals expect."""
    assert s["schema"] == "gputrace-summary" and s["version"] == 1
    assert s["spans"] == expect["spans"]
    assert (s["window"]["start_ns"], s["window"]["end_ns"]) == expect["window"]
    for key in ("kernels", "api_calls", "annotations"):
        got = {r["name"]: {k: r[k] for k in ("count", "total_ns", "min_ns", "max_ns")}
               for r in s[key]}
        assert got == expect[key], key
        totals = [r["total_ns"] for r in s[key]]
        assert totals == sorted(totals, reverse=True), f"{key} not sorted by total"
    got = {r["kind"]: {k: r[k] for k in ("count", "bytes", "total_ns")} for r in s["copies"]}
    assert got == expect["copies"]
    got = {r["name"]: {"spans": r["spans"], "busy_ns": r["busy_ns"]} for r in s["devices"]}
    assert got == expect["devices"]
    assert s["lost"]["total"] == expect["lost"]
    # devices by process: every process that recorded a span, with its own rows
    got = {(p["pid"], p["exe"], p["host"], p["rank"]):
           {"kernels": p["kernels"], "api_calls": p["api_calls"],
            "devices": {d["name"]: d["busy_ns"] for d in p["devices"]}}
           for p in s["processes"] if p["spans"]}
    assert got == expect["processes"]
