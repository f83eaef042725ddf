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

#endif
