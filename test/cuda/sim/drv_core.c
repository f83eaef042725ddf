// SPDX-License-Identifier: MIT
/*
 * cuInit and the injection protocol, devices, contexts, error strings,
 * the handle registry and the export tables.
 *
 * cuInit does what the real driver does with CUDA_INJECTION64_PATH: under
 * the driver's initialization lock (other threads' cuInit wait for it),
 * dlopen the library, look up `int InitializeInjection(void)`, call it and
 * check its return (non-zero: success). A library that cannot be loaded,
 * lacks the entry point or fails gets one line on stderr, and CUDA works
 * on without it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "drv.h"

DRV_HIDDEN pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;
extern __thread int drv_in_injection;

#define DEVICES_MAX 4
#define DEVICE_MEMORY (80ull << 30)

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int initialized;
static int ndevices = 1;
static bool forked; /* a fork child of a process that initialized CUDA */
/* A primary context's handle lives on through resets (as NVIDIA's does); each
 * creation gets a new id */
static struct drv_ctx *primary[DEVICES_MAX];
static uint32_t next_context_id = DEVICES_MAX + 1;
static __thread struct drv_ctx *current;

void drv_report(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sim_vreport("cuda_sim", false, fmt, ap);
	va_end(ap);
}

void drv_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sim_vreport("cuda_sim", true, fmt, ap);
	va_end(ap);
	abort();
}

pid_t drv_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- handles ---- */

#define HANDLES (1u << 16)
#define TOMB ((const void *)1)
static const void *handles[HANDLES];

static unsigned slot_of(const void *h)
{
	return (unsigned)(((uintptr_t)h >> 4) * 0x9e3779b97f4a7c15ull >> 48) % HANDLES;
}

void drv_handle_add(void *h)
{
	for (unsigned i = 0, s = slot_of(h); i < HANDLES; i++, s = (s + 1) % HANDLES) {
		if (!handles[s] || handles[s] == TOMB) {
			handles[s] = h;
			return;
		}
	}
	drv_die("more than %u live CUDA objects", HANDLES);
}

void drv_handle_del(void *h)
{
	for (unsigned i = 0, s = slot_of(h); i < HANDLES && handles[s]; i++, s = (s + 1) % HANDLES) {
		if (handles[s] == h) {
			handles[s] = TOMB;
			return;
		}
	}
}

bool drv_handle_ok(const void *h, uint32_t magic)
{
	if (!h)
		return false;
	for (unsigned i = 0, s = slot_of(h); i < HANDLES && handles[s]; i++, s = (s + 1) % HANDLES)
		if (handles[s] == h)
			return *(const uint32_t *)h == magic;
	return false;
}

/* ---- initialization ---- */

static void inject(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	int (*init)(void);
	void *h;

	if (!path || !*path)
		return;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		drv_report("CUDA_INJECTION64_PATH=%s: cannot load it (%s); going on without it", path,
			   dlerror());
		return;
	}
	init = (int (*)(void))dlsym(h, "InitializeInjection");
	if (!init) {
		drv_report("CUDA_INJECTION64_PATH=%s has no InitializeInjection; going on without it",
			   path);
		return;
	}
	drv_in_injection = 1;
	int ok = init();
	drv_in_injection = 0;
	if (!ok)
		drv_report("InitializeInjection of %s returned 0 (failure); going on without it",
			   path);
}

static void env_devices(void)
{
	const char *s = getenv("CUDA_SIM_DEVICES");
	char *end;
	long v;

	if (!s || !*s)
		return;
	v = strtol(s, &end, 10);
	if (*end || v < 0 || v > DEVICES_MAX) {
		drv_report("CUDA_SIM_DEVICES='%s' is not an integer from 0 to %d; using 1", s,
			   DEVICES_MAX);
		return;
	}
	ndevices = (int)v;
}

CUresult drv_init(unsigned flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (forked)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (atomic_load_explicit(&initialized, memory_order_acquire))
		return ndevices ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
	pthread_mutex_lock(&init_lock);
	if (!atomic_load(&initialized)) {
		drv_clock_setup();
		env_devices();
		inject();
		atomic_store_explicit(&initialized, 1, memory_order_release);
	}
	pthread_mutex_unlock(&init_lock);
	return ndevices ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult drv_initialized(void)
{
	if (forked || !atomic_load_explicit(&initialized, memory_order_acquire))
		return CUDA_ERROR_NOT_INITIALIZED;
	return ndevices ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

/* A fork child may not use the CUDA its parent initialized: as with a real
 * driver, every call fails with CUDA_ERROR_NOT_INITIALIZED
 * (cudaErrorInitializationError). A child of a process that never
 * initialized CUDA may. */
static void atfork_child(void)
{
	forked = atomic_load(&initialized);
	pthread_mutex_init(&drv_lock, NULL);
	pthread_mutex_init(&init_lock, NULL);
}

__attribute__((constructor)) static void drv_load(void)
{
	drv_clock_setup();
	pthread_atfork(NULL, NULL, atfork_child);
}

/* ---- devices ---- */

CUresult drv_device_get(CUdevice *d, int ordinal)
{
	CUresult r = drv_initialized();

	if (r)
		return r;
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= ndevices)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return CUDA_SUCCESS;
}

CUresult drv_device_count(int *n)
{
	CUresult r = drv_initialized();

	if (r == CUDA_ERROR_NOT_INITIALIZED)
		return r;
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	*n = ndevices;
	return CUDA_SUCCESS;
}

static CUresult check_device(CUdevice d)
{
	CUresult r = drv_initialized();

	if (r)
		return r;
	return d < 0 || d >= ndevices ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

CUresult drv_device_name(char *name, int len, CUdevice d)
{
	CUresult r = check_device(d);

	if (r)
		return r;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "gputrace simulated GPU");
	return CUDA_SUCCESS;
}

CUresult drv_device_total_mem(size_t *bytes, CUdevice d)
{
	CUresult r = check_device(d);

	if (r)
		return r;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = DEVICE_MEMORY;
	return CUDA_SUCCESS;
}

CUresult drv_device_attribute(int *v, CUdevice_attribute a, CUdevice d)
{
	CUresult r = check_device(d);

	if (r)
		return r;
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
	/* an H100's, as Kineto's deviceProperties read them */
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 233472; break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *v = 1; break;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = d; break;
	default: *v = 0; break;
	}
	return CUDA_SUCCESS;
}

/* ---- contexts ---- */

struct drv_ctx *drv_ctx_current(void)
{
	return current && !current->destroyed ? current : NULL;
}

CUresult drv_no_context(void)
{
	return current && current->destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED
					     : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult drv_primary_retain(CUcontext *out, CUdevice d)
{
	CUresult r = check_device(d);
	struct drv_ctx *ctx;
	bool created = false;

	if (r)
		return r;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	ctx = primary[d];
	if (!ctx) {
		ctx = calloc(1, sizeof(*ctx));
		if (!ctx) {
			pthread_mutex_unlock(&drv_lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		ctx->magic = MAGIC_CTX;
		ctx->id = (uint32_t)d + 1;
		ctx->device = d;
		drv_handle_add(ctx);
		primary[d] = ctx;
		created = true;
	} else if (ctx->destroyed) {
		/* made anew after a reset: the same handle, a new context */
		ctx->id = next_context_id++;
		ctx->destroyed = false;
		created = true;
	}
	if (created && !(ctx->legacy = drv_stream_new(ctx, 0, true))) {
		ctx->destroyed = true;
		pthread_mutex_unlock(&drv_lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&drv_lock);
	if (created)
		drv_tool_context(ctx, 1);
	*out = (CUcontext)ctx;
	return CUDA_SUCCESS;
}

CUresult drv_primary_release(CUdevice d)
{
	return check_device(d);
}

/*
 * cuDevicePrimaryCtxReset: "destroys all allocations and resets all state on
 * the primary context". Its work is waited for (a context's destruction lets
 * it end: its streams' and the profiler's own kernels'), tools hear of each module's unload and then of the context's
 * destruction; its modules, streams and memory are freed, and its events
 * fail with CUDA_ERROR_CONTEXT_IS_DESTROYED, as does every call made in it
 * until cuDevicePrimaryCtxRetain makes it anew. A reset while one of its
 * streams captures is the caller's error (the documentation makes the device
 * the caller's to quiesce): it aborts.
 */
CUresult drv_primary_reset(CUdevice d)
{
	CUresult r = check_device(d);
	struct drv_ctx *ctx;
	uint64_t until;

	if (r)
		return r;
	pthread_mutex_lock(&drv_lock);
	ctx = primary[d];
	if (!ctx || ctx->destroyed) {
		pthread_mutex_unlock(&drv_lock);
		return CUDA_SUCCESS;
	}
	if (drv_streams_capturing(ctx))
		drv_die("cuDevicePrimaryCtxReset(%d) while a stream of its context captures", d);
	until = drv_streams_busy_until(ctx);
	pthread_mutex_unlock(&drv_lock);
	/* the profiler's kernels run in the context too: the tool's records of
	 * them are complete before it hears of the unloads */
	if (drv_tool_busy_until(ctx) > until)
		until = drv_tool_busy_until(ctx);
	drv_sleep_until(until);
	drv_modules_unload_context(ctx);
	drv_tool_context(ctx, 0);
	pthread_mutex_lock(&drv_lock);
	drv_streams_release(ctx);
	drv_mem_release_context(ctx->id);
	ctx->peers = 0;
	ctx->destroyed = true;
	/* other contexts' access to this one ends with it */
	for (int i = 0; i < ndevices; i++)
		if (primary[i])
			primary[i]->peers &= ~(1u << d);
	pthread_mutex_unlock(&drv_lock);
	return CUDA_SUCCESS;
}

CUresult drv_ctx_set_current(CUcontext c)
{
	CUresult r = drv_initialized();

	if (r)
		return r;
	if (c) {
		pthread_mutex_lock(&drv_lock);
		bool ok = drv_handle_ok(c, MAGIC_CTX);
		pthread_mutex_unlock(&drv_lock);
		if (!ok)
			return CUDA_ERROR_INVALID_CONTEXT;
	}
	current = (struct drv_ctx *)c;
	return CUDA_SUCCESS;
}

CUresult drv_ctx_get_current(CUcontext *c)
{
	CUresult r = drv_initialized();

	if (r)
		return r;
	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	*c = (CUcontext)current;
	return CUDA_SUCCESS;
}

/* cuProfilerStart/Stop (cudaProfiler.h): "enables (disables) profile
 * collection by the active profiling tool for the current context"; no
 * tool of the simulator collects, so beyond their CUPTI callbacks (which
 * the hub delivers, as for every driver call) they only check for one. */
CUresult drv_profiler(void)
{
	CUresult r = drv_initialized();

	if (r)
		return r;
	return drv_ctx_current() ? CUDA_SUCCESS : drv_no_context();
}

CUresult drv_ctx_get_device(CUdevice *d)
{
	CUresult r = drv_initialized();

	if (r)
		return r;
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	if (!drv_ctx_current())
		return drv_no_context();
	*d = current->device;
	return CUDA_SUCCESS;
}

/* ---- peer access (cuCtxEnablePeerAccess's documented errors) ---- */

CUresult drv_can_access_peer(int *can, CUdevice dev, CUdevice peer)
{
	CUresult r = check_device(dev);

	if (!r)
		r = check_device(peer);
	if (r)
		return r;
	if (!can)
		return CUDA_ERROR_INVALID_VALUE;
	/* the simulated GPUs share one fabric; no device is its own peer */
	*can = dev != peer;
	return CUDA_SUCCESS;
}

/* The current context's access to peer's memory: on (enable) or off. */
static CUresult peer_access(CUcontext h, bool enable)
{
	struct drv_ctx *peer = (struct drv_ctx *)h;
	CUresult r = drv_initialized();
	uint32_t bit;

	if (r)
		return r;
	pthread_mutex_lock(&drv_lock);
	if (!drv_ctx_current()) {
		r = drv_no_context();
	} else if (!drv_handle_ok(peer, MAGIC_CTX) || peer->destroyed || peer == current) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else if (peer->device == current->device) {
		r = CUDA_ERROR_INVALID_DEVICE;
	} else {
		bit = 1u << peer->device;
		if (enable && (current->peers & bit))
			r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
		else if (!enable && !(current->peers & bit))
			r = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
		else
			current->peers ^= bit;
	}
	pthread_mutex_unlock(&drv_lock);
	return r;
}

CUresult drv_enable_peer(CUcontext peer, unsigned flags)
{
	return flags ? CUDA_ERROR_INVALID_VALUE : peer_access(peer, true);
}

CUresult drv_disable_peer(CUcontext peer)
{
	return peer_access(peer, false);
}

int drv_context_ids(CUcontext c, uint32_t *context_id, uint32_t *device_id)
{
	struct drv_ctx *ctx = c ? (struct drv_ctx *)c : current;
	bool ok;

	pthread_mutex_lock(&drv_lock);
	ok = drv_handle_ok(ctx, MAGIC_CTX) && !ctx->destroyed;
	pthread_mutex_unlock(&drv_lock);
	if (!ok)
		return -1;
	if (context_id)
		*context_id = ctx->id;
	if (device_id)
		*device_id = (uint32_t)ctx->device;
	return 0;
}

/* ---- errors ---- */

#define DRV_ERRORS(X)                                                                       \
	X(CUDA_SUCCESS, "no error")                                                         \
	X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                     \
	X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                        \
	X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                               \
	X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                       \
	X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                              \
	X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                       \
	X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                             \
	X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                   \
	X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                             \
	X(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed")                          \
	X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,                                           \
	  "peer access is already enabled")                                                 \
	X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled")           \
	X(CUDA_ERROR_NOT_READY, "device not ready")                                         \
	X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                              \
	X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state") \
	X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing") \
	X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,                                            \
	  "operation failed due to a previous error during capture")                        \
	X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not initiated in this stream")  \
	X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,                                               \
	  "operation would make the legacy stream depend on a capturing blocking stream")   \
	X(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream") \
	X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread")

CUresult drv_error_name(CUresult e, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	switch (e) {
#define DRV_ERR_NAME(code, text) case code: *s = #code; return CUDA_SUCCESS;
		DRV_ERRORS(DRV_ERR_NAME)
#undef DRV_ERR_NAME
	default:
		*s = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult drv_error_string(CUresult e, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	switch (e) {
#define DRV_ERR_TEXT(code, text) case code: *s = text; return CUDA_SUCCESS;
		DRV_ERRORS(DRV_ERR_TEXT)
#undef DRV_ERR_TEXT
	default:
		*s = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/* Private tables: ours for libcudart and libcupti; NVIDIA's own (asked
 * for by a static cudart) do not exist here. */
CUresult drv_export_table(const void **table, const CUuuid *id)
{
	if (!table || !id)
		return CUDA_ERROR_INVALID_VALUE;
	if (!memcmp(id, &sim_tools_uuid, sizeof(*id))) {
		*table = drv_tools();
		return CUDA_SUCCESS;
	}
	*table = NULL;
	return CUDA_ERROR_NOT_SUPPORTED;
}
