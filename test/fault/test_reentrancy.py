"""Reentrancy: traced calls from a signal handler, a vendor library opened
and closed again and again, a program whose malloc is its own."""
import pytest

from conftest import SANITIZE, run
from faultkit import check_exact, compare, notes, printed, prog


def handler_calls(tmp_path):
    return sum(v for _, k, v in notes(tmp_path / "traced.notes") if k == "handler")


@pytest.mark.sanitize
@pytest.mark.parametrize("action", ["sighandler", "signal-hot"])
def test_traced_calls_from_signal_handler(tmp_path, action):
    """A 1 ms timer's handler calls while main calls: the handler's calls
    that interrupt a traced call cannot be recorded (the thread's ring is
    mid-write), so they are counted lost, never dropped silently."""
    r = compare(tmp_path, [prog("fault_reent"), action, "300000"])
    assert r.traced.returncode == 0
    extra = handler_calls(tmp_path)
    assert extra > 0
    t = r.counted
    check_exact(t, printed(r.traced.stdout) + extra, lost=None)
    meta = t["gputrace"]
    assert meta["events_lost"] == meta["lost_by_reason"].get("reentrant", 0) + \
        meta["lost_by_reason"].get("ring_full", 0)


def test_dlopen_dlclose_vendor_library_repeatedly(tmp_path):
    r = compare(tmp_path, [prog("fault_dlopen"), "30", "200"])
    assert r.traced.returncode == 0
    assert printed(r.traced.stdout) == 30 * 202
    check_exact(r.counted, printed(r.traced.stdout))


@pytest.mark.skipif(SANITIZE == "thread", reason="under ThreadSanitizer a program with its "
                    "own malloc finds no Level Zero driver, untraced too")
def test_program_with_its_own_malloc(tmp_path):
    r = compare(tmp_path, [prog("fault_malloc"), "2000"])
    assert r.traced.returncode == 0
    assert b"allocator served" in r.traced.stdout
    check_exact(r.counted, printed(r.traced.stdout))


def test_library_registering_fork_handlers_while_the_watchdog_registers_ours(tmp_path):
    """A library's constructor registers fork handlers inside dlopen (the loader's lock
    held) just as gputrace's watchdog thread, started by the first traced call, registers
    ours: the program loads it and goes on. (A CI run hung so, in a Level Zero driver
    loaded by zeInit: the watchdog had claimed the registration and waited for the lock
    in dlsym while the constructor waited for the registration.) slow_phdr.so holds the
    watchdog back until the program's dlopen holds the lock."""
    r = run([prog("fault_atfork_dlopen"), prog("atfork_ctor.so")], tmp_path=tmp_path,
            env={"GPUTRACE_WATCHDOG": "1"}, also_preload=[prog("slow_phdr.so")], timeout=30)
    assert r.returncode == 0 and r.stdout == b"loaded (zeInit failed)\n", r.stderr
    assert [e["name"] for e in r.trace["traceEvents"] if e["ph"] == "X"] == ["zeInit"]
