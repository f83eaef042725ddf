#!/usr/bin/env python3
"""gputrace against Intel's unitrace on the simulated Level Zero device, by hand.

unitrace is not in Debian, so `make bench` cannot run it; this script makes the
README's comparison (section "Overhead") repeatable on a machine where someone has
built it (README: how). Untraced, gputrace and unitrace runs of the same bench_ze
programs alternate, each figure is the best of --reps:

  launch, in loop   bench_ze launch KIND 20000 64 4096 50000: the program's own
                    median ns per launch (row 5 of `make bench`)
  launch, process   bench_ze launch KIND 100000 64 0: whole-process wall time,
                    100k launches back to back, start-up and the tool's exit included
  host call         bench_ze calls 1 1000000 20000 25000 (row 1), in loop

Columns: the program's in-loop ns per launch (or call) and what the tool adds to
it; whole-process wall ms and what the tool adds per launch (or call) over the
untraced process. gputrace runs at defaults and, for the whole-process launches,
also with a 256 MiB ring (gputrace-256M) and with GPUTRACE_LOSSLESS=1
(gputrace-lossless), either of which loses nothing.

Losses: gputrace's come from its trailer (events_lost); unitrace reports none, so
the script counts the kernels its output holds against the kernels launched.

  unitrace_compare.py --unitrace [LABEL=]PATH ... [--pci-shim] [--preload LIB] [--reps N]
                      [--only loop,process,calls] [--quick]

--unitrace may be given more than once (several builds side by side); each build
runs in its default mode and with --chrome-call-logging --chrome-kernel-logging.
--pci-shim: unitrace (2.0.1) aborts unless zeDevicePciGetPropertiesExt succeeds,
and that call belongs to an optional extension the simulated device does not offer;
this builds a small LD_PRELOAD shim (PCI_SHIM below, with cc) that answers it with a
zero PCI address when the loader says unsupported, for unitrace's runs only.
--preload LIB: any other library for unitrace's runs only.
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # leave nothing in the checkout
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench import BIN, LIB, ZE_SIM, read_trailer  # noqa: E402

PCI_SHIM = r"""
#include <dlfcn.h>
#include <string.h>
#include <level_zero/ze_api.h>
/* Called once per device at unitrace's start, never per launch. */
ze_result_t zeDevicePciGetPropertiesExt(ze_device_handle_t d, ze_pci_ext_properties_t *p)
{
	ze_result_t (*next)(ze_device_handle_t, ze_pci_ext_properties_t *) =
		(ze_result_t (*)(ze_device_handle_t, ze_pci_ext_properties_t *))
		dlsym(RTLD_NEXT, "zeDevicePciGetPropertiesExt");
	ze_result_t r = next ? next(d, p) : ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;

	if (r != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
		return r;
	memset(&p->address, 0, sizeof(p->address));
	memset(&p->maxSpeed, 0, sizeof(p->maxSpeed));
	return ZE_RESULT_SUCCESS;
}
"""

UNITRACE_MODES = {
    "": [],  # its default: host API and kernel time summaries on stderr
    "-chrome": ["--chrome-call-logging", "--chrome-kernel-logging"],
}


def bench_line(text):
    m = re.search(r"^bench=.*$", text, re.M)
    if not m:
        raise SystemExit(f"no bench= line in:\n{text[-2000:]}")
    return {k: v for k, v in (x.split("=", 1) for x in m.group(0).split())}


def count_in_file(path, needle):
    n, tail = 0, b""
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(1 << 22)
            if not chunk:
                return n
            buf = tail + chunk
            n += buf.count(needle)
            tail = buf[-(len(needle) - 1):]  # too short to hold a whole needle


class Runner:
    def __init__(self, args):
        self.args = args
        self.unitrace = {}
        for i, u in enumerate(args.unitrace or ["unitrace"]):
            label, path = u.split("=", 1) if "=" in u else (f"unitrace{i or ''}", u)
            if "-" in label:
                raise SystemExit(f"--unitrace {u}: a label without '-', please")
            if not shutil.which(path):
                raise SystemExit(f"--unitrace {u}: no executable {path} (build it as the "
                                 "README's Overhead section says)")
            self.unitrace[label] = path
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="unitrace-compare-"))
        self.work = self.tmp / "run"
        self.work.mkdir()
        self.preload = [args.preload] if args.preload else []
        if args.pci_shim:
            src, lib = self.tmp / "pci_shim.c", self.tmp / "libpci_shim.so"
            src.write_text(PCI_SHIM)
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", lib, src, "-ldl"],
                           check=True)
            self.preload.insert(0, str(lib))

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self, extra=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GPUTRACE_", "UNITRACE_")) and k != "LD_PRELOAD"}
        env["ZE_ENABLE_ALT_DRIVERS"] = str(ZE_SIM)
        env.update(extra or {})
        return env

    def run(self, tool, cmd):
        """One run of cmd under tool; (bench= dict, wall s, lost, kernels seen or None)."""
        for old in self.work.iterdir():
            old.unlink()
        cmd = [str(c) for c in cmd]
        extra = {}
        if tool.startswith("gputrace"):
            extra = {"LD_PRELOAD": str(LIB), "GPUTRACE_SUMMARY": "0",
                     "GPUTRACE_OUTPUT": str(self.work / "trace.json")}
            if tool == "gputrace-256M":
                extra["GPUTRACE_BUFFER_KB"] = "262144"
            elif tool == "gputrace-lossless":
                extra["GPUTRACE_LOSSLESS"] = "1"
        elif tool != "untraced":
            label, mode = tool.split("-", 1) if "-" in tool else (tool, "")
            if self.preload:
                extra["LD_PRELOAD"] = ":".join(self.preload)
            cmd = [self.unitrace[label]] + UNITRACE_MODES[mode and "-" + mode] + cmd
        t = time.monotonic()
        p = subprocess.run(cmd, env=self.env(extra), cwd=self.work, capture_output=True,
                           text=True, timeout=600)
        wall = time.monotonic() - t
        if p.returncode:
            hint = ("\n(unitrace needs zeDevicePciGetPropertiesExt: try --pci-shim)"
                    if "EnumerateAndSetupDevices" in p.stderr else "")
            raise SystemExit(f"{tool}: {' '.join(cmd)} exited {p.returncode}:\n"
                             f"{p.stderr[-3000:]}{hint}")
        res, lost, kernels = bench_line(p.stdout), 0, None
        if tool.startswith("gputrace"):
            lost = read_trailer(self.work / "trace.json")[0].get("events_lost", 0)
        elif tool == "untraced":
            pass
        elif not tool.endswith("-chrome"):
            m = re.search(r"^\s*bench_kernel,\s*(\d+),", p.stderr, re.M)
            kernels = int(m.group(1)) if m else 0
        else:
            out = list(self.work.glob("*.json"))
            kernels = count_in_file(out[0], b'"cat": "gpu_op"') if out else 0
        return res, wall, lost, kernels

    def compare(self, name, cmd, tools, expect_kernels):
        best = {t: {"med_ns": [], "wall": [], "lost": 0, "kernels": []} for t in tools}
        for _ in range(self.args.reps):
            for tool in tools:
                res, wall, lost, kernels = self.run(tool, cmd)
                b = best[tool]
                b["med_ns"].append(float(res["med_ns"]))
                b["wall"].append(wall)
                b["lost"] += lost
                if kernels is not None:
                    b["kernels"].append(kernels)
        base = best["untraced"]
        print(f"\n{name}: {' '.join(str(c) for c in cmd[1:])}")
        print(f"  {'tool':22} {'in-loop ns':>11} {'added':>9} {'wall ms':>9} {'wall +/op':>10}"
              f"  lost")
        n = int(cmd[3])  # launches or calls
        for tool in tools:
            b = best[tool]
            med, wall = min(b["med_ns"]), min(b["wall"])
            added = med - min(base["med_ns"])
            per_op = (wall - min(base["wall"])) * 1e9 / n
            if tool == "untraced":
                lost = ""
            elif tool.startswith("gputrace"):
                lost = f"{b['lost']} events lost (trailer, all reps)"
            elif expect_kernels:
                ks = b["kernels"]
                lost = (f"reports none; kernels in its output per rep: {ks} of "
                        f"{expect_kernels}")
            else:
                lost = "reports none"
            print(f"  {tool:22} {med:11.1f} {added:+9.1f} {wall * 1e3:9.1f} {per_op:+10.1f}"
                  f"  {lost}")
        return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unitrace", action="append",
                    help="[LABEL=]PATH of a unitrace build (repeatable; default: unitrace)")
    ap.add_argument("--pci-shim", action="store_true",
                    help="answer zeDevicePciGetPropertiesExt for unitrace (see above)")
    ap.add_argument("--preload", default="", help="LD_PRELOAD for unitrace's runs")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one rep")
    ap.add_argument("--only", default="loop,process,calls")
    args = ap.parse_args()
    only = args.only.split(",")
    if not only or not set(only) <= {"loop", "process", "calls"}:
        ap.error(f"--only {args.only}: a comma-separated list of loop, process, calls")
    if args.quick:
        args.reps = 1
    loop_n, proc_n, calls_n = (2048, 4096, 20000) if args.quick else (20000, 100000, 1000000)
    batch = 64
    r = Runner(args)
    tools = ["untraced", "gputrace"] + [label + mode for label in r.unitrace
                                        for mode in UNITRACE_MODES]
    try:
        print(f"load average {os.getloadavg()[0]:.1f}, reps {args.reps}")
        for kind in ("regular", "immediate"):
            # each run launches one warm-up batch before its timed ones
            if "loop" in only:
                r.compare(f"launch {kind}, in loop (row 5)",
                          [BIN / "bench_ze", "launch", kind, loop_n, batch, 4096, 50000],
                          tools, loop_n + batch)
            if "process" in only:
                r.compare(f"launch {kind}, whole process, back to back",
                          [BIN / "bench_ze", "launch", kind, proc_n, batch, 0],
                          tools[:2] + ["gputrace-256M", "gputrace-lossless"] + tools[2:],
                          proc_n + batch)
        if "calls" in only:
            r.compare("host call zeDriverGetApiVersion, in loop (row 1)",
                      [BIN / "bench_ze", "calls", 1, calls_n, 20000, 25000], tools, 0)
        print(f"\nload average {os.getloadavg()[0]:.1f}")
    finally:
        r.close()


if __name__ == "__main__":
    main()
