/* SPDX-License-Identifier: MIT */
/*
 * User ranges, the producer side shared by the annotation APIs (NVTX, ITT):
 * what a program says it is doing ("forward", "layer 12"), recorded so the
 * writer knows, for every launch, which ranges were open on the launching
 * thread and in the process (writer/ranges.c), and can carry them onto the
 * device work the launch caused.
 *
 * A range costs two records, only for programs that annotate: a begin
 * record (GT_EV_RANGE_BEGIN) when it opens, and its span when it ends (a
 * host span with GT_EVF_RANGE). Both carry the range's id in corr2. A
 * thread's ranges open in its own ring, in call order with its launches, so
 * the writer reads the open stack at each launch from the ring alone:
 * launches pay nothing for it.
 *
 * Both are written under the thread's guard (event.h): a signal handler's
 * range that interrupts gputrace on its thread is counted lost, not written.
 *
 * Thread ranges (push/pop, ITT tasks) end on the thread that opened them;
 * process ranges (NVTX start/end, ITT frames and overlapped tasks) may end
 * anywhere and carry GT_EVF_PROCESS.
 */
#ifndef GPUTRACE_RANGES_H
#define GPUTRACE_RANGES_H

#include <stdbool.h>
#include <stdint.h>
#include "event.h"

/* One open range of a thread's stack. key tells apart the APIs' domains
 * (each a stack of its own: a pop ends the newest range of its domain); aux is the API's own
 * (NVTX: its attribute slot). */
struct gt_range_frame {
	uint64_t start_ns;
	uint64_t id; /* 0: its begin record was not written */
	uintptr_t key;
	uint32_t name;
	uint32_t aux;
};

#define GT_RANGE_DEPTH 32

/* Kept in the thread's ring header (inject/ring.h): no TLS, no allocation. */
struct gt_range_stack {
	int depth; /* may pass GT_RANGE_DEPTH: deeper frames are counted, not kept */
	int busy;  /* being changed: a signal handler's range call leaves it alone */
	struct gt_range_frame f[GT_RANGE_DEPTH];
};

/* Recording annotations now: tracing, the "annotation" kind on, and not
 * inside gputrace's own code. */
GT_HIDDEN bool gt_range_recording(void);

/* A string id for an API's name, through a content-hashed cache: names
 * repeat (loop iterations), and after the first time take no lock. */
GT_HIDDEN uint32_t gt_range_str(const char *s);
GT_HIDDEN uint32_t gt_range_str_n(const char *s, size_t len);

/* The begin record of a range opened at start_ns by the calling thread
 * (flags: 0 or GT_EVF_PROCESS). Returns the range's id, 0 when nothing was
 * recorded. */
GT_HIDDEN uint64_t gt_range_begin(uint32_t name, uint64_t start_ns, uint16_t flags);
/* Its span from start_ns to end_ns, on row track (0: the calling thread),
 * with the API's args; id as gt_range_begin returned it. */
GT_HIDDEN void gt_range_end(uint64_t id, uint64_t start_ns, uint64_t end_ns, uint32_t name,
			    uint32_t track, uint16_t flags, const struct gt_arg *args, unsigned n);

/* Push a range on the calling thread's stack (begin record included).
 * Returns its level in its key's domain (what NVTX's push returns);
 * *nesting: its level among all the thread's ranges (GT_RANGE_DEPTH and
 * past: counted, not kept). A signal handler's range that interrupted
 * gputrace is not recorded (counted lost): pushed naming nothing, so its pop
 * gives out->name 0; or, where it interrupted a change of the stack, not
 * pushed (-1, and its pop in that handler ends nothing either). */
GT_HIDDEN int gt_range_push(uintptr_t key, uint32_t name, uint32_t aux, int *nesting);
/* Pop the newest range of key's domain, at any depth, into *out. Returns its
 * level in that domain, -1 with none of the domain open (nothing ended).
 * *nesting: as at its push; *end_flags: gt_range_end's flags (GT_EVF_BY_ID
 * when it crosses newer ranges of other domains). While ranges past
 * GT_RANGE_DEPTH are open, a pop ends the newest of them, with out->name 0:
 * it was counted, not kept. Nothing recorded ends with out->name 0 either. */
GT_HIDDEN int gt_range_pop(uintptr_t key, struct gt_range_frame *out, int *nesting,
			   uint16_t *end_flags);
/* Around fork: the forking thread's stack is carried from its ring (freed
 * in the child) into the child's first ring, begin records written again. */
struct ring;
GT_HIDDEN void gt_range_fork_carry(const struct ring *r);
GT_HIDDEN void gt_range_fork_adopt(struct ring *r);

#endif
