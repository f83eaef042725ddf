/* SPDX-License-Identifier: MIT */
/*
 * What the tool needs from a trace's top-level "gputrace" object (written
 * by the library's writer, or by a previous merge), and a small map keyed
 * by pid.
 */
#ifndef GPUTRACE_TOOL_META_H
#define GPUTRACE_TOOL_META_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"

#define META_MERGE_DEPTH 16 /* merges of merges followed this deep */

/* pid -> (pid, name) map, open addressing. */
struct pidmap {
	int64_t *keys;
	int64_t *vals;
	char **names;
	bool *used;
	size_t cap, n;
};

struct trace_meta {
	bool present;
	struct buf raw;        /* the whole object, as written */
	bool has_pid;
	int64_t pid;
	char *hostname;        /* NULL when absent or null */
	char *exe;
	struct buf rank;       /* raw JSON value ("0", "\"r3\""), empty when null/absent */
	bool has_anchor;
	int64_t realtime_ns;   /* anchor: CLOCK_REALTIME ... */
	int64_t clock_ns;      /* ... taken with this value of the ts clock */
	uint64_t events_lost;
	uint64_t events_recorded;
	bool merged;           /* "merged": true, a merge's output: its rows are named */
	bool flight;           /* a flight recorder's dump: events_recorded is the
				* process's running total, not the file's */
	bool window;           /* a capture window's file ("capture" not null): its lost
				* counts are its process's since it started */
	bool lossless;         /* "lossless": recorded with --lossless ... */
	uint64_t waits, wait_ns; /* ... its threads waited this often, this long */
	uint64_t incomplete;   /* traces not closed: 1 for "complete": false, a
				* merge's "incomplete" */
	uint64_t cut;          /* a merge's inputs cut short ("truncated") */
	uint64_t failed;       /* not closed because a write failed (a full disk): 1 for
				* a trace whose "end" says so, a merge's inputs that did */
	struct buf failed_why; /* that "end" of a trace of one process ("write failed: ...") */
	uint64_t flows_unmatched; /* device spans of the file without their arrow (a
				   * dump's: its process's so far) */
	uint64_t stacks_dropped; /* calls whose stack was not recorded (its process's
				  * so far: the trailer's stacks.dropped) */
	int64_t *host_pids;    /* pids of traced processes (not device rows) */
	size_t nhost_pids, host_cap;
	struct pidmap host_set; /* the same, looked up (a merged trace lists thousands) */
};

/* Parse [v, e) into m (zeroed first). False if it is not an object. */
bool meta__parse(struct trace_meta *m, const char *v, const char *e);
/* A traced process's pid into host_pids (once). */
void meta__add_host_pid(struct trace_meta *m, int64_t pid);
/* Is a span of category cat device work (kernels, copies, fills)? What tells
 * a device row from a process's where no "gputrace" object names them. */
bool meta__is_device_cat(const char *cat);
void meta__free(struct trace_meta *m);
/* The traces not closed that a file counts for: its trailer's count, or, where
 * the file was cut short (truncated) and its trailer said none, the file itself. */
static inline uint64_t meta__incomplete(const struct trace_meta *m, bool truncated)
{
	return m->incomplete ? m->incomplete : truncated;
}
/* Call fn for each member of "lost_by_reason" (key decoded). */
void meta__each_lost(const struct trace_meta *m, void (*fn)(void *ctx, const char *reason,
							    uint64_t n),
		     void *ctx);
/* Call fn for each member of "adjusted" (device times a backend corrected:
 * reason, how many, the largest correction). */
void meta__each_adjusted(const struct trace_meta *m,
			 void (*fn)(void *ctx, const char *reason, uint64_t n, uint64_t max_ns),
			 void *ctx);


/* key's slot, or -1: a lookup, which writes nothing */
long pidmap__slot(const struct pidmap *m, int64_t key);
/* key's slot, made (its value key, no name) where it has none */
long pidmap__add(struct pidmap *m, int64_t key);
bool pidmap__has(const struct pidmap *m, int64_t key);
void pidmap__free(struct pidmap *m);
/* Keys in ascending order (caller frees). */
int64_t *pidmap__sorted_keys(const struct pidmap *m);

#endif
