// SPDX-License-Identifier: MIT
/*
 * The hang watchdog's marks (watchdog.h), written by the traced threads
 * around their device waits. The thread that reads them and writes the
 * report is the writer's (writer/watchdog.c).
 */
#include "inject/clock.h"
#include "inject/shim.h"
#include "inject/watchdog.h"

GT_HIDDEN bool gt_watchdog_on GT_STARTUP_STATE; /* set at every start */
GT_HIDDEN _Atomic bool gt_watchdog_alone GT_STARTUP_STATE;
GT_HIDDEN _Atomic bool gt_watchdog_looking GT_STARTUP_STATE;

extern GT_HIDDEN GT_TLS struct ring *gt_tls_ring;

/* ---- the marks, on the traced threads ---- */

void watchdog__enter_slow(uint32_t call, uintptr_t handle)
{
	struct ring *r = gt_tls_ring;

	if (!r)
		r = shim__thread_ring();
	if ((uintptr_t)r <= 1 || r->wait_depth++)
		return;
	atomic_store_explicit(&r->wait_handle, handle, memory_order_relaxed);
	atomic_store_explicit(&r->wait_call, call, memory_order_relaxed);
	atomic_store_explicit(&r->wait_since, gt_clock_ns() | 1, memory_order_release);
	/* a paused process has no drain thread (nor watchdog) before its first
	 * window: its first wait starts the watchdog (once; a load after that) */
	if (gt_unlikely(!watchdog__started()))
		watchdog__start();
}

void watchdog__leave_slow(bool all)
{
	struct ring *r = gt_tls_ring;

	if ((uintptr_t)r <= 1 || !r->wait_depth)
		return;
	if (all || !--r->wait_depth) {
		r->wait_depth = 0;
		atomic_store_explicit(&r->wait_since, 0, memory_order_release);
	}
}

