/* SPDX-License-Identifier: MIT */
/*
 * Pages made ahead of their first use: written by the kernel now, so that a
 * read before the first write does not map the shared zero page, which the
 * write would then copy (and flush the other CPUs' TLBs for).
 * MADV_POPULATE_WRITE leaves what the pages hold alone, but holds the address
 * space's lock for the whole call: only ThreadSanitizer builds' rings use it
 * (inject/ring.c, ring__populate, says why the others write their pages).
 */
#ifndef GPUTRACE_PAGES_H
#define GPUTRACE_PAGES_H

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* 0, or -errno: -EINVAL from a kernel before 5.14 */
static inline int gt_pages_make(void *p, size_t n)
{
	return madvise(p, n, MADV_POPULATE_WRITE) ? -errno : 0;
}

/*
 * Memory the library writes through for long (a busy thread's ring, overflow
 * segments, the drain's launch table) in 2 MiB pages where the kernel has
 * transparent huge pages ("madvise" or "always"): one fault a 2 MiB page, not
 * one per 4 KiB. A fault costs ~17 us on the KVM guests CI runs on, and 100k
 * launches took ~8800 of them (inject/pages.c says more).
 */
#define GT_HUGE_PAGE ((size_t)2 << 20)

/* An anonymous mapping of head + body bytes (page multiples) whose body from
 * `small` bytes on starts on a 2 MiB boundary, advised MADV_HUGEPAGE, and is
 * rounded up to whole 2 MiB pages; the head and the first `small` bytes of the
 * body stay in 4 KiB pages. A body too short for a 2 MiB page past `small` is
 * mapped as it is. Returns the mapping (the head's first byte) and its length
 * in *map_bytes, for munmap; NULL when mmap failed. */
void *gt_pages_map(size_t head, size_t body, size_t small, size_t *map_bytes);
/* Does gt_pages_map give such a body a 2 MiB part (on 4 KiB pages)? */
static inline int gt_pages_has_huge(size_t body, size_t small)
{
	return body >= small + GT_HUGE_PAGE;
}

/* Growable memory: malloc's while under big_from bytes, from there on a mapping in
 * 2 MiB pages (*map its length, 0 while it is malloc's; always malloc's under
 * AddressSanitizer). Returns memory of *cap bytes or more (*cap: how many it has)
 * holding the first `used` bytes of p, which is given back; NULL, p and *cap kept,
 * when out of memory. gt_grow_free(p, map) gives it back. big_from: GT_GROW_BIG,
 * or SIZE_MAX for memory whose room counts against a budget. */
#define GT_GROW_BIG ((size_t)256 << 10)
void *gt_grow(void *p, size_t used, size_t *cap, size_t *map, size_t big_from);
void gt_grow_free(void *p, size_t map);

/* n zeroed bytes of scratch, given back whole by gt_scratch_free(p, n): a mapping of
 * its own (malloc's under AddressSanitizer), never malloc's heap, which glibc keeps
 * once a freed block has raised its mmap threshold. NULL when out of memory. */
void *gt_scratch_alloc(size_t n);
void gt_scratch_free(void *p, size_t n);

#endif
