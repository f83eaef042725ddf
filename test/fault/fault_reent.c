/* SPDX-License-Identifier: MIT */
/*
 * Reentrancy: fault_reent ACTION [N]
 *   sighandler N   a 1 ms interval timer's SIGALRM handler makes 3 calls each
 *                  time while main makes N calls (handler calls noted as
 *                  "handler": their number depends on timing)
 *   signal-hot N   the same while two other threads call too
 */
#include "fault.h"

#include <signal.h>
#include <sys/time.h>

static void on_alarm(int sig)
{
	ze_api_version_t v;
	int saved = errno;

	(void)sig;
	for (int i = 0; i < 3; i++)
		zeDriverGetApiVersion(fault_driver, &v);
	FAULT_ADD(&fault_shm->extra, 3);
	errno = saved;
}

static void *busy_thread(void *arg)
{
	calls((int)(intptr_t)arg);
	report();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *action = argc > 1 ? argv[1] : "";
	int n = arg_int(argc, argv, 2, 200000);
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } }, off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;
	sigset_t block;
	pthread_t t[2];
	int nthreads = 0;

	fault_init();
	calls(100);
	report();
	if (strcmp(action, "sighandler") && strcmp(action, "signal-hot")) {
		fault_write(2, "unknown action %s\n", action);
		return 2;
	}
	if (!strcmp(action, "signal-hot")) {
		/* SIGALRM only for main: the other threads block it */
		sigemptyset(&block);
		sigaddset(&block, SIGALRM);
		pthread_sigmask(SIG_BLOCK, &block, NULL);
		for (; nthreads < 2; nthreads++)
			fault_thread(&t[nthreads], NULL, busy_thread, (void *)(intptr_t)n);
		pthread_sigmask(SIG_UNBLOCK, &block, NULL);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	calls(n);
	setitimer(ITIMER_REAL, &off, NULL);
	report();
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	note("handler", FAULT_GET(&fault_shm->extra));
	return 0;
}
