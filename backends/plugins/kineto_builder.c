// SPDX-License-Identifier: MIT
/*
 * Kineto's trace builder (KinetoPlugin_TraceBuilder), as a profiler's
 * processEvents gets it: addEvent, then the "last event" calls that name,
 * link and annotate it, and the device and resource rows. Each event goes
 * out (gt_emit, the path of every other event) when the next one is added
 * or processEvents returns, so a batch of any size streams through a
 * bounded amount of memory.
 *
 * What becomes of an event (kineto_types in kineto.c): host types are spans
 * (instants) on the host thread threadId; device types are spans on the row
 * of (deviceId, resourceId) under the device's process row, named by
 * addDeviceInfo / addResourceInfo (before or after the events: a row used
 * before it is named gets its name later); GPU_PM_COUNTER is a counter
 * sample on the device's row, one series per numeric metadata value; types
 * either side (overhead, sync, ...) are on the host when processId is this
 * process. Times are UTC (utc.c). The category is Kineto's own name of the
 * type, as Kineto writes it.
 *
 * Metadata values are JSON: numbers become numbers, plain strings strings,
 * other valid JSON (lists, objects, true, false, null, escaped strings) is
 * copied as it is, and a value that is not valid JSON is kept as a string.
 * "External id" names the gputrace call that caused device work (the id
 * gputrace pushed): an arrow joins them.
 *
 * Flows: the event with isStartPoint and the events with the same flow id
 * and type are joined by the writer's arrows (cat "ac2g" or "fwdbwd"),
 * bound as every arrow of the trace is. An arrow starts at a host span; a
 * flow of a device event's start or of an instant is counted, not drawn.
 *
 * Every call copies what it is given before it returns, takes the profiler's
 * lock (calls from any thread are safe), and returns 0 or -1 as Kineto's
 * builder does: -1 for a NULL pointer, a struct smaller than the ABI's, a
 * "last event" call before any addEvent, and an event that cannot be placed
 * in time; the first refusal of a profiler has one stderr line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/plugins/kineto_internal.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/utf8.h"

#define METADATA_MAX 4096 /* longer values are cut, and kept as strings */

/* The profiler behind a handle, if the handle is one of ours. */
static struct kineto_prof *prof_of(KinetoPlugin_TraceBuilderHandle *handle)
{
	uintptr_t h = (uintptr_t)handle, base = (uintptr_t)&kineto_profs[0];
	size_t i = (h - base) / sizeof(kineto_profs[0]);

	if (h < base || i >= PLUGINS_MAX || handle != (void *)&kineto_profs[i])
		return NULL;
	return &kineto_profs[i];
}

__attribute__((format(printf, 3, 4))) static int refuse(struct kineto_prof *k, const char *call,
							const char *fmt, ...);

/* Locked and open for calls, or NULL (and unlocked). call names the call
 * for the line of a refusal: a call after processEvents returned (a
 * collector thread of the profiler's still handing events over) is one, and
 * had no line, its events gone without a word. */
static struct kineto_prof *enter(KinetoPlugin_TraceBuilderHandle *handle, const char *call)
{
	struct kineto_prof *k = prof_of(handle);

	if (!k || !k->p)
		return NULL;
	pthread_mutex_lock(&k->lock);
	if (k->open && !atomic_load(&k->failed) && !atomic_load(&k->p->hung))
		return k;
	/* a profiler that failed or was given up on had its line */
	if (!k->open && !atomic_load(&k->failed) && !atomic_load(&k->p->hung) &&
	    !atomic_load(&k->p->reported))
		refuse(k, call, "called after profilerProcessEvents() returned (the builder is "
				"valid during that call only)");
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

static int leave(struct kineto_prof *k, int rc)
{
	pthread_mutex_unlock(&k->lock);
	return rc;
}

/* A refused call: -1, and the profiler's first one has a line. */
__attribute__((format(printf, 3, 4))) static int refuse(struct kineto_prof *k, const char *call,
							const char *fmt, ...)
{
	char why[160];
	va_list ap;

	k->refused++;
	if (!k->warned) {
		k->warned = true;
		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
		pr_warn("plug-in %s (%s): %s() refused: %s (the first refusal; the others are "
			"counted)", k->p->path, k->name, call, why);
	}
	return -1;
}

/* Copy a struct the plug-in sized, at least min bytes: fields past its size
 * read as zero, past ours are not read. false (refused, with the reason)
 * for NULL or a smaller struct. */
static bool take(struct kineto_prof *k, const char *call, const char *type, void *dst,
		 size_t dst_size, const void *src, size_t min)
{
	size_t size;

	if (!src) {
		refuse(k, call, "no %s (NULL)", type);
		return false;
	}
	memcpy(&size, src, sizeof(size));
	if (size < min) {
		refuse(k, call, "a %s of %zu bytes, %zu expected", type, size, min);
		return false;
	}
	memset(dst, 0, dst_size);
	memcpy(dst, src, size < dst_size ? size : dst_size);
	return true;
}

#define TAKE(k, call, type, dst, src, min) take(k, call, #type, dst, sizeof(*(dst)), src, min)

/* ---- rows ---- */

/* A row's name, cut at a character's end (a byte count could split one, and
 * the trace then showed its first byte as another character). */
__attribute__((format(printf, 2, 3))) static void row_name(char *out, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, KINETO_ROW_NAME_MAX, fmt, ap);
	va_end(ap);
	if (n >= KINETO_ROW_NAME_MAX)
		out[gt_utf8_trim_end(out, KINETO_ROW_NAME_MAX - 1)] = '\0';
}

/* What is read of a plug-in's row name: more is cut anyway, and a name with no
 * NUL (a buffer's bytes) was read past its end, to a fault (events' strings
 * are read to 4097 bytes at most, builder.c) */
#define ROW_READ KINETO_ROW_NAME_MAX

static struct kineto_device *device_of(struct kineto_prof *k, int64_t id)
{
	for (unsigned i = 0; i < k->ndevices; i++)
		if (k->devices[i].id == id)
			return &k->devices[i];
	if (k->ndevices == KINETO_DEVICES_MAX)
		return NULL;
	struct kineto_device *d = &k->devices[k->ndevices++];

	*d = (struct kineto_device){ .id = id };
	row_name(d->name, "%s device %" PRId64, k->name, id);
	return d;
}

/* The gputrace device of a plug-in's device id (0: no room). */
static uint32_t device_row(struct kineto_prof *k, int64_t id)
{
	struct kineto_device *d = device_of(k, id);

	if (d && !d->row)
		d->row = gt_device_row(d->name);
	return d ? d->row : 0;
}

static struct kineto_resource *resource_of(struct kineto_prof *k, int32_t device, int32_t id)
{
	for (unsigned i = 0; i < k->nresources; i++)
		if (k->resources[i].device == device && k->resources[i].id == id)
			return &k->resources[i];
	if (k->nresources == KINETO_RESOURCES_MAX)
		return NULL;
	struct kineto_resource *r = &k->resources[k->nresources++];

	*r = (struct kineto_resource){ .device = device, .id = id, .order = id };
	row_name(r->name, "stream %" PRId32, id);
	return r;
}

static uint32_t resource_track(struct kineto_prof *k, int32_t device, int32_t id)
{
	struct kineto_resource *r = resource_of(k, device, id);
	uint32_t dev;

	if (!r)
		return 0;
	if (!r->track && (dev = device_row(k, device)))
		r->track = gt_queue_row(dev, r->name, r->order);
	return r->track;
}

/* Names of rows: "M" events of the process itself are gputrace's own. */
static bool is_this_process(int64_t id)
{
	return id == (int64_t)getpid();
}

static int add_device_info(KinetoPlugin_TraceBuilderHandle *handle,
			   const struct KinetoPlugin_ProfileDeviceInfo *in)
{
	struct kineto_prof *k = enter(handle, "addDeviceInfo");
	struct KinetoPlugin_ProfileDeviceInfo info;
	struct kineto_device *d;

	if (!k)
		return -1;
	if (!TAKE(k, "addDeviceInfo", KinetoPlugin_ProfileDeviceInfo, &info, in,
		  KINETO_PLUGIN_PROFILE_DEVICE_INFO_UNPADDED_STRUCT_SIZE))
		return leave(k, -1);
	if (is_this_process(info.deviceId))
		return leave(k, 0);
	d = device_of(k, info.deviceId);
	if (!d)
		return leave(k, 0); /* no row: its events are counted, a name is no event */
	if (info.pName && info.pName[0] && info.pLabel && info.pLabel[0])
		row_name(d->name, "%.*s: %.*s", ROW_READ, info.pName, ROW_READ, info.pLabel);
	else if (info.pName && info.pName[0])
		row_name(d->name, "%.*s", ROW_READ, info.pName);
	else
		row_name(d->name, "%s device %" PRId64, k->name, info.deviceId);
	d->named = true;
	if (d->row)
		gt_device_rename(d->row, d->name);
	return leave(k, 0);
}

static int add_resource_info(KinetoPlugin_TraceBuilderHandle *handle,
			     const struct KinetoPlugin_ProfileResourceInfo *in)
{
	struct kineto_prof *k = enter(handle, "addResourceInfo");
	struct KinetoPlugin_ProfileResourceInfo info;
	struct kineto_resource *r;

	if (!k)
		return -1;
	if (!TAKE(k, "addResourceInfo", KinetoPlugin_ProfileResourceInfo, &info, in,
		  KINETO_PLUGIN_PROFILE_RESOURCE_INFO_UNPADDED_STRUCT_SIZE))
		return leave(k, -1);
	/* a thread of this process: gputrace names it from the system */
	if (is_this_process(info.deviceId))
		return leave(k, 0);
	r = resource_of(k, info.deviceId, info.resourceId);
	if (!r)
		return leave(k, 0); /* as a device's name past the rows */
	if (info.pName && info.pName[0])
		row_name(r->name, "%.*s", ROW_READ, info.pName);
	r->order = info.displayOrder;
	r->named = true;
	if (r->track)
		gt_queue_rename(r->track, r->name, r->order);
	return leave(k, 0);
}

/* ---- the last event, out ---- */

/* Flow ids are a batch's: the key keeps ids of different batches and types apart. */
static uint64_t flow_key(const struct kineto_prof *k, const struct kineto_last *l)
{
	return gt_corr_foreign(GT_CORR_NS_PLUGIN((unsigned)(k->p - plugins)),
			       (uint64_t)(k->batch & 0x3fff) << 34 | (uint64_t)l->flow_type << 32 |
				       l->flow_id);
}

static bool numeric(const struct gt_arg *a)
{
	return a->type == GT_ARG_I64 || a->type == GT_ARG_U64 || a->type == GT_ARG_F64;
}

static void emit_last(struct kineto_prof *k)
{
	struct kineto_last *l = &k->last;
	const struct kineto_type *t = &kineto_types[l->type];
	enum kineto_place place = t->place;
	struct gt_event ev = { .name = l->name, .cat = builder__str(t->cat) };
	bool fwdbwd = l->flow_type == KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_FWD_BWD;
	int64_t dur;
	unsigned n = l->nargs;

	if (!l->have || l->skip) {
		l->have = false;
		return;
	}
	l->have = false;
	/* none when negative, as Kineto; in trace ns (a slewed wall clock
	 * lengthens or shortens the UTC one) */
	if (__builtin_sub_overflow(l->end_utc, l->start_utc, &dur) || dur < 0)
		dur = 0;
	ev.start_ns = l->start_ns;
	ev.end_ns = l->start_ns + (uint64_t)gt_round((double)dur * l->rate);
	if (place == K_EITHER)
		place = is_this_process(l->device) ? K_HOST : K_DEVICE;
	switch (place) {
	case K_HOST:
	case K_HOST_INSTANT:
		ev.type = place == K_HOST ? GT_EV_HOST_SPAN : GT_EV_INSTANT;
		ev.track = l->resource > 0 ? (uint32_t)l->resource : (uint32_t)getpid();
		ev.flags |= GT_EVF_HANDED;
		/* a user annotation (record_function) is a range of its thread,
		 * handed over whole; operators (cpu_op) are not */
		if (place == K_HOST && !strcmp(t->cat, "user_annotation"))
			ev.flags |= GT_EVF_RANGE | GT_EVF_TIMED;
		if (place == K_HOST_INSTANT) {
			ev.end_ns = ev.start_ns;
			/* an arrow binds to a slice: an instant has none (Perfetto
			 * drops it), so its flow is counted, not drawn */
			if (l->flow_type)
				k->flows_dropped++;
		} else if (l->flow_type && l->flow_start) {
			ev.corr = flow_key(k, l);
			ev.flags |= GT_EVF_LAUNCH;
		} else if (l->flow_type) {
			ev.corr2 = flow_key(k, l);
			ev.flags |= GT_EVF_FLOW_END | (fwdbwd ? GT_EVF_FWDBWD : 0);
		}
		break;
	case K_DEVICE:
		ev.type = GT_EV_DEVICE_SPAN;
		ev.track = resource_track(k, l->device, l->resource);
		if (l->flow_type && !l->flow_start) {
			ev.corr = flow_key(k, l);
			ev.flags |= fwdbwd ? GT_EVF_FWDBWD : 0;
		} else if (l->flow_type) {
			k->flows_dropped++; /* the writer's arrows start at host calls */
		}
		if (l->external) {
			if (ev.corr)
				ev.corr2 = l->external;
			else
				ev.corr = l->external;
		}
		break;
	case K_COUNTER:
		ev.type = GT_EV_COUNTER;
		ev.track = gt_device_track(device_row(k, l->device));
		ev.cat = GT_S_CAT_COUNTER;
		ev.end_ns = ev.start_ns;
		n = 0;
		for (unsigned i = 0; i < l->nargs; i++)
			if (numeric(&l->args[i]))
				l->args[n++] = l->args[i];
		if (!n)
			return; /* a sample of nothing */
		break;
	default:
		return;
	}
	if (!ev.track) {
		k->rows_full++;
		gt_lost_add(GT_S_LOST_PLUGIN, 1);
		return;
	}
	/* the batch streams out: room is made in this thread's ring as it goes
	 * (not when the drain waits for this call: gt_emit_wait_room knows) */
	gt_emit_wait_room(1000);
	gt_emit(&ev, l->args, n);
}

/* ---- the builder's calls ---- */

/* Over an hour from now, start or end (INT64_MAX: the trace stretched over
 * thousands of years and its sums overflowed); placed, start_ns is ours. */
static bool utc_far_ahead(const struct kineto_last *l)
{
	uint64_t ahead = gt_clock_ns() + 3600ull * 1000000000ull;
	int64_t dur;

	if (l->start_ns > ahead)
		return true;
	if (l->end_utc <= l->start_utc)
		return false; /* no duration, as Kineto draws it */
	return __builtin_sub_overflow(l->end_utc, l->start_utc, &dur) ||
	       (uint64_t)dur > ahead - l->start_ns;
}

static int add_event(KinetoPlugin_TraceBuilderHandle *handle,
		     const struct KinetoPlugin_ProfileEvent *in)
{
	struct kineto_prof *k = enter(handle, "addEvent");
	struct KinetoPlugin_ProfileEvent e;
	struct kineto_last *l;

	if (!k) {
		k = prof_of(handle);
		if (k && k->p && atomic_load(&k->p->hung))
			gt_lost_add(GT_S_LOST_PLUGIN, 1); /* given up on: cannot know */
		return -1;
	}
	plugin__progress(k->p);
	emit_last(k);
	l = &k->last;
	if (!TAKE(k, "addEvent", KinetoPlugin_ProfileEvent, &e, in,
		  KINETO_PLUGIN_PROFILE_EVENT_UNPADDED_STRUCT_SIZE)) {
		l->have = l->skip = true; /* what follows describes nothing */
		return leave(k, -1);
	}
	*l = (struct kineto_last){
		.have = true,
		.type = kineto__type((int)e.eventType, k->rev1),
		.start_utc = e.startTimeUtcNs,
		.end_utc = e.endTimeUtcNs,
		.device = e.deviceId,
		.resource = e.resourceId,
		.name = GT_S_EMPTY,
	};
	l->skip = !(gt_cfg.kinds & kineto_types[l->type].kind);
	/* placed now, so the return code tells the profiler its event is dropped */
	if (!l->skip && utc__to_clock(l->start_utc, &l->start_ns, &l->rate)) {
		l->skip = true; /* what follows describes nothing */
		return leave(k, refuse(k, "addEvent",
				       "a time before this machine started (UTC %" PRId64 " ns)",
				       l->start_utc));
	}
	if (!l->skip && utc_far_ahead(l)) {
		l->skip = true;
		return leave(k, refuse(k, "addEvent",
				       "a time over an hour from now (UTC %" PRId64 " to %" PRId64
				       " ns)", l->start_utc, l->end_utc));
	}
	return leave(k, 0);
}

/* The last event's calls: -1 before any addEvent, as Kineto's. */
static struct kineto_last *last_of(struct kineto_prof *k)
{
	return k->last.have ? &k->last : NULL;
}

static int set_last_event_name(KinetoPlugin_TraceBuilderHandle *handle, const char *name)
{
	struct kineto_prof *k = enter(handle, "setLastEventName");
	struct kineto_last *l;

	if (!k)
		return -1;
	if (!name)
		return leave(k, refuse(k, "setLastEventName", "no name (NULL)"));
	if (!(l = last_of(k)))
		return leave(k, refuse(k, "setLastEventName", "no event added yet"));
	if (!l->skip)
		l->name = builder__str(name);
	return leave(k, 0);
}

static int set_last_event_flow(KinetoPlugin_TraceBuilderHandle *handle,
			       const struct KinetoPlugin_ProfileEventFlow *in)
{
	struct kineto_prof *k = enter(handle, "setLastEventFlow");
	struct KinetoPlugin_ProfileEventFlow f;
	struct kineto_last *l;

	if (!k)
		return -1;
	if (!TAKE(k, "setLastEventFlow", KinetoPlugin_ProfileEventFlow, &f, in,
		  KINETO_PLUGIN_PROFILE_EVENT_FLOW_UNPADDED_STRUCT_SIZE))
		return leave(k, -1);
	if (!(l = last_of(k)))
		return leave(k, refuse(k, "setLastEventFlow", "no event added yet"));
	/* an unknown type or id 0 joins nothing, as in Kineto's output */
	if ((f.flowType == KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_FWD_BWD ||
	     f.flowType == KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_ASYNC_CPU_GPU) &&
	    f.flowId) {
		unsigned char start;

		memcpy(&start, &f.isStartPoint, 1); /* any non-zero byte is true */
		l->flow_type = (int)f.flowType;
		l->flow_id = f.flowId;
		l->flow_start = start != 0;
	}
	return leave(k, 0);
}

/* A metadata value as an arg: numbers, plain strings, other JSON as it is,
 * and what is not JSON as a string. */
static void metadata_arg(struct gt_arg *a, const char *value)
{
	size_t n = strnlen(value, METADATA_MAX + 1), start = 0, len = 0;
	enum json_kind kind = n > METADATA_MAX ? JSON_INVALID : json__check(value, n, &start, &len);
	const char *v = value + start;
	char num[64];

	if (n > METADATA_MAX)
		n = gt_utf8_trim_end(value, METADATA_MAX); /* a character whole or not at all */
	switch (kind) {
	case JSON_INTEGER:
	case JSON_NUMBER:
		if (len < sizeof(num)) {
			char *end;

			memcpy(num, v, len);
			num[len] = '\0';
			errno = 0;
			if (kind == JSON_INTEGER && num[0] == '-') {
				a->type = GT_ARG_I64;
				a->v.i = strtoll(num, &end, 10);
			} else if (kind == JSON_INTEGER) {
				a->type = GT_ARG_U64;
				a->v.u = strtoull(num, &end, 10);
				if (!errno && a->v.u <= INT64_MAX)
					a->type = GT_ARG_I64;
			}
			if (kind == JSON_INTEGER) {
				if (!errno)
					return;
				break; /* beyond 64 bits: its digits as written */
			}
			a->type = GT_ARG_F64;
			a->v.f = strtod(num, &end);
			if (isfinite(a->v.f))
				return;
		}
		break; /* beyond a double: as written */
	case JSON_STRING:
		a->type = GT_ARG_STR;
		a->v.u = builder__str_n(v + 1, len - 2);
		return;
	case JSON_INVALID:
		a->type = GT_ARG_STR; /* quoted by the writer, whatever it holds */
		a->v.u = builder__str_n(value, n);
		return;
	default:
		break;
	}
	a->type = GT_ARG_JSON;
	a->v.u = builder__str_n(v, len);
}

static int add_last_event_metadata(KinetoPlugin_TraceBuilderHandle *handle, const char *key,
				   const char *value)
{
	struct kineto_prof *k = enter(handle, "addLastEventMetadata");
	struct kineto_last *l;
	struct gt_arg *a;

	if (!k)
		return -1;
	if (!key || !value)
		return leave(k, refuse(k, "addLastEventMetadata", "no %s (NULL)",
				       key ? "value" : "key"));
	if (!(l = last_of(k)))
		return leave(k, refuse(k, "addLastEventMetadata", "no event added yet"));
	if (l->skip)
		return leave(k, 0);
	if (l->nargs == GT_ARGS_MAX) {
		k->metadata_dropped++;
		return leave(k, 0);
	}
	a = &l->args[l->nargs++];
	a->key = builder__arg_key(key);
	metadata_arg(a, value);
	/* Kineto's name for the id of the host op that caused device work */
	if (!strcmp(key, "External id") && (a->type == GT_ARG_I64 || a->type == GT_ARG_U64) &&
	    a->v.i > 0)
		l->external = a->v.u;
	return leave(k, 0);
}

/* ---- open, close ---- */

void kineto__given_up(struct plugin *p)
{
	for (unsigned i = 0; i < PLUGINS_MAX; i++) {
		struct kineto_prof *k = &kineto_profs[i];

		if (k->p != p)
			continue;
		/* the event it was describing when it hung is never written (its
		 * description may be half done): counted, as what it hands over
		 * later is; busy: its thread is writing it out now */
		if (!pthread_mutex_trylock(&k->lock)) {
			if (k->open && k->last.have && !k->last.skip)
				gt_lost_add(GT_S_LOST_PLUGIN, 1);
			k->last.have = false;
			pthread_mutex_unlock(&k->lock);
		}
	}
}

void kbuilder__init(struct kineto_prof *k)
{
	KinetoPlugin_TraceBuilderHandle *handle = (KinetoPlugin_TraceBuilderHandle *)k;

	pthread_mutex_init(&k->lock, NULL);
	k->api = (struct KinetoPlugin_TraceBuilder){
		KINETO_PLUGIN_TRACE_BUILDER_UNPADDED_STRUCT_SIZE, handle, add_event,
		set_last_event_name, set_last_event_flow, add_last_event_metadata,
		add_device_info, add_resource_info,
	};
	k->api_rev1 = (struct kineto_builder_rev1){
		sizeof(struct kineto_builder_rev1), handle, add_event, set_last_event_name,
		set_last_event_flow, add_last_event_metadata, add_resource_info,
	};
}

const void *kbuilder__open(struct kineto_prof *k)
{
	pthread_mutex_lock(&k->lock);
	k->open = true;
	k->batch++;
	k->last.have = false;
	pthread_mutex_unlock(&k->lock);
	return k->rev1 ? (const void *)&k->api_rev1 : (const void *)&k->api;
}

void kbuilder__close(struct kineto_prof *k)
{
	pthread_mutex_lock(&k->lock);
	emit_last(k);
	k->open = false;
	pthread_mutex_unlock(&k->lock);
}
