/* SPDX-License-Identifier: MIT */
/*
 * Hang watchdog (GPUTRACE_WATCHDOG=SEC, gputrace run --watchdog SEC).
 *
 * Device waits (zeCommandQueueSynchronize, cudaStreamSynchronize, ...) mark
 * their thread's ring while inside the real call: an entry time, the call
 * and the handle, no allocation, no lock. A small thread of ours looks at
 * the marks every few hundred ms; a thread blocked longer than SEC, or
 * device work that has not finished for SEC, gets one report
 * (<trace>.watchdog.json, watchdog.c says why JSON) with each blocked
 * thread's call, arguments and host stack, and the device work still
 * pending per queue or stream. The program is not stopped. Off: the wait
 * wrappers pay a load and a branch.
 */
#ifndef GPUTRACE_WATCHDOG_H
#define GPUTRACE_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>
#include "event.h"
#include "ring.h"

/* Set once from the configuration, before any wrapper runs; read-only after. */
extern GT_HIDDEN bool gt_watchdog_on;
/* The trace could not be written (tracing is off for good) and the watchdog
 * watches on: a user out of disk still wants the hang report. Level Zero's
 * calls keep their books as between capture windows, so that the marks and
 * the pending work stay true. Cleared by an exit (and in a fork child). */
extern GT_HIDDEN _Atomic bool gt_watchdog_alone;
/* Its thread is looking (at the marks, the device's pending work) or
 * writing a report: an exit waits for that to end (watchdog__end), not to
 * pull the drivers from under it nor cut a report short. */
extern GT_HIDDEN _Atomic bool gt_watchdog_looking;

GT_HIDDEN void watchdog__enter_slow(uint32_t call, uintptr_t handle);
GT_HIDDEN void watchdog__leave_slow(bool all);

/* Around the real call of a device wait. call: an expression giving the
 * API's string id, evaluated only when the watchdog is on. */
#define gt_wait_enter(call, handle)                                                        \
	do {                                                                               \
		if (gt_unlikely(gt_watchdog_on))                                           \
			watchdog__enter_slow((call), (uintptr_t)(handle));                 \
	} while (0)

static inline void gt_wait_leave(void)
{
	if (gt_unlikely(gt_watchdog_on))
		watchdog__leave_slow(false);
}

/* A forced unwind (pthread_cancel) left whatever wait the thread was in. */
static inline void gt_wait_unwound(void)
{
	if (gt_unlikely(gt_watchdog_on))
		watchdog__leave_slow(true);
}

/* Its thread (writer/watchdog.c) starts with the drain thread, or with the
 * first device wait of a process that has none yet (paused before its
 * first capture window): a process that neither records nor waits has
 * nothing to watch. It runs until the process ends, in capture windows and
 * between them. Idempotent; cold. */
GT_HIDDEN void watchdog__start(void);
GT_HIDDEN bool watchdog__started(void);
/* The process ends: the look or report under way ends first (bounded),
 * none starts after. Cold: only with the watchdog on. */
GT_HIDDEN void watchdog__end(void);
/* In a fork child: the parent's thread is not there. */
GT_HIDDEN void watchdog__forget(void);

/* Device work submitted and not finished, for the report: a backend's
 * pending() calls fn once per item, oldest first per row. */
struct gt_pending_work {
	uint32_t track;        /* the queue or stream row (gt_device_track) */
	uint32_t name;         /* string id: kernel name, "Memcpy HtoD", ... */
	uint64_t corr;         /* the host call that submitted it */
	uint64_t submitted_ns; /* trace clock */
	/* track 0: the row and device by name (a row the drain has not made yet) */
	uint32_t row_name, device_name;
};
/* Submitted work a backend could not keep track of (its table full): the
 * report's pending_not_tracked. */
extern GT_HIDDEN _Atomic uint64_t gt_pending_untracked;
typedef void (*gt_pending_fn)(void *arg, const struct gt_pending_work *w);

#endif
