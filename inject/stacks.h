/* SPDX-License-Identifier: MIT */
/*
 * Host call stacks of API calls (GPUTRACE_STACKS=depth).
 *
 * A wrapper calls gt_stack_capture() on its hot path (launches, or every
 * call with GPUTRACE_STACKS_ALL) and puts the id into the span's args:
 *	{ .key = GT_S_ARG_STACK, .type = GT_ARG_U64, .v.u = id }
 * The writer turns the id into "main;run_step;zeCommandListAppendLaunchKernel"
 * (outermost frame first, the called API last) with stacks__format.
 *
 * Capture: libunwind (dlopen'ed at first use, so the library has no link
 * dependency on it), our own frames skipped except the API entry point.
 * The PC arrays are interned in a fixed lock-free table: no allocation on
 * the hot path, each distinct stack stored once. Symbols are looked up on
 * the drain thread, once per address.
 */
#ifndef GPUTRACE_STACKS_H
#define GPUTRACE_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "event.h"

/* The calling thread's stack, depth gt_cfg.stacks; returns its id, or 0 when
 * stacks are off, libunwind is missing, or the table is full (counted). */
GT_HIDDEN uint64_t gt_stack_capture(void);

/* Same, with an explicit depth (1..GT_STACKS_MAX_DEPTH). */
GT_HIDDEN uint64_t stacks__capture_depth(unsigned depth);

/* A stack taken inside a vendor's callback (CUPTI's, below the API entry
 * point the program called): our frames and those of the libraries named
 * with stacks__skip_libraries are left out, and the stack ends with the
 * API's name (a string id) in their place. Same depth and results as
 * gt_stack_capture. */
GT_HIDDEN uint64_t gt_stack_capture_api(uint32_t api_name);

/* The calling thread's return addresses, innermost first, from inside a
 * signal handler of ours: async-signal-safe (no set-up, no allocation; 0
 * before stacks__init), our frames and the signal trampoline left out. */
GT_HIDDEN int stacks__backtrace_now(void **pcs, int max);
/* Intern a stack taken elsewhere (innermost first) for stacks__format;
 * its id, 0 when the table is full or missing. */
GT_HIDDEN uint64_t stacks__intern_pcs(const uintptr_t *pcs, unsigned n);

/* Cold: the loaded libraries whose file names start with one of prefixes
 * (NULL-terminated, e.g. "libcupti.so") are vendor code for
 * gt_stack_capture_api; call again when more may have been loaded. */
GT_HIDDEN void stacks__skip_libraries(const char *const *prefixes);

/* Cold path: load libunwind and set up the table now rather than at the
 * first capture. 0, or -errno (-ENOENT: no libunwind; reported once). */
GT_HIDDEN int stacks__init(void);
/* In a forked child: the parent's locks and half-stored slots let go. */
GT_HIDDEN void stacks__fork_child(void);

/* Render a stack: "outer;...;inner" (frames that do not fit are dropped
 * from the outer end, marked "..."). Returns the length written, or -1 for
 * an unknown id. Cold path (takes a lock, reads ELF files). */
GT_HIDDEN int stacks__format(uint64_t id, char *buf, size_t len);

/* Around the real dlclose (cold; the caller's own state in c): a stack
 * taken before is named from the libraries loaded then, even when a
 * library loaded later at the closed one's address has other functions
 * there; a dlclose that unloads nothing changes nothing. */
struct stacks_dlclose {
	unsigned long long subs; /* ld.so's unload count before */
	uint32_t before, after;  /* epochs */
	bool bumped;
	bool recorded; /* what was loaded was kept: the old epoch had stacks */
};
GT_HIDDEN void stacks__dlclose_begin(struct stacks_dlclose *c);
GT_HIDDEN void stacks__dlclose_end(const struct stacks_dlclose *c);

/* Stacks not recorded because the table (or its PC pool) was full, or the
 * unwinder was unavailable. */
GT_HIDDEN uint64_t stacks__dropped(void);
/* Distinct stacks recorded. */
GT_HIDDEN uint64_t stacks__count(void);

#endif
