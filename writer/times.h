/* SPDX-License-Identifier: MIT */
/*
 * Times as readers compute them. ts and dur are written as microseconds
 * with three decimals, the exact nanosecond; a reader parses each into the
 * nearest double (which is ns / 1000.0: the division rounds exactly as the
 * parse does) and adds them, and the legacy viewer divides both by 1000
 * first (milliseconds). Either sum can round above the true end, and then
 * above the next slice's start: viewers see an overlap (speedscope reports
 * mis-nested frames). Only slices that touch exactly can meet that: a gap
 * of 1 ns is far above a double's rounding here.
 *
 * gt_ends_after() tells whether a slice's end, as a reader adds it up, lies
 * past a nanosecond t: the writer (writer/place.c) and `gputrace merge`,
 * which moves every timestamp to a new magnitude, then start the slice
 * touching it 1 ns later.
 */
#ifndef GPUTRACE_TIMES_H
#define GPUTRACE_TIMES_H

#include <stdbool.h>
#include <stdint.h>

static inline bool gt_ends_after(uint64_t ts_ns, uint64_t dur_ns, uint64_t t_ns)
{
	double ts = (double)ts_ns / 1000.0, dur = (double)dur_ns / 1000.0;
	double t = (double)t_ns / 1000.0;

	return ts + dur > t || ts / 1000.0 + dur / 1000.0 > t / 1000.0;
}

#endif
