/* SPDX-License-Identifier: MIT */
/*
 * bench_spawn <n> <program> [args...]: starts the program n times, one after
 * the other (posix_spawn, then wait), and reports the median time from
 * spawn to reaped: what a process costs, start to exit, as a shell or make
 * sees it; and, from each child's own resource usage (wait4), the median
 * CPU time it took (user and system: start, run, exit) and its page faults
 * (minor, the same every run). Run untraced and with the library preloaded
 * (the environment passes on), for the cost of the library in a process
 * that records nothing (bench.py, row 7).
 */
#include <spawn.h>
#include <sys/resource.h>
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
	uint64_t *took, *cpu, total = 0, faults = 0;

	if (argc < 3 || !n)
		BENCH_DIE("usage: bench_spawn <n> <program> [args...]");
	took = calloc(n, sizeof(*took));
	cpu = calloc(n, sizeof(*cpu));
	if (!took || !cpu)
		BENCH_DIE("bench_spawn: out of memory");
	for (unsigned long i = 0; i < n; i++) {
		uint64_t t = bench_wall();
		struct rusage ru;
		pid_t pid;
		int st;

		if (posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ))
			BENCH_DIE("bench_spawn: cannot run %s", argv[2]);
		if (wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			BENCH_DIE("bench_spawn: %s failed", argv[2]);
		took[i] = bench_wall() - t;
		total += took[i];
		cpu[i] = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
			 (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
		faults += (uint64_t)ru.ru_minflt;
	}
	qsort(took, n, sizeof(*took), cmp_u64);
	qsort(cpu, n, sizeof(*cpu), cmp_u64);
	printf("bench=spawn procs=%lu med_ns=%llu mean_ns=%.1f cpu_med_ns=%llu faults=%.1f\n", n,
	       (unsigned long long)took[n / 2], (double)total / (double)n,
	       (unsigned long long)cpu[n / 2], (double)faults / (double)n);
	return 0;
}
