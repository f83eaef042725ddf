// SPDX-License-Identifier: MIT
/*
 * Hardware metrics of NVIDIA GPUs over time (--metrics-mode time): CUPTI's
 * PM sampling (cupti_pmsampling.h, CUDA 12.6 and later) with the host
 * profiler API (cupti_profiler_host.h) that turns raw samples into values.
 *
 * Once CUPTI is ours (cupti_state CUPTI_ON), the drain thread enables PM
 * sampling on every CUDA device with the config image of the chosen
 * metrics, then every DECODE_NS decodes what the hardware buffered and
 * turns each completed sample into one counter sample "PM sampling" on the
 * device's row, at the sample's start (CUPTI's clock, converted like
 * activity records). The metrics: the basic set below, or the CUPTI metric
 * names of GPUTRACE_METRICS (words with "__"; the rest are Level Zero's).
 *
 * Every refusal is one line: no PM sampling in this libcupti, no device, a
 * metric this chip lacks, more than one pass, and above all permission
 * (NVreg_RestrictProfilingToAdminUsers). The host side needs no GPU: the
 * config image is built from the chip's name alone (unit-tested so).
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
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "backends/cuda/internal.h"
#include "backends/cuda/pm_sampling.h"
#include "inject/clock.h"
#include "inject/config.h"

#define DECODE_NS       (100ull * 1000000)  /* how often the hardware buffer is decoded */
#define HW_BUFFER_BYTES (64u << 20)
#define MAX_SAMPLES     4096                /* per decode: DECODE_NS at 40 kHz */
#define PM_DEVS_MAX     16
#define PM_METRICS_MAX  (GT_ARGS_MAX)

static const struct cupti_pm_metric pm_basic[] = {
#define PM_BASIC_ENTRY(name, label) { name, label },
	CUPTI_PM_BASIC(PM_BASIC_ENTRY)
#undef PM_BASIC_ENTRY
};

static const struct cupti_pm_metric range_basic[] = {
#define PM_BASIC_ENTRY(name, label) { name, label },
	CUPTI_RANGE_BASIC(PM_BASIC_ENTRY)
#undef PM_BASIC_ENTRY
};

const struct cupti_pm_metric *cupti__pm_basic(size_t *n)
{
	*n = sizeof(pm_basic) / sizeof(pm_basic[0]);
	return pm_basic;
}

const struct cupti_pm_metric *cupti__range_basic(size_t *n)
{
	*n = sizeof(range_basic) / sizeof(range_basic[0]);
	return range_basic;
}

/* ---- the profiler functions, looked up in the libcupti already loaded ---- */

/* The host profiler: shared by PM sampling and the range profiler (range_profiler.c). */
#define HOST_FUNCS(X)                                                                      \
	X(cuptiProfilerInitialize)                                                         \
	X(cuptiDeviceGetChipName)                                                          \
	X(cuptiProfilerHostInitialize)                                                     \
	X(cuptiProfilerHostDeinitialize)                                                   \
	X(cuptiProfilerHostConfigAddMetrics)                                               \
	X(cuptiProfilerHostGetConfigImageSize)                                             \
	X(cuptiProfilerHostGetConfigImage)                                                 \
	X(cuptiProfilerHostGetNumOfPasses)                                                 \
	X(cuptiProfilerHostEvaluateToGpuValues)

#define PM_FUNCS(X)                                                                        \
	X(cuptiPmSamplingGetCounterAvailability)                                           \
	X(cuptiPmSamplingEnable)                                                           \
	X(cuptiPmSamplingDisable)                                                          \
	X(cuptiPmSamplingSetConfig)                                                        \
	X(cuptiPmSamplingStart)                                                            \
	X(cuptiPmSamplingStop)                                                             \
	X(cuptiPmSamplingDecodeData)                                                       \
	X(cuptiPmSamplingGetCounterDataSize)                                               \
	X(cuptiPmSamplingCounterDataImageInitialize)                                       \
	X(cuptiPmSamplingGetCounterDataInfo)                                               \
	X(cuptiPmSamplingCounterDataGetSampleInfo)

static struct {
#define PM_FN(name) __typeof__(name) *name;
	HOST_FUNCS(PM_FN)
	PM_FUNCS(PM_FN)
#undef PM_FN
} pf;
static bool host_loaded;

/* The loaded libcupti's handle (NULL if none; dlclose it). */
void *cupti__loaded_handle(void)
{
	Dl_info info;

	if (!cupti_fn.cuptiGetVersion || !dladdr((void *)cupti_fn.cuptiGetVersion, &info))
		return NULL;
	return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

/* 0, or -ENOSYS: this libcupti has no host profiler (before CUDA 12.6). */
static int host_load(void)
{
	void *h;

	if (host_loaded)
		return 0;
	if (!(h = cupti__loaded_handle()))
		return -ENOENT;
#define HOST_SYM(name)                                                                     \
	pf.name = (__typeof__(pf.name))cupti__dlsym(h, #name);                             \
	if (!pf.name) {                                                                    \
		dlclose(h);                                                                \
		return -ENOSYS;                                                            \
	}
	HOST_FUNCS(HOST_SYM)
#undef HOST_SYM
	dlclose(h);
	host_loaded = true;
	return 0;
}

/* 0, or -ENOSYS: this libcupti has no PM sampling (before CUDA 12.6). */
static int pm_load(void)
{
	static int loaded; /* 1, or -errno */
	void *h;

	if (loaded)
		return loaded < 0 ? loaded : 0;
	if (host_load() || !(h = cupti__loaded_handle()))
		return -ENOSYS;
	loaded = 1;
#define PM_SYM(name)                                                                       \
	if (!(pf.name = (__typeof__(pf.name))cupti__dlsym(h, #name)))                      \
		loaded = -ENOSYS;
	PM_FUNCS(PM_SYM)
#undef PM_SYM
	dlclose(h);
	return loaded < 0 ? loaded : 0;
}

static const char *pm_error(CUptiResult r)
{
	return cupti__result_string(r);
}

/* The refusal in words a user can act on. */
void cupti__pm_refused(const char *what, int r)
{
	if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
		pr_warn("CUDA metrics: %s: no permission to profile the GPU (load the driver "
			"with NVreg_RestrictProfilingToAdminUsers=0, or run as root)",
			what);
	else
		pr_warn("CUDA metrics: %s: %s", what, pm_error(r));
}

/* ---- the metrics: GPUTRACE_METRICS's CUPTI names, or the basic set ---- */

static struct cupti_pm_metric pm_chosen[PM_METRICS_MAX];
static char pm_names[PM_METRICS_MAX][128];
static size_t pm_nchosen;
static bool pm_default; /* the basic set: what a chip lacks of it is left out */

/* A label with a unit, from a CUPTI metric's name. */
static void pm_label(char *out, size_t len, const char *name)
{
	if (strstr(name, ".pct_of_peak"))
		snprintf(out, len, "%s %%", name);
	else if (strstr(name, "bytes") && strstr(name, ".per_second"))
		snprintf(out, len, "%s B/s", name);
	else if (strstr(name, ".per_second"))
		snprintf(out, len, "%s /s", name);
	else
		snprintf(out, len, "%s", name);
}

/* A --metrics word without CUPTI's "__": Level Zero's devices judge it where there are
 * any (each says what it lacks); where there are none, nothing would: one line. (A
 * program that starts CUDA's metrics before its first zeInit gets it as well.) */
static void pm_not_cupti(const char *word)
{
	if (!*word || atomic_load(&gt_ze_metric_devices))
		return;
	pr_warn("CUDA metrics: '%s' is not a metric: CUPTI's names have '__' (those of `ncu "
		"--query-metrics`), and no Level Zero device here takes metrics: ignored",
		word);
}

size_t cupti__pm_choose(const char *list, bool kernel, struct cupti_pm_metric *out,
			char (*labels)[128], size_t max)
{
	size_t nbasic;
	const struct cupti_pm_metric *basic =
		kernel ? cupti__range_basic(&nbasic) : cupti__pm_basic(&nbasic);
	static char words[PM_METRICS_MAX][128];
	size_t n = 0;
	const char *s = list ? list : "";

	while (*s && n < max) {
		size_t len = strcspn(s, ",");
		char *w = words[n];

		snprintf(w, sizeof(words[n]), "%.*s", (int)len, s);
		w += strspn(w, " ");
		for (char *e = w + strlen(w); e > w && e[-1] == ' '; *--e = 0)
			;
		s += len + (s[len] == ',');
		if (!strstr(w, "__")) {
			pm_not_cupti(w); /* a Level Zero group or metric, or a mistake */
			continue;
		}
		pm_label(labels[n], sizeof(labels[n]), w);
		out[n].name = w;
		out[n].label = labels[n];
		n++;
	}
	if (n)
		return n;
	for (; n < max && n < nbasic; n++)
		out[n] = basic[n];
	return n;
}

/* ---- the host side: a config image from a chip's name ---- */

static void *pm_host_new(int type, const char *chip, const uint8_t *availability,
			 CUptiResult *r)
{
	CUpti_Profiler_Host_Initialize_Params init = {
		CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE };

	init.profilerType = (CUpti_ProfilerType)type;
	init.pChipName = chip;
	init.pCounterAvailabilityImage = availability;
	*r = pf.cuptiProfilerHostInitialize(&init);
	return *r == CUPTI_SUCCESS ? init.pHostObject : NULL;
}

static CUptiResult pm_host_add(void *host, const char **names, size_t n)
{
	CUpti_Profiler_Host_ConfigAddMetrics_Params add = {
		CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE };

	add.pHostObject = host;
	add.ppMetricNames = names;
	add.numMetrics = n;
	return pf.cuptiProfilerHostConfigAddMetrics(&add);
}

/* Does the chip have this metric? (A host object of its own: a refused metric leaves
 * nothing behind in the real one.) */
static CUptiResult pm_chip_has(int type, const char *chip, const uint8_t *availability,
			       const char *name)
{
	CUptiResult r;
	void *h = pm_host_new(type, chip, availability, &r);

	if (h) {
		r = pm_host_add(h, &name, 1);
		cupti__pm_host_free(h, NULL);
	}
	return r;
}

int cupti__pm_config(int type, const char *chip, const uint8_t *availability,
		     struct cupti_pm_metric *m, size_t *n, bool drop_missing, void **host,
		     uint8_t **image, size_t *size, size_t *passes)
{
	CUpti_Profiler_Host_GetConfigImageSize_Params sz = {
		CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_GetConfigImage_Params img = {
		CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_GetNumOfPasses_Params np = {
		CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE };
	const char *names[PM_METRICS_MAX];
	size_t kept = 0;
	CUptiResult r;

	*host = NULL;
	*image = NULL;
	if (host_load())
		return -ENOSYS;
	/* each metric alone first: a line names the one the chip lacks */
	for (size_t i = 0; i < *n && i < PM_METRICS_MAX; i++) {
		r = pm_chip_has(type, chip, availability, m[i].name);
		if (r == CUPTI_SUCCESS) {
			m[kept++] = m[i];
		} else if (drop_missing) {
			pr_info("CUDA metrics: %s has no %s: not sampled", chip, m[i].name);
		} else {
			pr_warn("CUDA metrics: '%s' is not a metric of %s (%s); the names are "
				"those of `ncu --query-metrics`",
				m[i].name, chip, pm_error(r));
			return -EINVAL;
		}
	}
	*n = kept;
	if (!kept)
		return -ENOENT;
	if (!(*host = pm_host_new(type, chip, availability, &r))) {
		cupti__pm_refused("the host profiler", r);
		return -EINVAL;
	}
	/* all in one call: CUPTI schedules them together (one by one, each takes a pass) */
	for (size_t i = 0; i < kept; i++)
		names[i] = m[i].name;
	if ((r = pm_host_add(*host, names, kept)) != CUPTI_SUCCESS) {
		cupti__pm_refused("the metrics", r);
		return -EINVAL;
	}
	sz.pHostObject = *host;
	if ((r = pf.cuptiProfilerHostGetConfigImageSize(&sz)) != CUPTI_SUCCESS ||
	    !sz.configImageSize || !(*image = malloc(sz.configImageSize))) {
		cupti__pm_refused("the config image", r);
		return -EINVAL;
	}
	img.pHostObject = *host;
	img.configImageSize = sz.configImageSize;
	img.pConfigImage = *image;
	if ((r = pf.cuptiProfilerHostGetConfigImage(&img)) != CUPTI_SUCCESS) {
		cupti__pm_refused("the config image", r);
		return -EINVAL;
	}
	*size = sz.configImageSize;
	np.configImageSize = sz.configImageSize;
	np.pConfigImage = *image;
	*passes = pf.cuptiProfilerHostGetNumOfPasses(&np) == CUPTI_SUCCESS ? np.numOfPasses : 0;
	return 0;
}

void cupti__pm_host_free(void *host, uint8_t *image)
{
	CUpti_Profiler_Host_Deinitialize_Params d = {
		CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE };

	if (host && pf.cuptiProfilerHostDeinitialize) {
		d.pHostObject = host;
		pf.cuptiProfilerHostDeinitialize(&d);
	}
	free(image);
}

void cupti__pm_stop(void);

/*
 * The profiler's host library (libnvperf_host, beside libcupti) has C++ objects that its
 * exit handlers destroy. On an H200 a short program's exit ran them while the drain
 * thread was still starting PM sampling in the library: SIGSEGV in libnvperf_host in 3 of
 * 8 runs of vec_add, and a hang in another (scripts/gpu-check). So it is loaded before
 * sampling starts, and an exit handler registered after it runs before its own: it waits
 * for a start in progress and stops sampling (cupti__pm_stop), while the library is whole.
 * An exit that begins before that registration found the drain thread in the start, and
 * libcupti's own exit handlers ran under it (std::out_of_range thrown in libcupti's
 * profiler, 2 of 24 runs there): CUPTI's exit handler, registered after libcupti loaded,
 * so run before them, stops sampling first (backend.c, cupti_atexit).
 */
static void host_preload(void)
{
	char path[PATH_MAX];
	const char *slash;
	Dl_info info;

	if (dladdr((void *)pf.cuptiProfilerInitialize, &info) && info.dli_fname &&
	    (slash = strrchr(info.dli_fname, '/')) &&
	    snprintf(path, sizeof(path), "%.*s/libnvperf_host.so", (int)(slash - info.dli_fname),
		     info.dli_fname) < (int)sizeof(path))
		dlopen(path, RTLD_NOW | RTLD_LOCAL); /* kept: libcupti loads it anyway */
	atexit(cupti__pm_stop);
}

int cupti__host_start(void)
{
	static int done;
	CUpti_Profiler_Initialize_Params init = { CUpti_Profiler_Initialize_Params_STRUCT_SIZE };
	CUptiResult r;

	if (done)
		return done < 0 ? done : 0;
	if (host_load())
		return done = -ENOSYS;
	if ((r = pf.cuptiProfilerInitialize(&init)) != CUPTI_SUCCESS) {
		cupti__pm_refused("the profiler", r);
		return done = -EIO;
	}
	done = 1;
	return 0;
}

int cupti__chip_name(unsigned device, const char **chip)
{
	CUpti_Device_GetChipName_Params p = { CUpti_Device_GetChipName_Params_STRUCT_SIZE };
	CUptiResult r;

	p.deviceIndex = device;
	if ((r = pf.cuptiDeviceGetChipName(&p)) != CUPTI_SUCCESS)
		return -(int)r;
	*chip = p.pChipName;
	return 0;
}

int cupti__host_evaluate(void *host, const uint8_t *data, size_t size, size_t range,
			 const char **names, size_t n, double *values)
{
	CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
		CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE };

	ev.pHostObject = host;
	ev.pCounterDataImage = data;
	ev.counterDataImageSize = size;
	ev.rangeIndex = range;
	ev.ppMetricNames = names;
	ev.numMetrics = n;
	ev.pMetricValues = values;
	return pf.cuptiProfilerHostEvaluateToGpuValues(&ev) == CUPTI_SUCCESS ? 0 : -EIO;
}

/* ---- devices ---- */

struct pm_dev {
	unsigned index;
	uint32_t track;
	void *host;
	uint8_t *config, *data;
	size_t config_size, data_size;
	CUpti_PmSampling_Object *pm;
};

static struct pm_dev pm_devs[PM_DEVS_MAX];
static unsigned pm_ndevs;
static enum { PM_NEW, PM_ON, PM_OFF } pm_state;
static pthread_mutex_t pm_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t pm_counter_name, pm_keys[PM_METRICS_MAX];

int cupti__device_count(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	int (*count)(int *) = cuda ? (int (*)(int *))cupti__dlsym(cuda, "cuDeviceGetCount") : NULL;
	int n = 0;

	if (!count || count(&n))
		n = 0;
	if (cuda)
		dlclose(cuda);
	return n;
}

static int pm_image_init(struct pm_dev *d)
{
	CUpti_PmSampling_CounterDataImage_Initialize_Params p = {
		CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE };

	p.pPmSamplingObject = d->pm;
	p.counterDataSize = d->data_size;
	p.pCounterData = d->data;
	return pf.cuptiPmSamplingCounterDataImageInitialize(&p) == CUPTI_SUCCESS ? 0 : -EIO;
}

/* One device, from its chip's name to sampling. 0, or -errno after one line. */
static int pm_start_device(struct pm_dev *d)
{
	CUpti_Device_GetChipName_Params chip = { CUpti_Device_GetChipName_Params_STRUCT_SIZE };
	CUpti_PmSampling_GetCounterAvailability_Params av = {
		CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE };
	CUpti_PmSampling_Enable_Params en = { CUpti_PmSampling_Enable_Params_STRUCT_SIZE };
	CUpti_PmSampling_SetConfig_Params cfg = { CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE };
	CUpti_PmSampling_GetCounterDataSize_Params ds = {
		CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE };
	CUpti_PmSampling_Start_Params st = { CUpti_PmSampling_Start_Params_STRUCT_SIZE };
	const char *names[PM_METRICS_MAX];
	uint8_t *avail = NULL;
	size_t passes = 0;
	CUptiResult r;
	char what[64];

	snprintf(what, sizeof(what), "GPU %u", d->index);
	chip.deviceIndex = d->index;
	if ((r = pf.cuptiDeviceGetChipName(&chip)) != CUPTI_SUCCESS) {
		cupti__pm_refused(what, r);
		return -EIO;
	}
	av.deviceIndex = d->index;
	if ((r = pf.cuptiPmSamplingGetCounterAvailability(&av)) != CUPTI_SUCCESS ||
	    !(avail = malloc(av.counterAvailabilityImageSize))) {
		cupti__pm_refused(what, r);
		return -EIO;
	}
	av.pCounterAvailabilityImage = avail;
	if ((r = pf.cuptiPmSamplingGetCounterAvailability(&av)) != CUPTI_SUCCESS) {
		cupti__pm_refused(what, r);
		free(avail);
		return -EIO;
	}
	if (cupti__pm_config(CUPTI_PROFILER_TYPE_PM_SAMPLING, chip.pChipName, avail, pm_chosen,
			     &pm_nchosen, pm_default, &d->host, &d->config, &d->config_size,
			     &passes)) {
		free(avail);
		return -EINVAL;
	}
	free(avail);
	if (passes != 1) {
		pr_warn("CUDA metrics: the chosen metrics need %zu passes on %s (%s); PM sampling "
			"takes what one pass collects: choose fewer",
			passes, what, chip.pChipName);
		return -E2BIG;
	}
	en.deviceIndex = d->index;
	if ((r = pf.cuptiPmSamplingEnable(&en)) != CUPTI_SUCCESS) {
		cupti__pm_refused(what, r);
		return -EIO;
	}
	d->pm = en.pPmSamplingObject;
	cfg.pPmSamplingObject = d->pm;
	cfg.configSize = d->config_size;
	cfg.pConfig = d->config;
	cfg.hardwareBufferSize = HW_BUFFER_BYTES;
	cfg.samplingInterval = 1000000000ull / gt_cfg.metrics_hz;
	cfg.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
	cfg.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST;
	if ((r = pf.cuptiPmSamplingSetConfig(&cfg)) != CUPTI_SUCCESS) {
		cupti__pm_refused(what, r);
		return -EIO;
	}
	for (size_t i = 0; i < pm_nchosen; i++)
		names[i] = pm_chosen[i].name;
	ds.pPmSamplingObject = d->pm;
	ds.pMetricNames = names;
	ds.numMetrics = pm_nchosen;
	ds.maxSamples = MAX_SAMPLES;
	if ((r = pf.cuptiPmSamplingGetCounterDataSize(&ds)) != CUPTI_SUCCESS ||
	    !(d->data = malloc(ds.counterDataSize))) {
		cupti__pm_refused(what, r);
		return -EIO;
	}
	d->data_size = ds.counterDataSize;
	if (pm_image_init(d))
		return -EIO;
	st.pPmSamplingObject = d->pm;
	if ((r = pf.cuptiPmSamplingStart(&st)) != CUPTI_SUCCESS) {
		cupti__pm_refused(what, r);
		return -EIO;
	}
	d->track = cupti__device_track(d->index);
	pr_info("CUDA metrics: PM sampling %s (%s), %zu metrics every %llu ns", what,
		chip.pChipName, pm_nchosen, (unsigned long long)cfg.samplingInterval);
	return 0;
}

static void pm_stop_device(struct pm_dev *d)
{
	CUpti_PmSampling_Stop_Params st = { CUpti_PmSampling_Stop_Params_STRUCT_SIZE };
	CUpti_PmSampling_Disable_Params dis = { CUpti_PmSampling_Disable_Params_STRUCT_SIZE };

	if (d->pm) {
		st.pPmSamplingObject = d->pm;
		pf.cuptiPmSamplingStop(&st);
		dis.pPmSamplingObject = d->pm;
		pf.cuptiPmSamplingDisable(&dis);
	}
	cupti__pm_host_free(d->host, d->config);
	free(d->data);
	memset(d, 0, sizeof(*d));
}

static bool pm_start(void)
{
	int n;

	if (pm_load()) {
		pr_warn("CUDA metrics: this libcupti has no PM sampling (CUDA 12.6 or later has it)");
		return false;
	}
	pm_nchosen = cupti__pm_choose(gt_cfg.metrics, false, pm_chosen, pm_names, PM_METRICS_MAX);
	pm_default = pm_nchosen && pm_chosen[0].name == cupti__pm_basic(&(size_t){ 0 })[0].name;
	if (cupti__host_start())
		return false;
	n = cupti__device_count();
	if (n <= 0) {
		pr_warn("CUDA metrics: no CUDA device");
		return false;
	}
	host_preload(); /* (not where there is no device: the library is large) */
	pm_counter_name = gt_str_intern("PM sampling");
	for (size_t i = 0; i < pm_nchosen; i++)
		pm_keys[i] = gt_str_intern(pm_chosen[i].label);
	for (int i = 0; i < n && pm_ndevs < PM_DEVS_MAX; i++) {
		struct pm_dev *d = &pm_devs[pm_ndevs];

		memset(d, 0, sizeof(*d));
		d->index = (unsigned)i;
		if (pm_start_device(d))
			pm_stop_device(d);
		else
			pm_ndevs++;
	}
	return pm_ndevs > 0;
}

/* Decode what the hardware holds; each completed sample -> one counter sample. */
static void pm_decode(struct pm_dev *d)
{
	CUpti_PmSampling_DecodeData_Params dec = { CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE };
	CUpti_PmSampling_GetCounterDataInfo_Params info = {
		CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE };
	const char *names[PM_METRICS_MAX];
	double values[PM_METRICS_MAX];
	struct gt_arg args[PM_METRICS_MAX];

	dec.pPmSamplingObject = d->pm;
	dec.pCounterDataImage = d->data;
	dec.counterDataImageSize = d->data_size;
	if (pf.cuptiPmSamplingDecodeData(&dec) != CUPTI_SUCCESS)
		return;
	if (dec.overflow)
		gt_lost_add(gt_str_intern("cupti_pm_overflow"), 1);
	info.pCounterDataImage = d->data;
	info.counterDataImageSize = d->data_size;
	if (pf.cuptiPmSamplingGetCounterDataInfo(&info) != CUPTI_SUCCESS)
		return;
	for (size_t i = 0; i < pm_nchosen; i++)
		names[i] = pm_chosen[i].name;
	for (size_t s = 0; s < info.numCompletedSamples; s++) {
		CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
			CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE };
		uint64_t when;

		si.pPmSamplingObject = d->pm;
		si.pCounterDataImage = d->data;
		si.counterDataImageSize = d->data_size;
		si.sampleIndex = s;
		if (pf.cuptiPmSamplingCounterDataGetSampleInfo(&si) != CUPTI_SUCCESS ||
		    cupti__host_evaluate(d->host, d->data, d->data_size, s, names, pm_nchosen,
					 values))
			continue;
		for (size_t i = 0; i < pm_nchosen; i++)
			args[i] = (struct gt_arg){ .key = pm_keys[i], .type = GT_ARG_F64,
						   .v.f = values[i] };
		when = cupti__to_host(si.startTimestamp);
		if (d->track) /* 0: its device has no row (records.c, no_device_row) */
			gt_emit_counter(d->track, pm_counter_name, when, args,
					(unsigned)pm_nchosen);
	}
	/* consumed: the image starts over for the next decode */
	pm_image_init(d);
}

/* Time-based CUDA metrics asked for: PM sampling may start. */
static bool pm_wanted(void)
{
	return gt_cfg.metrics_mode == GT_METRICS_TIME && gt_backend_enabled(GT_BACKEND_CUPTI) &&
	       (gt_cfg.kinds & GT_KIND(COUNTER));
}

static uint64_t pm_sample(uint64_t now_ns)
{
	bool on;

	if (!pm_wanted())
		return 0;
	switch (atomic_load(&cupti_state)) {
	case CUPTI_ON:
		break;
	case CUPTI_OFF:
	case CUPTI_STARTING:
		/* CUDA has not started yet: looked for again within the drain's tick, so
		 * sampling starts near it (a program shorter than DECODE_NS was not sampled,
		 * nor told why not) */
		return now_ns + GT_DRAIN_POLL_MS * 1000000ull;
	case CUPTI_HELD:
		pr_warn("CUDA metrics: CUPTI belongs to another tool (see above): no PM sampling");
		return 0;
	case CUPTI_DISABLED:
		pr_warn("CUDA metrics need CUPTI, which is off (GPUTRACE_DISABLE_CUPTI or CUPTI "
			"refused): no PM sampling");
		return 0;
	default:
		return 0; /* no CUDA driver: nothing to sample, nothing to say */
	}
	pthread_mutex_lock(&pm_lock);
	cupti_self++;
	if (pm_state == PM_NEW)
		pm_state = pm_start() ? PM_ON : PM_OFF;
	on = pm_state == PM_ON;
	for (unsigned i = 0; on && i < pm_ndevs; i++)
		pm_decode(&pm_devs[i]);
	cupti_self--;
	pthread_mutex_unlock(&pm_lock);
	return on ? now_ns + DECODE_NS : 0;
}

GT_STARTUP_CODE void cupti__pm_stop(void)
{
	if (!pm_wanted())
		return; /* never started (pm_sample neither) */
	pthread_mutex_lock(&pm_lock);
	cupti_self++;
	/* CUPTI was loaded, but the program ended before a sample was due: what the
	 * start would have said (CUPTI may be stopped by now: symbols only, no call) */
	if (pm_state == PM_NEW && cupti_fn.cuptiGetVersion && pm_load())
		pr_warn("CUDA metrics: this libcupti has no PM sampling (CUDA 12.6 or later has it)");
	if (pm_state == PM_ON) {
		for (unsigned i = 0; i < pm_ndevs; i++) {
			pm_decode(&pm_devs[i]);
			pm_stop_device(&pm_devs[i]);
		}
	}
	pm_ndevs = 0;
	pm_state = PM_OFF;
	cupti_self--;
	pthread_mutex_unlock(&pm_lock);
}

GT_FORK_CODE static void pm_atfork_child(void)
{
	/* the parent's sampling sessions are not the child's (CUDA does not survive
	 * fork); none without PM sampling asked for: nothing to write (a shell's
	 * child writes no page for it) */
	if (!pm_wanted())
		return;
	pthread_mutex_init(&pm_lock, NULL);
	memset(pm_devs, 0, sizeof(pm_devs));
	pm_ndevs = 0;
	pm_state = PM_OFF;
}

static const struct gt_backend pm_backend = {
	.name = "cupti_pm",
	.enabled_by = GT_BACKEND_CUPTI,
	.sample = pm_sample,
	.stop = cupti__pm_stop,
	.atfork_child = pm_atfork_child,
};

GT_BACKEND_REGISTER(pm_backend);
