/* sig_own SIGNO MODE: a program with its own use of signal SIGNO.
 * MODE sigaction: installs a handler with sigaction(); signal: with signal(); query: only
 * asks what is installed (must be SIG_DFL) and leaves it. Then prints "ready PID", reads
 * one line from stdin (the test signals it meanwhile), prints how many SIGNO it handled
 * and exits 0. Untraced and traced it prints the same. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int got;

static void on_sig(int sig)
{
	atomic_fetch_add(&got, 1);
}

int main(int argc, char **argv)
{
	int sig = argc > 1 ? atoi(argv[1]) : SIGRTMIN + 7;
	const char *mode = argc > 2 ? argv[2] : "sigaction";
	struct sigaction sa = { .sa_handler = on_sig, .sa_flags = SA_RESTART }, old;
	char line[64];

	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, NULL, &old) || old.sa_handler != SIG_DFL) {
		fprintf(stderr, "sig_own: signal %d is not at SIG_DFL\n", sig);
		return 1;
	}
	if (!strcmp(mode, "sigaction")) {
		if (sigaction(sig, &sa, NULL))
			return 1;
	} else if (!strcmp(mode, "signal")) {
		if (signal(sig, on_sig) != SIG_DFL)
			return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	/* a handler without SA_RESTART (ThreadSanitizer's signal() installs one) interrupts the read */
	while (!fgets(line, sizeof(line), stdin)) {
		if (errno != EINTR)
			return 1;
		clearerr(stdin);
	}
	printf("handled %d\n", atomic_load(&got));
	return 0;
}
