/* SPDX-License-Identifier: MIT */
/*
 * Triggers from outside: `gputrace capture` sends the process its capture
 * signal (GPUTRACE_CAPTURE_SIGNAL, a real-time one by default); the handler
 * posts a request the drain thread carries out (capture.h). sigqueue's
 * value: the window's length in ms (0: open-ended), -1: end the window; a
 * plain kill toggles. The process announces itself in the user's run
 * directory (rundir.h). A program that handles that signal itself keeps
 * it: gputrace steps aside and says so in one line.
 */
#ifndef GPUTRACE_TRIGGER_H
#define GPUTRACE_TRIGGER_H

#include <signal.h>
#include <stdbool.h>
#include "event.h"

/* At start-up: which signal (GPUTRACE_CAPTURE_SIGNAL). Its handler goes in
 * with the announcement, where the signal is at SIG_DFL. */
GT_HIDDEN void trigger__init(void);
/* This process's handler and announcement (also a fork child's, and an
 * exec'd image's). */
GT_HIDDEN void trigger__announce(void);
/* Async-signal-safe: a window opens (or is asked for) or closes; the
 * announcement's PID.window mark says so (rundir.h). */
GT_HIDDEN void trigger__window_mark(bool open);
/* The process is ending: its announcement goes. */
GT_HIDDEN bool trigger__withdraw(void);
/* The capture signal while gputrace may still take it (0: none, or the
 * program's own): the fatal-signal handlers leave it alone (lifecycle.c). */
GT_HIDDEN int trigger__signal(void);
/* The program's sigaction for sig: true when it was the capture signal
 * (handled here, result in *ret). */
GT_HIDDEN bool trigger__sigaction(int sig, const struct sigaction *act, struct sigaction *oldact,
				  int *ret);
/* The program waits for the signals of set (sigwait, sigwaitinfo, signalfd):
 * where the capture signal is one, gputrace steps aside as for a handler
 * (set may be NULL). */
GT_HIDDEN void trigger__program_waits(const sigset_t *set);

#endif
