/* SPDX-License-Identifier: MIT */
/*
 * The few NVML entry points gputrace uses (backends/cuda/nvml.c and
 * `gputrace metrics`), declared from NVIDIA's NVML API reference: no NVML
 * header is installed where gputrace is built, and the library is only ever
 * dlopen()ed. These are stable since NVML 5 (the _v2 names since CUDA 5.5).
 */
#ifndef GPUTRACE_NVML_API_H
#define GPUTRACE_NVML_API_H

typedef int nvmlReturn_t;      /* NVML_SUCCESS = 0 */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
	unsigned int gpu, memory; /* percent of the last sample period */
} nvmlUtilization_t;
typedef struct {
	unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

#define NVML_SUCCESS                0
#define NVML_ERROR_NOT_SUPPORTED    3
#define NVML_ERROR_NO_PERMISSION    4
#define NVML_ERROR_GPU_IS_LOST      15
#define NVML_CLOCK_GRAPHICS         0
#define NVML_CLOCK_SM               1
#define NVML_CLOCK_MEM              2
#define NVML_TEMPERATURE_GPU        0
#define NVML_PCIE_UTIL_TX_BYTES     0
#define NVML_PCIE_UTIL_RX_BYTES     1
#define NVML_DEVICE_NAME_BUFFER_SIZE 96

#define NVML_FUNCS(X)                                                                     \
	X(nvmlReturn_t, nvmlInit_v2, (void))                                              \
	X(nvmlReturn_t, nvmlShutdown, (void))                                             \
	X(const char *, nvmlErrorString, (nvmlReturn_t))                                  \
	X(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *))                          \
	X(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int, nvmlDevice_t *))    \
	X(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t, char *, unsigned int))          \
	X(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t, nvmlUtilization_t *)) \
	X(nvmlReturn_t, nvmlDeviceGetClockInfo, (nvmlDevice_t, int, unsigned int *))      \
	X(nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t, unsigned int *))          \
	X(nvmlReturn_t, nvmlDeviceGetTemperature, (nvmlDevice_t, int, unsigned int *))    \
	X(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t, nvmlMemory_t *))          \
	X(nvmlReturn_t, nvmlDeviceGetPcieThroughput, (nvmlDevice_t, int, unsigned int *))

#endif
