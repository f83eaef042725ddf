// SPDX-License-Identifier: MIT
/*
 * spawn N: forks N children that each exec this program again as a leaf
 * (a fresh process image: gputrace must follow through the environment),
 * waits for them and exits with the number of failed children.
 * spawn leaf K: prints "leaf K" and exits 0.
 * spawn linger MS FILE: creates FILE, sleeps MS milliseconds, exits 0 (a
 * process that outlives the command that started it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n, failed = 0;

	if (argc == 3 && !strcmp(argv[1], "leaf")) {
		printf("leaf %s\n", argv[2]);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "linger")) {
		struct timespec ts = { atoi(argv[2]) / 1000, (atoi(argv[2]) % 1000) * 1000000l };
		FILE *f = fopen(argv[3], "w");

		if (f)
			fclose(f);
		nanosleep(&ts, NULL);
		return 0;
	}
	n = argc > 1 ? atoi(argv[1]) : 2;
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 100;
		if (pid == 0) {
			char k[16];

			snprintf(k, sizeof(k), "%d", i);
			execl("/proc/self/exe", argv[0], "leaf", k, (char *)NULL);
			_exit(127);
		}
		int st;
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed++;
	}
	printf("spawn: %d children, %d failed\n", n, failed);
	return failed;
}
