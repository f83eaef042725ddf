/* SPDX-License-Identifier: MIT */
/*
 * The flight recorder (GPUTRACE_FLIGHT_RECORDER): instead of the file, each
 * checkpoint hands what the cycle formatted to a FIFO of fixed-size segments
 * of whole events, one a line. Whole old segments are dropped when the
 * window (seconds) has passed them or the memory bound (MB) needs their
 * room, so memory stays below the bound for any run length. Row names ("M"
 * events) go to a buffer of their own that is never dropped: a dump names
 * every row it draws. A dump writes the names, then the events of the kept
 * segments that reach into the window (the last SEC seconds), with an
 * arrow only where both its ends are in the file, on the slices they bind
 * to. What is dropped is counted, not lost:
 * events_kept + events_aged_out is every event recorded (the annotation
 * slices the writer derives from ranges are drawn, not counted); under
 * gputrace run, with events_in_earlier_dumps: what earlier dumps kept.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "inject/clock.h"
#include "inject/config.h"
#include "inject/pages.h"
#include "internal.h"

#define SEG_MAX (256u << 10) /* a segment's bytes: the granularity of dropping */

struct seg {
	struct seg *next;
	uint64_t last_ns; /* when its newest event was added */
	size_t len, cap;
	uint64_t events, flows;
	uint64_t derived; /* annotation slices: drawn, not recorded */
	uint64_t seq0; /* the recorder's number of its first event */
	char data[];
};

static struct {
	struct seg *head, *tail;
	struct seg *pool; /* dropped segments, for the next ones: memory is reused,
			   * never handed back and forth (flat RSS, any allocator) */
	size_t bytes; /* segments' allocated bytes (live and pooled) + the names' */
	size_t pooled;
	struct jbuf names;
	uint64_t events, flows; /* every one added, kept in a segment or not */
	uint64_t dumps;
	uint64_t seq;       /* events and arrow ends added so far */
	uint64_t dumped;    /* under gputrace run: the events before it were up to a dump */
	uint64_t dumped_ns; /* ... and when that dump was taken */
	/* under gputrace run, what earlier dumps kept: counted as they wrote it,
	 * as what one aged out stays before F.dumped too (and is in no dump) */
	uint64_t earlier_events, earlier_flows;
} F;

/* Under gputrace run a dump holds what no earlier dump of the process
 * held: the run's trace merges them all, each event once. */
static bool dumped_before(const struct seg *s, uint64_t i)
{
	return s->seq0 + i < F.dumped;
}

static bool is_meta(const char *ev, size_t n)
{
	return n > 10 && !memcmp(ev, "{\"ph\":\"M\"", 9);
}

static bool is_flow(const char *ev, size_t n)
{
	return n > 10 && !memcmp(ev, "{\"ph\":\"", 7) && (ev[7] == 's' || ev[7] == 'f') &&
	       ev[8] == '"';
}

/* A gpu_user_annotation slice the writer derived from the ranges around
 * device work (events__annotation, args device, spans, tid), or a range
 * still open where the trace ended drawn up to there (args unended only,
 * ranges__draw_unended): no event was recorded for it, so it counts
 * neither kept nor aged out, and events_kept + events_aged_out stays
 * events_recorded. A plug-in's own annotation (recorded) has other args. */
static bool is_derived(const char *ev, size_t n)
{
	static const char cat[] = "\"cat\":\"gpu_user_annotation\"";
	static const char args[] = ",\"args\":{\"device\":";
	static const char unended[] = ",\"args\":{\"unended\":true}}";
	static const char user_cat[] = "\"cat\":\"user_annotation\"";
	const char *a, *end = ev + n;

	if (n < 10 || ev[7] != 'X')
		return false;
	if (n > sizeof(unended) && !memcmp(end - (sizeof(unended) - 1), unended,
					   sizeof(unended) - 1) &&
	    memmem(ev, n, user_cat, sizeof(user_cat) - 1))
		return true;
	if (!memmem(ev, n, cat, sizeof(cat) - 1))
		return false;
	a = memmem(ev, n, args, sizeof(args) - 1);
	if (!a)
		return false;
	a += sizeof(args) - 1;
	if (a < end && *a == '-')
		a++;
	while (a < end && *a >= '0' && *a <= '9')
		a++;
	return end - a > 9 && !memcmp(a, ",\"spans\":", 9);
}

/* The number after "key": in ev (0 when absent); ts in ns. */
static uint64_t field_u64(const char *ev, size_t n, const char *key, bool us)
{
	size_t kn = strlen(key);
	const char *at = memmem(ev, n, key, kn), *end = ev + n;
	uint64_t v = 0;
	unsigned frac = 0;

	if (!at)
		return 0;
	for (at += kn; at < end && *at >= '0' && *at <= '9'; at++)
		v = v * 10 + (uint64_t)(*at - '0');
	if (!us)
		return v;
	if (at < end && *at == '.')
		for (at++; frac < 3; frac++, at++)
			v = v * 10 + (at < end && *at >= '0' && *at <= '9' ? (uint64_t)(*at - '0') : 0);
	else
		v *= 1000;
	return v;
}

/* Where an event ends: a slice's ts + dur, anything else's ts (ns). */
static uint64_t event_end(const char *ev, size_t n)
{
	uint64_t ts = field_u64(ev, n, "\"ts\":", true);

	if (ev[7] == 'X')
		ts += field_u64(ev, n, "\"dur\":", true);
	return ts;
}

/* In the window: a slice that ends after the cutoff, anything else after it. */
static bool in_window(const char *ev, size_t n, uint64_t cutoff)
{
	return !cutoff || event_end(ev, n) > cutoff;
}

/* Segments are this size, bar an event longer than one. */
static size_t seg_cap(void)
{
	return SEG_MAX < gt_cfg.flight_bytes / 4 ? SEG_MAX : gt_cfg.flight_bytes / 4;
}

static void drop_oldest(void)
{
	struct seg *s = F.head;

	F.head = s->next;
	if (!F.head)
		F.tail = NULL;
	if (s->cap == seg_cap()) {
		s->next = F.pool;
		F.pool = s;
		F.pooled += s->cap;
	} else {
		F.bytes -= s->cap;
		free(s);
	}
}

/* A fresh segment of cap bytes (the pool's, or a new one that keeps all
 * segments within the bound), or NULL. */
static struct seg *new_seg(size_t cap)
{
	struct seg *s = F.pool;

	if (s && cap == s->cap) {
		F.pool = s->next;
		F.pooled -= cap;
	} else {
		while (F.pool && F.bytes + cap > gt_cfg.flight_bytes) {
			s = F.pool;
			F.pool = s->next;
			F.pooled -= s->cap;
			F.bytes -= s->cap;
			free(s);
		}
		s = malloc(sizeof(*s) + cap);
		if (!s)
			return NULL;
		F.bytes += cap;
	}
	*s = (struct seg){ .cap = cap, .seq0 = F.seq };
	return s;
}

/* Drop what the window has passed, and room for `need` more bytes. */
static void age(uint64_t now, size_t need)
{
	uint64_t window = gt_cfg.flight_ns;

	while (F.head && (F.bytes - F.pooled + need > gt_cfg.flight_bytes ||
			  (window && now > window && F.head->last_ns < now - window)))
		drop_oldest();
}

static void add_event(const char *ev, size_t n, uint64_t now, uint64_t hold)
{
	struct seg *s = F.tail;
	size_t cap = seg_cap();

	if (is_meta(ev, n)) {
		size_t before = F.names.cap;

		F.names.budgeted = true; /* counted by its room: never a 2 MiB mapping */
		jbuf__put(&F.names, ev, n);
		jbuf__ch(&F.names, '\n');
		F.bytes += F.names.cap - before;
		return;
	}
	if (!s || s->len + n + 1 > s->cap) {
		if (n + 1 > cap)
			cap = n + 1; /* an event longer than a segment gets its own */
		age(hold, cap);
		s = new_seg(cap);
		if (!s) {
			/* counted all the same (aged out) */
			F.events += !is_flow(ev, n) && !is_derived(ev, n);
			F.flows += is_flow(ev, n);
			return;
		}
		if (F.tail)
			F.tail->next = s;
		else
			F.head = s;
		F.tail = s;
	}
	memcpy(s->data + s->len, ev, n);
	s->data[s->len + n] = '\n';
	s->len += n + 1;
	s->last_ns = now;
	F.seq++;
	if (is_flow(ev, n)) {
		s->flows++;
		F.flows++;
	} else if (is_derived(ev, n)) {
		s->derived++;
	} else {
		s->events++;
		F.events++;
	}
}

void flight__add(const char *p, size_t len, uint64_t now, uint64_t hold)
{
	const char *ev, *end = p + len;
	size_t n;

	while ((ev = events__next(&p, end, &n)))
		add_event(ev, n, now, hold);
	age(hold, 0);
}

/* A segment parsed: the drain's progress (thread.c, wait_cycle). A dump parses
 * every event of its window, up to 64 MiB, seconds on a busy machine: said as
 * no progress, a fatal signal's wait for the last cycle gave up and the
 * process died with no dump. */
static void progress(void)
{
	atomic_fetch_add_explicit(&W.progress, 1, memory_order_relaxed);
}

/* A slice of the dump (X or i), for the arrows that end on it. */
struct fslice {
	uint64_t row; /* pid << 32 | tid */
	uint64_t ts, end, corr, corr2;
};

/* An arrow of the dump: what holds each of its ends. */
struct farrow {
	uint64_t id;
	const struct fslice *s, *f;
	bool used;
};

static uint64_t row_of(const char *ev, size_t n)
{
	return field_u64(ev, n, "\"pid\":", false) << 32 | field_u64(ev, n, "\"tid\":", false);
}

static int slice_cmp(const void *a, const void *b)
{
	const struct fslice *x = a, *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end; /* the outer first */
}

/* The innermost slice of row holding t (slices sorted, properly nested:
 * the latest to start that still holds it), or NULL. */
static const struct fslice *holding(const struct fslice *v, size_t nv, uint64_t row, uint64_t t)
{
	size_t lo = 0, hi = nv;

	while (lo < hi) { /* the first past (row, t) */
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].row < row || (v[mid].row == row && v[mid].ts <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo, steps = 0; k-- > 0 && v[k].row == row && steps < 256; steps++)
		if (v[k].end >= t)
			return &v[k];
	return NULL;
}

static struct farrow *arrow_slot(struct farrow *a, size_t mask, uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15ull) & mask;

	while (a[i].used && a[i].id != id)
		i = (i + 1) & mask;
	a[i].used = true;
	a[i].id = id;
	return &a[i];
}

/* An arrow is kept when both its ends are in the window and each is held
 * by a slice kept in the dump, the launch's correlation on the work's
 * slice for ac2g (what a viewer binds it to): whatever was dropped, no
 * arrow dangles or lands on another slice. */
static bool arrow_kept(const struct farrow *a, bool ac2g)
{
	if (!a->s || !a->f)
		return false;
	return !ac2g || (a->s->corr && (a->s->corr == a->f->corr || a->s->corr == a->f->corr2));
}

/* The window is the SEC before as_of, when the dump was asked for (the
 * request, the signal, the exit), with what was recorded since, up to now:
 * counted back from now, a dump that a drain behind a program calling flat
 * out wrote seconds after its request held none of the SEC before it (0
 * events, or a SIGINT's the last 0.3 s of its 1 s). */
void flight__dump(struct jbuf *out, uint64_t now, uint64_t as_of, struct flight_counts *c)
{
	uint64_t cutoff = gt_cfg.flight_ns && as_of > gt_cfg.flight_ns ? as_of - gt_cfg.flight_ns : 0;
	size_t nflows = 0, nslices = 0, ns = 0, mask = 0, arrows_bytes = 0, sl_bytes = 0;
	uint64_t first_kept = now; /* the earliest event kept: a byte budget's window opens there */
	struct fslice *sl = NULL;
	struct farrow *arrows = NULL;
	const char *q, *ev;
	size_t n;
	bool first = true;

	*c = (struct flight_counts){ .earlier_events = F.earlier_events,
				     .earlier_flows = F.earlier_flows };
	for (struct seg *s = F.head; s; s = s->next) {
		nflows += s->flows;
		nslices += s->events + s->derived;
	}
	if (nflows) {
		size_t cap = 64;

		while (cap < nflows * 2)
			cap *= 2;
		arrows_bytes = cap * sizeof(*arrows);
		sl_bytes = nslices * sizeof(*sl) + 1;
		arrows = gt_scratch_alloc(arrows_bytes);
		sl = gt_scratch_alloc(sl_bytes);
		mask = cap - 1;
		if (!arrows || !sl) { /* no arrows then, rather than unchecked ones */
			gt_scratch_free(arrows, arrows_bytes);
			gt_scratch_free(sl, sl_bytes);
			arrows = NULL;
			sl = NULL;
		}
	}
	/* the slices of the window, sorted by row and start */
	for (struct seg *s = F.head; s && arrows; s = s->next, progress())
		for (uint64_t i = (q = s->data, 0); (ev = events__next(&q, s->data + s->len, &n)); i++)
			if ((ev[7] == 'X' || ev[7] == 'i') && in_window(ev, n, cutoff) &&
			    !dumped_before(s, i) && ns < nslices)
				sl[ns++] = (struct fslice){
					.row = row_of(ev, n),
					.ts = field_u64(ev, n, "\"ts\":", true),
					.end = event_end(ev, n),
					.corr = field_u64(ev, n, "\"correlation\":", false),
					.corr2 = field_u64(ev, n, "\"correlation2\":", false),
				};
	if (arrows)
		qsort(sl, ns, sizeof(*sl), slice_cmp);
	/* what holds each arrow end */
	for (struct seg *s = F.head; s && arrows; s = s->next, progress())
		for (uint64_t i = (q = s->data, 0); (ev = events__next(&q, s->data + s->len, &n)); i++)
			if (is_flow(ev, n) && in_window(ev, n, cutoff) && !dumped_before(s, i)) {
				struct farrow *a = arrow_slot(arrows, mask,
							      field_u64(ev, n, "\"id\":", false));
				const struct fslice *h = holding(sl, ns, row_of(ev, n),
								 field_u64(ev, n, "\"ts\":", true));

				if (ev[7] == 's')
					a->s = h;
				else
					a->f = h;
			}
	for (q = F.names.p; q && (ev = events__next(&q, F.names.p + F.names.len, &n));) {
		if (!first)
			jbuf__lit(out, ",\n");
		first = false;
		jbuf__put(out, ev, n);
	}
	for (struct seg *s = F.head; s; s = s->next, progress())
		for (uint64_t i = (q = s->data, 0); (ev = events__next(&q, s->data + s->len, &n)); i++) {
			bool flow = is_flow(ev, n), event = !flow && !is_derived(ev, n);

			/* what is not kept is counted below */
			if (dumped_before(s, i) || !in_window(ev, n, cutoff) ||
			    (flow && (!arrows ||
				      !arrow_kept(arrow_slot(arrows, mask,
							     field_u64(ev, n, "\"id\":", false)),
						  memmem(ev, n, "\"cat\":\"ac2g\"", 12) != NULL))))
				continue;
			if (flow) {
				c->kept_flows++;
			} else {
				uint64_t ts = field_u64(ev, n, "\"ts\":", true);

				c->kept_events += event;
				if (ts && ts < first_kept)
					first_kept = ts;
			}
			if (!first)
				jbuf__lit(out, ",\n");
			first = false;
			jbuf__put(out, ev, n);
		}
	gt_scratch_free(arrows, arrows_bytes);
	gt_scratch_free(sl, sl_bytes);
	/* aged out: dropped, out of the window, an arrow with an end gone, or
	 * before an earlier dump and not in it */
	c->aged_events = F.events - c->kept_events - c->earlier_events;
	c->aged_flows = F.flows - c->kept_flows - c->earlier_flows;
	F.dumps++;
	/* a time window opens at its cutoff; a byte budget's at what it kept */
	uint64_t from = cutoff ? cutoff : first_kept;
	c->from_ns = from > F.dumped_ns ? from : F.dumped_ns;
	c->dump = (uint32_t)F.dumps;
	if (gt_under_run()) {
		F.dumped = F.seq;
		F.dumped_ns = now;
		F.earlier_events += c->kept_events;
		F.earlier_flows += c->kept_flows;
	}
}

void flight__trailer(struct jbuf *b, const struct flight_counts *c)
{
	jbuf__lit(b, ",\"flight_recorder\":{\"window_s\":");
	if (gt_cfg.flight_ns)
		json__f64(b, (double)gt_cfg.flight_ns / 1e9);
	else
		jbuf__lit(b, "null");
	jbuf__lit(b, ",\"max_bytes\":");
	json__u64(b, gt_cfg.flight_bytes);
	jbuf__lit(b, ",\"bytes\":");
	json__u64(b, F.bytes);
	jbuf__lit(b, ",\"dump\":");
	json__u64(b, F.dumps);
	jbuf__lit(b, ",\"reason\":");
	json__str(b, c->reason, strlen(c->reason));
	/* in_earlier_dumps: under gputrace run, held by this process's earlier dumps */
	const struct { const char *key; uint64_t n; } counts[] = {
		{ ",\"events_kept\":", c->kept_events },
		{ ",\"events_aged_out\":", c->aged_events },
		{ ",\"flows_kept\":", c->kept_flows },
		{ ",\"flows_aged_out\":", c->aged_flows },
		{ ",\"events_in_earlier_dumps\":", c->earlier_events },
		{ ",\"flows_in_earlier_dumps\":", c->earlier_flows },
		{ ",\"events_waiting\":", c->waiting },
	};

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		jbuf__put(b, counts[i].key, strlen(counts[i].key));
		json__u64(b, counts[i].n);
	}
	jbuf__ch(b, '}');
}

void flight__forget(void)
{
	/* a fork child: the parent's window is not ours, and its memory may be
	 * mid-update (the parent's drain thread): dropped, not freed */
	memset(&F, 0, sizeof(F));
}

void flight__free(void)
{
	while (F.head)
		drop_oldest();
	while (F.pool) {
		struct seg *s = F.pool;

		F.pool = s->next;
		free(s);
	}
	jbuf__free(&F.names);
	memset(&F, 0, sizeof(F));
}
