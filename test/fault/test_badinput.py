"""Bad input: every GPUTRACE_* variable with empty, huge, negative,
non-numeric and unknown values; output templates that do not expand;
broken plug-ins; vendor calls with invalid handles. Each gets at most one
stderr line naming what was wrong, the program is untouched, and the trace
(wherever it goes) holds every call."""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

from conftest import (APPS, GPUTRACE, gputrace_env, gputrace_lines, load_trace, need, run,
                      sim_env)
from faultkit import check_exact, compare, printed, prog, valid_trace

VALUES = {"empty": "", "huge": "9" * 40, "long": "x" * 100000, "negative": "-1",
          "text": "abc"}

# How many lines each variable/value gets: 0 where the value is valid.
VALID = {
    ("GPUTRACE_OUTPUT", "huge"), ("GPUTRACE_OUTPUT", "negative"), ("GPUTRACE_OUTPUT", "text"),
    ("GPUTRACE_SUMMARY_JSON", "huge"), ("GPUTRACE_SUMMARY_JSON", "negative"),
    ("GPUTRACE_SUMMARY_JSON", "text"),
    ("GPUTRACE_LIB", "empty"), ("GPUTRACE_LIB", "huge"), ("GPUTRACE_LIB", "long"),
    ("GPUTRACE_LIB", "negative"), ("GPUTRACE_LIB", "text"),
    ("GPUTRACE_TOOL", "empty"), ("GPUTRACE_TOOL", "huge"), ("GPUTRACE_TOOL", "long"),
    ("GPUTRACE_TOOL", "negative"), ("GPUTRACE_TOOL", "text"),
    # read by plug-ins only: with none loaded nothing parses it
    ("GPUTRACE_PLUGIN_CONFIG", "empty"), ("GPUTRACE_PLUGIN_CONFIG", "huge"),
    ("GPUTRACE_PLUGIN_CONFIG", "long"), ("GPUTRACE_PLUGIN_CONFIG", "negative"),
    ("GPUTRACE_PLUGIN_CONFIG", "text"),
}
VARS = ["GPUTRACE_OUTPUT", "GPUTRACE_BUFFER_KB", "GPUTRACE_BACKENDS", "GPUTRACE_DISABLE_CUPTI",
        "GPUTRACE_PLUGIN_PATH", "GPUTRACE_STACKS", "GPUTRACE_STACKS_ALL", "GPUTRACE_SUMMARY",
        "GPUTRACE_SUMMARY_JSON", "GPUTRACE_LOG", "GPUTRACE_ACTIVITIES", "GPUTRACE_GRAPH_TRACE",
        "GPUTRACE_FLUSH_MS", "GPUTRACE_PLUGIN_CONFIG", "GPUTRACE_LIB", "GPUTRACE_TOOL",
        "GPUTRACE_METRICS", "GPUTRACE_METRICS_MODE", "GPUTRACE_METRICS_HZ", "GPUTRACE_TELEMETRY",
        "GPUTRACE_TELEMETRY_HZ"]

APP = ["fault_threads", "many", "4", "2", "50"]


def traces_in(d):
    """The trace files written into d (a summary JSON is not one)."""
    out = []
    for f in sorted(pathlib.Path(d).iterdir()):
        try:
            t = json.loads(f.read_bytes())
        except (ValueError, UnicodeDecodeError, IsADirectoryError):
            continue
        if isinstance(t, dict) and "traceEvents" in t:
            out.append(f)
    return out


def run_with(tmp_path, env, expect_lines, name=None):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    e = {"GPUTRACE_OUTPUT": None}
    e.update(env)
    traced_env = {k: v for k, v in e.items() if v is not None}
    r = compare(tmp_path, [prog(APP[0])] + APP[1:], cwd=cwd, traced_env=traced_env)
    if "GPUTRACE_OUTPUT" not in traced_env:
        # the default template, in the program's directory
        os.unlink(r.trace_path) if os.path.exists(r.trace_path) else None
    # the summary (on by default, when GPUTRACE_SUMMARY is what is bad) aside
    lines = [l for l in gputrace_lines(r.traced.stderr) if not l.startswith("gputrace summary")]
    assert len(lines) == expect_lines, lines
    for line in lines:
        assert len(line) <= 1024, line  # one line, cut, not the value dumped whole
        if name:
            assert name in line, line
    return r, cwd


@pytest.mark.parametrize("kind", list(VALUES))
@pytest.mark.parametrize("var", VARS)
def test_every_variable_bad_value(tmp_path, var, kind):
    bad = (var, kind) not in VALID
    env = {var: VALUES[kind]}
    if var != "GPUTRACE_OUTPUT":
        env["GPUTRACE_OUTPUT"] = str(tmp_path / "cwd" / "t.json")
    r, cwd = run_with(tmp_path, env, 1 if bad else 0, name=var if bad else None)
    found = traces_in(cwd)
    assert len(found) == 1, found
    t = valid_trace(found[0])
    check_exact(t, printed(r.traced.stdout))


@pytest.mark.sanitize
@pytest.mark.parametrize("name", ["GPUTRACE_BOGUS", "GPUTRACE_", "GPUTRACE_OUTPUTX",
                                  "GPUTRACE_output"])
def test_unknown_variable(tmp_path, name):
    r, cwd = run_with(tmp_path, {name: "1", "GPUTRACE_OUTPUT": str(tmp_path / "cwd" / "t.json")},
                      1, name=name)
    check_exact(valid_trace(traces_in(cwd)[0]), printed(r.traced.stdout))


@pytest.mark.parametrize("tmpl,why", ids=["unknown", "unknown-dot", "lone-percent", "long-result", "long-template"], argvalues=[
    ("t-%q.json", "unknown code"),
    ("t-%.json", "unknown code"),
    ("t-%", "a lone % at the end"),
    ("%e" * 1000 + ".json", "expands past PATH_MAX with the real program name"),
    ("d/" * 2100 + "t.json", "longer than PATH_MAX as written"),
])
def test_output_template_that_does_not_expand(tmp_path, tmpl, why):
    """One line naming GPUTRACE_OUTPUT; the trace goes to the default name."""
    r, cwd = run_with(tmp_path, {"GPUTRACE_OUTPUT": tmpl}, 1, name="GPUTRACE_OUTPUT")
    found = traces_in(cwd)
    assert len(found) == 1 and found[0].name.startswith("gputrace-fault_threads-"), found
    check_exact(valid_trace(found[0]), printed(r.traced.stdout))


def test_output_name_component_too_long(tmp_path):
    """A file name over NAME_MAX after expansion: one line, program untouched."""
    r, cwd = run_with(tmp_path, {"GPUTRACE_OUTPUT": "t" + "%p" * 300 + ".json"}, 1)
    assert "too long" in gputrace_lines(r.traced.stderr)[0]


def shown(value):
    """A value as gputrace's line shows it: a tab or newline escaped (the line stays one)."""
    return value.replace("\t", "\\t").replace("\n", "\\n")


@pytest.mark.parametrize("var,value", [
    ("GPUTRACE_BUFFER_KB", " 8"), ("GPUTRACE_BUFFER_KB", "\t8"), ("GPUTRACE_BUFFER_KB", "\n8"),
    ("GPUTRACE_BUFFER_KB", "0x10"), ("GPUTRACE_FLUSH_MS", "\t50"),
    ("GPUTRACE_CAPTURE_COUNT", "\n2"), ("GPUTRACE_METRICS_HZ", "\t10"),
    ("GPUTRACE_DELAY", " 1"), ("GPUTRACE_DELAY", "\t1"), ("GPUTRACE_DELAY", "\n1"),
    ("GPUTRACE_DELAY", "0x10"), ("GPUTRACE_DELAY", "inf"), ("GPUTRACE_DELAY", "nan"),
    ("GPUTRACE_DURATION", "0x1p3"), ("GPUTRACE_DURATION", "infinity"),
])
def test_numbers_are_decimal_and_nothing_else(tmp_path, var, value):
    """README: a number is decimal digits. White space before it (a tab or newline as much
    as a blank), hex, inf and nan each get the one line, and the default is used: here the
    whole run traced (GPUTRACE_DELAY=0x10 was 16 s, and nothing was recorded)."""
    app = APPS / "ze_hello"
    need(app)
    r = run([app], env=sim_env({var: value}), tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    (line,) = gputrace_lines(r.stderr)
    assert line.startswith(f"gputrace: {var}='{shown(value)}' is not valid: expected "), line
    assert line.endswith("; using the default"), line
    trailer = load_trace(r.trace_path)["gputrace"]
    assert "capture" not in trailer and trailer["events_recorded"] > 0


# a value (bytes: some are not UTF-8) and how the line shows it: control characters
# escaped (\r as \r, as gputrace run's refusal of an option shows it), bytes that are
# not UTF-8 as \xNN, valid UTF-8 as it is, and the first 200 bytes, fewer rather than
# half a character
@pytest.mark.parametrize("value,want", [
    (b"12\r3\x1b[31m", "12\\r3\\x1b[31m"),
    (b"1\xff\xfe2\xc3\xa9\xe2\x82", "1\\xff\\xfe2\xe9\\xe2\\x82"),
    (b"\xed\xa0\x80\xc0\xaf", "\\xed\\xa0\\x80\\xc0\\xaf"),  # a surrogate, an overlong
    (b"a" * 199 + "\xe9".encode() + b"tail", "a" * 199),
])
@pytest.mark.parametrize("how", ["preload", "run"])
def test_bad_value_shown_as_one_clean_line(tmp_path, value, want, how):
    """A refused value's line is one line of valid UTF-8 whatever the value holds, the same
    under plain LD_PRELOAD and gputrace run (which says it once for the run). Until
    2026-12-07 bytes that are not UTF-8 were printed raw, the 200-byte cut could halve a
    character, and a CR was \\x0d there but \\r in the run's refusal of an option."""
    app = APPS / "ze_hello"
    need(app)
    env = {"GPUTRACE_BUFFER_KB": os.fsdecode(value)}
    if how == "preload":
        r = run([app], env=sim_env(env), tmp_path=tmp_path)
        err = r.stderr
    else:
        r = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o", str(tmp_path / "t.json"),
                            "--", str(app)], env=gputrace_env(sim_env(env)), capture_output=True,
                           timeout=60)
        err = r.stderr
    assert r.returncode == 0, err
    text = err.decode()  # strict: valid UTF-8
    assert [l for l in text.splitlines() if l.startswith("gputrace")] == [
        f"gputrace: GPUTRACE_BUFFER_KB='{want}' is not valid: expected kilobytes per thread, "
        "an integer from 4 to 1048576; using the default"]


def test_unknown_name_shown_as_one_clean_line(tmp_path):
    """An environment's name may hold any byte but '=': an unknown GPUTRACE_* name with a
    newline, an escape sequence and a byte that is not UTF-8 is one line, escaped as a bad
    value is (until 2026-12-07 printed raw: the newline split the line)."""
    app = APPS / "ze_hello"
    need(app)
    r = run([app], env=sim_env({os.fsdecode(b"GPUTRACE_X\x1b[31m\xff\nY"): "1"}),
            tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.decode().splitlines() if l.startswith("gputrace")]
    assert len(lines) == 1 and lines[0].startswith(
        "gputrace: unknown variable GPUTRACE_X\\x1b[31m\\xff\\nY: known are "), lines


@pytest.mark.parametrize("var,value,ok", [
    ("GPUTRACE_LOSSLESS", "0.0", True), ("GPUTRACE_LOSSLESS", "0.000", True),
    ("GPUTRACE_LOSSLESS", "1.0000", True), ("GPUTRACE_LOSSLESS", "1.0001", False),
    ("GPUTRACE_LOSSLESS", "0.0004", False),
    ("GPUTRACE_WATCHDOG", "30.0000", True), ("GPUTRACE_WATCHDOG", "2.5001", False),
    ("GPUTRACE_KINETO_CYCLE_MS", "00", True), ("GPUTRACE_KINETO_CYCLE_MS", "0100", True),
    ("GPUTRACE_KINETO_CYCLE_MS", "OFF", True), ("GPUTRACE_KINETO_CYCLE_MS", "050", False),
    ("GPUTRACE_CAPTURE_SIGNAL", "00", True),
    ("GPUTRACE_FLIGHT_RECORDER", "64m", True), ("GPUTRACE_FLIGHT_RECORDER", "30S", True),
    ("GPUTRACE_FLIGHT_RECORDER", "500MS", True), ("GPUTRACE_FLIGHT_RECORDER", "1.5mb", False),
])
def test_a_number_is_a_number_and_a_unit_any_case(tmp_path, var, value, ok):
    """README: 0 is 0 however many zeros it has (00, 0.0), a decimal past what is kept may
    be a 0 (1.0000 is 1.000), and a unit is taken in any case (64m as 64MB, 30S as 30s)."""
    app = APPS / "ze_hello"
    need(app)
    r = run([app], env=sim_env({var: value}), tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    refused = [l for l in gputrace_lines(r.stderr) if " is not valid: " in l]
    assert len(refused) == (0 if ok else 1), refused
    assert all(l.startswith(f"gputrace: {var}='{value}' is not valid") for l in refused)


def test_broken_plugin_directory(tmp_path):
    """Each broken file gets its one line (a directory named *.so is not a
    file: passed over); the program and its trace are fine. The truncated
    copy of a real shared object is the dangerous one: mapped as its headers
    say, it would raise SIGBUS in the program."""
    d = tmp_path / "plugins"
    d.mkdir()
    (d / "empty.so").write_bytes(b"")
    (d / "text.so").write_text("not an ELF file\n")
    (d / "truncated.so").write_bytes(open(prog("plugin_noregister.so"), "rb").read()[:700])
    shutil.copy(prog("plugin_noregister.so"), d / "noregister.so")
    (d / "dir.so").mkdir()
    os.symlink(d / "missing-target.so", d / "dangling.so")
    (d / "README").write_text("not a plug-in, not a .so: ignored\n")
    r, cwd = run_with(tmp_path, {"GPUTRACE_PLUGIN_PATH": str(d),
                                 "GPUTRACE_OUTPUT": str(tmp_path / "cwd" / "t.json")}, 5)
    lines = gputrace_lines(r.traced.stderr)
    for f in ["empty.so", "text.so", "truncated.so", "noregister.so", "dangling.so"]:
        assert len([l for l in lines if f in l]) == 1, (f, lines)
    check_exact(valid_trace(traces_in(cwd)[0]), printed(r.traced.stdout))


@pytest.mark.sanitize
def test_invalid_handles_get_the_vendors_errors(tmp_path):
    """ze_errors prints each call's result: traced, every one is the same."""
    app = APPS / "ze_errors"
    need(app)
    r = compare(tmp_path, [app])
    assert r.traced.returncode == 0
    out = r.traced.stdout.decode().splitlines()
    assert len(out) >= 10
    t = r.trace
    # each call is a span carrying the vendor's own result, in the program's
    # order; the calls it does not print (set-up) all succeeded
    said = [int(l.rsplit("(0x", 1)[1].split(")")[0], 16) for l in out if "(0x" in l]
    results = [e["args"]["result"] & 0xffffffff for e in t["traceEvents"]
               if e.get("cat") == "ze_api"]
    assert len(results) == t["gputrace"]["events_recorded"] and not t["gputrace"]["events_lost"]
    it = iter(results)
    for want in said:
        for got in it:
            if got == want:
                break
            assert got == 0, (got, want)
        else:
            raise AssertionError(f"result 0x{want:x} not in the trace")
    assert sum(1 for x in said if x) >= 10
