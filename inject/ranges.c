/* SPDX-License-Identifier: MIT */
/*
 * User ranges, the producer side (see ranges.h): names through a cache, the
 * begin record and the end span, and the per-thread stack of push/pop
 * ranges, which lives in the thread's ring header.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "emit.h"
#include "ranges.h"
#include "ring.h"
#include "shim.h"
#include "tables.h"
#include "hash.h"

/* Recording annotations, inside gputrace's own code or not. */
static bool annotating(void)
{
	return gt_tracing() && (gt_cfg.kinds & GT_KIND(ANNOTATION));
}

bool gt_range_recording(void)
{
	return annotating() && !gt_in_tracer;
}

/* ---- names ---- */

#define NAME_CACHE 4096
struct name_entry {
	_Atomic uint64_t hash; /* 0: free; ~0: being filled */
	_Atomic uint32_t id;
};
GT_TABLE(struct name_entry, names, NAME_CACHE);

uint32_t gt_range_str_n(const char *s, size_t len)
{
	uint64_t h;
	size_t got;

	if (!s)
		return GT_S_EMPTY;
	h = gt_fnv1a64(s, len) | 1; /* never 0 */
	if (h == ~0ull)
		h--;
	for (unsigned i = 0; i < 8; i++) {
		unsigned slot = (unsigned)((h >> 7) + i) % NAME_CACHE;
		uint64_t cur = atomic_load_explicit(&names[slot].hash, memory_order_acquire);
		uint32_t id;

		if (cur == h && (id = atomic_load_explicit(&names[slot].id, memory_order_relaxed))) {
			const char *known = gt_str_get(id, &got);
			if (known && got == len && !memcmp(known, s, len))
				return id;
		}
		if (!cur) {
			uint64_t expect = 0;
			id = gt_str_intern_n(s, len);
			if (atomic_compare_exchange_strong(&names[slot].hash, &expect, ~0ull)) {
				atomic_store_explicit(&names[slot].id, id, memory_order_relaxed);
				atomic_store_explicit(&names[slot].hash, h, memory_order_release);
			}
			return id;
		}
	}
	return gt_str_intern_n(s, len);
}

uint32_t gt_range_str(const char *s)
{
	return s ? gt_range_str_n(s, strlen(s)) : GT_S_EMPTY;
}

/* ---- records ----
 *
 * A range call writes the thread's ring under the thread's guard (event.h): a
 * signal handler's range call that interrupts a call of gputrace's on the
 * thread (a range's, a wrapper's) would write into the ring mid-write. Its
 * range is not recorded, and counted once as lost `reentrant`.
 */

/* A range refused the guard: in a handler that interrupted gputrace (counted)
 * or in gputrace's own code (not recorded, as ever). */
static void lost_reentrant(void)
{
	if (gt_guard_sp && annotating())
		gt_lost_add(GT_S_LOST_REENTRANT, 1);
}

static uint64_t emit_begin(uint32_t name, uint64_t start_ns, uint16_t flags)
{
	uint64_t id = gt_corr_next_fast();
	struct gt_event ev = { .start_ns = start_ns, .end_ns = start_ns, .corr2 = id, .name = name,
			       .cat = GT_S_CAT_USER_ANNOTATION, .type = GT_EV_RANGE_BEGIN,
			       .flags = flags };

	return gt_emit(&ev, NULL, 0) ? 0 : id;
}

uint64_t gt_range_begin(uint32_t name, uint64_t start_ns, uint16_t flags)
{
	uint64_t id;

	if (!annotating())
		return 0;
	if (!gt_guard_try()) {
		lost_reentrant();
		return 0;
	}
	id = emit_begin(name, start_ns, flags);
	gt_guard_leave();
	return id;
}

/* A range whose end record a full ring dropped (counted lost there), its
 * begin record written: the drain is told, so that it ends the range undrawn
 * (ring.h, lost_end). Under the thread's guard: a signal handler's range here
 * is refused it. */
static void note_lost_end(const struct gt_event *ev)
{
	struct ring *r = shim__thread_ring_made();
	uint32_t head, tail;

	if (!r)
		return;
	head = atomic_load_explicit(&r->lost_end_head, memory_order_relaxed);
	tail = atomic_load_explicit(&r->lost_end_tail, memory_order_acquire);
	if (head - tail >= RING_LOST_ENDS)
		return; /* drawn never ended, as before */
	r->lost_end[head % RING_LOST_ENDS] = *ev;
	atomic_store_explicit(&r->lost_end_head, head + 1, memory_order_release);
}

void gt_range_end(uint64_t id, uint64_t start_ns, uint64_t end_ns, uint32_t name, uint32_t track,
		  uint16_t flags, const struct gt_arg *args, unsigned n)
{
	struct gt_event ev = { .start_ns = start_ns, .end_ns = end_ns, .corr2 = id, .name = name,
			       .cat = GT_S_CAT_USER_ANNOTATION, .track = track,
			       .type = GT_EV_HOST_SPAN, .flags = flags | GT_EVF_RANGE };
	bool on = annotating();

	if (!on && !id)
		return;
	if (!gt_guard_try()) {
		if (id) /* its begin was written: lost, or it is drawn never ended */
			lost_reentrant();
		return;
	}
	if (on) {
		if (gt_emit(&ev, args, n) == -ENOSPC && id)
			note_lost_end(&ev);
	} else
		/* its begin was recorded (in a window that ended since): the
		 * writer still hears of its end, or it would stay open on the
		 * thread's stack in every later window (the writer writes it
		 * only where it lies inside a window) */
		gt_emit_paused_too(&ev, args, n);
	gt_guard_leave();
}

/* ---- the thread's stack ----
 *
 * One array per thread, in push order, holds the ranges of every domain (NVTX
 * domains, ITT domains: key tells them apart), so the writer sees their
 * nesting in time; each domain is a stack of its own within it (nvToolsExt.h:
 * "Each domain maintains its own nvtxRangePush and nvtxRangePop stack"): a pop
 * ends its domain's newest range, at any depth, and a level is counted among
 * its domain's ranges only.
 */

/* How many of the first n kept frames are key's. */
static int frames_of(const struct gt_range_stack *st, int n, uintptr_t key)
{
	int count = 0;

	for (int i = 0; i < n; i++)
		count += st->f[i].key == key;
	return count;
}

/* Frames past GT_RANGE_DEPTH are counted, not kept: their domain is not known,
 * so they are taken as key's (exact when one domain nests that deep). */
static int level_in_domain(const struct gt_range_stack *st, int below, uintptr_t key)
{
	int kept = below < GT_RANGE_DEPTH ? below : GT_RANGE_DEPTH;

	return frames_of(st, kept, key) + (below - kept);
}

/*
 * A handler's range call that interrupts a change of the stack leaves the
 * stack alone (busy: its push and its pop, in that handler, both find it
 * so). One that interrupts anything else keeps the stack balanced: a range
 * not recorded is pushed all the same, naming nothing, so its pop ends it,
 * not the range the interrupted code pushed.
 */
static void set_busy(struct gt_range_stack *st, int busy)
{
	atomic_signal_fence(memory_order_seq_cst);
	st->busy = busy;
	atomic_signal_fence(memory_order_seq_cst);
}

/* Whether a push now is kept, so that its pop can end it. */
static bool stack_keeps(const struct gt_range_stack *st)
{
	return !st->busy && st->depth < GT_RANGE_DEPTH;
}

static int stack_push(struct gt_range_stack *st, struct gt_range_frame f, int *nesting)
{
	int level;
	bool keep = stack_keeps(st);

	*nesting = -1;
	if (st->busy)
		return -1;
	level = level_in_domain(st, st->depth, f.key);
	set_busy(st, 1);
	if (keep)
		st->f[st->depth] = f;
	*nesting = st->depth++;
	set_busy(st, 0);
	if (*nesting >= GT_RANGE_DEPTH)
		gt_lost_add(gt_str_intern("ranges_too_deep"), 1);
	return level;
}

int gt_range_push(uintptr_t key, uint32_t name, uint32_t aux, int *nesting)
{
	struct ring *r = shim__thread_ring();
	uint64_t now = gt_clock_ns();
	int level;

	*nesting = 0;
	if (!r)
		return 0;
	/* a frame named 0 is one not recorded (its pop draws nothing): a range
	 * with no name (NVTX's registered string NULL) is named "" */
	if (!name)
		name = GT_S_EMPTY;
	if (!gt_guard_try()) {
		lost_reentrant();
		return stack_push(&r->ranges, (struct gt_range_frame){ .key = key, .aux = aux },
				  nesting);
	}
	/* a range past GT_RANGE_DEPTH is counted, not kept: its pop cannot
	 * end it, so no begin record either (one would leave it open in the
	 * trace, drawn never ended and carried by every later launch) */
	level = stack_push(&r->ranges, (struct gt_range_frame){
				   .start_ns = now, .key = key, .name = name, .aux = aux,
				   .id = annotating() && stack_keeps(&r->ranges)
					 ? emit_begin(name, now, 0) : 0,
			   }, nesting);
	gt_guard_leave();
	return level;
}

/* The newest kept frame of key, -1 when none is. */
static int newest_of(const struct gt_range_stack *st, uintptr_t key)
{
	int i = (st->depth < GT_RANGE_DEPTH ? st->depth : GT_RANGE_DEPTH) - 1;

	while (i >= 0 && st->f[i].key != key)
		i--;
	return i;
}

static int stack_pop(struct gt_range_stack *st, uintptr_t key, struct gt_range_frame *out,
		     int *nesting, uint16_t *end_flags)
{
	int i;

	if (st->depth <= 0 || st->busy)
		return -1;
	if (st->depth > GT_RANGE_DEPTH) { /* the newest is one counted, not kept */
		*nesting = st->depth - 1;
		set_busy(st, 1);
		st->depth--;
		set_busy(st, 0);
		return level_in_domain(st, st->depth, key);
	}
	i = newest_of(st, key);
	if (i < 0)
		return -1; /* none of its domain is open: it ends nothing */
	*out = st->f[i];
	*nesting = i;
	/* newer ranges of other domains are still open: it crosses them, and
	 * is drawn where ranges need not nest (a lane) */
	if (i < st->depth - 1)
		*end_flags = GT_EVF_BY_ID;
	set_busy(st, 1);
	st->depth--;
	memmove(&st->f[i], &st->f[i + 1], (size_t)(st->depth - i) * sizeof(st->f[0]));
	set_busy(st, 0);
	return frames_of(st, i, key);
}

int gt_range_pop(uintptr_t key, struct gt_range_frame *out, int *nesting, uint16_t *end_flags)
{
	struct ring *r = shim__thread_ring();
	bool guarded;
	int level;

	*out = (struct gt_range_frame){ 0 };
	*nesting = -1;
	*end_flags = 0;
	if (!r)
		return -1;
	/* held while the stack changes: a handler's push then is refused
	 * before it writes a begin, not after */
	guarded = gt_guard_try();
	level = stack_pop(&r->ranges, key, out, nesting, end_flags);
	if (guarded)
		gt_guard_leave();
	return level;
}

/* The fork child's thread: its ranges go on in the child's first ring,
 * their begin records written again (the parent's are in the parent's
 * trace). */
static struct gt_range_stack carried;
/* carried holds a stack: a fork child of a thread with no ring has none to
 * clear, and writes no page of its 1 KiB */
static bool carrying GT_STARTUP_STATE;

GT_FORK_CODE void gt_range_fork_carry(const struct ring *r)
{
	if (!r && !carrying)
		return;
	carried = r ? r->ranges : (struct gt_range_stack){ 0 };
	carrying = r != NULL;
}

void gt_range_fork_adopt(struct ring *r)
{
	if (!carrying || !carried.depth)
		return;
	r->ranges = carried;
	carried.depth = 0;
	carrying = false;
	for (int i = 0; i < r->ranges.depth && i < GT_RANGE_DEPTH; i++) {
		struct gt_range_frame *f = &r->ranges.f[i];
		struct gt_event ev = { .start_ns = f->start_ns, .end_ns = f->start_ns,
				       .corr2 = f->id, .name = f->name,
				       .cat = GT_S_CAT_USER_ANNOTATION,
				       .type = GT_EV_RANGE_BEGIN };

		if (f->id && gt_range_recording())
			gt_emit(&ev, NULL, 0);
	}
}
