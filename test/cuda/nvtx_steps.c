// SPDX-License-Identifier: MIT
/*
 * nvtx_steps [steps]: a training loop's NVTX shape, no CUDA: each step is a
 * range "step" (default domain) holding "fwd" and "bwd", with a mark
 * "step_end" after it; between steps an "idle" range. Step 2 is also
 * wrapped in "capture" of domain "trainer". Every range and mark carries
 * its step number in its payload... as a distinct name suffix: "fwd 3".
 * For --capture-range nvtx:... tests: which steps land in which window.
 *
 * nvtx_steps threads [duration_us]: one "step" on the main thread holding
 * "fwd 1", then a thread's own "step" holding "worker" (the main thread
 * waits for it), then "bwd 1" after duration_us; then "idle" and another
 * main "step" holding "fwd 2".
 *
 * nvtx_steps handover: the main thread's "step" lasts 350 ms; at 250 ms a
 * thread pushes its own "step" (300 ms, holding "worker"), and at 350 ms the
 * main thread marks "main-late" and pops its "step" while the thread's is
 * still open.
 *
 * nvtx_steps straddle [us]: the main thread's "step" holds a thread's "across",
 * a range "inner" of domain "other" and a start/end range "started", all three
 * begun inside it and ended us (0) microseconds after its pop (the thread's when
 * the main thread has popped "step").
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void work(long us)
{
	struct timespec t = { 0, us * 1000 };
	nanosleep(&t, NULL);
}

static void range(const char *name, long us)
{
	nvtxRangePushA(name);
	work(us);
	nvtxRangePop();
}

static void *worker(void *arg)
{
	nvtxRangePushA("step");
	range("worker", 200);
	nvtxRangePop();
	return arg;
}

static int threads(long us)
{
	pthread_t t;

	nvtxRangePushA("step");
	range("fwd 1", 200);
	if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
		return 1;
	work(us);
	range("bwd 1", 200);
	nvtxRangePop();
	range("idle", 300);
	nvtxRangePushA("step");
	range("fwd 2", 200);
	nvtxRangePop();
	printf("nvtx_steps: threads\n");
	return 0;
}

static void *late_worker(void *arg)
{
	nvtxRangePushA("step");
	range("worker", 300000);
	nvtxRangePop();
	return arg;
}

static int handover(void)
{
	pthread_t t;

	nvtxRangePushA("step");
	work(250000);
	if (pthread_create(&t, NULL, late_worker, NULL))
		return 1;
	work(100000);
	range("main-late", 0);
	nvtxRangePop();
	if (pthread_join(t, NULL))
		return 1;
	printf("nvtx_steps: handover\n");
	return 0;
}

static pthread_mutex_t straddle_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t straddle_cv = PTHREAD_COND_INITIALIZER;
static int straddle_state; /* 1: "across" pushed, 2: "step" popped */
static long straddle_us;

static void straddle_set(int state)
{
	pthread_mutex_lock(&straddle_mu);
	straddle_state = state;
	pthread_cond_broadcast(&straddle_cv);
	pthread_mutex_unlock(&straddle_mu);
}

static void straddle_wait(int state)
{
	pthread_mutex_lock(&straddle_mu);
	while (straddle_state < state)
		pthread_cond_wait(&straddle_cv, &straddle_mu);
	pthread_mutex_unlock(&straddle_mu);
}

static void *straddle_worker(void *arg)
{
	nvtxRangePushA("across");
	straddle_set(1);
	straddle_wait(2);
	work(straddle_us);
	nvtxRangePop();
	return arg;
}

static int straddle(long us)
{
	nvtxDomainHandle_t dom = nvtxDomainCreateA("other");
	nvtxEventAttributes_t a = { 0 };
	nvtxRangeId_t id;
	pthread_t t;

	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "inner";
	straddle_us = us;
	nvtxRangePushA("step");
	if (pthread_create(&t, NULL, straddle_worker, NULL))
		return 1;
	straddle_wait(1);
	nvtxDomainRangePushEx(dom, &a);
	id = nvtxRangeStartA("started");
	work(200);
	nvtxRangePop();
	straddle_set(2);
	work(us);
	nvtxDomainRangePop(dom);
	nvtxRangeEnd(id);
	if (pthread_join(t, NULL))
		return 1;
	printf("nvtx_steps: straddle\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "straddle"))
		return straddle(argc > 2 ? atol(argv[2]) : 0);
	if (argc > 1 && !strcmp(argv[1], "handover"))
		return handover();
	if (argc > 1 && !strcmp(argv[1], "threads"))
		return threads(argc > 2 ? atol(argv[2]) : 0);
	int steps = argc > 1 ? atoi(argv[1]) : 5;
	nvtxDomainHandle_t dom = nvtxDomainCreateA("trainer");
	nvtxEventAttributes_t a = { 0 };
	char name[32];

	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "capture";
	for (int s = 1; s <= steps; s++) {
		nvtxRangePushA("idle");
		work(300);
		nvtxRangePop();
		if (s == 2)
			nvtxDomainRangePushEx(dom, &a);
		nvtxRangePushA("step");
		snprintf(name, sizeof(name), "fwd %d", s);
		nvtxRangePushA(name);
		work(200);
		nvtxRangePop();
		snprintf(name, sizeof(name), "bwd %d", s);
		nvtxRangePushA(name);
		work(200);
		nvtxRangePop();
		nvtxRangePop();
		if (s == 2)
			nvtxDomainRangePop(dom);
		snprintf(name, sizeof(name), "step_end %d", s);
		nvtxMarkA(name);
	}
	printf("nvtx_steps: %d steps\n", steps);
	return 0;
}
