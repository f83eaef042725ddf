"""gputrace capture's signal and a program that uses that signal itself
(README "Long runs"): the program's handler wins, gputrace steps aside and
says so in one stderr line, and `gputrace capture` then refuses that process."""
import os
import pathlib
import platform
import shutil
import signal
import subprocess
import time

import pytest

from conftest import (APPS, BUILD, PRELOAD, clean_env, default_signals, gputrace_env,
                      gputrace_lines, need, reaped, sim_env)

APP = BUILD / "test" / "core" / "sig_own"
LOOP = BUILD / "test" / "core" / "lifecycle_app"
GPUTRACE = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "gputrace"
SIG = signal.SIGRTMIN + 7  # the default capture signal


def start(tmp_path, mode, traced=True, extra=None):
    need(APP)
    env = {"GPUTRACE_RUN_DIR": str(tmp_path / "run")}
    if traced:
        env.update({"LD_PRELOAD": PRELOAD, "GPUTRACE_START": "paused", "GPUTRACE_SUMMARY": "0",
                    "GPUTRACE_OUTPUT": str(tmp_path / "trace.json")})
    env.update(extra or {})
    p = subprocess.Popen([str(APP), str(SIG), mode], env=clean_env(env), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    assert p.stdout.readline() == f"ready {p.pid}\n".encode()
    return p


def capture(tmp_path, *args):
    env = clean_env({"GPUTRACE_RUN_DIR": str(tmp_path / "run")})
    return subprocess.run([str(GPUTRACE), "capture"] + [str(a) for a in args], env=env,
                          capture_output=True, timeout=30)


def finish(p):
    out, err = p.communicate(b"go\n", timeout=30)
    assert p.returncode == 0, err
    return out, err


@pytest.mark.sanitize
@pytest.mark.parametrize("mode", ["sigaction", "signal", "sigset", "bsd_signal", "sysv_signal",
                                  "__sysv_signal", "ssignal", "sigvec"])
def test_program_using_the_capture_signal_keeps_it(tmp_path, mode):
    """Each of glibc's calls that install a handler (sigset, bsd_signal, ...: glibc does them
    past its sigaction) keeps the signal for the program as sigaction does."""
    if mode == "sigvec" and platform.machine() != "x86_64":
        pytest.skip("sig_own binds sigvec@GLIBC_2.2.5 (x86_64's) only")
    p = start(tmp_path, mode)
    try:
        # gputrace stepped aside: no announcement, and capture says why it cannot reach it
        assert not (tmp_path / "run" / str(p.pid)).exists()
        r = capture(tmp_path, p.pid)
        assert r.returncode == 1 and len(r.stderr.splitlines()) == 1
        assert b"cannot be triggered" in r.stderr
        os.kill(p.pid, SIG)  # the program's own use of it
    finally:
        out, err = finish(p)
    assert out == b"handled 1\n"
    lines = gputrace_lines(err)
    assert len(lines) == 1, err
    assert f"handles signal {SIG} itself: gputrace steps aside" in lines[0]
    assert not (tmp_path / "trace.json").exists()


def test_other_calls_behave_as_glibc_does(tmp_path):
    """gputrace does glibc's sigset (SIG_HOLD, unblocking, SIG_HOLD returned), signal after
    siginterrupt, bsd_signal, sysv_signal, sigignore, sigvec again on its sigaction: each
    returns and installs what it does untraced."""
    p = start(tmp_path, "semantics", traced=False)
    plain, _ = finish(p)
    p = start(tmp_path, "semantics")
    traced, err = finish(p)
    assert traced == plain
    assert b"sigset HOLD again -> SIG_HOLD" in plain and b"sigset DFL -> SIG_HOLD" in plain
    lines = gputrace_lines(err)
    assert len(lines) == 1 and f"handles signal {SIG} itself" in lines[0], err


def test_program_that_waits_for_the_capture_signal_keeps_it(tmp_path):
    """A program whose signal thread takes the signal with sigwaitinfo (every thread blocks
    it, a server's way) uses it as one with a handler does: gputrace steps aside with one
    line, capture refuses the process, and the program's own signal reaches its thread."""
    p = start(tmp_path, "sigwait")
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (tmp_path / "run" / str(p.pid)).exists():
            time.sleep(0.01)  # the thread is on its way to its sigwaitinfo
        r = capture(tmp_path, "--duration", "0.1", p.pid)
        assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r
        assert b"cannot be triggered" in r.stderr
        os.kill(p.pid, SIG)  # the program's own use of it
        while time.monotonic() < deadline and pending(p.pid, SIG):
            time.sleep(0.01)
        time.sleep(0.1)  # taken: counted just after
    finally:
        out, err = finish(p)
    assert out == b"handled 1\n"
    lines = gputrace_lines(err)
    assert len(lines) == 1, err
    assert f"waits for signal {SIG} itself: gputrace steps aside" in lines[0]
    assert not (tmp_path / "trace.json").exists()


def test_program_that_blocks_the_capture_signal_is_refused(tmp_path):
    """A program whose every thread blocks the signal (gputrace's own left out) would never
    take it: gputrace capture looks at the threads' masks and refuses the process with one
    line, sending nothing (no window said to open while none can)."""
    p = start(tmp_path, "block")
    try:
        r = capture(tmp_path, "--duration", "0.1", p.pid)
        assert r.returncode == 1 and r.stdout == b"", r
        lines = r.stderr.decode().splitlines()
        assert len(lines) == 1 and f"every thread of the program blocks signal {SIG}" in \
            lines[0] and "cannot be triggered" in lines[0], lines
        assert not pending(p.pid, SIG)
    finally:
        out, err = finish(p)
    assert out == b"handled 0\n"
    assert gputrace_lines(err) == []


def pending(pid, sig):
    """Whether sig waits for the process (the kernel's ShdPnd mask)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("ShdPnd:"):
                return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def test_program_that_only_asks_sees_the_default(tmp_path):
    """A program that leaves the signal alone sees SIG_DFL and is not killed by a trigger."""
    p = start(tmp_path, "query")
    try:
        assert (tmp_path / "run" / str(p.pid)).exists()
        r = capture(tmp_path, "--duration", "0.1", p.pid)
        assert r.returncode == 0, r.stderr
    finally:
        out, err = finish(p)
    assert out == b"handled 0\n"
    assert gputrace_lines(err) == []


def test_capture_signal_can_be_chosen(tmp_path):
    """GPUTRACE_CAPTURE_SIGNAL moves gputrace off the program's signal: both work."""
    p = start(tmp_path, "sigaction", extra={"GPUTRACE_CAPTURE_SIGNAL": "RTMIN+9"})
    try:
        assert "signal 43" in (tmp_path / "run" / str(p.pid)).read_text()
        assert capture(tmp_path, "--duration", "0.1", p.pid).returncode == 0
        os.kill(p.pid, SIG)
    finally:
        out, err = finish(p)
    assert out == b"handled 1\n"
    assert gputrace_lines(err) == []


def test_bad_capture_signal_one_line(tmp_path):
    p = start(tmp_path, "query", extra={"GPUTRACE_CAPTURE_SIGNAL": "SIGSEGV"})
    out, err = finish(p)
    lines = gputrace_lines(err)
    assert len(lines) == 1 and "GPUTRACE_CAPTURE_SIGNAL='SIGSEGV'" in lines[0]
    assert out == b"handled 0\n"


def ignoring_usr1():
    default_signals()
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # inherited by every process of the run


@pytest.mark.parametrize("case", ["open run dir", "signal ignored"])
def test_a_line_every_process_would_print_is_said_once_for_the_run(tmp_path, case):
    """README: under gputrace run a warning every process would print is said once for the
    run. These named each process's pid, so each process said its own; under plain
    LD_PRELOAD each process still says its own, by pid."""
    app = APPS / "ze_hello"
    need(app)
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o755)
    run_dir.chmod(0o755)  # open to others: refused
    if case == "open run dir":
        extra, what, pre = {"GPUTRACE_RUN_DIR": str(run_dir)}, "is not usable", default_signals
    else:
        extra, what, pre = ({"GPUTRACE_RUN_DIR": str(tmp_path / "ok"),
                             "GPUTRACE_CAPTURE_SIGNAL": "USR1"}, "already has a handler",
                            ignoring_usr1)
    three = f"{app} >/dev/null; {app} >/dev/null; {app} >/dev/null"
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o", str(tmp_path / "t.json"),
                        "--", "sh", "-c", three], env=gputrace_env(sim_env(extra)),
                       capture_output=True, timeout=60, preexec_fn=pre)
    assert r.returncode == 0, r.stderr
    lines = [l for l in gputrace_lines(r.stderr) if what in l]
    assert len(lines) == 1 and "pid" not in lines[0], r.stderr
    env = clean_env(sim_env(dict(extra, LD_PRELOAD=PRELOAD, GPUTRACE_SUMMARY="0",
                                 GPUTRACE_OUTPUT=str(tmp_path / "p-%p.json"))))
    plain = subprocess.run(["sh", "-c", three], env=env, capture_output=True, timeout=60,
                           preexec_fn=pre)
    assert plain.returncode == 0, plain.stderr
    lines = [l for l in gputrace_lines(plain.stderr) if what in l]
    assert len(lines) == 3 and len({l.rsplit("pid ", 1)[1] for l in lines}) == 3, lines


def catches(pid, sig):
    """Whether the process has a handler for sig (the kernel's SigCgt mask)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    raise AssertionError("no SigCgt line")


def test_whole_run_handler_comes_with_the_first_recording(tmp_path):
    """A process that records its whole run gets the capture signal's handler
    with its first recording, when it announces itself; one that never
    records (a shell, a compiler: most processes of a job) is never
    announced, so never signalled, and makes no sigaction at start."""
    need(LOOP)
    env = clean_env(sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_SUMMARY": "0",
                             "GPUTRACE_OUTPUT": str(tmp_path / "t-%p.json"),
                             "GPUTRACE_RUN_DIR": str(tmp_path / "run")}))
    quiet = subprocess.Popen(["sh", "-c", "echo ready; read x"], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, preexec_fn=default_signals)
    busy = subprocess.Popen([str(LOOP), "loop", "1000"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=default_signals)
    with reaped(quiet), reaped(busy):
        assert quiet.stdout.readline() == b"ready\n"
        assert busy.stdout.readline().startswith(b"calls")
        assert busy.stdout.readline() == b"ready\n"
        assert not catches(quiet.pid, SIG)
        assert catches(busy.pid, SIG)
        assert sorted(os.listdir(tmp_path / "run")) == [str(busy.pid)]
        r = capture(tmp_path, busy.pid)
        assert r.returncode == 0 and b"records its whole run already" in r.stdout, r


def other_users_process():
    """A live process of another user, as (Popen or None, pid): one started as nobody
    when we may (root), else any found in /proc; (None, 0) when there is none."""
    if os.geteuid() == 0 and shutil.which("setpriv"):
        p = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              "sleep", "30"])
        for _ in range(200):  # until it runs as nobody
            if os.stat(f"/proc/{p.pid}").st_uid == 65534:
                break
            time.sleep(0.01)
        return p, p.pid
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and os.stat(f"/proc/{d}").st_uid != os.geteuid():
                return None, int(d)
        except OSError:
            pass
    return None, 0


def test_stale_file_whose_pid_another_user_has_now_is_removed(tmp_path):
    """A traced process killed by SIGKILL leaves its run-directory file; its pid, reused
    by another user's process, has another start time: `capture --all` recognizes the
    file as stale and removes it (README), and triggers the live process of the user's
    own. (It refused the stale one as another user's, rc 1, at every --all.)"""
    other, pid = other_users_process()
    if not pid:
        pytest.skip("no process of another user to reuse a pid")
    p = start(tmp_path, "query")
    try:
        stale = tmp_path / "run" / str(pid)
        stale.write_text(f"pid {pid}\nsignal {SIG}\nstart 1\nmode windows\nexe gone\n")
        (tmp_path / "run" / f"{pid}.window").write_text("")
        r = capture(tmp_path, "--duration", "0.1", "--all")
        assert (r.returncode, r.stderr) == (0, b"")
        assert r.stdout.decode().splitlines() == [
            f"gputrace capture: {p.pid} (sig_own): window of 0.100 s"]
        assert not {str(pid), f"{pid}.window"} & set(os.listdir(tmp_path / "run"))
    finally:
        finish(p)
        if other:
            other.kill()
            other.wait()


def test_run_directory_may_be_a_link_of_ones_own(tmp_path):
    """GPUTRACE_RUN_DIR a symbolic link of the user's to a folder of theirs (mode 0700):
    used as that folder. A link to a folder open to others is refused, as the folder
    itself is, in one line from the traced process and one from capture; so is a link
    another user made. (Any link was refused as "Not a directory".)"""
    (tmp_path / "own").mkdir(mode=0o700)
    (tmp_path / "run").symlink_to("own")
    p = start(tmp_path, "query")
    try:
        assert (tmp_path / "own" / str(p.pid)).exists()
        r = capture(tmp_path, "--duration", "0.1", "--all")
        assert (r.returncode, r.stderr) == (0, b""), r.stderr
        assert r.stdout.decode().splitlines() == [
            f"gputrace capture: {p.pid} (sig_own): window of 0.100 s"]
    finally:
        out, err = finish(p)
    assert gputrace_lines(err) == []
    assert os.listdir(tmp_path / "own") == []
    # a folder others may enter: refused behind a link too
    os.chmod(tmp_path / "own", 0o755)
    p = start(tmp_path, "query")
    out, err = finish(p)
    lines = gputrace_lines(err)
    assert len(lines) == 1 and "is not usable (Operation not permitted" in lines[0], lines
    r = capture(tmp_path, "--all")
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1 and b"refused" in r.stderr
    # a link another user made, to a folder of ours: refused (that user picked it)
    if os.geteuid() == 0:
        os.chmod(tmp_path / "own", 0o700)
        os.lchown(tmp_path / "run", 65534, 65534)
        r = capture(tmp_path, "--all")
        assert r.returncode == 1 and r.stderr.decode().splitlines() == [
            f"gputrace capture: refused: run directory {tmp_path / 'run'} is not yours alone "
            "(Operation not permitted); it must be your own, mode 0700"]


def wait_gone(path, timeout, gone=True):
    """path is gone (or there, not gone) within timeout: a window's mark, which the
    process's handler makes or removes (capture returns once the signal is sent)."""
    deadline = time.monotonic() + timeout
    while path.exists() == gone and time.monotonic() < deadline:
        time.sleep(0.002)
    return path.exists() != gone


def test_duration_window_of_a_process_that_records_nothing_ends(tmp_path):
    """A paused process that makes no traced call (a job's shell: no drain thread) ends
    a --duration window on time all the same (README: it ends exactly SEC after it
    opened): its PID.window goes, and the next window opens. The signal that ends it
    does not disturb the program (its read goes on). (The window stayed open for good:
    every later capture said "a window is open already", rc 1.)"""
    env = clean_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_START": "paused",
                     "GPUTRACE_SUMMARY": "0", "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
                     "GPUTRACE_RUN_DIR": str(tmp_path / "run")})
    p = subprocess.Popen(["sh", "-c", "echo ready; read x; read y; echo got $x $y"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    with reaped(p):
        assert p.stdout.readline() == b"ready\n"
        mark = tmp_path / "run" / f"{p.pid}.window"
        for n in range(3):
            t = time.monotonic()
            r = capture(tmp_path, "--duration", "0.2", p.pid)
            assert (r.returncode, r.stderr) == (0, b""), r.stderr
            assert r.stdout.decode().endswith(": window of 0.200 s\n")
            assert wait_gone(mark, 0.15, gone=False) or time.monotonic() - t > 0.2, n
            assert wait_gone(mark, 2.0), f"window {n + 1} still open"
            assert time.monotonic() - t < 1.0  # 0.2 s, and the capture's own start
        r = capture(tmp_path, "--stop", p.pid)
        assert r.returncode == 1 and b"no window is open" in r.stderr
        out, err = p.communicate(b"a\nb\n", timeout=30)
    assert (p.returncode, out, gputrace_lines(err)) == (0, b"got a b\n", [])
    assert not (tmp_path / "trace.json").exists()
    assert list((tmp_path / "run").iterdir()) == []


def test_exec_into_an_untraced_image_takes_its_announcement_back(tmp_path):
    """A listed process that execs an image the preload does not reach (its environment
    drops LD_PRELOAD) is no longer listed: `gputrace capture --all` finds nothing to
    signal, and the untraced image lives on. (Its announcement stayed, and --all sent
    it the capture signal, a real-time signal that ends a process untraced.) An exec
    that fails announces the process again."""
    env = clean_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_START": "paused",
                     "GPUTRACE_SUMMARY": "0", "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
                     "GPUTRACE_RUN_DIR": str(tmp_path / "run")})
    script = ("shopt -s execfail; echo ready; read x; exec /nonexistent/program 2>/dev/null; "
              "echo failed; read y; "
              "exec env -u LD_PRELOAD sh -c 'echo untraced; read z; echo done'")
    p = subprocess.Popen(["bash", "-c", script], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    with reaped(p):
        assert p.stdout.readline() == b"ready\n"
        listed = tmp_path / "run" / str(p.pid)
        assert listed.exists()
        p.stdin.write(b"x\n")
        p.stdin.flush()
        assert p.stdout.readline() == b"failed\n"
        assert listed.exists(), "an exec that failed leaves the process listed"
        p.stdin.write(b"y\n")
        p.stdin.flush()
        assert p.stdout.readline() == b"untraced\n"
        assert not listed.exists()
        r = capture(tmp_path, "--all")
        assert str(p.pid).encode() not in r.stdout + r.stderr, r
        out, err = p.communicate(b"z\n", timeout=30)
    assert (p.returncode, out) == (0, b"done\n"), err
    assert list((tmp_path / "run").iterdir()) == []


def test_exec_with_a_window_open_leaves_the_new_image_paused(tmp_path):
    """A paused process that execs while a window is open: the new image starts paused
    with no window, and says so to `gputrace capture` (--stop: none open; an open:
    accepted). (PID.window of the image before stayed: the new image could never get
    a window, refused "a window is open already", and --stop ended nothing.)"""
    env = clean_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_START": "paused",
                     "GPUTRACE_SUMMARY": "0", "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
                     "GPUTRACE_RUN_DIR": str(tmp_path / "run")})
    p = subprocess.Popen(["sh", "-c", "echo ready; read x; exec sh -c 'echo again; read y'"],
                         env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    with reaped(p):
        assert p.stdout.readline() == b"ready\n"
        mark = tmp_path / "run" / f"{p.pid}.window"
        assert capture(tmp_path, p.pid).returncode == 0
        assert wait_gone(mark, 2.0, gone=False)
        p.stdin.write(b"x\n")
        p.stdin.flush()
        assert p.stdout.readline() == b"again\n"
        assert not mark.exists()
        r = capture(tmp_path, "--stop", p.pid)
        assert r.returncode == 1 and b"no window is open: nothing to end" in r.stderr, r
        r = capture(tmp_path, p.pid)
        assert (r.returncode, r.stderr) == (0, b""), r.stderr
        assert wait_gone(mark, 2.0, gone=False)
        r = capture(tmp_path, "--stop", p.pid)
        assert r.returncode == 0 and r.stdout.decode().endswith(": window ends\n")
        assert wait_gone(mark, 2.0)
        out, err = p.communicate(b"y\n", timeout=30)
    assert (p.returncode, gputrace_lines(err)) == (0, [])
    assert list((tmp_path / "run").iterdir()) == []


@pytest.mark.parametrize("how", ["run", "preload"])
def test_paused_with_the_capture_signal_off_is_said_at_start(tmp_path, how):
    """--start paused waits for gputrace capture; with --capture-signal off nothing can
    reach it, and the process records nothing. That was said only at the end of a
    gputrace run ("no gputrace capture opened one"), and not at all under LD_PRELOAD.
    One line at start now, naming both settings as the user gave them."""
    app = APPS / "ze_hello"
    need(app)
    run_dir = {"GPUTRACE_RUN_DIR": str(tmp_path / "run")}
    if how == "run":
        r = subprocess.run([str(GPUTRACE), "run", "--no-summary", "--start", "paused",
                            "--capture-signal", "off", "-o", str(tmp_path / "t.json"), "--",
                            "sh", "-c", f"{app} >/dev/null; {app} >/dev/null"],
                           env=gputrace_env(sim_env(run_dir)), capture_output=True,
                           timeout=60, preexec_fn=default_signals)
        names = ("--start paused", "--capture-signal off")
    else:
        r = subprocess.run([str(app)], env=clean_env(sim_env(dict(
            run_dir, LD_PRELOAD=PRELOAD, GPUTRACE_START="paused", GPUTRACE_SUMMARY="0",
            GPUTRACE_CAPTURE_SIGNAL="off", GPUTRACE_OUTPUT=str(tmp_path / "t.json")))),
            capture_output=True, timeout=60, preexec_fn=default_signals)
        names = ("GPUTRACE_START=paused", "GPUTRACE_CAPTURE_SIGNAL=off")
    assert r.returncode == 0, r.stderr
    lines = [l for l in gputrace_lines(r.stderr) if "nothing will be recorded" in l]
    assert len(lines) == 1, r.stderr  # once for the run: every process would say it
    assert all(n in lines[0] for n in names), lines[0]
    assert not list(tmp_path.glob("t*.json"))
    if how == "run":
        assert "--capture-signal off" in gputrace_lines(r.stderr)[-1], r.stderr
    # with a capture range, windows open without the signal: nothing said
    r = subprocess.run([str(app)], env=clean_env(sim_env(dict(
        run_dir, LD_PRELOAD=PRELOAD, GPUTRACE_START="paused", GPUTRACE_SUMMARY="0",
        GPUTRACE_CAPTURE_SIGNAL="off", GPUTRACE_CAPTURE_RANGE="nvtx:x",
        GPUTRACE_OUTPUT=str(tmp_path / "t.json")))),
        capture_output=True, timeout=60, preexec_fn=default_signals)
    assert not [l for l in gputrace_lines(r.stderr) if "nothing will be recorded" in l]
