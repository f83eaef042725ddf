// SPDX-License-Identifier: MIT
/* Triggers from outside (trigger.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "config.h"
#include "rundir.h"
#include "shim.h"
#include "state.h"
#include "trigger.h"

extern int __sigaction(int, const struct sigaction *, struct sigaction *);

/* set at every start: in the page start-up writes anyway */
static _Atomic int trig_sig GT_STARTUP_STATE;     /* 0: none, or given up; or config.h's mark */
static _Atomic bool trig_ours GT_STARTUP_STATE;   /* our handler is installed */
static struct sigaction trig_app;    /* what the program believes is installed */
static atomic_flag trig_lock = ATOMIC_FLAG_INIT;
static char trig_file[PATH_MAX];     /* our announcement, once trig_announced */
static char trig_window_file[PATH_MAX + 8]; /* its PID.window mark, as trig_file */
/* trig_file is written, then published: the first recording may announce on
 * any thread (the drain thread's telemetry included) while another exits */
static _Atomic bool trig_announced GT_STARTUP_STATE; /* read at every exit */

static void on_trigger(int sig, siginfo_t *si, void *uc)
{
	bool open = atomic_load(&gt_phase) != GT_PHASE_RUNNING, toggle = true;
	uint64_t duration_ns = 0;

	(void)sig;
	(void)uc;
	if (gt_cfg.flight_bytes) {
		/* a flight recorder records all along: any trigger asks for its
		 * window (async-signal-safe: the drain thread writes it) */
		gt_flight_dump(si && si->si_code == SI_QUEUE &&
				       si->si_value.sival_int == RUNDIR_REQ_DUMP
				       ? "capture --dump"
				       : "trigger");
		return;
	}
	if (si && si->si_code == SI_TIMER) {
		capture__idle_deadline(); /* ours: no sender signals with it */
		return;
	}
	if (si && si->si_code == SI_QUEUE) {
		if (si->si_value.sival_int == RUNDIR_REQ_DUMP)
			return; /* no flight recorder here: capture said so */
		int ms = si->si_value.sival_int;

		open = ms >= 0;
		toggle = false;
		duration_ns = open ? (uint64_t)ms * 1000000ull : 0;
	}
	/* atomic stores (and the window's mark): the drain thread does the
	 * work, or there is none yet and nothing to write
	 * (capture__unwritten_request) */
	if (capture__unwritten_request(open, duration_ns))
		return;
	if (toggle) {
		/* the phase may not show the requests still pending: the drain
		 * tells open from close after them */
		capture__post_toggle();
	} else if (open) {
		/* asked for: a --stop right after finds it open (marked once
		 * posted: the drain thread's marks follow what it finds posted) */
		capture__post_open(duration_ns);
		trigger__window_mark(true);
	} else {
		/* asked for: an open right after is taken, behind it */
		capture__post_close();
		trigger__window_mark(false);
	}
}

GT_STARTUP_CODE void trigger__init(void)
{
	/* the default stays a mark until needed (config.h) */
	trig_sig = gt_cfg.capture_signal;
}

static int trig_signal(void)
{
	int sig = atomic_load_explicit(&trig_sig, memory_order_relaxed);

	if (sig == GT_CAPTURE_SIGNAL_RTMIN_DEFAULT) {
		int num = config__capture_signal(&gt_cfg);

		/* lost to a thread that gave up on it (0): that stands */
		if (atomic_compare_exchange_strong(&trig_sig, &sig, num))
			sig = num;
	}
	return sig;
}

int trigger__signal(void)
{
	return trig_signal();
}

/*
 * Who a line is about: this process, by pid; under gputrace run, which says
 * each distinct line once for the run (shim.c compares the text), the run's
 * processes (run_whom), as every one of them would print the same.
 */
static const char *whom(char *buf, size_t len, const char *run_whom)
{
	if (gt_under_run())
		return run_whom;
	snprintf(buf, len, "pid %d", (int)getpid());
	return buf;
}

/*
 * The handler goes in when the process announces itself: at start for a
 * paused or recorder process, at the first recording for one that records
 * its whole run. A process that never records (a shell, a compiler) is
 * never announced, so `gputrace capture` never signals it, and it pays for
 * no sigaction at start. Tried once: a program's own handler, found here or
 * installed later (trigger__sigaction), ends it for good (trig_sig 0, also
 * in fork children).
 */
static void trigger__install(void)
{
	/* cur zeroed: the kernel fills only the first word of its mask */
	struct sigaction cur = { 0 }, sa = { .sa_sigaction = on_trigger,
					     .sa_flags = SA_SIGINFO | SA_RESTART };
	int sig = trig_signal();
	char who[32];
	bool refused;

	if (!sig || atomic_load(&trig_ours))
		return;
	/* the program's sigaction() may run meanwhile in another thread */
	while (atomic_flag_test_and_set(&trig_lock))
		;
	if (trig_sig && !__sigaction(sig, NULL, &cur) && !(cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_handler == SIG_DFL) {
		trig_app = cur;
		if (!__sigaction(sig, &sa, NULL))
			atomic_store(&trig_ours, true);
	}
	/* the program's own handler, or one we cannot install: it wins */
	refused = !atomic_load(&trig_ours) && trig_sig;
	if (!atomic_load(&trig_ours))
		trig_sig = 0;
	atomic_flag_clear(&trig_lock);
	if (refused)
		pr_warn("signal %d already has a handler in %s: gputrace capture cannot reach %s "
			"(GPUTRACE_CAPTURE_SIGNAL picks another)", sig,
			gt_under_run() ? "a program of this run" : "this program",
			whom(who, sizeof(who), "it"));
}

void trigger__announce(void)
{
	char dir[PATH_MAX - 32], text[512], tmp[PATH_MAX], who[32];
	int fd, n, err;
	bool ok;

	atomic_store(&trig_announced, false);
	trigger__install();
	if (!atomic_load(&trig_ours))
		return;
	err = rundir__path(dir, sizeof(dir));
	if (!err)
		err = rundir__check(dir, true);
	if (err) {
		pr_warn("run directory '%.200s' is not usable (%s; it must be the user's own, "
			"mode 0700): gputrace capture --all will not list %s", dir, strerror(-err),
			whom(who, sizeof(who), "this run's processes"));
		return;
	}
	/* written whole under another name, then renamed: `gputrace capture`
	 * never reads a half-written announcement */
	snprintf(tmp, sizeof(tmp), "%s/.%d", dir, (int)getpid());
	/* duration: the length of a window asked for without one (--duration),
	 * which gputrace capture tells */
	n = snprintf(text, sizeof(text),
		     "pid %d\nsignal %d\nstart %llu\nmode %s\nduration_ns %llu\nexe %s\n",
		     (int)getpid(), trig_sig, rundir__start_time(getpid()),
		     gt_cfg.flight_bytes ? "flight" : gt_cap.controlled ? "windows" : "whole",
		     (unsigned long long)(gt_cap.controlled ? gt_cfg.duration_ns : 0), gt_exe());
	/* Not under a file size limit it passes (ulimit -f 0: a sandbox's "no
	 * files"): this runs on the program's thread, where a write at the limit
	 * raises SIGXFSZ, which ended the program (untraced, it runs on). */
	if (!gt_fsize_allows((uint64_t)n)) {
		pr_dbg("not announced to gputrace capture: past the file size limit (ulimit -f)");
		return;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	ok = write(fd, text, (size_t)n) == n;
	close(fd);
	snprintf(trig_file, sizeof(trig_file), "%s/%d", dir, (int)getpid());
	snprintf(trig_window_file, sizeof(trig_window_file), "%s%s", trig_file,
		 RUNDIR_WINDOW_SUFFIX);
	/* an exec'd image's pid had the image before's mark: its window ended with it */
	unlink(trig_window_file);
	if (!ok || rename(tmp, trig_file)) {
		pr_dbg("could not write %s", trig_file);
		unlink(tmp);
		return;
	}
	atomic_store_explicit(&trig_announced, true, memory_order_release);
	if (gt_tracing())
		trigger__window_mark(true); /* a --duration window open from the start */
}

void trigger__window_mark(bool opened)
{
	int saved = errno, fd;

	/* a process that records its whole run has no windows to mark */
	if (!gt_cap.controlled || !atomic_load_explicit(&trig_announced, memory_order_acquire))
		return;
	if (!opened) {
		unlink(trig_window_file);
	} else if ((fd = open(trig_window_file, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			      0600)) >= 0) {
		close(fd);
	}
	errno = saved;
}

GT_STARTUP_CODE bool trigger__withdraw(void)
{
	if (!atomic_exchange_explicit(&trig_announced, false, memory_order_acquire))
		return false;
	unlink(trig_window_file);
	unlink(trig_file);
	return true;
}

bool trigger__sigaction(int sig, const struct sigaction *act, struct sigaction *oldact, int *ret)
{
	int want = trig_signal();
	char who[32];

	if (!want || sig != want)
		return false;
	while (atomic_flag_test_and_set(&trig_lock))
		;
	if (!atomic_load(&trig_ours)) {
		/* not installed yet (a process that records its whole run installs
		 * it with its first recording): the program's call goes through
		 * here, under the lock, and a handler of its own keeps ours out */
		*ret = __sigaction(sig, act, oldact);
		if (!*ret && act &&
		    ((act->sa_flags & SA_SIGINFO) ? act->sa_sigaction != NULL
						  : act->sa_handler != SIG_DFL))
			trig_sig = 0;
		atomic_flag_clear(&trig_lock);
		return true;
	}
	struct sigaction old = trig_app;

	*ret = 0;
	if (act) {
		bool wants_default = !(act->sa_flags & SA_SIGINFO) ? act->sa_handler == SIG_DFL
								    : act->sa_sigaction == NULL;
		if (wants_default) {
			trig_app = *act;
		} else {
			/* the program's own use of the signal wins */
			*ret = __sigaction(sig, act, NULL);
			if (!*ret) {
				atomic_store(&trig_ours, false);
				trig_sig = 0;
				trigger__withdraw();
				pr_warn("%s handles signal %d itself: gputrace steps aside, "
					"gputrace capture cannot reach %s (GPUTRACE_CAPTURE_SIGNAL "
					"picks another)",
					gt_under_run() ? "a program of this run" : "the program",
					sig, whom(who, sizeof(who), "it"));
			}
		}
	}
	atomic_flag_clear(&trig_lock);
	if (!*ret && oldact)
		*oldact = old;
	return true;
}

void trigger__program_waits(const sigset_t *set)
{
	int sig = trig_signal();
	bool was_ours;

	/* NULL: the real call says EFAULT */
	if (!sig || !set || sigismember(set, sig) != 1)
		return;
	while (atomic_flag_test_and_set(&trig_lock))
		;
	/* what the program believes is installed goes in for real: a thread of
	 * its own that does not block the signal takes it as it would untraced */
	was_ours = atomic_load(&trig_ours) && !__sigaction(sig, &trig_app, NULL);
	if (was_ours)
		atomic_store(&trig_ours, false);
	if (!atomic_load(&trig_ours))
		trig_sig = 0;
	atomic_flag_clear(&trig_lock);
	if (!was_ours)
		return; /* not installed yet: it never will be, as for a handler */
	trigger__withdraw();
	pr_warn("the program waits for signal %d itself: gputrace steps aside, gputrace capture "
		"cannot reach pid %d (GPUTRACE_CAPTURE_SIGNAL picks another)", sig, (int)getpid());
}
