/* SPDX-License-Identifier: MIT */
/*
 * A library whose constructor registers fork handlers after a while: dlopen
 * holds the loader's lock all along (a Level Zero driver does this inside
 * zeInit), while gputrace's threads start and register theirs.
 */
#include <pthread.h>
#include <unistd.h>

static void child(void)
{
}

__attribute__((constructor)) static void register_late(void)
{
	usleep(300000);
	pthread_atfork(NULL, NULL, child);
}
