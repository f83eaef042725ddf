"""Helpers of the fault suite: run a program traced and untraced, compare what
the program did, and check the trace's accounting.

Every case checks, as issue 8 asks:
- stdout, stderr (minus gputrace's own lines) and the exit status or the
  terminating signal equal those of an untraced run;
- the trace file is valid JSON a viewer opens (traceEvents, the gputrace
  trailer, well-formed events);
- events recorded + events reported lost == events produced, where produced
  is what the program reported ("<role> calls N" lines, $FAULT_NOTES,
  $FAULT_SHM counters for threads racing the end)."""
import glob
import os
import pathlib
import struct
import subprocess
import time

from conftest import (BUILD, PRELOAD, SANITIZE, clean_env, count_events, default_signals, gputrace_lines,
                      load_trace, need, scan_trace, sim_env, strip_gputrace)

FAULT = BUILD / "test" / "fault"
ZE_API = "ze_api"


def prog(name):
    path = FAULT / name
    need(path)
    return path


def printed(stdout, role=None):
    """Sum of the "<role> calls N" lines."""
    total = 0
    for line in stdout.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "calls" and (role is None or parts[0] == role):
            total += int(parts[2])
    return total


def notes(path):
    """$FAULT_NOTES: list of (pid, key, value)."""
    out = []
    if os.path.exists(path):
        for line in open(path):
            pid, key, value = line.split()
            out.append((int(pid), key, int(value)))
    return out


def read_shm(path):
    started, completed, snapshot, extra = struct.unpack("<4Q", open(path, "rb").read(32))
    return {"started": started, "completed": completed, "snapshot": snapshot, "extra": extra}


def env_for(tmp_path, tag, extra=None):
    e = sim_env({"FAULT_NOTES": str(tmp_path / f"{tag}.notes"),
                 "FAULT_SHM": str(tmp_path / f"{tag}.shm")})
    if extra:
        e.update(extra)
    return e


class Pair:
    """An untraced and a traced run of the same command."""

    def __init__(self, plain, traced, tmp_path, trace):
        self.plain, self.traced, self.tmp_path, self.trace_path = plain, traced, tmp_path, trace

    @property
    def trace(self):
        return valid_trace(self.trace_path)

    @property
    def counted(self):
        """The trace checked and counted, its events not kept (see valid_trace)."""
        return valid_trace(self.trace_path, keep_events=False)

    @property
    def notes(self):
        return notes(self.tmp_path / "traced.notes")

    @property
    def shm(self):
        return read_shm(self.tmp_path / "traced.shm")


def run_env(tmp_path, tag, env, traced, trace):
    e = clean_env(env_for(tmp_path, tag, env))
    if traced:
        e["LD_PRELOAD"] = PRELOAD
        e.setdefault("GPUTRACE_OUTPUT", str(trace))
        e.setdefault("GPUTRACE_SUMMARY", "0")
    return e


def compare(tmp_path, cmd, env=None, traced_env=None, timeout=60, cwd=None,
            preexec_fn=default_signals, same_stderr=True):
    """Run cmd untraced then traced; what the program did must be the same."""
    trace = tmp_path / "trace.json"
    cmd = [str(c) for c in cmd]
    runs = []
    for tag, traced in (("plain", False), ("traced", True)):
        e = run_env(tmp_path, tag, env, traced, trace)
        if traced and traced_env:
            e.update(traced_env)
        runs.append(subprocess.run(cmd, env=e, capture_output=True, timeout=timeout,
                                   cwd=cwd or tmp_path, preexec_fn=preexec_fn))
    plain, traced = runs
    assert traced.returncode == plain.returncode, (plain.returncode, traced.returncode,
                                                   traced.stderr[-2000:])
    assert traced.stdout == plain.stdout
    if same_stderr:
        assert strip_gputrace(traced.stderr) == strip_gputrace(plain.stderr)
    return Pair(plain, traced, tmp_path, trace)


def check_event(ev):
    """What a viewer needs of one event."""
    assert ev["ph"] in ("X", "i", "C", "M", "s", "f"), ev
    assert isinstance(ev["pid"], int), ev
    if ev["ph"] != "M":
        assert isinstance(ev["ts"], (int, float)), ev
    if ev["ph"] == "X":
        assert ev["dur"] >= 0, ev
        assert isinstance(ev["name"], str) and isinstance(ev["tid"], int), ev


def valid_trace(path, keep_events=True, each=None):
    """Parses, and has what a viewer needs: a list of well-formed events and
    the gputrace trailer with consistent accounting. Streamed: with
    keep_events=False only counts are kept (for traces of millions of
    events), and spans() refuses such a trace; use n_spans(). each(ev) sees
    every event."""
    def check(ev):
        check_event(ev)
        if each is not None:
            each(ev)
    t = scan_trace(path, keep=(lambda ev: True) if keep_events else None, each=check)
    meta = t["gputrace"]
    assert meta["events_recorded"] >= 0 and meta["events_lost"] >= 0
    # the per-thread and per-reason figures add up to the totals
    assert sum(th["events"] for th in meta["threads"]) == meta["events_recorded"]
    assert sum(meta["lost_by_reason"].values()) == meta["events_lost"]
    assert sum(th["lost"] for th in meta["threads"]) == meta["lost_by_reason"]["ring_full"]
    return t


def spans(trace, cat=ZE_API, name=None):
    assert trace.get("kept", True), "events were not kept (valid_trace(keep_events=False))"
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == cat and
            (name is None or e.get("name") == name)]


def n_spans(trace, cat=ZE_API, name=None):
    if "counts" in trace:
        return count_events(trace, "X", cat, name)
    return len(spans(trace, cat, name))


def accounted(trace):
    """Events the trace accounts for: recorded + reported lost."""
    meta = trace["gputrace"]
    return meta["events_recorded"] + meta["events_lost"]


def check_exact(trace, produced, lost=0):
    """recorded + lost == produced, every recorded event is a span in the file."""
    meta = trace["gputrace"]
    assert accounted(trace) == produced, (meta["events_recorded"], meta["events_lost"], produced)
    assert n_spans(trace) == meta["events_recorded"]
    if lost is not None:
        assert meta["events_lost"] == lost, meta["lost_by_reason"]


def check_bounded(trace, base, shm):
    """Threads racing the end: every call finished before the program ended
    itself is accounted for, and nothing is counted that was not begun."""
    meta = trace["gputrace"]
    n = n_spans(trace)
    if meta["complete"]:
        assert n == meta["events_recorded"], (n, meta["events_recorded"])
    else:
        # killed (SIGKILL) between a cycle's events and its footer: the
        # trailer may lag the events by that cycle, never count more
        assert n >= meta["events_recorded"], (n, meta["events_recorded"])
    got = n + meta["events_lost"]
    assert base + shm["snapshot"] <= got <= base + shm["started"], (base, shm, got)


def trace_files(tmp_path, pattern="t-*.json"):
    return sorted(glob.glob(str(tmp_path / pattern)))


def wait_for(pred, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def run_with_slow_reader(tmp_path, env, cmd, pause_s=0.0):
    """Run cmd traced into a pipe that nobody reads until the program's loop
    is over (its "loop_ns" note appears): the drain thread is stuck writing
    meanwhile. Returns (process, stdout, stderr, its notes as a dict, the
    trace's bytes), the reader sleeping pause_s after each chunk."""
    import threading
    fifo = tmp_path / "slow.fifo"
    os.mkfifo(fifo)
    got = bytearray()
    go = threading.Event()

    def reader():
        with open(fifo, "rb") as f:
            go.wait(60)
            for chunk in iter(lambda: f.read(65536), b""):
                got.extend(chunk)
                time.sleep(pause_s)
    th = threading.Thread(target=reader)
    th.start()
    e = run_env(tmp_path, "traced", env, True, fifo)
    p = subprocess.Popen([str(c) for c in cmd], env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=tmp_path)
    deadline = time.time() + 60
    while time.time() < deadline and not any(k == "loop_ns" for _, k, _ in
                                             notes(tmp_path / "traced.notes")):
        time.sleep(0.02)
    go.set()
    out, err = p.communicate(timeout=60)
    th.join(30)
    return p, out, err, {k: v for _, k, v in notes(tmp_path / "traced.notes")}, bytes(got)
