/* SPDX-License-Identifier: MIT */
/* How every Check binary here runs its suite: forked tests, normal output,
 * the exit status says whether any failed. */
#ifndef GPUTRACE_CHECK_RUN_H
#define GPUTRACE_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

static inline int check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
