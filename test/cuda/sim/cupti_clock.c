// SPDX-License-Identifier: MIT
/*
 * CUPTI's clock. CPU-side timestamps (API and synchronization records,
 * cuptiGetTimestamp) are CLOCK_REALTIME, or the client's timestamp
 * callback once registered. GPU-side timestamps (kernels, copies, fills,
 * graphs) are the device's own clock, converted as the documentation
 * says: "CUPTI performs a linear interpolation to convert GPU timestamps
 * into CPU timestamps", here through the last two (device, CPU) pairs,
 * taken at start and then at most every 100 ms, on the worker thread. A device clock
 * that steps between two pairs gives converted times that are off until
 * the next pair, as on hardware.
 */
#define _GNU_SOURCE
#include <time.h>

#include "cupti_sim.h"

static struct pair {
	uint64_t gpu, cpu;
} pairs[2];
static unsigned npairs;
static uint64_t last_host;

#define CALIBRATE_NS (100ull * 1000000) /* at most this often */

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
	if (tools)
		return tools->realtime_ns(tools->host_ns());
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cs_calibrate(void)
{
	uint64_t h1, h2, cpu;

	if (!C.tools)
		return;
	h1 = C.tools->host_ns();
	if (__atomic_load_n(&C.timestamp, __ATOMIC_ACQUIRE)) {
		/* the client's clock, read between two of ours */
		cpu = cs_now();
		h2 = C.tools->host_ns();
		h1 += (h2 - h1) / 2;
	} else {
		cpu = C.tools->realtime_ns(h1);
	}
	if (npairs && h1 - last_host < CALIBRATE_NS)
		return;
	if (npairs == 2)
		pairs[0] = pairs[1];
	pairs[npairs == 2 ? 1 : npairs] = (struct pair){ C.tools->device_ns(h1), cpu };
	if (npairs < 2)
		npairs++;
	last_host = h1;
}

uint64_t cs_gpu_time(uint64_t host_ns)
{
	uint64_t gpu;
	long double slope = 1.0L;

	if (!C.tools)
		return 0;
	if (!npairs)
		cs_calibrate();
	gpu = C.tools->device_ns(host_ns);
	const struct pair *last = &pairs[npairs - 1];
	if (npairs == 2 && pairs[1].gpu != pairs[0].gpu)
		slope = (long double)((int64_t)(pairs[1].cpu - pairs[0].cpu)) /
			(long double)((int64_t)(pairs[1].gpu - pairs[0].gpu));
	return last->cpu + (uint64_t)(int64_t)((long double)(int64_t)(gpu - last->gpu) * slope);
}

void cs_clock_forget(void)
{
	npairs = 0;
}
