/* SPDX-License-Identifier: MIT */
/* gputrace-tool's subcommands: each returns the exit status (0, 1 error, 2 usage). */
#ifndef GPUTRACE_TOOL_H
#define GPUTRACE_TOOL_H

#include <stdbool.h>
#include <stdio.h>

#ifndef GPUTRACE_VERSION
#define GPUTRACE_VERSION "unknown"
#endif

int cmd_run(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_report(int argc, char **argv);

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
