/* SPDX-License-Identifier: MIT */
/* A growable byte buffer, always NUL-terminated. */
#ifndef GPUTRACE_TOOL_BUF_H
#define GPUTRACE_TOOL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	char *p;
	size_t len;
	size_t cap;
};

/* Out of memory is fatal for the tool: it has nothing else to give back. */
static inline void buf__reserve(struct buf *b, size_t extra)
{
	size_t want = b->len + extra + 1;

	if (want <= b->cap)
		return;
	size_t ncap = b->cap ? b->cap : 256;
	while (ncap < want)
		ncap *= 2;
	char *np = extra < SIZE_MAX / 4 ? realloc(b->p, ncap) : NULL;
	if (!np) {
		fprintf(stderr, "gputrace: out of memory (%zu bytes)\n", ncap);
		exit(1);
	}
	/* terminated from the first allocation: a reader of a buffer nothing was
	 * added to (jv_str of "") would read uninitialised bytes */
	np[b->len] = 0;
	b->p = np;
	b->cap = ncap;
}

static inline void buf__add(struct buf *b, const void *data, size_t n)
{
	if (n >= SIZE_MAX / 4)
		return;
	buf__reserve(b, n);
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = 0;
}

static inline void buf__addc(struct buf *b, char c)
{
	buf__reserve(b, 1);
	b->p[b->len++] = c;
	b->p[b->len] = 0;
}

static inline void buf__adds(struct buf *b, const char *s)
{
	buf__add(b, s, strlen(s));
}

static inline void buf__reset(struct buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = 0;
}

static inline void buf__free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

__attribute__((format(printf, 2, 3))) static inline void buf__printf(struct buf *b,
								      const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf__reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

#endif
