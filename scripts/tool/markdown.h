/* SPDX-License-Identifier: MIT */
/*
 * Markdown for pull-request comments and job summary pages (GitHub's
 * $GITHUB_STEP_SUMMARY, GitLab notes): GitHub-flavoured tables.
 */
#ifndef GPUTRACE_TOOL_MARKDOWN_H
#define GPUTRACE_TOOL_MARKDOWN_H

#include <stdio.h>

#include "sumdoc.h"

/* Text for a table cell: '|' escaped, control characters as the summary
 * prints them (\n, \x1b). */
void md__text(FILE *f, const char *s);
/* The same as an inline code span. */
void md__code(FILE *f, const char *s);
/* A compact summary: totals, top kernels and API calls, copies, devices, lost. */
void md__summary(FILE *f, const struct sumdoc *d, int top);

#endif
