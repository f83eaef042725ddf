/* SPDX-License-Identifier: MIT */
/* Command-line options of the tool's commands ("--opt VALUE" or "--opt=VALUE")
 * and the files they name for output. */
#ifndef GPUTRACE_TOOL_ARGS_H
#define GPUTRACE_TOOL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The value when argv[*i] is opt (taking the next word, *i moved on);
 * NULL when it is another argument. A missing value prints "who: opt needs
 * a value", sets *bad and returns "". */
const char *arg__value(int argc, char **argv, int *i, const char *opt, const char *who,
		       bool *bad);

/* arg__value for a file name: an empty one ("--junit=", "-o ''") is refused as
 * a missing one is, "who: opt needs a file name" and *bad, not taken for a
 * file that fails only when written, after the work ("cannot write : No such
 * file or directory"). */
const char *arg__file(int argc, char **argv, int *i, const char *opt, const char *who,
		      bool *bad);

/* The one trace a command reads (summary, report): a into *path, true; a second
 * one is refused, "who: one trace at a time (merge them first): 'a'", false. */
bool arg__one_trace(const char *who, const char *a, const char **path);

/* An output that is one of the n inputs (the same file, device and inode)
 * would be read and overwritten: "who: opt out would overwrite its input
 * IN: give another file", and true. "-" (stdout) is none. */
bool out__is_input(const char *who, const char *opt, const char *out, char *const *in,
		   size_t n);

/* Two outputs naming one file (the same path, or the same file, device and
 * inode): "who: opt_a a and opt_b b name one file ...", and true. NULL or
 * "-" (stdout) is none. */
bool out__same(const char *who, const char *opt_a, const char *a, const char *opt_b,
	       const char *b);

/* Flush and close an output file (stdout is only flushed): 0 or -errno. */
int out__close(FILE *f);

#endif
