/* SPDX-License-Identifier: MIT */
/*
 * Big zeroed tables (a backend's slots, a cache, a name pool) in one anonymous
 * mapping made at start-up, not in .bss. A process that records nothing never
 * touches them, but it paid for them where they were: with 4 MiB of .bss, a
 * process that preloads us took ~20 us longer to exit and ~13 us longer to
 * start on the bench's VM (an empty library with that much .bss does the same;
 * one that maps 4 MiB at start and leaves it untouched costs ~2 us). The
 * mapping is made before anything can use a table (gt_tables__map, the first
 * step of the start-up), its pages faulted in as each table is written, as
 * .bss's were.
 *
 * GT_TABLE(type, name, count) defines `static type *name`, indexed as the array
 * was, and registers it; sizeof(name) is the pointer's: count in a macro.
 */
#ifndef GPUTRACE_TABLES_H
#define GPUTRACE_TABLES_H

#include <stddef.h>
#include <stdint.h>

/* Each table's pointer holds the table's size in bytes until gt_tables__map
 * puts the table's address there: no list of tables beside the pointers, and
 * no relocation for the loader. The pointers lie side by side in one section
 * (the linker's __start_/__stop_ symbols bound it), on the page of .data the
 * loader writes anyway: scattered over .bss, each would be a page fault of its
 * own at start-up (~30 of them, +130 us measured). */
#define GT_TABLE_POINTER __attribute__((used, section("gt_tables"), aligned(sizeof(void *))))

#define GT_TABLE(type, name, count)                                                        \
	static type *name GT_TABLE_POINTER = (type *)(uintptr_t)(sizeof(type) * (count))

/* One that other files index too (declared `extern type *name` there) */
#define GT_TABLE_SHARED(type, name, count)                                                 \
	__attribute__((visibility("hidden"))) type *name GT_TABLE_POINTER =                \
		(type *)(uintptr_t)(sizeof(type) * (count))

/* Maps every table (once; later calls return at once): 0, or -errno where the
 * mapping failed (the tracer stays off). */
__attribute__((visibility("hidden"))) int gt_tables__map(void);

#endif
