// SPDX-License-Identifier: MIT
/*
 * One line per device from device ticks to host time, for metric reports.
 *
 * A (host, ticks) pair from zeDeviceGetGlobalTimestamps is good to one tick:
 * the device counter is read up to a tick after the edge it shows. Converting
 * each drain cycle's reports with that cycle's own pair (as kernels are) moves
 * every report of the cycle by up to a tick, and by the error of the reported
 * timer frequency times the cycle's length: reports a period apart, read in
 * two cycles, came out up to a tick closer or further apart than a period.
 *
 * Here every read takes a burst of pairs and keeps the tightest (the least
 * host time for its ticks under the current rate: the one read closest to its
 * tick's edge). The target line goes through the tightest pair of the first
 * burst and that of the latest: its rate is measured over the whole run, its
 * offset is the latest burst's (so a drifting clock is followed). Reports are
 * converted on a line that stays continuous from one read to the next and
 * turns toward the target by at most FIT_SLEW: no jump between cycles, and a
 * report is never more than the target's error away from it.
 */
#include <math.h>
#include <string.h>
#include "backends/levelzero/clockfit.h"
#include "inject/clock.h"

#define FIT_MIN_SPAN_NS 2000000.0 /* the measured rate is used once the pairs span this */
#define FIT_RATE_SANE   1e-3      /* a measured rate this far off the reported one is not */
#define FIT_SLEW        1e-6      /* how fast the line may turn toward the target (1 ns/ms) */

void ze_fit__init(struct ze_clock_fit *f, double ns_per_tick, uint64_t mask)
{
	memset(f, 0, sizeof(*f));
	f->nominal = ns_per_tick > 0 ? ns_per_tick : 1.0;
	f->rate = f->nominal;
	f->mask = mask ? mask : ~0ull;
}

/* ticks b after ticks a, with the counter's wraps counted by the host time
 * between them (reads further apart than a wrap stay right). */
static uint64_t fit_unwrap(const struct ze_clock_fit *f, uint64_t a_raw, uint64_t b_raw,
			   double host_ns)
{
	uint64_t d = (b_raw - a_raw) & f->mask;
	double span, wraps;

	if (f->mask == ~0ull || host_ns <= 0)
		return d;
	span = (double)f->mask + 1.0;
	wraps = gt_round((host_ns / f->rate - (double)d) / span);
	return wraps > 0 ? d + (uint64_t)wraps * (f->mask + 1) : d;
}

/* The target line at unwrapped ticks u. */
static double fit_target(const struct ze_clock_fit *f, double u)
{
	return (double)f->last_host + (u - (double)f->last_u) * f->rate;
}

/* The line reports are converted on, at unwrapped ticks u. */
static double fit_line(const struct ze_clock_fit *f, double u)
{
	return f->c0 + (u - f->u0) * f->slope;
}

void ze_fit__add(struct ze_clock_fit *f, const uint64_t *host, const uint64_t *ticks, unsigned n)
{
	unsigned best = 0;
	double best_gap = 0;
	uint64_t u;

	if (!n)
		return;
	/* the tightest of the burst: least host time for its ticks */
	for (unsigned i = 1; i < n; i++) {
		double gap = (double)(int64_t)(host[i] - host[0]) -
			     (double)(int64_t)((ticks[i] - ticks[0]) & f->mask) * f->rate;

		if (gap < best_gap) {
			best_gap = gap;
			best = i;
		}
	}
	if (!f->pairs) {
		f->first_host = f->last_host = host[best];
		f->first_u = f->last_u = 0;
		f->last_raw = ticks[best] & f->mask;
		f->pairs = n;
		f->u0 = 0;
		f->c0 = (double)host[best];
		f->slope = f->rate;
		return;
	}
	if (host[best] <= f->last_host)
		return; /* the host clock went back (another process's pairs?): keep the line */
	u = f->last_u + fit_unwrap(f, f->last_raw, ticks[best],
				   (double)(host[best] - f->last_host));
	f->last_host = host[best];
	f->last_u = u;
	f->last_raw = ticks[best] & f->mask;
	f->pairs += n;
	if ((double)(f->last_host - f->first_host) >= FIT_MIN_SPAN_NS && u > f->first_u) {
		double rate = (double)(f->last_host - f->first_host) / (double)(u - f->first_u);

		if (fabs(rate / f->nominal - 1.0) < FIT_RATE_SANE)
			f->rate = rate;
	}
	/* the conversion line: continuous at the last report converted, then
	 * toward the target at the latest pair, turning by at most FIT_SLEW */
	{
		double from = f->converted ? f->conv_u : f->u0;
		double c_from = fit_line(f, from);
		double dist = (double)u - from;
		double slope = f->rate;

		if (dist > 0) {
			double want = (fit_target(f, (double)u) - c_from) / dist;
			double max = f->rate * FIT_SLEW;

			slope = want > f->rate + max ? f->rate + max
			      : want < f->rate - max ? f->rate - max
						     : want;
		}
		f->u0 = from;
		f->c0 = c_from;
		f->slope = slope;
	}
}

uint64_t ze_fit__host(struct ze_clock_fit *f, uint64_t ticks)
{
	/* a report lies before the latest pair (it was read before the burst);
	 * one that seems to lie after it is taken as at the pair */
	uint64_t back = (f->last_raw - ticks) & f->mask;
	double u, h;

	if (back > (f->mask >> 1))
		back = 0;
	u = (double)f->last_u - (double)back;
	h = fit_line(f, u);
	if (!f->converted || u > f->conv_u) {
		f->conv_u = u;
		f->converted = true;
	}
	return h > 0 ? (uint64_t)gt_round(h) : 0;
}
