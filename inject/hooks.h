/* SPDX-License-Identifier: MIT */
/*
 * What the life cycle (shim.c, lifecycle.c) asks of whoever writes the
 * trace, without knowing who: the writer fills one table of hooks and
 * registers it with GT_LIFECYCLE_HOOKS; the shim finds it in a linker
 * section, as it finds the backends. Only the moments of the process's
 * life go through it (start, fork, the syncs before exec and at exit):
 * events never do, they stay in the rings until the writer drains them.
 */
#ifndef GPUTRACE_HOOKS_H
#define GPUTRACE_HOOKS_H

#include <stdbool.h>
#include "event.h"

struct ring;

enum { GT_WAKE_NONE, GT_WAKE_OK, GT_WAKE_BUSY };

struct gt_lifecycle_hooks {
	/* Fresh state for this process (also in a fork child, after forget). */
	void (*init)(void);
	/* Start the writer's own thread: once, at the process's first event
	 * (gt_start_writer), never for a process that records nothing. 0 or
	 * -errno. */
	int (*start)(void);
	/* Write out everything recorded so far and wait, at most timeout_ms.
	 * final: the last time; the trace is closed afterwards. Fatal-signal
	 * handlers call it too: while the writer's thread runs, it only asks
	 * and waits on a futex. 0 when done in time, -ETIMEDOUT otherwise;
	 * -EINPROGRESS: final, stuck in the device's last read, the host's
	 * events written. */
	int (*sync)(bool final, unsigned timeout_ms);
	/* Around fork(): prepare before it (the writer's locks first, then the
	 * registry's); parent after it, in the parent and, first thing, in
	 * the child. */
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	/* In a fork child: forget the parent's file and thread without
	 * touching them. */
	void (*forget)(void);
	/* True when the calling thread is the writer's own (it cannot wait
	 * for itself). */
	bool (*is_own_thread)(void);
	/* The process's first event: it has something to record now. */
	void (*recording)(void);
	/* The flight recorder's window, written now (reason: a literal, in
	 * its trailer). Async-signal-safe: it asks, the writer's thread
	 * writes. 0, -ENOTSUP without a flight recorder, -EAGAIN before
	 * anything was recorded. */
	int (*flight_dump)(const char *reason);
	/* The calling thread's ring r has no room for its next event. True
	 * when the writer drained r at once: it does so when the caller is
	 * the thread running a drain cycle, whose backends turn a whole
	 * vendor buffer of device records into events there (a 4 MiB CUPTI
	 * buffer is more than its ring holds). Never called by others. */
	bool (*own_ring_full)(struct ring *r);
	/* A ring is past its wake mark (or full): run a cycle soon, waking the
	 * writer's thread if it sleeps. Lock-free, async-signal-safe. Returns
	 * GT_WAKE_NONE when no writer thread runs (nothing would empty a
	 * ring), GT_WAKE_BUSY while it is inside a backend's hook (which may
	 * be waiting for the caller), else GT_WAKE_OK. */
	int (*wake)(void);
	/* The writer's progress (slots handed back, checkpoints and system
	 * calls on the file done), and in *writing whether a call on the file
	 * has not returned (a write the kernel holds): for a thread that waits
	 * for another's last drain, as sync's own wait does. Lock-free,
	 * async-signal-safe. */
	uint64_t (*progress)(bool *writing);
};

/* One writer registers; the shim takes the first it finds. */
#define GT_LIFECYCLE_HOOKS(h)                                                              \
	static const struct gt_lifecycle_hooks *const gt_lifecycle_hooks_ptr_##h           \
		__attribute__((used, section("gt_lifecycle_hooks"),                        \
			       aligned(sizeof(void *)))) = &(h)

/* The registered hooks; without a writer linked in (a test of the shim
 * alone), hooks that do nothing. */
GT_HIDDEN const struct gt_lifecycle_hooks *lifecycle__hooks(void);

#endif
