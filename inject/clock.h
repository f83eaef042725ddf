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

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include "event.h"
#include "rawsys.h"

/* llround() without libm: the library links libc only, and a program (or
 * a vendor library opened RTLD_LOCAL) may be the only holder of libm. */
static inline long long gt_round(double x)
{
	return (long long)(x < 0 ? x - 0.5 : x + 0.5);
}

#define GT_CLOCK_ID   CLOCK_MONOTONIC_RAW
#define GT_CLOCK_NAME "CLOCK_MONOTONIC_RAW"

/* ThreadSanitizer cannot follow the line's seqlock (it has no model of
 * fences): a TSan build reads clock_gettime() only. */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
/*
 * Speed: two clock reads are most of what a traced call costs, and
 * clock_gettime() spends ~22 ns here where the bare TSC read takes ~10. So,
 * where the kernel itself derives the raw clock from an invariant TSC, the
 * raw clock is read as a line through the TSC, measured against
 * clock_gettime and re-anchored as the process runs (clock.c: within a few
 * ns of it, monotonic). Everywhere else, and until the line is measured
 * (the first 10 ms), it is clock_gettime().
 */
#define GT_CLOCK_TSC 1
#include <cpuid.h>
#include <string.h>
#include <x86intrin.h>
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif

struct gt_tsc_clock {
	_Atomic uint32_t on;   /* the line is usable */
	_Atomic uint32_t seq;  /* odd while the line is rewritten */
	uint32_t use_lfence;   /* set before the first read: see gt_rdtsc */
	_Atomic uint64_t tsc0; /* ns = ns0 + ((tsc - tsc0) * mult >> 32) */
	_Atomic uint64_t ns0;
	_Atomic uint64_t mult; /* ns per tick, 32.32 fixed point */
	_Atomic uint64_t span; /* ticks after tsc0 the line is good for */
};

extern GT_HIDDEN struct gt_tsc_clock gt_tsc;
/* clock_gettime(), and the line's upkeep when it is due. */
GT_HIDDEN uint64_t gt_clock_slow(void);
/* gt_clock_ns(), but where nothing has read it yet the raw clock, without
 * starting the line (whose start reads sysfs and CPUID): the end of a
 * process that recorded nothing. */
GT_HIDDEN uint64_t gt_clock_ns_unstarted(void);

static inline bool gt_has_rdtscp(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27));
}

/* How gt_rdtsc orders its read: 1 for LFENCE + RDTSC, 0 for RDTSCP, whichever is
 * the cheaper of the two that order it; -1 where neither does (no TSC line). LFENCE
 * waits for every earlier instruction on Intel, and on AMD where CPUID says it always
 * does (Fn8000_0021 EAX bit 2: the kernel's own test). On AMD it is the cheaper (6 ns
 * a read less than RDTSCP, an EPYC host); on Intel RDTSCP is (a traced call 2 to 3 ns
 * less, a Xeon host, 2026-12-06, best of 5 and of 7 in turns; the kernel's
 * rdtsc_ordered() takes it wherever there is one), and LFENCE only where there is
 * none. */
static inline int gt_tsc_use_lfence(void)
{
	unsigned int a, b, c, d;
	char vendor[12];

#if __has_include(<valgrind/valgrind.h>)
	/* Valgrind's CPU says Intel with RDTSCP whatever the host has, and runs
	 * RDTSCP only where the host has it (an AMD KVM guest without it: SIGILL
	 * at the first read); LFENCE + RDTSC it runs everywhere */
	if (RUNNING_ON_VALGRIND)
		return 1;
#endif
	if (__get_cpuid(0, &a, &b, &c, &d)) {
		memcpy(vendor, &b, 4);
		memcpy(vendor + 4, &d, 4);
		memcpy(vendor + 8, &c, 4);
		if (!memcmp(vendor, "GenuineIntel", 12))
			return !gt_has_rdtscp();
		if (!memcmp(vendor, "AuthenticAMD", 12) &&
		    __get_cpuid(0x80000021, &a, &b, &c, &d) && (a & (1u << 2)))
			return 1;
	}
	return gt_has_rdtscp() ? 0 : -1;
}

/* Ordered as the kernel's own clock_gettime() reads it (rdtsc_ordered()): it
 * waits for every earlier load, so a time read after seeing another thread's
 * store is never before that thread's time. A bare RDTSC runs ahead of a
 * pending load: a thread here read a time 6.6 us behind one another thread
 * had read and stored before it. LFENCE + RDTSC or RDTSCP, as
 * gt_tsc_use_lfence() chose. */
static inline uint64_t gt_rdtsc(void)
{
	unsigned int cpu;

	if (gt_tsc.use_lfence) {
		_mm_lfence();
		return __rdtsc();
	}
	return __rdtscp(&cpu);
}

/* always_inline: out of line it costs a call per read, half the saving */
static inline __attribute__((always_inline)) uint64_t gt_clock_ns(void)
{
	if (gt_likely(atomic_load_explicit(&gt_tsc.on, memory_order_relaxed))) {
		uint32_t seq = atomic_load_explicit(&gt_tsc.seq, memory_order_acquire);
		uint64_t tsc0 = atomic_load_explicit(&gt_tsc.tsc0, memory_order_relaxed);
		uint64_t ns0 = atomic_load_explicit(&gt_tsc.ns0, memory_order_relaxed);
		uint64_t mult = atomic_load_explicit(&gt_tsc.mult, memory_order_relaxed);
		uint64_t span = atomic_load_explicit(&gt_tsc.span, memory_order_relaxed);
		uint64_t d = gt_rdtsc() - tsc0;

		atomic_thread_fence(memory_order_acquire);
		/* d < span also sends a TSC read behind tsc0 (another CPU) to the slow path */
		if (gt_likely(d < span && !(seq & 1) &&
			      seq == atomic_load_explicit(&gt_tsc.seq, memory_order_relaxed)))
			return ns0 + (uint64_t)(((unsigned __int128)d * mult) >> 32);
	}
	return gt_clock_slow();
}
#else
static inline uint64_t gt_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(GT_CLOCK_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t gt_clock_ns_unstarted(void)
{
	return gt_clock_ns();
}
#endif

/* In a fork child: the line's upkeep another thread had under way never ends
 * (out of line in every build: lifecycle.c is built without a sanitizer's
 * flags, so it cannot tell a ThreadSanitizer build's clock.h from a plain one). */
GT_HIDDEN void gt_clock_fork_child(void);

/* The raw clock from the kernel, never the TSC line (which it does not start). */
static inline uint64_t gt_clock_gettime_ns(void)
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

/* The deadline of a timed wait ms from now, on the wait's clock (CLOCK_REALTIME
 * for pthread_mutex_timedlock; a condition variable's own). */
static inline struct timespec gt_timespec_after_ms(clockid_t id, unsigned long ms)
{
	struct timespec t;

	clock_gettime(id, &t);
	t.tv_sec += (time_t)(ms / 1000);
	t.tv_nsec += (long)(ms % 1000) * 1000000l;
	if (t.tv_nsec >= 1000000000l) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000l;
	}
	return t;
}

/*
 * One (clock, realtime) pair for converting between the two: the tightest of
 * a few clock-realtime-clock reads, so a preemption in between (common on a
 * loaded machine) does not shift every converted time by its length.
 */
struct gt_clock_pair {
	uint64_t clock_ns;
	int64_t realtime_ns;
	uint64_t width_ns; /* of the read: the pair is good to half of it */
};

/* clock: gt_clock_ns, or gt_clock_gettime_ns where the TSC line must not
 * start yet (a process's anchor, taken at load) */
static inline struct gt_clock_pair gt_clock_pair_of(uint64_t (*clock)(void))
{
	struct gt_clock_pair best = { 0, 0, UINT64_MAX };

	for (int i = 0; i < 5; i++) {
		uint64_t a = clock();
		int64_t r = (int64_t)gt_realtime_ns();
		uint64_t b = clock();

		if (b - a < best.width_ns)
			best = (struct gt_clock_pair){ a + (b - a) / 2, r, b - a };
	}
	return best;
}

static inline struct gt_clock_pair gt_clock_pair_now(void)
{
	return gt_clock_pair_of(gt_clock_ns);
}

#endif
