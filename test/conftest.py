"""Shared helpers for the end-to-end tests: run a program with and without
the tracer, read the trace back with a real JSON parser (Python's json)."""
import gzip
import json
import os
import pathlib
import signal
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = (ROOT / os.environ.get("BUILD", "build")).resolve()
LIB = BUILD / "libgputrace.so"
PRELOAD = os.environ.get("GT_PRELOAD") or str(LIB)
SANITIZE = os.environ.get("SANITIZE", "")
ZE_SIM = BUILD / "libze_sim.so"
APPS = BUILD / "test" / "apps"

# Sanitizer runtimes must not turn the program's own crashes into reports:
# the fault tests compare signals and exit codes with an untraced run.
SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_abort=0:"
    "handle_sigfpe=0:handle_sigill=0:allow_user_segv_handler=1:verify_asan_link_order=0:exitcode=97",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=98",
    "TSAN_OPTIONS": "halt_on_error=1:exitcode=96:report_signal_unsafe=0:die_after_fork=0:"
    "handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigfpe=0:handle_sigill=0",
}


def clean_env(extra=None):
    """The environment of an untraced run: no GPUTRACE_* or preload leaking in."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUTRACE_") and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH",
                                                          "NVTX_INJECTION64_PATH")}
    env.update(SAN_ENV)
    if extra:
        env.update(extra)
    return env


def sim_env(extra=None):
    """Environment that makes Debian's Level Zero loader use the simulated device."""
    env = {"ZE_ENABLE_ALT_DRIVERS": str(ZE_SIM)}
    if extra:
        env.update(extra)
    return env


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
    """preexec_fn: the program starts with SIGINT and SIGQUIT at their
    defaults, as from a terminal. A shell that runs the suite in the
    background (without job control) has them ignored, and children inherit
    that."""
    for sig in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


def run(cmd, *, traced=True, env=None, trace=None, tmp_path=None, timeout=120, input=None,
        check_trace=True):
    """Run cmd; traced runs write to `trace` (or tmp_path/trace.json)."""
    e = clean_env(env)
    trace_path = None
    if traced:
        if trace is None:
            assert tmp_path is not None
            trace = str(tmp_path / "trace.json")
        trace_path = trace
        e["LD_PRELOAD"] = PRELOAD
        e.setdefault("GPUTRACE_OUTPUT", trace)
        e.setdefault("GPUTRACE_SUMMARY", "0")
    proc = subprocess.run([str(c) for c in cmd], env=e, capture_output=True, timeout=timeout,
                          input=input, preexec_fn=default_signals)
    return Run(proc, trace_path)


def load_trace(path):
    path = str(path)
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


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
