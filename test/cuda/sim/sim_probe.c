// SPDX-License-Identifier: MIT
/*
 * Checks of the simulated CUDA stack's contracts, without the tracer: a
 * CUPTI and CUDA client built against the toolkit (cupti.h, cuda.h,
 * cuda_runtime_api.h; linked with its libcupti and libcudart, and the
 * driver stub), run on the simulator. One subcommand per contract; each
 * prints key=value lines for test_cudasim.py.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

/* ---- a kernel, registered the way nvcc's generated code does it ---- */

#include "hand_kernel.h"

static void probe_kernel(void) {}

static void register_kernel(void)
{
	hand_register(probe_kernel, "_Z12probe_kernelv");
}

/* grid x block ns of device time */
static cudaError_t launch(unsigned grid, unsigned block, cudaStream_t s)
{
	dim3 g = { grid, 1, 1 }, b = { block, 1, 1 };

	return cudaLaunchKernel((const void *)probe_kernel, g, b, NULL, 0, s);
}

static uint64_t raw_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

static long tid(void)
{
	return (long)syscall(SYS_gettid);
}

/* ---- subscribers ---- */

static void CUPTIAPI nop_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p) {}

static int subscribers(void)
{
	CUpti_SubscriberHandle a, b, c;
	char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
	CUpti_SubscriberParams pa = { CUpti_SubscriberParams_STRUCT_SIZE, "first", NULL, 0 };
	CUpti_SubscriberParams pb = { CUpti_SubscriberParams_STRUCT_SIZE, "second", old, sizeof(old) };
	int r1 = cuptiSubscribe_v2(&a, nop_cb, NULL, &pa);
	int r2 = cuptiSubscribe_v2(&b, nop_cb, NULL, &pb);
	int r3 = cuptiSubscribe(&c, nop_cb, NULL);
	int r4 = cuptiUnsubscribe(a);
	int r5 = cuptiSubscribe(&c, nop_cb, NULL);
	int r6 = cuptiEnableDomain(1, a, CUPTI_CB_DOMAIN_RUNTIME_API);

	printf("first=%d second=%d v1=%d unsubscribe=%d again=%d stale=%d\nholder=%s\n", r1, r2,
	       r3, r4, r5, r6, old);
	return 0;
}

/* ---- callbacks ---- */

static struct {
	int enters, exits, same_thread, pairs, nested_shared;
	long thread;
	uint32_t rt_corr, drv_corr;
	size_t bytesize;
	int ret;
	char symbol[64];
} cbs;

static void CUPTIAPI record_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p)
{
	const CUpti_CallbackData *cb = p;

	if (d != CUPTI_CB_DOMAIN_RUNTIME_API && d != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	cbs.same_thread += tid() == cbs.thread;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		cbs.enters++;
		*cb->correlationData = cb->correlationId;
		if (d == CUPTI_CB_DOMAIN_RUNTIME_API && id == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020)
			cbs.rt_corr = cb->correlationId;
		if (d == CUPTI_CB_DOMAIN_DRIVER_API && id == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) {
			cbs.drv_corr = cb->correlationId;
			/* cuMemAlloc_v2_params: { CUdeviceptr *dptr; size_t bytesize; } */
			const struct { CUdeviceptr *dptr; size_t bytesize; } *mp = cb->functionParams;
			cbs.bytesize = mp->bytesize;
		}
		if (cb->symbolName)
			snprintf(cbs.symbol, sizeof(cbs.symbol), "%s", cb->symbolName);
		return;
	}
	cbs.exits++;
	cbs.pairs += *cb->correlationData == cb->correlationId;
	if (d == CUPTI_CB_DOMAIN_RUNTIME_API && id == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020)
		cbs.ret = *(const int *)cb->functionReturnValue;
}

static int callbacks(void)
{
	CUpti_SubscriberHandle s;
	void *p = NULL;

	cbs.thread = tid();
	cuptiSubscribe(&s, record_cb, NULL);
	cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_RUNTIME_API);
	cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_DRIVER_API);
	register_kernel();
	cudaMalloc(&p, 4096);
	launch(1, 1, NULL);
	cudaDeviceSynchronize();
	printf("enters=%d exits=%d same_thread=%d pairs=%d shared_corr=%d bytesize=%zu ret=%d "
	       "symbol=%s\n",
	       cbs.enters, cbs.exits, cbs.same_thread == cbs.enters + cbs.exits,
	       cbs.pairs == cbs.exits, cbs.rt_corr && cbs.rt_corr == cbs.drv_corr, cbs.bytesize,
	       cbs.ret, cbs.symbol);
	return 0;
}

/* ---- activity buffers ---- */

static size_t request_size = 1 << 20;
static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static int nrequests, ncompleted;
static long request_tids[16], completed_tids[16];
static uint8_t *last_buf;
static size_t last_valid;

static void CUPTIAPI req(uint8_t **b, size_t *size, size_t *max)
{
	*size = request_size;
	*b = aligned_alloc(8, request_size);
	*max = 0;
	pthread_mutex_lock(&buf_lock);
	if (nrequests < 16)
		request_tids[nrequests] = tid();
	nrequests++;
	pthread_mutex_unlock(&buf_lock);
}

static void CUPTIAPI done(CUcontext c, uint32_t st, uint8_t *b, size_t size, size_t valid)
{
	pthread_mutex_lock(&buf_lock);
	if (ncompleted < 16)
		completed_tids[ncompleted] = tid();
	ncompleted++;
	free(last_buf);
	last_buf = b;
	last_valid = valid;
	pthread_mutex_unlock(&buf_lock);
}

/* The kernel records of the last delivered buffer: "start-end" each (0 when
 * a timestamp is missing, else the duration). */
static void kernels_of_last(const char *label)
{
	CUpti_Activity *r = NULL;

	printf("%s=", label);
	while (last_buf && cuptiActivityGetNextRecord(last_buf, last_valid, &r) == CUPTI_SUCCESS) {
		const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
		if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			continue;
		if (!k->start || !k->end)
			printf("%llu-%llu,", (unsigned long long)k->start, (unsigned long long)k->end);
		else
			printf("%llu,", (unsigned long long)(k->end - k->start));
	}
	printf("\n");
}

static void *other_thread(void *arg)
{
	launch(1, 1000, NULL);
	return NULL;
}

static int buffers(void)
{
	pthread_t th;
	long me = tid();

	register_kernel();
	cuptiActivityRegisterCallbacks(req, done);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	/* 200 ms of work: its record stays incomplete */
	launch(200000, 1000, NULL);
	cuptiActivityFlushAll(0);
	printf("after_flush0=%d\n", ncompleted);
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	printf("after_forced=%d on_caller=%d\n", ncompleted, completed_tids[0] == me);
	kernels_of_last("forced_kernels");
	cudaDeviceSynchronize();
	cuptiActivityFlushAll(0);
	printf("redelivered=%d\n", ncompleted - 1);
	launch(2, 500, NULL);
	cudaDeviceSynchronize();
	cuptiActivityFlushAll(0);
	kernels_of_last("complete_kernels");
	/* another thread's record: its own buffer, requested on it */
	pthread_create(&th, NULL, other_thread, NULL);
	pthread_join(th, NULL);
	printf("requests=%d other_thread_request=%d\n", nrequests,
	       nrequests >= 3 && request_tids[2] != me);
	/* buffers that fill up go back on CUPTI's worker thread */
	request_size = 2 * sizeof(CUpti_ActivityKernel10);
	int before = ncompleted;
	for (int i = 0; i < 4; i++)
		launch(1, 100, NULL);
	cudaDeviceSynchronize();
	sleep_ms(100);
	pthread_mutex_lock(&buf_lock);
	int worker = 0;
	for (int i = before; i < ncompleted && i < 16; i++)
		worker += completed_tids[i] != me;
	pthread_mutex_unlock(&buf_lock);
	printf("worker_deliveries=%d\n", worker);
	size_t dropped = 0;
	cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
	printf("dropped=%zu\n", dropped);
	return 0;
}

/* ---- stream ids ---- */

static uint32_t launch_stream_ids[4];
static int nlaunch_ids, id_errors;

/* cuptiGetStreamIdEx from inside a launch's callback, as a tool asks it */
static void CUPTIAPI stream_id_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
				  const void *p)
{
	const CUpti_CallbackData *cb = p;
	uint32_t sid;

	if (d != CUPTI_CB_DOMAIN_DRIVER_API || id != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
	    cb->callbackSite != CUPTI_API_ENTER)
		return;
	if (cuptiGetStreamIdEx(cb->context, ((const cuLaunchKernel_params *)cb->functionParams)->hStream,
			       0, &sid) != CUPTI_SUCCESS)
		id_errors++;
	else if (nlaunch_ids < 4)
		launch_stream_ids[nlaunch_ids++] = sid;
}

static CUcontext probe_ctx;
static uint32_t other_pts;

static void *other_per_thread(void *arg)
{
	other_pts = UINT32_MAX;
	cuptiGetStreamIdEx(probe_ctx, CU_STREAM_PER_THREAD, 1, &other_pts);
	return NULL;
}

static int stream_ids(void)
{
	CUpti_SubscriberHandle sub;
	cudaStream_t s;
	uint32_t legacy = 0, mine = 0, pts = 0, again = 0, bad = 0;
	CUpti_Activity *r = NULL;
	pthread_t th;

	register_kernel();
	cuptiSubscribe(&sub, stream_id_cb, NULL);
	cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
	cuptiActivityRegisterCallbacks(req, done);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	cudaStreamCreate(&s);
	launch(1, 10, s);
	launch(1, 10, NULL);
	cudaDeviceSynchronize();
	cuptiActivityFlushAll(0);
	cuCtxGetCurrent(&probe_ctx);
	cuptiGetStreamIdEx(NULL, (CUstream)s, 0, &mine);
	cuptiGetStreamIdEx(probe_ctx, NULL, 0, &legacy);
	cuptiGetStreamIdEx(probe_ctx, NULL, 1, &pts);
	cuptiGetStreamIdEx(probe_ctx, CU_STREAM_PER_THREAD, 1, &again);
	pthread_create(&th, NULL, other_per_thread, NULL);
	pthread_join(th, NULL);
	/* the records' stream ids, in launch order */
	printf("records=");
	while (last_buf && cuptiActivityGetNextRecord(last_buf, last_valid, &r) == CUPTI_SUCCESS)
		if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			printf("%u,", ((const CUpti_ActivityKernel10 *)r)->streamId);
	printf("\ncallback=%u,%u, errors=%d\n", launch_stream_ids[0], launch_stream_ids[1],
	       id_errors);
	printf("stream=%u legacy=%u per_thread_twice=%d other_thread_differs=%d\n", mine, legacy,
	       pts == again, other_pts != pts && other_pts != UINT32_MAX);
	cudaStreamDestroy(s);
	printf("destroyed=%d null_out=%d\n",
	       cuptiGetStreamIdEx(probe_ctx, (CUstream)s, 0, &bad) == CUPTI_ERROR_INVALID_STREAM,
	       cuptiGetStreamIdEx(probe_ctx, NULL, 0, NULL) == CUPTI_ERROR_INVALID_PARAMETER);
	return 0;
}

/* ---- forbidden calls ---- */

static void CUPTIAPI done_flushing(CUcontext c, uint32_t st, uint8_t *b, size_t s, size_t v)
{
	cuptiActivityFlushAll(0); /* CUPTI holds its lock here */
}

static void CUPTIAPI sync_in_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
				      const void *p)
{
	cuCtxSynchronize();
}

static void CUDART_CB calls_cuda(void *arg)
{
	int d;

	cudaGetDevice(&d);
}

static int forbidden(const char *what)
{
	register_kernel();
	if (!strcmp(what, "flush_in_callback")) {
		cuptiActivityRegisterCallbacks(req, done_flushing);
		cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		launch(1, 1, NULL);
		cudaDeviceSynchronize();
		cuptiActivityFlushAll(0);
	} else if (!strcmp(what, "timestamp_late")) {
		cuptiActivityRegisterCallbacks(req, done);
		cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		cuptiActivityRegisterTimestampCallback((CUpti_TimestampCallbackFunc)raw_ns);
	} else if (!strcmp(what, "driver_in_callback")) {
		CUpti_SubscriberHandle s;
		cuptiSubscribe(&s, sync_in_callback, NULL);
		cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_RUNTIME_API);
		cudaDeviceSynchronize();
	} else if (!strcmp(what, "cuda_in_host_fn")) {
		cudaLaunchHostFunc(NULL, calls_cuda, NULL);
		cudaDeviceSynchronize();
	}
	printf("not stopped\n");
	return 0;
}

/* ---- capture rules ---- */

static cudaEvent_t other_ev;
static int other_result;
static enum cudaStreamCaptureMode other_mode;

static void *query_other(void *arg)
{
	enum cudaStreamCaptureMode m = other_mode;

	cudaThreadExchangeStreamCaptureMode(&m);
	other_result = cudaEventQuery(other_ev);
	return NULL;
}

static int query_from_thread(enum cudaStreamCaptureMode mode)
{
	pthread_t th;

	other_mode = mode;
	pthread_create(&th, NULL, query_other, NULL);
	pthread_join(th, NULL);
	return other_result;
}

static int capture(void)
{
	cudaStream_t blocking, nonblocking;
	cudaGraph_t g;
	cudaEvent_t captured;
	enum cudaStreamCaptureStatus st;

	register_kernel();
	cudaStreamCreate(&blocking);
	cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking);
	cudaEventCreate(&other_ev);
	cudaEventCreate(&captured);
	cudaEventRecord(other_ev, nonblocking);

	cudaStreamBeginCapture(blocking, cudaStreamCaptureModeGlobal);
	launch(1, 1, blocking);
	int q_global = query_from_thread(cudaStreamCaptureModeGlobal);
	int end_global = cudaStreamEndCapture(blocking, &g);
	printf("global: query=%d end=%d graph=%s\n", q_global, end_global, g ? "yes" : "no");

	cudaStreamBeginCapture(blocking, cudaStreamCaptureModeGlobal);
	launch(1, 1, blocking);
	int q_relaxed = query_from_thread(cudaStreamCaptureModeRelaxed);
	int is_legacy = cudaStreamIsCapturing(NULL, &st);
	int end_relaxed = cudaStreamEndCapture(blocking, &g);
	printf("relaxed: query=%d is_capturing_legacy=%d end=%d graph=%s\n", q_relaxed, is_legacy,
	       end_relaxed, g ? "yes" : "no");

	cudaStreamBeginCapture(blocking, cudaStreamCaptureModeThreadLocal);
	int q_local = query_from_thread(cudaStreamCaptureModeGlobal);
	int legacy = launch(1, 1, NULL);
	int end_legacy = cudaStreamEndCapture(blocking, &g);
	printf("legacy: other_thread_query=%d launch=%d end=%d\n", q_local, legacy, end_legacy);

	cudaStreamBeginCapture(nonblocking, cudaStreamCaptureModeRelaxed);
	cudaEventRecord(captured, nonblocking);
	int q_captured = cudaEventQuery(captured);
	int legacy_ok = launch(1, 1, NULL);
	int end_ok = cudaStreamEndCapture(nonblocking, &g);
	printf("captured_event: query=%d legacy_launch=%d end=%d\n", q_captured, legacy_ok, end_ok);
	return 0;
}

/* ---- fork ---- */

static int fork_child(void)
{
	void *p = NULL;
	int status;

	cudaMalloc(&p, 64);
	fflush(stdout);
	pid_t pid = fork();
	if (!pid) {
		printf("child_malloc=%d\n", cudaMalloc(&p, 64));
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	printf("parent_malloc=%d\n", cudaMalloc(&p, 64));
	return 0;
}

/* ---- the buffer format, read by NVIDIA's own libcupti ---- */

static int walk(const char *real_cupti)
{
	CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
	CUpti_Activity *r = NULL;
	void *d = NULL, *h;
	cudaStream_t s;
	cudaEvent_t e;

	register_kernel();
	cuptiActivityRegisterCallbacks(req, done);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
	cudaStreamCreate(&s);
	cudaEventCreate(&e);
	cudaMalloc(&d, 4096);
	cudaMemset(d, 0, 4096);
	cudaMemcpy(d, hand_fatbin, sizeof(hand_fatbin), cudaMemcpyHostToDevice);
	launch(3, 7, s);
	cudaEventRecord(e, s);
	cudaEventSynchronize(e);
	cudaDeviceSynchronize();
	cuptiActivityFlushAll(0);
	printf("sim=");
	while (cuptiActivityGetNextRecord(last_buf, last_valid, &r) == CUPTI_SUCCESS)
		printf("%d,", r->kind);
	printf("\n");
	h = dlopen(real_cupti, RTLD_NOW | RTLD_LOCAL);
	next = h ? (__typeof__(next))dlsym(h, "cuptiActivityGetNextRecord") : NULL;
	if (!next) {
		printf("real=unavailable %s\n", dlerror());
		return 0;
	}
	r = NULL;
	printf("real=");
	while (next(last_buf, last_valid, &r) == CUPTI_SUCCESS)
		printf("%d,", r->kind);
	printf("\n");
	return 0;
}

/* ---- two devices: peer access and the copies between them (CUDA_SIM_DEVICES=2) ---- */

static int peer(const char *real_cupti)
{
	CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
	CUpti_Activity *r = NULL;
	CUcontext c0 = NULL, c1 = NULL;
	void *a = NULL, *b = NULL, *h;
	int can[2] = { -1, -1 };

	cuptiActivityRegisterCallbacks(req, done);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2);
	cudaSetDevice(1);
	cudaMalloc(&b, 8192);
	cudaSetDevice(0);
	cudaMalloc(&a, 8192);
	cuCtxGetCurrent(&c0);
	cuDevicePrimaryCtxRetain(&c1, 1);
	cuDeviceCanAccessPeer(&can[0], 0, 1);
	cuDeviceCanAccessPeer(&can[1], 0, 0);
	printf("can=%d,%d\n", can[0], can[1]);
	printf("enable_self=%d\n", cuCtxEnablePeerAccess(c0, 0));
	printf("enable_flags=%d\n", cuCtxEnablePeerAccess(c1, 1));
	printf("disable_unset=%d\n", cuCtxDisablePeerAccess(c1));
	printf("enable=%d\n", cuCtxEnablePeerAccess(c1, 0));
	printf("enable_again=%d\n", cuCtxEnablePeerAccess(c1, 0));
	/* a is device 0's, not c1's */
	printf("wrong_context=%d\n", cuMemcpyPeer((CUdeviceptr)a, c1, (CUdeviceptr)b, c1, 4096));
	printf("copy=%d\n", cuMemcpyPeer((CUdeviceptr)a, c0, (CUdeviceptr)b, c1, 4096));
	printf("unified=%d\n", cudaMemcpy(b, a, 1000, cudaMemcpyDefault));
	printf("same_device=%d\n", cudaMemcpy(a, (char *)a + 4096, 100, cudaMemcpyDefault));
	cuptiActivityFlushAll(0);
	h = dlopen(real_cupti, RTLD_NOW | RTLD_LOCAL);
	next = h ? (__typeof__(next))dlsym(h, "cuptiActivityGetNextRecord") : NULL;
	if (!next) {
		printf("real=unavailable %s\n", dlerror());
		return 0;
	}
	/* kind:copyKind:device:src:dst:bytes, as NVIDIA's libcupti walks them */
	printf("records=");
	while (next(last_buf, last_valid, &r) == CUPTI_SUCCESS) {
		if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {
			const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)r;
			printf("%d:%u:%u:%u:%u:%llu,", r->kind, m->copyKind, m->deviceId,
			       m->srcDeviceId, m->dstDeviceId, (unsigned long long)m->bytes);
		} else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
			const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
			printf("%d:%u:%u:%llu,", r->kind, m->copyKind, m->deviceId,
			       (unsigned long long)m->bytes);
		}
	}
	printf("\n");
	return 0;
}

/* Flushes, then "records=" copyKind:bytes:duration of each copy delivered. */
static void print_copy_records(void)
{
	CUpti_Activity *r = NULL;

	cuptiActivityFlushAll(0);
	printf("records=");
	while (last_buf && cuptiActivityGetNextRecord(last_buf, last_valid, &r) == CUPTI_SUCCESS) {
		const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
		if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY)
			printf("%u:%llu:%llu,", m->copyKind, (unsigned long long)m->bytes,
			       (unsigned long long)(m->end - m->start));
	}
	printf("\n");
}

/* ---- 2D copies (cudaMemcpy2D, cuMemcpy2D) ---- */

static int copy2d_calls;
static size_t copy2d_width;

static void CUPTIAPI copy2d_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p)
{
	const CUpti_CallbackData *cb = p;

	if (d != CUPTI_CB_DOMAIN_DRIVER_API || cb->callbackSite != CUPTI_API_ENTER ||
	    (id != CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2 &&
	     id != CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2))
		return;
	copy2d_calls++;
	/* cuMemcpy2D_v2_params and cuMemcpy2DAsync_v2_params begin with pCopy */
	copy2d_width = (*(const CUDA_MEMCPY2D *const *)cb->functionParams)->WidthInBytes;
}

/* Rows of 100 bytes: 4 from host memory of pitch 128 into device memory of pitch
 * 256 (whose gaps keep their 0xee), back into a tight host array, and device to
 * device on a stream; then the documented errors. */
static int copy2d(void)
{
	unsigned char src[4 * 128], back[4 * 100], whole[1024];
	CUDA_MEMCPY2D array = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .dstMemoryType =
					CU_MEMORYTYPE_HOST, .dstHost = back, .dstPitch = 100,
				.WidthInBytes = 100, .Height = 1 };
	CUpti_SubscriberHandle sub;
	void *d = NULL, *d2 = NULL;
	cudaStream_t s;
	bool rows = true, gaps = true;

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 7 + 1);
	cuptiSubscribe(&sub, copy2d_cb, NULL);
	cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
	cuptiActivityRegisterCallbacks(req, done);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
	cudaMalloc(&d, 1024);
	cudaMalloc(&d2, 400);
	cudaStreamCreate(&s);
	cudaMemset(d, 0xee, 1024);
	printf("htod=%d\n", cudaMemcpy2D(d, 256, src, 128, 100, 4, cudaMemcpyHostToDevice));
	printf("dtoh=%d\n", cudaMemcpy2D(back, 100, d, 256, 100, 4, cudaMemcpyDeviceToHost));
	printf("dtod=%d\n", cudaMemcpy2DAsync(d2, 100, d, 256, 100, 4, cudaMemcpyDeviceToDevice, s));
	cudaStreamSynchronize(s);
	cudaMemcpy(whole, d, sizeof(whole), cudaMemcpyDeviceToHost);
	for (int y = 0; y < 4; y++)
		for (int x = 0; x < 256; x++) {
			if (x < 100)
				rows = rows && back[y * 100 + x] == src[y * 128 + x] &&
				       whole[y * 256 + x] == src[y * 128 + x];
			else
				gaps = gaps && whole[y * 256 + x] == 0xee;
		}
	printf("rows=%d gaps=%d\n", rows, gaps);
	printf("callbacks=%d width=%zu\n", copy2d_calls, copy2d_width);
	printf("wide=%d\n", cudaMemcpy2D(d, 64, src, 128, 100, 4, cudaMemcpyHostToDevice));
	printf("wide_name=%s\n", cudaGetErrorName(cudaErrorInvalidPitchValue));
	printf("direction=%d\n", cudaMemcpy2D(d, 256, src, 128, 100, 4, (enum cudaMemcpyKind)7));
	printf("past_end=%d\n", cudaMemcpy2D(d, 256, src, 128, 100, 5, cudaMemcpyHostToDevice));
	printf("array=%d\n", cuMemcpy2D(&array));
	/* sizes whose sums and products wrap in 64 bits: refused, nothing written */
	{
		CUDA_MEMCPY2D far = { .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src,
				      .srcPitch = 128, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
				      .dstDevice = (CUdeviceptr)d, .dstPitch = 256,
				      .dstXInBytes = SIZE_MAX - 5, .WidthInBytes = 10, .Height = 1 };

		printf("huge_pitch=%d", cudaMemcpy2D(d, (size_t)1 << 63, src, 128, 16, 3,
						      cudaMemcpyHostToDevice));
		printf(" wrapped_x=%d", cuMemcpy2D(&far));
		printf(" fill_huge_pitch=%d", cudaMemset2D(d, (size_t)1 << 63, 1, 16, 3));
		printf(" fill_wrapped_size=%d\n",
		       cudaMemset2D(d, 2147483647u, 1, 2147483647u, (size_t)1 << 40));
	}
	/* pitched allocations: rows rounded up to 512 bytes, the documented element sizes */
	{
		void *p = NULL;
		CUdeviceptr dp = 0;
		size_t pitch = 0, dpitch = 0;
		int ok = cudaMallocPitch(&p, &pitch, 1000, 3);
		int bad_element = cuMemAllocPitch(&dp, &dpitch, 100, 2, 3);
		int empty = cuMemAllocPitch(&dp, &dpitch, 0, 2, 4);
		int drv = cuMemAllocPitch(&dp, &dpitch, 513, 2, 16);
		unsigned char img[3 * 1024];
		bool filled = true;

		printf("pitch=%d:%zu:%d bad_element=%d empty=%d drv=%d:%zu:%d\n", ok, pitch,
		       cudaMemset2D(p, pitch, 1, 1000, 3), bad_element, empty, drv, dpitch,
		       cudaMemset2D((void *)dp, dpitch, 1, 513, 2));
		/* 2D fills: each row's width, not the gap after it */
		cudaMemset(p, 0, 3 * pitch);
		printf("fill2d=%d", cudaMemset2D(p, pitch, 7, 100, 3));
		printf(",%d", cudaMemset2DAsync(p, pitch, 9, 50, 2, s));
		printf(",%d", cudaStreamSynchronize(s));
		cudaMemcpy(img, p, sizeof(img), cudaMemcpyDeviceToHost);
		for (size_t y = 0; y < 3; y++)
			for (size_t x = 0; x < 1024; x++)
				filled = filled && img[y * 1024 + x] ==
						   (x < 50 && y < 2 ? 9 : x < 100 ? 7 : 0);
		printf(" fill_rows=%d", filled);
		printf(" fill_wide=%d", cudaMemset2D(p, 64, 7, 100, 3));
		printf(" fill_past_end=%d\n", cudaMemset2D(p, pitch, 7, 100, 4));
		cudaFree(p);
		cuMemFree(dp);
	}
	cudaDeviceSynchronize();
	print_copy_records();
	return 0;
}

/* ---- 3D copies and fills (cudaMemcpy3D, cuMemcpy3D, cudaMemset3D) ---- */

/* driver_functions.h's, which C gets with CUDA's internal headers only */
static struct cudaPitchedPtr make_cudaPitchedPtr(void *p, size_t pitch, size_t x, size_t y)
{
	return (struct cudaPitchedPtr){ .ptr = p, .pitch = pitch, .xsize = x, .ysize = y };
}

static struct cudaExtent make_cudaExtent(size_t w, size_t h, size_t d)
{
	return (struct cudaExtent){ .width = w, .height = h, .depth = d };
}

/* 2 slices of 3 rows of 50 bytes: from host memory of pitch 64 and slices of 4 rows
 * into device memory of pitch 128 and slices of 3 rows (its gaps keep their 0xee), and
 * back into a tight host array on a stream; then the refusals, and 3D fills. */
static int copy3d(void)
{
	unsigned char src[2 * 4 * 64], back[2 * 3 * 50], whole[768];
	void *d = NULL;
	cudaStream_t s;
	bool rows = true, gaps = true, filled = true;
	struct cudaMemcpy3DParms up = { 0 }, down = { 0 }, bad;
	CUDA_MEMCPY3D array = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .dstMemoryType =
					CU_MEMORYTYPE_HOST, .dstHost = back, .dstPitch = 50,
				.dstHeight = 3, .WidthInBytes = 50, .Height = 3, .Depth = 2 };

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 7 + 1);
	cuptiActivityRegisterCallbacks(req, done);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
	cudaMalloc(&d, 768);
	cudaStreamCreate(&s);
	cudaMemset(d, 0xee, 768);
	up.srcPtr = make_cudaPitchedPtr(src, 64, 50, 4);
	up.dstPtr = make_cudaPitchedPtr(d, 128, 50, 3);
	up.extent = make_cudaExtent(50, 3, 2);
	up.kind = cudaMemcpyHostToDevice;
	down.srcPtr = make_cudaPitchedPtr(d, 128, 50, 3);
	down.dstPtr = make_cudaPitchedPtr(back, 50, 50, 3);
	down.extent = make_cudaExtent(50, 3, 2);
	down.kind = cudaMemcpyDeviceToHost;
	printf("htod=%d\n", cudaMemcpy3D(&up));
	printf("dtoh=%d\n", cudaMemcpy3DAsync(&down, s));
	cudaStreamSynchronize(s);
	cudaMemcpy(whole, d, sizeof(whole), cudaMemcpyDeviceToHost);
	for (int z = 0; z < 2; z++)
		for (int y = 0; y < 3; y++)
			for (int x = 0; x < 128; x++) {
				unsigned char want = src[(z * 4 + y) * 64 + x % 64];

				if (x < 50)
					rows = rows && back[(z * 3 + y) * 50 + x] == want &&
					       whole[(z * 3 + y) * 128 + x] == want;
				else
					gaps = gaps && whole[(z * 3 + y) * 128 + x] == 0xee;
			}
	printf("rows=%d gaps=%d\n", rows, gaps);
	bad = up;
	bad.dstArray = (cudaArray_t)d;
	printf("rt_array=%d", cudaMemcpy3D(&bad));
	printf(" array=%d", cuMemcpy3D(&array));
	bad = up;
	bad.extent.height = 4; /* past the destination's slice of 3 rows */
	printf(" slice=%d", cudaMemcpy3D(&bad));
	bad = up;
	bad.extent.depth = 3; /* past the allocation */
	printf(" past_end=%d", cudaMemcpy3D(&bad));
	bad = up;
	bad.kind = (enum cudaMemcpyKind)7;
	printf(" direction=%d", cudaMemcpy3D(&bad));
	bad = up;
	bad.dstPtr.pitch = 32;
	printf(" wide=%d\n", cudaMemcpy3D(&bad));
	/* fills: slices as high as ysize (one 2D fill), and 2 of each slice's 3 rows (one
	 * per slice); each row's width, not its gap */
	cudaMemset(d, 0, 768);
	printf("fill3d=%d", cudaMemset3D(make_cudaPitchedPtr(d, 128, 50, 3), 7,
					   make_cudaExtent(40, 3, 2)));
	printf(",%d", cudaMemset3DAsync(make_cudaPitchedPtr(d, 128, 50, 3), 9,
					 make_cudaExtent(20, 2, 2), s));
	printf(",%d", cudaStreamSynchronize(s));
	printf(" fill_tall=%d", cudaMemset3D(make_cudaPitchedPtr(d, 128, 50, 3), 7,
					      make_cudaExtent(40, 4, 2)));
	printf(" fill_empty=%d\n", cudaMemset3D(make_cudaPitchedPtr(d, 128, 50, 3), 7,
						  make_cudaExtent(40, 3, 0)));
	cudaMemcpy(whole, d, sizeof(whole), cudaMemcpyDeviceToHost);
	for (int z = 0; z < 2; z++)
		for (int y = 0; y < 3; y++)
			for (int x = 0; x < 128; x++)
				filled = filled && whole[(z * 3 + y) * 128 + x] ==
							   (x < 20 && y < 2 ? 9 : x < 40 ? 7 : 0);
	printf("fill_rows=%d\n", filled);
	cudaDeviceSynchronize();
	print_copy_records();
	return 0;
}

/* ---- __device__ variables (__cudaRegisterVar, cudaMemcpyToSymbol, ...) ---- */

static int get_global_calls;

static void CUPTIAPI get_global_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
				   const void *p)
{
	const CUpti_CallbackData *cb = p;

	get_global_calls += d == CUPTI_CB_DOMAIN_DRIVER_API && cb->callbackSite == CUPTI_API_ENTER &&
			    id == CUPTI_DRIVER_TRACE_CBID_cuModuleGetGlobal_v2;
}

/* A variable of 256 bytes: written whole, read in part, copied device to device
 * on a stream, read through its address; the documented errors; after a reset
 * it is the module's again (zeroed). */
static int symbols(void)
{
	static unsigned char shadow[256], unknown;
	unsigned char src[256], back[256], whole[256], copied[256];
	CUpti_SubscriberHandle sub;
	void *at = NULL, *d = NULL;
	size_t size = 0;
	cudaStream_t s;

	for (int i = 0; i < 256; i++)
		src[i] = (unsigned char)(i * 3 + 1);
	hand_register_var(shadow, "probe_table", sizeof(shadow));
	cuptiSubscribe(&sub, get_global_cb, NULL);
	cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
	cuptiActivityRegisterCallbacks(req, done);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
	cudaMalloc(&d, 256);
	cudaStreamCreate(&s);
	printf("to=%d\n", cudaMemcpyToSymbol(shadow, src, 256, 0, cudaMemcpyHostToDevice));
	printf("from=%d\n", cudaMemcpyFromSymbol(back, shadow, 128, 64, cudaMemcpyDeviceToHost));
	printf("address=%d\n", cudaGetSymbolAddress(&at, shadow));
	int got_size = cudaGetSymbolSize(&size, shadow);
	printf("size=%d:%zu\n", got_size, size);
	printf("dtod=%d\n", cudaMemcpyFromSymbolAsync(d, shadow, 256, 0, cudaMemcpyDeviceToDevice, s));
	cudaStreamSynchronize(s);
	cudaMemcpy(whole, at, 256, cudaMemcpyDeviceToHost);
	cudaMemcpy(copied, d, 256, cudaMemcpyDeviceToHost);
	printf("bytes=%d\n", !memcmp(back, src + 64, 128) && !memcmp(whole, src, 256) &&
				      !memcmp(copied, src, 256));
	printf("get_global=%d\n", get_global_calls);
	printf("past_end=%d\n", cudaMemcpyToSymbol(shadow, src, 200, 100, cudaMemcpyHostToDevice));
	printf("unknown=%d,%d\n", cudaMemcpyToSymbol(&unknown, src, 1, 0, cudaMemcpyHostToDevice),
	       cudaGetSymbolAddress(&at, &unknown));
	printf("direction=%d\n", cudaMemcpyToSymbol(shadow, src, 4, 0, cudaMemcpyDeviceToHost));
	cudaGetSymbolAddress(&at, shadow);
	printf("free_symbol=%d\n", cudaFree(at));
	print_copy_records();
	cudaDeviceReset();
	back[0] = 1;
	int reread = cudaMemcpyFromSymbol(back, shadow, 1, 0, cudaMemcpyDeviceToHost);
	printf("after_reset=%d:%d\n", reread, back[0]);
	return 0;
}

/* ---- host functions (cudaLaunchHostFunc, cudaStreamAddCallback) ---- */

static struct {
	uint64_t start, end;
	long thread, cb_thread;
	cudaStream_t cb_stream;
	int cb_status, cb_calls;
} host_fns;

static void CUDART_CB slow_host_fn(void *arg)
{
	host_fns.start = raw_ns();
	host_fns.thread = tid();
	sleep_ms(20);
	host_fns.end = raw_ns();
}

static void CUDART_CB stream_callback(cudaStream_t s, cudaError_t status, void *arg)
{
	host_fns.cb_stream = s;
	host_fns.cb_status = status;
	host_fns.cb_thread = tid();
	host_fns.cb_calls += arg == &host_fns;
}

/* A kernel of 1 ms, a host function of 20 ms, a kernel, a callback: each in
 * stream order, the host functions on a thread of the driver's; no activity
 * record but the kernels' and the API's. */
static int host_functions(void)
{
	cudaEvent_t before, after;
	cudaStream_t s;
	uint64_t queued;
	float ms = 0;
	CUpti_Activity *r = NULL;
	int kinds[64] = { 0 };

	register_kernel();
	cuptiActivityRegisterCallbacks(req, done);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
	cudaStreamCreate(&s);
	cudaEventCreate(&before);
	cudaEventCreate(&after);
	queued = raw_ns();
	launch(1000, 1000, s); /* 1 ms */
	cudaEventRecord(before, s);
	printf("host_fn=%d\n", cudaLaunchHostFunc(s, slow_host_fn, NULL));
	cudaEventRecord(after, s);
	launch(1, 1, s);
	printf("callback=%d\n", cudaStreamAddCallback(s, stream_callback, &host_fns, 0));
	printf("flags=%d\n", cudaStreamAddCallback(s, stream_callback, &host_fns, 1));
	printf("no_fn=%d\n", cudaLaunchHostFunc(s, NULL, NULL));
	cudaStreamSynchronize(s);
	cudaEventElapsedTime(&ms, before, after);
	printf("after_kernel=%d\n", host_fns.start >= queued + 1000000);
	printf("waited=%d\n", ms >= 20.0f);
	printf("other_thread=%d\n", host_fns.thread && host_fns.thread != tid() &&
					     host_fns.cb_thread && host_fns.cb_thread != tid());
	printf("cb=%d:%d:%d\n", host_fns.cb_calls, host_fns.cb_stream == s, host_fns.cb_status);
	cuptiActivityFlushAll(0);
	while (last_buf && cuptiActivityGetNextRecord(last_buf, last_valid, &r) == CUPTI_SUCCESS)
		if (r->kind < 64)
			kinds[r->kind] = 1;
	printf("kinds=");
	for (int k = 0; k < 64; k++)
		if (kinds[k])
			printf("%d,", k);
	printf("\n");
	return 0;
}

/* ---- stream-ordered allocation (cudaMallocAsync, cudaFreeAsync) ---- */

/* Memory allocated on a stream, filled and read back there, freed there; a
 * capture goes on around an allocation on another stream (not potentially
 * unsafe, unlike cudaMalloc); the errors; CUPTI's memory kinds refused. */
static int malloc_async(void)
{
	unsigned char host[4096];
	void *p = NULL, *q = NULL, *r = NULL;
	cudaStream_t s, c;
	cudaGraph_t g = NULL;
	bool filled = true;

	cuptiActivityRegisterCallbacks(req, done);
	printf("memory2=%d pool=%d\n", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2),
	       cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY_POOL));
	cudaStreamCreate(&s);
	cudaStreamCreate(&c);
	printf("alloc=%d\n", cudaMallocAsync(&p, sizeof(host), s));
	cudaMemsetAsync(p, 7, sizeof(host), s);
	cudaMemcpyAsync(host, p, sizeof(host), cudaMemcpyDeviceToHost, s);
	printf("free=%d\n", cudaFreeAsync(p, s));
	cudaStreamSynchronize(s);
	for (size_t i = 0; i < sizeof(host); i++)
		filled = filled && host[i] == 7;
	printf("filled=%d\n", filled);
	printf("null=%d\n", cudaMallocAsync(NULL, 16, s));
	printf("bad_stream=%d\n", cudaMallocAsync(&q, 16, (cudaStream_t)host));
	printf("unknown=%d\n", cudaFreeAsync(host, s));
	printf("twice=%d\n", cudaFreeAsync(p, s));
	cudaMallocAsync(&q, 16, s);
	printf("plain_free=%d\n", cudaFree(q));
	cudaStreamBeginCapture(c, cudaStreamCaptureModeGlobal);
	printf("during_capture=%d\n", cudaMallocAsync(&r, 16, s));
	printf("on_capturing=%d\n", cudaMallocAsync(&q, 16, c));
	printf("end_capture=%d\n", cudaStreamEndCapture(c, &g));
	cudaFreeAsync(r, s);
	cudaStreamSynchronize(s);
	return 0;
}

/* ---- the per-thread-default-stream forms (what nvcc's --default-stream per-thread calls) ---- */

cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
			      size_t width, size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch,
				   size_t width, size_t height, enum cudaMemcpyKind kind,
				   cudaStream_t stream);
cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count,
				    size_t offset, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol, size_t count,
					   size_t offset, enum cudaMemcpyKind kind,
					   cudaStream_t stream);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);

static void CUDART_CB set_flag(void *arg)
{
	*(int *)arg = 1;
}

/* Each on the calling thread's stream (not the legacy one, id 7): the copies'
 * records name one stream. */
static int per_thread(void)
{
	static unsigned char shadow[64];
	unsigned char src[4096], back[4096], part[16];
	uint32_t streams[8];
	int n = 0, ran = 0;
	void *p = NULL;
	CUpti_Activity *r = NULL;

	for (int i = 0; i < 4096; i++)
		src[i] = (unsigned char)(i * 5 + 3);
	hand_register_var(shadow, "probe_pt", sizeof(shadow));
	cuptiActivityRegisterCallbacks(req, done);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
	printf("results=%d,", cudaMallocAsync_ptsz(&p, 4096, NULL));
	printf("%d,", cudaMemcpy2DAsync_ptsz(p, 64, src, 64, 64, 64, cudaMemcpyHostToDevice, NULL));
	printf("%d,", cudaMemcpy2D_ptds(back, 64, p, 64, 64, 64, cudaMemcpyDeviceToHost));
	printf("%d,", cudaMemcpyToSymbol_ptds(shadow, src, 64, 0, cudaMemcpyHostToDevice));
	printf("%d,", cudaMemcpyFromSymbolAsync_ptsz(part, shadow, 16, 8, cudaMemcpyDeviceToHost,
						      NULL));
	printf("%d,", cudaLaunchHostFunc_ptsz(NULL, set_flag, &ran));
	printf("%d\n", cudaFreeAsync_ptsz(p, NULL));
	cudaStreamSynchronize(cudaStreamPerThread);
	printf("bytes=%d ran=%d\n", !memcmp(back, src, 4096) && !memcmp(part, src + 8, 16), ran);
	cuptiActivityFlushAll(0);
	while (last_buf && cuptiActivityGetNextRecord(last_buf, last_valid, &r) == CUPTI_SUCCESS) {
		const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
		if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY && n < 8)
			streams[n++] = m->streamId;
	}
	bool one = n == 4;
	for (int i = 1; i < n; i++)
		one = one && streams[i] == streams[0];
	printf("copies=%d one_stream=%d legacy=%d\n", n, one, n && streams[0] == 7);
	return 0;
}

/* ---- cudaDeviceReset (cuDevicePrimaryCtxReset) ---- */

static char resources[256];

/* Resource callbacks as C<context id> (created), D (destroy starting), L (module
 * loaded), U (module unload starting). */
static void CUPTIAPI resource_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
				 const void *p)
{
	const CUpti_ResourceData *r = p;
	const char *what = id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED	     ? "C"
			   : id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING ? "D"
			   : id == CUPTI_CBID_RESOURCE_MODULE_LOADED	     ? "L"
			   : id == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING   ? "U"
									     : NULL;
	uint32_t ctx = 0;
	size_t n = strlen(resources);

	if (d != CUPTI_CB_DOMAIN_RESOURCE || !what)
		return;
	cuptiGetContextId(r->context, &ctx);
	snprintf(resources + n, sizeof(resources) - n, "%s%u,", what, ctx);
}

static int reset(void)
{
	CUpti_SubscriberHandle sub;
	size_t free0 = 0, free1 = 1, total;
	cudaGraphExec_t x, x2;
	cudaStream_t s;
	cudaEvent_t e;
	cudaGraph_t g;
	void *d = NULL;

	cuptiSubscribe(&sub, resource_cb, NULL);
	cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE);
	register_kernel();
	cudaMemGetInfo(&free0, &total);
	cudaMalloc(&d, 1 << 20);
	cudaStreamCreate(&s);
	cudaEventCreate(&e);
	/* a graph of a fill of that memory, instantiated */
	cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
	cudaMemsetAsync(d, 0, 4096, s);
	cudaStreamEndCapture(s, &g);
	cudaGraphInstantiate(&x, g, 0);
	launch(1000, 1000, s); /* 1 ms */
	uint64_t queued = raw_ns();
	printf("reset=%d\n", cudaDeviceReset());
	printf("waited=%d\n", raw_ns() - queued >= 1000000);
	printf("event=%d\n", cudaEventQuery(e));
	printf("event_destroy=%d\n", cudaEventDestroy(e));
	printf("stream=%d\n", cudaStreamSynchronize(s));
	printf("graph_launch=%d\n", cudaGraphLaunch(x, NULL));
	printf("graph_instantiate=%d\n", cudaGraphInstantiate(&x2, g, 0));
	cudaGraphExecDestroy(x);
	cudaGraphDestroy(g);
	cudaMemGetInfo(&free1, &total);
	printf("freed=%d\n", free1 == free0);
	printf("launch_again=%d\n", launch(1, 1, NULL));
	printf("sync=%d\n", cudaDeviceSynchronize());
	printf("resources=%s\n", resources);
	return 0;
}

/* ---- clocks ---- */

static uint64_t CUPTIAPI host_clock(void)
{
	return raw_ns();
}

/* The host's clock, read after a 1 ms wait three calls in four: a client whose
 * thread is preempted inside its callback, often. */
static uint64_t CUPTIAPI stalling_clock(void)
{
	static _Atomic unsigned calls;

	if (atomic_fetch_add(&calls, 1) % 4 != 3)
		sleep_ms(1);
	return raw_ns();
}

/* A (host, CUPTI) pair: the host time at the middle of the CUPTI read, the
 * tightest of a few; returns the read's width (the pair's uncertainty). */
static uint64_t pair(uint64_t *h, uint64_t *c)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t t, a = raw_ns();
		cuptiGetTimestamp(&t);
		uint64_t b = raw_ns();
		if (b - a < best) {
			best = b - a;
			*h = a + (b - a) / 2;
			*c = t;
		}
	}
	return best;
}

/* "long": the kernel lasts 400 ms (for a clock step inside it), else 1 ms;
 * "callback" and "stalling": the client's clock, through a timestamp callback. */
static int clocks(const char *with_callback)
{
	uint64_t c1, c2, h1, h2, launch_at, width;
	CUpti_Activity *r = NULL;
	bool long_kernel = !strcmp(with_callback, "long");

	register_kernel();
	if (!strcmp(with_callback, "callback"))
		cuptiActivityRegisterTimestampCallback(host_clock);
	else if (!strcmp(with_callback, "stalling"))
		cuptiActivityRegisterTimestampCallback(stalling_clock);
	cuptiActivityRegisterCallbacks(req, done);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	width = pair(&h1, &c1);
	sleep_ms(300);
	width += pair(&h2, &c2);
	cuptiGetTimestamp(&launch_at);
	launch(long_kernel ? 400000 : 1000, 1000, NULL); /* 400 ms or 1 ms */
	cudaDeviceSynchronize();
	uint64_t synced = raw_ns();
	cuptiActivityFlushAll(0);
	printf("host_elapsed=%llu cupti_elapsed=%llu reads_width=%llu\n",
	       (unsigned long long)(h2 - h1), (unsigned long long)(c2 - c1),
	       (unsigned long long)width);
	while (cuptiActivityGetNextRecord(last_buf, last_valid, &r) == CUPTI_SUCCESS) {
		if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			continue;
		CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
		printf("kernel_after_launch=%lld kernel_dur=%llu\n",
		       (long long)(k->start - launch_at), (unsigned long long)(k->end - k->start));
		/* (in the host's clock when the callback is one that reads it) */
		if (strcmp(with_callback, "") && !long_kernel)
			printf("kernel_end_before_synced=%lld\n", (long long)(synced - k->end));
	}
	return 0;
}

/* ---- the range profiler, as cupti_range_profiler.h documents it ---- */

static const char *range_metrics[] = { "gpu__time_duration.sum", "sm__threads_launched.sum" };

static int user_range(CUpti_RangeProfiler_Object *o, const char *name)
{
	CUpti_RangeProfiler_PushRange_Params pu = {
		CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_PopRange_Params po = {
		CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE };

	pu.pRangeProfilerObject = po.pRangeProfilerObject = o;
	pu.pRangeName = name;
	return name ? cuptiRangeProfilerPushRange(&pu) : cuptiRangeProfilerPopRange(&po);
}

/* One auto-range, kernel-replay session around two kernels, or ("user...") a
 * user-range, user-replay session: "step" (a kernel, then "inner" with one) and
 * "idle" (none); `violate` breaks one documented rule instead. Prints ranges=,
 * then rangeN=NAME:VALUES. */
static int range(const char *violate)
{
	bool user = !strncmp(violate, "user", 4);
	CUpti_Profiler_Initialize_Params init = { CUpti_Profiler_Initialize_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_Initialize_Params hi = {
		CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_ConfigAddMetrics_Params add = {
		CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_GetConfigImageSize_Params cs = {
		CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_GetConfigImage_Params ci = {
		CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_Enable_Params en = { CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_GetCounterDataSize_Params ds = {
		CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = {
		CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_SetConfig_Params sc = { CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_Start_Params st = { CUpti_RangeProfiler_Start_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_Stop_Params sp = { CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_DecodeData_Params dd = {
		CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_GetCounterDataInfo_Params info = {
		CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE };
	CUpti_Device_GetChipName_Params chip = { CUpti_Device_GetChipName_Params_STRUCT_SIZE };
	CUcontext ctx;
	uint8_t *config, *data;
	int r = 0;

	register_kernel();
	cudaFree(NULL); /* the primary context */
	cuCtxGetCurrent(&ctx);
	if (strcmp(violate, "no_initialize"))
		r |= cuptiProfilerInitialize(&init);
	r |= cuptiDeviceGetChipName(&chip);
	hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
	hi.pChipName = chip.pChipName;
	r |= cuptiProfilerHostInitialize(&hi);
	add.pHostObject = hi.pHostObject;
	add.ppMetricNames = range_metrics;
	add.numMetrics = 2;
	r |= cuptiProfilerHostConfigAddMetrics(&add);
	cs.pHostObject = hi.pHostObject;
	r |= cuptiProfilerHostGetConfigImageSize(&cs);
	config = malloc(cs.configImageSize);
	ci.pHostObject = hi.pHostObject;
	ci.configImageSize = cs.configImageSize;
	ci.pConfigImage = config;
	r |= cuptiProfilerHostGetConfigImage(&ci);
	en.ctx = ctx;
	r |= cuptiRangeProfilerEnable(&en);
	ds.pRangeProfilerObject = en.pRangeProfilerObject;
	ds.pMetricNames = range_metrics;
	ds.numMetrics = 2;
	ds.maxNumOfRanges = 4;
	ds.maxNumRangeTreeNodes = strcmp(violate, "tree_nodes") ? 4 : 2;
	r |= cuptiRangeProfilerGetCounterDataSize(&ds);
	data = malloc(ds.counterDataSize);
	di.pRangeProfilerObject = en.pRangeProfilerObject;
	di.counterDataSize = ds.counterDataSize;
	di.pCounterData = data;
	r |= cuptiRangeProfilerCounterDataImageInitialize(&di);
	sc.pRangeProfilerObject = en.pRangeProfilerObject;
	sc.configSize = cs.configImageSize;
	sc.pConfig = config;
	sc.counterDataImageSize = ds.counterDataSize;
	sc.pCounterDataImage = data;
	sc.range = user ? CUPTI_UserRange : CUPTI_AutoRange;
	sc.replayMode = user ? CUPTI_UserReplay : CUPTI_KernelReplay;
	sc.maxRangesPerPass = 4;
	sc.numNestingLevels = strcmp(violate, "nesting") && strcmp(violate, "user_levels2") ? 1 : 2;
	sc.minNestingLevel = 1;
	sc.targetNestingLevel = 1;
	st.pRangeProfilerObject = en.pRangeProfilerObject;
	if (strcmp(violate, "start_before_config"))
		r |= cuptiRangeProfilerSetConfig(&sc);
	if (!strcmp(violate, "user_push_unstarted"))
		user_range(en.pRangeProfilerObject, "early");
	r |= cuptiRangeProfilerStart(&st);
	if (user) {
		r |= user_range(en.pRangeProfilerObject, "step");
		launch(3, 100, NULL); /* 300 ns */
		r |= user_range(en.pRangeProfilerObject, "inner");
		launch(2, 64, NULL); /* 128 ns */
		r |= user_range(en.pRangeProfilerObject, NULL);
		r |= user_range(en.pRangeProfilerObject, NULL);
		r |= user_range(en.pRangeProfilerObject, "idle");
		r |= user_range(en.pRangeProfilerObject, NULL);
		if (!strcmp(violate, "user_pop_unpushed"))
			user_range(en.pRangeProfilerObject, NULL);
		if (!strcmp(violate, "user_stop_pushed"))
			user_range(en.pRangeProfilerObject, "open");
	} else {
		launch(3, 100, NULL); /* 300 ns */
		launch(2, 64, NULL);  /* 128 ns */
	}
	sp.pRangeProfilerObject = en.pRangeProfilerObject;
	dd.pRangeProfilerObject = en.pRangeProfilerObject;
	if (!strcmp(violate, "decode_before_stop"))
		cuptiRangeProfilerDecodeData(&dd);
	r |= cuptiRangeProfilerStop(&sp);
	r |= cuptiRangeProfilerDecodeData(&dd);
	info.pCounterDataImage = data;
	info.counterDataImageSize = ds.counterDataSize;
	r |= cuptiRangeProfilerGetCounterDataInfo(&info);
	printf("chip=%s ranges=%zu dropped=%zu\n", chip.pChipName, info.numTotalRanges,
	       dd.numOfRangeDropped);
	if (user)
		printf("all passes submitted=%u next level=%zu\n", sp.isAllPassSubmitted,
		       sp.targetNestingLevel);
	for (size_t i = 0; i < info.numTotalRanges; i++) {
		CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
			CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE };
		CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri = {
			CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE };
		double v[2];

		ev.pHostObject = hi.pHostObject;
		ev.pCounterDataImage = data;
		ev.counterDataImageSize = ds.counterDataSize;
		ev.rangeIndex = i;
		ev.ppMetricNames = range_metrics;
		ev.numMetrics = 2;
		ev.pMetricValues = v;
		ri.pCounterDataImage = data;
		ri.counterDataImageSize = ds.counterDataSize;
		ri.rangeIndex = i;
		r |= cuptiProfilerHostEvaluateToGpuValues(&ev);
		r |= cuptiRangeProfilerCounterDataGetRangeInfo(&ri);
		printf("range%zu=%s:%.0f,%.0f\n", i, ri.rangeName, v[0], v[1]);
	}
	printf("not stopped\n");
	return r;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	if (!strcmp(what, "subscribe"))
		return subscribers();
	if (!strcmp(what, "callbacks"))
		return callbacks();
	if (!strcmp(what, "buffers"))
		return buffers();
	if (!strcmp(what, "forbidden"))
		return forbidden(argc > 2 ? argv[2] : "");
	if (!strcmp(what, "capture"))
		return capture();
	if (!strcmp(what, "streams"))
		return stream_ids();
	if (!strcmp(what, "fork"))
		return fork_child();
	if (!strcmp(what, "walk"))
		return walk(argc > 2 ? argv[2] : "");
	if (!strcmp(what, "reset"))
		return reset();
	if (!strcmp(what, "peer"))
		return peer(argc > 2 ? argv[2] : "");
	if (!strcmp(what, "copy2d"))
		return copy2d();
	if (!strcmp(what, "copy3d"))
		return copy3d();
	if (!strcmp(what, "symbols"))
		return symbols();
	if (!strcmp(what, "hostfn"))
		return host_functions();
	if (!strcmp(what, "mallocasync"))
		return malloc_async();
	if (!strcmp(what, "per_thread"))
		return per_thread();
	if (!strcmp(what, "clock"))
		return clocks(argc > 2 ? argv[2] : "");
	if (!strcmp(what, "range"))
		return range(argc > 2 ? argv[2] : "");
	if (!strcmp(what, "init")) {
		int n = -1, r = cudaGetDeviceCount(&n);
		printf("count=%d result=%d\n", n, r);
		return 0;
	}
	fprintf(stderr, "usage: sim_probe subscribe|callbacks|buffers|forbidden WHAT|capture|fork|"
			"walk LIBCUPTI|peer LIBCUPTI|reset|copy2d|symbols|hostfn|mallocasync|per_thread|clock [callback|stalling|long]|init|streams\n");
	return 2;
}
