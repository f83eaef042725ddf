/* SPDX-License-Identifier: MIT */
/* Process-wide tracer state shared by the shim and the writer. */
#ifndef GPUTRACE_STATE_H
#define GPUTRACE_STATE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include "event.h"

struct ring;

#define GT_LOST_REASONS 16
#define GT_ADJUST_REASONS 8
#define GT_GAPS_MAX 16

struct gt_state {
	_Atomic int init_state; /* 0 none, 1 running, 2 done */
	_Atomic bool crashing;  /* finishing after a crash (SIGSEGV, ...): no thread waits for room */
	_Atomic int crash_tid;  /* the thread that crashed, while crashing */
	struct ring *_Atomic rings;
	_Atomic uint32_t thread_serial;
	_Atomic uint64_t corr_blocks;
	_Atomic uint32_t lost_reason[GT_LOST_REASONS]; /* string ids */
	_Atomic uint64_t lost_count[GT_LOST_REASONS];
	/* device times a backend corrected, by reason: how many, the largest */
	_Atomic uint32_t adjust_reason[GT_ADJUST_REASONS]; /* string ids */
	_Atomic uint64_t adjust_count[GT_ADJUST_REASONS];
	_Atomic uint64_t adjust_max_ns[GT_ADJUST_REASONS];
	/* spans of time a backend did not record (gt_gap_begin) */
	struct {
		_Atomic uint32_t reason; /* string id; 0: slot free */
		_Atomic uint64_t start_ns, end_ns; /* end 0: still open */
	} gaps[GT_GAPS_MAX];
	_Atomic unsigned ngaps;
	/* when the process began to end (exit, a fatal signal): host calls that
	 * start later are not in the trace (writer/drain.c); 0 while it runs */
	_Atomic uint64_t host_end_ns;
	_Atomic int host_end_tid; /* the thread that began the end */
	/* a thread making a call for it (a plug-in's last batch, host.c) */
	_Atomic int host_end_helper_tid;
	pid_t pid;
	uint64_t start_realtime_ns; /* %t of a trace's name */
	/* the wall clock and ours read together (0 until the drain starts, or at
	 * start in a process with capture control, whose windows count from it) */
	uint64_t anchor_realtime_ns;
	uint64_t anchor_clock_ns;
	/* where the process started (a relative output goes there): read it with
	 * gt_start_cwd(); a longer one is kept elsewhere, not on this page */
	char cwd[256];
};

extern GT_HIDDEN struct gt_state gt_st;

enum gt_backend_hook {
	GT_HOOK_INIT,
	GT_HOOK_DLOPEN,
	GT_HOOK_FLUSH,
	GT_HOOK_FLUSH_FINAL,
	GT_HOOK_STOP,
	GT_HOOK_WINDOW_OPEN,
	GT_HOOK_WINDOW_CLOSE,
	GT_HOOK_WINDOW_END,
};

GT_HIDDEN void shim__backends_call(enum gt_backend_hook hook, const char *path, void *handle);
/* What the drain thread waits on in a backend's flush, for a message. */
GT_HIDDEN const char *shim__flushing_backend(void);
/* Each enabled backend's exec (backend.h): before an exec, or after it failed. */
GT_HIDDEN void shim__backends_exec(bool failed);
/* Each enabled backend's release (backend.h), once the last drain wrote the file. */
GT_HIDDEN void shim__backends_release(void);
/* Each enabled backend's atfork_child, in a fork child. */
GT_HIDDEN void shim__backends_fork_child(void);
/* Every backend's sample() that is due by now_ns; the earliest next due
 * time of them all (UINT64_MAX: none wants more). */
GT_HIDDEN uint64_t shim__backends_sample(uint64_t now_ns);
GT_HIDDEN void *shim__wrapper_for(const char *symbol);
/* Every backend's device work submitted and not finished (the watchdog's). */
struct gt_pending_work;
GT_HIDDEN void shim__backends_pending(void (*fn)(void *arg, const struct gt_pending_work *w),
				      void *arg);
GT_HIDDEN void shim__forget_rings(void);
/* Held across fork() (lifecycle.c): a run lock's file is never open without
 * its descriptor known (gt_run_lock_hold), so a child closes every copy it has. */
GT_HIDDEN void shim__run_locks_fork_prepare(void);
GT_HIDDEN void shim__run_locks_fork_done(void);
/* The process begins to end now: the trace's host calls end here. */
GT_HIDDEN void shim__end_host(void);
GT_HIDDEN void shim__start_process(void);
/* This library's path as the loader named it (NULL if unknown). */
GT_HIDDEN const char *shim__self_name(void);
/* The program's name (the executable's file name), read on first use. */
GT_HIDDEN const char *gt_exe(void);
/* The folder the process started in ("" if unknown). */
GT_HIDDEN const char *gt_start_cwd(void);
/* Events were recorded (or lost). */
GT_HIDDEN bool shim__has_events(void);
/* Events, or a backend that may hand some over at the final flush (the
 * writer runs): false for a process that made no traced call (its exit
 * has nothing to wait for). */
GT_HIDDEN bool shim__recorded_anything(void);
/* Read the clock anchor (gt_st.anchor_*), unless it was: at the drain's start,
 * and before a cycle run without one (a process whose first event came at its end). */
GT_HIDDEN void shim__take_anchor(void);
/* The drain thread was started (gt_start_writer), or is not to be. */
GT_HIDDEN bool shim__writer_started(void);
GT_HIDDEN void lifecycle__init(void);
/* Our threads (drain, watchdog, output, Kineto cycles): made detached, 0 or
 * -errno. Each calls lifecycle__thread_up first thing: a fork() waits for
 * threads still in their start-up (lifecycle.c). */
GT_HIDDEN int lifecycle__spawn(pthread_t *thread, void *(*main_fn)(void *));
/* When only our threads are left (the program's last one exited: main's
 * pthread_exit, then the others), end the process as glibc would have. */
GT_HIDDEN void lifecycle__check_last_thread(void);
GT_HIDDEN void lifecycle__thread_up(void);
/* This thread is finishing the trace (stopping the backends at exit). */
GT_HIDDEN bool lifecycle__finishing_here(void);
/* This thread is the drain thread. */
GT_HIDDEN bool lifecycle__on_drain_thread(void);
/* This thread makes a call for the one finishing (a plug-in's, bounded):
 * a fault in it closes the trace as one in the exit path does. */
GT_HIDDEN void lifecycle__finish_for(bool on);
/* The process is dying by a crash (SIGSEGV, ...) of thread tid. */
GT_HIDDEN bool lifecycle__crashed(int tid);
/* Put our fatal-signal handlers in (once; with the first recording). */
GT_HIDDEN void lifecycle__arm_signals(void);
/* Tell the backends of libraries loaded since the last call (the writer's
 * cycle polls it: a dlopen is not wrapped, see lifecycle.c). */
GT_HIDDEN void lifecycle__poll_dlopen(void);
/* Why the process is ending ("exit", "signal SIGTERM", "exec", ...), for
 * the trailer; NULL while it runs. */
extern GT_HIDDEN const char *_Atomic gt_end_reason;
/* The trace file the writer is inside the open of (a FIFO nobody reads blocks
 * there for good), else NULL: a last drain stuck there wrote no trace at all.
 * Not a hook: a pointer more in the hooks' tables took their read-only data
 * past one page (test_cli_quiet.py). */
extern GT_HIDDEN const char *_Atomic gt_opening_file;
/* A fatal signal landed in a traced call of the thread it ended (where a
 * vendor library may hold the lock its device read takes): a flight
 * recorder's last dump leaves that read out (writer/drain.c). */
extern GT_HIDDEN _Atomic bool gt_signal_in_call;
/* exit(), _exit() or quick_exit() called inside a traced call of the thread
 * (from a signal handler that interrupted it: a SIGALRM timeout's exit(1)):
 * the thread may hold the vendor library's lock or a backend's, as a signal's
 * would, so the end takes the signal's way around them (lifecycle.c). */
extern GT_HIDDEN _Atomic bool gt_exit_in_call;

/* A reason of gt_end_reason's that is a signal: a request (SIGTERM, ...) or a
 * crash ("signal SIGTERM"; "signal" alone for one without a name, lifecycle.c). */
static inline bool gt_reason_is_signal(const char *why)
{
	return why && !strncmp(why, "signal", 6) && (why[6] == '\0' || why[6] == ' ');
}

static inline bool gt_ending_on_signal(void)
{
	return gt_reason_is_signal(atomic_load(&gt_end_reason));
}

/* The status exit(), _exit() or quick_exit() was called with (its low byte,
 * as the parent sees it); 0 until then. */
extern GT_HIDDEN _Atomic int gt_exit_status;

#endif
