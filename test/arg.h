/* SPDX-License-Identifier: MIT */
/* Numeric command-line arguments of the test and bench programs. */
#ifndef GPUTRACE_TEST_ARG_H
#define GPUTRACE_TEST_ARG_H

#include <stdio.h>
#include <stdlib.h>

/* argv[i] as a number, def when absent; exit 2 with one line when it is not one. */
static inline unsigned long test_arg(int argc, char **argv, int i, unsigned long def)
{
	char *end;
	unsigned long v;

	if (argc <= i)
		return def;
	v = strtoul(argv[i], &end, 10);
	if (*end || !*argv[i]) {
		fprintf(stderr, "%s: argument %d '%s' is not a number\n", argv[0], i, argv[i]);
		exit(2);
	}
	return v;
}

#endif
