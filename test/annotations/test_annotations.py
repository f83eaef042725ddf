"""User ranges end to end: ITT collected without relinking (the project's
static ITT part speaking protocol 2 and 1, and oneDNN's own Intel-built
part), and NVTX and ITT ranges carried onto the simulated Level Zero
device's work: args.range/ranges on every device span, gpu_user_annotation
spans around the work of each thread range, the summary's ranges table."""
import collections
import json
from html.parser import HTMLParser
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import BUILD, PRELOAD, clean_env, events, need, run, scan_trace, sim_env

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "viewers"))
import viewer_rules  # noqa: E402

OUT = BUILD / "test" / "annotations"
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def device_spans(trace):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS]


def annotations(trace):
    return [e for e in trace["traceEvents"] if e.get("cat") == "gpu_user_annotation"]


def ns(us):
    return round(float(us) * 1000)


def span_ns(e):
    return ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])


def lanes(trace, pid):
    """The process's lane rows (ranges that need not nest with their thread's):
    tid -> (name, sort index)."""
    meta = {}
    for e in events(trace, ph="M", pid=pid):
        meta.setdefault(e["tid"], {})[e["name"]] = e["args"].get("name",
                                                                 e["args"].get("sort_index"))
    return {tid: (m["thread_name"], m["thread_sort_index"]) for tid, m in meta.items()
            if str(m.get("thread_name", "")).startswith("ranges")}


def by_lane(trace, pid):
    """Lane name -> the names of the user ranges drawn on it, in time order."""
    names = lanes(trace, pid)
    out = collections.defaultdict(list)
    for e in sorted(events(trace, ph="X", cat="user_annotation", pid=pid),
                    key=lambda e: ns(e["ts"])):
        if e["tid"] in names:
            out[names[e["tid"]][0]].append(e["name"])
    return dict(out)


# ---- ITT on the host ----

@pytest.mark.sanitize
@pytest.mark.parametrize("protocol", ["2", "1"])
def test_itt_host_every_call(tmp_path, protocol):
    app = OUT / "itt_host"
    need(app)
    r = run([app], tmp_path=tmp_path, env={"ITT_TEST_PROTOCOL": protocol})
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().strip() == f"itt protocol: {protocol}"
    t = r.trace
    spans = collections.Counter(e["name"] for e in events(t, ph="X", cat="user_annotation"))
    assert spans == {"outer": 1, "inner": 1, "overlap a": 1, "overlap b": 1, "overlap c": 1,
                     "around": 1, "frames": 2, "second thread": 1}
    by = {e["name"]: e for e in events(t, ph="X", cat="user_annotation")}
    assert all(e["args"]["domain"] == ("frames" if e["name"] == "frames" else "host")
               for e in events(t, ph="X", cat="user_annotation"))
    # nested tasks nest; overlapped ones overlap, ended out of order, or cross a task
    o, i = span_ns(by["outer"]), span_ns(by["inner"])
    assert o[0] < i[0] and i[1] < o[1]
    a, b = span_ns(by["overlap a"]), span_ns(by["overlap b"])
    assert a[0] < b[0] < a[1] < b[1]
    c, around = span_ns(by["overlap c"]), span_ns(by["around"])
    assert around[0] < c[0] < around[1] < c[1]
    assert by["second thread"]["tid"] != by["outer"]["tid"]
    # tasks on their thread's row; overlapped tasks and frames, which need not nest
    # with it, on the process's lanes: each on the first where it nests, with the
    # thread that began it
    pid = by["outer"]["pid"]
    assert all(by[n]["tid"] == pid for n in ("outer", "inner", "around"))
    assert sorted(lanes(t, pid).values()) == [("ranges", 1), ("ranges 2", 2)]
    assert by_lane(t, pid) == {"ranges": ["overlap a", "overlap c", "frames", "frames"],
                               "ranges 2": ["overlap b"]}
    assert all(e["args"]["tid"] == pid for e in events(t, ph="X", cat="user_annotation")
               if e["tid"] in lanes(t, pid))
    assert viewer_rules.check_nesting(viewer_rules.load_exact(r.trace_path)) >= 4
    marks = events(t, ph="i", cat="user_annotation")
    assert [(m["name"], m["args"]) for m in marks] == [
        ("checkpoint", {"domain": "host", "scope": "global"})]
    assert o[0] < ns(marks[0]["ts"]) < o[1]
    counters = [(e["name"], e["args"]["value"], e["pid"]) for e in events(t, ph="C")]
    # a NaN and an infinity set between them are no samples (they were JSON nulls)
    assert counters == [("items", 5, pid), ("items", 7, pid), ("load", 0.75, pid),
                        ("load", 1.25, pid)]



def itt_hammer(tmp_path, n=100000):
    """itt_host hammer: n "outer" tasks, each around an "inner" one, flat out into
    a 4 KiB ring with no overflow: most of them lost. Returns the tasks made, the
    trace's "gputrace" object and the user ranges drawn, ended and not. The trace
    is streamed (it can pass 16 MiB, as many tasks as the drain keeps up with)."""
    app = OUT / "itt_host"
    need(app)
    r = run([app, "hammer", str(n)], tmp_path=tmp_path,
            env={"GPUTRACE_BUFFER_KB": "4", "GPUTRACE_OVERFLOW_MB": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == f"tasks {2 * n}\n"
    drawn = collections.Counter()

    def count(ev):
        if ev.get("ph") == "X" and ev.get("cat") == "user_annotation":
            drawn["unended" if ev.get("args", {}).get("unended") else "ended"] += 1

    t = scan_trace(r.trace_path, each=count)
    g = t["gputrace"]
    assert g["events_lost"] > 0 and g["lost_by_reason"] == {"ring_full": g["events_lost"]}
    return 2 * n, g, drawn


def test_itt_tasks_lost_to_a_full_ring_count_once_each(tmp_path):
    """A task is one event of the trace (its end record draws it), lost or
    recorded: its begin record, dropped by a full ring, is no event lost.
    Counted, a task lost whole counted twice and one drawn from its end alone
    once (200000 tasks: 386312 recorded or lost)."""
    made, g, drawn = itt_hammer(tmp_path)
    assert g["events_recorded"] == drawn["ended"]
    assert g["events_recorded"] + g["events_lost"] == made


def test_an_itt_task_whose_end_is_lost_is_not_drawn_never_ended(tmp_path):
    """A task whose begin record was written and whose end a full ring dropped
    ended all the same: counted lost, not drawn. It was drawn never ended,
    from its begin to the trace's end (a few in each run)."""
    made, g, drawn = itt_hammer(tmp_path)
    assert drawn["unended"] == 0 and drawn["ended"] > 0


def test_itt_lanes_sorted_above_small_tids(tmp_path):
    """In a PID namespace (a container) the program is pid 1 and its threads
    have small tids (3, 4, ...): the process's lanes still sort right below
    the main thread and above every other thread (lane k's sort index k was
    a thread's with tid k: "ranges 3" sat with, and below, thread 3)."""
    app = OUT / "itt_host"
    need(app)
    if subprocess.run(["unshare", "-Urpf", "true"], capture_output=True).returncode:
        pytest.skip("no unprivileged PID namespace (unshare -Urpf)")
    r = run(["unshare", "-Urpf", "--mount-proc", app, "crossed"], tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    t = r.trace
    [pid] = {e["pid"] for e in events(t, ph="X", cat="user_annotation")}
    assert pid == 1
    lane = lanes(t, pid)
    assert sorted(lane.values()) == [("ranges", 1), ("ranges 2", 2), ("ranges 3", 3),
                                     ("ranges 4", 4)]
    sort = {e["tid"]: e["args"]["sort_index"]
            for e in events(t, ph="M", name="thread_sort_index", pid=pid)}
    [second] = {e["tid"] for e in events(t, ph="X", name="second thread")}
    assert second not in lane and second <= 4  # a tid among the lanes' sort indexes
    assert sort[second] > max(s for _, s in lane.values())
    assert len(set(sort.values())) == len(sort)  # no two rows tie

def unended_checks(t, pid, unended, on_lanes=()):
    """The ranges still open when main returned, on the main thread's row
    (those that need not nest with it on the process's first lane): each
    from its call to where the process began to end, no sooner than the
    row's last call, around every call made inside it, args.unended."""
    row = [e for e in events(t, pid=pid) if e["tid"] == pid and e["ph"] in ("X", "i")]
    lane = [e for e in events(t, pid=pid) if e["tid"] in lanes(t, pid) and e["ph"] == "X"]
    assert sorted(e["name"] for e in lane) == sorted(on_lanes)
    assert {lanes(t, pid)[e["tid"]][0] for e in lane} <= {"ranges"}
    drawn = {e["name"]: e for e in row + lane if e["cat"] == "user_annotation" and
             e["args"].get("unended")}
    assert sorted(drawn) == sorted(unended)
    assert all(e["args"] == {"unended": True} for e in drawn.values())
    ends = {span_ns(e)[1] for e in drawn.values()}
    assert len(ends) == 1  # the trace's end, for all of them
    [end] = ends
    others = [e for e in row if e["name"] not in drawn]
    assert others and all(span_ns(e)[1] <= end if e["ph"] == "X" else ns(e["ts"]) <= end
                          for e in others)
    for e in drawn.values():
        start = span_ns(e)[0]
        # nothing on the row straddles its start: calls before it ended
        # before, calls after it are inside it
        assert all(span_ns(o)[1] <= start or span_ns(o)[0] >= start
                   for o in others if o["ph"] == "X" and o["cat"] != "user_annotation")
    assert viewer_rules.check_nesting(t)
    return {n: span_ns(e) for n, e in drawn.items()}


@pytest.mark.sanitize
@pytest.mark.parametrize("protocol", ["2", "1"])
def test_itt_tasks_never_ended(tmp_path, protocol):
    """A task, an overlapped task and a frame begun and never ended (the
    program returns from main): each is drawn up to the trace's end, the
    task on the thread that began it, the others on the process's lane,
    around the task that did end, marked unended,
    and counted in the summary's ranges with the time drawn."""
    app = OUT / "itt_host"
    need(app)
    r = run([app, "unended"], tmp_path=tmp_path,
            env={"ITT_TEST_PROTOCOL": protocol, "GPUTRACE_SUMMARY": "1",
                 "GPUTRACE_SUMMARY_JSON": str(tmp_path / "summary.json")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().strip() == f"itt protocol: {protocol}"
    t = viewer_rules.load_exact(r.trace_path)
    pid = t["gputrace"]["pid"]
    spans = events(t, ph="X", cat="user_annotation")
    assert sorted(e["name"] for e in spans) == ["frames", "pending", "step", "whole_program"]
    drawn = unended_checks(t, pid, ["whole_program", "pending", "frames"],
                           on_lanes=["pending", "frames"])
    [step] = [e for e in spans if e["name"] == "step"]
    assert step["args"] == {"domain": "host"} and step["tid"] == pid
    st = span_ns(step)
    assert drawn["whole_program"][0] <= drawn["pending"][0] <= drawn["frames"][0] <= st[0]
    assert st[1] + 100000 <= drawn["whole_program"][1]  # the program worked on 100 us
    viewer_rules.check_rounding(t)
    s = json.loads((tmp_path / "summary.json").read_text())
    rows = {x["name"]: (x["count"], x["host_ns"]) for x in s["ranges"]}
    assert rows == {n: (1, ns(e["dur"])) for n, e in ((e["name"], e) for e in spans)}
    assert s["totals"]["ranges"] == {"distinct": 4, "count": 4,
                                     "host_ns": sum(ns(e["dur"]) for e in spans)}
    assert "  ranges: 4 distinct, 4 ranges, " in r.stderr.decode()


def itt_host_mode(tmp_path, mode, protocol):
    app = OUT / "itt_host"
    need(app)
    r = run([app, mode], tmp_path=tmp_path,
            env={"ITT_TEST_PROTOCOL": protocol, "GPUTRACE_SUMMARY": "1",
                 "GPUTRACE_SUMMARY_JSON": str(tmp_path / "summary.json")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().strip() == f"itt protocol: {protocol}"
    return r, json.loads((tmp_path / "summary.json").read_text())


@pytest.mark.parametrize("protocol", ["2", "1"])
def test_itt_frames_and_regions_begun_again_are_one(tmp_path, protocol):
    """A frame or region begun again (same domain and id) while open is one
    frame: the later begins are ignored until its end, as ittnotify.h says
    (they were drawn as more frames, overlapping, the last never ended)."""
    r, s = itt_host_mode(tmp_path, "frames", protocol)
    t = viewer_rules.load_exact(r.trace_path)
    spans = sorted(events(t, ph="X", cat="user_annotation"), key=lambda e: ns(e["ts"]))
    # 3000 frames open at once, each begun twice, ended once: 3000, all ended
    many = [e for e in spans if e["name"] == "many"]
    assert len(many) == 3000 and not [e for e in many if "unended" in e["args"]]
    spans = [e for e in spans if e["name"] != "many"]
    assert [(e["name"], e["args"]) for e in spans] == [
        ("loop", {"domain": "loop", "tid": t["gputrace"]["pid"]}),
        ("loop", {"domain": "loop", "tid": t["gputrace"]["pid"]}),
        ("region", {"domain": "host", "tid": t["gputrace"]["pid"]})]
    first, by_id, region = map(span_ns, spans)
    assert first[1] - first[0] >= 300000  # three iterations of 100 us
    assert by_id[1] - by_id[0] >= 200000 and region[1] - region[0] >= 200000
    rows = {x["name"]: (x["count"], x["host_ns"]) for x in s["ranges"]}
    assert rows == {"loop": (2, first[1] - first[0] + by_id[1] - by_id[0]),
                    "region": (1, region[1] - region[0]),
                    "many": (3000, sum(ns(e["dur"]) for e in many))}
    assert t["gputrace"]["events_lost"] == 0


@pytest.mark.parametrize("protocol", ["2", "1"])
def test_itt_frame_submitted_to_now(tmp_path, protocol):
    """A frame submitted with the end __itt_timestamp_none ends at the call,
    as ittnotify.h says (it was drawn 584 years long, and the summary's
    ranges with it)."""
    r, s = itt_host_mode(tmp_path, "submit", protocol)
    t = viewer_rules.load_exact(r.trace_path)
    [frame] = events(t, ph="X", cat="user_annotation")
    assert frame["name"] == "loop" and frame["args"]["domain"] == "loop"
    # the program worked 200 us inside it, and ran for well under 10 s
    assert 200000 <= ns(frame["dur"]) < 10 * 10 ** 9
    assert [(x["name"], x["count"], x["host_ns"]) for x in s["ranges"]] == [
        ("loop", 1, ns(frame["dur"]))]


@pytest.mark.parametrize("protocol", ["2", "1"])
def test_itt_string_handle_of_a_name_past_16384_is_one(tmp_path, protocol):
    """A string handle made again for a name first seen after 16384 others is
    the same handle, as for every name (PyTorch makes one at every range: each
    was a new one, 40 bytes and a scan of 16384 under a lock a range)."""
    app = OUT / "itt_host"
    need(app)
    r = run([app, "handles"], tmp_path=tmp_path, env={"ITT_TEST_PROTOCOL": protocol})
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().split("\n")[:2] == ["same handle: 1", f"itt protocol: {protocol}"]
    spans = events(r.trace, ph="X", cat="user_annotation")
    assert len(spans) == 1000 and {e["name"] for e in spans} == {"late"}


@pytest.mark.parametrize("protocol", ["2", "1"])
def test_itt_counters_of_one_name_in_two_domains(tmp_path, protocol):
    """ITT's counters are a name and a domain: "mem" of oneDNN and "mem" of
    oneCCL are two counters, so two tracks (the later one named with its
    domain), not one series zigzagging between their values, in the trace
    and in the summary."""
    r, s = itt_host_mode(tmp_path, "counters", protocol)
    t = r.trace
    pid = t["gputrace"]["pid"]
    counters = [(e["name"], e["args"], e["pid"]) for e in events(t, ph="C")]
    assert counters == [("mem", {"value": 100}, pid), ("mem (ccl)", {"value": 5}, pid),
                        ("mem", {"value": 200}, pid), ("mem (ccl)", {"value": 6}, pid),
                        ("mem (no domain)", {"value": 7}, pid)]
    rows = {c["counter"]: (c["samples"], c["mean"], c["min"], c["max"])
            for c in s["metrics"]["counters"]}
    assert rows == {"mem": (2, 150, 100, 200), "mem (ccl)": (2, 5.5, 5, 6),
                    "mem (no domain)": (1, 7, 7, 7)}


@pytest.mark.parametrize("n", [4096, 4100])
def test_itt_overlapped_tasks_4096_open_at_once(tmp_path, n):
    """4096 overlapped tasks open at once, with ids scattered as addresses
    are, are all drawn; each past them is counted as itt_open_ranges. Once a
    task was refused where the 16 slots from its id's home were taken: 349 of
    4096, and some at 3000 open."""
    app = OUT / "itt_host"
    need(app)
    r = run([app, "overlapped", str(n)], tmp_path=tmp_path,
            env={"GPUTRACE_SUMMARY_JSON": str(tmp_path / "summary.json")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().strip() == "itt protocol: 2"
    t = json.loads(open(r.trace_path).read())
    spans = events(t, ph="X", cat="user_annotation")
    assert len(spans) == 4096 and {e["name"] for e in spans} == {"ov"}
    assert not [e for e in spans if "unended" in e["args"]]
    lost = json.loads((tmp_path / "summary.json").read_text())["lost"]
    assert lost == ({"total": 0, "by_reason": {}} if n == 4096 else
                    {"total": n - 4096, "by_reason": {"itt_open_ranges": n - 4096}})


def test_itt_annotations_off_fills_nothing(tmp_path):
    """With annotations off the collector leaves the program's pointers
    null: no span, and the program runs as untraced."""
    app = OUT / "itt_host"
    need(app)
    r = run([app], tmp_path=tmp_path, env={"GPUTRACE_ACTIVITIES": "runtime,kernel"})
    assert r.returncode == 0, r.stderr
    # nothing recorded: a process that records nothing leaves no trace file
    assert not os.path.exists(r.trace_path)


def test_itt_keeps_another_collector(tmp_path):
    """A collector the user named stays: one line says so; the program runs
    with it (here: none that loads), and the trace has no ITT."""
    app = OUT / "itt_host"
    need(app)
    other = tmp_path / "libother_collector.so"
    r = run([app], tmp_path=tmp_path, env={"INTEL_LIBITTNOTIFY64": str(other)})
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.decode().splitlines() if "INTEL_LIBITTNOTIFY64" in l]
    assert len(lines) == 1 and str(other) in lines[0], r.stderr
    assert r.stdout.decode().strip() == "itt protocol: 0"
    assert not os.path.exists(r.trace_path)  # nothing recorded, no trace file


def test_nvtx_keeps_another_tool(tmp_path):
    """An NVTX tool the user named stays, as an ITT collector does: one line
    says so (once there was none: the ranges went missing without a word);
    the program runs with it (here: none that loads), and the trace has no
    NVTX."""
    app = BUILD / "test" / "cuda" / "nvtx_app"
    need(app)
    other = tmp_path / "libother_nvtx_tool.so"
    r = run([app], tmp_path=tmp_path, env={"NVTX_INJECTION64_PATH": str(other)})
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.decode().splitlines() if "NVTX_INJECTION64_PATH" in l]
    assert lines == [f"gputrace: NVTX_INJECTION64_PATH names another NVTX tool ({other}): "
                     "NVTX ranges go to it, not to this trace"], r.stderr
    assert not os.path.exists(r.trace_path)  # nothing recorded, no trace file


@pytest.mark.parametrize("var", ["INTEL_LIBITTNOTIFY64", "NVTX_INJECTION64_PATH"])
@pytest.mark.parametrize("how", ["symlink", "dotdot"])
def test_variable_naming_this_library_by_another_path_is_ours(tmp_path, var, how):
    """INTEL_LIBITTNOTIFY64 (or NVTX_INJECTION64_PATH) set by the user to this
    library by another path (a symlink, a path through ".."), as VTune's and
    unitrace's users set it: the runtime's dlopen finds the library already
    loaded, and the ranges are in the trace. No line says they go to another
    tool (one did, over a trace that had them all)."""
    itt = var == "INTEL_LIBITTNOTIFY64"
    app = OUT / "itt_host" if itt else BUILD / "test" / "cuda" / "nvtx_app"
    need(app)
    lib = pathlib.Path(PRELOAD.split()[-1]).resolve()
    if how == "symlink":
        other = tmp_path / "libgputrace-link.so"
        other.symlink_to(lib)
    else:
        other = lib.parent / ".." / lib.parent.name / lib.name
    r = run([app], tmp_path=tmp_path, env={var: str(other)})
    assert r.returncode == 0, r.stderr
    assert var not in r.stderr.decode(), r.stderr
    assert r.stdout.decode().strip() == ("itt protocol: 2" if itt else "nvtx_app: done")
    assert events(r.trace, ph="X", cat="user_annotation")


def test_child_without_preload_not_collected(tmp_path):
    """A child whose environment drops LD_PRELOAD does not get our
    injection variables: its ITT part finds no collector and it writes no
    trace; a child that keeps the preload is traced."""
    app = OUT / "itt_host"
    need(app)
    script = ("env -u LD_PRELOAD \"$APP\" > \"$OUT/dropped.txt\"; "
              "env | grep -c '^INTEL_LIBITTNOTIFY64=' > \"$OUT/parent_has.txt\"; "
              "env -u LD_PRELOAD sh -c 'env | grep -c ^INTEL_LIBITTNOTIFY64= || true' "
              "> \"$OUT/child_has.txt\"; \"$APP\" > \"$OUT/kept.txt\"")
    r = run(["/bin/sh", "-c", script], tmp_path=tmp_path,
            env={"APP": str(app), "OUT": str(tmp_path),
                 "GPUTRACE_OUTPUT": str(tmp_path / "trace-%p.json")})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "dropped.txt").read_text().strip() == "itt protocol: 0"
    assert (tmp_path / "kept.txt").read_text().strip() == "itt protocol: 2"
    assert (tmp_path / "parent_has.txt").read_text().strip() == "1"
    assert (tmp_path / "child_has.txt").read_text().strip() == "0"


def test_onednn_intel_static_part(tmp_path):
    """oneDNN (Debian's libdnnl) links Intel's own ittnotify static part and
    marks each primitive it runs with an ITT task: collected as it is."""
    app = OUT / "dnnl_app"
    need(app)
    r = run([app, "3"], tmp_path=tmp_path, env={"OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr
    tasks = events(r.trace, ph="X", cat="user_annotation")
    main = [e for e in tasks if e["tid"] == e["pid"]]
    assert [e["name"] for e in main] == ["eltwise"] * 3, tasks
    assert {e["args"]["domain"] for e in tasks} == {"dnnl::primitive::execute"}


# ---- ranges on the device ----

KERNEL_RANGES = {
    "k_recorded": ("record", ["record"]),
    "k_fwd1": ("forward", ["epoch", "train", "forward"]),
    "k_fwd2": ("forward", ["epoch", "train", "forward"]),
    "k_bwd": ("backward", ["epoch", "train", "backward"]),
    "k_after": ("epoch", ["epoch"]),
    "k_peer": ("epoch", ["epoch"]),
    "k_worker": ("worker", ["worker"]),
}


def ranged_run(tmp_path, api, extra=None):
    app = OUT / f"ze_ranges_{api}"
    need(app)
    env = sim_env({"GPUTRACE_SUMMARY": "1",
                   "GPUTRACE_SUMMARY_JSON": str(tmp_path / "summary.json")})
    env.update(extra or {})
    r = run([app], tmp_path=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    return r


def check_device_ranges(trace):
    spans = device_spans(trace)
    kernels = collections.Counter(e["name"] for e in spans if e["cat"] == "kernel")
    assert kernels == {"k_recorded": 2, "k_fwd1": 1, "k_fwd2": 1, "k_bwd": 1, "k_after": 1,
                       "k_peer": 1, "k_worker": 1}
    for e in spans:
        a = e["args"]
        name = e["name"] if e["cat"] == "kernel" else "k_recorded"  # the list's copy
        assert (a["range"], a["ranges"]) == KERNEL_RANGES[name], e
    # a regular list: the range of its append, the execution's beside it
    runs = sorted((e for e in spans if e["args"]["range"] == "record"), key=lambda e: e["ts"])
    assert [(e["cat"], e["args"]["exec_range"], e["args"]["exec_ranges"]) for e in runs] == [
        ("kernel", "step 1", ["step 1"]), ("gpu_memcpy", "step 1", ["step 1"]),
        ("kernel", "step 2", ["step 2"]), ("gpu_memcpy", "step 2", ["step 2"])]


ZE_ANNOTATIONS = {("record", 4): 1, ("train", 3): 1, ("forward", 2): 1, ("backward", 1): 1,
                  ("worker", 1): 1}


def check_annotations(trace, expected=ZE_ANNOTATIONS):
    """Per row, each annotation covers exactly the work of its range there:
    from its first span (1 ns before it per annotation opening there, so
    the kernel is innermost) to its last span's end."""
    spans = device_spans(trace)
    anns = annotations(trace)
    rows = collections.defaultdict(list)
    for e in spans:
        rows[(e["pid"], e["tid"])].append(e)
    got = collections.Counter((a["name"], a["args"]["spans"]) for a in anns)
    assert got == expected, anns
    for a in anns:
        row = sorted(rows[(a["pid"], a["tid"])], key=lambda e: ns(e["ts"]))
        # the work of this thread range on this row
        mine = [e for e in row if a["name"] in e["args"].get("ranges", [])]
        assert len(mine) == a["args"]["spans"]
        start, end = span_ns(a)
        first, last = span_ns(mine[0]), span_ns(mine[-1])
        assert start < first[0] <= start + 2, (a, mine[0])
        # a zero-length span's arrow end is its end: the annotation goes 1 ns on
        assert end == (last[1] if last[1] > last[0] else last[0] + 1), (a, mine[-1])
        # nothing else on the row inside it
        inside = [e for e in row if start <= ns(e["ts"]) < end]
        assert inside == mine
        assert "stream" not in a["args"]  # not GPU work for HTA
    # annotations nest as their ranges do
    by = {a["name"]: span_ns(a) for a in anns}
    for inner in ("forward", "backward"):
        assert by["train"][0] < by[inner][0] and by[inner][1] <= by["train"][1]


@pytest.mark.sanitize
@pytest.mark.parametrize("api", ["nvtx", "itt"])
def test_ranges_on_device(tmp_path, api):
    r = ranged_run(tmp_path, api)
    t = viewer_rules.load_exact(r.trace_path)
    check_device_ranges(t)
    check_annotations(t)
    # arrows still bind to the kernels, for every viewer's rule
    assert viewer_rules.check_flows(t) == 14
    viewer_rules.check_rounding(t)


@pytest.mark.parametrize("api", ["nvtx", "itt"])
def test_ranges_summary(tmp_path, api):
    r = ranged_run(tmp_path, api)
    s = json.loads((tmp_path / "summary.json").read_text())
    rows = {x["name"]: x for x in s["ranges"]}
    assert set(rows) == {"record", "step 1", "step 2", "epoch", "train", "forward", "backward",
                         "worker"}
    t = r.trace
    spans = device_spans(t)
    for name, row in rows.items():
        host = [e for e in events(t, ph="X", cat="user_annotation") if e["name"] == name]
        work = [e for e in spans if name in e["args"].get("ranges", [])]
        assert row["count"] == len(host) == 1
        assert row["host_ns"] == sum(ns(e["dur"]) for e in host)
        assert row["device_ns"] == sum(ns(e["dur"]) for e in work)
        assert row["device_spans"] == len(work)
        assert row["kernels"] == sum(e["cat"] == "kernel" for e in work)
    assert rows["train"]["kernels"] == 3 and rows["epoch"]["kernels"] == 5
    assert rows["step 1"]["kernels"] == 0  # its work was recorded under "record"
    assert s["totals"]["ranges"]["distinct"] == 8
    # on stderr too, and `gputrace summary FILE` gives the same table
    err = r.stderr.decode()
    assert "  ranges: 8 distinct" in err
    tool = BUILD / "gputrace-tool"
    out = subprocess.run([tool, "summary", "--json", "-", r.trace_path], capture_output=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ranges"] == s["ranges"]
    # CI gates name a range
    # (the simulated timer ticks every 52 ns, as long as these kernels run: a
    # kernel may last 0 ticks; the list's copies last 1 us)
    checks = ['range["forward"].kernels == 2', 'range["record"].device > 0',
              'range["*"].count == 8', 'ranges.distinct == 8', 'range["step 1"].kernels == 0']
    out = subprocess.run([tool, "check", tmp_path / "summary.json"] + checks,
                         capture_output=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.decode().count("PASS ") == len(checks)
    out = subprocess.run([tool, "check", r.trace_path, 'range["forward"].kernels == 3'],
                         capture_output=True)
    assert out.returncode == 1 and b"FAIL" in out.stdout, out.stdout + out.stderr


# ze_cross: the ranges each kernel carries, outermost first (NVTX's start/end
# ranges are the process's, before its push/pop ones; ITT's overlapped tasks
# are the thread's, by start)
CROSS_RANGES = {
    "nvtx": {"k1": ["a"], "k2": ["a", "b"], "k3": ["b"], "k4": ["s", "p"], "k5": ["s"]},
    "itt": {"k1": ["a"], "k2": ["a", "b"], "k3": ["b"], "k4": ["p", "s"], "k5": ["s"]},
}
# gpu_user_annotation (name, spans): thread ranges only, split where they cross
CROSS_ANNOTATIONS = {
    "nvtx": {("p", 1): 1},
    "itt": {("a", 2): 1, ("b", 1): 2, ("p", 1): 1, ("s", 1): 2},
}


@pytest.mark.sanitize
@pytest.mark.parametrize("api", ["nvtx", "itt"])
def test_crossing_ranges_on_lanes(tmp_path, api):
    """Ranges that do not nest with their thread's (NVTX start/end, ITT
    overlapped tasks): one ended by another thread while the main thread is in
    a zeCommandQueueSynchronize of a 30 ms kernel, two crossing each other, one crossing a
    push/pop range. Each is drawn whole on the first of the process's lanes
    where it nests, with args.tid; every row of the trace nests (the thread's
    row kept its calls and its push/pop range); the kernels carry the ranges,
    the device rows' annotations nest; the summary counts each range as drawn.
    The regular list appended before "handed over" and executed inside it
    carries it as exec_range only, and the summary counts no kernel in it."""
    app = OUT / f"ze_cross_{api}"
    need(app)
    env = sim_env({"GPUTRACE_SUMMARY": "1",
                   "GPUTRACE_SUMMARY_JSON": str(tmp_path / "summary.json")})
    r = run([app], tmp_path=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"ze_cross: done\n"
    t = viewer_rules.load_exact(r.trace_path)
    pid = t["gputrace"]["pid"]
    spans = events(t, ph="X", cat="user_annotation")
    assert collections.Counter(e["name"] for e in spans) == {
        "handed over": 1, "a": 1, "b": 1, "s": 1, "p": 1}
    by = {e["name"]: e for e in spans}
    assert sorted(lanes(t, pid).values()) == [("ranges", 1), ("ranges 2", 2)]
    assert by_lane(t, pid) == {"ranges": ["handed over", "a", "s"], "ranges 2": ["b"]}
    assert by["p"]["tid"] == pid
    assert all(by[n]["args"]["tid"] == pid for n in ("handed over", "a", "b", "s"))
    # the times as recorded: ended 3 ms on, inside the sync; a and b cross; s
    # crosses p
    # the long one: it waits for the 30 ms kernel submitted before it (under a
    # sanitizer, whose calls are slower, less of those 30 ms is left for it)
    sync = max((e for e in events(t, ph="X", name="zeCommandQueueSynchronize")
                if e["tid"] == pid), key=lambda e: ns(e["dur"]))
    h, sy = span_ns(by["handed over"]), span_ns(sync)
    assert h[0] < sy[0] < h[1] < sy[1] and h[1] - h[0] >= 3000000
    a, b = span_ns(by["a"]), span_ns(by["b"])
    assert a[0] < b[0] < a[1] < b[1]
    p, x = span_ns(by["p"]), span_ns(by["s"])
    assert p[0] < x[0] < p[1] < x[1]
    assert viewer_rules.check_nesting(t) >= 4
    kernels = {e["name"]: e["args"] for e in device_spans(t) if e["name"] != "k_long"}
    assert {k: a["ranges"] for k, a in kernels.items()} == CROSS_RANGES[api]
    assert {k: a["range"] for k, a in kernels.items()} == \
        {k: v[-1] for k, v in CROSS_RANGES[api].items()}
    got = collections.Counter((e["name"], e["args"]["spans"]) for e in annotations(t))
    assert got == CROSS_ANNOTATIONS[api]
    assert viewer_rules.check_flows(t) == 7  # k_long: its append and its execution
    # k_long, appended before "handed over" and executed inside it: the range is its
    # execute's, beside its own (none) as exec_range(s), for both APIs alike
    k_long = [e["args"] for e in device_spans(t) if e["name"] == "k_long"]
    assert [{k: v for k, v in a.items() if "range" in k} for a in k_long] == [
        {"exec_range": "handed over", "exec_ranges": ["handed over"]}]
    viewer_rules.check_rounding(t)
    s = json.loads((tmp_path / "summary.json").read_text())
    assert {x["name"]: (x["count"], x["host_ns"]) for x in s["ranges"]} == \
        {e["name"]: (1, ns(e["dur"])) for e in spans}
    # kernels launched inside each range (args.ranges): none in "handed over"
    assert {x["name"]: x["kernels"] for x in s["ranges"]} == {
        "handed over": 0, "a": 2, "b": 2, "s": 2, "p": 1}


@pytest.mark.sanitize
def test_nvtx_ranges_on_cuda_device(tmp_path):
    """CUDA: NVTX ranges around asynchronous launches (the fake libcudart,
    CUDA events timing its kernels, 50 ms each here) have all ended before
    the work runs; the kernels carry them all the same, a second thread's kernel on
    its own stream carries its own range and the process's start/end range,
    and each stream row gets the annotations around exactly its work."""
    app = BUILD / "test" / "cuda" / "nvtx_ranges"
    need(app)
    # 50 ms, not the fake's 300 us: the first launch readies the device's events
    # (a stream, a reference, its clock fit) and the next one names a new function;
    # under ThreadSanitizer that is 1-5 ms of the time from the first kernel's start
    # to the range's end, which a loaded host stretched past 10 ms (CI-like load,
    # 4 runs in 25, up to 21.6 ms; under AddressSanitizer it once passed 300 us)
    r = run([app], tmp_path=tmp_path,
            env={"GPUTRACE_DISABLE_CUPTI": "1", "FAKE_CUDART_KERNEL_US": "50000",
                 "GPUTRACE_SUMMARY_JSON": str(tmp_path / "summary.json")})
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"nvtx_ranges: done\n"
    t = viewer_rules.load_exact(r.trace_path)
    kernels = {e["name"]: e for e in device_spans(t)}
    assert set(kernels) == {"k_fwd1", "k_fwd2", "k_bwd", "k_worker", "k_after"}
    assert all(e["args"]["timing"] == "cuda_events" for e in kernels.values())
    got = {n: (e["args"].get("range"), e["args"].get("ranges")) for n, e in kernels.items()}
    assert got == {"k_fwd1": ("forward", ["epoch", "train", "forward"]),
                   "k_fwd2": ("forward", ["epoch", "train", "forward"]),
                   "k_bwd": ("backward", ["epoch", "train", "backward"]),
                   "k_worker": ("worker", ["epoch", "worker"]),
                   "k_after": (None, None)}
    host = {e["name"]: e for e in events(t, ph="X", cat="user_annotation")}
    # asynchronous: each range ended before its last kernel started
    for name, last in (("forward", "k_fwd2"), ("backward", "k_bwd"), ("train", "k_bwd")):
        assert span_ns(host[name])[1] < ns(kernels[last]["ts"]), name
    assert kernels["k_worker"]["tid"] != kernels["k_fwd1"]["tid"]  # its own stream's row
    check_annotations(t, {("train", 3): 1, ("forward", 2): 1, ("backward", 1): 1,
                          ("worker", 1): 1})
    assert {a["args"]["tid"] for a in annotations(t) if a["name"] == "worker"} == \
        {host["worker"]["tid"]}
    assert viewer_rules.check_flows(t) == 5
    rows = {x["name"]: x for x in json.loads((tmp_path / "summary.json").read_text())["ranges"]}
    assert {n: rows[n]["kernels"] for n in rows} == {"epoch": 4, "train": 3, "forward": 2,
                                                      "backward": 1, "worker": 1}
    # the HTML report's ranges table has the summary's numbers
    html = tmp_path / "report.html"
    out = subprocess.run([BUILD / "gputrace-tool", "report", r.trace_path, "-o", html],
                         capture_output=True)
    assert out.returncode == 0, out.stderr

    class Rows(HTMLParser):
        def __init__(self):
            super().__init__()
            self.section, self.rows = None, []

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "section":
                self.section = a.get("id")
            elif tag == "tr" and self.section == "ranges" and "data-name" in a:
                self.rows.append(a)

    page = Rows()
    page.feed(html.read_text())
    assert {a["data-name"]: (int(a["data-count"]), int(a["data-host-ns"]),
                             int(a["data-device-ns"]), int(a["data-kernels"]))
            for a in page.rows} == \
        {n: (x["count"], x["host_ns"], x["device_ns"], x["kernels"]) for n, x in rows.items()}


@pytest.mark.sanitize
def test_nvtx_ranges_never_ended(tmp_path):
    """A range pushed and one started, never popped or ended, around three
    kernels and their sync until main returns (a common pattern): each is
    drawn from its call to the trace's end (the pushed one on the main
    thread's row, the started one on the process's lane),
    around the calls made inside it, args.unended; a thread that ends with
    a range pushed has it drawn up to its end. All are counted in the
    summary's ranges (count and time as drawn), as on the device side."""
    app = BUILD / "test" / "cuda" / "nvtx_ranges"
    need(app)
    r = run([app, "unended"], tmp_path=tmp_path,
            env={"GPUTRACE_DISABLE_CUPTI": "1", "FAKE_CUDART_KERNEL_US": "1000",
                 "GPUTRACE_SUMMARY": "1",
                 "GPUTRACE_SUMMARY_JSON": str(tmp_path / "summary.json")})
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"nvtx_ranges: unended done\n"
    t = viewer_rules.load_exact(r.trace_path)
    pid = t["gputrace"]["pid"]
    host = events(t, ph="X", cat="user_annotation")
    assert sorted(e["name"] for e in host) == ["started_not_ended", "whole_program",
                                               "worker_not_popped"]
    drawn = unended_checks(t, pid, ["whole_program", "started_not_ended"],
                           on_lanes=["started_not_ended"])
    calls = sorted((e for e in events(t, ph="X", cat="cuda_runtime") if e["tid"] == pid),
                   key=lambda e: ns(e["ts"]))
    assert [e["name"] for e in calls] == ["cudaSetDevice", "cudaStreamCreate"] + \
        ["cudaLaunchKernel"] * 3 + ["cudaStreamSynchronize"]
    # pushed, then started, between the stream's creation and the first launch
    assert span_ns(calls[1])[1] <= drawn["whole_program"][0] <= drawn["started_not_ended"][0] \
        <= span_ns(calls[2])[0]
    assert span_ns(calls[-1])[1] <= drawn["whole_program"][1]
    # the thread's, on its row: around its launch, up to its end (before main's sync)
    [worker] = [e for e in host if e["name"] == "worker_not_popped"]
    [wcall] = [e for e in events(t, ph="X", cat="cuda_runtime") if e["tid"] != pid]
    assert worker["tid"] == wcall["tid"] and worker["args"] == {"unended": True}
    w, c = span_ns(worker), span_ns(wcall)
    assert span_ns(calls[4])[1] <= w[0] <= c[0] and c[1] <= w[1] <= span_ns(calls[5])[0]
    kernels = {e["name"]: e for e in device_spans(t)}
    assert {n: (e["args"]["range"], e["args"]["ranges"]) for n, e in kernels.items()} == {
        **{k: ("whole_program", ["started_not_ended", "whole_program"])
           for k in ("k_fwd1", "k_fwd2", "k_bwd")},
        "k_worker": ("worker_not_popped", ["started_not_ended", "worker_not_popped"])}
    assert sorted((a["name"], a["args"]["spans"]) for a in annotations(t)) == \
        [("whole_program", 3), ("worker_not_popped", 1)]
    assert viewer_rules.check_flows(t) == 4
    viewer_rules.check_rounding(t)
    s = json.loads((tmp_path / "summary.json").read_text())
    rows = {x["name"]: (x["count"], x["host_ns"], x["device_ns"], x["kernels"])
            for x in s["ranges"]}
    work = {"whole_program": ("k_fwd1", "k_fwd2", "k_bwd"), "worker_not_popped": ("k_worker",),
            "started_not_ended": tuple(kernels)}
    assert rows == {e["name"]: (1, ns(e["dur"]),
                                sum(ns(kernels[k]["dur"]) for k in work[e["name"]]),
                                len(work[e["name"]])) for e in host}
    total = sum(ns(e["dur"]) for e in host)
    assert s["totals"]["ranges"] == {"distinct": 3, "count": 3, "host_ns": total}
    assert "  ranges: 3 distinct, 3 ranges, " in r.stderr.decode()
    # `gputrace summary FILE` counts them the same
    out = subprocess.run([BUILD / "gputrace-tool", "summary", "--json", "-", r.trace_path],
                         capture_output=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ranges"] == s["ranges"]


ZE_DOMAINS_OUT = """push epoch 0
push l1 0
push l2 1
push l3 2
push l4 3
push l5 4
pop trainer 0
pop l5 4
pop l4 3
pop l3 2
pop l2 1
pop l1 0
pop trainer -1
pop default-open 0
pop nothing -1
ze_domains: done
"""


@pytest.mark.sanitize
def test_each_domain_is_a_stack_of_its_own(tmp_path):
    """NVTX domains and ITT domains each keep a push/pop stack of their own
    (nvToolsExt.h): a pop ends its domain's newest range however deep, and
    returns its level in that domain; a pop with none of its domain open ends
    nothing (-1), and the program's own pops return what they would untraced.
    A range that ended before newer ranges of other domains crosses them: it
    is drawn on a lane. Once "epoch" was popped 5 ranges down, "l5" was ended
    instead and the kernel ran in [epoch, l1..l4]; an ITT task end with no
    task of its domain ended the NVTX range, whose own pop then returned -1."""
    app = OUT / "ze_domains"
    need(app)
    env = sim_env({"GPUTRACE_SUMMARY_JSON": str(tmp_path / "summary.json")})
    r = run([app], tmp_path=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == ZE_DOMAINS_OUT
    t = viewer_rules.load_exact(r.trace_path)
    pid = t["gputrace"]["pid"]
    spans = events(t, ph="X", cat="user_annotation")
    assert collections.Counter(e["name"] for e in spans) == {
        n: 1 for n in ("epoch", "l1", "l2", "l3", "l4", "l5", "default-open", "ta", "tb")}
    assert not any(e.get("args", {}).get("unended") for e in spans)
    by = {e["name"]: e for e in spans}
    # each ended where its own domain's pop came: epoch before the kernel
    kernels = {e["name"]: e for e in device_spans(t)}
    assert span_ns(by["epoch"])[1] < ns(kernels["k_nest"]["ts"])
    assert span_ns(by["ta"])[1] < ns(kernels["k_itt"]["ts"]) < span_ns(by["tb"])[1]
    assert {k: (e["args"]["range"], e["args"]["ranges"]) for k, e in kernels.items()} == {
        "k_nest": ("l5", ["l1", "l2", "l3", "l4", "l5"]),
        "k_odd": ("default-open", ["default-open"]),
        "k_itt": ("tb", ["tb"])}
    assert by["epoch"]["args"]["domain"] == "trainer" and by["ta"]["args"]["domain"] == "lib"
    # the two that crossed newer ranges on lanes, the rest on the thread's row
    assert by_lane(t, pid) == {"ranges": ["epoch", "ta"]}
    assert all(by[n]["tid"] == pid for n in by if n not in ("epoch", "ta"))
    assert viewer_rules.check_nesting(t) >= 1
    assert sorted((a["name"], a["args"]["spans"]) for a in annotations(t)) == sorted(
        [(n, 1) for n in ("l1", "l2", "l3", "l4", "l5", "default-open", "tb")])
    lost = json.loads((tmp_path / "summary.json").read_text())["lost"]
    assert lost == {"total": 0, "by_reason": {}}


def nvtx_ranges(tmp_path, mode, *args, summary=False):
    """test/cuda/nvtx_ranges MODE ARGS on the fake runtime (1 ms kernels, no CUPTI):
    its trace, once it ran through (summary: with its summary JSON beside it)."""
    app = BUILD / "test" / "cuda" / "nvtx_ranges"
    need(app)
    env = {"GPUTRACE_DISABLE_CUPTI": "1", "FAKE_CUDART_KERNEL_US": "1000"}
    if summary:
        env["GPUTRACE_SUMMARY_JSON"] = str(tmp_path / "summary.json")
    r = run([app, mode] + [str(a) for a in args], tmp_path=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"nvtx_ranges: {mode} done\n".encode()
    return viewer_rules.load_exact(r.trace_path)


@pytest.mark.sanitize
def test_nvtx_domain_created_by_threads_at_once_is_one_domain(tmp_path):
    """16 threads create domain "shared" at the same moment, push a range in
    it around a kernel and pop it: each gets the one handle (creation raced,
    two threads could get two, and a slot was counted before its name was
    stored), every range is in "shared" and every kernel inside its range."""
    t = nvtx_ranges(tmp_path, "domains", 16, summary=True)
    spans = events(t, ph="X", cat="user_annotation")
    assert sorted(e["name"] for e in spans) == sorted(f"t{i}" for i in range(16))
    assert {e["args"]["domain"] for e in spans} == {"shared"}
    kernels = device_spans(t)
    assert len(kernels) == 16
    assert sorted(k["args"]["range"] for k in kernels) == sorted(f"t{i}" for i in range(16))
    lost = json.loads((tmp_path / "summary.json").read_text())["lost"]
    assert lost == {"total": 0, "by_reason": {}}


@pytest.mark.parametrize("depth", [17, 32])
def test_nvtx_deep_nesting_every_level_drawn(tmp_path, depth):
    """Every level the range tracker keeps (32 on a thread) gets its
    gpu_user_annotation on the device row, the kernel's own range (the
    innermost) included: deeper than 16 once went undrawn, silently."""
    t = nvtx_ranges(tmp_path, "deep", depth, summary=True)
    levels = [f"r{i}" for i in range(depth)]
    [kernel] = device_spans(t)
    assert (kernel["args"]["range"], kernel["args"]["ranges"]) == (levels[-1], levels)
    anns = annotations(t)
    assert sorted((a["name"], a["args"]["spans"]) for a in anns) == sorted(
        (n, 1) for n in levels)
    assert all((a["pid"], a["tid"]) == (kernel["pid"], kernel["tid"]) for a in anns)
    # around the kernel, each level opening 1 ns before the next inner one
    start, end = span_ns(kernel)
    by = {a["name"]: span_ns(a) for a in anns}
    assert [by[n] for n in levels] == [(start - depth + i, end) for i in range(depth)]
    lost = json.loads((tmp_path / "summary.json").read_text())["lost"]
    assert lost == {"total": 0, "by_reason": {}}  # none too deep to keep
    assert viewer_rules.check_flows(t) == 1


def test_nvtx_ranges_too_deep_are_counted_not_drawn(tmp_path):
    """A push past the 32 levels kept is counted (ranges_too_deep), and nothing
    else: its pop cannot end it, so it is not drawn either. Once its begin was
    recorded all the same: drawn never ended (args.unended), carried by every
    later launch (k_after, outside every range), and its attributes' slot
    never freed, so after 4096 of them every range lost its colour."""
    n = 4200
    t = nvtx_ranges(tmp_path, "toodeep", n, summary=True)
    got = {e["name"]: (e["args"].get("range"), e["args"].get("ranges"))
           for e in device_spans(t)}
    assert got == {"k_fwd1": ("last", ["last"]), "k_after": (None, None)}
    host = events(t, ph="X", cat="user_annotation")
    assert not [e for e in host if e.get("args", {}).get("unended")]
    names = collections.Counter(e["name"] for e in host)
    assert names == dict({f"r{i}": n for i in range(32)}, last=1)
    assert all(e.get("args", {}).get("color") == ("0xffabcdef" if e["name"] == "last" else "0xff112233")
               for e in host)
    assert [a["name"] for a in annotations(t)] == ["last"]
    lost = json.loads((tmp_path / "summary.json").read_text())["lost"]
    assert lost == {"total": n, "by_reason": {"ranges_too_deep": n}}


@pytest.mark.parametrize("nprocess", [10, 70])
def test_thread_ranges_kept_past_64_process_ranges(tmp_path, nprocess):
    """A launch carries 64 ranges at most: with more open, the process's
    outermost are left out, never the thread's. Once 62 start/end ranges open
    took the launch's innermost range, and 64 all of the thread's: args.range
    named a start/end range and the device row had no annotation."""
    t = nvtx_ranges(tmp_path, "manyopen", nprocess)
    [kernel] = device_spans(t)
    kept = [f"p{i}" for i in range(max(0, nprocess - 62), nprocess)]
    assert (kernel["args"]["range"], kernel["args"]["ranges"]) == \
        ("inner", kept + ["outer", "inner"])
    assert sorted((a["name"], a["args"]["spans"]) for a in annotations(t)) == [
        ("inner", 1), ("outer", 1)]


def test_nvtx_range_without_a_name_ends_at_its_pop(tmp_path):
    """A range pushed with a NULL registered string is named "" and ends at
    its pop. Once it was taken for one not recorded: its pop drew nothing,
    so it was drawn never ended and carried by every later launch."""
    t = nvtx_ranges(tmp_path, "nullname")
    got = {e["name"]: (e["args"].get("range"), e["args"].get("ranges"))
           for e in device_spans(t)}
    assert got == {"k_fwd1": ("", [""]), "k_after": (None, None)}
    [host] = events(t, ph="X", cat="user_annotation")
    assert host["name"] == "" and "unended" not in host.get("args", {})
    [ann] = annotations(t)
    assert (ann["name"], ann["args"]["spans"]) == ("", 1)


def test_nvtx_ranges_in_a_signal_handler(tmp_path):
    """A 50 us timer's handler pushes and pops a range while main pushes and
    pops 100000: a handler's range that interrupts one of main's range calls
    is not recorded (it would write into the thread's ring mid-write) but
    counted as lost `reentrant`, once; every other range is drawn, ended where
    it was popped, and main's pops return 0 throughout. Once ~1 in 10 of the
    handler's ranges went missing uncounted and some of main's were drawn
    never ended (args.unended) though popped."""
    app = BUILD / "test" / "cuda" / "nvtx_ranges"
    need(app)
    r = run([app, "signal", "100000"], tmp_path=tmp_path,
            env={"GPUTRACE_DISABLE_CUPTI": "1",
                 "GPUTRACE_SUMMARY_JSON": str(tmp_path / "summary.json")})
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode().split()
    assert out[:5] == ["nvtx_ranges:", "signal", "main", "100000", "sig"], out
    handled = int(out[5])
    assert out[6:] == ["badpops", "0"] and handled > 0, out
    t = r.trace
    spans = events(t, ph="X", cat="user_annotation")
    assert not [e for e in spans if "unended" in e.get("args", {})]
    drawn = collections.Counter(e["name"] for e in spans)
    lost = t["gputrace"]["lost_by_reason"]
    assert set(drawn) <= {"init", "main", "sig"}
    assert (drawn["init"], drawn["main"]) == (1, 100000)
    assert drawn["sig"] + lost.get("reentrant", 0) == handled, (drawn, lost)
    assert t["gputrace"]["events_lost"] == lost.get("reentrant", 0)
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["lost"]["by_reason"].get("reentrant", 0) == lost.get("reentrant", 0)


def test_itt_protocol_1_on_device(tmp_path):
    r = ranged_run(tmp_path, "itt", {"ITT_TEST_PROTOCOL": "1"})
    assert "itt protocol: 1" in r.stdout.decode()
    t = viewer_rules.load_exact(r.trace_path)
    check_device_ranges(t)
    check_annotations(t)


def test_no_ranges_no_annotations(tmp_path):
    """Annotations off: device spans carry no range, no annotation spans."""
    r = ranged_run(tmp_path, "itt", {"GPUTRACE_ACTIVITIES": "runtime,kernel,memcpy"})
    t = r.trace
    assert device_spans(t)
    assert not any("range" in e.get("args", {}) for e in device_spans(t))
    assert not annotations(t)


@pytest.mark.parametrize("config", ["busy:20", "busy:20,thread"])
def test_plugin_annotations_are_ranges(tmp_path, config):
    """A plug-in's host annotations are ranges of their thread, handed over
    whole after the work inside them: the busy plug-in's "step" around 8
    launches (zero-length and back-to-back device spans, a device-side
    "phase" slice at the same start as the first) projects onto its work.
    Also when the thread that recorded them ended before they were read (its
    ranges went with it, and the work, written a cycle later, had none)."""
    busy = BUILD / "test" / "viewers" / "plugin"
    need(busy / "libbusy.so")
    r = run(["/bin/true"], tmp_path=tmp_path,
            env={"GPUTRACE_PLUGIN_PATH": str(busy), "GPUTRACE_PLUGIN_CONFIG": config,
                 "GPUTRACE_SUMMARY_JSON": str(tmp_path / "s.json")})
    assert r.returncode == 0, r.stderr
    t = viewer_rules.load_exact(r.trace_path)
    spans = device_spans(t)
    assert len(spans) == 160
    assert all((e["args"]["range"], e["args"]["ranges"]) == ("step", ["step"]) for e in spans)
    anns = annotations(t)
    assert len(anns) == 20 and all(a["args"]["spans"] == 8 for a in anns)
    order = sorted(spans, key=lambda e: ns(e["ts"]))
    for k, a in enumerate(sorted(anns, key=lambda e: ns(e["ts"]))):
        mine = order[8 * k:8 * k + 8]
        start, end = span_ns(a)
        assert start < ns(mine[0]["ts"]) <= start + 1
        last = span_ns(mine[-1])
        assert end == (last[1] if last[1] > last[0] else last[0] + 1)
    assert viewer_rules.check_flows(t) == 160
    viewer_rules.check_rounding(t)
    rows = {x["name"]: x for x in json.loads((tmp_path / "s.json").read_text())["ranges"]}
    assert rows["step"]["count"] == 20 and rows["step"]["device_spans"] == 160
    assert rows["step"]["kernels"] == 80


def test_kineto_plugin_annotations_are_ranges(tmp_path):
    """A Kineto plug-in's user annotations (the PyTorch profiler's
    record_function ranges) are ranges of their thread: the kernels of the
    launches inside them carry them, each under its gpu_user_annotation."""
    so = BUILD / "test" / "plugins" / "kineto" / "npu.so"
    host = BUILD / "test" / "plugins" / "host_app"
    need(so)
    need(host)
    d = tmp_path / "kineto"
    d.mkdir()
    (d / so.name).write_bytes(so.read_bytes())
    r = run([host, "20"], tmp_path=tmp_path,
            env={"KINETO_PLUGIN_LIB_DIR_PATH": str(d), "KSIM_RANGES": "1"})
    t = viewer_rules.load_exact(r.trace_path)
    kernels = [e for e in device_spans(t) if e["cat"] == "kernel"]
    assert sorted(e["name"] for e in kernels) == ["npu_kernel_0", "npu_kernel_1", "npu_kernel_2"]
    assert all(e["args"]["ranges"] == ["npu step"] for e in kernels), kernels
    anns = [a for a in annotations(t) if a["name"] == "npu step"]
    assert len(anns) == 3 and all(a["args"]["spans"] == 1 for a in anns)
    for a in anns:
        start, end = span_ns(a)
        k = [e for e in kernels if start < ns(e["ts"]) <= start + 1]
        assert len(k) == 1 and span_ns(k[0])[1] == end
    viewer_rules.check_flows(t)
