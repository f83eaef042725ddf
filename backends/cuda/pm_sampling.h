/* SPDX-License-Identifier: MIT */
/*
 * CUPTI metrics (pm_sampling.c): what the unit test and `gputrace metrics`
 * reach without a GPU. The host side of CUPTI's profiler builds a config
 * image from a chip's name alone, so the chosen metrics are checked offline.
 */
#ifndef GPUTRACE_CUDA_PM_SAMPLING_H
#define GPUTRACE_CUDA_PM_SAMPLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The basic compute set: busy, SM activity, memory and PCIe traffic (name, label). */
#define CUPTI_PM_BASIC(X)                                                                  \
	X("gr__cycles_active.avg.pct_of_peak_sustained_elapsed", "gpu busy %")             \
	X("sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "sm active %")            \
	X("sm__warps_active.avg.pct_of_peak_sustained_active", "warps active %")           \
	X("dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram throughput %")       \
	X("pcie__read_bytes.sum.per_second", "pcie read B/s")                              \
	X("pcie__write_bytes.sum.per_second", "pcie write B/s")

/* Per kernel (--metrics-mode kernel, the range profiler): its time and how busy it kept
 * the GPU, its SMs and DRAM; fits one pass on the chips check_pm builds it for. */
#define CUPTI_RANGE_BASIC(X)                                                               \
	X("gpu__time_duration.sum", "gpu time ns")                                         \
	X("gr__cycles_active.avg.pct_of_peak_sustained_elapsed", "gpu busy %")             \
	X("sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "sm active %")            \
	X("sm__warps_active.avg.pct_of_peak_sustained_active", "warps active %")           \
	X("dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram throughput %")

struct cupti_pm_metric {
	const char *name;  /* CUPTI's: "sm__cycles_active.avg.pct_of_peak_sustained_elapsed" */
	const char *label; /* the series in the trace: "sm active %" */
};

/* The basic set sampled when GPUTRACE_METRICS names no CUPTI metric. */
const struct cupti_pm_metric *cupti__pm_basic(size_t *n);
/* The per-kernel set, when GPUTRACE_METRICS names none (--metrics-mode kernel). */
const struct cupti_pm_metric *cupti__range_basic(size_t *n);
/* The CUPTI metrics of a GPUTRACE_METRICS list (words with "__"), labelled with their
 * unit; the basic set of the mode (kernel: per kernel) when there are none. Names point
 * into static storage. */
size_t cupti__pm_choose(const char *list, bool kernel, struct cupti_pm_metric *out,
			char (*labels)[128], size_t max);
/* A config image of profiler type (CUpti_ProfilerType: CUPTI_PROFILER_TYPE_PM_SAMPLING or
 * _RANGE_PROFILER) for chip (e.g. "GH100") and metrics m[*n], with the host
 * object that evaluates its samples (free both with cupti__pm_host_free). availability:
 * the device's counter availability image, or NULL. A metric the chip lacks is left out
 * of m (and *n) when drop_missing, else refused. 0, or -errno (one line said why). */
int cupti__pm_config(int type, const char *chip, const uint8_t *availability,
		     struct cupti_pm_metric *m, size_t *n, bool drop_missing, void **host,
		     uint8_t **image, size_t *size, size_t *passes);
void cupti__pm_host_free(void *host, uint8_t *image);
/* The host profiler's values of range (a sample or a range) of a counter data image. */
int cupti__host_evaluate(void *host, const uint8_t *data, size_t size, size_t range,
			 const char **names, size_t n, double *values);
/* The profiler's functions found and cuptiProfilerInitialize done, once: 0, -ENOSYS
 * (this libcupti has none), or -EIO (refused: one line said why). */
int cupti__host_start(void);
/* The chip of a CUDA device ("GH100"): 0, or minus CUPTI's result. */
int cupti__chip_name(unsigned device, const char **chip);
/* The number of CUDA devices (libcuda's, already loaded), 0 if none. */
int cupti__device_count(void);
/* The loaded libcupti, for dlsym (dlclose it), or NULL. */
void *cupti__loaded_handle(void);
/* PM sampling stopped, for good: waits for a start or a decode in progress. At exit
 * before libcupti's own exit handlers, and as the backend's stop hook. */
void cupti__pm_stop(void);
/* One line: what was refused and why, in words a user can act on (CUptiResult r). */
void cupti__pm_refused(const char *what, int r);

#endif
