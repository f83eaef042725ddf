/* SPDX-License-Identifier: MIT */
/* zlib on demand (see zlib.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

#include "inject/event.h"
#include "zlib.h"

static struct {
	int (*init2)(z_streamp, int, int, int, int, int, const char *, int);
	int (*step)(z_streamp, int);
	int (*end)(z_streamp);
	int (*copy)(z_streamp, z_streamp);
} zf;
static pthread_once_t zf_once = PTHREAD_ONCE_INIT;

static void zf_load(void)
{
	/* the system's zlib, the one the build was made against */
	void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		pr_err("cannot load zlib (libz.so.1) for a .gz trace: %s", dlerror());
		return;
	}
	zf.step = (int (*)(z_streamp, int))dlsym(h, "deflate");
	zf.end = (int (*)(z_streamp))dlsym(h, "deflateEnd");
	zf.copy = (int (*)(z_streamp, z_streamp))dlsym(h, "deflateCopy");
	if (zf.step && zf.end && zf.copy)
		zf.init2 = (int (*)(z_streamp, int, int, int, int, int, const char *, int))
			dlsym(h, "deflateInit2_");
}

int gz__deflateInit2_(z_streamp strm, int level, int method, int window_bits, int mem_level,
		      int strategy, const char *version, int stream_size)
{
	pthread_once(&zf_once, zf_load);
	if (!zf.init2)
		return Z_VERSION_ERROR;
	return zf.init2(strm, level, method, window_bits, mem_level, strategy, version,
			stream_size);
}

/* Only called on a stream deflateInit2 opened: zlib is loaded then. */
int gz__deflate(z_streamp strm, int flush)
{
	return zf.step(strm, flush);
}

int gz__deflateEnd(z_streamp strm)
{
	return zf.end ? zf.end(strm) : Z_STREAM_ERROR;
}

int gz__deflateCopy(z_streamp dest, z_streamp source)
{
	return zf.copy ? zf.copy(dest, source) : Z_STREAM_ERROR;
}
