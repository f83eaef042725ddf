/* SPDX-License-Identifier: MIT */
/*
 * zlib, opened when the first .gz trace is written (dlopen of libz.so.1),
 * not linked: a process that records nothing, or writes plain JSON, never
 * maps it (loading it cost every traced process ~0.05 ms). Every zlib
 * function the writer calls goes through here; include this after
 * <zlib.h>. Without libz.so.1, deflateInit2 fails with Z_VERSION_ERROR.
 */
#ifndef GPUTRACE_WRITER_ZLIB_H
#define GPUTRACE_WRITER_ZLIB_H

#include <zlib.h>
#include "inject/event.h"

GT_HIDDEN int gz__deflateInit2_(z_streamp strm, int level, int method, int window_bits,
				int mem_level, int strategy, const char *version, int stream_size);
GT_HIDDEN int gz__deflate(z_streamp strm, int flush);
GT_HIDDEN int gz__deflateEnd(z_streamp strm);
GT_HIDDEN int gz__deflateCopy(z_streamp dest, z_streamp source);

#undef deflateInit2
#define deflateInit2(strm, level, method, window_bits, mem_level, strategy)                \
	gz__deflateInit2_((strm), (level), (method), (window_bits), (mem_level), (strategy), \
			  ZLIB_VERSION, (int)sizeof(z_stream))
#define deflate(strm, flush) gz__deflate((strm), (flush))
#define deflateEnd(strm)     gz__deflateEnd(strm)
#define deflateCopy(d, s)    gz__deflateCopy((d), (s))

#endif
