"""--stacks: the host call stack of launches (all API calls with
--stacks-all) in the span's args as "outer;...;inner;API", naming the
calling functions of a test program (test/cli/stack_app.c) that runs
Level Zero calls on the simulated device."""
import json
import pathlib
import re
import subprocess

import pytest

from cli_helpers import STACK_APP, gputrace, gt_env, load_exact
from conftest import PRELOAD, ZE_SIM, clean_env, events, need, sim_env

pytestmark = pytest.mark.skipif(not pathlib.Path("/usr/include/level_zero/ze_api.h").exists(),
                                reason="built without Level Zero headers (libze-dev)")

LAUNCH = "zeCommandListAppendLaunchKernel"
VERSION = "zeDriverGetApiVersion"


def run_app(tmp_path, *opts, steps=2):
    need(STACK_APP)
    need(ZE_SIM)
    out = tmp_path / "t.json"
    p = gputrace(["run", "--no-summary", "-o", out, *opts, "--", STACK_APP, steps], tmp_path,
                 env=gt_env(sim_env()))
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"stack_app: {steps} steps ok\n".encode()
    return load_exact(out)


def api_spans(trace, name):
    spans = events(trace, ph="X", cat="ze_api", name=name)
    assert spans, f"no {name} span in the trace"
    return spans


def test_launch_stacks_name_the_callers(tmp_path):
    trace = run_app(tmp_path, "--stacks", steps=3)
    launches = api_spans(trace, LAUNCH)
    assert len(launches) == 3
    for ev in launches:
        stack = ev["args"]["stack"]
        assert stack.endswith(f";main;run_training;run_step;{LAUNCH}"), stack
        assert "gt_" not in stack and "stacks__" not in stack
    # one distinct call site: one stack, written the same way every time
    assert len({ev["args"]["stack"] for ev in launches}) == 1
    # by default only launches carry a stack
    assert "stack" not in (api_spans(trace, VERSION)[0].get("args") or {})


def test_stacks_all_calls(tmp_path):
    trace = run_app(tmp_path, "--stacks-all")
    stack = api_spans(trace, VERSION)[0]["args"]["stack"]
    # query_version is static: named from the ELF symbol table, not dladdr
    assert stack.endswith(f";main;query_version;{VERSION}"), stack


def test_stacks_all_from_the_environment(tmp_path):
    """GPUTRACE_STACKS_ALL=1 alone is --stacks-all: under gputrace run and under plain
    LD_PRELOAD, every call gets its stack (of the default depth). It recorded none."""
    need(STACK_APP)
    out = tmp_path / "t.json"
    p = gputrace(["run", "--no-summary", "-o", out, "--", STACK_APP, 2], tmp_path,
                 env=gt_env(sim_env({"GPUTRACE_STACKS_ALL": "1"})))
    assert p.returncode == 0, p.stderr
    preload = tmp_path / "p.json"
    env = clean_env(sim_env({"GPUTRACE_STACKS_ALL": "1", "LD_PRELOAD": PRELOAD,
                             "GPUTRACE_OUTPUT": str(preload), "GPUTRACE_SUMMARY": "0"}))
    subprocess.run([str(STACK_APP), "2"], env=env, check=True, capture_output=True, timeout=60)
    for trace in (load_exact(out), load_exact(preload)):
        stack = api_spans(trace, VERSION)[0]["args"]["stack"]
        assert stack.endswith(f";main;query_version;{VERSION}"), stack
        launches = api_spans(trace, LAUNCH)
        assert all(e["args"]["stack"].endswith(f";run_step;{LAUNCH}") for e in launches)
    # a depth of its own stays: GPUTRACE_STACKS=2 with it
    p = gputrace(["run", "--no-summary", "-o", tmp_path / "d.json", "--", STACK_APP, 2], tmp_path,
                 env=gt_env(sim_env({"GPUTRACE_STACKS_ALL": "1", "GPUTRACE_STACKS": "2"})))
    assert p.returncode == 0, p.stderr
    stack = api_spans(load_exact(tmp_path / "d.json"), VERSION)[0]["args"]["stack"]
    assert stack == f"query_version;{VERSION}", stack


def test_a_refused_variable_leaves_what_a_part_implies(tmp_path):
    """A refused GPUTRACE_STACKS (or GPUTRACE_TELEMETRY) is as if not set: one line, and
    GPUTRACE_STACKS_ALL=1 still means stacks of the default depth (GPUTRACE_TELEMETRY_HZ
    still telemetry), under plain LD_PRELOAD as under gputrace run, which leaves the
    refused variable out. Under LD_PRELOAD the library looked the variable up by name:
    there, not there, and recorded no stacks and no telemetry at all."""
    need(STACK_APP)
    bad = {"GPUTRACE_STACKS_ALL": "1", "GPUTRACE_STACKS": "deep",
           "GPUTRACE_TELEMETRY": "maybe", "GPUTRACE_TELEMETRY_HZ": "100"}
    out = tmp_path / "t.json"
    p = gputrace(["run", "--no-summary", "-o", out, "--", STACK_APP, 2], tmp_path,
                 env=gt_env(sim_env(bad)))
    assert p.returncode == 0, p.stderr
    preload = tmp_path / "p.json"
    env = clean_env(sim_env(dict(bad, LD_PRELOAD=PRELOAD, GPUTRACE_OUTPUT=str(preload),
                                 GPUTRACE_SUMMARY="0")))
    r = subprocess.run([str(STACK_APP), "2"], env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = ["gputrace: GPUTRACE_STACKS='deep' is not valid: expected off or 0, on (depth 16), "
             "or a depth from 1 to 64 frames; using the default",
             "gputrace: GPUTRACE_TELEMETRY='maybe' is not valid: expected 1/0, yes/no, "
             "true/false or on/off; using the default"]
    for err in (p.stderr, r.stderr):
        assert sorted(err.decode().splitlines()) == lines
    for trace in (load_exact(out), load_exact(preload)):
        stack = api_spans(trace, VERSION)[0]["args"]["stack"]
        assert stack.endswith(f";main;query_version;{VERSION}"), stack
        assert events(trace, ph="C"), "no telemetry sample"


STACKS_OFF_LINE = ("gputrace: GPUTRACE_STACKS_ALL (--stacks-all) records no stacks: "
                   "GPUTRACE_STACKS (--stacks) is off; set it on or to a depth")


def test_stacks_all_with_stacks_turned_off(tmp_path):
    """Stacks of every call asked for with stacks turned off by name: off holds (as a
    telemetry rate with telemetry off), and one line says so, once for a run; but
    gputrace run --stacks-all replaces a GPUTRACE_STACKS=off of the environment, as
    each option replaces its variable (a depth there is kept). Until 2026-12-07 none
    of these recorded a stack, and nothing said why."""
    need(STACK_APP)
    both = {"GPUTRACE_STACKS": "off", "GPUTRACE_STACKS_ALL": "1"}
    runs = {
        "env": (["run", "--no-summary"], both),
        "options": (["run", "--no-summary", "--stacks", "off", "--stacks-all"], {}),
        "off0": (["run", "--no-summary", "--stacks-all"], {"GPUTRACE_STACKS": "0"}),
        "depth": (["run", "--no-summary", "--stacks-all"], {"GPUTRACE_STACKS": "2"}),
    }
    traces, errs = {}, {}
    for name, (args, env) in runs.items():
        out = tmp_path / f"{name}.json"
        p = gputrace([*args, "-o", out, "--", STACK_APP, 2], tmp_path, env=gt_env(sim_env(env)))
        assert p.returncode == 0, p.stderr
        traces[name], errs[name] = load_exact(out), p.stderr.decode()
    preload = tmp_path / "p.json"
    r = subprocess.run([str(STACK_APP), "2"], capture_output=True, timeout=60,
                       env=clean_env(sim_env(dict(both, LD_PRELOAD=PRELOAD,
                                                  GPUTRACE_OUTPUT=str(preload),
                                                  GPUTRACE_SUMMARY="0"))))
    assert r.returncode == 0, r.stderr
    traces["preload"], errs["preload"] = load_exact(preload), r.stderr.decode()
    for name in ("env", "options", "preload"):
        assert errs[name].splitlines() == [STACKS_OFF_LINE], (name, errs[name])
        assert not [e for e in events(traces[name], ph="X") if "stack" in (e.get("args") or {})]
    for name in ("off0", "depth"):
        assert errs[name] == "", (name, errs[name])
    stack = api_spans(traces["off0"], VERSION)[0]["args"]["stack"]
    assert stack.endswith(f";main;query_version;{VERSION}"), stack
    assert api_spans(traces["depth"], VERSION)[0]["args"]["stack"] == f"query_version;{VERSION}"


@pytest.mark.parametrize("how", ["option", "env", "preload"])
def test_stacks_all_off_line_follows_the_log_level(tmp_path, how):
    """The line of --stacks-all with stacks off is a warning: --log error (or
    GPUTRACE_LOG=error) hides it, under gputrace run as under plain LD_PRELOAD, and the
    run is otherwise the same (no stack, exit 0). Until 2026-12-07 gputrace run said it
    whatever the level: the run's own reading of the settings said it at the default
    level, before it took --log's."""
    need(STACK_APP)
    out = tmp_path / "t.json"
    both = {"GPUTRACE_STACKS": "off", "GPUTRACE_STACKS_ALL": "1"}
    if how == "preload":
        p = subprocess.run([str(STACK_APP), "2"], capture_output=True, timeout=60,
                           env=clean_env(sim_env(dict(both, LD_PRELOAD=PRELOAD,
                                                      GPUTRACE_LOG="error",
                                                      GPUTRACE_OUTPUT=str(out),
                                                      GPUTRACE_SUMMARY="0"))))
    else:
        args = ["--log", "error", "--stacks", "off", "--stacks-all"] if how == "option" else []
        env = both if how == "option" else dict(both, GPUTRACE_LOG="error")
        p = gputrace(["run", "--no-summary", "-o", out, *args, "--", STACK_APP, 2], tmp_path,
                     env=gt_env(sim_env({} if how == "option" else env)))
    assert p.returncode == 0, p.stderr
    assert p.stderr == b""
    assert not [e for e in events(load_exact(out), ph="X") if "stack" in (e.get("args") or {})]


def test_a_forked_child_names_its_own_callers(tmp_path):
    """A child forked after the parent's stacks were taken and named traces with stacks
    of its own: the stack table's locks are let go by the tracer's one child handler
    (a pthread_atfork of the stack table's own was taken out by glibc's __cxa_finalize
    before the exit's last drain, which is when the parent names its stacks)."""
    need(STACK_APP)
    env = clean_env(sim_env({"GPUTRACE_STACKS_ALL": "1", "LD_PRELOAD": PRELOAD,
                             "GPUTRACE_OUTPUT": str(tmp_path / "t-%p.json"),
                             "GPUTRACE_SUMMARY": "0"}))
    r = subprocess.run([str(STACK_APP), "2", "fork"], env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"stack_app: 2 steps ok\n"
    traces = sorted((load_exact(f) for f in tmp_path.glob("t-*.json")),
                    key=lambda t: len(api_spans(t, VERSION)) + len(events(t, ph="X", name=LAUNCH)))
    assert len(traces) == 2
    child, parent = traces
    assert len(events(child, ph="X", name=LAUNCH)) == 0  # none of the parent's
    assert len(events(parent, ph="X", name=LAUNCH)) == 2
    for trace in (child, parent):
        stacks = [e["args"]["stack"] for e in api_spans(trace, VERSION)]
        assert len(stacks) == 1 and stacks[0].endswith(f";main;query_version;{VERSION}"), stacks


def test_stack_depth_limit(tmp_path):
    trace = run_app(tmp_path, "--stacks=2")
    for ev in api_spans(trace, LAUNCH):
        assert ev["args"]["stack"] == f"run_step;{LAUNCH}"


def test_no_stacks_unless_asked(tmp_path):
    trace = run_app(tmp_path)
    for ev in events(trace, ph="X"):
        assert "stack" not in (ev.get("args") or {})


STACK_DL = STACK_APP.parent / "stack_dl"
DL_LIBS = [(STACK_APP.parent / "libstackdlA.so", "alpha_launch"),
           (STACK_APP.parent / "libstackdlB.so", "beta_launch")]


def run_dl(tmp_path, wait_ms, libs):
    """stack_dl: each library dlopen'ed, one launch through it, dlclose'd;
    checkpoints every 10 ms. The launches' stacks, in order."""
    need(STACK_DL)
    out = tmp_path / f"dl{wait_ms}-{len(libs)}.json"
    p = gputrace(["run", "--no-summary", "--stacks", "--flush-ms", "10", "-o", out, "--",
                  STACK_DL, wait_ms, *[f"{lib}:{fn}" for lib, fn in libs]], tmp_path,
                 env=gt_env(sim_env()))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.decode().splitlines()
    assert lines[-1] == "stack_dl: ok", p.stdout
    where = [line.split(" at ")[1] for line in lines[:-1]]
    return [ev["args"]["stack"] for ev in api_spans(load_exact(out), LAUNCH)], where


@pytest.mark.parametrize("wait_ms", [0, 100])
def test_stacks_of_a_closed_library_keep_their_names(tmp_path, wait_ms):
    """A library closed before its launch's stack is written (wait 0: before
    the next checkpoint) keeps its names: they were bare addresses. The second
    library is loaded where the first was closed, at the same addresses: its
    launch was named after the first's functions (100 ms: the first already
    named at a checkpoint), or both shared the one stack."""
    stacks, _ = run_dl(tmp_path, wait_ms, DL_LIBS[:1])
    assert len(stacks) == 1
    assert stacks[0].endswith(f";main;alpha_launch;inner_static;{LAUNCH}"), stacks[0]
    stacks, where = run_dl(tmp_path, wait_ms, DL_LIBS)
    # the case under test: the second library's function where the first's was
    assert where[0] == where[1], where
    assert len(stacks) == 2
    assert stacks[0].endswith(f";main;alpha_launch;inner_static;{LAUNCH}"), stacks
    assert stacks[1].endswith(f";main;beta_launch;inner_static;{LAUNCH}"), stacks


STACK_MANY = STACK_APP.parent / "stack_many"
DROPPED_LINE = re.compile(r"  stacks dropped: (\d+) calls? without a call stack, the stack table "
                          r"full or the unwinder failing \(the trailer's stacks.dropped\)")


def dropped_lines(text):
    """The summary's counts of stacks dropped (its one line, when there are any)."""
    return [int(m.group(1)) for m in map(DROPPED_LINE.fullmatch, text.splitlines()) if m]


def run_many(tmp_path, launches):
    """stack_many: each launch from a stack of its own; the summary on stderr and in
    JSON. (run, trace, summary JSON)."""
    need(STACK_MANY)
    out, js = tmp_path / f"many{launches}.json", tmp_path / f"many{launches}-sum.json"
    p = gputrace(["run", "--stacks", "-o", out, "--summary-json", js, "--", STACK_MANY,
                  launches], tmp_path, env=gt_env(sim_env()), timeout=180)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"stack_many: {launches} launches ok\n".encode()
    return p, out, json.loads(js.read_text())


def test_stack_table_fills_up_and_says_what_it_dropped(tmp_path):
    """17000 launches from as many stacks: the table (16384) fills to its last slot
    before a stack is dropped (a new stack could take only the 64 slots after its own:
    hundreds went missing from 14000), and the calls without a stack are counted in
    the trailer, the summary's line and its JSON, gputrace summary and check of the
    file (only the trailer said it; the summary said "lost events: 0")."""
    p, out, js = run_many(tmp_path, 17000)
    trace = load_exact(out)
    launches = api_spans(trace, LAUNCH)
    assert len(launches) == 17000
    with_stack = [e for e in events(trace, ph="X") if "stack" in (e.get("args") or {})]
    assert len({e["args"]["stack"] for e in with_stack}) == 16384
    dropped = sum("stack" not in e["args"] for e in launches)
    assert trace["gputrace"]["stacks"] == {"unique": 16384, "dropped": dropped}
    assert dropped == 17000 - sum("stack" in e["args"] for e in launches) > 0
    assert dropped_lines(p.stderr.decode()) == [dropped]
    assert js["stacks"] == {"dropped": dropped}
    s = gputrace(["summary", "--json", "-", out], tmp_path)
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout)["stacks"] == {"dropped": dropped}
    s = gputrace(["summary", out], tmp_path)
    assert dropped_lines(s.stdout.decode()) == [dropped]
    c = gputrace(["check", out, "stacks.dropped == 0"], tmp_path)
    assert c.returncode == 1, c.stderr
    assert f"FAIL stacks.dropped == 0: {dropped}" in c.stdout.decode().splitlines()


def test_no_stack_dropped_no_line(tmp_path):
    """Every stack recorded: 0 in the summary JSON, no line, a check on it passes."""
    p, out, js = run_many(tmp_path, 100)
    assert load_exact(out)["gputrace"]["stacks"] == {"unique": 101, "dropped": 0}
    assert js["stacks"] == {"dropped": 0}
    assert "stacks dropped" not in p.stderr.decode()
    c = gputrace(["check", out, "stacks.dropped == 0"], tmp_path)
    assert c.returncode == 0, c.stdout + c.stderr
