// SPDX-License-Identifier: MIT
/*
 * Device times without CUPTI (another tool holds it, or
 * GPUTRACE_DISABLE_CUPTI=1): two CUDA events recorded on the launch's own
 * stream, before and after it, bound its execution. The drain thread polls
 * them and places the span on the host clock through a reference event per
 * device, recorded on a private stream at a known host time and renewed
 * every few seconds (cudaEventElapsedTime is a float of milliseconds).
 *
 * Hot path (the launch): one slot from a table, two cudaEventRecord calls
 * on events created once per slot; no allocation, no lock. Streams being
 * captured into a graph are left alone: an event there would become a graph
 * node. Our calls run in relaxed capture mode (our_calls_begin).
 *
 * A slot is free again once its events are read, at the drain's cycles
 * (every GPUTRACE_FLUSH_MS), while a busy program may launch tens of
 * thousands of times in between: the drain is woken early as the table
 * fills, a launch that finds it full reads the oldest finished itself, and
 * a table full of work still running doubles, up to SLOTS_MAX (see grab).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cuda/internal.h"
#include "inject/clock.h"
#include "inject/shim.h"
#include "inject/watchdog.h"
#include "inject/tables.h"

#define SLOTS_MIN      4096  /* the table's first size; doubled when full of running work */
#define SLOTS_MAX      16384 /* launches timed at once, at most: past them, counted lost */
#define WAKE_EVERY     512   /* launches between two looks at how full the table is */
#define RECLAIM_BATCH  128   /* slots a launch that found the table full frees */
#define RECLAIM_GAP_NS 1000000ull /* after a reclaim that freed nothing (work running) */
#define DEVICES_MAX    16
#define REFIT_NS       (2000ull * 1000000)
#define NOT_READY      600 /* cudaErrorNotReady */

/* SLOT_TIMED: read before a cudaDeviceReset destroyed its events, for the drain to draw */
enum { SLOT_FREE, SLOT_ARMED, SLOT_PENDING, SLOT_TIMED };

struct ev_slot {
	_Atomic int state;
	int device;     /* the device ev0/ev1 were created on, -1: none */
	void *ev0, *ev1;
	uint64_t corr, host_start, stream_id;
	struct cupti_launch_info li;
	uint64_t start, dur, slack; /* once complete: from the events */
};

/* Untouched pages of the table cost nothing (tables.h): only the first
 * nslots are used, a power of two */
GT_TABLE(struct ev_slot, slots, SLOTS_MAX);
static _Atomic unsigned nslots = SLOTS_MIN;
static _Atomic unsigned cursor;
static _Atomic uint64_t reclaim_after; /* host ns: no reclaim before it */
static _Atomic uint64_t dropped;

enum { DEV_NEW, DEV_INIT, DEV_READY, DEV_FAILED, DEV_RESET /* in cudaDeviceReset */ };
static struct ev_dev {
	_Atomic int state;
	_Atomic bool init_stuck; /* a launch waited INIT_WAIT_NS for DEV_INIT to end */
	void *stream, *ref, *ref_spare;
	uint64_t ref_host, refit_at;
} devs[DEVICES_MAX];

static struct {
	int (*event_create)(void **, unsigned);
	int (*event_record)(void *, void *);
	int (*event_record_ptsz)(void *, void *);
	int (*event_query)(void *);
	int (*event_sync)(void *);
	int (*event_elapsed)(float *, void *, void *);
	int (*get_device)(int *);
	int (*set_device)(int);
	int (*stream_create)(void **, unsigned);
	int (*is_capturing)(void *, int *);
	int (*is_capturing_ptsz)(void *, int *);
	int (*stream_id)(void *, unsigned long long *); /* CUDA 12.0+ */
	int (*stream_id_ptsz)(void *, unsigned long long *);
	int (*exchange_mode)(int *); /* cudaThreadExchangeStreamCaptureMode */
} rt;
/* 0 unknown, 1 loaded, -1 missing, RT_LOADING; read by every fork child */
#define RT_LOADING (-2)
static _Atomic int rt_state GT_STARTUP_STATE;
static pthread_mutex_t poll_lock = PTHREAD_MUTEX_INITIALIZER;

/* Another thread looks the functions up (the first launches of several
 * threads at once): a few dlsym calls, waited for, bounded. */
static bool wait_rt(void)
{
	uint64_t until = gt_clock_ns() + 1000000000ull;
	int st;

	while ((st = atomic_load_explicit(&rt_state, memory_order_acquire)) == RT_LOADING &&
	       gt_clock_ns() < until)
		nanosleep(&(struct timespec){ 0, 20000 }, NULL);
	return st > 0;
}

static bool load_rt(void)
{
	int st = atomic_load_explicit(&rt_state, memory_order_acquire);

	if (gt_likely(st == 1 || st == -1))
		return st > 0;
	/* one thread writes rt, the others wait for it */
	if (st == RT_LOADING || !atomic_compare_exchange_strong(&rt_state, &st, RT_LOADING))
		return wait_rt();
#define LOAD(field, sym) rt.field = (__typeof__(rt.field))cupti__rt_real(sym)
	LOAD(event_create, "cudaEventCreateWithFlags");
	LOAD(event_record, "cudaEventRecord");
	LOAD(event_record_ptsz, "cudaEventRecord_ptsz");
	LOAD(event_query, "cudaEventQuery");
	LOAD(event_sync, "cudaEventSynchronize");
	LOAD(event_elapsed, "cudaEventElapsedTime");
	LOAD(get_device, "cudaGetDevice");
	LOAD(set_device, "cudaSetDevice");
	LOAD(stream_create, "cudaStreamCreateWithFlags");
	LOAD(is_capturing, "cudaStreamIsCapturing");
	LOAD(is_capturing_ptsz, "cudaStreamIsCapturing_ptsz");
	LOAD(stream_id, "cudaStreamGetId");
	LOAD(stream_id_ptsz, "cudaStreamGetId_ptsz");
	LOAD(exchange_mode, "cudaThreadExchangeStreamCaptureMode");
#undef LOAD
	st = rt.event_create && rt.event_record && rt.event_query && rt.event_sync &&
		     rt.event_elapsed && rt.get_device && rt.set_device && rt.stream_create &&
		     rt.is_capturing
		     ? 1
		     : -1;
	if (st < 0)
		pr_info("libcudart lacks the event functions: no device times without CUPTI");
	atomic_store_explicit(&rt_state, st, memory_order_release);
	return st > 0;
}

/*
 * Our calls (event records, queries, synchronizations, a stream of our own)
 * must never be the program's: in cudaStreamCaptureModeGlobal, the default,
 * such "potentially unsafe" calls made during a global-mode capture of any
 * thread fail and invalidate that capture. They run in relaxed mode, which
 * "is not prohibited from potentially unsafe API calls" (and none of ours
 * touches a capturing stream or an event recorded in one).
 */
#define CAPTURE_MODE_RELAXED 2
static int our_calls_begin(void)
{
	int mode = CAPTURE_MODE_RELAXED;

	cupti_self++;
	if (rt.exchange_mode && rt.exchange_mode(&mode))
		mode = -1;
	return mode;
}

static void our_calls_end(int mode)
{
	if (mode >= 0 && rt.exchange_mode)
		rt.exchange_mode(&mode);
	cupti_self--;
}

static int record(void *ev, void *stream, bool per_thread)
{
	return per_thread && rt.event_record_ptsz ? rt.event_record_ptsz(ev, stream)
						  : rt.event_record(ev, stream);
}

/*
 * The reference: an event on our own idle stream, done at some instant
 * between its record and the return of its synchronize; placed at the
 * middle, it is off by up to half that window, and so is every span timed
 * from it. The first window on a device is the widest (tens of us, enough
 * to draw an asynchronous copy ending after the synchronize that waited
 * for it): of a few tries, the narrowest is kept (a few us every REFIT_NS).
 */
#define REFIT_TRIES 4

static int refit(int device)
{
	struct ev_dev *d = &devs[device];
	uint64_t h1, h2, best = UINT64_MAX;

	for (int i = 0; i < REFIT_TRIES; i++) {
		h1 = gt_clock_ns();
		if (rt.event_record(d->ref_spare, d->stream) || rt.event_sync(d->ref_spare))
			return best == UINT64_MAX ? -1 : 0;
		h2 = gt_clock_ns();
		if (h2 - h1 < best) {
			void *ev = d->ref;

			best = h2 - h1;
			d->ref = d->ref_spare;
			d->ref_spare = ev;
			d->ref_host = h1 + (h2 - h1) / 2;
			d->refit_at = h2;
		}
	}
	return 0;
}

static void events_atexit(void)
{
	/* before libcudart tears down: read what finished */
	cupti__events_poll(true);
}

/*
 * Another thread makes the device's stream and reference (its first launch,
 * or the first after a cudaDeviceReset): a few event round trips, which the
 * program's other threads launching at once wait for rather than go untimed.
 * Bounded: one that never ends (its thread cancelled in CUDA) is waited for
 * once, the launches after it go untimed, counted.
 */
#define INIT_WAIT_NS (1000ull * 1000000)

static bool wait_init(struct ev_dev *d)
{
	uint64_t until = gt_clock_ns() + INIT_WAIT_NS;
	int state;

	while ((state = atomic_load_explicit(&d->state, memory_order_acquire)) == DEV_INIT) {
		if (atomic_load_explicit(&d->init_stuck, memory_order_relaxed))
			return false;
		if (gt_clock_ns() > until) {
			atomic_store_explicit(&d->init_stuck, true, memory_order_relaxed);
			return false;
		}
		nanosleep(&(struct timespec){ 0, 20000 }, NULL);
	}
	return state == DEV_READY;
}

static bool device_ready(int device)
{
	static _Atomic bool atexit_done;
	struct ev_dev *d = &devs[device];
	int expect = DEV_NEW;

	if (gt_likely(atomic_load_explicit(&d->state, memory_order_acquire) == DEV_READY))
		return true;
	/* made since the load above, being made, failed, or in a reset */
	if (!atomic_compare_exchange_strong(&d->state, &expect, DEV_INIT))
		return expect == DEV_READY || (expect == DEV_INIT && wait_init(d));
	/* cold: the first timed launch on this device (1 = cudaStreamNonBlocking) */
	if (rt.stream_create(&d->stream, 1) || rt.event_create(&d->ref, 0) ||
	    rt.event_create(&d->ref_spare, 0) || refit(device)) {
		pr_info("CUDA events do not work on device %d: no device times for it", device);
		atomic_store(&d->state, DEV_FAILED);
		return false;
	}
	if (!atomic_exchange(&atexit_done, true))
		atexit(events_atexit);
	/* no CUPTI context callback names it: the poll does, before its row */
	cupti__device_seen((uint32_t)device);
	atomic_store_explicit(&d->state, DEV_READY, memory_order_release);
	return true;
}

static unsigned poll_slots(int only, bool final, bool on_launch);

/* A free slot of the n, from the cursor on; the cursor moves past it, so
 * that the next launches start where slots are free. */
static struct ev_slot *find_free(unsigned n)
{
	unsigned from = atomic_load_explicit(&cursor, memory_order_relaxed);

	for (unsigned i = 0; i < n; i++) {
		struct ev_slot *s = &slots[(from + i) & (n - 1)];
		int expect = SLOT_FREE;

		if (atomic_load_explicit(&s->state, memory_order_relaxed) == SLOT_FREE &&
		    atomic_compare_exchange_strong(&s->state, &expect, SLOT_ARMED)) {
			atomic_store_explicit(&cursor, from + i + 1, memory_order_relaxed);
			return s;
		}
	}
	return NULL;
}

/*
 * The table full, on the launching thread: what finished is read and drawn
 * here (onto rows the drain made), not at the drain's next cycle. Never
 * waited for: not while another thread reads them (the drain: that frees
 * slots too), and not again for RECLAIM_GAP_NS after a read that freed
 * nothing (all still running). True: slots were freed.
 */
static bool reclaim(void)
{
	uint64_t now = gt_clock_ns();
	unsigned freed;

	if (now < atomic_load_explicit(&reclaim_after, memory_order_relaxed) ||
	    pthread_mutex_trylock(&poll_lock))
		return false;
	/* nested in our own code: a full ring drops rather than waits for the
	 * drain, which may be waiting for poll_lock (ring_wait.c), and a signal
	 * handler's call stays out of the ring being written */
	gt_in_tracer += 2;
	freed = poll_slots(-1, false, true);
	gt_in_tracer -= 2;
	pthread_mutex_unlock(&poll_lock);
	if (!freed)
		atomic_store_explicit(&reclaim_after, now + RECLAIM_GAP_NS, memory_order_relaxed);
	return freed;
}

/* Twice the slots, up to SLOTS_MAX: the table's size now. */
static unsigned grow(unsigned n)
{
	if (n < SLOTS_MAX && atomic_compare_exchange_strong(&nslots, &n, n * 2))
		return n * 2;
	return n; /* the largest, or another thread's (the CAS read it) */
}

/*
 * No free slot among the next few. Free ones elsewhere are taken; else
 * finished work is read here; else the table grows (its pages are touched
 * as they are used). Full at SLOTS_MAX (that many launches unfinished, or
 * the drain far behind): the launch goes untimed. No allocation, no wait.
 */
static __attribute__((noinline)) struct ev_slot *grab_slow(unsigned n)
{
	struct ev_slot *s;

	if (n == SLOTS_MAX &&
	    gt_clock_ns() < atomic_load_explicit(&reclaim_after, memory_order_relaxed))
		return NULL; /* all still running a moment ago: not looked at again */
	if ((s = find_free(n)))
		return s;
	if (reclaim() && (s = find_free(n)))
		return s;
	unsigned more = grow(n);
	return more > n ? find_free(more) : NULL;
}

/* Every WAKE_EVERY launches: the slot half a table ahead, taken half a lap
 * ago, still unread wakes the drain (as a ring past its high-water mark
 * does), not GPUTRACE_FLUSH_MS later. */
static struct ev_slot *grab(void)
{
	unsigned n = atomic_load_explicit(&nslots, memory_order_relaxed);

	for (unsigned i = 0; i < 16; i++) {
		unsigned c = atomic_fetch_add_explicit(&cursor, 1, memory_order_relaxed);
		struct ev_slot *s = &slots[c & (n - 1)];
		int expect = SLOT_FREE;

		if (gt_unlikely(!(c % WAKE_EVERY)) &&
		    atomic_load_explicit(&slots[(c + n / 2) & (n - 1)].state,
					 memory_order_relaxed) != SLOT_FREE)
			gt_wake_writer();
		if (atomic_compare_exchange_strong(&s->state, &expect, SLOT_ARMED))
			return s;
	}
	return grab_slow(n);
}

/*
 * The token of a launch that is not timed (no slot, no device ready, an
 * event call failed): counted lost at its end, once the launch is known to
 * have queued work (a failed one has none). Every launch is then drawn or
 * counted: issued == drawn + lost.
 */
static char untimed;
#define UNTIMED ((void *)&untimed)

static void count_untimed(void)
{
	atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
}

/* A slot with the launch's before-event recorded, or NULL. */
static struct ev_slot *arm(void *stream, bool per_thread)
{
	struct ev_slot *s;
	unsigned long long sid = 0;
	int dev = -1;

	if (rt.get_device(&dev) || dev < 0 || dev >= DEVICES_MAX || !device_ready(dev) ||
	    !(s = grab()))
		return NULL;
	if (!s->ev0 || s->device != dev) {
		/* events belong to a device; a slot moves rarely */
		if (rt.event_create(&s->ev0, 0) || rt.event_create(&s->ev1, 0)) {
			s->ev0 = s->ev1 = NULL;
			atomic_store(&s->state, SLOT_FREE);
			return NULL;
		}
		s->device = dev;
	}
	if (record(s->ev0, stream, per_thread)) {
		atomic_store(&s->state, SLOT_FREE);
		return NULL;
	}
	/* here, in the calls already made capture-safe, not after the launch */
	if (per_thread && rt.stream_id_ptsz)
		rt.stream_id_ptsz(stream, &sid);
	else if (rt.stream_id)
		rt.stream_id(stream, &sid);
	s->stream_id = sid;
	return s;
}

void *cupti__events_before(void *stream, bool per_thread)
{
	void *token;
	int capturing = 0;

	if (!load_rt())
		return NULL;
	int mode = our_calls_begin();
	/* a stream being captured makes a graph node, not work: nothing to time
	 * (nor an event to record there); one that cannot be asked is not touched */
	if (per_thread && rt.is_capturing_ptsz ? rt.is_capturing_ptsz(stream, &capturing)
					       : rt.is_capturing(stream, &capturing))
		token = UNTIMED;
	else if (capturing)
		token = NULL;
	else
		token = arm(stream, per_thread) ?: UNTIMED;
	our_calls_end(mode);
	return token;
}

void *cupti__events_end(void *token, void *stream, bool per_thread, int result)
{
	struct ev_slot *s = token;

	if (s == UNTIMED && !result)
		count_untimed();
	if (!s || s == UNTIMED)
		return NULL;
	int mode = our_calls_begin();
	if (result || record(s->ev1, stream, per_thread)) {
		if (!result)
			count_untimed();
		atomic_store(&s->state, SLOT_FREE);
		s = NULL;
	}
	our_calls_end(mode);
	return s;
}

void cupti__events_unwound(void *token)
{
	struct ev_slot *s = token;

	/* its end event was never recorded: untimed, as a launch whose record
	 * failed (a blocking copy is cancelled in its wait, the work queued) */
	count_untimed();
	if (s != UNTIMED)
		atomic_store(&s->state, SLOT_FREE);
}

void cupti__events_after(void *token, uint64_t corr, uint64_t host_start,
			 const struct cupti_launch_info *info)
{
	struct ev_slot *s = token;

	if (!s)
		return;
	s->corr = corr;
	s->host_start = host_start;
	s->li = *info;
	atomic_store_explicit(&s->state, SLOT_PENDING, memory_order_release);
}

/*
 * The start is a float of milliseconds from the device's reference event,
 * coarse (8 ns at 100 ms, 120 ns at 2 s); the duration, a float between the
 * span's own events, is fine. Rounded apart, a span may start a few ns
 * before the end of the one before it on its stream, where the GPU ran them
 * one after the other: such a start moves to that end, by at most the
 * rounding, and keeps its duration.
 */
/* The step between a float of ms and the next one up, in ns (the library
 * links no libm: the next float is the next bit pattern). */
static uint64_t float_step_ns(float ms)
{
	uint32_t bits;
	float up;

	ms = ms < 0 ? -ms : ms;
	memcpy(&bits, &ms, sizeof(bits));
	bits++;
	memcpy(&up, &bits, sizeof(up));
	return (uint64_t)(((double)up - (double)ms) * 1e6);
}

static bool time_slot(struct ev_slot *s)
{
	struct ev_dev *d = &devs[s->device];
	float from_ref = 0, dur = 0;

	if (rt.event_elapsed(&from_ref, d->ref, s->ev0) || rt.event_elapsed(&dur, s->ev0, s->ev1))
		return false;
	s->start = d->ref_host + (int64_t)((double)from_ref * 1e6);
	s->dur = (uint64_t)((double)(dur > 0 ? dur : 0) * 1e6);
	s->slack = float_step_ns(from_ref) + 1;
	return true;
}

/* Each stream's row and the end of its last span (under poll_lock). The row
 * is asked of records.c, whose tables are the drain thread's, once: a
 * launching thread that draws (reclaim) finds it here. */
#define STREAM_ENDS 512
struct stream_end_entry {
	uint64_t key, end; /* key: device and stream + 1; 0: empty */
	uint32_t track;    /* 0: not asked yet (or its device has no row) */
};
GT_TABLE(struct stream_end_entry, stream_ends, STREAM_ENDS);

static struct stream_end_entry *stream_end(int device, uint64_t stream_id)
{
	uint64_t key = (stream_id * DEVICES_MAX + (uint64_t)device) + 1;
	unsigned h = (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 32) % STREAM_ENDS;

	for (unsigned i = 0; i < STREAM_ENDS; i++) {
		unsigned j = (h + i) % STREAM_ENDS;
		if (stream_ends[j].key == key || !stream_ends[j].key) {
			stream_ends[j].key = key;
			return &stream_ends[j];
		}
	}
	/* full: a stream's end forgotten */
	stream_ends[h] = (struct stream_end_entry){ .key = key };
	return &stream_ends[h];
}

/* A kernel's launch arguments, as CUPTI's records give them (records.c):
 * registers only when cudaFuncGetAttributes told them. */
static unsigned kernel_args(const struct cupti_launch_info *li, struct gt_arg *a, unsigned n)
{
	a[n++] = cupti__dim_arg(cupti__key("grid"), li->grid[0], li->grid[1], li->grid[2]);
	a[n++] = cupti__dim_arg(cupti__key("block"), li->block[0], li->block[1], li->block[2]);
	if (li->registers)
		a[n++] = (struct gt_arg){ .key = cupti__key("registers_per_thread"),
					  .type = GT_ARG_U64, .v.u = li->registers };
	a[n++] = (struct gt_arg){ .key = cupti__key("shared_memory"), .type = GT_ARG_U64,
				  .v.u = li->shared_memory };
	return n;
}

/* The span of a finished slot; on a launching thread, only onto a row
 * already known: false, left to the drain. */
static bool emit_slot(struct ev_slot *s, bool on_launch)
{
	struct stream_end_entry *se = stream_end(s->device, s->stream_id);
	uint64_t start = s->start, *last_end = &se->end;
	struct gt_arg a[12];
	unsigned n = 0;

	if (!se->track && on_launch)
		return false;
	if (!se->track)
		se->track = cupti__stream_row((uint32_t)s->device, (uint32_t)s->stream_id);
	if (start < *last_end && *last_end - start <= s->slack)
		start = *last_end;
	uint64_t end = start + s->dur, late = 0;
	int64_t moved = 0; /* the start's correction: later > 0, earlier < 0 */
	if (start < s->host_start) {
		/* the reference's uncertainty: never before the launch began */
		moved = (int64_t)(s->host_start - start);
		end += s->host_start - start;
		start = s->host_start;
	}
	if (s->li.done_by && end > s->li.done_by) {
		/* nor after the synchronous call it ended in returned: moved back,
		 * not before the call began, and cut there if still longer */
		uint64_t back = start - s->host_start;

		late = end - s->li.done_by;
		back = back < late ? back : late;
		start -= back;
		end = end - back < s->li.done_by ? end - back : s->li.done_by;
		moved -= (int64_t)back;
	}
	if (moved || late) { /* counted, and marked on the span */
		uint64_t most = moved > 0 && (uint64_t)moved > late ? (uint64_t)moved : late;

		gt_adjust_add(GT_S_ADJUST_CLAMPED, 1, most);
		a[n++] = (struct gt_arg){ .key = GT_S_ARG_CLAMPED_NS, .type = GT_ARG_I64,
					  .v.i = moved };
	}
	if (end > *last_end)
		*last_end = end;
	a[n++] = (struct gt_arg){ .key = GT_S_ARG_DEVICE, .type = GT_ARG_U64, .v.u = s->device };
	a[n++] = (struct gt_arg){ .key = GT_S_ARG_STREAM, .type = GT_ARG_U64, .v.u = s->stream_id };
	if (s->li.cat == GT_S_CAT_KERNEL)
		n = kernel_args(&s->li, a, n);
	if (s->li.cat == GT_S_CAT_GPU_MEMCPY || s->li.cat == GT_S_CAT_GPU_MEMSET)
		a[n++] = (struct gt_arg){ .key = GT_S_ARG_BYTES, .type = GT_ARG_U64,
					  .v.u = s->li.bytes };
	if (s->li.kind)
		a[n++] = (struct gt_arg){ .key = GT_S_ARG_KIND, .type = GT_ARG_STR,
					  .v.u = s->li.kind };
	if (s->li.peer) {
		a[n++] = (struct gt_arg){ .key = cupti__key("src_device"), .type = GT_ARG_U64,
					  .v.u = (uint64_t)s->li.src_device };
		a[n++] = (struct gt_arg){ .key = cupti__key("dst_device"), .type = GT_ARG_U64,
					  .v.u = (uint64_t)s->li.dst_device };
	}
	a[n++] = (struct gt_arg){ .key = cupti__key("timing"), .type = GT_ARG_STR,
				  .v.u = cupti__key("cuda_events") };
	struct gt_event ev = {
		.start_ns = start,
		.end_ns = end,
		.corr = s->corr,
		.name = s->li.name,
		.cat = s->li.cat,
		.track = se->track,
		.type = GT_EV_DEVICE_SPAN,
	};
	if (ev.track)
		gt_emit(&ev, a, n);
	else /* its device has no row (records.c, no_device_row) */
		gt_lost_add(cupti__key("no_device_row"), 1);
	return true;
}

/* Completed spans in stream order, so each meets the one before it. */
static int by_stream_then_start(const void *x, const void *y)
{
	const struct ev_slot *a = *(struct ev_slot *const *)x, *b = *(struct ev_slot *const *)y;

	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	if (a->stream_id != b->stream_id)
		return a->stream_id < b->stream_id ? -1 : 1;
	return a->start < b->start ? -1 : a->start > b->start;
}

/*
 * A stream runs its work in order: behind a launch still running, a later
 * one on its stream is not asked (thousands may be queued, each query a
 * driver call). A few streams are remembered, by hash; one forgotten is
 * asked. Only with stream ids (CUDA 12+; else every stream's is 0). A launch
 * that began later on another thread but was queued first is read a poll
 * later.
 */
#define RUNNING_STREAMS 64
struct running_stream {
	uint64_t key, since; /* key as stream_end's, 0: none; since: its oldest running */
};

static struct running_stream *running_entry(struct running_stream *r, const struct ev_slot *s,
					    uint64_t *key)
{
	*key = (s->stream_id * DEVICES_MAX + (uint64_t)s->device) + 1;
	return &r[(unsigned)((*key * 0x9E3779B97F4A7C15ull) >> 32) % RUNNING_STREAMS];
}

static bool behind_running(struct running_stream *r, const struct ev_slot *s)
{
	uint64_t key;
	const struct running_stream *e = running_entry(r, s, &key);

	return rt.stream_id && e->key == key && s->host_start > e->since;
}

static void note_running(struct running_stream *r, const struct ev_slot *s)
{
	uint64_t key;
	struct running_stream *e = running_entry(r, s, &key);

	if (e->key != key || s->host_start < e->since)
		*e = (struct running_stream){ .key = key, .since = s->host_start };
}

/* The spans a poll read, copied out of their slots (under poll_lock). */
GT_TABLE(struct ev_slot, read_spans, SLOTS_MAX);

/*
 * A timed slot's span copied out, and the slot free at once: a launch that
 * found the table full takes it while this poll still sorts and draws (the
 * drain's poll of a full table holds poll_lock for milliseconds). On a
 * launching thread, only a span onto a row the drain made: else the slot
 * stays, SLOT_TIMED, for the drain to draw. NULL: left.
 */
static struct ev_slot *take(struct ev_slot *s, unsigned ndone, bool on_launch)
{
	if (on_launch && !stream_end(s->device, s->stream_id)->track) {
		atomic_store_explicit(&s->state, SLOT_TIMED, memory_order_release);
		return NULL;
	}
	struct ev_slot *span = &read_spans[ndone];

	/* not the whole slot: its state is every launch's to try (grab) */
	span->device = s->device;
	span->stream_id = s->stream_id;
	span->corr = s->corr;
	span->host_start = s->host_start;
	span->li = s->li;
	span->start = s->start;
	span->dur = s->dur;
	span->slack = s->slack;
	atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
	return span;
}

/* The finished slots (of one device, or of every device not being reset),
 * timed and drawn; final: unfinished ones are dropped. poll_lock held.
 * Oldest first (from the cursor on). on_launch: on a launching thread,
 * which waits for it: RECLAIM_BATCH slots (the next ones it takes), drawn
 * only onto rows the drain made. Returns how many slots it freed. */
static unsigned poll_slots(int only, bool final, bool on_launch)
{
	GT_TABLE(struct ev_slot *, done, SLOTS_MAX);
	struct running_stream running[RUNNING_STREAMS] = { 0 };
	unsigned ndone = 0, freed = 0, n = atomic_load_explicit(&nslots, memory_order_acquire);
	unsigned from = atomic_load_explicit(&cursor, memory_order_relaxed);
	unsigned most = on_launch ? RECLAIM_BATCH : n;

	for (unsigned i = 0; i < n && freed < most; i++) {
		struct ev_slot *s = &slots[(from + i) & (n - 1)], *span;
		int q, state = atomic_load_explicit(&s->state, memory_order_acquire);

		if (state == SLOT_TIMED && only < 0) {
			if ((span = take(s, ndone, on_launch))) {
				done[ndone++] = span;
				freed++;
			}
			continue;
		}
		if (state != SLOT_PENDING ||
		    (only >= 0 ? s->device != only
			       : atomic_load_explicit(&devs[s->device].state,
						      memory_order_acquire) == DEV_RESET))
			continue;
		if (!final && behind_running(running, s))
			continue;
		q = rt.event_query(s->ev1);
		if (q == NOT_READY && !final) {
			note_running(running, s);
			continue;
		}
		if (!q && time_slot(s)) {
			if (only >= 0) { /* timed for the reset: the drain draws it */
				atomic_store_explicit(&s->state, SLOT_TIMED, memory_order_release);
			} else if ((span = take(s, ndone, on_launch))) {
				done[ndone++] = span;
				freed++;
			}
			continue;
		}
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
		freed++;
	}
	qsort(done, ndone, sizeof(done[0]), by_stream_then_start);
	/* devices named before a row of theirs is made (only here), and for
	 * the watchdog's report of work still running */
	if (!on_launch)
		cupti__name_devices();
	for (unsigned i = 0; i < ndone; i++) {
		/* its row forgotten since take() (more than STREAM_ENDS streams
		 * in one read): its slot is gone, so it is counted */
		if (!emit_slot(done[i], on_launch))
			count_untimed();
	}
	return freed;
}

static void count_dropped(void)
{
	uint64_t lost = atomic_exchange(&dropped, 0);

	if (lost)
		gt_lost_add(cupti__key("cuda_event_timing"), lost);
}

void cupti__events_poll(bool final)
{
	uint64_t now = gt_clock_ns();

	if (atomic_load_explicit(&rt_state, memory_order_acquire) <= 0)
		return;
	pthread_mutex_lock(&poll_lock);
	int mode = our_calls_begin();
	for (int d = 0; d < DEVICES_MAX && !final; d++) {
		if (atomic_load_explicit(&devs[d].state, memory_order_acquire) == DEV_READY &&
		    now - devs[d].refit_at > REFIT_NS && !rt.set_device(d))
			refit(d);
	}
	poll_slots(-1, final, false);
	our_calls_end(mode);
	pthread_mutex_unlock(&poll_lock);
	count_dropped();
}

/*
 * cudaDeviceReset destroys the device's events, ours with them. Before it,
 * on the calling thread, the launches timed on the device are waited for
 * (at most RESET_WAIT_NS in all: a reset may be how a program gives up on a
 * kernel that never ends) and read; the drain draws them. After it, the
 * device's events, stream and reference are made anew at its next timed
 * launch, whatever the reset returned (it may report an earlier launch's
 * error, and reset all the same). The drain leaves the device alone
 * meanwhile; the program's other threads do too (the reset's contract).
 */
#define RESET_WAIT_NS (2000ull * 1000000)

int cupti__events_reset_begin(void)
{
	int dev = -1, expect = DEV_READY, cancel_state;
	uint64_t until;

	if (atomic_load_explicit(&rt_state, memory_order_acquire) <= 0)
		return -1;
	/* A cancel lands in the program's reset, as untraced, not in our wait
	 * (nanosleep) with the device marked DEV_RESET or poll_lock held:
	 * the wrapper's cleanup ends a reset begun (rt_unwound). */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	int mode = our_calls_begin();
	if (rt.get_device(&dev) || dev < 0 || dev >= DEVICES_MAX ||
	    !atomic_compare_exchange_strong(&devs[dev].state, &expect, DEV_RESET)) {
		our_calls_end(mode);
		pthread_setcancelstate(cancel_state, NULL);
		return -1;
	}
	until = gt_clock_ns() + RESET_WAIT_NS;
	for (unsigned i = 0; i < atomic_load(&nslots); i++) {
		if (atomic_load_explicit(&slots[i].state, memory_order_acquire) != SLOT_PENDING ||
		    slots[i].device != dev)
			continue;
		while (rt.event_query(slots[i].ev1) == NOT_READY && gt_clock_ns() < until)
			nanosleep(&(struct timespec){ 0, 20000 }, NULL);
	}
	pthread_mutex_lock(&poll_lock);
	poll_slots(dev, true, false);
	pthread_mutex_unlock(&poll_lock);
	our_calls_end(mode);
	count_dropped();
	pthread_setcancelstate(cancel_state, NULL);
	return dev;
}

void cupti__events_reset_end(int dev)
{
	if (dev < 0)
		return;
	pthread_mutex_lock(&poll_lock);
	for (unsigned i = 0; i < atomic_load(&nslots); i++)
		if (slots[i].device == dev)
			slots[i].ev0 = slots[i].ev1 = NULL;
	devs[dev].stream = devs[dev].ref = devs[dev].ref_spare = NULL;
	atomic_store_explicit(&devs[dev].init_stuck, false, memory_order_relaxed);
	atomic_store_explicit(&devs[dev].state, DEV_NEW, memory_order_release);
	pthread_mutex_unlock(&poll_lock);
}

/* The watchdog's question (pending.c): launches whose after-event the device
 * has not reached, asked of it; bounded: a poll that holds the lock long
 * (the drain stuck in CUDA) answers nothing. */
unsigned cupti__events_pending(struct gt_pending_work *out, unsigned max)
{
	struct timespec until;
	unsigned n = 0;

	if (atomic_load_explicit(&rt_state, memory_order_acquire) <= 0)
		return 0;
	until = gt_timespec_after_ms(CLOCK_REALTIME, 200);
	if (pthread_mutex_timedlock(&poll_lock, &until))
		return 0;
	int mode = our_calls_begin();
	for (unsigned i = 0; i < atomic_load(&nslots) && n < max; i++) {
		struct ev_slot *s = &slots[i];

		if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_PENDING ||
		    rt.event_query(s->ev1) != NOT_READY)
			continue;
		out[n++] = (struct gt_pending_work){
			.name = s->li.name, .corr = s->corr, .submitted_ns = s->host_start,
			.row_name = cupti__stream_label((uint32_t)s->stream_id),
			.device_name = cupti__device_label((uint32_t)s->device),
		};
	}
	our_calls_end(mode);
	pthread_mutex_unlock(&poll_lock);
	return n;
}

GT_FORK_CODE void cupti__events_forget(void)
{
	/* fork child: CUDA objects of the parent are gone. None without the
	 * runtime loaded for events: nothing to forget, no page to touch (a
	 * shell forks for every command). */
	int st = atomic_load(&rt_state);

	if (st == RT_LOADING) /* by a thread of the parent's, gone here */
		atomic_store(&rt_state, 0);
	if (st <= 0)
		return;
	pthread_mutex_init(&poll_lock, NULL);
	memset(stream_ends, 0, STREAM_ENDS * sizeof(stream_ends[0]));
	for (unsigned i = 0; i < atomic_load(&nslots); i++) {
		atomic_store(&slots[i].state, SLOT_FREE);
		slots[i].ev0 = slots[i].ev1 = NULL;
	}
	for (int d = 0; d < DEVICES_MAX; d++) {
		atomic_store(&devs[d].init_stuck, false);
		atomic_store(&devs[d].state, DEV_NEW);
	}
}
