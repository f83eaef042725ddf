/* SPDX-License-Identifier: MIT */
/*
 * A summary JSON in memory (README "Summary JSON"), read from a summary
 * file or computed from a trace, whichever the path holds: check, diff and
 * report take either. Rows of its tables are parsed into struct srow.
 */
#ifndef GPUTRACE_TOOL_SUMDOC_H
#define GPUTRACE_TOOL_SUMDOC_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"

#define SUMMARY_SCHEMA  "gputrace-summary"
#define SUMMARY_VERSION 1 /* the major version this tool reads and writes */

struct sumdoc {
	const char *path;
	bool from_trace;
	struct buf json; /* the summary object */
};

/* 0, or -1 with the reason printed (prefixed with who). */
int sumdoc__load(const char *who, const char *path, struct sumdoc *d);
void sumdoc__free(struct sumdoc *d);
struct summarized;
/* The summary of a trace already summarized (summarize__trace). */
int sumdoc__from_summarized(const char *who, const char *path, const struct summarized *r,
			    struct sumdoc *d);

/* A numeric member of the object [v, e) (a number, true/false); false if absent. */
bool jv_num(const char *v, const char *e, const char *key, double *out);
/* A member by dotted path ("totals.kernels.count"). */
bool sumdoc__get(const struct sumdoc *d, const char *path, const char **v, const char **e);
/* A number by dotted path, 0 when absent. */
double sumdoc__num(const struct sumdoc *d, const char *path);

/* The tables with rows, in the JSON's order. */
enum stab { ST_KERNELS, ST_API, ST_ANNOTATIONS, ST_COPIES, ST_DEVICES, ST_RANGES, ST_GRAPHS,
	    ST__COUNT };
extern const char *const stab__key[ST__COUNT];  /* "kernels", "api_calls", ... */

struct srow {
	char *name;         /* "name", or "kind" for copies */
	const char *v, *e;  /* the row object, inside the sumdoc's JSON */
	double count, total_ns, min_ns, max_ns, bytes, busy_ns;
};

struct stable {
	struct srow *rows;
	size_t n;
};

/* 0, or -1 if the summary has no such table (message printed). */
int sumdoc__table(const char *who, const struct sumdoc *d, enum stab which, struct stable *t);
void stable__free(struct stable *t);
/* The row named exactly name, or NULL. */
const struct srow *stable__find(const struct stable *t, const char *name);

/* The calls that failed (errors.calls), one row a call: set it->p to NULL to
 * start; false at the end (it->name and it->error then freed). */
struct serror_iter {
	const char *p, *e;
	struct buf name, error;
	uint64_t count;
};
bool sumdoc__error_next(const struct sumdoc *d, struct serror_iter *it);

#endif
