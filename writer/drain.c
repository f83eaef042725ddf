/* SPDX-License-Identifier: MIT */
/*
 * The drain thread: every cycle it moves ring records into Chrome Trace
 * JSON, links device work to the host calls that caused it (ac2g flows) and
 * checkpoints the file. All writer state belongs to this thread (or to the
 * caller of writer__cycle when no drain thread runs), so none of it is
 * locked; producers only ever touch their rings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "inject/clock.h"
#include "inject/config.h"
#include "inject/hooks.h"
#include "inject/ring.h"
#include "inject/shim.h"
#include "internal.h"
#include "summary.h"
#include "writer.h"

#define HIGH_WATER_DIV   4    /* a ring a quarter full is drained now */
#define FLUSH_BYTES      (1 << 20)
#define DLOPEN_POLL_NS   100000000ull

GT_HIDDEN struct writer W = { .cycle_lock = PTHREAD_MUTEX_INITIALIZER };

/* A host event on its thread's row (or the track it names); a launch is
 * remembered for the device work that will link to it. */
static void write_host(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs,
		       uint32_t ring_tid)
{
	uint32_t tid = ev->track ? ev->track : ring_tid;

	events__host(ev, args, nargs, tid);
	if ((ev->flags & GT_EVF_LAUNCH) && ev->corr)
		flows__launch(ev, tid);
}

static void drain_ring(struct ring *r)
{
	struct gt_arg args[GT_ARGS_MAX];
	uint64_t tail, n = ring__readable(r, &tail), end = tail + n;

	while (tail < end) {
		const struct gt_event *ev = ring__slot(r, tail);
		unsigned nargs = ev->nargs, nslots = 1;

		if (nargs > GT_ARGS_MAX)
			nargs = GT_ARGS_MAX;
		if (nargs)
			args[0] = ev->args[0];
		for (unsigned a = GT_ARGS_INLINE; a < nargs; a++) {
			unsigned k = a - GT_ARGS_INLINE;
			const struct gt_event *ext = ring__slot(r, tail + 1 + k / GT_ARGS_PER_EXT);
			args[a] = ((const struct gt_arg *)ext)[k % GT_ARGS_PER_EXT];
		}
		if (nargs > GT_ARGS_INLINE)
			nslots += (nargs - GT_ARGS_INLINE + GT_ARGS_PER_EXT - 1) / GT_ARGS_PER_EXT;
		switch (ev->type) {
		case GT_EV_HOST_SPAN:
			write_host(ev, args, nargs, (uint32_t)r->tid);
			break;
		case GT_EV_INSTANT:
			if (ev->flags & GT_EVF_DEVICE)
				events__device(ev, args, nargs); /* device instant */
			else
				write_host(ev, args, nargs, (uint32_t)r->tid);
			break;
		case GT_EV_COUNTER:
			events__device(ev, args, nargs);
			break;
		case GT_EV_DEVICE_SPAN:
			flows__defer(ev, args, nargs);
			break;
		default:
			break;
		}
		r->recorded++;
		W.recorded++;
		tail += nslots;
		/* a fork() is waiting for this cycle: the rest is for the next one */
		if (gt_unlikely(atomic_load_explicit(&W.fork_pending, memory_order_relaxed)))
			break;
		/* with its trailer: a file cut here (SIGKILL) is still complete JSON */
		if (W.buf.len > FLUSH_BYTES && W.opened && !W.failed)
			checkpoint__write(false);
	}
	ring__consume(r, tail);
}

static void remember_dead(struct ring *r)
{
	if (W.ndead == W.dead_cap) {
		size_t cap = W.dead_cap ? W.dead_cap * 2 : 64;
		struct thread_stat *d = realloc(W.dead, cap * sizeof(*d));
		if (!d)
			return;
		W.dead = d;
		W.dead_cap = cap;
	}
	W.dead[W.ndead++] = (struct thread_stat){
		.tid = (uint32_t)r->tid,
		.serial = r->serial,
		.events = r->recorded,
		.lost = atomic_load(&r->lost),
	};
}

static void drain_rings(void)
{
	struct ring *prev = NULL, *r = atomic_load_explicit(&gt_st.rings, memory_order_acquire);

	while (r) {
		struct ring *next = r->next;
		uint64_t tail;

		/* dead is read before the last drain: nothing can follow it */
		bool dead = atomic_load_explicit(&r->dead, memory_order_acquire);
		drain_ring(r);
		if (dead && !ring__readable(r, &tail)) {
			struct ring *expect = r;

			remember_dead(r);
			if (prev) {
				prev->next = next;
			} else if (!atomic_compare_exchange_strong(&gt_st.rings, &expect, next)) {
				/* new rings were pushed in front: find our predecessor */
				struct ring *p = atomic_load(&gt_st.rings);
				while (p && p->next != r)
					p = p->next;
				if (p)
					p->next = next;
			}
			ring__free(r);
		} else {
			prev = r;
		}
		r = next;
	}
}

static bool rings_have_data(void)
{
	uint64_t tail;

	for (struct ring *r = atomic_load_explicit(&gt_st.rings, memory_order_acquire); r;
	     r = r->next)
		if (ring__readable(r, &tail))
			return true;
	return false;
}

bool drain__rings_high(void)
{
	for (struct ring *r = atomic_load_explicit(&gt_st.rings, memory_order_acquire); r;
	     r = r->next)
		if (ring__used(r) > (r->mask + 1) / HIGH_WATER_DIV)
			return true;
	return false;
}

void writer__cycle(bool final)
{
	uint64_t now = gt_clock_ns();

	gt_in_tracer++;
	if (now - W.last_dlopen_poll_ns > DLOPEN_POLL_NS) {
		W.last_dlopen_poll_ns = now;
		lifecycle__poll_dlopen();
	}
	/* After a crash, vendor libraries may hold locks the dead thread took. */
	if (!atomic_load(&gt_st.crashing))
		shim__backends_call(final ? GT_HOOK_FLUSH_FINAL : GT_HOOK_FLUSH, NULL, NULL);
	if (final)
		atomic_store(&gt_phase, GT_PHASE_FINISHING);
	if (atomic_load(&gt_phase) == GT_PHASE_OFF) {
		gt_in_tracer--;
		return;
	}
	/* the file exists before anything is formatted: events are placed for
	 * their offsets in it */
	if (!W.opened && !W.failed && (final || W.npend || rings_have_data()))
		checkpoint__open();
	if (W.opened)
		events__name_rows();
	drain_rings();
	flows__pending(final);
	if (W.opened)
		events__name_rows();
	checkpoint__write(final);
	W.last_checkpoint_ns = now;
	if (final) {
		checkpoint__summary();
		out__close(&W.out);
		atomic_store(&gt_phase, GT_PHASE_DONE);
	}
	gt_in_tracer--;
}

/* ---- the thread ---- */

#define POLL_MS          10   /* how often rings are looked at */

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static void *drain_main(void *arg)
{
	sigset_t all;

	/* Signals meant for the program go to its threads, not ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	atomic_store(&W.drain_tid, gt_gettid());
	gt_in_tracer = 1;
	for (;;) {
		struct timespec ts = { 0, POLL_MS * 1000000l };
		uint64_t req = atomic_load(&W.req_seq);
		bool final;

		/* no sleep while a ring is still past its high-water mark */
		if (req == atomic_load(&W.done_seq) && !drain__rings_high())
			futex(&W.kick, FUTEX_WAIT_PRIVATE, 0, &ts);
		atomic_store(&W.kick, 0);
		req = atomic_load(&W.req_seq);
		final = atomic_load(&W.req_final);
		if (req == atomic_load(&W.done_seq) && !drain__rings_high() &&
		    gt_clock_ns() - W.last_checkpoint_ns < gt_cfg.flush_ms * 1000000ull)
			continue;
		/* a fork() waits for the cycle lock: let it have it */
		for (unsigned spins = 0; atomic_load(&W.fork_pending) && spins < 1000; spins++)
			sched_yield();
		pthread_mutex_lock(&W.cycle_lock);
		gt_in_tracer = 0;
		writer__cycle(final);
		gt_in_tracer = 1;
		pthread_mutex_unlock(&W.cycle_lock);
		atomic_store(&W.done_seq, req);
		if (final || atomic_load(&gt_phase) == GT_PHASE_DONE)
			break;
	}
	atomic_store(&W.thread_running, false);
	return NULL;
}

void writer__init(void)
{
	W.sum = summary__new();
	W.last_checkpoint_ns = gt_clock_ns();
}

int writer__start_thread(void)
{
	pthread_attr_t attr;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	atomic_store(&W.thread_running, true);
	err = pthread_create(&W.thread, &attr, drain_main, NULL);
	pthread_attr_destroy(&attr);
	if (err)
		atomic_store(&W.thread_running, false);
	return -err;
}

bool writer__is_drain_thread(void)
{
	return atomic_load(&W.drain_tid) == gt_gettid();
}

static void sleep_1ms(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

int writer__sync(bool final, unsigned timeout_ms)
{
	uint64_t my;

	if (final)
		atomic_store(&W.req_final, true);
	my = atomic_fetch_add(&W.req_seq, 1) + 1;
	if (!atomic_load(&W.thread_running)) {
		/* no drain thread: do it here, if nobody else is */
		for (unsigned waited = 0; waited <= timeout_ms; waited++) {
			if (!pthread_mutex_trylock(&W.cycle_lock)) {
				writer__cycle(final);
				pthread_mutex_unlock(&W.cycle_lock);
				return 0;
			}
			sleep_1ms();
		}
		return -ETIMEDOUT;
	}
	atomic_store(&W.kick, 1);
	futex(&W.kick, FUTEX_WAKE_PRIVATE, 1, NULL);
	for (unsigned waited = 0; waited <= timeout_ms; waited++) {
		if (atomic_load(&W.done_seq) >= my)
			return 0;
		if (!atomic_load(&W.thread_running))
			return atomic_load(&gt_phase) == GT_PHASE_DONE ? 0 : -ETIMEDOUT;
		sleep_1ms();
	}
	return -ETIMEDOUT;
}

/* The longest fork() waits for a drain cycle to end. A cycle is normally
 * well under a millisecond; a stalled disk must not stall the program. */
#define FORK_WAIT_MS 200

/* per thread: two threads may fork at once, and the handlers of one fork
 * run on the thread that called it */
static GT_TLS bool fork_holds_cycle;

void writer__fork_prepare(void)
{
	struct timespec until;

	/* the drain thread, busy, would take the lock back at once */
	atomic_store(&W.fork_pending, true);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += FORK_WAIT_MS * 1000000l;
	until.tv_sec += until.tv_nsec / 1000000000l;
	until.tv_nsec %= 1000000000l;
	fork_holds_cycle = !pthread_mutex_timedlock(&W.cycle_lock, &until);
}

void writer__fork_parent(void)
{
	if (fork_holds_cycle)
		pthread_mutex_unlock(&W.cycle_lock);
	fork_holds_cycle = false;
	atomic_store(&W.fork_pending, false);
}

void writer__forget(void)
{
	/* The parent's file and thread are not ours: close our copy of the
	 * descriptor and start over. Nothing is freed: the parent's drain
	 * thread may have been inside a realloc of these buffers when fork()
	 * copied them, so their pointers are not to be trusted. */
	if (W.opened && W.out.fd >= 0)
		close(W.out.fd);
	memset(&W, 0, sizeof(W));
	pthread_mutex_init(&W.cycle_lock, NULL);
}

/* What the shim's life cycle calls (inject/hooks.h). */
static const struct gt_lifecycle_hooks writer_hooks = {
	.init = writer__init,
	.start = writer__start_thread,
	.sync = writer__sync,
	.fork_prepare = writer__fork_prepare,
	.fork_parent = writer__fork_parent,
	.forget = writer__forget,
	.is_own_thread = writer__is_drain_thread,
};
GT_LIFECYCLE_HOOKS(writer_hooks);
