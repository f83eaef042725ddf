/* SPDX-License-Identifier: MIT */
/*
 * A fake libnvidia-ml.so.1: the NVML entry points gputrace's telemetry uses
 * (backends/cuda/nvml.c), with the signatures and return codes of NVIDIA's
 * NVML reference, over pretend GPUs whose readings follow a formula, so a
 * test can check every sample of the trace. Independent of any CUDA stack.
 *
 * Device d (0-based) answers its k-th call (0-based, per device and query) of
 *   utilization   gpu = (7k + 13d) % 101, memory = (3k + d) % 101        (%)
 *   clock SM      1000 + 10k, memory 5000 + d                            (MHz)
 *   power         100000 + 1000k + 7d                                    (mW)
 *   temperature   40 + k % 20 + d                                        (C)
 *   memory        total 16 GiB, used 1 GiB + 4096k                       (bytes)
 *   PCIe          tx 1000k, rx 2000k + d (KB/s); device 1 and up: NOT_SUPPORTED
 * Environment:
 *   FAKE_NVML_DEVICES=n          how many GPUs (default 2, at most 8)
 *   FAKE_NVML_INIT=error         nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED
 *   FAKE_NVML_COUNT=error        nvmlDeviceGetCount_v2 fails with NVML_ERROR_UNKNOWN
 *   FAKE_NVML_DENY=power         power readings fail with NVML_ERROR_NO_PERMISSION
 *   FAKE_NVML_LOST=d:k           device d falls off the bus: from its k-th call of each
 *                                query on, NVML_ERROR_GPU_IS_LOST
 *   FAKE_NVML_NO_HANDLE=d        nvmlDeviceGetHandleByIndex_v2(d) fails (GPU_IS_LOST)
 *   FAKE_NVML_LOG=path           appends one line per call ("nvmlDeviceGetPowerUsage 0")
 * Calls before nvmlInit_v2 or after nvmlShutdown return NVML_ERROR_UNINITIALIZED, as
 * NVML does; a bad device handle NVML_ERROR_INVALID_ARGUMENT.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_UNKNOWN = 999,
};

enum { Q_UTIL, Q_CLOCK_SM, Q_CLOCK_MEM, Q_POWER, Q_TEMP, Q_MEM, Q_PCIE_TX, Q_PCIE_RX, Q__N };

#define DEVICES_MAX 8

struct nvmlDevice_st {
	unsigned index;
	unsigned long long calls[Q__N];
};

static struct nvmlDevice_st devices[DEVICES_MAX];
static unsigned ndevices;
static int inits; /* nvmlInit_v2 minus nvmlShutdown calls, as NVML counts them */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void log_call(const char *fn, int dev)
{
	const char *path = getenv("FAKE_NVML_LOG");
	FILE *f;

	if (!path || !(f = fopen(path, "a")))
		return;
	if (dev >= 0)
		fprintf(f, "%s %d\n", fn, dev);
	else
		fprintf(f, "%s\n", fn);
	fclose(f);
}

static bool env_is(const char *name, const char *value)
{
	const char *v = getenv(name);

	return v && !strcmp(v, value);
}

/* FAKE_NVML_LOST=d:k: device d is lost from its k-th call of a query on */
static bool lost(unsigned dev, unsigned long long k)
{
	const char *v = getenv("FAKE_NVML_LOST");
	unsigned d;
	unsigned long long from;

	return v && sscanf(v, "%u:%llu", &d, &from) == 2 && d == dev && k >= from;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_NO_PERMISSION:
		return "Insufficient Permissions";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	default:
		return "Unknown Error";
	}
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	const char *n = getenv("FAKE_NVML_DEVICES");

	log_call("nvmlInit_v2", -1);
	if (env_is("FAKE_NVML_INIT", "error"))
		return NVML_ERROR_DRIVER_NOT_LOADED;
	pthread_mutex_lock(&lock);
	if (!inits++) {
		ndevices = n ? (unsigned)atoi(n) : 2;
		if (ndevices > DEVICES_MAX)
			ndevices = DEVICES_MAX;
		memset(devices, 0, sizeof(devices));
		for (unsigned i = 0; i < DEVICES_MAX; i++)
			devices[i].index = i;
	}
	pthread_mutex_unlock(&lock);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
	nvmlReturn_t r = NVML_SUCCESS;

	log_call("nvmlShutdown", -1);
	pthread_mutex_lock(&lock);
	if (inits > 0)
		inits--;
	else
		r = NVML_ERROR_UNINITIALIZED;
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	log_call("nvmlDeviceGetCount_v2", -1);
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (env_is("FAKE_NVML_COUNT", "error"))
		return NVML_ERROR_UNKNOWN;
	*count = ndevices;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *out)
{
	log_call("nvmlDeviceGetHandleByIndex_v2", (int)i);
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (i >= ndevices || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (getenv("FAKE_NVML_NO_HANDLE") && (unsigned)atoi(getenv("FAKE_NVML_NO_HANDLE")) == i)
		return NVML_ERROR_GPU_IS_LOST;
	*out = &devices[i];
	return NVML_SUCCESS;
}

/* The device behind a handle, and its k for query q (counted), or NULL. */
static struct nvmlDevice_st *dev_call(nvmlDevice_t h, int q, unsigned long long *k,
				      nvmlReturn_t *err, const char *fn)
{
	log_call(fn, h && h >= devices && h < devices + ndevices ? (int)h->index : -1);
	if (!inits) {
		*err = NVML_ERROR_UNINITIALIZED;
		return NULL;
	}
	if (!h || h < devices || h >= devices + ndevices) {
		*err = NVML_ERROR_INVALID_ARGUMENT;
		return NULL;
	}
	pthread_mutex_lock(&lock);
	if (q >= 0)
		*k = h->calls[q]++;
	pthread_mutex_unlock(&lock);
	if (q >= 0 && lost(h->index, *k)) {
		*err = NVML_ERROR_GPU_IS_LOST;
		return NULL;
	}
	return h;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *name, unsigned int len)
{
	nvmlReturn_t err;
	unsigned long long k;
	struct nvmlDevice_st *d = dev_call(h, -1, &k, &err, "nvmlDeviceGetName");

	if (!d)
		return err;
	if (!name || !len)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(name, len, "Fake GPU %c", 'A' + d->index);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u)
{
	nvmlReturn_t err;
	unsigned long long k;
	struct nvmlDevice_st *d = dev_call(h, Q_UTIL, &k, &err, "nvmlDeviceGetUtilizationRates");

	if (!d)
		return err;
	if (!u)
		return NVML_ERROR_INVALID_ARGUMENT;
	u->gpu = (unsigned)((7 * k + 13 * d->index) % 101);
	u->memory = (unsigned)((3 * k + d->index) % 101);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned int *mhz)
{
	nvmlReturn_t err;
	unsigned long long k;
	int q = type == 1 ? Q_CLOCK_SM : type == 2 ? Q_CLOCK_MEM : -1;
	struct nvmlDevice_st *d;

	if (q < 0)
		return NVML_ERROR_NOT_SUPPORTED; /* graphics and video: not on these */
	d = dev_call(h, q, &k, &err, "nvmlDeviceGetClockInfo");
	if (!d)
		return err;
	if (!mhz)
		return NVML_ERROR_INVALID_ARGUMENT;
	*mhz = q == Q_CLOCK_SM ? (unsigned)(1000 + 10 * k) : 5000 + d->index;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int *mw)
{
	nvmlReturn_t err;
	unsigned long long k;
	struct nvmlDevice_st *d = dev_call(h, Q_POWER, &k, &err, "nvmlDeviceGetPowerUsage");

	if (!d)
		return err;
	if (env_is("FAKE_NVML_DENY", "power"))
		return NVML_ERROR_NO_PERMISSION;
	if (!mw)
		return NVML_ERROR_INVALID_ARGUMENT;
	*mw = (unsigned)(100000 + 1000 * k + 7 * d->index);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned int *c)
{
	nvmlReturn_t err;
	unsigned long long k;
	struct nvmlDevice_st *d = dev_call(h, Q_TEMP, &k, &err, "nvmlDeviceGetTemperature");

	if (!d)
		return err;
	if (sensor != 0 || !c)
		return NVML_ERROR_INVALID_ARGUMENT;
	*c = (unsigned)(40 + k % 20 + d->index);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m)
{
	nvmlReturn_t err;
	unsigned long long k;
	struct nvmlDevice_st *d = dev_call(h, Q_MEM, &k, &err, "nvmlDeviceGetMemoryInfo");

	if (!d)
		return err;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	m->total = 16ULL << 30;
	m->used = (1ULL << 30) + 4096 * k;
	m->free = m->total - m->used;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t h, int counter, unsigned int *kbs)
{
	nvmlReturn_t err;
	unsigned long long k;
	struct nvmlDevice_st *d;

	if (counter != 0 && counter != 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	d = dev_call(h, counter ? Q_PCIE_RX : Q_PCIE_TX, &k, &err, "nvmlDeviceGetPcieThroughput");
	if (!d)
		return err;
	if (d->index > 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (!kbs)
		return NVML_ERROR_INVALID_ARGUMENT;
	*kbs = counter ? (unsigned)(2000 * k + d->index) : (unsigned)(1000 * k);
	return NVML_SUCCESS;
}
