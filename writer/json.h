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
	int oom; /* an allocation failed: output was cut */
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

GT_HIDDEN void json__u64(struct jbuf *b, uint64_t v);
GT_HIDDEN void json__i64(struct jbuf *b, int64_t v);
GT_HIDDEN void json__f64(struct jbuf *b, double v);
/* "0x1f": a quoted hexadecimal string (handles, addresses) */
GT_HIDDEN void json__hex(struct jbuf *b, uint64_t v);
/* ns as microseconds with three decimals: 1234567 -> 1234.567 */
GT_HIDDEN void json__us(struct jbuf *b, uint64_t ns);
/* A quoted JSON string of any bytes: valid UTF-8 is kept, control
 * characters are escaped, and each byte that is not part of valid UTF-8 is
 * written as \u00XX (the byte's value), so nothing is lost or invalid. */
GT_HIDDEN void json__str(struct jbuf *b, const char *s, size_t n);

#endif
