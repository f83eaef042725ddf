/* SPDX-License-Identifier: MIT */
/*
 * Why 2 MiB pages: on the KVM guests of CI and of many clouds a page fault costs
 * ~17 us (make bench's machine). A process that made 100k launches back to back
 * took ~8800 faults for our memory alone (its overflow segments on its own thread,
 * the ring's populate and the launch table's first write on the drain thread):
 * ~150 ms, more than the program's own 50 ms. In 2 MiB pages that is a few dozen.
 *
 * Why only past `small`: a quiet thread's ring is touched in its first pages only,
 * and a 2 MiB page there would make every thread that records one call cost 2 MiB.
 * The ring keeps its first RING_POPULATE_AFTER slots in 4 KiB pages, and the rest
 * is the drain's to fault in (ring__populate) once the thread is busy.
 *
 * The kernel only maps a 2 MiB page where a whole aligned 2 MiB range lies in the
 * mapping: hence the alignment and the rounding up (the tail past the body is
 * never touched). Where transparent huge pages are "never", or not built in,
 * madvise changes nothing (or fails, ignored) and the pages are 4 KiB ones, as a
 * plain mmap's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pages.h"

/* gcc and clang 22 on define __SANITIZE_ADDRESS__, earlier clangs only the feature */
#if defined(__SANITIZE_ADDRESS__)
#define GT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GT_ASAN 1
#endif
#endif
#ifndef GT_ASAN
#define GT_ASAN 0
#endif

void *gt_pages_map(size_t head, size_t body, size_t small, size_t *map_bytes)
{
	const int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
	size_t lead = head + small, huge, len;
	char *m, *at;

	/* the cut below is in whole pages: a head and small part in whole pages only (a
	 * kernel with 16 or 64 KiB pages, whose huge pages are not 2 MiB anyway) */
	if (!gt_pages_has_huge(body, small) || lead % (size_t)sysconf(_SC_PAGESIZE)) {
		m = mmap(NULL, head + body, prot, flags, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		*map_bytes = head + body;
		return m;
	}
	huge = (body - small + GT_HUGE_PAGE - 1) & ~(GT_HUGE_PAGE - 1);
	len = lead + huge;
	/* a 2 MiB more, to cut an aligned start out of */
	m = mmap(NULL, len + GT_HUGE_PAGE, prot, flags, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	at = (char *)((((uintptr_t)m + lead + GT_HUGE_PAGE - 1) & ~(uintptr_t)(GT_HUGE_PAGE - 1)) -
		      lead);
	if (at > m)
		munmap(m, (size_t)(at - m));
	if (at + len < m + len + GT_HUGE_PAGE)
		munmap(at + len, (size_t)(m + len + GT_HUGE_PAGE - (at + len)));
	madvise(at + lead, huge, MADV_HUGEPAGE);
	*map_bytes = len;
	return at;
}

/*
 * The drain's growing buffers (its event buffers hold 1 MiB and the event that crossed
 * it at each checkpoint, so 2 MiB of room; the device work waiting for its launches):
 * from malloc, every 4 KiB of them was a page fault, ~1000 of them in a process that
 * launched 100k kernels back to back (1486 faults in all; 643 from 256 KiB on). A
 * mapping is whole 2 MiB pages: a buffer whose room counts against a budget (a flight
 * recorder's row names) stays malloc's (big_from SIZE_MAX), or it would take more
 * than it asked for.
 */
void *gt_grow(void *p, size_t used, size_t *cap, size_t *map, size_t big_from)
{
	size_t map_bytes;
	void *n;

	/* malloc's, where AddressSanitizer sees an overrun (and libFuzzer the size) */
	if (GT_ASAN || (!*map && *cap < big_from))
		return realloc(p, *cap);
	n = gt_pages_map(0, *cap < GT_HUGE_PAGE ? GT_HUGE_PAGE : *cap, 0, &map_bytes);
	if (!n)
		return NULL;
	if (used)
		memcpy(n, p, used);
	gt_grow_free(p, *map);
	*map = *cap = map_bytes;
	return n;
}

void gt_grow_free(void *p, size_t map)
{
	if (map)
		munmap(p, map);
	else
		free(p);
}

/*
 * A flight recorder's dump took ~650 KiB of scratch from malloc: glibc mapped it the
 * first time, and freeing that mapping raised its mmap threshold (and the heap's trim
 * threshold to twice it), so from the second dump on the same blocks came from the
 * drain thread's heap and ~1.2 MiB of it stayed resident for good.
 */
void *gt_scratch_alloc(size_t n)
{
	void *p;

	if (GT_ASAN)
		return calloc(1, n ? n : 1);
	p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void gt_scratch_free(void *p, size_t n)
{
	if (!p)
		return;
	if (GT_ASAN)
		free(p);
	else
		munmap(p, n ? n : 1);
}
