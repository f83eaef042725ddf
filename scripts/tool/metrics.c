// SPDX-License-Identifier: MIT
/*
 * gputrace metrics: what this machine's GPUs can measure, with the names the
 * trace gives them. Level Zero devices: their metric groups (how each can be
 * measured: over time, per kernel) and metrics, and their Sysman telemetry;
 * NVIDIA GPUs: their NVML telemetry and the CUPTI metric set sampled by
 * default. Libraries are dlopen()ed, as the tracer does; none present is
 * not an error: the listing says so and exits 0.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/nvml_api.h"
#include "backends/cuda/pm_sampling.h"
#include "tool.h"

#ifdef GT_HAVE_ZE
#include <level_zero/ze_api.h>
#include <level_zero/zes_api.h>
#include <level_zero/zet_api.h>
#include "backends/levelzero/units.h"

static void *ze_lib;

#define ZE_FN(name) ((__typeof__(&name))dlsym(ze_lib, #name))

static const char *metric_type(zet_metric_type_t t)
{
	static const char *const names[] = { "duration", "event", "event with range", "throughput",
					     "timestamp", "flag", "ratio", "raw" };

	return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "other";
}

static void list_group(zet_metric_group_handle_t g)
{
	zet_metric_group_properties_t p = { .stype = ZET_STRUCTURE_TYPE_METRIC_GROUP_PROPERTIES };
	zet_metric_handle_t *m;
	uint32_t n;

	if (ZE_FN(zetMetricGroupGetProperties)(g, &p) != ZE_RESULT_SUCCESS)
		return;
	printf("    %s (%s%s%s, domain %u): %s\n", p.name,
	       p.samplingType & ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED ? "time" : "",
	       (p.samplingType & ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED) &&
			       (p.samplingType & ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_EVENT_BASED)
		       ? ", "
		       : "",
	       p.samplingType & ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_EVENT_BASED ? "kernel" : "",
	       p.domain, p.description);
	n = p.metricCount;
	m = calloc(n ? n : 1, sizeof(*m));
	if (!m || ZE_FN(zetMetricGet)(g, &n, m) != ZE_RESULT_SUCCESS)
		n = 0;
	for (uint32_t i = 0; i < n; i++) {
		zet_metric_properties_t mp = { .stype = ZET_STRUCTURE_TYPE_METRIC_PROPERTIES };
		char key[ZET_MAX_METRIC_NAME + 64];

		if (ZE_FN(zetMetricGetProperties)(m[i], &mp) != ZE_RESULT_SUCCESS)
			continue;
		ze_metric_key(key, sizeof(key), mp.name, mp.resultUnits);
		printf("      %-40s %-11s %s\n", key, metric_type(mp.metricType), mp.description);
	}
	free(m);
}

/* Sysman domains: the telemetry tracks the trace will have. */
static void list_sysman(ze_device_handle_t d)
{
	zes_device_handle_t h = (zes_device_handle_t)d;
	uint32_t f = 0, p = 0, t = 0, m = 0, e = 0;

	if (ZE_FN(zesDeviceEnumFrequencyDomains)(h, &f, NULL) != ZE_RESULT_SUCCESS) {
		printf("    telemetry: none (the driver offers no Sysman)\n");
		return;
	}
	ZE_FN(zesDeviceEnumPowerDomains)(h, &p, NULL);
	ZE_FN(zesDeviceEnumTemperatureSensors)(h, &t, NULL);
	ZE_FN(zesDeviceEnumMemoryModules)(h, &m, NULL);
	ZE_FN(zesDeviceEnumEngineGroups)(h, &e, NULL);
	/* one of a kind in the singular: "(1 module, ...)" */
	printf("    telemetry (--telemetry): frequency (%u domain%s, MHz), power (%u, W), "
	       "temperature (%u sensor%s, °C), memory and memory bandwidth (%u module%s, bytes, "
	       "GB/s), engine utilization (%u group%s, %%)\n",
	       f, f == 1 ? "" : "s", p, t, t == 1 ? "" : "s", m, m == 1 ? "" : "s", e,
	       e == 1 ? "" : "s");
}

static void list_levelzero(void)
{
	uint32_t ndrv = 0, index = 0;
	ze_driver_handle_t drv[8];
	ze_result_t r;

	ze_lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!ze_lib) {
		printf("Level Zero: no loader (libze_loader.so.1)\n");
		return;
	}
	/* what the tracer sets when metrics or telemetry are asked for */
	setenv("ZET_ENABLE_METRICS", "1", 1);
	setenv("ZES_ENABLE_SYSMAN", "1", 1);
	r = ZE_FN(zeInit)(0);
	if (r == ZE_RESULT_SUCCESS)
		r = ZE_FN(zeDriverGet)(&ndrv, NULL);
	if (r != ZE_RESULT_SUCCESS || !ndrv) {
		printf("Level Zero: no devices\n");
		return;
	}
	printf("Level Zero (--metrics GROUP or METRIC, --metrics-mode time|kernel):\n");
	if (ndrv > 8)
		ndrv = 8;
	ZE_FN(zeDriverGet)(&ndrv, drv);
	for (uint32_t i = 0; i < ndrv; i++) {
		ze_device_handle_t devs[64];
		uint32_t n = 64;

		if (ZE_FN(zeDeviceGet)(drv[i], &n, devs) != ZE_RESULT_SUCCESS)
			continue;
		for (uint32_t j = 0; j < n; j++, index++) {
			ze_device_properties_t p = { .stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES };
			zet_metric_group_handle_t *g;
			uint32_t ng = 0;

			ZE_FN(zeDeviceGetProperties)(devs[j], &p);
			printf("  GPU %u: %s\n", index, p.name);
			r = ZE_FN(zetMetricGroupGet)(devs[j], &ng, NULL);
			if (r != ZE_RESULT_SUCCESS || !ng)
				printf("    metrics: none (%s)\n",
				       r == ZE_RESULT_SUCCESS ? "no metric groups"
							      : "the driver offers no metrics");
			g = calloc(ng ? ng : 1, sizeof(*g));
			if (g && ng && ZE_FN(zetMetricGroupGet)(devs[j], &ng, g) == ZE_RESULT_SUCCESS)
				for (uint32_t k = 0; k < ng; k++)
					list_group(g[k]);
			free(g);
			list_sysman(devs[j]);
		}
	}
}
#else
static void list_levelzero(void)
{
	printf("Level Zero: not built in (no libze-dev at build time)\n");
}
#endif

/* What --telemetry samples of an NVIDIA GPU (backends/cuda/nvml.c), asked of
 * this one: a series its NVML does not give is left out, as the trace does. */
static void list_nvidia_series(void *lib, nvmlDevice_t d)
{
	struct {
#define NVML_FN(ret, name, params) ret(*name) params;
		NVML_FUNCS(NVML_FN)
#undef NVML_FN
	} nv;
	nvmlUtilization_t u;
	nvmlMemory_t m;
	unsigned v, v2;
	const char *sep = "";

#define NVML_SYM(ret, name, params) nv.name = (ret(*) params)dlsym(lib, #name);
	NVML_FUNCS(NVML_SYM)
#undef NVML_SYM
	const struct {
		bool ok;
		const char *text;
	} series[] = {
		{ nv.nvmlDeviceGetUtilizationRates &&
			  nv.nvmlDeviceGetUtilizationRates(d, &u) == NVML_SUCCESS,
		  "utilization (gpu %, memory %)" },
		{ nv.nvmlDeviceGetClockInfo &&
			  nv.nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &v) == NVML_SUCCESS &&
			  nv.nvmlDeviceGetClockInfo(d, NVML_CLOCK_MEM, &v2) == NVML_SUCCESS,
		  "frequency (sm MHz, memory MHz)" },
		{ nv.nvmlDeviceGetPowerUsage && nv.nvmlDeviceGetPowerUsage(d, &v) == NVML_SUCCESS,
		  "power (W)" },
		{ nv.nvmlDeviceGetTemperature &&
			  nv.nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS,
		  "temperature (gpu °C)" },
		{ nv.nvmlDeviceGetMemoryInfo && nv.nvmlDeviceGetMemoryInfo(d, &m) == NVML_SUCCESS,
		  "memory (used bytes)" },
		{ nv.nvmlDeviceGetPcieThroughput &&
			  nv.nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_TX_BYTES, &v) ==
				  NVML_SUCCESS &&
			  nv.nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_RX_BYTES, &v2) ==
				  NVML_SUCCESS,
		  "pcie (tx KB/s, rx KB/s)" },
	};

	printf("    telemetry (--telemetry): ");
	for (size_t i = 0; i < sizeof(series) / sizeof(series[0]); i++) {
		if (!series[i].ok)
			continue;
		printf("%s%s", sep, series[i].text);
		sep = ", ";
	}
	printf("%s\n", *sep ? "" : "none (its NVML gives none of them)");
}

static void list_nvidia(void)
{
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	nvmlReturn_t (*init)(void), (*count)(unsigned *), (*handle)(unsigned, nvmlDevice_t *),
		(*name)(nvmlDevice_t, char *, unsigned), (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t err;
	unsigned n = 0;
	size_t nbasic = 0;
	const struct cupti_pm_metric basic[] = {
#define BASIC(name, label) { name, label },
		CUPTI_PM_BASIC(BASIC)
	}, per_kernel[] = {
		CUPTI_RANGE_BASIC(BASIC)
#undef BASIC
	};

	nbasic = sizeof(basic) / sizeof(basic[0]);
	if (!lib) {
		printf("NVIDIA: no NVML (libnvidia-ml.so.1): no NVIDIA GPU\n");
		return;
	}
	init = (nvmlReturn_t(*)(void))dlsym(lib, "nvmlInit_v2");
	count = (nvmlReturn_t(*)(unsigned *))dlsym(lib, "nvmlDeviceGetCount_v2");
	handle = (nvmlReturn_t(*)(unsigned, nvmlDevice_t *))dlsym(lib,
								   "nvmlDeviceGetHandleByIndex_v2");
	name = (nvmlReturn_t(*)(nvmlDevice_t, char *, unsigned))dlsym(lib, "nvmlDeviceGetName");
	shutdown = (nvmlReturn_t(*)(void))dlsym(lib, "nvmlShutdown");
	error_string = (const char *(*)(nvmlReturn_t))dlsym(lib, "nvmlErrorString");
	if (!init || !count || !handle || !name || !shutdown) {
		printf("NVIDIA: libnvidia-ml.so.1 lacks NVML's functions: no NVIDIA GPU listed\n");
		return;
	}
	/* a driver not loaded, or a library not of the driver's version: said as
	 * such, not as a machine without GPUs */
	if ((err = init()) != NVML_SUCCESS) {
		printf("NVIDIA: NVML did not start (%s): no NVIDIA GPU listed\n",
		       error_string ? error_string(err) : "its error code has no name");
		return;
	}
	if ((err = count(&n)) != NVML_SUCCESS || !n) {
		if (err != NVML_SUCCESS)
			printf("NVIDIA: NVML cannot count its GPUs (%s)\n",
			       error_string ? error_string(err) : "its error code has no name");
		else
			printf("NVIDIA: NVML sees no GPU\n");
		shutdown();
		return;
	}
	printf("NVIDIA (NVML %s; CUPTI metrics with --metrics-mode time|kernel|nvtx):\n",
	       "libnvidia-ml.so.1");
	for (unsigned i = 0; i < n; i++) {
		nvmlDevice_t d;
		char buf[NVML_DEVICE_NAME_BUFFER_SIZE] = "";

		if (handle(i, &d) != NVML_SUCCESS) {
			printf("  GPU %u: NVML gives no handle\n", i);
			continue;
		}
		name(d, buf, sizeof(buf));
		printf("  GPU %u: %s\n", i, buf);
		list_nvidia_series(lib, d);
	}
	printf("  PM sampling, the basic set (--metrics NAME,... takes any CUPTI metric, "
	       "`ncu --query-metrics`):\n");
	for (size_t i = 0; i < nbasic; i++)
		printf("    %-24s %s\n", basic[i].label, basic[i].name);
	printf("  range profiler, per kernel or NVTX range (--metrics-mode kernel|nvtx; names as "
	       "above, one pass):\n");
	for (size_t i = 0; i < sizeof(per_kernel) / sizeof(per_kernel[0]); i++)
		printf("    %-24s %s\n", per_kernel[i].label, per_kernel[i].name);
	shutdown();
}

static void usage_metrics(FILE *f)
{
	fprintf(f, "usage: gputrace metrics\n"
		   "Lists the metric groups and metrics of this machine's GPUs, and their\n"
		   "telemetry, with the names the trace gives them.\n");
}

int cmd_metrics(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage_metrics(stdout);
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "gputrace metrics: takes no arguments ('%s')\n", argv[1]);
		usage_metrics(stderr);
		return 2;
	}
	list_levelzero();
	list_nvidia();
	fflush(stdout);
	return 0;
}
