#!/usr/bin/python3
"""Generate backends/levelzero/api.h: the one X-macro table of every Level Zero
function the loader exports for programs (core ze*, tools zet*, sysman zes*,
loader zel*), read from the installed headers and the loader's dynamic symbols,
and of the newer loaders' functions declared in backends/levelzero/ze_newer.h;
and the table of ze_result_t's names, from ze_api.h.

    test/levelzero/gen_api.py [--loader LIB] [--include DIR] [--newer H] > backends/levelzero/api.h

Functions that need more than a host span (device tracking) are marked HOOK;
their bodies live in backends/levelzero/hooks.c. The per-table-getters
(ze*ProcAddrTable) and loader internals are not for programs: left out.
"""
import argparse
import pathlib
import re
import subprocess
import sys

NEWER = pathlib.Path(__file__).resolve().parents[2] / "backends/levelzero/ze_newer.h"
INTEL = pathlib.Path(__file__).resolve().parents[2] / "backends/levelzero/ze_intel_ext.h"

HEADERS = ["ze_api.h", "zet_api.h", "zes_api.h", "loader/ze_loader.h",
           "layers/zel_tracing_api.h", "layers/zel_tracing_register_cb.h"]

# Calls whose wrapper does more than time the call (see backends/levelzero/hooks.c).
HOOKS = {
    "zeInit",
    "zeContextDestroy",
    "zeCommandQueueCreate", "zeCommandQueueDestroy", "zeCommandQueueExecuteCommandLists",
    "zeCommandQueueSynchronize",
    "zeCommandListCreate", "zeCommandListCreateImmediate", "zeCommandListDestroy",
    "zeCommandListReset",
    "zeCommandListAppendLaunchKernel", "zeCommandListAppendLaunchCooperativeKernel",
    "zeCommandListAppendLaunchKernelIndirect",
    "zeCommandListAppendLaunchMultipleKernelsIndirect",
    "zeCommandListAppendMemoryCopy", "zeCommandListAppendMemoryCopyRegion",
    "zeCommandListAppendMemoryCopyFromContext", "zeCommandListAppendMemoryFill",
    "zeCommandListAppendImageCopy", "zeCommandListAppendImageCopyRegion",
    "zeCommandListAppendImageCopyToMemory", "zeCommandListAppendImageCopyFromMemory",
    "zeCommandListAppendImageCopyToMemoryExt", "zeCommandListAppendImageCopyFromMemoryExt",
    "zeCommandListAppendEventReset", "zeCommandListAppendBarrier",
    "zeCommandListAppendMemoryRangesBarrier", "zeCommandListAppendSignalEvent",
    "zeCommandListAppendWaitOnEvents",
    "zeEventPoolCreate", "zeEventPoolDestroy", "zeEventCreate", "zeEventDestroy",
    "zeEventHostReset", "zeEventHostSynchronize", "zeEventQueryStatus",
    "zeFenceHostSynchronize", "zeFenceQueryStatus",
    "zeKernelCreate", "zeKernelDestroy", "zeKernelSetGroupSize",
    "zeMemAllocDevice", "zeMemAllocHost", "zeMemAllocShared", "zeMemFree", "zeMemFreeExt",
    # newer loaders' (backends/levelzero/ze_newer.h)
    "zeInitDrivers", "zeCommandListHostSynchronize", "zeDeviceSynchronize",
    "zeCommandListAppendLaunchKernelWithParameters", "zeCommandListAppendLaunchKernelWithArguments",
    "zeCommandListAppendMemoryCopyWithParameters", "zeCommandListAppendMemoryFillWithParameters",
    "zeCommandListImmediateAppendCommandListsExp",
    "zeCommandListImmediateAppendCommandListsWithParameters", "zeEventCounterBasedCreate",
    "zeCommandListGetNextCommandIdExp", "zeCommandListGetNextCommandIdWithKernelsExp",
    "zeCommandListUpdateMutableCommandsExp", "zeCommandListUpdateMutableCommandSignalEventExp",
    "zeCommandListUpdateMutableCommandWaitEventsExp", "zeCommandListUpdateMutableCommandKernelsExp",
    # the driver's extension functions, and the call that hands them out
    "zeDriverGetExtensionFunctionAddress",
    "zexCounterBasedEventCreate2", "zexCommandListAppendWaitOnMemory",
    "zexCommandListAppendWaitOnMemory64", "zexCommandListAppendWriteToMemory",
}


def exported(loader):
    out = subprocess.run(["nm", "-D", "--defined-only", loader], check=True,
                         capture_output=True, text=True).stdout
    return {l.split()[-1] for l in out.splitlines() if l.strip()}


def declarations(path, marker="ZE_APIEXPORT"):
    text = open(path).read()
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    for m in re.finditer(marker + r"\s+([\w\s\*]+?)\s+ZE_APICALL\s+(\w+)\s*\(([^;]*?)\)\s*;",
                         text):
        ret, name, params = m.group(1).strip(), m.group(2), " ".join(m.group(3).split())
        plist = [p.strip() for p in params.split(",")] if params.strip() else []
        args = []
        for p in plist:
            a = re.search(r"(\w+)\s*(\[[^\]]*\])?$", p)
            if not a or p == "void":
                sys.exit(f"cannot parse parameter '{p}' of {name}")
            args.append(a.group(1))
        yield ret, name, plist, args


def results(path):
    """The names of ze_result_t's values but ZE_RESULT_SUCCESS and the enum's size."""
    text = open(path).read()
    body = re.search(r"typedef enum _ze_result_t\s*\{(.*?)\}", text, flags=re.S).group(1)
    return [n for n in re.findall(r"^\s*(ZE_RESULT_\w+)\s*=", body, flags=re.M)
            if n not in ("ZE_RESULT_SUCCESS", "ZE_RESULT_FORCE_UINT32")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loader", default="/usr/lib/x86_64-linux-gnu/libze_loader.so.1")
    ap.add_argument("--include", default="/usr/include/level_zero")
    ap.add_argument("--newer", default=str(NEWER))
    ap.add_argument("--intel", default=str(INTEL))
    o = ap.parse_args()
    syms = exported(o.loader)
    funcs = {}
    for h in HEADERS:
        for ret, name, plist, args in declarations(f"{o.include}/{h}"):
            if name in syms and not name.endswith("ProcAddrTable"):
                funcs[name] = (ret, plist, args)
    # Newer loaders' entry points this loader lacks: exported for programs that link
    # them, under a version dlsym() never returns (backends/levelzero/backend.c), so a
    # program probing with dlsym still learns the truth about its loader.
    newer = {}
    for ret, name, plist, args in declarations(o.newer):
        if name not in funcs:
            newer[name] = (ret, plist, args)
    # The driver's own functions: never exported, handed out by
    # zeDriverGetExtensionFunctionAddress (backends/levelzero/real.c).
    intel = {name: (ret, plist, args)
             for ret, name, plist, args in declarations(o.intel, "ZE_INTEL_EXT")}
    missing = HOOKS - funcs.keys() - newer.keys() - intel.keys()
    if missing:
        sys.exit(f"hooked functions not exported by the loader: {sorted(missing)}")
    print("/* SPDX-License-Identifier: MIT */")
    print("/*")
    print(" * GENERATED by test/levelzero/gen_api.py from the Level Zero headers, the")
    print(" * loader's exports and ze_newer.h: do not edit, re-run the generator.")
    print(" *")
    print(" * ZE_API(X) calls X(kind, return type, name, (parameters), (arguments)) for")
    print(f" * each of the {len(funcs) + len(newer) + len(intel)} functions, sorted by name (wrapper_for bsearches it).")
    print(" * kind PLAIN: the wrapper only times the call; HOOK: it runs ze_body_<name>;")
    print(" * NEW_PLAIN, NEW_HOOK: the same for a newer loader's function (ze_newer.h),")
    print(" * exported for programs that link it but hidden from dlsym; EXT_PLAIN,")
    print(" * EXT_HOOK: a driver's extension function (ze_intel_ext.h), never exported,")
    print(" * handed out by zeDriverGetExtensionFunctionAddress.")
    print(" */")
    print("#ifndef GPUTRACE_LEVELZERO_API_H")
    print("#define GPUTRACE_LEVELZERO_API_H")
    print()
    print("#define ZE_API_COUNT", len(funcs) + len(newer) + len(intel))
    print()
    print("#define ZE_API(X) \\")
    every = dict(funcs, **newer, **intel)
    for name in sorted(every):
        ret, plist, args = every[name]
        kind = "HOOK" if name in HOOKS else "PLAIN"
        if name in newer:
            kind = "NEW_" + kind
        elif name in intel:
            kind = "EXT_" + kind
        print(f"\tX({kind}, {ret}, {name}, ({', '.join(plist)}), ({', '.join(args)})) \\")
    print()
    print("/* ZE_RESULTS(X) calls X(name) for each ze_result_t of ze_api.h but success: the")
    print(" * \"error\" argument of a call that returned it. */")
    print("#define ZE_RESULTS(X) \\")
    for name in results(f"{o.include}/ze_api.h"):
        print(f"\tX({name}) \\")
    print()
    print("#endif")


main()
