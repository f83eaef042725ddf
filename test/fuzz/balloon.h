/* SPDX-License-Identifier: MIT */
/*
 * A deliberate leak for the suite's self-test (test_fuzz.py): with
 * GT_FUZZ_BALLOON_MB=N set, the first input makes the harness hold N MiB,
 * touched, and wait for libFuzzer's RSS watcher (it looks once a second).
 * It proves a harness that balloons still fails its test. Unset: one load
 * and a branch per input.
 */
#ifndef GT_FUZZ_BALLOON_H
#define GT_FUZZ_BALLOON_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the chunks stay reachable, so the compiler cannot drop them */
static void *fuzz_balloon_held;

static void fuzz_balloon_once(void)
{
	static int done;
	const char *mb;
	size_t left;

	if (done)
		return;
	done = 1;
	mb = getenv("GT_FUZZ_BALLOON_MB");
	if (!mb)
		return;
	/* in 64 MiB steps, so it is the RSS limit that trips, not the malloc limit */
	for (left = strtoul(mb, NULL, 10); left > 0; left -= left < 64 ? left : 64) {
		char *chunk = malloc(64u << 20);

		if (!chunk)
			break;
		memset(chunk, 1, 64u << 20);
		*(void **)chunk = fuzz_balloon_held;
		fuzz_balloon_held = chunk;
	}
	sleep(3);
}

#endif
