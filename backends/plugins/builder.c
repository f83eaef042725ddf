// SPDX-License-Identifier: MIT
/*
 * The trace builder every plug-in gets (struct gputrace_builder_api): its
 * rows, spans, instants, counters and log lines become gputrace events.
 * Builder calls come from any of the plug-in's threads, with whatever the
 * plug-in passes: each is checked (sizes, kinds, rows, args) and a bad one
 * is refused with a negative errno. A closed builder (its plug-in failed or
 * destroyed, or in a fork child) answers -ECANCELED.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backends/plugins/internal.h"
#include "inject/clock.h"
#include "inject/tables.h"
#include "inject/hash.h"
#include "inject/utf8.h"

/* The ABI mirrors the internal values, so kinds and arg types pass as they are. */
#define PLUGIN_KIND_SAME(id, str)                                                  \
	_Static_assert(GPUTRACE_KIND_##id == GT_KIND(id), "plug-in kind " str);
GT_KINDS(PLUGIN_KIND_SAME)
#undef PLUGIN_KIND_SAME
_Static_assert(GPUTRACE_KIND_ALL == GT_KIND_ALL, "plug-in kinds");
#define PLUGIN_ARG_SAME(t) _Static_assert((int)GPUTRACE_ARG_##t == (int)GT_ARG_##t, "arg " #t);
PLUGIN_ARG_SAME(I64) PLUGIN_ARG_SAME(U64) PLUGIN_ARG_SAME(HEX) PLUGIN_ARG_SAME(F64)
PLUGIN_ARG_SAME(STR)
#undef PLUGIN_ARG_SAME
_Static_assert(GPUTRACE_ARGS_MAX <= GT_ARGS_MAX, "plug-in args fit an event");
_Static_assert(GPUTRACE_CORRELATION_MAX == (1ull << GT_CORR_NS_SHIFT) - 1,
	       "a plug-in's ids are what its namespace holds");

/* The least a plug-in may pass: ABI 1's sizes (later versions only append). */
#define ABI1_EVENT_SIZE   sizeof(struct gputrace_event)
#define ABI1_COUNTER_SIZE sizeof(struct gputrace_counter)
#define ABI1_ARG_SIZE     sizeof(struct gputrace_arg)

#define PLUGIN_STR_MAX   4096 /* longer names are cut */

/* ---- strings: intern once, then find lock-free ---- */

/* Builder calls may come from application threads, and gt_str_intern takes
 * a lock: known strings are found in this open-addressing cache of
 * (hash << 32 | id) entries, inserted with compare-and-swap. */
#define STR_CACHE_SLOTS  4096
#define STR_CACHE_PROBES 8
GT_TABLE(_Atomic uint64_t, str_cache, STR_CACHE_SLOTS);

static uint32_t str_hash(const char *s, size_t len)
{
	return gt_fnv1a32(s, len);
}

uint32_t builder__str_n(const char *s, size_t len)
{
	uint32_t h;

	if (len > PLUGIN_STR_MAX) /* a character whole or not at all */
		len = gt_utf8_trim_end(s, PLUGIN_STR_MAX);
	h = str_hash(s, len);
	uint64_t entry;
	uint32_t id;

	for (unsigned i = 0; i < STR_CACHE_PROBES; i++) {
		entry = atomic_load_explicit(&str_cache[(h + i) % STR_CACHE_SLOTS],
					     memory_order_acquire);
		if (!entry)
			break;
		if ((uint32_t)(entry >> 32) == h) {
			size_t known_len;
			const char *known = gt_str_get((uint32_t)entry, &known_len);

			if (known && known_len == len && !memcmp(known, s, len))
				return (uint32_t)entry;
		}
	}
	id = gt_str_intern_n(s, len);
	entry = (uint64_t)h << 32 | id;
	for (unsigned i = 0; i < STR_CACHE_PROBES; i++) {
		uint64_t expected = 0;

		if (atomic_compare_exchange_strong_explicit(
			    &str_cache[(h + i) % STR_CACHE_SLOTS], &expected, entry,
			    memory_order_acq_rel, memory_order_acquire) ||
		    expected == entry)
			break;
	}
	return id;
}

uint32_t builder__str(const char *s)
{
	return builder__str_n(s, strnlen(s, PLUGIN_STR_MAX + 1)); /* longer: cut there */
}

/* A row's name, cut as events' are (the registry copies it whole: a 1 MiB
 * device name filled the trace's row names, deviceProperties and trailer). */
static const char *builder__row_name(const char *name, char cut[PLUGIN_STR_MAX + 1])
{
	size_t len = strnlen(name, PLUGIN_STR_MAX + 1);

	if (len <= PLUGIN_STR_MAX)
		return name;
	len = gt_utf8_trim_end(name, PLUGIN_STR_MAX);
	memcpy(cut, name, len);
	cut[len] = '\0';
	return cut;
}


/* A plug-in's string as a line of ours quotes it: a control byte as '?' (an
 * escape sequence reached the terminal, a newline split the line in two, as
 * log() and query()'s name never do), cut past LINE_NAME_MAX bytes at the
 * end of a character, with "...". */
#define LINE_NAME_MAX 128

static const char *builder__shown(const char *s, char out[LINE_NAME_MAX + 4])
{
	size_t n = strnlen(s, LINE_NAME_MAX + 1), cut = n;

	if (n > LINE_NAME_MAX)
		cut = gt_utf8_trim_end(s, LINE_NAME_MAX);
	for (size_t i = 0; i < cut; i++)
		out[i] = (unsigned char)s[i] < ' ' || s[i] == 0x7f ? '?' : s[i];
	if (cut < n)
		memcpy(out + cut, "...", 3), cut += 3;
	out[cut] = '\0';
	return out;
}

/* ---- the builder ---- */

/* The plug-in whose builder the handle is, if it is one of ours. */
static struct plugin *builder__plugin(gputrace_builder *handle)
{
	uintptr_t p = (uintptr_t)handle, base = (uintptr_t)&plugins[0].builder;
	size_t i = (p - base) / sizeof(plugins[0]);

	return p >= base && i < PLUGINS_MAX && handle == &plugins[i].builder ? &plugins[i]
									     : NULL;
}

/* The builder behind a handle, if the handle is one of ours and open. */
static struct gputrace_builder *builder__get(gputrace_builder *handle)
{
	if (!builder__plugin(handle) ||
	    !atomic_load_explicit(&handle->open, memory_order_acquire))
		return NULL;
	return handle;
}

/* A record for a closed builder: counted lost when its plug-in was given up
 * on in a call that never returned (it cannot know it was). */
static int builder__closed(gputrace_builder *handle)
{
	struct plugin *p = builder__plugin(handle);

	if (p && atomic_load(&p->hung))
		gt_lost_add(GT_S_LOST_PLUGIN, 1);
	return -ECANCELED;
}

static const struct plugin_row *builder__row(struct gputrace_builder *b, int32_t row)
{
	uint32_t n = atomic_load_explicit(&b->nrows, memory_order_acquire);

	if (row < 1 || (uint32_t)row > n)
		return NULL;
	return &b->rows[row - 1];
}

/* Copy a struct the plug-in sized: fields past its size read as zero. */
static int sized_copy(void *dst, size_t dst_size, const void *src, size_t min_size)
{
	uint32_t size;

	if (!src)
		return -EINVAL;
	memcpy(&size, src, sizeof(size));
	if (size < min_size)
		return -EINVAL;
	memset(dst, 0, dst_size);
	memcpy(dst, src, size < dst_size ? size : dst_size);
	return 0;
}

/*
 * Keys the writer puts in an event's args itself (writer/events.c): the id of
 * the call that caused it, its user ranges, a device or stream that is no
 * integer. A plug-in's own arg of that name is written "plugin_<key>": else the
 * object held the key twice, readers kept one of the two (json.load the last),
 * and a flight recorder's dump, which reads the first "correlation" of an
 * event for its arrows, took the plug-in's value.
 */
uint32_t builder__arg_key(const char *key)
{
	/* text, not pointers: nothing for the loader to relocate (README "Overhead") */
	static const char taken[][16] = { "correlation", "correlation2", "range",
					  "ranges", "exec_range", "exec_ranges",
					  "device_label", "stream_label" };
	char renamed[32];

	for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++)
		if (!strcmp(key, taken[i]))
			return builder__str_n(renamed, (size_t)snprintf(renamed, sizeof(renamed),
									 "plugin_%s", key));
	return builder__str(key);
}

static bool one_kind(uint32_t kind)
{
	return kind && !(kind & (kind - 1)) && !(kind & ~(uint32_t)GPUTRACE_KIND_ALL);
}

/* why: what a refusal's line says (the args, or a counter's values) */
static int builder__args(const struct gputrace_arg *in, uint32_t n, bool numbers_only,
			 struct gt_arg *out, const char **why)
{
	uint32_t stride;

	if (!n)
		return 0;
	if (!in)
		return *why = "nargs is not 0 and args is NULL", -EINVAL;
	if (n > GPUTRACE_ARGS_MAX)
		return *why = "more than GPUTRACE_ARGS_MAX (16) args or values", -E2BIG;
	memcpy(&stride, in, sizeof(stride));
	for (uint32_t i = 0; i < n; i++) {
		struct gputrace_arg a;
		int rc = sized_copy(&a, sizeof(a), (const char *)in + (size_t)i * stride,
				    ABI1_ARG_SIZE);

		if (rc)
			return *why = "an arg's size field is below ABI 1's (GPUTRACE_INIT it)", rc;
		if (!a.key)
			return *why = "an arg without a key", -EINVAL;
		/* a counter's values are series of its own, named as given */
		out[i].key = numbers_only ? builder__str(a.key) : builder__arg_key(a.key);
		/* one key twice would be one JSON object's key twice: readers keep one */
		for (uint32_t j = 0; j < i; j++)
			if (out[j].key == out[i].key)
				return *why = "a key given twice", -EINVAL;
		out[i].type = a.type;
		switch (a.type) {
		case GPUTRACE_ARG_I64:
		case GPUTRACE_ARG_U64:
		case GPUTRACE_ARG_F64:
			out[i].v.u = a.value.u;
			break;
		case GPUTRACE_ARG_HEX:
			if (numbers_only)
				return *why = "a counter value of type HEX (numbers only)", -EINVAL;
			out[i].v.u = a.value.u;
			break;
		case GPUTRACE_ARG_STR:
			if (numbers_only)
				return *why = "a counter value of type STR (numbers only)", -EINVAL;
			if (!a.value.s)
				return *why = "a STR arg whose string is NULL", -EINVAL;
			out[i].v.u = builder__str(a.value.s);
			break;
		default:
			return *why = "an arg of an unknown type", -EINVAL;
		}
	}
	return (int)n;
}

/*
 * An event or counter refused as malformed (-EINVAL, -E2BIG): one line per
 * plug-in names the first and why, as a broken plug-in's events went missing
 * without a word (the README's own example ignores the return codes).
 */
static int builder__malformed(struct gputrace_builder *b, const char *what, const char *name,
			      int rc, const char *why)
{
	char shown[LINE_NAME_MAX + 4];

	if (!atomic_exchange(&b->bad_said, true))
		pr_err("plug-in %s: %s \"%s\" refused (%s): %s; said once (later ones return "
		       "the same, unsaid)", b->name, what, name ? builder__shown(name, shown) : "",
		       rc == -E2BIG ? "-E2BIG" : "-EINVAL", why);
	return rc;
}

static uint64_t builder_now_ns(void)
{
	return gt_clock_ns();
}

/* A row refused for want of room: -ENOSPC, and one line per plug-in and
 * limit, naming it (the plug-in may well ignore the return). Under rows_lock. */
static int32_t builder__no_room(struct gputrace_builder *b, enum plugin_limit limit,
				const char *what, const char *name)
{
	char shown[LINE_NAME_MAX + 4];

	if (!(b->limits_said & 1u << limit)) {
		b->limits_said |= 1u << limit;
		name = builder__shown(name, shown);
		if (limit == PLUGIN_LIMIT_ROWS)
			pr_err("plug-in %s: %s \"%s\" refused (-ENOSPC): at most %d rows "
			       "(devices and queues) per plug-in; said once",
			       b->name, what, name, PLUGIN_ROWS_MAX);
		else if (limit == PLUGIN_LIMIT_DEVICES)
			pr_err("plug-in %s: %s \"%s\" refused (-ENOSPC): at most %d devices "
			       "(and %d rows) per process; said once",
			       b->name, what, name, GT_DEVICES_MAX, GT_TRACKS_MAX);
		else
			pr_err("plug-in %s: %s \"%s\" refused (-ENOSPC): at most %d rows "
			       "(devices and queues) per process; said once",
			       b->name, what, name, GT_TRACKS_MAX);
	}
	return -ENOSPC;
}

/* The plug-in's row of that name (a queue: on that device), 0 if none.
 * Looked up before the process's rows are asked, which would make a row
 * the plug-in may have no room for. Under rows_lock. */
static int32_t builder__find_row(struct gputrace_builder *b, uint32_t device, uint32_t name,
				 bool queue)
{
	uint32_t n = atomic_load_explicit(&b->nrows, memory_order_relaxed);

	for (uint32_t i = 0; i < n; i++)
		if (b->rows[i].name == name && b->rows[i].queue == queue &&
		    (!queue || b->rows[i].device == device))
			return (int32_t)i + 1;
	return 0;
}

static bool builder__rows_full(struct gputrace_builder *b)
{
	return atomic_load_explicit(&b->nrows, memory_order_relaxed) == PLUGIN_ROWS_MAX;
}

static int32_t builder__add_row(struct gputrace_builder *b, uint32_t device, uint32_t track,
				uint32_t name, bool queue)
{
	uint32_t n = atomic_load_explicit(&b->nrows, memory_order_relaxed);

	b->rows[n] = (struct plugin_row){
		.device = device, .track = track, .name = name, .queue = queue
	};
	atomic_store_explicit(&b->nrows, n + 1, memory_order_release);
	return (int32_t)n + 1;
}

static int32_t builder_device(gputrace_builder *handle, const char *name)
{
	struct gputrace_builder *b = builder__get(handle);
	char cut[PLUGIN_STR_MAX + 1];
	uint32_t device, id;
	int32_t row;

	if (!b)
		return -ECANCELED;
	if (!name || !name[0])
		return -EINVAL;
	name = builder__row_name(name, cut);
	id = builder__str(name);
	pthread_mutex_lock(&b->rows_lock);
	row = builder__find_row(b, 0, id, false);
	if (!row && builder__rows_full(b))
		row = builder__no_room(b, PLUGIN_LIMIT_ROWS, "device", name);
	if (!row) {
		device = gt_device_row(name);
		/* no device 0: its events would land on other rows */
		if (!device)
			row = builder__no_room(b, PLUGIN_LIMIT_DEVICES, "device", name);
		else
			row = builder__add_row(b, device, gt_device_track(device), id, false);
	}
	pthread_mutex_unlock(&b->rows_lock);
	return row;
}

static int32_t builder_queue(gputrace_builder *handle, int32_t device_row, const char *name,
			     int32_t sort)
{
	struct gputrace_builder *b = builder__get(handle);
	const struct plugin_row *dev;
	char cut[PLUGIN_STR_MAX + 1];
	uint32_t track, id;
	int32_t row;

	if (!b)
		return -ECANCELED;
	dev = builder__row(b, device_row);
	if (!dev || dev->queue || !name || !name[0])
		return -EINVAL;
	name = builder__row_name(name, cut);
	id = builder__str(name);
	pthread_mutex_lock(&b->rows_lock);
	row = builder__find_row(b, dev->device, id, true);
	if (!row && builder__rows_full(b))
		row = builder__no_room(b, PLUGIN_LIMIT_ROWS, "queue", name);
	if (!row) {
		track = gt_queue_row(dev->device, name, sort);
		if (!track)
			row = builder__no_room(b, PLUGIN_LIMIT_TRACKS, "queue", name);
		else
			row = builder__add_row(b, dev->device, track, id, true);
	}
	pthread_mutex_unlock(&b->rows_lock);
	return row;
}

/*
 * Times the trace can draw: CLOCK_MONOTONIC_RAW ns from an hour before the
 * plug-in started to an hour from now. 0, a device's own ticks or an end of
 * UINT64_MAX would stretch the trace over hours (or days) and take its sums
 * past their range. -ERANGE, and one line per plug-in naming the first.
 */
#define TIMES_SLACK_NS (3600ull * 1000000000ull)

static int builder__times(struct gputrace_builder *b, const char *name, uint64_t start,
			  uint64_t end)
{
	uint64_t lo = b->opened_ns > TIMES_SLACK_NS ? b->opened_ns - TIMES_SLACK_NS : 1;
	uint64_t hi = builder_now_ns() + TIMES_SLACK_NS;
	char shown[LINE_NAME_MAX + 4];

	if (start >= lo && end <= hi)
		return 0;
	if (!atomic_exchange(&b->times_said, true))
		pr_err("plug-in %s: \"%s\" refused (-ERANGE): its time %" PRIu64 " ns (to %"
		       PRIu64 ") is not CLOCK_MONOTONIC_RAW ns of this run (accepted: %" PRIu64
		       " to %" PRIu64 ", api->now_ns() is the clock); said once",
		       b->name, builder__shown(name, shown), start, end, lo, hi);
	return -ERANGE;
}

/*
 * A correlation id the trace can keep apart from the plug-in's others: its
 * namespace holds 48 bits (gt_corr_foreign). Cut to them, 2^48 + 5 was 5:
 * every kernel of either id drew its arrow from the last launch of the two.
 * -ERANGE, and one line per plug-in naming the first.
 */
static int builder__corr(struct gputrace_builder *b, const char *name, uint64_t corr)
{
	char shown[LINE_NAME_MAX + 4];

	if (corr <= GPUTRACE_CORRELATION_MAX)
		return 0;
	if (!atomic_exchange(&b->corr_said, true))
		pr_err("plug-in %s: \"%s\" refused (-ERANGE): its correlation id %" PRIu64
		       " (%#" PRIx64 ") is past GPUTRACE_CORRELATION_MAX (2^48 - 1); said once",
		       b->name, builder__shown(name, shown), corr, corr);
	return -ERANGE;
}

static int builder__event(gputrace_builder *handle, const struct gputrace_event *in, bool span)
{
	struct gputrace_builder *b = builder__get(handle);
	struct gputrace_event e;
	struct gt_arg args[GPUTRACE_ARGS_MAX];
	struct gt_event ev = { 0 };
	int nargs, rc;

	const char *what = span ? "span" : "instant", *why = NULL;

	if (!b)
		return builder__closed(handle);
	plugin__progress(builder__plugin(b));
	rc = sized_copy(&e, sizeof(e), in, ABI1_EVENT_SIZE);
	if (rc)
		return builder__malformed(b, what, NULL, rc, in ? "its size field is below ABI 1's "
						 "(GPUTRACE_INIT it)" : "NULL");
	if (!e.name || !e.name[0])
		return builder__malformed(b, what, NULL, -EINVAL, "no name");
	if (!one_kind(e.kind))
		return builder__malformed(b, what, e.name, -EINVAL,
					  "its kind is not one GPUTRACE_KIND_* bit");
	if (span && e.end_ns < e.start_ns)
		return builder__malformed(b, what, e.name, -EINVAL, "it ends before it starts");
	if (!(e.kind & b->kinds))
		return 1;
	rc = builder__times(b, e.name, e.start_ns, span ? e.end_ns : e.start_ns);
	if (!rc)
		rc = builder__corr(b, e.name, e.correlation);
	if (rc)
		return rc;
	if (e.row == GPUTRACE_ROW_HOST) {
		if (e.tid < 0)
			return builder__malformed(b, what, e.name, -EINVAL,
						  "a host event with a negative tid");
		ev.type = span ? GT_EV_HOST_SPAN : GT_EV_INSTANT;
		ev.track = (uint32_t)e.tid;
		ev.flags = GT_EVF_HANDED;
		/* Device spans may point at it: the writer keeps launches for flows. */
		if (span && e.correlation)
			ev.flags |= GT_EVF_LAUNCH;
		/* an annotation is a user range of its thread, given whole */
		if (span && e.kind == GPUTRACE_KIND_ANNOTATION)
			ev.flags |= GT_EVF_RANGE | GT_EVF_TIMED;
	} else {
		const struct plugin_row *row = builder__row(b, e.row);

		/* a negative row: what device() or queue() returned, said there */
		if (!row && e.row < 0)
			return -EINVAL;
		if (!row || (span && !row->queue))
			return builder__malformed(b, what, e.name, -EINVAL,
						  !row ? "its row is not one the plug-in made"
						       : "a span on a device row (spans go on queues)");
		ev.type = span ? GT_EV_DEVICE_SPAN : GT_EV_INSTANT;
		ev.flags = span ? 0 : GT_EVF_DEVICE;
		ev.track = row->track;
	}
	nargs = builder__args(e.args, e.nargs, false, args, &why);
	if (nargs < 0)
		return builder__malformed(b, what, e.name, nargs, why);
	ev.start_ns = e.start_ns;
	ev.end_ns = span ? e.end_ns : e.start_ns;
	ev.corr = e.correlation ? gt_corr_foreign(b->corr_ns, e.correlation) : 0;
	ev.name = builder__str(e.name);
	ev.cat = e.category ? builder__str(e.category) : b->kind_cat[__builtin_ctz(e.kind)];
	return gt_emit(&ev, args, (unsigned)nargs);
}

static int builder_span(gputrace_builder *handle, const struct gputrace_event *ev)
{
	return builder__event(handle, ev, true);
}

static int builder_instant(gputrace_builder *handle, const struct gputrace_event *ev)
{
	return builder__event(handle, ev, false);
}

static int builder_counter(gputrace_builder *handle, const struct gputrace_counter *in)
{
	struct gputrace_builder *b = builder__get(handle);
	struct gputrace_counter c;
	struct gt_arg values[GPUTRACE_ARGS_MAX];
	struct gt_event ev = { 0 };
	const struct plugin_row *row;
	int n, rc;

	const char *why = NULL;

	if (!b)
		return builder__closed(handle);
	plugin__progress(builder__plugin(b));
	rc = sized_copy(&c, sizeof(c), in, ABI1_COUNTER_SIZE);
	if (rc)
		return builder__malformed(b, "counter", NULL, rc, in ? "its size field is below "
						 "ABI 1's (GPUTRACE_INIT it)" : "NULL");
	if (!c.name || !c.name[0])
		return builder__malformed(b, "counter", NULL, -EINVAL, "no name");
	row = builder__row(b, c.row);
	if (!row && c.row < 0)
		return -EINVAL; /* what device() returned, said there */
	if (!row || row->queue || !c.nvalues)
		return builder__malformed(b, "counter", c.name, -EINVAL,
					  !row ? "its row is not one the plug-in made"
					  : row->queue ? "a counter on a queue (counters go on devices)"
						       : "no values");
	if (!(b->kinds & GPUTRACE_KIND_COUNTER))
		return 1;
	rc = builder__times(b, c.name, c.time_ns, c.time_ns);
	if (rc)
		return rc;
	n = builder__args(c.values, c.nvalues, true, values, &why);
	if (n < 0)
		return builder__malformed(b, "counter", c.name, n, why);
	ev.type = GT_EV_COUNTER;
	ev.track = row->track;
	ev.start_ns = ev.end_ns = c.time_ns;
	ev.name = builder__str(c.name);
	ev.cat = GT_S_CAT_COUNTER;
	return gt_emit(&ev, values, (unsigned)n);
}

static void builder_log(gputrace_builder *handle, int level, const char *msg)
{
	struct gputrace_builder *b = builder__get(handle);
	char line[512];
	size_t i;

	if (!b || !msg)
		return;
	/* One line, whatever the plug-in sends: a newline is a space, another
	 * control byte (a terminal's escape sequence) a '?' */
	for (i = 0; msg[i] && i < sizeof(line) - 1; i++) {
		unsigned char c = (unsigned char)msg[i];

		line[i] = c == '\n' || c == '\r' ? ' ' : c < ' ' || c == 0x7f ? '?' : msg[i];
	}
	/* cut short: at the end of a character, not in one (half a character
	 * was a byte no UTF-8 reader of the log takes) */
	if (msg[i])
		i = gt_utf8_trim_end(line, i);
	line[i] = '\0';
	if (level < GT_LOG_ERROR)
		level = GT_LOG_ERROR;
	if (level > GT_LOG_DEBUG)
		level = GT_LOG_DEBUG;
	gt_log(level, "plug-in %s: %s", b->name, line);
}

const struct gputrace_builder_api builder_api = {
	.size = sizeof(struct gputrace_builder_api),
	.abi_version = GPUTRACE_PLUGIN_ABI_VERSION,
	.now_ns = builder_now_ns,
	.device = builder_device,
	.queue = builder_queue,
	.span = builder_span,
	.instant = builder_instant,
	.counter = builder_counter,
	.log = builder_log,
};

void builder__open(struct gputrace_builder *b, const char *name, uint32_t kinds, unsigned index)
{
	char cat[PLUGIN_NAME_MAX + 16];

	pthread_mutex_init(&b->rows_lock, NULL);
	atomic_store_explicit(&b->nrows, 0, memory_order_relaxed);
	b->limits_said = 0;
	atomic_store(&b->times_said, false);
	atomic_store(&b->corr_said, false);
	atomic_store(&b->bad_said, false);
	b->opened_ns = builder_now_ns();
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->kinds = kinds;
	b->corr_ns = GT_CORR_NS_PLUGIN(index);
	/* Host calls of a vendor's runtime get the vendor's own category, as
	 * cuda_runtime and ze_api do. */
	snprintf(cat, sizeof(cat), "%s_runtime", name);
	b->kind_cat[GT_KIND_BIT_RUNTIME] = gt_str_intern(cat);
	snprintf(cat, sizeof(cat), "%s_driver", name);
	b->kind_cat[GT_KIND_BIT_DRIVER] = gt_str_intern(cat);
	b->kind_cat[GT_KIND_BIT_KERNEL] = GT_S_CAT_KERNEL;
	b->kind_cat[GT_KIND_BIT_MEMCPY] = GT_S_CAT_GPU_MEMCPY;
	b->kind_cat[GT_KIND_BIT_MEMSET] = GT_S_CAT_GPU_MEMSET;
	b->kind_cat[GT_KIND_BIT_SYNC] = GT_S_CAT_GPU_SYNC;
	b->kind_cat[GT_KIND_BIT_ANNOTATION] = GT_S_CAT_USER_ANNOTATION;
	b->kind_cat[GT_KIND_BIT_COUNTER] = GT_S_CAT_COUNTER;
	b->kind_cat[GT_KIND_BIT_OVERHEAD] = GT_S_CAT_OVERHEAD;
	atomic_store_explicit(&b->open, true, memory_order_release);
}
