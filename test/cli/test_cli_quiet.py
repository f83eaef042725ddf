"""The library in processes of a job (plain LD_PRELOAD, no gputrace run): one
that makes no traced call gets no drain thread, no file, no summary; one
that records keeps its descriptor table as it was (the trace's descriptor
moves up only inside the first 64 slots: growing the table of a threaded
process waits for an RCU grace period); GPUTRACE_SUMMARY_JSON is a template
('%p'); messages name the expanded path and the reason. And the summary's
wording: 'see --json' in gputrace summary, what to do about lost events."""
import json
import os
import pathlib
import platform
import re
import shutil
import struct
import subprocess
import time

import pytest

from cli_helpers import (CLI, LIB, PLUGIN_DIR, SCRIPT, SPAWN, TOOL, gputrace, gt_env, load_exact,
                         trace_files)
from conftest import BUILD, PRELOAD, SANITIZE, clean_env, gputrace_lines, need

PAGE = 4096


def traced_env(extra=None, plugin=None):
    e = clean_env({"LD_PRELOAD": PRELOAD})
    if plugin:
        need(PLUGIN_DIR / "libclitest.so")
        e.update({"GPUTRACE_PLUGIN_PATH": str(PLUGIN_DIR), "GPUTRACE_PLUGIN_CONFIG":
                  f"clitest:{plugin}"})
    e.update(extra or {})
    return e


def status_of(text, key):
    return [l.split()[1] for l in text.splitlines() if l.startswith(key + ":")][0]


@pytest.mark.sanitize
def test_process_that_records_nothing_leaves_nothing(tmp_path):
    # the default output name, relative: it would land here
    p = subprocess.run(["sh", "-c", "ls / >/dev/null; cat /proc/$$/status; sh -c true"],
                       cwd=tmp_path, env=traced_env(), capture_output=True, timeout=60)
    assert p.returncode == 0
    assert list(tmp_path.iterdir()) == [], "no file for a process that recorded nothing"
    assert p.stderr == b"", "no summary, no message"
    # and no drain thread: it starts with the first event
    assert status_of(p.stdout.decode(), "Threads") == "1"


def test_process_that_records_nothing_reads_no_clock_setup(tmp_path):
    """Nor does its exit start the TSC clock line it never used: reading sysfs's clock
    source (an open, a read, a close) and CPUID is work for a process that records;
    the end of one that records nothing reads the raw clock once."""
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat,open", "/bin/true"],
                       cwd=tmp_path, env=traced_env(), capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert b"current_clocksource" not in p.stderr, p.stderr.decode()


def bound_by_us(cmd, names):
    """{pid: the names among these that the loader bound for our library in it}
    (LD_DEBUG=bindings: lazily, at the first call)."""
    p = subprocess.run(cmd, env=traced_env({"LD_DEBUG": "bindings"}), capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    out = {}
    for line in p.stderr.decode(errors="replace").splitlines():
        if "binding file" not in line or PRELOAD.split()[-1] not in line.split(" to ")[0]:
            continue
        pid = int(line.split(":", 1)[0])
        name = line.rsplit("`", 1)[-1].split("'")[0]
        out.setdefault(pid, set())
        if name in names:
            out[pid].add(name)
    return out


@pytest.mark.skipif(SANITIZE == "thread", reason="ThreadSanitizer's runtime registers fork "
                    "handlers of its own at start, which puts ours in first")
def test_process_that_records_nothing_registers_no_handler(tmp_path):
    """Our fork and quick_exit handlers go in at their first need, before anyone else's
    (inject/lifecycle.c): registered at start, they touched two pages of libc in every
    process (29-46 us on a VM). A process that never forks nor registers one calls
    neither libc entry; a shell that forks does, once, and its children inherit ours."""
    names = {"__register_atfork", "__cxa_at_quick_exit"}
    true = BUILD / "test" / "bench" / "bench_true"
    need(true)
    by_pid = bound_by_us([true], names)
    assert len(by_pid) == 1 and by_pid.popitem()[1] == set()
    # bash forks for the first (the child execs it), execs the last itself
    by_pid = bound_by_us(["bash", "-c", f"{true}; {true}"], names)
    assert sorted(map(sorted, by_pid.values())) == [[], ["__register_atfork"]], by_pid


def elf_sections(path):
    """{name: (address, size)} of an ELF64 file's sections, from its section headers."""
    data = pathlib.Path(path).read_bytes()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    return {data[names_at + h[0]:data.index(b"\0", names_at + h[0])].decode(): (h[3], h[5])
            for h in headers}


def probed_reads(tmp_path, cmd, extra, start, end, writable=False):
    """The code that touches the library's pages from start to end (offsets)
    when cmd runs, under the probe (test/cli/rodata_probe.c): {code offset:
    first data offset it touched}."""
    probe = CLI / "librodataprobe.so"
    need(probe)
    env = traced_env(extra)
    env.pop("KINETO_PLUGIN_LIB_DIR_PATH", None)  # plug-ins to look for: work that reads it
    env.update({"LD_PRELOAD": f"{PRELOAD} {probe}", "GT_PROBE_FROM": hex(start),
                "GT_PROBE_TO": hex(end)})
    if writable:
        env["GT_PROBE_WRITABLE"] = "1"
    p = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stderr.decode().splitlines()
    assert any(l.startswith("probe: armed") for l in lines), lines
    reads = {}
    for l in lines:
        if l.startswith("probe-read"):
            data, code = l.split()[1:3]
            reads.setdefault(code, data)
    return reads


def rodata_reads(tmp_path, cmd, extra):
    """The code that reads the library's .rodata (to .gcc_except_table) when cmd runs."""
    sections = elf_sections(LIB)
    return probed_reads(tmp_path, cmd, extra, sections[".rodata"][0],
                        sections[".gcc_except_table"][0])


@pytest.mark.skipif(SANITIZE != "", reason="the probe single-steps the library: plain builds")
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the probe is x86-64's")
def test_process_that_records_nothing_reads_no_rodata(tmp_path):
    """Start-up and exit of a process that records nothing read their constants
    from beside the start-up code (GT_STARTUP_CONST): .rodata is a stretch of
    pages of its own, a page fault or two (~20 us each on a VM) in every leaf
    process of a traced job. Plain, and with what gputrace run puts in a
    child's environment; a program of ours, which calls nothing the library
    wraps (a system's /bin/true may: a Rust runtime installs signal handlers);
    then shells, whose sigaction() calls go through our wrapper and whose fork
    children exec through ours (a fork child's first touch of a page faults
    again: file pages are not copied at fork). A reported read names its code:
    addr2line -f -i -e libgputrace.so CODE_OFFSET."""
    run_env = {"GPUTRACE_OUTPUT": str(tmp_path / "parts" / "%e-%p.json"),
               "GPUTRACE_RUN_STATE": str(tmp_path / "state"), "GPUTRACE_INJECTED": "1",
               "GPUTRACE_LIB": str(LIB), "GPUTRACE_TOOL": str(TOOL)}
    true = BUILD / "test" / "bench" / "bench_true"
    need(true)
    assert rodata_reads(tmp_path, [true], {}) == {}
    assert rodata_reads(tmp_path, [true], run_env) == {}
    for shell in ("sh", "bash"):
        assert rodata_reads(tmp_path, [shell, "-c", f"{true}; {true}"], run_env) == {}, shell
    # the probe sees reads: a bad value's message is formatted from .rodata
    assert rodata_reads(tmp_path, [true], {"GPUTRACE_FLUSH_MS": "soon"})


@pytest.mark.skipif(SANITIZE != "", reason="the probe single-steps the library: plain builds")
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the probe is x86-64's")
def test_process_that_records_nothing_writes_one_page_of_its_data(tmp_path):
    """The state every process writes at start and reads at exit (its identity
    and start folder, the configuration, the capture's phase: GT_STARTUP_BSS) is
    on the page the loader writes anyway, with the GOT's end, .data and the zeroed
    start of .bss (inject/startup.ld): no page of .bss past it is touched, each
    another page fault (~15 us on a VM) in every leaf process of a traced job.
    Before, the configuration and the identity were two pages more (start-up and
    exit of /bin/true cost ~30 us more). With the paths gputrace run gives a
    child too (copied after the configuration, on that page while they fit).
    Not probed: .lbss, the copy of the environment a process makes to set the
    injection variables (injection.c), which its children inherit set. (A library
    built before this change fails the first check: its .data ended a page on.)
    And the data the loader relocates, then makes read-only (tables of pointers, the
    GOT), is one page, not two (names are text, not pointers: README "Overhead")."""
    run_env = {"GPUTRACE_OUTPUT": str(tmp_path / "parts" / "%e-%p.json"),
               "GPUTRACE_RUN_STATE": str(tmp_path / "state"), "GPUTRACE_INJECTED": "1",
               "GPUTRACE_LIB": str(LIB), "GPUTRACE_TOOL": str(TOOL)}
    true = BUILD / "test" / "bench" / "bench_true"
    need(true)
    sections = elf_sections(LIB)
    got_end = sum(sections[".got.plt"])
    hot = sections[".bss.gt_startup"][0]  # right after the file's data
    assert (got_end - 1) // PAGE == hot // PAGE, "the GOT's end and the start-up state: one page"
    start = (hot + PAGE - 1) // PAGE * PAGE  # the first page the loader does not write
    relro = [sections[s] for s in (".tdata", ".init_array", ".fini_array", ".data.rel.ro",
                                   ".dynamic", ".got") if s in sections]
    first, last = min(a for a, n in relro), max(a + n for a, n in relro) - 1
    assert first // PAGE == last // PAGE, (hex(first), hex(last))
    end = sections[".lbss"][0]
    for extra in ({}, run_env):
        assert probed_reads(tmp_path, [true], extra, start, end, writable=True) == {}, extra
    # a shell that runs them (dash: it finds exec through our wrappers; bash's
    # fork() runs our fork handlers, which lock and reset more, not yet here)
    cmd = ["sh", "-c", f"{true}; {true}"]
    assert probed_reads(tmp_path, cmd, run_env, start, end, writable=True) == {}
    # the probe sees writes: a process that records does write there
    assert probed_reads(tmp_path, [true], {"GPUTRACE_FLUSH_MS": "soon"}, start, end,
                        writable=True)


def test_process_that_records_has_its_thread_and_file(tmp_path):
    p = subprocess.run(["sh", "-c", "cat /proc/self/status"], cwd=tmp_path,
                       env=traced_env({"GPUTRACE_SUMMARY": "0"}, plugin="3,exe=cat"),
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    # the program's, the drain's and the one plug-in calls are made on (its start is
    # bounded, as the program starts; and ThreadSanitizer's runtime's own)
    assert status_of(p.stdout.decode(), "Threads") == ("4" if SANITIZE == "thread" else "3")
    (f,) = trace_files(tmp_path)
    assert len([e for e in load_exact(f)["traceEvents"] if e.get("name") == "cli_kernel"]) == 3


def lingering(tmp_path, env, wait_for):
    """spawn linger, started through a small shell (a fresh descriptor table,
    whatever the test runner holds open); its /proc status and descriptors
    ({fd: (dev, inode)}) once wait_for exists."""
    p = subprocess.Popen(["/bin/sh", "-c", 'exec "$@"', "sh", SPAWN, "linger", "3000",
                          tmp_path / "ready"], cwd=tmp_path, env=env)
    try:
        end = time.monotonic() + 20
        while not wait_for.exists() and time.monotonic() < end:
            assert p.poll() is None
            time.sleep(0.005)
        assert wait_for.exists()
        status = open(f"/proc/{p.pid}/status").read()
        fds = {}
        for fd in os.listdir(f"/proc/{p.pid}/fd"):
            st = os.stat(f"/proc/{p.pid}/fd/{fd}")
            fds[int(fd)] = (st.st_dev, st.st_ino)
    finally:
        p.kill()
        p.wait()
    return status, fds


def test_descriptor_table_not_grown(tmp_path):
    need(SPAWN)
    out = tmp_path / "t.json"
    plain, _ = lingering(tmp_path, clean_env(), tmp_path / "ready")
    (tmp_path / "ready").unlink()
    # the trace is named once its first checkpoint is on disk
    status, fds = lingering(tmp_path, traced_env({"GPUTRACE_OUTPUT": str(out),
                                                  "GPUTRACE_SUMMARY": "0"},
                                                 plugin="3,exe=spawn"), out)
    assert int(status_of(status, "Threads")) >= 2
    # the table the process started with (64 slots, or what it inherited),
    # not grown to hold a descriptor at 512
    assert int(status_of(plain, "FDSize")) <= 512
    assert status_of(status, "FDSize") == status_of(plain, "FDSize")
    ours = [fd for fd, inode in fds.items() if inode == (out.stat().st_dev, out.stat().st_ino)]
    assert len(ours) == 1 and 3 <= ours[0] < 64, fds


def test_summary_json_template_per_process(tmp_path):
    need(SPAWN)
    p = subprocess.run(["sh", "-c", f"{SPAWN} leaf 0; {SPAWN} leaf 1"], cwd=tmp_path,
                       env=traced_env({"GPUTRACE_SUMMARY": "0", "GPUTRACE_SUMMARY_JSON":
                                       "s-%e-%p.json",
                                       "GPUTRACE_OUTPUT": str(tmp_path / "t-%p.json")},
                                      plugin="3,exe=spawn"), capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    traces = trace_files(tmp_path)
    summaries = sorted(tmp_path.glob("s-*.json"))
    pids = sorted(int(load_exact(t)["gputrace"]["pid"]) for t in traces if t.name[0] == "t")
    # one summary per process that recorded (the shell wrote none), each its own
    assert [s.name for s in summaries] == [f"s-spawn-{pid}.json" for pid in pids]
    for pid, s in zip(pids, summaries):
        j = json.loads(s.read_text())
        assert j["trace"]["path"] == str(tmp_path / f"t-{pid}.json")
        assert [q["pid"] for q in j["processes"]] == [pid]
        assert j["totals"]["kernels"]["count"] == 3


def test_message_names_the_expanded_path_and_reason(tmp_path):
    p = subprocess.run(["sh", "-c", "echo $$"], cwd=tmp_path,
                       env=traced_env({"GPUTRACE_OUTPUT": str(tmp_path / "missing" / "t-%p.json")},
                                      plugin=3), capture_output=True, timeout=60)
    assert p.returncode == 0
    pid = int(p.stdout)
    # what was recorded goes to the default name, in the folder it started in
    exe = os.path.basename(os.path.realpath(shutil.which("sh")))
    assert gputrace_lines(p.stderr)[0] == (
        f"gputrace: cannot write the trace to '{tmp_path}/missing/t-{pid}.json': No such file or "
        f"directory; writing it to {tmp_path}/gputrace-{exe}-{pid}.json")
    assert os.listdir(tmp_path) == [f"gputrace-{exe}-{pid}.json"]


def test_summary_command_points_at_its_own_option(tmp_path):
    events = [{"ph": "X", "cat": "ze_api", "name": f"zeCall{i:02d}", "pid": 1, "tid": 1,
               "ts": i, "dur": 0.5} for i in range(12)]
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": events}))
    p = gputrace(["summary", tmp_path / "t.json"], tmp_path)
    assert p.returncode == 0, p.stderr
    text = p.stdout.decode()
    assert "API calls: 12 distinct, 12 calls, 6000 ns total" in text
    assert "    ... 2 more (see --json)\n" in text and "--summary-json" not in text


def test_lost_events_say_what_to_do_also_without_summary(tmp_path):
    need(SPAWN)
    (tmp_path / "tmp").mkdir()
    env = gt_env({"GPUTRACE_PLUGIN_CONFIG": "clitest:4000", "TMPDIR": str(tmp_path / "tmp")})
    p = gputrace(["run", "-o", "t.json", "--no-summary", "--buffer-kb", "4", "--overflow-mb", "0", "--plugin-path",
                  PLUGIN_DIR, "--", SPAWN, "leaf", "0"], tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    lost = int(load_exact(tmp_path / "t.json")["gputrace"]["events_lost"])
    assert lost > 0
    # one line, the loss and the remedy, though the summary is off
    assert gputrace_lines(p.stderr) == [
        f"gputrace: {lost} events lost (ring_full {lost}) in {tmp_path}/t.json; a thread "
        "recorded faster than gputrace wrote: rerun with --buffer-kb 16 (now 4 KiB per thread), "
        "or --lossless to make it wait"]
    p = gputrace(["run", "-o", "u.json", "--buffer-kb", "4", "--overflow-mb", "0", "--plugin-path", PLUGIN_DIR, "--",
                  SPAWN, "leaf", "0"], tmp_path, env=env)
    assert "    a thread recorded faster than gputrace wrote: rerun with --buffer-kb 16 " \
        "(now 4 KiB per thread), or --lossless to make it wait\n" in p.stderr.decode()


def test_lost_events_said_under_summary_0(tmp_path):
    """Plain LD_PRELOAD with GPUTRACE_SUMMARY=0 (what gputrace run --no-summary
    sets): one line all the same when events were lost, as the run's (it was
    silent), with a summary JSON or without; nothing when none were."""
    need(SPAWN)
    for n, extra in enumerate(({}, {"GPUTRACE_SUMMARY_JSON": str(tmp_path / "s.json")})):
        trace = tmp_path / f"t{n}.json"
        env = traced_env({"GPUTRACE_OUTPUT": str(trace), "GPUTRACE_SUMMARY": "0",
                          "GPUTRACE_BUFFER_KB": "4", "GPUTRACE_OVERFLOW_MB": "0", **extra},
                         plugin="4000")
        p = subprocess.run([SPAWN, "leaf", "0"], cwd=tmp_path, env=env, capture_output=True,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        lost = int(load_exact(trace)["gputrace"]["events_lost"])
        assert lost > 0
        assert gputrace_lines(p.stderr) == [
            f"gputrace: {lost} events lost (ring_full {lost}) in {trace}; a thread recorded "
            "faster than gputrace wrote: rerun with GPUTRACE_BUFFER_KB=16 (now 4 KiB per "
            "thread), or GPUTRACE_LOSSLESS=1 to make it wait"], extra
    trace = tmp_path / "t.json"
    env = traced_env({"GPUTRACE_OUTPUT": str(trace), "GPUTRACE_SUMMARY": "0"}, plugin="4000")
    p = subprocess.run([SPAWN, "leaf", "0"], cwd=tmp_path, env=env, capture_output=True,
                       timeout=60)
    assert p.returncode == 0 and load_exact(trace)["gputrace"]["events_lost"] == 0
    assert gputrace_lines(p.stderr) == []


def stderr_writes(log):
    """(bytes written, the start of the string as strace shows it) of each write to
    fd 2 in an `strace -f -e trace=write` log."""
    out = []
    for line in pathlib.Path(log).read_text().splitlines():
        m = re.search(r'write\(2, "(.*?)"(?:\.\.\.)?, \d+\) = (\d+)$', line)
        if m:
            out.append((int(m.group(2)), m.group(1)))
    return out


@pytest.mark.skipif(not shutil.which("strace"), reason="strace not installed (make deps)")
def test_summary_and_lost_line_are_one_write_each(tmp_path):
    """stderr is unbuffered: the summary block (a process's and gputrace run's) and the
    lost events' line each go out in one write, so what the program's other processes
    and threads write as they end cannot land inside them (before: a write per fprintf,
    and one per character of the trace's path)."""
    need(SPAWN)
    log = tmp_path / "strace.log"

    def traced(cmd, env):
        # strace itself is not preloaded: the program gets LD_PRELOAD through -E
        preload = env.pop("LD_PRELOAD", None)
        return subprocess.run(["strace", "-f", "-qq", "-s", "64", "-e", "trace=write",
                               "-e", "signal=none", "-o", str(log)] +
                              (["-E", f"LD_PRELOAD={preload}"] if preload else []) +
                              ["--"] + [str(c) for c in cmd],
                              cwd=tmp_path, env=env, capture_output=True, timeout=120)

    def one_write(p, marker):
        assert p.returncode == 0, p.stderr
        text = p.stderr.decode()
        start = text.index(marker)
        end = text.index("\n", start) + 1
        while text.startswith("  ", end):  # the block's indented lines
            end = text.index("\n", end) + 1
        writes = [n for n, s in stderr_writes(log) if s.startswith(marker[:32])]
        assert writes == [len(text[start:end].encode())], (writes, text[start:end])
        return text[start:end]

    trace = tmp_path / "t.json"
    p = traced([SPAWN, "leaf", "0"], traced_env({"GPUTRACE_OUTPUT": str(trace),
                                                 "GPUTRACE_SUMMARY": "1"}, plugin="4000"))
    block = one_write(p, f"gputrace summary: {trace}\n")
    assert "\n  lost events: 0\n" in block and block.count("\n") > 5, block
    p = traced([SPAWN, "leaf", "0"],
               traced_env({"GPUTRACE_OUTPUT": str(tmp_path / "l.json"), "GPUTRACE_SUMMARY": "0",
                           "GPUTRACE_BUFFER_KB": "4", "GPUTRACE_OVERFLOW_MB": "0"},
                          plugin="4000"))
    line = one_write(p, "gputrace: ")
    assert " events lost (ring_full " in line and line.count("\n") == 1, line
    p = traced([SCRIPT, "run", "-o", "r.json", "--plugin-path", PLUGIN_DIR, "--", SPAWN, "leaf",
                "0"], gt_env({"GPUTRACE_PLUGIN_CONFIG": "clitest:4000"}))
    block = one_write(p, f"gputrace summary: {tmp_path}/r.json\n")
    assert "\n  lost events: 0\n" in block, block


def test_summary_json_never_replaces_a_trace(tmp_path):
    """GPUTRACE_SUMMARY_JSON naming GPUTRACE_OUTPUT's file wrote the summary
    over the process's own trace at exit (and, the next process's trace going
    to t.1.json, over the one before): one line, each trace kept."""
    env = traced_env({"GPUTRACE_SUMMARY": "0", "GPUTRACE_OUTPUT": "t.json",
                      "GPUTRACE_SUMMARY_JSON": "t.json"}, plugin=3)
    for name in ("t.json", "t.1.json"):
        p = subprocess.run(["sh", "-c", "true"], cwd=tmp_path, env=env, capture_output=True,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        assert gputrace_lines(p.stderr) == [
            f"gputrace: GPUTRACE_SUMMARY_JSON: cannot write the summary to '{tmp_path}/t.json': "
            "it holds a trace, which is never written over"]
        assert len([e for e in load_exact(tmp_path / name)["traceEvents"]
                    if e.get("name") == "cli_kernel"]) == 3
    assert sorted(os.listdir(tmp_path)) == ["t.1.json", "t.json"]
