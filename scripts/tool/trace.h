/* SPDX-License-Identifier: MIT */
/*
 * Reading one trace file ({"traceEvents":[...], "gputrace":{...}, ...} or a
 * bare array, plain or gzip'ed) as a stream: every event and the top-level
 * "gputrace" object are handed to callbacks as raw JSON bytes, whatever
 * the order of the keys. Memory use is one event.
 */
#ifndef GPUTRACE_TOOL_TRACE_H
#define GPUTRACE_TOOL_TRACE_H

#include <stddef.h>
#include <stdbool.h>

struct trace_ops {
	void *ctx;
	/* One element of traceEvents; nonzero stops the scan. */
	int (*event)(void *ctx, const char *v, const char *e);
	/* The top-level "gputrace" object. */
	int (*meta)(void *ctx, const char *v, const char *e);
	/* The top-level "distributedInfo" object (Kineto's, before the events:
	 * the rank of a file cut before its "gputrace" trailer). */
	int (*dist)(void *ctx, const char *v, const char *e);
	/* a second pass over the file: its warnings (cut short, no events) said once */
	bool quiet;
	/* a watchdog report (TRACE.watchdog.json, beside traces a glob takes) is
	 * TRACE_SKIPPED with a note, not an error */
	bool skip_reports;
};

enum trace_scan_result {
	TRACE_OK = 0,
	TRACE_TRUNCATED = 1, /* cut short: everything before the cut was delivered */
	TRACE_ERROR = -1,    /* not readable as a trace; message printed */
	TRACE_SKIPPED = 2,   /* a watchdog report, with skip_reports; note printed */
};

/* Message lines are prefixed with `who` ("gputrace merge"). */
int trace__scan(const char *who, const char *path, const struct trace_ops *ops);

/* A merge of big traces takes minutes: Ctrl-C (or TERM, HUP, QUIT) must stop
 * it, and leave no half-written file. trace__catch_stop: from now on these
 * signals set trace__stop_signal (and are unblocked) instead of ending the
 * process; a scan then stops at its next event, TRACE_ERROR with no message,
 * and its caller cleans up, says so, and ends by the signal:
 * trace__die_by(trace__stop_signal). trace__die_by: flushed, no core, dies
 * by sig (its default action, unblocked), else exits 128 + sig. */
#include <signal.h>
extern volatile sig_atomic_t trace__stop_signal;
void trace__catch_stop(void);
_Noreturn void trace__die_by(int sig);
const char *trace__stop_name(void); /* "SIGINT", ... */

#endif
