/* SPDX-License-Identifier: MIT */
/*
 * The one host clock of every event: CLOCK_MONOTONIC_RAW in nanoseconds.
 * Why RAW: Intel's Level Zero driver takes the host half of
 * zeDeviceGetGlobalTimestamps from it, so device times convert without a
 * second calibration; it is not slewed by NTP, so durations are exact; and
 * it is served from the vDSO (no system call). The trace records a
 * CLOCK_REALTIME anchor taken next to it so processes and hosts line up.
 */
#ifndef GPUTRACE_CLOCK_H
#define GPUTRACE_CLOCK_H

#include <stdint.h>
#include <time.h>

#define GT_CLOCK_ID   CLOCK_MONOTONIC_RAW
#define GT_CLOCK_NAME "CLOCK_MONOTONIC_RAW"

static inline uint64_t gt_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(GT_CLOCK_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t gt_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
