#!/bin/sh
# make demo: trace a sample Level Zero program on the simulated device (no
# GPU needed) and show where the trace is and what it holds.
set -eu
BUILD=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
out=${GPUTRACE_DEMO_OUT:-$top/$BUILD/demo}
# the demo's own setting, no variable of the library's: the traced program said
# "unknown variable GPUTRACE_DEMO_OUT" in the middle of the demo
unset GPUTRACE_DEMO_OUT
mkdir -p "$out"
rm -f "$out"/*.json
echo "== tracing ze_basic on the simulated Level Zero device"
ZE_ENABLE_ALT_DRIVERS="$top/$BUILD/libze_sim.so" \
	"$top/scripts/gputrace" run -o "$out/demo-%e-%p.json" -- "$top/$BUILD/test/apps/ze_basic" 3
trace=$(ls "$out"/demo-*.json | head -n 1)
echo "== wrote $trace ($(wc -c <"$trace") bytes): open it in https://ui.perfetto.dev or chrome://tracing"
python3 - "$trace" <<'PY'
import json, sys, collections
t = json.load(open(sys.argv[1]))
c = collections.Counter((e.get("ph"), e.get("cat")) for e in t["traceEvents"] if e.get("ph") != "M")
for (ph, cat), n in sorted(c.items(), key=lambda x: (str(x[0][0]), str(x[0][1]))):
    print(f"  {n:6d}  ph={ph} cat={cat}")
print("  lost events:", t["gputrace"]["events_lost"])
PY
