/* SPDX-License-Identifier: MIT */
/*
 * The summary: top kernels, API calls, copies, device busy time, lost
 * events. One aggregator serves both the in-process summary at exit (fed
 * by the writer, event by event) and `gputrace summary FILE` (fed by a
 * JSON reader), so both print the same numbers the same way.
 */
#ifndef GPUTRACE_SUMMARY_H
#define GPUTRACE_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

struct summary;

/* One span as the trace shows it. Strings are borrowed for the call. */
struct summary_span {
	const char *cat;       /* "kernel", "gpu_memcpy", "ze_api", ... */
	const char *name;
	uint64_t start_ns;
	uint64_t dur_ns;
	uint64_t bytes;        /* copies and fills; 0 if unknown */
	const char *copy_kind; /* "HtoD", "DtoH", ...: the "kind" arg of copies, or NULL */
	const char *device;    /* device row name for device spans, NULL for host spans */
};

struct summary *summary__new(void);
void summary__free(struct summary *s);
void summary__add(struct summary *s, const struct summary_span *span);
void summary__lost(struct summary *s, const char *reason, uint64_t n);
/* The table for people (stderr at exit). */
void summary__print(struct summary *s, FILE *f, const char *trace_path, uint64_t trace_bytes);
/* The same as JSON, schema documented in README ("Summary JSON"). 0 or -errno. */
int summary__write_json(struct summary *s, const char *path, const char *trace_path,
			uint64_t trace_bytes);

#endif
