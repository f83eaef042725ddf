// SPDX-License-Identifier: MIT
/*
 * ITT without relinking: gputrace is an ITT collector. A program's static
 * ITT part (Intel's libittnotify.a, linked into oneDNN, the SYCL runtime,
 * oneCCL, PyTorch XPU, ...) reads INTEL_LIBITTNOTIFY64 at its first ITT
 * call, dlopen()s that library and asks which protocol it speaks:
 *  - version 2: it calls our __itt_api_init(global, groups), and we fill the
 *    function pointers of its table (global->api_list_ptr) by name;
 *  - version 1 (static parts that look for __itt_api_version only): it
 *    fills each pointer with dlsym("__itt_" name) itself.
 * One table below serves both: every function is exported under its ITT
 * name and listed for __itt_api_init.
 *
 * Tasks are user ranges of the calling thread (inject/ranges.h), overlapped
 * tasks and regions too (ended by id, in any order), frames are ranges of
 * the process; all are user_annotation spans with args.domain. Markers are
 * instants, counters counter tracks on the process's row.
 *
 * Domains and string handles may come from the static part (created before
 * the collector was loaded) or from us: both have the published layout,
 * and names are read from it (through a cache: no lock after the first).
 *
 * __itt_resume/__itt_pause (ITT's collection control) open and close a
 * capture window under --capture-range cudaProfilerApi, as
 * cudaProfilerStart/Stop do: Level Zero has no marker API of its own. They
 * are the collector's only functions that work with annotations off.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/itt/itt.h"
#include "inject/capture.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/cstr.h"
#include "inject/injection.h"
#include "inject/ranges.h"
#include "inject/shim.h"
#include "inject/tables.h"

#define ITT_API GT_EXPORT

/* ---- handles: fixed tables, calloc()ed past them (creation is rare) ---- */

#define DOMAINS_MAX 1024
#define STRINGS_MAX 16384
GT_TABLE(struct itt_domain, domains, DOMAINS_MAX);
GT_TABLE(struct itt_string_handle, strings, STRINGS_MAX);
static _Atomic unsigned ndomains, nstrings;
static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;

/* Handles the static part made before we were loaded carry no string id:
 * their names are cached by handle address (the handles live as long as
 * the program), lock-free. An entry is valid when its address reads the
 * same before and after its id (writers clear it first). */
#define NAME_CACHE 1024
struct foreign_name_entry {
	_Atomic uintptr_t handle;
	_Atomic uint32_t id;
};
GT_TABLE(struct foreign_name_entry, foreign_names, NAME_CACHE);

static uint32_t foreign_name(const void *h, const char *s)
{
	uintptr_t key = (uintptr_t)h;
	unsigned slot = (unsigned)((key >> 4) * 0x9e3779b1u >> 22) % NAME_CACHE;
	uint32_t id;

	if (atomic_load_explicit(&foreign_names[slot].handle, memory_order_acquire) == key) {
		id = atomic_load_explicit(&foreign_names[slot].id, memory_order_acquire);
		if (atomic_load_explicit(&foreign_names[slot].handle, memory_order_acquire) == key)
			return id;
	}
	id = gt_range_str(s);
	atomic_store_explicit(&foreign_names[slot].handle, 0, memory_order_release);
	atomic_store_explicit(&foreign_names[slot].id, id, memory_order_release);
	atomic_store_explicit(&foreign_names[slot].handle, key, memory_order_release);
	return id;
}

/* extra1 of our own handles holds the name's string id (ours to use: the
 * field is reserved to the runtime, and we are the runtime). */
static uint32_t domain_name(const struct itt_domain *d)
{
	if (!d)
		return GT_S_EMPTY;
	return d->extra1 > 0 ? (uint32_t)d->extra1 : foreign_name(d, d->nameA);
}

static uint32_t string_name(const struct itt_string_handle *h)
{
	if (!h)
		return GT_S_EMPTY;
	return h->extra1 > 0 ? (uint32_t)h->extra1 : foreign_name(h, h->strA);
}

static struct itt_domain *domain_create(const char *name)
{
	struct itt_domain *d = NULL;
	uint32_t id;

	if (!name)
		return NULL;
	id = gt_range_str(name);
	pthread_mutex_lock(&create_lock);
	unsigned n = atomic_load(&ndomains);
	for (unsigned i = 0; i < n && i < DOMAINS_MAX; i++)
		if ((uint32_t)domains[i].extra1 == id) {
			d = &domains[i];
			goto out;
		}
	d = n < DOMAINS_MAX ? &domains[n] : calloc(1, sizeof(*d));
	if (d) {
		d->nameA = gt_str_get(id, NULL);
		d->extra1 = (int)id;
		d->flags = 1; /* the header's macros call us only while non-zero */
		if (n < DOMAINS_MAX)
			atomic_store(&ndomains, n + 1);
	}
out:
	pthread_mutex_unlock(&create_lock);
	return d;
}

/*
 * Handles by name, for the handles' lookup: open addressing on the name's id,
 * written under create_lock, read without it. Programs create a handle at every
 * range (PyTorch's itt.range_push does): a scan of the handles under the lock
 * cost each of them, and a name first seen past the table's 16384 got a new
 * handle (calloc) at every call, 20 us and 40 bytes each.
 */
#define STRING_INDEX (4 * STRINGS_MAX) /* a power of two */
GT_TABLE(struct itt_string_handle *_Atomic, string_index, STRING_INDEX);

static struct itt_string_handle *string_find(uint32_t id, unsigned *empty)
{
	unsigned home = (id * 0x9e3779b1u) % STRING_INDEX;

	for (unsigned i = 0; i < STRING_INDEX; i++) {
		unsigned slot = (home + i) % STRING_INDEX;
		struct itt_string_handle *h =
			atomic_load_explicit(&string_index[slot], memory_order_acquire);

		if (!h) {
			*empty = slot;
			return NULL;
		}
		if ((uint32_t)h->extra1 == id)
			return h;
	}
	*empty = STRING_INDEX; /* full: more distinct names than it holds */
	return NULL;
}

static struct itt_string_handle *string_handle_create(const char *name)
{
	struct itt_string_handle *h;
	unsigned empty;
	uint32_t id;

	if (!name)
		return NULL;
	id = gt_range_str(name);
	/* handles of one name are one handle, as the static part's are */
	h = string_find(id, &empty);
	if (h)
		return h;
	pthread_mutex_lock(&create_lock);
	h = string_find(id, &empty); /* another thread's, made meanwhile */
	if (h)
		goto out;
	unsigned n = atomic_load(&nstrings);
	h = n < STRINGS_MAX ? &strings[n] : calloc(1, sizeof(*h));
	if (h) {
		h->strA = gt_str_get(id, NULL);
		h->extra1 = (int)id;
		if (n < STRINGS_MAX)
			atomic_store(&nstrings, n + 1);
		if (empty < STRING_INDEX)
			atomic_store_explicit(&string_index[empty], h, memory_order_release);
	}
out:
	pthread_mutex_unlock(&create_lock);
	return h;
}

/* ---- tasks on the calling thread ---- */

static struct gt_arg domain_arg(const struct itt_domain *d)
{
	return (struct gt_arg){ .key = GT_S_ARG_DOMAIN, .type = GT_ARG_STR, .v.u = domain_name(d) };
}

static void task_begin(const struct itt_domain *d, struct itt_id id, struct itt_id parent,
		       struct itt_string_handle *name)
{
	int nesting;

	gt_range_push((uintptr_t)d, string_name(name), 0, &nesting);
}

/* A function's task: named by its symbol (dladdr), else its address. */
static uint32_t fn_name(void *fn)
{
	Dl_info info;
	char buf[32];

	if (dladdr(fn, &info) && info.dli_sname)
		return gt_range_str(info.dli_sname);
	snprintf(buf, sizeof(buf), "%p", fn);
	return gt_range_str(buf);
}

static void task_begin_fn(const struct itt_domain *d, struct itt_id id, struct itt_id parent,
			  void *fn)
{
	int nesting;

	gt_range_push((uintptr_t)d, fn_name(fn), 0, &nesting);
}

static void task_end(const struct itt_domain *d)
{
	struct gt_range_frame f;
	struct gt_arg arg = domain_arg(d);
	uint16_t end_flags;
	int nesting;

	if (gt_range_pop((uintptr_t)d, &f, &nesting, &end_flags) >= 0 && f.name)
		gt_range_end(f.id, f.start_ns, gt_clock_ns(), f.name, 0, end_flags, &arg, 1);
}

/* The _ex calls name a clock domain of the program's: their timestamps are
 * not on any clock we can convert, so they are taken at the call. */
static void task_begin_ex(const struct itt_domain *d, void *clock, unsigned long long ts,
			  struct itt_id id, struct itt_id parent, struct itt_string_handle *name)
{
	task_begin(d, id, parent, name);
}

static void task_begin_fn_ex(const struct itt_domain *d, void *clock, unsigned long long ts,
			     struct itt_id id, struct itt_id parent, void *fn)
{
	task_begin_fn(d, id, parent, fn);
}

static void task_end_ex(const struct itt_domain *d, void *clock, unsigned long long ts)
{
	task_end(d);
}

/* ---- ranges ended by id: overlapped tasks, regions, frames ---- */

/*
 * Open addressing from the key's home slot, linear probing over the whole
 * table: up to OPEN_MAX ranges are open at once, whatever their ids (a probe
 * of 16 slots once refused some at 3000 open). An ended range leaves a
 * tombstone (SLOT_ENDED), never an empty slot again, so an end may stop at
 * the first empty one: every slot between a key's home and its own was
 * taken when it was placed.
 */
#define OPEN_MAX   4096
#define SLOT_EMPTY 0
#define SLOT_ENDED 1
#define SLOT_BUSY  (~0ull) /* being written */
struct open_range {
	_Atomic uint64_t key;
	uint64_t id, start;
	uint32_t name, tid;
	const struct itt_domain *domain;
	uint16_t flags;
};
GT_TABLE(struct open_range, open_ranges, OPEN_MAX);
static _Atomic unsigned ranges_open; /* slots taken */
/* A range was ever opened here: else a fork child has none to forget, and
 * leaves the table's pages untouched (a shell forks for every command). */
static _Atomic bool ranges_used GT_STARTUP_STATE;

enum { KIND_TASK = 1, KIND_REGION, KIND_FRAME };

static uint64_t open_key(int kind, const struct itt_domain *d, const struct itt_id *id)
{
	uint64_t h = 0x9e3779b97f4a7c15ull * (uint64_t)kind ^ (uint64_t)(uintptr_t)d;

	if (id)
		h = ((h ^ id->d1) * 0xff51afd7ed558ccdull ^ id->d2) * 0xc4ceb9fe1a85ec53ull ^ id->d3;
	h *= 0x9e3779b97f4a7c15ull;
	return h > SLOT_ENDED && h != SLOT_BUSY ? h : 2;
}

/* a taken slot is passed with a load, not a failed exchange */
static bool slot_claim(struct open_range *r)
{
	uint64_t expect = atomic_load_explicit(&r->key, memory_order_relaxed);

	return (expect == SLOT_EMPTY || expect == SLOT_ENDED) &&
	       atomic_compare_exchange_strong(&r->key, &expect, SLOT_BUSY);
}

/* The farthest from its home slot a range was placed: an open one of a key lies no
 * farther from the key's home (a bound, not the probe to the first empty slot: once
 * every slot was used, the ended ones' tombstones would make that all 4096). */
static _Atomic unsigned probe_max;

/* A range of this key is open (the probe open_end makes, as far as any lies). */
static bool open_now(uint64_t key)
{
	unsigned n = atomic_load_explicit(&probe_max, memory_order_relaxed);

	for (unsigned i = 0; i <= n && i < OPEN_MAX; i++) {
		uint64_t k = atomic_load_explicit(&open_ranges[(key + i) % OPEN_MAX].key,
						  memory_order_acquire);

		if (k == SLOT_EMPTY)
			return false;
		if (k == key)
			return true;
	}
	return false;
}

static void open_begin(int kind, const struct itt_domain *d, const struct itt_id *id,
		       uint32_t name, uint16_t flags)
{
	uint64_t key = open_key(kind, d, id), now = gt_clock_ns();

	if (!atomic_load_explicit(&ranges_used, memory_order_relaxed))
		atomic_store(&ranges_used, true);
	/* "Successive calls to __itt_frame_begin [__itt_region_begin] with the same ID
	 * are ignored until a call to __itt_frame_end [_region_end] with the same ID"
	 * (ittnotify.h): a frame begun each iteration and never ended is one frame, not
	 * one more open range an iteration (they were drawn overlapping, never ended) */
	if (kind != KIND_TASK && open_now(key))
		return;
	if (atomic_fetch_add(&ranges_open, 1) >= OPEN_MAX)
		goto full;
	/* one is free (counted above): taken ones passed at most */
	for (unsigned i = 0; i < OPEN_MAX; i++) {
		struct open_range *r = &open_ranges[(key + i) % OPEN_MAX];

		if (!slot_claim(r))
			continue;
		r->start = now;
		r->name = name;
		r->tid = (uint32_t)gt_gettid();
		r->domain = d;
		r->flags = flags;
		r->id = gt_range_begin(name, now, flags);
		for (unsigned m = atomic_load_explicit(&probe_max, memory_order_relaxed);
		     i > m && !atomic_compare_exchange_weak_explicit(
				      &probe_max, &m, i, memory_order_relaxed, memory_order_relaxed);)
			;
		atomic_store_explicit(&r->key, key, memory_order_release);
		return;
	}
full:
	atomic_fetch_sub(&ranges_open, 1);
	gt_lost_add(gt_str_intern("itt_open_ranges"), 1);
}

static void open_end(int kind, const struct itt_domain *d, const struct itt_id *id)
{
	uint64_t key = open_key(kind, d, id);

	for (unsigned i = 0; i < OPEN_MAX; i++) {
		struct open_range *r = &open_ranges[(key + i) % OPEN_MAX];
		uint64_t expect = key, k = atomic_load_explicit(&r->key, memory_order_acquire);

		if (k == SLOT_EMPTY)
			return; /* never begun (or refused): it ends nothing */
		if (k != key)
			continue;
		struct open_range copy = { .id = r->id, .start = r->start, .name = r->name,
					   .tid = r->tid, .domain = r->domain, .flags = r->flags };
		if (!atomic_compare_exchange_strong(&r->key, &expect, SLOT_ENDED))
			return; /* ended twice, concurrently */
		atomic_fetch_sub(&ranges_open, 1);
		struct gt_arg arg = domain_arg(copy.domain);
		gt_range_end(copy.id, copy.start, gt_clock_ns(), copy.name, copy.tid, copy.flags,
			     &arg, 1);
		return;
	}
}

static void task_begin_overlapped(const struct itt_domain *d, struct itt_id id,
				  struct itt_id parent, struct itt_string_handle *name)
{
	open_begin(KIND_TASK, d, &id, string_name(name), GT_EVF_BY_ID);
}

static void task_begin_overlapped_ex(const struct itt_domain *d, void *clock,
				     unsigned long long ts, struct itt_id id,
				     struct itt_id parent, struct itt_string_handle *name)
{
	task_begin_overlapped(d, id, parent, name);
}

static void task_end_overlapped(const struct itt_domain *d, struct itt_id id)
{
	open_end(KIND_TASK, d, &id);
}

static void task_end_overlapped_ex(const struct itt_domain *d, void *clock, unsigned long long ts,
				   struct itt_id id)
{
	task_end_overlapped(d, id);
}

static void region_begin(const struct itt_domain *d, struct itt_id id, struct itt_id parent,
			 struct itt_string_handle *name)
{
	open_begin(KIND_REGION, d, &id, string_name(name), GT_EVF_BY_ID);
}

static void region_end(const struct itt_domain *d, struct itt_id id)
{
	open_end(KIND_REGION, d, &id);
}

/* Frames belong to the process (a frame may end on another thread); a
 * frame without an id is the domain's. Named after the domain. */
static void frame_begin_v3(const struct itt_domain *d, struct itt_id *id)
{
	open_begin(KIND_FRAME, d, id, domain_name(d), GT_EVF_PROCESS);
}

static void frame_end_v3(const struct itt_domain *d, struct itt_id *id)
{
	open_end(KIND_FRAME, d, id);
}

/* ITT's "no timestamp" (__itt_timestamp_none) */
#define ITT_TIMESTAMP_NONE (~0ull)

/* A frame given whole: begin and end from __itt_get_timestamp (ours); an end of
 * __itt_timestamp_none is now, as ITT's header says (it was drawn as the
 * timestamp it is, 584 years on). */
static void frame_submit_v3(const struct itt_domain *d, struct itt_id *id,
			    unsigned long long begin, unsigned long long end)
{
	struct gt_arg arg = domain_arg(d);

	if (end == ITT_TIMESTAMP_NONE)
		end = gt_clock_ns();
	if (end >= begin)
		gt_range_end(0, begin, end, domain_name(d), 0, GT_EVF_PROCESS, &arg, 1);
}

static unsigned long long get_timestamp(void)
{
	return gt_clock_ns();
}

/* ---- markers ---- */

static void marker(const struct itt_domain *d, struct itt_id id, struct itt_string_handle *name,
		   int scope)
{
	static const char *const scopes[] = { "unknown", "global", "track_group", "track",
					      "task", "marker" };
	uint64_t now = gt_clock_ns();
	struct gt_arg args[2] = {
		domain_arg(d),
		{ .key = GT_S_ARG_SCOPE, .type = GT_ARG_STR,
		  .v.u = gt_range_str(scope >= 0 && scope <= ITT_SCOPE_MARKER ? scopes[scope]
									     : "unknown") },
	};
	struct gt_event ev = { .start_ns = now, .end_ns = now, .name = string_name(name),
			       .cat = GT_S_CAT_USER_ANNOTATION, .type = GT_EV_INSTANT };

	if (gt_range_recording())
		gt_emit(&ev, args, 2);
}

static void marker_ex(const struct itt_domain *d, void *clock, unsigned long long ts,
		      struct itt_id id, struct itt_string_handle *name, int scope)
{
	marker(d, id, name, scope);
}

/* ---- counters: a counter track on the process's row ---- */

struct itt_counter {
	uint32_t name, domain;
	uint32_t track; /* the counter track's name */
	int type;
	_Atomic uint64_t bits; /* the value, as its type's 64-bit form */
};

#define COUNTERS_MAX 1024
GT_TABLE(struct itt_counter, counters, COUNTERS_MAX);
static _Atomic unsigned ncounters;

/* A counter is its name and domain (ITT's identity): one whose name a counter of
 * another domain drew first gets a track of its own, "name (domain)", not the
 * other's (their values were one series, zigzagging between the two). */
static uint32_t counter_track(uint32_t name, uint32_t domain, bool taken)
{
	char buf[512];
	const char *d = domain != GT_S_EMPTY ? gt_str_get(domain, NULL) : NULL;

	if (!taken)
		return name;
	snprintf(buf, sizeof(buf), "%s (%s)", gt_str_get(name, NULL), d && *d ? d : "no domain");
	return gt_range_str(buf);
}

static struct itt_counter *counter_new(uint32_t name, uint32_t domain, int type)
{
	struct itt_counter *c;
	bool taken = false;

	pthread_mutex_lock(&create_lock);
	unsigned n = atomic_load(&ncounters);
	for (unsigned i = 0; i < n && i < COUNTERS_MAX; i++) {
		if (counters[i].name == name && counters[i].domain == domain) {
			c = &counters[i];
			goto out;
		}
		taken |= counters[i].track == name;
	}
	c = n < COUNTERS_MAX ? &counters[n] : calloc(1, sizeof(*c));
	if (c) {
		c->name = name;
		c->domain = domain;
		c->track = counter_track(name, domain, taken);
		c->type = type ? type : ITT_META_U64;
		if (n < COUNTERS_MAX)
			atomic_store(&ncounters, n + 1);
	}
out:
	pthread_mutex_unlock(&create_lock);
	return c;
}

static bool counter_float(const struct itt_counter *c)
{
	return c->type == ITT_META_FLOAT || c->type == ITT_META_DOUBLE;
}

static bool counter_signed(const struct itt_counter *c)
{
	return c->type == ITT_META_S64 || c->type == ITT_META_S32 || c->type == ITT_META_S16;
}

static void counter_emit(const struct itt_counter *c, uint64_t bits)
{
	struct gt_arg arg = { .key = GT_S_ARG_VALUE };
	uint64_t now = gt_clock_ns();
	struct gt_event ev = { .start_ns = now, .end_ns = now, .name = c->track,
			       .cat = GT_S_CAT_COUNTER, .type = GT_EV_COUNTER };

	if (counter_float(c)) {
		arg.type = GT_ARG_F64;
		memcpy(&arg.v.f, &bits, sizeof(double));
	} else {
		arg.type = counter_signed(c) ? GT_ARG_I64 : GT_ARG_U64;
		arg.v.u = bits;
	}
	if (gt_range_recording() && (gt_cfg.kinds & GT_KIND(COUNTER)))
		gt_emit(&ev, &arg, 1);
}

static struct itt_counter *counter_create_typed(const char *name, const char *domain, int type)
{
	return counter_new(gt_range_str(name), domain ? gt_range_str(domain) : GT_S_EMPTY, type);
}

static struct itt_counter *counter_create(const char *name, const char *domain)
{
	return counter_create_typed(name, domain, ITT_META_U64);
}

static struct itt_counter *counter_create_v3(const struct itt_domain *d, const char *name,
					     int type)
{
	return counter_new(gt_range_str(name), domain_name(d), type);
}

static void counter_destroy(struct itt_counter *c)
{
	/* kept: a handle the program still holds stays valid */
}

static void counter_add(struct itt_counter *c, long long delta)
{
	uint64_t old, bits;

	if (!c)
		return;
	old = atomic_load(&c->bits);
	do {
		if (counter_float(c)) {
			double v;
			memcpy(&v, &old, sizeof(v));
			v += (double)delta;
			memcpy(&bits, &v, sizeof(v));
		} else {
			bits = old + (uint64_t)delta;
		}
	} while (!atomic_compare_exchange_weak(&c->bits, &old, bits));
	counter_emit(c, bits);
}

static void counter_inc(struct itt_counter *c)
{
	counter_add(c, 1);
}

static void counter_inc_delta(struct itt_counter *c, unsigned long long v)
{
	counter_add(c, (long long)v);
}

static void counter_dec(struct itt_counter *c)
{
	counter_add(c, -1);
}

static void counter_dec_delta(struct itt_counter *c, unsigned long long v)
{
	counter_add(c, -(long long)v);
}

static void counter_set_value(struct itt_counter *c, void *p)
{
	uint64_t bits = 0;
	double d;

	if (!c || !p)
		return;
	switch (c->type) {
	case ITT_META_S64:
	case ITT_META_U64:
		memcpy(&bits, p, 8);
		break;
	case ITT_META_U32:
		bits = *(const uint32_t *)p;
		break;
	case ITT_META_S32:
		bits = (uint64_t)(int64_t)*(const int32_t *)p;
		break;
	case ITT_META_U16:
		bits = *(const uint16_t *)p;
		break;
	case ITT_META_S16:
		bits = (uint64_t)(int64_t)*(const int16_t *)p;
		break;
	case ITT_META_FLOAT:
		d = *(const float *)p;
		memcpy(&bits, &d, 8);
		break;
	case ITT_META_DOUBLE:
		memcpy(&bits, p, 8);
		break;
	default:
		return;
	}
	atomic_store(&c->bits, bits);
	counter_emit(c, bits);
}

static void counter_set_value_ex(struct itt_counter *c, void *clock, unsigned long long ts,
				 void *p)
{
	counter_set_value(c, p);
}

/* Collection control: capture windows (inject/capture.h). */
static bool control_wanted(void)
{
	return gt_cfg.capture_range == GT_RANGE_PROFILER;
}

static void control_resume(void)
{
	gt_ensure_init();
	if (control_wanted())
		capture__range_begin(gt_clock_ns());
}

static void control_pause(void)
{
	gt_ensure_init();
	if (control_wanted())
		capture__range_end(gt_clock_ns(), 0);
}

static const char *api_version(void)
{
	return "gputrace ITT collector " GPUTRACE_VERSION;
}

/* ---- the table: exported names (version 1) and __itt_api_init (version 2) ---- */

#define ITT_FUNCTIONS(X)                                                                   \
	X(domain_create, struct itt_domain *, (const char *n), (n))                        \
	X(domain_createA, struct itt_domain *, (const char *n), (n))                       \
	X(string_handle_create, struct itt_string_handle *, (const char *n), (n))          \
	X(string_handle_createA, struct itt_string_handle *, (const char *n), (n))         \
	X(task_begin, void,                                                                \
	  (const struct itt_domain *d, struct itt_id i, struct itt_id p,                   \
	   struct itt_string_handle *n), (d, i, p, n))                                     \
	X(task_begin_fn, void,                                                             \
	  (const struct itt_domain *d, struct itt_id i, struct itt_id p, void *f),         \
	  (d, i, p, f))                                                                    \
	X(task_end, void, (const struct itt_domain *d), (d))                               \
	X(task_begin_ex, void,                                                             \
	  (const struct itt_domain *d, void *c, unsigned long long t, struct itt_id i,     \
	   struct itt_id p, struct itt_string_handle *n), (d, c, t, i, p, n))              \
	X(task_begin_fn_ex, void,                                                          \
	  (const struct itt_domain *d, void *c, unsigned long long t, struct itt_id i,     \
	   struct itt_id p, void *f), (d, c, t, i, p, f))                                  \
	X(task_end_ex, void, (const struct itt_domain *d, void *c, unsigned long long t),  \
	  (d, c, t))                                                                       \
	X(task_begin_overlapped, void,                                                     \
	  (const struct itt_domain *d, struct itt_id i, struct itt_id p,                   \
	   struct itt_string_handle *n), (d, i, p, n))                                     \
	X(task_begin_overlapped_ex, void,                                                  \
	  (const struct itt_domain *d, void *c, unsigned long long t, struct itt_id i,     \
	   struct itt_id p, struct itt_string_handle *n), (d, c, t, i, p, n))              \
	X(task_end_overlapped, void, (const struct itt_domain *d, struct itt_id i), (d, i)) \
	X(task_end_overlapped_ex, void,                                                    \
	  (const struct itt_domain *d, void *c, unsigned long long t, struct itt_id i),    \
	  (d, c, t, i))                                                                    \
	X(region_begin, void,                                                              \
	  (const struct itt_domain *d, struct itt_id i, struct itt_id p,                   \
	   struct itt_string_handle *n), (d, i, p, n))                                     \
	X(region_end, void, (const struct itt_domain *d, struct itt_id i), (d, i))         \
	X(frame_begin_v3, void, (const struct itt_domain *d, struct itt_id *i), (d, i))    \
	X(frame_end_v3, void, (const struct itt_domain *d, struct itt_id *i), (d, i))      \
	X(frame_submit_v3, void,                                                           \
	  (const struct itt_domain *d, struct itt_id *i, unsigned long long b,             \
	   unsigned long long e), (d, i, b, e))                                            \
	X(get_timestamp, unsigned long long, (void), ())                                   \
	X(marker, void,                                                                    \
	  (const struct itt_domain *d, struct itt_id i, struct itt_string_handle *n,       \
	   int s), (d, i, n, s))                                                           \
	X(marker_ex, void,                                                                 \
	  (const struct itt_domain *d, void *c, unsigned long long t, struct itt_id i,     \
	   struct itt_string_handle *n, int s), (d, c, t, i, n, s))                        \
	X(counter_create, struct itt_counter *, (const char *n, const char *d), (n, d))    \
	X(counter_createA, struct itt_counter *, (const char *n, const char *d), (n, d))   \
	X(counter_create_typed, struct itt_counter *,                                      \
	  (const char *n, const char *d, int t), (n, d, t))                                \
	X(counter_create_typedA, struct itt_counter *,                                     \
	  (const char *n, const char *d, int t), (n, d, t))                                \
	X(counter_create_v3, struct itt_counter *,                                         \
	  (const struct itt_domain *d, const char *n, int t), (d, n, t))                   \
	X(counter_createA_v3, struct itt_counter *,                                        \
	  (const struct itt_domain *d, const char *n, int t), (d, n, t))                   \
	X(counter_destroy, void, (struct itt_counter *c), (c))                             \
	X(counter_inc, void, (struct itt_counter *c), (c))                                 \
	X(counter_inc_delta, void, (struct itt_counter *c, unsigned long long v), (c, v))  \
	X(counter_dec, void, (struct itt_counter *c), (c))                                 \
	X(counter_dec_delta, void, (struct itt_counter *c, unsigned long long v), (c, v))  \
	X(counter_set_value, void, (struct itt_counter *c, void *p), (c, p))               \
	X(counter_set_value_ex, void,                                                      \
	  (struct itt_counter *c, void *k, unsigned long long t, void *p), (c, k, t, p))   \
	X(resume, void, (void), ())                                                        \
	X(pause, void, (void), ())                                                         \
	X(api_version, const char *, (void), ())

/* The A-suffixed creators are the plain ones. */
#define domain_createA         domain_create
#define string_handle_createA  string_handle_create
#define counter_createA        counter_create
#define counter_create_typedA  counter_create_typed
#define counter_createA_v3     counter_create_v3
/* not libc's pause() */
#define resume                 control_resume
#define pause                  control_pause

/* __itt_<name>, exported: a version-1 static part finds them with dlsym.
 * The table below takes each one's address through a local alias: the
 * exported name would cost every process a symbol lookup at load. */
#define ITT_EXPORTED(name, ret, params, args)                                              \
	ITT_API ret __itt_##name params;                                                   \
	ret __itt_##name params                                                            \
	{                                                                                  \
		return name args;                                                          \
	}                                                                                  \
	static __typeof__(__itt_##name) itt_self_##name __attribute__((alias("__itt_" #name)));
ITT_FUNCTIONS(ITT_EXPORTED)
#undef ITT_EXPORTED

/* the names as one list (inject/cstr.h): half the pointers for the loader to
 * relocate in every process */
static const char itt_names[] =
#define ITT_NAME(name, ret, params, args) "__itt_" #name "\0"
	ITT_FUNCTIONS(ITT_NAME)
#undef ITT_NAME
	;
static void *const itt_fns[] = {
#define ITT_FN(name, ret, params, args) (void *)itt_self_##name,
	ITT_FUNCTIONS(ITT_FN)
#undef ITT_FN
};

static void *itt_lookup(const char *name)
{
	size_t i;

	return gt_cstr_list_find(itt_names, name, strlen(name), &i) ? itt_fns[i] : NULL;
}

/*
 * Version 2: the static part calls this once, at its first ITT call, with
 * its global table. Pointers we implement are set to our functions, the
 * others to the part's own null function; with annotations off, all of
 * them but collection control when capture windows follow it: the program
 * then pays nothing for ITT.
 */
ITT_API void __itt_api_init(struct itt_global *g, int groups)
{
	bool on, control;

	gt_ensure_init();
	on = gt_backend_enabled(GT_BACKEND_ITT) && (gt_cfg.kinds & GT_KIND(ANNOTATION));
	control = gt_backend_enabled(GT_BACKEND_ITT) && control_wanted();
	if (!g || !g->api_list_ptr)
		return;
	if (g->version_build && g->version_build <= ITT_API_INFO_NULL_FUNC_BUILD) {
		pr_warn("ITT: a static part of build %lu (before %lu) is not supported; its "
			"annotations are not recorded", g->version_build,
			ITT_API_INFO_NULL_FUNC_BUILD + 1);
		return;
	}
	for (struct itt_api_info *a = g->api_list_ptr; a->name; a++) {
		void *fn = itt_lookup(a->name);

		if (!on && !(control && (fn == (void *)itt_self_resume || fn == (void *)itt_self_pause)))
			fn = NULL;

		if (a->func_ptr)
			*a->func_ptr = fn ? fn : a->null_func;
	}
	pr_dbg("ITT: collector attached (version 2, build %lu)", g->version_build);
}

/* ---- life cycle ---- */

GT_STARTUP_CODE static int itt_init(void)
{
	const char *other;
	int ours;

	ours = injection__claim(GT_INJ_ITT, &other);
	if (!ours)
		pr_warn("INTEL_LIBITTNOTIFY64 names another ITT collector (%s): ITT annotations go "
			"to it, not to this trace", other);
	return ours < 0 ? ours : 0;
}

GT_FORK_CODE static void itt_atfork_child(void)
{
	/* ranges ended by id that the parent opened: gone with its threads,
	 * except the forking thread's, whose begin records are the parent's */
	if (!atomic_load(&ranges_used))
		return;
	for (unsigned i = 0; i < OPEN_MAX; i++)
		atomic_store(&open_ranges[i].key, SLOT_EMPTY);
	atomic_store(&ranges_open, 0);
}

static const struct gt_backend itt_backend = {
	.name = "itt",
	.enabled_by = GT_BACKEND_ITT,
	.init = itt_init,
	.atfork_child = itt_atfork_child,
};

GT_BACKEND_REGISTER(itt_backend);
