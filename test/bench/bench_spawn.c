/* SPDX-License-Identifier: MIT */
/*
 * bench_spawn <n> <program> [args...]: starts the program n times, one after
 * the other (posix_spawn, then wait), and reports the median time from
 * spawn to reaped: what a process costs, start to exit, as a shell or make
 * sees it. Run untraced and with the library preloaded (the environment
 * passes on), for the cost of the library in a process that records
 * nothing (bench.py, row 7).
 */
#include <spawn.h>
#include <sys/wait.h>

#include "bench.h"

extern char **environ;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	unsigned long n = test_arg(argc, argv, 1, 100);
	uint64_t *took, total = 0;

	if (argc < 3 || !n)
		BENCH_DIE("usage: bench_spawn <n> <program> [args...]");
	took = calloc(n, sizeof(*took));
	if (!took)
		BENCH_DIE("bench_spawn: out of memory");
	for (unsigned long i = 0; i < n; i++) {
		uint64_t t = bench_wall();
		pid_t pid;
		int st;

		if (posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ))
			BENCH_DIE("bench_spawn: cannot run %s", argv[2]);
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			BENCH_DIE("bench_spawn: %s failed", argv[2]);
		took[i] = bench_wall() - t;
		total += took[i];
	}
	qsort(took, n, sizeof(*took), cmp_u64);
	printf("bench=spawn procs=%lu med_ns=%llu mean_ns=%.1f\n", n,
	       (unsigned long long)took[n / 2], (double)total / (double)n);
	return 0;
}
