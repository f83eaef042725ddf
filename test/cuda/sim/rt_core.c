// SPDX-License-Identifier: MIT
/*
 * The runtime's core: finding the driver, initializing lazily (cuInit at
 * the first call that needs the device, the primary context made current
 * per thread), errors, devices and versions.
 *
 * Without libcuda.so.1 every call that needs the driver fails with
 * cudaErrorInsufficientDriver (35) and writes nothing, and
 * cudaDriverGetVersion reports 0, as the real runtime does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"

RT_HIDDEN struct rt_driver rt_drv;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cudaError_t load_error = cudaErrorInsufficientDriver;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;

static __thread int thread_device;
static __thread cudaError_t last_error;

void sim_die_rt(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sim_vreport("cuda_sim", true, fmt, ap);
	va_end(ap);
	abort();
}

static void load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	CUresult (*get_proc)(const char *, void **, int, cuuint64_t,
			     CUdriverProcAddressQueryResult *);
	CUresult (*get_table)(const void **, const CUuuid *);
	const void *table = NULL;

	if (!h)
		return;
	get_proc = (__typeof__(get_proc))dlsym(h, "cuGetProcAddress_v2");
	get_table = (__typeof__(get_table))dlsym(h, "cuGetExportTable");
	if (!get_proc || !get_table)
		return;
#define RT_DRV_LOOKUP(fn)                                                                   \
	if (get_proc(#fn, (void **)&rt_drv.fn, SIM_RT_MAJOR * 1000, CU_GET_PROC_ADDRESS_DEFAULT, \
		     NULL))                                                                 \
		return;
	RT_DRIVER(RT_DRV_LOOKUP)
#undef RT_DRV_LOOKUP
	/* a driver other than the simulated one: no tools hub */
	if (!get_table(&table, &sim_tools_uuid))
		rt_drv.tools = table;
	load_error = cudaSuccess;
}

cudaError_t rt_load_driver(void)
{
	pthread_once(&load_once, load);
	return load_error;
}

static void init(void)
{
	init_result = rt_drv.cuInit(0);
}

cudaError_t rt_error(cudaError_t e)
{
	if (e && e != cudaErrorNotReady)
		last_error = e;
	return e;
}

/* The driver's codes are the runtime's for everything the simulator returns. */
cudaError_t rt_result(CUresult r)
{
	return rt_error((cudaError_t)r);
}

static cudaError_t initialized(void)
{
	cudaError_t e = rt_load_driver();

	if (e)
		return e;
	pthread_once(&init_once, init);
	return init_result ? (cudaError_t)init_result : cudaSuccess;
}

cudaError_t rt_context(void)
{
	CUcontext want, cur = NULL;
	cudaError_t e = initialized();
	CUresult r;

	if (e)
		return rt_error(e);
	if ((r = rt_drv.cuDevicePrimaryCtxRetain(&want, thread_device)))
		return rt_result(r);
	if ((r = rt_drv.cuCtxGetCurrent(&cur)))
		return rt_result(r);
	if (cur != want && (r = rt_drv.cuCtxSetCurrent(want)))
		return rt_result(r);
	return cudaSuccess;
}

int rt_current_device(void)
{
	return thread_device;
}

/* Every entry point's first and last act: the tools hub hears of it. */
SIM_NOINLINE void rt_enter(struct sim_call *c)
{
	if (!rt_load_driver() && rt_drv.tools)
		rt_drv.tools->enter(c);
}

SIM_NOINLINE void rt_exit(struct sim_call *c, const void *ret)
{
	c->ret = ret;
	if (!load_error && rt_drv.tools)
		rt_drv.tools->exit(c);
}

/* ---- errors ---- */

#define RT_ERRORS(X)                                                                        \
	X(cudaSuccess, "no error")                                                          \
	X(cudaErrorInvalidValue, "invalid argument")                                        \
	X(cudaErrorMemoryAllocation, "out of memory")                                       \
	X(cudaErrorInitializationError, "initialization error")                             \
	X(cudaErrorInvalidConfiguration, "invalid configuration argument")                  \
	X(cudaErrorInvalidPitchValue, "invalid pitch argument")                              \
	X(cudaErrorInvalidSymbol, "invalid device symbol")                                   \
	X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")             \
	X(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version") \
	X(cudaErrorInvalidDeviceFunction, "invalid device function")                        \
	X(cudaErrorNoDevice, "no CUDA-capable device is detected")                          \
	X(cudaErrorInvalidDevice, "invalid device ordinal")                                 \
	X(cudaErrorInvalidKernelImage, "device kernel image is invalid")                    \
	X(cudaErrorDeviceUninitialized, "invalid device context")                           \
	X(cudaErrorInvalidResourceHandle, "invalid resource handle")                        \
	X(cudaErrorIllegalState, "the operation cannot be performed in the present state")  \
	X(cudaErrorSymbolNotFound, "named symbol not found")                                \
	X(cudaErrorNotReady, "device not ready")                                            \
	X(cudaErrorNotSupported, "operation not supported")                                 \
	X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing") \
	X(cudaErrorStreamCaptureInvalidated,                                                \
	  "operation failed due to a previous error during capture")                        \
	X(cudaErrorStreamCaptureUnmatched, "capture was not initiated in this stream")      \
	X(cudaErrorStreamCaptureIsolation,                                                  \
	  "dependency created on uncaptured work in another stream")                        \
	X(cudaErrorStreamCaptureImplicit,                                                   \
	  "operation would make the legacy stream depend on a capturing blocking stream")   \
	X(cudaErrorCapturedEvent, "operation not permitted on an event last recorded in a capturing stream") \
	X(cudaErrorStreamCaptureWrongThread,                                                \
	  "attempt to terminate a thread-local capture sequence from another thread")       \
	X(cudaErrorContextIsDestroyed, "context is destroyed")                              \
	X(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled")              \
	X(cudaErrorPeerAccessNotEnabled, "peer access has not been enabled")                \
	X(cudaErrorUnknown, "unknown error")

const char *rt_error_name(cudaError_t e)
{
	switch (e) {
#define RT_ERR_NAME(code, text) case code: return #code;
		RT_ERRORS(RT_ERR_NAME)
#undef RT_ERR_NAME
	default:
		return "cudaErrorUnknown";
	}
}

const char *rt_error_string(cudaError_t e)
{
	switch (e) {
#define RT_ERR_TEXT(code, text) case code: return text;
		RT_ERRORS(RT_ERR_TEXT)
#undef RT_ERR_TEXT
	default:
		return "unrecognized error code";
	}
}

cudaError_t rt_get_last_error(void)
{
	cudaError_t e = last_error;

	last_error = cudaSuccess;
	return e;
}

cudaError_t rt_peek_last_error(void)
{
	return last_error;
}

/* ---- versions and devices ---- */

cudaError_t rt_runtime_version(int *v)
{
	if (!v)
		return rt_error(cudaErrorInvalidValue);
	*v = SIM_RT_MAJOR == 12 ? 12080 : 13000;
	return cudaSuccess;
}

cudaError_t rt_driver_version(int *v)
{
	if (!v)
		return rt_error(cudaErrorInvalidValue);
	if (rt_load_driver()) {
		*v = 0;
		return cudaSuccess;
	}
	return rt_result(rt_drv.cuDriverGetVersion(v));
}

cudaError_t rt_device_count(int *n)
{
	cudaError_t e = initialized();

	if (!n)
		return rt_error(cudaErrorInvalidValue);
	if (e)
		return rt_error(e);
	return rt_result(rt_drv.cuDeviceGetCount(n));
}

cudaError_t rt_set_device(int d)
{
	int n = 0;
	cudaError_t e = rt_device_count(&n);

	if (e)
		return e;
	if (d < 0 || d >= n)
		return rt_error(cudaErrorInvalidDevice);
	thread_device = d;
	return rt_context();
}

cudaError_t rt_get_device(int *d)
{
	if (!d)
		return rt_error(cudaErrorInvalidValue);
	*d = thread_device;
	return cudaSuccess;
}

cudaError_t rt_device_attribute(int *v, enum cudaDeviceAttr a, int d)
{
	cudaError_t e = initialized();

	if (e)
		return rt_error(e);
	/* the runtime's attribute numbers are the driver's */
	return rt_result(rt_drv.cuDeviceGetAttribute(v, (CUdevice_attribute)a, d));
}

/*
 * cudaDeviceProp differs between the two ABIs: CUDA 13 removed fields
 * (clockRate, deviceOverlap, kernelExecTimeoutEnabled, ...), so it is 1008
 * bytes with multiProcessorCount at 384; CUDA 12's is 1032 bytes with it
 * at 388. Each runtime writes exactly its own layout.
 */
struct rt_props {
	char name[256];
	size_t total_mem, shared_per_block, mem_pitch, const_mem;
	int regs_per_block, warp, max_threads, dims[3], grid[3], major, minor, sms;
};

static cudaError_t read_props(struct rt_props *p, int d)
{
	static const struct {
		CUdevice_attribute a;
		size_t off;
	} ints[] = {
		{ CU_DEVICE_ATTRIBUTE_WARP_SIZE, offsetof(struct rt_props, warp) },
		{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(struct rt_props, max_threads) },
		{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, offsetof(struct rt_props, dims[0]) },
		{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, offsetof(struct rt_props, dims[1]) },
		{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, offsetof(struct rt_props, dims[2]) },
		{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, offsetof(struct rt_props, grid[0]) },
		{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, offsetof(struct rt_props, grid[1]) },
		{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, offsetof(struct rt_props, grid[2]) },
		{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(struct rt_props, major) },
		{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(struct rt_props, minor) },
		{ CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(struct rt_props, sms) },
	};
	int smem = 0;
	CUresult r;
	cudaError_t e = initialized();

	if (e)
		return rt_error(e);
	memset(p, 0, sizeof(*p));
	if ((r = rt_drv.cuDeviceGetName(p->name, sizeof(p->name), d)) ||
	    (r = rt_drv.cuDeviceTotalMem(&p->total_mem, d)) ||
	    (r = rt_drv.cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
					     d)))
		return rt_result(r);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if ((r = rt_drv.cuDeviceGetAttribute((int *)((char *)p + ints[i].off), ints[i].a, d)))
			return rt_result(r);
	p->shared_per_block = (size_t)smem;
	p->regs_per_block = 65536;
	p->mem_pitch = 2147483647;
	p->const_mem = 65536;
	return cudaSuccess;
}

#if SIM_RT_MAJOR >= 13
_Static_assert(sizeof(struct cudaDeviceProp) == 1008, "CUDA 13 cudaDeviceProp");
_Static_assert(offsetof(struct cudaDeviceProp, multiProcessorCount) == 384, "CUDA 13 layout");

cudaError_t rt_device_properties(struct cudaDeviceProp *out, int d)
{
	struct rt_props p;
	cudaError_t e;

	if (!out)
		return rt_error(cudaErrorInvalidValue);
	if ((e = read_props(&p, d)))
		return e;
	memset(out, 0, sizeof(*out));
	memcpy(out->name, p.name, sizeof(out->name));
	out->totalGlobalMem = p.total_mem;
	out->sharedMemPerBlock = p.shared_per_block;
	out->regsPerBlock = p.regs_per_block;
	out->warpSize = p.warp;
	out->memPitch = p.mem_pitch;
	out->maxThreadsPerBlock = p.max_threads;
	memcpy(out->maxThreadsDim, p.dims, sizeof(p.dims));
	memcpy(out->maxGridSize, p.grid, sizeof(p.grid));
	out->totalConstMem = p.const_mem;
	out->major = p.major;
	out->minor = p.minor;
	out->multiProcessorCount = p.sms;
	out->concurrentKernels = 1;
	out->unifiedAddressing = 1;
	return cudaSuccess;
}
#else
/* CUDA 12's layout, the fields written here at their CUDA 12 offsets. */
struct cuda12_device_prop {
	char name[256];
	char uuid[16];
	char luid[8];
	unsigned int luid_mask;
	size_t total_global_mem;       /* 288 */
	size_t shared_mem_per_block;   /* 296 */
	int regs_per_block;            /* 304 */
	int warp_size;                 /* 308 */
	size_t mem_pitch;              /* 312 */
	int max_threads_per_block;     /* 320 */
	int max_threads_dim[3];        /* 324 */
	int max_grid_size[3];          /* 336 */
	int clock_rate;                /* 348 */
	size_t total_const_mem;        /* 352 */
	int major, minor;              /* 360, 364 */
	size_t texture_alignment;      /* 368 */
	size_t texture_pitch_alignment;/* 376 */
	int device_overlap;            /* 384 */
	int multi_processor_count;     /* 388 */
	char rest[1032 - 392];
};
_Static_assert(sizeof(struct cuda12_device_prop) == 1032, "CUDA 12 cudaDeviceProp");
_Static_assert(offsetof(struct cuda12_device_prop, major) == 360, "CUDA 12 layout");
_Static_assert(offsetof(struct cuda12_device_prop, multi_processor_count) == 388, "CUDA 12 layout");

cudaError_t rt_device_properties(void *dst, int d)
{
	struct cuda12_device_prop *out = dst;
	struct rt_props p;
	cudaError_t e;

	if (!out)
		return rt_error(cudaErrorInvalidValue);
	if ((e = read_props(&p, d)))
		return e;
	memset(out, 0, sizeof(*out));
	memcpy(out->name, p.name, sizeof(out->name));
	out->total_global_mem = p.total_mem;
	out->shared_mem_per_block = p.shared_per_block;
	out->regs_per_block = p.regs_per_block;
	out->warp_size = p.warp;
	out->mem_pitch = p.mem_pitch;
	out->max_threads_per_block = p.max_threads;
	memcpy(out->max_threads_dim, p.dims, sizeof(p.dims));
	memcpy(out->max_grid_size, p.grid, sizeof(p.grid));
	out->clock_rate = 1980000;
	out->total_const_mem = p.const_mem;
	out->major = p.major;
	out->minor = p.minor;
	out->device_overlap = 1;
	out->multi_processor_count = p.sms;
	return cudaSuccess;
}
#endif

cudaError_t rt_device_synchronize(void)
{
	cudaError_t e = rt_context();

	return e ? e : rt_result(rt_drv.cuCtxSynchronize());
}

/* "Explicitly destroys and cleans up all resources associated with the current
 * device in the current process": the driver's cuDevicePrimaryCtxReset, as
 * NVIDIA's runtime calls it; the next call on the device makes it anew. */
cudaError_t rt_device_reset(void)
{
	cudaError_t e = initialized();
	CUresult r;

	if (e)
		return rt_error(e);
	r = rt_drv.cuDevicePrimaryCtxReset(thread_device);
	if (!r)
		rt_forget_modules(thread_device);
	return rt_result(r);
}

/* As NVIDIA's runtime: the driver's cuProfilerStart/Stop for the current
 * context (a statically linked runtime makes the same driver calls, which
 * is all a tool sees of it). */
cudaError_t rt_profiler(bool start)
{
	cudaError_t e = rt_context();

	if (e)
		return e;
	return rt_result(start ? rt_drv.cuProfilerStart() : rt_drv.cuProfilerStop());
}

cudaError_t rt_mem_get_info(size_t *free_bytes, size_t *total)
{
	cudaError_t e = rt_context();

	return e ? e : rt_result(rt_drv.cuMemGetInfo(free_bytes, total));
}
