/* SPDX-License-Identifier: MIT */
/* What the core unit tests share. */
#ifndef GPUTRACE_UNIT_H
#define GPUTRACE_UNIT_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "../check_run.h"

/* The tracer stays off until a test starts it (see gt_constructor). */
int gt_unit_test = 1;

/* fn(arg) with stderr (fd 2, every thread's) going to a temporary file: its text into
 * out (len bytes at most, NUL-terminated); the number of lines. */
static inline int unit_stderr(void (*fn)(void *), void *arg, char *out, size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(2), lines = 0;
	size_t n;

	ck_assert_ptr_nonnull(tmp);
	dup2(fileno(tmp), 2);
	fn(arg);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, len - 1, tmp);
	out[n] = 0;
	fclose(tmp);
	for (size_t i = 0; i < n; i++)
		lines += out[i] == '\n';
	return lines;
}

#define UNIT_MAIN(suite_fn)                                                      \
	int main(void)                                                           \
	{                                                                        \
		return check_run(suite_fn());                                    \
	}

#endif
