// SPDX-License-Identifier: MIT
/*
 * Interposition of the shared libcudart's runtime API: the source of
 * cuda_runtime spans whenever CUPTI's runtime callbacks are not (no driver,
 * no libcupti, CUPTI held by another tool or disabled). When CUPTI's
 * callbacks run, these wrappers only pass the call on: one span per call.
 * With CUPTI held or disabled, launches also get CUDA events around them
 * for their device times (event_timing.c).
 *
 * Only functions whose signature is the same in CUDA 11, 12 and 13 are
 * wrapped: a wrapper forwards exactly the arguments it declares, so a
 * changed signature (cudaMemPrefetchAsync in 13) would corrupt the call.
 * Types are spelled out here instead of including cuda_runtime_api.h, whose
 * macros rename some functions per version.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cuda/internal.h"
#include "inject/capture.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/extcorr.h"
#include "inject/shim.h"
#include "inject/stacks.h"
#include "inject/watchdog.h"
#include "inject/tables.h"

typedef int cuda_err;        /* enum cudaError */
struct gt_dim3 {             /* dim3: passed by value */
	unsigned x, y, z;
};
#define RT_NO_RUNTIME 35     /* cudaErrorInsufficientDriver: no libcudart behind us */
struct gt_pitched_ptr {      /* cudaPitchedPtr: passed by value */
	void *ptr;
	size_t pitch, xsize, ysize;
};
struct gt_extent {           /* cudaExtent: passed by value */
	size_t width, height, depth;
};
struct gt_memcpy3d {         /* cudaMemcpy3DParms */
	void *src_array;
	size_t src_pos[3];
	struct gt_pitched_ptr src_ptr;
	void *dst_array;
	size_t dst_pos[3];
	struct gt_pitched_ptr dst_ptr;
	struct gt_extent extent;
	int kind;
};

enum rt_work { W_KERNEL = 1, W_COPY, W_SET, W_GRAPH, W_COPY_PEER, W_COPY_SYNC };
/* the --activities kind of a call's work, as CUPTI's kinds are enabled
 * (backend.c: a graph launch's span comes with the kernels) */
#define WORK_KIND(w)                                                                        \
	((w) == W_KERNEL || (w) == W_GRAPH ? GT_KIND(KERNEL)                                \
	 : (w) == W_SET			    ? GT_KIND(MEMSET)                                \
					    : GT_KIND(MEMCPY))
#define RT_FOLD 0x1
#define RT_RANGE_BEGIN 0x2 /* --capture-range cudaProfilerApi: a window opens before it */
#define RT_RANGE_END   0x4 /* and closes after it */
#define RT_WAIT 0x8 /* a device wait: marked for the hang watchdog (inject/watchdog.h) */
#define RT_RESET 0x10 /* cudaDeviceReset: the CUDA-event timing's events die with the device */
/* The handle a wait waits on: its first argument (none for cudaDeviceSynchronize) */
#define RT_FIRST_(a, ...) a
#define RT_WAITED(...) ((uintptr_t)(RT_FIRST_(__VA_ARGS__ __VA_OPT__(,) NULL)))

/* inject/dlsym.c: what the real dlsym found, while wrapper_for is asked */
extern GT_HIDDEN GT_TLS void *gt_dlsym_found;

/* Host-only calls: X(name, params, args, flags) */
#define RT_CALLS(X)                                                                         \
	X(cudaProfilerStart, (void), (), RT_RANGE_BEGIN)                                    \
	X(cudaProfilerStop, (void), (), RT_RANGE_END)                                       \
	X(cudaMalloc, (void **p, size_t n), (p, n), 0)                                      \
	X(cudaFree, (void *p), (p), 0)                                                      \
	X(cudaMallocHost, (void **p, size_t n), (p, n), 0)                                  \
	X(cudaFreeHost, (void *p), (p), 0)                                                  \
	X(cudaHostAlloc, (void **p, size_t n, unsigned f), (p, n, f), 0)                    \
	X(cudaHostRegister, (void *p, size_t n, unsigned f), (p, n, f), 0)                  \
	X(cudaHostUnregister, (void *p), (p), 0)                                            \
	X(cudaMallocManaged, (void **p, size_t n, unsigned f), (p, n, f), 0)                \
	X(cudaMallocPitch, (void **p, size_t *pitch, size_t w, size_t h), (p, pitch, w, h), 0) \
	X(cudaMallocAsync, (void **p, size_t n, void *s), (p, n, s), 0)                     \
	X(cudaMallocAsync_ptsz, (void **p, size_t n, void *s), (p, n, s), 0)                \
	X(cudaFreeAsync, (void *p, void *s), (p, s), 0)                                     \
	X(cudaFreeAsync_ptsz, (void *p, void *s), (p, s), 0)                                \
	X(cudaMemGetInfo, (size_t *f, size_t *t), (f, t), 0)                                \
	X(cudaSetDevice, (int d), (d), 0)                                                   \
	X(cudaGetDevice, (int *d), (d), RT_FOLD)                                            \
	X(cudaGetDeviceCount, (int *n), (n), 0)                                             \
	X(cudaGetDeviceProperties, (void *prop, int d), (prop, d), 0)                       \
	X(cudaGetDeviceProperties_v2, (void *prop, int d), (prop, d), 0)                    \
	X(cudaDeviceGetAttribute, (int *v, int attr, int d), (v, attr, d), RT_FOLD)         \
	X(cudaDeviceSynchronize, (void), (), RT_WAIT)                                       \
	X(cudaDeviceReset, (void), (), RT_RESET)                                            \
	X(cudaSetDeviceFlags, (unsigned f), (f), 0)                                         \
	X(cudaGetLastError, (void), (), RT_FOLD)                                            \
	X(cudaPeekAtLastError, (void), (), RT_FOLD)                                         \
	X(cudaDriverGetVersion, (int *v), (v), RT_FOLD)                                     \
	X(cudaRuntimeGetVersion, (int *v), (v), RT_FOLD)                                    \
	X(cudaStreamCreate, (void **s), (s), 0)                                             \
	X(cudaStreamCreateWithFlags, (void **s, unsigned f), (s, f), 0)                     \
	X(cudaStreamCreateWithPriority, (void **s, unsigned f, int p), (s, f, p), 0)        \
	X(cudaStreamDestroy, (void *s), (s), 0)                                             \
	X(cudaStreamSynchronize, (void *s), (s), RT_WAIT)                                   \
	X(cudaStreamSynchronize_ptsz, (void *s), (s), RT_WAIT)                              \
	X(cudaStreamGetId, (void *s, unsigned long long *id), (s, id), 0)                   \
	X(cudaStreamGetId_ptsz, (void *s, unsigned long long *id), (s, id), 0)              \
	X(cudaStreamQuery, (void *s), (s), 0)                                               \
	X(cudaStreamQuery_ptsz, (void *s), (s), 0)                                          \
	X(cudaStreamWaitEvent, (void *s, void *e, unsigned f), (s, e, f), 0)                \
	X(cudaLaunchHostFunc, (void *s, void *fn, void *u), (s, fn, u), 0)                  \
	X(cudaLaunchHostFunc_ptsz, (void *s, void *fn, void *u), (s, fn, u), 0)             \
	X(cudaStreamAddCallback, (void *s, void *cb, void *u, unsigned f), (s, cb, u, f), 0) \
	X(cudaStreamAddCallback_ptsz, (void *s, void *cb, void *u, unsigned f), (s, cb, u, f), 0) \
	X(cudaStreamWaitEvent_ptsz, (void *s, void *e, unsigned f), (s, e, f), 0)           \
	X(cudaStreamIsCapturing, (void *s, int *st), (s, st), RT_FOLD)                      \
	X(cudaStreamIsCapturing_ptsz, (void *s, int *st), (s, st), RT_FOLD)                 \
	X(cudaStreamBeginCapture, (void *s, int mode), (s, mode), 0)                        \
	X(cudaStreamBeginCapture_ptsz, (void *s, int mode), (s, mode), 0)                   \
	X(cudaStreamEndCapture, (void *s, void **g), (s, g), 0)                             \
	X(cudaStreamEndCapture_ptsz, (void *s, void **g), (s, g), 0)                        \
	X(cudaEventCreate, (void **e), (e), 0)                                              \
	X(cudaEventCreateWithFlags, (void **e, unsigned f), (e, f), 0)                      \
	X(cudaEventRecord, (void *e, void *s), (e, s), 0)                                   \
	X(cudaEventRecord_ptsz, (void *e, void *s), (e, s), 0)                              \
	X(cudaEventQuery, (void *e), (e), 0)                                                \
	X(cudaEventSynchronize, (void *e), (e), RT_WAIT)                                    \
	X(cudaEventElapsedTime, (float *ms, void *a, void *b), (ms, a, b), 0)               \
	X(cudaEventDestroy, (void *e), (e), 0)                                              \
	X(cudaGraphInstantiate, (void **x, void *g, unsigned long long f), (x, g, f), 0)   \
	X(cudaGraphInstantiateWithFlags, (void **x, void *g, unsigned long long f), (x, g, f), 0) \
	X(cudaGraphInstantiateWithParams, (void **x, void *g, void *p), (x, g, p), 0)       \
	X(cudaGraphInstantiateWithParams_ptsz, (void **x, void *g, void *p), (x, g, p), 0)  \
	X(cudaGraphGetNodes, (void *g, void **n, size_t *c), (g, n, c), 0)                  \
	X(cudaGraphDestroy, (void *g), (g), 0)                                              \
	X(cudaGraphExecDestroy, (void *g), (g), 0)                                          \
	X(cudaGraphUpload, (void *g, void *s), (g, s), 0)                                   \
	X(cudaGraphUpload_ptsz, (void *g, void *s), (g, s), 0)                              \
	X(cudaFuncGetAttributes, (void *attr, const void *f), (attr, f), RT_FOLD)           \
	X(cudaFuncSetAttribute, (const void *f, int attr, int v), (f, attr, v), 0)          \
	X(cudaDeviceCanAccessPeer, (int *c, int d, int p), (c, d, p), 0)                    \
	X(cudaDeviceEnablePeerAccess, (int p, unsigned f), (p, f), 0)                       \
	X(cudaDeviceDisablePeerAccess, (int p), (p), 0)                                     \
	X(cudaPointerGetAttributes, (void *attr, const void *p), (attr, p), RT_FOLD)

/* Calls that put work on a device (CUDA 13's <<<>>> is __cudaLaunchKernel, with
 * a kernel handle from __cudaGetKernel):
 * L(name, params, args, work, per_thread, stream, bytes, copy kind, kernel) */
#define KPARAMS (const void *f, struct gt_dim3 g, struct gt_dim3 b, void **a, size_t sm, void *s)
#define RT_LAUNCHES(L)                                                                      \
	L(cudaLaunchKernel, KPARAMS, (f, g, b, a, sm, s), W_KERNEL, 0, s, 0, 0, KLAUNCH(f))  \
	L(cudaLaunchKernel_ptsz, KPARAMS, (f, g, b, a, sm, s), W_KERNEL, 1, s, 0, 0, KLAUNCH(f)) \
	L(cudaLaunchCooperativeKernel, KPARAMS, (f, g, b, a, sm, s), W_KERNEL, 0, s, 0, 0,  \
	  KLAUNCH(f))                                                                       \
	L(cudaLaunchCooperativeKernel_ptsz, KPARAMS, (f, g, b, a, sm, s), W_KERNEL, 1, s, 0, 0, \
	  KLAUNCH(f))                                                                       \
	L(__cudaLaunchKernel, KPARAMS, (f, g, b, a, sm, s), W_KERNEL, 0, s, 0, 0,           \
	  KLAUNCH(kernel_host(f)))                                                          \
	L(__cudaLaunchKernel_ptsz, KPARAMS, (f, g, b, a, sm, s), W_KERNEL, 1, s, 0, 0,      \
	  KLAUNCH(kernel_host(f)))                                                          \
	L(cudaLaunchKernelExC, (const void *cfg, const void *f, void **a), (cfg, f, a),     \
	  W_KERNEL, 0, launch_config_stream(cfg), 0, 0, KLAUNCH_CFG(cfg, f))                \
	L(cudaLaunchKernelExC_ptsz, (const void *cfg, const void *f, void **a), (cfg, f, a), \
	  W_KERNEL, 1, launch_config_stream(cfg), 0, 0, KLAUNCH_CFG(cfg, f))                \
	L(cudaMemcpy, (void *d, const void *s, size_t n, int k), (d, s, n, k), W_COPY_SYNC, 0, \
	  NULL, n, k, NULL)                                                                 \
	L(cudaMemcpy_ptds, (void *d, const void *s, size_t n, int k), (d, s, n, k),         \
	  W_COPY_SYNC, 1, NULL, n, k, NULL)                                                 \
	L(cudaMemcpyAsync, (void *d, const void *s, size_t n, int k, void *st),             \
	  (d, s, n, k, st), W_COPY, 0, st, n, k, NULL)                                      \
	L(cudaMemcpyAsync_ptsz, (void *d, const void *s, size_t n, int k, void *st),        \
	  (d, s, n, k, st), W_COPY, 1, st, n, k, NULL)                                      \
	L(cudaMemcpy2D, (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int k), \
	  (d, dp, s, sp, w, h, k), W_COPY_SYNC, 0, NULL, w * h, k, NULL)                    \
	L(cudaMemcpy2D_ptds,                                                                \
	  (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int k),        \
	  (d, dp, s, sp, w, h, k), W_COPY_SYNC, 1, NULL, w * h, k, NULL)                    \
	L(cudaMemcpy2DAsync,                                                                \
	  (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int k, void *st), \
	  (d, dp, s, sp, w, h, k, st), W_COPY, 0, st, w * h, k, NULL)                       \
	L(cudaMemcpy2DAsync_ptsz,                                                           \
	  (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int k, void *st), \
	  (d, dp, s, sp, w, h, k, st), W_COPY, 1, st, w * h, k, NULL)                       \
	L(cudaMemcpyPeer, (void *d, int dd, const void *s, int sd, size_t n), (d, dd, s, sd, n), \
	  W_COPY_PEER, 0, NULL, n, PEER_KIND(sd, dd), NULL)                                 \
	L(cudaMemcpyPeerAsync, (void *d, int dd, const void *s, int sd, size_t n, void *st), \
	  (d, dd, s, sd, n, st), W_COPY_PEER, 0, st, n, PEER_KIND(sd, dd), NULL)            \
	L(cudaMemcpyToSymbol, (const void *y, const void *s, size_t n, size_t o, int k),    \
	  (y, s, n, o, k), W_COPY_SYNC, 0, NULL, n, k, NULL)                                \
	L(cudaMemcpyToSymbol_ptds, (const void *y, const void *s, size_t n, size_t o, int k), \
	  (y, s, n, o, k), W_COPY_SYNC, 1, NULL, n, k, NULL)                                \
	L(cudaMemcpyFromSymbol, (void *d, const void *y, size_t n, size_t o, int k),        \
	  (d, y, n, o, k), W_COPY_SYNC, 0, NULL, n, k, NULL)                                \
	L(cudaMemcpyFromSymbol_ptds, (void *d, const void *y, size_t n, size_t o, int k),   \
	  (d, y, n, o, k), W_COPY_SYNC, 1, NULL, n, k, NULL)                                \
	L(cudaMemcpyToSymbolAsync,                                                          \
	  (const void *y, const void *s, size_t n, size_t o, int k, void *st),              \
	  (y, s, n, o, k, st), W_COPY, 0, st, n, k, NULL)                                   \
	L(cudaMemcpyToSymbolAsync_ptsz,                                                     \
	  (const void *y, const void *s, size_t n, size_t o, int k, void *st),              \
	  (y, s, n, o, k, st), W_COPY, 1, st, n, k, NULL)                                   \
	L(cudaMemcpyFromSymbolAsync,                                                        \
	  (void *d, const void *y, size_t n, size_t o, int k, void *st),                    \
	  (d, y, n, o, k, st), W_COPY, 0, st, n, k, NULL)                                   \
	L(cudaMemcpyFromSymbolAsync_ptsz,                                                   \
	  (void *d, const void *y, size_t n, size_t o, int k, void *st),                    \
	  (d, y, n, o, k, st), W_COPY, 1, st, n, k, NULL)                                   \
	L(cudaMemset, (void *p, int v, size_t n), (p, v, n), W_SET, 0, NULL, n, 0, NULL)    \
	L(cudaMemset_ptds, (void *p, int v, size_t n), (p, v, n), W_SET, 1, NULL, n, 0, NULL) \
	L(cudaMemsetAsync, (void *p, int v, size_t n, void *s), (p, v, n, s), W_SET, 0, s, n, \
	  0, NULL)                                                                          \
	L(cudaMemsetAsync_ptsz, (void *p, int v, size_t n, void *s), (p, v, n, s), W_SET, 1, s, \
	  n, 0, NULL)                                                                       \
	L(cudaMemset2D, (void *p, size_t pitch, int v, size_t w, size_t h), (p, pitch, v, w, h), \
	  W_SET, 0, NULL, w * h, 0, NULL)                                                   \
	L(cudaMemset2D_ptds, (void *p, size_t pitch, int v, size_t w, size_t h),            \
	  (p, pitch, v, w, h), W_SET, 1, NULL, w * h, 0, NULL)                              \
	L(cudaMemset2DAsync, (void *p, size_t pitch, int v, size_t w, size_t h, void *s),   \
	  (p, pitch, v, w, h, s), W_SET, 0, s, w * h, 0, NULL)                              \
	L(cudaMemset2DAsync_ptsz, (void *p, size_t pitch, int v, size_t w, size_t h, void *s), \
	  (p, pitch, v, w, h, s), W_SET, 1, s, w * h, 0, NULL)                              \
	L(cudaMemcpy3D, (const struct gt_memcpy3d *p), (p), W_COPY_SYNC, 0, NULL,           \
	  copy3d_bytes(p), p ? p->kind : 4, NULL)                                           \
	L(cudaMemcpy3D_ptds, (const struct gt_memcpy3d *p), (p), W_COPY_SYNC, 1, NULL,      \
	  copy3d_bytes(p), p ? p->kind : 4, NULL)                                           \
	L(cudaMemcpy3DAsync, (const struct gt_memcpy3d *p, void *st), (p, st), W_COPY, 0, st, \
	  copy3d_bytes(p), p ? p->kind : 4, NULL)                                           \
	L(cudaMemcpy3DAsync_ptsz, (const struct gt_memcpy3d *p, void *st), (p, st), W_COPY, 1, \
	  st, copy3d_bytes(p), p ? p->kind : 4, NULL)                                       \
	L(cudaMemset3D, (struct gt_pitched_ptr p, int v, struct gt_extent e), (p, v, e), W_SET, \
	  0, NULL, e.width * e.height * e.depth, 0, NULL)                                   \
	L(cudaMemset3D_ptds, (struct gt_pitched_ptr p, int v, struct gt_extent e), (p, v, e), \
	  W_SET, 1, NULL, e.width * e.height * e.depth, 0, NULL)                            \
	L(cudaMemset3DAsync, (struct gt_pitched_ptr p, int v, struct gt_extent e, void *s), \
	  (p, v, e, s), W_SET, 0, s, e.width * e.height * e.depth, 0, NULL)                 \
	L(cudaMemset3DAsync_ptsz, (struct gt_pitched_ptr p, int v, struct gt_extent e, void *s), \
	  (p, v, e, s), W_SET, 1, s, e.width * e.height * e.depth, 0, NULL)                 \
	L(cudaGraphLaunch, (void *g, void *s), (g, s), W_GRAPH, 0, s, 0, 0, NULL)           \
	L(cudaGraphLaunch_ptsz, (void *g, void *s), (g, s), W_GRAPH, 1, s, 0, 0, NULL)

/* A 3D copy's bytes: its extent, in bytes between linear memory; where a side is a
 * CUDA array its width counts elements of a size the call does not say: 0, unknown */
static uint64_t copy3d_bytes(const struct gt_memcpy3d *p)
{
	if (!p || p->src_array || p->dst_array)
		return 0;
	return (uint64_t)p->extent.width * p->extent.height * p->extent.depth;
}

/* A peer copy's kind column: its source and destination devices */
#define PEER_KIND(src, dst) ((int)(((unsigned)(src) & 0xffff) << 16 | ((unsigned)(dst) & 0xffff)))

/* cudaLaunchConfig_t: dim3 grid, dim3 block, size_t dynamicSmemBytes, then the stream */
static void *launch_config_stream(const void *cfg)
{
	void *s = NULL;

	if (cfg)
		memcpy(&s, (const char *)cfg + 32, sizeof(s));
	return s;
}

/* A kernel launch as the event fallback draws it (work_info): on the
 * wrapper's stack, read only when the launch is timed. */
struct kernel_launch {
	const void *func;
	struct gt_dim3 grid, block;
	size_t shared; /* dynamic shared memory */
};
/* the wrappers' own grid (g), block (b) and dynamic shared memory (sm) */
#define KLAUNCH(fn) (&(struct kernel_launch){ .func = (fn), .grid = g, .block = b, .shared = sm })
#define KLAUNCH_CFG(cfg, fn) (&(struct kernel_launch){ .func = (fn), .grid = config_dim(cfg, 0), \
							.block = config_dim(cfg, 12),            \
							.shared = config_shared(cfg) })

static struct gt_dim3 config_dim(const void *cfg, size_t at)
{
	struct gt_dim3 d = { 0, 0, 0 };

	if (cfg)
		memcpy(&d, (const char *)cfg + at, sizeof(d));
	return d;
}

static size_t config_shared(const void *cfg)
{
	size_t sm = 0;

	if (cfg)
		memcpy(&sm, (const char *)cfg + 24, sizeof(sm));
	return sm;
}

/* ---- CUDA 13 kernel handles (cudaKernel_t) and their host stubs ---- */

#define KMAP_MAX 4096
struct kmap_entry {
	_Atomic(const void *) kernel;
	_Atomic(const void *) func;
};
GT_TABLE(struct kmap_entry, kmap, KMAP_MAX);

static unsigned kmap_slot(const void *kernel)
{
	return (unsigned)((((uintptr_t)kernel >> 4) * 0x9e3779b97f4a7c15ull) >> 52) % KMAP_MAX;
}

static void kernel_note(const void *kernel, const void *func)
{
	for (unsigned i = 0, s = kmap_slot(kernel); i < 16; i++, s = (s + 1) % KMAP_MAX) {
		const void *expect = NULL;
		if (atomic_compare_exchange_strong(&kmap[s].kernel, &expect, kernel) ||
		    expect == kernel) {
			atomic_store_explicit(&kmap[s].func, func, memory_order_release);
			return;
		}
	}
}

/* The host stub a kernel handle was made for (names the kernel), or the
 * handle itself when it was made before us. */
static const void *kernel_host(const void *kernel)
{
	for (unsigned i = 0, s = kmap_slot(kernel); i < 16; i++, s = (s + 1) % KMAP_MAX) {
		const void *k = atomic_load_explicit(&kmap[s].kernel, memory_order_relaxed);
		if (k == kernel)
			return atomic_load_explicit(&kmap[s].func, memory_order_acquire);
		if (!k)
			break;
	}
	return kernel;
}

/* ---- the span of one call ---- */

struct rt_call {
	uint64_t start, end, corr;
	uint32_t name;
	bool launch, events;
	bool api; /* its span is drawn (--activities runtime) */
	bool armed; /* inside the real call: see rt_unwound */
	bool cupti_armed; /* ... whose span CUPTI's callbacks make */
	int reset; /* the device of a cudaDeviceReset begun, else -1 (event timing) */
	bool start_cupti; /* start CUPTI once this call returns (rt_after) */
	bool waiting; /* inside a device wait, marked for the watchdog */
	void *token; /* a launch's event slot while inside it (event timing) */
	uint32_t pushed; /* external correlation pushed around the real call */
};

static uint32_t api_name(_Atomic uint32_t *cache, const char *symbol)
{
	uint32_t id = atomic_load_explicit(cache, memory_order_relaxed);
	char base[96];

	if (gt_likely(id))
		return id;
	/* one name for cudaMemcpy and cudaMemcpy_ptds, as CUPTI reports them */
	snprintf(base, sizeof(base), "%.*s", (int)cupti__api_base_len(symbol), symbol);
	id = gt_str_intern(base);
	atomic_store_explicit(cache, id, memory_order_relaxed);
	return id;
}

/* work: the GT_KIND of what a launch, copy or fill queues (0: no work) */
static bool rt_begin(struct rt_call *c, _Atomic uint32_t *name, const char *symbol,
		     unsigned flags, unsigned work)
{
	bool launch = work != 0;
	int st;

	gt_ensure_init();
	if (!cupti_backend_on)
		return false;
	/* Another tool's CUDA_INJECTION64_PATH: CUPTI starts after the first
	 * call, which ran cuInit and with it the tool's injection (it holds
	 * CUPTI first, as it would untraced). */
	st = atomic_load_explicit(&cupti_state, memory_order_relaxed);
	c->start_cupti = gt_unlikely(st == CUPTI_OFF) &&
			 !atomic_load_explicit(&cupti_injection_ours, memory_order_acquire) &&
			 !cupti_self && !gt_in_tracer;
	if (atomic_load_explicit(&cupti_rt_callbacks_on, memory_order_relaxed) || cupti_self ||
	    gt_in_tracer || cupti_rt_wrapper_owns || !gt_tracing())
		return false;
	/* Without CUPTI the work is timed here too: as CUPTI's kinds, the device
	 * work's kind decides it, not whether the call's span is drawn (it was
	 * both ways: --activities kernel recorded nothing, runtime every kernel) */
	c->api = gt_cfg.kinds & GT_KIND(RUNTIME);
	c->events = launch && (gt_cfg.kinds & work) && cupti__event_timing();
	if (!c->api && !c->events)
		return false;
	/* CUDA 13's <<<>>> calls __cudaLaunchKernel, which CUPTI reports as cudaLaunchKernel
	 * (cbid 211 on an H200, CUDA 13.0): one name for the call, with CUPTI or without */
	c->name = api_name(name, launch && symbol[0] == '_' ? symbol + 2 : symbol);
	if (flags & RT_FOLD) {
		cupti__fold_count(c->name);
		return false;
	}
	c->launch = launch;
	c->corr = gt_corr_next();
	cupti_rt_wrapper_owns++;
	c->start = gt_clock_ns();
	c->armed = true;
	return true;
}

static void rt_after(struct rt_call *c)
{
	if (gt_unlikely(c->start_cupti))
		cupti__start("first CUDA runtime call");
}

static void rt_end(struct rt_call *c, cuda_err r)
{
	uint64_t end = c->end = gt_clock_ns();
	uint64_t stack = 0;

	c->armed = false;
	cupti_rt_wrapper_owns--;
	if (!c->api)
		return;
	if (gt_cfg.stacks && (c->launch || gt_cfg.stacks_all))
		stack = gt_stack_capture();
	cupti__emit_api_span(c->start, end, c->corr, c->name, true, c->launch, r, stack);
}

/*
 * A call ended by a forced unwind (pthread_cancel() while the runtime
 * waits) never reaches rt_end: the wrapper's frame runs this as it goes
 * (a cleanup attribute; the library is built with -fexceptions). The call
 * is recorded, marked cancelled, and the thread's later calls (its cleanup
 * handlers') are traced again.
 */
static void rt_unwound(struct rt_call *c)
{
	if (gt_unlikely(c->waiting))
		gt_wait_unwound(); /* cancelled inside a device wait: in it no more */
	if (gt_unlikely(c->reset >= 0))
		cupti__events_reset_end(c->reset); /* cancelled in the reset */
	if (gt_unlikely(c->token))
		cupti__events_unwound(c->token); /* cancelled in a timed launch */
	/* a plug-in's pushed id is popped: its pop after the call never comes */
	gt_ext_corr_pop(c->pushed);
	if (gt_unlikely(c->cupti_armed)) {
		gt_unwound_stack();
		cupti__api_unwound();
	}
	if (gt_likely(!c->armed))
		return;
	gt_unwound_stack();
	cupti_rt_wrapper_owns--;
	if (c->api)
		gt_emit_cancelled(c->start, c->corr, c->name, GT_S_CAT_CUDA_RUNTIME, c->launch);
}

#define RT_CALL                                                                             \
	struct rt_call gt_c __attribute__((cleanup(rt_unwound))) = { .armed = false,        \
								      .cupti_armed = false, \
								      .reset = -1 }

/* A call this wrapper draws no span of, passed on: armed for rt_unwound when
 * CUPTI's callbacks draw it, as their exit never comes on a forced unwind
 * (a cancelled blocking cudaMemcpy, cudaDeviceSynchronize ...). */
#define RT_PASS_ON(args)                                                                    \
	do {                                                                                \
		gt_c.cupti_armed = atomic_load_explicit(&cupti_rt_callbacks_on,             \
							memory_order_relaxed);              \
		gt_r = gt_fn args;                                                          \
		gt_c.cupti_armed = false;                                                   \
	} while (0)

/* ---- device work described for the event fallback ---- */

static uint32_t kernel_of(const void *func, uint32_t *registers, uint32_t *shared_static);

static void kernel_info(struct cupti_launch_info *li, const struct kernel_launch *k)
{
	uint32_t shared_static;

	li->cat = GT_S_CAT_KERNEL;
	li->name = kernel_of(k->func, &li->registers, &shared_static);
	memcpy(li->grid, &k->grid, sizeof(li->grid));
	memcpy(li->block, &k->block, sizeof(li->block));
	li->shared_memory = (uint64_t)k->shared + shared_static;
}

static void work_info(struct cupti_launch_info *li, enum rt_work work, uint64_t bytes, int kind,
		      const struct kernel_launch *k, uint64_t call_end)
{
	static const char *const kinds[] = { "HtoH", "HtoD", "DtoH", "DtoD", "Default" };
	static _Atomic uint32_t kind_ids[5], copy_ids[5];
	char s[48];

	*li = (struct cupti_launch_info){ .bytes = bytes };
	switch (work) {
	case W_KERNEL:
		kernel_info(li, k);
		break;
	case W_COPY_PEER:
		/* named as CUPTI's records of them are, with both devices; within one
		 * device, a DtoD copy */
		if ((int)((unsigned)kind >> 16) != (kind & 0xffff)) {
			li->cat = GT_S_CAT_GPU_MEMCPY;
			li->kind = cupti__key("PtoP");
			li->name = cupti__key("Memcpy PtoP");
			li->peer = true;
			li->src_device = (int)((unsigned)kind >> 16);
			li->dst_device = kind & 0xffff;
			break;
		}
		kind = 3;
		__attribute__((fallthrough));
	case W_COPY:
	case W_COPY_SYNC:
		kind = kind >= 0 && kind < 5 ? kind : 4;
		/* A synchronous copy into host memory has completed when its call
		 * returns (CUDA's "API synchronization behavior"); one into device
		 * memory may return before its DMA ends, as a memset of it may
		 * before it runs: theirs can end later. */
		if (work == W_COPY_SYNC && (kind == 0 || kind == 2))
			li->done_by = call_end;
		li->cat = GT_S_CAT_GPU_MEMCPY;
		if (!atomic_load(&kind_ids[kind])) {
			snprintf(s, sizeof(s), "Memcpy %s", kinds[kind]);
			atomic_store(&copy_ids[kind], gt_str_intern(s));
			atomic_store(&kind_ids[kind], gt_str_intern(kinds[kind]));
		}
		li->kind = atomic_load(&kind_ids[kind]);
		li->name = atomic_load(&copy_ids[kind]);
		break;
	case W_SET:
		li->cat = GT_S_CAT_GPU_MEMSET;
		li->name = cupti__key("Memset");
		break;
	case W_GRAPH:
		li->cat = cupti__key("cuda_graph");
		li->name = cupti__key("CUDA graph");
		break;
	}
}

/* Kernel names by host stub address: cudaFuncGetName (CUDA 12.3+), and
 * what cudaFuncGetAttributes says of them, cached. */
#define KFUNC_MAX 2048
struct kfunc_entry {
	_Atomic(const void *) func;
	_Atomic uint32_t id; /* set last: the others are then read */
	_Atomic uint32_t registers, shared_static;
};
GT_TABLE(struct kfunc_entry, kfuncs, KFUNC_MAX);

/* The leading members of cudaFuncAttributes, which grows with CUDA: room
 * for its later members. */
struct func_attributes {
	size_t shared_static, constant, local;
	int max_threads_per_block, registers;
	char later[512];
};

static void *rt_sym_once(_Atomic(void *) *cache, const char *symbol)
{
	void *sym = atomic_load_explicit(cache, memory_order_relaxed);

	if (!sym) {
		/* threads' first launches ask at once: (void *)1 is looked for and missing */
		sym = cupti__rt_real(symbol) ?: (void *)1;
		atomic_store_explicit(cache, sym, memory_order_relaxed);
	}
	return sym == (void *)1 ? NULL : sym;
}

/* Registers per thread (0: not told) and static shared memory of a kernel,
 * once per kernel (cold). A failed ask leaves no error for the program's
 * next cudaGetLastError, unless one was there before it. */
static void func_attributes(const void *func, uint32_t *registers, uint32_t *shared_static)
{
	static _Atomic(void *) get_sym, peek_sym, last_sym;
	int (*get)(struct func_attributes *, const void *) = rt_sym_once(&get_sym,
									 "cudaFuncGetAttributes");
	int (*peek)(void) = rt_sym_once(&peek_sym, "cudaPeekAtLastError");
	int (*last)(void) = rt_sym_once(&last_sym, "cudaGetLastError");
	struct func_attributes attr = { 0 };

	*registers = *shared_static = 0;
	if (!get || !peek || !last)
		return;
	cupti_self++;
	bool clean = !peek();
	if (!get(&attr, func) && attr.registers > 0) {
		*registers = (uint32_t)attr.registers;
		*shared_static = (uint32_t)attr.shared_static;
	} else if (clean) {
		last();
	}
	cupti_self--;
}

static uint32_t kernel_of(const void *func, uint32_t *registers, uint32_t *shared_static)
{
	static _Atomic(void *) get_name_sym;
	int (*get_name)(const char **, const void *);
	uintptr_t h = ((uintptr_t)func >> 4) * 0x9e3779b97f4a7c15ull;
	const char *name = NULL;
	char buf[64], *pretty;
	uint32_t id;

	for (unsigned i = 0; i < 8; i++) {
		unsigned s = (unsigned)((h + i) % KFUNC_MAX);
		if (atomic_load_explicit(&kfuncs[s].func, memory_order_acquire) == func &&
		    (id = atomic_load_explicit(&kfuncs[s].id, memory_order_acquire))) {
			*registers = atomic_load_explicit(&kfuncs[s].registers, memory_order_relaxed);
			*shared_static = atomic_load_explicit(&kfuncs[s].shared_static,
							      memory_order_relaxed);
			return id;
		}
	}
	/* cold: the first launch of this kernel */
	get_name = rt_sym_once(&get_name_sym, "cudaFuncGetName");
	cupti_self++;
	if (!get_name || get_name(&name, func) || !name || !*name) {
		snprintf(buf, sizeof(buf), "kernel %p", func);
		name = buf;
	}
	cupti_self--;
	pretty = cupti__demangle(name);
	id = gt_str_intern(pretty ? pretty : name);
	free(pretty);
	func_attributes(func, registers, shared_static);
	for (unsigned i = 0; i < 8; i++) {
		unsigned s = (unsigned)((h + i) % KFUNC_MAX);
		const void *expect = NULL;
		if (atomic_compare_exchange_strong(&kfuncs[s].func, &expect, func) ||
		    expect == func) {
			atomic_store_explicit(&kfuncs[s].registers, *registers, memory_order_relaxed);
			atomic_store_explicit(&kfuncs[s].shared_static, *shared_static,
					      memory_order_relaxed);
			atomic_store_explicit(&kfuncs[s].id, id, memory_order_release);
			break;
		}
	}
	return id;
}

/* ---- the wrappers ---- */

/* cudaProfilerStart/Stop under --capture-range cudaProfilerApi: the window
 * holds the calls themselves */
static void rt_range(unsigned flags, bool after)
{
	if (gt_likely(gt_cfg.capture_range != GT_RANGE_PROFILER))
		return;
	/* the driver's cuProfilerStart/Stop inside (CUPTI's callbacks) are this
	 * call's: only the outermost acts */
	if (!after ? cupti_profiler_depth++ : cupti_profiler_depth && --cupti_profiler_depth)
		return;
	if ((flags & RT_RANGE_BEGIN) && !after)
		capture__range_begin(gt_clock_ns());
	else if ((flags & RT_RANGE_END) && after)
		capture__range_end(gt_clock_ns(), 0);
}

/*
 * One wrapper per runtime, told apart by the symbol version every libcudart
 * gives its functions (cudaMalloc@libcudart.so.12): the dynamic linker binds
 * a program's or library's versioned reference to the wrapper of its own
 * runtime only, and that wrapper calls that runtime's function. Two runtimes
 * in one process (a CUDA 12 library in a CUDA 13 program, PyTorch next to
 * another framework) never cross. References without a version (no libcudart
 * since CUDA 11 makes them) are not wrapped; CUPTI still sees those calls.
 */
#define RT_MAJORS(M) M(0, "libcudart.so.11.0") M(1, "libcudart.so.12") M(2, "libcudart.so.13")
#define RT_NMAJORS 3

static const char *const rt_versions[RT_NMAJORS] = {
#define RT_VERSION_NAME(m, ver) ver,
	RT_MAJORS(RT_VERSION_NAME)
#undef RT_VERSION_NAME
};

static void *resolve(_Atomic(void *) *cache, const char *symbol, unsigned major)
{
	void *p = atomic_load_explicit(cache, memory_order_relaxed);

	if (gt_likely(p))
		return p;
	p = cupti__rt_real_version(symbol, rt_versions[major]);
	if (p)
		atomic_store_explicit(cache, p, memory_order_relaxed);
	return p;
}

/* The wrapper of one runtime: exported only as name@<its version>. */
#define RT_WRAP_ONE(m, ver, name, params, args, flags)                                      \
	__attribute__((symver(#name "@" ver))) GT_EXPORT cuda_err gt_rt##m##_##name params  \
	{                                                                                   \
		name##_fn gt_fn = (name##_fn)resolve(&name##_real[m], #name, m);            \
		RT_CALL;                                                                    \
		cuda_err gt_r;                                                              \
                                                                                            \
		if (!gt_fn)                                                                 \
			return RT_NO_RUNTIME;                                               \
		if ((flags) & (RT_RANGE_BEGIN | RT_RANGE_END))                              \
			rt_range(flags, false);                                             \
		if ((flags) & RT_WAIT) {                                                    \
			gt_wait_enter(api_name(&name##_name, #name), RT_WAITED args);       \
			gt_c.waiting = true;                                                \
		}                                                                           \
		uint64_t gt_t0 = (flags) & RT_RESET ? gt_clock_ns() : 0;                   \
		int gt_reset = gt_c.reset = (flags) & RT_RESET ? cupti__events_reset_begin() \
							       : -1;                        \
		if (rt_begin(&gt_c, &name##_name, #name, flags, 0)) {                       \
			if ((flags) & RT_RESET) {                                           \
				/* our wait for its launches is the reset's own; a       \
				 * cancel held off there lands here, in the call */      \
				gt_c.start = gt_t0;                                         \
				pthread_testcancel();                                       \
			}                                                                   \
			gt_r = gt_fn args;                                                  \
			rt_end(&gt_c, gt_r);                                                \
		} else {                                                                    \
			RT_PASS_ON(args);                                                   \
		}                                                                           \
		if ((flags) & RT_WAIT) {                                                    \
			gt_c.waiting = false;                                               \
			gt_wait_leave();                                                    \
		}                                                                           \
		if ((flags) & RT_RESET) {                                                   \
			gt_c.reset = -1;                                                    \
			cupti__events_reset_end(gt_reset);                                  \
		}                                                                           \
		rt_after(&gt_c);                                                            \
		if ((flags) & (RT_RANGE_BEGIN | RT_RANGE_END))                              \
			rt_range(flags, true);                                              \
		return gt_r;                                                                \
	}
/* A local name for one runtime's wrapper: its address is then taken with no
 * relocation at all (cupti__rt_wrapper_for), not through the GOT as the
 * exported name's would be. */
#define RT_SELF(m, name)                                                                    \
	static __typeof__(gt_rt##m##_##name) rt_self##m##_##name                            \
		__attribute__((alias("gt_rt" #m "_" #name)));
#define RT_WRAP(name, params, args, flags)                                                  \
	typedef cuda_err(*name##_fn) params;                                                \
	static _Atomic(void *) name##_real[RT_NMAJORS];                                     \
	static _Atomic uint32_t name##_name;                                                \
	RT_WRAP_ONE(0, "libcudart.so.11.0", name, params, args, flags)                      \
	RT_WRAP_ONE(1, "libcudart.so.12", name, params, args, flags)                        \
	RT_WRAP_ONE(2, "libcudart.so.13", name, params, args, flags)                        \
	RT_SELF(0, name) RT_SELF(1, name) RT_SELF(2, name)

#define RT_WRAP_LAUNCH_ONE(m, ver, name, params, args, work, per_thread, stream, bytes, kind, func) \
	__attribute__((symver(#name "@" ver))) GT_EXPORT cuda_err gt_rt##m##_##name params  \
	{                                                                                   \
		name##_fn gt_fn = (name##_fn)resolve(&name##_real[m], #name, m);            \
		struct cupti_launch_info gt_li;                                             \
		RT_CALL;                                                                    \
		void *gt_token = NULL;                                                      \
		cuda_err gt_r;                                                              \
		uint32_t gt_pushed;                                                         \
                                                                                            \
		if (!gt_fn)                                                                 \
			return RT_NO_RUNTIME;                                               \
		if (!rt_begin(&gt_c, &name##_name, #name, 0, WORK_KIND(work))) {            \
			RT_PASS_ON(args);                                                   \
			rt_after(&gt_c);                                                    \
			return gt_r;                                                        \
		}                                                                           \
		if (gt_c.events)                                                            \
			gt_token = cupti__events_before((void *)(stream), per_thread);      \
		gt_pushed = gt_c.pushed = gt_ext_corr_push(gt_c.corr);                      \
		gt_c.token = gt_token;                                                      \
		gt_r = gt_fn args;                                                          \
		gt_c.token = NULL;                                                          \
		gt_c.pushed = 0;                                                            \
		gt_token = cupti__events_end(gt_token, (void *)(stream), per_thread, gt_r); \
		gt_ext_corr_pop(gt_pushed);                                                 \
		rt_end(&gt_c, gt_r);                                                        \
		if (gt_token) {                                                             \
			work_info(&gt_li, work, bytes, kind, func, gt_c.end);               \
			cupti__events_after(gt_token, gt_c.corr, gt_c.start, &gt_li);       \
		}                                                                           \
		rt_after(&gt_c);                                                            \
		return gt_r;                                                                \
	}
#define RT_WRAP_LAUNCH(name, params, ...)                                                   \
	typedef cuda_err(*name##_fn) params;                                                \
	static _Atomic(void *) name##_real[RT_NMAJORS];                                     \
	static _Atomic uint32_t name##_name;                                                \
	RT_WRAP_LAUNCH_ONE(0, "libcudart.so.11.0", name, params, __VA_ARGS__)               \
	RT_WRAP_LAUNCH_ONE(1, "libcudart.so.12", name, params, __VA_ARGS__)                 \
	RT_WRAP_LAUNCH_ONE(2, "libcudart.so.13", name, params, __VA_ARGS__)               \
	RT_SELF(0, name) RT_SELF(1, name) RT_SELF(2, name)

RT_CALLS(RT_WRAP)
RT_LAUNCHES(RT_WRAP_LAUNCH)

/* nvcc's code asks for a kernel's handle once (CUDA 13): remember its stub. */
#define RT_WRAP_GET_KERNEL(m, ver, name, params, args, flags)                               \
	__attribute__((symver(#name "@" ver))) GT_EXPORT cuda_err gt_rt##m##_##name params  \
	{                                                                                   \
		name##_fn gt_fn = (name##_fn)resolve(&name##_real[m], #name, m);            \
		RT_CALL;                                                                    \
		cuda_err gt_r;                                                              \
                                                                                            \
		if (!gt_fn)                                                                 \
			return RT_NO_RUNTIME;                                               \
		gt_r = gt_fn args;                                                          \
		if (!gt_r && k)                                                             \
			kernel_note(*k, f);                                                 \
		if (rt_begin(&gt_c, &name##_name, #name, flags, 0))                         \
			rt_end(&gt_c, gt_r);                                                \
		rt_after(&gt_c);                                                            \
		return gt_r;                                                                \
	}
typedef cuda_err (*__cudaGetKernel_fn)(void **k, const void *f);
static _Atomic(void *) __cudaGetKernel_real[RT_NMAJORS];
static _Atomic uint32_t __cudaGetKernel_name;
RT_WRAP_GET_KERNEL(2, "libcudart.so.13", __cudaGetKernel, (void **k, const void *f), (k, f),
		   RT_FOLD)
RT_SELF(2, __cudaGetKernel)

/* Which runtime a function of the program's dlsym() belongs to: by its file's
 * name, else by its soname (a libcudart opened as libcudart.so, the toolkit's
 * link to it, as ctypes users do: dladdr names the path it was opened by). */
static int major_of(const void *fn)
{
	Dl_info info;
	struct link_map *l = NULL;
	const char *base, *soname;

	if (!fn || !dladdr1(fn, &info, (void **)&l, RTLD_DL_LINKMAP) || !info.dli_fname)
		return -1;
	base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	soname = l ? gt_soname(l->l_ld, l->l_addr) : NULL;
	for (int m = 0; m < RT_NMAJORS; m++)
		if (!strcmp(base, rt_versions[m]) || (soname && !strcmp(soname, rt_versions[m])))
			return m;
	return -1;
}

/* The wrapper of the runtime the program's dlsym found (one per major). */
static void *rt_pick(void *const fn[RT_NMAJORS])
{
	int m = major_of(gt_dlsym_found);

	return m >= 0 ? fn[m] : NULL;
}

/* dlsym(libcudart handle, "cudaXxx") by the program: the wrapper of that
 * libcudart's runtime. Compares, not a table of pointers: such a table is
 * relocated by the loader in every process at start, GPU or not (a page
 * copied per 4 KiB), and the wrappers' local names (RT_SELF) need none. */
void *cupti__rt_wrapper_for(const char *symbol)
{
	if (!symbol || (strncmp(symbol, "cuda", 4) && strncmp(symbol, "__cuda", 6)))
		return NULL;
#define RT_ENTRY(name, ...)                                                                \
	if (!strcmp(symbol, #name))                                                        \
		return rt_pick((void *const[RT_NMAJORS]){ (void *)rt_self0_##name,         \
							  (void *)rt_self1_##name,         \
							  (void *)rt_self2_##name });
	RT_CALLS(RT_ENTRY)
	RT_LAUNCHES(RT_ENTRY)
#undef RT_ENTRY
	if (!strcmp(symbol, "__cudaGetKernel"))
		return rt_pick((void *const[RT_NMAJORS]){ NULL, NULL,
							  (void *)rt_self2___cudaGetKernel });
	return NULL;
}
