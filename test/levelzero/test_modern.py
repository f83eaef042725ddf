"""Level Zero as current stacks use it (spec 1.10+), end to end on the simulated device:
zeInitDrivers, in-order lists, counter-based events, zeCommandListHostSynchronize, launches
with arguments, regular lists run on immediate lists; the marks barriers, event signals,
resets, waits and fences leave on device rows; and what a program built for a newer loader
sees on Debian's.

Debian's loader (1.8.12) cannot route the newer entry points: programs that need them run
against test/levelzero/newloader, a test-only libze_loader.so.1 that forwards everything
else to Debian's (see its header)."""
import collections
import pathlib

import pytest

from conftest import APPS, ZE_SIM, events, need, newer_loader, run, sim_env, strip_gputrace
from test_levelzero import (TICK_NS, assert_durations, assert_flows, assert_no_overlap,
                            by_corr, device_spans, end, host_spans, ns, start)

if not pathlib.Path("/usr/include/level_zero/ze_api.h").exists():
    pytest.skip("Level Zero headers (libze-dev) not installed: no Level Zero backend",
                allow_module_level=True)



def traced_and_plain(cmd, tmp_path, env=None, status=0):
    """Run cmd with and without the tracer on the simulated device: same status, stdout
    and stderr (so the simulator never saw a rule broken: it says so on stderr)."""
    for p in (ZE_SIM, cmd[0]):
        need(p)
    plain = run(cmd, traced=False, env=sim_env(env))
    traced = run(cmd, env=sim_env(env), tmp_path=tmp_path)
    assert plain.returncode == status, plain.stderr.decode(errors="replace")
    assert traced.returncode == plain.returncode
    assert traced.stdout == plain.stdout
    assert strip_gputrace(traced.stderr) == strip_gputrace(plain.stderr)
    assert b"ze_sim:" not in plain.stderr
    return traced


def fin(e):
    """The end of a span, the time of an instant."""
    return end(e) if "dur" in e else start(e)


def rows(trace):
    return {(m["pid"], m["tid"]): m["args"]["name"] for m in events(trace, ph="M")
            if m["name"] == "thread_name"}


def sync_marks(trace):
    """gpu_sync spans and instants on device rows, by time."""
    return sorted((e for e in trace["traceEvents"] if e.get("cat") == "gpu_sync"), key=start)


def on_row(evs, trace, row):
    names = rows(trace)
    return [e for e in evs if names.get((e["pid"], e["tid"])) == row]


# ---- a program for a current stack ----------------------------------------------------

@pytest.mark.sanitize
def test_modern_program_end_to_end(tmp_path):
    n, nbytes = 3, 65536
    traced = traced_and_plain([APPS / "ze_modern", n, nbytes], tmp_path, env=newer_loader())
    trace = traced.trace
    host = host_spans(trace)
    calls = collections.Counter(h["name"] for h in host)
    # Linked directly against the newer loader: every entry point is traced.
    # Driver-type filtering as the program asked: GPUs (count, then handles), then NPUs.
    inits = [h["args"] for h in host if h["name"] == "zeInitDrivers"]
    assert [(a["types"], a["drivers"]) for a in inits] == [("GPU", 1), ("GPU", 1), ("NPU", 0)]
    assert calls["zeCommandListHostSynchronize"] == n
    assert calls["zeCommandListAppendLaunchKernelWithArguments"] == n
    assert calls["zeEventCounterBasedCreate"] == 2
    assert calls["zeCommandListImmediateAppendCommandListsExp"] == 2
    assert calls["zeCommandListAppendLaunchKernelWithParameters"] == 1
    assert calls["zeDeviceSynchronize"] == 1
    assert all(h["args"]["result"] == 0 for h in host)
    by_corr(host)
    launches = [h for h in host if h["name"] == "zeCommandListAppendLaunchKernelWithArguments"]
    assert {(h["args"]["kernel"], h["args"]["gx"]) for h in launches} == {("modern_scale", 16384)}

    dev = device_spans(trace)
    names = rows(trace)
    graphs = [d for d in dev if d["name"] == "modern_graph"]
    assert collections.Counter((names[(d["pid"], d["tid"])], d["name"]) for d in dev) == {
        ("immediate list 0", "Memcpy HtoD"): n, ("immediate list 0", "modern_scale"): n,
        ("immediate list 1", "Memcpy DtoH"): n, ("immediate list 0", "modern_graph"): 2}
    scale = [d for d in dev if d["name"] == "modern_scale"]
    # The group size came with the launch (64), not from zeKernelSetGroupSize (1).
    assert all((d["args"]["lx"], d["args"]["gx"]) == (64, 16384) for d in scale)
    assert_durations(dev)
    assert_no_overlap(dev + [w for w in sync_marks(trace) if w["ph"] == "X"])
    assert_flows(trace, dev, host)

    # Each iteration: done inside the host calls that put it there and waited for it.
    appends = {h["args"]["correlation"]: h for h in host}
    list_syncs = [h for h in host if h["name"] == "zeCommandListHostSynchronize"]
    event_syncs = [h for h in host if h["name"] == "zeEventHostSynchronize"]
    dtoh = [d for d in dev if d["name"] == "Memcpy DtoH"]
    for it in range(n):
        for d in (scale[it], dtoh[it]):
            assert start(d) >= start(appends[d["args"]["correlation"]])
        assert end(scale[it]) <= end(list_syncs[it])
        assert end(dtoh[it]) <= end(event_syncs[it])
    # The copy engine waited for the kernel on the other engine (1 ms: still running when
    # the wait was appended, unless the host was slower than that): its wait ends when the
    # kernel ends (to a tick), and the copy starts then.
    waits = on_row(sync_marks(trace), trace, "immediate list 1")
    wait_calls = [h for h in host if h["name"] == "zeCommandListAppendWaitOnEvents"]
    assert [w["name"] for w in waits] == ["Wait cb event 1"] * n
    blocked = 0
    for w, k, c, call in zip(waits, scale, dtoh, wait_calls):
        if end(call) < end(k):
            assert w["ph"] == "X" and abs(end(w) - end(k)) <= TICK_NS + 1, (w, k)
            blocked += 1
        assert fin(w) >= end(k) - TICK_NS - 1
        assert start(c) >= fin(w) - 1
        assert w["args"]["event"] == "cb event 1"
    assert blocked >= 1

    # The recorded list ran twice back to back on the in-order immediate list: the second
    # run signals the same events before the first was read, so each run's times were
    # copied into memory of ours behind it. Both show, each with its run's times, in order.
    runs = [h for h in host if h["name"] == "zeCommandListImmediateAppendCommandListsExp"]
    assert trace["gputrace"]["events_lost"] == 0
    assert [g["args"]["correlation"] for g in graphs] == [r["args"]["correlation"]
                                                          for r in runs]
    for g, run_call in zip(graphs, runs):
        assert start(g) >= start(run_call)
    assert end(graphs[0]) <= start(graphs[1])


def test_modern_program_with_a_spec_1_14_driver(tmp_path):
    """Counter-based events from a pool with the 1.8 extension, not zeEventCounterBasedCreate."""
    n = 2
    trace = traced_and_plain([APPS / "ze_modern", n, 8192], tmp_path,
                             env=newer_loader({"ZE_SIM_API_VERSION": "1.14"})).trace
    assert b"event pool extension" in run([APPS / "ze_modern", 1, 64], traced=False,
                                          env=sim_env(newer_loader({"ZE_SIM_API_VERSION":
                                                                    "1.14"}))).stdout
    dev = device_spans(trace)
    assert trace["gputrace"]["events_lost"] == 0
    assert collections.Counter(d["name"] for d in dev) == {
        "Memcpy HtoD": n, "modern_scale": n, "Memcpy DtoH": n, "modern_graph": 2}
    assert_durations(dev)
    assert [w["name"] for w in sync_marks(trace)] == ["Wait event 1.0"] * n


@pytest.mark.sanitize
def test_counter_based_event_with_timestamps_stays_the_programs(tmp_path):
    """ze_counterbased reads its counter-based event's timestamps and checks they are the
    last copy's: the event stays the copies' signal event, and gputrace reads each copy's
    times from a query of it into memory of its own."""
    copies, nbytes = 4, 262144
    trace = traced_and_plain([APPS / "ze_counterbased", copies, nbytes], tmp_path).trace
    dev = device_spans(trace)
    assert [d["name"] for d in dev] == ["Memcpy HtoH"] * copies
    assert_durations(dev)
    assert_no_overlap(dev)
    host = host_spans(trace)
    for d, ap in zip(dev, [h for h in host if h["name"] == "zeCommandListAppendMemoryCopy"]):
        assert d["args"]["correlation"] == ap["args"]["correlation"]
        assert start(d) >= start(ap)
    waited, = [h for h in host if h["name"] == "zeEventHostSynchronize"]
    assert end(dev[-1]) <= end(waited)
    assert trace["gputrace"]["events_lost"] == 0


def test_linked_newer_entry_points_on_an_old_loader(tmp_path):
    """ze_modern needs zeInitDrivers; Debian's loader lacks it. Without gputrace the
    dynamic linker stops the program at the call; with gputrace (which exports it for
    programs that link it) the program stops the same way, one line of ours before."""
    need(APPS / "ze_modern")
    plain = run([APPS / "ze_modern"], traced=False, env=sim_env())
    traced = run([APPS / "ze_modern"], env=sim_env(), tmp_path=tmp_path)
    assert plain.returncode == traced.returncode == 127
    assert traced.stdout == plain.stdout
    assert strip_gputrace(traced.stderr) == plain.stderr.decode()
    assert b"undefined symbol: zeInitDrivers" in plain.stderr
    ours = [l for l in traced.stderr.decode().splitlines() if l.startswith("gputrace")]
    assert len(ours) == 1 and "zeInitDrivers" in ours[0]
    # It stopped at its first call, before anything was recorded: no trace file.
    assert not list(tmp_path.glob("*.json*"))


# ---- a program probing with dlsym sees its loader --------------------------------------

@pytest.mark.parametrize("loader", ["debian", "newer"])
def test_dlsym_probe_sees_what_its_loader_has(tmp_path, loader):
    env = newer_loader() if loader == "newer" else None
    traced = traced_and_plain([APPS / "ze_hello"], tmp_path, env=env)
    out = traced.stdout.decode().splitlines()
    host = host_spans(traced.trace)
    calls = collections.Counter(h["name"] for h in host)
    if loader == "debian":
        assert out[0] == "init: zeInit (this loader has no zeInitDrivers)"
        assert "zeInitDrivers" not in calls and calls["zeInit"] == 1
    else:
        # Found with dlsym(RTLD_DEFAULT): the program got gputrace's wrapper.
        assert out[0] == "init: zeInitDrivers, 1 GPU driver(s)"
        assert calls["zeInitDrivers"] == 2 and "zeInit" not in calls
    # The device-side signal is marked on the immediate list's row.
    mark, = sync_marks(traced.trace)
    signal, = [h for h in host if h["name"] == "zeCommandListAppendSignalEvent"]
    assert (mark["ph"], mark["name"]) == ("i", "Signal event 1.0")
    assert rows(traced.trace)[(mark["pid"], mark["tid"])] == "immediate list 0"
    assert mark["args"]["correlation"] == signal["args"]["correlation"]
    assert start(mark) >= start(signal)


# ---- barriers, event signals, resets, waits and fences on device rows -----------------

@pytest.mark.sanitize
def test_event_signals_resets_and_waits_on_device_rows(tmp_path):
    """ze_event_reset's list: kernel (signals A), wait on A, copy, reset of A, signal of B;
    executed 3 times. Each shows on the queue's row, in that order, with its event named,
    inside the execute-to-wait window."""
    rounds = 3
    trace = traced_and_plain([APPS / "ze_event_reset", rounds], tmp_path).trace
    host = host_spans(trace)
    executes = [h for h in host if h["name"] == "zeCommandQueueExecuteCommandLists"]
    waits = [h for h in host if h["name"] == "zeEventHostSynchronize"]
    row = sorted(on_row(device_spans(trace) + sync_marks(trace), trace, "queue 0.0"),
                 key=lambda e: (start(e), e["ph"] == "X"))
    per_round = ["reset_kernel", "Wait event 1.0", "Memcpy HtoH", "Reset event 1.0",
                 "Signal event 1.1"]
    assert [e["name"] for e in row] == per_round * rounds
    for r in range(rounds):
        got = row[5 * r:5 * r + 5]
        kernel, wait, copy, reset, signal = got
        assert all(start(e) >= start(executes[r]) for e in got)
        assert end(copy) <= end(waits[r])
        # Marks: when the queue got past them, in order, the wait after the kernel.
        assert end(kernel) <= start(wait) + 1 and fin(wait) <= start(copy) + 1
        assert end(copy) <= start(reset) <= start(signal)
        assert (reset["ph"], signal["ph"]) == ("i", "i")
        assert wait["args"]["event"] == "event 1.0"
        # The marks carry the run they belong to, as the list's device spans do.
        assert reset["args"]["correlation"] == executes[r]["args"]["correlation"]


@pytest.mark.parametrize("immediate", [0, 1, 2])
def test_device_reset_of_a_timestamped_event_keeps_its_commands_times(tmp_path, immediate):
    """ze_event_reset with a pool of kernel timestamps: the kernel that signals A is timed by
    A itself, which the list resets on the device right after (a regular list in the same
    run, on a queue or on an in-order immediate list; an immediate list while the 640 us
    kernel still runs). Every round's kernel is on the row with its own duration, before
    its reset, nothing lost; the program still reads the kernel's times from A before the
    reset (the app checks). Before, the kernels were lost, or (run on an immediate list,
    whose run's times were copied after it) drawn 0 ns long."""
    rounds = 3
    trace = traced_and_plain([APPS / "ze_event_reset", rounds, 1, immediate], tmp_path).trace
    assert trace["gputrace"]["events_lost"] == 0, trace["gputrace"]["lost_by_reason"]
    row_name = "immediate list 0" if immediate else "queue 0.0"
    assert {rows(trace)[(d["pid"], d["tid"])] for d in device_spans(trace)} == {row_name}
    row = on_row(device_spans(trace) + sync_marks(trace), trace, row_name)
    kernels = sorted((e for e in row if e["name"] == "reset_kernel"), key=start)
    resets = sorted((e for e in row if e["name"] == "Reset event 1.0"), key=start)
    assert len(kernels) == len(resets) == rounds
    assert_durations(kernels)
    assert all(end(k) <= start(r) + 1 for k, r in zip(kernels, resets))


@pytest.mark.parametrize("host_visible,reset_last",
                         [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)])
def test_replays_on_an_in_order_list_timed_by_the_programs_event(tmp_path, host_visible,
                                                                 reset_last):
    """ze_replay: a regular list whose kernel signals the program's timestamped event A,
    run 5 times back to back on an in-order immediate list. A reset before the kernel: every
    run shows (its times copied at the run's end from A: before, with timestamps only the
    device reads, the runs appended before the previous one was read were lost). A reset
    by the list after the kernel: A holds nothing at the run's end, the copy made before the
    reset is the next run's too; what is drawn has the kernel's own duration (drawn 0 ns
    before, with host-visible timestamps), the rest counted lost. The same where a second
    list of the call resets A (its copy at the run's end was zeros: drawn 0 ns); with
    host-visible timestamps, read from A itself, every run is lost there, counted."""
    runs = 5
    trace = traced_and_plain([APPS / "ze_replay", runs, host_visible, reset_last],
                             tmp_path).trace
    kernels = [d for d in device_spans(trace) if d["name"] == "replay_kernel"]
    assert {rows(trace)[(d["pid"], d["tid"])] for d in kernels} <= {"immediate list 0"}
    assert_durations(kernels)
    assert_no_overlap(kernels)
    lost = trace["gputrace"]["lost_by_reason"]
    if not reset_last:
        assert len(kernels) == runs and trace["gputrace"]["events_lost"] == 0, lost
    else:
        assert len(kernels) + lost.get("ze_overwritten", 0) + lost.get("ze_unread", 0) == runs, \
            lost


def test_waits_before_commands_and_barriers(tmp_path):
    """ze_pingpong: pong waits on ping's event on another engine; the wait shows before it,
    ending when ping ends. ze_basic's barrier shows between the fill and the next kernel."""
    trace = traced_and_plain([APPS / "ze_pingpong", 6], tmp_path).trace
    dev = device_spans(trace)
    host = host_spans(trace)
    pings = [d for d in dev if d["name"] == "ping"]
    pongs = [d for d in dev if d["name"] == "pong"]
    waits = [w for w in sync_marks(trace) if w["ph"] == "X"]
    assert len(pings) == len(pongs) == 6
    for w in waits:
        pong = min((p for p in pongs if start(p) >= end(w) - 1), key=start)
        ping = max((p for p in pings if end(p) <= end(w) + TICK_NS + 1), key=end)
        assert w["name"] == "Wait event 1.0" and w["args"]["waits"] == 1
        assert abs(end(w) - end(ping)) <= TICK_NS + 1
        assert abs(start(pong) - end(w)) <= 1
    # Ping (500 us) outlasts pong's append but for a host slower than that: each pong
    # appended while its ping ran shows the wait.
    appends = by_corr(host)
    held = [p for p, q in zip(pongs, pings) if end(appends[p["args"]["correlation"]]) < end(q)]
    assert held and len(waits) >= len(held)
    (tmp_path / "basic").mkdir()
    basic = traced_and_plain([APPS / "ze_basic", 2], tmp_path / "basic").trace
    dev = device_spans(basic)
    barriers = [m for m in sync_marks(basic) if m["name"] == "Barrier"]
    assert len(barriers) == 2 and all(b["ph"] == "i" for b in barriers)
    for b in barriers:
        fill = max((d for d in dev if d["name"] == "Memset" and end(d) <= start(b) + 1),
                   key=end)
        nxt = min((d for d in dev if d["name"] == "scale" and start(d) >= start(b) - 1),
                  key=start)
        assert end(fill) <= start(b) + 1 and start(b) <= start(nxt) + 1


def test_fences_and_one_engine_for_two_queues(tmp_path):
    """ze_bandwidth: two queues on the copy engine (one row, "queue 1.0"), each batch with a
    fence. Copies never overlap; each fence shows when its batch's copy ended."""
    repeats = 2
    trace = traced_and_plain([APPS / "ze_bandwidth", 1 << 18, repeats], tmp_path).trace
    dev = device_spans(trace)
    assert {rows(trace)[(d["pid"], d["tid"])] for d in dev} == {"queue 1.0"}
    assert_durations(dev)
    assert_no_overlap(dev)
    fences = [m for m in sync_marks(trace) if m["name"] == "Fence signaled"]
    assert len(fences) == 4 * repeats
    copy_ends = [end(d) for d in dev if d["cat"] == "gpu_memcpy"]
    # (a viewer's rounding can move a mark on a slice's end by 1 ns: writer/place.c)
    assert all(min(abs(start(f) - e) for e in copy_ends) <= 1 for f in fences)


@pytest.mark.parametrize("app,args,names", [
    ("ze_event_reset", [2], {"Wait event 1.0", "Reset event 1.0", "Signal event 1.1"}),
    ("ze_pingpong", [6], {"Wait event 1.0"}),
    ("ze_basic", [2], {"Barrier"}),
    ("ze_bandwidth", [1 << 18, 2], {"Fence signaled"})])
def test_sync_marks_carry_their_rows_device_and_stream(tmp_path, app, args, names):
    """README: "kernels, copies, fills and syncs carry integer args.device and args.stream"
    (Kineto's, as CUDA's cuda_sync records do): a mark has its row's, as the row's work."""
    trace = traced_and_plain([APPS / app, *args], tmp_path).trace
    ids = collections.defaultdict(set)
    for d in device_spans(trace):
        ids[(d["pid"], d["tid"])].add((d["args"]["device"], d["args"]["stream"]))
    marks = sync_marks(trace)
    assert {m["name"] for m in marks} == names
    for m in marks:
        a = m["args"]
        assert type(a.get("device")) is int and type(a.get("stream")) is int, m
        assert ids[(m["pid"], m["tid"])] == {(a["device"], a["stream"])}, m


def test_sync_marks_follow_the_activities(tmp_path):
    """Without the "sync" activity, no marks and no barrier of ours in the program's lists."""
    env = {"GPUTRACE_ACTIVITIES": "runtime,kernel,memcpy,memset"}
    need(APPS / "ze_event_reset")
    traced = run([APPS / "ze_event_reset", 2], env=sim_env(env), tmp_path=tmp_path)
    assert traced.returncode == 0
    trace = traced.trace
    assert not sync_marks(trace)
    assert collections.Counter(d["name"] for d in device_spans(trace)) == {
        "reset_kernel": 2, "Memcpy HtoH": 2}


# ---- the old path --------------------------------------------------------------------

def test_spec_1_4_driver_still_traced(tmp_path):
    """The simulated device playing spec 1.4 under Debian's loader: the path of before."""
    trace = traced_and_plain([APPS / "ze_basic", 2], tmp_path,
                             env={"ZE_SIM_API_VERSION": "1.4"}).trace
    dev = device_spans(trace)
    assert len(dev) == 5 * 2 + 2
    assert_durations(dev)
    assert trace["gputrace"]["events_lost"] == 0


# ---- the summary's units -------------------------------------------------------------

def test_slow_copies_print_in_a_unit_that_shows_them(tmp_path):
    """4-byte copies and a fill (the simulated engine's 1 us minimum each): about 4 MB/s,
    printed as such, never as 0.00 GB/s; each figure is the trace's bytes over its times."""
    traced = traced_and_plain([APPS / "ze_bandwidth", 4, 1], tmp_path,
                              env={"GPUTRACE_SUMMARY": "1"})
    dev = device_spans(traced.trace)
    err = traced.stderr.decode()
    table = {l.split()[0]: l.split()[1:] for l in err.splitlines()
             if l.split()[:1] in (["HtoD"], ["DtoH"], ["memset"])}
    assert set(table) == {"HtoD", "DtoH", "memset"}
    for kind, (count, nbytes, _, total, unit_ns, figure, unit) in table.items():
        mine = [d for d in dev if d["args"].get("kind", "memset") == kind]
        total_ns = sum(ns(d["dur"]) for d in mine)
        assert (int(count), unit_ns, unit) == (len(mine), "ns", "MB/s"), kind
        assert int(nbytes) == 4 * len(mine) and int(total) == total_ns
        assert float(figure) == pytest.approx(int(nbytes) / total_ns * 1e3, abs=0.006)
    assert "0.00 GB/s" not in err
