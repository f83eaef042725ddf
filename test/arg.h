/* SPDX-License-Identifier: MIT */
/* How the tests steer their test and bench programs: numeric command-line
 * arguments, and the end of stdin. */
#ifndef GPUTRACE_TEST_ARG_H
#define GPUTRACE_TEST_ARG_H

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

/*
 * Whether stdin has ended, waiting up to wait_ms for it (0: a look, never a wait).
 * A test closes a program's stdin when it is done with it: a fixed run length raced
 * the test's own steps, which a loaded machine stretches past it. A read of 0 (or a
 * failed one) is the end; a signal (gputrace capture's) or a stray byte is not.
 */
static inline int test_stdin_ended(int wait_ms)
{
	struct pollfd in = { .fd = 0, .events = POLLIN };
	ssize_t n;
	char c;

	if (poll(&in, 1, wait_ms) <= 0)
		return 0;
	n = read(0, &c, 1);
	return n == 0 || (n < 0 && errno != EINTR);
}

#endif
