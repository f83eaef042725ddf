// SPDX-License-Identifier: MIT
/*
 * Kineto plug-ins give times in UTC nanoseconds (CLOCK_REALTIME), the trace
 * is on CLOCK_MONOTONIC_RAW (inject/clock.h). The two drift apart (NTP
 * slews the wall clock, and may step it), so one offset taken at start
 * would misplace events of a long run: pairs are taken all along (at start,
 * every drain cycle, before every processEvents), each the tightest of a few
 * (clock, realtime, clock) reads, and a UTC time is converted through the
 * offsets of the pairs around it, interpolated (exact while the wall clock
 * slews at a steady rate; a step between two pairs is spread over them; past
 * the newest at the last two's rate), and a duration at that rate. The
 * table is bounded: when full, every other pair is dropped (the first and
 * last stay), so a run of any length keeps pairs all along, further apart as
 * it goes on. Pairs are kept at least PAIR_GAP_NS apart, but the newest
 * sample always ends the table (it stands in for the next pair until the gap
 * has passed): a time after the last pair would be converted through that
 * pair's offset alone, off by as much as the wall clock moved since (chrony
 * slews it by up to 8%: 1.6 ms in 20 ms). A time after the newest pair takes
 * a new one first, as it was read before the conversion.
 *
 * A wall clock stepped back makes times ambiguous: a time is taken as the
 * latest moment it was on the clock (the search runs from the newest pair).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>

#include "backends/plugins/kineto_internal.h"
#include "inject/clock.h"
#include "inject/tables.h"

#define PAIRS_MAX       512
#define PAIR_GAP_NS     20000000ull
#define PAIR_RENEW_NS   1000000ull /* a time past the newest pair: a new one, if older */

static pthread_mutex_t utc_lock = PTHREAD_MUTEX_INITIALIZER;
GT_TABLE(struct gt_clock_pair, pairs, PAIRS_MAX);
static unsigned npairs;
static uint64_t widest_taken; /* of every pair, the newest's stand-ins included */

static void sample_locked(void)
{
	struct gt_clock_pair now = gt_clock_pair_now();

	if (now.width_ns > widest_taken)
		widest_taken = now.width_ns;
	/* the newest stands in while it is closer than the gap to the one before */
	if (npairs >= 2 && pairs[npairs - 1].clock_ns - pairs[npairs - 2].clock_ns < PAIR_GAP_NS) {
		pairs[npairs - 1] = now;
		return;
	}
	if (npairs == PAIRS_MAX) {
		unsigned kept = 1;

		for (unsigned i = 2; i < PAIRS_MAX - 1; i += 2)
			pairs[kept++] = pairs[i];
		pairs[kept++] = pairs[PAIRS_MAX - 1];
		npairs = kept;
	}
	pairs[npairs++] = now;
}

/* Batches being converted (utc__hold): the newest pair stays as it is. */
static _Atomic unsigned held;

void utc__sample(void)
{
	pthread_mutex_lock(&utc_lock);
	/* A sample replaces the newest pair while it stands in: the drain's, taken
	 * while a batch was converted on the plug-ins' thread, moved the batch's
	 * later times by the two pairs' read error against its earlier ones (a
	 * kernel 50 us after its launch drawn 50.024 us after it, on a loaded CI
	 * machine). The batch took a pair of its own as it began. */
	if (!atomic_load(&held))
		sample_locked();
	pthread_mutex_unlock(&utc_lock);
}

void utc__hold(bool on)
{
	if (on)
		atomic_fetch_add(&held, 1);
	else
		atomic_fetch_sub(&held, 1);
}

static int64_t offset(const struct gt_clock_pair *p)
{
	return p->realtime_ns - (int64_t)p->clock_ns;
}

/* The offset at utc on the line through a and b (b later), and its slope in
 * trace ns per UTC ns. A line no steeper than the reads' error is no slew:
 * flat, so a duration given in ns stays that many ns (and no noise is
 * extrapolated); one steeper than chrony's fastest slew (8.3%) is a step:
 * spread between the pairs, flat past them. */
static int64_t line_offset(const struct gt_clock_pair *a, const struct gt_clock_pair *b,
			   int64_t utc, double *slope)
{
	int64_t moved = offset(b) - offset(a), span = b->realtime_ns - a->realtime_ns;
	double w = (double)(utc - a->realtime_ns) / (double)span;

	*slope = 1.0 - (double)moved / (double)span;
	if ((uint64_t)llabs(moved) <= (a->width_ns + b->width_ns) / 2 || *slope < 0.9 ||
	    *slope > 1.1) {
		*slope = 1.0;
		if (w > 1.0)
			return offset(b);
	}
	return offset(a) + (int64_t)(w * (double)moved);
}

int utc__to_clock(int64_t utc, uint64_t *clock_ns, double *rate)
{
	double slope = 1.0;
	int64_t off, c;
	unsigned i;

	pthread_mutex_lock(&utc_lock);
	if (!npairs || (utc > pairs[npairs - 1].realtime_ns &&
			gt_clock_ns() - pairs[npairs - 1].clock_ns > PAIR_RENEW_NS))
		sample_locked();
	for (i = npairs; i-- > 0;)
		if (pairs[i].realtime_ns <= utc)
			break;
	if (i == (unsigned)-1)
		off = offset(&pairs[0]); /* before the first pair */
	else if (i + 1 < npairs && pairs[i + 1].realtime_ns > pairs[i].realtime_ns)
		off = line_offset(&pairs[i], &pairs[i + 1], utc, &slope);
	else if (i + 1 == npairs && i && pairs[i].realtime_ns > pairs[i - 1].realtime_ns)
		off = line_offset(&pairs[i - 1], &pairs[i], utc, &slope); /* past the newest: on */
	else
		off = offset(&pairs[i]); /* the wall clock stepped back here */
	pthread_mutex_unlock(&utc_lock);
	if (__builtin_sub_overflow(utc, off, &c) || c < 0)
		return -ERANGE;
	*clock_ns = (uint64_t)c;
	if (rate)
		*rate = slope;
	return 0;
}

uint64_t utc__widest(void)
{
	uint64_t widest;

	pthread_mutex_lock(&utc_lock);
	widest = widest_taken;
	pthread_mutex_unlock(&utc_lock);
	return widest;
}

void utc__forget(void)
{
	pthread_mutex_init(&utc_lock, NULL);
	atomic_store(&held, 0);
	npairs = 0;
	widest_taken = 0;
}
