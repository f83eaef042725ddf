/* SPDX-License-Identifier: MIT */
/*
 * The CUDA backend's internals, shared by its files:
 *   backend.c        life cycle: injection entry point, starting CUPTI, flush, stop, fork
 *   load.c           finding and dlopen()ing libcupti, the function table
 *   callbacks.c      CUPTI runtime/driver callbacks -> host API spans
 *   buffers.c        activity buffers: hand-out, completion queue, drop counts
 *   records.c        activity records -> device spans (and the clock)
 *   runtime.c        libcudart interposition: host spans when CUPTI is not active
 *   driver.c         cuInit interposed: its span, which CUPTI (started inside it) misses
 *   event_timing.c   CUDA-event device times when CUPTI belongs to another tool
 *   share.c          the program's own CUPTI session: gputrace steps aside, then back
 *   pending.c        work in flight, for the hang watchdog's report
 *   nvtx.c           NVTX injection: ranges and marks -> user_annotation
 *   nvml.c           NVML telemetry (its own backend entry, no CUPTI needed)
 *   pm_sampling.c    hardware metrics over time: CUPTI PM sampling, the host profiler
 *   range_profiler.c hardware metrics per kernel: CUPTI's range profiler
 * Nothing here links against CUDA: libcupti and libcudart are reached
 * through dlopen/dlsym, so the library loads on machines without them.
 * The parts that need CUPTI's types are declared only where <cupti.h> was
 * included first (the interposition files must not see CUDA's own
 * declarations of the functions they define).
 */
#ifndef GPUTRACE_CUDA_INTERNAL_H
#define GPUTRACE_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inject/event.h"

/* ---- state ---- */

enum cupti_state {
	CUPTI_OFF = 0,     /* not started yet: waiting for cuInit (injection) or a first call */
	CUPTI_STARTING,    /* one thread is starting it */
	CUPTI_ON,          /* subscribed, activity enabled: CUPTI is the source */
	CUPTI_UNAVAILABLE, /* no libcupti, no driver, or CUPTI failed: interposition only */
	CUPTI_HELD,        /* another tool holds CUPTI: interposition + CUDA events */
	CUPTI_DISABLED,    /* GPUTRACE_DISABLE_CUPTI=1: interposition + CUDA events */
	CUPTI_STOPPED,     /* process exit or fork child: no more CUPTI calls */
	CUPTI_YIELDED,     /* handed to the program's own CUPTI user: interposition only */
};

extern GT_HIDDEN _Atomic int cupti_state;
/* The CUDA backend is enabled (GPUTRACE_BACKENDS): set by its init(). */
extern GT_HIDDEN bool cupti_backend_on;
/* Runtime-API callbacks are delivering host spans: the libcudart wrappers
 * must stay silent (one source per call). */
extern GT_HIDDEN _Atomic bool cupti_rt_callbacks_on;
/* Set on threads while they run our own CUDA calls (device names, event
 * timing): CUPTI callbacks and wrappers ignore them. */
extern GT_HIDDEN GT_TLS int cupti_self;
/* Set while a libcudart wrapper (runtime.c) emits the runtime call itself:
 * the runtime callback leaves that call alone. */
extern GT_HIDDEN GT_TLS int cupti_rt_wrapper_owns;
/* --capture-range cudaProfilerApi: how deep this thread is in profiler
 * start/stop calls (the libcudart wrapper's, then CUPTI's runtime and
 * driver callbacks of the same call): only the outermost one that
 * gputrace sees opens or closes the window (callbacks.c, runtime.c). */
extern GT_HIDDEN GT_TLS unsigned cupti_profiler_depth;
/* CUDA_INJECTION64_PATH names this library: cuInit will start CUPTI (set at
 * init, read by the drain thread too). */
extern GT_HIDDEN _Atomic bool cupti_injection_ours;
/* cuptiGetVersion() of the loaded libcupti (record layouts depend on it). */
extern GT_HIDDEN uint32_t cupti_runtime_version;

/* Start CUPTI once, from InitializeInjection, the first runtime call, or a
 * libcuda load. Harmless when called again or concurrently. */
GT_HIDDEN void cupti__start(const char *why);
/* Held by whoever changes CUPTI's hands (share.c) or calls CUPTI outside a
 * callback (the drain thread's flush, the exit flush). */
extern GT_HIDDEN pthread_mutex_t cupti_share_lock;
/* With cupti_share_lock: hand CUPTI over (ON -> YIELDED: our kinds off,
 * every record flushed to us, unsubscribed), and take it back (YIELDED ->
 * ON, if nobody holds it). True when done. */
GT_HIDDEN bool cupti__yield(void);
GT_HIDDEN bool cupti__take_back(void);
/* Any thread but the drain's (which flushes in its cycle), outside CUPTI's
 * callbacks: complete buffers handed over now (cuptiActivityFlushAll(0)),
 * under cupti_share_lock; wait_ms 0 tries it once, else waits that long at
 * most. True when CUPTI flushed. */
GT_HIDDEN bool cupti__flush_complete(unsigned wait_ms);
/* Drain thread: the instants that mark CUPTI handed over and taken back. */
GT_HIDDEN void cupti__share_marks(void);
/* Drain thread: an instant on every CUDA device's row. */
GT_HIDDEN void cupti__mark_devices(uint64_t at, uint32_t name, uint32_t reason);
/* A module is about to be unloaded (CUPTI's resource callback): take the
 * records that may still point to its kernels' names. */
GT_HIDDEN void cupti__module_unloading(void);
/* True when device times come from CUDA events (CUPTI held or disabled). */
static inline bool cupti__event_timing(void)
{
	int s = atomic_load_explicit(&cupti_state, memory_order_relaxed);
	return s == CUPTI_HELD || s == CUPTI_DISABLED;
}

/* The string id of a constant string, interned at its first use (cold). */
#define cupti__key(str)                                                                     \
	({                                                                                  \
		static _Atomic uint32_t key_id_;                                            \
		uint32_t v_ = atomic_load_explicit(&key_id_, memory_order_relaxed);         \
		if (gt_unlikely(!v_)) {                                                     \
			v_ = gt_str_intern(str);                                            \
			atomic_store_explicit(&key_id_, v_, memory_order_relaxed);          \
		}                                                                           \
		v_;                                                                         \
	})

/* ---- libcupti (load.c) ---- */


/* dlopen libcupti (CUDA_HOME, next to the process's libcudart, the
 * toolkit, the default search path) and fill cupti_fn. 0 or -errno; the
 * path that loaded goes to `loaded`. */
GT_HIDDEN int cupti__load(char *loaded, size_t len);
/* The loaded libcudart's directory, if the process has one ("" if not). */
GT_HIDDEN bool cupti__cudart_dir(char *dir, size_t len, char *name, size_t name_len);
/* dlsym that never sees a wrapped dlsym. */
GT_HIDDEN void *cupti__dlsym(void *handle, const char *symbol);
/* A mangled C++ name demangled (malloc'ed) by the C++ runtime the process has loaded, or
 * NULL: not mangled, no runtime, not a name it knows. */
GT_HIDDEN char *cupti__demangle(const char *name);
/* The real libcudart function, also from a libcudart loaded RTLD_LOCAL: of
 * the first runtime loaded, or of the one whose symbol version is given
 * ("libcudart.so.12"). */
GT_HIDDEN void *cupti__rt_real(const char *symbol);
GT_HIDDEN void *cupti__rt_real_version(const char *symbol, const char *version);
/* A function of a loaded library whose file name starts with file_prefix,
 * also one loaded RTLD_LOCAL by someone else ("libcupti.so"), or NULL. */
GT_HIDDEN void *cupti__loaded_sym(const char *file_prefix, const char *symbol);

/* ---- per-kernel metrics (range_profiler.c) ---- */

/* --metrics-mode kernel: launches are measured (set at init). */
extern GT_HIDDEN bool cupti_range_kernel;
/* --metrics-mode nvtx: each thread's outermost NVTX push/pop range is measured. */
extern GT_HIDDEN bool cupti_range_nvtx;
/* Either: the launch callback calls cupti__range_launch. */
extern GT_HIDDEN bool cupti_range_launches;
/* Driver calls are hooked (cupti_range_launches or the watchdog, set at init): the
 * callback tests this one byte, as it tested the watchdog's alone before metrics. A
 * METRICS=0 build has the watchdog's byte only. */
#ifdef GT_NO_METRICS
#define cupti_drv_hooks gt_watchdog_on
#else
extern GT_HIDDEN bool cupti_drv_hooks;
#endif
/* nvtx.c: a push/pop range opened at level (0: outermost) ... */
GT_HIDDEN void cupti__range_nvtx_push(int level, uint32_t name);
/* ... and closed: its metrics (if it launched kernels) appended to args[n..max) as
 * GT_ARG_METRIC args; the new count. Waits for the range's kernels. */
GT_HIDDEN unsigned cupti__range_nvtx_pop(int level, struct gt_arg *args, unsigned n,
					 unsigned max);
/* Drain thread: the metrics of the kernel launched under corr that ran on CUPTI's
 * stream id `stream`, as GT_ARG_METRIC args appended to args[n..max); the new count.
 * *profilers: the kernel is the range profiler's own (launch's id, another stream). */
GT_HIDDEN unsigned cupti__range_args(uint32_t corr, uint32_t stream, struct gt_arg *args,
				     unsigned n, unsigned max, bool *profilers);

/* ---- host API spans from CUPTI callbacks (callbacks.c) ---- */

/* "cudaLaunchKernel_v7000", "cudaMemcpy_ptds", "cudaGetDeviceProperties_v2": the
 * length of the API's name without its suffixes (CUPTI's names and symbols alike). */
GT_HIDDEN size_t cupti__api_base_len(const char *name);
/* Names of folded getters: counted, not traced. Returns true for them. */
GT_HIDDEN bool cupti__is_folded(const char *api_name);
/* Add a folded call (from either source) to its count. */
GT_HIDDEN void cupti__fold_count(uint32_t name_id);
/* Emit the folded counts as one instant per batch (process end). */
GT_HIDDEN void cupti__emit_folded(void);
/* Forget the parent's counts (fork child). */
GT_HIDDEN void cupti__fold_forget(void);
/* Whether an API name puts work on a device (flows are kept for these). */
GT_HIDDEN bool cupti__is_launch_name(const char *api_name);
/* The string id of "cudaErrorXxx"/"CUDA_ERROR_XXX" for a result, or 0. */
GT_HIDDEN uint32_t cupti__rt_error_name(int code);
#define CUDA_NOT_READY 600 /* cudaErrorNotReady, CUDA_ERROR_NOT_READY: a poll's answer */
/* A call's error for args.error: its name, else "cudaError N" ("CUresult N" for the
 * driver); 0 for a not-ready answer with no name to give. */
GT_HIDDEN uint32_t cupti__error_name(bool runtime, int code);

/* A CUDA API call's span, whoever saw it (our runtime wrapper, CUPTI's exit
 * callback, the cuInit wrapper): its result, its stack (0: none) and its
 * error's name; failed unless the answer is a poll's "not ready". */
static inline void cupti__emit_api_span(uint64_t start, uint64_t end, uint64_t corr,
					uint32_t name, bool runtime, bool launch, int result,
					uint64_t stack)
{
	struct gt_arg args[3] = { { .key = GT_S_ARG_RESULT, .type = GT_ARG_I64, .v.i = result } };
	uint16_t flags = launch ? GT_EVF_LAUNCH : 0;
	unsigned n = 1;

	if (stack)
		args[n++] = (struct gt_arg){ .key = GT_S_ARG_STACK, .type = GT_ARG_U64, .v.u = stack };
	if (result) {
		uint32_t err = cupti__error_name(runtime, result);

		if (err)
			args[n++] = (struct gt_arg){ .key = GT_S_ARG_ERROR, .type = GT_ARG_STR,
						     .v.u = err };
		if (result != CUDA_NOT_READY)
			flags |= GT_EVF_FAILED;
	}
	struct gt_event ev = {
		.start_ns = start,
		.end_ns = end,
		.corr = corr,
		.name = name,
		.cat = runtime ? GT_S_CAT_CUDA_RUNTIME : GT_S_CAT_CUDA_DRIVER,
		.type = GT_EV_HOST_SPAN,
		.flags = flags,
	};
	gt_emit(&ev, args, n);
}
GT_HIDDEN void cupti__api_reset(void);
/* A runtime call whose span CUPTI's callbacks make was ended by a forced unwind
 * (pthread_cancel): its exit callback never comes, so its span is drawn here,
 * cancelled. */
GT_HIDDEN void cupti__api_unwound(void);
/* Calls of CUPTI's callbacks a forced unwind left open are drawn as their thread
 * exits (gt_thread_exit_hook): set before subscribing. */
GT_HIDDEN void cupti__api_watch_exits(void);
/* Our CUPTI session ended: calls open across it are not cancelled ones. */
GT_HIDDEN void cupti__api_session_ended(void);
/* Drain thread: name the devices of contexts created since the last call
 * (CUPTI's), or of the first timed launches (CUDA-event timing). */
GT_HIDDEN void cupti__name_devices(void);
/* A device used: named, with its properties, at the next cupti__name_devices. */
GT_HIDDEN void cupti__device_seen(uint32_t device_id);

/* ---- activity buffers (buffers.c) ---- */

#define CUPTI_BUF_BYTES (4u << 20)

/* Drain thread: process every completed buffer queued so far. */
GT_HIDDEN void cupti__drain_completed(void);
/* Ask CUPTI for its dropped-record count and add it to the trace's losses. */
GT_HIDDEN void cupti__count_dropped(void);
GT_HIDDEN void cupti__buffers_forget(void);

/* ---- records -> events (records.c) ---- */

/*
 * Turn the records of one buffer into events (from the drain thread, or a
 * unit test). Returns how many records were read, or -EINVAL when the
 * buffer cannot be walked (no libcupti loaded).
 */
GT_HIDDEN int cupti__process_buffer(uint8_t *buf, size_t valid);
/* The same over several buffers: external correlations of all of them are
 * known before any device span is written (buffers complete out of order). */
GT_HIDDEN int cupti__process_buffers(uint8_t *const *bufs, const size_t *valid, unsigned n);
/* Copy the kernel names of a buffer CUPTI just handed over (their memory
 * goes with their module) and point its records to the copies. */
GT_HIDDEN void cupti__pin_names(uint8_t *buf, size_t valid);
/* Device of a CUPTI context id (learned from records and callbacks). */
GT_HIDDEN void cupti__context_device(uint32_t context_id, uint32_t device_id);
/* The device's name for its row, e.g. from cuDeviceGetName. */
GT_HIDDEN void cupti__device_name(uint32_t device_id, const char *name);
/* A property for the trace's deviceProperties, kept until the device's row
 * is made; set before cupti__device_name, which publishes them. */
GT_HIDDEN void cupti__device_prop(uint32_t device_id, const char *key, uint64_t value);
/* Row of a CUDA device/stream (and its device track); cold, cached. */
GT_HIDDEN uint32_t cupti__stream_row(uint32_t device_id, uint32_t stream_id);
/* The device's own row, for its counters. */
GT_HIDDEN uint32_t cupti__device_track(uint32_t device_id);
/* A kernel's grid or block as [x, y, z] (a string where no device allows it). */
GT_HIDDEN struct gt_arg cupti__dim_arg(uint32_t key, uint32_t x, uint32_t y, uint32_t z);
GT_HIDDEN void cupti__records_reset(void);
/* Launch start times by CUPTI correlation id, for "never before its launch"
 * (noted by the callbacks, read by the records). */
GT_HIDDEN void cupti__launch_note(uint32_t corr, uint64_t start_ns);
GT_HIDDEN void cupti__launch_returned(uint32_t corr);
/* A launch returning after CUPTI's exit flush began: true if it is to be counted lost
 * (no record of its work came yet; one that comes later takes the count back). */
GT_HIDDEN bool cupti__launch_after_exit(uint32_t corr);
GT_HIDDEN uint64_t cupti__launch_start(uint32_t corr);

/* ---- clock (records.c) ---- */

/* CUPTI's timestamps are ours (the timestamp callback is registered). */
GT_HIDDEN void cupti__clock_identity(void);
/* Calibrate CUPTI's clock against gt_clock_ns (offset from paired reads). */
GT_HIDDEN void cupti__clock_refit(void);
/* A CUPTI timestamp on the host clock. */
GT_HIDDEN uint64_t cupti__to_host(uint64_t cupti_ns);
/* The same, for a time that follows not_before (a host time: its launch, 0 if unknown):
 * after a step back of CUPTI's clock, a time can be read on either side of it. */
GT_HIDDEN uint64_t cupti__to_host_near(uint64_t cupti_ns, uint64_t not_before);

/* ---- CUDA-event timing fallback (event_timing.c) ---- */

struct cupti_launch_info {
	uint32_t name;  /* string id of the device span */
	uint32_t cat;   /* GT_S_CAT_KERNEL, GT_S_CAT_GPU_MEMCPY, ... */
	uint32_t kind;  /* copy kind string id ("HtoD"), or 0 */
	uint64_t bytes; /* copies and fills */
	uint64_t done_by; /* host time the work had ended by (its synchronous call's end), or 0 */
	bool peer;        /* a copy between two devices: */
	int src_device, dst_device;
	/* kernels: the launch's configuration, and cudaFuncGetAttributes' */
	uint32_t grid[3], block[3];
	uint64_t shared_memory;  /* dynamic, plus static when known */
	uint32_t registers;      /* per thread; 0: not known */
};
/* Around a launch on `stream` (per_thread: the _ptsz flavour): before it,
 * and at once after it, inside the host call's span, so that the end event is
 * no later than the call's end; result: the launch's cudaError_t (its events
 * are dropped when it failed). NULL: nothing to time. */
GT_HIDDEN void *cupti__events_before(void *stream, bool per_thread);
GT_HIDDEN void *cupti__events_end(void *token, void *stream, bool per_thread, int result);
/* The launch was cancelled inside (pthread_cancel): its work, if any, counted
 * lost, and its slot given back. */
GT_HIDDEN void cupti__events_unwound(void *token);
/* Once the call is recorded: hand the pair to the drain thread. */
GT_HIDDEN void cupti__events_after(void *token, uint64_t corr, uint64_t host_start,
				   const struct cupti_launch_info *info);
/* Drain thread: turn finished event pairs into device spans. */
GT_HIDDEN void cupti__events_poll(bool final);
GT_HIDDEN void cupti__events_forget(void);
/* Around cudaDeviceReset: the device's timed launches drawn before it, its
 * events made anew after it (whatever the reset returned); begin's result
 * is end's device. */
GT_HIDDEN int cupti__events_reset_begin(void);
GT_HIDDEN void cupti__events_reset_end(int device);
/* The watchdog's thread: launches still unfinished, up to max; how many. */
struct gt_pending_work;
GT_HIDDEN unsigned cupti__events_pending(struct gt_pending_work *out, unsigned max);

/* ---- libcudart interposition (runtime.c) ---- */

GT_HIDDEN void *cupti__rt_wrapper_for(const char *symbol);
/* dlsym(libcuda handle, "cuInit"): the cuInit wrapper (driver.c), else NULL. */
GT_HIDDEN void *cupti__drv_wrapper_for(const char *symbol);

/* ---- the program's own CUPTI session (share.c) ---- */

GT_HIDDEN void *cupti__share_wrapper_for(const char *symbol);
GT_HIDDEN void cupti__share_forget(void);

/* ---- work in flight, for the hang watchdog (pending.c) ---- */

struct gt_pending_work;
/* backend.h pending: the watchdog's thread */
GT_HIDDEN void cupti__pending(void (*fn)(void *arg, const struct gt_pending_work *w), void *arg);
/* A device record of this correlation id was handed over by CUPTI. */
GT_HIDDEN void cupti__pending_retire(uint32_t corr);
GT_HIDDEN void cupti__pending_module_unloading(void);
GT_HIDDEN void cupti__pending_forget(void);
/* records.c: a kernel's name as its spans show it (demangled); any thread */
GT_HIDDEN uint32_t cupti__kernel_name_id(const char *name);
/* records.c: a device's and a stream's labels as their rows show them,
 * "GPU 0: name" (as Level Zero's and plug-ins' rows), "stream 7"; any thread */
GT_HIDDEN uint32_t cupti__device_label(uint32_t device);
GT_HIDDEN uint32_t cupti__stream_label(uint32_t stream_id);
/* records.c: retire the launches whose records a buffer holds (any thread) */
GT_HIDDEN void cupti__retire_records(uint8_t *buf, size_t valid);

/* ---- NVTX (nvtx.c) ---- */
GT_HIDDEN void cupti__nvtx_forget(void);


/* ---- what needs CUPTI's types ---- */
#ifdef CUPTI_API_VERSION

/* Every CUPTI function we call; all resolved with dlsym. opt=1: may be
 * missing in older libraries. */
#define CUPTI_FUNCS(X)                                                                      \
	X(cuptiGetVersion, 0)                                                               \
	X(cuptiGetResultString, 0)                                                          \
	X(cuptiGetTimestamp, 0)                                                             \
	X(cuptiSubscribe, 0)                                                                \
	X(cuptiSubscribe_v2, 1)                                                             \
	X(cuptiUnsubscribe, 0)                                                              \
	X(cuptiEnableDomain, 0)                                                             \
	X(cuptiFinalize, 1)                                                                 \
	X(cuptiEnableCallback, 0)                                                           \
	X(cuptiGetCallbackName, 1)                                                          \
	X(cuptiGetContextId, 0)                                                             \
	X(cuptiGetDeviceId, 0)                                                              \
	X(cuptiActivityEnable, 0)                                                           \
	X(cuptiActivityDisable, 0)                                                          \
	X(cuptiActivityRegisterCallbacks, 0)                                                \
	X(cuptiActivityGetNextRecord, 0)                                                    \
	X(cuptiActivityGetNumDroppedRecords, 0)                                             \
	X(cuptiActivityFlushAll, 0)                                                         \
	X(cuptiActivityRegisterTimestampCallback, 1)                                        \
	X(cuptiActivityEnableAllSyncRecords, 1)                                             \
	X(cuptiSetThreadIdType, 1)                                                          \
	X(cuptiGetStreamIdEx, 1)

struct cupti_funcs {
#define CUPTI_FN_MEMBER(name, opt) __typeof__(name) *name;
	CUPTI_FUNCS(CUPTI_FN_MEMBER)
#undef CUPTI_FN_MEMBER
};

extern GT_HIDDEN struct cupti_funcs cupti_fn;

/* backend.c: CUPTI's name of a result ("unknown error" without libcupti) */
GT_HIDDEN const char *cupti__result_string(CUptiResult r);

/* callbacks.c: runtime, driver and resource callbacks */
GT_HIDDEN void CUPTIAPI cupti__callback(void *userdata, CUpti_CallbackDomain domain,
					CUpti_CallbackId cbid, const void *cbdata);

/* pending.c: a driver API's entry or exit (--watchdog): launches, waits */
GT_HIDDEN void cupti__pending_api(CUpti_CallbackId cbid, const CUpti_CallbackData *cb,
				  uint32_t api_name);

#define NO_STREAM UINT32_MAX /* CUPTI did not say which stream */

/* pending.c: CUPTI's id of the stream a kernel launch (a driver call) names, asked now
 * (not cached: a destroyed stream's handle may come back as another); NO_STREAM for
 * other calls, or where CUPTI does not say */
GT_HIDDEN uint32_t cupti__launch_stream_id(CUpti_CallbackId cbid, const CUpti_CallbackData *cb);

/* range_profiler.c: a driver API's entry or exit (--metrics-mode kernel|nvtx): kernel
 * launches are measured by a range profiler session around them (kernel), or start
 * their NVTX range's session (nvtx) */
GT_HIDDEN void cupti__range_launch(CUpti_CallbackId cbid, const CUpti_CallbackData *cb);
/* range_profiler.c: CUPTI's resource callback, before ctx is destroyed: its range
 * profiler goes with it */
GT_HIDDEN void cupti__range_context_destroyed(CUcontext ctx);

/* buffers.c: CUPTI's buffer callbacks */
GT_HIDDEN void CUPTIAPI cupti__buffer_requested(uint8_t **buffer, size_t *size,
						size_t *max_records);
GT_HIDDEN void CUPTIAPI cupti__buffer_completed(CUcontext ctx, uint32_t stream_id,
						uint8_t *buffer, size_t size, size_t valid);

/* records.c: the clock CUPTI uses when it accepts ours */
GT_HIDDEN uint64_t CUPTIAPI cupti__timestamp(void);

#endif /* CUPTI_API_VERSION */

#endif
