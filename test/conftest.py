"""Shared helpers for the end-to-end tests: run a program with and without
the tracer, read the trace back with a real JSON parser (Python's json)."""
import collections
import contextlib
import gzip
import json
import os
import pathlib
import random
import re
import resource
import signal
import subprocess
import time
import zlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = (ROOT / os.environ.get("BUILD", "build")).resolve()
LIB = BUILD / "libgputrace.so"
PRELOAD = os.environ.get("GT_PRELOAD") or str(LIB)
SANITIZE = os.environ.get("SANITIZE", "")
ZE_SIM = BUILD / "libze_sim.so"
APPS = BUILD / "test" / "apps"
GPUTRACE = ROOT / "scripts" / "gputrace"
# What runs before our library in a process: the sanitizer runtime of a sanitized build
# (it must come first), and under ThreadSanitizer a library that starts that runtime in a
# program with nothing instrumented, as scripts/gputrace's sh (test/cli/tsan_start.c).
SAN_PRELOAD = PRELOAD.split()[:-1]
if SANITIZE == "thread":
    SAN_PRELOAD.append(str(BUILD / "test" / "cli" / "libtsan-start.so"))
# Why a fork child that samples telemetry cannot run under ThreadSanitizer (gdb on the
# hung child): its fork() holds the runtime's thread registry while libc runs the fork
# handlers, and ours start the child's drain thread there when telemetry is sampled.
TSAN_FORK_THREAD = ("ThreadSanitizer's fork() holds its thread registry while the fork "
                    "handlers run, where a sampling child starts its drain thread: it hangs")

# Sanitizer runtimes must not turn the program's own crashes into reports:
# the fault tests compare signals and exit codes with an untraced run.
SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_abort=0:"
    "handle_sigfpe=0:handle_sigill=0:allow_user_segv_handler=1:verify_asan_link_order=0:exitcode=97",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=98",
    # atexit_sleep_ms=0: by default ThreadSanitizer sleeps 1 s at exit in a process with
    # more than one thread, which every traced process is (the drain thread): each
    # `sleep 0.01` of a job's polling loop took 1 s (strace), longer than the processes
    # the job waits for live.
    "TSAN_OPTIONS": "halt_on_error=1:exitcode=96:report_signal_unsafe=0:die_after_fork=0:"
    "handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigfpe=0:handle_sigill=0:"
    "atexit_sleep_ms=0",
}


def clean_env(extra=None):
    """The environment of an untraced run: no GPUTRACE_* or preload leaking in."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUTRACE_") and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH",
                                                          "NVTX_INJECTION64_PATH",
                                                          "INTEL_LIBITTNOTIFY64")}
    env.update(SAN_ENV)
    if extra:
        env.update(extra)
    return env


def gputrace_env(extra=None):
    """The environment of scripts/gputrace: clean, with this build's library (behind the
    sanitizer runtime of a sanitized build) and tool, not those of build/."""
    env = clean_env({"GPUTRACE_LIB": PRELOAD.split()[-1],
                     "GPUTRACE_TOOL": str(BUILD / "gputrace-tool")})
    if SAN_PRELOAD:
        env["LD_PRELOAD"] = " ".join(SAN_PRELOAD)
    env.update(extra or {})
    return env


def sim_env(extra=None):
    """Environment that makes Debian's Level Zero loader use the simulated device."""
    env = {"ZE_ENABLE_ALT_DRIVERS": str(ZE_SIM)}
    if extra:
        env.update(extra)
    return env


# Level Zero's newer entry points need a newer loader than Debian's 1.8.12: the test-only
# one in test/levelzero/newloader, or a real one built from its source, whose folder
# ZE_TEST_LOADER_DIR names (the sample programs' checks then run against it).
NEWER_LOADER_DIR = pathlib.Path(os.environ.get("ZE_TEST_LOADER_DIR") or
                                BUILD / "test" / "levelzero" / "newloader")


def newer_loader(env=None):
    """env with a newer Level Zero loader first in the library search path."""
    need(NEWER_LOADER_DIR / "libze_loader.so.1")
    return dict(env or {}, LD_LIBRARY_PATH=str(NEWER_LOADER_DIR))


def run_fresh(cmd, **kw):
    """subprocess.run(cmd) with a peak RSS of its own. Linux hands a process's
    peak RSS on through fork/vfork + execve (getrusage's ru_maxrss of the new
    program starts at the runner's peak), so a program that bounds its own
    memory by ru_maxrss (libFuzzer's -rss_limit_mb) would count the runner's.
    A small shell in between forks the program from its own small image."""
    return subprocess.run(["/bin/sh", "-c", '"$@"; exit $?', "sh"] + [str(c) for c in cmd], **kw)


class Run:
    def __init__(self, proc, trace_path):
        self.proc = proc
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.trace_path = trace_path

    @property
    def trace(self):
        return load_trace(self.trace_path)


def default_signals():
    """preexec_fn: the program starts with the signals that end a process
    at their defaults, as from a terminal. A shell that runs the suite in
    the background (without job control) has SIGINT and SIGQUIT ignored,
    nohup has SIGHUP ignored, and children inherit that: a traced program
    keeps an inherited SIG_IGN (as it must), so a test sending it the
    signal would wait for an end that never comes."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


@contextlib.contextmanager
def reaped(p):
    """The Popen p killed (if it still runs) and reaped when the block ends,
    whatever ends it: a traced program calling flat out writes hundreds of
    MB of trace a second for as long as it runs, so a failed test must not
    leave it running."""
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate()


def run(cmd, *, traced=True, env=None, trace=None, tmp_path=None, timeout=120, input=None,
        check_trace=True, also_preload=()):
    """Run cmd; traced runs write to `trace` (or tmp_path/trace.json), with
    the libraries also_preload names preloaded after gputrace."""
    e = clean_env(env)
    trace_path = None
    if traced:
        if trace is None:
            assert tmp_path is not None
            trace = str(tmp_path / "trace.json")
        trace_path = trace
        e["LD_PRELOAD"] = " ".join([PRELOAD] + [str(p) for p in also_preload])
        e.setdefault("GPUTRACE_OUTPUT", trace)
        e.setdefault("GPUTRACE_SUMMARY", "0")
    proc = subprocess.run([str(c) for c in cmd], env=e, capture_output=True, timeout=timeout,
                          input=input, preexec_fn=default_signals)
    return Run(proc, trace_path)


# A trace read whole costs the runner ~5x its size in Python objects, and the
# runner's peak RSS is inherited by every program it starts (see run_fresh):
# traces above this size must be streamed with scan_trace.
LOAD_WHOLE_MAX = 16 << 20


def open_trace(path):
    """The trace's text as a stream, gunzipped when it is gzip."""
    f = open(path, "rb")
    if f.read(2) == b"\x1f\x8b":
        f.close()
        return gzip.open(path, "rt", encoding="utf-8")
    f.close()
    return open(path, "r", encoding="utf-8")


def read_trace_bytes(path):
    path = str(path)
    with open(path, "rb") as f:
        data = f.read(LOAD_WHOLE_MAX + 1)
        assert len(data) <= LOAD_WHOLE_MAX and not f.read(1), (
            f"{path}: over {LOAD_WHOLE_MAX >> 20} MiB; read it with scan_trace() so the test "
            "runner stays small")
    return data


def parse_trace(path, data):
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
        assert len(data) <= 8 * LOAD_WHOLE_MAX, f"{path}: too big to read whole; use scan_trace()"
    return json.loads(data)


def load_trace(path):
    return parse_trace(path, read_trace_bytes(path))


_JSON_SPACE = re.compile(r"[ \t\r\n]*")


class _Stream:
    """Python's own JSON decoder over a text stream, one value at a time."""
    CHUNK = 1 << 20

    def __init__(self, f):
        self.f, self.buf, self.pos, self.eof = f, "", 0, False
        self.decoder = json.JSONDecoder()

    def _more(self):
        data = self.f.read(self.CHUNK)
        self.buf, self.pos = self.buf[self.pos:] + data, 0
        self.eof = not data
        return bool(data)

    def peek(self):
        """The next non-whitespace character ('' at the end)."""
        while True:
            self.pos = _JSON_SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos:self.pos + 1]

    def expect(self, ch):
        got = self.peek()
        assert got == ch, f"expected {ch!r} at offset {self.pos}, found {got!r}"
        self.pos += 1

    def value(self):
        self.peek()
        while True:
            try:
                v, end = self.decoder.raw_decode(self.buf, self.pos)
                # a number may continue in the next chunk
                if end < len(self.buf) or self.eof:
                    self.pos = end
                    return v
            except json.JSONDecodeError:
                if self.eof:
                    raise
            self._more()


def scan_trace(path, keep=None, each=None):
    """Stream a trace (object form, .json or .json.gz) without holding it:
    returns its top-level keys, with "traceEvents" holding only the events
    for which keep(ev) is true (none when keep is None), and "counts", a
    Counter of (ph, cat, name) over every event. each(ev), if given, sees
    every event (to assert on it). The file must be complete, valid JSON."""
    out = {"traceEvents": [], "counts": collections.Counter(), "kept": keep is not None}
    with open_trace(path) as f:
        s = _Stream(f)
        s.expect("{")
        while s.peek() != "}":
            key = s.value()
            s.expect(":")
            if key != "traceEvents":
                out[key] = s.value()
            else:
                s.expect("[")
                while s.peek() != "]":
                    ev = s.value()
                    out["counts"][(ev.get("ph"), ev.get("cat"), ev.get("name"))] += 1
                    if each is not None:
                        each(ev)
                    if keep is not None and keep(ev):
                        out["traceEvents"].append(ev)
                    if s.peek() == ",":
                        s.expect(",")
                s.expect("]")
            if s.peek() == ",":
                s.expect(",")
        s.expect("}")
        assert s.peek() == "", "data after the trace's closing brace"
    return out


def count_events(scanned, ph=None, cat=None, name=None):
    """How many events of a scan_trace() result match."""
    return sum(n for (p, c, nm), n in scanned["counts"].items()
               if (ph is None or p == ph) and (cat is None or c == cat) and
               (name is None or nm == name))


def events(trace, ph=None, cat=None, name=None, pid=None):
    out = []
    for ev in trace["traceEvents"]:
        if ph is not None and ev.get("ph") != ph:
            continue
        if cat is not None and ev.get("cat") != cat:
            continue
        if name is not None and ev.get("name") != name:
            continue
        if pid is not None and ev.get("pid") != pid:
            continue
        out.append(ev)
    return out


def assert_clamps(trace, bound_ns, undecidable=frozenset()):
    """Device records (spans and marks) moved later to their call's start: each carries
    args.clamped_ns, at most bound_ns (but for the correlations in undecidable); the
    trailer's adjusted.clamped counts them all and their largest. Returns the moves."""
    marked = [e for e in trace["traceEvents"]
              if e.get("ph") in ("X", "i") and "clamped_ns" in e.get("args", {})]
    moved = [e["args"]["clamped_ns"] for e in marked]
    clamped = trace["gputrace"].get("adjusted", {}).get("clamped", {"count": 0, "max_ns": 0})
    assert clamped["count"] == len(moved)
    assert int(clamped["max_ns"]) == max(moved, default=0)
    over = [e for e in marked
            if e["args"]["clamped_ns"] > bound_ns and e["args"]["correlation"] not in undecidable]
    assert not over, (len(over), max(e["args"]["clamped_ns"] for e in over), over[:3])
    return moved


def gputrace_lines(stderr):
    """gputrace's own stderr lines (notices and summary)."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    return [l for l in text.splitlines() if l.startswith("gputrace")]


def strip_gputrace(stderr):
    """The program's stderr without gputrace's lines and summary block."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    out, in_summary = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("gputrace"):
            in_summary = line.startswith("gputrace summary")
            continue
        if in_summary and (line.startswith("  ") or line.strip() == ""):
            continue
        in_summary = False
        out.append(line)
    return "".join(out)


def need(path):
    """`make test` builds everything a test needs: a missing file is a failure."""
    assert pathlib.Path(path).exists(), f"{path} not built (run make)"


# --- suite-wide: test order and the runner's own memory -------------------
# `--order=reverse|random` (or GT_TEST_ORDER) runs the suite in another order
# to prove no test depends on what ran before it; `--seed=N` repeats a random
# order (the seed is printed in the header).
RUNNER_PEAK_RSS_LIMIT_MIB = 300


def pytest_addoption(parser):
    parser.addoption("--order", choices=("file", "reverse", "random"),
                     default=os.environ.get("GT_TEST_ORDER", "file"),
                     help="test order: file (default), reverse or random")
    parser.addoption("--seed", type=int, default=None, help="seed of --order=random")


def _seed(config):
    if config.getoption("seed") is None:
        config.option.seed = int.from_bytes(os.urandom(4), "little")
    return config.option.seed


def pytest_report_header(config):
    order = config.getoption("order")
    if order == "random":
        return f"test order: random, --seed={_seed(config)}"
    return f"test order: {order}"


def pytest_collection_modifyitems(session, config, items):
    order = config.getoption("order")
    if order == "reverse":
        items.reverse()
    elif order == "random":
        random.Random(_seed(config)).shuffle(items)


def _untracked():
    """Files in the checkout that git neither tracks nor ignores (None
    outside a git checkout)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return {l[3:] for l in out.stdout.splitlines() if l.startswith("?? ")}


def pytest_sessionstart(session):
    session.config._gt_untracked = _untracked()


def runner_peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    peak = runner_peak_rss_mib()
    verdict = "ok" if peak <= RUNNER_PEAK_RSS_LIMIT_MIB else "FAILED: over the limit"
    terminalreporter.write_line(pytest_report_header(config))
    for f in getattr(config, "_gt_left_behind", []):
        terminalreporter.write_line(f"FAILED: a test left {f} in the checkout")
    terminalreporter.write_line(f"test runner peak RSS: {peak} MiB (limit "
                                f"{RUNNER_PEAK_RSS_LIMIT_MIB} MiB) {verdict}")


def _left_behind(config):
    before, after = getattr(config, "_gt_untracked", None), _untracked()
    return sorted(after - before) if before is not None and after is not None else []


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    # a runner that grew past the limit makes every program it starts look
    # bigger than it is (run_fresh), and a file a test leaves in the checkout
    # can change what a later run sees: both fail the suite
    session.config._gt_left_behind = _left_behind(session.config)
    if exitstatus == 0 and (runner_peak_rss_mib() > RUNNER_PEAK_RSS_LIMIT_MIB or
                            session.config._gt_left_behind):
        session.exitstatus = 1


def gputrace_capture(tmp_path, *args, shell=False):
    """`gputrace capture ARGS` from another process (or, shell: another shell), whose
    environment names only the run directory (tmp_path/run)."""
    env = clean_env({"GPUTRACE_RUN_DIR": str(tmp_path / "run")})
    cmd = [str(GPUTRACE), "capture"] + [str(a) for a in args]
    if shell:
        cmd = ["/bin/sh", "-c", " ".join(cmd)]
    return subprocess.run(cmd, env=env, capture_output=True, timeout=30)


def window_ended(g):
    """For wait_trace: a window's file whose last trailer is on disk (the writes of
    the window's last cycle say end: window on the way, complete only at its end)."""
    return g.get("end") == "window" and g.get("complete")


def wait_trace(path, done, what, timeout=10.0):
    """The trace at path once done(its "gputrace" object) holds: a file the process
    writes while it runs on (a window's, a flight recorder's dump). A read that
    overlaps the writes can mix checkpoints: new events on pages it had read past are
    missing, those on pages it reached later are there, and as every event lies within
    a page (the layout that keeps a killed process's file valid), it parses, with a run
    of events missing (CI: 139 launches gone from the middle of a window). So the trace
    counts once a second read finds the same bytes."""
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        if path.exists():
            try:
                data = read_trace_bytes(path)
                t = parse_trace(path, data)
            except (AssertionError, ValueError, EOFError, gzip.BadGzipFile, zlib.error):
                # read while a checkpoint was being written (a .gz member cut short, or
                # with a corrupt end: gzip's own errors): read it again
                t = None
            if t and done(t["gputrace"]):
                if data == seen:
                    return t
                seen = data
                time.sleep(0.02)
                continue
        seen = None
        time.sleep(0.05)
    raise AssertionError(f"{path}: no {what}")
