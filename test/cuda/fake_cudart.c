// SPDX-License-Identifier: MIT
/*
 * A stand-in libcudart.so for CPU-only tests: the runtime functions a
 * simple program and gputrace's event-timing fallback use, over a simulated
 * device. Work queued on a stream runs after the stream's previous work
 * (kernels take 300 us, or FAKE_CUDART_KERNEL_US, copies run at 10 GB/s);
 * an event recorded on a stream completes when the work before it does.
 * Nothing is copied.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_KERNEL_US_DEFAULT 300
#define EXPORT __attribute__((visibility("default")))

struct fake_stream {
	uint64_t busy_until; /* ns, CLOCK_MONOTONIC */
	unsigned long long id;
};
struct fake_event {
	uint64_t t;
	int recorded;
};

static struct fake_stream legacy = { 0, 7 };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long next_stream_id = 13;
static __thread int current_device;
static __thread int last_error;
static uint64_t kernel_ns = FAKE_KERNEL_US_DEFAULT * 1000ull;

/* Tests whose premise is "the host is done long before the work runs" set
 * a longer kernel, so that a sanitizer build on a loaded host cannot break
 * the premise. A bad value aborts: a test must not run on a guess. */
__attribute__((constructor)) static void read_kernel_us(void)
{
	const char *v = getenv("FAKE_CUDART_KERNEL_US");
	char *end;
	unsigned long us;

	if (!v)
		return;
	us = strtoul(v, &end, 10);
	if (!*v || *end || !us || us > 10000000) {
		fprintf(stderr, "fake libcudart: FAKE_CUDART_KERNEL_US=%s: want 1..10000000 (us)\n", v);
		abort();
	}
	kernel_ns = us * 1000ull;
}

/* Tests may run code inside a call (as CUPTI's callbacks would). */
EXPORT void (*fake_cudart_hook)(const char *fn);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void hook(const char *fn)
{
	if (fake_cudart_hook)
		fake_cudart_hook(fn);
}

static struct fake_stream *stream_of(void *s)
{
	/* NULL: legacy default stream; 0x1/0x2: legacy and per-thread handles */
	return (uintptr_t)s <= 2 ? &legacy : s;
}

/* Queue `ns` of work on a stream; returns when it would end. */
static uint64_t enqueue(void *s, uint64_t ns)
{
	struct fake_stream *st = stream_of(s);
	uint64_t start, now = now_ns();

	pthread_mutex_lock(&lock);
	start = st->busy_until > now ? st->busy_until : now;
	st->busy_until = start + ns;
	pthread_mutex_unlock(&lock);
	return start + ns;
}

static void wait_until(uint64_t t)
{
	uint64_t now;

	/* clock_nanosleep, not nanosleep: ThreadSanitizer intercepts nanosleep,
	 * and a thread cancelled inside an interceptor has the locks its
	 * cleanup handlers take unseen by it (false races in the cancel test) */
	while ((now = now_ns()) < t) {
		struct timespec d = { (time_t)((t - now) / 1000000000),
				      (long)((t - now) % 1000000000) };
		clock_nanosleep(CLOCK_MONOTONIC, 0, &d, NULL);
	}
}

static uint64_t copy_ns(size_t bytes)
{
	return bytes / 10 + 2000;
}

static int ret(int e)
{
	if (e)
		last_error = e;
	return e;
}

/* cudaProfilerStart/Stop: nothing to profile here; they succeed */
EXPORT int cudaProfilerStart(void)
{
	return 0;
}

EXPORT int cudaProfilerStop(void)
{
	return 0;
}

EXPORT int cudaGetDeviceCount(int *n)
{
	hook(__func__);
	*n = 1;
	return 0;
}

EXPORT int cudaGetDevice(int *d)
{
	*d = current_device;
	return 0;
}

EXPORT int cudaSetDevice(int d)
{
	if (d != 0)
		return ret(101); /* cudaErrorInvalidDevice */
	current_device = d;
	return 0;
}

EXPORT int cudaGetLastError(void)
{
	int e = last_error;

	last_error = 0;
	return e;
}

EXPORT const char *cudaGetErrorName(int e)
{
	switch (e) {
	case 0: return "cudaSuccess";
	case 1: return "cudaErrorInvalidValue";
	case 35: return "cudaErrorInsufficientDriver";
	case 101: return "cudaErrorInvalidDevice";
	case 600: return "cudaErrorNotReady";
	default: return "cudaErrorUnknown";
	}
}

EXPORT const char *cudaGetErrorString(int e)
{
	return cudaGetErrorName(e);
}

EXPORT int cudaMalloc(void **p, size_t n)
{
	hook(__func__);
	*p = malloc(n ? n : 1);
	return *p ? 0 : ret(2);
}

EXPORT int cudaFree(void *p)
{
	free(p);
	return 0;
}

EXPORT int cudaStreamCreateWithFlags(void **s, unsigned flags)
{
	struct fake_stream *st = calloc(1, sizeof(*st));

	pthread_mutex_lock(&lock);
	st->id = next_stream_id++;
	pthread_mutex_unlock(&lock);
	*s = st;
	return 0;
}

EXPORT int cudaStreamCreate(void **s)
{
	return cudaStreamCreateWithFlags(s, 0);
}

EXPORT int cudaStreamDestroy(void *s)
{
	free(s);
	return 0;
}

EXPORT int cudaStreamGetId(void *s, unsigned long long *id)
{
	*id = stream_of(s)->id;
	return 0;
}

EXPORT int cudaStreamIsCapturing(void *s, int *status)
{
	*status = 0;
	return 0;
}

EXPORT int cudaStreamSynchronize(void *s)
{
	wait_until(stream_of(s)->busy_until);
	return 0;
}

EXPORT int cudaDeviceSynchronize(void)
{
	wait_until(legacy.busy_until);
	return 0;
}

EXPORT int cudaMemcpyAsync(void *d, const void *s, size_t n, int kind, void *st)
{
	hook(__func__);
	enqueue(st, copy_ns(n));
	return 0;
}

EXPORT int cudaMemcpy(void *d, const void *s, size_t n, int kind)
{
	hook(__func__);
	wait_until(enqueue(NULL, copy_ns(n)));
	return 0;
}

EXPORT int cudaMemsetAsync(void *p, int v, size_t n, void *st)
{
	enqueue(st, copy_ns(n));
	return 0;
}

EXPORT int cudaMemset(void *p, int v, size_t n)
{
	wait_until(enqueue(NULL, copy_ns(n)));
	return 0;
}

struct dim3 {
	unsigned x, y, z;
};

EXPORT int cudaLaunchKernel(const void *f, struct dim3 g, struct dim3 b, void **args,
			    size_t shared, void *st)
{
	hook(__func__);
	if (!f || !g.x || !b.x)
		return ret(1); /* cudaErrorInvalidValue: nothing queued */
	enqueue(st, kernel_ns);
	return 0;
}

EXPORT int cudaFuncGetName(const char **name, const void *f)
{
	Dl_info info;

	if (!dladdr(f, &info) || !info.dli_sname)
		return 1;
	*name = info.dli_sname;
	return 0;
}

EXPORT int cudaEventCreateWithFlags(void **e, unsigned flags)
{
	*e = calloc(1, sizeof(struct fake_event));
	return *e ? 0 : 2;
}

EXPORT int cudaEventCreate(void **e)
{
	return cudaEventCreateWithFlags(e, 0);
}

EXPORT int cudaEventDestroy(void *e)
{
	free(e);
	return 0;
}

EXPORT int cudaEventRecord(void *e, void *s)
{
	struct fake_event *ev = e;
	struct fake_stream *st = stream_of(s);
	uint64_t now = now_ns();

	pthread_mutex_lock(&lock);
	ev->t = st->busy_until > now ? st->busy_until : now;
	ev->recorded = 1;
	pthread_mutex_unlock(&lock);
	return 0;
}

EXPORT int cudaEventQuery(void *e)
{
	struct fake_event *ev = e;

	return !ev->recorded ? 0 : now_ns() >= ev->t ? 0 : 600;
}

EXPORT int cudaEventSynchronize(void *e)
{
	wait_until(((struct fake_event *)e)->t);
	return 0;
}

EXPORT int cudaEventElapsedTime(float *ms, void *a, void *b)
{
	struct fake_event *x = a, *y = b;

	if (!x->recorded || !y->recorded)
		return 1;
	*ms = (float)(((double)y->t - (double)x->t) / 1e6);
	return 0;
}
