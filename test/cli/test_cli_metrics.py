"""`gputrace run`'s metrics and telemetry options and `gputrace metrics` as commands:
the options map onto GPUTRACE_* variables, bad values exit 2 with one line."""
import pytest

from cli_helpers import gputrace, gt_env


def parse_env(stdout):
    return dict(line.split("=", 1) for line in stdout.decode().splitlines() if "=" in line)


def test_options_map_to_environment(tmp_path):
    p = gputrace(["run", "--metrics", "ComputeBasic,GpuBusy", "--metrics-mode=kernel",
                  "--metrics-hz", "5000", "--telemetry", "--telemetry-hz=20", "--", "env"],
                 tmp_path)
    assert p.returncode == 0, p.stderr
    env = parse_env(p.stdout)
    assert env["GPUTRACE_METRICS"] == "ComputeBasic,GpuBusy"
    assert env["GPUTRACE_METRICS_MODE"] == "kernel"
    assert env["GPUTRACE_METRICS_HZ"] == "5000"
    assert env["GPUTRACE_TELEMETRY"] == "1"
    assert env["GPUTRACE_TELEMETRY_HZ"] == "20"


def test_off_by_default(tmp_path):
    env = parse_env(gputrace(["run", "--", "env"], tmp_path).stdout)
    for var in ("GPUTRACE_METRICS", "GPUTRACE_METRICS_MODE", "GPUTRACE_METRICS_HZ",
                "GPUTRACE_TELEMETRY", "GPUTRACE_TELEMETRY_HZ", "ZET_ENABLE_METRICS",
                "ZES_ENABLE_SYSMAN"):
        assert var not in env


HZ = "expected samples per second, an integer from 1 to "


@pytest.mark.parametrize("args,msg", [
    (["--metrics-hz", "fast"], "--metrics-hz 'fast' is not valid: " + HZ + "1000000"),
    (["--metrics-hz=0"], "--metrics-hz '0' is not valid: " + HZ + "1000000"),
    (["--telemetry-hz=-1"], "--telemetry-hz '-1' is not valid: " + HZ + "1000"),
    (["--metrics-mode", "scope"], "--metrics-mode 'scope' is not valid: expected time "
                                  "(sampled over time), kernel (per kernel), nvtx (per NVTX "
                                  "range, CUDA) or off"),
    (["--metrics", "Gpu Busy;rm"], "--metrics 'Gpu Busy;rm' is not valid: expected a comma "
                                   "list of metric group or metric names (`gputrace metrics` "
                                   "lists them)"),
    (["--metrics", ""], "--metrics '' is not valid: expected a comma list of metric group or "
                        "metric names (`gputrace metrics` lists them)"),
    (["--telemetry=1"], "option '--telemetry' takes no value"),
    (["--metrics", "a__b," * 205], "--metrics '" + "a__b," * 205 + "' is not valid: "
     "expected at most 1023 characters of metric group or metric names"),
])
def test_bad_values_exit_2(tmp_path, args, msg):
    """Checked before anything runs, in the library's own words (config__check)."""
    p = gputrace(["run"] + args + ["--", "true"], tmp_path)
    assert p.returncode == 2
    assert p.stderr.decode().splitlines()[0] == "gputrace: " + msg


def test_six_cupti_metric_names_are_taken(tmp_path):
    """The basic per-kernel set written out with one more (276 characters): taken. It was
    refused, as if it were no list of names ("not valid: expected a comma list of metric
    names"): the list was kept to 255 characters, and CUPTI's names are long."""
    names = ",".join(["gpu__time_duration.sum",
                      "gr__cycles_active.avg.pct_of_peak_sustained_elapsed",
                      "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
                      "sm__warps_active.avg.pct_of_peak_sustained_active",
                      "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                      "sm__throughput.avg.pct_of_peak_sustained_elapsed"])
    p = gputrace(["run", "--metrics-mode", "kernel", "--metrics", names, "--", "env"],
                 tmp_path)
    assert p.returncode == 0, p.stderr
    assert parse_env(p.stdout)["GPUTRACE_METRICS"] == names
    assert b"is not valid" not in p.stderr  # nor by the library in the traced env


def test_bad_variable_said_once_for_the_run(tmp_path):
    """A bad GPUTRACE_METRICS_HZ in the environment: one line for the run, and CMD runs
    without it (its processes use the default quietly)."""
    p = gputrace(["run", "--", "env"], tmp_path, env=gt_env({"GPUTRACE_METRICS_HZ": "fast"}))
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stderr.decode().splitlines() if "GPUTRACE_METRICS_HZ" in l]
    assert len(lines) == 1, lines
    assert "GPUTRACE_METRICS_HZ" not in parse_env(p.stdout)


def test_help_names_the_options(tmp_path):
    out = gputrace(["--help"], tmp_path).stdout.decode()
    for word in ("gputrace metrics", "--metrics LIST", "--metrics-mode MODE", "--metrics-hz N",
                 "--telemetry ", "--telemetry-hz N"):
        assert word in out


def test_metrics_command(tmp_path):
    p = gputrace(["metrics", "--help"], tmp_path)
    assert p.returncode == 0 and p.stdout.startswith(b"usage: gputrace metrics")
    p = gputrace(["metrics", "extra"], tmp_path)
    assert p.returncode == 2 and b"takes no arguments" in p.stderr
