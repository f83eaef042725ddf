"""The simulated CUDA stack, checked without the tracer: nvcc-built programs run on it,
and its CUPTI, driver and runtime keep the contracts of test/cuda/sim/README.md. The
probe is built against NVIDIA's headers and libraries; NVIDIA's own libcupti reads the
simulator's activity buffers."""
import os
import pathlib
import re

import pytest

from conftest import BUILD, SAN_PRELOAD, need, run

SIM = BUILD / "cuda-sim"
PROBE = BUILD / "test" / "cuda" / "sim" / "sim_probe"
CUDA = BUILD / "test" / "cuda"
CUDA_HOME = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
REAL_CUPTI = CUDA_HOME / "lib64" / "libcupti.so.13"

if not (CUDA_HOME / "include" / "cupti.h").exists():
    pytest.skip(f"no CUDA toolkit headers under {CUDA_HOME}: the simulator is not built",
                allow_module_level=True)


def sim_run(cmd, env=None, check=True):
    need(SIM / "libcuda.so.1")
    need(cmd[0])
    e = {"LD_LIBRARY_PATH": str(SIM)}
    if SAN_PRELOAD:
        # a sanitized build's simulator needs its sanitizer runtime loaded first
        e["LD_PRELOAD"] = " ".join(SAN_PRELOAD)
    e.update(env or {})
    r = run(cmd, traced=False, env=e)
    if check:
        assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r


def probe(*args, env=None):
    return sim_run([PROBE, *args], env).stdout.decode()


def fields(text):
    return dict(re.findall(r"(\w+)=([^\s]+)", text))


def test_one_subscriber_and_its_name():
    out = probe("subscribe")
    assert fields(out) == {"first": "0", "second": "39", "v1": "39", "unsubscribe": "0",
                           "again": "0", "stale": "1", "holder": "CUPTI"}
    assert "holder=CUPTI for first\n" in out


def test_callbacks_on_the_calling_thread_with_their_data():
    f = fields(probe("callbacks"))
    assert f["enters"] == f["exits"] and int(f["enters"]) > 10
    # same thread, correlationData kept from enter to exit, the runtime call's
    # nested driver call shares its correlation id, params and return value are real
    assert (f["same_thread"], f["pairs"], f["shared_corr"]) == ("1", "1", "1")
    assert (f["bytesize"], f["ret"], f["symbol"]) == ("4096", "0", "_Z12probe_kernelv")


def test_buffers_flushes_and_threads():
    f = fields(probe("buffers"))
    # a buffer with an unfinished kernel is held by a plain flush, handed over
    # (its start, no end) by a forced one on the caller's thread, and never again
    assert f["after_flush0"] == "0"
    assert (f["after_forced"], f["on_caller"]) == ("1", "1")
    assert re.fullmatch(r"[1-9]\d*-0,", f["forced_kernels"]), f["forced_kernels"]
    assert f["redelivered"] == "0"
    assert f["complete_kernels"] == "1000,"  # 2 x 500 ns
    # each thread asks for its own buffer, on itself; full buffers come back
    # on CUPTI's worker thread
    assert f["other_thread_request"] == "1"
    assert int(f["worker_deliveries"]) >= 1
    assert f["dropped"] == "0"


def test_stream_ids_as_the_records_carry_them():
    """cuptiGetStreamIdEx (callback-safe: asked inside the launch callbacks here) names
    a stream as its kernels' records do; the per-thread stream is the calling thread's;
    a destroyed stream is CUPTI_ERROR_INVALID_STREAM."""
    f = fields(probe("streams"))
    assert f["errors"] == "0"
    stream, legacy = f["stream"], f["legacy"]
    assert stream != legacy
    assert f["records"] == f["callback"] == f"{stream},{legacy},"
    assert (f["per_thread_twice"], f["other_thread_differs"]) == ("1", "1")
    assert (f["destroyed"], f["null_out"]) == ("1", "1")


def test_nvidia_libcupti_reads_the_simulated_buffers():
    if not REAL_CUPTI.exists():
        pytest.skip(f"{REAL_CUPTI} not installed")
    f = fields(probe("walk", str(REAL_CUPTI)))
    kinds = [int(k) for k in f["sim"].rstrip(",").split(",")]
    assert f["real"] == f["sim"]
    # runtime calls, a memset, a copy, a kernel, two synchronizations
    assert sorted(set(kinds)) == [1, 2, 5, 10, 38]


def test_two_devices_peer_access_and_copies():
    """cuCtxEnablePeerAccess's documented errors, cuMemcpyPeer's check of each pointer
    against its context, and a copy between two devices' memory (by cuMemcpyPeer or by
    cudaMemcpy through unified addressing) as a MEMCPY2 record (PTOP, naming both
    devices) that NVIDIA's libcupti walks (when installed); within one device, a MEMCPY
    DtoD."""
    f = fields(probe("peer", str(REAL_CUPTI) if REAL_CUPTI.exists() else "",
                     env={"CUDA_SIM_DEVICES": "2"}))
    assert f["can"] == "1,0"
    assert (f["enable_self"], f["enable_flags"], f["disable_unset"]) == ("201", "1", "705")
    assert (f["enable"], f["enable_again"]) == ("0", "704")
    assert (f["wrong_context"], f["copy"], f["unified"], f["same_device"]) == ("1", "0", "0", "0")
    # kind 22 (MEMCPY2), copy kind 10 (PTOP) from device 1 to 0 and back; 8 DtoD
    if REAL_CUPTI.exists():
        assert f["records"] == "22:10:0:1:0:4096,22:10:0:0:1:1000,1:8:0:100,"


def test_2d_copies():
    """cudaMemcpy2D(Async) through the driver's cuMemcpy2D_v2 / cuMemcpy2DAsync_v2 (their
    callbacks see the CUDA_MEMCPY2D): the rows really move, pitch to pitch, leaving the
    gaps between them; width past a pitch is cudaErrorInvalidPitchValue (12), no
    direction cudaErrorInvalidMemcpyDirection (21), rows past the allocation and arrays
    (not simulated) invalid values; pitched allocations as the driver documents them; one
    MEMCPY record per copy, of width x height bytes
    and width x height / 10 ns (HtoD 1, DtoH 2, DtoD 8), none for the failed ones."""
    f = fields(probe("copy2d"))
    assert (f["htod"], f["dtoh"], f["dtod"], f["rows"], f["gaps"]) == ("0", "0", "0", "1", "1")
    assert (f["callbacks"], f["width"]) == ("3", "100")
    assert (f["wide"], f["direction"], f["past_end"], f["array"]) == ("12", "21", "1", "1")
    assert f["wide_name"] == "cudaErrorInvalidPitchValue"
    # past CU_DEVICE_ATTRIBUTE_MAX_PITCH, or offsets and sizes that wrap: refused
    assert (f["huge_pitch"], f["wrapped_x"], f["fill_huge_pitch"], f["fill_wrapped_size"]) == \
        ("12", "1", "1", "1")
    # cudaMallocPitch / cuMemAllocPitch: rows of 512-byte multiples, filled whole by
    # cudaMemset2D; an element size not 4, 8 or 16, or an empty side: invalid value
    assert (f["pitch"], f["bad_element"], f["empty"], f["drv"]) == \
        ("0:1024:0", "1", "1", "0:1024:0")
    # cudaMemset2D(Async): each row's width filled, the rest of its pitch untouched; a
    # width past the pitch or rows past the allocation: invalid value
    assert (f["fill2d"], f["fill_rows"], f["fill_wide"], f["fill_past_end"]) == \
        ("0,0,0", "1", "1", "1")
    assert f["records"] == "1:400:40,2:400:40,8:400:40,2:1024:102,2:3072:307,"


def test_3d_copies():
    """cudaMemcpy3D(Async) through the driver's cuMemcpy3D_v2 / cuMemcpy3DAsync_v2: each
    slice's rows really move, pitch to pitch and slice to slice (slices of the pitched
    pointers' ysize rows), leaving the gaps; an array side (not simulated), a slice's rows
    past its height and rows past the allocation are invalid values, no direction 21, a
    width past a pitch 12; cudaMemset3D(Async) fills each slice's rows, in one 2D fill or
    one per slice; slices higher than ysize are invalid, an empty extent does nothing. One
    MEMCPY record per copy, of width x height x depth bytes (HtoD 1, DtoH 2)."""
    f = fields(probe("copy3d"))
    assert (f["htod"], f["dtoh"], f["rows"], f["gaps"]) == ("0", "0", "1", "1")
    assert (f["rt_array"], f["array"], f["slice"], f["past_end"], f["direction"],
            f["wide"]) == ("1", "1", "1", "1", "21", "12")
    assert (f["fill3d"], f["fill_tall"], f["fill_empty"], f["fill_rows"]) == \
        ("0,0,0", "1", "0", "1")
    assert f["records"] == "1:300:30,2:300:30,2:768:76,2:768:76,", f["records"]


def test_symbols():
    """A __device__ variable registered as nvcc's code does (__cudaRegisterVar): the
    runtime finds it through the driver's cuModuleGetGlobal in its module (loaded at
    first use, and again after cudaDeviceReset: zeroed); its storage is device memory
    of the size registered, at the address cudaGetSymbolAddress gives; copies to and
    from it are ordinary MEMCPY records (HtoD 1, DtoH 2, DtoD 8) of the bytes asked;
    offset + count past its end is cudaErrorInvalidValue (1), an unregistered symbol
    cudaErrorInvalidSymbol (13), a direction not into (out of) device memory
    cudaErrorInvalidMemcpyDirection (21)."""
    f = fields(probe("symbols"))
    assert (f["to"], f["from"], f["address"], f["size"], f["dtod"], f["bytes"]) == \
        ("0", "0", "0", "0:256", "0", "1")
    assert int(f["get_global"]) >= 1
    assert (f["past_end"], f["unknown"], f["direction"]) == ("1", "13,13", "21")
    # the module's, not cudaMalloc's: cudaFree refuses it
    assert f["free_symbol"] == "1"
    # the three symbol copies, then the two cudaMemcpy reading back
    assert f["records"] == "1:256:25,2:128:12,8:256:25,2:256:25,2:256:25,"
    assert f["after_reset"] == "0:0"


def test_host_functions_in_stream_order():
    """cudaLaunchHostFunc and cudaStreamAddCallback (the driver's cuLaunchHostFunc and
    cuStreamAddCallback): the host function starts once the kernel before it has ended
    and the work after it waits for it to return (the events around a host function of
    20 ms are 20 ms or more apart); both run on a thread of the driver's; the callback
    is passed its stream and cudaSuccess; flags other than 0 and no function are
    cudaErrorInvalidValue; CUPTI records nothing for them (kinds: DRIVER 4, RUNTIME 5,
    CONCURRENT_KERNEL 10)."""
    f = fields(probe("hostfn"))
    assert (f["host_fn"], f["callback"], f["flags"], f["no_fn"]) == ("0", "0", "1", "1")
    assert (f["after_kernel"], f["waited"], f["other_thread"]) == ("1", "1", "1")
    assert f["cb"] == "1:1:0"
    assert f["kinds"] == "4,5,10,"


def test_stream_ordered_allocation():
    """cudaMallocAsync / cudaFreeAsync (the driver's cuMemAllocAsync / cuMemFreeAsync):
    the memory is usable by the stream's later work (filled and read back there);
    a NULL pointer, a garbage stream (cudaErrorInvalidResourceHandle, 400), a pointer
    not allocated or freed twice are errors; cudaFree frees it too; unlike cudaMalloc
    it is not potentially unsafe during another stream's global capture (the capture
    ends with its graph), but it cannot go into a capture here (host memory nodes are
    not simulated: cudaErrorNotSupported, 801); CUPTI refuses MEMORY2 and MEMORY_POOL
    (CUPTI_ERROR_NOT_COMPATIBLE, 14): the simulator produces no such records."""
    f = fields(probe("mallocasync"))
    assert (f["memory2"], f["pool"]) == ("14", "14")
    assert (f["alloc"], f["free"], f["filled"]) == ("0", "0", "1")
    assert (f["null"], f["bad_stream"], f["unknown"], f["twice"]) == ("1", "400", "1", "1")
    assert f["plain_free"] == "0"
    assert (f["during_capture"], f["on_capturing"], f["end_capture"]) == ("0", "801", "0")


def test_per_thread_default_stream_forms():
    """The _ptds/_ptsz forms of the 2D, symbol, host-function and stream-ordered calls
    (what nvcc's --default-stream per-thread code calls) act on the calling thread's
    stream: the four copies' records name one stream, not the legacy one (7)."""
    f = fields(probe("per_thread"))
    assert f["results"] == "0,0,0,0,0,0,0"
    assert (f["bytes"], f["ran"]) == ("1", "1")
    assert (f["copies"], f["one_stream"], f["legacy"]) == ("4", "1", "0")


def test_device_reset():
    """cudaDeviceReset (the driver's cuDevicePrimaryCtxReset) waits for the context's
    work, tells CUPTI's subscriber of its module's unload and then of the context's
    destruction, frees its memory; its event then fails with 709
    (cudaErrorContextIsDestroyed), its stream no longer exists, and the next launch
    makes the context anew (a new id) and loads the module again; a graph of the old
    context cannot be launched or instantiated (709)."""
    f = fields(probe("reset"))
    assert (f["reset"], f["waited"], f["freed"]) == ("0", "1", "1")
    assert (f["event"], f["event_destroy"], f["stream"]) == ("709", "709", "400")
    # a graph captured before it, and its instance: their memory is gone
    assert (f["graph_launch"], f["graph_instantiate"]) == ("709", "709")
    assert (f["launch_again"], f["sync"]) == ("0", "0")
    assert f["resources"] == "C1,L1,U1,D1,C5,L5,"


@pytest.mark.parametrize("what,message", [
    ("flush_in_callback", "cuptiActivityFlushAll called from inside a buffer callback"),
    ("timestamp_late", "cuptiActivityRegisterTimestampCallback called while activity kinds "
                       "are enabled"),
    ("driver_in_callback", "cuCtxSynchronize called from inside a CUPTI callback"),
    ("cuda_in_host_fn", "cudaGetDevice_v3020 called from inside a host function"),
])
def test_forbidden_calls_abort_loudly(what, message):
    r = sim_run([PROBE, "forbidden", what], check=False)
    assert r.returncode < 0 or r.returncode == 134, r.stderr
    assert b"not stopped" not in r.stdout
    assert message in r.stderr.decode()


def test_capture_rules():
    out = probe("capture")
    # another global-mode thread's query: 900, and the capture is invalidated (901)
    assert "global: query=900 end=901 graph=no" in out
    # a relaxed thread may query; asking the legacy stream reports 906 without harm
    assert "relaxed: query=0 is_capturing_legacy=906 end=0 graph=yes" in out
    # thread-local captures leave other threads alone; the legacy stream breaks them
    assert "legacy: other_thread_query=0 launch=906 end=901" in out
    assert "captured_event: query=907 legacy_launch=0 end=0" in out


def test_fork_child_cannot_use_the_parents_cuda():
    f = fields(probe("fork"))
    assert (f["child_malloc"], f["parent_malloc"]) == ("3", "0")


def test_clocks():
    def off(f, rate=1.0):
        """How far CUPTI's elapsed time is from the host's at `rate`, beyond what
        the two paired reads' widths allow."""
        host, cupti = int(f["host_elapsed"]), int(f["cupti_elapsed"])
        return abs(cupti - host * rate) - int(f["reads_width"])

    f = fields(probe("clock"))
    # CUPTI's clock (CLOCK_REALTIME as the simulator keeps it) runs at the
    # host's rate unless told to drift; kernels last grid*block ns and start
    # after their launch
    assert off(f) <= 2
    assert f["kernel_dur"] == "1000000"
    assert int(f["kernel_after_launch"]) > 0
    # NTP slewing of CLOCK_REALTIME, as CUPTI sees it
    f = fields(probe("clock", env={"CUDA_SIM_REALTIME_DRIFT_PPM": "1000"}))
    assert off(f, 1.001) <= 2
    # the client's clock once registered: GPU times go through (device, client)
    # pairs read around the callback, good to a few ns over a millisecond
    f = fields(probe("clock", "callback"))
    assert off(f) <= 2
    assert abs(int(f["kernel_dur"]) - 1000000) <= 50
    assert int(f["kernel_end_before_synced"]) >= 0
    # a callback that often waits before it reads (its thread preempted): the pairs
    # still come from reads that did not wait, so a kernel still ends, in the client's
    # clock, before the synchronize that waited for it returned (one read per pair put
    # the end ~0.5 ms after it)
    f = fields(probe("clock", "stalling"))
    assert int(f["kernel_end_before_synced"]) >= 0
    assert abs(int(f["kernel_dur"]) - 1000000) <= 1000
    # CLOCK_REALTIME stepped back 3 ms inside a kernel of 400 ms (it runs ~300 to
    # ~700 ms after start): the record's times are converted together, on the
    # clock as it stood when the kernel started, so it still lasts what the device
    # measured (its end was on the stepped clock: 397 ms, and a kernel of 20 us
    # hit by the step ended 2.98 ms before it started, which no tracer can undo
    # to the ns: test_step_placed_by_launches_read_long_after, 1 run in ~7)
    f = fields(probe("clock", "long", env={"CUDA_SIM_REALTIME_STEP_NS": "-3000000",
                                           "CUDA_SIM_REALTIME_STEP_AT_MS": "500"}))
    assert f["kernel_dur"] == "400000000"
    assert int(f["kernel_after_launch"]) > 0


def test_bad_settings_and_injection():
    r = sim_run([PROBE, "init"], env={"CUDA_SIM_DEVICE_DRIFT_PPM": "lots",
                                      "CUDA_INJECTION64_PATH": "/nonexistent/libtool.so"})
    assert fields(r.stdout.decode()) == {"count": "1", "result": "0"}
    err = r.stderr.decode()
    assert "CUDA_SIM_DEVICE_DRIFT_PPM='lots' is not a number of ppm" in err
    assert "CUDA_INJECTION64_PATH=/nonexistent/libtool.so: cannot load it" in err
    r = sim_run([PROBE, "init"], env={"CUDA_SIM_DEVICES": "0"})
    assert fields(r.stdout.decode())["result"] == "100"  # cudaErrorNoDevice


@pytest.mark.skipif(not (CUDA_HOME / "bin" / "nvcc").exists(), reason="nvcc not installed")
def test_nvcc_programs_run():
    out = sim_run([CUDA / "sim_app", "basic"]).stdout.decode()
    assert out == "sim_app basic: ok\n"
    out = sim_run([CUDA / "sim_app", "runtimes"]).stdout.decode()
    assert out == ("runtime 13: version 13000\nruntime 12: version 12080, 132 SMs, "
                   "gputrace simulated GPU, within its struct, error 0\n")
    # (__cudaGetKernel is not a runtime call CUPTI hears of: CUDA 13.0 on an H200)
    out = sim_run([CUDA / "cupti_user", "release"]).stdout.decode()
    assert out.startswith("release: subscribe 0, enable 0, 10 runtime calls, 3 launches seen, "
                          "3 kernel records (first _Z15while_profilingPi, realtime clock), 0 other "
                          "records, 0 foreign buffers\n")


def test_another_tool_injected(tmp_path):
    tool = CUDA / "libother_tool.so"
    need(tool)
    report = tmp_path / "other-tool.txt"
    r = sim_run([PROBE, "init"], env={"CUDA_INJECTION64_PATH": str(tool),
                                      "OTHER_TOOL_OUT": str(report)})
    assert fields(r.stdout.decode())["result"] == "0"
    text = report.read_text()
    # subscribed at cuInit, inside the driver's lock, and saw the calls after it
    assert text.startswith("other-tool: subscribe 0, ")
    assert int(text.split(", ")[1].split()[0]) >= 1


def test_range_profiler_session():
    # NVIDIA's headers and libcupti stub, run on the simulator: one auto-range session of
    # two kernels, each its own range (named by its index), values from its work
    out = probe("range")
    assert out == ("chip=SIM100 ranges=2 dropped=0\n"
                   "range0=0:300,300\n"
                   "range1=1:128,128\n"
                   "not stopped\n")


def test_range_profiler_user_ranges():
    # user range, user replay, one nesting level: "step" holds its kernel and the one of
    # its nested "inner" (300 + 128 ns), "idle" ran none; one pass covers it all
    assert probe("range", "user") == ("chip=SIM100 ranges=2 dropped=0\n"
                                      "all passes submitted=1 next level=1\n"
                                      "range0=step:428,428\n"
                                      "range1=idle:0,0\n"
                                      "not stopped\n")
    # two nesting levels: this pass collected level 1; level 2 needs the code replayed
    assert probe("range", "user_levels2").splitlines()[1] == \
        "all passes submitted=0 next level=2"


@pytest.mark.parametrize("violate,message", [
    ("user_push_unstarted", "cuptiRangeProfilerPushRange while the range profiler is not started"),
    ("user_pop_unpushed", "cuptiRangeProfilerPopRange without a pushed range"),
    ("user_stop_pushed", "cuptiRangeProfilerStop with 1 user ranges pushed and not popped"),
    ("no_initialize", "cuptiDeviceGetChipName before cuptiProfilerInitialize"),
    ("tree_nodes", "cuptiRangeProfilerGetCounterDataSize: maxNumRangeTreeNodes 2 < maxNumOfRanges 4"),
    ("nesting", "cuptiRangeProfilerSetConfig: auto range with numNestingLevels 2"),
    ("start_before_config", "cuptiRangeProfilerStart before cuptiRangeProfilerSetConfig"),
    ("decode_before_stop", "cuptiRangeProfilerDecodeData while the range profiler is started"),
])
def test_range_profiler_order_violations_abort_loudly(violate, message):
    r = sim_run([PROBE, "range", violate], check=False)
    assert r.returncode < 0 or r.returncode == 134, r.stderr
    assert b"not stopped" not in r.stdout
    assert "cupti_sim: FATAL: " + message in r.stderr.decode()
