// SPDX-License-Identifier: MIT
/*
 * Clocks. Everything is scheduled on the host's CLOCK_MONOTONIC_RAW; two
 * other clocks are derived from it, each awkward on purpose:
 *  - the device's clock (GPU timestamps): a large offset, a drift and an
 *    optional step, so GPU times mean nothing until converted;
 *  - CLOCK_REALTIME as CUPTI reads it (CUPTI's default time base): the
 *    real one at start, then advanced by MONOTONIC_RAW with a drift (NTP
 *    slewing) and an optional step (NTP stepping, settimeofday).
 * Settings come from CUDA_SIM_* variables; a bad value gets one line on
 * stderr and the default.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "drv.h"

static struct {
	uint64_t t0, rt0;
	int64_t dev_offset;
	double dev_drift_ppm, rt_drift_ppm;
	int64_t dev_step, rt_step;
	uint64_t dev_step_at, rt_step_at; /* host ns */
} C = { .dev_offset = 4242424242424ll };

static uint64_t raw_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void env_i64(const char *name, int64_t *out, int64_t lo, int64_t hi)
{
	const char *s = getenv(name);
	char *end;
	long long v;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi) {
		drv_report("%s='%s' is not an integer from %lld to %lld; using %lld", name, s,
			   (long long)lo, (long long)hi, (long long)*out);
		return;
	}
	*out = v;
}

static void env_ppm(const char *name, double *out)
{
	const char *s = getenv(name);
	char *end;
	double v;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= -1000.0 && v <= 1000.0)) {
		drv_report("%s='%s' is not a number of ppm from -1000 to 1000; using %g", name, s,
			   *out);
		return;
	}
	*out = v;
}

static void setup_once(void)
{
	struct timespec rt;
	int64_t dev_at = 100, rt_at = 100;

	C.t0 = raw_now();
	clock_gettime(CLOCK_REALTIME, &rt);
	C.rt0 = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	env_i64("CUDA_SIM_DEVICE_OFFSET_NS", &C.dev_offset, 0, 1ll << 62);
	env_ppm("CUDA_SIM_DEVICE_DRIFT_PPM", &C.dev_drift_ppm);
	env_i64("CUDA_SIM_DEVICE_STEP_NS", &C.dev_step, -(1ll << 40), 1ll << 40);
	env_i64("CUDA_SIM_DEVICE_STEP_AT_MS", &dev_at, 0, 1ll << 30);
	env_ppm("CUDA_SIM_REALTIME_DRIFT_PPM", &C.rt_drift_ppm);
	env_i64("CUDA_SIM_REALTIME_STEP_NS", &C.rt_step, -(1ll << 40), 1ll << 40);
	env_i64("CUDA_SIM_REALTIME_STEP_AT_MS", &rt_at, 0, 1ll << 30);
	C.dev_step_at = C.t0 + (uint64_t)dev_at * 1000000ull;
	C.rt_step_at = C.t0 + (uint64_t)rt_at * 1000000ull;
}

void drv_clock_setup(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, setup_once);
}

uint64_t drv_host_ns(void)
{
	return raw_now();
}

static int64_t drifted(uint64_t host_ns, double ppm)
{
	int64_t since = (int64_t)(host_ns - C.t0);

	return since + (int64_t)llround((double)since * ppm / 1e6);
}

uint64_t drv_device_ns(uint64_t host_ns)
{
	return C.t0 + (uint64_t)C.dev_offset + (uint64_t)drifted(host_ns, C.dev_drift_ppm) +
	       (uint64_t)(C.dev_step && host_ns >= C.dev_step_at ? C.dev_step : 0);
}

/* CLOCK_REALTIME at host_ns, with its step only if it had happened at as_of
 * (a GPU record's times, converted together, are on the clock as it stood
 * when the work started) */
uint64_t drv_realtime_ns(uint64_t host_ns, uint64_t as_of)
{
	return C.rt0 + (uint64_t)drifted(host_ns, C.rt_drift_ppm) +
	       (uint64_t)(C.rt_step && as_of >= C.rt_step_at ? C.rt_step : 0);
}

void drv_sleep_until(uint64_t host_ns)
{
	for (;;) {
		uint64_t now = raw_now();
		struct timespec ts;

		if (now >= host_ns)
			return;
		ts.tv_sec = (time_t)((host_ns - now) / 1000000000ull);
		ts.tv_nsec = (long)((host_ns - now) % 1000000000ull);
		nanosleep(&ts, NULL);
	}
}
