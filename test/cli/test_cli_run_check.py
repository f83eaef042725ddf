"""`gputrace run --check EXPR ... -- CMD`: the checks are parsed before CMD
runs and evaluated on the run's summary after it; CMD's own failure keeps
its status (or signal), a failed check on a successful CMD gives 3, a check
that cannot be evaluated 4."""
import json
import xml.etree.ElementTree as ET

import pytest

from ci_helpers import CI_APP, ci_env, gt
from cli_helpers import PLUGIN_DIR, gputrace
from conftest import need


def run_checked(tmp_path, checks, cmd, opts=()):
    need(CI_APP)
    args = ["run", "--no-summary", "-o", tmp_path / "t.json", *opts]
    for c in checks:
        args += ["--check", c]
    return gt(args + ["--", *cmd], tmp_path)


def check_lines(p):
    return [l for l in p.stderr.decode().splitlines()
            if l.split(" ", 1)[0] in ("PASS", "FAIL", "ERROR")]


@pytest.mark.sanitize
def test_checks_pass_and_cmd_output_is_its_own(tmp_path):
    p = run_checked(tmp_path, ["device.kernels >= 1", "lost == 0", 'kernel["gemm*"].count == 4'],
                    [CI_APP, 4])
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b"ci_app: 4 steps, gemm_f32 64 groups: ok\n"  # stdout stays CMD's
    assert check_lines(p) == ["PASS device.kernels >= 1: 8", "PASS lost == 0: 0",
                              'PASS kernel["gemm*"].count == 4: 4']
    # the summary is a file of the run's state folder, gone now: named for its trace
    last = p.stderr.decode().splitlines()[-1]
    assert last == f"gputrace check: 3 passed, 0 failed (summary of {tmp_path / 't.json'})", last


def test_a_failed_check_after_a_successful_cmd_is_status_3(tmp_path):
    junit, md = tmp_path / "c.xml", tmp_path / "c.md"
    p = run_checked(tmp_path, ["device.kernels >= 1", 'kernel["gemm_f32"].total < 1us'],
                    [CI_APP, 4], opts=["--junit", junit, "--markdown", md])
    assert p.returncode == 3, p.stderr.decode()
    assert check_lines(p)[1].startswith('FAIL kernel["gemm_f32"].total < 1us: ')
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    assert md.read_text().startswith("### gputrace checks: 1 passed, 1 failed")
    # the summary's heading names the trace once ("Summary of `summary of ...`" before)
    assert f"<details><summary>Summary of `{tmp_path / 't.json'}`</summary>" in md.read_text()


def test_a_malformed_check_stops_before_cmd_runs(tmp_path):
    marker = tmp_path / "ran"
    p = run_checked(tmp_path, ["lost == 0", 'kernel["gemm_f32"].totl < 1us'],
                    ["sh", "-c", f"touch {marker}"])
    assert p.returncode == 2
    assert not marker.exists()
    err = p.stderr.decode()
    assert "check 2, column 20: unknown field 'totl'" in err
    assert err.splitlines()[2] == "                     ^~~~"


def test_a_name_that_matches_nothing_is_status_4(tmp_path):
    p = run_checked(tmp_path, ['kernel["gemm_f3"].count == 4'], [CI_APP, 4])
    assert p.returncode == 4
    assert check_lines(p)[0].startswith('ERROR kernel["gemm_f3"].count == 4: no kernel named')


def test_cmd_failure_keeps_its_status_and_signal(tmp_path):
    p = run_checked(tmp_path, ["device.kernels >= 1"], ["sh", "-c", f"{CI_APP} 2; exit 5"])
    assert p.returncode == 5
    p = run_checked(tmp_path, ["device.kernels >= 1"], ["sh", "-c", "kill -TERM $$"])
    assert p.returncode == -15


def test_a_process_killed_before_its_first_file_fails_incomplete(tmp_path):
    """A process of the run that recorded and was killed before its first file left
    no trace: `incomplete == 0` passed (0, and status 0 as CMD succeeded) though the
    README says it fails when a process was killed before its trace was finished,
    as it did when the process was killed a drain cycle later."""
    need(PLUGIN_DIR / "libclitest.so")
    sj = tmp_path / "s.json"
    cmd = ["sh", "-c", f'sh -c "kill -9 \\$\\$"; {CI_APP} 2']
    p = gputrace(["run", "--no-summary", "-o", tmp_path / "t.json", "--summary-json", sj,
                  "--plugin-path", PLUGIN_DIR, "--check", "incomplete == 0", "--check",
                  'kernel["gemm_f32"].count == 2', "--", *cmd], tmp_path,
                 env=ci_env({"GPUTRACE_PLUGIN_CONFIG": "clitest:3"}))
    assert p.returncode == 3, p.stderr.decode()
    assert check_lines(p) == ["FAIL incomplete == 0: 1", 'PASS kernel["gemm_f32"].count == 2: 2']
    assert json.loads(sj.read_text())["incomplete"] == 1


def test_summary_json_is_the_runs(tmp_path):
    sj = tmp_path / "s.json"
    sj.write_text('{"schema": "gputrace-summary", "version": 1, "stale": true}')
    p = run_checked(tmp_path, ['kernel["gemm_f32"].count == 3'], [CI_APP, 3],
                    opts=["--summary-json", sj])
    assert p.returncode == 0, p.stderr.decode()
    s = json.loads(sj.read_text())
    assert "stale" not in s and s["totals"]["kernels"]["count"] == 6


def test_usage(tmp_path):
    for opts in (["--junit", "x.xml"], ["--markdown", "x.md"], ["--checks", "missing.txt"],
                 ["--check"]):
        p = gt(["run", *opts, "--", "true"], tmp_path)
        assert p.returncode == 2, opts
    # a report that cannot be written is said before CMD runs (it ran, then the run
    # exited 4): exit 2, and the command never started
    marker = tmp_path / "ran"
    for opt in ("--junit", "--markdown"):
        p = gt(["run", "--check", "lost == 0", opt, tmp_path / "none" / "r.xml", "--",
                "touch", marker], tmp_path)
        assert p.returncode == 2 and not marker.exists(), p.stderr
        assert f"{opt} {tmp_path}/none/r.xml: cannot write in {tmp_path}/none" in \
            p.stderr.decode()
    checks = tmp_path / "checks.txt"
    checks.write_text("# gate\nlost == 0  # nothing dropped\ndevice.kernels >= 1\n")
    p = gt(["run", "--no-summary", "-o", tmp_path / "t.json", "--checks", checks, "--",
            CI_APP, 1], tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    assert check_lines(p) == ["PASS lost == 0: 0", "PASS device.kernels >= 1: 2"]
    assert sorted(f.name for f in tmp_path.iterdir()) == ["checks.txt", "t.json"]


def test_every_checks_file_is_evaluated(tmp_path):
    """--checks twice (a team's gates and a job's own): both files' checks, in order, as
    gputrace check -f A -f B. The second replaced the first, whose failing gate was then
    never evaluated: exit 0."""
    need(CI_APP)
    (tmp_path / "a.txt").write_text("device.kernels == 999\n")
    (tmp_path / "b.txt").write_text("lost == 0\n")
    p = gt(["run", "--no-summary", "-o", tmp_path / "t.json", "--checks", "a.txt",
            "--checks", "b.txt", "--junit", "j.xml", "--", CI_APP, 1], tmp_path)
    assert p.returncode == 3, p.stderr.decode()
    assert check_lines(p) == ["FAIL device.kernels == 999: 2", "PASS lost == 0: 0"]
    assert len(ET.parse(tmp_path / "j.xml").getroot().findall(".//testcase")) == 2


def test_checks_run_in_the_order_given(tmp_path):
    """--check and --checks interleaved run in the command line's order (as
    gputrace check's arguments and -f files do); every file's checks ran before
    every --check, whatever the order given."""
    need(CI_APP)
    (tmp_path / "a.txt").write_text("lost == 0\n")
    (tmp_path / "b.txt").write_text("device.kernels >= 2\n")
    p = gt(["run", "--no-summary", "-o", tmp_path / "t.json", "--check", "device.kernels >= 1",
            "--checks", "a.txt", "--check", "lost <= 1", "--checks", "b.txt",
            "--check", "device.kernels <= 9", "--junit", "j.xml", "--", CI_APP, 1], tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    order = ["device.kernels >= 1", "lost == 0", "lost <= 1", "device.kernels >= 2",
             "device.kernels <= 9"]
    assert [l.split(": ")[0][5:] for l in check_lines(p)] == order
    cases = ET.parse(tmp_path / "j.xml").getroot().findall(".//testcase")
    assert [c.get("name") for c in cases] == order


@pytest.mark.parametrize("out", ["t.json", "t-%p.json"])
def test_checks_cover_every_process_of_the_run(tmp_path, out):
    # Two traced processes under a shell that records nothing and exits
    # last: the checks see the run's one summary (2 + 3 steps), not the
    # summary of whichever process happened to exit last.
    sj = tmp_path / "s.json"
    p = gt(["run", "--no-summary", "-o", tmp_path / out, "--summary-json", sj,
            "--check", 'kernel["gemm_f32"].count == 5', "--check", "device.kernels == 10",
            "--check", "lost == 0", "--", "sh", "-c", f"{CI_APP} 2 && {CI_APP} 3"], tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    assert check_lines(p) == ['PASS kernel["gemm_f32"].count == 5: 5',
                              "PASS device.kernels == 10: 10", "PASS lost == 0: 0"]
    s = json.loads(sj.read_text())
    assert len({r["pid"] for r in s["processes"]}) == 2
    assert sorted(r["kernels"]["count"] for r in s["processes"]) == [4, 6]
    # a check the last process alone would pass fails on the run's summary
    p = gt(["run", "--no-summary", "-o", tmp_path / ("u" + out),
            "--check", 'kernel["gemm_f32"].count == 3', "--", "sh", "-c",
            f"{CI_APP} 2 && {CI_APP} 3"], tmp_path)
    assert p.returncode == 3, p.stderr.decode()
    assert check_lines(p) == ['FAIL kernel["gemm_f32"].count == 3: 5']


@pytest.mark.parametrize("json_to", ["/dev/null", "/dev/stdout"])
def test_checks_of_a_summary_json_that_cannot_be_read_back(tmp_path, json_to):
    """--summary-json /dev/stdout (the JSON in the job's log) or /dev/null with
    --check: the checks read the run's summary, not what that file gives back.
    They read the file: nothing (/dev/null) or CMD's own output before the
    JSON (/dev/stdout into a file), and every run ended 4, the checks "not
    JSON" or "neither a trace nor a gputrace summary JSON"."""
    p = run_checked(tmp_path, ["device.kernels >= 1", 'kernel["gemm*"].count == 2'],
                    [CI_APP, 2], opts=["--summary-json", json_to])
    assert p.returncode == 0, p.stderr.decode()
    assert check_lines(p) == ["PASS device.kernels >= 1: 4", 'PASS kernel["gemm*"].count == 2: 2']
    assert p.stderr.decode().splitlines()[-1] == f"gputrace check: 2 passed, 0 failed ({json_to})"
    if json_to == "/dev/stdout":
        out = p.stdout.decode()
        assert out.startswith("ci_app: 2 steps, gemm_f32 64 groups: ok\n"), out
        s = json.loads(out[out.index("{"):])
        assert s["totals"]["kernels"]["count"] == 4


def test_checks_from_a_pipe(tmp_path):
    """--checks <(make_checks) or --checks /dev/stdin: the checks are parsed
    before CMD runs and evaluated after it, from what was read once. The file
    was read at each of the two, and the pipe was empty the second time: "no
    checks given", the usage of gputrace check, and status 4 for every run."""
    need(CI_APP)
    p = gt(["run", "--no-summary", "-o", tmp_path / "t.json", "--checks", "/dev/stdin", "--",
            CI_APP, 2], tmp_path, input=b"# gates\nlost == 0\ndevice.kernels >= 100\n")
    assert p.returncode == 3, p.stderr.decode()
    assert check_lines(p) == ["PASS lost == 0: 0", "FAIL device.kernels >= 100: 4"]
    # a malformed one is still said with the file's own name, before CMD runs
    p = gt(["run", "--no-summary", "-o", tmp_path / "u.json", "--checks", "/dev/stdin", "--",
            "echo", "RAN"], tmp_path, input=b"lost == 0\nkernel.totl > 1\n")
    assert (p.returncode, p.stdout) == (2, b""), p.stderr.decode()
    assert p.stderr.decode().startswith(
        "gputrace check: /dev/stdin:2: column 8: unknown field 'totl'"), p.stderr.decode()
