/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject/pages.h"
#include "inject/utf8.h"
#include "json.h"

int jbuf__reserve(struct jbuf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (b->p && b->len + more <= b->cap)
		return 0;
	while (cap < b->len + more)
		cap *= 2;
	/* from GT_GROW_BIG of room (the event buffers), 2 MiB pages: inject/pages.c */
	p = gt_grow(b->p, b->len, &cap, &b->map, b->budgeted ? SIZE_MAX : GT_GROW_BIG);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void jbuf__free(struct jbuf *b)
{
	gt_grow_free(b->p, b->map);
	*b = (struct jbuf){ 0 };
}

static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
				     "25262728293031323334353637383940414243444546474849"
				     "50515253545556575859606162636465666768697071727374"
				     "75767778798081828384858687888990919293949596979899";

static const uint64_t pow10[20] = {
	1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
	100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
	10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
	100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
};

/* Decimal digits of v: log2 from the leading zeros, times log10(2) (1233/4096),
 * corrected by one comparison. */
static inline unsigned u64_digits(uint64_t v)
{
	unsigned t = ((64 - (unsigned)__builtin_clzll(v | 1)) * 1233) >> 12;

	return t + 1 - ((v | 1) < pow10[t]); /* v | 1: zero has one digit */
}

static inline void put_pair(char *p, unsigned v)
{
	memcpy(p, &digit_pairs[v * 2], 2);
}

/* The digits of v, ending at end: eight at a time in 32-bit pieces that do
 * not wait on each other, then pairs (a timestamp is one group and a pair). */
static inline void put_digits(char *end, uint64_t v)
{
	uint32_t w;

	while (v >= 100000000) {
		uint32_t low = (uint32_t)(v % 100000000), hi = low / 10000, lo = low % 10000;

		v /= 100000000;
		end -= 8;
		put_pair(end, hi / 100);
		put_pair(end + 2, hi % 100);
		put_pair(end + 4, lo / 100);
		put_pair(end + 6, lo % 100);
	}
	w = (uint32_t)v;
	while (w >= 100) {
		end -= 2;
		put_pair(end, w % 100);
		w /= 100;
	}
	if (w >= 10)
		put_pair(end - 2, w);
	else
		end[-1] = (char)('0' + w);
}

char *json__put_u64_digits(char *p, uint64_t v)
{
	unsigned n = u64_digits(v);

	put_digits(p + n, v);
	return p + n;
}

void json__f64(struct jbuf *b, double v)
{
	char tmp[40];
	int n;

	if (!isfinite(v)) { /* JSON has no NaN/Inf */
		jbuf__lit(b, "null");
		return;
	}
	/* %.15g rounds the largest doubles up past DBL_MAX (1.79769313486232e+308),
	 * which a strict parser refuses as out of range: those take 17 digits */
	n = snprintf(tmp, sizeof(tmp), fabs(v) > JSON_F64_15G_MAX ? "%.17g" : "%.15g", v);
	jbuf__put(b, tmp, (size_t)n);
}

void json__hex(struct jbuf *b, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[20];
	char *p = tmp + sizeof(tmp);

	*--p = '"';
	do {
		*--p = digits[v & 15];
		v >>= 4;
	} while (v);
	*--p = 'x';
	*--p = '0';
	*--p = '"';
	jbuf__put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

char *json__put_us_digits(char *p, uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned frac = (unsigned)(ns - us * 1000), n = u64_digits(us);

	put_digits(p + n, us);
	p[n] = '.';
	p[n + 1] = (char)('0' + frac / 100);
	put_pair(p + n + 2, frac % 100);
	return p + n + 4;
}

char *json__put_ts(char *p, uint64_t ns, struct json_ts_prefix *c)
{
	uint64_t us = ns / 1000, hi = us / 10000;
	unsigned frac = (unsigned)(ns - us * 1000), lo = (unsigned)(us - hi * 10000);

	if (gt_unlikely(!hi)) /* under 10 ms: no prefix, few digits */
		return json__put_us_digits(p, ns);
	if (gt_unlikely(hi != c->hi)) {
		c->len = u64_digits(hi); /* at most 13: 2^64 ns is 1.8e12 x 10 ms */
		put_digits(c->text + c->len, hi);
		c->hi = hi;
	}
	memcpy(p, c->text, 16); /* a fixed-size copy; what is past len is overwritten */
	p += c->len;
	put_pair(p, lo / 100);
	put_pair(p + 2, lo % 100);
	p[4] = '.';
	p[5] = (char)('0' + frac / 100);
	put_pair(p + 6, frac % 100);
	return p + 8;
}

void json__str(struct jbuf *b, const char *str, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run = 0;

	jbuf__ch(b, '"');
	while (i < n) {
		unsigned c = s[i];
		size_t l;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			run++;
			continue;
		}
		if (run)
			jbuf__put(b, (const char *)s + i - run, run);
		run = 0;
		if (c == '"' || c == '\\') {
			char esc[2] = { '\\', (char)c };
			jbuf__put(b, esc, 2);
			i++;
		} else if (c == '\n') {
			jbuf__lit(b, "\\n");
			i++;
		} else if (c == '\t') {
			jbuf__lit(b, "\\t");
			i++;
		} else if (c == '\r') {
			jbuf__lit(b, "\\r");
			i++;
		} else if (c >= 0x80 && (l = gt_utf8_len(s + i, n - i))) {
			jbuf__put(b, (const char *)s + i, l);
			i += l;
		} else {
			char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			jbuf__put(b, esc, 6);
			i++;
		}
	}
	if (run)
		jbuf__put(b, (const char *)s + i - run, run);
	jbuf__ch(b, '"');
}
