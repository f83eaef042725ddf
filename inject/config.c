/* SPDX-License-Identifier: MIT */
/*
 * GPUTRACE_* environment parsing. Every variable has a default; a bad value
 * or an unknown GPUTRACE_* name is reported in one line that names the
 * variable and what is accepted, and the default stays.
 */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "cstr.h"
#include "utf8.h"

GT_HIDDEN struct gt_config gt_cfg GT_STARTUP_BSS_LAST;

/* A string variable not given (each such field points here) */
static const char unset[] GT_STARTUP_CONST = "";

GT_STARTUP_CODE static void config_defaults(struct gt_config *cfg)
{
	/* not the path pool: the pages a process is not given paths for stay
	 * untouched (each is a page fault in every process) */
	memset(cfg, 0, offsetof(struct gt_config, paths));
	cfg->output = "gputrace-%e-%p.json";
	cfg->plugin_path = cfg->summary_json = cfg->run_state = unset;
	cfg->metrics = cfg->capture_nvtx = cfg->capture_nvtx_domain = unset;
	cfg->buffer_kb = GT_BUFFER_KB_DEFAULT;
	/* two stores, not one of a 16-byte constant the compiler would keep in .rodata */
	__asm__("" : : : "memory");
	cfg->overflow_mb = GT_OVERFLOW_MB_DEFAULT;
	cfg->backends = GT_BACKEND_ALL;
	cfg->summary = true;
	cfg->log_level = GT_LOG_WARN;
	cfg->kinds = GT_KIND_ALL;
	cfg->flush_ms = 200;
	cfg->metrics_hz = GT_METRICS_HZ_DEFAULT;
	cfg->telemetry_hz = GT_TELEMETRY_HZ_DEFAULT;
	cfg->capture_signal = GT_CAPTURE_SIGNAL_RTMIN_DEFAULT;
	cfg->capture_count = 1;
}

/* config__check's answer, instead of a message. */
static const char *checked_accepted;
static bool checking;

static void bad(struct gt_config *cfg, const char *var, const char *val, const char *accepted)
{
	char shown[4 * 200 + 1];

	cfg->errors++;
	if (checking) {
		checked_accepted = accepted;
		return;
	}
	/* its first 200 bytes (never half a character), escaped as the
	 * summary's text and the run's refusals are: a newline in the value
	 * would break the one line, a tab would not show, bytes that are not
	 * UTF-8 would make the line no text (until 2026-12-07 they were
	 * printed raw, a cut could halve a character, and a CR was \x0d here,
	 * \r in gputrace run's refusal of an option) */
	gt_text_line(shown, val, 200);
	gt_log(GT_LOG_ERROR, "%s='%s' is not valid: expected %s; using the default", var, shown,
	       accepted);
}

/* Unsigned decimal in [min, max]; 0 on success. Digits only: strtoull
 * would also skip any leading white space and take a sign. */
static int parse_uint(const char *s, unsigned long long min, unsigned long long max,
		      unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* 1/0 spellings people use. Returns 1, 0 or -1. */
GT_STARTUP_SELDOM static int parse_bool(const char *s)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i]))
			return 1;
		if (!strcasecmp(s, no[i]))
			return 0;
	}
	return -1;
}

static int parse_log_level(const char *s)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	unsigned long long v;

	for (int i = 0; i < 4; i++)
		if (!strcasecmp(s, names[i]))
			return i;
	if (!parse_uint(s, 0, 3, &v))
		return (int)v;
	return -1;
}

/* Words of a comma list, one at a time: copies into word, returns the rest. */
static const char *next_word(const char *s, char *word, size_t len, int *toolong)
{
	size_t n = 0;

	*toolong = 0;
	while (*s == ',' || *s == ' ')
		s++;
	while (*s && *s != ',') {
		if (n + 1 < len)
			word[n++] = *s;
		else
			*toolong = 1;
		s++;
	}
	while (n && word[n - 1] == ' ')
		n--;
	word[n] = 0;
	return s;
}

static int kind_of_word(const char *w)
{
	static const struct {
		char alias[24]; /* text, not a pointer to relocate in every process */
		int bit;
	} aliases[] = {
		/* vendor and Kineto spellings */
		{ "concurrent_kernel", GT_KIND_BIT_KERNEL }, { "gpu_kernel", GT_KIND_BIT_KERNEL },
		{ "kernels", GT_KIND_BIT_KERNEL },          { "gpu_memcpy", GT_KIND_BIT_MEMCPY },
		{ "memcpy2", GT_KIND_BIT_MEMCPY },          { "gpu_memset", GT_KIND_BIT_MEMSET },
		{ "cuda_sync", GT_KIND_BIT_SYNC },          { "synchronization", GT_KIND_BIT_SYNC },
		{ "user_annotation", GT_KIND_BIT_ANNOTATION }, { "nvtx", GT_KIND_BIT_ANNOTATION },
		{ "gpu_user_annotation", GT_KIND_BIT_ANNOTATION }, { "counters", GT_KIND_BIT_COUNTER },
		{ "pm_counter", GT_KIND_BIT_COUNTER },      { "gpu_pm_counter", GT_KIND_BIT_COUNTER },
		{ "ze_api", GT_KIND_BIT_RUNTIME },
		/* the rest of Kineto's ActivityType names, each the kind its
		 * events are recorded as (kineto_types, backends/plugins/kineto.c) */
		{ "cpu_op", GT_KIND_BIT_ANNOTATION }, { "python_function", GT_KIND_BIT_ANNOTATION },
		{ "cpu_instant_event", GT_KIND_BIT_ANNOTATION },
		{ "cuda_profiler_range", GT_KIND_BIT_ANNOTATION },
		{ "external_correlation", GT_KIND_BIT_RUNTIME }, { "hpu_op", GT_KIND_BIT_RUNTIME },
		{ "collective_comm", GT_KIND_BIT_KERNEL },
		{ "mtia_ccp_events", GT_KIND_BIT_KERNEL },
		{ "mtia_insight", GT_KIND_BIT_OVERHEAD },
	};
#define GT_KIND_FITS(id, str) _Static_assert(sizeof(str) <= 16, "kind " #id " too long");
	GT_KINDS(GT_KIND_FITS)
#undef GT_KIND_FITS
	static const char names[][16] = {
#define GT_KIND_NAME(id, str) str,
		GT_KINDS(GT_KIND_NAME)
#undef GT_KIND_NAME
	};
	size_t n = strlen(w);

	for (int i = 0; i < GT_KIND__COUNT; i++)
		if (!strcasecmp(w, names[i]))
			return i;
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcasecmp(w, aliases[i].alias))
			return aliases[i].bit;
	/* <vendor>_runtime / <vendor>_driver (cuda_runtime, xpu_runtime,
	 * privateuse1_driver, ...): new accelerators need no new names. */
	if (n > 8 && !strcasecmp(w + n - 8, "_runtime"))
		return GT_KIND_BIT_RUNTIME;
	if (n > 7 && !strcasecmp(w + n - 7, "_driver"))
		return GT_KIND_BIT_DRIVER;
	return -1;
}

long config__parse_kinds(const char *s, char *badbuf, size_t badlen)
{
	char word[64];
	long mask = 0;
	int toolong, words = 0;

	while (*s) {
		s = next_word(s, word, sizeof(word), &toolong);
		if (!word[0])
			continue;
		words++;
		if (!toolong && !strcasecmp(word, "all")) {
			mask |= GT_KIND_ALL;
			continue;
		}
		int bit = toolong ? -1 : kind_of_word(word);
		if (bit < 0) {
			snprintf(badbuf, badlen, "%s", word);
			return -1;
		}
		mask |= 1l << bit;
	}
	if (!words) {
		snprintf(badbuf, badlen, "(empty)");
		return -1;
	}
	return mask;
}

static int parse_backends(const char *s, unsigned *out)
{
	char word[64];
	unsigned mask = 0;
	int toolong, words = 0;

	while (*s) {
		s = next_word(s, word, sizeof(word), &toolong);
		if (!word[0])
			continue;
		words++;
		if (toolong)
			return -EINVAL;
		if (!strcasecmp(word, "cupti") || !strcasecmp(word, "cuda"))
			mask |= GT_BACKEND_CUPTI;
		else if (!strcasecmp(word, "ze") || !strcasecmp(word, "levelzero") ||
			 !strcasecmp(word, "level_zero"))
			mask |= GT_BACKEND_ZE;
		else if (!strcasecmp(word, "plugins") || !strcasecmp(word, "plugin"))
			mask |= GT_BACKEND_PLUGINS;
		else if (!strcasecmp(word, "all"))
			mask |= GT_BACKEND_ALL;
		else if (!strcasecmp(word, "none"))
			mask |= 0;
		else
			return -EINVAL;
	}
	if (!words)
		return -EINVAL;
	*out = mask;
	return 0;
}

/* The output template must expand; checked here so the error is reported
 * with the variable's name at start, not when the file is opened. */
GT_STARTUP_SELDOM static int check_template(const char *s)
{
	char buf[PATH_MAX];

	/* %p, %e, %% and text (gputrace run's own template) by a scan: each
	 * expands to at least one character and no longer than its code here.
	 * Expanding them takes snprintf, pages of libc that a process which
	 * records nothing would fault in for this alone. */
	for (const char *p = s; *p; p++) {
		if (*p != '%')
			continue;
		switch (*++p) {
		case 'p':
		case 'e':
		case '%':
			break;
		case 'h':
		case 'r':
		case 't':
			return config__expand_output(s, buf, sizeof(buf), 1, "x", 0);
		default:
			return -EINVAL;
		}
	}
	return *s ? 0 : -EINVAL;
}

typedef void (*setter_fn)(struct gt_config *cfg, const char *var, const char *val);

/* A copy of the len bytes at val, ended, in cfg's pool; NULL when longer
 * than max (or the pool is full: the same variable many times over). */
GT_STARTUP_SELDOM static const char *keep_text(struct gt_config *cfg, const char *val, size_t len,
					      size_t max)
{
	char *dst = cfg->paths + cfg->paths_used;

	if (len > max || len + 1 > sizeof(cfg->paths) - cfg->paths_used)
		return NULL;
	for (size_t i = 0; i < len; i++) { /* a loop: cstr.h */
		dst[i] = val[i];
		GT_CSTR_OPAQUE(i);
	}
	dst[len] = 0;
	cfg->paths_used += len + 1;
	return dst;
}

GT_STARTUP_SELDOM static const char *keep_path(struct gt_config *cfg, const char *val)
{
	return keep_text(cfg, val, gt_cstr_len(val), PATH_MAX - 1);
}

/* A path or template into *dst: not empty, checked by valid (if any). */
GT_STARTUP_SELDOM static void set_path(struct gt_config *cfg, const char *var, const char *val,
				     const char **dst, int (*valid)(const char *),
				     const char *accepted)
{
	static char too_long[64]; /* what is accepted, as config__check hands it on */
	const char *kept = NULL;
	size_t len = gt_cstr_len(val);

	if (len > PATH_MAX - 1) {
		/* the reason, not what it should look like: it may look right */
		snprintf(too_long, sizeof(too_long), "at most %d characters (this one has %zu)",
			 PATH_MAX - 1, len);
		bad(cfg, var, val, too_long);
		return;
	}
	if (*val && (!valid || !valid(val)))
		kept = keep_path(cfg, val);
	if (kept)
		*dst = kept;
	else
		bad(cfg, var, val, accepted);
}

GT_STARTUP_SELDOM static void set_output(struct gt_config *cfg, const char *var, const char *val)
{
	set_path(cfg, var, val, &cfg->output, check_template,
		 "a file path template (codes %p pid, %e program, %h host, %r rank, %t start time, %%)");
}

static void set_overflow_mb(struct gt_config *cfg, const char *var, const char *val)
{
	unsigned long long v;

	if (parse_uint(val, 0, GT_OVERFLOW_MB_MAX, &v))
		bad(cfg, var, val, "megabytes for the whole process, an integer from 0 (off) to 65536");
	else
		cfg->overflow_mb = v;
}

static void set_buffer_kb(struct gt_config *cfg, const char *var, const char *val)
{
	unsigned long long v;

	if (parse_uint(val, GT_BUFFER_KB_MIN, GT_BUFFER_KB_MAX, &v))
		bad(cfg, var, val, "kilobytes per thread, an integer from 4 to 1048576");
	else
		cfg->buffer_kb = v;
}

static void set_backends(struct gt_config *cfg, const char *var, const char *val)
{
	if (parse_backends(val, &cfg->backends))
		bad(cfg, var, val, "a comma list of cupti, ze, plugins, all, or none");
}

GT_STARTUP_SELDOM static void set_bool(struct gt_config *cfg, const char *var, const char *val, bool *dst)
{
	int b = parse_bool(val);

	if (b < 0)
		bad(cfg, var, val, "1/0, yes/no, true/false or on/off");
	else
		*dst = b;
}

static void set_disable_cupti(struct gt_config *cfg, const char *var, const char *val)
{
	set_bool(cfg, var, val, &cfg->disable_cupti);
}

GT_STARTUP_SELDOM static void set_summary(struct gt_config *cfg, const char *var, const char *val)
{
	set_bool(cfg, var, val, &cfg->summary);
}

static void set_graph_trace(struct gt_config *cfg, const char *var, const char *val)
{
	set_bool(cfg, var, val, &cfg->graph_trace);
}

static void set_stacks_all(struct gt_config *cfg, const char *var, const char *val)
{
	set_bool(cfg, var, val, &cfg->stacks_all);
}

static void set_plugin_path(struct gt_config *cfg, const char *var, const char *val)
{
	set_path(cfg, var, val, &cfg->plugin_path, NULL, "a colon-separated list of directories");
}

static void set_summary_json(struct gt_config *cfg, const char *var, const char *val)
{
	set_path(cfg, var, val, &cfg->summary_json, check_template,
		 "a file path template (codes as GPUTRACE_OUTPUT: %p pid, %e program, %h host, "
		 "%r rank, %t start time, %%)");
}

/*
 * GPUTRACE_RUN_STATE: a private folder of the `gputrace run` that started
 * this process. Its processes print no summary of their own (the run prints
 * one for all of them), list the traces they write there, and print each
 * distinct warning once per run, not once per process.
 */
GT_STARTUP_SELDOM static void set_run_state(struct gt_config *cfg, const char *var, const char *val)
{
	set_path(cfg, var, val, &cfg->run_state, NULL, "a directory");
}

/* A number is always the depth (1 is one frame); on/yes/true is the
 * default depth, 16. */
static void set_stacks(struct gt_config *cfg, const char *var, const char *val)
{
	unsigned long long v;
	int b = parse_bool(val);

	if (!parse_uint(val, 0, GT_STACKS_MAX_DEPTH, &v))
		cfg->stacks = v;
	else if (b >= 0 && !(*val >= '0' && *val <= '9'))
		cfg->stacks = b ? GT_STACKS_DEFAULT_DEPTH : 0;
	else {
		bad(cfg, var, val, "off or 0, on (depth 16), or a depth from 1 to 64 frames");
		return;
	}
	cfg->stacks_set = true;
}

static void set_log(struct gt_config *cfg, const char *var, const char *val)
{
	int l = parse_log_level(val);

	if (l < 0)
		bad(cfg, var, val, "error, warn, info, debug (or 0-3)");
	else
		cfg->log_level = l;
}

static void set_activities(struct gt_config *cfg, const char *var, const char *val)
{
	char badword[64];
	long m = config__parse_kinds(val, badword, sizeof(badword));

	if (m < 0)
		bad(cfg, var, val,
		    "a comma list of runtime, driver, kernel, memcpy, memset, sync, annotation, "
		    "counter, overhead, all (vendor names like cuda_runtime or xpu_driver work too)");
	else
		cfg->kinds = (unsigned)m;
}

static void set_kineto_cycle_ms(struct gt_config *cfg, const char *var, const char *val)
{
	unsigned long long v;

	/* 0 however written ("00" as "0") is off */
	if (!strcasecmp(val, "off") || !parse_uint(val, 0, 0, &v))
		cfg->kineto_cycle_ms = 0;
	else if (parse_uint(val, 100, 3600000, &v))
		bad(cfg, var, val, "0/off, or milliseconds from 100 to 3600000");
	else
		cfg->kineto_cycle_ms = (unsigned)v;
}

static void set_flush_ms(struct gt_config *cfg, const char *var, const char *val)
{
	unsigned long long v;

	if (parse_uint(val, 10, 60000, &v))
		bad(cfg, var, val, "milliseconds, an integer from 10 to 60000");
	else
		cfg->flush_ms = v;
}

/* Seconds to the millisecond (0.5, 30, 1.25; 1.2500 too: a decimal past the
 * third may be a zero): parsed by hand, not strtod, whose decimal point
 * follows the program's locale. */
static int parse_seconds_ms(const char *s, unsigned long long *ms)
{
	unsigned long long v = 0;
	unsigned frac = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++)
		if ((v = v * 10 + (unsigned long long)(*p - '0')) > GT_WATCHDOG_MAX_S)
			return -ERANGE;
	v *= 1000;
	if (*p == '.') {
		unsigned scale = 100;

		if (p[1] < '0' || p[1] > '9')
			return -EINVAL;
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10) {
			if (!scale && *p != '0')
				return -EINVAL; /* finer than a millisecond */
			frac += (unsigned)(*p - '0') * scale;
		}
	}
	if (*p)
		return -EINVAL;
	*ms = v + frac;
	return *ms > GT_WATCHDOG_MAX_S * 1000ull ? -ERANGE : 0;
}

static void set_watchdog(struct gt_config *cfg, const char *var, const char *val)
{
	unsigned long long ms;

	if (!strcasecmp(val, "off")) {
		cfg->watchdog_ms = 0;
	} else if (parse_seconds_ms(val, &ms) || (ms && ms < 100)) {
		bad(cfg, var, val, "off or 0, or seconds from 0.1 to 86400 (to the millisecond, e.g. "
			      "30 or 2.5)");
	} else {
		cfg->watchdog_ms = (unsigned)ms;
	}
}

/* A full ring makes the producer wait for the drain (ring_wait.c), at most
 * this long per stall: on/1 (GT_LOSSLESS_MS_DEFAULT), off/0 (also 0.0: 0 however
 * written), or seconds. */
static void set_lossless(struct gt_config *cfg, const char *var, const char *val)
{
	unsigned long long ms;
	int b = parse_bool(val);

	if (b >= 0)
		cfg->lossless_ms = b ? GT_LOSSLESS_MS_DEFAULT : 0;
	else if (parse_seconds_ms(val, &ms) || ms > GT_LOSSLESS_MS_MAX)
		bad(cfg, var, val, "1/on, 0/off, or the longest wait in seconds, 0.001 to 60 (to the "
			      "millisecond, e.g. 2.5)");
	else
		cfg->lossless_ms = (unsigned)ms;
}

#define METRICS_MAX_STR_(max) #max
#define METRICS_MAX_STR(max)  METRICS_MAX_STR_(max)

/* Group or metric names: letters, digits and "_.-/:" (vendors' names), comma-separated. */
static void set_metrics(struct gt_config *cfg, const char *var, const char *val)
{
	bool ok = *val, named = false;
	const char *kept = NULL;

	for (const char *p = val; ok && *p; p++) {
		ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		     strchr("_.-/:, ", *p);
		named |= !strchr(", ", *p);
	}
	/* "," or " ": no name at all, which asked for nothing */
	if (ok && named)
		kept = keep_text(cfg, val, strlen(val), GT_CFG_METRICS_MAX);
	if (kept)
		cfg->metrics = kept;
	else if (ok && named) /* names, too many: say so, not that they are no names */
		bad(cfg, var, val,
		    "at most " METRICS_MAX_STR(GT_CFG_METRICS_MAX) " characters of metric group or "
		    "metric names");
	else
		bad(cfg, var, val,
		    "a comma list of metric group or metric names (`gputrace metrics` lists them)");
}

static void set_metrics_mode(struct gt_config *cfg, const char *var, const char *val)
{
	if (!strcasecmp(val, "time"))
		cfg->metrics_mode = GT_METRICS_TIME;
	else if (!strcasecmp(val, "kernel"))
		cfg->metrics_mode = GT_METRICS_KERNEL;
	else if (!strcasecmp(val, "nvtx"))
		cfg->metrics_mode = GT_METRICS_NVTX;
	else if (!strcasecmp(val, "off") || !strcmp(val, "0"))
		cfg->metrics_mode = GT_METRICS_OFF;
	else {
		bad(cfg, var, val, "time (sampled over time), kernel (per kernel), nvtx (per NVTX range, CUDA) or off");
		return;
	}
	cfg->metrics_mode_set = true;
}

/* accepted: a literal (config__check hands it back to its caller) */
static bool set_hz(struct gt_config *cfg, const char *var, const char *val, unsigned *dst,
		   unsigned long long max, const char *accepted)
{
	unsigned long long v;

	if (parse_uint(val, 1, max, &v)) {
		bad(cfg, var, val, accepted);
		return false;
	}
	*dst = (unsigned)v;
	return true;
}

#define HZ_STR(max)      #max
#define HZ_ACCEPTED(max) "samples per second, an integer from 1 to " HZ_STR(max)

static void set_metrics_hz(struct gt_config *cfg, const char *var, const char *val)
{
	cfg->metrics_hz_set = set_hz(cfg, var, val, &cfg->metrics_hz, GT_METRICS_HZ_MAX,
				     HZ_ACCEPTED(GT_METRICS_HZ_MAX));
}

static void set_telemetry(struct gt_config *cfg, const char *var, const char *val)
{
	unsigned errors = cfg->errors;

	set_bool(cfg, var, val, &cfg->telemetry);
	cfg->telemetry_set = cfg->errors == errors;
}

static void set_telemetry_hz(struct gt_config *cfg, const char *var, const char *val)
{
	cfg->telemetry_hz_set = set_hz(cfg, var, val, &cfg->telemetry_hz, GT_TELEMETRY_HZ_MAX,
				       HZ_ACCEPTED(GT_TELEMETRY_HZ_MAX));
}

static void set_start(struct gt_config *cfg, const char *var, const char *val)
{
	if (!strcasecmp(val, "paused"))
		cfg->start_paused = true;
	else if (!strcasecmp(val, "running"))
		cfg->start_paused = false;
	else
		bad(cfg, var, val, "paused or running");
}

/* Seconds, a decimal number (0.5, .5, 30, 1e3) up to 30 days, to ns; a time
 * that is not 0 is 1 ns at least (1e-12 read as 0 meant "to the end"). */
static int parse_seconds(const char *s, uint64_t *ns)
{
	char *end;
	double v;

	/* strtod would also skip leading white space and read hex, inf and nan:
	 * a digit or a point first, then only what a decimal number has */
	if (!((*s >= '0' && *s <= '9') || (*s == '.' && s[1] >= '0' && s[1] <= '9')) ||
	    s[strspn(s, "0123456789.eE+-")])
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= 0) || v > 30.0 * 86400 || (v > 0 && v < 1e-9))
		return -ERANGE;
	*ns = (uint64_t)(v * 1e9 + 0.5);
	return 0;
}

static void set_delay(struct gt_config *cfg, const char *var, const char *val)
{
	if (parse_seconds(val, &cfg->delay_ns))
		bad(cfg, var, val, "seconds from process start, 0 or a number from 1e-9 to 2592000");
}

static void set_duration(struct gt_config *cfg, const char *var, const char *val)
{
	if (parse_seconds(val, &cfg->duration_ns))
		bad(cfg, var, val, "seconds a window lasts, 0 (to the end) or a number from 1e-9 to 2592000");
}

/* A signal by name or number: RTMIN+N, RTMAX-N, USR1, USR2 (SIG prefix
 * optional), 1-64; "off": none. Only signals whose default action a
 * handler may take over, and none the C library or the tracer use. */
static void set_capture_signal(struct gt_config *cfg, const char *var, const char *val)
{
	const char *v = strncasecmp(val, "SIG", 3) ? val : val + 3;
	unsigned long long n;
	int sig = -1;

	if (!strcasecmp(val, "off") || !parse_uint(val, 0, 0, &n))
		sig = 0; /* 0 however written */
	else if (!strcasecmp(v, "USR1"))
		sig = SIGUSR1;
	else if (!strcasecmp(v, "USR2"))
		sig = SIGUSR2;
	else if (!strncasecmp(v, "RTMIN", 5) && (!v[5] || (v[5] == '+' && !parse_uint(v + 6, 0, 64, &n))))
		sig = SIGRTMIN + (v[5] ? (int)n : 0);
	else if (!strncasecmp(v, "RTMAX", 5) && (!v[5] || (v[5] == '-' && !parse_uint(v + 6, 0, 64, &n))))
		sig = SIGRTMAX - (v[5] ? (int)n : 0);
	else if (!parse_uint(v, 1, 64, &n))
		sig = (int)n;
	if (sig > 0 && sig != SIGUSR1 && sig != SIGUSR2 && (sig < SIGRTMIN || sig > SIGRTMAX))
		sig = -1;
	if (sig < 0)
		bad(cfg, var, val, "RTMIN+N, RTMAX-N, USR1, USR2, a real-time signal number, or off");
	else
		cfg->capture_signal = sig;
}

int config__capture_signal(const struct gt_config *cfg)
{
	return cfg->capture_signal == GT_CAPTURE_SIGNAL_RTMIN_DEFAULT
		       ? SIGRTMIN + GT_CAPTURE_SIGNAL_DEFAULT
		       : cfg->capture_signal;
}

static void set_capture_range(struct gt_config *cfg, const char *var, const char *val)
{
	const char *at = strrchr(val, '@');
	bool nvtx = !strncmp(val, "nvtx:", 5);
	size_t name_len = !nvtx ? 0 : at ? (size_t)(at - val - 5) : strlen(val + 5);

	if (!strcmp(val, "cudaProfilerApi")) {
		cfg->capture_nvtx = cfg->capture_nvtx_domain = unset;
		cfg->capture_range = GT_RANGE_PROFILER;
		return;
	}
	/* both parts checked before either is kept: a bad value leaves the pool as it was */
	if (nvtx && val[5] && val[5] != '@' &&
	    (!at || (at[1] && strlen(at + 1) <= GT_CFG_NAME_MAX)) && name_len <= GT_CFG_NAME_MAX) {
		const char *name = keep_text(cfg, val + 5, name_len, GT_CFG_NAME_MAX),
			   *domain = at ? keep_text(cfg, at + 1, strlen(at + 1), GT_CFG_NAME_MAX)
					: unset;

		if (name && domain) {
			cfg->capture_nvtx = name;
			cfg->capture_nvtx_domain = domain;
			cfg->capture_range = GT_RANGE_NVTX;
			return;
		}
	}
	bad(cfg, var, val, "cudaProfilerApi (also ITT __itt_pause/__itt_resume) or nvtx:NAME[@DOMAIN]");
}

static void set_capture_count(struct gt_config *cfg, const char *var, const char *val)
{
	unsigned long long v;

	if (parse_uint(val, 0, 1000000, &v))
		bad(cfg, var, val, "how many ranges to record, 1 to 1000000, or 0 for every one");
	else {
		cfg->capture_count = (unsigned)v;
		cfg->capture_count_set = true;
	}
}

/* "30", "30s", "0.5s", "500ms": the last 30 seconds (at most
 * GT_FLIGHT_MB_DEFAULT MiB of them); "64MB" (or "64M", "64MiB"): the last
 * 64 MiB of formatted events. Units in any case, as people write them
 * ("64m", "30S"). Read by hand: the program's locale may have another
 * decimal point by the time a child reads it. */
static void set_flight_recorder(struct gt_config *cfg, const char *var, const char *val)
{
	unsigned long long whole = 0, frac = 0, scale = 1;
	const char *p = val;
	bool mb, ms, digits = false;

	for (; *p >= '0' && *p <= '9' && whole < 1000000000ull; p++, digits = true)
		whole = whole * 10 + (unsigned long long)(*p - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9' && scale < 1000000000ull; p++, digits = true) {
			frac = frac * 10 + (unsigned long long)(*p - '0');
			scale *= 10;
		}
	mb = !strcasecmp(p, "MB") || !strcasecmp(p, "M") || !strcasecmp(p, "MiB");
	ms = !strcasecmp(p, "ms");
	if (ms) {
		whole *= 1000000ull; /* as ns, below */
		frac = frac * 1000000ull / scale;
	} else {
		whole *= 1000000000ull;
		frac = frac * 1000000000ull / scale;
	}
	/* megabytes are whole: 64.0MB is 64MB, 1.5MB is refused */
	if (!digits || (*p && strcasecmp(p, "s") && !ms && !mb) ||
	    (mb ? frac || whole / 1000000000ull < 1 ||
		      whole / 1000000000ull > GT_FLIGHT_MB_MAX
		: whole + frac < 10000000ull || whole + frac > GT_FLIGHT_SEC_MAX * 1000000000ull)) {
		bad(cfg, var, val, "seconds (30, 30s, 0.5s or 500ms; 10ms to 86400s) "
			       "or megabytes (64MB; 1 to 65536)");
		return;
	}
	cfg->flight_ns = mb ? 0 : whole + frac;
	cfg->flight_bytes = (size_t)(mb ? whole / 1000000000ull : GT_FLIGHT_MB_DEFAULT) << 20;
}

/* Variables read by other parts (plug-ins, the CLI) that are valid but not ours to parse. */
GT_STARTUP_CODE static void set_ignore(struct gt_config *cfg, const char *var, const char *val)
{
}

#define GT_VARS(X)                                                                 \
	X("GPUTRACE_OUTPUT", set_output)                                           \
	X("GPUTRACE_BUFFER_KB", set_buffer_kb)                                     \
	X("GPUTRACE_OVERFLOW_MB", set_overflow_mb)                                 \
	X("GPUTRACE_BACKENDS", set_backends)                                       \
	X("GPUTRACE_DISABLE_CUPTI", set_disable_cupti)                             \
	X("GPUTRACE_PLUGIN_PATH", set_plugin_path)                                 \
	X("GPUTRACE_STACKS", set_stacks)                                           \
	X("GPUTRACE_STACKS_ALL", set_stacks_all)                                   \
	X("GPUTRACE_SUMMARY", set_summary)                                         \
	X("GPUTRACE_SUMMARY_JSON", set_summary_json)                               \
	X("GPUTRACE_LOG", set_log)                                                 \
	X("GPUTRACE_ACTIVITIES", set_activities)                                   \
	X("GPUTRACE_GRAPH_TRACE", set_graph_trace)                                 \
	X("GPUTRACE_FLUSH_MS", set_flush_ms)                                       \
	X("GPUTRACE_KINETO_CYCLE_MS", set_kineto_cycle_ms)                         \
	X("GPUTRACE_RUN_STATE", set_run_state)                                     \
	X("GPUTRACE_METRICS", set_metrics)                                         \
	X("GPUTRACE_METRICS_MODE", set_metrics_mode)                               \
	X("GPUTRACE_METRICS_HZ", set_metrics_hz)                                   \
	X("GPUTRACE_TELEMETRY", set_telemetry)                                     \
	X("GPUTRACE_TELEMETRY_HZ", set_telemetry_hz)                               \
	X("GPUTRACE_START", set_start)                                             \
	X("GPUTRACE_DELAY", set_delay)                                             \
	X("GPUTRACE_DURATION", set_duration)                                       \
	X("GPUTRACE_CAPTURE_SIGNAL", set_capture_signal)                           \
	X("GPUTRACE_CAPTURE_RANGE", set_capture_range)                             \
	X("GPUTRACE_CAPTURE_COUNT", set_capture_count)                             \
	X("GPUTRACE_RUN_DIR", set_ignore)                                          \
	X("GPUTRACE_FLIGHT_RECORDER", set_flight_recorder)                         \
	X("GPUTRACE_WATCHDOG", set_watchdog)                                       \
	X("GPUTRACE_LOSSLESS", set_lossless)                                       \
	X("GPUTRACE_PLUGIN_CONFIG", set_ignore)                                    \
	X("GPUTRACE_LIB", set_ignore)                                              \
	X("GPUTRACE_TOOL", set_ignore)                                             \
	X("GPUTRACE_INJECTED", set_ignore)

/* The names one after the other ("GPUTRACE_OUTPUT\0GPUTRACE_BUFFER_KB\0..."),
 * with the start-up code: every process looks its GPUTRACE_* up in them. */
#define GT_VAR_NAME(name, fn) name "\0"
static const char var_names[] GT_STARTUP_CONST = GT_VARS(GT_VAR_NAME);
#undef GT_VAR_NAME
#define GT_VAR_SETTER(name, fn) fn,
static const setter_fn var_setters[] = { GT_VARS(GT_VAR_SETTER) };
#undef GT_VAR_SETTER
#define VAR_COUNT (sizeof(var_setters) / sizeof(var_setters[0]))
static const char our_prefix[] GT_STARTUP_CONST = "GPUTRACE_";

/* The variable named by the n bytes at name: its index (VAR_COUNT if none)
 * and its name, NUL-terminated. */
GT_STARTUP_CODE static size_t var_find(const char *name, size_t n, const char **found)
{
	size_t i;

	*found = gt_cstr_list_find(var_names, name, n, &i);
	return i;
}

/* An environment entry's name: up to its '=' (NULL when it has none). */
GT_STARTUP_CODE static const char *env_entry_eq(const char *kv)
{
	while (*kv && *kv != '=')
		kv++;
	return *kv ? kv : NULL;
}

/* Stacks of every call with stacks turned off by name: off holds, as for
 * telemetry, but not without a word (it recorded none and said nothing). */
GT_STARTUP_SELDOM static __attribute__((noinline)) void stacks_all_off(struct gt_config *cfg)
{
	gt_log(GT_LOG_WARN, "GPUTRACE_STACKS_ALL (--stacks-all) records no stacks: "
	       "GPUTRACE_STACKS (--stacks) is off; set it on or to a depth");
	cfg->stacks_all = false;
}

/* Asking for a part of a feature asks for the feature: metric names or a
 * rate without a mode mean the time mode; a telemetry rate means telemetry
 * (unless it was turned off by name); stacks of every call are stacks, of
 * the default depth unless one is set (stacks turned off by name stay off,
 * said in one line). A bad value asks for nothing, and
 * turns nothing off: the feature's own variable refused is as if not set
 * (it was looked up in the environment, where a refused value stopped the
 * part's implication under plain LD_PRELOAD but not under gputrace run,
 * which leaves it out of the processes' environment). */
static void config__imply(struct gt_config *cfg)
{
	if (!cfg->metrics_mode && (cfg->metrics[0] || cfg->metrics_hz_set) &&
	    !cfg->metrics_mode_set)
		cfg->metrics_mode = GT_METRICS_TIME;
	if (!cfg->telemetry && cfg->telemetry_hz_set && !cfg->telemetry_set)
		cfg->telemetry = true;
	if (cfg->stacks_all && !cfg->stacks && !cfg->stacks_set)
		cfg->stacks = GT_STACKS_DEFAULT_DEPTH;
	if (cfg->stacks_all && !cfg->stacks)
		stacks_all_off(cfg);
#ifdef GT_NO_METRICS
	/* METRICS=0: what would start them is compiled out; say so rather than trace without. */
	if (cfg->metrics_mode || cfg->telemetry) {
		gt_log(GT_LOG_WARN, "this library was built without metrics support (make METRICS=0): "
		       "%s%s%s not recorded", cfg->metrics_mode ? "metrics" : "",
		       cfg->metrics_mode && cfg->telemetry ? " and " : "",
		       cfg->telemetry ? "telemetry" : "");
		cfg->metrics_mode = GT_METRICS_OFF;
		cfg->telemetry = false;
	}
#endif
}

static void unknown_var(struct gt_config *cfg, const char *kv, const char *eq)
{
	char name[101], shown[4 * 100 + 1];
	size_t n = (size_t)(eq - kv > 100 ? 100 : eq - kv);

	cfg->errors++;
	/* escaped as a bad value is: an environment's name may hold any byte but
	 * '=' (a newline in it split the line, until 2026-12-07) */
	memcpy(name, kv, n);
	name[n] = 0;
	gt_text_line(shown, name, n);
	gt_log(GT_LOG_ERROR,
	       "unknown variable %s: known are GPUTRACE_OUTPUT, _BUFFER_KB, _OVERFLOW_MB, "
	       "_BACKENDS, _DISABLE_CUPTI, _PLUGIN_PATH, _PLUGIN_CONFIG, _STACKS, "
	       "_STACKS_ALL, _SUMMARY, _SUMMARY_JSON, _LOG, _ACTIVITIES, _GRAPH_TRACE, "
	       "_FLUSH_MS, _KINETO_CYCLE_MS, _METRICS, _METRICS_MODE, _METRICS_HZ, "
	       "_TELEMETRY, _TELEMETRY_HZ, _START, _DELAY, _DURATION, _CAPTURE_SIGNAL, "
	       "_CAPTURE_RANGE, _CAPTURE_COUNT, _RUN_DIR, _FLIGHT_RECORDER, _WATCHDOG, "
	       "_LOSSLESS, _LIB, _TOOL, _INJECTED (and _RUN_STATE, set by gputrace run)",
	       shown);
}

GT_STARTUP_CODE void config__parse(struct gt_config *cfg, char *const *envp)
{
	config_defaults(cfg);
	if (!envp)
		return;
	/* GPUTRACE_LOG and _RUN_STATE first: they govern the messages about
	 * the others. Plain loops (cstr.h): every process parses this. */
	for (int pass = 0; pass < 2; pass++)
		for (char *const *e = envp; *e; e++) {
			const char *kv = *e, *eq, *name;
			size_t i;

			/* most of an environment is not ours: one byte tells */
			if (kv[0] != 'G' || !gt_cstr_starts(kv, our_prefix) || !(eq = env_entry_eq(kv)))
				continue;
			i = var_find(kv, (size_t)(eq - kv), &name);
			if (i == VAR_COUNT) {
				if (pass == 1)
					unknown_var(cfg, kv, eq);
				continue;
			}
			bool governs = var_setters[i] == set_log || var_setters[i] == set_run_state;

			if (governs == (pass == 0))
				var_setters[i](cfg, name, eq + 1);
		}
	/* The CUPTI backend is off when disabled outright (its fallback path
	 * lives in the same backend, which reads disable_cupti). */
	config__imply(cfg);
}

int config__check(const char *var, const char *val, const char **accepted)
{
	static struct gt_config tmp; /* 16 KiB of path pool: not on the stack */
	const char *name;
	size_t i = var_find(var, strlen(var), &name);

	if (i == VAR_COUNT)
		return -ENOENT;
	config_defaults(&tmp);
	checking = true;
	checked_accepted = NULL;
	var_setters[i](&tmp, var, val);
	checking = false;
	if (accepted)
		*accepted = checked_accepted;
	return tmp.errors ? -EINVAL : 0;
}

/* names in arrays, not pointers: a table of pointers is relocated at every
 * start and sits in the one page of such data (README "Overhead") */
static const struct {
	char rank[24], size[24], source[8];
} rank_vars[] = {
	{ "RANK", "WORLD_SIZE", "env" },
	{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "mpi" },
	{ "PMI_RANK", "PMI_SIZE", "pmi" },
	{ "SLURM_PROCID", "SLURM_NTASKS", "slurm" },
};

/* Rank of this process under MPI/torchrun/Slurm, or NULL. */
static const char *rank_of_env(void)
{
	for (size_t i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]); i++) {
		const char *v = getenv(rank_vars[i].rank);
		if (v && *v)
			return v;
	}
	return NULL;
}

static long env_int(const char *v)
{
	char *end;
	long n;

	if (!v || !*v)
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	return errno || *end || n < 0 ? -1 : n;
}

struct gt_rank config__rank(void)
{
	struct gt_rank r = { -1, -1, NULL, NULL, NULL };

	for (size_t i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]); i++) {
		const char *v = getenv(rank_vars[i].rank);

		if (!v || !*v)
			continue;
		r.var = rank_vars[i].rank;
		r.text = v;
		r.rank = env_int(v);
		if (r.rank >= 0) {
			r.source = rank_vars[i].source;
			r.world_size = env_int(getenv(rank_vars[i].size));
		}
		break;
	}
	return r;
}

static int append(char *out, size_t outlen, size_t *pos, const char *s, size_t n)
{
	if (*pos + n >= outlen)
		return -ENAMETOOLONG;
	memcpy(out + *pos, s, n);
	*pos += n;
	out[*pos] = 0;
	return 0;
}

int config__expand_output(const char *tmpl, char *out, size_t outlen, int pid, const char *exe,
			  uint64_t start_realtime_ns)
{
	size_t pos = 0;
	char num[64];
	int err;

	if (!outlen)
		return -ENAMETOOLONG;
	out[0] = 0;
	for (const char *p = tmpl; *p; p++) {
		const char *s = num;
		size_t n;

		if (*p != '%') {
			err = append(out, outlen, &pos, p, 1);
		} else {
			switch (*++p) {
			case 'p':
				n = snprintf(num, sizeof(num), "%d", pid);
				break;
			case 'e':
				s = exe && *exe ? exe : "unknown";
				n = strlen(s);
				break;
			case 'h':
				if (gethostname(num, sizeof(num) - 1))
					strcpy(num, "localhost");
				num[sizeof(num) - 1] = 0;
				n = strlen(num);
				break;
			case 'r':
				s = rank_of_env();
				if (!s)
					s = "0";
				n = strlen(s);
				break;
			case 't': {
				time_t t = (time_t)(start_realtime_ns / 1000000000ull);
				struct tm tm;

				gmtime_r(&t, &tm);
				n = strftime(num, sizeof(num), "%Y%m%dT%H%M%SZ", &tm);
				break;
			}
			case '%':
				s = "%";
				n = 1;
				break;
			default:
				return -EINVAL;
			}
			/* a path component from %e/%r must not smuggle in a '/' */
			err = 0;
			for (size_t i = 0; i < n && !err; i++) {
				char c = s[i] == '/' && p[0] != '%' ? '_' : s[i];
				err = append(out, outlen, &pos, &c, 1);
			}
		}
		if (err)
			return err;
	}
	return pos ? 0 : -EINVAL;
}
