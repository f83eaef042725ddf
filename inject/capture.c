// SPDX-License-Identifier: MIT
/*
 * Capture windows (capture.h): when recording runs. Deadlines and signal
 * requests are carried out by the drain thread; range markers (NVTX,
 * cudaProfilerStart/Stop, ITT pause/resume) by the thread that calls them,
 * so the window starts and ends exactly there. All under one lock, which
 * signal handlers never take.
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "clock.h"
#include "config.h"
#include "hooks.h"
#include "rawsys.h"
#include "state.h"
#include "trigger.h"

/* check_capture's look at each step of a window's close (what another thread
 * could see between two of them) */
#ifndef GT_CAPTURE_CLOSE_STEP
#define GT_CAPTURE_CLOSE_STEP() ((void)0)
#endif

GT_HIDDEN struct gt_capture gt_cap GT_STARTUP_BSS;
/* capture__start sets these in every process */
static pthread_mutex_t cap_lock GT_STARTUP_BSS = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t closes GT_STARTUP_BSS, ended GT_STARTUP_BSS; /* windows closed; their
									    * files ended */
static uint32_t ranges GT_STARTUP_BSS;        /* range windows opened */
static uint32_t ranges_missed GT_STARTUP_BSS; /* ranges that found the last file unended */
static uint32_t range_gave_up GT_STARTUP_BSS; /* closes when one did: not waited for again */
/* the window the last range opened (0: none): a range end that does not know its
 * window (cudaProfilerStop, __itt_pause: process-wide, any thread) ends that one
 * only, never one gputrace capture or --delay opened */
static _Atomic uint32_t range_window GT_STARTUP_BSS;

/* The bounds of the windows closed last: an event of one that comes after
 * its file was ended (a device record CUPTI hands over late) is counted
 * lost, not dropped as outside every window. Written under cap_lock,
 * published by nclosed; a reader never reads the slot written next. */
#define CLOSED_KEPT 64
static struct {
	_Atomic uint64_t open_ns, close_ns;
} closed_windows[CLOSED_KEPT];
static _Atomic uint32_t nclosed GT_STARTUP_BSS;

/* Requests from the trigger's handler, carried out by the drain thread in
 * the order they were made: a pending open then close is a window that
 * opens and closes, never one left open. A bounded queue that the handler
 * of any thread may push to without a lock (D. Vyukov's): slot pos % REQS
 * is free for pos when its seq is pos, and holds pos's request at pos + 1.
 * Set up at start in a process with windows, the only one that posts. */
#define REQS 16
#define REQ_CLOSE 0
#define REQ_TOGGLE 1
#define REQ_OPEN_ENDED UINT64_MAX /* else an open, of that many ns */
static struct {
	_Atomic uint32_t seq;
	_Atomic uint64_t what;
} reqs[REQS];
static _Atomic uint32_t reqs_in, reqs_out;

/* A window the handler opened while no drain thread runs (a paused process
 * that has recorded nothing: a job's shell may never) ends at its --duration
 * by a timer, whose signal is the trigger's (SI_TIMER). Made by the first
 * such window, disarmed by the drain thread once one runs (it keeps the
 * deadline then). The kernel's timer id, plus one: 0 none. */
static _Atomic int idle_timer, idle_timer_armed;

GT_STARTUP_CODE bool capture__wanted(void)
{
	return gt_cfg.start_paused || gt_cfg.delay_ns || gt_cfg.duration_ns ||
	       gt_cfg.capture_range;
}

/* out of line, with the rare lines: not in the start-up stretch every process runs */
GT_STARTUP_SELDOM static __attribute__((noinline)) void warn_recorder_ignores(void)
{
	pr_warn("%s records the whole run and writes its window on the trigger: %s, %s, %s "
		"and %s are ignored with it",
		gt_setting("--flight-recorder", "GPUTRACE_FLIGHT_RECORDER"),
		gt_setting("--start paused", "GPUTRACE_START=paused"),
		gt_setting("--delay", "GPUTRACE_DELAY"), gt_setting("--duration", "GPUTRACE_DURATION"),
		gt_setting("--capture-range", "GPUTRACE_CAPTURE_RANGE"));
}

GT_STARTUP_SELDOM static __attribute__((noinline)) void warn_delay_ignored(void)
{
	pr_warn("%s opens a window by itself: it is ignored with %s",
		gt_setting("--delay", "GPUTRACE_DELAY"),
		gt_cfg.start_paused ? gt_setting("--start paused", "GPUTRACE_START=paused")
				    : gt_setting("--capture-range", "GPUTRACE_CAPTURE_RANGE"));
}

/* --capture-count counts the ranges --capture-range names: alone it would
 * be dropped without a word, and the whole run recorded. Cold text, not the
 * start-up stretch: that stretch is full (three pages, test_lifecycle), and
 * only a process given the count alone runs this. */
static __attribute__((noinline, cold)) void warn_count_ignored(void)
{
	if (gt_cfg.capture_range)
		return;
	pr_warn("%s counts the ranges of %s: it is ignored without it",
		gt_setting("--capture-count", "GPUTRACE_CAPTURE_COUNT"),
		gt_setting("--capture-range", "GPUTRACE_CAPTURE_RANGE"));
}

/* Paused, with windows that only gputrace capture opens, and no signal for it
 * to send: the process would record nothing, said only at its end (as "no
 * gputrace capture opened one"). Cold text, as warn_count_ignored. */
static __attribute__((noinline, cold)) void warn_paused_unreachable(void)
{
	pr_warn("%s waits for gputrace capture to open a window, and %s leaves it no "
		"signal to send: nothing will be recorded (give a capture signal, or open "
		"windows with %s)",
		gt_setting("--start paused", "GPUTRACE_START=paused"),
		gt_setting("--capture-signal off", "GPUTRACE_CAPTURE_SIGNAL=off"),
		gt_setting("--capture-range", "GPUTRACE_CAPTURE_RANGE"));
}

GT_STARTUP_CODE int capture__start(uint64_t now_ns)
{
	if (gt_unlikely(gt_cfg.capture_count_set))
		warn_count_ignored();
	gt_cap.controlled = capture__wanted();
	if (gt_cap.controlled && gt_cfg.flight_bytes) {
		/* a recorder that records only inside windows would keep less than
		 * its window just when it is asked for it: it records all along and
		 * the trigger writes its window */
		warn_recorder_ignores();
		gt_cap.controlled = false;
	}
	if (gt_cap.controlled && gt_cfg.delay_ns && (gt_cfg.start_paused || gt_cfg.capture_range))
		/* the windows are the trigger's or the marks' then */
		warn_delay_ignored();
	if (gt_cap.controlled && gt_cfg.start_paused && !gt_cfg.capture_range &&
	    !config__capture_signal(&gt_cfg))
		warn_paused_unreachable();
	/* a fork child's, fresh (an assignment: no call into libc to bind at
	 * start, in every process) */
	cap_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	atomic_store(&closes, 0);
	atomic_store(&ended, 0);
	atomic_store(&nclosed, 0);
	ranges = ranges_missed = range_gave_up = 0;
	atomic_store(&range_window, 0);
	atomic_store(&gt_cap.windows, 0);
	atomic_store(&gt_cap.plugins_window, 0);
	atomic_store(&gt_cap.start_at_ns, 0);
	atomic_store(&gt_cap.stop_at_ns, 0);
	if (!gt_cap.controlled) {
		/* one window, the whole run */
		atomic_store(&gt_cap.open_ns, 0);
		atomic_store(&gt_cap.close_ns, UINT64_MAX);
		return GT_PHASE_RUNNING;
	}
	/* (a fork child's may be half pushed by a handler of the parent's) */
	for (uint32_t i = 0; i < REQS; i++)
		atomic_store(&reqs[i].seq, i);
	atomic_store(&reqs_in, 0);
	atomic_store(&reqs_out, 0);
	atomic_store(&idle_timer, 0); /* not a fork child's: timers stay with the parent */
	atomic_store(&idle_timer_armed, 0);
	/* no window yet: nothing is inside */
	atomic_store(&gt_cap.open_ns, UINT64_MAX);
	atomic_store(&gt_cap.close_ns, 0);
	if (!gt_cfg.start_paused && !gt_cfg.capture_range) {
		/* --delay, --duration: one window from delay to delay + duration */
		atomic_store(&gt_cap.start_at_ns, now_ns + gt_cfg.delay_ns);
		if (!gt_cfg.delay_ns) {
			atomic_store(&gt_cap.start_at_ns, 0);
			atomic_store(&gt_cap.open_ns, now_ns);
			atomic_store(&gt_cap.close_ns, UINT64_MAX);
			atomic_store(&gt_cap.windows, 1);
			if (gt_cfg.duration_ns)
				atomic_store(&gt_cap.stop_at_ns, now_ns + gt_cfg.duration_ns);
			return GT_PHASE_RUNNING;
		}
	}
	return GT_PHASE_PAUSED;
}

static void post(uint64_t what)
{
	uint32_t pos = atomic_load(&reqs_in);

	if (!gt_cap.controlled)
		return; /* the whole run is one window */
	for (;;) {
		int32_t ahead = (int32_t)(atomic_load(&reqs[pos % REQS].seq) - pos);

		if (ahead < 0)
			return; /* REQS requests within one look of the drain: a burst of kills */
		if (ahead > 0)
			pos = atomic_load(&reqs_in); /* another handler took pos */
		else if (atomic_compare_exchange_weak(&reqs_in, &pos, pos + 1))
			break;
	}
	atomic_store_explicit(&reqs[pos % REQS].what, what, memory_order_relaxed);
	atomic_store_explicit(&reqs[pos % REQS].seq, pos + 1, memory_order_release);
}

void capture__post_open(uint64_t duration_ns)
{
	post(duration_ns ? duration_ns : REQ_OPEN_ENDED);
}

void capture__post_close(void)
{
	post(REQ_CLOSE);
}

void capture__post_toggle(void)
{
	post(REQ_TOGGLE);
}

/* The oldest request not carried out yet (false: none): the drain's, under
 * cap_lock, or a look with none posted (a handler, while no drain runs). */
static bool req_next(uint64_t *what)
{
	uint32_t pos = atomic_load_explicit(&reqs_out, memory_order_relaxed);

	if (atomic_load_explicit(&reqs[pos % REQS].seq, memory_order_acquire) != pos + 1)
		return false;
	*what = atomic_load_explicit(&reqs[pos % REQS].what, memory_order_relaxed);
	return true;
}

/* Under cap_lock: req_next's request is carried out; its slot is free. */
static void req_done(void)
{
	uint32_t pos = atomic_load_explicit(&reqs_out, memory_order_relaxed);

	atomic_store_explicit(&reqs[pos % REQS].seq, pos + REQS, memory_order_release);
	atomic_store_explicit(&reqs_out, pos + 1, memory_order_relaxed);
}

/* The request posted last, once its handler has posted it (false: none). */
static bool req_last(uint64_t *what)
{
	uint32_t pos = atomic_load(&reqs_in) - 1;

	if (pos + 1 == atomic_load_explicit(&reqs_out, memory_order_relaxed) ||
	    atomic_load_explicit(&reqs[pos % REQS].seq, memory_order_acquire) != pos + 1)
		return false;
	*what = atomic_load_explicit(&reqs[pos % REQS].what, memory_order_relaxed);
	return true;
}

/* The window's mark (PID.window) as it is now, unless a request is still to
 * be carried out: the handler of an open or a close marks what it leaves,
 * once it posted it (a toggle is marked as it is carried out). */
static void mark(bool open)
{
	uint64_t req;

	if (req_next(&req))
		return;
	trigger__window_mark(open);
	/* one posted meanwhile may have marked before this did: what it leaves */
	if (req_last(&req) && req != REQ_TOGGLE)
		trigger__window_mark(req != REQ_CLOSE);
}

static bool open_window(uint64_t now_ns, uint64_t duration_ns)
{
	int expect = GT_PHASE_PAUSED;

	/* a window asked for with no length of its own (gputrace capture PID, a
	 * plain kill) lasts --duration, as every window does (the options' table):
	 * under --start paused it ran until --stop, the setting dropped unsaid */
	if (!duration_ns)
		duration_ns = gt_cfg.duration_ns;

	if (atomic_load(&gt_phase) != GT_PHASE_PAUSED)
		return false;
	/* the bounds first: an event emitted as soon as the phase flips is inside */
	atomic_store(&gt_cap.close_ns, UINT64_MAX);
	atomic_store(&gt_cap.open_ns, now_ns);
	atomic_store(&gt_cap.stop_at_ns, duration_ns ? now_ns + duration_ns : 0);
	atomic_fetch_add(&gt_cap.windows, 1);
	atomic_compare_exchange_strong(&gt_phase, &expect, GT_PHASE_RUNNING);
	mark(true);
	return true;
}

static bool close_window(uint64_t now_ns)
{
	int expect = GT_PHASE_RUNNING;

	atomic_store(&gt_cap.stop_at_ns, 0);
	if (!atomic_compare_exchange_strong(&gt_phase, &expect, GT_PHASE_PAUSED))
		return false;
	GT_CAPTURE_CLOSE_STEP();
	/* Counted unended before the close is published: the drain thread reads
	 * both without the lock, and a window it sees closed (close_ns) but not
	 * unended is no longer written: a cycle run between the two stores in the
	 * other order dropped what the rings still held of the window as outside
	 * every window, counted nowhere (test_capture's lossless run, 1 in ~100). */
	atomic_fetch_add(&closes, 1);
	GT_CAPTURE_CLOSE_STEP();
	/* a call whose end was read before the flip is still inside (gt_emit) */
	atomic_store(&gt_cap.close_ns, now_ns);
	GT_CAPTURE_CLOSE_STEP();
	mark(false);
	uint32_t n = atomic_load_explicit(&nclosed, memory_order_relaxed);
	atomic_store_explicit(&closed_windows[n % CLOSED_KEPT].open_ns,
			      atomic_load(&gt_cap.open_ns), memory_order_relaxed);
	atomic_store_explicit(&closed_windows[n % CLOSED_KEPT].close_ns, now_ns,
			      memory_order_relaxed);
	atomic_store_explicit(&nclosed, n + 1, memory_order_release);
	GT_CAPTURE_CLOSE_STEP();
	return true;
}

bool capture__in_closed_window(uint64_t start_ns, uint64_t end_ns)
{
	uint32_t n = atomic_load_explicit(&nclosed, memory_order_acquire);

	for (uint32_t i = 1; i < CLOSED_KEPT && i <= n; i++) {
		uint32_t s = (n - i) % CLOSED_KEPT;

		if (start_ns >= atomic_load_explicit(&closed_windows[s].open_ns,
						     memory_order_relaxed) &&
		    end_ns <= atomic_load_explicit(&closed_windows[s].close_ns,
						   memory_order_relaxed))
			return true;
	}
	return false;
}

bool capture__unended(void)
{
	return atomic_load(&closes) != atomic_load(&ended);
}

void capture__ended(void)
{
	atomic_fetch_add(&ended, 1);
}

/* How long a range waits, at most, for the last window's file to be ended
 * (README: "at most about a second"). A sync waits up to 10 of its timeouts
 * while the drain makes progress (writer/thread.c, SYNC_PROGRESS_CAP): each
 * is given a tenth of what is left. */
#define RANGE_WAIT_NS 1000000000ull
#define RANGE_SYNC_SHARE 10
/* under cap_lock: --capture-count leaves this range a window */
#define RANGE_WANTED() (!gt_cfg.capture_count || ranges < gt_cfg.capture_count)

uint32_t capture__range_begin(uint64_t now_ns)
{
	uint64_t began = now_ns, until = now_ns + RANGE_WAIT_NS;

	pthread_mutex_lock(&cap_lock);
	/* the last window's file is ended (after its grace) before the next one
	 * opens. A sync that times out is a drain cycle slow to progress (a
	 * loaded machine), not a reason to stop waiting: only the deadline is;
	 * a file one range already gave up on is not waited for again */
	while (RANGE_WANTED() && atomic_load(&closes) != atomic_load(&ended) &&
	       atomic_load(&closes) != range_gave_up && now_ns < until &&
	       atomic_load(&gt_phase) == GT_PHASE_PAUSED && !atomic_load(&gt_end_reason)) {
		struct timespec ms = { 0, 1000000 };
		uint64_t share_ms = (until - now_ns) / 1000000 / RANGE_SYNC_SHARE + 1;

		pthread_mutex_unlock(&cap_lock);
		lifecycle__hooks()->sync(false, share_ms < 100 ? (unsigned)share_ms : 100);
		nanosleep(&ms, NULL);
		pthread_mutex_lock(&cap_lock);
		now_ns = gt_clock_ns();
	}
	uint32_t opened = 0, missed = 0;

	if (!RANGE_WANTED()) {
		/* --capture-count ranges recorded: the program runs on untraced */
	} else if (atomic_load(&closes) != atomic_load(&ended)) {
		/* never silently: the range is marked and has no window */
		range_gave_up = atomic_load(&closes);
		missed = ++ranges_missed;
	} else if (atomic_load(&gt_phase) == GT_PHASE_PAUSED) {
		ranges++;
		/* this thread starts the plug-ins for it, not the drain thread */
		atomic_store(&gt_cap.plugins_window, atomic_load(&gt_cap.windows) + 1);
		open_window(now_ns, gt_cfg.duration_ns);
		opened = atomic_load(&gt_cap.windows);
		atomic_store(&range_window, opened);
	}
	pthread_mutex_unlock(&cap_lock);
	/* the 1st, 2nd, 4th, 8th, ...: a program marking ranges in a loop does not
	 * flood stderr, and the count is still told */
	if (missed && !(missed & (missed - 1)))
		pr_warn("a range (cudaProfilerStart, __itt_resume or an NVTX push) began while "
			"the last capture window's file was still being ended (waited %.1f s): no "
			"window opened for it (%u such range%s so far)",
			(gt_clock_ns() - began) / 1e9, missed, missed == 1 ? "" : "s");
	/* a paused process has no drain thread until a window opens: this
	 * window's file is ended by it, whether or not anything is recorded */
	gt_start_writer();
	/* plug-ins start here, as the range begins (outside the lock: their
	 * calls may wait for the drain thread) */
	if (opened)
		shim__backends_call(GT_HOOK_WINDOW_OPEN, NULL, NULL);
	return opened;
}

/* The range's window is the one open now. */
static bool range_window_open(uint32_t window)
{
	return window && gt_tracing() && atomic_load(&gt_cap.windows) == window;
}

void capture__range_end(uint64_t now_ns, uint32_t window)
{
	/* window 0: the one the last range opened. A window opened from outside
	 * (gputrace capture) is not the program's to end: a cudaProfilerStop
	 * inside it is recorded and ends nothing, as a pop of an NVTX range
	 * that opened no window (until 2026-12-07 it ended it, once a range
	 * had opened a window before: the rest of it was lost, and capture
	 * --stop said no window was open) */
	if (!window)
		window = atomic_load(&range_window);
	/* plug-ins stop and hand over what they recorded while the window is
	 * still open: all of it is inside (not under the lock: their calls may
	 * wait for the drain thread) */
	if (range_window_open(window)) {
		shim__backends_call(GT_HOOK_WINDOW_CLOSE, NULL, NULL);
		now_ns = gt_clock_ns();
	}
	pthread_mutex_lock(&cap_lock);
	/* a window that ended (--duration) is not followed by another range's */
	if (window && atomic_load(&gt_cap.windows) == window)
		close_window(now_ns);
	pthread_mutex_unlock(&cap_lock);
}

/* Async-signal-safe (system calls of our own: libc's timer_create is not). */
static void idle_timer_arm(uint64_t in_ns)
{
	struct itimerspec its = { .it_value = { (time_t)(in_ns / 1000000000ull),
						(long)(in_ns % 1000000000ull) ?: 1 } };
	int id = atomic_load(&idle_timer) - 1, none = 0;

	if (id < 0) {
		struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL,
					.sigev_signo = trigger__signal() };

		if (gt_rawsys6(SYS_timer_create, CLOCK_MONOTONIC, (long)&sev, (long)&id, 0, 0, 0))
			return;
		/* another thread's handler made one meanwhile: that one */
		if (!atomic_compare_exchange_strong(&idle_timer, &none, id + 1)) {
			gt_rawsys(SYS_timer_delete, id, 0);
			id = none - 1;
		}
	}
	if (!gt_rawsys6(SYS_timer_settime, id, 0, (long)&its, 0, 0, 0))
		atomic_store(&idle_timer_armed, 1);
}

/* A window with nothing recorded in it (no event starts the drain thread
 * without starting it) ends: no file to end, so no close to count. */
static void close_unwritten(uint64_t close_ns)
{
	int expect = GT_PHASE_RUNNING;

	atomic_store(&gt_cap.stop_at_ns, 0);
	if (atomic_compare_exchange_strong(&gt_phase, &expect, GT_PHASE_PAUSED)) {
		atomic_store(&gt_cap.close_ns, close_ns);
		trigger__window_mark(false);
	}
}

bool capture__unwritten_request(bool open, uint64_t duration_ns)
{
	uint64_t now = gt_clock_ns();

	if (shim__writer_started() || !gt_cap.controlled)
		return false;
	if (!duration_ns)
		duration_ns = gt_cfg.duration_ns; /* as open_window takes it */
	if (!open)
		close_unwritten(now);
	else if (open_window(now, duration_ns) && duration_ns)
		idle_timer_arm(duration_ns);
	return true;
}

void capture__idle_deadline(void)
{
	uint64_t at = atomic_load(&gt_cap.stop_at_ns), now = gt_clock_ns();

	/* a drain thread keeps the deadline, or the window ended otherwise */
	if (shim__writer_started() || !gt_cap.controlled || !at)
		return;
	if (now < at)
		idle_timer_arm(at - now); /* early, by the two clocks' drift */
	else
		close_unwritten(at);
}

static uint64_t until(uint64_t at_ns, uint64_t now_ns)
{
	return !at_ns ? UINT64_MAX : at_ns > now_ns ? at_ns - now_ns : 0;
}

static enum gt_capture_event tick_locked(uint64_t now_ns, uint64_t *wait_ns)
{
	enum gt_capture_event what = GT_CAPTURE_NONE;
	uint64_t at, req, a, b;

	/* a window closed elsewhere (a range's end): its file is ended first */
	if (atomic_load(&closes) != atomic_load(&ended))
		return GT_CAPTURE_CLOSED;
	at = atomic_load(&gt_cap.stop_at_ns);
	/* a planned end is the window's end even when this thread is late: what
	 * was recorded after it is outside, and the writer leaves it out */
	if (at && now_ns >= at && close_window(at))
		return GT_CAPTURE_CLOSED; /* the writer ends its file before anything opens */
	at = atomic_load(&gt_cap.start_at_ns);
	if (at && now_ns >= at) {
		atomic_store(&gt_cap.start_at_ns, 0);
		open_window(now_ns, gt_cfg.duration_ns);
		what = GT_CAPTURE_OPENED;
	}
	/* requests in their order, up to one open or close a look: a closed
	 * window's file is ended before the next opens, and one opened records
	 * until the next look */
	while (what == GT_CAPTURE_NONE && req_next(&req)) {
		bool running = atomic_load(&gt_phase) == GT_PHASE_RUNNING;

		req_done();
		if (req == REQ_TOGGLE)
			req = running ? REQ_CLOSE : REQ_OPEN_ENDED;
		if (req == REQ_CLOSE) {
			if (close_window(now_ns))
				return GT_CAPTURE_CLOSED;
		} else if (!running) {
			open_window(now_ns, req == REQ_OPEN_ENDED ? 0 : req);
			what = GT_CAPTURE_OPENED;
		} else if (req != REQ_OPEN_ENDED) {
			/* already recording: the window now ends req from here */
			atomic_store(&gt_cap.stop_at_ns, now_ns + req);
		}
	}
	a = until(atomic_load(&gt_cap.start_at_ns), now_ns);
	b = until(atomic_load(&gt_cap.stop_at_ns), now_ns);
	*wait_ns = a < b ? a : b;
	/* the rest at the next look, soon (the drain's shortest wait) */
	if (req_next(&req))
		*wait_ns = 0;
	return what;
}

enum gt_capture_event capture__tick(uint64_t now_ns, uint64_t *wait_ns)
{
	enum gt_capture_event what;

	*wait_ns = UINT64_MAX;
	if (!gt_cap.controlled)
		return GT_CAPTURE_NONE;
	if (atomic_load(&idle_timer_armed) && atomic_exchange(&idle_timer_armed, 0)) {
		struct itimerspec off = { 0 };

		/* a signal the program would see for nothing (an EINTR) */
		gt_rawsys6(SYS_timer_settime, atomic_load(&idle_timer) - 1, 0, (long)&off, 0, 0, 0);
	}
	pthread_mutex_lock(&cap_lock);
	what = tick_locked(now_ns, wait_ns);
	pthread_mutex_unlock(&cap_lock);
	return what;
}

/* Why no window opened, as the user set it (capture__start's order: a
 * range, else paused, else the delay). Cold text, out of the start-up
 * stretch capture__report_at_exit is in (full: test_lifecycle). */
static __attribute__((noinline, cold)) void no_window_reason(char *out, size_t len,
								uint64_t now_ns)
{
	if (gt_cfg.capture_range == GT_RANGE_NVTX && gt_cfg.capture_nvtx_domain[0])
		snprintf(out, len, "no NVTX range \"%.180s\" of domain \"%.180s\" was pushed "
			 "(--capture-range nvtx:%.180s@%.180s)", gt_cfg.capture_nvtx,
			 gt_cfg.capture_nvtx_domain, gt_cfg.capture_nvtx, gt_cfg.capture_nvtx_domain);
	else if (gt_cfg.capture_range == GT_RANGE_NVTX)
		snprintf(out, len, "no NVTX range \"%.250s\" was pushed (--capture-range nvtx:%.250s)",
			 gt_cfg.capture_nvtx, gt_cfg.capture_nvtx);
	else if (gt_cfg.capture_range)
		snprintf(out, len, "cudaProfilerStart (or __itt_resume) was never called "
			 "(--capture-range cudaProfilerApi)");
	else if (gt_cfg.start_paused && !config__capture_signal(&gt_cfg))
		snprintf(out, len, "started with --start paused and --capture-signal off: no "
			 "gputrace capture could open one");
	else if (gt_cfg.start_paused)
		snprintf(out, len, "started with --start paused, and no gputrace capture opened "
			 "one");
	else if (now_ns - gt_st.anchor_clock_ns < gt_cfg.delay_ns)
		snprintf(out, len, "--delay %g s is longer than the run (it ended after %.3f s)",
			 gt_cfg.delay_ns / 1e9, (now_ns - gt_st.anchor_clock_ns) / 1e9);
	else
		/* due, but the drain thread's look (within about a millisecond) came
		 * after the end: "longer than the run" said 0.0005 s > 0.001 s */
		snprintf(out, len, "--delay %g s: the run ended %.4f s after its start, before "
			 "the drain thread opened the window (within about a millisecond)",
			 gt_cfg.delay_ns / 1e9, (now_ns - gt_st.anchor_clock_ns) / 1e9);
	/* one line of the list: no tab, no newline */
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < ' ')
			*c = '?';
}

GT_STARTUP_CODE void capture__report_at_exit(void)
{
	char why[900];

	if (!gt_cap.controlled || !gt_under_run())
		return;
	if (atomic_load(&gt_cap.windows)) {
		gt_run_note('w', NULL);
	} else {
		no_window_reason(why, sizeof(why), gt_clock_ns());
		gt_run_note('!', why);
	}
}
