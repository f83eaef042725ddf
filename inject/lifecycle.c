/* SPDX-License-Identifier: MIT */
/*
 * How the trace survives the process's end, whatever it is: normal exit,
 * _exit, fatal signals, fork, exec. In every case the file on disk is
 * closed valid first, and the program then does exactly what it would have
 * done untraced: it dies by the same signal, its own handlers and SIG_IGN
 * still win, exec replaces the image, the child of fork traces on its own.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pty.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "capture.h"
#include "clock.h"
#include "config.h"
#include "futex.h"
#include "hooks.h"
#include "injection.h"
#include "registry.h"
#include "shim.h"
#include "stacks.h"
#include "state.h"
#include "watchdog.h"
#include "trigger.h"

extern char **environ;

static _Atomic int finish_claimed GT_STARTUP_STATE;
/* The thread that claimed it and ends the trace (0: none, or nothing was live) */
static _Atomic int finisher_tid GT_STARTUP_STATE;
/* Another thread's exit() after the finisher's last drain waits this long for the
 * finisher to end the process (exit_while_finishing) */
#define EXIT_RACE_WAIT_MS 1000
/* Our handler, standing in for SIG_DFL, is ending the process by a fatal signal: a
 * thread's exit() then waits for it (else, while the handler waited for the last
 * drain, the program's own exit status could win over the crash) */
static _Atomic bool dying_by_signal GT_STARTUP_STATE;
#define DYING_WAIT_MS 10000 /* the handler waits 3000 ms at most; then exit() goes on */
/* this thread is finishing, while it stops the backends (thread-local: no
 * gettid at every exit) */
static GT_TLS bool finishing_here;
GT_HIDDEN const char *_Atomic gt_end_reason GT_STARTUP_STATE;
GT_HIDDEN const char *_Atomic gt_opening_file; /* state.h */
GT_HIDDEN _Atomic bool gt_signal_in_call;      /* state.h */
GT_HIDDEN _Atomic bool gt_exit_in_call;        /* state.h */
GT_HIDDEN _Atomic int gt_exit_status GT_STARTUP_STATE;

/* ---- the writer's hooks ---- */

extern const struct gt_lifecycle_hooks *const __start_gt_lifecycle_hooks[]
	__attribute__((weak, visibility("hidden")));
extern const struct gt_lifecycle_hooks *const __stop_gt_lifecycle_hooks[]
	__attribute__((weak, visibility("hidden")));

static void no_writer(void)
{
}

static int no_writer_start(void)
{
	return 0;
}

static int no_writer_sync(bool final, unsigned timeout_ms)
{
	return 0;
}

static bool no_writer_thread(void)
{
	return false;
}

static int no_writer_wake(void)
{
	return GT_WAKE_NONE;
}

static void no_writer_recording(void)
{
}

static int no_writer_dump(const char *reason)
{
	return -ENOTSUP;
}

static bool no_writer_ring_full(struct ring *r)
{
	return false;
}

static uint64_t no_writer_progress(bool *writing)
{
	*writing = false;
	return 0;
}

static const struct gt_lifecycle_hooks no_hooks = {
	.init = no_writer,
	.start = no_writer_start,
	.sync = no_writer_sync,
	.fork_prepare = no_writer,
	.fork_parent = no_writer,
	.forget = no_writer,
	.is_own_thread = no_writer_thread,
	.recording = no_writer_recording,
	.flight_dump = no_writer_dump,
	.own_ring_full = no_writer_ring_full,
	.wake = no_writer_wake,
	.progress = no_writer_progress,
};

GT_STARTUP_CODE const struct gt_lifecycle_hooks *lifecycle__hooks(void)
{
	const struct gt_lifecycle_hooks *const *first = __start_gt_lifecycle_hooks;

	return first && first < __stop_gt_lifecycle_hooks ? *first : &no_hooks;
}

/* glibc's own entry, not found through dlsym: sanitizer runtimes call our
 * sigaction while they start, before dlsym may be called. */
extern int __sigaction(int, const struct sigaction *, struct sigaction *);
static int (*const real_sigaction)(int, const struct sigaction *, struct sigaction *) = __sigaction;

/* ---- finishing ---- */

/* False in a vfork child: it shares our memory, but the trace is the
 * parent's to write and close. */
GT_STARTUP_CODE static bool own_process(void)
{
	return gt_st.pid && (pid_t)gt_rawsys(SYS_getpid, 0, 0) == gt_st.pid; /* rawsys.h */
}

/*
 * from_signal: in a fatal signal's handler. fault: that signal is a crash
 * (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT). After any fatal signal the
 * drain thread, not the handler, reads the device's last records (a GPU's
 * finished work), within the time the handler waits: the host's calls are
 * in the file before (writer/drain.c, host_pass), since the signalled
 * thread may hold a lock of the vendor library's that the read waits for.
 */
static GT_TLS unsigned char fork_holds;
/* a fatal signal that landed in this thread's fork(), delivered again after it */
static GT_TLS int fork_deferred;
static void fork_release(void);

/* As many timeouts in all as the finisher's own wait (writer/thread.c,
 * SYNC_PROGRESS_CAP) */
#define FINISHER_WAIT_ROUNDS 10

/*
 * Another thread is ending the trace (an exit's last drain, or a signal's):
 * waited for as that thread waits for the drain, timeout_ms at a time while
 * the drain progresses (a write the kernel holds, a FIFO's slow reader,
 * counts). A flat timeout_ms cut a long last drain short: a SIGTERM during an
 * exit's drain into a FIFO whose reader was slow ended the process after 3 s,
 * the stream cut mid-event, without a word. Rare: out of the start-up text.
 */
static __attribute__((noinline, cold)) void wait_finisher(const char *why, unsigned timeout_ms)
{
	const struct gt_lifecycle_hooks *h = lifecycle__hooks();
	bool writing, stuck = false;
	uint64_t progress = h->progress(&writing);

	for (unsigned round = 0; round < FINISHER_WAIT_ROUNDS && !stuck; round++) {
		if (gt_phase_wait_done(timeout_ms))
			return;
		uint64_t moved = h->progress(&writing);

		stuck = moved == progress && !writing;
		progress = moved;
	}
	const char *ending = atomic_load(&gt_end_reason);

	/* this thread ends the process now (a signal, _exit): the file is
	 * the last checkpoint's, which the user is told, as by the finisher */
	if (stuck)
		pr_warn("the last drain (%s; then %s) made no progress for %u ms: the trace "
			"keeps its last checkpoint, without the events recorded after it",
			ending ? ending : "?", why, timeout_ms);
	else
		pr_warn("the last drain (%s; then %s) was not over after %u ms: the trace keeps "
			"its last checkpoint, without the events recorded after it",
			ending ? ending : "?", why, timeout_ms * FINISHER_WAIT_ROUNDS);
}

/* Is this thread, which has a wrapper's guard, inside that traced call (its
 * frame still there)? Off the start-up pages: only a thread that made a
 * traced call gets here. */
static __attribute__((noinline, cold)) bool exit_in_call(void)
{
	/* a wrapper's frame below ours (the guard it took: inject/event.h) */
	bool in = !gt_guard_stale((uintptr_t)__builtin_frame_address(0));

	if (in)
		atomic_store(&gt_exit_in_call, true);
	return in;
}

GT_STARTUP_CODE static void finish(const char *why, unsigned timeout_ms, bool from_signal, bool fault)
{
	const char *opening;
	int err;

	if (!own_process())
		return;
	/* the watchdog stops with the process's end; a look or report under way
	 * ends first (it may be asking the driver that the exit tears down, or
	 * waiting for the drain this exit's last cycle ends) */
	if (gt_unlikely(gt_watchdog_on))
		watchdog__end();
	/* a fatal signal (or a handler's exit()) in this thread's fork(): the
	 * last cycle needs what the fork holds (tested here: the code of every
	 * process's exit stays on its pages) */
	if (gt_unlikely(fork_holds))
		fork_release();
	if (fault && atomic_load(&finish_claimed) && gt_ending_on_signal() &&
	    lifecycle__hooks()->is_own_thread()) {
		/* The drain thread faulted in the last read that another thread's
		 * signal asked for (memory a crash corrupted): it stops here; that
		 * handler's wait runs out, the file keeps what was written before
		 * (every host call), and the process dies by the first signal, with
		 * its core, not by ours. */
		for (;;)
			pause();
	}
	if (atomic_exchange(&finish_claimed, 1)) {
		/* A fault inside our own exit path (a plug-in crashing while it
		 * hands over its events at exit): the exit never gets to the
		 * final drain, so the signal closes the trace, as for any crash. */
		if (!from_signal || !finishing_here || !gt_live()) {
			/* another thread's exit() is finishing the trace: wait
			 * for it (a futex wake when it is done, not a sleep loop) */
			wait_finisher(why, timeout_ms);
			/* ... or a fatal signal's handler, which then ends the process
			 * by it: this exit() is not to end it first, with the status
			 * a crash would have denied it (a rare path: a plain wait) */
			for (unsigned ms = 0; !from_signal && ms < DYING_WAIT_MS &&
					      atomic_load(&dying_by_signal); ms += 10)
				nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
			return;
		}
	} else if (!gt_live()) {
		return;
	}
	atomic_store(&finisher_tid, gt_gettid());
	atomic_store(&gt_end_reason, why);
	/* Other threads may go on calling while the trace is finished: what
	 * they start from now on is after the trace's end, as the device's
	 * last read cannot follow it (their launches had no device work). */
	shim__end_host();
	trigger__withdraw();
	if (!from_signal)
		capture__report_at_exit();
	if (fault) {
		atomic_store(&gt_st.crash_tid, gt_gettid());
		atomic_store(&gt_st.crashing, true);
	}
	gt_in_tracer++;
	/* Backends read what the device finished while recording still runs.
	 * Not from a signal handler: vendor libraries are not signal-safe. Nor
	 * in an exit inside a traced call of this thread (a signal handler's
	 * exit() where the handler interrupted one): the thread may hold the
	 * driver's lock or a backend's, and the stop waited for itself, for good
	 * (exit(9) from a SIGALRM handler: 3 runs in 6 hung); as for a signal,
	 * the last drain writes the host's part first and waits for a backend's
	 * lock for a bounded time (gt_exit_in_call). */
	if (!from_signal && !(gt_unlikely(gt_guard_sp) && exit_in_call())) {
		finishing_here = true;
		atomic_signal_fence(memory_order_seq_cst); /* seen by this thread's handler */
		shim__backends_call(GT_HOOK_STOP, NULL, NULL);
		atomic_signal_fence(memory_order_seq_cst);
		finishing_here = false;
	}
	if (!shim__recorded_anything() || (from_signal && !shim__has_events())) {
		/* no traced call, nothing lost, no backend at work (or, from a
		 * fatal signal, none asked for a last flush): no file to close,
		 * no cycle to wait for */
		gt_phase_set(GT_PHASE_DONE);
	} else if (lifecycle__hooks()->is_own_thread()) {
		/* The drain thread is us (it crashed): what the last checkpoint
		 * holds is what the file keeps. */
		gt_phase_set(GT_PHASE_DONE);
	} else if ((err = lifecycle__hooks()->sync(true, timeout_ms)) < 0) {
		/* ... and so when it is stuck, which the user is told */
		if (err == -EINPROGRESS)
			pr_warn("the device's last records (%s) were not read: %s did not "
				"answer for %u ms; the trace holds every host call up to then, its "
				"trailer says \"device_flush\":\"unfinished\"", why,
				shim__flushing_backend(), timeout_ms);
		else if ((opening = atomic_load(&gt_opening_file)))
			/* no checkpoint to keep: the file never opened */
			pr_warn("the last drain (%s) waited %u ms for the trace's file to open (%s: "
				"a FIFO nobody reads blocks its open): no trace written", why,
				timeout_ms, opening);
		else
			pr_warn("the last drain (%s) made no progress for %u ms: the trace keeps its "
				"last checkpoint, without the events recorded after it", why, timeout_ms);
		gt_phase_set(GT_PHASE_DONE);
	}
	gt_in_tracer--;
}

bool lifecycle__finishing_here(void)
{
	return finishing_here;
}

bool lifecycle__on_drain_thread(void)
{
	return lifecycle__hooks()->is_own_thread();
}

void lifecycle__finish_for(bool on)
{
	/* what the plug-ins' caller records, for the ending thread or for the
	 * drain (whose own records were), is the trace's own (drain.c) */
	atomic_store(&gt_st.host_end_helper_tid, gt_gettid());
	finishing_here = on;
	atomic_signal_fence(memory_order_seq_cst); /* seen by this thread's handler */
}

bool lifecycle__crashed(int tid)
{
	return atomic_load(&gt_st.crashing) && atomic_load(&gt_st.crash_tid) == tid;
}

GT_STARTUP_CODE void gt_finish(const char *why, unsigned timeout_ms)
{
	finish(why, timeout_ms, false, false);
}

int gt_flight_dump(const char *reason)
{
	return lifecycle__hooks()->flight_dump(reason);
}

void gt_flush_sync(unsigned timeout_ms)
{
	if (own_process() && gt_tracing())
		lifecycle__hooks()->sync(false, timeout_ms);
}

bool gt_wake_writer(void)
{
	return own_process() && gt_tracing() && lifecycle__hooks()->wake() != GT_WAKE_NONE;
}

bool gt_drain_lock(pthread_mutex_t *lock)
{
	uint64_t give_up = 0;

	for (;;) {
		struct timespec until;

		if (!pthread_mutex_trylock(lock))
			return true;
		if (gt_ending_on_signal() || atomic_load(&gt_exit_in_call)) {
			/* (not gt_clock_ns: this file is built without the sanitizers,
			 * whose builds have no TSC line) */
			uint64_t now = gt_clock_gettime_ns();

			if (!give_up)
				give_up = now + GT_DRAIN_LOCK_GIVE_UP_MS * 1000000ull;
			else if (now >= give_up)
				return false;
		}
		/* a holder that lets go wakes us at once; the millisecond is
		 * only how often the signal is looked for */
		until = gt_timespec_after_ms(CLOCK_REALTIME, 1);
		if (!pthread_mutex_timedlock(lock, &until))
			return true;
	}
}

/* ---- fatal signals ---- */

/* Every signal whose default action ends the process: crashes, requests
 * (SIGTERM, a batch system's SIGUSR1 before a time limit), and what an
 * everyday program dies of untraced (SIGPIPE under `| head`, an alarm, a
 * CPU or file-size limit). Real-time signals are added at run time
 * (SIGRTMIN is not a constant). SIGTRAP and SIGSYS are a debugger's and a
 * seccomp filter's, and stay theirs. */
#ifdef SIGSTKFLT
#define GT_SIG_STKFLT(X) X(SIGSTKFLT)
#else
#define GT_SIG_STKFLT(X)
#endif
#ifdef SIGPWR
#define GT_SIG_PWR(X) X(SIGPWR)
#else
#define GT_SIG_PWR(X)
#endif
#define FATAL_SIGNALS(X) X(SIGSEGV) X(SIGBUS) X(SIGILL) X(SIGFPE) X(SIGABRT) X(SIGTERM) \
	X(SIGINT) X(SIGHUP) X(SIGQUIT) X(SIGUSR1) X(SIGUSR2) X(SIGPIPE) X(SIGALRM)       \
	X(SIGVTALRM) X(SIGPROF) X(SIGXCPU) X(SIGXFSZ) X(SIGIO) GT_SIG_PWR(X) GT_SIG_STKFLT(X)

static const int fatal_signals[] = {
#define GT_SIG_ENTRY(s) s,
	FATAL_SIGNALS(GT_SIG_ENTRY)
#undef GT_SIG_ENTRY
};

/* What the program believes is installed for signals where our handler
 * stands in for SIG_DFL. */
static struct sigaction app_action[NSIG];
static _Atomic bool ours[NSIG];
static atomic_flag sig_lock = ATOMIC_FLAG_INIT;
/* Our handlers go in with the process's first recording: before it there is
 * no file to close, and a process that never records (most of a job's)
 * pays no sigaction calls at start. */
static _Atomic bool signals_armed GT_STARTUP_STATE;
/* The real-time signals' reasons, named as `kill -l` does ("signal
 * SIGRTMIN+3", "signal SIGRTMAX-2"), written when the handlers go in: the
 * handler only reads them. */
static char rt_reason[NSIG][24];

static const char *signal_reason(int sig)
{
	switch (sig) {
#define GT_SIG_NAME(s) case s: return "signal " #s;
		FATAL_SIGNALS(GT_SIG_NAME)
#undef GT_SIG_NAME
	}
	if (sig > 0 && sig < NSIG && rt_reason[sig][0])
		return rt_reason[sig];
	return "signal";
}

static void name_rt_signal(int sig)
{
	int lo = SIGRTMIN, hi = SIGRTMAX;

	if (sig == lo)
		snprintf(rt_reason[sig], sizeof(rt_reason[sig]), "signal SIGRTMIN");
	else if (sig == hi)
		snprintf(rt_reason[sig], sizeof(rt_reason[sig]), "signal SIGRTMAX");
	else if (sig - lo <= (hi - lo) / 2)
		snprintf(rt_reason[sig], sizeof(rt_reason[sig]), "signal SIGRTMIN+%d", sig - lo);
	else
		snprintf(rt_reason[sig], sizeof(rt_reason[sig]), "signal SIGRTMAX-%d", hi - sig);
}

static void on_fatal_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t set;

	if (gt_unlikely(fork_holds) && !(si && si->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS ||
								 sig == SIGILL || sig == SIGFPE))) {
		/* In this thread's fork(), between our prepare and parent handlers:
		 * glibc holds malloc's and stdio's locks there (and we ours), which
		 * the last drain needs: it waited 3 s and the trace kept its last
		 * checkpoint. Delivered again once the fork is over (atfork_parent). */
		fork_deferred = sig;
		errno = saved;
		return;
	}
	atomic_store(&dying_by_signal, true);
	if (gt_in_tracer || gt_guard_sp)
		atomic_store(&gt_signal_in_call, true);
	finish(signal_reason(sig), 3000, true,
	       sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT);
	/* Now do what the default would have done: die by this signal. */
	sigemptyset(&dfl.sa_mask);
	real_sigaction(sig, &dfl, NULL);
	atomic_store(&ours[sig], false);
	if (si && si->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
				      sig == SIGFPE)) {
		/* A fault: returning re-runs the instruction, which faults
		 * again under SIG_DFL, with the same address and core. */
		errno = saved;
		return;
	}
	sigemptyset(&set);
	sigaddset(&set, sig);
	syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	errno = saved;
}

/* A mask, not a look in fatal_signals: a shell's every sigaction() asks, and
 * the table is in .rodata, a page of its own (GT_STARTUP_CONST). */
static bool is_fatal(int sig)
{
#define GT_SIG_BIT(s) | (1ull << (s))
	const unsigned long long fatal = 0 FATAL_SIGNALS(GT_SIG_BIT);
#undef GT_SIG_BIT

	if (sig > 0 && sig < 32)
		return (fatal >> sig) & 1;
	return sig >= SIGRTMIN && sig <= SIGRTMAX;
}

/*
 * ThreadSanitizer's sigaction, when its runtime is in the process: our handler
 * goes in through it, and it delivers a signal sent by kill() at a safe point.
 * Handed to us by the kernel directly, such a signal can land inside the
 * runtime while it holds the lock of an atomic's shadow state; the last drain,
 * reading the same atomic, then waits for the handler that waits for it (the
 * drain made no progress for 3 s, test_terminated_mid_run under TSan).
 */
static int (*sanitizer_sigaction)(int, const struct sigaction *, struct sigaction *);
/* installing through it: its call of the next sigaction (ours) goes to the kernel */
static GT_TLS bool installing_ours;

static void install_ours(int sig)
{
	struct sigaction sa = { .sa_sigaction = on_fatal_signal, .sa_flags = SA_SIGINFO };
	int ret;

	sigemptyset(&sa.sa_mask);
	if (sanitizer_sigaction) {
		installing_ours = true;
		ret = sanitizer_sigaction(sig, &sa, NULL);
		installing_ours = false;
	} else {
		ret = real_sigaction(sig, &sa, NULL);
	}
	if (!ret)
		atomic_store(&ours[sig], true);
}

/* Ours in for sig, only where nobody chose otherwise (nohup's SIG_IGN stays). */
static void arm_one(int sig)
{
	struct sigaction cur;

	/* the program's sigaction() may run meanwhile in another thread */
	while (atomic_flag_test_and_set(&sig_lock))
		;
	if (!real_sigaction(sig, NULL, &cur) && cur.sa_handler == SIG_DFL &&
	    !(cur.sa_flags & SA_SIGINFO)) {
		app_action[sig] = cur;
		install_ours(sig);
	}
	atomic_flag_clear(&sig_lock);
}

void lifecycle__arm_signals(void)
{
	int trig;

	if (atomic_load_explicit(&signals_armed, memory_order_relaxed))
		return;
	if (gt_dlsym_real(RTLD_DEFAULT, "__tsan_init"))
		sanitizer_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))
			gt_dlsym_real(RTLD_DEFAULT, "__interceptor_sigaction");
	/* Not the capture trigger's signal (a real-time one, SIGUSR1 or SIGUSR2):
	 * its handler may go in later, where the signal is at SIG_DFL
	 * (trigger.c). The hang watchdog takes a real-time one through our
	 * sigaction, as a program's handler would (watchdog.c). */
	trig = trigger__signal();
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		if (fatal_signals[i] != trig)
			arm_one(fatal_signals[i]);
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++) {
		if (sig == trig)
			continue;
		name_rt_signal(sig);
		arm_one(sig);
	}
	atomic_store(&signals_armed, true);
}

/* The program's sigaction: where it asks for SIG_DFL on a fatal signal we
 * keep our handler (which ends in SIG_DFL's action) and show it SIG_DFL;
 * a handler of its own or SIG_IGN is installed for real and wins. */
GT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
	int ret = 0;

	if (installing_ours)
		return real_sigaction(sig, act, oldact);
	if (trigger__sigaction(sig, act, oldact, &ret))
		return ret;
	/* armed first: a process that never records (a shell) asks no
	 * SIGRTMIN, a call into libc (a binding, a page of its text) */
	if (sig <= 0 || sig >= NSIG || !gt_st.pid || !atomic_load(&signals_armed) ||
	    !is_fatal(sig))
		return real_sigaction(sig, act, oldact);
	while (atomic_flag_test_and_set(&sig_lock))
		;
	struct sigaction old = app_action[sig];
	bool was_ours = atomic_load(&ours[sig]);

	if (!was_ours)
		ret = real_sigaction(sig, NULL, &old);
	if (!ret && act) {
		bool wants_default = !(act->sa_flags & SA_SIGINFO) ? act->sa_handler == SIG_DFL
								    : act->sa_sigaction == NULL;
		if (wants_default && gt_tracing()) {
			app_action[sig] = *act;
			/* Through a sanitizer's sigaction, ours goes in again: its interceptor
			 * took the program's SIG_DFL as the handler it hands the signal to
			 * before it called us, and would swallow the signal (a shell's `kill
			 * -TERM $$` under TSan went on: the signal reached no handler). */
			if (!was_ours || sanitizer_sigaction)
				install_ours(sig);
		} else {
			ret = real_sigaction(sig, act, NULL);
			if (!ret)
				atomic_store(&ours[sig], false);
		}
	}
	atomic_flag_clear(&sig_lock);
	if (!ret && oldact)
		*oldact = old;
	return ret;
}

/*
 * glibc's other calls that install a handler go to its internal __sigaction,
 * past ours: each is done again here on our sigaction, as glibc 2.36 does it
 * (signal/, sysdeps/posix/), so what sigaction promises holds for them too.
 */

/* siginterrupt()'s signals, glibc's _sigintr: signal() leaves out SA_RESTART.
 * Beside the start-up state: a shell's every signal() reads it. */
static _Atomic unsigned long long sig_interrupts GT_STARTUP_BSS;

static bool bad_disposition(int sig, sighandler_t handler)
{
	if (handler != SIG_ERR && sig >= 1 && sig < NSIG)
		return false;
	errno = EINVAL;
	return true;
}

/* signal(), bsd_signal(), ssignal(): BSD semantics, restart (unless
 * siginterrupt said otherwise), no reset, the signal masked in its handler */
static sighandler_t bsd_signal_as_glibc(int sig, sighandler_t handler)
{
	struct sigaction sa = { .sa_handler = handler }, old;

	if (bad_disposition(sig, handler))
		return SIG_ERR;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig);
	if (!((atomic_load(&sig_interrupts) >> (sig - 1)) & 1))
		sa.sa_flags = SA_RESTART;
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

GT_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	return bsd_signal_as_glibc(sig, handler);
}

/* System V semantics: reset to SIG_DFL on delivery, not masked, no restart */
static sighandler_t sysv_signal_as_glibc(int sig, sighandler_t handler)
{
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESETHAND | SA_NODEFER },
			 old;

	if (bad_disposition(sig, handler))
		return SIG_ERR;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

GT_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	return sysv_signal_as_glibc(sig, handler);
}

/* glibc's other names of the two: bsd_signal and ssignal are signal(), and
 * __sysv_signal is what signal() is in a program built with strict ISO C
 * (-std=c11) */
#define GT_SIGNAL_ALIASES(X)                                                               \
	X(bsd_signal, bsd_signal_as_glibc)                                                 \
	X(ssignal, bsd_signal_as_glibc)                                                    \
	X(__sysv_signal, sysv_signal_as_glibc)
#define GT_SIGNAL_ALIAS(name, of)                                                          \
	extern sighandler_t name(int sig, sighandler_t handler);                           \
	GT_EXPORT sighandler_t name(int sig, sighandler_t handler) __attribute__((alias(#of)));
GT_SIGNAL_ALIASES(GT_SIGNAL_ALIAS)
#undef GT_SIGNAL_ALIAS

/* System V's sigset(): SIG_HOLD only blocks; another disposition goes in
 * and unblocks; SIG_HOLD is returned where the signal was blocked. As
 * glibc's, it takes SIG_ERR as a handler. */
GT_EXPORT sighandler_t sigset(int sig, sighandler_t disp)
{
	struct sigaction sa = { .sa_handler = disp }, old;
	sigset_t set, oset;

	sigemptyset(&set);
	if (sigaddset(&set, sig) < 0) /* EINVAL: out of range, or glibc's own */
		return SIG_ERR;
	if (disp == SIG_HOLD) {
		if (sigprocmask(SIG_BLOCK, &set, &oset) < 0)
			return SIG_ERR;
		if (sigismember(&oset, sig) == 1)
			return SIG_HOLD;
		if (sigaction(sig, NULL, &old) < 0)
			return SIG_ERR;
		return old.sa_handler;
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	if (sigprocmask(SIG_UNBLOCK, &set, &oset) < 0)
		return SIG_ERR;
	return sigismember(&oset, sig) == 1 ? SIG_HOLD : old.sa_handler;
}

GT_EXPORT int sigignore(int sig)
{
	struct sigaction sa = { .sa_handler = SIG_IGN };

	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

/* Installs the disposition again with SA_RESTART changed (our sigaction
 * shows the program's own), and tells signal() for later. */
GT_EXPORT int siginterrupt(int sig, int interrupt)
{
	struct sigaction sa;

	if (sigaction(sig, NULL, &sa) < 0)
		return -1;
	if (interrupt) {
		atomic_fetch_or(&sig_interrupts, 1ull << (sig - 1));
		sa.sa_flags &= ~SA_RESTART;
	} else {
		atomic_fetch_and(&sig_interrupts, ~(1ull << (sig - 1)));
		sa.sa_flags |= SA_RESTART;
	}
	return sigaction(sig, &sa, NULL) < 0 ? -1 : 0;
}

/* 4.2BSD's sigvec(), in glibc for old binaries only (sigvec@GLIBC_2.2.5):
 * its struct and flags are in no header now. */
struct gt_sigvec {
	sighandler_t sv_handler;
	int sv_mask; /* bit sig - 1 for each signal from 1 to 32 */
	int sv_flags;
};
#define GT_SV_ONSTACK 1
#define GT_SV_INTERRUPT 2
#define GT_SV_RESETHAND 4

extern int sigvec(int sig, const struct gt_sigvec *vec, struct gt_sigvec *ovec);
GT_EXPORT int sigvec(int sig, const struct gt_sigvec *vec, struct gt_sigvec *ovec)
{
	struct sigaction sa = { 0 }, old;

	if (vec) {
		sa.sa_handler = vec->sv_handler;
		sigemptyset(&sa.sa_mask);
		/* glibc sets the bits as they are, its internal signals included */
		sa.sa_mask.__val[0] = (unsigned int)vec->sv_mask;
		if (vec->sv_flags & GT_SV_ONSTACK)
			sa.sa_flags |= SA_ONSTACK;
		if (!(vec->sv_flags & GT_SV_INTERRUPT))
			sa.sa_flags |= SA_RESTART;
		if (vec->sv_flags & GT_SV_RESETHAND)
			sa.sa_flags |= SA_RESETHAND;
	}
	if (sigaction(sig, vec ? &sa : NULL, &old) < 0)
		return -1;
	if (ovec) {
		ovec->sv_handler = old.sa_handler;
		ovec->sv_mask = (int)(unsigned int)old.sa_mask.__val[0];
		ovec->sv_flags = ((old.sa_flags & SA_ONSTACK) ? GT_SV_ONSTACK : 0) |
				 ((old.sa_flags & SA_RESTART) ? 0 : GT_SV_INTERRUPT) |
				 ((old.sa_flags & SA_RESETHAND) ? GT_SV_RESETHAND : 0);
	}
	return 0;
}

/*
 * A program that waits for the capture signal itself (a signal thread's
 * sigwaitinfo, a signalfd) uses it as one with a handler does: gputrace
 * steps aside (trigger.c). Not hot: the real call is looked up at the first.
 */
static void *_Atomic real_sigwait, *_Atomic real_sigwaitinfo, *_Atomic real_sigtimedwait,
	*_Atomic real_signalfd;

static void *real_of(void *_Atomic *slot, const char *name)
{
	void *f = atomic_load_explicit(slot, memory_order_acquire);

	if (!f) {
		f = gt_real(name);
		atomic_store_explicit(slot, f, memory_order_release);
	}
	return f;
}

GT_EXPORT int sigwait(const sigset_t *set, int *sig)
{
	__typeof__(sigwait) *real = real_of(&real_sigwait, "sigwait");

	trigger__program_waits(set);
	return real(set, sig);
}

GT_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	__typeof__(sigwaitinfo) *real = real_of(&real_sigwaitinfo, "sigwaitinfo");

	trigger__program_waits(set);
	return real(set, info);
}

GT_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	__typeof__(sigtimedwait) *real = real_of(&real_sigtimedwait, "sigtimedwait");

	trigger__program_waits(set);
	return real(set, info, timeout);
}

GT_EXPORT int signalfd(int fd, const sigset_t *mask, int flags)
{
	__typeof__(signalfd) *real = real_of(&real_signalfd, "signalfd");

	trigger__program_waits(mask);
	return real(fd, mask, flags);
}

/* ---- fork ---- */

/*
 * The real exec functions and _exit. A shell forks for every command and the
 * child execs at once, or exits (a subshell): looked up there, each child
 * would pay the lookups (two dlsym, ~5 us) and lose them with its image. The
 * parent looks them up before its first fork, once, and its children
 * inherit them.
 */
static __typeof__(execve) *_Atomic real_exec_execve GT_STARTUP_BSS;
static __typeof__(execvpe) *_Atomic real_exec_execvpe GT_STARTUP_BSS;
static __typeof__(fexecve) *_Atomic real_exec_fexecve GT_STARTUP_BSS;
static __typeof__(_exit) *_Atomic real_exec__exit GT_STARTUP_BSS;

/* Their names beside the start-up code (GT_STARTUP_CONST): a shell's first
 * fork looks them up, and would otherwise fault in a page of .rodata. */
static const char exit_name[] GT_STARTUP_CONST = "_exit";
static const char fexecve_name[] GT_STARTUP_CONST = "fexecve";
static const char execvpe_name[] GT_STARTUP_CONST = "execvpe";
static const char execve_name[] GT_STARTUP_CONST = "execve";

static void exec_resolve(void)
{
	/* execve last, released: the others are there once it is */
	if (atomic_load_explicit(&real_exec_execve, memory_order_acquire))
		return;
	atomic_store_explicit(&real_exec__exit, gt_real(exit_name), memory_order_relaxed);
	atomic_store_explicit(&real_exec_fexecve, gt_real(fexecve_name), memory_order_relaxed);
	atomic_store_explicit(&real_exec_execvpe, gt_real(execvpe_name), memory_order_relaxed);
	atomic_store_explicit(&real_exec_execve, gt_real(execve_name), memory_order_release);
}

/*
 * Our threads. One just made may still be in the thread start-up of the C
 * library or of a sanitizer, which allocates: ASan's (GCC 12) does not lock
 * its allocator across fork(), so a child forked then inherits a lock no
 * thread of its own releases, and its own drain thread hangs on it (CI saw
 * it: a fork right after the first traced call). fork() waits until each
 * has reached its own code, for at most THREAD_START_WAIT_MS.
 */
#define THREAD_START_WAIT_MS 200
static _Atomic uint32_t threads_starting GT_STARTUP_STATE;

/*
 * glibc ends a process when its last thread exits (main's pthread_exit, then the
 * others return): it counts threads in __nptl_nthreads, ours among them, so with
 * ours alive that exit never came and the process lived on, waiting for nothing.
 * Ours are counted here; when glibc counts no other, the drain thread ends the
 * process as glibc would have: exit(0), from a thread of the program's kind.
 */
static _Atomic int own_threads_live;
static const unsigned int *nptl_nthreads; /* NULL: not glibc's, never asked */

/* arg: the thread's main function itself (POSIX lets a function pointer
 * travel as a void *, as dlsym() returns them): nothing to allocate or free */
static void *own_thread_main(void *arg)
{
	void *(*main_fn)(void *) = (void *(*)(void *))(uintptr_t)arg;
	void *ret;

	ret = main_fn(NULL);
	atomic_fetch_sub(&own_threads_live, 1);
	return ret;
}

int lifecycle__spawn(pthread_t *thread, void *(*main_fn)(void *))
{
	pthread_attr_t attr;
	sigset_t all;
	int err;

	if (!nptl_nthreads)
		nptl_nthreads = dlvsym(RTLD_DEFAULT, "__nptl_nthreads", "GLIBC_PRIVATE");
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* born with every signal blocked, not only once its function blocks them:
	 * a signal meant for the program could land on it as it starts */
	sigfillset(&all);
	pthread_attr_setsigmask_np(&attr, &all);
	atomic_fetch_add(&threads_starting, 1);
	err = pthread_create(thread, &attr, own_thread_main, (void *)(uintptr_t)main_fn);
	pthread_attr_destroy(&attr);
	if (err) {
		lifecycle__thread_up();
		return -err;
	}
	/* counted after glibc has (inside pthread_create), and uncounted before
	 * glibc does (after own_thread_main returns): ours never reach glibc's
	 * count, not even for a moment, while a program thread lives (counted
	 * first, a spawn while main alone ran looked like no program thread left,
	 * and the process ended with status 0) */
	atomic_fetch_add(&own_threads_live, 1);
	return 0;
}

static void *last_thread_exit(void *arg)
{
	(void)arg;
	exit(0);
}

void lifecycle__check_last_thread(void)
{
	static _Atomic bool ended;
	pthread_attr_t attr;
	pthread_t t;

	/* glibc's own count, read as its exiting threads write it */
	if (gt_likely(!nptl_nthreads ||
		      __atomic_load_n(nptl_nthreads, __ATOMIC_ACQUIRE) >
			      (unsigned int)atomic_load(&own_threads_live)) ||
	    atomic_exchange(&ended, true))
		return;
	/* a thread of no count of ours: exit() there waits for the drain as any
	 * program thread's would (this thread's own exit could not) */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, last_thread_exit, NULL))
		atomic_store(&ended, false);
	pthread_attr_destroy(&attr);
}

void lifecycle__thread_up(void)
{
	if (atomic_fetch_sub(&threads_starting, 1) == 1)
		gt_futex(&threads_starting, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

static void wait_threads_started(void)
{
	uint32_t n = atomic_load(&threads_starting);
	uint64_t until, now;

	if (!n) /* nearly every fork: no clock read */
		return;
	until = gt_clock_gettime_ns() + THREAD_START_WAIT_MS * 1000000ull;
	while (n && (now = gt_clock_gettime_ns()) < until) {
		gt_futex_wait_ns(&threads_starting, n, until - now);
		n = atomic_load(&threads_starting);
	}
}

/*
 * What this thread's fork() holds, from our prepare handler to our parent
 * handler: 1 the drain's cycle (from the wait for it on), 2 and the registry,
 * 3 and the run lock. A
 * signal sent during the clone is delivered as it returns, before the parent
 * handler, with these and glibc's malloc and stdio locks held: the last cycle
 * of a fatal one's handler waited 3 s for them, and the trace kept its last
 * checkpoint (a SIGTERM to a program that forks often: half the runs). Our
 * handler now takes it again after the fork (fork_deferred); a program's
 * handler that calls exit() there has ours let go (finish). Each is marked
 * let go before it is: a program's exit() in between keeps one held (the old
 * wait), never unlocks one twice. (fork_holds is declared above finish().)
 */

/* Lock order as in the drain cycle: the cycle first, then the registry. */
static void atfork_prepare(void)
{
	exec_resolve();
	wait_threads_started();
	/* before the wait for the cycle: a fork waiting for it has the drain yield
	 * (writer/thread.c, fork_pending), and a last drain asked for meanwhile by
	 * this thread's fatal signal was starved 3 s on a busy machine */
	fork_holds = 1;
	atomic_signal_fence(memory_order_seq_cst);
	lifecycle__hooks()->fork_prepare();
	registry__lock_all();
	fork_holds = 2;
	shim__run_locks_fork_prepare();
	fork_holds = 3;
}

static void fork_release(void)
{
	if (fork_holds == 3) {
		fork_holds = 2;
		shim__run_locks_fork_done();
	}
	if (fork_holds == 2) {
		fork_holds = 1;
		registry__unlock_all();
	}
	/* still 1 while the writer lets go (each of its holds marked let go
	 * before it is): a signal in between is deferred, not starved */
	lifecycle__hooks()->fork_parent();
	atomic_signal_fence(memory_order_seq_cst);
	fork_holds = 0;
}

static void atfork_parent(void)
{
	if (fork_holds)
		fork_release();
	if (gt_unlikely(fork_deferred)) {
		int sig = fork_deferred;

		fork_deferred = 0;
		syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), sig);
	}
}

GT_FORK_CODE static void atfork_child(void)
{
	/* a signal deferred before the clone (the kernel restarts a clone a
	 * signal interrupted, after the handler): untraced, the process had
	 * died with no child; the child dies by it (below, as it starts) */
	int deferred = fork_deferred;

	fork_deferred = 0;
	fork_holds = 0; /* released below, each anew */
	gt_clock_fork_child();
	atomic_store(&threads_starting, 0); /* those were the parent's */
	atomic_store(&own_threads_live, 0);
	shim__run_locks_fork_done();
	registry__unlock_all();
	registry__fork_child();
	stacks__fork_child();
	/* the child's cycle lock is made anew by forget() below, or
	 * released here when the tracer is not running */
	lifecycle__hooks()->fork_parent();
	/* the parent's watchdog thread is not here */
	atomic_store(&gt_watchdog_alone, false);
	atomic_store(&gt_watchdog_looking, false);
	if (gt_live()) {
		/* None of the parent's events, none of its file: a trace of our own. */
		atomic_store(&gt_phase, GT_PHASE_OFF);
		lifecycle__hooks()->forget();
		shim__forget_rings();
		atomic_store(&gt_st.host_end_ns, 0);
		atomic_store(&finish_claimed, 0);
		atomic_store(&finisher_tid, 0);
		atomic_store(&gt_end_reason, NULL);
		shim__backends_fork_child();
		shim__start_process();
	}
	if (gt_unlikely(deferred))
		syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), deferred);
}

/* ---- exec: close the file valid first; if exec fails, go on ---- */

/* before_exec told the backends (their recorders stopped): a failed exec
 * starts them again */
static _Atomic bool exec_told;

/* Whether this thread's exec took back the process's announcement: the new
 * image announces itself if it is traced; one the preload does not reach would
 * be sent `gputrace capture`'s real-time signal, which ends a process untraced. */
static GT_TLS bool exec_withdrew;

static void before_exec(void)
{
	if (!own_process())
		return;
	exec_withdrew = trigger__withdraw();
	if (!gt_tracing() || !shim__recorded_anything())
		return;
	gt_in_tracer++;
	/* recorders that hand over only when stopped (Kineto's profilers) do so
	 * now, before the end: what they hand over is this image's */
	atomic_store(&exec_told, true);
	shim__backends_exec(false);
	atomic_store(&gt_end_reason, "exec");
	/* two cycles: device work a backend reads only in a cycle after the program's
	 * last read of it (Level Zero's, deferred to the drain thread) is in the file too */
	lifecycle__hooks()->sync(false, 3000);
	lifecycle__hooks()->sync(false, 3000);
	gt_in_tracer--;
}

static void after_failed_exec(void)
{
	atomic_store(&gt_end_reason, NULL);
	if (exec_withdrew) {
		exec_withdrew = false;
		trigger__announce();
	}
	if (atomic_exchange(&exec_told, false) && own_process()) {
		gt_in_tracer++;
		shim__backends_exec(true);
		gt_in_tracer--;
	}
}

#define REAL(name)                                                                         \
	static __typeof__(name) *real_##name;                                              \
	if (!real_##name)                                                                  \
		real_##name = gt_real(#name)

/* The exec family, one table: each wrapper closes the trace before the real
 * call and carries on if it returns (the exec failed). The new image gets
 * the environment the call names (environ for execv/execvp), less our
 * injection variables when that environment drops the preload
 * (injection.h): execv and execvp then go through execve and execvpe, as
 * glibc's own do. */
#define EXEC_WRAPPERS(X)                                                                   \
	X(execve, (const char *path, char *const argv[], char *const envp[]), envp,       \
	  execve, (path, argv, env))                                                       \
	X(execv, (const char *path, char *const argv[]), environ, execve, (path, argv, env)) \
	X(execvp, (const char *file, char *const argv[]), environ, execvpe,               \
	  (file, argv, env))                                                               \
	X(execvpe, (const char *file, char *const argv[], char *const envp[]), envp,      \
	  execvpe, (file, argv, env))                                                      \
	X(fexecve, (int fd, char *const argv[], char *const envp[]), envp, fexecve,       \
	  (fd, argv, env))

/* Environments longer than this keep our variables (a copy on the stack). */
#define CHILD_ENV_MAX 4096

#define EXEC_WRAPPER(name, params, source, real, args)                                     \
	GT_EXPORT int name params                                                          \
	{                                                                                  \
		size_t n_ = injection__env_len(source);                                    \
		char *buf_[n_ <= CHILD_ENV_MAX ? n_ : 1];                                  \
		char *const *env = injection__child_env(source, buf_, sizeof(buf_) / sizeof(*buf_)); \
		exec_resolve();                                                            \
		before_exec();                                                             \
		int ret = atomic_load_explicit(&real_exec_##real, memory_order_relaxed) args; \
		after_failed_exec();                                                       \
		return ret;                                                                \
	}
EXEC_WRAPPERS(EXEC_WRAPPER)
#undef EXEC_WRAPPER

/* posix_spawn starts a new image without an exec of ours: only its
 * environment is looked at. */
#define SPAWN_WRAPPER(name)                                                                \
	GT_EXPORT int name(pid_t *pid, const char *path,                                   \
			   const posix_spawn_file_actions_t *actions,                      \
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) \
	{                                                                                  \
		size_t n_ = injection__env_len(envp);                                      \
		char *buf_[n_ <= CHILD_ENV_MAX ? n_ : 1];                                  \
		REAL(name);                                                                \
		return real_##name(pid, path, actions, attr, argv,                         \
				   injection__child_env(envp, buf_, sizeof(buf_) / sizeof(*buf_))); \
	}
SPAWN_WRAPPER(posix_spawn)
SPAWN_WRAPPER(posix_spawnp)
#undef SPAWN_WRAPPER

/* execl*: gather the variadic list into an argv on the stack. */
#define MAX_EXECL_ARGS 4096
#define GATHER_ARGV(arg0, ap, argv, n)                                                     \
	do {                                                                               \
		(argv)[0] = (char *)(arg0);                                                \
		for ((n) = 1; (argv)[(n) - 1] && (n) < MAX_EXECL_ARGS; (n)++)              \
			(argv)[n] = va_arg(ap, char *);                                    \
		if ((argv)[(n) - 1]) {                                                     \
			errno = E2BIG;                                                     \
			va_end(ap);                                                        \
			return -1;                                                         \
		}                                                                          \
	} while (0)

GT_EXPORT int execl(const char *path, const char *arg, ...)
{
	char *argv[MAX_EXECL_ARGS];
	va_list ap;
	int n;

	va_start(ap, arg);
	GATHER_ARGV(arg, ap, argv, n);
	va_end(ap);
	return execv(path, argv);
}

GT_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *argv[MAX_EXECL_ARGS];
	va_list ap;
	int n;

	va_start(ap, arg);
	GATHER_ARGV(arg, ap, argv, n);
	va_end(ap);
	return execvp(file, argv);
}

GT_EXPORT int execle(const char *path, const char *arg, ...)
{
	char *argv[MAX_EXECL_ARGS];
	char *const *envp;
	va_list ap;
	int n;

	va_start(ap, arg);
	GATHER_ARGV(arg, ap, argv, n);
	envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

/* ---- exits that skip atexit and destructors ---- */

GT_EXPORT __attribute__((noreturn)) void _exit(int status)
{
	__typeof__(_exit) *real__exit = atomic_load_explicit(&real_exec__exit, memory_order_relaxed);

	if (!real__exit)
		real__exit = gt_real(exit_name);
	atomic_store(&gt_exit_status, status & 0xff);
	gt_finish("_exit", 3000);
	if (real__exit)
		real__exit(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

GT_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
	_exit(status);
}

/*
 * exit() called again from an exit handler or a destructor (glibc runs the
 * handlers still to run, with the new status): that status is the
 * process's, which on_exit told ours with the first; the flight recorder
 * writes its window on it. Nothing else here: the trace ends where it would.
 * Its name and pointer lie with the start-up state, not REAL()'s: a process
 * that records nothing calls exit() too (a shell), and would touch a page of
 * .rodata and one of .bss for them (test_cli_quiet.py).
 */
static const char exit_fn_name[] GT_STARTUP_CONST = "exit";

/*
 * exit() while another thread ends the trace (main returned: its last drain
 * runs in our destructor, inside the loader's _dl_fini). That exit has taken
 * every exit handler already, ours too, so glibc's exit here goes straight to
 * _exit: the process ended mid-drain, the trace not closed. It waits for the
 * drain first, as _exit does (then either status ends the process). Not on
 * the thread ending it (a backend's stop, our drain thread), which would wait
 * for itself.
 */
static __attribute__((noinline, cold)) void exit_while_finishing(void)
{
	int finisher;

	if (finishing_here || lifecycle__hooks()->is_own_thread())
		return;
	gt_finish("exit", 5000);
	/*
	 * The finisher goes on to end the process: an exit's stdio cleanup, then its
	 * _exit. glibc before 2.41 runs two threads' exit() cleanups at once, unlocked
	 * (the exit handlers' blocks freed by one while the other walks them, _IO_cleanup's
	 * flush: SIGABRT in 1 CI run, test_signal_during_the_exits_last_drain_waits_for_it
	 * [exit], not reproduced here). So this exit lets
	 * the finisher end the process, with its status (two exits race untraced too, and
	 * either status may win); only if it has not within EXIT_RACE_WAIT_MS does this
	 * one go on. Not where this thread is the finisher (an exit() from a handler that
	 * runs after ours).
	 */
	finisher = atomic_load(&finisher_tid);
	if (finisher && finisher != gt_gettid())
		for (unsigned ms = 0; ms < EXIT_RACE_WAIT_MS; ms += 10)
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
}

GT_EXPORT __attribute__((noreturn)) void exit(int status)
{
	static __typeof__(exit) *_Atomic real_exit_fn GT_STARTUP_BSS;
	__typeof__(exit) *real = atomic_load_explicit(&real_exit_fn, memory_order_relaxed);

	if (!real) {
		real = gt_real(exit_fn_name);
		atomic_store_explicit(&real_exit_fn, real, memory_order_relaxed);
	}
	atomic_store(&gt_exit_status, status & 0xff);
	if (gt_unlikely(atomic_load(&finish_claimed)))
		exit_while_finishing();
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

static void on_quick_exit(void *unused)
{
	gt_finish("quick_exit", 3000);
}

/* ---- our fork and quick_exit handlers: in first, at the first need ---- */

/*
 * glibc runs the fork handlers' prepare halves, and the quick_exit handlers, last
 * registered first. Ours go in before anyone else's: our prepare (which takes the
 * registry's and the drain's locks) then runs after every other one, a vendor runtime's
 * among them (which takes the lock its thread may hold while it calls us back, waiting
 * for one of ours), our child half first, and our quick_exit handler after the program's
 * own, whose calls are traced too. Registered from the constructor, they cost every
 * process two pages of libc (the functions, the lists): 29-46 us a process on a VM, in
 * the shells, compilers and tools of a job, which mostly never fork nor register a
 * handler. So ours go in just before the first registration of anyone else's (the
 * exported entries below, which pthread_atfork and at_quick_exit call from any object,
 * from a constructor that runs before ours too), and before a fork(), daemon() or
 * forkpty() (whose fork runs the handlers) finds none of ours in. A quick_exit() with
 * none of ours in finishes the trace first: no other handler is there to run.
 */
enum { HOOK_NONE, HOOK_BUSY, HOOK_DONE };
static _Atomic int fork_hook GT_STARTUP_STATE;
static _Atomic int quick_exit_hook GT_STARTUP_STATE;
static bool quick_exit_hooked GT_STARTUP_STATE;
/* this thread is registering ours (a registration made meanwhile, by a malloc that
 * dlsym starts, goes in as it comes) */
static GT_TLS bool hooking_here;

typedef int register_atfork_fn(void (*)(void), void (*)(void), void (*)(void), void *);
typedef int cxa_at_quick_exit_fn(void (*)(void *), void *);

static const char register_atfork_name[] GT_STARTUP_CONST = "__register_atfork";
static const char cxa_at_quick_exit_name[] GT_STARTUP_CONST = "__cxa_at_quick_exit";
static register_atfork_fn *_Atomic real_register_atfork GT_STARTUP_STATE;
static cxa_at_quick_exit_fn *_Atomic real_cxa_at_quick_exit GT_STARTUP_STATE;

/* Looked up through dlsym itself, not gt_real: a sanitizer runtime registers its own
 * fork handlers while it starts, before instrumented code (shim.c's) may run, and this
 * file is built without the sanitizers' flags. */
GT_FORK_CODE static void *real_once(void *_Atomic *slot, const char *name)
{
	void *f = atomic_load_explicit(slot, memory_order_acquire);

	if (!f) {
		f = dlsym(RTLD_NEXT, name);
		atomic_store_explicit(slot, f, memory_order_release);
	}
	return f;
}

/* Under no object's handle: glibc unregisters an object's fork handlers in its
 * __cxa_finalize, which the exit runs for this library before its destructor
 * (the last drain). A thread forking meanwhile ran our prepare handler but not
 * our parent one, and kept the drain's cycle and the registry locked for good:
 * the exit waited 5 s, the trace kept its last checkpoint. The library is never
 * unloaded (-z nodelete). */
GT_FORK_CODE static void register_fork_handlers(void *real)
{
	((register_atfork_fn *)real)(atfork_prepare, atfork_parent, atfork_child, NULL);
}

/* Under no object's handle either: __cxa_finalize takes an object's quick_exit
 * handlers out too, and a quick_exit() from another thread during the exit's last
 * drain then found none of ours, and ended the process mid-drain. */
GT_FORK_CODE static void register_quick_exit_handler(void *real)
{
	quick_exit_hooked = !((cxa_at_quick_exit_fn *)real)(on_quick_exit, NULL);
}

/* Ours in, once, before whatever comes next, through libc's registration
 * (real_slot, returned; NULL: none, nothing registered). It is looked up
 * before the claim: dlsym waits for the loader's lock, and a thread in dlopen
 * holds it while a constructor there registers its handlers and waits here
 * for ours (a CI run hung so: the watchdog thread claimed, then waited in
 * dlsym, while the main thread loaded a Level Zero driver). */
GT_FORK_CODE static void *hook_first(_Atomic int *state, void (*register_ours)(void *real),
				     void *_Atomic *real_slot, const char *real_name)
{
	void *real = real_once(real_slot, real_name);
	int expect = HOOK_NONE;

	if (!real || atomic_load_explicit(state, memory_order_acquire) == HOOK_DONE ||
	    hooking_here)
		return real;
	if (!atomic_compare_exchange_strong(state, &expect, HOOK_BUSY)) {
		/* another thread is registering ours: microseconds */
		while (atomic_load_explicit(state, memory_order_acquire) != HOOK_DONE)
			sched_yield();
		return real;
	}
	hooking_here = true;
	register_ours(real);
	hooking_here = false;
	atomic_store_explicit(state, HOOK_DONE, memory_order_release);
	return real;
}

GT_EXPORT int __register_atfork(void (*prepare)(void), void (*parent)(void),
				void (*child)(void), void *dso)
{
	register_atfork_fn *real = hook_first(&fork_hook, register_fork_handlers,
					      (void *_Atomic *)&real_register_atfork,
					      register_atfork_name);

	return real ? real(prepare, parent, child, dso) : ENOMEM;
}

GT_EXPORT int __cxa_at_quick_exit(void (*fn)(void *), void *dso)
{
	cxa_at_quick_exit_fn *real = hook_first(&quick_exit_hook, register_quick_exit_handler,
						(void *_Atomic *)&real_cxa_at_quick_exit,
						cxa_at_quick_exit_name);

	return real ? real(fn, dso) : -1;
}

/* The calls whose fork runs the fork handlers, one table: ours in, then the real one. */
#define GT_FORKING(X)                                                                      \
	X(pid_t, fork, (void), ())                                                         \
	X(pid_t, forkpty,                                                                  \
	  (int *amaster, char *name, const struct termios *termp,                          \
	   const struct winsize *winp),                                                    \
	  (amaster, name, termp, winp))

#define GT_FORKING_WRAPPER(ret, name, params, args)                                        \
	static const char name##_fn_name[] GT_STARTUP_CONST = #name;                       \
	static __typeof__(name) *_Atomic real_fork_##name GT_STARTUP_STATE;                \
	GT_FORK_CODE GT_EXPORT ret name params                                             \
	{                                                                                  \
		__typeof__(name) *real;                                                    \
                                                                                           \
		hook_first(&fork_hook, register_fork_handlers,                             \
			   (void *_Atomic *)&real_register_atfork, register_atfork_name);  \
		real = real_once((void *_Atomic *)&real_fork_##name, name##_fn_name);      \
		if (!real) {                                                               \
			errno = ENOSYS;                                                    \
			return -1;                                                         \
		}                                                                          \
		return real args;                                                          \
	}
GT_FORKING(GT_FORKING_WRAPPER)
#undef GT_FORKING_WRAPPER

/*
 * daemon() as glibc's: its parent ends by an _exit(0) of glibc's own, which no
 * preload sees, so its trace was never closed (the last checkpoint, or no file
 * at all). Here the fork is ours (the handlers run, the child traces on) and
 * so is the parent's _exit, which closes its trace.
 */
GT_EXPORT int daemon(int nochdir, int noclose)
{
	struct stat st;
	int fd;

	switch (fork()) {
	case -1:
		return -1;
	case 0:
		break;
	default:
		_exit(0);
	}
	if (setsid() == -1)
		return -1;
	if (!nochdir)
		(void)!chdir("/");
	if (noclose)
		return 0;
	fd = open("/dev/null", O_RDWR); /* (no O_CLOEXEC: it may be 0, 1 or 2 itself) */
	if (fd == -1 || fstat(fd, &st)) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (!S_ISCHR(st.st_mode)) {
		close(fd);
		errno = ENODEV;
		return -1;
	}
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
	return 0;
}

GT_EXPORT __attribute__((noreturn)) void quick_exit(int status)
{
	REAL(quick_exit);
	atomic_store(&gt_exit_status, status & 0xff);
	if (!quick_exit_hooked)
		gt_finish("quick_exit", 3000);
	real_quick_exit(status);
	__builtin_unreachable();
}

/* ---- libraries loaded later ---- */

/*
 * Watched by polling the loader's load counter from the drain thread, not
 * by wrapping dlopen: glibc resolves a dlopen's RUNPATH and $ORIGIN from
 * its caller's address, which a wrapper would replace with ours (libtorch
 * finding its CUDA libraries depends on it).
 */
static unsigned long long seen_adds;

static int phdr_adds(struct dl_phdr_info *info, size_t size, void *data)
{
	*(unsigned long long *)data = info->dlpi_adds;
	return 1;
}

/*
 * A library's name, copied while dl_iterate_phdr holds ld.so's lock, which
 * orders the dlopen that wrote it before this read. ThreadSanitizer cannot
 * see that lock (ld.so is not instrumented) and calls the read a race with
 * the dlopen of another thread: the copy is not instrumented, byte by byte.
 */
__attribute__((no_sanitize_thread, noinline)) static void copy_loaded_name(char *to, size_t cap,
									const char *from)
{
	const volatile char *f = from;
	size_t i = 0;

	for (; i + 1 < cap && f[i]; i++)
		to[i] = f[i];
	to[i] = 0;
}

static int phdr_notify(struct dl_phdr_info *info, size_t size, void *data)
{
	char name[PATH_MAX];

	if (!info->dlpi_name)
		return 0;
	copy_loaded_name(name, sizeof(name), info->dlpi_name);
	if (name[0])
		shim__backends_call(GT_HOOK_DLOPEN, name, NULL);
	return 0;
}

GT_HIDDEN void lifecycle__poll_dlopen(void)
{
	unsigned long long adds = 0;

	dl_iterate_phdr(phdr_adds, &adds);
	if (adds == seen_adds)
		return;
	seen_adds = adds;
	dl_iterate_phdr(phdr_notify, NULL);
}

GT_STARTUP_CODE void lifecycle__init(void)
{
	/* gputrace capture's signal: installed when the process announces
	 * itself (trigger.c), at once for a paused one, which waits for it;
	 * our fork and quick_exit handlers wait for their first need (above) */
	trigger__init();
}
