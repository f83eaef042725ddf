/* SPDX-License-Identifier: MIT */
/*
 * How a Level Zero metric is named in the trace: its name and its unit,
 * "GpuBusy %", "GpuTime ns", so a counter track reads by itself in Perfetto.
 * Shared by the backend (metrics.c) and `gputrace metrics` (scripts/tool),
 * so the listing shows the names the trace will have. Header only, libc only.
 */
#ifndef GPUTRACE_LEVELZERO_UNITS_H
#define GPUTRACE_LEVELZERO_UNITS_H

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Drivers spell units in words ("percent", "GBpS"): the usual symbols instead. */
static inline const char *ze_unit_symbol(const char *units)
{
	static const char *const map[][2] = {
		{ "percent", "%" },	 { "GBpS", "GB/s" }, { "MBpS", "MB/s" },
		{ "KBpS", "KB/s" },	 { "Bps", "B/s" },   { "bytes", "bytes" },
		{ "nanoseconds", "ns" }, { "Celsius", "°C" },
	};

	if (!units)
		return "";
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcasecmp(units, map[i][0]))
			return map[i][1];
	return units;
}

/* "name unit", or the name alone when the metric has no unit. */
static inline void ze_metric_key(char *out, size_t len, const char *name, const char *units)
{
	const char *u = ze_unit_symbol(units);

	if (*u)
		snprintf(out, len, "%.200s %.40s", name, u);
	else
		snprintf(out, len, "%.200s", name);
}

#endif
