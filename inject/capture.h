/* SPDX-License-Identifier: MIT */
/*
 * Capture windows: the parts of a run that are recorded. Outside a window
 * gt_phase is GT_PHASE_PAUSED, so every wrapper's gt_tracing() test (a
 * load and a branch) sends the call straight to the real function.
 *
 * Windows open and close on the drain thread (capture__tick: the deadlines
 * of --delay/--duration and requests that signal handlers post), or on the
 * thread that marks a capture range; a window opens only once the file of
 * the last one is ended, so each window has its own complete file.
 */
#ifndef GPUTRACE_CAPTURE_H
#define GPUTRACE_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "event.h"

struct gt_capture {
	bool controlled;             /* paused start, delay or duration: windows decide */
	_Atomic uint64_t open_ns;    /* start of the current (or last) window */
	_Atomic uint64_t close_ns;   /* its end; UINT64_MAX while it is open */
	_Atomic uint64_t start_at_ns; /* a window opens then (--delay); 0: none planned */
	_Atomic uint64_t stop_at_ns; /* the open window ends then (--duration); 0: none */
	_Atomic uint32_t windows;    /* windows opened so far */
	_Atomic uint32_t plugins_window; /* the window plug-ins were started for */
};

extern GT_HIDDEN struct gt_capture gt_cap;

/* What a transition did (capture__tick). */
enum gt_capture_event {
	GT_CAPTURE_NONE,
	GT_CAPTURE_OPENED,
	GT_CAPTURE_CLOSED,
};

/* The configuration asks for capture windows (--start paused, --delay, --duration,
 * --capture-range). */
GT_HIDDEN bool capture__wanted(void);
/* At process start (and in a fork child): the phase to start in, and the
 * planned deadlines from the configuration. */
GT_HIDDEN int capture__start(uint64_t now_ns);

/* Drain thread: apply posted requests and due deadlines. *wait_ns gets the
 * time to the next deadline (UINT64_MAX: none). */
GT_HIDDEN enum gt_capture_event capture__tick(uint64_t now_ns, uint64_t *wait_ns);

/* Async-signal-safe: ask the drain thread to open a window of duration_ns
 * (0: until asked to close or the process ends), to close it, or (a plain
 * kill) to toggle: close the window the requests before it leave open, else
 * open one. Carried out in the order they were asked for. */
GT_HIDDEN void capture__post_open(uint64_t duration_ns);
GT_HIDDEN void capture__post_close(void);
GT_HIDDEN void capture__post_toggle(void);

/* Async-signal-safe, for the trigger's handler: while no drain thread runs
 * (it starts with the first event; a paused process has none), there is no
 * file to end before a window opens, so the request is applied here (open:
 * a window of duration_ns, 0 open-ended; else the open window ends). The
 * drain thread, once started by the window's first event, keeps its
 * deadline. False: a drain thread runs, post the request to it. */
GT_HIDDEN bool capture__unwritten_request(bool open, uint64_t duration_ns);
/* Async-signal-safe, for the trigger's handler: the timer of a --duration
 * window that capture__unwritten_request opened went off (SI_TIMER). With
 * still no drain thread, the window ends at its deadline. */
GT_HIDDEN void capture__idle_deadline(void);

/* Writer: a window closed whose file is not ended yet (its events are
 * still written). */
GT_HIDDEN bool capture__unended(void);
/* [start, end] lies inside one of the windows closed so far (the last 63):
 * an event of a window whose file may be ended already. */
GT_HIDDEN bool capture__in_closed_window(uint64_t start_ns, uint64_t end_ns);
/* Writer: the file of the window that closed last is ended. */
GT_HIDDEN void capture__ended(void);

/* --capture-range markers, on the calling thread (not from a signal
 * handler): a range begins (a window opens now, if paused and the
 * --capture-count allows; waits, bounded, for the last window's file to be
 * ended; returns the number of the window it opened, 0 none) or ends (its
 * window closes now: window, as begin returned it, or 0 for the one the
 * last range opened; a window opened otherwise, from outside, stays open). */
GT_HIDDEN uint32_t capture__range_begin(uint64_t now_ns);
GT_HIDDEN void capture__range_end(uint64_t now_ns, uint32_t window);

/* At exit (not from a signal handler), under gputrace run: a process with
 * windows tells the run whether any opened ("w PID"), or why none did ("!
 * PID WHY", the setting that held it: scripts/tool/run_files.c). */
GT_HIDDEN void capture__report_at_exit(void);

/* Writer: is [start, end] inside the window being written? A planned end
 * (--duration) bounds it before the drain thread closes the window: a
 * cycle that runs past that end leaves out what came after it. */
static inline bool capture__inside(uint64_t start_ns, uint64_t end_ns)
{
	uint64_t stop = atomic_load_explicit(&gt_cap.stop_at_ns, memory_order_relaxed);

	return start_ns >= atomic_load_explicit(&gt_cap.open_ns, memory_order_relaxed) &&
	       end_ns <= atomic_load_explicit(&gt_cap.close_ns, memory_order_relaxed) &&
	       (!stop || end_ns <= stop);
}

/* True while recording or paused between windows: the tracer is alive. */
static inline bool gt_live(void)
{
	int p = atomic_load_explicit(&gt_phase, memory_order_relaxed);

	return p == GT_PHASE_RUNNING || p == GT_PHASE_PAUSED;
}

#endif
