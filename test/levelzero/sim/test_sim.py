"""The simulated Level Zero device, checked without the tracer: the sample programs give
the right bytes, and the raw timestamps obey the contract in test/levelzero/sim/README.md."""
import pathlib
import re
import subprocess
from fractions import Fraction

import pytest

from conftest import APPS, BUILD, SANITIZE, ZE_SIM, need, newer_loader, run, sim_env

PROBE = BUILD / "test" / "levelzero" / "sim" / "sim_probe"
TICK = Fraction("52.083")
OFFSET = 7777777777777
INCLUDE = pathlib.Path("/usr/include/level_zero")

if not (INCLUDE / "ze_api.h").exists():
    pytest.skip("Level Zero headers (libze-dev) not installed: ze_sim is not built",
                allow_module_level=True)


def launch(cmd, env=None):
    for p in (ZE_SIM, cmd[0]):
        need(p)
    r = run(cmd, traced=False, env=sim_env(env))
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r.stdout.decode()


def probe(*args, env=None):
    return launch([PROBE, *map(str, args)], env)


def fields(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


def first(out, prefix):
    return next(fields(l) for l in out.splitlines()
                if l.startswith(prefix + " ") or l.startswith(prefix + "="))


def cmds(out):
    rows = []
    for line in out.splitlines():
        if line.startswith("cmd "):
            f = fields(line)
            rows.append((line.split()[1], int(f["start"]), int(f["end"])))
    return rows


def ticks_of(host_ns, tick=TICK, offset=OFFSET, bits=32):
    return int((host_ns + offset) // tick) & ((1 << bits) - 1)


def to_host(sync, ticks, tick=TICK, bits=32):
    """Device ticks to host ns via a (host, device) pair taken before them."""
    mask = (1 << bits) - 1
    return int(sync["host"]) + ((ticks - int(sync["dev"])) & mask) * tick


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


# ---- the driver as the loader sees it ----

def getter_names():
    names = set()
    for header in ("ze_ddi.h", "zet_ddi.h", "zes_ddi.h"):
        text = (INCLUDE / header).read_text()
        names |= set(re.findall(r"ZE_DLLEXPORT ze_result_t ZE_APICALL\s+(\w+)\(", text))
    return names


def test_exports_exactly_the_table_getters():
    """The 53 getters loader 1.8.12 requires, and the one newer table it fills (spec 1.9)."""
    need(ZE_SIM)
    out = subprocess.run(["nm", "-D", "--defined-only", str(ZE_SIM)], capture_output=True,
                         text=True, check=True).stdout
    exported = {l.split()[-1] for l in out.splitlines() if l.split()[1] in ("T", "W")}
    assert len(getter_names()) == 53
    assert exported == getter_names() | {"zeGetCommandListExpProcAddrTable"}


def test_properties_and_queue_groups():
    out = probe("props")
    assert "name=gputrace simulated GPU" in out.splitlines()
    assert "api=1.17" in out                         # the newest spec it plays, by default
    assert "api=1.4" in probe("props", env={"ZE_SIM_API_VERSION": "1.4"})
    p = {k: v for l in out.splitlines() for k, v in fields(l).items()}
    assert p["timer_ns"] == "52"                     # legacy stype: ns per tick, rounded
    assert p["timer_hz"] == str(round(Fraction(10**9) / TICK))  # 1_2 stype: Hz, exact tick
    assert p["valid_bits"] == p["kernel_valid_bits"] == "32"
    assert "groups=2" in out
    assert "group0 flags=0x7 queues=2 fill_max=128" in out
    assert "group1 flags=0x2 queues=1 fill_max=128" in out


def test_clock_settings_from_environment():
    out = probe("props", env={"ZE_SIM_TICK_NS": "83.333", "ZE_SIM_VALID_BITS": "16"})
    p = {k: v for l in out.splitlines() for k, v in fields(l).items()}
    assert p["timer_ns"] == "83"
    assert p["timer_hz"] == str(round(Fraction(10**9) / Fraction("83.333")))
    assert p["valid_bits"] == "16"


def test_bad_clock_settings_get_one_line_each_and_defaults():
    need(PROBE)
    r = run([PROBE, "props"], traced=False,
            env=sim_env({"ZE_SIM_TICK_NS": "fast", "ZE_SIM_VALID_BITS": "99",
                         "ZE_SIM_CLOCK_OFFSET_NS": "-5", "ZE_SIM_DRIFT_PPM": "2000",
                         "ZE_SIM_SIGNAL_IN_WAIT": "TERM", "ZE_SIM_SUBMIT_STALL_US": "100/0",
                         "ZE_SIM_EXECUTE_STALL_US": "2ms", "ZE_SIM_PAIR_SPLIT_US": "-1"}))
    assert r.returncode == 0
    lines = sorted(r.stderr.decode().splitlines())
    assert len(lines) == 8, lines
    assert "ZE_SIM_CLOCK_OFFSET_NS='-5'" in lines[0]
    assert "ZE_SIM_DRIFT_PPM='2000'" in lines[1] and "-1000 to 1000" in lines[1]
    assert "ZE_SIM_EXECUTE_STALL_US='2ms'" in lines[2] and "US[/N]" in lines[2]
    assert "ZE_SIM_PAIR_SPLIT_US='-1'" in lines[3] and "US[/N]" in lines[3]
    assert "ZE_SIM_SIGNAL_IN_WAIT='TERM'" in lines[4] and "signal number" in lines[4]
    assert "ZE_SIM_SUBMIT_STALL_US='100/0'" in lines[5] and "US[/N]" in lines[5]
    assert "ZE_SIM_TICK_NS='fast'" in lines[6] and "52.083" in lines[6]
    assert "ZE_SIM_VALID_BITS='99'" in lines[7] and "8 to 64" in lines[7]
    assert "timer_ns=52" in r.stdout.decode()


def test_global_timestamps_pair_monotonic_raw_with_device_ticks():
    for env, tick, offset, bits in ((None, TICK, OFFSET, 32),
                                    ({"ZE_SIM_TICK_NS": "10.5", "ZE_SIM_VALID_BITS": "16",
                                      "ZE_SIM_CLOCK_OFFSET_NS": "123456789"},
                                     Fraction("10.5"), 123456789, 16)):
        out = probe("global", env=env)
        rows = [fields(l) for l in out.splitlines()]
        assert len(rows) == 3
        for f in rows:
            assert int(f["before"]) <= int(f["host"]) <= int(f["after"])
            assert int(f["dev"]) == ticks_of(int(f["host"]), tick, offset, bits)


def test_split_pair_reads_the_device_counter_later():
    """ZE_SIM_PAIR_SPLIT_US=300/2: the second of three pairs holds 300 us between its host
    read and its device read (the pair still inside the call); the others are exact."""
    out = probe("global", env={"ZE_SIM_PAIR_SPLIT_US": "300/2"})
    rows = [fields(l) for l in out.splitlines()]
    assert len(rows) == 3
    for i, f in enumerate(rows):
        host, dev, after = int(f["host"]), int(f["dev"]), int(f["after"])
        assert int(f["before"]) <= host <= after
        if i != 1:
            assert dev == ticks_of(host, TICK, OFFSET, 32)
        else:  # read at least 300 us after the host half, and before the call returned
            assert ticks_of(host + 300000, TICK, OFFSET, 32) <= dev
            assert dev <= ticks_of(after, TICK, OFFSET, 32)
        assert after - int(f["before"]) >= (300000 if i == 1 else 0)


def test_device_clock_drift():
    """ZE_SIM_DRIFT_PPM: the device's ticks run that much slow against the host clock,
    the tick the properties report unchanged (a tracer's nominal rate errs by it)."""
    out = probe("global", env={"ZE_SIM_DRIFT_PPM": "-250"})
    for f in (fields(l) for l in out.splitlines()):
        want = int((int(f["host"]) + OFFSET) * (1 - Fraction(250, 10**6)) // TICK) & 0xffffffff
        assert abs(int(f["dev"]) - want) <= 1  # long double against exact: a rounding
    assert "timer_ns=52" in probe("props", env={"ZE_SIM_DRIFT_PPM": "-250"})


# ---- the timing model ----

TIMELINE = {  # name: the contract's duration in ns
    "kernel_big": 1000 * 100,          # groupCount 1000x1x1, group size 100x1x1
    "copy_small": max(1000, 4096 // 10),
    "kernel_odd": 7 * 3 * 2 * 8 * 4 * 2,
    "copy_large": 1000000 // 10,
    "fill": 200000 // 10,
    "barrier": 0,
    "kernel_unit": 1,                  # group size left at its default 1x1x1
    "copy_9999": max(1000, 9999 // 10),
}


def test_durations_order_and_alignment_on_one_queue():
    out = probe("timeline")
    assert "bytes ok" in out
    rows = cmds(out)
    assert [r[0] for r in rows] == list(TIMELINE)
    for name, start, end in rows:
        ticks = (end - start) & 0xFFFFFFFF
        assert abs(ticks * TICK - TIMELINE[name]) < TICK, (name, ticks)
    # In order, back to back: each command starts where the previous one ended.
    for (_, _, prev_end), (name, start, _) in zip(rows, rows[1:]):
        assert start == prev_end, name
    # The timestamp written after the first kernel is that kernel's end.
    assert int(first(out, "write_global_timestamp")["write_global_timestamp"]) == rows[0][2]
    sync, times = first(out, "sync"), first(out, "submit_ns")
    first_start = to_host(sync, rows[0][1])
    last_end = to_host(sync, rows[-1][2])
    assert int(times["submit_ns"]) - TICK <= first_start
    assert first_start <= int(times["submit_ns"]) + 5_000_000   # starts at submission
    assert last_end <= int(times["done_ns"]) + TICK              # not done before its end
    assert int(times["done_ns"]) - int(times["submit_ns"]) >= sum(TIMELINE.values())


def test_timestamps_wrap_with_16_valid_bits():
    out = probe("kernels", 6, 1000000, env={"ZE_SIM_VALID_BITS": "16"})
    rows = cmds(out)
    assert len(rows) == 6
    assert all(0 <= v < 1 << 16 for _, s, e in rows for v in (s, e))
    # 6 ms of kernels cross the ~3.4 ms wrap at least once, inside some kernel.
    assert any(e < s for _, s, e in rows)
    for _, start, end in rows:
        assert abs(((end - start) & 0xFFFF) * TICK - 1000000) < TICK
    for (_, _, prev_end), (_, start, _) in zip(rows, rows[1:]):
        assert start == prev_end
    sync = first(out, "sync")
    assert int(sync["dev"]) < 1 << 16


def test_two_queues_run_concurrently():
    ns = 50_000_000
    out = probe("concurrent", ns)
    (_, s0, e0), (_, s1, e1) = cmds(out)
    sync, times = first(out, "sync"), first(out, "submit_ns")
    for s, e in ((s0, e0), (s1, e1)):
        assert abs((e - s) * TICK - ns) < TICK
    h0, h1 = (to_host(sync, s0), to_host(sync, e0)), (to_host(sync, s1), to_host(sync, e1))
    assert h1[0] < h0[1] and h0[0] < h1[1]          # simulated spans overlap
    wall = int(times["done_ns"]) - int(times["submit_ns"])
    assert ns <= wall < 1.9 * ns                    # and really ran side by side


@pytest.mark.skipif(SANITIZE == "thread", reason="ThreadSanitizer's shadow makes the copy's "
                    "first touch of its pages slower than the bound allows")
def test_copy_of_fresh_memory_ends_when_its_timestamp_says():
    """Allocations are backed when made: a copy's first touch of its pages (up to 20 us a
    page on a virtual machine) made a 32 MiB copy, 3.4 ms by its timestamps, return ~150 ms
    later, and Sysman read the device busy well after the trace shows it idle."""
    out = probe("bigcopy", 32)
    [(_, start, end)] = cmds(out)
    sync, times = first(out, "sync"), first(out, "submit_ns")
    expect = (32 << 20) // 10
    assert abs(((end - start) & 0xFFFFFFFF) * TICK - expect) < TICK
    assert to_host(sync, end) <= int(times["done_ns"]) + TICK
    assert int(times["done_ns"]) - int(times["submit_ns"]) < expect + 50_000_000


def test_events_wait_not_ready_and_timestamp_errors():
    out = probe("events")
    f = {k: v for l in out.splitlines() for k, v in fields(l).items()}
    assert f["query_pending"] == "0x1"      # ZE_RESULT_NOT_READY before completion
    assert f["status_pending"] == "0x1"
    assert f["sync_timeout"] == "0x1"
    assert f["status_done"] == "0x0"
    assert f["query_plain"] == "0x78000004"  # pool without KERNEL_TIMESTAMP
    assert f["query_null"] == "0x78000007"
    assert f["status_reset"] == "0x1"
    assert f["status_after_pool_destroy"] == "0x78000004"
    (_, start, end), = cmds(out)
    sync = first(out, "sync")
    # The gated kernel became runnable when the host signalled its wait event.
    assert to_host(sync, start) >= int(f["signal_ns"]) - TICK
    assert abs((end - start) * TICK - 1000) < TICK


def test_event_destroyed_under_its_command_is_not_a_later_one_at_its_address():
    """A 2 ms kernel's event is destroyed while it runs, and a later event takes its freed
    address: the kernel's end signals nothing (a driver writes the memory it was given),
    so the later event is still unsignaled once the kernel and one after it are done."""
    f = fields(probe("reuse"))
    assert f["address_reused"] == "yes"  # (else the check below proves nothing)
    assert f["new_event_status"] == "0x1"  # ZE_RESULT_NOT_READY


def test_forked_child_gets_fresh_workers():
    assert probe("fork").splitlines() == ["parent ok", "child ok", "parent again ok"]


# ---- the sample programs ----

def basic_expected(iterations, n):
    pattern = bytes([0xDE, 0xAD, 0xBE, 0xEF])
    lines = ["device: gputrace simulated GPU",
             f"list: copy HtoD, vector_add 4x1x1 groups of 64x1x1, fill {n // 2} bytes, "
             "barrier, scale 8x2x1 groups of 32x1x1, copy DtoH"]
    result = b""
    for it in range(iterations):
        src = bytes((i * 7 + it * 13) & 0xFF for i in range(n))
        result = src[: n // 2] + (pattern * n)[: n - n // 2]
        lines.append(f"iteration {it}: {n} bytes checksum {fnv1a(result)} ok")
    lines.append(f"immediate: imm_kernel 2x1x1 groups of 16x1x1, copy {n} bytes checksum "
                 f"{fnv1a(result)} ok")
    lines.append("ze_basic: ok")
    return lines


def test_ze_basic_default():
    assert launch([APPS / "ze_basic"]).splitlines() == basic_expected(3, 65536)


def test_ze_basic_args():
    assert launch([APPS / "ze_basic", 5, 1024]).splitlines() == basic_expected(5, 1024)


def test_ze_basic_under_loader_tracing_layer_and_two_drivers():
    out = launch([APPS / "ze_basic", 1, 256], env={"ZE_ENABLE_TRACING_LAYER": "1"})
    assert out.splitlines() == basic_expected(1, 256)
    # Two drivers switch the loader to intercept mode (wrapped handles).
    out = launch([APPS / "ze_basic", 1, 256],
                 env={"ZE_ENABLE_ALT_DRIVERS": f"{ZE_SIM},{ZE_SIM}"})
    assert out.splitlines() == basic_expected(1, 256)


def test_ze_hammer():
    out = launch([APPS / "ze_hammer", 4, 50000])
    assert out.splitlines() == ["ze_hammer: threads=4 calls=50000 total=200000"]


def test_ze_threads():
    out = launch([APPS / "ze_threads", 50, 8])
    assert out.splitlines() == ["ze_threads: threads=50 batches=7 calls=100"]


def test_ze_dlopen():
    n = 4096
    data = bytes((i * 31 + 5) & 0xFF for i in range(n))
    out = launch([APPS / "ze_dlopen", n])
    assert out.splitlines() == [
        "device: gputrace simulated GPU",
        f"dlopen_kernel 8x1x1 groups of 32x1x1, copy {n} bytes checksum {fnv1a(data)} ok",
        "ze_dlopen: ok"]
    need(APPS / "ze_dlopen")
    ldd = subprocess.run(["ldd", str(APPS / "ze_dlopen")], capture_output=True, text=True)
    assert "libze_loader" not in ldd.stdout


def test_ze_multiqueue():
    n = 2048
    a = fnv1a(b"\xa1" * n)
    b = fnv1a(b"\xb2\xb3" * (n // 2))
    expect = [f"iteration {it}: a={a} b={b} copy={fnv1a(bytes((i ^ (it * 0x5B)) & 0xFF for i in range(n)))} ok"
              for it in range(3)] + ["ze_multiqueue: ok"]
    assert launch([APPS / "ze_multiqueue", 3, n]).splitlines() == expect


def test_ze_errors():
    out = launch([APPS / "ze_errors"])
    lines = out.splitlines()
    assert lines[-1] == "ze_errors: ok"
    assert not [l for l in lines if "UNEXPECTED" in l]
    assert ("zeDeviceGetProperties(NULL, &props): ZE_RESULT_ERROR_INVALID_NULL_HANDLE "
            "(0x78000005)") in lines
    assert ("zeDeviceGetProperties(context_as_device, &props): "
            "ZE_RESULT_ERROR_INVALID_ARGUMENT (0x78000004)") in lines
    assert ("zeEventHostSynchronize(garbage_event, 0): ZE_RESULT_ERROR_INVALID_ARGUMENT "
            "(0x78000004)") in lines
    assert len(lines) == 29
    # Same codes on every run.
    assert launch([APPS / "ze_errors"]) == out


# ---- spec 1.10+ (test/levelzero/sim/README.md, "Versions") ----

def test_spec_version_selectable_down_to_1_4():
    for v in ("1.4", "1.10", "1.17"):
        assert f"api={v}" in probe("props", env={"ZE_SIM_API_VERSION": v})
    need(PROBE)
    r = run([PROBE, "props"], traced=False, env=sim_env({"ZE_SIM_API_VERSION": "2.0"}))
    assert r.returncode == 0
    assert r.stderr.decode().splitlines() == [
        "ze_sim: ZE_SIM_API_VERSION='2.0' is not a version from 1.4 to 1.17; using 1.17"]
    assert "api=1.17" in r.stdout.decode()


def test_queues_on_one_engine_take_turns():
    """Two queues of the copy group (ordinal 1, index 0 both): one engine, one command at a
    time, in simulated time and for real."""
    ns = 20_000_000
    out = probe("concurrent", ns, 1, 0, 1, 0)
    (_, s0, e0), (_, s1, e1) = cmds(out)
    sync, times = first(out, "sync"), first(out, "submit_ns")
    h = sorted([(to_host(sync, s0), to_host(sync, e0)), (to_host(sync, s1), to_host(sync, e1))])
    for s, e in h:
        assert abs((e - s) - ns) < TICK
    assert h[1][0] >= h[0][1] - TICK                 # back to back, no overlap
    wall = int(times["done_ns"]) - int(times["submit_ns"])
    assert wall >= 2 * ns


def test_counter_based_event_rules_and_latest_signal():
    need(PROBE)
    r = run([PROBE, "counter"], traced=False, env=sim_env())
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    p = {k: v for l in out.splitlines() for k, v in fields(l).items()}
    assert p["fresh_status"] == "0x0"                # complete before any signal
    for rule in ("host_reset", "host_signal", "append_reset", "out_of_order_signal"):
        assert p[rule] == "0x78000004"               # ZE_RESULT_ERROR_INVALID_ARGUMENT
    assert p["status_during_second"] == "0x1"        # NOT_READY: the latest signal counts
    (_, s, e), = cmds(out)
    assert abs((e - s) * TICK - 20_000_000) < TICK   # its times are the latest command's
    lines = r.stderr.decode().splitlines()           # each broken rule said out loud
    assert len(lines) == 4 and all(l.startswith("ze_sim: ") for l in lines), lines


def test_property_calls_of_ze_info():
    out = launch([APPS / "ze_info"]).splitlines()
    assert "module: SPIR-V 1.4, fp16 yes, fp64 yes, max arguments 2048 bytes" in out
    assert "memory access: host 0x3, device 0x3, shared 0x3" in out
    assert "cache 0: 16777216 bytes" in out
    assert "images: not supported" in out
    assert "driver version 1, API 1.17, 3 extension(s)" in out
    old = launch([APPS / "ze_info"], env={"ZE_SIM_API_VERSION": "1.4"}).splitlines()
    assert "driver version 1, API 1.4, 0 extension(s)" in old


def test_counter_based_event_completes_with_the_last_copy():
    out = launch([APPS / "ze_counterbased"]).splitlines()
    assert out == ["4 copies of 262144 bytes done when the event completed",
                   "the event's timestamps are the last copy's"]
    # A 1.4 driver knows no counter-based pools: the event is a plain one, which the host
    # may reset and signal, and which stays signaled from the first of two kernels.
    r = run([PROBE, "counter"], traced=False, env=sim_env({"ZE_SIM_API_VERSION": "1.4"}))
    assert r.returncode == 0 and not r.stderr
    p = {k: v for l in r.stdout.decode().splitlines() for k, v in fields(l).items()}
    assert p["host_reset"] == p["host_signal"] == p["status_during_second"] == "0x0"


@pytest.mark.parametrize("version", ["1.17", "1.14"])
def test_modern_program_on_the_newer_loader(version):
    out = launch([APPS / "ze_modern", 2, 4096],
                 env=newer_loader({"ZE_SIM_API_VERSION": version})).splitlines()
    made = "zeEventCounterBasedCreate" if version == "1.17" else "event pool extension"
    assert out[:2] == [f"drivers: 1, API {version}", f"counter-based events: {made}"]
    assert out[-1] == "recorded list: 2 runs done"
    assert len(out) == 5


def test_newer_entry_points_need_the_driver_too():
    """The newer loader in front of a 1.4 driver (no pfnInitDrivers): zeInitDrivers
    delivers no driver and answers UNSUPPORTED_FEATURE, as loader 1.32.0 does; zeInit
    still works (ze_hello's probe finds zeInitDrivers, so its answer is the program's)."""
    need(APPS / "ze_modern")
    env = sim_env(newer_loader({"ZE_SIM_API_VERSION": "1.4"}))
    r = run([APPS / "ze_modern"], traced=False, env=env)
    assert r.returncode == 1 and not r.stdout
    assert b"zeInitDrivers(&ndrivers, NULL, &types) failed: 0x78000003" in r.stderr
    assert launch([APPS / "ze_basic", 1], env=newer_loader({"ZE_SIM_API_VERSION": "1.4"}))


def test_hello_starts_as_its_loader_allows():
    old = launch([APPS / "ze_hello"]).splitlines()
    new = launch([APPS / "ze_hello"], env=newer_loader()).splitlines()
    assert old[0] == "init: zeInit (this loader has no zeInitDrivers)"
    assert new[0] == "init: zeInitDrivers, 1 GPU driver(s)"
    # A real newer loader also lists its layers (tracing layer): not the program's.
    new = [l for l in new if not l.startswith("component ") or l == "component loader"]
    assert old[1:] == new[1:] == ["component loader", "driver API 1.17",
                                  "device gputrace simulated GPU",
                                  "signaled from the device and seen by the host"]


def test_sysman_answers():
    """The sample enables Sysman by ZES_ENABLE_SYSMAN=1 before zeInit (spec 1.4 has no
    zesInit; the simulator does not offer the newer loader's either) and the simulated
    device answers: its name, three engine groups (all, compute, copy), GPU and memory
    frequency domains (README.md, "Sysman")."""
    answers = ["sysman: gputrace simulated GPU, 0 sub-devices", "sysman: 3 engine group(s)",
               "sysman: 2 frequency domain(s)"]
    assert launch([APPS / "ze_sysman"]).splitlines() == answers
    assert launch([APPS / "ze_sysman"], env=newer_loader()).splitlines() == [
        "sysman: zesInit: not supported by this driver (0x78000003)"] + answers


@pytest.mark.parametrize("app", ["ze_event_reset", "ze_bandwidth", "ze_peak", "ze_pingpong"])
def test_equivalents_of_level_zero_samples(app):
    expect = {
        "ze_event_reset": [f"round {r}: done, A reset on the device, B reset on the host"
                           for r in range(3)],
        "ze_bandwidth": ["HtoD: 3 x 1048576 bytes", "DtoH: 3 x 1048576 bytes",
                         "bidirectional: 3 x 2 x 1048576 bytes"],
        "ze_peak": ["fp32: 64 groups timed", "fp64: 64 groups timed"],
        "ze_pingpong": ["8 rounds of ping and pong"],
    }
    assert launch([APPS / app]).splitlines() == expect[app]


def test_indirect_launches_and_memory_of_other_contexts():
    """Indirect launches read their counts when they run; memory belongs to its context;
    the forbidden appends get one line each (ze_indirect checks the rest itself)."""
    need(APPS / "ze_indirect")
    p = run([APPS / "ze_indirect"], traced=False, env=sim_env())
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().splitlines() == ["ze_indirect: ok"]
    assert p.stderr.decode().splitlines() == [
        "ze_sim: zeCommandListAppendLaunchKernelIndirect: a launch-arguments or count buffer "
        "that is not memory allocated in the list's context",
        "ze_sim: zeCommandListAppendMemoryCopyFromContext: the source is not memory of the "
        "source context (or runs past its allocation)"]
