/* SPDX-License-Identifier: MIT */
/* Ring memory comes from mmap, not malloc: the program's allocator is not
 * ours to call from its threads' first traced call, and pages are only
 * touched as the ring fills, or by the drain thread once the thread is busy. */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "pages.h"
#include "ring.h"


struct ring *ring__new(size_t bytes, pid_t tid, uint32_t serial)
{
	size_t slots = 64, header = RING_PAGE, map_bytes;
	struct ring *r;
	void *mem;

	while (slots * sizeof(struct gt_event) < bytes && slots < (1ull << 30))
		slots <<= 1;
	/* what a quiet thread writes stays in 4 KiB pages; the rest is in 2 MiB ones */
	mem = gt_pages_map(header, slots * sizeof(struct gt_event),
			   RING_POPULATE_AFTER * sizeof(struct gt_event), &map_bytes);
	if (!mem)
		return NULL;
	_Static_assert(sizeof(struct ring) <= RING_PAGE, "the ring's header fits its page");
	r = mem;
	r->mask = slots - 1;
	r->limit = slots / RING_WAKE_DIV; /* the first refresh wakes the drain */
	r->tid = tid;
	r->serial = serial;
	r->map_bytes = map_bytes;
	r->slots = (struct gt_event *)((char *)mem + header);
	return r;
}

void ring__free(struct ring *r)
{
	if (r) {
		ring__overflow_free(r);
		munmap(r, r->map_bytes);
	}
}

/*
 * A busy thread's first lap through its ring took a page fault every 64 events on its
 * own time (160 ns per launch in make bench row 5: five slots each). The drain thread
 * takes them instead, once the thread has written RING_POPULATE_AFTER slots: a quiet
 * thread's ring stays as small as it used, and a big ring (GPUTRACE_BUFFER_KB) is faulted
 * in as it fills, RING_POPULATE_AHEAD slots ahead, not all at once.
 *
 * It writes each page: its first word, or'ed with 0, so that what the producer may have
 * written there stays. A fault takes the lock of its own mapping only (Linux 6.4 on).
 * MADV_POPULATE_WRITE held the lock of the whole address space for the call, and a
 * program's thread whose malloc moved the heap (brk), or any mmap, waited for it: calls
 * of 2-8 ms on the CI VM, in the middle of a launch. Under ThreadSanitizer it is still
 * MADV_POPULATE_WRITE: nothing orders the drain's write before the producer's later one,
 * which TSan would report.
 */
int ring__populate(struct ring *r)
{
	const uint64_t per_page = RING_PAGE / sizeof(struct gt_event);
	uint64_t cap = r->mask + 1, head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t want = head + RING_POPULATE_AHEAD;

	if (r->populated >= cap || head < RING_POPULATE_AFTER)
		return 0;
	if (want > cap)
		want = cap;
	if (want <= r->populated)
		return 0;
#if defined(__SANITIZE_THREAD__)
	{
		/* whole pages: the slots start on one (the header is a page) */
		uintptr_t from = (uintptr_t)&r->slots[r->populated & ~(per_page - 1)];
		uintptr_t to = ((uintptr_t)&r->slots[want] + RING_PAGE - 1) & ~(uintptr_t)(RING_PAGE - 1);
		int err = gt_pages_make((void *)from, to - from);

		if (err) {
			r->populated = cap;
			return err;
		}
	}
#else
	for (uint64_t s = r->populated & ~(per_page - 1); s < want; s += per_page) {
		/* written by the producer: faulted in by its own writes */
		if (s < atomic_load_explicit(&r->head, memory_order_relaxed))
			continue;
		__atomic_fetch_or((uint64_t *)&r->slots[s], 0, __ATOMIC_RELAXED);
	}
#endif
	r->populated = want;
	return 1;
}

/*
 * Where a release may start or end: a 4 KiB page's start among the first
 * RING_POPULATE_AFTER slots, past them a 2 MiB page's start (pages.c: the rest of the
 * slots lies in 2 MiB pages from there). A 2 MiB page given back in part is split into
 * 4 KiB ones, and khugepaged (every 10 s) may collapse what is left of it into a whole
 * page again: 512 pages back in memory after they were given back (check_pipeline saw
 * 549 resident once). Whole ones leave it nothing to collapse, and cost the kernel one
 * entry each to drop instead of a split and 512. By slot, so where the slots are in 4
 * KiB pages (no transparent huge pages) it gives back 2 MiB at a time all the same.
 *
 * release_page: the page slot `at` of the ring lies in: its first slot; *len its slots.
 */
static uint64_t release_page(const struct ring *r, uint64_t at, uint64_t *len)
{
	const uint64_t per_page = RING_PAGE / sizeof(struct gt_event);
	const uint64_t per_huge = GT_HUGE_PAGE / sizeof(struct gt_event);
	size_t body = (r->mask + 1) * sizeof(struct gt_event);

	if (at < RING_POPULATE_AFTER ||
	    !gt_pages_has_huge(body, RING_POPULATE_AFTER * sizeof(struct gt_event))) {
		*len = per_page;
		return at & ~(per_page - 1);
	}
	*len = per_huge;
	return at - (at - RING_POPULATE_AFTER) % per_huge;
}

static uint64_t release_floor(const struct ring *r, uint64_t s)
{
	uint64_t len, at = s & r->mask;

	return s - (at - release_page(r, at, &len));
}

static uint64_t release_ceil(const struct ring *r, uint64_t s)
{
	uint64_t len, f = release_floor(r, s), lap_end;

	if (f == s)
		return s;
	release_page(r, f & r->mask, &len);
	lap_end = (f | r->mask) + 1; /* the ring's end is a boundary: its first page follows */
	return f + len < lap_end ? f + len : lap_end;
}

/*
 * The last cycle reads a big ring's backlog while the exiting thread waits; the kernel
 * then frees its pages in exit_group, after the cycle: ~5.5 ms per 64 MiB on this KVM
 * guest (make bench row 7w: 10^6 events). Released here, on the drain thread, while the
 * output thread writes: the drain formats faster than the page cache takes the bytes, so
 * most of it is hidden (row 7w's exit, best of 16 to 40 interleaved runs in three
 * sittings: 3-4 ms less; exit_group to reaped: 4.6-6.5 ms before, 0.9 ms after).
 * Only slots not yet handed back: the producer cannot write there until the tail moves.
 * A page the producer writes again later is a fresh zero page, as on its first lap.
 */
uint64_t ring__release(struct ring *r, uint64_t from, uint64_t to)
{
	const uint64_t per_page = RING_PAGE / sizeof(struct gt_event);
	uint64_t cap = r->mask + 1, first = release_ceil(r, from), end = release_floor(r, to);
	uint64_t at, n, run;
	size_t past_slots;

	if (cap < per_page || end <= first)
		return to;
	at = first & r->mask;
	n = end - first;
	/* the slots wrap at the ring's end: two runs at most. A run to the end takes the
	 * mapping's unused rest with it: the last 2 MiB page goes back whole. */
	run = n < cap - at ? n : cap - at;
	past_slots = at + run == cap ? (size_t)((char *)r + r->map_bytes - (char *)&r->slots[cap]) : 0;
	madvise(ring__slot(r, first), run * sizeof(struct gt_event) + past_slots, MADV_DONTNEED);
	if (n > run)
		madvise(r->slots, (n - run) * sizeof(struct gt_event), MADV_DONTNEED);
	return end;
}
