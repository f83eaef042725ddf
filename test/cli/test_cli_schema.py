"""The summary's JSON Schema (scripts/summary.schema.json, installed to
share/gputrace/): every summary gputrace writes validates against it (at exit,
from `gputrace summary --json`, of a merged trace, with lost events), and it
rejects summaries that break the contract a CI gate relies on."""
import copy
import json

import jsonschema
import pytest

from ci_helpers import gt, traced
from conftest import ROOT

SCHEMA = json.loads((ROOT / "scripts" / "summary.schema.json").read_text())
FIXTURES = ROOT / "test" / "cli" / "fixtures"


def validator():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)


def errors(doc):
    return [e.message for e in validator().iter_errors(doc)]


@pytest.fixture(scope="module")
def summaries(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("schema")
    out = {}
    trace, _, out["at exit"] = traced(tmp, "run", 3, 64)
    out["summary --json"] = json.loads(gt(["summary", "--json", "-", trace], tmp).stdout)
    m = tmp / "m.json"
    assert gt(["merge", "-o", m, FIXTURES / "proc_a.json", FIXTURES / "proc_b.json", trace],
              tmp).returncode == 0
    out["merged, lost events"] = json.loads(gt(["summary", "--json", "-", m], tmp).stdout)
    empty = tmp / "empty.json"
    empty.write_text('{"traceEvents":[]}')
    out["empty trace"] = json.loads(gt(["summary", "--json", "-", empty], tmp).stdout)
    return out


def test_lower_bound_distinct_validates(tmp_path):
    """Past 65536 distinct names the totals say distinct is a lower bound:
    the schema knows the flag, which is only ever true."""
    trace = tmp_path / "many.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 9, "tid": 1, "ts": i, "dur": 1}
        for i in range(65540)]}))
    s = json.loads(gt(["summary", "--json", "-", trace], tmp_path).stdout)
    assert s["totals"]["kernels"]["distinct_lower_bound"] is True
    assert errors(s) == []
    s["totals"]["kernels"]["distinct_lower_bound"] = False
    assert errors(s)


def test_every_summary_validates(summaries):
    for name, s in summaries.items():
        assert errors(s) == [], name
    merged = summaries["merged, lost events"]
    assert merged["lost"] == {"total": 5, "by_reason": {"ring_full": 4, "cupti_dropped": 1}}
    assert merged["adjusted"] == {"total": 4, "by_reason": {
        "clamped": {"count": 3, "max_ns": 4000}, "clock_step": {"count": 1, "max_ns": 250000}}}
    assert summaries["at exit"]["adjusted"] == {"total": 0, "by_reason": {}}
    assert summaries["at exit"]["flows"] == {"unmatched": 0}
    assert summaries["at exit"]["stacks"] == {"dropped": 0}
    assert merged["kernels"] and merged["copies"] and merged["api_calls"]
    # devices by process: the two hand-written processes and the traced one
    assert len(merged["processes"]) == 3 and summaries["at exit"]["processes"]


@pytest.mark.parametrize("path, value", [
    (("version",), 2),
    (("schema",), "something-else"),
    (("kernels", 0, "count"), -1),
    (("kernels", 0, "total_ns"), 1.5),
    (("devices", 0, "utilization"), 1.5),
    (("copies", 0, "kind"), None),
    (("api_calls", 0, "cat"), 7),
    (("lost", "by_reason", "ring_full"), "3"),
    (("adjusted", "total"), -1),
    (("adjusted", "by_reason"), {"clamped": 3}),
    (("adjusted", "by_reason"), {"clamped": {"count": 3}}),
    (("flows", "unmatched"), -1),
    (("flows",), {}),
    (("stacks", "dropped"), -1),
    (("stacks",), {}),
    (("partial",), 0),
    (("processes", 0, "spans"), -1),
    (("processes", 0, "rank"), 0),
    (("processes", 0, "devices"), {}),
])
def test_a_broken_field_is_rejected(summaries, path, value):
    s = copy.deepcopy(summaries["at exit"])
    node = s
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert errors(s), path


@pytest.mark.parametrize("path", [
    ("kernels",), ("totals", "kernels", "count"), ("lost", "total"), ("window", "duration_ns"),
    ("kernels", 0, "mean_ns"), ("copies", 0, "bytes"), ("devices", 0, "busy_ns"),
])
def test_a_removed_field_is_rejected(summaries, path):
    s = copy.deepcopy(summaries["at exit"])
    node = s
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    assert errors(s), path


def test_a_new_field_is_accepted(summaries, tmp_path):
    """Fields may be added within a version: neither the schema nor a check
    written before them minds."""
    s = copy.deepcopy(summaries["at exit"])
    s["future"] = {"anything": [1, 2]}
    s["kernels"][0]["occupancy"] = 0.5
    s["totals"]["kernels"]["new_total"] = 1
    assert errors(s) == []
    path = tmp_path / "s.json"
    path.write_text(json.dumps(s))
    p = gt(["check", path, "device.kernels >= 1", 'kernel["gemm_f32"].count == 3'], tmp_path)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()


def test_a_summary_json_is_replaced_whole(tmp_path):
    """A summary JSON is written beside its name and renamed over it once whole: the
    processes that share one name (GPUTRACE_SUMMARY_JSON without %p in every rank of a
    job) each replace it with a whole summary, the last one's. Opened with "w" by each,
    a shorter summary written over a longer one left its tail: not JSON (1 run of 6 of
    8 ranks at once). So a reader of the earlier one keeps it whole, a link keeps
    naming the file it names, and nothing is left beside it."""
    out, real = tmp_path / "s.json", tmp_path / "real.json"
    assert gt(["summary", "--json", out, FIXTURES / "proc_a.json"], tmp_path).returncode == 0
    with open(out) as first:
        assert gt(["summary", "--json", out, FIXTURES / "proc_b.json"],
                  tmp_path).returncode == 0
        assert json.load(first)["trace"]["path"] == str(FIXTURES / "proc_a.json")
    assert json.loads(out.read_text())["trace"]["path"] == str(FIXTURES / "proc_b.json")
    out.unlink()
    out.symlink_to(real.name)
    assert gt(["summary", "--json", out, FIXTURES / "proc_a.json"], tmp_path).returncode == 0
    assert out.is_symlink() and json.loads(real.read_text())["trace"]["path"] == \
        str(FIXTURES / "proc_a.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["real.json", "s.json"]
    # the file replaced keeps its mode: a private summary stays private
    real.chmod(0o600)
    assert gt(["summary", "--json", out, FIXTURES / "proc_b.json"], tmp_path).returncode == 0
    assert real.stat().st_mode & 0o777 == 0o600
