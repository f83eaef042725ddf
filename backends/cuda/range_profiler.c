// SPDX-License-Identifier: MIT
/*
 * Hardware metrics of every CUDA kernel (--metrics-mode kernel): CUPTI's
 * range profiler (cupti_range_profiler.h, CUDA 12.6 and later), auto range,
 * user replay of one pass, and the host profiler (pm_sampling.c) for the values.
 *
 * One session per kernel launch: the driver's launch callback starts the
 * context's range profiler on entry and, on exit, stops it, decodes the one
 * range (maxRangesPerPass 1: range 0 is that launch's kernel, whatever other
 * threads do, since sessions are serialized by range_lock) and evaluates it.
 * The values wait in a table under the launch's correlation id until the
 * kernel's activity record arrives (records.c), which puts them on the
 * kernel's span as args.metrics; the summary's per-kernel metrics follow.
 *
 * Auto range with user replay, not kernel replay: on an H200 (CUPTI 13.0.1)
 * kernel replay delivered every measured kernel's activity record without
 * timestamps; with one pass, user replay replays nothing. There, each session
 * also ran a kernel of the profiler's own (WaitNs, ~80 us, on a stream of its
 * own) under the launch's correlation id: the launch's stream tells them apart,
 * and records.c draws it as the profiler's overhead, not as the program's.
 *
 * The cost, stated in the README: auto range serializes kernel launches,
 * and each launch waits for its kernel (decoding needs the range done). A
 * metric set that fits one pass runs every kernel once; more passes are
 * refused (each further pass would need each kernel run again).
 *
 * --metrics-mode nvtx: user ranges instead, one per thread's outermost NVTX
 * push/pop range (see "per NVTX range" below), values on the range's span.
 *
 * Refusals, one line each: no range profiler in this libcupti, a metric the
 * chip lacks, more than one pass, no permission, CUPTI held by another tool.
 * A refusal holds for the device (its contexts made anew after a reset stay
 * unmeasured, without another line); a session that measured nothing although
 * its launch ran is said once and counted as lost cupti_range_unmeasured.
 *
 * A context's profiler goes with the context (cudaDeviceReset, cuCtxDestroy):
 * CUPTI's resource callback, before the destruction, disables it, and a context
 * made later, even at the same handle, enables one of its own at its first launch
 * (a stale one measured nothing there, silently).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "inject/watchdog.h"
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>

#include "backends/cuda/internal.h"
#include "backends/cuda/pm_sampling.h"
#include "inject/config.h"
#include "inject/tables.h"

#define RANGE_METRICS_MAX 8
#define RANGE_CTX_MAX     64
/* Metrics waiting for their kernel's record, by correlation id (a launch takes one or two
 * ids, and records come in buffers: a slot taken again before its record came counts as
 * lost cupti_range_unclaimed). 5 MiB, allocated in kernel mode only. */
#define RANGE_SLOTS       65536
#define RANGE_WAIT_NS     (1000000000ull) /* a record's longest wait for its metrics */

#define RANGE_FUNCS(X)                                                                     \
	X(cuptiRangeProfilerEnable)                                                        \
	X(cuptiRangeProfilerDisable)                                                       \
	X(cuptiRangeProfilerSetConfig)                                                     \
	X(cuptiRangeProfilerStart)                                                         \
	X(cuptiRangeProfilerStop)                                                          \
	X(cuptiRangeProfilerPushRange)                                                     \
	X(cuptiRangeProfilerPopRange)                                                      \
	X(cuptiRangeProfilerDecodeData)                                                    \
	X(cuptiRangeProfilerGetCounterDataSize)                                            \
	X(cuptiRangeProfilerCounterDataImageInitialize)                                    \
	X(cuptiRangeProfilerGetCounterDataInfo)

static struct {
#define RANGE_FN(name) __typeof__(name) *name;
	RANGE_FUNCS(RANGE_FN)
#undef RANGE_FN
} rf;

/* set at start-up in every process: in the page start-up writes anyway */
GT_HIDDEN bool cupti_range_kernel GT_STARTUP_STATE;
GT_HIDDEN bool cupti_range_nvtx GT_STARTUP_STATE;
GT_HIDDEN bool cupti_range_launches GT_STARTUP_STATE; /* either: the launch callback calls us */
#ifndef GT_NO_METRICS
GT_HIDDEN bool cupti_drv_hooks GT_STARTUP_STATE;
#endif

/* One context's range profiler; ctx NULL: a free entry (its context destroyed). */
struct range_ctx {
	CUcontext ctx;
	uint32_t device; /* CUPTI's device id; UINT32_MAX: not known */
	bool refused; /* said why once: its launches run unmeasured */
	const void *owner; /* nvtx: the thread whose range holds the session */
	CUpti_RangeProfiler_Object *obj;
	void *host;
	uint8_t *config, *data;
	size_t config_size, data_size;
	struct cupti_pm_metric m[RANGE_METRICS_MAX];
	const char *names[RANGE_METRICS_MAX];
	uint32_t keys[RANGE_METRICS_MAX];
	size_t n;
};

static pthread_mutex_t range_lock = PTHREAD_MUTEX_INITIALIZER; /* sessions, contexts */
GT_TABLE(struct range_ctx, range_ctxs, RANGE_CTX_MAX);
static unsigned range_nctx;
static enum { RANGE_NEW, RANGE_READY, RANGE_OFF } range_state;
static struct cupti_pm_metric range_chosen[RANGE_METRICS_MAX];
static char range_labels[RANGE_METRICS_MAX][128];
static size_t range_nchosen;
static bool range_default;
static uint64_t range_refused_devices; /* bit d: device d's contexts run unmeasured */
static GT_TLS struct range_ctx *range_open; /* this thread's launch in a session */
static GT_TLS uint32_t range_corr;
static GT_TLS uint32_t range_stream; /* CUPTI's id of that launch's stream */
/* nvtx: this thread's outermost NVTX range (its name; 0: none open), and its session,
 * started by the range's first kernel launch */
static GT_TLS uint32_t nvtx_name;
static GT_TLS struct range_ctx *nvtx_open;
static GT_TLS bool nvtx_crowded; /* not measured: another thread's session, a capture */
/* nvtx: a thread that ends inside its outermost range ends its session (nvtx_thread_end):
 * left open, it held the context's profiler for good, and every later range of the
 * context's other threads went unmeasured as "overlapped" */
static pthread_key_t nvtx_key;
static bool nvtx_key_made;
static GT_TLS bool nvtx_key_set;
/*
 * Stream captures in progress, from the driver's callbacks. On an H200 (driver 580.159,
 * CUPTI 13.0.1) a session started at a kernel launch into a capturing stream failed
 * (CUPTI_ERROR_UNKNOWN) and the capture was invalidated: the program's next captured
 * call returned cudaErrorStreamCaptureInvalidated. So no session starts while a capture
 * is in progress, and an NVTX range inside which a capture begins carries no metrics
 * (its session, if open, ends at the capture's begin, before it).
 */
static _Atomic int range_captures;

/* ---- values waiting for their kernel ---- */

enum { SLOT_FREE, SLOT_PENDING, SLOT_READY };
static struct range_slot {
	uint32_t corr;
	uint32_t stream; /* CUPTI's id of the launch's stream; NO_STREAM: unknown */
	uint8_t state;
	uint8_t n;
	const uint32_t *keys;
	double v[RANGE_METRICS_MAX];
} *_Atomic range_slots;
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;

static void slot_set(uint32_t corr, uint32_t stream, uint8_t state, const uint32_t *keys,
		     const double *v, size_t n)
{
	struct range_slot *s = &atomic_load(&range_slots)[corr % RANGE_SLOTS];

	pthread_mutex_lock(&slot_lock);
	if (state == SLOT_FREE && s->corr != corr) {
		pthread_mutex_unlock(&slot_lock);
		return;
	}
	if (s->state != SLOT_FREE && s->corr != corr)
		gt_lost_add(cupti__key("cupti_range_unclaimed"), 1); /* its kernel never came */
	s->corr = corr;
	s->stream = stream;
	s->state = state;
	s->keys = keys;
	s->n = (uint8_t)n;
	if (n)
		memcpy(s->v, v, n * sizeof(*v));
	pthread_mutex_unlock(&slot_lock);
}

unsigned cupti__range_args(uint32_t corr, uint32_t stream, struct gt_arg *args, unsigned n,
			   unsigned max, bool *profilers)
{
	struct range_slot *slots = atomic_load(&range_slots), *s;
	uint64_t waited = 0;

	*profilers = false;
	if (!slots)
		return n; /* no session yet */
	s = &slots[corr % RANGE_SLOTS];
	for (;;) {
		pthread_mutex_lock(&slot_lock);
		/* (the stream stays once the values are taken: its kernel may come first) */
		if (s->corr == corr && s->stream != NO_STREAM && s->stream != stream) {
			*profilers = true;
			pthread_mutex_unlock(&slot_lock);
			return n;
		}
		if (s->corr != corr || s->state == SLOT_FREE) {
			pthread_mutex_unlock(&slot_lock);
			return n; /* not measured (launched outside a session, or refused) */
		}
		if (s->state == SLOT_READY)
			break;
		pthread_mutex_unlock(&slot_lock);
		/* its launch is still decoding (the record came between the kernel's end
		 * and the launch's return): a moment, bounded */
		if (waited >= RANGE_WAIT_NS) {
			gt_lost_add(cupti__key("cupti_range_late"), 1);
			return n;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 50000 }, NULL);
		waited += 50000;
	}
	for (unsigned i = 0; i < s->n && n < max; i++)
		args[n++] = (struct gt_arg){ .key = s->keys[i], .type = GT_ARG_METRIC,
					     .v.f = s->v[i] };
	s->state = SLOT_FREE;
	pthread_mutex_unlock(&slot_lock);
	return n;
}

/* ---- the range profiler of a context ---- */

static const char *range_unit(void)
{
	return cupti_range_nvtx ? "per-range" : "per-kernel";
}

static int range_load(void)
{
	void *h;

	if (rf.cuptiRangeProfilerEnable)
		return 0;
	if (cupti__host_start() || !(h = cupti__loaded_handle()))
		return -ENOSYS;
#define RANGE_SYM(name)                                                                    \
	rf.name = (__typeof__(rf.name))cupti__dlsym(h, #name);                             \
	if (!rf.name) {                                                                    \
		memset(&rf, 0, sizeof(rf));                                                \
		dlclose(h);                                                                \
		return -ENOSYS;                                                            \
	}
	RANGE_FUNCS(RANGE_SYM)
#undef RANGE_SYM
	dlclose(h);
	return 0;
}

static CUptiResult range_image_init(struct range_ctx *c)
{
	CUpti_RangeProfiler_CounterDataImage_Initialize_Params p = {
		CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE };

	p.pRangeProfilerObject = c->obj;
	p.counterDataSize = c->data_size;
	p.pCounterData = c->data;
	return rf.cuptiRangeProfilerCounterDataImageInitialize(&p);
}

/* An empty counter data image, and the config for the next session. */
static CUptiResult range_arm(struct range_ctx *c)
{
	CUpti_RangeProfiler_SetConfig_Params p = {
		CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE };
	CUptiResult r = range_image_init(c);

	if (r != CUPTI_SUCCESS)
		return r;
	p.pRangeProfilerObject = c->obj;
	p.configSize = c->config_size;
	p.pConfig = c->config;
	p.counterDataImageSize = c->data_size;
	p.pCounterDataImage = c->data;
	/* one pass, so user replay replays nothing (kernel replay left kernel records
	 * without timestamps: see the top); nvtx: user ranges, one nesting level, each
	 * further level being one more pass, i.e. running the range's code again */
	p.range = cupti_range_nvtx ? CUPTI_UserRange : CUPTI_AutoRange;
	p.replayMode = CUPTI_UserReplay;
	p.maxRangesPerPass = 1;
	p.numNestingLevels = 1;
	p.minNestingLevel = 1;
	p.passIndex = 0;
	p.targetNestingLevel = 1;
	return rf.cuptiRangeProfilerSetConfig(&p);
}

static void range_ctx_free(struct range_ctx *c)
{
	CUpti_RangeProfiler_Disable_Params d = { CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE };

	if (c->obj) {
		d.pRangeProfilerObject = c->obj;
		rf.cuptiRangeProfilerDisable(&d);
		c->obj = NULL;
	}
	c->owner = NULL;
	cupti__pm_host_free(c->host, c->config);
	free(c->data);
	c->host = NULL;
	c->config = c->data = NULL;
}

/* The context's chip, config image, range profiler and images. 0, or -errno after
 * one line. */
static int range_ctx_start(struct range_ctx *c)
{
	CUpti_RangeProfiler_Enable_Params en = { CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_GetCounterDataSize_Params ds = {
		CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE };
	uint32_t device = 0;
	const char *chip;
	size_t passes = 0;
	char what[64];
	CUptiResult r;
	int e;

	if ((r = cupti_fn.cuptiGetDeviceId(c->ctx, &device)) != CUPTI_SUCCESS) {
		cupti__pm_refused(cupti_range_nvtx ? "per-range metrics: the context's device"
						   : "per-kernel metrics: the context's device",
				  r);
		return -EIO;
	}
	c->device = device;
	if (device < 64 && (range_refused_devices & (1ull << device)))
		return -EPERM; /* said for an earlier context of the device */
	snprintf(what, sizeof(what), "%s metrics on GPU %u", range_unit(), device);
	if ((e = cupti__chip_name(device, &chip))) {
		cupti__pm_refused(what, -e);
		return -EIO;
	}
	memcpy(c->m, range_chosen, sizeof(c->m));
	c->n = range_nchosen;
	if (cupti__pm_config(CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip, NULL, c->m, &c->n,
			     range_default, &c->host, &c->config, &c->config_size, &passes))
		return -EINVAL;
	if (passes != 1) {
		pr_warn("CUDA metrics: the chosen metrics need %zu passes on GPU %u (%s); "
			"%s metrics take what one pass collects (more would replay every %s): "
			"choose fewer",
			passes, device, chip, range_unit(), cupti_range_nvtx ? "range" : "kernel");
		return -E2BIG;
	}
	en.ctx = c->ctx;
	if ((r = rf.cuptiRangeProfilerEnable(&en)) != CUPTI_SUCCESS) {
		cupti__pm_refused(what, r);
		return -EIO;
	}
	c->obj = en.pRangeProfilerObject;
	for (size_t i = 0; i < c->n; i++) {
		c->names[i] = c->m[i].name;
		c->keys[i] = gt_str_intern(c->m[i].label);
	}
	ds.pRangeProfilerObject = c->obj;
	ds.pMetricNames = c->names;
	ds.numMetrics = c->n;
	ds.maxNumOfRanges = 1;
	ds.maxNumRangeTreeNodes = 1;
	if ((r = rf.cuptiRangeProfilerGetCounterDataSize(&ds)) != CUPTI_SUCCESS ||
	    !(c->data = calloc(1, ds.counterDataSize))) {
		cupti__pm_refused(what, r);
		return -EIO;
	}
	c->data_size = ds.counterDataSize;
	if ((r = range_arm(c)) != CUPTI_SUCCESS) {
		cupti__pm_refused(what, r);
		return -EIO;
	}
	pr_info("CUDA metrics: range profiler on GPU %u (%s), %zu metrics per %s", device, chip,
		c->n, cupti_range_nvtx ? "NVTX range" : "kernel");
	return 0;
}

/* range_lock held: a launch whose kernel ran (an NVTX range whose kernels did) carries
 * no metrics, for a reason no refusal said: counted, and said once. */
static void range_unmeasured(const char *why)
{
	static bool said;

	gt_lost_add(cupti__key("cupti_range_unmeasured"), 1);
	if (said)
		return;
	said = true;
	pr_warn("CUDA metrics: %s: its %s carries no metrics (counted as lost "
		"cupti_range_unmeasured)",
		why, cupti_range_nvtx ? "range" : "kernel");
}

/* range_lock held: a refusal (said already) holds for c's device from now on. */
static void range_refuse(struct range_ctx *c)
{
	range_ctx_free(c);
	c->refused = true;
	if (c->device < 64)
		range_refused_devices |= 1ull << c->device;
}

/* range_lock held: an entry for a new context, a destroyed one's if any is free. */
static struct range_ctx *range_ctx_new(CUcontext ctx)
{
	struct range_ctx *c = NULL;

	for (unsigned i = 0; i < range_nctx && !c; i++)
		if (!range_ctxs[i].ctx)
			c = &range_ctxs[i];
	if (!c && range_nctx < RANGE_CTX_MAX)
		c = &range_ctxs[range_nctx++];
	if (c) {
		memset(c, 0, sizeof(*c));
		c->ctx = ctx;
		c->device = UINT32_MAX;
	}
	return c;
}

/* range_lock held: the context's profiler, started on first use; NULL if refused. */
static struct range_ctx *range_ctx_of(CUcontext ctx)
{
	struct range_ctx *c;

	if (range_state == RANGE_NEW) {
		range_state = RANGE_OFF;
		if (range_load()) {
			pr_warn("CUDA metrics: this libcupti has no range profiler (CUDA 12.6 or "
				"later has it): no %s metrics",
				range_unit());
			return NULL;
		}
		if (!atomic_load(&range_slots)) {
			struct range_slot *slots = calloc(RANGE_SLOTS, sizeof(*slots));
			if (!slots) {
				pr_warn("CUDA metrics: no memory for per-kernel metrics");
				return NULL;
			}
			atomic_store(&range_slots, slots);
		}
		range_nchosen = cupti__pm_choose(gt_cfg.metrics, true, range_chosen, range_labels,
						 RANGE_METRICS_MAX);
		range_default = range_nchosen &&
				range_chosen[0].name == cupti__range_basic(&(size_t){ 0 })[0].name;
		range_state = RANGE_READY;
	}
	if (range_state != RANGE_READY || !ctx)
		return NULL;
	for (unsigned i = 0; i < range_nctx; i++)
		if (range_ctxs[i].ctx == ctx)
			return range_ctxs[i].refused ? NULL : &range_ctxs[i];
	if (!(c = range_ctx_new(ctx))) {
		range_unmeasured("more contexts at once than the range profiler's table holds");
		return NULL;
	}
	if (range_ctx_start(c)) {
		range_refuse(c);
		return NULL;
	}
	return c;
}

/* A kernel launch API (not cuLaunchHostFunc, which runs no kernel). */
static bool is_kernel_launch(const char *name)
{
	return name && !strncmp(name, "cuLaunch", 8) && strncmp(name, "cuLaunchHostFunc", 16);
}

/* range_lock held: a session call refused: one line, and the context's launches run
 * unmeasured from now on. */
static void range_give_up(struct range_ctx *c, const char *what, CUptiResult r)
{
	cupti__pm_refused(what, r);
	range_refuse(c);
}

static void range_begin(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	CUpti_RangeProfiler_Start_Params st = { CUpti_RangeProfiler_Start_Params_STRUCT_SIZE };
	struct range_ctx *c;
	CUptiResult r;

	pthread_mutex_lock(&range_lock); /* until the launch returns: one session at a time */
	cupti_self++;
	c = range_ctx_of(cb->context);
	if (c) {
		st.pRangeProfilerObject = c->obj;
		if ((r = rf.cuptiRangeProfilerStart(&st)) == CUPTI_SUCCESS) {
			range_open = c;
			range_corr = cb->correlationId;
			range_stream = cupti__launch_stream_id(cbid, cb);
			slot_set(range_corr, range_stream, SLOT_PENDING, NULL, NULL, 0);
		} else {
			range_give_up(c, "per-kernel metrics: the range profiler's start", r);
		}
	}
	cupti_self--;
	if (!range_open)
		pthread_mutex_unlock(&range_lock);
}

/* range_lock held: the values of the one range of c's decoded session, re-armed. ran:
 * the measured code ran (the launch succeeded), so a range is owed. */
static bool range_collect(struct range_ctx *c, double *v, bool ran)
{
	CUpti_RangeProfiler_Stop_Params st = { CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_DecodeData_Params dec = {
		CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_GetCounterDataInfo_Params info = {
		CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE };
	bool measured;
	CUptiResult r;

	st.pRangeProfilerObject = c->obj;
	dec.pRangeProfilerObject = c->obj;
	info.pCounterDataImage = c->data;
	info.counterDataImageSize = c->data_size;
	if ((r = rf.cuptiRangeProfilerStop(&st)) != CUPTI_SUCCESS ||
	    (r = rf.cuptiRangeProfilerDecodeData(&dec)) != CUPTI_SUCCESS ||
	    (r = rf.cuptiRangeProfilerGetCounterDataInfo(&info)) != CUPTI_SUCCESS) {
		range_give_up(c,
			      cupti_range_nvtx ? "per-range metrics: the range profiler's data"
					       : "per-kernel metrics: the range profiler's data",
			      r);
		return false;
	}
	if (dec.numOfRangeDropped)
		gt_lost_add(cupti__key("cupti_range_dropped"), dec.numOfRangeDropped);
	/* no range from a failed launch is no loss; from one that ran, it is */
	measured = info.numTotalRanges == 1 &&
		   !cupti__host_evaluate(c->host, c->data, c->data_size, 0, c->names, c->n, v);
	if (!measured && ran)
		range_unmeasured(info.numTotalRanges == 1
					 ? "the host profiler could not evaluate a range"
					 : "the range profiler measured no range of a launch that ran");
	if ((r = range_arm(c)) != CUPTI_SUCCESS)
		range_give_up(c,
			      cupti_range_nvtx
				      ? "per-range metrics: the range profiler's next session"
				      : "per-kernel metrics: the range profiler's next session",
			      r);
	return measured;
}

static void range_end(const CUpti_CallbackData *cb)
{
	struct range_ctx *c = range_open;
	double v[RANGE_METRICS_MAX];
	bool ran = !cb->functionReturnValue || !*(const int *)cb->functionReturnValue;
	bool measured;

	cupti_self++;
	measured = range_collect(c, v, ran);
	if (measured)
		slot_set(range_corr, range_stream, SLOT_READY, c->keys, v, c->n);
	else
		slot_set(range_corr, range_stream, SLOT_FREE, NULL, NULL, 0);
	cupti_self--;
	range_open = NULL;
	pthread_mutex_unlock(&range_lock);
}

static void nvtx_begin(const CUpti_CallbackData *cb);
static void nvtx_capture_begins(void);

/* cuStreamBeginCapture* and cuStreamEndCapture* (any version, _ptsz): counted in
 * range_captures. True for those calls. */
static bool range_capture_call(const CUpti_CallbackData *cb)
{
	const char *n = cb->functionName;
	int r, now;
	bool begin;

	if (!n || strncmp(n, "cuStream", 8))
		return false;
	if (!strncmp(n + 8, "BeginCapture", 12))
		begin = true;
	else if (!strncmp(n + 8, "EndCapture", 10))
		begin = false;
	else
		return false;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		if (begin) {
			atomic_fetch_add(&range_captures, 1);
			if (cupti_range_nvtx && nvtx_name)
				nvtx_capture_begins();
		}
		return true;
	}
	r = cb->functionReturnValue ? *(const int *)cb->functionReturnValue : 0;
	/* a begin that failed began nothing; an end ends the capture, also with a capture
	 * error (CUDA_ERROR_STREAM_CAPTURE_*, 900-908), not on a stream not capturing */
	if (begin ? r != 0 : r == 0 || (r >= 900 && r <= 908))
		for (now = atomic_load(&range_captures);
		     now > 0 && !atomic_compare_exchange_weak(&range_captures, &now, now - 1);)
			;
	return true;
}

void cupti__range_launch(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	if (gt_unlikely(range_capture_call(cb)))
		return;
	if (cupti_range_nvtx) {
		if (cb->callbackSite == CUPTI_API_ENTER && nvtx_name && !nvtx_open &&
		    !nvtx_crowded && is_kernel_launch(cb->functionName) &&
		    atomic_load(&cupti_state) == CUPTI_ON) {
			if (atomic_load(&range_captures))
				nvtx_capture_begins(); /* another thread's capture */
			else
				nvtx_begin(cb);
		}
		return;
	}
	if (cb->callbackSite == CUPTI_API_ENTER) {
		/* (a launch into a capture runs no kernel: nothing to measure) */
		if (!range_open && is_kernel_launch(cb->functionName) &&
		    atomic_load(&cupti_state) == CUPTI_ON && !atomic_load(&range_captures))
			range_begin(cbid, cb);
	} else if (range_open && cb->correlationId == range_corr) {
		range_end(cb);
	}
}

/* ---- per NVTX range (--metrics-mode nvtx) ----
 *
 * The thread's outermost NVTX push/pop range is one user range of its context's range
 * profiler: the session starts at the range's first kernel launch (a range that
 * launches no kernel costs no profiler call and carries no metrics) and ends at its pop,
 * which decodes and evaluates it: its values go on the range's span. Nested ranges are
 * not measured (each nesting level is one more pass: the range's code run again). The
 * profiler measures a context, not a thread: while one thread's range holds a context's
 * session, another thread's range on that context is not measured (one line, counted),
 * and kernels other threads launch into the context meanwhile count in the holder's. */

void cupti__range_nvtx_push(int level, uint32_t name)
{
	if (level)
		return;
	nvtx_name = name;
	nvtx_crowded = false;
}

/* This thread's outermost NVTX range carries no metrics: counted as lost `key`, and said
 * once (`said`): what (naming the range, %s), then the count. */
static void __attribute__((format(printf, 3, 4)))
nvtx_unmeasured(const char *key, bool *said, const char *what, ...)
{
	char line[320];
	va_list ap;

	nvtx_crowded = true;
	gt_lost_add(cupti__key(key), 1);
	if (*said)
		return;
	*said = true;
	va_start(ap, what);
	vsnprintf(line, sizeof(line), what, ap);
	va_end(ap);
	pr_warn("CUDA metrics: %s (counted as lost %s)", line, key);
}

static void nvtx_begin(const CUpti_CallbackData *cb)
{
	CUpti_RangeProfiler_Start_Params st = { CUpti_RangeProfiler_Start_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_PushRange_Params pu = {
		CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_Stop_Params sp = { CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };
	static bool said;
	struct range_ctx *c;
	CUptiResult r;

	pthread_mutex_lock(&range_lock);
	cupti_self++;
	c = range_ctx_of(cb->context);
	if (c && c->owner) {
		nvtx_unmeasured("cupti_range_overlapped", &said,
				"NVTX ranges of two threads overlap on one context ('%s' launched "
				"while another thread's range was measured): the range profiler "
				"measures a context, so the later range carries no metrics",
				gt_str_get(nvtx_name, NULL));
	} else if (c) {
		st.pRangeProfilerObject = c->obj;
		pu.pRangeProfilerObject = c->obj;
		pu.pRangeName = gt_str_get(nvtx_name, NULL);
		sp.pRangeProfilerObject = c->obj;
		if ((r = rf.cuptiRangeProfilerStart(&st)) != CUPTI_SUCCESS) {
			range_give_up(c, "per-range metrics: the range profiler's start", r);
		} else if ((r = rf.cuptiRangeProfilerPushRange(&pu)) != CUPTI_SUCCESS) {
			rf.cuptiRangeProfilerStop(&sp);
			range_give_up(c, "per-range metrics: the range profiler's push", r);
		} else {
			c->owner = &nvtx_open; /* this thread's */
			nvtx_open = c;
			/* a value, so the key's destructor runs at this thread's end */
			if (nvtx_key_made && !nvtx_key_set)
				nvtx_key_set = !pthread_setspecific(nvtx_key, &nvtx_open);
		}
	}
	cupti_self--;
	pthread_mutex_unlock(&range_lock);
}

/* range_lock held: this thread's session on c ends (its user range popped, decoded,
 * re-armed) if it is still ours (not given up, not stopped). True with the values in v. */
static bool nvtx_session_end(struct range_ctx *c, double *v)
{
	CUpti_RangeProfiler_PopRange_Params po = {
		CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE };
	bool measured;
	CUptiResult r;

	if (c->owner != &nvtx_open)
		return false;
	po.pRangeProfilerObject = c->obj;
	if ((r = rf.cuptiRangeProfilerPopRange(&po)) != CUPTI_SUCCESS) {
		range_give_up(c, "per-range metrics: the range profiler's pop", r);
		return false;
	}
	/* waits for the range's kernels: decoding needs them done */
	measured = range_collect(c, v, true);
	c->owner = NULL;
	return measured;
}

/* A stream capture begins, or is in progress, inside this thread's outermost NVTX range:
 * the range carries no metrics (one line, counted), its session ended before the
 * capture. */
static void nvtx_capture_begins(void)
{
	struct range_ctx *c = nvtx_open;
	double v[RANGE_METRICS_MAX];
	static bool said;

	if (nvtx_crowded)
		return;
	nvtx_open = NULL;
	nvtx_unmeasured("cupti_range_capture", &said,
			"NVTX range '%s' holds a stream capture: a range profiler session breaks "
			"a capture, so the range carries no metrics",
			gt_str_get(nvtx_name, NULL));
	if (!c)
		return;
	pthread_mutex_lock(&range_lock);
	cupti_self++;
	nvtx_session_end(c, v); /* a part of the range: its values are dropped */
	cupti_self--;
	pthread_mutex_unlock(&range_lock);
}

/* pthread key destructor: this thread ends with its outermost NVTX range open. The range
 * is drawn unended, without args of ours: its session ends here, its values dropped (one
 * line, counted), and the context's profiler is free for other threads' ranges. */
static void nvtx_thread_end(void *arg)
{
	struct range_ctx *c = nvtx_open;
	double v[RANGE_METRICS_MAX];
	static bool said;

	(void)arg;
	nvtx_key_set = false;
	nvtx_open = NULL;
	if (!c)
		return;
	pthread_mutex_lock(&range_lock);
	cupti_self++;
	if (c->owner == &nvtx_open) {
		nvtx_session_end(c, v);
		nvtx_unmeasured("cupti_range_unmeasured", &said,
				"NVTX range '%s' was still open when its thread ended: drawn "
				"unended, it carries no metrics",
				gt_str_get(nvtx_name, NULL));
	}
	cupti_self--;
	pthread_mutex_unlock(&range_lock);
	nvtx_name = 0;
}

unsigned cupti__range_nvtx_pop(int level, struct gt_arg *args, unsigned n, unsigned max)
{
	struct range_ctx *c = nvtx_open;
	double v[RANGE_METRICS_MAX];
	bool measured;

	if (level)
		return n;
	nvtx_name = 0;
	nvtx_open = NULL;
	if (!c)
		return n; /* no kernel launched inside it (or not measured) */
	pthread_mutex_lock(&range_lock);
	cupti_self++;
	measured = nvtx_session_end(c, v);
	for (size_t i = 0; measured && i < c->n && n < max; i++)
		args[n++] = (struct gt_arg){ .key = c->keys[i], .type = GT_ARG_METRIC, .v.f = v[i] };
	cupti_self--;
	pthread_mutex_unlock(&range_lock);
	return n;
}

/* ---- a context's end ---- */

/* range_lock held: the NVTX range session open on c (another thread's, maybe) ends
 * unevaluated. */
static void range_session_drop(struct range_ctx *c)
{
	CUpti_RangeProfiler_PopRange_Params po = {
		CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_Stop_Params st = { CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };

	po.pRangeProfilerObject = c->obj;
	st.pRangeProfilerObject = c->obj;
	rf.cuptiRangeProfilerPopRange(&po);
	rf.cuptiRangeProfilerStop(&st);
	c->owner = NULL; /* its thread's pop finds the session not its own */
	range_unmeasured("a context was destroyed (cudaDeviceReset, cuCtxDestroy) inside "
			 "the NVTX range measuring it");
}

/*
 * CUPTI's resource callback, before a context's destruction (cudaDeviceReset,
 * cuCtxDestroy): its profiler is disabled while the context still exists and its entry
 * freed. A context made later, also one at the same handle (the primary context after a
 * reset), enables a profiler of its own at its first launch.
 */
void cupti__range_context_destroyed(CUcontext ctx)
{
	if (!ctx)
		return;
	pthread_mutex_lock(&range_lock); /* after any launch's session */
	cupti_self++;
	for (unsigned i = 0; i < range_nctx; i++) {
		struct range_ctx *c = &range_ctxs[i];

		if (c->ctx != ctx)
			continue;
		if (c->obj && c->owner)
			range_session_drop(c);
		range_ctx_free(c);
		c->ctx = NULL;
	}
	cupti_self--;
	pthread_mutex_unlock(&range_lock);
}

/* ---- the backend's hooks ---- */

GT_STARTUP_CODE static int range_init(void)
{
	cupti_range_kernel = gt_cfg.metrics_mode == GT_METRICS_KERNEL;
	cupti_range_nvtx = gt_cfg.metrics_mode == GT_METRICS_NVTX &&
			   (gt_cfg.kinds & GT_KIND(ANNOTATION));
	cupti_range_launches = cupti_range_kernel || cupti_range_nvtx;
#ifndef GT_NO_METRICS
	/* the watchdog's flag is set before any backend starts (gt_init) */
	cupti_drv_hooks = cupti_range_launches || gt_watchdog_on;
#endif
	if (cupti_range_nvtx && !nvtx_key_made)
		nvtx_key_made = !pthread_key_create(&nvtx_key, nvtx_thread_end);
	if (gt_cfg.metrics_mode == GT_METRICS_NVTX && !cupti_range_nvtx)
		pr_warn("CUDA metrics: %s needs the annotation kind (NVTX is "
			"not traced): no per-range metrics",
			gt_setting("--metrics-mode nvtx", "GPUTRACE_METRICS_MODE=nvtx"));
	return 0;
}

/* Drain thread: CUPTI is not ours, so no range profiler (one line). */
static void range_flush(bool final)
{
	static bool said;
	int s;

	(void)final;
	if (!cupti_range_launches || said)
		return;
	s = atomic_load(&cupti_state);
	if (s == CUPTI_HELD) {
		said = true;
		pr_warn("CUDA metrics: CUPTI belongs to another tool (see above): no %s metrics",
			range_unit());
	} else if (s == CUPTI_DISABLED) {
		said = true;
		pr_warn("CUDA metrics need CUPTI, which is off (GPUTRACE_DISABLE_CUPTI or CUPTI "
			"refused): no %s metrics",
			range_unit());
	}
}

GT_STARTUP_CODE static void range_stop(void)
{
	if (!cupti_range_launches)
		return; /* no session was ever begun */
	/* a launch still in its session keeps its profiler (the process is ending) */
	if (pthread_mutex_trylock(&range_lock))
		return;
	cupti_self++;
	for (unsigned i = 0; i < range_nctx; i++) {
		if (atomic_load(&cupti_state) != CUPTI_ON)
			range_ctxs[i].obj = NULL; /* CUPTI is no longer ours to call */
		range_ctx_free(&range_ctxs[i]);
	}
	range_nctx = 0;
	range_state = RANGE_OFF;
	cupti_self--;
	pthread_mutex_unlock(&range_lock);
}

GT_FORK_CODE static void range_atfork_child(void)
{
	/* CUDA does not survive fork: the parent's profilers are not the child's.
	 * Without range metrics asked for none was ever begun (range_stop):
	 * nothing to write (a shell's child wrote 4 pages of zeros here). */
	if (!cupti_range_launches)
		return;
	pthread_mutex_init(&range_lock, NULL);
	pthread_mutex_init(&slot_lock, NULL);
	memset(range_ctxs, 0, RANGE_CTX_MAX * sizeof(range_ctxs[0]));
	if (atomic_load(&range_slots))
		memset(atomic_load(&range_slots), 0, RANGE_SLOTS * sizeof(struct range_slot));
	range_nctx = 0;
	range_state = RANGE_OFF;
	range_open = NULL;
	nvtx_open = NULL;
	nvtx_name = 0;
	nvtx_crowded = false;
}

static const struct gt_backend range_backend = {
	.name = "cupti_range",
	.enabled_by = GT_BACKEND_CUPTI,
	.init = range_init,
	.flush = range_flush,
	.stop = range_stop,
	.atfork_child = range_atfork_child,
};

GT_BACKEND_REGISTER(range_backend);
