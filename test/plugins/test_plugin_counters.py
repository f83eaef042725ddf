"""A plug-in's counters take the writer's one counter path (the same as hardware metrics
and telemetry): they reach the summary's metrics section, per device and series."""
import json

from conftest import BUILD, events, need, run

PLUG = BUILD / "test" / "plugins"


def test_plugin_counters_in_the_summary(tmp_path):
    need(PLUG / "host_app")
    need(PLUG / "good" / "libsimaccel.so")
    summary = tmp_path / "s.json"
    r = run([PLUG / "host_app"], env={"GPUTRACE_PLUGIN_PATH": str(PLUG / "good"),
                                       "GPUTRACE_SUMMARY_JSON": str(summary)}, tmp_path=tmp_path)
    samples = {}
    for e in events(r.trace, ph="C"):
        for k, v in e["args"].items():
            samples.setdefault((e["name"], k), []).append(v)
    assert samples
    rows = {(c["counter"], c["series"]): c
            for c in json.loads(summary.read_text())["metrics"]["counters"]}
    for key, values in samples.items():
        row = rows[key]
        assert row["device"] == "SimAccel 0"
        assert row["samples"] == len(values)
        assert row["min"] == min(values) and row["max"] == max(values)
        assert abs(row["mean"] - sum(values) / len(values)) < 1e-6 * max(1, abs(row["mean"]))
