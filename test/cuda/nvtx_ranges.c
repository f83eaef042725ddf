// SPDX-License-Identifier: MIT
/*
 * NVTX ranges around asynchronous CUDA launches (fake libcudart, CUDA
 * events timing them): every range has ended long before the queued
 * "kernels" (FAKE_CUDART_KERNEL_US each) run, so only the launch-time
 * record can tell the device work which ranges caused it. A process range (start/end) spans a
 * second thread's launch on its own stream.
 *
 * `nvtx_ranges deep N`: one kernel (k_fwd1) inside N nested ranges r0..rN-1.
 * `nvtx_ranges toodeep N`: N times 33 nested ranges with a colour (the last one
 * past the 32 levels kept), popped; then "last" (a colour) around k_fwd1, and
 * k_after outside every range.
 * `nvtx_ranges manyopen N`: N start/end ranges p0..pN-1 open around "outer" >
 * "inner" (pushed) around k_fwd1; then all ended.
 * `nvtx_ranges nullname`: a range pushed with a NULL registered string around
 * k_fwd1, popped; k_after outside every range.
 * `nvtx_ranges unended`: a pushed range and a started one never ended, around
 * three kernels, a thread that pushes a range of its own, launches k_worker
 * and ends without popping it, and the stream's sync, until main returns.
 * `nvtx_ranges signal N`: main pushes and pops "main" N times while a 50 us
 * timer's SIGALRM handler pushes and pops "sig" (no CUDA call); prints how
 * many times the handler ran and how many of main's pops returned other
 * than 0 (its level, had the handler's range not been there).
 * `nvtx_ranges domains N`: N threads, released at once, each create domain
 * "shared" and push "t<i>" in it around k_worker on the default stream;
 * prints "done" if all got the same handle.
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

struct dim3 {
	unsigned x, y, z;
};
int cudaSetDevice(int d);
int cudaStreamCreate(void **s);
int cudaStreamDestroy(void *s);
int cudaStreamSynchronize(void *s);
int cudaLaunchKernel(const void *f, struct dim3 g, struct dim3 b, void **a, size_t sm, void *s);

/* host stubs: their names are the kernels' names (cudaFuncGetName) */
void k_fwd1(void) {}
void k_fwd2(void) {}
void k_bwd(void) {}
void k_worker(void) {}
void k_after(void) {}

static void launch(void (*k)(void), void *s)
{
	struct dim3 grid = { 64, 1, 1 }, block = { 128, 1, 1 };

	cudaLaunchKernel((const void *)k, grid, block, NULL, 0, s);
}

/* The stream each mode launches into, on device 0 */
static void *stream_open(void)
{
	void *s = NULL;

	cudaSetDevice(0);
	cudaStreamCreate(&s);
	return s;
}

/* Waits for the mode's kernels, then says it is done (the tests look for the line) */
static int stream_done(void *s, const char *mode)
{
	cudaStreamSynchronize(s);
	cudaStreamDestroy(s);
	printf("nvtx_ranges: %s done\n", mode);
	return 0;
}

static void *worker(void *s)
{
	nvtxRangePushA("worker");
	launch(k_worker, s);
	nvtxRangePop();
	cudaStreamSynchronize(s);
	return NULL;
}

static int deep(int depth)
{
	void *s = stream_open();
	char name[16];

	for (int i = 0; i < depth; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		nvtxRangePushA(name);
	}
	launch(k_fwd1, s);
	for (int i = 0; i < depth; i++)
		nvtxRangePop();
	return stream_done(s, "deep");
}

static int toodeep(long n)
{
	void *s = stream_open();
	nvtxEventAttributes_t a = { .version = NVTX_VERSION, .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
				    .colorType = NVTX_COLOR_ARGB, .color = 0xff112233,
				    .messageType = NVTX_MESSAGE_TYPE_ASCII };
	char name[16];

	for (long it = 0; it < n; it++) {
		for (int i = 0; i < 33; i++) {
			snprintf(name, sizeof(name), "r%d", i);
			a.message.ascii = name;
			nvtxRangePushEx(&a);
		}
		for (int i = 0; i < 33; i++)
			nvtxRangePop();
	}
	a.message.ascii = "last";
	a.color = 0xffabcdef;
	nvtxRangePushEx(&a);
	launch(k_fwd1, s);
	nvtxRangePop();
	launch(k_after, s);
	return stream_done(s, "toodeep");
}

static int manyopen(int n)
{
	void *s;
	nvtxRangeId_t ids[256];
	char name[16];

	if (n < 0 || n > 256)
		return 2;
	s = stream_open();
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		ids[i] = nvtxRangeStartA(name);
	}
	nvtxRangePushA("outer");
	nvtxRangePushA("inner");
	launch(k_fwd1, s);
	nvtxRangePop();
	nvtxRangePop();
	for (int i = 0; i < n; i++)
		nvtxRangeEnd(ids[i]);
	return stream_done(s, "manyopen");
}

static int nullname(void)
{
	void *s = stream_open();
	nvtxEventAttributes_t a = { .version = NVTX_VERSION, .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
				    .messageType = NVTX_MESSAGE_TYPE_REGISTERED };

	nvtxRangePushEx(&a);
	launch(k_fwd1, s);
	nvtxRangePop();
	launch(k_after, s);
	return stream_done(s, "nullname");
}

static void *worker_unended(void *s)
{
	nvtxRangePushA("worker_not_popped");
	launch(k_worker, s);
	return NULL;
}

static int unended(void)
{
	void *s = stream_open();
	pthread_t t;

	nvtxRangePushA("whole_program");
	nvtxRangeStartA("started_not_ended");
	launch(k_fwd1, s);
	launch(k_fwd2, s);
	launch(k_bwd, s);
	if (pthread_create(&t, NULL, worker_unended, s) || pthread_join(t, NULL))
		return 1;
	cudaStreamSynchronize(s);
	printf("nvtx_ranges: unended done\n");
	return 0;
}

#define DOMAIN_THREADS_MAX 64
static pthread_barrier_t domains_start;
static nvtxDomainHandle_t shared_of[DOMAIN_THREADS_MAX];

static void *domain_worker(void *arg)
{
	long i = (long)arg;
	char name[16];
	nvtxEventAttributes_t a = { .version = NVTX_VERSION, .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
				    .messageType = NVTX_MESSAGE_TYPE_ASCII };

	pthread_barrier_wait(&domains_start);
	shared_of[i] = nvtxDomainCreateA("shared");
	snprintf(name, sizeof(name), "t%ld", i);
	a.message.ascii = name;
	nvtxDomainRangePushEx(shared_of[i], &a);
	launch(k_worker, NULL);
	nvtxDomainRangePop(shared_of[i]);
	return NULL;
}

static int domains_at_once(long n)
{
	pthread_t t[DOMAIN_THREADS_MAX];
	int same = 1;

	if (n < 1 || n > DOMAIN_THREADS_MAX)
		return 2;
	cudaSetDevice(0);
	nvtxInitialize(NULL); /* NVTX's own first-call set-up is not what is tested */
	pthread_barrier_init(&domains_start, NULL, (unsigned)n);
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, domain_worker, (void *)i))
			return 1;
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	for (long i = 1; i < n; i++)
		same &= shared_of[i] == shared_of[0];
	cudaStreamSynchronize(NULL);
	printf("nvtx_ranges: domains %s\n", same ? "done" : "got several handles for one name");
	return 0;
}

static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
	nvtxRangePushA("sig");
	nvtxRangePop();
	handled++;
}

static int in_signals(long n)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval every = { { 0, 50 }, { 0, 50 } }, off = { 0 };
	long bad = 0;

	nvtxRangePushA("init"); /* NVTX is set up before the first signal */
	nvtxRangePop();
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &every, NULL);
	for (long i = 0; i < n; i++) {
		nvtxRangePushA("main");
		bad += nvtxRangePop() != 0;
	}
	setitimer(ITIMER_REAL, &off, NULL);
	printf("nvtx_ranges: signal main %ld sig %d badpops %ld\n", n, (int)handled, bad);
	return 0;
}

int main(int argc, char **argv)
{
	void *s = NULL, *s2 = NULL;
	pthread_t t;

	if (argc == 3 && !strcmp(argv[1], "deep"))
		return deep(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "toodeep"))
		return toodeep(atol(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "manyopen"))
		return manyopen(atoi(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "nullname"))
		return nullname();
	if (argc == 3 && !strcmp(argv[1], "signal"))
		return in_signals(atol(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "unended"))
		return unended();
	if (argc == 3 && !strcmp(argv[1], "domains"))
		return domains_at_once(atol(argv[2]));
	cudaSetDevice(0);
	cudaStreamCreate(&s);
	cudaStreamCreate(&s2);

	nvtxRangeId_t epoch = nvtxRangeStartA("epoch");
	nvtxRangePushA("train");
	nvtxRangePushA("forward");
	launch(k_fwd1, s);
	launch(k_fwd2, s);
	nvtxRangePop();
	nvtxRangePushA("backward");
	launch(k_bwd, s);
	nvtxRangePop();
	nvtxRangePop();
	pthread_create(&t, NULL, worker, s2);
	pthread_join(t, NULL);
	nvtxRangeEnd(epoch);
	launch(k_after, s);
	cudaStreamSynchronize(s);
	cudaStreamDestroy(s2);
	cudaStreamDestroy(s);
	printf("nvtx_ranges: done\n");
	return 0;
}
