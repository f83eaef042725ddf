"""Ways out of a process: each leaves a complete trace with every call, and
the program's exit status is its own."""
import json
import os
import subprocess
import threading
import time

import pytest

from conftest import SANITIZE
from faultkit import check_bounded, check_exact, compare, printed, prog, run_env

# A program that closes or dup2s over our descriptor while the drain writes to it: the
# drain finds it gone (writer/output.c, check_fd), but ThreadSanitizer reports the race.
TSAN_OUR_FD = pytest.mark.skipif(SANITIZE == "thread", reason=(
    "ThreadSanitizer reports the program's close() or dup2() of our descriptor against the "
    "drain's write to it, which is the case itself"))


@pytest.mark.sanitize
@pytest.mark.parametrize("mode", ["quiet", "hot"])
@pytest.mark.parametrize("lossless", [False, True])
def test_exit_from_worker(tmp_path, mode, lossless):
    """lossless: the other threads call into small rings that wait for the
    drain (--lossless): nothing waits for a drain that is finishing."""
    r = compare(tmp_path, [prog("fault_exit"), "worker-exit", mode],
                env={"GPUTRACE_FLUSH_MS": "1000"},
                traced_env={"GPUTRACE_LOSSLESS": "1", "GPUTRACE_BUFFER_KB": "4"} if lossless
                else None)
    assert r.traced.returncode == 3
    meta = r.counted["gputrace"]
    assert meta["complete"] is True and meta["end"] == "exit"
    if mode == "hot":
        check_bounded(r.counted, printed(r.traced.stdout), r.shm)
    else:
        check_exact(r.counted, printed(r.traced.stdout))


@pytest.mark.parametrize("mode", ["quiet", "hot"])
def test_return_from_main_with_threads_running(tmp_path, mode):
    r = compare(tmp_path, [prog("fault_exit"), "return", mode], env={"GPUTRACE_FLUSH_MS": "1000"})
    assert r.traced.returncode == 0
    assert r.counted["gputrace"]["complete"] is True
    if mode == "hot":
        check_bounded(r.counted, printed(r.traced.stdout), r.shm)
    else:
        check_exact(r.counted, printed(r.traced.stdout))


@pytest.mark.parametrize("how", ["_exit", "_Exit"])
def test__exit(tmp_path, how):
    r = compare(tmp_path, [prog("fault_exit"), how])
    assert r.traced.returncode == 5
    assert r.counted["gputrace"]["end"] == "_exit"
    check_exact(r.counted, printed(r.traced.stdout))


def test_quick_exit_runs_its_handlers_traced(tmp_path):
    r = compare(tmp_path, [prog("fault_exit"), "quick_exit"])
    assert r.traced.returncode == 6
    assert printed(r.traced.stdout, "at_quick_exit") == 25
    assert r.counted["gputrace"]["complete"] is True
    check_exact(r.counted, printed(r.traced.stdout))


def test_exit_inside_atexit_handler(tmp_path):
    r = compare(tmp_path, [prog("fault_exit"), "atexit-exit"])
    assert r.traced.returncode == 4
    assert printed(r.traced.stdout, "atexit") == 30
    assert printed(r.traced.stdout, "atexit-outer") == 20
    assert r.counted["gputrace"]["complete"] is True
    check_exact(r.counted, printed(r.traced.stdout))


@pytest.mark.parametrize("when", ["close-start", pytest.param("close-mid", marks=TSAN_OUR_FD)])
def test_program_closes_every_descriptor(tmp_path, when):
    r = compare(tmp_path, [prog("fault_exit"), when], env={"GPUTRACE_FLUSH_MS": "50"})
    assert r.traced.returncode == 0
    assert r.counted["gputrace"]["complete"] is True
    check_exact(r.counted, printed(r.traced.stdout))


# Not under TSan: the program closing our descriptor under the drain
# thread is the race this case is about.
@pytest.mark.sanitize
def test_program_closes_descriptors_at_start(tmp_path):
    test_program_closes_every_descriptor(tmp_path, "close-start")


@TSAN_OUR_FD
def test_program_dup2s_over_our_descriptor(tmp_path):
    r = compare(tmp_path, [prog("fault_exit"), "dup2"], env={"GPUTRACE_FLUSH_MS": "50"})
    assert r.traced.returncode == 0
    assert b"own file intact" in r.traced.stdout
    assert r.counted["gputrace"]["complete"] is True
    check_exact(r.counted, printed(r.traced.stdout))


@TSAN_OUR_FD
def test_program_sets_o_append_on_our_descriptor(tmp_path):
    """O_APPEND (and O_NONBLOCK) set on every descriptor, ours too: an O_APPEND pwrite
    goes to the file's end, behind the footer, and the last cycle's compaction cut it
    off: every event after it was missing, the trailer counting none lost."""
    r = compare(tmp_path, [prog("fault_exit"), "fdflags"], env={"GPUTRACE_FLUSH_MS": "50"})
    assert r.traced.returncode == 0
    assert r.counted["gputrace"]["complete"] is True
    check_exact(r.counted, printed(r.traced.stdout))


@TSAN_OUR_FD
def test_program_sets_o_nonblock_on_our_pipe(tmp_path):
    """The trace into a FIFO read slowly, O_NONBLOCK set on our end of it: a write into
    the full pipe failed with EAGAIN, tracing stopped and the trace was cut in the
    middle of an event."""
    fifo = tmp_path / "slow.fifo"
    os.mkfifo(fifo)
    got = bytearray()

    def reader():
        fd = os.open(fifo, os.O_RDONLY)
        while True:
            chunk = os.read(fd, 8192)
            if not chunk:
                break
            got.extend(chunk)
            time.sleep(0.005)
        os.close(fd)
    th = threading.Thread(target=reader)
    th.start()
    e = run_env(tmp_path, "traced", {"GPUTRACE_FLUSH_MS": "50"}, True, fifo)
    p = subprocess.run([str(prog("fault_exit")), "fdflags"], env=e, capture_output=True,
                       cwd=tmp_path, timeout=60)
    th.join(30)
    assert p.returncode == 0, p.stderr
    assert b"gputrace" not in p.stderr, p.stderr
    t = json.loads(bytes(got))
    assert t["gputrace"]["complete"] is True
    check_exact(t, printed(p.stdout))


def test_program_removes_its_trace_file(tmp_path):
    """The trace file unlinked while the process runs (a harness cleaning its folder):
    the writes went on into a file no name reaches, and the summary named a file that
    was not there, without a word. Now one line says so, and no summary names it."""
    r = compare(tmp_path, [prog("fault_exit"), "unlink"],
                env={"GPUTRACE_FLUSH_MS": "50"}, traced_env={"GPUTRACE_SUMMARY": "1"})
    assert r.traced.returncode == 0
    assert not r.trace_path.exists()
    lines = [l for l in r.traced.stderr.decode().splitlines() if l.startswith("gputrace")]
    assert lines == [f"gputrace: the trace file '{r.trace_path}' was removed while the "
                     "process ran: its events are in no file",
                     "gputrace summary: (no trace file)"], lines
