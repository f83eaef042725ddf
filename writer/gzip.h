/* SPDX-License-Identifier: MIT */
/*
 * One gzip member (RFC 1952) built in steps, for a file that must be a
 * single valid member after every checkpoint (browser viewers decompress
 * with DecompressionStream('gzip'), which reads one member only):
 *
 *   header | events, flushed to a byte boundary | ... | final block, CRC32, ISIZE
 *            ^ gzm__add(), kept for good               ^ gzm__end_copy(), rewritten
 *
 * gzm__add() compresses bytes and flushes them with Z_SYNC_FLUSH, so what it
 * returns never changes again; gzm__end_copy() compresses the last bytes in a
 * copy of the stream (deflateCopy) and finishes that copy, so the stream goes
 * on as if they had never been given. All output is appended to a jbuf.
 * ISA-L compresses when libisal.so.2 is there, zlib otherwise (gzip.c).
 */
#ifndef GPUTRACE_GZIP_H
#define GPUTRACE_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "json.h"

struct gzm_isal;

struct gzm {
	z_stream z;                   /* zlib, where ISA-L is missing */
	struct gzm_isal *isal;        /* ISA-L (writer/isal.h) */
	struct gzm_isal *isal_copy;   /* scratch for gzm__end_copy */
	bool open;
	bool zlib_only; /* zlib even where ISA-L is there (tests) */
	bool raw;       /* a bare deflate stream: no gzip header nor trailer */
};

/* Compress p (n bytes) into out, flushed to a byte boundary. 0 or -errno. */
GT_HIDDEN int gzm__add(struct gzm *g, const char *p, size_t n, struct jbuf *out);
/* The member's end after p: final block and trailer into out, from a copy;
 * g is unchanged. 0 or -errno. */
GT_HIDDEN int gzm__end_copy(struct gzm *g, const char *p, size_t n, struct jbuf *out);
/* Finish the member for good with p (a stream written once, front to back). */
GT_HIDDEN int gzm__finish(struct gzm *g, const char *p, size_t n, struct jbuf *out);
GT_HIDDEN void gzm__free(struct gzm *g);
/* The CRC32 and length (mod 2^32) of everything given to g so far, once
 * gzm__add has flushed it: what the member's trailer would say there. */
GT_HIDDEN void gzm__sums(const struct gzm *g, uint32_t *crc, uint32_t *len);
/* Another end for a member whose bytes up to a gzm__add's flush point are
 * kept, its sums there crc and len, without that point's stream: p
 * compressed on its own (a final block), the trailer behind it. 0 or -errno. */
GT_HIDDEN int gzm__end_at(uint32_t crc, uint32_t len, bool zlib_only, const char *p,
			  size_t n, struct jbuf *out);

#endif
