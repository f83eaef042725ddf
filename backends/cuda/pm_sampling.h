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

struct cupti_pm_metric {
	const char *name;  /* CUPTI's: "sm__cycles_active.avg.pct_of_peak_sustained_elapsed" */
	const char *label; /* the series in the trace: "sm active %" */
};

/* The basic set sampled when GPUTRACE_METRICS names no CUPTI metric. */
const struct cupti_pm_metric *cupti__pm_basic(size_t *n);
/* The CUPTI metrics of a GPUTRACE_METRICS list (words with "__"), labelled with their
 * unit; the basic set when there are none. Names point into static storage. */
size_t cupti__pm_choose(const char *list, struct cupti_pm_metric *out, char (*labels)[128],
			size_t max);
/* A PM sampling config image for chip (e.g. "GH100") and metrics m[*n], with the host
 * object that evaluates its samples (free both with cupti__pm_host_free). availability:
 * the device's counter availability image, or NULL. A metric the chip lacks is left out
 * of m (and *n) when drop_missing, else refused. 0, or -errno (one line said why). */
int cupti__pm_config(const char *chip, const uint8_t *availability, struct cupti_pm_metric *m,
		     size_t *n, bool drop_missing, void **host, uint8_t **image, size_t *size,
		     size_t *passes);
void cupti__pm_host_free(void *host, uint8_t *image);

#endif
