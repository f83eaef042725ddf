"""`gputrace run` with a CMD that LD_PRELOAD cannot reach: statically linked, setuid,
setgid, with file capabilities, or a script run by such an interpreter. It says so in one
line on stderr and runs CMD unchanged (output and exit status its own); a program it can
reach gets no such line."""
import os
import shutil
import subprocess

import pytest

from cli_helpers import CLI, gputrace, trace_files
from conftest import clean_env, need, strip_gputrace

STATIC = CLI / "static_hello"


def notice(p):
    lines = [l for l in p.stderr.decode().splitlines() if l.startswith("gputrace")]
    assert len(lines) == 1, p.stderr
    assert lines[0].endswith("; nothing of it will be traced (running it unchanged)")
    return lines[0]


def test_static_program_said_and_run_unchanged(tmp_path):
    need(STATIC)
    plain = subprocess.run([str(STATIC), "a", "b"], capture_output=True, env=clean_env())
    p = gputrace(["run", "--", STATIC, "a", "b"], tmp_path)
    assert (p.returncode, p.stdout) == (plain.returncode, plain.stdout) == (3, b"a\nb\n")
    assert f"{STATIC} is statically linked: LD_PRELOAD cannot reach it" in notice(p)
    assert strip_gputrace(p.stderr) == ""
    assert not trace_files(tmp_path)                  # nothing could write one


def test_found_on_path_and_through_a_script(tmp_path):
    need(STATIC)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shutil.copy(STATIC, bindir / "static_tool")
    env_path = f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    from cli_helpers import gt_env
    p = gputrace(["run", "--", "static_tool", "x"], tmp_path, env=gt_env({"PATH": env_path}))
    assert (p.returncode, p.stdout) == (3, b"x\n")
    assert f"{bindir}/static_tool is statically linked" in notice(p)
    script = tmp_path / "run.sh"
    script.write_text(f"#!{bindir}/static_tool\n")
    script.chmod(0o755)
    p = gputrace(["run", "--", script], tmp_path)
    assert p.returncode == 3
    assert f"{script} runs {bindir}/static_tool, and {bindir}/static_tool is statically " \
           "linked" in notice(p)


def test_reachable_programs_get_no_line(tmp_path):
    for cmd in (["true"], ["sh", "-c", "exit 0"], ["/bin/true"]):
        p = gputrace(["run", "--no-summary", "--"] + cmd, tmp_path)
        # (only what any run that records nothing says)
        assert p.returncode == 0 and p.stderr == (
            b"gputrace: no process of the run recorded anything (no GPU API call gputrace "
            b"knows): no trace written\n"), (cmd, p.stderr)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file another owner")
def test_setuid_and_capabilities(tmp_path):
    if os.statvfs(tmp_path).f_flag & os.ST_NOSUID:
        pytest.skip("the test folder is on a nosuid mount")
    prog = tmp_path / "setuid_true"
    shutil.copy("/bin/true", prog)
    os.chown(prog, 65534, -1)                         # nobody: the exec changes the uid
    prog.chmod(0o4755)
    p = gputrace(["run", "--", prog], tmp_path)
    assert p.returncode == 0
    assert f"{prog} is setuid: the dynamic linker ignores LD_PRELOAD for it" in notice(p)
    prog.chmod(0o755)
    os.chown(prog, 0, 65534)
    prog.chmod(0o2755)
    p = gputrace(["run", "--", prog], tmp_path)
    assert "is setgid" in notice(p)
    setcap = shutil.which("setcap") or shutil.which("setcap", path="/usr/sbin:/sbin")
    if setcap:
        prog.chmod(0o755)
        r = subprocess.run([setcap, "cap_net_raw+ep", str(prog)], capture_output=True)
        if r.returncode == 0:
            p = gputrace(["run", "--", prog], tmp_path)
            assert "has file capabilities" in notice(p)
