/* SPDX-License-Identifier: MIT */
/*
 * The flight recorder (GPUTRACE_FLIGHT_RECORDER): instead of the file, each
 * checkpoint hands what the cycle formatted to a FIFO of fixed-size segments
 * of whole events, one a line. Whole old segments are dropped when the
 * window (seconds) has passed them or the memory bound (MB) needs their
 * room, so memory stays below the bound for any run length. Row names ("M"
 * events) go to a buffer of their own that is never dropped: a dump names
 * every row it draws. A dump writes the names, then the events of the kept
 * segments that reach into the window (the last SEC seconds, and after
 * anything dropped), with an arrow only where both its ends are in the
 * file. What is dropped is counted, not lost:
 * events_kept + events_aged_out is every event formatted.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "inject/clock.h"
#include "inject/config.h"
#include "internal.h"

#define SEG_MAX (256u << 10) /* a segment's bytes: the granularity of dropping */

struct seg {
	struct seg *next;
	uint64_t last_ns; /* when its newest event was added */
	size_t len, cap;
	uint64_t events, flows;
	char data[];
};

static struct {
	struct seg *head, *tail;
	size_t bytes; /* segments' allocated bytes + the names' */
	struct jbuf names;
	uint64_t aged_events, aged_flows; /* in dropped segments */
	/* the newest time a dropped segment may hold: a later segment's event
	 * that ends by then may be tied to one dropped (its arrow's start) */
	uint64_t horizon;
	uint64_t dumps;
} F;

static bool is_meta(const char *ev, size_t n)
{
	return n > 10 && !memcmp(ev, "{\"ph\":\"M\"", 9);
}

static bool is_flow(const char *ev, size_t n)
{
	return n > 10 && !memcmp(ev, "{\"ph\":\"", 7) && (ev[7] == 's' || ev[7] == 'f') &&
	       ev[8] == '"';
}

static void drop_oldest(void)
{
	struct seg *s = F.head;

	F.head = s->next;
	if (!F.head)
		F.tail = NULL;
	F.aged_events += s->events;
	F.aged_flows += s->flows;
	if (s->last_ns > F.horizon)
		F.horizon = s->last_ns;
	F.bytes -= s->cap;
	free(s);
}

/* Drop what the window has passed, and room for `need` more bytes. */
static void age(uint64_t now, size_t need)
{
	uint64_t window = gt_cfg.flight_ns;

	while (F.head && (F.bytes + need > gt_cfg.flight_bytes ||
			  (window && now > window && F.head->last_ns < now - window)))
		drop_oldest();
}

static void add_event(const char *ev, size_t n, uint64_t now)
{
	struct seg *s = F.tail;
	size_t cap = SEG_MAX < gt_cfg.flight_bytes / 4 ? SEG_MAX : gt_cfg.flight_bytes / 4;

	if (is_meta(ev, n)) {
		size_t before = F.names.cap;

		jbuf__put(&F.names, ev, n);
		jbuf__ch(&F.names, '\n');
		F.bytes += F.names.cap - before;
		return;
	}
	if (!s || s->len + n + 1 > s->cap) {
		if (n + 1 > cap)
			cap = n + 1; /* an event longer than a segment gets its own */
		age(now, cap);
		s = malloc(sizeof(*s) + cap);
		if (!s) {
			/* counted all the same */
			F.aged_events += !is_flow(ev, n);
			F.aged_flows += is_flow(ev, n);
			F.horizon = now;
			return;
		}
		*s = (struct seg){ .cap = cap };
		if (F.tail)
			F.tail->next = s;
		else
			F.head = s;
		F.tail = s;
		F.bytes += cap;
	}
	memcpy(s->data + s->len, ev, n);
	s->data[s->len + n] = '\n';
	s->len += n + 1;
	s->last_ns = now;
	if (is_flow(ev, n))
		s->flows++;
	else
		s->events++;
}

/* The next event of a formatted buffer at *q (NULL at end): its line, less
 * the "," between events and the spaces a paged file pads with. */
static const char *next_event(const char **q, const char *end, size_t *n)
{
	while (*q < end) {
		const char *nl = memchr(*q, '\n', (size_t)(end - *q)), *stop = nl ? nl : end;
		const char *ev = *q;

		*q = stop + 1;
		while (ev < stop && *ev == ' ')
			ev++;
		*n = (size_t)(stop - ev);
		if (*n && ev[*n - 1] == ',')
			(*n)--;
		if (*n)
			return ev;
	}
	return NULL;
}

void flight__add(const char *p, size_t len, uint64_t now)
{
	const char *ev, *end = p + len;
	size_t n;


	while ((ev = next_event(&p, end, &n)))
		add_event(ev, n, now);
	age(now, 0);
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

/* Open addressing over arrow ids: bit 0 a start seen, bit 1 an end. */
struct idset {
	uint64_t *id;
	uint8_t *seen;
	size_t mask;
};

static uint8_t *idset_slot(struct idset *s, uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15ull) & s->mask;

	while (s->seen[i] && s->id[i] != id)
		i = (i + 1) & s->mask;
	s->id[i] = id;
	return &s->seen[i];
}

/* A slice that ends after the cutoff, anything else at or after it: a kept
 * arrow end (a point inside its slice) keeps its slice. */
static bool in_window(const char *ev, size_t n, uint64_t cutoff)
{
	uint64_t ts;

	if (!cutoff)
		return true;
	ts = field_u64(ev, n, "\"ts\":", true);
	if (ev[7] == 'X')
		ts += field_u64(ev, n, "\"dur\":", true);
	return ts > cutoff;
}

void flight__dump(struct jbuf *out, uint64_t now, struct flight_counts *c)
{
	uint64_t cutoff = gt_cfg.flight_ns && now > gt_cfg.flight_ns ? now - gt_cfg.flight_ns : 0;

	if (F.horizon > cutoff)
		cutoff = F.horizon;
	uint64_t flows = 0;
	struct idset ids = { 0 };
	const char *q, *ev;
	size_t n;
	bool first = true;

	*c = (struct flight_counts){ .aged_events = F.aged_events, .aged_flows = F.aged_flows };
	for (struct seg *s = F.head; s; s = s->next)
		flows += s->flows;
	if (flows) {
		size_t cap = 64;

		while (cap < flows * 2)
			cap *= 2;
		ids.id = malloc(cap * sizeof(*ids.id));
		ids.seen = calloc(cap, 1);
		ids.mask = cap - 1;
		if (!ids.id || !ids.seen) {
			free(ids.id);
			free(ids.seen);
			ids = (struct idset){ 0 };
		}
	}
	/* arrows: which ids have both ends inside the window */
	for (struct seg *s = F.head; s && ids.seen; s = s->next)
		for (q = s->data; (ev = next_event(&q, s->data + s->len, &n));)
			if (is_flow(ev, n) && in_window(ev, n, cutoff))
				*idset_slot(&ids, field_u64(ev, n, "\"id\":", false)) |=
					ev[7] == 's' ? 1 : 2;
	for (q = F.names.p; q && (ev = next_event(&q, F.names.p + F.names.len, &n));) {
		if (!first)
			jbuf__lit(out, ",\n");
		first = false;
		jbuf__put(out, ev, n);
	}
	for (struct seg *s = F.head; s; s = s->next)
		for (q = s->data; (ev = next_event(&q, s->data + s->len, &n));) {
			bool flow = is_flow(ev, n);

			if (!in_window(ev, n, cutoff) ||
			    (flow && (!ids.seen ||
				      *idset_slot(&ids, field_u64(ev, n, "\"id\":", false)) != 3))) {
				if (flow)
					c->aged_flows++;
				else
					c->aged_events++;
				continue;
			}
			if (flow)
				c->kept_flows++;
			else
				c->kept_events++;
			if (!first)
				jbuf__lit(out, ",\n");
			first = false;
			jbuf__put(out, ev, n);
		}
	free(ids.id);
	free(ids.seen);
	F.dumps++;
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
	jbuf__lit(b, ",\"events_kept\":");
	json__u64(b, c->kept_events);
	jbuf__lit(b, ",\"events_aged_out\":");
	json__u64(b, c->aged_events);
	jbuf__lit(b, ",\"flows_kept\":");
	json__u64(b, c->kept_flows);
	jbuf__lit(b, ",\"flows_aged_out\":");
	json__u64(b, c->aged_flows);
	jbuf__ch(b, '}');
}

void flight__free(void)
{
	while (F.head)
		drop_oldest();
	jbuf__free(&F.names);
	memset(&F, 0, sizeof(F));
}
