// SPDX-License-Identifier: MIT
/*
 * libcupti.so.13 (simulated): the profiler of CUDA 12.6+ as documented in
 * cupti_profiler_target.h, cupti_profiler_host.h and cupti_range_profiler.h:
 * cuptiProfilerInitialize, the host profiler (config images and evaluation,
 * which the real library does in libnvperf_host) and the range profiler in
 * auto range mode (kernel or user replay) and in user range / user replay mode.
 * No PM sampling (a CUPTI without it).
 *
 * As an H200 did (CUPTI 13.0.1): an auto range in kernel replay leaves its
 * kernel's activity record without timestamps (start = end = 0); in user
 * replay the profiler runs a kernel of its own ("WaitNs") after each measured
 * kernel, on a stream of its own (id 6: the driver's ids start at 13), under
 * the launch's correlation id.
 *
 * The one chip is "SIM100": 8 SMs, one pass holds 5 metrics; it has no
 * DRAM counters. A kernel's range holds its raw counters (duration, blocks,
 * threads); a user range sums those of the kernels its context ran between
 * its push and pop (whichever thread launched them), so the values follow
 * from the simulated work:
 *   gpu__time_duration.sum                               the kernels' ns
 *   gr__cycles_active.avg.pct_of_peak_sustained_elapsed  100 if a kernel ran, else 0
 *                                                        (no idle inside a range)
 *   sm__cycles_active.avg.pct_of_peak_sustained_elapsed  100 * min(blocks, 8) / 8
 *   sm__warps_active.avg.pct_of_peak_sustained_active    100 * min(warps per block, 64) / 64
 *                                                        (both: kernel-time weighted)
 *   sm__threads_launched.sum                             grid x block threads
 *
 * User ranges: one nesting level per pass (the level targetNestingLevel says);
 * Stop reports isAllPassSubmitted only when numNestingLevels is 1, as more
 * levels need the range's code replayed. A user range holds its name path,
 * as cuptiRangeProfilerCounterDataGetRangeInfo gives it ("outer/inner").
 *
 * Call-order rules of the documentation abort loudly: the profiler used
 * before cuptiProfilerInitialize, SetConfig while started, Start before
 * SetConfig or twice, Stop while not started, DecodeData before Stop ("should
 * be called after cuptiRangeProfilerStop"), auto range with numNestingLevels
 * other than 1, maxNumRangeTreeNodes < maxNumOfRanges, a counter data image
 * smaller than its size or not initialized; user ranges: PushRange while not
 * started or without a name, PopRange without a pushed range ("the number of
 * pop range API calls should be same as number of push ranges"), Stop with a
 * range still pushed, nesting levels below 1. CUDA_SIM_PROFILING_RESTRICTED=1
 * refuses Enable with CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, as a driver
 * loaded with NVreg_RestrictProfilingToAdminUsers=1 does for non-root users.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "cupti_sim.h"

#define EXPORT SIM_EXPORT

#define CHIP             "SIM100"
#define PROFILER_STREAM    6    /* the profiler's own kernels' stream: none of the driver's */
#define PROFILER_KERNEL_NS 2000
#define SMS              8
#define METRICS_PER_PASS 5
#define METRICS_MAX      16
#define RANGES_HW        64 /* ranges the "hardware" keeps between Start and decode */
#define USER_DEPTH       8  /* user ranges pushed at once */
#define CFG_MAGIC        0x53494d43u /* "SIMC" */
#define CDI_MAGIC        0x53494d44u /* "SIMD" */

static const char *const known[] = {
	"gpu__time_duration.sum",
	"gr__cycles_active.avg.pct_of_peak_sustained_elapsed",
	"sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
	"sm__warps_active.avg.pct_of_peak_sustained_active",
	"sm__threads_launched.sum",
};
#define NKNOWN (sizeof(known) / sizeof(known[0]))

/* A range's counters: summed over its kernels. */
struct raw_range {
	uint64_t ns, threads, kernels, end_host;
	double sm_ns, warp_ns; /* ns weighted by the SMs, warps a kernel kept active */
	char name[96];         /* user ranges: the name path, levels joined by '\x01' */
};

struct cfg_image {
	uint32_t magic, type, n, ids[METRICS_MAX];
};

struct cdi_header {
	uint32_t magic, max_ranges, nranges, pad;
	struct raw_range r[];
};

struct CUpti_Profiler_Host_Object {
	CUpti_ProfilerType type;
	uint32_t n, ids[METRICS_MAX];
};

struct CUpti_RangeProfiler_Object {
	uint32_t context_id;
	bool configured, started, user, kernel_replay;
	uint16_t min_level, levels, target; /* user ranges: the nesting levels measured */
	unsigned depth;                     /* user ranges pushed */
	struct raw_range open[USER_DEPTH];  /* ... and what they hold so far */
	size_t max_ranges;
	uint8_t *image;
	size_t image_size;
	struct raw_range hw[RANGES_HW]; /* what the hardware holds until decoded */
	unsigned nhw, dropped;
	struct CUpti_RangeProfiler_Object *next;
};

static pthread_mutex_t P_lock = PTHREAD_MUTEX_INITIALIZER;
static bool P_initialized;
static struct CUpti_RangeProfiler_Object *P_objects;

static int metric_id(const char *name)
{
	for (size_t i = 0; name && i < NKNOWN; i++)
		if (!strcmp(name, known[i]))
			return (int)i;
	return -1;
}

static void need_init(const char *fn)
{
	cs_entry(fn, false);
	cs_log(fn, "profiler");
	if (!P_initialized)
		cs_die("%s before cuptiProfilerInitialize (the profiler's APIs need it first)", fn);
}

EXPORT CUptiResult CUPTIAPI cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *p)
{
	cs_entry(__func__, false);
	cs_log(__func__, "profiler");
	if (!p || !p->structSize)
		return CUPTI_ERROR_INVALID_PARAMETER;
	P_initialized = true;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params *p)
{
	need_init(__func__);
	P_initialized = false;
	return CUPTI_SUCCESS;
}

static int sim_devices(void)
{
	const char *s = getenv("CUDA_SIM_DEVICES");
	int n = s && *s ? atoi(s) : 1;

	return n < 0 ? 0 : n;
}

EXPORT CUptiResult CUPTIAPI cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *p)
{
	need_init(__func__);
	if (!p || !p->structSize)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if ((int)p->deviceIndex >= sim_devices())
		return CUPTI_ERROR_INVALID_DEVICE;
	p->pChipName = CHIP;
	return CUPTI_SUCCESS;
}

/* ---- the host profiler ---- */

EXPORT CUptiResult CUPTIAPI cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params *p)
{
	struct CUpti_Profiler_Host_Object *h;

	cs_entry(__func__, false);
	cs_log(__func__, "profiler");
	if (!p || !p->structSize || !p->pChipName)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (strcmp(p->pChipName, CHIP))
		return CUPTI_ERROR_INVALID_PARAMETER; /* no metrics of chips it does not know */
	if (p->profilerType != CUPTI_PROFILER_TYPE_RANGE_PROFILER &&
	    p->profilerType != CUPTI_PROFILER_TYPE_PM_SAMPLING)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!(h = calloc(1, sizeof(*h))))
		return CUPTI_ERROR_OUT_OF_MEMORY;
	h->type = p->profilerType;
	p->pHostObject = h;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params *p)
{
	cs_entry(__func__, false);
	if (!p || !p->pHostObject)
		return CUPTI_ERROR_INVALID_PARAMETER;
	free(p->pHostObject);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params *p)
{
	struct CUpti_Profiler_Host_Object *h;

	cs_entry(__func__, false);
	if (!p || !(h = p->pHostObject) || !p->ppMetricNames)
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (size_t i = 0; i < p->numMetrics; i++)
		if (metric_id(p->ppMetricNames[i]) < 0)
			return CUPTI_ERROR_INVALID_METRIC_NAME;
	if (h->n + p->numMetrics > METRICS_MAX)
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (size_t i = 0; i < p->numMetrics; i++)
		h->ids[h->n++] = (uint32_t)metric_id(p->ppMetricNames[i]);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params *p)
{
	cs_entry(__func__, false);
	if (!p || !p->pHostObject)
		return CUPTI_ERROR_INVALID_PARAMETER;
	p->configImageSize = sizeof(struct cfg_image);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params *p)
{
	struct CUpti_Profiler_Host_Object *h;
	struct cfg_image c = { .magic = CFG_MAGIC };

	cs_entry(__func__, false);
	if (!p || !(h = p->pHostObject) || !p->pConfigImage ||
	    p->configImageSize < sizeof(c))
		return CUPTI_ERROR_INVALID_PARAMETER;
	c.type = h->type;
	c.n = h->n;
	memcpy(c.ids, h->ids, sizeof(c.ids));
	memcpy(p->pConfigImage, &c, sizeof(c));
	return CUPTI_SUCCESS;
}

static const struct cfg_image *config_of(const uint8_t *image, size_t size)
{
	const struct cfg_image *c = (const struct cfg_image *)image;

	return image && size >= sizeof(*c) && c->magic == CFG_MAGIC ? c : NULL;
}

EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params *p)
{
	const struct cfg_image *c;

	cs_entry(__func__, false);
	if (!p || !(c = config_of(p->pConfigImage, p->configImageSize)))
		return CUPTI_ERROR_INVALID_PARAMETER;
	p->numOfPasses = (c->n + METRICS_PER_PASS - 1) / METRICS_PER_PASS;
	return CUPTI_SUCCESS;
}

static const struct cdi_header *cdi_of(const char *fn, const uint8_t *image, size_t size)
{
	const struct cdi_header *d = (const struct cdi_header *)image;

	if (!image || size < sizeof(*d) || d->magic != CDI_MAGIC)
		cs_die("%s: a counter data image that cuptiRangeProfilerCounterDataImageInitialize "
		       "did not initialize",
		       fn);
	return d;
}

static double value_of(uint32_t id, const struct raw_range *r)
{
	switch (id) {
	case 0:
		return (double)r->ns;
	case 1:
		return r->kernels ? 100.0 : 0.0;
	case 2:
		return r->ns ? 100.0 * r->sm_ns / (double)r->ns : 0.0;
	case 3:
		return r->ns ? 100.0 * r->warp_ns / (double)r->ns : 0.0;
	default:
		return (double)r->threads;
	}
}

/* One kernel into a range's counters. */
static void range_add(struct raw_range *r, const struct sim_work *w)
{
	uint64_t ns = w->end - w->start, blocks = (uint64_t)w->grid[0] * w->grid[1] * w->grid[2];
	uint64_t tpb = (uint64_t)w->block[0] * w->block[1] * w->block[2], warps = (tpb + 31) / 32;

	r->ns += ns;
	r->threads += blocks * tpb;
	r->kernels++;
	r->sm_ns += (double)ns * (double)(blocks < SMS ? blocks : SMS) / SMS;
	r->warp_ns += (double)ns * (double)(warps < 64 ? warps : 64) / 64;
	if (w->end > r->end_host)
		r->end_host = w->end;
}

EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params *p)
{
	struct CUpti_Profiler_Host_Object *h;
	const struct cdi_header *d;

	cs_entry(__func__, false);
	if (!p || !(h = p->pHostObject) || !p->ppMetricNames || !p->pMetricValues)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (h->type != CUPTI_PROFILER_TYPE_RANGE_PROFILER)
		return CUPTI_ERROR_NOT_SUPPORTED; /* no PM sampling here */
	d = cdi_of(__func__, p->pCounterDataImage, p->counterDataImageSize);
	if (p->rangeIndex >= d->nranges)
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (size_t i = 0; i < p->numMetrics; i++) {
		int id = metric_id(p->ppMetricNames[i]);
		bool configured = false;

		for (uint32_t k = 0; id >= 0 && k < h->n; k++)
			configured |= h->ids[k] == (uint32_t)id;
		if (!configured)
			return CUPTI_ERROR_INVALID_METRIC_NAME;
		p->pMetricValues[i] = value_of((uint32_t)id, &d->r[p->rangeIndex]);
	}
	return CUPTI_SUCCESS;
}

/* ---- the range profiler ---- */

static struct CUpti_RangeProfiler_Object *object_of(const char *fn,
						    struct CUpti_RangeProfiler_Object *o)
{
	need_init(fn);
	for (struct CUpti_RangeProfiler_Object *x = P_objects; x; x = x->next)
		if (x == o)
			return o;
	cs_die("%s: a range profiler object that cuptiRangeProfilerEnable did not return "
	       "(or one already disabled)",
	       fn);
}

EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerEnable(CUpti_RangeProfiler_Enable_Params *p)
{
	struct CUpti_RangeProfiler_Object *o;
	const char *restricted = getenv("CUDA_SIM_PROFILING_RESTRICTED");
	uint32_t id;

	need_init(__func__);
	pthread_mutex_lock(&C.lock);
	cs_init_locked(); /* CUPTI attaches to the driver on its first use */
	pthread_mutex_unlock(&C.lock);
	if (!p || !p->structSize || !C.tools || !p->ctx ||
	    C.tools->context_ids(p->ctx, &id, NULL))
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (restricted && !strcmp(restricted, "1"))
		return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
	pthread_mutex_lock(&P_lock);
	for (o = P_objects; o; o = o->next) {
		if (o->context_id == id) {
			pthread_mutex_unlock(&P_lock);
			return CUPTI_ERROR_INVALID_OPERATION; /* one per context */
		}
	}
	if (!(o = calloc(1, sizeof(*o)))) {
		pthread_mutex_unlock(&P_lock);
		return CUPTI_ERROR_OUT_OF_MEMORY;
	}
	o->context_id = id;
	o->next = P_objects;
	P_objects = o;
	pthread_mutex_unlock(&P_lock);
	p->pRangeProfilerObject = o;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerDisable(CUpti_RangeProfiler_Disable_Params *p)
{
	struct CUpti_RangeProfiler_Object *o, **pp;

	pthread_mutex_lock(&P_lock);
	o = object_of(__func__, p ? p->pRangeProfilerObject : NULL);
	for (pp = &P_objects; *pp != o; pp = &(*pp)->next)
		;
	*pp = o->next;
	pthread_mutex_unlock(&P_lock);
	free(o);
	return CUPTI_SUCCESS;
}

static size_t image_size(size_t max_ranges)
{
	return sizeof(struct cdi_header) + max_ranges * sizeof(struct raw_range);
}

EXPORT CUptiResult CUPTIAPI
cuptiRangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params *p)
{
	pthread_mutex_lock(&P_lock);
	object_of(__func__, p ? p->pRangeProfilerObject : NULL);
	pthread_mutex_unlock(&P_lock);
	if (!p->pMetricNames || !p->numMetrics || !p->maxNumOfRanges)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (p->maxNumRangeTreeNodes < p->maxNumOfRanges)
		cs_die("%s: maxNumRangeTreeNodes %u < maxNumOfRanges %zu (it \"must be >= "
		       "maxNumOfRanges\")",
		       __func__, p->maxNumRangeTreeNodes, p->maxNumOfRanges);
	for (size_t i = 0; i < p->numMetrics; i++)
		if (metric_id(p->pMetricNames[i]) < 0)
			return CUPTI_ERROR_INVALID_METRIC_NAME;
	p->counterDataSize = image_size(p->maxNumOfRanges);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerCounterDataImageInitialize(
	CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p)
{
	struct cdi_header *d;

	pthread_mutex_lock(&P_lock);
	object_of(__func__, p ? p->pRangeProfilerObject : NULL);
	pthread_mutex_unlock(&P_lock);
	if (!p->pCounterData || p->counterDataSize < image_size(1))
		cs_die("%s: a counter data image of %zu bytes (smaller than "
		       "cuptiRangeProfilerGetCounterDataSize says)",
		       __func__, p->counterDataSize);
	d = (struct cdi_header *)p->pCounterData;
	memset(d, 0, p->counterDataSize);
	d->magic = CDI_MAGIC;
	d->max_ranges =
		(uint32_t)((p->counterDataSize - sizeof(*d)) / sizeof(struct raw_range));
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params *p)
{
	struct CUpti_RangeProfiler_Object *o;
	const struct cfg_image *c;
	CUptiResult r = CUPTI_SUCCESS;

	pthread_mutex_lock(&P_lock);
	o = object_of(__func__, p ? p->pRangeProfilerObject : NULL);
	if (o->started)
		cs_die("%s while the range profiler is started (Stop it first)", __func__);
	if (!(c = config_of(p->pConfig, p->configSize)) ||
	    c->type != CUPTI_PROFILER_TYPE_RANGE_PROFILER) {
		r = CUPTI_ERROR_INVALID_PARAMETER; /* not a range profiler config image */
		goto out;
	}
	cdi_of(__func__, p->pCounterDataImage, p->counterDataImageSize);
	if (p->range == CUPTI_AutoRange && p->numNestingLevels != 1)
		cs_die("%s: auto range with numNestingLevels %u (\"For Auto range mode, this "
		       "should be set to 1\")",
		       __func__, p->numNestingLevels);
	if (p->range == CUPTI_UserRange &&
	    (p->numNestingLevels < 1 || p->minNestingLevel < 1 || p->targetNestingLevel < 1))
		cs_die("%s: user range with nesting levels %u from %u, target %u (levels start "
		       "at 1)",
		       __func__, p->numNestingLevels, p->minNestingLevel, p->targetNestingLevel);
	/* played: auto range with kernel or user replay, user range with user replay */
	if (!p->maxRangesPerPass ||
	    !((p->range == CUPTI_AutoRange &&
	       (p->replayMode == CUPTI_KernelReplay || p->replayMode == CUPTI_UserReplay)) ||
	      (p->range == CUPTI_UserRange && p->replayMode == CUPTI_UserReplay))) {
		r = CUPTI_ERROR_NOT_SUPPORTED;
		goto out;
	}
	o->user = p->range == CUPTI_UserRange;
	o->kernel_replay = p->replayMode == CUPTI_KernelReplay;
	o->min_level = p->minNestingLevel;
	o->levels = p->numNestingLevels;
	o->target = p->targetNestingLevel;
	o->image = p->pCounterDataImage;
	o->image_size = p->counterDataImageSize;
	o->max_ranges = p->maxRangesPerPass;
	o->configured = true;
out:
	pthread_mutex_unlock(&P_lock);
	return r;
}

EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerStart(CUpti_RangeProfiler_Start_Params *p)
{
	struct CUpti_RangeProfiler_Object *o;
	uint32_t context_id;

	pthread_mutex_lock(&P_lock);
	o = object_of(__func__, p ? p->pRangeProfilerObject : NULL);
	if (!o->configured)
		cs_die("%s before cuptiRangeProfilerSetConfig", __func__);
	if (o->started)
		cs_die("%s: the range profiler is already started", __func__);
	context_id = o->context_id;
	pthread_mutex_unlock(&P_lock);
	/* A session on a context with a stream capture in progress: what an H200 did (the
	 * start failed, and the capture was invalidated). The driver's lock, not ours. */
	if (C.tools && C.tools->size > offsetof(struct sim_tools, profile_breaks_captures) &&
	    C.tools->profile_breaks_captures(context_id))
		return CUPTI_ERROR_UNKNOWN;
	pthread_mutex_lock(&P_lock);
	o->started = true;
	o->depth = 0;
	pthread_mutex_unlock(&P_lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerStop(CUpti_RangeProfiler_Stop_Params *p)
{
	struct CUpti_RangeProfiler_Object *o;

	pthread_mutex_lock(&P_lock);
	o = object_of(__func__, p ? p->pRangeProfilerObject : NULL);
	if (!o->started)
		cs_die("%s: the range profiler was not started", __func__);
	if (o->depth)
		cs_die("%s with %u user ranges pushed and not popped", __func__, o->depth);
	o->started = false;
	/* one pass per nesting level: more than one level needs the code replayed */
	p->passIndex = 0;
	p->targetNestingLevel = o->user && o->levels > 1 ? o->target + 1u : 1u;
	p->isAllPassSubmitted = !o->user || o->levels == 1;
	pthread_mutex_unlock(&P_lock);
	return CUPTI_SUCCESS;
}

/* User ranges: "an invalid operation in case of CUPTI_AutoRange". */
EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerPushRange(CUpti_RangeProfiler_PushRange_Params *p)
{
	struct CUpti_RangeProfiler_Object *o;
	struct raw_range *r;

	pthread_mutex_lock(&P_lock);
	o = object_of(__func__, p ? p->pRangeProfilerObject : NULL);
	if (!o->user) {
		pthread_mutex_unlock(&P_lock);
		return CUPTI_ERROR_INVALID_OPERATION;
	}
	if (!o->started)
		cs_die("%s while the range profiler is not started", __func__);
	if (!p->pRangeName)
		cs_die("%s without a range name (\"Name of the range to be profiled\")", __func__);
	if (o->depth == USER_DEPTH)
		cs_die("%s: more than %d user ranges pushed", __func__, USER_DEPTH);
	r = &o->open[o->depth];
	*r = (struct raw_range){ 0 };
	snprintf(r->name, sizeof(r->name), "%s%s%s", o->depth ? o->open[o->depth - 1].name : "",
		 o->depth ? "\x01" : "", p->pRangeName);
	o->depth++;
	pthread_mutex_unlock(&P_lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerPopRange(CUpti_RangeProfiler_PopRange_Params *p)
{
	struct CUpti_RangeProfiler_Object *o;
	unsigned level;

	pthread_mutex_lock(&P_lock);
	o = object_of(__func__, p ? p->pRangeProfilerObject : NULL);
	if (!o->user) {
		pthread_mutex_unlock(&P_lock);
		return CUPTI_ERROR_INVALID_OPERATION;
	}
	if (!o->started || !o->depth)
		cs_die("%s without a pushed range (\"The number of pop range API call should be "
		       "same as number of push ranges\")",
		       __func__);
	level = o->depth--;
	/* this pass collects its target level, if among the levels measured */
	if (level == o->target && level >= o->min_level && level < o->min_level + o->levels) {
		if (o->nhw < o->max_ranges && o->nhw < RANGES_HW)
			o->hw[o->nhw++] = o->open[level - 1];
		else
			o->dropped++;
	}
	pthread_mutex_unlock(&P_lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params *p)
{
	struct CUpti_RangeProfiler_Object *o;
	struct cdi_header *d;
	uint64_t last = 0;

	pthread_mutex_lock(&P_lock);
	o = object_of(__func__, p ? p->pRangeProfilerObject : NULL);
	if (o->started)
		cs_die("%s while the range profiler is started (\"This API should be called "
		       "after cuptiRangeProfilerStop\")",
		       __func__);
	d = (struct cdi_header *)cdi_of(__func__, o->image, o->image_size);
	p->numOfRangeDropped = o->dropped;
	for (unsigned i = 0; i < o->nhw; i++) {
		if (d->nranges < d->max_ranges)
			d->r[d->nranges++] = o->hw[i];
		else
			p->numOfRangeDropped++;
		if (o->hw[i].end_host > last)
			last = o->hw[i].end_host;
	}
	o->nhw = 0;
	o->dropped = 0;
	pthread_mutex_unlock(&P_lock);
	/* the counters are read once the ranges' kernels are done */
	while (C.tools && C.tools->host_ns() < last)
		nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI
cuptiRangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params *p)
{
	need_init(__func__);
	if (!p)
		return CUPTI_ERROR_INVALID_PARAMETER;
	p->numTotalRanges = cdi_of(__func__, p->pCounterDataImage, p->counterDataImageSize)->nranges;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerCounterDataGetRangeInfo(
	CUpti_RangeProfiler_CounterData_GetRangeInfo_Params *p)
{
	static __thread char name[128];
	const struct cdi_header *d;

	need_init(__func__);
	if (!p)
		return CUPTI_ERROR_INVALID_PARAMETER;
	d = cdi_of(__func__, p->pCounterDataImage, p->counterDataImageSize);
	if (p->rangeIndex >= d->nranges)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (d->r[p->rangeIndex].name[0]) { /* a user range: its path */
		const char *sep = p->rangeDelimiter ? p->rangeDelimiter : "/";
		size_t n = 0;

		for (const char *c = d->r[p->rangeIndex].name; *c && n + 1 < sizeof(name); c++) {
			if (*c != '\x01') {
				name[n++] = *c;
				continue;
			}
			for (const char *q = sep; *q && n + 1 < sizeof(name); q++)
				name[n++] = *q;
		}
		name[n] = 0;
	} else {
		snprintf(name, sizeof(name), "%zu", p->rangeIndex); /* auto ranges: their index */
	}
	p->rangeName = name;
	return CUPTI_SUCCESS;
}

/* A kernel queued: a range of its context's started profiler (auto), or part of the
 * ranges pushed on it (user). */
/* When the profiler's own kernels end, per context (P_lock): contexts are
 * few; a full table keeps the latest end in its last slot, for all others. */
#define OWN_CONTEXTS 16
static struct {
	uint32_t context_id;
	uint64_t until;
} own_work[OWN_CONTEXTS];
static unsigned n_own_work;

static void own_work_ends(uint32_t context_id, uint64_t until)
{
	unsigned i;

	for (i = 0; i < n_own_work && own_work[i].context_id != context_id; i++)
		;
	if (i == n_own_work) {
		if (n_own_work == OWN_CONTEXTS)
			i = OWN_CONTEXTS - 1;
		else
			own_work[n_own_work++].context_id = context_id;
	}
	if (until > own_work[i].until)
		own_work[i].until = until;
}

uint64_t cs_range_busy_until(uint32_t context_id)
{
	uint64_t until = 0;
	unsigned i;

	pthread_mutex_lock(&P_lock);
	for (i = 0; i < n_own_work && own_work[i].context_id != context_id; i++)
		;
	if (i < n_own_work || n_own_work == OWN_CONTEXTS)
		until = own_work[i < n_own_work ? i : OWN_CONTEXTS - 1].until;
	pthread_mutex_unlock(&P_lock);
	return until;
}

bool cs_range_work(const struct sim_work *w, bool *no_times, struct sim_work *own)
{
	bool owns = false;

	if (w->kind != SIM_WORK_KERNEL)
		return false;
	pthread_mutex_lock(&P_lock);
	for (struct CUpti_RangeProfiler_Object *o = P_objects; o; o = o->next) {
		if (o->context_id != w->context || !o->started)
			continue;
		if (o->user) { /* every pushed range holds it; none pushed: no range has it */
			for (unsigned i = 0; i < o->depth; i++)
				range_add(&o->open[i], w);
			continue;
		}
		if (o->nhw < o->max_ranges && o->nhw < RANGES_HW)
			range_add(memset(&o->hw[o->nhw++], 0, sizeof(o->hw[0])), w);
		else
			o->dropped++;
		/* what an H200 did (CUPTI 13.0.1): kernel replay delivered the kernel's
		 * record without timestamps; user replay ran a kernel of the profiler's own
		 * after it, on a stream of its own, under the launch's correlation id */
		if (o->kernel_replay) {
			*no_times = true;
		} else if (!owns) {
			owns = true;
			*own = (struct sim_work){
				.kind = SIM_WORK_KERNEL, .device = w->device, .context = w->context,
				.stream = PROFILER_STREAM, .corr = w->corr,
				.runtime_corr = w->runtime_corr, .name = "WaitNs",
				.start = w->end + 1000, .end = w->end + 1000 + PROFILER_KERNEL_NS,
				.grid = { 1, 1, 1 }, .block = { 32, 1, 1 }, .registers = 16,
			};
			own_work_ends(w->context, own->end);
		}
	}
	pthread_mutex_unlock(&P_lock);
	return owns;
}
