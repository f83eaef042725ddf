"""`gputrace run`: the program's stdin/stdout/stderr/exit status pass
through untouched; the summary on stderr and in JSON equals the sums over
the trace; `gputrace summary FILE` agrees with the exit-time summary;
.gz traces round-trip. Events come from test/cli/cliplug.c, a plug-in that
records a known set of spans in every process it is loaded into."""
import gzip
import zlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from cli_helpers import (PLUGIN_DIR, SCRIPT, check_summary_json, expected_summary, gputrace,
                         gt_env, load_exact, plugin_env, trace_files)
from conftest import (SANITIZE, TSAN_FORK_THREAD, clean_env, default_signals, gputrace_lines, need,
                      strip_gputrace)

# shell builtins only: one process, one trace file
PROGRAM = ["sh", "-c", 'while read -r l; do echo "$l"; done; echo "to stderr" >&2; exit 7']


def test_output_and_exit_status_pass_through(tmp_path):
    plain = subprocess.run(PROGRAM, input=b"hello\nworld\n", capture_output=True,
                           env=clean_env(), timeout=30)
    traced = gputrace(["run", "--"] + PROGRAM, tmp_path, input=b"hello\nworld\n")
    assert (traced.returncode, traced.stdout) == (plain.returncode, plain.stdout) == \
        (7, b"hello\nworld\n")
    assert strip_gputrace(traced.stderr) == plain.stderr.decode() == "to stderr\n"
    # a shell that makes no GPU call records nothing: no file, and one line saying so
    assert list(tmp_path.iterdir()) == []
    assert gputrace_lines(traced.stderr) == [
        "gputrace: no process of the run recorded anything (no GPU API call gputrace "
        "knows): no trace written"]


def test_default_output_is_one_file_per_run(tmp_path):
    # gputrace-%e-%t.json: the command's name and the run's start time
    p, _ = run_plugin(tmp_path, "--no-summary", name=None,
                      program=["sh", "-c", "sh -c true; sh -c true"])
    assert p.returncode == 0, p.stderr
    files = trace_files(tmp_path)
    assert len(files) == 1 and re.fullmatch(r"gputrace-sh-\d{8}T\d{6}Z\.json", files[0].name)
    assert [f.name for f in tmp_path.iterdir()] == [files[0].name]  # no parts left
    # three shells, each recording the plug-in's spans: one timeline
    t = load_exact(files[0])
    assert t["gputrace"]["merged"] is True and len(t["gputrace"]["inputs"]) == 3
    assert len([e for e in t["traceEvents"] if e.get("name") == "cli_kernel"]) == 9


def test_runs_started_together_with_one_output_keep_their_own_traces(tmp_path):
    """Four runs with the same -o at once (ranks, CI shards): each its own folder of
    parts, each its own trace, .1 .. .3 (one shared folder: the first run to end
    removed it under the others' processes, and a run merged another's traces)."""
    need(PLUGIN_DIR / "libclitest.so")
    # each run's shell records, then waits for all four to have started: they overlap
    gate = tmp_path / "gate"
    gate.mkdir()
    prog = ('sh -c true; : > %s/$$; set -- %s/*; while [ $# -lt 4 ]; do sleep 0.02; '
            'set -- %s/*; done; sh -c true; echo $$' % (gate, gate, gate))
    runs = [subprocess.Popen([str(SCRIPT), "run", "--no-summary", "-o", "t.json",
                              "--plugin-path", str(PLUGIN_DIR), "--", "sh", "-c", prog],
                             cwd=str(tmp_path), env=plugin_env(3), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE) for _ in range(4)]
    outs = [r.communicate(timeout=60) for r in runs]
    assert [r.returncode for r in runs] == [0] * 4, [o[1] for o in outs]
    files = sorted(f.name for f in tmp_path.iterdir() if f.name != "gate")
    assert files == ["t.1.json", "t.2.json", "t.3.json", "t.json"], (files, outs)
    inputs = {}
    for f in files:
        t = load_exact(tmp_path / f)
        inputs[f] = {int(i["gputrace"]["pid"]): Path(i["path"]).parent.name for i in t["gputrace"]["inputs"]}
        # one run's parts alone, each process's three spans of the plug-in's kernel
        assert len(set(inputs[f].values())) == 1, (f, inputs[f])
        assert len([e for e in t["traceEvents"] if e.get("name") == "cli_kernel"]) == \
            3 * len(inputs[f]), f
    assert len({d for i in inputs.values() for d in i.values()}) == 4
    assert sum(map(len, inputs.values())) == len({p for i in inputs.values() for p in i})
    # each run's own shell in the trace it named
    for out, err in outs:
        said = re.findall(r"the trace is \S+/(t\.\d\.json)", err.decode())
        assert int(out) in inputs[said[0] if said else "t.json"], (out, err)


def test_a_per_process_folder_that_takes_no_files_is_refused_before_the_run(tmp_path):
    """/proc: access() says yes to root, but no file can be made there (every process's
    trace failed, and with them the run's)."""
    p = gputrace(["run", "-o", "t.json", "--per-process", "/proc", "--", "true"], tmp_path)
    assert p.returncode == 2
    assert gputrace_lines(p.stderr)[0].startswith(
        "gputrace: --per-process /proc: cannot write in /proc: "), p.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(SANITIZE == "thread", reason="ThreadSanitizer's own start-up does not "
                    "survive ulimit -f (test/fault/test_pressure.py)")
def test_processes_that_could_not_write_their_traces_are_counted(tmp_path):
    """A process that recorded but whose file could not be written (here: ulimit -f) says
    why; the run then counts it, not "no process recorded anything"."""
    p, _ = run_plugin(tmp_path, program=["sh", "-c", "ulimit -f 1; exec sh -c 'sh -c true'"])
    assert p.returncode == 0, p.stderr
    lines = gputrace_lines(p.stderr)
    assert any("File too large; tracing stops" in line for line in lines), lines
    # the shell before its exec, the one after, its child
    assert lines[-1] == ("gputrace: 3 processes of the run recorded GPU calls but could not "
                         "write their traces (the reason is above): no trace written"), lines


@pytest.mark.parametrize("opts, why", [
    (["--backends", "ze"], ", or none through --backends ze"),
    (["--activities", "overhead"], ", or none of the kinds in --activities overhead")])
def test_nothing_recorded_names_the_settings_that_may_be_why(tmp_path, opts, why):
    """The plug-in's calls were made, but the run's own settings left them out: the line
    says so, not only "no GPU API call gputrace knows"."""
    p, _ = run_plugin(tmp_path, *opts, program=["sh", "-c", "true"])
    assert p.returncode == 0, p.stderr
    assert gputrace_lines(p.stderr) == [
        f"gputrace: no process of the run recorded anything (no GPU API call gputrace knows"
        f"{why}): no trace written"]


def test_settings_refused_are_not_named_as_in_effect(tmp_path):
    """A GPUTRACE_* value the library refused (one line: the default is used) is not
    what the run's later lines name: the advice after ring_full losses names the ring
    the processes had (4096 KiB, not the refused 3), and the line for a run that
    recorded nothing names no --backends or --activities that were not in effect; a
    valid one from the environment is named as the variable, not as an option."""
    p = gputrace(["run", "-o", "t.json", "--overflow-mb", "0", "--plugin-path", PLUGIN_DIR, "--",
                  "sh", "-c", "true"], tmp_path,
                 env=plugin_env(70000, {"GPUTRACE_BUFFER_KB": "3"}))
    assert p.returncode == 0, p.stderr
    lines = gputrace_lines(p.stderr)
    assert lines[0].startswith("gputrace: GPUTRACE_BUFFER_KB='3' is not valid"), lines
    err = p.stderr.decode()
    assert "rerun with --buffer-kb 16384 (now 4096 KiB per thread)" in err, err
    for var, value in (("GPUTRACE_BACKENDS", "foo"), ("GPUTRACE_ACTIVITIES", "bogus")):
        p = gputrace(["run", "-o", "n.json", "--", "true"], tmp_path, env=gt_env({var: value}))
        assert p.returncode == 0, p.stderr
        lines = gputrace_lines(p.stderr)
        assert len(lines) == 2 and lines[0].startswith(f"gputrace: {var}='{value}' is not valid")
        assert lines[1] == ("gputrace: no process of the run recorded anything (no GPU API call "
                            "gputrace knows): no trace written"), lines
    p = gputrace(["run", "-o", "n.json", "--plugin-path", PLUGIN_DIR, "--", "true"], tmp_path,
                 env=plugin_env(3, {"GPUTRACE_BACKENDS": "ze"}))
    assert gputrace_lines(p.stderr) == [
        "gputrace: no process of the run recorded anything (no GPU API call gputrace knows"
        ", or none through GPUTRACE_BACKENDS=ze): no trace written"]


def test_signal_passes_through(tmp_path):
    p = gputrace(["run", "--no-summary", "--", "sh", "-c", "kill -TERM $$"], tmp_path)
    assert p.returncode == -15


def test_no_shell_in_between(tmp_path):
    # the script execs the tool, which runs the command as its own child:
    # the command's parent is the process the caller started
    env = gt_env()
    proc = subprocess.Popen([str(SCRIPT), "run", "--no-summary", "--",
                             "sh", "-c", "echo $PPID"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert int(out) == proc.pid


def run_plugin(tmp_path, *opts, n=3, name="t.json", program=None):
    need(PLUGIN_DIR / "libclitest.so")
    out = tmp_path / name if name else None
    program = program or ["sh", "-c", 'echo "program stderr" >&2']
    p = gputrace(["run"] + (["-o", out] if out else []) + ["--plugin-path", PLUGIN_DIR, *opts,
                                                          "--"] + program,
                 tmp_path, env=plugin_env(n))
    return p, out


def test_summary_block_on_stderr(tmp_path):
    p, out = run_plugin(tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stderr.decode().splitlines()
    start = lines.index(f"gputrace summary: {out}")
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        block.append(line)
    text = "\n".join(block)
    assert block[0].startswith("  trace: ")
    assert "kernels: 1 distinct, 3 launches, 6000 ns total" in text
    assert "API calls: 2 distinct, 6 calls, 7200 ns total" in text
    assert "copies and fills: 4 operations" in text
    assert "CliDev 0" in text and "lost events: 0" in text
    assert any(l.split()[:3] == ["HtoD", "3", "24.0"] for l in block), text
    # the program's own stderr is all that is left after the block
    assert strip_gputrace(p.stderr) == "program stderr\n"


def test_no_summary(tmp_path):
    p, out = run_plugin(tmp_path, "--no-summary")
    assert p.returncode == 0
    assert b"gputrace summary" not in p.stderr
    assert out.exists()


def test_summary_json_equals_sums_over_the_trace(tmp_path):
    p, out = run_plugin(tmp_path, "--summary-json", "s.json", n=5)
    assert p.returncode == 0, p.stderr
    trace = load_exact(out)
    s = json.loads((tmp_path / "s.json").read_text())
    expect = expected_summary(trace)
    check_summary_json(s, expect)
    # and the numbers the plug-in recorded
    assert expect["kernels"] == {"cli_kernel": {"count": 5, "total_ns": 15000,
                                                "min_ns": 1000, "max_ns": 5000}}
    assert expect["copies"] == {"HtoD": {"count": 5, "bytes": 4096 * 15, "total_ns": 5000},
                                "memset": {"count": 1, "bytes": 512, "total_ns": 500}}
    assert s["trace"]["path"] == str(out)
    # `gputrace summary` on the file prints the same numbers
    q = gputrace(["summary", "--json", "-", out], tmp_path)
    assert q.returncode == 0, q.stderr
    again = json.loads(q.stdout)
    for key in ("kernels", "api_calls", "annotations", "copies", "devices", "totals", "lost",
                "window", "spans"):
        assert again[key] == s[key], key
    assert again["trace"] == {"path": str(out), "bytes": out.stat().st_size}
    # a relative path: the same absolute trace.path as the run's, as the README shows it
    (tmp_path / "sub").mkdir()
    for rel in ("t.json", "sub/../t.json"):
        q = gputrace(["summary", "--json", "rel.json", rel], tmp_path)
        assert q.returncode == 0, q.stderr
        assert json.loads((tmp_path / "rel.json").read_text())["trace"]["path"] == str(out)


def test_summary_command_table(tmp_path):
    p, out = run_plugin(tmp_path, "--no-summary")
    q = gputrace(["summary", out], tmp_path)
    assert q.returncode == 0, q.stderr
    lines = q.stdout.decode().splitlines()
    assert lines[0] == f"gputrace summary: {out}"
    assert all(l.startswith("  ") for l in lines[1:])
    assert any("cli_kernel" in l for l in lines)


def test_gzip_round_trip(tmp_path):
    p, gz = run_plugin(tmp_path, "--no-summary", name="t.json.gz")
    assert p.returncode == 0, p.stderr
    raw = gz.read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    trace = json.loads(gzip.decompress(raw))
    assert len([e for e in trace["traceEvents"] if e.get("name") == "cli_kernel"]) == 3
    # one process: its own trace, compressed (one member), not a merge of one,
    # so its rows keep the names a plain -o gives (checks name them)
    one = zlib.decompressobj(31)
    one.decompress(raw)
    assert one.eof and one.unused_data == b""
    own = trace["gputrace"]
    assert "merged" not in own and own["complete"] is True and own["end"]
    assert own["pid"] > 0 and own["exe"]
    _, plain_run = run_plugin(tmp_path, "--no-summary", name="v.json")
    rows = lambda t: sorted(e["args"]["name"] for e in t["traceEvents"]
                            if e.get("ph") == "M" and e.get("name") == "process_name")
    assert rows(trace) == rows(load_exact(plain_run))
    # summary and merge read .gz; merge writes .gz for an OUT ending in .gz
    p2, plain = run_plugin(tmp_path, "--no-summary", name="u.json", n=2)
    s = gputrace(["summary", "--json", "-", gz], tmp_path)
    assert s.returncode == 0, s.stderr
    check_summary_json(json.loads(s.stdout), expected_summary(load_exact(gz)))
    m = gputrace(["merge", "-o", "m.json.gz", gz, plain], tmp_path)
    assert m.returncode == 0, m.stderr
    merged = load_exact(tmp_path / "m.json.gz")
    assert (tmp_path / "m.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    kernels = [e for e in merged["traceEvents"] if e.get("name") == "cli_kernel"]
    assert len(kernels) == 3 + 2
    s = gputrace(["summary", "--json", "-", tmp_path / "m.json.gz"], tmp_path)
    check_summary_json(json.loads(s.stdout), expected_summary(merged))


def test_summary_and_report_refuse_what_is_not_a_trace(tmp_path):
    """A summary JSON, or any JSON without traceEvents, is not an empty trace:
    summary and report say what it is in one line and exit 2, as check and
    diff do; {"traceEvents": []} is an empty trace and summarizes."""
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": []}')
    summ = tmp_path / "s.json"
    assert gputrace(["summary", "--json", summ, empty], tmp_path).returncode == 0
    p = gputrace(["summary", empty], tmp_path)
    assert p.returncode == 0 and b"0 spans" in p.stdout and not p.stderr, p
    other = tmp_path / "other.json"
    other.write_text('{"foo": 1}')
    for cmd in ("summary", "report"):
        p = gputrace([cmd, summ, *(["-o", tmp_path / "s.html"] if cmd == "report" else [])],
                     tmp_path)
        assert (p.returncode, p.stdout, p.stderr.decode()) == (
            2, b"", f"gputrace {cmd}: {summ}: a gputrace summary JSON, not a trace (give the "
            "trace it summarizes; check and diff read summary JSONs)\n")
        p = gputrace([cmd, other], tmp_path)
        assert (p.returncode, p.stdout, p.stderr.decode()) == (
            2, b"", f"gputrace {cmd}: {other}: not a readable trace: no traceEvents array\n")
    assert not (tmp_path / "s.html").exists() and not (tmp_path / "other.html").exists()


def test_summary_escapes_control_characters(tmp_path):
    """A name with a line break or an escape sequence cannot break the
    summary's layout (or fake a line of it): control characters are printed
    as C escapes, \\n, \\t, \\r and \\xNN; the JSON keeps the name."""
    evil = "evil\nFAKE LINE: lost events: 0"
    color = "k\x1b[31mred\x1b[0m" + "x" * 60 + "\tend"
    trace = tmp_path / "ctl.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": evil, "pid": 1, "tid": 2, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": color, "pid": 1, "tid": 2, "ts": 3, "dur": 2},
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "dev\rice"}}]}))
    p = gputrace(["summary", trace], tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.decode().splitlines()
    assert not any(l.startswith("FAKE") for l in lines), lines
    assert not any(c in p.stdout.decode() for c in "\x1b\r\t"), lines
    rows = [l.split() for l in lines if l.startswith("    ") and "ns" in l]
    # shortened in the middle, as any long name, the escapes counted in its width
    assert rows[0][:2] == ["k\\x1b[31mred\\x1b[0...xxxxxxxxxxxxxxxxxx\\tend", "1"], rows
    assert rows[1][:3] == ["evil\\nFAKE", "LINE:", "lost"], rows
    assert rows[2][:2] == ["dev\\rice", "busy"], rows
    s = json.loads(gputrace(["summary", "--json", "-", trace], tmp_path).stdout)
    assert {k["name"] for k in s["kernels"]} == {evil, color}


def test_summary_decodes_counter_series_and_metric_names(tmp_path):
    """A counter's series and a kernel's metric are named by their JSON keys, which were
    taken as written, escapes and all: a trace that Python's json rewrote (every non-ASCII
    character as \\uXXXX) summed "temperature gpu \\u00b0C", and a plug-in's series
    "bytes \\"in use\\"" kept its backslashes; names the trace decodes to another
    string than the exit-time summary's, so a gate on one missed the other."""
    series = ["gpu \u00b0C", 'bytes "in use"', "C:\\dir", "tab\there"]
    metric = 'L2 "hit" \u00b5s'
    trace = tmp_path / "keys.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 9, "args": {"name": "GPU 0"}},
        {"ph": "C", "name": "plug", "pid": 9, "ts": 1,
         "args": {n: i for i, n in enumerate(series)}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 9, "tid": 1, "ts": 2, "dur": 1,
         "args": {"metrics": {metric: 5}}}]}))  # ensure_ascii, as json.dump writes
    assert "\\u00b0" in trace.read_text()
    s = json.loads(gputrace(["summary", "--json", "-", trace], tmp_path).stdout)
    assert {r["series"]: r["mean"] for r in s["metrics"]["counters"]} == \
        {n: i for i, n in enumerate(series)}
    assert [(r["kernel"], r["metric"]) for r in s["metrics"]["kernels"]] == [("k", metric)]
    text = gputrace(["summary", trace], tmp_path).stdout.decode("utf-8")
    assert "plug gpu \u00b0C " in text and 'plug bytes "in use" ' in text, text
    assert "plug tab\\there " in text and 'L2 "hit" \u00b5s 5' in text, text


def test_summary_cuts_long_series_and_metric_names_between_characters(tmp_path):
    """A series or metric name longer than the summary keeps (255 bytes) is cut at a
    character: 200 of U+00E9 (2 bytes each) were cut inside the 128th, which the
    table printed as half a character (output that is not UTF-8) and the JSON as
    U+00C3."""
    long = "\u00e9" * 200
    trace = tmp_path / "long.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "C", "name": "plug", "pid": 9, "ts": 1, "args": {long: 1}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 9, "tid": 1, "ts": 2, "dur": 1,
         "args": {"metrics": {long: 5}}}]}))
    s = json.loads(gputrace(["summary", "--json", "-", trace], tmp_path).stdout)
    names = [s["metrics"]["counters"][0]["series"], s["metrics"]["kernels"][0]["metric"]]
    assert names == ["\u00e9" * 127] * 2, names
    gputrace(["summary", trace], tmp_path).stdout.decode("utf-8")  # raised on half of one


def test_summary_of_huge_samples_is_json(tmp_path):
    """Samples whose sum overflows a double (1e308 twice: a tool's "no value" of
    DBL_MAX) gave the mean "inf", which is not JSON: the summary, and the report
    that embeds it, could not be read back."""
    trace = tmp_path / "huge.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "C", "name": "plug", "pid": 9, "ts": t, "args": {"v": 1e308}} for t in (1, 2)] + [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 9, "tid": 1, "ts": t, "dur": 1,
         "args": {"metrics": {"m": 1e308}}} for t in (3, 5)]}))
    p = gputrace(["summary", "--json", "-", trace], tmp_path)
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert [r["mean"] for r in s["metrics"]["counters"] + s["metrics"]["kernels"]] == \
        [1e308, 1e308], s["metrics"]
    assert "inf" not in gputrace(["summary", trace], tmp_path).stdout.decode()


def strict_json(text):
    """json.loads that refuses what a strict parser refuses: NaN, Infinity and
    numbers out of a double's range (Python reads 1.8e308 as inf)."""
    def num(t):
        v = float(t)
        assert v not in (float("inf"), float("-inf")), f"{t} is out of a double's range"
        return v
    return json.loads(text, parse_float=num,
                      parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))


def test_summary_of_samples_near_dbl_max_parses_back(tmp_path):
    """%.15g rounded DBL_MAX up to 1.79769313486232e+308, past DBL_MAX: a strict
    JSON parser refused the summary. 17 digits parse back to the same double."""
    big = 1.7976931348623157e308  # DBL_MAX
    trace = tmp_path / "max.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "C", "name": "plug", "pid": 9, "ts": t, "args": {"v": v}}
        for t, v in ((1, big), (2, big), (3, -big))]}))
    p = gputrace(["summary", "--json", "-", trace], tmp_path)
    assert p.returncode == 0, p.stderr
    (row,) = strict_json(p.stdout)["metrics"]["counters"]
    assert (row["min"], row["max"]) == (-big, big)
    small = tmp_path / "small.json"  # other values keep their 15 digits
    small.write_text(json.dumps({"traceEvents": [
        {"ph": "C", "name": "plug", "pid": 9, "ts": t, "args": {"v": 0.1 * t}} for t in (1, 2)]}))
    p = gputrace(["summary", "--json", "-", small], tmp_path)
    assert b'"mean":0.15,"min":0.1,"max":0.2}' in p.stdout


@pytest.mark.parametrize("names, distinct", [(100, 100), (70000, 65537)])
def test_distinct_past_the_row_limit_is_a_lower_bound(tmp_path, names, distinct):
    """Past 65536 distinct names the rest are one "(other)" row: the summary's
    distinct (the rows) is then no count of names, and says it is a lower bound."""
    trace = tmp_path / "many.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 9, "tid": 1, "ts": i, "dur": 1}
        for i in range(names)]}))
    p = gputrace(["summary", "--json", "-", trace], tmp_path)
    assert p.returncode == 0, p.stderr
    totals = json.loads(p.stdout)["totals"]
    want = {"distinct": distinct, "count": names, "total_ns": names * 1000}
    if names > 65536:
        want["distinct_lower_bound"] = True
    assert totals["kernels"] == want
    assert "distinct_lower_bound" not in totals["api_calls"]
    text = gputrace(["summary", trace], tmp_path).stdout.decode()
    assert (f"kernels: over 65536 distinct" if names > 65536 else
            f"kernels: {names} distinct") in text


def test_long_utf8_names_are_shortened_between_characters(tmp_path):
    """A long name in UTF-8 (an NVTX range or a SYCL kernel named in Greek,
    Japanese, emoji) is shortened in the middle between characters, and its
    row lines up with the others: bytes were counted, so the summary, the
    report's bars and the diff's table cut characters in two (output that is
    not UTF-8) and padded such names short."""
    names = ["\u03ba" * 60, "\u65e5\u672c" * 40, "x" + "\U0001F600" * 50, "k_\u00fcber", "plain"]
    trace = tmp_path / "utf8.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": n, "pid": 1, "tid": 2, "ts": 10 * i, "dur": 1}
        for i, n in enumerate(names)]}))
    p = gputrace(["summary", trace], tmp_path)
    assert p.returncode == 0, p.stderr
    text = p.stdout.decode("utf-8")  # raised on half a character
    rows = [l for l in text.splitlines() if l.endswith("%") and " ns " in l]
    assert len(rows) == 5, text
    # every row's count starts at the same column (characters, not bytes)
    assert len({len(l) for l in rows}) == 1, rows
    shown = {l[4:48].rstrip() for l in rows}
    assert shown == {"\u03ba" * 18 + "..." + "\u03ba" * 23,
                     "\u65e5\u672c" * 9 + "..." + "\u672c" + "\u65e5\u672c" * 11,
                     "x" + "\U0001F600" * 17 + "..." + "\U0001F600" * 23, "k_\u00fcber",
                     "plain"}, shown
    html = tmp_path / "utf8.html"
    assert gputrace(["report", trace, "-o", html], tmp_path).returncode == 0
    html.read_bytes().decode("utf-8")
    s = json.loads(gputrace(["summary", "--json", "-", trace], tmp_path).stdout)
    summ = tmp_path / "s.json"
    summ.write_text(json.dumps(s))
    p = gputrace(["diff", summ, "--", summ, "--all"], tmp_path)
    rows = [l for l in p.stdout.decode("utf-8").splitlines() if "1 -> 1" in l]
    assert len(rows) == 5 and len({l.index("1 -> 1") for l in rows}) == 1, rows


def test_a_pipe_or_a_folder_is_refused_as_such(tmp_path):
    """Every command reads its input twice (a peek, then the document; a
    trace in two passes): a pipe (zcat t.json.gz | gputrace summary
    /dev/stdin) was empty the second time and said to be "empty file" (check:
    "not JSON: unexpected end of input"), and a folder "Is a directory at
    byte 0". Each is one line that says what it is, with status 2."""
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 9, "tid": 1, "ts": 1, "dur": 2}]}))
    pipe = ("not a regular file (a pipe?): it is read more than once; save it to a file "
            "first")
    for cmd in (["summary"], ["check"], ["report"], ["diff", trace, "--"]):
        args = [*cmd, "/dev/stdin"] + (["lost == 0"] if cmd == ["check"] else [])
        p = gputrace(args, tmp_path, input=trace.read_bytes())
        assert (p.returncode, p.stdout, p.stderr.decode()) == (
            2, b"", f"gputrace {cmd[0]}: cannot open /dev/stdin: {pipe}\n"), p
        args = [*cmd, tmp_path] + (["lost == 0"] if cmd == ["check"] else [])
        p = gputrace(args, tmp_path)
        assert (p.returncode, p.stdout, p.stderr.decode()) == (
            2, b"", f"gputrace {cmd[0]}: cannot open {tmp_path}: Is a directory\n"), p
    p = gputrace(["merge", "-o", tmp_path / "m.json", "/dev/stdin"], tmp_path,
                 input=trace.read_bytes())
    assert (p.returncode, p.stderr.decode()) == (
        1, f"gputrace merge: cannot open /dev/stdin: {pipe}\n"), p


def test_more_kernel_metrics_name_the_option_of_the_command(tmp_path):
    """Past 10 kernel names the metrics' lines end with where the rest are:
    `gputrace summary` has --json (the kernels' and API calls' tables said so),
    but the metrics named --summary-json, an option of `gputrace run` only."""
    trace = tmp_path / "km.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": f"k{i:02}", "pid": 1, "tid": 1, "ts": 10 * i,
         "dur": 1, "args": {"metrics": {"GpuBusy %": 50.0 + i}}} for i in range(12)]}))
    p = gputrace(["summary", trace], tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.decode().splitlines()
    assert "    ... more kernels (see --json)" in lines, lines


def test_output_lost_on_stdout_is_an_error(tmp_path):
    """`gputrace summary t.json > summary.txt` on a full disk: the table was
    lost and the command exited 0 (so did check's and diff's lines and
    metrics' list), while --json - said so. Now one line and the command's
    error status: 1 (summary, metrics), 2 (check, diff: not a pass, not a
    fail). `report -o -` and `summary --json -` name stdout so too (they said
    "cannot write -")."""
    import subprocess
    from cli_helpers import SCRIPT, gt_env
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 9, "tid": 1, "ts": 1, "dur": 2}]}))
    summ = tmp_path / "s.json"
    assert gputrace(["summary", "--json", summ, trace], tmp_path).returncode == 0
    for args, status in ((["summary", trace], 1), (["check", summ, "lost == 0"], 2),
                         (["check", summ, "lost == 1"], 2), (["diff", summ, "--", summ], 2),
                         (["metrics"], 1), (["report", "-o", "-", trace], 1),
                         (["summary", "--json", "-", trace], 1)):
        with open("/dev/full", "w") as full:
            p = subprocess.run([str(SCRIPT), *[str(a) for a in args]], cwd=tmp_path,
                               env=gt_env(), stdout=full, stderr=subprocess.PIPE, timeout=60)
        lines = p.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"gputrace {args[0]}: cannot write to stdout: "), (args, p.stderr)
        assert p.returncode == status, (args, p.returncode)


def test_summary_of_a_foreign_or_broken_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("this is not json")
    p = gputrace(["summary", bad], tmp_path)
    assert p.returncode == 2
    assert p.stderr.decode().startswith(f"gputrace summary: {bad}: not a readable trace")
    p = gputrace(["summary", tmp_path / "missing.json"], tmp_path)
    assert p.returncode == 2 and b"cannot open" in p.stderr
    # the bare array form, no gputrace object: device spans known by category
    arr = tmp_path / "array.json"
    arr.write_text(json.dumps([
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 9, "tid": 1, "ts": 1.5, "dur": 2},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 1, "dur": 0.25},
    ]))
    p = gputrace(["summary", "--json", "-", arr], tmp_path)
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["kernels"][0]["total_ns"] == 2000 and s["devices"][0]["name"] == "pid 9"
    assert s["api_calls"][0]["total_ns"] == 250


def test_output_to_a_pipe(tmp_path):
    """-o /dev/stdout into a pipe: the trace comes whole, after its summary
    (the summary read OUT back, which waited forever on its own pipe)."""
    need(PLUGIN_DIR / "libclitest.so")
    p = subprocess.run([str(SCRIPT), "run", "-o", "/dev/stdout", "--summary-json", "s.json",
                        "--plugin-path", str(PLUGIN_DIR), "--", "true"],
                       cwd=str(tmp_path), env=plugin_env(3), capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr
    trace = json.loads(p.stdout)
    assert len([e for e in trace["traceEvents"] if e.get("name") == "cli_kernel"]) == 3
    assert "merged" not in trace["gputrace"]
    assert "gputrace summary: /dev/stdout" in p.stderr.decode()
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["trace"]["path"] == "/dev/stdout" and s["kernels"][0]["count"] == 3


def test_incomplete_traces_are_said(tmp_path):
    """A trace whose process was killed (trailer "complete": false) is counted
    in the summary, its JSON, check, merge and the report: its last interval
    may be missing, which nothing said."""
    p, out = run_plugin(tmp_path, "--no-summary")
    assert p.returncode == 0, p.stderr
    t = json.loads(out.read_text())
    t["gputrace"]["complete"] = False
    killed = tmp_path / "killed.json"
    killed.write_text(json.dumps(t))
    line = "  incomplete: 1 trace not closed (killed, or still running): the last interval may be missing"
    q = gputrace(["summary", "--json", "s.json", killed], tmp_path)
    assert q.returncode == 0, q.stderr
    assert line in q.stdout.decode().splitlines()
    assert json.loads((tmp_path / "s.json").read_text())["incomplete"] == 1
    c = gputrace(["check", "s.json", "incomplete == 0"], tmp_path)
    assert c.returncode == 1 and "FAIL incomplete == 0: 1" in c.stdout.decode() + c.stderr.decode()
    q = gputrace(["summary", out], tmp_path)
    assert "  incomplete:" not in q.stdout.decode()
    m = gputrace(["merge", "-o", "m.json", killed, out], tmp_path)
    assert m.returncode == 0, m.stderr
    assert json.loads((tmp_path / "m.json").read_text())["gputrace"]["incomplete"] == 1
    q = gputrace(["summary", "m.json"], tmp_path)
    assert line in q.stdout.decode().splitlines()
    r = gputrace(["report", "-o", "r.html", killed], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "1 of the traces summarized was not closed" in (tmp_path / "r.html").read_text()


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="an NVIDIA driver is installed")
@pytest.mark.skipif(SANITIZE == "thread", reason=TSAN_FORK_THREAD)
def test_lines_of_a_process_whose_stderr_is_closed(tmp_path):
    """A program that closes its stderr (coreutils' do at exit) still gets
    its one line: gputrace run prints it (it was lost)."""
    p = gputrace(["run", "--telemetry", "--", "sh", "-c", "exec 2>&-; sleep 0.05"], tmp_path,
                 env=gt_env({"LD_LIBRARY_PATH": ""}))
    assert p.returncode == 0, p.stderr
    lines = p.stderr.decode().splitlines()
    assert len([l for l in lines if l.startswith("gputrace: --telemetry: nothing recorded: "
                                                 "libnvidia-ml.so.1")]) == 1, lines


def test_a_process_killed_before_its_trace_is_said(tmp_path):
    """A process that recorded and was killed before its first file (or while
    its exit was written, as by exit() from two threads at once): the run
    says so, not that nothing recorded anything."""
    p, out = run_plugin(tmp_path, program=["sh", "-c", "kill -9 $$"])
    err = p.stderr.decode()
    assert "no process of the run recorded anything" not in err, err
    # killed before the drain's first file, or just after it opened one
    assert ("gputrace: 1 process of the run recorded GPU calls but ended before writing its "
            "trace (killed, or cut short while exiting, as when several threads call exit() "
            "at once): no trace written" in err.splitlines()
            or "  incomplete: 1 trace not closed" in err), err


def cli_kernels(path):
    return len([e for e in load_exact(path)["traceEvents"] if e.get("name") == "cli_kernel"])


@pytest.mark.parametrize("folder", ["run%pdir", "pct%dir"])
def test_a_percent_in_the_folder_is_no_code(tmp_path, folder):
    """The current folder's '%' is part of the path the processes get as their
    GPUTRACE_OUTPUT template, escaped: it was expanded (run%pdir became
    run1234dir: the trace lost) or refused (pct%dir: the default used)."""
    need(PLUGIN_DIR / "libclitest.so")
    cwd = tmp_path / folder
    cwd.mkdir()
    for opts in (["-o", "t.json"], ["-o", "p-%p.json"], ["-o", "k.json", "--per-process", "k"]):
        p = gputrace(["run", "--no-summary", *opts, "--plugin-path", PLUGIN_DIR, "--", "true"],
                     cwd, env=plugin_env(3))
        assert p.returncode == 0 and gputrace_lines(p.stderr) == [], (opts, p.stderr)
    per_process = [f.name for f in cwd.glob("p-*.json")]
    kept = list((cwd / "k").iterdir())
    assert len(per_process) == 1 and len(kept) == 1, sorted(os.listdir(cwd))
    assert [cli_kernels(f) for f in (cwd / "t.json", cwd / per_process[0], cwd / "k.json",
                                     kept[0])] == [3, 3, 3, 3]
    assert sorted(os.listdir(cwd)) == sorted(["t.json", per_process[0], "k.json", "k"])


def test_per_process_folder_that_takes_no_files_is_refused(tmp_path):
    """--per-process DIR that is there but not writable is refused before CMD
    runs, as -o and --summary-json in such a folder are: each process failed
    to write its trace into it, and the whole run's trace was lost."""
    need(PLUGIN_DIR / "libclitest.so")
    as_user = []
    if os.geteuid() == 0:  # root writes in a mode 555 folder: run as nobody
        need("/usr/bin/setpriv")
        as_user = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        tmp_path = Path(tempfile.mkdtemp(prefix="gt-ro-", dir="/tmp"))
        tmp_path.chmod(0o777)
    try:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        p = subprocess.run(as_user + [str(SCRIPT), "run", "--no-summary", "-o", "x.json",
                                      "--per-process", "ro", "--plugin-path", str(PLUGIN_DIR),
                                      "--", "touch", "ran"],
                           cwd=str(tmp_path), env=plugin_env(3), capture_output=True, timeout=30)
        assert p.returncode == 2, p.stderr
        assert p.stderr.decode().splitlines() == [
            f"gputrace: --per-process ro: cannot write in {ro}: Permission denied",
            "Try 'gputrace --help'."], p.stderr
        assert sorted(os.listdir(tmp_path)) == ["ro"] and os.listdir(ro) == []
    finally:
        if as_user:
            shutil.rmtree(tmp_path)


def test_output_variable_naming_a_folder(tmp_path):
    """GPUTRACE_OUTPUT in run's environment is taken as the library takes it:
    a folder gets the trace in it under the default name, with one line (it
    was refused as "-o DIR: is a folder", an -o never given, and CMD not run);
    a folder that is not there is bad input as a refused value is: one line naming
    the variable, the default used, and CMD runs (it was refused, and CMD not run)."""
    need(PLUGIN_DIR / "libclitest.so")
    for value in ("outdir", "slash/"):
        (tmp_path / value).mkdir()
        p = gputrace(["run", "--no-summary", "--plugin-path", PLUGIN_DIR, "--", "true"],
                     tmp_path, env=plugin_env(3, {"GPUTRACE_OUTPUT": value}))
        assert p.returncode == 0, p.stderr
        lines = gputrace_lines(p.stderr)
        assert len(lines) == 1 and re.fullmatch(
            re.escape(f"gputrace: GPUTRACE_OUTPUT='{value}' is a folder, not a file name or "
                      f"template (such as trace-%t.json): writing {tmp_path}/{value.rstrip('/')}/") +
            r"gputrace-true-\d{8}T\d{6}Z\.json", lines[0]), lines
        written = lines[0].rsplit(" ", 1)[1]
        assert os.listdir(tmp_path / value) == [os.path.basename(written)]
        assert cli_kernels(written) == 3
    assert sorted(os.listdir(tmp_path)) == ["outdir", "slash"]
    p = gputrace(["run", "--no-summary", "--plugin-path", PLUGIN_DIR, "--", "sh", "-c",
                  "touch ran; exit 3"],
                 tmp_path, env=plugin_env(3, {"GPUTRACE_OUTPUT": "missing/t.json"}))
    assert p.returncode == 3, p.stderr
    assert gputrace_lines(p.stderr) == [
        f"gputrace: GPUTRACE_OUTPUT='missing/t.json': cannot write in {tmp_path}/missing: No such "
        "file or directory (using the default, gputrace-%e-%t.json)"]
    made = sorted(os.listdir(tmp_path))
    assert len(made) == 4 and made[1:] == ["outdir", "ran", "slash"], made
    assert re.fullmatch(r"gputrace-sh-\d{8}T\d{6}Z\.json", made[0]), made
    assert cli_kernels(tmp_path / made[0]) == 6  # sh's and touch's


def test_a_long_output_name_is_not_refused_for_its_parts_folder(tmp_path):
    """An -o name of 251 bytes is valid, but OUT.parts (and the merge's
    OUT.gputrace-PID) is not: the run used to refuse it ("cannot make the
    folder ...: File name too long"); the parts go in a short-named folder."""
    need(PLUGIN_DIR / "libclitest.so")
    name = "y" * 246 + ".json"
    p = gputrace(["run", "--no-summary", "-o", name, "--plugin-path", PLUGIN_DIR, "--",
                  "sh", "-c", "sh -c true; sh -c true"], tmp_path, env=plugin_env(3))
    assert p.returncode == 0 and gputrace_lines(p.stderr) == [], p.stderr
    assert os.listdir(tmp_path) == [name]  # no parts folder, no temporary file left
    t = load_exact(tmp_path / name)
    assert t["gputrace"]["merged"] is True and len(t["gputrace"]["inputs"]) == 3
    assert cli_kernels(tmp_path / name) == 9


def test_an_output_name_too_long_for_a_file_is_refused_before_the_run(tmp_path):
    """A 256-byte name was taken, CMD ran, and its trace was left in the parts with a
    merge command that failed the same way: said before CMD runs now, exit 2."""
    name = "b" * 251 + ".json"
    p = gputrace(["run", "-o", name, "--", "sh", "-c", "echo ran"], tmp_path)
    assert (p.returncode, p.stdout) == (2, b"")
    assert gputrace_lines(p.stderr)[0] == (
        f"gputrace: -o {name}: the file name is 256 bytes long; a name may have 255 at most")
    assert os.listdir(tmp_path) == []


def refused_before_running(tmp_path, args, env=None, hint=True):
    """gputrace run ARGS -- touch ran: exit 2, and CMD never started. Its
    stderr lines, "Try 'gputrace --help'." aside (none where hint is false: a
    variable's value at fault, which the help does not cover)."""
    p = gputrace(["run", *args, "--", "touch", tmp_path / "ran"], tmp_path,
                 env=env if env is not None else plugin_env(3))
    assert p.returncode == 2, p.stderr
    assert not (tmp_path / "ran").exists(), "CMD ran"
    lines = p.stderr.decode().splitlines()
    assert lines[1:] == (["Try 'gputrace --help'."] if hint else []), lines
    return lines[0]


@pytest.mark.parametrize("opts,names", [
    (["-o", "v.json", "--summary-json", "v.json"], "-o and --summary-json"),
    (["-o", "v.json", "--summary-json", "./sub/../v.json"], "-o and --summary-json"),
    (["-o", "v.json", "--check", "lost == 0", "--markdown", "v.json"], "-o and --markdown"),
    (["-o", "v.json", "--check", "lost == 0", "--junit", "v.json"], "-o and --junit"),
    (["--summary-json", "v.json", "--check", "lost == 0", "--junit", "v.json"],
     "--summary-json and --junit"),
    (["-o", "v.json", "--per-process", "v.json"], "-o and --per-process"),
])
def test_outputs_naming_one_file_are_refused(tmp_path, opts, names):
    """Two outputs of one run naming one file: the one written last replaced
    the other (the summary JSON over the trace, the trace lost, exit 0).
    Refused before CMD runs, the names compared resolved."""
    (tmp_path / "sub").mkdir()
    assert refused_before_running(tmp_path, opts) == (
        f"gputrace: {names} name the same file, {tmp_path}/v.json: give each its own")
    assert os.listdir(tmp_path) == ["sub"]


def test_outputs_naming_one_existing_file_are_refused(tmp_path):
    """A file there already, named by two links: the same device and inode."""
    (tmp_path / "a.json").write_text("{}")
    os.link(tmp_path / "a.json", tmp_path / "b.json")
    line = refused_before_running(tmp_path, ["-o", "a.json", "--summary-json", "b.json"])
    assert line == f"gputrace: -o and --summary-json name the same file, {tmp_path}/a.json: " \
        "give each its own"
    assert (tmp_path / "a.json").read_text() == "{}"


def test_per_process_templates_naming_one_file_are_refused(tmp_path):
    """-o with %p is expanded by each process: its text is what is known."""
    line = refused_before_running(tmp_path, ["-o", "r-%p.json", "--summary-json", "r-%p.json"])
    assert line == f"gputrace: -o and --summary-json name the same file, {tmp_path}/r-%p.json: " \
        "give each its own"
    assert os.listdir(tmp_path) == []


def test_summary_json_never_replaces_a_trace(tmp_path):
    """--summary-json naming a trace there already (a run's before) was written
    over after CMD ran: the trace lost. Refused before, the trace kept; so are
    --markdown and --junit. A summary there already is replaced, as before."""
    p, out = run_plugin(tmp_path, "--no-summary")
    assert p.returncode == 0, p.stderr
    trace = out.read_bytes()
    for opt in (["--summary-json", "t.json"], ["--check", "lost == 0", "--markdown", "t.json"],
                ["--check", "lost == 0", "--junit", "t.json"]):
        assert refused_before_running(tmp_path, ["-o", "new.json", *opt]) == (
            f"gputrace: {opt[-2]} {out}: it holds a trace, which is never written over; give "
            "another file name")
        assert out.read_bytes() == trace
    assert os.listdir(tmp_path) == ["t.json"]
    (tmp_path / "s.json").write_text("stale")
    p, _ = run_plugin(tmp_path, "--no-summary", "--summary-json", "s.json", name="u.json")
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "s.json").read_text())["totals"]["kernels"]["count"] == 3


@pytest.mark.parametrize("opt", ["--summary-json", "--markdown", "--junit"])
def test_report_files_are_checked_before_cmd_runs(tmp_path, opt):
    """--summary-json (--markdown, --junit) naming a folder, or a file in a
    "folder" that is a file, was found after CMD ran ("Is a directory", exit 0,
    or 4 with checks): said before it runs, as for -o."""
    checks = [] if opt == "--summary-json" else ["--check", "lost == 0"]
    (tmp_path / "somedir").mkdir()
    (tmp_path / "afile").write_text("")
    assert refused_before_running(tmp_path, [*checks, opt, "somedir"]) == (
        f"gputrace: {opt} {tmp_path}/somedir: is a folder; give a file name")
    assert refused_before_running(tmp_path, [*checks, opt, "afile/s.json"]) == (
        f"gputrace: {opt} {tmp_path}/afile/s.json: cannot write in {tmp_path}/afile: it is a "
        "file, not a folder")
    assert sorted(os.listdir(tmp_path)) == ["afile", "somedir"]
    assert os.listdir(tmp_path / "somedir") == []


def test_output_in_a_file_is_said_so(tmp_path):
    """-o afile/x.json, afile a file: "Permission denied" said a folder refused us."""
    (tmp_path / "afile").write_text("")
    assert refused_before_running(tmp_path, ["-o", "afile/x.json"]) == (
        f"gputrace: -o {tmp_path}/afile/x.json: cannot write in {tmp_path}/afile: it is a "
        "file, not a folder")


def test_summary_json_variable_is_named_as_such(tmp_path):
    """GPUTRACE_SUMMARY_JSON's value refused was named as --summary-json, an
    option never given (GPUTRACE_OUTPUT's is named as the variable). A file it
    cannot be is bad input as a refused value is: one line, no summary JSON, and
    CMD runs with its own status (it was refused, and CMD not run); the option is
    still refused before CMD runs."""
    (tmp_path / "somedir").mkdir()
    for value, reason in (
            ("/nonexistent-dir/s.json", "cannot write in /nonexistent-dir: No such file or "
             "directory"),
            ("somedir", "is a folder; give a file name")):
        p = gputrace(["run", "--no-summary", "-o", "t.json", "--plugin-path", PLUGIN_DIR, "--",
                      "sh", "-c", "touch ran; exit 4"], tmp_path,
                     env=plugin_env(3, {"GPUTRACE_SUMMARY_JSON": value}))
        assert p.returncode == 4, p.stderr
        assert gputrace_lines(p.stderr) == [
            f"gputrace: GPUTRACE_SUMMARY_JSON='{value}': {reason} (no summary JSON is written)"]
        assert sorted(os.listdir(tmp_path)) == ["ran", "somedir", "t.json"]
        assert cli_kernels(tmp_path / "t.json") == 6  # sh's and touch's
        assert not os.listdir(tmp_path / "somedir")
        os.unlink(tmp_path / "ran")
        os.unlink(tmp_path / "t.json")
    line = refused_before_running(tmp_path, ["--summary-json", "somedir"])
    assert line == f"gputrace: --summary-json {tmp_path}/somedir: is a folder; give a file name"
    line = refused_before_running(tmp_path, [], env=plugin_env(
        3, {"GPUTRACE_SUMMARY_JSON": "s.json", "GPUTRACE_OUTPUT": "s.json"}), hint=False)
    assert line == f"gputrace: GPUTRACE_OUTPUT and GPUTRACE_SUMMARY_JSON name the same file, " \
        f"{tmp_path}/s.json: give each its own"
    # an option in it: the help is about that one
    line = refused_before_running(tmp_path, ["--summary-json", "s.json"], env=plugin_env(
        3, {"GPUTRACE_OUTPUT": "s.json"}))
    assert line == f"gputrace: GPUTRACE_OUTPUT and --summary-json name the same file, " \
        f"{tmp_path}/s.json: give each its own"


def test_a_device_for_a_report_is_written_into(tmp_path):
    """--summary-json /dev/null: a device takes the writes, whoever may make
    files in /dev; the folder was asked, and a user other than root was
    refused."""
    need(PLUGIN_DIR / "libclitest.so")
    as_user = []
    if os.geteuid() == 0:  # root writes in /dev: run as nobody
        need("/usr/bin/setpriv")
        as_user = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        tmp_path = Path(tempfile.mkdtemp(prefix="gt-dev-", dir="/tmp"))
        tmp_path.chmod(0o777)
    try:
        p = subprocess.run(as_user + [str(SCRIPT), "run", "--no-summary", "-o", "x.json",
                                      "--summary-json", "/dev/null", "--plugin-path", str(PLUGIN_DIR),
                                      "--", "true"],
                           cwd=str(tmp_path), env=plugin_env(3), capture_output=True, timeout=30)
        assert p.returncode == 0, p.stderr
        assert cli_kernels(tmp_path / "x.json") == 3
    finally:
        if as_user:
            shutil.rmtree(tmp_path)


@pytest.mark.parametrize("opt", ["-o", "--summary-json"])
def test_dev_stdout_redirected_to_a_file_is_written_after_the_program(tmp_path, opt):
    """-o /dev/stdout (or --summary-json) with stdout redirected to a file (`> log`): the
    trace goes into that file after what the program printed, through the run's own
    descriptor. Before, the file counted as existing, and the trace went to a new file
    /dev/stdout.1 (a summary JSON reopened it, over the program's output)."""
    need(PLUGIN_DIR / "libclitest.so")
    log = tmp_path / "log"
    args = ["run", "--no-summary", "--plugin-path", str(PLUGIN_DIR)] + \
        ([opt, "/dev/stdout"] if opt == "-o" else ["-o", str(tmp_path / "t.json"), opt,
                                                   "/dev/stdout"]) + \
        ["--", "sh", "-c", "echo program output"]
    before = set(os.listdir("/dev"))
    with open(log, "wb") as out:
        p = subprocess.run([str(SCRIPT)] + args, cwd=str(tmp_path), env=plugin_env(3),
                           stdout=out, stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr == b""
    assert set(os.listdir("/dev")) == before
    text = log.read_text()
    assert text.startswith("program output\n{")
    doc = json.loads(text[len("program output\n"):])
    if opt == "-o":
        assert sum(1 for e in doc["traceEvents"] if e.get("cat") == "kernel") == 3
    else:
        assert doc["schema"] == "gputrace-summary" and doc["totals"]["kernels"]["count"] == 3


def test_ctrl_c_stops_a_run_whose_trace_goes_to_a_fifo_no_one_reads(tmp_path):
    """-o FIFO with no reader: once CMD is over, the trace's open waits for one. A
    Ctrl-C (a SIGINT to gputrace) there stops the run with one line, and it ends by the
    signal; the run's state folder goes. It waited for good: the signals gputrace
    forwards to CMD stayed blocked after CMD ended (kill -9 was the only way out)."""
    need(PLUGIN_DIR / "libclitest.so")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    p = subprocess.Popen([str(SCRIPT), "run", "-o", str(fifo), "--plugin-path", str(PLUGIN_DIR),
                          "--", "true"], cwd=tmp_path, env=plugin_env(3),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         # SIGINT at its default, as from a terminal: a suite run in the
                         # background has it ignored, which gputrace keeps (as nohup's)
                         preexec_fn=default_signals)
    err = b""
    try:
        # the summary is printed before the trace is written out (lost events: its end)
        while b"lost events:" not in err:
            line = p.stderr.readline()
            assert line, err.decode()
            err += line
        p.send_signal(signal.SIGINT)
        rest = p.communicate(timeout=30)[1]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    lines = (err + rest).decode().splitlines()
    assert p.returncode == -signal.SIGINT, lines
    assert lines[-1] == f"gputrace: stopped by SIGINT while writing the trace to {fifo}"
    assert not list((tmp_path).glob("*.parts*")) and not list(tmp_path.glob(".gputrace*"))
