/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "event.h"
#include "rawsys.h"
#include "tables.h"

/* the pointers' section's bounds, from the linker (hidden: this library's own) */
extern void *__start_gt_tables[] GT_HIDDEN;
extern void *__stop_gt_tables[] GT_HIDDEN;

#define TABLE_ALIGN 4096 /* each on pages of its own, as a big .bss array was */

static bool mapped GT_STARTUP_STATE;

static inline size_t table_span(const void *size_held)
{
	return ((uintptr_t)size_held + TABLE_ALIGN - 1) & ~(uintptr_t)(TABLE_ALIGN - 1);
}

GT_STARTUP_CODE int gt_tables__map(void)
{
	size_t total = 0, at = 0;
	char *base;

	if (mapped)
		return 0;
	for (void **t = __start_gt_tables; t < __stop_gt_tables; t++)
		total += table_span(*t);
	if (!total) {
		mapped = true;
		return 0;
	}
	/* NORESERVE: counted as pages are touched, as .bss is. Not libc's mmap
	 * (rawsys.h), but where a sanitizer would not see the mapping made; and
	 * from the heap under AddressSanitizer, whose leak check looks for live
	 * pointers in the heap and in .data, as it did in .bss, not in a mapping
	 * (the string pool's chunks, ITT's handles) */
#if defined(__SANITIZE_ADDRESS__)
	base = aligned_alloc(TABLE_ALIGN, total);
	if (!base)
		return -ENOMEM;
	memset(base, 0, total);
#elif defined(__SANITIZE_THREAD__)
	base = mmap(NULL, total, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return -errno;
#else
	long got = gt_rawsys6(SYS_mmap, 0, (long)total, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (got < 0 && got > -4096)
		return (int)got;
	base = (char *)got;
#endif
	for (void **t = __start_gt_tables; t < __stop_gt_tables; t++) {
		size_t span = table_span(*t);

		*t = base + at;
		at += span;
	}
	mapped = true;
	return 0;
}

/* Where no start-up of ours comes first (a unit test that links some of the
 * objects): at load. In the library gt_init has mapped them by now. */
GT_STARTUP_CODE __attribute__((constructor)) static void tables_at_load(void)
{
	gt_tables__map();
}
