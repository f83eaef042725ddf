/* SPDX-License-Identifier: MIT */
/* A program that never touches a GPU API: it sleeps for the given milliseconds
 * (default 300) and says so. Telemetry of the machine's GPUs is sampled all the same. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 300;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	if (ms < 0 || ms > 600000) {
		fprintf(stderr, "usage: idle_app [milliseconds]\n");
		return 2;
	}
	while (nanosleep(&ts, &ts))
		;
	printf("idle: slept %ld ms\n", ms);
	return 0;
}
