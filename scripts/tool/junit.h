/* SPDX-License-Identifier: MIT */
/*
 * JUnit XML, the test report Jenkins, GitLab and GitHub test reporters
 * read: one <testcase> per check (or per diff rule), the measured value in
 * the failure message.
 */
#ifndef GPUTRACE_TOOL_JUNIT_H
#define GPUTRACE_TOOL_JUNIT_H

#include <stddef.h>
#include <stdio.h>

/* Text for XML (and HTML) attributes and content: & < > " ' escaped, line
 * breaks and tabs as character references (kept in attributes), other
 * control characters XML 1.0 cannot hold as '?'. */
void xml__text(FILE *f, const char *s);

enum case_status { CASE_PASS, CASE_FAIL, CASE_ERROR };

struct test_case {
	const char *name;    /* the check as written */
	enum case_status status;
	const char *message; /* one line: measured value, or what went wrong */
	const char *detail;  /* body of <failure>/<error>, or output of a pass; may be NULL */
};

/* suite: "gputrace check"; classname: "gputrace.check". 0 or -errno. */
int junit__write(const char *path, const char *suite, const char *classname,
		 const char *input, const struct test_case *cases, size_t n);

#endif
