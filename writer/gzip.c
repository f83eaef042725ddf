/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "gzip.h"
#include "zlib.h"

#define GZM_LEVEL 6
#define GZM_CHUNK (64u << 10)

static int gzm_open(struct gzm *g)
{
	if (g->open)
		return 0;
	memset(&g->z, 0, sizeof(g->z));
	/* 15 + 16: a gzip header and trailer around the deflate data */
	int zr = deflateInit2(&g->z, GZM_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);

	if (zr != Z_OK) /* no zlib to load (writer/zlib.c), or no memory */
		return zr == Z_VERSION_ERROR ? -ELIBACC : -ENOMEM;
	g->open = true;
	return 0;
}

/* Run deflate over p until it is consumed and flushed (or the member ends). */
static int run(z_stream *z, const char *p, size_t n, int flush, struct jbuf *out)
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

int gzm__add(struct gzm *g, const char *p, size_t n, struct jbuf *out)
{
	int err = gzm_open(g);

	/* nothing new: everything given so far is flushed already */
	if (err || (!n && g->z.total_in))
		return err;
	return run(&g->z, p, n, Z_SYNC_FLUSH, out);
}

int gzm__end_copy(struct gzm *g, const char *p, size_t n, struct jbuf *out)
{
	z_stream copy;
	int err = gzm_open(g);

	if (err)
		return err;
	if (deflateCopy(&copy, &g->z) != Z_OK)
		return -ENOMEM;
	err = run(&copy, p, n, Z_FINISH, out);
	deflateEnd(&copy);
	return err;
}

int gzm__finish(struct gzm *g, const char *p, size_t n, struct jbuf *out)
{
	int err = gzm_open(g);

	if (!err)
		err = run(&g->z, p, n, Z_FINISH, out);
	gzm__free(g);
	return err;
}

void gzm__free(struct gzm *g)
{
	if (g->open)
		deflateEnd(&g->z);
	g->open = false;
}
