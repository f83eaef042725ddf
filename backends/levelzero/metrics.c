// SPDX-License-Identifier: MIT
/*
 * Hardware metrics of Level Zero devices (zet), when GPUTRACE_METRICS_MODE asks:
 *
 * - time: a metric streamer per device and metric group, on a context of
 *   our own, sampling every 1/GPUTRACE_METRICS_HZ s. The drain thread reads
 *   the reports each cycle and turns each into one counter sample per group
 *   ("ComputeBasic", args "GpuBusy %", ...) at the report's own time: its
 *   timestamp metric, converted to host time as kernel timestamps are.
 * - kernel: a metric query around every kernel the program appends (begin
 *   after the kernel's waits, end right after it), from query pools of ours
 *   on the program's context, activated there. Results become the kernel
 *   span's args.metrics when its timestamps are read (track.c). An
 *   asynchronous immediate list runs each command as it is appended, so its
 *   query would open before the kernel is even appended: there a gate (an
 *   event of ours the host signals once the kernel is in) holds the begin
 *   back, and the window is the kernel's own. A synchronous immediate list
 *   cannot be held: its windows include the host's time between the two.
 *
 * Nothing here runs, and no zet function is called, unless metrics were
 * asked for. The driver needs ZET_ENABLE_METRICS=1 before zeInit: set at
 * constructor time (ze_metrics__setenv).
 *
 * zm_lock guards everything here; it is taken after ze_lock, never before.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "backends/levelzero/clockfit.h"
#include "backends/levelzero/internal.h"
#include "backends/levelzero/units.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/registry.h"
#include "inject/tables.h"

#define ZM_DEVS_MAX      16
#define ZM_GROUPS_MAX    4
#define ZM_POOL_QUERIES  256 /* queries per pool; a context grows pools as kernels need */
#define ZM_POOLS_MAX     64
#define ZM_WORD_MAX      128
/* A read that cannot wait for a later collect (the kernel's event is reset or reused, its
 * list runs again) waits this long for its metrics: they come a moment after its end. */
#define ZM_AWAIT_NS      (GT_DRAIN_POLL_MS * 1000000ull)
#define ZM_AWAIT_POLL_NS 20000

bool ze_metrics_kernel_mode;

struct zm_group {
	zet_metric_group_handle_t handle;
	char name[ZET_MAX_METRIC_GROUP_NAME];
	uint32_t domain, count;
	bool all;              /* every metric shown, else only those named */
	int ts;                /* index of the timestamp metric, -1: none */
	zet_metric_handle_t *metrics;
	uint32_t *keys;        /* per metric: "Name unit" string id when shown, else 0 */
	uint32_t *chunk_names; /* counter names: "Group", "Group (2)", ... (GT_ARGS_MAX each) */
	unsigned nchunks;
	zet_metric_streamer_handle_t streamer;
	uint64_t period_ns;
	uint8_t *raw;
	size_t raw_cap;
	zet_typed_value_t *vals;
	size_t vals_cap;
};

struct zm_dev {
	ze_driver_handle_t driver;
	ze_device_handle_t handle;
	struct ze_dev *dev;
	const char *label; /* "GPU 0: name", for messages */
	struct zm_group g[ZM_GROUPS_MAX];
	unsigned ng;
	ze_context_handle_t own_ctx; /* time mode */
	struct ze_clock_fit fit;     /* time mode: its reports' ticks to host time */
};

/* Per context and device of the program (kernel mode): our query pools on it. */
struct zm_ctx {
	ze_context_handle_t ctx;
	struct zm_dev *md;
	bool failed;
	unsigned npools;
	zet_metric_query_pool_handle_t pools[ZM_POOLS_MAX][ZM_GROUPS_MAX];
	ze_event_pool_handle_t gates[ZM_POOLS_MAX]; /* one event per slot */
	struct ze_mq *mqs[ZM_POOLS_MAX]; /* ZM_POOL_QUERIES each */
	struct ze_mq *free;
	struct zm_ctx *next;
};

/* The queries around one kernel command: one per group, the same slot of each pool. */
struct ze_mq {
	struct zm_ctx *mc; /* NULL once its context is gone */
	zet_metric_query_handle_t q[ZM_GROUPS_MAX];
	ze_event_handle_t gate; /* holds the begin of an immediate list's query back */
	bool gated;             /* the gate was used: reset it before the next use */
	struct ze_mq *next;
};

static pthread_mutex_t zm_lock = PTHREAD_MUTEX_INITIALIZER;
GT_TABLE(struct zm_dev, zm_devs, ZM_DEVS_MAX);
static unsigned zm_ndevs;
static struct zm_ctx *zm_ctxs;
/* started: set by the program's zeInit, read by the drain thread unlocked */
static atomic_bool zm_started GT_STARTUP_STATE; /* read at every exit */
static bool zm_stopped;
static uint32_t zm_lost_unread;

/* ---- set-up ---- */

static bool zm_wanted(void)
{
	/* nvtx is CUDA's (NVTX ranges, CUPTI's range profiler) */
	return (gt_cfg.metrics_mode == GT_METRICS_TIME || gt_cfg.metrics_mode == GT_METRICS_KERNEL) &&
	       gt_backend_enabled(GT_BACKEND_ZE);
}

/* The driver reads these at its first zeInit; set only when asked for (telemetry.c
 * needs Sysman's). Asked for by name: a value the environment had (0) is not what the
 * user wants now. */
GT_STARTUP_CODE void ze_metrics__setenv(void)
{
	if (gt_cfg.telemetry && gt_backend_enabled(GT_BACKEND_ZE))
		setenv("ZES_ENABLE_SYSMAN", "1", 1);
	if (!zm_wanted())
		return;
	setenv("ZET_ENABLE_METRICS", "1", 1);
	ze_metrics_kernel_mode = gt_cfg.metrics_mode == GT_METRICS_KERNEL;
}

static zet_metric_group_sampling_type_flags_t zm_sampling(void)
{
	return gt_cfg.metrics_mode == GT_METRICS_KERNEL
		       ? ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_EVENT_BASED
		       : ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED;
}

static const char *zm_mode_name(void)
{
	return gt_cfg.metrics_mode == GT_METRICS_KERNEL ? "kernel" : "time";
}

/* Why a zet call failed, in words a user can act on. */
static const char *zm_why(ze_result_t r)
{
	switch (r) {
	case ZE_RESULT_ERROR_UNINITIALIZED:
		return "the driver has metrics off (ZET_ENABLE_METRICS=1 must be in the "
		       "environment before the first zeInit; gputrace sets it at start-up, so "
		       "zeInit ran earlier, e.g. in another library's constructor)";
	case ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS:
		return "no permission to read performance counters (on Linux: run as root, or "
		       "sysctl dev.i915.perf_stream_paranoid=0 / dev.xe.observation_paranoid=0)";
	case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
		return "the driver does not offer metrics";
	case ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE:
		return "another tool is sampling this device";
	default:
		return NULL;
	}
}

static void zm_fail(const struct zm_dev *md, const char *what, ze_result_t r)
{
	const char *why = zm_why(r);

	if (why)
		pr_warn("ze: metrics of %s: %s: %s", md->label, what, why);
	else
		pr_warn("ze: metrics of %s: %s failed (ze_result_t 0x%x)", md->label, what,
			(unsigned)r);
}

/* Metric i's properties, or -1. */
static int zm_metric_props(struct zm_group *g, uint32_t i, zet_metric_properties_t *p)
{
	memset(p, 0, sizeof(*p));
	p->stype = ZET_STRUCTURE_TYPE_METRIC_PROPERTIES;
	return ZE_REAL(zetMetricGetProperties)(g->metrics[i], p) == ZE_RESULT_SUCCESS ? 0 : -1;
}

/* Load a group's metrics; show all of them (all) or none yet. 0 or -errno. */
static int zm_group_load(struct zm_group *g, zet_metric_group_handle_t h,
			 const zet_metric_group_properties_t *props, bool all)
{
	uint32_t n = props->metricCount;

	memset(g, 0, sizeof(*g));
	g->handle = h;
	snprintf(g->name, sizeof(g->name), "%s", props->name);
	g->domain = props->domain;
	g->all = all;
	g->ts = -1;
	g->metrics = calloc(n ? n : 1, sizeof(*g->metrics));
	g->keys = calloc(n ? n : 1, sizeof(*g->keys));
	if (!g->metrics || !g->keys)
		return -ENOMEM;
	if (ZE_REAL(zetMetricGet)(h, &n, g->metrics) != ZE_RESULT_SUCCESS)
		return -EIO;
	g->count = n;
	for (uint32_t i = 0; i < n; i++) {
		zet_metric_properties_t p;
		char key[ZET_MAX_METRIC_NAME + 32];

		if (zm_metric_props(g, i, &p))
			continue;
		if (p.metricType == ZET_METRIC_TYPE_TIMESTAMP && g->ts < 0)
			g->ts = (int)i;
		/* the time itself, flags and raw words are not series to draw */
		if (!all || p.metricType == ZET_METRIC_TYPE_TIMESTAMP ||
		    p.metricType == ZET_METRIC_TYPE_FLAG || p.metricType == ZET_METRIC_TYPE_RAW)
			continue;
		ze_metric_key(key, sizeof(key), p.name, p.resultUnits);
		g->keys[i] = gt_str_intern(key);
	}
	return 0;
}

/* Show metric `name` of the group; false if it has none of that name. */
static bool zm_group_show(struct zm_group *g, const char *name)
{
	for (uint32_t i = 0; i < g->count; i++) {
		zet_metric_properties_t p;
		char key[ZET_MAX_METRIC_NAME + 32];

		if (zm_metric_props(g, i, &p) || strcmp(p.name, name))
			continue;
		ze_metric_key(key, sizeof(key), p.name, p.resultUnits);
		g->keys[i] = gt_str_intern(key);
		return true;
	}
	return false;
}

/* Counter track names: a group's series, GT_ARGS_MAX to a track. */
static void zm_group_chunks(struct zm_group *g)
{
	unsigned shown = 0;
	char name[ZET_MAX_METRIC_GROUP_NAME + 16];

	for (uint32_t i = 0; i < g->count; i++)
		shown += g->keys[i] != 0;
	g->nchunks = (shown + GT_ARGS_MAX - 1) / GT_ARGS_MAX;
	g->chunk_names = calloc(g->nchunks ? g->nchunks : 1, sizeof(*g->chunk_names));
	if (!g->chunk_names) {
		g->nchunks = 0;
		return;
	}
	for (unsigned c = 0; c < g->nchunks; c++) {
		if (c)
			snprintf(name, sizeof(name), "%s (%u)", g->name, c + 1);
		else
			snprintf(name, sizeof(name), "%s", g->name);
		g->chunk_names[c] = gt_str_intern(name);
	}
}

struct zm_catalog {
	uint32_t n;
	zet_metric_group_handle_t *h;
	zet_metric_group_properties_t *p;
};

static struct zm_group *zm_find_selected(struct zm_dev *md, zet_metric_group_handle_t h)
{
	for (unsigned i = 0; i < md->ng; i++)
		if (md->g[i].handle == h)
			return &md->g[i];
	return NULL;
}

/* Add catalog group k, whole or (metric != NULL) for one metric. */
static void zm_select(struct zm_dev *md, const struct zm_catalog *cat, uint32_t k,
		      const char *metric)
{
	struct zm_group *g = zm_find_selected(md, cat->h[k]);
	const zet_metric_group_properties_t *p = &cat->p[k];

	if (!(p->samplingType & zm_sampling())) {
		pr_warn("ze: metric group %s of %s cannot be measured in %s%s "
			"(it is %s only); left out",
			p->name, md->label,
			gt_setting("--metrics-mode ", "GPUTRACE_METRICS_MODE="), zm_mode_name(),
			p->samplingType & ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED
				? "time-based" : "per-query");
		return;
	}
	if (!g) {
		for (unsigned i = 0; i < md->ng; i++) {
			if (md->g[i].domain == p->domain) {
				pr_warn("ze: metric groups %s and %s of %s share a hardware domain and "
					"cannot be measured together: keeping %s",
					md->g[i].name, p->name, md->label, md->g[i].name);
				return;
			}
		}
		if (md->ng == ZM_GROUPS_MAX) {
			pr_warn("ze: at most %d metric groups at once: %s left out", ZM_GROUPS_MAX,
				p->name);
			return;
		}
		g = &md->g[md->ng];
		if (zm_group_load(g, cat->h[k], p, !metric)) {
			pr_warn("ze: metric group %s of %s cannot be read; left out", p->name,
				md->label);
			return;
		}
		md->ng++;
	} else if (!metric && !g->all) {
		zm_group_load(g, cat->h[k], p, true);
		return;
	}
	if (metric)
		zm_group_show(g, metric);
}

/* A word of GPUTRACE_METRICS: a group, "Group.Metric", or a metric of some group. */
static void zm_select_word(struct zm_dev *md, const struct zm_catalog *cat, const char *word)
{
	char group[ZM_WORD_MAX];
	const char *dot = strpbrk(word, ".:");

	for (uint32_t k = 0; k < cat->n; k++) {
		if (!strcmp(cat->p[k].name, word)) {
			zm_select(md, cat, k, NULL);
			return;
		}
	}
	if (dot && (size_t)(dot - word) < sizeof(group)) {
		snprintf(group, sizeof(group), "%.*s", (int)(dot - word), word);
		for (uint32_t k = 0; k < cat->n; k++) {
			if (strcmp(cat->p[k].name, group))
				continue;
			struct zm_group probe;

			if (!zm_group_load(&probe, cat->h[k], &cat->p[k], false) &&
			    zm_group_show(&probe, dot + 1)) {
				free(probe.metrics);
				free(probe.keys);
				zm_select(md, cat, k, dot + 1);
				return;
			}
			free(probe.metrics);
			free(probe.keys);
		}
	}
	/* a metric's name: the first group that has it and suits the mode */
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t k = 0; k < cat->n; k++) {
			struct zm_group probe;
			bool has;

			if (!pass && !(cat->p[k].samplingType & zm_sampling()))
				continue;
			has = !zm_group_load(&probe, cat->h[k], &cat->p[k], false) &&
			      zm_group_show(&probe, word);
			free(probe.metrics);
			free(probe.keys);
			if (has) {
				zm_select(md, cat, k, word);
				return;
			}
		}
	}
	{
		char list[512] = "";
		size_t len = 0;

		for (uint32_t k = 0; k < cat->n && len < sizeof(list) - 64; k++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", k ? ", " : "",
						cat->p[k].name);
		pr_warn("ze: %s: no metric group or metric '%s' on %s "
			"(its groups: %s; `gputrace metrics` lists their metrics)",
			gt_setting("--metrics", "GPUTRACE_METRICS"), word, md->label, list);
	}
}

/* The default: the basic compute group, else the first group that suits the mode. */
static void zm_select_default(struct zm_dev *md, const struct zm_catalog *cat)
{
	int pick = -1;

	for (uint32_t k = 0; k < cat->n; k++) {
		if (!(cat->p[k].samplingType & zm_sampling()))
			continue;
		if (!strcmp(cat->p[k].name, "ComputeBasic")) {
			pick = (int)k;
			break;
		}
		if (pick < 0)
			pick = (int)k;
	}
	if (pick < 0)
		pr_warn("ze: %s has no metric group for %s%s", md->label,
			gt_setting("--metrics-mode ", "GPUTRACE_METRICS_MODE="), zm_mode_name());
	else
		zm_select(md, cat, (uint32_t)pick, NULL);
}

static void zm_catalog_free(struct zm_catalog *cat)
{
	free(cat->h);
	free(cat->p);
	memset(cat, 0, sizeof(*cat));
}

static int zm_catalog_load(struct zm_dev *md, struct zm_catalog *cat)
{
	ze_result_t r;

	memset(cat, 0, sizeof(*cat));
	r = ZE_REAL(zetMetricGroupGet)(md->handle, &cat->n, NULL);
	if (r != ZE_RESULT_SUCCESS) {
		zm_fail(md, "listing metric groups", r);
		return -EIO;
	}
	if (!cat->n) {
		pr_warn("ze: %s offers no metric groups", md->label);
		return -ENOENT;
	}
	cat->h = calloc(cat->n, sizeof(*cat->h));
	cat->p = calloc(cat->n, sizeof(*cat->p));
	if (!cat->h || !cat->p ||
	    ZE_REAL(zetMetricGroupGet)(md->handle, &cat->n, cat->h) != ZE_RESULT_SUCCESS) {
		zm_catalog_free(cat);
		return -EIO;
	}
	for (uint32_t k = 0; k < cat->n; k++) {
		cat->p[k].stype = ZET_STRUCTURE_TYPE_METRIC_GROUP_PROPERTIES;
		ZE_REAL(zetMetricGroupGetProperties)(cat->h[k], &cat->p[k]);
		cat->p[k].name[sizeof(cat->p[k].name) - 1] = 0;
	}
	return 0;
}

static void zm_choose(struct zm_dev *md)
{
	struct zm_catalog cat;
	char word[ZM_WORD_MAX];
	const char *s = gt_cfg.metrics;

	if (zm_catalog_load(md, &cat))
		return;
	if (!*s)
		zm_select_default(md, &cat);
	while (*s) {
		size_t n = strcspn(s, ",");

		snprintf(word, sizeof(word), "%.*s", (int)n, s);
		for (char *w = word + strlen(word); w > word && w[-1] == ' '; *--w = 0)
			;
		if (word[strspn(word, " ")])
			zm_select_word(md, &cat, word + strspn(word, " "));
		s += n + (s[n] == ',');
	}
	zm_catalog_free(&cat);
	for (unsigned i = 0; i < md->ng; i++)
		zm_group_chunks(&md->g[i]);
}

/* ---- time mode: streamers ---- */

static bool zm_fit_burst(struct zm_dev *md);

static void zm_streamers_open(struct zm_dev *md)
{
	ze_context_desc_t cdesc = { .stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC };
	zet_metric_group_handle_t hs[ZM_GROUPS_MAX];
	ze_result_t r;

	if (!md->ng)
		return;
	r = ZE_REAL(zeContextCreate)(md->driver, &cdesc, &md->own_ctx);
	if (r != ZE_RESULT_SUCCESS) {
		zm_fail(md, "a context for the streamers", r);
		md->own_ctx = NULL;
		return;
	}
	for (unsigned i = 0; i < md->ng; i++)
		hs[i] = md->g[i].handle;
	r = ZE_REAL(zetContextActivateMetricGroups)(md->own_ctx, md->handle, md->ng, hs);
	if (r != ZE_RESULT_SUCCESS) {
		zm_fail(md, "activating metric groups", r);
		return;
	}
	for (unsigned i = 0; i < md->ng; i++) {
		struct zm_group *g = &md->g[i];
		zet_metric_streamer_desc_t d = {
			.stype = ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC,
			.notifyEveryNReports = 32768,
			.samplingPeriod = (uint32_t)(1000000000u / gt_cfg.metrics_hz),
		};

		r = ZE_REAL(zetMetricStreamerOpen)(md->own_ctx, md->handle, g->handle, &d, NULL,
						  &g->streamer);
		if (r != ZE_RESULT_SUCCESS) {
			zm_fail(md, "opening a metric streamer", r);
			g->streamer = NULL;
			continue;
		}
		g->period_ns = d.samplingPeriod ? d.samplingPeriod : 1000000000u / gt_cfg.metrics_hz;
		pr_info("ze: sampling %s of %s every %llu ns", g->name, md->label,
			(unsigned long long)g->period_ns);
	}
	/* the line's start: its rate is measured from here by the first read */
	zm_fit_burst(md);
}

static int zm_reserve(void **p, size_t *cap, size_t want, size_t elem)
{
	void *n;

	if (want <= *cap)
		return 0;
	n = realloc(*p, want * elem);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = want;
	return 0;
}

static double zm_value(const zet_typed_value_t *v)
{
	switch (v->type) {
	case ZET_VALUE_TYPE_UINT32:
		return v->value.ui32;
	case ZET_VALUE_TYPE_UINT64:
		return (double)v->value.ui64;
	case ZET_VALUE_TYPE_FLOAT32:
		return v->value.fp32;
	case ZET_VALUE_TYPE_FLOAT64:
		return v->value.fp64;
	case ZET_VALUE_TYPE_BOOL8:
		return v->value.b8 ? 1 : 0;
	default:
		return NAN;
	}
}

#define ZM_FIT_BURST       16 /* pairs a read takes for the device's line */
#define ZM_FIT_FIRST_BURST 64 /* and the first: the line's start is its tightest */

/* A burst of (host, ticks) pairs into the device's line (clockfit.c); false
 * if the device gave none. */
static bool zm_fit_burst(struct zm_dev *md)
{
	uint64_t host[ZM_FIT_FIRST_BURST], ticks[ZM_FIT_FIRST_BURST];
	unsigned want = md->fit.pairs ? ZM_FIT_BURST : ZM_FIT_FIRST_BURST, n = 0;

	while (n < want && !ze_dev__sync(md->dev, &host[n], &ticks[n], NULL))
		n++;
	ze_fit__add(&md->fit, host, ticks, n);
	return md->fit.pairs > 0;
}

/* A report's timestamp metric (ns of the kernel timestamp clock) as host time. */
static uint64_t zm_host_ns(struct zm_dev *md, double dev_ns)
{
	const struct ze_dev *d = md->dev;

	return ze_fit__host(&md->fit, (uint64_t)gt_round(dev_ns / d->ns_per_tick) & d->mask);
}

/* One report's values as counter samples at `when`. */
static void zm_emit_report(const struct zm_dev *md, const struct zm_group *g,
			   const zet_typed_value_t *vals, uint64_t when)
{
	struct gt_arg args[GT_ARGS_MAX];
	unsigned n = 0, chunk = 0;

	for (uint32_t i = 0; i <= g->count; i++) {
		if (i < g->count && g->keys[i]) {
			args[n].key = g->keys[i];
			args[n].type = GT_ARG_F64;
			args[n++].v.f = zm_value(&vals[i]);
		}
		if (n && (n == GT_ARGS_MAX || i == g->count)) {
			gt_emit_counter(md->dev->counter,
					g->chunk_names[chunk < g->nchunks ? chunk : 0], when, args, n);
			chunk++;
			n = 0;
		}
	}
}

static void zm_read_streamer(struct zm_dev *md, struct zm_group *g)
{
	size_t size = 0;
	uint32_t count = 0, reports;
	uint64_t now;
	bool timed;
	ze_result_t r;

	r = ZE_REAL(zetMetricStreamerReadData)(g->streamer, UINT32_MAX, &size, NULL);
	if ((r != ZE_RESULT_SUCCESS && r != ZE_RESULT_WARNING_DROPPED_DATA) || !size)
		return;
	if (zm_reserve((void **)&g->raw, &g->raw_cap, size, 1))
		return;
	r = ZE_REAL(zetMetricStreamerReadData)(g->streamer, UINT32_MAX, &size, g->raw);
	if (r == ZE_RESULT_WARNING_DROPPED_DATA)
		gt_lost_add(zm_lost_unread, 1);
	else if (r != ZE_RESULT_SUCCESS || !size)
		return;
	/* every report read lies before this burst */
	now = gt_clock_ns();
	timed = zm_fit_burst(md);
	if (ZE_REAL(zetMetricGroupCalculateMetricValues)(
		    g->handle, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, size, g->raw, &count,
		    NULL) != ZE_RESULT_SUCCESS ||
	    !count || zm_reserve((void **)&g->vals, &g->vals_cap, count, sizeof(*g->vals)) ||
	    ZE_REAL(zetMetricGroupCalculateMetricValues)(
		    g->handle, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, size, g->raw, &count,
		    g->vals) != ZE_RESULT_SUCCESS)
		return;
	reports = g->count ? count / g->count : 0;
	for (uint32_t k = 0; k < reports; k++) {
		const zet_typed_value_t *v = &g->vals[(size_t)k * g->count];
		uint64_t when;

		if (g->ts >= 0 && timed)
			when = zm_host_ns(md, zm_value(&v[g->ts]));
		else /* no timestamp metric: spaced by the period, the last ending now */
			when = now - (uint64_t)(reports - k) * g->period_ns;
		zm_emit_report(md, g, v, when);
	}
}

static void zm_read_all(bool close)
{
	for (unsigned d = 0; d < zm_ndevs; d++) {
		struct zm_dev *md = &zm_devs[d];

		for (unsigned i = 0; i < md->ng; i++) {
			struct zm_group *g = &md->g[i];

			if (!g->streamer)
				continue;
			zm_read_streamer(md, g);
			if (close) {
				ZE_REAL(zetMetricStreamerClose)(g->streamer);
				g->streamer = NULL;
			}
		}
		if (close && md->own_ctx) {
			ZE_REAL(zetContextActivateMetricGroups)(md->own_ctx, md->handle, 0, NULL);
			ZE_REAL(zeContextDestroy)(md->own_ctx);
			md->own_ctx = NULL;
		}
	}
}

/* ---- life cycle ---- */

static void zm_add_devices(void)
{
	uint32_t ndrv = 0;
	ze_driver_handle_t drv[8];

	if (ZE_REAL(zeDriverGet)(&ndrv, NULL) != ZE_RESULT_SUCCESS)
		return;
	if (ndrv > 8)
		ndrv = 8;
	if (ZE_REAL(zeDriverGet)(&ndrv, drv) != ZE_RESULT_SUCCESS)
		return;
	for (uint32_t i = 0; i < ndrv; i++) {
		ze_device_handle_t devs[ZM_DEVS_MAX];
		uint32_t n = ZM_DEVS_MAX;

		if (ZE_REAL(zeDeviceGet)(drv[i], &n, devs) != ZE_RESULT_SUCCESS)
			continue;
		for (uint32_t j = 0; j < n && zm_ndevs < ZM_DEVS_MAX; j++) {
			struct zm_dev *md = &zm_devs[zm_ndevs];
			struct ze_dev *d;

			pthread_mutex_lock(&ze_lock);
			d = ze_dev__get(devs[j]);
			pthread_mutex_unlock(&ze_lock);
			if (!d)
				continue;
			memset(md, 0, sizeof(*md));
			md->driver = drv[i];
			md->handle = devs[j];
			md->dev = d;
			ze_fit__init(&md->fit, d->ns_per_tick, d->mask);
			md->label = gt_str_get(registry__device_name(d->row), NULL);
			zm_ndevs++;
		}
	}
}

void ze_metrics__init(void)
{
	if (!zm_wanted())
		return;
	pthread_mutex_lock(&zm_lock);
	if (atomic_load(&zm_started)) {
		pthread_mutex_unlock(&zm_lock);
		return;
	}
	atomic_store(&zm_started, true);
	zm_lost_unread = gt_str_intern("ze_metrics_unread");
	pthread_mutex_unlock(&zm_lock);
	/* ze_lock is taken inside (devices): never under zm_lock */
	zm_add_devices();
	pthread_mutex_lock(&zm_lock);
	atomic_fetch_add(&gt_ze_metric_devices, zm_ndevs);
	for (unsigned d = 0; d < zm_ndevs; d++) {
		zm_choose(&zm_devs[d]);
		if (gt_cfg.metrics_mode == GT_METRICS_TIME)
			zm_streamers_open(&zm_devs[d]);
	}
	pthread_mutex_unlock(&zm_lock);
}

void ze_metrics__flush(bool final)
{
	bool g;

	if (!atomic_load(&zm_started) || final)
		return;
	g = gt_guard_enter();
	if (gt_cfg.metrics_mode == GT_METRICS_TIME) {
		pthread_mutex_lock(&zm_lock);
		if (!zm_stopped && !atomic_load(&ze_closed))
			zm_read_all(false);
		pthread_mutex_unlock(&zm_lock);
	} else {
		/* kernels whose metrics came in after the program's last sync */
		ze_track__collect_drain(false);
	}
	if (g)
		gt_guard_leave();
}

GT_STARTUP_CODE void ze_metrics__stop(void)
{
	if (!atomic_load(&zm_started))
		return;
	pthread_mutex_lock(&zm_lock);
	if (!zm_stopped && !atomic_load(&ze_closed))
		zm_read_all(true);
	zm_stopped = true;
	pthread_mutex_unlock(&zm_lock);
}

GT_FORK_CODE void ze_metrics__forget(void)
{
	/* the parent's streamers and pools are not the child's (it must zeInit);
	 * without metrics asked for there were none (ze_metrics__init): nothing
	 * to write (a shell's child wrote 6 pages of zeros here) */
	if (!zm_wanted())
		return;
	pthread_mutex_init(&zm_lock, NULL);
	memset(zm_devs, 0, ZM_DEVS_MAX * sizeof(zm_devs[0]));
	zm_ndevs = 0;
	zm_ctxs = NULL;
	atomic_store(&zm_started, false);
	zm_stopped = false;
}

/* ---- kernel mode: queries ---- */

/* A METRICS=0 build has no queries on its commands (ze_work_mq): it never appends them. */
#ifndef GT_NO_METRICS

static struct zm_dev *zm_dev_of(const struct ze_dev *d)
{
	for (unsigned i = 0; i < zm_ndevs; i++)
		if (zm_devs[i].dev == d)
			return &zm_devs[i];
	return NULL;
}

/* One more pool per group, its queries in ze_mq slots. 0 or -errno. */
static int zm_ctx_grow(struct zm_ctx *mc)
{
	zet_metric_query_pool_desc_t desc = {
		.stype = ZET_STRUCTURE_TYPE_METRIC_QUERY_POOL_DESC,
		.type = ZET_METRIC_QUERY_POOL_TYPE_PERFORMANCE,
		.count = ZM_POOL_QUERIES,
	};
	struct zm_dev *md = mc->md;
	unsigned p = mc->npools;
	struct ze_mq *mqs;
	ze_result_t r;

	if (p == ZM_POOLS_MAX)
		return -ENOSPC;
	mqs = calloc(ZM_POOL_QUERIES, sizeof(*mqs));
	if (!mqs)
		return -ENOMEM;
	for (unsigned g = 0; g < md->ng; g++) {
		r = ZE_REAL(zetMetricQueryPoolCreate)(mc->ctx, md->handle, md->g[g].handle, &desc,
						      &mc->pools[p][g]);
		if (r != ZE_RESULT_SUCCESS) {
			zm_fail(md, "a metric query pool", r);
			goto fail;
		}
		for (uint32_t i = 0; i < ZM_POOL_QUERIES; i++) {
			r = ZE_REAL(zetMetricQueryCreate)(mc->pools[p][g], i, &mqs[i].q[g]);
			if (r != ZE_RESULT_SUCCESS) {
				zm_fail(md, "a metric query", r);
				goto fail;
			}
		}
	}
	{
		ze_event_pool_desc_t pd = { .stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
					    .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
					    .count = ZM_POOL_QUERIES };
		ze_event_desc_t ed = { .stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
				       .signal = ZE_EVENT_SCOPE_FLAG_HOST,
				       .wait = ZE_EVENT_SCOPE_FLAG_HOST };

		/* without gates, immediate lists' windows are only wider */
		if (ZE_REAL(zeEventPoolCreate)(mc->ctx, &pd, 0, NULL, &mc->gates[p]) !=
		    ZE_RESULT_SUCCESS)
			mc->gates[p] = NULL;
		for (uint32_t i = 0; mc->gates[p] && i < ZM_POOL_QUERIES; i++) {
			ed.index = i;
			if (ZE_REAL(zeEventCreate)(mc->gates[p], &ed, &mqs[i].gate) !=
			    ZE_RESULT_SUCCESS)
				mqs[i].gate = NULL;
		}
	}
	for (uint32_t i = ZM_POOL_QUERIES; i-- > 0;) {
		mqs[i].mc = mc;
		mqs[i].next = mc->free;
		mc->free = &mqs[i];
	}
	mc->mqs[p] = mqs;
	mc->npools++;
	return 0;
fail:
	for (unsigned g = 0; g < md->ng; g++) {
		for (uint32_t i = 0; i < ZM_POOL_QUERIES; i++)
			if (mqs[i].q[g])
				ZE_REAL(zetMetricQueryDestroy)(mqs[i].q[g]);
		if (mc->pools[p][g])
			ZE_REAL(zetMetricQueryPoolDestroy)(mc->pools[p][g]);
		mc->pools[p][g] = NULL;
	}
	free(mqs);
	return -EIO;
}

static struct zm_ctx *zm_ctx_get(ze_context_handle_t ctx, struct zm_dev *md)
{
	zet_metric_group_handle_t hs[ZM_GROUPS_MAX];
	struct zm_ctx *mc;
	ze_result_t r;

	for (mc = zm_ctxs; mc; mc = mc->next)
		if (mc->ctx == ctx && mc->md == md)
			return mc;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return NULL;
	mc->ctx = ctx;
	mc->md = md;
	mc->next = zm_ctxs;
	zm_ctxs = mc;
	for (unsigned g = 0; g < md->ng; g++)
		hs[g] = md->g[g].handle;
	/* on the program's context: queries need their groups active there */
	r = ZE_REAL(zetContextActivateMetricGroups)(ctx, md->handle, md->ng, hs);
	if (r != ZE_RESULT_SUCCESS) {
		zm_fail(md, "activating metric groups on the program's context", r);
		mc->failed = true;
	}
	return mc;
}

void ze_metrics__kernel_begin(struct ze_append *a, struct ze_work *w, ze_command_list_handle_t l,
			      uint32_t nwait, ze_event_handle_t *waits)
{
	struct zm_dev *md;
	struct zm_ctx *mc;
	struct ze_mq *mq = NULL;
	bool immediate, synchronous;
	struct ze_dev *dev = ze_track__list_kind(a->list, &immediate, &synchronous);
	unsigned g;

	pthread_mutex_lock(&zm_lock);
	md = zm_dev_of(dev);
	if (!md || !md->ng || !a->ctx || zm_stopped)
		goto out;
	mc = zm_ctx_get(a->ctx, md);
	if (!mc || mc->failed)
		goto out;
	if (!mc->free && zm_ctx_grow(mc)) {
		mc->failed = mc->npools == 0;
		goto out;
	}
	mq = mc->free;
	mc->free = mq->next;
	mq->next = NULL;
out:
	pthread_mutex_unlock(&zm_lock);
	if (!mq)
		return;
	/* the window opens when the kernel can start, not while it waits */
	if (immediate && !synchronous && mq->gate) {
		ze_event_handle_t all[64];

		if (nwait < 64 && (!nwait || waits)) {
			if (nwait)
				memcpy(all, waits, nwait * sizeof(*all));
			all[nwait] = mq->gate;
			mq->gated = ZE_REAL(zeCommandListAppendWaitOnEvents)(l, nwait + 1, all) ==
				    ZE_RESULT_SUCCESS;
		}
	} else if (nwait && waits) {
		ZE_REAL(zeCommandListAppendWaitOnEvents)(l, nwait, waits);
	}
	for (g = 0; g < md->ng; g++)
		if (ZE_REAL(zetCommandListAppendMetricQueryBegin)(l, mq->q[g]) != ZE_RESULT_SUCCESS)
			break;
	if (g < md->ng) {
		/* those begun stay unread in the list: this kernel goes without metrics */
		zm_fail(md, "a metric query in a command list", ZE_RESULT_ERROR_UNKNOWN);
		if (mq->gated)
			ZE_REAL(zeEventHostSignal)(mq->gate);
		return;
	}
	w->mq = mq;
}

void ze_metrics__kernel_end(struct ze_work *w, ze_command_list_handle_t l, ze_result_t r)
{
	struct ze_mq *mq = w->mq;
	unsigned ng = mq->mc ? mq->mc->md->ng : 0;

	for (unsigned g = ng; g-- > 0;)
		ZE_REAL(zetCommandListAppendMetricQueryEnd)(l, mq->q[g], NULL, 0, NULL);
	/* the kernel is in: the begin may run */
	if (mq->gated)
		ZE_REAL(zeEventHostSignal)(mq->gate);
	/* A kernel the list refused is never read: its queries are not used again
	 * (the list holds their begins). */
	if (r != ZE_RESULT_SUCCESS)
		w->mq = NULL;
}

#endif

bool ze_metrics__kernel_ready(struct ze_mq *mq)
{
	bool ready = true;

	pthread_mutex_lock(&zm_lock);
	for (unsigned g = 0; mq->mc && g < mq->mc->md->ng && ready; g++) {
		size_t size = 0;

		ready = ZE_REAL(zetMetricQueryGetData)(mq->q[g], &size, NULL) != ZE_RESULT_NOT_READY;
	}
	pthread_mutex_unlock(&zm_lock);
	return ready;
}

/*
 * A finished kernel's metrics, not in yet, that must be read now: wait for them, a drain
 * cycle at most. A driver that misses that wait is not waited for again until a kernel's
 * metrics come in without one (one wait, not one per kernel, where none ever come).
 */
static void zm_kernel_await(struct ze_mq *mq)
{
	static atomic_bool stalled;
	uint64_t until;

	if (ze_metrics__kernel_ready(mq)) {
		atomic_store_explicit(&stalled, false, memory_order_relaxed);
		return;
	}
	if (atomic_load_explicit(&stalled, memory_order_relaxed))
		return;
	until = gt_clock_ns() + ZM_AWAIT_NS;
	do {
		nanosleep(&(struct timespec){ .tv_nsec = ZM_AWAIT_POLL_NS }, NULL);
		if (ze_metrics__kernel_ready(mq))
			return;
	} while (gt_clock_ns() < until);
	atomic_store_explicit(&stalled, true, memory_order_relaxed);
}

unsigned ze_metrics__kernel_args(struct ze_mq *mq, struct gt_arg *args, unsigned max)
{
	unsigned n = 0;

	if (!atomic_load(&ze_closed))
		zm_kernel_await(mq);
	pthread_mutex_lock(&zm_lock);
	for (unsigned gi = 0; mq->mc && gi < mq->mc->md->ng; gi++) {
		struct zm_group *g = &mq->mc->md->g[gi];
		size_t size = 0;
		uint32_t count = 0;

		if (ZE_REAL(zetMetricQueryGetData)(mq->q[gi], &size, NULL) != ZE_RESULT_SUCCESS ||
		    !size || zm_reserve((void **)&g->raw, &g->raw_cap, size, 1) ||
		    ZE_REAL(zetMetricQueryGetData)(mq->q[gi], &size, g->raw) != ZE_RESULT_SUCCESS ||
		    ZE_REAL(zetMetricGroupCalculateMetricValues)(
			    g->handle, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, size, g->raw,
			    &count, NULL) != ZE_RESULT_SUCCESS ||
		    count < g->count ||
		    zm_reserve((void **)&g->vals, &g->vals_cap, count, sizeof(*g->vals)) ||
		    ZE_REAL(zetMetricGroupCalculateMetricValues)(
			    g->handle, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, size, g->raw,
			    &count, g->vals) != ZE_RESULT_SUCCESS) {
			gt_lost_add(zm_lost_unread, 1);
			continue;
		}
		for (uint32_t i = 0; i < g->count && n < max; i++) {
			if (!g->keys[i])
				continue;
			args[n].key = g->keys[i];
			args[n].type = GT_ARG_METRIC;
			args[n++].v.f = zm_value(&g->vals[i]);
		}
	}
	pthread_mutex_unlock(&zm_lock);
	return n;
}

void ze_metrics__kernel_rearm(struct ze_mq *mq)
{
	pthread_mutex_lock(&zm_lock);
	for (unsigned g = 0; mq->mc && g < mq->mc->md->ng; g++)
		ZE_REAL(zetMetricQueryReset)(mq->q[g]);
	pthread_mutex_unlock(&zm_lock);
}

void ze_metrics__kernel_release(struct ze_mq *mq)
{
	pthread_mutex_lock(&zm_lock);
	if (mq->mc && !atomic_load(&ze_closed)) {
		for (unsigned g = 0; g < mq->mc->md->ng; g++)
			ZE_REAL(zetMetricQueryReset)(mq->q[g]);
		if (mq->gated)
			ZE_REAL(zeEventHostReset)(mq->gate);
		mq->gated = false;
		mq->next = mq->mc->free;
		mq->mc->free = mq;
	}
	pthread_mutex_unlock(&zm_lock);
}

void ze_metrics__context_destroy(ze_context_handle_t ctx)
{
	struct zm_ctx **link, *mc;

	if (!ze_metrics_kernel_mode)
		return;
	pthread_mutex_lock(&zm_lock);
	for (link = &zm_ctxs; (mc = *link) != NULL;) {
		if (mc->ctx != ctx) {
			link = &mc->next;
			continue;
		}
		*link = mc->next;
		for (unsigned p = 0; p < mc->npools; p++) {
			for (unsigned g = 0; g < mc->md->ng; g++) {
				for (uint32_t i = 0; i < ZM_POOL_QUERIES; i++)
					ZE_REAL(zetMetricQueryDestroy)(mc->mqs[p][i].q[g]);
				ZE_REAL(zetMetricQueryPoolDestroy)(mc->pools[p][g]);
			}
			for (uint32_t i = 0; mc->gates[p] && i < ZM_POOL_QUERIES; i++)
				if (mc->mqs[p][i].gate)
					ZE_REAL(zeEventDestroy)(mc->mqs[p][i].gate);
			if (mc->gates[p])
				ZE_REAL(zeEventPoolDestroy)(mc->gates[p]);
			/* commands of lists that outlive their context may still point here */
			for (uint32_t i = 0; i < ZM_POOL_QUERIES; i++)
				mc->mqs[p][i].mc = NULL;
		}
		ZE_REAL(zetContextActivateMetricGroups)(ctx, mc->md->handle, 0, NULL);
		/* mc and its slots stay allocated: stale commands read mc == NULL */
	}
	pthread_mutex_unlock(&zm_lock);
}
