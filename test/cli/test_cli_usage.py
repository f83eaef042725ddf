"""`gputrace` as a command: help, version, errors (exit 2 with one clear
line), options mapped onto GPUTRACE_* variables, the preload set up."""
import os
import re

import pytest

from cli_helpers import LIB, PLUGIN_DIR, SAN_PRELOAD, SCRIPT, TOOL, gputrace, gt_env, trace_files
from conftest import ROOT, need


def makefile_version():
    m = re.search(r"^VERSION\s*:=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    return m.group(1)


@pytest.mark.parametrize("args,status", [(["--help"], 0), (["help"], 0), (["-h"], 0),
                                         (["run", "--help"], 2), (["run", "-h"], 2)])
def test_help(tmp_path, args, status):
    # "gputrace run --help" ran no command: exit 2, so a CI step cannot pass on it
    p = gputrace(args, tmp_path)
    assert p.returncode == status
    out = p.stdout.decode()
    assert out.startswith("usage: gputrace run [options] [--] CMD [ARGS...]")
    for word in ("merge -o OUT", "summary", "--output", "--stacks", "--no-summary",
                 "--summary-json", "--plugin-path", "--buffer-kb", "--backends", "--graph-trace"):
        assert word in out
    assert p.stderr == b""


def test_version_is_the_builds(tmp_path):
    v = makefile_version()
    p = gputrace(["--version"], tmp_path)
    assert (p.returncode, p.stdout, p.stderr) == (0, f"gputrace {v}\n".encode(), b"")
    p = gputrace(["run", "--version"], tmp_path)
    assert (p.returncode, p.stdout) == (2, f"gputrace {v}\n".encode())
    need(TOOL)
    p = gputrace(["--version"], tmp_path, script=TOOL)
    assert p.stdout == f"gputrace-tool {v}\n".encode()


@pytest.mark.parametrize("args,message", [
    ([], "usage: gputrace run"),
    (["frobnicate"], "unknown command 'frobnicate'"),
    (["run"], "no command given"),
    (["run", "--"], "no command given"),
    (["run", "--bogus", "--", "true"], "unknown option '--bogus'"),
    (["run", "-o"], "option '-o' needs a value"),
    (["run", "--buffer-kb", "lots", "--", "true"], "--buffer-kb wants a number"),
    (["run", "--stacks=0", "--", "true"], "--stacks=DEPTH wants a depth of 1 or more"),
    (["run", "--no-summary=yes", "--", "true"], "'--no-summary' takes no value"),
    (["merge"], "no output file"),
    (["merge", "-o", "out.json"], "no input traces"),
    (["merge", "--bogus", "-o", "x.json", "a.json"], "unknown option '--bogus'"),
    (["summary"], "no trace file given"),
    (["summary", "--json"], "--json needs a file name"),
    (["summary", "a.json", "b.json"], "one trace at a time"),
])
def test_usage_errors_exit_2(tmp_path, args, message):
    p = gputrace(args, tmp_path)
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert message in err
    assert err.startswith("gputrace") or err.startswith("usage: gputrace")
    assert p.stdout == b""
    assert trace_files(tmp_path) == [], "a usage error must not trace anything"


def test_missing_library_is_reported(tmp_path):
    p = gputrace(["run", "--", "true"], tmp_path, env=gt_env({"GPUTRACE_LIB": "/nonexistent.so"}))
    assert p.returncode == 1
    assert p.stderr.decode() == "gputrace: GPUTRACE_LIB=/nonexistent.so: no such file\n"


def test_library_found_next_to_the_script(tmp_path):
    # From a checkout: scripts/../build/libgputrace.so, no GPUTRACE_LIB needed.
    if LIB != ROOT / "build" / "libgputrace.so" or SAN_PRELOAD:
        pytest.skip("the checkout default is build/libgputrace.so; this run tests another build")
    env = gt_env()
    del env["GPUTRACE_LIB"], env["GPUTRACE_TOOL"]
    p = gputrace(["run", "--no-summary", "--", "sh", "-c", 'echo "$LD_PRELOAD"'], tmp_path,
                 env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().strip() == str(LIB)
    p = gputrace(["summary", "--help"], tmp_path, env=env)
    assert p.returncode == 0 and p.stdout.startswith(b"usage: gputrace summary")


def test_command_not_found(tmp_path):
    p = gputrace(["run", "--", str(tmp_path / "no-such-program")], tmp_path)
    assert p.returncode == 127
    assert b"no-such-program" in p.stderr


def parse_env(stdout):
    return dict(line.split("=", 1) for line in stdout.decode().splitlines() if "=" in line)


def test_options_map_to_environment(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    p = gputrace(["run", "-o", "out/t-%p.json.gz", "--backends", "ze,plugins",
                  "--activities", "kernel,memcpy", "--buffer-kb", "256", "--flush-ms=50",
                  "--stacks=8", "--stacks-all", "--graph-trace", "--plugin-path", "plug",
                  "--kineto-cycle-ms", "500",
                  "--no-cupti", "--no-summary", "--summary-json", "s.json", "--log", "warn",
                  "--", "env"], sub)
    assert p.returncode == 0, p.stderr
    env = parse_env(p.stdout)
    real = os.path.realpath(sub)
    assert env["GPUTRACE_OUTPUT"] == f"{real}/out/t-%p.json.gz"  # absolute: children may cd
    assert env["GPUTRACE_SUMMARY_JSON"] == f"{real}/s.json"
    assert env["GPUTRACE_BACKENDS"] == "ze,plugins"
    assert env["GPUTRACE_ACTIVITIES"] == "kernel,memcpy"
    assert env["GPUTRACE_BUFFER_KB"] == "256"
    assert env["GPUTRACE_FLUSH_MS"] == "50"
    assert env["GPUTRACE_STACKS"] == "8"
    assert env["GPUTRACE_STACKS_ALL"] == "1"
    assert env["GPUTRACE_GRAPH_TRACE"] == "1"
    assert env["GPUTRACE_PLUGIN_PATH"] == "plug"
    assert env["GPUTRACE_KINETO_CYCLE_MS"] == "500"
    assert env["GPUTRACE_DISABLE_CUPTI"] == "1"
    assert env["GPUTRACE_SUMMARY"] == "0"
    assert env["GPUTRACE_LOG"] == "warn"


def test_defaults(tmp_path):
    p = gputrace(["run", "--stacks", "--", "env"], tmp_path)
    env = parse_env(p.stdout)
    assert env["GPUTRACE_OUTPUT"] == os.path.realpath(tmp_path) + "/gputrace-%e-%p.json"
    assert env["GPUTRACE_STACKS"] == "16"
    for var in ("GPUTRACE_SUMMARY", "GPUTRACE_STACKS_ALL", "GPUTRACE_SUMMARY_JSON"):
        assert var not in env


def test_preload_is_prepended(tmp_path):
    other = str(PLUGIN_DIR / "libclitest.so")  # any loadable library
    need(other)
    existing = " ".join(SAN_PRELOAD + [other])
    p = gputrace(["run", "--no-summary", "--", "sh", "-c", 'echo "$LD_PRELOAD"'], tmp_path,
                 env=gt_env({"LD_PRELOAD": existing}))
    assert p.returncode == 0, p.stderr
    # ours before the program's own; a sanitizer runtime stays first
    assert p.stdout.decode().split() == SAN_PRELOAD + [str(LIB), other]


def test_script_is_posix_sh():
    assert SCRIPT.read_text().startswith("#!/bin/sh\n")
    assert os.access(SCRIPT, os.X_OK)
