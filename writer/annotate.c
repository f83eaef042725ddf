/* SPDX-License-Identifier: MIT */
/*
 * gpu_user_annotation spans (Kineto's category and layout): on each device
 * row, a span per thread range covering the device work its launches
 * caused there, from the first span's start to the last one's end, nested
 * around them as the ranges nest.
 *
 * A row keeps the annotations open over the work written so far, like a
 * stack. Each device span names its launch's thread ranges, outermost
 * first: the annotations it shares with the row's stack stay open and
 * grow to cover it, those it does not are written (they are over on this
 * row), those it adds are opened at its start. So annotations on a row
 * nest by construction; one whose range's work is interleaved with other
 * work on the row is written once per run of its work.
 *
 * An annotation is written after its children, once its end is known, so
 * where it starts with its first span it opens 1 ns before it, or where
 * the row has no room (an end there) the span starts 1 ns after it (place.c,
 * place__parent): every viewer then finds the kernel, not the annotation,
 * innermost at the kernel's arrow end. Work that arrives out of order on a
 * row (it starts before the row's latest: CUPTI hands over a thread's records
 * as the thread ends, before those of threads that launched earlier) is
 * annotated among itself, a stack of its own while it comes in order, the
 * open ones left as they are; each such annotation is written only where it
 * nests with the row's others (late_nests), else left out. A zero-length
 * span's arrow end is its end: an annotation ending there ends 1 ns later,
 * so the arrow end is strictly inside it. What is still open when the
 * process ends is written then.
 */
#include <stdlib.h>
#include <string.h>

#include "inject/registry.h"
#include "internal.h"

struct open_ann {
	struct urange *r;
	uint64_t ts, end; /* as written: ts from place__parent, end of its last span */
	uint32_t spans;
	/* a late run's: its first span's start and its last one's end, as placed,
	 * whether one of them had no length (its end not told from its start), and
	 * the end of what its sequence wrote before it opened */
	uint64_t first_ts, last_end, after;
	bool zero;
};

struct arow {
	uint32_t pid, tid, device;
	uint64_t last_start; /* recorded start of the row's latest span */
	bool any;            /* a span was written in order: last_start is its */
	bool skip;           /* the span between before() and after() is late */
	unsigned n;
	/* every thread range a launch's context holds: 2 KiB a row that has
	 * annotated work */
	struct open_ann a[RCTX_MAX];
	/* Late work, annotated among itself while it comes in order (a sequence,
	 * as place.c's late lane places it): its open annotations, its latest
	 * recorded start, the earliest ts and latest end it wrote */
	bool in_late;
	unsigned ln;
	uint64_t late_last, late_min, late_end;
	/* the earliest ts of the row's other annotations: in order, open or
	 * written, and those of the late sequences before */
	uint64_t floor;
	struct open_ann la[RCTX_MAX];
};

static __attribute__((noinline)) struct arow *arow_slow(uint32_t track, bool create)
{
	if (track >= W.narows) {
		size_t n = W.narows ? W.narows : 64;
		struct arow **a;

		if (!create)
			return NULL;
		while (n <= track)
			n *= 2;
		a = realloc(W.arows, n * sizeof(*a));
		if (!a)
			return NULL;
		memset(a + W.narows, 0, (n - W.narows) * sizeof(*a));
		W.arows = a;
		W.narows = n;
	}
	if (!W.arows[track] && create && (W.arows[track] = calloc(1, sizeof(struct arow))))
		W.arows[track]->floor = W.arows[track]->late_min = UINT64_MAX;
	return W.arows[track];
}

/* (every device slice looks its row up twice: the common case inline) */
static inline struct arow *arow(uint32_t track, bool create)
{
	if (gt_likely(track < W.narows && W.arows[track]))
		return W.arows[track];
	return arow_slow(track, create);
}

static void close_one(struct arow *row, struct open_ann *a)
{
	events__annotation(row->pid, row->tid, row->device, a->ts, a->end, ranges__name(a->r),
			   a->spans, ranges__tid(a->r));
	ranges__urange_put(a->r);
	a->r = NULL;
}

static void close_from(struct arow *row, unsigned level)
{
	while (row->n > level)
		close_one(row, &row->a[--row->n]);
}

/* Beyond this, no other slice's annotations reach: each opens at most 1 ns a level
 * before its first slice (RCTX_MAX levels), and ends at most 1 ns after its last. */
#define LATE_MARGIN (RCTX_MAX + 2)

/*
 * A late run's annotation nests with every other of its row (viewers drop or misdraw
 * slices that cross) where it ends before all those not of its sequence, opens after
 * those of its sequence written before it, and no slice ends where it opens; or, around
 * one span alone, where no other slice of the row comes within LATE_MARGIN ns of it
 * (inside the run of an annotation, or between two).
 */
static bool late_nests(const struct arow *row, const struct open_ann *a)
{
	if (!a->spans || a->zero || a->ts >= a->first_ts)
		return false;
	if (a->end <= row->floor && a->ts >= a->after &&
	    place__clear(row->pid, row->tid, a->ts, a->first_ts, 1, 0))
		return true;
	return a->spans == 1 && a->first_ts >= LATE_MARGIN &&
	       place__clear(row->pid, row->tid, a->first_ts - LATE_MARGIN, a->first_ts,
			    a->last_end, a->last_end + LATE_MARGIN);
}

static void close_late(struct arow *row, unsigned level)
{
	while (row->ln > level) {
		struct open_ann *a = &row->la[--row->ln];

		if (late_nests(row, a)) {
			events__annotation(row->pid, row->tid, row->device, a->ts, a->end,
					   ranges__name(a->r), a->spans, ranges__tid(a->r));
			if (a->ts < row->late_min)
				row->late_min = a->ts;
			if (a->end > row->late_end)
				row->late_end = a->end;
		}
		ranges__urange_put(a->r);
		a->r = NULL;
	}
}

/* The late sequence is over (work earlier than its latest, or in order again): what
 * it wrote counts among the others. */
static void end_late(struct arow *row)
{
	if (!row->in_late)
		return;
	close_late(row, 0);
	if (row->late_min < row->floor)
		row->floor = row->late_min;
	row->late_min = UINT64_MAX;
	row->late_end = 0;
	row->in_late = false;
}

static unsigned common_levels(const struct open_ann *a, unsigned n, struct urange *const *th,
			      unsigned nt)
{
	unsigned common = 0;

	while (common < n && common < nt && a[common].r == th[common])
		common++;
	return common;
}

/* Work that starts before the row's latest: annotated among the late work, a run
 * while it comes in order (as place.c's late lane places it), each annotation
 * written once it is over if it nests (late_nests), else left out. */
static void late_before(struct arow *row, uint64_t start, struct urange *const *th,
			unsigned nt)
{
	unsigned common;

	if (row->in_late && start < row->late_last)
		end_late(row);
	row->in_late = true;
	row->late_last = start;
	common = common_levels(row->la, row->ln, th, nt);
	close_late(row, common);
	for (unsigned k = common; k < nt; k++) {
		ranges__urange_get(th[k]);
		row->la[k] = (struct open_ann){ .r = th[k], .after = row->late_end };
	}
	row->ln = nt > common ? nt : common;
}

static void late_after(struct arow *row, struct placed p, uint64_t end)
{
	for (unsigned k = 0; k < row->ln; k++) {
		struct open_ann *a = &row->la[k];

		if (!a->spans) {
			/* opened 1 ns a level before its first span */
			a->ts = p.ts >= row->ln - k ? p.ts - (row->ln - k) : 0;
			a->first_ts = p.ts;
			a->zero = !p.dur;
		}
		a->zero |= !p.dur;
		a->end = end > a->end ? end : a->end;
		a->last_end = p.ts + p.dur;
		a->spans++;
	}
}

void annotate__before(uint32_t track, uint32_t pid, uint32_t tid, uint64_t start,
		      const struct rctx *ctx)
{
	unsigned nt = ctx ? ctx->nthread : 0, common = 0;
	struct urange *const *th = ctx ? ctx->r + (ctx->n - ctx->nthread) : NULL;
	/* every device row's order is followed, its work without ranges too: ranged
	 * work written behind it is late (annotated in the main stack, it opened its
	 * annotations at its own start, inside it, and a run of it could cross others) */
	struct arow *row = arow(track, true);

	if (!row)
		return;
	/* Work without ranges, in order, on a row with none open (every launch of a
	 * program that has no ranges): its order followed, nothing else to do (what the
	 * general path below does then; ~40 of the drain's instructions a launch). */
	if (gt_likely(!nt && row->pid && !row->n && !row->in_late &&
		      !(row->any && start < row->last_start))) {
		row->skip = false;
		row->any = true;
		row->last_start = start;
		return;
	}
	if (!row->pid) {
		const struct gt_row *r = registry__track(track);

		row->pid = pid;
		row->tid = tid;
		row->device = r ? r->device : 0;
	}
	row->skip = row->any && start < row->last_start;
	if (row->skip) {
		late_before(row, start, th, nt);
		return;
	}
	end_late(row); /* work in order again */
	row->any = true;
	row->last_start = start;
	common = common_levels(row->a, row->n, th, nt);
	close_from(row, common);
	for (unsigned k = common; k < nt; k++) {
		uint64_t ts = place__parent(pid, tid, start, nt - k);

		ranges__urange_get(th[k]);
		row->a[k] = (struct open_ann){ .r = th[k], .ts = ts, .end = ts, .spans = 0 };
		if (ts < row->floor)
			row->floor = ts;
	}
	row->n = nt > common ? nt : common;
}

void annotate__after(uint32_t track, struct placed p, bool arrow)
{
	struct arow *row = arow(track, false);
	/* an arrow end is never on the annotation's boundary: a zero-length
	 * span's point is its end (place.c keeps the next slice 1 ns away) */
	uint64_t end = p.ts + p.dur > p.point || !arrow ? p.ts + p.dur : p.point + 1;

	if (!row)
		return;
	if (row->skip) {
		late_after(row, p, end);
		return;
	}
	for (unsigned k = 0; k < row->n; k++) {
		if (end > row->a[k].end)
			row->a[k].end = end;
		row->a[k].spans++;
	}
}

void annotate__close_all(void)
{
	for (size_t t = 0; t < W.narows; t++) {
		if (W.arows[t]) {
			end_late(W.arows[t]);
			close_from(W.arows[t], 0);
		}
	}
}
