/* SPDX-License-Identifier: MIT */
/* gputrace-tool's subcommands: each returns the exit status (0, 1 error, 2 usage). */
#ifndef GPUTRACE_TOOL_H
#define GPUTRACE_TOOL_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>

#ifndef GPUTRACE_VERSION
#define GPUTRACE_VERSION "unknown"
#endif

int cmd_run(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_reach(int argc, char **argv);
int cmd_capture(int argc, char **argv);

/* Can LD_PRELOAD reach the program at path (reach.c)? 1 and why (one line) when it cannot;
 * 0 when it can, or when that cannot be told. depth: 0 (scripts are followed once). */
int reach__check(const char *path, char *why, size_t len, int depth);
/* gputrace run: one line on stderr when CMD (a name found as execvp finds it) cannot be
 * reached by LD_PRELOAD (true); nothing otherwise. */
bool reach__warn(const char *cmd);

/* The gputrace command's usage (gputrace --help, gputrace run --help). */
void tool__usage(FILE *f);

/* gputrace merge, for gputrace run: the inputs joined into out (written
 * beside it, then renamed). by_start: inputs ordered by their process's
 * start (who keeps a pid used twice); quiet: no closing line. 0, 1 error. */
struct merge_opts {
	bool by_start;
	bool quiet;
};
int tool__merge(const char *out, char *const *files, unsigned n, const struct merge_opts *opts);

#endif
