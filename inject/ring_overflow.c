/* SPDX-License-Identifier: MIT */
/*
 * Overflow segments: a thread whose ring is full goes on writing, in order, into
 * segments of its own instead of dropping, while the process's budget
 * (GPUTRACE_OVERFLOW_MB) lasts. The drain reads them after the ring's older slots,
 * and the thread goes back to its ring once they are all read. The ring stays the
 * only memory of a thread the drain keeps up with; a segment is made only on the
 * thread's slow path, when its ring is full (a burst longer than the ring, or a
 * drain that is not scheduled for a while), and given back once read.
 *
 * Why not a bigger ring: a ring is written round and round, so all of it is
 * faulted in after one lap whether the drain keeps up or not (16 MiB per thread
 * for good), and its page faults fall on the program's thread. Why not a copy by
 * the drain into a buffer of its own (tried, issue 18): a drain that is not
 * scheduled copies nothing, and that is when the ring fills.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <sys/mman.h>

#include "clock.h"
#include "config.h"
#include "pages.h"
#include "ring.h"

#define SEG_WAKE_DIV  4      /* the drain is woken each quarter of a segment */
#define SEG_RELEASE_SLOTS 1024 /* read pages of the newest segment given back 64 KiB or more at a time */
#define SEG_IDLE_NS 20000000 /* a producer that wrote nothing into its overflow for this long is idle */

/* with the start-up state: a fork child zeroes them (ring__overflow_forget) */
static _Atomic uint64_t ovf_bytes GT_STARTUP_STATE, ovf_peak GT_STARTUP_STATE,
	ovf_segments GT_STARTUP_STATE;

/* What a segment of so many slots counts against the budget: its header and slots
 * (not the rest of a 2 MiB page its mapping was rounded up to) */
static size_t seg_budget_bytes(uint64_t slots)
{
	return RING_PAGE + slots * sizeof(struct gt_event);
}

static struct ring_seg *seg_new(uint64_t slots)
{
	size_t bytes = seg_budget_bytes(slots), map_bytes;
	uint64_t budget = (uint64_t)gt_cfg.overflow_mb << 20, now, peak;
	struct ring_seg *s;
	void *mem;

	now = atomic_fetch_add_explicit(&ovf_bytes, bytes, memory_order_relaxed) + bytes;
	if (now > budget) {
		atomic_fetch_sub_explicit(&ovf_bytes, bytes, memory_order_relaxed);
		return NULL;
	}
	/* the slots are faulted in as they are written, 2 MiB at a time where the kernel
	 * can: a segment is only made for a thread whose ring is full */
	mem = gt_pages_map(RING_PAGE, slots * sizeof(struct gt_event), 0, &map_bytes);
	if (!mem) {
		atomic_fetch_sub_explicit(&ovf_bytes, bytes, memory_order_relaxed);
		return NULL;
	}
	_Static_assert(sizeof(struct ring_seg) <= RING_PAGE, "the header fits its page");
	s = mem;
	s->cap = slots;
	s->map_bytes = map_bytes;
	s->slots = (struct gt_event *)((char *)mem + RING_PAGE);
	peak = atomic_load_explicit(&ovf_peak, memory_order_relaxed);
	while (now > peak && !atomic_compare_exchange_weak_explicit(&ovf_peak, &peak, now,
								     memory_order_relaxed,
								     memory_order_relaxed))
		;
	atomic_fetch_add_explicit(&ovf_segments, 1, memory_order_relaxed);
	return s;
}

static void seg_free(struct ring_seg *s)
{
	size_t bytes = seg_budget_bytes(s->cap);

	munmap(s, s->map_bytes);
	atomic_fetch_sub_explicit(&ovf_bytes, bytes, memory_order_relaxed);
}

/* The slots of r's segments: its ring's (ring__seg_slots), halved while the
 * budget would not hold two of them. A budget below one ring-sized segment
 * (the default 4 MiB ring's is 4 MiB + its header page: --overflow-mb 1 to 4)
 * would otherwise hold none, and the overflow asked for would be off. */
static uint64_t seg_slots(const struct ring *r)
{
	uint64_t slots = ring__seg_slots(r), budget = (uint64_t)gt_cfg.overflow_mb << 20;

	while (slots > RING_SEG_MIN_SLOTS && 2 * seg_budget_bytes(slots) > budget)
		slots >>= 1;
	return slots;
}

/* A segment for the producer: the spare the drain kept (its pages faulted in: a
 * thread that overflows for long writes into warm pages, not fresh ones), else a new
 * one within the budget. */
static struct ring_seg *seg_take(struct ring *r)
{
	struct ring_seg *s = atomic_exchange_explicit(&r->seg_spare, NULL, memory_order_acquire);

	if (!s)
		return seg_new(seg_slots(r));
	atomic_store_explicit(&s->head, 0, memory_order_relaxed);
	atomic_store_explicit(&s->tail, 0, memory_order_relaxed);
	atomic_store_explicit(&s->next, NULL, memory_order_relaxed);
	s->released = 0;
	s->idle_head = 0;
	s->idle_ns = 0;
	return s;
}

/* A segment read to its end and left by the producer: kept as the spare while the
 * producer still overflows (one at most), else given back. */
static void seg_retire(struct ring *r, struct ring_seg *s)
{
	struct ring_seg *none = NULL;

	if (atomic_load_explicit(&r->overflowing, memory_order_relaxed) &&
	    atomic_compare_exchange_strong_explicit(&r->seg_spare, &none, s, memory_order_release,
						    memory_order_relaxed))
		return;
	seg_free(s);
}

struct gt_event *ring__overflow_reserve(struct ring *r, unsigned nslots, bool *wake)
{
	struct ring_seg *s = r->seg_write, *n;
	uint64_t head = s ? atomic_load_explicit(&s->head, memory_order_relaxed) : 0;

	*wake = false;
	if (atomic_load_explicit(&r->overflowing, memory_order_relaxed)) {
		/* all of it read (and the ring's older slots before it): back to the ring */
		if (ring__overflow_read_all(r)) {
			atomic_store_explicit(&r->overflowing, false, memory_order_relaxed);
			/* the spare, if the drain kept one, goes back with the overflow */
			if ((n = atomic_exchange_explicit(&r->seg_spare, NULL, memory_order_acquire)))
				seg_free(n);
			return NULL;
		}
	} else if (!gt_cfg.overflow_mb) {
		return NULL;
	}
	if (!s || s->cap - head < nslots) {
		if (!(n = seg_take(r)))
			return NULL; /* no budget left: dropped (or waited for) as before */
		if (s)
			/* s is written to its end (its head published): the drain frees it once read */
			atomic_store_explicit(&s->next, n, memory_order_release);
		else
			atomic_store_explicit(&r->seg_read, n, memory_order_release);
		r->seg_write = s = n;
		head = 0;
		*wake = true;
	}
	if (!atomic_load_explicit(&r->overflowing, memory_order_relaxed)) {
		/* from here the ring's slots are older than the segment's: stored before
		 * the segment's first slot is published (release there) */
		atomic_store_explicit(&r->overflow_from,
				      atomic_load_explicit(&r->head, memory_order_relaxed),
				      memory_order_relaxed);
		atomic_store_explicit(&r->overflowing, true, memory_order_relaxed);
		r->limit = 0; /* the ring's fast path stays shut: order is kept */
		*wake = true;
	}
	/* a quarter crossed (cap a power of two: no division on this path) */
	if ((head & (s->cap / SEG_WAKE_DIV - 1)) + nslots >= s->cap / SEG_WAKE_DIV)
		*wake = true;
	return &s->slots[head];
}

uint64_t ring__overflow_readable(struct ring *r, uint64_t ring_tail, struct ring_seg **segp,
				 uint64_t *at)
{
	struct ring_seg *s = atomic_load_explicit(&r->seg_read, memory_order_acquire), *next;

	while (s) {
		uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
		uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);

		if (tail < head) {
			/* the ring's slots from before this overflow are read first */
			if (ring_tail < atomic_load_explicit(&r->overflow_from, memory_order_relaxed))
				return 0;
			*segp = s;
			*at = tail;
			return head - tail;
		}
		next = atomic_load_explicit(&s->next, memory_order_acquire);
		if (!next) {
			/* the newest: the producer may write on in it, from its head on; the
			 * whole pages read before that go back, so an overflow that is over
			 * keeps no memory (one call for all of them, not one per visit) */
			uint64_t per_page = RING_PAGE / sizeof(struct gt_event);
			uint64_t end = tail / per_page * per_page;
			/* read to its end, and the producer wrote nothing since for a while (it
			 * went idle after a burst): only its next call ends its overflow
			 * (ring__overflow_reserve), and a thread that makes none kept the
			 * spare, a ring's worth written, and the read pages of this one for
			 * good. The overflow is over for them as it is. */
			uint64_t now = gt_clock_ns();
			bool idle;

			if (s->idle_head != tail + 1) {
				s->idle_head = tail + 1;
				s->idle_ns = now;
			}
			idle = now - s->idle_ns >= SEG_IDLE_NS;
			/* a part of a 2 MiB page given back splits it: its other 4 KiB pages stay
			 * (the producer writes on into them), the read ones go */
			if (end > s->released &&
			    (end - s->released >= SEG_RELEASE_SLOTS || idle ||
			     /* the overflow is over: the rest too */
			     !atomic_load_explicit(&r->overflowing, memory_order_relaxed))) {
				madvise(&s->slots[s->released], (end - s->released) * sizeof(struct gt_event),
					MADV_DONTNEED);
				s->released = end;
			}
			/* (the producer takes the spare by exchange too: one of us has it) */
			if (idle && (next = atomic_exchange_explicit(&r->seg_spare, NULL,
								      memory_order_acquire)))
				seg_free(next);
			return 0;
		}
		/* written to its end before next was linked */
		if (atomic_load_explicit(&s->head, memory_order_acquire) != tail)
			continue;
		atomic_store_explicit(&r->seg_read, next, memory_order_release);
		seg_retire(r, s);
		s = next;
	}
	return 0;
}

void ring__overflow_consume(struct ring *r, struct ring_seg *s, uint64_t tail)
{
	/* seq_cst: ordered before the load of waiting (ring__wait_room's pair) */
	atomic_store_explicit(&s->tail, tail, memory_order_seq_cst);
	if (gt_unlikely(atomic_load_explicit(&r->waiting, memory_order_seq_cst)))
		ring__wake_waiter(r);
}

uint64_t ring__overflow_used(struct ring *r)
{
	uint64_t used = 0;

	for (struct ring_seg *s = atomic_load_explicit(&r->seg_read, memory_order_acquire); s;
	     s = atomic_load_explicit(&s->next, memory_order_acquire))
		used += atomic_load_explicit(&s->head, memory_order_acquire) -
			atomic_load_explicit(&s->tail, memory_order_relaxed);
	return used;
}

void ring__overflow_free(struct ring *r)
{
	struct ring_seg *s = atomic_load_explicit(&r->seg_read, memory_order_acquire), *next;

	for (; s; s = next) {
		next = atomic_load_explicit(&s->next, memory_order_acquire);
		seg_free(s);
	}
	if ((s = atomic_exchange_explicit(&r->seg_spare, NULL, memory_order_acquire)))
		seg_free(s);
	atomic_store_explicit(&r->seg_read, NULL, memory_order_relaxed);
	r->seg_write = NULL;
}

void ring__overflow_stats(uint64_t *now, uint64_t *peak, uint64_t *segments)
{
	*now = atomic_load_explicit(&ovf_bytes, memory_order_relaxed);
	*peak = atomic_load_explicit(&ovf_peak, memory_order_relaxed);
	*segments = atomic_load_explicit(&ovf_segments, memory_order_relaxed);
}

GT_FORK_CODE void ring__overflow_forget(void)
{
	atomic_store(&ovf_bytes, 0);
	atomic_store(&ovf_peak, 0);
	atomic_store(&ovf_segments, 0);
}
