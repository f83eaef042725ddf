/* SPDX-License-Identifier: MIT */
/* What the core unit tests share. */
#ifndef GPUTRACE_UNIT_H
#define GPUTRACE_UNIT_H

#include <check.h>
#include <stdlib.h>
#include "../check_run.h"

/* The tracer stays off until a test starts it (see gt_constructor). */
int gt_unit_test = 1;

#define UNIT_MAIN(suite_fn)                                                      \
	int main(void)                                                           \
	{                                                                        \
		return check_run(suite_fn());                                    \
	}

#endif
