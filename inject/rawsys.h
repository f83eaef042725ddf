/* SPDX-License-Identifier: MIT */
/*
 * System calls by an instruction of our own, not through libc's wrappers, for
 * the few that a process that records nothing makes at start and exit (its
 * start time, its thread's id, its end time): each wrapper is a page of libc's
 * text the process would not touch otherwise, and a clock read through the
 * vDSO two more, a first touch of ~10 us apiece on the bench's VM, where a
 * system call costs ~1 us. Elsewhere than x86-64, libc's syscall().
 */
#ifndef GPUTRACE_RAWSYS_H
#define GPUTRACE_RAWSYS_H

#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* What the kernel returns: >= 0, or -errno. */
static inline long gt_rawsys6(long nr, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
#else
	long ret = syscall(nr, a, b, c, d, e, f);

	return ret < 0 ? -errno : ret;
#endif
}

static inline long gt_rawsys(long nr, long a, long b)
{
	return gt_rawsys6(nr, a, b, 0, 0, 0, 0);
}

/* A clock in ns (through libc where the kernel refused the call). */
static inline uint64_t gt_rawsys_clock_ns(clockid_t id)
{
	struct timespec ts;

	if (gt_rawsys(SYS_clock_gettime, id, (long)&ts))
		clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
