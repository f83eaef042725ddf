"""`gputrace check`: checks over a summary of a run of test/cli/ci_app on the
simulated Level Zero device (10 steps: gemm_f32 and bias_add, a copy each
way). Each check prints PASS/FAIL with the value measured in the summary;
exit 0 all pass, 1 one failed, 2 a check that cannot be evaluated (a typo
never passes)."""
import json
import math
import re
import shutil
import subprocess
from html import unescape
from fractions import Fraction
import xml.etree.ElementTree as ET

import pytest

from ci_helpers import gt, rows, traced
from cli_helpers import gt_env
from conftest import ROOT

FIXTURE = ROOT / "test" / "cli" / "fixtures" / "proc_a.json"  # 3 events lost (ring_full)


def fmt_time(ns):
    """How gputrace prints a time (units.c): 3 decimals at most, the exact
    ns after it when that rounds."""
    units = ["ns", "us", "ms", "s"]
    i, v = 0, float(ns)
    while i < 3 and abs(v) >= 1000:
        v /= 1000
        i += 1
    num = f"{v:.3f}".rstrip("0").rstrip(".")
    if i and float(num) != v:
        return f"{num} {units[i]} ({int(ns) if ns == int(ns) else format(ns, '.10g')} ns)"
    return f"{num} {units[i]}"


def lines(p):
    return p.stdout.decode().splitlines()


def result_lines(p):
    return [l for l in lines(p) if l.split(" ", 1)[0] in ("PASS", "FAIL", "ERROR")]


@pytest.mark.sanitize
def test_checks_pass_with_the_measured_values(tmp_path):
    _, sj, s = traced(tmp_path, "run", 10, 64)
    k = rows(s, "kernels")
    sync = rows(s, "api_calls")["zeCommandQueueSynchronize"]
    checks = {
        "device.kernels >= 1": "20",
        "lost == 0": "0",
        'kernel["gemm*"].count == 10': "10",
        'kernel["*"].total <= 25ms': fmt_time(k["gemm_f32"]["total_ns"] + k["bias_add"]["total_ns"]),
        'kernel["gemm_f32"].max < 1ms': fmt_time(k["gemm_f32"]["max_ns"]),
        'api["zeCommandQueueSynchronize"].mean < 10s': fmt_time(sync["mean_ns"]),
        'api["zeCommandQueueSynchronize"].count == 10': "10",
        "device[0].busy > 0%": None,
        'copy["HtoD"].bytes <= 1GiB': "640 KiB",
        'copy["*"].count == 20': "20",
        'kernel["conv*"].count == 0': "0",  # a glob that matches nothing counts 0
    }
    p = gt(["check", sj, *checks], tmp_path)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    got = result_lines(p)
    assert len(got) == len(checks)
    for line, (check, value) in zip(got, checks.items()):
        assert line.startswith(f"PASS {check}: "), line
        if value is not None:
            assert line == f"PASS {check}: {value}"
    assert lines(p)[-1] == f"gputrace check: {len(checks)} passed, 0 failed ({sj})"


def test_a_check_that_must_fail(tmp_path):
    _, sj, s = traced(tmp_path, "run", 10, 64)
    total = rows(s, "kernels")["gemm_f32"]["total_ns"]
    assert total >= 10 * 16000  # 64 groups of 256: 16384 ns per launch, in 52 ns ticks
    p = gt(["check", sj, "device.kernels >= 1", 'kernel["gemm_f32"].total <= 100us'], tmp_path)
    assert p.returncode == 1, p.stdout.decode()
    assert result_lines(p) == ["PASS device.kernels >= 1: 20",
                               f'FAIL kernel["gemm_f32"].total <= 100us: {fmt_time(total)}']
    assert lines(p)[-1].startswith("gputrace check: 1 passed, 1 failed")


@pytest.mark.parametrize("check, column, message", [
    ('kernel["gemm_f32"].totl <= 1ms', 20, "unknown field 'totl' of kernel rows"),
    ('kernal["gemm_f32"].total <= 1ms', 1, "unknown name 'kernal'"),
    ('kernel["gemm_f32"].total <= 1', 29, "is a time: give 1 a unit"),
    ('kernel["gemm_f32"].total <= 1ms + 5', 35, "1ms is a time: give 5 a unit (ns, us, ms, s)"),
    ("device[0].busy >= 60", 19, "is a fraction: write the bound as a percentage"),
    ("kernel.total <= 5 msec", 19, "unknown unit 'msec'"),
    ("lost = 0", 6, "'=' is no comparison: write '=='"),
    ('copy["HtoD"].bytes <= 1ms', 1, "cannot compare a size"),
    ('kernel["gemm_f32"].count >= 1 2', 31, "unexpected '2' after the check"),
    ('kernel["gemm_f32.count >= 1', 8, "unterminated string"),
    # a check is one comparison: what would join two, as a program would, is named so
    ("lost == 0 and errors == 0", 11, "one comparison per check (give several checks"),
    ("lost == 0 OR errors == 0", 11, "one comparison per check (give several checks"),
    ("lost == 0 && errors == 0", 11, "one comparison per check (give several checks"),
    ("lost == 0, errors == 0", 10, "one comparison per check (give several checks"),
    ("not lost == 0", 1, "a check has no 'not': write the opposite comparison"),
    ("!(lost == 0)", 1, "a check has no 'not': write the opposite comparison"),
    ("lost == 0 andes", 11, "unknown unit 'andes'"),
])
def test_a_malformed_check_is_rejected_with_its_column(tmp_path, check, column, message):
    p = gt(["check", FIXTURE, "lost >= 0", check], tmp_path)
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert not result_lines(p), "nothing is evaluated when a check does not parse"
    assert f"check 2, column {column}: " in err and message in err, err
    caret = err.splitlines()[2]
    assert caret.index("^") == 2 + column - 1, err


def test_a_typo_in_a_name_never_passes(tmp_path):
    _, sj, _ = traced(tmp_path, "run", 2, 64)
    p = gt(["check", sj, 'kernel["gemm_f3"].count >= 0', "lost.ring_ful == 0",
            'copy["HtoDD"].count == 0', "device[3].busy >= 0%", "lost.ring_full == 0"], tmp_path)
    out = p.stdout.decode()
    assert p.returncode == 2, out
    res = result_lines(p)
    assert res[0] == ('ERROR kernel["gemm_f3"].count >= 0: no kernel named "gemm_f3" in the '
                      'summary; did you mean "gemm_f32"? (a glob such as "gemm_f3*" counts 0 '
                      'when nothing matches)')
    assert res[1].startswith('ERROR lost.ring_ful == 0: no loss reason "ring_ful"')
    assert res[2].startswith('ERROR copy["HtoDD"].count == 0: no copy kind named "HtoDD"')
    assert res[3] == ("ERROR device[3].busy >= 0%: no device row 3: the summary has 1 "
                      "(0 is the first)")
    assert res[4] == "PASS lost.ring_full == 0: 0"  # a reason gputrace knows, not seen: 0
    assert lines(p)[-1].startswith("gputrace check: 1 passed, 0 failed, 4 could not be evaluated")


@pytest.mark.parametrize("reason", ["window_late", "cupti_pm_overflow", "cupti_range_late",
                                    "cupti_range_dropped", "cupti_range_unclaimed",
                                    "cupti_range_unmeasured", "ze_metrics_unread",
                                    "cupti_after_exit"])
def test_every_reason_the_library_counts_is_known(tmp_path, reason):
    """Each reason the library counts under (gt_lost_add) reads 0 where it did not
    happen: they were "no loss reason" errors, so a CI gate on one could not be written
    before it first happened."""
    _, sj, _ = traced(tmp_path, "run", 2, 64)
    p = gt(["check", sj, f"lost.{reason} == 0"], tmp_path)
    assert p.returncode == 0, p.stdout.decode()
    assert result_lines(p) == [f"PASS lost.{reason} == 0: 0"]
    # a name cut short: the name it begins, though many edits away (none was named, or a
    # shorter other: "zeCommandQueueCreate" for "zeCommandQueueSync")
    p = gt(["check", sj, 'kernel["gemm"].count >= 0', 'api["zeCommandQueueSync"].count > 0'],
           tmp_path)
    res = result_lines(p)
    assert 'did you mean "gemm_f32"?' in res[0], res
    assert 'did you mean "zeCommandQueueSynchronize"?' in res[1], res


def test_a_trace_reads_as_its_summary(tmp_path):
    trace, sj, _ = traced(tmp_path, "run", 3, 64)
    checks = ['kernel["*"].total <= 25ms', 'api["*Synchronize"].mean > 0ns',
              "device[0].busy_time > 0ns", "window > 0ns", "spans >= 20"]
    a = gt(["check", sj, *checks], tmp_path)
    b = gt(["check", trace, *checks], tmp_path)
    assert a.returncode == b.returncode == 0, a.stdout + b.stdout
    assert result_lines(a) == result_lines(b)


def test_a_trace_with_a_head_before_its_events(tmp_path):
    """A ranked run's trace starts with Kineto's distributedInfo: it is still
    streamed as a trace, not read as a summary."""
    trace, sj, _ = traced(tmp_path, "ranked", 2, 64, env={"RANK": "3", "WORLD_SIZE": "4"})
    assert trace.read_text().startswith('{"distributedInfo"')
    p = gt(["check", trace, 'kernel["gemm_f32"].count == 2', "device.kernels == 4"], tmp_path)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()


def test_globs_add_up_and_mean_is_total_over_count(tmp_path):
    _, sj, s = traced(tmp_path, "run", 4, 32)
    ks = s["kernels"]
    count = sum(r["count"] for r in ks)
    total = sum(r["total_ns"] for r in ks)
    dev = s["devices"][0]
    # busy's bounds from the integers, 0.01% apart and strictly around it: the
    # summary's rounded utilization (%.6f) put a bound on the value itself
    busy_x1e4 = Fraction(dev["busy_ns"] * 10000, s["window"]["duration_ns"])
    busy_lo = math.ceil(busy_x1e4) - 1
    checks = [f'kernel["*"].count == {count}',
              f'kernel["*"].total == {total}ns',
              f'kernel["*"].mean == {total // count}ns',
              f'kernel["*"].min == {min(r["min_ns"] for r in ks)}ns',
              f'kernel["*"].max == {max(r["max_ns"] for r in ks)}ns',
              f"kernel.distinct == {len(ks)}",
              f"device.kernels == {s['totals']['kernels']['count']}",
              f"device[0].busy_ns == {dev['busy_ns']}ns",
              f"device[\"{dev['name'][:5]}*\"].spans == {dev['spans']}",
              f"totals.copies.bytes == {s['totals']['copies']['bytes']}B",
              f"copy.bytes == {s['totals']['copies']['bytes'] / 1024}KiB",
              f"copy.bytes / copy.total > {s['totals']['copies']['bytes'] / s['totals']['copies']['total_ns'] * 0.999}GB/s",
              f"copy.bytes / copy.total < {s['totals']['copies']['bytes'] / s['totals']['copies']['total_ns'] * 1.001}GB/s",
              "copy.bandwidth > 1GB/s",
              'kernel["gemm_f32"].total / kernel.total >= 50%',
              'kernel["gemm_f32"].total + kernel["bias_add"].total == kernel.total',
              "kernel.count / kernel.total > 0 / 1ns",
              f"device[0].busy > {busy_lo / 100}%",
              f"device[0].busy < {(busy_lo + 1) / 100}%",
              "device[0].busy == device.busy"]  # one device: one share, not two roundings
    p = gt(["check", sj, *checks], tmp_path)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    assert all(l.startswith("PASS") for l in result_lines(p)), p.stdout.decode()


def test_lost_events_fail_lost_checks(tmp_path):
    p = gt(["check", FIXTURE, "lost == 0", "lost.ring_full <= 2", 'lost["ring*"] == 3',
            "lost.by_reason.ring_full == 3", "lost.total == 3"], tmp_path)
    assert p.returncode == 1
    assert result_lines(p) == ["FAIL lost == 0: 3", "FAIL lost.ring_full <= 2: 3",
                               'PASS lost["ring*"] == 3: 3',
                               "PASS lost.by_reason.ring_full == 3: 3",
                               "PASS lost.total == 3: 3"]


def test_adjusted_device_times_checks(tmp_path):
    """Device times a backend corrected (the trailer's "adjusted": proc_a has 2 kernels
    clamped to their launch, the largest by 1.5 us): counted by reason, with the largest
    correction as a time; a reason gputrace has that did not happen reads 0."""
    p = gt(["check", FIXTURE, "adjusted == 0", "adjusted.clamped <= 2",
            'adjusted["clamp*"].max == 1.5us', "adjusted.by_reason.clamped.count == 2",
            "adjusted.clock_step == 0", "adjusted.max < 1us", "adjusted.total == 2"], tmp_path)
    assert p.returncode == 1
    assert result_lines(p) == ["FAIL adjusted == 0: 2", "PASS adjusted.clamped <= 2: 2",
                               'PASS adjusted["clamp*"].max == 1.5us: 1.5 us',
                               "PASS adjusted.by_reason.clamped.count == 2: 2",
                               "PASS adjusted.clock_step == 0: 0",
                               "FAIL adjusted.max < 1us: 1.5 us",
                               "PASS adjusted.total == 2: 2"]
    # a typo never passes; a count is not a time
    p = gt(["check", FIXTURE, "adjusted.clampd == 0"], tmp_path)
    assert p.returncode == 2
    assert 'no adjustment reason "clampd" in the summary' in p.stdout.decode() + p.stderr.decode()
    for bad, says in (("adjusted.clamped.min < 1us", "adjusted.REASON takes .count or .max"),
                      ("adjusted.max < 3", "adjusted.max is a time"),
                      ("adjustd == 0", "did you mean 'adjusted'?")):
        p = gt(["check", FIXTURE, bad], tmp_path)
        assert p.returncode == 2 and says in p.stderr.decode(), (bad, p.stderr)
    # a summary written before "adjusted" existed: nothing was adjusted
    old = tmp_path / "old.json"
    s = json.loads(gt(["summary", "--json", "-", FIXTURE], tmp_path).stdout)
    del s["adjusted"]
    old.write_text(json.dumps(s))
    p = gt(["check", old, "adjusted == 0", "adjusted.clamped.max == 0ns"], tmp_path)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()


def test_failed_calls_fail_errors_checks(tmp_path):
    """errors: the calls whose result was an error (args.error), but a poll's "not
    ready"; 0 in a summary written before it existed."""
    trace = tmp_path / "t.json"
    calls = [("cuda_runtime", "cudaMalloc", "cudaErrorMemoryAllocation"),
             ("cuda_runtime", "cudaMalloc", None),
             ("cuda_runtime", "cudaStreamQuery", "cudaErrorNotReady"),
             ("ze_api", "zeCommandListClose", "ZE_RESULT_ERROR_INVALID_ARGUMENT")]
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": i, "dur": 1,
         "args": {"result": 0 if error is None else 2, **({"error": error} if error else {})}}
        for i, (cat, name, error) in enumerate(calls)]}))
    md = tmp_path / "checks.md"
    p = gt(["check", f"--markdown={md}", trace, "errors == 0", "errors == 2",
            "errors.total <= 2"], tmp_path)
    assert p.returncode == 1
    assert result_lines(p) == ["FAIL errors == 0: 2", "PASS errors == 2: 2",
                               "PASS errors.total <= 2: 2"]
    # the Markdown report names them, under the API calls
    text = md.read_text().splitlines()
    at = text.index("2 API calls returned an error:")
    assert text[at + 2:at + 7] == [
        "| call | error | count |", "|---|---|--:|",
        "| `cudaMalloc` | `cudaErrorMemoryAllocation` | 1 |",
        "| `zeCommandListClose` | `ZE_RESULT_ERROR_INVALID_ARGUMENT` | 1 |", ""]
    assert text.index("| API call | count | total | mean | share |") < at
    s = json.loads(gt(["summary", "--json", "-", trace], tmp_path).stdout)
    assert s["errors"] == {"total": 2, "calls": [
        {"name": "cudaMalloc", "error": "cudaErrorMemoryAllocation", "count": 1},
        {"name": "zeCommandListClose", "error": "ZE_RESULT_ERROR_INVALID_ARGUMENT",
         "count": 1}]}
    del s["errors"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(s))
    p = gt(["check", f"--markdown={md}", old, "errors == 0"], tmp_path)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    assert "returned an error" not in md.read_text()
    # counted but not named (a summary cut short by hand): the count, no empty table
    old.write_text(json.dumps({**s, "errors": {"total": 2}}))
    gt(["check", f"--markdown={md}", old, "errors == 0"], tmp_path)
    assert "2 API calls returned an error." in md.read_text().splitlines()
    assert "| call | error | count |" not in md.read_text()
    # as the other tables, ten rows and a count of the rest
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": f"cudaCall{i:02}", "pid": 1, "tid": 1,
         "ts": i, "dur": 1, "args": {"result": 2, "error": "cudaErrorMemoryAllocation"}}
        for i in range(12)]}))
    gt(["check", f"--markdown={md}", trace, "errors == 0"], tmp_path)
    text = md.read_text().splitlines()
    at = text.index("12 API calls returned an error:")
    assert text[at + 4] == "| `cudaCall00` | `cudaErrorMemoryAllocation` | 1 |"
    assert text[at + 13:at + 15] == ["| `cudaCall09` | `cudaErrorMemoryAllocation` | 1 |",
                                     "| 2 more | | |"]


def test_checks_too_deep_or_too_long_are_refused(tmp_path):
    """Every pass over a check recurses: 50000 '(' crashed the tool (SIGSEGV), also
    under `gputrace run --check`. Nesting and length are bounded, with a column; an
    unexpected character is named whole."""
    deep = "(" * 50000 + "1" + ")" * 50000 + " > 0"
    for check, says in ((deep, "column 201: nested too deep: at most 200 levels"),
                        ("0 < " + "-" * 300 + "1", "nested too deep"),
                        ("1+" * 20000 + "1 > 0", "too long: a check has at most 10000")):
        p = gt(["check", FIXTURE, check], tmp_path)
        assert p.returncode == 2 and says in p.stderr.decode(), p.stderr[:300]
    nested = "(" * 150 + "1" + ")" * 150 + " > 0"
    assert gt(["check", FIXTURE, nested], tmp_path).returncode == 0
    # what was found is named whole: a UTF-8 character, not its first byte
    for check, found in (("lost ≥ 0", "found '≥'"), ("lost \x01 0", "a control character (0x01)")):
        p = gt(["check", FIXTURE, check], tmp_path)
        assert p.returncode == 2 and found in p.stderr.decode(), p.stderr


def test_junit_and_markdown_reports(tmp_path):
    _, sj, s = traced(tmp_path, "run", 10, 64)
    total = rows(s, "kernels")["gemm_f32"]["total_ns"]
    junit, md = tmp_path / "checks.xml", tmp_path / "checks.md"
    checks = ["device.kernels >= 1", 'kernel["gemm_f32"].total <= 100us',
              'kernel["gemm_f3"].count == 1']
    p = gt(["check", "--junit", junit, f"--markdown={md}", sj, *checks], tmp_path)
    assert p.returncode == 2  # the typo wins over the failure
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == checks
    assert cases[0].find("failure") is None and cases[0].find("error") is None
    assert cases[0].find("system-out").text == "measured 20"
    fail = cases[1].find("failure")
    assert fail.get("message") == f"measured {fmt_time(total)}, bound 100 us"
    assert 'no kernel named "gemm_f3"' in cases[2].find("error").get("message")
    text = md.read_text()
    assert text.startswith("### gputrace checks: 1 passed, 1 failed, 1 could not be evaluated")
    assert f'| ❌ FAIL | `kernel["gemm_f32"].total <= 100us` | {fmt_time(total)} (bound 100 us) |' \
        in text.splitlines()
    assert "| `gemm_f32` | 10 |" in text



def test_markdown_means_are_rounded_down_as_the_summarys(tmp_path):
    """The Markdown's kernel and API tables give each row's mean as the summary does,
    total over count rounded down: 163747 ns over 10 read 16.375 us there, beside the
    check's (and the summary's) 16.374 us in the same report."""
    sj, md = tmp_path / "s.json", tmp_path / "c.md"
    assert gt(["summary", "--json", sj, FIXTURE], tmp_path).returncode == 0
    s = json.loads(sj.read_text())
    s["kernels"] = [{"name": "gemm_f32", "count": 10, "total_ns": 163747, "mean_ns": 16374,
                     "min_ns": 16353, "max_ns": 16407, "share": 1.0}]
    s["api_calls"] = [{"name": "zeCommandQueueSynchronize", "cat": "ze_api", "count": 3,
                       "total_ns": 5002, "mean_ns": 1667, "min_ns": 1000, "max_ns": 2000,
                       "share": 1.0}]
    sj.write_text(json.dumps(s))
    p = gt(["check", "--markdown", md, sj, 'kernel["gemm_f32"].mean == 16374ns'], tmp_path)
    assert p.returncode == 0, p.stdout.decode()
    text = md.read_text().splitlines()
    assert '| ✅ PASS | `kernel["gemm_f32"].mean == 16374ns` | 16.374 us |' in text
    assert "| `gemm_f32` | 10 | 163.747 us | 16.374 us | 100% |" in text, text
    assert "| `zeCommandQueueSynchronize` | 3 | 5.002 us | 1.667 us | 100% |" in text, text


def test_junit_of_a_check_in_latin1_is_well_formed(tmp_path):
    """The JUnit file says UTF-8: a check whose bytes are not (a glob typed in Latin-1)
    went into it as they were, and no test reporter could read the file. Such a byte
    reads as U+FFFD; UTF-8 names stay as they are."""
    junit = tmp_path / "c.xml"
    latin1, utf8 = b'kernel["\xe9*"].count == 0', 'kernel["é*"].count == 0'.encode()
    p = subprocess.run([str(ROOT / "scripts" / "gputrace"), "check", "--junit", str(junit),
                        str(FIXTURE), latin1, utf8], cwd=tmp_path, env=gt_env(),
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stdout
    names = [c.get("name") for c in ET.parse(junit).getroot().iter("testcase")]
    assert names == ['kernel["\ufffd*"].count == 0', 'kernel["é*"].count == 0']


def test_markdown_summary_line_counts_in_the_singular(tmp_path):
    """The Markdown summary's first line reads "1 kernel launch", "1 API call", "1 copy or
    fill", "1 lost event" (it said "1 API calls"), and the plural from 2."""
    _, sj, _ = traced(tmp_path, "run", 10, 64)
    with open(sj) as f:
        doc = json.load(f)
    for n, words in ((1, ["1 kernel launch (", ", 1 API call, ", ", 1 copy or fill (",
                          ", 1 lost event, over "]),
                     (2, ["2 kernel launches (", ", 2 API calls, ", ", 2 copies and fills (",
                          ", 2 lost events, over "])):
        doc["totals"]["kernels"]["count"] = doc["totals"]["api_calls"]["count"] = n
        doc["totals"]["copies"]["count"] = doc["lost"]["total"] = n
        one, md = tmp_path / f"s{n}.json", tmp_path / f"s{n}.md"
        one.write_text(json.dumps(doc))
        p = gt(["check", f"--markdown={md}", one, "device.kernels >= 1"], tmp_path)
        assert p.returncode == 0, p.stderr
        line = next(l for l in md.read_text().splitlines() if "kernel launch" in l)
        assert line.startswith(words[0]) and all(w in line for w in words[1:]), line

CMARK_GFM = shutil.which("cmark-gfm")


@pytest.mark.skipif(not CMARK_GFM, reason="no cmark-gfm (make deps installs Debian's)")
def test_markdown_code_spans_read_back_as_the_checks(tmp_path):
    """GitHub's own Markdown parser (cmark-gfm, with its table extension) reads each
    check back exactly from the table, whatever backticks and pipes it holds: a check
    with a double backtick used to end its code span early."""
    md = tmp_path / "checks.md"
    checks = ['kernel["a``b*"].count == 0', 'kernel["a`b*"].count == 0',
              'kernel["a|b*"].count == 0', 'kernel["```*"].count == 0', "lost >= 0"]
    p = gt(["check", f"--markdown={md}", FIXTURE, *checks], tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    html = subprocess.run([CMARK_GFM, "-e", "table", str(md)], capture_output=True,
                          check=True).stdout.decode()
    cells = [m for m in re.findall(r"<td><code>(.*?)</code></td>", html)]
    assert [unescape(c) for c in cells[:len(checks)]] == checks, html


def test_reports_on_a_full_disk_say_so(tmp_path):
    """A report that cannot be written says why in the write's own words: a full disk
    is "No space left on device", not "Input/output error"; the check exits 2."""
    trace, sj, _ = traced(tmp_path, "run", 2, 64)
    for opt in ("--junit", "--markdown"):
        p = gt(["check", opt, "/dev/full", sj, "device.kernels >= 1"], tmp_path)
        assert p.returncode == 2, p.stderr
        assert "gputrace check: cannot write /dev/full: No space left on device" in \
            p.stderr.decode().splitlines(), p.stderr
    p = gt(["summary", "--json", "/dev/full", trace], tmp_path)
    assert "gputrace summary: cannot write /dev/full: No space left on device" in \
        p.stderr.decode().splitlines(), p.stderr


@pytest.mark.parametrize("where", ["/dev/full", "missing/s.json"])
def test_summary_json_it_cannot_write_prints_no_table(tmp_path, where):
    """summary --json OUT where OUT cannot be written: one line naming it, exit 1, and
    nothing on stdout. The table was printed first, then the line: a caller reading
    stdout (or a log) took the table for the command's success."""
    trace, _, _ = traced(tmp_path, "run", 2, 64)
    out = where if where.startswith("/") else str(tmp_path / where)
    reason = "No space left on device" if out == "/dev/full" else "No such file or directory"
    p = gt(["summary", "--json", out, trace], tmp_path)
    assert p.returncode == 1
    assert p.stdout == b"", p.stdout
    assert p.stderr.decode().splitlines() == [f"gputrace summary: cannot write {out}: {reason}"]


def test_checks_from_a_file(tmp_path):
    f = tmp_path / "checks.txt"
    f.write_text("# smoke checks\n\nlost == 0\n  kernel.count >= 1\nkernel.totl > 0ns\n")
    p = gt(["check", "-f", f, FIXTURE], tmp_path)
    assert p.returncode == 2
    assert f"{f}:5: column 8: unknown field 'totl'" in p.stderr.decode()
    f.write_text("# smoke checks\n\nlost >= 0\n  kernel.count >= 1\n")
    p = gt(["check", "--checks", f, FIXTURE, "spans > 0"], tmp_path)
    assert p.returncode == 0, p.stdout.decode()
    assert [l.split(":")[0] for l in result_lines(p)] == \
        ["PASS lost >= 0", "PASS kernel.count >= 1", "PASS spans > 0"]
    # a checks file that cannot be read is one line and exit 2: a folder opened, read as
    # no checks, and the other checks passed (exit 0); a missing one added the usage text
    for bad, line in ((tmp_path, f"cannot read {tmp_path}: Is a directory"),
                      (tmp_path / "none", f"cannot open {tmp_path}/none: No such file or "
                                          "directory")):
        p = gt(["check", FIXTURE, "lost >= 0", "-f", bad], tmp_path)
        assert p.returncode == 2 and not p.stdout, p.stdout
        assert p.stderr.decode().splitlines() == ["gputrace check: " + line], p.stderr


def test_a_hash_starts_a_comment_anywhere_outside_a_quoted_name(tmp_path):
    # README: "one per line (`#` starts a comment)"; a trailing comment was
    # "unexpected '#' after the check" (exit 2)
    f = tmp_path / "checks.txt"
    f.write_text("# comment\nlost >= 0  # trailing\nspans > 0#no blank\n"
                 "  # indented\nkernel.count >= 1\t# tab\n")
    p = gt(["check", "-f", f, FIXTURE], tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    assert [l.split(":")[0] for l in result_lines(p)] == \
        ["PASS lost >= 0", "PASS spans > 0", "PASS kernel.count >= 1"]
    # a quoted name keeps its '#' (and an escaped quote does not end it)
    f.write_text('kernel["a#b"].count == 0 # no such kernel\n'
                 'kernel["c\\"#"].count == 0\n')
    p = gt(["check", "-f", f, FIXTURE], tmp_path)
    assert p.returncode == 2
    assert [l.split(":")[0] for l in result_lines(p)] == \
        ['ERROR kernel["a#b"].count == 0', 'ERROR kernel["c\\"#"].count == 0']
    assert 'no kernel named "a#b"' in p.stdout.decode()
    assert 'no kernel named "c"#"' in p.stdout.decode()


def test_usage_errors(tmp_path):
    for args in (["check"], ["check", FIXTURE], ["check", "--bogus", FIXTURE, "lost == 0"],
                 ["check", tmp_path / "missing.json", "lost == 0"]):
        p = gt(args, tmp_path)
        assert p.returncode == 2, args
        assert p.stderr.decode().startswith("gputrace check: "), p.stderr
    notjson = tmp_path / "x.json"
    notjson.write_text('{"hello": 1}')
    p = gt(["check", notjson, "lost == 0"], tmp_path)
    assert p.returncode == 2
    assert "neither a trace nor a gputrace summary JSON" in p.stderr.decode()
    newer = tmp_path / "v2.json"
    newer.write_text('{"schema": "gputrace-summary", "version": 2}')
    p = gt(["check", newer, "lost == 0"], tmp_path)
    assert p.returncode == 2 and "newer than this gputrace reads" in p.stderr.decode()
    p = gt(["check", "--syntax-only", "lost == 0", "kernel.count >= 1"], tmp_path)
    assert p.returncode == 0 and not p.stdout
    assert re.search(rb"Exit status: 0 all pass, 1 a check failed, 2",
                     gt(["check", "--help"], tmp_path).stdout)


def test_a_value_that_rounds_is_given_exactly_too(tmp_path):
    """README: printed values keep three decimals, with the exact figure after them when
    that rounds. 34252 B is 33.44921875 KiB: 33.449 KiB rounds (33.449 * 1024 rounds back
    to 34252, which left it out); a mean of 8702.75 ns is not 8.703 us; 1024 B is 1 KiB."""
    p = gt(["check", FIXTURE, "trace.bytes * 0 + 34252 B < 1 B",
            "kernel.total * 0 + 8702.75 ns < 1 ns", "trace.bytes * 0 + 1024 B < 1 B"], tmp_path)
    assert p.returncode == 1
    assert result_lines(p) == [
        "FAIL trace.bytes * 0 + 34252 B < 1 B: 33.449 KiB (34252 B)",
        "FAIL kernel.total * 0 + 8702.75 ns < 1 ns: 8.703 us (8702.75 ns)",
        "FAIL trace.bytes * 0 + 1024 B < 1 B: 1 KiB"]
    # rates and percentages too: 9999900000 B/s is "10 GB/s", 2.4569% is "2.46%"; a
    # figure that does not round stays short
    rate, pct = "trace.bytes * 0 / 1 s + ", "device.busy * 0 + "
    p = gt(["check", FIXTURE, rate + "9999900000 B/s <= 10 GB/s", pct + "2.4569% > 2.46%",
            pct + "12.5% > 12.5%", rate + "1GB/s * 10 < 10 GB/s"], tmp_path)
    assert result_lines(p) == [
        f"PASS {rate}9999900000 B/s <= 10 GB/s: 10 GB/s (9999900000 B/s)",
        f"FAIL {pct}2.4569% > 2.46%: 2.46% (2.4569%)",
        f"FAIL {pct}12.5% > 12.5%: 12.5%",
        f"FAIL {rate}1GB/s * 10 < 10 GB/s: 10 GB/s"]


def test_two_reports_naming_one_file_are_refused(tmp_path):
    """--junit and --markdown naming one file (a typo in a CI job): the
    Markdown was written over the JUnit XML, which the job's test report then
    did not find, and nothing said so. One line, status 2, nothing written."""
    out = tmp_path / "report.out"
    p = gt(["check", "--junit", out, "--markdown", out, FIXTURE, "lost == 0"], tmp_path)
    assert (p.returncode, p.stdout, p.stderr.decode()) == (
        2, b"", f"gputrace check: --junit {out} and --markdown {out} name one file (the last "
        "written would be all it held): give two\n"), p
    assert not out.exists()
    p = gt(["diff", FIXTURE, "--", FIXTURE, "--json=" + str(out), "--junit", out], tmp_path)
    assert (p.returncode, p.stdout, p.stderr.decode()) == (
        2, b"", f"gputrace diff: --json {out} and --junit {out} name one file (the last "
        "written would be all it held): give two\n"), p
    assert not out.exists()


def test_a_bound_in_a_bigger_unit_is_read_exactly(tmp_path):
    """A bound is the decimal the user wrote, in base units, rounded once: 16.374us
    read as 16.374 * 1e3 = 16373.999999999998 ns, so a kernel's mean of exactly
    16374 ns failed `mean <= 16.374us` (printed "FAIL ...: 16.374 us", its own bound),
    and a share of exactly 35% failed `>= 35%` (35 * 0.01 = 0.35000000000000003)."""
    t = "kernel.total * 0 + "
    b = "trace.bytes * 0 + "
    checks = [t + "16374 ns <= 16.374us", t + "16374 ns == 16.374 us", t + "1001 ns <= 1.001us",
              t + "1001 ns == 0.001001ms", t + "1001 ns == 1.001e-6 s", t + "1001 ns == 1.001e3ns",
              f"({b}7 B) / 20 B >= 35%", f"({b}7 B) / 20 B == 35%", f"({b}41 B) / 100 B <= 41%",
              b + "1001 B == 1.001 KB", b + "1001 B <= 1.001 kB",
              "trace.bytes * 0 / 1 s + 1001 B/s == 1.001 KB/s",
              "trace.bytes * 0 / 1 s + 123 MB/s == 0.123 GB/s",
              b + "3 KiB == 3072 B", b + "1536 B == 1.5 KiB"]
    p = gt(["check", FIXTURE, *checks], tmp_path)
    assert p.returncode == 0, p.stdout.decode()
    assert result_lines(p)[:2] == [f"PASS {t}16374 ns <= 16.374us: 16.374 us",
                                   f"PASS {t}16374 ns == 16.374 us: 16.374 us"]
    # and just past the bound still fails
    p = gt(["check", FIXTURE, t + "16375 ns <= 16.374us", f"({b}7 B) / 20 B > 35%"], tmp_path)
    assert p.returncode == 1
    assert [l.split(" ", 1)[0] for l in result_lines(p)] == ["FAIL", "FAIL"]


def test_an_unknown_loss_reason_lists_every_known_one(tmp_path):
    """The error for a loss reason gputrace does not record names every one it does:
    the list was cut at 400 characters ("..., cupti_after_exi)"), leaving out
    "cupti_after_exit" and "unknown"."""
    p = gt(["check", FIXTURE, "lost.ringfull == 0"], tmp_path)
    assert p.returncode == 2
    res = result_lines(p)
    assert res[0].startswith('ERROR lost.ringfull == 0: no loss reason "ringfull"'), res
    assert res[0].endswith(", cupti_after_exit, unknown)"), res
