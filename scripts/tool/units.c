// SPDX-License-Identifier: MIT
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

struct unit {
	const char *name;
	double scale;
	struct dim d;
	bool percent;
	/* scale as p2 * 10^e10 (p2 a power of two): a number times it is read as
	 * its decimal shifted by e10, rounded once (unit__times) */
	int e10;
	double p2;
};

/* Binary prefixes for sizes (what the summary prints); decimal KB/MB/GB
 * as SI means them (du --si, disk makers), and for rates, which the
 * summary prints in GB/s. Longest names first where one prefixes another. */
static const struct unit units[] = {
	{ "ns", 1, DIM_TIME, false, 0, 1 },
	{ "us", 1e3, DIM_TIME, false, 3, 1 },
	{ "ms", 1e6, DIM_TIME, false, 6, 1 },
	{ "s", 1e9, DIM_TIME, false, 9, 1 },
	/* rates in bytes per ns, so that bytes / time needs no factor */
	{ "B/s", 1e-9, DIM_RATE, false, -9, 1 },
	{ "KB/s", 1e-6, DIM_RATE, false, -6, 1 },
	{ "kB/s", 1e-6, DIM_RATE, false, -6, 1 },
	{ "MB/s", 1e-3, DIM_RATE, false, -3, 1 },
	{ "GB/s", 1, DIM_RATE, false, 0, 1 },
	{ "TB/s", 1e3, DIM_RATE, false, 3, 1 },
	{ "KiB/s", 1024e-9, DIM_RATE, false, -9, 1024.0 },
	{ "MiB/s", 1048576e-9, DIM_RATE, false, -9, 1048576.0 },
	{ "GiB/s", 1073741824e-9, DIM_RATE, false, -9, 1073741824.0 },
	{ "B", 1, DIM_BYTES, false, 0, 1 },
	{ "KiB", 1024.0, DIM_BYTES, false, 0, 1024.0 },
	{ "MiB", 1048576.0, DIM_BYTES, false, 0, 1048576.0 },
	{ "GiB", 1073741824.0, DIM_BYTES, false, 0, 1073741824.0 },
	{ "TiB", 1099511627776.0, DIM_BYTES, false, 0, 1099511627776.0 },
	{ "KB", 1e3, DIM_BYTES, false, 3, 1 },
	{ "kB", 1e3, DIM_BYTES, false, 3, 1 },
	{ "MB", 1e6, DIM_BYTES, false, 6, 1 },
	{ "GB", 1e9, DIM_BYTES, false, 9, 1 },
	{ "TB", 1e12, DIM_BYTES, false, 12, 1 },
	{ "%", 0.01, DIM_COUNT, true, -2, 1 },
};

const char unit__list[] = "ns us ms s; B KiB MiB GiB TiB, KB MB GB TB (x1000); "
			  "B/s KB/s MB/s GB/s, KiB/s MiB/s GiB/s; %";

static bool unit_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '/' || c == '%';
}

int unit__parse(const char *s, double *scale, struct dim *d, bool *percent)
{
	size_t n = 0;

	/* a unit starts with a letter or is '%': "0 / 1ns" divides */
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '%'))
		return 0;
	while (unit_char(s[n]) && !(n && s[n] == '%'))
		n++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strlen(units[i].name) == n && !memcmp(units[i].name, s, n)) {
			*scale = units[i].scale;
			*d = units[i].d;
			*percent = units[i].percent;
			return (int)n;
		}
	}
	return -1;
}

double unit__times(const char *num, size_t len, double scale)
{
	char tmp[96], *end;
	size_t m = len;
	long x = 0;

	/* "16.374" us is 16374 ns, not 16.374 * 1e3 = 16373.999999999998: shift the
	 * decimal (strtod rounds once) and scale by the power of two, which is exact.
	 * Only plain decimals: [+-]digits[.digits][e[+-]digits]. */
	for (size_t i = 0; i < len; i++) {
		char c = num[i];

		if (c == 'e' || c == 'E') {
			m = i;
			break;
		}
		if (!((c >= '0' && c <= '9') || c == '.' || ((c == '+' || c == '-') && !i))) {
			m = SIZE_MAX;
			break;
		}
	}
	if (m != SIZE_MAX && m < len) {
		x = strtol(num + m + 1, &end, 10);
		if (end != num + len)
			m = SIZE_MAX;
	}
	for (size_t i = 0; m != SIZE_MAX && i < sizeof(units) / sizeof(units[0]); i++) {
		if (units[i].scale != scale || m + 24 > sizeof(tmp))
			continue;
		/* past +-10^6 the number is 0 or infinite whatever it is shifted by */
		x = x > 1000000 ? 1000000 : x < -1000000 ? -1000000 : x;
		snprintf(tmp, sizeof(tmp), "%.*se%ld", (int)m, num, x + units[i].e10);
		return strtod(tmp, NULL) * units[i].p2;
	}
	if (len >= sizeof(tmp)) /* the callers' numbers end where strtod's do */
		return strtod(num, NULL) * scale;
	snprintf(tmp, sizeof(tmp), "%.*s", (int)len, num);
	return strtod(tmp, NULL) * scale;
}

const char *dim__what(struct dim d, bool percent)
{
	if (percent)
		return "a percentage";
	if (dim__eq(d, DIM_COUNT))
		return "a number";
	if (dim__eq(d, DIM_TIME))
		return "a time";
	if (dim__eq(d, DIM_BYTES))
		return "a size";
	if (dim__eq(d, DIM_RATE))
		return "a rate";
	return "a product of units";
}

/* "%.3f" without trailing zeros (and without a lone '.'). */
static void trim(char *s)
{
	char *dot = strchr(s, '.');

	if (!dot)
		return;
	char *e = s + strlen(s) - 1;
	while (e > dot && *e == '0')
		*e-- = 0;
	if (e == dot)
		*e = 0;
}

static const char *fmt(char *out, size_t len, double v, struct dim d, bool percent, bool exact)
{
	static const char *const tnames[] = { "ns", "us", "ms", "s" };
	static const char *const bnames[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	static const char *const rnames[] = { "B/s", "KB/s", "MB/s", "GB/s", "TB/s" };
	const char *const *names = NULL;
	char num[64];
	double a = fabs(v), step = 1000.0, scaled = v;
	int n = 0, i = 0;

	if (percent) {
		snprintf(num, sizeof(num), "%.2f", v * 100.0);
		trim(num);
		/* 2.457% is not 2.46%: a bound of 2.46% must not read as what failed it */
		char full[64];

		snprintf(full, sizeof(full), "%.10g", v * 100.0);
		if (exact && strtod(num, NULL) != strtod(full, NULL))
			snprintf(out, len, "%s%% (%s%%)", num, full);
		else
			snprintf(out, len, "%s%%", num);
		return out;
	}
	if (dim__eq(d, DIM_TIME)) {
		names = tnames;
		n = 4;
	} else if (dim__eq(d, DIM_BYTES)) {
		names = bnames;
		n = 5;
		step = 1024.0;
	} else if (dim__eq(d, DIM_RATE)) {
		names = rnames;
		n = 5;
		v *= 1e9; /* bytes per ns -> per s */
		a = fabs(v);
		scaled = v;
	}
	if (!names) {
		if (v == floor(v) && a < 1e15)
			snprintf(out, len, "%.0f", v);
		else
			snprintf(out, len, "%.6g", v);
		return out;
	}
	while (i + 1 < n && a >= step) {
		a /= step;
		scaled /= step;
		i++;
	}
	snprintf(num, sizeof(num), "%.3f", scaled);
	trim(num);
	/* say so when the short form rounds (33.449 KiB is not 34252 B, though 33.449 *
	 * 1024 rounds to it; a mean of 8702.75 ns is not 8.703 us): in the base unit */
	if (exact && i > 0 && dim__eq(d, DIM_RATE) && strtod(num, NULL) != scaled &&
	    round(v) != round(strtod(num, NULL) * pow(step, i)))
		/* bytes per second, to the byte: the short form of 9999900000 B/s is 10 GB/s */
		snprintf(out, len, "%s %s (%.0f %s)", num, names[i], v, names[0]);
	else if (exact && i > 0 && strtod(num, NULL) != scaled)
		snprintf(out, len, v == floor(v) ? "%s %s (%.0f %s)" : "%s %s (%.10g %s)", num,
			 names[i], v, names[0]);
	else
		snprintf(out, len, "%s %s", num, names[i]);
	return out;
}

const char *unit__fmt(char *out, size_t len, double v, struct dim d, bool percent)
{
	return fmt(out, len, v, d, percent, true);
}

const char *unit__fmt_short(char *out, size_t len, double v, struct dim d, bool percent)
{
	return fmt(out, len, v, d, percent, false);
}
