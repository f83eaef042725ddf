/* SPDX-License-Identifier: MIT */
/*
 * bench_true: /bin/true that says when it ran. It does nothing, like
 * /bin/true, except read CLOCK_MONOTONIC when main starts and right before
 * exit(), and write both (two uint64_t) to descriptor 3 when it is open:
 * bench_spawn --split splits a process's life into start-up (spawn to
 * main: exec, the loader, every preloaded library's constructors) and exit
 * (exit() to reaped: atexit and on_exit handlers, destructors, the
 * kernel's teardown). The clock is system-wide, so the parent compares it
 * with its own readings (bench.py, row 7).
 */
#include <unistd.h>

#include "bench.h"

int main(void)
{
	uint64_t at[2];

	at[0] = bench_wall();
	at[1] = bench_wall();
	/* one write for both: the same in every variant measured */
	if (write(3, at, sizeof(at)) != (ssize_t)sizeof(at) && errno != EBADF)
		return 1;
	exit(0);
}
