"""`gputrace diff BASE... -- NEW...`: runs of test/cli/ci_app on the simulated
Level Zero device compared per kernel, API call and copy kind. A kernel
made slower by a bigger launch must be flagged; identical runs must flag
nothing; medians and spreads over several runs decide what is noise."""
import copy
import json
import statistics
import xml.etree.ElementTree as ET

import pytest

from ci_helpers import gt, rows, traced

RULES = ["--fail-on", "time > +10%", "--fail-on", "mean > +10%", "--fail-on", "count != 0%",
         "--fail-on", "new-kernels", "--fail-on", "vanished-kernels"]


def runs(tmp_path, name, n, *args):
    return [traced(tmp_path, f"{name}{i}", *args) for i in range(n)]


def out_lines(p):
    return p.stdout.decode().splitlines()


@pytest.mark.sanitize
def test_a_slower_kernel_is_flagged(tmp_path):
    base = runs(tmp_path, "base", 2, 10, 64)
    new = runs(tmp_path, "new", 2, 10, 128)  # gemm_f32: twice the groups, twice the time
    p = gt(["diff", *[b[1] for b in base], "--", *[n[1] for n in new], *RULES, "--json=d.json"],
           tmp_path)
    text = p.stdout.decode()
    assert p.returncode == 1, text + p.stderr.decode()
    d = json.loads((tmp_path / "d.json").read_text())
    k = rows(d, "kernels")
    gemm = k["gemm_f32"]
    assert gemm["status"] == "changed" and not gemm["within_spread"]
    assert gemm["change"]["count"] == 0
    assert 95 < gemm["change"]["total_pct"] < 105, gemm
    assert gemm["failed"] == "time > +10%; mean > +10%"
    # the medians are the medians of the runs' own summaries
    for side, rs in (("base", base), ("new", new)):
        totals = [rows(s, "kernels")["gemm_f32"]["total_ns"] for _, _, s in rs]
        assert gemm[side]["totals_ns"] == totals
        assert gemm[side]["total_ns"] == statistics.median(totals)
    # bias_add and the copies did not change: nothing flagged there
    assert k["bias_add"]["failed"] == ""
    assert all(r["failed"] == "" for r in d["copies"])
    assert [r["rule"] for r in d["rules"] if r["failed"]] == ["time > +10%", "mean > +10%"]
    lines = out_lines(p)
    row = next(l for l in lines if l.strip().startswith("gemm_f32"))
    assert "10 -> 10" in row and "FAIL time > +10%; mean > +10%" in row, row
    assert any(l.startswith("FAIL time > +10%: kernel gemm_f32 +") for l in lines), text
    assert "PASS count != 0%" in lines and "PASS new-kernels" in lines
    assert lines[-1] == "gputrace diff: 2 of 5 rules broken"


@pytest.mark.sanitize
def test_identical_runs_flag_nothing(tmp_path):
    base = runs(tmp_path, "base", 3, 10, 64)
    new = runs(tmp_path, "new", 3, 10, 64)
    p = gt(["diff", *[b[0] for b in base], "--", *[n[1] for n in new], *RULES, "--json"],
           tmp_path)  # traces on one side, summaries on the other
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    d = json.loads(p.stdout)
    assert d["failed"] is False
    assert all(not r["failed"] for r in d["rules"]), d["rules"]
    for table in ("kernels", "api_calls", "copies"):
        for r in d[table]:
            assert r["failed"] == "" and r["status"] in ("same", "changed"), r
            assert r["change"]["count"] == 0, r
    assert {r["name"] for r in d["kernels"]} == {"gemm_f32", "bias_add"}
    # several runs: the note says when a time moved inside the spread
    t = gt(["diff", *[b[1] for b in base], "--", *[n[1] for n in new], *RULES, "--all"], tmp_path)
    assert t.returncode == 0
    assert out_lines(t)[-1] == "gputrace diff: 0 of 5 rules broken"
    assert "spread" in out_lines(t)[0]


def test_new_and_vanished_kernels(tmp_path):
    _, base, _ = traced(tmp_path, "base", 3, 64)
    _, new, _ = traced(tmp_path, "new", 3, 64, 1)  # adds softmax
    p = gt(["diff", base, "--", new, "--fail-on", "new-kernels"], tmp_path)
    assert p.returncode == 1
    lines = out_lines(p)
    assert "FAIL new-kernels: kernel softmax new" in lines
    row = next(l for l in lines if l.strip().startswith("softmax"))
    assert "0 -> 3" in row and row.rstrip().endswith("new; FAIL new-kernels")
    p = gt(["diff", new, "--", base, "--fail-on", "new-kernels", "--fail-on",
            "vanished-kernels", "--fail-on", "count != 0%"], tmp_path)
    assert p.returncode == 1
    lines = out_lines(p)
    assert "PASS new-kernels" in lines
    assert "FAIL vanished-kernels: kernel softmax vanished" in lines
    assert "FAIL count != 0%: kernel softmax -100.0%" in lines


def summary(kernels, api=(), copies=(), ranges=None, graphs=None):
    """A summary JSON (schema version 1) with the given rows; ranges
    (name, count, device_ns, kernels): none, a summary written before
    ranges were recorded; graphs (name, count, total_ns) as kernels: none, one
    written before graph launches had a table."""
    def timed(name, count, total, key="name"):
        return {key: name, "count": count, "total_ns": total, "mean_ns": total // max(count, 1),
                "min_ns": 0, "max_ns": total, "share": 0.0}
    ks = [timed(*k) for k in kernels]
    cs = [dict(timed(*c, key="kind"), bytes=0, bandwidth_bytes_per_s=0) for c in copies]
    for c in cs:
        del c["share"]
    s = {"schema": "gputrace-summary", "version": 1, "trace": {"path": None, "bytes": 0},
            "window": {"start_ns": 0, "end_ns": 0, "duration_ns": 0}, "spans": 0,
            "kernels": ks, "api_calls": [dict(timed(*a), cat="ze_api") for a in api],
            "annotations": [], "copies": cs, "devices": [],
            "totals": {t: {"distinct": 0, "count": 0, "total_ns": 0}
                       for t in ("kernels", "api_calls", "annotations")} |
            {"copies": {"count": 0, "bytes": 0, "total_ns": 0},
             "overhead": {"count": 0, "total_ns": 0}},
            "lost": {"total": 0, "by_reason": {}}, "partial": False}
    if ranges is not None:
        s["ranges"] = [{"name": n, "count": c, "host_ns": 1000 * c, "device_ns": d,
                        "device_spans": k, "kernels": k} for n, c, d, k in ranges]
    if graphs is not None:
        s["graphs"] = [timed(*g) for g in graphs]
    return s


def write(tmp_path, name, s):
    path = tmp_path / name
    path.write_text(json.dumps(s))
    return path


def test_medians_and_spread_decide_noise(tmp_path):
    us = 1000
    base = [write(tmp_path, f"b{i}.json", summary([("k", 10, t * us)], api=[("zeInit", 1, 5 * us)]))
            for i, t in enumerate((100, 110, 90))]
    noisy = [write(tmp_path, f"n{i}.json", summary([("k", 10, t * us)], api=[("zeInit", 1, 50 * us)]))
             for i, t in enumerate((105, 95, 120))]
    slower = [write(tmp_path, f"s{i}.json", summary([("k", 10, t * us)]))
              for i, t in enumerate((200, 210, 190))]
    p = gt(["diff", *base, "--", *noisy, "--fail-on", "time > +10%", "--json"], tmp_path)
    assert p.returncode == 0, p.stdout
    k = json.loads(p.stdout)["kernels"][0]
    assert k["base"]["total_ns"] == 100 * us and k["new"]["total_ns"] == 105 * us
    assert (k["base"]["total_min_ns"], k["base"]["total_max_ns"]) == (90 * us, 110 * us)
    assert k["within_spread"] is True and k["change"]["total_pct"] == pytest.approx(5.0)
    # the API row is not covered by an unscoped rule; "api time" covers it
    p = gt(["diff", *base, "--", *noisy, "--fail-on", "api time > +100%"], tmp_path)
    assert p.returncode == 1
    assert "FAIL api time > +100%: API call zeInit +900.0%" in out_lines(p)
    p = gt(["diff", *base, "--", *slower, "--fail-on", "time > +10%", "--json"], tmp_path)
    assert p.returncode == 1
    k = json.loads(p.stdout)["kernels"][0]
    assert k["within_spread"] is False and k["change"]["total_pct"] == pytest.approx(100.0)
    # one run a side: no spread, the plain difference counts
    p = gt(["diff", base[0], "--", noisy[2], "--fail-on", "time > +10%"], tmp_path)
    assert p.returncode == 1 and "FAIL time > +10%: kernel k +20.0%" in out_lines(p)
    # changes below --min-change (default 1us) are never a regression
    tiny_b = write(tmp_path, "tb.json", summary([("k", 1, 300)]))
    tiny_n = write(tmp_path, "tn.json", summary([("k", 1, 600)]))
    assert gt(["diff", tiny_b, "--", tiny_n, "--fail-on", "time > +10%"], tmp_path).returncode == 0
    for zero in ("0ns", "0"):  # 0 needs no unit
        assert gt(["diff", tiny_b, "--", tiny_n, "--fail-on", "time > +10%", "--min-change", zero],
                  tmp_path).returncode == 1, zero
    # absolute changes and scoped globs
    p = gt(["diff", base[0], "--", slower[0], "--fail-on", 'kernel["k*"] time > +50us'], tmp_path)
    assert p.returncode == 1 and 'FAIL kernel["k*"] time > +50us: kernel k +100 us' in out_lines(p)
    # a glob that matches no row is a typo: an error, never a pass
    p = gt(["diff", base[0], "--", slower[0], "--fail-on", 'kernel["x*"] time > +50us'], tmp_path)
    assert p.returncode == 2 and out_lines(p)[-2].startswith('ERROR kernel["x*"] time > +50us')


def test_a_change_exactly_at_a_rule_breaks_only_its_inclusive_side(tmp_path):
    """1 ms -> 1.07 ms is +7% exactly: (70000 / 1000000) * 100 was 7.000000000000001,
    which broke "time > +7%" and "mean > +7%" (and 200 us -> 186 us broke "time < -7%");
    a time bound 1.001us read as 1000.9999999999999 ns, so a change of 1001 ns broke
    "time > +1.001us" and passed "time <= +1.001us"."""
    us = 1000
    base = write(tmp_path, "b.json", summary([("k", 10, 1000 * us), ("j", 10, 100 * us)]))
    new = write(tmp_path, "n.json", summary([("k", 10, 1070 * us), ("j", 10, 100 * us + 1001)]))
    for rule, broken in (('kernel["k"] time > +7%', False), ('kernel["k"] mean > +7%', False),
                         ('kernel["k"] time >= +7%', True), ('kernel["k"] mean >= +7%', True),
                         ('kernel["k"] time == +7%', True), ('kernel["k"] time < -7%', False),
                         ('kernel["k"] time > +70us', False), ('kernel["k"] time >= +70us', True),
                         ('kernel["k"] mean > +7us', False), ('kernel["k"] mean >= +7us', True),
                         ('kernel["j"] time > +1.001us', False),
                         ('kernel["j"] time >= +1.001us', True),
                         ('kernel["j"] time <= +1.001us', True)):
        p = gt(["diff", base, "--", new, "--fail-on", rule], tmp_path)
        assert p.returncode == (1 if broken else 0), (rule, out_lines(p)[-3:])
    # the other way: 200 us -> 186 us is -7% exactly
    back = write(tmp_path, "back.json", summary([("k", 10, 200 * us)]))
    down = write(tmp_path, "down.json", summary([("k", 10, 186 * us)]))
    for rule, broken in (("time < -7%", False), ("time <= -7%", True)):
        p = gt(["diff", back, "--", down, "--fail-on", rule], tmp_path)
        assert p.returncode == (1 if broken else 0), (rule, out_lines(p)[-3:])


def test_a_run_not_closed_is_said(tmp_path):
    """A summary whose trace was not closed (a killed run: `incomplete`) has counts that
    may fall short: a rule it breaks may be that, not a change. The diff said nothing of
    it; now one line on stderr per such run, and the status is the rules' as before."""
    base = write(tmp_path, "b.json", summary([("k", 10, 100000)]))
    killed = summary([("k", 4, 40000)])
    killed["incomplete"] = 1
    new = write(tmp_path, "n.json", killed)
    p = gt(["diff", base, "--", new, "--fail-on", "count != 0%"], tmp_path)
    assert p.returncode == 1
    assert p.stderr.decode().splitlines() == [
        f"gputrace diff: new run {new}: 1 trace not closed (killed, or cut short): its counts "
        "may fall short"], p.stderr
    p = gt(["diff", base, "--", base], tmp_path)
    assert (p.returncode, p.stderr) == (0, b"")


def test_rows_left_out_are_counted_in_the_singular(tmp_path):
    """--top 0 leaves out every unflagged row, said per table: "1 more kernel rows"."""
    b = write(tmp_path, "b.json", summary([("k", 10, 100000), ("j", 10, 1000)],
                                          api=[("zeInit", 1, 1000), ("zeDriverGet", 1, 10)]))
    p = gt(["diff", b, "--", b, "--top", "1"], tmp_path)
    assert p.returncode == 0
    assert "  (1 more kernel row unflagged: --all shows it)" in out_lines(p), out_lines(p)
    assert "  (1 more API call row unflagged: --all shows it)" in out_lines(p), out_lines(p)
    p = gt(["diff", b, "--", b, "--top", "0"], tmp_path)
    assert "  (2 more kernel rows unflagged: --all shows them)" in out_lines(p), out_lines(p)


def test_one_rule_is_counted_in_the_singular(tmp_path):
    """One --fail-on rule: "0 of 1 rule broken", "1 rule holds" (were "rules")."""
    b = write(tmp_path, "b.json", summary([("k", 10, 100000)]))
    md = tmp_path / "d.md"
    p = gt(["diff", b, "--", b, "--fail-on", "time > +10%", "--markdown", md], tmp_path)
    assert p.returncode == 0
    assert out_lines(p)[-1] == "gputrace diff: 0 of 1 rule broken", out_lines(p)
    assert md.read_text().startswith("### gputrace diff: ✅ 1 rule holds\n"), md.read_text()


def test_median_counts_are_exact(tmp_path):
    """The median of an even number of runs may end in .5: it is printed as
    is (README: count (exact)), not rounded to a count no run had."""
    us = 1000
    base = [write(tmp_path, f"b{i}.json", summary([("k", c, 100 * us)])) for i, c in
            enumerate((10, 11))]
    new = [write(tmp_path, f"n{i}.json", summary([("k", c, 100 * us), ("j", c, us)])) for i, c in
           enumerate((11, 12))]
    same = [write(tmp_path, f"s{i}.json", summary([("k", 10, 100 * us)])) for i in range(2)]
    md = tmp_path / "d.md"
    p = gt(["diff", *base, "--", *new, "--markdown", md], tmp_path)
    row = next(l for l in out_lines(p) if l.strip().startswith("k "))
    assert row.split()[:5] == ["k", "10.5", "->", "11.5", "+1"], row
    row = next(l for l in out_lines(p) if l.strip().startswith("j "))
    assert row.split()[:5] == ["j", "0", "->", "11.5", "+11.5"], row
    assert "| `k` | 10.5 → 11.5 |" in md.read_text()
    p = gt(["diff", *base, "--", *same, "--fail-on", "count < 0"], tmp_path)
    assert p.returncode == 1
    row = next(l for l in out_lines(p) if l.strip().startswith("k "))
    assert row.split()[:5] == ["k", "10.5", "->", "10", "-0.5"], row
    assert "FAIL count < 0: kernel k -0.5" in out_lines(p)


def test_control_characters_in_names_are_escaped(tmp_path):
    """A name with a line break cannot split a row of the table, a FAIL line
    or the Markdown table: control characters print as the summary prints
    them (\\n, \\x1b)."""
    name = "evil\nFAIL fake\x1b[0m"
    b = write(tmp_path, "b.json", summary([(name, 1, 1000)]))
    n = write(tmp_path, "n.json", summary([(name, 2, 1000)]))
    md = tmp_path / "d.md"
    p = gt(["diff", b, "--", n, "--fail-on", "count != 0", "--markdown", md], tmp_path)
    assert p.returncode == 1
    out = p.stdout.decode()
    assert "\x1b" not in out and not any(l.startswith("FAIL fake") for l in out_lines(p)), out
    shown = "evil\\nFAIL fake\\x1b[0m"
    row = next(l for l in out_lines(p) if l.strip().startswith("evil"))
    assert row.split()[:6] == ["evil\\nFAIL", "fake\\x1b[0m", "1", "->", "2", "+1"], row
    assert f"FAIL count != 0: kernel {shown} +1" in out_lines(p)
    assert f"| `{shown}` | 1 → 2 |" in md.read_text()
    assert "\x1b" not in md.read_text()


def test_an_empty_name_is_read_as_empty(tmp_path):
    """A row named "" (an NVTX range or a plug-in's kernel may have no name) is
    the same row on both sides. The name's buffer was fresh, and the tool read
    it before anything was written into it: uninitialised bytes stood for the
    name in the table, the Markdown and the JSON (not even UTF-8), and the two
    sides' "" did not meet (vanished and new)."""
    b = write(tmp_path, "b.json", summary([("", 1, 1000), ("k", 1, 1000)]))
    n = write(tmp_path, "n.json", summary([("", 2, 1000), ("k", 1, 1000)]))
    md = tmp_path / "d.md"
    p = gt(["diff", b, "--", n, "--json", "--markdown", md], tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    k = rows(json.loads(p.stdout), "kernels")
    assert sorted(k) == ["", "k"], list(k)
    assert (k[""]["status"], k[""]["change"]["count"]) == ("changed", 1), k[""]
    assert "| `` | 1 → 2 |" in md.read_text(), md.read_text()
    table = gt(["diff", b, "--", n], tmp_path).stdout.decode()
    assert [l.split()[:4] for l in table.splitlines() if l.startswith("  ") and "->" in l
            and not l.split()[0] == "k"] == [["1", "->", "2", "+1"]], table


def test_long_names_that_differ_at_their_end_are_told_apart(tmp_path):
    """Two C++ kernels of one template (a CUTLASS GEMM's names run to 300
    characters) differ at their end: the table keeps both ends of a long
    name, as the summary does, and prints whole two names that would still
    read the same. Names were cut at their 159th byte: both rows read alike,
    and which one got slower only the FAIL line below said."""
    pre = ("void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::"
           "threadblock::MmaMultistage<cutlass::gemm::GemmShape<128, 128, 32>, cutlass::"
           "transform::threadblock::PredicatedTileAccessIterator<cutlass::MatrixShape<128, "
           "32>, float, cutlass::layout::RowMajor, 1>")
    slow, same = pre + ", 4>>(Params)", pre + ", 3>>(Params)"
    mid = ["H" * 60 + f"<{i}>" + "T" * 80 for i in (1, 2)]  # the same both ends
    b = write(tmp_path, "b.json", summary([(slow, 1, 10000), (same, 1, 10000),
                                           (mid[0], 1, 1000), (mid[1], 1, 1000)]))
    n = write(tmp_path, "n.json", summary([(slow, 1, 20000), (same, 1, 10000),
                                           (mid[0], 1, 1000), (mid[1], 1, 1000)]))
    p = gt(["diff", b, "--", n, "--fail-on", "time > +10%"], tmp_path)
    assert p.returncode == 1, p.stderr.decode()
    rows = [l.strip() for l in out_lines(p) if "1 -> 1" in l]
    assert len(rows) == 4, out_lines(p)
    assert rows[0].startswith("void cutlass::Kernel<cutlass::gemm::kern...") and \
        rows[0].split("  ")[0].endswith("RowMajor, 1>, 4>>(Params)") and "FAIL" in rows[0], rows
    assert rows[1].split("  ")[0].endswith(", 3>>(Params)") and "FAIL" not in rows[1], rows
    assert len(rows[0].split("  ")[0]) == 100, rows[0]
    assert {r.split("  ")[0] for r in rows[2:]} == set(mid), rows


def test_ranges_are_compared_by_their_device_time(tmp_path):
    """A user range's time is the device time of the work launched inside
    it: "forward" slower on the device is flagged by a range rule, a range
    rule ignores kernels, and an older summary without ranges compares."""
    us = 1000
    base = write(tmp_path, "b.json", summary([("k", 10, 100 * us)], ranges=[
        ("forward", 10, 60 * us, 10), ("backward", 10, 40 * us, 10), ("old", 1, 0, 0)]))
    new = write(tmp_path, "n.json", summary([("k", 10, 100 * us)], ranges=[
        ("forward", 10, 90 * us, 10), ("backward", 10, 40 * us, 10), ("fresh", 2, 5 * us, 2)]))
    rules = ["--fail-on", 'range["forward"] mean > +20%', "--fail-on", "range time > +100%",
             "--fail-on", "time > +10%", "--fail-on", "new-ranges", "--fail-on", "vanished-ranges"]
    p = gt(["diff", base, "--", new, *rules, "--json=d.json"], tmp_path)
    assert p.returncode == 1, p.stdout.decode() + p.stderr.decode()
    d = json.loads((tmp_path / "d.json").read_text())
    r = rows(d, "ranges")
    assert (r["forward"]["base"]["total_ns"], r["forward"]["new"]["total_ns"]) == (60 * us, 90 * us)
    assert r["forward"]["base"]["mean_ns"] == 6 * us
    assert r["forward"]["failed"] == 'range["forward"] mean > +20%'
    assert r["backward"]["status"] == "same" and r["backward"]["failed"] == ""
    assert (r["fresh"]["status"], r["old"]["status"]) == ("new", "vanished")
    assert {x["rule"]: x["failed"] for x in d["rules"]} == {
        'range["forward"] mean > +20%': True, "range time > +100%": False,
        "time > +10%": False, "new-ranges": True, "vanished-ranges": True}
    lines = out_lines(gt(["diff", base, "--", new, *rules], tmp_path))
    assert 'FAIL range["forward"] mean > +20%: range forward +50.0%' in lines
    assert "FAIL new-ranges: range fresh new" in lines
    row = next(l for l in lines if l.strip().startswith("forward"))
    assert "10 -> 10" in row and "60 us -> 90 us" in row, row
    # a summary written before ranges: no range rows, nothing else changes
    plain = write(tmp_path, "p.json", summary([("k", 10, 100 * us)]))
    p = gt(["diff", plain, "--", new, "--fail-on", "vanished-ranges", "--json"], tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    assert {x["name"]: x["status"] for x in json.loads(p.stdout)["ranges"]} == {
        "forward": "new", "backward": "new", "fresh": "new"}


def test_markdown_and_junit(tmp_path):
    base = write(tmp_path, "b.json", summary([("gemm", 40, 1000000), ("old", 1, 5000)],
                                             copies=[("HtoD", 2, 4000)]))
    new = write(tmp_path, "n.json", summary([("gemm", 40, 1500000), ("fresh|pipe", 2, 7000)],
                                            copies=[("HtoD", 2, 4000)]))
    md, junit = tmp_path / "d.md", tmp_path / "d.xml"
    p = gt(["diff", base, "--", new, "--fail-on", "time > +10%", "--fail-on", "new-kernels",
            "--fail-on", "count != 0%", "--fail-on", "vanished-copies", "--markdown", md,
            "--junit", junit], tmp_path)
    assert p.returncode == 1
    text = md.read_text()
    assert text.startswith("### gputrace diff: ❌ 3 of 4 rules broken")
    assert "| `gemm` | 40 → 40 | 1 ms → 1.5 ms | +50.0% | 25 us → 37.5 us | +50.0% | ❌ FAIL " \
           "time > +10% |" in text.splitlines()
    assert "| `fresh\\|pipe` | 0 → 2 |" in text
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("4", "3")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["time > +10%"].find("failure").get("message") == "kernel gemm +50.0%"
    assert cases["vanished-copies"].find("failure") is None


def test_a_rule_whose_glob_matches_nothing_never_passes(tmp_path):
    """A typo in a gate ('sclae' for 'scale') matched no row and passed: the gate could
    never fire. It is an error, as a check's name that matches nothing."""
    base = write(tmp_path, "b.json", summary([("scale", 10, 10000)], api=[("zeInit", 1, 5000)]))
    new = write(tmp_path, "n.json", summary([("scale", 20, 20000)], api=[("zeInit", 1, 5000)]))
    md, junit = tmp_path / "d.md", tmp_path / "d.xml"
    p = gt(["diff", base, "--", new, "--fail-on", 'kernel["sclae"] count != 0%',
            "--fail-on", 'api["zeInit"] time > +10%', "--json=d.json", "--markdown", md,
            "--junit", junit], tmp_path)
    assert p.returncode == 2, p.stderr
    lines = out_lines(p)
    assert 'ERROR kernel["sclae"] count != 0%: "sclae" matches no kernel of the base or the ' \
           'new runs (a typo never passes)' in lines, lines
    assert 'PASS api["zeInit"] time > +10%' in lines
    assert lines[-1] == "gputrace diff: 0 of 2 rules broken, and a rule matches nothing"
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["failed"] is True
    # an error, not a broken rule, in every output as on stdout (the JSON and the
    # Markdown called it broken, a regression in a job's summary)
    assert [(r["failed"], "error" in r) for r in d["rules"]] == [(False, True), (False, False)]
    text = md.read_text()
    assert text.startswith("### gputrace diff: ⚠️ 1 of 2 rules matches nothing\n"), text
    assert '\n- ⚠️ ERROR `kernel["sclae"] count != 0%`: "sclae" matches no kernel' in text, text
    assert '\n- ✅ `api["zeInit"] time > +10%`\n' in text, text
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert "matches no kernel" in cases['kernel["sclae"] count != 0%'].find("error").get("message")
    # the right name breaks the rule: scale's count doubled
    p = gt(["diff", base, "--", new, "--fail-on", 'kernel["scale"] count != 0%'], tmp_path)
    assert p.returncode == 1 and 'FAIL kernel["scale"] count != 0%' in out_lines(p)[-2]
    # both at once: one broken, and one matching nothing
    p = gt(["diff", base, "--", new, "--fail-on", 'kernel["scale"] count != 0%', "--fail-on",
            'kernel["sclae"] count != 0%', "--markdown", md], tmp_path)
    assert p.returncode == 2
    assert md.read_text().startswith(
        "### gputrace diff: ❌ 1 of 2 rules broken, and a rule matches nothing\n")


@pytest.mark.parametrize("rule, column, message", [
    ("tim > +10%", 1, "unknown metric"),
    ("time >> +10%", 7, "a change is expected"),
    ("time > +10", 8, "give the change as a percentage"),
    ("time > 10", 8, "give the change as a percentage"),
    ("count > +1.5", 9, "a count change is a whole number"),
    ("count > +2ms", 9, "a count change is a number or a percentage"),
    ("mean > 5 GB", 8, "a time change is a percentage or a time"),
    ("time = +10%", 6, "a comparison"),
    ('kernel["gemm" time > 1%', 15, "']' expected"),
    ("time > +10% and more", 13, "unexpected text after the rule"),
    ("time > +10 parsecs", 12, "unknown unit"),
    # strtod's words and hex: "+nan%" made a rule that could never break
    ("time > +nan%", 8, "a change is a decimal number"),
    ("time < +inf%", 8, "a change is a decimal number"),
    ("mean > +nanus", 8, "a change is a decimal number"),
    ("time > +0x10%", 8, "a change is a decimal number"),
    ("time > +1e400%", 8, "a change is a decimal number"),
])
def test_bad_rules_are_usage_errors(tmp_path, rule, column, message):
    b = write(tmp_path, "b.json", summary([("k", 1, 1000)]))
    p = gt(["diff", b, "--", b, "--fail-on", rule], tmp_path)
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert f"--fail-on '{rule}', column {column}: {message}" in err, err
    lines = err.splitlines()  # the rule, and a mark under the column
    assert lines[lines.index(f"  {rule}") + 1].index("^") == 2 + column - 1, err


def test_usage(tmp_path):
    b = write(tmp_path, "b.json", summary([("k", 1, 1000)]))
    for args in (["diff", b], ["diff", b, "--"], ["diff", "--", b], ["diff", b, "--", b, "--", b],
                 ["diff", b, "--", tmp_path / "missing.json"], ["diff", "--top", "x", b, "--", b],
                 # not a time, though strtod reads one: nan disabled --min-change
                 *(["diff", "--min-change", m, b, "--", b] for m in ("nanus", "0x0", "1e400us"))):
        p = gt(args, tmp_path)
        assert p.returncode == 2, args
        assert p.stderr.decode().startswith("gputrace diff: "), p.stderr
    v2 = copy.deepcopy(summary([]))
    v2["version"] = 2
    p = gt(["diff", b, "--", write(tmp_path, "v2.json", v2)], tmp_path)
    assert p.returncode == 2 and "newer than this gputrace reads" in p.stderr.decode()


def test_graph_launches_are_compared_as_device_work(tmp_path):
    """CUDA graphs launched whole (a span each, no kernel: --graph-trace, or no CUPTI)
    are rows of their own: a graph twice as slow breaks an unscoped time rule (device
    work, as kernels), a graph rule sees graphs only, new-graphs and new name them,
    and a summary written before graphs had a table compares (diff had left graph
    launches out: a slower graph broke no rule)."""
    us = 1000
    base = write(tmp_path, "b.json", summary([("k", 10, 100 * us)],
                                             graphs=[("CUDA graph 1", 4, 80 * us)]))
    new = write(tmp_path, "n.json", summary([("k", 10, 100 * us)], graphs=[
        ("CUDA graph 1", 4, 160 * us), ("CUDA graph 2", 1, 5 * us)]))
    rules = ["--fail-on", "time > +10%", "--fail-on", 'graph["CUDA graph 1"] mean > +50%',
             "--fail-on", "kernel time > +10%", "--fail-on", "new-graphs", "--fail-on",
             "vanished-graphs", "--fail-on", "new"]
    p = gt(["diff", base, "--", new, *rules, "--json=d.json"], tmp_path)
    assert p.returncode == 1, p.stdout.decode() + p.stderr.decode()
    d = json.loads((tmp_path / "d.json").read_text())
    g = rows(d, "graphs")
    assert (g["CUDA graph 1"]["base"]["total_ns"], g["CUDA graph 1"]["new"]["total_ns"]) == (
        80 * us, 160 * us)
    assert g["CUDA graph 1"]["failed"] == 'time > +10%; graph["CUDA graph 1"] mean > +50%'
    assert g["CUDA graph 2"]["status"] == "new"
    assert {x["rule"]: x["failed"] for x in d["rules"]} == {
        "time > +10%": True, 'graph["CUDA graph 1"] mean > +50%': True,
        "kernel time > +10%": False, "new-graphs": True, "vanished-graphs": False,
        "new": True}
    lines = out_lines(gt(["diff", base, "--", new, *rules], tmp_path))
    assert "FAIL time > +10%: graph CUDA graph 1 +100.0%" in lines
    assert "FAIL new-graphs: graph CUDA graph 2 new" in lines
    row = next(l for l in lines if l.strip().startswith("CUDA graph 1"))
    assert "4 -> 4" in row and "80 us -> 160 us" in row, row
    assert any(l.strip().startswith("graph ") and "count" in l for l in lines), lines
    # a summary written before graph launches had a table: no graph rows there
    plain = write(tmp_path, "p.json", summary([("k", 10, 100 * us)]))
    p = gt(["diff", plain, "--", new, "--fail-on", "vanished-graphs", "--json"], tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    assert {x["name"]: x["status"] for x in json.loads(p.stdout)["graphs"]} == {
        "CUDA graph 1": "new", "CUDA graph 2": "new"}
