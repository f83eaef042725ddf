/* SPDX-License-Identifier: MIT */
/*
 * Rows kept in an array, found by name: an index of open addressing beside
 * the array (which owns the names), at most half full. A search of the array
 * per lookup was quadratic: 32k kernel names took a diff 7.6 s, 16k devices
 * a report 4.6 s.
 */
#ifndef GPUTRACE_TOOL_NAMEIDX_H
#define GPUTRACE_TOOL_NAMEIDX_H

#include <stddef.h>

struct nameidx {
	size_t *slot; /* 1 + the row's index in the array, 0: free */
	size_t cap, n;
};

/* The name of row i of the array (ctx). */
typedef const char *nameidx_name_fn(const void *ctx, size_t i);

/* Row index of name, or -1. */
long nameidx__find(const struct nameidx *x, const char *name, nameidx_name_fn *name_of,
		   const void *ctx);
/* Row i (its name given by name_of) is in the array now: 0, or -ENOMEM. */
int nameidx__add(struct nameidx *x, size_t i, nameidx_name_fn *name_of, const void *ctx);
void nameidx__free(struct nameidx *x);

#endif
