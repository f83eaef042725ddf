/* SPDX-License-Identifier: MIT */
/*
 * The drain thread and the trace file. The drain thread wakes on a short
 * interval, moves ring records into Chrome Trace JSON, and after each cycle
 * that wrote something leaves a complete, valid file on disk.
 *
 * The shim does not call these by name: thread.c registers them as its
 * life-cycle hooks (inject/hooks.h). Tests and benchmarks may call them.
 */
#ifndef GPUTRACE_WRITER_H
#define GPUTRACE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "inject/event.h"

/* Fresh writer state for this process (also in a fork child). */
GT_HIDDEN void writer__init(void);
/* Start the drain thread (the shim does, at the process's first event:
 * gt_start_writer()). 0 or -errno. */
GT_HIDDEN int writer__start_thread(void);
/* Ask for a drain cycle + checkpoint and wait for it, at most timeout_ms.
 * final: the last one; the trace is closed afterwards. Async-signal-safe
 * when the drain thread runs (the waiting is a futex wait the thread's
 * cycle ends). Without a drain thread (nothing recorded yet) the cycle runs
 * in the caller. Returns 0 when done in time, -ETIMEDOUT otherwise. */
GT_HIDDEN int writer__sync(bool final, unsigned timeout_ms);
/* Around fork(): hold the drain thread between cycles, so no lock inside
 * the C library or a sanitizer runtime (malloc, stdio) is held by it when
 * the child is made. Waits at most one cycle, bounded by a timeout. */
GT_HIDDEN void writer__fork_prepare(void);
GT_HIDDEN void writer__fork_parent(void);
/* In a fork child: forget the parent's file and thread without touching them. */
GT_HIDDEN void writer__forget(void);
/* True when the calling thread is the drain thread. */
GT_HIDDEN bool writer__is_drain_thread(void);
/* Keep the drain thread from freeing rings (it does between cycles) while
 * another thread walks gt_st.rings: 0, or -ETIMEDOUT. */
GT_HIDDEN int writer__lock_rings(unsigned timeout_ms);
GT_HIDDEN void writer__unlock_rings(void);
/* Wake the threads waiting in sync() to look again. */
GT_HIDDEN void writer__wake_waiters(void);
/* The trace's file name (the one asked for while it is still being made;
 * between capture windows, the last window's, before the first the name
 * it will have); 0, or -ENOENT. Takes the cycle lock. */
GT_HIDDEN int writer__trace_name(char *buf, size_t len);

/* A capture window ended: end its file (complete and valid), ready for the
 * next window's. Called in a drain cycle's place (the cycle lock held). */
GT_HIDDEN void writer__window_end(void);

/* The flight recorder's window now, for the hang watchdog's report: asks
 * the drain thread for a dump (reason: a literal, in its trailer) of the
 * window before as_of (when the hang began; 0: now) and what came after,
 * and waits for it. 0 and its file's path in path, or -errno (-ENOTSUP: no
 * recorder). */
GT_HIDDEN int writer__flight_dump_now(const char *reason, uint64_t as_of, char *path, size_t len);

/* For the flight recorder, with --watchdog: when the earliest hang that may
 * be under way began (a device wait still inside, the oldest device work
 * unfinished as last looked), UINT64_MAX if none. Its window does not age
 * out while it lasts (within the recorder's bound), so that a report's dump
 * holds the calls that led to it. In a cycle (the cycle lock held). */
GT_HIDDEN uint64_t watchdog__hang_since(void);

/* For unit tests: run one drain cycle in the calling thread. */
GT_HIDDEN void writer__cycle(bool final);

#endif
