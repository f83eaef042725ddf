/* SPDX-License-Identifier: MIT */
/*
 * The trace file. Events are appended where the previous trailer began and
 * a fresh trailer is written after them at every checkpoint, so the file on
 * disk is always a complete trace up to the last checkpoint. A ".gz" path
 * is written as a series of gzip members (events..., trailer), which gzip
 * readers take as one stream.
 */
#ifndef GPUTRACE_OUTPUT_H
#define GPUTRACE_OUTPUT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <zlib.h>
#include "inject/event.h"

struct out {
	int fd;
	char path[PATH_MAX];
	bool seekable; /* regular file: the trailer is rewritten in place */
	bool gz;
	z_stream z;    /* the events member being compressed */
	bool z_open;
	char *zbuf;
	size_t zbuf_len, zbuf_cap;
	uint64_t events_end; /* where the current trailer starts */
	uint64_t size;       /* bytes on disk after the last checkpoint */
	dev_t dev;
	ino_t ino;
	char *good_trailer; /* the trailer on disk now: put back if a write fails */
	size_t good_trailer_len;
};

/* Open path (O_EXCL; ".1", ".2"... suffixes if it exists). 0 or -errno. */
GT_HIDDEN int out__open(struct out *o, const char *path);
/* Append event bytes. 0 or -errno. */
GT_HIDDEN int out__append(struct out *o, const char *p, size_t n);
/* Write the trailer after the events; the file is now complete. */
GT_HIDDEN int out__checkpoint(struct out *o, const char *trailer, size_t n);
/* out__append + out__checkpoint in one write where the file allows it
 * (seekable, uncompressed): a kill can cut that one write, never leave the
 * file between its events and its trailer. */
GT_HIDDEN int out__commit(struct out *o, const char *p, size_t n, const char *trailer,
			  size_t tn);
GT_HIDDEN void out__close(struct out *o);

#endif
