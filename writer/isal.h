/* SPDX-License-Identifier: MIT */
/*
 * ISA-L's igzip (Debian libisal2), opened when the first .gz trace is
 * written, like zlib (zlib.h): about 8x faster than zlib at the same
 * compression on trace JSON (1 GB/s at level 1, ~16:1), so compressing
 * costs about what formatting does. Without libisal.so.2 the writer uses
 * zlib (gzip.c).
 */
#ifndef GPUTRACE_WRITER_ISAL_H
#define GPUTRACE_WRITER_ISAL_H

#include <isa-l/igzip_lib.h>
#include "inject/event.h"

/* true when ISA-L is loaded (the first call loads it) */
GT_HIDDEN bool isal__available(void);
GT_HIDDEN void isal__init(struct isal_zstream *s);
GT_HIDDEN int isal__deflate(struct isal_zstream *s);

#endif
