// SPDX-License-Identifier: MIT
/*
 * A wall clock being slewed, as chrony does after a resume (up to 8.3%):
 * preloaded, it makes CLOCK_REALTIME run GT_TEST_WALL_SLEW_PPM parts per
 * million faster than CLOCK_MONOTONIC_RAW from the process's start, for the
 * process and every library in it (Kineto plug-ins read UTC through libc).
 * The raw clock itself is untouched. At 0 ppm it is a wall clock that never
 * steps: the machine's own may (a CI machine's stepped ~1.1 ms in a run, which
 * no UTC-to-trace mapping can tell from a plug-in's time), so a test that
 * asserts plug-ins' times to the microsecond runs on this one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static int64_t base_raw, base_real, slew_ppm;
static int active; /* GT_TEST_WALL_SLEW_PPM set, 0 included */

static int64_t ns_of(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

__attribute__((constructor)) static void wall_slew_start(void)
{
	const char *ppm = getenv("GT_TEST_WALL_SLEW_PPM");
	struct timespec raw, real;

	real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
	real_clock_gettime(CLOCK_MONOTONIC_RAW, &raw);
	real_clock_gettime(CLOCK_REALTIME, &real);
	base_raw = ns_of(&raw);
	base_real = ns_of(&real);
	slew_ppm = ppm ? strtoll(ppm, NULL, 10) : 0;
	active = ppm != NULL;
}

__attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec *t)
{
	struct timespec raw;
	int64_t ns;

	if (!real_clock_gettime)
		wall_slew_start();
	if (id != CLOCK_REALTIME || !active)
		return real_clock_gettime(id, t);
	real_clock_gettime(CLOCK_MONOTONIC_RAW, &raw);
	ns = ns_of(&raw) - base_raw;
	ns = base_real + ns + (int64_t)((__int128)ns * slew_ppm / 1000000);
	t->tv_sec = ns / 1000000000;
	t->tv_nsec = ns % 1000000000;
	return 0;
}
