"""gputrace run holds the command as a shell would: signals sent to gputrace
(kill, a batch system) reach the command once; a terminal's Ctrl-C and
Ctrl-Z (a real pseudo-terminal here) reach it directly and are not sent
twice; gputrace exits with the command's status or dies by its signal; a
traced process that outlives the command is waited for; and if gputrace is
killed with SIGKILL, the per-process traces are left, valid, in OUT.parts/
for gputrace merge. The programs are test/cli/spawn run as `spawn leaf` or
`spawn linger`, whose plug-in (clitest:3,exe=spawn) records 3 kernels each;
the shells around them record nothing."""
import fcntl
import json
import os
import signal
import subprocess
import termios
import time

import pytest

from cli_helpers import PLUGIN_DIR, SCRIPT, SPAWN, gputrace, load_exact, plugin_env, trace_files
from conftest import APPS, default_signals, gputrace_lines, need, sim_env

PLUGIN_CONFIG = "3,exe=spawn"


def env_for(tmp_path):
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return plugin_env(PLUGIN_CONFIG, {"TMPDIR": str(tmp_path / "tmp")})


def command(*opts, script):
    need(PLUGIN_DIR / "libclitest.so")
    need(SPAWN)
    return [str(SCRIPT), "run", "--plugin-path", str(PLUGIN_DIR), *opts, "--", "sh", "-c",
            script.replace("SPAWN", str(SPAWN))]


def wait_for(cond, timeout=20, what="condition", show=None):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}" + (f": {show()}" if show else ""))


def kernels(path):
    return len([e for e in load_exact(path)["traceEvents"] if e.get("name") == "cli_kernel"])


# A job that records (spawn leaf), says so, counts the signals it gets, and
# ends when told (a file named stop) with status 5.
COUNTING_JOB = """\
SPAWN leaf 0 >/dev/null
for s in TERM HUP USR1 USR2 INT QUIT ALRM; do trap "echo $s >> sigs" $s; done
echo $$ > ready
while [ ! -e stop ]; do sleep 0.02; done
exit 5
"""


@pytest.mark.sanitize
def test_signals_sent_to_gputrace_reach_the_command_once(tmp_path):
    p = subprocess.Popen(command("-o", "t.json", "--no-summary", script=COUNTING_JOB),
                         cwd=tmp_path, env=env_for(tmp_path), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    wait_for(lambda: (tmp_path / "ready").exists(), what="the job")
    sent = [signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT,
            signal.SIGQUIT, signal.SIGALRM]
    for sig in sent:
        os.kill(p.pid, sig)  # to gputrace only, as kill PID or a batch system does
        wait_for(lambda: (tmp_path / "sigs").exists() and
                 len((tmp_path / "sigs").read_text().split()) == sent.index(sig) + 1,
                 what=f"{sig.name} at the command")
    (tmp_path / "stop").touch()
    out, err = p.communicate(timeout=30)
    # each once, none twice, and gputrace lived through them all: the job's status
    assert (tmp_path / "sigs").read_text().split() == [s.name[3:] for s in sent]
    assert p.returncode == 5, err
    assert kernels(tmp_path / "t.json") == 3
    assert list((tmp_path / "tmp").iterdir()) == []


def on_terminal(tmp_path, argv, then=""):
    """argv as a job of an interactive shell on a pseudo-terminal: bash -i is
    the session leader, the job its own foreground process group, as in a
    terminal. `then` runs after the job
    (or after it stops); the job's status lands in the file "status" as
    bash sees it ($?, and the signal's name above 128). Returns (bash, master fd)."""
    master, slave = os.openpty()
    line = " ".join(f"'{a}'" for a in argv)
    script = (f"{line}\nst=$?\n{then}\n"
              'n=; [ $st -gt 128 ] && n=$(kill -l $st); echo "$st $n" > status\n')

    def session_leader():
        default_signals()
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(["bash", "--norc", "--noprofile", "-i", "-c", script], cwd=tmp_path,
                         env=env_for(tmp_path),
                         stdin=slave, stdout=slave, stderr=subprocess.PIPE,
                         preexec_fn=session_leader)
    os.close(slave)
    return p, master


def job_of(shell):
    """The job bash runs: its one child (gputrace)."""
    def child():
        with open(f"/proc/{shell.pid}/task/{shell.pid}/children") as f:
            return f.read().split()
    wait_for(lambda: len(child()) == 1, what="the job")
    return int(child()[0])


def state_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def finish(shell, tty, tmp_path):
    try:
        shell.wait(timeout=60)
    finally:
        os.close(tty)
    return (tmp_path / "status").read_text().split()


def test_ctrl_c_on_a_terminal_reaches_the_command_once(tmp_path):
    shell, tty = on_terminal(tmp_path, command("-o", "t.json", "--no-summary",
                                               script=COUNTING_JOB))
    wait_for(lambda: (tmp_path / "ready").exists(), what="the job")
    os.write(tty, b"\x03")  # Ctrl-C: the terminal signals its foreground group
    wait_for(lambda: (tmp_path / "sigs").exists(), what="SIGINT at the command")
    time.sleep(0.3)  # a forwarded second one would have arrived by now
    assert (tmp_path / "sigs").read_text() == "INT\n"
    (tmp_path / "stop").touch()
    # gputrace lived through the Ctrl-C its command survived: the job's status
    assert finish(shell, tty, tmp_path) == ["5"]
    assert kernels(tmp_path / "t.json") == 3


@pytest.mark.sanitize
def test_ctrl_c_kills_command_and_gputrace_dies_by_it(tmp_path):
    job = "SPAWN leaf 0 >/dev/null; echo $$ > ready; while :; do sleep 0.02; done"
    shell, tty = on_terminal(tmp_path, command("-o", "t.json", script=job))
    wait_for(lambda: (tmp_path / "ready").exists(), what="the job")
    os.write(tty, b"\x03")
    # as the shell sees an untraced job: killed by SIGINT (so a loop stops)
    assert finish(shell, tty, tmp_path) == ["130", "INT"]
    # after the trace and the summary were made
    assert kernels(tmp_path / "t.json") == 3
    assert f"gputrace summary: {tmp_path}/t.json" in shell.stderr.read().decode()


def test_ctrl_z_stops_and_fg_continues(tmp_path):
    # The job waits in a builtin (read from a FIFO), never in a child: a shell
    # that vfork()s a child which a Ctrl-Z stops before its exec cannot stop
    # itself (it waits for the exec, state D), so its job never shows stopped,
    # traced or not, and gputrace rightly stops only when the command does.
    os.mkfifo(tmp_path / "gate")
    job = "SPAWN leaf 0 >/dev/null; echo $$ > ready; read line < gate"
    shell, tty = on_terminal(tmp_path, command("-o", "t.json", "--no-summary", script=job),
                             then="while [ ! -e cont ]; do sleep 0.02; done; fg %1; st=$?")
    wait_for(lambda: (tmp_path / "ready").exists(), what="the job")
    gputrace_pid, job_pid = job_of(shell), int((tmp_path / "ready").read_text())
    os.write(tty, b"\x1a")  # Ctrl-Z
    # the whole job stops, gputrace with it: the shell sees its job stopped
    wait_for(lambda: state_of(gputrace_pid) == "T" and state_of(job_pid) == "T", what="stop",
             show=lambda: (state_of(gputrace_pid), state_of(job_pid)))
    (tmp_path / "cont").touch()  # fg
    wait_for(lambda: state_of(gputrace_pid) != "T" and state_of(job_pid) != "T",
             what="continue")
    (tmp_path / "gate").write_text("go\n")  # the job reads it and ends
    assert finish(shell, tty, tmp_path) == ["0"]
    assert kernels(tmp_path / "t.json") == 3


def test_sigtstp_in_a_session_of_its_own_does_not_stop_gputrace_for_good(tmp_path):
    # gputrace as session leader (ssh -t host gputrace run, setsid, a pty):
    # its process group is orphaned, so the kernel drops a SIGTSTP's stop for
    # the command, which runs on as it would untraced. gputrace stopped itself
    # all the same and stayed stopped after the command ended: a hung run.
    job = "SPAWN leaf 0 >/dev/null; echo $$ > ready; while [ ! -e stop ]; do sleep 0.02; done"
    p = subprocess.Popen(command("-o", "t.json", "--no-summary", script=job), cwd=tmp_path,
                         env=env_for(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals, start_new_session=True)
    try:
        wait_for(lambda: (tmp_path / "ready").exists(), what="the job")
        os.kill(p.pid, signal.SIGTSTP)
        time.sleep(0.3)
        (tmp_path / "stop").touch()
        out, err = p.communicate(timeout=15)
    finally:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert kernels(tmp_path / "t.json") == 3


@pytest.mark.parametrize("end,status", [("exit 0", 0), ("exit 7", 7), ("exit 255", 255),
                                        ("kill -TERM $$", -signal.SIGTERM),
                                        ("kill -SEGV $$", -signal.SIGSEGV),
                                        ("kill -ABRT $$", -signal.SIGABRT),
                                        ("kill -KILL $$", -signal.SIGKILL),
                                        ("kill -USR1 $$", -signal.SIGUSR1)])
def test_exit_status_and_signal_death_mirrored(tmp_path, end, status):
    p = subprocess.run(command("-o", "t.json", script=f"SPAWN leaf 0 >/dev/null; {end}"),
                       cwd=tmp_path, env=env_for(tmp_path), capture_output=True, timeout=60,
                       preexec_fn=default_signals)
    assert p.returncode == status, p.stderr
    # the trace and the summary first, whatever the end
    assert kernels(tmp_path / "t.json") == 3
    assert p.stderr.decode().startswith(f"gputrace summary: {tmp_path}/t.json\n")
    assert sorted(f.name for f in tmp_path.iterdir()) == ["t.json", "tmp"]
    assert list((tmp_path / "tmp").iterdir()) == []


def closed_by(path, sig):
    g = load_exact(path)["gputrace"]
    assert (g["complete"], g["end"]) == (True, "signal " + sig.name)


@pytest.mark.parametrize("sig", [signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM],
                         ids=lambda s: s.name)
def test_signal_that_ends_the_command_closes_its_trace(tmp_path, sig):
    """SIGUSR1 before a batch system's time limit (and the others whose
    default ends a process), sent to gputrace: the command dies by it with
    its trace closed, gputrace by the same signal, and no trace is counted
    incomplete."""
    need(PLUGIN_DIR / "libclitest.so")
    need(SPAWN)
    p = subprocess.Popen([str(SCRIPT), "run", "--plugin-path", str(PLUGIN_DIR), "-o", "t.json",
                          "--", str(SPAWN), "linger", "60000", "ready"],
                         cwd=tmp_path, env=env_for(tmp_path), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    try:
        wait_for(lambda: (tmp_path / "ready").exists(), what="the command")
        os.kill(p.pid, sig)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == -sig, err
    assert b"incomplete" not in err, err
    closed_by(tmp_path / "t.json", sig)
    assert kernels(tmp_path / "t.json") == 3


def test_command_writing_into_a_closed_pipe_closes_its_trace(tmp_path):
    """`gputrace run ... | head`: the command dies by SIGPIPE as untraced, its
    trace closed first, and gputrace dies by SIGPIPE too."""
    need(APPS / "ze_basic")
    p = subprocess.Popen([str(SCRIPT), "run", "-o", "t.json", "--", str(APPS / "ze_basic"),
                          "3000", "4096"], cwd=tmp_path, env=env_for(tmp_path) | sim_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    try:
        # more than a pipe holds: the command is still writing when the reader goes
        assert len(p.stdout.read(10)) == 10
        p.stdout.close()
        err = p.stderr.read()
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGPIPE, err
    assert b"incomplete" not in err, err
    closed_by(tmp_path / "t.json", signal.SIGPIPE)


@pytest.mark.sanitize
def test_gputrace_killed_leaves_valid_parts_for_merge(tmp_path):
    job = ("SPAWN leaf 0 >/dev/null; echo $$ > ready; while [ ! -e stop ]; do sleep 0.02; done;"
           " SPAWN leaf 1 >/dev/null; echo done > finished")
    p = subprocess.Popen(command("-o", "t.json", script=job), cwd=tmp_path,
                         env=env_for(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    wait_for(lambda: (tmp_path / "ready").exists(), what="the job")
    p.kill()
    p.wait(timeout=30)
    assert p.returncode == -signal.SIGKILL
    (tmp_path / "stop").touch()  # the job goes on without gputrace
    wait_for(lambda: (tmp_path / "finished").exists(), what="the job's end")
    parts = tmp_path / "t.json.parts"
    wait_for(lambda: len(trace_files(parts)) == 2 and
             all(load_exact(f)["gputrace"]["complete"] for f in trace_files(parts)),
             what="both leaves' traces closed")
    assert not (tmp_path / "t.json").exists()
    # the documented recovery: gputrace merge -o OUT OUT.parts/*.json
    m = gputrace(["merge", "-o", "t.json"] + trace_files(parts), tmp_path)
    assert m.returncode == 0, m.stderr
    assert kernels(tmp_path / "t.json") == 6


def test_traced_process_outliving_the_command_is_waited_for(tmp_path):
    # spawn linger records at start, creates the file, then lives on after
    # the shell that started it has exited
    job = ("SPAWN linger 600 ready & while [ ! -e ready ]; do sleep 0.01; done; "
           "sleep 30 >/dev/null 2>&1 & exit 4")
    start = time.monotonic()
    p = subprocess.run(command("-o", "t.json", "--no-summary", script=job), cwd=tmp_path,
                       env=env_for(tmp_path), capture_output=True, timeout=60,
                       preexec_fn=default_signals)
    took = time.monotonic() - start
    assert p.returncode == 4, p.stderr
    lines = gputrace_lines(p.stderr)
    assert len(lines) == 1 and lines[0].startswith(
        "gputrace: sh ended; waiting for 1 traced process still running (pid "), lines
    t = load_exact(tmp_path / "t.json")
    assert kernels(tmp_path / "t.json") == 3
    assert t["gputrace"]["complete"] is True and t["gputrace"]["end"] == "exit"
    # the untraced `sleep 30` (no GPU call, nothing recorded) is not waited for
    assert took < 20
