/* SPDX-License-Identifier: MIT */
/* The shim's life cycle, for wrappers and backends. */
#ifndef GPUTRACE_SHIM_H
#define GPUTRACE_SHIM_H

#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include "event.h"
#include "state.h"

/* Wrappers call this first: calls that arrive before the constructor has
 * finished (from another library's constructor) initialize the tracer.
 * Inline: a load and a branch once initialized. */
GT_HIDDEN void gt_ensure_init_slow(void);
static inline void gt_ensure_init(void)
{
	if (gt_unlikely(atomic_load_explicit(&gt_st.init_state, memory_order_acquire) != 2))
		gt_ensure_init_slow();
}

/* Resolve the next definition of a symbol after this library (the real
 * function of a wrapper). Safe to call early; never returns our own wrapper. */
GT_HIDDEN void *gt_real(const char *symbol);
/* The real dlsym's answer, not through our wrapper of it. */
GT_HIDDEN void *gt_dlsym_real(void *handle, const char *symbol);
/* An object's soname from its dynamic section (a link map's l_ld and l_addr),
 * or from dl_iterate_phdr's description of it; NULL: none. */
struct dl_phdr_info;
GT_HIDDEN const char *gt_soname(const void *dyn, uintptr_t base);
GT_HIDDEN const char *gt_phdr_soname(const struct dl_phdr_info *info);

/* Drain everything recorded so far and checkpoint the trace file now (the
 * file is valid and complete up to here). Used before exec and at exit.
 * Bounded: gives up after timeout_ms. */
GT_HIDDEN void gt_flush_sync(unsigned timeout_ms);
/* Ask the writer's thread for a cycle soon, not waiting for it (lock-free, one futex
 * wake at most). False when no writer thread runs: no cycle will come of it. (Inside a
 * backend's hook, the thread is not asked again: the next wake does.) */
GT_HIDDEN bool gt_wake_writer(void);

/* The process is going away (exit, fatal signal, _exit, exec): stop
 * backends, final drain, close the trace. Idempotent, bounded. */
GT_HIDDEN void gt_finish(const char *why, unsigned timeout_ms);
/* Ask the flight recorder (GPUTRACE_FLIGHT_RECORDER) to write its window
 * now, as a file of its own (the next name: .1, .2, ...), the recorder going
 * on; reason (a literal) goes in its trailer. Async-signal-safe: for the
 * capture trigger, `gputrace capture --dump` and the hang watchdog. 0,
 * -ENOTSUP without a flight recorder, -EAGAIN before anything was recorded
 * (nothing to write). */
GT_HIDDEN int gt_flight_dump(const char *reason);

/* The calling thread's ring, created at its first use; NULL once the
 * thread has exited (or without memory). */
struct ring;
GT_HIDDEN struct ring *shim__thread_ring(void);
/* The same if the thread has made one already (NULL: none, or it is gone). */
GT_HIDDEN struct ring *shim__thread_ring_made(void);

/* Run on a traced thread as it exits (its ring still there, in each round of its
 * key destructors): a backend's calls a forced unwind left open are drawn. */
extern GT_HIDDEN void (*_Atomic gt_thread_exit_hook)(void);

/* The OS tid of the calling thread, cached. */
GT_HIDDEN int gt_gettid(void);

#endif
