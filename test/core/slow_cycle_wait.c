/* SPDX-License-Identifier: MIT */
/*
 * Preloaded ahead of gputrace by a test: each pthread_mutex_timedlock (a fork's
 * wait for the drain's cycle, writer/thread.c) first sleeps 30 ms, so a signal
 * sent to a program that forks flat out lands in that wait nearly every time.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

typedef int timedlock_fn(pthread_mutex_t *, const struct timespec *);

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *until)
{
	static timedlock_fn *real;
	struct timespec pause = { 0, 30000000 };

	if (!real)
		real = (timedlock_fn *)dlsym(RTLD_NEXT, "pthread_mutex_timedlock");
	nanosleep(&pause, NULL);
	return real(m, until);
}
