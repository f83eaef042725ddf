/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"
#include "inject/pages.h"
#ifndef GT_NO_ISAL
#include "isal.h"
#endif
#include "zlib.h"

/*
 * Speed over size: a trace is written while the program runs, and the
 * drain waits for the compressor. ISA-L level 1 compresses trace JSON about
 * 16:1 at ~1 GB/s; zlib (where ISA-L is missing) at level 1 about 15:1 at
 * ~150 MB/s (level 6 gave 19:1 at a third of that speed).
 */
#define GZM_ZLIB_LEVEL 1
#define GZM_CHUNK      (64u << 10)

/* ---- ISA-L ---- */

#ifndef GT_NO_ISAL
#define GZM_ISAL_LEVEL 1
#define GZM_ISAL_BUF   ISAL_DEF_LVL1_DEFAULT

/* A stream and its level buffer in one block: a copy is one memcpy
 * (the stream holds no pointer into itself between calls). */
struct gzm_isal {
	struct isal_zstream s;
	uint8_t level_buf[GZM_ISAL_BUF];
};

static void isal_fix(struct gzm_isal *x)
{
	x->s.level_buf = x->level_buf;
	x->s.level_buf_size = GZM_ISAL_BUF;
}

/*
 * The stream and its copy (~360 KiB each) are mappings of their own (gt_scratch_alloc),
 * not malloc's: a flight recorder writes a file a dump, and from the second on glibc
 * took them from the drain thread's heap (freeing the first file's raised its mmap
 * threshold), which kept ~710 KiB of them for good under what it allocated meanwhile.
 */
static int isal_open(struct gzm *g)
{
	struct gzm_isal *x = gt_scratch_alloc(sizeof(*x));

	if (!x)
		return -ENOMEM;
	isal__init(&x->s);
	x->s.level = GZM_ISAL_LEVEL;
	x->s.gzip_flag = g->raw ? IGZIP_DEFLATE : IGZIP_GZIP;
	isal_fix(x);
	g->isal = x;
	return 0;
}

static bool isal_done(const struct isal_zstream *s, bool end)
{
	enum isal_zstate_state st = s->internal_state.state;

	if (s->avail_in)
		return false;
	return end ? st == ZSTATE_END || st == ZSTATE_TMP_END
		   : st == ZSTATE_NEW_HDR || st == ZSTATE_TMP_NEW_HDR;
}

static int isal_run(struct isal_zstream *s, const char *p, size_t n, bool end, struct jbuf *out)
{
	s->next_in = (uint8_t *)p;
	s->avail_in = (uint32_t)n;
	s->flush = SYNC_FLUSH;
	s->end_of_stream = end;
	do {
		/* deflate never grows data by more than a little per 64 KiB */
		if (jbuf__reserve(out, n + n / 8 + GZM_CHUNK))
			return -ENOMEM;
		s->next_out = (uint8_t *)out->p + out->len;
		s->avail_out = (uint32_t)(out->cap - out->len);
		int ret = isal__deflate(s);
		out->len = out->cap - s->avail_out;
		if (ret != COMP_OK)
			return -EIO;
	} while (!isal_done(s, end));
	return 0;
}

static bool isal_usable(const struct gzm *g)
{
	return !g->zlib_only && isal__available();
}

static int isal_add(struct gzm *g, const char *p, size_t n, struct jbuf *out)
{
	/* nothing new: everything given so far is flushed already */
	return !n && g->isal->s.total_in ? 0 : isal_run(&g->isal->s, p, n, false, out);
}

static int isal_end_copy(struct gzm *g, const char *p, size_t n, struct jbuf *out)
{
	/* one scratch copy, kept: ~100 KB copied per checkpoint */
	if (!g->isal_copy && !(g->isal_copy = gt_scratch_alloc(sizeof(*g->isal_copy))))
		return -ENOMEM;
	memcpy(g->isal_copy, g->isal, sizeof(*g->isal));
	isal_fix(g->isal_copy);
	return isal_run(&g->isal_copy->s, p, n, true, out);
}

static int isal_finish(struct gzm *g, const char *p, size_t n, struct jbuf *out)
{
	return isal_run(&g->isal->s, p, n, true, out);
}

static void isal_free(struct gzm *g)
{
	gt_scratch_free(g->isal, sizeof(*g->isal));
	gt_scratch_free(g->isal_copy, sizeof(*g->isal_copy));
}
#else /* built without ISA-L's header (libisal-dev): zlib only */
static bool isal_usable(const struct gzm *g) { return false; }
static int isal_open(struct gzm *g) { return -ENOSYS; }
static int isal_add(struct gzm *g, const char *p, size_t n, struct jbuf *out) { return -ENOSYS; }
static int isal_end_copy(struct gzm *g, const char *p, size_t n, struct jbuf *out) { return -ENOSYS; }
static int isal_finish(struct gzm *g, const char *p, size_t n, struct jbuf *out) { return -ENOSYS; }
static void isal_free(struct gzm *g) { }
#endif

/* ---- zlib ---- */

/* Run deflate over p until it is consumed and flushed (or the member ends). */
static int zlib_run(z_stream *z, const char *p, size_t n, int flush, struct jbuf *out)
{
	z->next_in = (Bytef *)p;
	z->avail_in = (uInt)n;
	for (;;) {
		int ret;

		if (jbuf__reserve(out, GZM_CHUNK))
			return -ENOMEM;
		z->next_out = (Bytef *)out->p + out->len;
		z->avail_out = (uInt)(out->cap - out->len);
		ret = deflate(z, flush);
		out->len = out->cap - z->avail_out;
		if (ret == Z_STREAM_ERROR)
			return -EIO;
		if (flush == Z_FINISH ? ret == Z_STREAM_END : z->avail_in == 0 && z->avail_out)
			return 0;
	}
}

static int gzm_open(struct gzm *g)
{
	if (g->open)
		return 0;
	if (isal_usable(g)) {
		int err = isal_open(g);

		if (!err)
			g->open = true;
		return err;
	}
	memset(&g->z, 0, sizeof(g->z));
	/* 15 + 16: a gzip header and trailer around the deflate data; -15:
	 * neither */
	int zr = deflateInit2(&g->z, GZM_ZLIB_LEVEL, Z_DEFLATED, g->raw ? -15 : 15 + 16, 8,
			      Z_DEFAULT_STRATEGY);

	if (zr != Z_OK) /* no zlib to load (writer/zlib.c), or no memory */
		return zr == Z_VERSION_ERROR ? -ELIBACC : -ENOMEM;
	g->open = true;
	return 0;
}

/* ---- the member ---- */

int gzm__add(struct gzm *g, const char *p, size_t n, struct jbuf *out)
{
	int err = gzm_open(g);

	if (err)
		return err;
	if (g->isal)
		return isal_add(g, p, n, out);
	/* nothing new: everything given so far is flushed already */
	if (!n && g->z.total_in)
		return 0;
	return zlib_run(&g->z, p, n, Z_SYNC_FLUSH, out);
}

int gzm__end_copy(struct gzm *g, const char *p, size_t n, struct jbuf *out)
{
	z_stream copy;
	int err = gzm_open(g);

	if (err)
		return err;
	if (g->isal)
		return isal_end_copy(g, p, n, out);
	if (deflateCopy(&copy, &g->z) != Z_OK)
		return -ENOMEM;
	err = zlib_run(&copy, p, n, Z_FINISH, out);
	deflateEnd(&copy);
	return err;
}

int gzm__finish(struct gzm *g, const char *p, size_t n, struct jbuf *out)
{
	int err = gzm_open(g);

	if (!err)
		err = g->isal ? isal_finish(g, p, n, out)
			      : zlib_run(&g->z, p, n, Z_FINISH, out);
	gzm__free(g);
	return err;
}

void gzm__free(struct gzm *g)
{
	if (g->open && !g->isal)
		deflateEnd(&g->z);
	isal_free(g);
	g->isal = g->isal_copy = NULL;
	g->open = false;
}

void gzm__sums(const struct gzm *g, uint32_t *crc, uint32_t *len)
{
	*crc = 0;
	*len = 0;
	if (!g->open)
		return;
#ifndef GT_NO_ISAL
	if (g->isal) {
		/* ISA-L keeps the plain CRC32 of its input (crc32_gzip_refl) */
		*crc = g->isal->s.internal_state.crc;
		*len = g->isal->s.total_in;
		return;
	}
#endif
	*crc = (uint32_t)g->z.adler; /* a gzip stream's is the CRC32 */
	*len = (uint32_t)g->z.total_in;
}

/* CRC32 (gzip's, reflected 0xEDB88320) of p continued from crc: bit by bit,
 * for the few KB of a trailer written once. */
static uint32_t crc32_more(uint32_t crc, const char *p, size_t n)
{
	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc ^= (uint8_t)p[i];
		for (int k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0xEDB88320u & -(crc & 1));
	}
	return ~crc;
}

static void put_le32(struct jbuf *out, uint32_t v)
{
	char b[4] = { (char)v, (char)(v >> 8), (char)(v >> 16), (char)(v >> 24) };

	jbuf__put(out, b, 4);
}

int gzm__end_at(uint32_t crc, uint32_t len, bool zlib_only, const char *p, size_t n,
		struct jbuf *out)
{
	/* a bare deflate stream of its own: after a flush point the member's
	 * next block starts on a byte boundary, and refers to nothing before
	 * it; the sums continue the member's */
	struct gzm g = { .zlib_only = zlib_only, .raw = true };
	size_t at = out->len;
	int err = gzm__finish(&g, p, n, out);

	if (err) {
		out->len = at;
		return err;
	}
	put_le32(out, crc32_more(crc, p, n));
	put_le32(out, len + (uint32_t)n);
	if (out->oom) {
		out->len = at;
		return -ENOMEM;
	}
	return 0;
}
