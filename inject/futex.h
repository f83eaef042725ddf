/* SPDX-License-Identifier: MIT */
/*
 * The futex system call, which glibc does not wrap: waits on and wakes of a
 * 32-bit word (the drain's kick and done words, a ring's room, the phase).
 */
#ifndef GPUTRACE_FUTEX_H
#define GPUTRACE_FUTEX_H

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline long gt_futex(void *word, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/* Sleep while *word is val, for at most ns (a wake, a change or a signal
 * ends it sooner): the callers' deadlines are ns of their own clock. */
static inline long gt_futex_wait_ns(void *word, uint32_t val, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	return gt_futex(word, FUTEX_WAIT_PRIVATE, val, &ts);
}

#endif
