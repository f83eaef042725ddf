/* SPDX-License-Identifier: MIT */
/*
 * External correlation: a plug-in that asks for it (a Kineto plug-in with
 * profilerPushCorrelationId) gets the correlation id of each launch-class
 * host call gputrace traces pushed on the calling thread around the real
 * call, so the device work it records can name the call that caused it.
 * Wrappers pay one predictable branch on a global flag when nobody asks:
 *
 *	uint32_t pushed = gt_ext_corr_push(corr);
 *	r = real(...);
 *	gt_ext_corr_pop(pushed);
 */
#ifndef GPUTRACE_EXTCORR_H
#define GPUTRACE_EXTCORR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "event.h"

struct gt_ext_corr_ops {
	/* Push id to every listener; returns the set pushed to (bit per
	 * listener, 0: none), which the matching pop gets back. */
	uint32_t (*push)(uint64_t id);
	void (*pop)(uint32_t pushed);
};

extern GT_HIDDEN _Atomic bool gt_ext_corr_on;

/* Listeners come and go (NULL: none); on is whether any listens now. */
GT_HIDDEN void gt_ext_corr_listen(const struct gt_ext_corr_ops *ops, bool on);
GT_HIDDEN uint32_t gt_ext_corr_push_slow(uint64_t id);
GT_HIDDEN void gt_ext_corr_pop_slow(uint32_t pushed);

static inline uint32_t gt_ext_corr_push(uint64_t id)
{
	if (gt_likely(!atomic_load_explicit(&gt_ext_corr_on, memory_order_relaxed)))
		return 0;
	return gt_ext_corr_push_slow(id);
}

static inline void gt_ext_corr_pop(uint32_t pushed)
{
	if (gt_unlikely(pushed))
		gt_ext_corr_pop_slow(pushed);
}

#endif
