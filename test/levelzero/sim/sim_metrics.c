/* Hardware metrics of the simulated device (zet): metric groups whose values follow from the
 * simulated work, a streamer that produces one raw report per sampling period, and metric
 * queries around commands. The contract is in README.md ("Metrics"); in short:
 *
 * - Metrics are refused (ZE_RESULT_ERROR_UNINITIALIZED) unless ZET_ENABLE_METRICS=1 was in
 *   the environment at the first zeInit, as Intel's driver does. ZE_SIM_METRICS_PARANOID=1
 *   makes streamers and query pools fail with ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS (what
 *   a non-root user gets when i915/xe perf is restricted).
 * - Every command's simulated span is recorded when it starts. A report or query covering
 *   [a, b) is computed from the spans that overlap it once no command can start before b
 *   any more (sim_engines_horizon_locked): values are exact and repeatable.
 * - Groups must be activated on the context (zetContextActivateMetricGroups, one per domain)
 *   before a streamer or query pool uses them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

bool sim_metrics_enabled;
/* Groups the device offers (ZE_SIM_METRIC_GROUPS: the first N of the table; 0, a GPU whose
 * driver has no metrics for it). */
static uint32_t offered_groups;

/* ---- metric groups: static, so their handles are addresses in these tables ---- */
enum sim_metric_id {
	M_GPU_TIME, M_GPU_BUSY, M_EU_ACTIVE, M_EU_OCCUPANCY, M_BYTES_READ, M_BYTES_WRITTEN,
	M_FREQUENCY, M_COPY_BUSY, M_BEGIN_TIME,
};

struct sim_metric {
	enum sim_metric_id id;
	const char *name, *description, *units;
	zet_metric_type_t type;
	zet_value_type_t value_type;
};

struct sim_metric_group {
	const char *name, *description;
	zet_metric_group_sampling_type_flags_t sampling;
	uint32_t domain;
	const struct sim_metric *metrics;
	uint32_t count;
};

#define M(id, name, desc, units, type, vt) { id, name, desc, units, ZET_METRIC_TYPE_##type, \
					     ZET_VALUE_TYPE_##vt }
static const struct sim_metric compute_basic[] = {
	M(M_GPU_TIME, "GpuTime", "Time elapsed on the GPU during the measurement", "ns", DURATION,
	  UINT64),
	M(M_GPU_BUSY, "GpuBusy", "Share of the time any engine was busy", "percent", RATIO,
	  FLOAT32),
	M(M_EU_ACTIVE, "EuActive", "Share of the time a kernel ran on the EUs", "percent", RATIO,
	  FLOAT32),
	M(M_EU_OCCUPANCY, "EuThreadOccupancy",
	  "Share of the EU lanes kept busy by kernels' work-items", "percent", RATIO, FLOAT32),
	M(M_BYTES_READ, "GpuMemoryBytesRead", "Bytes read from memory by copies", "bytes", EVENT,
	  UINT64),
	M(M_BYTES_WRITTEN, "GpuMemoryBytesWritten", "Bytes written to memory by copies and fills",
	  "bytes", EVENT, UINT64),
	M(M_FREQUENCY, "AvgGpuCoreFrequency", "Average GPU core frequency", "MHz", EVENT,
	  UINT64),
	M(M_BEGIN_TIME, "QueryBeginTime", "Start of the measurement (kernel timestamp clock)",
	  "ns", TIMESTAMP, UINT64),
};
static const struct sim_metric memory_profile[] = {
	M(M_GPU_TIME, "GpuTime", "Time elapsed on the GPU during the measurement", "ns", DURATION,
	  UINT64),
	M(M_COPY_BUSY, "CopyEngineBusy", "Share of the time a copy or fill ran", "percent", RATIO,
	  FLOAT32),
	M(M_BYTES_READ, "GpuMemoryBytesRead", "Bytes read from memory by copies", "bytes", EVENT,
	  UINT64),
	M(M_BYTES_WRITTEN, "GpuMemoryBytesWritten", "Bytes written to memory by copies and fills",
	  "bytes", EVENT, UINT64),
	M(M_BEGIN_TIME, "QueryBeginTime", "Start of the measurement (kernel timestamp clock)",
	  "ns", TIMESTAMP, UINT64),
};
#undef M

#define NGROUPS 2
static const struct sim_metric_group groups[NGROUPS] = {
	{ "ComputeBasic", "Basic compute metrics: busy, EU activity, memory traffic",
	  ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_EVENT_BASED |
		  ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED,
	  0, compute_basic, sizeof(compute_basic) / sizeof(compute_basic[0]) },
	{ "MemoryProfile", "Copy engine activity and memory traffic (time-based only)",
	  ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED, 1, memory_profile,
	  sizeof(memory_profile) / sizeof(memory_profile[0]) },
};

static const struct sim_metric_group *group_of(const void *h)
{
	for (int i = 0; i < NGROUPS; i++)
		if (h == &groups[i])
			return &groups[i];
	return NULL;
}

static const struct sim_metric *metric_of(const void *h)
{
	for (int i = 0; i < NGROUPS; i++) {
		const struct sim_metric *m = h;

		if (m >= groups[i].metrics && m < groups[i].metrics + groups[i].count)
			return m;
	}
	return NULL;
}

#define SIM_GROUP(var, h)							\
	const struct sim_metric_group *var = group_of(h);			\
	do {									\
		if (!sim_tool_call(sim_metrics_enabled))					\
			return ZE_RESULT_ERROR_UNINITIALIZED;			\
		if (!(h))							\
			return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;		\
		if (!var)							\
			return ZE_RESULT_ERROR_INVALID_ARGUMENT;		\
	} while (0)

/* ---- the record of simulated work: spans in the order engines started them ---- */
struct sim_span {
	uint64_t picked;	/* host time the engine took it: increases along the log */
	uint64_t start, end;
	uint64_t bytes_read, bytes_written;
	uint8_t op;
};

#define LOG_SIZE 65536	/* a read covering more commands than this sees the last ones */
static struct sim_span *span_log;
static uint64_t span_count;	/* spans recorded so far */
static uint64_t span_max_ns;	/* the longest one */

void sim_metrics_started_locked(const struct sim_cmd *c, uint64_t start, uint64_t end)
{
	struct sim_span *s;

	if ((!sim_metrics_enabled && !sim_sysman_enabled) || end <= start ||
	    c->op == SIM_OP_NOP || c->op == SIM_OP_TIMESTAMP)
		return;
	if (!span_log && !(span_log = calloc(LOG_SIZE, sizeof(*span_log))))
		return;
	s = &span_log[span_count++ % LOG_SIZE];
	s->picked = sim_host_ns();
	s->start = start;
	s->end = end;
	s->op = (uint8_t)c->op;
	bool copy = c->op == SIM_OP_COPY || c->op == SIM_OP_COPY_REGION;

	s->bytes_read = copy ? c->size : 0;
	s->bytes_written = copy || c->op == SIM_OP_FILL ? c->size : 0;
	if (end - start > span_max_ns)
		span_max_ns = end - start;
}

static int cmp_interval(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Length of the union of n intervals (sorted here). */
static uint64_t union_ns(uint64_t (*iv)[2], size_t n)
{
	uint64_t total = 0, cs = 0, ce = 0;

	if (!n) /* iv may be NULL: qsort's pointer must not be, even for 0 elements */
		return 0;
	qsort(iv, n, sizeof(*iv), cmp_interval);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || iv[i][0] > ce) {
			total += ce - cs;
			cs = iv[i][0];
			ce = iv[i][1];
		} else if (iv[i][1] > ce) {
			ce = iv[i][1];
		}
	}
	return n ? total + ce - cs : 0;
}

/* Share of x proportional to the part [s, e) of [start, end) (exact integer math). */
static uint64_t prorate(uint64_t x, uint64_t s, uint64_t e, uint64_t start, uint64_t end)
{
	return (uint64_t)((unsigned __int128)x * (e - s) / (end - start));
}

void sim_window_locked(uint64_t a, uint64_t b, struct sim_window *w)
{
	uint64_t (*any)[2] = NULL, (*krn)[2] = NULL, (*cpy)[2] = NULL;
	size_t na = 0, nk = 0, nc = 0, cap = 0;

	memset(w, 0, sizeof(*w));
	if (b <= a || !span_log)
		return;
	/* Newest first; a span taken before a - span_max_ns ended before a, and so did all
	 * those taken before it. */
	for (uint64_t i = span_count; i-- > 0 && span_count - i <= LOG_SIZE;) {
		const struct sim_span *s = &span_log[i % LOG_SIZE];
		uint64_t cs, ce;

		if (s->picked + span_max_ns < a)
			break;
		if (s->end <= a || s->start >= b)
			continue;
		cs = s->start > a ? s->start : a;
		ce = s->end < b ? s->end : b;
		if (na == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			void *p1 = realloc(any, ncap * sizeof(*any));

			if (p1)
				any = p1;
			void *p2 = realloc(krn, ncap * sizeof(*krn));
			if (p2)
				krn = p2;
			void *p3 = realloc(cpy, ncap * sizeof(*cpy));
			if (p3)
				cpy = p3;
			if (!p1 || !p2 || !p3)
				break;
			cap = ncap;
		}
		any[na][0] = cs;
		any[na++][1] = ce;
		if (s->op == SIM_OP_KERNEL) {
			uint64_t items = s->end - s->start; /* a kernel runs one ns per work-item */

			krn[nk][0] = cs;
			krn[nk++][1] = ce;
			w->occupancy += (ce - cs) * (items < SIM_EU_LANES ? items : SIM_EU_LANES);
		} else if (s->op == SIM_OP_COPY || s->op == SIM_OP_COPY_REGION ||
			   s->op == SIM_OP_FILL) {
			cpy[nc][0] = cs;
			cpy[nc++][1] = ce;
			w->bytes_read += prorate(s->bytes_read, cs, ce, s->start, s->end);
			w->bytes_written += prorate(s->bytes_written, cs, ce, s->start, s->end);
		}
	}
	w->busy_ns = union_ns(any, na);
	w->kernel_ns = union_ns(krn, nk);
	w->copy_ns = union_ns(cpy, nc);
	free(any);
	free(krn);
	free(cpy);
}

/* ---- raw reports: what streamers and queries hand out ---- */
#define REPORT_MAGIC 0x4d53495a	/* "ZISM" */

struct sim_report {
	uint32_t magic;
	uint32_t group;		/* index in groups[] */
	uint64_t begin_ticks;	/* device_ticks(a) */
	uint64_t duration_ns;
	struct sim_window w;
};

static void report_fill(struct sim_report *r, uint32_t group, uint64_t a, uint64_t b)
{
	memset(r, 0, sizeof(*r));
	r->magic = REPORT_MAGIC;
	r->group = group;
	r->begin_ticks = sim_dev_ticks(a);
	r->duration_ns = b - a;
	sim_window_locked(a, b, &r->w);
}

static double pct(uint64_t part, uint64_t whole)
{
	double v = whole ? 100.0 * (double)part / (double)whole : 0.0;

	return v > 100.0 ? 100.0 : v;
}

static zet_typed_value_t metric_value(const struct sim_metric *m, const struct sim_report *r)
{
	zet_typed_value_t v = { .type = m->value_type };
	double f = 0;
	uint64_t u = 0;

	switch (m->id) {
	case M_GPU_TIME:
		u = r->duration_ns;
		break;
	case M_GPU_BUSY:
		f = pct(r->w.busy_ns, r->duration_ns);
		break;
	case M_EU_ACTIVE:
		f = pct(r->w.kernel_ns, r->duration_ns);
		break;
	case M_EU_OCCUPANCY:
		f = r->duration_ns ? 100.0 * (double)r->w.occupancy /
					     ((double)r->duration_ns * SIM_EU_LANES) : 0.0;
		break;
	case M_COPY_BUSY:
		f = pct(r->w.copy_ns, r->duration_ns);
		break;
	case M_BYTES_READ:
		u = r->w.bytes_read;
		break;
	case M_BYTES_WRITTEN:
		u = r->w.bytes_written;
		break;
	case M_FREQUENCY:
		/* 300 MHz idle, 1600 MHz busy: the average over the measurement */
		u = r->duration_ns ? 300 + (uint64_t)(1300.0 * r->w.busy_ns / r->duration_ns + 0.5)
				   : 300;
		break;
	case M_BEGIN_TIME: {
		/* ticks to ns with the timer frequency the device reports (its 1.2 properties),
		 * as a driver computes it: not with the simulation's exact tick */
		long double hz = (long double)llroundl(1e9L / sim_clock.tick_ns);

		u = (uint64_t)llroundl((long double)r->begin_ticks * 1e9L / hz);
		break;
	}
	}
	if (m->value_type == ZET_VALUE_TYPE_FLOAT32)
		v.value.fp32 = (float)f;
	else
		v.value.ui64 = u;
	return v;
}

/* ---- groups and metrics ---- */
static ze_result_t group_get(zet_device_handle_t dev, uint32_t *count,
			     zet_metric_group_handle_t *out)
{
	ze_result_t r;

	if (!sim_tool_call(sim_metrics_enabled))
		return ZE_RESULT_ERROR_UNINITIALIZED;
	if ((r = sim_obj_check(dev, SIM_K_DEVICE)))
		return r;
	SIM_NOT_NULL(count);
	if (*count == 0 || !out) {
		*count = offered_groups;
		return ZE_RESULT_SUCCESS;
	}
	if (*count > offered_groups)
		*count = offered_groups;
	for (uint32_t i = 0; i < *count; i++)
		out[i] = (zet_metric_group_handle_t)&groups[i];
	return ZE_RESULT_SUCCESS;
}

static ze_result_t group_get_properties(zet_metric_group_handle_t h,
					zet_metric_group_properties_t *p)
{
	SIM_GROUP(g, h);

	SIM_NOT_NULL(p);
	snprintf(p->name, sizeof(p->name), "%s", g->name);
	snprintf(p->description, sizeof(p->description), "%s", g->description);
	p->samplingType = g->sampling;
	p->domain = g->domain;
	p->metricCount = g->count;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t reports_of(const struct sim_metric_group *g, size_t size, const uint8_t *raw,
			      size_t *n)
{
	*n = size / sizeof(struct sim_report);
	if (size % sizeof(struct sim_report))
		return ZE_RESULT_ERROR_INVALID_SIZE;
	for (size_t i = 0; i < *n; i++) {
		struct sim_report r;

		memcpy(&r, raw + i * sizeof(r), sizeof(r));
		if (r.magic != REPORT_MAGIC || &groups[r.group] != g)
			return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* another group's data */
	}
	return ZE_RESULT_SUCCESS;
}

static ze_result_t calculate(zet_metric_group_handle_t h, zet_metric_group_calculation_type_t type,
			     size_t size, const uint8_t *raw, uint32_t *count,
			     zet_typed_value_t *values)
{
	SIM_GROUP(g, h);
	size_t n, total;
	ze_result_t r;

	SIM_NOT_NULL(raw);
	SIM_NOT_NULL(count);
	if (type > ZET_METRIC_GROUP_CALCULATION_TYPE_MAX_METRIC_VALUES)
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	if ((r = reports_of(g, size, raw, &n)))
		return r;
	if (type == ZET_METRIC_GROUP_CALCULATION_TYPE_MAX_METRIC_VALUES)
		total = n ? g->count : 0;
	else
		total = n * g->count;
	if (*count == 0 || !values) {
		*count = (uint32_t)total;
		return ZE_RESULT_SUCCESS;
	}
	if (*count > total)
		*count = (uint32_t)total;
	for (uint32_t i = 0; i < *count; i++) {
		const struct sim_metric *m = &g->metrics[i % g->count];
		struct sim_report rep;

		if (type == ZET_METRIC_GROUP_CALCULATION_TYPE_MAX_METRIC_VALUES) {
			values[i] = metric_value(m, (memcpy(&rep, raw, sizeof(rep)), &rep));
			for (size_t k = 1; k < n; k++) {
				zet_typed_value_t v;

				memcpy(&rep, raw + k * sizeof(rep), sizeof(rep));
				v = metric_value(m, &rep);
				if (v.type == ZET_VALUE_TYPE_FLOAT32 ? v.value.fp32 > values[i].value.fp32
								     : v.value.ui64 > values[i].value.ui64)
					values[i] = v;
			}
		} else {
			memcpy(&rep, raw + (i / g->count) * sizeof(rep), sizeof(rep));
			values[i] = metric_value(m, &rep);
		}
	}
	return ZE_RESULT_SUCCESS;
}

/* One device, no sub-devices: one set of values. */
static ze_result_t calculate_multiple(zet_metric_group_handle_t h,
				      zet_metric_group_calculation_type_t type, size_t size,
				      const uint8_t *raw, uint32_t *sets, uint32_t *total,
				      uint32_t *counts, zet_typed_value_t *values)
{
	ze_result_t r;

	SIM_NOT_NULL(sets);
	SIM_NOT_NULL(total);
	if (*sets == 0 || *total == 0 || !counts || !values) {
		*total = 0;
		r = calculate(h, type, size, raw, total, NULL);
		*sets = 1;
		return r;
	}
	r = calculate(h, type, size, raw, total, values);
	*sets = 1;
	counts[0] = *total;
	return r;
}

static ze_result_t metric_get(zet_metric_group_handle_t h, uint32_t *count,
			      zet_metric_handle_t *out)
{
	SIM_GROUP(g, h);

	SIM_NOT_NULL(count);
	if (*count == 0 || !out) {
		*count = g->count;
		return ZE_RESULT_SUCCESS;
	}
	if (*count > g->count)
		*count = g->count;
	for (uint32_t i = 0; i < *count; i++)
		out[i] = (zet_metric_handle_t)&g->metrics[i];
	return ZE_RESULT_SUCCESS;
}

static ze_result_t metric_get_properties(zet_metric_handle_t h, zet_metric_properties_t *p)
{
	const struct sim_metric *m = metric_of(h);

	if (!sim_tool_call(sim_metrics_enabled))
		return ZE_RESULT_ERROR_UNINITIALIZED;
	if (!h)
		return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
	if (!m)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	SIM_NOT_NULL(p);
	snprintf(p->name, sizeof(p->name), "%s", m->name);
	snprintf(p->description, sizeof(p->description), "%s", m->description);
	snprintf(p->component, sizeof(p->component), "GPU");
	snprintf(p->resultUnits, sizeof(p->resultUnits), "%s", m->units);
	p->tierNumber = 1;
	p->metricType = m->type;
	p->resultType = m->value_type;
	return ZE_RESULT_SUCCESS;
}

/* ---- activation: which groups each context has active (one per domain) ---- */
#define ACTIVATIONS 64
static struct {
	const void *context;
	uint32_t groups;	/* bit per group */
} active[ACTIVATIONS];

static uint32_t *active_of_locked(const void *ctx, bool create)
{
	for (int i = 0; i < ACTIVATIONS; i++)
		if (active[i].context == ctx)
			return &active[i].groups;
	for (int i = 0; create && i < ACTIVATIONS; i++) {
		/* a slot of a destroyed context is free (sim_lock is held: the
		 * _locked check, where sim_obj_check would take it again) */
		if (!active[i].context || !sim_obj_alive_locked(active[i].context, SIM_K_CONTEXT)) {
			active[i].context = ctx;
			active[i].groups = 0;
			return &active[i].groups;
		}
	}
	return NULL;
}

static bool is_active(const void *ctx, const struct sim_metric_group *g)
{
	uint32_t *a;
	bool on;

	pthread_mutex_lock(&sim_lock);
	a = active_of_locked(ctx, false);
	on = a && (*a >> (g - groups) & 1);
	pthread_mutex_unlock(&sim_lock);
	return on;
}

static ze_result_t context_activate(zet_context_handle_t ctx, zet_device_handle_t dev,
				    uint32_t count, zet_metric_group_handle_t *list)
{
	uint32_t mask = 0, domains = 0, *a;
	ze_result_t r;

	if (!sim_tool_call(sim_metrics_enabled))
		return ZE_RESULT_ERROR_UNINITIALIZED;
	if ((r = sim_obj_check(ctx, SIM_K_CONTEXT)) || (r = sim_obj_check(dev, SIM_K_DEVICE)))
		return r;
	if (count && !list)
		return ZE_RESULT_ERROR_INVALID_SIZE;
	for (uint32_t i = 0; i < count; i++) {
		const struct sim_metric_group *g = group_of(list[i]);

		if (!g)
			return list[i] ? ZE_RESULT_ERROR_INVALID_ARGUMENT
				       : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
		if (domains >> g->domain & 1)
			return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* two groups of one domain */
		domains |= 1u << g->domain;
		mask |= 1u << (g - groups);
	}
	pthread_mutex_lock(&sim_lock);
	a = active_of_locked(ctx, true);
	if (a)
		*a = mask;
	pthread_mutex_unlock(&sim_lock);
	return a ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
}

static bool paranoid(void)
{
	const char *p = getenv("ZE_SIM_METRICS_PARANOID");

	return p && !strcmp(p, "1");
}

/* ---- streamers ---- */
#define STREAMER_MIN_PERIOD_NS 10000
#define STREAMER_BUFFER_REPORTS 16384	/* older reports are dropped when it fills */

struct sim_streamer {
	struct sim_obj obj;
	uint32_t group;
	uint64_t period_ns;
	uint64_t next;		/* start of the oldest report not read yet */
};

static struct sim_streamer *open_streamers[NGROUPS];	/* one per group (and domain) */

static ze_result_t streamer_open(zet_context_handle_t ctx, zet_device_handle_t dev,
				 zet_metric_group_handle_t gh, zet_metric_streamer_desc_t *desc,
				 ze_event_handle_t notify, zet_metric_streamer_handle_t *out)
{
	SIM_GROUP(g, gh);
	struct sim_streamer *s;
	ze_result_t r;

	if ((r = sim_obj_check(ctx, SIM_K_CONTEXT)) || (r = sim_obj_check(dev, SIM_K_DEVICE)))
		return r;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	if (notify && (r = sim_obj_check(notify, SIM_K_EVENT)))
		return r;
	if (!(g->sampling & ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED) || !is_active(ctx, g))
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	if (paranoid())
		return ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS;
	if (desc->samplingPeriod < STREAMER_MIN_PERIOD_NS)
		desc->samplingPeriod = STREAMER_MIN_PERIOD_NS;	/* [in,out]: what it uses */
	s = calloc(1, sizeof(*s));
	if (!s)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	s->group = (uint32_t)(g - groups);
	s->period_ns = desc->samplingPeriod;
	pthread_mutex_lock(&sim_lock);
	if (open_streamers[s->group]) {
		pthread_mutex_unlock(&sim_lock);
		free(s);
		return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
	}
	s->next = sim_host_ns();
	open_streamers[s->group] = s;
	pthread_mutex_unlock(&sim_lock);
	sim_obj_register(&s->obj, SIM_K_METRIC_STREAMER);
	*out = (zet_metric_streamer_handle_t)s;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t streamer_close(zet_metric_streamer_handle_t h)
{
	SIM_HANDLE(streamer, s, h, SIM_K_METRIC_STREAMER);

	sim_obj_unregister(&s->obj);
	pthread_mutex_lock(&sim_lock);
	open_streamers[s->group] = NULL;
	pthread_mutex_unlock(&sim_lock);
	free(s);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t streamer_read(zet_metric_streamer_handle_t h, uint32_t max_reports,
				 size_t *size, uint8_t *data)
{
	SIM_HANDLE(streamer, s, h, SIM_K_METRIC_STREAMER);
	ze_result_t r = ZE_RESULT_SUCCESS;
	uint64_t ready, n;

	SIM_NOT_NULL(size);
	pthread_mutex_lock(&sim_lock);
	ready = sim_engines_horizon_locked(sim_host_ns());
	n = ready > s->next ? (ready - s->next) / s->period_ns : 0;
	if (n > STREAMER_BUFFER_REPORTS) {
		/* the buffer wrapped: the oldest reports are gone */
		s->next += (n - STREAMER_BUFFER_REPORTS) * s->period_ns;
		n = STREAMER_BUFFER_REPORTS;
		r = ZE_RESULT_WARNING_DROPPED_DATA;
	}
	if (*size == 0 || !data) {
		*size = n * sizeof(struct sim_report);
		pthread_mutex_unlock(&sim_lock);
		return r;
	}
	if (n > *size / sizeof(struct sim_report))
		n = *size / sizeof(struct sim_report);
	if (n > max_reports)
		n = max_reports;
	for (uint64_t i = 0; i < n; i++) {
		struct sim_report rep;

		report_fill(&rep, s->group, s->next, s->next + s->period_ns);
		memcpy(data + i * sizeof(rep), &rep, sizeof(rep));
		s->next += s->period_ns;
	}
	*size = n * sizeof(struct sim_report);
	pthread_mutex_unlock(&sim_lock);
	return r;
}

/* ---- queries ---- */
struct sim_query_pool {
	struct sim_obj obj;
	uint32_t group, count;
	unsigned live;		/* queries not destroyed */
	uint8_t *used;		/* index taken */
};

struct sim_query {
	struct sim_obj obj;
	struct sim_query_pool *pool;
	uint32_t index;
	bool begun, ended;
	uint64_t begin, end;
};

static ze_result_t query_pool_create(zet_context_handle_t ctx, zet_device_handle_t dev,
				     zet_metric_group_handle_t gh,
				     const zet_metric_query_pool_desc_t *desc,
				     zet_metric_query_pool_handle_t *out)
{
	SIM_GROUP(g, gh);
	struct sim_query_pool *p;
	ze_result_t r;

	if ((r = sim_obj_check(ctx, SIM_K_CONTEXT)) || (r = sim_obj_check(dev, SIM_K_DEVICE)))
		return r;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	if (desc->type > ZET_METRIC_QUERY_POOL_TYPE_EXECUTION)
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	if (!desc->count)
		return ZE_RESULT_ERROR_INVALID_SIZE;
	if (!(g->sampling & ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_EVENT_BASED) || !is_active(ctx, g))
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	if (paranoid())
		return ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS;
	p = calloc(1, sizeof(*p));
	if (p)
		p->used = calloc(desc->count, 1);
	if (!p || !p->used) {
		free(p);
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	}
	p->group = (uint32_t)(g - groups);
	p->count = desc->count;
	sim_obj_register(&p->obj, SIM_K_METRIC_QUERY_POOL);
	*out = (zet_metric_query_pool_handle_t)p;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t query_pool_destroy(zet_metric_query_pool_handle_t h)
{
	SIM_HANDLE(query_pool, p, h, SIM_K_METRIC_QUERY_POOL);

	if (p->live)
		return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;	/* queries first */
	sim_obj_unregister(&p->obj);
	free(p->used);
	free(p);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t query_create(zet_metric_query_pool_handle_t h, uint32_t index,
				zet_metric_query_handle_t *out)
{
	SIM_HANDLE(query_pool, p, h, SIM_K_METRIC_QUERY_POOL);
	struct sim_query *q;

	SIM_NOT_NULL(out);
	if (index >= p->count || p->used[index])
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	q = calloc(1, sizeof(*q));
	if (!q)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	q->pool = p;
	q->index = index;
	p->used[index] = 1;
	p->live++;
	sim_obj_register(&q->obj, SIM_K_METRIC_QUERY);
	*out = (zet_metric_query_handle_t)q;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t query_destroy(zet_metric_query_handle_t h)
{
	SIM_HANDLE(query, q, h, SIM_K_METRIC_QUERY);

	sim_obj_unregister(&q->obj);
	q->pool->used[q->index] = 0;
	q->pool->live--;
	free(q);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t query_reset(zet_metric_query_handle_t h)
{
	SIM_HANDLE(query, q, h, SIM_K_METRIC_QUERY);

	pthread_mutex_lock(&sim_lock);
	q->begun = q->ended = false;
	pthread_mutex_unlock(&sim_lock);
	return ZE_RESULT_SUCCESS;
}

/* NOT_READY until the end has run and every command that may run inside the window is
 * known (a query counts the whole device's activity, as the hardware counters do). */
static ze_result_t query_get_data(zet_metric_query_handle_t h, size_t *size, uint8_t *data)
{
	SIM_HANDLE(query, q, h, SIM_K_METRIC_QUERY);
	struct sim_report rep;

	SIM_NOT_NULL(size);
	pthread_mutex_lock(&sim_lock);
	if (!q->ended || !q->begun || sim_engines_horizon_locked(sim_host_ns()) < q->end) {
		pthread_mutex_unlock(&sim_lock);
		return ZE_RESULT_NOT_READY;
	}
	if (*size == 0 || !data) {
		*size = sizeof(rep);
		pthread_mutex_unlock(&sim_lock);
		return ZE_RESULT_SUCCESS;
	}
	if (*size < sizeof(rep)) {
		pthread_mutex_unlock(&sim_lock);
		return ZE_RESULT_ERROR_INVALID_SIZE;
	}
	report_fill(&rep, q->pool->group, q->begin, q->end);
	pthread_mutex_unlock(&sim_lock);
	memcpy(data, &rep, sizeof(rep));
	*size = sizeof(rep);
	return ZE_RESULT_SUCCESS;
}

void sim_metrics_done_locked(const struct sim_cmd *c, uint64_t start, uint64_t end)
{
	struct sim_query *q = c->dst;

	if ((c->op != SIM_OP_QUERY_BEGIN && c->op != SIM_OP_QUERY_END) ||
	    q->obj.magic != SIM_MAGIC)
		return;
	if (c->op == SIM_OP_QUERY_BEGIN) {
		q->begun = true;
		q->ended = false;
		q->begin = start;
	} else {
		q->ended = true;
		q->end = start;
	}
}

static ze_result_t append_query(zet_command_list_handle_t l, zet_metric_query_handle_t h,
				enum sim_cmd_op op, ze_event_handle_t signal, uint32_t nwait,
				ze_event_handle_t *waits)
{
	struct sim_cmd proto = { .op = op, .dst = h };
	ze_result_t r;

	if (!sim_tool_call(sim_metrics_enabled))
		return ZE_RESULT_ERROR_UNINITIALIZED;
	if ((r = sim_obj_check(l, SIM_K_LIST)) || (r = sim_obj_check(h, SIM_K_METRIC_QUERY)))
		return r;
	return sim_list_append(l, &proto, signal, nwait, waits,
			       op == SIM_OP_QUERY_BEGIN ? "zetCommandListAppendMetricQueryBegin"
							: "zetCommandListAppendMetricQueryEnd");
}

static ze_result_t list_query_begin(zet_command_list_handle_t l, zet_metric_query_handle_t q)
{
	return append_query(l, q, SIM_OP_QUERY_BEGIN, NULL, 0, NULL);
}

static ze_result_t list_query_end(zet_command_list_handle_t l, zet_metric_query_handle_t q,
				  ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits)
{
	return append_query(l, q, SIM_OP_QUERY_END, signal, nwait, waits);
}

static ze_result_t list_metric_barrier(zet_command_list_handle_t l)
{
	struct sim_cmd proto = { .op = SIM_OP_NOP };
	ze_result_t r;

	if (!sim_tool_call(sim_metrics_enabled))
		return ZE_RESULT_ERROR_UNINITIALIZED;
	if ((r = sim_obj_check(l, SIM_K_LIST)))
		return r;
	return sim_list_append(l, &proto, NULL, 0, NULL, "zetCommandListAppendMetricMemoryBarrier");
}

/* ---- set-up and tables ---- */
static bool tools_forbidden;

static void tools_setup_once(void)
{
	const char *m = getenv("ZET_ENABLE_METRICS"), *s = getenv("ZES_ENABLE_SYSMAN");
	const char *f = getenv("ZE_SIM_FORBID_TOOLS"), *e = getenv("ZE_SIM_INITIALIZED_EARLIER");
	const char *g = getenv("ZE_SIM_METRIC_GROUPS");
	/* A driver some other component initialized before the variables were set (a
	 * library's constructor calling zeInit past the tool): what the environment says
	 * now comes too late, metrics and Sysman stay off. */
	bool earlier = e && !strcmp(e, "1");

	sim_metrics_enabled = !earlier && m && !strcmp(m, "1");
	sim_sysman_enabled = !earlier && s && !strcmp(s, "1");
	tools_forbidden = f && !strcmp(f, "1");
	offered_groups = NGROUPS;
	if (g && *g >= '0' && *g <= '9' && (uint32_t)atoi(g) < NGROUPS)
		offered_groups = (uint32_t)atoi(g);
}

/* ZE_SIM_FORBID_TOOLS=1: a test's proof that nobody called zet or zes. */
bool sim_tool_call(bool enabled)
{
	if (tools_forbidden) {
		fprintf(stderr, "ze_sim: a metrics or Sysman function was called with "
			"ZE_SIM_FORBID_TOOLS=1\n");
		abort();
	}
	return enabled;
}

void sim_tools_setup(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, tools_setup_once);
}

void sim_fill_metric_context(zet_context_dditable_t *t)
{
	t->pfnActivateMetricGroups = context_activate;
}

void sim_fill_metric_command_list(zet_command_list_dditable_t *t)
{
	t->pfnAppendMetricQueryBegin = list_query_begin;
	t->pfnAppendMetricQueryEnd = list_query_end;
	t->pfnAppendMetricMemoryBarrier = list_metric_barrier;
}

void sim_fill_metric_group(zet_metric_group_dditable_t *t)
{
	t->pfnGet = group_get;
	t->pfnGetProperties = group_get_properties;
	t->pfnCalculateMetricValues = calculate;
}

void sim_fill_metric_group_exp(zet_metric_group_exp_dditable_t *t)
{
	t->pfnCalculateMultipleMetricValuesExp = calculate_multiple;
}

void sim_fill_metric(zet_metric_dditable_t *t)
{
	t->pfnGet = metric_get;
	t->pfnGetProperties = metric_get_properties;
}

void sim_fill_metric_streamer(zet_metric_streamer_dditable_t *t)
{
	t->pfnOpen = streamer_open;
	t->pfnClose = streamer_close;
	t->pfnReadData = streamer_read;
}

void sim_fill_metric_query_pool(zet_metric_query_pool_dditable_t *t)
{
	t->pfnCreate = query_pool_create;
	t->pfnDestroy = query_pool_destroy;
}

void sim_fill_metric_query(zet_metric_query_dditable_t *t)
{
	t->pfnCreate = query_create;
	t->pfnDestroy = query_destroy;
	t->pfnReset = query_reset;
	t->pfnGetData = query_get_data;
}
