// SPDX-License-Identifier: MIT
/* The traced program of the plug-in tests: does nothing of its own but
 * print one line and exit with a known status, so the tests can tell that
 * plug-ins (working or broken) leave its output and exit status alone.
 * argv[1]: milliseconds to sleep first (plug-ins record meanwhile).
 * argv[2] "crash": a thread of its own raises SIGSEGV 100 ms in, while the
 * main thread sleeps on to its exit (which the crash must win).
 * argv[2] "exec": after the sleep, execs itself (host_app MS), which sleeps
 * and exits; "exec-fail": an exec that fails, then sleeps again. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../arg.h"

static void *crash(void *arg)
{
	struct timespec ts = { 0, 100000000L };

	(void)arg;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	raise(SIGSEGV);
	return NULL;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 0;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	pthread_t t;

	if (argc > 2 && !strcmp(argv[2], "crash") && pthread_create(&t, NULL, crash, NULL))
		return 2;

	if (argc > 2 && !strcmp(argv[2], "until-eof")) {
		for (long left = ms; left > 0; left -= 10)
			if (test_stdin_ended(10))
				break;
	} else {
		/* the whole time, through signals (gputrace capture's among them) */
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	if (argc > 2 && !strcmp(argv[2], "exec")) {
		execl("/proc/self/exe", argv[0], argv[1], (char *)NULL);
		return 4;
	}
	if (argc > 2 && !strcmp(argv[2], "exec-fail")) {
		ts = (struct timespec){ ms / 1000, (ms % 1000) * 1000000L };
		if (!execl("/nonexistent/program", "x", (char *)NULL))
			return 4;
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	printf("host_app done\n");
	return 3;
}
