"""NVIDIA GPU telemetry through NVML, end to end without a GPU: a fake libnvidia-ml.so.1
(test/cuda/fake_nvml.c) whose every reading follows a formula of the device and of how many
times it was asked, so each sample of the trace is checked exactly. Telemetry works in a
process that never touches CUDA, and nothing asks NVML anything unless --telemetry asks."""
import collections
import json
import os
import pathlib
import subprocess

import pytest

from conftest import (BUILD, GPUTRACE, SANITIZE, TSAN_FORK_THREAD, events, gputrace_env,
                      gputrace_lines, load_trace, need, run, strip_gputrace)

CUDA = BUILD / "test" / "cuda"
FAKE = CUDA / "nvml"
IDLE = CUDA / "idle_app"
FAKE_APP = CUDA / "fake_app"
CUDA_HOME = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
pytestmark = pytest.mark.skipif(not (CUDA_HOME / "include" / "cupti.h").exists(),
                                reason="CUDA backend not built (no cupti.h)")
HZ = 50


def nvml_env(extra=None):
    env = {"LD_LIBRARY_PATH": str(FAKE), "GPUTRACE_TELEMETRY": "1",
           "GPUTRACE_TELEMETRY_HZ": str(HZ)}
    env.update(extra or {})
    return env


def telemetry(tmp_path, cmd, env):
    need(FAKE / "libnvidia-ml.so.1")
    need(cmd[0])
    plain = run(cmd, traced=False, env={"LD_LIBRARY_PATH": str(FAKE)})
    r = run(cmd, env=env, tmp_path=tmp_path)
    assert r.returncode == plain.returncode == 0, r.stderr
    assert r.stdout == plain.stdout
    assert strip_gputrace(r.stderr) == strip_gputrace(plain.stderr)
    t = r.trace
    rows = {e["pid"]: e["args"]["name"] for e in events(t, ph="M", name="process_name")}
    by_row = collections.defaultdict(lambda: collections.defaultdict(list))
    for e in sorted(events(t, ph="C"), key=lambda e: e["ts"]):
        by_row[rows[e["pid"]]][e["name"]].append(e)
    return by_row, r


def expected(d, k):
    """Sample k of device d, as the fake computes it."""
    return {
        "utilization": {"gpu %": (7 * k + 13 * d) % 101, "memory %": (3 * k + d) % 101},
        "frequency": {"sm MHz": 1000 + 10 * k, "memory MHz": 5000 + d},
        "power": {"W": (100000 + 1000 * k + 7 * d) / 1000},
        "temperature": {"gpu °C": 40 + k % 20 + d},
        "memory": {"used bytes": (1 << 30) + 4096 * k},
        "pcie": {"tx KB/s": 1000 * k, "rx KB/s": 2000 * k + d},
    }


@pytest.mark.sanitize
def test_every_sample_is_the_devices_reading(tmp_path):
    """A program that never touches CUDA (no host event: the drain thread starts for the
    sampling alone): both GPUs, every series, in order."""
    rows, _ = telemetry(tmp_path, [IDLE, 300], nvml_env())
    assert set(rows) == {"GPU 0: Fake GPU A", "GPU 1: Fake GPU B"}
    for d, row in enumerate(sorted(rows)):
        counters = rows[row]
        want_names = {"utilization", "frequency", "power", "temperature", "memory"}
        if d == 0:
            want_names.add("pcie")  # the second GPU has no PCIe counters (NOT_SUPPORTED)
        assert set(counters) == want_names, (row, set(counters))
        n = len(counters["power"])
        assert n >= 3, n  # 300 ms at 50 Hz, whatever the machine's load
        for name, samples in counters.items():
            assert len(samples) == n, (row, name)
            for k, s in enumerate(samples):
                assert s["args"] == expected(d, k)[name], (row, name, k, s)
        # a sampler never runs faster than asked (the last: one more reading at exit);
        # one reading held up by the machine's load may fall closer to the next
        ts = [s["ts"] for s in counters["power"]][:-1]
        assert (len(ts) - 1) * 1e6 / (ts[-1] - ts[0]) <= HZ * 1.05, ts


def test_summary_json_gives_the_samples_exactly(tmp_path):
    """The summary JSON's min, max and mean of a series are the trace's samples' (the
    trace writes 15 digits): memory used from 1 GiB up, which read 1073741820 there, a
    value no sample had."""
    summary = tmp_path / "s.json"
    rows, _ = telemetry(tmp_path, [IDLE, 100], nvml_env({"GPUTRACE_SUMMARY_JSON": str(summary)}))
    used = [s["args"]["used bytes"] for s in rows["GPU 0: Fake GPU A"]["memory"]]
    row = next(r for r in json.loads(summary.read_text())["metrics"]["counters"]
               if r["device"] == "GPU 0: Fake GPU A" and r["series"] == "used bytes")
    assert used[0] == 1 << 30
    assert (row["samples"], row["min"], row["max"]) == (len(used), min(used), max(used))
    assert row["mean"] == sum(used) / len(used)


def test_a_program_shorter_than_a_period(tmp_path):
    """A program that ends before the drain thread's first sample still gets the reading
    taken at its exit, on every GPU."""
    rows, _ = telemetry(tmp_path, [IDLE, 0], nvml_env({"GPUTRACE_TELEMETRY_HZ": "1"}))
    assert set(rows) == {"GPU 0: Fake GPU A", "GPU 1: Fake GPU B"}
    for d, row in enumerate(sorted(rows)):
        power = rows[row]["power"]
        assert 1 <= len(power) <= 2, power  # at exit, and maybe one at the start
        for k, s in enumerate(power):
            assert s["args"] == expected(d, k)["power"], (row, k, s)


def test_with_a_cuda_program(tmp_path):
    """NVML's rows beside a (fake) CUDA program's own activity."""
    rows, r = telemetry(tmp_path, [FAKE_APP], nvml_env({"GPUTRACE_DISABLE_CUPTI": "1"}))
    assert rows["GPU 0: Fake GPU A"]["power"]
    assert events(r.trace, ph="X", cat="cuda_runtime")


def test_permission_refused_is_one_line(tmp_path):
    rows, r = telemetry(tmp_path, [IDLE, 100], nvml_env({"FAKE_NVML_DENY": "power"}))
    lines = gputrace_lines(r.stderr)
    assert len(lines) == 2, lines  # one per GPU
    assert all("NVML: power of GPU" in l and "Insufficient Permissions; not sampled" in l
               for l in lines)
    for row in rows.values():
        assert "power" not in row and row["temperature"]


def test_a_gpu_lost_mid_run_is_one_line(tmp_path):
    """A GPU that falls off the bus (NVML_ERROR_GPU_IS_LOST from its 4th reading on): one
    line naming it, its series end with their last reading, the other GPU samples on.
    Each of its readings said so in a line of its own (six lines for one GPU)."""
    rows, r = telemetry(tmp_path, [IDLE, 300], nvml_env({"FAKE_NVML_LOST": "1:3"}))
    assert gputrace_lines(r.stderr) == ["gputrace: NVML: GPU 1: GPU is lost; its telemetry "
                                        "ends here"]
    lost = rows["GPU 1: Fake GPU B"]
    assert set(lost) == {"utilization", "frequency", "power", "temperature", "memory"}
    for name, samples in lost.items():
        assert [s["args"] for s in samples] == [expected(1, k)[name] for k in range(3)], name
    power = rows["GPU 0: Fake GPU A"]["power"]
    assert len(power) > 3
    assert [s["args"] for s in power] == [expected(0, k)["power"] for k in range(len(power))]


def test_a_gpu_without_a_handle_is_one_line_and_the_others_named_right(tmp_path):
    """NVML's GPU 0 gives no handle: one line for it; GPU 1 is sampled on its own row, and
    a reading it refuses names it GPU 1 (the line said GPU 0: its place among the GPUs
    sampled, not NVML's index, which the row and nvidia-smi show)."""
    rows, r = telemetry(tmp_path, [IDLE, 100],
                        nvml_env({"FAKE_NVML_NO_HANDLE": "0", "FAKE_NVML_DENY": "power"}))
    assert gputrace_lines(r.stderr) == [
        "gputrace: NVML: 1 of 2 GPU(s) gave no handle (GPU 0: GPU is lost): no telemetry of it",
        "gputrace: NVML: power of GPU 1: Insufficient Permissions; not sampled"]
    assert set(rows) == {"GPU 1: Fake GPU B"}
    temp = rows["GPU 1: Fake GPU B"]["temperature"]
    assert temp and "power" not in rows["GPU 1: Fake GPU B"]
    assert [s["args"] for s in temp] == [expected(1, k)["temperature"] for k in range(len(temp))]


def test_nvml_that_does_not_start_is_one_line(tmp_path):
    """One line; the idle program then recorded nothing, so it leaves no trace file."""
    need(FAKE / "libnvidia-ml.so.1")
    need(IDLE)
    r = run([IDLE, 100], env=nvml_env({"FAKE_NVML_INIT": "error"}), tmp_path=tmp_path)
    assert r.returncode == 0
    assert r.stdout == b"idle: slept 100 ms\n"
    lines = gputrace_lines(r.stderr)
    assert lines == ["gputrace: NVML did not start (Driver Not Loaded): no NVIDIA GPU telemetry"]
    assert not os.path.exists(r.trace_path)


@pytest.mark.parametrize("fake, line", [
    ({"FAKE_NVML_DEVICES": "0"},
     "gputrace: GPUTRACE_TELEMETRY: nothing recorded: NVML (libnvidia-ml.so.1) sees no GPU, "
     "and no Level Zero device gave Sysman telemetry (read from the program's zeInit on); "
     "telemetry needs one of them"),
    ({"FAKE_NVML_COUNT": "error"},
     "gputrace: NVML cannot count its GPUs (Unknown Error): no NVIDIA GPU telemetry"),
], ids=["no-gpu", "count-error"])
def test_nvml_that_gives_no_gpu_is_one_line(tmp_path, fake, line):
    """NVML starts but gives no GPU to sample: telemetry asked for, none recorded, one line
    (it was a line at info only: not a word at the default level)."""
    need(FAKE / "libnvidia-ml.so.1")
    need(IDLE)
    r = run([IDLE, 50], env=nvml_env(fake), tmp_path=tmp_path)
    assert r.returncode == 0 and r.stdout == b"idle: slept 50 ms\n"
    assert gputrace_lines(r.stderr) == [line]
    assert not os.path.exists(r.trace_path)


NO_TELEMETRY = ("gputrace: GPUTRACE_TELEMETRY: nothing recorded: libnvidia-ml.so.1 (NVML, which the "
                "NVIDIA driver installs) could not be opened, and no Level Zero device gave "
                "Sysman telemetry (read from the program's zeInit on); telemetry needs one of "
                "them")


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="an NVIDIA driver is installed")
def test_no_nvml(tmp_path):
    """Telemetry asked for, no libnvidia-ml.so.1 (and no NVIDIA driver), nothing else
    sampling telemetry: one line saying what was missing and what telemetry needs, at
    any log level; the program as it was."""
    need(IDLE)
    for log in ("warn", "info"):
        r = run([IDLE, 50], env={"LD_LIBRARY_PATH": "", "GPUTRACE_TELEMETRY": "1",
                                 "GPUTRACE_LOG": log}, tmp_path=tmp_path)
        assert r.returncode == 0
        got = [l for l in gputrace_lines(r.stderr) if "NVML" in l or "telemetry" in l]
        assert got == [NO_TELEMETRY], got
        # the drain thread ran for telemetry, found nothing to sample: no file
        assert not os.path.exists(r.trace_path)
    # not asked for: not a word
    r = run([IDLE, 50], env={"LD_LIBRARY_PATH": ""}, tmp_path=tmp_path)
    assert r.returncode == 0 and gputrace_lines(r.stderr) == []


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="an NVIDIA driver is installed")
@pytest.mark.skipif(not (BUILD / "libze_sim.so").exists(), reason="no Level Zero backend")
def test_no_nvml_where_level_zero_gives_telemetry(tmp_path):
    """A Level Zero device whose Sysman telemetry is sampled: NVML's absence is no news
    (a line at info only), the device's tracks are there."""
    app = BUILD / "test" / "apps" / "ze_basic"
    need(app)
    for log, want in (("warn", []), ("info", [
            "gputrace: NVML (libnvidia-ml.so.1) not found: no NVIDIA GPU telemetry (the "
            "Level Zero devices' is recorded)"])):
        r = run([app, 2], env={"LD_LIBRARY_PATH": "", "GPUTRACE_TELEMETRY": "1",
                               "GPUTRACE_LOG": log,
                               "ZE_ENABLE_ALT_DRIVERS": str(BUILD / "libze_sim.so")},
                tmp_path=tmp_path)
        assert r.returncode == 0, r.stderr
        assert [l for l in gputrace_lines(r.stderr) if "NVML" in l or "--telemetry" in l] == want
        assert [e for e in events(r.trace, ph="C") if e["name"] == "frequency"]


def test_off_means_no_nvml_call(tmp_path):
    """No --telemetry: the library is not even opened."""
    log = tmp_path / "nvml.log"
    need(IDLE)
    r = run([IDLE, 100], env={"LD_LIBRARY_PATH": str(FAKE), "FAKE_NVML_LOG": str(log)},
            tmp_path=tmp_path)
    assert r.returncode == 0
    assert not log.exists()
    r = run([IDLE, 100], env=nvml_env({"FAKE_NVML_LOG": str(log)}), tmp_path=tmp_path)
    calls = log.read_text().splitlines()
    assert calls[0] == "nvmlInit_v2" and calls[-1] == "nvmlShutdown"


def gputrace_metrics(fake_env):
    """`gputrace metrics`'s lines with the fake NVML, set up as fake_env says."""
    tool = BUILD / "gputrace-tool"
    need(tool)
    need(FAKE / "libnvidia-ml.so.1")
    r = run([GPUTRACE, "metrics"], traced=False,
            env={"GPUTRACE_TOOL": str(tool), "LD_LIBRARY_PATH": str(FAKE), **fake_env})
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().splitlines()


def test_gputrace_metrics_lists_what_each_gpu_gives(tmp_path):
    """`gputrace metrics` lists, per GPU, the telemetry series its NVML gives:
    the fake's GPU 1 has no PCIe throughput and is listed without it (it was
    listed with every series), as its trace has no pcie track."""
    lines = gputrace_metrics({"FAKE_NVML_DENY": "power"})
    everything = ("utilization (gpu %, memory %), frequency (sm MHz, memory MHz), "
                  "temperature (gpu °C), memory (used bytes)")
    gpu0 = lines.index("  GPU 0: Fake GPU A")
    gpu1 = lines.index("  GPU 1: Fake GPU B")
    # power refused (no permission) on both, PCIe not supported on GPU 1
    assert lines[gpu0 + 1] == ("    telemetry (--telemetry): " + everything +
                               ", pcie (tx KB/s, rx KB/s)")
    assert lines[gpu1 + 1] == "    telemetry (--telemetry): " + everything


def test_gputrace_metrics_says_why_nvml_lists_no_gpu(tmp_path):
    """An NVML that does not start (the driver not loaded: a library and driver of
    different versions shows so) is said as such, with NVML's reason; it read "NVML
    sees no GPU", as for a machine without one."""
    nvidia = [l for l in gputrace_metrics({"FAKE_NVML_INIT": "error"}) if l.startswith("NVIDIA")]
    assert nvidia == ["NVIDIA: NVML did not start (Driver Not Loaded): no NVIDIA GPU listed"]


@pytest.mark.skipif(SANITIZE == "thread", reason=TSAN_FORK_THREAD)
def test_one_set_of_rows_per_gpu_in_a_run(tmp_path):
    """NVML's telemetry is the machine's: under gputrace run one process samples it at a
    time, so `run --telemetry -- sh -c 'idle_app; true'` has one series per GPU, not one
    in the shell's trace and another in the program's side by side (the run's trace had
    GPU 0 and GPU 1 twice, sampled at the same times). When the sampling process ends,
    another takes over: the series may then go on in its rows, after the first's."""
    need(FAKE / "libnvidia-ml.so.1")
    need(IDLE)
    out = tmp_path / "t.json"
    r = subprocess.run([str(GPUTRACE), "run", "--no-summary",
                        "--telemetry", "--telemetry-hz", str(HZ), "-o", str(out), "--",
                        "sh", "-c", f"{IDLE} 300; true"],
                       env=gputrace_env({"LD_LIBRARY_PATH": str(FAKE)}),
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert b"idle: slept 300 ms" in r.stdout
    t = load_trace(out)
    rows = {e["pid"]: e["args"]["name"] for e in events(t, ph="M", name="process_name")}
    by_gpu = collections.defaultdict(list)
    for e in events(t, ph="C", name="power"):
        # "GPU 0: ...", or "sh [pid N] GPU 0: ..." where two processes have rows
        gpu = rows[e["pid"]][rows[e["pid"]].index("GPU "):]
        by_gpu[gpu].append((e["ts"], e["pid"]))
    assert sorted(by_gpu) == ["GPU 0: Fake GPU A", "GPU 1: Fake GPU B"], rows
    for gpu, samples in by_gpu.items():
        # each process's samples one stretch of the series: none between another's
        order = [pid for _, pid in sorted(samples)]
        stretches = [p for i, p in enumerate(order) if not i or p != order[i - 1]]
        assert len(stretches) == len(set(order)), (gpu, order)
