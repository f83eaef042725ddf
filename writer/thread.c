/* SPDX-License-Identifier: MIT */
/*
 * The drain thread and what the rest of the process asks of the writer
 * (the hooks it registers for the shim's life cycle, inject/hooks.h): the
 * thread wakes every POLL_MS, runs a drain cycle when asked, when a ring is
 * past its high-water mark or when the flush interval has passed; sync()
 * asks for a cycle and waits for it; fork() holds the thread between
 * cycles; the fork child forgets the parent's file and thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inject/capture.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/futex.h"
#include "inject/hooks.h"
#include "inject/shim.h"
#include "inject/state.h"
#include "inject/watchdog.h"
#include "internal.h"
#include "writer.h"

#define POLL_MS          GT_DRAIN_POLL_MS /* how often rings are looked at */
#define WINDOW_GRACE_NS  10000000ull /* a closed window's file is ended this much later */


/* How long to sleep: the poll interval, or less when a sample is due sooner. */
static long wait_ns(uint64_t due)
{
	uint64_t now;

	if (due == UINT64_MAX)
		return POLL_MS * 1000000l;
	now = gt_clock_ns();
	if (due <= now)
		return 0;
	return due - now < POLL_MS * 1000000ull ? (long)(due - now) : POLL_MS * 1000000l;
}

/* Samples due now; the time of the next. Under the cycle lock: a fork()
 * never finds this thread inside a vendor library. */
static uint64_t sample_due(uint64_t due)
{
	uint64_t now = gt_clock_ns();

	/* not before every backend is initialized (the shim starts this thread first) */
	if (due > now || !gt_tracing() ||
	    atomic_load_explicit(&gt_st.init_state, memory_order_acquire) != 2)
		return due;
	for (unsigned spins = 0; atomic_load(&W.fork_pending) && spins < 1000; spins++)
		sched_yield();
	pthread_mutex_lock(&W.cycle_lock);
	atomic_store(&W.in_backend, true);
	due = shim__backends_sample(now);
	atomic_store(&W.in_backend, false);
	pthread_mutex_unlock(&W.cycle_lock);
	return due;
}

/* A cycle ended (or the thread did, or a request to end's host pass):
 * wake the threads waiting in sync(). */
void writer__wake_waiters(void)
{
	atomic_fetch_add(&W.done_word, 1);
	if (atomic_load(&W.waiters))
		gt_futex(&W.done_word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

/* Backends follow a capture window's open or close (backend.h, window). */
static void window_changed(bool open)
{
	if (atomic_load_explicit(&gt_st.init_state, memory_order_acquire) != 2)
		return;
	pthread_mutex_lock(&W.cycle_lock);
	gt_in_tracer = 0;
	drain__backends_call(open ? GT_HOOK_WINDOW_OPEN : GT_HOOK_WINDOW_CLOSE);
	gt_in_tracer = 1;
	pthread_mutex_unlock(&W.cycle_lock);
}

static void *drain_main(void *arg)
{
	sigset_t all;
	/* Sampled device counters (telemetry, time-based metrics) are read here
	 * between cycles, each backend at its own rate; nothing is sampled, and
	 * no vendor call is made, unless they were asked for. */
	uint64_t due = gt_sampling_wanted(&gt_cfg) ? 0 : UINT64_MAX;

	/* Signals meant for the program go to its threads, not ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* named, so that top -H and the tests tell it from the program's */
	prctl(PR_SET_NAME, "gputrace-drain", 0, 0, 0);
	atomic_store(&W.drain_tid, gt_gettid());
	lifecycle__thread_up();
	gt_in_tracer = 1;
	uint64_t closed_at = 0;
	for (;;) {
		struct timespec ts = { 0, wait_ns(due) };
		uint64_t req = atomic_load(&W.req_seq), window_in, now;
		bool final;

		/* capture windows open and close here, between cycles. A closed
		 * window's file is ended WINDOW_GRACE_NS later: a call that read
		 * its end time just before the close still reaches its ring. */
		now = gt_clock_ns();
		enum gt_capture_event cap = capture__tick(now, &window_in);
		/* a --delay process's thread started with it, before its first
		 * recording (gt_start_writer, which arms them, had nothing to
		 * start): the fatal-signal handlers go in as its window opens */
		if (cap == GT_CAPTURE_OPENED)
			lifecycle__arm_signals();
		if (cap != GT_CAPTURE_CLOSED) {
			closed_at = 0;
		} else if (!closed_at) {
			closed_at = now;
			window_in = WINDOW_GRACE_NS;
			window_changed(false); /* plug-ins stop now, not after the grace */
		} else if (now - closed_at < WINDOW_GRACE_NS) {
			window_in = WINDOW_GRACE_NS - (now - closed_at);
		} else {
			closed_at = 0;
			pthread_mutex_lock(&W.cycle_lock);
			gt_in_tracer = 0;
			writer__window_end();
			gt_in_tracer = 1;
			pthread_mutex_unlock(&W.cycle_lock);
			continue;
		}
		/* a window opened here or by a signal: plug-ins start (a range's
		 * window starts them on the thread that marks it, capture.c, and
		 * claims it first) */
		uint32_t window = atomic_load(&gt_cap.windows);
		uint32_t started = atomic_load(&gt_cap.plugins_window);
		if (gt_cap.controlled && gt_tracing() && (int32_t)(window - started) > 0 &&
		    atomic_compare_exchange_strong(&gt_cap.plugins_window, &started, window))
			window_changed(true);
		/* a window's planned start or end is kept to the millisecond, not POLL_MS */
		if (window_in < (uint64_t)ts.tv_nsec)
			ts.tv_nsec = (long)(window_in > 1000000 ? window_in : 1000000);
		/* no sleep while a ring is still past its high-water mark; sleeping
		 * is said first: a producer that passes its wake mark after the
		 * check below sees it and wakes us (writer__wake) */
		atomic_store(&W.sleeping, true);
		if (req == atomic_load(&W.done_seq) && !atomic_load(&W.ring_woke) &&
		    !drain__rings_high() && ts.tv_nsec && !atomic_load(&W.flight_request))
			gt_futex(&W.kick, FUTEX_WAIT_PRIVATE, 0, &ts);
		atomic_store(&W.sleeping, false);
		atomic_store(&W.kick, 0);
		lifecycle__check_last_thread();
		bool woke = atomic_exchange(&W.ring_woke, false);
		if (gt_unlikely(due != UINT64_MAX))
			due = sample_due(due);
		req = atomic_load(&W.req_seq);
		final = atomic_load(&W.req_final);
		if (req == atomic_load(&W.done_seq) && !woke && !drain__rings_high() &&
		    !atomic_load(&W.flight_request) &&
		    gt_clock_ns() - W.last_checkpoint_ns < gt_cfg.flush_ms * 1000000ull)
			continue;
		/* not before the process's start-up is over: backends set their
		 * state after this thread starts, and a paused process publishes
		 * no event whose ring would order it before our reads */
		if (!final && atomic_load_explicit(&gt_st.init_state, memory_order_acquire) != 2)
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
		writer__wake_waiters();
	}
	atomic_store(&W.thread_running, false);
	writer__wake_waiters();
	return NULL;
}

/* In the start-up text: every process calls it, and a page of its own
 * would be a page fault at every start. */
GT_STARTUP_CODE void writer__init(void)
{
	/* Nothing to do until the first event: W is zero (also in a fork
	 * child, after forget), and a process that records nothing should not
	 * pay even for a malloc. */
}

/* The writer was started, or asked for a cycle or a dump: until then W, the
 * flight recorder and the watchdog are as they started (all zero), there is
 * no cycle for a fork to wait for, and a fork child has nothing of them to
 * forget. A shell forks for every command: in a process that records
 * nothing, neither side of a fork writes a page of them. */
static void mark_used(void)
{
	if (!atomic_load_explicit(&W.used, memory_order_relaxed))
		atomic_store(&W.used, true);
}

int writer__start_thread(void)
{
	int err;

	mark_used();
	W.last_checkpoint_ns = gt_clock_ns();
	atomic_store(&W.thread_running, true);
	err = lifecycle__spawn(&W.thread, drain_main);
	if (err)
		atomic_store(&W.thread_running, false);
	else
		watchdog__start();
	return err;
}

int writer__lock_rings(unsigned timeout_ms)
{
	struct timespec until;

	mark_used();
	until = gt_timespec_after_ms(CLOCK_REALTIME, timeout_ms);
	return -pthread_mutex_timedlock(&W.cycle_lock, &until);
}

void writer__unlock_rings(void)
{
	pthread_mutex_unlock(&W.cycle_lock);
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

/* Wait for cycle `my` to be done: a futex wait on done_word, woken by the
 * drain thread when a cycle ends (no sleep loop: an exit costs the cycle,
 * not a polling interval). The timeout counts from the drain's last
 * progress (drain_progress): a drain that is slow, not stuck (a starved
 * machine, a slow disk), is waited for, up to SYNC_PROGRESS_CAP timeouts in
 * all. */
#define SYNC_PROGRESS_CAP 10

/* The drain's progress: slots handed back, checkpoints written, and system
 * calls on the file returned; *writing: one has not returned (the kernel
 * holds a write while a busy disk catches up: slow, not stuck). */
static uint64_t drain_progress(bool *writing)
{
	return atomic_load_explicit(&W.progress, memory_order_relaxed) + out__activity(writing);
}

static int wait_cycle(uint64_t my, unsigned timeout_ms)
{
	uint64_t start = gt_clock_ns(), timeout = timeout_ms * 1000000ull;
	uint64_t end = start + timeout, cap = start + SYNC_PROGRESS_CAP * timeout;
	bool writing;
	uint64_t progress = drain_progress(&writing);
	int ret = -ETIMEDOUT;
	bool host_seen = false;

	atomic_fetch_add(&W.waiters, 1);
	for (;;) {
		uint32_t seen = atomic_load(&W.done_word);
		uint64_t now = gt_clock_ns();

		if (atomic_load(&W.done_seq) >= my) {
			ret = 0;
			break;
		}
		if (!host_seen && atomic_load(&W.host_written_before_device)) {
			/* the device's last read gets the whole timeout of its own */
			host_seen = true;
			progress = drain_progress(&writing);
			end = now + timeout < cap ? now + timeout : cap;
		}
		if (!atomic_load(&W.thread_running)) {
			ret = atomic_load(&gt_phase) == GT_PHASE_DONE ? 0 : -ETIMEDOUT;
			break;
		}
		if (now >= end) {
			uint64_t moved = drain_progress(&writing);

			if ((moved == progress && !writing) || now >= cap)
				break;
			progress = moved;
			end = now + timeout < cap ? now + timeout : cap;
		}
		gt_futex_wait_ns(&W.done_word, seen, end - now);
	}
	atomic_fetch_sub(&W.waiters, 1);
	return ret;
}

int writer__sync(bool final, unsigned timeout_ms)
{
	uint64_t my;

	mark_used();
	if (final)
		atomic_store(&W.req_final, true);
	my = atomic_fetch_add(&W.req_seq, 1) + 1;
	if (!atomic_load(&W.thread_running)) {
		/* no drain thread (nothing was recorded, or it could not start):
		 * do it here, if nobody else is (another thread's cycle is over in
		 * well under a millisecond) */
		for (unsigned waited = 0; waited <= timeout_ms; waited++) {
			if (!pthread_mutex_trylock(&W.cycle_lock)) {
				/* the anchor is read as the drain thread starts: a process
				 * whose first event came at its end (folded CUDA getters
				 * only) wrote {0, 0}, and merge moved every other file
				 * by the whole wall clock */
				shim__take_anchor();
				writer__cycle(final);
				pthread_mutex_unlock(&W.cycle_lock);
				return 0;
			}
			sleep_1ms();
		}
		return -ETIMEDOUT;
	}
	atomic_store(&W.kick, 1);
	gt_futex(&W.kick, FUTEX_WAKE_PRIVATE, 1, NULL);
	int err = wait_cycle(my, timeout_ms);
	/* stuck in the device's last read, the host's events written */
	return err && final && atomic_load(&W.host_written_before_device) ? -EINPROGRESS : err;
}

/* The longest fork() waits for a drain cycle to end. A cycle is normally
 * well under a millisecond; a stalled disk must not stall the program. */
#define FORK_WAIT_MS 200

/* per thread: two threads may fork at once, and the handlers of one fork
 * run on the thread that called it */
static GT_TLS bool fork_holds_cycle, fork_counted;

void writer__fork_prepare(void)
{
	struct timespec until;

	fork_holds_cycle = fork_counted = false;
	/* a writer that starts meanwhile is forgotten whole in the child */
	if (!atomic_load(&W.used))
		return;
	/* the drain thread, busy, would take the lock back at once; counted:
	 * the first fork done must not stop it yielding to the others */
	atomic_fetch_add(&W.fork_pending, 1);
	fork_counted = true;
	atomic_signal_fence(memory_order_seq_cst);
	until = gt_timespec_after_ms(CLOCK_REALTIME, FORK_WAIT_MS);
	fork_holds_cycle = !pthread_mutex_timedlock(&W.cycle_lock, &until);
}

GT_FORK_CODE void writer__fork_parent(void)
{
	/* each marked let go before it is: a fatal signal's exit() in between
	 * (lifecycle.c, fork_release) never lets one go twice */
	if (fork_holds_cycle) {
		fork_holds_cycle = false;
		atomic_signal_fence(memory_order_seq_cst);
		pthread_mutex_unlock(&W.cycle_lock);
	}
	if (fork_counted) {
		fork_counted = false;
		atomic_signal_fence(memory_order_seq_cst);
		atomic_fetch_sub(&W.fork_pending, 1);
	}
}

GT_FORK_CODE void writer__forget(void)
{
	/* The parent's file and thread are not ours: close our copy of the
	 * descriptor and start over. Nothing is freed: the parent's drain
	 * thread may have been inside a realloc of these buffers when fork()
	 * copied them, so their pointers are not to be trusted. */
	if (!atomic_load(&W.used)) {
		/* all as it started (mark_used), but for a watchdog the parent's
		 * first device wait started before any cycle */
		if (watchdog__started())
			watchdog__forget();
		return;
	}
	if (W.opened && W.out.fd >= 0)
		close(W.out.fd);
	out__forget_calls();
	memset(&W, 0, sizeof(W));
	flight__forget();
	pthread_mutex_init(&W.cycle_lock, NULL);
	watchdog__forget();
}

/* as_of: where the window ends (0: here, now) */
static int flight_request(const char *reason, uint64_t as_of)
{
	if (!gt_cfg.flight_bytes)
		return -ENOTSUP;
	/* async-signal-safe: stores and a wake; the drain thread writes it */
	mark_used();
	/* the window ends here, not where a drain behind a busy program writes it
	 * (seconds later); of requests taken as one, the first */
	uint64_t at = as_of ? as_of : gt_clock_ns(), cur = atomic_load(&W.flight_request_ns);

	while ((!cur || at < cur) && !atomic_compare_exchange_weak(&W.flight_request_ns, &cur, at))
		;
	atomic_store(&W.flight_request, reason ? reason : "request");
	if (!atomic_load(&W.thread_running))
		return -EAGAIN; /* nothing recorded yet, nothing to write */
	atomic_store(&W.kick, 1);
	gt_futex(&W.kick, FUTEX_WAKE_PRIVATE, 1, NULL);
	return 0;
}

static int writer__flight_dump(const char *reason)
{
	return flight_request(reason, 0);
}

int writer__flight_dump_now(const char *reason, uint64_t as_of, char *path, size_t len)
{
	uint32_t before = atomic_load(&W.flight_written);
	int err = flight_request(reason, as_of);

	if (err)
		return err;
	/* a cycle asked for after the request: the dump is in it */
	err = writer__sync(false, 2000);
	if (err)
		return err;
	if (atomic_load(&W.flight_written) == before)
		return -EIO; /* it could not be written: the drain thread said why */
	pthread_mutex_lock(&W.cycle_lock);
	snprintf(path, len, "%s", W.flight_path);
	pthread_mutex_unlock(&W.cycle_lock);
	return 0;
}

/* A producer's ring passed its wake mark: a cycle now, not at the next
 * poll. A few loads while the drain thread is busy; a futex wake only when
 * it sleeps. (A wake missed in a race costs one poll, POLL_MS.) */
static int writer__wake(void)
{
	if (!atomic_load_explicit(&W.thread_running, memory_order_relaxed))
		return GT_WAKE_NONE;
	if (atomic_load_explicit(&W.in_backend, memory_order_relaxed))
		return GT_WAKE_BUSY; /* it may be waiting for the caller: see in_backend */
	/* already asked, and not yet seen: the drain sees it before it sleeps
	 * (a full ring drops every call here: no fence for each) */
	if (atomic_load_explicit(&W.ring_woke, memory_order_acquire))
		return GT_WAKE_OK;
	atomic_store(&W.ring_woke, true);
	if (atomic_load(&W.sleeping)) {
		atomic_store(&W.kick, 1);
		gt_futex(&W.kick, FUTEX_WAKE_PRIVATE, 1, NULL);
	}
	return GT_WAKE_OK;
}

/* Under gputrace run, the run waits for processes that record (checkpoint.c). */
static void writer__recording(void)
{
	checkpoint__list('*', NULL);
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
	.progress = drain_progress,
	.recording = writer__recording,
	.flight_dump = writer__flight_dump,
	.own_ring_full = drain__own_ring_full,
	.wake = writer__wake,
};
GT_LIFECYCLE_HOOKS(writer_hooks);
