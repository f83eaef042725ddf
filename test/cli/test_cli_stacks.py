"""--stacks: the host call stack of launches (all API calls with
--stacks-all) in the span's args as "outer;...;inner;API", naming the
calling functions of a test program (test/cli/stack_app.c) that runs
Level Zero calls on the simulated device."""
import pathlib

import pytest

from cli_helpers import STACK_APP, gputrace, gt_env, load_exact
from conftest import ZE_SIM, events, need, sim_env

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


def test_stack_depth_limit(tmp_path):
    trace = run_app(tmp_path, "--stacks=2")
    for ev in api_spans(trace, LAUNCH):
        assert ev["args"]["stack"] == f"run_step;{LAUNCH}"


def test_no_stacks_unless_asked(tmp_path):
    trace = run_app(tmp_path)
    for ev in events(trace, ph="X"):
        assert "stack" not in (ev.get("args") or {})
