/* SPDX-License-Identifier: MIT */
/* A device's tick-to-host line for metric reports (clockfit.c). */
#ifndef GPUTRACE_ZE_CLOCKFIT_H
#define GPUTRACE_ZE_CLOCKFIT_H

#include <stdbool.h>
#include <stdint.h>
#include "inject/event.h"

struct ze_clock_fit {
	double nominal, rate;        /* ns per tick: reported, measured */
	uint64_t mask;               /* the counter's valid bits */
	unsigned pairs;              /* pairs taken (0: none yet) */
	uint64_t first_host, first_u; /* the first burst's tightest pair (u: unwrapped ticks) */
	uint64_t last_host, last_u, last_raw; /* the latest burst's tightest pair */
	double u0, c0, slope;        /* the line reports are converted on: c0 + (u - u0) * slope */
	double conv_u;               /* the latest report converted */
	bool converted;
};

GT_HIDDEN void ze_fit__init(struct ze_clock_fit *f, double ns_per_tick, uint64_t mask);
/* A burst of n pairs taken now: the tightest moves the line (for the reports
 * read before the burst). */
GT_HIDDEN void ze_fit__add(struct ze_clock_fit *f, const uint64_t *host, const uint64_t *ticks,
			   unsigned n);
/* Host ns of a report's ticks (masked), lying before the latest burst. */
GT_HIDDEN uint64_t ze_fit__host(struct ze_clock_fit *f, uint64_t ticks);

#endif
