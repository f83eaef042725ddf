/* SPDX-License-Identifier: MIT */
/* Command-line options of the tool's commands ("--opt VALUE" or "--opt=VALUE")
 * and the files they name for output. */
#ifndef GPUTRACE_TOOL_ARGS_H
#define GPUTRACE_TOOL_ARGS_H

#include <stdbool.h>
#include <stdio.h>

/* The value when argv[*i] is opt (taking the next word, *i moved on);
 * NULL when it is another argument. A missing value prints "who: opt needs
 * a value", sets *bad and returns "". */
const char *arg__value(int argc, char **argv, int *i, const char *opt, const char *who,
		       bool *bad);

/* Flush and close an output file (stdout is only flushed): 0 or -errno. */
int out__close(FILE *f);

#endif
