"""Crashes and signals: the program dies (or survives) exactly as it does
untraced, and the trace holds every call it reported."""
import contextlib
import gzip
import os
import pathlib
import signal
import subprocess
import time
import zlib

import pytest

from conftest import PRELOAD, clean_env, default_signals, load_trace, reaped
from faultkit import (check_bounded, check_exact, compare, env_for, printed, prog, read_shm,
                      valid_trace, wait_for)

SIGS = {"segv": signal.SIGSEGV, "bus": signal.SIGBUS, "fpe": signal.SIGFPE,
        "abort": signal.SIGABRT, "assert": signal.SIGABRT, "ill": signal.SIGILL,
        "term": signal.SIGTERM, "int": signal.SIGINT, "hup": signal.SIGHUP,
        "quit": signal.SIGQUIT, "usr1": signal.SIGUSR1, "usr2": signal.SIGUSR2,
        "pipe": signal.SIGPIPE, "alrm": signal.SIGALRM, "vtalrm": signal.SIGVTALRM,
        "prof": signal.SIGPROF, "xcpu": signal.SIGXCPU, "xfsz": signal.SIGXFSZ,
        "io": signal.SIGIO, "pwr": signal.SIGPWR, "stkflt": signal.SIGSTKFLT,
        "rtmin": signal.SIGRTMIN, "rt3": signal.SIGRTMIN + 3, "rtmax": signal.SIGRTMAX}
# the others whose default ends a process: closed the same way
ENDING = ["usr1", "usr2", "pipe", "alrm", "vtalrm", "prof", "xcpu", "xfsz", "io", "pwr",
          "stkflt", "rtmin", "rt3", "rtmax"]


def signal_name(sig):
    """As the trailer names it: `kill -l`'s names (SIGRTMIN+3, SIGRTMAX-2)."""
    lo, hi = signal.SIGRTMIN, signal.SIGRTMAX
    if lo < sig < hi:
        return f"SIGRTMIN+{sig - lo}" if sig - lo <= (hi - lo) // 2 else f"SIGRTMAX-{hi - sig}"
    return signal.Signals(sig).name


def ended_by(meta, sig):
    assert meta["end"] == "signal " + signal_name(sig)
    assert meta["complete"] is True


@pytest.mark.parametrize("where", ["main", "worker", "hot", "worker-hot"])
@pytest.mark.parametrize("kind", ["segv", "bus", "fpe", "abort", "assert", "ill"])
def test_crash(tmp_path, kind, where):
    r = compare(tmp_path, [prog("fault_crash"), "crash", kind, where])
    assert r.traced.returncode == -SIGS[kind]
    ended_by(r.counted["gputrace"], SIGS[kind])
    if "hot" in where:
        check_bounded(r.counted, printed(r.traced.stdout), r.shm)
    else:
        check_exact(r.counted, printed(r.traced.stdout))


# Representative ones for the sanitizer runs (abort: TSan takes SIGSEGV over).
@pytest.mark.sanitize
@pytest.mark.parametrize("kind,where", [("abort", "worker"), ("abort", "hot")])
def test_crash_sanitized(tmp_path, kind, where):
    test_crash(tmp_path, kind, where)


@pytest.mark.parametrize("kind", ENDING)
def test_ending_signal(tmp_path, kind):
    """Every signal whose default ends the process, as the program meets it
    (a write to a pipe nobody reads, a timer that fires, raise): it dies by
    it, as untraced, after the trace is closed."""
    r = compare(tmp_path, [prog("fault_crash"), "crash", kind, "main"])
    assert r.traced.returncode == -SIGS[kind]
    ended_by(r.counted["gputrace"], SIGS[kind])
    check_exact(r.counted, printed(r.traced.stdout))


@pytest.mark.parametrize("where", ["main", "worker", "hot"])
def test_uncaught_cxx_exception(tmp_path, where):
    r = compare(tmp_path, [prog("fault_cxx"), where])
    assert r.traced.returncode == -signal.SIGABRT
    assert b"terminate called after throwing" in r.traced.stderr
    ended_by(r.counted["gputrace"], signal.SIGABRT)
    if where == "hot":
        check_bounded(r.counted, printed(r.traced.stdout), r.shm)
    else:
        check_exact(r.counted, printed(r.traced.stdout))


@pytest.mark.parametrize("kind", ["segv", "bus", "fpe", "abort", "term", "int", "hup", "quit",
                                  "usr1", "pipe", "alrm", "prof", "rt3"])
def test_own_handler_runs(tmp_path, kind):
    r = compare(tmp_path, [prog("fault_crash"), "handled", kind])
    assert r.traced.returncode == 40
    assert b"handled " in r.traced.stdout
    assert r.counted["gputrace"]["end"] == "_exit"
    check_exact(r.counted, printed(r.traced.stdout))


@pytest.mark.parametrize("kind", ["term", "int", "hup", "quit", "usr1", "pipe", "alrm", "rt3"])
def test_own_handler_resumes(tmp_path, kind):
    r = compare(tmp_path, [prog("fault_crash"), "resumed", kind])
    assert r.traced.returncode == 0
    assert b"handler ran 2 times, reads back its own" in r.traced.stdout
    check_exact(r.counted, printed(r.traced.stdout))


@pytest.mark.parametrize("kind", ["segv", "fpe", "abort", "term", "usr1", "pipe"])
def test_crash_reporter_reraises(tmp_path, kind):
    r = compare(tmp_path, [prog("fault_crash"), "chained", kind])
    assert r.traced.returncode == -SIGS[kind]
    assert b"reporter saw" in r.traced.stdout
    ended_by(r.counted["gputrace"], SIGS[kind])
    check_exact(r.counted, printed(r.traced.stdout))


@pytest.mark.parametrize("kind", ["term", "int", "hup", "quit", "usr1", "pipe", "alrm", "rt3"])
def test_sig_ign_holds(tmp_path, kind):
    r = compare(tmp_path, [prog("fault_crash"), "ignored", kind])
    assert r.traced.returncode == 0
    assert b"reads back SIG_IGN" in r.traced.stdout
    if kind == "pipe":  # a program that ignores SIGPIPE gets EPIPE
        assert b"write to a closed pipe: EPIPE" in r.traced.stdout
    check_exact(r.counted, printed(r.traced.stdout))


@pytest.mark.parametrize("kind", ["term", "int", "pipe"])
def test_inherited_sig_ign_holds(tmp_path, kind):
    """nohup-style: SIG_IGN set by the parent before exec is never replaced."""
    sig = SIGS[kind]
    r = compare(tmp_path, [prog("fault_crash"), "inherited", kind],
                preexec_fn=lambda: signal.signal(sig, signal.SIG_IGN))
    assert r.traced.returncode == 0
    assert b"reads back SIG_IGN" in r.traced.stdout
    if kind == "pipe":
        assert b"write to a closed pipe: EPIPE" in r.traced.stdout
    check_exact(r.counted, printed(r.traced.stdout))


@contextlib.contextmanager
def looping(tmp_path, threads=3, paced=False, extra=None):
    """fault_crash loop, ready: killed when the test ends, whatever ends it
    (threads calling flat out write a trace of hundreds of MB a second
    for as long as they run)."""
    env = clean_env(env_for(tmp_path, "traced", {
        "LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": str(tmp_path / "trace.json"),
        "GPUTRACE_SUMMARY": "0", "GPUTRACE_FLUSH_MS": "50", **(extra or {})}))
    p = subprocess.Popen([str(prog("fault_crash")), "loop", str(threads)] +
                         (["paced"] if paced else []), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    with reaped(p):
        assert p.stdout.readline() == b"main calls 1002\n"
        assert p.stdout.readline() == b"ready\n"
        time.sleep(0.3)
        yield p


@pytest.mark.sanitize
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1,
                                 signal.SIGALRM, signal.SIGRTMIN + 3])
def test_signal_from_outside_mid_run(tmp_path, sig):
    """Three threads calling flat out; every call finished before the signal
    was sent is in the trace. On stderr at most the one line on the events they
    lost (said with the summary off)."""
    with looping(tmp_path) as p:
        before = read_shm(tmp_path / "traced.shm")["completed"]
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
    assert p.returncode == -sig
    lines = err.decode().splitlines()
    assert len(lines) <= 1 and all(l.startswith("gputrace: ") and " events lost (ring_full "
                                   in l for l in lines), err
    trace = valid_trace(tmp_path / "trace.json", keep_events=False)  # millions of events
    ended_by(trace["gputrace"], sig)
    shm = read_shm(tmp_path / "traced.shm")
    check_bounded(trace, 1002, dict(shm, snapshot=before))


def test_trace_into_a_pipe_nobody_reads_kills_nothing(tmp_path):
    """The trace streamed into a pipe whose reader goes away: the writer's
    threads block every signal, so its write gets EPIPE, not SIGPIPE (and
    not our SIGPIPE handler): tracing stops with one line, the program goes
    on, and dies of what it dies of (SIGTERM here), not of SIGPIPE."""
    rd, wr = os.pipe()
    env = clean_env(env_for(tmp_path, "traced", {
        "LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": f"/dev/fd/{wr}", "GPUTRACE_SUMMARY": "0",
        "GPUTRACE_FLUSH_MS": "20"}))
    p = subprocess.Popen([str(prog("fault_crash")), "loop", "1", "paced"], env=env,
                         pass_fds=(wr,), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    os.close(wr)
    with reaped(p):
        with os.fdopen(rd, "rb") as r:
            assert r.read(10) == b'{"traceEve'
        assert p.stdout.readline() == b"main calls 1002\n"
        assert p.stdout.readline() == b"ready\n"
        time.sleep(0.5)  # cycles meanwhile write into the closed pipe
        assert p.poll() is None
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    assert p.returncode == -signal.SIGTERM, err
    assert any(l.startswith(f"gputrace: cannot write the trace to '/dev/fd/{wr}': Broken pipe")
               for l in err.decode().splitlines()), err


def thread_names(pid):
    names = set()
    for t in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            names.add((t / "comm").read_text().strip())
        except OSError:
            pass  # a thread that ended meanwhile
    return names


def trailer_tail(path):
    """The last bytes of a trace the process may still be writing (a .gz
    one: of what a complete read of it holds; b"" while cut)."""
    if path.suffix == ".gz":
        try:
            return gzip.decompress(path.read_bytes())[-8192:]
        except (EOFError, OSError, zlib.error):
            return b""
    with open(path, "rb") as f:
        f.seek(0, 2)
        f.seek(max(0, f.tell() - 8192))
        return f.read()


# the .gz case under the sanitizers too: the only test whose cycles reach the
# output thread there (a plain file no longer starts it)
@pytest.mark.parametrize("name", ["trace.json",
                                  pytest.param("trace.json.gz", marks=pytest.mark.sanitize)])
def test_window_ends_while_the_output_thread_writes(tmp_path, name):
    """A capture window over three threads calling in bursts: each cycle
    hands megabytes to the writer (a .gz to the output thread, gputrace-write,
    which compresses them beside the drain; a plain file the drain writes
    itself); the window's file ends complete and exact when the window does,
    and nothing more is written while the program calls on (the output stays
    bounded)."""
    trace = tmp_path / name
    with looping(tmp_path, paced=True, extra={"GPUTRACE_DELAY": "0.1", "GPUTRACE_DURATION": "0.3",
                                              "GPUTRACE_FLUSH_MS": "200",
                                              "GPUTRACE_OUTPUT": str(trace)}) as p:
        def window_ended():
            # one read a look: a .gz's is a whole decompression
            tail = trailer_tail(trace) if trace.exists() else b""
            return b'"complete":true' in tail and b'"end":"window"' in tail

        assert wait_for(window_ended)
        assert ("gputrace-write" in thread_names(p.pid)) == name.endswith(".gz")
        time.sleep(0.2)  # the file's last cycle compacts it after that trailer
        size = trace.stat().st_size
        calls = read_shm(tmp_path / "traced.shm")["completed"]
        time.sleep(0.5)  # the program calls on, outside any window
        assert read_shm(tmp_path / "traced.shm")["completed"] > calls + 10000
        assert trace.stat().st_size == size
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
    assert p.returncode == -signal.SIGTERM
    assert sorted(f.name for f in tmp_path.glob("trace*.json*")) == [name]
    # megabytes of JSON: several 1 MiB hand-overs (a .gz ~16x smaller)
    assert trace.stat().st_size == size > (4 << 20 if name == "trace.json" else 256 << 10)
    ns = []
    mark = []

    def inside(ev):
        if ev["ph"] == "X":
            start = round(ev["ts"] * 1000)
            ns.append((start, start + round(ev["dur"] * 1000)))
            if ev.get("cat") == "gputrace":
                mark.append((ev["name"], ev["tid"], ns[-1]))
    t = valid_trace(trace, keep_events=False, each=inside)
    info = t["gputrace"]
    assert info["complete"] is True and info["end"] == "window"
    lo, hi = info["capture"]["start_ns"], info["capture"]["end_ns"]
    assert 0.29e9 <= hi - lo <= 0.35e9
    assert mark == [("capture window 1", 0, (lo, hi))]
    assert [(a, b) for a, b in ns if not lo <= a <= b <= hi] == []
    # every recorded call is in the file (the mark is no recorded call)
    assert len(ns) - 1 == info["events_recorded"] > 10000


def test_sigkill_mid_run(tmp_path):
    """SIGKILL cannot be caught: the file is the last checkpoint, valid, and
    holds every call finished two flush intervals before the kill. (A
    checkpoint is one write: the kill can cut only that write, which a
    program of ordinary pace almost never meets.)"""
    with looping(tmp_path, paced=True) as p:
        before = read_shm(tmp_path / "traced.shm")["completed"]
        time.sleep(0.25)  # > 2 x GPUTRACE_FLUSH_MS
        p.kill()
        p.communicate(timeout=30)
    assert p.returncode == -signal.SIGKILL
    trace = valid_trace(tmp_path / "trace.json", keep_events=False)
    meta = trace["gputrace"]
    assert meta["complete"] is False and meta["end"] is None
    shm = read_shm(tmp_path / "traced.shm")
    check_bounded(trace, 1002, dict(shm, snapshot=before))
