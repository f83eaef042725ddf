/* SPDX-License-Identifier: MIT */
/*
 * Times as readers compute them. ts and dur are written as microseconds
 * with three decimals, the exact nanosecond; a reader parses each into the
 * nearest double (which is ns / 1000.0: the division rounds exactly as the
 * parse does) and adds them, and the legacy viewer divides both by 1000
 * first (milliseconds). Either sum can round above the true end, and then
 * above the next slice's start: viewers see an overlap (speedscope reports
 * mis-nested frames). gt_dur_fit() gives the duration to write instead: the
 * true one, or a nanosecond or two less, so that both sums stay at or below
 * the end, hence below any slice that starts at or after it.
 * Used by the writer and by `gputrace merge`, which moves timestamps.
 */
#ifndef GPUTRACE_TIMES_H
#define GPUTRACE_TIMES_H

#include <stdint.h>

static inline uint64_t gt_dur_fit(uint64_t ts_ns, uint64_t dur_ns)
{
	double ts = (double)ts_ns / 1000.0, end = (double)(ts_ns + dur_ns) / 1000.0;

	while (dur_ns) {
		double dur = (double)dur_ns / 1000.0;

		if (ts + dur <= end && ts / 1000.0 + dur / 1000.0 <= end / 1000.0)
			break;
		dur_ns--;
	}
	return dur_ns;
}

#endif
