// SPDX-License-Identifier: MIT
/* The traced program of the plug-in tests: does nothing of its own but
 * print one line and exit with a known status, so the tests can tell that
 * plug-ins (working or broken) leave its output and exit status alone.
 * argv[1]: milliseconds to sleep first (plug-ins record meanwhile). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 0;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	/* the whole time, through signals (gputrace capture's among them) */
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	printf("host_app done\n");
	return 3;
}
