"""Plug-in backends end to end: the example plug-in (a simulated accelerator,
built against the installed header only) and broken ones, loaded through
GPUTRACE_PLUGIN_PATH into a traced program; the trace is read back and
checked exactly."""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import (APPS, BUILD, GPUTRACE, ROOT, SANITIZE, ZE_SIM, count_events, events,
                      gputrace_env, gputrace_lines, need, run, scan_trace, sim_env)

PLUG = BUILD / "test" / "plugins"
HOST_APP = PLUG / "host_app"
SIMACCEL = PLUG / "good" / "libsimaccel.so"
INCLUDE = PLUG / "prefix" / "include"
BROKEN = ["bad_abi", "no_symbol", "create_fails", "start_fails", "flush_fails"]
HOST_EXIT = 3  # host_app's own exit status
HOST_STDOUT = b"host_app done\n"
CORR_BASE = 2 << 48  # the first plug-in's correlation namespace


def plugin_dir(tmp_path, *sos, name="plugins"):
    d = tmp_path / name
    d.mkdir()
    for so in sos:
        need(so)
        shutil.copy(so, d / pathlib.Path(so).name)
    return d


def run_host(tmp_path, path, config="", activities=None, env=None, sleep_ms=20):
    need(HOST_APP)
    e = {"GPUTRACE_PLUGIN_PATH": str(path)}
    if config:
        e["GPUTRACE_PLUGIN_CONFIG"] = config
    if activities:
        e["GPUTRACE_ACTIVITIES"] = activities
    e.update(env or {})
    r = run([HOST_APP, str(sleep_ms)], env=e, tmp_path=tmp_path)
    assert r.returncode == HOST_EXIT, r.stderr.decode(errors="replace")
    assert r.stdout == HOST_STDOUT
    return r


def meta(trace, what):
    """{(pid, tid): name} of the thread_name / process_name metadata."""
    return {(e["pid"], e.get("tid", 0)): e["args"]["name"]
            for e in events(trace, ph="M", name=what)}


def device_pid(trace, name):
    pids = [pid for (pid, _), n in meta(trace, "process_name").items() if n == name]
    assert len(pids) == 1, meta(trace, "process_name")
    return pids[0]


def queue_tids(trace, pid):
    return {n: tid for (p, tid), n in meta(trace, "thread_name").items() if p == pid}


def test_simaccel_trace(tmp_path):
    """Rows, spans, times, flows, counters and the instant, exactly."""
    d = plugin_dir(tmp_path, SIMACCEL)
    kinds = tmp_path / "kinds"
    r = run_host(tmp_path, d, f"simaccel:kernels=3,kinds_file={kinds}")
    assert gputrace_lines(r.stderr) == []
    assert kinds.read_text() == "runtime,kernel,memcpy,annotation,counter\n"
    t = r.trace
    pid = device_pid(t, "SimAccel 0")
    tids = queue_tids(t, pid)
    assert set(tids) == {"compute", "copy"}
    sort = {e["tid"]: e["args"]["sort_index"]
            for e in events(t, ph="M", name="thread_sort_index", pid=pid)}
    assert sort[tids["compute"]] < sort[tids["copy"]]

    launches = events(t, ph="X", name="simLaunchKernel")
    copies_h = events(t, ph="X", name="simMemcpyAsync")
    assert len(launches) == 3 and len(copies_h) == 3
    host_pid = launches[0]["pid"]  # the program; host spans are on its main thread
    for h in launches + copies_h:
        assert h["cat"] == "simaccel_runtime"
        assert (h["pid"], h["tid"]) == (host_pid, host_pid)
    assert host_pid != pid

    kernels = sorted(events(t, ph="X", cat="kernel", pid=pid), key=lambda e: e["ts"])
    copies = sorted(events(t, ph="X", cat="gpu_memcpy", pid=pid), key=lambda e: e["ts"])
    assert [k["name"] for k in kernels] == ["sim_kernel_0", "sim_kernel_1", "sim_kernel_2"]
    assert [c["name"] for c in copies] == ["Memcpy HtoD"] * 3
    assert all(k["tid"] == tids["compute"] for k in kernels)
    assert all(c["tid"] == tids["copy"] for c in copies)
    launches.sort(key=lambda e: e["ts"])
    copies_h.sort(key=lambda e: e["ts"])
    base = launches[0]["ts"]
    for i in range(3):
        k, c, lh, ch = kernels[i], copies[i], launches[i], copies_h[i]
        # the plug-in's own stream handle stays as stream_label; Kineto's integer device and
        # stream (the row's number) are added, so HTA counts the kernel as GPU work
        assert k["args"] == {"grid": 64 * (i + 1), "block": 256, "stream_label": "0xc0ffee",
                             "device": 0, "stream": k["tid"], "correlation": CORR_BASE + 1 + i}
        assert c["args"] == {"kind": "HtoD", "bytes": 4096 * (i + 1), "device": 0,
                             "stream": c["tid"], "correlation": CORR_BASE + 101 + i}
        assert lh["args"] == {"kernel": f"sim_kernel_{i}", "correlation": CORR_BASE + 1 + i}
        assert ch["args"] == {"correlation": CORR_BASE + 101 + i}
        # times as the plug-in gave them, in us from its start
        assert lh["ts"] - base == pytest.approx(1000 * i, abs=1e-3)
        assert lh["dur"] == pytest.approx(20, abs=1e-3)
        assert k["ts"] - lh["ts"] == pytest.approx(50, abs=1e-3)
        assert k["dur"] == pytest.approx(100 + 10 * i, abs=1e-3)
        assert ch["ts"] - base == pytest.approx(1000 * i + 200, abs=1e-3)
        assert c["ts"] - base == pytest.approx(1000 * i + 300, abs=1e-3)
        assert c["dur"] == pytest.approx(40, abs=1e-3)

    # one ac2g flow per device span, from the host span with its correlation
    starts = {e["id"]: e for e in events(t, ph="s", cat="ac2g")}
    ends = {e["id"]: e for e in events(t, ph="f", cat="ac2g")}
    assert len(starts) == 6 and set(starts) == set(ends)
    for dev, host in list(zip(kernels, launches)) + list(zip(copies, copies_h)):
        fl = [i for i, f in ends.items() if (f["pid"], f["tid"]) == (dev["pid"], dev["tid"])
              and dev["ts"] <= f["ts"] <= dev["ts"] + dev["dur"]]
        assert len(fl) == 1
        f, s = ends[fl[0]], starts[fl[0]]
        assert f["bp"] == "e" and f["name"] == s["name"] == "ac2g"
        assert (s["pid"], s["tid"]) == (host["pid"], host["tid"])
        assert host["ts"] <= s["ts"] <= host["ts"] + host["dur"]

    # counters: one series group per name on the device row, values exact
    mem = sorted(events(t, ph="C", name="sim_memory"), key=lambda e: e["ts"])
    util = sorted(events(t, ph="C", name="sim_utilization"), key=lambda e: e["ts"])
    assert [m["args"] for m in mem] == [
        {"used_bytes": (i + 1) << 20, "free_bytes": (8 << 20) - ((i + 1) << 20)}
        for i in range(3)]
    assert [u["args"] for u in util] == [{"percent": 12.5 * (i + 1)} for i in range(3)]
    assert all(e["pid"] == pid for e in mem + util)
    assert [m["ts"] - base for m in mem] == pytest.approx([0, 1000, 2000], abs=1e-3)
    assert len(events(t, ph="C")) == 6

    marks = events(t, ph="i", name="sim_checkpoint")
    assert len(marks) == 1
    assert (marks[0]["pid"], marks[0]["tid"]) == (pid, tids["compute"])
    assert marks[0]["cat"] == "user_annotation"
    assert marks[0]["ts"] - base == pytest.approx(5, abs=1e-3)

    # nothing else from the device
    assert len([e for e in t["traceEvents"] if e.get("pid") == pid and e["ph"] not in "Mf"]) == 13


def test_overlapping_kernels_of_one_queue_keep_their_times(tmp_path):
    """A device that runs kernels of one queue at once reports them overlapping:
    they are drawn at the times it reported, also after a kernel moved 1 ns off
    the end it touches (which once pushed every kernel recorded inside it to its
    end: sim_inside drawn 20 us late with no length, sim_across 110 us late)."""
    d = plugin_dir(tmp_path, SIMACCEL)
    r = run_host(tmp_path, d, "simaccel:kernels=1,concurrent=1",
                 env={"GPUTRACE_SUMMARY_JSON": str(tmp_path / "summary.json")})
    assert gputrace_lines(r.stderr) == []
    t = r.trace
    pid = device_pid(t, "SimAccel 0")
    tid = queue_tids(t, pid)["concurrent"]
    k = {e["name"]: e for e in events(t, ph="X", pid=pid) if e["tid"] == tid}
    assert sorted(k) == ["sim_across", "sim_after", "sim_first", "sim_inside", "sim_zero"]
    base = k["sim_first"]["ts"]
    at = {n: (round((e["ts"] - base) * 1000), round(e["dur"] * 1000)) for n, e in k.items()}
    assert at == {
        "sim_first": (0, 100000),
        # starts where sim_first ends: 1 ns later, its end kept (a device slice no
        # call caused never starts on an end, README "What the trace shows")
        "sim_after": (100001, 99999),
        "sim_inside": (150000, 30000),
        "sim_zero": (170000, 0),
        "sim_across": (190000, 110000),
    }
    # the summary counts them as drawn: the device's own durations
    js = json.loads((tmp_path / "summary.json").read_text())
    kernels = {x["name"]: x for x in js["kernels"]}
    assert kernels["sim_inside"]["total_ns"] == 30000
    assert kernels["sim_across"]["total_ns"] == 110000


def test_last_records_handed_over_at_stop_are_kept(tmp_path):
    """stop() at exit hands over the plug-in's last records, host spans timed now (after
    the program began to end), from a thread of its own: each one the builder accepted
    is in the trace, and none is counted lost (they were accepted, then dropped
    uncounted as the program's calls after the end are)."""
    d = plugin_dir(tmp_path, SIMACCEL)
    r = run_host(tmp_path, d, "simaccel:kernels=1,at_stop=2000")
    assert b"refused" not in r.stderr, r.stderr
    t = r.trace
    last = events(t, ph="X", name="simLastRecord")
    assert len(last) == 2000
    assert all((e["pid"], e["tid"]) == (e["pid"], e["pid"]) for e in last)
    assert len(events(t, ph="X", name="simLaunchKernel")) == 1
    assert t["gputrace"]["events_lost"] == 0
    assert t["gputrace"]["complete"] is True


def arrows_to(trace, devs):
    """{device span's correlation: the host span its ac2g arrow starts in}."""
    starts = {e["id"]: e for e in events(trace, ph="s", cat="ac2g")}
    ends = {e["id"]: e for e in events(trace, ph="f", cat="ac2g")}
    assert set(starts) == set(ends)
    hosts = events(trace, ph="X", cat="simaccel_runtime")
    found = {}
    for i, f in ends.items():
        dev = [d for d in devs if (f["pid"], f["tid"]) == (d["pid"], d["tid"])
               and d["ts"] <= f["ts"] <= d["ts"] + d["dur"]]
        host = [h for h in hosts if (starts[i]["pid"], starts[i]["tid"]) == (h["pid"], h["tid"])
                and h["ts"] <= starts[i]["ts"] <= h["ts"] + h["dur"]]
        assert len(dev) == 1 and len(host) == 1
        found[dev[0]["args"]["correlation"]] = host[0]
    assert len(found) == len(ends)  # one arrow per device span
    return found


def test_device_spans_handed_over_before_their_launch_get_their_arrow(tmp_path):
    """A collector that hands a device span over 300 ms (some 15 drain cycles of 20 ms)
    before the host span of the same correlation: the arrow is drawn all the same (it
    was lost, with nothing said or counted, past 3 cycles)."""
    d = plugin_dir(tmp_path, SIMACCEL)
    r = run_host(tmp_path, d, "simaccel:kernels=3,launch_after_ms=300", sleep_ms=800,
                 env={"GPUTRACE_FLUSH_MS": "20"})
    assert gputrace_lines(r.stderr) == []
    t = r.trace
    devs = events(t, ph="X", cat="kernel") + events(t, ph="X", cat="gpu_memcpy")
    assert len(devs) == 6
    arrows = arrows_to(t, devs)
    assert sorted(arrows) == [CORR_BASE + c for c in (1, 2, 3, 101, 102, 103)]
    for corr, host in arrows.items():
        assert host["args"]["correlation"] == corr
        assert host["name"] == ("simLaunchKernel" if corr < CORR_BASE + 100 else "simMemcpyAsync")
    assert "flows_unmatched" not in t["gputrace"]


UNMATCHED_LINE = re.compile(r"  arrows missing: (\d+) device spans? without an arrow, their "
                            r"launch not in the trace \(the trailer's flows_unmatched\)")


def unmatched_lines(text):
    """The summary's counts of arrows missing (its one line, when there are any)."""
    return [int(m.group(1)) for m in map(UNMATCHED_LINE.fullmatch, text.splitlines()) if m]


def summed_up(tmp_path, d, config, activities=None):
    """A host_app run with the summary on stderr and in JSON: (run, summary JSON)."""
    js = tmp_path / "summary.json"
    r = run_host(tmp_path, d, config, activities=activities,
                 env={"GPUTRACE_SUMMARY": "1", "GPUTRACE_SUMMARY_JSON": str(js)})
    return r, json.loads(js.read_text())


def tool(*args, tmp_path):
    return subprocess.run([str(GPUTRACE), *map(str, args)], env=gputrace_env(), cwd=tmp_path,
                          capture_output=True, timeout=60, text=True)


def test_device_spans_whose_launch_never_comes_are_counted(tmp_path):
    """Host spans not recorded (runtime not enabled): no arrow, each device span counted
    in the trailer's flows_unmatched, and in every summary of it: the one at exit (its
    line and JSON), gputrace summary of the file and of a merge, check and report (a
    reader of the summary alone never learnt arrows were missing)."""
    d = plugin_dir(tmp_path, SIMACCEL)
    r, js = summed_up(tmp_path, d, "simaccel:kernels=3", activities="kernel,memcpy")
    t = r.trace
    assert len(events(t, ph="X", cat="kernel")) == 3
    assert events(t, ph="s") == [] and events(t, ph="f") == []
    assert t["gputrace"]["flows_unmatched"] == 6
    assert unmatched_lines(r.stderr.decode()) == [6]
    assert js["flows"] == {"unmatched": 6}

    s = tool("summary", "--json", "-", r.trace_path, tmp_path=tmp_path)
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout)["flows"] == {"unmatched": 6}
    s = tool("summary", r.trace_path, tmp_path=tmp_path)
    assert unmatched_lines(s.stdout) == [6]
    # the merge of two such files keeps both files' count
    merged = tmp_path / "merged.json"
    assert tool("merge", "-o", merged, r.trace_path, r.trace_path,
                tmp_path=tmp_path).returncode == 0
    assert json.loads(merged.read_text())["gputrace"]["flows_unmatched"] == 12
    s = tool("summary", "--json", "-", merged, tmp_path=tmp_path)
    assert json.loads(s.stdout)["flows"] == {"unmatched": 12}

    for src in (r.trace_path, tmp_path / "summary.json"):
        c = tool("check", src, "flows.unmatched == 0", tmp_path=tmp_path)
        assert c.returncode == 1, c.stderr
        assert "FAIL flows.unmatched == 0: 6" in c.stdout.splitlines()
        c = tool("check", src, "flows.unmatched <= 6", tmp_path=tmp_path)
        assert c.returncode == 0, c.stderr
        assert "PASS flows.unmatched <= 6: 6" in c.stdout.splitlines()

    html = tmp_path / "report.html"
    assert tool("report", "-o", html, r.trace_path, tmp_path=tmp_path).returncode == 0
    assert ('<p id="flows-unmatched" data-value="6" class="lostbad">6 device spans have no '
            'arrow from the call that launched them') in html.read_text()


def test_every_arrow_drawn_is_no_arrow_missing(tmp_path):
    """A run whose device spans all have their arrow: 0 in the summary JSON, no line, and
    a check on it passes."""
    d = plugin_dir(tmp_path, SIMACCEL)
    r, js = summed_up(tmp_path, d, "simaccel:kernels=3")
    assert len(events(r.trace, ph="f", cat="ac2g")) == 6
    assert "flows_unmatched" not in r.trace["gputrace"]
    assert js["flows"] == {"unmatched": 0}
    assert "gputrace summary: " in r.stderr.decode()
    assert unmatched_lines(r.stderr.decode()) == []
    assert "arrows missing" not in r.stderr.decode()
    c = tool("check", r.trace_path, "flows.unmatched == 0", tmp_path=tmp_path)
    assert c.returncode == 0, c.stdout + c.stderr
    html = tmp_path / "report.html"
    assert tool("report", "-o", html, r.trace_path, tmp_path=tmp_path).returncode == 0
    assert "flows-unmatched" not in html.read_text()


def test_device_spans_waiting_for_their_launch_are_bounded(tmp_path):
    """More device spans waiting for their launch than are kept (4096): those pushed out
    have no arrow and are counted, the others get theirs; every span is in the trace."""
    d = plugin_dir(tmp_path, SIMACCEL)
    r = run_host(tmp_path, d, "simaccel:kernels=5000,launch_after_ms=300", sleep_ms=800,
                 env={"GPUTRACE_FLUSH_MS": "20"})
    t = r.trace
    devs = events(t, ph="X", cat="kernel") + events(t, ph="X", cat="gpu_memcpy")
    assert len(devs) == 10000
    unmatched = t["gputrace"].get("flows_unmatched", 0)  # written when not 0
    assert 10000 - 4096 <= unmatched < 10000
    starts = {e["id"] for e in events(t, ph="s", cat="ac2g")}
    ends = {e["id"] for e in events(t, ph="f", cat="ac2g")}
    assert starts == ends and len(ends) + unmatched == 10000
    assert t["gputrace"]["events_lost"] == 0


@pytest.mark.parametrize("activities,expect", [
    # vendor aliases name the generic kinds
    ("xpu_runtime,concurrent_kernel", "runtime,kernel"),
    ("kernel,memcpy,sync", "kernel,memcpy"),
    ("privateuse1_runtime,counter", "runtime,counter"),
])
def test_enabled_kinds_reach_create(tmp_path, activities, expect):
    """create gets the configured kinds the plug-in supports; a plug-in that
    emits the other kinds anyway (all_kinds=1) has them dropped."""
    d = plugin_dir(tmp_path, SIMACCEL)
    kinds = tmp_path / "kinds"
    r = run_host(tmp_path, d, f"simaccel:all_kinds=1,kinds_file={kinds}", activities=activities)
    assert kinds.read_text() == expect + "\n"
    enabled = set(expect.split(","))
    t = r.trace
    assert len(events(t, ph="X", name="simLaunchKernel")) == (3 if "runtime" in enabled else 0)
    assert len(events(t, ph="X", cat="kernel")) == (3 if "kernel" in enabled else 0)
    assert len(events(t, ph="X", cat="gpu_memcpy")) == (3 if "memcpy" in enabled else 0)
    assert len(events(t, ph="C")) == (6 if "counter" in enabled else 0)
    assert len(events(t, ph="i", name="sim_checkpoint")) == 0
    flows = 3 * ("runtime" in enabled) * (("kernel" in enabled) + ("memcpy" in enabled))
    assert len(events(t, ph="s", cat="ac2g")) == flows


# The one line each broken plug-in gets (after "gputrace: plug-in <dir>/").
BROKEN_LINES = {
    "bad_abi": r"bad_abi\.so: built for plug-in ABI version 2, this gputrace supports 1 to 1: "
               r"rebuild it against this gputrace's gputrace_plugin\.h; skipped",
    "no_symbol": r"no_symbol\.so: not a gputrace plug-in: it lacks the symbol "
                 r"gputrace_plugin_register \(or Kineto's KinetoPlugin_register\); skipped",
    "garbage": r"garbage\.so: cannot load it: .*garbage\.so: .*; skipped",
    "create_fails": r"create_fails\.so \(create_fails\): create\(\) failed: -19 "
                    r"\(No such device\); plug-in disabled, tracing goes on",
    "start_fails": r"start_fails\.so \(start_fails\): start\(\) failed: -5 "
                   r"\(Input/output error\); plug-in disabled, tracing goes on",
    "flush_fails": r"flush_fails\.so \(flush_fails\): flush\(\) failed: -71 "
                   r"\(Protocol error\); plug-in disabled, tracing goes on",
    # a query() that declares no kind: said at the default level (it was a line at
    # info only, saying none of its kinds was enabled)
    "no_kinds": r"no_kinds\.so \(no_kinds\): query\(\) declared no activity kind "
                r"\(kinds = 0: GPUTRACE_KIND_\* bits\); skipped",
    # the name it gave, its control bytes as '?' (it said only "no valid name")
    "bad_name": r"bad_name\.so: query\(\) gave the name \"tiny npu\?\[31m\": not 1 to 31 of "
                r"A-Z a-z 0-9 _ -; skipped",
}
# What each was asked to do: never anything after the call that failed.
# (flush fails in a drain cycle, or at exit if the program ends first.)
BROKEN_CALLS = {
    "bad_abi": [["register"]],
    "no_symbol": [[]],
    "garbage": [[]],
    "create_fails": [["register", "query", "create"]],
    "start_fails": [["register", "query", "create", "start"]],
    "flush_fails": [["register", "query", "create", "start", "flush"],
                    ["register", "query", "create", "start", "stop", "flush final"]],
    "no_kinds": [["register", "query"]],
    "bad_name": [["register", "query"]],
}


def broken_dir(tmp_path, names, with_good=False):
    sos = [PLUG / "broken" / f"{n}.so" for n in names if n != "garbage"]
    d = plugin_dir(tmp_path, *sos, *([SIMACCEL] if with_good else []))
    if "garbage" in names:
        (d / "garbage.so").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 4)
    return d


def plugin_lines(stderr):
    return [l for l in gputrace_lines(stderr) if "plug-in" in l or "PLUGIN" in l]


@pytest.mark.parametrize("name", list(BROKEN_LINES))
def test_broken_plugin_one_line(tmp_path, name):
    d = broken_dir(tmp_path, [name])
    log = tmp_path / "calls"
    r = run_host(tmp_path, d, env={"BROKEN_PLUGIN_LOG": str(log)})
    lines = plugin_lines(r.stderr)
    assert len(lines) == 1, lines
    assert re.fullmatch("gputrace: plug-in " + re.escape(str(d)) + "/" + BROKEN_LINES[name],
                        lines[0]), lines[0]
    calls = log.read_text().split("\n")[:-1] if log.exists() else []
    assert calls in [[f"{name} {c}" for c in seq] for seq in BROKEN_CALLS[name]]
    # the program runs on; a broken plug-in recorded nothing: no trace file
    assert not os.path.exists(r.trace_path)


def test_flush_failure_in_drain_cycle(tmp_path):
    """A flush that fails in a regular drain cycle: not called again, not
    even stop, flush(final) or destroy at exit."""
    d = broken_dir(tmp_path, ["flush_fails"])
    log = tmp_path / "calls"
    r = run_host(tmp_path, d, env={"BROKEN_PLUGIN_LOG": str(log), "GPUTRACE_FLUSH_MS": "10"},
                 sleep_ms=300)
    assert len(plugin_lines(r.stderr)) == 1
    assert log.read_text().split("\n")[:-1] == [
        f"flush_fails {c}" for c in ["register", "query", "create", "start", "flush"]]


def test_final_flush_that_never_returns(tmp_path):
    """A plug-in stuck in its last flush holds the drain: the exit waits
    while the drain makes no progress for 5 s, no longer, says so in one
    line, and leaves the last checkpoint, valid, with what it recorded."""
    d = broken_dir(tmp_path, ["final_hangs"], with_good=True)
    start = time.monotonic()
    r = run_host(tmp_path, d, env={"GPUTRACE_FLUSH_MS": "10"}, sleep_ms=300)
    took = time.monotonic() - start
    lines = gputrace_lines(r.stderr)
    assert [l for l in lines if "progress" in l] == [
        "gputrace: the last drain (exit) made no progress for 5000 ms: the trace keeps its "
        "last checkpoint, without the events recorded after it"], lines
    assert 5 <= took < 20, took
    t = r.trace
    assert t["gputrace"]["complete"] is False
    assert len(events(t, ph="X", cat="kernel")) > 0


def test_crash_wins_over_an_exit_while_the_last_drain_is_stuck(tmp_path):
    """A thread crashes (SIGSEGV) while a plug-in holds the last drain (its final flush
    never returns): the handler waits up to 3 s for it; meanwhile the main thread
    returns from main. The process still dies by the signal, as it would untraced
    (before, the program's exit status 3 could win: the exit and the handler raced as
    the wait ended, and the exit won about 3 runs in 16)."""
    need(HOST_APP)
    d = broken_dir(tmp_path, ["final_hangs"], with_good=True)
    plain = run([HOST_APP, "600", "crash"], traced=False)
    r = run([HOST_APP, "600", "crash"], env={"GPUTRACE_PLUGIN_PATH": str(d)},
            tmp_path=tmp_path, timeout=60)
    assert plain.returncode == r.returncode == -signal.SIGSEGV, (r.returncode, r.stderr)
    assert plain.stdout == r.stdout == b""  # dead before main printed, untraced as traced
    # the line names what it waited for: a plug-in, not "the driver"
    lines = gputrace_lines(r.stderr)
    assert len(lines) == 1 and lines[0].startswith(
        "gputrace: the device's last records (signal SIGSEGV) were not read: a plug-in did "
        "not answer for 3000 ms"), lines


def test_flush_that_crashes_in_a_drain_cycle(tmp_path):
    """A plug-in that faults in a drain cycle's flush takes the process with it, by
    the signal: the drain does not wait a quiet second for a call that will never
    return, nor says it hung (it said "did not return: nothing handed over for
    1000 ms"); one line names the plug-in and the call that crashed, and the trace,
    with the other plug-in's records, ends by the signal."""
    need(HOST_APP)
    d = broken_dir(tmp_path, ["flush_crashes"], with_good=True)
    log = tmp_path / "calls"
    r = run([HOST_APP, "3000"], env={"GPUTRACE_PLUGIN_PATH": str(d),
                                     "BROKEN_PLUGIN_LOG": str(log)},
            tmp_path=tmp_path, timeout=60)
    assert r.returncode == -signal.SIGSEGV, (r.returncode, r.stderr)
    assert gputrace_lines(r.stderr) == [
        f"gputrace: plug-in {d}/flush_crashes.so (flush_crashes): flush() crashed (signal "
        "SIGSEGV); the trace is written without it, the process dies by the signal"]
    assert log.read_text().splitlines()[-2:] == ["flush_crashes flush"] * 2
    t = r.trace
    assert t["gputrace"]["complete"] is True and t["gputrace"]["end"] == "signal SIGSEGV"
    assert len(events(t, ph="X", cat="kernel")) > 0  # simaccel's


def test_stop_that_crashes_as_a_window_closes(tmp_path):
    """A plug-in that faults in stop() as a --duration window closes (on the drain
    thread's call): the drain does not wait 5 quiet seconds for it while the fault's
    handler waits 3 s for the drain (it ran out first: the file kept its last
    checkpoint, not complete, with "the last drain made no progress"); one line
    names the plug-in and the call, and the window's file ends by the signal."""
    need(HOST_APP)
    d = broken_dir(tmp_path, ["stop_crashes"], with_good=True)
    r = run([HOST_APP, "3000"], env={"GPUTRACE_PLUGIN_PATH": str(d), "GPUTRACE_DELAY": "0.2",
                                     "GPUTRACE_DURATION": "0.3"},
            tmp_path=tmp_path, timeout=60)
    assert r.returncode == -signal.SIGSEGV, (r.returncode, r.stderr)
    assert gputrace_lines(r.stderr) == [
        f"gputrace: plug-in {d}/stop_crashes.so (stop_crashes): stop() crashed (signal "
        "SIGSEGV); the trace is written without it, the process dies by the signal"]
    info = r.trace["gputrace"]
    assert info["complete"] is True and info["end"] == "signal SIGSEGV", info


def test_no_flush_before_the_first_start(tmp_path):
    """A plug-in created while paused (--delay) is flushed only once started: the
    drain cycles before the window opened flushed it (with GPUTRACE_FLUSH_MS=200 the
    first raced the window's open at 0.2 s, and won on a loaded machine), and
    simaccel handed its counters at its base time 0 ("sim_memory" refused, -ERANGE).
    One never started (a --delay longer than the run) gets no flush at all."""
    d = plugin_dir(tmp_path, SIMACCEL)
    r = run_host(tmp_path, d, sleep_ms=600, env={"GPUTRACE_DELAY": "0.3",
                                                  "GPUTRACE_DURATION": "0.2",
                                                  "GPUTRACE_FLUSH_MS": "50"})
    assert plugin_lines(r.stderr) == []
    assert len(events(r.trace, ph="C", name="sim_memory")) == 3
    never = tmp_path / "never"
    never.mkdir()
    r = run_host(never, d, sleep_ms=50, env={"GPUTRACE_DELAY": "5"})
    assert plugin_lines(r.stderr) == []


def test_flush_calling_the_vendor_api_is_our_work(tmp_path):
    """A Level Zero plug-in's flush and stop call the API (zeDriverGet) through our
    wrapper, on the thread that makes its calls: our own work, neither traced as the
    program's nor counted lost (it was counted lost once the calls moved off the drain
    thread)."""
    app = APPS / "ze_basic"
    for p in (ZE_SIM, app):
        need(p)
    d = broken_dir(tmp_path, ["flush_calls_ze"])
    r = run([app], env=sim_env({"GPUTRACE_PLUGIN_PATH": str(d)}), tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert gputrace_lines(r.stderr) == []
    info = r.trace["gputrace"]
    assert info["complete"] is True
    assert info["events_lost"] == 0, info["lost_by_reason"]
    assert [e for e in events(r.trace, ph="X") if e.get("name") == "zeDriverGet"
            and e["args"].get("count") == 0] == []


def run_broken_ze_window(tmp_path, variant, ms):
    """ze_window MS with the broken plug-in VARIANT: (run, its folder, its calls)."""
    app = APPS / "ze_window"
    for p in (ZE_SIM, app):
        need(p)
    d = broken_dir(tmp_path, [variant])
    log = tmp_path / "calls"
    r = run([app, str(ms)], env=sim_env({"GPUTRACE_PLUGIN_PATH": str(d),
                                         "BROKEN_PLUGIN_LOG": str(log)}), tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r, d, log.read_text().split("\n")[:-1]


def test_flush_waiting_for_its_own_worker_is_not_stuck(tmp_path):
    """A flush that waits 2.1 s for a thread of its own handing over a batch (one
    record every 70 ms) is not stuck: the records come from another thread of the
    plug-in, and they count as its progress. Every one is in the trace, no line."""
    r, _, calls = run_broken_ze_window(tmp_path, "flush_waits", 2800)
    assert gputrace_lines(r.stderr) == []
    t = scan_trace(r.trace_path)  # ~2 KB an iteration: up to ~25 MB where sleeps are exact
    assert count_events(t, name="from_worker") == 30
    assert t["gputrace"]["events_lost"] == 0
    assert calls[-1] == "flush_waits destroy"


def test_flush_that_never_returns(tmp_path):
    """A plug-in stuck in a drain cycle's flush costs that plug-in, not the
    trace: one line naming it and the call once it handed nothing over for
    1 s, it is never called again, what its own thread hands over later is
    counted lost, and the drain goes on: every Level Zero launch is kept."""
    r, d, calls = run_broken_ze_window(tmp_path, "flush_hangs", 2500)
    assert gputrace_lines(r.stderr) == [
        f"gputrace: plug-in {d}/flush_hangs.so (flush_hangs): flush() did not return: "
        "nothing handed over for 1000 ms; plug-in disabled, tracing goes on",
        f"gputrace: 5 events lost (plugin_dropped 5) in {r.trace_path}"]
    assert calls == [
        f"flush_hangs {c}" for c in ["register", "query", "create", "start", "flush", "flush"]]
    iterations = int(re.search(rb"iterations=(\d+)", r.stdout).group(1))
    t = scan_trace(r.trace_path)  # streamed, as above
    info = t["gputrace"]
    assert info["complete"] is True and info["end"] == "exit"
    assert count_events(t, ph="X", cat="kernel") == 2 * iterations
    assert count_events(t, name="after_hang") == 0
    assert info["events_lost"] == 5 and info["lost_by_reason"]["plugin_dropped"] == 5


def test_stop_that_never_returns_as_a_window_closes(tmp_path):
    """A plug-in stuck in stop() as a capture window closes (--duration 1.5: the
    drain thread closes it) costs that plug-in, not the trace: one line naming it
    and the call once it handed nothing over for 5 s (a stop may rightly take
    seconds), and the window's file is ended, with every launch of the window. It
    held the drain thread for good: the file kept its last checkpoint, not
    complete, and the exit waited 5 s more."""
    app = APPS / "ze_window"
    for p in (ZE_SIM, app):
        need(p)
    d = broken_dir(tmp_path, ["stop_hangs"])
    log = tmp_path / "calls"
    # the window counts from the process's start: 1.5 s leaves a loaded machine time to
    # reach the first launch (0.5 s once held none: CI, load 7). The program runs on past
    # the 5 s (and a fifth) the drain then waits for the stop.
    r = run([app, "8000"], env=sim_env({"GPUTRACE_PLUGIN_PATH": str(d), "GPUTRACE_DURATION": "1.5",
                                        "BROKEN_PLUGIN_LOG": str(log)}), tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert gputrace_lines(r.stderr) == [
        f"gputrace: plug-in {d}/stop_hangs.so (stop_hangs): stop() did not return: "
        "nothing handed over for 5000 ms; plug-in disabled, tracing goes on"]
    calls = log.read_text().split("\n")[:-1]
    # the window's periodic flushes, then the stop, and never a call again
    assert calls[:4] == [f"stop_hangs {c}" for c in ["register", "query", "create", "start"]]
    assert set(calls[4:-1]) <= {"stop_hangs flush"} and calls[-1] == "stop_hangs stop", calls
    info = r.trace["gputrace"]
    assert info["complete"] is True, info
    # the window's launches: a run of consecutive iterations, each launch's kernel there
    steps = sorted(e["args"]["gx"] for e in events(r.trace, ph="X", cat="kernel")
                   if e["name"] == "step")
    assert steps and steps == list(range(steps[0], steps[0] + len(steps)))
    assert info["events_lost"] == 0


def test_flush_stuck_while_its_thread_streams(tmp_path):
    """A drain cycle's flush stuck for good while a thread of the same plug-in hands
    records over all along (which counts as its progress) is given up on all the same,
    5 s after it began: one line saying so, never called again, and the trace goes on
    to its end. The program ended meanwhile: the exit waited 2 s for the call (one line),
    and the plug-in beside it is still stopped and flushed by the last drain. (Before,
    the flush was never given up on: the trace ended where it began, incomplete, and
    the other plug-in was never stopped.)"""
    d = broken_dir(tmp_path, ["flush_streams"], with_good=True)
    log = tmp_path / "calls"
    start = time.monotonic()
    r = run_host(tmp_path, d, config="simaccel:at_stop=2",
                 env={"BROKEN_PLUGIN_LOG": str(log), "GPUTRACE_FLUSH_MS": "10"}, sleep_ms=300)
    took = time.monotonic() - start
    so = f"plug-in {d}/flush_streams.so (flush_streams)"
    lines = gputrace_lines(r.stderr)
    assert lines[:2] == [
        f"gputrace: plug-ins: {so}: flush() is still running after 2000 ms; not waited "
        "for longer",
        f"gputrace: {so}: flush() did not return in 5000 ms, though its threads kept handing "
        "records over; plug-in disabled, tracing goes on"], lines
    # what its thread streams once given up on, before the trace's end, is counted lost
    assert len(lines) <= 3 and all(re.fullmatch(
        r"gputrace: (\d+) events? lost \(plugin_dropped \1\) in .*", l) for l in lines[2:]), lines
    assert log.read_text().split("\n")[:-1] == [
        f"flush_streams {c}" for c in ["register", "query", "create", "start", "flush", "flush"]]
    assert took < 8, took
    t = r.trace
    assert t["gputrace"]["complete"] is True and t["gputrace"]["end"] == "exit", t["gputrace"]
    # the other plug-in whole: its spans, and what its stop at exit handed over
    assert len(events(t, ph="X", cat="kernel")) == 3
    assert len(events(t, ph="X", name="simLastRecord")) == 2
    assert len(events(t, name="streamed")) > 0


def test_destroy_that_never_returns_costs_no_event(tmp_path):
    """A plug-in stuck in destroy() at exit: destroy comes once the trace is written, so
    the file is whole, with what the plug-in handed over in its last flush; one line
    names the plug-in and destroy(), and the exit waits 1 s for it, no longer. (Before,
    destroy ran inside the last drain: after 5 s the trace kept its last checkpoint,
    without the final records, and the one line named neither.)"""
    d = broken_dir(tmp_path, ["destroy_hangs"], with_good=True)
    log = tmp_path / "calls"
    start = time.monotonic()
    r = run_host(tmp_path, d, env={"BROKEN_PLUGIN_LOG": str(log)}, sleep_ms=300)
    took = time.monotonic() - start
    assert gputrace_lines(r.stderr) == [
        f"gputrace: plug-in {d}/destroy_hangs.so (destroy_hangs): destroy() did not return "
        "in 1000 ms; not waited for (the trace was written before it)"]
    assert took < 4.5, took
    calls = log.read_text().split("\n")[:-1]
    assert calls[-3:] == [f"destroy_hangs {c}" for c in ["stop", "flush final", "destroy"]]
    t = r.trace
    assert t["gputrace"]["complete"] is True and t["gputrace"]["end"] == "exit", t["gputrace"]
    assert len(events(t, name="final_record")) == 1
    assert len(events(t, ph="X", cat="kernel")) == 3  # the other plug-in's, whole
    assert t["gputrace"]["events_lost"] == 0


def test_start_that_never_returns_at_process_start(tmp_path):
    """A plug-in stuck in start() as the process starts (gputrace's constructor) is given
    up on as a window's start is: one line once it handed nothing over for 5 s, and the
    program runs on, traced, with the plug-in beside it. (It hung the program for good.)"""
    need(HOST_APP)
    d = broken_dir(tmp_path, ["start_hangs"], with_good=True)
    log = tmp_path / "calls"
    r = run([HOST_APP, "20"], env={"GPUTRACE_PLUGIN_PATH": str(d), "BROKEN_PLUGIN_LOG": str(log)},
            tmp_path=tmp_path, timeout=20)
    assert (r.returncode, r.stdout) == (HOST_EXIT, HOST_STDOUT), r.stderr
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/start_hangs.so (start_hangs): start() did not return: nothing "
        "handed over for 5000 ms; plug-in disabled, tracing goes on"]
    assert log.read_text().split("\n")[:-1] == [
        f"start_hangs {c}" for c in ["register", "query", "create", "start"]]
    assert r.trace["gputrace"]["complete"] is True
    assert len(events(r.trace, ph="X", cat="kernel")) == 3


def test_config_entry_too_long_says_so(tmp_path):
    """A GPUTRACE_PLUGIN_CONFIG entry past 4095 bytes is said in one line, and the plug-in
    gets no configuration rather than one cut short (it got the first 4095 bytes,
    silently: here, a text its parser refused, and the plug-in was lost)."""
    d = plugin_dir(tmp_path, SIMACCEL)
    text = "kernels=1," + "x" * 5000
    r = run_host(tmp_path, d, config=f"simaccel:{text}")
    assert gputrace_lines(r.stderr) == [
        f"gputrace: GPUTRACE_PLUGIN_CONFIG: the entry for 'simaccel' is longer than 4095 "
        f'bytes ({len(text)}); the plug-in gets no configuration ("")']
    assert len(events(r.trace, ph="X", cat="kernel")) == 3  # its default, not kernels=1


def test_second_plugin_of_the_same_name_skipped(tmp_path):
    """Two copies of one plug-in (installed in two directories of the path, or
    twice in one) by one name: the first is loaded, the second skipped with one
    line naming both files. Both were loaded: each kernel twice on the same rows,
    both given the one configuration entry, without a word."""
    d = plugin_dir(tmp_path, SIMACCEL)
    d2 = tmp_path / "other"
    d2.mkdir()
    shutil.copy(SIMACCEL, d2 / "libsimaccel-copy.so")
    r = run_host(tmp_path, f"{d}:{d2}", "simaccel:kernels=3")
    assert gputrace_lines(r.stderr) == [
        f"gputrace: plug-in {d2}/libsimaccel-copy.so: a plug-in named 'simaccel' is loaded "
        f"already, from {d}/libsimaccel.so; skipped (a name is one plug-in's, its key in "
        "GPUTRACE_PLUGIN_CONFIG)"]
    t = r.trace
    assert len(events(t, ph="X", cat="kernel")) == 3
    assert len(events(t, ph="X", cat="gpu_memcpy")) == 3


def test_broken_next_to_good(tmp_path):
    """All broken kinds at once, next to the example: one line each, the
    example's trace as complete as alone, the program's output untouched."""
    d = broken_dir(tmp_path, list(BROKEN_LINES), with_good=True)
    r = run_host(tmp_path, d, env={"BROKEN_PLUGIN_LOG": str(tmp_path / "calls")})
    lines = plugin_lines(r.stderr)
    assert len(lines) == len(BROKEN_LINES), lines
    for name, pattern in BROKEN_LINES.items():
        assert len([l for l in lines if re.search("/" + pattern, l)]) == 1, (name, lines)
    t = r.trace
    assert len(events(t, ph="X", cat="kernel")) == 3
    assert len(events(t, ph="X", cat="gpu_memcpy")) == 3
    assert len(events(t, ph="C")) == 6
    assert len(events(t, ph="s", cat="ac2g")) == 6


def test_bad_path_entries(tmp_path):
    d = plugin_dir(tmp_path, SIMACCEL)
    missing = tmp_path / "missing"
    r = run_host(tmp_path, f"{missing}::{d}", "simaccel:kernels=1;nosuch:x")
    assert plugin_lines(r.stderr) == [
        f"gputrace: GPUTRACE_PLUGIN_PATH: cannot read directory {missing}: "
        "No such file or directory; no plug-ins from it",
        "gputrace: GPUTRACE_PLUGIN_CONFIG: no plug-in named 'nosuch' was loaded",
    ]
    assert len(events(r.trace, ph="X", cat="kernel")) == 1


def test_path_too_long_says_so(tmp_path):
    """A list of real folders past PATH_MAX is refused for its length, and the line says
    so: it used to say a colon-separated list of directories was expected, which it was."""
    d = plugin_dir(tmp_path, SIMACCEL)
    path = ":".join([str(d)] * (4096 // len(str(d)) + 1))
    assert len(path) > 4095
    r = run_host(tmp_path, path)
    assert gputrace_lines(r.stderr) == [
        f"gputrace: GPUTRACE_PLUGIN_PATH='{path[:200]}' is not valid: expected at most 4095 "
        f"characters (this one has {len(path)}); using the default"]
    assert not os.path.exists(r.trace_path)  # the default, no plug-ins: nothing recorded
    opt = subprocess.run([str(GPUTRACE), "run", "--plugin-path", path, "--", "true"],
                         env=gputrace_env(), capture_output=True, timeout=60)
    assert opt.returncode == 2
    assert opt.stderr.decode().splitlines()[0] == (
        f"gputrace: --plugin-path '{path}' is not valid: expected at most 4095 characters "
        f"(this one has {len(path)})")


def test_untraced_same_output(tmp_path):
    """What the plug-in tests compare against: the program alone."""
    r = run([HOST_APP, "20"], traced=False)
    assert (r.returncode, r.stdout) == (HOST_EXIT, HOST_STDOUT)


# ---- the header ----

HEADER_USE = r"""
#include <gputrace/gputrace_plugin.h>
static int q(struct gputrace_plugin_info *info)
{
	info->name = "t";
	info->kinds = GPUTRACE_KIND_KERNEL | GPUTRACE_KIND_COUNTER;
	return 0;
}
static int c(const struct gputrace_plugin_setup *setup, void **state)
{
	struct gputrace_event ev;
	struct gputrace_counter cs;
	struct gputrace_arg args[2];
	GPUTRACE_INIT(ev);
	GPUTRACE_INIT(cs);
	args[0] = gputrace_arg_u64("bytes", 1);
	args[1] = gputrace_arg_str("kind", "HtoD");
	ev.args = args;
	ev.nargs = 2;
	*state = 0;
	return setup->api->span(setup->builder, &ev) + setup->api->counter(setup->builder, &cs);
}
static const struct gputrace_plugin table = { GPUTRACE_PLUGIN_TABLE_HEAD, q, c, 0, 0, 0, 0 };
GPUTRACE_PLUGIN_EXPORT(table)
"""


@pytest.mark.parametrize("compiler,std,suffix", [
    ("cc", "c99", "c"), ("cc", "c11", "c"), ("c++", "c++98", "cc"), ("c++", "c++11", "cc"),
])
def test_header_compiles_clean(tmp_path, compiler, std, suffix):
    """The installed header alone, strict C99/C11 and C++, no warnings."""
    need(INCLUDE / "gputrace" / "gputrace_plugin.h")
    if not shutil.which(compiler):
        pytest.fail(f"{compiler} not installed")
    src = tmp_path / f"use.{suffix}"
    src.write_text(HEADER_USE)
    out = tmp_path / "use.so"
    subprocess.run([compiler, f"-std={std}", "-pedantic", "-Wall", "-Wextra", "-Werror",
                    "-fPIC", "-shared", "-fvisibility=hidden", f"-I{INCLUDE}", str(src),
                    "-o", str(out)], check=True, capture_output=True)
    syms = subprocess.run(["nm", "-D", "--defined-only", str(out)], capture_output=True,
                          text=True, check=True).stdout
    assert re.search(r" T gputrace_plugin_register$", syms, re.M)


def test_header_self_contained():
    """Only standard headers: vendors build against this one file."""
    text = (ROOT / "backends" / "plugins" / "gputrace_plugin.h").read_text()
    assert re.findall(r"#include\s*<([^>]+)>", text) == ["stddef.h", "stdint.h", "string.h"]
    assert '#include "' not in text
    assert (INCLUDE / "gputrace" / "gputrace_plugin.h").read_text() == text


# ---- the README's example ----

def readme_example():
    """The C code of the README's "Writing a plug-in" section."""
    for doc in (ROOT / "README.md",):
        if doc.exists():
            text = doc.read_text()
            m = re.search(r"^#+ Writing a plug-in\n(.*?)(?=^#{1,2} )", text + "\n# end\n",
                          re.M | re.S)
            if m:
                blocks = re.findall(r"```c\n(.*?)```", m.group(1), re.S)
                if blocks:
                    return doc, blocks[0]
    pytest.fail("no 'Writing a plug-in' section with a ```c block")


def build_plugin(tmp_path, name, code):
    """A plug-in's C source built as a user would (strict C99, the installed
    header only) into tmp_path/plugins/libNAME.so; returns that folder."""
    src = tmp_path / f"{name}.c"
    src.write_text(code)
    d = tmp_path / "plugins"
    d.mkdir()
    san = ["-fsanitize=address"] if SANITIZE == "address" else []
    subprocess.run(["cc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-fPIC",
                    "-shared", "-fvisibility=hidden", f"-I{INCLUDE}", *san, str(src), "-o",
                    str(d / f"lib{name}.so")], check=True, capture_output=True)
    return d


def test_readme_example_works(tmp_path):
    """The README's example compiles as documented and shows up in the trace."""
    doc, code = readme_example()
    d = build_plugin(tmp_path, "tinynpu", code)
    r = run_host(tmp_path, d, "tinynpu:kernels=2")
    assert plugin_lines(r.stderr) == []
    t = r.trace
    pid = device_pid(t, "TinyNPU 0")
    assert set(queue_tids(t, pid)) == {"queue 0"}
    kernels = events(t, ph="X", cat="kernel", pid=pid)
    launches = events(t, ph="X", name="tnpuLaunch")
    assert sorted(k["name"] for k in kernels) == ["tiny_matmul"] * 2
    assert len(launches) == 2
    assert len(events(t, ph="s", cat="ac2g")) == 2
    temps = events(t, ph="C", name="temperature")
    assert [c["args"] for c in temps] == [{"celsius": 40.0}, {"celsius": 41.5}]


# ---- limits ----

# 64 devices fill the process; "Extra A" and "Extra B" find no room. What
# each call returned goes to the file the config names.
PLUGIN_PAST_DEVICES = r"""
#include <errno.h>
#include <stdio.h>
#include <gputrace/gputrace_plugin.h>
static const struct gputrace_builder_api *api;
static gputrace_builder *b;
static int32_t dev0, q0, extra_a, extra_b, qa;
static char results[256];
static int q(struct gputrace_plugin_info *info)
{
	info->name = "full";
	info->kinds = GPUTRACE_KIND_KERNEL | GPUTRACE_KIND_COUNTER;
	return 0;
}
static int c(const struct gputrace_plugin_setup *setup, void **state)
{
	char name[16];
	int i;

	api = setup->api;
	b = setup->builder;
	snprintf(results, sizeof(results), "%s", setup->config);
	for (i = 0; i < 64; i++) {
		sprintf(name, "Dev%d", i);
		if (api->device(b, name) != i + 1)
			return -EIO;
	}
	dev0 = api->device(b, "Dev0");
	q0 = api->queue(b, dev0, "q", 0);
	extra_a = api->device(b, "Extra A");
	extra_b = api->device(b, "Extra B");
	qa = api->queue(b, extra_a, "qa", 0);
	*state = 0;
	return 0;
}
static int counter(int32_t row, double v)
{
	struct gputrace_counter cs;
	struct gputrace_arg a = gputrace_arg_f64("v", v);

	GPUTRACE_INIT(cs);
	cs.row = row;
	cs.name = "temp";
	cs.time_ns = api->now_ns();
	cs.values = &a;
	cs.nvalues = 1;
	return api->counter(b, &cs);
}
static int span(int32_t row, const char *name)
{
	struct gputrace_event ev;

	GPUTRACE_INIT(ev);
	ev.kind = GPUTRACE_KIND_KERNEL;
	ev.row = row;
	ev.name = name;
	ev.start_ns = api->now_ns();
	ev.end_ns = ev.start_ns + 10;
	return api->span(b, &ev);
}
static int f(void *state, int final)
{
	FILE *out;
	int s0, sa, c0, ca;

	(void)state;
	if (!final)
		return 0;
	s0 = span(q0, "on_dev0");
	sa = span(qa, "on_extra_a");
	c0 = counter(dev0, 1.0);
	ca = counter(extra_a, 2.0);
	out = fopen(results, "w");
	if (!out)
		return -EIO;
	fprintf(out, "%d %d %d %d %d %d %d %d\n", q0, extra_a, extra_b, qa, s0, sa, c0, ca);
	return fclose(out) ? -EIO : 0;
}
static const struct gputrace_plugin table = { GPUTRACE_PLUGIN_TABLE_HEAD, q, c, 0, 0, f, 0 };
GPUTRACE_PLUGIN_EXPORT(table)
"""


def test_devices_past_the_limit_refused(tmp_path):
    """A plug-in's 65th device gets -ENOSPC and one line naming the limit;
    nothing meant for it is filed on another row (a device row 0 once put
    its spans on "Dev0" and its counters on the host's row)."""
    need(INCLUDE / "gputrace" / "gputrace_plugin.h")
    d = build_plugin(tmp_path, "full", PLUGIN_PAST_DEVICES)
    results = tmp_path / "results"
    r = run_host(tmp_path, d, f"full:{results}")
    assert gputrace_lines(r.stderr) == [
        'gputrace: plug-in full: device "Extra A" refused (-ENOSPC): at most 64 devices '
        '(and 4096 rows) per process; said once']
    q0, extra_a, extra_b, qa, s0, sa, c0, ca = map(int, results.read_text().split())
    enospc, einval = -28, -22
    assert (q0, extra_a, extra_b, qa) == (65, enospc, enospc, einval)
    assert (s0, sa, c0, ca) == (0, einval, 0, einval)
    t = r.trace
    names = meta(t, "process_name")
    devices = sorted(n for n in names.values() if n.startswith(("Dev", "Extra")))
    assert devices == sorted(f"Dev{i}" for i in range(64))
    dev0 = device_pid(t, "Dev0")
    assert [(e["name"], e["pid"]) for e in events(t, ph="X")] == [("on_dev0", dev0)]
    assert [(e["pid"], e["args"]) for e in events(t, ph="C", name="temp")] == \
        [(dev0, {"v": 1.0})]


PLUGIN_64_DEVICES = r"""
#include <errno.h>
#include <stdio.h>
#include <gputrace/gputrace_plugin.h>
static int q(struct gputrace_plugin_info *info)
{
	info->name = "full";
	info->kinds = GPUTRACE_KIND_KERNEL;
	return 0;
}
static int c(const struct gputrace_plugin_setup *setup, void **state)
{
	char name[16];
	int i;

	for (i = 0; i < 64; i++) {
		sprintf(name, "Dev%d", i);
		if (setup->api->device(setup->builder, name) != i + 1)
			return -EIO;
	}
	*state = 0;
	return 0;
}
static const struct gputrace_plugin table = { GPUTRACE_PLUGIN_TABLE_HEAD, q, c, 0, 0, 0, 0 };
GPUTRACE_PLUGIN_EXPORT(table)
"""


@pytest.mark.parametrize("vendor", ["ze", "cuda", "cuda-events", "nvml"])
def test_gpu_past_the_limit_is_not_drawn_on_another_devices_row(tmp_path, vendor):
    """A plug-in takes the process's 64 device rows at start-up; the program's own GPU
    (Level Zero or CUDA) then has none. Its kernels, copies and syncs were drawn on the
    plug-in's "Dev0" row, as if that device ran them (NVML's telemetry of it: on the
    process's row); now one line says the GPU has no row, the host calls are traced, and
    no row holds work or readings of another device. CUDA work not drawn is counted
    lost (no_device_row), exactly what the same program draws without the plug-in;
    Level Zero's lists on such a device are not tracked, so its work is not counted."""
    need(INCLUDE / "gputrace" / "gputrace_plugin.h")
    cuda = BUILD / "test" / "cuda"
    if vendor == "ze":
        cmd, env, api = [APPS / "ze_pingpong", "5"], sim_env(), "ze_api"
        gpu = 'ze: device "GPU 0: gputrace simulated GPU"'
    elif vendor.startswith("cuda"):
        sim = BUILD / "cuda-sim"
        need(sim / "libcudart.so.13")
        cmd, env, api = [cuda / "sim_app"], {"LD_LIBRARY_PATH": str(sim)}, "cuda_runtime"
        gpu = 'cuda: device "GPU 0: gputrace simulated GPU"'
        if vendor == "cuda-events":  # timed by CUDA events, not CUPTI's records
            env["GPUTRACE_DISABLE_CUPTI"] = "1"
    else:  # the fake NVML's two GPUs, sampled by a program that never touches CUDA
        need(cuda / "nvml" / "libnvidia-ml.so.1")
        cmd, api = [cuda / "idle_app", "100"], "nvml"
        env = {"LD_LIBRARY_PATH": str(cuda / "nvml"), "GPUTRACE_TELEMETRY": "1",
               "GPUTRACE_TELEMETRY_HZ": "50"}
        gpu = 'NVML: device "GPU 0: Fake GPU A"'
    need(cmd[0])
    device_work = 0
    if vendor.startswith("cuda"):  # what it draws on its GPU's rows with room for them
        alone = run(cmd, env=env, trace=str(tmp_path / "alone.json"))
        device_work = len([e for e in events(alone.trace, ph="X") if e.get("cat") in (
            "kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "cuda_graph")])
        assert device_work >= 10
    env["GPUTRACE_PLUGIN_PATH"] = str(build_plugin(tmp_path, "full", PLUGIN_64_DEVICES))
    r = run(cmd, env=env, tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    assert gputrace_lines(r.stderr) == [
        f"gputrace: {gpu} has no row: at most 64 devices (and 4096 rows) per process, taken "
        "by other backends' and plug-ins' devices; its "
        f"{'telemetry' if vendor == 'nvml' else 'work'} is not drawn; said once"] + ([
        f"gputrace: {device_work} events lost (no_device_row {device_work}) in "
        f"{r.trace_path}"] if device_work else [])
    if vendor == "nvml":
        # no CUDA call, no telemetry: a process that recorded nothing writes no file
        assert not (tmp_path / "trace.json").exists()
        return
    t = r.trace
    names = meta(t, "process_name")
    assert sorted(n for n in names.values() if n.startswith("Dev")) == \
        sorted(f"Dev{i}" for i in range(64))
    assert not [n for n in names.values() if "GPU" in n], names
    assert len(events(t, ph="X", cat=api)) >= 10
    # the plug-in draws nothing: every event but the rows' names is the program's own
    program = {pid for (pid, _), n in names.items() if not n.startswith("Dev")}
    assert [e for e in t["traceEvents"] if e.get("ph") != "M" and e["pid"] not in program] \
        == []


def test_fifo_named_like_a_plugin_is_skipped(tmp_path):
    """A FIFO named *.so in a plug-in directory: opening it (ours, then dlopen's)
    waited for a writer, and the program hung before main without a word. Now
    one line, and the plug-in beside it loads."""
    d = plugin_dir(tmp_path, SIMACCEL)
    os.mkfifo(d / "a_fifo.so")
    need(HOST_APP)
    r = run([HOST_APP, "20"], env={"GPUTRACE_PLUGIN_PATH": str(d)}, tmp_path=tmp_path,
            timeout=30)
    assert r.returncode == HOST_EXIT, r.stderr
    assert r.stdout == HOST_STDOUT
    assert plugin_lines(r.stderr) == [
        f"gputrace: plug-in {d}/a_fifo.so: cannot load it: {d}/a_fifo.so: not a regular "
        "file (a FIFO, a device, a socket); skipped"]
    assert len(events(r.trace, ph="X", cat="kernel")) > 0


def test_second_config_entry_for_a_plugin_says_so(tmp_path):
    """A plug-in gets the text of its first GPUTRACE_PLUGIN_CONFIG entry: a second one
    for it was passed over without a word (kernels=3 asked for, 1 run)."""
    d = plugin_dir(tmp_path, SIMACCEL)
    r = run_host(tmp_path, d, "simaccel:kernels=1;simacce:x;simaccel:kernels=3")
    assert plugin_lines(r.stderr) == [
        "gputrace: GPUTRACE_PLUGIN_CONFIG: no plug-in named 'simacce' was loaded",
        "gputrace: GPUTRACE_PLUGIN_CONFIG: entry 'simaccel:kernels=3' is not used: the "
        "plug-in 'simaccel' gets its first entry's text only"]
    assert len(events(r.trace, ph="X", cat="kernel")) == 1


# One span at time 5 ns (refused, -ERANGE), named with an escape sequence, a
# newline and 60 two-byte characters.
PLUGIN_ODD_NAME = r"""
#include <errno.h>
#include <string.h>
#include <gputrace/gputrace_plugin.h>
static const struct gputrace_builder_api *api;
static gputrace_builder *b;
static int32_t queue;
static char name[256];
static int q(struct gputrace_plugin_info *info)
{
	info->name = "oddname";
	info->kinds = GPUTRACE_KIND_KERNEL;
	return 0;
}
static int c(const struct gputrace_plugin_setup *setup, void **state)
{
	int i;

	api = setup->api;
	b = setup->builder;
	queue = api->queue(b, api->device(b, "Odd 0"), "q", 0);
	strcpy(name, "\x1b[31mRED\x1b[0m\nfake: line");
	for (i = 0; i < 60; i++)
		strcat(name, "\xc3\xa9");
	*state = 0;
	return queue < 0 ? -EIO : 0;
}
static int f(void *state, int final)
{
	struct gputrace_event ev;

	(void)state;
	if (!final)
		return 0;
	GPUTRACE_INIT(ev);
	ev.kind = GPUTRACE_KIND_KERNEL;
	ev.row = queue;
	ev.name = name;
	/* 0: out of range on any machine (5 was a time of this clock on one booted under
	 * an hour ago: an hour before the run reaches back to its boot) */
	ev.start_ns = 0;
	ev.end_ns = 10;
	return api->span(b, &ev) == -ERANGE ? 0 : -EIO;
}
static const struct gputrace_plugin table = { GPUTRACE_PLUGIN_TABLE_HEAD, q, c, 0, 0, f, 0 };
GPUTRACE_PLUGIN_EXPORT(table)
"""


def test_refused_name_is_quoted_on_one_line(tmp_path):
    """The line for a refused event quoted its name as given: an escape sequence
    reached the terminal and a newline made it two lines ("fake: line ..." the
    second). Now control bytes read '?', and the name is cut past 128 bytes, at the
    end of a character."""
    need(INCLUDE / "gputrace" / "gputrace_plugin.h")
    d = build_plugin(tmp_path, "oddname", PLUGIN_ODD_NAME)
    r = run_host(tmp_path, d)
    err = r.stderr.decode()
    assert "\x1b" not in err
    name = ("\x1b[31mRED\x1b[0m\nfake: line" + "\u00e9" * 60).encode()
    shown = name[:128].decode(errors="ignore")  # whole characters only
    assert len(shown.encode()) == 127
    shown = "".join("?" if ord(ch) < 32 else ch for ch in shown) + "..."
    lines = [l for l in err.splitlines() if l.startswith("gputrace:") or "fake" in l]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f'gputrace: plug-in oddname: "{shown}" refused (-ERANGE): '
                               'its time 0 ns (to 10) is not CLOCK_MONOTONIC_RAW'), lines


# ---- correlation ids ----

# Launches and kernels of four ids: 5 and 2^48 - 1 are kept apart; 2^48 + 5
# (5 cut to 48 bits) and 7 << 56 | 5 are refused. What each call returned goes
# to the file the config names.
PLUGIN_BIG_IDS = r"""
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <gputrace/gputrace_plugin.h>
static const struct gputrace_builder_api *api;
static gputrace_builder *b;
static int32_t queue;
static int main_tid;
static char results[256];
static int q(struct gputrace_plugin_info *info)
{
	info->name = "bigids";
	info->kinds = GPUTRACE_KIND_RUNTIME | GPUTRACE_KIND_KERNEL;
	return 0;
}
static int c(const struct gputrace_plugin_setup *setup, void **state)
{
	api = setup->api;
	b = setup->builder;
	snprintf(results, sizeof(results), "%s", setup->config);
	main_tid = (int)getpid();
	queue = api->queue(b, api->device(b, "Big 0"), "q", 0);
	*state = 0;
	return queue < 0 ? -EIO : 0;
}
static int f(void *state, int final)
{
	static const uint64_t ids[4] = { 5, ((uint64_t)1 << 48) - 1, ((uint64_t)1 << 48) + 5,
					 (uint64_t)7 << 56 | 5 };
	static const char *launch[4] = { "launch0", "launch1", "launch2", "launch3" };
	static const char *kernel[4] = { "kern0", "kern1", "kern2", "kern3" };
	uint64_t now = api->now_ns();
	FILE *out;
	int i;

	(void)state;
	if (!final)
		return 0;
	out = fopen(results, "w");
	if (!out)
		return -EIO;
	for (i = 0; i < 4; i++) {
		struct gputrace_event ev;

		GPUTRACE_INIT(ev);
		ev.kind = GPUTRACE_KIND_RUNTIME;
		ev.row = GPUTRACE_ROW_HOST;
		ev.tid = main_tid;
		ev.name = launch[i];
		ev.start_ns = now - 100000 + (uint64_t)i * 20000;
		ev.end_ns = ev.start_ns + 1000;
		ev.correlation = ids[i];
		fprintf(out, "%d ", api->span(b, &ev));
		ev.kind = GPUTRACE_KIND_KERNEL;
		ev.row = queue;
		ev.tid = 0;
		ev.name = kernel[i];
		ev.start_ns += 5000;
		ev.end_ns = ev.start_ns + 1000;
		fprintf(out, "%d ", api->span(b, &ev));
	}
	return fclose(out) ? -EIO : 0;
}
static const struct gputrace_plugin table = { GPUTRACE_PLUGIN_TABLE_HEAD, q, c, 0, 0, f, 0 };
GPUTRACE_PLUGIN_EXPORT(table)
"""


def test_correlation_ids_past_48_bits_refused(tmp_path):
    """Ids 5 and 2^48 + 5 were one id (cut to 48 bits): both kernels drew their
    arrows from the later launch, one arrow going back in time. An id past
    GPUTRACE_CORRELATION_MAX is refused (-ERANGE) with one line; those up to it
    keep their own arrows."""
    need(INCLUDE / "gputrace" / "gputrace_plugin.h")
    d = build_plugin(tmp_path, "bigids", PLUGIN_BIG_IDS)
    results = tmp_path / "results"
    r = run_host(tmp_path, d, f"bigids:{results}")
    assert gputrace_lines(r.stderr) == [
        'gputrace: plug-in bigids: "launch2" refused (-ERANGE): its correlation id '
        '281474976710661 (0x1000000000005) is past GPUTRACE_CORRELATION_MAX (2^48 - 1); '
        'said once']
    erange = -34
    assert list(map(int, results.read_text().split())) == [0, 0, 0, 0] + [erange] * 4
    t = r.trace
    spans = {e["name"]: e for e in events(t, ph="X")}
    assert sorted(spans) == ["kern0", "kern1", "launch0", "launch1"]
    for i, corr in enumerate([5, (1 << 48) - 1]):
        assert spans[f"launch{i}"]["args"]["correlation"] == CORR_BASE + corr
        assert spans[f"kern{i}"]["args"]["correlation"] == CORR_BASE + corr
    starts = {e["id"]: e for e in events(t, ph="s", cat="ac2g")}
    ends = {e["id"]: e for e in events(t, ph="f", cat="ac2g")}
    assert sorted(starts) == sorted(ends) and len(starts) == 2
    arrows = sorted((starts[i]["ts"], ends[i]["ts"]) for i in starts)
    for i, (s, f) in enumerate(arrows):
        assert abs(s - spans[f"launch{i}"]["ts"]) < 0.01, (arrows, spans)
        assert abs(f - spans[f"kern{i}"]["ts"]) < 0.01, (arrows, spans)
