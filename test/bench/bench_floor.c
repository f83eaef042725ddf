/* SPDX-License-Identifier: MIT */
/*
 * bench_floor <calls> [burst] [pause_us] [raw|tsc]: the least any tracer of a
 * host call must do, per call: read the clock before and after, and store a
 * 32-byte record into a thread-local buffer. Nothing is called in between.
 *
 * raw (the default): clock_gettime(CLOCK_MONOTONIC_RAW), the clock gputrace
 * uses; tsc: the TSC read as gputrace's line reads it, LFENCE + RDTSC or
 * RDTSCP (ordered after earlier loads, as clock_gettime() is: a bare RDTSC is
 * not a clock a tracer may use across threads), the least a TSC clock costs.
 */
#include "bench.h"

#include "inject/clock.h"
#ifdef GT_CLOCK_TSC
/* gt_rdtsc() itself reads it: only the line's flag of how to order the read
 * (set as the library's tsc_usable() sets it), no line */
GT_HIDDEN struct gt_tsc_clock gt_tsc;
#endif

struct rec {
	uint64_t start, end, id, what;
};

#define REC_SLOTS 1024 /* 32 KiB: stays in cache, as a ring being drained does */
static __thread struct rec buf[REC_SLOTS];

static inline uint64_t tsc(void)
{
#ifdef GT_CLOCK_TSC
	return gt_rdtsc();
#else
	return gt_clock_gettime_ns();
#endif
}

#define FLOOR_LOOP(clock)                                                                  \
	for (uint64_t i = 0; i < n; i++) {                                                 \
		uint64_t t0 = clock(), t1 = clock();                                       \
		buf[i & (REC_SLOTS - 1)] = (struct rec){ t0, t1, i, 7 };                   \
	}

static __attribute__((noinline)) void floor_raw(uint64_t n)
{
	FLOOR_LOOP(gt_clock_gettime_ns)
}

static __attribute__((noinline)) void floor_tsc(uint64_t n)
{
	FLOOR_LOOP(tsc)
}

int main(int argc, char **argv)
{
	uint64_t calls = test_arg(argc, argv, 1, 1000000);
	uint64_t burst = test_arg(argc, argv, 2, BENCH_BURST_DEFAULT);
	unsigned long pause_us = test_arg(argc, argv, 3, 0);
	const char *clock = argc > 4 ? argv[4] : "raw";
	bool use_tsc = !strcmp(clock, "tsc");
	struct bench_time t = { 0 };
	uint64_t sum = 0, span = bench_wall();

#ifdef GT_CLOCK_TSC
	gt_tsc.use_lfence = gt_tsc_use_lfence() > 0;
#endif
	if (!use_tsc && strcmp(clock, "raw"))
		BENCH_DIE("bench_floor: clock '%s': use raw or tsc", clock);
	if (!burst)
		burst = calls;
	use_tsc ? floor_tsc(burst < 1000 ? burst : 1000) : floor_raw(burst < 1000 ? burst : 1000);
	for (uint64_t done = 0; done < calls; done += burst) {
		uint64_t n = calls - done < burst ? calls - done : burst;
		uint64_t w = bench_wall(), c = bench_cpu();

		use_tsc ? floor_tsc(n) : floor_raw(n);
		c = bench_cpu() - c;
		bench_burst(&t, bench_wall() - w, c, n);
		bench_sleep_us(pause_us);
	}
	for (unsigned i = 0; i < REC_SLOTS; i++)
		sum += buf[i].end - buf[i].start;
	bench_report(use_tsc ? "floor_tsc" : "floor", 1, &t, bench_wall() - span, NULL);
	return sum == 1; /* keeps the records alive */
}
