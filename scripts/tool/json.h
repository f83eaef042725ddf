/* SPDX-License-Identifier: MIT */
/*
 * Just enough JSON for traces bigger than memory:
 * - jr_*: a streaming reader over a (possibly gzip'ed) file that hands out
 *   one whole value at a time as raw bytes (an event of traceEvents);
 * - jv_*: lookups inside such a captured value, in memory, without a tree.
 * Values are checked only as far as finding where they end; the bytes are
 * copied through unchanged.
 */
#ifndef GPUTRACE_TOOL_JSON_H
#define GPUTRACE_TOOL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <zlib.h>

#include "buf.h"

#define JR_MAX_VALUE (256u << 20) /* one event bigger than this is not a trace */

struct jr {
	gzFile gz;
	const char *path;
	unsigned char *buf;
	size_t pos, len;
	uint64_t base; /* file offset (uncompressed) of buf[0] */
	bool eof;
	char err[256]; /* set on the first error */
};

/* 0, or -errno: -EISDIR a folder, -ESPIPE not a regular file (a pipe), which
 * could not be read twice; jr_strerror says which. */
int jr_open(struct jr *r, const char *path);
const char *jr_strerror(int err);
void jr_close(struct jr *r);
/* Next non-blank byte without taking it; -1 at end of input (or error). */
int jr_peek(struct jr *r);
/* Take the byte jr_peek returned. */
void jr_take(struct jr *r);
/* Append the next value's bytes to out (NULL: skip it). 0 or -1 (r->err). */
int jr_value(struct jr *r, struct buf *out);
/* Record an error (the first one wins) with the current offset; returns -1. */
int jr_fail(struct jr *r, const char *what);
uint64_t jr_offset(const struct jr *r);

/* ---- in-memory values: [v, e) is one value, no surrounding blanks ---- */

struct jv_member {
	const char *key; /* raw key bytes, no quotes, escapes not decoded */
	size_t klen;
	const char *v, *e;
};

struct jv_iter {
	const char *p, *e;
};

/* End of the value starting at p (blanks skipped first), NULL if malformed. */
const char *jv_end(const char *p, const char *e);
/* Object members in order. jv_iter_init fails (false) if [v, e) is no object. */
bool jv_iter_init(struct jv_iter *it, const char *v, const char *e);
bool jv_iter_next(struct jv_iter *it, struct jv_member *m);
bool jv_key_is(const struct jv_member *m, const char *key);
/* Member of an object by key. */
bool jv_get(const char *v, const char *e, const char *key, const char **mv, const char **me);
/* Array elements: *p at '[' first, then call until false. */
bool jv_array_next(const char **p, const char *e, const char **ev, const char **ee);

bool jv_is_null(const char *v, const char *e);
bool jv_is_string(const char *v, const char *e);
/* Decoded string (NUL-terminated) into out (reset first). False if not a string. */
bool jv_str(const char *v, const char *e, struct buf *out);
/* Integer, also from a quoted integer. */
bool jv_i64(const char *v, const char *e, int64_t *out);
bool jv_u64(const char *v, const char *e, uint64_t *out);
/* A JSON number as a double (not quoted). */
bool jv_f64(const char *v, const char *e, double *out);
/* A microsecond number ("123.456", 12, 1.5e3) as exact nanoseconds. */
bool jv_us_to_ns(const char *v, const char *e, int64_t *ns);

/* Writing */
void json_escape(struct buf *out, const char *s, size_t n);
/* ns as microseconds with 3 decimals: the trace's ts/dur format. */
void json_ns_as_us(struct buf *out, int64_t ns);

#endif
