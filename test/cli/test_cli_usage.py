"""`gputrace` as a command: help, version, errors (exit 2 with one clear
line), options mapped onto GPUTRACE_* variables, the preload set up."""
import os
import pathlib
import re
import subprocess

import pytest

from cli_helpers import LIB, PLUGIN_DIR, SCRIPT, TOOL, gputrace, gt_env, trace_files
from conftest import ROOT, SAN_PRELOAD, need


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
                 "--summary-json", "--plugin-path", "--buffer-kb", "--overflow-mb", "--backends",
                 "--graph-trace",
                 "--lossless"):
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
    (["run", "--metrics-mode", "--", "true"], "option '--metrics-mode' needs a value"),
    (["run", "--buffer-kb", "lots", "--", "true"],
     "--buffer-kb 'lots' is not valid: expected kilobytes per thread, an integer from 4 to "
     "1048576"),
    (["run", "--overflow-mb", "-1", "--", "true"],
     "--overflow-mb '-1' is not valid: expected megabytes for the whole process, an integer "
     "from 0 (off) to 65536"),
    (["run", "--backends", "opencl", "--", "true"],
     "--backends 'opencl' is not valid: expected a comma list of cupti, ze, plugins, all, or"),
    (["run", "--flush-ms=5", "--", "true"], "--flush-ms '5' is not valid"),
    (["run", "--flush-ms", "\t50", "--", "true"], "--flush-ms '\\t50' is not valid"),
    (["run", "--delay", "0x10", "--", "true"], "--delay '0x10' is not valid"),
    (["run", "--stacks=-1", "--", "true"],
     "--stacks DEPTH must be a number of frames from 1 to 64, on, or off (or 0), not '-1'"),
    (["run", "--stacks=100", "--", "true"],
     "--stacks DEPTH must be a number of frames from 1 to 64, on, or off (or 0), not '100'"),
    (["run", "--stacks", "65", "--", "true"], "not '65'"),
    (["run", "-o", "t-%q.json", "--", "true"],
     "-o 't-%q.json' is not valid: expected a file path template"),
    (["run", "-o", "no-such-dir/t.json", "--", "true"],
     "no-such-dir/t.json: cannot write in"),
    (["run", "-o", "t-%p.json", "--per-process", "d", "--", "true"],
     "give either --per-process DIR or an -o template with %p"),
    (["run", "--summary-json", "s-%q.json", "--", "true"], "--summary-json 's-%q.json'"),
    # stdout is CMD's: "-o -" made a file named "-"
    (["run", "-o", "-", "--", "true"],
     "-o - is not taken: CMD's stdout is its own; give a file name template, or /dev/stdout"),
    (["run", "--output=-", "--", "true"], "--output - is not taken"),
    (["run", "--summary-json", "-", "--", "true"],
     "--summary-json - is not taken: CMD's stdout is its own; give a file name, or "
     "/dev/stdout for the summary once the run is over"),
    (["run", "--junit=-", "--check", "lost == 0", "--", "true"],
     "--junit - is not taken: CMD's stdout is its own; give a file name, or /dev/stdout for "
     "the checks' report once the run is over"),
    (["run", "--markdown", "-", "--", "true"], "--markdown - is not taken"),
    (["run", "--no-summary=yes", "--", "true"], "'--no-summary' takes no value"),
    (["merge"], "no output file"),
    (["merge", "-o", "out.json"], "no input traces"),
    (["merge", "--bogus", "-o", "x.json", "a.json"], "unknown option '--bogus'"),
    (["merge", "-o", ".", "a.json"], "-o . is a folder: give the merged trace's file name"),
    (["summary"], "no trace file given"),
    (["summary", "--json"], "--json needs a file name"),
    (["summary", "a.json", "b.json"], "one trace at a time"),
    # a name too long for the option buffer was refused as "unknown option ''"
    (["run", "--" + "x" * 70 + "=1", "--", "true"], "unknown option '--" + "x" * 61 + "'"),
    # an empty file name is no file: refused as a missing one, not "cannot write :"
    # after the work (exit 1, or 2 after check's verdicts)
    (["summary", "--json=", "a.json"], "--json needs a file name ('-' for stdout)"),
    (["summary", "--json", "", "a.json"], "--json needs a file name ('-' for stdout)"),
    (["report", "-o", "", "a.json"], "gputrace report: -o needs a file name"),
    (["report", "--output=", "a.json"], "gputrace report: --output needs a file name"),
    (["check", "--junit=", "s.json", "lost == 0"], "gputrace check: --junit needs a file name"),
    (["check", "--markdown", "", "s.json", "lost == 0"],
     "gputrace check: --markdown needs a file name"),
    (["diff", "--json=", "a.json", "--", "b.json"], "gputrace diff: --json= needs a file name"),
    (["diff", "--junit=", "a.json", "--", "b.json"], "gputrace diff: --junit needs a file name"),
    (["diff", "--markdown=", "a.json", "--", "b.json"],
     "gputrace diff: --markdown needs a file name"),
])
def test_usage_errors_exit_2(tmp_path, args, message):
    # the command, if it ran, would leave a file
    cmd = [w for a in args for w in (["touch", tmp_path / "ran"] if a == "true" else [a])]
    p = gputrace(cmd, tmp_path, env=gt_env({"TMPDIR": str(tmp_path)}))
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert message in err
    assert err.startswith("gputrace") or err.startswith("usage: gputrace")
    assert p.stdout == b""
    # nothing was run, and nothing left: no trace, no folder, no state
    assert list(tmp_path.iterdir()) == [], "a usage error must not run or leave anything"


@pytest.mark.parametrize("args,shown", [
    (["--metrics-hz", "12\nx"], "--metrics-hz '12\\nx' is not valid"),
    (["--log", "bad\x1bz"], "--log 'bad\\x1bz' is not valid"),
    (["--stacks=a\rb"], "not 'a\\rb'"),
    (["-o", "a%q\nb.json"], "-o 'a%q\\nb.json' is not valid"),
    (["--checks", "no\nfile"], "--checks: cannot read 'no\\nfile'"),
])
def test_a_refused_value_is_one_line(tmp_path, args, shown):
    # a value's newline (or other control character) was printed raw: the
    # "one clear line" came out as two, an escape sequence reached the terminal
    p = gputrace(["run"] + args + ["--", "touch", tmp_path / "ran"], tmp_path)
    err = p.stderr.decode()
    assert p.returncode == 2, err
    lines = err.splitlines()
    assert len(lines) == 2 and lines[1] == "Try 'gputrace --help'.", err
    assert lines[0].startswith("gputrace: ") and shown in lines[0], err
    assert not any(c < " " or c == "\x7f" for c in lines[0]), err
    assert not (tmp_path / "ran").exists()


def test_conflicts_with_an_environment_template_name_the_variable(tmp_path):
    """A GPUTRACE_OUTPUT template of the environment is named as such, never as an -o
    that was not given, and without the --help hint (no option was wrong)."""
    p = gputrace(["run", "--per-process", "d", "--", "touch", tmp_path / "ran"], tmp_path,
                 env=gt_env({"TMPDIR": str(tmp_path), "GPUTRACE_OUTPUT": "t-%p.json"}))
    assert p.returncode == 2
    assert p.stderr.decode() == ("gputrace: give either --per-process DIR or a GPUTRACE_OUTPUT "
                                 "template with %p, not both\n")
    assert list(tmp_path.iterdir()) == []


def test_missing_library_is_reported(tmp_path):
    p = gputrace(["run", "--", "true"], tmp_path, env=gt_env({"GPUTRACE_LIB": "/nonexistent.so"}))
    assert p.returncode == 1
    assert p.stderr.decode() == "gputrace: GPUTRACE_LIB=/nonexistent.so: no such file\n"


@pytest.mark.parametrize("what", ["text", "other-library"])
def test_library_that_is_not_gputrace_is_reported(tmp_path, what):
    """A GPUTRACE_LIB that is not gputrace's library: one line, nothing run (ld.so would
    refuse it in every process, and the run would end saying that none made a GPU
    call)."""
    lib = tmp_path / "lib.so"
    if what == "text":
        lib.write_text("not a library\n")
    else:
        lib.write_bytes((PLUGIN_DIR / "libclitest.so").read_bytes())  # a library, not ours
    p = gputrace(["run", "--", "sh", "-c", "echo ran"], tmp_path,
                 env=gt_env({"GPUTRACE_LIB": str(lib)}))
    assert (p.returncode, p.stdout) == (1, b"")
    assert p.stderr.decode() == \
        f"gputrace: GPUTRACE_LIB={lib}: not a gputrace library (libgputrace.so)\n"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["lib.so"]


def test_tool_that_is_not_there_is_named_as_set(tmp_path):
    p = gputrace(["summary", "x.json"], tmp_path, env=gt_env({"GPUTRACE_TOOL": "/nonexistent"}))
    assert p.returncode == 1
    assert p.stderr.decode() == "gputrace: GPUTRACE_TOOL=/nonexistent: not a program\n"


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


@pytest.mark.parametrize("cmd,status,reason", [("/nonexistent", 127, "not found"),
                                               ("no-such-program-anywhere", 127, "not found"),
                                               ("./not-executable", 126, "Permission denied"),
                                               ("./folder", 126, "is a folder, not a program")])
def test_command_not_found(tmp_path, cmd, status, reason):
    (tmp_path / "not-executable").write_text("echo hi\n")
    (tmp_path / "folder").mkdir()
    p = gputrace(["run", "--", cmd, "arg"], tmp_path, env=gt_env({"TMPDIR": str(tmp_path)}))
    assert p.returncode == status
    # as a shell says it, and nothing else: no script path, no line number
    assert p.stderr.decode() == f"gputrace: {cmd}: {reason}\n"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["folder", "not-executable"]


def test_symlinked_command_finds_its_library(tmp_path):
    # a bin/ folder on PATH with a link to the checkout's command (a link to a link)
    if LIB != ROOT / "build" / "libgputrace.so" or SAN_PRELOAD:
        pytest.skip("the checkout default is build/libgputrace.so; this run tests another build")
    (tmp_path / "bin").mkdir()
    os.symlink(SCRIPT, tmp_path / "gputrace-link")
    os.symlink(tmp_path / "gputrace-link", tmp_path / "bin" / "gputrace")
    env = gt_env({"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"})
    del env["GPUTRACE_LIB"], env["GPUTRACE_TOOL"]
    p = subprocess.run(["gputrace", "run", "--no-summary", "--", "sh", "-c",
                        'echo "$LD_PRELOAD"'], cwd=tmp_path, env=env, capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().strip() == str(LIB)


def parse_env(stdout):
    return dict(line.split("=", 1) for line in stdout.decode().splitlines() if "=" in line)


def test_options_map_to_environment(tmp_path):
    sub = tmp_path / "sub"
    (sub / "out").mkdir(parents=True)
    p = gputrace(["run", "-o", "out/t-%p.json.gz", "--backends", "ze,plugins",
                  "--activities", "kernel,memcpy", "--buffer-kb", "256", "--flush-ms=50",
                  "--stacks", "8", "--stacks-all", "--graph-trace", "--plugin-path", "plug",
                  "--kineto-cycle-ms", "500",
                  "--no-cupti", "--no-summary", "--summary-json", "s.json", "--log", "warn",
                  "--", "env"], sub, env=gt_env({"TMPDIR": str(tmp_path)}))
    assert p.returncode == 0, p.stderr
    env = parse_env(p.stdout)
    real = os.path.realpath(sub)
    # a template with %p: each process names its own file (absolute: children may cd)
    assert env["GPUTRACE_OUTPUT"] == f"{real}/out/t-%p.json.gz"
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
    assert env["GPUTRACE_LOG"] == "warn"
    # the summary is the run's to make: the processes print none of their own
    assert "GPUTRACE_SUMMARY" not in env and "GPUTRACE_SUMMARY_JSON" not in env
    state = env["GPUTRACE_RUN_STATE"]
    assert state.startswith(f"{tmp_path}/gputrace-run-")
    assert not os.path.exists(state), "the run's state folder is removed at the end"


def test_defaults(tmp_path):
    p = gputrace(["run", "--stacks", "--", "env"], tmp_path)
    env = parse_env(p.stdout)
    # one trace per run, gputrace-%e-%t.json; the processes write into its parts folder
    m = re.fullmatch(re.escape(os.path.realpath(tmp_path)) +
                     r"/gputrace-env-\d{8}T\d{6}Z\.json\.parts/%e-%p\.json",
                     env["GPUTRACE_OUTPUT"])
    assert m, env["GPUTRACE_OUTPUT"]
    assert env["GPUTRACE_STACKS"] == "16"
    for var in ("GPUTRACE_SUMMARY", "GPUTRACE_STACKS_ALL", "GPUTRACE_SUMMARY_JSON"):
        assert var not in env
    assert list(tmp_path.iterdir()) == []  # env recorded nothing: no parts folder left


@pytest.mark.parametrize("args, depth", [(["--stacks", "on"], "16"), (["--stacks", "off"], "off"),
                                         (["--stacks=0"], "0"), (["--stacks", "8"], "8"),
                                         (["--stacks=OFF"], "OFF"),
                                         (["--stacks", "true"], "true"),
                                         (["--stacks", "No"], "No"),
                                         (["--stacks", "FALSE"], "FALSE")])
def test_stacks_takes_what_its_variable_takes(tmp_path, args, depth):
    """--stacks on / off / 0, as GPUTRACE_STACKS takes them (the next word 'on' was run
    as the command; --stacks=0 refused where GPUTRACE_STACKS=0 is off; the next word
    'true' was run as the command too, exit 0 without the program)."""
    p = gputrace(["run", *args, "--", "env"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert parse_env(p.stdout)["GPUTRACE_STACKS"] == depth


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


@pytest.mark.parametrize("args,line", [
    (["summary", "--json", "T.json", "T.json"],
     "gputrace summary: --json T.json would overwrite its input T.json: give another file"),
    (["summary", "--json=./T.json", "T.json"],
     "gputrace summary: --json ./T.json would overwrite its input T.json: give another file"),
    (["summary", "--json", "U.json", "T.json"],
     "gputrace summary: --json U.json: it holds a trace, which is never written over; give "
     "another file"),
    (["report", "-o", "T.json", "T.json"],
     "gputrace report: -o T.json would overwrite its input T.json: give another file"),
    (["check", "--junit", "S.json", "S.json", "lost == 0"],
     "gputrace check: --junit S.json would overwrite its input S.json: give another file"),
    (["check", "--markdown", "S.json", "S.json", "lost == 0"],
     "gputrace check: --markdown S.json would overwrite its input S.json: give another file"),
    (["diff", "S.json", "--", "S.json", "--json=S.json"],
     "gputrace diff: --json S.json would overwrite its input S.json: give another file"),
    (["diff", "T.json", "--", "U.json", "--markdown", "U.json"],
     "gputrace diff: --markdown U.json would overwrite its input U.json: give another file"),
    (["diff", "T.json", "--", "U.json", "--junit", "T.json"],
     "gputrace diff: --junit T.json would overwrite its input T.json: give another file"),
])
def test_output_that_is_an_input_is_refused(tmp_path, args, line):
    """An output naming the command's own input overwrote it (the summary JSON
    over its trace, a report over its summary): one line, exit 2, the inputs
    untouched."""
    fixture = ROOT / "test" / "cli" / "fixtures" / "proc_a.json"
    for name in ("T.json", "U.json"):
        (tmp_path / name).write_bytes(fixture.read_bytes())
    p = gputrace(["summary", "--json", "S.json", "T.json"], tmp_path)
    assert p.returncode == 0, p.stderr
    before = {f: (tmp_path / f).read_bytes() for f in os.listdir(tmp_path)}
    p = gputrace(args, tmp_path)
    assert (p.returncode, p.stderr.decode(), p.stdout) == (2, line + "\n", b"")
    assert {f: (tmp_path / f).read_bytes() for f in os.listdir(tmp_path)} == before


def test_a_checks_file_with_no_check_is_one_line(tmp_path):
    """A --checks FILE of only comments and blank lines (every gate commented out): one
    line naming it, exit 2, CMD not run; it was gputrace check's "no checks given" and
    the whole usage of gputrace check, under gputrace run too."""
    (tmp_path / "gates.txt").write_text("# kernel[\"gemm*\"].count == 40\n\n   \n")
    p = gputrace(["run", "--checks", "gates.txt", "--", "touch", tmp_path / "ran"], tmp_path,
                 env=gt_env({"TMPDIR": str(tmp_path)}))
    line = ("gputrace check: no checks given: --checks gates.txt holds none (only blank lines "
            "and comments)\n")
    assert (p.returncode, p.stderr.decode(), p.stdout) == (2, line, b"")
    assert sorted(f.name for f in tmp_path.iterdir()) == ["gates.txt"]
    fixture = ROOT / "test" / "cli" / "fixtures" / "proc_a.json"
    p = gputrace(["check", fixture, "-f", "gates.txt"], tmp_path)
    assert (p.returncode, p.stderr.decode(), p.stdout) == (2, line, b"")


def test_summary_and_report_take_a_trace_after_dashdash(tmp_path):
    """`--` ends the options of summary and report, as of merge and check: a trace named
    -x.json was refused as "unknown option '--'"."""
    fixture = ROOT / "test" / "cli" / "fixtures" / "proc_a.json"
    (tmp_path / "-x.json").write_bytes(fixture.read_bytes())
    p = gputrace(["summary", "--json", "s.json", "--", "-x.json"], tmp_path)
    assert (p.returncode, p.stderr) == (0, b""), p.stderr
    assert p.stdout.startswith(b"gputrace summary: -x.json\n")
    assert (tmp_path / "s.json").exists()
    p = gputrace(["report", "-o", "r.html", "--", "-x.json"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    p = gputrace(["summary", "--", "-x.json", "--json"], tmp_path)
    assert p.returncode == 2
    assert "one trace at a time (merge them first): '--json'" in p.stderr.decode()
