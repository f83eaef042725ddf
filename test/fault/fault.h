/* SPDX-License-Identifier: MIT */
/*
 * Shared by the fault-suite programs: Level Zero set-up and counted calls.
 *
 * Accounting, so a test can check "recorded + lost == produced" exactly:
 * - calls(n) makes n traced calls (zeDriverGetApiVersion), and every other
 *   Level Zero call goes through Z(), which counts it for the calling
 *   thread; report() prints "<role> calls N" (N = calls since the thread's
 *   last report) on stdout with one write(), and appends "<pid> <role> N"
 *   to $FAULT_NOTES. Nothing here prints pids or timings on stdout: stdout
 *   must be the same traced and untraced.
 * - Threads that race the end of the process (hot threads) count in the
 *   shared file $FAULT_SHM instead: started before each call, completed
 *   after it, and `snapshot` = completed, taken just before the program ends
 *   itself. The test reads it after the process is gone.
 * Plain C and C++ (the uncaught-exception program includes it too).
 */
#ifndef FAULT_H
#define FAULT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <level_zero/ze_api.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct fault_shm {
	uint64_t started;   /* hot calls begun */
	uint64_t completed; /* hot calls returned */
	uint64_t snapshot;  /* completed, just before the program ended itself */
	uint64_t extra;     /* a program-specific count (signal-handler calls...) */
};

static struct fault_shm fault_shm_local;
static struct fault_shm *fault_shm = &fault_shm_local;
static ze_driver_handle_t fault_driver;
static __thread uint64_t fault_unreported;
static const char *fault_role = "main";
static int fault_stop; /* hot threads end when set (atomic access) */

#define FAULT_ADD(p, n) __atomic_add_fetch((p), (n), __ATOMIC_SEQ_CST)
#define FAULT_GET(p)    __atomic_load_n((p), __ATOMIC_SEQ_CST)

/* One write(2) per line: nothing buffered to lose on a crash or to
 * duplicate on fork, and lines from threads never interleave. */
__attribute__((format(printf, 2, 3))) static void fault_write(int fd, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	if (n > 0 && write(fd, buf, (size_t)n) < 0)
		return;
}

#define say(...) fault_write(1, __VA_ARGS__)

/* A thread, or exit 2 with one line: a join of a thread never made would
 * fail far from the cause. */
static __attribute__((unused)) void fault_thread(pthread_t *t, const pthread_attr_t *attr,
						 void *(*fn)(void *), void *arg)
{
	int err = pthread_create(t, attr, fn, arg);

	if (err) {
		fault_write(2, "pthread_create failed: %s\n", strerror(err));
		exit(2);
	}
}

/* Side channel for the test: "<pid> <key> <value>" lines, not on stdout. */
static __attribute__((unused)) void note(const char *key, unsigned long long value)
{
	const char *path = getenv("FAULT_NOTES");
	int fd;

	if (!path || !*path)
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	fault_write(fd, "%d %s %llu\n", (int)getpid(), key, value);
	close(fd);
}

/* A counted Level Zero call (any expression returning ze_result_t). */
#define Z(call) fault_counted((call))
static __attribute__((unused)) inline ze_result_t fault_counted(ze_result_t r)
{
	fault_unreported++;
	return r;
}

static __attribute__((unused)) void report(void)
{
	if (!fault_unreported)
		return;
	say("%s calls %llu\n", fault_role, (unsigned long long)fault_unreported);
	note(fault_role, fault_unreported);
	fault_unreported = 0;
}

static __attribute__((unused)) void calls(int n)
{
	ze_api_version_t v;

	for (int i = 0; i < n; i++)
		Z(zeDriverGetApiVersion(fault_driver, &v));
}

/* A traced call by a thread that may be cut off by the process's end. */
static __attribute__((unused)) inline void hot_call(void)
{
	ze_api_version_t v;

	FAULT_ADD(&fault_shm->started, 1);
	zeDriverGetApiVersion(fault_driver, &v);
	FAULT_ADD(&fault_shm->completed, 1);
}

/* hot threads past their start-up */
static unsigned fault_hot_running;

static __attribute__((unused)) void *hot_thread(void *arg)
{
	(void)arg;
	FAULT_ADD(&fault_hot_running, 1);
	while (!FAULT_GET(&fault_stop))
		hot_call();
	return NULL;
}

static __attribute__((unused)) void take_snapshot(void)
{
	__atomic_store_n(&fault_shm->snapshot, FAULT_GET(&fault_shm->completed), __ATOMIC_SEQ_CST);
}

static __attribute__((unused)) void start_hot(int n)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;
		fault_thread(&t, NULL, hot_thread, NULL);
		pthread_detach(t);
	}
	/* Every hot thread runs, and calls, before the program goes on. Their
	 * start-up must be over too: under AddressSanitizer it allocates, and
	 * a fork() made meanwhile leaves the child's allocator locked (a
	 * limit of that runtime, not of the program or the tracer). */
	while (FAULT_GET(&fault_hot_running) < (unsigned)n ||
	       FAULT_GET(&fault_shm->completed) < (uint64_t)n * 100)
		sched_yield();
}

static __attribute__((unused)) void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static __attribute__((unused)) void map_shm(void)
{
	const char *path = getenv("FAULT_SHM");
	void *p;
	int fd;

	if (!path || !*path)
		return;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(struct fault_shm)) < 0) {
		fault_write(2, "cannot create FAULT_SHM %s\n", path);
		exit(2);
	}
	p = mmap(NULL, sizeof(struct fault_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		fault_write(2, "cannot map FAULT_SHM\n");
		exit(2);
	}
	fault_shm = (struct fault_shm *)p;
}

/* zeInit + zeDriverGet: two counted calls. */
static __attribute__((unused)) void fault_init(void)
{
	uint32_t count = 1;

	map_shm();
	if (Z(zeInit(0)) != ZE_RESULT_SUCCESS || Z(zeDriverGet(&count, &fault_driver)) ||
	    !fault_driver) {
		fault_write(2, "no Level Zero driver\n");
		exit(2);
	}
}

/*
 * Quiet workers: each makes its calls, reports, tells main, then blocks
 * (outside any traced call) until the process ends. Their rings still hold
 * events the drain has not written: the end must save them.
 */
static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t quiet_cond = PTHREAD_COND_INITIALIZER;
static int quiet_done;

static __attribute__((unused)) void *quiet_thread(void *arg)
{
	calls((int)(intptr_t)arg);
	report();
	pthread_mutex_lock(&quiet_lock);
	quiet_done++;
	pthread_cond_broadcast(&quiet_cond);
	pthread_mutex_unlock(&quiet_lock);
	for (;;)
		pause();
	return NULL;
}

/* Started one after the other, so the report lines come in a fixed order. */
static __attribute__((unused)) void start_quiet(int n, int ncalls)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;
		fault_thread(&t, NULL, quiet_thread, (void *)(intptr_t)ncalls);
		pthread_detach(t);
		pthread_mutex_lock(&quiet_lock);
		while (quiet_done <= i)
			pthread_cond_wait(&quiet_cond, &quiet_lock);
		pthread_mutex_unlock(&quiet_lock);
	}
}

static __attribute__((unused)) int arg_int(int argc, char **argv, int i, int def)
{
	return argc > i ? atoi(argv[i]) : def;
}

#endif
