/* SPDX-License-Identifier: MIT */
/*
 * The trace file. Events are appended where the previous trailer began and
 * a fresh trailer is written after them at every checkpoint, so the file on
 * disk is always a complete trace up to the last checkpoint. Three layouts:
 * a plain regular file is paged (below); a ".gz" regular file is one gzip
 * member whose end is rewritten at each checkpoint (gzip.h); a pipe or
 * device is written front to back, its trailer once at the end.
 */
#ifndef GPUTRACE_OUTPUT_H
#define GPUTRACE_OUTPUT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "gzip.h"
#include "inject/event.h"

struct out {
	int fd;
	char path[PATH_MAX];
	bool seekable; /* regular file: the trailer is rewritten in place */
	bool gz;
	struct gzm gz_member; /* .gz: the one member the file holds */
	struct jbuf zout;     /* .gz: compressed bytes of one checkpoint */
	/* .gz: the member's end on disk, [events_end, size), put back where a
	 * commit's write fails over it; the CRC32 and length of the JSON before
	 * events_end, for another end there (out__stopped) */
	char *gz_end;
	size_t gz_end_len, gz_end_cap;
	uint32_t gz_crc, gz_len;
	uint64_t events_end; /* where the current trailer starts */
	uint64_t size;       /* bytes on disk after the last checkpoint */
	dev_t dev;
	ino_t ino;
	char want[PATH_MAX]; /* the name asked for; path is a hidden one until published */
	/* A capture window's file (capture_window > 1: want has "-w<N>" at split):
	 * named as its process's first file was. suffix: that file's ".N" plus
	 * one (0: none yet; this file picks it). After publishing: its own. */
	uint32_t capture_window;
	size_t split;
	int suffix;
	bool unpublished;
	bool tmpfile; /* born with O_TMPFILE: no path at all until published */
	/* the paged layout (plain regular files), see out__paged_commit */
	bool paged;
	uint64_t footer_pos; /* page-aligned offset of the footer */
	size_t footer_len;   /* footer bytes on disk (padding included) */
	size_t grow;         /* whitespace reserved at the last footer move */
	char *last_footer;   /* the footer on disk (unpadded), for a move; a .gz's trailer */
	size_t last_footer_len, last_footer_cap;
	char *window;        /* a shared mapping of the file from window_at, for footer_swap */
	uint64_t window_at;
	size_t window_len;
	bool window_small; /* 64 MiB could not be mapped: only what a move needs */
};

#define OUT_PAGE 4096

/* Open path (O_EXCL; ".1", ".2"... suffixes if it exists). 0 or -errno. */
GT_HIDDEN int out__open(struct out *o, const char *path);
/* The file's head and a first trailer: a complete trace, named (a stream
 * gets the head only). 0 or -errno. */
GT_HIDDEN int out__begin(struct out *o, const char *head, size_t hn, const char *trailer,
			 size_t tn);
/* Events appended and the trailer rewritten behind them (a stream: the
 * events only). 0 or -errno. */
GT_HIDDEN int out__commit(struct out *o, const char *ev, size_t n, const char *trailer,
			  size_t tn);
/* The last commit: a paged file loses its reserve, a stream gets its trailer. */
GT_HIDDEN int out__finish(struct out *o, const char *ev, size_t n, const char *trailer,
			  size_t tn);
/* A paged file as out__finish leaves it, still open: the reserve of
 * whitespace ahead of the footer cut off (an exec ends the image; if it
 * fails, the next commit makes room again). 0 or -errno. */
GT_HIDDEN int out__compact(struct out *o);
/* A paged file whose writing failed: its footer on disk (the last checkpoint's
 * counts) says why it ends there, in its "end" ("write failed: ..."), where
 * that needs no new block (a full disk has none) nor a byte past a size
 * limit. A .gz file: its member's end after the last checkpoint's events,
 * the same way. 0 or -errno; the file is as before where it fails. */
GT_HIDDEN int out__stopped(struct out *o, const char *why);
GT_HIDDEN void out__close(struct out *o);
/* The mapping kept for the footer's moves dropped: the next move maps the
 * file again, or writes where it cannot be mapped. */
GT_HIDDEN void out__unmap(struct out *o);
/* System calls on output files so far (all of them, every out); *in_flight:
 * one has not returned yet. */
GT_HIDDEN uint64_t out__activity(bool *in_flight);
/* In a fork child: no thread of its own is inside such a call (the parent's
 * output thread may have been at fork time, and would look stuck in one). */
GT_HIDDEN void out__forget_calls(void);
/* Give the file its name (the wanted one, or .1, .2... after it). */
GT_HIDDEN int out__publish(struct out *o);

/*
 * The paged layout of a plain regular file:
 *
 *   {"traceEvents":[ events... <spaces...> FOOTER <spaces>
 *                              ^events_end  ^footer_pos (page-aligned)
 *
 * A pending SIGKILL makes the kernel cut a write at a page boundary. Events
 * go into the whitespace before the footer, and the writer never lets one
 * straddle a page boundary (it pads instead), so a cut write leaves whole
 * events, whitespace and the footer: valid JSON. The footer is rewritten in
 * place with a single-page write, which is not cut. Only moving the footer
 * when the whitespace runs out (every 64 KiB to 1 MiB) leaves a window: two
 * stores into a shared mapping (footer_swap). A footer never counts events
 * that are not on disk before it: a move carries the old footer, the new one
 * follows the events. So a kill between the move and the events' write leaves
 * the trailer one cycle behind the events.
 */

#endif
