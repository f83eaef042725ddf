/* SPDX-License-Identifier: MIT */
/*
 * --lossless: a producer whose ring is full waits for the drain thread to
 * make room instead of dropping the event. Only on the slow path (the fast
 * path never sees it while the ring has room), and only where waiting is
 * safe: a program's thread, not nested in our own code, not in a signal
 * handler on an alternate stack, while the drain thread runs and the
 * process records. Each stall is bounded by gt_cfg.lossless_ms; after a
 * timeout the thread drops as without --lossless until the drain moves
 * (a stuck disk costs one timeout, not one per event). No lock is shared
 * with the drain: the producer sleeps on a futex word of its own ring,
 * which the drain bumps when it frees room (ring__consume).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "futex.h"
#include "hooks.h"
#include "ring.h"
#include "state.h"

#define SPINS        64       /* polls before sleeping: the drain may be mid-batch */
#define SLICE_NS     1000000  /* conditions (the process ending) are looked at this often */
#define ROOM_DIV     8        /* a waiter wakes with this share of the ring free */
#define BUSY_MAX_NS  100000000 /* the longest wait for a drain inside a backend's hook */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}


/* Room for the waiter: nslots, and a share of the ring so that it does not
 * wake once per slot the drain frees. */
static uint64_t room_wanted(const struct ring *r, unsigned nslots)
{
	uint64_t share = (r->mask + 1) / ROOM_DIV;

	return share > nslots ? share : nslots;
}

void ring__wake_waiter(struct ring *r)
{
	uint64_t used = atomic_load_explicit(&r->head, memory_order_relaxed) -
			atomic_load_explicit(&r->tail, memory_order_relaxed);

	/* (overflowing, the waiter waits for the overflow to be read: it looks itself) */
	if (r->mask + 1 - used < room_wanted(r, 1) && used &&
	    !atomic_load_explicit(&r->overflowing, memory_order_relaxed))
		return; /* not yet worth a wake: the drain goes on */
	atomic_fetch_add_explicit(&r->room, 1, memory_order_release);
	gt_futex(&r->room, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* A moment and a thread that may wait. */
static bool may_wait(const struct ring *r)
{
	stack_t ss;

	if (!gt_tracing() || atomic_load_explicit(&gt_st.crashing, memory_order_relaxed))
		return false;
	/* the process's start-up (a plug-in's events as it starts): the drain
	 * runs no cycle before it is over (writer/thread.c) */
	if (atomic_load_explicit(&gt_st.init_state, memory_order_acquire) != 2)
		return false;
	/* nested in our own code (a backend's flush, a callback inside a
	 * wrapper's vendor call): it may hold what the drain needs */
	if (gt_in_tracer > 1 || lifecycle__hooks()->is_own_thread())
		return false;
	/* the drain has not moved since a wait timed out */
	if (r->gave_up_tail == atomic_load_explicit(&r->tail, memory_order_relaxed) + 1)
		return false;
	/* a signal handler on its own stack: the interrupted code may hold anything */
	if (!sigaltstack(NULL, &ss) && (ss.ss_flags & SS_ONSTACK))
		return false;
	return true;
}

int ring__wait_room(struct ring *r, unsigned nslots)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed), cap = r->mask + 1;
	uint64_t want = room_wanted(r, nslots), start, now, tail, busy_since = 0;
	int ret = -ETIMEDOUT;

	if (nslots > cap || !may_wait(r))
		return -EAGAIN;
	start = now = gt_clock_ns();
	atomic_store_explicit(&r->waiting, 1, memory_order_seq_cst);
	for (unsigned spin = 0;; spin++) {
		uint32_t seen = atomic_load_explicit(&r->room, memory_order_acquire);

		/* seq_cst: after the store of waiting (ring__consume's pair) */
		tail = atomic_load_explicit(&r->tail, memory_order_seq_cst);
		if (atomic_load_explicit(&r->overflowing, memory_order_relaxed)) {
			/* the overflow read to its end: the producer goes back to the ring */
			if (ring__overflow_read_all(r)) {
				ret = 0;
				break;
			}
		} else if (cap - (head - tail) >= want) {
			ret = 0;
			break;
		}
		/* the drain gone (the process ends, a fork child before its
		 * drain starts), or recording stopped (paused, finishing) */
		int drain = lifecycle__hooks()->wake();
		if (drain == GT_WAKE_NONE || !gt_tracing()) {
			ret = -EAGAIN;
			break;
		}
		/* in a backend's hook: a flush is short, but one that waits for
		 * this very thread (a plug-in's lock) would be waited out to the
		 * timeout: a short hook is waited for, a long one given up as a
		 * timeout is (no waits until the drain moves) */
		now = gt_clock_ns();
		if (drain != GT_WAKE_BUSY)
			busy_since = 0;
		else if (!busy_since)
			busy_since = now;
		else if (now - busy_since > BUSY_MAX_NS)
			break;
		if (spin < SPINS) {
			cpu_relax();
			continue;
		}
		if (now - start >= gt_cfg.lossless_ms * 1000000ull)
			break;
		struct timespec ts = { 0, SLICE_NS };
		gt_futex(&r->room, FUTEX_WAIT_PRIVATE, seen, &ts);
	}
	atomic_store_explicit(&r->waiting, 0, memory_order_relaxed);
	now = gt_clock_ns();
	/* single writer: plain load/store, no locked instruction */
	atomic_store_explicit(&r->waits, atomic_load_explicit(&r->waits, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	atomic_store_explicit(&r->wait_ns,
			      atomic_load_explicit(&r->wait_ns, memory_order_relaxed) + (now - start),
			      memory_order_relaxed);
	if (ret == -ETIMEDOUT)
		r->gave_up_tail = tail + 1; /* + 1: 0 is "none" */
	return ret;
}
