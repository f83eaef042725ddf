// SPDX-License-Identifier: MIT
/*
 * Host API spans from CUPTI's runtime and driver callback domains. These
 * see every call, static cudart included (its driver calls bypass any
 * symbol interposition). Each call becomes one span on the calling thread,
 * emitted at its exit; its correlation is CUPTI's, so the device records
 * of the same call link to it. A driver call made inside a runtime call is
 * covered by the runtime span and not traced again.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cupti.h>

#include "backends/cuda/internal.h"
#include "inject/capture.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/cstr.h"
#include "inject/extcorr.h"
#include "inject/shim.h"
#include "inject/state.h"
#include "inject/stacks.h"
#include "inject/watchdog.h"
#include "inject/tables.h"

/* ---- per call-id facts, learned at the first call of each ---- */

#define CBID_MAX 4096
#define INFO_NAME_MASK 0xffffffffull
#define INFO_LAUNCH    (1ull << 32)
#define INFO_FOLDED    (1ull << 33)
#define INFO_KNOWN     (1ull << 34)

typedef _Atomic uint64_t cb_info_row[CBID_MAX];
GT_TABLE(cb_info_row, cb_info, 2); /* [driver, runtime][cbid] */

/*
 * Getters that programs call in tight loops (PyTorch asks for the current
 * device before most operations): one span each would bury the trace, so
 * they are counted instead (instants "folded CUDA API calls" at the end).
 * One list (inject/cstr.h): no pointers for the loader to relocate in every
 * process (README, "Overhead").
 */
static const char folded_names[] =
	/* runtime */
	"cudaGetDevice\0" "cudaGetDeviceCount\0" "cudaGetLastError\0" "cudaPeekAtLastError\0"
	"cudaDeviceGetAttribute\0" "cudaPointerGetAttributes\0" "cudaStreamIsCapturing\0"
	"cudaStreamGetCaptureInfo\0" "cudaThreadExchangeStreamCaptureMode\0" "cudaGetErrorString\0"
	"cudaGetErrorName\0" "cudaRuntimeGetVersion\0" "cudaDriverGetVersion\0"
	"cudaFuncGetAttributes\0" "cudaStreamGetPriority\0" "cudaStreamGetFlags\0"
	"cudaStreamGetDevice\0" "cudaGetDriverEntryPoint\0" "cudaGetDriverEntryPointByVersion\0"
	"cudaGetFuncBySymbol\0" "cudaGetKernel\0" "cudaOccupancyMaxActiveBlocksPerMultiprocessor\0"
	"cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags\0"
	/* what nvcc's code calls around each <<<>>> and at start-up (CUDA 13 reports it) */
	"__cudaPushCallConfiguration\0" "__cudaPopCallConfiguration\0" "__cudaGetKernel\0"
	"__cudaRegisterFatBinary\0" "__cudaRegisterFatBinaryEnd\0" "__cudaUnregisterFatBinary\0"
	"__cudaRegisterFunction\0" "__cudaRegisterVar\0" "__cudaRegisterHostVar\0"
	"__cudaRegisterManagedVar\0" "__cudaRegisterUnifiedTable\0" "__cudaInitModule\0"
	"__cudaGetProcAddress\0"
	/* driver */
	"cuCtxGetCurrent\0" "cuCtxSetCurrent\0" "cuCtxGetDevice\0" "cuCtxPushCurrent\0"
	"cuCtxPopCurrent\0" "cuDeviceGet\0" "cuDeviceGetCount\0" "cuDeviceGetAttribute\0"
	"cuPointerGetAttribute\0" "cuPointerGetAttributes\0" "cuGetProcAddress\0" "cuDriverGetVersion\0"
	"cuGetErrorString\0" "cuGetErrorName\0" "cuStreamIsCapturing\0" "cuStreamGetCaptureInfo\0"
	"cuStreamGetCtx\0" "cuStreamGetFlags\0" "cuStreamGetPriority\0" "cuFuncGetAttribute\0"
	"cuDevicePrimaryCtxGetState\0" "cuCtxGetStreamPriorityRange\0" "cuGetExportTable\0"
	"cuKernelGetFunction\0" "cuLibraryGetKernel\0"
	/* CUDA 13.0's runtime asks for the kernel's name before each <<<>>>, outside the
	 * launch's runtime call (CUPTI's callbacks on an H200, driver 580.159) */
	"cuKernelGetName\0"
	"cuOccupancyMaxActiveBlocksPerMultiprocessor\0"
	"cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags\0"
	"";

size_t cupti__api_base_len(const char *name)
{
	size_t n = strlen(name);

	for (const char *p = name; (p = strchr(p, '_')); p++) {
		if ((p[1] == 'v' && p[2] >= '0' && p[2] <= '9') || !strncmp(p, "_pt", 3)) {
			n = (size_t)(p - name);
			break;
		}
	}
	return n;
}

bool cupti__is_folded(const char *api_name)
{
	size_t i;

	return gt_cstr_list_find(folded_names, api_name, cupti__api_base_len(api_name), &i);
}

bool cupti__is_launch_name(const char *api_name)
{
	static const char parts[] = "Launch\0Memcpy\0Memset\0Synchronize\0StreamWaitEvent\0"
				    "Prefetch\0"; /* a list, as folded_names */

	for (const char *p = parts; *p; p += strlen(p) + 1)
		if (strstr(api_name, p))
			return true;
	return false;
}

static uint64_t info_of(bool runtime, CUpti_CallbackId cbid, const char *fname)
{
	_Atomic uint64_t *slot = cbid < CBID_MAX ? &cb_info[runtime][cbid] : NULL;
	uint64_t v = slot ? atomic_load_explicit(slot, memory_order_relaxed) : 0;
	char name[160];

	if (gt_likely(v))
		return v;
	/* cold: the first call of this API in the process */
	if (!fname || !*fname)
		fname = runtime ? "cuda_runtime_api" : "cuda_driver_api";
	snprintf(name, sizeof(name), "%.*s", (int)cupti__api_base_len(fname), fname);
	v = gt_str_intern(name) | INFO_KNOWN;
	if (cupti__is_launch_name(name))
		v |= INFO_LAUNCH;
	if (cupti__is_folded(name))
		v |= INFO_FOLDED;
	if (slot)
		atomic_store_explicit(slot, v, memory_order_relaxed);
	return v;
}

/* A call ending at `end` on this thread is in the trace: before the process
 * began to end, or made by the ending thread (its exit handlers, destructors)
 * or its helper (writer/drain.c, after_the_end) */
static bool in_trace(uint64_t end)
{
	/* acquire: the ending threads' tids, stored before, are seen with it */
	uint64_t e = atomic_load_explicit(&gt_st.host_end_ns, memory_order_acquire);
	int tid;

	if (gt_likely(!e) || end <= e)
		return true;
	tid = gt_gettid();
	return tid == atomic_load(&gt_st.host_end_tid) ||
	       tid == atomic_load(&gt_st.host_end_helper_tid);
}

/* ---- folded counts ---- */

#define FOLD_SLOTS 128
static struct {
	_Atomic uint32_t name;
	_Atomic uint64_t count;
} folds[FOLD_SLOTS];
static _Atomic bool folded_any GT_STARTUP_STATE; /* else the exit reads no slot */
static _Atomic bool folded_emitted GT_STARTUP_STATE;

void cupti__fold_count(uint32_t name_id)
{
	if (!atomic_load_explicit(&folded_any, memory_order_relaxed))
		atomic_store_explicit(&folded_any, true, memory_order_relaxed);
	for (unsigned i = 0, h = name_id * 2654435761u; i < FOLD_SLOTS; i++) {
		unsigned s = (h + i) % FOLD_SLOTS;
		uint32_t cur = atomic_load_explicit(&folds[s].name, memory_order_relaxed);

		if (!cur) {
			uint32_t expect = 0;
			if (atomic_compare_exchange_strong(&folds[s].name, &expect, name_id) ||
			    expect == name_id)
				cur = name_id;
		}
		if (cur == name_id) {
			atomic_fetch_add_explicit(&folds[s].count, 1, memory_order_relaxed);
			return;
		}
	}
}

GT_STARTUP_CODE void cupti__emit_folded(void)
{
	struct gt_arg args[GT_ARGS_MAX];
	unsigned n = 0;
	uint32_t title = 0;
	uint64_t now = 0;

	if (!atomic_load(&folded_any) || atomic_exchange(&folded_emitted, true))
		return;
	for (unsigned s = 0; s <= FOLD_SLOTS; s++) {
		uint64_t c = 0;
		uint32_t name = 0;

		if (s < FOLD_SLOTS) {
			name = atomic_load(&folds[s].name);
			c = name ? atomic_exchange(&folds[s].count, 0) : 0;
		}
		if (c) {
			args[n++] = (struct gt_arg){ .key = name, .type = GT_ARG_U64, .v.u = c };
			pr_dbg("cupti: %s called %llu times (folded)", gt_str_get(name, NULL),
			       (unsigned long long)c);
		}
		if (n && (n == GT_ARGS_MAX || s == FOLD_SLOTS)) {
			if (!title) {
				title = gt_str_intern("folded CUDA API calls");
				now = gt_clock_ns(); /* not before: most processes have none */
			}
			struct gt_event ev = {
				.start_ns = now, .end_ns = now, .name = title,
				.cat = GT_S_CAT_CUDA_RUNTIME, .type = GT_EV_INSTANT,
			};
			gt_emit(&ev, args, n);
			n = 0;
		}
	}
}

/* A fork child's counts start at 0: the parent's are not its calls (each
 * worker a CUDA program forked wrote a trace of them at its exit, counted
 * again in the run's summary). Nothing is touched where nothing was folded. */
GT_FORK_CODE void cupti__fold_forget(void)
{
	if (!atomic_load_explicit(&folded_any, memory_order_relaxed))
		return;
	for (unsigned s = 0; s < FOLD_SLOTS; s++) {
		atomic_store_explicit(&folds[s].name, 0, memory_order_relaxed);
		atomic_store_explicit(&folds[s].count, 0, memory_order_relaxed);
	}
	atomic_store(&folded_any, false);
	atomic_store(&folded_emitted, false);
}

/* ---- error names ---- */

static _Atomic uint32_t rt_err_names[1024], drv_err_names[1024];

uint32_t cupti__rt_error_name(int code)
{
	static const char *(*get_name)(int);
	const char *s;
	uint32_t id;

	if (code <= 0 || code >= 1024)
		return 0;
	if ((id = atomic_load_explicit(&rt_err_names[code], memory_order_relaxed)))
		return id;
	/* the program's own CUPTI session would see our call */
	if (atomic_load_explicit(&cupti_state, memory_order_relaxed) == CUPTI_YIELDED)
		return 0;
	if (!get_name) {
		/* static cudart has none to find: look again only now and then */
		static _Atomic unsigned misses;
		if (atomic_fetch_add_explicit(&misses, 1, memory_order_relaxed) % 4096)
			return 0;
		get_name = (const char *(*)(int))cupti__rt_real("cudaGetErrorName");
		if (!get_name)
			return 0;
	}
	cupti_self++;
	s = get_name(code);
	cupti_self--;
	if (!s || !*s)
		return 0;
	id = gt_str_intern(s);
	atomic_store_explicit(&rt_err_names[code], id, memory_order_relaxed);
	return id;
}

static uint32_t drv_error_name(int code)
{
	static int (*get_name)(int, const char **);
	static bool looked;
	const char *s = NULL;
	uint32_t id;

	if (code <= 0 || code >= 1024)
		return 0;
	if ((id = atomic_load_explicit(&drv_err_names[code], memory_order_relaxed)))
		return id;
	if (!looked) {
		void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
		if (h)
			get_name = (int (*)(int, const char **))cupti__dlsym(h, "cuGetErrorName");
		looked = true;
	}
	if (!get_name)
		return 0;
	cupti_self++;
	get_name(code, &s);
	cupti_self--;
	if (!s || !*s)
		return 0;
	id = gt_str_intern(s);
	atomic_store_explicit(&drv_err_names[code], id, memory_order_relaxed);
	return id;
}

uint32_t cupti__error_name(bool runtime, int code)
{
	uint32_t id = runtime ? cupti__rt_error_name(code) : drv_error_name(code);
	char s[32];

	if (id || code == CUDA_NOT_READY)
		return id;
	snprintf(s, sizeof(s), runtime ? "cudaError %d" : "CUresult %d", code);
	return gt_str_intern(s);
}

/* ---- the callback ---- */

struct api_thread {
	uint64_t rt_start, drv_start;
	uint32_t rt_corr, drv_corr;
	uint32_t rt_name, drv_name; /* the open calls', for their cancellation */
	bool rt_launch, drv_launch; /* ... and whether they queue device work (arrows) */
	uint32_t rt_depth;
	uint32_t rt_pushed, drv_pushed; /* external correlation pushed at entry */
	uint32_t rt_session, drv_session; /* session_gen at their entry */
};
static GT_TLS struct api_thread api_t;
extern GT_HIDDEN GT_TLS struct ring *gt_tls_ring; /* inject/shim.c: NULL until made */

/* Device ids seen in new contexts; the drain thread names them (calling the
 * driver from inside its context creation is asking for trouble). */
static _Atomic uint64_t devices_unnamed;

static void on_context(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
	uint32_t cid = 0, did = 0;

	if (cbid != CUPTI_CBID_RESOURCE_CONTEXT_CREATED || !rd || !rd->context)
		return;
	if (cupti_fn.cuptiGetContextId(rd->context, &cid) != CUPTI_SUCCESS ||
	    cupti_fn.cuptiGetDeviceId(rd->context, &did) != CUPTI_SUCCESS)
		return;
	cupti__context_device(cid, did);
	cupti__device_seen(did);
}

void cupti__device_seen(uint32_t device_id)
{
	if (device_id < 64)
		atomic_fetch_or(&devices_unnamed, 1ull << device_id);
}

/* Kineto's deviceProperties keys and the driver attributes behind them. */
static const struct {
	char key[32]; /* text, not a pointer to relocate in every process */
	int attr;
} device_attrs[] = {
	{ "computeMajor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR },
	{ "computeMinor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR },
	{ "maxThreadsPerBlock", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK },
	{ "maxThreadsPerMultiprocessor", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR },
	{ "regsPerBlock", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK },
	{ "warpSize", CU_DEVICE_ATTRIBUTE_WARP_SIZE },
	{ "sharedMemPerBlock", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK },
	{ "numSms", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT },
	{ "regsPerMultiprocessor", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR },
	{ "sharedMemPerBlockOptin", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN },
	{ "sharedMemPerMultiprocessor", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR },
};

/* Serialized: CUPTI's drain under cupti_share_lock, or, never in the same
 * process, the CUDA-event timing's poll under its poll_lock. */
void cupti__name_devices(void)
{
	static int (*get_dev)(int *, int);
	static int (*get_name)(char *, int, int);
	static int (*get_attr)(int *, int, int);
	static int (*total_mem)(size_t *, int);
	static bool looked;
	uint64_t todo = atomic_exchange(&devices_unnamed, 0);
	char name[128];
	size_t bytes;
	int dev, v;

	if (!todo)
		return;
	if (!looked) {
		void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			get_dev = (int (*)(int *, int))cupti__dlsym(h, "cuDeviceGet");
			get_name = (int (*)(char *, int, int))cupti__dlsym(h, "cuDeviceGetName");
			get_attr = (int (*)(int *, int, int))cupti__dlsym(h, "cuDeviceGetAttribute");
			total_mem = (int (*)(size_t *, int))cupti__dlsym(h, "cuDeviceTotalMem_v2");
		}
		looked = true;
	}
	if (!get_dev || !get_name)
		return;
	cupti_self++;
	for (int d = 0; d < 64; d++) {
		if (!((todo >> d) & 1) || get_dev(&dev, d) || get_name(name, sizeof(name), dev))
			continue;
		if (total_mem && !total_mem(&bytes, dev))
			cupti__device_prop((uint32_t)d, "totalGlobalMem", bytes);
		for (size_t i = 0; get_attr && i < sizeof(device_attrs) / sizeof(device_attrs[0]); i++)
			if (!get_attr(&v, device_attrs[i].attr, dev) && v >= 0)
				cupti__device_prop((uint32_t)d, device_attrs[i].key, (uint64_t)v);
		cupti__device_name((uint32_t)d, name); /* last: it publishes the properties */
	}
	cupti_self--;
}

/* Driver API device waits, marked for the hang watchdog (inject/watchdog.h):
 * X(function, whether its first parameter is the handle waited on). The
 * runtime's waits are marked by their wrappers (runtime.c, RT_WAIT). */
#define DRV_WAITS(X)                                                               \
	X(cuStreamSynchronize, 1)                                                  \
	X(cuStreamSynchronize_ptsz, 1)                                             \
	X(cuEventSynchronize, 1)                                                   \
	X(cuCtxSynchronize, 0)                                                     \
	X(cuCtxSynchronize_v2, 0)

static const struct {
	CUpti_CallbackId cbid;
	bool has_handle;
	const char *name;
} drv_waits[] = {
#define DRV_WAIT_ENTRY(fn, h) { CUPTI_DRIVER_TRACE_CBID_##fn, h, #fn },
	DRV_WAITS(DRV_WAIT_ENTRY)
#undef DRV_WAIT_ENTRY
};

/* Entering (or leaving) a driver API call: the watchdog's mark, when it is a wait. */
static void drv_wait_mark(CUpti_CallbackId cbid, const CUpti_CallbackData *cb, bool enter)
{
	static _Atomic uint32_t names[sizeof(drv_waits) / sizeof(drv_waits[0])];

	for (unsigned i = 0; i < sizeof(drv_waits) / sizeof(drv_waits[0]); i++) {
		uintptr_t handle = 0;
		uint32_t name;

		if (drv_waits[i].cbid != cbid)
			continue;
		if (!enter) {
			gt_wait_leave();
			return;
		}
		if (!(name = atomic_load_explicit(&names[i], memory_order_relaxed))) {
			name = gt_str_intern(drv_waits[i].name);
			atomic_store_explicit(&names[i], name, memory_order_relaxed);
		}
		/* the parameter struct's first member: the stream or event */
		if (drv_waits[i].has_handle && cb->functionParams)
			memcpy(&handle, cb->functionParams, sizeof(handle));
		gt_wait_enter(name, handle);
		return;
	}
}

/*
 * --capture-range cudaProfilerApi through CUPTI: cudaProfilerStart/Stop of a
 * runtime gputrace does not interpose (linked statically: nvcc's default),
 * which call the driver's cuProfilerStart/Stop, or those called directly. A
 * start opens the window as its callback enters (before its span begins),
 * a stop closes it once its span is emitted: both calls are in it, as with
 * the libcudart wrapper (runtime.c, rt_range). The outermost of the calls
 * gputrace sees on the thread decides (cupti_profiler_depth: the wrapper,
 * then the runtime callback, then the driver's): one window per call. True:
 * close the window after this exit's span.
 */
static bool profiler_range(bool rt, CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	bool start = rt ? cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000
			: cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
	bool stop = rt ? cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000
		       : cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;

	if (!start && !stop)
		return false;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		if (!cupti_profiler_depth++ && start)
			capture__range_begin(gt_clock_ns());
		return false;
	}
	if (!cupti_profiler_depth)
		return false; /* its entry was not seen (subscribed in between) */
	return !--cupti_profiler_depth && stop;
}

static void api_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			 const CUpti_CallbackData *cb);

void CUPTIAPI cupti__callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			      const void *data)
{
	const CUpti_CallbackData *cb = data;
	bool range_end = false;

	if (gt_unlikely(gt_cfg.capture_range == GT_RANGE_PROFILER) && cb && !cupti_self &&
	    (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API))
		range_end = profiler_range(domain == CUPTI_CB_DOMAIN_RUNTIME_API, cbid, cb);
	api_callback(domain, cbid, cb);
	if (gt_unlikely(range_end))
		capture__range_end(gt_clock_ns(), 0);
}

/*
 * A driver call the runtime makes inside a runtime call that gputrace's wrapper traces
 * (before CUPTI's runtime callbacks are on: CUPTI starts inside a thread's first runtime
 * call, at cuInit) is that call's own work, as it is inside a runtime call CUPTI reports.
 * A launch keeps its span: the work's arrow starts there (the wrapper's span has no
 * CUPTI id).
 */
static bool in_wrapped_call(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	return gt_unlikely(cupti_rt_wrapper_owns) &&
	       !(info_of(false, cbid, cb->functionName) & INFO_LAUNCH);
}

/* CUPTI sessions of ours ended (session_end): a call open across one lost its exit. */
static _Atomic uint32_t session_gen;

/*
 * A call whose exit callback never came: a forced unwind (pthread_cancel) ended it
 * inside CUDA, where no wrapper of ours has a frame to see it go (a driver API call, a
 * runtime call of a libcudart linked statically). Seen at the thread's next call of
 * that API (a cleanup handler's) or as the thread exits: drawn cancelled up to then,
 * its pushed id popped. rt: the runtime's (whose depth goes back to 0), else the driver's.
 * exiting: from the thread's key destructors, where a plug-in's pop is not made: its
 * per-thread state may be gone (C++ thread_local destructors ran before them).
 */
static void api_unwound_open(struct api_thread *t, bool rt, bool exiting)
{
	/* the session it began in ended (gputrace stepped aside for the program's own CUPTI
	 * user, unsubscribed): its exit went unheard, it was not cancelled */
	bool ended = atomic_load_explicit(&session_gen, memory_order_relaxed) !=
		     (rt ? t->rt_session : t->drv_session);

	if (rt) {
		t->rt_depth = 0;
		if (!exiting)
			gt_ext_corr_pop(t->rt_pushed);
		t->rt_pushed = 0;
		if (!ended) {
			gt_emit_cancelled(t->rt_start,
					  gt_corr_foreign(GT_CORR_NS_CUPTI, t->rt_corr), t->rt_name,
					  GT_S_CAT_CUDA_RUNTIME, t->rt_launch);
			if (t->rt_launch)
				cupti__launch_returned(t->rt_corr);
		}
		t->rt_start = 0;
		return;
	}
	if (!exiting)
		gt_ext_corr_pop(t->drv_pushed);
	t->drv_pushed = 0;
	if (!ended) {
		gt_emit_cancelled(t->drv_start, gt_corr_foreign(GT_CORR_NS_CUPTI, t->drv_corr),
				  t->drv_name, GT_S_CAT_CUDA_DRIVER, t->drv_launch);
		if (t->drv_launch)
			cupti__launch_returned(t->drv_corr);
	}
	t->drv_start = 0;
}

void cupti__api_session_ended(void)
{
	atomic_fetch_add(&session_gen, 1);
}

/* gt_thread_exit_hook: the calls its thread's exit leaves open */
static void api_thread_exit(void)
{
	struct api_thread *t = &api_t;

	if (gt_unlikely(t->drv_start))
		api_unwound_open(t, false, true);
	if (gt_unlikely(t->rt_start))
		api_unwound_open(t, true, true);
}

void cupti__api_watch_exits(void)
{
	atomic_store(&gt_thread_exit_hook, api_thread_exit);
}

static void api_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			 const CUpti_CallbackData *cb)
{
	const void *data = cb;
	struct api_thread *t = &api_t;
	bool rt = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
	uint64_t info, now, start;
	int result;

	if (cupti_self)
		return;
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
		if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) {
			if (gt_unlikely(gt_watchdog_on))
				cupti__pending_module_unloading();
			cupti__module_unloading();
			return;
		}
		if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
			if (gt_metrics_on(cupti_range_launches) && data)
				cupti__range_context_destroyed(
					((const CUpti_ResourceData *)data)->context);
			return;
		}
		cupti_self++;
		on_context(cbid, data);
		cupti_self--;
		return;
	}
	if ((!rt && domain != CUPTI_CB_DOMAIN_DRIVER_API) || !cb)
		return;
	if (rt && cupti_rt_wrapper_owns)
		return;
	/* one test when neither the range profiler nor the watchdog hooks driver calls */
	if (gt_unlikely(cupti_drv_hooks) && !rt) {
		if (gt_metrics_on(cupti_range_launches))
			cupti__range_launch(cbid, cb); /* also inside a runtime call: the driver launches */
		if (gt_watchdog_on) {
			if (!t->rt_depth)
				drv_wait_mark(cbid, cb, cb->callbackSite == CUPTI_API_ENTER);
			/* also inside a runtime call: the driver queues the work */
			if (!gt_in_tracer)
				cupti__pending_api(cbid, cb,
						   (uint32_t)(info_of(false, cbid, cb->functionName) &
							      INFO_NAME_MASK));
		}
	}
	if (cb->callbackSite == CUPTI_API_ENTER) {
		/* calls of one API do not nest on a thread: one still open never ended */
		if (gt_unlikely(rt && t->rt_start))
			api_unwound_open(t, true, false);
		if (!rt && (t->rt_depth || in_wrapped_call(cbid, cb)))
			return; /* the runtime call around it has the span */
		if (gt_unlikely(!rt && t->drv_start))
			api_unwound_open(t, false, false);
		if (rt)
			t->rt_depth++;
		if (gt_in_tracer || !gt_tracing())
			return;
		info = info_of(rt, cbid, cb->functionName);
		if (info & INFO_FOLDED) {
			cupti__fold_count((uint32_t)(info & INFO_NAME_MASK));
			return;
		}
		now = gt_clock_ns();
		if (rt) {
			t->rt_start = now;
			t->rt_corr = cb->correlationId;
			t->rt_name = (uint32_t)(info & INFO_NAME_MASK);
			t->rt_launch = info & INFO_LAUNCH;
			t->rt_session = atomic_load_explicit(&session_gen, memory_order_relaxed);
		} else {
			t->drv_start = now;
			t->drv_corr = cb->correlationId;
			t->drv_name = (uint32_t)(info & INFO_NAME_MASK);
			t->drv_launch = info & INFO_LAUNCH;
			t->drv_session = atomic_load_explicit(&session_gen, memory_order_relaxed);
		}
		/* its ring made now: a cancel inside ends the thread with a ring to draw in */
		if (gt_unlikely(!gt_tls_ring))
			shim__thread_ring();
		if (info & INFO_LAUNCH) {
			cupti__launch_note(cb->correlationId, now);
			/* the id its span gets, pushed for the call's duration */
			*(rt ? &t->rt_pushed : &t->drv_pushed) = gt_ext_corr_push(
				gt_corr_foreign(GT_CORR_NS_CUPTI, cb->correlationId));
		}
		return;
	}
	/* exit */
	if (rt) {
		if (t->rt_depth)
			t->rt_depth--;
		start = t->rt_corr == cb->correlationId ? t->rt_start : 0;
		t->rt_start = 0;
		gt_ext_corr_pop(t->rt_pushed);
		t->rt_pushed = 0;
	} else {
		if (t->rt_depth || in_wrapped_call(cbid, cb))
			return;
		start = t->drv_corr == cb->correlationId ? t->drv_start : 0;
		t->drv_start = 0;
		gt_ext_corr_pop(t->drv_pushed);
		t->drv_pushed = 0;
	}
	if (!start || gt_in_tracer)
		return; /* its entry was not seen (tracing began in between) or folded */
	now = gt_clock_ns();
	info = info_of(rt, cbid, cb->functionName);
	result = cb->functionReturnValue ? *(const int *)cb->functionReturnValue : 0;

	uint64_t stack = 0;
	if (gt_cfg.stacks && ((info & INFO_LAUNCH) || gt_cfg.stacks_all))
		stack = gt_stack_capture_api((uint32_t)(info & INFO_NAME_MASK));
	/* queued after CUPTI's exit flush (backend.c, cupti_atexit), by an exit
	 * handler or destructor that runs after it: its record never comes (one the
	 * flush, begun meanwhile, did hand over takes the count back: records.c). Only
	 * where the call is in the trace: another thread's, returning after the
	 * end, is left out with its work (writer/drain.c), not counted (threads
	 * launching on through the exit had thousands counted lost) */
	if (gt_unlikely((info & INFO_LAUNCH) && !result &&
			atomic_load_explicit(&cupti_state, memory_order_relaxed) == CUPTI_STOPPED) &&
	    in_trace(now) && cupti__launch_after_exit(cb->correlationId))
		gt_lost_add(cupti__key("cupti_after_exit"), 1);
	cupti__emit_api_span(start, now, gt_corr_foreign(GT_CORR_NS_CUPTI, cb->correlationId),
			     (uint32_t)(info & INFO_NAME_MASK), rt, info & INFO_LAUNCH, result,
			     stack);
	/* after its span: work read before this is drawn only with it (records.c) */
	if (info & INFO_LAUNCH)
		cupti__launch_returned(cb->correlationId);
}

void cupti__api_unwound(void)
{
	struct api_thread *t = &api_t;

	if (t->rt_depth)
		t->rt_depth--;
	if (!t->rt_start)
		return; /* its exit came (a cancel after it), or its entry was not seen */
	gt_ext_corr_pop(t->rt_pushed);
	t->rt_pushed = 0;
	gt_emit_cancelled(t->rt_start, gt_corr_foreign(GT_CORR_NS_CUPTI, t->rt_corr), t->rt_name,
			  GT_S_CAT_CUDA_RUNTIME, t->rt_launch);
	if (t->rt_launch)
		cupti__launch_returned(t->rt_corr);
	t->rt_start = 0;
}

GT_FORK_CODE void cupti__api_reset(void)
{
	memset(&api_t, 0, sizeof(api_t));
}
