/* SPDX-License-Identifier: MIT */
/*
 * Quantities as check expressions, diffs and reports read and print them:
 * a number with a dimension (time in ns, bytes, bytes per second, or a
 * plain count) and whether it reads as a percentage.
 */
#ifndef GPUTRACE_TOOL_UNITS_H
#define GPUTRACE_TOOL_UNITS_H

#include <stdbool.h>
#include <stddef.h>

/* Dimension as exponents: time^t * bytes^b. A rate is t=-1, b=1. Values
 * are in base units: ns, bytes, and so bytes per ns for rates (1 GB/s). */
struct dim {
	signed char t, b;
};

#define DIM_COUNT ((struct dim){ 0, 0 })
#define DIM_TIME  ((struct dim){ 1, 0 })
#define DIM_BYTES ((struct dim){ 0, 1 })
#define DIM_RATE  ((struct dim){ -1, 1 })

static inline bool dim__eq(struct dim a, struct dim b)
{
	return a.t == b.t && a.b == b.b;
}

/* "a time", "a size", "a rate", "a count", "a percentage" ... for messages. */
const char *dim__what(struct dim d, bool percent);

/* The unit at s (no spaces): its length (0 if none), scale (to ns, bytes,
 * bytes/s or a fraction for %) and dimension. -1: letters that are no unit. */
int unit__parse(const char *s, double *scale, struct dim *d, bool *percent);
/* The number written as num (len chars: [+-]digits[.digits][e[+-]N]) times a
 * scale unit__parse gave, rounded once: 16.374 us is 16374 ns and 35% is 0.35,
 * as a time or a fraction measured exactly at the bound compares equal to it. */
double unit__times(const char *num, size_t len, double scale);
/* The units a literal may carry, for messages. */
extern const char unit__list[];

/* Human form: "31.25 ms", "24 KiB", "8.19 GB/s", "57.3%", "27"; when the
 * short form rounds, the exact base value follows: "25 ms (25000400 ns)". */
const char *unit__fmt(char *out, size_t len, double v, struct dim d, bool percent);
/* Always short (tables): 3 significant decimals at most. */
const char *unit__fmt_short(char *out, size_t len, double v, struct dim d, bool percent);

#endif
