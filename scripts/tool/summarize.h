/* SPDX-License-Identifier: MIT */
/*
 * A trace's summary (writer/summary.c's aggregator fed from the file), for
 * `gputrace summary` and for the commands that also take a trace where a
 * summary JSON is expected (check, diff, report).
 */
#ifndef GPUTRACE_TOOL_SUMMARIZE_H
#define GPUTRACE_TOOL_SUMMARIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta.h"
#include "writer/summary.h"

/* Optional callbacks into the scan (all may be NULL). */
struct summarize_hooks {
	void *ctx;
	/* Pass 1: every event, before the summary looks at it; nonzero stops. */
	int (*event1)(void *ctx, const char *v, const char *e);
	/* Pass 2: each span as the summary counts it (sp->device set for device work). */
	void (*span)(void *ctx, const struct summary_span *sp);
	/* Compute the window in pass 1, so span() can place spans in it. */
	bool want_window;
};

struct summarized {
	struct summary *s;
	struct trace_meta meta; /* the trace's "gputrace" object */
	uint64_t bytes;         /* file size */
	uint64_t window_spans;  /* with want_window: the summary's window */
	uint64_t window_start_ns, window_end_ns;
};

/* 0, or -1 with the reason printed (prefixed with who). Every span is
 * attributed to its process (summary__process), merged traces' too. */
int summarize__trace(const char *who, const char *path, const struct summarize_hooks *hooks,
		     struct summarized *out);
/* n traces into one summary (gputrace run with per-process files): out's
 * meta is the last one's, bytes their sum. */
int summarize__traces(const char *who, char *const *paths, size_t n,
		      const struct summarize_hooks *hooks, struct summarized *out);
void summarized__free(struct summarized *r);
/* A trace's path as a summary JSON gives it (trace.path): absolute, the
 * same whichever command wrote it and wherever it was run. Caller frees;
 * NULL without memory. */
char *summarize__json_path(const char *path);

#endif
