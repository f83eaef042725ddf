/* SPDX-License-Identifier: MIT */
/*
 * Check expressions over a summary (`gputrace check`, README "Checks"):
 *   device.kernels >= 1      kernel["gemm*"].total <= 25ms      lost == 0
 * A comparison of two sums of products of numbers with units and names of
 * the summary's fields. Names, fields and units are checked when parsed (a
 * typo never evaluates); row names when evaluated (an exact name that
 * matches no row is an error, a glob that matches none counts as zero).
 */
#ifndef GPUTRACE_TOOL_EXPR_H
#define GPUTRACE_TOOL_EXPR_H

#include <stdbool.h>
#include <stdio.h>

#include "sumdoc.h"

struct expr;

/* Where in the text a problem is: [pos, pos + len). */
struct expr_err {
	int pos, len;
	char msg[1024];
};

enum expr_status { EXPR_PASS, EXPR_FAIL, EXPR_ERROR };

struct expr_result {
	enum expr_status status;
	char measured[256]; /* the value(s) read from the summary: "31.25 ms", "3 vs 4" */
	char bound[128];    /* the literal side, when there is one: "25 ms" */
	struct expr_err err; /* EXPR_ERROR */
};

/* NULL with *err set when text is not a valid check. */
struct expr *expr__parse(const char *text, struct expr_err *err);
void expr__free(struct expr *x);
void expr__eval(const struct expr *x, const struct sumdoc *d, struct expr_result *res);

/* "  <text>\n  ^~~~\n" under the place err points at. */
void expr__show_err(FILE *f, const char *text, const struct expr_err *err);

#endif
