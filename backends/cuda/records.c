// SPDX-License-Identifier: MIT
/*
 * CUPTI activity records -> device spans. Runs on the drain thread (or in a
 * unit test), so the caches below are its own and unlocked.
 *
 * Record layouts change within CUDA 13 (Kernel10 in 13.0, Kernel11 later),
 * so records are walked with cuptiActivityGetNextRecord and only the
 * fields of the prefix that every version since CUDA 12 shares are read;
 * the static asserts pin those offsets.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

#include "backends/cuda/internal.h"
#include "inject/capture.h"
#include "inject/clock.h"
#include "inject/shim.h"
#include "inject/tables.h"

/* ---- the stable prefixes ---- */

typedef CUpti_ActivityKernel10 rec_kernel;
typedef CUpti_ActivityMemcpy6 rec_memcpy;
typedef CUpti_ActivityMemcpyPtoP4 rec_p2p;
typedef CUpti_ActivityMemset4 rec_memset;
typedef CUpti_ActivitySynchronization2 rec_sync;
typedef CUpti_ActivityOverhead3 rec_overhead;
typedef CUpti_ActivityGraphTrace2 rec_graph;
typedef CUpti_ActivityExternalCorrelation rec_extcorr;
typedef CUpti_ActivityContext3 rec_context;

#define PIN(T, f, off) _Static_assert(offsetof(T, f) == (off), #T "." #f " moved")
PIN(rec_kernel, start, 16);
PIN(rec_kernel, end, 24);
PIN(rec_kernel, deviceId, 40);
PIN(rec_kernel, contextId, 44);
PIN(rec_kernel, streamId, 48);
PIN(rec_kernel, gridX, 52);
PIN(rec_kernel, blockX, 64);
PIN(rec_kernel, staticSharedMemory, 76);
PIN(rec_kernel, dynamicSharedMemory, 80);
PIN(rec_kernel, correlationId, 92);
PIN(rec_kernel, name, 104);
PIN(rec_kernel, graphNodeId, 144); /* Kernel6 .. Kernel10 */
PIN(rec_kernel, graphId, 156);
PIN(rec_memcpy, bytes, 8);
PIN(rec_memcpy, start, 16);
PIN(rec_memcpy, deviceId, 32);
PIN(rec_memcpy, correlationId, 44);
PIN(rec_memcpy, runtimeCorrelationId, 48);
PIN(rec_memcpy, graphNodeId, 64); /* Memcpy5 .. Memcpy6 */
PIN(rec_memcpy, graphId, 72);
PIN(rec_p2p, srcDeviceId, 44);
PIN(rec_p2p, dstDeviceId, 52);
PIN(rec_p2p, correlationId, 60);
PIN(rec_memset, bytes, 8);
PIN(rec_memset, correlationId, 44);
PIN(rec_memset, memoryKind, 50);
PIN(rec_memset, graphId, 72);
PIN(rec_sync, start, 8);
PIN(rec_sync, correlationId, 24);
PIN(rec_sync, cudaEventId, 36);
PIN(rec_overhead, objectId, 12);
PIN(rec_overhead, start, 24);
PIN(rec_graph, graphId, 28);
PIN(rec_graph, streamId, 36);
PIN(rec_extcorr, externalId, 8);
PIN(rec_extcorr, correlationId, 16);

/* Graph ids exist in every record version since CUDA 12 (CUPTI API 18). */
GT_HIDDEN uint32_t cupti_runtime_version = CUPTI_API_VERSION;
static bool has_graph_ids(void)
{
	return cupti_runtime_version >= 18;
}

/* ---- clock ---- */

/*
 * Below CUPTI 13.1 CUPTI keeps its own clock, CLOCK_REALTIME (slewed and
 * stepped by NTP), fitted to ours from paired reads (cupti__clock_refit) at
 * every flush, so at least every 100 ms while CUDA works. Between two fits a
 * CUPTI time is interpolated; past the last it goes on at the line's rate.
 * A read on the line within its reads' width adds nothing measurable: the
 * fit keeps the line's own point there (not the read's), so read noise
 * never stretches what the GPU measured, not even across fits. A read off
 * the line by more than the widths measures a new rate, over the whole line
 * since its last measured point. A read off by more than the reads' noise
 * and NTP's slewing allow is a step of CUPTI's clock (counted as
 * "clock_step"): the segment across it has no line, and a time in it is
 * placed by the fit on the side that can hold it; where both can, on the
 * side not before its launch, and without a launch erring early (clamped to
 * its launch, and counted) rather than late; work queued deep, launched
 * before either side, by its stream's order (emit).
 */
#define FIT_MAX        256
#define FIT_MIN_GAP_NS (10ull * 1000000)
#define STEP_NOISE_NS  20000
#define RATE_MAX_DEV   0.002 /* NTP slews 500 ppm at most */
#define FUTURE_SLACK_NS 1000000 /* a line's error over the time since its last fit */
#define NEAR_SLACK_NS  STEP_NOISE_NS /* a converted time's error against our clock */
struct fit {
	uint64_t cupti, host;
	double rate;      /* host ns per CUPTI ns since the previous fit; 0: a step */
	double line_rate; /* the line's rate here, to go on with past it */
};
GT_TABLE(struct fit, fits, FIT_MAX);
static _Atomic unsigned nfits; /* 0: CUPTI's clock is ours (identity) */
/* the latest CUPTI time read before a step back: a time past the last fit up to here
 * may be one from before the step (0: no step back in the fits) */
static uint64_t before_step_back_max;
/* the line's last measured point; host is within width/2 of the truth */
static struct {
	uint64_t cupti, host, width;
} line;

void cupti__clock_identity(void)
{
	atomic_store(&nfits, 0);
}

uint64_t CUPTIAPI cupti__timestamp(void)
{
	return gt_clock_ns();
}

/* The rate to go on with: the latest line's (1 if none). */
static double last_rate(unsigned n)
{
	for (unsigned i = n; i-- > 1;)
		if (fits[i].rate > 0)
			return fits[i].line_rate;
	return 1.0;
}

static uint64_t along(const struct fit *f, uint64_t c, double rate)
{
	return f->host + (uint64_t)gt_round((double)(int64_t)(c - f->cupti) * rate);
}

static bool plausible(double rate)
{
	return fabs(rate - 1.0) < RATE_MAX_DEV;
}

/* The best of a few paired reads: host time at the midpoint of the read. */
void cupti__clock_refit(void)
{
	uint64_t best = UINT64_MAX, c = 0, host = 0;
	unsigned n = atomic_load(&nfits);

	for (int i = 0; i < 5; i++) {
		uint64_t t, h1 = gt_clock_ns();
		if (cupti_fn.cuptiGetTimestamp(&t) != CUPTI_SUCCESS)
			return;
		uint64_t h2 = gt_clock_ns();
		if (h2 - h1 < best) {
			best = h2 - h1;
			c = t;
			host = h1 + (h2 - h1) / 2;
		}
	}
	struct fit f = { c, host, 1.0, 1.0 };
	bool measured = true;
	if (n) {
		const struct fit *a = &fits[n - 1];
		double rate = last_rate(n), dt = (double)(host - a->host);
		bool known = n > 1 && fits[n - 1].rate > 0;
		int64_t off = (int64_t)(host - along(a, c, rate));
		/* the line's noise: the reads, and the rate while it is unknown or changes */
		double allowed = STEP_NOISE_NS + dt * (known ? 100e-6 : 600e-6);

		if (host - a->host < FIT_MIN_GAP_NS)
			return;
		f.line_rate = rate;
		if (fabs((double)off) > allowed) {
			f.rate = 0;
			gt_adjust_add(cupti__key("clock_step"), 1, (uint64_t)llabs(off));
			pr_dbg("cupti: CUPTI's clock stepped by %lld ns", (long long)-off);
		} else if ((uint64_t)llabs(off) <= (line.width + best) / 2 + 1) {
			/* on the line within the reads' widths: nothing measurable
			 * changed; the line's point, not the read's noise */
			f.host = along(a, c, rate);
			f.rate = rate;
			measured = false;
		} else {
			/* the segment joins the last point to this read; the line
			 * goes on at the rate over all of it since its last read */
			double seg = dt / (double)(int64_t)(c - a->cupti);
			double whole = (double)(host - line.host) / (double)(int64_t)(c - line.cupti);
			f.rate = plausible(seg) ? seg : rate;
			f.line_rate = plausible(whole) ? whole : f.rate;
		}
	}
	if (measured)
		line.cupti = c, line.host = host, line.width = best;
	if (n >= FIT_MAX) {
		memmove(fits, fits + 1, (FIT_MAX - 1) * sizeof(fits[0]));
		n = FIT_MAX - 1;
	}
	fits[n] = f;
	/* a step's segment holds the old line's times up to the step's fit */
	before_step_back_max = 0;
	for (unsigned i = 1; i <= n; i++) {
		uint64_t old_end = fits[i - 1].cupti + (fits[i].host - fits[i - 1].host);

		if (!fits[i].rate && fits[i].cupti < old_end && old_end > before_step_back_max)
			before_step_back_max = old_end;
	}
	atomic_store(&nfits, n + 1);
}

/* A time in the segment across a step, placed by the side that can hold
 * it: when both can, the earlier that does not come before what it follows
 * (not_before: its launch), and without one, for a step forward (CUPTI
 * jumped ahead) the later fit's line unless that puts it before the
 * segment; for a step back, the earlier fit's line unless that puts it past
 * the segment. */
static bool across_step(const struct fit *a, const struct fit *b, double rate, uint64_t c,
			uint64_t not_before, uint64_t *host)
{
	int64_t step = (int64_t)(b->cupti - a->cupti) - (int64_t)(b->host - a->host);
	uint64_t old = along(a, c, rate), now = along(b, c, rate);
	bool in_old = (int64_t)(c - a->cupti) >= 0 && old <= b->host;
	bool in_new = (int64_t)(b->cupti - c) >= 0 && now >= a->host;

	if (in_old && in_new && not_before) {
		uint64_t lo = old < now ? old : now, hi = old < now ? now : old;

		*host = lo + NEAR_SLACK_NS >= not_before ? lo : hi;
		return true;
	}
	if (step > 0 ? in_new : !in_old && in_new) {
		*host = now;
		return true;
	}
	if (in_old) {
		*host = old;
		return true;
	}
	return false;
}

/* Segment i (fits i-1 to i) measured (not a step's) and holding t: its host time. */
static bool measured_to_host(uint64_t t, unsigned i, uint64_t *host)
{
	const struct fit *a = &fits[i - 1], *b = &fits[i];

	if (!(b->rate > 0 && t >= a->cupti && t <= b->cupti))
		return false;
	*host = along(a, t, b->rate);
	return true;
}

/* Of a measured segment's time and a step's beside it, both holding one CUPTI time: the
 * measured one unless that is before what it follows (its launch) and the step's is not. */
static uint64_t measured_or_step(uint64_t measured, uint64_t step, uint64_t not_before)
{
	if (not_before && measured + NEAR_SLACK_NS < not_before &&
	    step + NEAR_SLACK_NS >= not_before)
		return step;
	return measured;
}

/*
 * A time no later than the last fit: the segment that holds it. False when none does.
 * After a step back, the CUPTI times of a step's segment overlap those of the measured
 * segments either side: a time up to |step| before the fit ahead of the step is also
 * one the step's segment puts |step| later, on its new side (read that long after the
 * fit, had the step come right after it), and one after the fit behind the step is also
 * one of its old side. The measured segment holds it for sure (the step's side only had
 * the step come within |step| of a fit): there, unless that is before its launch. Taken
 * first by the step's segment (the newer), a sync read just before that fit was drawn
 * |step| later, past its call, and its kernel after the sync returned.
 */
static bool segment_to_host(uint64_t t, unsigned n, uint64_t not_before, uint64_t *host)
{
	for (unsigned i = n - 1; i >= 1; i--) {
		const struct fit *a = &fits[i - 1], *b = &fits[i];
		uint64_t other;

		if (measured_to_host(t, i, host)) {
			/* the step's segment before it (checked after it) */
			if (i >= 2 && !a->rate &&
			    across_step(&fits[i - 2], a, last_rate(i - 1), t, not_before, &other))
				*host = measured_or_step(*host, other, not_before);
			return true;
		}
		if (!b->rate && across_step(a, b, last_rate(i), t, not_before, host)) {
			/* the measured segment before it (the one after it did not hold t) */
			if (i >= 2 && measured_to_host(t, i - 1, &other))
				*host = measured_or_step(other, *host, not_before);
			return true;
		}
	}
	return false;
}

uint64_t cupti__to_host_near(uint64_t t, uint64_t not_before)
{
	unsigned n = atomic_load(&nfits);
	uint64_t host, older;

	if (!n || !t)
		return t;
	if (t >= fits[n - 1].cupti) {
		host = along(&fits[n - 1], t, last_rate(n));
		/* After CUPTI's clock stepped back, a time from before the step is
		 * above the last fit too, and its own segment puts it |step| earlier.
		 * Of the two, the earlier unless that is before what it follows (the
		 * work's launch), and without one, unless the later is no future. */
		if (t <= before_step_back_max && segment_to_host(t, n, not_before, &older) &&
		    (not_before ? older + NEAR_SLACK_NS >= not_before
				: host > gt_clock_ns() + FUTURE_SLACK_NS))
			return older;
		return host;
	}
	if (segment_to_host(t, n, not_before, &host))
		return host;
	/* before the first fit (or in no segment): the oldest line */
	return along(&fits[0], t, n > 1 && fits[1].rate > 0 ? fits[1].rate : 1.0);
}

uint64_t cupti__to_host(uint64_t t)
{
	return cupti__to_host_near(t, 0);
}

/* ---- contexts and devices ---- */

#define CTX_MAX 256
static struct {
	_Atomic uint32_t id1; /* context id + 1 */
	_Atomic uint32_t device;
} ctx_map[CTX_MAX];

void cupti__context_device(uint32_t context_id, uint32_t device_id)
{
	for (unsigned i = 0; i < CTX_MAX; i++) {
		unsigned s = (context_id + i) % CTX_MAX;
		uint32_t cur = atomic_load(&ctx_map[s].id1), expect = 0;

		if (cur == context_id + 1 ||
		    (!cur && (atomic_compare_exchange_strong(&ctx_map[s].id1, &expect,
							     context_id + 1) ||
			      expect == context_id + 1))) {
			atomic_store(&ctx_map[s].device, device_id);
			return;
		}
	}
}

static uint32_t context_device(uint32_t context_id)
{
	for (unsigned i = 0; i < CTX_MAX; i++) {
		unsigned s = (context_id + i) % CTX_MAX;
		uint32_t cur = atomic_load(&ctx_map[s].id1);

		if (cur == context_id + 1)
			return atomic_load(&ctx_map[s].device);
		if (!cur)
			break;
	}
	return 0; /* unknown context: the first device */
}

#define DEV_NAMED_MAX 64
static char dev_names[DEV_NAMED_MAX][128];
static _Atomic bool dev_named[DEV_NAMED_MAX];
static struct gt_arg dev_props[DEV_NAMED_MAX][GT_DEVICE_PROPS_MAX];
static unsigned dev_nprops[DEV_NAMED_MAX];

void cupti__device_prop(uint32_t device_id, const char *key, uint64_t value)
{
	if (device_id >= DEV_NAMED_MAX || atomic_load(&dev_named[device_id]) ||
	    dev_nprops[device_id] >= GT_DEVICE_PROPS_MAX - 2) /* "id" and "name" go first */
		return;
	dev_props[device_id][dev_nprops[device_id]++] =
		(struct gt_arg){ .key = gt_str_intern(key), .type = GT_ARG_U64, .v.u = value };
}

/* Kineto's deviceProperties for a CUDA device: its ordinal, the driver's
 * name and what cupti__name_devices read. */
static void device_properties(uint32_t row, uint32_t device)
{
	gt_device_prop(row, (struct gt_arg){ .key = gt_str_intern("id"), .type = GT_ARG_U64,
					     .v.u = device });
	if (device >= DEV_NAMED_MAX || !atomic_load(&dev_named[device]))
		return;
	gt_device_prop(row, (struct gt_arg){ .key = gt_str_intern("name"), .type = GT_ARG_STR,
					     .v.u = gt_str_intern(dev_names[device]) });
	for (unsigned i = 0; i < dev_nprops[device]; i++)
		gt_device_prop(row, dev_props[device][i]);
}

void cupti__device_name(uint32_t device_id, const char *name)
{
	if (device_id >= DEV_NAMED_MAX || atomic_load(&dev_named[device_id]))
		return;
	snprintf(dev_names[device_id], sizeof(dev_names[0]), "%s", name);
	atomic_store(&dev_named[device_id], true);
}

/* ---- rows: one per stream, plus sync and overhead rows per device ---- */

enum row_kind { ROW_DEVICE, ROW_STREAM, ROW_STREAM_SYNC, ROW_DEVICE_SYNC, ROW_OVERHEAD,
		ROW_OTHER, ROW_OTHER_SYNC };

#define ROWS_MAX 4096
/* A stream's rows live as long as the process (a trace's row is never
 * another's): past this many, streams share their device's "other streams"
 * rows, each span still naming its stream (args.stream). Room is left for
 * the devices' own rows. */
#define STREAM_ROWS_MAX 2048
struct row_slot {
	uint64_t key; /* 0: empty */
	uint32_t id;
};
GT_TABLE(struct row_slot, rows, ROWS_MAX);
static unsigned nstream_rows;

static uint64_t row_key(enum row_kind kind, uint32_t device, uint32_t stream)
{
	return ((uint64_t)(kind + 1) << 60) | ((uint64_t)(device & 0xfffffff) << 32) | stream;
}

static void device_label(uint32_t device, char *name, size_t len)
{
	if (device < DEV_NAMED_MAX && atomic_load(&dev_named[device]))
		snprintf(name, len, "GPU %u: %s", device, dev_names[device]);
	else
		snprintf(name, len, "GPU %u", device);
}

uint32_t cupti__device_label(uint32_t device)
{
	char name[200];

	device_label(device, name, sizeof(name));
	return gt_str_intern(name);
}

uint32_t cupti__stream_label(uint32_t stream_id)
{
	char name[32];

	snprintf(name, sizeof(name), "stream %u", stream_id);
	return gt_str_intern(name);
}

/* A device past the process's limit: its work is not drawn (emit), rather
 * than on device 1's row, which took work of no row. */
static void no_device_row(const char *name)
{
	static bool said;

	gt_device_row_refused(&said, "cuda", name, "work");
}

static uint32_t device_id_row(uint32_t device)
{
	uint64_t key = row_key(ROW_DEVICE, device, 0);
	unsigned h = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 52) % ROWS_MAX;
	char name[200];
	uint32_t id;

	for (unsigned i = 0; i < ROWS_MAX; i++) {
		struct row_slot *r = &rows[(h + i) % ROWS_MAX];
		if (r->key == key)
			return r->id;
		if (!r->key) {
			device_label(device, name, sizeof(name));
			r->id = gt_device_row(name);
			if (r->id)
				device_properties(r->id, device);
			else
				no_device_row(name);
			r->key = key;
			return r->id;
		}
	}
	id = gt_device_row("GPU");
	if (!id)
		no_device_row("GPU");
	return id;
}

static uint32_t row(enum row_kind kind, uint32_t device, uint32_t stream)
{
	uint64_t key = row_key(kind, device, stream);
	unsigned h = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 52) % ROWS_MAX;
	char name[64];
	uint32_t dev_row;
	int sort;

	for (unsigned i = 0; i < ROWS_MAX; i++) {
		struct row_slot *r = &rows[(h + i) % ROWS_MAX];
		if (r->key == key)
			return r->id;
		if (r->key)
			continue;
		if ((kind == ROW_STREAM || kind == ROW_STREAM_SYNC) &&
		    nstream_rows >= STREAM_ROWS_MAX) {
			static bool said;

			if (!said)
				pr_warn("more than %u CUDA streams: the work of later ones is on its "
					"device's row \"other streams\" (args.stream names its stream)",
					STREAM_ROWS_MAX / 2);
			said = true;
			return row(kind == ROW_STREAM ? ROW_OTHER : ROW_OTHER_SYNC, device, 0);
		}
		switch (kind) {
		case ROW_STREAM:
			snprintf(name, sizeof(name), "stream %u", stream);
			sort = (int)(stream > INT_MAX / 2 - 2 ? INT_MAX / 2 - 2 : stream) * 2;
			break;
		case ROW_STREAM_SYNC:
			snprintf(name, sizeof(name), "stream %u sync", stream);
			sort = (int)(stream > INT_MAX / 2 - 2 ? INT_MAX / 2 - 2 : stream) * 2 + 1;
			break;
		case ROW_DEVICE_SYNC:
			snprintf(name, sizeof(name), "sync");
			sort = INT_MAX - 1;
			break;
		case ROW_OTHER:
			snprintf(name, sizeof(name), "other streams");
			sort = INT_MAX - 3;
			break;
		case ROW_OTHER_SYNC:
			snprintf(name, sizeof(name), "other streams sync");
			sort = INT_MAX - 2;
			break;
		default:
			snprintf(name, sizeof(name), "CUPTI overhead");
			sort = INT_MAX;
			break;
		}
		dev_row = device_id_row(device);
		if (!dev_row)
			return 0; /* no row for its device: nothing of it is drawn */
		r->id = gt_queue_row(dev_row, name, sort);
		if (!r->id) {
			/* the process's rows are all taken (4096): its device's own */
			static bool said;

			if (!said)
				pr_warn("no room for CUDA row \"%s\" (4096 rows per process): its "
					"work is on its device's own row", name);
			said = true;
			r->id = gt_device_track(dev_row);
		}
		r->key = key;
		nstream_rows += kind == ROW_STREAM || kind == ROW_STREAM_SYNC;
		return r->id;
	}
	return gt_device_track(device_id_row(device));
}

void cupti__mark_devices(uint64_t at, uint32_t name, uint32_t reason)
{
	uint64_t done = 0;

	for (unsigned i = 0; i < CTX_MAX; i++) {
		uint32_t dev;
		if (!atomic_load(&ctx_map[i].id1))
			continue;
		dev = atomic_load(&ctx_map[i].device);
		if (dev >= 64 || (done >> dev) & 1)
			continue;
		done |= 1ull << dev;
		uint32_t dev_row = device_id_row(dev);
		if (!dev_row)
			continue; /* no row for it (no_device_row) */
		struct gt_arg a = { .key = cupti__key("reason"), .type = GT_ARG_STR, .v.u = reason };
		struct gt_event ev = {
			.start_ns = at, .end_ns = at, .name = name, .cat = cupti__key("gputrace"),
			.track = gt_device_track(dev_row), .type = GT_EV_INSTANT,
			.flags = GT_EVF_DEVICE,
		};
		gt_emit(&ev, &a, 1);
	}
}

uint32_t cupti__device_track(uint32_t device_id)
{
	return gt_device_track(device_id_row(device_id));
}

uint32_t cupti__stream_row(uint32_t device_id, uint32_t stream_id)
{
	return row(ROW_STREAM, device_id, stream_id);
}

/* ---- names ---- */

/* Kernel names: CUPTI shares one string per kernel, so the pointer is the
 * key; the text is compared too, in case a module unload reused it. */
#define KNAME_MAX 4096
struct kname_slot {
	const char *ptr;
	uint32_t id;
	uint32_t raw; /* the mangled name's id, to check the text */
};
GT_TABLE(struct kname_slot, knames, KNAME_MAX);

/*
 * Kernel names point into CUPTI's (the driver's) memory, which goes with the
 * kernel's module: before CUPTI 13.4 Update 1 a record read after a module
 * unload (or reload) names garbage or another kernel. So each buffer's names
 * are copied when CUPTI hands the buffer over (any thread), and the record
 * made to point to the copy, which lives as long as the process.
 */
void cupti__pin_names(uint8_t *buf, size_t valid)
{
	struct {
		const char *cupti, *ours;
	} seen[8] = { { 0 } };
	CUpti_Activity *r = NULL;
	unsigned next = 0;

	if (!cupti_fn.cuptiActivityGetNextRecord)
		return;
	while (cupti_fn.cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
		rec_kernel *k = (rec_kernel *)r;
		const char *ours = NULL;
		unsigned i;

		if ((r->kind != CUPTI_ACTIVITY_KIND_KERNEL &&
		     r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) || !k->name)
			continue;
		/* CUPTI shares one string per kernel: records of a kernel repeat it */
		for (i = 0; i < 8 && seen[i].cupti != k->name; i++)
			;
		if (i < 8) {
			ours = seen[i].ours;
		} else {
			ours = gt_str_get(gt_str_intern(k->name), NULL);
			seen[next % 8].cupti = k->name;
			seen[next % 8].ours = ours;
			next++;
		}
		if (ours)
			k->name = ours;
	}
}

uint32_t cupti__kernel_name_id(const char *name)
{
	char *pretty = name && *name ? cupti__demangle(name) : NULL;
	uint32_t id = pretty ? gt_str_intern(pretty) : name && *name ? gt_str_intern(name)
								    : cupti__key("kernel");

	free(pretty);
	return id;
}

/* The launches of a buffer's device records are done (pending.c). */
void cupti__retire_records(uint8_t *buf, size_t valid)
{
	CUpti_Activity *r = NULL;

	if (!cupti_fn.cuptiActivityGetNextRecord)
		return;
	while (cupti_fn.cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
		switch (r->kind) {
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
			cupti__pending_retire(((const rec_kernel *)r)->correlationId);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY:
			cupti__pending_retire(((const rec_memcpy *)r)->correlationId);
			cupti__pending_retire(((const rec_memcpy *)r)->runtimeCorrelationId);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY2:
			cupti__pending_retire(((const rec_p2p *)r)->correlationId);
			break;
		case CUPTI_ACTIVITY_KIND_MEMSET:
			cupti__pending_retire(((const rec_memset *)r)->correlationId);
			break;
		case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
			cupti__pending_retire(((const rec_graph *)r)->correlationId);
			break;
		default:
			break;
		}
	}
}

static uint32_t kernel_name(const char *name)
{
	size_t len;
	uintptr_t h;

	if (!name || !*name)
		return cupti__key("kernel");
	h = ((uintptr_t)name >> 3) * 0x9e3779b97f4a7c15ull;
	for (unsigned i = 0; i < 8; i++) {
		struct kname_slot *k = &knames[(h + i) % KNAME_MAX];
		if (k->ptr == name) {
			const char *raw = gt_str_get(k->raw, &len);
			if (raw && !strcmp(raw, name))
				return k->id;
		}
		if (!k->ptr || k->ptr == name || i == 7) {
			char *pretty = cupti__demangle(name);
			k->raw = gt_str_intern(name);
			k->id = pretty ? gt_str_intern(pretty) : k->raw;
			k->ptr = name;
			free(pretty);
			return k->id;
		}
	}
	return gt_str_intern(name);
}

/* Names as rows of text, not pointers: none for the loader to relocate in every
 * process (README, "Overhead"). */
static const char copy_kinds[][8] = { "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
				      "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP" };
static const char mem_kinds[][16] = { "Unknown", "Pageable", "Pinned",        "Device",
				      "Array",   "Managed",  "Device Static", "Managed Static" };
#define NCOPY (sizeof(copy_kinds) / sizeof(copy_kinds[0]))
#define NMEM  (sizeof(mem_kinds) / sizeof(mem_kinds[0]))

static uint32_t copy_kind_str(unsigned kind)
{
	static uint32_t ids[NCOPY];

	if (kind >= NCOPY)
		kind = 0;
	if (!ids[kind])
		ids[kind] = gt_str_intern(copy_kinds[kind]);
	return ids[kind];
}

/* "Memcpy HtoD (Pageable -> Device)" */
static uint32_t memcpy_name(unsigned kind, unsigned src, unsigned dst)
{
	static uint32_t ids[NCOPY][NMEM][NMEM];
	char s[96];

	kind = kind < NCOPY ? kind : 0;
	src = src < NMEM ? src : 0;
	dst = dst < NMEM ? dst : 0;
	if (!ids[kind][src][dst]) {
		snprintf(s, sizeof(s), "Memcpy %s (%s -> %s)", copy_kinds[kind], mem_kinds[src],
			 mem_kinds[dst]);
		ids[kind][src][dst] = gt_str_intern(s);
	}
	return ids[kind][src][dst];
}

static uint32_t memset_name(unsigned mem)
{
	static uint32_t ids[NMEM];
	char s[64];

	mem = mem < NMEM ? mem : 0;
	if (!ids[mem]) {
		snprintf(s, sizeof(s), "Memset (%s)", mem_kinds[mem]);
		ids[mem] = gt_str_intern(s);
	}
	return ids[mem];
}

static uint32_t sync_name(unsigned type)
{
	static const char names[][24] = { "Synchronize", "Event Sync", "Stream Wait Event",
					  "Stream Sync", "Context Sync" };
	static uint32_t ids[5];

	type = type < 5 ? type : 0;
	if (!ids[type])
		ids[type] = gt_str_intern(names[type]);
	return ids[type];
}

static uint32_t overhead_name(unsigned kind)
{
	static const struct {
		unsigned kind;
		char name[24];
	} names[] = {
		{ CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER, "Driver compiler" },
		{ CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, "CUPTI buffer flush" },
		{ CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION, "CUPTI instrumentation" },
		{ CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE, "CUPTI resource" },
		{ CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING, "Module loading" },
		{ CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING, "Lazy function loading" },
		{ CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL, "Command buffer full" },
		{ CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST, "CUPTI buffer request" },
		{ CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT, "UVM activity init" },
	};
	static uint32_t ids[sizeof(names) / sizeof(names[0])], unknown;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (names[i].kind == kind) {
			if (!ids[i])
				ids[i] = gt_str_intern(names[i].name);
			return ids[i];
		}
	}
	if (!unknown)
		unknown = gt_str_intern("CUPTI overhead");
	return unknown;
}

/* ---- external correlation: CUPTI id -> the id someone pushed ---- */

#define EXT_MAX 4096
struct ext_map_entry {
	uint32_t corr;
	uint64_t ext;
};
GT_TABLE(struct ext_map_entry, ext_map, EXT_MAX);

static void ext_note(const rec_extcorr *r)
{
	ext_map[r->correlationId % EXT_MAX].corr = r->correlationId;
	ext_map[r->correlationId % EXT_MAX].ext = r->externalId;
}

static uint64_t ext_find(uint32_t corr)
{
	return ext_map[corr % EXT_MAX].corr == corr && corr ? ext_map[corr % EXT_MAX].ext : 0;
}

/* ---- launch start times, by CUPTI correlation id ---- */

/*
 * One 64-bit word per slot, so a reader never sees half of two writers:
 * the correlation id's bits above the slot index, and the low 46 bits of
 * the start time (19.5 hours of nanoseconds; the rest comes from the
 * device time it is compared with). A slot is taken again LT_BITS of
 * correlation ids later (every CUDA call takes one), so a record read later
 * than that has no launch: its times are neither clamped nor placed by it
 * across a step of CUPTI's clock. 2^14 ids were 40 ms of a program launching
 * flat out (400k calls a second on the simulator), under a drain cycle:
 * with a step, thousands of kernels drawn 3 ms before their launch. 2^17:
 * 1 MiB, faulted in as ids reach it.
 */
#define LT_BITS  17
#define LT_TBITS 46
#define LT_TMASK ((1ull << LT_TBITS) - 1)
/* The top bit (the id's bits above LT_BITS take 15): the call returned, its span is in
 * its thread's ring (cupti__launch_returned) */
#define LT_RETURNED (1ull << 63)
/* A record of its work came (launch_seen); it was counted lost as returning after
 * CUPTI's exit flush (cupti__launch_after_exit): whichever of the two comes second sees
 * the other's bit, so a launch whose record the flush did hand over is not counted. */
#define LT_SEEN     (1ull << 62)
#define LT_COUNTED  (1ull << 61)
#define LT_FLAGS    (LT_RETURNED | LT_SEEN | LT_COUNTED)
GT_TABLE(_Atomic uint64_t, launch_table, 1u << LT_BITS);

static uint64_t lt_value(uint32_t corr, uint64_t start_ns)
{
	return ((uint64_t)(corr >> LT_BITS) << LT_TBITS) | (start_ns & LT_TMASK);
}

static _Atomic uint64_t *lt_slot(uint32_t corr)
{
	return &launch_table[corr & ((1u << LT_BITS) - 1)];
}

void cupti__launch_note(uint32_t corr, uint64_t start_ns)
{
	atomic_store_explicit(lt_slot(corr), lt_value(corr, start_ns), memory_order_relaxed);
}

/* Sets bit on the slot if it is corr's launch: the word before, 0 if it is not (a newer
 * launch's, 2^17 ids on, is left alone). */
static uint64_t lt_mark(uint32_t corr, uint64_t bit)
{
	_Atomic uint64_t *slot = lt_slot(corr);
	uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);

	while (v && ((v & ~LT_FLAGS) >> LT_TBITS) == (corr >> LT_BITS)) {
		if (atomic_compare_exchange_weak_explicit(slot, &v, v | bit, memory_order_acq_rel,
							  memory_order_relaxed))
			return v;
	}
	return 0;
}

/*
 * After the call's span went into its thread's ring: the drain that sees the mark reads
 * the span after it. Not once the process began to end: the exit's last read of the
 * rings may have come before this span went in (a thread launching on through the
 * exit), and work of a launch marked returned is drawn whether its span was read or
 * not: a kernel or fill drawn without its launch, the trace's last event (1 run in ~100
 * of 4 threads launching through the exit, at load 12). Unmarked, its work is drawn only
 * with its span (writer/flows.c, launch_never_returned). The fence puts the span's store
 * before the look at the end, as the exit's puts the end before its read of the rings
 * (shim__end_host): one of the two sees the other.
 */
void cupti__launch_returned(uint32_t corr)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (gt_unlikely(atomic_load_explicit(&gt_st.host_end_ns, memory_order_relaxed)))
		return;
	lt_mark(corr, LT_RETURNED);
}

bool cupti__launch_after_exit(uint32_t corr)
{
	return !(lt_mark(corr, LT_COUNTED) & LT_SEEN);
}

/* A record of a launch's work: if the launch was counted lost meanwhile (it returned
 * after CUPTI's exit flush began, yet the flush handed its work over), it is not. */
static void launch_seen(uint32_t corr)
{
	if (gt_unlikely(lt_mark(corr, LT_SEEN) & LT_COUNTED))
		gt_lost_add(cupti__key("cupti_after_exit"), (uint64_t)-1);
}

/* The slot's word if it is this launch's, else 0. */
static uint64_t lt_find(uint32_t corr)
{
	uint64_t v = atomic_load_explicit(lt_slot(corr), memory_order_acquire);

	if (!v || ((v & ~LT_FLAGS) >> LT_TBITS) != (corr >> LT_BITS))
		return 0;
	return v;
}

/* The launch's start closest to `near` (a host time), or 0 if unknown. */
uint64_t cupti__launch_start(uint32_t corr)
{
	return lt_find(corr) & LT_TMASK; /* caller rebuilds the high bits */
}

/* ---- emitting ---- */

/*
 * A span moved later, to its launch (the clock conversion erred early, as across a step
 * of the device's clock), would overlap the next on its stream row, which was launched
 * earlier and queued: a burst's launches are each moved to their own launch, microseconds
 * apart, while each runs for longer. So the spans after a moved one on its row start no
 * earlier than it ends (moved too, as far, counted the same) until one does by itself.
 * Only work that began after the moved one had ended follows it: a record of work that
 * began before that (read late, or run beside it) is left where the clock put it.
 */
#define MOVED_ROWS_MAX 16
static struct moved_row {
	uint32_t track;
	uint64_t ended; /* the moved span's end before the move */
	uint64_t end;   /* and after it */
} moved[MOVED_ROWS_MAX];
static unsigned nmoved;

static struct moved_row *moved_find(uint32_t track)
{
	for (unsigned i = 0; i < nmoved; i++)
		if (moved[i].track == track)
			return &moved[i];
	return NULL;
}

/* m: the row's entry, or NULL to make one (the first goes when all are taken). */
static void moved_note(struct moved_row *m, uint32_t track, uint64_t ended, uint64_t end)
{
	if (!m) {
		if (nmoved == MOVED_ROWS_MAX)
			memmove(moved, moved + 1, --nmoved * sizeof(*moved));
		m = &moved[nmoved++];
	}
	*m = (struct moved_row){ .track = track, .ended = ended, .end = end };
}

/*
 * Where the latest work placed on each stream ended (host ns): a stream runs its work in
 * order, each starting no earlier than the one before ended. Across a step of CUPTI's
 * clock a time either side can hold is placed by its launch, but work queued deep (a
 * program launching flat out, the device running far behind) was launched long before
 * either: the earlier side, for work started after a step back of 3 ms, put each kernel
 * of the 3 ms after it onto the one that ran 3 ms before (overlapping on the stream's
 * row, and one kernel across the segment's end drawn 3 ms long). Keyed by device and
 * stream, not by row: streams past STREAM_ROWS_MAX share one.
 */
#define STREAM_ENDS_MAX 4096
struct stream_end {
	uint64_t key; /* row_key(ROW_STREAM, ...), 0: empty */
	uint64_t end;
	uint64_t cupti_end; /* the same end on CUPTI's clock, as recorded */
	bool follow; /* placed by the work ahead of it across a step (emit) */
};
GT_TABLE(struct stream_end, stream_ends, STREAM_ENDS_MAX);

/* The stream's slot (a full neighbourhood gives another stream's: key tells). */
static struct stream_end *stream_end_of(uint64_t key)
{
	unsigned h = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 52) % STREAM_ENDS_MAX;

	for (unsigned i = 0; i < 8; i++) {
		struct stream_end *e = &stream_ends[(h + i) % STREAM_ENDS_MAX];
		if (e->key == key || !e->key)
			return e;
	}
	return &stream_ends[h];
}

/* The key of a record's stream, or 0 for a graph's node: a graph's branches run
 * side by side, reported on the stream it was launched into. */
static uint64_t in_order(uint32_t graph, uint32_t device, uint32_t stream)
{
	return graph && has_graph_ids() ? 0 : row_key(ROW_STREAM, device, stream);
}

struct span {
	uint64_t start, end;
	uint64_t stream; /* work run in its stream's order: row_key(ROW_STREAM, ...); 0: none */
	uint32_t corr, corr2;
	uint32_t name, cat, track;
	uint16_t type;
	bool clamp; /* device work: never before its launch began */
};

#define ARG_U(k, val) ((struct gt_arg){ .key = (k), .type = GT_ARG_U64, .v.u = (val) })
#define ARG_S(k, val) ((struct gt_arg){ .key = (k), .type = GT_ARG_STR, .v.u = (val) })

/* The launch's start (host ns) of device work, by either id (copies carry the
 * runtime's too); 0 when unknown. near: a host time within hours of it. *unreturned:
 * its call had not returned yet (its span not in a ring). */
static uint64_t launch_of(const struct span *s, uint64_t near, bool *unreturned)
{
	const uint64_t span = 1ull << 46;
	uint64_t v = lt_find(s->corr), low, launch;

	if (!v && s->corr2)
		v = lt_find(s->corr2);
	*unreturned = v && !(v & LT_RETURNED);
	low = v & LT_TMASK;
	if (!low)
		return 0;
	/* rebuild the bits the launch table does not keep */
	launch = (near & ~(span - 1)) | low;
	if (launch > near + span / 2)
		launch -= span;
	else if (launch + span / 2 < near)
		launch += span;
	return launch;
}

static void emit(const struct span *s, struct gt_arg *args, unsigned nargs)
{
	if (s->type != GT_EV_HOST_SPAN && !s->track) {
		/* its device has no row (no_device_row): not drawn, so counted */
		gt_lost_add(cupti__key("no_device_row"), 1);
		return;
	}
	bool unreturned = false;
	uint64_t launch = s->clamp ? launch_of(s, gt_clock_ns(), &unreturned) : 0;
	uint64_t start = cupti__to_host_near(s->start, launch);
	struct stream_end *se = s->stream ? stream_end_of(s->stream) : NULL;
	bool known = se && se->key == s->stream;
	uint64_t prev = known ? se->end : 0;
	bool follow = false;

	if (start + NEAR_SLACK_NS < prev) {
		/* before the work ahead of it on its stream ended, which it cannot
		 * be: where a step's other side can hold it, that side */
		uint64_t other = cupti__to_host_near(s->start, prev > launch ? prev : launch);

		if (other > start) {
			start = other;
			follow = true;
		}
	} else if (start < prev && se->follow) {
		follow = true;
	}
	uint64_t end = cupti__to_host_near(s->end, start);

	if (end < start)
		end = start;
	if (start < prev && start + NEAR_SLACK_NS >= prev &&
	    (follow || s->start >= se->cupti_end)) {
		/* Work starts where the work ahead of it ended (a few ns, not
		 * counted), keeping its length, in two cases. Across a step, and
		 * after it while its stream runs back to back until one starts
		 * after that by itself: the step's size is measured only to the
		 * reads' width. And after the work ahead of it on CUPTI's own
		 * clock, before it only as converted: the two were converted a fit
		 * apart, the first past the fits (at the line's rate), the second
		 * between them (at the rate the new fit measured), which differ by
		 * the line's error (14 ns on a loaded CI machine: overlapping
		 * kernels on one stream). */
		end += prev - start;
		start = prev;
	}
	if (s->clamp) {
		uint64_t move = 0;
		struct moved_row *m = NULL;
		bool beside = false;

		if (launch && start < launch)
			move = launch - start;
		if (nmoved && (m = moved_find(s->track))) {
			if (start < m->ended)
				beside = true; /* began before the moved one ended */
			else if (start + move < m->end)
				move = m->end - start;
			else if (!move) { /* the row caught up */
				*m = moved[--nmoved];
				m = NULL;
			}
		}
		if (move) {
			/* counted, and kept on the span for checks of alignment */
			if (nargs < GT_ARGS_MAX)
				args[nargs++] = gt_clamped_arg(move);
			else
				gt_adjust_add(GT_S_ADJUST_CLAMPED, 1, move);
			if (!beside)
				moved_note(m, s->track, end, end + move);
			start += move;
			end += move;
		}
	}
	if (se)
		*se = (struct stream_end){ .key = s->stream, .end = end, .cupti_end = s->end,
					   .follow = follow };
	uint64_t ext = ext_find(s->corr);
	if (ext && nargs < GT_ARGS_MAX)
		args[nargs++] = (struct gt_arg){ .key = cupti__key("external_id"),
						 .type = GT_ARG_U64, .v.u = ext };
	struct gt_event ev = {
		.start_ns = start,
		.end_ns = end,
		.corr = s->corr ? gt_corr_foreign(GT_CORR_NS_CUPTI, s->corr) : 0,
		.corr2 = s->corr2 && s->corr2 != s->corr ? gt_corr_foreign(GT_CORR_NS_CUPTI, s->corr2)
							  : 0,
		.name = s->name,
		.cat = s->cat,
		.track = s->track,
		.type = (uint8_t)s->type,
		/* its call may yet end after the trace's: then left out with it (flows.c) */
		.flags = unreturned ? GT_EVF_UNRETURNED : 0,
	};
	gt_emit(&ev, args, nargs);
}


static bool no_time(uint64_t start, uint64_t end)
{
	if (start && end)
		return false;
	/* device memory for timestamps ran out, or a forced flush took the
	 * record before its work ended: not a drop, but not drawable. With
	 * capture windows, counted only for work that may be in one: begun in
	 * the window being written, or not begun while one is open. A window's
	 * end flush (backend.c) also takes work launched after the close, and
	 * work that had not begun then runs outside it. */
	if (!gt_cap.controlled ||
	    (start ? capture__inside(cupti__to_host(start), cupti__to_host(start)) : gt_tracing()))
		gt_lost_add(cupti__key("cupti_no_timestamp"), 1);
	return true;
}

/* Grid and block sizes as [x, y, z]; sizes no CUDA device allows (y or z
 * over 65535) as the same text in a string. */
struct gt_arg cupti__dim_arg(uint32_t key, uint32_t x, uint32_t y, uint32_t z)
{
	struct gt_arg a;
	char s[48];

	if (!gt_arg_dim3(&a, key, x, y, z)) {
		snprintf(s, sizeof(s), "[%u, %u, %u]", x, y, z);
		a = ARG_S(key, gt_str_intern(s));
	}
	return a;
}

static unsigned graph_args(struct gt_arg *a, unsigned n, uint32_t graph, uint64_t node)
{
	if (graph && has_graph_ids()) {
		a[n++] = ARG_U(cupti__key("graph_id"), graph);
		a[n++] = ARG_U(cupti__key("graph_node_id"), node);
	}
	return n;
}

static void on_kernel(const rec_kernel *k)
{
	struct gt_arg a[GT_ARGS_MAX];
	unsigned n = 0;
	bool profilers = false;

	launch_seen(k->correlationId);
	if (no_time(k->start, k->end))
		return;
	cupti__context_device(k->contextId, k->deviceId);
	a[n++] = ARG_U(GT_S_ARG_DEVICE, k->deviceId);
	a[n++] = ARG_U(GT_S_ARG_STREAM, k->streamId);
	a[n++] = cupti__dim_arg(cupti__key("grid"), k->gridX, k->gridY, k->gridZ);
	a[n++] = cupti__dim_arg(cupti__key("block"), k->blockX, k->blockY, k->blockZ);
	a[n++] = ARG_U(cupti__key("registers_per_thread"), k->registersPerThread);
	a[n++] = ARG_U(cupti__key("shared_memory"),
		       (uint64_t)k->staticSharedMemory + k->dynamicSharedMemory);
	if (has_graph_ids())
		n = graph_args(a, n, k->graphId, k->graphNodeId);
	if (gt_metrics_on(cupti_range_kernel))
		n = cupti__range_args(k->correlationId, k->streamId, a, n, GT_ARGS_MAX - 2,
				      &profilers);
	/* the range profiler's own kernel (range_profiler.c): its cost, on the device's
	 * overhead row, neither the program's kernel nor its launch's */
	if (profilers)
		a[n++] = ARG_S(cupti__key("by"), cupti__key("CUPTI range profiler"));
	emit(&(struct span){ .start = k->start, .end = k->end,
			     .corr = profilers ? 0 : k->correlationId,
			     .name = kernel_name(k->name),
			     .cat = profilers ? GT_S_CAT_OVERHEAD : GT_S_CAT_KERNEL,
			     .track = profilers ? row(ROW_OVERHEAD, k->deviceId, 0)
						: row(ROW_STREAM, k->deviceId, k->streamId),
			     .stream = in_order(k->graphId, k->deviceId, k->streamId),
			     .type = GT_EV_DEVICE_SPAN, .clamp = true },
	     a, n);
}

static void on_memcpy(const rec_memcpy *m)
{
	struct gt_arg a[GT_ARGS_MAX];
	unsigned n = 0;

	launch_seen(m->correlationId);
	if (no_time(m->start, m->end))
		return;
	cupti__context_device(m->contextId, m->deviceId);
	a[n++] = ARG_U(GT_S_ARG_DEVICE, m->deviceId);
	a[n++] = ARG_U(GT_S_ARG_STREAM, m->streamId);
	a[n++] = ARG_S(GT_S_ARG_KIND, copy_kind_str(m->copyKind));
	a[n++] = ARG_U(GT_S_ARG_BYTES, m->bytes);
	n = graph_args(a, n, m->graphId, m->graphNodeId);
	/* correlationId: the driver call; runtimeCorrelationId: the runtime call */
	emit(&(struct span){ .start = m->start, .end = m->end, .corr = m->correlationId,
			     .corr2 = m->runtimeCorrelationId,
			     .name = memcpy_name(m->copyKind, m->srcKind, m->dstKind),
			     .cat = GT_S_CAT_GPU_MEMCPY,
			     .track = row(ROW_STREAM, m->deviceId, m->streamId),
			     .stream = in_order(m->graphId, m->deviceId, m->streamId),
			     .type = GT_EV_DEVICE_SPAN, .clamp = true },
	     a, n);
}

static void on_p2p(const rec_p2p *m)
{
	struct gt_arg a[GT_ARGS_MAX];
	unsigned n = 0;

	launch_seen(m->correlationId);
	if (no_time(m->start, m->end))
		return;
	a[n++] = ARG_U(GT_S_ARG_DEVICE, m->deviceId);
	a[n++] = ARG_U(GT_S_ARG_STREAM, m->streamId);
	a[n++] = ARG_S(GT_S_ARG_KIND, copy_kind_str(m->copyKind));
	a[n++] = ARG_U(GT_S_ARG_BYTES, m->bytes);
	a[n++] = ARG_U(cupti__key("src_device"), m->srcDeviceId);
	a[n++] = ARG_U(cupti__key("dst_device"), m->dstDeviceId);
	n = graph_args(a, n, m->graphId, m->graphNodeId);
	emit(&(struct span){ .start = m->start, .end = m->end, .corr = m->correlationId,
			     .name = memcpy_name(m->copyKind, m->srcKind, m->dstKind),
			     .cat = GT_S_CAT_GPU_MEMCPY,
			     .track = row(ROW_STREAM, m->deviceId, m->streamId),
			     .stream = in_order(m->graphId, m->deviceId, m->streamId),
			     .type = GT_EV_DEVICE_SPAN, .clamp = true },
	     a, n);
}

static void on_memset(const rec_memset *m)
{
	struct gt_arg a[GT_ARGS_MAX];
	unsigned n = 0;

	launch_seen(m->correlationId);
	if (no_time(m->start, m->end))
		return;
	cupti__context_device(m->contextId, m->deviceId);
	a[n++] = ARG_U(GT_S_ARG_DEVICE, m->deviceId);
	a[n++] = ARG_U(GT_S_ARG_STREAM, m->streamId);
	a[n++] = ARG_U(GT_S_ARG_BYTES, m->bytes);
	a[n++] = ARG_U(cupti__key("value"), m->value);
	n = graph_args(a, n, m->graphId, m->graphNodeId);
	emit(&(struct span){ .start = m->start, .end = m->end, .corr = m->correlationId,
			     .name = memset_name(m->memoryKind), .cat = GT_S_CAT_GPU_MEMSET,
			     .track = row(ROW_STREAM, m->deviceId, m->streamId),
			     .stream = in_order(m->graphId, m->deviceId, m->streamId),
			     .type = GT_EV_DEVICE_SPAN, .clamp = true },
	     a, n);
}

static void on_sync(const rec_sync *s)
{
	struct gt_arg a[GT_ARGS_MAX];
	unsigned n = 0;
	uint32_t dev = context_device(s->contextId);
	bool has_stream = s->streamId != CUPTI_SYNCHRONIZATION_INVALID_VALUE;

	if (no_time(s->start, s->end))
		return;
	a[n++] = ARG_U(GT_S_ARG_DEVICE, dev);
	/* no stream: -1, as Kineto writes it (HTA then counts no GPU work) */
	a[n++] = has_stream ? ARG_U(GT_S_ARG_STREAM, s->streamId)
			    : (struct gt_arg){ .key = GT_S_ARG_STREAM, .type = GT_ARG_I64, .v.i = -1 };
	if (s->cudaEventId != CUPTI_SYNCHRONIZATION_INVALID_VALUE)
		a[n++] = ARG_U(cupti__key("event"), s->cudaEventId);
	/* its own row: a wait overlaps the stream's kernels; it waits inside its call,
	 * so a clock error that puts it earlier is clamped as device work is */
	emit(&(struct span){ .start = s->start, .end = s->end, .corr = s->correlationId,
			     .name = sync_name(s->type), .cat = GT_S_CAT_GPU_SYNC,
			     .track = has_stream ? row(ROW_STREAM_SYNC, dev, s->streamId)
						 : row(ROW_DEVICE_SYNC, dev, 0),
			     .type = GT_EV_DEVICE_SPAN, .clamp = true },
	     a, n);
}

static void on_overhead(const rec_overhead *o)
{
	struct gt_arg a[2];
	unsigned n = 0;
	/* no correlation: older record versions end before that field */
	struct span s = { .start = o->start, .end = o->end,
			  .name = overhead_name(o->overheadKind), .cat = GT_S_CAT_OVERHEAD };

	if (no_time(o->start, o->end))
		return;
	switch (o->objectKind) {
	case CUPTI_ACTIVITY_OBJECT_THREAD:
	case CUPTI_ACTIVITY_OBJECT_PROCESS:
		/* on the thread that paid for it (gettid ids: cuptiSetThreadIdType) */
		s.type = GT_EV_HOST_SPAN;
		s.track = o->objectId.pt.threadId ? o->objectId.pt.threadId : (uint32_t)getpid();
		break;
	default:
		a[n++] = ARG_U(GT_S_ARG_DEVICE, o->objectId.dcs.deviceId);
		s.type = GT_EV_DEVICE_SPAN;
		s.track = row(ROW_OVERHEAD, o->objectId.dcs.deviceId, 0);
		break;
	}
	emit(&s, a, n);
}

static void on_graph(const rec_graph *g)
{
	struct gt_arg a[GT_ARGS_MAX];
	unsigned n = 0;
	char s[48];
	uint32_t dev = g->deviceId == INT_MAX ? context_device(g->contextId) : g->deviceId;

	launch_seen(g->correlationId);
	if (no_time(g->start, g->end))
		return;
	snprintf(s, sizeof(s), "CUDA graph %u", g->graphId);
	a[n++] = ARG_U(GT_S_ARG_DEVICE, dev);
	a[n++] = ARG_U(GT_S_ARG_STREAM, g->streamId);
	a[n++] = ARG_U(cupti__key("graph_id"), g->graphId);
	emit(&(struct span){ .start = g->start, .end = g->end, .corr = g->correlationId,
			     .name = gt_str_intern(s), .cat = cupti__key("cuda_graph"),
			     .track = row(ROW_STREAM, dev, g->streamId),
			     .stream = row_key(ROW_STREAM, dev, g->streamId),
			     .type = GT_EV_DEVICE_SPAN, .clamp = true },
	     a, n);
}

static void on_record(const CUpti_Activity *r)
{
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		on_kernel((const rec_kernel *)r);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		on_memcpy((const rec_memcpy *)r);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		on_p2p((const rec_p2p *)r);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		on_memset((const rec_memset *)r);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		on_sync((const rec_sync *)r);
		break;
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		on_overhead((const rec_overhead *)r);
		break;
	case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
		on_graph((const rec_graph *)r);
		break;
	default:
		break;
	}
}

/* What other records' meaning depends on: read before any span is made. */
static void on_record_early(const CUpti_Activity *r)
{
	if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)
		ext_note((const rec_extcorr *)r);
	else if (r->kind == CUPTI_ACTIVITY_KIND_CONTEXT)
		cupti__context_device(((const rec_context *)r)->contextId,
				      ((const rec_context *)r)->deviceId);
}

static int walk(uint8_t *buf, size_t valid, void (*fn)(const CUpti_Activity *))
{
	CUpti_Activity *rec = NULL;
	int n = 0;

	for (;;) {
		CUptiResult r = cupti_fn.cuptiActivityGetNextRecord(buf, valid, &rec);
		if (r != CUPTI_SUCCESS)
			break; /* MAX_LIMIT_REACHED at the end; INVALID_KIND: the rest is unreadable */
		fn(rec);
		n++;
	}
	return n;
}

int cupti__process_buffers(uint8_t *const *bufs, const size_t *valid, unsigned nbufs)
{
	int total = 0;

	if (!cupti_fn.cuptiActivityGetNextRecord)
		return -EINVAL;
	for (unsigned i = 0; i < nbufs; i++)
		walk(bufs[i], valid[i], on_record_early);
	for (unsigned i = 0; i < nbufs; i++)
		total += walk(bufs[i], valid[i], on_record);
	return total;
}

int cupti__process_buffer(uint8_t *buf, size_t valid)
{
	return cupti__process_buffers(&buf, &valid, 1);
}

void cupti__records_reset(void)
{
	memset(rows, 0, ROWS_MAX * sizeof(rows[0]));
	nstream_rows = 0;
	memset(knames, 0, KNAME_MAX * sizeof(knames[0]));
	memset(ext_map, 0, EXT_MAX * sizeof(ext_map[0]));
	nmoved = 0;
	memset(stream_ends, 0, STREAM_ENDS_MAX * sizeof(stream_ends[0]));
	atomic_store(&nfits, 0);
}
