"""`gputrace run`'s metrics and telemetry options and `gputrace metrics` as commands:
the options map onto GPUTRACE_* variables, bad values exit 2 with one line."""
import pytest

from cli_helpers import gputrace


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


@pytest.mark.parametrize("args,msg", [
    (["--metrics-hz", "fast"], "--metrics-hz wants samples per second, not 'fast'"),
    (["--telemetry-hz=-1"], "--telemetry-hz wants samples per second, not '-1'"),
    (["--telemetry=1"], "option '--telemetry' takes no value"),
])
def test_bad_values_exit_2(tmp_path, args, msg):
    p = gputrace(["run"] + args + ["--", "true"], tmp_path)
    assert p.returncode == 2
    assert p.stderr.decode().splitlines()[0] == "gputrace: " + msg


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
