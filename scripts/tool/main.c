// SPDX-License-Identifier: MIT
/*
 * gputrace-tool: the compiled half of the gputrace command. scripts/gputrace
 * finds it (and the library) next to itself and hands it every command:
 * run supervises a traced command (signals, exit status, one trace and one
 * summary at the end); merge, summary, check, diff and report stream traces
 * bigger than memory.
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "tool.h"

void tool__usage(FILE *f)
{
	fputs("usage: gputrace run [options] [--] CMD [ARGS...]\n"
	      "       gputrace merge -o OUT FILE...\n"
	      "       gputrace summary [--json OUT] FILE\n"
	      "       gputrace check [options] SUMMARY|TRACE CHECK...\n"
	      "       gputrace diff [options] BASE... -- NEW...\n"
	      "       gputrace report [-o OUT] TRACE\n"
	      "       gputrace metrics\n"
	      "       gputrace capture [--duration SEC | --stop | --dump] PID... | --all\n"
	      "       gputrace --help | --version\n"
	      "\n"
	      "run: runs CMD, and every process it starts, with the tracer preloaded, then\n"
	      "leaves one trace of every process that recorded anything, merged on one time\n"
	      "line, and prints one summary of them all. CMD keeps its stdin, stdout, stderr\n"
	      "and process group; signals sent to gputrace are passed on to it; gputrace exits\n"
	      "with CMD's status, or dies by its signal. Processes that make no GPU call (the\n"
	      "shells and tools of a job) leave nothing. A CMD preload cannot reach\n"
	      "(statically linked; setuid, setgid or with file capabilities) is named in one\n"
	      "line on stderr and run unchanged.\n"
	      "  -o, --output TEMPLATE   the trace; %p pid, %e program name, %h host, %r rank,\n"
	      "                          %t start time, %% a percent sign; a name ending in .gz\n"
	      "                          is compressed (default: gputrace-%e-%t.json here).\n"
	      "                          With %p: one file per process, named by the template\n"
	      "  --per-process DIR       also keep each process's own trace in DIR\n"
	      "  --backends LIST         cupti,ze,plugins, all or none (default all)\n"
	      "  --activities LIST       kinds to record: runtime,driver,kernel,memcpy,memset,\n"
	      "                          sync,annotation,counter,overhead or all\n"
	      "  --buffer-kb N           per-thread event buffer in KiB (default 4096)\n"
	      "  --overflow-mb N         memory threads with a full buffer write on into,\n"
	      "                          all together, in MiB (default 64, 0 off)\n"
	      "  --flush-ms N            how often trace files are brought up to date\n"
	      "                          (default 200)\n"
	      "  --lossless[=SEC]        a thread whose buffer is full waits for gputrace to\n"
	      "                          empty it (at most SEC seconds, 0.001 to 60, default\n"
	      "                          1; then the event is lost), so nothing is lost; the\n"
	      "                          waits are counted in the summary (also --lossless\n"
	      "                          SEC; on, off)\n"
	      "  --flight-recorder SEC|MB  keep only the last SEC seconds (30s) or MB (64MB)\n"
	      "                          of events in memory; write them on a crash, a\n"
	      "                          non-zero exit or a dump request\n"
	      "  --stacks[=DEPTH]        record the host call stack of each launch, DEPTH\n"
	      "                          frames (1 to 64, default 16; on, off; also\n"
	      "                          --stacks DEPTH)\n"
	      "  --stacks-all            call stacks for every API call (implies --stacks)\n"
	      "  --graph-trace           one event per CUDA graph launch, not one per node\n"
	      "  --plugin-path PATHS     ':'-separated plug-ins (or folders of them) to load\n"
	      "  --kineto-cycle-ms N     Kineto plug-ins hand over their events every N ms\n"
	      "                          (default: once, at exit)\n"
	      "  --start paused|running  paused: record nothing until a capture window opens\n"
	      "                          (gputrace capture, --delay)\n"
	      "  --delay SEC             open a capture window SEC seconds after each process\n"
	      "                          starts (nothing is recorded before)\n"
	      "  --duration SEC          close each window after SEC seconds (0: at the end)\n"
	      "  --capture-range R       windows are ranges the program marks: nvtx:NAME[@DOMAIN]\n"
	      "                          (each push/pop of that NVTX range) or cudaProfilerApi\n"
	      "                          (cudaProfilerStart/Stop; ITT __itt_resume/__itt_pause)\n"
	      "  --capture-count N       record N ranges (default 1; 0 every one), then trace\n"
	      "                          nothing more; the program runs on\n"
	      "  --capture-signal SIG    gputrace capture's signal: RTMIN+N, RTMAX-N, USR1, USR2,\n"
	      "                          a number, or off (default RTMIN+7)\n"
	      "  --no-cupti              do not use CUPTI (kernels and copies are timed\n"
	      "                          with CUDA events instead)\n"
	      "  --no-summary            no summary on stderr (one line if events were lost)\n"
	      "  --summary-json FILE     also write the run's summary as JSON to FILE (a\n"
	      "                          template as -o; %p is gputrace's own pid)\n"
	      "  --log LEVEL             error, warn, info or debug (gputrace's own messages)\n"
	      "  --metrics LIST          hardware metrics: metric groups or metric names (see\n"
	      "                          gputrace metrics); default: the basic compute group\n"
	      "  --metrics-mode MODE     time (counter tracks, sampled), kernel (per-kernel\n"
	      "                          args), nvtx (per NVTX push/pop range, CUDA) or off;\n"
	      "                          --metrics or --metrics-hz alone: time\n"
	      "  --metrics-hz N          samples per second in time mode (default 1000)\n"
	      "  --telemetry             device telemetry (clocks, power, temperature, memory,\n"
	      "                          utilization) as counter tracks\n"
	      "  --telemetry-hz N        telemetry samples per second (default 10; implies\n"
	      "                          --telemetry)\n"
	      "  --watchdog SEC          a thread blocked in a device wait, or device work not\n"
	      "                          finished, for over SEC seconds: write a hang report\n"
	      "                          (TRACE.watchdog.json: calls, host stacks, pending\n"
	      "                          work) and say so on stderr; the program runs on\n"
	      "  --check EXPR            after CMD, check the run's summary (see check below);\n"
	      "                          repeatable. A malformed check stops before CMD runs\n"
	      "  --checks FILE           checks from FILE, one per line ('#' comments)\n"
	      "  --junit FILE            with checks: a JUnit XML report of them\n"
	      "  --markdown FILE         with checks: a Markdown report of them\n"
	      "  With checks, the exit status is CMD's when CMD fails (or dies by a signal);\n"
	      "  when CMD succeeds: 0 checks pass, 3 a check failed, 4 the checks could not\n"
	      "  be evaluated (a name that matches nothing).\n"
	      "\n"
	      "merge: joins traces (.json or .json.gz, merged or not) into OUT on one time line.\n"
	      "summary: prints the summary table of a trace; --json OUT writes it as JSON.\n"
	      "check: evaluates checks such as 'device.kernels >= 1', 'lost == 0',\n"
	      "  'kernel[\"gemm*\"].total <= 25ms' over a summary JSON or a trace; one PASS or\n"
	      "  FAIL line each; exit 0 all pass, 1 one failed, 2 a check that cannot be\n"
	      "  evaluated. --junit FILE, --markdown FILE write reports (gputrace check -h).\n"
	      "diff: compares base runs with new runs per kernel, API call and copy kind;\n"
	      "  --fail-on 'time > +10%' (and others) exit 1 when a rule breaks; --json,\n"
	      "  --markdown FILE, --junit FILE (gputrace diff -h).\n"
	      "report: writes one self-contained HTML page of a trace (gputrace report -h).\n"
	      "metrics: lists the metric groups, metrics and telemetry of this machine's GPUs.\n"
	      "capture: opens a capture window in traced processes of yours (started with\n"
	      "  --start paused or --delay): PID... or --all of them; --duration SEC closes\n"
	      "  it after SEC seconds (its file is then complete), --stop ends it now;\n"
	      "  --dump has a flight recorder (--flight-recorder) write its window.\n"
	      "\n"
	      "The library is found through GPUTRACE_LIB, else next to this command\n"
	      "(../build/libgputrace.so in a checkout, ../lib/libgputrace.so installed).\n",
	      f);
}

/* A command whose output is stdout: output lost (a full disk, a closed pipe
 * past SIGPIPE) is said, and is the command's error status, never success. */
static int written(const char *cmd, int st, int error_status)
{
	int err = out__close(stdout);

	if (!err || st == error_status)
		return st;
	fprintf(stderr, "gputrace %s: cannot write to stdout: %s\n", cmd, strerror(-err));
	return error_status;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		tool__usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "merge"))
		return cmd_merge(argc - 1, argv + 1);
	if (!strcmp(argv[1], "summary"))
		return written("summary", cmd_summary(argc - 1, argv + 1), 1);
	if (!strcmp(argv[1], "check"))
		return written("check", cmd_check(argc - 1, argv + 1), 2);
	if (!strcmp(argv[1], "diff"))
		return written("diff", cmd_diff(argc - 1, argv + 1), 2);
	if (!strcmp(argv[1], "report"))
		return written("report", cmd_report(argc - 1, argv + 1), 1);
	if (!strcmp(argv[1], "reach"))
		return cmd_reach(argc - 1, argv + 1);
	if (!strcmp(argv[1], "metrics"))
		return written("metrics", cmd_metrics(argc - 1, argv + 1), 1);
	if (!strcmp(argv[1], "capture"))
		return cmd_capture(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version")) {
		printf("gputrace-tool %s\n", GPUTRACE_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		tool__usage(stdout);
		return 0;
	}
	fprintf(stderr, "gputrace: unknown command '%s' (run, merge, summary, check, diff, "
			"report, metrics or capture)\n", argv[1]);
	fprintf(stderr, "Try 'gputrace --help'.\n");
	return 2;
}
