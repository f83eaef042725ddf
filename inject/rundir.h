/* SPDX-License-Identifier: MIT */
/*
 * The calling user's run directory, where each traced process that can be
 * triggered leaves a small file named after its pid (its trigger signal):
 * what `gputrace capture` reads. GPUTRACE_RUN_DIR, else
 * $XDG_RUNTIME_DIR/gputrace, else /tmp/gputrace-UID. Shared by the library
 * and gputrace-tool (one definition of where and how it is checked).
 */
#ifndef GPUTRACE_RUNDIR_H
#define GPUTRACE_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>

/* sigqueue values gputrace capture sends with the trigger signal: a
 * window's length in ms (>= 0), or one of these. */
#define RUNDIR_REQ_STOP (-1) /* end the open window */
#define RUNDIR_REQ_DUMP (-2) /* write the flight recorder's window */

/* Beside a process's file, PID.window is there while a capture window is
 * open (or asked for): gputrace capture --stop tells a process with no
 * window from one it can end. */
#define RUNDIR_WINDOW_SUFFIX ".window"

/* The directory's path. 0 or -ENAMETOOLONG. */
int rundir__path(char *out, size_t len);

/* Make it (mode 0700) if create and it is missing; 0 when it is a directory
 * owned by the caller that nobody else may enter (or the caller's own
 * symbolic link to one), else -errno (-EPERM: someone else's, or open to
 * others, or a link someone else made; -ENOTDIR: not a directory). */
int rundir__check(const char *dir, bool create);

/* /proc/PID/stat read into buf: what follows the program's name (field 3
 * on, " S 1 ..."; the name may hold anything, even ')'), or NULL. */
char *rundir__proc_stat(int pid, char *buf, size_t len);

/* The start time of pid (field 22 of /proc/PID/stat, clock ticks since
 * boot): a pid reused by another process has another. 0 when unknown. */
unsigned long long rundir__start_time(int pid);

#endif
