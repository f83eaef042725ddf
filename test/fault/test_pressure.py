"""Pressure: full rings, full disks, slow readers. The program is never
harmed or slowed on its hot path; what cannot be kept is counted, exactly."""
import os
import resource
import subprocess
import threading
import time
import zlib

import pytest

from conftest import (APPS, GPUTRACE, PRELOAD, SANITIZE, clean_env, default_signals,
                      gputrace_env, gputrace_lines, load_trace, sim_env)
from faultkit import (check_exact, compare, printed, prog, run_with_slow_reader, valid_trace)


@pytest.mark.sanitize
def test_tiny_rings_count_every_loss(tmp_path):
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "4", "50000"],
                env={"GPUTRACE_BUFFER_KB": "4", "GPUTRACE_OVERFLOW_MB": "0", "GPUTRACE_FLUSH_MS": "1000"})
    assert r.traced.returncode == 0
    t = r.trace
    meta = t["gputrace"]
    assert meta["events_lost"] > 0
    assert meta["lost_by_reason"]["ring_full"] == meta["events_lost"]
    check_exact(t, printed(r.traced.stdout), lost=None)


def address_space_2g():
    default_signals()
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.skipif(bool(SANITIZE), reason="sanitizer runtimes reserve terabytes of address space")
@pytest.mark.parametrize("checkpointed", [True, False])
def test_no_memory_for_the_events_ends_the_trace_in_one_line(tmp_path, checkpointed):
    # 40000 calls after the program mapped all the address space RLIMIT_AS leaves: the
    # events found no buffer, and the file was not JSON (numbers and names left out) or
    # empty, without a word, the exit held 10 s by allocations retried for each event
    env = {"GPUTRACE_FLUSH_MS": "10" if checkpointed else "60000"}
    t0 = time.monotonic()
    r = compare(tmp_path, [prog("fault_threads"), "exhaust", "0", "40000"], env=env,
                preexec_fn=address_space_2g, timeout=60)
    assert time.monotonic() - t0 < 8
    assert r.traced.returncode == 0
    lines = gputrace_lines(r.traced.stderr)
    assert len(lines) == 1 and "Cannot allocate memory" in lines[0], lines
    if not checkpointed:
        assert not r.trace_path.exists()
        return
    # the trace ends at its last checkpoint (the calls before the address space ran
    # out), said as a failed write is
    meta = load_trace(r.trace_path)["gputrace"]
    assert meta["complete"] is False
    assert meta["end"] == "write failed: Cannot allocate memory"
    assert 0 < meta["events_recorded"] <= 102


def test_full_device_one_message(tmp_path):
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "2", "20000"],
                traced_env={"GPUTRACE_OUTPUT": "/dev/full"})
    assert r.traced.returncode == 0
    lines = gputrace_lines(r.traced.stderr)
    assert len(lines) == 1 and "/dev/full" in lines[0], lines


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                         capture_output=True)
    if res.returncode:
        pytest.skip("cannot mount a small tmpfs here: " + res.stderr.decode().strip())
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)])


@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_nearly_full_filesystem(tmp_path, small_fs, name):
    """The trace outgrows the disk: one message, the program unharmed, and
    the file left as its last checkpoint, valid. A .gz trace's write that
    failed over its member's end left the member cut short (no reader took
    it) until 2026-12-07."""
    # nearly full: leave 64 KiB (a .gz trace fills it at ~10 bytes an event)
    with open(small_fs / "filler", "wb") as f:
        f.write(b"x" * (192 * 1024))
    trace = small_fs / name
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "2", "20000", "100"],
                traced_env={"GPUTRACE_OUTPUT": str(trace), "GPUTRACE_FLUSH_MS": "20"})
    assert r.traced.returncode == 0
    lines = gputrace_lines(r.traced.stderr)
    assert len(lines) == 1 and str(trace) in lines[0] and "No space" in lines[0], lines
    t = valid_trace(trace)
    # the first checkpoint (the calls before the pause) made it
    assert 102 <= t["gputrace"]["events_recorded"] < printed(r.traced.stdout)
    # and its footer says why the trace ends there, which a reader repeats
    assert t["gputrace"]["complete"] is False
    if name.endswith(".gz") and t["gputrace"]["end"] is None:
        # a .gz's end that says why is some 20 bytes longer than the one it replaces:
        # where the file's last page has no room for them, the end stays
        assert trace.stat().st_size % 4096 == 0 or trace.stat().st_size % 4096 > 4096 - 256
        return
    assert t["gputrace"]["end"] == "write failed: No space left on device"
    if name.endswith(".gz"):
        # one gzip member, nothing after it (DecompressionStream reads one)
        z = zlib.decompressobj(31)
        z.decompress(trace.read_bytes())
        assert z.eof and not z.unused_data
    s = subprocess.run([str(GPUTRACE), "summary", str(trace)],
                       env=gputrace_env(), capture_output=True, text=True, timeout=60)
    assert s.returncode == 0, s.stderr
    assert ("  incomplete: 1 trace not closed (1 stopped at a failed write: No space left on "
            "device): the last interval may be missing") in s.stdout.splitlines(), s.stdout


def test_a_full_disk_at_the_run_s_compressed_trace_is_said_with_its_reason(tmp_path, small_fs):
    """gputrace run -o OUT.json.gz: the process's part was written plain, and then the
    disk filled up (CMD filled it) before the run compressed the part into OUT. The run
    keeps the part and says why OUT is not there: its line said no reason until
    2026-12-07 ("could not make OUT; the traces of the run are in ...")."""
    out = small_fs / "t.json.gz"
    fill = f"dd if=/dev/zero of={small_fs}/filler bs=4k 2>/dev/null; true"
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o", str(out), "--", "sh",
                        "-c", f"{prog('fault_threads')} hammer 1 100 && {fill}"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env=gputrace_env(sim_env()))
    assert r.returncode == 0, r.stderr
    parts = small_fs / "t.json.gz.parts"
    assert gputrace_lines(r.stderr) == [
        f"gputrace: could not make {out}: No space left on device; the traces of the run are "
        f"in {parts} (gputrace merge -o {out} {parts}/*.json)"], r.stderr
    assert not out.exists()
    [part] = parts.iterdir()
    assert valid_trace(part)["gputrace"]["complete"] is True


def test_a_full_disk_before_the_first_checkpoint_is_said_under_gputrace_run(tmp_path, small_fs):
    """The disk is full before the process's first checkpoint, taken while it still runs
    (GPUTRACE_FLUSH_MS=20): its one line says why, and the run counts it as a process that
    could not write its trace, not as one killed before writing it."""
    with open(small_fs / "filler", "wb") as f:
        f.write(b"x" * (252 * 1024))
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary", "-o",
                        str(small_fs / "t.json"), "--", prog("fault_threads"), "hammer", "2",
                        "20000", "100"], cwd=tmp_path, capture_output=True, timeout=120,
                       env=gputrace_env(sim_env({"GPUTRACE_FLUSH_MS": "20"})))
    assert r.returncode == 0, r.stderr
    lines = gputrace_lines(r.stderr)
    assert len(lines) == 2, lines
    assert lines[0].startswith("gputrace: cannot write the trace to ") and \
        lines[0].endswith(": No space left on device; tracing stops, the program goes on"), lines
    assert lines[1] == ("gputrace: 1 process of the run recorded GPU calls but could not write "
                        "its trace (the reason is above): no trace written"), lines


def test_file_size_limit(tmp_path):
    """ulimit -f: a write past it would raise SIGXFSZ, killing the program;
    ours must fail quietly instead."""
    import resource

    if SANITIZE == "thread":
        # ThreadSanitizer's runtime writes /tmp/tsan.rodata.PID at start and maps
        # it as the shadow of read-only segments; the limit cuts that file short
        # and the first instrumented read of our constants is a SIGBUS (gdb: in
        # our constructor's first read of a string; a plain TSan program reads
        # none past the cut)
        pytest.skip("ThreadSanitizer's own start-up does not survive ulimit -f 64")

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
    r = compare(tmp_path, [prog("fault_threads"), "hammer", "2", "20000", "100"], preexec_fn=limit,
                traced_env={"GPUTRACE_FLUSH_MS": "20"})
    assert r.traced.returncode == 0
    lines = gputrace_lines(r.traced.stderr)
    assert len(lines) == 1 and "trace.json" in lines[0], lines
    assert valid_trace(r.trace_path)["gputrace"]["events_recorded"] >= 102


def test_file_size_limit_zero(tmp_path):
    """ulimit -f 0 (a sandbox's "this program writes no files"): the program runs as
    untraced, the trace cannot be written, one line says so. gputrace's announcement to
    `gputrace capture`, written on the program's thread at start, raised SIGXFSZ there:
    the program died by it before main (untraced it exits 0)."""
    if SANITIZE == "thread":
        pytest.skip("ThreadSanitizer's own start-up does not survive ulimit -f (above)")

    def limit():
        default_signals()
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    # a program that writes no files of its own (fault_threads writes its notes)
    trace = tmp_path / "trace.json"
    plain, traced = (subprocess.run([str(APPS / "ze_basic")], env=clean_env(sim_env(extra)),
                                    capture_output=True, timeout=60, cwd=tmp_path,
                                    preexec_fn=limit)
                     for extra in ({}, {"LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": str(trace),
                                        "GPUTRACE_SUMMARY": "0"}))
    assert plain.returncode == 0, plain
    assert traced.returncode == 0, traced
    assert traced.stdout == plain.stdout
    assert gputrace_lines(traced.stderr) == [
        f"gputrace: cannot write the trace to '{trace}': File too large; tracing stops, the "
        "program goes on"]
    assert not trace.exists()


def test_file_size_limit_zero_under_gputrace_run(tmp_path):
    """ulimit -f 0 under gputrace run: the process's lines of the run's list (its state
    folder's `traces`, appended on the program's thread) raised SIGXFSZ: the program died
    by it, and gputrace run with it (exit 153), where untraced it exits 0."""
    if SANITIZE == "thread":
        pytest.skip("ThreadSanitizer's own start-up does not survive ulimit -f (above)")

    def limit():
        default_signals()
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    app = str(APPS / "ze_basic")
    plain = subprocess.run([app], env=clean_env(sim_env()), capture_output=True, timeout=60,
                           cwd=tmp_path, preexec_fn=limit)
    r = subprocess.run([str(GPUTRACE), "run", "-o", "t.json", "--", app], cwd=tmp_path,
                       capture_output=True, timeout=120, env=gputrace_env(sim_env()),
                       preexec_fn=limit)
    assert (plain.returncode, r.returncode) == (0, 0), r.stderr
    assert r.stdout == plain.stdout
    lines = gputrace_lines(r.stderr)
    assert lines[0].startswith("gputrace: cannot write the trace to ") and \
        lines[0].endswith(": File too large; tracing stops, the program goes on"), lines
    # the run heard nothing of its process: not "no process recorded anything"
    assert lines[1:] == ["gputrace: no trace written: under the file size limit (ulimit -f: 0 "
                         "bytes) no process of the run can write its trace, nor list it for "
                         "the run"], lines


def test_a_write_that_fails_under_gputrace_run_is_said(tmp_path):
    """ulimit -f under gputrace run: the process's trace stops at its last checkpoint,
    whose footer says why (a trace not closed: a write failed); the run says why too, and
    that what came after is neither in the trace nor counted as lost."""
    if SANITIZE == "thread":
        pytest.skip("ThreadSanitizer's own start-up does not survive ulimit -f (above)")
    cmd = f"ulimit -f 128; exec {prog('fault_threads')} hammer 2 20000 100"
    r = subprocess.run([str(GPUTRACE), "run", "-o", "t.json", "--",
                        "sh", "-c", cmd], cwd=tmp_path, capture_output=True, timeout=120,
                       env=gputrace_env(sim_env({"GPUTRACE_FLUSH_MS": "20"})))
    assert r.returncode == 0, r.stderr
    lines = gputrace_lines(r.stderr)
    assert lines[0].startswith("gputrace: cannot write the trace to ") and \
        lines[0].endswith(": File too large; tracing stops, the program goes on"), lines
    assert lines[-1] == ("gputrace: 1 trace stops at its last checkpoint: a write failed (File "
                         "too large); what its process recorded after it is not in the trace, "
                         "nor counted as lost"), lines
    g = valid_trace(tmp_path / "t.json")["gputrace"]
    assert g["complete"] is False and g["events_recorded"] >= 102
    # the footer's own page takes the reason, within the limit
    assert g["end"] == "write failed: File too large"
    assert ("  incomplete: 1 trace not closed (1 stopped at a failed write: File too large): "
            "the last interval may be missing") in r.stderr.decode().splitlines(), r.stderr


def test_a_fifo_nobody_reads_is_no_trace_written(tmp_path):
    """GPUTRACE_OUTPUT a FIFO no reader ever opens: the writer's open blocks; the exit
    waits for its last drain as for a stuck one, then says that no trace was written.
    It said that "the trace keeps its last checkpoint" (there was none, nor any file)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    env = sim_env({"LD_PRELOAD": PRELOAD, "GPUTRACE_OUTPUT": str(fifo),
                   "GPUTRACE_SUMMARY": "0"})
    r = subprocess.run([str(APPS / "ze_basic")], env=clean_env(env), capture_output=True,
                       timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = gputrace_lines(r.stderr)
    assert len(lines) == 1 and lines[0].startswith("gputrace: the last drain (exit) waited ") \
        and lines[0].endswith(f" ms for the trace's file to open ({fifo}: a FIFO nobody reads "
                              "blocks its open): no trace written"), lines


def test_slow_output_never_blocks_the_program(tmp_path):
    """The trace goes to a pipe that nobody reads while the program runs:
    its calls are never slowed by it (the rings fill and count their
    losses); then the reader drains it and gets a complete trace."""
    # the reader opens the pipe but reads nothing until the program's loop is done
    p, out, err, n, got = run_with_slow_reader(
        tmp_path, {"GPUTRACE_FLUSH_MS": "10", "GPUTRACE_BUFFER_KB": "256", "GPUTRACE_OVERFLOW_MB": "0"},
        [prog("fault_threads"), "slow", "300000"], pause_s=0.002)
    assert p.returncode == 0, err
    # 300k calls: microseconds each untraced; a call blocked on the pipe
    # would take as long as the reader sleeps (until the loop is over: 60 s,
    # as the loop never ends); under 0.5 s, as a loaded machine held one thread
    # off its CPU for more than 50 ms
    assert n["worst_ns"] < 500_000_000, n
    assert n["loop_ns"] < 10_000_000_000, n
    import json
    t = json.loads(got)
    meta = t["gputrace"]
    assert meta["complete"] is True
    assert meta["events_recorded"] + meta["events_lost"] == printed(out)
    assert len([e for e in t["traceEvents"] if e.get("cat") == "ze_api"]) == \
        meta["events_recorded"]
