/* SPDX-License-Identifier: MIT */
/*
 * What the benchmark programs share: timing, argument parsing, a start
 * barrier, and the one-line "key=value" report bench.py parses.
 *
 * Every program times its own loop (wall clock and the thread's CPU clock),
 * so process start-up, the tracer's set-up and its final drain never count
 * in a per-call figure.
 */
#ifndef GPUTRACE_BENCH_H
#define GPUTRACE_BENCH_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../arg.h"

/* Calls are made in bursts with a pause after each: the traced thread's ring
 * takes a burst, the drain thread empties it during the pause, so the
 * default settings record every call (a program that never pauses makes
 * more events than any online writer can format: see bench.py, row 2).
 * Half the default ring: above the drain's high-water mark (a quarter), so
 * the drain thread starts on it within one poll. */
#define BENCH_BURST_DEFAULT 32768

static inline uint64_t bench_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t bench_wall(void)
{
	return bench_ns(CLOCK_MONOTONIC);
}

static inline uint64_t bench_cpu(void)
{
	return bench_ns(CLOCK_THREAD_CPUTIME_ID);
}

static inline void bench_sleep_us(unsigned long us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	while (us && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

#define BENCH_DIE(...)                                                                     \
	do {                                                                               \
		fprintf(stderr, __VA_ARGS__);                                              \
		fputc('\n', stderr);                                                       \
		exit(1);                                                                   \
	} while (0)

/* Time spent in the measured loops of one thread, and per burst. */
#define BENCH_BURSTS_MAX 4096

struct bench_time {
	uint64_t wall_ns, cpu_ns, calls;
	unsigned nbursts;
	float burst_wall[BENCH_BURSTS_MAX], burst_cpu[BENCH_BURSTS_MAX]; /* ns per call */
};

static inline void bench_burst(struct bench_time *t, uint64_t wall, uint64_t cpu, uint64_t n)
{
	t->wall_ns += wall;
	t->cpu_ns += cpu;
	t->calls += n;
	if (n && t->nbursts < BENCH_BURSTS_MAX) {
		t->burst_wall[t->nbursts] = (float)wall / (float)n;
		t->burst_cpu[t->nbursts++] = (float)cpu / (float)n;
	}
}

static int bench_cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* The median burst of all threads: a burst the machine's other work
 * preempted does not move it. */
static inline double bench_median(const struct bench_time *t, unsigned threads, bool cpu)
{
	unsigned n = 0;
	float *all = malloc(sizeof(float) * BENCH_BURSTS_MAX * threads + 1);
	double m;

	if (!all)
		return 0;
	for (unsigned i = 0; i < threads; i++)
		for (unsigned b = 0; b < t[i].nbursts; b++)
			all[n++] = cpu ? t[i].burst_cpu[b] : t[i].burst_wall[b];
	qsort(all, n, sizeof(float), bench_cmp_float);
	m = !n ? 0 : n % 2 ? all[n / 2] : (all[n / 2 - 1] + all[n / 2]) / 2;
	free(all);
	return m;
}

/* One report line: wall_ns/cpu_ns = mean over threads of each thread's loop
 * time per call; med_ns/med_cpu_ns = the median burst's. */
static inline void bench_report(const char *what, unsigned threads, const struct bench_time *t,
				uint64_t span_ns, const char *extra)
{
	double wall = 0, cpu = 0;
	uint64_t calls = 0;

	for (unsigned i = 0; i < threads; i++) {
		if (!t[i].calls)
			continue;
		wall += (double)t[i].wall_ns / (double)t[i].calls;
		cpu += (double)t[i].cpu_ns / (double)t[i].calls;
		calls += t[i].calls;
	}
	printf("bench=%s threads=%u calls=%llu wall_ns=%.3f cpu_ns=%.3f med_ns=%.3f med_cpu_ns=%.3f "
	       "span_ms=%.3f%s%s\n", what, threads, (unsigned long long)calls, wall / threads,
	       cpu / threads, bench_median(t, threads, false), bench_median(t, threads, true),
	       (double)span_ns / 1e6, extra ? " " : "", extra ? extra : "");
	fflush(stdout);
}

#endif
