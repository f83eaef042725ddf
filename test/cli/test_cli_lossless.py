"""gputrace run --lossless: the option reaches every process, the run's summary
(stderr and --summary-json) counts the waits, and a plug-in handing over
events while the process starts (before main: the drain runs no cycle yet)
is never made to wait for a drain that cannot come."""
import json
import shutil

import pytest

from cli_helpers import PLUGIN_DIR, SPAWN, gputrace, gt_env, load_exact
from conftest import need


def test_run_lossless_counts_waits_and_never_waits_at_start_up(tmp_path):
    need(SPAWN)
    (tmp_path / "tmp").mkdir()
    env = gt_env({"GPUTRACE_PLUGIN_CONFIG": "clitest:4000", "TMPDIR": str(tmp_path / "tmp")})
    p = gputrace(["run", "-o", "t.json", "--lossless", "--buffer-kb", "4", "--overflow-mb", "0", "--summary-json",
                  "s.json", "--plugin-path", PLUGIN_DIR, "--", SPAWN, "leaf", "0"], tmp_path,
                 env=env)
    assert p.returncode == 0, p.stderr
    meta = load_exact(tmp_path / "t.json")["gputrace"]
    lost = int(meta["events_lost"])
    # the plug-in's 16000 events at its start, into a 64-event ring: lost,
    # counted, and not waited for (a wait there would time out after 1 s)
    assert lost > 0 and meta["lost_by_reason"] == {"ring_full": lost}
    assert (meta["lossless"]["waits"], meta["lossless"]["wait_ns"]) == (0, 0)
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["lost"]["total"] == lost
    assert s["lossless"] == {"waits": 0, "wait_ns": 0}
    err = p.stderr.decode()
    assert "  waits for a full buffer (--lossless): 0, 0 ns in all\n" in err
    # lossless already: the advice is the buffer's alone
    assert "rerun with --buffer-kb 16 (now 4 KiB per thread)\n" in err


def test_run_without_lossless_has_no_waits_in_its_summary(tmp_path):
    need(SPAWN)
    p = gputrace(["run", "-o", "t.json", "--summary-json", "s.json", "--", SPAWN, "leaf", "0"],
                 tmp_path)
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["lossless"] is None
    assert "--lossless" not in p.stderr.decode()


def run_env(tmp_path, args):
    """gputrace run ARGS -- env: the GPUTRACE_LOSSLESS CMD gets (None: unset)."""
    p = gputrace(["run", *args, "--", "env"], tmp_path)
    env = dict(line.split("=", 1) for line in p.stdout.decode().splitlines() if "=" in line)
    return p, env.get("GPUTRACE_LOSSLESS")


@pytest.mark.parametrize("args, value", [(["--lossless"], "1"), (["--lossless=2.5"], "2.5"),
                                         (["--lossless", "2.5"], "2.5"),
                                         (["--lossless", "0.001"], "0.001"),
                                         (["--lossless=off"], "off"), (["--lossless", "on"], "on")])
def test_lossless_takes_the_longest_wait_as_its_variable_does(tmp_path, args, value):
    """The README's options table gives --lossless GPUTRACE_LOSSLESS's values (on, off, or
    the longest wait in seconds, 2.5): --lossless=2.5 was refused ("takes no value") and
    --lossless 2.5 -- ./app ran a program named 2.5 (exit 127)."""
    p, got = run_env(tmp_path, args)
    assert p.returncode == 0, p.stderr
    assert got == value


def test_lossless_before_a_program_by_its_path_runs_it(tmp_path):
    """--lossless ./app (no "--") runs ./app losslessly: a word is its wait only
    when it reads as a number or on/off, and ./app starts with a dot as .5 does."""
    env = tmp_path / "env_app"
    env.symlink_to(shutil.which("env"))
    p = gputrace(["run", "--lossless", "./env_app"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "GPUTRACE_LOSSLESS=1" in p.stdout.decode().splitlines()


@pytest.mark.parametrize("args, shown", [(["--lossless=61"], "'61'"), (["--lossless", "61"], "'61'"),
                                         (["--lossless=maybe"], "'maybe'"),
                                         (["--lossless="], "''"),
                                         # a value, not CMD, though the variable takes no ".5"
                                         (["--lossless", ".5"], "'.5'")])
def test_a_bad_longest_wait_is_refused_before_cmd_runs(tmp_path, args, shown):
    p, got = run_env(tmp_path, args)
    err = p.stderr.decode()
    assert p.returncode == 2 and got is None
    assert err.startswith(f"gputrace: --lossless {shown} is not valid: expected 1/on, 0/off, "
                          "or the longest wait in seconds, 0.001 to 60"), err
