/* SPDX-License-Identifier: MIT */
/* A growable output buffer and the JSON pieces the writer needs, without
 * printf: integers, microsecond timestamps with nanosecond digits, and
 * exact string escaping of any bytes. */
#ifndef GPUTRACE_JSON_H
#define GPUTRACE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "inject/event.h"

struct jbuf {
	char *p;
	size_t len, cap;
	size_t map; /* p is a mapping of this many bytes (a big buffer), 0: malloc's */
	bool budgeted; /* its room counts against a budget: never a mapping (gt_grow) */
	int oom;    /* an allocation failed: output was cut */
};

GT_HIDDEN int jbuf__reserve(struct jbuf *b, size_t more);
GT_HIDDEN void jbuf__free(struct jbuf *b);

static inline void jbuf__put(struct jbuf *b, const char *s, size_t n)
{
	if (gt_unlikely(b->len + n > b->cap) && jbuf__reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

#define jbuf__lit(b, s) jbuf__put((b), (s), sizeof(s) - 1)

static inline void jbuf__ch(struct jbuf *b, char c)
{
	if (gt_unlikely(b->len + 1 > b->cap) && jbuf__reserve(b, 1))
		return;
	b->p[b->len++] = c;
}

/*
 * Numbers through a cursor: p has room (JSON_NUM_ROOM), the end is returned.
 * A formatter that reserves its room once writes a whole event this way;
 * the jbuf forms below check for room each.
 */
#define JSON_NUM_ROOM 24

/* The largest magnitude %.15g writes as a finite JSON number: above it, it
 * rounds up past DBL_MAX (writer/summary.c keeps its own copy). */
#define JSON_F64_15G_MAX 1.79769313486231e308

GT_HIDDEN char *json__put_u64_digits(char *p, uint64_t v);
GT_HIDDEN char *json__put_us_digits(char *p, uint64_t ns);

/* Most integers written are one digit (results, flags): no call for those. */
static inline char *json__put_u64(char *p, uint64_t v)
{
	if (gt_likely(v < 10)) {
		*p = (char)('0' + v);
		return p + 1;
	}
	return json__put_u64_digits(p, v);
}

static inline char *json__put_i64(char *p, int64_t v)
{
	if (v < 0) {
		*p++ = '-';
		return json__put_u64(p, (uint64_t)0 - (uint64_t)v);
	}
	return json__put_u64(p, (uint64_t)v);
}

/* ns as microseconds with three decimals: 1234567 -> 1234.567; a duration
 * under a microsecond (most host calls) without a call */
static inline char *json__put_us(char *p, uint64_t ns)
{
	if (gt_likely(ns < 1000)) {
		p[0] = '0';
		p[1] = '.';
		p[2] = (char)('0' + ns / 100);
		p[3] = (char)('0' + ns / 10 % 10);
		p[4] = (char)('0' + ns % 10);
		return p + 5;
	}
	return json__put_us_digits(p, ns);
}

/* A timestamp: its microseconds above the last four digits change every
 * 10 ms, so they are kept formatted in prefix (the caller's: one per
 * thread that writes), and a timestamp writes seven digits, not fifteen. */
struct json_ts_prefix {
	uint64_t hi; /* us / 10000 (0: none kept) */
	uint64_t base; /* hi's first ns (hi * 10^7): a timestamp within 10 ms of it
			  takes its seven digits from the difference, in 32 bits */
	unsigned len;
	char text[24];
};
GT_HIDDEN char *json__put_ts_slow(char *p, uint64_t ns, struct json_ts_prefix *prefix);
/* ".000" to ".999": a timestamp's fraction is one 4-byte copy */
GT_HIDDEN extern const char json__frac_text[4001];
GT_HIDDEN extern const char json__digit_pairs[201];

/* Inline where the prefix holds (all but one timestamp in 10 ms): the two 64-bit
 * divisions and the call were ~25 of the ~60 drain instructions a timestamp took
 * (callgrind, six timestamps a launch). */
static inline char *json__put_ts(char *p, uint64_t ns, struct json_ts_prefix *c)
{
	uint64_t r = ns - c->base;

	if (gt_likely(r < 10000000 && c->hi)) {
		unsigned lo = (unsigned)r / 1000, frac = (unsigned)r - lo * 1000;

		memcpy(p, c->text, 16); /* a fixed-size copy; what is past len is overwritten */
		p += c->len;
		memcpy(p, &json__digit_pairs[lo / 100 * 2], 2);
		memcpy(p + 2, &json__digit_pairs[lo % 100 * 2], 2);
		memcpy(p + 4, &json__frac_text[frac * 4], 4);
		return p + 8;
	}
	return json__put_ts_slow(p, ns, c);
}

/* Room for one number at the end of b, or false (b->oom). */
static inline int json__room(struct jbuf *b)
{
	return gt_likely(b->len + JSON_NUM_ROOM <= b->cap) || !jbuf__reserve(b, JSON_NUM_ROOM);
}

static inline void json__u64(struct jbuf *b, uint64_t v)
{
	if (json__room(b))
		b->len = (size_t)(json__put_u64(b->p + b->len, v) - b->p);
}

static inline void json__i64(struct jbuf *b, int64_t v)
{
	if (json__room(b))
		b->len = (size_t)(json__put_i64(b->p + b->len, v) - b->p);
}

static inline void json__us(struct jbuf *b, uint64_t ns)
{
	if (json__room(b))
		b->len = (size_t)(json__put_us(b->p + b->len, ns) - b->p);
}

static inline void json__ts(struct jbuf *b, uint64_t ns, struct json_ts_prefix *prefix)
{
	if (json__room(b))
		b->len = (size_t)(json__put_ts(b->p + b->len, ns, prefix) - b->p);
}

GT_HIDDEN void json__f64(struct jbuf *b, double v);
/* "0x1f": a quoted hexadecimal string (handles, addresses) */
GT_HIDDEN void json__hex(struct jbuf *b, uint64_t v);
/* A quoted JSON string of any bytes: valid UTF-8 is kept, control
 * characters are escaped, and each byte that is not part of valid UTF-8 is
 * written as \u00XX (the byte's value), so nothing is lost or invalid. */
GT_HIDDEN void json__str(struct jbuf *b, const char *s, size_t n);

#endif
