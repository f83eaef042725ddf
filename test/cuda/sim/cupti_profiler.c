// SPDX-License-Identifier: MIT
/*
 * libcupti.so.13 (simulated): the profiler of CUDA 12.6+ as documented in
 * cupti_profiler_target.h, cupti_profiler_host.h and cupti_range_profiler.h:
 * cuptiProfilerInitialize, the host profiler (config images and evaluation,
 * which the real library does in libnvperf_host) and the range profiler in
 * auto range / kernel replay mode. No PM sampling (a CUPTI without it).
 *
 * The one chip is "SIM100": 8 SMs, one pass holds 5 metrics; it has no
 * DRAM counters. A kernel's range holds its raw counters (duration, blocks,
 * threads), so the values follow from the simulated work:
 *   gpu__time_duration.sum                               the kernel's ns
 *   gr__cycles_active.avg.pct_of_peak_sustained_elapsed  100 (a kernel range is busy)
 *   sm__cycles_active.avg.pct_of_peak_sustained_elapsed  100 * min(blocks, 8) / 8
 *   sm__warps_active.avg.pct_of_peak_sustained_active    100 * min(warps per block, 64) / 64
 *   sm__threads_launched.sum                             grid x block threads
 *
 * Call-order rules of the documentation abort loudly: the profiler used
 * before cuptiProfilerInitialize, SetConfig while started, Start before
 * SetConfig or twice, Stop while not started, DecodeData before Stop ("should
 * be called after cuptiRangeProfilerStop"), auto range with numNestingLevels
 * other than 1, maxNumRangeTreeNodes < maxNumOfRanges, a counter data image
 * smaller than its size or not initialized. CUDA_SIM_PROFILING_RESTRICTED=1
 * refuses Enable with CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, as a driver
 * loaded with NVreg_RestrictProfilingToAdminUsers=1 does for non-root users.
 */
#define _GNU_SOURCE
#include <pthread.h>
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
#define SMS              8
#define METRICS_PER_PASS 5
#define METRICS_MAX      16
#define RANGES_HW        64 /* ranges the "hardware" keeps between Start and decode */
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

struct raw_range {
	uint64_t ns, blocks, threads_per_block, end_host;
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
	bool configured, started;
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
	double warps = (double)((r->threads_per_block + 31) / 32);

	switch (id) {
	case 0:
		return (double)r->ns;
	case 1:
		return 100.0;
	case 2:
		return 100.0 * (double)(r->blocks < SMS ? r->blocks : SMS) / SMS;
	case 3:
		return 100.0 * (warps < 64 ? warps : 64) / 64;
	default:
		return (double)(r->blocks * r->threads_per_block);
	}
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
	if (p->replayMode != CUPTI_KernelReplay || p->range != CUPTI_AutoRange ||
	    !p->maxRangesPerPass) {
		r = CUPTI_ERROR_NOT_SUPPORTED; /* the simulator plays auto range, kernel replay */
		goto out;
	}
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

	pthread_mutex_lock(&P_lock);
	o = object_of(__func__, p ? p->pRangeProfilerObject : NULL);
	if (!o->configured)
		cs_die("%s before cuptiRangeProfilerSetConfig", __func__);
	if (o->started)
		cs_die("%s: the range profiler is already started", __func__);
	o->started = true;
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
	o->started = false;
	p->passIndex = 0;
	p->targetNestingLevel = 1;
	p->isAllPassSubmitted = 1; /* one pass */
	pthread_mutex_unlock(&P_lock);
	return CUPTI_SUCCESS;
}

/* User ranges: "an invalid operation in case of CUPTI_AutoRange", the one mode played. */
static CUptiResult user_range(const char *fn, struct CUpti_RangeProfiler_Object *o)
{
	pthread_mutex_lock(&P_lock);
	object_of(fn, o);
	pthread_mutex_unlock(&P_lock);
	return CUPTI_ERROR_INVALID_OPERATION;
}

EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerPushRange(CUpti_RangeProfiler_PushRange_Params *p)
{
	return user_range(__func__, p ? p->pRangeProfilerObject : NULL);
}

EXPORT CUptiResult CUPTIAPI cuptiRangeProfilerPopRange(CUpti_RangeProfiler_PopRange_Params *p)
{
	return user_range(__func__, p ? p->pRangeProfilerObject : NULL);
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
	static __thread char name[32];
	const struct cdi_header *d;

	need_init(__func__);
	if (!p)
		return CUPTI_ERROR_INVALID_PARAMETER;
	d = cdi_of(__func__, p->pCounterDataImage, p->counterDataImageSize);
	if (p->rangeIndex >= d->nranges)
		return CUPTI_ERROR_INVALID_PARAMETER;
	snprintf(name, sizeof(name), "%zu", p->rangeIndex); /* auto ranges: their index */
	p->rangeName = name;
	return CUPTI_SUCCESS;
}

/* A kernel queued: a range of its context's started profiler. */
void cs_range_work(const struct sim_work *w)
{
	if (w->kind != SIM_WORK_KERNEL)
		return;
	pthread_mutex_lock(&P_lock);
	for (struct CUpti_RangeProfiler_Object *o = P_objects; o; o = o->next) {
		if (o->context_id != w->context || !o->started)
			continue;
		if (o->nhw < o->max_ranges && o->nhw < RANGES_HW)
			o->hw[o->nhw++] = (struct raw_range){
				.ns = w->end - w->start,
				.blocks = (uint64_t)w->grid[0] * w->grid[1] * w->grid[2],
				.threads_per_block = (uint64_t)w->block[0] * w->block[1] * w->block[2],
				.end_host = w->end,
			};
		else
			o->dropped++;
	}
	pthread_mutex_unlock(&P_lock);
}
