/* SPDX-License-Identifier: MIT */
/* What the core unit tests share. */
#ifndef GPUTRACE_UNIT_H
#define GPUTRACE_UNIT_H

#include <check.h>
#include <stdlib.h>

/* The tracer stays off until a test starts it (see gt_constructor). */
int gt_unit_test = 1;

#define UNIT_MAIN(suite_fn)                                                      \
	int main(void)                                                           \
	{                                                                        \
		SRunner *sr = srunner_create(suite_fn());                        \
		int failed;                                                      \
		srunner_run_all(sr, CK_NORMAL);                                  \
		failed = srunner_ntests_failed(sr);                              \
		srunner_free(sr);                                                \
		return failed ? EXIT_FAILURE : EXIT_SUCCESS;                     \
	}

#endif
