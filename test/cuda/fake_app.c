// SPDX-License-Identifier: MIT
/*
 * A CUDA runtime user in plain C, linked against the fake libcudart: what
 * a program does through a shared libcudart, checked by test_cuda.py.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct dim3 {
	unsigned x, y, z;
};
int cudaGetDeviceCount(int *n);
int cudaGetDevice(int *d);
int cudaSetDevice(int d);
int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
int cudaStreamCreate(void **s);
int cudaStreamDestroy(void *s);
int cudaStreamSynchronize(void *s);
int cudaDeviceSynchronize(void);
int cudaMemcpy(void *d, const void *s, size_t n, int kind);
int cudaMemcpyAsync(void *d, const void *s, size_t n, int kind, void *st);
int cudaMemsetAsync(void *p, int v, size_t n, void *st);
int cudaLaunchKernel(const void *f, struct dim3 g, struct dim3 b, void **a, size_t sm, void *s);
const char *cudaGetErrorName(int e);
int cudaProfilerStart(void);
int cudaProfilerStop(void);

/* the host stub of a "kernel": its name is what cudaFuncGetName reports */
void scale_kernel(float *p, int n)
{
}

/* "profiler": six steps of a memset of 1000 * step bytes and a sync; steps 3
 * and 5 are inside cudaProfilerStart/Stop (--capture-range cudaProfilerApi) */
static int profiler_ranges(void)
{
	void *d = NULL, *s = NULL;

	cudaMalloc(&d, 1 << 16);
	cudaStreamCreate(&s);
	for (int step = 1; step <= 6; step++) {
		if (step == 3 || step == 5)
			cudaProfilerStart();
		cudaMemsetAsync(d, 0, 1000 * (size_t)step, s);
		cudaStreamSynchronize(s);
		if (step == 3 || step == 5)
			cudaProfilerStop();
	}
	cudaStreamDestroy(s);
	cudaFree(d);
	printf("fake_app: profiler ranges\n");
	return 0;
}

/* "cancel": a thread blocked in cudaStreamSynchronize is cancelled; its
 * cleanup handler makes one runtime call */
static _Atomic int waiting;

static void cleanup_call(void *arg)
{
	(void)arg;
	cudaSetDevice(0);
}

static void *sync_waiter(void *arg)
{
	struct dim3 grid = { 1, 1, 1 }, block = { 1, 1, 1 };
	void *s = arg;

	pthread_cleanup_push(cleanup_call, NULL);
	/* ~0.9 s of queued "kernels" */
	for (int i = 0; i < 3000; i++)
		cudaLaunchKernel((const void *)scale_kernel, grid, block, NULL, 0, s);
	atomic_store(&waiting, 1);
	cudaStreamSynchronize(s);
	pthread_cleanup_pop(0);
	return NULL;
}

static int cancel_in_sync(void)
{
	struct timespec settle = { 0, 50 * 1000000 };
	pthread_t t;
	void *s = NULL, *ret;

	cudaStreamCreate(&s);
	pthread_create(&t, NULL, sync_waiter, s);
	while (!atomic_load(&waiting))
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	nanosleep(&settle, NULL);
	pthread_cancel(t);
	pthread_join(t, &ret);
	printf("waiter %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "returned");
	cudaSetDevice(0);
	return 0;
}

/* "cancel-launch": a thread's second launch is cancelled inside the call (the
 * fake runtime's hook reaches a cancellation point there); its cleanup handler
 * launches once more */
extern void (*fake_cudart_hook)(const char *fn);
static _Thread_local int cancel_in_launch;

static void launch_hook(const char *fn)
{
	if (cancel_in_launch && !strcmp(fn, "cudaLaunchKernel")) {
		cancel_in_launch = 0;
		pthread_testcancel();
	}
}

static void cleanup_launch(void *arg)
{
	struct dim3 grid = { 2, 1, 1 }, block = { 1, 1, 1 };

	(void)arg;
	cudaLaunchKernel((const void *)scale_kernel, grid, block, NULL, 0, NULL);
}

static void *launch_cancelled(void *arg)
{
	struct dim3 grid = { 1, 1, 1 }, block = { 1, 1, 1 };

	(void)arg;
	cudaLaunchKernel((const void *)scale_kernel, grid, block, NULL, 0, NULL);
	pthread_cleanup_push(cleanup_launch, NULL);
	pthread_cancel(pthread_self()); /* deferred: pending until the hook's test */
	cancel_in_launch = 1;
	cudaLaunchKernel((const void *)scale_kernel, grid, block, NULL, 0, NULL);
	pthread_cleanup_pop(0);
	return NULL;
}

static int cancel_in_launch_mode(void)
{
	pthread_t t;
	void *ret;

	cudaSetDevice(0);
	fake_cudart_hook = launch_hook;
	pthread_create(&t, NULL, launch_cancelled, NULL);
	pthread_join(t, &ret);
	printf("launcher %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "returned");
	cudaDeviceSynchronize();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "cancel"))
		return cancel_in_sync();
	if (argc > 1 && !strcmp(argv[1], "cancel-launch"))
		return cancel_in_launch_mode();
	if (argc > 1 && !strcmp(argv[1], "profiler"))
		return profiler_ranges();

	int n = 0, dev = -1, launches = argc > 1 ? atoi(argv[1]) : 3;
	void *d = NULL, *s = NULL;
	static float host[1 << 18];
	struct dim3 grid = { 256, 1, 1 }, block = { 128, 1, 1 }, none = { 0, 1, 1 };
	void *args[2] = { &d, &n };

	cudaGetDeviceCount(&n);
	for (int i = 0; i < 100; i++)
		cudaGetDevice(&dev);
	printf("set device 7: %s\n", cudaGetErrorName(cudaSetDevice(7)));
	cudaSetDevice(0);
	cudaMalloc(&d, sizeof(host));
	cudaStreamCreate(&s);
	cudaMemcpy(d, host, sizeof(host), 1);
	cudaMemsetAsync(d, 0, 4096, s);
	for (int i = 0; i < launches; i++)
		cudaLaunchKernel((const void *)scale_kernel, grid, block, args, 0, s);
	printf("empty grid: %s\n", cudaGetErrorName(cudaLaunchKernel((const void *)scale_kernel,
								     none, block, args, 0, s)));
	cudaMemcpyAsync(host, d, sizeof(host), 2, s);
	cudaStreamSynchronize(s);
	cudaStreamDestroy(s);
	cudaFree(d);
	printf("fake_app: %d devices, device %d, %d launches\n", n, dev, launches);
	return 0;
}
