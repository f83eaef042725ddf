/* SPDX-License-Identifier: MIT */
/*
 * bench_spawn [--split] <n> <program> [args...]: starts the program n times,
 * one after the other (posix_spawn, then wait), and reports the median time
 * from spawn to reaped: what a process costs, start to exit, as a shell or
 * make sees it; and, from each child's own resource usage (wait4), the
 * median CPU time it took (user and system: start, run, exit) and its page
 * faults (minor, the same every run). Run untraced and with the library
 * preloaded (the environment passes on), for the cost of the library in a
 * process that records nothing (bench.py, row 7).
 *
 * --split: the program is bench_true, which writes the CLOCK_MONOTONIC times
 * it reached main and called exit() to descriptor 3 (a pipe): the medians of
 * start-up (spawn to main) and exit (exit() to reaped) are reported too.
 *
 * --split --preloads A,B,...: each process in turn with the next of these
 * LD_PRELOAD values ("none": without), n processes each, interleaved one by
 * one, so that the machine's drift moves every variant alike; the figures
 * of variant i are reported as v<i>_start_med_ns, v<i>_exit_med_ns and
 * v<i>_med_ns.
 */
#include "bench.h" /* first: _GNU_SOURCE, for pipe2 */

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t *sorted(uint64_t *v, unsigned long n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v;
}

#define VARIANTS_MAX 8

/* The pipe a child writes its times to, as its descriptor 3. Read only once
 * the child is reaped, so the read end never waits: a program that wrote
 * nothing is an error, not a hang. */
static void open_times_pipe(int pipefd[2], posix_spawn_file_actions_t *fa)
{
	if (pipe2(pipefd, O_CLOEXEC) || fcntl(pipefd[0], F_SETFL, O_NONBLOCK))
		BENCH_DIE("bench_spawn: pipe failed");
	posix_spawn_file_actions_adddup2(fa, pipefd[1], 3);
}

/* The environment with LD_PRELOAD set to `lib` (none: unset). */
static char **preload_env(const char *lib)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		BENCH_DIE("bench_spawn: out of memory");
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			env[k++] = environ[i];
	if (strcmp(lib, "none")) {
		size_t len = strlen(lib) + 12;

		env[k] = malloc(len);
		if (!env[k])
			BENCH_DIE("bench_spawn: out of memory");
		snprintf(env[k], len, "LD_PRELOAD=%s", lib);
	}
	return env;
}

static int split_variants(unsigned long n, char *list, char **argv)
{
	char **envs[VARIANTS_MAX], *save = NULL;
	uint64_t *start[VARIANTS_MAX], *quit[VARIANTS_MAX], *took[VARIANTS_MAX];
	posix_spawn_file_actions_t fa;
	unsigned k = 0;
	int pipefd[2];

	for (char *lib = strtok_r(list, ",", &save); lib; lib = strtok_r(NULL, ",", &save)) {
		if (k == VARIANTS_MAX)
			BENCH_DIE("bench_spawn: at most %d preloads", VARIANTS_MAX);
		envs[k] = preload_env(lib);
		start[k] = calloc(n, sizeof(uint64_t));
		quit[k] = calloc(n, sizeof(uint64_t));
		took[k] = calloc(n, sizeof(uint64_t));
		if (!start[k] || !quit[k] || !took[k])
			BENCH_DIE("bench_spawn: out of memory");
		k++;
	}
	if (!k)
		BENCH_DIE("bench_spawn: --preloads needs a comma list (none: no preload)");
	posix_spawn_file_actions_init(&fa);
	open_times_pipe(pipefd, &fa);
	for (unsigned long i = 0; i < n; i++)
		for (unsigned v = 0; v < k; v++) {
			uint64_t t = bench_wall(), at[2], end;
			pid_t pid;
			int st;

			if (posix_spawn(&pid, argv[0], &fa, NULL, argv, envs[v]))
				BENCH_DIE("bench_spawn: cannot run %s", argv[0]);
			if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
				BENCH_DIE("bench_spawn: %s failed", argv[0]);
			end = bench_wall();
			if (read(pipefd[0], at, sizeof(at)) != (ssize_t)sizeof(at))
				BENCH_DIE("bench_spawn: %s wrote no times (is it bench_true?)",
					  argv[0]);
			took[v][i] = end - t;
			start[v][i] = at[0] - t;
			quit[v][i] = end - at[1];
		}
	printf("bench=spawn_split procs=%lu variants=%u", n, k);
	for (unsigned v = 0; v < k; v++)
		printf(" v%u_med_ns=%llu v%u_start_med_ns=%llu v%u_exit_med_ns=%llu", v,
		       (unsigned long long)sorted(took[v], n)[n / 2], v,
		       (unsigned long long)sorted(start[v], n)[n / 2], v,
		       (unsigned long long)sorted(quit[v], n)[n / 2]);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	bool split = argc > 1 && !strcmp(argv[1], "--split");

	if (split && argc > 5 && !strcmp(argv[2], "--preloads"))
		return split_variants(test_arg(argc - 3, argv + 3, 1, 100), argv[3], argv + 5);
	unsigned long n;
	uint64_t *took, *cpu, *start, *quit, total = 0, faults = 0;
	posix_spawn_file_actions_t fa;
	int pipefd[2] = { -1, -1 };

	argv += split;
	argc -= split;
	n = test_arg(argc, argv, 1, 100);
	if (argc < 3 || !n)
		BENCH_DIE("usage: bench_spawn [--split [--preloads A,B,...]] <n> <program> [args...]");
	took = calloc(n, sizeof(*took));
	cpu = calloc(n, sizeof(*cpu));
	start = calloc(n, sizeof(*start));
	quit = calloc(n, sizeof(*quit));
	if (!took || !cpu || !start || !quit)
		BENCH_DIE("bench_spawn: out of memory");
	posix_spawn_file_actions_init(&fa);
	if (split) {
		/* the child's times wait in the pipe until it is reaped: no wake-up in between */
		open_times_pipe(pipefd, &fa);
	}
	for (unsigned long i = 0; i < n; i++) {
		uint64_t t = bench_wall(), at[2];
		struct rusage ru;
		pid_t pid;
		int st;

		if (posix_spawn(&pid, argv[2], &fa, NULL, argv + 2, environ))
			BENCH_DIE("bench_spawn: cannot run %s", argv[2]);
		if (wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			BENCH_DIE("bench_spawn: %s failed", argv[2]);
		took[i] = bench_wall() - t;
		if (split) {
			if (read(pipefd[0], at, sizeof(at)) != (ssize_t)sizeof(at))
				BENCH_DIE("bench_spawn: %s wrote no times (is it bench_true?)",
					  argv[2]);
			start[i] = at[0] - t;
			quit[i] = t + took[i] - at[1];
		}
		total += took[i];
		cpu[i] = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
			 (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
		faults += (uint64_t)ru.ru_minflt;
	}
	printf("bench=spawn procs=%lu med_ns=%llu mean_ns=%.1f cpu_med_ns=%llu faults=%.1f", n,
	       (unsigned long long)sorted(took, n)[n / 2], (double)total / (double)n,
	       (unsigned long long)sorted(cpu, n)[n / 2], (double)faults / (double)n);
	if (split)
		printf(" start_med_ns=%llu exit_med_ns=%llu",
		       (unsigned long long)sorted(start, n)[n / 2],
		       (unsigned long long)sorted(quit, n)[n / 2]);
	printf("\n");
	return 0;
}
