// SPDX-License-Identifier: MIT
/*
 * CUPTI's clock. CPU-side timestamps (API and synchronization records,
 * cuptiGetTimestamp) are CLOCK_REALTIME, or the client's timestamp
 * callback once registered. GPU-side timestamps (kernels, copies, fills,
 * graphs) are the device's own clock, converted as the documentation
 * says: "CUPTI performs a linear interpolation to convert GPU timestamps
 * into CPU timestamps". Here: through the last two (device, host) pairs,
 * taken at start, 10 ms later, then at most every 100 ms (worker thread),
 * onto the host's time, then onto CUPTI's CPU clock at that host time (so
 * a step of CLOCK_REALTIME shows in GPU times exactly when it happens; a
 * timestamp callback's clock is read between two host reads), as that
 * clock stood when the work started: a record's end is its start plus
 * what the device measured, as CUPTI converts a record's timestamps
 * together, never across a step inside the work. A
 * device clock that drifts is followed; one that steps between two pairs
 * gives converted times that are off until the pairs are past the step,
 * as on hardware.
 */
#define _GNU_SOURCE
#include <time.h>

#include "cupti_sim.h"

static struct pair {
	uint64_t gpu, host;
} pairs[2];
static unsigned npairs;
static uint64_t last_host;
static int64_t callback_offset; /* the client's clock minus the host's, at the last pair */

#define CALIBRATE_NS   (100ull * 1000000) /* at most this often */
#define FIRST_SLOPE_NS (10ull * 1000000)  /* the second pair, for a slope soon */
#define CALIBRATE_READS    16   /* client clock reads tried per pair, at most */
#define CALIBRATE_TIGHT_NS 2000 /* a read this narrow ends the tries */

uint64_t cs_now(void)
{
	CUpti_TimestampCallbackFunc fn = __atomic_load_n(&C.timestamp, __ATOMIC_ACQUIRE);
	const struct sim_tools *tools = __atomic_load_n(&C.tools, __ATOMIC_ACQUIRE);
	struct timespec ts;
	uint64_t v;

	if (fn) {
		cs_in_timestamp++;
		v = fn();
		cs_in_timestamp--;
		return v;
	}
	if (tools) {
		uint64_t now = tools->host_ns();

		return tools->realtime_ns(now, now);
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cs_calibrate(void)
{
	uint64_t h1;

	if (!C.tools)
		return;
	h1 = C.tools->host_ns();
	if (npairs && h1 - last_host < (npairs == 1 ? FIRST_SLOPE_NS : CALIBRATE_NS))
		return;
	if (__atomic_load_n(&C.timestamp, __ATOMIC_ACQUIRE)) {
		/* the client's clock, read between two of ours: the narrowest of a few such
		 * reads (a thread preempted between them would put the pair off by half the
		 * time it waited, and every GPU time converted through it with it) */
		uint64_t best = UINT64_MAX, mid = h1;

		for (int i = 0; i < CALIBRATE_READS && best > CALIBRATE_TIGHT_NS; i++) {
			uint64_t a = i ? C.tools->host_ns() : h1, cpu = cs_now();
			uint64_t h2 = C.tools->host_ns();

			if (h2 - a < best) {
				best = h2 - a;
				mid = a + (h2 - a) / 2;
				callback_offset = (int64_t)(cpu - mid);
			}
		}
		h1 = mid;
	}
	if (npairs == 2)
		pairs[0] = pairs[1];
	pairs[npairs == 2 ? 1 : npairs] = (struct pair){ C.tools->device_ns(h1), h1 };
	if (npairs < 2)
		npairs++;
	last_host = h1;
}

uint64_t cs_gpu_time(uint64_t host_ns, uint64_t started)
{
	uint64_t gpu, host;
	long double slope = 1.0L;

	if (!C.tools)
		return 0;
	if (!npairs)
		cs_calibrate();
	/* the device's timestamp of the event, as the GPU wrote it */
	gpu = C.tools->device_ns(host_ns);
	const struct pair *last = &pairs[npairs - 1];
	if (npairs == 2 && pairs[1].gpu != pairs[0].gpu)
		slope = (long double)((int64_t)(pairs[1].host - pairs[0].host)) /
			(long double)((int64_t)(pairs[1].gpu - pairs[0].gpu));
	host = last->host + (uint64_t)(int64_t)((long double)(int64_t)(gpu - last->gpu) * slope);
	if (__atomic_load_n(&C.timestamp, __ATOMIC_ACQUIRE))
		return host + (uint64_t)callback_offset;
	/* on the CPU clock as it stood when the work started: the device measured
	 * its length, and CUPTI converts a record's timestamps together (a step of
	 * CLOCK_REALTIME inside a kernel does not end it before it started) */
	return C.tools->realtime_ns(host, started);
}

void cs_clock_forget(void)
{
	npairs = 0;
}
