"""What runtimes get from zeDriverGetExtensionFunctionAddress, end to end on the simulated
device with Debian's loader: mutable command lists (SYCL graphs updated between
executions) and Intel's zex functions (counter-based events without a pool, waits on and
writes to memory, imported host pointers). test/apps/ze_graph plays both."""
import collections
import pathlib

import pytest

from conftest import APPS, run, sim_env
from test_levelzero import (TICK_NS, assert_durations, assert_flows, assert_no_overlap,
                            device_spans, end, host_spans, start)
from test_modern import on_row, rows, sync_marks, traced_and_plain

if not pathlib.Path("/usr/include/level_zero/ze_api.h").exists():
    pytest.skip("Level Zero headers (libze-dev) not installed: no Level Zero backend",
                allow_module_level=True)

GRAPH_RUNS = 4
LOOKED_UP = {
    "zeCommandListGetNextCommandIdExp", "zeCommandListGetNextCommandIdWithKernelsExp",
    "zeCommandListUpdateMutableCommandsExp", "zeCommandListUpdateMutableCommandKernelsExp",
    "zeCommandListUpdateMutableCommandSignalEventExp",
    "zeCommandListImmediateAppendCommandListsExp", "zexCounterBasedEventCreate2",
    "zexCommandListAppendWaitOnMemory", "zexCommandListAppendWriteToMemory",
    "zexDriverImportExternalPointer", "zexDriverGetHostPointerBaseAddress",
    "zexDriverReleaseImportedPointer"}


@pytest.fixture(scope="module")
def graph_trace(tmp_path_factory):
    return traced_and_plain([APPS / "ze_graph", GRAPH_RUNS],
                            tmp_path_factory.mktemp("ze_graph")).trace


def test_extension_functions_are_traced(graph_trace):
    host = host_spans(graph_trace)
    calls = collections.Counter(h["name"] for h in host)
    # Every function the program looked up: its calls went through our wrappers.
    assert calls["zeDriverGetExtensionFunctionAddress"] == len(LOOKED_UP)
    assert {n: calls[n] for n in LOOKED_UP} == {
        "zeCommandListGetNextCommandIdExp": 1, "zeCommandListGetNextCommandIdWithKernelsExp": 1,
        "zeCommandListUpdateMutableCommandsExp": 2,
        "zeCommandListUpdateMutableCommandKernelsExp": 1,
        "zeCommandListUpdateMutableCommandSignalEventExp": 1,
        "zeCommandListImmediateAppendCommandListsExp": 1,
        "zexCounterBasedEventCreate2": 2, "zexCommandListAppendWaitOnMemory": 1,
        "zexCommandListAppendWriteToMemory": 1, "zexDriverImportExternalPointer": 1,
        "zexDriverGetHostPointerBaseAddress": 1, "zexDriverReleaseImportedPointer": 1}
    # (but the check that the kernel after the wait had not run: NOT_READY)
    assert [h["name"] for h in host if h["args"]["result"] != 0] == ["zeEventQueryStatus"]
    assert graph_trace["gputrace"]["events_lost"] == 0


@pytest.mark.sanitize
def test_updated_graph_is_timed_as_updated_each_run(graph_trace):
    """Each execution of the closed mutable list shows its kernels as updated before it:
    name, group count and size, and the duration they make (the simulator's rule)."""
    trace = graph_trace
    host = host_spans(trace)
    names = rows(trace)
    dev = [d for d in device_spans(trace) if names[(d["pid"], d["tid"])] == "queue 0.0"]
    got = [(d["name"], d["args"].get("gx"), d["args"].get("lx")) for d in dev]
    run = [[("graph_scale", 64, 32), ("graph_tail", 16, 4), ("Memcpy HtoD", None, None)],
           [("graph_scale", 128, 8), ("graph_tail", 16, 4), ("Memcpy HtoD", None, None)]]
    run += [[("graph_alt", 100, 8), ("graph_tail", 16, 4), ("Memcpy HtoD", None, None)]] * (
        GRAPH_RUNS - 2)
    assert got == [c for r in run for c in r]
    assert_durations(dev)
    assert_no_overlap(dev)
    assert_flows(trace, device_spans(trace), host)
    # Each run inside the execute that started it and the synchronize that waited for it.
    execs = [h for h in host if h["name"] == "zeCommandQueueExecuteCommandLists"]
    syncs = [h for h in host if h["name"] == "zeCommandQueueSynchronize"]
    for i, (x, s) in enumerate(zip(execs, syncs)):
        for d in dev[3 * i:3 * i + 3]:
            assert start(d) >= start(x) and end(d) <= end(s), (d, x, s)
            assert d["args"]["correlation"] == x["args"]["correlation"]
    # graph_tail's signal event became the program's after run 1: runs 2.. are read from it
    # (the program reads it too), runs 0 and 1 from ours: all timed, none lost.
    assert len([d for d in dev if d["name"] == "graph_tail"]) == GRAPH_RUNS
    # Replayed once more on an in-order immediate list, as SYCL does: as last updated, on
    # that list's row, linked to that call.
    replay = on_row(device_spans(trace), trace, "immediate list 0")
    assert [(d["name"], d["args"].get("gx"), d["args"].get("lx")) for d in replay] == run[-1]
    assert_durations(replay)
    call, = [h for h in host if h["name"] == "zeCommandListImmediateAppendCommandListsExp"]
    waited, = [h for h in host if h["name"] == "zeEventHostSynchronize"][:1]
    for d in replay:
        assert d["args"]["correlation"] == call["args"]["correlation"]
        assert start(d) >= start(call) and end(d) <= end(waited)


def test_intel_extensions_on_an_in_order_list(graph_trace):
    trace = graph_trace
    host = host_spans(trace)
    dev = on_row(device_spans(trace), trace, "immediate list 1")
    assert [(d["name"], d["args"]["gx"], d["args"]["lx"]) for d in dev] == [
        ("zex_first", 50, 64), ("zex_after_flag", 50, 32), ("zex_first", 50, 64)]
    assert_durations(dev)
    marks = on_row(sync_marks(trace), trace, "immediate list 1")
    assert [(m["name"], m["ph"]) for m in marks] == [("Wait on memory", "X"),
                                                     ("Write to memory", "i")]
    wait, write = marks
    waited_call, = [h for h in host if h["name"] == "zexCommandListAppendWaitOnMemory"]
    # The host wrote the word 2 ms after appending the wait: the list (idle since the
    # program waited for the kernel before) waited from then, and ran the next kernel only
    # after.
    assert start(waited_call) <= start(wait) <= end(waited_call)
    assert end(wait) - end(waited_call) >= 2_000_000
    assert start(dev[1]) >= end(wait) - 1
    # The write came when the list got past the kernel before it.
    assert abs(start(write) - end(dev[1])) <= TICK_NS + 1
    assert_no_overlap(dev + [wait])


def test_untraced_lookups_are_the_drivers(tmp_path):
    """A program's lookups of names we do not wrap, or of names the driver lacks, are the
    driver's answers: the same status either way (ze_graph checks them as it runs)."""
    plain = run([APPS / "ze_graph", 3], traced=False, env=sim_env({"ZE_SIM_API_VERSION": "1.9"}))
    traced = run([APPS / "ze_graph", 3], env=sim_env({"ZE_SIM_API_VERSION": "1.9"}),
                 tmp_path=tmp_path)
    # A 1.9 driver has no kernel switches: the lookup fails, the program says so and stops.
    assert plain.returncode == traced.returncode == 1
    assert b"zeCommandListGetNextCommandIdWithKernelsExp" in plain.stderr
    assert traced.stdout == plain.stdout


def test_broken_mutable_list_rules_answer_as_without_gputrace(tmp_path):
    """The simulator refuses what the specification forbids (one ze_sim: line each); traced,
    the program gets the same answers and the failed calls change nothing we show."""
    cmd = [APPS / "ze_graph", "misuse"]
    plain = run(cmd, traced=False, env=sim_env())
    traced = run(cmd, env=sim_env(), tmp_path=tmp_path)
    assert plain.returncode == traced.returncode == 0
    assert traced.stdout == plain.stdout
    assert plain.stdout.decode().count(": 0x78000004") == 4
    rules = [l for l in plain.stderr.decode().splitlines() if l.startswith("ze_sim:")]
    assert len(rules) == 4
    assert [l for l in traced.stderr.decode().splitlines() if l.startswith("ze_sim:")] == rules
    host = host_spans(traced.trace)
    failed = [h["name"] for h in host if h["args"]["result"] != 0]
    assert failed == ["zeCommandListGetNextCommandIdExp", "zeCommandListUpdateMutableCommandsExp",
                      "zeCommandListUpdateMutableCommandsExp",
                      "zeCommandListUpdateMutableCommandKernelsExp"]
