/* The simulated device clock: a non-integer tick, few valid bits and a large offset from
 * the host clock, so a tracer that converts timestamps naively is visibly wrong. */
#define _GNU_SOURCE /* pthread_getname_np */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

#define SIM_DEFAULT_TICK_NS 52.083L
#define SIM_DEFAULT_VALID_BITS 32
#define SIM_DEFAULT_OFFSET_NS 7777777777777ULL

struct sim_clock sim_clock = {
	.tick_ns = SIM_DEFAULT_TICK_NS,
	.valid_bits = SIM_DEFAULT_VALID_BITS,
	.mask = (1ULL << SIM_DEFAULT_VALID_BITS) - 1,
	.offset_ns = SIM_DEFAULT_OFFSET_NS,
	.rate = 1.0L,
};

/* A number from the environment within [lo, hi]: true; unset: false; anything else gets
 * one line naming what is accepted, and false (the fallback stays). */
static bool env_real(const char *name, long double lo, long double hi, const char *fallback,
		     long double *v)
{
	const char *s = getenv(name);
	char *end;

	if (!s || !*s)
		return false;
	errno = 0;
	*v = strtold(s, &end);
	if (errno || *end || !(*v >= lo && *v <= hi)) {
		fprintf(stderr, "ze_sim: %s='%s' is not a number from %Lg to %Lg; using %s\n", name,
			s, lo, hi, fallback);
		return false;
	}
	return true;
}

static void parse_tick(void)
{
	long double v;

	if (env_real("ZE_SIM_TICK_NS", 0.001L, 1e9L, "52.083", &v))
		sim_clock.tick_ns = v;
}

static void parse_bits(void)
{
	const char *s = getenv("ZE_SIM_VALID_BITS");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < 8 || v > 64) {
		fprintf(stderr, "ze_sim: ZE_SIM_VALID_BITS='%s' is not an integer from 8 to 64; "
			"using %d\n", s, SIM_DEFAULT_VALID_BITS);
		return;
	}
	sim_clock.valid_bits = v;
	sim_clock.mask = v == 64 ? ~0ULL : (1ULL << v) - 1;
}

static void parse_offset(void)
{
	const char *s = getenv("ZE_SIM_CLOCK_OFFSET_NS");
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtoull(s, &end, 10);
	/* Bounded so that host_ns + offset stays exact in a long double division. */
	if (errno || *end || *s == '-' || v > (1ULL << 62)) {
		fprintf(stderr, "ze_sim: ZE_SIM_CLOCK_OFFSET_NS='%s' is not an integer from 0 to "
			"2^62; using %llu\n", s, SIM_DEFAULT_OFFSET_NS);
		return;
	}
	sim_clock.offset_ns = v;
}

/* A device clock that runs fast or slow against the host's, as a GPU's crystal does
 * (real ones: a few ppm); the tick the properties report stays the nominal one. */
static void parse_drift(void)
{
	long double v;

	if (env_real("ZE_SIM_DRIFT_PPM", -1000.0L, 1000.0L, "0", &v))
		sim_clock.rate = 1.0L + v / 1e6L;
}

/* ZE_SIM_PAIR_SPLIT_US=US[/N]: every Nth zeDeviceGetGlobalTimestamps reads the host clock,
 * is held US, then reads the device counter: a driver preempted between its two reads, or
 * one whose reads are microseconds apart (i915's engine-cycles query reads the CPU clock
 * first and reports the read's length beside it). The call still returns inside the
 * caller's own bracket; the pair just says the device was US behind where it was. */
struct sim_stall sim_pair_split = { "ZE_SIM_PAIR_SPLIT_US", 0, 1 };
/* ZE_SIM_PAIR_SPLIT_THREAD=NAME: only the calls of threads so named count and split (a test
 * then splits the pairs of one role's calls whatever others read, or read again). */
static char pair_split_thread[16];

static void clock_setup_once(void)
{
	const char *thread = getenv("ZE_SIM_PAIR_SPLIT_THREAD");

	sim_stall_parse(&sim_pair_split);
	if (thread)
		snprintf(pair_split_thread, sizeof(pair_split_thread), "%s", thread);
	parse_tick();
	parse_bits();
	parse_offset();
	parse_drift();
}

void sim_clock_setup(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, clock_setup_once);
}

uint64_t sim_host_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t sim_dev_ticks(uint64_t host_ns)
{
	long double t = floorl((long double)(host_ns + sim_clock.offset_ns) * sim_clock.rate /
			       sim_clock.tick_ns);

	return (uint64_t)t & sim_clock.mask;
}

/* CLOCK_MONOTONIC_RAW cannot be slept on; sleep on the monotonic clock and re-check. */
void sim_sleep_until(uint64_t host_ns)
{
	for (;;) {
		uint64_t now = sim_host_ns();
		struct timespec ts;

		if (now >= host_ns)
			return;
		ts.tv_sec = (host_ns - now) / 1000000000ULL;
		ts.tv_nsec = (host_ns - now) % 1000000000ULL;
		nanosleep(&ts, NULL);
	}
}

void sim_stall_parse(struct sim_stall *st)
{
	const char *s = getenv(st->env);
	char *end;
	unsigned long v, every = 1;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (!errno && *end == '/' && end[1] != '-')
		every = strtoul(end + 1, &end, 10);
	if (errno || *end || *s == '-' || v > 1000000 || every < 1 || every > 1000000) {
		fprintf(stderr, "ze_sim: %s='%s' is not US[/N], US from 0 to 1000000 and N from "
			"1 to 1000000; no stall\n", st->env, s);
		return;
	}
	st->ns = v * 1000ull;
	st->every = every;
}

bool sim_pair_split_maybe(void)
{
	char name[sizeof(pair_split_thread)];

	if (pair_split_thread[0] &&
	    (pthread_getname_np(pthread_self(), name, sizeof(name)) ||
	     strcmp(name, pair_split_thread)))
		return false;
	return sim_stall_maybe(&sim_pair_split);
}

bool sim_stall_maybe(struct sim_stall *st)
{
	if (!st->ns || (atomic_fetch_add(&st->calls, 1) + 1) % st->every)
		return false;
	for (uint64_t until = sim_host_ns() + st->ns; sim_host_ns() < until;)
		;
	return true;
}
