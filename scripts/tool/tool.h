/* SPDX-License-Identifier: MIT */
/* gputrace-tool's subcommands: each returns the exit status (0, 1 error, 2 usage). */
#ifndef GPUTRACE_TOOL_H
#define GPUTRACE_TOOL_H

#ifndef GPUTRACE_VERSION
#define GPUTRACE_VERSION "unknown"
#endif

int cmd_merge(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_report(int argc, char **argv);

#endif
