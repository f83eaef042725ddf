// SPDX-License-Identifier: MIT
/*
 * The CUDA backend's life cycle.
 *
 * The constructor must not call CUPTI (it initializes lazily and would slow
 * down every child shell), so init() only points the CUDA driver and NVTX
 * at this library: CUDA_INJECTION64_PATH makes cuInit call our
 * InitializeInjection, however late the program loads CUDA (`import
 * torch`); NVTX_INJECTION64_PATH makes the first NVTX call call
 * InitializeInjectionNvtx2 (nvtx.c). When someone else owns
 * CUDA_INJECTION64_PATH, CUPTI starts at the first libcudart call or when
 * libcuda shows up instead. Starting twice is harmless.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include <cupti.h>

#include "backends/cuda/internal.h"
#include "backends/cuda/pm_sampling.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/injection.h"
#include "inject/shim.h"
#include "inject/stacks.h"

GT_HIDDEN _Atomic int cupti_state GT_STARTUP_STATE;
GT_HIDDEN pthread_mutex_t cupti_share_lock = PTHREAD_MUTEX_INITIALIZER;
GT_HIDDEN bool cupti_backend_on GT_STARTUP_STATE;
GT_HIDDEN _Atomic bool cupti_rt_callbacks_on;
GT_HIDDEN GT_TLS int cupti_self;
GT_HIDDEN GT_TLS int cupti_rt_wrapper_owns;
GT_HIDDEN GT_TLS unsigned cupti_profiler_depth;

/* Their frames inside CUPTI's callbacks are not the program's (--stacks). */
static const char *const vendor_libs[] = { "libcupti.so", "libcuda.so", "libcudart.so",
					   "libnvidia-", NULL };

static CUpti_SubscriberHandle subscriber;
GT_HIDDEN _Atomic bool cupti_injection_ours GT_STARTUP_STATE;
static bool clock_is_ours;      /* the timestamp callback was accepted */
static _Atomic uint64_t last_flush_ns;
/* the exit's forced flush was made: the drain thread fits the clock once more */
static _Atomic bool exit_flushed;

#define FLUSH_MIN_NS (100ull * 1000000) /* CUPTI flushes at most this often */
/* CUPTI 13.0 GA (API 130000) can crash in cuptiActivityFlushAll (fixed in
 * 13.0 Update 1): there, at most this often; CUPTI's worker thread hands
 * over full buffers meanwhile, and the exit's forced flush the rest */
#define FLUSH_MIN_GA_NS (10000ull * 1000000)
static uint64_t flush_every_ns = FLUSH_MIN_NS;

const char *cupti__result_string(CUptiResult r)
{
	const char *s = NULL;

	if (cupti_fn.cuptiGetResultString)
		cupti_fn.cuptiGetResultString(r, &s);
	return s ? s : "unknown error";
}

/*
 * CUPTI refused. Without a driver the program runs as untraced, quietly.
 * With one (a libcupti that does not match it, say), launches through
 * libcudart are still timed with CUDA events.
 */
static int cupti_failed(const char *why)
{
	void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);

	if (!driver) {
		pr_info("CUPTI is not usable (%s): no CUDA device activity", why);
		return CUPTI_UNAVAILABLE;
	}
	dlclose(driver);
	pr_warn("CUPTI is not usable (%s): device times come from CUDA events around "
		"libcudart launches", why);
	return CUPTI_DISABLED;
}

static CUptiResult subscribe_as_gputrace(char *holder, size_t len)
{
	cupti__api_watch_exits();
	if (cupti_fn.cuptiSubscribe_v2) {
		CUpti_SubscriberParams p = {
			.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
			.subscriberName = "gputrace",
			.oldSubscriberName = holder,
			.oldSubscriberSize = len,
		};
		return cupti_fn.cuptiSubscribe_v2(&subscriber, cupti__callback, NULL, &p);
	}
	return cupti_fn.cuptiSubscribe(&subscriber, cupti__callback, NULL);
}

/* Taking CUPTI back from the program: it may be someone else's again. */
static int subscribe_quiet(void)
{
	char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = "";

	return subscribe_as_gputrace(holder, sizeof(holder)) == CUPTI_SUCCESS ? CUPTI_ON
									    : CUPTI_HELD;
}

static int subscribe(void)
{
	char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = "";
	CUptiResult r;

	r = subscribe_as_gputrace(holder, sizeof(holder));
	if (r == CUPTI_SUCCESS)
		return CUPTI_ON;
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		holder[sizeof(holder) - 1] = 0;
		pr_warn("CUPTI is already in use by %s: CUDA API calls are traced through "
			"libcudart and device times come from CUDA events",
			*holder ? holder : "another tool (Nsight, torch.profiler, a sanitizer)");
		return CUPTI_HELD;
	}
	return cupti_failed(cupti__result_string(r));
}

/* The kinds we enabled, to disable when we hand CUPTI over. */
static CUpti_ActivityKind our_kinds[16];
static unsigned nour_kinds;

static bool enable_kind(CUpti_ActivityKind kind, const char *name)
{
	CUptiResult r = cupti_fn.cuptiActivityEnable(kind);

	if (r != CUPTI_SUCCESS)
		pr_dbg("cupti: enabling %s: %s", name, cupti__result_string(r));
	else if (nour_kinds < sizeof(our_kinds) / sizeof(our_kinds[0]))
		our_kinds[nour_kinds++] = kind;
	return r == CUPTI_SUCCESS;
}

/* The device activity configuration asks for; false when none of it could
 * be enabled (no driver, no GPU: every kind fails the same way). */
static bool enable_kinds(void)
{
	unsigned want = 0, got = 0;

#define TRY_KIND(kind, name) (want++, got += enable_kind(CUPTI_ACTIVITY_KIND_##kind, name))
	if (gt_cfg.kinds & GT_KIND(KERNEL)) {
		/* one span per graph launch instead of its nodes: first, so the
		 * kernel kind knows to leave graph nodes out */
		bool graphs = gt_cfg.graph_trace && enable_kind(CUPTI_ACTIVITY_KIND_GRAPH_TRACE,
								"graph trace");
		/* never KIND_KERNEL: it serializes kernels */
		bool kernels = enable_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels");
		if (!kernels && graphs) {
			pr_warn("%s does not combine with kernel tracing in this CUPTI: "
				"tracing graph nodes one by one",
				gt_setting("--graph-trace", "GPUTRACE_GRAPH_TRACE"));
			cupti_fn.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
			nour_kinds--;
			kernels = enable_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels");
		}
		want++;
		got += kernels;
	}
	if (gt_cfg.kinds & GT_KIND(MEMCPY)) {
		TRY_KIND(MEMCPY, "copies");
		TRY_KIND(MEMCPY2, "peer copies");
	}
	if (gt_cfg.kinds & GT_KIND(MEMSET))
		TRY_KIND(MEMSET, "memsets");
	if (gt_cfg.kinds & GT_KIND(SYNC)) {
		/* waits, not the polls of work still running (PyTorch polls a lot) */
		if (cupti_fn.cuptiActivityEnableAllSyncRecords)
			cupti_fn.cuptiActivityEnableAllSyncRecords(0);
		TRY_KIND(SYNCHRONIZATION, "synchronization");
	}
	if (gt_cfg.kinds & GT_KIND(OVERHEAD))
		TRY_KIND(OVERHEAD, "overhead");
#undef TRY_KIND
	return !want || got;
}

static void enable_callbacks(void)
{
	if (gt_cfg.kinds & GT_KIND(RUNTIME)) {
		if (cupti_fn.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) ==
		    CUPTI_SUCCESS)
			atomic_store(&cupti_rt_callbacks_on, true);
	}
	if (gt_cfg.kinds & GT_KIND(DRIVER))
		cupti_fn.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
	/* contexts: which device a synchronization record's context is on */
	cupti_fn.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
				     CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
	/* contexts' ends: their range profilers go with them (a context made anew
	 * gets one of its own) */
	if (gt_metrics_on(cupti_range_launches))
		cupti_fn.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
					     CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
	/* modules: their kernels' names go with them */
	cupti_fn.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
				     CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
	/* --capture-range cudaProfilerApi, whatever the activities: a program
	 * that links cudart statically is seen only here (its cudaProfilerStart
	 * and Stop call the driver's) */
	if (gt_cfg.capture_range == GT_RANGE_PROFILER) {
		cupti_fn.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
					     CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
		cupti_fn.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
					     CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
	}
}

/* Runs before libcudart's own exit handlers (registered earlier) and before
 * libcupti's destructors: the last moment CUPTI can hand over its buffers. */
GT_STARTUP_CODE static void cupti_atexit(void)
{
	int expect = CUPTI_ON, state = atomic_load(&cupti_state);

	/* CUPTI never came up (most processes): no lock to take at every exit */
	if (state != CUPTI_ON && state != CUPTI_STARTING)
		return;
	/* registered after libcupti loaded, so run before its exit handlers: PM sampling
	 * may be starting on the drain thread (pm_sampling.c, host_preload) */
	cupti__pm_stop();
	pthread_mutex_lock(&cupti_share_lock);
	if (atomic_compare_exchange_strong(&cupti_state, &expect, CUPTI_STOPPED)) {
		cupti_self++;
		cupti_fn.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		cupti__count_dropped();
		cupti_self--;
		atomic_store(&exit_flushed, true);
	}
	pthread_mutex_unlock(&cupti_share_lock);
}

/*
 * CUPTI 12.6 Update 2 up to 13.1 could report zero kernel timestamps with a
 * timestamp callback registered (fixed in 13.1; updates of 12.x share one
 * API version, 24 and on). There, CUPTI keeps its clock and ours is fitted.
 */
static bool timestamp_callback_safe(uint32_t version)
{
	return version >= 130100 || (version && version < 24);
}

static bool session_begin(void);
static bool timestamp_ok; /* this CUPTI may use our clock */

static int start_cupti(void)
{
	char path[PATH_MAX];
	uint32_t version = 0;
	int st;

	if (gt_cfg.disable_cupti)
		return CUPTI_DISABLED;
	if (cupti__load(path, sizeof(path)) < 0) {
		pr_info("libcupti not found (looked next to libcudart, in CUDA_HOME and %s): "
			"no CUDA device activity", GT_CUDA_HOME);
		return CUPTI_UNAVAILABLE;
	}
	cupti_fn.cuptiGetVersion(&version);
	if (version)
		cupti_runtime_version = version;
	pr_dbg("cupti: %s, CUPTI API version %u (built with %u)", path, version,
	       (unsigned)CUPTI_API_VERSION);
	if (version == 130000) {
		flush_every_ns = FLUSH_MIN_GA_NS;
		pr_warn("CUPTI 13.0 (API version 130000) has a crash in cuptiActivityFlushAll "
			"(fixed in CUDA 13.0 Update 1): flushing at most every 10 s; update CUPTI "
			"for a trace that stays current");
	}
	/* Subscribing first: when another tool holds CUPTI, nothing else of
	 * ours must reach it (a timestamp callback would change its clock). */
	st = subscribe();
	if (st != CUPTI_ON)
		return st;
	timestamp_ok = timestamp_callback_safe(version);
	if (!session_begin())
		goto unusable;
	if (gt_cfg.stacks)
		stacks__skip_libraries(vendor_libs);
	atexit(cupti_atexit);
	pr_dbg("cupti: tracing (%s clock)", clock_is_ours ? "host" : "calibrated");
	return CUPTI_ON;

unusable:
	cupti_fn.cuptiUnsubscribe(subscriber);
	subscriber = NULL;
	return cupti_failed("activity tracing refused");
}

/* After subscribing: our clock (or a fit of CUPTI's), buffers, kinds and
 * callbacks. False when activity tracing is refused. */
static bool session_begin(void)
{
	if (timestamp_ok && cupti_fn.cuptiActivityRegisterTimestampCallback &&
	    cupti_fn.cuptiActivityRegisterTimestampCallback(cupti__timestamp) == CUPTI_SUCCESS) {
		clock_is_ours = true;
		cupti__clock_identity();
	} else if (!clock_is_ours) {
		cupti__clock_refit();
	}
	/* thread ids in records (overheads) are gettid() values */
	if (cupti_fn.cuptiSetThreadIdType)
		cupti_fn.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	if (cupti_fn.cuptiActivityRegisterCallbacks(cupti__buffer_requested,
						    cupti__buffer_completed) != CUPTI_SUCCESS)
		return false;
	nour_kinds = 0;
	if (!enable_kinds())
		return false;
	enable_callbacks();
	last_flush_ns = gt_clock_ns();
	return true;
}

/* Everything of ours back: the kinds off, every record flushed to us,
 * unsubscribed; a timestamp callback goes only with cuptiFinalize. */
static void session_end(void)
{
	cupti_self++;
	atomic_store(&cupti_rt_callbacks_on, false);
	for (unsigned i = 0; i < nour_kinds; i++)
		cupti_fn.cuptiActivityDisable(our_kinds[i]);
	nour_kinds = 0;
	cupti_fn.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	cupti_self--;
	cupti__count_dropped();
	cupti_self++;
	cupti_fn.cuptiUnsubscribe(subscriber);
	subscriber = NULL;
	cupti__api_session_ended();
	if (clock_is_ours && cupti_fn.cuptiFinalize)
		cupti_fn.cuptiFinalize();
	cupti_self--;
}

bool cupti__yield(void)
{
	int expect = CUPTI_ON;

	if (!atomic_compare_exchange_strong(&cupti_state, &expect, CUPTI_YIELDED))
		return false;
	session_end();
	return true;
}

bool cupti__take_back(void)
{
	int st;

	if (atomic_load(&cupti_state) != CUPTI_YIELDED)
		return false;
	cupti_self++;
	st = subscribe_quiet();
	if (st == CUPTI_ON && !session_begin()) {
		cupti_fn.cuptiUnsubscribe(subscriber);
		subscriber = NULL;
		st = CUPTI_HELD;
	}
	cupti_self--;
	if (st != CUPTI_ON)
		return false;
	atomic_store(&cupti_state, CUPTI_ON);
	return true;
}

void cupti__start(const char *why)
{
	int expect = CUPTI_OFF;

	if (!atomic_compare_exchange_strong(&cupti_state, &expect, CUPTI_STARTING))
		return;
	pr_dbg("cupti: starting (%s)", why);
	cupti_self++;
	int st = start_cupti();
	cupti_self--;
	atomic_store(&cupti_state, st);
	/* CUPTI's records are collected by the drain cycle: it must run */
	if (st == CUPTI_ON)
		gt_start_writer();
}

/*
 * Called by the CUDA driver inside cuInit when CUDA_INJECTION64_PATH names
 * this library (every process that initializes CUDA, static or shared
 * cudart, dlopen()ed late or not). 1 = success for the driver.
 */
GT_EXPORT int InitializeInjection(void)
{
	gt_ensure_init();
	if (gt_backend_enabled(GT_BACKEND_CUPTI))
		cupti__start("cuInit");
	return 1;
}

GT_STARTUP_CODE static int cupti_init(void)
{
	const char *other, *other_nvtx;
	int ours;

	cupti_backend_on = true;
	if (gt_cfg.disable_cupti)
		atomic_store(&cupti_state, CUPTI_DISABLED);
	/* only if unset: another tool's injection is left alone */
	ours = injection__claim(GT_INJ_CUDA, &other);
	if (ours < 0) {
		pr_dbg("cupti: cannot find this library's path; CUDA starts at the first call");
		return 0;
	}
	/* as for ITT (backends/itt): NVTX loads one tool, the one named first */
	if (!injection__claim(GT_INJ_NVTX, &other_nvtx))
		pr_warn("NVTX_INJECTION64_PATH names another NVTX tool (%s): NVTX ranges go to "
			"it, not to this trace", other_nvtx);
	/* release: a thread that sees it (a dlopen, a runtime call, the drain
	 * thread) sees the environment set above */
	atomic_store_explicit(&cupti_injection_ours, ours, memory_order_release);
	if (!ours)
		pr_dbg("cupti: CUDA_INJECTION64_PATH is %s; CUPTI starts at the first CUDA call",
		       other);
	return 0;
}

/* An unload waits this long for a drain inside a flush; a drain that took
 * longer once is taken to be stuck in CUPTI, and later unloads only try. */
#define UNLOAD_FLUSH_WAIT_MS 500
static _Atomic bool unload_wait_timed_out;

void cupti__module_unloading(void)
{
	uint64_t now = gt_clock_ns();
	unsigned wait_ms;

	if (cupti_self || atomic_load(&cupti_state) != CUPTI_ON ||
	    (flush_every_ns > FLUSH_MIN_NS && now - atomic_load(&last_flush_ns) < flush_every_ns))
		return;
	/* complete buffers come back now, their names copied (records.c). Not
	 * tried once only: the drain holds the lock through its flush, and the
	 * records it is not handed are read after their names have gone. */
	wait_ms = atomic_load(&unload_wait_timed_out) ? 0 : UNLOAD_FLUSH_WAIT_MS;
	if (!cupti__flush_complete(wait_ms) && wait_ms &&
	    gt_clock_ns() - now >= (uint64_t)wait_ms * 1000000)
		atomic_store(&unload_wait_timed_out, true);
}

bool cupti__flush_complete(unsigned wait_ms)
{
	struct timespec until;
	bool done = false;

	if (wait_ms)
		until = gt_timespec_after_ms(CLOCK_REALTIME, wait_ms);
	/* not while CUPTI changes hands (share.c) */
	if (wait_ms ? pthread_mutex_timedlock(&cupti_share_lock, &until)
		    : pthread_mutex_trylock(&cupti_share_lock))
		return false;
	if (atomic_load(&cupti_state) == CUPTI_ON) {
		cupti_self++;
		done = cupti_fn.cuptiActivityFlushAll(0) == CUPTI_SUCCESS;
		cupti_self--;
	}
	pthread_mutex_unlock(&cupti_share_lock);
	return done;
}

static void cupti_on_dlopen(const char *path, void *handle)
{
	const char *base;

	if (!path)
		return;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (gt_cfg.stacks && atomic_load(&cupti_state) == CUPTI_ON &&
	    (!strncmp(base, "libcuda", 7) || !strncmp(base, "libnvidia-", 10)))
		stacks__skip_libraries(vendor_libs);
	if (atomic_load_explicit(&cupti_injection_ours, memory_order_acquire) ||
	    atomic_load(&cupti_state) != CUPTI_OFF)
		return;
	if (!strncmp(base, "libcuda.so", 10))
		cupti__start("libcuda loaded");
}

/* The drain thread's flush, at now (cupti_share_lock held, CUPTI on). */
static void flush_locked(uint64_t now, uint32_t flags)
{
	last_flush_ns = now;
	cupti_self++;
	cupti_fn.cuptiActivityFlushAll(flags);
	cupti_self--;
	cupti__count_dropped();
	/* after the flush: its records fall between the last two fits */
	if (!clock_is_ours)
		cupti__clock_refit();
}

/* The cycles an exec waits for (lifecycle.c): the image's last ones. */
static bool exec_pending(void)
{
	const char *why = atomic_load(&gt_end_reason);

	return why && !strcmp(why, "exec");
}

/* Drain thread, every cycle. */
static void cupti_flush(bool final)
{
	pthread_mutex_lock(&cupti_share_lock);
	int st = atomic_load(&cupti_state);

	if (st == CUPTI_ON) {
		uint64_t now = gt_clock_ns();
		/* An exec ends the image as an exit does: CUPTI hands over its
		 * buffers now, forced (a buffer holding one unfinished record
		 * would withhold the synchronized work beside it), or the
		 * image's device work is never read (the exec drops them). */
		bool last = final || exec_pending();

		if (last || now - last_flush_ns >= flush_every_ns)
			flush_locked(now, last ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
		else if (!clock_is_ours && flush_every_ns > FLUSH_MIN_NS)
			/* Flushed rarely (CUPTI 13.0 GA): CUPTI's clock is still fitted as
			 * often as at flushes elsewhere (it refits at most every 10 ms): a
			 * fit is a few clock reads. Fitted every 10 s, a step of NTP's
			 * inside a segment was taken for a rate, and drawn as a ramp. */
			cupti__clock_refit();
	}
	/* also after the exit flush (STOPPED): a short program's rows get their
	 * device's name, and the clock a fit after its last records */
	if (st == CUPTI_ON || st == CUPTI_STOPPED)
		cupti__name_devices();
	if (st == CUPTI_STOPPED && !clock_is_ours && atomic_exchange(&exit_flushed, false))
		cupti__clock_refit();
	pthread_mutex_unlock(&cupti_share_lock);
	/* the instants of CUPTI handed to the program and taken back (share.c) */
	cupti__share_marks();
	cupti__drain_completed();
	if (cupti__event_timing())
		cupti__events_poll(final);
}

/*
 * A capture window's file is ended next (drain thread, GT_HOOK_WINDOW_END):
 * CUPTI delivers records only when a buffer is full or flushed, so without
 * a flush now the window's device work would reach us after its file ended.
 * Forced, as at exit: a flag-0 flush withholds every buffer that holds one
 * unfinished record, and each thread's buffer goes on filling with work
 * launched after the close. What a forced flush takes unfinished is work
 * still running 10 ms after the close (across the window's edge: not in it
 * anyway) or launched after it (records.c, no_time). Never on the thread of
 * a CUPTI callback: a window closed by cuProfilerStop's callback, or the
 * next one's cuProfilerStart waiting there for this file, is flushed here.
 */
static void cupti_window_end(void)
{
	pthread_mutex_lock(&cupti_share_lock);
	uint64_t now = gt_clock_ns();

	/* CUPTI 13.0 GA's crash (flush_every_ns): not more often even here; a
	 * record that comes later is outside the window (window_late) */
	if (atomic_load(&cupti_state) == CUPTI_ON &&
	    (flush_every_ns == FLUSH_MIN_NS || now - last_flush_ns >= flush_every_ns))
		flush_locked(now, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_unlock(&cupti_share_lock);
	/* the cycle that ends the file turns them into events (cupti_flush) */
}

GT_STARTUP_CODE static void cupti_stop(void)
{
	cupti_atexit();
	cupti__emit_folded();
}

GT_FORK_CODE static void cupti_atfork_child(void)
{
	int expect = CUPTI_ON;

	/* CUDA does not survive fork: the parent's CUPTI is not ours to drive.
	 * The child's runtime calls (they fail) are traced through libcudart. */
	atomic_compare_exchange_strong(&cupti_state, &expect, CUPTI_STOPPED);
	atomic_store(&cupti_rt_callbacks_on, false);
	/* the hang watchdog's thread may have held it (pending.c flushes CUPTI),
	 * and it is not coordinated with fork as the drain thread is */
	pthread_mutex_init(&cupti_share_lock, NULL);
	cupti__buffers_forget();
	cupti__pending_forget();
	cupti__events_forget();
	cupti__share_forget();
	cupti__nvtx_forget();
	cupti__api_reset();
	cupti__fold_forget();
}

/* dlsym() of libcudart's, libcupti's or libcuda's cuInit by the program */
static void *cupti_wrapper_for(const char *symbol)
{
	if (!symbol)
		return NULL;
	if (!strncmp(symbol, "cupti", 5))
		return cupti__share_wrapper_for(symbol);
	return cupti__rt_wrapper_for(symbol) ?: cupti__drv_wrapper_for(symbol);
}

static const struct gt_backend cupti_backend = {
	.name = "cupti",
	.enabled_by = GT_BACKEND_CUPTI,
	.init = cupti_init,
	.on_dlopen = cupti_on_dlopen,
	.flush = cupti_flush,
	.stop = cupti_stop,
	.atfork_child = cupti_atfork_child,
	.pending = cupti__pending,
	.window_end = cupti_window_end,
	.wrapper_for = cupti_wrapper_for,
};

GT_BACKEND_REGISTER(cupti_backend);
