/* SPDX-License-Identifier: MIT */
/*
 * A Level Zero program that ends in the way its first argument says, after
 * a known number of traced calls: lifecycle_app ACTION [CALLS].
 * It prints "calls N" for every batch of traced calls it made, so a test
 * knows exactly how many events the trace must account for.
 */
#define _GNU_SOURCE /* sigset() */
#include <level_zero/ze_api.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* sigset() is what the test is about: glibc marks it deprecated */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static ze_driver_handle_t driver;

static void calls(int n)
{
	ze_api_version_t v;

	for (int i = 0; i < n; i++)
		zeDriverGetApiVersion(driver, &v);
	printf("calls %d\n", n);
	fflush(stdout);
}

static void init(void)
{
	uint32_t count = 1;

	if (zeInit(0) != ZE_RESULT_SUCCESS || zeDriverGet(&count, &driver) != ZE_RESULT_SUCCESS) {
		fprintf(stderr, "no Level Zero driver\n");
		exit(2);
	}
}

static void on_segv(int sig)
{
	static const char msg[] = "own handler ran\n";

	write(1, msg, sizeof(msg) - 1);
	_exit(42);
}

static _Atomic long spun;

static void *worker_exit(void *arg)
{
	while (atomic_load(&spun) < 1000) /* the other thread is tracing */
		sched_yield();
	calls(100);
	exit(3);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A call every 2 us, a rate the drain keeps up with however the machine is
 * loaded (a thread calling flat out outruns any drain: it loses events by
 * design, which is not what this action tests). */
static void *worker_spin(void *arg)
{
	for (;;) {
		ze_api_version_t v;
		uint64_t next = now_ns() + 2000;

		zeDriverGetApiVersion(driver, &v);
		atomic_fetch_add(&spun, 1);
		while (now_ns() < next)
			;
	}
	return NULL;
}

/* The faults are the point: UBSan must not report them first (its report
 * carries addresses that differ from run to run). */
__attribute__((no_sanitize_undefined, noinline)) static void fault(const char *action)
{
	if (!strcmp(action, "segv"))
		*(volatile int *)0 = 1;
	if (!strcmp(action, "fpe")) {
		/* a real idiv: gcc turns 1/x into compares */
		volatile int seven = 7, zero = 0;
		printf("%d\n", seven / zero);
	}
}

/* how worker_late_exit ends the process: _exit, exit or quick_exit */
static const char *late_exit_how = "_exit";

static void on_quick_exit(void)
{
}

static void *worker_late_exit(void *arg)
{
	struct timespec pause = { 0, 700 * 1000000 }; /* main's exit is draining by then */

	(void)arg;
	nanosleep(&pause, NULL);
	if (!strcmp(late_exit_how, "exit"))
		exit(3);
	if (!strcmp(late_exit_how, "quick_exit"))
		quick_exit(3);
	_exit(3);
}

static void *worker_late_calls(void *arg)
{
	struct timespec pause = { 0, 300 * 1000000 }; /* main is gone by then */

	(void)arg;
	nanosleep(&pause, NULL);
	calls(100);
	return NULL;
}

static void *worker_fork_loop(void *arg)
{
	for (;;) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		waitpid(pid, NULL, 0);
	}
	return arg;
}

int main(int argc, char **argv)
{
	const char *action = argc > 1 ? argv[1] : "exit";
	int n = argc > 2 ? atoi(argv[2]) : 1000;

	init();
	calls(n);
	if (!strcmp(action, "exit"))
		return 0;
	if (!strncmp(action, "exit-then-", 10)) {
		/* another thread's _exit (exit, quick_exit) while main's exit ends
		 * the trace; a program with a quick_exit handler of its own */
		pthread_t t;

		late_exit_how = action + 10;
		at_quick_exit(on_quick_exit);
		pthread_create(&t, NULL, worker_late_exit, NULL);
		return 0;
	}
	if (!strcmp(action, "status"))
		return 7;
	fault(action);
	if (!strcmp(action, "abort"))
		abort();
	if (!strcmp(action, "handler")) {
		signal(SIGSEGV, on_segv);
		fault("segv");
	}
	if (!strcmp(action, "ignore")) {
		signal(SIGTERM, SIG_IGN);
		raise(SIGTERM);
		calls(10);
		return 0;
	}
	if (!strcmp(action, "default-again") || !strcmp(action, "default-again-sigset")) {
		/* a program resetting SIG_DFL still dies by the signal; the same
		 * through System V's sigset(), which glibc does past sigaction() */
		__sighandler_t (*install)(int, __sighandler_t) =
			strcmp(action, "default-again") ? sigset : signal;
		struct sigaction sa;

		install(SIGINT, SIG_IGN);
		install(SIGINT, SIG_DFL);
		sigaction(SIGINT, NULL, &sa);
		printf("sees %s\n", sa.sa_handler == SIG_DFL ? "SIG_DFL" : "other");
		fflush(stdout);
		raise(SIGINT);
	}
	if (!strcmp(action, "loop")) {
		printf("ready\n");
		fflush(stdout);
		for (;;)
			calls(1000);
	}
	if (!strcmp(action, "fork-loop")) {
		/* forks whose children _exit at once, a traced call after each: 128 MiB
		 * written make each fork long enough for a signal to land in one */
		size_t big = (size_t)128 << 20;
		char *mem = malloc(big);
		ze_api_version_t v;

		memset(mem, 1, big);
		printf("ready\n");
		fflush(stdout);
		for (;;) {
			pid_t pid = fork();

			if (pid == 0)
				_exit(0);
			waitpid(pid, NULL, 0);
			zeDriverGetApiVersion(driver, &v);
		}
	}
	if (!strcmp(action, "fork-thread-exit")) {
		/* a thread forks flat out (64 MiB to copy each time) while main makes
		 * its calls and exits: the exit's last drain meets fork after fork */
		size_t big = (size_t)64 << 20;
		char *mem = malloc(big);
		pthread_t t;

		memset(mem, 1, big);
		pthread_create(&t, NULL, worker_fork_loop, NULL);
		calls(n);
		exit(0);
	}
	if (!strcmp(action, "_exit"))
		_exit(5);
	if (!strcmp(action, "worker-exit")) {
		pthread_t t, s;
		pthread_create(&s, NULL, worker_spin, NULL);
		pthread_create(&t, NULL, worker_exit, NULL);
		pthread_join(t, NULL);
	}
	if (!strcmp(action, "pthread-exit")) {
		/* main leaves first; the process ends with its last thread, status 0 */
		pthread_t t;
		pthread_create(&t, NULL, worker_late_calls, NULL);
		pthread_exit(NULL);
	}
	if (!strcmp(action, "fork")) {
		pid_t pid = fork();
		if (pid == 0) {
			calls(n / 2);
			exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		calls(n);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	if (!strcmp(action, "daemon")) {
		/* the parent ends inside daemon(); the detached child calls on */
		if (daemon(1, 1))
			return 9;
		calls(n / 2);
		return 0;
	}
	if (!strcmp(action, "exec")) {
		execl("/proc/self/exe", argv[0], "exit", "50", (char *)NULL);
		perror("exec");
		return 1;
	}
	if (!strcmp(action, "exec-fail")) {
		execl("/nonexistent/program", "x", (char *)NULL);
		calls(10);
		return 0;
	}
	fprintf(stderr, "unknown action %s\n", action);
	return 2;
}
