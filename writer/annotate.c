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
 * row (it starts before the row's latest) is not annotated. A zero-length
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
};

struct arow {
	uint32_t pid, tid, device;
	uint64_t last_start; /* recorded start of the row's latest span */
	bool skip;           /* the span between before() and after() is not annotated */
	unsigned n;
	/* every thread range a launch's context holds: 2 KiB a row that has
	 * annotated work */
	struct open_ann a[RCTX_MAX];
};

static struct arow *arow(uint32_t track, bool create)
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
	if (!W.arows[track] && create)
		W.arows[track] = calloc(1, sizeof(struct arow));
	return W.arows[track];
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

void annotate__before(uint32_t track, uint32_t pid, uint32_t tid, uint64_t start,
		      const struct rctx *ctx)
{
	unsigned nt = ctx ? ctx->nthread : 0, common = 0;
	struct urange *const *th = ctx ? ctx->r + (ctx->n - ctx->nthread) : NULL;
	struct arow *row = arow(track, nt > 0);

	if (!row)
		return;
	row->skip = row->n && start < row->last_start;
	if (row->skip)
		return;
	row->last_start = start;
	while (common < row->n && common < nt && row->a[common].r == th[common])
		common++;
	close_from(row, common);
	if (nt > common) {
		const struct gt_row *r = registry__track(track);

		row->pid = pid;
		row->tid = tid;
		row->device = r ? r->device : 0;
	}
	for (unsigned k = common; k < nt; k++) {
		uint64_t ts = place__parent(pid, tid, start, nt - k);

		ranges__urange_get(th[k]);
		row->a[k] = (struct open_ann){ .r = th[k], .ts = ts, .end = ts, .spans = 0 };
	}
	row->n = nt > common ? nt : common;
}

void annotate__after(uint32_t track, struct placed p, bool arrow)
{
	struct arow *row = arow(track, false);
	/* an arrow end is never on the annotation's boundary: a zero-length
	 * span's point is its end (place.c keeps the next slice 1 ns away) */
	uint64_t end = p.ts + p.dur > p.point || !arrow ? p.ts + p.dur : p.point + 1;

	if (!row || row->skip)
		return;
	for (unsigned k = 0; k < row->n; k++) {
		if (end > row->a[k].end)
			row->a[k].end = end;
		row->a[k].spans++;
	}
}

void annotate__close_all(void)
{
	for (size_t t = 0; t < W.narows; t++)
		if (W.arows[t])
			close_from(W.arows[t], 0);
}
